"""What a memoized frequency protocol answers to :mod:`fastldp.protocol` (a mixin).

:class:`~fastldp.longitudinal.LongitudinalOracle` (L-GRR and the unary
protocols), :class:`~fastldp.longitudinal.LongitudinalRAPPOR` and
:class:`~fastldp.longitudinal.DBitFlipPM` have these members; report files,
Dask, the collector, ``fastldp simulate`` and the ledger ask them instead of
asking for the class. The privacy statement is the family's own
(:meth:`~fastldp.longitudinal.protocols.MemoizedBudgets.privacy`: per report
``epsilon_1``, and ``epsilon_inf`` over any number of reports of a value).
"""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable

import numpy as np

from ..protocol import ProtocolMembers

__all__ = ["LongitudinalProtocol", "statement_method", "one_report_budget"]


def one_report_budget(owner: str, epsilon: Any, epsilon_1: Any) -> tuple[Any, str]:
    """One report's budget, given as ``epsilon`` (the contract's name) or ``epsilon_1``.

    The longitudinal protocols share one dialect (``epsilon_inf`` and
    ``epsilon_1``); ``epsilon`` is the API contract's name for the same
    budget. Returns the budget (``None`` when neither is given) and the name
    the user gave it by, for the error messages.
    """
    if epsilon is not None and epsilon_1 is not None:
        raise ValueError(f"The 'epsilon' parameter of {owner} is another name for 'epsilon_1': "
                         f"pass one of them. Got epsilon_1={epsilon_1!r} and "
                         f"epsilon={epsilon!r} instead.")
    if epsilon_1 is not None:
        return epsilon_1, "epsilon_1"
    return epsilon, "epsilon"


class _PrivacyOf:
    """``protocol.privacy`` as a bound method that still reads as the statement, for one release.

    Calling it is the protocol's ``privacy(epsilons=None)``. Before the
    protocol, ``privacy`` was a property holding the statement: reading a
    member of the statement through it (``m.privacy.epsilon_inf``), printing
    it or comparing it still works, with a ``DeprecationWarning`` that says
    to call ``privacy()``.
    """

    __slots__ = ("_owner", "_method")

    def __init__(self, owner: Any, method: Callable) -> None:
        self._owner = owner
        self._method = method

    def __call__(self, epsilons: Any = None) -> Any:
        return self._method(self._owner, epsilons)

    def _statement(self) -> Any:
        warnings.warn(
            f"{type(self._owner).__name__}.privacy is a method (the mechanism protocol's "
            "privacy(epsilons=None)): call privacy() for the statement; reading it as an "
            "attribute is deprecated and stops working in the next release",
            DeprecationWarning, stacklevel=3)
        return self._method(self._owner, None)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__"):  # copy, pickle and friends probe for dunders: no statement
            raise AttributeError(name)
        return getattr(self._statement(), name)

    def __eq__(self, other: object) -> bool:
        return bool(self._statement() == other)

    __hash__ = None  # type: ignore[assignment]  # compares as the (unhashable) statement did

    def __str__(self) -> str:
        return str(self._statement())

    def __repr__(self) -> str:
        return f"<bound method {type(self._owner).__name__}.privacy>"


def statement_method(method: Callable) -> Any:
    """Make ``method`` (``privacy``) a method whose bound form still reads as its statement.

    On the class it is the plain function (callable, as the protocol's
    registry checks); on an instance, a :class:`_PrivacyOf`.
    """

    class _Descriptor:
        __doc__ = method.__doc__

        def __get__(self, obj: Any, cls: Any = None) -> Any:
            return method if obj is None else _PrivacyOf(obj, method)

    descriptor = _Descriptor()
    functools.update_wrapper(descriptor, method)  # type: ignore[arg-type]
    return descriptor


class LongitudinalProtocol(ProtocolMembers):
    """The :class:`fastldp.protocol.StreamingMechanism` members of a memoized protocol.

    A class implements ``_report_layout()``, the ``(dtype, shape)`` of one
    report, and has ``domain_size``, ``epsilon`` (the budget of one report),
    ``privacy`` and ``stream_params``.
    """

    #: the dashboard draws one bar per symbol
    kind = "counts"
    #: entries are labelled by their symbols
    labels = None


    domain_size: int
    epsilon: float

    def _report_layout(self) -> tuple[Any, tuple]:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def report_schema(self) -> Any:
        """The dtype and shape of one report, at the fixed budget ``epsilon_1``.

        Declared, not probed: a probe report would draw permanent responses
        into the protocol's memo.
        """
        from ..protocol import ReportSchema

        dtype, shape = self._report_layout()
        return ReportSchema(dtype, shape, self.epsilon)


    def example_data(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` values from a Zipf(1.1) law over ``[0, domain_size)`` (0 the most frequent).

        Deterministic given ``rng`` (the same law as the one-shot oracles'
        :meth:`~fastldp.oracles.FrequencyOracle.example_data`).
        """
        from ..oracles._protocol import zipf_symbols

        return zipf_symbols(self.domain_size, n, rng)
