"""Apple's Count Mean Sketch (CMS) and Hadamard Count Mean Sketch (HCMS).

Both oracles share ``k`` public hash functions ``h_j : [D] -> [m]``
(``n_rows`` by ``n_columns``): ``h_j`` is the OLH hash of identity ``j``
under the codebook seed (:func:`~fastldp.oracles.olh.olh_hash` onto ``m``
buckets), so the functions are fixed by ``codebook_seed``, as FLH's pool is.
A client picks a row ``j`` uniformly and encodes ``h_j(x)``:

* **CMS** (Apple, Algorithm 1): the one-hot vector ``v in {-1, +1}^m``
  (``+1`` at ``h_j(x)``) with every coordinate flipped independently with
  probability ``1 / (1 + e^(eps/2))``; the report is ``(j, v~)``. Two inputs
  change at most two coordinates, each by a ratio ``e^(eps/2)``.
* **HCMS** (Apple, Algorithm 3): one coordinate ``l ~ U[m]`` of the Hadamard
  transform ``w = H_m e_(h_j(x))``, ``w_l = H_m[l, h_j(x)] in {-1, +1}``
  (Sylvester order, ``H[l, b] = (-1)^popcount(l & b)``; ``m`` a power of
  two), its sign flipped with probability ``1 / (1 + e^eps)``; the report is
  ``(j, l, omega)``, one bit besides the public indices.

Server (Apple's Algorithms 2 and 4). With ``c_eps = (e^eps + 1) / (e^eps - 1)``
(``c_(eps/2)`` for CMS), the ``k x m`` sketch matrix is

    CMS:   M[j] = sum_{i: j_i = j} k ((c / 2) v~_i + 1/2),
    HCMS:  M_H[j, l] = sum_{i: (j_i, l_i) = (j, l)} k c omega_i,  M = M_H H_m^T,

and the count of any candidate ``v`` is (Apple, Algorithms 2 and 4)

    f(v) = (m / (m - 1)) ((1/k) sum_j M[j, h_j(v)] - n / m).

Per report this is ``c_i(v) = r ((c / 2) v~_i[h_{j_i}(v)] + 1/2 - 1/m)``
(CMS) or ``r (c omega_i H[l_i, h_{j_i}(v)] - 1/m)`` (HCMS), ``r = m /
(m - 1)``. The server keeps exact integer counts (CMS: the number of reports
with row ``j`` and coordinate ``l`` at ``+1``; HCMS: the number at
``(j, l, omega)``), so a decode split into chunks is bit-identical to the
one-shot decode, and scales them once at the end: the full-domain counts map
the ``k x m`` table through the ``k`` hashes in ``O(k D)``
(:func:`~fastldp._kernels._flh.flh_support`), after a Walsh-Hadamard
transform of each row for HCMS; the sketch of an estimate gives the count of
any other candidate (:meth:`SketchEstimate.count_of`).

Moments for a fixed set of hash functions
-----------------------------------------
Let ``kappa(x, v) = (1/k) #{j : h_j(x) = h_j(v)}`` (``kappa(x, x) = 1``).
Given the hash functions, a report of a user holding ``x`` has

    E[c(v)]   = r (kappa - 1/m)                        (both),
    Var[c(v)] = r^2 (c^2 - (2 kappa - 1)^2) / 4        (CMS, c = c_(eps/2)),
    Var[c(v)] = r^2 (c^2 - kappa^2)                    (HCMS, c = c_eps),

so the count is unbiased for the held symbol and, for the others, unbiased
over the choice of ``codebook_seed`` (``kappa`` has mean ``1/m``); for one
fixed seed each non-held symbol carries the bias ``r (kappa(x, v) - 1/m)``
per user holding ``x``, of standard deviation about
``r sqrt((1/m)(1 - 1/m) / k)``: ``k`` and ``m`` trade memory and server time
against it, as FLH's pool size does. :meth:`CMS.exact_moments` computes both
sums for given true counts. The variances the estimates report
(``variances(eps)`` at a symbol not held, ``held_variances(eps)`` at the held
one, :mod:`._base`) average the formula over ``kappa ~ Binomial(k, 1/m) / k``
(hash functions drawn at random, the collision term included):

    CMS:  r^2 (c^2 - (1 - 2/m)^2 - 4 (1/m)(1 - 1/m) / k) / 4,   held r^2 (c^2 - 1) / 4,
    HCMS: r^2 (c^2 - 1/m^2 - (1/m)(1 - 1/m) / k),             held r^2 (c^2 - 1).

CMS's held variance is SUE's, ``e^(eps/2) / (e^(eps/2) - 1)^2``, times
``r^2``.

Personal budgets ``eps_i`` keep ``k`` and ``m`` and use ``c_i`` in both the
client and the report's terms.

References
----------
.. [1] Differential Privacy Team, Apple, "Learning with Privacy at Scale",
   Apple Machine Learning Journal 1(8), 2017 (Algorithms 1-4: CMS and HCMS
   clients and servers).
.. [2] G. Cormode, S. Maddock, C. Maple, "Frequency estimation under local
   differential privacy", PVLDB 14(11), 2021 (Apple's CMS/HCMS among the
   hash-based oracles; the pure-ldp implementation).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._cms import cms_counts, fwht_rows_int64, hcms_counts, int64_to_float64
from .._kernels._flh import flh_support
from .._kernels._hadamard import fwht, hadamard_entries
from .._kernels._hash import SANITIZE_STREAM, hash_blocks
from .._kernels._unary import ue_counts, ue_perturb, ue_weighted_counts
from .._sanitize import SanitizationReport
from .._validation import check_int, param_error
from ..streaming import ExactSum, Partial
from ._base import (
    FrequencyEstimate, FrequencyOracle, MatrixReports, add_weighted_hits, all_legal_report,
    classify_integers, public_uniform, scalar_sum, tally_report,
)
from ._categories import Categories
from .flh import CountedEstimate, int64_rows
from .olh import olh_hash

__all__ = ["CMS", "HCMS", "SketchEstimate", "MAX_CELLS", "cms_report_rows"]

MAX_CELLS = 2**24  # k * m cells of the server's sketch matrix
CHANNEL_MAX_M = 12  # CMS.channel() enumerates k 2^m outputs
_GROUP_MIN = 32  # mean reports per row for one carry-save count per row (else unpack)
_UNPACK_CELLS = 1 << 22  # bits unpacked at a time on the many-rows path


def c_eps(eps) -> np.ndarray:
    """Apple's debiasing constant ``c_eps = (e^eps + 1) / (e^eps - 1) = 1 / tanh(eps / 2)``."""
    return 1.0 / np.tanh(np.asarray(eps, dtype=np.float64) / 2.0)


