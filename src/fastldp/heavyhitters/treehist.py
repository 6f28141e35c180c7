"""TreeHist (Bassily, Nissim, Stemmer, Thakurta): a pruned prefix tree over a Hadamard oracle.

The items' ``m`` bits are read as a prefix tree: level ``l`` (``l = 0 ..
g-1``) holds the prefixes of

    b_l = m - (g - 1 - l) * eta  bits,   g = ceil(m / eta),   b_{g-1} = m

(``eta = 1``, the paper's binary tree, by default; ``b_0`` in ``[1, eta]``).
Every user sends one report of two parts, each at budget ``eps / 2`` (so the
report is ``eps``-LDP by composition):

1. **the prefix part**: the user's public level ``l(i) = (h_i g) >> 32``
   (``h_i`` a public 32-bit hash of ``(codebook_seed, i)``, the PEM split,
   :func:`~fastldp._kernels._heavy.heavy_groups`) and the prefix of ``b_l(i)``
   bits of the item, through the paper's Hadamard frequency oracle;
2. **the item part**: the whole item, through the same oracle with other hash
   functions, which the server uses to count the heavy hitters it found (the
   paper's final frequency-oracle step; pure-ldp's ``TreeHistServer`` splits the
   budget the same way).

The frequency oracle (the Hashtogram of the paper [1], which is Apple's HCMS
law [2], :class:`fastldp.oracles.HCMS`): ``R`` public hash functions
``h_j : {0,1}^b -> [T]`` (``T`` a power of two; ``h_j`` is the OLH hash of
identity ``t R + j`` under the codebook seed, ``t`` the level, ``t = g`` for the
item part, :func:`~fastldp._kernels._heavy.heavy_buckets`). A user draws a row
``j ~ U[R]`` and a Hadamard row ``l ~ U[T]`` and sends ``(j, l, omega)`` with
``omega = H_T[l, h_j(x)]`` (Sylvester order) flipped with probability
``1 / (1 + e^(eps/2))``. With ``c = (e^(eps/2) + 1) / (e^(eps/2) - 1)`` and
``r = T / (T - 1)``, the count of a candidate ``v`` among the ``n_t`` reports
of the level is

    f_t(v) = r (c sum_j F_t[j, h_j(v)] - n_t / T),   F_t = Z_t H_T,

``Z_t[j, l]`` the sum of ``omega`` over the level's reports at ``(j, l)``
(integers: a split of the reports into chunks sums to the same table, so the
decode is bit-identical for any chunking). A report of a user holding ``x``
adds ``r (kappa - 1/T)`` in mean (``kappa`` the fraction of the ``R`` hashes on
which ``x`` and ``v`` collide) and has variance ``r^2 (c^2 - kappa^2)``
(:mod:`fastldp.oracles.cms`).

The server (the paper's TreeHist): at level 0 every ``2^b_0`` prefix is a
candidate; at level ``l > 0`` the candidates are the children
(``eta``-bit extensions) of the prefixes kept at level ``l - 1``. A
candidate's population count is ``(n / n_l) f_l(v)``; it is kept when that
count is at least ``threshold * sigma_l``, with

    sigma_l = (n / n_l) r sqrt(n_l (c^2 - 1/T^2 - (1/T)(1 - 1/T) / R)),

the standard deviation of the count of a prefix nobody holds (the paper's
pruning: a prefix whose estimate clears the noise level; the paper's
threshold grows like ``sqrt(n log(d / beta)) / eps``, here
``threshold = 3`` standard deviations by default). To bound the server's
work, at most ``c * k`` prefixes (the largest) are kept per level; the paper
keeps every prefix above the threshold, which is at most ``O(sqrt(n))`` of
them with high probability. The prefixes kept at the last level
(``b = m``: whole items) are counted by the item part over all ``n``
reports, ``f(v) = r (c sum_j F_g[j, h_j(v)] - n / T)``, and the top ``k``
by that count (ties: the smaller code) are the result, so fewer than ``k``
are returned when fewer clear the threshold.

Variance of a final count (plug-in, ``f`` clipped to ``[0, n]``; the
collision term averaged over random hashes, as :class:`~fastldp.oracles.HCMS`
does):

    Var f(v) = r^2 (f (c^2 - 1) + (n - f)(c^2 - 1/T^2 - (1/T)(1 - 1/T) / R)).

Reports are int64 rows ``(j, l, omega, j', l', omega')``: the prefix part,
then the item part. The level of a report is public (a function of the
identity), so it is not sent. A part that is not a legal triple
(``j in [0, R)``, ``l in [0, T)``, ``omega = +-1``) is replaced by the legal
triple ``(0, 0, s)`` with a public fair sign ``s``: ``H_T[0, .] = 1``, so it is
uncorrelated with every candidate (it adds ``-r/T`` to each count, as a
report of an item that collides with none does), and counted in the
sanitization report.

References
----------
.. [1] R. Bassily, K. Nissim, U. Stemmer, A. Thakurta, "Practical locally
   private heavy hitters", NeurIPS 2017 (arXiv:1707.04982): TreeHist and the
   Hashtogram frequency oracle.
.. [2] Differential Privacy Team, Apple, "Learning with Privacy at Scale",
   Apple Machine Learning Journal 1(8), 2017 (HCMS).
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .._kernels._cms import hcms_counts
from .._kernels._hadamard import hadamard_entries
from .._kernels._heavy import heavy_buckets, heavy_groups
from .._sanitize import SanitizationReport
from .._validation import check_float, check_int, param_error
from ..oracles._base import (
    all_legal_report, as_report_array, classify_integers, public_uniform,
)
from ..oracles.cms import c_eps, fwht_rows
from ._base import Chunks, HeavyHitterProtocol
from .items import extend

__all__ = ["TreeHist", "hadamard_fo_perturb", "hadamard_fo_table", "hadamard_fo_counts",
           "hadamard_fo_law", "sanitize_triples", "all_legal_rows", "fo_hash"]

#: the largest ``R T`` of one oracle table
MAX_TABLE_CELLS = 1 << 22


# ---------------------------------------------------------------- the Hadamard oracle
def fo_hash(seed: int, hash_ids: Any, codes: Any, n_columns: int) -> np.ndarray:
    """``h_{hash_ids[t]}(codes[t])`` in ``[0, n_columns)`` (int64; uint64 codes)."""
    codes = np.ascontiguousarray(codes, dtype=np.uint64)
    ids = np.ascontiguousarray(np.broadcast_to(np.asarray(hash_ids, dtype=np.uint64),
                                               codes.shape))
    return heavy_buckets(seed, ids, codes, np.full(codes.shape[0], n_columns, dtype=np.int64))


def hadamard_fo_perturb(seed: int, codes: np.ndarray, hash_base: Any, n_rows: int,
                        n_columns: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
    """The oracle's client (module docstring): ``(n, 3)`` int64 rows ``(j, l, omega)``.

    ``hash_base`` (scalar or per code) offsets the hash identity:
    ``h_j`` is the OLH hash of identity ``hash_base + j``.
    """
    n = codes.shape[0]
    rows = np.asarray(rng.integers(0, n_rows, n, dtype=np.int64))
    cols = np.asarray(rng.integers(0, n_columns, n, dtype=np.int64))
    base = np.asarray(hash_base, dtype=np.uint64)
    h = fo_hash(seed, base + rows.astype(np.uint64), codes, n_columns)
    w = hadamard_entries(cols, h).astype(np.int64)
    flip = rng.random(n) < 1.0 / (math.exp(epsilon) + 1.0)
    return np.stack([rows, cols, np.where(flip, -w, w)], axis=1)


def hadamard_fo_table(triples: np.ndarray, n_rows: int, n_columns: int) -> np.ndarray:
    """``Z[j, l]``: the integer sum of ``omega`` over the (legal) triples at ``(j, l)``."""
    if triples.shape[0] == 0:
        return np.zeros((n_rows, n_columns), dtype=np.int64)
    z = hcms_counts(np.ascontiguousarray(triples, dtype=np.int64), n_rows, n_columns, True)
    if z is None:  # pragma: no cover - sanitized triples are legal
        raise ValueError("the Hadamard oracle's table needs legal triples")
    return np.asarray(z, dtype=np.int64).reshape(n_rows, n_columns)


def hadamard_fo_counts(seed: int, table: np.ndarray, n_reports: int, hash_base: int,
                       epsilon: float, candidates: np.ndarray) -> np.ndarray:
    """``f(v) = r (c sum_j F[j, h_j(v)] - n / T)``, ``F = Z H_T`` (module docstring)."""
    R, T = table.shape
    cands = np.ascontiguousarray(candidates, dtype=np.uint64)
    if cands.shape[0] == 0:
        return np.zeros(0)
    F = fwht_rows(table)  # integers of magnitude <= n: exact in float64
    total = np.zeros(cands.shape[0])
    for j in range(R):
        total += F[j, fo_hash(seed, hash_base + j, cands, T)]
    c = float(c_eps(epsilon))
    return (T / (T - 1.0)) * (c * total - n_reports / T)


def hadamard_fo_law(seed: int, hash_base: int, n_rows: int, n_columns: int, epsilon: float,
                    codes: np.ndarray) -> np.ndarray:
    """Exact law ``P[i, 2 (j T + l) + (omega + 1) / 2]`` of the oracle's report of ``codes[i]``.

    ``P = (1 - q) / (R T)`` where ``omega = H_T[l, h_j(x)]``, else ``q / (R T)``,
    ``q = 1 / (1 + e^eps)``; the hashes are public (fixed by the seed).
    """
    R, T = n_rows, n_columns
    size = codes.shape[0]
    q = 1.0 / (math.exp(epsilon) + 1.0)
    law = np.empty((size, R, T, 2))
    ls = np.arange(T, dtype=np.int64)
    for j in range(R):
        h = fo_hash(seed, hash_base + j, codes, T)
        w = hadamard_entries(np.tile(ls, size), np.repeat(h, T)).reshape(size, T)
        law[:, j, :, 1] = np.where(w > 0, 1 - q, q) / (R * T)
        law[:, j, :, 0] = np.where(w < 0, 1 - q, q) / (R * T)
    return law.reshape(size, 2 * R * T)


def all_legal_rows(arr: np.ndarray, n_rows: int, n_columns: int) -> bool:
    """Whether an integer ``(n, 6)`` array holds two legal triples in every row (the fast path)."""
    if arr.dtype.kind not in "iu" or arr.dtype.itemsize > 8 or arr.shape[0] == 0:
        return False
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
        return False  # 2**64 - 1 is not -1: the classifying path reads it out of range
    for first in (0, 3):
        j, l, w = arr[:, first], arr[:, first + 1], arr[:, first + 2]
        if (int(j.min()) < 0 or int(j.max()) >= n_rows or int(l.min()) < 0
                or int(l.max()) >= n_columns or not bool(np.all((w == 1) | (w == -1)))):
            return False
    return True


def sanitize_triples(arr: np.ndarray, identities: np.ndarray, seed: int, n_rows: int,
                     n_columns: int, word: int) -> tuple[np.ndarray, np.ndarray, np.ndarray,
                                                         np.ndarray, bool]:
    """Clean ``(n, 3)`` triples; ``(clean, numeric, integral, legal, wrong_dtype)`` per row.

    An illegal triple becomes ``(0, 0, s)``, ``s`` a public fair sign (word
    ``word`` of the sanitize stream of the identity).
    """
    values, numeric, integral, wrong_dtype = classify_integers(arr)
    legal_cells = ((values[:, 0] >= 0) & (values[:, 0] < n_rows) & (values[:, 1] >= 0)
                   & (values[:, 1] < n_columns) & (np.abs(values[:, 2]) == 1))
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
        # classify_integers reads entries >= 2**63 as -1, a legal omega: they are out of range
        legal_cells &= ~(arr >= np.uint64(2**63)).any(axis=1)
    numeric_rows = numeric.all(axis=1)
    integral_rows = integral.all(axis=1)
    legal = integral_rows & legal_cells
    clean = values.copy()
    bad = ~legal
    if bad.any():
        sign = 2 * public_uniform(seed, identities[bad], np.full(int(bad.sum()), 2,
                                                                 dtype=np.int64), word) - 1
        clean[bad] = 0
        clean[bad, 2] = sign
    return clean, numeric_rows, integral_rows, legal, bool(wrong_dtype)


# ---------------------------------------------------------------- the protocol
class TreeHist(HeavyHitterProtocol):
    """TreeHist: heavy hitters by a pruned prefix tree over a Hadamard frequency oracle.

    Parameters
    ----------
    epsilon : float in (0, 700]
        The budget of a report: ``eps / 2`` for the prefix, ``eps / 2`` for the item.
    k : int >= 1, default 32
        Heavy hitters returned (at most).
    eta : int >= 1, default 1
        Bits added per level (1: the paper's binary tree).
    threshold : float >= 0, default 3.0
        A prefix is kept when its estimated count is at least ``threshold``
        standard deviations of the count of a prefix nobody holds.
    c : int >= 1, default 4
        At most ``c * k`` prefixes are kept per level (the largest above the threshold).
    n_rows : int >= 1, default 8
        ``R``, hash functions of the oracle.
    n_columns : int, a power of two >= 2, default 4096
        ``T``, their range and the Hadamard order (``R T <= 2^22``).
    item_bits, item_bytes : int, optional
        The items (:mod:`fastldp.heavyhitters.items`); default 32-bit integers.
    codebook_seed : int or None
        Keys the levels and the hash functions.
    n_threads : int or None

    Attributes
    ----------
    g : int
        Levels (``ceil(item_bits / eta)``).
    prefix_bits : tuple of int
        ``b_l`` for each level.

    Notes
    -----
    See the module docstring for the protocol, the estimator, the pruning and
    the variance. Reports are int64 rows of 6: ``(j, l, omega)`` of the
    prefix, then of the item.

    Examples
    --------
    >>> import numpy as np
    >>> th = TreeHist(epsilon=4.0, k=2, item_bits=8, codebook_seed=5)
    >>> items = np.repeat(np.array([200, 17, 90], dtype=np.uint64), [12000, 8000, 100])
    >>> result = th.estimate(th.privatize(items, rng=1))
    >>> result.items.tolist()
    [200, 17]
    >>> bool(np.all(np.abs(result.counts - [12000, 8000]) < 5 * result.std))
    True
    """

    report_width = 6

    def __init__(self, *, epsilon: float, k: int = 32, eta: int = 1,
                 threshold: Optional[float] = 3.0, c: int = 4, n_rows: int = 8,
                 n_columns: int = 4096,
                 item_bits: Optional[int] = None, item_bytes: Optional[int] = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None) -> None:
        super().__init__(epsilon=epsilon, k=k, item_bits=item_bits, item_bytes=item_bytes,
                         codebook_seed=codebook_seed, n_threads=n_threads)
        owner = "TreeHist"
        m = self.item_bits
        self.eta = check_int(eta, "eta", owner, low=1, high=min(m, 16))
        self.threshold = None if threshold is None else check_float(
            threshold, "threshold", owner, low=0.0, high=1e6, low_open=False, high_open=False)
        self.c = check_int(c, "c", owner, low=1, high=1 << 16)
        self.n_rows = check_int(n_rows, "n_rows", owner, low=1, high=MAX_TABLE_CELLS // 2)
        self.n_columns = check_int(n_columns, "n_columns", owner, low=2,
                                   high=MAX_TABLE_CELLS // self.n_rows)
        if self.n_columns & (self.n_columns - 1):
            raise param_error("n_columns", owner, "a power of two (the Hadamard order)",
                              n_columns)
        self.g = -(-m // self.eta)
        self.prefix_bits = tuple(m - (self.g - 1 - t) * self.eta for t in range(self.g))
        self.part_epsilon = self.epsilon / 2.0

    def _stream_extra(self) -> dict:
        return {"eta": self.eta, "threshold": self.threshold, "c": self.c,
                "n_rows": self.n_rows, "n_columns": self.n_columns}

    # ------------------------------------------------------------ client
    def levels_of(self, identities: Any) -> np.ndarray:
        """The public level of each identity (int64 in ``[0, g)``)."""
        return heavy_groups(self.codebook_seed, np.ascontiguousarray(identities,
                                                                     dtype=np.uint64), self.g)

    def _hash_base(self, level: Any) -> Any:
        return np.asarray(level, dtype=np.uint64) * np.uint64(self.n_rows)

    def _privatize_codes(self, codes, identities, rng):
        levels = self.levels_of(identities)
        shift = (self.item_bits - np.asarray(self.prefix_bits, dtype=np.int64)[levels])
        prefixes = codes >> shift.astype(np.uint64)
        R, T, e = self.n_rows, self.n_columns, self.part_epsilon
        first = hadamard_fo_perturb(self.codebook_seed, prefixes, self._hash_base(levels), R, T,
                                    e, rng)
        second = hadamard_fo_perturb(self.codebook_seed, codes, self._hash_base(self.g), R, T,
                                     e, rng)
        return np.concatenate([first, second], axis=1)

    def part_channel(self, level: int) -> np.ndarray:
        """Exact law ``P[x, 2 (j T + l) + (omega + 1) / 2]`` of one part, given the hashes.

        ``level`` in ``[0, g)`` is the prefix part of that level, ``g`` the
        item part; ``x`` ranges over the ``2^b`` prefixes (``b <= 12``).
        """
        level = check_int(level, "level", "TreeHist.part_channel", low=0, high=self.g)
        b = self.item_bits if level == self.g else self.prefix_bits[level]
        if b > 12:
            raise ValueError(f"part_channel enumerates 2^{b} prefixes; at most 2^12")
        return hadamard_fo_law(self.codebook_seed, int(self._hash_base(level)), self.n_rows,
                               self.n_columns, self.part_epsilon,
                               np.arange(1 << b, dtype=np.uint64))

    def channel(self, identity: int = 0) -> np.ndarray:
        """Exact law of a whole report of ``identity`` on the items (``item_bits <= 6``).

        ``P[x, o1 * K + o2] = P_level[prefix(x), o1] P_item[x, o2]``
        (``K = 2 R T``; the two parts are independent given ``x``).
        """
        if self.item_bits > 6:
            raise ValueError("TreeHist.channel enumerates the items; item_bits <= 6")
        level = int(self.levels_of(np.array([identity], dtype=np.uint64))[0])
        part = self.part_channel(level)
        item = self.part_channel(self.g)
        xs = np.arange(1 << self.item_bits, dtype=np.int64)
        pre = part[xs >> (self.item_bits - self.prefix_bits[level])]
        return (pre[:, :, None] * item[:, None, :]).reshape(xs.shape[0], -1)

    # ------------------------------------------------------------ server
    def _sanitize(self, reports, identities, owner) -> tuple[np.ndarray, SanitizationReport]:
        n = identities.shape[0]
        arr = as_report_array(reports)
        if arr.ndim != 2 or arr.shape != (n, 6):
            raise ValueError(f"The 'reports' parameter of {owner} must be an array of shape "
                             f"({n}, 6) (one row (j, l, omega, j', l', omega') per identity). "
                             f"Got shape {arr.shape} instead.")
        if n == 0:
            return np.zeros((0, 6), dtype=np.int64), SanitizationReport(0, 0, {
                "non_numeric": 0, "non_integer": 0, "out_of_range": 0}, False)
        R, T, seed = self.n_rows, self.n_columns, self.codebook_seed
        if all_legal_rows(arr, R, T):
            return np.ascontiguousarray(arr, dtype=np.int64), all_legal_report(n)
        a, num_a, int_a, leg_a, wrong = sanitize_triples(arr[:, :3], identities, seed, R, T, 2)
        b, num_b, int_b, leg_b, _ = sanitize_triples(arr[:, 3:], identities, seed, R, T, 3)
        numeric, integral, legal = num_a & num_b, int_a & int_b, leg_a & leg_b
        by_reason = {"non_numeric": int((~numeric).sum()),
                     "non_integer": int((numeric & ~integral).sum()),
                     "out_of_range": int((integral & ~legal).sum())}
        clean = np.ascontiguousarray(np.concatenate([a, b], axis=1), dtype=np.int64)
        return clean, SanitizationReport(n, int(legal.sum()), by_reason, wrong)

    def tables(self, chunks: Chunks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One pass: ``(Z, n_level, Z_item)``, the integer tables of every level and of the items.

        ``Z`` has shape ``(g, R, T)``, ``n_level`` the reports per level.
        """
        R, T, g = self.n_rows, self.n_columns, self.g
        Z = np.zeros((g, R, T), dtype=np.int64)
        n_level = np.zeros(g, dtype=np.int64)
        Z_item = np.zeros((R, T), dtype=np.int64)
        for ids, reps in chunks():
            if not ids.shape[0]:
                continue
            Z_item += hadamard_fo_table(reps[:, 3:], R, T)
            levels = self.levels_of(ids)
            order = np.argsort(levels, kind="stable")
            bounds = np.searchsorted(levels[order], np.arange(g + 1))
            by_level = reps[order]
            for t in range(g):
                lo, hi = bounds[t], bounds[t + 1]
                if hi > lo:
                    Z[t] += hadamard_fo_table(by_level[lo:hi, :3], R, T)
                    n_level[t] += hi - lo
        return Z, n_level, Z_item

    def noise_sd(self, n: int, n_level: int) -> float:
        """``sigma_l``: the sd of the count of a prefix nobody holds (module docstring)."""
        if n_level <= 0:
            return math.inf
        R, T = self.n_rows, self.n_columns
        c = float(c_eps(self.part_epsilon))
        r = T / (T - 1.0)
        v0 = c * c - 1.0 / T**2 - (1.0 / T) * (1 - 1.0 / T) / R
        return (n / n_level) * r * math.sqrt(n_level * v0)

    def _decode(self, chunks: Chunks, n: int):
        Z, n_level, Z_item = self.tables(chunks)
        seed, e = self.codebook_seed, self.part_epsilon
        candidates = np.arange(1 << self.prefix_bits[0], dtype=np.uint64)
        levels = []
        cap = self.c * self.k
        for t, bits in enumerate(self.prefix_bits):
            n_t = int(n_level[t])
            if n_t:
                counts = (n / n_t) * hadamard_fo_counts(seed, Z[t], n_t,
                                                        int(self._hash_base(t)), e, candidates)
                above = (np.ones(candidates.shape[0], dtype=bool) if self.threshold is None
                         else counts >= self.threshold * self.noise_sd(n, n_t))
            else:
                counts = np.zeros(candidates.shape[0])
                above = np.zeros(candidates.shape[0], dtype=bool)
            idx = np.flatnonzero(above)
            order = idx[np.lexsort((candidates[idx], -counts[idx]))][:cap]
            levels.append({"level": t, "prefix_bits": bits, "n_reports": n_t,
                           "n_candidates": int(candidates.shape[0]), "kept": int(order.shape[0])})
            kept = np.sort(candidates[order])
            if t == self.g - 1:
                break
            candidates = extend(kept, self.eta)
        final = hadamard_fo_counts(seed, Z_item, n, int(self._hash_base(self.g)), e, kept)
        order = np.lexsort((kept, -final))[:self.k]
        codes, counts = kept[order], final[order]
        R, T = self.n_rows, self.n_columns
        c = float(c_eps(e))
        r = T / (T - 1.0)
        f = np.clip(counts, 0.0, float(n))
        v0 = c * c - 1.0 / T**2 - (1.0 / T) * (1 - 1.0 / T) / R
        variances = r * r * (f * (c * c - 1.0) + (n - f) * v0)
        return codes, counts, variances, levels
