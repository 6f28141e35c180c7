"""The reports' true values: the package's Zipf law, or a real file read from a path.

* ``zipf``: ``n`` values drawn i.i.d. with ``P(v) ~ (v + 1)^-exponent`` over
  ``[0, d)`` (exponent 1.1 is the law of ``fastldp simulate`` and
  :func:`fastldp.mechanisms.simulate`), fresh in every repetition;
* ``movielens``: one value per rating of a GroupLens ratings file (any
  release: ``ratings.csv[.gz]``, ``ratings.dat``, ``u.data``), the movie id;
* ``gowalla``: one value per check-in of a SNAP ``loc-gowalla_totalCheckins``
  file, the location id.

A real file keeps the ``d`` items with the most records (ties to the smaller
id), numbered ``0 .. d-1`` in that order, and drops the records of the other
items, so the domain is the ``d`` most frequent items and every record left
is one report. Its values are the same in every repetition; repetitions
vary the public hashes and the clients' coins. Nothing is downloaded.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..._datafiles import (
    MOVIELENS_100K_FILES, MOVIELENS_LATEST_URL, _find, _loadtxt, _read_movielens,
)
from ..runner import _resolve_paths
from .spec import REAL_KINDS

__all__ = ["Population", "load_population", "zipf_law", "top_items", "find_real_data",
           "GOWALLA_URL", "MOVIELENS_PATTERNS", "GOWALLA_PATTERNS"]

GOWALLA_URL = "https://snap.stanford.edu/data/loc-gowalla.html"
MOVIELENS_PATTERNS = ["ratings.dat", "ratings.dat.gz", "ratings.csv", "ratings.csv.gz",
                      "ml-*/ratings.dat", "ml-*/ratings.dat.gz", "ml-*/ratings.csv",
                      "ml-*/ratings.csv.gz", *MOVIELENS_100K_FILES]
GOWALLA_PATTERNS = ["loc-gowalla_totalCheckins.txt.gz", "loc-gowalla_totalCheckins.txt",
                    "loc-gowalla_totalCheckins*.txt*"]
# the folders under --data where find_real_data looks, besides --data itself
_FOLDERS = {"movielens": ("movielens*", "ml-*"), "gowalla": ("gowalla*",)}


@dataclass(frozen=True)
class Population:
    """One repetition's true values.

    Attributes
    ----------
    values : int64 array, shape (n,)
        One symbol in ``[0, d)`` per report.
    d : int
        The domain size (on real data, at most the number of distinct items).
    kind : str
    data_hash : str
        12 hex digits of a hash of ``values`` (rows of one repetition share it).
    """

    values: np.ndarray
    d: int
    kind: str
    data_hash: str

    @property
    def n(self) -> int:
        return int(self.values.shape[0])

    @property
    def frequencies(self) -> np.ndarray:
        """The true frequencies: counts of each symbol divided by ``n``."""
        return np.bincount(self.values, minlength=self.d) / self.n


def _hash(values: np.ndarray) -> str:
    return hashlib.sha256(np.ascontiguousarray(values, dtype=np.int64).tobytes()).hexdigest()[:12]


def zipf_law(d: int, exponent: float) -> np.ndarray:
    """``P(v) = (v + 1)^-exponent / H``, ``v = 0 .. d-1``."""
    w = np.arange(1, d + 1, dtype=np.float64) ** -float(exponent)
    return w / w.sum()


def top_items(items: np.ndarray, d: int) -> tuple[np.ndarray, int]:
    """``(values, d)``: the records of the ``d`` most frequent items, relabelled by rank.

    Ties go to the smaller item id; records of other items are dropped.
    """
    ids, inverse, counts = np.unique(np.asarray(items, dtype=np.int64), return_inverse=True,
                                     return_counts=True)
    order = np.lexsort((ids, -counts))          # most records first, then the smaller id
    d = min(int(d), ids.shape[0])
    rank = np.full(ids.shape[0], -1, dtype=np.int64)
    rank[order[:d]] = np.arange(d)
    values = rank[inverse.ravel()]
    return values[values >= 0], d


def _read_items(kind: str, path) -> np.ndarray:
    if kind == "movielens":
        files = _find(path, MOVIELENS_PATTERNS, "MovieLens",
                      "'ratings.dat', 'ratings.csv[.gz]' or 'u.data' of a GroupLens release",
                      MOVIELENS_LATEST_URL)
        return _read_movielens(files)[1]
    files = _find(path, GOWALLA_PATTERNS, "Gowalla", "'loc-gowalla_totalCheckins.txt.gz'",
                  GOWALLA_URL)
    return np.concatenate([
        _loadtxt(f, "SNAP Gowalla check-ins (user, time, latitude, longitude, location)",
                 delimiter="\t", usecols=(4,), dtype=np.int64).ravel() for f in files])


_REAL_CACHE: dict = {}


def _real(kind: str, path: str, d: int) -> Population:
    key = json.dumps([kind, path, d])
    if key not in _REAL_CACHE:
        values, d_real = top_items(_read_items(kind, path), d)
        if d_real < 2 or values.shape[0] == 0:
            raise ValueError(f"The {kind} data at {path!r} hold {d_real} distinct item(s); "
                             f"a frequency oracle needs at least 2.")
        _REAL_CACHE.clear()  # one data set per process at a time
        _REAL_CACHE[key] = Population(values, d_real, kind, _hash(values))
    return _REAL_CACHE[key]


def load_population(config: dict, stream, data_dir=None) -> Population:
    """The true values of one repetition (``stream("data")`` seeds the synthetic draw)."""
    table = _resolve_paths(config["population"], data_dir)
    kind = table["kind"]
    if kind in REAL_KINDS:
        return _real(kind, table["path"], config["d"])
    d, n = config["d"], config["n"]
    gen = np.random.default_rng(stream("data"))
    values = gen.choice(d, size=n, p=zipf_law(d, table["exponent"])).astype(np.int64)
    return Population(values, d, kind, _hash(values))


def find_real_data(data_dir) -> list[dict]:
    """The real populations found under ``data_dir``: ``[{"kind", "path"}, ...]``.

    Each kind is looked for in ``data_dir`` and in its subfolders named like
    the release (``movielens*``, ``ml-*``, ``gowalla*``); ``path`` is relative
    to ``data_dir`` (so a configuration's id does not depend on where the
    data live). The first match of a kind is kept.
    """
    if data_dir is None:
        return []
    base = Path(data_dir).expanduser()
    if not base.is_dir():
        return []
    found = []
    patterns = {"movielens": MOVIELENS_PATTERNS, "gowalla": GOWALLA_PATTERNS}
    for kind in REAL_KINDS:
        folders = [base] + sorted(p for glob in _FOLDERS[kind] for p in base.glob(glob)
                                  if p.is_dir())
        for folder in folders:
            try:
                _find(folder, patterns[kind], kind, "", "")
            except FileNotFoundError:
                continue
            rel = folder.relative_to(base).as_posix()
            found.append({"kind": kind, "path": rel if rel != "." else "."})
            break
    return found
