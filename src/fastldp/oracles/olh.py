"""Optimized local hashing (OLH) on the counter-based hash.

Identity ``i`` hashes its symbol with its own public hash
``H_i : [D] -> [g]`` (the OLH stream of ``(codebook_seed, i)``, see
:mod:`fastldp._kernels._olh`) and reports the bucket through GRR over ``g``
buckets: ``p = e^eps / (e^eps + g - 1)``, every other bucket with
``(1 - p) / (g - 1)``. The server's estimate is
``c(v) = ([H_i(v) = y] - 1/g) / (p - 1/g)``: for a symbol not held,
``H_i(v)`` is independent of ``y`` and uniform, so ``P(H_i(v) = y) = 1/g``
(within ``2^-32``, see ``src/olh.h``). Variance
``(1/g)(1 - 1/g) / (p - 1/g)^2`` at a symbol not held,
``p (1 - p) / (p - 1/g)^2`` at the held one.

Buckets: ``g = round(e^eps) + 1`` (Wang et al.'s optimum), capped at
``2^32``: the hash maps a 32-bit lane onto ``g`` buckets by multiply-shift,
which reaches at most ``2^32`` buckets (exactly uniform at ``g = 2^32``).
The cap applies from ``eps ~ 22.2`` on, where the variance is already
``~ 4 / e^eps`` either way. OLH with any ``g`` is ``eps``-LDP.

The server sums ``[H_i(v) = y_i]`` over identities for all ``v`` with
:func:`~fastldp._kernels._olh.olh_support`: ``O(n D / 8)`` Philox blocks.
With personal budgets the weighted sums are kept exact (one unit-weight
pass per distinct weight, or two passes over integer limbs of the weights,
see :meth:`OLH.weighted_sums`), so a decode split into chunks is
bit-identical to the one-shot decode.
:class:`~fastldp.oracles.FLH` replaces the per-identity hashes by a public
pool of ``h`` hashes and brings this to ``O(n + h D)``.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally differentially private
   protocols for frequency estimation", USENIX Security 2017, section 4.4.
"""

from __future__ import annotations

from typing import Optional, cast

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._olh import olh_bucket_search, olh_buckets, olh_support
from ..streaming import ExactSum
from ._base import (
    CountChannel, FrequencyOracle, add_weighted_hits, fair_choice_among_max, scalar_sum,
)

__all__ = ["OLH", "olh_hash", "olh_hits", "olh_buckets_for", "hashed_grr", "MAX_BUCKETS"]

MAX_BUCKETS = 2**32  # the 32-bit lane of the OLH hash reaches at most 2^32 buckets


def olh_hash(seed: int, identities, items, g) -> np.ndarray:
    """``H_{identities[j]}(items[j])`` onto ``g`` (scalar or per-pair) buckets, int64.

    The one OLH hash of fastldp: OLH, FLH (identity = pool index) and the
    hashed sparse-vector mechanisms (Collision, Succinct) all call it.
    """
    items = np.ascontiguousarray(items, dtype=np.int64)
    g = np.broadcast_to(np.asarray(g, dtype=np.int64), items.shape)
    return olh_buckets(seed, np.ascontiguousarray(identities, dtype=np.uint64), items,
                       np.ascontiguousarray(g))


def olh_hits(seed: int, identities, reports, g, weights, domain_size: int,
             n_threads: int = 1) -> np.ndarray:
    """OLH's server sum ``sum_i weights[i] [H_i(v) = reports[i]]`` for every ``v < domain_size``.

    ``g`` and ``weights`` are scalars or per-report arrays. Bit-identical for
    any thread count (:func:`~fastldp._kernels._olh.olh_support`).
    """
    reports = np.ascontiguousarray(reports, dtype=np.int64)
    n = reports.shape[0]
    g = np.ascontiguousarray(np.broadcast_to(np.asarray(g, dtype=np.int64), (n,)))
    weights = np.ascontiguousarray(np.broadcast_to(np.asarray(weights, dtype=np.float64), (n,)))
    return olh_support(seed, np.ascontiguousarray(identities, dtype=np.uint64), reports, g,
                       weights, domain_size, n_threads)


def olh_buckets_for(eps) -> np.ndarray:
    """``g = min(round(e^eps) + 1, 2^32)`` per budget (int64)."""
    return (np.minimum(np.rint(np.exp(eps)), MAX_BUCKETS - 1) + 1).astype(np.int64)


def bucket_keep_probability(eps, g):
    """``p = e^eps / (e^eps + g - 1)``: GRR over ``g`` buckets."""
    e = np.exp(eps)
    return e / (e + g - 1)


