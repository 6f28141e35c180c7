"""Per-user (local) solvers, batched over users: Lasso by FISTA and least squares.

Every user solves on its own ``m`` rows; the solvers run all users at once
on the ``(n, m, d)`` array of :class:`fastldp.regression._base.UserData`.
"""

from __future__ import annotations

import math
import os
from concurrent.futures import ThreadPoolExecutor

import numpy as np

from ._base import soft_threshold

__all__ = ["local_lasso", "local_least_squares"]


def local_lasso(X, y, counts, alpha: float, *, max_iter: int = 300, tol: float = 1e-4,
                threshold=None, patience: int = 8, dtype=np.float32) -> np.ndarray:
    """Each user's Lasso ``argmin (1/(2 m_u)) ||y_u - X_u b||^2 + alpha ||b||_1``.

    Batched FISTA (Beck and Teboulle 2009) with one step size per user,
    ``1 / L_u`` where ``L_u`` bounds the largest eigenvalue of ``X_u^T X_u / m_u``
    (power iteration). Stops when no coefficient moved by more than ``tol``
    (relative to the largest) in an iteration, or, with ``threshold``, when
    the sets ``{j : |b_uj| > threshold}`` of all users stayed the same for
    ``patience`` iterations and no coefficient moved by more than
    ``threshold / 100`` (enough for a support selection). Runs in ``dtype``
    (float32 by default: the result is only thresholded).

    Returns
    -------
    ndarray of shape (n, d)
    """
    X = np.asarray(X, dtype=dtype)
    y = np.asarray(y, dtype=dtype)
    n, m, d = X.shape
    inv_m = (1.0 / np.asarray(counts, dtype=dtype))[:, None]
    # power iteration for L_u
    v = np.ones((n, d), dtype=dtype) / np.sqrt(d)
    for _ in range(12):
        v = _xt(X, _x(X, v)) * inv_m
        norm = np.linalg.norm(v, axis=1, keepdims=True)
        v /= np.maximum(norm, 1e-12)
    lip = (norm[:, 0] * 1.05 + 1e-6).astype(dtype)
    step = (1.0 / lip)[:, None]
    Xty = _xt(X, y) * inv_m
    b = np.zeros((n, d), dtype=dtype)
    z = b.copy()
    t = 1.0
    same, last = 0, None
    for it in range(max_iter):
        grad = _xt(X, _x(X, z)) * inv_m - Xty
        b_new = soft_threshold(z - step * grad, alpha * step).astype(dtype)
        t_new = 0.5 * (1 + math.sqrt(1 + 4 * t * t))  # a Python float: z stays float32
        z = b_new + ((t - 1) / t_new) * (b_new - b)
        moved = float(np.abs(b_new - b).max())
        b, t = b_new, t_new
        if threshold is not None:
            sets = np.abs(b) > threshold
            if it and np.array_equal(sets, last):
                same += 1
            else:
                same = 0
            last = sets
            if same >= patience and moved <= threshold / 100:
                break
        elif moved <= tol * max(1e-12, float(np.abs(b).max())) and it > 5:
            break
    return b.astype(np.float64)


def _x(X, v):
    return np.matmul(X, v[:, :, None])[:, :, 0]


def _xt(X, r):
    return np.matmul(r[:, None, :], X)[:, 0, :]


def local_least_squares(X, y, ridge: float = 1e-8) -> np.ndarray:
    """Each user's least squares ``(X_u^T X_u + ridge m_u I)^{-1} X_u^T y_u`` (``X`` of shape (n, m, s))."""
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, m, s = X.shape
    if s == 0:
        return np.zeros((n, 0))
    G = np.einsum("umi,umj->uij", X, X)
    G += ridge * m * np.eye(s)
    b = np.einsum("umi,um->ui", X, y)
    return np.linalg.solve(G, b[..., None])[..., 0]


def screened_local_lasso(X, y, counts, alpha: float, *, users=None, screen=None,
                         threshold=None, chunk: int = 128, max_iter: int = 50,
                         n_threads=None) -> np.ndarray:
    """:func:`local_lasso` after sure independence screening, in cache-sized chunks of users.

    Each user keeps its ``screen`` columns of largest ``|X_u^T y_u|`` (sure
    independence screening, Fan and Lv 2008; ``None`` keeps all ``d``) and
    solves its Lasso on them; the other coefficients are 0. Users are
    processed ``chunk`` at a time (their rows stay in cache across the
    iterations), in float32, on ``n_threads`` threads (default: the cores;
    NumPy releases the GIL in the products, and the result does not depend
    on the threads).

    Parameters
    ----------
    X : ndarray (n_all, m, d)
    y : ndarray (n_all, m)
    counts : ndarray (n_all,)
    users : ndarray of int, optional
        The users to solve (rows of ``X``); default all.

    Returns
    -------
    ndarray (len(users), d)
    """
    users = np.arange(X.shape[0]) if users is None else np.asarray(users)
    n, d = users.shape[0], X.shape[2]
    p = d if screen is None else max(1, min(int(screen), d))
    out = np.zeros((n, d))

    def solve(start):
        who = users[start:start + chunk]
        Xc = X[who].astype(np.float32)
        yc = y[who].astype(np.float32)
        if p < d:
            corr = np.abs(_xt(Xc, yc))
            keep = np.sort(np.argpartition(-corr, p - 1, axis=1)[:, :p], axis=1)
            Xc = np.take_along_axis(Xc, keep[:, None, :], axis=2)
        b = local_lasso(Xc, yc, counts[who], alpha, threshold=threshold, max_iter=max_iter,
                        patience=5)
        if p < d:
            np.put_along_axis(out[start:start + chunk], keep, b, axis=1)
        else:
            out[start:start + chunk] = b

    starts = range(0, n, chunk)
    threads = max(1, min(os.cpu_count() or 1, len(starts))) if n_threads is None else n_threads
    if threads == 1:
        for start in starts:
            solve(start)
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(solve, starts))
    return out
