"""Frequency of each attribute of multi-attribute records: SPL, SMP and RSpFD.

Every user holds a record ``x = (x_1, ..., x_A)`` with ``x_j`` in
``[0, k_j)``. The server estimates, for every attribute ``j`` and value
``v``, the number of users with ``x_j = v``.

- :class:`SPL` splits the budget: every attribute is reported through the
  oracle at ``epsilon / A``.
- :class:`SMP` samples: every user reports one attribute, drawn uniformly,
  at the whole ``epsilon``, together with its index.
- :class:`RSpFD` (random sampling plus fake data, Arcolezi et al. 2021)
  reports the sampled attribute through the oracle and a fake value for
  every other one, so the report does not say which attribute was sampled.

All three are estimators of counts from the integer support counts
("hits") of each value, so their partials are exact integers. For an
attribute whose hits count ``m`` reports, a user holding ``v`` adds a hit at
``v`` with probability ``pi1`` and any other user with ``pi0``; the count
estimate is ``(hits - m pi0) / (pi1 - pi0)`` (unbiased) with variance
``(m pi0 (1 - pi0) + c (pi1 (1 - pi1) - pi0 (1 - pi0))) / (pi1 - pi0)^2``
(exact for ``c`` holders; the plug-in uses the estimate clipped to
``[0, m]``).

References
----------
H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao, "Random Sampling Plus
Fake Data: Multidimensional Frequency Estimates With Local Differential
Privacy", CIKM 2021.
T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols
for Frequency Estimation", USENIX Security 2017 (GRR, OUE, OLH).
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._kernels import _multidim as kernel
from .._kernels._unary import ue_counts
from .._random import (UINT64_MAX, as_generator, resolve_codebook_seed, resolve_identities,
                       resolve_n_threads)
from .._validation import check_float, check_int, param_error
from .._sanitize import SanitizationReport
from ..oracles import GRR, OLH, OUE, SUE
from ..oracles.adaptive import choose_oracle
from ..oracles._sanitizing import classify_integers, public_uniform
from ..protocol import FixedBudgetMembers, ReportSchema
from ..results import PrivacyStatement, Result
from ..streaming import ExactSum, Partial
from ._sanitizing import (FREQUENCY_REASONS, SMP_REASONS, partial_sanitization, report_counts,
                          report_rows, tally)

__all__ = ["SPL", "SMP", "RSpFD", "MultiFrequencyEstimate", "ORACLES", "RSPFD_VARIANTS",
           "paper_budget"]

#: the oracles of :mod:`fastldp.oracles` each attribute can be reported through
ORACLES = {"GRR": GRR, "OUE": OUE, "SUE": SUE, "OLH": OLH}
#: the choice per attribute of ``oracle="auto"`` / ``variant="auto"``: the oracle of least
#: variance at the attribute's budget and domain (ADP, Arcolezi et al. 2021)
AUTO = "auto"
#: the candidates of SPL's and SMP's ``oracle="auto"``, as :func:`~fastldp.oracles.adaptive.
#: choose_oracle` names them (OLH is never below OUE; ties go to GRR, then OUE)
AUTO_CANDIDATES = ("grr", "oue", "olh")
#: RSpFD's variants: the oracle of the sampled attribute and the fake data of the others
RSPFD_VARIANTS = ("GRR", "OUE-zero", "OUE-random", "SUE-zero", "SUE-random")
#: the most attributes (SMP's unary reports store the index in two bytes)
MAX_ATTRIBUTES = 65_535
#: the largest domain of one attribute (unary reports hold one bit per value)
MAX_ATTRIBUTE_DOMAIN = 1 << 20
EPSILON_MAX = 700.0
class _Shown(str):
    """A description of a bad value, shown as is in an error message (no quotes)."""

    def __repr__(self) -> str:
        return str(self)


#: odd constant spacing the public OLH seeds of the attributes (golden ratio, 64 bits)
_SEED_STEP = 0x9E3779B97F4A7C15


def paper_budget(epsilon: float, n_attributes: int) -> float:
    """The budget RS+FD gives the sampled attribute in the paper: ``ln(A (e^eps - 1) + 1)``.

    The paper (Arcolezi et al. 2021, Theorem 1) states that a report of
    RS+FD with the sampled attribute at this budget is ``eps``-LDP. The
    exact law of the whole report says otherwise: two records that differ
    in every attribute give the report equal to the first record
    probabilities whose ratio is ``e^{eps'}`` for this larger ``eps'``, so
    such a report is ``eps'``-LDP and no better (``fastldp audit``'s
    control ``control:rspfd-grr-paper`` shows it; tests/test_multidim.py
    checks it exactly). ``RSpFD(epsilon=paper_budget(eps, A))`` is the
    paper's protocol, honestly stated as ``eps'``-LDP.

    Examples
    --------
    >>> round(paper_budget(1.0, 2), 6)
    1.48988
    """
    eps = check_float(epsilon, "epsilon", "paper_budget", low=0.0, high=EPSILON_MAX,
                      high_open=False)
    a = check_int(n_attributes, "n_attributes", "paper_budget", low=1, high=MAX_ATTRIBUTES)
    return float(math.log(a * math.expm1(eps) + 1.0))


@dataclass(frozen=True, repr=False)
class MultiFrequencyEstimate(Result):
    """Unbiased counts of every value of every attribute, with their variances.

    Attributes
    ----------
    counts : numpy.ndarray of float64, shape (sum of domain_sizes,)
        The counts of attribute 0's values, then attribute 1's, ...
        (:meth:`attribute` gives one attribute's).
    variances : numpy.ndarray of float64, same shape
        The plug-in variance of every count (``inf`` for an attribute no
        report of :class:`SMP` was about).
    n : int
        The number of reports.
    privacy : PrivacyStatement
    categories : tuple of str
        ``"j=v"`` for attribute ``j`` and value ``v``.
    domain_sizes : tuple of int
    sanitization : SanitizationReport
        The malformed reports, replaced and counted by reason
        (:mod:`fastldp.multidim._sanitizing`).
    """

    _estimate_field = "counts"
    counts: np.ndarray
    variances: np.ndarray
    n: int
    privacy: PrivacyStatement
    categories: tuple
    domain_sizes: tuple
    sanitization: SanitizationReport

    def attribute(self, j: int) -> np.ndarray:
        """The counts of attribute ``j``'s values (a view of :attr:`counts`)."""
        j = check_int(j, "j", "MultiFrequencyEstimate.attribute", low=0,
                      high=len(self.domain_sizes) - 1)
        start = int(sum(self.domain_sizes[:j]))
        return self.counts[start:start + self.domain_sizes[j]]

    @property
    def frequencies(self) -> list:
        """The estimated frequencies (counts over ``n``) of each attribute, one array each."""
        n = max(self.n, 1)
        return [self.attribute(j) / n for j in range(len(self.domain_sizes))]


def _labels(domain_sizes) -> tuple:
    return tuple(f"{j}={v}" for j, k in enumerate(domain_sizes) for v in range(k))


def check_categorical_records(records: Any, domain_sizes, owner: str) -> np.ndarray:
    """``records`` as int64 ``(n, A)`` with column ``j`` in ``[0, k_j)``, or raise."""
    A = len(domain_sizes)
    expected = (f"an integer array of shape (n, {A}) whose column j is in "
                f"[0, domain_sizes[j])")
    try:
        arr = np.asarray(records)
    except (TypeError, ValueError):
        raise param_error("records", owner, expected, records, TypeError) from None
    if arr.ndim == 2 and arr.shape[0] == 0:
        arr = arr.astype(np.int64)
    if arr.dtype.kind not in "iu":
        raise param_error("records", owner, expected, _Shown(f"an array of dtype {arr.dtype}"),
                          TypeError)
    if arr.ndim != 2 or arr.shape[1] != A:
        raise param_error("records", owner, expected, _Shown(f"an array of shape {arr.shape}"))
    if arr.dtype == np.int64 and arr.flags.c_contiguous:
        # one compiled pass, no (n, A) masks; it names the first bad row, the mask below its column
        first = kernel.check_records(arr, np.asarray(domain_sizes, dtype=np.int64),
                                     resolve_n_threads(None, owner))
        if first < 0:
            return arr
        probe = arr[first:first + 1]
    else:
        first, probe = 0, arr
    bad = (probe < 0) | (probe >= np.asarray(domain_sizes))
    if bad.any():
        i, j = (int(v) for v in np.argwhere(bad)[0])
        raise param_error("records", owner, expected,
                          _Shown(f"{int(probe[i, j])} at row {first + i}, attribute {j} "
                                 f"(domain size {domain_sizes[j]})"))
    return np.ascontiguousarray(arr, dtype=np.int64)


class _MultiAttribute(FixedBudgetMembers):
    """What SPL, SMP and RSpFD share: parameters, records, the protocol's questions."""

    _budget_note = "multi-attribute reports have one budget"

    kind = "counts"
    #: the name the oracle / variant parameter has in stream_params
    _choice_name = "oracle"

    def __init__(self, *, domain_sizes: Any, epsilon: float, choice: str,
                 codebook_seed: Optional[int]) -> None:
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
        self.epsilon = check_float(epsilon, "epsilon", owner, low=0.0, high=EPSILON_MAX,
                                   high_open=False)
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.n_attributes = len(self.domain_sizes)
        self.offsets = np.concatenate([[0], np.cumsum(self.domain_sizes)]).astype(np.int64)
        self._choice = choice

    # ------------------------------------------------------------ oracles
    def attribute_seed(self, j: int) -> int:
        """The public seed of attribute ``j``'s oracle (its OLH hashes)."""
        return (self.codebook_seed + j * _SEED_STEP) & UINT64_MAX

    def _oracle(self, cls, j: int, eps: float):
        return cls(domain_size=self.domain_sizes[j], epsilon=eps,
                   codebook_seed=self.attribute_seed(j), n_threads=1)

    # ------------------------------------------------------------ protocol
    def __repr__(self) -> str:
        return (f"{type(self).__name__}(domain_sizes={list(self.domain_sizes)}, "
                f"epsilon={self.epsilon!r}, {self._choice_name}={self._choice!r}, "
                f"codebook_seed={self.codebook_seed})")

    def stream_params(self) -> dict:
        """The public parameters that rebuild an equivalent server (JSON values)."""
        return {"domain_sizes": list(self.domain_sizes), "epsilon": self.epsilon,
                self._choice_name: self._choice, "codebook_seed": self.codebook_seed}

    @property
    def labels(self) -> Optional[tuple]:
        """``"j=v"`` for every attribute ``j`` and value ``v`` (the estimate's entries)."""
        return _labels(self.domain_sizes)

    @property
    def report_schema(self) -> ReportSchema:
        """The dtype and shape of one report; every report has the budget ``epsilon``."""
        dtype, shape = self._layout()
        return ReportSchema(dtype, shape, fixed_epsilon=self.epsilon)

    def example_data(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` records (int64, shape ``(n, A)``): attribute ``j`` Zipf(1.1) over ``[0, k_j)``."""
        n = check_int(n, "n", f"{type(self).__name__}.example_data", low=0)
        out = np.empty((n, self.n_attributes), dtype=np.int64)
        for j, k in enumerate(self.domain_sizes):
            w = 1.0 / np.arange(1, k + 1) ** 1.1
            out[:, j] = rng.choice(k, size=n, p=w / w.sum())
        return out

    # ------------------------------------------------------------ records and reports
    def check_records(self, records: Any, owner: str) -> np.ndarray:
        """``records`` as int64 ``(n, A)`` with column ``j`` in ``[0, k_j)``, or raise."""
        return check_categorical_records(records, self.domain_sizes, owner)

    #: threads of the compiled clients and servers (``None``: OpenMP's default, ``-1``: all
    #: cores); the reports and estimates never depend on it
    n_threads: Optional[int] = None

    def _kernel_records(self, data: Any, owner: str) -> np.ndarray:
        """``data`` for a compiled client: an int64 C-ordered ``(n, A)`` array as it is (the
        client checks every value against its domain in its own pass), anything else checked
        and converted by :meth:`check_records`."""
        if (isinstance(data, np.ndarray) and data.dtype == np.int64 and data.ndim == 2
                and data.shape[1] == self.n_attributes and data.flags.c_contiguous):
            return data
        return self.check_records(data, owner)

    def _kernel_done(self, out: np.ndarray, first_bad: int, x: np.ndarray, owner: str):
        """``out``, or the error of :meth:`check_records` when the client met a bad record."""
        if first_bad >= 0:
            self.check_records(x, owner)  # raises, naming the value, row and attribute
            raise AssertionError(f"{owner}: the compiled client rejected row {first_bad}, "
                                 "which check_records accepts")  # pragma: no cover
        return out

    def _kernel_key(self, gen: np.random.Generator) -> tuple:
        """The compiled client's key: two words of the caller's generator."""
        key = gen.integers(0, 2**64, size=2, dtype=np.uint64)
        return int(key[0]), int(key[1])

    def _sizes_array(self) -> np.ndarray:
        return np.asarray(self.domain_sizes, dtype=np.int64)

    def _oracle_pq(self, j: int) -> tuple:
        """Attribute ``j``'s oracle's own ``(p, q)`` at its budget (those its perturb uses)."""
        p, q = self.oracles[j]._pq(np.array([self._oracle_epsilon()]))
        return float(np.asarray(p).ravel()[0]), float(np.asarray(q).ravel()[0])

    def _unary_kernel_params(self) -> Optional[tuple]:
        """``(p per attribute, Q)`` when every attribute is a unary encoding with one ``q``."""
        if not self.unary:
            return None
        pq = [self._oracle_pq(j) for j in range(self.n_attributes)]
        if len({q for _, q in pq}) != 1:
            return None
        from ..oracles.unary import _thresholds
        return (np.array([p for p, _ in pq]),
                int(_thresholds(np.array([pq[0][1]]))[0]))

    def _all_legal_report(self, n: int) -> SanitizationReport:
        return SanitizationReport(n, n, {reason: 0 for reason in self._REASONS}, False)

    def _fast_hits(self, arr: np.ndarray, wrong: np.ndarray, owner: str) -> Optional[tuple]:
        """``(hits, reports per attribute)`` by one compiled pass when every report is legal
        as sent in the schema's dtype; ``None`` sends the batch down the general path."""
        n = arr.shape[0]
        dtype, _ = self._layout()
        if n == 0 or arr.dtype != dtype or wrong.any():
            return None
        kind = self._layout_kind()
        nt = resolve_n_threads(self.n_threads, owner)
        if kind == "symbols":
            hits, first = kernel.count_symbols(np.ascontiguousarray(arr), self._sizes_array(), nt)
            return None if first >= 0 else (hits, [n] * self.n_attributes)
        if kind == "bits":
            width = arr.shape[1]
            sums = ue_counts(np.ascontiguousarray(arr), 8 * width, nt)
            starts = 8 * np.concatenate([[0], np.cumsum(self.n_bytes)[:-1]])
            legal = all(not sums[b + k:b + 8 * nb].any()
                        for b, k, nb in zip(starts, self.domain_sizes, self.n_bytes))
            if not legal:  # a padding bit is set: the general path repairs and counts it
                return None
            return (np.concatenate([sums[b:b + k] for b, k in zip(starts, self.domain_sizes)]),
                    [n] * self.n_attributes)
        return None

    @staticmethod
    def _bad_report(owner: str, what: str, row: int):
        return ValueError(f"{owner}: report {row} is not a report of this mechanism ({what}); "
                          "the reports must come from its privatize")

    def _unary_hits(self, block: np.ndarray, k: int, owner: str, rows: np.ndarray) -> np.ndarray:
        """Column sums of packed little-endian bit rows of ``k`` bits (padding must be 0)."""
        bits = np.unpackbits(block, axis=1, bitorder="little")
        if bits.shape[1] > k and bits[:, k:].any():
            bad = int(rows[np.flatnonzero(bits[:, k:].any(axis=1))[0]])
            raise self._bad_report(owner, "a padding bit is set", bad)
        return bits[:, :k].sum(axis=0, dtype=np.int64)

    # ------------------------------------------------------------ streaming decode
    def partial(self, reports: Any, epsilons: Any = None, identities: Any = None) -> Partial:
        """The exact state of :meth:`estimate` over a chunk: integer hits per (attribute, value).

        Parameters
        ----------
        reports : array_like
            The chunk's reports (from :meth:`privatize`).
        epsilons : None or the fixed epsilon
        identities : array_like of int, optional
            The chunk's identities (they key OLH's hashes and the public
            replacements of malformed reports); default ``0 .. n-1``, right
            only for a first chunk.

        Returns
        -------
        fastldp.streaming.Partial
            ``hits`` (an :class:`~fastldp.streaming.ExactSum` of integers,
            one entry per attribute value), the number of reports ``n``, the
            number of reports about each attribute ``m<j>``, and the
            sanitization counts (``n_valid``, ``reason:<reason>``; see
            :meth:`sanitize`).
        """
        owner = f"{type(self).__name__}.partial"
        self._check_epsilons(epsilons, owner)
        arr, wrong = self._report_rows(reports, owner)
        fast = self._fast_hits(arr, wrong, owner)
        if fast is not None:  # every report legal as sent: nothing to repair, counted in one pass
            if identities is not None:
                resolve_identities(identities, arr.shape[0], owner)  # checked, as below
            hits, about = fast
            report = self._all_legal_report(arr.shape[0])
        else:
            ids = resolve_identities(identities, arr.shape[0], owner)
            clean, report = self.sanitize(arr, wrong, ids)
            hits, about = self._hits(clean, ids, owner)
        total = ExactSum(int(self.offsets[-1]))
        total.add(hits.astype(np.float64))  # integers below 2^53: exact
        counts = report_counts(report)
        counts.update({f"m{j}": int(m) for j, m in enumerate(about)})
        return Partial(type(self).__name__, self.stream_params(), sums={"hits": total},
                       counts=counts, flags={"wrong_dtype": report.wrong_dtype})

    # ------------------------------------------------------------ sanitization
    _REASONS: tuple[str, ...] = FREQUENCY_REASONS
    # set by the subclasses that report through per-attribute oracles (all but FullDomain):
    # unary is True when every attribute is bit-packed (uint8 reports); with oracle="auto" a
    # mix of bit-packed and symbol attributes is stored as int64, a byte per column
    oracles: list
    unary: bool
    n_bytes: list
    _unary_parts: list

    def _width(self, j: int) -> int:
        """Columns of attribute ``j``'s part in a report (bytes of bits, or one symbol)."""
        return self.n_bytes[j] if self._unary_parts[j] else 1

    def _report_rows(self, reports: Any, owner: str) -> tuple:
        """The reports as ``(n, width)`` rows and the mask of ragged rows of another length."""
        dtype, shape = self._layout()
        expected = (f"an array of {np.dtype(dtype)} reports of shape "
                    f"{('n', *shape)}".replace("'n'", "n"))
        return report_rows(reports, int(shape[0]), owner, expected)

    def _oracle_epsilon(self) -> float:  # pragma: no cover - abstract
        """The budget every attribute's oracle reports at."""
        raise NotImplementedError

    def _repair_part(self, j: int, out: np.ndarray, values: np.ndarray, columns: slice,
                     rows: np.ndarray, force: np.ndarray, ids: np.ndarray) -> np.ndarray:
        """Replace attribute ``j``'s part (``columns``) of ``rows`` where illegal or ``force``d.

        The replacement is the oracle's own: a public uniform legal output
        keyed by (the attribute's seed, identity). Returns the mask (over
        ``rows``) of the parts replaced.
        """
        oracle = self.oracles[j]
        part = values[rows, columns]
        if self._unary_parts[j]:
            legal = (((part >= 0) & (part <= 255)).all(axis=1) if part.dtype != np.uint8
                     else np.ones(part.shape[0], dtype=bool))
            pad = oracle._padding_mask()
            if pad:
                legal &= (part[:, -1] & pad) == 0
            bad = ~legal | force
            if bad.any():
                out[rows[bad], columns] = oracle.public_rows(ids[rows[bad]])
            return bad
        size = int(oracle.output_sizes(np.array([self._oracle_epsilon()]))[0])
        column = part[:, 0]
        bad = ~((column >= 0) & (column < size)) | force
        if bad.any():
            out[rows[bad], columns.start] = public_uniform(
                oracle.codebook_seed, ids[rows[bad]], np.full(int(bad.sum()), size))
        return bad

    def sanitize(self, arr: np.ndarray, wrong: np.ndarray,
                 ids: np.ndarray) -> tuple:
        """Legal reports from ``arr`` (rows), and the count of what was replaced, by reason.

        Every attribute's part that is no legal output of its oracle (and
        every part of a row of another length, ``wrong``) is replaced by
        the oracle's public uniform output keyed by the identity
        (:mod:`fastldp.multidim._sanitizing`); the row counts once, under
        its first reason.
        """
        n = arr.shape[0]
        dtype, _ = self._layout()
        if arr.dtype == dtype:  # the schema's integers: every entry is one, no conversion
            values, wrong_dtype = arr, False
            every = np.ones(n, dtype=bool)
            numeric_row = integral_row = every
            out = np.array(arr, dtype=dtype, order="C")
        else:
            values, numeric, integral, wrong_dtype = classify_integers(arr)
            numeric_row, integral_row = numeric.all(axis=1), integral.all(axis=1)
            info = np.iinfo(dtype)
            out = np.where((values >= info.min) & (values <= info.max), values, 0).astype(dtype)
        replaced = self._repair(out, values, wrong, ids)
        masks = {"wrong_width": wrong, "non_numeric": ~numeric_row,
                 "non_integer": ~integral_row, "bad_index": replaced[1],
                 "out_of_range": replaced[0]}
        return out, tally(n, masks, self._REASONS, wrong_dtype)

    def _layout_kind(self) -> str:
        """``"symbols"`` (every part a GRR symbol), ``"bits"`` (every part packed bits) or
        ``"other"`` (OLH buckets, or a mix): the first two have whole-matrix fast paths."""
        if self.unary:
            return "bits"
        if not any(self._unary_parts) and all(c != "OLH" for c in getattr(self, "chosen", ())):
            return "symbols"
        return "other"

    def _all_legal(self, values: np.ndarray) -> bool:
        """Whether every part of every report is a legal output (whole-matrix checks).

        One vectorized pass instead of a strided pass per attribute: for the
        common batch with nothing to repair, sanitization costs one comparison
        of the matrix (symbols) or of the last byte of each attribute (bits).
        """
        kind = self._layout_kind()
        if kind == "symbols":
            return bool(((values >= 0) & (values < np.asarray(self.domain_sizes))).all())
        if kind == "bits" and values.dtype == np.uint8:
            last = np.cumsum(self.n_bytes) - 1
            pads = np.array([o._padding_mask() for o in self.oracles], dtype=np.uint8)
            return not bool((values[:, last] & pads).any())
        return False

    def _repair(self, out, values, wrong, ids) -> tuple:
        """Repair every attribute's part in place (SPL, RSpFD: one part per attribute)."""
        n = values.shape[0]
        if not wrong.any() and self._all_legal(values):
            return np.zeros(n, dtype=bool), np.zeros(n, dtype=bool)
        rows = np.arange(n)
        any_bad = np.zeros(n, dtype=bool)
        start = 0
        for j in range(self.n_attributes):
            width = self._width(j)
            any_bad |= self._repair_part(j, out, values, slice(start, start + width), rows,
                                         wrong, ids)
            start += width
        return any_bad, np.zeros(n, dtype=bool)

    def finalize(self, partial: Partial) -> MultiFrequencyEstimate:
        """The :class:`MultiFrequencyEstimate` of a (merged) partial."""
        self._check_partial(partial, f"{type(self).__name__}.finalize")
        n = partial.counts["n"]
        hits = np.rint(partial.sums["hits"].value()).astype(np.int64)
        counts = np.zeros(int(self.offsets[-1]))
        variances = np.zeros(int(self.offsets[-1]))
        for j in range(self.n_attributes):
            sl = slice(int(self.offsets[j]), int(self.offsets[j + 1]))
            m = partial.counts[f"m{j}"]
            counts[sl], variances[sl] = self._attribute_estimate(j, hits[sl], m, n)
        return MultiFrequencyEstimate(counts, variances, n, self.privacy(),
                                      _labels(self.domain_sizes), self.domain_sizes,
                                      partial_sanitization(partial))

    def estimate(self, reports: Any, *, epsilons: Any = None,
                 identities: Any = None) -> MultiFrequencyEstimate:
        """Unbiased counts of every attribute's values: ``finalize(partial(...))`` exactly."""
        return self.finalize(self.partial(reports, epsilons, identities))

    def _attribute_estimate(self, j: int, hits: np.ndarray, m: int, n: int):
        pi0, pi1 = self.hit_probabilities(j)
        gap = pi1 - pi0
        counts = (hits - m * pi0) / gap
        held = np.clip(counts, 0.0, m)
        variances = (m * pi0 * (1 - pi0) + held * (pi1 * (1 - pi1) - pi0 * (1 - pi0))) / gap**2
        return counts, variances

    def _layout(self) -> tuple:  # pragma: no cover - abstract
        """``(dtype, shape)`` of one report."""
        raise NotImplementedError

    def _hits(self, arr: np.ndarray, ids: np.ndarray, owner: str) -> tuple:
        """The hits of every (attribute, value) and the number of reports about each attribute.

        This is for reports with a part for every attribute, side by side (SPL, RSpFD): packed
        bit rows for the unary encodings, one symbol column otherwise. SMP overrides it.
        """
        n = arr.shape[0]
        rows = np.arange(n)
        kind = self._layout_kind()
        if kind == "symbols" and n:
            # one bincount of every symbol shifted to its attribute's offset (sanitized
            # reports: every symbol is in range, checked again at the cost of one comparison)
            if not ((arr >= 0) & (arr < np.asarray(self.domain_sizes))).all():
                return self._hits_by_attribute(arr, ids, owner)
            flat = (arr + self.offsets[:-1]).ravel()
            return (np.bincount(flat, minlength=int(self.offsets[-1])).astype(np.int64),
                    [n] * self.n_attributes)
        if kind == "bits" and n:
            # one unpacking of the whole rows; a padding bit set anywhere shows in its column
            sums = np.unpackbits(arr, axis=1, bitorder="little").sum(axis=0, dtype=np.int64)
            starts = 8 * np.concatenate([[0], np.cumsum(self.n_bytes)[:-1]])
            parts = [sums[b:b + k] for b, k in zip(starts, self.domain_sizes)]
            padding = [sums[b + k:b + 8 * nb]
                       for b, k, nb in zip(starts, self.domain_sizes, self.n_bytes)]
            if any(p.any() for p in padding):
                return self._hits_by_attribute(arr, ids, owner)  # raises, naming the row
            return np.concatenate(parts), [n] * self.n_attributes
        return self._hits_by_attribute(arr, ids, owner)

    def _hits_by_attribute(self, arr: np.ndarray, ids: np.ndarray, owner: str) -> tuple:
        """:meth:`_hits` attribute by attribute (OLH, mixed layouts, and the error paths)."""
        n = arr.shape[0]
        rows = np.arange(n)
        parts = []
        start = 0
        for j, k in enumerate(self.domain_sizes):
            if self._unary_parts[j]:
                block = arr[:, start:start + self.n_bytes[j]]
                parts.append(self._unary_hits(block.astype(np.uint8, copy=False), k, owner, rows))
            else:
                parts.append(self._symbol_hits(j, arr[:, start], ids, owner, rows))
            start += self._width(j)
        return np.concatenate(parts), [n] * self.n_attributes

    def _symbol_hits(self, j: int, column: np.ndarray, ids: np.ndarray, owner: str,
                     rows: np.ndarray) -> np.ndarray:
        """The hits of attribute ``j``'s values in a column of symbols (a value in ``[0, k)``)."""
        k = self.domain_sizes[j]
        if column.size and (column.min() < 0 or column.max() >= k):
            bad = int(rows[np.flatnonzero((column < 0) | (column >= k))[0]])
            raise self._bad_report(owner, f"attribute {j}'s value is not in [0, {k})", bad)
        return np.bincount(column, minlength=k).astype(np.int64)

    def hit_probabilities(self, j: int) -> tuple:  # pragma: no cover - abstract
        """``(pi0, pi1)``: a report's hit at value ``v`` of attribute ``j`` for a non-holder / holder."""
        raise NotImplementedError


def _symbol_pq(name: str, eps: float, k: int, oracle=None) -> tuple:
    """``(p, q)``: a report of the oracle supports the true value / another value."""
    e = math.exp(eps)
    if name == "GRR":
        return e / (e + k - 1), 1.0 / (e + k - 1)
    if name == "OUE":
        return 0.5, 1.0 / (e + 1)
    if name == "SUE":
        h = math.exp(eps / 2)
        return h / (h + 1), 1.0 / (h + 1)
    g = int(oracle.buckets(np.array([eps]))[0])  # OLH
    return e / (e + g - 1), 1.0 / g


class _OracleAttributes(_MultiAttribute):
    """SPL and SMP: one oracle of :mod:`fastldp.oracles` per attribute, at ``attribute_epsilon``."""

    def __init__(self, *, domain_sizes: Any, epsilon: float, oracle: str = "GRR",
                 codebook_seed: Optional[int] = None) -> None:
        owner = type(self).__name__
        if oracle not in ORACLES and oracle != AUTO:
            raise param_error("oracle", owner, f"one of {[*ORACLES, AUTO]}", oracle)
        super().__init__(domain_sizes=domain_sizes, epsilon=epsilon, choice=oracle,
                         codebook_seed=codebook_seed)
        self.oracle = oracle
        eps = self.attribute_epsilon
        if oracle == AUTO:
            self.chosen = tuple(choose_oracle(k, eps, AUTO_CANDIDATES).upper()
                                for k in self.domain_sizes)
        else:
            self.chosen = (oracle,) * self.n_attributes
        self.oracles = [self._oracle(ORACLES[name], j, eps) for j, name in enumerate(self.chosen)]
        self._unary_parts = [name in ("OUE", "SUE") for name in self.chosen]
        self.unary = all(self._unary_parts)
        self.n_bytes = [(k + 7) // 8 for k in self.domain_sizes]
        self._pq = [_symbol_pq(name, eps, k, o)
                    for name, k, o in zip(self.chosen, self.domain_sizes, self.oracles)]

    @property
    def attribute_epsilon(self) -> float:  # pragma: no cover - abstract
        raise NotImplementedError

    def _oracle_epsilon(self) -> float:
        return self.attribute_epsilon

    def hit_probabilities(self, j: int) -> tuple:
        p, q = self._pq[j]
        return q, p

    def _perturb(self, j: int, values: np.ndarray, ids: np.ndarray, gen) -> np.ndarray:
        return self.oracles[j].perturb(values, np.array([self.attribute_epsilon]), ids, gen)

    def _fast_client(self) -> Optional[str]:
        """``"grr"`` / ``"ue"`` when the compiled client makes the reports (every attribute
        through GRR, or through unary encodings of one ``q``), else ``None``.

        A subclass that replaces :meth:`_perturb` (the audit's sampler controls) keeps it."""
        if type(self)._perturb is not _OracleAttributes._perturb:
            return None
        if all(name == "GRR" for name in self.chosen):
            return "grr"
        if self._unary_kernel_params() is not None:
            return "ue"
        return None

    @property
    def _keep(self) -> np.ndarray:
        """GRR's probability of keeping the value, per attribute (its oracle's own ``p``)."""
        return np.array([self._oracle_pq(j)[0] for j in range(self.n_attributes)])

    def _byte0(self) -> np.ndarray:
        """The first byte of every attribute's bits in a report of side-by-side parts."""
        return np.concatenate([[0], np.cumsum(self.n_bytes)[:-1]]).astype(np.int64)

    def _symbol_hits(self, j: int, column: np.ndarray, ids: np.ndarray, owner: str,
                     rows: np.ndarray) -> np.ndarray:
        k = self.domain_sizes[j]
        if self.chosen[j] == "OLH":
            g = int(self.oracles[j].buckets(np.array([self.attribute_epsilon]))[0])
            if column.size and (column.min() < 0 or column.max() >= g):
                bad = int(rows[np.flatnonzero((column < 0) | (column >= g))[0]])
                raise self._bad_report(owner, f"attribute {j}'s bucket is not in [0, {g})", bad)
            if column.size == 0:
                return np.zeros(k, dtype=np.int64)
            sums = self.oracles[j].support(column, ids, np.full(column.size, g, dtype=np.int64),
                                           np.ones(column.size))
            return np.rint(sums).astype(np.int64)
        return super()._symbol_hits(j, column, ids, owner, rows)


class SPL(_OracleAttributes):
    """Split the budget: every attribute reported through the oracle at ``epsilon / A``.

    Parameters
    ----------
    domain_sizes : list of int >= 2
        ``k_j``, the number of values of attribute ``j``.
    epsilon : float in (0, 700]
        The budget of a whole report (sequential composition: ``A`` reports
        at ``epsilon / A``).
    oracle : {"GRR", "OUE", "SUE", "OLH", "auto"}
        The oracle of :mod:`fastldp.oracles` every attribute goes through.
        ``"auto"`` (ADP, Arcolezi et al. 2021): per attribute, the oracle of
        least variance at its budget and domain size among GRR, OUE and OLH
        (:func:`~fastldp.oracles.adaptive.choose_oracle`: GRR where
        ``k_j < 3 e^{eps_j} + 2``, else OUE); :attr:`chosen` says which.
    codebook_seed : int or None
        Public seed (of the OLH hashes: attribute ``j``'s oracle has seed
        :meth:`attribute_seed`); ``None`` draws one.

    Notes
    -----
    Reports: int64 ``(n, A)`` symbols (GRR) or buckets (OLH), or uint8
    ``(n, sum ceil(k_j / 8))`` packed bits (OUE, SUE), attribute ``j``'s
    bits first at byte ``sum_{i<j} ceil(k_i / 8)``. With ``"auto"`` choosing
    both kinds, int64 rows in which a bit-packed attribute takes one column
    per byte (its ``ceil(k_j / 8)`` bytes) and a symbol attribute one. The count of value
    ``v`` of attribute ``j`` is the oracle's estimator at ``epsilon / A``
    (Wang et al. 2017): ``(hits - n q) / (p - q)``, variance
    ``(n q (1 - q) + c (p (1 - p) - q (1 - q))) / (p - q)^2``.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.multidim import SPL
    >>> spl = SPL(domain_sizes=[3, 4], epsilon=2.0, oracle="GRR", codebook_seed=0)
    >>> records = spl.example_data(1_000, np.random.default_rng(0))
    >>> est = spl.estimate(spl.privatize(records, rng=1))
    >>> est.counts.shape, est.n
    ((7,), 1000)
    """

    @property
    def attribute_epsilon(self) -> float:
        """``epsilon / A``: the budget of each attribute's report."""
        return self.epsilon / self.n_attributes

    def _layout(self):
        if self.unary:
            return np.uint8, (int(sum(self.n_bytes)),)
        return np.int64, (sum(self._width(j) for j in range(self.n_attributes)),)

    def privatize(self, data: Any, *, epsilons: Any = None, identities: Any = None,
                  rng: Any = None) -> np.ndarray:
        """Reports of ``n`` records (int ``(n, A)``): every attribute through the oracle.

        ``identities`` key the OLH hashes (default ``0 .. n-1``); ``rng`` the
        private randomness.
        """
        owner = f"{type(self).__name__}.privatize"
        self._check_epsilons(epsilons, owner)
        fast = self._fast_client()
        if fast is not None:  # GRR or one unary encoding everywhere: the compiled client
            x = self._kernel_records(data, owner)
            if identities is not None:
                resolve_identities(identities, x.shape[0], owner)  # checked; GRR and UE ignore them
            k0, k1 = self._kernel_key(as_generator(rng, owner))
            nt = resolve_n_threads(self.n_threads, owner)
            if fast == "grr":
                out, first = kernel.grr_reports(k0, k1, kernel.SPL, x, self._sizes_array(),
                                                self._keep, nt)
            else:
                p, Q = self._unary_kernel_params()
                out, first = kernel.ue_reports(k0, k1, kernel.UE_SPL, x, self._sizes_array(), p,
                                               self._byte0(), Q, nt)
            return self._kernel_done(out, first, x, owner)
        x = self.check_records(data, owner)
        ids = resolve_identities(identities, x.shape[0], owner)
        gen = as_generator(rng, owner)
        dtype, shape = self._layout()
        out = np.zeros((x.shape[0], *shape), dtype=dtype)
        start = 0
        for j in range(self.n_attributes):
            y = self._perturb(j, x[:, j], ids, gen)
            width = self._width(j)
            out[:, start:start + width] = y.reshape(x.shape[0], width)
            start += width
        return out


class SMP(_OracleAttributes):
    """Sample one attribute: every user reports a uniformly drawn attribute and its index.

    Parameters
    ----------
    domain_sizes : list of int >= 2
    epsilon : float in (0, 700]
        The budget of the sampled attribute's report, and of the whole
        report (the index is drawn independently of the record).
    oracle : {"GRR", "OUE", "SUE", "OLH", "auto"}
        ``"auto"``: per attribute the oracle of least variance at
        ``epsilon`` (as :class:`SPL`'s).
    codebook_seed : int or None

    Notes
    -----
    Reports: int64 ``(n, 2)`` rows ``(j, symbol)`` (GRR, OLH), or uint8
    ``(n, 2 + max_j ceil(k_j / 8))`` rows: the index ``j`` in two
    little-endian bytes, then attribute ``j``'s packed bits (zeros after).
    With ``"auto"`` choosing both kinds: int64 ``(n, 1 + max_j w_j)`` rows,
    the index, then the part (``w_j`` columns: one byte each, or a symbol),
    zeros after.
    With ``m_j`` reports about attribute ``j``, the count of value ``v`` is
    ``n c_j(v) / m_j``, where ``c_j`` is the oracle's count estimate over
    those ``m_j`` reports; given ``m_j`` it is unbiased, with variance
    ``(n / m_j)^2 Var c_j + n^2 f (1 - f) (n - m_j) / (m_j (n - 1))``
    (the second term: the sampled users are a sample without replacement
    of the ``n``; ``f`` the plug-in frequency). An attribute with no
    report gets count 0 and variance ``inf``.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.multidim import SMP
    >>> smp = SMP(domain_sizes=[3, 4], epsilon=2.0, oracle="OUE", codebook_seed=0)
    >>> reports = smp.privatize(smp.example_data(500, np.random.default_rng(0)), rng=1)
    >>> reports.shape, reports.dtype
    ((500, 3), dtype('uint8'))
    """

    @property
    def attribute_epsilon(self) -> float:
        """``epsilon``: the sampled attribute's budget."""
        return self.epsilon

    def _layout(self):
        if self.unary:
            return np.uint8, (2 + max(self.n_bytes),)
        return np.int64, (1 + max(self._width(j) for j in range(self.n_attributes)),)

    @property
    def _part_start(self) -> int:
        """The column where the sampled attribute's part starts (after its index)."""
        return 2 if self.unary else 1

    def privatize(self, data: Any, *, epsilons: Any = None, identities: Any = None,
                  rng: Any = None) -> np.ndarray:
        """Reports of ``n`` records: one uniformly sampled attribute each, with its index."""
        owner = f"{type(self).__name__}.privatize"
        self._check_epsilons(epsilons, owner)
        fast = self._fast_client()
        if fast is not None:  # the compiled client: the attribute drawn per record, then its part
            x = self._kernel_records(data, owner)
            if identities is not None:
                resolve_identities(identities, x.shape[0], owner)
            k0, k1 = self._kernel_key(as_generator(rng, owner))
            nt = resolve_n_threads(self.n_threads, owner)
            if fast == "grr":
                out, first = kernel.grr_reports(k0, k1, kernel.SMP, x, self._sizes_array(),
                                                self._keep, nt)
            else:
                p, Q = self._unary_kernel_params()
                out, first = kernel.smp_ue_reports(k0, k1, x, self._sizes_array(), p, Q, nt)
            return self._kernel_done(out, first, x, owner)
        x = self.check_records(data, owner)
        n = x.shape[0]
        ids = resolve_identities(identities, n, owner)
        gen = as_generator(rng, owner)
        dtype, shape = self._layout()
        out = np.zeros((n, *shape), dtype=dtype)
        sampled = gen.integers(0, self.n_attributes, size=n)
        start = self._part_start
        for j in range(self.n_attributes):
            rows = np.flatnonzero(sampled == j)
            y = self._perturb(j, x[rows, j], ids[rows], gen)
            if self.unary:
                out[rows, 0] = j & 0xFF
                out[rows, 1] = j >> 8
            else:
                out[rows, 0] = j
            width = self._width(j)
            out[rows, start:start + width] = y.reshape(rows.size, width)
        return out

    _REASONS: tuple[str, ...] = SMP_REASONS
    #: the word of the sanitize stream (block 0) that draws a replaced report's attribute
    _INDEX_WORD = 3

    def _repair(self, out, values, wrong, ids) -> tuple:
        """Repair ``(index, part)`` rows in place: a bad index redraws the whole report.

        A report whose attribute index is no attribute is replaced by the
        report of a public uniform attribute (word 3 of the sanitize stream
        of ``codebook_seed``) with its oracle's public uniform output; a
        good index keeps its attribute, and an illegal part of it is
        replaced as the oracle replaces it.
        """
        A = self.n_attributes
        n = values.shape[0]
        if self.unary:
            low, high = values[:, 0].astype(np.int64), values[:, 1].astype(np.int64)
            in_byte = (low >= 0) & (low <= 255) & (high >= 0) & (high <= 255)
            index = np.where(in_byte, low | (high << 8), -1)
        else:
            index = values[:, 0]
        index_ok = (index >= 0) & (index < A) & ~wrong
        index = np.where(index_ok, index, 0)
        redraw = ~index_ok
        if redraw.any():
            index[redraw] = public_uniform(self.codebook_seed, ids[redraw],
                                           np.full(int(redraw.sum()), A), word=self._INDEX_WORD)
            if self.unary:
                out[redraw, 0] = index[redraw] & 0xFF
                out[redraw, 1] = index[redraw] >> 8
            else:
                out[redraw, 0] = index[redraw]
        any_bad = redraw.copy()
        start = self._part_start
        for j in range(A):
            rows = np.flatnonzero(index == j)
            if rows.size == 0:
                continue
            end = start + self._width(j)
            tail = values[rows, end:]  # the columns after the part must be 0
            force = redraw[rows] | ~(tail == 0).all(axis=1)
            bad = self._repair_part(j, out, values, slice(start, end), rows, force, ids)
            out[rows[bad], end:] = 0
            any_bad[rows] |= bad
        return any_bad, redraw & ~wrong

    def _fast_hits(self, arr: np.ndarray, wrong: np.ndarray, owner: str) -> Optional[tuple]:
        n = arr.shape[0]
        dtype, _ = self._layout()
        if n == 0 or arr.dtype != dtype or wrong.any():
            return None
        nt = resolve_n_threads(self.n_threads, owner)
        if self.unary:
            hits, about, first = kernel.count_smp_bits(np.ascontiguousarray(arr),
                                                       self._sizes_array(), nt)
        elif all(name == "GRR" for name in self.chosen):
            hits, about, first = kernel.count_smp_symbols(np.ascontiguousarray(arr),
                                                          self._sizes_array(), nt)
        else:
            return None
        return None if first >= 0 else (hits, [int(m) for m in about])

    def _hits(self, arr: np.ndarray, ids: np.ndarray, owner: str):
        A = self.n_attributes
        if self.unary:
            index = arr[:, 0].astype(np.int64) | (arr[:, 1].astype(np.int64) << 8)
        else:
            index = arr[:, 0]
        if index.size and (index.min() < 0 or index.max() >= A):
            bad = int(np.flatnonzero((index < 0) | (index >= A))[0])
            raise self._bad_report(owner, f"its attribute index is not in [0, {A})", bad)
        parts, about = [], []
        start = self._part_start
        for j, k in enumerate(self.domain_sizes):
            rows = np.flatnonzero(index == j)
            about.append(rows.size)
            block = arr[rows, start:]
            width = self._width(j)
            if block.shape[1] > width and block[:, width:].any():
                bad = int(rows[np.flatnonzero(block[:, width:].any(axis=1))[0]])
                raise self._bad_report(owner, "a byte after its attribute's part is set", bad)
            if self._unary_parts[j]:
                parts.append(self._unary_hits(
                    np.ascontiguousarray(block[:, :width], dtype=np.uint8), k, owner, rows))
            else:
                parts.append(self._symbol_hits(j, block[:, 0], ids[rows], owner, rows))
        return np.concatenate(parts), about

    def _attribute_estimate(self, j: int, hits: np.ndarray, m: int, n: int):
        k = self.domain_sizes[j]
        if m == 0:
            return np.zeros(k), np.full(k, np.inf)
        counts, variances = super()._attribute_estimate(j, hits, m, n)
        scale = n / m
        f = np.clip(counts / m, 0.0, 1.0)
        sampling = n * n * f * (1 - f) * (n - m) / (m * (n - 1)) if n > 1 else np.zeros(k)
        return counts * scale, variances * scale**2 + sampling


class RSpFD(_MultiAttribute):
    """Random sampling plus fake data: the sampled attribute through an oracle, fakes elsewhere.

    Parameters
    ----------
    domain_sizes : list of int >= 2
    epsilon : float in (0, 700]
        The budget of the sampled attribute's oracle, which is also the
        exact budget of the whole report (see :func:`paper_budget` for the
        paper's amplified budget and why it is not ``epsilon``-LDP).
    variant : {"GRR", "OUE-zero", "OUE-random", "SUE-zero", "SUE-random", "auto"}
        ``"GRR"``: GRR on the sampled attribute, a uniform value on every
        other. ``"<UE>-zero"``: the unary encoding (OUE or SUE) of the
        sampled attribute, the encoding of the all-zero vector perturbed
        (every bit 1 with probability ``q``) on every other.
        ``"<UE>-random"``: the encoding of a uniform value perturbed by the
        same oracle on every other. ``"auto"`` (RS+FD[ADP]): per attribute
        GRR or OUE-zero, whichever gives a count nobody holds the smaller
        variance ``pi0 (1 - pi0) / (pi1 - pi0)^2`` (:attr:`chosen`; mixed
        reports are laid out as :class:`SPL`'s).
    codebook_seed : int or None

    Notes
    -----
    Reports: int64 ``(n, A)`` (GRR) or uint8 ``(n, sum ceil(k_j / 8))``
    packed bits (as :class:`SPL`'s). A user's value ``v`` of attribute
    ``j`` gets a hit with probability ``pi1 = pi0 + (p - q) / A``, any other
    value with ``pi0 = q / A + (A - 1) phi / A``, where ``phi`` is the fake
    data's probability of the value: ``1 / k_j`` (GRR), ``q`` (zero),
    ``(p + (k_j - 1) q) / k_j`` (random). The count estimate
    ``A (hits - n pi0) / (p - q)`` is the paper's (Arcolezi et al. 2021,
    Sec. 3, the estimators of RS+FD[GRR], [OUE-z], [OUE-r]) times ``n``;
    its variance is exact for ``c`` holders (the paper's is the ``c = 0``
    term).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.multidim import RSpFD
    >>> rs = RSpFD(domain_sizes=[3, 4], epsilon=2.0, variant="OUE-zero", codebook_seed=0)
    >>> est = rs.estimate(rs.privatize(rs.example_data(800, np.random.default_rng(0)), rng=1))
    >>> est.variances.shape
    (7,)
    """

    _choice_name = "variant"

    def __init__(self, *, domain_sizes: Any, epsilon: float, variant: str = "GRR",
                 codebook_seed: Optional[int] = None) -> None:
        owner = type(self).__name__
        if variant not in RSPFD_VARIANTS and variant != AUTO:
            raise param_error("variant", owner, f"one of {[*RSPFD_VARIANTS, AUTO]}", variant)
        super().__init__(domain_sizes=domain_sizes, epsilon=epsilon, choice=variant,
                         codebook_seed=codebook_seed)
        self.variant = variant
        A = self.n_attributes
        self.n_bytes = [(k + 7) // 8 for k in self.domain_sizes]
        if variant == AUTO:
            self.chosen = tuple(_auto_rspfd_variant(k, self.epsilon, A)
                                for k in self.domain_sizes)
        else:
            self.chosen = (variant,) * A
        split = [name.partition("-") for name in self.chosen]
        #: per attribute: the oracle of the sampled value and the kind of fake data
        self.bases = [base for base, _, _ in split]
        self.fakes = [fake for _, _, fake in split]
        # one variant for every attribute keeps its name (the audit's channels read them)
        self.base, self.fake = (self.bases[0], self.fakes[0]) if variant != AUTO else (AUTO, AUTO)
        self._unary_parts = [base != "GRR" for base in self.bases]
        self.unary = all(self._unary_parts)
        self.oracles = [self._oracle(ORACLES[base], j, self.epsilon)
                        for j, base in enumerate(self.bases)]
        self._pq = [_symbol_pq(base, self.epsilon, k)
                    for base, k in zip(self.bases, self.domain_sizes)]

    def _layout(self):
        if self.unary:
            return np.uint8, (int(sum(self.n_bytes)),)
        return np.int64, (sum(self._width(j) for j in range(self.n_attributes)),)

    def _oracle_epsilon(self) -> float:
        return self.epsilon

    def _fast_client(self) -> Optional[str]:
        """``"grr"``, ``"zero"`` or ``"random"`` when one variant covers every attribute (the
        compiled client), else ``None`` (``variant="auto"`` mixing GRR and OUE-zero)."""
        if len(set(self.chosen)) != 1:
            return None
        if self.bases[0] == "GRR":
            return "grr"
        return self.fakes[0] if self._unary_kernel_params() is not None else None

    def fake_probability(self, j: int) -> float:
        """``phi``: the probability that attribute ``j``'s fake data supports a given value."""
        p, q = self._pq[j]
        return _fake_probability(self.bases[j], self.fakes[j], p, q, self.domain_sizes[j])

    def hit_probabilities(self, j: int) -> tuple:
        p, q = self._pq[j]
        return _rspfd_hits(p, q, self.fake_probability(j), self.n_attributes)

    def privatize(self, data: Any, *, epsilons: Any = None, identities: Any = None,
                  rng: Any = None) -> np.ndarray:
        """Reports of ``n`` records: the sampled attribute privatized, fake data elsewhere."""
        owner = f"{type(self).__name__}.privatize"
        self._check_epsilons(epsilons, owner)
        fast = self._fast_client()
        if fast is not None:  # one variant everywhere: the compiled client
            x = self._kernel_records(data, owner)
            if identities is not None:
                resolve_identities(identities, x.shape[0], owner)  # checked; no hash uses them
            k0, k1 = self._kernel_key(as_generator(rng, owner))
            nt = resolve_n_threads(self.n_threads, owner)
            if fast == "grr":
                keep = np.array([self._oracle_pq(j)[0] for j in range(self.n_attributes)])
                out, first = kernel.grr_reports(k0, k1, kernel.RSPFD, x, self._sizes_array(),
                                                keep, nt)
            else:
                p, Q = self._unary_kernel_params()
                byte0 = np.concatenate([[0], np.cumsum(self.n_bytes)[:-1]]).astype(np.int64)
                mode = kernel.UE_ZERO if fast == "zero" else kernel.UE_RANDOM
                out, first = kernel.ue_reports(k0, k1, mode, x, self._sizes_array(), p, byte0, Q,
                                               nt)
            return self._kernel_done(out, first, x, owner)
        x = self.check_records(data, owner)
        n = x.shape[0]
        resolve_identities(identities, n, owner)  # checked; no public hash uses them
        gen = as_generator(rng, owner)
        dtype, shape = self._layout()
        out = np.zeros((n, *shape), dtype=dtype)
        sampled = gen.integers(0, self.n_attributes, size=n)
        eps = np.array([self.epsilon])
        start = 0
        for j, k in enumerate(self.domain_sizes):
            real = np.flatnonzero(sampled == j)
            y: np.ndarray
            if self.bases[j] == "GRR":  # a uniform value, GRR's report of the sampled attribute
                y = np.asarray(gen.integers(0, k, size=n))
                y[real] = self.oracles[j].perturb(x[real, j], eps, None, gen)
                out[:, start] = y
                start += 1
                continue
            if self.fakes[j] == "random":  # every row through the oracle: real or uniform values
                values = np.asarray(gen.integers(0, k, size=n))
                values[real] = x[real, j]
                y = self.oracles[j].perturb(values, eps, None, gen)
            else:  # zero: the all-zero vector perturbed (every bit 1 with probability q)
                q = self._pq[j][1]
                y = np.packbits(gen.random((n, k)) < q, axis=1, bitorder="little")
                y[real] = self.oracles[j].perturb(x[real, j], eps, None, gen)
            out[:, start:start + self.n_bytes[j]] = y
            start += self.n_bytes[j]
        return out


def _fake_probability(base: str, fake: str, p: float, q: float, k: int) -> float:
    """``phi``: the probability that RSpFD's fake data of a ``k``-value attribute supports a value."""
    if base == "GRR":
        return 1.0 / k
    if fake == "zero":
        return q
    return (p + (k - 1) * q) / k


def _rspfd_hits(p: float, q: float, phi: float, A: int) -> tuple:
    """``(pi0, pi1)`` of an RSpFD report: a non-holder's and a holder's hit at a value."""
    pi0 = q / A + (A - 1) * phi / A
    return pi0, pi0 + (p - q) / A


def _auto_rspfd_variant(k: int, epsilon: float, A: int) -> str:
    """RSpFD's ``variant="auto"`` for one attribute: GRR or OUE-zero, whichever has the smaller
    variance of a count nobody holds, ``pi0 (1 - pi0) / (pi1 - pi0)^2`` per report.

    These are the two variants multi-freq-ldpy's RS+FD[ADP] chooses between (Arcolezi et al.
    2021, Sec. 3.4); a tie goes to GRR (the smaller report).
    """
    var = {}
    for variant in ("GRR", "OUE-zero"):
        base, _, fake = variant.partition("-")
        p, q = _symbol_pq(base, epsilon, k)
        pi0, pi1 = _rspfd_hits(p, q, _fake_probability(base, fake, p, q, k), A)
        var[variant] = pi0 * (1 - pi0) / (pi1 - pi0) ** 2
    return "GRR" if var["GRR"] <= var["OUE-zero"] * (1 + 1e-12) else "OUE-zero"
