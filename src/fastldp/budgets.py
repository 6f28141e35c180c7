"""Personal privacy-budget profiles under the public cap ``eps_i <= eps0``.

``eps0`` is the nominal scale and the public cap, never the realized mean
(paper 000, section 7.1: H1 at ``eps0 = 2`` has realized mean 1.75 and range
``[1.5, 2]``). Every profile returns budgets in ``(0, eps0]``.

==============  ============================================  ===========  ====================
profile         law of ``eps_i / eps0``                       mean / eps0  variance / eps0**2
==============  ============================================  ===========  ====================
``H0``          1 (homogeneous)                               1            0
``H1``          uniform on ``[0.75, 1]``                      0.875        1/192 (0.0052)
``two-tier``    0.5 for 80% of the holders, 1 for 20%         0.6          0.04 (over the law)
``long-tail``   ``1 / X``, ``X`` Pareto(1.5) on ``[1, inf)``  0.6          0.0686
==============  ============================================  ===========  ====================

``two-tier`` assigns exactly ``round(0.2 n)`` holders (half up) the full budget,
at uniformly random positions, so its realized mean is ``0.6 eps0`` up to
``0.5 / n``. ``long-tail``: the noise scale ``1 / eps_i`` is classical
Pareto with shape 1.5 (finite mean, infinite variance), so a few holders
have very small budgets; ``eps_i / eps0`` is Beta(1.5, 1), drawn as
``(1 - U) ** (1 / 1.5)`` with ``U`` uniform on ``[0, 1)``, which is never 0.
``two-tier`` and ``long-tail`` share the mean ``0.6 eps0`` but differ in
spread, so they separate what a mean budget can and cannot summarize
(paper 000, section 8.1).
"""

from __future__ import annotations

import numpy as np

from ._random import as_generator
from ._validation import check_choice, check_float, check_int, param_error

__all__ = ["BUDGET_PROFILES", "budget_profile", "budget_summary", "profile_moments"]

BUDGET_PROFILES = ("H0", "H1", "two-tier", "long-tail")

H1_LOW = 0.75
TWO_TIER_LOW = 0.5
TWO_TIER_HIGH_SHARE = 0.2
LONG_TAIL_SHAPE = 1.5


def profile_moments(name: str, eps0: float) -> tuple:
    """Return the mean and variance of one budget under profile ``name``.

    For ``two-tier`` the variance is that of the law; a realized profile fixes
    the number of full-budget holders, so its mean is exact up to ``0.5 / n``.
    """
    owner = "profile_moments"
    check_choice(name, "name", owner, BUDGET_PROFILES)
    eps0 = check_float(eps0, "eps0", owner, low=0.0, high=np.inf)
    if name == "H0":
        mean, var = 1.0, 0.0
    elif name == "H1":
        mean, var = (1 + H1_LOW) / 2, (1 - H1_LOW) ** 2 / 12
    elif name == "two-tier":
        q = TWO_TIER_HIGH_SHARE
        mean = q + (1 - q) * TWO_TIER_LOW
        var = q * (1 - q) * (1 - TWO_TIER_LOW) ** 2
    else:  # Beta(a, 1)
        a = LONG_TAIL_SHAPE
        mean, var = a / (a + 1), a / ((a + 1) ** 2 * (a + 2))
    return mean * eps0, var * eps0**2


def budget_profile(name: str, n: int, eps0: float, rng=None) -> np.ndarray:
    """Draw ``n`` personal budgets of profile ``name`` under the cap ``eps0``.

    Parameters
    ----------
    name : {"H0", "H1", "two-tier", "long-tail"}
        See the module docstring for each law.
    n : int
        Holders, ``n >= 1``.
    eps0 : float
        Nominal scale and public cap, in ``(0, inf)``.
    rng : None, int, SeedSequence or Generator
        ``H0`` draws nothing.

    Returns
    -------
    float64 array, shape (n,)
        Budgets in ``(0, eps0]``.

    References
    ----------
    Paper 000, section 7.1 (H0, H1 and the public cap).
    """
    owner = "budget_profile"
    check_choice(name, "name", owner, BUDGET_PROFILES)
    n = check_int(n, "n", owner, low=1)
    eps0 = check_float(eps0, "eps0", owner, low=0.0, high=np.inf)
    if name == "H0":
        return np.full(n, eps0)
    gen = as_generator(rng, owner, purpose="data")
    if name == "H1":
        eps = eps0 * (H1_LOW + (1 - H1_LOW) * gen.random(n))
    elif name == "two-tier":
        eps = np.full(n, TWO_TIER_LOW * eps0)
        high = int(np.floor(TWO_TIER_HIGH_SHARE * n + 0.5))
        eps[gen.permutation(n)[:high]] = eps0
    else:
        eps = eps0 * (1.0 - gen.random(n)) ** (1.0 / LONG_TAIL_SHAPE)
    # the cap is public: rounding must never push a budget above it
    return np.minimum(eps, eps0)


def budget_summary(eps, eps0=None) -> dict:
    """Return ``{"eps0", "mean", "min", "max"}`` of a budget vector.

    Every result row stores these (paper 000, section 7.1); ``eps0`` is the
    nominal cap if given (checked: no budget may exceed it), else None.
    """
    owner = "budget_summary"
    arr = np.asarray(eps, dtype=np.float64).ravel()
    if arr.size == 0:
        raise param_error("eps", owner, "a non-empty array of budgets", eps)
    if not np.all(np.isfinite(arr) & (arr > 0)):
        bad = arr[~(np.isfinite(arr) & (arr > 0))][0]
        raise param_error("eps", owner, "an array of finite budgets in (0, inf)", float(bad))
    if eps0 is not None:
        eps0 = check_float(eps0, "eps0", owner, low=0.0, high=np.inf)
        if arr.max() > eps0:
            raise param_error("eps", owner, f"an array of budgets <= eps0 = {eps0!r}", float(arr.max()))
    return {"eps0": eps0, "mean": float(arr.mean()), "min": float(arr.min()), "max": float(arr.max())}
