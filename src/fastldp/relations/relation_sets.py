"""Relation sets as CSR arrays: parsing, validation and the public cap.

A relation set ``E_i`` is a set of pairs ``(row, col)`` of a ``d1 x d2``
table, encoded as ``e = row * d2 + col`` (paper 000, section 5: the public
bijection iota). Three input forms are accepted:

* a ``scipy.sparse`` matrix (any format) of shape ``(n, d1 * d2)``: identity
  ``i`` holds the pairs whose stored value in row ``i`` is non-zero; stored
  values must be 0 or 1.
* a sequence of ``n`` integer arrays of shape ``(m_i, 2)`` holding
  ``(row, col)`` pairs (``m_i`` may be 0).
* the *long format*, one line per relation, the way logs arrive: columns
  ``identity``, ``row``, ``col`` given as

  - a tuple of three 1-d integer arrays ``(identity, row, col)`` of equal
    length (a tuple of exactly three 1-d arrays is always read this way; pass
    the sequence form as a list, or with ``(0, 2)`` arrays for empty sets),
  - a table with those columns (other columns are ignored): a
    :class:`pandas.DataFrame` (or any frame with ``columns`` and
    ``frame[name]``), a :class:`pyarrow.Table` / ``RecordBatch``, a mapping
    such as a ``dict`` of arrays, or any object exporting ``__arrow_c_stream__``
    or ``__dataframe__`` (converted with pyarrow),
  - a path (``str`` or :class:`os.PathLike`) to a local Parquet file with
    those columns, read with pyarrow (``pip install fastldp[parquet]``).

  The clients are the *distinct* identities in ascending order: set ``j`` of
  the result belongs to the ``j``-th smallest identity value, and those values
  are the public identities keying the codebook
  (:attr:`RelationSets.identities`). With an explicit ``identities`` array
  instead, that array is the population and its order: every identity of the
  table must be in it, and identities without lines get empty sets.
  Identities are integers in ``[0, 2**64)``, rows in ``[0, d1)``, columns in
  ``[0, d2)``; columns must have an integer dtype (floats, NaN / missing
  values, bools and objects are refused) and a repeated
  ``(identity, row, col)`` line is an error, as a repeated pair in one
  identity's array of the sequence form. The conversion is vectorized (one
  sort of the lines), with no Python loop over identities or lines.
"""

from __future__ import annotations

import os
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Optional

import numpy as np
import scipy.sparse as sp

from .._kernels._hash import MINHASH_STREAM, hash_words
from .._random import resolve_identities
from .._validation import check_choice, check_csr_structure

__all__ = ["RelationSets", "as_relation_sets", "is_long_format", "CAP_POLICIES", "LONG_COLUMNS"]

CAP_POLICIES = ("raise", "minhash")
#: The column names of the long format, in the order of the tuple form.
LONG_COLUMNS = ("identity", "row", "col")


@dataclass(frozen=True)
class RelationSets:
    """Validated relation sets in CSR form.

    Attributes
    ----------
    indptr : int64 array, shape (n + 1,)
    pairs : int64 array
        Encoded pairs, strictly increasing within each identity.
    n_capped : int
        Identities whose sets were cut to ``k`` by the min-hash cap policy.
    identities : uint64 array, shape (n,), or None
        The public identities of the ``n`` sets, when the input named them
        (the long format: its distinct identities in ascending order, or the
        caller's ``identities``); ``None`` for the sparse and sequence forms,
        whose identities are the caller's or ``0 .. n-1``. The mechanisms'
        client methods use them when called without ``identities``.

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.JPRS(shape=(2, 3), k=2, s=1)
    >>> sets = mech.relation_sets([np.array([[0, 1], [1, 2]]), np.array([[1, 0]])])
    >>> sets.n, sets.sizes.tolist(), sets.pairs.tolist()
    (2, [2, 1], [1, 5, 3])
    """

    indptr: np.ndarray
    pairs: np.ndarray
    n_capped: int = 0
    identities: Optional[np.ndarray] = None

    @property
    def n(self) -> int:
        return self.indptr.shape[0] - 1

    @property
    def sizes(self) -> np.ndarray:
        return np.diff(self.indptr)


