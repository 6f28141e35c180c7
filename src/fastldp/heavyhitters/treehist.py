"""TreeHist (Bassily, Nissim, Stemmer, Thakurta): a pruned prefix tree over a Hadamard oracle.

The items' ``m`` bits are read as a prefix tree cut into ``g`` levels:
level ``l`` (``l = 0 .. g-1``) holds the prefixes of

    b_l = s + l * eta  bits,   s = m - (g - 1) * eta,   b_{g-1} = m.

**Users.** Identity ``i`` belongs to the public level ``l(i) = (h_i g) >> 32``
(``h_i`` a public 32-bit hash of ``(codebook_seed, i)``, the PEM split,
:func:`~fastldp._kernels._heavy.heavy_groups`) and sends ONE report: the
prefix of ``b_l(i)`` bits of its item through the paper's Hadamard frequency
oracle at the whole budget ``eps``. The users are split between the levels,
not the budget; the last level's reports (whole items) give the final counts.

The frequency oracle (the Hashtogram of the paper [1], which is Apple's HCMS
law [2], :class:`fastldp.oracles.HCMS`): ``R`` public hash functions
``h_j : {0,1}^b -> [T]`` (``T`` a power of two; ``h_j`` is the OLH hash of
identity ``l R + j`` under the codebook seed, ``l`` the level,
:func:`~fastldp._kernels._heavy.heavy_buckets`). A user draws a row
``j ~ U[R]`` and a Hadamard row ``t ~ U[T]`` and sends ``(j, t, omega)`` with
``omega = H_T[t, h_j(x)]`` (Sylvester order) flipped with probability
``1 / (1 + e^eps)``. With ``c = (e^eps + 1) / (e^eps - 1)`` and
``r = T / (T - 1)``, the count of a candidate ``v`` among the ``n_l`` reports
of level ``l`` is

    f_l(v) = r (c sum_j F_l[j, h_j(v)] - n_l / T),   F_l = Z_l H_T,

``Z_l[j, t]`` the sum of ``omega`` over the level's reports at ``(j, t)``
(integers: a split of the reports into chunks sums to the same table, so the
decode is bit-identical for any chunking). A report of a user holding ``x``
adds ``r (kappa - 1/T)`` in mean (``kappa`` the fraction of the ``R`` hashes
on which ``x`` and ``v`` collide) and has variance ``r^2 (c^2 - kappa^2)``
(:mod:`fastldp.oracles.cms`). A candidate's population count is
``(n / n_l) f_l(v)``.

**Server** (the paper's TreeHist, with the pruning of PEM [3]). Level 0
evaluates all ``2^s`` prefixes; level ``l > 0`` evaluates the children
(``eta``-bit extensions, :func:`~fastldp.heavyhitters.items.extend`) of the
prefixes kept at level ``l - 1``. Each level keeps its ``c k`` largest counts
(ties: the smaller code); with ``threshold`` set, only those that are also at
least ``threshold * sigma_l``, with

    sigma_l = (n / n_l) r sqrt(n_l (c^2 - 1/T^2 - (1/T)(1 - 1/T) / R)),

the standard deviation of the count of a prefix nobody holds. The last level
(``b = m``: whole items) keeps its top ``k``: they are the result, with their
counts from that level's reports.

**Long items** (byte strings of 9 to 64 bytes, ``m > 64``): codes are
``(n, ceil(m / 64))`` uint64 words (:mod:`fastldp.heavyhitters.items`). A
user's oracle input is ``prefix_keys(prefix(code, b_l), b_l)``
(:meth:`TreeHist.level_keys`): the prefix itself up to 64 bits (so items of at
most 64 bits are unchanged, bit for bit), beyond that the public key
``2^63 | (h << 3) | (prefix & 7)``, ``h`` a 60-bit hash of the width and the
prefix's other bits, so two distinct prefixes of one width collide with
probability ``2^-60``. The server keeps whole prefixes as codes, extends them
with ``extend(..., bits=b_l)`` and ranks them with ``top_k_order`` (ties: the
smaller code). The level rule gives many levels for long items (``m = 128``,
``k = 32``: ``g = 30``), each with ``n / g`` users, so only items held by a
few percent of the users are found (at ``10^6`` users and ``eps = 4`` a
level's null sd is about ``1.04 sqrt(30 * 10^6) ~ 5,700``); ``eta`` and ``g``
are parameters.

**Strings** (issue 34): byte levels by default (``eta = 8``), and an ended
string (its zero terminator is in the prefix) is counted, with
``pool_ended`` (default), from every level since its end, PEM's rule
(:meth:`~fastldp.heavyhitters.HeavyHitterProtocol._pool_ended`): its
in-level counts ``f_l`` and reports ``n_l`` are summed over those levels and
its count is ``n sum f_l / sum n_l``, with the variance below for
``n_L = sum n_l``. The reports are the same, so the privacy is unchanged.

Variance of a final count (level ``L = g - 1``, ``n_L`` reports,
``rho = n / n_L``; plug-in, ``f`` clipped to ``[0, n]``, ``f_L = f / rho``;
the collision term averaged over random hashes, as
:class:`~fastldp.oracles.HCMS` does)

    Var f(v) = rho^2 r^2 (f_L (c^2 - 1) + (n_L - f_L)(c^2 - 1/T^2 - (1/T)(1 - 1/T) / R))
               + f (1 - f / n)(rho - 1).

The first term is the oracle's, given which users are at level ``L``; the
second is the sampling variance of the level's share of the item's holders:
the level is a random sample of ``n_L`` of the ``n`` users (the public hash of
the identities), and ``rho X`` with ``X`` the holders in it estimates ``f``
with variance ``n^2 p (1 - p)(1 / n_L - 1 / n) = f (1 - f / n)(rho - 1)``,
``p = f / n`` (the finite-population correction of a ratio estimate; the
binomial ``f (rho - 1)`` ignores that ``n_L`` is the realized size and
overstates it: with it, the empirical variance over 300 seeds was 0.85 of the
reported one for an item held by half the users). The counts
of items selected near the cut of the top ``k`` are biased upward (the same
reports select and count them); the formula is that of a fixed item.

Defaults and why (measured)
---------------------------
Measured at the issue's setting: ``n = 10^6`` users, Zipf items (exponent
1.1, 2^16 ranks) scattered over ``2^32`` (``zipf_items(rng=21)``), ``k = 32``,
``eps = 4``, recall of the true top 32 (equal to precision when ``k`` items are
returned) and NCR, mean over 8 privatization seeds (``rng = 2 .. 9``,
``codebook_seed = 1``; standard error of the recall about 0.012). Each row
adds one change; the first two rows are the previous class, the others a
prototype of this decode, whose last row gives the same numbers as these
defaults, ``TreeHist(epsilon=4.0, k=32, codebook_seed=1)``:

===================================================================  ======  =====
design                                                               recall  NCR
===================================================================  ======  =====
before: prefix + item reports at eps/2, eta = 1, 3 sd cut, T = 4096  0.094   0.176
no threshold (top ``c k`` per level)                                 0.234   0.404
one report at eps, users split by level, the last level counts       0.289   0.483
eta = 2 (first level s = 8)                                          0.352   0.567
eta = 4 (s = 8)                                                      0.375   0.596
eta = 4, s = 12 (the rule below)                                     0.383   0.605
T = 65536: the defaults                                              0.422   0.652
===================================================================  ======  =====

Alternatives measured from the defaults: ``s = 16`` 0.418, ``eta = 3``
0.391, ``eta = 5`` 0.426; a separate group of users recounting the ``c k``
survivors of the last level with fresh hashes 0.426 (no gain, so none); ``c``
= 1, 2, 4, 8, 16: 0.393, 0.409, 0.427, 0.427, 0.422 (12 seeds); more users for
the last level, or for the first and the last (weights 1:1:1:1:1:2 and
3:2:2:2:2:3: 0.417 and 0.424 against 0.422 over seeds 30 .. 53): no gain; two
reports per user at ``eps / 2`` each, for two levels (``2 n`` reports): 0.448
against 0.427 (12 seeds, within 2 standard errors; not worth a second report).
Ranking a level's candidates by their count plus (a share of) their parent's
count: 0.102 to 0.255 (worse: the kept parents' counts are biased upward).
PEM on the same data: 0.84 recall, NCR 0.955. On words
(``word_items(10^6, item_bytes=8)``, ``k = 32``, ``eps = 4``, 3 seeds):
TreeHist 0.323 / NCR 0.525, PEM 0.750 / 0.896; at ``item_bytes = 16``: 0.156 /
0.282 and 0.562 / 0.783. Time at the Zipf setting (this loaded 2-core
machine): clients 0.12 s, server 0.30 s (previous defaults: 0.72 s and
0.57 s).

* **One report per user at eps, users split between the levels, the last
  level's reports as the counts.** The previous design spent half of every
  user's budget on an item report that counted candidates the tree (at
  ``eps / 2``: variance per report ``c^2 = 1.724``, against 1.076 at ``eps``)
  mostly failed to find (0.234 -> 0.289 at ``eta = 1``). At ``eps = 4``,
  ``c^2`` is nearly flat in ``eps``, so two reports at ``eps / 2`` for two
  levels would give each level twice the reports at 1.6 times the variance
  (0.862 against 1.076 per user): measured 0.448 against 0.427, within the
  noise; one report keeps the reports and the audit simple. pure-ldp's
  ``TreeHistServer`` splits the budget into a prefix and an item half, as the
  previous design did; the paper's text was not reachable from here (only its
  abstract), so this choice rests on the measurements above.
* **No threshold by default, the top ``c k = 128`` per level** (``c = 4``):
  at ``eps = 4`` and ``10^6`` users a level's noise is
  ``sigma ~ c sqrt(n g) ~ 2,500`` while the 32nd item has 2,981 holders, so
  a 3-sd threshold cuts all but the heaviest few. The paper's threshold
  (``~ sqrt(n log(d / beta)) / eps``) guarantees no false positive, which a
  top-k answer does not need. ``threshold`` remains an option.
* **eta = 4 and the first level** ``s``: every level after the first keeps
  ``1 / 2^eta`` of its candidates, whatever ``c``, so a true prefix must beat
  the ``(1 - 2^-eta)`` quantile of the noise at each of ``g`` levels whose
  noise grows like ``sqrt(g)``: ``eta = 4`` balances the two (the binary tree,
  32 levels of ``n / 32`` users, is the worst). ``g`` is the most levels whose
  first level still has at least ``c k 2^eta`` prefixes,
  ``g = max(1, floor((m - ceil(log2(c k))) / eta))`` (at most ``2^24``
  prefixes at level 0, :data:`MAX_FIRST_LEVEL_BITS`): a first level with
  fewer than ``c k`` prefixes would keep them all and its users would be
  wasted. At ``m = 32``, ``k = 32``: ``g = 6``, ``s = 12``.
* **R = 8, T = 65536**: the collision noise of a count is about
  ``sqrt(sum_x f_x^2 / (R T))`` (heavy items that share a bucket); 2^19
  cells per level (4 MiB) make it small next to the oracle's noise.

What remains: the one-bit oracle is the paper's, and at ``eps = 4`` its
variance per report (``c^2 = 1.076``) is 14 times OLH's
(``4 e^eps / (e^eps - 1)^2 = 0.076``, PEM's oracle), which is why TreeHist
stays below PEM at this budget (at ``eps <= 1`` the two are within a factor
of about 1.3 in variance).

Reports are int64 rows ``(j, t, omega)``. The level of a report is public (a
function of the identity), so it is not sent. A report that is not a legal
triple (``j in [0, R)``, ``t in [0, T)``, ``omega = +-1``) is replaced by the
legal triple ``(0, 0, s)`` with a public fair sign ``s``: ``H_T[0, .] = 1``,
so it is uncorrelated with every candidate (it adds ``-r/T`` to each count, as
a report of an item that collides with none does), and counted in the
sanitization report.

References
----------
.. [1] R. Bassily, K. Nissim, U. Stemmer, A. Thakurta, "Practical locally
   private heavy hitters", NeurIPS 2017 (arXiv:1707.04982): TreeHist and the
   Hashtogram frequency oracle.
.. [2] Differential Privacy Team, Apple, "Learning with Privacy at Scale",
   Apple Machine Learning Journal 1(8), 2017 (HCMS).
.. [3] T. Wang, N. Li, S. Jha, "Locally differentially private heavy hitter
   identification", IEEE TDSC 2019 (top ``c k`` prefixes per level).
"""

