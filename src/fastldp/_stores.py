"""One writer per file: exclusive locks, and the closed segments of a collector's store.

Shared below every family and the service: :mod:`fastldp.service.store` locks
its store directory with :class:`FileLock` before recovery or any write;
:func:`fastldp.reports.decode_files` locks its checkpoint; a decode given
a store directory reads its listed, closed segments through
:func:`store_segments`, which refuses a store that a collector holds or whose
journal still holds batches outside a segment; and the ledger reads the
identities a stopped collector acknowledged, and its mechanism's spec,
through :func:`store_identities`.

The locks are ``flock`` locks, held by an open file description: the
operating system releases them when the holder exits, however it exits
(``SIGKILL`` included), so a stale lock is never guessed from a timeout. The
lock file records its holder (pid, host, start time, role) for the message
of whoever is refused; the record is information, the lock is the ``flock``.
"""

from __future__ import annotations

import datetime
import json
import os
import socket
import sqlite3
import time
from pathlib import Path
from typing import Any, Optional, Union

try:  # POSIX; the collector and the decode checkpoints are tested there only
    import fcntl
except ImportError:  # pragma: no cover - Windows: no flock
    fcntl = None  # type: ignore[assignment]

__all__ = ["FileLock", "LockHeld", "store_segments", "store_identities", "STORE_LOCK",
           "STORE_INDEX"]

STORE_LOCK = "store.lock"  #: the lock file inside a store directory
STORE_INDEX = "index.sqlite"  #: the journal of a store directory (what marks a directory a store)


class LockHeld(ValueError):
    """Another process holds the lock (the message names it: pid, host, start time)."""


def _holder_text(raw: bytes) -> str:
    try:
        rec = json.loads(raw.decode())
        return (f"pid {int(rec['pid'])} on host {rec['host']} (running {rec['role']} since "
                f"{rec['started']})")
    except (ValueError, KeyError, TypeError, UnicodeDecodeError):
        return "a process that has not recorded itself yet"


class FileLock:
    """An exclusive ``flock`` on ``path`` (created if missing), held until :meth:`release`.

    Parameters
    ----------
    path : path
        The lock file.
    what : str
        What the lock guards, for messages (``"the store /srv/store"``).
    role : str
        What the holder is doing, recorded in the file (``"fastldp serve"``).
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"], what: str, role: str) -> None:
        self.path = os.fspath(path)
        self.what = what
        self.role = role
        self._fd: Optional[int] = None

    def acquire(self) -> "FileLock":
        """Take the lock without waiting; :class:`LockHeld` names the holder when it is taken."""
        if fcntl is None:  # pragma: no cover - Windows
            return self
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                try:
                    holder = _holder_text(os.pread(fd, 4096, 0))
                finally:
                    os.close(fd)
                raise LockHeld(f"{self.what} is in use by {holder}; one writer at a time: "
                               "stop that process first (its lock is released when it exits)"
                               ) from None
            except BaseException:
                os.close(fd)
                raise
            # a lock file removed after its holder's work (a decode checkpoint's) may have
            # been replaced between the open and the flock: lock the file the path names now
            try:
                now = os.stat(self.path)
            except FileNotFoundError:
                now = None
            mine = os.fstat(fd)
            if now is not None and (now.st_dev, now.st_ino) == (mine.st_dev, mine.st_ino):
                break
            os.close(fd)
        record = {"pid": os.getpid(), "host": socket.gethostname(), "role": self.role,
                  "started": datetime.datetime.now().astimezone().isoformat(timespec="seconds"),
                  "time": time.time()}
        os.ftruncate(fd, 0)
        os.pwrite(fd, json.dumps(record).encode(), 0)
        self._fd = fd
        return self

    @property
    def held(self) -> bool:
        return self._fd is not None

    def release(self, *, remove: bool = False) -> None:
        """Release the lock (``remove``: delete the lock file first, while still holding it)."""
        fd, self._fd = self._fd, None
        if fd is None:
            return
        if remove:
            try:
                os.unlink(self.path)
            except FileNotFoundError:  # pragma: no cover - removed by hand meanwhile
                pass
        os.close(fd)  # closing the last descriptor releases the flock

    def __enter__(self) -> "FileLock":
        return self.acquire()

    def __exit__(self, *exc: Any) -> None:
        self.release()


def _probe(directory: Path) -> Optional[int]:
    """A shared lock on the store's lock file (``None``: no lock file), or :class:`LockHeld`."""
    path = directory / STORE_LOCK
    if fcntl is None or not path.exists():  # pragma: no cover - Windows / a store before locks
        return None
    fd = os.open(path, os.O_RDONLY)
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except BlockingIOError:
        holder = _holder_text(os.pread(fd, 4096, 0))
        os.close(fd)
        raise LockHeld(f"the store {directory} is in use by {holder}: stop that collector "
                       "first (a graceful stop closes its open segment), then decode its "
                       "segments") from None
    return fd


