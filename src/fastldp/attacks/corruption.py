"""Who is corrupted: sets of at most floor(alpha n) identities (paper 000, section 3.3).

The set is fixed before the codebook is drawn. Policies:

``"largest"``
    The ``m_alpha`` identities with the largest budgets - the worst case of
    the paper, since they carry the most leverage (Eq. (2)). Ties between
    equal budgets go to the smaller index, so with homogeneous budgets the
    first ``m_alpha`` identities are taken.
``"random"``
    A uniformly random ``m_alpha``-subset drawn from ``rng``.
an array of indices
    A given list (distinct indices in ``[0, n)``, at most ``m_alpha`` of them
    when ``alpha`` is given).
"""

from __future__ import annotations

import numpy as np

from .._random import as_generator
from .._validation import check_float, check_positive_array, param_error
from ..analysis import corrupted_count

__all__ = ["choose_corrupted", "CORRUPTION_POLICIES"]

CORRUPTION_POLICIES = ("largest", "random")


def choose_corrupted(epsilons, alpha, *, policy="largest", rng=None) -> np.ndarray:
    """Return the sorted indices of the corrupted identities.

    Parameters
    ----------
    epsilons : array_like of float, shape (n,)
        Committed budgets.
    alpha : float in [0, 1/2)
        Contamination fraction; ``m_alpha = floor(alpha n)`` identities.
    policy : {"largest", "random"} or array_like of int
    rng : None, int, SeedSequence or Generator
        Used by ``"random"`` only.

    Returns
    -------
    numpy.ndarray of int64
    """
    owner = "choose_corrupted"
    eps = check_positive_array(epsilons, "epsilons", owner)
    alpha = check_float(alpha, "alpha", owner, low=0, high=0.5, low_open=False, high_open=True)
    n = eps.shape[0]
    m = corrupted_count(n, alpha)
    if isinstance(policy, str):
        if policy == "largest":
            order = np.lexsort((np.arange(n), -eps))
            return np.sort(order[:m]).astype(np.int64)
        if policy == "random":
            gen = as_generator(rng, owner)
            return np.sort(gen.choice(n, size=m, replace=False)).astype(np.int64)
        raise param_error("policy", owner, "'largest', 'random' or an array of indices", policy)
    given = np.asarray(policy)
    expected = f"distinct indices in [0, {n}), at most floor(alpha n) = {m} of them"
    if given.dtype.kind not in "iu" or given.ndim != 1:
        raise param_error("policy", owner, expected, policy, TypeError)
    if given.size and (given.min() < 0 or given.max() >= n):
        raise param_error("policy", owner, expected, policy)
    if np.unique(given).shape[0] != given.shape[0] or given.shape[0] > m:
        raise param_error("policy", owner, expected, policy)
    return np.sort(given).astype(np.int64)
