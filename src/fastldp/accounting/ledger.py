"""A per-identity privacy ledger: every release charged to the identities it used, in SQLite.

A :class:`Ledger` records, for each release, which identities took part and
what each was charged, so that before the next release one can ask what an
identity has spent and whether a new charge fits its budget. It is a file
(or ``":memory:"``) handled by the standard library's :mod:`sqlite3`; a
release is one transaction, so it is charged whole or not at all, even when
the process is killed during the charge.

What is stored
--------------
``releases``
    one row per release: its unique name, its order, how many identities it
    charged, the smallest and largest epsilon it charged, its privacy event
    (JSON, or ``NULL`` for pure epsilon) and a digest of its content.
``charges``
    one row per (release, identity) with the identity's epsilon in that
    release (a ``WITHOUT ROWID`` table keyed by release, then identity).
``identities``
    one row per identity ever charged: its total epsilon ``spent`` (basic
    composition), the part of it charged by releases without an event
    (``pure``), and its release set.
``sets``
    the release sets, as a trie: a set is its parent set plus the release
    that created it. Identities that took part in the same releases have the
    same set (releases are charged one after another, so two such identities
    walked the same path), which is how :meth:`Ledger.groups` groups them
    and how one composition serves every identity of a group.

Composition
-----------
A float ``cap`` is an epsilon under basic composition: an identity charged
:math:`\\varepsilon_1, \\dots, \\varepsilon_r` has spent
:math:`\\sum_j \\varepsilon_j` (basic composition [1]_, Theorem 3.14), and may
take a new charge :math:`\\varepsilon` while
:math:`\\sum_j \\varepsilon_j + \\varepsilon \\le` ``cap``.

A pair ``cap=(epsilon, delta)`` composes each identity's releases with
:func:`fastldp.accounting.epsilon_at` (basic composition, PLD or RDP [2]_,
whichever is tightest), and the identity's epsilon at ``delta`` must not
exceed the cap's epsilon. What enters the composition:

- the event of each release charged with one (for example the RDP curve of
  a shuffled release);
- the releases charged without an event, each as a
  :func:`~fastldp.accounting.pure_dp_event` of its epsilon, when each of
  them charged one epsilon to all its identities (the accountant's PLD
  then composes many small releases far below their sum);
- otherwise (some release charged personal epsilons) their per-identity sum
  :math:`\\varepsilon_p` as one pure event: basic composition makes them one
  :math:`\\varepsilon_p`-DP mechanism, which binary randomized response at
  :math:`\\varepsilon_p` (what that event is) dominates [3]_; with no
  event at all the answer is :math:`\\varepsilon_p` itself.

Identities of one group (the same releases) with the same pure sum share one
composition, so the cost is one composition per distinct (group, pure sum).

How the spend is derived from the event
---------------------------------------
A release charged with an event spends, for every identity it charged, what
the event costs: a pure event (every part pure epsilon) its pure epsilon
(delta 0), any other event its epsilon at the ledger's ``delta``
(:data:`DEFAULT_DELTA`, 10^-6, unless the ledger was made with another; it is
stored in the file), through the accountant's smallest route, rounded up. The
epsilons may be omitted; given, they must agree with that spend (relative
slack :data:`ROUNDING`), else the charge is refused: the amount charged and
the event cannot disagree. An event whose spend is not in ``(0,``
:data:`MAX_EPSILON` ``]`` is refused. So under a float cap an identity whose
releases spent :math:`\\varepsilon_1, \\dots, \\varepsilon_r`, ``k`` of them
through events that are not pure, is :math:`(\\sum_j \\varepsilon_j, k\\,\\delta)`-DP
(basic composition, [1]_ Theorem 3.16); under a pair cap the events
themselves are composed (below).

Comparisons allow a relative rounding slack of :data:`ROUNDING` (10^-9):
ten charges of 0.1 fit a cap of 1.0 although their float sum is
0.9999999999999999 or 1.0000000000000002 depending on the order.

Durability
----------
The database is in WAL mode with ``synchronous=FULL``: a committed release
survives a crash of the process or of the machine, and an interrupted one
leaves nothing. Writers take the write lock at the start of a charge
(``BEGIN IMMEDIATE``) and wait for one another up to ``timeout`` seconds,
so several processes may charge the same ledger.

References
----------
.. [1] C. Dwork and A. Roth, "The Algorithmic Foundations of Differential
   Privacy", Foundations and Trends in TCS 9(3-4), 2014 (Theorem 3.14,
   basic composition).
.. [2] I. Mironov, "Renyi Differential Privacy", CSF 2017 (composition of
   RDP curves).
.. [3] P. Kairouz, S. Oh and P. Viswanath, "The Composition Theorem for
   Differential Privacy", ICML 2015 (randomized response dominates every
   epsilon-DP mechanism).
"""

from __future__ import annotations

import hashlib
import json
import numbers
import shutil
import sqlite3
import struct
import tempfile
import uuid
from dataclasses import dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Optional, Sequence, Tuple, Union

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_float, check_positive_array, param_error

__all__ = ["Ledger", "Release", "Group", "BudgetExceededError", "LedgerDamagedError", "ROUNDING",
           "MAX_EPSILON", "DEFAULT_DELTA"]

#: Relative slack of every budget comparison (float sums of epsilons round).
ROUNDING = 1e-9

#: The delta of a new ledger (``Ledger(..., delta=)``): a release charged with a privacy
#: event that is not pure epsilon spends the event's epsilon at this delta.
DEFAULT_DELTA = 1e-6

#: The largest epsilon one release may charge one identity. It is the largest budget any
#: fastldp mechanism takes (``fastldp.oracles.EPSILON_MAX``: ``e^eps`` overflows double
#: precision just above 709.78, so no randomizer can be built above it; already above about
#: 37 randomized response keeps its input with a probability that rounds to 1), so a larger
#: charge describes no mechanism. It also keeps every total finite: an identity charged
#: ``MAX_EPSILON`` by each of 2^63 releases (more than the table can hold) has spent
#: 6.5e21, far from the float64 overflow at 1.8e308; a charge of 1e308 would make two
#: charges ``inf``.
MAX_EPSILON = 700.0

