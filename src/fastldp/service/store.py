"""The collector's durable store: an SQLite journal and index, Parquet segments, a live partial.

Layout of a store directory ``DIR``::

    DIR/store.lock            held (flock) by the one process that writes the store
    DIR/index.sqlite          the journal (SQLite in WAL mode, synchronous=FULL)
    DIR/seg-000001.parquet    closed report segments (fastldp.reports format)
    DIR/seg-000002.parquet.partial   the segment being written (not yet a report file)

The SQLite database holds, in one transaction per group of batches:

* ``identities``: every identity accepted (the exactly-once index),
* ``batches``: ``(token, idempotency key) -> first answer`` and the SHA-256 of
  the batch's canonical bytes (identities, budgets, reports as stored): a key
  repeated with the same batch gets the first answer, with another batch a
  422 ``idempotency_key_reused`` (rows of stores from before the digest, which
  is NULL there, replay as before),
* ``pending``: the write-ahead record of each accepted batch (its identities,
  budgets and reports as raw little-endian arrays) until the segment that
  holds it is closed,
* ``segments``: the closed segments and the batches each holds.

One process writes a store: :class:`Store` takes an exclusive ``flock`` on
``store.lock`` before it reads or writes anything (recovery included) and
holds it until :meth:`Store.close`; a second one is refused with
:class:`StoreLocked`, naming the holder, and touches nothing. The operating
system releases the lock when its holder exits, ``SIGKILL`` included.

A batch is acknowledged only after that transaction has committed, and a
commit with ``synchronous=FULL`` in WAL mode returns after the journal was
fsynced: the write-ahead record, the identities and the idempotency key
become durable in one atomic step, so a crash leaves either all of a batch or
none of it (and a client that got no answer retries with the same key).

Segments are derived data: after the ack, a thread of their own buffers the
batches and writes them to the open segment with
:class:`~fastldp.reports.ReportWriter` (the commit's thread hands them over
and moves on to the next group); when it holds
``segment_rows`` reports it is closed (footer written), fsynced, listed in
``segments`` (with the last batch it holds) and renamed from
``.parquet.partial`` to ``.parquet``; then its batches' write-ahead records
are dropped, a few per transaction. Recovery at start: a listed segment still
named ``.partial`` is renamed; an unlisted file is deleted (its batches are
still pending); write-ahead records of batches that a listed segment holds
(a crash while they were being dropped) are dropped; the pending batches are
written to a new closed segment; the partial is rebuilt from the segments.

The journal is checkpointed (its WAL copied into the database) by the
segment thread on a connection of its own, not by SQLite's automatic
checkpoint inside the commit that crosses 1,000 pages, which fsyncs the
database on the ack's path. So
``fastldp decode DIR/*.parquet`` decodes exactly the acknowledged reports
after any restart (and after a graceful stop, which closes the open segment).

The live estimate is the mechanism's exact ``partial``/``merge`` over the
accepted batches, so its ``finalize`` equals the offline decode bit for bit.
"""

from __future__ import annotations

import collections
import concurrent.futures
import errno
import hashlib
import json
import logging
import os
import queue
import sqlite3
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .._stores import STORE_LOCK, FileLock, LockHeld
from ..reports import ReportWriter, chunk_epsilons, mechanism_spec, open_reports

__all__ = ["Store", "Batch", "StoreError", "StoreLocked", "StoreFull"]

_SIGNED = np.int64  # identities are stored as the int64 with the same bits (SQLite integers are signed)


class StoreError(ValueError):
    """The store directory cannot serve this mechanism (another spec, a missing segment)."""


class StoreLocked(StoreError):
    """Another process holds the store (the message names it); nothing was read or written."""


class StoreFull(StoreError):
    """A batch could not be stored for lack of space: nothing of it was kept (retry later)."""


@dataclass
class Batch:
    """One batch of checked reports, as :meth:`Store.submit` takes it."""

    token: str
    key: str
    identities: np.ndarray  # uint64, shape (n,)
    epsilons: np.ndarray  # float64, shape (n,)
    reports: np.ndarray  # the store's report dtype, shape (n,) + report_shape
    received: float = field(default_factory=time.perf_counter)


@dataclass
class _Stats:
    reports: int = 0
    batches: int = 0
    replayed: int = 0
    history: collections.deque = field(default_factory=lambda: collections.deque(maxlen=600))
    latencies: collections.deque = field(default_factory=lambda: collections.deque(maxlen=1000))
    buckets: list = field(default_factory=list)
    latency_sum: float = 0.0
    latency_count: int = 0
    updated: float = field(default_factory=time.time)


#: identities a duplicate refusal names (the count says how many there are)
NAMED_DUPLICATES = 100
DELETE_BATCHES = 16  # write-ahead records dropped per transaction after a segment is listed
CHECKPOINT_BYTES = 4 << 20  # WAL payload between two checkpoints (SQLite's default: 1,000 pages)
LATENCY_BUCKETS = (0.001, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5)


def _no_space(exc: BaseException) -> bool:
    """Whether ``exc`` says the disk (or the database's page limit) is full."""
    if isinstance(exc, OSError) and exc.errno in (errno.ENOSPC, errno.EDQUOT):
        return True
    return isinstance(exc, sqlite3.Error) and (
        getattr(exc, "sqlite_errorcode", None) == 13  # SQLITE_FULL
        or "database or disk is full" in str(exc))


