"""What a histogram release guarantees: its result, per-group privacy reports, zCDP to (epsilon, delta).

:meth:`~fastldp.histograms.ShiftedLogGaussian.release` returns the noisy
counts as a plain array (what code written against it expects);
``release_result`` returns the same numbers, bit for bit for the same
``rng``, as a :class:`HistogramRelease` on the shared result base
(:mod:`fastldp.results`): ``.estimate`` (alias ``.counts``), ``.n`` (the
number of groups released), ``.privacy`` (the zCDP budget the release
guarantees to everyone, whatever the data), ``.to_frame()`` and a short
repr. The histograms define no plug-in variance of a released count (the
noise depends on the true count), so ``.variances`` and ``.std`` are
``None``; nothing is received from users, so ``.sanitization`` is ``None``.

:class:`PrivacyReport` is for the data holder: the budget of each group,
which depends on the true counts.
"""

from __future__ import annotations

import csv
import io
import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_float
from ..results import PrivacyStatement, Result
from ._checks import scalar_or_array

__all__ = ["zcdp_epsilon", "PrivacyReport", "HistogramRelease"]


def zcdp_epsilon(rho: ArrayLike, delta: float) -> float | np.ndarray:
    """``epsilon = rho + 2 sqrt(rho log(1/delta))``: rho-zCDP implies (epsilon, delta)-DP.

    Bun and Steinke (2016), Proposition 1.3. ``rho = 0`` gives 0 and
    ``rho = inf`` gives ``inf``.

    Parameters
    ----------
    rho : float or array_like
        zCDP budgets in ``[0, inf]``.
    delta : float
        In ``(0, 1)``.
    """
    delta = check_float(delta, "delta", "zcdp_epsilon", low=0, high=1)
    r = np.asarray(rho, dtype=np.float64)
    if np.any(~(r >= 0)):
        raise ValueError("The 'rho' parameter of zcdp_epsilon must be floats in [0, inf]. "
                         f"Got {rho!r} instead.")
    return scalar_or_array(r + 2 * np.sqrt(r * math.log(1 / delta)))


