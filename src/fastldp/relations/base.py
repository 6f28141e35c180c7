"""What every relation-set mechanism shares: parameters, parsing, linear decoding.

A *relation mechanism* privatizes each identity's relation set (at most
``k`` pairs of a ``d1 x d2`` table) at the identity's own budget, and its
server side is *linear*: after sanitization, an unbiased estimate of the
population matrix over any set ``J`` of identities is a weighted sum of
per-report contributions (:meth:`linear_estimate`). Decoders
(:mod:`fastldp.relations.decoders`) and attacks (:mod:`fastldp.relations.attacks`)
work through this interface only, so every mechanism x decoder x attack
combination is one call.
"""

from __future__ import annotations

import numpy as np

from .._random import resolve_codebook_seed, resolve_identities, resolve_n_threads
from .._validation import check_choice, check_int, check_positive_array, param_error
from .relation_sets import CAP_POLICIES, RelationSets, as_relation_sets, is_long_format

__all__ = ["RelationMechanism", "MAX_PAIRS", "MIN_EPSILON"]

#: Pairs are encoded as ``row * d2 + col`` in int64: ``d1 * d2`` must stay below this.
MAX_PAIRS = 2**62
#: The smallest budget accepted. Below it ``gamma^2 = tanh(eps / 2)^2`` leaves the
#: normal range of binary64 and the decoders' denominators (``D = sum gamma_i^2``
#: for JPRS, the oracles' ``1 / sigma_i^2`` weights) underflow.
MIN_EPSILON = 1e-150