def _from_sparse(relations, p: int, owner: str):
    csr = sp.csr_matrix(relations)
    if csr.shape[1] != p:
        raise ValueError(
            f"The 'relations' parameter of {owner} must have {p} columns (d1 * d2). "
            f"Got a sparse matrix of shape {csr.shape} instead."
        )
    check_csr_structure(csr, p, "relations", owner)
    csr.sum_duplicates()
    data = csr.data
    if data.size and not np.all((data == 0) | (data == 1)):
        bad = data[~((data == 0) | (data == 1))][0]
        raise ValueError(
            f"The 'relations' parameter of {owner} must hold only 0/1 values "
            f"(a set has no multiplicities). Got a stored value {bad!r} instead."
        )
    csr.eliminate_zeros()
    csr.sort_indices()
    return csr.indptr.astype(np.int64), csr.indices.astype(np.int64)


def _from_sequence(relations, shape, owner: str):
    """CSR arrays from a sequence of (m_i, 2) pair arrays, at NumPy speed.

    One ``np.concatenate`` of all the arrays and vectorized checks; a list
    the fast path cannot take (a ragged or malformed item) goes through
    :func:`_from_sequence_checked`, which names the first bad identity.
    """
    d1, d2 = shape
    n = len(relations)
    if n == 0:
        return np.zeros(1, dtype=np.int64), np.empty(0, dtype=np.int64)
    try:
        flat = np.concatenate(relations, axis=0)
        sizes = np.fromiter(map(len, relations), dtype=np.int64, count=n)
    except (ValueError, TypeError):
        return _from_sequence_checked(relations, shape, owner)
    if (flat.ndim != 2 or flat.shape[1] != 2 or flat.dtype.kind not in "iu"
            or int(sizes.sum()) != flat.shape[0]):
        return _from_sequence_checked(relations, shape, owner)
    rows = flat[:, 0].astype(np.int64)
    cols = flat[:, 1].astype(np.int64)
    bad = (rows < 0) | (rows >= d1) | (cols < 0) | (cols >= d2)
    holder = np.repeat(np.arange(n, dtype=np.int64), sizes)
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"The 'relations' parameter of {owner} must hold pairs with row in [0, {d1}) and "
            f"col in [0, {d2}). Got ({rows[j]}, {cols[j]}) for identity {holder[j]} instead."
        )
    enc = rows * d2 + cols
    same = holder[1:] == holder[:-1]
    if not np.all((enc[1:] > enc[:-1]) | ~same):  # some set is unsorted or repeats a pair
        p = d1 * d2
        if n * p < 2**63:  # one integer key: identity-major, then pair
            order = np.argsort(holder * p + enc, kind="stable")
        else:
            order = np.lexsort((enc, holder))
        enc = enc[order]
        holder = holder[order]
        same = holder[1:] == holder[:-1]
    dup = (enc[1:] == enc[:-1]) & same
    if dup.any():
        j = int(np.flatnonzero(dup)[0])
        e = int(enc[j])
        raise ValueError(
            f"The 'relations' parameter of {owner} must hold each pair at most once "
            f"(a relation set). Got ({e // d2}, {e % d2}) twice for identity {holder[j]} instead."
        )
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    return indptr, enc


def _from_sequence_checked(relations, shape, owner: str):
    d1, d2 = shape
    n = len(relations)
    sizes = np.empty(n, dtype=np.int64)
    chunks = []
    for i, item in enumerate(relations):
        arr = np.asarray(item)
        if arr.size == 0:
            sizes[i] = 0
            continue
        if arr.ndim != 2 or arr.shape[1] != 2 or arr.dtype.kind not in "iu":
            raise ValueError(
                f"The 'relations' parameter of {owner} must be a sequence of integer arrays "
                f"of shape (m, 2) holding (row, col) pairs. Got {arr.dtype} array of shape "
                f"{arr.shape} for identity {i} instead."
            )
        rows = arr[:, 0].astype(np.int64)
        cols = arr[:, 1].astype(np.int64)
        bad = (rows < 0) | (rows >= d1) | (cols < 0) | (cols >= d2)
        if bad.any():
            j = int(np.flatnonzero(bad)[0])
            raise ValueError(
                f"The 'relations' parameter of {owner} must hold pairs with row in [0, {d1}) and "
                f"col in [0, {d2}). Got ({rows[j]}, {cols[j]}) for identity {i} instead."
            )
        enc = np.sort(rows * d2 + cols)
        if enc.shape[0] > 1 and np.any(enc[1:] == enc[:-1]):
            dup = int(enc[1:][enc[1:] == enc[:-1]][0])
            raise ValueError(
                f"The 'relations' parameter of {owner} must hold each pair at most once "
                f"(a relation set). Got ({dup // d2}, {dup % d2}) twice for identity {i} instead."
            )
        sizes[i] = enc.shape[0]
        chunks.append(enc)
    indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=indptr[1:])
    pairs = np.concatenate(chunks) if chunks else np.empty(0, dtype=np.int64)
    return indptr, pairs


