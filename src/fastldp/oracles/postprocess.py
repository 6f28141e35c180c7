"""Consistent frequency estimates: post-processing of any frequency oracle's counts.

An oracle's counts are unbiased, but they are not *consistent*: some are
negative and they need not sum to ``n``, the number of reports. Wang et al.
(2020) compare ways to make them consistent, all of them post-processing
(no privacy is spent). Each function here takes a
:class:`~fastldp.oracles.FrequencyEstimate` (then ``n = est.n``) or a plain
count vector with ``n=`` given, and returns a **new**
:class:`~fastldp.oracles.FrequencyEstimate` (the input is not changed)
whose ``.postprocessing`` names the method (``"base_cut+norm_sub"`` when one
was applied after another) and whose ``.postprocessing_info`` says what it
found. ``.sanitization``, ``.privacy`` and ``.categories`` are kept.

Variances
---------
The post-processed counts are **biased** (towards zero for small counts,
by design), and the plug-in variances of the unbiased estimator do not
describe them: every function sets ``variances=None``, so ``.std`` is
``None`` and ``to_frame()`` has no ``std`` column. Measure the error of a
post-processed estimate against the truth (Wang et al. report MSE), not
with the unbiased variances.

The methods
-----------
With ``c`` the counts, ``D`` their number and ``n`` the total:

===================  ==========================================================  ==============
method               counts                                                      consistency
===================  ==========================================================  ==============
``base_cut``         ``c_v`` where ``c_v >= T_v``, else 0; ``T_v = z std_v``,    ``>= 0``
                     ``z = Phi^{-1}(1 - alpha / D)`` (Wang et al.'s Base-Cut)
``norm_sub``         ``max(c_v + delta, 0)``, ``delta`` such that the sum is     ``>= 0``, ``= n``
                     ``n`` (Norm-Sub)
``norm_mul``         ``max(c_v, 0) n / sum_u max(c_u, 0)`` (Norm-Mul)            ``>= 0``, ``= n``
``norm_cut``         the largest positive ``c_v`` kept while their sum stays     ``>= 0``, ``<= n``
                     ``<= n``, the rest 0 (Norm-Cut)
``project_simplex``  the Euclidean projection onto ``{f >= 0, sum f = n}``       ``>= 0``, ``= n``
                     (Duchi et al. 2008)
``ibu``              the EM estimate of the counts given the oracle's channel    ``>= 0``, ``= n``
                     (iterative Bayesian update)
``power``            the posterior mean of each count under a power-law prior    in ``[1, n]``
                     fitted to the estimate and Gaussian noise (Power)
``power_ns``         ``power``, then ``norm_sub`` (PowerNS)                      ``>= 0``, ``= n``
===================  ==========================================================  ==============

``norm_sub`` and ``project_simplex`` are the same map: the projection is
``max(c - tau, 0)`` with ``tau`` fixed by the sum (its KKT conditions), which
is Norm-Sub with ``delta = -tau`` (Wang et al. show Norm-Sub solves the
constrained least-squares problem). They are computed here by two sorting
algorithms (Norm-Sub by the number of zeroed counts, the projection by
Duchi et al.'s rule) and agree to rounding; the tests check both against a
bisection and each other. Wang et al. recommend Norm-Sub for full-domain
estimates (the default of :func:`postprocess`), Base-Cut for the most
frequent values.

IBU: what is computed
---------------------
:func:`ibu` runs the EM of the symbol distribution ``f`` (Agrawal and
Aggarwal 2001) on the oracle's aggregated statistic ``S`` (positions ``y``),
whose law is :meth:`~fastldp.oracles.FrequencyOracle.count_channel`: a
report of symbol ``x`` adds 1 at ``y`` with probability ``M[y, x]``. With
``w = S / sum(S)`` and ``g(x) = sum_y w(y) M[y, x] / (M f)(y)``, one update is

    ``f'(x) = f(x) g(x)``,

which keeps ``sum f = 1`` and never lowers ``L(f) = sum_y S(y) log (M f)(y)``
(the EM property; :func:`ibu` reports ``L`` as ``log_likelihood``). ``L`` is
concave and its gradient is ``sum(S) g``, with ``sum_x f(x) g(x) = 1``, so

    ``max L - L(f) <= sum(S) (max_x g(x) - 1)``

(the Frank-Wolfe duality gap): :func:`ibu` stops when
``gap = max_x g(x) - 1 <= tol``, a certificate that the log-likelihood is
within ``tol sum(S)`` of its maximum, or after ``max_iter`` updates
(``converged`` is then ``False``), and returns the counts ``n f``. (A rule
on the size of one update, ``max_x |f'(x) - f(x)| <= tol``, is not used: on
a large domain an EM update moves every frequency by less than ``1e-8``
long before the estimate is near the maximum.) What ``S`` is, and whether
``L`` is the exact likelihood:

* **GRR** (an estimate or a partial): ``S`` is the histogram of the reports,
  ``S = c (p - q) + n q`` recovered from the counts. It is a multinomial
  sample of ``M f`` (``p`` on the diagonal, ``q`` elsewhere) and sufficient,
  so ``L`` is the exact log-likelihood and the fixed point is the exact MLE.
* **Hadamard response, from a partial** (``ibu(hr.partial(reports),
  oracle=hr)``): ``S`` is the histogram of the ``K`` columns, multinomial
  with ``M[y, x] = 2 e^eps / (K (e^eps + 1))`` where ``H_K[x + 1, y] = 1``,
  ``2 / (K (e^eps + 1))`` elsewhere: the exact MLE again, at
  ``O(K log K)`` per update (two fast Walsh-Hadamard transforms). A
  :class:`~fastldp.oracles.FrequencyEstimate` keeps only ``D`` of the
  ``K - 1`` Hadamard coefficients of that histogram, so from an estimate
  HR takes the next route.
* **OUE, SUE, OLH and HR from an estimate** (and every oracle whose
  :meth:`~fastldp.oracles.FrequencyOracle.count_channel` is ``"symmetric"``
  and not ``exact``): ``S(v)`` is the number of reports that *support*
  ``v`` (bit ``v`` set; ``H_i(v) = y_i``; ``y_i`` in ``v``'s half of the
  columns), ``S = c (p - q) + n q``, with ``E[S(v)] = n (q + (p - q) f(v))``.
  A report supports several symbols, so ``S`` is not a multinomial sample:
  ``L`` is the composite likelihood that treats the ``sum(S)`` support
  events as independent draws from the column-normalized ``M``. This is the
  aggregated-count IBU of multi-freq-ldpy (``A = p I + q (1 - I)``,
  ``obs = S / sum S``). It is **not** the exact MLE, which needs every
  report (for unary encoding, the likelihood of report ``y`` is
  proportional to ``1 + (e^eps - 1) sum_{v in y} f(v)``).

For a symmetric channel the maximizer has a closed form: maximizing
``sum_v w(v) log(q + (p - q) f(v))`` on the simplex gives
``f(v) = max(w(v) / lam - q / (p - q), 0)`` with ``lam`` fixed by
``sum f = 1`` (KKT, one sort; for GRR the estimator of Pinzon et al.). It
is the limit of the EM from any interior start (``L`` is strictly concave
in the ``f(v)`` with ``S(v) > 0``), and the EM from the uniform start gets
there slowly on a large domain: for OUE at ``D = 4096``, ``eps = 1`` and
``n = 10^5`` (Zipf data), 10,000 updates leave a duality gap of ``4e-5`` and
an MSE 17 times the maximizer's, while no update moves a frequency by more
than ``2e-8``. So by default
(``start="auto"``) :func:`ibu` starts there, and the EM checks the duality
gap (0 updates when it is already below ``tol``); ``start="uniform"`` is the
textbook start. For Hadamard response's columns it starts from the same
closed form on the support counts (the composite maximizer) and climbs to
the exact MLE. The plain EM climbs slowly on a large domain: at
``D = 4096`` (``K = 8192``), ``eps = 1``, ``n = 10^5`` (Zipf data),
10,000 updates take about 1.5 s and stop at a gap of ``2e-4``
(``converged`` is ``False``).

IBU: the accelerator
--------------------
By default (``accelerate=True``) the EM is accelerated by SQUAREM
(Varadhan and Roland 2008, scheme S3): from ``f0``, two EM updates
``f1 = F(f0)``, ``f2 = F(f1)``, ``r = f1 - f0``, ``v = f2 - 2 f1 + f0``,
the step ``a = ||r|| / ||v||`` clipped to ``[1, step_max]``, the
extrapolation ``f0 + 2 a r + a^2 v`` projected (Euclidean) onto the
simplex with every frequency kept at least 1% of its value in ``f0`` (so
that the multiplicative update can revive it), and one EM update from
there. That point is kept when its log-likelihood is at least ``L(f0)``;
otherwise the cycle falls back to the plain EM iterate ``f2`` and the cap
``step_max`` shrinks below the rejected step (it starts at 1 and grows
fourfold after each accepted step at the cap). The fixed points are the
EM's, the stopping rule is the same duality gap ``max_x g(x) - 1 <= tol``
at the returned point, and every evaluation of ``g`` (one ``M f`` and one
``M^T r``, what one plain update costs) counts as an update against
``max_iter`` and in the reported ``iterations``. For Hadamard response's
columns the accelerated run starts from the composite maximizer mixed half
and half with the uniform distribution (a symbol starting near zero grows
only by the factor ``g(x)`` per update). In the example above it converges
after 971 evaluations, in about 0.3 s on a loaded machine; from the uniform
start, GRR, OUE and OLH at ``D = 4096`` converge after 351, 103 and 139
evaluations (the plain EM is unconverged after 10,000). ``accelerate=False``
is the plain EM, update for update.

IBU needs reports at one budget (one channel): an estimate with personal
budgets is refused.

Examples
--------
>>> import numpy as np
>>> from fastldp import GRR
>>> from fastldp.oracles import postprocess
>>> grr = GRR(domain_size=4, epsilon=1.0, codebook_seed=0)
>>> est = grr.estimate(grr.privatize(np.repeat([0, 1, 2, 3], [600, 300, 100, 0]), rng=0))
>>> fixed = postprocess.norm_sub(est)
>>> bool((fixed.counts >= 0).all()), float(round(fixed.counts.sum(), 6)), fixed.std is None
(True, 1000.0, True)
>>> fixed.postprocessing, est.postprocessing
('norm_sub', None)
>>> mle = postprocess.ibu(est, oracle=grr)
>>> mle.postprocessing_info["converged"], mle.postprocessing_info["likelihood"]
(True, 'exact')

References
----------
.. [1] T. Wang, M. Lopuhaa-Zwakenberg, Z. Li, B. Skoric, N. Li, "Locally
   differentially private frequency estimation with consistency", NDSS
   2020 (Base-Cut, Norm-Sub, Norm-Mul, Norm-Cut; Norm-Sub as constrained
   least squares).
.. [2] J. Duchi, S. Shalev-Shwartz, Y. Singer, T. Chandra, "Efficient
   projections onto the l1-ball for learning in high dimensions", ICML 2008
   (the sorting projection onto the simplex, Figure 1).
.. [3] R. Agrawal, C. Aggarwal, "On the design and quantification of privacy
   preserving data mining algorithms", PODS 2001 (the iterative Bayesian
   update).
.. [4] E. ElSalamouny, C. Palamidessi, "Generalized iterative Bayesian
   update and applications to mechanisms for privacy protection", EuroS&P
   2020.
.. [5] P. Kairouz, K. Bonawitz, D. Ramage, "Discrete distribution estimation
   under local privacy", ICML 2016 (normalization by scaling).
.. [6] H. Arcolezi et al., multi-freq-ldpy (``estimators.IBU`` and the
   oracles' ``*_Aggregator_IBU``: the aggregated-count IBU).
.. [7] Pinzon et al., "Estimating the true distribution of data collected with
   randomized response", AAAI 2026, as multi-freq-ldpy cites it (its ``MLE``:
   the closed-form maximum-likelihood estimate for GRR).
.. [8] R. Varadhan, C. Roland, "Simple and globally convergent methods for
   accelerating the convergence of any EM algorithm", Scand. J. Statist. 35
   (2008) 335-353 (SQUAREM; the S3 step and its safeguards as in the
   ``SQUAREM`` R package).
"""

