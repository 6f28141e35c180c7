"""The client memo: each (identity, value)'s permanent randomized response, kept for good.

A memoized protocol answers every report of a value from one *permanent*
response drawn the first time that value is reported, so an adversary who
sees any number of reports of an unchanged value learns no more than the
permanent response's budget ``epsilon_inf`` allows. The memo is what makes
that true: if it ever forgot a response, or held two for the same key, the
next reports would draw a fresh permanent response and the bound would be
``epsilon_inf`` per draw, not per value.

The key
-------
A response is stored under ``(scope, identity, value)``:

* ``scope`` names the permanent round's law: the protocol of the first round
  (``"grr"``, ``"oue"`` or ``"sue"``), the domain size and ``epsilon_inf``
  (:attr:`~fastldp.longitudinal.LongitudinalOracle.memo_scope`). Protocols
  with the same permanent law (L-OUE and L-OSUE) share responses, which is
  what the bound needs: one permanent draw per value, whatever ``epsilon_1``
  the instantaneous round uses later;
* ``identity`` is the user (a uint64; SQLite stores it as the int64 of the
  same 64 bits);
* ``value`` is the symbol the user holds.

Two stores
----------
:class:`MemoStore` keeps the memo in an SQLite file (the standard library's
:mod:`sqlite3`, WAL journal, ``synchronous=FULL``), for clients that must
survive a crash: a permanent response is committed before any report that
depends on it is released, and a response already stored always wins (an
``INSERT OR IGNORE`` followed by reading back what is stored, in one write
transaction), so a crash, a restart or a second process never produces two
different permanent responses for one key. :class:`MemoryMemo` keeps it in
NumPy arrays (a sorted int64 key per scope, searched with
:func:`numpy.searchsorted`), for simulations of many users.

Both have one method the protocols call, :meth:`MemoryMemo.responses`: the
stored responses of a batch of keys, drawing (with the caller's ``draw``)
and storing those that are missing.
"""

from __future__ import annotations

import os
import sqlite3
import time
from typing import Callable, Literal, Optional, Union

import numpy as np

__all__ = ["MemoryMemo", "MemoStore", "Draw"]

#: ``draw(index)``: fresh permanent responses for the keys at ``index`` (an int64 array into
#: the batch), as an array of shape ``(len(index), width)``
Draw = Callable[[np.ndarray], np.ndarray]

_INT64_MAX = (1 << 63) - 1


def _as_rows(responses: np.ndarray, dtype: np.dtype, width: int, k: int) -> np.ndarray:
    rows = np.ascontiguousarray(responses, dtype=dtype).reshape(k, width)
    return rows


