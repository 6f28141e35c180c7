"""The estimator base: scikit-learn conventions without scikit-learn.

:class:`RegressionEstimator` gives every estimator of :mod:`fastldp.regression`
``get_params`` / ``set_params`` (read from the ``__init__`` signature, so
``sklearn.base.clone`` works when scikit-learn is installed), ``predict``,
``score`` (the coefficient of determination R^2) and the input checks.
:class:`Privacy` is the ``privacy_`` attribute of a fitted estimator.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass

import numpy as np

from .._validation import param_error

__all__ = ["Privacy", "RegressionEstimator", "check_Xy", "group_users", "UserData",
           "soft_threshold", "first_rows", "nonfinite_rows"]


@dataclass(frozen=True)
class Privacy:
    """The guarantee of a fitted estimator.

    Attributes
    ----------
    unit : str
        ``"user"`` (a user's whole local dataset), ``"sample"`` (one row) or ``"none"``.
    model : str
        ``"shuffle"``, ``"local"`` or ``"none"`` (non-private).
    epsilon, delta : float
        ``inf`` and ``0`` for a non-private estimator.
    rows_per_user : int or None
        User-level estimators: the public number of rows of a user's local
        dataset (a user with more rows contributes its first
        ``rows_per_user``); ``None`` otherwise.
    note : str
        The unit and the neighbour relation in words, e.g. "user-level: ...".
    """

    unit: str
    model: str
    epsilon: float
    delta: float
    rows_per_user: int | None = None
    note: str = ""


def soft_threshold(values, level):
    """``sign(v) * max(|v| - level, 0)``, the proximal map of ``level * ||.||_1``."""
    v = np.asarray(values, dtype=np.float64)
    return np.sign(v) * np.maximum(np.abs(v) - level, 0.0)


def check_Xy(X, y, owner: str):
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
    """

    X: np.ndarray        # (n, m_max, d)
    y: np.ndarray        # (n, m_max)
    counts: np.ndarray   # (n,)
    ids: np.ndarray      # (n,) the user ids, sorted

    @property
    def n(self) -> int:
        return int(self.counts.shape[0])


def group_users(X, y, users, owner: str, *, min_rows: int = 1) -> UserData:
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


def nonfinite_rows(values) -> np.ndarray:
    """Mask of the rows of a 2-d array with a NaN or an infinite entry."""
    v = np.asarray(values)
    return ~np.isfinite(v).all(axis=1)


def _too_few(owner, ids, counts, min_rows):
    i = int(np.argmin(counts))
    raise ValueError(f"{owner}: user {ids[i]!r} has {int(counts[i])} rows; every user needs at "
                     f"least {min_rows} rows (the m samples of user-level privacy).")


class RegressionEstimator:
    """Base of the estimators: parameters, prediction, R^2 score."""

    def __init_subclass__(cls, **kwargs):
        super().__init_subclass__(**kwargs)

    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind == p.KEYWORD_ONLY]

    def get_params(self, deep: bool = True) -> dict:
        """The constructor parameters, by name (scikit-learn convention)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self, **params):
        """Set constructor parameters; unknown names raise ValueError. Returns ``self``."""
        valid = self._param_names()
        for name, value in params.items():
            if name not in valid:
                raise ValueError(f"Invalid parameter {name!r} for {type(self).__name__}; "
                                 f"the parameters are {valid}.")
            setattr(self, name, value)
        return self

    def __repr__(self) -> str:
        args = ", ".join(f"{k}={v!r}" for k, v in self.get_params().items())
        return f"{type(self).__name__}({args})"

    def _check_fitted(self):
        if not hasattr(self, "coef_"):
            raise AttributeError(f"This {type(self).__name__} is not fitted yet; call fit first.")

    def predict(self, X) -> np.ndarray:
        """Predictions ``X @ coef_ + intercept_``."""
        self._check_fitted()
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.coef_.shape[0]:
            raise param_error("X", f"{type(self).__name__}.predict",
                              f"a 2-d array with {self.coef_.shape[0]} columns",
                              f"array of shape {X.shape}")
        return X @ self.coef_ + self.intercept_

    def score(self, X, y) -> float:
        """The coefficient of determination R^2 of ``predict(X)`` against ``y``."""
        y = np.asarray(y, dtype=np.float64)
        resid = y - self.predict(X)
        total = float(np.sum((y - y.mean()) ** 2))
        return 1.0 - float(resid @ resid) / total if total > 0 else math.nan

    def precompute(self, X, y, *, users=None):
        """The eps-independent statistics of ``X``, ``y`` for :meth:`fit_precomputed`.

        Returns a :class:`~fastldp.regression.local.Precomputed`, filled
        lazily by the fits that use it and shareable between estimators and
        privacy budgets (one data set, many fits: the eps sweeps).
        """
        from .local import Precomputed

        return Precomputed(X, y, users, owner=type(self).__name__)

    def fit_precomputed(self, pre, *, rng=None):
        """Fit on the data of ``pre`` (see :meth:`precompute`); the same result as :meth:`fit`."""
        return self.fit(pre.X, pre.y, users=pre.users, rng=rng)

    def _set_fitted(self, coef, intercept, privacy: Privacy):
        self.coef_ = np.asarray(coef, dtype=np.float64)
        self.intercept_ = float(intercept)
        self.support_ = np.flatnonzero(self.coef_)
        self.privacy_ = privacy
        self.n_features_in_ = self.coef_.shape[0]
        return self
