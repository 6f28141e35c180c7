"""Sample-SDP: the non-interactive shuffled algorithm of paper 002 (section 4.2, Appendix B.1).

Sample-level privacy: a record is one row ``(x_i, y_i)``. Each record
clips its covariates to ``[-x_clip, x_clip]`` and its response to
``[-y_clip, y_clip]``, forms its local sufficient statistics (the upper
triangle of ``x x^T`` and ``x y``, ``D = d (d+1) / 2 + d`` numbers), and the
shuffled vector sum (:class:`~fastldp.regression.shuffle.ShuffledVectorSum`)
releases their noisy total. A record's statistic has l2 norm at most
``B = sqrt(d^2 c_x^4 + d c_x^2 c_y^2)``; replacing a record moves the total by
at most ``2 B``, the Theta(d) scale behind Theorem 2's ``d sqrt(k) / (n eps)``.

The analyzer rebuilds ``G = X^T X / N`` and ``b = X^T y / N``, lifts the
eigenvalues of ``G`` to at least ``floor`` (the noise makes it indefinite;
default ``2 sqrt(d)`` noise standard deviations, the spectral size of the
noise matrix), solves the normal equation ``theta_ls = G^{-1} b`` and
returns the closed-form solution of the l1-relaxed problem
``argmin_theta 1/2 ||theta - theta_ls||^2 + lambda ||theta||_1``, i.e.
``soft_threshold(theta_ls, lambda)`` (the "elementary estimator" of Yang,
Lozano and Ravikumar, ICML 2014). ``lambda`` defaults to
``sqrt(2 log d) sd sqrt(1 + theta_bound^2) / w_min + sigma sqrt(2 log d / N)``
(``sd`` the noise s.d. of an entry of ``G`` or ``b``, ``w_min`` the smallest
lifted eigenvalue): the universal threshold of the noise in ``theta_ls``
plus the sampling one.

With ``N D shares`` above ``max_messages`` (``d = 256`` at ``N = 750,000``)
the summation takes the aggregate path of
:meth:`~fastldp.regression.shuffle.ShuffledVectorSum.sum_aggregate` (same
release in distribution, same accounting); ``shuffle_simulated_`` says which.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._validation import check_float, check_int, param_error
from ._base import Privacy, RegressionEstimator, nonfinite_rows, soft_threshold
from .shuffle import ShuffledVectorSum, SummationResult, owner_budget

if TYPE_CHECKING:
    from .local import Precomputed

__all__ = ["SampleSDP", "solve_soft_thresholded"]

_SampleSDP = TypeVar("_SampleSDP", bound="SampleSDP")  # fit returns the estimator itself


def solve_soft_thresholded(G: ArrayLike, b: ArrayLike, lam: float,
                           floor: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """The closed form of ``argmin 1/2 ||theta - G^{-1} b||^2 + lam ||theta||_1``.

    ``G`` is symmetrized and its eigenvalues lifted to at least ``floor``
    (when ``floor > 0``) before the normal equation is solved.

    Returns
    -------
    (theta, theta_ls)
    """
    G = 0.5 * (np.asarray(G, dtype=np.float64) + np.asarray(G, dtype=np.float64).T)
    b = np.asarray(b, dtype=np.float64)
    if floor > 0:
        w, V = np.linalg.eigh(G)
        theta_ls = V @ ((V.T @ b) / np.maximum(w, floor))
    else:
        theta_ls = np.linalg.solve(G, b)
    return soft_threshold(theta_ls, lam), theta_ls


class SampleSDP(RegressionEstimator):
    """Non-interactive sample-level shuffled sparse regression (paper 002, Algorithm 2).

    Privacy: sample-level ``(epsilon, delta)`` in the shuffle model;
    neighbouring datasets replace one row ``(x, y)``, so the number of rows
    ``N`` is public (it sets the summation's modulus and shares). The
    calibration reads only public parameters and ``N``; every record enters
    the release only through its clipped statistic, of l2 norm at most ``B``.
    The default ``alpha`` and ``floor`` read the released (noisy) Gram
    matrix, which is post-processing of the release, not calibration.

    Parameters
    ----------
    epsilon : float
        Sample-level budget, in (0, inf) (the shuffle accounting needs a finite budget).
    delta : float
    x_clip, y_clip : float
        Clipping of each covariate and of the response.
    sigma : float
        Public noise-level bound (the sampling part of ``alpha``).
    theta_bound : float
        Public bound on ``||theta||_2`` (the noise part of ``alpha``).
    alpha : float, optional
        The soft-threshold ``lambda``; default in the module docstring.
    floor : float, optional
        Eigenvalue floor of ``G``; default ``2 sqrt(d)`` times the noise s.d. of ``G``.
    max_messages : int

    Attributes
    ----------
    coef_, intercept_ (0), support_, privacy_
    calibration_ : dict
        ``norm_bound`` (a record's l2 bound ``B``), and the summation's
        ``mu``, ``scale``, ``shares``, ``modulus``: functions of the public
        parameters and ``N`` only.
    sanitized_ : dict
        ``"nonfinite"``: records whose statistic was not finite (replaced by
        zero; impossible for finite rows, whose clipped statistics are bounded).
    coef_ls_ : ndarray
        The normal-equation solution before thresholding.
    summation_ : SummationResult
    shuffle_simulated_ : bool

    Examples
    --------
    >>> from fastldp.regression import SampleSDP, make_sparse_regression
    >>> data = make_sparse_regression(n=2000, m=5, d=4, k=1, sigma=0.1, rng=0)
    >>> model = SampleSDP(epsilon=1.0).fit(data.X, data.y, rng=0)
    >>> model.support_, data.support
    (array([3]), array([3]))
    >>> print(model.privacy_)
    epsilon=1, delta=... (shuffle DP, per sample)
    """

    calibration_: dict[str, Any]
    sanitized_: dict[str, int]
    coef_ls_: np.ndarray
    summation_: SummationResult
    shuffle_simulated_: bool
    alpha_: float
    floor_: float

    def __init__(self, *, epsilon: float, delta: float = 1e-5, x_clip: float = 3.0,
                 y_clip: float = 3.0, sigma: float = 1.0, theta_bound: float = 1.0,
                 alpha: Optional[float] = None, floor: Optional[float] = None,
                 max_messages: int = 50_000_000) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.x_clip = x_clip
        self.y_clip = y_clip
        self.sigma = sigma
        self.theta_bound = theta_bound
        self.alpha = alpha
        self.floor = floor
        self.max_messages = max_messages

    def fit(self: _SampleSDP, X: ArrayLike, y: ArrayLike, *, users: Optional[ArrayLike] = None,
            rng: RngLike = None) -> _SampleSDP:
        """Fit on the rows ``X``, ``y`` (``users`` is accepted and ignored: sample-level).

        Returns
        -------
        self
        """
        return self.fit_precomputed(self.precompute(X, y, users=users), rng=rng)

    def fit_precomputed(self: _SampleSDP, pre: Precomputed, *,
                        rng: RngLike = None) -> _SampleSDP:
        """:meth:`fit` on a :class:`~fastldp.regression.local.Precomputed`.

        On the aggregate path the clipped totals ``Xc^T Xc``, ``Xc^T yc``
        (which do not depend on ``eps``) are taken from ``pre``, computed
        there once; the result is bit for bit that of :meth:`fit`.
        """
        o = "SampleSDP"
        # the shuffle accounting needs a finite budget: eps = inf is refused, not served
        eps = check_float(self.epsilon, "epsilon", o, low=0, high=math.inf)
        delta = check_float(self.delta, "delta", o, low=0, high=1)
        cx = check_float(self.x_clip, "x_clip", o, low=0, high=math.inf)
        cy = check_float(self.y_clip, "y_clip", o, low=0, high=math.inf)
        sigma = check_float(self.sigma, "sigma", o, low=0, low_open=False, high=math.inf)
        tb = check_float(self.theta_bound, "theta_bound", o, low=0, low_open=False,
                         high=math.inf)
        alpha = None if self.alpha is None else check_float(self.alpha, "alpha", o, low=0,
                                                              low_open=False, high=math.inf)
        floor = (None if self.floor is None
                 else check_float(self.floor, "floor", o, low=0, high=math.inf))
        check_int(self.max_messages, "max_messages", o, low=1)
        X = pre.X
        N, d = X.shape  # N is public: the neighbours replace one row
        if N < 3:
            raise ValueError(f"{o}: needs at least 3 rows (parties), got {N}.")
        gen = as_generator(rng, o)
        iu = np.triu_indices(d)
        try:
            bound = math.sqrt(d * d * cx ** 4 + d * cx * cx * cy * cy)
        except OverflowError:
            bound = math.inf
        if not math.isfinite(bound):
            raise param_error("x_clip", o, f"small enough that a record's bound sqrt(d^2 x_clip^4 "
                              f"+ d x_clip^2 y_clip^2) is finite (d = {d}, y_clip = {cy:g})",
                              self.x_clip)
        summer = ShuffledVectorSum(epsilon=eps, delta=delta, norm_bound=bound,
                                   max_messages=self.max_messages)
        D = iu[0].shape[0] + d
        plan = owner_budget(o, self.epsilon, lambda: summer.plan(N, D))
        self.calibration_ = {"norm_bound": bound, "mu": plan["mu"], "scale": plan["scale"],
                             "shares": plan["shares"], "modulus": plan["modulus"]}
        nonfinite = 0
        if N * D * plan["shares"] <= self.max_messages:
            Xc, yc = pre.clipped(cx, cy, keep=False)
            records = np.concatenate([Xc[:, iu[0]] * Xc[:, iu[1]], Xc * yc[:, None]], axis=1)
            del Xc
            # clipped finite rows give finite records; checked anyway (the public default: 0)
            bad = nonfinite_rows(records)
            if bad.any():
                records[bad] = 0.0
                nonfinite = int(bad.sum())
            res = summer.sum(records, gen)
        else:
            # the totals of clipped finite rows, each record bounded by the finite 'bound'
            G, Xty = pre.clipped_sums(cx, cy)
            total = np.concatenate([G[iu], Xty])
            res = summer.sum_aggregate(total, N, gen)
        self.sanitized_ = {"nonfinite": nonfinite}
        G = np.zeros((d, d))
        G[iu] = res.total[:iu[0].shape[0]] / N
        G = G + np.triu(G, 1).T
        b = res.total[iu[0].shape[0]:] / N
        sd = res.noise_sd / N
        if floor is None:
            floor = max(2 * math.sqrt(d) * sd, 1e-6 * max(1e-12, float(np.trace(G)) / d))
        if alpha is None:
            low = max(floor, float(np.linalg.eigvalsh(G)[0]))
            alpha = (math.sqrt(2 * math.log(max(d, 2))) * sd * math.sqrt(1 + tb * tb) / low
                     + sigma * math.sqrt(2 * math.log(max(d, 2)) / N))
        coef, self.coef_ls_ = solve_soft_thresholded(G, b, alpha, floor)
        self.summation_ = res
        self.shuffle_simulated_ = res.simulated
        self.alpha_, self.floor_ = alpha, floor
        return self._set_fitted(coef, 0.0, Privacy("sample", "shuffle", eps, res.delta,
                                                   note=_NOTE))


_NOTE = ("sample-level: one row (x, y); neighbouring datasets replace one row, so the number "
         "of rows N is public")
