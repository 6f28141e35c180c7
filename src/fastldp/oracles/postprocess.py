"""Consistent frequency estimates: post-processing of any frequency oracle's counts.

An oracle's counts are unbiased, but they are not *consistent*: some are
negative and they need not sum to ``n``, the number of reports. Wang et al.
(2020) compare ways to make them consistent, all of them post-processing
(no privacy is spent). Each function here takes a
:class:`~fastldp.oracles.FrequencyEstimate` (then ``n = est.n``), the same
read back from a file (``fastldp.reports.load_result``: any
:class:`~fastldp.results.Result` with a 1-d estimate; another family's
counts, heavy hitters' top ``k`` or a histogram's groups, need ``n=``, the
total they stand for) or a plain count vector with ``n=`` given, and
returns a **new**
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

(the Frank-Wolfe duality gap, reported as ``gap``). That bounds the
likelihood, not the estimate: ``L`` is nearly flat in many directions (a
report tells little about its symbol), and a point whose gap is ``1e-8``
can be far from the maximizer (OUE at ``D = 512`` from the uniform start:
``8e-3`` in L1; OLH and HR at ``D = 4096``: up to ``5.5e-2``). So
:func:`ibu` stops when a bound on the estimate itself, ``||f - f*||_1``
for every maximizer ``f*`` (the L1 distance of the counts divided by
``n``), is at most ``tol`` (section "IBU: the certificate";
reported as ``distance``), or after ``max_iter`` updates (``converged`` is
then ``False``), and returns the counts ``n f``. (A rule on the size of one
update, ``max_x |f'(x) - f(x)| <= tol``, is not used either: on a large
domain an EM update moves every frequency by less than ``1e-8`` long
before the estimate is near the maximum.) What ``S`` is, and whether
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
(``start="auto"``) :func:`ibu` starts there, and checks the certificate
(0 updates when it already meets ``tol``); ``start="uniform"`` is the
textbook start, and ``start`` may also be a distribution. For Hadamard
response's columns it starts from the same closed form on the support
counts (the composite maximizer) and climbs to the exact MLE. The plain EM
climbs slowly on a large domain: at ``D = 4096`` (``K = 8192``),
``eps = 1``, ``n = 10^5`` (Zipf data), 10,000 updates take about 1.5 s and
stop at a gap of ``2e-4`` (``converged`` is ``False``).

IBU: the accelerator
--------------------
By default (``accelerate=True``) :func:`ibu` climbs to the EM's fixed
point (the maximizer) by projected Newton-type steps instead of EM
updates (Bertsekas 1982): at ``f``, with ``g`` evaluated, the step is
``r = z - f`` with ``z`` the maximizer on the simplex of
``<g, z> - sum_x (z(x) - f(x))^2 / (2 tau(x))`` (one sort,
``z(x) = max(f(x) + tau(x) (g(x) - mu), 0)``). For a symmetric channel
``1 / tau(x) = (p - q)^2 w(x) / (M f)(x)^2`` is the curvature of ``L / sum(S)``
along symbol ``x`` (on the simplex the Hessian is that diagonal), so ``z``
is the projected Newton point; for Hadamard response's columns (and a
matrix) ``tau`` is one number, ``1`` over an upper bound on the curvature
(a scaled projected gradient step). The step taken is ``a r``, ``a`` the
first of ``1, 1/2, 1/4, ...`` that raises ``L`` by at least ``1e-4 a``
times its slope along ``r`` (Armijo; the rise is computed from ``M r``,
``sum_y w log(1 + a (M r)(y) / (M f)(y))``, accurate where the difference
of two log-likelihoods is swamped by rounding). So ``L`` never falls. The
certificate is made of the same ``r``, so every step is checked: the
method stops at the first point it certifies. Every evaluation of ``g``
(one ``M f`` and one ``M^T r``, what one plain EM update costs) counts as
an update against ``max_iter`` and in the reported ``iterations``; each
step also computes ``M r`` once (an ``O(D)`` product, or one more
transform for Hadamard response). Measured (``n = 10^5`` reports of
``np.random.default_rng(0).zipf(1.5, n) % D``, ``eps = 1``, ``D = 4096``,
from the uniform start): GRR, OUE, OLH and HR from an estimate are
certified after 3 or 4 steps; HR's exact MLE from a partial after 36 steps
(about 0.03 s) from the composite start. ``accelerate=False`` is the
plain EM, update for update (the same bits as before the accelerator), with
the same stopping rule.

IBU: the certificate
--------------------
With ``w = S / sum(S)``, ``Y`` the positions with ``w(y) > 0``,
``l(f) = sum_Y w log (M f)`` (``L / sum(S)``), ``m = M f``,
``g = M^T (w / m)`` its gradient, ``f*`` a maximizer on the simplex,
``d = f* - f`` and ``e = M d``, :func:`ibu` bounds ``||d||_1`` as follows.

1. Where ``M f*`` lies. With ``s(y) = (M f*)(y) / m(y)`` and
   ``phi(s) = s - 1 - log s >= 0``, ``l(f*) - l(f) = <g, d> -
   sum_Y w phi(s)``. The left side is at least 0 and
   ``<g, d> = <g, f*> - 1 <= G = max_x g(x) - 1``, so
   ``phi(s(y)) <= t(y) = G / w(y)``: with ``phi(s) >= (1 - s)^2 / 2``
   below 1 and ``>= (s - 1)^2 / (2 s)`` above,
   ``1 - sqrt(2 t) <= s(y) <= 1 + t + sqrt(t^2 + 2 t)``; also
   ``(M f*)(y)`` lies between the least and the largest entry of row ``y``.
2. Monotonicity. ``g - g* = M^T u``, ``u(y) = w(y) e(y) / (m(y) (M f*)(y))``,
   so ``<g - g*, d> = sum_Y w e^2 / (m M f*) =: kappa^2`` and, by
   Cauchy-Schwarz, ``<g - g*, r> <= kappa rho`` for any ``r``, with
   ``rho^2 = sum_Y w (M r)^2 / (m M f*)`` (bounded by step 1).
3. The step. ``z`` (above) satisfies ``<g - r / tau, u - z> <= 0`` for
   every ``u`` in the simplex, ``u = f*`` in particular, and ``f*``
   satisfies ``<g*, z - f*> <= 0``. Their sum, with ``f* - z = d - r``,
   and step 2: ``kappa^2 + sum r^2 / tau <= kappa rho + sum r d / tau``.
4. From ``kappa`` to ``||d||_1``. Symmetric channel: on ``sum d = 0``,
   ``e = (p - q) d``, so ``kappa^2 >= (p - q)^2 sum_x w(x) d(x)^2 /
   (m(x)^2 s_max(x))``, a weight per symbol. The maximizer is
   ``f*(x) = max(w(x) / lam - q / (p - q), 0)``, so ``f*(x) = 0`` wherever
   ``w(x) <= q w(v) / (M f*)(v)``, ``v`` the symbol of the largest ``w``
   (checked with step 1's bound on ``(M f*)(v)``); there ``d = -f`` is
   known. Cauchy-Schwarz in those weights over the other symbols bounds
   ``sum r d / tau`` by ``kappa`` times a known number, and ``||d||_1`` by
   ``sum_{f* = 0} f + kappa sqrt(sum_x m(x)^2 s_max(x) / ((p - q)^2 w(x)))``.
   Hadamard response and a matrix: ``kappa^2 >= sigma^2 ||d||_2^2`` with
   ``sigma^2 = min_Y w / (m^2 s_max)`` times ``lambda_0``, the least
   eigenvalue of ``M_Y^T M_Y`` on ``sum d = 0`` (for Hadamard response
   ``(p - q)^2 (K - lambda_max(A A^T)) / K^2``, ``A`` the rows no report
   hit, ``lambda_max`` bounded by Gershgorin, or computed for up to 1,024
   such rows; ``lambda_0 = 0``, no certificate, when too many are
   missing); then ``sum r d / tau <= ||r||_2 kappa / (sigma tau)`` and
   ``||d||_1 <= sqrt(D) kappa / sigma``.
5. Step 3 is then ``kappa^2 - b kappa - c <= 0`` with known ``b, c``:
   ``kappa <= (b + sqrt(b^2 + 4 c)) / 2``, and step 4 turns it into the
   bound reported as ``distance``. It is finite only once
   ``G < w(y) / 2`` for every ``y`` (or row bounds take over).

This is the error bound of a strongly monotone variational inequality by
its natural residual (Pang 1997; Facchinei and Pang 2003, chapter 6),
with the strong monotonicity measured in the channel's own weights. For a
symmetric channel it is within a few times the true distance near the
maximum (a test checks it never falls below the distance, at random points
of random channels); for Hadamard response's columns, a few hundred times
(the least weight and ``sqrt(D)`` are crude), which costs a few more steps.

Rounding: ``g`` is computed with an error. The part common to every
``x`` moves neither ``z`` nor the bound (both see ``g`` through
differences or against directions that sum to 0); the rest, at most
``delta`` per symbol (a few ulps, times ``log2`` of the statistic's
length, of the terms that differ between symbols), adds
``delta (||d||_1 + ||r||_1)`` to the right side of step 3, and ``G`` is
raised by the whole error. Below about ``1e-9`` the bound meets that
floor; ``tol`` smaller than the floor is never met (``converged`` is
``False``).

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
.. [8] D. P. Bertsekas, "Projected Newton methods for optimization problems
   with simple constraints", SIAM J. Control Optim. 20 (1982) 221-246 (the
   scaled projected step and its line search).
.. [9] J.-S. Pang, "Error bounds in mathematical programming", Math.
   Programming 79 (1997) 299-332; F. Facchinei, J.-S. Pang,
   "Finite-dimensional variational inequalities and complementarity
   problems", Springer 2003, chapter 6 (error bounds by the natural
   residual under strong monotonicity: the form of the certificate, which
   the module derives in full).
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
from .._sanitize import SanitizationReport
from .._validation import check_float, check_int, param_error
from ..results import PrivacyStatement, Result
from ..streaming import Partial
from ._base import CountChannel, FrequencyEstimate, FrequencyOracle

__all__ = ["METHODS", "base_cut", "norm_sub", "norm_mul", "norm_cut", "project_simplex", "ibu",
           "power", "power_ns", "postprocess"]

#: the post-processing methods, by the name :func:`postprocess` takes
METHODS = ("base_cut", "norm_sub", "norm_mul", "norm_cut", "project_simplex", "ibu", "power",
           "power_ns")

#: what post-processing takes: a frequency estimate, any other result of counts (one read
#: back by fastldp.reports.load_result too), or a plain count vector (with ``n=``)
EstimateLike = Union[FrequencyEstimate, Result, ArrayLike]


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


def _as_frequency_estimate(est: Result, n: Any, owner: str) -> FrequencyEstimate:
    """A :class:`FrequencyEstimate` saying what another result says: its counts, ``n``, labels,
    privacy statement, variances and sanitization.

    ``est`` is a result that is not a ``FrequencyEstimate`` object: one read
    back by :func:`fastldp.reports.load_result`, or another family's counts
    (heavy hitters, a histogram release). A result with a frequency
    estimate's fields (``postprocessing``) has counts over the whole domain
    that sum to its ``n``; another family's counts do not (the top ``k``
    items; a histogram's groups), so their total must be given as ``n``.
    """
    kind = getattr(est, "kind", "") or type(est).__name__
    kind = kind.rsplit(".", 1)[-1]
    counts = est.estimate
    if counts is None or np.ndim(counts) != 1 or np.shape(counts)[0] == 0:
        shape = "no estimate" if counts is None else f"an estimate of shape {np.shape(counts)}"
        raise param_error("est", owner, "a result whose estimate is a 1-d count vector",
                          _Shown(f"a {kind} with {shape}"), TypeError)
    if hasattr(est, "postprocessing"):
        total: Union[int, float] = _check_total(est.n, owner)
        if n is not None and _check_total(n, owner) != total:
            raise param_error("n", owner, f"left out, or the estimate's own n ({est.n})", n)
    elif n is None:
        raise param_error("n", owner, f"given with a {kind} (the total its counts stand for: "
                          f"they are not a whole domain's counts summing to its n = {est.n})",
                          None)
    else:
        total = _check_total(n, owner)
    sanitization = est.sanitization
    if isinstance(sanitization, dict):  # as a result file holds it
        sanitization = SanitizationReport(**sanitization)
    variances = est.variances
    return FrequencyEstimate(
        _finite_counts(counts, owner), None if variances is None
        else np.asarray(variances, dtype=np.float64), sanitization, total,  # type: ignore[arg-type]
        est.privacy if est.privacy is not None else PrivacyStatement.local(),
        est.categories, getattr(est, "postprocessing", None),
        getattr(est, "postprocessing_info", None))


def _finite_counts(est: Any, owner: str) -> np.ndarray:
    expected = "a FrequencyEstimate, a Result or a 1-d array of finite counts"
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
    return counts


def _resolve(est: Any, n: Any, owner: str) -> tuple[np.ndarray, Union[int, float],
                                                      Optional[FrequencyEstimate]]:
    """The counts, the total and the estimate they came from (``None`` for a plain vector)."""
    if isinstance(est, Result) and not isinstance(est, FrequencyEstimate):
        est = _as_frequency_estimate(est, n, owner)
        n = None
    if isinstance(est, FrequencyEstimate):
        if n is not None and _check_total(n, owner) != est.n:
            raise param_error("n", owner, f"left out, or the estimate's own n ({est.n})", n)
        counts = np.asarray(est.counts, dtype=np.float64)
        return counts, est.n, est
    if n is None:
        raise param_error("n", owner, "given with a plain count vector (the total the "
                          "consistent counts sum to; a FrequencyEstimate carries its own)", None)
    total = _check_total(n, owner)
    return _finite_counts(est, owner), total, None


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


def _em(channel: CountChannel, stat: np.ndarray, f: np.ndarray, tol: float, max_iter: int
        ) -> tuple[np.ndarray, int, bool, float, float, float]:
    """Plain EM updates from ``f`` until the certificate is at most ``tol`` (module docstring).

    The certificate (:func:`_certify`, a sort of ``D`` numbers) costs several
    updates of a symmetric channel, so it is checked at the start, whenever
    the duality gap has at least halved since the last check, every
    ``_EM_CHECK_EVERY`` updates and at the last update; ``converged`` is
    only ever said of a point where it was checked.

    Returns ``(f, updates, converged, distance, gap, change)``: ``distance``
    the certified bound on ``||f - f*||_1`` at the returned ``f``
    (:func:`_certify`), ``gap = max_x g(x) - 1`` there, ``change`` the
    largest move of the last update.
    """
    w = stat / stat.sum()
    hit = w > 0
    f = f / f.sum()
    curvature = _curvature(channel, hit)
    change, updates = 0.0, 0
    symmetric = channel.kind == "symmetric"
    p, q = channel.p, channel.q
    checked_gap, checked_at = math.inf, 0
    distance = math.inf
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
        last = updates == max_iter
        if (last or updates == 0 or gap <= 0.5 * checked_gap
                or updates - checked_at >= _EM_CHECK_EVERY):
            distance = _certify(channel, w, hit, f, g, curvature)[0]
            checked_gap, checked_at = gap, updates
            if distance <= tol:
                return f, updates, True, distance, gap, change
        if last:
            return f, updates, False, distance, gap, change
        nxt = np.maximum(f * g, 0.0)
        nxt /= nxt.sum()
        change = float(np.abs(nxt - f).max())
        f = nxt
        updates += 1


#: the plain EM checks its certificate at least this often (in updates)
_EM_CHECK_EVERY = 256
#: the line search of a Newton step halves the step at most this many times
_HALVINGS = 60
#: the sufficient increase a Newton step must give (Armijo), as a fraction of its slope
_ARMIJO = 1e-4
_ULP = float(np.finfo(np.float64).eps)


@dataclasses.dataclass(frozen=True)
class _Curvature:
    """Bounds on ``||M_Y d||^2 / ||d||_2^2`` (``M_Y``: the rows of ``M`` some report hit).

    ``low`` over the directions ``d`` with ``sum d = 0`` (the simplex's),
    ``high`` over all ``d``. Fixed for one statistic; used for the
    ``"hadamard"`` and ``"matrix"`` channels (a symmetric channel's is
    diagonal and needs neither).
    """

    low: float
    high: float


def _hadamard_missing_top(size: int, domain_size: int, miss: np.ndarray) -> float:
    """An upper bound on ``lambda_max(A A^T)``, ``A = H_K[1..D, miss]^T`` (the missing rows).

    ``(A A^T)[y, y'] = sum_{i=1..D} H[i, y] H[i, y'] = c[y ^ y']`` with
    ``c = H_K 1_{[1, D]}``: its Gershgorin row sums are the XOR convolution
    ``(1_miss * |c|)[y]``, three fast transforms (integers: exact while
    ``K^2 D < 2^53``). Where that bound is not below ``K`` and at most 1,024
    rows are missing, the eigenvalue itself (``numpy.linalg.eigvalsh``).
    """
    rows = np.zeros(size)
    rows[1:domain_size + 1] = 1.0
    c = fwht(rows)
    sums = fwht(fwht(miss.astype(np.float64)) * fwht(np.abs(c))) / size
    # a margin for rounding where the transforms' integers pass 2^53
    top = float(sums[miss].max()) * (1.0 + 1e-12) + 4.0 * _ULP * size * size * domain_size
    idx = np.flatnonzero(miss)
    if top >= size and idx.shape[0] <= 1024:
        gram = c[idx[:, None] ^ idx[None, :]]
        top = float(np.linalg.eigvalsh(gram)[-1]) * (1.0 + 1e-12) + 1e-9 * size
    return top


def _curvature(channel: CountChannel, hit: np.ndarray) -> Optional[_Curvature]:
    """The :class:`_Curvature` of a ``"hadamard"`` or ``"matrix"`` channel (``None``: symmetric).

    Hadamard response: for ``sum d = 0``, ``M d = (p - q) / K H^T d~``
    (``d~`` is ``d`` at rows ``1..D``), and ``||H^T d~||^2 = K ||d||^2``; the
    rows no report hit take at most ``lambda_max(A A^T) ||d||^2`` of it
    (:func:`_hadamard_missing_top`). A matrix: the eigenvalues of
    ``M_Y^T M_Y``, the smallest on ``sum d = 0`` (less a rounding margin).
    """
    if channel.kind == "symmetric":
        return None
    D = channel.domain_size
    if channel.kind == "hadamard":
        K = channel.size
        scale = ((channel.p - channel.q) / K) ** 2
        miss = ~hit
        top = _hadamard_missing_top(K, D, miss) if miss.any() else 0.0
        return _Curvature(scale * max(K - top, 0.0), scale * K)
    assert channel.matrix is not None
    rows = channel.matrix[hit]
    gram = rows.T @ rows
    high = float(np.linalg.eigvalsh(gram)[-1]) * (1.0 + 1e-12)
    if D == 1:
        return _Curvature(math.inf, high)
    # on sum d = 0: P gram P, with the direction 1 lifted above every other eigenvalue
    mean = np.full((D, D), 1.0 / D)
    proj = np.eye(D) - mean
    lifted = proj @ gram @ proj + (float(np.trace(gram)) + 1.0) * mean
    low = float(np.linalg.eigvalsh(lifted)[0]) - 1e-12 * D * (high + 1.0)
    return _Curvature(max(low, 0.0), high)


def _allowances(channel: CountChannel, ratio: np.ndarray, g: np.ndarray) -> tuple[float, float]:
    """Allowances for the rounding error of ``g - 1`` as :func:`_certify` computes it.

    ``ratio = w / M f`` on the hit positions. Returns ``(level, spread)``:
    ``level`` bounds the error of any ``g(x)``; ``spread`` the error of
    ``g(x) - 1`` less a part common to every ``x`` (which moves neither the
    step nor the bound: both see ``g`` only through differences, or against
    directions that sum to 0). ``g`` is a sum over the ``size`` positions,
    pairwise (numpy) or by butterflies (the transform): a few ulps per
    level, ``log2(size)`` levels, twice over. A symmetric channel's
    ``g(x) - 1`` is computed as ``(p - q) (ratio(x) - <f, ratio>)`` (its
    exact value less a common ``q sum(ratio) (1 - sum f)``): a few ulps of
    ``(p - q) max ratio``. Hadamard response's
    ``g(x) = (p (s + u(x)) + q (s - u(x))) / K`` (``s = sum(ratio)``,
    ``u = H ratio``): the butterflies err by at most ``log2(K)`` ulps of
    ``s`` in ``u``, and the two sums by an ulp of ``s`` each. A dense matrix
    product is allowed ``size`` ulps of ``g``, common part and all.
    """
    top = float(np.abs(g).max())
    if channel.kind == "matrix":
        level = 8.0 * (channel.size + 4.0) * _ULP * max(top, 1.0)
        return level, level
    level = 8.0 * (math.log2(channel.size) + 4.0) * _ULP * max(top, 1.0)
    if channel.kind == "symmetric":
        return level, 8.0 * _ULP * (channel.p - channel.q) * float(ratio.max())
    total = float(ratio.sum()) / channel.size
    levels = math.log2(channel.size) + 4.0
    return level, 8.0 * _ULP * total * (levels * (channel.p - channel.q) + channel.p + channel.q)


def _bounds(channel: CountChannel) -> tuple[np.ndarray, np.ndarray]:
    """The least and the largest entry of each row of ``M``: bounds on ``(M f)(y)`` for any law."""
    if channel.kind == "symmetric":
        low, high = min(channel.p, channel.q), max(channel.p, channel.q)
        return np.full(channel.size, low), np.full(channel.size, high)
    if channel.kind == "hadamard":
        low, high = 2.0 * channel.q / channel.size, 2.0 * channel.p / channel.size
        return np.full(channel.size, low), np.full(channel.size, high)
    assert channel.matrix is not None
    return channel.matrix.min(axis=1), channel.matrix.max(axis=1)


def _product(channel: CountChannel, r: np.ndarray) -> np.ndarray:
    """``M r`` for a direction ``r`` in the simplex (``sum r = 0``), taken as exactly that.

    A step ``r = z - f`` sums to 0 only up to rounding, and near the maximum
    that rounding (times ``M``'s column sums) is larger than the rest of
    ``M r``; the step is renormalized after it is taken, so the part along
    ``1`` is dropped: ``(p - q) r`` (symmetric), ``(p - q) H^T r~ / K``
    (Hadamard), ``M (r - mean(r))`` (a matrix). (:meth:`CountChannel.forward`
    is for laws: it clips.)
    """
    if channel.kind == "symmetric":
        out: np.ndarray = (channel.p - channel.q) * r
        return out
    if channel.kind == "hadamard":
        z = np.zeros(channel.size)
        z[1:channel.domain_size + 1] = r
        out = (channel.p - channel.q) * fwht(z) / channel.size
        return out
    return channel.forward(r - float(r.mean()))


def _prox_step(f: np.ndarray, dev: np.ndarray, tau: np.ndarray) -> np.ndarray:
    """``r = z - f``, ``z >= 0`` the maximizer of ``<dev, z> - sum_x (z_x - f_x)^2 / (2 tau_x)``.

    Under ``sum z = sum f`` (1 to rounding: a step that does not sum to 0
    exactly has, near the maximum, a slope that the excess swamps). KKT:
    ``z_x = max(f_x + tau_x (dev_x - mu), 0)``. A coordinate is positive
    while ``mu < b_x = dev_x + f_x / tau_x``; with the ``k`` largest ``b``
    positive, ``mu_k = (sum tau dev over them - sum f over the others) /
    sum tau over them``, and the last ``k`` with ``mu_k < b_(k)`` is the
    solution (the weighted form of Duchi et al.'s rule; one sort). ``r``
    is computed as ``tau (dev - mu)`` or ``-f``, not as a difference of two
    nearby numbers.
    """
    bounds = dev + f / tau
    order = np.argsort(-bounds)
    weight = np.cumsum(tau[order])
    # the mass left out, summed from the smallest end (not sum f less a prefix: cancellation)
    left_out = np.zeros(f.shape[0])
    left_out[:-1] = np.cumsum(f[order][:0:-1])[::-1]
    mu = (np.cumsum((tau * dev)[order]) - left_out) / weight
    ok = np.flatnonzero(mu < bounds[order])
    level = float(mu[int(ok[-1])]) if ok.shape[0] else float(mu[0])
    step: np.ndarray = np.where(bounds > level, tau * (dev - level), -f)
    return step


def _certify(channel: CountChannel, w: np.ndarray, hit: np.ndarray, f: np.ndarray,
             g: np.ndarray, curvature: Optional[_Curvature]
             ) -> tuple[float, np.ndarray, np.ndarray, np.ndarray]:
    """The certified bound on ``||f - f*||_1`` at ``f``, and the step the bound is made of.

    Returns ``(distance, r, m, Mr)``: ``distance`` bounds the L1 distance
    from ``f`` (in the simplex, ``g`` evaluated there) to every maximizer
    ``f*`` of ``sum_y w(y) log (M f)(y)`` (``inf`` where the bound does not
    apply); ``r = z - f`` is the diagonally scaled projected gradient step
    (:func:`_prox_step`; for a symmetric channel the projected Newton step),
    ``m = M f`` and ``Mr = M r``. The derivation is in the module docstring
    ("IBU: the certificate").
    """
    D = f.shape[0]
    m = channel.forward(f)
    wy, my = w[hit], m[hit]
    ratio = wy / my
    level, delta = _allowances(channel, ratio, g)
    if channel.kind == "symmetric":  # g - 1 without the rounding of a sum near 1 (above)
        share = np.zeros(D)
        share[hit] = ratio
        dev = (channel.p - channel.q) * (share - float(f @ share))
    else:
        dev = g - 1.0
    gap = max(float(dev.max()), 0.0) + level
    omega = ratio / my
    symmetric = channel.kind == "symmetric"
    if symmetric:
        c = (channel.p - channel.q) ** 2
        tau = np.empty(D)
        tau[hit] = 1.0 / (c * omega)
        tau[~hit] = float(tau[hit].max())
    else:
        assert curvature is not None
        tau = np.full(D, 1.0 / (float(omega.max()) * curvature.high))
    r = _prox_step(f, dev, tau)
    mr = _product(channel, r)
    # the ratios s = (M f*)(y) / (M f)(y): sum_y w phi(s) <= gap with phi(s) = s - 1 - log s,
    # and (M f*)(y) lies between the least and the largest entry of row y of M
    t = gap / wy
    row_low, row_high = _bounds(channel)
    upper = np.minimum(1.0 + t + np.sqrt(t * (t + 2.0)), row_high[hit] / my)
    lower = np.maximum(1.0 - np.sqrt(2.0 * t), row_low[hit] / my)
    if not (lower > 0.0).all():
        return math.inf, r, m, mr
    low, high = omega / upper, omega / lower  # bounds on w / (M f (M f*)) on the hit rows
    r_abs = float(np.abs(r).sum())
    if symmetric:
        rho = math.sqrt(c * float(np.sum(high * r[hit] ** 2)))
        # f*(x) > 0 exactly where w(x) > q w(v) / (M f*)(v) for any v with f*(v) > 0, such as
        # the symbol of the largest w: where w(x) is at most that bound's lower bound, f* is 0
        top = int(np.argmax(wy))
        zero = w <= channel.q * wy[top] / (my[top] * upper[top])
        free = ~zero[hit]
        rf, tf, lf = r[hit][free], tau[hit][free], low[free]
        cross = math.sqrt(float(np.sum(rf * rf / (tf * tf * c * lf))))
        spread = math.sqrt(float(np.sum(1.0 / (c * lf))))
        outside = float(f[zero].sum())  # d = -f there
        z = f[zero] + r[zero]
        own = float(np.sum(rf * rf / tf)) + float(np.sum(r[zero] * z / tau[zero]))
        linear = rho + cross + delta * spread
        constant = delta * (outside + r_abs) - own
        kappa = 0.5 * (linear + math.sqrt(max(linear * linear + 4.0 * constant, 0.0)))
        return outside + spread * kappa, r, m, mr
    assert curvature is not None
    sigma = math.sqrt(float(low.min()) * curvature.low)
    if not sigma > 0.0:
        return math.inf, r, m, mr
    step = float(tau[0])
    rho = math.sqrt(float(np.sum(high * mr[hit] ** 2)))
    norm = math.sqrt(float(r @ r))
    root = math.sqrt(D)
    linear = rho + norm / (sigma * step) + delta * root / sigma
    constant = delta * r_abs - norm * norm / step
    kappa = 0.5 * (linear + math.sqrt(max(linear * linear + 4.0 * constant, 0.0)))
    return root * kappa / sigma, r, m, mr


def _newton(channel: CountChannel, stat: np.ndarray, f: np.ndarray, tol: float,
            max_iter: int) -> tuple[np.ndarray, int, bool, float, float, float]:
    """Projected Newton-type ascent to the EM's fixed point, until certified within ``tol``.

    At ``f`` (with ``g`` evaluated), :func:`_certify` gives the bound and
    the step ``r``; the step taken is ``a r`` with ``a`` the first of
    ``1, 1/2, 1/4, ...`` (at most ``_HALVINGS`` halvings) that raises the
    log-likelihood by at least ``_ARMIJO a <g, r>`` (Armijo). The increase
    ``sum_y w log(1 + a (M r)(y) / (M f)(y))`` is computed from ``M r``,
    not as a difference of two likelihoods (which rounding swamps near the
    maximum), so the line search needs no evaluation of ``g``; each
    accepted step costs one (counted as an update). Without an acceptable
    step (rounding, at the limit of float64), it stops, unconverged.

    Returns ``(f, updates, converged, distance, gap, change)`` as :func:`_em`.
    """
    w = stat / stat.sum()
    hit = w > 0
    f = f / f.sum()
    curvature = _curvature(channel, hit)
    g, _ = _evaluate(channel, w, hit, f, False)
    updates, change = 0, 0.0
    wy = w[hit]
    while True:
        distance, r, m, mr = _certify(channel, w, hit, f, g, curvature)
        gap = max(float(g.max()) - 1.0, 0.0)
        if distance <= tol:
            return f, updates, True, distance, gap, change
        if updates == max_iter:
            return f, updates, False, distance, gap, change
        ratio = mr[hit] / m[hit]
        slope = float(wy @ ratio)  # the derivative of L / sum(S) along r
        if not slope > 0.0:
            return f, updates, False, distance, gap, change
        a = 1.0
        for _ in range(_HALVINGS + 1):
            with np.errstate(divide="ignore", invalid="ignore"):
                gain = float(wy @ np.log1p(a * ratio))
            if gain >= _ARMIJO * a * slope:
                break
            a *= 0.5
        else:
            return f, updates, False, distance, gap, change
        nxt = np.maximum(f + a * r, 0.0)
        nxt /= nxt.sum()
        g, _ = _evaluate(channel, w, hit, nxt, False)
        updates += 1
        change = float(np.abs(nxt - f).max())
        f = nxt


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


def _check_start(start: Any, domain_size: int, owner: str) -> Optional[np.ndarray]:
    """``None`` for a named start; else the given start scaled to sum 1."""
    if isinstance(start, str):
        if start not in _STARTS:
            raise param_error("start", owner, "'auto', 'uniform' or a distribution over the "
                              f"{domain_size} symbols", start)
        return None
    expected = (f"'auto', 'uniform' or {domain_size} finite numbers >= 0 with a positive sum "
                "(a start)")
    try:
        values = np.array(start, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error("start", owner, expected, start, TypeError) from None
    if values.shape != (domain_size,):
        raise param_error("start", owner, expected, _Shown(f"an array of shape {values.shape}"))
    bad = np.flatnonzero(~(values >= 0) | ~np.isfinite(values))
    if bad.shape[0]:
        i = int(bad[0])
        raise ValueError(f"The 'start' parameter of {owner} must be {expected}. "
                         f"Got {float(values[i])!r} at index {i} instead.")
    total = float(values.sum())
    if not (total > 0 and math.isfinite(total)):
        raise param_error("start", owner, expected, _Shown(f"numbers summing to {total!r}"))
    out: np.ndarray = values / total
    return out


def ibu(est: Union[EstimateLike, Partial], *, oracle: Optional[FrequencyOracle] = None,
        n: Any = None, tol: float = 1e-4, max_iter: int = 10_000,
        start: Union[str, ArrayLike] = "auto", accelerate: bool = True) -> FrequencyEstimate:
    """The iterative Bayesian update: the EM estimate of the counts given the oracle's channel.

    See the module docstring for the update, the statistic each oracle
    gives, when the fixed point is the exact maximum-likelihood estimate
    (GRR; Hadamard response from a partial) or the maximizer of the
    composite likelihood of the support counts (unary encoding, OLH,
    Hadamard response from an estimate), the stopping rule and its
    certificate.

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
        Stop at a point certified to be within ``tol`` of every maximizer
        in L1 distance of the frequencies, that is, within ``tol n`` of the
        maximizer's counts in L1 (module docstring, "IBU: the
        certificate"). The default ``1e-4`` costs a few steps; below about
        ``1e-9`` rounding can keep the certificate from being met. (Before
        this rule ``tol`` bounded the duality gap ``max_x g(x) - 1``,
        which bounds the likelihood, not the estimate.)
    max_iter : int >= 0
        The most evaluations of ``g`` (each the cost of one EM update).
    start : {"auto", "uniform"} or array_like of shape (D,)
        ``"auto"``: for a symmetric channel, the closed-form maximizer (the
        limit of the EM from any interior start; then only checked, with
        0 updates when it already meets ``tol``); for Hadamard response's
        columns, the closed-form maximizer of its support counts'
        composite likelihood, from which it climbs to the exact MLE.
        ``"uniform"``: the textbook start ``f = 1/D`` (Agrawal and
        Aggarwal; multi-freq-ldpy), from which the plain EM can need
        millions of updates on a large domain. An array: a start of your
        own, ``D`` finite numbers ``>= 0`` with a positive sum (scaled to
        sum 1); the plain EM never moves a frequency that starts at 0.
    accelerate : bool
        ``True`` (the default): projected Newton-type steps to the EM's
        fixed point (module docstring, "IBU: the accelerator"), a few
        evaluations where the plain EM needs thousands; ``False``: the
        plain EM, one update at a time. Both stop on the same certificate.

    Returns
    -------
    FrequencyEstimate
        Counts ``n f`` (``>= 0``, summing to ``n``), ``variances=None``,
        ``postprocessing="ibu"``. ``postprocessing_info``: ``iterations``
        (evaluations of ``g``: EM updates, or with ``accelerate`` Newton
        steps, each the cost of one update), ``converged`` (the
        certificate met ``tol``), ``distance`` (the certified bound on the
        L1 distance of the frequencies to every maximizer, at the result;
        ``inf`` where it does not apply yet), ``gap`` (``max_x g(x) - 1``
        at the result: ``L`` is within ``gap sum(S)`` of its maximum),
        ``change`` (the last update's largest move of a frequency),
        ``tol``, ``max_iter``, ``start`` (``"given"`` for an array),
        ``accelerate``, ``epsilon``, ``statistic`` (``"counts"`` or
        ``"hits"``), ``channel`` (its kind), ``likelihood`` (``"exact"`` or
        ``"composite"``) and ``log_likelihood`` (``L`` at the result).

    Raises
    ------
    ValueError
        Without ``oracle``; for an estimate with personal budgets (IBU
        needs one channel); when the domain sizes differ; when the counts
        cannot be this oracle's (a support count below zero); or for a
        ``start`` that is neither name nor a distribution over the ``D``
        symbols.
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
    tol = check_float(tol, "tol", owner, low=0.0, high=math.inf)  # inf would certify anything
    max_iter = check_int(max_iter, "max_iter", owner, low=0)
    if not isinstance(accelerate, (bool, np.bool_)):
        raise param_error("accelerate", owner, "a bool", accelerate, TypeError)
    accelerate = bool(accelerate)
    D = oracle.domain_size
    start_at = _check_start(start, D, owner)
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
    info: dict[str, Any] = {"tol": tol, "max_iter": max_iter,
                            "start": start if start_at is None else "given",
                            "accelerate": accelerate, "epsilon": eps,
                            "statistic": statistic, "channel": channel.kind,
                            "likelihood": "exact" if channel.exact else "composite"}
    if total == 0 or stat.sum() == 0:
        # no reports, or no report supports any symbol: every f is a maximizer
        f = np.full(D, 1.0 / D)
        info.update(iterations=0, converged=True, distance=0.0, gap=0.0, change=0.0)
    else:
        f = np.full(D, 1.0 / D) if start_at is None else start_at
        auto = start_at is None and start == "auto"
        if auto and channel.kind == "symmetric":
            f = _symmetric_mle(stat / stat.sum(), channel.p, channel.q)
        elif auto and channel.kind == "hadamard":
            support = _hadamard_support(stat, D)
            f = _symmetric_mle(support / support.sum(), channel.p, 0.5)
            if not accelerate:  # the EM cannot revive a zero it starts from (a Newton step can)
                f = np.maximum(f, 1e-12)
        run = _newton if accelerate else _em
        f, updates, converged, distance, gap, change = run(channel, stat, f, tol, max_iter)
        info.update(iterations=updates, converged=converged, distance=distance, gap=gap,
                    change=change)
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