# ---------------------------------------------------------------- long format
_PARQUET_HINT = "pip install fastldp[parquet]"


def _is_1d(item) -> bool:
    ndim = getattr(item, "ndim", None)
    if ndim is None:
        try:
            ndim = np.ndim(item)
        except (ValueError, TypeError):  # ragged: not a column
            return False
    return ndim == 1


def _is_table(obj) -> bool:
    if isinstance(obj, (np.ndarray, RelationSets)) or sp.issparse(obj):
        return False
    if isinstance(obj, Mapping):
        return True
    if hasattr(obj, "column_names") and hasattr(obj, "column"):  # pyarrow Table / RecordBatch
        return True
    if hasattr(obj, "columns") and hasattr(obj, "__getitem__"):  # pandas / polars frames
        return True
    return hasattr(obj, "__arrow_c_stream__") or hasattr(obj, "__dataframe__")


def is_long_format(relations) -> bool:
    """True when ``relations`` is in the long format (see the module docstring).

    A path, a table or column mapping, or a tuple of exactly three 1-d arrays.
    """
    if isinstance(relations, (str, os.PathLike)):
        return True
    if isinstance(relations, tuple):
        return len(relations) == 3 and all(_is_1d(item) for item in relations)
    return _is_table(relations)


def _import_pyarrow(what: str):
    try:
        import pyarrow
    except ImportError as exc:
        raise ImportError(
            f"{what} needs the optional dependency pyarrow: {_PARQUET_HINT}"
        ) from exc
    return pyarrow


def _read_parquet(path, owner: str):
    fspath = os.fspath(path)
    if not os.path.isfile(fspath):
        raise ValueError(
            f"The 'relations' parameter of {owner} must be a sparse matrix, a sequence of "
            f"(m, 2) pair arrays, a long-format table or the path of an existing Parquet file. "
            f"Got {path!r}, which is not a file, instead."
        )
    _import_pyarrow("Reading relations from a Parquet file")
    import pyarrow.parquet as pq

    try:
        names = pq.read_schema(fspath).names
    except (OSError, ValueError) as exc:  # pyarrow.ArrowInvalid is a ValueError
        raise ValueError(
            f"The 'relations' parameter of {owner} must be the path of a Parquet file with "
            f"columns {LONG_COLUMNS}. Got {path!r}, which pyarrow cannot read ({exc}), instead."
        ) from exc
    _check_names(names, owner)
    return pq.read_table(fspath, columns=list(LONG_COLUMNS))


def _check_names(names, owner: str) -> None:
    names = [str(c) for c in names]
    missing = [c for c in LONG_COLUMNS if c not in names]
    if missing:
        shown = names if len(names) <= 12 else names[:12] + ["..."]
        raise ValueError(
            f"The 'relations' parameter of {owner} must have columns 'identity', 'row' and "
            f"'col' in the long format. Got columns {shown} (no {missing[0]!r}) instead."
        )


def _column_values(col) -> np.ndarray:
    """A NumPy view of one column (pandas, pyarrow, polars, lists, arrays)."""
    if isinstance(col, np.ndarray):
        return col
    if type(col).__module__.split(".")[0] != "pyarrow":  # pyarrow: __array__ handles nulls
        to_numpy = getattr(col, "to_numpy", None)
        if to_numpy is not None:
            return np.asarray(to_numpy())
    return np.asarray(col)


