"""Histogram encoding: summation (SHE) and thresholding (THE) of a Laplace-noised one-hot vector.

The client one-hot encodes its symbol ``x`` as ``B = e_x in {0, 1}^D`` and
adds i.i.d. Laplace noise of scale ``b = 2 / eps`` to every coordinate:
``B'[v] = [v = x] + Lap(2 / eps)``. Two inputs change ``B`` in two
coordinates by one each (l1 sensitivity 2), so the density ratio of the
whole vector between two inputs is at most ``e^(2 / b) = e^eps``.

* **SHE** (summation) releases ``B'`` and the server sums the reports:
  ``count(v) = sum_i B'_i[v]``, unbiased, with variance ``2 b^2 = 8 / eps^2``
  per report whether or not the report's user holds ``v``.
* **THE** (thresholding) releases the bits ``[B'[v] > theta]``. With ``F``
  the CDF of ``Lap(b)``, the held bit is 1 with probability
  ``p = 1 - F(theta - 1)`` and every other bit with ``q = 1 - F(theta)``,
  independently; for ``theta in [0, 1]``::

      p = 1 - exp(-(1 - theta) eps / 2) / 2,      q = exp(-theta eps / 2) / 2.

  The server debiases the bit counts as unary encoding does,
  ``c(v) = (b_v - q) / (p - q)``, with variance ``q (1 - q) / (p - q)^2``
  at a symbol not held and ``p (1 - p) / (p - q)^2`` at the held one.
  The likelihood ratio of a whole report between two inputs is at most
  ``p (1 - q) / (q (1 - p)) = (2 e^((1 - theta) eps / 2) - 1)
  (2 e^(theta eps / 2) - 1)``, which is below ``e^eps`` for every
  ``theta in [0, 1]`` (it is a post-processing of SHE): THE is
  ``eps``-LDP and its exact ratio is strictly inside.

The threshold
-------------
Wang et al. choose ``theta in (1/2, 1)`` minimizing the variance
``q (1 - q) / (p - q)^2`` of a count. :func:`optimal_threshold` finds it
numerically by a golden-section search on ``[1/2, 1]`` (60 steps: the
bracket shrinks below ``1e-12``), vectorized over the distinct budgets, with
``p - q`` evaluated through ``expm1`` so that small budgets keep their
digits. The variance is unimodal on ``[1/2, 1]`` (the tests compare the
search with a fine grid). ``THE(threshold=...)`` fixes ``theta`` instead; a
report at a personal budget ``eps_i`` otherwise uses ``theta(eps_i)``.

Sampling, and floating point
----------------------------
THE's report is a vector of independent bits with the law above, so the
client draws each bit from its Bernoulli law directly (the kernel of
:mod:`fastldp.oracles.unary`: ``[U < q 2^64]`` for the bits not held,
``[u53 2^-53 < p]`` for the held one) instead of thresholding a float
Laplace draw: the law of the bits is the same, and the bits the client
releases follow the binary64 probabilities ``p, q`` that the audit checks
exactly (:mod:`fastldp.audit`), with no floating-point side channel: the
output space is ``{0, 1}^D``. A budget so large that ``p`` rounds to 1 (the
held bit always set) or ``q < 2^-64`` (no other bit ever set) would make
that realized ratio infinite, so it is refused with a ``ValueError``
(:meth:`THE.check_budgets`); at the optimal threshold that is every budget
above about 88.

SHE releases doubles: the client kernel (:mod:`fastldp._kernels._encoding`)
draws one 64-bit word per entry from Philox4x64-10, keyed by two words of
the caller's generator and counted by (entry block, row), and maps it to a
Laplace variate by the inverse CDF that the public sanitization noise uses
(:func:`_laplace_from_words`), so the reports do not depend on the thread
count. Like the package's other continuous randomizers, its guarantee is the guarantee of the ideal
real-valued mechanism; the set of doubles a report can take depends on the
input (Mironov, CCS 2012), and the package does not claim resistance to that
attack for continuous outputs (:mod:`fastldp.audit`, "Floating-point side
channels"). Its audit is empirical. Use THE, or any finite oracle, where
that matters.

Reports and memory
------------------
SHE: a float64 array of shape ``(n, D)``, ``8 n D`` bytes (800 MB for
``n = 10^5`` users and ``D = 1000``; fine for ``D`` up to a few thousand in
chunks of users). THE: bits packed as OUE packs them, ``(n, ceil(D / 8))``
uint8 rows (``numpy.packbits(bits, axis=1, bitorder="little")``); its server
is OUE's carry-save bit count.

The server's exact sums
-----------------------
SHE's counts are exact column sums, rounded once, so that chunks of reports
merge bit for bit. Sanitization bounds every legal entry by ``2^beta`` (a
public bound), so the server kernel splits each entry without error into
two parts on fixed grids (``h = (sigma + x) - sigma``, Rump, Ogita and
Oishi's ExtractScalar), sums each part over blocks of 512 rows in a double
with no rounding, and moves the block sums into the integer digits of
:class:`~fastldp.streaming.ExactSum`; an entry with bits below the last
grid (an entry below about ``2^(beta - 33)``, a subnormal) is added from
its bits.
The legality check runs on each row as it is summed: the reports are read
once.

Sanitization
------------
THE: as OUE (a row that is not ``ceil(D / 8)`` bytes with zero padding bits
is replaced by public random bits and counted). SHE: a row with an entry
that is not a number (``non_numeric``), not finite (``non_finite``) or
outside ``[-745 b_i, 1 + 745 b_i]`` (``out_of_range``) is replaced by a row of
public Laplace noise of the report's scale (no one-hot: it adds nothing to
any count in expectation), keyed by ``(codebook seed, identity)``, and
counted by the first reason that applies. No double-precision Laplace
sampler exceeds the bound: ``|Lap(b)| = b ln(1 / U)`` with ``U >= 2^-1074``
stays below ``744.5 b``. It also keeps every sum finite.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally differentially private
   protocols for frequency estimation", USENIX Security 2017, section 4.2
   (histogram encoding, SHE and THE).
.. [2] C. Dwork, F. McSherry, K. Nissim, A. Smith, "Calibrating noise to
   sensitivity in private data analysis", TCC 2006 (the Laplace mechanism).
.. [3] I. Mironov, "On significance of the least significant bits for
   differential privacy", CCS 2012.
.. [4] S. M. Rump, T. Ogita, S. Oishi, "Accurate floating-point summation
   part I: faithful rounding", SIAM J. Sci. Comput. 31(1), 2008 (the error-free
   extraction, Algorithm 3.2).
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._encoding import (
    BETA_RANGE, K_LO, she_column_sums, she_legal_rows, she_perturb,
)
from .._kernels._hash import SANITIZE_STREAM, hash_blocks
from .._random import resolve_identities
from .._sanitize import SanitizationReport, sanitization_counts
from .._validation import check_float, param_error
from ..streaming import ExactSum, Partial
from ._base import (
    FrequencyOracle, MatrixReports, _is_nan_number, _to_float, count_sum,
    entry_error, scalar_sum, scaled_sum,
)
from .unary import UnaryEncoding

__all__ = ["SHE", "THE", "optimal_threshold", "the_probabilities", "the_variance", "SHE_REASONS",
           "OUT_OF_RANGE_SCALES"]

#: why a SHE report row was replaced (the first that applies to the row)
SHE_REASONS = ("non_numeric", "non_finite", "out_of_range")
#: an SHE entry beyond ``[-k b, 1 + k b]`` (``b = 2 / eps``) is no Laplace draw (module docstring)
OUT_OF_RANGE_SCALES = 745.0
#: golden-section steps of :func:`optimal_threshold`: 0.5 * 0.618^60 < 1e-12
GOLDEN_STEPS = 60
_INV_PHI = (np.sqrt(5.0) - 1.0) / 2.0
#: the smallest q THE's sampler realizes (``[U < q 2^64]`` for a 64-bit uniform U)
MIN_Q = 2.0**-64
_ENTRIES_PER_BLOCK = 1 << 20  # entries added to an exact sum at a time (bounds the index array)


# ---------------------------------------------------------------- THE's constants
def the_probabilities(epsilon: ArrayLike, threshold: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
    """``p = 1 - F(theta - 1)`` and ``q = 1 - F(theta)``, ``F`` the CDF of ``Lap(2 / eps)``.

    For ``theta in [0, 1]``: ``p = 1 - exp(-(1 - theta) eps / 2) / 2`` and
    ``q = exp(-theta eps / 2) / 2`` (Wang et al. 2017, section 4.2).
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    theta = np.asarray(threshold, dtype=np.float64)
    half = eps / 2.0
    return 1.0 - 0.5 * np.exp(-(1.0 - theta) * half), 0.5 * np.exp(-theta * half)


