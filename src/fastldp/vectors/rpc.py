"""Randomized Projection with Clipping (RPC), paper 001 Algorithm 1.

Client ``i`` holds an ``m``-sparse ``x_i``. With the public sign vector
``S_i in {-1, +1}^d`` it sends one number

    u_i = Clip(<x_i, S_i>, R),        Y_i = R * Q(u_i / R)

where ``Q`` is an unbiased ``epsilon``-LDP randomizer on ``[-1, 1]``
(:mod:`fastldp.oracles.randomizers`). The server returns

    mu_hat = (alpha / n) * sum_i Z_i S_i                          (Eq. (20))

with the exact clipping-bias correction ``alpha`` of Eqs. (21) / (86)-(87).

Public signs
------------
``S_i(e)`` is the pair sign ``R_i(e)`` of the counter-based hash keyed by
``(codebook_seed, identity)`` (see :mod:`fastldp._kernels._hash`), so the
aggregator is ``alpha / n`` times the global sketch ``sum_i Z_i S_i``, kept
*exactly* (:func:`fastldp.vectors.base.add_sign_sketch`: the integer sketch
kernel on the exact binary digits of the ``Z_i``, summed in a
:class:`fastldp.streaming.ExactSum`) in ``O(n d)`` and rounded once, so it is
bit-identical for any thread count and any split of the reports
(:meth:`RPC.partial`, :meth:`RPC.merge`, :meth:`RPC.finalize`). A client
evaluates only the Philox blocks that hold its ``<= m`` coordinates (plus
padding).

Value routes (``values=``)
--------------------------
``"ternary"``
    ``x_i(j) in {-1, 0, 1}`` (section 3.1; frequency estimation over
    set-valued data is the case ``{0, 1}``, Remark 2). Users with fewer than
    ``m`` non-zeros are padded (Remark 1): the padding coordinates
    ``d, ..., d + m - 1`` receive ``+1`` until the user has exactly ``m``
    non-zeros; they enter ``<x_i, S_i>`` but are never estimated.
``"rounded"``
    The indirect route of section 6: every stored value in ``[-1, 1]`` is
    first rounded to ``+-1`` by Eq. (35) on the client, then as ``"ternary"``.
``"direct"``
    The direct route of section 6: ``u_i = Clip(<x_i, S_i>, R)`` on the raw
    values, no padding and no correction (``alpha = 1``); the default
    threshold is ``R = beta sqrt(m ln n) + 1`` (Theorem 3), which needs
    ``beta`` (Assumption 1) and the number of users ``n_users``.

How alpha is computed
---------------------
For ``x_i(j) = +-1`` the other ``m - 1`` non-zeros make
``U_ij = sum_{l != j} x_i(l) S_i(l) S_i(j)`` a sum of ``m - 1`` independent
Rademacher variables, so ``U_ij = 2L + 1 - m`` with ``L ~ Binomial(m - 1, 1/2)``
and

    E[Clip(U, -R + 1, R + 1)] = sum_l C(m - 1, l) 2^{-(m - 1)} Clip(2l + 1 - m, -R + 1, R + 1)

(Eq. (87)); ``alpha = 1 / (1 - E[...])`` (Eq. (86)). :func:`clipping_alpha`
evaluates this sum exactly in rational arithmetic (integer binomial
coefficients; the clipped values are integers when ``R`` is) and rounds
once to float. The test suite checks it against a brute-force expectation
over all ``2^m`` sign patterns.

Exact variance and the variance-optimal threshold
-------------------------------------------------
Theorem 1 bounds each coordinate's variance by ``alpha^2 (V_eps R^2 + m) / n``
and Corollary 1 takes ``R = ceil(sqrt(m))``, which balances the two terms of
that bound. The bound is loose: on the ternary and rounded routes (with
padding) the exact variance is

    Var(mu_hat_j) = (alpha^2 K(R) - s_j) / n,    K(R) = E[R^2 Var_Q(u / R) + u^2],

with ``u = Clip(W, R)``, ``W`` a sum of ``m`` independent Rademacher signs, and
``s_j = (1/n) sum_i x_i(j)^2`` (derivation in :meth:`RPC.variance`). Since
``E[u^2] <= E[W^2] = m`` and ``Var_Q <= V_eps``, the bound exceeds the truth by
at least ``alpha^2 (m - E[u^2]) / n``; with Duchi's ``Q``, ``K(R) = R^2 c_eps^2``
exactly, the gap is ``(alpha^2 m + s_j) / n``, and the exact variance grows
with ``R`` (``alpha R`` increases with ``R``, paper 001 Figure 2(a)), so the
variance-optimal threshold is ``R = 1``. ``R="min-variance"`` chooses the
integer ``R`` in ``1..m`` that minimizes the exact variance
(:func:`min_variance_threshold`); the choice needs no knowledge of the data
because only ``s_j`` depends on it, and ``s_j`` does not depend on ``R``.

References
----------
.. [1] Paper 001, "Robust Estimation of Sparse Numerical Vectors under Local
   Differential Privacy": Algorithm 1, Eqs. (17)-(21), Lemma 2 (Appendix D),
   Theorem 1 (Eq. (23)), Corollary 1, Figure 2, section 6 (Eq. (35),
   Theorem 3), section 8.1 (final clipping).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb, exp, isqrt, lgamma, log, sqrt
from typing import Any, Optional, Union

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._hash import pair_signs, set_sign_sums
from .._random import as_generator, resolve_codebook_seed, resolve_identities, resolve_n_threads
from .._validation import check_choice, check_float, check_int, param_error
from .._sanitize import SanitizationReport
from ..results import PrivacyStatement, Result
from .base import (ClipLike, RngLike, ScaledReportSpace, SparseVectors, StreamingServer, VectorsLike,
                   add_sign_sketch, as_sparse_vectors, exact_squares, plug_in_variances,
                   round_to_signs, sanitize_real)
from ..streaming import ExactSum, Partial, chunk_length
from ..oracles.randomizers import Randomizer, make_randomizer

__all__ = ["RPC", "RPCEstimate", "clipping_alpha", "resolve_clip_range", "VALUE_ROUTES",
           "projection_law", "report_second_moment", "min_variance_threshold", "R_RULES"]

VALUE_ROUTES = ("ternary", "rounded", "direct")
_CLIP_NAMES = {"frequency": (0.0, 1.0), "mean": (-1.0, 1.0)}
#: named rules for ``R=``
R_RULES = ("min-variance",)
#: the bounded randomizers ``randomizer="auto"`` chooses from (section 8.1)
_AUTO_CANDIDATES = ("piecewise", "duchi")


def clipping_alpha(m: int, R: float) -> float:
    """Exact bias-correction factor ``alpha`` of Eq. (21) for ``m`` non-zeros and threshold ``R``.

    ``alpha = 1 / (1 - sum_{l=0}^{m-1} C(m-1, l) 2^{-(m-1)} Clip(2l + 1 - m, -R + 1, R + 1))``.
    The sum is taken in exact rational arithmetic (see the module docstring).

    Parameters
    ----------
    m : int >= 1
    R : float >= 1

    Returns
    -------
    float
        ``alpha >= 1``; equal to 1 exactly when ``R >= m`` (nothing is clipped).
    """
    m = check_int(m, "m", "clipping_alpha", low=1)
    R = check_float(R, "R", "clipping_alpha", low=1.0, low_open=False)
    exact = float(R).is_integer()
    lo = Fraction(1) - Fraction(R) if exact else 1.0 - R
    hi = Fraction(1) + Fraction(R) if exact else 1.0 + R
    total = Fraction(0) if exact else 0.0
    for ell in range(m):
        c = 2 * ell + 1 - m
        clipped = min(max(c, lo), hi)
        total += comb(m - 1, ell) * clipped
    expectation = total / (2 ** (m - 1))
    return float(1 / (1 - expectation))


def _integer_alphas(m: int, Rs) -> list:
    """``clipping_alpha(m, R)`` for integer ``R`` (bit-identical), in ``O(m + len(Rs))`` big-int steps.

    For integer ``R`` the sum of Eq. (87) times ``2^(m - 1)`` is an integer
    ``N``, so ``alpha = 2^(m - 1) / (2^(m - 1) - N)`` and one correctly
    rounded integer division gives the same float as :func:`clipping_alpha`.
    Prefix sums of ``C(m - 1, l)`` and ``C(m - 1, l) (2l + 1 - m)`` give ``N``
    for every ``R`` without a loop over ``l``.
    """
    k = m - 1
    coef = [1] * (k + 1)
    for ell in range(1, k + 1):
        coef[ell] = coef[ell - 1] * (k - ell + 1) // ell
    pre_c = [0] * (k + 2)    # sum_{l < t} C(k, l)
    pre_cv = [0] * (k + 2)   # sum_{l < t} C(k, l) (2l + 1 - m)
    for ell in range(k + 1):
        pre_c[ell + 1] = pre_c[ell] + coef[ell]
        pre_cv[ell + 1] = pre_cv[ell] + coef[ell] * (2 * ell + 1 - m)
    total_c = pre_c[-1]
    out = []
    for R in Rs:
        R = int(R)
        lo, hi = 1 - R, 1 + R
        # c_l = 2l + 1 - m < lo  <=>  l < (lo + m - 1) / 2 ;  c_l > hi  <=>  l > (hi + m - 1) / 2
        a = min(max(_ceil_half(lo + m - 1), 0), k + 1)
        b = min(max((hi + m - 1) // 2 + 1, 0), k + 1)
        n_int = lo * pre_c[a] + (pre_cv[b] - pre_cv[a]) + hi * (total_c - pre_c[b])
        out.append((2 ** k) / (2 ** k - n_int))
    return out


def _ceil_half(v: int) -> int:
    return -((-v) // 2)


def projection_law(m: int):
    """Law of ``W = <x', S>`` for a user with exactly ``m`` entries ``+-1``.

    ``x'(l) S(l)`` are ``m`` independent Rademacher signs, whatever ``x'`` is,
    so ``W = 2L - m`` with ``L ~ Binomial(m, 1/2)``.

    Returns
    -------
    (values, probs) : two float64 arrays of length ``m + 1``
        ``values[l] = 2l - m`` and ``probs[l] = C(m, l) 2^-m`` (exact integer
        division up to ``m = 2000``, log-gamma above; tails below the float
        range are 0).
    """
    m = check_int(m, "m", "projection_law", low=1)
    values = np.arange(-m, m + 1, 2, dtype=np.float64)
    if m <= 2000:
        probs, c, den = [], 1, 2**m
        for ell in range(m + 1):
            probs.append(c / den)
            c = c * (m - ell) // (ell + 1)
        return values, np.array(probs, dtype=np.float64)
    ell = np.arange(m + 1)
    logp = (lgamma(m + 1) - np.array([lgamma(v + 1) + lgamma(m - v + 1) for v in ell])
            - m * log(2.0))
    return values, np.exp(logp)


def report_second_moment(m: int, R: float, randomizer: Randomizer) -> float:
    """``K(R) = E[Y^2] = E[R^2 Var_Q(u / R) + u^2]`` for ``u = Clip(W, R)`` (see :meth:`RPC.variance`).

    ``W`` follows :func:`projection_law`; ``Var_Q`` is ``randomizer.variance``.
    With Duchi's ``Q`` this is ``R^2 c_eps^2`` for every law of ``u``.
    """
    values, probs = projection_law(m)
    u = np.clip(values, -R, R)
    t = np.clip(u / R, -1.0, 1.0)
    g = R * R * randomizer.variance(t) + u * u
    return float(np.dot(probs, g))


def min_variance_threshold(m: int, randomizer: Randomizer):
    """The integer ``R`` in ``1..m`` minimizing RPC's exact variance; returns ``(R, alpha, K)``.

    The exact per-coordinate variance is ``(alpha(R)^2 K(R) - s_j) / n``
    (:meth:`RPC.variance`). Only ``s_j`` depends on the data, and it does not
    depend on ``R``, so the minimizer of ``alpha^2 K`` minimizes the variance
    of every coordinate, for every data set and every ``n``: the server needs
    neither ``mu`` nor a worst case over the data domain. ``R > m`` is never
    better than ``R = m`` for the randomizers of paper 001 (nothing is clipped,
    ``alpha = 1``, and ``K`` only grows), so ``1..m`` is searched. Ties go to
    the smallest ``R``. Cost: ``O(m^2)`` floating-point operations.
    """
    m = check_int(m, "m", "min_variance_threshold", low=1)
    if not isinstance(randomizer, Randomizer):
        raise param_error("randomizer", "min_variance_threshold", "a Randomizer", randomizer,
                          TypeError)
    Rs = list(range(1, m + 1))
    alphas = _integer_alphas(m, Rs)
    values, probs = projection_law(m)
    best = None
    for R, alpha in zip(Rs, alphas):
        u = np.clip(values, -R, R)
        K = float(np.dot(probs, R * R * randomizer.variance(u / R) + u * u))
        score = alpha * alpha * K
        if best is None or score < best[0]:
            best = (score, float(R), alpha, K)
    return best[1], best[2], best[3]


def resolve_clip_range(clip, owner: str):
    """``None``, ``"frequency"`` (``[0, 1]``), ``"mean"`` (``[-1, 1]``) or ``(low, high)``."""
    if clip is None:
        return None
    if isinstance(clip, str):
        return _CLIP_NAMES[check_choice(clip, "clip_estimate", owner, tuple(_CLIP_NAMES))]
    try:
        low, high = (float(v) for v in clip)
    except (TypeError, ValueError):
        raise param_error("clip_estimate", owner,
                          "None, 'frequency', 'mean' or a pair (low, high)", clip, TypeError) from None
    if not (low < high):
        raise param_error("clip_estimate", owner, "a pair (low, high) with low < high", clip)
    return (low, high)


@dataclass(frozen=True, repr=False)
class RPCEstimate(Result):
    """Result of :meth:`RPC.estimate`, on the shared result base (:class:`fastldp.results.Result`).

    Attributes
    ----------
    mean : float64 array, shape (d,)
        The estimate, clipped to the feasible range when the mechanism was
        built with ``clip_estimate`` (section 8.1), otherwise equal to ``raw``;
        also :attr:`estimate`.
    raw : float64 array, shape (d,)
        ``(alpha / n) sum_i Z_i S_i`` of Eq. (20): unbiased for the sample mean
        in a trusted environment (Lemma 2).
    alpha : float
    R : float
    sanitization : SanitizationReport
        Counts of malformed reports (see :func:`~fastldp.vectors.base.sanitize_real`).
    n_threads : int
    n : int
        The number of reports (users).
    privacy : fastldp.results.PrivacyStatement
        ``epsilon``-LDP per user (a user's whole vector).
    variances : float64 array, shape (d,)
        The plug-in variance of each entry of :attr:`raw`, computed from the
        reports: ``(alpha^2 (1/n) sum_i Z_i^2 - min(|raw_j|, 1)) / n``, the
        exact variance of :meth:`RPC.variance` with ``K = E[Z^2]`` estimated
        by the reports' mean square and ``s_j`` by ``|raw_j|`` (see
        :func:`~fastldp.vectors.base.plug_in_variances` for when that is
        exact); clipped at 0. Clipping the estimate is 1-Lipschitz, so this
        also bounds the variance of a clipped :attr:`mean`. On the direct
        route and with ``pad=False`` the estimate is biased and this is the
        variance about its own expectation. ``std`` (from the result base)
        is its square root.
    seconds : dict

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.RPC(d=500, m=2, epsilon=1.0, codebook_seed=3)
    >>> x = np.zeros((2000, 500)); x[:, 0] = 1.0; x[:1000, 1] = 1.0
    >>> est = mech.estimate(mech.privatize(x, rng=0))
    >>> est.estimate is est.mean, est.n, est.std.shape
    (True, 2000, (500,))
    >>> len(repr(est)) <= 200
    True
    """

    _estimate_field = "mean"

    mean: np.ndarray
    raw: np.ndarray
    alpha: float
    R: float
    sanitization: SanitizationReport
    n_threads: int
    n: int
    privacy: PrivacyStatement
    variances: np.ndarray
    seconds: dict = field(default_factory=dict)


class RPC(ScaledReportSpace, StreamingServer):
    """Randomized Projection with Clipping: one real number per user, epsilon-LDP.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 1``.
    m : int
        Sparsity: every user holds at most ``m <= d`` items. ``items_per_user``
        is the same parameter under the name every family shares (pass one).
    epsilon : float in (0, inf)
        Privacy budget of the randomizer ``Q``.
    randomizer : {"duchi", "piecewise", "laplace", "auto"} or Randomizer
        ``Q`` of Algorithm 1, step 4. ``"auto"`` takes the bounded randomizer
        with the smallest ``V_eps`` (section 8.1); with ``R="min-variance"``
        it takes the bounded randomizer whose variance-optimal ``R`` gives the
        smallest exact variance (ties to Duchi). Default ``"duchi"``: binary
        output, ``O(1)`` communication, and the smallest ``c_eps``.
    R : float >= 1 or "min-variance", optional
        Clipping threshold. Default ``ceil(sqrt(m))`` (Corollary 1) for the
        ``"ternary"`` and ``"rounded"`` routes, ``beta sqrt(m ln n_users) + 1``
        for ``"direct"``. ``"min-variance"`` (ternary and rounded routes, with
        padding) takes the integer ``R`` in ``1..m`` that minimizes the exact
        variance of :meth:`variance` (:func:`min_variance_threshold`); it uses
        no data, because the data enter the exact variance only through a
        term that does not depend on ``R``. With Duchi's ``Q`` it is ``R = 1``.
    values : {"ternary", "rounded", "direct"}
        How values are handled (module docstring).
    beta : float in (0, 1), optional
        Assumption 1's bound, for the direct route's default ``R``.
    n_users : int, optional
        Number of users, for the direct route's default ``R``.
    pad : bool
        Pad users with fewer than ``m`` non-zeros (Remark 1; ternary and
        rounded routes). ``pad=False`` is only for measuring what padding
        buys: short users then make the estimate biased.
    clip_estimate : None, "frequency", "mean" or (low, high)
        Final clipping of the estimate (section 8.1): ``"frequency"`` is
        ``[0, 1]``, ``"mean"`` is ``[-1, 1]``.
    codebook_seed : int in [0, 2**64) or None
        Public seed of the sign vectors ``S_i``.
    n_threads : int or None
        Threads for the server sketch and client sign sums; results do not
        depend on it.

    Attributes
    ----------
    alpha : float
        Eq. (21) (1 on the direct route).
    randomizer : Randomizer
    R : float
    R_rule : str
        How ``R`` was set: ``"given"``, ``"default"`` or ``"min-variance"``.

    Notes
    -----
    Privacy: ``u_i / R in [-1, 1]`` whatever ``x_i`` and ``S_i`` are, so
    ``Y_i`` is ``epsilon``-LDP because ``Q`` is. The output space is
    ``R`` times that of ``Q``: ``{-R c, R c}`` for Duchi, ``[-R b, R b]`` for
    Piecewise, the real line for Laplace.

    Accuracy (Theorem 1): every coordinate has variance at most
    ``alpha^2 (V_eps R^2 + m) / n`` and ``E ||mu_hat - mu||_1 <= d alpha sqrt((V_eps R^2 + m) / n)``
    (:meth:`variance_bound`). The exact variance is :meth:`variance`.

    References
    ----------
    .. [1] Paper 001, Algorithm 1, Eqs. (20)-(21), Lemma 2, Theorems 1-4.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.vectors.rpc import RPC
    >>> mech = RPC(d=6, m=2, epsilon=1.0, codebook_seed=3)
    >>> x = np.array([[1, 0, -1, 0, 0, 0], [0, 1, 0, 0, 0, 0]])
    >>> y = mech.privatize(x, rng=0)
    >>> y.shape, bool(mech.is_legal(y).all())
    ((2,), True)
    >>> est = mech.estimate(y)
    >>> est.estimate.shape, est.n, est.std.shape
    ((6,), 2, (6,))
    """

    def __init__(self, *, d: int, m: Optional[int] = None, epsilon: float,
                 items_per_user: Optional[int] = None,
                 randomizer: Union[str, Randomizer] = "duchi",
                 R: Union[None, float, str] = None, values: str = "ternary",
                 beta: Optional[float] = None, n_users: Optional[int] = None, pad: bool = True,
                 clip_estimate: ClipLike = None, codebook_seed: Optional[int] = None,
                 n_threads: Optional[int] = None) -> None:
        owner = type(self).__name__
        self._set_d_m_epsilon(d, m, items_per_user, epsilon, owner)
        self.values = check_choice(values, "values", owner, VALUE_ROUTES)
        if not isinstance(pad, (bool, np.bool_)):
            raise param_error("pad", owner, "a bool", pad, TypeError)
        self.pad = bool(pad)
        min_var = isinstance(R, str)
        if min_var:
            check_choice(R, "R", owner, R_RULES)
            if self.values == "direct" or not self.pad:
                raise ValueError(
                    f"The 'R' parameter of {owner} can be 'min-variance' only on the 'ternary' "
                    "and 'rounded' routes with pad=True, where the exact variance is known. "
                    f"Got R={R!r} with values={self.values!r}, pad={self.pad} instead."
                )
        if min_var and isinstance(randomizer, str) and randomizer == "auto":
            cands = [make_randomizer(name, self.epsilon, owner) for name in _AUTO_CANDIDATES]
            scored = [(min_variance_threshold(self.m, q), q) for q in cands]
            # smallest alpha^2 K; ties to the later candidate (Duchi)
            (R, _, _), self.randomizer = min(
                scored[::-1], key=lambda item: item[0][1] ** 2 * item[0][2])
        else:
            self.randomizer: Randomizer = make_randomizer(randomizer, self.epsilon, owner)
            if min_var:
                R = min_variance_threshold(self.m, self.randomizer)[0]
        self.R_rule = "min-variance" if min_var else ("default" if R is None else "given")
        self.beta = None if beta is None else check_float(beta, "beta", owner, low=0.0, high=1.0)
        self.n_users = None if n_users is None else check_int(n_users, "n_users", owner, low=2)
        if R is None:
            if self.values == "direct":
                if self.beta is None or self.n_users is None:
                    raise ValueError(
                        f"The 'R' parameter of {owner} is required on the direct route unless "
                        "both 'beta' and 'n_users' are given (R = beta sqrt(m ln n) + 1). "
                        "Got R=None instead."
                    )
                R = self.beta * sqrt(self.m * log(self.n_users)) + 1.0
            else:
                R = float(isqrt(self.m - 1) + 1)  # ceil(sqrt(m)) in integers
        self.R = check_float(R, "R", owner, low=1.0, low_open=False)
        self.clip_estimate = resolve_clip_range(clip_estimate, owner)
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.n_threads = resolve_n_threads(n_threads, owner)
        self.alpha = 1.0 if self.values == "direct" else clipping_alpha(self.m, self.R)

    def __repr__(self) -> str:
        return (
            f"RPC(d={self.d}, m={self.m}, epsilon={self.epsilon!r}, "
            f"randomizer={self.randomizer.name!r}, R={self.R!r}, values={self.values!r}, "
            f"pad={self.pad}, clip_estimate={self.clip_estimate!r}, "
            f"codebook_seed={self.codebook_seed})"
        )

    # ------------------------------------------------------------ public facts
    def is_legal(self, reports: ArrayLike) -> np.ndarray:
        """Mask of reports inside the output space of ``R * Q``."""
        return self._report_mask(np.asarray(reports, dtype=np.float64))

    def variance_bound(self, n: int) -> float:
        """Theorem 1's per-coordinate variance bound ``alpha^2 (V_eps R^2 + m) / n``."""
        n = check_int(n, "n", "RPC.variance_bound", low=1)
        return self.alpha**2 * (self.randomizer.V_eps * self.R**2 + self.m) / n

    def variance(self, mu: ArrayLike, n: int, *,
                 second_moment: Optional[ArrayLike] = None) -> np.ndarray:
        """Exact per-coordinate variance of the raw estimate ``mu_hat`` (Eq. (20)) from ``n`` users.

        It needs the true mean ``mu``; the plug-in value from the reports
        themselves is :attr:`RPCEstimate.variances` (what :meth:`estimate`
        returns).

        Parameters
        ----------
        mu : float or array_like of floats in [-1, 1]
            The true per-coordinate means ``mu_j = (1/n) sum_i x_i(j)``
            (frequencies for ``{0, 1}`` data). Shape ``(d,)`` or anything
            broadcastable; a scalar gives a scalar-shaped array.
        n : int >= 1
            Number of users.
        second_moment : float or array_like of floats in [0, 1], optional
            ``s_j = (1/n) sum_i x_i(j)^2``, the only way the data enter.
            Default ``|mu|``: exact for ``{0, 1}`` (frequency) data, where
            ``x^2 = x``, and for coordinates whose non-zeros share one sign.
            For ternary data ``s_j`` is the fraction of users holding ``j``
            (at least ``|mu_j|``); on the rounded route it is the mean of the
            squared raw values (at least ``mu_j^2``). Pass it when known.

        Returns
        -------
        float64 array, the broadcast shape of ``mu`` and ``second_moment``
            ``(alpha^2 K - s_j) / n`` with ``K = E[Y_i^2]``
            (:func:`report_second_moment`). With Duchi's ``Q``:
            ``(alpha^2 R^2 c_eps^2 - s_j) / n``.

        Notes
        -----
        Derivation (ternary and rounded routes with padding; the signs
        ``S_i`` are uniform and independent across users and coordinates,
        and the variance is over ``S``, the rounding and ``Q``). The estimate
        is ``mu_hat_j = (1/n) sum_i T_ij`` with ``T_ij = alpha Y_i S_i(j)``
        independent across users, so ``Var(mu_hat_j) = (1/n^2) sum_i Var(T_ij)``.

        * Mean: ``E[T_ij] = x_i(j)`` (Lemma 2; on the rounded route after
          averaging over the rounding of Eq. (35), whose mean is ``x_i(j)``).
        * Second moment: ``S_i(j)^2 = 1``, so ``E[T_ij^2] = alpha^2 E[Y_i^2]``
          and, as ``Y_i = R Q(u_i / R)`` with ``E[Q(t)] = t``,
          ``E[Y_i^2 | u_i] = R^2 (Var_Q(u_i / R) + (u_i / R)^2) = R^2 Var_Q(u_i / R) + u_i^2``.
        * Law of ``u_i``: after padding (and rounding) user ``i`` has exactly
          ``m`` entries ``+-1``, and ``x'(l) S_i(l)`` are ``m`` independent
          Rademacher signs whatever the entries are, so
          ``<x_i', S_i> = W = 2L - m``, ``L ~ Binomial(m, 1/2)``, the same law
          for every user, and ``u_i = Clip(W, R)``. Hence
          ``E[Y_i^2] = K = sum_l C(m, l) 2^-m (R^2 Var_Q(Clip(2l - m, R) / R) + Clip(2l - m, R)^2)``.
        * So ``Var(T_ij) = alpha^2 K - x_i(j)^2`` and
          ``Var(mu_hat_j) = (alpha^2 K - s_j) / n``.

        Per randomizer (``u = Clip(W, R)``, ``h = e^{eps/2} - 1``):

        * Duchi: ``Var_Q(t) = c^2 - t^2``, so ``R^2 Var_Q(u / R) + u^2 = R^2 c^2``
          for every ``u``: ``Var = (alpha^2 R^2 c^2 - s_j) / n``, which for
          frequency data is ``(alpha^2 R^2 c^2 - mu_j) / n``;
        * Laplace: ``Var_Q = 8 / eps^2``: ``K = R^2 8 / eps^2 + E[u^2]``;
        * Piecewise: ``Var_Q(t) = t^2 / h + (h + 4) / (3 h^2)``:
          ``K = (1 + 1/h) E[u^2] + R^2 (h + 4) / (3 h^2)``.

        Theorem 1's bound ``alpha^2 (V_eps R^2 + m) / n`` follows from
        ``Var_Q <= V_eps`` and ``E[u^2] <= E[W^2] = m``; with Duchi it exceeds
        the exact value by ``(alpha^2 m + s_j) / n``.

        The final clipping (``clip_estimate``) is not included: it only
        lowers the error. The direct route (no padding, data-dependent
        projection law, biased) and ``pad=False`` are not covered and raise.
        """
        owner = "RPC.variance"
        if self.values == "direct" or not self.pad:
            raise ValueError(
                f"{owner} is exact on the 'ternary' and 'rounded' routes with pad=True; this "
                f"mechanism has values={self.values!r}, pad={self.pad}."
            )
        n = check_int(n, "n", owner, low=1)
        mu_arr = np.asarray(mu, dtype=np.float64)
        if not np.all((mu_arr >= -1.0) & (mu_arr <= 1.0)):
            raise param_error("mu", owner, "floats in [-1.0, 1.0]", mu)
        if second_moment is None:
            s = np.abs(mu_arr)
        else:
            s = np.asarray(second_moment, dtype=np.float64)
            if not np.all((s >= 0.0) & (s <= 1.0)):
                raise param_error("second_moment", owner, "floats in [0.0, 1.0]", second_moment)
        K = report_second_moment(self.m, self.R, self.randomizer)
        return (self.alpha**2 * K - s) / n

    def sign_vectors(self, identities: ArrayLike, coords: ArrayLike) -> np.ndarray:
        """The public signs ``S_i(e)`` as an int8 matrix ``(len(identities), len(coords))``."""
        ids = np.ascontiguousarray(identities, dtype=np.uint64)
        coords = np.ascontiguousarray(coords, dtype=np.int64)
        rows = np.repeat(ids, coords.shape[0])
        cols = np.tile(coords, ids.shape[0])
        return pair_signs(self.codebook_seed, rows, cols).reshape(ids.shape[0], coords.shape[0])

    # ------------------------------------------------------------------ client
    def vectors(self, x: VectorsLike) -> SparseVectors:
        """Validate ``x`` for this mechanism and return it as :class:`SparseVectors`."""
        return as_sparse_vectors(x, d=self.d, owner=type(self).__name__, m=self.m,
                                 ternary=self.values == "ternary")

    def _padding_sums(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """``sum_{k < counts[i]} S_i(d + k)`` per user (Remark 1)."""
        counts = counts.astype(np.int64)
        if not counts.any():
            return np.zeros(ids.shape[0], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        pairs = self.d + (np.arange(indptr[-1], dtype=np.int64) - np.repeat(indptr[:-1], counts))
        return set_sign_sums(self.codebook_seed, ids, indptr, pairs, self.n_threads)

    def _signed_sums(self, ids, vecs: SparseVectors, signs: np.ndarray) -> np.ndarray:
        """``sum_j signs_j S_i(j)`` for entries with ``signs in {-1, 0, +1}``."""
        out = np.zeros(vecs.n, dtype=np.int64)
        rows = vecs.rows
        for sgn in (1, -1):
            keep = signs == sgn
            if not keep.any():
                continue
            counts = np.bincount(rows[keep], minlength=vecs.n)
            indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            out += sgn * set_sign_sums(self.codebook_seed, ids, indptr,
                                       np.ascontiguousarray(vecs.indices[keep]), self.n_threads)
        return out

    def projections(self, x: VectorsLike, *, identities: Optional[ArrayLike] = None,
                    rng: RngLike = None) -> np.ndarray:
        """Return ``<x_i', S_i>`` before clipping (``x_i'`` rounded and padded per route).

        ``rng`` is used only by the rounded route (Eq. (35)).
        """
        vecs = self.vectors(x)
        ids = resolve_identities(identities, vecs.n, type(self).__name__)
        if self.values == "direct":
            s = pair_signs(self.codebook_seed, np.repeat(ids, vecs.sizes), vecs.indices)
            return np.bincount(vecs.rows, weights=s * vecs.values, minlength=vecs.n)
        if self.values == "rounded":
            signs = round_to_signs(vecs.values, as_generator(rng, "RPC.privatize")).astype(np.int8)
        else:
            signs = vecs.values.astype(np.int8)
        total = self._signed_sums(ids, vecs, signs)
        if self.pad:
            nonzero = np.bincount(vecs.rows, weights=(signs != 0), minlength=vecs.n)
            total = total + self._padding_sums(ids, self.m - nonzero.astype(np.int64))
        return total.astype(np.float64)

    def encode(self, x: VectorsLike, *, identities: Optional[ArrayLike] = None,
               rng: RngLike = None) -> np.ndarray:
        """``u_i = Clip(<x_i, S_i>, R)`` (Algorithm 1, step 3)."""
        return np.clip(self.projections(x, identities=identities, rng=rng), -self.R, self.R)

    def privatize(self, x: VectorsLike, *, epsilons: Optional[ArrayLike] = None,
                  identities: Optional[ArrayLike] = None, rng: RngLike = None) -> np.ndarray:
        """Release ``Y_i = R Q(u_i / R)`` for every user (Algorithm 1, steps 2-5).

        Parameters
        ----------
        x : SparseVectors, scipy.sparse matrix (n, d) or array (n, d)
            Values per route (``values=``); at most ``m`` items per user.
        epsilons : None or float, optional
            RPC has one budget, the constructor's ``epsilon``: ``None`` or
            that value (a scalar or one per user); anything else is a
            ``ValueError`` (no personal budgets).
        identities : array_like of int, optional
            Distinct public identities keying ``S_i`` (default ``0..n-1``); the
            server must use the same ones.
        rng : None, int, SeedSequence or Generator
            The clients' private randomness (rounding and ``Q``).

        Returns
        -------
        float64 array, shape (n,)
        """
        owner = "RPC.privatize"
        self._fixed_budget(epsilons, None, owner)
        gen = as_generator(rng, owner)
        u = self.encode(x, identities=identities, rng=gen)
        self._fixed_budget(epsilons, u.shape[0], owner)
        return self.R * self.randomizer.privatize(u / self.R, rng=gen)

    # ------------------------------------------------------------------ server
    _REASONS = ("off_alphabet", "out_of_range", "infinite", "nan", "non_numeric")

    def sanitize(self, reports: ArrayLike, n: int,
                 owner: str = "RPC.estimate") -> tuple[np.ndarray, SanitizationReport]:
        """Project received reports onto the hull of the output space (counted)."""
        lo, hi = self.output_bounds
        return sanitize_real(reports, (n,), lo, hi, owner, is_legal=self.is_legal)

    def estimate(self, reports: Any, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> RPCEstimate:
        """Aggregate ``mu_hat = (alpha / n) sum_i Z_i S_i`` (Eq. (20), Algorithm 1 step 14).

        Exactly ``finalize(partial(reports, identities=identities))``: the sums
        ``sum_i Z_i S_i`` and ``sum_i Z_i^2`` are exact and rounded once, so a
        decode split into chunks (:meth:`partial`, :meth:`merge`) gives the
        same bits.

        Parameters
        ----------
        reports : array_like, shape (n,)
            One received number per user; malformed reports are sanitized and
            counted, never raised on.
        epsilons : None or float, optional
            ``None`` or the constructor's ``epsilon`` (a scalar or one per
            report); anything else is a ``ValueError`` (no personal budgets).
        identities : array_like of int, optional
            The identities the clients used (default ``0..n-1``).

        Returns
        -------
        RPCEstimate
            With the plug-in :attr:`~RPCEstimate.variances` of every
            coordinate, computed from the reports.
        """
        owner = "RPC.estimate"
        try:
            n = len(reports)
        except TypeError:
            raise ValueError(
                "The 'reports' parameter of RPC.estimate must be a non-empty 1-d array. "
                f"Got {type(reports).__name__} instead."
            ) from None
        if n < 1:
            raise ValueError("The 'reports' parameter of RPC.estimate must be non-empty. Got 0 reports instead.")
        t0 = time.perf_counter()
        state = self._partial(reports, epsilons, identities, owner)
        t1 = time.perf_counter()
        result = self._finalize(state, owner)
        result.seconds["sketch"] = t1 - t0 + result.seconds.pop("scale")
        return result

    # ------------------------------------------------------------ streaming
    def stream_params(self) -> dict:
        """The public parameters a partial is bound to (JSON values).

        ``type(self)(**params)`` rebuilds an equivalent server: ``R`` is the
        resolved threshold (so its ``R_rule`` reads ``"given"``) and
        ``randomizer`` is the resolved randomizer's *name* (``"auto"`` is
        recorded as what it chose). A custom :class:`Randomizer` subclass is
        recorded by its ``name`` too and rebuilds only if that name is one of
        :data:`fastldp.oracles.randomizers.RANDOMIZERS`. ``n_threads`` is not
        a parameter: results do not depend on it.
        """
        return {"d": self.d, "m": self.m, "epsilon": self.epsilon,
                "randomizer": self.randomizer.name, "R": self.R, "values": self.values,
                "beta": self.beta, "n_users": self.n_users, "pad": self.pad,
                "clip_estimate": None if self.clip_estimate is None else list(self.clip_estimate),
                "codebook_seed": self.codebook_seed}

    def _sum_sizes(self) -> dict:
        return {"sketch": self.d, "squares": 1}

    def partial(self, reports: Any, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """The exact, mergeable state of the RPC server over a chunk of reports.

        Parameters
        ----------
        reports : array_like, shape (n,)
            The chunk's reports (``n`` may be 0); sanitized and counted as in
            :meth:`estimate`.
        epsilons : None or float
            RPC's budget is fixed by the constructor: ``None``, or the
            mechanism's ``epsilon`` (a scalar or one per report); anything
            else raises ``ValueError``.
        identities : array_like of int, optional
            The chunk's identities. The default ``0 .. n-1`` is right only
            for a first chunk: pass them for every other chunk.

        Returns
        -------
        fastldp.streaming.Partial
            Holds ``sum_i Z_i S_i(j)`` for ``j < d`` as an
            :class:`~fastldp.streaming.ExactSum` (``"sketch"``, built by
            :func:`~fastldp.vectors.base.add_sign_sketch` from the exact
            binary digits of the sanitized ``Z_i``), the exact sum of the
            squares ``Z_i^2`` (each rounded once; ``"squares"``, for the
            plug-in variance), and as integer counts the number of reports
            (``"users"``) and the sanitization outcomes. ``O(d)`` memory
            whatever ``n``.
        """
        return self._partial(reports, epsilons, identities, "RPC.partial")

    def _partial(self, reports, epsilons, identities, owner) -> Partial:
        n = chunk_length(reports, owner)
        self._fixed_budget(epsilons, n, owner)
        ids = resolve_identities(identities, n, owner)
        sketch, squares = ExactSum(self.d), ExactSum(1)
        report = None
        if n:
            z, report = self.sanitize(reports, n, owner)
            add_sign_sketch(sketch, self.codebook_seed, ids, z, self.n_threads)
            squares.add_terms(exact_squares(z))
        return self._new_partial(n, report, {"sketch": sketch, "squares": squares})

    def finalize(self, partial: Partial) -> RPCEstimate:
        """Turn a (merged) partial into the :class:`RPCEstimate` of all its reports.

        ``raw = (alpha / n) * S`` with ``S`` the exact sketch rounded once;
        ``ValueError`` for a partial of another mechanism or other parameters,
        or one holding no reports.
        """
        result = self._finalize(partial, "RPC.finalize")
        result.seconds["sketch"] = result.seconds.pop("scale")
        return result

    def _finalize(self, partial: Partial, owner: str) -> RPCEstimate:
        state = self._open(partial, owner)
        t0 = time.perf_counter()
        n = state.counts["users"]
        raw = (self.alpha / n) * state.sums["sketch"].value()
        mean = raw if self.clip_estimate is None else np.clip(raw, *self.clip_estimate)
        # T_ij = alpha Z_i S_i(j) and S_i(j)^2 = 1: sum_i T_ij^2 = alpha^2 sum_i Z_i^2
        variances = plug_in_variances(self.alpha**2 * state.sums["squares"].value()[0], raw, n)
        t1 = time.perf_counter()
        return RPCEstimate(mean=mean, raw=raw, alpha=self.alpha, R=self.R,
                           sanitization=self._report_of(state), n_threads=self.n_threads,
                           n=n, privacy=self._privacy(), variances=variances,
                           seconds={"scale": t1 - t0})