def _long_columns(relations, owner: str):
    """The raw ``identity``, ``row``, ``col`` columns of a long-format input."""
    if isinstance(relations, (str, os.PathLike)):
        relations = _read_parquet(relations, owner)
    cols: list
    if isinstance(relations, tuple):
        cols = list(relations)
    elif isinstance(relations, Mapping):
        _check_names(list(relations.keys()), owner)
        cols = [relations[c] for c in LONG_COLUMNS]
    elif hasattr(relations, "column_names") and hasattr(relations, "column"):
        _check_names(relations.column_names, owner)
        cols = [relations.column(c) for c in LONG_COLUMNS]
    elif hasattr(relations, "columns") and hasattr(relations, "__getitem__"):
        _check_names(list(relations.columns), owner)
        cols = [relations[c] for c in LONG_COLUMNS]
    else:  # the Arrow PyCapsule stream or the dataframe interchange protocol
        pa = _import_pyarrow("Reading relations from a dataframe-protocol object")
        if hasattr(relations, "__arrow_c_stream__"):
            table = pa.table(relations)
        else:
            from pyarrow.interchange import from_dataframe

            table = from_dataframe(relations)
        _check_names(table.column_names, owner)
        cols = [table.column(c) for c in LONG_COLUMNS]
    return [_column_values(c) for c in cols]


def _integer_column(arr: np.ndarray, name: str, owner: str) -> np.ndarray:
    """Check one long-format column's dtype; return it (empty columns as int64)."""
    expected = f"a 1-d integer {name!r} column (int or uint dtype, no missing values)"
    if arr.ndim != 1:
        raise ValueError(
            f"The 'relations' parameter of {owner} must have {expected}. "
            f"Got an array of shape {arr.shape} instead."
        )
    if arr.size == 0:
        return np.empty(0, dtype=np.uint64 if name == "identity" else np.int64)
    kind = arr.dtype.kind
    if kind in "iu":
        return arr
    if kind == "f":
        nan = np.isnan(arr)
        if nan.any():
            j = int(np.flatnonzero(nan)[0])
            raise ValueError(
                f"The 'relations' parameter of {owner} must have {expected}. "
                f"Got a missing value (NaN) at line {j} instead."
            )
        frac = arr != np.floor(arr)
        if frac.any():
            j = int(np.flatnonzero(frac)[0])
            raise ValueError(
                f"The 'relations' parameter of {owner} must have {expected}. "
                f"Got {float(arr[j])!r} at line {j} instead."
            )
        raise TypeError(
            f"The 'relations' parameter of {owner} must have {expected}. Got a {arr.dtype} "
            f"column instead (cast it to an integer dtype, e.g. astype('int64'))."
        )
    raise TypeError(
        f"The 'relations' parameter of {owner} must have {expected}. "
        f"Got a {arr.dtype} column instead."
    )


def _unsigned(arr: np.ndarray) -> np.ndarray:
    """``arr`` (integer, native byte order) viewed as unsigned: negatives become huge."""
    if arr.dtype.kind == "u":
        return arr
    return arr.view(np.dtype(f"u{arr.dtype.itemsize}"))


def _population(identities, owner: str):
    """The caller's identities as uint64 (:func:`fastldp._random.resolve_identities`'
    rules), with the argsort that orders them and the sorted values."""
    arr = np.asarray(identities)
    ids = resolve_identities(identities, arr.shape[0] if arr.ndim == 1 else 0, owner)
    by_value = np.argsort(ids)
    return ids, by_value, ids[by_value]


