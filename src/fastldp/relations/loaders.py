"""Real relation datasets: loaders that read a user-given path and the section 7.1 preprocessing.

Nothing is downloaded: every loader reads the files from ``path`` (a file, or
a folder that holds it) and raises :class:`FileNotFoundError` naming the file
it expects and where that file is published.

==========  ============================================  ===================  =========
dataset     file(s)                                       rows (``d1``)        columns
==========  ============================================  ===================  =========
MovieLens   100K ``u.data`` (tabs), 1M or 10M             5 rating levels      movies
            ``ratings.dat`` (``::``-separated), or
            ``ratings.csv[.gz]`` (20M, 25M, 32M, latest)
Foursquare  TSMC2014 ``dataset_TSMC2014_NYC.txt`` /       2 cities (NYC, TKY)  venues
            ``_TKY.txt`` (tab-separated, latin-1, no
            header) or their CSV re-export with header,
            ``.gz`` too
Gowalla     SNAP ``loc-gowalla_totalCheckins.txt[.gz]``   7 UTC weekdays       locations
            (tab-separated)                               (Mon = 0)
==========  ============================================  ===================  =========

Preprocessing (:func:`relation_population`, paper 000 section 7.1, Table 3):

1. holders are the distinct user ids; with ``max_holders`` a public uniform
   subset is kept: the holders, sorted by id, are permuted by
   ``numpy.random.default_rng(holder_seed).permutation`` and the first
   ``max_holders`` are used (Table 3's Gowalla row uses ``n = 32,000``);
2. duplicate holder relations ``(holder, row, item)`` are removed;
3. a public top-frequency dictionary: the ``d2 - 1`` items held by the most
   distinct holders (ties to the smaller item id) get columns ``0 .. d2-2``
   in that order, and every other item maps to the last, "other", column;
   relations that collapse onto the same ``(row, other)`` pair are merged;
4. the public min-hash cap: a holder with more than ``k`` pairs keeps the
   ``k`` of smallest min-hash word of ``(minhash_seed, holder id, pair)``
   (stream 3 of the counter-based hash, the rule of
   ``JPRS(cap_policy="minhash")`` with the raw holder id as identity);
5. the target is the exact mean of the stored sets, and ``approximation``
   its best ``s``-sparse approximation; ``metadata["approximation_tail"]``
   is ``||M_pop - M_pop^(s)||_F^2``.

The Table 3 domains are ``d2 = 512, s = 128`` and the compact
``d2 = 128, s = 32``; ``s`` defaults to ``d2 // 4``, which gives both.
Row conventions:

* MovieLens: a rating ``r`` is level ``ceil(r)``, so the half-star ratings
  of the latest releases round up (0.5 -> 1, ..., 4.5 -> 5); row = level - 1.
* Foursquare: row 0 is New York, row 1 Tokyo. A file's city is read from
  its name (``NYC`` / ``TKY``); otherwise each check-in's city is the sign
  of its ``timezoneOffset`` (Tokyo is +540 minutes, New York -240/-300).
  A single-city file fills only its own row; the domain stays ``2 x d2``.
  The two TSMC2014 files number users independently; ``holder_key="user"``
  (default) identifies holders by ``userId`` across both files, which gives
  Table 3's 2,293 holders, and ``"city-user"`` keeps them apart.
* Gowalla: the weekday of the UTC check-in time, Monday = 0.

References
----------
Paper 000, section 7.1 and Table 3. Harper & Konstan, ACM TiiS 2015
(MovieLens). Yang, Zhang, Zheng, Yu, IEEE Trans. SMC: Systems 45(1), 2015
(Foursquare). Cho, Myers, Leskovec, KDD 2011 (Gowalla).
"""

from __future__ import annotations

import numbers
from pathlib import Path

import numpy as np

from .._kernels._hash import MINHASH_STREAM, hash_words
from .._datafiles import (
    MOVIELENS_1M_URL,
    MOVIELENS_100K_FILES,
    MOVIELENS_LATEST_URL,
    _find,
    _first_line,
    _loadtxt,
    _read_movielens,
)
from .._validation import check_choice, check_int, param_error
from .populations import Population, population_from_csr

__all__ = [
    "REAL_DATASETS",
    "load_movielens",
    "load_foursquare",
    "load_gowalla",
    "relation_population",
]