from __future__ import annotations

import dataclasses
import math
import numbers
from statistics import NormalDist
from typing import Any, Callable, Optional, Union

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._hadamard import fwht
from .._validation import check_float, check_int, param_error
from ..results import PrivacyStatement
from ..streaming import Partial
from ._base import CountChannel, FrequencyEstimate, FrequencyOracle

__all__ = ["METHODS", "base_cut", "norm_sub", "norm_mul", "norm_cut", "project_simplex", "ibu",
           "power", "power_ns", "postprocess"]

#: the post-processing methods, by the name :func:`postprocess` takes
METHODS = ("base_cut", "norm_sub", "norm_mul", "norm_cut", "project_simplex", "ibu", "power",
           "power_ns")

EstimateLike = Union[FrequencyEstimate, ArrayLike]


class _Shown(str):
    """A description shown as is in an error message (no quotes)."""

    def __repr__(self) -> str:
        return str(self)


# ------------------------------------------------------------------ inputs and outputs
def _check_total(n: Any, owner: str) -> Union[int, float]:
    expected = "a finite number >= 0 (the total the consistent counts sum to)"
    if isinstance(n, (bool, np.bool_)) or not isinstance(n, numbers.Real):
        raise param_error("n", owner, expected, n, TypeError)
    value = float(n)
    if not (math.isfinite(value) and value >= 0):
        raise param_error("n", owner, expected, n)
    return int(value) if value.is_integer() else value


