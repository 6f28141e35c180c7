"""Bearer tokens stored hashed, identity ranges, and per-token rate limits.

The tokens file has one client per line (``#`` starts a comment)::

    # name   sha256(token) in hex                                          [lo hi]
    phones   9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08  0 999999
    admin    2c26b46b68ffc68ff99b453c1d30413413422d706483bfa0f98a5e886266e7ae

A token bound to ``lo hi`` may report only identities ``lo <= id <= hi``
(inclusive), so one client cannot report as another; without a range it may
report any identity. Only the SHA-256 of each token is stored; a presented
token is hashed and compared with every entry by :func:`hmac.compare_digest`
(constant time in the hash, and every entry is compared).

Make a token and its line with ``fastldp serve --hash-token TOKEN``, or::

    python -c "import hashlib, sys; print(hashlib.sha256(sys.argv[1].encode()).hexdigest())" TOKEN
"""

from __future__ import annotations

import hashlib
import hmac
import math
import os
import threading
import time
from dataclasses import dataclass
from typing import Optional

__all__ = ["Client", "TokenTable", "RateLimiter", "hash_token", "read_tokens"]


def hash_token(token: str) -> str:
    """The SHA-256 hex digest of a token, as the tokens file stores it."""
    return hashlib.sha256(token.encode("utf-8")).hexdigest()


@dataclass(frozen=True)
class Client:
    """One line of the tokens file."""

    name: str
    digest: bytes
    lo: Optional[int] = None
    hi: Optional[int] = None

    def allows(self, lo: int, hi: int) -> bool:
        """True when every identity in ``[lo, hi]`` is in the client's range."""
        return self.lo is None or (self.lo <= lo and hi <= self.hi)


def read_tokens(path: "str | os.PathLike[str]") -> list[Client]:
    """Parse a tokens file; a ``ValueError`` names the line of any malformed entry.

    Every error says "the tokens file": a missing or unreadable file is a
    ``ValueError`` too (its cause the ``OSError``), so ``fastldp serve``
    reports it in one line that names the file's role.
    """
    try:
        with open(path, encoding="utf-8") as fh:
            lines = fh.readlines()
    except (OSError, UnicodeDecodeError) as exc:
        why = exc.strerror if isinstance(exc, OSError) and exc.strerror else str(exc)
        raise ValueError(f"the tokens file {os.fspath(path)} cannot be read: {why}") from exc
    return _parse_tokens(path, lines)


def _parse_tokens(path: "str | os.PathLike[str]", lines: list) -> list[Client]:
    """The clients of a tokens file's lines; each error names the file and the line."""
    clients, names = [], set()
    for number, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        where = f"the tokens file {os.fspath(path)}, line {number}"
        if len(words) not in (2, 4):
            raise ValueError(f"{where}: expected 'name sha256-hex [identity_lo identity_hi]', "
                             f"got {len(words)} fields")
        name, digest = words[0], words[1].lower()
        if len(digest) != 64 or any(c not in "0123456789abcdef" for c in digest):
            raise ValueError(f"{where}: the hash must be 64 hex digits (sha256); make it with "
                             "fastldp serve --hash-token TOKEN")
        if name in names:
            raise ValueError(f"{where}: the client name {name!r} appears twice")
        names.add(name)
        lo = hi = None
        if len(words) == 4:
            try:
                lo, hi = int(words[2]), int(words[3])
            except ValueError:
                raise ValueError(f"{where}: the identity range must be two integers") from None
            if not 0 <= lo <= hi < 2**64:
                raise ValueError(f"{where}: the identity range must satisfy "
                                 f"0 <= lo <= hi < 2**64; got {lo} {hi}")
        clients.append(Client(name, bytes.fromhex(digest), lo, hi))
    if not clients:
        raise ValueError(f"the tokens file {os.fspath(path)} holds no client tokens (every "
                         "request would be refused)")
    return clients


class TokenTable:
    """Look up the client a bearer token belongs to, in constant time per entry."""

    def __init__(self, clients: list[Client]) -> None:
        self.clients = list(clients)

    def lookup(self, authorization: Optional[str]) -> Optional[Client]:
        """The client of an ``Authorization: Bearer <token>`` header, or ``None``."""
        if not authorization:
            return None
        scheme, _, token = authorization.partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        digest = hashlib.sha256(token.strip().encode("utf-8")).digest()
        found = None
        for client in self.clients:  # every entry compared: the time does not say which matched
            if hmac.compare_digest(digest, client.digest):
                found = client
        return found


class RateLimiter:
    """A token bucket per client: ``rate`` reports per second, bursts up to ``burst``.

    A batch of ``n`` reports is allowed when the bucket holds ``n`` (a batch
    larger than the burst is allowed when the bucket is full, so a large batch
    is slowed, never refused forever).
    """

    def __init__(self, rate: Optional[float], burst: Optional[float] = None) -> None:
        self.rate = rate
        self.burst = burst if burst is not None else (rate if rate is not None else math.inf)
        self._buckets: dict[str, tuple[float, float]] = {}
        self._lock = threading.Lock()

    def take(self, name: str, n: int) -> float:
        """0 when ``n`` reports are allowed now (and taken), else the seconds to wait."""
        if self.rate is None:
            return 0.0
        now = time.monotonic()
        with self._lock:
            level, last = self._buckets.get(name, (self.burst, now))
            level = min(self.burst, level + (now - last) * self.rate)
            if level >= min(n, self.burst):
                self._buckets[name] = (level - n, now)
                return 0.0
            self._buckets[name] = (level, now)
            return (min(n, self.burst) - level) / self.rate
