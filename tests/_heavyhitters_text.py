"""A real string workload for the heavy-hitter tests and bench/heavyhitters_text.py (not part of the package).

Issue 34's workload (about 490,000 users, 3,615 distinct titles of 10 to 82
bytes, the most frequent held by 0.36% of the users and the 16th by 0.24%)
has the shape of MovieLens movie titles weighted by their ratings; MovieLens
1M is not shipped in ``../shared/data``, MovieLens latest-small is. So the
users here hold the title of a rated movie, drawn with the titles' real
rating frequencies in latest-small, keeping the titles with at least
``min_ratings`` ratings (default 5: 3,651 titles, the most frequent 0.364%
of users, the 16th 0.225%), each cut to at most ``max_bytes`` UTF-8 bytes at
a character boundary (the issue cut at 64 bytes).
"""

from __future__ import annotations

import csv
import gzip
from collections import Counter
from functools import lru_cache
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parents[2] / "shared" / "data" / "movielens-latest-small"


def available() -> bool:
    return (DATA / "ratings.csv.gz").exists() and (DATA / "movies.csv.gz").exists()


def _cut(title: str, max_bytes: int) -> str:
    raw = title.encode("utf-8")
    if len(raw) <= max_bytes:
        return title
    return raw[:max_bytes].decode("utf-8", errors="ignore")  # drops a split last character


@lru_cache(maxsize=4)
def title_law(min_ratings: int = 5, max_bytes: int = 64) -> tuple[tuple[str, ...], np.ndarray]:
    """``(titles, probabilities)``, most frequent first (ties: the title's order)."""
    with gzip.open(DATA / "movies.csv.gz", "rt", encoding="utf-8", newline="") as f:
        titles = {row["movieId"]: row["title"] for row in csv.DictReader(f)}
    with gzip.open(DATA / "ratings.csv.gz", "rt", encoding="utf-8", newline="") as f:
        counts = Counter(titles[row["movieId"]] for row in csv.DictReader(f))
    cut = Counter()
    for title, c in counts.items():
        if c >= min_ratings:
            cut[_cut(title, max_bytes)] += c
    ranked = sorted(cut.items(), key=lambda tc: (-tc[1], tc[0]))
    names = tuple(t for t, _ in ranked)
    freq = np.array([c for _, c in ranked], dtype=np.float64)
    return names, freq / freq.sum()


def title_users(n: int = 490_000, *, rng: int = 0, min_ratings: int = 5,
                max_bytes: int = 64) -> list[str]:
    """``n`` users' titles (str), drawn i.i.d. from :func:`title_law`."""
    names, probs = title_law(min_ratings, max_bytes)
    # a stream of its own: default_rng(seed).choice draws its uniforms as
    # default_rng(seed).random does, so with privatize(rng=seed) every holder of a title
    # would make the same keep/flip decision (estimates off by a factor of 2 at eps 8)
    idx = np.random.default_rng([rng, 34]).choice(len(names), size=n, p=probs)
    return [names[i] for i in idx]


def true_top(users, k: int) -> list:
    """The exact top-k of ``users`` (ties: the smaller item)."""
    counts = Counter(users)
    return [t for t, _ in sorted(counts.items(), key=lambda tc: (-tc[1], tc[0]))[:k]]
