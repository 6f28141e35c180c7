"""The result base shared by every family: one name for the estimate, its variance, its privacy.

Every object an ``estimate`` (or ``release``) returns derives from
:class:`Result`, so that a user who has read one result has read them all:

=====================  ========================================================
attribute              meaning
=====================  ========================================================
``.estimate``          the main array; the family's own name for it (``.counts``,
                       ``.mean``, ``.matrix``) stays, as the same object
``.variances``         the plug-in variance of every entry of ``.estimate``,
                       computed from the reports (never from the true data);
                       ``None`` where the family defines no variance
``.std``               ``sqrt(variances)``; ``None`` where ``.variances`` is
``.n``                 the number of reports (groups, for a central release)
``.sanitization``      a :class:`~fastldp._sanitize.SanitizationReport`, or
                       ``None`` where nothing is received from users
``.privacy``           a :class:`PrivacyStatement`: what was guaranteed
``.categories``        the labels of the entries (1-d estimates), or ``None``
``.to_frame()``        a pandas DataFrame, one row per entry (long format for
                       a matrix), with ``std`` where defined
``repr(result)``       one line of at most :data:`REPR_WIDTH` characters,
                       whatever the size of the estimate
=====================  ========================================================

Where a member is undefined it is ``None``, never an ``AttributeError``: so
``result.std is None`` is the one test for "no variance here", in every
family.

Writing a result class
----------------------
A result is a frozen dataclass that also derives from :class:`Result`. It
names its main field in ``_estimate_field`` and has the fields (or
properties) ``n`` and ``privacy``; ``variances``, ``sanitization`` and
``categories`` are optional (absent means ``None``). The mixin defines no
class attribute under those names, so a dataclass may declare any of them as
plain fields, with or without defaults::

    @dataclass(frozen=True, repr=False)
    class MeanEstimate(Result):
        _estimate_field = "mean"
        mean: np.ndarray
        variances: np.ndarray
        n: int
        privacy: PrivacyStatement

Pass ``repr=False`` to the dataclass decorator so that the short
:meth:`Result.__repr__` is kept (a dataclass writes its own repr otherwise,
printing whole arrays). A family may add columns to :meth:`Result.to_frame`
through ``_frame_columns`` and words to the repr through ``_repr_kind``.

Examples
--------
>>> import numpy as np
>>> from dataclasses import dataclass
>>> from fastldp.results import PrivacyStatement, Result
>>> @dataclass(frozen=True, repr=False)
... class Toy(Result):
...     _estimate_field = "mean"
...     mean: np.ndarray
...     variances: np.ndarray
...     n: int
...     privacy: PrivacyStatement
>>> r = Toy(np.array([0.5, 1.5]), np.array([4.0, 9.0]), 10,
...         PrivacyStatement.local(epsilon=1.0))
>>> r.estimate is r.mean
True
>>> r.std
array([2., 3.])
>>> r
Toy(shape (2,), n=10, epsilon=1 (local DP, per report): [0]=0.5, [1]=1.5)
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any, Optional

import numpy as np

from ._kernels._exact import median as exact_median

__all__ = ["Result", "PrivacyStatement", "REPR_WIDTH"]

#: The most characters ``repr`` of a result takes (one line).
REPR_WIDTH = 200

_REPR_ENTRIES = 4  # entries shown by the repr, before the width cap
_LABEL_WIDTH = 16  # a longer label is cut in the repr (to_frame keeps it whole)

#: members that are ``None`` where a family does not define them
_OPTIONAL = frozenset({"variances", "sanitization", "categories"})


def _num(x: float) -> str:
    """A short, readable number: 4 significant digits, no trailing noise."""
    x = float(x)
    if math.isfinite(x) and x == int(x) and abs(x) < 1e15:  # inf and nan print as themselves
        return str(int(x))
    return f"{x:.4g}"


@dataclass(frozen=True)
class PrivacyStatement:
    """What a result guarantees: the model, the unit protected, and the budget.

    Parameters
    ----------
    model : str
        ``"local DP"``, ``"shuffle DP"``, ``"zCDP"`` (central, zero-concentrated)...
    unit : str
        What one budget protects: ``"report"`` (one user's report),
        ``"user"``, ``"group"``...
    epsilon : float or None
        The budget every report had; ``None`` with personal budgets that
        differ (see the summary) or where the guarantee is not an
        ``epsilon`` (zCDP).
    epsilon_min, epsilon_median, epsilon_max : float or None
        Summary of personal budgets (``None`` when every report had
        ``epsilon``).
    personal : bool
        True when the reports had personal budgets that differ. Their
        summary is given when the decode saw the budgets
        (``estimate``); a result finalized from partials knows only that
        they differed (partials keep exact sums, not the budgets).
    delta : float or None
        ``delta`` of an approximate guarantee; ``0.0`` for pure DP, ``None``
        where it does not apply (zCDP).
    rho : float or None
        The zCDP budget (central histograms), else ``None``.
    dp_event : dp_accounting.DpEvent or None
        The release's privacy event where the family knows one tighter than
        the budget implies (an RDP curve, k-ary randomized response);
        ``None`` lets :meth:`event` derive it from the budget. Not compared.

    Examples
    --------
    >>> import numpy as np
    >>> PrivacyStatement.local(epsilons=np.array([0.5, 1.0, 2.0])).budget()
    'epsilon in [0.5, 2], median 1'
    >>> PrivacyStatement.zcdp(rho=0.125).budget()
    'rho=0.125'
    """

    model: str
    unit: str
    epsilon: Optional[float] = None
    epsilon_min: Optional[float] = None
    epsilon_median: Optional[float] = None
    epsilon_max: Optional[float] = None
    personal: bool = False
    delta: Optional[float] = 0.0
    rho: Optional[float] = None
    dp_event: Any = field(default=None, compare=False, repr=False)

    @classmethod
    def local(cls, *, epsilon: Optional[float] = None, epsilons: Any = None,
              unit: str = "report", model: str = "local DP",
              delta: float = 0.0) -> "PrivacyStatement":
        """The statement of reports privatized at ``epsilon`` or at personal ``epsilons``.

        Personal budgets that are all equal give a plain ``epsilon``; others
        give their min / median / max (the median by a compiled radix select,
        :func:`fastldp._kernels._exact.median`, equal to :func:`numpy.median`
        in about a fifth of its time at 10^5 budgets; numpy's was the largest
        step of a personalized JPRS decode outside its kernel). With neither (no reports and no
        budget of the mechanism's own), every budget field is ``None``.
        """
        if epsilons is not None:
            eps = np.asarray(epsilons, dtype=np.float64).ravel()
            if eps.size:
                lo, hi = float(eps.min()), float(eps.max())
                if lo == hi:
                    return cls(model, unit, epsilon=lo, delta=delta)
                return cls(model, unit, epsilon=None, epsilon_min=lo,
                           epsilon_median=exact_median(eps), epsilon_max=hi,
                           personal=True, delta=delta)
        return cls(model, unit, epsilon=None if epsilon is None else float(epsilon), delta=delta)

    @classmethod
    def from_dict(cls, fields: Any) -> "PrivacyStatement":
        """The statement a result file holds (``dataclasses.asdict`` of one, read from JSON).

        The statement's class is found by its fields, not its name: a
        subclass a family defines (``LongitudinalPrivacy``, with
        ``epsilon_inf``) is rebuilt when the dict has exactly its fields.
        ``dp_event`` is not kept (a file holds its text only); :meth:`event`
        then derives the event from the budget, which bounds the family's
        own (pure ``epsilon`` by binary randomized response dominates every
        ``epsilon``-DP mechanism).

        Raises
        ------
        ValueError
            When ``fields`` is not a dict of a statement's fields.

        Examples
        --------
        >>> import dataclasses
        >>> s = PrivacyStatement.local(epsilon=1.5)
        >>> PrivacyStatement.from_dict(dataclasses.asdict(s)) == s
        True
        """
        import dataclasses

        if not isinstance(fields, dict):
            raise ValueError(f"PrivacyStatement.from_dict reads a dict of a statement's fields; "
                             f"got {type(fields).__name__}.")
        given = {k: v for k, v in fields.items() if k != "dp_event"}

        def names(kind: type) -> set:
            return {f.name for f in dataclasses.fields(kind) if f.name != "dp_event"}

        kinds = [cls, *_subclasses(cls)]
        kind = next((k for k in kinds if names(k) == set(given)), None)
        if kind is None:
            missing = {"model", "unit"} - set(given)
            unknown = set(given) - set().union(*(names(k) for k in kinds))
            if missing or unknown:
                raise ValueError(
                    "PrivacyStatement.from_dict: the dict is not a privacy statement "
                    f"(missing {sorted(missing)}, unknown {sorted(unknown)}).")
            kind = cls  # a statement written by an older version: the fields it has
        return kind(**given)

    @classmethod
    def zcdp(cls, *, rho: float, unit: str = "person") -> "PrivacyStatement":
        """The statement of a central release with zCDP budget ``rho`` per ``unit``."""
        return cls("zCDP", unit, epsilon=None, delta=None, rho=float(rho))

    def event(self) -> Any:
        """The privacy event of the release: a ``dp_accounting`` ``DpEvent``.

        ``dp_event`` when the family gave one; otherwise, from the budget:
        pure ``epsilon`` gives binary randomized response at ``epsilon``
        (which dominates every epsilon-DP mechanism), ``(epsilon, delta)``
        an ``EpsilonDeltaDpEvent``, ``rho`` a ``ZCDpEvent``, "not private"
        (or ``epsilon = inf``) a ``NonPrivateDpEvent``; personal budgets the
        event of the largest (the guarantee every report has). Needs the
        ``accounting`` extra; see :mod:`fastldp.accounting`, whose
        ``Accountant`` composes events.

        Raises
        ------
        ValueError
            When the statement has no budget to derive an event from.

        Examples
        --------
        >>> from fastldp.results import PrivacyStatement
        >>> PrivacyStatement.zcdp(rho=0.125).event()
        ZCDpEvent(rho=0.125, xi=0.0)
        """
        from .accounting.events import statement_event  # the optional extra, on first use

        return statement_event(self)

    def budget(self) -> str:
        """The budget in a few words (what the result's repr shows)."""
        if self.rho is not None:
            text = f"rho={_num(self.rho)}"
        elif (self.personal and self.epsilon_min is not None and self.epsilon_max is not None
              and self.epsilon_median is not None):
            text = (f"epsilon in [{_num(self.epsilon_min)}, {_num(self.epsilon_max)}], "
                    f"median {_num(self.epsilon_median)}")
        elif self.personal:
            text = "personal epsilons"
        elif self.epsilon is not None:
            text = f"epsilon={_num(self.epsilon)}"
        else:
            text = "epsilon=None"
        if self.delta:
            text += f", delta={_num(self.delta)}"
        return text

    def __str__(self) -> str:
        return f"{self.budget()} ({self.model}, per {self.unit})"


def _subclasses(kind: type) -> list:
    """Every subclass of ``kind``, depth first (the statements the families define)."""
    out = []
    for sub in kind.__subclasses__():
        out += [sub, *_subclasses(sub)]
    return out


class Result:
    """Base of every result object (a mixin for frozen dataclasses).

    See the module docstring for the members and for how a family writes
    its result class. Subclasses set ``_estimate_field`` to the name of the
    field that holds the main array.

    Examples
    --------
    >>> from fastldp import GRR
    >>> grr = GRR(domain_size=3, epsilon=2.0, codebook_seed=0)
    >>> est = grr.estimate(grr.privatize([0, 1, 1, 2], rng=0))
    >>> est.estimate is est.counts
    True
    >>> len(repr(est)) <= 200
    True
    """

    #: the name of the field that holds the main array
    _estimate_field: str = ""

    def __getattr__(self, name: str) -> Any:
        # Only reached when normal lookup fails: the optional members a
        # family does not define read as None (module docstring).
        if name in _OPTIONAL:
            return None
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def estimate(self) -> np.ndarray:
        """The main array of the result (the same object as the family's name for it)."""
        field = type(self)._estimate_field
        if not field:  # pragma: no cover - a result class without its field is a bug
            raise TypeError(f"{type(self).__name__} does not name its estimate field")
        main: np.ndarray = getattr(self, field)
        return main

    @property
    def std(self) -> Optional[np.ndarray]:
        """``sqrt(variances)``, or ``None`` where no variance is defined."""
        variances = self.variances
        if variances is None:
            return None
        std: np.ndarray = np.sqrt(variances)
        return std

    # ------------------------------------------------------------ hooks
    def _frame_columns(self) -> dict[str, Any]:
        """Extra columns of :meth:`to_frame`, each an array of the estimate's shape."""
        return {}

    def _repr_kind(self) -> str:
        """The name the repr starts with."""
        return type(self).__name__

    # ------------------------------------------------------------ to_frame
    def to_frame(self) -> Any:
        """The estimate as a pandas DataFrame, one row per entry.

        Columns: the position (``category`` when the result is labelled,
        ``index`` for a vector, ``row`` and ``col`` for a matrix, ``dim0``,
        ``dim1``... beyond), ``estimate``, ``std`` where a variance is
        defined, and any column the family adds (the oracles add
        ``frequency``). A matrix is in long format, row-major.

        Returns
        -------
        pandas.DataFrame
            (typed ``Any``: pandas is an optional dependency)

        Raises
        ------
        ImportError
            When pandas is not installed (``pip install pandas``).
        """
        try:
            import pandas as pd
        except ImportError:
            raise ImportError(
                f"{type(self).__name__}.to_frame needs pandas, an optional dependency: "
                "pip install pandas") from None
        est = np.asarray(self.estimate)
        columns: dict[str, Any] = {}
        categories = self.categories
        if est.ndim == 0:
            pass
        elif est.ndim == 1 and categories is not None:
            columns["category"] = pd.Index(list(categories), dtype=object)
        elif est.ndim == 1:
            columns["index"] = np.arange(est.shape[0])
        else:
            names = ("row", "col") if est.ndim == 2 else tuple(f"dim{k}" for k in range(est.ndim))
            grids = np.unravel_index(np.arange(est.size), est.shape)
            columns.update(zip(names, grids))
        columns["estimate"] = est.ravel()
        std = self.std
        if std is not None:
            columns["std"] = np.broadcast_to(np.asarray(std, dtype=np.float64), est.shape).ravel()
        for name, values in self._frame_columns().items():
            columns[name] = np.broadcast_to(np.asarray(values), est.shape).ravel()
        return pd.DataFrame(columns)

    # ------------------------------------------------------------ repr
    def _entry_texts(self, est: np.ndarray) -> list[str]:
        categories = self.categories
        flat = est.ravel()
        k = min(flat.shape[0], _REPR_ENTRIES)
        texts = []
        for j in range(k):
            if est.ndim == 1 and categories is not None:
                label = str(categories[j]).replace("\n", " ")
                if len(label) > _LABEL_WIDTH:
                    label = label[: _LABEL_WIDTH - 1] + "~"
                key = label
            elif est.ndim == 1:
                key = f"[{j}]"
            else:
                key = "[" + ", ".join(str(int(i)) for i in np.unravel_index(j, est.shape)) + "]"
            value = flat[j]
            texts.append(f"{key}={_num(value) if np.isreal(value) else value}")
        if flat.shape[0] > k:
            texts.append("...")
        return texts

    def __repr__(self) -> str:
        est = np.asarray(self.estimate)
        head = [f"shape {est.shape}"]
        n = getattr(self, "n", None)
        if n is not None:
            head.append(f"n={n}")
        privacy = getattr(self, "privacy", None)
        if privacy is not None:
            head.append(str(privacy))
        text = f"{self._repr_kind()}({', '.join(head)}"
        if est.size:
            text += ": " + ", ".join(self._entry_texts(est))
        text += ")"
        text = " ".join(text.split())  # one line, whatever a label holds
        if len(text) > REPR_WIDTH:
            text = text[: REPR_WIDTH - 4] + "...)"
        return text
