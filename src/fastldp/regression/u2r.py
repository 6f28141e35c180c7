"""U2R: the two-round user-level shuffled protocol of paper 002 (section 5, Appendix B.2-B.3).

Each user holds ``m`` samples. The users are split, by a public random
permutation, into three disjoint groups; each group runs at the full budget
``(eps, delta)`` and the whole protocol is ``(eps, delta)``-DP at the user
level by parallel composition (Appendix B, E.2).

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

import math

import numpy as np

from .._random import as_generator
from .._validation import check_float, check_int, param_error
from ._base import Privacy, RegressionEstimator, soft_threshold
from .shuffle import ShuffledBits, ShuffledVectorSum

__all__ = ["U2R", "clip_l2"]


def clip_l2(vectors, radius: float, center=None) -> np.ndarray:
    """Project each row onto the l2 ball of ``radius`` around ``center``; return the offsets."""
    v = np.asarray(vectors, dtype=np.float64)
    if center is not None:
        v = v - center
    norms = np.sqrt(np.einsum("ij,ij->i", v, v))
    factor = np.minimum(1.0, radius / np.maximum(norms, 1e-300))
    return v * factor[:, None] * (1 - 1e-12)


class U2R(RegressionEstimator):
    """User-level two-round shuffled sparse regression (paper 002, Algorithm U2R).

    Parameters
    ----------
    epsilon : float
        User-level budget, in (0, inf).
    delta : float
        In (0, 1).
    k : int
        Sparsity (the threshold is ``n1 / (4 k)``).
    sigma : float
        Public bound on the noise s.d. (sets the local penalty and the radii).
    theta_bound : float
        Public bound on ``||theta||_2`` (radius of stage 2a).
    rho : float, optional
        Beta-min, ``min_{j in S} |theta_j|``; local coordinates above
        ``rho / 2`` are candidates. Default ``theta_bound / sqrt(k)``.
    local_alpha : float, optional
        Local Lasso penalty; default ``sigma sqrt(2 log d / m)``.
    split : tuple of 3 floats
        Fractions of the users in stage 1, 2a and 2b (normalized).
    clip_multiplier : float
        ``c`` of the radii.
    max_support : int, optional
        Keep at most this many recovered coordinates (largest counts);
        default ``m - 2`` (local least squares needs ``m > s + 1``).
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
    support_recovered_ : ndarray
        Stage 1's ``S``.
    counts_ : ndarray
        Stage 1's debiased counts; ``threshold_`` is ``tau`` and ``gamma_`` the flip probability.
    coef_coarse_ : ndarray
        ``theta_coarse`` (on all ``d`` coordinates).
    radii_ : tuple
        ``(R_a, R_b)``.
    summations_ : tuple of SummationResult
    groups_ : tuple of int
        ``(n1, n_a, n_b)``.
    """

    def __init__(self, *, epsilon, delta=1e-5, k, sigma=1.0, theta_bound=1.0, rho=None,
                 local_alpha=None, split=(1 / 3, 1 / 6, 1 / 2), clip_multiplier=3.0,
                 max_support=None, shrinkage=False, screen="auto", max_messages=50_000_000):
        self.epsilon = epsilon
        self.delta = delta
        self.k = k
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

    def _validate(self, d):
        o = "U2R"
        eps = check_float(self.epsilon, "epsilon", o, low=0)
        delta = check_float(self.delta, "delta", o, low=0, high=1)
        k = check_int(self.k, "k", o, low=1, high=d)
        sigma = check_float(self.sigma, "sigma", o, low=0)
        tb = check_float(self.theta_bound, "theta_bound", o, low=0)
        rho = tb / math.sqrt(k) if self.rho is None else check_float(self.rho, "rho", o, low=0)
        alpha = (None if self.local_alpha is None
                 else check_float(self.local_alpha, "local_alpha", o, low=0))
        split = np.asarray(self.split, dtype=np.float64) if isinstance(
            self.split, (list, tuple, np.ndarray)) else None
        if split is None or split.shape != (3,) or not np.all(split > 0):
            raise param_error("split", o, "three fractions in (0, 1]", self.split)
        c = check_float(self.clip_multiplier, "clip_multiplier", o, low=0)
        ms = None if self.max_support is None else check_int(self.max_support, "max_support", o,
                                                               low=1)
        if isinstance(self.shrinkage, (bool, np.bool_)):
            shrink = bool(self.shrinkage)
        else:
            shrink = check_float(self.shrinkage, "shrinkage", o, low=0, low_open=False)
        return eps, delta, k, sigma, tb, rho, alpha, split / split.sum(), c, ms, shrink

    def fit(self, X, y, *, users=None, rng=None):
        """Fit on rows ``X``, ``y`` whose users are ``users`` (required).

        Parameters
        ----------
        X : array_like (N, d)
        y : array_like (N,)
        users : array_like (N,)
            Each row's user id; a user's rows are its ``m`` samples.
        rng : None, int, SeedSequence or Generator
            Source of the group split and of every randomizer.

        Returns
        -------
        self
        """
        return self.fit_precomputed(self.precompute(X, y, users=users), rng=rng)

    def fit_precomputed(self, pre, *, rng=None):
        """:meth:`fit` on a :class:`~fastldp.regression.local.Precomputed` (see there).

        The local Lassos and local least squares it needs are taken from
        ``pre`` (computed there the first time); the result is bit for bit
        that of ``fit`` on the same data and ``rng``.
        """
        d = pre.X.shape[1]
        eps, delta, k, sigma, tb, rho, alpha, split, c, ms, shrink = self._validate(d)
        data = pre.grouped("U2R", min_rows=2)
        n = data.n
        sizes = np.floor(split * n).astype(int)
        sizes[2] = n - sizes[0] - sizes[1]
        if sizes.min() < 3:
            raise ValueError(f"U2R: {n} users split {tuple(int(s) for s in sizes)} leave a group "
                             f"with fewer than 3 users; more users are needed.")
        gen = as_generator(rng, "U2R")
        perm = gen.permutation(n)
        g1, ga, gb = np.split(perm, np.cumsum(sizes)[:2])
        m = int(np.median(data.counts))
        if alpha is None:
            alpha = sigma * math.sqrt(2 * math.log(d) / m)

        # ---- stage 1: local Lasso, one candidate index per user, shuffled bits
        if isinstance(self.screen, str) and self.screen == "auto":
            screen = 2 * m
        elif self.screen is None:
            screen = d
        else:
            screen = check_int(self.screen, "screen", "U2R", low=1)
        B = pre.local_lasso(g1, alpha, screen if screen < d else None, "U2R")
        cand = np.abs(B) > rho / 2
        cand[~cand.any(axis=1)] = True
        scores = gen.random(cand.shape)
        scores[~cand] = -1.0
        index = np.argmax(scores, axis=1)
        counts, gamma = ShuffledBits(epsilon=eps, delta=delta, d=d).counts(index, gen)
        tau = g1.shape[0] / (4 * k)
        S = np.flatnonzero(counts > tau)
        limit = min(ms or d, max(1, m - 2))
        if S.shape[0] > limit:
            S = np.sort(S[np.argsort(-counts[S], kind="stable")[:limit]])
        self.counts_, self.gamma_, self.threshold_ = counts, gamma, tau
        self.support_recovered_ = S
        self.groups_ = tuple(int(s) for s in sizes)
        coef = np.zeros(d)
        coarse = np.zeros(d)
        s = S.shape[0]
        if s == 0:
            self.coef_coarse_, self.radii_, self.summations_ = coarse, (0.0, 0.0), ()
            return self._set_fitted(coef, 0.0, Privacy("user", "shuffle", eps, delta))

        # ---- stage 2a: coarse estimate
        dof = max(m - s - 1, 1)
        spread = sigma * math.sqrt(s / dof)
        ra = tb + c * spread
        la = pre.local_least_squares(ga, S, "U2R")
        summer = dict(epsilon=eps, delta=delta, max_messages=self.max_messages)
        res_a = ShuffledVectorSum(norm_bound=ra, **summer).sum(clip_l2(la, ra), gen)
        na, nb = ga.shape[0], gb.shape[0]
        theta_a = res_a.total / na
        sd_a = res_a.noise_sd / na
        # ---- stage 2b: refinement around the coarse estimate
        rb = c * (spread + math.sqrt(s) * sd_a + sigma * math.sqrt(s / (na * dof)))
        lb = pre.local_least_squares(gb, S, "U2R")
        res_b = ShuffledVectorSum(norm_bound=rb, **summer).sum(clip_l2(lb, rb, theta_a), gen)
        theta = theta_a + res_b.total / nb
        if shrink is not False:
            level = sigma * math.sqrt(math.log(d) / n) if shrink is True else shrink
            theta = soft_threshold(theta, level)
        coef[S] = theta
        coarse[S] = theta_a
        self.coef_coarse_, self.radii_ = coarse, (ra, rb)
        self.summations_ = (res_a, res_b)
        used = max(delta, res_a.delta, res_b.delta)
        return self._set_fitted(coef, 0.0, Privacy("user", "shuffle", eps, used))