def _from_long(relations, shape, owner: str, identities=None):
    """CSR arrays and identities from a long-format input, at NumPy speed.

    One sort of the lines by the key ``identity * p + pair`` (one uint64 key;
    identities too large for it are first replaced by their ranks, from
    ``np.unique``), run boundaries for the sets; with caller ``identities``,
    a searchsorted lookup and one vectorized gather put the sets in the
    caller's order. No Python loop over identities or lines.
    """
    d1, d2 = shape
    p = d1 * d2
    raw = _long_columns(relations, owner)
    ident, rows, cols = (_integer_column(a, c, owner) for a, c in zip(raw, LONG_COLUMNS))
    if not ident.shape[0] == rows.shape[0] == cols.shape[0]:
        raise ValueError(
            f"The 'relations' parameter of {owner} must have 'identity', 'row' and 'col' "
            f"columns of equal length. Got lengths {ident.shape[0]}, {rows.shape[0]} and "
            f"{cols.shape[0]} instead."
        )
    ident, rows, cols = (a if a.dtype.isnative else a.astype(a.dtype.newbyteorder("="))
                         for a in (ident, rows, cols))
    n_lines = ident.shape[0]
    if ident.dtype.kind == "i" and n_lines and ident.min() < 0:
        j = int(np.flatnonzero(ident < 0)[0])
        raise ValueError(
            f"The 'relations' parameter of {owner} must have identities in [0, 2**64). "
            f"Got {int(ident[j])} at line {j} instead."
        )
    bad = _unsigned(rows) >= d1  # one pass per column: a negative is a huge unsigned value
    bad |= _unsigned(cols) >= d2
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"The 'relations' parameter of {owner} must hold pairs with row in [0, {d1}) and "
            f"col in [0, {d2}). Got ({int(rows[j])}, {int(cols[j])}) for identity "
            f"{int(ident[j])} (line {j}) instead."
        )
    del bad
    ident = _unsigned(ident).astype(np.uint64, copy=False)  # identities are non-negative
    enc = rows.astype(np.int64, copy=False) * np.int64(d2)
    enc += cols.astype(np.int64, copy=False)

    values = None  # the distinct identities, when ``base`` holds their ranks
    base = ident
    if n_lines and (int(ident.max()) + 1) * p > 2**64:
        values, ranks = np.unique(ident, return_inverse=True)
        base = ranks.astype(np.uint64)
    if n_lines == 0:
        holder = np.empty(0, dtype=np.uint64)
        dup = np.empty(0, dtype=bool)
    elif (int(base.max()) + 1) * p <= 2**64:  # one uint64 key: identity-major, then pair
        key = base * np.uint64(p)
        key += enc.view(np.uint64)
        if not np.all(key[1:] > key[:-1]):  # not already sorted and duplicate-free
            key.sort()
        dup = key[1:] == key[:-1]
        holder = key // np.uint64(p)
        np.remainder(key, np.uint64(p), out=key)
        enc = key.view(np.int64)
    else:  # many distinct identities and p near 2**62: a two-key sort
        order = np.lexsort((enc, base))
        holder, enc = base[order], enc[order]
        dup = (enc[1:] == enc[:-1]) & (holder[1:] == holder[:-1])
    if dup.any():
        j = int(np.flatnonzero(dup)[0])
        e = int(enc[j])
        who = int(holder[j]) if values is None else int(values[holder[j]])
        raise ValueError(
            f"The 'relations' parameter of {owner} must hold each pair at most once "
            f"(a relation set). Got ({e // d2}, {e % d2}) twice for identity {who} "
            f"instead (drop repeated lines first, e.g. DataFrame.drop_duplicates())."
        )
    del dup
    if n_lines:
        first = np.empty(n_lines, dtype=bool)
        first[0] = True
        np.not_equal(holder[1:], holder[:-1], out=first[1:])
        starts = np.flatnonzero(first)
    else:
        starts = np.empty(0, dtype=np.int64)
    present = holder[starts] if values is None else values[holder[starts]]
    indptr = np.empty(starts.shape[0] + 1, dtype=np.int64)
    indptr[:-1] = starts
    indptr[-1] = n_lines
    if identities is None:
        return indptr, enc, np.ascontiguousarray(present, dtype=np.uint64)

    ids, by_value, sorted_ids = _population(identities, owner)
    n = ids.shape[0]
    at = np.searchsorted(sorted_ids, present)
    found = at < n
    found[found] = sorted_ids[at[found]] == present[found]
    if not found.all():
        missing = present[~found]
        j = int(np.flatnonzero(np.isin(ident, missing))[0])
        raise ValueError(
            f"The 'relations' parameter of {owner} must name only identities listed in "
            f"'identities'. Got identity {int(ident[j])} at line {j} ({missing.shape[0]} "
            f"distinct identities missing from 'identities' in all) instead."
        )
    target = by_value[at]  # the caller's position of each present identity
    counts = np.diff(indptr)
    sizes = np.zeros(n, dtype=np.int64)
    sizes[target] = counts
    new_indptr = np.zeros(n + 1, dtype=np.int64)
    np.cumsum(sizes, out=new_indptr[1:])
    if target.shape[0] > 1 and not np.all(target[1:] > target[:-1]):
        # the caller's order is not ascending identity: gather the sets' segments
        group_at = np.full(n, -1, dtype=np.int64)
        group_at[target] = np.arange(target.shape[0])
        groups = group_at[sizes > 0]  # present identities, in the caller's order
        out_starts = new_indptr[:-1][sizes > 0]
        src = np.repeat(indptr[groups] - out_starts, counts[groups])
        src += np.arange(n_lines, dtype=np.int64)
        enc = enc[src]
    return new_indptr, enc, ids


