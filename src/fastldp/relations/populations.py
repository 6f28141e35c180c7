"""Synthetic relation populations and the population record shared by every generator.

``rate_diagnostic_population`` is the exact rate diagnostic of paper 000,
Eq. (12): a uniform support ``S`` of ``s`` pairs and records that are uniform
``k``-subsets of ``S``, so ``M(e) = k / s`` on ``S`` and 0 elsewhere.

:class:`Population` also carries what the experiment harness needs of a frozen
population: its nominal sparsity ``s``, a name, the best ``s``-sparse
approximation of the target and a content hash (see
:func:`population_content_hash` for the canonical encoding).
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np
import scipy.sparse as sp

from .._kernels._projection import top_s_indices
from .._random import as_generator
from .._validation import check_int, param_error

__all__ = [
    "Population",
    "rate_diagnostic_population",
    "best_sparse_approximation",
    "population_content_hash",
    "population_from_csr",
]

#: Prefix of the canonical byte encoding hashed by :func:`population_content_hash`.
CONTENT_HASH_VERSION = b"fastldp.population.v1\n"


@dataclass(frozen=True)
class Population:
    """A population of relation sets with its exact target.

    Attributes
    ----------
    relations : scipy.sparse.csr_matrix, shape (n, d1*d2)
        Row ``i`` is identity ``i``'s set.
    target : float64 array, shape (d1, d2)
        The population relation probability matrix ``M``. For the frozen
        scenarios and real data it is the exact mean of the stored records
        (``M_pop``); for :func:`rate_diagnostic_population` it is the Eq. (12)
        expectation ``k / s`` on ``S``.
    shape : tuple (d1, d2)
    k : int
        Set-size cap.
    s : int or None
        Nominal sparsity (the ``s`` of the estimator and of the metrics).
    name : str
        What generated it (``"rate"``, a scenario name, a dataset name).
    approximation : float64 array, shape (d1, d2), or None
        The best ``s``-sparse approximation ``M^(s)`` of ``target`` (its ``s``
        largest entries, ties toward the smaller index).
    metadata : dict
        Provenance: seed, statistics, preprocessing counts (JSON-serializable).

    Examples
    --------
    >>> from fastldp.relations import rate_diagnostic_population
    >>> pop = rate_diagnostic_population(shape=(8, 8), s=4, k=2, n=100, rng=0)
    >>> pop.n, pop.relations.shape, pop.target.shape
    (100, (100, 64), (8, 8))
    """

    relations: sp.csr_matrix
    target: np.ndarray
    shape: tuple
    k: int
    s: int | None = None
    name: str = ""
    approximation: np.ndarray | None = None
    metadata: dict = field(default_factory=dict)

    @property
    def n(self) -> int:
        return self.relations.shape[0]

    @property
    def empirical_mean(self) -> np.ndarray:
        """The mean of the realized sets, shape (d1, d2)."""
        return np.asarray(self.relations.mean(axis=0)).reshape(self.shape)

    @property
    def set_sizes(self) -> np.ndarray:
        """``|E_i|`` for every identity, int64 array of shape (n,)."""
        return np.diff(self.relations.indptr).astype(np.int64)

    @property
    def approximation_tail(self) -> float:
        """``||M - M^(s)||_F^2``, the part of the target no ``s``-sparse matrix holds."""
        if self.approximation is None:
            raise ValueError(f"Population {self.name!r} has no s-sparse approximation (s is None).")
        diff = (self.target - self.approximation).ravel()
        return float(np.dot(diff, diff))

    @property
    def content_hash(self) -> str:
        """sha256 hex digest of the canonical encoding (see :func:`population_content_hash`)."""
        return population_content_hash(self)


def best_sparse_approximation(target, s: int) -> np.ndarray:
    """Return ``M^(s)``: ``target`` with all but its ``s`` largest entries set to 0.

    Ties at the threshold go to the smaller flat index, as in
    :func:`fastldp.metrics.support_scores` and the JPRS projection.
    """
    arr = np.asarray(target, dtype=np.float64)
    flat = np.ascontiguousarray(arr.ravel())
    s = check_int(s, "s", "best_sparse_approximation", low=0)
    out = np.zeros_like(flat)
    keep = top_s_indices(flat, s)
    out[keep] = flat[keep]
    return out.reshape(arr.shape)


def _canonical_csr(relations) -> sp.csr_matrix:
    csr = relations if (sp.issparse(relations) and relations.format == "csr") else sp.csr_matrix(relations)
    if not csr.has_sorted_indices:
        csr = csr.sorted_indices()
    return csr


def population_content_hash(population: Population) -> str:
    """Return the sha256 hex digest of a population's canonical encoding.

    The encoding (version 1) is the concatenation of

    1. the ASCII line ``fastldp.population.v1\\n``;
    2. ``name`` in UTF-8 followed by ``\\n``;
    3. six little-endian int64: ``d1, d2, k, s`` (``-1`` when ``s`` is None),
       ``n`` and the number of stored pairs;
    4. the CSR ``indptr`` (``n + 1`` little-endian int64);
    5. the CSR column indices, sorted within each row (little-endian int64),
       i.e. the encoded pairs ``row * d2 + col`` of every set in identity order.

    The target, its approximation and the metadata are functions of these and
    are not hashed; stored values other than 1 are not part of a set.
    """
    csr = _canonical_csr(population.relations)
    d1, d2 = population.shape
    s = -1 if population.s is None else int(population.s)
    head = np.array([d1, d2, population.k, s, csr.shape[0], csr.indices.shape[0]], dtype="<i8")
    digest = hashlib.sha256()
    digest.update(CONTENT_HASH_VERSION)
    digest.update(population.name.encode("utf-8") + b"\n")
    digest.update(head.tobytes())
    digest.update(np.ascontiguousarray(csr.indptr, dtype="<i8").tobytes())
    digest.update(np.ascontiguousarray(csr.indices, dtype="<i8").tobytes())
    return digest.hexdigest()


def population_from_csr(
    indptr, pairs, *, shape, k: int, s: int | None, name: str, metadata=None
) -> Population:
    """Build a :class:`Population` whose target is the exact mean of its records.

    ``pairs`` must be sorted and distinct within each row. The target is
    ``count(e) / n`` per pair ``e``, computed from integer counts, so it is the
    exact stored population mean ``M_pop`` up to one rounding per entry.
    """
    d1, d2 = shape
    p = d1 * d2
    indptr = np.asarray(indptr, dtype=np.int64)
    pairs = np.asarray(pairs, dtype=np.int64)
    n = indptr.shape[0] - 1
    relations = sp.csr_matrix(
        (np.ones(pairs.shape[0], dtype=np.int8), pairs, indptr), shape=(n, p)
    )
    relations.has_sorted_indices = True
    target = (np.bincount(pairs, minlength=p) / max(n, 1)).reshape(d1, d2)
    approx = None if s is None else best_sparse_approximation(target, s)
    return Population(
        relations, target, (d1, d2), int(k), None if s is None else int(s), name, approx,
        dict(metadata or {}),
    )


def _uniform_k_subsets(gen: np.random.Generator, n: int, s: int, k: int) -> np.ndarray:
    """``n`` independent uniform ``k``-subsets of ``range(s)``, shape (n, k).

    When ``k <= s / 2``: ``k`` i.i.d. uniform draws per row, rows with a
    repeat redrawn (conditioning i.i.d. draws on distinctness is uniform
    over ordered distinct tuples, hence over subsets); memory ``O(n k)``.
    Otherwise the ``k`` smallest of ``s`` uniform keys, in row blocks.
    """
    if 2 * k > s:
        out = np.empty((n, k), dtype=np.int64)
        for start in range(0, n, 4096):
            keys = gen.random((min(4096, n - start), s))
            out[start:start + keys.shape[0]] = np.argpartition(keys, k - 1, axis=1)[:, :k]
        return out
    picks = gen.integers(0, s, size=(n, k))
    redo = np.arange(n)
    while redo.size:
        ordered = np.sort(picks[redo], axis=1)
        repeated = (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
        redo = redo[repeated]
        picks[redo] = gen.integers(0, s, size=(redo.size, k))
    return picks


def rate_diagnostic_population(*, shape, s, k, n, rng=None) -> Population:
    """Draw the Eq. (12) population: uniform s-support, uniform k-subsets.

    Parameters
    ----------
    shape : tuple (d1, d2)
    s : int
        Support size, ``k <= s <= d1 * d2``.
    k : int
        Records per identity, ``k >= 1``.
    n : int
        Identities, ``n >= 1``.
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    Population
        Its ``target`` is the Eq. (12) expectation ``k / s`` on ``S`` (exactly
        ``s``-sparse, so ``approximation`` equals it); ``empirical_mean`` is the
        mean of the drawn records.

    References
    ----------
    Paper 000, section 7.1, Eq. (12).
    """
    owner = "rate_diagnostic_population"
    if not (isinstance(shape, (tuple, list)) and len(shape) == 2):
        raise param_error("shape", owner, "a pair (d1, d2) of ints >= 1", shape, TypeError)
    d1 = check_int(shape[0], "shape[0]", owner, low=1)
    d2 = check_int(shape[1], "shape[1]", owner, low=1)
    p = d1 * d2
    k = check_int(k, "k", owner, low=1)
    s = check_int(s, "s", owner, low=k, high=p)
    n = check_int(n, "n", owner, low=1)
    gen = as_generator(rng, owner, purpose="data")
    support = np.sort(gen.choice(p, size=s, replace=False))
    picks = _uniform_k_subsets(gen, n, s, k)
    cols = np.sort(support[picks], axis=1).ravel()
    indptr = np.arange(0, n * k + 1, k, dtype=np.int64)
    relations = sp.csr_matrix((np.ones(n * k, dtype=np.int8), cols, indptr), shape=(n, p))
    target = np.zeros(p)
    target[support] = k / s
    target = target.reshape(d1, d2)
    return Population(relations, target, (d1, d2), k, s, "rate", target.copy())
