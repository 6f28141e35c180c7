"""Shared machinery of the frequency oracles: the public API, budget checks, sanitization.

Every oracle privatizes one symbol ``x in [0, D)`` per identity at that
identity's own ``eps_i`` and gives the server, per identity, an unbiased
estimate ``c_i(v)`` of the indicator ``[x_i = v]`` for every ``v``. The
count estimate is ``sum_i c_i(v)``.

Two layers
----------
The public methods validate and then call the array methods, which assume
validated arrays and are what the families (P-RS, PCKV, the attacks) call:

==============================  ============================================
public                          array layer (validated inputs)
==============================  ============================================
``privatize(values, *, ...)``   ``perturb(values, eps, identities, rng)``
``estimate(reports, *, ...)``   ``sanitize(reports, eps, identities, owner)``
                                then ``aggregate(clean, eps, identities, lam)``
                                (``weighted_sums`` + ``weighted_counts``)
==============================  ============================================

``aggregate`` returns ``sum_i lam_i c_i(v)``; ``variances(eps)`` is the
per-report variance ``sigma_i^2`` of ``c_i(v)`` at a symbol the identity
does not hold and ``held_variances(eps)`` at the one it holds, so

    Var[count(v)] = sum_i sigma_i^2 + sum_{i holds v} (held_i - sigma_i^2).

:class:`FrequencyEstimate` reports the plug-in value of that sum: the
number of holders is replaced by the estimated count clipped to ``[0, n]``
and the holders' term by its mean over the identities (exact in expectation
when every identity has the same budget).

Budgets
-------
``epsilon`` (and every personal ``eps_i``) must lie in ``(0, 700]`` so that
``e^eps`` is finite, and be large enough that the estimator is defined in
double precision: ``p - q > 0`` and a finite variance. Below that (e.g.
``eps = 1e-17`` for GRR, where ``e^eps`` rounds to 1) the oracle raises a
``ValueError`` naming the parameter instead of returning infinities.

Sanitization
------------
Reports that are not legal outputs never raise: each is replaced by a public
uniformly random legal output keyed by ``(codebook seed, identity)`` (the
sanitize stream of the counter-based hash) and counted by reason:
``non_numeric`` (strings, None, objects), ``non_integer`` (NaN, +-inf,
fractions) and ``out_of_range`` (integers outside the identity's outputs).
Only a wrong number or shape of reports raises.

Streaming: partial, merge, finalize
-----------------------------------
``estimate(...)`` is literally ``finalize(partial(...))``: a
:class:`~fastldp.streaming.Partial` holds the exact sums behind the
estimate, two partials of disjoint chunks ``merge`` by adding them, and
``finalize`` is a deterministic function of the merged state, so a decode
split into any chunks, merged in any order, is bit-identical to the one-shot
:meth:`~FrequencyOracle.estimate`. The state is ``O(size of the oracle's
statistic)`` (``D`` symbols; ``K`` columns for HR; ``h g`` cells for FLH),
whatever the number of reports. Every partial keeps two groups of sums:

* **the oracle's budget** (``epsilons=None``, or a budget equal to the
  oracle's ``epsilon``): the integer number of those reports hitting each
  position of the statistic (``"hits"``, an
  :class:`~fastldp.streaming.ExactSum` of integers);
* **other personal budgets**: per position the exact sum of the report
  weights ``a_i = lam_i / (p_i - q_i)`` (``"support"``), the exact constant
  ``-sum_i a_i q_i`` added to every count (``"offset"``), and the exact sums
  of ``sigma_i^2`` (``"var"``) and of ``held_i - sigma_i^2``
  (``"held_minus_var"``) for the plug-in variance, with the number of
  those reports (``"personal"``). Where a compiled kernel sums float
  weights (OLH's support, unary encoding's bit counts) it runs with unit
  weights once per distinct weight, or on integer limbs of the weights, so
  that each of its sums is an exact integer (:func:`add_weighted_hits`).

Every partial also counts its reports by sanitization outcome. When no
report has another budget, ``finalize`` applies the closed form of the
equal-budget estimator to the hit counts (``(hits - n q) / (p - q)`` and
the like): so ``estimate(reports)``, ``estimate(reports, epsilons=epsilon)``
and ``estimate(reports, epsilons=np.full(n, epsilon))`` are the same
numbers, bit for bit. Otherwise it folds the hits into the personal sums
exactly (``hits(v) a`` and ``n_fixed`` times each per-report term, see
:func:`scaled_sum`) and rounds once: the exact sums of every report's
terms, whatever the chunks and whichever budgets each chunk holds.
"""

from __future__ import annotations

import dataclasses
import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar, Union

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._hadamard import fwht
from .._kernels._hash import SANITIZE_STREAM, hash_blocks
from .._random import as_generator, resolve_codebook_seed, resolve_identities, resolve_n_threads
from .._sanitize import SanitizationReport, sanitization_counts, sanitization_report
from .._validation import check_float, check_int, check_positive_array, param_error
from ..results import PrivacyStatement, Result
from ..streaming import ExactSum, Partial, check_partial
from ._categories import Categories, resolve_categories, shown_labels
from ._protocol import OracleProtocol

__all__ = ["FrequencyOracle", "FrequencyEstimate", "CountChannel", "EPSILON_MAX", "MAX_DOMAIN_SIZE",
           "RngLike"]

#: what every ``rng`` parameter accepts
RngLike = Union[None, int, np.random.SeedSequence, np.random.Generator]

EPSILON_MAX = 700.0  # e^eps overflows double precision just above 709.78
MAX_DOMAIN_SIZE = 2**31 - 1  # estimates are D-vectors; HR's code has K <= 2^31 columns

REASONS = ("non_numeric", "non_integer", "out_of_range")
_CAST_LIMIT = 2.0**62  # floats at or above this are out of range for every oracle


