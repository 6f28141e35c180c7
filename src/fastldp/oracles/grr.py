"""Generalized randomized response (GRR, also called direct encoding or k-RR).

``p = e^eps / (e^eps + D - 1)``, ``q = 1 / (e^eps + D - 1)``: the true symbol
with probability ``p``, each other symbol with probability ``q``. The
per-identity estimate is ``c(v) = ([y = v] - q) / (p - q)`` with variance
``q (1 - q) / (p - q)^2`` at a symbol not held and ``p (1 - p) / (p - q)^2``
at the held one.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally differentially private
   protocols for frequency estimation", USENIX Security 2017, section 4.1.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..streaming import ExactSum
from ._base import CountChannel, FrequencyOracle, scalar_sum

__all__ = ["GRR"]


class GRR(FrequencyOracle):
    """Generalized randomized response over ``D`` symbols, with personal budgets.

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700] or None
    categories : list of labels or a pandas Categorical, optional
        Labels of the symbols: :meth:`privatize` then takes the labels and
        the results are labelled (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        Only keys the sanitization coins (GRR has no public hash).
    n_threads : int or None

    Notes
    -----
    Reports are int64 symbols in ``[0, D)``.

    Examples
    --------
    >>> grr = GRR(domain_size=6, epsilon=1.0, codebook_seed=0)
    >>> est = grr.estimate(grr.privatize([0, 1, 1, 5], rng=0))
    >>> est.counts.shape
    (6,)

    With labels:

    >>> grr = GRR(epsilon=1.0, categories=["cat", "dog"], codebook_seed=0)
    >>> est = grr.estimate(grr.privatize(["dog", "dog", "cat"], rng=0))
    >>> est.categories, est.n
    (('cat', 'dog'), 3)
    """

    name = "grr"

    def _pq(self, eps):
        e = np.exp(eps)
        denom = e + self.domain_size - 1
        return e / denom, 1.0 / denom

    def output_sizes(self, eps: np.ndarray) -> np.ndarray:
        return np.full(eps.shape[0], self.domain_size, dtype=np.int64)

    def variances(self, eps: np.ndarray) -> np.ndarray:
        p, q = self._pq(eps)
        return q * (1 - q) / (p - q) ** 2

    def held_variances(self, eps: np.ndarray) -> np.ndarray:
        p, q = self._pq(eps)
        return p * (1 - p) / (p - q) ** 2

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """Exact law: ``P[x, y]`` for all symbols ``x`` and outputs ``y``."""
        p, q = self._pq(np.array([eps]))
        law = np.full((self.domain_size, self.domain_size), q[0])
        np.fill_diagonal(law, p[0])
        return law

    def _count_channel(self, eps: float, statistic: str) -> CountChannel:
        """The histogram of the reports: ``p`` on the diagonal, ``q`` elsewhere (exact).

        Each report is one symbol, so the histogram is a multinomial sample
        and sufficient: IBU on it is the exact maximum likelihood.
        """
        p, q = (float(v[0]) for v in self._pq(np.array([eps])))
        return CountChannel.symmetric(self.domain_size, p, q, exact=True)

    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        """Array layer of :meth:`privatize` (validated ``values`` and budgets)."""
        p, _ = self._pq(eps)
        keep = rng.random(values.shape[0]) < p
        # an other symbol, uniform among the D - 1 that are not x
        out = rng.integers(0, self.domain_size - 1, values.shape[0], dtype=np.int64)
        out += out >= values
        np.copyto(out, values, where=keep)
        return out

    # ------------------------------------------------------------ server statistic
    def weighted_sums(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                      lam: np.ndarray) -> tuple[ExactSum, ExactSum]:
        """Exact ``sum_{i: y_i = v} a_i`` per symbol and ``-sum_i a_i q_i``.

        ``a_i = lam_i / (p_i - q_i)``.
        Both are :class:`~fastldp.streaming.ExactSum` s (``ExactSum.add`` of
        the per-report terms, ``O(n)``).
        """
        a, c = self._report_terms(eps, lam)
        support = ExactSum(self.domain_size)
        support.add(a, clean)
        return support, scalar_sum(c)

    def _report_terms(self, eps, lam):
        p, q = self._pq(eps)
        a = np.ascontiguousarray(lam / (p - q), dtype=np.float64)
        return a, -(a * q)

    def _hits(self, clean, identities):
        return np.bincount(clean, minlength=self.domain_size)

    def _counts_from_hits(self, hits, n):
        p, q = (float(v[0]) for v in self._pq(np.array([self.epsilon])))
        return (hits - n * q) / (p - q)

    def _fast_hits(self, reports, n, identities, owner):
        # The maximum first (a report far above D must not size bincount's output),
        # then bincount, which raises on a negative report. Anything else takes the
        # general path.
        if not (isinstance(reports, np.ndarray) and reports.ndim == 1 and reports.shape[0] == n
                and n and reports.dtype.kind in "iu" and reports.dtype.itemsize <= 8):
            return None
        if reports.max() >= self.domain_size:
            return None
        try:
            return np.bincount(reports, minlength=self.domain_size)
        except (ValueError, TypeError):  # negative reports, or uint64 beyond int64
            return None

    # ------------------------------------------------------------ attacks (paper 000)
    def _item_vector(self, items, item_weights):
        w_full = np.zeros(self.domain_size)
        np.add.at(w_full, np.asarray(items), item_weights)
        return w_full

    def response_scores(self, eps: np.ndarray, identities: np.ndarray, items: np.ndarray,
                        item_weights: np.ndarray, reports: np.ndarray) -> np.ndarray:
        """``sum_v w_v c_i(v; y_i)`` for the given reports ``y_i``."""
        p, q = self._pq(eps)
        total = float(np.sum(item_weights))
        return (self._item_vector(items, item_weights)[reports] - q * total) / (p - q)

    def best_response(self, eps: np.ndarray, identities: np.ndarray, items: np.ndarray,
                      item_weights: np.ndarray,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Outputs maximizing ``sum_v w_v c_i(v; y)`` (a fair pick among maximizers)."""
        p, q = self._pq(eps)
        total = float(np.sum(item_weights))
        w_full = self._item_vector(items, item_weights)
        top = np.flatnonzero(w_full == w_full.max())
        outputs = top[rng.integers(0, top.shape[0], eps.shape[0])].astype(np.int64)
        return outputs, (w_full[outputs] - q * total) / (p - q)

    def random_outputs(self, eps: np.ndarray, identities: Optional[np.ndarray],
                       rng: np.random.Generator) -> np.ndarray:
        return np.asarray(rng.integers(0, self.domain_size, eps.shape[0]), dtype=np.int64)
