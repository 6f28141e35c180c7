"""Conformance tests: does the protocol's view satisfy the assumptions of its accounting?

An ``(eps, delta)`` lower bound (:mod:`fastldp.audit.empirical`) can only
refute a claim whose violation is visible in ``1 / N`` of the draws. The
shuffle accounting rests on assumptions about the view that are much easier
to test than the claim itself: the noise has the plan's law, the shares are
uniform, the shuffler is a uniform permutation. A violated assumption does
not by itself refute the claim, but it voids the proof of it, and a test of
it has power where a lower bound has none. :mod:`fastldp.audit.shuffle`
says which assumption each test checks for each protocol.

Every statistical test here returns a p-value computed under the assumption
(the *null*); the audit fixes the seed, counts its tests and compares each
p-value with ``ALPHA / (number of tests in the row)`` (Bonferroni), so an
honest protocol fails a row with probability below ``ALPHA = 1e-6``
whatever the dependence between the tests. A deterministic check (an exact
computation on the public parameters) has no p-value and decides by itself.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Optional

import numpy as np
from scipy import stats

from .report import one_line

__all__ = ["Check", "chi2_uniform", "binomial_test", "mean_test", "variance_test"]


@dataclass(frozen=True, repr=False)
class Check:
    """One conformance test or deterministic check of a row.

    Attributes
    ----------
    name : str
        What is tested, in words.
    p_value : float or None
        The p-value under the assumption; ``None`` for a deterministic check.
    passed : bool
        ``p_value > alpha`` (statistical) or the check's own verdict.
    alpha : float
        The significance it was decided at (0 for a deterministic check).
    detail : str
        The statistic and, where it measures one, the size of fault it detects.
    reach : float
        The smallest fault this check detects, as the budget multiplier ``k``
        of a mechanism built at ``k eps`` that claims ``eps`` (``nan`` when
        the check measures another kind of fault).

    Examples
    --------
    >>> from fastldp.audit import Check
    >>> from fastldp.audit.conformance import binomial_test
    >>> check = Check("heads are fair", binomial_test(530, 1000, 0.5), True).decided(1e-3)
    >>> check.passed, check.statistical
    (True, True)
    >>> check
    Check('heads are fair', passed=True, p_value=0.062, alpha=0.001)
    """

    name: str
    p_value: Optional[float]
    passed: bool
    alpha: float = 0.0
    detail: str = ""
    reach: float = math.nan

    @property
    def statistical(self) -> bool:
        """Whether the check is a test with a p-value (not a deterministic check)."""
        return self.p_value is not None

    def __repr__(self) -> str:
        p = "" if self.p_value is None else f", p_value={self.p_value:.3g}"
        alpha = f", alpha={self.alpha:g}" if self.alpha else ""
        reach = "" if self.reach != self.reach else f", reach={self.reach:.3g}"  # NaN: none
        detail = f", detail={self.detail!r}" if self.detail else ""
        return one_line(f"Check({self.name!r}, passed={self.passed}{p}{alpha}{reach}{detail})")

    def decided(self, alpha: float) -> "Check":
        """The check decided at significance ``alpha`` (deterministic checks are unchanged)."""
        if not self.statistical:
            return self
        assert self.p_value is not None  # statistical
        return replace(self, alpha=float(alpha), passed=bool(self.p_value > alpha))


def _two_sided(cdf: float, sf: float) -> float:
    return float(min(1.0, 2.0 * min(cdf, sf)))


def chi2_uniform(counts, expected=None) -> tuple:
    """Pearson's chi-square test of ``counts`` against ``expected`` (default: uniform).

    Returns ``(statistic, p_value)``; upper tail, ``len(counts) - 1`` degrees
    of freedom. Needs every expected count large (the audits use hundreds).
    """
    c = np.asarray(counts, dtype=np.float64)
    total = c.sum()
    e = (np.full(c.shape, total / c.size) if expected is None
         else np.asarray(expected, dtype=np.float64) * (total / np.sum(expected)))
    stat = float(((c - e) ** 2 / e).sum())
    return stat, float(stats.chi2.sf(stat, c.size - 1))


def binomial_test(successes: int, trials: int, p: float) -> float:
    """Exact two-sided binomial p-value of ``successes`` in ``trials`` at probability ``p``."""
    return float(stats.binomtest(int(successes), int(trials), float(p)).pvalue)


def mean_test(residuals, variance: float) -> tuple:
    """``z = sum(r) / sqrt(N variance)`` and its two-sided normal p-value (the mean is 0)."""
    r = np.asarray(residuals, dtype=np.float64)
    z = float(r.sum() / math.sqrt(r.shape[0] * variance))
    return z, _two_sided(stats.norm.cdf(z), stats.norm.sf(z))


def variance_test(residuals, variance: float) -> tuple:
    """``sum(r^2) / variance`` against chi-square with ``N`` degrees of freedom, two-sided.

    Exact for Gaussian residuals of mean 0; the audits use it on sums of
    Skellam noise of variance ``mu ~ 10^5 - 10^6``, whose excess kurtosis
    ``1 / mu`` changes the variance of ``r^2`` by a relative ``1 / (2 mu)``.
    Returns ``(ratio of the sample variance to variance, p_value)``.
    """
    r = np.asarray(residuals, dtype=np.float64)
    s = float((r * r).sum() / variance)
    n = r.shape[0]
    return s / n, _two_sided(stats.chi2.cdf(s, n), stats.chi2.sf(s, n))
