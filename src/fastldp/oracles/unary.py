"""Unary encoding: optimized (OUE) and symmetric (SUE), with bit-packed reports.

The client one-hot encodes its symbol as ``D`` bits and flips them
independently: the held bit is 1 with probability ``p``, every other bit
with probability ``q``. The report is that bit vector packed with
``numpy.packbits(bits, axis=-1, bitorder="little")``: shape
``(n, ceil(D / 8))`` uint8, symbol ``v`` in bit ``v & 7`` of byte ``v >> 3``,
the padding bits of the last byte zero. Every such array is a legal output.

* OUE: ``p = 1/2``, ``q = 1 / (e^eps + 1)``;
* SUE (basic RAPPOR): ``p = e^(eps/2) / (e^(eps/2) + 1)``, ``q = 1 - p``.

Either way ``p (1 - q) / (q (1 - p)) = e^eps``: two inputs differ in two
bits. The estimate ``c(v) = (b_v - q) / (p - q)`` has variance
``q (1 - q) / (p - q)^2`` at a symbol not held and ``p (1 - p) / (p - q)^2``
at the held one; for OUE the first is ``4 e^eps / (e^eps - 1)^2``, OLH's
variance without the hashing.

Client: one Philox key is drawn from the caller's Generator; row ``i``'s bits
come from that key and ``i`` (``src/unary.h``: xoshiro256++ seeded by the
Philox block of ``(key, i)``; 64 Bernoulli bits from about seven random
words, each bit ``[U < q 2^64]`` for a uniform 64-bit ``U``), so the reports
do not depend on the thread count.
Server: column counts with a carry-save adder, about seven word operations
per 64 report bits; personal budgets weight each row by ``1 / (p_i - q_i)``,
summed exactly (one carry-save count per distinct weight, or two passes of
the weighted kernel over integer limbs of the weights, see
:meth:`UnaryEncoding.weighted_sums`), so a decode split into chunks is
bit-identical to the one-shot decode.

Sanitization: a report row that is not ``ceil(D / 8)`` integers in
``[0, 255]`` with zero padding bits is replaced by public uniformly random
bits keyed by ``(codebook seed, identity)`` and counted (``non_numeric``,
``non_integer``, ``out_of_range``, the first that applies to the row).

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally differentially private
   protocols for frequency estimation", USENIX Security 2017, section 4.3.
.. [2] U. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response", CCS 2014 (SUE is basic RAPPOR).
"""

from __future__ import annotations

from typing import Optional

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._hash import SANITIZE_STREAM, hash_blocks
from .._kernels._unary import ue_counts, ue_perturb, ue_weighted_counts
from .._sanitize import SanitizationReport
from ..streaming import ExactSum
from ._base import (
    CountChannel, FrequencyOracle, MatrixReports, add_weighted_hits, all_legal_report,
    classify_integers, scalar_sum, tally_report,
)

__all__ = ["OUE", "SUE", "UnaryEncoding"]

CHANNEL_MAX_D = 12  # channel() enumerates 2^D outputs


def _thresholds(q: np.ndarray) -> np.ndarray:
    """``floor(q 2^64)`` as uint64 (exact for q >= 2^-12; q < 1)."""
    return np.ldexp(q, 64).astype(np.uint64)


