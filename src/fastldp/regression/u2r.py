"""U2R: the two-round user-level shuffled protocol of paper 002 (section 5, Appendix B.2-B.3).

Each user holds ``m`` samples; ``m = rows_per_user`` is a public parameter
(a user with more rows contributes its first ``m``), never read from the
data. The users are split, by a public random
permutation, into three disjoint groups; each group runs at the full budget
``(eps, delta)`` and the whole protocol is ``(eps, delta)``-DP at the user
level by parallel composition (Appendix B, E.2). Neighbouring datasets
replace one user's whole local dataset; the number of users ``n`` is public.

Stage 1, support recovery (group 1, ``n1`` users)
    Every user fits a local Lasso on its ``m`` rows (penalty
    ``local_alpha``), keeps the coordinates above ``rho / 2`` (all of
    ``[d]`` if none), samples one of them uniformly and reports it by
    randomized-response bits through ``d`` independent shuffled streams
    (:class:`~fastldp.regression.shuffle.ShuffledBits`). The analyzer
    debiases the counts and returns ``S = {j : count_j > tau}``,
    ``tau = n1 / (4 k)`` (Proposition 1).
Stage 2a, coarse estimate (group 2a)
    Every user solves least squares on ``S``, clips the solution to the l2
    ball of radius ``R_a = theta_bound + c sigma sqrt(s / (m - s - 1))``
    (``c = clip_multiplier``), and the shuffled vector sum
    (:class:`~fastldp.regression.shuffle.ShuffledVectorSum`, one shuffler
    per coordinate of ``S``) gives their mean, ``theta_coarse``.
Stage 2b, refinement (group 2b)
    Every user clips its least-squares solution to the ball of radius
    ``R_b`` around ``theta_coarse``, with ``R_b = c (sigma sqrt(s/(m-s-1))
    + sqrt(s) sd_a + sigma sqrt(s / (n_a (m-s-1))))`` (the spread of a local
    solution plus a bound on the coarse error; ``sd_a`` is the public noise
    s.d. of stage 2a), and the shuffled mean of the clipped differences
    refines ``theta_coarse``. The sensitivity is ``2 R_b`` with
    ``R_b ~ sqrt(k/m)``, which gives Theorem 3's ``k / (n sqrt(m) eps)``.

The summary of the paper gives the structure and ``tau``; the radii, the
local penalty and the group sizes are our instantiation (defaults below),
every one a parameter. ``shrinkage`` adds a final soft-thresholding
(a Lasso penalty on the final estimate), which the paper's reported floor
suggests (see ``docs/regression.md``).
"""

from __future__ import annotations

import copy
import math
from typing import TYPE_CHECKING, Any, Callable, Optional, TypeVar, Union

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from .._validation import check_float, check_int, param_error
from ._base import (
    Privacy, RegressionEstimator, candidate_index, nonfinite_rows, row_bookkeeping,
    soft_threshold,
)
from .shuffle import BudgetError, ShuffledBits, ShuffledVectorSum, SummationResult

if TYPE_CHECKING:
    from .local import Precomputed

__all__ = ["U2R", "clip_l2"]

_U2R = TypeVar("_U2R", bound="U2R")  # fit returns the estimator, typed as its own class


def clip_l2(vectors: ArrayLike, radius: float, center: Optional[ArrayLike] = None) -> np.ndarray:
    """Project each row onto the l2 ball of ``radius`` around ``center``; return the offsets.

    The norms are computed after dividing each row by its largest entry, so
    a finite row whose squared norm would overflow is still projected (not
    zeroed). Every row must be finite.
    """
    v = np.asarray(vectors, dtype=np.float64)
    if center is not None:
        v = v - np.asarray(center, dtype=np.float64)
    big = np.abs(v).max(axis=1, initial=0.0)
    unit = np.where(big > 0, big, 1.0)
    w = v / unit[:, None]
    norms = unit * np.sqrt(np.einsum("ij,ij->i", w, w))
    factor = np.minimum(1.0, radius / np.maximum(norms, 1e-300))
    return v * factor[:, None] * (1 - 1e-12)