def _fsync_dir(path: Path) -> None:
    try:
        fd = os.open(path, os.O_RDONLY)
    except OSError:  # pragma: no cover - platforms without directory fds
        return
    try:
        os.fsync(fd)
    finally:
        os.close(fd)


class Store:
    """Durable, exactly-once storage of report batches with a live exact partial.

    Parameters
    ----------
    directory : path
        Created if missing. A store holds the reports of one mechanism
        (its spec is recorded; another is refused).
    mechanism : streaming estimator
        The server (``fastldp.mechanisms.from_spec``).
    report_shape, report_dtype : tuple, numpy dtype
        What every report must be (the server checks batches against them).
    segment_rows : int
        Reports per closed segment.
    row_group : int
        Reports buffered before they are written as one Parquet row group.
    decode_rows : int
        At most this many reports per ``partial`` call of the live decode:
        when the backlog is full, a group waits for the decoder to free
        room, and smaller calls free it more often (the partials are exact,
        so any split gives the same estimate).
    """

    def __init__(self, directory: Any, mechanism: Any, *, report_shape: tuple = (),
                 report_dtype: Any = np.int64, segment_rows: int = 1 << 20,
                 row_group: int = 1 << 16, max_group: int = 64,
                 backlog: int = 1 << 21, decode_rows: int = 1 << 13,
                 publish_every: int = 1, publish_seconds: Optional[float] = None) -> None:
        if isinstance(publish_every, bool) or not isinstance(publish_every, (int, np.integer)) \
                or publish_every < 1:
            raise ValueError("The 'publish_every' parameter of Store must be an int >= 1 "
                             f"(reports). Got {publish_every!r} instead.")
        if publish_seconds is not None and not (0 <= publish_seconds < float("inf")):
            raise ValueError("The 'publish_seconds' parameter of Store must be None or a "
                             f"finite number >= 0. Got {publish_seconds!r} instead.")
        self.publish_every = int(publish_every)
        self.publish_seconds = None if publish_seconds is None else float(publish_seconds)
        self.dir = Path(directory)
        self.dir.mkdir(parents=True, exist_ok=True)
        # one writer per store, before anything reads or writes it: a second collector's
        # recovery would copy the first one's journal into a segment of its own (the same
        # batches twice) and its commits would collide with the first's sequence numbers
        self._store_lock = FileLock(self.dir / STORE_LOCK, f"the store {self.dir}",
                                    "fastldp serve")
        try:
            self._store_lock.acquire()
        except LockHeld as exc:
            raise StoreLocked(str(exc)) from None
        except OSError as exc:
            raise StoreError(f"the store {self.dir} cannot be locked for writing "
                             f"({exc.strerror}: {exc.filename}); its directory must be "
                             "writable") from None
        try:
            self._open(mechanism, report_shape, report_dtype, segment_rows, row_group,
                       max_group, backlog, decode_rows)
        except BaseException:
            self._store_lock.release()
            raise

    def _open(self, mechanism, report_shape, report_dtype, segment_rows, row_group, max_group,
              backlog, decode_rows) -> None:
        self.mechanism = mechanism
        self.spec = mechanism_spec(mechanism)
        self.report_shape = tuple(report_shape)
        self.report_dtype = np.dtype(report_dtype)
        self.segment_rows = int(segment_rows)
        self.row_group = min(int(row_group), self.segment_rows)
        self.max_group = int(max_group)
        self.backlog = int(backlog)
        self.decode_rows = int(decode_rows)
        self.stats = _Stats()
        self.stats.buckets = [0] * (len(LATENCY_BUCKETS) + 1)
        self.started = time.time()
        self._db = sqlite3.connect(self.dir / "index.sqlite", isolation_level=None,
                                   check_same_thread=False)
        self._db.execute("PRAGMA journal_mode=WAL")
        self._db.execute("PRAGMA synchronous=FULL")
        # no automatic checkpoint: SQLite would run one inside the commit that crossed 1,000
        # WAL pages (about every 170 batches of 1,000 OLH reports), copying the WAL into the
        # database and fsyncing it before that commit returns, on the ack's path; the segment
        # thread checkpoints instead, on a connection of its own (_checkpoint)
        self._db.execute("PRAGMA wal_autocheckpoint=0")
        self._db.executescript("""
            CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE IF NOT EXISTS identities (id INTEGER PRIMARY KEY);
            CREATE TABLE IF NOT EXISTS batches (token TEXT NOT NULL, key TEXT NOT NULL,
                seq INTEGER NOT NULL, n INTEGER NOT NULL, response TEXT NOT NULL,
                digest TEXT, PRIMARY KEY (token, key));
            CREATE TABLE IF NOT EXISTS pending (seq INTEGER PRIMARY KEY, n INTEGER NOT NULL,
                payload BLOB NOT NULL);
            CREATE TABLE IF NOT EXISTS segments (name TEXT PRIMARY KEY, last_seq INTEGER NOT NULL,
                rows INTEGER NOT NULL);
        """)
        self._check_meta()
        columns = [r[1] for r in self._db.execute("PRAGMA table_info(batches)")]
        if "digest" not in columns:  # a store written before keys carried the body's digest
            self._db.execute("ALTER TABLE batches ADD COLUMN digest TEXT")
        # the segment thread's own connection: checkpoints, and dropping write-ahead records
        # that a listed segment holds (no fsync needed: a crash that loses such a drop leaves
        # records that recovery skips; the next commit of the writer fsyncs the WAL anyway)
        self._ckpt_db = sqlite3.connect(self.dir / "index.sqlite", isolation_level=None,
                                        check_same_thread=False)
        self._ckpt_db.execute("PRAGMA synchronous=NORMAL")
        # the decoder thread's own connection: it records each publication (_publish)
        self._pub_db = sqlite3.connect(self.dir / "index.sqlite", isolation_level=None,
                                       check_same_thread=False)
        self._pub_db.execute("PRAGMA synchronous=NORMAL")
        self._wal_bytes = 0  # payload committed since the last checkpoint (segment thread)
        try:  # JSON functions are built into SQLite >= 3.38 unless it was compiled without
            self._json_each = self._db.execute(
                "SELECT COUNT(*) FROM json_each('[-9223372036854775808, 1]')").fetchone()[0] == 2
        except sqlite3.OperationalError:  # pragma: no cover - an SQLite without JSON
            self._json_each = False
        self._lock = threading.Lock()  # guards the partial and the stats
        self._db_lock = threading.RLock()  # one transaction at a time on the connection
        try:  # ReportWriter's first segment would import it (~0.3 s of CPU with the GIL held)
            import pyarrow.parquet  # noqa: F401
        except ImportError:  # pragma: no cover - the serve extra brings pyarrow
            pass
        self._partial = self._empty_partial()
        self._applied_seq = 0
        self._applied_rows = 0
        self._applied = threading.Condition(self._lock)
        self._cache: Optional[tuple[int, Any]] = None
        # what the public estimate shows: (partial, last batch, reports); see _publish
        self._published: tuple[Any, int, int] = (self._partial, 0, 0)
        self._published_at = time.monotonic()
        self._writer: Optional[ReportWriter] = None
        self._segment_name: Optional[str] = None
        self._segment_last_seq = 0
        self._buffer: list[tuple[np.ndarray, np.ndarray, np.ndarray]] = []
        self._buffered = 0
        self._reload = False  # the open segment was dropped: buffer again from the journal
        self._unrenamed: list[str] = []  # listed segments still named .partial
        self._recover()
        self._queue: queue.Queue = queue.Queue()
        self._decode_queue: queue.Queue = queue.Queue()
        self._pending_rows = 0  # acknowledged, not yet in the partial (at most ``backlog``)
        self._backlog_cv = threading.Condition()
        self._closing = False
        self._segment_queue: queue.Queue = queue.Queue()
        self._thread = threading.Thread(target=self._write_loop, name="fastldp-store",
                                        daemon=True)
        self._segmenter = threading.Thread(target=self._segment_loop, name="fastldp-segments",
                                           daemon=True)
        self._decoder = threading.Thread(target=self._decode_loop, name="fastldp-decode",
                                         daemon=True)
        self._thread.start()
        self._segmenter.start()
        self._decoder.start()

    # ------------------------------------------------------------------ set-up and recovery
    def _check_meta(self) -> None:
        want = {"spec": json.dumps(self.spec, sort_keys=True),
                "report_shape": json.dumps(list(self.report_shape)),
                "report_dtype": self.report_dtype.str}
        have = dict(self._db.execute("SELECT key, value FROM meta").fetchall())
        if not have:
            self._db.execute("BEGIN IMMEDIATE")
            self._db.executemany("INSERT INTO meta VALUES (?, ?)", list(want.items()))
            self._db.execute("COMMIT")
            return
        for key, value in want.items():
            if have.get(key) != value:
                raise StoreError(f"the store {self.dir} holds reports with {key} "
                                 f"{have.get(key)}, not {value}; use another --store")

    def _empty_partial(self):
        empty_reports = np.zeros((0, *self.report_shape), dtype=self.report_dtype)
        eps = chunk_epsilons(self.mechanism, np.zeros(0), "no reports")
        return self.mechanism.partial(empty_reports, eps, np.zeros(0, dtype=np.uint64))

    def _seq(self) -> int:
        row = self._db.execute("SELECT MAX(seq) FROM batches").fetchone()
        return int(row[0] or 0)

    def _recover(self) -> None:
        listed = dict(self._db.execute("SELECT name, rows FROM segments").fetchall())
        for name in listed:
            final, part = self.dir / name, self.dir / (name + ".partial")
            if not final.exists():
                if part.exists():
                    os.replace(part, final)
                else:
                    raise StoreError(f"the store {self.dir} lists the segment {name}, "
                                     "which is missing")
        _fsync_dir(self.dir)
        for path in self.dir.glob("seg-*.parquet*"):
            if path.name not in listed:
                path.unlink()  # written after the last listed segment: its batches are pending
        files = [str(self.dir / name) for name in sorted(listed)]
        # the last publication (its reports: a prefix of the batches in sequence order), to be
        # published again: a restart must not show an estimate closer than publish_every
        # reports to one shown before it
        record = self._db.execute("SELECT value FROM meta WHERE key = 'published'").fetchone()
        cut = json.loads(record[0]) if record is not None and self.publish_every > 1 else None
        prefix: Optional[Any] = None
        done = 0
        # records of batches in a listed segment (a crash while they were being dropped)
        listed_seq = self._db.execute("SELECT COALESCE(MAX(last_seq), 0) FROM segments"
                                      ).fetchone()[0]
        self._db.execute("DELETE FROM pending WHERE seq <= ?", (listed_seq,))
        rows = self._db.execute("SELECT seq, n, payload FROM pending ORDER BY seq").fetchall()

        def chunks():  # every accepted report in sequence order: segments, then the journal
            for reader in (open_reports(self.mechanism, files) if files else []):
                for gi in range(reader.num_row_groups):
                    reps, eps, ids = reader.row_group(gi)
                    yield ids, eps, reps, None
            for seq, n, payload in rows:
                yield (*self._unpack(n, payload), seq)

        for ids, eps, reps, seq in chunks():
            n = ids.shape[0]
            if cut is not None and prefix is None and done + n >= cut["rows"]:
                k = cut["rows"] - done  # the publication ends inside (or after) this chunk
                if k:
                    self._merge(ids[:k], eps[:k], reps[:k])
                prefix = self._partial
                if k < n:
                    self._merge(ids[k:], eps[k:], reps[k:])
            elif n:
                self._merge(ids, eps, reps)
            done += n
            if seq is not None:
                self._buffer_rows(ids, eps, reps, seq)
        if rows:
            self._roll()
        n, batches = self._db.execute("SELECT COALESCE(SUM(n), 0), COUNT(*) FROM batches"
                                      ).fetchone()
        self.stats.reports, self.stats.batches = int(n), int(batches)
        self.stats.history.append((time.time(), self.stats.reports))
        self._next_seq = self._seq() + 1
        self._applied_seq = self._next_seq - 1
        self._applied_rows = self.stats.reports
        self._committed_seq = self._applied_seq
        if prefix is not None:
            self._published = (prefix, int(cut["seq"]), int(cut["rows"]))
        else:  # no record (a new store, one served with publish_every=1, or from before
            # publications): everything recovered was public
            self._published = (self._partial, self._applied_seq, self._applied_rows)
        if self.publish_every > 1:
            self._db.execute("INSERT OR REPLACE INTO meta VALUES ('published', ?)",
                             (json.dumps({"rows": self._published[2],
                                          "seq": self._published[1]}),))
        elif record is not None:  # every batch will be public: no step to keep
            self._db.execute("DELETE FROM meta WHERE key = 'published'")
        self._maybe_publish()

    # ------------------------------------------------------------------ payloads
    def _pack(self, ids, eps, reps) -> bytes:
        return (ids.astype("<u8").tobytes() + eps.astype("<f8").tobytes()
                + np.ascontiguousarray(reps, dtype=self.report_dtype.newbyteorder("<")).tobytes())

    def _unpack(self, n: int, payload: bytes):
        ids = np.frombuffer(payload, "<u8", n, 0).astype(np.uint64)
        eps = np.frombuffer(payload, "<f8", n, 8 * n).astype(np.float64)
        reps = np.frombuffer(payload, self.report_dtype.newbyteorder("<"), offset=16 * n)
        reps = reps.astype(self.report_dtype).reshape((n, *self.report_shape))
        return ids, eps, reps

    # ------------------------------------------------------------------ the public calls
    def submit(self, batch: Batch) -> concurrent.futures.Future:
        """Queue a batch; the future resolves to ``(status, body)`` once it is durable.

        ``status`` is 201 (accepted), 200 (a repeated key: the first answer)
        or 409 (identities already seen: ``body["identities"]`` names them).
        """
        fut: concurrent.futures.Future = concurrent.futures.Future()
        if self._closing:
            fut.set_exception(StoreError("the store is closing"))
        else:
            self._queue.put((batch, fut))
        return fut

    def committed_seq(self) -> int:
        return self._committed_seq

    def wait_applied(self, seq: int, timeout: float = 30.0) -> bool:
        """Block until the batches up to ``seq`` are in the live partial."""
        with self._applied:
            return self._applied.wait_for(lambda: self._applied_seq >= seq, timeout)

    def snapshot(self) -> _Stats:
        """A consistent copy of the counters (the writer thread updates them)."""
        with self._lock:
            st = self.stats
            return _Stats(reports=st.reports, batches=st.batches, replayed=st.replayed,
                          history=collections.deque(st.history),
                          latencies=collections.deque(st.latencies), buckets=list(st.buckets),
                          latency_sum=st.latency_sum, latency_count=st.latency_count,
                          updated=st.updated)

    def pending(self) -> int:
        """Reports acknowledged but not yet in the live partial (the decoder's backlog)."""
        with self._lock:
            return self.stats.reports - self._applied_rows

    def result(self) -> tuple[Any, int]:
        """The published estimate (finalized) and the last batch it includes."""
        result, seq, _ = self.published()
        return result, seq

    def published(self) -> tuple[Any, int, int]:
        """The published estimate, the last batch it includes, and the reports decoded now.

        The decoded reports not in the estimate are held back by the
        publication policy (``publish_every``, ``publish_seconds``).
        """
        with self._lock:
            partial, seq, _ = self._published
            decoded = self._applied_rows
            if self._cache is not None and self._cache[0] == seq:
                return self._cache[1], seq, decoded
        result = self.mechanism.finalize(partial)
        with self._lock:
            self._cache = (seq, result)
        return result, seq, decoded

    def wait_published(self, seq: int, timeout: float = 30.0) -> bool:
        """Wait until the batches up to ``seq`` are decoded and, where the policy lets them
        be, published; ``True`` when the published estimate holds them all.

        A publication due only by ``publish_seconds`` is waited for; reports
        short of ``publish_every`` are not (they wait for more reports).
        """
        deadline = time.monotonic() + timeout
        with self._applied:
            if not self._applied.wait_for(lambda: self._applied_seq >= seq, timeout):
                return False
            if self._published[1] >= seq:
                return True
            if self._applied_rows - self._published[2] < self.publish_every:
                return False
            return self._applied.wait_for(lambda: self._published[1] >= seq,
                                          max(0.0, deadline - time.monotonic()))

    # ------------------------------------------------------------------ publication
    def _publish_wait(self) -> Optional[float]:
        """Seconds until a publication due only by time (``None``: none is waiting)."""
        if self.publish_seconds is None:
            return None
        with self._lock:
            if self._applied_rows - self._published[2] < self.publish_every:
                return None
            return max(0.0, self._published_at + self.publish_seconds - time.monotonic())

    def _maybe_publish(self) -> bool:
        """Publish the decoded partial if the policy allows it now (the decoder's thread).

        The partial is merged on batch boundaries, so a publication holds
        whole batches: it is published when at least ``publish_every``
        reports (and ``publish_seconds``) passed since the last one, so two
        published estimates differ by ``publish_every`` reports or more. With
        ``publish_every > 1`` the publication is recorded in the journal (and
        its WAL fsynced) before it is shown, and a restart publishes that one
        again; with 1 every batch is public and nothing is recorded.
        """
        with self._lock:
            partial, seq, rows = self._partial, self._applied_seq, self._applied_rows
            last = self._published[2]
        if rows - last < self.publish_every:
            return False
        if (self.publish_seconds is not None
                and time.monotonic() - self._published_at < self.publish_seconds):
            return False
        if self.publish_every > 1:
            try:
                with self._db_lock:
                    self._pub_db.execute("INSERT OR REPLACE INTO meta VALUES ('published', ?)",
                                         (json.dumps({"rows": rows, "seq": seq}),))
                # the commit above wrote the WAL without an fsync (the lock is the writer's
                # too): sync the WAL here, outside the lock, before the estimate is shown
                fd = os.open(self.dir / "index.sqlite-wal", os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            except (sqlite3.Error, OSError):  # disk full: the last publication stays; retried
                logging.getLogger("fastldp.service").exception(
                    "recording a publication failed; the last one stays public")
                return False
        with self._applied:
            self._published = (partial, seq, rows)
            self._published_at = time.monotonic()
            self._applied.notify_all()
        return True

    def close(self) -> None:
        """Finish the queued batches, close the open segment (so the files hold every report)."""
        if self._closing:
            return
        self._closing = True
        self._queue.put(None)
        self._thread.join()
        self._segment_queue.put(None)
        self._segmenter.join()
        self._decode_queue.put(None)
        self._decoder.join()
        try:
            self._rename_listed()
            if self._reload:
                self._reload_from_journal()
            self._roll()
        finally:
            self._ckpt_db.close()
            self._pub_db.close()
            self._db.close()
            self._store_lock.release()

    # ------------------------------------------------------------------ the writer thread
    def _write_loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            group = [item]
            while len(group) < self.max_group:
                try:
                    nxt = self._queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._queue.put(None)
                    break
                group.append(nxt)
            try:
                self._commit_group(group)
            except BaseException as exc:  # disk full (StoreFull), I/O errors: the group's
                # batches are refused whole and the thread goes on with the next group
                if not isinstance(exc, StoreFull):
                    logging.getLogger("fastldp.service").exception(
                        "a group of %d batches could not be committed", len(group))
                for _, fut in group:
                    if not fut.done():
                        fut.set_exception(exc)

    @staticmethod
    def _replay(key: str, first: dict, first_digest: Optional[str], digest: str) -> tuple:
        """The answer to a key already used: the first answer if the body is the same batch
        (a client's retry), else 422 naming the key (a new batch must not vanish in a replay).

        Rows written before digests were stored (``first_digest`` None) replay as before.
        """
        if first_digest is None or first_digest == digest:
            return 200, dict(first, replayed=True)
        return 422, {
            "error": "idempotency_key_reused",
            "detail": f"the idempotency key {key!r} was already used by this token for "
                      f"another batch (batch {first['batch']}, {first['accepted']} reports; "
                      "this body differs from it): nothing of this batch was stored; a key "
                      "names one batch, so send a new batch with a new key"}

    def _rollback(self) -> None:
        """Undo the open transaction (SQLite may already have: on SQLITE_FULL it can roll back
        by itself), and take the next sequence number from what was committed."""
        db = self._db
        if db.in_transaction:
            try:
                db.execute("ROLLBACK")
            except sqlite3.Error:  # pragma: no cover - rolled back meanwhile
                pass
        self._next_seq = self._seq() + 1

    def _commit_group(self, group) -> None:
        db = self._db
        answers = []
        accepted = []
        # the canonical bytes of each batch (what the write-ahead record stores) and their
        # SHA-256, which a repeated key must match to be answered as a replay
        payloads = [self._pack(batch.identities, batch.epsilons, batch.reports)
                    for batch, _ in group]
        digests = [hashlib.sha256(p).hexdigest() for p in payloads]
        with self._db_lock:  # the segment thread's roll uses the connection too
            db.execute("BEGIN IMMEDIATE")
            try:
                seen_keys: dict = {}  # keys accepted in this group: (answer, digest)
                for (batch, fut), payload, digest in zip(group, payloads, digests):
                    k = (batch.token, batch.key)
                    if k in seen_keys:  # the same key twice in one group: as if committed
                        first, first_digest = seen_keys[k]
                        status, answer = self._replay(batch.key, first, first_digest, digest)
                        # a replay's body is the first answer, whose running total is set
                        # below: it is copied when the answers are sent
                        answers.append((fut, status, first if status == 200 else answer))
                        continue
                    row = db.execute("SELECT response, digest FROM batches WHERE token = ? "
                                     "AND key = ?", k).fetchone()
                    if row is not None:
                        answers.append((fut, *self._replay(batch.key, json.loads(row[0]),
                                                           row[1], digest)))
                        continue
                    signed = batch.identities.view(_SIGNED)
                    uniq, counts = np.unique(signed, return_counts=True)
                    inside = uniq[counts > 1]
                    db.execute("SAVEPOINT b")
                    cur = self._insert_identities(uniq)
                    if cur.rowcount != uniq.shape[0] or inside.size:
                        db.execute("ROLLBACK TO b")
                        db.execute("RELEASE b")
                        count, named = self._duplicates(uniq, inside)
                        refusal = {
                            "error": "duplicate_identity",
                            "identities": [int(i) for i in named],
                            "detail": f"{count} identities of the batch were already "
                                      "reported (or repeat within it); the batch is refused "
                                      f"whole (the first {named.size} are named)"}
                        answers.append((fut, 409, refusal))  # the key stays free
                        continue
                    db.execute("RELEASE b")
                    seq = self._next_seq
                    self._next_seq += 1
                    n = int(batch.identities.shape[0])
                    body = {"accepted": n, "batch": seq, "reports": 0, "replayed": False}
                    db.execute("INSERT INTO pending VALUES (?, ?, ?)", (seq, n, payload))
                    seen_keys[k] = (body, digest)
                    accepted.append((batch, fut, seq, body, digest))
                total = self.stats.reports
                for batch, fut, seq, body, digest in accepted:
                    total += body["accepted"]
                    body["reports"] = total
                    db.execute("INSERT INTO batches (token, key, seq, n, response, digest) "
                               "VALUES (?, ?, ?, ?, ?, ?)",
                               (batch.token, batch.key, seq, body["accepted"], json.dumps(body),
                                digest))
                db.execute("COMMIT")
            except BaseException as exc:
                self._rollback()
                if _no_space(exc):
                    raise StoreFull(
                        f"the store {self.dir} is out of disk space ({exc}): the batch was not "
                        "stored, nothing of it was kept (its identities and idempotency key "
                        "are still free); send it again once space is freed") from exc
                raise
        accepted = [(batch, fut, seq, body) for batch, fut, seq, body, _ in accepted]
        now = time.time()
        done = time.perf_counter()
        with self._lock:
            for batch, fut, seq, body in accepted:
                self.stats.reports += body["accepted"]
                self.stats.batches += 1
                latency = done - batch.received
                self.stats.latencies.append(latency)
                self.stats.latency_sum += latency
                self.stats.latency_count += 1
                i = int(np.searchsorted(LATENCY_BUCKETS, latency))
                self.stats.buckets[i] += 1
            if accepted:
                self._committed_seq = accepted[-1][2]
                self.stats.updated = now
                h = self.stats.history
                if h and now - h[-1][0] < 1.0 and len(h) > 1:
                    h[-1] = (h[-1][0], self.stats.reports)
                else:
                    h.append((now, self.stats.reports))
            self.stats.replayed += sum(1 for a in answers if a[1] == 200)
        for batch, fut, seq, body in accepted:
            fut.set_result((201, dict(body)))
        for fut, status, body in answers:
            fut.set_result((status, dict(body, replayed=True) if status == 200 else body))
        for batch, fut, seq, body in accepted:
            n = batch.identities.shape[0]
            with self._backlog_cv:  # the decoder's backlog is bounded (it holds memory): the
                # next group waits here, so a sustained ingest runs at the decoder's speed
                self._backlog_cv.wait_for(lambda: self._pending_rows < self.backlog)
                self._pending_rows += n
            self._decode_queue.put((batch.identities, batch.epsilons, batch.reports, seq))
        if accepted:  # the Parquet segment is written by its own thread, off the ack's path
            self._segment_queue.put([(batch.identities, batch.epsilons, batch.reports, seq)
                                     for batch, fut, seq, body in accepted])

    # ------------------------------------------------------------------ the segment thread
    def _segment_loop(self) -> None:
        log = logging.getLogger("fastldp.service")
        while True:
            item = self._segment_queue.get()
            if item is None:
                return
            for ids, eps, reps, seq in item:
                self._buffer_rows(ids, eps, reps, seq)
                self._wal_bytes += ids.nbytes + eps.nbytes + reps.nbytes
            try:
                self._rename_listed()
                if self._reload:
                    self._reload_from_journal()
                if self._buffered >= self.row_group:
                    self._flush()
                if self._writer is not None and self._writer.rows >= self.segment_rows:
                    self._roll()
            except BaseException:  # disk full, I/O errors: the batches are acknowledged and
                # durable in the write-ahead records; the open segment is dropped and written
                # again from them at the next batch (or the stop, or a restart's recovery)
                log.exception("writing the report segment %s failed; its batches stay in the "
                              "journal and are written again from it", self._segment_name)
                self._abandon_segment()
            if self._wal_bytes >= CHECKPOINT_BYTES:
                try:
                    self._checkpoint()
                except BaseException:  # a checkpoint copies committed pages: retried later
                    log.exception("checkpointing the journal failed")

    def _abandon_segment(self) -> None:
        """Drop the open (unlisted) segment after a failed write: a Parquet writer that failed
        midway cannot be trusted to have written what it was given. Its batches are in the
        write-ahead records (``pending``): :meth:`_reload_from_journal` buffers them again."""
        writer, name = self._writer, self._segment_name
        self._writer, self._segment_name = None, None
        self._buffer, self._buffered = [], 0
        self._reload = True
        if writer is not None:
            try:
                writer.close()
            except BaseException:  # the file is deleted below: its footer does not matter
                pass
        if name is not None:
            try:
                os.unlink(self.dir / (name + ".partial"))
            except OSError:  # never created; or left to the recovery, which deletes it
                pass

    def _reload_from_journal(self) -> None:
        """Buffer again every batch that no listed segment holds, up to the last one received.

        Every batch the segment thread received was committed first, so its
        write-ahead record is in ``pending`` until a listed segment holds it.
        """
        with self._db_lock:
            listed = self._db.execute("SELECT COALESCE(MAX(last_seq), 0) FROM segments"
                                      ).fetchone()[0]
            rows = self._db.execute("SELECT seq, n, payload FROM pending WHERE seq > ? AND "
                                    "seq <= ? ORDER BY seq",
                                    (listed, self._segment_last_seq)).fetchall()
        last = self._segment_last_seq
        self._buffer, self._buffered = [], 0
        for seq, n, payload in rows:
            self._buffer_rows(*self._unpack(n, payload), seq)
        self._segment_last_seq = last
        self._reload = False

    def _rename_listed(self) -> None:
        """Rename the listed segments whose rename failed (the recovery would do it too)."""
        while self._unrenamed:
            name = self._unrenamed[0]
            os.replace(self.dir / (name + ".partial"), self.dir / name)
            _fsync_dir(self.dir)
            self._unrenamed.pop(0)

    def _checkpoint(self) -> None:
        """Copy the WAL's committed pages into the database, beside the writer (not in its way).

        A ``PASSIVE`` checkpoint on the segment thread's own connection takes
        no lock that a commit waits for: the writer keeps appending to the
        WAL meanwhile (SQLite releases the GIL during it), and once a
        checkpoint has copied every frame the next commit writes the WAL from
        its start again, so the file stays bounded. Durability does not depend
        on it: a batch is durable once its commit fsynced the WAL.
        """
        self._wal_bytes = 0
        self._ckpt_db.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchall()

    def _duplicates(self, uniq: np.ndarray, inside: np.ndarray) -> tuple[int, np.ndarray]:
        """How many of a refused batch's identities were seen before or repeat inside it, and
        the first :data:`NAMED_DUPLICATES` of them in ``uint64`` order.

        ``uniq`` (sorted) and ``inside`` (the repeats) are the batch's identities as signed
        int64. SQLite counts and picks them (``json_each``): no Python loop over identities
        however large the batch, and at most ``NAMED_DUPLICATES`` rows come back. An SQLite
        without JSON functions gets chunked ``IN`` lists instead.
        """
        db = self._db
        limit = NAMED_DUPLICATES
        if not self._json_each:  # an SQLite built without JSON functions
            seen: set = set(inside.tolist())
            for start in range(0, uniq.shape[0], 500):
                part = uniq[start:start + 500].tolist()
                q = "SELECT id FROM identities WHERE id IN (%s)" % ",".join("?" * len(part))
                seen.update(r[0] for r in db.execute(q, part))
            every = np.sort(np.array(sorted(seen), dtype=np.int64).view(np.uint64))
            return int(every.size), every[:limit]
        batch = json.dumps(uniq.tolist())
        where = "id IN (SELECT value FROM json_each(?))"
        seen = db.execute(f"SELECT COUNT(*) FROM identities WHERE {where}", (batch,)).fetchone()[0]
        both = 0
        if inside.size:
            both = db.execute(f"SELECT COUNT(*) FROM identities WHERE {where}",
                              (json.dumps(inside.tolist()),)).fetchone()[0]
        # uint64 order: the non-negative int64 first (below 2**63), then the negative ones
        first = [r[0] for r in db.execute(
            f"SELECT id FROM identities WHERE {where} AND id >= 0 ORDER BY id LIMIT ?",
            (batch, limit))]
        if len(first) < limit:
            first += [r[0] for r in db.execute(
                f"SELECT id FROM identities WHERE {where} AND id < 0 ORDER BY id LIMIT ?",
                (batch, limit - len(first)))]
        named = np.union1d(np.array(first, dtype=np.int64).view(np.uint64),
                           inside.view(np.uint64))[:limit]
        return int(seen + inside.size - both), named

    def _insert_identities(self, uniq: np.ndarray) -> sqlite3.Cursor:
        """``INSERT OR IGNORE`` the sorted distinct identities; ``rowcount`` = the new ones.

        One statement over a JSON array (``json_each``) costs about half of
        an ``executemany`` of one-row bindings (0.2 vs 0.5 us per identity);
        an SQLite built without JSON gets the ``executemany``.
        """
        if self._json_each:
            return self._db.execute("INSERT OR IGNORE INTO identities "
                                    "SELECT value FROM json_each(?)",
                                    (json.dumps(uniq.tolist()),))
        return self._db.executemany("INSERT OR IGNORE INTO identities VALUES (?)",
                                    zip(uniq.tolist()))

    # ------------------------------------------------------------------ the decoder thread
    def _merge(self, ids, eps, reps) -> None:
        part = self.mechanism.partial(reps, chunk_epsilons(self.mechanism, eps, "a batch"), ids)
        self._partial = self.mechanism.merge(self._partial, part)

    def _decode_loop(self) -> None:
        while True:
            try:  # a publication due by time alone is made when its time comes
                item = self._decode_queue.get(timeout=self._publish_wait())
            except queue.Empty:
                self._maybe_publish()
                continue
            if item is None:
                return
            items = [item]
            rows = item[0].shape[0]
            while rows < self.decode_rows:
                try:
                    nxt = self._decode_queue.get_nowait()
                except queue.Empty:
                    break
                if nxt is None:
                    self._decode_queue.put(None)
                    break
                items.append(nxt)
                rows += nxt[0].shape[0]
            ids = np.concatenate([it[0] for it in items])
            eps = np.concatenate([it[1] for it in items])
            reps = np.concatenate([it[2] for it in items])
            part = self.mechanism.partial(reps, chunk_epsilons(self.mechanism, eps, "a batch"),
                                          ids)
            with self._applied:
                self._partial = self.mechanism.merge(self._partial, part)
                self._applied_seq = items[-1][3]
                self._applied_rows += rows
                self._applied.notify_all()
            self._maybe_publish()
            with self._backlog_cv:
                self._pending_rows -= rows
                self._backlog_cv.notify_all()

    # ------------------------------------------------------------------ segments
    def _buffer_rows(self, ids, eps, reps, seq) -> None:
        self._buffer.append((ids, eps, reps))
        self._buffered += ids.shape[0]
        self._segment_last_seq = seq

    def _flush(self) -> None:
        if not self._buffer:
            return
        if self._writer is None:
            with self._db_lock:
                last = self._db.execute("SELECT name FROM segments ORDER BY name DESC LIMIT 1"
                                        ).fetchone()
            number = int(last[0][4:10]) + 1 if last else 1
            self._segment_name = f"seg-{number:06d}.parquet"
            self._writer = ReportWriter(self.dir / (self._segment_name + ".partial"),
                                        self.mechanism, row_group_size=self.row_group)
        ids = np.concatenate([b[0] for b in self._buffer])
        eps = np.concatenate([b[1] for b in self._buffer])
        reps = np.concatenate([b[2] for b in self._buffer])
        self._writer.write(reps, eps, ids)
        self._buffer, self._buffered = [], 0

    def _roll(self) -> None:
        """Close the open segment: footer, fsync, list it and drop its write-ahead records."""
        self._flush()
        if self._writer is None:
            return
        self._writer.close()
        name, rows = self._segment_name, self._writer.rows
        part = self.dir / (name + ".partial")
        with open(part, "rb+") as fh:
            os.fsync(fh.fileno())
        db = self._db
        last = self._segment_last_seq
        with self._db_lock:
            db.execute("BEGIN IMMEDIATE")
            try:
                db.execute("INSERT INTO segments VALUES (?, ?, ?)", (name, last, rows))
                db.execute("COMMIT")
            except BaseException:
                if db.in_transaction:  # SQLite may have rolled back by itself (SQLITE_FULL)
                    db.execute("ROLLBACK")
                raise
        # listed: from here on the segment holds its batches, whatever fails below
        self._writer, self._segment_name = None, None
        self._unrenamed.append(name)
        log = logging.getLogger("fastldp.service")
        try:
            self._rename_listed()
        except OSError:  # retried at the next batch; the recovery renames it too
            log.exception("renaming the listed segment %s failed", name)
            return
        # The segment now holds its batches: their write-ahead records are dropped in small
        # transactions, so that the writer (which shares the connection) waits for one at a
        # time; dropping all of a 2^20-report segment's at once held it for ~0.2 s, a latency
        # spike every segment. A crash in between leaves records of listed batches, which
        # recovery skips and drops (seq <= the last listed segment's last_seq).
        while True:
            try:
                with self._db_lock:  # (one writer at a time, handed over without busy waits)
                    cur = self._ckpt_db.execute(
                        "DELETE FROM pending WHERE seq IN (SELECT seq FROM pending WHERE "
                        "seq <= ? ORDER BY seq LIMIT ?)", (last, DELETE_BATCHES))
            except sqlite3.Error:  # disk full: the next roll's deletion (seq <= its last
                # batch) or the recovery drops them; meanwhile they are skipped as listed
                log.exception("dropping the write-ahead records of %s failed", name)
                return
            if cur.rowcount < DELETE_BATCHES:
                break

    def segments(self) -> list[Path]:
        """The closed segment files, in order."""
        with self._db_lock:
            names = [r[0] for r in self._db.execute("SELECT name FROM segments ORDER BY name")]
        return [self.dir / n for n in names]
