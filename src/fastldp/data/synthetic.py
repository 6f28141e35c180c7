"""Synthetic relation populations.

``rate_diagnostic_population`` is the exact rate diagnostic of paper 000,
Eq. (12): a uniform support ``S`` of ``s`` pairs and records that are uniform
``k``-subsets of ``S``, so ``M(e) = k / s`` on ``S`` and 0 elsewhere.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np
import scipy.sparse as sp

from .._random import as_generator
from .._validation import check_int, param_error

__all__ = ["Population", "rate_diagnostic_population"]


@dataclass(frozen=True)
class Population:
    """A population of relation sets with its exact target.

    Attributes
    ----------
    relations : scipy.sparse.csr_matrix, shape (n, d1*d2)
        Row ``i`` is identity ``i``'s set.
    target : float64 array, shape (d1, d2)
        The population relation probability matrix ``M``.
    shape : tuple (d1, d2)
    k : int
        Set-size cap.
    """

    relations: sp.csr_matrix
    target: np.ndarray
    shape: tuple
    k: int

    @property
    def n(self) -> int:
        return self.relations.shape[0]

    @property
    def empirical_mean(self) -> np.ndarray:
        """The mean of the realized sets, shape (d1, d2)."""
        return np.asarray(self.relations.mean(axis=0)).reshape(self.shape)


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
    gen = as_generator(rng, owner)
    support = np.sort(gen.choice(p, size=s, replace=False))
    # a uniform k-subset per identity: the k smallest of s uniform keys
    keys = gen.random((n, s))
    picks = np.argpartition(keys, k - 1, axis=1)[:, :k]
    cols = np.sort(support[picks], axis=1).ravel()
    indptr = np.arange(0, n * k + 1, k, dtype=np.int64)
    relations = sp.csr_matrix((np.ones(n * k, dtype=np.int8), cols, indptr), shape=(n, p))
    target = np.zeros(p)
    target[support] = k / s
    return Population(relations, target.reshape(d1, d2), (d1, d2), k)