def store_segments(directory: Union[str, "os.PathLike[str]"]) -> list[str]:
    """The closed segment files a stopped collector's store lists, in order.

    Parameters
    ----------
    directory : path
        A store directory of ``fastldp serve`` (it holds ``index.sqlite``).

    Returns
    -------
    list of str
        The segments listed in the journal; unlisted files (a segment being
        written when the collector was killed) are not reports yet.

    Raises
    ------
    LockHeld
        A collector holds the store: its open segment and its journal are
        not closed; stop it first.
    ValueError
        The journal holds acknowledged batches not yet in a closed segment
        (the collector was killed), or a listed segment is missing or still
        named ``.partial``: start ``fastldp serve`` on the store once and stop
        it (its recovery writes them to a segment); or the journal is not a
        store's.
    """
    root = Path(directory)
    fd = _probe(root)  # held while the journal is read: no collector starts meanwhile
    try:
        index = root / STORE_INDEX
        fix = ("start fastldp serve on it once and stop it (its recovery writes them to a "
               "closed segment), then decode")
        try:
            db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
            try:
                names = [r[0] for r in db.execute("SELECT name FROM segments ORDER BY name")]
                batches, rows = db.execute(
                    "SELECT COUNT(*), COALESCE(SUM(n), 0) FROM pending").fetchone()
            finally:
                db.close()
        except sqlite3.Error as exc:
            raise ValueError(f"{index} is not the journal of a fastldp serve store ({exc})"
                             ) from None
        if batches:
            raise ValueError(f"the store {root} holds {batches} acknowledged batches "
                             f"({rows:,} reports) in its journal that are not in a closed "
                             f"segment yet (its collector was killed): {fix}")
        missing = [n for n in names if not (root / n).is_file()]
        if missing:
            raise ValueError(f"the store {root} lists the segment {missing[0]}, which is "
                             f"missing or still named .partial: {fix}")
        return [str(root / n) for n in names]
    finally:
        if fd is not None:
            os.close(fd)


def store_identities(directory: Union[str, "os.PathLike[str]"]) -> tuple[Any, dict]:
    """The identities a stopped collector acknowledged, and the spec of its mechanism.

    Parameters
    ----------
    directory : path
        A store directory of ``fastldp serve`` (it holds ``index.sqlite``).

    Returns
    -------
    identities : ndarray of uint64
        Every identity of an acknowledged batch, sorted: the store's
        exactly-once index, committed with each batch before its answer (a
        collector that was killed acknowledged them too, whether or not
        they reached a closed segment).
    spec : dict
        ``{"mechanism": name, "params": {...}}``, as the collector recorded it.

    Raises
    ------
    LockHeld
        A collector holds the store. Its identities are not final while it
        accepts reports: a release charged now would miss the later ones,
        and the same release could not be charged again with them (a
        release name is charged once). Stop it first.
    ValueError
        ``directory`` is not a store (no journal, or not a store's).
    """
    import numpy as np

    root = Path(directory)
    index = root / STORE_INDEX
    if not index.is_file():
        raise ValueError(f"{root} is not a store of fastldp serve: it has no {STORE_INDEX}")
    fd = _probe(root)  # held while the journal is read: no collector starts meanwhile
    try:
        try:
            db = sqlite3.connect(f"file:{index}?mode=ro", uri=True)
            try:
                meta = dict(db.execute("SELECT key, value FROM meta").fetchall())
                # the signed int64 with the same bits as each uint64 identity (SQLite
                # integers are signed); sorted as uint64 below
                signed = np.fromiter((r[0] for r in db.execute("SELECT id FROM identities")),
                                     dtype=np.int64)
            finally:
                db.close()
        except sqlite3.Error as exc:
            raise ValueError(f"{index} is not the journal of a fastldp serve store ({exc})"
                             ) from None
    finally:
        if fd is not None:
            os.close(fd)
    try:
        spec = json.loads(meta["spec"])
    except (KeyError, ValueError) as exc:
        raise ValueError(f"{index} records no mechanism spec ({exc!r}): not a store of "
                         "fastldp serve") from None
    return np.sort(signed.view(np.uint64)), spec
