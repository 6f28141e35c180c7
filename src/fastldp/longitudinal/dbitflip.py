"""dBitFlipPM: Microsoft's memoized d-bit histogram protocol (Ding, Kulkarni, Yekhanin 2017).

Client, for an identity holding the value ``x`` in ``[0, D)``:

1. ``x`` falls in the bucket ``v = floor(x k / D)`` of ``k`` equal buckets
   (``k = n_buckets``; ``k = D`` makes every value its own bucket);
2. **once per identity** (memoized), it draws ``d`` distinct buckets
   ``j_1 < ... < j_d`` uniformly without replacement (``d = n_sampled``);
3. **once per identity and case** (memoized), it draws the permanent bits
   ``b_1 .. b_d``: ``b_p = 1`` with probability ``e^(eps/2) / (e^(eps/2) + 1)``
   if ``v = j_p``, ``1 / (e^(eps/2) + 1)`` otherwise (``eps = epsilon_inf``).
   The bits' law depends on ``v`` only through its *case*: the position
   ``p`` with ``j_p = v``, or "none of them" (``d + 1`` cases), so the memo
   keeps one response per case and moving between buckets the identity did
   not sample changes nothing it sends;
4. each report sends ``((j_1, b'_1), .., (j_d, b'_d))``, where the optional
   **output perturbation** replaces each memoized bit by a fair coin with
   probability ``gamma`` afresh per report (``gamma = 0``, the default,
   sends the memoized bits).

The full text of [1]_ was not reachable while this module was written: the
one-round protocol and its estimator follow the paper's abstract, multi-freq-
ldpy's implementation and Arcolezi et al.'s description; the keying of the
memo by case and the form of the output perturbation (a fair coin with
probability ``gamma``) are this module's choices, recalled from the paper's
sections on memoization and output perturbation but not checked against it.

Reports are int64 rows of ``d`` entries ``2 j_p + b'_p`` (buckets ascending).

Privacy
-------
The sampled buckets are independent of ``x``. Given them, two values differ
in at most two bits' laws (their own positions), each with ratio
``e^(eps/2)``, so the memoized response, and any number of reports of
values whose case does not change, are ``epsilon_inf``-LDP (Theorem 1 of
[1]_ for one round). With output perturbation a reported bit is 1 with
probability ``P* = P (1 - gamma) + gamma / 2`` or ``Q* = 1 - P*``, so one
report is ``epsilon_1 = 2 ln(P* / Q*)``-LDP (``= epsilon_inf`` when
``gamma = 0``). A user whose case changes ``c - 1`` times has ``c``
permanent responses: ``c epsilon_inf`` in all. Both bounds are attained
(the exact audit checks it) when ``d >= 2``; with ``d = 1`` two values
never both fall among the sampled buckets and the channel spends half of
them (the paper's statement, kept here, is then loose).

Estimators
----------
With ``n`` reports, ``s(v)`` of them sampling bucket ``v`` and ``h(v)`` of
those sending 1 for it, the histogram estimator of [1]_ (section 2.2) in
counts is

    c(v) = (k / d) (h(v) - Q* s(v)) / (P* - Q*),

unbiased for the number of identities in bucket ``v`` (each samples ``v``
with probability ``d / k``), with variance (over the sampling and the bits)

    Var c(v) = n (k / d) P* Q* / (P* - Q*)^2 + N(v) (k / d - 1),

reported as the plug-in value at ``N(v)`` = the estimate clipped to
``[0, n]``. The mean of the values is estimated as ``sum_v c(v) mid(v) / n``
with ``mid(v)`` the mean of the integers of bucket ``v``
(:meth:`DBitFlipPM.mean`).

1BitMean with alpha-point rounding
----------------------------------
[1]_'s mean estimator for counters in ``[0, m]`` is 1BitMean: one bit, 1
with probability ``pi(x) = 1 / (e^eps + 1) + (x / m) (e^eps - 1) / (e^eps + 1)``,
``eps``-LDP, and the unbiased mean ``m (b (e^eps + 1) - 1) / (e^eps - 1)``
averaged over the reports. Its longitudinal form (:class:`OneBitMean`)
rounds the value to a grid of ``s + 1`` points ``k m / s`` by *alpha-point
rounding*: each identity draws ``alpha`` uniform in ``[0, 1)`` once
(memoized); a value at ``t = x s / m`` rounds up to ``floor(t) + 1`` when
``t - floor(t) > alpha`` and down otherwise, so over ``alpha`` the rounded
point is ``t`` on average and the estimator stays unbiased; each grid point
has one memoized bit. A value that changes but rounds to the same point
sends the same bit; ``c`` distinct grid points cost ``c epsilon_inf``. The
optional output perturbation is the same fair coin with probability
``gamma`` as above. (This is the mechanism as recalled from [1]_; the text
was not at hand to check the details of its rounding.)

References
----------
.. [1] B. Ding, J. Kulkarni, S. Yekhanin, "Collecting telemetry data
   privately", NeurIPS 2017.
.. [2] H. H. Arcolezi et al., multi-freq-ldpy's ``dBitFlipPM`` (the
   estimator, normalized; it leaves the memo to the caller).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import dataclass
from typing import Optional, Union

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._hash import SANITIZE_STREAM, hash_blocks
from .._random import as_generator, resolve_codebook_seed, resolve_identities
from .._validation import check_float, check_int, param_error, resolve_alias
from ..oracles import FrequencyEstimate
from ..oracles._base import (EPSILON_MAX, MAX_DOMAIN_SIZE, RngLike, _Text, all_legal_report,
                             as_report_array, classify_integers, partial_report, report_counts,
                             tally_report)
from ..results import PrivacyStatement, Result
from ..streaming import ExactSum, Partial, check_partial
from ._protocol import LongitudinalProtocol, one_report_budget
from .memo import MemoryMemo, MemoStore
from .protocols import LongitudinalPrivacy, MemoizedBudgets

__all__ = ["DBitFlipPM", "OneBitMean", "MeanEstimate"]

Memo = Union[MemoryMemo, MemoStore]

#: the public rows of malformed reports rank k hash words per identity: buckets at most
MAX_BUCKETS = 1 << 16


class DBitFlipPM(MemoizedBudgets, LongitudinalProtocol):
    """dBitFlipPM: ``d`` memoized bits about ``d`` sampled buckets of ``k`` (module docstring).

    Parameters
    ----------
    domain_size : int in [2, 2**31 - 1]
        ``D``: the values are ``0 .. D-1``.
    n_buckets : int in [2, min(D, 65536)]
        ``k``, the buckets (``k`` is accepted as the paper's name); default
        ``D`` when ``D <= 65536``.
    n_sampled : int in [1, k]
        ``d``, the buckets each identity samples and reports on (``d`` is
        accepted as the paper's name); default 1.
    epsilon_inf : float in (0, 700]
        The paper's ``epsilon``: the budget of the memoized bits, the bound
        over any number of reports of an unchanged case.
    gamma : float in [0, 1)
        Output perturbation: each reported bit is replaced by a fair coin
        with this probability, afresh per report (default 0).
    epsilon_1, epsilon : float in (0, epsilon_inf], optional
        One report's budget ``epsilon_1`` instead of ``gamma``: sets
        ``gamma`` by :meth:`gamma_for`. ``epsilon`` (the contract's budget
        keyword) is another name for it, as in every longitudinal protocol.
    codebook_seed : int or None
        Keys the public sanitization rows.

    Attributes
    ----------
    epsilon_1 : float
        One report's budget, ``2 ln(P* / Q*)`` (``epsilon`` is its
        contract's name).
    P, Q : float
        A reported bit's probability of being 1 at the identity's own
        bucket and at any other.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.longitudinal import DBitFlipPM, MemoryMemo
    >>> dbf = DBitFlipPM(domain_size=100, n_buckets=10, n_sampled=3, epsilon_inf=2.0,
    ...                  codebook_seed=0)
    >>> values = np.arange(20000) % 100
    >>> memo = MemoryMemo()
    >>> r1 = dbf.privatize(values, memo=memo, rng=1)
    >>> r2 = dbf.privatize(values, memo=memo, rng=2)
    >>> bool(np.array_equal(r1, r2))        # gamma = 0: the memoized report itself
    True
    >>> est = dbf.estimate(r2)
    >>> bool(np.all(np.abs(est.counts - 2000) < 5 * est.std))
    True
    >>> round(dbf.mean(est), 0)
    51.0
    """

    name = "dbitflippm"

    _NO_PERSONAL_BUDGETS = ("no personal budgets: the memoized bits are drawn at one "
                            "epsilon_inf")

    def __init__(self, *, domain_size: int, epsilon_inf: float, n_buckets: Optional[int] = None,
                 n_sampled: Optional[int] = None, gamma: Optional[float] = None,
                 epsilon: Optional[float] = None, codebook_seed: Optional[int] = None,
                 k: Optional[int] = None, d: Optional[int] = None,
                 epsilon_1: Optional[float] = None) -> None:
        owner = type(self).__name__
        epsilon, shown = one_report_budget(owner, epsilon, epsilon_1)
        self.domain_size = check_int(domain_size, "domain_size", owner, low=2,
                                     high=MAX_DOMAIN_SIZE)
        buckets = (resolve_alias(owner, "k", k, "n_buckets", n_buckets)
                   if (k is not None or n_buckets is not None)
                   else min(self.domain_size, MAX_BUCKETS))
        self.n_buckets = check_int(buckets, "n_buckets", owner, low=2,
                                   high=min(self.domain_size, MAX_BUCKETS))
        sampled = (resolve_alias(owner, "d", d, "n_sampled", n_sampled)
                   if (d is not None or n_sampled is not None) else 1)
        self.n_sampled = check_int(sampled, "n_sampled", owner, low=1, high=self.n_buckets)
        self.epsilon_inf = check_float(epsilon_inf, "epsilon_inf", owner, low=0.0,
                                       high=EPSILON_MAX, high_open=False)
        if epsilon is not None:
            if gamma is not None:
                raise ValueError(f"The {shown!r} parameter of {owner} sets gamma (one report's "
                                 f"budget through the output perturbation): pass {shown} or "
                                 f"gamma, not both. Got {shown}={epsilon!r} and gamma={gamma!r} "
                                 "instead.")
            e1 = check_float(epsilon, shown, owner, low=0.0, high=self.epsilon_inf,
                             high_open=False)
            gamma = self.gamma_for(self.epsilon_inf, e1)
        self.gamma = check_float(0.0 if gamma is None else gamma, "gamma", owner, low=0.0,
                                 high=1.0, low_open=False)
        self._epsilon_given = None if epsilon is None else float(epsilon)
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        e = math.exp(self.epsilon_inf / 2)
        self.p1 = e / (e + 1.0)
        self.q1 = 1.0 / (e + 1.0)
        self.P = self.p1 * (1.0 - self.gamma) + self.gamma / 2
        self.Q = self.q1 * (1.0 - self.gamma) + self.gamma / 2
        self.epsilon_1 = (self.epsilon_inf if self.gamma == 0.0
                          else float(epsilon) if epsilon is not None  # reached to rounding
                          else 2.0 * math.log(self.P / self.Q))
        if not self.P > self.Q:
            raise param_error("epsilon_inf", owner, "large enough that P* > Q* in double "
                              "precision", epsilon_inf)
        self._memo: Optional[MemoryMemo] = None

    @staticmethod
    def gamma_for(epsilon_inf: float, epsilon_1: float) -> float:
        """The output perturbation ``gamma`` that makes one report exactly ``epsilon_1``-LDP.

        ``P* = p1 (1 - gamma) + gamma / 2`` with ``P* / (1 - P*) = e^(epsilon_1 / 2)``:
        ``gamma = (p1 - P*) / (p1 - 1/2)``, for ``0 < epsilon_1 <= epsilon_inf``.

        Examples
        --------
        >>> g = DBitFlipPM.gamma_for(2.0, 1.0)
        >>> round(DBitFlipPM(domain_size=4, n_sampled=2, epsilon_inf=2.0, gamma=g).epsilon_1, 12)
        1.0
        """
        e_inf, e_1 = math.exp(epsilon_inf / 2), math.exp(epsilon_1 / 2)
        p1, target = e_inf / (e_inf + 1), e_1 / (e_1 + 1)
        return (p1 - target) / (p1 - 0.5)

    # ------------------------------------------------------------ public attributes
    @property
    def memo_scopes(self) -> tuple[str, str]:
        """The memo scopes of the sampled buckets and of the memoized bits."""
        k, d = self.n_buckets, self.n_sampled
        return (f"dbitflip-sample:k={k}:d={d}",
                f"dbitflip-bits:k={k}:d={d}:epsilon_inf={self.epsilon_inf!r}")

    def __repr__(self) -> str:
        text = (f"DBitFlipPM(domain_size={self.domain_size}, n_buckets={self.n_buckets}, "
                f"n_sampled={self.n_sampled}, epsilon_inf={self.epsilon_inf!r}")
        if self.gamma:
            text += f", gamma={self.gamma!r}"
        return text + f", codebook_seed={self.codebook_seed})"

    def _report_layout(self):
        return np.int64, (self.n_sampled,)  # 2 j_p + b_p per sampled bucket

    def stream_params(self) -> dict:
        """The public parameters a partial and a report file are bound to (JSON values).

        ``type(self)(**params)`` rebuilds an equivalent object.
        """
        # a budget given as epsilon is kept as such, so the rebuilt object states it exactly
        budget = ({"gamma": self.gamma} if self._epsilon_given is None
                  else {"epsilon": self._epsilon_given})
        return {"domain_size": self.domain_size, "n_buckets": self.n_buckets,
                "n_sampled": self.n_sampled, "epsilon_inf": self.epsilon_inf, **budget,
                "codebook_seed": self.codebook_seed}

    def buckets(self, values: ArrayLike) -> np.ndarray:
        """The bucket ``floor(x k / D)`` of each value (int64)."""
        x = np.asarray(values, dtype=np.int64)
        if self.n_buckets == self.domain_size:
            return x.copy()
        # x k < 2^31 * 2^16: exact in int64
        return (x * self.n_buckets) // self.domain_size

    def bucket_midpoints(self) -> np.ndarray:
        """The mean of the integers of each bucket (float64, shape (k,))."""
        k, D = self.n_buckets, self.domain_size
        lo = -((-np.arange(k, dtype=np.int64) * D) // k)        # ceil(v D / k)
        hi = -((-np.arange(1, k + 1, dtype=np.int64) * D) // k) - 1
        return (lo + hi) / 2.0

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

    def sample_buckets(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``d`` distinct uniform buckets per row, ascending: int64 ``(n, d)`` (Floyd's algorithm).

        Step ``t`` (``t = k - d .. k - 1``) draws ``r`` uniform in ``[0, t]``
        and takes ``r``, or ``t`` when ``r`` was already taken: every
        ``d``-subset comes out with probability ``1 / C(k, d)``.
        """
        k, d = self.n_buckets, self.n_sampled
        out = np.empty((n, d), dtype=np.int64)
        for col, t in enumerate(range(k - d, k)):
            r = rng.integers(0, t + 1, size=n, dtype=np.int64)
            taken = (out[:, :col] == r[:, None]).any(axis=1) if col else np.zeros(n, bool)
            out[:, col] = np.where(taken, t, r)
        out.sort(axis=1)
        return out

    def cases(self, sampled: np.ndarray, buckets: np.ndarray) -> np.ndarray:
        """The position ``p`` with ``j_p = v``, or ``d`` when ``v`` was not sampled (int64)."""
        hit = sampled == buckets[:, None]
        return np.where(hit.any(axis=1), hit.argmax(axis=1), self.n_sampled).astype(np.int64)

    def permanent_bits(self, cases: np.ndarray, rng: np.random.Generator) -> np.ndarray:
        """Fresh memoized bits of the given cases: uint8 ``(n, d)``."""
        n, d = cases.shape[0], self.n_sampled
        prob = np.where(np.arange(d)[None, :] == cases[:, None], self.p1, self.q1)
        return (rng.random((n, d)) < prob).astype(np.uint8)

    def privatize(self, values: ArrayLike, *, memo: Optional[Memo] = None,
                  epsilons: Optional[ArrayLike] = None, identities: Optional[ArrayLike] = None,
                  rng: RngLike = None) -> np.ndarray:
        """One report per identity from its memoized buckets and bits (module docstring).

        Parameters
        ----------
        values : array_like of int, shape (n,)
        memo : MemoryMemo or MemoStore, optional
            Holds each identity's sampled buckets and its bits per case
            (default this object's :attr:`memo`); new ones are stored (and
            committed by a :class:`MemoStore`) before this method returns.
        epsilons : None or float
            ``None`` or ``epsilon_1``.
        identities : array_like of int, optional
            Distinct identities; default ``0 .. n-1``.
        rng : None, int, SeedSequence or Generator

        Returns
        -------
        numpy.ndarray
            int64 ``(n, d)``: ``2 j_p + b_p`` with ``j_1 < .. < j_d``.
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
        n, d = x.shape[0], self.n_sampled
        scope_s, scope_b = self.memo_scopes
        sampled = store.responses(scope_s, ids, np.zeros(n, dtype=np.int64), 1,
                                  lambda index: self.sample_buckets(index.shape[0], gen),
                                  np.int64, d)
        cases = self.cases(sampled, self.buckets(x))
        bits = store.responses(scope_b, ids, cases, d + 1,
                               lambda index: self.permanent_bits(cases[index], gen),
                               np.uint8, d).astype(np.int64)
        if self.gamma > 0.0:
            coin = gen.random((n, d)) < self.gamma
            bits = np.where(coin, gen.integers(0, 2, size=(n, d)), bits)
        return 2 * sampled + bits

    # ------------------------------------------------------------ exact laws
    def outputs(self) -> list[tuple[int, ...]]:
        """Every report (a tuple of ``d`` entries ``2 j_p + b_p``), in :meth:`channel`'s order."""
        out = []
        for subset in itertools.combinations(range(self.n_buckets), self.n_sampled):
            for bits in itertools.product((0, 1), repeat=self.n_sampled):
                out.append(tuple(2 * j + b for j, b in zip(subset, bits)))
        return out

    def channel(self, which: str = "report") -> np.ndarray:
        """Exact law ``P[v, y]`` of a bucket's report over :meth:`outputs` (tiny ``k`` only).

        ``which="permanent"``: the memoized response (bits at ``(p1, q1)``);
        ``"report"``: one report after output perturbation (``(P*, Q*)``).
        """
        if which not in ("permanent", "report"):
            raise ValueError(f"which must be 'permanent' or 'report', got {which!r}")
        if math.comb(self.n_buckets, self.n_sampled) * 2**self.n_sampled > 1 << 16:
            raise ValueError("channel() enumerates C(k, d) 2^d outputs; at most 65536")
        hi, lo = (self.p1, self.q1) if which == "permanent" else (self.P, self.Q)
        ys = self.outputs()
        pick = 1.0 / math.comb(self.n_buckets, self.n_sampled)
        law = np.empty((self.n_buckets, len(ys)))
        for v in range(self.n_buckets):
            for col, y in enumerate(ys):
                prob = pick
                for e in y:
                    pr1 = hi if e >> 1 == v else lo
                    prob *= pr1 if e & 1 else 1.0 - pr1
                law[v, col] = prob
        return law

    # ------------------------------------------------------------ server
    def _n_reports(self, reports, owner: str) -> int:
        arr = as_report_array(reports)
        if arr.ndim != 2 or arr.shape[1] != self.n_sampled:
            raise ValueError(f"The 'reports' parameter of {owner} must be an (n, "
                             f"{self.n_sampled}) int64 array. Got shape {arr.shape} instead.")
        return int(arr.shape[0])

    def public_rows(self, identities: np.ndarray) -> np.ndarray:
        """Public uniformly random legal reports keyed by ``(codebook seed, identity)``.

        Words of blocks 1, 2, ... of the sanitize stream: the first ``k``
        rank the buckets (the ``d`` smallest are taken), the next ``d`` give
        the bits.
        """
        k, d = self.n_buckets, self.n_sampled
        n_blocks = (k + d + 3) // 4
        words = hash_blocks(self.codebook_seed, np.ascontiguousarray(identities, dtype=np.uint64),
                            n_blocks + 1, SANITIZE_STREAM)[:, 1:, :].reshape(len(identities), -1)
        chosen = np.sort(np.argsort(words[:, :k], axis=1, kind="stable")[:, :d], axis=1)
        bits = (words[:, k:k + d] & np.uint64(1)).astype(np.int64)
        return 2 * chosen.astype(np.int64) + bits

    def sanitize(self, reports: ArrayLike, identities: np.ndarray, owner: str):
        """Replace illegal rows by public random legal rows; count them by reason.

        A row is legal when its ``d`` entries are integers in ``[0, 2k)``
        whose buckets (``entry >> 1``) increase strictly.
        """
        arr = as_report_array(reports)
        n = arr.shape[0]
        if arr.dtype == np.int64:  # the clients' layout: no conversion, one pass of checks
            legal = ((arr >= 0) & (arr < 2 * self.n_buckets)).all(axis=1)
            if self.n_sampled > 1:
                legal &= ((arr[:, 1:] >> 1) > (arr[:, :-1] >> 1)).all(axis=1)
            if legal.all():
                return np.ascontiguousarray(arr), all_legal_report(n)
        vals, numeric, integral, wrong_dtype = classify_integers(arr)
        in_range = integral & (vals >= 0) & (vals < 2 * self.n_buckets)
        legal = in_range.all(axis=1)
        if self.n_sampled > 1:
            legal &= ((vals[:, 1:] >> 1) > (vals[:, :-1] >> 1)).all(axis=1)
        out = np.where(in_range, vals, 0).astype(np.int64)
        if legal.all():
            return out, (all_legal_report(n) if not wrong_dtype
                         else tally_report(n, numeric.all(axis=1), integral.all(axis=1), legal,
                                           wrong_dtype))
        bad = ~legal
        out[bad] = self.public_rows(identities[bad])
        return out, tally_report(n, numeric.all(axis=1), integral.all(axis=1), legal,
                                 wrong_dtype)

    def partial(self, reports: ArrayLike, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """Exact integer state: per bucket, the reports sampling it and those sending 1."""
        return self._partial(reports, epsilons, identities, f"{type(self).__name__}.partial")

    def _partial(self, reports, epsilons, identities, owner: str) -> Partial:
        self._check_epsilons(epsilons, owner)
        n = self._n_reports(reports, owner)
        ids = resolve_identities(identities, n, owner)
        clean, report = self.sanitize(reports, ids, owner)
        k = self.n_buckets
        support, ones = ExactSum(k), ExactSum(k)
        if n:
            # one count of the codes 2 j + b: bucket j's reports are codes 2j and 2j + 1
            codes = np.bincount(clean.ravel(), minlength=2 * k).astype(np.int64)
            support.add_integers(codes[0::2] + codes[1::2])
            ones.add_integers(np.ascontiguousarray(codes[1::2]))
        return Partial(type(self).__name__, self.stream_params(),
                       sums={"support": support, "ones": ones}, counts=report_counts(report),
                       flags={"wrong_dtype": report.wrong_dtype})

    def merge(self, a: Partial, b: Partial) -> Partial:
        """Merge two partials (exact and order-free)."""
        owner = f"{type(self).__name__}.merge"
        check_partial(a, type(self).__name__, self.stream_params(), owner)
        check_partial(b, type(self).__name__, self.stream_params(), owner)
        return a.merge(b)

    def estimate(self, reports: ArrayLike, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> FrequencyEstimate:
        """Count estimates of every bucket (module docstring); ``finalize(partial(...))``."""
        return self.finalize(self._partial(reports, epsilons, identities,
                                           f"{type(self).__name__}.estimate"))

    def count_variances(self, n: int, counts: ArrayLike) -> np.ndarray:
        """``n (k/d) P* Q* / (P* - Q*)^2 + c (k/d - 1)`` at counts ``c`` (module docstring)."""
        c = np.asarray(counts, dtype=np.float64)
        r = self.n_buckets / self.n_sampled
        return n * r * self.P * self.Q / (self.P - self.Q) ** 2 + c * (r - 1.0)

    def finalize(self, partial: Partial) -> FrequencyEstimate:
        """The bucket counts and plug-in variances of a (merged) partial."""
        owner = f"{type(self).__name__}.finalize"
        check_partial(partial, type(self).__name__, self.stream_params(), owner)
        if set(partial.sums) != {"support", "ones"}:
            raise ValueError(f"{owner}: the partial holds the sums {sorted(partial.sums)}, not "
                             f"those of a {type(self).__name__} partial")
        n = partial.counts["n"]
        s = partial.sums["support"].value().astype(np.float64)
        h = partial.sums["ones"].value().astype(np.float64)
        r = self.n_buckets / self.n_sampled
        counts = r * (h - self.Q * s) / (self.P - self.Q)
        variances = self.count_variances(n, np.clip(counts, 0.0, n))
        return FrequencyEstimate(counts, variances, partial_report(partial), n, self.privacy())

    def mean(self, estimate: FrequencyEstimate) -> float:
        """The mean value implied by a bucket estimate: ``sum_v c(v) mid(v) / n``."""
        if estimate.n == 0:
            return float("nan")
        return float(estimate.counts @ self.bucket_midpoints() / estimate.n)


# ---------------------------------------------------------------------- 1BitMean
@dataclass(frozen=True, repr=False)
class MeanEstimate(Result):
    """The mean of :class:`OneBitMean`'s reports (a :class:`~fastldp.results.Result`).

    Attributes
    ----------
    mean : float64 array, shape (1,)
        The unbiased estimate of the identities' mean value (also ``.estimate``).
    variances : float64 array, shape (1,)
        A conservative plug-in variance (:meth:`OneBitMean.finalize`).
    sanitization, n, privacy
        As every result.
    """

    _estimate_field = "mean"
    mean: np.ndarray
    variances: np.ndarray
    sanitization: object
    n: int
    privacy: PrivacyStatement


class OneBitMean(MemoizedBudgets):
    """1BitMean with alpha-point rounding and memoized bits (module docstring).

    Parameters
    ----------
    max_value : float in (0, inf)
        ``m``: the values lie in ``[0, m]``.
    epsilon_inf : float in (0, 700]
        The budget of a memoized bit (the paper's ``epsilon``).
    n_points : int >= 1
        ``s``: the grid has the ``s + 1`` points ``k m / s`` (default 16).
    gamma : float in [0, 1), optional
        Output perturbation: a fair coin with this probability per report.
    epsilon_1, epsilon : float in (0, epsilon_inf], optional
        One report's budget instead of ``gamma`` (sets ``gamma``); two
        names for one budget.
    codebook_seed : int or None
        Keys the public replacement bits of malformed reports.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.longitudinal import MemoryMemo
    >>> from fastldp.longitudinal.dbitflip import OneBitMean
    >>> obm = OneBitMean(max_value=100.0, epsilon_inf=1.0, n_points=8, codebook_seed=0)
    >>> x = np.random.default_rng(0).uniform(0, 100, 200_000)
    >>> memo = MemoryMemo()
    >>> day1 = obm.estimate(obm.privatize(x, memo=memo, rng=1))
    >>> day2 = obm.privatize(x, memo=memo, rng=2)        # the same memoized bits
    >>> bool(abs(day1.mean[0] - x.mean()) < 5 * day1.std[0])
    True
    """

    name = "1bitmean"

    def __init__(self, *, max_value: float, epsilon_inf: float, n_points: int = 16,
                 gamma: Optional[float] = None, epsilon: Optional[float] = None,
                 codebook_seed: Optional[int] = None,
                 epsilon_1: Optional[float] = None) -> None:
        owner = type(self).__name__
        epsilon, shown = one_report_budget(owner, epsilon, epsilon_1)
        self.max_value = check_float(max_value, "max_value", owner, low=0.0,
                                     high=float("inf"))
        self.epsilon_inf = check_float(epsilon_inf, "epsilon_inf", owner, low=0.0,
                                       high=EPSILON_MAX, high_open=False)
        self.n_points = check_int(n_points, "n_points", owner, low=1, high=MAX_DOMAIN_SIZE - 1)
        if epsilon is not None:
            if gamma is not None:
                raise ValueError(f"The {shown!r} parameter of {owner} sets gamma: pass {shown} "
                                 f"or gamma, not both. Got {shown}={epsilon!r} and "
                                 f"gamma={gamma!r} instead.")
            e1 = check_float(epsilon, shown, owner, low=0.0, high=self.epsilon_inf,
                             high_open=False)
            gamma = self.gamma_for(self.epsilon_inf, e1)
        self.gamma = check_float(0.0 if gamma is None else gamma, "gamma", owner, low=0.0,
                                 high=1.0, low_open=False)
        self._epsilon_given = None if epsilon is None else float(epsilon)
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        e = math.exp(self.epsilon_inf)
        # a reported bit is 1 with probability c0 + c1 x / m
        self.c0 = (1.0 - self.gamma) / (e + 1.0) + self.gamma / 2
        self.c1 = (1.0 - self.gamma) * (e - 1.0) / (e + 1.0)
        self.epsilon_1 = (self.epsilon_inf if self.gamma == 0.0
                          else float(epsilon) if epsilon is not None
                          else math.log((1.0 - self.c0) / self.c0))
        self._memo: Optional[MemoryMemo] = None

    @staticmethod
    def gamma_for(epsilon_inf: float, epsilon_1: float) -> float:
        """The ``gamma`` that makes one report ``epsilon_1``-LDP: ``(1 - c0) / c0 = e^epsilon_1``.

        ``c0 = (1 - gamma) / (e^epsilon_inf + 1) + gamma / 2`` is the probability of a 1 at
        ``x = 0``.
        """
        e, target = math.exp(epsilon_inf), 1.0 / (math.exp(epsilon_1) + 1.0)
        return (target - 1.0 / (e + 1.0)) / (0.5 - 1.0 / (e + 1.0))

    @property
    def memo_scopes(self) -> tuple[str, str]:
        """The memo scopes of the offsets ``alpha`` and of the bits per grid point."""
        return ("1bitmean-alpha",
                f"1bitmean-bits:s={self.n_points}:epsilon_inf={self.epsilon_inf!r}")

    def __repr__(self) -> str:
        return (f"OneBitMean(max_value={self.max_value!r}, epsilon_inf={self.epsilon_inf!r}, "
                f"n_points={self.n_points}, gamma={self.gamma!r}, "
                f"codebook_seed={self.codebook_seed})")

    def stream_params(self) -> dict:
        """The public parameters a partial is bound to; ``type(self)(**params)`` rebuilds it."""
        budget = ({"gamma": self.gamma} if self._epsilon_given is None
                  else {"epsilon": self._epsilon_given})
        return {"max_value": self.max_value, "epsilon_inf": self.epsilon_inf,
                "n_points": self.n_points, **budget, "codebook_seed": self.codebook_seed}

    def round_points(self, values: np.ndarray, alpha: np.ndarray) -> np.ndarray:
        """Alpha-point rounding: the grid index of each value (int64 in ``[0, s]``)."""
        t = np.asarray(values, dtype=np.float64) * (self.n_points / self.max_value)
        k = np.minimum(np.floor(t), self.n_points - 1)
        return (k + ((t - k) > alpha)).astype(np.int64)

    def privatize(self, values: ArrayLike, *, memo: Optional[Memo] = None,
                  epsilons: Optional[ArrayLike] = None, identities: Optional[ArrayLike] = None,
                  rng: RngLike = None) -> np.ndarray:
        """One bit per identity (uint8 0/1) from its memoized offset and grid-point bit."""
        owner = f"{type(self).__name__}.privatize"
        if epsilons is not None and not np.all(np.asarray(epsilons, dtype=float)
                                               == self.epsilon_1):
            raise param_error("epsilons", owner, f"None or epsilon_1 = {self.epsilon_1!r}",
                              _Text("other budgets"))
        x = np.asarray(values, dtype=np.float64)
        if x.ndim != 1 or not np.all((x >= 0) & (x <= self.max_value)):
            raise param_error("values", owner, f"a 1-d array of floats in [0, {self.max_value!r}]",
                              _Text("other values"))
        ids = resolve_identities(identities, x.shape[0], owner)
        gen = as_generator(rng, owner)
        store = self.memo if memo is None else memo
        if not isinstance(store, (MemoryMemo, MemoStore)):
            raise param_error("memo", owner, "None, a MemoryMemo or a MemoStore", store,
                              TypeError)
        n = x.shape[0]
        scope_a, scope_b = self.memo_scopes
        alpha = store.responses(scope_a, ids, np.zeros(n, np.int64), 1,
                                lambda index: np.asarray(gen.random(index.shape[0])),
                                np.float64, 1)[:, 0]
        k = self.round_points(x, alpha)
        e = math.exp(self.epsilon_inf)
        pi = 1.0 / (e + 1.0) + (k / self.n_points) * (e - 1.0) / (e + 1.0)
        bits = store.responses(scope_b, ids, k, self.n_points + 1,
                               lambda index: (gen.random(index.shape[0]) < pi[index]),
                               np.uint8, 1)[:, 0]
        if self.gamma > 0.0:
            coin = gen.random(n) < self.gamma
            bits = np.where(coin, gen.integers(0, 2, size=n), bits).astype(np.uint8)
        return bits

    def partial(self, reports: ArrayLike, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """Exact state: the number of reports and of ones (malformed bits replaced, counted)."""
        owner = f"{type(self).__name__}.partial"
        arr = as_report_array(reports)
        if arr.ndim != 1:
            raise ValueError(f"The 'reports' parameter of {owner} must be a 1-d array of bits. "
                             f"Got shape {arr.shape} instead.")
        n = arr.shape[0]
        ids = resolve_identities(identities, n, owner)
        vals, numeric, integral, wrong_dtype = classify_integers(arr)
        legal = integral & ((vals == 0) | (vals == 1))
        out = np.where(legal, vals, 0)
        if not legal.all():
            bad = ~legal
            words = hash_blocks(self.codebook_seed, ids[bad].astype(np.uint64), 2,
                                SANITIZE_STREAM)[:, 1, 0]
            out[bad] = (words & np.uint64(1)).astype(np.int64)
        report = tally_report(n, numeric, integral, legal, wrong_dtype)
        ones = ExactSum(1)
        ones.add_integers(np.array([int(out.sum())], dtype=np.int64))
        return Partial(type(self).__name__, self.stream_params(), sums={"ones": ones},
                       counts=report_counts(report), flags={"wrong_dtype": report.wrong_dtype})

    def merge(self, a: Partial, b: Partial) -> Partial:
        """Merge two partials (exact)."""
        owner = f"{type(self).__name__}.merge"
        check_partial(a, type(self).__name__, self.stream_params(), owner)
        check_partial(b, type(self).__name__, self.stream_params(), owner)
        return a.merge(b)

    def estimate(self, reports: ArrayLike, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> MeanEstimate:
        """The mean ``m (ones / n - c0) / c1``; ``finalize(partial(...))``."""
        return self.finalize(self.partial(reports, epsilons, identities))

    def finalize(self, partial: Partial) -> MeanEstimate:
        """The mean of a (merged) partial and its conservative variance.

        The bits of different identities are independent Bernoulli with
        probabilities ``pi_i``, ``sum pi_i (1 - pi_i) <= n pbar (1 - pbar)``,
        so ``m^2 pbar (1 - pbar) / (n c1^2)`` with ``pbar`` the fraction of
        ones bounds the variance of the mean from above (to the plug-in).
        """
        check_partial(partial, type(self).__name__, self.stream_params(),
                      f"{type(self).__name__}.finalize")
        n = partial.counts["n"]
        ones = float(partial.sums["ones"].value()[0])
        if n == 0:
            mean, var = math.nan, math.nan
        else:
            pbar = ones / n
            mean = self.max_value * (pbar - self.c0) / self.c1
            var = self.max_value ** 2 * pbar * (1 - pbar) / (n * self.c1 ** 2)
        return MeanEstimate(np.array([mean]), np.array([var]), partial_report(partial), n,
                            self.privacy())
