"""Budget checks and the personal-budget decode of the frequency oracles.

Every budget, the oracle's ``epsilon`` or a personal ``eps_i``, is checked
here (:meth:`PersonalBudgets.check_budgets`). Reports at budgets other
than the oracle's are decoded through exact weighted sums: per position the
sum of the report weights ``a_i = lam_i / (p_i - q_i)``, a constant offset
and the plug-in variance terms (``weighted_sums``, ``count_variances``);
reports at the oracle's own budget are folded into those sums exactly when
a partial holds both (``_folded_sums``; :mod:`fastldp.oracles._streaming`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Optional

import numpy as np

from .._validation import check_positive_array, param_error
from ..streaming import ExactSum, Partial
from ._exact_sums import add_broadcast, count_sum, scalar_sum, scaled_sum
from ._messages import entry_error

__all__ = ["EPSILON_MAX", "PersonalBudgets"]

EPSILON_MAX = 700.0  # e^eps overflows double precision just above 709.78


class PersonalBudgets:
    """Mixin of :class:`~fastldp.oracles.FrequencyOracle`: budget checks, personal-budget sums.

    It relies on the oracle's ``epsilon``, ``variances`` and ``held_variances``.
    """

    epsilon: Optional[float]

    if TYPE_CHECKING:  # given by FrequencyOracle
        def variances(self, eps: np.ndarray) -> np.ndarray: ...

        def held_variances(self, eps: np.ndarray) -> np.ndarray: ...

    def check_budgets(self, eps: np.ndarray, name: str, owner: str) -> None:
        """Raise unless every budget is at most 700 and gives a defined estimator."""
        too_big = ~(eps <= EPSILON_MAX)
        with np.errstate(all="ignore"):
            var = np.asarray(self.variances(eps), dtype=np.float64)
            held = np.asarray(self.held_variances(eps), dtype=np.float64)
        undefined = ~(np.isfinite(var) & np.isfinite(held) & (var > 0))
        for bad, expected in (
                (too_big, f"a float in (0, {EPSILON_MAX!r}] (e^eps must be finite)"),
                (undefined, "large enough that the estimator is defined in double precision "
                            "(p - q > 0 and a finite variance)")):
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                if eps.shape[0] == 1 and name == "epsilon":
                    raise param_error(name, owner, expected, float(eps[0]))
                raise entry_error(name, owner, expected, float(eps[i]), i)

    def _budgets(self, epsilons, n: int, owner: str) -> np.ndarray:
        if epsilons is None:
            if self.epsilon is None:
                raise param_error("epsilons", owner,
                                  "given when the oracle was built with epsilon=None "
                                  "(an array of personal budgets)", None)
            return np.full(n, self.epsilon)
        eps = check_positive_array(epsilons, "epsilons", owner, size=n)
        self.check_budgets(eps, "epsilons", owner)
        return eps

    def _personal_budgets(self, epsilons, n: int,
                          owner: str) -> tuple[Optional[np.ndarray], Optional[np.ndarray]]:
        """``(eps, at_fixed)`` of the ``n`` reports of a partial.

        ``eps`` is ``None`` when every report has the oracle's budget: those
        partials keep the hit counts of the equal-budget decode, bit for bit
        (``epsilons`` equal to it everywhere included). Otherwise ``eps``
        holds the checked budgets and ``at_fixed`` marks those equal to the
        oracle's (``None`` when it has no budget of its own). Raises when
        neither the oracle nor ``epsilons`` gives a budget.
        """
        if epsilons is None:
            if self.epsilon is None:
                self._budgets(None, n, owner)  # raises: this oracle has no budget of its own
            return None, None
        eps = self._budgets(epsilons, n, owner)
        if self.epsilon is None:
            return eps, None
        at_fixed = eps == self.epsilon
        if at_fixed.all():
            return None, None
        return eps, at_fixed

    def _folded_sums(self, partial: Partial) -> dict:
        """The personal sums of every report, those at the oracle's budget folded in exactly.

        Each of the ``n_fixed`` reports at the oracle's ``epsilon`` has the
        weight ``a`` and the terms ``c`` (offset), ``sigma^2`` and
        ``held - sigma^2`` of that budget, computed as :meth:`partial`
        computes them for a personal budget; so the support gains
        ``hits(v) a`` and each scalar sum ``n_fixed`` times its term, all
        exactly (:func:`scaled_sum`): the same exact sums as if every report
        had been decoded with personal budgets.
        """
        sums = dict(partial.sums)
        n_fixed = partial.counts["n"] - partial.counts["personal"]
        if n_fixed == 0:
            return sums
        e = np.array([self.epsilon], dtype=np.float64)
        a, c = self._report_terms(e, np.ones(1))
        v = np.asarray(self.variances(e), dtype=np.float64)
        h = np.asarray(self.held_variances(e), dtype=np.float64)
        n_sum = count_sum(n_fixed)
        sums["support"] = sums["support"].merge(scaled_sum(sums["hits"], float(a[0])))
        for key, term in (("offset", c), ("var", v), ("held_minus_var", h - v)):
            sums[key] = sums[key].merge(scaled_sum(n_sum, float(term[0])))
        return sums

    def _report_terms(self, eps: np.ndarray, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per report, the weight ``a_i`` and the offset term of :meth:`weighted_sums`.

        ``a_i = lam_i / (p_i - q_i)`` (``lam_i / gamma_i`` for HR) is added at
        every position report ``i`` hits, ``c_i`` (``-a_i q_i``; zero for
        HR) to every count. One function for both uses, so that
        :meth:`finalize` folds the reports at the oracle's budget into the
        personal sums with exactly the terms a personal decode would add.
        """
        raise NotImplementedError  # pragma: no cover - abstract

    def weighted_sums(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                      lam: np.ndarray) -> tuple[ExactSum, ExactSum]:
        """Exact sums behind ``aggregate(clean, eps, identities, lam)`` (array layer).

        Parameters
        ----------
        clean : array
            Sanitized reports.
        eps, lam : float64 arrays, shape (n,)
            Budgets and weights ``lambda_i``.
        identities : uint64 array, shape (n,)

        Returns
        -------
        support : ExactSum
            Per position of the oracle's statistic, the exact sum of the
            weights ``a_i = lambda_i / (p_i - q_i)`` of the reports that hit
            it (``lambda_i / gamma_i`` per column for HR).
        offset : ExactSum
            One position: the exact constant added to every count
            (``-sum_i a_i q_i``; zero for HR).
        """
        raise NotImplementedError  # pragma: no cover - abstract

    def weighted_counts(self, support: ExactSum, offset: ExactSum) -> np.ndarray:
        """Counts ``sum_i lambda_i c_i(v)`` from :meth:`weighted_sums` (rounded once)."""
        return add_broadcast(support, offset).value()

    def aggregate(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                  lam: np.ndarray) -> np.ndarray:
        """``sum_i lam_i c_i(v)`` for every symbol ``v`` (array layer, validated inputs).

        Computed from exact sums (:meth:`weighted_sums`), so it does not
        depend on the order of the reports.
        """
        return self.weighted_counts(*self.weighted_sums(clean, eps, identities, lam))

    def count_variances(self, eps: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Plug-in variance of every count (:mod:`fastldp.oracles._base`)."""
        n = eps.shape[0]
        if n == 0:
            return np.zeros_like(counts)
        base = float(scalar_sum(self.variances(eps)).value()[0])
        extra = float(scalar_sum(self.held_variances(eps) - self.variances(eps)).value()[0]) / n
        return base + np.clip(counts, 0.0, n) * extra