def fwht_rows(table: np.ndarray) -> np.ndarray:
    """``table @ H_m`` (Sylvester order; ``H_m`` is symmetric): the transform of every row.

    The butterflies of :func:`~fastldp._kernels._hadamard.fwht`: one kernel
    call per row from 128 columns, vectorized over the rows below (the same
    operations in the same order, so the same bits); integer-valued rows stay
    exact while their sums do.
    """
    out = np.array(table, dtype=np.float64, copy=True)
    k, m = out.shape
    if m >= 128:  # long rows: one kernel call each (the same butterflies, bit for bit)
        for j in range(k):
            out[j] = fwht(out[j])
        return out
    h = 1
    while h < m:
        view = out.reshape(k, m // (2 * h), 2, h)
        low = view[:, :, 0, :].copy()
        view[:, :, 0, :] += view[:, :, 1, :]
        view[:, :, 1, :] = low - view[:, :, 1, :]
        h *= 2
    return out


def _check_candidates(candidates, categories, owner: str) -> np.ndarray:
    """Candidates as int64 symbols: labels through the categories, else integers >= 0."""
    if categories is not None:
        if np.ndim(candidates) == 0:
            candidates = [candidates]
        return Categories(categories).encode(candidates, "candidates", owner)
    expected = "a 1-d array of integers in [0, 2**63)"
    try:
        arr = np.atleast_1d(np.asarray(candidates))
    except (TypeError, ValueError):
        raise param_error("candidates", owner, expected, candidates, TypeError) from None
    if arr.ndim != 1 or (arr.size and arr.dtype.kind not in "iu"):
        raise param_error("candidates", owner, expected, candidates,
                          TypeError if arr.dtype.kind not in "iuf" else ValueError)
    if arr.size and (arr.min() < 0 or (arr.dtype.kind == "u" and arr.max() >= 2**63)):
        raise param_error("candidates", owner, expected, candidates)
    return np.ascontiguousarray(arr, dtype=np.int64)


@dataclass(frozen=True, repr=False)
class SketchEstimate(FrequencyEstimate):
    """A :class:`FrequencyEstimate` of CMS or HCMS, with the server's sketch matrix.

    Attributes
    ----------
    sketch : float64 array, shape (k, m)
        The sketch matrix ``M`` of Apple's server (module docstring): the
        count of a candidate ``v`` is
        ``(m / (m - 1)) ((1/k) sum_j M[j, h_j(v)] - n / m)``. For HCMS it is
        ``M_H H_m^T``. For CMS, Apple's per-row term ``k (1 - c) n_j / 2``
        (``n_j`` reports chose row ``j``) is replaced by its mean over the
        rows, ``(1 - c) n / 2``: every count is unchanged (each sums one
        entry per row), and the sketch depends only on the exact sums a
        partial keeps.
    codebook_seed : int
        The seed of the hash functions ``h_j``.

    The other attributes are :class:`FrequencyEstimate`'s: ``counts`` for
    every symbol of ``[domain_size]``, their plug-in ``variances``...

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.oracles import CMS
    >>> cms = CMS(domain_size=50, epsilon=3.0, n_rows=16, n_columns=64, codebook_seed=1)
    >>> est = cms.estimate(cms.privatize(np.arange(2000) % 50, rng=0))
    >>> est.sketch.shape
    (16, 64)
    >>> bool(np.allclose(est.count_of([0, 7]), est.counts[[0, 7]]))
    True
    >>> est.count_of([10**12]).shape  # any candidate, not only the symbols
    (1,)
    """

    sketch: Optional[np.ndarray] = None
    codebook_seed: Optional[int] = None

    def count_of(self, candidates: ArrayLike) -> np.ndarray:
        """The count estimate of each candidate, from the sketch (Apple's estimator).

        Parameters
        ----------
        candidates : array_like
            Integers ``>= 0`` (any, not only symbols below ``domain_size``:
            the hashes are defined for every integer); labels among
            :attr:`categories` when the oracle was built with them.

        Returns
        -------
        float64 array, shape (len(candidates),)
            ``(m / (m - 1)) ((1/k) sum_j M[j, h_j(v)] - n / m)``. For a
            symbol this equals ``counts[v]`` up to rounding (the counts sum
            the same terms in another order). A candidate no user holds has
            the variance ``variances`` gives a symbol of count 0.
        """
        owner = f"{type(self).__name__}.count_of"
        sketch, seed = self.sketch, self.codebook_seed
        if sketch is None or seed is None:
            raise ValueError(f"{owner} needs the sketch of a CMS or HCMS estimate")
        v = _check_candidates(candidates, self.categories, owner)
        k, m = sketch.shape
        total = np.zeros(v.shape[0])
        step = max(1, (1 << 22) // k)
        rows = np.arange(k, dtype=np.uint64)
        for a in range(0, v.shape[0], step):
            part = v[a:a + step]
            h = olh_hash(seed, np.repeat(rows, part.shape[0]), np.tile(part, k),
                         m).reshape(k, part.shape[0])
            total[a:a + step] = sketch[np.arange(k)[:, None], h].sum(axis=0)
        return (m / (m - 1.0)) * (total / k - self.n / m)

    def frequency_of(self, candidates: ArrayLike) -> np.ndarray:
        """``count_of(candidates) / n``, on the scale of :attr:`frequencies` (zeros if ``n = 0``).

        Parameters
        ----------
        candidates : array_like
            As :meth:`count_of`.

        Returns
        -------
        float64 array, shape (len(candidates),)
        """
        counts = self.count_of(candidates)
        return counts / self.n if self.n else np.zeros_like(counts)


class _CountMeanSketch(CountedEstimate, MatrixReports, FrequencyOracle):
    """What CMS and HCMS share: the ``k`` hash functions, the constructor, the sketch."""

    def __init__(self, *, domain_size: Optional[int] = None, epsilon: Optional[float],
                 n_rows: int = 256, n_columns: int = 1024, categories: Any = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None) -> None:
        owner = type(self).__name__
        self.n_rows = check_int(n_rows, "n_rows", owner, low=1, high=MAX_CELLS // 2)
        self.n_columns = check_int(n_columns, "n_columns", owner, low=2,
                                     high=MAX_CELLS // self.n_rows)
        self._check_columns(owner)
        super().__init__(domain_size=domain_size, epsilon=epsilon, categories=categories,
                         codebook_seed=codebook_seed, n_threads=n_threads)

    def _check_columns(self, owner: str) -> None:
        """Hook: HCMS needs a power of two."""

    _layout = ""  # the report's entries, for the shape error

    @property
    def report_width(self) -> int:
        """Entries per report."""
        raise NotImplementedError  # pragma: no cover - abstract

    def _repr_extra(self) -> str:
        return f", n_rows={self.n_rows}, n_columns={self.n_columns}"

    def _stream_extra(self) -> dict:
        return {"n_rows": self.n_rows, "n_columns": self.n_columns}

    @property
    def _r(self) -> float:
        return self.n_columns / (self.n_columns - 1.0)

    # ------------------------------------------------------------ public hashes
    def hash(self, rows: ArrayLike, items: ArrayLike) -> np.ndarray:
        """``h_{rows[t]}(items[t])`` in ``[0, n_columns)`` (paired arrays), int64."""
        rows = np.ascontiguousarray(rows, dtype=np.uint64)
        return olh_hash(self.codebook_seed, rows, items, self.n_columns)

    def hash_table(self) -> np.ndarray:
        """The public table ``h_j(v)``, shape ``(n_rows, domain_size)`` (tests and audits)."""
        k, D = self.n_rows, self.domain_size
        return self.hash(np.repeat(np.arange(k), D),
                         np.tile(np.arange(D, dtype=np.int64), k)).reshape(k, D)

    def _collisions(self, xs: np.ndarray, table: np.ndarray) -> np.ndarray:
        """``kappa(x, v)`` for the symbols ``xs`` and every ``v``: shape (len(xs), D)."""
        return (table[:, xs][:, :, None] == table[:, None, :]).mean(axis=0)

    def exact_moments(self, counts: ArrayLike,
                      epsilon: Optional[float] = None) -> tuple[np.ndarray, np.ndarray]:
        """Exact mean and variance of every count, given the true counts and these hashes.

        Parameters
        ----------
        counts : array_like of int, shape (D,)
            How many users hold each symbol.
        epsilon : float, optional
            Every user's budget (default: the oracle's).

        Returns
        -------
        mean, variance : float64 arrays, shape (D,)
            ``sum_x counts[x] E[c(v) | x]`` and ``sum_x counts[x] Var[c(v) | x]``
            for the fixed hash functions (module docstring): the count is
            biased by ``r (kappa(x, v) - 1/m)`` per user holding ``x != v``.
            ``O(k D s)`` for ``s`` symbols of non-zero count.
        """
        owner = f"{type(self).__name__}.exact_moments"
        n_x = np.asarray(counts, dtype=np.float64)
        if n_x.shape != (self.domain_size,):
            raise param_error("counts", owner, f"an array of {self.domain_size} counts",
                              f"shape {n_x.shape}")
        eps = self.epsilon if epsilon is None else epsilon
        if eps is None:
            raise param_error("epsilon", owner, "given (the oracle has no budget of its own)", eps)
        table = self.hash_table()
        mean, var = np.zeros(self.domain_size), np.zeros(self.domain_size)
        held = np.flatnonzero(n_x)
        step = max(1, (1 << 22) // max(1, self.n_rows * self.domain_size))
        for a in range(0, held.shape[0], step):
            xs = held[a:a + step]
            kappa = self._collisions(xs, table)
            m_x, v_x = self._report_moments(kappa, float(eps))
            mean += n_x[xs] @ m_x
            var += n_x[xs] @ v_x
        return mean, var

    def _report_moments(self, kappa, eps):  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------ sketch estimate
    def finalize(self, partial: Partial) -> SketchEstimate:
        """:meth:`FrequencyOracle.finalize`, with the sketch matrix (a :class:`SketchEstimate`).

        Parameters
        ----------
        partial : fastldp.streaming.Partial
            From :meth:`partial` or :meth:`merge` of this oracle.

        Returns
        -------
        SketchEstimate
        """
        est = super().finalize(partial)
        n = partial.counts["n"]
        if partial.counts["personal"] == 0 and self.epsilon is not None:
            sketch = self._sketch_from_hits(partial.sums["hits"].value(), n)
        else:
            sums = self._folded_sums(partial)
            sketch = self._sketch_from_sums(sums["support"], sums["offset"], n)
        return self._with_sketch(est, sketch)

    def _with_sketch(self, est: FrequencyEstimate, sketch: np.ndarray) -> SketchEstimate:
        fields = {f.name: getattr(est, f.name) for f in dataclasses.fields(est)}
        return SketchEstimate(**fields, sketch=sketch, codebook_seed=self.codebook_seed)

    def _fast_hits(self, reports, n, identities, owner):
        """The partial's hit counts of reports all legal as sent: one checking kernel pass."""
        arr = int64_rows(reports, n, self.report_width)
        hits = None if arr is None else self._kernel_hits(arr)
        if hits is not None:
            self._identities(identities, n, owner)
        return hits

    def _kernel_hits(self, arr: np.ndarray) -> Optional[np.ndarray]:  # pragma: no cover
        """The ``"hits"`` of int64 reports by the counting kernel; None if one is illegal."""
        raise NotImplementedError

    def _sketch_from_hits(self, hits, n):  # pragma: no cover - abstract
        raise NotImplementedError

    def _sketch_from_sums(self, support, offset, n):  # pragma: no cover - abstract
        raise NotImplementedError

    def _counts_of_table(self, table: np.ndarray) -> np.ndarray:
        """``sum_j table[j, h_j(v)]`` for every symbol ``v`` (``O(k D)``)."""
        return flh_support(self.codebook_seed, np.ascontiguousarray(table, dtype=np.float64),
                           self.domain_size, self.n_threads)

    def _shape_error(self, owner, n, shape):
        rows = "n" if n is None else str(n)
        return ValueError(f"The 'reports' parameter of {owner} must be a ({rows}, "
                          f"{self.report_width}) array of {self._layout}. Got shape {shape} "
                          "instead.")



def cms_report_rows(rows: np.ndarray, bits: np.ndarray, n_words: int) -> np.ndarray:
    """CMS reports ``(j, sign words)``: int64 rows of the row index and ``n_words`` words.

    ``bits`` are the packed ``(n, ceil(m / 8))`` little-endian sign bits (bit ``l`` of
    the words is sign ``l``); the words' padding bits are zero.
    """
    n = rows.shape[0]
    buf = np.zeros((n, 8 * n_words), dtype=np.uint8)
    buf[:, :bits.shape[1]] = bits
    out = np.empty((n, 1 + n_words), dtype=np.int64)
    out[:, 0] = rows
    out[:, 1:] = buf.view("<i8")
    return out

class CMS(_CountMeanSketch):
    """Apple's Count Mean Sketch: a row index and ``m`` flipped signs per report.

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700] or None
        Every coordinate is flipped with probability ``1 / (1 + e^(eps/2))``.
    n_rows : int >= 1
        ``k``, the number of hash functions (default 256).
    n_columns : int >= 2
        ``m``, their range (default 1024); ``k m <= 2**24``.
    categories : list of labels or a pandas Categorical, optional
        Labels of the symbols (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        Seed of the hash functions (and of the sanitization coins).
    n_threads : int or None
        Threads of the client and server kernels; results never depend on it.

    Notes
    -----
    A report is an int64 row of ``1 + ceil(m / 64)`` entries: the row index
    ``j`` in ``[0, k)``, then the ``m`` signs as bits (``1`` for ``+1``,
    ``0`` for ``-1``): sign ``l`` is bit ``l % 64`` of entry
    ``1 + l // 64``, the bits beyond ``m`` zero. :meth:`unpack_reports` and
    :meth:`pack_reports` convert to and from ``(j, signs)`` with the signs
    an int8 ``(n, m)`` array of ``+-1``. Any such row is a legal report; a
    row index outside ``[0, k)``, a non-integer entry or a padding bit set
    is sanitized and counted. The estimate is a :class:`SketchEstimate`.
    The module docstring gives the server, the bias of a fixed set of hash
    functions and the variances.

    Examples
    --------
    >>> import numpy as np
    >>> cms = CMS(domain_size=100, epsilon=2.0, n_rows=32, n_columns=128, codebook_seed=5)
    >>> reports = cms.privatize(np.arange(10_000) % 100, rng=0)
    >>> reports.shape, reports.dtype
    ((10000, 3), dtype('int64'))
    >>> rows, signs = cms.unpack_reports(reports[:2])
    >>> signs.shape, sorted(np.unique(signs).tolist())
    ((2, 128), [-1, 1])
    >>> est = cms.estimate(reports)
    >>> bool(np.all(np.abs(est.counts - 100) < 6 * est.std))
    True
    """

    name = "cms"
    _layout = "(row index, sign words)"

    @property
    def n_words(self) -> int:
        """Words of signs per report, ``ceil(m / 64)``."""
        return (self.n_columns + 63) // 64

    @property
    def report_width(self) -> int:
        """Entries per report, ``1 + ceil(m / 64)``."""
        return 1 + self.n_words

    def _flip(self, eps):
        """The flip probability ``1 / (1 + e^(eps/2))`` and its complement."""
        q = 1.0 / (np.exp(np.asarray(eps, dtype=np.float64) / 2.0) + 1.0)
        return q, 1.0 - q

    def _c(self, eps):
        return c_eps(np.asarray(eps, dtype=np.float64) / 2.0)

    def variances(self, eps: np.ndarray) -> np.ndarray:
        m, k = self.n_columns, self.n_rows
        c = self._c(eps)
        collisions = (1 - 2.0 / m) ** 2 + 4 * (1.0 / m) * (1 - 1.0 / m) / k
        return self._r ** 2 * (c * c - collisions) / 4

    def held_variances(self, eps: np.ndarray) -> np.ndarray:
        c = self._c(eps)
        return self._r ** 2 * (c * c - 1) / 4

    def _report_moments(self, kappa, eps):
        c = float(self._c(eps))
        r, m = self._r, self.n_columns
        return r * (kappa - 1.0 / m), r * r * (c * c - (2 * kappa - 1) ** 2) / 4

    # ------------------------------------------------------------ report layout
    def _padding_mask(self) -> int:
        """Bits of the last word that lie beyond sign ``m - 1`` (as a uint64 mask)."""
        used = self.n_columns - 64 * (self.n_words - 1)
        return 0 if used == 64 else ((1 << 64) - 1) ^ ((1 << used) - 1)

    def pack_reports(self, rows: ArrayLike, signs: ArrayLike) -> np.ndarray:
        """Reports from row indices and ``+-1`` signs (the layout of the class Notes).

        Parameters
        ----------
        rows : array_like of int, shape (n,)
            Row indices in ``[0, n_rows)``.
        signs : array_like, shape (n, n_columns)
            ``+1`` or ``-1`` entries.

        Returns
        -------
        int64 array, shape (n, 1 + ceil(m / 64))
        """
        owner = "CMS.pack_reports"
        s = np.asarray(signs)
        j = np.asarray(rows)
        n, m = j.shape[0] if j.ndim == 1 else -1, self.n_columns
        if (j.ndim != 1 or j.dtype.kind not in "iu"
                or (n and (j.min() < 0 or j.max() >= self.n_rows))):
            raise param_error("rows", owner, f"a 1-d array of integers in [0, {self.n_rows})",
                              f"an array of dtype {j.dtype} and shape {j.shape}")
        if s.shape != (n, m) or not np.isin(s, (-1, 1)).all():
            raise param_error("signs", owner, f"an ({n}, {m}) array of +1 and -1",
                              f"an array of shape {s.shape}")
        bits = np.packbits(s > 0, axis=1, bitorder="little")
        return self._rows_of_bits(j.astype(np.int64), bits)

    def _rows_of_bits(self, rows: np.ndarray, bits: np.ndarray) -> np.ndarray:
        """Reports from row indices and the packed ``(n, ceil(m / 8))`` little-endian bits."""
        return cms_report_rows(rows, bits, self.n_words)

    def _packed_bits(self, clean: np.ndarray) -> np.ndarray:
        """The sign words of clean reports as ``(n, 8 W)`` little-endian bytes (bit l = sign l)."""
        return np.ascontiguousarray(clean[:, 1:], dtype="<i8").view(np.uint8)

    def unpack_reports(self, reports: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """Row indices and ``+-1`` signs of legal reports (the inverse of :meth:`pack_reports`).

        Parameters
        ----------
        reports : int64 array, shape (n, 1 + ceil(m / 64))

        Returns
        -------
        rows : int64 array, shape (n,)
        signs : int8 array, shape (n, n_columns)
        """
        arr = np.asarray(reports)
        if arr.ndim != 2 or arr.shape[1] != self.report_width or arr.dtype.kind not in "iu":
            raise self._shape_error("CMS.unpack_reports", None, arr.shape)
        clean = arr.view(np.int64) if arr.dtype == np.uint64 else arr.astype(np.int64, copy=False)
        bits = np.unpackbits(self._packed_bits(clean), axis=1, bitorder="little",
                             count=self.n_columns)
        return clean[:, 0].copy(), (2 * bits.astype(np.int8) - 1)

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """Exact law ``P[x, j 2^m + s]`` of the report ``(j, signs s)`` given the hashes.

        Column ``j 2^m + s``: row index ``j`` and the sign vector whose bit
        ``l`` is 1 for ``+1`` (the report's first word). Needs ``m <= 12``.
        """
        m, k, D = self.n_columns, self.n_rows, self.domain_size
        if m > CHANNEL_MAX_M:
            raise ValueError(f"channel() enumerates k 2^m outputs; needs m <= {CHANNEL_MAX_M}, "
                             f"got m = {m}")
        q, p = (float(v) for v in self._flip(eps))
        bits = (np.arange(2**m)[None, :] >> np.arange(m)[:, None]) & 1  # (m, 2^m)
        table = self.hash_table()
        law = np.empty((D, k, 2**m))
        for x in range(D):
            for j in range(k):
                on = np.where(np.arange(m) == table[j, x], p, q)[:, None]  # P(sign l = +1)
                law[x, j] = np.prod(np.where(bits == 1, on, 1.0 - on), axis=0) / k
        return law.reshape(D, k * 2**m)

    # ------------------------------------------------------------ client
    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        """Array layer of :meth:`privatize`: ``(n, 1 + ceil(m / 64))`` int64 reports.

        The row ``j ~ U[k]``, then the signs from the unary-encoding kernel:
        bit ``h_j(x)`` is 1 with probability ``e^(eps/2) / (1 + e^(eps/2))``,
        every other bit with ``1 / (1 + e^(eps/2))`` (SUE over ``m``
        buckets).
        """
        n = values.shape[0]
        rows = np.asarray(rng.integers(0, self.n_rows, n), dtype=np.int64)
        buckets = self.hash(rows, values)
        q, p = self._flip(eps)
        key = rng.integers(0, 2**64, size=2, dtype=np.uint64)
        bits = ue_perturb(int(key[0]), int(key[1]), np.ascontiguousarray(buckets, dtype=np.int64),
                          np.ascontiguousarray(np.broadcast_to(np.ldexp(q, 64).astype(np.uint64),
                                                               (n,))),
                          np.ascontiguousarray(np.broadcast_to(p, (n,)), dtype=np.float64),
                          self.n_columns, self.n_threads)
        return self._rows_of_bits(rows, bits)

    # ------------------------------------------------------------ server statistic
    def _stat_size(self):
        return self.n_rows * self.n_columns

    def _bit_sums(self, rows: np.ndarray, packed: np.ndarray,
                  weights: Optional[np.ndarray]) -> np.ndarray:
        """``sum_i w_i [j_i = j] bit_i(l)`` per cell ``(j, l)``, flattened (int64 or float64).

        Reports are grouped by row (a stable sort); with at least
        ``_GROUP_MIN`` reports per row on average, each row's bits are
        counted by the carry-save kernel of unary encoding, otherwise they
        are unpacked in blocks and summed per row. Unit weights give exact
        integer counts; integer-valued weights give exact float sums
        (:func:`~fastldp.oracles._base.add_weighted_hits`).
        """
        k, m = self.n_rows, self.n_columns
        bits_per_row = 8 * packed.shape[1]
        out = np.zeros((k, m), dtype=np.int64 if weights is None else np.float64)
        n = rows.shape[0]
        if n == 0:
            return out.ravel()
        # a stable sort of 16-bit keys is a radix sort; np.take gathers whole rows of words
        order = np.argsort(rows.astype(np.uint16) if k <= 1 << 16 else rows, kind="stable")
        sorted_rows = rows[order]
        starts = np.flatnonzero(np.r_[True, sorted_rows[1:] != sorted_rows[:-1]])
        ends = np.r_[starts[1:], n]
        words = np.ascontiguousarray(packed).view(np.uint64)
        grouped = np.take(words, order, axis=0).view(np.uint8)
        w = None if weights is None else np.take(np.asarray(weights, dtype=np.float64), order)
        if n >= _GROUP_MIN * starts.shape[0]:
            for a, b in zip(starts.tolist(), ends.tolist()):
                part = grouped[a:b]
                if w is None:
                    out[sorted_rows[a]] = ue_counts(part, bits_per_row, self.n_threads)[:m]
                else:
                    out[sorted_rows[a]] = ue_weighted_counts(part, w[a:b], bits_per_row,
                                                             self.n_threads)[:m]
            return out.ravel()
        step = max(1, _UNPACK_CELLS // m)
        for a in range(0, n, step):
            b = min(n, a + step)
            bits = np.unpackbits(grouped[a:b], axis=1, bitorder="little", count=m)
            local = np.r_[0, starts[(starts > a) & (starts < b)] - a]
            if w is None:
                sums = np.add.reduceat(bits, local, axis=0, dtype=np.int64)
            else:
                sums = np.add.reduceat(bits * w[a:b, None], local, axis=0)
            out[sorted_rows[a + local]] += sums
        return out.ravel()

    def _hits(self, clean, identities):
        return self._unit_hits(clean)

    def _unit_hits(self, clean: np.ndarray) -> np.ndarray:
        """The bit counts per cell ``(j, l)`` of legal reports, flattened (the counting kernel)."""
        hits = self._kernel_hits(np.ascontiguousarray(clean, dtype=np.int64))
        if hits is None:  # pragma: no cover - sanitized reports are legal
            raise ValueError("CMS: the bit counts need legal reports")
        return hits

    def _kernel_hits(self, arr):
        counts = cms_counts(arr, self.n_rows, self.n_columns, self.n_threads)
        return None if counts is None else counts.ravel()

    def _legal_table(self, reports, n):
        """The ``(k, m)`` bit counts of reports all legal as sent (one pass), else None."""
        arr = int64_rows(reports, n, self.report_width)
        if arr is None:
            return None
        return cms_counts(arr, self.n_rows, self.n_columns, self.n_threads)

    def _estimate_from_table(self, counts, n):
        """The equal-budget estimate from the ``(k, m)`` bit counts (reused as the sketch).

        The operations of :meth:`_counts_from_hits` and
        :meth:`_sketch_from_hits`, the sketch's done in place.
        """
        B = int64_to_float64(counts.reshape(-1)).reshape(counts.shape)
        c, k = float(self._c(self.epsilon)), self.n_rows
        est_counts = self._counts_from_hits(B, n)
        B *= k * c
        B += n * (1 - c) / 2
        return self._equal_budget_estimate(est_counts, n, SketchEstimate, sketch=B,
                                           codebook_seed=self.codebook_seed)

    def _report_terms(self, eps, lam):
        """``a_i = lam_i r c_i`` per set bit and ``lam_i r (1/2 - 1/m - c_i / 2)`` per report.

        ``c_i(v) = r ((c_i / 2)(2 b_i(v) - 1) + 1/2 - 1/m)`` with ``b_i(v)``
        the bit of report ``i`` at ``(j_i, h_{j_i}(v))``.
        """
        c = self._c(eps)
        r, m = self._r, self.n_columns
        a = np.ascontiguousarray(lam * r * c, dtype=np.float64)
        return a, lam * r * (0.5 - 1.0 / m - c / 2)

    def weighted_sums(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                      lam: np.ndarray) -> tuple[ExactSum, ExactSum]:
        """Exact ``Z[j, l] = sum_i a_i [j_i = j] b_i(l)`` and the constant of every count.

        ``a_i = lam_i r c_i`` (:meth:`_report_terms`). The bit-count kernel
        sums floats, so it runs on unit weights per distinct ``a_i`` or on
        integer limbs of the ``a_i``
        (:func:`~fastldp.oracles._base.add_weighted_hits`); the counts map
        the rounded table through the hashes (:meth:`weighted_counts`).
        """
        a, c = self._report_terms(eps, lam)
        table = ExactSum(self._stat_size())
        rows, packed = clean[:, 0], self._packed_bits(clean)

        def hits(members, w):
            if w is None:  # unit weights: the counting kernel
                return self._unit_hits(clean if members is None else clean[members])
            if members is None:
                return self._bit_sums(rows, packed, w)
            return self._bit_sums(rows[members], packed[members], w)

        add_weighted_hits(table, a, hits)
        return table, scalar_sum(c)

    def weighted_counts(self, support: ExactSum, offset: ExactSum) -> np.ndarray:
        """``sum_j Z[j, h_j(v)]`` of the rounded table, plus the constant."""
        table = support.value().reshape(self.n_rows, self.n_columns)
        return self._counts_of_table(table) + float(offset.value()[0])

    def _counts_from_hits(self, hits, n):
        c = float(self._c(self.epsilon))
        r, m = self._r, self.n_columns
        T = self._counts_of_table(np.asarray(hits, dtype=np.float64).reshape(self.n_rows, m))
        return r * (c * T + n * (0.5 - 1.0 / m - c / 2))

    def _sketch_from_hits(self, hits, n):
        c, k = float(self._c(self.epsilon)), self.n_rows
        B = np.asarray(hits, dtype=np.float64).reshape(k, self.n_columns)
        return k * c * B + n * (1 - c) / 2

    def _sketch_from_sums(self, support, offset, n):
        k, m, r = self.n_rows, self.n_columns, self._r
        Z = support.value().reshape(k, m)
        return (k / r) * Z + (float(offset.value()[0]) / r + n / m)

    # ------------------------------------------------------------ sanitization
    def _legal_rows(self, arr: np.ndarray) -> Optional[np.ndarray]:
        """``arr`` as clean int64 reports when it is an integer array of legal rows, else None."""
        if arr.dtype.kind not in "iu" or arr.dtype.itemsize > 8 or arr.shape[0] == 0:
            return None
        clean = arr.view(np.int64) if arr.dtype == np.uint64 else arr.astype(np.int64, copy=False)
        j = clean[:, 0]
        if j.min() < 0 or j.max() >= self.n_rows:
            return None
        pad = self._padding_mask()
        if pad and (clean[:, -1].view(np.uint64) & np.uint64(pad)).any():
            return None
        return np.ascontiguousarray(clean, dtype=np.int64)

    def public_rows(self, identities: np.ndarray) -> np.ndarray:
        """Public uniformly random legal reports keyed by ``(codebook seed, identity)``.

        The row index from word 1 of block 0 of the sanitize stream, the
        sign words from blocks 1, 2, ... (padding bits cleared).
        """
        ids = np.ascontiguousarray(identities, dtype=np.uint64)
        n, W = ids.shape[0], self.n_words
        j = public_uniform(self.codebook_seed, ids, np.full(n, self.n_rows), word=1)
        words = hash_blocks(self.codebook_seed, ids, (W + 3) // 4 + 1,
                            SANITIZE_STREAM)[:, 1:, :].reshape(n, -1)[:, :W].copy()
        pad = self._padding_mask()
        if pad:
            words[:, -1] &= np.uint64(((1 << 64) - 1) ^ pad)
        out = np.empty((n, 1 + W), dtype=np.int64)
        out[:, 0] = j
        out[:, 1:] = words.view(np.int64)
        return out

    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        """Replace illegal report rows by public random legal rows; count them by reason.

        A row is illegal when an entry is not a number (``non_numeric``),
        not an integer (``non_integer``), or the row index lies outside
        ``[0, k)``, a word outside ``[-2**63, 2**64)`` or a padding bit is
        set (``out_of_range``); sign words are read exactly, as 64-bit
        two's complement.
        """
        n = eps.shape[0]
        arr = self._report_rows(reports, n, self.report_width, owner)
        clean = self._legal_rows(arr) if n else np.zeros((0, self.report_width), np.int64)
        if clean is not None:
            return clean, all_legal_report(n)
        wrong_dtype = arr.dtype.kind not in "iu"
        if not wrong_dtype:  # integers of the right layout: only the range can be wrong
            values = arr.view(np.int64) if arr.dtype == np.uint64 else arr.astype(np.int64)
            numeric = integral = np.ones(arr.shape, dtype=bool)
            in_word = np.ones(arr.shape, dtype=bool)
        else:
            values, numeric, integral, in_word = _exact_words(arr)
        j_ok = (values[:, 0] >= 0) & (values[:, 0] < self.n_rows)
        pad = self._padding_mask()
        pad_ok = ((values[:, -1].view(np.uint64) & np.uint64(pad)) == 0) if pad else True
        legal = j_ok & (integral & in_word).all(axis=1) & pad_ok
        numeric_row, integral_row = numeric.all(axis=1), integral.all(axis=1)
        out = np.ascontiguousarray(values, dtype=np.int64).copy()
        bad = ~legal
        if bad.any():
            out[bad] = self.public_rows(identities[bad])
        return out, tally_report(n, numeric_row, integral_row, legal, wrong_dtype)


def _exact_words(arr: np.ndarray):
    """Entries of a non-integer array as exact 64-bit words.

    Returns ``(values, numeric, integral, in_word)``: the int64 two's
    complement of every integer in ``[-2**63, 2**64)`` (0 elsewhere); the
    entry is a number; a finite integer; inside that range. Floats are
    exact integers when integral; Python integers of any size are read
    exactly (an object array), never through a float.
    """
    shape = arr.shape
    values = np.zeros(shape, dtype=np.int64)
    if arr.dtype.kind in "fb":
        v = arr.astype(np.float64)
        with np.errstate(invalid="ignore"):
            finite = np.isfinite(v)
            safe = np.where(finite, v, 0.0)
            integral = finite & (np.floor(safe) == safe)
        in_word = integral & (safe >= -2.0**63) & (safe < 2.0**64)
        low = in_word & (safe < 2.0**63)
        values[low] = safe[low].astype(np.int64)
        high = in_word & ~low
        values[high] = (safe[high] - 2.0**64).astype(np.int64)
        return values, np.ones(shape, dtype=bool), integral, in_word
    flat = arr.ravel()
    numeric = np.zeros(flat.shape[0], dtype=bool)
    integral = np.zeros(flat.shape[0], dtype=bool)
    in_word = np.zeros(flat.shape[0], dtype=bool)
    out = values.ravel()
    for t, item in enumerate(flat):
        numeric[t], exact = _exact_integer(item)
        if exact is None:
            continue
        integral[t] = True
        if -2**63 <= exact < 2**64:
            in_word[t] = True
            out[t] = exact - 2**64 if exact >= 2**63 else exact
    return (out.reshape(shape), numeric.reshape(shape), integral.reshape(shape),
            in_word.reshape(shape))


def _exact_integer(item: Any) -> tuple[bool, Optional[int]]:
    """``(is a number, its exact integer value or None)`` for one entry of an object array."""
    if isinstance(item, (bool, np.bool_, int, np.integer)):
        return True, int(item)
    if isinstance(item, (float, np.floating)):
        f = float(item)
        return True, (int(f) if math.isfinite(f) and f == math.floor(f) else None)
    one = np.empty(1, dtype=object)
    one[0] = item
    _, numeric, _, _ = classify_integers(one)
    return bool(numeric[0]), None


class HCMS(_CountMeanSketch):
    """Apple's Hadamard Count Mean Sketch: one signed Hadamard coefficient per report.

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700] or None
        The bit is flipped with probability ``1 / (1 + e^eps)``.
    n_rows : int >= 1
        ``k``, the number of hash functions (default 256).
    n_columns : int >= 2, a power of two
        ``m``, their range and the Hadamard order (default 1024); ``k m <= 2**24``.
    categories : list of labels or a pandas Categorical, optional
        Labels of the symbols (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        Seed of the hash functions (and of the sanitization coins).
    n_threads : int or None
        Threads of the server kernel; results never depend on it.

    Notes
    -----
    Reports are int64 arrays of shape ``(n, 3)``: the row index ``j`` in
    ``[0, k)``, the Hadamard row ``l`` in ``[0, m)`` (both public, drawn
    uniformly) and the signed bit ``omega = +-H_m[l, h_j(x)]`` in
    ``{-1, +1}``. Anything else is sanitized and counted. The estimate is a
    :class:`SketchEstimate`. See the module docstring for the server, the
    bias of a fixed set of hash functions and the variances.

    Examples
    --------
    >>> import numpy as np
    >>> hcms = HCMS(domain_size=100, epsilon=2.0, n_rows=32, n_columns=128, codebook_seed=5)
    >>> reports = hcms.privatize(np.arange(20_000) % 100, rng=0)
    >>> reports.shape, sorted(set(reports[:, 2].tolist()))  # rows (j, l, omega)
    ((20000, 3), [-1, 1])
    >>> est = hcms.estimate(reports)
    >>> bool(np.all(np.abs(est.counts - 200) < 6 * est.std))
    True
    """

    name = "hcms"
    _layout = "(row index, Hadamard row, +-1)"

    @property
    def report_width(self) -> int:
        """Entries per report: 3."""
        return 3

    def _check_columns(self, owner: str) -> None:
        m = self.n_columns
        if m & (m - 1):
            raise param_error("n_columns", owner,
                              f"a power of two in [2, {MAX_CELLS // self.n_rows}] (the Hadamard "
                              "order)", m)

    def _flip(self, eps):
        return 1.0 / (np.exp(np.asarray(eps, dtype=np.float64)) + 1.0)

    def _c(self, eps):
        return c_eps(eps)

    def variances(self, eps: np.ndarray) -> np.ndarray:
        m, k = self.n_columns, self.n_rows
        c = self._c(eps)
        collisions = 1.0 / m**2 + (1.0 / m) * (1 - 1.0 / m) / k
        return self._r ** 2 * (c * c - collisions)

    def held_variances(self, eps: np.ndarray) -> np.ndarray:
        c = self._c(eps)
        return self._r ** 2 * (c * c - 1)

    def _report_moments(self, kappa, eps):
        c = float(self._c(eps))
        r, m = self._r, self.n_columns
        return r * (kappa - 1.0 / m), r * r * (c * c - kappa**2)

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """Exact law ``P[x, (j m + l) 2 + (omega + 1) / 2]`` of the report given the hashes."""
        m, k, D = self.n_columns, self.n_rows, self.domain_size
        q = float(self._flip(eps))
        table = self.hash_table()  # (k, D)
        ls = np.arange(m, dtype=np.int64)
        law = np.empty((D, k, m, 2))
        for j in range(k):
            w = hadamard_entries(np.tile(ls, D), np.repeat(table[j], m)).reshape(D, m)
            law[:, j, :, 1] = np.where(w > 0, 1 - q, q) / (k * m)
            law[:, j, :, 0] = np.where(w < 0, 1 - q, q) / (k * m)
        return law.reshape(D, 2 * k * m)

    # ------------------------------------------------------------ client
    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        """Array layer of :meth:`privatize`: ``(n, 3)`` int64 reports ``(j, l, omega)``."""
        n = values.shape[0]
        rows = np.asarray(rng.integers(0, self.n_rows, n), dtype=np.int64)
        cols = np.asarray(rng.integers(0, self.n_columns, n), dtype=np.int64)
        w = hadamard_entries(cols, self.hash(rows, values)).astype(np.int64)
        flip = rng.random(n) < self._flip(eps)
        return np.stack([rows, cols, np.where(flip, -w, w)], axis=1)

    # ------------------------------------------------------------ server statistic
    def _stat_size(self):
        return 2 * self.n_rows * self.n_columns

    def _cells(self, clean):
        """Position ``2 (j m + l) + (omega + 1) / 2`` of every report."""
        return 2 * (clean[:, 0] * self.n_columns + clean[:, 1]) + (clean[:, 2] > 0)

    def _hits(self, clean, identities):
        hits = self._kernel_hits(np.ascontiguousarray(clean, dtype=np.int64))
        if hits is None:  # pragma: no cover - sanitized reports are legal
            raise ValueError("HCMS: the cell counts need legal reports")
        return hits

    def _kernel_hits(self, arr):
        return hcms_counts(arr, self.n_rows, self.n_columns, False)

    def _legal_table(self, reports, n):
        """``Z[j, l]``, the signed sum of the reports at ``(j, l)``, when all are legal, else None."""
        arr = self._int64_triples(reports, n)
        return None if arr is None else hcms_counts(arr, self.n_rows, self.n_columns, True)

    def _fast_hits(self, reports, n, identities, owner):
        arr = self._int64_triples(reports, n)
        hits = None if arr is None else hcms_counts(arr, self.n_rows, self.n_columns, False)
        if hits is not None:
            self._identities(identities, n, owner)
        return hits

    @staticmethod
    def _int64_triples(reports, n):
        """:func:`~fastldp.oracles.flh.int64_rows`, but not of uint64 arrays.

        A uint64 ``omega`` of ``2**64 - 1`` is not ``-1``: such arrays go the
        sanitizing way (:meth:`sanitize` reads entries at or above ``2**63``
        as out of range).
        """
        if isinstance(reports, np.ndarray) and reports.dtype == np.uint64:
            return None
        return int64_rows(reports, n, 3)

    def _transformed(self, signed: np.ndarray) -> np.ndarray:
        """``Z H_m`` of an integer ``(k, m)`` table ``Z``, as float64 in ``Z``'s own memory.

        The same numbers as :func:`fwht_rows` of ``Z`` as floats: every
        partial sum is an integer of magnitude at most ``n``, exact in both.
        ``signed`` (C-contiguous int64) is consumed.
        """
        fwht_rows_int64(signed, self.n_threads)
        return int64_to_float64(signed.reshape(-1)).reshape(signed.shape)

    def _estimate_from_table(self, signed, n):
        """The equal-budget estimate from ``Z`` (:meth:`_counts_from_hits`, the sketch in place)."""
        c = float(self._c(self.epsilon))
        F = self._transformed(signed)
        counts = self._r * (c * self._counts_of_table(F) - n / self.n_columns)
        F *= self.n_rows * c
        return self._equal_budget_estimate(counts, n, SketchEstimate, sketch=F,
                                           codebook_seed=self.codebook_seed)

    def _report_terms(self, eps, lam):
        """``a_i = lam_i r c_i`` at the report's cell and ``-lam_i r / m`` per report."""
        a = np.ascontiguousarray(lam * self._r * self._c(eps), dtype=np.float64)
        return a, -lam * self._r / self.n_columns

    def weighted_sums(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                      lam: np.ndarray) -> tuple[ExactSum, ExactSum]:
        """Exact ``sum_i a_i`` per cell ``(j, l, omega)`` and the constant ``-sum_i lam_i r / m``.

        The counts take the exact difference of the ``omega = +1`` and
        ``-1`` cells, rounded once (:meth:`_signed_table`).
        """
        a, c = self._report_terms(eps, lam)
        table = ExactSum(self._stat_size())
        table.add(a, self._cells(clean))
        return table, scalar_sum(c)

    def _signed_table(self, support: ExactSum) -> np.ndarray:
        """``Z[j, l]`` = the ``+1`` cell minus the ``-1`` cell, computed exactly, rounded once."""
        k, m = self.n_rows, self.n_columns
        k_lo, digits = support.canonical()
        if digits.shape[0] == 0:
            return np.zeros((k, m))
        pairs = digits.reshape(digits.shape[0], k * m, 2)
        diff = ExactSum.from_digits(k * m, k_lo, pairs[:, :, 1] - pairs[:, :, 0])
        return diff.value().reshape(k, m)

    def weighted_counts(self, support: ExactSum, offset: ExactSum) -> np.ndarray:
        """``sum_j (Z H_m)[j, h_j(v)]`` plus the constant."""
        return (self._counts_of_table(fwht_rows(self._signed_table(support)))
                + float(offset.value()[0]))

    def _signed_hits(self, hits):
        """``Z H_m`` for the hit counts (float64 holding integers): the +1 minus the -1 cells."""
        h = np.asarray(hits).reshape(self.n_rows, self.n_columns, 2)
        return self._transformed(h[:, :, 1].astype(np.int64) - h[:, :, 0].astype(np.int64))

    def _counts_from_hits(self, hits, n):
        c = float(self._c(self.epsilon))
        T = self._counts_of_table(self._signed_hits(hits))
        return self._r * (c * T - n / self.n_columns)

    def _sketch_from_hits(self, hits, n):
        c = float(self._c(self.epsilon))
        return self.n_rows * c * self._signed_hits(hits)

    def _sketch_from_sums(self, support, offset, n):
        return (self.n_rows / self._r) * fwht_rows(self._signed_table(support))

    # ------------------------------------------------------------ sanitization
    def _all_legal(self, arr) -> bool:
        lo, hi = arr.min(axis=0), arr.max(axis=0)
        if arr.dtype.kind == "u":
            signs_ok = bool((arr[:, 2] == 1).all())
        else:
            signs_ok = bool((np.abs(arr[:, 2]) == 1).all())
        return bool(lo[0] >= 0 and hi[0] < self.n_rows and lo[1] >= 0
                    and hi[1] < self.n_columns and signs_ok)

    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        """Replace illegal ``(j, l, omega)`` by public uniform legal triples, counted by reason."""
        n = eps.shape[0]
        arr = self._report_rows(reports, n, 3, owner)
        if arr.dtype.kind in "iu" and n and arr.dtype.itemsize <= 8 and self._all_legal(arr):
            return np.ascontiguousarray(arr, dtype=np.int64), all_legal_report(n)
        values, numeric, integral, wrong_dtype = classify_integers(arr)
        k, m = self.n_rows, self.n_columns
        in_range = integral & np.stack([(values[:, 0] >= 0) & (values[:, 0] < k),
                                        (values[:, 1] >= 0) & (values[:, 1] < m),
                                        np.abs(values[:, 2]) == 1], axis=1)
        if arr.dtype == np.uint64:  # classify_integers reads 2**63 and above as -1
            in_range &= arr < np.uint64(2**63)
        legal = in_range.all(axis=1)
        numeric_row, integral_row = numeric.all(axis=1), integral.all(axis=1)
        out = values.copy()
        bad = ~legal
        if bad.any():
            ids = identities[bad]
            size = ids.shape[0]
            out[bad, 0] = public_uniform(self.codebook_seed, ids, np.full(size, k), word=1)
            out[bad, 1] = public_uniform(self.codebook_seed, ids, np.full(size, m), word=2)
            out[bad, 2] = 2 * public_uniform(self.codebook_seed, ids, np.full(size, 2), word=3) - 1
        return out, tally_report(n, numeric_row, integral_row, legal, wrong_dtype)
