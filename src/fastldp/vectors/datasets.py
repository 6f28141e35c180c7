"""Sparse-vector populations for paper 001, section 8: synthetic generators and loaders.

Synthetic (section 8.1): ``n`` users each draw ``m`` distinct keys uniformly
from ``[d]``; the values are

* :func:`frequency_vectors` - 1 (frequency estimation over set-valued data);
* :func:`signed_vectors` - ``-1`` for the first half of the keys (1-based
  ``k <= d / 2``) and ``+1`` for the rest;
* :func:`truncated_normal_vectors` - ``N(0, sigma^2)`` conditioned on
  ``[-1, 1]`` (``sigma = 0.2`` in the paper).

The estimation target is always the sample mean ``mu = (1/n) sum_i x_i``
(:meth:`SparseVectors.mean`). Section 8.1 calls the ground truth of the
signed data "``mu(j) = -1`` for ``j <= d/2``": that is the mean value *among
holders* of key ``j``, while every estimator here (and paper 001's
Eq. (20)) is unbiased for the sample mean, ``-m/d`` in expectation there.
:func:`value_means` returns the holder means for whoever needs them.

Real data, read from a user-given path (nothing is downloaded):

* :func:`load_commerce` - Women's E-Commerce Clothing Reviews ("Commerce"):
  one user per review row, one item (``Clothing ID``), value ``Rating / 5``;
  ``n = 23,486`` and ``d = 1,206`` on the complete file.
* :func:`load_clothing_fit` - Clothing Fit JSON lines ("Clothing", Misra et
  al. 2018): value 1 for fit ``'fit'``, 0 for ``'small'`` and ``'large'``; users
  with more than ``max_items = 2`` items keep a uniformly drawn pair.
* :func:`load_amazon_ratings` - Amazon product ratings ("Amazon"), the common
  CSV ``userId,productId,rating,timestamp`` without header: value
  ``rating / 5``, at most ``max_items = 2`` items per user.
* :func:`load_movielens_ratings` - MovieLens ratings ("Movie"): value
  ``rating / 5``, at most ``max_items = 100`` items per user.

Loader choices where section 8.1 is silent: a user who rates the same item
twice keeps the first record; records without a user, item or fit are
skipped and counted; columns are the distinct item ids in sorted order
(numeric order when every id is an integer).
"""

from __future__ import annotations

import csv
import gzip
import io
import json
import os
from dataclasses import dataclass

import numpy as np
from scipy.special import ndtr, ndtri

from .._random import as_generator
from .._validation import check_float, check_int, param_error
from .base import SparseVectors

__all__ = [
    "SparseVectorDataset",
    "frequency_vectors",
    "signed_vectors",
    "truncated_normal_vectors",
    "value_means",
    "cap_items",
    "load_commerce",
    "load_clothing_fit",
    "load_amazon_ratings",
    "load_movielens_ratings",
]


@dataclass(frozen=True)
class SparseVectorDataset:
    """Sparse vectors loaded from a real data file.

    Attributes
    ----------
    vectors : SparseVectors
    item_ids : numpy.ndarray
        The raw item id of each column.
    user_ids : numpy.ndarray
        The raw user id of each row.
    name : str
    n_capped : int
        Users whose items were subsampled to ``max_items``.
    n_skipped : int
        Records skipped (missing fields, malformed lines, repeated items).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.vectors import SparseVectorDataset, frequency_vectors
    >>> x = frequency_vectors(n=3, d=5, m=2, rng=0)
    >>> data = SparseVectorDataset(x, item_ids=np.arange(5), user_ids=np.array([7, 8, 9]),
    ...                            name="toy")
    >>> data.n, data.d, data.name
    (3, 5, 'toy')
    """

    vectors: SparseVectors
    item_ids: np.ndarray
    user_ids: np.ndarray
    name: str
    n_capped: int = 0
    n_skipped: int = 0

    @property
    def n(self) -> int:
        return self.vectors.n

    @property
    def d(self) -> int:
        return self.vectors.d

    @property
    def m(self) -> int:
        """The most items any user holds (the ``m`` of Remark 1)."""
        return self.vectors.max_items