class RelationMechanism:
    """Base class: validated ``shape``, ``k``, ``s``, codebook seed, threads."""

    #: short name used in results tables
    family = "mechanism"
    #: which ``s`` coordinates the final projection keeps (see :mod:`.projection`)
    support_rule = "raw"

    def __init__(self, *, shape, k, s, codebook_seed=None, cap_policy="raise", n_threads=None):
        owner = type(self).__name__
        if not (isinstance(shape, (tuple, list)) and len(shape) == 2):
            raise param_error("shape", owner, "a pair (d1, d2) of ints >= 1", shape, TypeError)
        d1 = check_int(shape[0], "shape[0]", owner, low=1)
        d2 = check_int(shape[1], "shape[1]", owner, low=1)
        if d1 * d2 >= MAX_PAIRS:
            # pairs are encoded as row * d2 + col in int64 (and hashed in blocks of 256)
            raise param_error("shape", owner, f"a pair (d1, d2) with d1 * d2 < 2**62",
                              f"{(d1, d2)} (d1 * d2 = {d1 * d2})")
        self.shape = (d1, d2)
        self.p = d1 * d2
        self.k = check_int(k, "k", owner, low=1)
        self.s = check_int(s, "s", owner, low=1, high=self.p)
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.cap_policy = check_choice(cap_policy, "cap_policy", owner, CAP_POLICIES)
        self.n_threads = resolve_n_threads(n_threads, owner)

    def _repr_extra(self) -> str:
        return ""

    def __repr__(self) -> str:
        rule = "" if self.support_rule == "raw" else f", support_rule={self.support_rule!r}"
        return (
            f"{type(self).__name__}(shape={self.shape}, k={self.k}, s={self.s}{self._repr_extra()}"
            f"{rule}, codebook_seed={self.codebook_seed}, cap_policy={self.cap_policy!r})"
        )

    # ------------------------------------------------------------ helpers
    def _budgets(self, epsilons, n: int) -> np.ndarray:
        owner = type(self).__name__
        eps = check_positive_array(epsilons, "epsilons", owner, size=n)
        if eps.size and eps.min() < MIN_EPSILON:
            i = int(np.argmin(eps))
            raise ValueError(
                f"The 'epsilons' parameter of {owner} must contain only floats in "
                f"[{MIN_EPSILON!r}, inf): below it the estimator's denominators underflow. "
                f"Got {float(eps[i])!r} at index {i} instead."
            )
        return eps

    def relation_sets(self, relations, *, identities=None) -> RelationSets:
        """Validate ``relations`` and return them in CSR form (see :class:`RelationSets`).

        ``relations`` is a sparse matrix ``(n, d1*d2)``, a sequence of ``n``
        ``(m_i, 2)`` pair arrays, or the long format (see
        :mod:`fastldp.relations.relation_sets`): a tuple of three 1-d arrays
        ``(identity, row, col)``, a pandas DataFrame / pyarrow Table / dict of
        arrays with those columns, or the path of a Parquet file with them.
        The long format's sets are its distinct identities in ascending order
        (they become :attr:`RelationSets.identities`), or, when
        ``identities`` is given, that population in that order.
        """
        owner = type(self).__name__
        if isinstance(relations, RelationSets):
            if relations.identities is not None and identities is not None:
                ids = resolve_identities(identities, relations.n, owner)
                if not np.array_equal(ids, relations.identities):
                    raise param_error("identities", owner,
                                      "the identities the relation sets were built with",
                                      identities)
            return relations
        if is_long_format(relations):
            return as_relation_sets(
                relations, shape=self.shape, k=self.k, owner=owner,
                cap_policy=self.cap_policy, seed=self.codebook_seed, identities=identities,
            )
        if hasattr(relations, "shape") and len(relations.shape) == 0:
            raise param_error("relations", owner,
                              "a sparse matrix (n, d1*d2), a sequence of (m, 2) pair arrays "
                              "or a long-format (identity, row, col) table",
                              relations, TypeError)
        n = relations.shape[0] if hasattr(relations, "shape") else len(relations)
        ids = resolve_identities(identities, n, owner)
        return as_relation_sets(
            relations, shape=self.shape, k=self.k, owner=owner,
            cap_policy=self.cap_policy, seed=self.codebook_seed, identities=ids,
        )

    def _client_identities(self, sets: RelationSets, identities) -> np.ndarray:
        """The uint64 identities of ``sets``: their own (long format), else the caller's."""
        if sets.identities is not None:
            return sets.identities
        return resolve_identities(identities, sets.n, type(self).__name__)

    def _server_inputs(self, reports, epsilons, identities, owner):
        """Return (n, eps, identities) after checking the report count."""
        n = self._report_count(reports, owner)
        eps = self._budgets(epsilons, n)
        ids = resolve_identities(identities, n, owner)
        return n, eps, ids

    @staticmethod
    def _report_count(reports, owner) -> int:
        """The number of packets, or a clear error for a non-1-d input."""
        try:
            shape = np.shape(reports)
        except ValueError:
            shape = ("ragged",)
        if len(shape) != 1 or not isinstance(shape[0], int) or shape[0] < 1:
            raise ValueError(
                f"The 'reports' parameter of {owner} must be a non-empty 1-d array of packets. "
                f"Got shape {shape} instead."
            )
        return shape[0]

    def decode(self, reports, epsilons, *, decoders=("global",), n_groups=8, identities=None,
               support_rule=None):
        """Run one or several decoders on one set of reports.

        See :func:`fastldp.relations.decoders.decode`; ``support_rule``
        (default: the mechanism's) picks the projection's support.
        """
        from .decoders import decode

        return decode(self, reports, epsilons, decoders=decoders, n_groups=n_groups,
                      identities=identities, support_rule=support_rule)

    # ------------------------------------------------------------ interface
    def payload_bits(self, epsilons) -> np.ndarray:  # pragma: no cover - abstract
        """Private payload of each identity's report, in bits."""
        raise NotImplementedError

    def sanitize(self, reports, eps, identities, owner):  # pragma: no cover - abstract
        """Project received reports to legal outputs; return them and a report."""
        raise NotImplementedError

    def linear_estimate(self, clean, eps, identities, members=None):  # pragma: no cover
        """Unbiased estimate (length p) from the sanitized reports of ``members``."""
        raise NotImplementedError

    def best_response(self, eps, corrupted, identities, items, item_weights, rng):  # pragma: no cover
        """Legal outputs of the corrupted identities maximizing the linear objective."""
        raise NotImplementedError

    def random_response(self, eps, corrupted, identities, rng):  # pragma: no cover
        """Uniformly random legal outputs of the corrupted identities."""
        raise NotImplementedError

    def response_objective(self, eps, corrupted, identities, outputs, items, item_weights):  # pragma: no cover
        """Each corrupted output's contribution to ``sum_x w_x V(x)`` (global estimate)."""
        raise NotImplementedError
