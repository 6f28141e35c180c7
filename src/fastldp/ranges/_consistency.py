"""Constrained inference on a tree of noisy counts (Hay et al. 2010), with a variance per level.

A complete ``B``-ary tree of height ``h`` holds, at level ``l`` (``1 ..
h``), ``B^l`` noisy counts ``y_l``, each with the same noise variance
``sigma_l^2``; the root (level 0) is the number of users ``n``, known
exactly. The consistent tree is the generalized least-squares estimate:
the leaf vector ``x`` that minimizes

    sum_l ||A_l x - y_l||^2 / sigma_l^2   subject to   sum(x) = n,

where ``A_l`` sums the leaves under each node of level ``l``. Two passes
compute it in ``O(B^h)``:

1. *Weighted averaging*, bottom-up: ``z_h = y_h`` with variance ``V_h =
   sigma_h^2``; at level ``l < h`` the node's own count and the sum of its
   children's ``z`` are combined by inverse-variance weights,
   ``z_l = (y_l / sigma_l^2 + s / (B V_{l+1})) / (1 / sigma_l^2 + 1 / (B V_{l+1}))``
   and ``1 / V_l = 1 / sigma_l^2 + 1 / (B V_{l+1})`` (Hay et al. 2010,
   Theorem 3 with equal variances; the per-level weights are what a tree
   whose levels had different numbers of users needs).
2. *Mean consistency*, top-down: ``x_0 = n``; every node adds to its
   children's ``z`` an equal share of what they lack,
   ``x_c = z_c + (x_parent - sum_siblings z) / B`` (the siblings have equal
   variances, so the gap is shared equally).

The variance of a consistent count at level ``l`` (the diagonal of the
estimate's covariance) follows the same recursion:
``P_0 = 0``, ``P_l = V_l (1 - 1 / B) + P_{l-1} / B^2``.
tests/test_ranges.py checks both against an explicit least-squares solve.

A level with no reports has ``sigma_l^2 = inf`` (weight 0): it is then
ignored, and the levels around it carry the estimate.

References
----------
M. Hay, V. Rastogi, G. Miklau, D. Suciu, "Boosting the accuracy of
differentially private histograms through consistency", PVLDB 3(1), 2010.
G. Cormode, T. Kulkarni, D. Srivastava, "Answering range queries under
local differential privacy", PVLDB 12(10), 2019 (Section 4.3).
"""

from __future__ import annotations

from typing import Sequence, Union

import numpy as np

#: a level's noise variances: a list or an array, level 1 first
Variances = Union[Sequence[float], np.ndarray]

__all__ = ["consistent_tree", "consistent_variances", "pooled_range_variance"]


def consistent_tree(levels: Sequence[np.ndarray], variances: Variances, branching: int,
                    total: float) -> list:
    """The consistent counts of every level (a list of arrays, level 1 first).

    Parameters
    ----------
    levels : sequence of float arrays
        ``levels[l - 1]`` holds the ``B^l`` noisy counts of level ``l``.
    variances : sequence of float
        The noise variance of one count of each level (``inf`` for a level
        without reports).
    branching : int
        ``B``.
    total : float
        The root's count (``n``).

    Returns
    -------
    list of numpy.ndarray
        Level ``l``'s consistent counts at index ``l - 1``: each node equals
        the sum of its children, and level 1 sums to ``total``.
    """
    B = int(branching)
    h = len(levels)
    z: list = [None] * h
    V = np.empty(h)
    for li in range(h - 1, -1, -1):
        y = np.asarray(levels[li], dtype=np.float64)
        w_own = _weight(variances[li])
        if li == h - 1:
            z[li] = y if w_own > 0 else np.zeros_like(y)
            V[li] = np.inf if w_own == 0 else 1.0 / w_own
            continue
        s = z[li + 1].reshape(-1, B).sum(axis=1)
        w_kids = 0.0 if not np.isfinite(V[li + 1]) else 1.0 / (B * V[li + 1])
        w = w_own + w_kids
        if w == 0:
            z[li], V[li] = np.zeros_like(y), np.inf
        else:
            z[li] = ((w_own * y if w_own else 0.0) + (w_kids * s if w_kids else 0.0)) / w
            V[li] = 1.0 / w
    out: list = [None] * h
    parent = np.array([float(total)])
    for li in range(h):
        kids = z[li].reshape(-1, B)
        gap = parent - kids.sum(axis=1)
        out[li] = (kids + (gap / B)[:, None]).ravel()
        parent = out[li]
    return out


def consistent_variances(variances: Variances, branching: int) -> np.ndarray:
    """The variance of one consistent count of every level (level 1 first).

    The diagonal of the covariance of :func:`consistent_tree`'s output when
    each level's counts have independent noise of ``variances[l - 1]``.
    """
    B = int(branching)
    h = len(variances)
    V = np.empty(h)
    for li in range(h - 1, -1, -1):
        w = _weight(variances[li])
        if li < h - 1 and np.isfinite(V[li + 1]):
            w += 1.0 / (B * V[li + 1])
        V[li] = np.inf if w == 0 else 1.0 / w
    P = np.empty(h)
    prev = 0.0
    for li in range(h):
        P[li] = V[li] * (1.0 - 1.0 / B) + prev / B**2
        prev = P[li]
    return P


def _weight(variance: float) -> float:
    v = float(variance)
    if not v > 0:  # a level known exactly would need a constraint, not a weight
        raise ValueError(f"a level's noise variance must be > 0 (inf for no reports); got {v!r}")
    return 0.0 if np.isinf(v) else 1.0 / v


def pooled_range_variance(variances: Variances, branching: int, domain_size: int) -> float:
    """The mean, over every range ``[a, b]`` of ``[0, D)``, of its consistent answer's noise variance.

    The consistent leaves are the generalized least-squares estimate, whose
    covariance is ``M^-1 - M^-1 1 1' M^-1 / (1' M^-1 1)`` with ``M = sum_l
    A_l' A_l / sigma_l^2`` (the root's constraint removes the direction of
    ``1``); a range's variance is read from the covariance of the prefix
    sums. ``O(B^{3h})``: for the small domains where the level weights are
    tuned (:func:`~fastldp.ranges.optimal_level_weights`).
    """
    B = int(branching)
    h = len(variances)
    L = B**h
    leaves = np.arange(L)
    M = np.zeros((L, L))
    for li in range(h):
        w = _weight(variances[li])
        if w:
            nodes = leaves // B ** (h - 1 - li)
            M += w * (nodes[:, None] == nodes[None, :])
    # the leaves' own counts make M positive definite; without them, the pseudo-inverse
    Mi = np.linalg.inv(M) if _weight(variances[-1]) else np.linalg.pinv(M, hermitian=True)
    u = Mi.sum(axis=1)
    cov = (Mi - np.outer(u, u) / u.sum())[:domain_size, :domain_size]
    P = np.zeros((domain_size + 1, domain_size + 1))
    P[1:, 1:] = np.cumsum(np.cumsum(cov, axis=0), axis=1)
    a, b = np.triu_indices(domain_size)
    return float(np.mean(P[b + 1, b + 1] + P[a, a] - 2 * P[a, b + 1]))