@dataclass(frozen=True)
class PrivacyReport:
    """What each group of a released histogram gets: budget and expected error.

    Attributes
    ----------
    mechanism : str
        The mechanism that produced it.
    counts : ndarray
        The true counts, one per group.
    rho : ndarray
        ``v(count)``: the zCDP budget of each group's members (and of a person
        who could join the group).
    rho_asymptotic : ndarray
        ``lim_m m^2 v(m) / n^2`` (``1 / (2 sigma^2 n^2)`` for the shifted-log
        Gaussian; ``inf`` at 0; ``nan`` when not given).
    epsilon : ndarray
        The ``(epsilon, delta)``-DP of each group at ``delta``.
    delta : float
    expected_error : ndarray
        ``E|x_hat - x|`` per group.
    error_bound : ndarray
        The target ``r max(x, 1)``.

    Examples
    --------
    >>> from fastldp.histograms import ShiftedLogGaussian
    >>> report = ShiftedLogGaussian(r=0.1).privacy_report([0, 10, 1000])
    >>> bool(report.meets_utility.all()), bool(report.rho[0] > report.rho[2])
    (True, True)
    >>> report.to_csv().splitlines()[0]
    'group,count,rho,rho_asymptotic,epsilon,delta,expected_error,error_bound,meets_utility'
    """

    mechanism: str
    counts: np.ndarray
    rho: np.ndarray
    rho_asymptotic: np.ndarray
    epsilon: np.ndarray
    delta: float
    expected_error: np.ndarray
    error_bound: np.ndarray

    @classmethod
    def build(cls, *, mechanism: str, counts: ArrayLike, rho: ArrayLike,
              expected_error: ArrayLike, error_bound: ArrayLike, delta: float,
              leading_constant: float = math.nan) -> "PrivacyReport":
        """Assemble a report; ``leading_constant`` is ``lim n^2 v(n)`` if known."""
        counts = np.asarray(counts, dtype=np.float64).ravel()
        rho = np.asarray(rho, dtype=np.float64).ravel()
        with np.errstate(divide="ignore"):
            asym = np.where(counts > 0, leading_constant / counts ** 2, np.inf)
        return cls(mechanism=mechanism, counts=counts, rho=rho, rho_asymptotic=asym,
                   epsilon=np.asarray(zcdp_epsilon(rho, delta), dtype=np.float64).ravel(),
                   delta=delta,
                   expected_error=np.asarray(expected_error, dtype=np.float64).ravel(),
                   error_bound=np.asarray(error_bound, dtype=np.float64).ravel())

    def events(self) -> list:
        """Each group's privacy event: ``ZCDpEvent(rho[i])`` (:mod:`fastldp.accounting`).

        The event of a member of group ``i`` (and of a person who could join
        it); a release's event for everyone is ``release.privacy.event()``,
        the worst group's ``rho``.

        Examples
        --------
        >>> from fastldp.histograms import ShiftedLogGaussian
        >>> report = ShiftedLogGaussian(r=0.1).privacy_report([0, 1000])
        >>> [e.rho for e in report.events()] == report.rho.tolist()
        True
        """
        from ..accounting import zcdp_event  # the optional extra, on first use

        return [zcdp_event(float(r)) for r in self.rho]

    @property
    def meets_utility(self) -> np.ndarray:
        """Whether each group's expected error is below its bound."""
        return self.expected_error < self.error_bound

    def rows(self) -> list[dict]:
        """One dict per group."""
        return [
            {"group": i, "count": int(n), "rho": float(p), "rho_asymptotic": float(q),
             "epsilon": float(e), "delta": self.delta, "expected_error": float(err),
             "error_bound": float(b), "meets_utility": bool(err < b)}
            for i, (n, p, q, e, err, b) in enumerate(zip(
                self.counts, self.rho, self.rho_asymptotic, self.epsilon,
                self.expected_error, self.error_bound))
        ]

    def to_csv(self) -> str:
        """The rows as CSV text with a header."""
        rows = self.rows()
        buf = io.StringIO()
        writer = csv.DictWriter(buf, fieldnames=list(rows[0]) if rows else ["group"],
                                lineterminator="\n")
        writer.writeheader()
        writer.writerows(rows)
        return buf.getvalue()

    def __str__(self) -> str:
        head = (f"{'group':>5} {'count':>10} {'rho = v(n)':>12} {'1/(2s^2n^2)':>12} "
                f"{'eps@delta':>10} {'E|err|':>10} {'bound':>10}")
        lines = [self.mechanism, f"(epsilon at delta = {self.delta:g})", head]
        for row in self.rows():
            lines.append(f"{row['group']:>5} {row['count']:>10} {row['rho']:>12.5g} "
                         f"{row['rho_asymptotic']:>12.5g} {row['epsilon']:>10.4g} "
                         f"{row['expected_error']:>10.4g} {row['error_bound']:>10.4g}")
        return "\n".join(lines)


@dataclass(frozen=True, repr=False)
class HistogramRelease(Result):
    """Noisy counts of a central histogram release (a :class:`~fastldp.results.Result`).

    Attributes
    ----------
    counts : float64 array, the shape of the true counts
        The released counts; also ``.estimate`` (the same array).
    n : int
        The number of groups released (public: the true counts are not).
    privacy : fastldp.results.PrivacyStatement
        ``model`` ``"zCDP"``, ``unit`` ``"person"`` (add-or-remove-one),
        ``rho`` the budget every person gets whatever the counts: the
        worst group's, ``v(0)`` for the shifted-log Gaussian, whose members
        of larger groups get less (:meth:`~fastldp.histograms.ShiftedLogGaussian.rho`).
    mechanism : str
        The repr of the mechanism that released it.

    Examples
    --------
    >>> from fastldp.histograms import ShiftedLogGaussian
    >>> mech = ShiftedLogGaussian(r=0.1)
    >>> out = mech.release_result([0, 4, 120, 50_000], rng=1)
    >>> out.estimate is out.counts, out.n, out.privacy.model
    (True, 4, 'zCDP')
    >>> out.privacy.rho == mech.rho(0)
    True
    >>> list(out.to_frame().columns)
    ['index', 'estimate']
    """

    _estimate_field = "counts"

    counts: np.ndarray
    n: int
    privacy: PrivacyStatement
    mechanism: str = ""
