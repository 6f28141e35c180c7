"""What a relation mechanism answers to :mod:`fastldp.protocol` (a mixin of :class:`RelationMechanism`).

Report files, Dask, the collector, ``fastldp simulate`` and the ledger ask
these questions instead of asking for the class: the spec, the report
schema, the privacy statement of a release, synthetic relation sets, and how
the dashboard draws an estimate (a heat map of the ``d1 x d2`` table).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._random import as_generator
from .._validation import check_positive_array
from ..protocol import ProtocolMembers
from ..results import PrivacyStatement
from ._privacy import privacy_of_budgets

__all__ = ["RelationProtocol"]


class RelationProtocol(ProtocolMembers):
    """The :class:`fastldp.protocol.StreamingMechanism` members of a relation mechanism.

    :class:`~fastldp.relations.RelationMechanism` has them through this
    mixin, which relies on its ``p``, ``k``, ``s``, ``epsilon``,
    ``codebook_seed``, ``privatize`` and the subclass's ``stream_params``.
    """

    #: the dashboard draws the estimated matrix as a heat map
    kind = "matrix"
    #: entries are labelled by their (row, column) indices
    labels = None


    p: int
    k: int
    s: int
    epsilon: Optional[float]
    codebook_seed: int

    @property
    def report_schema(self) -> Any:
        """The dtype and shape of one report, and the fixed budget (``None``: personal budgets).

        Those of two probe reports (:func:`fastldp.protocol.probe_schema`):
        JPRS's int8 signs, P-RS's int64 oracle outputs, one per identity.
        """
        from ..protocol import probe_schema

        return probe_schema(self, self.epsilon)


    def privacy(self, epsilons: Any = None) -> PrivacyStatement:
        """The guarantee of a release of relation sets privatized at ``epsilons``.

        Parameters
        ----------
        epsilons : float or array_like of float, optional
            The identities' budgets; default the mechanism's ``epsilon``.
            Without either, the statement says only that the budgets are
            personal.

        Returns
        -------
        fastldp.results.PrivacyStatement
            Local DP per user (each identity's whole set), as
            ``estimate(...).privacy`` states it; its ``event()`` is what a
            ledger charges.
        """
        if epsilons is None:
            if self.epsilon is None:
                return PrivacyStatement("local DP", "user", personal=True)
            return PrivacyStatement.local(epsilon=self.epsilon, unit="user")
        return privacy_of_budgets(
            check_positive_array(epsilons, "epsilons", f"{type(self).__name__}.privacy"))

    def example_data(self, n: int, rng: np.random.Generator) -> Any:
        """``n`` relation sets of an s-sparse population: each identity holds 1..k hot pairs.

        The ``s`` hot pairs are drawn from the public ``codebook_seed``; each
        identity holds a random number of them (1 to ``k``), consecutive in
        that list from a random offset (so distinct when ``k <= s``). What ``fastldp
        simulate`` privatizes; deterministic given ``rng``.

        Returns
        -------
        scipy.sparse.csr_matrix, shape (n, d1 * d2), int8
        """
        import scipy.sparse as sp

        public = as_generator(self.codebook_seed, "example_data", purpose="codebook")
        hot = public.choice(self.p, size=self.s, replace=False)
        sizes = rng.integers(1, self.k + 1, n)
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(sizes, out=indptr[1:])
        # distinct pairs per identity: a random offset into the hot list, consecutive entries
        start = rng.integers(0, self.s, n)
        offsets = np.arange(indptr[-1]) - np.repeat(indptr[:-1], sizes)
        pairs = hot[(np.repeat(start, sizes) + offsets) % self.s]
        data = np.ones(pairs.shape[0], dtype=np.int8)
        return sp.csr_matrix((data, pairs, indptr), shape=(n, self.p))
