"""Multi-attribute records over time: SPL and SMP over the memoized oracles (LSPL, LSMP).

A user holds a record ``x = (x_1, ..., x_A)``, attribute ``j`` in
``[0, k_j)``, and reports it round after round. The two strategies of
:mod:`fastldp.multidim` (split the budget, sample one attribute) run here
over the memoized two-round oracles of :mod:`.protocols` (L-GRR, L-OUE,
L-OSUE, L-SUE, L-SOUE), as multi-freq-ldpy's ``long_mdim_freq_est`` does
(Arcolezi et al. 2022, Sec. 5):

- :class:`LSPL`: every attribute through the memoized oracle at
  ``(epsilon_inf / A, epsilon_1 / A)``;
- :class:`LSMP`: one attribute per user through the memoized oracle at
  ``(epsilon_inf, epsilon_1)``, with its index.

Why here and not in :mod:`fastldp.multidim`
-------------------------------------------
A family never imports another family, and this family owns the memo store
(:mod:`.memo`): the permanent responses, the oracles that draw them and the
privacy statement over time (:class:`~.protocols.LongitudinalPrivacy`) live
here. So the multi-attribute versions sit in the family of the memo and build
on its oracles and on :mod:`fastldp.oracles` (the servers' sanitization),
not on :mod:`fastldp.multidim`'s classes; their estimator is the same as
SPL's and SMP's with the memoized oracle's composed ``(P, Q)`` in place of
the one-shot ``(p, q)``.

Memo keys
---------
Attribute ``j``'s permanent responses are kept under the scope
``"attribute=j:" + memo_scope`` of its oracle, so two attributes with the
same domain and budget never share a response. :class:`LSMP` also memoizes
the *sampled attribute* (scope ``"lsmp:A=<A>"``): a user reports the same
attribute in every round. multi-freq-ldpy draws a new attribute every round,
which over ``A`` or more rounds reveals every attribute of the record, each
at ``epsilon_inf``: ``A epsilon_inf`` in all instead of ``epsilon_inf``.

Privacy
-------
One report is ``epsilon_1``-LDP: :class:`LSPL`'s ``A`` parts at
``epsilon_1 / A`` each (sequential composition), :class:`LSMP`'s one part at
``epsilon_1`` (the index does not depend on the record). Any number of
reports of an unchanged record are post-processing of its permanent
responses: ``epsilon_inf``-LDP together (``A`` responses at
``epsilon_inf / A``, or one at ``epsilon_inf``). A record that takes ``c``
distinct values over the collection costs at most ``c epsilon_inf``
(:meth:`~.protocols.LongitudinalPrivacy.over_time`).

Estimator
---------
With ``m_j`` reports about attribute ``j`` (``n`` for LSPL) of which ``C``
show value ``v`` (or set its bit), ``c = (C - m_j Q) / (P - Q)`` with the
attribute oracle's composed ``(P, Q)``, variance
``(m_j Q (1 - Q) + c (P (1 - P) - Q (1 - Q))) / (P - Q)^2``. LSMP scales it
by ``n / m_j`` and adds the sampling term of :class:`fastldp.multidim.SMP`,
``n^2 f (1 - f) (n - m_j) / (m_j (n - 1))``.

References
----------
H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao, "Improving the utility
of locally differentially private protocols for longitudinal and
multidimensional frequency estimates", Digital Communications and Networks,
2022 (arXiv:2111.04636).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._kernels import _multidim as kernel
from .._kernels._unary import ue_counts
from .._sanitize import SanitizationReport
from .._random import (UINT64_MAX, as_generator, resolve_codebook_seed, resolve_identities,
                       resolve_n_threads)
from .._validation import check_float, check_int, param_error, resolve_alias
from ..oracles._base import EPSILON_MAX, all_legal_report, partial_report, report_counts
from ..oracles._sanitizing import classify_integers, public_uniform, tally_report
from ..protocol import ProtocolMembers, ReportSchema
from ..results import Result
from ..streaming import ExactSum, Partial, check_partial
from ._protocol import statement_method
from .memo import MemoryMemo, MemoStore
from .protocols import (LGRR, LOSUE, LOUE, LSOUE, LSUE, LongitudinalPrivacy, MemoizedBudgets)

__all__ = ["LSPL", "LSMP", "LONGITUDINAL_ORACLES", "LongitudinalMultiEstimate"]

#: the memoized oracles an attribute can be reported through
LONGITUDINAL_ORACLES = {"LGRR": LGRR, "LOUE": LOUE, "LOSUE": LOSUE, "LSUE": LSUE,
                        "LSOUE": LSOUE}
MAX_ATTRIBUTES = 65_535
MAX_ATTRIBUTE_DOMAIN = 1 << 20
#: odd constant spacing the attributes' public seeds (golden ratio, 64 bits)
_SEED_STEP = 0x9E3779B97F4A7C15


@dataclass(frozen=True, repr=False)
class LongitudinalMultiEstimate(Result):
    """Unbiased counts of every value of every attribute from one round, with variances.

    Attributes
    ----------
    counts : numpy.ndarray of float64, shape (sum of domain_sizes,)
        Attribute 0's values, then attribute 1's, ... (:meth:`attribute`).
    variances : numpy.ndarray of float64
        Plug-in variances (``inf`` for an attribute no LSMP report was about).
    n : int
    privacy : LongitudinalPrivacy
    categories : tuple of str
        ``"j=v"`` for attribute ``j`` and value ``v``.
    domain_sizes : tuple of int
    sanitization : SanitizationReport
    """

    _estimate_field = "counts"
    counts: np.ndarray
    variances: np.ndarray
    n: int
    privacy: LongitudinalPrivacy
    categories: tuple
    domain_sizes: tuple
    sanitization: SanitizationReport

    def attribute(self, j: int) -> np.ndarray:
        """The counts of attribute ``j``'s values (a view of :attr:`counts`)."""
        j = check_int(j, "j", "LongitudinalMultiEstimate.attribute", low=0,
                      high=len(self.domain_sizes) - 1)
        start = int(sum(self.domain_sizes[:j]))
        return self.counts[start:start + self.domain_sizes[j]]


