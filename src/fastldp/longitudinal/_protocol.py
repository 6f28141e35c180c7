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

from typing import Any

import numpy as np

__all__ = ["LongitudinalProtocol"]


class LongitudinalProtocol:
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

    def spec(self) -> dict:
        """``{"mechanism": class name, "params": stream_params()}``: what rebuilds this protocol."""
        return {"mechanism": type(self).__name__, "params": self.stream_params()}  # type: ignore[attr-defined]

    def example_data(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` values from a Zipf(1.1) law over ``[0, domain_size)`` (0 the most frequent).

        Deterministic given ``rng`` (the same law as the one-shot oracles'
        :meth:`~fastldp.oracles.FrequencyOracle.example_data`).
        """
        from ..oracles._protocol import zipf_symbols

        return zipf_symbols(self.domain_size, n, rng)
