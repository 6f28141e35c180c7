"""What a frequency oracle answers to :mod:`fastldp.protocol` (a mixin of :class:`FrequencyOracle`).

Report files, Dask, the collector, ``fastldp simulate`` and the ledger ask
these questions instead of asking for the class: the spec, the report
schema, the privacy statement of a release, synthetic inputs, and how the
dashboard draws an estimate (bars per symbol, labelled by the categories).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._validation import check_positive_array
from ..protocol import ProtocolMembers
from ..results import PrivacyStatement

__all__ = ["OracleProtocol", "zipf_symbols", "label_array"]


def zipf_symbols(domain_size: int, n: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` symbols of ``[0, domain_size)`` from a Zipf(1.1) law (symbol 0 the most frequent)."""
    w = 1.0 / np.arange(1, domain_size + 1) ** 1.1
    return rng.choice(domain_size, size=n, p=w / w.sum())


def label_array(labels: Any) -> np.ndarray:
    """The labels as one numpy array an oracle encodes fast: str, int64, or object if mixed."""
    kinds = {type(label) for label in labels}
    if kinds == {str}:
        return np.array(labels, dtype=str)
    if kinds == {int} and all(-2**63 <= v < 2**63 for v in labels):
        return np.array(labels, dtype=np.int64)
    out = np.empty(len(labels), dtype=object)  # mixed labels: no conversion between kinds
    out[:] = list(labels)
    return out


class OracleProtocol(ProtocolMembers):
    """The :class:`fastldp.protocol.StreamingMechanism` members of a frequency oracle.

    :class:`FrequencyOracle` has them through this mixin, which relies on
    its ``domain_size``, ``epsilon``, ``categories``, ``privatize`` and
    ``stream_params``.
    """

    #: the dashboard draws one bar per symbol
    kind = "counts"


    domain_size: int
    epsilon: Optional[float]
    categories: Optional[tuple]

    @property
    def labels(self) -> Optional[tuple]:
        """The labels of the estimate's entries: the categories (``None``: the symbols)."""
        return self.categories

    @property
    def report_schema(self) -> Any:
        """The dtype and shape of one report, and the fixed budget (``None``: personal budgets).

        Those of two probe reports (:func:`fastldp.protocol.probe_schema`):
        int64 symbols for GRR, OLH or Hadamard response, packed uint8 bits
        for the unary encodings, float64 rows for SHE.
        """
        from ..protocol import probe_schema

        return probe_schema(self, self.epsilon)


    def privacy(self, epsilons: Any = None) -> PrivacyStatement:
        """The guarantee of a release of reports privatized at ``epsilons``.

        Parameters
        ----------
        epsilons : float or array_like of float, optional
            The reports' budgets; default the oracle's ``epsilon``. Without
            either, the statement says only that the budgets are personal.

        Returns
        -------
        fastldp.results.PrivacyStatement
            Local DP per report (what ``estimate(...).privacy`` states);
            its ``event()`` is what a ledger charges.
        """
        if epsilons is None:
            if self.epsilon is None:
                return PrivacyStatement("local DP", "report", personal=True)
            return PrivacyStatement.local(epsilon=self.epsilon)
        eps = check_positive_array(epsilons, "epsilons", f"{type(self).__name__}.privacy")
        return PrivacyStatement.local(epsilon=self.epsilon, epsilons=eps)

    def example_data(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` values from a Zipf(1.1) law over the domain: symbols, or the oracle's labels.

        An oracle built with ``categories=`` privatizes its labels (symbol
        ``v`` is ``categories[v]``), so the symbols are mapped to them.
        What ``fastldp simulate`` privatizes; deterministic given ``rng``.

        Examples
        --------
        >>> import numpy as np
        >>> from fastldp import GRR
        >>> GRR(domain_size=3, epsilon=1.0, categories=["a", "b", "c"],
        ...     codebook_seed=0).example_data(4, np.random.default_rng(0)).tolist()
        ['b', 'a', 'a', 'a']
        """
        symbols = zipf_symbols(self.domain_size, n, rng)
        if self.categories is None:
            return symbols
        return label_array(self.categories)[symbols]
