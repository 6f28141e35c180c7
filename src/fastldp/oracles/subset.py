"""Subset selection (SS, also k-subset): each user reports a set of ``omega`` symbols.

The mechanism of Wang et al. (2016) and of Ye and Barg (2018). With ``D``
symbols, a subset size ``omega = k`` in ``[1, D - 1]`` and ``e = e^eps``,
the report of a user holding ``x`` is a set ``Z`` of exactly ``k`` symbols
with

    P(Z | x) = e / Omega  if x in Z,     1 / Omega  otherwise,
    Omega = C(D - 1, k - 1) e + C(D - 1, k),

so the likelihood ratio of two inputs is at most ``e`` and the channel is
``eps``-LDP. Sampling it: with probability

    p' = k e / (k e + D - k)

the set holds ``x`` and ``k - 1`` other symbols drawn uniformly without
replacement; otherwise ``k`` other symbols. ``k = 1`` is GRR.

Server
------
Every symbol ``v`` is in the report with probability ``p'`` when the user
holds it and

    q' = k ((k - 1) e + D - k) / ((k e + D - k) (D - 1))

when it does not, so ``c(v) = ([v in Z] - q') / (p' - q')`` is unbiased
(Ye and Barg's estimator), and the count of ``v`` is
``(count of reports holding v - n q') / (p' - q')`` with equal budgets. With
``a = e - 1`` and ``M = D - 1`` the per-report variances are

    sigma^2(k) = (a (k - 1) + M) (a k + M) / (a^2 k (D - k))   at a symbol not held,
    held(k)    = e M^2 / (a^2 k (D - k))                        at the held one.

The subset size
---------------
``subset_size=None`` (the default) takes, for each budget, the integer
``k`` in ``[1, D - 1]`` that minimizes ``sigma^2(k)``
(:func:`optimal_subset_size`), about ``D / (e^eps + 1)`` as in both papers.
Over real ``k``, ``d/dk log sigma^2`` has the sign of the quadratic

    (D + 2u - 1) k^2 + 2u (u - 1) k - D u (u - 1),     u = M / a,

which has one positive root when ``u > 1`` (``sigma^2`` falls, then rises)
and none in ``[1, inf)`` when ``u <= 1`` (``e >= D``: ``k = 1``, GRR). The
root is ``k* = D / (1 + sqrt(1 + (e + 1) a D / (M - a)))``; the integers
next to it are compared exactly. Personal budgets ``eps_i`` each get their
own ``k_i`` (a fixed ``subset_size`` is used at every budget instead; any
``k`` is ``eps_i``-LDP).

Reports
-------
A report is the set as a bit vector packed like OUE's
(:mod:`fastldp.oracles.unary`): ``numpy.packbits(bits, axis=-1,
bitorder="little")``, shape ``(n, ceil(D / 8))`` uint8, symbol ``v`` in bit
``v & 7`` of byte ``v >> 3``. This width is fixed whatever the budgets
(report files need one width), and the server reuses unary encoding's
column-count kernels: ``O(n D / 64)`` word operations. A list of ``k``
symbols would be shorter when ``k ceil(log2 D) < D`` (large budgets);
:meth:`SubsetSelection.subsets` and :meth:`SubsetSelection.pack_subsets`
convert to and from ``(n, k_max)`` int64 symbol lists padded with ``-1``.
A report is legal when its padding bits are zero and it holds exactly
``k_i`` symbols; any other row is replaced by a public uniformly random
``k_i``-subset keyed by ``(codebook_seed, identity)`` and counted
(``non_numeric``, ``non_integer``, ``out_of_range``: the first that applies
to the row; a wrong number of symbols is ``out_of_range``).

Client sampling
---------------
``n`` users each need ``m_i = k_i - [x_i in Z_i]`` distinct symbols out of
the ``D - 1`` others, uniformly: at ``D = 4096``, ``eps = 1`` that is
``k = 1101`` symbols each. :func:`random_subsets` draws them exactly
without a loop over users or over symbols:

1. Where ``m_i > (D - 1) / 2`` it draws the complement (``D - 1 - m_i``
   symbols) and inverts the row, so ``t_i <= (D - 1) / 2`` symbols are drawn.
2. Every other symbol is set independently with probability
   ``(t_i - ceil(2 sqrt(t_i))) / (D - 1)`` by the compiled unary-encoding
   client (``ue_perturb``: about seven random words per 64 bits); a row that
   comes out with more than ``t_i`` symbols (about 2%) is drawn again.
3. The missing symbols (about ``2 sqrt(t_i)``) are added in rounds: each
   user draws as many uniform candidates as it misses and keeps the new
   ones, until every row holds ``t_i``.

The result is exactly uniform over the ``t_i``-subsets: every step's law is
unchanged by any permutation of the other symbols (independent identical
bits, a rejection on the count, uniform candidates), so the final set's law
is too, and the only permutation-invariant law on the subsets of one size
is the uniform one. Sets of fewer than ``BERNOULLI_MIN`` symbols skip step 2.

References
----------
.. [1] S. Wang, L. Huang, P. Wang, Y. Nie, H. Xu, W. Yang, X.-Y. Li,
   C. Qiao, "Mutual information optimally local private discrete
   distribution estimation", arXiv:1607.08025, 2016 (the k-subset mechanism).
.. [2] M. Ye, A. Barg, "Optimal schemes for discrete distribution estimation
   under locally differential privacy", IEEE Transactions on Information
   Theory 64(8), 2018 (subset selection, its estimator and ``k ~ D / (e^eps + 1)``).
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._hash import SANITIZE_STREAM, hash_blocks
from .._kernels._unary import ue_perturb
from .._sanitize import SanitizationReport
from .._validation import check_int, param_error
from ._base import classify_integers, tally_report
from .unary import UnaryEncoding, _thresholds

__all__ = ["SubsetSelection", "optimal_subset_size", "subset_variance", "subset_held_variance",
           "random_subsets", "row_popcounts"]

#: sets of fewer symbols are drawn by rejection alone (no independent-bits stage)
BERNOULLI_MIN = 32
#: the independent-bits stage aims ``MARGIN * sqrt(t)`` symbols below the size ``t``
MARGIN = 2.0
#: packed output bytes per chunk of users in :func:`random_subsets`
CHUNK_BYTES = 1 << 24

_POPCOUNT8 = np.array([bin(i).count("1") for i in range(256)], dtype=np.uint8)
_BITS = (1 << np.arange(8)).astype(np.uint8)  # the byte of each bit position


def row_popcounts(rows: np.ndarray) -> np.ndarray:
    """The number of set bits of every row of a 2-d uint8 array (int64, shape ``(n,)``)."""
    n, width = rows.shape
    out = np.empty(n, dtype=np.int64)
    if n == 0 or width == 0:
        out[:] = 0
        return out
    bitwise_count = getattr(np, "bitwise_count", None)  # numpy >= 2
    words = width % 8 == 0 and rows.flags.c_contiguous
    step = max(1, (1 << 22) // width)
    for a in range(0, n, step):
        block = rows[a:a + step]
        if words:
            block = block.view(np.uint64)
        if bitwise_count is not None:
            bits = bitwise_count(block)
        elif words:  # pragma: no cover - numpy < 2
            bits = _POPCOUNT8[block.view(np.uint8)]
        else:  # pragma: no cover - numpy < 2
            bits = _POPCOUNT8[block]
        out[a:a + step] = bits.sum(axis=1, dtype=np.int64)
    return out


def _valid_mask(domain_size: int) -> np.ndarray:
    """The bytes of a row with every symbol of ``[0, D)`` set (padding bits zero)."""
    nbytes = (domain_size + 7) >> 3
    mask = np.full(nbytes, 0xFF, dtype=np.uint8)
    used = domain_size - 8 * (nbytes - 1)
    mask[-1] = (1 << used) - 1
    return mask


# ------------------------------------------------------------------ the law
def _terms(domain_size: int, eps, subset_size):
    k = np.asarray(subset_size, dtype=np.float64)
    a = np.expm1(np.asarray(eps, dtype=np.float64))
    return k, a, float(domain_size - 1)


def subset_variance(domain_size: int, eps: ArrayLike, subset_size: ArrayLike) -> np.ndarray:
    """``sigma^2 = (a (k - 1) + M) (a k + M) / (a^2 k (D - k))``: variance at a symbol not held.

    ``a = e^eps - 1``, ``M = D - 1``, ``k`` the subset size (broadcast with
    ``eps``); computed as ``((k - 1) + u) (k + u) / (k (D - k))`` with
    ``u = M / a``, which does not overflow for large ``eps``. ``k = 1`` is
    GRR's ``(e^eps + D - 2) / (e^eps - 1)^2``.
    """
    k, a, M = _terms(domain_size, eps, subset_size)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        u = M / a
        return ((k - 1.0) + u) * (k + u) / (k * (domain_size - k))


def subset_held_variance(domain_size: int, eps: ArrayLike, subset_size: ArrayLike) -> np.ndarray:
    """``e M^2 / (a^2 k (D - k))``: variance of ``c(x)`` at the symbol ``x`` the user holds."""
    k, a, M = _terms(domain_size, eps, subset_size)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        u = M / a
        return (1.0 + 1.0 / a) * u * M / (k * (domain_size - k))


def optimal_subset_size(domain_size: int, eps: ArrayLike) -> np.ndarray:
    """The integer ``k`` in ``[1, D - 1]`` minimizing :func:`subset_variance`, per budget.

    The real minimizer is the positive root of the quadratic of the module
    docstring, ``k* = D / (1 + sqrt(1 + (e + 1) a D / (M - a)))`` when
    ``e < D`` (else ``k = 1``); ``sigma^2`` is unimodal in ``k``, so the
    integer minimizer is next to ``k*``: the four integers around it are
    compared with :func:`subset_variance` itself (ties go to the smaller
    ``k``). About ``D / (e^eps + 1)``.

    Parameters
    ----------
    domain_size : int >= 2
    eps : float or array of float > 0

    Returns
    -------
    numpy.ndarray of int64, the shape of ``eps``
    """
    D = int(domain_size)
    eps = np.asarray(eps, dtype=np.float64)
    a = np.expm1(eps)
    M = float(D - 1)
    with np.errstate(divide="ignore", over="ignore", invalid="ignore"):
        root = D / (1.0 + np.sqrt(1.0 + (a + 2.0) * a * D / (M - a)))
    root = np.where((a < M) & np.isfinite(root), root, 1.0)
    base = np.floor(root)[..., None] + np.arange(-1, 3)
    cand = np.clip(base, 1, D - 1)
    var = subset_variance(D, eps[..., None], cand)
    var = np.where(np.isnan(var), np.inf, var)
    best = np.argmin(var, axis=-1)  # first minimum: the smaller k on ties
    return np.take_along_axis(cand, best[..., None], axis=-1)[..., 0].astype(np.int64)


# ------------------------------------------------------------------ client sampling
def random_subsets(domain_size: int, sizes: np.ndarray, exclude: np.ndarray,
                   rng: np.random.Generator, n_threads: int = 1) -> np.ndarray:
    """Uniformly random subsets of ``[0, D)`` without ``exclude[i]``, of ``sizes[i]`` symbols.

    Exact (module docstring, "Client sampling"); no Python loop over users
    or over symbols.

    Parameters
    ----------
    domain_size : int >= 2
    sizes : int64 array, shape (n,)
        In ``[0, D - 1]``.
    exclude : int64 array, shape (n,)
        The symbol row ``i`` must not hold, in ``[0, D)``.
    rng : numpy.random.Generator
    n_threads : int
        Threads of the independent-bits kernel; the result does not depend on it.

    Returns
    -------
    numpy.ndarray of uint8, shape (n, ceil(D / 8))
        Packed rows (``bitorder="little"``), padding bits zero.
    """
    D = int(domain_size)
    sizes = np.asarray(sizes, dtype=np.int64)
    exclude = np.ascontiguousarray(exclude, dtype=np.int64)
    n = sizes.shape[0]
    nbytes = (D + 7) >> 3
    others = D - 1
    flip = 2 * sizes > others
    target = np.where(flip, others - sizes, sizes)
    out = np.empty((n, nbytes), dtype=np.uint8)
    step = int(min(max(1, CHUNK_BYTES // nbytes), 1 << 18))
    for a in range(0, n, step):
        b = min(n, a + step)
        out[a:b] = _subsets(D, target[a:b], exclude[a:b], rng, n_threads)
    rows = np.flatnonzero(flip)
    if rows.size:
        out[rows] ^= _valid_mask(D)
        x = exclude[rows]
        out[rows, x >> 3] &= ~_BITS[x & 7]
    return out


def _subsets(D: int, t: np.ndarray, exclude: np.ndarray, rng: np.random.Generator,
             n_threads: int) -> np.ndarray:
    """One chunk of :func:`random_subsets` with ``t <= (D - 1) / 2``."""
    m = t.shape[0]
    others = D - 1
    rows = np.zeros((m, (D + 7) >> 3), dtype=np.uint8)
    count = np.zeros(m, dtype=np.int64)
    start = np.where(t >= BERNOULLI_MIN, t - np.ceil(MARGIN * np.sqrt(t)), 0.0)
    drawn = np.flatnonzero(start > 0)
    if drawn.size:
        q = _thresholds(start[drawn] / others)
        while drawn.size:  # independent bits; rows over t symbols are drawn again
            key = rng.integers(0, 2**64, size=2, dtype=np.uint64)
            fresh = ue_perturb(int(key[0]), int(key[1]), exclude[drawn], q,
                               np.zeros(drawn.size), D, n_threads)
            if drawn.size == m:
                rows = fresh
            else:
                rows[drawn] = fresh
            count[drawn] = row_popcounts(fresh)
            over = count[drawn] > t[drawn]
            drawn, q = drawn[over], q[over]
    need = t - count
    active = np.flatnonzero(need > 0)
    while active.size:  # uniform candidates among the others; the new ones are kept
        user = np.repeat(active, need[active])
        pos = rng.integers(0, others, size=user.shape[0], dtype=np.int64)
        pos += pos >= np.repeat(exclude[active], need[active])  # skip the excluded symbol
        np.bitwise_or.at(rows, (user, pos >> 3), _BITS[pos & 7])
        count[active] = row_popcounts(rows[active])
        need[active] = t[active] - count[active]
        active = active[need[active] > 0]
    return rows


def _set_bits(rows: np.ndarray, which: np.ndarray, symbols: np.ndarray) -> None:
    """Set bit ``symbols[j]`` of row ``which[j]`` (each row at most once)."""
    rows[which, symbols >> 3] |= _BITS[symbols & 7]


# ------------------------------------------------------------------ the oracle
class SubsetSelection(UnaryEncoding):
    """Subset selection: each report is a set of ``k`` symbols (Wang et al. 2016, Ye and Barg 2018).

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700] or None
        Budget of every report unless ``epsilons`` is given per call.
    subset_size : int in [1, D - 1] or None
        ``k`` (``omega`` in the papers). ``None`` (default): per budget, the
        ``k`` of smallest variance (:func:`optimal_subset_size`, about
        ``D / (e^eps + 1)``).
    categories : list of labels or a pandas Categorical, optional
        Labels of the symbols (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        Only keys the sanitization of malformed reports.
    n_threads : int or None
        Threads of the client and server kernels; results never depend on it.

    Notes
    -----
    Reports are ``(n, ceil(D / 8))`` uint8 rows, the packed bits of the set
    (module docstring): ``p'`` and ``q'`` take the place of unary encoding's
    ``p`` and ``q``, so the server is OUE's.

    Examples
    --------
    >>> import numpy as np
    >>> ss = SubsetSelection(domain_size=100, epsilon=1.0, codebook_seed=0)
    >>> int(ss.subset_sizes(np.array([1.0]))[0])  # about 100 / (e + 1)
    27
    >>> reports = ss.privatize(np.arange(20_000) % 100, rng=0)
    >>> reports.shape, reports.dtype
    ((20000, 13), dtype('uint8'))
    >>> int(row_popcounts(reports).min()), int(row_popcounts(reports).max())
    (27, 27)
    >>> est = ss.estimate(reports)
    >>> bool(np.all(np.abs(est.counts - 200) < 5 * est.std))
    True
    """

    name = "ss"

    def __init__(self, *, domain_size: Optional[int] = None, epsilon: Optional[float],
                 subset_size: Optional[int] = None, categories: Any = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None) -> None:
        owner = type(self).__name__
        self.subset_size = (None if subset_size is None
                            else check_int(subset_size, "subset_size", owner, low=1))
        super().__init__(domain_size=domain_size, epsilon=epsilon, categories=categories,
                         codebook_seed=codebook_seed, n_threads=n_threads)

    def _setup(self) -> None:
        if self.subset_size is not None and self.subset_size > self.domain_size - 1:
            raise param_error("subset_size", type(self).__name__,
                              f"an int in [1, {self.domain_size - 1}] (a set of all "
                              f"{self.domain_size} symbols says nothing) or None",
                              self.subset_size)

    def _repr_extra(self) -> str:
        return "" if self.subset_size is None else f", subset_size={self.subset_size}"

    def _stream_extra(self) -> dict:
        return {} if self.subset_size is None else {"subset_size": self.subset_size}

    # ------------------------------------------------------------ per-report law
    def subset_sizes(self, eps: np.ndarray) -> np.ndarray:
        """``k_i`` per budget: ``subset_size``, or :func:`optimal_subset_size` (int64)."""
        eps = np.asarray(eps, dtype=np.float64)
        if self.subset_size is not None:
            return np.full(eps.shape, self.subset_size, dtype=np.int64)
        return optimal_subset_size(self.domain_size, eps)

    def _pq(self, eps):
        """``(p', q')`` per budget, written with ``e^-eps`` so that no term overflows."""
        D = self.domain_size
        k = self.subset_sizes(eps).astype(np.float64)
        r = np.exp(-np.asarray(eps, dtype=np.float64))
        norm = k + (D - k) * r  # (k e + D - k) / e
        return k / norm, k * ((k - 1.0) + (D - k) * r) / (norm * (D - 1))

    def variances(self, eps: np.ndarray) -> np.ndarray:
        return subset_variance(self.domain_size, eps, self.subset_sizes(eps))

    def held_variances(self, eps: np.ndarray) -> np.ndarray:
        return subset_held_variance(self.domain_size, eps, self.subset_sizes(eps))

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """Exact law ``P[x, y]`` for every symbol ``x`` and every bit vector ``y``.

        Column ``y`` is the set whose symbol ``v`` is bit ``(y >> v) & 1``
        (:meth:`pack_outputs` gives the reports): ``p' / C(D - 1, k - 1)`` for
        a set of ``k`` symbols holding ``x``, ``(1 - p') / C(D - 1, k)`` for
        one without it, 0 for a set of another size. Needs ``D <= 12``.
        """
        D = self.domain_size
        if D > 12:
            raise ValueError(f"channel() enumerates 2^D outputs; needs D <= 12, got D = {D}")
        e = np.array([eps], dtype=np.float64)
        k = int(self.subset_sizes(e)[0])
        p = float(self._pq(e)[0][0])
        bits = (np.arange(2**D)[None, :] >> np.arange(D)[:, None]) & 1  # (D, 2^D)
        size_ok = bits.sum(axis=0) == k
        law = np.where(bits == 1, p / math.comb(D - 1, k - 1), (1 - p) / math.comb(D - 1, k))
        return np.where(size_ok[None, :], law, 0.0)

    # ------------------------------------------------------------ client
    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        """Array layer of :meth:`privatize`: packed ``(n, ceil(D / 8))`` uint8 sets."""
        n = values.shape[0]
        k = np.broadcast_to(self.subset_sizes(eps), (n,))
        p = np.broadcast_to(self._pq(eps)[0], (n,))
        values = np.ascontiguousarray(values, dtype=np.int64)
        held = rng.random(n) < p
        rows = random_subsets(self.domain_size, k - held, values, rng, self.n_threads)
        which = np.flatnonzero(held)
        _set_bits(rows, which, values[which])
        return rows

    # ------------------------------------------------------------ the other format
    def subsets(self, reports: ArrayLike) -> np.ndarray:
        """The symbols of packed reports as an ``(n, k_max)`` int64 array padded with ``-1``.

        Row ``i`` lists the symbols of report ``i`` in increasing order;
        :meth:`pack_subsets` is the inverse. Use it to send ``k`` symbols
        instead of ``D`` bits when that is shorter.
        """
        rows = np.asarray(reports, dtype=np.uint8)
        bits = np.unpackbits(rows, axis=1, bitorder="little")[:, :self.domain_size].astype(bool)
        sizes = bits.sum(axis=1)
        width = int(sizes.max()) if sizes.size else 0
        out = np.full((rows.shape[0], width), -1, dtype=np.int64)
        r, v = np.nonzero(bits)
        slot = np.arange(r.shape[0]) - np.repeat(np.cumsum(sizes) - sizes, sizes)
        out[r, slot] = v
        return out

    def pack_subsets(self, symbols: ArrayLike) -> np.ndarray:
        """Packed reports of ``(n, w)`` symbol lists padded with ``-1`` (:meth:`subsets`).

        Raises
        ------
        ValueError
            When an entry is neither ``-1`` nor a symbol, or a row repeats a symbol.
        """
        sym = np.asarray(symbols)
        if sym.ndim != 2 or sym.dtype.kind not in "iu":
            raise param_error("symbols", f"{type(self).__name__}.pack_subsets",
                              "a 2-d integer array of symbols padded with -1", sym.shape)
        sym = sym.astype(np.int64)
        if ((sym < -1) | (sym >= self.domain_size)).any():
            raise param_error("symbols", f"{type(self).__name__}.pack_subsets",
                              f"symbols in [0, {self.domain_size}) or the padding -1",
                              int(sym[(sym < -1) | (sym >= self.domain_size)][0]))
        r, c = np.nonzero(sym >= 0)
        bits = np.zeros((sym.shape[0], self.domain_size), dtype=bool)
        bits[r, sym[r, c]] = True
        if (bits.sum(axis=1) != (sym >= 0).sum(axis=1)).any():
            raise ValueError(f"The 'symbols' parameter of {type(self).__name__}.pack_subsets "
                             "must list distinct symbols in every row. Got a repeated symbol "
                             "instead.")
        return np.packbits(bits, axis=1, bitorder="little")

    # ------------------------------------------------------------ sanitization
    def public_subsets(self, identities: np.ndarray, sizes: np.ndarray) -> np.ndarray:
        """Public random legal reports: ``sizes[j]`` symbols keyed by ``(codebook seed, identity)``.

        Word ``v`` of blocks 1, 2, ... of the sanitize stream, its low bits
        replaced by ``v`` (distinct keys), is symbol ``v``'s key; the
        ``sizes[j]`` smallest keys form the set: uniform up to the ties of
        the remaining high bits (52 at ``D = 4096``), broken by the symbol.
        """
        D = self.domain_size
        ids = np.ascontiguousarray(identities, dtype=np.uint64)
        sizes = np.asarray(sizes, dtype=np.int64)
        low = max(1, (D - 1).bit_length())
        n_blocks = (D + 3) // 4
        out = np.empty((ids.shape[0], self.n_bytes), dtype=np.uint8)
        step = max(1, (1 << 20) // D)
        for a in range(0, ids.shape[0], step):
            words = hash_blocks(self.codebook_seed, ids[a:a + step], n_blocks + 1,
                                SANITIZE_STREAM)[:, 1:, :].reshape(-1, 4 * n_blocks)[:, :D]
            keys = ((words >> np.uint64(low)) << np.uint64(low)) | np.arange(D, dtype=np.uint64)
            kth = np.sort(keys, axis=1)[np.arange(keys.shape[0]), sizes[a:a + step] - 1]
            out[a:a + step] = np.packbits(keys <= kth[:, None], axis=1, bitorder="little")
        return out

    def _legal_as_is(self, reports, n):
        arr = super()._legal_as_is(reports, n)
        if arr is None:
            return None
        k = int(self.subset_sizes(np.array([self.epsilon]))[0])
        return arr if (row_popcounts(arr) == k).all() else None

    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        """Replace rows that are not sets of ``k_i`` symbols by public random sets; count them."""
        n = eps.shape[0]
        arr = self._report_rows(reports, n, self.n_bytes, owner)
        sizes = self.subset_sizes(eps)
        pad = np.uint8(self._padding_mask())
        if arr.dtype == np.uint8:
            out = np.ascontiguousarray(arr)
            numeric_row = integral_row = in_bytes = np.ones(n, dtype=bool)
            wrong_dtype = False
        else:
            values, numeric, integral, wrong_dtype = classify_integers(arr)
            in_byte = integral & (values >= 0) & (values <= 255)
            numeric_row, integral_row = numeric.all(axis=1), integral.all(axis=1)
            in_bytes = in_byte.all(axis=1)
            out = np.where(in_byte, values, 0).astype(np.uint8)
        legal = in_bytes & ((out[:, -1] & pad) == 0 if pad else True) \
            & (row_popcounts(out) == sizes)
        bad = ~legal
        if bad.any():
            if out is arr or out.base is arr:  # never write into the caller's array
                out = np.array(out, dtype=np.uint8, order="C")
            out[bad] = self.public_subsets(identities[bad], sizes[bad])
        return out, tally_report(n, numeric_row, integral_row, legal, wrong_dtype)

    def _shape_error(self, owner, n, shape):
        rows = "n" if n is None else str(n)
        return ValueError(
            f"The 'reports' parameter of {owner} must be a ({rows}, {self.n_bytes}) uint8 array "
            f"of packed sets (numpy.packbits(bits, axis=1, bitorder='little')). Got shape "
            f"{shape} instead.")
