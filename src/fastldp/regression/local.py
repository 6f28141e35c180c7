"""Per-user (local) solvers, batched over users (Lasso, least squares), and their cache.

Every user solves on its own ``m`` rows; the solvers run all users at once
on the ``(n, m, d)`` array of :class:`fastldp.regression._rows.UserData`.
"""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike, DTypeLike

from .._kernels import _lasso
from .._kernels._gather import gather_active, gather_users_float32, take_columns
from .._validation import check_int
from ._rows import UserData, check_Xy, first_rows, group_users, soft_threshold

__all__ = ["local_lasso", "local_least_squares", "screened_local_lasso", "Precomputed",
           "clipped_sums"]


def local_lasso(X: ArrayLike, y: ArrayLike, counts: ArrayLike, alpha: float, *,
                max_iter: int = 300, tol: float = 1e-4, threshold: Any = None,
                patience: int = 8, dtype: DTypeLike = np.float32, warm_iter: int = 20,
                active_rounds: int = 6, max_active: int = 32,
                compiled: bool = True) -> np.ndarray:
    """Each user's Lasso ``argmin (1/(2 m_u)) ||y_u - X_u b||^2 + alpha ||b||_1``.

    Three steps, every one per user (a user's result depends on its own rows
    only, never on the other users of the batch, the batch size or the threads):

    1. ``warm_iter`` iterations of FISTA (Beck and Teboulle 2009) from 0 in
       ``dtype`` (float32 by default), step ``1 / L_u`` with ``L_u`` a power
       iteration estimate of the largest eigenvalue of ``X_u^T X_u / m_u``;
    2. up to ``active_rounds`` rounds of an active-set step in float64: on the
       support ``A`` and signs ``s`` of the current iterate, the closed form
       ``b_A = G_AA^{-1} (c_A - alpha s_A)`` (``G = X^T X / m``,
       ``c = X^T y / m``), accepted when it satisfies the Lasso's KKT
       conditions (``sign(b_A) = s`` and ``|c_j - G_jA b_A| <= alpha`` off
       ``A``), which certifies it as the exact minimizer; otherwise ``A``
       keeps its sign-consistent coordinates and gains the violators (the
       feature-sign search of Lee, Battle, Raina and Ng 2006, without its
       line search). Supports larger than ``max_active`` (or than
       ``m_u - 1``) are not tried;
    3. the users not certified continue FISTA, each until no coefficient
       moved by more than ``tol`` times its largest (or ``max_iter``
       iterations in all), and are tried by step 2 once more; a user still not
       certified keeps its FISTA iterate.

    ``threshold`` and ``patience`` are accepted for compatibility and unused.

    In float32 (the default), the power iteration and the FISTA iterations
    run in the compiled kernel :mod:`fastldp._kernels._lasso` (one C loop
    per user instead of one BLAS call per user and product); ``compiled=False``
    runs them in NumPy, the kernel's twin. The two agree to float32
    rounding (the additions inside a product are ordered differently); a
    user certified by step 2 gets the same support and signs from either,
    hence the same closed form, bit for bit (tests/test_lasso_kernel.py).

    Returns
    -------
    ndarray of shape (n, d), float64
    """
    X = np.asarray(X, dtype=dtype)
    y = np.asarray(y, dtype=dtype)
    n, m, d = X.shape
    counts = np.asarray(counts, dtype=np.float64)
    inv_m = (1.0 / counts.astype(dtype))[:, None]
    X64 = X.astype(np.float64, copy=False)
    use_kernel = compiled and X.dtype == np.float32
    fista = _fista_compiled if use_kernel else _fista
    if use_kernel:
        X = np.ascontiguousarray(X)
        step = _lasso.power_steps(X, np.ascontiguousarray(inv_m[:, 0]))[:, None]
    else:
        # power iteration for L_u
        # the power iteration runs in float64 (v is float64: float32 / np.float64); X is cast
        # once here, not by each product (a mixed-type matmul casts X to float64 every call)
        v = np.ones((n, d), dtype=dtype) / np.sqrt(d)
        norm = np.ones((n, 1), dtype=dtype)
        for _ in range(6):
            v = _xt(X64, _x(X64, v)) * inv_m
            norm = np.linalg.norm(v, axis=1, keepdims=True)
            v /= np.maximum(norm, 1e-12)
        step = (1.0 / (norm[:, 0] * 1.15 + 1e-6).astype(dtype))[:, None]
    Xty = _xt(X, y) * inv_m
    # the minimizer has alpha ||b||_1 <= ||y||^2 / (2 m); an iterate far beyond means the
    # power iteration underestimated L_u: that user restarts from 0 with half the step
    bound = (4.0 * np.einsum("um,um->u", y, y).astype(np.float64) * inv_m[:, 0]
             / (2 * max(alpha, 1e-12)) + 1.0)[:, None]
    t = np.ones((n, 1))
    b, z, t, step = fista(X, Xty, inv_m, step, alpha, np.zeros((n, d), dtype=dtype), None, t,
                          min(warm_iter, max_iter), None, bound)
    out = b.astype(np.float64)
    y64 = y.astype(np.float64)
    c64 = _xt(X64, y64) / counts[:, None]
    K = max(1, min(d, max_active, m - 1))
    done = _active_set(X, y64, c64, counts, alpha, out, active_rounds, K)
    left = np.flatnonzero(~done)
    if left.shape[0] and max_iter > warm_iter:
        sub = (X[left], Xty[left], inv_m[left], step[left])
        bl, _, _, _ = fista(*sub, alpha, b[left], z[left], t[left], max_iter - warm_iter, tol,
                            bound[left])
        out_l = bl.astype(np.float64)
        _active_set(X[left], y64[left], c64[left], counts[left], alpha, out_l,
                    active_rounds, K)
        out[left] = out_l
    return out


