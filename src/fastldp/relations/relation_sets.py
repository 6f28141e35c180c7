"""Relation sets as CSR arrays: parsing, validation and the public cap.

A relation set ``E_i`` is a set of pairs ``(row, col)`` of a ``d1 x d2``
table, encoded as ``e = row * d2 + col`` (paper 000, section 5: the public
bijection iota). Two input forms are accepted:

* a ``scipy.sparse`` matrix (any format) of shape ``(n, d1 * d2)``: identity
  ``i`` holds the pairs whose stored value in row ``i`` is non-zero; stored
  values must be 0 or 1.
* a sequence of ``n`` integer arrays of shape ``(m_i, 2)`` holding
  ``(row, col)`` pairs (``m_i`` may be 0).
"""

from __future__ import annotations

import warnings
from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._kernels._hash import MINHASH_STREAM, hash_words
from .._validation import check_choice, check_csr_structure

__all__ = ["RelationSets", "as_relation_sets", "CAP_POLICIES"]

CAP_POLICIES = ("raise", "minhash")


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
    """

    indptr: np.ndarray
    pairs: np.ndarray
    n_capped: int = 0

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
    relations : scipy.sparse matrix or sequence of (m_i, 2) int arrays
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
    seed, identities
        Codebook seed and uint64 identities, used only by the min-hash cap.
    """
    check_choice(cap_policy, "cap_policy", owner, CAP_POLICIES)
    d1, d2 = shape
    if sp.issparse(relations):
        indptr, pairs = _from_sparse(relations, d1 * d2, owner)
    elif isinstance(relations, (list, tuple)):
        indptr, pairs = _from_sequence(relations, shape, owner)
    else:
        raise TypeError(
            f"The 'relations' parameter of {owner} must be a scipy.sparse matrix of shape "
            f"(n, {d1 * d2}) or a list of (m, 2) integer arrays. Got {type(relations).__name__} instead."
        )
    sizes = np.diff(indptr)
    n_capped = 0
    if sizes.size and sizes.max() > k:
        if cap_policy == "raise":
            i = int(np.argmax(sizes > k))
            raise ValueError(
                f"The 'relations' parameter of {owner} must hold at most k = {k} pairs per "
                f"identity. Got {int(sizes[i])} pairs for identity {i} instead "
                f"(pass cap_policy='minhash' to cap sets by a public min-hash)."
            )
        ids = identities if identities is not None else np.arange(sizes.shape[0], dtype=np.uint64)
        indptr, pairs, n_capped = _minhash_cap(indptr, pairs, k, seed, ids)
        warnings.warn(
            f"{owner}: {n_capped} identities held more than k = {k} pairs and were capped "
            f"to k by the public min-hash rule.",
            UserWarning,
            stacklevel=3,
        )
    return RelationSets(np.ascontiguousarray(indptr), np.ascontiguousarray(pairs), n_capped)