_SCHEMA_VERSION = "1"
_TABLES = ("meta", "releases", "charges", "sets", "identities")
_SCHEMA = """
CREATE TABLE meta(key TEXT PRIMARY KEY, value TEXT NOT NULL) WITHOUT ROWID;
CREATE TABLE releases(
    release INTEGER PRIMARY KEY,
    name TEXT NOT NULL UNIQUE,
    n INTEGER NOT NULL,
    epsilon_min REAL NOT NULL,
    epsilon_max REAL NOT NULL,
    event TEXT,
    digest TEXT NOT NULL,
    created TEXT NOT NULL);
CREATE TABLE charges(
    release INTEGER NOT NULL,
    identity INTEGER NOT NULL,
    epsilon REAL NOT NULL,
    PRIMARY KEY (release, identity)) WITHOUT ROWID;
CREATE TABLE sets(
    set_id INTEGER PRIMARY KEY,
    parent INTEGER NOT NULL,
    release INTEGER NOT NULL,
    UNIQUE (parent, release));
CREATE TABLE identities(
    identity INTEGER PRIMARY KEY,
    spent REAL NOT NULL,
    pure REAL NOT NULL,
    set_id INTEGER NOT NULL);
"""

# The identities of a new release move from their set s to the set (s, release): one new
# set per distinct old set (0 is the empty set of an identity never charged).
_NEW_SETS = """
INSERT INTO sets(parent, release)
SELECT DISTINCT COALESCE(t.set_id, 0), ?1
FROM charges AS c LEFT JOIN identities AS t ON t.identity = c.identity
WHERE c.release = ?1
"""
# Then each identity's totals grow and it moves to its new set: a new identity (no row:
# the set (0, release), which the statement above created) by the INSERT, an identity
# already charged by the UPDATE, whose subquery finds (its set, release) in the small
# sets table. The 0 placeholder of an existing identity's INSERT row is never stored, and
# a set not found would be a NOT NULL failure that rolls the whole charge back.
_MOVE = """
INSERT INTO identities(identity, spent, pure, set_id)
SELECT c.identity, c.epsilon, c.epsilon * ?2,
       COALESCE((SELECT set_id FROM sets WHERE parent = 0 AND release = ?1), 0)
FROM charges AS c
WHERE c.release = ?1
ON CONFLICT(identity) DO UPDATE SET
    spent = spent + excluded.spent, pure = pure + excluded.pure,
    set_id = (SELECT s.set_id FROM sets AS s
              WHERE s.parent = identities.set_id AND s.release = ?1)
"""

_INT64 = np.iinfo(np.int64)

#: A budget: an epsilon (basic composition) or a pair (epsilon, delta).
Cap = Union[float, Tuple[float, float]]
_STATE = [("identity", np.int64), ("spent", np.float64), ("pure", np.float64),
          ("set_id", np.int64)]


class BudgetExceededError(ValueError):
    """A charge refused because some identities would exceed the cap; nothing was charged.

    ``identities`` holds the identities that would exceed it (sorted).
    """

    def __init__(self, message: str, identities: np.ndarray) -> None:
        super().__init__(message)
        self.identities = identities


class LedgerDamagedError(ValueError):
    """A ledger file that SQLite opens but that fails its integrity check (or holds charges
    no ledger may hold): :meth:`Ledger.verify` raises it, ``fastldp account`` exits 1 on it.
    """


def _is_corrupt(exc: BaseException) -> bool:
    """Whether SQLite said the file is damaged (SQLITE_CORRUPT), not that it is no database."""
    return (getattr(exc, "sqlite_errorname", None) == "SQLITE_CORRUPT"
            or "malformed" in str(exc))


@dataclass(frozen=True)
class Release:
    """One charged release, as :meth:`Ledger.charge` and :meth:`Ledger.releases` return it.

    Attributes
    ----------
    name : str
        The release's unique name.
    index : int
        Its order in the ledger, from 1.
    n_identities : int
        How many identities it charged.
    epsilon_min, epsilon_max : float
        The smallest and largest epsilon it charged (equal for a scalar charge).
    event_json : str or None
        Its privacy event as JSON (:func:`fastldp.accounting.to_json`), or
        ``None`` for a pure-epsilon release; :attr:`event` decodes it.
    created : str
        When it was charged (UTC, ISO 8601).
    """

    name: str
    index: int
    n_identities: int
    epsilon_min: float
    epsilon_max: float
    event_json: Optional[str]
    created: str

    @property
    def event(self) -> Any:
        """The release's ``DpEvent``, or ``None`` for a pure-epsilon release."""
        return None if self.event_json is None else _event_from_json(self.event_json)

    def __repr__(self) -> str:
        eps = (f"{self.epsilon_min:g}" if self.epsilon_min == self.epsilon_max
               else f"{self.epsilon_min:g}..{self.epsilon_max:g}")
        kind = "pure epsilon" if self.event_json is None else "with event"
        return (f"Release({self.name!r}, #{self.index}, {self.n_identities:,} identities, "
                f"epsilon={eps}, {kind})")


@dataclass(frozen=True)
class Group:
    """Identities that took part in the same releases, as :meth:`Ledger.groups` returns them.

    Attributes
    ----------
    releases : tuple of str
        The names of the group's releases, in the order they were charged.
    n_identities : int
        How many identities the group holds.
    spent_min, spent_max : float
        The smallest and largest epsilon spent (basic composition) by one of
        its identities; equal when every release charged one epsilon to all.
    remaining : float or None
        The smallest remaining budget of its identities under the ``cap``
        given to :meth:`Ledger.groups` (``None`` without a cap); negative
        when the group spent more than the cap.
    """

    releases: tuple
    n_identities: int
    spent_min: float
    spent_max: float
    remaining: Optional[float] = None


# --- the privacy events: the one place that knows fastldp.accounting's event API -----------

def _event_to_json(event, owner: str) -> str:
    """The event as JSON, once the accountant has accepted it (refused now, not at a query)."""
    from .accountant import Accountant
    from .events import DpEvent, to_json

    if not isinstance(event, DpEvent):
        raise param_error("event", owner, "a dp_accounting DpEvent or None", event, TypeError)
    Accountant().add(event)  # a ValueError naming the event if it cannot be composed
    return to_json(event)


def _event_spend(event, delta: float) -> Tuple[float, str]:
    """What a release with ``event`` spends: ``(epsilon, how it was derived)``.

    A pure event (every part pure epsilon) spends its pure epsilon (basic composition of
    its parts, rounded up): a guarantee at delta 0. Any other event spends its epsilon at
    the ledger's ``delta`` (:meth:`fastldp.accounting.Accountant.epsilon`: the smallest of
    the RDP and PLD routes, rounded up).
    """
    from .accountant import Accountant
    from .events import pure_epsilon

    pure = pure_epsilon(event)
    if pure is not None:
        return float(pure), "pure epsilon"
    eps, route, _ = Accountant().add(event).epsilon_and_method(delta)
    return float(eps), f"epsilon at the ledger's delta {delta!r}, by {route}"


def _event_from_json(text: str):
    from .events import from_json

    return from_json(text)