def _fista(X, Xty, inv_m, step, alpha, b, z, t, iterations, tol, bound):
    """FISTA iterations, per user (``t``, ``step``, ``bound``: one row per user).

    With ``tol``, a user stops once its largest move is ``<= tol * max|b_u|``.
    A user whose ``||b_u||_1`` exceeds ``bound_u`` (or turns non-finite)
    restarts from 0 with half its step. Returns ``(b, z, t, step)``.
    """
    dtype = b.dtype
    z = b.copy() if z is None else z.copy()
    b, t, step = b.copy(), t.copy(), step.copy()
    live = np.arange(b.shape[0])
    Xl, Xtyl, iml, st, tl, bd = X, Xty, inv_m, step, t, bound
    zl, bl = z, b
    for _ in range(iterations):
        grad = _xt(Xl, _x(Xl, zl)) * iml - Xtyl
        b_new = soft_threshold(zl - st * grad, alpha * st).astype(dtype)
        t_new = 0.5 * (1 + np.sqrt(1 + 4 * tl * tl))
        zl = b_new + ((tl - 1) / t_new).astype(dtype) * (b_new - bl)
        size = np.abs(b_new).sum(axis=1, dtype=np.float64)
        bad = ~(size <= bd[:, 0])  # NaN too
        moved = None if tol is None else np.abs(b_new - bl).max(axis=1)
        bl, tl = b_new, t_new
        if bad.any():
            bl[bad] = 0
            zl[bad] = 0
            tl[bad] = 1.0
            st[bad] *= 0.5
        if tol is not None:
            stop = (moved <= tol * np.maximum(np.abs(b_new).max(axis=1), 1e-12)) & ~bad
            if stop.any():
                b[live], z[live], t[live], step[live] = bl, zl, tl, st
                keep = ~stop
                live = live[keep]
                if live.shape[0] == 0:
                    break
                Xl, Xtyl, iml, st, tl, bd = (Xl[keep], Xtyl[keep], iml[keep], st[keep],
                                             tl[keep], bd[keep])
                zl, bl = zl[keep], bl[keep]
    if live.shape[0]:
        b[live], z[live], t[live], step[live] = bl, zl, tl, st
    return b, z, t, step


