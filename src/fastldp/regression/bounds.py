"""The rates of paper 002's Theorems 1-4, as functions (constants set to 1, logs kept).

Each returns the order of the l2 estimation error, ``||theta_hat - theta||_2``,
with the constants of the theorems set to ``c`` (default 1); they are meant
for shapes (how the error scales with ``n``, ``m``, ``d``, ``k``, ``eps``),
not for absolute levels. ``O~`` upper bounds carry the logarithmic factors
the summary suppresses only when ``logs=True``.

================================ ===========================================
theorem                          rate
================================ ===========================================
1, non-interactive lower bound   ``sqrt(d k) / (n eps)``
2, non-interactive upper bound   ``sqrt(k / n) + d sqrt(k) / (n eps)``
3, U2R upper bound (user level)  ``sqrt(k / (n m)) + k / (n sqrt(m) eps)``
4, user-level lower bound        ``sqrt(k log(d/k) / (n m)) + k log(d/k) / (n sqrt(m) eps)``
================================ ===========================================
"""

from __future__ import annotations

import math
from typing import Optional

from .._validation import check_float, check_int

__all__ = ["noninteractive_lower_bound", "noninteractive_upper_bound", "u2r_upper_bound",
           "user_level_lower_bound"]


def _common(owner: str, n: int, epsilon: float, k: int, c: float) -> tuple[int, float, int, float]:
    n = check_int(n, "n", owner, low=1)
    epsilon = check_float(epsilon, "epsilon", owner, low=0)
    k = check_int(k, "k", owner, low=1)
    c = check_float(c, "c", owner, low=0)
    return n, epsilon, k, c


def noninteractive_lower_bound(*, n: int, d: int, k: int, epsilon: float, c: float = 1.0) -> float:
    """Theorem 1: any non-interactive (eps, delta)-SDP protocol errs ``Omega(sqrt(d k) / (n eps))``."""
    n, epsilon, k, c = _common("noninteractive_lower_bound", n, epsilon, k, c)
    d = check_int(d, "d", "noninteractive_lower_bound", low=k)
    return c * math.sqrt(d * k) / (n * epsilon)


def noninteractive_upper_bound(*, n: int, d: int, k: int, epsilon: float, delta: float = 1e-5,
                               c: float = 1.0, logs: bool = False) -> float:
    """Theorem 2 (Sample-SDP): ``O~(sqrt(k / n) + d sqrt(k) / (n eps))``.

    With ``logs=True`` the statistical term carries ``sqrt(log d)`` and the
    privacy term ``sqrt(log(1/delta)) log d``.
    """
    n, epsilon, k, c = _common("noninteractive_upper_bound", n, epsilon, k, c)
    d = check_int(d, "d", "noninteractive_upper_bound", low=k)
    delta = check_float(delta, "delta", "noninteractive_upper_bound", low=0, high=1)
    stat = math.sqrt(k / n)
    priv = d * math.sqrt(k) / (n * epsilon)
    if logs:
        stat *= math.sqrt(math.log(d))
        priv *= math.sqrt(math.log(1 / delta)) * math.log(d)
    return c * (stat + priv)


def u2r_upper_bound(*, n: int, m: int, k: int, epsilon: float, delta: float = 1e-5,
                    d: Optional[int] = None, c: float = 1.0, logs: bool = False) -> float:
    """Theorem 3 (U2R): ``O~(sqrt(k / (n m)) + k / (n sqrt(m) eps))``, no polynomial ``d``.

    With ``logs=True`` the privacy term carries ``sqrt(log(1/delta) log n)``.
    """
    n, epsilon, k, c = _common("u2r_upper_bound", n, epsilon, k, c)
    m = check_int(m, "m", "u2r_upper_bound", low=1)
    delta = check_float(delta, "delta", "u2r_upper_bound", low=0, high=1)
    stat = math.sqrt(k / (n * m))
    priv = k / (n * math.sqrt(m) * epsilon)
    if logs:
        priv *= math.sqrt(math.log(1 / delta) * math.log(max(n, 2)))
    return c * (stat + priv)


def user_level_lower_bound(*, n: int, m: int, d: int, k: int, epsilon: float,
                           c: float = 1.0) -> float:
    """Theorem 4: any user-level (eps, delta)-DP estimator errs
    ``Omega(sqrt(k log(d/k) / (n m)) + k log(d/k) / (n sqrt(m) eps))``."""
    n, epsilon, k, c = _common("user_level_lower_bound", n, epsilon, k, c)
    m = check_int(m, "m", "user_level_lower_bound", low=1)
    d = check_int(d, "d", "user_level_lower_bound", low=k)
    L = math.log(max(d / k, math.e))
    return c * (math.sqrt(k * L / (n * m)) + k * L / (n * math.sqrt(m) * epsilon))
