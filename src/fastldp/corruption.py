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

import math
from fractions import Fraction

import numpy as np

from ._random import as_generator
from ._validation import check_float, check_int, check_positive_array, param_error

__all__ = ["choose_corrupted", "corrupted_count", "CORRUPTION_POLICIES"]

CORRUPTION_POLICIES = ("largest", "random")



def _check_alpha(alpha, owner: str) -> float:
    return check_float(alpha, "alpha", owner, low=0, high=1, low_open=False, high_open=True)


def _corrupted_count(n: int, alpha: float) -> int:
    # Fraction(repr(x)) is the shortest decimal that round-trips to x, so
    # alpha=0.29 is read as 29/100 rather than its binary neighbour
    # 0.28999999999999998002..., whose product with 100 floors to 28.
    return math.floor(Fraction(repr(float(alpha))) * n)


def corrupted_count(n: int, alpha: float) -> int:
    """Return the corruption budget ``m_alpha = floor(alpha * n)`` (section 3.3).

    Parameters
    ----------
    n : int
        Number of committed identities, ``n >= 1``.
    alpha : float
        Contamination fraction in ``[0, 1)``.

    Returns
    -------
    int
        ``floor(alpha * n)``, always in ``[0, n - 1]``.

    Notes
    -----
    The product is formed in exact rational arithmetic from the *shortest
    decimal representation* of ``alpha``, i.e. as
    ``floor(Fraction(repr(float(alpha))) * n)``. Users write ``alpha = 0.29``
    meaning 29/100; the binary double nearest to it is slightly smaller, so the
    floating-point product ``0.29 * 100 = 28.999999999999996`` would floor to
    28 identities instead of 29. Reading ``alpha`` as its shortest round-trip
    decimal gives the count the user wrote, and is still a deterministic
    function of the float. An ``alpha`` that is not a short decimal keeps its
    exact meaning: the double nearest 1/3 is ``0.3333333333333333 < 1/3``, so
    ``corrupted_count(3, 1/3)`` is 0 (the float product would round up to 1).
    Because ``alpha < 1`` exactly, the result is at most
    ``n - 1``: at least one identity is always honest.

    References
    ----------
    .. [1] Paper 000, section 3.3 (threat model, ``m_alpha``).

    Examples
    --------
    >>> corrupted_count(100, 0.29)
    29
    >>> corrupted_count(10, 0.0)
    0
    """
    n = check_int(n, "n", "corrupted_count", low=1)
    alpha = _check_alpha(alpha, "corrupted_count")
    return _corrupted_count(n, alpha)


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
            gen = as_generator(rng, owner, purpose="attack")
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
