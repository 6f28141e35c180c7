"""Rows grouped by user and the input checks, below the estimators and the local solvers.

:class:`UserData` holds each user's rows; :func:`group_users` builds it from
``fit``'s rows and user ids, :func:`first_rows` cuts it to the first
``rows_per_user`` rows of each user. :func:`check_Xy` is every estimator's
input check and :func:`soft_threshold` the proximal map of the l1 norm. The
estimator base (:mod:`._base`, which re-exports these names) and the local
solvers (:mod:`.local`) both use them; neither imports the other for them.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike

from .._validation import param_error

__all__ = ["UserData", "check_Xy", "first_rows", "group_users", "soft_threshold"]


def soft_threshold(values: ArrayLike, level: Any) -> np.ndarray:
    """``sign(v) * max(|v| - level, 0)``, the proximal map of ``level * ||.||_1``."""
    v = np.asarray(values, dtype=np.float64)
    return np.sign(v) * np.maximum(np.abs(v) - level, 0.0)


def check_Xy(X: ArrayLike, y: ArrayLike, owner: str) -> tuple[np.ndarray, np.ndarray]:
    """Return ``(X, y)`` as float64 arrays of shapes ``(N, d)`` and ``(N,)`` or raise."""
    X = np.asarray(X)
    y = np.asarray(y)
    if X.dtype.kind not in "fiub" or X.ndim != 2:
        raise param_error("X", owner, "a 2-d array of numbers (rows x features)",
                          f"array of shape {X.shape} and dtype {X.dtype}", TypeError
                          if X.dtype.kind not in "fiub" else ValueError)
    if y.dtype.kind not in "fiub" or y.ndim != 1:
        raise param_error("y", owner, "a 1-d array of numbers", f"array of shape {y.shape}",
                          TypeError if y.dtype.kind not in "fiub" else ValueError)
    if X.shape[0] != y.shape[0]:
        raise param_error("y", owner, f"an array of length {X.shape[0]} (the rows of X)",
                          f"length {y.shape[0]}")
    if X.shape[0] == 0 or X.shape[1] == 0:
        raise param_error("X", owner, "a non-empty array", f"array of shape {X.shape}")
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    # a finite sum proves every entry finite (a NaN or inf propagates); only then is it cheap
    # (a sum of huge finite entries may overflow: then the entries are checked one by one)
    with np.errstate(over="ignore", invalid="ignore"):
        total = float(np.sum(X))
    if not math.isfinite(total) and not np.isfinite(X).all():
        raise param_error("X", owner, "finite (no NaN or inf)", "an array with NaN or inf")
    if not np.isfinite(y).all():
        raise param_error("y", owner, "finite (no NaN or inf)", "an array with NaN or inf")
    return X, y


@dataclass(frozen=True)
class UserData:
    """Rows grouped by user: ``X[u, :counts[u]]`` are user ``u``'s rows (zero padded).

    Zero rows add nothing to ``X^T X`` or ``X^T y``, so local statistics
    divided by ``counts`` are exact for users with fewer rows.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.regression._rows import group_users
    >>> X, y = np.arange(10.0).reshape(5, 2), np.arange(5.0)
    >>> data = group_users(X, y, ["b", "a", "b", "a", "a"], "example")
    >>> data.n, data.X.shape, data.counts.tolist(), data.ids.tolist()
    (2, (2, 3, 2), [3, 2], ['a', 'b'])
    >>> data.y  # user 'b' has two rows and a zero row
    array([[1., 3., 4.],
           [0., 2., 0.]])
    """

    X: np.ndarray        # (n, m_max, d)
    y: np.ndarray        # (n, m_max)
    counts: np.ndarray   # (n,)
    ids: np.ndarray      # (n,) the user ids, sorted

    @property
    def n(self) -> int:
        return int(self.counts.shape[0])


def group_users(X: np.ndarray, y: np.ndarray, users: Optional[ArrayLike], owner: str, *,
                min_rows: int = 1) -> UserData:
    """Group the rows of ``X`` and ``y`` by ``users`` (each row's user id).

    Rows already sorted by user with equal counts are reshaped without a copy.
    Raises ValueError when ``users`` is missing or a user has fewer than ``min_rows`` rows.
    """
    if users is None:
        raise param_error("users", owner, "an array of each row's user id (user-level privacy)",
                          None, TypeError)
    u = np.asarray(users)
    if u.ndim != 1 or u.shape[0] != X.shape[0]:
        raise param_error("users", owner, f"a 1-d array of length {X.shape[0]}",
                          f"array of shape {u.shape}")
    if u.dtype.kind not in "iuU" and u.dtype.kind != "O":
        raise param_error("users", owner, "integer or string user ids", f"dtype {u.dtype}",
                          TypeError)
    if u.dtype.kind in "iu" and u.shape[0] and np.all(u[1:] >= u[:-1]):
        starts = np.flatnonzero(np.r_[True, u[1:] != u[:-1]])
        counts = np.diff(np.r_[starts, u.shape[0]])
        ids = u[starts]
        if counts.min() < min_rows:
            _too_few(owner, ids, counts, min_rows)
        if np.all(counts == counts[0]):
            n, m = counts.shape[0], int(counts[0])
            return UserData(X.reshape(n, m, X.shape[1]), y.reshape(n, m), counts, ids)
        order = np.arange(u.shape[0])
    else:
        order = np.argsort(u, kind="stable")
        ids, counts = np.unique(u, return_counts=True)
        if counts.min() < min_rows:
            _too_few(owner, ids, counts, min_rows)
    n, m = counts.shape[0], int(counts.max())
    starts = np.r_[0, np.cumsum(counts)[:-1]]
    pos = np.arange(u.shape[0]) - np.repeat(starts, counts)
    who = np.repeat(np.arange(n), counts)
    Xu = np.zeros((n, m, X.shape[1]))
    yu = np.zeros((n, m))
    Xu[who, pos] = X[order]
    yu[who, pos] = y[order]
    return UserData(Xu, yu, counts, ids)


def first_rows(data: UserData, rows_per_user: int) -> UserData:
    """Each user's first ``rows_per_user`` rows (in the order given to ``fit``), width ``rows_per_user``.

    A user with more rows is cut to its first ``rows_per_user`` (a function
    of its own data only, the same in every fit, so the local solutions can
    be cached); a user with fewer keeps all of its rows. The array always has
    ``rows_per_user`` (zero-padded) rows per user, so the shapes of the local
    computations are public, never set by the longest user.
    """
    width = data.X.shape[1]
    if width == rows_per_user:
        return UserData(data.X, data.y, data.counts, data.ids)
    if width > rows_per_user:
        return UserData(data.X[:, :rows_per_user], data.y[:, :rows_per_user],
                        np.minimum(data.counts, rows_per_user), data.ids)
    n, d = data.n, data.X.shape[2]
    X = np.zeros((n, rows_per_user, d))
    y = np.zeros((n, rows_per_user))
    X[:, :width] = data.X
    y[:, :width] = data.y
    return UserData(X, y, data.counts, data.ids)


def _too_few(owner, ids, counts, min_rows):
    i = int(np.argmin(counts))
    raise ValueError(f"{owner}: user {ids[i]!r} has {int(counts[i])} rows; every user needs at "
                     f"least {min_rows} rows (the m samples of user-level privacy).")
