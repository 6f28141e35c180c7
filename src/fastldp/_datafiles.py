"""Reading the data files both families load (nothing is ever downloaded).

File resolution (a file, a folder or a list of files; ``.gz`` or plain),
latin-1 text, and the GroupLens MovieLens ratings readers are shared by the
relation loaders (:mod:`fastldp.relations.loaders`) and the sparse-vector
loaders (:mod:`fastldp.vectors.datasets`).
"""

from __future__ import annotations

import gzip
from pathlib import Path

import numpy as np

MOVIELENS_1M_URL = "https://grouplens.org/datasets/movielens/1m/"
MOVIELENS_LATEST_URL = "https://grouplens.org/datasets/movielens/latest/"


# ---------------------------------------------------------------- files


def _not_found(dataset: str, path, expected: str, where: str) -> FileNotFoundError:
    return FileNotFoundError(
        f"{dataset} data not found at '{path}': expected {expected}, published at {where}. "
        f"fastldp never downloads data: download it yourself and pass the file, or the "
        f"folder holding it, as path."
    )


def _find(path, patterns, dataset, expected, where, *, every=False) -> list:
    """Resolve ``path`` (a file, a folder or a sequence of files) to existing files.

    In a folder, the first pattern with a match wins; with ``every`` all
    patterns are collected, one file per name (``x.txt`` before ``x.txt.gz``).
    """
    if isinstance(path, (list, tuple)):
        if not path:
            raise _not_found(dataset, path, expected, where)
        return [f for item in path for f in _find(item, patterns, dataset, expected, where)]
    base = Path(path).expanduser()
    if base.is_file():
        return [base]
    if base.is_dir():
        found = {}
        for pattern in patterns:
            for hit in sorted(p for p in base.glob(pattern) if p.is_file()):
                found.setdefault(hit.name.removesuffix(".gz"), hit)
            if found and not every:
                break
        if found:
            return [found[key] for key in sorted(found)]
    raise _not_found(dataset, base, expected, where)


def _open_text(path: Path):
    if path.name.endswith(".gz"):
        return gzip.open(path, "rt", encoding="latin-1", newline="")
    return open(path, encoding="latin-1", newline="")


def _first_line(path: Path) -> str:
    with _open_text(path) as fh:
        return fh.readline().strip("\r\n")


def _loadtxt(path: Path, what: str, **kwargs) -> np.ndarray:
    try:
        with _open_text(path) as fh:
            return np.loadtxt(fh, ndmin=1, comments=None, encoding=None, **kwargs)
    except ValueError as err:
        raise ValueError(f"Could not read '{path}' as {what}: {err}") from None



# ---------------------------------------------------------------- MovieLens


#: The ratings file of every GroupLens MovieLens release, in the order a folder is searched:
#: 100K ``u.data`` (tab-separated, no header), 1M and 10M ``ratings.dat``
#: (``UserID::MovieID::Rating::Timestamp``), 20M / 25M / 32M / latest ``ratings.csv``.
MOVIELENS_100K_FILES = ["u.data", "u.data.gz", "ml-*/u.data", "ml-*/u.data.gz"]


def _read_movielens(files):
    """Read (user, movie, rating) arrays from GroupLens ratings files of any release."""
    users, movies, ratings = [], [], []
    for f in files:
        base = f.name.removesuffix(".gz")
        if base == "u.data" or base.endswith(".data"):
            # MovieLens 100K: user id \t item id \t rating \t timestamp, no header
            arr = _loadtxt(f, "MovieLens 100K u.data (user id, item id, rating, timestamp; tabs)",
                           delimiter="\t", usecols=(0, 1, 2),
                           dtype=[("u", "i8"), ("m", "i8"), ("r", "f8")])
        elif base.endswith(".dat"):
            # UserID::MovieID::Rating::Timestamp; splitting on ':' leaves empty fields 1, 3, 5
            arr = _loadtxt(f, "MovieLens 1M/10M ratings.dat (UserID::MovieID::Rating::Timestamp)",
                           delimiter=":", usecols=(0, 2, 4),
                           dtype=[("u", "i8"), ("m", "i8"), ("r", "f8")])
        else:
            header = _first_line(f).lower().startswith("userid")
            arr = _loadtxt(f, "MovieLens ratings.csv (userId,movieId,rating,timestamp)",
                           delimiter=",", skiprows=int(header), usecols=(0, 1, 2),
                           dtype=[("u", "i8"), ("m", "i8"), ("r", "f8")])
        users.append(arr["u"])
        movies.append(arr["m"])
        ratings.append(arr["r"])
    return np.concatenate(users), np.concatenate(movies), np.concatenate(ratings)