@dataclass(frozen=True, repr=False)
class FrequencyEstimate(Result):
    """What :meth:`FrequencyOracle.estimate` returns (a :class:`~fastldp.results.Result`).

    Attributes
    ----------
    counts : float64 array, shape (D,)
        Unbiased estimates of how many identities hold each symbol; also
        ``.estimate`` (the same array). After post-processing
        (:mod:`fastldp.oracles.postprocess`), the consistent (biased) counts.
    variances : float64 array, shape (D,), or None
        Plug-in variance of each count (module docstring); ``.std`` is its
        square root. ``None`` after post-processing: the unbiased
        estimator's variances do not describe the post-processed counts.
    sanitization : SanitizationReport or None
        How many reports were legal and why the others were replaced
        (``None`` for a post-processed plain count vector).
    n : int
        Number of reports.
    privacy : PrivacyStatement
        Local DP per report at the oracle's ``epsilon``, or the summary of
        the personal budgets (post-processing keeps it).
    categories : tuple or None
        The labels of the symbols when the oracle was built with
        ``categories=``.
    postprocessing : str or None
        ``None`` for the unbiased estimate; else the post-processing that
        produced the counts (``"norm_sub"``, ``"ibu"``...;
        ``"base_cut+norm_sub"`` for one applied after the other). The repr
        shows it: ``FrequencyEstimate[norm_sub](...)``.
    postprocessing_info : dict or None
        What the post-processing found (IBU: ``iterations``, ``converged``,
        ``distance``, the certified bound on the L1 distance of the
        frequencies to the maximizer...; see :mod:`fastldp.oracles.postprocess`).

    Examples
    --------
    >>> from fastldp import GRR
    >>> grr = GRR(domain_size=3, epsilon=2.0, codebook_seed=0, categories=["a", "b", "c"])
    >>> est = grr.estimate(grr.privatize(["a", "b", "b", "c"], rng=0))
    >>> est.estimate is est.counts
    True
    >>> est.categories
    ('a', 'b', 'c')
    >>> list(est.to_frame().columns)
    ['category', 'estimate', 'std', 'frequency']
    """

    _estimate_field = "counts"

    counts: np.ndarray
    variances: Optional[np.ndarray]
    sanitization: Optional[SanitizationReport]
    n: int
    privacy: PrivacyStatement = PrivacyStatement.local()
    categories: Optional[tuple] = None
    postprocessing: Optional[str] = None
    postprocessing_info: Optional[dict] = None

    def _repr_kind(self) -> str:
        kind = type(self).__name__
        return kind if self.postprocessing is None else f"{kind}[{self.postprocessing}]"

    @property
    def frequencies(self) -> np.ndarray:
        """``counts / n`` (zeros when there are no reports)."""
        return self.counts / self.n if self.n else np.zeros_like(self.counts)

    def _frame_columns(self) -> dict:
        return {"frequency": self.frequencies}


_CHANNEL_KINDS = ("symmetric", "hadamard", "matrix")


@dataclass(frozen=True, repr=False)
class CountChannel:
    """How an oracle's aggregated statistic depends on the users' symbols: what IBU runs on.

    A report of a user holding ``x`` adds 1 to position ``y`` of the
    statistic with probability ``M[y, x]`` (``size`` positions), so ``n``
    reports of symbols drawn from a distribution ``f`` give the expected
    statistic ``n M f``. :meth:`forward` computes ``M f`` and :meth:`adjoint`
    ``M^T r`` without forming ``M`` where the channel has structure
    (:meth:`FrequencyOracle.count_channel` gives an oracle's channel;
    :func:`fastldp.oracles.postprocess.ibu` runs the EM on it):

    ``"symmetric"``
        ``size = D`` and ``M[y, x] = q + (p - q) [y = x]``: position ``v``
        counts a report of ``v`` with probability ``p`` and a report of any
        other symbol with probability ``q``. GRR's histogram
        (``p + (D - 1) q = 1``), unary encoding's bit counts, OLH's and HR's
        support counts. ``O(D)`` per product.
    ``"hadamard"``
        ``size = K`` (Hadamard response's columns) and ``M[y, x] = 2 p / K``
        where ``H_K[x + 1, y] = +1``, ``2 q / K`` elsewhere
        (``p = e^eps / (e^eps + 1)``, ``q = 1 - p``): one fast
        Walsh-Hadamard transform per product, ``O(K log K)``.
    ``"matrix"``
        Any ``M``, given as a ``(size, D)`` array: ``O(size D)`` per product.

    Attributes
    ----------
    kind : {"symmetric", "hadamard", "matrix"}
    domain_size : int
        ``D``.
    size : int
        Positions of the statistic.
    p, q : float
        The two probabilities of a structured channel (``nan`` for
        ``"matrix"``).
    exact : bool
        Whether every report adds 1 at exactly one position (the columns of
        ``M`` sum to 1), so that the counts are a multinomial sample and the
        EM on them maximizes the exact likelihood of the reports: GRR's
        histogram and HR's columns. Unary encoding's bits and the support
        counts of OLH and HR are not (a report supports several symbols):
        the EM then maximizes the composite likelihood of the counts.
    matrix : float64 array, shape (size, D), or None
        ``M`` for ``"matrix"``.

    Examples
    --------
    >>> import numpy as np
    >>> ch = CountChannel.symmetric(3, 0.6, 0.2, exact=True)
    >>> ch.forward(np.array([1.0, 0.0, 0.0]))
    array([0.6, 0.2, 0.2])
    >>> bool(np.allclose(ch.dense(), [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]))
    True
    """

    kind: str
    domain_size: int
    size: int
    p: float = math.nan
    q: float = math.nan
    exact: bool = False
    matrix: Optional[np.ndarray] = None

    @classmethod
    def symmetric(cls, domain_size: int, p: float, q: float, *, exact: bool) -> "CountChannel":
        """``M[y, x] = q + (p - q) [y = x]`` over ``D`` positions."""
        return cls("symmetric", int(domain_size), int(domain_size), float(p), float(q),
                   bool(exact))

    @classmethod
    def hadamard(cls, domain_size: int, epsilon: float) -> "CountChannel":
        """Hadamard response's columns at budget ``epsilon`` (``K`` = next power of two > D)."""
        k = 1
        while k <= domain_size:
            k *= 2
        q = 1.0 / (math.exp(epsilon) + 1.0)
        return cls("hadamard", int(domain_size), k, 1.0 - q, q, True)

    @classmethod
    def from_matrix(cls, matrix: ArrayLike, *, exact: bool) -> "CountChannel":
        """Any ``(size, D)`` matrix of non-negative probabilities."""
        m = np.array(matrix, dtype=np.float64)
        if m.ndim != 2 or not (np.isfinite(m).all() and (m >= 0).all()):
            raise param_error("matrix", "CountChannel.from_matrix",
                              "a 2-d array of finite non-negative probabilities",
                              _Text(f"an array of shape {m.shape}"))
        m.setflags(write=False)
        return cls("matrix", m.shape[1], m.shape[0], exact=bool(exact), matrix=m)

    def __post_init__(self) -> None:
        if self.kind not in _CHANNEL_KINDS:
            raise param_error("kind", "CountChannel", f"one of {_CHANNEL_KINDS}", self.kind)

    def __repr__(self) -> str:
        probs = "" if self.kind == "matrix" else f", p={self.p:.6g}, q={self.q:.6g}"
        return (f"CountChannel(kind={self.kind!r}, domain_size={self.domain_size}, "
                f"size={self.size}{probs}, exact={self.exact})")

    def forward(self, f: np.ndarray) -> np.ndarray:
        """``M f``: the expected statistic of one report whose symbol has law ``f``."""
        f = np.asarray(f, dtype=np.float64)
        if self.kind == "symmetric":
            return self.q * f.sum() + (self.p - self.q) * f
        if self.kind == "hadamard":
            z = np.zeros(self.size)
            z[1:self.domain_size + 1] = f
            t, s = fwht(z), f.sum()
            # 2 p [H = 1] + 2 q [H = -1] = p (1 + H) + q (1 - H); s -+ t are never negative
            # in exact arithmetic (|t| <= s), so a rounding below zero is clipped
            return (self.p * np.maximum(s + t, 0.0) + self.q * np.maximum(s - t, 0.0)) / self.size
        assert self.matrix is not None
        return self.matrix @ f

    def adjoint(self, r: np.ndarray) -> np.ndarray:
        """``M^T r`` (length ``D``)."""
        r = np.ascontiguousarray(r, dtype=np.float64)
        if self.kind == "symmetric":
            return self.q * r.sum() + (self.p - self.q) * r
        if self.kind == "hadamard":
            u, s = fwht(r)[1:self.domain_size + 1], r.sum()
            return (self.p * (s + u) + self.q * (s - u)) / self.size
        assert self.matrix is not None
        return self.matrix.T @ r

    def dense(self) -> np.ndarray:
        """``M`` as a ``(size, D)`` array (for checks on small channels)."""
        return np.stack([self.forward(e) for e in np.eye(self.domain_size)], axis=1)

    def statistic_from_counts(self, counts: np.ndarray, n: float) -> np.ndarray:
        """The support counts ``S(v) = counts(v) (p - q) + n q`` behind equal-budget counts.

        Every symmetric oracle's equal-budget estimate is
        ``counts(v) = (S(v) - n q) / (p - q)`` (GRR, unary encoding and OLH
        with their hit counts, HR with ``S(v) = (n + fwht(h)[v + 1]) / 2``
        and ``p - q = tanh(eps / 2) / 2``): this inverts it.
        """
        if self.kind != "symmetric":
            raise ValueError(f"statistic_from_counts needs a symmetric channel; this one is "
                             f"{self.kind!r}")
        return np.asarray(counts, dtype=np.float64) * (self.p - self.q) + n * self.q


