"""What a heavy-hitter protocol answers to :mod:`fastldp.protocol` (a mixin of :class:`HeavyHitterProtocol`).

Report files, Dask, the collector, ``fastldp simulate`` and the ledger ask
these questions instead of asking for the class: the spec, the report
schema, the privacy statement of a release, synthetic items, and how the
dashboard draws an estimate (a ranked list of the top items).
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._random import as_generator
from ..protocol import ProtocolMembers
from ..results import PrivacyStatement

__all__ = ["HeavyHitterProtocolMembers", "EXAMPLE_ITEMS"]

#: the number of distinct items of :meth:`~HeavyHitterProtocolMembers.example_data`
#: (fewer when the item space is smaller)
EXAMPLE_ITEMS = 1024


class HeavyHitterProtocolMembers(ProtocolMembers):
    """The :class:`fastldp.protocol.StreamingMechanism` members of a heavy-hitter protocol.

    :class:`~fastldp.heavyhitters.HeavyHitterProtocol` has them through this
    mixin, which relies on its ``epsilon``, ``report_width``, ``codec``,
    ``codebook_seed``, ``_check_epsilons`` and ``stream_params``.
    """

    #: the dashboard draws a ranked list of the heavy hitters
    kind = "ranking"
    #: the result labels its entries by the items it found
    labels = None


    epsilon: float
    report_width: int
    codebook_seed: int
    codec: Any

    @property
    def report_schema(self) -> Any:
        """int64 reports, one word (``report_width = 0``) or ``report_width`` words each, at ``epsilon``."""
        from ..protocol import ReportSchema

        shape = () if self.report_width == 0 else (self.report_width,)
        return ReportSchema(np.int64, shape, self.epsilon)


    def privacy(self, epsilons: Any = None) -> PrivacyStatement:
        """The guarantee of a release: ``epsilon``-LDP per report.

        Parameters
        ----------
        epsilons : None or float
            ``None`` or the constructor's ``epsilon`` (no personal budgets;
            any other value is a ``ValueError``).

        Returns
        -------
        fastldp.results.PrivacyStatement
            What ``estimate(...).privacy`` states; its ``event()`` is what a
            ledger charges.
        """
        self._check_epsilons(epsilons, f"{type(self).__name__}.privacy")  # type: ignore[attr-defined]
        return PrivacyStatement.local(epsilon=self.epsilon)

    def example_items(self) -> Any:
        """The public universe of :meth:`example_data`: at most :data:`EXAMPLE_ITEMS` items.

        Drawn from the ``codebook_seed``: distinct integers of ``item_bits``
        bits (all of them when there are at most :data:`EXAMPLE_ITEMS`), or
        lowercase ASCII strings of ``item_bytes`` letters.
        """
        # the codebook purpose: the example universe is not numpy's default_rng(codebook_seed)
        public = as_generator(self.codebook_seed, "example_items", purpose="codebook")
        if self.codec.kind == "bytes":
            length = int(self.codec.item_bytes)
            count = min(EXAMPLE_ITEMS, 26 ** length)
            letters = (97 + public.integers(0, 26, size=(count, length))).astype(np.uint8)
            out = np.empty(count, dtype=object)
            out[:] = [row.tobytes() for row in letters]
            return out
        bits = int(self.codec.bits)
        if 2 ** bits <= EXAMPLE_ITEMS:
            return public.permutation(2 ** bits).astype(np.uint64)
        if bits <= 62:
            return public.choice(2 ** bits, size=EXAMPLE_ITEMS, replace=False).astype(np.uint64)
        # a repeat among 1024 draws of 63 or 64 bits is too unlikely to matter (and harmless)
        return public.integers(0, 2 ** bits, size=EXAMPLE_ITEMS, dtype=np.uint64)

    def example_data(self, n: int, rng: np.random.Generator) -> Any:
        """``n`` items from a Zipf(1.1) law over :meth:`example_items` (the first most frequent).

        uint64 integers for ``item_bits`` protocols, an object array of
        byte strings for ``item_bytes`` ones. Deterministic given ``rng``.

        Examples
        --------
        >>> import numpy as np, fastldp
        >>> pem = fastldp.PEM(epsilon=2.0, k=4, item_bits=8, codebook_seed=1)
        >>> items = pem.example_data(1000, np.random.default_rng(0))
        >>> items.dtype, bool(items.max() < 256)
        (dtype('uint64'), True)
        """
        universe = self.example_items()
        w = 1.0 / np.arange(1, universe.shape[0] + 1) ** 1.1
        return universe[rng.choice(universe.shape[0], size=n, p=w / w.sum())]
