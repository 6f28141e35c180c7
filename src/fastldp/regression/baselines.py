"""Baselines of paper 002's evaluation: non-private Lasso, LDP-IHT and 2-SLR.

(Sample-SDP, the fourth baseline, is :class:`fastldp.regression.SampleSDP`.)
The summary of the paper names LDP-IHT and 2-SLR without their details; the
forms here are the standard published ones, with our choices written in
each docstring.
"""

from __future__ import annotations

import math

import numpy as np

from .._random import as_generator
from .._validation import check_float, check_int
from ._base import Privacy, RegressionEstimator, check_Xy

__all__ = ["Lasso", "lasso_gram", "LDPIHT", "TwoStageSLR", "hard_threshold"]


def lasso_gram(G, b, alpha: float, *, max_iter: int = 1000, tol: float = 1e-10,
               start=None) -> np.ndarray:
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


class Lasso(RegressionEstimator):
    """Non-private Lasso by coordinate descent (no scikit-learn needed).

    Minimizes ``(1/(2N)) ||y - X theta - c||^2 + alpha ||theta||_1``.

    Parameters
    ----------
    alpha : float, optional
        Default ``sigma sqrt(2 log d / N)`` (the usual theory choice).
    sigma : float
        Noise-level bound used by the default ``alpha``.
    fit_intercept : bool
    max_iter : int
    tol : float
    """

    def __init__(self, *, alpha=None, sigma=1.0, fit_intercept=True, max_iter=1000, tol=1e-10):
        self.alpha = alpha
        self.sigma = sigma
        self.fit_intercept = fit_intercept
        self.max_iter = max_iter
        self.tol = tol

    def fit(self, X, y, *, users=None, rng=None):
        """Fit on all rows (``users`` and ``rng`` are accepted and ignored)."""
        o = "Lasso"
        X, y = check_Xy(X, y, o)
        N, d = X.shape
        alpha = (self.sigma_default(N, d) if self.alpha is None
                 else check_float(self.alpha, "alpha", o, low=0, low_open=False))
        max_iter = check_int(self.max_iter, "max_iter", o, low=1)
        tol = check_float(self.tol, "tol", o, low=0, low_open=False)
        if self.fit_intercept:
            mx, my = X.mean(axis=0), float(y.mean())
            G = (X.T @ X) / N - np.outer(mx, mx)
            b = (X.T @ y) / N - mx * my
        else:
            mx, my = np.zeros(d), 0.0
            G, b = (X.T @ X) / N, (X.T @ y) / N
        coef = lasso_gram(G, b, alpha, max_iter=max_iter, tol=tol)
        self.alpha_ = alpha
        return self._set_fitted(coef, my - float(mx @ coef), Privacy("none", "none", math.inf, 0.0))

    def sigma_default(self, N, d) -> float:
        sigma = check_float(self.sigma, "sigma", "Lasso", low=0, low_open=False)
        return sigma * math.sqrt(2 * math.log(max(d, 2)) / N)


def hard_threshold(theta, k: int) -> np.ndarray:
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


