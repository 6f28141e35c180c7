"""The Eq. (12) rate-diagnostic population."""

import itertools

import numpy as np
import pytest
from scipy.stats import chisquare

from fastldp.relations import rate_diagnostic_population


@pytest.mark.parametrize("s,k", [(5, 2), (6, 4)])  # rejection path and key path
def test_records_are_uniform_k_subsets_of_the_support(s, k):
    n = 30_000
    pop = rate_diagnostic_population(shape=(3, 3), s=s, k=k, n=n, rng=1)
    support = np.flatnonzero(pop.target.ravel())
    assert support.size == s and np.allclose(pop.target.ravel()[support], k / s)
    rows = [tuple(pop.relations.indices[pop.relations.indptr[i]:pop.relations.indptr[i + 1]])
            for i in range(n)]
    subsets = list(itertools.combinations(support.tolist(), k))
    index = {sub: j for j, sub in enumerate(subsets)}
    counts = np.bincount([index[r] for r in rows], minlength=len(subsets))
    assert counts.sum() == n
    assert chisquare(counts).pvalue > 1e-4


def test_population_is_reproducible():
    a = rate_diagnostic_population(shape=(8, 8), s=10, k=3, n=100, rng=4)
    b = rate_diagnostic_population(shape=(8, 8), s=10, k=3, n=100, rng=4)
    assert (a.relations != b.relations).nnz == 0
