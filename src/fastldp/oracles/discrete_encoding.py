"""Discretized summation histogram encoding: integer reports, an exact channel, exact sums.

:class:`DiscreteSHE` is SHE (:mod:`fastldp.oracles.histogram_encoding`) on a
public grid ``g = 1 / M`` (``M = 2^k``): the client one-hot encodes its
symbol ``x``, scales it by ``M`` and adds to every coordinate an
independent **discrete Laplace** draw ``Z_v`` (``P(Z = z) ∝ exp(-|z| / t)``
on the integers, the exact sampler of :mod:`fastldp.noise`), then clamps to
a public range:

    y_v = clamp(M [v = x] + Z_v, -L, M + L)        (integers; the value is g y_v)

Privacy
-------
Two inputs change the one-hot part in two coordinates by ``M`` each (l1
sensitivity ``2 M`` in grid units), so the pmf ratio of the unclamped vector
is at most ``exp(2 M / t)``; clamping is post-processing. With the rational
scale ``t = ceil(2^16 * 2 M / eps) / 2^16 >= 2 M / eps`` the report is
exactly ``eps'``-LDP with the **effective epsilon** ``eps' = 2 M / t <= eps``
(:meth:`DiscreteSHE.effective_epsilon`), and the ratio is attained (at the
clamp ends: ``P(y_v = M + L | held) / P(y_v = M + L | not held) =
e^(M / t)``, twice). Every report is a vector of integers in a finite box,
so the channel is finite and is audited exactly on a tiny domain
(:mod:`fastldp.audit`, row ``she-discrete``). No floating point enters the
report: the floating-point attack on SHE's doubles (Mironov, CCS 2012)
has nothing to read.

Estimation
----------
With ``q = e^(-1/t)``, ``c = (1 - q) / (1 + q)`` and ``E[(Z - a)^+] = c q^(a+1)
/ (1 - q)^2`` for an integer ``a >= 0``, the clamped coordinate has mean

    mu_0 = E[y_v | not held] = c q (q^L - q^(M + L)) / (1 - q)^2,
    mu_1 = E[y_v | held] = M - mu_0               (reflection y -> M - y),

and the same variance ``s^2`` in both cases (:func:`clamped_moments`). The
server's statistic is the exact integer column sum ``S(v) = sum_i y_i[v]``
(int64 sums, merged exactly); the unbiased count is

    count(v) = (S(v) - n mu_0) / (M - 2 mu_0),

with variance ``s^2 / (M - 2 mu_0)^2`` per report, held symbol or not
(``8 / eps'^2 - 1 / (6 M^2)`` up to the clamp's ``O(q^L)``; SHE's is
``8 / eps^2``). The clamp's default ``L = ceil(40 t)`` keeps
``q^L < e^-40``. Personal budgets are decoded with the weights
``a_i = 1 / (M - 2 mu_0(eps_i))`` and offsets ``-a_i mu_0(eps_i)``, summed
exactly per distinct weight (integer column sums times the weight,
:func:`fastldp.oracles._base.scaled_sum`), so partials of any budgets merge
bit-identically.

Reports and sanitization
------------------------
Reports are int64 arrays of shape ``(n, D)``. A row holding a value that is
not a number (``non_numeric``), not an integer (``non_integer``: NaN,
``+-inf``, fractions) or outside ``[-L_i, M + L_i]`` (``out_of_range``) is
replaced by a public row of clamped discrete Laplace noise of the report's
law at a symbol not held (expectation ``mu_0`` per coordinate: it adds
nothing to any count in expectation), keyed by ``(codebook seed,
identity)``, and counted by the first reason that applies.

Why THE needs no discretized variant
------------------------------------
THE (:class:`~fastldp.oracles.THE`) releases bits. Its client draws each bit
from its Bernoulli law directly, with no Laplace draw at all, and the
release is one of ``2^D`` bit vectors whatever the floating point did: the
only floating-point quantities are the probabilities ``p, q`` themselves,
which the exact audit reads as the rationals the sampler realizes. A
thresholded float Laplace draw would not leak either (one bit per
coordinate carries only its law); so THE is already a finite, exactly
audited channel.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally differentially private
   protocols for frequency estimation", USENIX Security 2017, section 4.2.
.. [2] C. Canonne, G. Kamath, T. Steinke, "The discrete Gaussian for
   differential privacy", NeurIPS 2020 (the discrete Laplace sampler).
.. [3] I. Mironov, "On significance of the least significant bits for
   differential privacy", CCS 2012.
"""