class UnaryEncoding(MatrixReports, FrequencyOracle):
    """Unary encoding with bit-packed reports; :class:`OUE` and :class:`SUE` fix ``(p, q)``.

    Parameters are those of :class:`~fastldp.oracles.FrequencyOracle`; the
    subclass gives ``(p, q)`` as a function of the budget.

    Examples
    --------
    >>> import numpy as np
    >>> oue = OUE(domain_size=10, epsilon=1.0, codebook_seed=0)
    >>> isinstance(oue, UnaryEncoding), oue.n_bytes
    (True, 2)
    >>> bits = np.unpackbits(oue.privatize([3], rng=0), axis=-1, bitorder="little")[0, :10]
    >>> bits.shape
    (10,)
    """

    name = "ue"

    def _pq(self, eps):  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def n_bytes(self) -> int:
        """Bytes per report, ``ceil(D / 8)``."""
        return (self.domain_size + 7) // 8

    def variances(self, eps: np.ndarray) -> np.ndarray:
        p, q = self._pq(eps)
        return q * (1 - q) / (p - q) ** 2

    def held_variances(self, eps: np.ndarray) -> np.ndarray:
        p, q = self._pq(eps)
        return p * (1 - p) / (p - q) ** 2

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """Exact law ``P[x, y]`` for every symbol ``x`` and every bit vector ``y``.

        Column ``y`` is the vector whose bit ``v`` is ``(y >> v) & 1``;
        :meth:`pack_outputs` gives the matching reports. Needs ``D <= 12``.
        """
        D = self.domain_size
        if D > CHANNEL_MAX_D:
            raise ValueError(f"channel() enumerates 2^D outputs; needs D <= {CHANNEL_MAX_D}, "
                             f"got D = {D}")
        p, q = (float(v[0]) for v in self._pq(np.array([eps], dtype=np.float64)))
        bits = (np.arange(2**D)[None, :] >> np.arange(D)[:, None]) & 1  # (D, 2^D): bit v of y
        law = np.empty((D, 2**D))
        for x in range(D):
            prob = np.where(bits == 1, q, 1 - q)
            prob[x] = np.where(bits[x] == 1, p, 1 - p)
            law[x] = prob.prod(axis=0)
        return law

    def _count_channel(self, eps: float, statistic: str) -> CountChannel:
        """The bit counts: bit ``v`` is set with probability ``p`` by a holder of ``v``, else ``q``.

        A report sets several bits, so IBU on the counts maximizes their
        composite likelihood, not the exact likelihood of the reports.
        """
        p, q = (float(v[0]) for v in self._pq(np.array([eps], dtype=np.float64)))
        return CountChannel.symmetric(self.domain_size, p, q, exact=False)

    def pack_outputs(self, columns: np.ndarray) -> np.ndarray:
        """The packed reports of channel columns ``y`` (bit ``v`` of ``y`` is symbol ``v``)."""
        y = np.asarray(columns, dtype=np.int64)
        bits = ((y[:, None] >> np.arange(self.domain_size)[None, :]) & 1).astype(np.uint8)
        return np.packbits(bits, axis=1, bitorder="little")

    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        """Array layer of :meth:`privatize`: packed ``(n, ceil(D / 8))`` uint8 reports."""
        p, q = self._pq(eps)
        n = values.shape[0]
        key = rng.integers(0, 2**64, size=2, dtype=np.uint64)
        return ue_perturb(int(key[0]), int(key[1]), np.ascontiguousarray(values, dtype=np.int64),
                          np.ascontiguousarray(np.broadcast_to(_thresholds(q), (n,))),
                          np.ascontiguousarray(np.broadcast_to(p, (n,)), dtype=np.float64),
                          self.domain_size, self.n_threads)

    # ------------------------------------------------------------ server statistic
    def weighted_sums(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                      lam: np.ndarray) -> tuple[ExactSum, ExactSum]:
        """Exact ``sum_i a_i b_i(v)`` per symbol and ``-sum_i a_i q_i``.

        ``a_i = lam_i / (p_i - q_i)``.
        The weighted column-count kernel sums floats, so it runs on unit
        weights per distinct ``a_i`` (the integer carry-save counts) or on
        integer limbs of the ``a_i``
        (:func:`~fastldp.oracles._base.add_weighted_hits`); the exact integer
        sums go into an :class:`~fastldp.streaming.ExactSum`, and the offset
        is an ``ExactSum`` of the per-report terms.
        """
        a, c = self._report_terms(eps, lam)
        support = ExactSum(self.domain_size)

        def hits(members, w):
            rows = clean if members is None else np.ascontiguousarray(clean[members])
            if w is None:
                return ue_counts(rows, self.domain_size, self.n_threads)
            return ue_weighted_counts(rows, w, self.domain_size, self.n_threads)

        add_weighted_hits(support, a, hits)
        return support, scalar_sum(c)

    def _report_terms(self, eps, lam):
        p, q = self._pq(eps)
        a = np.ascontiguousarray(lam / (p - q), dtype=np.float64)
        return a, -(a * q)

    def _hits(self, clean, identities):
        return ue_counts(clean, self.domain_size, self.n_threads)

    def _counts_from_hits(self, hits, n):
        p, q = (float(v[0]) for v in self._pq(np.array([self.epsilon], dtype=np.float64)))
        return (hits - n * q) / (p - q)

    def _legal_as_is(self, reports, n):
        arr = reports
        if (isinstance(arr, np.ndarray) and arr.dtype == np.uint8 and arr.shape == (n, self.n_bytes)
                and arr.flags.c_contiguous and n):
            pad = self._padding_mask()
            if not pad or not (arr[:, -1] & np.uint8(pad)).any():
                return arr
        return None

    def _shape_error(self, owner, n, shape):
        rows = "n" if n is None else str(n)
        return ValueError(
            f"The 'reports' parameter of {owner} must be a ({rows}, {self.n_bytes}) uint8 array "
            f"(numpy.packbits(bits, axis=1, bitorder='little')). Got shape {shape} instead.")

    def _padding_mask(self) -> int:
        """Bits of the last byte that lie beyond symbol D - 1."""
        used = self.domain_size - 8 * (self.n_bytes - 1)
        return (0xFF << used) & 0xFF

    def public_rows(self, identities: np.ndarray) -> np.ndarray:
        """Public uniformly random legal reports keyed by ``(codebook seed, identity)``.

        Blocks 1, 2, ... of the sanitize stream (block 0 holds the coins of
        the integer oracles), read as little-endian bytes.
        """
        n_blocks = (self.n_bytes + 31) // 32
        words = hash_blocks(self.codebook_seed, np.ascontiguousarray(identities, dtype=np.uint64),
                            n_blocks + 1, SANITIZE_STREAM)[:, 1:, :]
        rows = np.ascontiguousarray(words.astype("<u8")).view(np.uint8)
        rows = rows.reshape(identities.shape[0], -1)[:, :self.n_bytes].copy()
        rows[:, -1] &= np.uint8(~self._padding_mask() & 0xFF)
        return rows

    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        """Replace illegal report rows by public random legal rows; count them by reason."""
        n = eps.shape[0]
        arr = self._report_rows(reports, n, self.n_bytes, owner)
        pad = np.uint8(self._padding_mask())
        if arr.dtype == np.uint8:
            legal = (arr[:, -1] & pad) == 0 if pad else np.ones(n, dtype=bool)
            if legal.all():
                return np.ascontiguousarray(arr), all_legal_report(n)
            numeric_row = integral_row = np.ones(n, dtype=bool)
            out = np.array(arr, dtype=np.uint8, order="C")
            wrong_dtype = False
        else:
            values, numeric, integral, wrong_dtype = classify_integers(arr)
            in_byte = integral & (values >= 0) & (values <= 255)
            numeric_row = numeric.all(axis=1)
            integral_row = integral.all(axis=1)
            out = np.where(in_byte, values, 0).astype(np.uint8)
            legal = in_byte.all(axis=1) & ((out[:, -1] & pad) == 0)
        bad = ~legal
        if bad.any():
            out[bad] = self.public_rows(identities[bad])
        return out, tally_report(n, numeric_row, integral_row, legal, wrong_dtype)