class MemoryMemo:
    """An in-memory memo for simulations: NumPy arrays, vectorized lookups.

    Per scope, the keys ``identity * domain_size + value`` are kept sorted in
    one int64 array beside the responses, so a batch of ``n`` reports costs
    one :func:`numpy.searchsorted` and, for the keys seen for the first
    time, one sorted insertion (``O(N + n log n)`` for ``N`` stored keys).
    Identities too large for that key (``identity >= 2**63 / domain_size``)
    go to a plain dictionary, correct but slower.

    Nothing is written to disk: use :class:`MemoStore` on a real client.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.longitudinal import LGRR, MemoryMemo
    >>> memo = MemoryMemo()
    >>> lgrr = LGRR(domain_size=4, epsilon_inf=2.0, epsilon_1=1.0, codebook_seed=0)
    >>> first = lgrr.privatize([1, 2, 3], memo=memo, rng=0)
    >>> len(memo)
    3
    >>> later = lgrr.privatize([1, 2, 0], memo=memo, rng=1)  # user 2 changed value: a new key
    >>> len(memo)
    4
    """

    def __init__(self) -> None:
        self._keys: dict[str, np.ndarray] = {}
        self._rows: dict[str, np.ndarray] = {}
        self._big: dict[str, dict[tuple[int, int], np.ndarray]] = {}

    def __len__(self) -> int:
        return (sum(k.shape[0] for k in self._keys.values())
                + sum(len(d) for d in self._big.values()))

    def __repr__(self) -> str:
        return f"MemoryMemo({len(self)} permanent responses, {len(self._keys)} scope(s))"

    def lookup(self, scope: str, identities: np.ndarray, values: np.ndarray, domain_size: int,
               dtype, width: int) -> tuple[np.ndarray, np.ndarray]:
        """The stored responses of the keys, and which keys were found (no drawing).

        Returns
        -------
        rows : array, shape (n, width)
            The stored response where found (zeros elsewhere).
        found : bool array, shape (n,)
        """
        ids = np.asarray(identities, dtype=np.uint64)
        x = np.asarray(values, dtype=np.int64)
        n = ids.shape[0]
        rows = np.zeros((n, width), dtype=dtype)
        found = np.zeros(n, dtype=bool)
        small = ids < np.uint64(_INT64_MAX // domain_size)
        keys = self._keys.get(scope)
        if keys is not None and small.any():
            sel = np.flatnonzero(small)
            q = ids[sel].astype(np.int64) * domain_size + x[sel]
            pos = np.searchsorted(keys, q)
            pos_c = np.minimum(pos, keys.shape[0] - 1)
            hit = (pos < keys.shape[0]) & (keys[pos_c] == q)
            found[sel[hit]] = True
            rows[sel[hit]] = self._rows[scope][pos_c[hit]]
        big = self._big.get(scope)
        if big is not None:
            for j in np.flatnonzero(~small):
                row = big.get((int(ids[j]), int(x[j])))
                if row is not None:
                    rows[j], found[j] = row, True
        return rows, found

    def responses(self, scope: str, identities: np.ndarray, values: np.ndarray,
                  domain_size: int, draw: Draw, dtype, width: int) -> np.ndarray:
        """The permanent responses of a batch of distinct identities, drawing the missing ones.

        Parameters
        ----------
        scope : str
            The permanent law (module docstring, "The key").
        identities : uint64 array, shape (n,)
            Distinct identities.
        values : int64 array, shape (n,)
            Each identity's symbol, in ``[0, domain_size)``.
        domain_size : int
        draw : callable
            ``draw(index)`` returns fresh permanent responses for the keys at
            ``index`` (shape ``(len(index), width)``).
        dtype, width
            The responses' dtype and number of entries per response.

        Returns
        -------
        array, shape (n, width)
            Every key's permanent response (the stored one where it existed).
        """
        ids = np.asarray(identities, dtype=np.uint64)
        x = np.asarray(values, dtype=np.int64)
        rows, found = self.lookup(scope, ids, x, domain_size, dtype, width)
        missing = np.flatnonzero(~found)
        if missing.shape[0] == 0:
            return rows
        fresh = _as_rows(draw(missing), dtype, width, missing.shape[0])
        rows[missing] = fresh
        small = ids[missing] < np.uint64(_INT64_MAX // domain_size)
        if small.any():
            sel = missing[small]
            q = ids[sel].astype(np.int64) * domain_size + x[sel]
            order = np.argsort(q, kind="stable")
            q, new_rows = q[order], fresh[small][order]
            keys = self._keys.get(scope)
            if keys is None:
                self._keys[scope], self._rows[scope] = q, new_rows
            else:
                at = np.searchsorted(keys, q)
                self._keys[scope] = np.insert(keys, at, q)
                self._rows[scope] = np.insert(self._rows[scope], at, new_rows, axis=0)
        if not small.all():
            big = self._big.setdefault(scope, {})
            for j, row in zip(missing[~small], fresh[~small]):
                big[(int(ids[j]), int(x[j]))] = row.copy()
        return rows


class MemoStore:
    """A durable client memo in an SQLite file (standard library :mod:`sqlite3`).

    Parameters
    ----------
    path : str or os.PathLike
        The database file; created with its table when missing, reopened
        (with every stored response) when present.
    timeout : float
        Seconds to wait for another process's write transaction.

    Notes
    -----
    One table, ``memo(scope TEXT, identity INTEGER, value INTEGER, response
    BLOB)``, primary key ``(scope, identity, value)``. The journal is WAL and
    ``synchronous=FULL``, so a committed transaction survives a crash of the
    process or of the machine. :meth:`responses` runs one write transaction
    (``BEGIN IMMEDIATE``, which also serializes concurrent processes): it
    reads the stored responses of the batch, draws the missing ones,
    ``INSERT OR IGNORE`` s them, reads back what is stored and commits. The
    protocols release reports only after it returns, so:

    * every released report depends on a committed permanent response;
    * a crash before the commit stores nothing, and the reports of that
      batch were never released; the next attempt draws again;
    * a response already stored is never replaced: when two processes draw
      for the same key, the first commit wins and both use it.

    The memo holds the client's secrets (its permanent responses reveal its
    values up to ``epsilon_inf``): keep the file private to the client.

    Examples
    --------
    >>> import os, tempfile
    >>> from fastldp.longitudinal import LOUE, MemoStore
    >>> path = os.path.join(tempfile.mkdtemp(), "memo.sqlite")
    >>> loue = LOUE(domain_size=8, epsilon_inf=3.0, epsilon_1=1.0, codebook_seed=0)
    >>> with MemoStore(path) as memo:
    ...     r1 = loue.privatize([5], memo=memo, identities=[42], rng=1)
    >>> with MemoStore(path) as memo:  # reopened: the same permanent response
    ...     len(memo), memo.integrity_check()
    (1, 'ok')
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], *, timeout: float = 60.0) -> None:
        self.path = os.fspath(path)
        self._conn: Optional[sqlite3.Connection] = sqlite3.connect(
            self.path, timeout=float(timeout), isolation_level=None)
        conn = self._conn
        self._retry(lambda: conn.execute("PRAGMA journal_mode=WAL"))
        conn.execute("PRAGMA synchronous=FULL")
        self._retry(lambda: conn.execute(
            "CREATE TABLE IF NOT EXISTS memo (scope TEXT NOT NULL, identity INTEGER NOT NULL, "
            "value INTEGER NOT NULL, response BLOB NOT NULL, "
            "PRIMARY KEY (scope, identity, value)) WITHOUT ROWID"))

    @staticmethod
    def _retry(step):
        # the first connections of two processes may race on the WAL switch and the
        # table's creation; SQLite reports that as "locked" regardless of the timeout
        for attempt in range(200):
            try:
                return step()
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 199:
                    raise
                time.sleep(0.05)

    @property
    def conn(self) -> sqlite3.Connection:
        if self._conn is None:
            raise ValueError(f"MemoStore({self.path!r}) is closed")
        return self._conn

    def close(self) -> None:
        """Close the connection (every response is already committed)."""
        if self._conn is not None:
            self._conn.close()
            self._conn = None

    def __enter__(self) -> "MemoStore":
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False

    def __len__(self) -> int:
        return int(self.conn.execute("SELECT COUNT(*) FROM memo").fetchone()[0])

    def __repr__(self) -> str:
        state = "closed" if self._conn is None else f"{len(self)} permanent responses"
        return f"MemoStore({self.path!r}, {state})"

    def integrity_check(self) -> str:
        """``PRAGMA integrity_check``'s answer (``'ok'`` for a sound file)."""
        return str(self.conn.execute("PRAGMA integrity_check").fetchone()[0])

    @staticmethod
    def _signed(ids: np.ndarray) -> list:
        return ids.astype(np.uint64).view(np.int64).tolist()

    def _select(self, scope: str, ids: list, values: list) -> dict:
        conn = self.conn
        conn.execute("CREATE TEMP TABLE IF NOT EXISTS batch (identity INTEGER, value INTEGER)")
        conn.execute("DELETE FROM batch")
        conn.executemany("INSERT INTO batch VALUES (?, ?)", zip(ids, values))
        cur = conn.execute(
            "SELECT m.identity, m.value, m.response FROM batch b JOIN memo m "
            "ON m.scope = ? AND m.identity = b.identity AND m.value = b.value", (scope,))
        return {(i, v): r for i, v, r in cur}

    def lookup(self, scope: str, identities: np.ndarray, values: np.ndarray, domain_size: int,
               dtype, width: int) -> tuple[np.ndarray, np.ndarray]:
        """The stored responses of the keys and which were found (no drawing, no writing)."""
        ids = self._signed(np.asarray(identities, dtype=np.uint64))
        x = np.asarray(values, dtype=np.int64).tolist()
        n = len(ids)
        rows = np.zeros((n, width), dtype=dtype)
        found = np.zeros(n, dtype=bool)
        conn = self.conn
        conn.execute("BEGIN")
        try:
            stored = self._select(scope, ids, x)
        finally:
            conn.execute("COMMIT")
        for j, key in enumerate(zip(ids, x)):
            blob = stored.get(key)
            if blob is not None:
                rows[j] = np.frombuffer(blob, dtype=dtype)
                found[j] = True
        return rows, found

    def responses(self, scope: str, identities: np.ndarray, values: np.ndarray,
                  domain_size: int, draw: Draw, dtype, width: int) -> np.ndarray:
        """As :meth:`MemoryMemo.responses`; the new responses are committed before it returns."""
        ids = self._signed(np.asarray(identities, dtype=np.uint64))
        x = np.asarray(values, dtype=np.int64).tolist()
        n = len(ids)
        dtype = np.dtype(dtype)
        conn = self.conn
        self._retry(lambda: conn.execute("BEGIN IMMEDIATE"))
        try:
            stored = self._select(scope, ids, x)
            missing = np.array([j for j, key in enumerate(zip(ids, x)) if key not in stored],
                               dtype=np.int64)
            if missing.shape[0]:
                fresh = _as_rows(draw(missing), dtype, width, missing.shape[0])
                conn.executemany(
                    "INSERT OR IGNORE INTO memo (scope, identity, value, response) "
                    "VALUES (?, ?, ?, ?)",
                    ((scope, ids[j], x[j], fresh[r].tobytes()) for r, j in enumerate(missing)))
                stored = self._select(scope, ids, x)  # what is stored wins
            conn.execute("COMMIT")
        except BaseException:
            if conn.in_transaction:
                conn.execute("ROLLBACK")
            raise
        rows = np.empty((n, width), dtype=dtype)
        for j, key in enumerate(zip(ids, x)):
            rows[j] = np.frombuffer(stored[key], dtype=dtype)
        return rows
