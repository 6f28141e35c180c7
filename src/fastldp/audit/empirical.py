"""Empirical lower bounds on privacy loss from distinguishing tests.

A distinguishing test fixes two neighbouring inputs ``x, x'`` and an event
``S`` of the output space, draws ``n`` releases under each input and counts
how often ``S`` happens: ``a`` times under ``x``, ``b`` under ``x'``. For an
``eps``-LDP channel ``P(S | x) <= e^eps P(S | x')``, so with Clopper-Pearson
bounds ``p_lo <= P(S | x)`` and ``q_hi >= P(S | x')`` (each at confidence
``1 - alpha/2``)

    eps >= ln(p_lo / q_hi)

holds with probability at least ``1 - alpha`` whatever the channel is. The
verdict is a pass when this lower bound is at most the claimed ``eps``: the
test can only refute a claim, never prove one.

For zCDP (``D_a(P || Q) <= a rho`` for every order ``a > 1``) the same counts
give, by the data-processing inequality for Rényi divergences,
``rho >= sup_a D_a(Bern(p_lo) || Bern(q_hi)) / a`` (the binary divergence
grows as the two probabilities move apart, so the confidence bounds keep the
inequality).

The event must not be chosen on the data it is tested on: the tests here
choose it on a separate pilot sample (a threshold ``Y > t`` or ``Y < t``, or
the most likely output of ``x``) and count on fresh draws.

References
----------
.. [1] C. J. Clopper, E. S. Pearson, "The use of confidence or fiducial limits
   illustrated in the case of the binomial", Biometrika 1934.
.. [2] Z. Ding, Y. Wang, G. Wang, D. Zhang, D. Kifer, "Detecting violations of
   differential privacy", CCS 2018.
.. [3] M. Jagielski, J. Ullman, A. Oprea, "Auditing differentially private
   machine learning: how private is private SGD?", NeurIPS 2020.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import inf, log
from typing import Any, Callable

import numpy as np
from numpy.typing import ArrayLike
from scipy import stats

from .report import one_line

__all__ = [
    "clopper_pearson",
    "epsilon_lower_bound",
    "binary_renyi",
    "zcdp_lower_bound",
    "EmpiricalAudit",
    "threshold_test",
    "threshold_test_samples",
    "event_test",
    "detectable_loss",
    "reach",
    "REACH_ALPHA",
    "ALPHA",
]

#: default significance of every test: a false alarm has probability below 1e-6
ALPHA = 1e-6
_ORDERS = np.concatenate([1.0 + np.geomspace(1e-3, 1.0, 40)[:-1], np.geomspace(2.0, 512.0, 60)])


def clopper_pearson(successes: int, trials: int, alpha: float) -> tuple[float, float]:
    """Two-sided ``1 - alpha`` Clopper-Pearson interval for a binomial proportion."""
    if trials < 1 or not 0 <= successes <= trials:
        raise ValueError(f"need 0 <= successes <= trials and trials >= 1; got {successes}, {trials}")
    lo = 0.0 if successes == 0 else float(stats.beta.ppf(alpha / 2, successes, trials - successes + 1))
    hi = (1.0 if successes == trials
          else float(stats.beta.ppf(1 - alpha / 2, successes + 1, trials - successes)))
    return lo, hi


def epsilon_lower_bound(a: int, n_a: int, b: int, n_b: int, alpha: float = ALPHA,
                        delta: float = 0.0) -> float:
    """``ln((p_lo - delta) / q_hi)`` with one-sided ``1 - alpha/2`` bounds on each proportion.

    With ``delta = 0`` this is the pure-LDP bound ``ln(p_lo / q_hi)``; with
    ``delta > 0`` it bounds the ``eps`` of an ``(eps, delta)`` claim, since
    ``P(S | x) <= e^eps P(S | x') + delta`` for every event ``S``. 0 when negative.
    """
    p_lo, _ = clopper_pearson(a, n_a, alpha)      # lower end of a two-sided 1 - alpha interval
    _, q_hi = clopper_pearson(b, n_b, alpha)      # = one-sided 1 - alpha/2 bounds
    if p_lo - delta <= 0.0:
        return 0.0
    return max(0.0, log((p_lo - delta) / q_hi))


def binary_renyi(p: float, q: float, orders: ArrayLike = _ORDERS) -> np.ndarray:
    """``D_a(Bern(p) || Bern(q))`` at each order ``a``."""
    a = np.asarray(orders, dtype=np.float64)
    with np.errstate(divide="ignore", invalid="ignore"):
        terms = np.logaddexp(a * np.log(p) + (1 - a) * np.log(q),
                             a * np.log1p(-p) + (1 - a) * np.log1p(-q))
    return np.where(np.isfinite(terms), terms / (a - 1), inf)


def zcdp_lower_bound(a: int, n_a: int, b: int, n_b: int, alpha: float = ALPHA) -> float:
    """``sup_a D_a(Bern(p_lo) || Bern(q_hi)) / a`` (0 when ``p_lo <= q_hi``)."""
    p_lo, _ = clopper_pearson(a, n_a, alpha)
    _, q_hi = clopper_pearson(b, n_b, alpha)
    if not p_lo > q_hi:
        return 0.0
    return float(np.max(binary_renyi(p_lo, q_hi) / _ORDERS))


@dataclass(frozen=True, repr=False)
class EmpiricalAudit:
    """Result of a distinguishing test.

    Attributes
    ----------
    claimed : float
        The claimed budget (``eps``, or ``rho`` for zCDP).
    lower_bound : float
        The ``1 - alpha`` lower bound on the true budget.
    holds : bool
        ``lower_bound <= claimed``: the test found no violation.
    event : str
        The event tested, in words.
    counts : tuple
        ``(a, n_a, b, n_b)``.
    alpha : float
    delta : float
        The ``delta`` of an ``(eps, delta)`` claim (0 for pure LDP).

    Examples
    --------
    A coin that shows heads with probability 3/4 under one input and 1/4
    under the other is ``ln 3``-LDP and no better:

    >>> import numpy as np
    >>> from fastldp.audit import event_test
    >>> def heads(side, size, gen):
    ...     return gen.random(size) < (0.75 if side == 0 else 0.25)
    >>> audit = event_test(heads, np.log(3), n=20_000, rng=0, event="heads")
    >>> audit.holds, round(audit.lower_bound, 1)
    (True, 1.0)
    >>> event_test(heads, 0.5, n=20_000, rng=0).holds
    False
    """

    claimed: float
    lower_bound: float
    holds: bool
    event: str
    counts: tuple
    alpha: float
    delta: float = 0.0

    def __repr__(self) -> str:
        delta = f", delta={self.delta:.3g}" if self.delta else ""
        return one_line(f"EmpiricalAudit(claimed={self.claimed:g}, "
                        f"lower_bound={self.lower_bound:.6g}, holds={self.holds}, "
                        f"counts={self.counts}, alpha={self.alpha:g}{delta}, "
                        f"event={self.event!r})")


def _best_threshold(pilot_x: np.ndarray, pilot_y: np.ndarray, alpha: float, bound):
    """The event ``Y > t`` or ``Y < t`` with the best pilot lower bound (both orientations)."""
    grid = np.unique(np.quantile(np.concatenate([pilot_x, pilot_y]), np.linspace(0.005, 0.995, 61)))
    n1, n2 = pilot_x.shape[0], pilot_y.shape[0]
    best: tuple[float, Any, Any, Any] = (-1.0, None, None, None)
    sx, sy = np.sort(pilot_x), np.sort(pilot_y)
    for t in grid:
        above_x = n1 - np.searchsorted(sx, t, side="right")
        above_y = n2 - np.searchsorted(sy, t, side="right")
        cands = ((">", True, above_x, above_y), ("<=", False, n1 - above_x, n2 - above_y))
        for op, _, cx, cy in cands:
            for swap in (False, True):
                a, b = (cy, cx) if swap else (cx, cy)
                na, nb = (n2, n1) if swap else (n1, n2)
                lb = bound(int(a), na, int(b), nb, alpha)
                if lb > best[0]:
                    best = (lb, float(t), op, swap)
    return best[1:]


def threshold_test(draw: Callable[[int, int, np.random.Generator], np.ndarray], claimed: float,
                   *, n: int = 200_000, pilot: int = 20_000, alpha: float = ALPHA,
                   zcdp: bool = False, rng: Any = 0, delta: float = 0.0) -> EmpiricalAudit:
    """Distinguishing test of two scalar output laws through a threshold event.

    Parameters
    ----------
    draw : callable ``(side, size, generator) -> float array``
        Releases of the mechanism under input ``side`` (0 or 1).
    claimed : float
        ``eps`` (or ``rho`` when ``zcdp``).
    n, pilot : int
        Fresh draws per side for the test, and per side for choosing ``t``.
    alpha : float
        Significance.
    zcdp : bool
        Bound ``rho`` (binary Rényi) instead of ``eps``.
    rng : int or SeedSequence
        Seed of the audit (the audit is reproducible).
    delta : float
        The ``delta`` of an ``(eps, delta)`` claim: the bound is
        ``ln((p_lo - delta) / q_hi)`` (not with ``zcdp``).
    """
    seeds = np.random.SeedSequence(rng).spawn(4)
    gens = [np.random.default_rng(s) for s in seeds]
    pilots = (draw(0, pilot, gens[0]), draw(1, pilot, gens[1]))
    fresh = (draw(0, n, gens[2]), draw(1, n, gens[3]))
    return threshold_test_samples(pilots, fresh, claimed, alpha=alpha, zcdp=zcdp, delta=delta)


def _bound_function(zcdp: bool, delta: float):
    if zcdp:
        return zcdp_lower_bound

    def bound(a, n_a, b, n_b, alpha):
        return epsilon_lower_bound(a, n_a, b, n_b, alpha, delta)
    return bound


def threshold_test_samples(pilots, fresh, claimed: float, *, alpha: float = ALPHA,
                           zcdp: bool = False, delta: float = 0.0,
                           statistic: str = "Y") -> EmpiricalAudit:
    """:func:`threshold_test` on samples already drawn.

    ``pilots`` and ``fresh`` are pairs ``(under x, under x')`` of 1-d arrays
    of one statistic; the event is chosen on ``pilots`` and counted on
    ``fresh`` (which must be independent of ``pilots``). ``statistic`` names
    the statistic in the event's description.
    """
    bound = _bound_function(zcdp, delta)
    t, op, swap = _best_threshold(np.asarray(pilots[0]), np.asarray(pilots[1]), alpha, bound)
    n = np.asarray(fresh[0]).shape[0]
    hits = [int((y > t).sum()) if op == ">" else int((y <= t).sum())
            for y in map(np.asarray, fresh)]
    a, b = (hits[1], hits[0]) if swap else (hits[0], hits[1])
    lb = bound(a, n, b, n, alpha)
    first, second = ("x'", "x") if swap else ("x", "x'")
    event = f"{statistic} {op} {t:.6g}, {first} vs {second}"
    return EmpiricalAudit(float(claimed), lb, bool(lb <= claimed), event, (a, n, b, n), alpha,
                          float(delta))


def detectable_loss(result: EmpiricalAudit, *, zcdp: bool = False) -> float:
    """The smallest log-ratio on the tested event that this test would refute, in expectation.

    Keeps the event's observed probability ``p = a / n`` under the first
    input and asks how small its probability ``q = p e^-r`` under the second
    must be for the counts ``(n p, n q)`` to give a lower bound above the
    claim: the test's resolution on its event. ``inf`` when even ``q = 0``
    would not refute the claim (the event is too rare for ``n`` draws).
    """
    a, n, _, n_b = result.counts
    bound = _bound_function(zcdp, result.delta)
    if a == 0 or not bound(a, n, 0, n_b, result.alpha) > result.claimed:
        return inf
    lo, hi = 0, a                    # bound(a, n, lo) > claim >= bound(a, n, hi)
    if bound(a, n, hi, n_b, result.alpha) > result.claimed:
        return 0.0
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if bound(a, n, mid, n_b, result.alpha) > result.claimed:
            lo = mid
        else:
            hi = mid
    # the largest count under x' that still refutes; its expected log-ratio (half a count at 0)
    return log(a / max(lo, 0.5))


#: confidence of the estimate of an event's log-ratio that :func:`reach` scales
REACH_ALPHA = 0.05


def reach(result: EmpiricalAudit, *, zcdp: bool = False) -> float:
    """The smallest fault the test detects, as a budget multiplier ``k`` (see below).

    A fault "built at ``k eps``, claiming ``eps``" multiplies the privacy
    loss of a tail event by about ``k`` (exactly, for Laplace-type tails;
    for Gaussian-type noise the loss on a fixed tail event grows faster, so
    this overstates the ``k`` needed). With ``L`` a lower confidence bound
    (at ``1 - REACH_ALPHA``) on the log-ratio of the tested event, the test
    refutes the claim, in expectation, once ``k L`` exceeds
    :func:`detectable_loss`: the reach is ``detectable_loss / L``. Taking
    the lower bound rather than the observed ratio keeps the estimate from
    overstating the power when the honest event carries little signal;
    ``inf`` when ``L = 0`` (no signal to scale).
    """
    a, n, b, n_b = result.counts
    observed = epsilon_lower_bound(a, n, b, n_b, REACH_ALPHA)
    if not observed > 0:
        return inf
    return detectable_loss(result, zcdp=zcdp) / observed


def event_test(draw: Callable[[int, int, np.random.Generator], np.ndarray], claimed: float, *,
               n: int = 200_000, alpha: float = ALPHA, rng: Any = 0,
               event: str = "the witness output") -> EmpiricalAudit:
    """Distinguishing test through a fixed event.

    ``draw(side, size, generator)`` returns a boolean array: whether the
    event happened in each release under input ``side``. The event must be
    fixed before the draws (e.g. by the exact law's witness).
    """
    seeds = np.random.SeedSequence(rng).spawn(2)
    a = int(np.count_nonzero(draw(0, n, np.random.default_rng(seeds[0]))))
    b = int(np.count_nonzero(draw(1, n, np.random.default_rng(seeds[1]))))
    lb = epsilon_lower_bound(a, n, b, n, alpha)
    return EmpiricalAudit(float(claimed), lb, bool(lb <= claimed), event, (a, n, b, n), alpha)