def _epsilon_at(events: Sequence[str], pures: Sequence[float], delta: float) -> float:
    """Epsilon at ``delta`` of the events (JSON) and pure-epsilon releases composed."""
    if not events and not pures:
        return 0.0
    from .accountant import epsilon_at
    from .events import pure_dp_event

    parsed = [_event_from_json(text) for text in events]
    return float(epsilon_at(parsed + [pure_dp_event(e) for e in pures], delta))


# --- validation ----------------------------------------------------------------------------

def _identities(values, owner: str, *, distinct: bool) -> np.ndarray:
    """``values`` as a 1-d int64 array (a scalar is one identity)."""
    expected = "a 1-d array of int64 identities"
    try:
        arr = np.asarray(values)
    except (OverflowError, ValueError) as exc:
        raise param_error("identities", owner, expected, values) from exc
    if arr.ndim == 0:
        arr = arr.reshape(1)
    if arr.ndim != 1:
        raise param_error("identities", owner, expected, f"an array of shape {arr.shape}")
    if arr.size == 0:
        if distinct:
            raise param_error("identities", owner, "a non-empty array of int64 identities "
                              "(a release charges at least one identity)", values)
        return np.empty(0, dtype=np.int64)
    if arr.dtype == object and all(isinstance(v, numbers.Integral) and not isinstance(v, bool)
                                   for v in arr):
        if any(not (_INT64.min <= int(v) <= _INT64.max) for v in arr):
            raise param_error("identities", owner, f"{expected} (in [{_INT64.min}, "
                              f"{_INT64.max}])", values)
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise param_error("identities", owner, expected, f"an array of dtype {arr.dtype}",
                          TypeError)
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and int(arr.max()) > _INT64.max:
        raise param_error("identities", owner, f"{expected} (in [{_INT64.min}, {_INT64.max}])",
                          f"{int(arr.max())}")
    return arr.astype(np.int64, copy=False)


def _sorted_release(identities, epsilons, owner: str):
    """Identities sorted (with their epsilons), checked distinct, epsilons in (0, MAX_EPSILON]."""
    ids = _identities(identities, owner, distinct=True)
    eps = check_positive_array(epsilons, "epsilons", owner, size=ids.size)
    above = np.flatnonzero(eps > MAX_EPSILON)
    if above.size:
        i = int(above[0])
        raise ValueError(
            f"The 'epsilons' parameter of {owner} must contain only floats in (0, "
            f"{MAX_EPSILON!r}] (MAX_EPSILON, the largest budget of any mechanism; it keeps "
            f"every total finite). Got {float(eps[i])!r} at index {i} instead.")
    order = np.argsort(ids)  # distinct identities: any sort kind gives one order
    ids, eps = ids[order], eps[order]  # sorted: the B-trees are filled in key order
    same = ids[1:] == ids[:-1]
    if same.any():
        dup = _distinct(ids[1:][same])
        shown = ", ".join(str(v) for v in dup[:10]) + (", ..." if dup.size > 10 else "")
        raise ValueError(
            f"The 'identities' parameter of {owner} must hold distinct identities (a release "
            f"charges each identity once). Got {dup.size} repeated: {shown} instead.")
    return ids, eps, order


def _cap(cap, owner: str):
    """``(epsilon, None)`` for a float cap, ``(epsilon, delta)`` for a pair."""
    if isinstance(cap, (tuple, list)):
        pair = "a pair (epsilon, delta) of floats with epsilon > 0 and delta in (0, 1)"
        if len(cap) != 2:
            raise param_error("cap", owner, pair, cap)
        for v in cap:
            if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Real):
                raise param_error("cap", owner, pair, cap, TypeError)
        eps, delta = float(cap[0]), float(cap[1])
        if not (0 < eps < np.inf and 0 < delta < 1):  # NaN fails
            raise param_error("cap", owner, pair, cap)
        return eps, delta
    if isinstance(cap, numbers.Real) and not isinstance(cap, (bool, np.bool_)):
        return check_float(cap, "cap", owner, low=0.0), None
    raise param_error("cap", owner, "a float epsilon or a pair (epsilon, delta)", cap, TypeError)


def _name(release, owner: str) -> str:
    if release is None:
        return uuid.uuid4().hex
    if not isinstance(release, str) or not release.strip():
        raise param_error("release", owner, "a non-empty str (the release's unique name)",
                          release, TypeError if not isinstance(release, str) else ValueError)
    return release


def _digest(ids: np.ndarray, eps: np.ndarray, event_json: Optional[str]) -> str:
    h = hashlib.sha256()
    h.update(ids.astype("<i8", copy=False).tobytes())
    h.update(eps.astype("<f8", copy=False).tobytes())
    h.update(b"\x00" if event_json is None else event_json.encode())
    return h.hexdigest()


def _distinct(values: np.ndarray) -> np.ndarray:
    """The sorted distinct values (NumPy 2.4's ``np.unique`` of int64 hashes: 100x slower)."""
    out = np.sort(values)
    return out[np.concatenate(([True], out[1:] != out[:-1]))] if out.size else out


def _json_ints(values: np.ndarray) -> str:
    return json.dumps(values.tolist())  # the C encoder: twice as fast as str.join


#: Up to this many distinct epsilons, a charge's rows are inserted by SQLite from a JSON
#: array of identities per epsilon (three times faster than executemany, which builds a
#: Python tuple per row); the epsilon is bound as a double, so it is stored exactly.
_JSON_GROUPS = 64


def _insert_charges(con, index: int, ids: np.ndarray, eps: np.ndarray) -> None:
    if eps[0] == eps.min() == eps.max():  # one epsilon for all: no sort
        values, inverse = eps[:1], np.zeros(eps.size, dtype=np.intp)
    else:
        values, inverse = np.unique(eps, return_inverse=True)
    if values.size > _JSON_GROUPS:  # epsilons of their own: one bound row at a time
        con.executemany("INSERT INTO charges(release, identity, epsilon) VALUES (?, ?, ?)",
                        zip([index] * ids.size, ids.tolist(), eps.tolist()))
        return
    inverse = inverse.ravel()
    for k, value in enumerate(values.tolist()):
        part = ids if values.size == 1 else ids[inverse == k]
        con.execute("INSERT INTO charges(release, identity, epsilon) "
                    "SELECT ?1, value, ?2 FROM json_each(?3)", (index, value, _json_ints(part)))


#: the two magic numbers of a WAL header (the low bit gives the checksums' byte order)
_WAL_MAGIC = (0x377F0682, 0x377F0683)


