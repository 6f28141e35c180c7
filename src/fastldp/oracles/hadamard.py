"""Hadamard response (HR): symmetric, with half-size sets, server by one fast Walsh-Hadamard transform.

``K`` is the smallest power of two ``> D``; symbol ``x`` owns the ``K/2``
columns ``j`` with ``H_K[x + 1, j] = +1`` (Sylvester order,
``H[i, j] = (-1)^popcount(i & j)``; row 0 is skipped because it is all
``+1``). The output is uniform on that set with probability
``e^eps / (e^eps + 1)`` and uniform on its complement otherwise. Then
``c(v) = H_K[v + 1, y] / gamma`` with ``gamma = tanh(eps / 2)``; ``c(v)^2 =
1 / gamma^2`` always, so the variance is ``1 / gamma^2`` at a symbol not held
and ``1 / gamma^2 - 1`` at the held one. The server sums all identities
with one fast Walsh-Hadamard transform of the output histogram:
``O(n + K log K)``.

References
----------
.. [1] J. Acharya, Z. Sun, H. Zhang, "Hadamard response: estimating
   distributions privately, efficiently, and with little communication",
   AISTATS 2019 (the construction with half-size sets, used at every budget).
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from .._kernels._hadamard import fwht, hadamard_entries
from ..streaming import ExactSum
from ._base import CountChannel, FrequencyOracle, scalar_sum

__all__ = ["HadamardResponse"]


class HadamardResponse(FrequencyOracle):
    """Symmetric Hadamard response: ``K`` = next power of two above ``D``.

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700] or None
    categories : list of labels or a pandas Categorical, optional
        Labels of the symbols: :meth:`privatize` then takes the labels and
        the results are labelled (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        Only keys the sanitization coins (the code is public and fixed).
    n_threads : int or None

    Notes
    -----
    Reports are int64 columns in ``[0, K)``.

    Examples
    --------
    >>> import numpy as np
    >>> hr = HadamardResponse(domain_size=6, epsilon=1.0, codebook_seed=0)
    >>> hr.K
    8
    >>> est = hr.estimate(hr.privatize(np.zeros(1000, dtype=int), rng=2))
    >>> bool(abs(est.counts[0] - 1000) < 5 * est.std[0])
    True
    """

    name = "hr"

    @property
    def K(self) -> int:  # noqa: N802 - the paper's symbol
        """The code length: the smallest power of two above ``domain_size``."""
        k = 1
        while k <= self.domain_size:
            k *= 2
        return k

    def output_sizes(self, eps: np.ndarray) -> np.ndarray:
        return np.full(eps.shape[0], self.K, dtype=np.int64)

    def variances(self, eps: np.ndarray) -> np.ndarray:
        return 1.0 / np.tanh(eps / 2.0) ** 2

    def held_variances(self, eps: np.ndarray) -> np.ndarray:
        return 1.0 / np.tanh(eps / 2.0) ** 2 - 1.0

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """Exact law: ``P[x, y]`` for all symbols ``x`` and columns ``y``."""
        K = self.K
        rows = np.repeat(np.arange(1, self.domain_size + 1), K)
        cols = np.tile(np.arange(K), self.domain_size)
        signs = hadamard_entries(rows, cols).reshape(self.domain_size, K)
        e = np.exp(eps)
        return np.where(signs > 0, 2 * e / (K * (e + 1)), 2 / (K * (e + 1)))

    def _count_channel(self, eps: float, statistic: str) -> CountChannel:
        """The column counts (``statistic="hits"``, exact) or the support counts (``"counts"``).

        ``"hits"``: the histogram of the ``K`` columns, multinomial with the
        law of :meth:`channel` (a ``"hadamard"`` channel): IBU on it is the
        exact maximum likelihood. ``"counts"``: ``S(v)``, the reports in
        ``v``'s half of the columns, ``S = (n + fwht(h)[v + 1]) / 2``, hit
        with probability ``e^eps / (e^eps + 1)`` by a holder of ``v`` and
        ``1/2`` by anyone else (the two halves of distinct symbols meet in
        ``K/4`` columns): what an estimate's counts determine; a report
        supports about half the symbols, so IBU on ``S`` maximizes its
        composite likelihood.
        """
        if statistic == "hits":
            return CountChannel.hadamard(self.domain_size, eps)
        return CountChannel.symmetric(self.domain_size, 1.0 / (1.0 + np.exp(-eps)), 0.5,
                                      exact=False)

    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        """Array layer of :meth:`privatize` (validated ``values`` and budgets)."""
        K = self.K
        n = values.shape[0]
        row = values.astype(np.int64) + 1
        inside = rng.random(n) < (np.exp(eps) / (np.exp(eps) + 1))
        # exact uniform draw from {j : H[row, j] = target}: draw j uniformly
        # with the lowest set bit t of row cleared, then set bit t to fix
        # the parity (flipping bit t flips (-1)^popcount(row & j)).
        low_bit = row & (-row)
        j = rng.integers(0, K, n) & ~low_bit
        parity = hadamard_entries(row, j)
        target = np.where(inside, 1, -1)
        return np.where(parity == target, j, j | low_bit).astype(np.int64)

    # ------------------------------------------------------------ server statistic
    def _stat_size(self):
        return self.K

    def weighted_sums(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                      lam: np.ndarray) -> tuple[ExactSum, ExactSum]:
        """Exact ``h(y) = sum_{i: y_i = y} lam_i / gamma_i`` per column ``y`` (offset zero).

        ``h`` is an :class:`~fastldp.streaming.ExactSum` over the ``K``
        columns (``ExactSum.add`` of the per-report terms); the counts are
        the fast Walsh-Hadamard transform of ``h`` rounded once
        (:meth:`weighted_counts`).
        """
        a, _ = self._report_terms(eps, lam)
        support = ExactSum(self.K)
        support.add(a, clean)
        return support, scalar_sum(np.zeros(0))

    def _report_terms(self, eps, lam):
        a = np.ascontiguousarray(lam / np.tanh(eps / 2.0), dtype=np.float64)
        return a, np.zeros_like(a)

    def weighted_counts(self, support: ExactSum, offset: ExactSum) -> np.ndarray:
        """``fwht(h)[1 : D + 1]`` of the rounded column sums (the offset is zero)."""
        return fwht(support.value())[1:self.domain_size + 1]

    def _hits(self, clean, identities):
        return np.bincount(clean, minlength=self.K)

    def _counts_from_hits(self, hits, n):
        return fwht(hits)[1:self.domain_size + 1] / np.tanh(self.epsilon / 2.0)

    # ------------------------------------------------------------ attacks (paper 000)
    def _column_scores(self, items, item_weights):
        c = np.zeros(self.K)
        np.add.at(c, np.asarray(items) + 1, item_weights)
        return fwht(c)  # score of output y: sum_v w_v H[v+1, y]

    def response_scores(self, eps: np.ndarray, identities: np.ndarray, items: np.ndarray,
                        item_weights: np.ndarray, reports: np.ndarray) -> np.ndarray:
        return self._column_scores(items, item_weights)[reports] / np.tanh(eps / 2.0)

    def best_response(self, eps: np.ndarray, identities: np.ndarray, items: np.ndarray,
                      item_weights: np.ndarray,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        scores = self._column_scores(items, item_weights)
        top = np.flatnonzero(scores == scores.max())
        outputs = top[rng.integers(0, top.shape[0], eps.shape[0])]
        return outputs.astype(np.int64), scores[outputs] / np.tanh(eps / 2.0)

    def random_outputs(self, eps: np.ndarray, identities: Optional[np.ndarray],
                       rng: np.random.Generator) -> np.ndarray:
        return np.asarray(rng.integers(0, self.K, eps.shape[0]), dtype=np.int64)