_NOTE = ("user-level: a user's whole local dataset of at most rows_per_user rows (a user with "
         "more contributes its first rows_per_user); neighbouring datasets replace one user's "
         "dataset (its rows and its row count); the number of users n is public")


def _shrunk(theta: np.ndarray, shrink: Union[bool, float], sigma: float, d: int,
            n: int) -> np.ndarray:
    """U2R's final step: ``theta`` soft-thresholded at ``shrink`` (``True``:
    ``sigma sqrt(log d / n)``; ``False``: ``theta`` as it is). One function for the fit
    and :meth:`U2R.with_shrinkage`, so the two give the same bits."""
    if shrink is False:
        return theta
    level = sigma * math.sqrt(math.log(d) / n) if shrink is True else shrink
    return soft_threshold(theta, level)


class U2R(RegressionEstimator):
    """User-level two-round shuffled sparse regression (paper 002, Algorithm U2R).

    Privacy: user-level ``(epsilon, delta)`` in the shuffle model. Two
    datasets are neighbours when one user's whole local dataset (its rows,
    and how many it has) is replaced; the number of users ``n`` is public.
    The calibration (penalty, screen size, support cap, radii, noise, flip
    probability, threshold, groups) reads only public parameters:
    ``rows_per_user``, ``n``, ``d`` and the constructor's parameters, never
    the data. Everything a user's data can change enters a release only
    through a clipped, finite, public-bounded quantity: a local statistic
    that is not finite (an overflow on extreme rows) is replaced by its
    public default before clipping (see ``sanitized_``).

    Parameters
    ----------
    epsilon : float
        User-level budget, in (0, inf) (the shuffle accounting needs a finite budget).
    delta : float
        In (0, 1).
    k : int
        Sparsity (the threshold is ``n1 / (4 k)``).
    rows_per_user : int
        Public number of rows of a user's local dataset, ``m >= 2``. It sets
        the local penalty, the screen size, the support cap and the radii.
        A user with more rows contributes its first ``rows_per_user`` rows
        (in the order given to ``fit``; shuffle them first if that order
        means something). A user with fewer solves on the rows it has; in
        stage 2 one with fewer than ``s + 2`` rows (``s`` the recovered
        support size) sends the public default instead (see ``sanitized_``).
    sigma : float
        Public bound on the noise s.d. (sets the local penalty and the radii).
    theta_bound : float
        Public bound on ``||theta||_2`` (radius of stage 2a).
    rho : float, optional
        Beta-min, ``min_{j in S} |theta_j|``; local coordinates above
        ``rho / 2`` are candidates. Default ``theta_bound / sqrt(k)``.
    local_alpha : float, optional
        Local Lasso penalty; default ``sigma sqrt(2 log d / m)``, ``m = rows_per_user``.
    split : tuple of 3 floats
        Fractions of the users in stage 1, 2a and 2b (normalized).
    clip_multiplier : float
        ``c`` of the radii.
    max_support : int, optional
        Keep at most this many recovered coordinates (largest counts);
        at most ``m - 2`` in any case (local least squares needs ``m > s + 1``).
    shrinkage : bool or float
        Final soft-thresholding: ``False`` (none, default), ``True``
        (``sigma sqrt(log d / n)``) or a level.
    screen : "auto", int or None
        Before its local Lasso, each user keeps the ``screen`` columns most
        correlated with its response (sure independence screening; ``"auto"``:
        ``2 m``; ``None``: all ``d``). A speed-up of ours, not the paper's.
    max_messages : int
        Passed to :class:`~fastldp.regression.shuffle.ShuffledVectorSum`.

    Attributes
    ----------
    coef_, intercept_, support_, privacy_
        ``intercept_`` is 0: center the data with public statistics first.
        ``privacy_`` states the unit, ``rows_per_user`` and the neighbour relation.
    calibration_ : dict
        The public calibration, fixed before any data is read:
        ``rows_per_user``, ``local_alpha``, ``screen``, ``support_cap``,
        ``groups``, ``gamma`` and ``threshold``.
    support_recovered_ : ndarray
        Stage 1's ``S``.
    counts_ : ndarray
        Stage 1's debiased counts; ``threshold_`` is ``tau`` and ``gamma_`` the flip probability.
    coef_coarse_ : ndarray
        ``theta_coarse`` (on all ``d`` coordinates).
    radii_ : tuple
        ``(R_a, R_b)``: functions of the public parameters and of ``s = |S|`` only.
    summations_ : tuple of SummationResult
    groups_ : tuple of int
        ``(n1, n_a, n_b)``.
    sanitized_ : dict
        Bookkeeping of the simulation (not released by the protocol):
        ``"nonfinite"``, local statistics (a local Lasso or a local least
        squares solution) that were not finite and were replaced by the
        public default (stage 1: no candidate, so the index is uniform over
        ``[d]``; stage 2a: the zero vector; stage 2b: the coarse estimate,
        a zero offset); ``"subsampled"``, users cut to their first
        ``rows_per_user`` rows; ``"short"``, users with fewer rows;
        ``"short_default"``, users of stage 2 with fewer than ``s + 2`` rows,
        which sent the public default.

    Examples
    --------
    >>> from fastldp.regression import U2R, make_sparse_regression
    >>> data = make_sparse_regression(n=300, m=20, d=16, k=2, sigma=0.1, rng=0)
    >>> model = U2R(epsilon=4.0, k=2, rows_per_user=20, sigma=0.1)
    >>> model = model.fit(data.X, data.y, users=data.users, rng=0)
    >>> model.support_, data.support
    (array([2, 9]), array([2, 9]))
    >>> model.coef_[model.support_].round(1)
    array([ 0.7, -0.7])
    >>> print(model.privacy_)
    epsilon=4, delta=1e-05 (shuffle DP, per user)
    """

    calibration_: dict[str, Any]
    support_recovered_: np.ndarray
    counts_: np.ndarray
    gamma_: float
    threshold_: float
    coef_coarse_: np.ndarray
    radii_: tuple[float, float]
    summations_: tuple[SummationResult, ...]
    groups_: tuple[int, ...]
    sanitized_: dict[str, int]

    def __init__(self, *, epsilon: float, delta: float = 1e-5, k: int, rows_per_user: int,
                 sigma: float = 1.0, theta_bound: float = 1.0, rho: Optional[float] = None,
                 local_alpha: Optional[float] = None,
                 split: Union[tuple[float, float, float], ArrayLike] = (1 / 3, 1 / 6, 1 / 2),
                 clip_multiplier: float = 3.0, max_support: Optional[int] = None,
                 shrinkage: Union[bool, float] = False, screen: Union[str, int, None] = "auto",
                 max_messages: int = 50_000_000) -> None:
        self.epsilon = epsilon
        self.delta = delta
        self.k = k
        self.rows_per_user = rows_per_user
        self.sigma = sigma
        self.theta_bound = theta_bound
        self.rho = rho
        self.local_alpha = local_alpha
        self.split = split
        self.clip_multiplier = clip_multiplier
        self.max_support = max_support
        self.shrinkage = shrinkage
        self.screen = screen
        self.max_messages = max_messages

    def _validate(self, d: int) -> dict[str, Any]:
        o = "U2R"
        eps = check_float(self.epsilon, "epsilon", o, low=0, high=math.inf)
        delta = check_float(self.delta, "delta", o, low=0, high=1)
        k = check_int(self.k, "k", o, low=1, high=d)
        m = check_int(self.rows_per_user, "rows_per_user", o, low=2)
        sigma = check_float(self.sigma, "sigma", o, low=0, high=math.inf)
        tb = check_float(self.theta_bound, "theta_bound", o, low=0, high=math.inf)
        rho = (tb / math.sqrt(k) if self.rho is None
               else check_float(self.rho, "rho", o, low=0, high=math.inf))
        alpha = (None if self.local_alpha is None
                 else check_float(self.local_alpha, "local_alpha", o, low=0, high=math.inf))
        split = np.asarray(self.split, dtype=np.float64) if isinstance(
            self.split, (list, tuple, np.ndarray)) else None
        if (split is None or split.shape != (3,) or not np.all(split > 0)
                or not np.isfinite(split).all()):
            raise param_error("split", o, "three fractions in (0, 1]", self.split)
        c = check_float(self.clip_multiplier, "clip_multiplier", o, low=0, high=math.inf)
        ms = None if self.max_support is None else check_int(self.max_support, "max_support", o,
                                                               low=1)
        shrink: Union[bool, float]
        if isinstance(self.shrinkage, (bool, np.bool_)):
            shrink = bool(self.shrinkage)
        else:
            shrink = check_float(self.shrinkage, "shrinkage", o, low=0, low_open=False,
                                 high=math.inf)
        screen: Union[str, int]
        if isinstance(self.screen, str) and self.screen == "auto":
            screen = "auto"
        elif self.screen is None:
            screen = d
        else:
            screen = check_int(self.screen, "screen", o, low=1)
        return dict(eps=eps, delta=delta, k=k, m=m, sigma=sigma, tb=tb, rho=rho, alpha=alpha,
                    split=split / split.sum(), c=c, ms=ms, shrink=shrink, screen=screen)

    def fit(self: _U2R, X: ArrayLike, y: ArrayLike, *, users: Optional[ArrayLike] = None,
            rng: RngLike = None) -> _U2R:
        """Fit on rows ``X``, ``y`` whose users are ``users`` (required).

        Parameters
        ----------
        X : array_like (N, d)
        y : array_like (N,)
        users : array_like (N,)
            Each row's user id; a user's rows (the first ``rows_per_user``)
            are its local dataset.
        rng : None, int, SeedSequence or Generator
            Source of the group split and of every randomizer.

        Returns
        -------
        self
        """
        return self.fit_precomputed(self.precompute(X, y, users=users), rng=rng)

    def fit_precomputed(self: _U2R, pre: Precomputed, *,
                        rng: RngLike = None) -> _U2R:
        """:meth:`fit` on a :class:`~fastldp.regression.local.Precomputed` (see there).

        The local Lassos and local least squares it needs are taken from
        ``pre`` (computed there the first time); the result is bit for bit
        that of ``fit`` on the same data and ``rng``.
        """
        d = pre.X.shape[1]
        p = self._validate(d)
        eps, delta, k, sigma, c = p["eps"], p["delta"], p["k"], p["sigma"], p["c"]
        data = pre.grouped("U2R", rows_per_user=p["m"])  # each user's first rows_per_user rows
        n = data.n  # public: the neighbours replace one user's dataset
        sizes = np.floor(p["split"] * n).astype(int)
        sizes[2] = n - sizes[0] - sizes[1]
        if sizes.min() < 3:
            raise ValueError(f"U2R: {n} users split {tuple(int(s) for s in sizes)} leave a group "
                             f"with fewer than 3 users; more users are needed.")
        # ---- the calibration, from public parameters only (never from the data)
        m = p["m"]  # rows_per_user: anything read from data.counts here would leak
        alpha = sigma * math.sqrt(2 * math.log(d) / m) if p["alpha"] is None else p["alpha"]
        screen = 2 * m if p["screen"] == "auto" else p["screen"]
        limit = min(p["ms"] or d, max(1, m - 2))
        bits = ShuffledBits(epsilon=eps, delta=delta, d=d)
        summer = dict(epsilon=eps, delta=delta, max_messages=self.max_messages)
        gamma = self._check_budget(bits, sizes, limit, summer)
        tau = sizes[0] / (4 * k)
        self.calibration_ = {"rows_per_user": m, "local_alpha": alpha, "screen": screen,
                             "support_cap": limit, "groups": tuple(int(s) for s in sizes),
                             "gamma": gamma, "threshold": tau}
        # counted over every user of the fit: not released, the simulation's bookkeeping
        sanitized = row_bookkeeping(pre.grouped("U2R").counts, m)

        gen = as_generator(rng, "U2R")
        perm = gen.permutation(n)
        g1, ga, gb = np.split(perm, np.cumsum(sizes)[:2])

        # ---- stage 1: local Lasso, one candidate index per user, shuffled bits
        B = pre.local_lasso(g1, alpha, screen if screen < d else None, "U2R", rows_per_user=m)
        index, n_bad = candidate_index(B, p["rho"], gen)
        sanitized["nonfinite"] += n_bad
        counts, gamma = bits.counts(index, gen, gamma=gamma)
        S = np.flatnonzero(counts > tau)
        if S.shape[0] > limit:
            S = np.sort(S[np.argsort(-counts[S], kind="stable")[:limit]])
        self.counts_, self.gamma_, self.threshold_ = counts, gamma, tau
        self.support_recovered_ = S
        self.groups_ = tuple(int(s) for s in sizes)
        self.sanitized_ = sanitized
        coef = np.zeros(d)
        coarse = np.zeros(d)
        s = S.shape[0]
        privacy = Privacy("user", "shuffle", eps, delta, rows_per_user=m, note=_NOTE)
        if s == 0:
            self.coef_coarse_, self.radii_, self.summations_ = coarse, (0.0, 0.0), ()
            return self._set_fitted(coef, 0.0, privacy)

        # ---- stage 2a: coarse estimate
        dof = max(m - s - 1, 1)
        spread = sigma * math.sqrt(s / dof)
        ra = p["tb"] + c * spread
        la = self._local(pre, ga, S, m, data, np.zeros(s), sanitized)
        res_a = ShuffledVectorSum(norm_bound=ra, **summer).sum(clip_l2(la, ra), gen)
        na, nb = ga.shape[0], gb.shape[0]
        theta_a = res_a.total / na
        sd_a = res_a.noise_sd / na
        # ---- stage 2b: refinement around the coarse estimate
        rb = c * (spread + math.sqrt(s) * sd_a + sigma * math.sqrt(s / (na * dof)))
        lb = self._local(pre, gb, S, m, data, theta_a, sanitized)
        res_b = ShuffledVectorSum(norm_bound=rb, **summer).sum(clip_l2(lb, rb, theta_a), gen)
        theta = theta_a + res_b.total / nb
        theta = _shrunk(theta, p["shrink"], sigma, d, n)
        coef[S] = theta
        coarse[S] = theta_a
        self.coef_coarse_, self.radii_ = coarse, (ra, rb)
        self.summations_ = (res_a, res_b)
        used = max(delta, res_a.delta, res_b.delta)
        return self._set_fitted(coef, 0.0, Privacy("user", "shuffle", eps, used,
                                                   rows_per_user=m, note=_NOTE))

    def with_shrinkage(self: _U2R, shrinkage: Union[bool, float] = True) -> _U2R:
        """A copy of this fitted U2R (fitted without shrinkage) with ``shrinkage`` applied.

        The final soft-thresholding is U2R's last step, draws no randomness
        and reads nothing but the estimate, so the copy is, bit for bit, the
        fit of ``U2R(**params, shrinkage=shrinkage)`` on the same data with
        the same ``rng`` (tests/test_regression.py checks it), at the cost
        of one soft-thresholding instead of a second fit: an experiment
        that reports both columns fits once (and the two columns then share
        their random numbers, so their difference is the shrinkage alone).
        It is post-processing: ``privacy_`` is this fit's.

        Parameters
        ----------
        shrinkage : bool or float
            As the ``shrinkage`` parameter (``True``: ``sigma sqrt(log d / n)``).

        Returns
        -------
        U2R
            A new fitted estimator; this one is left as it is.

        Examples
        --------
        >>> from fastldp.regression import U2R, make_sparse_regression
        >>> data = make_sparse_regression(n=300, m=20, d=16, k=2, sigma=0.1, rng=0)
        >>> plain = U2R(epsilon=4.0, k=2, rows_per_user=20, sigma=0.1)
        >>> plain = plain.fit(data.X, data.y, users=data.users, rng=0)
        >>> shrunk = U2R(epsilon=4.0, k=2, rows_per_user=20, sigma=0.1, shrinkage=True)
        >>> shrunk = shrunk.fit(data.X, data.y, users=data.users, rng=0)
        >>> bool((plain.with_shrinkage().coef_ == shrunk.coef_).all())
        True
        """
        owner = "U2R.with_shrinkage"
        if not hasattr(self, "coef_"):
            raise ValueError(f"{owner}: this U2R is not fitted yet; call fit first.")
        if self.shrinkage is not False:
            raise ValueError(f"{owner}: this fit already has shrinkage={self.shrinkage!r}; "
                             f"shrink a fit made with shrinkage=False.")
        twin = copy.copy(self)
        twin.shrinkage = shrinkage
        d = self.coef_.shape[0]
        p = twin._validate(d)  # checks shrinkage (and the unchanged parameters) as fit does
        if p["shrink"] is not False:
            # fit shrinks theta on S; every other coordinate is 0 and stays 0
            S = self.support_recovered_
            coef = np.zeros(d)
            coef[S] = _shrunk(self.coef_[S], p["shrink"], p["sigma"], d, sum(self.groups_))
            twin._set_fitted(coef, self.intercept_, self.privacy_)
        return twin

    @staticmethod
    def _local(pre, users, S, m, data, default, sanitized):
        """The users' local least squares on ``S``, the public ``default`` where it cannot be used.

        A user with fewer than ``s + 2`` rows (too few for the local step)
        and a user whose solution (or its offset from ``default``, the
        clipping centre) is not finite send ``default``.
        """
        L = pre.local_least_squares(users, S, "U2R", rows_per_user=m)
        short = data.counts[users] < S.shape[0] + 2
        # the default is also the clipping centre: a solution finite itself but not its offset
        # from the centre (near the float64 limit) cannot be clipped either
        with np.errstate(over="ignore", invalid="ignore"):
            bad = nonfinite_rows(L - default) & ~short
        L[short | bad] = default
        sanitized["nonfinite"] += int(bad.sum())
        sanitized["short_default"] += int(short.sum())
        return L

    def _check_budget(self, bits, sizes, limit, summer) -> float:
        """Check, before any data is read, that every stage can serve the budget; return gamma.

        Stage 1's flip probability depends on ``n1``; a summation's noise and
        modulus depend on its parties and dimension only (not on its radius:
        the rounding scale is proportional to ``1 / norm_bound``), and grow
        with the dimension, so the largest support, ``support_cap``, is the
        worst case of stage 2. A budget that some stage cannot serve is a
        ValueError about U2R's 'epsilon' naming the smallest budget that every
        stage serves.
        """
        gamma: Optional[float] = None
        failures: list[BudgetError] = []
        steps: list[Callable[[], Any]] = [lambda: bits.gamma(int(sizes[0]))]

        def plan(n: int) -> Callable[[], Any]:
            return lambda: ShuffledVectorSum(norm_bound=1.0, **summer).plan(n, limit)

        steps += [plan(int(n)) for n in sizes[1:]]
        for i, step in enumerate(steps):
            try:
                out = step()
            except BudgetError as exc:
                failures.append(exc)
                continue
            if i == 0:
                gamma = out
        if failures:
            worst = max(failures, key=lambda exc: exc.smallest)
            raise BudgetError("U2R", self.epsilon, worst.smallest, worst.reason)
        assert gamma is not None  # step 0 succeeded: no failure was raised above
        return gamma