def _labels(sizes) -> tuple:
    return tuple(f"{j}={v}" for j, k in enumerate(sizes) for v in range(k))


class _MemoizedAttributes(MemoizedBudgets, ProtocolMembers):
    """What LSPL and LSMP share: parameters, the per-attribute oracles, decoding."""

    kind = "counts"

    def __init__(self, *, domain_sizes: Any, epsilon_inf: float,
                 epsilon_1: Optional[float] = None, oracle: str = "LGRR",
                 codebook_seed: Optional[int] = None, epsilon: Optional[float] = None) -> None:
        owner = type(self).__name__
        try:
            sizes = list(domain_sizes)
        except TypeError:
            raise param_error("domain_sizes", owner, "a list of ints >= 2, one per attribute",
                              domain_sizes, TypeError) from None
        if not 1 <= len(sizes) <= MAX_ATTRIBUTES:
            raise param_error("domain_sizes", owner,
                              f"a list of 1 to {MAX_ATTRIBUTES} domain sizes", domain_sizes)
        self.domain_sizes = tuple(check_int(k, f"domain_sizes[{j}]", owner, low=2,
                                            high=MAX_ATTRIBUTE_DOMAIN)
                                  for j, k in enumerate(sizes))
        self.n_attributes = len(self.domain_sizes)
        self.epsilon_inf = check_float(epsilon_inf, "epsilon_inf", owner, low=0.0,
                                       high=EPSILON_MAX, high_open=False)
        e1 = resolve_alias(owner, "epsilon_1", epsilon_1, "epsilon", epsilon)
        shown = "epsilon_1" if epsilon_1 is not None else "epsilon"
        self.epsilon_1 = check_float(e1, shown, owner, low=0.0, high=self.epsilon_inf)
        if oracle not in LONGITUDINAL_ORACLES:
            raise param_error("oracle", owner, f"one of {list(LONGITUDINAL_ORACLES)}", oracle)
        self.oracle = oracle
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        share = self._attribute_share()
        cls = LONGITUDINAL_ORACLES[oracle]
        try:
            self.oracles = [cls(domain_size=k, epsilon_inf=self.epsilon_inf / share,
                                epsilon_1=self.epsilon_1 / share,
                                codebook_seed=self.attribute_seed(j), n_threads=1)
                            for j, k in enumerate(self.domain_sizes)]
        except ValueError as err:
            raise param_error(shown, owner, f"a budget whose share per attribute "
                              f"(epsilon_1 / {share}) {oracle} accepts at epsilon_inf / {share} "
                              f"= {self.epsilon_inf / share!r} ({err})", e1) from None
        self.unary = oracle != "LGRR"
        self.n_bytes = [(k + 7) // 8 for k in self.domain_sizes]
        self.offsets = np.concatenate([[0], np.cumsum(self.domain_sizes)]).astype(np.int64)
        self._memo: Optional[MemoryMemo] = None

    def _attribute_share(self) -> int:  # pragma: no cover - abstract
        raise NotImplementedError

    def attribute_seed(self, j: int) -> int:
        """The public seed of attribute ``j``'s oracle (its sanitization coins)."""
        return (self.codebook_seed + j * _SEED_STEP) & UINT64_MAX

    def attribute_scope(self, j: int) -> str:
        """The memo scope of attribute ``j``'s permanent responses (module docstring)."""
        return f"attribute={j}:{self.oracles[j].memo_scope}"

    # ------------------------------------------------------------ protocol
    def __repr__(self) -> str:
        return (f"{type(self).__name__}(domain_sizes={list(self.domain_sizes)}, "
                f"epsilon_inf={self.epsilon_inf!r}, epsilon_1={self.epsilon_1!r}, "
                f"oracle={self.oracle!r}, codebook_seed={self.codebook_seed})")

    def stream_params(self) -> dict:
        """The public parameters a partial and a report file are bound to (JSON values)."""
        return {"domain_sizes": list(self.domain_sizes), "epsilon_inf": self.epsilon_inf,
                "epsilon_1": self.epsilon_1, "oracle": self.oracle,
                "codebook_seed": self.codebook_seed}

    @property
    def labels(self) -> tuple:
        """``"j=v"`` for every attribute ``j`` and value ``v``."""
        return _labels(self.domain_sizes)

    @property
    def report_schema(self) -> ReportSchema:
        """The dtype and shape of one report, at the fixed budget ``epsilon_1``."""
        dtype, shape = self._layout()
        return ReportSchema(dtype, shape, self.epsilon_1)

    @statement_method
    def privacy(self, epsilons: Any = None) -> LongitudinalPrivacy:
        """Per report ``epsilon_1``; ``epsilon_inf`` over any number of reports of one record."""
        self._check_epsilons(epsilons, f"{type(self).__name__}.privacy")
        return LongitudinalPrivacy.memoized(epsilon_1=self.epsilon_1,
                                            epsilon_inf=self.epsilon_inf)

    def example_data(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` records (int64, ``(n, A)``): attribute ``j`` Zipf(1.1) over ``[0, k_j)``."""
        n = check_int(n, "n", f"{type(self).__name__}.example_data", low=0)
        out = np.empty((n, self.n_attributes), dtype=np.int64)
        for j, k in enumerate(self.domain_sizes):
            w = 1.0 / np.arange(1, k + 1) ** 1.1
            out[:, j] = rng.choice(k, size=n, p=w / w.sum())
        return out

    def _layout(self) -> tuple:  # pragma: no cover - abstract
        raise NotImplementedError

    def _check_records(self, records: Any, owner: str) -> np.ndarray:
        A = self.n_attributes
        expected = (f"an integer array of shape (n, {A}) whose column j is in "
                    "[0, domain_sizes[j])")
        arr = np.asarray(records)
        if arr.ndim == 2 and arr.shape[0] == 0:
            arr = arr.astype(np.int64)
        if arr.dtype.kind not in "iu":
            raise param_error("records", owner, expected, f"an array of dtype {arr.dtype}",
                              TypeError)
        if arr.ndim != 2 or arr.shape[1] != A:
            raise param_error("records", owner, expected, f"an array of shape {arr.shape}")
        first, probe = 0, arr
        if arr.dtype == np.int64 and arr.flags.c_contiguous:
            # one compiled pass, no (n, A) masks; the mask below only looks at the bad row
            first = kernel.check_records(arr, self._sizes, resolve_n_threads(self.n_threads, owner))
            if first < 0:
                return arr
            probe = arr[first:first + 1]
        bad = (probe < 0) | (probe >= np.asarray(self.domain_sizes))
        if bad.any():
            i, j = (int(v) for v in np.argwhere(bad)[0])
            raise param_error("records", owner, expected,
                              f"{int(probe[i, j])} at row {first + i}, attribute {j}")
        return np.ascontiguousarray(arr, dtype=np.int64)

    #: threads of the compiled clients and servers (``None``: OpenMP's default, ``-1``: all
    #: cores); the reports and estimates never depend on it
    n_threads: Optional[int] = None

    @property
    def _sizes(self) -> np.ndarray:
        return np.asarray(self.domain_sizes, dtype=np.int64)

    def _lgrr_keep(self) -> tuple:
        """L-GRR's probabilities of keeping the value per attribute: ``(permanent round,
        instantaneous round)``, from each attribute's one-shot GRR as its rounds use it."""
        perm, inst = [], []
        for oracle in self.oracles:
            server = oracle._server
            perm.append(float(server._pq(np.array([oracle.epsilon_inf]))[0][0]))
            eps2 = math.log(oracle.p2 / oracle.q2)
            inst.append(float(server._pq(np.array([eps2]))[0][0]))
        return np.array(perm), np.array(inst)

    def _unary_kernel_params(self) -> Optional[tuple]:
        """``(p1 per attribute, Q1, Qkeep, Qraise)`` of the unary L-protocols when every
        attribute shares one ``q1``, ``p2`` and ``q2`` (the compiled client), else ``None``.

        The permanent round is each attribute's one-shot oracle at ``epsilon_inf`` (held bit 1
        w.p. ``p1``, others ``q1``); the second keeps a set bit w.p. ``p2`` and sets a clear
        one w.p. ``q2``; thresholds ``floor(prob 2^64)`` as the unary kernel's (the largest
        word for a probability of 1).
        """
        if not self.unary:
            return None
        p1, q1 = [], set()
        for oracle in self.oracles:
            p, q = oracle._server._pq(np.array([oracle.epsilon_inf]))
            p1.append(float(np.asarray(p).ravel()[0]))
            q1.add(float(np.asarray(q).ravel()[0]))
        second = {(float(o.p2), float(o.q2)) for o in self.oracles}
        if len(q1) != 1 or len(second) != 1:
            return None
        (p2, q2), = second

        def threshold(prob):
            return int(np.uint64(np.ldexp(prob, 64))) if prob < 1.0 else int(UINT64_MAX)
        return np.array(p1), threshold(q1.pop()), threshold(p2), threshold(q2)

    @staticmethod
    def _kernel_key(gen: np.random.Generator) -> tuple:
        key = gen.integers(0, 2**64, size=2, dtype=np.uint64)
        return int(key[0]), int(key[1])

    @staticmethod
    def _store(memo, default, owner: str):
        store = default if memo is None else memo
        if not isinstance(store, (MemoryMemo, MemoStore)):
            raise param_error("memo", owner, "None, a MemoryMemo or a MemoStore", store,
                              TypeError)
        return store

    def _attribute_reports(self, j: int, x: np.ndarray, ids: np.ndarray, store,
                           gen: np.random.Generator) -> np.ndarray:
        """Attribute ``j``'s reports of values ``x``: memoized permanent, fresh instantaneous."""
        oracle = self.oracles[j]
        dtype, width = oracle._response_layout()
        perm = store.responses(self.attribute_scope(j), ids, x, self.domain_sizes[j],
                               lambda index: oracle._permanent(x[index], gen), dtype, width)
        return oracle._instantaneous(perm, gen)

    # ------------------------------------------------------------ server
    def _part_legal(self, j: int, part: np.ndarray) -> np.ndarray:
        """Rows of attribute ``j``'s part (int64 values) that are legal outputs of its oracle."""
        if not self.unary:
            return np.asarray((part[:, 0] >= 0) & (part[:, 0] < self.domain_sizes[j]))
        legal = np.asarray(((part >= 0) & (part <= 255)).all(axis=1))
        pad = self.oracles[j]._server._padding_mask()
        if pad:
            legal &= (part[:, -1] & pad) == 0
        return legal

    def _public_part(self, j: int, ids: np.ndarray) -> np.ndarray:
        """Attribute ``j``'s server's public uniform legal output for each identity."""
        server = self.oracles[j]._server
        if self.unary:
            return server.public_rows(ids)
        return public_uniform(server.codebook_seed, ids,
                              np.full(ids.shape[0], self.domain_sizes[j]))[:, None]

    #: whether a batch in the schema's dtype is decoded as it is (LSPL's packed bytes) rather
    #: than as int64 (LSMP reads a two-byte index, which uint8 arithmetic would overflow)
    _keeps_dtype = False

    def _rows(self, reports: Any, owner: str) -> tuple:
        """The reports as rows, the per-report numeric / integral masks and the dtype flag."""
        dtype, shape = self._layout()
        arr = np.asarray(reports)
        if arr.ndim == 1 and arr.shape[0] == 0:
            arr = np.zeros((0, shape[0]), dtype=dtype)
        if arr.ndim != 2 or arr.shape[1] != shape[0]:
            raise param_error("reports", owner,
                              f"an array of {np.dtype(dtype)} reports of shape (n, {shape[0]})",
                              f"an array of shape {arr.shape}")
        if arr.dtype == dtype:
            ok = np.ones(arr.shape[0], dtype=bool)
            return (arr if self._keeps_dtype else arr.astype(np.int64)), ok, ok, False
        values, numeric, integral, wrong_dtype = classify_integers(arr)
        return values, numeric.all(axis=1), integral.all(axis=1), wrong_dtype

    def partial(self, reports: Any, epsilons: Any = None, identities: Any = None) -> Partial:
        """The exact state of :meth:`estimate` over a chunk: integer hits per (attribute, value).

        Malformed parts are replaced by their attribute's public uniform
        legal output keyed by ``(attribute seed, identity)`` (as the one-shot
        servers do) and counted by reason in the partial; pass each chunk's
        ``identities`` (default ``0 .. n-1``).
        """
        owner = f"{type(self).__name__}.partial"
        self._check_epsilons(epsilons, owner)
        values, numeric, integral, wrong_dtype = self._rows(reports, owner)
        n = values.shape[0]
        # the identities key only the replacements of malformed parts: checked when given, made
        # (0 .. n-1, eight bytes a report) only when a batch has something to replace
        ids = None if identities is None else resolve_identities(identities, n, owner)
        hits, about, legal = self._hits(values, ids)
        sums = ExactSum(int(self.offsets[-1]))
        if n:
            sums.add_integers(np.ascontiguousarray(hits, dtype=np.int64))
            if legal is None and numeric is integral:  # reports of the schema dtype, all legal
                report = all_legal_report(n)
            else:
                legal = np.ones(n, dtype=bool) if legal is None else legal
                report = tally_report(n, numeric, integral & numeric,
                                      legal & integral & numeric, wrong_dtype)
        else:
            report = all_legal_report(0)
        counts = report_counts(report)
        counts.update({f"m{j}": int(m) for j, m in enumerate(about)})
        return Partial(type(self).__name__, self.stream_params(), sums={"hits": sums},
                       counts=counts, flags={"wrong_dtype": report.wrong_dtype})

    def _clean_part(self, j: int, part: np.ndarray, ids: np.ndarray) -> tuple:
        """Attribute ``j``'s part with its illegal rows replaced, and the legal mask."""
        legal = self._part_legal(j, part)
        if not legal.all():
            part = part.copy()
            part[~legal] = self._public_part(j, ids[~legal])
        return part, legal

    def _part_hits(self, j: int, part: np.ndarray) -> np.ndarray:
        k = self.domain_sizes[j]
        if self.unary:
            bits = np.unpackbits(part.astype(np.uint8), axis=1, bitorder="little")
            return bits[:, :k].sum(axis=0, dtype=np.int64)
        return np.bincount(part[:, 0], minlength=k).astype(np.int64)

    def _hits(self, values: np.ndarray, ids: np.ndarray) -> tuple:  # pragma: no cover
        raise NotImplementedError

    def merge(self, a: Partial, b: Partial) -> Partial:
        """The partial of both chunks (exact integer sums; neither input changes)."""
        owner = f"{type(self).__name__}.merge"
        check_partial(a, type(self).__name__, self.stream_params(), owner)
        check_partial(b, type(self).__name__, self.stream_params(), owner)
        return a.merge(b)

    def finalize(self, partial: Partial) -> LongitudinalMultiEstimate:
        """The :class:`LongitudinalMultiEstimate` of a (merged) partial (module docstring)."""
        owner = f"{type(self).__name__}.finalize"
        check_partial(partial, type(self).__name__, self.stream_params(), owner)
        n = partial.counts["n"]
        hits = np.rint(partial.sums["hits"].value())
        counts = np.zeros(int(self.offsets[-1]))
        variances = np.zeros(int(self.offsets[-1]))
        for j, oracle in enumerate(self.oracles):
            sl = slice(int(self.offsets[j]), int(self.offsets[j + 1]))
            m = partial.counts[f"m{j}"]
            if m == 0:
                variances[sl] = np.inf
                continue
            c = (hits[sl] - m * oracle.Q) / (oracle.P - oracle.Q)
            v = oracle.count_variances(m, np.clip(c, 0.0, m))
            counts[sl], variances[sl] = self._scaled(c, v, m, n)
        return LongitudinalMultiEstimate(counts, variances, n, self.privacy(),
                                         _labels(self.domain_sizes), self.domain_sizes,
                                         partial_report(partial))

    def _scaled(self, c, v, m: int, n: int) -> tuple:
        return c, v

    def estimate(self, reports: Any, *, epsilons: Any = None,
                 identities: Any = None) -> LongitudinalMultiEstimate:
        """Unbiased counts of every attribute's values: ``finalize(partial(...))`` exactly."""
        return self.finalize(self.partial(reports, epsilons, identities))


class LSPL(_MemoizedAttributes):
    """Split the budget over time: every attribute through a memoized oracle at ``eps / A``.

    Attribute ``j`` goes through ``oracle`` at ``(epsilon_inf / A, epsilon_1 / A)``
    with its own permanent responses (module docstring). It lives in
    :mod:`fastldp.longitudinal`, not in :mod:`fastldp.multidim`, because this
    family owns the memo store and a family never imports another.

    Parameters
    ----------
    domain_sizes : list of int >= 2
        ``k_j``, the number of values of attribute ``j``.
    epsilon_inf : float in (0, 700]
        The bound over any number of reports of an unchanged record.
    epsilon_1 : float in (0, epsilon_inf)
        The budget of one report (``epsilon`` is another name for it). With
        L-OUE and L-SOUE, ``epsilon_1 / A`` must stay below their limit at
        ``epsilon_inf / A`` (:func:`~fastldp.longitudinal.epsilon_1_limit`).
    oracle : {"LGRR", "LOUE", "LOSUE", "LSUE", "LSOUE"}
        The memoized oracle of :mod:`fastldp.longitudinal` of every attribute.
    codebook_seed : int or None
        Keys the public sanitization coins (attribute ``j``'s oracle has seed
        :meth:`attribute_seed`).

    Notes
    -----
    Reports: int64 ``(n, A)`` symbols (LGRR) or uint8 ``(n, sum ceil(k_j / 8))``
    packed bits (the unary oracles), attribute ``j``'s bits from byte
    ``sum_{i<j} ceil(k_i / 8)``, as :class:`fastldp.multidim.SPL`'s.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.longitudinal import LSPL, MemoryMemo
    >>> lspl = LSPL(domain_sizes=[3, 4], epsilon_inf=4.0, epsilon_1=2.0, codebook_seed=0)
    >>> records = lspl.example_data(2_000, np.random.default_rng(0))
    >>> memo = MemoryMemo()
    >>> day1 = lspl.privatize(records, memo=memo, rng=1)
    >>> day2 = lspl.privatize(records, memo=memo, rng=2)  # the same permanent responses
    >>> len(memo)
    4000
    >>> lspl.estimate(day2).counts.shape
    (7,)
    """

    def _attribute_share(self) -> int:
        return self.n_attributes

    def _layout(self) -> tuple:
        if self.unary:
            return np.uint8, (int(sum(self.n_bytes)),)
        return np.int64, (self.n_attributes,)

    def _parts(self):
        start = 0
        for j in range(self.n_attributes):
            width = self.n_bytes[j] if self.unary else 1
            yield j, slice(start, start + width)
            start += width

    def privatize(self, data: Any, *, memo: Any = None, epsilons: Any = None,
                  identities: Any = None, rng: Any = None) -> np.ndarray:
        """One report per identity: every attribute's memoized response, randomized afresh.

        Parameters
        ----------
        data : int array, shape (n, A)
            Each identity's current record.
        memo : MemoryMemo or MemoStore, optional
            Where the permanent responses live; default this object's :attr:`memo`.
        epsilons : None or float
            ``None`` or ``epsilon_1``.
        identities : array_like of int, optional
            Distinct identities (the memo's users); default ``0 .. n-1``.
        rng : None, int, SeedSequence or Generator
            Private randomness of both rounds.
        """
        owner = f"{type(self).__name__}.privatize"
        self._check_epsilons(epsilons, owner)
        x = self._check_records(data, owner)
        ids = resolve_identities(identities, x.shape[0], owner)
        gen = as_generator(rng, owner)
        store = self._store(memo, self.memo, owner)
        if self.oracle == "LGRR":
            return self._privatize_lgrr(x, ids, store, gen, owner)
        unary = self._unary_kernel_params()
        if unary is not None:
            return self._privatize_unary(x, ids, store, gen, owner, *unary)
        dtype, shape = self._layout()
        out = np.zeros((x.shape[0], *shape), dtype=dtype)
        for j, cols in self._parts():
            y = self._attribute_reports(j, x[:, j], ids, store, gen)
            out[:, cols] = y.reshape(x.shape[0], -1)
        return out

    def _privatize_lgrr(self, x: np.ndarray, ids: np.ndarray, store, gen, owner: str):
        """L-GRR through the compiled SPL client (``fastldp._kernels._multidim``), both rounds.

        The permanent responses the memo lacks come from one client pass over every record at
        the permanent round's budgets (drawn once, on the first attribute with a missing key;
        the responses of keys the memo holds are discarded unseen); the instantaneous round is
        a second pass over the permanent responses.
        """
        n, A = x.shape
        nt = resolve_n_threads(self.n_threads, owner)
        keep_perm, keep_inst = self._lgrr_keep()
        fresh: list = []

        def draw_for(j):
            def draw(index):
                if not fresh:
                    k0, k1 = self._kernel_key(gen)
                    fresh.append(kernel.grr_reports(k0, k1, kernel.SPL, x, self._sizes,
                                                    keep_perm, nt)[0])
                if index.shape[0] == n:  # every key is new (a fresh memo): the column as is
                    return fresh[0][:, j]
                return fresh[0][index, j]
            return draw

        perm = np.empty((n, A), dtype=np.int64)
        for j in range(A):
            perm[:, j] = store.responses(self.attribute_scope(j), ids, x[:, j],
                                         self.domain_sizes[j], draw_for(j), np.int64, 1)[:, 0]
        k0, k1 = self._kernel_key(gen)
        out, first = kernel.grr_reports(k0, k1, kernel.SPL, perm, self._sizes, keep_inst, nt)
        if first >= 0:  # pragma: no cover - a memo holding a response out of its domain
            raise ValueError(f"{owner}: the memo's permanent response of identity "
                             f"{int(ids[first])} is out of its attribute's domain")
        return out

    def _privatize_unary(self, x, ids, store, gen, owner: str, p1, Q1, Qkeep, Qraise):
        """The unary L-protocols through the compiled clients (``fastldp._kernels._multidim``).

        The permanent bits the memo lacks come from one pass of the unary SPL client over every
        record (drawn on the first attribute with a missing key); the instantaneous round is
        one pass over the permanent rows.
        """
        n = x.shape[0]
        nt = resolve_n_threads(self.n_threads, owner)
        byte0 = np.concatenate([[0], np.cumsum(self.n_bytes)[:-1]]).astype(np.int64)
        fresh: list = []

        def draw_for(cols):
            def draw(index):
                if not fresh:
                    k0, k1 = self._kernel_key(gen)
                    fresh.append(kernel.ue_reports(k0, k1, kernel.UE_SPL, x, self._sizes, p1,
                                                   byte0, Q1, nt)[0])
                if index.shape[0] == n:  # every key is new (a fresh memo): the columns as they are
                    return fresh[0][:, cols]
                return fresh[0][index, cols]
            return draw

        perm = np.empty((n, int(sum(self.n_bytes))), dtype=np.uint8)
        for j, cols in self._parts():
            perm[:, cols] = store.responses(self.attribute_scope(j), ids, x[:, j],
                                            self.domain_sizes[j], draw_for(cols), np.uint8,
                                            self.n_bytes[j])
        k0, k1 = self._kernel_key(gen)
        return kernel.ue_rerandomize(k0, k1, perm, self._sizes, byte0, Qkeep, Qraise, nt)

    _keeps_dtype = True

    def _hits(self, values, ids):
        """``(hits, reports per attribute, legal mask or None when every report is legal)``."""
        n = values.shape[0]
        if not self.unary and n and values.dtype == np.int64:
            # one compiled pass that checks every symbol and counts it
            hits, first = kernel.count_symbols(np.ascontiguousarray(values), self._sizes,
                                               resolve_n_threads(self.n_threads, "LSPL.partial"))
            if first < 0:
                return hits, [n] * self.n_attributes, None
        legal = np.ones(n, dtype=bool)
        ids = np.arange(n, dtype=np.uint64) if ids is None else ids
        if self.unary and n and values.dtype == np.uint8:
            # the column counts of the whole rows in one compiled pass (unary kernel); a
            # padding bit set anywhere shows in its column and sends the batch on below
            sums = ue_counts(np.ascontiguousarray(values), 8 * values.shape[1],
                             resolve_n_threads(self.n_threads, "LSPL.partial"))
            starts = 8 * np.concatenate([[0], np.cumsum(self.n_bytes)[:-1]])
            if not any(sums[b + k:b + 8 * nb].any()
                       for b, k, nb in zip(starts, self.domain_sizes, self.n_bytes)):
                return (np.concatenate([sums[b:b + k] for b, k in zip(starts, self.domain_sizes)]),
                        [n] * self.n_attributes, legal)
        # whole-matrix fast paths for a batch with nothing to replace: one comparison, then
        # one bincount of the symbols shifted to their offsets or one unpacking of the rows
        if not self.unary:
            if ((values >= 0) & (values < np.asarray(self.domain_sizes))).all():
                flat = (values + self.offsets[:-1]).ravel()
                return (np.bincount(flat, minlength=int(self.offsets[-1])),
                        [n] * self.n_attributes, legal)
        elif values.dtype == np.uint8:
            last = np.cumsum(self.n_bytes) - 1
            pads = np.array([o._server._padding_mask() for o in self.oracles], dtype=np.uint8)
            if not (values[:, last] & pads).any():
                sums = np.unpackbits(values, axis=1, bitorder="little").sum(axis=0,
                                                                             dtype=np.int64)
                starts = 8 * np.concatenate([[0], np.cumsum(self.n_bytes)[:-1]])
                return (np.concatenate([sums[b:b + k]
                                        for b, k in zip(starts, self.domain_sizes)]),
                        [n] * self.n_attributes, legal)
        parts = []
        for j, cols in self._parts():
            part, ok = self._clean_part(j, values[:, cols], ids)
            legal &= ok
            parts.append(self._part_hits(j, part))
        return np.concatenate(parts), [n] * self.n_attributes, legal


class LSMP(_MemoizedAttributes):
    """Sample one attribute for good: each user reports one memoized attribute, with its index.

    Every identity draws its attribute once (kept in the memo, scope
    ``"lsmp:A=<A>"``) and reports it in every round through ``oracle`` at
    ``(epsilon_inf, epsilon_1)``. It lives in :mod:`fastldp.longitudinal`,
    not in :mod:`fastldp.multidim`, because this family owns the memo store
    and a family never imports another.

    Parameters
    ----------
    domain_sizes : list of int >= 2
    epsilon_inf : float in (0, 700]
    epsilon_1 : float in (0, epsilon_inf)
        The budget of one report (``epsilon`` is another name for it).
    oracle : {"LGRR", "LOUE", "LOSUE", "LSUE", "LSOUE"}
    codebook_seed : int or None

    Notes
    -----
    Reports: int64 ``(n, 2)`` rows ``(j, symbol)`` (LGRR), or uint8
    ``(n, 2 + max_j ceil(k_j / 8))`` rows: ``j`` in two little-endian bytes,
    then attribute ``j``'s packed bits (zeros after), as
    :class:`fastldp.multidim.SMP`'s. Unlike multi-freq-ldpy's
    ``SMP_L_*_Client``, which draws the attribute anew each round (module
    docstring, "Memo keys"), the attribute is memoized.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.longitudinal import LSMP
    >>> lsmp = LSMP(domain_sizes=[3, 4], epsilon_inf=4.0, epsilon_1=2.0, oracle="LOSUE",
    ...             codebook_seed=0)
    >>> reports = lsmp.privatize(lsmp.example_data(500, np.random.default_rng(0)), rng=1)
    >>> reports.shape, reports.dtype
    ((500, 3), dtype('uint8'))
    """

    def _attribute_share(self) -> int:
        return 1

    @property
    def sample_scope(self) -> str:
        """The memo scope of the identities' sampled attributes."""
        return f"lsmp:A={self.n_attributes}"

    def _layout(self) -> tuple:
        if self.unary:
            return np.uint8, (2 + max(self.n_bytes),)
        return np.int64, (2,)

    def sampled_attributes(self, identities: Any, *, memo: Any = None,
                           rng: Any = None) -> np.ndarray:
        """Each identity's attribute (int64), drawn uniformly the first time and memoized."""
        owner = f"{type(self).__name__}.sampled_attributes"
        ids = np.asarray(identities, dtype=np.uint64)
        gen = as_generator(rng, owner)
        store = self._store(memo, self.memo, owner)
        A = self.n_attributes
        return store.responses(self.sample_scope, ids, np.zeros(ids.shape[0], dtype=np.int64),
                               1, lambda index: gen.integers(0, A, size=index.shape[0]),
                               np.int64, 1)[:, 0]

    def privatize(self, data: Any, *, memo: Any = None, epsilons: Any = None,
                  identities: Any = None, rng: Any = None) -> np.ndarray:
        """One report per identity: its memoized attribute's memoized response, randomized afresh.

        Parameters as :meth:`LSPL.privatize`.
        """
        owner = f"{type(self).__name__}.privatize"
        self._check_epsilons(epsilons, owner)
        x = self._check_records(data, owner)
        n = x.shape[0]
        ids = resolve_identities(identities, n, owner)
        gen = as_generator(rng, owner)
        store = self._store(memo, self.memo, owner)
        dtype, shape = self._layout()
        sampled = self.sampled_attributes(ids, memo=store, rng=gen)
        if self.oracle == "LGRR":
            return self._privatize_lgrr(x, ids, sampled, store, gen, owner)
        unary = self._unary_kernel_params()
        if unary is not None:
            return self._privatize_unary(x, ids, sampled, store, gen, owner, *unary)
        out = np.zeros((n, *shape), dtype=dtype)
        for j in range(self.n_attributes):
            rows = np.flatnonzero(sampled == j)
            if rows.size == 0:
                continue
            y = self._attribute_reports(j, x[rows, j], ids[rows], store, gen)
            if self.unary:
                out[rows, 0] = j & 0xFF
                out[rows, 1] = j >> 8
                out[rows, 2:2 + self.n_bytes[j]] = y
            else:
                out[rows, 0] = j
                out[rows, 1] = y
        return out

    def _privatize_lgrr(self, x, ids, sampled, store, gen, owner: str) -> np.ndarray:
        """L-GRR's two rounds through the compiled GRR client (``fastldp._kernels._multidim``).

        The permanent responses the memo lacks come from one pass over every row at its
        sampled attribute's permanent budget (drawn on the first attribute with a missing key;
        the rows whose keys the memo holds are discarded unseen); the instantaneous round of
        every row is a second pass.
        """
        n = x.shape[0]
        nt = resolve_n_threads(self.n_threads, owner)
        keep_perm, keep_inst = self._lgrr_keep()
        sampled = np.ascontiguousarray(sampled, dtype=np.int64)
        fresh: list = []

        def draw_for(rows):
            def draw(index):
                if not fresh:
                    k0, k1 = self._kernel_key(gen)
                    fresh.append(kernel.grr_given(k0, k1, sampled, x, self._sizes, keep_perm,
                                                  nt)[0][:, 1])
                return fresh[0][rows[index]]
            return draw

        perm = np.empty(n, dtype=np.int64)
        for j, rows in self._grouped_rows(sampled):
            perm[rows] = store.responses(self.attribute_scope(j), ids[rows], x[rows, j],
                                         self.domain_sizes[j], draw_for(rows), np.int64, 1)[:, 0]
        k0, k1 = self._kernel_key(gen)
        out, first = kernel.grr_given(k0, k1, sampled, perm.reshape(n, 1), self._sizes, keep_inst,
                                      nt)
        if first >= 0:  # pragma: no cover - a memo holding a response out of its domain
            raise ValueError(f"{owner}: the memo's permanent response of identity "
                             f"{int(ids[first])} is out of its attribute's domain")
        return out

    def _grouped_rows(self, sampled: np.ndarray):
        """``(j, rows)`` for every attribute with rows: each attribute's rows in row order, from
        one stable sort of the sampled attributes (a radix sort on uint16: A <= 65,535) instead
        of a comparison per attribute."""
        order = np.argsort(sampled.astype(np.uint16), kind="stable")
        ends = np.cumsum(np.bincount(sampled, minlength=self.n_attributes))
        for j in range(self.n_attributes):
            rows = order[(ends[j - 1] if j else 0):ends[j]]
            if rows.size:
                yield j, rows

    def _privatize_unary(self, x, ids, sampled, store, gen, owner: str, p1, Q1, Qkeep, Qraise):
        """The unary L-protocols through the compiled SMP clients (``fastldp._kernels.
        _multidim``): the missing permanent parts from one pass over every row (its sampled
        attribute's unary row at the permanent budget, drawn on the first attribute with a
        missing key), then the instantaneous round of every row in one pass."""
        n = x.shape[0]
        nt = resolve_n_threads(self.n_threads, owner)
        sampled = np.ascontiguousarray(sampled, dtype=np.int64)
        fresh: list = []

        def draw_for(rows, nb):
            def draw(index):
                if not fresh:
                    k0, k1 = self._kernel_key(gen)
                    fresh.append(kernel.smp_ue_reports(k0, k1, x, self._sizes, p1, Q1, nt,
                                                       given=sampled)[0])
                return fresh[0][rows[index], 2:2 + nb]
            return draw

        _, shape = self._layout()
        perm = np.zeros((n, shape[0]), dtype=np.uint8)
        perm[:, 0] = sampled & 0xFF
        perm[:, 1] = sampled >> 8
        for j, rows in self._grouped_rows(sampled):
            nb = self.n_bytes[j]
            perm[rows, 2:2 + nb] = store.responses(self.attribute_scope(j), ids[rows], x[rows, j],
                                                   self.domain_sizes[j], draw_for(rows, nb),
                                                   np.uint8, nb)
        k0, k1 = self._kernel_key(gen)
        return kernel.smp_ue_rerandomize(k0, k1, perm, self._sizes, Qkeep, Qraise, nt)[0]

    # a batch in the schema's dtype stays as it is for the compiled server (uint8 rows); the
    # general path below reads the two-byte index in int64
    _keeps_dtype = True

    def _hits(self, values, ids):
        """``(hits, reports per attribute, legal mask or None when every report is legal)``."""
        A, n = self.n_attributes, values.shape[0]
        if self.unary and n and values.dtype == np.uint8:
            hits, about, first = kernel.count_smp_bits(
                np.ascontiguousarray(values), self._sizes,
                resolve_n_threads(self.n_threads, "LSMP.partial"))
            if first < 0:
                return hits, [int(m) for m in about], None
        if values.dtype != np.int64:
            values = values.astype(np.int64)  # uint8 arithmetic would overflow the index
        if not self.unary and n and values.dtype == np.int64:
            # one compiled pass that checks every (index, symbol) row and counts it
            hits, about, first = kernel.count_smp_symbols(
                np.ascontiguousarray(values), self._sizes,
                resolve_n_threads(self.n_threads, "LSMP.partial"))
            if first < 0:
                return hits, [int(m) for m in about], None
        ids = np.arange(n, dtype=np.uint64) if ids is None else ids
        if self.unary:
            low, high = values[:, 0], values[:, 1]
            ok = (low >= 0) & (low <= 255) & (high >= 0) & (high <= 255)
            index = np.where(ok, low | (high << 8), -1)
        else:
            index = values[:, 0]
        index_ok = (index >= 0) & (index < A)
        # a report naming no attribute is replaced by a public uniform attribute's public part
        index = np.where(index_ok, index, 0)
        if not index_ok.all():
            bad = ~index_ok
            index[bad] = public_uniform(self.codebook_seed, ids[bad],
                                        np.full(int(bad.sum()), A), word=3)
        legal = index_ok.copy()
        parts, about = [], []
        for j in range(A):
            rows = np.flatnonzero(index == j)
            about.append(rows.size)
            if self.unary:
                nb = self.n_bytes[j]
                part = values[rows, 2:2 + nb]
                tail_ok = (values[rows, 2 + nb:] == 0).all(axis=1)
            else:
                part = values[rows, 1:2]
                tail_ok = np.ones(rows.size, dtype=bool)
            ok = self._part_legal(j, part) & tail_ok & index_ok[rows]
            if not ok.all():
                part = part.copy()
                part[~ok] = self._public_part(j, ids[rows[~ok]])
            legal[rows] &= ok
            parts.append(self._part_hits(j, part))
        return np.concatenate(parts), about, legal

    def _scaled(self, c, v, m: int, n: int) -> tuple:
        scale = n / m
        f = np.clip(c / m, 0.0, 1.0)
        sampling = n * n * f * (1 - f) * (n - m) / (m * (n - 1)) if n > 1 else np.zeros_like(c)
        return c * scale, v * scale**2 + sampling
