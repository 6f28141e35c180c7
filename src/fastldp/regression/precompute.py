"""Eps-independent work on one data set, computed once and shared by many fits.

A sweep over the privacy budget refits every method on the same data at each
``eps``; much of a fit does not depend on ``eps``: the users' local Lassos
and local least-squares solutions (U2R, 2-SLR), the clipped sufficient
statistics ``sum x x^T``, ``sum x y`` (Sample-SDP), the clipped covariates
(LDP-IHT). :class:`Precomputed` holds them, computed lazily the first time a
fit asks and reused after::

    pre = U2R(epsilon=1, k=8).precompute(X, y, users=users)
    for eps in (0.5, 1, 2, 4):
        U2R(epsilon=eps, k=8).fit_precomputed(pre, rng=seed)

Every cached quantity is per user (or a sum over all rows) and is computed
by the same code as in a cold :meth:`fit`, whose result does not depend on
which other users are solved in the same batch, so ``fit_precomputed`` gives
bit for bit what ``fit`` gives on the same data and ``rng`` (``fit`` itself
is ``fit_precomputed(precompute(...))``). The tests check this.
"""

from __future__ import annotations

import numpy as np

from ._base import check_Xy, group_users
from .local import local_least_squares, screened_local_lasso

__all__ = ["Precomputed", "clipped_sums"]


def clipped_sums(X, y, x_clip: float, y_clip: float, rows: int = 8192):
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

    Parameters
    ----------
    X : array_like (N, d)
    y : array_like (N,)
    users : array_like (N,), optional
        Each row's user id (needed by the user-level methods).
    owner : str
        Name used in error messages.
    """

    def __init__(self, X, y, users=None, owner: str = "Precomputed"):
        self.X, self.y = check_Xy(X, y, owner)
        self.users = users
        self._grouped = None
        self._lasso: dict = {}
        self._ls: dict = {}
        self._sums: dict = {}
        self._clipped: dict = {}

    @property
    def shape(self):
        return self.X.shape

    def grouped(self, owner: str, min_rows: int = 1):
        """The rows grouped by user (:class:`~fastldp.regression._base.UserData`), cached."""
        if self._grouped is None:
            self._grouped = group_users(self.X, self.y, self.users, owner, min_rows=1)
        data = self._grouped
        if data.counts.min() < min_rows:  # the same error as a cold group_users
            group_users(self.X, self.y, self.users, owner, min_rows=min_rows)
        return data

    def local_lasso(self, users, alpha: float, screen, owner: str = "Precomputed") -> np.ndarray:
        """The screened local Lasso of ``users`` (rows of the grouped data), (len(users), d)."""
        data = self.grouped(owner)
        key = (float(alpha), screen)
        if key not in self._lasso:
            self._lasso[key] = (np.zeros((data.n, data.X.shape[2])), np.zeros(data.n, bool))
        B, done = self._lasso[key]
        users = np.asarray(users)
        missing = np.unique(users[~done[users]])
        if missing.shape[0]:
            B[missing] = screened_local_lasso(data.X, data.y, data.counts, alpha, users=missing,
                                              screen=screen)
            done[missing] = True
        return B[users]

    def local_least_squares(self, users, support, owner: str = "Precomputed") -> np.ndarray:
        """Each of ``users``' least squares on the columns ``support``, (len(users), s)."""
        data = self.grouped(owner)
        S = np.asarray(support, dtype=np.intp)
        key = tuple(int(j) for j in S)
        if key not in self._ls:
            self._ls[key] = (np.zeros((data.n, S.shape[0])), np.zeros(data.n, bool))
        L, done = self._ls[key]
        users = np.asarray(users)
        missing = np.unique(users[~done[users]])
        if missing.shape[0]:
            Xs = data.X[np.ix_(missing, np.arange(data.X.shape[1]), S)]
            L[missing] = local_least_squares(Xs, data.y[missing])
            done[missing] = True
        return L[users]

    def clipped_sums(self, x_clip: float, y_clip: float):
        """``(Xc^T Xc, Xc^T yc)`` of the clipped rows (``Xc = clip(X, +-x_clip)``), cached."""
        key = (float(x_clip), float(y_clip))
        if key not in self._sums:
            self._sums[key] = clipped_sums(self.X, self.y, x_clip, y_clip)
        return self._sums[key]

    def clipped(self, x_clip: float, y_clip: float, keep: bool = True):
        """``(clip(X, +-x_clip), clip(y, +-y_clip))``; cached when ``keep``."""
        key = (float(x_clip), float(y_clip))
        if key in self._clipped:
            return self._clipped[key]
        out = (np.clip(self.X, -x_clip, x_clip), np.clip(self.y, -y_clip, y_clip))
        if keep:
            self._clipped[key] = out
        return out
