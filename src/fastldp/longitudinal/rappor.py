"""Full RAPPOR: Bloom filters by cohort, a memoized permanent response, a fresh instantaneous one.

Client (Erlingsson, Pihur and Korolova [1]_, section 3), for an identity
``i`` holding the value ``v``:

1. **Bloom filter.** Identity ``i`` belongs to the public cohort
   ``c = i mod m`` (``m = n_cohorts``). Cohort ``c`` has ``h`` public hash
   functions ``H_{c,t} : values -> [k]`` (the hashing of one-time
   :class:`fastldp.oracles.RAPPOR`: the OLH hash with function index
   ``c h + t`` under the codebook seed), and ``B`` is the ``k``-bit filter
   with ``B_j = 1`` iff ``H_{c,t}(v) = j`` for some ``t``.
2. **Permanent randomized response** (memoized per ``(identity, value)``):
   ``B'_j = 1`` with probability ``f/2``, ``0`` with probability ``f/2``,
   ``B_j`` otherwise; i.e. each bit flips with probability ``f/2``. It is
   drawn the first time ``(i, v)`` is reported and kept in the family's
   memo (:mod:`fastldp.longitudinal.memo`), committed before any report
   that depends on it is released.
3. **Instantaneous randomized response** (fresh for every report):
   ``S_j = 1`` with probability ``q`` if ``B'_j = 1`` and ``p`` if
   ``B'_j = 0``.

Privacy (section 3.2 of the paper; both checked exactly by the audit)
---------------------------------------------------------------------
The filters of two values differ in at most ``2 h`` bits, each flipped
independently, so the permanent response (and therefore any number of
reports of an unchanged value) is ``epsilon_inf``-LDP with

    epsilon_inf = 2 h ln((1 - f/2) / (f/2)).

One report's bits are independent with

    q* = P(S_j = 1 | B_j = 1) = f (p + q) / 2 + (1 - f) q,
    p* = P(S_j = 1 | B_j = 0) = f (p + q) / 2 + (1 - f) p,

and its largest likelihood ratio is reached with ``S_j = 1`` on the ``h``
bits only ``v`` sets and ``S_j = 0`` on the ``h`` bits only ``v'`` sets:

    epsilon_1 = h ln(q* (1 - p*) / (p* (1 - q*)))

(the paper's bound for one report). The headline example ``k = 128, h = 2, m = 64,
f = 0.5, p = 0.5, q = 0.75`` gives ``epsilon_inf = 4 ln 3 = 4.394`` and
``epsilon_1 = 1.0743``. Both are attained exactly when two values have
disjoint filters of ``h`` bits in the identity's cohort; a hash collision
only lowers the ratio. A value that changes gets a permanent response per
distinct value: ``c`` distinct values cost at most ``c epsilon_inf``
(:class:`~fastldp.longitudinal.LongitudinalPrivacy`).

Decoding a candidate list (sections 4 and 5 of the paper)
---------------------------------------------------------
With ``m_c`` reports in cohort ``c``, ``y_cj`` of them setting bit ``j``,

    t_cj = (y_cj - p* m_c) / (q* - p*)

is an unbiased estimate of the number of cohort ``c``'s users whose filter
sets bit ``j``, ``sum_v X_c[j, v] N_c(v)``. Under RAPPOR's model (each
cohort a sample of the population, ``N_c(v) = m_c N(v) / n``) the counts of
the candidates solve the weighted least squares problem of
:class:`fastldp.oracles.RAPPOR`: ``G f = h``, ``G = sum_c m_c X_c^T X_c``,
``h = sum_c X_c^T t_c``, ``N = n f``. Given the cohorts, the ``t_cj`` are
independent with

    Var t_cj = (a_cj q* (1 - q*) + (m_c - a_cj) p* (1 - p*)) / (q* - p*)^2,

``a_cj`` the number of filters setting the bit; the reported standard
errors are the square roots of the diagonal of the sandwich
``n^2 G^{-1} X^T diag(Var t) X G^{-1}`` with ``a_cj`` replaced by ``t_cj``
clipped to ``[0, m_c]`` (plug-in). Each candidate is tested against "count
0" with the one-sided normal p-value ``P(Z > N / se)``, and detected when it
is below ``alpha / M`` (Bonferroni over the ``M`` candidates, the paper's
``0.05 / M``). The paper selects candidates by Lasso before the
least-squares fit; here every candidate is fitted (the design must have
full column rank: ``m k`` well above ``M``), so no regularization path is
needed and the standard errors are those of one linear fit.

Streaming
---------
A partial holds the exact integer bit counts per cohort (``m k``) and the
cohort sizes (``m``), which merge by adding; :meth:`LongitudinalRAPPOR.finalize`
runs the fit, so any split of the reports gives the same bits.

References
----------
.. [1] U. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response", CCS 2014.
.. [2] G. Fanti, V. Pihur, U. Erlingsson, "Building a RAPPOR with the
   unknown: privacy-preserving learning of associations and data
   dictionaries", PoPETs 2016 (least-squares decoding of a candidate list).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._hash import SANITIZE_STREAM, hash_blocks
from .._kernels._unary import ue_counts, ue_perturb
from .._random import as_generator, resolve_codebook_seed, resolve_identities
from .._validation import check_float, check_int, param_error, resolve_alias
from ..oracles import FrequencyEstimate
from ..oracles._base import (MAX_DOMAIN_SIZE, RngLike, _Text, all_legal_report, as_report_array,
                             classify_integers, partial_report, report_counts, tally_report)
from ..oracles.olh import olh_hash
from ..streaming import ExactSum, Partial, check_partial
from ._protocol import LongitudinalProtocol, one_report_budget
from .memo import MemoryMemo, MemoStore
from .protocols import LongitudinalPrivacy, MemoizedBudgets

__all__ = ["LongitudinalRAPPOR", "RAPPORDecode", "rappor_epsilons", "symmetric_q"]

Memo = Union[MemoryMemo, MemoStore]

#: the fit solves an M x M system: candidates at most
MAX_CANDIDATES = 8192
MAX_BITS = 4096
MAX_HASHES = 64
MAX_DESIGN_ROWS = 2**24


def rappor_epsilons(*, h: int, f: float, p: float, q: float) -> tuple[float, float]:
    """``(epsilon_inf, epsilon_1)`` of full RAPPOR (module docstring; Erlingsson et al., section 3.2).

    Examples
    --------
    >>> e_inf, e_1 = rappor_epsilons(h=2, f=0.5, p=0.5, q=0.75)
    >>> round(e_inf, 4), round(e_1, 4)
    (4.3944, 1.0743)
    """
    e_inf = 2 * h * math.log((1 - f / 2) / (f / 2))
    qs = 0.5 * f * (p + q) + (1 - f) * q
    ps = 0.5 * f * (p + q) + (1 - f) * p
    e_1 = h * math.log(qs * (1 - ps) / (ps * (1 - qs)))
    return e_inf, e_1


def symmetric_q(epsilon_1: float, *, h: int, f: float) -> float:
    """The ``q`` (with ``p = 1 - q``) that gives one report exactly ``epsilon_1``.

    One report's ratio grows with ``q`` on ``(1/2, 1]`` from 1 to the
    permanent response's (at ``q = 1`` a report is the permanent response),
    so every ``epsilon_1 < epsilon_inf`` has one such ``q``, found here by
    bisection to the last bit.

    Examples
    --------
    >>> q = symmetric_q(1.0, h=2, f=0.25)
    >>> round(rappor_epsilons(h=2, f=0.25, p=1 - q, q=q)[1], 12)
    1.0
    """
    e_inf = rappor_epsilons(h=h, f=f, p=0.0, q=1.0)[0]
    if not 0.0 < epsilon_1 < e_inf:
        raise ValueError(f"epsilon_1 must lie in (0, epsilon_inf) = (0, {e_inf!r}) for h = {h}, "
                         f"f = {f!r}; got {epsilon_1!r}")
    lo, hi = 0.5, 1.0
    while True:
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        if rappor_epsilons(h=h, f=f, p=1.0 - mid, q=mid)[1] > epsilon_1:
            hi = mid
        else:
            lo = mid
    err = [abs(rappor_epsilons(h=h, f=f, p=1.0 - t, q=t)[1] - epsilon_1) for t in (lo, hi)]
    return lo if err[0] <= err[1] else hi


@dataclass(frozen=True, repr=False)
class RAPPORDecode(FrequencyEstimate):
    """The decode of a candidate list: counts, standard errors and detections.

    Attributes
    ----------
    counts, variances, sanitization, n, privacy, categories
        As :class:`~fastldp.oracles.FrequencyEstimate`; one entry per
        candidate, ``categories`` the candidates themselves.
    candidates : int64 array, shape (M,)
    p_values : float64 array, shape (M,)
        One-sided p-value of each candidate's count under "count 0".
    detected : bool array, shape (M,)
        ``p_values < alpha / M`` (Bonferroni).
    alpha : float
    """

    candidates: Optional[np.ndarray] = None
    p_values: Optional[np.ndarray] = None
    detected: Optional[np.ndarray] = None
    alpha: float = 0.05

    def detections(self) -> list[tuple[int, float, float]]:
        """``(candidate, count, standard error)`` of every detected candidate, largest first."""
        assert self.candidates is not None and self.detected is not None
        std = np.sqrt(self.variances) if self.variances is not None else np.full_like(
            self.counts, np.nan)
        idx = np.flatnonzero(self.detected)
        idx = idx[np.argsort(-self.counts[idx], kind="stable")]
        return [(int(self.candidates[j]), float(self.counts[j]), float(std[j])) for j in idx]


class LongitudinalRAPPOR(MemoizedBudgets, LongitudinalProtocol):
    """Full RAPPOR: Bloom filter, memoized permanent response ``f``, instantaneous ``p``, ``q``.

    Parameters
    ----------
    domain_size : int in [2, 2**31 - 1]
        The values are ``0 .. domain_size - 1`` (hashed into the filter).
    n_bits, n_hashes, n_cohorts : int
        The paper's ``k`` (bits of the filter, default 128), ``h`` (hash
        functions, default 2) and ``m`` (cohorts, default 64; identity ``i``
        is in cohort ``i mod m``). ``k``, ``h`` and ``m`` are accepted as
        the paper's names for them.
    f : float in (0, 1)
        The permanent response replaces a bit by a fair coin with
        probability ``f`` (default 0.5).
    p, q : float in [0, 1], p < q
        The instantaneous response sets a bit with probability ``q`` when
        the permanent bit is 1, ``p`` when it is 0 (defaults 0.5, 0.75).
    epsilon_inf : float, optional
        Sets ``f`` from the longitudinal bound instead
        (``f / 2 = 1 / (1 + e^(epsilon_inf / (2 h)))``).
    epsilon_1, epsilon : float, optional
        One report's budget ``epsilon_1`` instead of ``(p, q)``: sets the
        symmetric ``p = 1 - q`` that reaches it (:func:`symmetric_q`); it
        must stay below ``epsilon_inf``. ``epsilon`` (the contract's name)
        is another name for it, as in every longitudinal protocol; without
        either, ``epsilon_1`` is derived from ``(f, p, q)`` and reported.
    candidates : array_like of int, optional
        The values the server decodes (default every value; then
        ``domain_size <= 8192``).
    alpha : float in (0, 1)
        Family-wise significance of the detections (default 0.05).
    codebook_seed : int or None
        Seed of the cohorts' hash functions and the sanitization coins.
    n_threads : int or None
        Threads of the bit kernels; results never depend on it.

    Attributes
    ----------
    epsilon_inf, epsilon_1 : float
        The longitudinal bound and one report's budget (module docstring);
        ``epsilon`` is ``epsilon_1``.
    p_star, q_star : float
        One report's ``P(S_j = 1)`` for a clear and a set filter bit.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.longitudinal import LongitudinalRAPPOR, MemoryMemo
    >>> rappor = LongitudinalRAPPOR(domain_size=20, k=128, h=2, m=64, f=0.5, p=0.5, q=0.75,
    ...                             codebook_seed=3)
    >>> round(rappor.epsilon_inf, 3), round(rappor.epsilon_1, 4)
    (4.394, 1.0743)
    >>> values = np.repeat([0, 1, 2], [30000, 20000, 10000])
    >>> memo = MemoryMemo()
    >>> day1 = rappor.privatize(values, memo=memo, rng=1)
    >>> day2 = rappor.privatize(values, memo=memo, rng=2)   # same permanent responses
    >>> est = rappor.estimate(day2)
    >>> [c for c, _, _ in est.detections()][:3]
    [0, 1, 2]
    """

    name = "rappor-longitudinal"

    _NO_PERSONAL_BUDGETS = "f, p and q are parameters of the deployment"

    def __init__(self, *, domain_size: int, n_bits: Optional[int] = None,
                 n_hashes: Optional[int] = None, n_cohorts: Optional[int] = None,
                 f: Optional[float] = None, p: Optional[float] = None,
                 q: Optional[float] = None, epsilon_inf: Optional[float] = None,
                 epsilon: Optional[float] = None,
                 candidates: Optional[ArrayLike] = None, alpha: float = 0.05,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None,
                 k: Optional[int] = None, h: Optional[int] = None,
                 m: Optional[int] = None, epsilon_1: Optional[float] = None) -> None:
        owner = type(self).__name__
        epsilon, shown = one_report_budget(owner, epsilon, epsilon_1)
        self.domain_size = check_int(domain_size, "domain_size", owner, low=2,
                                     high=MAX_DOMAIN_SIZE)

        def pick(name, value, letter, letter_value, default):
            if value is None and letter_value is None:
                return default
            return resolve_alias(owner, letter, letter_value, name, value)

        self.n_bits = check_int(pick("n_bits", n_bits, "k", k, 128), "n_bits", owner, low=1,
                                high=MAX_BITS)
        self.n_hashes = check_int(pick("n_hashes", n_hashes, "h", h, 2), "n_hashes", owner,
                                  low=1, high=MAX_HASHES)
        self.n_cohorts = check_int(pick("n_cohorts", n_cohorts, "m", m, 64), "n_cohorts", owner,
                                   low=1, high=MAX_DESIGN_ROWS // self.n_bits)
        if epsilon_inf is not None:
            if f is not None:
                raise ValueError(f"The 'epsilon_inf' parameter of {owner} sets f: pass one of "
                                 f"them. Got f={f!r} and epsilon_inf={epsilon_inf!r} instead.")
            e_inf = check_float(epsilon_inf, "epsilon_inf", owner, low=0.0, high=700.0,
                                high_open=False)
            f = 2.0 / (1.0 + math.exp(e_inf / (2 * self.n_hashes)))
        self.f = check_float(0.5 if f is None else f, "f", owner, low=0.0, high=1.0)
        if epsilon is not None:
            if p is not None or q is not None:
                raise ValueError(f"The {shown!r} parameter of {owner} sets p = 1 - q: pass "
                                 f"{shown} or (p, q). Got {shown}={epsilon!r}, p={p!r}, q={q!r} "
                                 "instead.")
            top = rappor_epsilons(h=self.n_hashes, f=self.f, p=0.0, q=1.0)[0]
            e1 = check_float(epsilon, shown, owner, low=0.0, high=top)
            q = symmetric_q(e1, h=self.n_hashes, f=self.f)
            p = 1.0 - q
        self.p = check_float(0.5 if p is None else p, "p", owner, low=0.0, high=1.0,
                             low_open=False, high_open=False)
        self.q = check_float(0.75 if q is None else q, "q", owner, low=0.0, high=1.0,
                             low_open=False, high_open=False)
        if not self.p < self.q:
            raise param_error("q", owner, f"a float in (p, 1] = ({self.p!r}, 1] (a set bit must "
                              "be reported more often than a clear one)", q)
        self.alpha = check_float(alpha, "alpha", owner, low=0.0, high=1.0)
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.n_threads = n_threads
        if candidates is None:
            if self.domain_size > MAX_CANDIDATES:
                raise param_error("candidates", owner, f"given when domain_size > "
                                  f"{MAX_CANDIDATES} (the fit solves an M x M system)", None)
            self.candidates = np.arange(self.domain_size, dtype=np.int64)
            self._default_candidates = True
        else:
            cand = np.asarray(candidates)
            if (cand.ndim != 1 or cand.shape[0] < 1 or cand.shape[0] > MAX_CANDIDATES
                    or cand.dtype.kind not in "iu" or np.any(cand < 0)
                    or np.any(cand >= self.domain_size)
                    or np.unique(cand).shape[0] != cand.shape[0]):
                raise param_error("candidates", owner, f"1 to {MAX_CANDIDATES} distinct ints in "
                                  f"[0, {self.domain_size})", _Text("another array"))
            self.candidates = cand.astype(np.int64)
            self._default_candidates = False
        self.epsilon_inf, self.epsilon_1 = rappor_epsilons(h=self.n_hashes, f=self.f, p=self.p,
                                                           q=self.q)
        # a budget asked for is the one stated (reached to the last bits by symmetric_q)
        self._budgets_given = {}
        if epsilon_inf is not None:
            self.epsilon_inf = self._budgets_given["epsilon_inf"] = float(epsilon_inf)
        if epsilon is not None:
            self.epsilon_1 = self._budgets_given["epsilon"] = float(epsilon)
        half = self.f / 2
        self.q_star = half * (self.p + self.q) + (1 - self.f) * self.q
        self.p_star = half * (self.p + self.q) + (1 - self.f) * self.p
        self._memo: Optional[MemoryMemo] = None
        self._fit_cache: dict[bytes, Any] = {}

    # ------------------------------------------------------------ public attributes
    @property
    def memo_scope(self) -> str:
        """The memo scope: the permanent round's law (filter, hashes, cohorts, ``f``, seed)."""
        return (f"rappor:k={self.n_bits}:h={self.n_hashes}:m={self.n_cohorts}:f={self.f!r}:"
                f"seed={self.codebook_seed}")

    @property
    def n_bytes(self) -> int:
        """Bytes per report, ``ceil(k / 8)``."""
        return (self.n_bits + 7) // 8

    def _report_layout(self):
        return np.uint8, (self.n_bytes,)  # the packed instantaneous filter

    def __repr__(self) -> str:
        return (f"LongitudinalRAPPOR(domain_size={self.domain_size}, n_bits={self.n_bits}, "
                f"n_hashes={self.n_hashes}, n_cohorts={self.n_cohorts}, f={self.f!r}, "
                f"p={self.p!r}, q={self.q!r}, codebook_seed={self.codebook_seed})")

    def stream_params(self) -> dict:
        """The public parameters a partial and a report file are bound to (JSON values).

        ``type(self)(**params)`` rebuilds an equivalent object.
        """
        # budgets given as such are kept as such (the rebuilt object states them exactly)
        params: dict[str, Any] = {
            "domain_size": self.domain_size, "n_bits": self.n_bits, "n_hashes": self.n_hashes,
            "n_cohorts": self.n_cohorts,
            **({"epsilon_inf": self.epsilon_inf} if "epsilon_inf" in self._budgets_given
               else {"f": self.f}),
            **({"epsilon": self.epsilon_1} if "epsilon" in self._budgets_given
               else {"p": self.p, "q": self.q}),
            "alpha": self.alpha, "codebook_seed": self.codebook_seed}
        if not self._default_candidates:
            params["candidates"] = [int(c) for c in self.candidates]
        return params

    # ------------------------------------------------------------ hashing
    def cohorts(self, identities: ArrayLike) -> np.ndarray:
        """The cohort ``identity mod n_cohorts`` of each identity (int64)."""
        ids = np.asarray(identities, dtype=np.uint64)
        return (ids % np.uint64(self.n_cohorts)).astype(np.int64)

    def bloom_positions(self, cohorts: ArrayLike, values: ArrayLike) -> np.ndarray:
        """``H_{c,t}(v)``: int64 ``(n, h)`` (the hashing of :class:`fastldp.oracles.RAPPOR`)."""
        c = np.asarray(cohorts, dtype=np.int64)
        v = np.asarray(values, dtype=np.int64)
        h = self.n_hashes
        fn = (c[:, None] * h + np.arange(h, dtype=np.int64)[None, :]).astype(np.uint64)
        items = np.broadcast_to(v[:, None], fn.shape)
        return olh_hash(self.codebook_seed, fn.ravel(), np.ascontiguousarray(items).ravel(),
                        self.n_bits).reshape(c.shape[0], h)

    def bloom_filters(self, cohorts: ArrayLike, values: ArrayLike) -> np.ndarray:
        """The filters of paired cohorts and values: bool ``(n, k)``."""
        pos = self.bloom_positions(cohorts, values)
        out = np.zeros((pos.shape[0], self.n_bits), dtype=bool)
        out[np.repeat(np.arange(pos.shape[0]), self.n_hashes), pos.ravel()] = True
        return out

    def _packed_filters(self, cohorts: np.ndarray, values: np.ndarray) -> np.ndarray:
        pos = self.bloom_positions(cohorts, values)
        n = pos.shape[0]
        rows = np.zeros((n, self.n_bytes), dtype=np.uint8)
        index = np.arange(n)
        for t in range(self.n_hashes):
            rows[index, pos[:, t] >> 3] |= (np.uint8(1) << (pos[:, t] & 7).astype(np.uint8))
        return rows

    def _bernoulli(self, gen: np.random.Generator, n: int, prob: float) -> np.ndarray:
        """Packed rows of ``k`` independent ``[U < floor(prob 2^64) / 2^64]`` bits."""
        k = self.n_bits
        if prob <= 0.0:
            return np.zeros((n, self.n_bytes), dtype=np.uint8)
        if prob >= 1.0:
            rows = np.full((n, self.n_bytes), 0xFF, dtype=np.uint8)
        else:
            key = gen.integers(0, 2**64, size=2, dtype=np.uint64)
            thr = np.full(n, np.ldexp(prob, 64), dtype=np.float64).astype(np.uint64)
            # a row of k + 1 bits with the held bit k (dropped): every kept bit is Bernoulli(prob)
            rows = ue_perturb(int(key[0]), int(key[1]), np.full(n, k, dtype=np.int64), thr,
                              np.full(n, 0.5), k + 1, self._threads(n * (k + 1)))
            rows = rows[:, :self.n_bytes].copy()
        pad = self._padding_mask()
        if pad:
            rows[:, -1] &= np.uint8(~pad & 0xFF)
        return rows

    def _threads(self, work: int = 1 << 30) -> int:
        """The kernels' threads: one below about 2^18 bits of work (starting a team of
        threads costs more there; results never depend on the count)."""
        from .._random import resolve_n_threads

        return 1 if work < 1 << 18 else resolve_n_threads(self.n_threads, type(self).__name__)

    def _padding_mask(self) -> int:
        used = self.n_bits - 8 * (self.n_bytes - 1)
        return (0xFF << used) & 0xFF

    # ------------------------------------------------------------ client
    def _check_values(self, values, owner: str) -> np.ndarray:
        arr = np.asarray(values)
        if arr.ndim != 1:
            raise param_error("values", owner, "a 1-d array of ints", _Text(f"shape {arr.shape}"))
        if arr.shape[0] == 0:
            return np.zeros(0, dtype=np.int64)
        if arr.dtype.kind not in "iu":
            raise param_error("values", owner, f"ints in [0, {self.domain_size})",
                              _Text(f"dtype {arr.dtype}"), TypeError)
        bad = (arr < 0) | (arr >= self.domain_size)
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"The 'values' parameter of {owner} must hold ints in "
                             f"[0, {self.domain_size}). Got {arr[i].item()!r} at index {i} "
                             "instead.")
        return arr.astype(np.int64)

    def permanent(self, values: np.ndarray, identities: np.ndarray,
                  rng: np.random.Generator) -> np.ndarray:
        """Fresh permanent responses (no memo): each filter bit flipped w.p. ``f/2``."""
        rows = self._packed_filters(self.cohorts(identities), values)
        return rows ^ self._bernoulli(rng, values.shape[0], self.f / 2)

    def instantaneous(self, permanent: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """One report per permanent response: a set bit reads 1 w.p. ``q``, a clear one ``p``."""
        n = permanent.shape[0]
        ones_if_set = self._bernoulli(rng, n, self.q)
        ones_if_clear = self._bernoulli(rng, n, self.p)
        return (permanent & ones_if_set) | (~permanent & ones_if_clear)

    def privatize(self, values: ArrayLike, *, memo: Optional[Memo] = None,
                  epsilons: Optional[ArrayLike] = None, identities: Optional[ArrayLike] = None,
                  rng: RngLike = None) -> np.ndarray:
        """One report per identity: its memoized permanent response, randomized afresh.

        Parameters
        ----------
        values : array_like of int, shape (n,)
            Each identity's current value in ``[0, domain_size)``.
        memo : MemoryMemo or MemoStore, optional
            Where the permanent responses live (default this object's
            :attr:`memo`); a new ``(identity, value)`` is drawn and stored
            (committed by a :class:`MemoStore`) before this method returns.
        epsilons : None or float
            ``None`` or ``epsilon_1``.
        identities : array_like of int, optional
            Distinct identities (they fix the cohorts); default ``0 .. n-1``.
        rng : None, int, SeedSequence or Generator

        Returns
        -------
        numpy.ndarray
            ``(n, ceil(k / 8))`` uint8 rows of packed bits (bit ``j`` in
            bit ``j & 7`` of byte ``j >> 3``).
        """
        owner = f"{type(self).__name__}.privatize"
        self._check_epsilons(epsilons, owner)
        x = self._check_values(values, owner)
        ids = resolve_identities(identities, x.shape[0], owner)
        gen = as_generator(rng, owner)
        store = self.memo if memo is None else memo
        if not isinstance(store, (MemoryMemo, MemoStore)):
            raise param_error("memo", owner, "None, a MemoryMemo or a MemoStore", store,
                              TypeError)
        perm = store.responses(self.memo_scope, ids, x, self.domain_size,
                               lambda index: self.permanent(x[index], ids[index], gen),
                               np.uint8, self.n_bytes)
        return self.instantaneous(perm, gen)

    # ------------------------------------------------------------ server
    def public_rows(self, identities: np.ndarray) -> np.ndarray:
        """Public uniformly random legal reports keyed by ``(codebook seed, identity)``."""
        n_blocks = (self.n_bytes + 31) // 32
        words = hash_blocks(self.codebook_seed, np.ascontiguousarray(identities, dtype=np.uint64),
                            n_blocks + 1, SANITIZE_STREAM)[:, 1:, :]
        rows = np.ascontiguousarray(words.astype("<u8")).view(np.uint8)
        rows = rows.reshape(identities.shape[0], -1)[:, :self.n_bytes].copy()
        rows[:, -1] &= np.uint8(~self._padding_mask() & 0xFF)
        return rows

    def _n_reports(self, reports, owner: str) -> int:
        arr = as_report_array(reports)
        if arr.ndim != 2 or arr.shape[1] != self.n_bytes:
            raise ValueError(f"The 'reports' parameter of {owner} must be an (n, {self.n_bytes}) "
                             "uint8 array of packed bits. Got shape "
                             f"{arr.shape} instead.")
        return int(arr.shape[0])

    def sanitize(self, reports: ArrayLike, identities: np.ndarray, owner: str):
        """Replace illegal rows (not bytes, or set padding bits) by public random legal rows."""
        arr = as_report_array(reports)
        n = arr.shape[0]
        pad = np.uint8(self._padding_mask())
        if arr.dtype == np.uint8:
            legal = (arr[:, -1] & pad) == 0 if pad else np.ones(n, dtype=bool)
            if legal.all():
                return np.ascontiguousarray(arr), all_legal_report(n)
            numeric_row = integral_row = np.ones(n, dtype=bool)
            out = np.array(arr, dtype=np.uint8, order="C")
            wrong_dtype = False
        else:
            vals, numeric, integral, wrong_dtype = classify_integers(arr)
            in_byte = integral & (vals >= 0) & (vals <= 255)
            numeric_row, integral_row = numeric.all(axis=1), integral.all(axis=1)
            out = np.where(in_byte, vals, 0).astype(np.uint8)
            legal = in_byte.all(axis=1) & ((out[:, -1] & pad) == 0)
        bad = ~legal
        if bad.any():
            out[bad] = self.public_rows(identities[bad])
        return out, tally_report(n, numeric_row, integral_row, legal, wrong_dtype)

    def bit_counts(self, clean: np.ndarray, cohorts: np.ndarray) -> np.ndarray:
        """Per cohort, how many reports set each bit: int64 ``(m, k)``."""
        C, k = self.n_cohorts, self.n_bits
        out = np.zeros((C, k), dtype=np.int64)
        if clean.shape[0] == 0:
            return out
        order = np.argsort(cohorts, kind="stable")
        rows = np.ascontiguousarray(clean[order])
        bounds = np.searchsorted(cohorts[order], np.arange(C + 1))
        for c in np.flatnonzero(bounds[1:] > bounds[:-1]):
            out[c] = ue_counts(rows[bounds[c]:bounds[c + 1]], k,
                               self._threads(int(bounds[c + 1] - bounds[c]) * k))
        return out

    def partial(self, reports: ArrayLike, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """The exact, mergeable state of :meth:`estimate`: bit counts per cohort, cohort sizes."""
        return self._partial(reports, epsilons, identities, f"{type(self).__name__}.partial")

    def _partial(self, reports, epsilons, identities, owner: str) -> Partial:
        self._check_epsilons(epsilons, owner)
        n = self._n_reports(reports, owner)
        ids = resolve_identities(identities, n, owner)
        clean, report = self.sanitize(reports, ids, owner)
        cohorts = self.cohorts(ids)
        bits = ExactSum(self.n_cohorts * self.n_bits)
        sizes = ExactSum(self.n_cohorts)
        if n:
            bits.add_integers(self.bit_counts(clean, cohorts).ravel())
            sizes.add_integers(np.bincount(cohorts, minlength=self.n_cohorts).astype(np.int64))
        return Partial(type(self).__name__, self.stream_params(),
                       sums={"bits": bits, "reports": sizes}, counts=report_counts(report),
                       flags={"wrong_dtype": report.wrong_dtype})

    def merge(self, a: Partial, b: Partial) -> Partial:
        """Merge two partials (exact and order-free)."""
        owner = f"{type(self).__name__}.merge"
        check_partial(a, type(self).__name__, self.stream_params(), owner)
        check_partial(b, type(self).__name__, self.stream_params(), owner)
        return a.merge(b)

    def estimate(self, reports: ArrayLike, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> RAPPORDecode:
        """Decode one round's reports over the candidates (module docstring).

        Exactly ``finalize(partial(reports, epsilons, identities))``.
        """
        return self.finalize(self._partial(reports, epsilons, identities,
                                           f"{type(self).__name__}.estimate"))

    def design(self):
        """The 0/1 design ``X``, ``(m k, M)`` sparse CSR: row ``c k + j``, column ``v``."""
        import scipy.sparse as sp

        C, h, k, M = self.n_cohorts, self.n_hashes, self.n_bits, self.candidates.shape[0]
        cohort = np.repeat(np.arange(C, dtype=np.int64), M)
        cand = np.tile(np.arange(M, dtype=np.int64), C)
        pos = self.bloom_positions(cohort, self.candidates[cand])
        rows = (cohort[:, None] * k + pos).ravel()
        X = sp.csr_matrix((np.ones(rows.shape[0]), (rows, np.repeat(cand, h))),
                          shape=(C * k, M))
        X.sum_duplicates()
        X.data[:] = 1.0
        return X

    def finalize(self, partial: Partial) -> RAPPORDecode:
        """The least-squares counts, standard errors, p-values and detections of a partial."""
        owner = f"{type(self).__name__}.finalize"
        check_partial(partial, type(self).__name__, self.stream_params(), owner)
        if set(partial.sums) != {"bits", "reports"}:
            raise ValueError(f"{owner}: the partial holds the sums {sorted(partial.sums)}, not "
                             f"those of a {type(self).__name__} partial")
        n = partial.counts["n"]
        M = self.candidates.shape[0]
        if n == 0:
            counts, variances = np.zeros(M), np.zeros(M)
            pvals = np.ones(M)
        else:
            y = partial.sums["bits"].value().reshape(self.n_cohorts, self.n_bits)
            sizes = partial.sums["reports"].value()
            counts, variances = self._fit(y, sizes)
            with np.errstate(divide="ignore", invalid="ignore"):
                z = np.where(variances > 0, counts / np.sqrt(variances), 0.0)
            # P(Z > z) = erfc(z / sqrt 2) / 2 (no scipy.stats import on the first decode)
            pvals = np.array([0.5 * math.erfc(float(v) / math.sqrt(2.0)) for v in z])
        return RAPPORDecode(counts, variances, partial_report(partial), n, self.privacy(),
                            tuple(int(c) for c in self.candidates), candidates=self.candidates,
                            p_values=pvals, detected=pvals < self.alpha / M, alpha=self.alpha)

    def _fit(self, y: np.ndarray, sizes: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        ps, qs = self.p_star, self.q_star
        m = sizes.astype(np.float64)
        t = (y - ps * m[:, None]) / (qs - ps)
        X = self._design_cached()
        w = np.repeat(m, self.n_bits)
        G = np.asarray((X.T @ X.multiply(w[:, None])).todense())
        rhs = np.asarray(X.T @ t.ravel(), dtype=np.float64)
        try:
            np.linalg.cholesky(G)  # G must be positive definite (full column rank)
            Ginv = np.linalg.inv(G)
        except np.linalg.LinAlgError:
            raise ValueError(
                f"{type(self).__name__}.finalize: the least-squares design of the "
                f"{G.shape[0]} candidates over the cohorts with reports is singular (fewer "
                "equations n_cohorts * n_bits than candidates, or candidates with the same "
                "Bloom filter in every cohort): decode fewer candidates") from None
        n = float(m.sum())
        counts = n * (Ginv @ rhs)
        a = np.clip(t, 0.0, m[:, None]).ravel()
        var_t = (a * qs * (1 - qs) + (w - a) * ps * (1 - ps)) / (qs - ps) ** 2
        S = np.asarray(X @ Ginv)
        variances = n * n * (var_t @ (S * S))
        return counts, variances

    def _design_cached(self):
        X = getattr(self, "_X", None)
        if X is None:
            X = self._X = self.design()
        return X