class OUE(UnaryEncoding):
    """Optimized unary encoding: ``p = 1/2``, ``q = 1 / (e^eps + 1)``.

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700] or None
    categories : list of labels or a pandas Categorical, optional
        Labels of the symbols (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        Only keys the sanitization coins.
    n_threads : int or None
        Threads of the client and server kernels; results never depend on it.

    Notes
    -----
    Reports are ``(n, ceil(D / 8))`` uint8 rows (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> oue = OUE(domain_size=20, epsilon=1.0, codebook_seed=0)
    >>> reports = oue.privatize(np.arange(4000) % 20, rng=0)
    >>> reports.shape, reports.dtype
    ((4000, 3), dtype('uint8'))
    >>> est = oue.estimate(reports)
    >>> bool(np.all(np.abs(est.counts - 200) < 5 * est.std))
    True
    """

    name = "oue"

    def _pq(self, eps):
        q = 1.0 / (np.exp(eps) + 1.0)
        return np.full_like(q, 0.5), q


class SUE(UnaryEncoding):
    """Symmetric unary encoding (basic RAPPOR): ``p = e^(eps/2) / (e^(eps/2) + 1)``, ``q = 1 - p``.

    Parameters
    ----------
    domain_size, epsilon, categories, codebook_seed, n_threads
        As :class:`OUE`.

    Examples
    --------
    >>> import numpy as np
    >>> sue = SUE(epsilon=2.0, categories=["yes", "no"], codebook_seed=0)
    >>> est = sue.estimate(sue.privatize(["yes"] * 300 + ["no"] * 700, rng=5))
    >>> est.to_frame()["category"].tolist()
    ['yes', 'no']
    """

    name = "sue"

    def _pq(self, eps):
        q = 1.0 / (np.exp(np.asarray(eps, dtype=np.float64) / 2.0) + 1.0)
        return 1.0 - q, q