from __future__ import annotations

import math
from typing import Any, Iterator, Optional

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
from .items import code_order, extend, prefix, prefix_keys, top_k_order

__all__ = ["TreeHist", "treehist_levels", "hadamard_fo_perturb", "hadamard_fo_table",
           "hadamard_fo_counts", "hadamard_fo_law", "sanitize_triples", "all_legal_rows",
           "fo_hash"]

#: the largest ``R T`` of one oracle table
MAX_TABLE_CELLS = 1 << 22
#: the most prefix bits the first level may enumerate
MAX_FIRST_LEVEL_BITS = 24


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
    """Whether an integer ``(n, 3 p)`` array holds legal triples only (the fast path)."""
    if arr.dtype.kind not in "iu" or arr.dtype.itemsize > 8 or arr.shape[0] == 0:
        return False
    if arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
        return False  # 2**64 - 1 is not -1: the classifying path reads it out of range
    for first in range(0, arr.shape[1], 3):
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


# ---------------------------------------------------------------- the levels
def treehist_levels(item_bits: int, k: int, c: int, eta: int,
                    g: Optional[int] = None) -> tuple[int, ...]:
    """``b_l = s + l eta`` for ``l = 0 .. g-1`` (module docstring, "Defaults").

    With ``g = None``, ``g = max(1, floor((m - ceil(log2(c k))) / eta))``,
    raised if needed so that ``s <= MAX_FIRST_LEVEL_BITS``.

    Examples
    --------
    >>> treehist_levels(32, 32, 4, 4)
    (12, 16, 20, 24, 28, 32)
    >>> treehist_levels(8, 2, 4, 4)
    (8,)
    """
    m = item_bits
    if g is None:
        g = max(1, (m - max(0, (c * k - 1).bit_length())) // eta)
        if m - (g - 1) * eta > MAX_FIRST_LEVEL_BITS:
            g = 1 + -(-(m - MAX_FIRST_LEVEL_BITS) // eta)
    s = m - (g - 1) * eta
    return tuple(s + t * eta for t in range(g))


# ---------------------------------------------------------------- the protocol
class TreeHist(HeavyHitterProtocol):
    """TreeHist: heavy hitters by a pruned prefix tree over a Hadamard frequency oracle.

    Parameters
    ----------
    epsilon : float in (0, 700]
        The budget of a report (each user sends one).
    k : int >= 1, default 32
        Heavy hitters returned.
    eta : int in [1, 16], optional
        Bits added per level; default 4 for integers, 8 for strings (a byte
        per level).
    g : int or None, default None
        Levels; ``None``: the rule of the module docstring (6 levels for
        ``m = 32``, ``k = 32``, ``c = 4``). The first level has
        ``s = m - (g - 1) eta`` bits, in ``[1, 24]``.
    threshold : float >= 0 or None, default None
        If set, a prefix is kept only when its count is at least
        ``threshold`` standard deviations of the count of a prefix nobody
        holds (the paper's pruning); fewer than ``k`` items may then be returned.
    c : int >= 1, default 4
        ``c k`` prefixes are kept per level (the largest).
    n_rows : int >= 1, default 8
        ``R``, hash functions of the oracle.
    n_columns : int, a power of two >= 2, default 65536
        ``T``, their range and the Hadamard order (``R T <= 2^22``).
    item_bits, item_bytes : int, optional
        The items (:mod:`fastldp.heavyhitters.items`): integers of up to 64
        bits or byte strings of up to 64 bytes; default 32-bit integers.
    codebook_seed : int or None
        Keys the levels and the hash functions.
    n_threads : int or None
    pool_ended : bool, default True
        Strings: count a string that ended (its zero terminator is in the
        prefix) from the reports of every level since it ended, as PEM does
        (module docstring, "Ended strings"). False: from the last level only.

    Attributes
    ----------
    g : int
        Levels.
    prefix_bits : tuple of int
        ``b_l`` for each level.
    part_epsilon : float
        The budget of the one oracle report (``epsilon``).

    Notes
    -----
    See the module docstring for the protocol, the estimator, the pruning,
    the variance and the measured reasons for the defaults. Reports are int64
    rows ``(j, t, omega)``.

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

    report_width = 3

    #: added after report files recorded TreeHist's spec (issue 34): a spec without it meant
    #: no pooling of ended strings
    spec_added = {"pool_ended": False}

    def __init__(self, *, epsilon: float, k: int = 32, eta: Optional[int] = None,
                 g: Optional[int] = None,
                 threshold: Optional[float] = None, c: int = 4, n_rows: int = 8,
                 n_columns: int = 65536,
                 item_bits: Optional[int] = None, item_bytes: Optional[int] = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None,
                 pool_ended: bool = True) -> None:
        super().__init__(epsilon=epsilon, k=k, item_bits=item_bits, item_bytes=item_bytes,
                         codebook_seed=codebook_seed, n_threads=n_threads)
        owner = "TreeHist"
        if not isinstance(pool_ended, (bool, np.bool_)):
            raise param_error("pool_ended", owner, "True or False", pool_ended, TypeError)
        self.pool_ended = bool(pool_ended)
        m = self.item_bits
        if eta is None:
            # strings: a byte per level (issue 34: 4-bit levels split each byte over two
            # groups of users; with the identity oracle 4-bit levels lost 2 of the top 16 of
            # 64-byte strings, 8-bit levels none, tests/test_heavyhitters_exact.py)
            eta = min(8 if self.codec.kind == "bytes" else 4, m)
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
        self._g_arg = g
        if g is not None:
            g_max = (m - 1) // self.eta + 1
            g_min = 1 + max(0, -(-(m - MAX_FIRST_LEVEL_BITS) // self.eta))
            g = check_int(g, "g", owner, low=1, high=g_max)
            if g < g_min:
                raise param_error("g", owner, f"an int in [{g_min}, {g_max}] (the first level "
                                  f"has m - (g - 1) eta <= {MAX_FIRST_LEVEL_BITS} bits)", g)
        self.prefix_bits = treehist_levels(m, self.k, self.c, self.eta, g)
        self.g = len(self.prefix_bits)
        self.part_epsilon = self.epsilon

    def _stream_extra(self) -> dict:
        return {"eta": self.eta, "g": self._g_arg, "threshold": self.threshold, "c": self.c,
                "n_rows": self.n_rows, "n_columns": self.n_columns,
                "pool_ended": self.pool_ended}

    # ------------------------------------------------------------ client
    def levels_of(self, identities: Any) -> np.ndarray:
        """The public level of each identity (int64 in ``[0, g)``)."""
        return heavy_groups(self.codebook_seed, np.ascontiguousarray(identities,
                                                                     dtype=np.uint64), self.g)

    def _hash_base(self, level: Any) -> Any:
        return np.asarray(level, dtype=np.uint64) * np.uint64(self.n_rows)

    def level_keys(self, codes: np.ndarray, levels: np.ndarray) -> np.ndarray:
        """The oracle's input of each user: ``prefix_keys(prefix(code, b_l), b_l)``, uint64.

        For items of at most 64 bits the key is the prefix itself.
        """
        m = self.item_bits
        if m <= 64:
            shift = m - np.asarray(self.prefix_bits, dtype=np.int64)[levels]
            return codes >> shift.astype(np.uint64)
        keys = np.empty(codes.shape[0], dtype=np.uint64)
        for t, b in enumerate(self.prefix_bits):
            mine = np.flatnonzero(levels == t)
            if mine.shape[0]:
                keys[mine] = prefix_keys(prefix(codes[mine], b, m), b)
        return keys

    def _privatize_codes(self, codes, identities, rng):
        levels = self.levels_of(identities)
        return hadamard_fo_perturb(self.codebook_seed, self.level_keys(codes, levels),
                                   self._hash_base(levels), self.n_rows, self.n_columns,
                                   self.part_epsilon, rng)

    def part_channel(self, level: int) -> np.ndarray:
        """Exact law ``P[x, 2 (j T + t) + (omega + 1) / 2]`` of a report of ``level``.

        ``x`` ranges over the ``2^b`` prefixes of the level (``b <= 12``);
        the hashes are public (fixed by the codebook seed).
        """
        level = check_int(level, "level", "TreeHist.part_channel", low=0, high=self.g - 1)
        b = self.prefix_bits[level]
        if b > 12:
            raise ValueError(f"part_channel enumerates 2^{b} prefixes; at most 2^12")
        return hadamard_fo_law(self.codebook_seed, int(self._hash_base(level)), self.n_rows,
                               self.n_columns, self.part_epsilon,
                               np.arange(1 << b, dtype=np.uint64))

    def channel(self, identity: int = 0) -> np.ndarray:
        """Exact law of the report of ``identity`` on the items (``item_bits <= 12``).

        ``P[x, 2 (j T + t) + (omega + 1) / 2]``: the law of the identity's
        level at the item's prefix.
        """
        if self.item_bits > 12:
            raise ValueError("TreeHist.channel enumerates the items; item_bits <= 12")
        level = int(self.levels_of(np.array([identity], dtype=np.uint64))[0])
        xs = np.arange(1 << self.item_bits, dtype=np.int64)
        return self.part_channel(level)[xs >> (self.item_bits - self.prefix_bits[level])]

    # ------------------------------------------------------------ server
    def _sanitize(self, reports, identities, owner) -> tuple[np.ndarray, SanitizationReport]:
        n = identities.shape[0]
        arr = as_report_array(reports)
        if arr.ndim != 2 or arr.shape != (n, 3):
            raise ValueError(f"The 'reports' parameter of {owner} must be an array of shape "
                             f"({n}, 3) (one row (j, t, omega) per identity). "
                             f"Got shape {arr.shape} instead.")
        if n == 0:
            return np.zeros((0, 3), dtype=np.int64), SanitizationReport(0, 0, {
                "non_numeric": 0, "non_integer": 0, "out_of_range": 0}, False)
        R, T, seed = self.n_rows, self.n_columns, self.codebook_seed
        if all_legal_rows(arr, R, T):
            return np.ascontiguousarray(arr, dtype=np.int64), all_legal_report(n)
        clean, numeric, integral, legal, wrong = sanitize_triples(arr, identities, seed, R, T, 2)
        by_reason = {"non_numeric": int((~numeric).sum()),
                     "non_integer": int((numeric & ~integral).sum()),
                     "out_of_range": int((integral & ~legal).sum())}
        return (np.ascontiguousarray(clean, dtype=np.int64),
                SanitizationReport(n, int(legal.sum()), by_reason, wrong))

    def level_tables(self, chunks: Chunks) -> Iterator[tuple[int, np.ndarray, int]]:
        """``(level, Z_l, n_l)`` for each level in turn: the integer table of its reports.

        Reports held in memory are grouped by level once; otherwise every
        level makes one pass over the chunks (memory: one ``R x T`` table).
        """
        R, T, g = self.n_rows, self.n_columns, self.g
        memory = getattr(chunks, "memory", None)
        if memory is not None:
            ids, reps = memory
            levels = self.levels_of(ids)
            order = np.argsort(levels, kind="stable")
            bounds = np.searchsorted(levels[order], np.arange(g + 1))
            for t in range(g):
                rows = reps[order[bounds[t]:bounds[t + 1]]]
                yield t, hadamard_fo_table(rows, R, T), int(rows.shape[0])
            return
        for t in range(g):
            Z = np.zeros((R, T), dtype=np.int64)
            n_t = 0
            for ids, reps in chunks():
                if ids.shape[0]:
                    mine = reps[self.levels_of(ids) == t]
                    if mine.shape[0]:
                        Z += hadamard_fo_table(mine, R, T)
                        n_t += int(mine.shape[0])
            yield t, Z, n_t

    def _null_variance(self) -> float:
        """``c^2 - 1/T^2 - (1/T)(1 - 1/T) / R``: a report's variance at a prefix nobody holds."""
        R, T = self.n_rows, self.n_columns
        c = float(c_eps(self.part_epsilon))
        return c * c - 1.0 / T**2 - (1.0 / T) * (1 - 1.0 / T) / R

    def noise_sd(self, n: int, n_level: int) -> float:
        """``sigma_l``: the sd of the count of a prefix nobody holds (module docstring)."""
        if n_level <= 0:
            return math.inf
        r = self.n_columns / (self.n_columns - 1.0)
        return (n / n_level) * r * math.sqrt(n_level * self._null_variance())

    def _noise_sds(self, n: int, n_levels: np.ndarray) -> np.ndarray:
        """:meth:`noise_sd` for each candidate's number of reports (pooled ended strings)."""
        r = self.n_columns / (self.n_columns - 1.0)
        n_levels = np.asarray(n_levels, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            return np.where(n_levels > 0, (n / n_levels) * r
                            * np.sqrt(n_levels * self._null_variance()), np.inf)

    def count_variances(self, counts: np.ndarray, n: int, n_level: Any) -> np.ndarray:
        """Plug-in variance of final counts from levels of ``n_level`` reports (module doc).

        ``n_level`` is one number, or one per count (an ended string pooled over
        several levels is counted from their reports together).
        """
        c = float(c_eps(self.part_epsilon))
        r = self.n_columns / (self.n_columns - 1.0)
        f = np.clip(np.asarray(counts, dtype=np.float64), 0.0, float(n))
        n_level = np.broadcast_to(np.asarray(n_level, dtype=np.float64), f.shape)
        with np.errstate(divide="ignore", invalid="ignore"):
            rho = n / n_level
            f_level = f / rho
            out = (rho * rho * r * r * (f_level * (c * c - 1.0)
                                        + (n_level - f_level) * self._null_variance())
                   + f * (1.0 - f / n) * (rho - 1.0))
        return np.where(n_level > 0, out, math.inf)

    def _decode(self, chunks: Chunks, n: int):
        seed, e = self.codebook_seed, self.part_epsilon
        candidates = self._possible(np.arange(1 << self.prefix_bits[0], dtype=np.uint64),
                                    self.prefix_bits[0])
        pool: dict = {}  # ended string -> (in-level counts, reports) summed so far
        pooling = self.pool_ended and self.codec.kind == "bytes"
        levels = []
        for t, Z, n_t in self.level_tables(chunks):
            last = t == self.g - 1
            bits = self.prefix_bits[t]
            if n_t:
                in_level = hadamard_fo_counts(seed, Z, n_t, int(self._hash_base(t)), e,
                                              prefix_keys(candidates, bits))
            else:
                in_level = np.zeros(candidates.shape[0])
            reports = np.full(candidates.shape[0], float(n_t))
            if pooling:  # an ended string's count from every level since its end (PEM's rule)
                self._pool_ended(pool, candidates, bits, in_level, reports)
            with np.errstate(divide="ignore", invalid="ignore"):
                counts = np.where(reports > 0, n / np.maximum(reports, 1.0), 0.0) * in_level
            if self.threshold is None:  # no reports: nothing to rank, nothing is kept
                idx = np.flatnonzero(reports > 0)
            else:
                idx = np.flatnonzero((reports > 0)
                                     & (counts >= self.threshold * self._noise_sds(n, reports)))
            keep = self.k if last else self.c * self.k
            order = idx[top_k_order(candidates[idx], counts[idx], keep)]
            levels.append({"level": t, "prefix_bits": bits, "n_reports": n_t,
                           "n_candidates": int(candidates.shape[0]),
                           "kept": int(order.shape[0])})
            if last:
                codes, final = candidates[order], counts[order]
                return codes, final, self.count_variances(final, n, reports[order]), levels
            kept = candidates[order]
            candidates = self._possible(extend(kept[code_order(kept)], self.eta, bits=bits),
                                        self.prefix_bits[t + 1])
        raise AssertionError("unreachable: g >= 1")  # pragma: no cover