def _resolve(est: Any, n: Any, owner: str) -> tuple[np.ndarray, Union[int, float],
                                                      Optional[FrequencyEstimate]]:
    """The counts, the total and the estimate they came from (``None`` for a plain vector)."""
    if isinstance(est, FrequencyEstimate):
        if n is not None and _check_total(n, owner) != est.n:
            raise param_error("n", owner, f"left out, or the estimate's own n ({est.n})", n)
        counts = np.asarray(est.counts, dtype=np.float64)
        return counts, est.n, est
    if n is None:
        raise param_error("n", owner, "given with a plain count vector (the total the "
                          "consistent counts sum to; a FrequencyEstimate carries its own)", None)
    total = _check_total(n, owner)
    expected = "a FrequencyEstimate or a 1-d array of finite counts"
    try:
        counts = np.array(est, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error("est", owner, expected, est, TypeError) from None
    if counts.ndim != 1 or counts.shape[0] == 0:
        raise param_error("est", owner, expected, _Shown(f"an array of shape {counts.shape}"))
    if not np.isfinite(counts).all():
        i = int(np.flatnonzero(~np.isfinite(counts))[0])
        raise ValueError(f"The 'est' parameter of {owner} must be {expected}. "
                         f"Got {float(counts[i])!r} at index {i} instead.")
    return counts, total, None


def _result(counts: np.ndarray, total: Union[int, float], source: Optional[FrequencyEstimate],
            method: str, info: dict[str, Any], privacy: Optional[PrivacyStatement] = None
            ) -> FrequencyEstimate:
    """A new estimate with the consistent counts, no variances, and the method's name."""
    counts = np.ascontiguousarray(counts, dtype=np.float64)
    if source is not None:
        name = method if source.postprocessing is None else f"{source.postprocessing}+{method}"
        return dataclasses.replace(source, counts=counts, variances=None, postprocessing=name,
                                   postprocessing_info=info)
    return FrequencyEstimate(counts, None, None, total,  # type: ignore[arg-type]
                             privacy if privacy is not None else PrivacyStatement.local(),
                             None, method, info)


# ------------------------------------------------------------------ the cuts and normalizations
def base_cut(est: EstimateLike, *, n: Any = None, threshold: Optional[ArrayLike] = None,
             alpha: float = 0.05) -> FrequencyEstimate:
    """Base-Cut: zero every count below its significance threshold (Wang et al. 2020).

    ``c'_v = c_v`` where ``c_v >= T_v`` and ``c_v > 0``, else 0, with the
    Bonferroni-corrected significance threshold

        ``T_v = Phi^{-1}(1 - alpha / D) std_v``,

    ``Phi`` the standard normal CDF: a count is kept when it is significantly
    above zero at level ``alpha`` over the ``D`` tests. Wang et al. use one
    ``std`` for every value (their estimators' variance, nearly the same for
    all values); here ``std_v`` is the estimate's own plug-in standard
    deviation of count ``v`` (``est.std``), which at a count ``<= 0`` is the
    null standard deviation exactly and above zero adds the holders' term.

    Parameters
    ----------
    est : FrequencyEstimate or array_like, shape (D,)
        The counts (a plain vector needs ``n`` and ``threshold``).
    n : number, optional
        The total, for a plain vector (an estimate has its own ``n``).
    threshold : float or array_like, shape (D,), optional
        ``T`` in counts, instead of the significance threshold;
        ``threshold=0`` zeroes the negative counts only (Base-Pos). Needed
        when ``est`` has no variances (a plain vector, or an estimate
        already post-processed).
    alpha : float in (0, 1)
        Significance level before the Bonferroni correction.

    Returns
    -------
    FrequencyEstimate
        Counts ``>= 0`` (their sum is not fixed), ``variances=None``,
        ``postprocessing="base_cut"``; ``postprocessing_info`` holds
        ``alpha`` and ``z`` (``None`` with an explicit ``threshold``),
        ``kept`` (how many counts are not zero) and ``threshold`` when it is
        one number.
    """
    owner = "base_cut"
    counts, total, source = _resolve(est, n, owner)
    D = counts.shape[0]
    info: dict[str, Any] = {}
    if threshold is None:
        alpha = check_float(alpha, "alpha", owner, low=0.0, high=1.0)
        std = None if source is None else source.std
        if std is None:
            raise param_error("threshold", owner, "given when the estimate has no variances "
                              "(a plain count vector, or an estimate already post-processed)",
                              None)
        z = NormalDist().inv_cdf(1.0 - alpha / D)
        T = z * np.asarray(std, dtype=np.float64)
        info.update(alpha=alpha, z=z)
    else:
        T = np.array(threshold, dtype=np.float64)
        if not (T.ndim == 0 or T.shape == (D,)) or not (np.isfinite(T).all() and (T >= 0).all()):
            raise param_error("threshold", owner,
                              f"a finite number >= 0 or an array of {D} of them", threshold)
        info.update(alpha=None, z=None)
        if T.ndim == 0:
            info["threshold"] = float(T)
    keep = (counts >= T) & (counts > 0)
    info["kept"] = int(keep.sum())
    return _result(np.where(keep, counts, 0.0), total, source, "base_cut", info)


def norm_sub(est: EstimateLike, *, n: Any = None) -> FrequencyEstimate:
    """Norm-Sub: ``c'_v = max(c_v + delta, 0)`` with ``delta`` such that ``sum c' = n``.

    ``g(delta) = sum_v max(c_v + delta, 0)`` is continuous, piecewise
    linear and increasing where positive, so ``g(delta) = n`` has one
    solution for ``n > 0``. With the counts sorted ascending
    (``s_0 <= ... <= s_{D-1}``), ``g(-s_j) = sum_{i > j} (s_i - s_j)``
    falls as ``j`` grows; the smallest ``j`` with ``g(-s_j) <= n`` is the
    number of counts that end at zero, and
    ``delta = (n - sum_{i >= j} s_i) / (D - j)``: one sort, ``O(D log D)``.
    This is Wang et al.'s Norm-Sub (2020), and the Euclidean projection onto
    ``{f >= 0, sum f = n}`` (:func:`project_simplex`: the two agree to
    rounding). ``n = 0`` gives zeros.

    Parameters
    ----------
    est : FrequencyEstimate or array_like, shape (D,)
    n : number, optional
        The total, for a plain vector.

    Returns
    -------
    FrequencyEstimate
        Counts ``>= 0`` summing to ``n`` (to rounding), ``variances=None``,
        ``postprocessing="norm_sub"``; ``postprocessing_info["delta"]`` is
        ``delta``.
    """
    counts, total, source = _resolve(est, n, "norm_sub")
    D = counts.shape[0]
    if total == 0:
        return _result(np.zeros(D), total, source, "norm_sub",
                       {"delta": -float(counts.max())})
    s = np.sort(counts)
    tail = np.cumsum(s[::-1])[::-1]  # tail[j] = sum_{i >= j} s_i
    g = tail - (D - np.arange(D)) * s  # g(-s_j) = sum_{i >= j} (s_i - s_j)
    j = int(np.flatnonzero(g <= total)[0])  # g(-s_{D-1}) = 0 <= total: always found
    delta = (total - tail[j]) / (D - j)
    return _result(np.maximum(counts + delta, 0.0), total, source, "norm_sub",
                   {"delta": float(delta)})


def norm_mul(est: EstimateLike, *, n: Any = None) -> FrequencyEstimate:
    """Norm-Mul: zero the negative counts, then scale the rest to sum to ``n``.

    ``c'_v = max(c_v, 0) n / sum_u max(c_u, 0)`` (Kairouz et al. 2016; Wang
    et al. 2020's Norm-Mul). When no count is positive the scale is
    undefined and the counts become uniform, ``n / D`` each (what every
    method gives for equal counts).

    Parameters
    ----------
    est : FrequencyEstimate or array_like, shape (D,)
    n : number, optional
        The total, for a plain vector.

    Returns
    -------
    FrequencyEstimate
        Counts ``>= 0`` summing to ``n`` (to rounding), ``variances=None``,
        ``postprocessing="norm_mul"``; ``postprocessing_info`` holds
        ``scale`` (``None`` for the uniform fallback) and ``uniform``.
    """
    counts, total, source = _resolve(est, n, "norm_mul")
    pos = np.maximum(counts, 0.0)
    mass = float(pos.sum())
    if mass > 0:
        scale = total / mass
        return _result(pos / mass * total, total, source, "norm_mul",
                       {"scale": scale, "uniform": False})
    D = counts.shape[0]
    return _result(np.full(D, total / D), total, source, "norm_mul",
                   {"scale": None, "uniform": True})


def norm_cut(est: EstimateLike, *, n: Any = None) -> FrequencyEstimate:
    """Norm-Cut: keep the largest positive counts while their sum stays ``<= n``; zero the rest.

    Wang et al. (2020): the smallest ``theta > 0`` such that
    ``sum_{v: c_v >= theta} c_v <= n``, then ``c'_v = c_v`` where
    ``c_v >= theta`` and 0 elsewhere. Equal counts are kept or cut together
    (the result does not depend on the order of the symbols). When the
    positive counts sum to at most ``n`` they are all kept: the sum is then
    below ``n``, since Norm-Cut only removes mass.

    Parameters
    ----------
    est : FrequencyEstimate or array_like, shape (D,)
    n : number, optional
        The total, for a plain vector.

    Returns
    -------
    FrequencyEstimate
        Counts ``>= 0`` summing to at most ``n``, ``variances=None``,
        ``postprocessing="norm_cut"``; ``postprocessing_info`` holds
        ``theta`` (``None`` when nothing is kept) and ``kept``.
    """
    counts, total, source = _resolve(est, n, "norm_cut")
    u = np.sort(counts[counts > 0])[::-1]  # positive counts, largest first
    cum = np.cumsum(u)
    group_end = np.append(u[1:] != u[:-1], True) if u.shape[0] else np.zeros(0, dtype=bool)
    ends = np.flatnonzero(group_end & (cum <= total))
    if ends.shape[0] == 0:
        return _result(np.zeros_like(counts), total, source, "norm_cut",
                       {"theta": None, "kept": 0})
    theta = float(u[ends[-1]])
    keep = counts >= theta  # theta > 0
    return _result(np.where(keep, counts, 0.0), total, source, "norm_cut",
                   {"theta": theta, "kept": int(keep.sum())})


def project_simplex(est: EstimateLike, *, n: Any = None) -> FrequencyEstimate:
    """The Euclidean projection of the counts onto ``{f >= 0, sum f = n}``.

    Duchi et al. (2008, Figure 1): with ``u`` the counts sorted descending,
    ``rho = max{j : u_j - (sum_{r <= j} u_r - n) / j > 0}`` and
    ``tau = (sum_{r <= rho} u_r - n) / rho``, the projection is
    ``f_v = max(c_v - tau, 0)``. It minimizes ``||f - c||_2`` over the
    scaled simplex; its KKT conditions are ``c_v - f_v = tau`` where
    ``f_v > 0`` and ``c_v <= tau`` where ``f_v = 0``. It is Norm-Sub with
    ``delta = -tau`` (:func:`norm_sub`, computed by another sort: the two
    agree to rounding). ``n = 0`` gives zeros.

    Parameters
    ----------
    est : FrequencyEstimate or array_like, shape (D,)
    n : number, optional
        The total, for a plain vector.

    Returns
    -------
    FrequencyEstimate
        Counts ``>= 0`` summing to ``n`` (to rounding), ``variances=None``,
        ``postprocessing="project_simplex"``; ``postprocessing_info`` holds
        ``tau`` and ``support`` (``rho``, the number of positive counts).
    """
    counts, total, source = _resolve(est, n, "project_simplex")
    if total == 0:
        return _result(np.zeros_like(counts), total, source, "project_simplex",
                       {"tau": float(counts.max()), "support": 0})
    u = np.sort(counts)[::-1]
    css = np.cumsum(u) - total
    j = np.arange(1, u.shape[0] + 1)
    ok = np.flatnonzero(u - css / j > 0)  # j = 1 qualifies (n > 0), unless n rounds away
    rho = int(ok[-1]) + 1 if ok.shape[0] else 1
    tau = css[rho - 1] / rho
    return _result(np.maximum(counts - tau, 0.0), total, source, "project_simplex",
                   {"tau": float(tau), "support": rho})


# ------------------------------------------------------------------ Power and Power-Ns
def _power_mean(alpha: float, x: np.ndarray, log_x: np.ndarray) -> float:
    """The mean ``sum_x x^(1 - alpha) / sum_x x^(-alpha)`` of the power law on ``x``."""
    w = np.exp(-alpha * (log_x - log_x[-1]))  # scaled by N^alpha: no overflow
    return float((x @ w) / w.sum())


def _power_law_exponent(mean: float, N: int) -> float:
    """``alpha >= 1`` whose power law ``P(x) ~ x^(-alpha)`` on ``{1..N}`` has this mean.

    The power-law mean falls from ``N / H_N`` at ``alpha = 1`` towards 1, so
    the root is unique: found by Brent's method to ``1e-12``. A mean of at
    least ``N / H_N`` gives 1; a mean below 1 gives 1.01 (the authors'
    code's rule).
    """
    from scipy.optimize import brentq

    if mean < 1.0:
        return 1.01
    x = np.arange(1.0, N + 1.0)
    log_x = np.log(x)
    if mean >= _power_mean(1.0, x, log_x):
        return 1.0
    hi = 2.0
    while _power_mean(hi, x, log_x) > mean:
        hi *= 2.0
    return float(brentq(lambda a: _power_mean(a, x, log_x) - mean, 1.0, hi, xtol=1e-12,
                        rtol=1e-14))


def _posterior_means(values: np.ndarray, alpha: float, sigma: float, N: int) -> np.ndarray:
    """``E[x | c] = sum_x x^(1-alpha) phi((c-x)/sigma) / sum_x x^(-alpha) phi((c-x)/sigma)``.

    Over ``x`` in ``{1..N}``, summed on the window of ``2h + 1`` integers
    around ``x0 = clip(c, 1, N)`` with ``h = ceil(K sigma) + 1``,
    ``K = sqrt(2 ((alpha + 1) ln N + 40))``: a term outside it is at most
    ``N^alpha e^(-K^2 / 2)`` times the term at ``x0`` (the prior ratio times
    the likelihood ratio, ``(c - x)^2 - (c - x0)^2 >= (x - x0)^2`` there),
    so the ``< N`` left out weigh less than ``e^-40`` of the sums.
    """
    K = math.sqrt(2.0 * ((alpha + 1.0) * math.log(max(N, 2)) + 40.0))
    half = int(math.ceil(K * sigma)) + 1
    L = min(N, 2 * half + 1)
    offsets = np.arange(L)
    log_prior = -alpha * np.log(np.arange(1.0, N + 1.0))  # once, indexed by x - 1
    out = np.empty(values.shape[0])
    rows = max(1, 4_000_000 // L)
    for start in range(0, values.shape[0], rows):
        c = values[start:start + rows]
        x0 = np.clip(np.rint(c), 1.0, float(N))
        lo = np.clip(x0 - half, 1.0, float(N - L + 1)).astype(np.int64)
        index = (lo - 1)[:, None] + offsets[None, :]
        x = index + 1.0
        logw = log_prior[index] - (c[:, None] - x) ** 2 / (2.0 * sigma * sigma)
        w = np.exp(logw - logw.max(axis=1, keepdims=True))
        out[start:start + rows] = (w * x).sum(axis=1) / w.sum(axis=1)
    return out


def _power_counts(est: Any, n: Any, variance: Any, owner: str
                  ) -> tuple[np.ndarray, Union[int, float], Optional[FrequencyEstimate],
                             dict[str, Any]]:
    counts, total, source = _resolve(est, n, owner)
    if variance is None:
        if source is None or source.variances is None:
            raise param_error("variance", owner, "given (the variance of a count; a "
                              "FrequencyEstimate with variances supplies their mean)", None)
        variance = float(np.mean(source.variances))
    variance = check_float(variance, "variance", owner, low=0.0)
    N = int(math.floor(total))
    if N < 1:
        return np.zeros_like(counts), total, source, {"alpha": None, "variance": variance}
    alpha = _power_law_exponent(float(np.mean(counts)), N)
    uniq, inverse = np.unique(counts, return_inverse=True)
    means = _posterior_means(uniq, alpha, math.sqrt(variance), N)
    return means[inverse.reshape(-1)], total, source, {"alpha": alpha, "variance": variance}


def power(est: EstimateLike, *, n: Any = None, variance: Optional[float] = None
          ) -> FrequencyEstimate:
    """Power: each count replaced by its mean under a fitted power-law prior (Wang et al. 2020).

    Wang et al.'s *Power*, as the authors' code computes it
    (``post-process/power.py`` of github.com/vvv214/LDP_Protocols; the
    paper's own text was not reachable when this was written): a power law
    ``P(x) ~ x^(-alpha)`` on the counts ``x = 1, ..., N`` (``N = floor(n)``)
    is fitted to the estimate by its mean (``alpha >= 1`` such that
    ``sum_x x^(1 - alpha) / sum_x x^(-alpha)`` equals the mean of the
    counts; 1.01 when that mean is below 1), and each count ``c_v``, read
    as ``x + N(0, sigma^2)`` with one variance ``sigma^2`` for every value,
    is replaced by the posterior mean

        ``c'_v = sum_x x^(1 - alpha) phi((c_v - x) / sigma)
        / sum_x x^(-alpha) phi((c_v - x) / sigma)``.

    Every ``c'_v`` is in ``[1, N]``; their sum is not ``n``
    (:func:`power_ns` makes it so). Differences from the authors' code: the
    exponent is solved to ``1e-12`` (theirs bisects to a mean within 0.01),
    and the sums are exact over a window that provably holds all but
    ``e^-40`` of them (theirs rounds each count to a multiple of 10 and sums
    ``x`` within 25,000 of it). Equal counts are computed once.

    Parameters
    ----------
    est : FrequencyEstimate or array_like, shape (D,)
    n : number, optional
        The total, for a plain vector.
    variance : float > 0, optional
        ``sigma^2``, the variance of one count. Default: the mean of the
        estimate's variances (Wang et al. use the oracle's variance, one
        for every value); required with a plain vector.

    Returns
    -------
    FrequencyEstimate
        Counts in ``[1, N]`` (zeros when ``N < 1``), ``variances=None``,
        ``postprocessing="power"``; ``postprocessing_info`` holds ``alpha``
        and ``variance``.

    Examples
    --------
    >>> import numpy as np
    >>> out = power(np.array([40.0, 5.0, -3.0, 0.0]), n=42, variance=4.0)
    >>> bool((out.counts >= 1).all() and out.counts[0] > out.counts[1] > out.counts[3])
    True
    """
    counts, total, source, info = _power_counts(est, n, variance, "power")
    return _result(counts, total, source, "power", info)


def power_ns(est: EstimateLike, *, n: Any = None, variance: Optional[float] = None
             ) -> FrequencyEstimate:
    """Power-Ns: :func:`power`, then :func:`norm_sub` (Wang et al. 2020's PowerNS).

    The authors' ``power_ns.py`` applies their Norm-Sub to the counts it is
    given; that it is given Power's output is our reading of the name (the
    code that chains them, like the paper's text, was not reachable here).
    Consistent: counts ``>= 0`` summing to ``n``. ``postprocessing_info``
    holds ``alpha`` and ``variance`` (Power's) and ``delta`` (Norm-Sub's).

    Parameters
    ----------
    est : FrequencyEstimate or array_like, shape (D,)
    n : number, optional
        The total, for a plain vector.
    variance : float > 0, optional
        As for :func:`power`.

    Returns
    -------
    FrequencyEstimate
        ``postprocessing="power_ns"``.
    """
    counts, total, source, info = _power_counts(est, n, variance, "power_ns")
    fixed = norm_sub(counts, n=total)
    assert fixed.postprocessing_info is not None
    info["delta"] = fixed.postprocessing_info["delta"]
    return _result(fixed.counts, total, source, "power_ns", info)


# ------------------------------------------------------------------ iterative Bayesian update
def _statistic_slack(total: float) -> float:
    """How far below zero a recovered support count may round (relative to ``n``)."""
    return 1e-9 * (float(total) + 1.0)


def _symmetric_mle(w: np.ndarray, p: float, q: float) -> np.ndarray:
    """The maximizer of ``sum_v w_v log(q + (p - q) f_v)`` over the simplex (``p > q > 0``).

    KKT: ``f_v = max(w_v / lam - c, 0)`` with ``c = q / (p - q)``; on the
    interval of ``lam`` where the top ``k`` weights are active,
    ``sum f = 1`` gives ``lam_k = W_k / (1 + k c)`` (``W_k`` the sum of the
    ``k`` largest ``w``). The condition ``w_(k) > c lam_k`` holds for a
    prefix of ``k``; its last ``k`` is the support. One sort,
    ``O(D log D)``; the maximizer is unique (the objective is strictly
    concave in every ``f_v`` with ``w_v > 0``, and ``f_v = 0`` where
    ``w_v = 0``).
    """
    c = q / (p - q)
    order = np.argsort(-w, kind="stable")
    u = w[order]
    k = np.arange(1, u.shape[0] + 1)
    lam = np.cumsum(u) / (1.0 + k * c)
    ok = np.flatnonzero((u > c * lam) & (u > 0))  # k = 1 qualifies: u_(1) > 0
    rho = int(ok[-1]) + 1 if ok.shape[0] else 1
    f = np.maximum(w / lam[rho - 1] - c, 0.0)
    f[w <= 0] = 0.0
    out: np.ndarray = f / f.sum()
    return out


def _em(channel: CountChannel, stat: np.ndarray, f: np.ndarray, tol: float, max_iter: int
        ) -> tuple[np.ndarray, int, bool, float, float]:
    """EM updates from ``f`` until the duality gap is at most ``tol`` (module docstring).

    Returns ``(f, updates, converged, gap, change)``: ``gap = max_x g(x) - 1``
    at the returned ``f``, ``change`` the largest move of the last update.
    """
    w = stat / stat.sum()
    f = f / f.sum()
    change, updates = 0.0, 0
    symmetric = channel.kind == "symmetric"
    p, q = channel.p, channel.q
    while True:
        if symmetric:  # O(D): g = q R + (p - q) r, r = w / (q + (p - q) f), R = sum r
            r = w / (q + (p - q) * f)
            g = (p - q) * r
            g += q * r.sum()
        else:
            m = channel.forward(f)
            with np.errstate(divide="ignore", invalid="ignore"):
                r = np.where(w > 0, w / m, 0.0)
            g = channel.adjoint(r)
        gap = max(float(g.max()) - 1.0, 0.0)
        if gap <= tol:
            return f, updates, True, gap, change
        if updates == max_iter:
            return f, updates, False, gap, change
        nxt = np.maximum(f * g, 0.0)
        nxt /= nxt.sum()
        change = float(np.abs(nxt - f).max())
        f = nxt
        updates += 1


#: SQUAREM's step-length safeguards (Varadhan and Roland 2008; the ``SQUAREM`` package's
#: defaults): the step ``a`` is at least 1 (a plain pair of EM updates) and at most
#: ``step_max``, which starts at 1, is multiplied by ``_STEP_FACTOR`` when a step at the cap is
#: accepted and divided by it (not below 1) when one is rejected
_STEP_FACTOR = 4.0
#: an extrapolated iterate is projected onto the simplex with every frequency kept at least
#: this fraction of its value at the start of the cycle (so the EM can revive any of them)
_KEEP = 0.01


def _evaluate(channel: CountChannel, w: np.ndarray, hit: np.ndarray, f: np.ndarray,
              likelihood: bool = True) -> tuple[np.ndarray, float]:
    """One evaluation at ``f``: ``g = M^T (w / M f)`` and ``L(f) / sum(S) = sum_y w log (M f)``.

    (``-inf`` when ``(M f)(y) = 0`` at some ``w(y) > 0``.)
    """
    m = channel.forward(f)
    with np.errstate(divide="ignore", invalid="ignore"):
        r = np.where(hit, w / m, 0.0)
        ll = float(np.sum(w[hit] * np.log(m[hit]))) if likelihood else math.nan
    if likelihood and not math.isfinite(ll):
        ll = -math.inf
    return channel.adjoint(r), ll


def _project_above(x: np.ndarray, low: np.ndarray) -> np.ndarray:
    """The Euclidean projection of ``x`` onto ``{f >= low, sum f = 1}`` (``sum low < 1``).

    ``low + P(x - low)`` with ``P`` the projection onto ``{y >= 0, sum y = 1 - sum low}``
    (Duchi et al.'s sort, as in :func:`project_simplex`).
    """
    y = x - low
    total = 1.0 - float(low.sum())
    u = np.sort(y)[::-1]
    css = np.cumsum(u) - total
    j = np.arange(1, u.shape[0] + 1)
    ok = np.flatnonzero(u - css / j > 0)
    rho = int(ok[-1]) + 1 if ok.shape[0] else 1
    out = low + np.maximum(y - css[rho - 1] / rho, 0.0)
    out /= out.sum()
    return out


def _squarem(channel: CountChannel, stat: np.ndarray, f: np.ndarray, tol: float,
             max_iter: int) -> tuple[np.ndarray, int, bool, float, float]:
    """The EM of :func:`_em`, accelerated by SQUAREM (scheme S3, Varadhan and Roland 2008).

    One cycle from ``f0`` (where ``g0`` is known): ``f1 = F(f0)``,
    ``f2 = F(f1)`` (``F(f) = f g / sum(f g)``, the EM map), ``r = f1 - f0``,
    ``v = f2 - 2 f1 + f0``, the step ``a = ||r|| / ||v||`` clipped to
    ``[1, step_max]``, the extrapolation ``f0 + 2 a r + a^2 v`` projected
    onto the simplex (:func:`_project_above`, with ``_KEEP``), then one EM
    update from it (the stabilization step). The result is kept when its
    log-likelihood is at least ``L(f0)``; otherwise the cycle falls back to
    the plain EM iterate ``f2``. With ``a = 1`` the extrapolation is ``f2``
    itself (two plain updates). The fixed points are those of the EM, and
    the stopping rule is the same: the duality gap ``max_x g(x) - 1 <= tol``
    at a returned point where ``g`` was evaluated.

    Every evaluation of ``g`` after the one at the start (each costs what
    one plain EM update does: one ``M f`` and one ``M^T r``) counts as an
    update against ``max_iter``: a cycle costs 2 (``a = 1``), 3 (accepted)
    or 4 (rejected). Returns ``(f, updates, converged, gap, change)`` as
    :func:`_em` does, ``change`` the largest move from the previous returned
    candidate.
    """
    total = stat.sum()
    w = stat / total
    hit = w > 0
    slack = 1e-12
    f0 = f / f.sum()
    g0, l0 = _evaluate(channel, w, hit, f0)
    gap0 = max(float(g0.max()) - 1.0, 0.0)
    updates, change, step_max = 0, 0.0, 1.0

    def em_map(x: np.ndarray, g: np.ndarray) -> np.ndarray:
        nxt = np.maximum(x * g, 0.0)
        out: np.ndarray = nxt / nxt.sum()
        return out

    while True:
        if gap0 <= tol:
            return f0, updates, True, gap0, change
        if updates == max_iter:
            return f0, updates, False, gap0, change
        f1 = em_map(f0, g0)
        g1, _ = _evaluate(channel, w, hit, f1, False)
        updates += 1
        gap1 = max(float(g1.max()) - 1.0, 0.0)
        if gap1 <= tol or updates == max_iter:
            return f1, updates, gap1 <= tol, gap1, float(np.abs(f1 - f0).max())
        f2 = em_map(f1, g1)
        r = f1 - f0
        v = f2 - 2.0 * f1 + f0
        norm_v = float(np.sqrt(v @ v))
        a = 1.0 if norm_v == 0.0 else min(max(float(np.sqrt(r @ r)) / norm_v, 1.0), step_max)
        nxt: Optional[np.ndarray] = None
        if a > 1.0:
            ext = _project_above(f0 + 2.0 * a * r + (a * a) * v, _KEEP * f0)
            ge, _ = _evaluate(channel, w, hit, ext, False)
            updates += 1
            gap_e = max(float(ge.max()) - 1.0, 0.0)
            if gap_e <= tol or updates == max_iter:
                # a certified point is returned as is; out of updates, the best point known
                # (f1: L(f1) >= L(f0) by the EM property) is
                if gap_e <= tol:
                    return ext, updates, True, gap_e, float(np.abs(ext - f1).max())
                return f1, updates, False, gap1, float(np.abs(f1 - f0).max())
            cand = em_map(ext, ge)
            gc, lc = _evaluate(channel, w, hit, cand)
            updates += 1
            if lc >= l0 - slack * abs(l0):
                nxt, g_next, l_next = cand, gc, lc
                if a == step_max:
                    step_max *= _STEP_FACTOR
            else:
                step_max = max(1.0, a / _STEP_FACTOR)
                gap_c = max(float(gc.max()) - 1.0, 0.0)
                if gap_c <= tol:
                    return cand, updates, True, gap_c, float(np.abs(cand - f1).max())
                if updates == max_iter:
                    return f1, updates, False, gap1, float(np.abs(f1 - f0).max())
        if nxt is None:  # the plain EM iterate f2 (L(f2) >= L(f1) >= L(f0))
            nxt = f2
            g_next, l_next = _evaluate(channel, w, hit, f2)
            updates += 1
            if a == 1.0 == step_max:  # a step at the cap (1), accepted: the cap grows
                step_max = _STEP_FACTOR
        change = float(np.abs(nxt - f0).max())
        f0, g0, l0 = nxt, g_next, l_next
        gap0 = max(float(g0.max()) - 1.0, 0.0)


def _log_likelihood(channel: CountChannel, stat: np.ndarray, f: np.ndarray) -> float:
    """``sum_y S(y) log (M f)(y)`` (terms with ``S(y) = 0`` are 0)."""
    m = channel.forward(f)
    hit = stat > 0
    with np.errstate(divide="ignore"):
        return float(np.sum(stat[hit] * np.log(m[hit])))


def _hadamard_support(hits: np.ndarray, domain_size: int) -> np.ndarray:
    """``S(v) = (n + fwht(h)[v + 1]) / 2``: the reports in ``v``'s half of HR's columns."""
    coefficients = fwht(np.ascontiguousarray(hits, dtype=np.float64))[1:domain_size + 1]
    support: np.ndarray = (hits.sum() + coefficients) / 2.0
    return support


_STARTS = ("auto", "uniform")


def ibu(est: Union[EstimateLike, Partial], *, oracle: Optional[FrequencyOracle] = None,
        n: Any = None, tol: float = 1e-8, max_iter: int = 10_000,
        start: str = "auto", accelerate: bool = True) -> FrequencyEstimate:
    """The iterative Bayesian update: the EM estimate of the counts given the oracle's channel.

    See the module docstring for the update, the statistic each oracle
    gives, when the fixed point is the exact maximum-likelihood estimate
    (GRR; Hadamard response from a partial) or the maximizer of the
    composite likelihood of the support counts (unary encoding, OLH,
    Hadamard response from an estimate), and the stopping rule.

    Parameters
    ----------
    est : FrequencyEstimate, array_like of shape (D,), or Partial
        The equal-budget estimate to post-process; a plain count vector
        (with ``n``, read at the oracle's ``epsilon``); or a
        :class:`~fastldp.streaming.Partial` of ``oracle`` (its exact hit
        counts: for Hadamard response, the ``K`` column counts).
    oracle : FrequencyOracle
        The oracle that produced the reports. Required: a
        :class:`~fastldp.oracles.FrequencyEstimate` does not hold its
        oracle, and IBU needs its channel
        (:meth:`~fastldp.oracles.FrequencyOracle.count_channel`).
    n : number, optional
        The number of reports, for a plain vector.
    tol : float > 0
        Stop when ``max_x g(x) - 1 <= tol``: the log-likelihood is then
        within ``tol sum(S)`` of its maximum (the duality gap).
    max_iter : int >= 0
        The most EM updates.
    start : {"auto", "uniform"}
        ``"auto"``: for a symmetric channel, the closed-form maximizer (the
        limit of the EM from any interior start; the EM then only checks
        it, with 0 updates when it already meets ``tol``); for Hadamard
        response's columns, the closed-form maximizer of its support
        counts' composite likelihood, from which the EM climbs to the exact
        MLE. ``"uniform"``: the textbook start ``f = 1/D`` (Agrawal and
        Aggarwal; multi-freq-ldpy), from which the plain EM can need
        millions of updates on a large domain.
    accelerate : bool
        ``True`` (the default): SQUAREM (module docstring), the same fixed
        point in far fewer evaluations; ``False``: the plain EM, one update
        at a time.

    Returns
    -------
    FrequencyEstimate
        Counts ``n f`` (``>= 0``, summing to ``n``), ``variances=None``,
        ``postprocessing="ibu"``. ``postprocessing_info``: ``iterations``
        (EM updates; with ``accelerate``, evaluations of the EM map, each
        the cost of one update), ``converged``, ``gap`` (``max_x g(x) - 1`` at the
        result), ``change`` (the last update's largest move of a
        frequency; with ``accelerate``, the move from the previous
        iterate), ``tol``, ``max_iter``, ``start``, ``accelerate``, ``epsilon``,
        ``statistic`` (``"counts"`` or ``"hits"``), ``channel`` (its kind),
        ``likelihood`` (``"exact"`` or ``"composite"``) and
        ``log_likelihood`` (``L`` at the result).

    Raises
    ------
    ValueError
        Without ``oracle``; for an estimate with personal budgets (IBU
        needs one channel); when the domain sizes differ; or when the counts
        cannot be this oracle's (a support count below zero).
    TypeError
        When ``accelerate`` is not a bool.
    NotImplementedError
        For an oracle that does not give its channel (FLH).
    """
    owner = "ibu"
    if oracle is None:
        raise param_error("oracle", owner, "the FrequencyOracle that produced the estimate (IBU "
                          "inverts its channel; an estimate does not hold its oracle)", None)
    if not isinstance(oracle, FrequencyOracle):
        raise param_error("oracle", owner, "a FrequencyOracle", oracle, TypeError)
    tol = check_float(tol, "tol", owner, low=0.0)
    max_iter = check_int(max_iter, "max_iter", owner, low=0)
    if start not in _STARTS:
        raise param_error("start", owner, "'auto' or 'uniform'", start)
    if not isinstance(accelerate, (bool, np.bool_)):
        raise param_error("accelerate", owner, "a bool", accelerate, TypeError)
    accelerate = bool(accelerate)
    D = oracle.domain_size
    counts: Optional[np.ndarray] = None
    if isinstance(est, Partial):
        partial = oracle._check_partial(est, owner)
        if partial.counts["personal"] or oracle.epsilon is None:
            raise param_error("est", owner, "a partial of reports at the oracle's epsilon (IBU "
                              "needs one channel)", _Shown("a partial with personal budgets"))
        source: Optional[FrequencyEstimate] = oracle.finalize(partial)
        assert source is not None
        if n is not None and _check_total(n, owner) != source.n:
            raise param_error("n", owner, f"left out, or the partial's own n ({source.n})", n)
        total: Union[int, float] = source.n
        eps = float(oracle.epsilon)
        statistic = "hits"
    else:
        counts, total, source = _resolve(est, n, owner)
        if counts.shape[0] != D:
            raise param_error("est", owner, f"counts over the oracle's {D} symbols",
                              _Shown(f"{counts.shape[0]} counts"))
        privacy = None if source is None else source.privacy
        if privacy is not None and privacy.personal:
            raise param_error("est", owner, "an estimate of reports at one budget (IBU needs "
                              "one channel; decode each budget apart, or use norm_sub)",
                              _Shown(f"an estimate with {privacy.budget()}"))
        budget = privacy.epsilon if privacy is not None else None
        if budget is None:
            budget = oracle.epsilon
        if budget is None:
            raise param_error("oracle", owner, "an oracle with an epsilon when the estimate "
                              "does not state its budget", oracle)
        eps = float(budget)
        statistic = "counts"
    if (source is not None and source.categories is not None and oracle.categories is not None
            and tuple(source.categories) != tuple(oracle.categories)):
        raise param_error("oracle", owner, "the oracle whose categories label the estimate",
                          oracle)
    channel = oracle.count_channel(eps, statistic=statistic)
    if counts is not None:
        stat = channel.statistic_from_counts(counts, total)
    else:
        stat = np.asarray(partial.sums["hits"].value(), dtype=np.float64)
    slack = _statistic_slack(total)
    if (stat < -slack).any():
        i = int(np.flatnonzero(stat < -slack)[0])
        raise ValueError(
            f"The 'est' parameter of {owner} must be the counts of an estimate of "
            f"{type(oracle).__name__} at epsilon={eps!r} (every support count "
            f"S = counts (p - q) + n q is >= 0). Got S = {float(stat[i])!r} at index {i} "
            "instead.")
    stat = np.maximum(stat, 0.0)
    info: dict[str, Any] = {"tol": tol, "max_iter": max_iter, "start": start,
                            "accelerate": accelerate, "epsilon": eps,
                            "statistic": statistic, "channel": channel.kind,
                            "likelihood": "exact" if channel.exact else "composite"}
    if total == 0 or stat.sum() == 0:
        # no reports, or no report supports any symbol: every f is a maximizer
        f = np.full(D, 1.0 / D)
        info.update(iterations=0, converged=True, gap=0.0, change=0.0)
    else:
        f = np.full(D, 1.0 / D)
        if start == "auto" and channel.kind == "symmetric":
            f = _symmetric_mle(stat / stat.sum(), channel.p, channel.q)
        elif start == "auto" and channel.kind == "hadamard":
            support = _hadamard_support(stat, D)
            f = _symmetric_mle(support / support.sum(), channel.p, 0.5)
            if accelerate:  # half and half with uniform: no symbol starts near zero, where a
                f = 0.5 * f + 0.5 / D  # multiplicative update revives it only slowly
            else:
                f = np.maximum(f, 1e-12)  # the EM cannot revive a zero it starts from
        run = _squarem if accelerate else _em
        f, updates, converged, gap, change = run(channel, stat, f, tol, max_iter)
        info.update(iterations=updates, converged=converged, gap=gap, change=change)
    info["log_likelihood"] = _log_likelihood(channel, stat, f)
    privacy_out = PrivacyStatement.local(epsilon=eps) if source is None else None
    return _result(f * total, total, source, "ibu", info, privacy_out)


# ------------------------------------------------------------------ by name
_FUNCTIONS: dict[str, Callable[..., FrequencyEstimate]] = {
    "base_cut": base_cut, "norm_sub": norm_sub, "norm_mul": norm_mul, "norm_cut": norm_cut,
    "project_simplex": project_simplex, "ibu": ibu, "power": power, "power_ns": power_ns,
}


def postprocess(est: Union[EstimateLike, Partial], method: str = "norm_sub",
                **kw: Any) -> FrequencyEstimate:
    """Apply the post-processing named ``method`` (one of :data:`METHODS`).

    Parameters
    ----------
    est : FrequencyEstimate, array_like or Partial
        As the method takes it (a partial for ``"ibu"`` only).
    method : str
        ``"norm_sub"`` (the default: Wang et al.'s recommendation for
        full-domain estimates), ``"base_cut"``, ``"norm_mul"``,
        ``"norm_cut"``, ``"project_simplex"``, ``"ibu"``, ``"power"`` or
        ``"power_ns"``.
    **kw
        The method's keyword arguments (``n=``, ``oracle=``, ``threshold=``,
        ``variance=``...).

    Returns
    -------
    FrequencyEstimate

    Examples
    --------
    >>> import numpy as np
    >>> est = postprocess(np.array([5.0, -1.0, 2.0]), "norm_sub", n=6)
    >>> est.counts, est.postprocessing
    (array([4.5, 0. , 1.5]), 'norm_sub')
    """
    if method not in _FUNCTIONS:
        raise param_error("method", "postprocess", "one of " + ", ".join(map(repr, METHODS)),
                          method)
    return _FUNCTIONS[method](est, **kw)