class LDPIHT(RegressionEstimator):
    """LDP iterative hard thresholding (sample-level pure eps-LDP).

    The standard non-interactive-per-record form (after Wang and Xu, "Sparse
    and low-rank regression under LDP", and LDP-IHT of Zhu et al.): the rows
    are split at random into ``iterations`` disjoint batches, so each record
    reports once (eps-LDP). In iteration ``t`` each record of batch ``t``
    sends its gradient ``x (x^T theta - y)`` (covariates and response
    clipped first), clipped coordinatewise to ``[-grad_clip, grad_clip]``,
    plus Laplace noise of scale ``2 grad_clip d / eps`` per coordinate (the
    l1 sensitivity of a vector in that box); the server averages, steps by
    ``step``, keeps the ``k`` largest entries and projects onto the l2 ball
    of radius ``theta_bound``. The sum of a batch's Laplace noise is drawn
    exactly as a difference of two Gamma variables.

    Parameters
    ----------
    epsilon : float
    k : int
    iterations : int
    step : float
    x_clip, y_clip, grad_clip : float
    theta_bound : float
    """

    def __init__(self, *, epsilon, k, iterations=10, step=1.0, x_clip=3.0, y_clip=3.0,
                 grad_clip=2.0, theta_bound=1.0):
        self.epsilon = epsilon
        self.k = k
        self.iterations = iterations
        self.step = step
        self.x_clip = x_clip
        self.y_clip = y_clip
        self.grad_clip = grad_clip
        self.theta_bound = theta_bound

    def fit(self, X, y, *, users=None, rng=None):
        """Fit on the rows (``users`` is accepted and ignored: sample-level)."""
        o = "LDPIHT"
        X, y = check_Xy(X, y, o)
        N, d = X.shape
        eps = check_float(self.epsilon, "epsilon", o, low=0)
        k = check_int(self.k, "k", o, low=1, high=d)
        T = check_int(self.iterations, "iterations", o, low=1, high=N)
        step = check_float(self.step, "step", o, low=0)
        cx = check_float(self.x_clip, "x_clip", o, low=0)
        cy = check_float(self.y_clip, "y_clip", o, low=0)
        cg = check_float(self.grad_clip, "grad_clip", o, low=0)
        tb = check_float(self.theta_bound, "theta_bound", o, low=0)
        gen = as_generator(rng, o)
        batches = np.array_split(gen.permutation(N), T)
        chunk = max(1, 2 ** 20 // (8 * d))  # about 1 MiB of rows
        theta = np.zeros(d)
        scale = 2 * cg * d / eps
        for batch in batches:
            batch = np.sort(batch)  # the same rows, read in memory order
            g = np.zeros(d)
            S = np.flatnonzero(theta)  # theta is k-sparse after the first step
            for start in range(0, batch.shape[0], chunk):  # cache-sized blocks of rows
                rows = batch[start:start + chunk]
                xb = np.clip(X[rows], -cx, cx, out=None)
                r = xb[:, S] @ theta[S] - np.clip(y[rows], -cy, cy)
                xb *= r[:, None]
                np.clip(xb, -cg, cg, out=xb)
                g += xb.sum(axis=0)
            g += _laplace_sum(batch.shape[0], scale, d, gen)
            theta = hard_threshold(theta - step * g / batch.shape[0], k)
            norm = float(np.linalg.norm(theta))
            if norm > tb:
                theta *= tb / norm
        return self._set_fitted(theta, 0.0, Privacy("sample", "local", eps, 0.0))


class TwoStageSLR(RegressionEstimator):
    """2-SLR: two-stage sparse regression under pure user-level eps-LDP.

    The summary names 2-SLR (a user-level LDP baseline) without details; we
    implement the standard two-stage form with the same local steps as U2R
    and local randomizers in place of the shuffler:

    - stage 1 (a ``split`` fraction of the users): the local Lasso of U2R
      (screened, thresholded at ``rho / 2``), one uniformly sampled
      candidate index, reported by k-ary randomized response over ``[d]``
      (keep with probability ``e^eps / (e^eps + d - 1)``); the server
      debiases the counts and keeps the ``k`` largest;
    - stage 2 (the other users): local least squares on that support,
      clipped coordinatewise to ``[-R, R]`` with ``R = theta_bound + 3 sigma
      sqrt(k / (m - k - 1))``, plus Laplace noise of scale ``2 R k / eps``
      per coordinate (l1 sensitivity); the server averages and projects
      onto the l2 ball of radius ``theta_bound``.

    Each user takes part in one stage, so the protocol is eps-LDP per user.

    Parameters
    ----------
    epsilon : float
    k : int
    sigma, theta_bound, rho, local_alpha, screen
        As in :class:`~fastldp.regression.U2R`.
    split : float
        Fraction of the users in stage 1.
    """

    def __init__(self, *, epsilon, k, sigma=1.0, theta_bound=1.0, rho=None, local_alpha=None,
                 split=0.5, screen="auto"):
        self.epsilon = epsilon
        self.k = k
        self.sigma = sigma
        self.theta_bound = theta_bound
        self.rho = rho
        self.local_alpha = local_alpha
        self.split = split
        self.screen = screen

    def fit(self, X, y, *, users=None, rng=None):
        """Fit on rows grouped by ``users`` (required)."""
        return self.fit_precomputed(self.precompute(X, y, users=users), rng=rng)

    def fit_precomputed(self, pre, *, rng=None):
        """:meth:`fit` with the local solutions of ``pre`` (see :meth:`U2R.fit_precomputed`)."""
        o = "TwoStageSLR"
        d = pre.X.shape[1]
        eps = check_float(self.epsilon, "epsilon", o, low=0)
        k = check_int(self.k, "k", o, low=1, high=d)
        sigma = check_float(self.sigma, "sigma", o, low=0)
        tb = check_float(self.theta_bound, "theta_bound", o, low=0)
        rho = tb / math.sqrt(k) if self.rho is None else check_float(self.rho, "rho", o, low=0)
        split = check_float(self.split, "split", o, low=0, high=1)
        data = pre.grouped(o, min_rows=2)
        n = data.n
        n1 = int(math.floor(split * n))
        if n1 < 1 or n - n1 < 1:
            raise ValueError(f"{o}: {n} users cannot be split {split:g} / {1 - split:g}.")
        m = int(np.median(data.counts))
        alpha = (sigma * math.sqrt(2 * math.log(d) / m) if self.local_alpha is None
                 else check_float(self.local_alpha, "local_alpha", o, low=0))
        if isinstance(self.screen, str) and self.screen == "auto":
            screen = 2 * m
        elif self.screen is None:
            screen = d
        else:
            screen = check_int(self.screen, "screen", o, low=1)
        gen = as_generator(rng, o)
        perm = gen.permutation(n)
        g1, g2 = perm[:n1], perm[n1:]
        B = pre.local_lasso(g1, alpha, screen if screen < d else None, o)
        cand = np.abs(B) > rho / 2
        cand[~cand.any(axis=1)] = True
        scores = gen.random(cand.shape)
        scores[~cand] = -1.0
        index = np.argmax(scores, axis=1)
        # k-ary randomized response over [d]
        e = math.exp(min(eps, 700.0))
        p = e / (e + d - 1)
        q = (1 - p) / (d - 1) if d > 1 else 0.0
        keep = gen.random(n1) < p
        other = (index + gen.integers(1, d, n1)) % d if d > 1 else index
        reported = np.where(keep, index, other)
        counts = np.bincount(reported, minlength=d).astype(np.float64)
        debiased = (counts - n1 * q) / (p - q) if d > 1 else counts
        S = np.sort(np.argsort(-debiased, kind="stable")[:k])
        dof = max(m - k - 1, 1)
        R = tb + 3 * sigma * math.sqrt(k / dof)
        local = np.clip(pre.local_least_squares(g2, S, o), -R, R)
        total = local.sum(axis=0) + _laplace_sum(g2.shape[0], 2 * R * k / eps, k, gen)
        theta = total / g2.shape[0]
        norm = float(np.linalg.norm(theta))
        if norm > tb:  # the parameter space is the theta_bound ball
            theta *= tb / norm
        coef = np.zeros(d)
        coef[S] = theta
        self.support_recovered_, self.counts_ = S, debiased
        return self._set_fitted(coef, 0.0, Privacy("user", "local", eps, 0.0))