def hashed_grr(seed: int, identities: np.ndarray, values: np.ndarray, g: np.ndarray, p,
               rng: np.random.Generator) -> np.ndarray:
    """Hash ``values[i]`` with ``H_{identities[i]}`` onto ``g[i]`` buckets and report it by GRR.

    The bucket is kept with probability ``p[i]``, otherwise replaced by one
    of the other ``g[i] - 1`` buckets uniformly. Shared by :class:`OLH`
    (one hash per identity) and FLH (the hash of a pool index).
    """
    n = values.shape[0]
    hashed = olh_hash(seed, identities, values, g)
    keep = rng.random(n) < p
    other = (rng.random(n) * (g - 1)).astype(np.int64)
    other = np.minimum(other, g - 2)
    other += other >= hashed
    np.copyto(other, hashed, where=keep)
    return other


class OLH(FrequencyOracle):
    """Optimized local hashing with ``g_i = min(round(e^eps_i) + 1, 2^32)`` buckets per identity.

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700] or None
    categories : list of labels or a pandas Categorical, optional
        Labels of the symbols: :meth:`privatize` then takes the labels and
        the results are labelled (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        Seed of the per-identity hashes ``H_i``.
    n_threads : int or None

    Notes
    -----
    Reports are int64 buckets in ``[0, g_i)``. The identities key the hashes,
    so the server must be given the same identities as the clients.

    Examples
    --------
    >>> import numpy as np
    >>> olh = OLH(epsilon=2.0, categories=["red", "green", "blue"], codebook_seed=7)
    >>> colours = np.repeat(["red", "green", "blue"], [6000, 3000, 1000])
    >>> est = olh.estimate(olh.privatize(colours, rng=1))
    >>> est.counts.shape, est.categories
    ((3,), ('red', 'green', 'blue'))
    >>> bool(np.all(np.abs(est.counts - [6000, 3000, 1000]) < 5 * est.std))
    True
    """

    name = "olh"
    uses_identities = True

    def buckets(self, eps: np.ndarray) -> np.ndarray:
        return olh_buckets_for(eps)

    def _p(self, eps, g):
        return bucket_keep_probability(eps, g)

    def output_sizes(self, eps: np.ndarray) -> np.ndarray:
        return self.buckets(eps)

    def variances(self, eps: np.ndarray) -> np.ndarray:
        g = self.buckets(eps)
        p = self._p(eps, g)
        return (1.0 / g) * (1 - 1.0 / g) / (p - 1.0 / g) ** 2

    def held_variances(self, eps: np.ndarray) -> np.ndarray:
        g = self.buckets(eps)
        p = self._p(eps, g)
        return p * (1 - p) / (p - 1.0 / g) ** 2

    def hash(self, identities: ArrayLike, items: ArrayLike, g: ArrayLike) -> np.ndarray:
        """``H_{identities[j]}(items[j])`` onto ``g[j]`` buckets (paired arrays)."""
        return olh_hash(self.codebook_seed, identities, items, g)

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """Exact law for one identity under the fixed codebook: ``P[x, y]``, y a bucket."""
        g = int(self.buckets(np.array([eps]))[0])
        p = float(self._p(np.array([eps]), g)[0])
        hashed = self.hash(np.full(self.domain_size, identity, dtype=np.uint64),
                           np.arange(self.domain_size), np.full(self.domain_size, g))
        law = np.full((self.domain_size, g), (1 - p) / (g - 1))
        law[np.arange(self.domain_size), hashed] = p
        return law

    def _count_channel(self, eps: float, statistic: str) -> CountChannel:
        """The support counts ``#{i : H_i(v) = y_i}``: ``p`` for a holder of ``v``, ``1/g`` else.

        ``1/g`` is the probability that another symbol hashes onto the
        report's bucket (within ``2^-32``, module docstring). A report
        supports about ``D / g`` symbols, so IBU on the counts maximizes
        their composite likelihood, not the exact likelihood of the reports.
        """
        g = int(self.buckets(np.array([eps]))[0])
        p = float(self._p(np.array([eps]), g)[0])
        return CountChannel.symmetric(self.domain_size, p, 1.0 / g, exact=False)

    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        """Array layer of :meth:`privatize` (validated ``values`` and budgets)."""
        g = self.buckets(eps)
        ids = cast(np.ndarray, identities)  # OLH always resolves them: they key the hashes
        return hashed_grr(self.codebook_seed, ids, values, g, self._p(eps, g), rng)

    def support(self, reports: np.ndarray, identities: np.ndarray, g: ArrayLike,
                weights: ArrayLike) -> np.ndarray:
        """``sum_i weights[i] [H_i(v) = reports[i]]`` for every symbol ``v``."""
        return olh_hits(self.codebook_seed, identities, reports, g, weights, self.domain_size,
                        self.n_threads)

    # ------------------------------------------------------------ server statistic
    def weighted_sums(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                      lam: np.ndarray) -> tuple[ExactSum, ExactSum]:
        """Exact ``sum_i a_i [H_i(v) = y_i]`` per symbol and ``-sum_i a_i / g_i``.

        ``a_i = lam_i / (p_i - 1/g_i)``. The support kernel sums floats, so
        it runs on unit weights per distinct ``a_i`` or on integer limbs of
        the ``a_i`` (:func:`~fastldp.oracles._base.add_weighted_hits`), and
        its exact integer sums go into an
        :class:`~fastldp.streaming.ExactSum`; the offset is an ``ExactSum``
        of the per-report terms.
        """
        g = self.buckets(eps)
        a, c = self._report_terms(eps, lam)
        support = ExactSum(self.domain_size)

        def hits(members, w):
            if members is None:
                y, ids, gm = clean, identities, g
            else:
                y, ids, gm = clean[members], identities[members], g[members]
            return self.support(y, ids, gm, np.ones(y.shape[0]) if w is None else w)

        add_weighted_hits(support, a, hits)
        return support, scalar_sum(c)

    def _report_terms(self, eps, lam):
        g = self.buckets(eps)
        a = np.ascontiguousarray(lam / (self._p(eps, g) - 1.0 / g), dtype=np.float64)
        return a, -(a / g)

    def _hits(self, clean, identities):
        n = clean.shape[0]
        g = int(self.buckets(np.array([self.epsilon]))[0])
        # unit weights: every float sum of the kernel is an exact integer
        return self.support(clean, identities, np.full(n, g, dtype=np.int64), np.ones(n))

    def _counts_from_hits(self, hits, n):
        g = int(self.buckets(np.array([self.epsilon]))[0])
        p = float(self._p(np.array([self.epsilon]), g)[0])
        return (hits - n / g) / (p - 1.0 / g)

    # ------------------------------------------------------------ attacks (paper 000)
    def response_scores(self, eps: np.ndarray, identities: np.ndarray, items: np.ndarray,
                        item_weights: np.ndarray, reports: np.ndarray) -> np.ndarray:
        g = self.buckets(eps)
        p = self._p(eps, g)
        total = float(np.sum(item_weights))
        n = identities.shape[0]
        # items hashed for every identity: n x |items|
        hit = olh_buckets(self.codebook_seed, np.repeat(identities, items.shape[0]),
                          np.tile(items, n), np.repeat(g, items.shape[0])).reshape(n, -1)
        mass = np.where(hit == reports[:, None], item_weights[None, :], 0.0).sum(axis=1)
        return (mass - total / g) / (p - 1.0 / g)

    def best_response(self, eps: np.ndarray, identities: np.ndarray, items: np.ndarray,
                      item_weights: np.ndarray,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """Exhaustive scan of every legal bucket (bucket-search kernel), fair ties."""
        g = self.buckets(eps)
        p = self._p(eps, g)
        items = np.asarray(items, dtype=np.int64)
        item_weights = np.asarray(item_weights, dtype=np.float64)
        best, best_mass, n_max = olh_bucket_search(
            self.codebook_seed, identities, g, items, item_weights, self.n_threads)
        tied = np.flatnonzero(n_max > 1)
        if tied.size:
            # full score table of the tied identities, then a uniform pick
            gt = g[tied]
            width = int(gt.max())
            hit = olh_buckets(self.codebook_seed, np.repeat(identities[tied], items.shape[0]),
                              np.tile(items, tied.shape[0]),
                              np.repeat(gt, items.shape[0])).reshape(tied.shape[0], -1)
            table = np.zeros((tied.shape[0], width))
            rows = np.repeat(np.arange(tied.shape[0]), items.shape[0])
            np.add.at(table, (rows, hit.ravel()), np.tile(item_weights, tied.shape[0]))
            table[np.arange(width)[None, :] >= gt[:, None]] = -np.inf
            best[tied] = fair_choice_among_max(table, rng)
        total = float(np.sum(item_weights))
        return best, (best_mass - total / g) / (p - 1.0 / g)

    def random_outputs(self, eps: np.ndarray, identities: Optional[np.ndarray],
                       rng: np.random.Generator) -> np.ndarray:
        g = self.buckets(eps)
        return np.minimum((rng.random(eps.shape[0]) * g).astype(np.int64), g - 1)
