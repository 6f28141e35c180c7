"""The estimator base: scikit-learn conventions without scikit-learn.

:class:`RegressionEstimator` gives every estimator of :mod:`fastldp.regression`
``get_params`` / ``set_params`` (read from the ``__init__`` signature, so
``sklearn.base.clone`` works when scikit-learn is installed), ``predict``,
``score`` (the coefficient of determination R^2) and the input checks (defined in
:mod:`._rows`, below the local solvers, and re-exported here).
:class:`Privacy` is the ``privacy_`` attribute of a fitted estimator.
"""

from __future__ import annotations

import inspect
import math
from dataclasses import dataclass, field
from typing import Any, Optional, TypeVar

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike
from .._validation import param_error
from ..protocol import AuditedMembers
from ..results import PrivacyStatement
from ._rows import UserData, check_Xy, first_rows, group_users, soft_threshold
from .local import Precomputed

__all__ = ["Privacy", "RegressionEstimator", "check_Xy", "group_users", "UserData",
           "soft_threshold", "first_rows", "nonfinite_rows"]

#: ``fit`` returns the estimator itself, typed as its own class (``U2R(...).fit(...)`` is a U2R)
EstimatorT = TypeVar("EstimatorT", bound="RegressionEstimator")

#: the words a :class:`~fastldp.results.PrivacyStatement` uses for each model
_MODELS = {"shuffle": "shuffle DP", "local": "local DP", "none": "not private"}
#: the longest note :meth:`Privacy.__repr__` shows whole (the repr stays one short line)
_REPR_NOTE = 40


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
    dp_event : dp_accounting.DpEvent or None
        The fit's privacy event where the estimator gives one (e.g. built
        with :meth:`skellam_event`); ``None`` lets :meth:`event` derive it
        from ``(epsilon, delta)``. Not compared, not in the repr.

    Notes
    -----
    ``str(privacy)`` is one line, as a result's ``.privacy`` prints, and
    :meth:`statement` gives the :class:`~fastldp.results.PrivacyStatement`
    that the other families' results carry, so a fitted model's guarantee
    reads like any result's.

    Examples
    --------
    >>> from fastldp.regression import Privacy
    >>> p = Privacy("user", "shuffle", 1.0, 1e-5, rows_per_user=20,
    ...             note="user-level: a user's whole local dataset")
    >>> print(p)
    epsilon=1, delta=1e-05 (shuffle DP, per user)
    >>> p.statement().model, p.statement().epsilon
    ('shuffle DP', 1.0)
    >>> print(Privacy("none", "none", float("inf"), 0.0))
    not private (epsilon=inf)
    """

    unit: str
    model: str
    epsilon: float
    delta: float
    rows_per_user: Optional[int] = None
    note: str = ""
    dp_event: Any = field(default=None, compare=False, repr=False)

    def event(self) -> Any:
        """The fit's privacy event, a ``dp_accounting`` ``DpEvent`` (:mod:`fastldp.accounting`).

        ``dp_event`` when the estimator gave one; otherwise the event of
        :meth:`statement`: binary randomized response at ``epsilon`` for a
        local (pure) fit, ``EpsilonDeltaDpEvent(epsilon, delta)`` for a
        shuffled one, ``NonPrivateDpEvent`` for a non-private one.

        Examples
        --------
        >>> from fastldp.regression import Privacy
        >>> Privacy("user", "shuffle", 1.0, 1e-5).event()
        EpsilonDeltaDpEvent(epsilon=1.0, delta=1e-05)
        """
        if self.dp_event is not None:
            return self.dp_event
        return self.statement().event()

    @staticmethod
    def skellam_event(mu: float, l2: float, l1: float, tv: float = 0.0) -> Any:
        """The event of one Skellam sum: its RDP curve, and ``tv`` for the shuffled shares.

        An :class:`~fastldp.accounting.RdpCurveEvent` holding
        :func:`~fastldp.regression.shuffle.skellam_rdp` ``(alpha, mu, l2, l1)``
        at the orders :func:`~fastldp.regression.shuffle.skellam_epsilon`
        minimizes over (integers 2 to 63, then coarser up to ``2^60``), with
        total variation ``tv`` (a plan's ``delta_shares``: the shuffled shares
        are within ``tv`` of a function of the noisy sum).

        Examples
        --------
        >>> from fastldp.regression import Privacy
        >>> e = Privacy.skellam_event(mu=1e4, l2=10.0, l1=20.0)
        >>> e.orders[0], e.rdp[0] == 2 * 10.0 ** 2 / (2 * 1e4) + min(
        ...     (3 * 10.0 ** 2 + 6 * 20.0) / (4 * 1e8), 3 * 20.0 / (2 * 1e4))
        (2.0, True)
        """
        from ..accounting import RdpCurveEvent  # the optional extra, on first use
        from .shuffle import _ALPHAS, skellam_rdp

        return RdpCurveEvent.from_curve(_ALPHAS, skellam_rdp(_ALPHAS, mu, l2, l1), tv=tv)

    def statement(self) -> PrivacyStatement:
        """The guarantee as a :class:`~fastldp.results.PrivacyStatement` (what ``.privacy`` is).

        ``model`` in the statement's words (``"shuffle DP"``, ``"local DP"``,
        ``"not private"``), the same ``unit``, ``epsilon`` and ``delta``.
        """
        return PrivacyStatement(_MODELS.get(self.model, self.model), self.unit,
                                epsilon=float(self.epsilon), delta=float(self.delta),
                                dp_event=self.dp_event)

    def budget(self) -> str:
        """The budget in a few words, as :meth:`PrivacyStatement.budget` writes it."""
        return self.statement().budget()

    def __str__(self) -> str:
        if self.model == "none":  # "per none" would read oddly: the model guarantees nothing
            return f"not private ({self.budget()})"
        return str(self.statement())

    def __repr__(self) -> str:
        note = self.note if len(self.note) <= _REPR_NOTE else self.note[:_REPR_NOTE - 3] + "..."
        rows = "" if self.rows_per_user is None else f", rows_per_user={self.rows_per_user}"
        return (f"Privacy(unit={self.unit!r}, model={self.model!r}, epsilon={self.epsilon!r}, "
                f"delta={self.delta!r}{rows}, note={note!r})")


def nonfinite_rows(values: ArrayLike) -> np.ndarray:
    """Mask of the rows of a 2-d array with a NaN or an infinite entry."""
    v = np.asarray(values)
    return ~np.isfinite(v).all(axis=1)


def row_bookkeeping(counts: np.ndarray, rows_per_user: int) -> dict[str, int]:
    """The ``sanitized_`` counts of U2R and TwoStageSLR before any stage has run.

    ``counts`` holds every user's number of rows: ``"subsampled"`` users had
    more than ``rows_per_user`` rows (cut to their first), ``"short"`` fewer;
    ``"nonfinite"`` and ``"short_default"`` start at zero.
    """
    return {"nonfinite": 0, "subsampled": int((counts > rows_per_user).sum()),
            "short": int((counts < rows_per_user).sum()), "short_default": 0}


def candidate_index(B: np.ndarray, rho: float,
                    rng: np.random.Generator) -> tuple[np.ndarray, int]:
    """Stage 1 of U2R and TwoStageSLR: one uniform index per user among its candidates.

    A user's candidates are the coordinates of its local Lasso row with
    ``|B_j| > rho / 2``, or all ``d`` when there is none. A row that is not
    finite is set to the public default, zero (in place): no candidate, so
    its index is uniform over ``[d]``.

    Returns
    -------
    index : int64 array, shape (n,)
    n_nonfinite : int
        Rows replaced by the default.
    """
    bad = nonfinite_rows(B)
    B[bad] = 0.0
    cand = np.abs(B) > rho / 2
    cand[~cand.any(axis=1)] = True
    scores = rng.random(cand.shape)
    scores[~cand] = -1.0
    return np.argmax(scores, axis=1), int(bad.sum())


class RegressionEstimator(AuditedMembers):
    """Base of the estimators: parameters, prediction, R^2 score.

    A subclass takes keyword-only constructor parameters (stored as given:
    ``get_params`` reads them back) and defines :meth:`fit`, which sets the
    fitted attributes below through ``_set_fitted`` and returns ``self``.

    Attributes
    ----------
    coef_ : ndarray of shape (d,)
    intercept_ : float
    support_ : ndarray of int
        The indices of the nonzero coefficients.
    privacy_ : Privacy
        The guarantee of the fit (``str(privacy_)`` is one line;
        ``privacy_.statement()`` the shared :class:`~fastldp.results.PrivacyStatement`).
    n_features_in_ : int

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.regression import Lasso
    >>> model = Lasso(alpha=0.01)
    >>> model.get_params()["alpha"]
    0.01
    >>> model.set_params(alpha=0.05)
    Lasso(alpha=0.05, sigma=1.0, fit_intercept=True, max_iter=1000, tol=1e-10)
    >>> X = np.random.default_rng(0).normal(size=(200, 3))
    >>> y = X @ np.array([1.0, 0.0, -2.0])
    >>> round(model.fit(X, y).score(X, y), 3)
    0.999
    """

    coef_: np.ndarray
    intercept_: float
    support_: np.ndarray
    privacy_: Privacy
    n_features_in_: int

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)


    @classmethod
    def _param_names(cls) -> list[str]:
        sig = inspect.signature(cls.__init__)
        return [p.name for p in sig.parameters.values()
                if p.name != "self" and p.kind == p.KEYWORD_ONLY]

    def get_params(self, deep: bool = True) -> dict[str, Any]:
        """The constructor parameters, by name (scikit-learn convention)."""
        return {name: getattr(self, name) for name in self._param_names()}

    def set_params(self: EstimatorT, **params: Any) -> EstimatorT:
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

    def fit(self: EstimatorT, X: ArrayLike, y: ArrayLike, *, users: Optional[ArrayLike] = None,
            rng: RngLike = None) -> EstimatorT:
        """Fit on rows ``X``, ``y`` (each estimator documents its own); returns ``self``."""
        raise NotImplementedError(f"{type(self).__name__} does not define fit")

    def _check_fitted(self) -> None:
        if not hasattr(self, "coef_"):
            raise AttributeError(f"This {type(self).__name__} is not fitted yet; call fit first.")

    def predict(self, X: ArrayLike) -> np.ndarray:
        """Predictions ``X @ coef_ + intercept_``."""
        self._check_fitted()
        X = np.asarray(X, dtype=np.float64)
        if X.ndim != 2 or X.shape[1] != self.coef_.shape[0]:
            raise param_error("X", f"{type(self).__name__}.predict",
                              f"a 2-d array with {self.coef_.shape[0]} columns",
                              f"array of shape {X.shape}")
        return X @ self.coef_ + self.intercept_

    def score(self, X: ArrayLike, y: ArrayLike) -> float:
        """The coefficient of determination R^2 of ``predict(X)`` against ``y``."""
        y = np.asarray(y, dtype=np.float64)
        resid = y - self.predict(X)
        total = float(np.sum((y - y.mean()) ** 2))
        return 1.0 - float(resid @ resid) / total if total > 0 else math.nan

    def precompute(self, X: ArrayLike, y: ArrayLike, *,
                   users: Optional[ArrayLike] = None) -> Precomputed:
        """The eps-independent statistics of ``X``, ``y`` for :meth:`fit_precomputed`.

        Returns a :class:`~fastldp.regression.local.Precomputed`, filled
        lazily by the fits that use it and shareable between estimators and
        privacy budgets (one data set, many fits: the eps sweeps).
        """
        return Precomputed(X, y, users, owner=type(self).__name__)

    def fit_precomputed(self: EstimatorT, pre: Precomputed, *,
                        rng: RngLike = None) -> EstimatorT:
        """Fit on the data of ``pre`` (see :meth:`precompute`); the same result as :meth:`fit`."""
        return self.fit(pre.X, pre.y, users=pre.users, rng=rng)

    def _set_fitted(self: EstimatorT, coef: ArrayLike, intercept: float,
                    privacy: Privacy) -> EstimatorT:
        self.coef_ = np.asarray(coef, dtype=np.float64)
        self.intercept_ = float(intercept)
        self.support_ = np.flatnonzero(self.coef_)
        self.privacy_ = privacy
        self.n_features_in_ = self.coef_.shape[0]
        return self
