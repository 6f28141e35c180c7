"""Sample-SDP: the non-interactive shuffled algorithm of paper 002 (section 4.2, Appendix B.1).

Sample-level privacy: a record is one row ``(x_i, y_i)``. Each record
clips itself (below), forms its local sufficient statistic (the
``d (d+1) / 2`` entries of the upper triangle of ``x x^T`` and the ``d``
entries of ``x y``, ``D`` numbers in all), and the shuffled vector sum
(:class:`~fastldp.regression.shuffle.ShuffledVectorSum`) releases their noisy
total, with Skellam noise calibrated to the l2 sensitivity of one record.

Clipping
--------
``clipping="l2"`` (the default) scales a record by its covariates' norm and
clips the response::

    s = min(1, R_x / ||x||_2),   x_c = s x,   y_c = clip(s y, -R_y, R_y),

so ``||x_c|| <= R_x`` and ``|y_c| <= R_y``. Scaling ``y`` by the same ``s``
as ``x`` makes the clipped sums a weighted least-squares problem with weight
``s^2``, a function of ``x`` alone: under the linear model ``E[s^2 x (y - x^T
theta)] = 0``, so clipping ``x`` biases nothing (only a clipped ``y`` does).
The statistic is sent in the isometric coordinates of a symmetric matrix
(the off-diagonal entries of ``x_c x_c^T`` times ``sqrt 2``), in which its l2
norm is exactly ``sqrt(||x_c x_c^T||_F^2 + ||x_c y_c||^2) = ||x_c||
sqrt(||x_c||^2 + y_c^2)``, at most::

    B = sqrt(R_x^4 + R_x^2 R_y^2)

(``||x x^T||_F = ||x||^2``); the analyzer divides the off-diagonal entries
by ``sqrt 2`` again, so their noise is ``1/sqrt 2`` of the diagonal's.
Replacing one record ``(x, y)`` by ``(x', y')`` moves the sum by (with
``c = x_c . x_c'``)::

    ||x_c x_c^T - x_c' x_c'^T||_F^2 + ||x_c y_c - x_c' y_c'||^2
        <= ||x_c||^4 + ||x_c'||^4 - 2 c^2 + (||x_c||^2 + ||x_c'||^2 + 2 |c|) R_y^2
        <= 2 R_x^4 + 2 R_x^2 R_y^2 - 2 c^2 + 2 |c| R_y^2,

largest at ``|c| = c* = min(R_y^2 / 2, R_x^2)``: the sensitivity is
``Delta = sqrt(2 R_x^4 + 2 R_x^2 R_y^2 - 2 c*^2 + 2 c* R_y^2)``, i.e.
``sqrt(2 R_x^4 + 2 R_x^2 R_y^2 + R_y^4 / 2)`` when ``R_y^2 <= 2 R_x^2``,
about ``sqrt 2 B`` (the generic replacement bound is ``2 B``; the two
records' ``x x^T`` blocks cannot point in opposite directions). The bound is
attained (``||x_c|| = ||x_c'|| = R_x``, ``x_c . x_c' = c*``, ``y_c = -y_c' =
R_y``). The accounting (Skellam variance, shares, modulus) is
:class:`~fastldp.regression.shuffle.ShuffledVectorSum`'s with ``norm_bound =
B`` and ``sensitivity = Delta``; it reads only ``d``, ``N`` and the public
parameters.

The default radii are public tail bounds for the synthetic model of paper
002 (``x ~ N(0, I_d)``, ``y = x^T theta + sigma e``, ``||theta||_2 <=
theta_bound``), set before any data is seen from ``d``, the public number of
rows ``N`` (``n m`` in the paper's notation: users times rows per user) and
the public ``sigma`` and ``theta_bound``:

- ``R_x = sqrt(d + 2 sqrt(d t) + 2 t)`` with ``t = log N``: by Laurent and
  Massart (2000), Lemma 1, ``P(||x||^2 >= d + 2 sqrt(d t) + 2 t) <= e^-t =
  1/N``, so at most one record is expected to be clipped;
- ``R_y = sqrt(theta_bound^2 + sigma^2) sqrt(2 log(2 N))``: given ``x ~ N(0,
  I)``, ``y ~ N(0, ||theta||^2 + sigma^2)`` with variance at most
  ``theta_bound^2 + sigma^2`` (tighter than ``|x^T theta| <= ||x||
  ||theta||``, which would give ``R_x theta_bound``), and ``P(|Z| >= sqrt(2
  log(2N))) <= 2 e^{-log(2N)} = 1/N``; ``|s y| <= |y|``.

Both are public parameters that the user may set (``x_radius``,
``y_radius``) for other data; ``sanitized_`` counts the records clipped.
At d = 64 and N = 750,000 (the paper's setting) ``R_x^2 = 149.9``, ``R_y =
5.5`` and ``Delta = 233``, against ``2 B = 2 sqrt(d^2 c^4 + d c^2 c_y^2) =
1,161`` for the per-coordinate rule at ``c = c_y = 3``.

``clipping="coordinate"`` is the earlier rule, bit for bit: each covariate
clipped to ``[-x_clip, x_clip]`` and the response to ``[-y_clip, y_clip]``,
the upper triangle of ``x x^T`` sent as is, ``B = sqrt(d^2 c_x^4 + d c_x^2
c_y^2)`` and sensitivity ``2 B``: the Theta(d) scale behind Theorem 2's
``d sqrt(k) / (n eps)`` (paper 002, section 4.2: "the upper-bound gap comes
from clipping the second-moment statistic"). Both rules follow the paper's
Algorithm 2 (clip, round, noise, shuffle additive shares, solve and
threshold; noise calibrated to the l2 sensitivity); the summary does not
give the paper's clipping constants, and the l2 rule with its public radii
is ours.

Estimation
----------
The analyzer rebuilds ``G = X_c^T X_c / N`` and ``b = X_c^T y_c / N``, lifts the
eigenvalues of ``G`` to at least ``floor`` (the noise makes it indefinite;
default ``2 sqrt(d)`` noise standard deviations, the spectral size of the
noise matrix), solves the normal equation ``theta_ls = G^{-1} b`` and
returns the closed-form solution of the l1-relaxed problem
``argmin_theta 1/2 ||theta - theta_ls||^2 + lambda ||theta||_1``, i.e.
``soft_threshold(theta_ls, lambda)`` (the "elementary estimator" of Yang,
Lozano and Ravikumar, ICML 2014). ``lambda`` defaults to
``sqrt(2 log d) sd sqrt(1 + theta_bound^2) / w_min + sigma sqrt(2 log d / N)``
(``sd`` the noise s.d. of a diagonal entry of ``G`` or of ``b``, ``w_min``
the smallest lifted eigenvalue): the universal threshold of the noise in
``theta_ls`` plus the sampling one.

With ``N D shares`` above ``max_messages`` (``d = 256`` at ``N = 750,000``)
the summation takes the aggregate path of
:meth:`~fastldp.regression.shuffle.ShuffledVectorSum.sum_aggregate` (same
release in distribution, same accounting); ``shuffle_simulated_`` says which.
The aggregate path's clipped sums ``X_c^T X_c`` of the l2 rule are BLAS
``syrk`` products over blocks of rows (float64, memory ``O(block d)``),
cached in the :class:`~fastldp.regression.local.Precomputed` of a sweep.

References
----------
B. Laurent and P. Massart, "Adaptive estimation of a quadratic functional by
model selection", Annals of Statistics 28(5), 2000 (Lemma 1).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any, Optional, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._validation import check_float, check_int, param_error
from ._base import Privacy, RegressionEstimator, nonfinite_rows, soft_threshold
from ._clipping import _BLOCK, l2_clip, l2_clipped_sums
from ._gram import gram_and_l2_sums, gram_and_l2_sums_prefixes
from .shuffle import ShuffledVectorSum, SummationResult, owner_budget

if TYPE_CHECKING:
    from .local import Precomputed

__all__ = ["SampleSDP", "solve_soft_thresholded", "default_radii", "l2_sensitivity",
           "l2_clip", "l2_clipped_sums"]

_SampleSDP = TypeVar("_SampleSDP", bound="SampleSDP")  # fit returns the estimator itself

#: the clipping rules of SampleSDP
CLIPPINGS = ("l2", "coordinate")


def default_radii(d: int, n_rows: int, sigma: float, theta_bound: float) -> tuple[float, float]:
    """The public radii ``(R_x, R_y)`` of the l2 clipping (see the module docstring).

    ``R_x = sqrt(d + 2 sqrt(d log N) + 2 log N)``, exceeded by ``||x||`` with
    probability at most ``1/N`` for ``x ~ N(0, I_d)`` (Laurent and Massart,
    2000, Lemma 1), and ``R_y = sqrt(theta_bound^2 + sigma^2) sqrt(2 log(2N))``,
    exceeded by ``|y|`` with probability at most ``1/N`` when ``y ~ N(0,
    ||theta||^2 + sigma^2)``, ``||theta|| <= theta_bound``. Only public
    quantities enter: ``d``, the number of rows ``N``, ``sigma``, ``theta_bound``.

    Examples
    --------
    >>> from fastldp.regression.sample_sdp import default_radii
    >>> [round(r, 2) for r in default_radii(64, 750_000, 0.25, 1.0)]
    [12.24, 5.5]
    """
    t = math.log(max(n_rows, 2))
    r_x = math.sqrt(d + 2 * math.sqrt(d * t) + 2 * t)
    r_y = math.sqrt(theta_bound * theta_bound + sigma * sigma) * math.sqrt(2 * math.log(2 * n_rows))
    return r_x, r_y


def l2_sensitivity(x_radius: float, y_radius: float) -> tuple[float, float]:
    """``(B, Delta)``: a record's norm bound and the replacement sensitivity of the l2 rule.

    ``B = sqrt(R_x^4 + R_x^2 R_y^2)`` bounds the statistic of one record
    (isometric coordinates: ``sqrt(||x x^T||_F^2 + ||x y||^2)``) and
    ``Delta = sqrt(2 R_x^4 + 2 R_x^2 R_y^2 - 2 c^2 + 2 c R_y^2)``, ``c =
    min(R_y^2 / 2, R_x^2)``, the largest change of the sum when one record is
    replaced (derivation in the module docstring; ``Delta <= 2 B``).
    Overflow gives ``inf``.

    Examples
    --------
    >>> from fastldp.regression.sample_sdp import l2_sensitivity
    >>> l2_sensitivity(1.0, 0.0)  # x x^T blocks of two unit vectors: sqrt(2) apart at most
    (1.0, 1.4142135623730951)
    """
    try:
        rx2, ry2 = x_radius * x_radius, y_radius * y_radius
        c = min(ry2 / 2, rx2)
        bound = math.sqrt(rx2 * rx2 + rx2 * ry2)
        sens = math.sqrt(2 * rx2 * rx2 + 2 * rx2 * ry2 - 2 * c * c + 2 * c * ry2)
    except OverflowError:
        return math.inf, math.inf
    return bound, min(sens, 2 * bound)


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
    ``N`` is public (it sets the summation's modulus and shares, and the
    default radii). The calibration reads only public parameters, ``d`` and
    ``N``; every record enters the release only through its clipped
    statistic, of l2 norm at most ``B``, and replacing one record moves the
    sum by at most the sensitivity ``Delta`` (module docstring). The default
    ``alpha`` and ``floor`` read the released (noisy) Gram matrix, which is
    post-processing of the release, not calibration.

    Parameters
    ----------
    epsilon : float
        Sample-level budget, in (0, inf) (the shuffle accounting needs a finite budget).
    delta : float
    clipping : {"l2", "coordinate"}
        ``"l2"`` (default): ``x`` scaled into the ball of radius ``x_radius``
        and ``y`` (scaled alike) clipped to ``y_radius``; ``"coordinate"``:
        each covariate clipped to ``x_clip`` and the response to ``y_clip``
        (the earlier rule, bit for bit).
    x_radius, y_radius : float, optional
        Public radii of the l2 rule; default :func:`default_radii` (tail
        bounds for ``x ~ N(0, I_d)``, failure probability ``1/N`` per record each).
    x_clip, y_clip : float
        Clipping of each covariate and of the response (``"coordinate"``).
    sigma : float
        Public noise-level bound (the sampling part of ``alpha``, and ``y_radius``).
    theta_bound : float
        Public bound on ``||theta||_2`` (the noise part of ``alpha``, and ``y_radius``).
    alpha : float, optional
        The soft-threshold ``lambda``; default in the module docstring.
    floor : float, optional
        Eigenvalue floor of ``G``; default ``2 sqrt(d)`` times the noise s.d. of ``G``.
    max_messages : int

    Attributes
    ----------
    coef_, intercept_ (0), support_, privacy_
    calibration_ : dict
        ``clipping``; ``x_radius``, ``y_radius`` (l2) or ``x_clip``, ``y_clip``
        (coordinate); ``norm_bound`` (a record's l2 bound ``B``),
        ``sensitivity`` (``Delta``), and the summation's ``mu``, ``scale``,
        ``shares``, ``modulus``: functions of the public parameters, ``d``
        and ``N`` only.
    sanitized_ : dict
        ``"nonfinite"``: records whose statistic was not finite (replaced by
        zero; impossible for finite rows, whose clipped statistics are
        bounded); ``"clipped_x"``, ``"clipped_y"``: records whose covariates
        (l2: ``||x|| > x_radius``; coordinate: any ``|x_j| > x_clip``) or
        response was clipped. Diagnostics for the data holder, not part of
        the private release.
    coef_ls_ : ndarray
        The normal-equation solution before thresholding.
    summation_ : SummationResult
    shuffle_simulated_ : bool

    Examples
    --------
    >>> from fastldp.regression import SampleSDP, make_sparse_regression
    >>> data = make_sparse_regression(n=2000, m=5, d=4, k=1, sigma=0.1, rng=0)
    >>> model = SampleSDP(epsilon=1.0, sigma=0.1).fit(data.X, data.y, rng=0)
    >>> model.support_, data.support
    (array([0]), array([0]))
    >>> print(model.privacy_)
    epsilon=1, delta=... (shuffle DP, per sample)
    >>> cal = model.calibration_
    >>> round(cal["x_radius"], 3), round(cal["y_radius"], 3), round(cal["sensitivity"], 2)
    (5.879, 4.473, 63.02)
    >>> model.sanitized_
    {'nonfinite': 0, 'clipped_x': 0, 'clipped_y': 1}
    """

    calibration_: dict[str, Any]
    sanitized_: dict[str, int]
    coef_ls_: np.ndarray
    summation_: SummationResult
    shuffle_simulated_: bool
    alpha_: float
    floor_: float

    def __init__(self, *, epsilon: float, delta: float = 1e-5, clipping: str = "l2",
                 x_radius: Optional[float] = None, y_radius: Optional[float] = None,
                 x_clip: float = 3.0, y_clip: float = 3.0, sigma: float = 1.0,
                 theta_bound: float = 1.0, alpha: Optional[float] = None,
                 floor: Optional[float] = None, max_messages: int = 50_000_000) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.clipping = clipping
        self.x_radius = x_radius
        self.y_radius = y_radius
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
        if not isinstance(self.clipping, str) or self.clipping not in CLIPPINGS:
            raise param_error("clipping", o, f"one of {list(CLIPPINGS)}", self.clipping)
        l2 = self.clipping == "l2"
        rx = (None if self.x_radius is None
              else check_float(self.x_radius, "x_radius", o, low=0, high=math.inf))
        ry = (None if self.y_radius is None
              else check_float(self.y_radius, "y_radius", o, low=0, high=math.inf))
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
        r_x = r_y = math.nan  # the l2 rule's radii
        if l2:
            r_x, r_y = default_radii(d, N, sigma, tb)
            r_x = r_x if rx is None else rx
            r_y = r_y if ry is None else ry
            bound, sens = l2_sensitivity(r_x, r_y)
            if not math.isfinite(sens):
                name = "x_radius" if r_x >= r_y else "y_radius"
                given = getattr(self, name)
                raise param_error(name, o, "a radius that gives a finite record bound "
                                  "sqrt(x_radius^4 + x_radius^2 y_radius^2)",
                                  given if given is not None
                                  else f"the default {max(r_x, r_y):g}")
            calibration: dict[str, Any] = {"clipping": "l2", "x_radius": r_x,
                                           "y_radius": r_y}
        else:
            try:
                bound = math.sqrt(d * d * cx ** 4 + d * cx * cx * cy * cy)
            except OverflowError:
                bound = math.inf
            if not math.isfinite(bound):
                raise param_error("x_clip", o, f"small enough that a record's bound sqrt(d^2 "
                                  f"x_clip^4 + d x_clip^2 y_clip^2) is finite (d = {d}, "
                                  f"y_clip = {cy:g})", self.x_clip)
            sens = 2 * bound
            calibration = {"clipping": "coordinate", "x_clip": cx, "y_clip": cy}
        summer = ShuffledVectorSum(epsilon=eps, delta=delta, norm_bound=bound,
                                   sensitivity=sens, max_messages=self.max_messages)
        D = iu[0].shape[0] + d
        plan = owner_budget(o, self.epsilon, lambda: summer.plan(N, D))
        self.calibration_ = dict(calibration, norm_bound=bound, sensitivity=sens,
                                 mu=plan["mu"], scale=plan["scale"], shares=plan["shares"],
                                 modulus=plan["modulus"])
        # l2: the off-diagonal entries of x x^T are sent times sqrt(2) (isometric coordinates)
        weight = np.where(iu[0] == iu[1], 1.0, math.sqrt(2.0)) if l2 else None
        nonfinite = 0
        if N * D * plan["shares"] <= self.max_messages:
            if l2:
                Xc, yc, clipped_x, clipped_y = l2_clip(X, pre.y, r_x, r_y)
                records = np.concatenate([Xc[:, iu[0]] * Xc[:, iu[1]] * weight,
                                          Xc * yc[:, None]], axis=1)
            else:
                Xc, yc = pre.clipped(cx, cy, keep=False)
                clipped_x, clipped_y = _coordinate_counts(pre, cx, cy)
                records = np.concatenate([Xc[:, iu[0]] * Xc[:, iu[1]], Xc * yc[:, None]],
                                         axis=1)
            del Xc
            # clipped finite rows give finite records; checked anyway (the public default: 0)
            bad = nonfinite_rows(records)
            if bad.any():
                records[bad] = 0.0
                nonfinite = int(bad.sum())
            res = summer.sum(records, gen)
        else:
            # the totals of clipped finite rows, each record bounded by the finite 'bound'
            if l2:
                G, Xty, clipped_x, clipped_y = _l2_sums(pre, r_x, r_y)
                total = np.concatenate([G[iu] * weight, Xty])
            else:
                G, Xty = pre.clipped_sums(cx, cy)
                clipped_x, clipped_y = _coordinate_counts(pre, cx, cy)
                total = np.concatenate([G[iu], Xty])
            res = summer.sum_aggregate(total, N, gen)
        self.sanitized_ = {"nonfinite": nonfinite, "clipped_x": clipped_x,
                           "clipped_y": clipped_y}
        upper = res.total[:iu[0].shape[0]]
        G = np.zeros((d, d))
        G[iu] = (upper / weight if l2 else upper) / N
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