def _wal_adds_nothing(wal: Path) -> bool:
    """Whether SQLite would lay no frame of this WAL over the database file.

    SQLite reads a WAL's frames from the first one while they carry the salts of the
    header (and valid checksums), up to the last commit frame. A WAL with no header, a
    bad magic number, or a first frame that is missing, torn or of an earlier generation
    (other salts) adds nothing, and the file read alone (``immutable=1``) is what SQLite
    would read. Any other WAL may hold committed pages the file lacks: without the
    ``-shm`` index no one can tell which were checkpointed already, so False.
    """
    with open(wal, "rb") as w:
        header = w.read(32)
        if len(header) < 32:
            return True  # no header: SQLite treats the WAL as empty
        magic, _, page_size, _, salt1, salt2 = struct.unpack(">6I", header[:24])
        if magic not in _WAL_MAGIC:
            return True
        frame = w.read(24)
        if len(frame) < 24 or len(w.read(page_size)) < page_size:
            return True  # no whole first frame
        return struct.unpack(">2I", frame[8:16]) != (salt1, salt2)


class Ledger:
    """A per-identity privacy ledger in SQLite: releases charged whole or not at all.

    Parameters
    ----------
    path : str or path-like
        The ledger's file (created when absent, unless ``create=False``), or
        ``":memory:"`` for a ledger that lives as long as the object.
    timeout : float, default 60
        Seconds a charge waits for another process's charge to finish.
    create : bool, default True
        Create the file when it does not exist; with ``False`` a missing
        file is a ``FileNotFoundError``.
    readonly : bool, default False
        Open an existing ledger to read it only (what ``fastldp account``
        does): :meth:`charge` is refused and the file is never written
        (see "Read-only copies" below).

    Notes
    -----
    :meth:`charge` records one release for a set of distinct identities, in
    one transaction (see the module's notes on durability and composition).
    A release name is charged once. Charging a name again with the same
    identities, epsilons and event is a safe retry: it returns the first
    :class:`Release` and charges nothing (so a client that lost the answer
    of a charge may repeat it); charging a name again with anything else is
    a ``ValueError``.

    Read-only copies. SQLite reads a WAL-mode file through its ``-shm``
    index, which a reader creates when it is missing; in a folder no one
    may write (a backup, a read-only mount) it cannot, and SQLite's
    ``mode=ro`` fails with "unable to open database file". ``readonly=True``
    then opens the file ``immutable=1`` (no index, no lock) when there is
    no ``-wal`` or the ``-wal`` adds nothing (empty, no header, or frames of
    an earlier generation only); otherwise the ``-wal`` may hold committed
    releases the file lacks, and without the index no one can tell which
    were checkpointed, so the file and its ``-wal`` are copied into a
    private temporary folder, read there (SQLite reads the WAL correctly)
    and removed on :meth:`close`. :attr:`open_mode` says which. Nothing in
    the read-only folder is written.

    Examples
    --------
    >>> from fastldp.accounting import Ledger
    >>> ledger = Ledger(":memory:")
    >>> ledger.charge([1, 2, 3], 0.5, release="monday")
    Release('monday', #1, 3 identities, epsilon=0.5, pure epsilon)
    >>> ledger.charge([2, 3], [0.25, 1.0], release="tuesday")
    Release('tuesday', #2, 2 identities, epsilon=0.25..1, pure epsilon)
    >>> ledger.spent([1, 2, 3, 4])
    array([0.5 , 0.75, 1.5 , 0.  ])
    >>> ledger.remaining([1, 2, 3, 4], cap=1.0)
    array([ 0.5 ,  0.25, -0.5 ,  1.  ])
    >>> ledger.can_release([1, 2, 3, 4], 0.5, cap=1.0)
    array([ True, False, False,  True])
    >>> for group in ledger.groups(cap=1.0):
    ...     print(group.releases, group.n_identities, group.spent_max, group.remaining)
    ('monday',) 1 0.5 0.5
    ('monday', 'tuesday') 2 1.5 -0.5
    >>> ledger.charge([2, 4], 0.5, release="friday", cap=1.0)
    Traceback (most recent call last):
    ...
    fastldp.accounting.ledger.BudgetExceededError: ...1 of 2 identities would exceed it...
    """

    def __init__(self, path: Union[str, Path], *, timeout: float = 60.0, create: bool = True,
                 readonly: bool = False, delta: Optional[float] = None):
        self._path = str(path)
        self._timeout = check_float(timeout, "timeout", "Ledger", low=0.0, low_open=False)
        self._delta_given = None if delta is None else check_float(
            delta, "delta", "Ledger", low=0, high=1, low_open=False, high_open=True)
        self._delta = DEFAULT_DELTA
        self._readonly = bool(readonly)
        memory = self._path == ":memory:"
        if not memory and (readonly or not create):
            p = Path(self._path)
            if not p.exists():
                raise FileNotFoundError(2, "No such ledger file", self._path)
            if p.is_dir():
                raise IsADirectoryError(21, "A folder, not a ledger file", self._path)
        #: how the file was opened: "read-write", "read-only", "read-only, immutable" or
        #: "read-only, private copy" (see the class notes on read-only copies)
        self.open_mode = "read-only" if readonly else "read-write"
        self._copy: Optional[tempfile.TemporaryDirectory] = None
        if readonly and not memory:
            self._connect_readonly()
            return
        try:
            self._con = sqlite3.connect(self._path, timeout=self._timeout, isolation_level=None)
        except sqlite3.Error as exc:
            raise OSError(f"Cannot open the ledger {self._path}: {exc}") from exc
        try:
            self._open(memory, create and not readonly)
        except BaseException:
            self._con.close()
            raise

    def _connect_readonly(self) -> None:
        """Open the file read-only; a WAL-mode copy without its ``-shm`` in a folder no one
        may write is opened immutable when its WAL adds nothing, else as a private copy."""
        path = Path(self._path).resolve()
        wal, shm = Path(f"{path}-wal"), Path(f"{path}-shm")
        uri = path.as_uri() + "?mode=ro"
        try:
            self._con = sqlite3.connect(uri, timeout=self._timeout, isolation_level=None,
                                        uri=True)
        except sqlite3.Error as exc:
            raise OSError(f"Cannot open the ledger {self._path}: {exc}") from exc
        try:
            # the first read opens the WAL and its -shm index; in a folder no one may write,
            # SQLite cannot create a missing -shm and says "unable to open database file"
            self._con.execute("SELECT 1 FROM sqlite_master LIMIT 1").fetchall()
        except sqlite3.OperationalError as exc:
            cannot_open = (getattr(exc, "sqlite_errorname", None) == "SQLITE_CANTOPEN"
                           or "unable to open" in str(exc))
            if cannot_open and not shm.exists():
                self._con.close()
                self._con = self._connect_without_shm(path, wal)
            # any other failure: _open meets it again and says what it means
        except sqlite3.DatabaseError:
            pass
        try:
            self._open(False, False)
        except BaseException:
            self.close()
            raise

    def _connect_without_shm(self, path: Path, wal: Path) -> sqlite3.Connection:
        if not wal.exists() or _wal_adds_nothing(wal):
            # the file alone is the ledger: immutable=1 reads it without any -shm or lock
            self.open_mode = "read-only, immutable"
            uri = path.as_uri() + "?mode=ro&immutable=1"
        else:
            # the WAL may hold committed pages the file lacks, and SQLite reads a WAL only
            # through a -shm index it cannot create here: read a private copy of both
            self._copy = tempfile.TemporaryDirectory(prefix="fastldp-ledger-")
            copy = Path(self._copy.name) / path.name
            shutil.copyfile(path, copy)
            shutil.copyfile(wal, f"{copy}-wal")
            self.open_mode = "read-only, private copy"
            uri = copy.as_uri() + "?mode=ro"
        try:
            return sqlite3.connect(uri, timeout=self._timeout, isolation_level=None, uri=True)
        except sqlite3.Error as exc:
            if self._copy is not None:
                self._copy.cleanup()
            raise OSError(f"Cannot open the ledger {self._path}: {exc}") from exc

    def _open(self, memory: bool, create: bool) -> None:
        con = self._con
        try:
            if not self._readonly:
                if not memory:
                    con.execute("PRAGMA journal_mode=WAL")
                    # a charge of 10^6 identities writes ~300 MB of WAL; once checkpointed,
                    # keep at most 64 MiB of it on disk
                    con.execute("PRAGMA journal_size_limit=67108864")
                con.execute("PRAGMA synchronous=FULL")
            # the write lock (not needed to read) makes two processes that create one
            # file wait for each other instead of both creating the tables
            con.execute("BEGIN" if self._readonly else "BEGIN IMMEDIATE")
            try:
                have = {r[0] for r in con.execute(
                    "SELECT name FROM sqlite_master WHERE type = 'table'")}
                if not have and create:
                    # executescript would commit the transaction: one statement at a time
                    for statement in _SCHEMA.split(";"):
                        if statement.strip():
                            con.execute(statement)
                    con.execute("INSERT INTO meta VALUES ('schema', ?), ('created', ?), "
                                "('delta', ?)", (_SCHEMA_VERSION, _now(), repr(
                                    DEFAULT_DELTA if self._delta_given is None
                                    else self._delta_given)))
                    have = set(_TABLES)
                missing = [t for t in _TABLES if t not in have]
                version = None if missing else con.execute(
                    "SELECT value FROM meta WHERE key = 'schema'").fetchone()
                stored = None if missing else con.execute(
                    "SELECT value FROM meta WHERE key = 'delta'").fetchone()
                con.execute("COMMIT")
            except BaseException:
                if con.in_transaction:
                    con.execute("ROLLBACK")
                raise
        except sqlite3.DatabaseError as exc:
            if isinstance(exc, sqlite3.OperationalError) and "locked" in str(exc):
                raise OSError(f"Cannot open the ledger {self._path}: {exc}") from exc
            if _is_corrupt(exc):  # an SQLite file whose schema pages are damaged
                raise LedgerDamagedError(f"The ledger {self._path} is damaged: {exc}.") from exc
            raise ValueError(f"{self._path} is not a fastldp ledger: {exc}") from exc
        if missing:
            raise ValueError(f"{self._path} is not a fastldp ledger: it lacks the tables "
                             f"{', '.join(missing)}.")
        if version is None or version[0] != _SCHEMA_VERSION:
            raise ValueError(f"{self._path} is a fastldp ledger of schema "
                             f"{None if version is None else version[0]}; this fastldp reads "
                             f"schema {_SCHEMA_VERSION}.")
        # a ledger made before ledgers had a delta has DEFAULT_DELTA's
        self._delta = DEFAULT_DELTA if stored is None else float(stored[0])
        if self._delta_given is not None and self._delta_given != self._delta:
            raise ValueError(
                f"The 'delta' parameter of Ledger must be the ledger's own delta, "
                f"{self._delta!r} (stored in {self._path} when it was made: every release "
                f"with an event was charged at it). Got {self._delta_given!r} instead.")

    # --- the context manager and repr -----------------------------------------------------

    def close(self) -> None:
        """Close the database connection (the file stays; a private copy is removed)."""
        self._con.close()
        if self._copy is not None:
            self._copy.cleanup()

    def __enter__(self) -> "Ledger":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        (n,) = self._con.execute("SELECT COUNT(*) FROM releases").fetchone()
        return f"Ledger({self._path!r}, {n} release{'s' if n != 1 else ''})"

    @property
    def path(self) -> str:
        """The ledger's file (or ``":memory:"``)."""
        return self._path

    @property
    def delta(self) -> float:
        """The ledger's delta: a release with an event that is not pure spends its epsilon at it."""
        return self._delta

    @property
    def n_identities(self) -> int:
        """How many identities have been charged at least once."""
        return int(self._con.execute("SELECT COUNT(*) FROM identities").fetchone()[0])

    # --- charging ------------------------------------------------------------------------

    def charge(self, identities: ArrayLike, epsilons: Union[float, ArrayLike, None] = None,
               event: Any = None, *, release: Optional[str] = None,
               cap: Optional[Cap] = None) -> Release:
        """Record one release for these identities, whole or not at all.

        Parameters
        ----------
        identities : array_like of int64
            The distinct identities the release used (a repeated identity is
            an error that names it).
        epsilons : float or array_like of float, optional
            The epsilon charged to each identity (one for all, or one per
            identity): what the release spends under basic composition, in
            ``(0, MAX_EPSILON]``. Required without an event; with one it may
            be omitted (``None``) and, if given, must agree with what the event
            spends (see below).
        event : dp_accounting.DpEvent, optional
            The release's guarantee for every identity it charged (for example
            the RDP curve of a shuffled release), composed under an
            ``(epsilon, delta)`` cap. ``None``: pure epsilon, ``epsilons`` say
            it all.

            How the spend is derived from the event: a pure event (every part
            pure epsilon: :func:`~fastldp.accounting.pure_dp_event`, Laplace,
            their compositions) spends its pure epsilon; any other event its
            epsilon at the ledger's :attr:`delta` (the accountant's smallest
            route, rounded up). Every identity is charged that spend; an
            ``epsilons`` that differs from it by more than the relative slack
            :data:`ROUNDING` is refused (a ValueError naming both), as is an
            event whose spend is not in ``(0, MAX_EPSILON]`` (a non-private
            event, an event with no finite epsilon at the ledger's delta).
        release : str, optional
            The release's unique name; a random one (a UUID) when omitted.
            A name already charged with the same content returns its first
            record and charges nothing; with other content it is refused.
        cap : float or (float, float), optional
            Charge only if every identity stays within this budget after the
            release (see :meth:`can_release`); otherwise raise
            :class:`BudgetExceededError` and charge nobody. The check and the
            charge are one transaction, so no other charge comes between.

        Returns
        -------
        Release
            The record of the release.
        """
        owner = "Ledger.charge"
        if self._readonly:
            raise ValueError(f"The ledger {self._path} was opened read-only: it charges nothing.")
        ids, eps, _, event_json = self._release_spend(identities, epsilons, event, owner)
        name = _name(release, owner)
        limit = None if cap is None else _cap(cap, owner)
        digest = _digest(ids, eps, event_json)
        con = self._con
        con.execute("BEGIN IMMEDIATE")
        try:
            first = con.execute("SELECT release, digest FROM releases WHERE name = ?",
                                (name,)).fetchone()
            if first is not None:
                con.execute("ROLLBACK")
                if first[1] != digest:
                    raise ValueError(
                        f"The release {name!r} was already charged (release #{first[0]}) with "
                        f"other identities, epsilons or event; a release name is charged once.")
                return self._release(first[0])
            if limit is not None:
                fits = self._fits(ids, eps, event_json, limit)
                if not fits.all():
                    over = ids[~fits]
                    shown = ", ".join(str(v) for v in over[:10]) + (
                        ", ..." if over.size > 10 else "")
                    raise BudgetExceededError(
                        f"The release {name!r} was not charged: {over.size:,} of {ids.size:,} "
                        f"identities would exceed it ({shown}) under the cap {_cap_text(limit)}.",
                        over)
            created = _now()
            cur = con.execute(
                "INSERT INTO releases(name, n, epsilon_min, epsilon_max, event, digest, created)"
                " VALUES (?, ?, ?, ?, ?, ?, ?)",
                (name, int(ids.size), float(eps.min()), float(eps.max()), event_json, digest,
                 created))
            index = cur.lastrowid
            assert index is not None  # an INSERT sets it
            _insert_charges(con, index, ids, eps)
            con.execute(_NEW_SETS, (index,))
            con.execute(_MOVE, (index, 1.0 if event_json is None else 0.0))
            con.execute("COMMIT")
        except BaseException:
            if con.in_transaction:
                con.execute("ROLLBACK")
            raise
        return Release(name, index, int(ids.size), float(eps.min()), float(eps.max()),
                       event_json, created)

    def charge_store(self, store: Union[str, Path], *, release: str,
                     cap: Optional[Cap] = None) -> Release:
        """Charge the identities a collector acknowledged, with its mechanism's privacy event.

        What ``fastldp account charge LEDGER --store DIR --release NAME``
        does: the identities are the store's exactly-once index (every
        identity of an acknowledged batch, and no other), the event is the
        one the collector's mechanism states for its reports
        (``mechanism.privacy().event()``, the mechanism rebuilt from the spec
        the store recorded, through :mod:`fastldp.protocol`), and the
        release is charged as :meth:`charge` charges it: whole or not at
        all, under ``cap`` if given, and a second charge of the same
        ``release`` from the same store is a safe retry that charges nothing.

        Parameters
        ----------
        store : path
            The store directory of ``fastldp serve`` (``--store``).
        release : str
            The release's unique name.
        cap : float or (float, float), optional
            As in :meth:`charge`: refused whole (:class:`BudgetExceededError`)
            when an identity would exceed it.

        Returns
        -------
        Release

        Raises
        ------
        fastldp._stores.LockHeld
            A collector still holds the store (a ``ValueError``): its
            identities are final only once it stopped, and a release name is
            charged once, so stop it first (``SIGTERM``; a killed
            collector's acknowledged identities are in the store too).
        ValueError
            ``store`` is not a store; it holds no identity; its mechanism
            takes personal budgets (charge those with :meth:`charge`, one
            epsilon per identity); an identity is above the ledger's int64
            range; or the release was charged before with other content.
        """
        from .._stores import store_identities
        from ..protocol import resolve_class

        owner = "Ledger.charge_store"
        identities, spec = store_identities(store)
        name = spec.get("mechanism") if isinstance(spec, dict) else None
        params = spec.get("params") if isinstance(spec, dict) else None
        if not isinstance(name, str) or not isinstance(params, dict):
            raise ValueError(f"The store {store} records the spec {spec!r}, not a mechanism's.")
        try:
            mechanism = resolve_class(name)(**params)
        except TypeError as exc:
            raise ValueError(f"The store {store} records a spec of {name} that does not build "
                             f"it ({exc}).") from None
        if mechanism.report_schema.personal_budgets:
            raise ValueError(
                f"{owner} charges a store of reports at one budget; the store {store} holds "
                f"{name} reports with personal budgets: charge each identity its own epsilon "
                "with Ledger.charge(identities, epsilons, release=...).")
        if identities.size == 0:
            raise ValueError(f"The store {store} holds no acknowledged report: nothing to "
                             "charge.")
        if int(identities[-1]) > _INT64.max:
            raise ValueError(
                f"The store {store} holds the identity {int(identities[-1])}, above the "
                f"ledger's int64 range (its identities are in [{_INT64.min}, {_INT64.max}]).")
        event = mechanism.privacy().event()
        return self.charge(identities.astype(np.int64), None, event, release=release, cap=cap)

    def _release_spend(self, identities, epsilons, event, owner: str):
        """(sorted identities, their epsilons, the sort order, the event's JSON or None).

        With an event, every identity's epsilon is the event's spend (see :meth:`charge`),
        and ``epsilons``, when given, must agree with it.
        """
        if event is None:
            if epsilons is None:
                raise param_error("epsilons", owner, f"floats in (0, {MAX_EPSILON!r}] "
                                  f"(required for a release without an event)", None)
            ids, eps, order = _sorted_release(identities, epsilons, owner)
            return ids, eps, order, None
        event_json = _event_to_json(event, owner)
        spend, how = _event_spend(event, self._delta)
        if not (0 < spend <= MAX_EPSILON):  # NaN fails
            raise ValueError(
                f"The 'event' parameter of {owner} must spend an epsilon in (0, "
                f"{MAX_EPSILON!r}] (MAX_EPSILON; a release with an event spends the event's "
                f"{how}). Got {event!r}, which spends {spend!r}, instead.")
        ids, eps, order = _sorted_release(identities, spend if epsilons is None else epsilons,
                                          owner)
        if epsilons is not None:
            off = np.flatnonzero(~(np.abs(eps - spend) <= ROUNDING * spend))
            if off.size:
                i = int(off[0])
                raise ValueError(
                    f"The 'epsilons' parameter of {owner} must agree with the release's "
                    f"event, which spends {spend!r} (its {how}; relative slack {ROUNDING:g}), "
                    f"or be omitted (None) to charge that. Got {float(eps[i])!r} for "
                    f"identity {int(ids[i])} ({off.size:,} of {ids.size:,} differ) instead.")
            eps = np.full(ids.size, spend)  # the event's spend, exactly
        return ids, eps, order, event_json

    # --- questions -----------------------------------------------------------------------

    def _state(self, ids: np.ndarray):
        """(spent, pure, set_id) of each identity (0, 0, 0 for one never charged)."""
        spent = np.zeros(ids.size)
        pure = np.zeros(ids.size)
        sets = np.zeros(ids.size, dtype=np.int64)
        if not ids.size:
            return spent, pure, sets
        # sorted queries: the lookups below walk the found rows in order (random binary
        # searches over 10^6 rows cost ten times more in cache misses)
        order = np.argsort(ids)
        queried = ids[order]
        uniq = queried[np.concatenate(([True], queried[1:] != queried[:-1]))]
        parts = []
        for start in range(0, uniq.size, 1 << 20):
            rows = self._con.execute(
                "SELECT identity, spent, pure, set_id FROM identities "
                "WHERE identity IN (SELECT value FROM json_each(?))",
                (_json_ints(uniq[start:start + (1 << 20)]),)).fetchall()
            parts.append(np.array(rows, dtype=_STATE))
        found = np.concatenate(parts)
        if not found.size:
            return spent, pure, sets
        known = np.ascontiguousarray(found["identity"])
        if (known[1:] < known[:-1]).any():
            by = np.argsort(known, kind="stable")
            found, known = found[by], known[by]
        at = np.searchsorted(known, queried)
        hit = known[np.minimum(at, known.size - 1)] == queried
        rows = found[at[hit]]
        where = order[hit]
        spent[where], pure[where], sets[where] = rows["spent"], rows["pure"], rows["set_id"]
        return spent, pure, sets

    def _chains(self):
        """Each release set's releases (indices, in charge order) and the releases' events."""
        parents = {}
        for set_id, parent, release in self._con.execute(
                "SELECT set_id, parent, release FROM sets"):
            parents[set_id] = (parent, release)
        chains = {0: ()}

        def chain(set_id):
            path = []
            while set_id not in chains:
                path.append(set_id)
                set_id = parents[set_id][0]
            known = chains[set_id]
            for s in reversed(path):
                known = known + (parents[s][1],)
                chains[s] = known
            return chains[path[0]] if path else known

        events, single = {}, {}
        for release, event, low, high in self._con.execute(
                "SELECT release, event, epsilon_min, epsilon_max FROM releases"):
            if event is not None:
                events[release] = event
            else:
                single[release] = low if low == high else None
        return chain, events, single

    @staticmethod
    def _compose(releases: tuple, events: dict, single: dict, pure: float, delta: float,
                 extra_event: Optional[str] = None, extra_pure: float = 0.0) -> float:
        """Epsilon at ``delta`` of one identity's releases (and a planned one).

        ``pure`` is the identity's sum over its releases without an event. When each of
        them charged one epsilon to everyone, they enter the accountant one by one (its
        PLD composes many small ones below their sum); otherwise their sum enters as one
        pure event (basic composition among them), or is the answer when there are no
        events.
        """
        evs = [events[r] for r in releases if r in events]
        if extra_event is not None:
            evs.append(extra_event)
        ones = [single[r] for r in releases if r not in events]
        if all(e is not None for e in ones):
            return _epsilon_at(evs, ones + ([extra_pure] if extra_pure > 0 else []), delta)
        total = pure + extra_pure
        return _epsilon_at(evs, [total], delta) if evs else total

    def _epsilons_at(self, sets: np.ndarray, pure: np.ndarray, delta: float,
                     extra_event: Optional[str] = None,
                     extra_pure: Optional[np.ndarray] = None) -> np.ndarray:
        """Epsilon at ``delta`` of each identity's releases (and a planned release)."""
        chain, events, single = self._chains()
        extra = np.zeros(sets.size) if extra_pure is None else np.broadcast_to(
            np.asarray(extra_pure, dtype=np.float64), sets.size)
        out = np.empty(sets.size)
        uniq, inverse = np.unique(sets, return_inverse=True)
        order = np.argsort(inverse.ravel(), kind="stable")
        bounds = np.searchsorted(inverse.ravel()[order], np.arange(uniq.size + 1))
        for j, set_id in enumerate(uniq.tolist()):
            members = order[bounds[j]:bounds[j + 1]]
            releases = chain(set_id)
            if extra_event is None and all(r not in events for r in releases) and any(
                    single[r] is None for r in releases):
                # pure releases, some personal: their sum (basic composition), per identity
                out[members] = pure[members] + extra[members]
                continue
            keys = np.empty(members.size, dtype=[("pure", np.float64), ("extra", np.float64)])
            keys["pure"], keys["extra"] = pure[members], extra[members]
            distinct, back = np.unique(keys, return_inverse=True)
            values = np.array([self._compose(releases, events, single, p, delta, extra_event, e)
                               for p, e in distinct.tolist()])
            out[members] = values[back.ravel()]
        return out

    def spent(self, identities: ArrayLike) -> np.ndarray:
        """The epsilon each identity has spent under basic composition (0 if never charged).

        Parameters
        ----------
        identities : array_like of int64
            Any identities (repeats allowed).

        Returns
        -------
        ndarray of float64
            :math:`\\sum_j \\varepsilon_j` over the releases that charged the
            identity, in the order of ``identities``.
        """
        ids = _identities(identities, "Ledger.spent", distinct=False)
        return self._state(ids)[0]

    def remaining(self, identities: ArrayLike, cap: Cap) -> np.ndarray:
        """Each identity's budget left under ``cap`` (negative when it spent more).

        Parameters
        ----------
        identities : array_like of int64
            Any identities (repeats allowed).
        cap : float or (float, float)
            An epsilon under basic composition: the answer is
            ``cap - spent(identities)``. Or ``(epsilon, delta)``: the answer
            is ``epsilon`` minus the epsilon at ``delta`` of the identity's
            releases composed through :mod:`fastldp.accounting` (see the
            module's notes).

        Returns
        -------
        ndarray of float64
        """
        owner = "Ledger.remaining"
        ids = _identities(identities, owner, distinct=False)
        limit, delta = _cap(cap, owner)
        spent, pure, sets = self._state(ids)
        if delta is None:
            return limit - spent
        return limit - self._epsilons_at(sets, pure, delta)

    def _fits(self, ids: np.ndarray, eps: np.ndarray, event_json: Optional[str],
              limit) -> np.ndarray:
        cap_eps, delta = limit
        spent, pure, sets = self._state(ids)
        bound = cap_eps * (1.0 + ROUNDING)
        if delta is None:
            return spent + eps <= bound
        if event_json is None:
            after = self._epsilons_at(sets, pure, delta, extra_pure=eps)
        else:
            after = self._epsilons_at(sets, pure, delta, extra_event=event_json)
        return after <= bound

    def can_release(self, identities: ArrayLike, epsilons: Union[float, ArrayLike], cap: Cap,
                    event: Any = None) -> np.ndarray:
        """Whether each identity can take this release and stay within ``cap``.

        Parameters
        ----------
        identities : array_like of int64
            The distinct identities of the planned release.
        epsilons : float or array_like of float, or None
            Their charges, as for :meth:`charge` (None with an event: the
            event's spend).
        cap : float or (float, float)
            As for :meth:`remaining`: under a float cap, ``spent + epsilon <=
            cap``; under ``(epsilon, delta)``, the epsilon at ``delta`` of the
            identity's releases and this one composed is at most ``epsilon``.
            Both with a relative slack of :data:`ROUNDING`.
        event : dp_accounting.DpEvent, optional
            The planned release's event, as for :meth:`charge` (its spend
            under a float cap, the event itself under an ``(epsilon, delta)``
            cap).

        Returns
        -------
        ndarray of bool
            One answer per identity; ``.all()`` of it is the answer for the
            whole release, which :meth:`charge` with ``cap=`` checks and
            charges in one transaction.
        """
        owner = "Ledger.can_release"
        ids, eps, order, event_json = self._release_spend(identities, epsilons, event, owner)
        limit = _cap(cap, owner)
        fits = self._fits(ids, eps, event_json, limit)
        out = np.empty_like(fits)
        out[order] = fits  # back to the caller's order
        return out

    def _release(self, index: int) -> Release:
        row = self._con.execute(
            "SELECT name, release, n, epsilon_min, epsilon_max, event, created FROM releases "
            "WHERE release = ?", (index,)).fetchone()
        return Release(*row)

    def releases(self) -> list[Release]:
        """Every charged release, in the order charged, as :class:`Release` records."""
        return [Release(*row) for row in self._con.execute(
            "SELECT name, release, n, epsilon_min, epsilon_max, event, created FROM releases "
            "ORDER BY release")]

    def history(self, identity: int) -> list[tuple[str, float]]:
        """``(release name, epsilon)`` of every release that charged ``identity``, in order."""
        ids = _identities(identity, "Ledger.history", distinct=False)
        if ids.size != 1:
            raise param_error("identity", "Ledger.history", "one int64 identity", identity)
        _, _, sets = self._state(ids)
        chain = self._chains()[0]
        out = []
        for index in chain(int(sets[0])):
            name, eps = self._con.execute(
                "SELECT r.name, c.epsilon FROM charges AS c JOIN releases AS r "
                "ON r.release = c.release WHERE c.release = ? AND c.identity = ?",
                (index, int(ids[0]))).fetchone()
            out.append((name, eps))
        return out

    def groups(self, cap: Optional[Cap] = None) -> list[Group]:
        """The identities grouped by the set of releases they took part in.

        Parameters
        ----------
        cap : float or (float, float), optional
            With a cap, each group's :attr:`Group.remaining` is the smallest
            remaining budget of its identities (as :meth:`remaining`).

        Returns
        -------
        list of Group
            In the order their last release was charged, then by their
            earlier releases. Reads every identity once (seconds for 10^7).
        """
        limit = None if cap is None else _cap(cap, "Ledger.groups")
        rows = self._con.execute(
            "SELECT set_id, COUNT(*), MIN(spent), MAX(spent), MAX(pure) FROM identities "
            "GROUP BY set_id").fetchall()
        chain, events, single = self._chains()
        rows.sort(key=lambda row: (chain(row[0])[-1:], chain(row[0])))
        names = dict(self._con.execute("SELECT release, name FROM releases").fetchall())
        out = []
        for set_id, n, low, high, pure in rows:
            remaining = None
            if limit is not None:
                if limit[1] is None:
                    remaining = limit[0] - high
                else:  # the composition grows with the pure part: its largest is the worst
                    remaining = limit[0] - self._compose(chain(set_id), events, single, pure,
                                                         limit[1])
            out.append(Group(tuple(names[r] for r in chain(set_id)), int(n), float(low),
                             float(high), remaining))
        return out

    def integrity_check(self) -> str:
        """SQLite's ``PRAGMA integrity_check``: ``"ok"`` for a sound file."""
        return "\n".join(r[0] for r in self._con.execute("PRAGMA integrity_check"))

    def verify(self) -> None:
        """Raise :class:`LedgerDamagedError` unless the file is sound and its charges are valid.

        Runs SQLite's ``PRAGMA integrity_check`` (every page, every b-tree, the indices
        against their tables: about half a second for 3 * 10^6 charges) and checks that
        every release charged epsilons in ``(0, MAX_EPSILON]`` (an older fastldp accepted
        any finite epsilon, and two charges of 1e308 made a total ``inf``). SQLite keeps
        no checksums: a damaged byte inside a stored value that leaves the structure
        sound is not found by any check.

        Raises
        ------
        LedgerDamagedError
            With one line: the first problem and how many SQLite listed.
        """
        try:
            report = self.integrity_check()
        except sqlite3.DatabaseError as exc:
            raise LedgerDamagedError(f"The ledger {self._path} is damaged: PRAGMA "
                                     f"integrity_check failed ({exc}).") from exc
        if report.strip() != "ok":
            problems = [line.strip() for line in report.splitlines()
                        if line.strip() and not line.startswith("*** in database")]
            problems = problems or [report.strip()]
            raise LedgerDamagedError(
                f"The ledger {self._path} is damaged: PRAGMA integrity_check lists "
                f"{len(problems)} problem{'s' if len(problems) != 1 else ''}"
                f"{' (it stops at 100)' if len(problems) >= 100 else ''}, the first: "
                f"{problems[0]}")
        bad = self._con.execute(
            "SELECT name, epsilon_min, epsilon_max FROM releases "
            "WHERE NOT (epsilon_min > 0 AND epsilon_max <= ?) OR epsilon_min IS NULL "
            "OR epsilon_max IS NULL ORDER BY release LIMIT 1", (MAX_EPSILON,)).fetchone()
        if bad is not None:
            raise LedgerDamagedError(
                f"The ledger {self._path} holds the release {bad[0]!r} with epsilons "
                f"{bad[1]!r}..{bad[2]!r}, outside (0, {MAX_EPSILON!r}] (MAX_EPSILON; written "
                f"by an older fastldp): the totals of its identities are not meaningful.")


def _cap_text(limit) -> str:
    eps, delta = limit
    return f"epsilon {eps:g}" if delta is None else f"(epsilon {eps:g}, delta {delta:g})"


def _now() -> str:
    return datetime.now(timezone.utc).isoformat(timespec="seconds")

