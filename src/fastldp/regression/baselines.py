"""Baselines of paper 002's evaluation: non-private Lasso, LDP-IHT and 2-SLR.

(Sample-SDP, the fourth baseline, is :class:`fastldp.regression.SampleSDP`.)
The summary of the paper names LDP-IHT and 2-SLR without their details; the
forms here are the standard published ones, with our choices written in
each docstring.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, TypeVar, Union

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._gather import take_block, take_entries
from .._random import RngLike, as_generator
from .._validation import check_float, check_int, param_error
from ._base import (
    Privacy, RegressionEstimator, candidate_index, check_Xy, nonfinite_rows, row_bookkeeping,
)

if TYPE_CHECKING:
    from .local import Precomputed

__all__ = ["Lasso", "lasso_gram", "LDPIHT", "TwoStageSLR", "hard_threshold",
           "kary_randomized_response", "laplace_vector", "ldp_iht_laplace_scale",
           "ldp_iht_coordinate_scale", "two_slr_laplace_scale"]

# fit returns the estimator itself, typed as its own class
_Lasso = TypeVar("_Lasso", bound="Lasso")
_LDPIHT = TypeVar("_LDPIHT", bound="LDPIHT")
_TwoStageSLR = TypeVar("_TwoStageSLR", bound="TwoStageSLR")


# ---------------------------------------------------------------- local randomizers
def kary_randomized_response(indices: ArrayLike, d: int, epsilon: float,
                             rng: RngLike = None) -> np.ndarray:
    """k-ary randomized response over ``[0, d)``, one report per index (pure eps-LDP).

    Each index is kept with probability ``p = e^eps / (e^eps + d - 1)``;
    otherwise it is replaced by a uniformly random *other* value of ``[0, d)``,
    so every other value has probability ``1 / (e^eps + d - 1)`` and the
    ratio of any report's probabilities under two inputs is at most ``e^eps``.
    This is the local randomizer of :class:`TwoStageSLR`'s stage 1.

    Parameters
    ----------
    indices : array_like of int
        1-d, every entry in ``[0, d)``.
    d : int
        Domain size, >= 1 (with ``d = 1`` the report is the index itself).
    epsilon : float
        In (0, inf]; ``inf`` keeps every index (no privacy).
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    ndarray of int64
        The reports, same length as ``indices``.
    """
    owner = "kary_randomized_response"
    d = check_int(d, "d", owner, low=1)
    eps = check_float(epsilon, "epsilon", owner, low=0)
    idx = np.asarray(indices)
    if idx.ndim != 1 or (idx.size and idx.dtype.kind not in "iu"):
        raise param_error("indices", owner, "a 1-d array of ints", f"array of shape {idx.shape} "
                          f"and dtype {idx.dtype}", TypeError)
    idx = idx.astype(np.int64)
    if idx.size and (idx.min() < 0 or idx.max() >= d):
        raise param_error("indices", owner, f"ints in [0, {d})",
                          f"values in [{idx.min()}, {idx.max()}]")
    gen = as_generator(rng, owner)
    n = idx.shape[0]
    if d == 1:
        return idx.copy()
    # p = e^eps / (e^eps + d - 1), written so that a large eps neither overflows nor loses p = 1
    p = 1.0 / (1.0 + (d - 1) * math.exp(-eps))
    keep = gen.random(n) < p
    other = (idx + gen.integers(1, d, n)) % d  # uniform over the d - 1 other values
    return np.where(keep, idx, other)


def kary_keep_probability(d: int, epsilon: float) -> tuple[float, float]:
    """``(p, q)`` of :func:`kary_randomized_response`: keep, and each other value."""
    if d == 1:
        return 1.0, 0.0
    p = 1.0 / (1.0 + (d - 1) * math.exp(-epsilon))
    return p, (1.0 - p) / (d - 1)


def laplace_vector(values: ArrayLike, scale: float, rng: RngLike = None) -> np.ndarray:
    """The local Laplace release: ``values`` plus i.i.d. Laplace(``scale``) noise per entry.

    The local randomizer of :class:`LDPIHT` (a record's clipped gradient,
    ``scale =`` :func:`ldp_iht_laplace_scale`) and of :class:`TwoStageSLR`'s
    stage 2 (a user's clipped least-squares solution, ``scale =``
    :func:`two_slr_laplace_scale`): with values in a box of l1 diameter
    ``Delta``, ``scale = Delta / eps`` gives pure eps-LDP. The fits draw the
    *sum* of a batch's Laplace noise directly (a difference of two Gamma
    variables, the same law) for speed; this function is the per-party form.

    Parameters
    ----------
    values : array_like of float
        Finite values (any shape), one party's or one row per party.
    scale : float
        In [0, inf); 0 releases ``values`` unchanged.
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    ndarray of float64, the shape of ``values``
    """
    owner = "laplace_vector"
    scale = check_float(scale, "scale", owner, low=0, low_open=False, high=math.inf)
    v = np.asarray(values, dtype=np.float64)
    if not np.isfinite(v).all():
        raise param_error("values", owner, "finite (no NaN or inf)", "an array with NaN or inf")
    gen = as_generator(rng, owner)
    if scale == 0:
        return v.copy()
    return v + gen.laplace(0.0, scale, v.shape)


def ldp_iht_laplace_scale(grad_clip: float, d: int, epsilon: float) -> float:
    """LDP-IHT's Laplace scale ``2 grad_clip d / eps``.

    A record's gradient lies in the box ``[-grad_clip, grad_clip]^d``, whose
    l1 diameter (the l1 sensitivity of the report) is ``2 grad_clip d``.
    ``eps = inf`` gives 0.
    """
    owner = "ldp_iht_laplace_scale"
    grad_clip = check_float(grad_clip, "grad_clip", owner, low=0, high=math.inf)
    d = check_int(d, "d", owner, low=1)
    eps = check_float(epsilon, "epsilon", owner, low=0)
    return 2.0 * grad_clip * d / eps


def ldp_iht_coordinate_scale(grad_clip: float, d: int, epsilon: float) -> float:
    """LDP-IHT's Laplace scale ``2 grad_clip / eps`` for one sampled coordinate.

    With ``mechanism="coordinate"`` a record reports one coordinate ``j`` of
    its gradient, drawn uniformly from ``[d]`` independently of its data,
    clipped to ``[-grad_clip, grad_clip]``: the report's sensitivity is
    ``2 grad_clip`` whatever ``d`` is (``d`` is accepted for the signature
    of :func:`ldp_iht_laplace_scale` and validated, not used). ``eps = inf``
    gives 0.
    """
    owner = "ldp_iht_coordinate_scale"
    grad_clip = check_float(grad_clip, "grad_clip", owner, low=0, high=math.inf)
    check_int(d, "d", owner, low=1)
    eps = check_float(epsilon, "epsilon", owner, low=0)
    return 2.0 * grad_clip / eps


def two_slr_laplace_scale(radius: float, k: int, epsilon: float) -> float:
    """2-SLR's stage-2 Laplace scale ``2 R k / eps``.

    A user's solution is clipped to ``[-R, R]^k``, whose l1 diameter is
    ``2 R k``. ``eps = inf`` gives 0.
    """
    owner = "two_slr_laplace_scale"
    radius = check_float(radius, "radius", owner, low=0, high=math.inf)
    k = check_int(k, "k", owner, low=1)
    eps = check_float(epsilon, "epsilon", owner, low=0)
    return 2.0 * radius * k / eps


def lasso_gram(G: ArrayLike, b: ArrayLike, alpha: float, *, max_iter: int = 1000,
               tol: float = 1e-10, start: Optional[ArrayLike] = None) -> np.ndarray:
    """Cyclic coordinate descent for ``argmin 1/2 t^T G t - b^T t + alpha ||t||_1``.

    With ``G = X^T X / N`` and ``b = X^T y / N`` this is the Lasso
    ``(1/(2N)) ||y - X t||^2 + alpha ||t||_1``. Stops when a sweep moves no
    coefficient by more than ``tol`` (relative to the largest).
    """
    G = np.asarray(G, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    d = b.shape[0]
    theta = np.zeros(d) if start is None else np.array(start, dtype=np.float64)
    grad = b - G @ theta  # b - G theta
    diag = np.diag(G).copy()
    for _ in range(max_iter):
        moved = 0.0
        for j in range(d):
            if diag[j] <= 0:
                continue
            old = theta[j]
            z = grad[j] + diag[j] * old
            new = math.copysign(max(abs(z) - alpha, 0.0), z) / diag[j]
            if new != old:
                grad -= G[:, j] * (new - old)
                theta[j] = new
                moved = max(moved, abs(new - old))
        if moved <= tol * max(1e-300, float(np.abs(theta).max(initial=0.0))):
            break
    return theta


#: above this magnitude Lasso solves the (exactly) rescaled problem; its squares times N fit float64
_LASSO_SCALE_LIMIT = 2.0 ** 400


def _largest_magnitude(a: np.ndarray) -> float:
    """``max |a|`` as ``max(max a, -min a)``: the same value, without an ``|a|`` copy."""
    return max(float(a.max()), -float(a.min()))


def _entries_at_most(gram: np.ndarray, limit: float) -> bool:
    """Whether the diagonal of ``X^T X`` proves every ``|x_ij| <= limit``.

    ``(X^T X)_jj`` is the sum of column ``j``'s squares, at least each one, so a
    finite diagonal at most ``limit^2`` bounds every entry (a rounded sum of
    squares is never below its largest term). One pass over ``d`` numbers
    instead of two over the ``N d`` entries; ``False`` only means "not proven".
    """
    diag = np.diagonal(gram)
    return bool(np.all(np.isfinite(diag))) and float(diag.max(initial=0.0)) <= limit * limit


class Lasso(RegressionEstimator):
    """Non-private Lasso by coordinate descent (no scikit-learn needed).

    Minimizes ``(1/(2N)) ||y - X theta - c||^2 + alpha ||theta||_1``.
    Data with entries so large that ``X^T X`` would overflow is solved in the
    equivalent rescaled form (``X / s``, ``y / s``, ``alpha / s^2`` with ``s``
    a power of two), so the result is finite; a solution that is still not
    finite raises ValueError, never NaN silently.

    Parameters
    ----------
    alpha : float, optional
        Default ``sigma sqrt(2 log d / N)`` (the usual theory choice).
    sigma : float
        Noise-level bound used by the default ``alpha``.
    fit_intercept : bool
    max_iter : int
    tol : float

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.regression import Lasso
    >>> X = np.random.default_rng(0).normal(size=(500, 5))
    >>> y = X @ np.array([0.0, 2.0, 0.0, 0.0, -1.0]) + 3.0
    >>> model = Lasso(alpha=0.01).fit(X, y)
    >>> model.support_, model.coef_[model.support_].round(1), round(model.intercept_, 1)
    (array([1, 4]), array([ 2., -1.]), 3.0)
    >>> print(model.privacy_)
    not private (epsilon=inf)
    """

    alpha_: float

    def __init__(self, *, alpha: Optional[float] = None, sigma: float = 1.0,
                 fit_intercept: bool = True, max_iter: int = 1000, tol: float = 1e-10) -> None:
        self.alpha = alpha
        self.sigma = sigma
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol

    def fit(self: _Lasso, X: ArrayLike, y: ArrayLike, *, users: Optional[ArrayLike] = None,
            rng: RngLike = None) -> _Lasso:
        """Fit on all rows (``users`` and ``rng`` are accepted and ignored)."""
        X, y = check_Xy(X, y, "Lasso")
        return self._fit(X, y)

    def fit_precomputed(self: _Lasso, pre: Precomputed, *, rng: RngLike = None) -> _Lasso:
        """:meth:`fit` on the rows of ``pre``, which were checked when it was made."""
        return self._fit(pre.X, pre.y, pre)

    def _fit(self: _Lasso, X: np.ndarray, y: np.ndarray,
             pre: Optional[Precomputed] = None) -> _Lasso:
        o = "Lasso"
        N, d = X.shape
        alpha = (self.sigma_default(N, d) if self.alpha is None
                 else check_float(self.alpha, "alpha", o, low=0, low_open=False))
        max_iter = check_int(self.max_iter, "max_iter", o, low=1)
        tol = check_float(self.tol, "tol", o, low=0, low_open=False)
        # X^T X of large (finite) entries overflows to inf and the solution to NaN. The Lasso
        # on (X / c, y / c) with penalty alpha / c^2 has the same solution (the objective is
        # scaled by c^2), so huge data is solved at unit scale; c is a power of two, so the
        # scaling is exact, and data of ordinary size is not scaled at all.
        big_y = _largest_magnitude(y)
        if (pre is not None and big_y <= _LASSO_SCALE_LIMIT
                and _entries_at_most(pre.gram(), _LASSO_SCALE_LIMIT)):
            big = None  # known to be below the limit from the Gram matrix: no pass over X
        else:
            big = max(_largest_magnitude(X), big_y)
        c = 1.0
        if big is not None and big > _LASSO_SCALE_LIMIT:
            c = math.ldexp(1.0, math.frexp(big)[1])
            X, y = X / c, y / c
        # X^T X: a sweep's Precomputed holds it (shared with Sample-SDP), unless X was scaled
        XtX = pre.gram() if pre is not None and c == 1.0 else X.T @ X
        if self.fit_intercept:
            mx, my = X.mean(axis=0), float(y.mean())
            G = XtX / N - np.outer(mx, mx)
            b = (X.T @ y) / N - mx * my
        else:
            mx, my = np.zeros(d), 0.0
            G, b = XtX / N, (X.T @ y) / N
        coef = lasso_gram(G, b, alpha / c / c, max_iter=max_iter, tol=tol)
        intercept = (my - float(mx @ coef)) * c
        if not (np.isfinite(coef).all() and math.isfinite(intercept)):  # never NaN silently
            if big is None:
                big = max(_largest_magnitude(X), big_y)
            raise ValueError(f"{o}: the solution is not finite (X and y have entries up to "
                             f"{big:.3g}); rescale X and y.")
        self.alpha_ = alpha
        return self._set_fitted(coef, intercept, Privacy("none", "none", math.inf, 0.0))

    def sigma_default(self, N: int, d: int) -> float:
        sigma = check_float(self.sigma, "sigma", "Lasso", low=0, low_open=False)
        return sigma * math.sqrt(2 * math.log(max(d, 2)) / N)


def hard_threshold(theta: ArrayLike, k: int) -> np.ndarray:
    """Keep the ``k`` entries of largest magnitude, zero the rest."""
    theta = np.asarray(theta, dtype=np.float64)
    out = np.zeros_like(theta)
    if k >= theta.shape[0]:
        return theta.copy()
    keep = np.argpartition(-np.abs(theta), k - 1)[:k]
    out[keep] = theta[keep]
    return out


def _laplace_sum(count: int, scale: float, size, rng) -> np.ndarray:
    """The sum of ``count`` i.i.d. Laplace(scale) draws, exactly: Gamma(count) - Gamma(count)."""
    if count == 0:
        return np.zeros(size)
    return rng.gamma(count, scale, size) - rng.gamma(count, scale, size)


_SAMPLE_NOTE = ("sample-level: one row (x, y); neighbouring datasets replace one row, so the "
                "number of rows N is public")


_IHT_MECHANISMS = ("coordinate", "laplace")


class LDPIHT(RegressionEstimator):
    """LDP iterative hard thresholding (sample-level pure eps-LDP).

    The interactive LDP-IHT of Wang and Xu (2019): the rows are split at
    random into ``iterations`` disjoint batches, so each record reports
    once (eps-LDP). In iteration ``t`` each record of batch ``t`` forms its
    gradient ``g = x (x^T theta_t - y)`` (covariates clipped to
    ``[-x_clip, x_clip]``, the response to ``[-y_clip, y_clip]``), clipped
    coordinatewise to ``[-grad_clip, grad_clip]``, and reports it through
    the local randomizer ``mechanism``:

    - ``"coordinate"`` (default): one coordinate ``j``, uniform on ``[d]``
      and independent of the data, and ``g_j + Laplace(2 grad_clip / eps)``
      (:func:`ldp_iht_coordinate_scale`); the server's unbiased estimate of
      the batch mean is ``(d / n_t) sum_i e_{j_i} (g_{i, j_i} + noise_i)``.
      A coordinate's variance is ``d (E g_j^2 + 8 grad_clip^2 / eps^2) / n_t``,
      the order of the l_inf mechanism of Duchi, Jordan and Wainwright (2018)
      that Wang and Xu use;
    - ``"laplace"``: the whole clipped gradient plus Laplace noise of scale
      ``2 grad_clip d / eps`` per coordinate (:func:`ldp_iht_laplace_scale`,
      the l1 diameter of the box), a variance of ``8 grad_clip^2 d^2 / eps^2
      / n_t`` per coordinate: ``d`` times more. This was the only form
      before, and at the paper's size (``N = 750,000`` records, ``d = 256``)
      its noise hides the signal at every eps <= 32 (docs/regression.md has
      the diagnostics).

    The server steps ``theta_{t+1} = H_k(theta_t - step g_t)`` (``H_k``
    keeps the ``k`` largest entries; the covariance of standardized
    covariates is ``I``, so ``step = 1`` is a Newton step), then projects
    onto the l2 ball of radius ``theta_bound``. The sum of a batch's (or a
    coordinate's) Laplace noise is drawn exactly as a difference of two
    Gamma variables. Fewer iterations mean more records per batch: with
    ``step = 1`` on standardized covariates the first step lands near the
    truth up to the clipping's shrinkage (about 0.78 at the default clips
    on the paper's data), the second removes most of the rest, and every
    further one only trades the iterate for one smaller batch's noise; so
    the default is 2 iterations (docs/regression.md has the sweep over
    ``iterations``).

    Privacy: sample-level pure eps-LDP; neighbouring datasets replace one row,
    so the number of rows ``N`` (which fixes the batches) is public. The
    Laplace scale reads only public parameters, the sampled coordinate is
    independent of the data, and a record's gradient that is not finite
    (possible only with huge clips) is replaced by zero before clipping.

    Parameters
    ----------
    epsilon : float
        In (0, inf]; ``inf`` adds no noise (not private).
    k : int
    iterations : int
        Batches (and iterations), in ``[1, N]``.
    step : float
    x_clip, y_clip, grad_clip : float
    theta_bound : float
    mechanism : {"coordinate", "laplace"}
        The local randomizer (see above).

    Attributes
    ----------
    coef_, intercept_ (0), support_, privacy_
    coef_path_ : ndarray (iterations, d)
        The iterate after each iteration (the last row is ``coef_``).
    calibration_ : dict
        ``laplace_scale``, ``batches`` and ``mechanism``: public only.
    sanitized_ : dict
        ``"nonfinite"``: records whose gradient (or reported coordinate) was
        not finite (replaced by zero).

    References
    ----------
    .. [1] D. Wang and J. Xu, "On sparse linear regression in the local
       differential privacy model", ICML 2019 (LDP-IHT).
    .. [2] J. C. Duchi, M. I. Jordan and M. J. Wainwright, "Minimax optimal
       procedures for locally private estimation", JASA 2018.

    Examples
    --------
    >>> from fastldp.regression import LDPIHT, make_sparse_regression
    >>> data = make_sparse_regression(n=2000, m=5, d=8, k=2, sigma=0.1, rng=0)
    >>> model = LDPIHT(epsilon=8.0, k=2).fit(data.X, data.y, rng=0)
    >>> model.support_, data.support
    (array([0, 4]), array([0, 4]))
    >>> model.coef_path_.shape
    (2, 8)
    >>> print(model.privacy_)
    epsilon=8 (local DP, per sample)
    """

    calibration_: dict[str, Any]
    sanitized_: dict[str, int]
    coef_path_: np.ndarray

    def __init__(self, *, epsilon: float, k: int, iterations: int = 2, step: float = 1.0,
                 x_clip: float = 3.0, y_clip: float = 3.0, grad_clip: float = 2.0,
                 theta_bound: float = 1.0, mechanism: str = "coordinate") -> None:
        self.epsilon = epsilon
        self.k = k
        self.iterations = iterations
        self.step = step
        self.x_clip = x_clip
        self.y_clip = y_clip
        self.grad_clip = grad_clip
        self.theta_bound = theta_bound
        self.mechanism = mechanism

    def fit(self: _LDPIHT, X: ArrayLike, y: ArrayLike, *, users: Optional[ArrayLike] = None,
            rng: RngLike = None) -> _LDPIHT:
        """Fit on the rows (``users`` is accepted and ignored: sample-level)."""
        X, y = check_Xy(X, y, "LDPIHT")
        return self._fit(X, y, rng)

    def fit_precomputed(self: _LDPIHT, pre: Precomputed, *, rng: RngLike = None) -> _LDPIHT:
        """:meth:`fit` on the rows of ``pre``, which were checked when it was made."""
        return self._fit(pre.X, pre.y, rng)

    def _fit(self: _LDPIHT, X: np.ndarray, y: np.ndarray, rng: RngLike) -> _LDPIHT:
        o = "LDPIHT"
        N, d = X.shape
        eps = check_float(self.epsilon, "epsilon", o, low=0)
        k = check_int(self.k, "k", o, low=1, high=d)
        T = check_int(self.iterations, "iterations", o, low=1, high=N)
        step = check_float(self.step, "step", o, low=0, high=math.inf)
        cx = check_float(self.x_clip, "x_clip", o, low=0, high=math.inf)
        cy = check_float(self.y_clip, "y_clip", o, low=0, high=math.inf)
        cg = check_float(self.grad_clip, "grad_clip", o, low=0, high=math.inf)
        tb = check_float(self.theta_bound, "theta_bound", o, low=0, high=math.inf)
        mech = self.mechanism
        if not (isinstance(mech, str) and mech in _IHT_MECHANISMS):
            raise param_error("mechanism", o, "'coordinate' or 'laplace'", mech)
        gen = as_generator(rng, o)
        batches = np.array_split(gen.permutation(N), T)
        theta = np.zeros(d)
        path = np.zeros((T, d))
        if mech == "coordinate":
            scale = ldp_iht_coordinate_scale(cg, d, eps)
            batch_gradient = self._coordinate_gradient
        else:
            scale = ldp_iht_laplace_scale(cg, d, eps)
            batch_gradient = self._laplace_gradient
        nonfinite = 0
        for t, batch in enumerate(batches):
            batch = np.sort(batch)  # the same rows, read in memory order
            g, bad = batch_gradient(X, y, batch, theta, (cx, cy, cg), scale, gen)
            nonfinite += bad
            theta = hard_threshold(theta - step * g / batch.shape[0], k)
            norm = float(np.linalg.norm(theta))
            if norm > tb:
                theta *= tb / norm
            path[t] = theta
        self.calibration_ = {"laplace_scale": scale, "batches": T, "mechanism": mech}
        self.sanitized_ = {"nonfinite": nonfinite}
        self.coef_path_ = path
        return self._set_fitted(theta, 0.0, Privacy("sample", "local", eps, 0.0, note=_SAMPLE_NOTE))

    @staticmethod
    def _coordinate_gradient(X, y, batch, theta, clips, scale, gen):
        """``n_t`` times the server's estimate of the batch's mean gradient (one coordinate per record)."""
        cx, cy, cg = clips
        nb, d = batch.shape[0], X.shape[1]
        j = gen.integers(0, d, nb).astype(np.intp, copy=False)  # independent of the data
        S = np.flatnonzero(theta)  # theta is k-sparse after the first step
        batch = batch.astype(np.intp, copy=False)
        # with huge public clips a product may overflow (inf * 0 = NaN): such a record's
        # value is replaced by the public default, zero, before clipping
        with np.errstate(over="ignore", invalid="ignore"):
            # (the kernels are X[batch[:, None], S] and X[batch, j], without NumPy's 2-d
            # fancy indexing, which cost most of a fit)
            r = (np.clip(take_block(X, batch, S), -cx, cx) @ theta[S]
                 - np.clip(y[batch], -cy, cy))
            g = np.clip(take_entries(X, batch, j), -cx, cx) * r
        bad = ~np.isfinite(g)
        g[bad] = 0.0
        np.clip(g, -cg, cg, out=g)
        total = np.bincount(j, weights=g, minlength=d)
        counts = np.bincount(j, minlength=d)
        if scale > 0:  # each coordinate's Laplace sum: Gamma(c_j) - Gamma(c_j), exactly
            total += gen.gamma(counts, scale) - gen.gamma(counts, scale)
        return total * d, int(bad.sum())

    @staticmethod
    def _laplace_gradient(X, y, batch, theta, clips, scale, gen):
        """The batch's noisy gradient sum from whole-vector Laplace reports (``mechanism="laplace"``)."""
        cx, cy, cg = clips
        d = X.shape[1]
        chunk = max(1, 2 ** 20 // (8 * d))  # about 1 MiB of rows
        g = np.zeros(d)
        S = np.flatnonzero(theta)
        nonfinite = 0
        for start in range(0, batch.shape[0], chunk):  # cache-sized blocks of rows
            rows = batch[start:start + chunk]
            xb = np.clip(X[rows], -cx, cx, out=None)
            # with huge public clips a product may overflow (inf * 0 = NaN): such a
            # record's gradient is replaced by the public default, zero, before clipping
            with np.errstate(over="ignore", invalid="ignore"):
                r = xb[:, S] @ theta[S] - np.clip(y[rows], -cy, cy)
                xb *= r[:, None]
            bad = nonfinite_rows(xb)
            if bad.any():
                xb[bad] = 0.0
                nonfinite += int(bad.sum())
            np.clip(xb, -cg, cg, out=xb)
            g += xb.sum(axis=0)
        g += _laplace_sum(batch.shape[0], scale, d, gen)
        return g, nonfinite


_TWO_SLR_NOTE = ("user-level: a user's whole local dataset of at most rows_per_user rows (a user "
                 "with more contributes its first rows_per_user); neighbouring datasets replace "
                 "one user's dataset (its rows and its row count); the number of users n is "
                 "public")


class TwoStageSLR(RegressionEstimator):
    """2-SLR: two-stage sparse regression under pure user-level eps-LDP.

    The summary names 2-SLR (a user-level LDP baseline) without details; we
    implement the standard two-stage form with the same local steps as U2R
    and local randomizers in place of the shuffler:

    - stage 1 (a ``split`` fraction of the users): the local Lasso of U2R
      (screened, thresholded at ``rho / 2``), one uniformly sampled
      candidate index, reported by k-ary randomized response over ``[d]``
      (:func:`kary_randomized_response`: keep with probability
      ``e^eps / (e^eps + d - 1)``); the server debiases the counts and keeps
      the ``k`` largest;
    - stage 2 (the other users): local least squares on that support,
      clipped coordinatewise to ``[-R, R]`` with ``R = theta_bound + 3 sigma
      sqrt(k / (m - k - 1))``, plus Laplace noise of scale
      :func:`two_slr_laplace_scale` ``= 2 R k / eps`` per coordinate (l1
      sensitivity; :func:`laplace_vector`, whose sum over the users is drawn
      at once); the server averages and projects onto the l2 ball of
      radius ``theta_bound``.

    Each user takes part in one stage, so the protocol is eps-LDP per user.
    Two datasets are neighbours when one user's whole local dataset (its
    rows and their number) is replaced; ``n`` is public. The calibration
    (penalty, screen, ``R``, the Laplace scale, the keep probability) reads
    only public parameters (``rows_per_user``, ``n``, ``d``, the
    constructor's), and a local statistic that is not finite is replaced by
    its public default before clipping (``sanitized_``).

    Parameters
    ----------
    epsilon : float
        In (0, inf]; ``inf`` adds no noise (not private).
    k : int
    rows_per_user : int
        Public number of rows of a user's local dataset, ``m >= 2`` (as in
        :class:`~fastldp.regression.U2R`: a user with more rows uses its
        first ``m``; one with fewer solves on its rows, and in stage 2 one
        with fewer than ``k + 2`` rows sends the public default, zero).
    sigma, theta_bound, rho, local_alpha, screen
        As in :class:`~fastldp.regression.U2R` (``m = rows_per_user``).
    split : float
        Fraction of the users in stage 1.

    Attributes
    ----------
    coef_, intercept_, support_, privacy_
    calibration_ : dict
        ``rows_per_user``, ``local_alpha``, ``screen``, ``radius`` (``R``),
        ``laplace_scale``, ``keep_probability``, ``groups``: public only.
    support_recovered_, counts_ : ndarray
        Stage 1's support and debiased counts.
    sanitized_ : dict
        As in :class:`~fastldp.regression.U2R` (stage 1's default: a uniform
        index; stage 2's: the zero vector).

    Examples
    --------
    >>> from fastldp.regression import TwoStageSLR, make_sparse_regression
    >>> data = make_sparse_regression(n=600, m=20, d=16, k=2, sigma=0.1, rng=0)
    >>> model = TwoStageSLR(epsilon=4.0, k=2, rows_per_user=20, sigma=0.1)
    >>> model = model.fit(data.X, data.y, users=data.users, rng=0)
    >>> model.support_, data.support
    (array([2, 9]), array([2, 9]))
    >>> print(model.privacy_)
    epsilon=4 (local DP, per user)
    """

    calibration_: dict[str, Any]
    support_recovered_: np.ndarray
    counts_: np.ndarray
    sanitized_: dict[str, int]

    def __init__(self, *, epsilon: float, k: int, rows_per_user: int, sigma: float = 1.0,
                 theta_bound: float = 1.0, rho: Optional[float] = None,
                 local_alpha: Optional[float] = None, split: float = 0.5,
                 screen: Union[str, int, None] = "auto") -> None:
        self.epsilon = epsilon
        self.k = k
        self.rows_per_user = rows_per_user
        self.sigma = sigma
        self.theta_bound = theta_bound
        self.rho = rho
        self.local_alpha = local_alpha
        self.split = split
        self.screen = screen

    def fit(self: _TwoStageSLR, X: ArrayLike, y: ArrayLike, *,
            users: Optional[ArrayLike] = None, rng: RngLike = None) -> _TwoStageSLR:
        """Fit on rows grouped by ``users`` (required)."""
        return self.fit_precomputed(self.precompute(X, y, users=users), rng=rng)

    def fit_precomputed(self: _TwoStageSLR, pre: Precomputed, *,
                        rng: RngLike = None) -> _TwoStageSLR:
        """:meth:`fit` with the local solutions of ``pre`` (see :meth:`U2R.fit_precomputed`)."""
        o = "TwoStageSLR"
        d = pre.X.shape[1]
        eps = check_float(self.epsilon, "epsilon", o, low=0)
        k = check_int(self.k, "k", o, low=1, high=d)
        m = check_int(self.rows_per_user, "rows_per_user", o, low=2)
        sigma = check_float(self.sigma, "sigma", o, low=0, high=math.inf)
        tb = check_float(self.theta_bound, "theta_bound", o, low=0, high=math.inf)
        rho = (tb / math.sqrt(k) if self.rho is None
               else check_float(self.rho, "rho", o, low=0, high=math.inf))
        split = check_float(self.split, "split", o, low=0, high=1)
        alpha = (sigma * math.sqrt(2 * math.log(d) / m) if self.local_alpha is None
                 else check_float(self.local_alpha, "local_alpha", o, low=0, high=math.inf))
        if isinstance(self.screen, str) and self.screen == "auto":
            screen = 2 * m
        elif self.screen is None:
            screen = d
        else:
            screen = check_int(self.screen, "screen", o, low=1)
        data = pre.grouped(o, rows_per_user=m)
        n = data.n
        n1 = int(math.floor(split * n))
        if n1 < 1 or n - n1 < 1:
            raise ValueError(f"{o}: {n} users cannot be split {split:g} / {1 - split:g}.")
        # ---- the calibration, from public parameters only
        dof = max(m - k - 1, 1)
        R = tb + 3 * sigma * math.sqrt(k / dof)
        scale = two_slr_laplace_scale(R, k, eps)
        p, q = kary_keep_probability(d, eps)
        self.calibration_ = {"rows_per_user": m, "local_alpha": alpha, "screen": screen,
                             "radius": R, "laplace_scale": scale, "keep_probability": p,
                             "groups": (n1, n - n1)}
        sanitized = row_bookkeeping(pre.grouped(o).counts, m)
        gen = as_generator(rng, o)
        perm = gen.permutation(n)
        g1, g2 = perm[:n1], perm[n1:]
        B = pre.local_lasso(g1, alpha, screen if screen < d else None, o, rows_per_user=m)
        index, n_bad = candidate_index(B, rho, gen)
        sanitized["nonfinite"] += n_bad
        reported = kary_randomized_response(index, d, eps, gen)
        counts = np.bincount(reported, minlength=d).astype(np.float64)
        debiased = (counts - n1 * q) / (p - q) if d > 1 else counts
        S = np.sort(np.argsort(-debiased, kind="stable")[:k])
        L = pre.local_least_squares(g2, S, o, rows_per_user=m)
        short = data.counts[g2] < k + 2
        bad = nonfinite_rows(L) & ~short
        L[short | bad] = 0.0  # the public default, before clipping
        sanitized["nonfinite"] += int(bad.sum())
        sanitized["short_default"] += int(short.sum())
        local = np.clip(L, -R, R)
        total = local.sum(axis=0) + _laplace_sum(g2.shape[0], scale, k, gen)
        theta = total / g2.shape[0]
        norm = float(np.linalg.norm(theta))
        if norm > tb:  # the parameter space is the theta_bound ball
            theta *= tb / norm
        coef = np.zeros(d)
        coef[S] = theta
        self.support_recovered_, self.counts_ = S, debiased
        self.sanitized_ = sanitized
        return self._set_fitted(coef, 0.0, Privacy("user", "local", eps, 0.0, rows_per_user=m,
                                                   note=_TWO_SLR_NOTE))