def _fista_compiled(X, Xty, inv_m, step, alpha, b, z, t, iterations, tol, bound):
    """:func:`_fista` by the kernel :func:`fastldp._kernels._lasso.fista` (float32 only)."""
    f32 = np.float32
    b = np.array(b, dtype=f32, order="C")
    z = b.copy() if z is None else np.array(z, dtype=f32, order="C")
    t = np.array(t[:, 0], dtype=np.float64)
    step = np.array(step[:, 0], dtype=f32)
    _lasso.fista(np.ascontiguousarray(X, dtype=f32), np.ascontiguousarray(Xty, dtype=f32),
                 np.ascontiguousarray(inv_m[:, 0], dtype=f32), step, float(alpha), b, z, t,
                 int(iterations), -1.0 if tol is None else float(tol),
                 np.ascontiguousarray(bound[:, 0], dtype=np.float64))
    return b, z, t[:, None], step[:, None]


def _active_set(X, y, c, counts, alpha, b, rounds, K, kkt_tol=1e-5):
    """Feature-sign rounds on ``b`` (n, p) in place; returns the mask of certified users."""
    n, m, p = X.shape
    done = np.zeros(n, dtype=bool)
    cur = b.copy()
    todo = np.arange(n)
    ar = np.arange(K)
    for _ in range(rounds):
        if todo.shape[0] == 0:
            break
        every = todo.shape[0] == n
        Xt = X if every else X[todo]
        ct, bt = c[todo], cur[todo]
        mt = counts[todo]
        A = bt != 0
        a = A.sum(axis=1)
        tried = (a <= K) & (a <= mt - 1)
        order = np.ascontiguousarray(np.argsort(~A, axis=1, kind="stable")[:, :K])
        width = np.where(tried, a, 0).astype(np.intp)  # active columns gathered (0: not tried)
        pad = ar[None, :] >= width[:, None]
        # each user's active columns in float64, zero on its padding columns
        XA = gather_active(X, todo, order, width)
        G = np.matmul(XA.transpose(0, 2, 1), XA) / mt[:, None, None]
        G[:, ar, ar] += pad
        s = np.sign(np.take_along_axis(bt, order, axis=1))
        rhs = np.where(pad, 0.0, np.take_along_axis(ct, order, axis=1) - alpha * s)
        try:
            bA = np.linalg.solve(G, rhs[..., None])[..., 0]
        except np.linalg.LinAlgError:  # one singular system: solve each alone, skip the singular
            bA = np.zeros_like(rhs)
            for i in range(G.shape[0]):
                try:
                    bA[i] = np.linalg.solve(G[i], rhs[i])
                except np.linalg.LinAlgError:
                    tried[i] = False
            pad |= ~tried[:, None]
            bA[pad] = 0.0
        sol = np.zeros_like(bt)
        np.put_along_axis(sol, order, np.where(pad, 0.0, bA), axis=1)
        fitted = _x(XA, bA).astype(Xt.dtype)
        g = ct - _xt(Xt, fitted) / mt[:, None]  # c - G b: the gradient's negative
        signs_ok = np.all(pad | (np.sign(bA) == s), axis=1)
        kkt_ok = np.all(A | (np.abs(g) <= alpha * (1 + kkt_tol)), axis=1)
        ok = tried & signs_ok & kkt_ok
        b[todo[ok]] = sol[ok]
        done[todo[ok]] = True
        # next support: the sign-consistent coordinates and the KKT violators
        keep = A & (np.sign(sol) == np.sign(bt)) & tried[:, None]
        viol = ~A & (np.abs(g) > alpha)
        nxt = np.where(keep, sol, 0.0) + np.where(viol, np.sign(g) * 1e-3, 0.0)
        cur[todo] = np.where(tried[:, None], nxt, bt)
        todo = todo[~ok]
    return done


def _x(X, v):
    return np.matmul(X, v[:, :, None])[:, :, 0]


def _xt(X, r):
    return np.matmul(r[:, None, :], X)[:, 0, :]