REAL_DATASETS = ("movielens", "foursquare", "gowalla")

FOURSQUARE_URL = "https://sites.google.com/site/yangdingqi/home/foursquare-dataset"
GOWALLA_URL = "https://snap.stanford.edu/data/loc-gowalla.html"

MOVIELENS_ROWS = ("1", "2", "3", "4", "5")
FOURSQUARE_ROWS = ("NYC", "TKY")
GOWALLA_ROWS = ("Mon", "Tue", "Wed", "Thu", "Fri", "Sat", "Sun")

#: Table 3 uses n = 32,000 of Gowalla's 107,092 holders.
GOWALLA_MAX_HOLDERS = 32_000

_UINT64_MAX = 2**64 - 1


# ---------------------------------------------------------------- preprocessing


def _check_domain(d2, s, k, d1, owner):
    d2 = check_int(d2, "d2", owner, low=2)
    s = d2 // 4 if s is None else check_int(s, "s", owner, low=1, high=d1 * d2)
    k = check_int(k, "k", owner, low=1)
    return d2, max(s, 1), k


def _check_seed(value, name, owner):
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Integral):
        raise param_error(name, owner, f"an int in [0, {_UINT64_MAX}]", value, TypeError)
    if not 0 <= int(value) <= _UINT64_MAX:
        raise param_error(name, owner, f"an int in [0, {_UINT64_MAX}]", value)
    return int(value)


def _minhash_keep(h, pairs, indptr, identities, k, seed) -> np.ndarray:
    """Mask of the relations each holder keeps under the public min-hash cap.

    ``(h, pairs)`` are sorted by holder then pair. Vectorized form of
    ``fastldp.relations.relation_sets._minhash_cap``: per holder, order by
    (min-hash word, pair) and keep the first ``k``.
    """
    words = hash_words(seed, identities[h], pairs, MINHASH_STREAM)
    order = np.lexsort((pairs, words, h))
    rank = np.arange(order.shape[0]) - indptr[h[order]]
    keep = np.zeros(pairs.shape[0], dtype=bool)
    keep[order[rank < k]] = True
    return keep


def _item_labels(values) -> list:
    if values.dtype.kind == "S":
        return [v.decode("latin-1") for v in values]
    return [v.item() for v in values]


