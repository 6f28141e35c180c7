"""Frequency oracles with personal budgets: GRR, OLH and Hadamard response.

Each oracle privatizes one symbol ``x in [0, D)`` per identity at that
identity's own ``eps_i`` and gives the server, per identity, an unbiased
estimate ``c_i(v)`` of the indicator ``[x_i = v]`` for every ``v``. The
oracles are linear: the server's estimate is ``sum_i lambda_i c_i(v)``, and a
report's contribution to any linear objective ``sum_v w_v c_i(v)`` has a
closed form, which is what the optimized attacks maximize.

Variance-optimal weights
------------------------
For a symbol ``v`` the identity does not hold, ``c_i(v)`` has variance
``sigma_i^2`` that depends only on ``eps_i`` (and ``D``). Among unbiased
combinations ``sum_i lambda_i c_i / sum_i lambda_i`` the variance
``sum lambda_i^2 sigma_i^2 / (sum lambda_i)^2`` is minimized by
``lambda_i = 1 / sigma_i^2`` (Cauchy-Schwarz); with equal budgets every
``lambda_i`` is equal and the combination is the plain mean. The variance at
the symbol an identity holds differs by a term of order ``1 / D`` relative,
which is ignored in the weights (it depends on private data).

* GRR: ``p = e^eps / (e^eps + D - 1)``, ``q = 1 / (e^eps + D - 1)``,
  ``c(v) = ([y = v] - q) / (p - q)``, ``sigma^2 = q (1 - q) / (p - q)^2``.
* OLH: ``g = round(e^eps) + 1`` buckets, hash ``H_i`` from the counter-based
  hash, ``p = e^eps / (e^eps + g - 1)``,
  ``c(v) = ([H_i(v) = y] - 1/g) / (p - 1/g)``,
  ``sigma^2 = (1/g)(1 - 1/g) / (p - 1/g)^2``.
* HR (symmetric Hadamard response, Acharya, Sun and Zhang, AISTATS 2019,
  the construction with half-size sets, used at every budget): ``K`` is the
  smallest power of two ``> D``; symbol ``x`` owns the ``K/2`` columns ``j``
  with ``H_K[x + 1, j] = +1``; the output is uniform on that set with
  probability ``e^eps / (e^eps + 1)`` and uniform on its complement
  otherwise. Then ``c(v) = H_K[v + 1, y] / gamma`` with
  ``gamma = tanh(eps / 2)``, ``sigma^2 = 1 / gamma^2``, and the server sums
  all identities with one fast Walsh-Hadamard transform.

Malformed reports are replaced by a public uniformly random legal output
keyed by ``(codebook seed, identity)`` and counted by reason:
``non_numeric`` (strings, None, objects), ``non_integer`` (NaN, +-inf,
fractions) and ``out_of_range`` (integers outside the identity's outputs).
"""

from __future__ import annotations


import numpy as np

from .._kernels._hadamard import fwht, hadamard_entries
from .._kernels._hash import SANITIZE_STREAM, hash_blocks
from .._kernels._olh import olh_bucket_search, olh_buckets, olh_support
from .._sanitize import SanitizationReport

__all__ = ["GRR", "OLH", "HadamardResponse", "FrequencyOracle", "ORACLES"]


