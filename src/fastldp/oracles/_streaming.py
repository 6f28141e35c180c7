"""The streaming decode of the frequency oracles: exact, mergeable partials.

Streaming: partial, merge, finalize
-----------------------------------
``estimate(...)`` is literally ``finalize(partial(...))``: a
:class:`~fastldp.streaming.Partial` holds the exact sums behind the
estimate, two partials of disjoint chunks ``merge`` by adding them, and
``finalize`` is a deterministic function of the merged state, so a decode
split into any chunks, merged in any order, is bit-identical to the one-shot
:meth:`~FrequencyOracle.estimate`. The state is ``O(size of the oracle's
statistic)`` (``D`` symbols; ``K`` columns for HR; ``h g`` cells for FLH),
whatever the number of reports. Every partial keeps two groups of sums:

* **the oracle's budget** (``epsilons=None``, or a budget equal to the
  oracle's ``epsilon``): the integer number of those reports hitting each
  position of the statistic (``"hits"``, an
  :class:`~fastldp.streaming.ExactSum` of integers);
* **other personal budgets**: per position the exact sum of the report
  weights ``a_i = lam_i / (p_i - q_i)`` (``"support"``), the exact constant
  ``-sum_i a_i q_i`` added to every count (``"offset"``), and the exact sums
  of ``sigma_i^2`` (``"var"``) and of ``held_i - sigma_i^2``
  (``"held_minus_var"``) for the plug-in variance, with the number of
  those reports (``"personal"``). Where a compiled kernel sums float
  weights (OLH's support, unary encoding's bit counts) it runs with unit
  weights once per distinct weight, or on integer limbs of the weights, so
  that each of its sums is an exact integer (:func:`add_weighted_hits`).

Every partial also counts its reports by sanitization outcome. When no
report has another budget, ``finalize`` applies the closed form of the
equal-budget estimator to the hit counts (``(hits - n q) / (p - q)`` and
the like): so ``estimate(reports)``, ``estimate(reports, epsilons=epsilon)``
and ``estimate(reports, epsilons=np.full(n, epsilon))`` are the same
numbers, bit for bit. Otherwise it folds the hits into the personal sums
exactly (``hits(v) a`` and ``n_fixed`` times each per-report term, see
:func:`scaled_sum`) and rounds once: the exact sums of every report's
terms, whatever the chunks and whichever budgets each chunk holds.

:class:`StreamingDecode` gives :class:`~fastldp.oracles.FrequencyOracle`
the array side of ``partial`` and ``finalize``: the sums a partial keeps,
its checks, and the statistic hooks each oracle fills in.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from .._random import resolve_identities
from ..streaming import ExactSum, Partial, check_partial
from ._exact_sums import scalar_sum
from ._personal import PersonalBudgets
from ._sanitizing import IntegerReports, all_legal_report, report_counts

__all__ = ["StreamingDecode"]

_SUMS = frozenset({"hits", "support", "offset", "var", "held_minus_var"})


class StreamingDecode(PersonalBudgets, IntegerReports):
    """Mixin of :class:`~fastldp.oracles.FrequencyOracle`: the partial of a chunk and its hooks.

    It relies on the oracle's ``domain_size``, ``stream_params``,
    ``_n_reports`` and ``_identities``, with the budgets of
    :class:`~fastldp.oracles._personal.PersonalBudgets` and the sanitization
    of :class:`~fastldp.oracles._sanitizing.IntegerReports`.
    """

    domain_size: int

    if TYPE_CHECKING:  # given by FrequencyOracle
        def stream_params(self) -> dict: ...

        def _n_reports(self, reports, owner: str) -> int: ...

        def _identities(self, identities, n: int, owner: str): ...

    def _partial(self, reports, epsilons, identities, owner: str) -> Partial:
        n = self._n_reports(reports, owner)
        eps, at_fixed = self._personal_budgets(epsilons, n, owner)
        hits = ExactSum(self._stat_size())
        support, offset = ExactSum(self._stat_size()), ExactSum(1)
        var, held_minus_var = ExactSum(1), ExactSum(1)
        personal = 0
        if eps is None:
            fast = self._fast_hits(reports, n, identities, owner)
            if fast is not None:  # every report legal: no copy, no per-report budgets
                report = all_legal_report(n)
            else:
                ids = resolve_identities(identities, n, owner)
                clean, report = self.sanitize(reports, self._budgets(None, n, owner), ids, owner)
                fast = self._hits(clean, ids)
            hits.add_integers(np.ascontiguousarray(fast, dtype=np.int64))
        else:
            ids = resolve_identities(identities, n, owner)
            clean, report = self.sanitize(reports, eps, ids, owner)
            if at_fixed is not None and at_fixed.any():
                hits.add_integers(np.ascontiguousarray(
                    self._hits(clean[at_fixed], ids[at_fixed]), dtype=np.int64))
                rest = ~at_fixed
                clean, eps, ids = clean[rest], eps[rest], ids[rest]
            personal = eps.shape[0]
            support, offset = self.weighted_sums(clean, eps, ids, np.ones(personal))
            v = np.asarray(self.variances(eps), dtype=np.float64)
            h = np.asarray(self.held_variances(eps), dtype=np.float64)
            var, held_minus_var = scalar_sum(v), scalar_sum(h - v)
        sums = {"hits": hits, "support": support, "offset": offset, "var": var,
                "held_minus_var": held_minus_var}
        counts = report_counts(report)
        counts["personal"] = personal
        return Partial(type(self).__name__, self.stream_params(), sums=sums, counts=counts,
                       flags={"wrong_dtype": report.wrong_dtype})

    def _check_partial(self, partial, owner: str) -> Partial:
        check_partial(partial, type(self).__name__, self.stream_params(), owner)
        if frozenset(partial.sums) != _SUMS or "personal" not in partial.counts:
            raise ValueError(f"{owner}: the partial holds the sums {sorted(partial.sums)}, not "
                             f"those of a {type(self).__name__} partial")
        return partial

    def _stat_size(self) -> int:
        """Positions of the server statistic (``D`` unless the oracle says otherwise)."""
        return self.domain_size

    def _hits(self, clean, identities) -> np.ndarray:  # pragma: no cover - abstract
        """Integer number of (legal) reports hitting each position, equal budgets."""
        raise NotImplementedError

    def _counts_from_hits(self, hits: np.ndarray, n: int) -> np.ndarray:  # pragma: no cover
        """Equal-budget counts from the hit counts (float64 holding exact integers)."""
        raise NotImplementedError

    def _fast_hits(self, reports, n: int, identities, owner: str):
        """The hit counts when every report is legal and budgets are equal, else ``None``."""
        clean = self._legal_as_is(reports, n)
        if clean is None:
            return None
        return self._hits(clean, self._identities(identities, n, owner))

    def _legal_as_is(self, reports, n: int):
        """``reports`` as the clean array when it is one of legal integer reports, else None."""
        arr = reports
        if not (isinstance(arr, np.ndarray) and arr.ndim == 1 and arr.shape[0] == n and n
                and arr.dtype.kind in "iu" and arr.dtype.itemsize <= 8):
            return None
        size = int(self.output_sizes(np.array([self.epsilon]))[0])
        if arr.min() >= 0 and arr.max() < size:
            return np.ascontiguousarray(arr, dtype=np.int64)
        return None

    def _uniform_variances(self, n: int, counts: np.ndarray) -> np.ndarray:
        e = np.array([self.epsilon])
        var, held = float(self.variances(e)[0]), float(self.held_variances(e)[0])
        return n * var + np.clip(counts, 0.0, n) * (held - var)