def local_least_squares(X: ArrayLike, y: ArrayLike, ridge: float = 1e-8) -> np.ndarray:
    """Each user's least squares ``(X_u^T X_u + ridge m I)^{-1} X_u^T y_u`` (``X`` of shape (n, m, s)).

    Never raises for a user's data: a user whose system overflows or is
    numerically singular gets a non-finite row (NaN), left for the caller to
    replace by its public default.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    n, m, s = X.shape
    if s == 0:
        return np.zeros((n, 0))
    # a user's extreme (finite) rows may overflow here: its solution is then non-finite, which
    # the estimators replace by a public default; nothing may raise for one user's data
    with np.errstate(over="ignore", invalid="ignore"):
        G = np.matmul(X.transpose(0, 2, 1), X)  # per user: the result does not depend on the batch
        G += ridge * m * np.eye(s)
        b = _xt(X, y)
        try:
            return np.linalg.solve(G, b[..., None])[..., 0]
        except np.linalg.LinAlgError:  # one numerically singular system: NaN for that user only
            out = np.empty((n, s))
            for i in range(n):
                try:
                    out[i] = np.linalg.solve(G[i], b[i])
                except np.linalg.LinAlgError:
                    out[i] = np.nan
            return out


def screened_local_lasso(X: np.ndarray, y: np.ndarray, counts: np.ndarray, alpha: float, *,
                         users: Optional[ArrayLike] = None, screen: Optional[int] = None,
                         threshold: Any = None, chunk: int = 128, max_iter: int = 200,
                         n_threads: Optional[int] = None) -> np.ndarray:
    """:func:`local_lasso` after sure independence screening, in cache-sized chunks of users.

    Each user keeps its ``screen`` columns of largest ``|X_u^T y_u|`` (sure
    independence screening, Fan and Lv 2008; ``None`` keeps all ``d``) and
    solves its Lasso on them; the other coefficients are 0. Users are
    processed ``chunk`` at a time (their rows stay in cache across the
    iterations), in float32 (float64 for a user whose entries are so large, or
    so small, that float32 products would overflow or underflow), on
    ``n_threads`` threads (default: the cores;
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
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    users = (np.arange(X.shape[0]) if users is None
             else np.asarray(users).astype(np.intp, copy=False))
    n, d = users.shape[0], X.shape[2]
    p = d if screen is None else max(1, min(int(screen), d))
    out = np.zeros((n, d))

    def solve_users(Xc, yc, counts_w, dtype):
        # a user's extreme (finite) rows may overflow even in float64: its solution is then
        # non-finite, which the estimators replace by a public default
        with np.errstate(over="ignore", invalid="ignore"):
            if p < d:
                corr = np.abs(_xt(Xc, yc))
                keep = np.sort(np.argpartition(-corr, p - 1, axis=1)[:, :p], axis=1)
                Xc = take_columns(Xc, keep.astype(np.intp, copy=False))
            b = local_lasso(Xc, yc, counts_w, alpha, threshold=threshold, max_iter=max_iter,
                            patience=5, dtype=dtype)
        if p < d:
            full = np.zeros((yc.shape[0], d))
            np.put_along_axis(full, keep, b, axis=1)
            return full
        return b

    def solve(start):
        who = users[start:start + chunk]
        cw = counts[who]
        # the chunk's rows in float32 and each user's largest entry, in one pass
        Xc, yc, big = gather_users_float32(X, y, who)
        # float64 only for the users whose own rows need it (per user, never per chunk: a
        # user's solution must not depend on the other users of its chunk)
        wide = ~_fits_float32(big, X.shape[1], p)
        if not wide.any():
            out[start:start + chunk] = solve_users(Xc, yc, cw, np.float32)
            return
        part = out[start:start + chunk]
        if not wide.all():
            part[~wide] = solve_users(Xc[~wide], yc[~wide], cw[~wide], np.float32)
        part[wide] = solve_users(X[who[wide]], y[who[wide]], cw[wide], np.float64)

    starts = range(0, n, chunk)
    threads = max(1, min(os.cpu_count() or 1, len(starts))) if n_threads is None else n_threads
    if threads == 1:
        for start in starts:
            solve(start)
    else:
        with ThreadPoolExecutor(max_workers=threads) as pool:
            list(pool.map(solve, starts))
    return out


#: float32's largest value; a chunk is solved in float32 only well below it
_F32_MAX = float(np.finfo(np.float32).max)


def _fits_float32(big: np.ndarray, m: int, p: int) -> np.ndarray:
    """Per user: whether float32 can hold the local Lasso's products.

    ``big`` holds each user's largest entry magnitude (of its ``X`` and ``y``;
    NaN for a user with a NaN), ``m`` its rows and ``p`` the columns it solves on.
    The local Lasso forms sums of ``m p`` products of a user's entries
    (``X^T X v``, ``X^T y``, ``y^T y``); they stay below ``big^2 m p``. A user
    whose bound comes within a factor 2^10 of float32's range, or whose
    entries are so small that their products would be subnormal in float32,
    is solved in float64: scaled data then gets the float64 answer instead of
    an overflow to zero.
    """
    m = max(m, 1)
    ok = (big < np.sqrt(_F32_MAX / (m * max(p, 1) * 1024.0))) & (big > 1e-12)
    return ok | (big == 0.0)


def clipped_sums(X: np.ndarray, y: np.ndarray, x_clip: float, y_clip: float,
                 rows: int = 8192) -> tuple[np.ndarray, np.ndarray]:
    """``(Xc^T Xc, Xc^T yc)`` with ``Xc = clip(X, +-x_clip)``, ``yc = clip(y, +-y_clip)``.

    Accumulated over blocks of ``rows`` rows (no clipped copy of ``X``).
    """
    d = X.shape[1]
    G = np.zeros((d, d))
    b = np.zeros(d)
    for start in range(0, X.shape[0], rows):
        xc = np.clip(X[start:start + rows], -x_clip, x_clip)
        yc = np.clip(y[start:start + rows], -y_clip, y_clip)
        G += xc.T @ xc
        b += xc.T @ yc
    return G, b


class Precomputed:
    """The data of one fit and its eps-independent statistics (lazily computed, cached).

    Eps-independent work on one data set, computed once and shared by many
    fits (``RegressionEstimator.precompute`` / ``fit_precomputed``).

    A sweep over the privacy budget refits every method on the same data at each
    ``eps``; much of a fit does not depend on ``eps``: the users' local Lassos
    and local least-squares solutions (U2R, 2-SLR), the clipped sufficient
    statistics ``sum x x^T``, ``sum x y`` (Sample-SDP). :class:`Precomputed` holds them, computed lazily the first time a
    fit asks and reused after (see the example).

    Every cached quantity is per user (or a sum over all rows) and is computed
    by the same code as in a cold :meth:`fit`, whose result does not depend on
    which other users are solved in the same batch, so ``fit_precomputed`` gives
    bit for bit what ``fit`` gives on the same data and ``rng`` (``fit`` itself
    is ``fit_precomputed(precompute(...))``). The tests check this.

    Parameters
    ----------
    X : array_like (N, d)
    y : array_like (N,)
    users : array_like (N,), optional
        Each row's user id (needed by the user-level methods).
    owner : str
        Name used in error messages.
    n_threads : int, optional
        Threads of the local Lassos (:func:`screened_local_lasso`; default
        the cores). The results do not depend on it; a caller that already
        runs one process per core (an experiment's workers) passes 1.

    Examples
    --------
    One data set, an eps sweep: the local solutions are computed once.

    >>> from fastldp.regression import U2R, make_sparse_regression
    >>> data = make_sparse_regression(n=300, m=20, d=16, k=2, sigma=0.1, rng=0)
    >>> model = U2R(epsilon=4.0, k=2, rows_per_user=20, sigma=0.1)
    >>> pre = model.precompute(data.X, data.y, users=data.users)
    >>> [model.set_params(epsilon=eps).fit_precomputed(pre, rng=0).support_.tolist()
    ...  for eps in (4.0, 8.0)]
    [[2, 9], [2, 9]]
    >>> cold = U2R(epsilon=8.0, k=2, rows_per_user=20, sigma=0.1)
    >>> bool((cold.fit(data.X, data.y, users=data.users, rng=0).coef_ == model.coef_).all())
    True
    """

    def __init__(self, X: ArrayLike, y: ArrayLike, users: Optional[ArrayLike] = None,
                 owner: str = "Precomputed", *, n_threads: Optional[int] = None) -> None:
        self._setup(*check_Xy(X, y, owner), users, n_threads)

    def _setup(self, X: np.ndarray, y: np.ndarray, users: Optional[ArrayLike],
               n_threads: Optional[int]) -> None:
        """Hold already-checked rows (``__init__`` after :func:`check_Xy`)."""
        self.X, self.y = X, y
        self.users = users
        self.n_threads = n_threads
        self._grouped: Optional[UserData] = None
        self._first: dict = {}
        self._lasso: dict = {}
        self._ls: dict = {}
        self._sums: dict = {}
        self._clipped: dict = {}
        self._gram: Optional[np.ndarray] = None
        self._parent: Optional[Precomputed] = None  # set by first_users: per-user work shared

    def first_users(self, n_users: int) -> "Precomputed":
        """The :class:`Precomputed` of the first ``n_users`` users' rows, sharing per-user work.

        For nested samples (a sweep over ``n`` whose smaller data sets are the
        first users of the largest): the rows must be sorted by user id, and
        the result holds the rows of the ``n_users`` smallest ids. Its local
        Lassos and local least squares are read from, and added to, this
        object's caches (each user's solution depends on its own rows only, so
        they are the values a cold fit computes); its sums over rows (the
        Gram matrix, the clipped sums) are its own.

        Examples
        --------
        >>> import numpy as np
        >>> from fastldp.regression import make_sparse_regression
        >>> from fastldp.regression.local import Precomputed
        >>> data = make_sparse_regression(n=50, m=8, d=6, k=2, rng=0, nested=True)
        >>> big = Precomputed(data.X, data.y, data.users)
        >>> small = big.first_users(20)
        >>> small.shape, small.local_lasso(np.arange(20), 0.1, None).shape
        ((160, 6), (20, 6))
        >>> bool(np.array_equal(big.local_lasso(np.arange(20), 0.1, None),
        ...                     small.local_lasso(np.arange(20), 0.1, None)))
        True
        """
        owner = "Precomputed.first_users"
        data = self.grouped(owner)
        n_users = check_int(n_users, "n_users", owner, low=1, high=data.n)
        u = np.asarray(self.users)
        if u.dtype.kind not in "iu" or np.any(u[1:] < u[:-1]):
            raise ValueError(f"{owner}: the rows must be sorted by integer user id (nested "
                             f"samples); these are not.")
        rows = int(data.counts[:n_users].sum())
        # rows of this object's checked rows: a finite prefix needs no second scan
        child = Precomputed.__new__(Precomputed)
        child._setup(self.X[:rows], self.y[:rows], u[:rows], self.n_threads)
        child._parent = self if self._parent is None else self._parent
        return child

    @property
    def shape(self) -> tuple[int, ...]:
        return self.X.shape

    def grouped(self, owner: str, min_rows: int = 1,
                rows_per_user: Optional[int] = None) -> UserData:
        """The rows grouped by user (:class:`~fastldp.regression._rows.UserData`), cached.

        With ``rows_per_user``, each user's first ``rows_per_user`` rows
        (:func:`~fastldp.regression._rows.first_rows`).
        """
        if self._grouped is None:
            self._grouped = group_users(self.X, self.y, self.users, owner, min_rows=1)
        data = self._grouped
        if data.counts.min() < min_rows:  # the same error as a cold group_users
            group_users(self.X, self.y, self.users, owner, min_rows=min_rows)
        if rows_per_user is None:
            return data
        if rows_per_user not in self._first:
            self._first[rows_per_user] = first_rows(data, rows_per_user)
        return self._first[rows_per_user]

    def local_lasso(self, users: ArrayLike, alpha: float, screen: Optional[int],
                    owner: str = "Precomputed",
                    rows_per_user: Optional[int] = None) -> np.ndarray:
        """The screened local Lasso of ``users`` (rows of the grouped data), (len(users), d).

        With ``rows_per_user``, on each user's first ``rows_per_user`` rows.
        The result is raw: a user whose solution overflowed has non-finite
        entries (the estimators replace them by their public default).
        """
        if self._parent is not None:  # the same users, the same rows: the shared cache
            self.grouped(owner)  # this object's own checks (min_rows)
            return self._parent.local_lasso(users, alpha, screen, owner, rows_per_user)
        data = self.grouped(owner, rows_per_user=rows_per_user)
        key = (float(alpha), screen, rows_per_user)
        if key not in self._lasso:
            self._lasso[key] = (np.zeros((data.n, data.X.shape[2])), np.zeros(data.n, bool))
        B, done = self._lasso[key]
        users = np.asarray(users)
        missing = np.unique(users[~done[users]])
        if missing.shape[0]:
            B[missing] = screened_local_lasso(data.X, data.y, data.counts, alpha, users=missing,
                                              screen=screen, n_threads=self.n_threads)
            done[missing] = True
        return B[users]

    def local_least_squares(self, users: ArrayLike, support: ArrayLike,
                            owner: str = "Precomputed",
                            rows_per_user: Optional[int] = None) -> np.ndarray:
        """Each of ``users``' least squares on the columns ``support``, (len(users), s).

        With ``rows_per_user``, on each user's first ``rows_per_user`` rows.
        Raw, like :meth:`local_lasso` (non-finite where a solve overflowed).
        """
        if self._parent is not None:
            self.grouped(owner)
            return self._parent.local_least_squares(users, support, owner, rows_per_user)
        data = self.grouped(owner, rows_per_user=rows_per_user)
        S = np.asarray(support, dtype=np.intp)
        key = (tuple(int(j) for j in S), rows_per_user)
        if key not in self._ls:
            self._ls[key] = (np.zeros((data.n, S.shape[0])), np.zeros(data.n, bool))
        L, done = self._ls[key]
        users = np.asarray(users)
        missing = np.unique(users[~done[users]])
        if missing.shape[0]:
            # data.X[np.ix_(missing, rows, S)], without NumPy's slow 3-d fancy indexing
            Xs = gather_active(data.X, missing.astype(np.intp, copy=False),
                               np.tile(S, (missing.shape[0], 1)),
                               np.full(missing.shape[0], S.shape[0], dtype=np.intp))
            L[missing] = local_least_squares(Xs, data.y[missing])
            done[missing] = True
        return L[users]

    def gram(self) -> np.ndarray:
        """``X.T @ X`` of the rows (the Lasso's Gram matrix), cached.

        Sample-SDP's clipped sums fill it from the same BLAS products
        (:func:`fastldp.regression._gram.gram_and_l2_sums`), bit for bit.
        """
        if self._gram is None:
            self._gram = self.X.T @ self.X
        return self._gram

    def gram_cached(self) -> bool:
        """Whether :meth:`gram` is already computed."""
        return self._gram is not None

    def set_gram(self, gram: np.ndarray) -> None:
        """Store ``X.T @ X`` computed elsewhere (bit for bit that product)."""
        self._gram = gram

    def clipped_sums(self, x_clip: float, y_clip: float) -> tuple[np.ndarray, np.ndarray]:
        """``(Xc^T Xc, Xc^T yc)`` of the clipped rows (``Xc = clip(X, +-x_clip)``), cached."""
        key = (float(x_clip), float(y_clip))
        if key not in self._sums:
            self._sums[key] = clipped_sums(self.X, self.y, x_clip, y_clip)
        return self._sums[key]

    def clipped(self, x_clip: float, y_clip: float,
                keep: bool = True) -> tuple[np.ndarray, np.ndarray]:
        """``(clip(X, +-x_clip), clip(y, +-y_clip))``; cached when ``keep``."""
        key = (float(x_clip), float(y_clip))
        if key in self._clipped:
            return self._clipped[key]
        out = (np.clip(self.X, -x_clip, x_clip), np.clip(self.y, -y_clip, y_clip))
        if keep:
            self._clipped[key] = out
        return out