def _minhash_cap(indptr, pairs, k, seed, identities):
    """Keep, per over-cap identity, the k pairs of smallest public min-hash word."""
    sizes = np.diff(indptr)
    over = np.flatnonzero(sizes > k)
    keep = np.ones(pairs.shape[0], dtype=bool)
    for i in over:
        lo, hi = indptr[i], indptr[i + 1]
        words = hash_words(
            seed, np.full(hi - lo, identities[i], dtype=np.uint64), pairs[lo:hi], MINHASH_STREAM
        )
        order = np.lexsort((pairs[lo:hi], words))
        keep[lo + order[k:]] = False
    new_sizes = np.minimum(sizes, k)
    new_indptr = np.zeros_like(indptr)
    np.cumsum(new_sizes, out=new_indptr[1:])
    return new_indptr, pairs[keep], int(over.shape[0])


def as_relation_sets(
    relations, *, shape, k: int, owner: str, cap_policy: str = "raise",
    seed: int = 0, identities=None,
) -> RelationSets:
    """Validate ``relations`` and return them as :class:`RelationSets`.

    Parameters
    ----------
    relations : scipy.sparse matrix, sequence of (m_i, 2) int arrays, or long format
        The long format (see the module docstring) is a tuple of three 1-d
        integer arrays ``(identity, row, col)``, a table (pandas, pyarrow, a
        ``dict`` of arrays) with those columns, or the path of a Parquet file
        with them. Its sets are the distinct identities in ascending order,
        or the caller's ``identities`` in their order when given.
    shape : tuple (d1, d2)
    k : int
        Public cap on the set size.
    owner : str
        Name used in error messages.
    cap_policy : {"raise", "minhash"}
        ``"raise"``: an identity with more than ``k`` pairs is an error.
        ``"minhash"``: keep the ``k`` pairs with the smallest public min-hash
        word of ``(codebook_seed, identity, pair)`` (stream 3 of the
        counter-based hash), a public, data-independent rule; a
        :class:`UserWarning` reports how many identities were cut.
    seed : int
        Codebook seed, used only by the min-hash cap.
    identities : array_like of int, optional
        For the sparse and sequence forms, the uint64 identities used only by
        the min-hash cap (default ``0 .. n-1``). For the long format, the
        population and its order: every identity of ``relations`` must be
        among them (else a ``ValueError`` naming the first one missing) and
        identities without lines get empty sets; the result's
        :attr:`RelationSets.identities` is this array.
    """
    check_choice(cap_policy, "cap_policy", owner, CAP_POLICIES)
    d1, d2 = shape
    named = None  # the identities the long format defines
    if sp.issparse(relations):
        indptr, pairs = _from_sparse(relations, d1 * d2, owner)
    elif is_long_format(relations):
        indptr, pairs, named = _from_long(relations, shape, owner, identities)
    elif isinstance(relations, (list, tuple)):
        indptr, pairs = _from_sequence(relations, shape, owner)
    else:
        raise TypeError(
            f"The 'relations' parameter of {owner} must be a scipy.sparse matrix of shape "
            f"(n, {d1 * d2}), a list of (m, 2) integer arrays or a long-format table "
            f"(identity, row, col). Got {type(relations).__name__} instead."
        )
    sizes = np.diff(indptr)
    n_capped = 0
    if sizes.size and sizes.max() > k:
        if cap_policy == "raise":
            i = int(np.argmax(sizes > k))
            who = f"identity {i}" if named is None else f"identity {int(named[i])}"
            raise ValueError(
                f"The 'relations' parameter of {owner} must hold at most k = {k} pairs per "
                f"identity. Got {int(sizes[i])} pairs for {who} instead "
                f"(pass cap_policy='minhash' to cap sets by a public min-hash)."
            )
        if named is not None:
            ids = named
        else:
            ids = identities if identities is not None else np.arange(sizes.shape[0], dtype=np.uint64)
        indptr, pairs, n_capped = _minhash_cap(indptr, pairs, k, seed, ids)
        warnings.warn(
            f"{owner}: {n_capped} identities held more than k = {k} pairs and were capped "
            f"to k by the public min-hash rule.",
            UserWarning,
            stacklevel=3,
        )
    return RelationSets(np.ascontiguousarray(indptr), np.ascontiguousarray(pairs), n_capped, named)