def relation_population(
    holders, rows, items, *, d1: int, d2: int = 512, s=None, k: int = 8, name: str,
    minhash_seed: int = 0, max_holders=None, holder_seed: int = 0, row_labels=None,
    metadata=None,
) -> Population:
    """Apply the section 7.1 preprocessing to raw events and return the population.

    Parameters
    ----------
    holders : int array, shape (m,)
        Raw holder id of each event (non-negative; used as the min-hash identity).
    rows : int array, shape (m,)
        Row of each event, in ``[0, d1)``.
    items : array, shape (m,)
        Raw item of each event (ints or byte strings); the dictionary maps
        them to columns.
    d1, d2 : int
        Domain; ``d2 >= 2`` (the last column is "other").
    s : int or None
        Nominal sparsity, default ``d2 // 4``.
    k : int
        Public cap on ``|E_i|``.
    name : str
        Population name (part of the content hash).
    minhash_seed : int
        Public seed of the min-hash cap.
    max_holders : int or None
        Keep this many holders, chosen by the public rule of the module
        docstring; None keeps all.
    holder_seed : int
        Seed of that rule.
    row_labels : sequence of str, optional
    metadata : dict, optional
        Merged into the returned metadata (e.g. ``raw_events``, ``source``).

    Returns
    -------
    Population
        With metadata ``raw_events``, ``holders``, ``used_n``, ``domain``,
        ``s``, ``k``, ``relations_deduplicated``, ``relations_in_domain``,
        ``relations_stored``, ``n_capped``, ``mean_set_size``,
        ``other_mass``, ``approximation_tail``, ``content_hash``,
        ``columns`` (the raw item of each dictionary column) and the seeds.
    """
    owner = "relation_population"
    d1 = check_int(d1, "d1", owner, low=1)
    d2, s, k = _check_domain(d2, s, k, d1, owner)
    minhash_seed = _check_seed(minhash_seed, "minhash_seed", owner)
    holder_seed = _check_seed(holder_seed, "holder_seed", owner)
    if max_holders is not None:
        max_holders = check_int(max_holders, "max_holders", owner, low=1)
    holders = np.asarray(holders)
    rows = np.asarray(rows, dtype=np.int64)
    items = np.asarray(items)
    if not (holders.shape == rows.shape == items.shape and holders.ndim == 1):
        raise ValueError(
            f"The 'holders', 'rows' and 'items' parameters of {owner} must be 1-d arrays of one "
            f"length. Got shapes {holders.shape}, {rows.shape} and {items.shape} instead."
        )
    if holders.size == 0:
        raise ValueError(f"{owner}: no events to build a population from ({name}).")
    if holders.dtype.kind not in "iu" or holders.min() < 0:
        raise param_error("holders", owner, "an array of non-negative integer ids", holders[:5])
    if rows.min() < 0 or rows.max() >= d1:
        raise param_error("rows", owner, f"an array of ints in [0, {d1})",
                          int(rows[(rows < 0) | (rows >= d1)][0]))
    raw_events = int(holders.shape[0])

    # 1. holders, and the public subset
    holder_ids, h = np.unique(holders, return_inverse=True)
    n_holders = holder_ids.shape[0]
    if max_holders is not None and max_holders < n_holders:
        chosen = np.sort(np.random.default_rng(holder_seed).permutation(n_holders)[:max_holders])
        new_code = np.full(n_holders, -1, dtype=np.int64)
        new_code[chosen] = np.arange(chosen.shape[0])
        h = new_code[h]
        used = h >= 0
        h, rows, items = h[used], rows[used], items[used]
        holder_ids = holder_ids[chosen]
    n = holder_ids.shape[0]

    # 2. duplicate holder relations
    item_ids, item = np.unique(items, return_inverse=True)
    n_items = item_ids.shape[0]
    rel = np.unique((h * d1 + rows) * n_items + item)
    rel_item = rel % n_items
    rel_row = (rel // n_items) % d1
    rel_h = rel // (n_items * d1)

    # 3. the public top-frequency dictionary (frequency = distinct holders)
    freq = np.bincount(np.unique(rel_h * n_items + rel_item) % n_items, minlength=n_items)
    top = np.lexsort((np.arange(n_items), -freq))[: d2 - 1]
    column = np.full(n_items, d2 - 1, dtype=np.int64)
    column[top] = np.arange(top.shape[0])
    p = d1 * d2
    held = np.unique(rel_h * p + rel_row * d2 + column[rel_item])
    h, pairs = held // p, held % p

    # 4. the public min-hash cap
    sizes = np.bincount(h, minlength=n)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    keep = _minhash_keep(h, pairs, indptr, holder_ids.astype(np.uint64), k, minhash_seed)
    pairs = pairs[keep]
    np.cumsum(np.minimum(sizes, k), out=indptr[1:])

    # 5. the exact stored target and its s-sparse approximation
    pop = population_from_csr(indptr, pairs, shape=(d1, d2), k=k, s=s, name=name)
    meta = {
        "dataset": name,
        "raw_events": raw_events,
        "holders": int(n_holders),
        "used_n": int(n),
        "domain": [d1, d2],
        "s": s,
        "k": k,
        "row_labels": list(row_labels) if row_labels is not None else None,
        "items": int(n_items),
        "relations_deduplicated": int(rel.shape[0]),
        "relations_in_domain": int(held.shape[0]),
        "relations_stored": int(pairs.shape[0]),
        "n_capped": int(np.count_nonzero(sizes > k)),
        "mean_set_size": float(pairs.shape[0] / n),
        "other_mass": float(pop.target[:, d2 - 1].sum()),
        "approximation_tail": pop.approximation_tail,
        "content_hash": pop.content_hash,
        "minhash_seed": minhash_seed,
        "max_holders": max_holders,
        "holder_seed": holder_seed,
        "columns": _item_labels(item_ids[top]),
    }
    meta.update(metadata or {})
    pop.metadata.update(meta)
    return pop


# ---------------------------------------------------------------- MovieLens


def load_movielens(
    path, *, d2: int = 512, s=None, k: int = 8, minhash_seed: int = 0, max_holders=None,
    holder_seed: int = 0,
) -> Population:
    """Load MovieLens ratings as a ``5 x d2`` (rating level x movie) population.

    Parameters
    ----------
    path : str or Path
        The ratings file of any GroupLens release, or a folder holding one:
        ``u.data`` of MovieLens 100K (tab-separated), ``ratings.dat`` of 1M or
        10M (``::``-separated), ``ratings.csv`` of 20M, 25M, 32M or latest
        (each possibly gzipped). Half-star ratings round up.
    d2, s, k, minhash_seed, max_holders, holder_seed
        See :func:`relation_population`; Table 3 uses ``d2 = 512`` (``s = 128``)
        and ``d2 = 128`` (``s = 32``), ``k = 8``, all 6,040 holders.

    Returns
    -------
    Population
        Rows are rating levels 1-5 (half stars round up).

    Raises
    ------
    FileNotFoundError
        When no ratings file is at ``path``.
    """
    owner = "load_movielens"
    files = _find(
        path, ["ratings.dat", "ratings.dat.gz", "ratings.csv", "ratings.csv.gz", "ml-1m/ratings.dat",
               "ml-*/ratings.dat", "ml-*/ratings.dat.gz", "ml-*/ratings.csv", "ml-*/ratings.csv.gz",
               *MOVIELENS_100K_FILES],
        "MovieLens",
        "'ratings.dat' of MovieLens 1M or 10M, 'ratings.csv[.gz]' of MovieLens 20M, 25M, 32M "
        "or latest, or 'u.data' of MovieLens 100K",
        f"{MOVIELENS_1M_URL} and {MOVIELENS_LATEST_URL}",
    )
    users, movies, ratings = _read_movielens(files)
    bad = ~((ratings > 0) & (ratings <= 5))
    if bad.any():
        raise ValueError(f"{owner}: ratings must lie in (0, 5]; got {ratings[bad][0]!r} in {files}.")
    rows = np.ceil(ratings).astype(np.int64) - 1
    return relation_population(
        users, rows, movies, d1=5, d2=d2, s=s, k=k, name="movielens", minhash_seed=minhash_seed,
        max_holders=max_holders, holder_seed=holder_seed, row_labels=MOVIELENS_ROWS,
        metadata={"source": [str(f) for f in files]},
    )


# ---------------------------------------------------------------- Foursquare

_FOURSQUARE_FIELDS = ("userId", "venueId", "venueCategoryId", "venueCategory", "latitude",
                      "longitude", "timezoneOffset", "utcTimestamp")


def _read_foursquare_file(f: Path):
    first = _first_line(f)
    header = first.startswith(("userId", '"userId"'))
    delimiter = "\t" if "\t" in first else ","
    if header:
        names = [x.strip().strip('"') for x in first.split(delimiter)]
        try:
            cols = tuple(names.index(c) for c in ("userId", "venueId", "timezoneOffset"))
        except ValueError:
            raise ValueError(
                f"Could not read '{f}' as Foursquare TSMC2014: its header {names} lacks one of "
                f"userId, venueId, timezoneOffset."
            ) from None
    else:
        cols = (0, 1, 6)
    arr = _loadtxt(
        f, "Foursquare TSMC2014 check-ins (" + ", ".join(_FOURSQUARE_FIELDS) + ")",
        delimiter=delimiter, skiprows=int(header), usecols=cols,
        quotechar='"' if delimiter == "," else None,
        dtype=[("u", "i8"), ("v", "S64"), ("tz", "i8")],
    )
    upper = f.name.upper()
    if "NYC" in upper and "TKY" not in upper:
        city = np.zeros(arr.shape[0], dtype=np.int64)
    elif "TKY" in upper and "NYC" not in upper:
        city = np.ones(arr.shape[0], dtype=np.int64)
    else:
        city = (arr["tz"] > 0).astype(np.int64)
    return arr["u"], arr["v"], city


def load_foursquare(
    path, *, d2: int = 512, s=None, k: int = 8, holder_key: str = "user", minhash_seed: int = 0,
    max_holders=None, holder_seed: int = 0,
) -> Population:
    """Load Foursquare TSMC2014 check-ins as a ``2 x d2`` (city x venue) population.

    Parameters
    ----------
    path : str, Path or sequence of them
        ``dataset_TSMC2014_NYC.txt`` and/or ``dataset_TSMC2014_TKY.txt``
        (tab-separated, latin-1, no header), their CSV re-export with a header
        line, either gzipped; or a folder: every ``dataset_TSMC2014_*`` file in
        it is read.
    holder_key : {"user", "city-user"}
        ``"user"`` merges equal ``userId`` across cities (Table 3's 2,293
        holders); ``"city-user"`` treats each city's users as distinct.
    d2, s, k, minhash_seed, max_holders, holder_seed
        See :func:`relation_population`.

    Returns
    -------
    Population
        Row 0 is New York, row 1 Tokyo (see the module docstring).

    Raises
    ------
    FileNotFoundError
        When no check-in file is at ``path``.
    """
    owner = "load_foursquare"
    check_choice(holder_key, "holder_key", owner, ("user", "city-user"))
    files = _find(
        path, ["dataset_TSMC2014_*.txt", "dataset_TSMC2014_*.txt.gz", "dataset_TSMC2014_*.csv",
               "dataset_TSMC2014_*.csv.gz"],
        "Foursquare TSMC2014",
        "'dataset_TSMC2014_NYC.txt' and 'dataset_TSMC2014_TKY.txt' (dataset_tsmc2014.zip) "
        "or their CSV re-export",
        FOURSQUARE_URL, every=True,
    )
    parts = [_read_foursquare_file(f) for f in files]
    users = np.concatenate([u for u, _, _ in parts])
    venues = np.concatenate([v for _, v, _ in parts])
    city = np.concatenate([c for _, _, c in parts])
    holders = users if holder_key == "user" else users * 2 + city
    return relation_population(
        holders, city, venues, d1=2, d2=d2, s=s, k=k, name="foursquare",
        minhash_seed=minhash_seed, max_holders=max_holders, holder_seed=holder_seed,
        row_labels=FOURSQUARE_ROWS,
        metadata={"source": [str(f) for f in files], "holder_key": holder_key,
                  "events_per_city": [int(np.count_nonzero(city == c)) for c in (0, 1)]},
    )


# ---------------------------------------------------------------- Gowalla

def load_gowalla(
    path, *, d2: int = 512, s=None, k: int = 8, minhash_seed: int = 0,
    max_holders=GOWALLA_MAX_HOLDERS, holder_seed: int = 0,
) -> Population:
    """Load SNAP Gowalla check-ins as a ``7 x d2`` (weekday x location) population.

    Parameters
    ----------
    path : str or Path
        ``loc-gowalla_totalCheckins.txt.gz`` (or ``.txt``, or any file of
        that format: user, ISO-8601 UTC time, latitude, longitude, location
        id, tab-separated), or a folder holding a ``loc-gowalla_totalCheckins*``
        file.
    max_holders : int or None
        Default 32,000 as in Table 3 (a public uniform subset, see the module
        docstring); None keeps every holder.
    d2, s, k, minhash_seed, holder_seed
        See :func:`relation_population`.

    Returns
    -------
    Population
        Rows are the UTC weekdays, Monday = 0.

    Raises
    ------
    FileNotFoundError
        When no check-in file is at ``path``.
    """
    files = _find(
        path, ["loc-gowalla_totalCheckins.txt.gz", "loc-gowalla_totalCheckins.txt",
               "loc-gowalla_totalCheckins*.txt*"],
        "Gowalla", "'loc-gowalla_totalCheckins.txt.gz'", GOWALLA_URL,
    )
    users, days, locations = [], [], []
    for f in files:
        arr = _loadtxt(f, "SNAP Gowalla check-ins (user, time, latitude, longitude, location)",
                       delimiter="\t", usecols=(0, 1, 4),
                       dtype=[("u", "i8"), ("t", "S10"), ("l", "i8")])
        try:
            day = arr["t"].astype("datetime64[D]").astype(np.int64)
        except ValueError as err:
            raise ValueError(f"Could not read '{f}' as SNAP Gowalla check-ins: {err}") from None
        users.append(arr["u"])
        days.append(day)
        locations.append(arr["l"])
    weekday = (np.concatenate(days) + 3) % 7  # 1970-01-01 was a Thursday
    return relation_population(
        np.concatenate(users), weekday, np.concatenate(locations), d1=7, d2=d2, s=s, k=k,
        name="gowalla", minhash_seed=minhash_seed, max_holders=max_holders,
        holder_seed=holder_seed, row_labels=GOWALLA_ROWS,
        metadata={"source": [str(f) for f in files]},
    )