def the_variance(epsilon: ArrayLike, threshold: ArrayLike) -> np.ndarray:
    """``q (1 - q) / (p - q)^2``: THE's per-report variance at a symbol not held.

    ``p - q = -(expm1(-(1 - theta) eps / 2) + expm1(-theta eps / 2)) / 2``,
    evaluated without cancellation for small budgets.
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    theta = np.asarray(threshold, dtype=np.float64)
    half = eps / 2.0
    q = 0.5 * np.exp(-theta * half)
    gap = -0.5 * (np.expm1(-(1.0 - theta) * half) + np.expm1(-theta * half))
    return q * (1.0 - q) / gap**2


def optimal_threshold(epsilon: ArrayLike) -> np.ndarray:
    """The variance-optimal threshold ``theta in [1/2, 1]`` of THE, per budget.

    Golden-section search of :func:`the_variance` on ``[1/2, 1]``, run on the
    distinct budgets at once (:data:`GOLDEN_STEPS` steps; the midpoint of the
    final bracket, within ``1e-12`` of the minimizer of the computed
    variance). The same budget gives the same threshold bit for bit,
    whatever the other budgets in the call.

    Parameters
    ----------
    epsilon : float or array_like of float > 0

    Returns
    -------
    numpy.ndarray of float64, the shape of ``epsilon``

    Examples
    --------
    >>> from fastldp.oracles.histogram_encoding import optimal_threshold
    >>> theta = optimal_threshold([0.5, 1.0, 4.0])
    >>> bool(((theta > 0.5) & (theta < 1.0)).all())
    True
    """
    eps = np.asarray(epsilon, dtype=np.float64)
    uniq, inverse = np.unique(eps.ravel(), return_inverse=True)
    lo, hi = np.full(uniq.shape, 0.5), np.ones(uniq.shape)
    c = hi - _INV_PHI * (hi - lo)
    d = lo + _INV_PHI * (hi - lo)
    with np.errstate(all="ignore"):
        fc, fd = the_variance(uniq, c), the_variance(uniq, d)
        for _ in range(GOLDEN_STEPS):
            left = fc <= fd  # the minimum lies in [lo, d]: the new point goes left of c
            hi = np.where(left, d, hi)
            lo = np.where(left, lo, c)
            x = np.where(left, hi - _INV_PHI * (hi - lo), lo + _INV_PHI * (hi - lo))
            fx = the_variance(uniq, x)
            c, d, fc, fd = (np.where(left, x, d), np.where(left, c, x),
                            np.where(left, fx, fd), np.where(left, fc, fx))
    return ((lo + hi) / 2.0)[inverse].reshape(eps.shape)


# ---------------------------------------------------------------- THE
class THE(UnaryEncoding):
    """Thresholding histogram encoding: Laplace-noised one-hot bits, thresholded at ``theta``.

    ``p = 1 - exp(-(1 - theta) eps / 2) / 2`` for the held bit and
    ``q = exp(-theta eps / 2) / 2`` for every other one (module docstring);
    the reports, their server and their sanitization are OUE's.

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700] or None
    threshold : float in (0, 1), optional
        ``theta``; default: the variance-optimal threshold of each report's
        budget (:func:`optimal_threshold`, in ``(1/2, 1)``).
    categories : list of labels or a pandas Categorical, optional
        Labels of the symbols (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        Only keys the sanitization coins.
    n_threads : int or None
        Threads of the client and server kernels; results never depend on it.

    Attributes
    ----------
    threshold : float or None
        ``theta`` at the oracle's ``epsilon`` (or the one given); ``None``
        for an oracle without a budget and without ``threshold=``.

    Notes
    -----
    Reports are ``(n, ceil(D / 8))`` uint8 rows (module docstring). The
    likelihood ratio of a report is ``(2 e^((1 - theta) eps / 2) - 1)
    (2 e^(theta eps / 2) - 1) < e^eps``. Count variance per report:
    ``q (1 - q) / (p - q)^2`` (``p (1 - p) / (p - q)^2`` for the held symbol).

    Examples
    --------
    >>> import numpy as np
    >>> the = THE(domain_size=20, epsilon=2.0, codebook_seed=0)
    >>> round(the.threshold, 4)
    0.7096
    >>> reports = the.privatize(np.arange(4000) % 20, rng=0)
    >>> reports.shape, reports.dtype
    ((4000, 3), dtype('uint8'))
    >>> est = the.estimate(reports)
    >>> bool(np.all(np.abs(est.counts - 200) < 5 * est.std))
    True
    """

    name = "the"

    def __init__(self, *, domain_size: Optional[int] = None, epsilon: Optional[float],
                 threshold: Optional[float] = None, categories: Any = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None) -> None:
        if threshold is not None:
            threshold = check_float(threshold, "threshold", type(self).__name__, low=0.0,
                                    high=1.0)
        self._given_threshold = threshold
        super().__init__(domain_size=domain_size, epsilon=epsilon, categories=categories,
                         codebook_seed=codebook_seed, n_threads=n_threads)

    def _setup(self) -> None:
        self.threshold: Optional[float] = self._given_threshold
        if self.epsilon is not None and self._given_threshold is None:
            # computed once: every decode at the oracle's budget reads it (thresholds())
            self.threshold = float(optimal_threshold(np.array([self.epsilon]))[0])

    def _repr_extra(self) -> str:
        given = self._given_threshold
        return "" if given is None else f", threshold={given!r}"

    def _stream_extra(self) -> dict[str, Any]:
        return {"threshold": self._given_threshold}

    def thresholds(self, eps: np.ndarray) -> np.ndarray:
        """``theta`` per budget: the given threshold, or :func:`optimal_threshold`."""
        eps = np.asarray(eps, dtype=np.float64)
        if self._given_threshold is not None:
            return np.full(eps.shape, self._given_threshold)
        if self.threshold is not None and bool(np.all(eps == self.epsilon)):
            # the oracle's own budget: the threshold found once (optimal_threshold is
            # elementwise, so this is the value it would return)
            return np.full(eps.shape, self.threshold)
        return optimal_threshold(eps)

    def _pq(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        eps = np.asarray(eps, dtype=np.float64)
        return the_probabilities(eps, self.thresholds(eps))

    def check_budgets(self, eps: np.ndarray, name: str, owner: str) -> None:
        """Also refuse a budget whose bits would not be random in binary64.

        When ``exp(-(1 - theta) eps / 2) / 2`` is below half an ulp of 1,
        ``p`` rounds to 1 and the held bit is always set; when ``q < 2^-64``
        the sampler (``[U < q 2^64]``) never sets another bit. Either way the
        realized ratio is infinite, so the budget is refused (module
        docstring).
        """
        super().check_budgets(eps, name, owner)
        with np.errstate(all="ignore"):
            p, q = self._pq(eps)
        bad = ~((p < 1.0) & (q >= MIN_Q))
        if bad.any():
            expected = ("small enough that THE's bits stay random in binary64 (p < 1 and "
                        "q >= 2**-64 at the threshold; use a smaller budget or another "
                        "threshold=)")
            i = int(np.flatnonzero(bad)[0])
            if eps.shape[0] == 1 and name == "epsilon":
                raise param_error(name, owner, expected, float(eps[0]))
            raise entry_error(name, owner, expected, float(eps[i]), i)


# ---------------------------------------------------------------- SHE
def _laplace_from_words(words: np.ndarray) -> np.ndarray:
    """Standard Laplace variates (scale 1) from uniform 64-bit words, by the inverse CDF.

    ``u = ((w >> 11) + 0.5) 2^-53``; the sum rounds to ``2^53`` for the top
    word (``w >> 11 = 2^53 - 1``), so ``u`` is capped at ``1 - 2^-53``, which
    keeps every variate finite (``|L| <= 53 ln 2``). The client kernel
    (:func:`fastldp._kernels._encoding.laplace_from_words`) maps words the same way.
    """
    u = ((words >> np.uint64(11)).astype(np.float64) + 0.5) * 2.0**-53
    u = np.minimum(u, 1.0 - 2.0**-53)  # in (0, 1)
    t = u - 0.5
    return -np.sign(t) * np.log1p(-2.0 * np.abs(t))


class SHE(MatrixReports, FrequencyOracle):
    """Summation histogram encoding: the one-hot vector plus ``Lap(2 / eps)`` on every coordinate.

    The server sums the reports; ``count(v) = sum_i B'_i[v]`` is unbiased
    with variance ``8 / eps_i^2`` per report (held symbol or not).

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700] or None
    categories : list of labels or a pandas Categorical, optional
        Labels of the symbols (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        Only keys the sanitization noise.
    n_threads : int or None
        Threads of the client and server kernels; results never depend on it.

    Notes
    -----
    Reports are float64 arrays of shape ``(n, D)``: ``8 n D`` bytes, so
    privatize and decode large populations in chunks of users (``partial``
    / ``merge`` / ``finalize``). The output is continuous: the guarantee is
    the ideal real-valued mechanism's and the audit is empirical (module
    docstring, "Sampling, and floating point"). Column sums are exact
    (:class:`~fastldp.streaming.ExactSum`), rounded once: the counts do not
    depend on the order of the reports.

    Examples
    --------
    >>> import numpy as np
    >>> she = SHE(domain_size=8, epsilon=2.0, codebook_seed=0)
    >>> reports = she.privatize(np.arange(4000) % 8, rng=0)
    >>> reports.shape, reports.dtype
    ((4000, 8), dtype('float64'))
    >>> est = she.estimate(reports)
    >>> float(est.variances[0]) == 4000 * 8 / 2.0**2
    True
    >>> bool(np.all(np.abs(est.counts - 500) < 5 * est.std))
    True
    """

    name = "she"

    def variances(self, eps: np.ndarray) -> np.ndarray:
        return 8.0 / np.asarray(eps, dtype=np.float64) ** 2

    def held_variances(self, eps: np.ndarray) -> np.ndarray:
        return self.variances(eps)

    def scales(self, eps: np.ndarray) -> np.ndarray:
        """The Laplace scale ``b = 2 / eps`` of each report."""
        return 2.0 / np.asarray(eps, dtype=np.float64)

    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        """Array layer of :meth:`privatize`: ``(n, D)`` float64 reports."""
        # the kernel's Philox stream, keyed by two words of the caller's generator
        key = rng.integers(0, 2**64, size=2, dtype=np.uint64)
        scale = np.ascontiguousarray(self.scales(eps), dtype=np.float64)  # one per report, or one
        return she_perturb(int(key[0]), int(key[1]), np.ascontiguousarray(values, dtype=np.int64),
                           scale, self.domain_size, self.n_threads)

    # ------------------------------------------------------------ server statistic
    def _kernel_sums(self, rows: np.ndarray, lo: np.ndarray, hi: np.ndarray,
                     weights: Optional[np.ndarray] = None, group: Optional[np.ndarray] = None,
                     n_groups: int = 1) -> tuple[np.ndarray, list[ExactSum]]:
        """Legality of every row, and the exact column sums of the legal rows per group.

        One pass of :func:`fastldp._kernels._encoding.she_column_sums` over
        ``rows`` (float64): a row is legal when each entry lies in ``[lo_i,
        hi_i]``; its terms are ``weights[i] * rows[i, v]`` (each rounded
        once; ``rows[i, v]`` itself without weights). The sums are exact, so
        they equal :meth:`_slow_sums` of the same terms, whatever the order.
        """
        n, D = rows.shape
        legal = np.ones(n, dtype=bool)
        if n == 0:
            return legal, [ExactSum(D) for _ in range(n_groups)]
        beta = _grid_exponent(lo, hi, weights)
        if beta is None:  # bounds or weights beyond the kernel's grids: digit by digit
            with np.errstate(invalid="ignore"):
                legal = np.asarray(((rows >= lo[:, None]) & (rows <= hi[:, None])).all(axis=1))
            sums = []
            for g in range(n_groups):
                take = legal if group is None else legal & (group == g)
                sums.append(self._slow_sums(rows[take],
                                            None if weights is None else weights[take]))
            return legal, sums
        flags, digits = she_column_sums(np.ascontiguousarray(rows, dtype=np.float64), lo, hi,
                                        weights, group, n_groups, beta, self.n_threads)
        return flags.view(bool), [_trimmed(D, digits[g]) for g in range(n_groups)]

    def _slow_sums(self, rows: np.ndarray, weights: Optional[np.ndarray] = None) -> ExactSum:
        """The exact column sums of ``weights[i] * rows[i, v]`` by :meth:`ExactSum.add`.

        Raises ``ValueError`` on a term that is not finite.
        """
        D = self.domain_size
        total = ExactSum(D)
        step = max(1, _ENTRIES_PER_BLOCK // D)
        for start in range(0, rows.shape[0], step):
            block = rows[start:start + step]
            if weights is not None:
                block = block * weights[start:start + step, None]
            index = np.broadcast_to(np.arange(D, dtype=np.int64), block.shape)
            total.add(block.ravel(), index.ravel())
        return total

    def _column_sums(self, rows: np.ndarray, eps: np.ndarray,
                     weights: Optional[np.ndarray] = None) -> ExactSum:
        """The exact sum over ``rows`` of ``weights[i] * rows[i, v]`` per column ``v``.

        Each product is rounded once (exact for unit weights); the sum is
        exact, so it does not depend on the order of the rows. Rows outside
        the public range of their budget ``eps`` (none, after the
        sanitization) are summed digit by digit.
        """
        rows = np.ascontiguousarray(rows, dtype=np.float64)
        lo, hi = self._legal_range(eps, rows.shape[0])
        legal, (total,) = self._kernel_sums(rows, lo, hi, weights)
        if not legal.all():
            bad = ~legal
            total = total.merge(self._slow_sums(rows[bad],
                                                None if weights is None else weights[bad]))
        return total

    def weighted_sums(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                      lam: np.ndarray) -> tuple[ExactSum, ExactSum]:
        """Exact ``sum_i lam_i B'_i[v]`` per symbol, and a zero offset.

        A SHE report is unbiased for the indicator as it is (``p - q = 1``,
        no offset), so the weight of report ``i`` is ``a_i = lam_i``.
        """
        a, c = self._report_terms(eps, lam)
        unit = bool((a == 1.0).all())
        return self._column_sums(clean, eps, None if unit else a), scalar_sum(c)

    def _report_terms(self, eps: np.ndarray, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = np.ascontiguousarray(np.broadcast_to(lam, np.shape(eps)), dtype=np.float64)
        return a, np.zeros_like(a)

    def _counts_from_hits(self, hits: np.ndarray, n: int) -> np.ndarray:
        return np.asarray(hits, dtype=np.float64)

    def _partial(self, reports: Any, epsilons: Any, identities: Any, owner: str) -> Partial:
        # The base keeps integer hit counts for the oracle's budget; SHE's are the
        # exact (float) column sums of those reports, kept in the same "hits" sum.
        n = self._n_reports(reports, owner)
        if epsilons is None and self.epsilon is None:
            self._budgets(None, n, owner)  # raises before the identities are read
        ids = resolve_identities(identities, n, owner)
        personal_eps, at_fixed = self._personal_budgets(epsilons, n, owner)
        eps = self._budgets(None, n, owner) if personal_eps is None else personal_eps
        # One pass over the reports: each row's legality (the sanitization) and
        # the exact column sums of the legal rows, those at the oracle's budget
        # (group 0, "hits") apart from the personal ones (group 1, "support").
        group = None
        if personal_eps is not None:
            group = (np.ones(n, dtype=np.uint8) if at_fixed is None
                     else (~at_fixed).astype(np.uint8))
        (hits, support), report = self._sanitized_sums(reports, eps, ids, group, owner)
        offset = ExactSum(1)
        var, held_minus_var = ExactSum(1), ExactSum(1)
        personal = 0
        if personal_eps is not None:
            rest = np.ones(n, dtype=bool) if at_fixed is None else ~at_fixed
            eps = eps[rest]
            personal = eps.shape[0]
            offset = scalar_sum(np.zeros(personal))  # SHE's reports need no offset
            v = np.asarray(self.variances(eps), dtype=np.float64)
            var, held_minus_var = scalar_sum(v), scalar_sum(np.zeros_like(v))
        sums = {"hits": hits, "support": support, "offset": offset, "var": var,
                "held_minus_var": held_minus_var}
        counts = _she_counts(report)
        counts["personal"] = personal
        return Partial(type(self).__name__, self.stream_params(), sums=sums, counts=counts,
                       flags={"wrong_dtype": report.wrong_dtype})

    def _folded_sums(self, partial: Partial) -> dict[str, ExactSum]:
        """The personal sums of every report, the column sums at the oracle's budget added.

        A report at the oracle's budget has weight ``a = 1`` and offset 0, so
        its terms are its column sums as they are (no scaling), and the
        variance sum gains ``n_fixed`` times ``8 / eps^2``, exactly.
        """
        sums = dict(partial.sums)
        n_fixed = partial.counts["n"] - partial.counts["personal"]
        if n_fixed == 0:
            return sums
        v = float(self.variances(np.array([self.epsilon]))[0])
        sums["support"] = sums["support"].merge(sums["hits"])
        sums["var"] = sums["var"].merge(scaled_sum(count_sum(n_fixed), v))
        return sums

    # ------------------------------------------------------------ reports
    def _shape_error(self, owner: str, n: Optional[int], shape: tuple[int, ...]) -> ValueError:
        rows = "n" if n is None else str(n)
        return ValueError(f"The 'reports' parameter of {owner} must be a ({rows}, "
                          f"{self.domain_size}) float array (one noisy one-hot vector per "
                          f"report). Got shape {shape} instead.")

    def public_rows(self, identities: np.ndarray, scales: np.ndarray) -> np.ndarray:
        """Public Laplace noise rows of the given scales, keyed by ``(codebook seed, identity)``.

        Blocks 1, 2, ... of the sanitize stream (block 0 holds the coins of
        the integer oracles), one word per entry, through the inverse CDF.
        """
        D = self.domain_size
        n_blocks = (D + 3) // 4
        words = hash_blocks(self.codebook_seed, np.ascontiguousarray(identities, dtype=np.uint64),
                            n_blocks + 1, SANITIZE_STREAM)[:, 1:, :]
        words = words.reshape(identities.shape[0], -1)[:, :D]
        return _laplace_from_words(words) * np.asarray(scales, dtype=np.float64)[:, None]

    def _bounds(self, eps: np.ndarray) -> np.ndarray:
        return OUT_OF_RANGE_SCALES * self.scales(eps)

    def _values(self, reports: ArrayLike, n: int,
                owner: str) -> tuple[np.ndarray, np.ndarray, bool, bool]:
        """``(values, non_numeric_row, wrong_dtype, shared)``: the reports as ``(n, D)`` float64.

        Entries that are not numbers become NaN (their rows are flagged in
        ``non_numeric_row``); ``shared`` says ``values`` is the caller's array.
        """
        D = self.domain_size
        arr = self._report_rows(reports, n, D, owner)
        kind = arr.dtype.kind
        wrong_dtype = kind not in "fiu"
        if kind in "fiub":
            with np.errstate(all="ignore"):
                vals = np.ascontiguousarray(arr, dtype=np.float64)
            return vals, np.zeros(n, dtype=bool), wrong_dtype, vals is arr
        flat = arr.ravel()
        vals = np.array([_to_float(v) for v in flat], dtype=np.float64).reshape(n, D)
        nan_numbers = np.array([_is_nan_number(v) for v in flat], dtype=bool).reshape(n, D)
        return vals, (np.isnan(vals) & ~nan_numbers).any(axis=1), wrong_dtype, False

    def _legal_range(self, eps: np.ndarray, n: int) -> tuple[np.ndarray, np.ndarray]:
        """Per report, ``[-k b_i, 1 + k b_i]``: the public range of a legal entry (``n`` rows).

        Clipped to the finite doubles, so that an infinite entry is never
        legal, whatever the budget.
        """
        bound = np.broadcast_to(self._bounds(np.asarray(eps, dtype=np.float64)), (n,))
        top = np.finfo(np.float64).max
        return (np.ascontiguousarray(np.maximum(-bound, -top)),
                np.ascontiguousarray(np.minimum(1.0 + bound, top)))

    @staticmethod
    def _report_of(vals: np.ndarray, legal: np.ndarray, non_numeric_row: np.ndarray,
                   wrong_dtype: bool) -> SanitizationReport:
        """Counts by the first reason that applies (module docstring), from the illegal rows."""
        n = legal.shape[0]
        if legal.all():
            return SanitizationReport(n, n, {r: 0 for r in SHE_REASONS}, wrong_dtype)
        bad = ~legal
        numeric = ~non_numeric_row[bad]
        finite = np.isfinite(vals[bad]).all(axis=1)
        # a numeric, finite row that is not legal has an entry out of range
        by_reason = {"non_numeric": int(non_numeric_row.sum()),
                     "non_finite": int((numeric & ~finite).sum()),
                     "out_of_range": int((numeric & finite).sum())}
        return SanitizationReport(n, int(legal.sum()), by_reason, wrong_dtype)

    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        """Replace illegal rows by public Laplace noise rows; count them (module docstring)."""
        n = eps.shape[0]
        vals, non_numeric_row, wrong_dtype, shared = self._values(reports, n, owner)
        lo, hi = self._legal_range(eps, n)
        legal = she_legal_rows(vals, lo, hi, self.n_threads).view(bool) & ~non_numeric_row
        report = self._report_of(vals, legal, non_numeric_row, wrong_dtype)
        if legal.all():
            return vals, report
        bad = ~legal
        out = vals.copy() if shared else vals
        out[bad] = self.public_rows(identities[bad], self.scales(eps)[bad])
        return out, report

    def _sanitized_sums(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                        group: Optional[np.ndarray],
                        owner: str) -> tuple[list[ExactSum], SanitizationReport]:
        """``sanitize`` and the exact column sums of the clean rows, by group, in one pass.

        ``group`` (uint8, or ``None``: every row in group 0) sends each row's
        terms to sum 0 or 1. The legal rows are summed as they are read; the
        illegal ones (rare) are replaced by their public rows, which are
        summed apart and merged: the sums are exact, so they equal the sums
        of ``sanitize``'s clean array.
        """
        n = eps.shape[0]
        vals, non_numeric_row, wrong_dtype, _ = self._values(reports, n, owner)
        lo, hi = self._legal_range(eps, n)
        groups = 1 if group is None else 2
        legal, sums = self._kernel_sums(vals, lo, hi, None, group, groups)
        legal &= ~non_numeric_row  # those rows hold a NaN: never legal (nor summed) anyway
        report = self._report_of(vals, legal, non_numeric_row, wrong_dtype)
        if not legal.all():
            bad = ~legal
            public = self.public_rows(identities[bad], self.scales(np.broadcast_to(eps, (n,))[bad]))
            sub = None if group is None else group[bad]
            ok, fixes = self._kernel_sums(public, lo[bad], hi[bad], None, sub, groups)
            if not ok.all():  # pragma: no cover - a public row is a Laplace draw, always legal
                raise AssertionError("SHE: a public noise row is out of range")
            sums = [a.merge(b) for a, b in zip(sums, fixes)]
        if groups == 1:
            sums.append(ExactSum(self.domain_size))  # no group 1
        return sums, report


def _grid_exponent(lo: np.ndarray, hi: np.ndarray, weights: Optional[np.ndarray]) -> Optional[int]:
    """``beta`` with ``|w_i x| < 2**beta`` for every ``x`` in ``[lo_i, hi_i]``, or None.

    ``fl(|w| X) <= 2**e`` for ``X * max|w| < 2**e`` (rounding is monotone), so
    ``beta = e + 1`` bounds every product strictly. None when the bound is
    not finite or outside the kernel's :data:`BETA_RANGE`.
    """
    if lo.shape[0] == 0:
        return 0
    top = max(float(np.max(np.abs(lo))), float(np.max(np.abs(hi))))
    if weights is not None:
        w = float(np.max(np.abs(weights)))
        if not math.isfinite(w):
            return None
        top *= w
    if not math.isfinite(top):
        return None
    beta = math.frexp(top)[1] + 1
    return beta if BETA_RANGE[0] <= beta <= BETA_RANGE[1] else None


def _trimmed(D: int, digits: np.ndarray) -> ExactSum:
    """An :class:`ExactSum` of the kernel's normalized digits (rows from ``K_LO``), trimmed.

    A negative sum's normalized digits carry its sign up to the top row
    (``2**32 - 1`` below a top ``-1``); those rows fold back into one ``-1``
    digit, so the window is as short as the numbers.
    """
    d = digits.copy()
    top = d.shape[0] - 1
    while top > 0:
        t, below = d[top], d[top - 1]
        if not (((t == 0) | ((t == -1) & (below == (1 << 32) - 1))).all()):
            break
        d[top - 1] = np.where(t == -1, below - (1 << 32), below)
        top -= 1
    rows = np.flatnonzero(d[:top + 1].any(axis=1))
    if rows.shape[0] == 0:
        return ExactSum(D)
    first, last = int(rows[0]), int(rows[-1])
    # normalized digits, and one spare row on top for the carries (ExactSum's layout)
    spare = np.zeros((1, D), dtype=np.int64)
    return ExactSum.from_digits(D, K_LO + first, np.concatenate([d[first:last + 1], spare]))


def _she_counts(report: SanitizationReport) -> dict[str, int]:
    """Sanitization counts with every SHE reason present (so partials merge)."""
    full = SanitizationReport(report.n_received, report.n_valid,
                              {r: int(report.by_reason.get(r, 0)) for r in SHE_REASONS},
                              report.wrong_dtype)
    return sanitization_counts(full)


