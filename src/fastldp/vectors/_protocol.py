"""What a sparse-vector server answers to :mod:`fastldp.protocol` (a mixin of :class:`StreamingServer`).

Report files, Dask, the collector, ``fastldp simulate`` and the ledger ask
these questions instead of asking for the class: the spec, the report
schema, the privacy statement of a release, synthetic sparse vectors, and
how the dashboard draws an estimate (a signed bar per coordinate of the mean).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..protocol import ProtocolMembers
from ..results import PrivacyStatement

__all__ = ["VectorProtocol"]


class VectorProtocol(ProtocolMembers):
    """The :class:`fastldp.protocol.StreamingMechanism` members of a sparse-vector server.

    :class:`~fastldp.vectors.base.StreamingServer` has them through this
    mixin, which relies on its ``d``, ``m``, ``epsilon``, ``_privacy``,
    ``_fixed_budget``, ``privatize`` and the subclass's ``stream_params``.
    A server whose reports are not one numeric array per batch overrides
    :attr:`report_schema` (PrivKVM), and one that takes only some values
    overrides :meth:`_example_values` (Collision's frequencies).
    """

    #: the dashboard draws one signed bar per coordinate of the estimated mean
    kind = "vector"
    #: entries are labelled by their coordinates
    labels = None


    d: int
    m: int
    epsilon: float

    @property
    def report_schema(self) -> Any:
        """The dtype and shape of one report, and the fixed budget (every server has one).

        Those of two probe reports (:func:`fastldp.protocol.probe_schema`):
        float64 for RPC and Succinct, integer symbols or bits for the others.
        """
        from ..protocol import probe_schema

        return probe_schema(self, self.epsilon)


    def privacy(self, epsilons: Any = None) -> PrivacyStatement:
        """The guarantee of a release: ``epsilon``-LDP for each user's whole report.

        Parameters
        ----------
        epsilons : None or float
            ``None`` or this server's ``epsilon`` (a scalar, or one per
            report): the budget is set by the constructor, and any other
            value is a ``ValueError``.

        Returns
        -------
        fastldp.results.PrivacyStatement
            What ``estimate(...).privacy`` states; its ``event()`` is what a
            ledger charges.
        """
        self._fixed_budget(epsilons, None, f"{type(self).__name__}.privacy")  # type: ignore[attr-defined]
        return self._privacy()  # type: ignore[attr-defined]

    def _example_values(self, n_entries: int, rng: np.random.Generator) -> np.ndarray:
        """The values of ``n_entries`` stored entries: +1 three times in four, else -1."""
        return np.where(rng.random(n_entries) < 0.75, 1.0, -1.0)

    def example_data(self, n: int, rng: np.random.Generator) -> Any:
        """``n`` users of a Zipf(1.1) key law, each holding 1..m distinct keys with a value.

        Each user holds a random number of keys (1 to ``m``): a first key
        from a Zipf(1.1) law over the ``d`` keys (key 0 the most frequent),
        then the keys after it, cyclically, so distinct. Each value is +1
        three times in four and -1 otherwise (values in {-1, 1}, which
        every value route takes; a server of frequencies gets 1).
        Deterministic given ``rng``.

        Returns
        -------
        scipy.sparse.csr_matrix, shape (n, d), float64
        """
        import scipy.sparse as sp

        sizes = rng.integers(1, self.m + 1, n)
        w = 1.0 / np.arange(1, self.d + 1) ** 1.1
        first = rng.choice(self.d, size=n, p=w / w.sum())
        rows = np.repeat(np.arange(n, dtype=np.int64), sizes)
        offsets = np.arange(rows.shape[0]) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        keys = (np.repeat(first, sizes) + offsets) % self.d
        values = self._example_values(rows.shape[0], rng)
        return sp.csr_matrix((values, (rows, keys)), shape=(n, self.d))