def fair_choice_among_max(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row-wise argmax with a uniformly random tie-break."""
    top = scores.max(axis=1, keepdims=True)
    noise = rng.random(scores.shape)
    return np.argmax(np.where(scores == top, noise, -1.0), axis=1)


def public_uniform(seed: int, identities: np.ndarray, sizes: np.ndarray, word: int = 1) -> np.ndarray:
    """A public uniform value in ``[0, sizes[j])`` per identity (multiply-shift of a hash word).

    ``word`` picks one of the four words of block 0 of the sanitize stream
    (word 0 is the sign coin of :mod:`fastldp._sanitize`).
    """
    words = hash_blocks(seed, identities, 1, SANITIZE_STREAM)[:, 0, word]
    hi = (words >> np.uint64(32)).astype(np.float64)
    return np.minimum((hi / 2.0**32 * sizes).astype(np.int64), sizes - 1)


def as_report_array(reports) -> np.ndarray:
    """``numpy.asarray``, falling back to a 1-d object array for ragged input."""
    if isinstance(reports, np.ndarray):
        return reports
    try:
        return np.asarray(reports)
    except (ValueError, TypeError):
        items = list(reports)
        out = np.empty(len(items), dtype=object)
        for j, item in enumerate(items):
            out[j] = item
        return out


def _to_float(v) -> float:
    if isinstance(v, (str, bytes, complex, np.complexfloating)) or v is None:
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


def classify_integers(arr: np.ndarray):
    """Read every entry of ``arr`` as an integer where it is one.

    Returns
    -------
    values : int64 array, the shape of ``arr``
        The integer, or -1 where the entry is not an integer (or is too
        large for any oracle's outputs).
    numeric, integral : bool arrays
        Entry is a real number; entry is a finite integer.
    wrong_dtype : bool
        ``arr`` is not an integer array.
    """
    shape = arr.shape
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
            big = arr >= np.uint64(2**63)
            values = np.where(big, -1, arr.astype(np.int64))
            ok = np.ones(shape, dtype=bool)
            return values, ok, ok, False
        ok = np.ones(shape, dtype=bool)
        return arr.astype(np.int64), ok, ok, False
    with np.errstate(invalid="ignore"):
        try:
            if arr.dtype.kind not in "fb":
                raise TypeError
            as_float = arr.astype(np.float64)
            numeric = np.ones(shape, dtype=bool)
        except (TypeError, ValueError):
            flat = arr.ravel()
            as_float = np.array([_to_float(v) for v in flat], dtype=np.float64).reshape(shape)
            numeric = (~np.isnan(as_float)
                       | np.array([_is_nan_number(v) for v in flat], dtype=bool).reshape(shape))
    finite = np.isfinite(as_float)
    safe = np.where(finite, as_float, 0.0)
    integral = finite & (np.floor(safe) == safe)
    castable = integral & (np.abs(safe) < _CAST_LIMIT)
    values = np.where(castable, safe, -1).astype(np.int64)
    return values, numeric, integral, True


class _Text(str):
    """A description shown as is in an error message (no quotes)."""

    def __repr__(self) -> str:
        return str(self)


def entry_error(name: str, owner: str, expected: str, value, index: int, exc=ValueError):
    """``param_error`` for one entry of an array parameter, naming its index."""
    if isinstance(value, np.generic):
        value = value.item()
    return exc(f"The {name!r} parameter of {owner} must be {expected}. "
               f"Got {value!r} at index {index} instead.")


# ---------------------------------------------------------------- exact sums
#: Below this many distinct weights (or one per 64 reports), a weighted kernel sum
#: runs once per distinct weight with unit weights (integer counts) instead of
#: once per integer limb of the weights.
MAX_WEIGHT_CLASSES = 32


def scalar_sum(values) -> ExactSum:
    """The exact sum of ``values`` as a one-position :class:`~fastldp.streaming.ExactSum`."""
    out = ExactSum(1)
    out.add_terms(values)
    return out


def add_broadcast(total: ExactSum, scalar: ExactSum) -> ExactSum:
    """``total + scalar`` at every position, exactly (a new sum; neither input changes)."""
    k_lo, digits = scalar.canonical()
    if digits.shape[0] == 0:
        return total
    return total.merge(ExactSum.from_digits(total.size, k_lo,
                                            np.repeat(digits, total.size, axis=1)))


def scaled_sum(ints: ExactSum, value: float) -> ExactSum:
    """``value`` times an integer-valued :class:`~fastldp.streaming.ExactSum`, exactly.

    Digit row ``r`` of ``ints`` (place ``2**(32 (k_lo + r))``, normalized
    below ``2**32``) times the double ``value * 2**(32 (k_lo + r))``, itself
    exact since the integer places are non-negative powers of two, is added
    by :meth:`~fastldp.streaming.ExactSum.add_multiples`: no rounding
    anywhere, for counts of any size.
    """
    k_lo, digits = ints.canonical()
    if digits.shape[0] and k_lo < 0:  # pragma: no cover - hit counts are integers
        raise ValueError("scaled_sum scales integer sums only")
    out = ExactSum(ints.size)
    for r in range(digits.shape[0]):
        if digits[r].any():
            out.add_multiples(digits[r], math.ldexp(float(value), 32 * (k_lo + r)))
    return out


def count_sum(count: int) -> ExactSum:
    """A one-position :class:`~fastldp.streaming.ExactSum` holding the integer ``count``."""
    out = ExactSum(1)
    count, place = int(count), 0
    while count:
        out.add_integers(np.array([count & 0xFFFFFFFF], dtype=np.int64), 32 * place)
        count >>= 32
        place += 1
    return out


def add_weighted_hits(total: ExactSum, weights, hits) -> None:
    """Add ``sum_i weights[i] * hit_i(v)`` exactly, using a kernel that sums floats.

    Parameters
    ----------
    total : ExactSum
        Receives the sums, one position per ``v``.
    weights : float64 array, shape (n,)
        Finite report weights.
    hits : callable ``hits(members, w)``
        Returns, for the reports ``members`` (an index array, or ``None`` for
        all), the length-``total.size`` vector ``sum_i w_i hit_i(v)``
        computed in float64 (any order), ``hit_i(v)`` in ``{0, 1}``; ``w``
        is aligned with ``members``, or ``None`` for unit weights.

    Notes
    -----
    A float sum of integers is exact, whatever the order, while every partial
    sum stays below ``2**53``. With few distinct weights (at most
    ``max(MAX_WEIGHT_CLASSES, n // 64)``) the kernel runs once per weight
    with unit weights, and each integer count is multiplied by its weight
    exactly (:meth:`~fastldp.streaming.ExactSum.add_multiples`): one pass over the reports in all.
    Otherwise, with ``w_i = M_i 2^(e_i - 53)`` (``|M_i| < 2^53``), weights of
    one sign whose exponents lie within a few bits of each other form a
    group with the integers ``M_i 2^(e_i - e_lo)``, and the kernel runs on
    their limbs of ``L = 53 - bitlength(n)`` bits: ``n (2^L - 1) < 2^53``,
    so every kernel sum is exact. Weights spanning a factor ``2^9`` or less
    form one group of two limbs for chunks below ``2^22`` reports: two
    passes over the reports.
    """
    w = np.ascontiguousarray(weights, dtype=np.float64).ravel()
    n = w.shape[0]
    if n == 0:
        return
    if not np.isfinite(w).all():
        raise ValueError("add_weighted_hits: the weights must be finite")
    order = np.argsort(w, kind="stable")
    ordered = w[order]
    cuts = np.flatnonzero(ordered[1:] != ordered[:-1]) + 1
    if cuts.shape[0] + 1 <= max(MAX_WEIGHT_CLASSES, n // 64):
        bounds = np.concatenate(([0], cuts, [n]))
        for a, b in zip(bounds[:-1], bounds[1:]):
            u = float(ordered[a])
            if u == 0.0:
                continue
            members = None if (a == 0 and b == n) else np.sort(order[a:b])
            counts = np.asarray(hits(members, None))
            total.add_multiples(np.rint(counts).astype(np.int64), u)
        return
    m, e = np.frexp(w)
    e = e.astype(np.int64)
    mant = np.ldexp(m, 53).astype(np.int64)  # exact: |mant| in [2^52, 2^53), 0 for w = 0
    magnitude = np.abs(mant)
    bits = 53 - int(n).bit_length()  # n (2^bits - 1) < 2^53: every kernel sum is exact
    if bits < 1:  # pragma: no cover - 2**52 reports in one chunk
        raise ValueError("add_weighted_hits: too many reports in one chunk")
    mask = np.int64((1 << bits) - 1)
    # exponents up to `spread` apart share one group: M_i 2^(e_i - e_lo) < 2^(53 + spread)
    # stays in an int64 and in two limbs whenever 53 + spread <= 2 bits
    spread = max(0, min(62 - 53, 2 * bits - 53))
    for negative in (False, True):
        side = (mant < 0) if negative else (mant > 0)
        if not side.any():
            continue
        exponents = np.unique(e[side])[::-1]
        i = 0
        while i < exponents.shape[0]:
            e_hi, j = int(exponents[i]), i
            while j + 1 < exponents.shape[0] and e_hi - int(exponents[j + 1]) <= spread:
                j += 1
            e_lo = int(exponents[j])
            sel = side & (e >= e_lo) & (e <= e_hi)
            members = None if sel.all() else np.flatnonzero(sel)
            scaled = magnitude[sel] << (e[sel] - e_lo)
            sign = -1 if negative else 1
            for t in range(-(-(53 + e_hi - e_lo) // bits)):
                limb = (scaled >> np.int64(bits * t)) & mask
                if not limb.any():
                    continue
                sums = np.asarray(hits(members, limb.astype(np.float64)))
                total.add_integers(sign * np.rint(sums).astype(np.int64), e_lo - 53 + bits * t)
            i = j + 1


_Mask = Union[np.ndarray, np.bool_]  # a per-report mask (``.all(axis=1)`` types as either)


def all_legal_report(n: int) -> SanitizationReport:
    """The :class:`SanitizationReport` of ``n`` integer reports that were all legal as sent."""
    return SanitizationReport(n, n, {r: 0 for r in REASONS}, False)


def tally_report(n: int, numeric: _Mask, integral: _Mask, legal: _Mask,
                 wrong_dtype: bool) -> SanitizationReport:
    """The :class:`SanitizationReport` of ``n`` integer reports from their per-report masks.

    Each illegal report counts under its first reason: not a number, else
    not an integer, else out of range (``legal`` implies ``integral``
    implies ``numeric``).
    """
    by_reason = {
        "non_numeric": int((~numeric).sum()),
        "non_integer": int((numeric & ~integral).sum()),
        "out_of_range": int((integral & ~legal).sum()),
    }
    return SanitizationReport(n, int(legal.sum()), by_reason, wrong_dtype)


def partial_report(partial: Partial) -> SanitizationReport:
    """The :class:`SanitizationReport` of every report a (merged) partial holds."""
    return sanitization_report(partial.counts, partial.flags)


def report_counts(report: SanitizationReport) -> dict:
    """Sanitization counts with every oracle reason present (so partials merge)."""
    full = SanitizationReport(report.n_received, report.n_valid,
                              {r: int(report.by_reason.get(r, 0)) for r in REASONS},
                              report.wrong_dtype)
    return sanitization_counts(full)


_SUMS = frozenset({"hits", "support", "offset", "var", "held_minus_var"})

_Method = TypeVar("_Method", bound=Callable[..., Any])


def budgets_by_keyword(method: _Method) -> _Method:
    """Refuse a positional budget (``privatize(values, 1.0)``) with a TypeError that says the fix.

    The budgets are keyword-only (the API contract): a second positional
    argument never worked, so it is refused, not deprecated, with a message
    that says to pass ``epsilons=``. ``inspect.signature`` and type checkers
    see the wrapped method's own signature.
    """

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        if len(args) > 1:
            shown = repr(args[1]) if np.ndim(args[1]) == 0 else "<one budget per report>"
            raise TypeError(
                f"{type(self).__name__}.{method.__name__} takes the budgets by keyword only: "
                f"pass epsilons={shown} (a float for every report, or an array with one budget "
                f"per report). Got {len(args) - 1} extra positional argument(s) instead.")
        return method(self, *args, **kwargs)

    return call  # type: ignore[return-value]


class FrequencyOracle(OracleProtocol):
    """Base class: keyword-only construction, validated ``privatize`` / ``estimate``.

    Parameters
    ----------
    domain_size : int in [2, 2**31 - 1], optional
        ``D``: the symbols are ``0 .. D-1``. Defaults to ``len(categories)``;
        required without ``categories``.
    epsilon : float in (0, 700] or None
        Budget of every identity unless ``epsilons`` is given per call;
        ``None`` means every call must pass ``epsilons``.
    categories : list of str or int, or a pandas Categorical, optional
        Labels of the symbols (symbol ``v`` is ``categories[v]``): then
        :meth:`privatize` takes the labels themselves and the results are
        labelled. A pandas ``Categorical`` (or category ``Series``) gives its
        categories, in their order.
    codebook_seed : int or None
        Public seed of the hashes and of the sanitization coins; ``None``
        draws one from OS entropy.
    n_threads : int or None
        Threads of the server kernels; results never depend on it.

    Notes
    -----
    The server also decodes in chunks: ``partial`` per chunk, ``merge``,
    ``finalize`` (bit-identical to ``estimate``; module docstring,
    "Streaming"). The budgets of :meth:`privatize` and :meth:`estimate` are
    keyword-only: ``privatize(values, 1.0)`` is a ``TypeError`` that says to
    pass ``epsilons=1.0``.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.oracles import GRR
    >>> grr = GRR(domain_size=5, epsilon=1.0, codebook_seed=0)
    >>> y = grr.privatize(np.arange(100) % 5, rng=0)
    >>> parts = [grr.partial(y[:60]), grr.partial(y[60:], identities=np.arange(60, 100))]
    >>> merged = grr.finalize(grr.merge(parts[1], parts[0]))
    >>> bool(np.array_equal(merged.counts, grr.estimate(y).counts))
    True
    """

    name = "oracle"
    uses_identities = False  # True when the identities key a public hash (OLH)

    def __init__(self, *, domain_size: Optional[int] = None, epsilon: Optional[float],
                 categories: Any = None, codebook_seed: Optional[int] = None,
                 n_threads: Optional[int] = None) -> None:
        owner = type(self).__name__
        labels = None if categories is None else resolve_categories(categories, owner)
        if labels is not None:
            if not 2 <= len(labels) <= MAX_DOMAIN_SIZE:
                raise param_error("categories", owner,
                                  f"between 2 and {MAX_DOMAIN_SIZE} distinct labels",
                                  _Text(f"{len(labels)} label(s)"))
            if domain_size is None:
                domain_size = len(labels)
            elif not (isinstance(domain_size, (int, np.integer)) and domain_size == len(labels)):
                raise param_error("domain_size", owner,
                                  f"len(categories) = {len(labels)} (or left out) when categories "
                                  "are given", domain_size)
        elif domain_size is None:
            raise param_error("domain_size", owner,
                              f"an int in [2, {MAX_DOMAIN_SIZE}] (or categories= to count them)",
                              None, TypeError)
        self.domain_size = check_int(domain_size, "domain_size", owner, low=2,
                                     high=MAX_DOMAIN_SIZE)
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.n_threads = resolve_n_threads(n_threads, owner)
        if epsilon is not None:
            epsilon = check_float(epsilon, "epsilon", owner, low=0.0, high=EPSILON_MAX,
                                  high_open=False)
        self.epsilon = epsilon
        #: the labels of the symbols (a tuple), or None
        self.categories: Optional[tuple] = labels
        self._labels = None if labels is None else Categories(labels)
        self._setup()
        if epsilon is not None:
            self.check_budgets(np.array([epsilon]), "epsilon", owner)

    def _setup(self) -> None:
        """Hook for subclasses: derived constants, after the common checks."""

    def _repr_extra(self) -> str:
        return ""

    def __repr__(self) -> str:
        labels = "" if self.categories is None else f", categories={shown_labels(self.categories)}"
        return (f"{type(self).__name__}(domain_size={self.domain_size}, epsilon={self.epsilon!r}"
                f"{self._repr_extra()}{labels}, codebook_seed={self.codebook_seed})")

    # ------------------------------------------------------------ per-report law
    def output_sizes(self, eps: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """Number of legal outputs per identity (integer-output oracles)."""
        raise NotImplementedError

    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:  # pragma: no cover - abstract
        """Array layer of :meth:`privatize`: reports of validated symbols at budgets ``eps``.

        ``eps`` has one budget per value, or one for all (length 1);
        ``identities`` is ``None`` for the oracles that do not hash them.
        """
        raise NotImplementedError

    def variances(self, eps: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """Variance of ``c_i(v)`` at a symbol identity ``i`` does not hold."""
        raise NotImplementedError

    def held_variances(self, eps: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """Variance of ``c_i(v)`` at the symbol identity ``i`` holds."""
        raise NotImplementedError

    def weights(self, eps: np.ndarray) -> np.ndarray:
        """Variance-optimal weights ``lambda_i = 1 / sigma_i^2``."""
        return 1.0 / self.variances(eps)

    def count_channel(self, eps: float, *, statistic: str = "counts") -> CountChannel:
        """The law of the oracle's aggregated statistic at budget ``eps`` (what IBU runs on).

        Parameters
        ----------
        eps : float
            The budget every report had.
        statistic : {"counts", "hits"}
            ``"counts"``: the ``D`` support counts ``S(v)`` that an
            equal-budget estimate's counts determine,
            ``S = counts (p - q) + n q`` (a ``"symmetric"``
            :class:`CountChannel`). ``"hits"``: the statistic a
            :meth:`partial` keeps (its ``"hits"``): the same support counts,
            except for Hadamard response, whose partial keeps the ``K``
            column counts (a ``"hadamard"`` channel, on which the EM is the
            exact maximum likelihood).

        Returns
        -------
        CountChannel

        Raises
        ------
        NotImplementedError
            For an oracle that does not give its statistic's law.
        """
        owner = f"{type(self).__name__}.count_channel"
        e = check_float(eps, "eps", owner, low=0.0, high=EPSILON_MAX, high_open=False)
        if statistic not in ("counts", "hits"):
            raise param_error("statistic", owner, "'counts' or 'hits'", statistic)
        return self._count_channel(e, statistic)

    def _count_channel(self, eps: float, statistic: str) -> CountChannel:
        """Hook of :meth:`count_channel` (validated arguments)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not give the law of its statistic (count_channel), "
            "which IBU needs")

    # ------------------------------------------------------------ validation
    def check_budgets(self, eps: np.ndarray, name: str, owner: str) -> None:
        """Raise unless every budget is at most 700 and gives a defined estimator."""
        too_big = ~(eps <= EPSILON_MAX)
        with np.errstate(all="ignore"):
            var = np.asarray(self.variances(eps), dtype=np.float64)
            held = np.asarray(self.held_variances(eps), dtype=np.float64)
        undefined = ~(np.isfinite(var) & np.isfinite(held) & (var > 0))
        for bad, expected in (
                (too_big, f"a float in (0, {EPSILON_MAX!r}] (e^eps must be finite)"),
                (undefined, "large enough that the estimator is defined in double precision "
                            "(p - q > 0 and a finite variance)")):
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                if eps.shape[0] == 1 and name == "epsilon":
                    raise param_error(name, owner, expected, float(eps[0]))
                raise entry_error(name, owner, expected, float(eps[i]), i)

    def _budgets(self, epsilons, n: int, owner: str) -> np.ndarray:
        if epsilons is None:
            if self.epsilon is None:
                raise param_error("epsilons", owner,
                                  "given when the oracle was built with epsilon=None "
                                  "(an array of personal budgets)", None)
            return np.full(n, self.epsilon)
        eps = check_positive_array(epsilons, "epsilons", owner, size=n)
        self.check_budgets(eps, "epsilons", owner)
        return eps

    def check_values(self, values: ArrayLike, owner: str) -> np.ndarray:
        """Return ``values`` as int64 in ``[0, D)`` or raise, naming the first bad entry."""
        D = self.domain_size
        expected = f"a 1-d array of integers in [0, {D})"
        try:
            arr = np.asarray(values)
        except (ValueError, TypeError):
            raise param_error("values", owner, expected, values, TypeError) from None
        if arr.ndim != 1:
            raise param_error("values", owner, expected, _Text(f"an array of shape {arr.shape}"))
        kind = arr.dtype.kind
        if kind == "f":
            finite = np.isfinite(arr)
            safe = np.where(finite, arr, 0.5)
            bad = ~(finite & (np.floor(safe) == safe))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise entry_error("values", owner, expected, arr[i], i)
        elif kind == "O" and arr.size:
            _, numeric, integral, _ = classify_integers(arr)
            if not integral.all():
                i = int(np.flatnonzero(~integral)[0])
                raise entry_error("values", owner, expected, arr[i], i,
                                  ValueError if numeric[i] else TypeError)
            arr = np.array([int(v) for v in arr], dtype=object)
        elif kind not in "iu" and arr.size:
            raise param_error("values", owner, expected, _Text(f"an array of dtype {arr.dtype}"),
                              TypeError)
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        lo, hi = arr.min(), arr.max()
        if not (lo >= 0 and hi < D):
            bad = ~((arr >= 0) & (arr < D))
            i = int(np.flatnonzero(bad)[0])
            raise entry_error("values", owner, expected, arr[i], i)
        return np.ascontiguousarray(arr, dtype=np.int64)

    def _n_reports(self, reports, owner: str) -> int:
        try:
            return len(reports)
        except TypeError:
            raise param_error("reports", owner, "an array with one report per identity",
                              reports, TypeError) from None

    # ------------------------------------------------------------ public API
    def encode(self, labels: ArrayLike) -> np.ndarray:
        """The symbols (int64) of labels, for an oracle built with ``categories=``.

        Parameters
        ----------
        labels : array_like, shape (n,)
            Labels among :attr:`categories`: a list, a numpy string or
            integer array, a pandas ``Series`` or ``Categorical``.

        Returns
        -------
        numpy.ndarray of int64, shape (n,)
            ``categories.index(label)`` for every label.

        Raises
        ------
        ValueError
            Naming the first label that is not a category (and its index).
        """
        owner = f"{type(self).__name__}.encode"
        if self._labels is None:
            raise ValueError(f"{owner} needs labels: build {type(self).__name__} with "
                             "categories=[...] (its symbols are the integers 0 .. D-1 "
                             "otherwise)")
        return self._labels.encode(labels, "labels", owner)

    @budgets_by_keyword
    def privatize(self, values: ArrayLike, *, epsilons: Optional[ArrayLike] = None,
                  identities: Optional[ArrayLike] = None, rng: RngLike = None) -> np.ndarray:
        """Privatize one symbol per identity.

        Parameters
        ----------
        values : array_like, shape (n,)
            Symbols in ``[0, domain_size)``, or labels among
            :attr:`categories` when the oracle has categories (a list, a
            numpy array, a pandas ``Series`` or ``Categorical``); anything
            else raises.
        epsilons : float or array_like, shape (n,), optional
            Personal budgets; default ``epsilon`` for everyone. Keyword-only.
        identities : array_like of int, optional
            Distinct identities (key the public hashes); default ``0 .. n-1``.
        rng : None, int, SeedSequence or Generator
            Private randomness.

        Returns
        -------
        numpy.ndarray
            The reports (the oracle's docstring gives their shape).
        """
        owner = f"{type(self).__name__}.privatize"
        if self._labels is not None:
            x = self._labels.encode(values, "values", owner)
        else:
            x = self.check_values(values, owner)
        n = x.shape[0]
        # one shared budget is passed as a length-1 array: the array layer
        # broadcasts it (and computes p, q once instead of n times)
        eps = self._budgets(epsilons, n if epsilons is not None else 1, owner)
        ids = self._identities(identities, n, owner)
        return self.perturb(x, eps, ids, as_generator(rng, owner))

    def _identities(self, identities, n: int, owner: str):
        """Validated identities; ``None`` stays ``None`` for oracles that do not hash them."""
        if identities is None and not self.uses_identities:
            return None
        return resolve_identities(identities, n, owner)

    @budgets_by_keyword
    def estimate(self, reports: ArrayLike, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> FrequencyEstimate:
        """Count estimates of every symbol, their variances and the sanitization counts.

        The numbers are exactly those of ``finalize(partial(reports,
        epsilons, identities))``: see :meth:`partial` for the exact sums
        that make a decode split into chunks bit-identical to this one.
        With personal budgets, ``.privacy`` also summarizes them (min,
        median, max), which a partial does not keep.

        Parameters
        ----------
        reports : array_like
            One report per identity; malformed reports are sanitized and
            counted, never dropped.
        epsilons, identities
            As given to :meth:`privatize` (keyword-only).

        Returns
        -------
        FrequencyEstimate
        """
        owner = f"{type(self).__name__}.estimate"
        est = self.finalize(self._partial(reports, epsilons, identities, owner))
        if epsilons is not None:  # validated by _partial
            eps = np.broadcast_to(np.asarray(epsilons, dtype=np.float64), (est.n,))
            est = dataclasses.replace(
                est, privacy=PrivacyStatement.local(epsilon=self.epsilon, epsilons=eps))
        return est

    # ------------------------------------------------------------ streaming
    def _stream_extra(self) -> dict:
        """Oracle-specific public parameters of :meth:`stream_params` (FLH: ``n_hashes``)."""
        return {}

    def stream_params(self) -> dict:
        """The public parameters a partial is bound to (JSON values).

        ``type(self)(**oracle.stream_params())`` builds an equivalent server:
        ``domain_size``, ``epsilon`` (``None`` allowed), ``codebook_seed``,
        any oracle-specific public parameter (FLH's ``n_hashes``) and, for
        an oracle with labels, ``categories`` (a list); not ``n_threads``,
        which never changes a result.

        Returns
        -------
        dict
        """
        params: dict[str, Any] = {"domain_size": self.domain_size, "epsilon": self.epsilon,
                                  "codebook_seed": self.codebook_seed}
        params.update(self._stream_extra())
        if self.categories is not None:
            params["categories"] = list(self.categories)
        return params

    def partial(self, reports: ArrayLike, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """The exact, mergeable state of :meth:`estimate` over a chunk of reports.

        Parameters
        ----------
        reports : array_like
            The chunk's reports (there may be none); sanitized and counted as
            in :meth:`estimate`.
        epsilons : float or array_like, shape (n,), optional
            The chunk's personal budgets; ``None`` uses the oracle's
            ``epsilon`` for every report (the equal-budget decode). A budget
            equal to the oracle's ``epsilon`` counts as that decode too.
        identities : array_like of int, optional
            The chunk's identities. The default ``0 .. n-1`` is right only
            for a first chunk: pass them for every other chunk (they key the
            sanitization coins and, for OLH, the hashes).

        Returns
        -------
        fastldp.streaming.Partial
            Mechanism ``type(self).__name__``, parameters
            :meth:`stream_params`. The reports at the oracle's ``epsilon``
            (all of them when ``epsilons`` is ``None``): the integer hit
            counts per position of the oracle's statistic (``"hits"``:
            integers in an :class:`~fastldp.streaming.ExactSum`). The
            reports at other budgets: :class:`~fastldp.streaming.ExactSum` s
            of the report weights per position (``"support"``), of the
            constant added to every count (``"offset"``), of the per-report
            variances ``sigma_i^2`` (``"var"``) and of ``held_i - sigma_i^2``
            (``"held_minus_var"``), and their number (``"personal"``). Also
            the integer counts of reports by sanitization outcome (``"n"``,
            ``"n_valid"``, ``"reason:<reason>"``) and the or-merged
            ``"wrong_dtype"`` flag. Partials of any budgets merge. The state
            has one position per symbol (``K`` columns for Hadamard
            response, ``h g`` cells for FLH), whatever ``n``.
        """
        return self._partial(reports, epsilons, identities, f"{type(self).__name__}.partial")

    def _partial(self, reports, epsilons, identities, owner: str) -> Partial:
        n = self._n_reports(reports, owner)
        eps, at_fixed = self._personal_budgets(epsilons, n, owner)
        hits = ExactSum(self._stat_size())
        support, offset = ExactSum(self._stat_size()), ExactSum(1)
        var, held_minus_var = ExactSum(1), ExactSum(1)
        personal = 0
        if eps is None:
            fast = self._fast_hits(reports, n, identities, owner)
            if fast is not None:  # every report legal: no copy, no per-report budgets
                report = all_legal_report(n)
            else:
                ids = resolve_identities(identities, n, owner)
                clean, report = self.sanitize(reports, self._budgets(None, n, owner), ids, owner)
                fast = self._hits(clean, ids)
            hits.add_integers(np.ascontiguousarray(fast, dtype=np.int64))
        else:
            ids = resolve_identities(identities, n, owner)
            clean, report = self.sanitize(reports, eps, ids, owner)
            if at_fixed is not None and at_fixed.any():
                hits.add_integers(np.ascontiguousarray(
                    self._hits(clean[at_fixed], ids[at_fixed]), dtype=np.int64))
                rest = ~at_fixed
                clean, eps, ids = clean[rest], eps[rest], ids[rest]
            personal = eps.shape[0]
            support, offset = self.weighted_sums(clean, eps, ids, np.ones(personal))
            v = np.asarray(self.variances(eps), dtype=np.float64)
            h = np.asarray(self.held_variances(eps), dtype=np.float64)
            var, held_minus_var = scalar_sum(v), scalar_sum(h - v)
        sums = {"hits": hits, "support": support, "offset": offset, "var": var,
                "held_minus_var": held_minus_var}
        counts = report_counts(report)
        counts["personal"] = personal
        return Partial(type(self).__name__, self.stream_params(), sums=sums, counts=counts,
                       flags={"wrong_dtype": report.wrong_dtype})

    def _personal_budgets(self, epsilons, n: int,
                          owner: str) -> tuple[Optional[np.ndarray], Optional[np.ndarray]]:
        """``(eps, at_fixed)`` of the ``n`` reports of a partial.

        ``eps`` is ``None`` when every report has the oracle's budget: those
        partials keep the hit counts of the equal-budget decode, bit for bit
        (``epsilons`` equal to it everywhere included). Otherwise ``eps``
        holds the checked budgets and ``at_fixed`` marks those equal to the
        oracle's (``None`` when it has no budget of its own). Raises when
        neither the oracle nor ``epsilons`` gives a budget.
        """
        if epsilons is None:
            if self.epsilon is None:
                self._budgets(None, n, owner)  # raises: this oracle has no budget of its own
            return None, None
        eps = self._budgets(epsilons, n, owner)
        if self.epsilon is None:
            return eps, None
        at_fixed = eps == self.epsilon
        if at_fixed.all():
            return None, None
        return eps, at_fixed

    def _check_partial(self, partial, owner: str) -> Partial:
        check_partial(partial, type(self).__name__, self.stream_params(), owner)
        if frozenset(partial.sums) != _SUMS or "personal" not in partial.counts:
            raise ValueError(f"{owner}: the partial holds the sums {sorted(partial.sums)}, not "
                             f"those of a {type(self).__name__} partial")
        return partial

    def merge(self, a: Partial, b: Partial) -> Partial:
        """Merge the partials of two chunks (exact, order-free; neither input changes).

        Every sum is an :class:`~fastldp.streaming.ExactSum` or an integer
        count, so ``merge(merge(a, b), c)`` and ``merge(a, merge(c, b))``
        hold the same numbers. Chunks of any budgets merge: the oracle's
        budget, personal budgets, or both.

        Parameters
        ----------
        a, b : fastldp.streaming.Partial
            Partials of this oracle (same :meth:`stream_params`).

        Returns
        -------
        fastldp.streaming.Partial

        Raises
        ------
        ValueError
            When a partial belongs to another oracle or other parameters.
        """
        owner = f"{type(self).__name__}.merge"
        self._check_partial(a, owner)
        self._check_partial(b, owner)
        return a.merge(b)

    def finalize(self, partial: Partial) -> FrequencyEstimate:
        """Turn a (merged) partial into the :class:`FrequencyEstimate` of all its reports.

        A deterministic function of the partial's exact state. When every
        report had the oracle's budget, the closed form of the equal-budget
        estimator applied to the integer hit counts (what
        ``estimate(reports)`` computes). Otherwise the hit counts are folded
        into the personal sums exactly (:meth:`_folded_sums`) and the counts
        round ``support + offset`` once (HR and FLH first map the rounded
        statistic through their transform). A partial without reports gives
        zero counts and variances.

        Parameters
        ----------
        partial : fastldp.streaming.Partial
            From :meth:`partial` or :meth:`merge` of this oracle.

        Returns
        -------
        FrequencyEstimate
        """
        owner = f"{type(self).__name__}.finalize"
        self._check_partial(partial, owner)
        n = partial.counts["n"]
        report = partial_report(partial)
        if partial.counts["personal"] == 0 and self.epsilon is not None:
            counts = self._counts_from_hits(partial.sums["hits"].value(), n)
            variances = self._uniform_variances(n, counts)
        else:
            sums = self._folded_sums(partial)
            counts = self.weighted_counts(sums["support"], sums["offset"])
            if n == 0:
                variances = np.zeros_like(counts)
            else:
                base = float(sums["var"].value()[0])
                extra = float(sums["held_minus_var"].value()[0]) / n
                variances = base + np.clip(counts, 0.0, n) * extra
        if partial.counts["personal"] == 0:
            privacy = PrivacyStatement.local(epsilon=self.epsilon)
        else:  # a partial keeps exact sums, not the budgets: only that they differed
            privacy = PrivacyStatement("local DP", "report", personal=True)
        return FrequencyEstimate(counts, variances, report, n, privacy, self.categories)

    def _folded_sums(self, partial: Partial) -> dict:
        """The personal sums of every report, those at the oracle's budget folded in exactly.

        Each of the ``n_fixed`` reports at the oracle's ``epsilon`` has the
        weight ``a`` and the terms ``c`` (offset), ``sigma^2`` and
        ``held - sigma^2`` of that budget, computed as :meth:`partial`
        computes them for a personal budget; so the support gains
        ``hits(v) a`` and each scalar sum ``n_fixed`` times its term, all
        exactly (:func:`scaled_sum`): the same exact sums as if every report
        had been decoded with personal budgets.
        """
        sums = dict(partial.sums)
        n_fixed = partial.counts["n"] - partial.counts["personal"]
        if n_fixed == 0:
            return sums
        e = np.array([self.epsilon], dtype=np.float64)
        a, c = self._report_terms(e, np.ones(1))
        v = np.asarray(self.variances(e), dtype=np.float64)
        h = np.asarray(self.held_variances(e), dtype=np.float64)
        n_sum = count_sum(n_fixed)
        sums["support"] = sums["support"].merge(scaled_sum(sums["hits"], float(a[0])))
        for key, term in (("offset", c), ("var", v), ("held_minus_var", h - v)):
            sums[key] = sums[key].merge(scaled_sum(n_sum, float(term[0])))
        return sums

    # ------------------------------------------------------------ statistic hooks
    def _stat_size(self) -> int:
        """Positions of the server statistic (``D`` unless the oracle says otherwise)."""
        return self.domain_size

    def _hits(self, clean, identities) -> np.ndarray:  # pragma: no cover - abstract
        """Integer number of (legal) reports hitting each position, equal budgets."""
        raise NotImplementedError

    def _counts_from_hits(self, hits: np.ndarray, n: int) -> np.ndarray:  # pragma: no cover
        """Equal-budget counts from the hit counts (float64 holding exact integers)."""
        raise NotImplementedError

    def _report_terms(self, eps: np.ndarray, lam: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per report, the weight ``a_i`` and the offset term of :meth:`weighted_sums`.

        ``a_i = lam_i / (p_i - q_i)`` (``lam_i / gamma_i`` for HR) is added at
        every position report ``i`` hits, ``c_i`` (``-a_i q_i``; zero for
        HR) to every count. One function for both uses, so that
        :meth:`finalize` folds the reports at the oracle's budget into the
        personal sums with exactly the terms a personal decode would add.
        """
        raise NotImplementedError  # pragma: no cover - abstract

    def weighted_sums(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                      lam: np.ndarray) -> tuple[ExactSum, ExactSum]:
        """Exact sums behind ``aggregate(clean, eps, identities, lam)`` (array layer).

        Parameters
        ----------
        clean : array
            Sanitized reports.
        eps, lam : float64 arrays, shape (n,)
            Budgets and weights ``lambda_i``.
        identities : uint64 array, shape (n,)

        Returns
        -------
        support : ExactSum
            Per position of the oracle's statistic, the exact sum of the
            weights ``a_i = lambda_i / (p_i - q_i)`` of the reports that hit
            it (``lambda_i / gamma_i`` per column for HR).
        offset : ExactSum
            One position: the exact constant added to every count
            (``-sum_i a_i q_i``; zero for HR).
        """
        raise NotImplementedError  # pragma: no cover - abstract

    def weighted_counts(self, support: ExactSum, offset: ExactSum) -> np.ndarray:
        """Counts ``sum_i lambda_i c_i(v)`` from :meth:`weighted_sums` (rounded once)."""
        return add_broadcast(support, offset).value()

    def aggregate(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                  lam: np.ndarray) -> np.ndarray:
        """``sum_i lam_i c_i(v)`` for every symbol ``v`` (array layer, validated inputs).

        Computed from exact sums (:meth:`weighted_sums`), so it does not
        depend on the order of the reports.
        """
        return self.weighted_counts(*self.weighted_sums(clean, eps, identities, lam))

    def _fast_hits(self, reports, n: int, identities, owner: str):
        """The hit counts when every report is legal and budgets are equal, else ``None``."""
        clean = self._legal_as_is(reports, n)
        if clean is None:
            return None
        return self._hits(clean, self._identities(identities, n, owner))

    def _legal_as_is(self, reports, n: int):
        """``reports`` as the clean array when it is one of legal integer reports, else None."""
        arr = reports
        if not (isinstance(arr, np.ndarray) and arr.ndim == 1 and arr.shape[0] == n and n
                and arr.dtype.kind in "iu" and arr.dtype.itemsize <= 8):
            return None
        size = int(self.output_sizes(np.array([self.epsilon]))[0])
        if arr.min() >= 0 and arr.max() < size:
            return np.ascontiguousarray(arr, dtype=np.int64)
        return None

    def _uniform_variances(self, n: int, counts: np.ndarray) -> np.ndarray:
        e = np.array([self.epsilon])
        var, held = float(self.variances(e)[0]), float(self.held_variances(e)[0])
        return n * var + np.clip(counts, 0.0, n) * (held - var)

    def count_variances(self, eps: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """Plug-in variance of every count (module docstring)."""
        n = eps.shape[0]
        if n == 0:
            return np.zeros_like(counts)
        base = float(scalar_sum(self.variances(eps)).value()[0])
        extra = float(scalar_sum(self.held_variances(eps) - self.variances(eps)).value()[0]) / n
        return base + np.clip(counts, 0.0, n) * extra

    # ------------------------------------------------------------ integer reports
    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        """Replace illegal integer reports by a public uniform legal output; count them."""
        n = eps.shape[0]
        arr = as_report_array(reports)
        if arr.ndim != 1 or arr.shape[0] != n:
            raise ValueError(
                f"The 'reports' parameter of {owner} must be a 1-d array with one report per "
                f"budget ({n}). Got shape {arr.shape} instead."
            )
        sizes = self.output_sizes(eps)
        if arr.dtype.kind in "iu" and n and arr.dtype.itemsize <= 8:
            if arr.min() >= 0 and (arr.max() < sizes).all():
                return np.ascontiguousarray(arr, dtype=np.int64), all_legal_report(n)
        values, numeric, integral, wrong_dtype = classify_integers(arr)
        legal = integral & (values >= 0) & (values < sizes)
        out = values.copy()
        bad = ~legal
        if bad.any():
            out[bad] = public_uniform(self.codebook_seed, identities[bad], sizes[bad])
        return out, tally_report(n, numeric, integral, legal, wrong_dtype)


class MatrixReports:
    """Mixin of the oracles whose report is a row: FLH ``(index, bucket)``, OUE/SUE packed bits.

    The subclass gives ``_shape_error(owner, n, shape)``, which says the row's layout.
    """

    def _shape_error(self, owner: str, n: Optional[int],
                     shape: tuple[int, ...]) -> ValueError:  # pragma: no cover - abstract
        raise NotImplementedError

    def _n_reports(self, reports, owner):
        arr = as_report_array(reports)
        if arr.ndim != 2:
            raise self._shape_error(owner, None, arr.shape)
        return arr.shape[0]

    def _report_rows(self, reports, n: int, width: int, owner: str) -> np.ndarray:
        """``reports`` as an ``(n, width)`` array; any other shape is the subclass's error."""
        arr = as_report_array(reports)
        if arr.ndim != 2 or arr.shape != (n, width):
            raise self._shape_error(owner, n, arr.shape)
        return arr

