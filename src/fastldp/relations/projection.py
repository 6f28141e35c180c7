"""The final projection onto ``M_{s,k}`` (paper 000, section 6) and its support rule.

``M_{s,k} = {x in [0, 1]^p : ||x||_0 <= s, sum(x) <= k}``. Both rules keep
``s`` coordinates and project them exactly onto the capped simplex
``{x in [0, 1]^s : sum(x) <= k}`` (breakpoint sweep, no bisection, in
:mod:`fastldp._kernels._projection`); they differ in which ``s`` they keep.

``"raw"`` (default)
    The ``s`` largest raw sketch values, ties toward the smaller index. This
    is the exact Euclidean projection onto ``M_{s,k}``. For any support
    ``S`` the projection onto the capped simplex on ``S`` is
    ``x_j = clip(v_j - tau, 0, 1)``; if ``j in S`` and ``l not in S`` with
    ``v_l > v_j``, moving the value ``x_j`` from ``j`` to ``l`` changes the
    squared distance by ``(v_l - x_j)^2 + v_j^2 - (v_j - x_j)^2 - v_l^2 =
    -2 x_j (v_l - v_j) <= 0``. Exchanging until ``S`` holds the ``s``
    largest values never increases the distance, so the ``s`` largest raw
    values are an optimal support (tested against brute force over every
    support in ``tests/test_projection.py``).
``"clipped"``
    The ``s`` largest *clipped* values ``clip(v, 0, 1)``, ties toward the
    smaller index: section 6's wording, "retain the top ``s`` clipped
    coordinates", read literally. Every coordinate above 1 ties at 1, so
    when more than ``s`` of them exceed 1 the index order, not the data,
    picks the support. This is not the Euclidean projection. It matters
    under attack: the single-column Hadamard attack pushes about half of
    the coordinates above 1, and the clipped rule then keeps the
    low-index ones (see README, Table 5 with both rules).
"""

from __future__ import annotations

import numpy as np

from .._kernels._projection import project_capped_simplex, project_sparse_capped, top_s_indices
from .._validation import check_choice

__all__ = ["SUPPORT_RULES", "project", "check_support_rule"]

#: The support rules of :func:`project`.
SUPPORT_RULES = ("raw", "clipped")


def check_support_rule(rule, owner: str) -> str:
    """Return ``rule`` if it is one of :data:`SUPPORT_RULES`, else raise ``ValueError``."""
    return check_choice(rule, "support_rule", owner, SUPPORT_RULES)


def project(v: np.ndarray, s: int, k: float, support_rule: str = "raw"):
    """Project the raw estimate ``v`` (length ``p``) onto ``M_{s,k}``.

    Parameters
    ----------
    v : ndarray of float64, shape (p,)
        The raw (unbiased) estimate; must be finite.
    s : int
        Support size, ``1 <= s <= p``.
    k : float
        Cap on the sum.
    support_rule : {"raw", "clipped"}
        Which ``s`` coordinates are kept (see the module docstring).

    Returns
    -------
    x : ndarray of float64, shape (p,)
        The projected estimate, zero off the support.
    support : ndarray of intp
        The ``s`` kept coordinates, ascending.
    """
    v = np.ascontiguousarray(v, dtype=np.float64)
    if support_rule == "raw":
        return project_sparse_capped(v, int(s), float(k))
    check_support_rule(support_rule, "project")
    if not np.all(np.isfinite(v)):
        raise ValueError("v must be finite")
    support = top_s_indices(np.clip(v, 0.0, 1.0), int(s))
    x = np.zeros(v.shape[0], dtype=np.float64)
    x[support] = project_capped_simplex(np.ascontiguousarray(v[support]), float(k))
    return x, support