def _fair_choice_among_max(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row-wise argmax with a uniformly random tie-break."""
    top = scores.max(axis=1, keepdims=True)
    noise = rng.random(scores.shape)
    return np.argmax(np.where(scores == top, noise, -1.0), axis=1)


def _public_uniform(seed: int, identities: np.ndarray, sizes: np.ndarray) -> np.ndarray:
    """A public uniform value in [0, sizes[j]) per identity (multiply-shift of a hash word)."""
    words = hash_blocks(seed, identities, 1, SANITIZE_STREAM)[:, 0, 1]
    hi = (words >> np.uint64(32)).astype(np.float64)
    return np.minimum((hi / 2.0**32 * sizes).astype(np.int64), sizes - 1)


class FrequencyOracle:
    """Shared machinery: sanitization of integer reports and weights."""

    name = "oracle"

    def __init__(self, domain_size: int, codebook_seed: int, n_threads: int = 1):
        self.domain_size = int(domain_size)
        self.codebook_seed = int(codebook_seed)
        self.n_threads = int(n_threads)

    # subclasses implement
    def output_sizes(self, eps: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def variances(self, eps: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def weights(self, eps: np.ndarray) -> np.ndarray:
        """Variance-optimal weights ``lambda_i = 1 / sigma_i^2``."""
        return 1.0 / self.variances(eps)

    def sanitize(self, reports, eps: np.ndarray, identities: np.ndarray, owner: str):
        """Replace illegal reports by a public uniform legal output; count them."""
        n = eps.shape[0]
        arr = np.asarray(reports) if not isinstance(reports, np.ndarray) else reports
        if arr.ndim != 1 or arr.shape[0] != n:
            raise ValueError(
                f"The 'reports' parameter of {owner} must be a 1-d array with one report per "
                f"budget ({n}). Got shape {arr.shape} instead."
            )
        sizes = self.output_sizes(eps)
        wrong_dtype = arr.dtype.kind not in "iu"
        if arr.dtype.kind in "iu":
            values = arr.astype(np.int64)
            numeric = np.ones(n, dtype=bool)
            integral = numeric
        else:
            with np.errstate(invalid="ignore"):
                try:
                    as_float = arr.astype(np.float64)
                    numeric = np.ones(n, dtype=bool)
                except (TypeError, ValueError):
                    as_float = np.array([_to_float(v) for v in arr], dtype=np.float64)
                    numeric = ~np.isnan(as_float) | np.array([_is_nan_number(v) for v in arr])
            finite = np.isfinite(as_float)
            integral = finite & (np.floor(np.where(finite, as_float, 0)) == np.where(finite, as_float, 0))
            values = np.where(integral, as_float, -1).astype(np.int64)
        legal = integral & (values >= 0) & (values < sizes)
        out = values.copy()
        bad = ~legal
        if bad.any():
            out[bad] = _public_uniform(self.codebook_seed, identities[bad], sizes[bad])
        by_reason = {
            "non_numeric": int((~numeric).sum()),
            "non_integer": int((numeric & ~integral).sum()),
            "out_of_range": int((integral & ~legal).sum()),
        }
        return out, SanitizationReport(n, int(legal.sum()), by_reason, wrong_dtype)


def _to_float(v) -> float:
    if isinstance(v, (str, bytes, complex)) or v is None:
        return float("nan")
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


def _is_nan_number(v) -> bool:
    try:
        return isinstance(v, (float, np.floating)) and v != v
    except TypeError:
        return False


class GRR(FrequencyOracle):
    """Generalized randomized response over ``D`` symbols (one per identity budget)."""

    name = "grr"

    def _pq(self, eps):
        e = np.exp(eps)
        denom = e + self.domain_size - 1
        return e / denom, 1.0 / denom

    def output_sizes(self, eps):
        return np.full(eps.shape[0], self.domain_size, dtype=np.int64)

    def variances(self, eps):
        p, q = self._pq(eps)
        return q * (1 - q) / (p - q) ** 2

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """Exact law: ``P[x, y]`` for all symbols ``x`` and outputs ``y``."""
        p, q = self._pq(np.array([eps]))
        law = np.full((self.domain_size, self.domain_size), q[0])
        np.fill_diagonal(law, p[0])
        return law

    def privatize(self, values, eps, identities, rng):
        p, _ = self._pq(eps)
        keep = rng.random(values.shape[0]) < p
        # an other symbol, uniform among the D - 1 that are not x
        other = rng.integers(0, self.domain_size - 1, values.shape[0])
        other = other + (other >= values)
        return np.where(keep, values, other).astype(np.int64)

    def aggregate(self, reports, eps, identities, lam):
        """``sum_i lam_i c_i(v)`` for all v."""
        p, q = self._pq(eps)
        a = lam / (p - q)
        counts = np.bincount(reports, weights=a, minlength=self.domain_size)
        return counts - float(np.sum(a * q))

    def _item_vector(self, items, item_weights):
        w_full = np.zeros(self.domain_size)
        np.add.at(w_full, np.asarray(items), item_weights)
        return w_full

    def response_scores(self, eps, identities, items, item_weights, reports):
        """``sum_v w_v c_i(v; y_i)`` for the given reports ``y_i``."""
        p, q = self._pq(eps)
        total = float(np.sum(item_weights))
        return (self._item_vector(items, item_weights)[reports] - q * total) / (p - q)

    def best_response(self, eps, identities, items, item_weights, rng):
        """Outputs maximizing ``sum_v w_v c_i(v; y)`` (a fair pick among maximizers)."""
        p, q = self._pq(eps)
        total = float(np.sum(item_weights))
        w_full = self._item_vector(items, item_weights)
        top = np.flatnonzero(w_full == w_full.max())
        outputs = top[rng.integers(0, top.shape[0], eps.shape[0])].astype(np.int64)
        return outputs, (w_full[outputs] - q * total) / (p - q)

    def random_outputs(self, eps, identities, rng):
        return rng.integers(0, self.domain_size, eps.shape[0]).astype(np.int64)


class OLH(FrequencyOracle):
    """Optimized local hashing with ``g_i = round(e^eps_i) + 1`` buckets per identity."""

    name = "olh"

    def buckets(self, eps):
        return (np.rint(np.exp(eps)) + 1).astype(np.int64)

    def _p(self, eps, g):
        e = np.exp(eps)
        return e / (e + g - 1)

    def output_sizes(self, eps):
        return self.buckets(eps)

    def variances(self, eps):
        g = self.buckets(eps)
        p = self._p(eps, g)
        return (1.0 / g) * (1 - 1.0 / g) / (p - 1.0 / g) ** 2

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """Exact law for one identity under the fixed codebook: ``P[x, y]``, y a bucket."""
        g = int(self.buckets(np.array([eps]))[0])
        p = float(self._p(np.array([eps]), g)[0])
        ids = np.full(self.domain_size, identity, dtype=np.uint64)
        hashed = olh_buckets(self.codebook_seed, ids, np.arange(self.domain_size, dtype=np.int64),
                             np.full(self.domain_size, g, dtype=np.int64))
        law = np.full((self.domain_size, g), (1 - p) / (g - 1))
        law[np.arange(self.domain_size), hashed] = p
        return law

    def privatize(self, values, eps, identities, rng):
        g = self.buckets(eps)
        p = self._p(eps, g)
        hashed = olh_buckets(self.codebook_seed, identities, values.astype(np.int64), g)
        keep = rng.random(values.shape[0]) < p
        other = (rng.random(values.shape[0]) * (g - 1)).astype(np.int64)
        other = np.minimum(other, g - 2)
        other = other + (other >= hashed)
        return np.where(keep, hashed, other).astype(np.int64)

    def aggregate(self, reports, eps, identities, lam):
        g = self.buckets(eps)
        p = self._p(eps, g)
        a = lam / (p - 1.0 / g)
        support = olh_support(self.codebook_seed, identities, reports.astype(np.int64), g, a,
                              self.domain_size, self.n_threads)
        return support - float(np.sum(a / g))

    def response_scores(self, eps, identities, items, item_weights, reports):
        g = self.buckets(eps)
        p = self._p(eps, g)
        total = float(np.sum(item_weights))
        n = identities.shape[0]
        # items hashed for every identity: n x |items|
        hit = olh_buckets(self.codebook_seed, np.repeat(identities, items.shape[0]),
                          np.tile(items, n), np.repeat(g, items.shape[0])).reshape(n, -1)
        mass = np.where(hit == reports[:, None], item_weights[None, :], 0.0).sum(axis=1)
        return (mass - total / g) / (p - 1.0 / g)

    def best_response(self, eps, identities, items, item_weights, rng):
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
            best[tied] = _fair_choice_among_max(table, rng)
        total = float(np.sum(item_weights))
        return best, (best_mass - total / g) / (p - 1.0 / g)

    def random_outputs(self, eps, identities, rng):
        g = self.buckets(eps)
        return np.minimum((rng.random(eps.shape[0]) * g).astype(np.int64), g - 1)


class HadamardResponse(FrequencyOracle):
    """Symmetric Hadamard response: ``K`` = next power of two above ``D``."""

    name = "hr"

    @property
    def K(self) -> int:
        k = 1
        while k <= self.domain_size:
            k *= 2
        return k

    def output_sizes(self, eps):
        return np.full(eps.shape[0], self.K, dtype=np.int64)

    def variances(self, eps):
        return 1.0 / np.tanh(eps / 2.0) ** 2

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        K = self.K
        rows = np.repeat(np.arange(1, self.domain_size + 1), K)
        cols = np.tile(np.arange(K), self.domain_size)
        signs = hadamard_entries(rows, cols).reshape(self.domain_size, K)
        e = np.exp(eps)
        return np.where(signs > 0, 2 * e / (K * (e + 1)), 2 / (K * (e + 1)))

    def privatize(self, values, eps, identities, rng):
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

    def aggregate(self, reports, eps, identities, lam):
        gamma = np.tanh(eps / 2.0)
        h = np.bincount(reports, weights=lam / gamma, minlength=self.K).astype(np.float64)
        return fwht(h)[1:self.domain_size + 1]

    def _column_scores(self, items, item_weights):
        c = np.zeros(self.K)
        np.add.at(c, np.asarray(items) + 1, item_weights)
        return fwht(c)  # score of output y: sum_v w_v H[v+1, y]

    def response_scores(self, eps, identities, items, item_weights, reports):
        return self._column_scores(items, item_weights)[reports] / np.tanh(eps / 2.0)

    def best_response(self, eps, identities, items, item_weights, rng):
        scores = self._column_scores(items, item_weights)
        top = np.flatnonzero(scores == scores.max())
        outputs = top[rng.integers(0, top.shape[0], eps.shape[0])]
        return outputs.astype(np.int64), scores[outputs] / np.tanh(eps / 2.0)

    def random_outputs(self, eps, identities, rng):
        return rng.integers(0, self.K, eps.shape[0]).astype(np.int64)


ORACLES = {"grr": GRR, "olh": OLH, "hr": HadamardResponse}