from __future__ import annotations

import math
from fractions import Fraction
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._hash import SANITIZE_STREAM, hash_blocks
from .._sanitize import SanitizationReport
from .._validation import check_float, check_int, param_error
from ..streaming import ExactSum
from ._base import (
    FrequencyOracle, MatrixReports, add_broadcast, classify_integers, entry_error, scalar_sum,
    scaled_sum, tally_report,
)

__all__ = ["DiscreteSHE", "clamped_moments", "TAIL_SCALES", "SCALE_BITS"]

#: default clamp ``L = ceil(TAIL_SCALES * t)`` grid units beyond ``[0, M]``
TAIL_SCALES = 40
#: the noise scale in grid units is a multiple of ``2**-SCALE_BITS``
SCALE_BITS = 16
#: the largest noise scale in grid units (the clamp and the sums stay far inside int64)
MAX_UNITS = 2.0**40
_MAX_GRID_LOG2 = 20
#: distinct report weights above which personal sums round each product once
_MAX_WEIGHT_GROUPS = 64


def _units(eps: float, M: int) -> Fraction:
    """``t = ceil(2^16 * 2 M / eps) / 2^16`` (exact, from the double ``eps``)."""
    target = Fraction(2 * M) / Fraction(eps)
    den = 1 << SCALE_BITS
    return Fraction(-((-target.numerator * den) // target.denominator), den)


def clamped_moments(t: float, M: int, L: int) -> tuple[float, float]:
    """``(mu_0, s^2)``: mean and variance of ``clamp(Z, -L, M + L)``, ``Z`` discrete Laplace(t).

    Closed forms (module docstring): with ``q = e^(-1/t)``,
    ``c = (1 - q) / (1 + q)``, ``E[Z^2] = 2 q / (1 - q)^2`` and, for an
    integer ``a >= 0``, ``E[(Z - a)^+] = c q^(a+1) / (1 - q)^2`` and
    ``E[(Z^2 - a^2) [Z > a]] = c q^(a+1) (2 a / (1 - q)^2 + (1 + q) / (1 - q)^3)``.
    """
    inv = 1.0 / t
    q = math.exp(-inv)
    one_q = -math.expm1(-inv)                  # 1 - q without cancellation
    c = one_q / (1.0 + q)
    H = M + L

    def tail_first(a):                         # E[(Z - a)^+]
        return c * math.exp(-(a + 1) * inv) / one_q**2

    def tail_second(a):                        # E[(Z^2 - a^2) [Z > a]]
        return c * math.exp(-(a + 1) * inv) * (2.0 * a / one_q**2 + (1.0 + q) / one_q**3)

    mu0 = tail_first(L) - tail_first(H)        # E[(-L - Z)^+] - E[(Z - H)^+], Z symmetric
    second = 2.0 * q / one_q**2 - tail_second(L) - tail_second(H)
    return mu0, second - mu0 * mu0


class DiscreteSHE(MatrixReports, FrequencyOracle):
    """SHE on a public grid: ``M`` times the one-hot vector plus clamped discrete Laplace noise.

    ``y_v = clamp(M [v = x] + Z_v, -L, M + L)``, ``Z_v`` discrete Laplace of
    scale ``t = 2 M / eps`` grid units (rounded up to a multiple of
    ``2^-16``): an integer report, exactly ``eps'``-LDP with
    ``eps' = 2 M / t <= eps`` (module docstring).

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700] or None
    grid : float, default 1.0
        ``g = 1 / M``, a power of two ``2**-k``, ``k`` in ``[0, 20]``: the
        one-hot entry is ``M`` grid units.
    clamp : int, optional
        ``L``: reports are clamped to ``[-L, M + L]``. Default
        ``ceil(40 t)`` at each report's budget (``P(|Z| > L) < 2 e^-40``).
    categories : list of labels or a pandas Categorical, optional
    codebook_seed : int or None
        Only keys the sanitization noise.
    n_threads : int or None
        Accepted for the common API (the client's sampler is
        :mod:`fastldp.noise`'s; the server is NumPy integer sums).

    Notes
    -----
    The count variance per report is ``s^2 / (M - 2 mu_0)^2``
    (:func:`clamped_moments`), about ``8 / eps'^2 - 1 / (6 M^2)``: the
    grid costs nothing in variance against SHE's ``8 / eps^2``, and ``M = 1``
    (the default) already gives an exact channel. Reports are ``(n, D)``
    int64; the server sums columns as int64, so partials merge exactly.

    Examples
    --------
    >>> import numpy as np
    >>> she = DiscreteSHE(domain_size=8, epsilon=2.0, codebook_seed=0)
    >>> reports = she.privatize(np.arange(4000) % 8, rng=0)
    >>> reports.shape, reports.dtype
    ((4000, 8), dtype('int64'))
    >>> est = she.estimate(reports)
    >>> bool(np.all(np.abs(est.counts - 500) < 5 * est.std))
    True
    >>> she.effective_epsilon() <= 2.0
    True
    """

    name = "she-discrete"

    def __init__(self, *, domain_size: Optional[int] = None, epsilon: Optional[float],
                 grid: float = 1.0, clamp: Optional[int] = None, categories: Any = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None) -> None:
        owner = type(self).__name__
        g = check_float(grid, "grid", owner, low=2.0**-_MAX_GRID_LOG2, high=1.0,
                        low_open=False, high_open=False)
        if math.frexp(g)[0] != 0.5:
            raise param_error("grid", owner,
                              f"a power of two 2**-k, k an integer in [0, {_MAX_GRID_LOG2}]", grid)
        self.grid = g
        #: grid units per count (the one-hot entry)
        self.M = int(round(1.0 / g))
        self.clamp = None if clamp is None else check_int(clamp, "clamp", owner, low=1,
                                                          high=2**40)
        super().__init__(domain_size=domain_size, epsilon=epsilon, categories=categories,
                         codebook_seed=codebook_seed, n_threads=n_threads)

    def _repr_extra(self) -> str:
        extra = "" if self.grid == 1.0 else f", grid={self.grid!r}"
        return extra + ("" if self.clamp is None else f", clamp={self.clamp}")

    def _stream_extra(self) -> dict[str, Any]:
        return {"grid": self.grid, "clamp": self.clamp}

    # ------------------------------------------------------------ the law per budget
    def units(self, eps: float) -> Fraction:
        """The discrete Laplace scale ``t`` in grid units at budget ``eps`` (a rational)."""
        return _units(float(eps), self.M)

    def bounds(self, eps: ArrayLike) -> np.ndarray:
        """``L`` per budget: the clamp given, or ``ceil(40 t)`` (int64)."""
        e = np.atleast_1d(np.asarray(eps, dtype=np.float64))
        if self.clamp is not None:
            return np.full(e.shape, self.clamp, dtype=np.int64)
        uniq, inverse = np.unique(e, return_inverse=True)
        vals = np.array([math.ceil(TAIL_SCALES * self.units(v)) for v in uniq], dtype=np.int64)
        return vals[inverse].reshape(e.shape)

    def effective_epsilon(self, eps: Optional[float] = None) -> float:
        """``eps' = 2 M / t <= eps`` (rounded up) at ``eps`` (default: the oracle's budget)."""
        e = self.epsilon if eps is None else eps
        if e is None:
            raise ValueError("DiscreteSHE.effective_epsilon needs a budget: the oracle has none")
        exact = Fraction(2 * self.M) / self.units(e)
        value = float(exact)
        return value if Fraction(value) >= exact else math.nextafter(value, math.inf)

    def _moments(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(mu_0, s^2)`` per budget (computed once per distinct budget)."""
        e = np.atleast_1d(np.asarray(eps, dtype=np.float64))
        uniq, inverse = np.unique(e, return_inverse=True)
        L = self.bounds(uniq)
        mom = np.array([clamped_moments(float(self.units(v)), self.M, int(b))
                        if v > 0 and np.isfinite(v) else (np.nan, np.nan)
                        for v, b in zip(uniq, L)], dtype=np.float64).reshape(-1, 2)
        return mom[inverse, 0].reshape(e.shape), mom[inverse, 1].reshape(e.shape)

    def variances(self, eps: np.ndarray) -> np.ndarray:
        mu0, s2 = self._moments(eps)
        return s2 / (self.M - 2.0 * mu0) ** 2

    def held_variances(self, eps: np.ndarray) -> np.ndarray:
        return self.variances(eps)

    def check_budgets(self, eps: np.ndarray, name: str, owner: str) -> None:
        """Also refuse a budget whose noise scale exceeds ``2^40`` grid units."""
        big = ~(2.0 * self.M / np.asarray(eps, dtype=np.float64) <= MAX_UNITS)
        if big.any():
            expected = (f"at least 2 M / 2**40 = {2.0 * self.M / MAX_UNITS!r} (the noise scale "
                        "in grid units must stay below 2**40)")
            i = int(np.flatnonzero(big)[0])
            if eps.shape[0] == 1 and name == "epsilon":
                raise param_error(name, owner, expected, float(eps[0]))
            raise entry_error(name, owner, expected, float(eps[i]), i)
        super().check_budgets(eps, name, owner)

    # ------------------------------------------------------------ client
    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        """Array layer of :meth:`privatize`: ``(n, D)`` int64 reports."""
        from ..noise import discrete_laplace

        n, D = values.shape[0], self.domain_size
        e = np.broadcast_to(np.asarray(eps, dtype=np.float64), (n,))
        uniq, inverse = np.unique(e, return_inverse=True)
        L = self.bounds(uniq)
        if uniq.shape[0] == 1:  # one budget: the noise array is the report array
            block = np.asarray(discrete_laplace(self.units(uniq[0]), n * D, rng=rng),
                               dtype=np.int64).reshape(n, D)
            block[np.arange(n), values] += self.M
            return np.clip(block, -L[0], self.M + L[0], out=block)
        out = np.empty((n, D), dtype=np.int64)
        for j, v in enumerate(uniq):
            rows = np.flatnonzero(inverse == j)
            m = rows.shape[0]
            z = np.asarray(discrete_laplace(self.units(v), m * D, rng=rng), dtype=np.int64)
            block = z.reshape(m, D)
            idx = np.arange(m)
            block[idx, values[rows]] += self.M
            np.clip(block, -L[j], self.M + L[j], out=block)
            out[rows] = block
        return out

    # ------------------------------------------------------------ server statistic
    def _hits(self, clean: np.ndarray, identities) -> np.ndarray:
        """The exact int64 column sums of the (legal) reports."""
        D = self.domain_size
        if clean.shape[0] == 0:
            return np.zeros(D, dtype=np.int64)
        peak = int(np.abs(clean).max())
        step = max(1, (1 << 62) // max(peak, 1))  # each chunk's column sums fit in int64
        total = np.zeros(D, dtype=object) if clean.shape[0] > step else None
        if total is None:
            return clean.sum(axis=0, dtype=np.int64)
        for start in range(0, clean.shape[0], step):  # pragma: no cover - 2^62 / peak rows
            total += clean[start:start + step].sum(axis=0, dtype=np.int64).astype(object)
        return np.array(total, dtype=np.int64)

    def _counts_from_hits(self, hits: np.ndarray, n: int) -> np.ndarray:
        mu0, _ = self._moments(np.array([self.epsilon]))
        return (np.asarray(hits, dtype=np.float64) - n * mu0[0]) / (self.M - 2.0 * mu0[0])

    def _report_terms(self, eps: np.ndarray, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``a_i = lam_i / (M - 2 mu_0)`` and ``+a_i mu_0``, the term *subtracted* from every count.

        The partial's ``"offset"`` holds the positive sum ``sum_i a_i mu_0(eps_i)``
        (:meth:`weighted_counts` subtracts it): an exact sum of tiny negative
        terms would carry sign digits across its whole window.
        """
        mu0, _ = self._moments(eps)
        a = np.ascontiguousarray(np.broadcast_to(lam, np.shape(eps)), dtype=np.float64)
        a = a / (self.M - 2.0 * mu0)
        return a, a * mu0

    def weighted_counts(self, support: ExactSum, offset: ExactSum) -> np.ndarray:
        """``support - offset`` at every symbol, exactly, rounded once."""
        k_lo, digits = offset.canonical()
        negated = ExactSum.from_digits(1, k_lo, -digits) if digits.shape[0] else offset
        return add_broadcast(support, negated).value()

    def weighted_sums(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                      lam: np.ndarray) -> tuple[ExactSum, ExactSum]:
        """Exact ``sum_i a_i y_i[v]`` per symbol and ``sum_i a_i mu_0(eps_i)`` (subtracted).

        Reports sharing a weight ``a`` add ``a`` times their integer column
        sums, exactly (:func:`~fastldp.oracles._base.scaled_sum`); with more
        than 64 distinct weights each product ``a_i y_i[v]`` is rounded
        once before the exact sum.
        """
        a, c = self._report_terms(eps, lam)
        D = self.domain_size
        support = ExactSum(D)
        uniq, inverse = np.unique(a, return_inverse=True)
        if uniq.shape[0] <= _MAX_WEIGHT_GROUPS:
            for j, w in enumerate(uniq):
                ints = ExactSum(D)
                ints.add_integers(self._hits(clean[inverse == j], None))
                support = support.merge(scaled_sum(ints, float(w)))
        else:
            block = clean * a[:, None]
            support.add(block.ravel(), np.broadcast_to(np.arange(D), block.shape).ravel())
        return support, scalar_sum(c)

    # ------------------------------------------------------------ reports
    def _shape_error(self, owner: str, n: Optional[int], shape: tuple[int, ...]) -> ValueError:
        rows = "n" if n is None else str(n)
        return ValueError(f"The 'reports' parameter of {owner} must be a ({rows}, "
                          f"{self.domain_size}) integer array (one clamped noisy one-hot vector "
                          f"per report). Got shape {shape} instead.")

    def public_rows(self, identities: np.ndarray, eps: np.ndarray) -> np.ndarray:
        """Public rows of clamped discrete Laplace noise at a symbol not held.

        Keyed by ``(codebook seed, identity)``: blocks 1, 2, ... of the
        sanitize stream (block 0 holds the integer oracles' coins), two
        words per entry, ``Z = G_1 - G_2`` with ``G = floor(ln U / ln q)``
        geometric (public noise: its floating point protects nothing).
        """
        D = self.domain_size
        n = identities.shape[0]
        if n == 0:
            return np.zeros((0, D), dtype=np.int64)
        n_blocks = (2 * D + 3) // 4
        words = hash_blocks(self.codebook_seed, np.ascontiguousarray(identities, dtype=np.uint64),
                            n_blocks + 1, SANITIZE_STREAM)[:, 1:, :].reshape(n, -1)[:, :2 * D]
        u = ((words >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
        t = np.array([float(self.units(v)) for v in eps], dtype=np.float64)[:, None]
        g = np.floor(np.log(u) * -t)             # ln U / ln q with ln q = -1 / t
        z = (g[:, 0::2] - g[:, 1::2]).astype(np.int64)
        L = self.bounds(eps)[:, None]
        return np.clip(z, -L, self.M + L)

    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        """Replace illegal rows by public noise rows; count them (module docstring)."""
        n, D = eps.shape[0], self.domain_size
        arr = self._report_rows(reports, n, D, owner)
        L = self.bounds(eps) if n else np.zeros(0, dtype=np.int64)
        if (n and arr.dtype.kind in "iu" and arr.dtype.itemsize <= 8
                and int(arr.min()) >= -int(L.min()) and int(arr.max()) <= self.M + int(L.min())):
            # every entry inside the narrowest range: all legal, no per-entry masks
            return (np.ascontiguousarray(arr, dtype=np.int64),
                    tally_report(n, np.ones(n, bool), np.ones(n, bool), np.ones(n, bool), False))
        if arr.dtype.kind in "iu" and arr.dtype.itemsize <= 8 and n:
            if arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
                values = np.where(arr >= np.uint64(2**63), -2**62, arr).astype(np.int64)
            else:
                values = arr.astype(np.int64)
            numeric = integral = np.ones((n, D), dtype=bool)
            wrong_dtype = False
        else:
            values, numeric, integral, wrong_dtype = classify_integers(arr)
            values = values.reshape(n, D)
            numeric, integral = numeric.reshape(n, D), integral.reshape(n, D)
        legal_entry = integral & (values >= -L[:, None]) & (values <= self.M + L[:, None])
        row_numeric, row_integral = numeric.all(axis=1), integral.all(axis=1)
        legal = legal_entry.all(axis=1)
        report = tally_report(n, row_numeric, row_integral, legal, wrong_dtype)
        if legal.all():
            return np.ascontiguousarray(values), report
        out = values.copy()
        bad = ~legal
        out[bad] = self.public_rows(identities[bad], eps[bad])
        return out, report