def _l2_sums(pre: Precomputed, x_radius: float,
             y_radius: float) -> tuple[np.ndarray, np.ndarray, int, int]:
    """:func:`l2_clipped_sums` of ``pre``'s rows, cached in ``pre`` (they do not depend on eps)."""
    key = _l2_key(x_radius, y_radius)
    if key not in pre._sums:
        if pre.gram_cached():
            pre._sums[key] = l2_clipped_sums(pre.X, pre.y, x_radius, y_radius)
        else:  # X^T X (the Lasso's) from the same BLAS products, bit for bit
            gram, pre._sums[key] = gram_and_l2_sums(pre.X, pre.y, x_radius, y_radius, _BLOCK)
            pre.set_gram(gram)
    return pre._sums[key]


def _l2_key(x_radius: float, y_radius: float) -> tuple:
    """The key of the l2-clipped sums at these radii in a :class:`Precomputed`'s ``_sums``."""
    return ("l2", float(x_radius), float(y_radius))


def share_nested_sums(pres: "list[Precomputed]", sigma: float, theta_bound: float) -> None:
    """Fill nested :class:`Precomputed` objects with their Gram and default-radius l2 sums.

    ``pres`` hold prefixes of one set of rows (each ``X`` the first rows of the
    largest, as :meth:`Precomputed.first_users` gives): each gets ``X.T @ X``
    and the l2-clipped sums at :func:`default_radii` of its own row count (those
    of a :class:`SampleSDP` with ``sigma`` and ``theta_bound`` and default
    radii), bit for bit what it would compute itself, from one pass over the
    largest (:func:`~fastldp.regression._gram.gram_and_l2_sums_prefixes`).
    """
    big = max(pres, key=lambda p: p.X.shape[0])
    X, y = big.X, big.y

    def start(a: np.ndarray) -> tuple:
        return a.__array_interface__["data"][0], a.strides, a.shape[1:]

    for pre in pres:  # the first rows of the largest: the same memory, start and layout
        if start(pre.X) != start(X) or start(pre.y) != start(y):
            raise ValueError("share_nested_sums: every Precomputed must hold the first rows of "
                             "the largest one (nested samples).")
    todo = [pre for pre in pres if not pre.gram_cached()]
    if not todo:
        return
    d = X.shape[1]
    radii = [default_radii(d, pre.X.shape[0], sigma, theta_bound) for pre in todo]
    out = gram_and_l2_sums_prefixes(X, y, [pre.X.shape[0] for pre in todo], radii, _BLOCK)
    for pre, (rx, ry), (gram, sums) in zip(todo, radii, out):
        pre.set_gram(gram)
        pre._sums.setdefault(_l2_key(rx, ry), sums)


def _coordinate_counts(pre: Precomputed, x_clip: float, y_clip: float) -> tuple[int, int]:
    """Rows with a covariate beyond ``x_clip`` and responses beyond ``y_clip``, cached in ``pre``."""
    key = ("coordinate-counts", float(x_clip), float(y_clip))
    if key not in pre._sums:
        over = 0
        for start in range(0, pre.X.shape[0], _BLOCK):
            over += int((np.abs(pre.X[start:start + _BLOCK]) > x_clip).any(axis=1).sum())
        pre._sums[key] = (over, int((np.abs(pre.y) > y_clip).sum()))
    return pre._sums[key]


_NOTE = ("sample-level: one row (x, y); neighbouring datasets replace one row, so the number "
         "of rows N is public")