# ------------------------------------------------------------------- synthetic
def _keys(n: int, d: int, m: int, gen) -> SparseVectors:
    # m distinct uniform keys per user: the m smallest of d uniform priorities
    if m == d:
        idx = np.tile(np.arange(d), (n, 1))
    elif 4 * m <= d:
        # rejection: redraw the rows that repeat a key (a fraction <= m^2 / (2d))
        idx = gen.integers(0, d, size=(n, m))
        bad = np.arange(n)
        while bad.size:
            rows = np.sort(idx[bad], axis=1)
            dup = (rows[:, 1:] == rows[:, :-1]).any(axis=1)
            bad = bad[dup]
            idx[bad] = gen.integers(0, d, size=(bad.size, m))
    else:
        chunk = max(1, (1 << 23) // d)  # bounded memory: at most ~64 MiB of priorities
        idx = np.concatenate([
            np.argpartition(gen.random((min(chunk, n - s), d)), m - 1, axis=1)[:, :m]
            for s in range(0, n, chunk)])
    idx.sort(axis=1)
    indptr = np.arange(0, n * m + 1, m, dtype=np.int64)
    return SparseVectors(indptr, idx.ravel().astype(np.int64), np.ones(n * m), d)


def _check_nmd(n, d, m, owner):
    n = check_int(n, "n", owner, low=1)
    d = check_int(d, "d", owner, low=1)
    m = check_int(m, "m", owner, low=1, high=d)
    return n, d, m


def frequency_vectors(*, n, d, m, rng=None) -> SparseVectors:
    """``n`` users, ``m`` distinct uniform keys each, value 1 (section 8.1).

    Parameters
    ----------
    n, d, m : int
        Users, dimension and items per user (``1 <= m <= d``).
    rng : None, int, SeedSequence or Generator
    """
    owner = "frequency_vectors"
    n, d, m = _check_nmd(n, d, m, owner)
    return _keys(n, d, m, as_generator(rng, owner, purpose="data"))


def signed_vectors(*, n, d, m, rng=None) -> SparseVectors:
    """Keys as :func:`frequency_vectors`; value ``-1`` if the 1-based key is
    ``<= d / 2``, else ``+1`` (section 8.1)."""
    owner = "signed_vectors"
    n, d, m = _check_nmd(n, d, m, owner)
    base = _keys(n, d, m, as_generator(rng, owner, purpose="data"))
    values = np.where(2 * (base.indices + 1) <= d, -1.0, 1.0)
    return SparseVectors(base.indptr, base.indices, values, d)


def truncated_normal_vectors(*, n, d, m, sigma=0.2, rng=None) -> SparseVectors:
    """Keys as :func:`frequency_vectors`; values ``N(0, sigma^2)`` conditioned
    on ``[-1, 1]`` (inverse-CDF sampling, section 8.1)."""
    owner = "truncated_normal_vectors"
    n, d, m = _check_nmd(n, d, m, owner)
    sigma = check_float(sigma, "sigma", owner, low=0.0)
    gen = as_generator(rng, owner, purpose="data")
    base = _keys(n, d, m, gen)
    lo, hi = ndtr(-1.0 / sigma), ndtr(1.0 / sigma)
    u = lo + gen.random(base.indices.shape[0]) * (hi - lo)
    values = np.clip(sigma * ndtri(u), -1.0, 1.0)
    return SparseVectors(base.indptr, base.indices, values, d)


def value_means(vectors: SparseVectors) -> np.ndarray:
    """Mean stored value among the holders of each key (0 where nobody holds it)."""
    total = np.bincount(vectors.indices, weights=vectors.values, minlength=vectors.d)
    count = np.bincount(vectors.indices, minlength=vectors.d)
    return np.divide(total, count, out=np.zeros(vectors.d), where=count > 0)


def cap_items(vectors: SparseVectors, max_items: int, *, rng=None):
    """Keep at most ``max_items`` items per user, drawn uniformly without replacement.

    Returns ``(capped vectors, number of users capped)``.
    """
    owner = "cap_items"
    max_items = check_int(max_items, "max_items", owner, low=1)
    sizes = vectors.sizes
    over = sizes > max_items
    if not over.any():
        return vectors, 0
    gen = as_generator(rng, owner, purpose="data")
    keep = np.ones(vectors.indices.shape[0], dtype=bool)
    for i in np.flatnonzero(over):
        lo, hi = vectors.indptr[i], vectors.indptr[i + 1]
        drop = gen.choice(hi - lo, size=hi - lo - max_items, replace=False)
        keep[lo + drop] = False
    new_sizes = np.minimum(sizes, max_items)
    indptr = np.concatenate([[0], np.cumsum(new_sizes)]).astype(np.int64)
    return SparseVectors(indptr, vectors.indices[keep], vectors.values[keep], vectors.d), int(over.sum())


# ----------------------------------------------------------------------- files
def _open_text(path: str):
    raw = open(path, "rb")
    head = raw.read(2)
    raw.seek(0)
    if head == b"\x1f\x8b":
        return io.TextIOWrapper(gzip.GzipFile(fileobj=raw), encoding="utf-8", newline="")
    return io.TextIOWrapper(raw, encoding="utf-8", newline="")


def _resolve_file(path, owner: str, patterns) -> str:
    if not isinstance(path, (str, os.PathLike)):
        raise param_error("path", owner, "a path to a file or a directory", path, TypeError)
    path = os.fspath(path)
    if os.path.isdir(path):
        names = sorted(os.listdir(path))
        for pat in patterns:
            hits = [nm for nm in names if pat(nm)]
            if hits:
                return os.path.join(path, hits[0])
        raise FileNotFoundError(f"{owner}: no matching data file in directory {path!r}")
    if not os.path.exists(path):
        raise FileNotFoundError(f"{owner}: no such file {path!r}")
    return path


def _column_order(ids):
    uniq = sorted(set(ids))
    if all(isinstance(u, str) and u.lstrip("-").isdigit() for u in uniq):
        uniq = sorted(uniq, key=int)
    return uniq


def _build(users, items, values, owner, name, n_skipped, max_items, rng) -> SparseVectorDataset:
    if not users:
        raise ValueError(f"{owner}: the file holds no usable records")
    item_order = _column_order(items)
    col = {it: j for j, it in enumerate(item_order)}
    user_order = list(dict.fromkeys(users))  # first appearance
    row = {u: i for i, u in enumerate(user_order)}
    r = np.fromiter((row[u] for u in users), dtype=np.int64, count=len(users))
    c = np.fromiter((col[it] for it in items), dtype=np.int64, count=len(items))
    v = np.asarray(values, dtype=np.float64)
    # a repeated (user, item) keeps its first record
    key = r * len(item_order) + c
    _, first = np.unique(key, return_index=True)
    n_dup = len(key) - first.shape[0]
    first.sort()
    r, c, v = r[first], c[first], v[first]
    order = np.lexsort((c, r))
    r, c, v = r[order], c[order], v[order]
    counts = np.bincount(r, minlength=len(user_order))
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    vecs = SparseVectors(indptr, c, v, len(item_order))
    n_capped = 0
    if max_items is not None:
        vecs, n_capped = cap_items(vecs, max_items, rng=rng)
    return SparseVectorDataset(vecs, np.asarray(item_order), np.asarray(user_order), name,
                               n_capped, n_skipped + n_dup)


def load_commerce(path, *, scale=5.0) -> SparseVectorDataset:
    """Load the Women's E-Commerce Clothing Reviews CSV ("Commerce", section 8.1).

    Each review row is one user holding one item, its ``Clothing ID``, with
    value ``Rating / scale`` (ratings 1-5, so values in ``{0.2, ..., 1}``).

    Parameters
    ----------
    path : str or PathLike
        The CSV (plain or gzip) or a directory holding it.
    scale : float
        Divisor of the rating (paper: 5).

    Returns
    -------
    SparseVectorDataset
        ``user_ids`` are the row numbers of the file.
    """
    owner = "load_commerce"
    scale = check_float(scale, "scale", owner, low=0.0)
    fname = _resolve_file(path, owner, [lambda s: "clothing" in s.lower() and ".csv" in s.lower(),
                                        lambda s: ".csv" in s.lower()])
    users, items, values, skipped = [], [], [], 0
    with _open_text(fname) as fh:
        reader = csv.reader(fh)
        header = next(reader)
        try:
            ci, ri = header.index("Clothing ID"), header.index("Rating")
        except ValueError:
            raise ValueError(f"{owner}: {fname!r} has no 'Clothing ID' and 'Rating' columns "
                             f"(header {header!r})") from None
        for k, rec in enumerate(reader):
            try:
                item, rating = rec[ci].strip(), float(rec[ri])
            except (IndexError, ValueError):
                skipped += 1
                continue
            if not item or not (0 < rating <= scale):
                skipped += 1
                continue
            users.append(str(k))
            items.append(item)
            values.append(rating / scale)
    return _build(users, items, values, owner, "commerce", skipped, None, None)


def load_clothing_fit(path, *, max_items=2, rng=None) -> SparseVectorDataset:
    """Load Clothing Fit JSON lines ("Clothing", section 8.1).

    Value 1 for ``fit == 'fit'``, 0 for ``'small'`` or ``'large'``. Users with
    more than ``max_items`` items keep ``max_items`` of them, drawn uniformly
    with ``rng`` (the paper keeps two).

    Parameters
    ----------
    path : str or PathLike
        A JSON-lines file (plain or gzip), or a directory; in a directory the
        RentTheRunway file is preferred (the paper's ``n = 105,508`` users),
        then ModCloth.
    max_items : int or None
        ``None`` keeps every item.
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    SparseVectorDataset
    """
    owner = "load_clothing_fit"
    if max_items is not None:
        max_items = check_int(max_items, "max_items", owner, low=1)
    fname = _resolve_file(path, owner, [lambda s: "renttherunway" in s.lower(),
                                        lambda s: "modcloth" in s.lower(),
                                        lambda s: ".json" in s.lower()])
    users, items, values, skipped = [], [], [], 0
    with _open_text(fname) as fh:
        for line in fh:
            line = line.strip()
            if not line:
                continue
            try:
                rec = json.loads(line)
                u, it, fit = rec["user_id"], rec["item_id"], rec["fit"]
            except (ValueError, KeyError, TypeError):
                skipped += 1
                continue
            if fit not in ("fit", "small", "large") or u in (None, "") or it in (None, ""):
                skipped += 1
                continue
            users.append(str(u))
            items.append(str(it))
            values.append(1.0 if fit == "fit" else 0.0)
    gen = as_generator(rng, owner, purpose="data")
    return _build(users, items, values, owner, "clothing", skipped, max_items, gen)


# ------------------------------------------------- Amazon and MovieLens ratings
def _ordered_ids(ids: np.ndarray):
    """Distinct ids in column order and each record's column (numeric order when
    every id is a string of digits, as :func:`_column_order`)."""
    uniq, inv = np.unique(ids, return_inverse=True)
    if uniq.dtype.kind == "U" and uniq.size and bool(np.char.isdigit(uniq).all()):
        order = np.array(sorted(range(uniq.size), key=lambda k: (int(uniq[k]), uniq[k])),
                         dtype=np.int64)
        rank = np.empty(order.size, dtype=np.int64)
        rank[order] = np.arange(order.size)
        return uniq[order], rank[inv]
    return uniq, inv.astype(np.int64)


def _build_arrays(users, items, values, owner, name, n_skipped, max_items, top_items,
                  rng) -> SparseVectorDataset:
    """Vectorized :func:`_build` for large rating files, plus the ``top_items`` filter.

    Rows are users in order of first appearance, columns the distinct items in
    id order; a repeated ``(user, item)`` keeps its first record.
    """
    if users.shape[0] == 0:
        raise ValueError(f"{owner}: the file holds no usable records")
    item_ids, c = _ordered_ids(items)
    v = np.asarray(values, dtype=np.float64)
    u_uniq, u_first, u_inv = np.unique(users, return_index=True, return_inverse=True)
    # a repeated (user, item) keeps its first record
    key = u_inv.astype(np.int64) * item_ids.shape[0] + c
    _, first = np.unique(key, return_index=True)
    n_dup = key.shape[0] - first.shape[0]
    first.sort()
    u_inv, c, v = u_inv[first], c[first], v[first]
    if top_items is not None and top_items < item_ids.shape[0]:
        holders = np.bincount(c, minlength=item_ids.shape[0])
        keep_items = np.sort(np.lexsort((np.arange(holders.shape[0]), -holders))[:top_items])
        remap = np.full(item_ids.shape[0], -1, dtype=np.int64)
        remap[keep_items] = np.arange(keep_items.shape[0])
        c = remap[c]
        kept = c >= 0
        u_inv, c, v = u_inv[kept], c[kept], v[kept]
        item_ids = item_ids[keep_items]
        if c.shape[0] == 0:
            raise ValueError(f"{owner}: no records left after keeping the top {top_items} items")
    # users in order of first appearance; users left without items are dropped
    present = np.unique(u_inv)
    order = present[np.argsort(u_first[present], kind="stable")]
    rank = np.full(u_uniq.shape[0], -1, dtype=np.int64)
    rank[order] = np.arange(order.shape[0])
    r = rank[u_inv]
    srt = np.lexsort((c, r))
    r, c, v = r[srt], c[srt], v[srt]
    counts = np.bincount(r, minlength=order.shape[0])
    indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
    vecs = SparseVectors(indptr, c, v, int(item_ids.shape[0]))
    n_capped = 0
    if max_items is not None:
        vecs, n_capped = cap_items(vecs, max_items, rng=rng)
    return SparseVectorDataset(vecs, np.asarray(item_ids), np.asarray(u_uniq[order]), name,
                               n_capped, n_skipped + n_dup)


def _check_rating_options(owner, scale, max_items, top_items):
    scale = check_float(scale, "scale", owner, low=0.0)
    if max_items is not None:
        max_items = check_int(max_items, "max_items", owner, low=1)
    if top_items is not None:
        top_items = check_int(top_items, "top_items", owner, low=1)
    return scale, max_items, top_items


def load_amazon_ratings(path, *, max_items=2, scale=5.0, top_items=None,
                        rng=None) -> SparseVectorDataset:
    """Load Amazon product ratings ("Amazon", paper 001 section 8.1).

    The common CSV of the Amazon review data (McAuley et al.), one rating per
    line, ``userId,productId,rating,timestamp`` without header (a header line
    is skipped when its rating field is not a number). Each user holds the
    products it rated, with value ``rating / scale`` (ratings 1-5).

    Parameters
    ----------
    path : str or PathLike
        The CSV (plain or gzip), or a directory holding one (``ratings*.csv``
        preferred).
    max_items : int or None
        Users with more items keep ``max_items`` of them, drawn uniformly with
        ``rng`` (the paper keeps two). ``None`` keeps every item.
    scale : float
        Divisor of the rating (paper: 5).
    top_items : int or None
        Keep only the ``top_items`` products rated by the most users (ties to
        the smaller id) and drop users left without items; applied before
        ``max_items``. Not in the paper: its Amazon file has about 250,000
        products, and every sketch-based server costs ``O(n d)``.
    rng : None, int, SeedSequence or Generator
        Draws the kept items of users above ``max_items``.

    Returns
    -------
    SparseVectorDataset
        Rows in order of first appearance, columns in product-id order.

    Notes
    -----
    Section 8.1 gives ``n = 1,210,271`` users, which matches the Beauty
    category file ``ratings_Beauty.csv`` (2,023,070 ratings); the loader
    reads any category. Ratings outside ``(0, scale]`` and malformed lines
    are skipped and counted (``n_skipped``); a repeated ``(user, product)``
    keeps its first rating.
    """
    owner = "load_amazon_ratings"
    scale, max_items, top_items = _check_rating_options(owner, scale, max_items, top_items)
    fname = _resolve_file(path, owner, [lambda s: s.lower().startswith("ratings") and ".csv" in s.lower(),
                                        lambda s: ".csv" in s.lower()])
    users, items, values, skipped = [], [], [], 0
    with _open_text(fname) as fh:
        for k, rec in enumerate(csv.reader(fh)):
            try:
                u, it, rating = rec[0].strip(), rec[1].strip(), float(rec[2])
            except (IndexError, ValueError):
                if k > 0:
                    skipped += 1
                continue  # a header line, or a malformed one
            if not u or not it or not (0 < rating <= scale):
                skipped += 1
                continue
            users.append(u)
            items.append(it)
            values.append(rating / scale)
    gen = as_generator(rng, owner, purpose="data")
    return _build_arrays(np.asarray(users, dtype=str), np.asarray(items, dtype=str),
                         np.asarray(values), owner, "amazon", skipped, max_items, top_items, gen)


def load_movielens_ratings(path, *, max_items=100, scale=5.0, top_items=None,
                           rng=None) -> SparseVectorDataset:
    """Load MovieLens ratings as sparse vectors ("Movie", paper 001 section 8.1).

    Each user holds the movies it rated, with value ``rating / scale``
    (ratings 0.5-5 in the CSV releases, 1-5 in MovieLens 1M).

    Parameters
    ----------
    path : str or PathLike
        ``ratings.csv[.gz]`` of a CSV release (latest-small, 20M, 25M:
        ``userId,movieId,rating,timestamp`` with header), ``ratings.dat`` of
        MovieLens 1M (``UserID::MovieID::Rating::Timestamp``), or a folder
        holding one.
    max_items : int or None
        Users with more ratings keep ``max_items`` of them, drawn uniformly
        with ``rng`` (paper: 100). ``None`` keeps every rating.
    scale : float
        Divisor of the rating (paper: 5).
    top_items : int or None
        Keep only the ``top_items`` movies rated by the most users, as
        :func:`load_amazon_ratings` (not in the paper).
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    SparseVectorDataset
        Rows in order of first appearance, columns in movie-id order.

    Notes
    -----
    Section 8.1's ``n = 138,493`` users is MovieLens 20M.
    """
    from .._datafiles import (
        MOVIELENS_1M_URL, MOVIELENS_100K_FILES, MOVIELENS_LATEST_URL, _find, _read_movielens,
    )

    owner = "load_movielens_ratings"
    scale, max_items, top_items = _check_rating_options(owner, scale, max_items, top_items)
    files = _find(path, ["ratings.csv", "ratings.csv.gz", "ratings.dat", "ratings.dat.gz",
                         "ml-*/ratings.csv", "ml-*/ratings.csv.gz", "ml-*/ratings.dat",
                         "ml-*/ratings.dat.gz", *MOVIELENS_100K_FILES],
                  "MovieLens",
                  "'ratings.csv[.gz]' of MovieLens 20M, 25M, 32M or latest, 'ratings.dat' of "
                  "MovieLens 1M or 10M, or 'u.data' of MovieLens 100K",
                  f"{MOVIELENS_LATEST_URL} and {MOVIELENS_1M_URL}")
    users, movies, ratings = _read_movielens(files[:1])
    ok = (ratings > 0) & (ratings <= scale)
    gen = as_generator(rng, owner, purpose="data")
    return _build_arrays(users[ok], movies[ok], ratings[ok] / scale, owner, "movielens",
                         int((~ok).sum()), max_items, top_items, gen)
