"""Marginal release of binary attributes: the six protocols of Cormode, Kulkarni and Srivastava.

Every user holds ``d`` **binary** attributes (a record in ``{0, 1}^d``);
the server answers the marginal (the table of counts over ``2^t`` cells)
of any set of ``t`` attributes. This is the paper's setting: a
categorical attribute of ``k_j`` values enters as ``ceil(log2 k_j)``
binary attributes (its binary code), and its marginals are then marginals
of those bits. :class:`~fastldp.multidim.CALM` takes categorical
attributes as they are.

============  ===============================================================
class         a user reports
============  ===============================================================
:class:`InpRR`  the one-hot vector of its record (``2^d`` bits), every bit
                through randomized response at ``epsilon / 2``
:class:`InpPS`  its record as one of ``2^d`` symbols through preferential
                sampling (GRR) at ``epsilon``
:class:`InpHT`  one Fourier (Hadamard) coefficient ``(-1)^{<alpha, x>}``,
                ``alpha`` drawn uniformly from the nonzero ``alpha`` of
                weight at most ``k``, through randomized response at
                ``epsilon`` -- the "Fourier approach" baseline of CALM
:class:`MargRR` one of the ``C(d, k)`` ``k``-way marginals, drawn uniformly,
                as the one-hot vector of its ``2^k`` cells, every bit through
                randomized response at ``epsilon / 2``
:class:`MargPS` a drawn ``k``-way marginal's cell through GRR over ``2^k``
:class:`MargHT` a drawn ``k``-way marginal and one of its ``2^k - 1``
                nonzero coefficients, through randomized response
============  ===============================================================

Estimation. A report of a table protocol (RR, PS) about a set of cells
``S`` (``s`` cells) *hits* it with probability ``pi1 = p + (s - 1) q`` when
the user's cell is in ``S`` and ``pi0 = s q`` otherwise, so
``z = (h - pi0) / (pi1 - pi0)`` is unbiased for the indicator; a
Hadamard report ``b`` in ``{-1, +1}`` gives ``b / (2p - 1)``, unbiased for
``(-1)^{<alpha, x>}``, and the marginal of ``T`` is
``n 2^{-t} sum_{alpha <= T} c_alpha (-1)^{<alpha, gamma>}`` (``c_0 = 1``).
A protocol that samples (a marginal, a coefficient) scales the mean of
its ``m`` reporters to ``n``; a marginal of ``t < k`` attributes averages
the projections of every drawn ``k``-way marginal that contains it.

Variances are those of the **i.i.d. record model** (the users' records
independent draws from a distribution, the estimate compared with ``n``
times its marginal): ``n^2 Var[z] / m`` per estimate from ``m`` reporters,
``Var[z] = (f V1 + (1 - f) V0) / (pi1 - pi0)^2 + f (1 - f)`` with ``V1``,
``V0`` a holder's and a non-holder's variance of ``h`` and ``f`` the
(plug-in, clipped) frequency; ``1 / (2p - 1)^2 - c_alpha^2`` for a Hadamard
report. Groups and coefficients are reported by different users, so
their estimates are independent in that model.

References
----------
G. Cormode, T. Kulkarni, D. Srivastava, "Marginal Release Under Local
Differential Privacy", SIGMOD 2018 (Sections 4.1-4.4; InpHT is Section 4.3).
Z. Zhang, T. Wang, N. Li, S. He, J. Chen, "CALM: Consistent Adaptive Local
Marginal for Marginal Release under Local Differential Privacy", CCS 2018
(the Fourier baseline, Section 6).
"""

from __future__ import annotations

import functools
import itertools
import json
import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._random import as_generator, resolve_codebook_seed, resolve_identities
from .._sanitize import SanitizationReport
from .._validation import check_float, check_int, param_error
from ..oracles._sanitizing import classify_integers
from ..protocol import FixedBudgetMembers, ReportSchema
from ..results import PrivacyStatement, Result
from ..streaming import ExactSum, Partial
from ._frequency import _Shown
from ._sanitizing import (SMP_REASONS, partial_sanitization, public_uniforms, report_counts,
                          report_rows, tally)

__all__ = ["InpRR", "InpPS", "InpHT", "MargRR", "MargPS", "MargHT", "MarginalEstimate",
           "MAX_MARGINAL_ORDER"]

#: the largest marginal order ``k`` (the issue's ``t <= 3``)
MAX_MARGINAL_ORDER = 3
#: the most binary attributes (the Marg* and InpHT indices stay small: C(64, 3) = 41,664)
MAX_BINARY_ATTRIBUTES = 64
#: the most binary attributes of the input protocols (InpRR sends 2^d bits, InpPS 2^d symbols)
MAX_INPUT_ATTRIBUTES = 12
EPSILON_MAX = 700.0


# --------------------------------------------------------------------------- cell arithmetic
def cell_index(x: np.ndarray, attributes) -> np.ndarray:
    """The cell of every record in the table of ``attributes`` (the first attribute slowest)."""
    out = np.zeros(x.shape[0], dtype=np.int64)
    for a in attributes:
        out = (out << 1) | x[:, a]
    return out


def project(table: np.ndarray, attributes, onto) -> np.ndarray:
    """The binary table of ``attributes`` (flat) summed onto ``onto``, axes in ``onto``'s order."""
    attributes = list(attributes)
    cube = np.asarray(table, dtype=np.float64).reshape((2,) * len(attributes))
    others = tuple(i for i, a in enumerate(attributes) if a not in onto)
    summed = cube.sum(axis=others) if others else cube
    kept = [a for a in attributes if a in onto]
    return np.transpose(summed, [kept.index(a) for a in onto]) if onto else summed


def _parity_signs(attributes_of_alpha, t_attributes) -> np.ndarray:
    """``(-1)^{<alpha, gamma>}`` for every cell ``gamma`` of ``t_attributes`` (flat, 2^t)."""
    t = len(t_attributes)
    cells = np.arange(1 << t)
    parity = np.zeros(1 << t, dtype=np.int64)
    for a in attributes_of_alpha:
        pos = t - 1 - list(t_attributes).index(a)
        parity ^= (cells >> pos) & 1
    return 1.0 - 2.0 * parity


def _table_variance(kind: str, p: float, q: float, s: int, f: Any) -> Any:
    """``Var[z]`` of one report for a set of ``s`` cells of frequency ``f`` (i.i.d. model)."""
    pi1, pi0 = p + (s - 1) * q, s * q
    if kind == "grr":  # a report hits the set or not: Bernoulli
        v1, v0 = pi1 * (1 - pi1), pi0 * (1 - pi0)
    else:  # independent bits: the set's hits are a sum of s Bernoullis
        v1, v0 = p * (1 - p) + (s - 1) * q * (1 - q), s * q * (1 - q)
    return (f * v1 + (1 - f) * v0) / (pi1 - pi0) ** 2 + f * (1 - f)


@dataclass(frozen=True, repr=False)
class MarginalEstimate(Result):
    """The estimated base tables of a marginal protocol, and the marginal of any attribute set.

    Attributes
    ----------
    counts : numpy.ndarray of float64
        The tables of :attr:`sets`, one after the other, each flat with
        its first attribute slowest (the record's cell
        ``np.ravel_multi_index``).
    variances : numpy.ndarray of float64, same shape
        Their variances (i.i.d. record model; ``inf`` where no report
        was about a table; ``nan`` after CALM's post-processing, which has
        no closed form).
    n : int
    privacy : PrivacyStatement
    sets : tuple of tuple of int
        The attribute sets of the base tables.
    domain_sizes : tuple of int
        Every attribute's domain size (2 for the binary protocols).
    stats : numpy.ndarray of int64
        The integer sufficient statistics (hits and report counts) the
        decode read, from which :meth:`marginal` answers.
    spec : dict
        The mechanism that decoded (``{"mechanism", "params"}``).
    sanitization : SanitizationReport
    """

    _estimate_field = "counts"
    counts: np.ndarray
    variances: np.ndarray
    n: int
    privacy: PrivacyStatement
    sets: tuple
    domain_sizes: tuple
    stats: np.ndarray
    spec: dict
    sanitization: SanitizationReport

    def marginal(self, attributes: Any) -> tuple:
        """The counts of the marginal of ``attributes`` and their variances.

        Parameters
        ----------
        attributes : sequence of distinct int
            The attributes of the marginal, in the order of its axes.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            Both of shape ``[domain_sizes[j] for j in attributes]``.
        """
        mech = _mechanism_of(json.dumps(self.spec, sort_keys=True))
        attrs = mech._check_marginal(attributes, f"{type(self).__name__}.marginal")
        order = sorted(attrs)
        counts, variances = mech._marginal(self, tuple(order))
        shape = [self.domain_sizes[a] for a in order]
        perm = [order.index(a) for a in attrs]
        return (np.transpose(np.asarray(counts, dtype=np.float64).reshape(shape), perm),
                np.transpose(np.asarray(variances, dtype=np.float64).reshape(shape), perm))


_MECHANISMS: dict = {}


@functools.lru_cache(maxsize=16)
def _mechanism_of(spec_json: str) -> Any:
    """The mechanism of a spec (cached: a constructor at d = 64, k = 3 takes a quarter second)."""
    spec = json.loads(spec_json)
    return _MECHANISMS[spec["mechanism"]](**spec["params"])


class _MarginalRelease(FixedBudgetMembers):
    """What the marginal protocols share: records, reports, sanitization, exact partials.

    A subclass sets ``_width`` / ``_dtype`` of a report row and implements
    ``_privatize_rows``, ``_illegal`` (which rows are no legal output),
    ``_public_rows`` (a legal replacement keyed by identity), ``_stats``
    (integer sufficient statistics), ``_tables`` and ``_marginal``.
    """

    _budget_note = "marginal reports have one budget"

    kind = "counts"
    _REASONS = SMP_REASONS
    # set by every protocol: a report row's dtype and width, its oracle's (p, q), the number
    # of indices (marginals, coefficients, groups) and the kind of its table law
    _dtype: Any
    _width: int
    _n_index: int
    _pq: Any
    _law_kind: str
    k: int

    def _privatize_rows(self, x: np.ndarray, gen: np.random.Generator,
                        ids: Optional[np.ndarray] = None) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _illegal(self, values: np.ndarray) -> tuple:  # pragma: no cover - abstract
        """``(bad_index, out_of_range)`` masks of the rows."""
        raise NotImplementedError

    def _public_rows(self, ids: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _stats(self, clean: np.ndarray, ids: Any = None) -> np.ndarray:  # pragma: no cover
        raise NotImplementedError

    def _tables(self, est: Any) -> tuple:  # pragma: no cover - abstract
        """``(sets, counts, variances)`` of the base tables."""
        raise NotImplementedError

    def _marginal(self, est: Any, attrs: tuple) -> tuple:  # pragma: no cover - abstract
        """``(counts, variances)`` (flat) of the marginal of the sorted ``attrs``."""
        raise NotImplementedError

    def __init_subclass__(cls, **kw):
        super().__init_subclass__(**kw)
        if not cls.__name__.startswith("_"):
            _MECHANISMS[cls.__name__] = cls

    def _setup(self, n_attributes, epsilon, k, codebook_seed, max_attributes) -> None:
        owner = type(self).__name__
        self.n_attributes = check_int(n_attributes, "n_attributes", owner, low=1,
                                      high=max_attributes)
        self.epsilon = check_float(epsilon, "epsilon", owner, low=0.0, high=EPSILON_MAX,
                                   high_open=False)
        if k is not None:
            self.k = check_int(k, "k", owner, low=1, high=min(MAX_MARGINAL_ORDER,
                                                               self.n_attributes))
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.domain_sizes = (2,) * self.n_attributes

    # ------------------------------------------------------------ protocol
    @property
    def labels(self) -> Optional[tuple]:
        """``None``: the entries are the cells of the base tables (``sets``), in order."""
        return None

    def stream_params(self) -> dict:
        """The public parameters that rebuild an equivalent server (JSON values)."""
        out = {"n_attributes": self.n_attributes, "epsilon": self.epsilon}
        if hasattr(self, "k"):
            out["k"] = self.k
        out["codebook_seed"] = self.codebook_seed
        return out

    def __repr__(self) -> str:
        inner = ", ".join(f"{k}={v!r}" for k, v in self.stream_params().items())
        return f"{type(self).__name__}({inner})"

    @property
    def report_schema(self) -> ReportSchema:
        """The dtype and shape of one report; every report has the budget ``epsilon``."""
        return ReportSchema(self._dtype, (self._width,), fixed_epsilon=self.epsilon)

    def example_data(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` binary records (int64 ``(n, d)``) with correlated attributes.

        A hidden coin ``z`` per record; attribute ``j`` equals ``z`` with
        probability ``0.6 + 0.3 j / d`` (so pairs of attributes are
        dependent and the marginals are not products).
        """
        n = check_int(n, "n", f"{type(self).__name__}.example_data", low=0)
        d = self.n_attributes
        z = rng.integers(0, 2, n)
        agree = rng.random((n, d)) < 0.6 + 0.3 * np.arange(d) / d
        return np.where(agree, z[:, None], 1 - z[:, None]).astype(np.int64)

    # ------------------------------------------------------------ records
    def check_records(self, records: Any, owner: str) -> np.ndarray:
        """``records`` as int64 ``(n, d)`` of 0s and 1s, or raise naming the first bad entry."""
        d = self.n_attributes
        expected = (f"an integer array of shape (n, {d}) of 0s and 1s (binary attributes, "
                    "the setting of Cormode et al.; encode a categorical attribute as its "
                    "binary code, or use CALM)")
        try:
            arr = np.asarray(records)
        except (TypeError, ValueError):
            raise param_error("records", owner, expected, records, TypeError) from None
        if arr.ndim == 2 and arr.shape[0] == 0:
            arr = arr.astype(np.int64)
        if arr.dtype.kind not in "iub":
            raise param_error("records", owner, expected,
                              _Shown(f"an array of dtype {arr.dtype}"), TypeError)
        if arr.ndim != 2 or arr.shape[1] != d:
            raise param_error("records", owner, expected, _Shown(f"an array of shape {arr.shape}"))
        arr = arr.astype(np.int64)
        bad = (arr < 0) | (arr > 1)
        if bad.any():
            i, j = (int(v) for v in np.argwhere(bad)[0])
            raise param_error("records", owner, expected,
                              _Shown(f"{int(arr[i, j])} at row {i}, attribute {j}"))
        return np.ascontiguousarray(arr)

    def _check_marginal(self, attributes, owner: str) -> list:
        d = self.n_attributes
        try:
            attrs = [check_int(j, "attributes", owner, low=0, high=d - 1) for j in attributes]
        except TypeError:
            raise param_error("attributes", owner, "a sequence of attribute indices",
                              attributes, TypeError) from None
        top = self._max_order()
        if not attrs or len(set(attrs)) != len(attrs) or len(attrs) > top:
            raise param_error("attributes", owner, f"1 to {top} distinct attributes in "
                              f"[0, {d})", attributes)
        return attrs

    def _max_order(self) -> int:
        return getattr(self, "k", self.n_attributes)

    # ------------------------------------------------------------ client
    def privatize(self, data: Any, *, epsilons: Any = None, identities: Any = None,
                  rng: Any = None) -> np.ndarray:
        """Reports of ``n`` binary records (int ``(n, d)``), one row each (see the class)."""
        owner = f"{type(self).__name__}.privatize"
        self._check_epsilons(epsilons, owner)
        x = self.check_records(data, owner)
        ids = resolve_identities(identities, x.shape[0], owner)
        gen = as_generator(rng, owner)
        return self._privatize_rows(x, gen, ids)

    # ------------------------------------------------------------ server
    def sanitize(self, reports: Any, ids: np.ndarray, owner: str) -> tuple:
        """Legal report rows and the count of the replaced ones, by reason.

        A row that is not a legal output (a wrong length, an entry that is
        no integer, an index naming no marginal or coefficient, a value out
        of range) is replaced whole by a public uniform legal report keyed
        by ``(codebook_seed, identity)``, and counted under its first reason.
        """
        expected = f"an array of {np.dtype(self._dtype)} reports of shape (n, {self._width})"
        arr, wrong = report_rows(reports, self._width, owner, expected)
        n = arr.shape[0]
        if n and arr.dtype == self._dtype:  # the schema's integers: no conversion, no copy
            values = arr
            numeric = integral = np.ones(arr.shape, dtype=bool)
            wrong_dtype = False
        elif n:
            values, numeric, integral, wrong_dtype = classify_integers(arr)
        else:
            values = np.zeros((0, self._width), dtype=np.int64)
            numeric = integral = np.ones(values.shape, dtype=bool)
            wrong_dtype = False
        bad_index, out_of_range = self._illegal(values)
        non_numeric = ~numeric.all(axis=1)
        non_integer = ~integral.all(axis=1)
        replace = wrong | non_numeric | non_integer | bad_index | out_of_range
        if replace.any():
            clean = np.where(replace[:, None], 0, values).astype(self._dtype)
            clean[replace] = self._public_rows(ids[replace])
        else:
            clean = np.ascontiguousarray(values, dtype=self._dtype)
        masks = {"wrong_width": wrong, "non_numeric": non_numeric, "non_integer": non_integer,
                 "bad_index": bad_index, "out_of_range": out_of_range}
        return clean, tally(n, masks, self._REASONS, wrong_dtype)

    def partial(self, reports: Any, epsilons: Any = None, identities: Any = None) -> Partial:
        """The exact state of :meth:`estimate`: integer sufficient statistics of the chunk."""
        owner = f"{type(self).__name__}.partial"
        self._check_epsilons(epsilons, owner)
        n = len(reports) if not isinstance(reports, np.ndarray) else reports.shape[0]
        ids = resolve_identities(identities, n, owner)
        clean, report = self.sanitize(reports, ids, owner)
        stats = self._stats(clean, ids)
        total = ExactSum(stats.shape[0])
        total.add(stats.astype(np.float64))  # integers below 2^53: exact
        return Partial(type(self).__name__, self.stream_params(), sums={"stats": total},
                       counts=report_counts(report), flags={"wrong_dtype": report.wrong_dtype})

    def finalize(self, partial: Partial) -> MarginalEstimate:
        """The :class:`MarginalEstimate` of a (merged) partial."""
        self._check_partial(partial, f"{type(self).__name__}.finalize")
        n = int(partial.counts["n"])
        stats = np.rint(partial.sums["stats"].value()).astype(np.int64)
        draft = MarginalEstimate(np.zeros(0), np.zeros(0), n, self.privacy(), (),
                                 self.domain_sizes, stats, self.spec(),
                                 partial_sanitization(partial))
        sets, counts, variances = self._tables(draft)
        return MarginalEstimate(counts, variances, n, self.privacy(), tuple(sets),
                                self.domain_sizes, stats, self.spec(), draft.sanitization)

    def estimate(self, reports: Any, *, epsilons: Any = None,
                 identities: Any = None) -> MarginalEstimate:
        """The base tables and their variances: ``finalize(partial(...))`` exactly."""
        return self.finalize(self.partial(reports, epsilons, identities))



def _rr_pq(eps: float) -> tuple:
    """Randomized response on one bit at ``eps``: keep with ``p``, flip with ``q = 1 - p``."""
    p = 1.0 / (1.0 + math.exp(-eps))
    return p, 1.0 - p


def _grr_pq(eps: float, size: int) -> tuple:
    e = math.exp(eps)
    return e / (e + size - 1), 1.0 / (e + size - 1)


def _grr(cells: np.ndarray, size: int, p: float, gen: np.random.Generator) -> np.ndarray:
    """GRR over ``size`` symbols: keep with ``p``, else a uniform other symbol (vectorized)."""
    n = cells.shape[0]
    keep = gen.random(n) < p
    other = gen.integers(0, size - 1, n) if size > 1 else np.zeros(n, dtype=np.int64)
    other = other + (other >= cells)
    return np.where(keep, cells, other).astype(np.int64)


def _unary(cells: np.ndarray, size: int, p: float, q: float,
           gen: np.random.Generator) -> np.ndarray:
    """One-hot of ``cells`` over ``size`` bits, bit 1 w.p. ``p`` at the cell and ``q`` elsewhere."""
    n = cells.shape[0]
    bits = np.empty((n, size), dtype=np.uint8)
    step = max(1, (1 << 22) // size)  # rows per block: the uniforms of a block stay at 32 MiB
    for start in range(0, n, step):
        stop = min(n, start + step)
        np.less(gen.random((stop - start, size)), q, out=bits[start:stop], casting="unsafe")
    bits[np.arange(n), cells] = gen.random(n) < p
    return bits


def _rr_bits(bits: np.ndarray, p: float, gen: np.random.Generator) -> np.ndarray:
    return np.where(gen.random(bits.shape[0]) < p, bits, 1 - bits).astype(np.int64)


# --------------------------------------------------------------------------- input perturbation
class _InputTable(_MarginalRelease):
    """InpRR and InpPS: the whole record's cell of ``2^d``; any marginal is a sum of cells."""

    _law_kind: str

    def _tables(self, est) -> tuple:
        sets = [tuple(range(self.n_attributes))]
        counts, variances = self._marginal(est, sets[0])
        return sets, np.ravel(counts), np.ravel(variances)

    def _marginal(self, est, attrs: tuple) -> tuple:
        d, n = self.n_attributes, est.n
        hits = est.stats.astype(np.float64)
        p, q = self._pq
        joint = (hits - n * q) / (p - q)
        counts = np.ravel(project(joint, range(d), list(attrs)))
        s = 1 << (d - len(attrs))
        f = np.clip(counts / max(n, 1), 0.0, 1.0)
        variances = n * _table_variance(self._law_kind, p, q, s, f)
        return counts, variances


class InpRR(_InputTable):
    """Input perturbation by randomized response: the record's one-hot vector, bit by bit.

    Each user holds ``d`` binary attributes; the ``2^d``-bit one-hot vector
    of its record goes out with every bit through randomized response at
    ``epsilon / 2`` (two bits differ between any two records, so the report
    is ``epsilon``-LDP). The server estimates every joint cell and sums
    cells into any marginal (Cormode et al. 2018, Section 4.1).

    Parameters
    ----------
    n_attributes : int in [1, 12]
        ``d``; a report has ``2^d`` bits.
    epsilon : float in (0, 700]
    codebook_seed : int or None
        Public seed of the replacements of malformed reports.

    Notes
    -----
    Reports: uint8 ``(n, 2^d)``, one 0/1 entry per cell (the record's
    cell ``np.ravel_multi_index(x, (2,) * d)``).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.multidim import InpRR
    >>> mech = InpRR(n_attributes=4, epsilon=2.0, codebook_seed=0)
    >>> x = mech.example_data(2_000, np.random.default_rng(0))
    >>> counts, variances = mech.estimate(mech.privatize(x, rng=1)).marginal([2, 0])
    >>> counts.shape
    (2, 2)
    """

    _dtype = np.dtype(np.uint8)
    _law_kind = "unary"

    def __init__(self, *, n_attributes: int, epsilon: float,
                 codebook_seed: Optional[int] = None) -> None:
        self._setup(n_attributes, epsilon, None, codebook_seed, MAX_INPUT_ATTRIBUTES)
        self._width = 1 << self.n_attributes
        self._pq = _rr_pq(self.epsilon / 2)

    def _privatize_rows(self, x, gen, ids=None):
        p, q = self._pq
        return _unary(cell_index(x, range(self.n_attributes)), self._width, p, q, gen)

    def _illegal(self, values):
        return (np.zeros(values.shape[0], dtype=bool),
                ((values < 0) | (values > 1)).any(axis=1))

    def _public_rows(self, ids):
        return (public_uniforms(self.codebook_seed, ids, self._width) < 0.5).astype(np.int64)

    def _stats(self, clean, ids=None):
        return clean.sum(axis=0, dtype=np.int64)


class InpPS(_InputTable):
    """Input perturbation by preferential sampling: the record as one of ``2^d`` symbols via GRR.

    The user's cell is kept with probability ``e^eps / (e^eps + 2^d - 1)``
    and otherwise replaced by a uniform other cell (Cormode et al. 2018,
    Section 4.2; GRR over the cross product of the binary attributes).

    Parameters
    ----------
    n_attributes : int in [1, 12]
    epsilon : float in (0, 700]
    codebook_seed : int or None

    Notes
    -----
    Reports: int64 ``(n, 1)``, the reported cell.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.multidim import InpPS
    >>> mech = InpPS(n_attributes=3, epsilon=3.0, codebook_seed=0)
    >>> est = mech.estimate(mech.privatize(mech.example_data(1_000, np.random.default_rng(0)),
    ...                                    rng=1))
    >>> est.marginal([1])[0].shape
    (2,)
    """

    _dtype = np.dtype(np.int64)
    _width = 1
    _law_kind = "grr"

    def __init__(self, *, n_attributes: int, epsilon: float,
                 codebook_seed: Optional[int] = None) -> None:
        self._setup(n_attributes, epsilon, None, codebook_seed, MAX_INPUT_ATTRIBUTES)
        self._size = 1 << self.n_attributes
        self._pq = _grr_pq(self.epsilon, self._size)

    def _privatize_rows(self, x, gen, ids=None):
        cells = cell_index(x, range(self.n_attributes))
        return _grr(cells, self._size, self._pq[0], gen)[:, None]

    def _illegal(self, values):
        col = values[:, 0]
        return np.zeros(values.shape[0], dtype=bool), (col < 0) | (col >= self._size)

    def _public_rows(self, ids):
        u = public_uniforms(self.codebook_seed, ids, 1)[:, 0]
        return np.minimum((u * self._size).astype(np.int64), self._size - 1)[:, None]

    def _stats(self, clean, ids=None):
        return np.bincount(clean[:, 0], minlength=self._size).astype(np.int64)


# --------------------------------------------------------------------------- Hadamard
def _coefficients(d: int, k: int) -> list:
    """The nonzero ``alpha`` of weight at most ``k``, as attribute tuples (by weight, then lex)."""
    return [c for w in range(1, k + 1) for c in itertools.combinations(range(d), w)]


class _Sampled(_MarginalRelease):
    """Protocols whose report starts with a drawn index (of a marginal or a coefficient)."""

    _dtype = np.dtype(np.int64)

    def _public_index_and(self, ids, n_values: int) -> tuple:
        u = public_uniforms(self.codebook_seed, ids, 2)
        index = np.minimum((u[:, 0] * self._n_index).astype(np.int64), self._n_index - 1)
        value = np.minimum((u[:, 1] * n_values).astype(np.int64), n_values - 1)
        return index, value


class _Hadamard(_Sampled):
    """InpHT and MargHT: ``(index, bit)`` reports of one coefficient through randomized response."""

    _width = 2

    def _privatize_rows(self, x, gen, ids=None):
        n = x.shape[0]
        index = gen.integers(0, self._n_index, n) if n else np.zeros(0, dtype=np.int64)
        members = self._members[index]  # (n, k) attributes of each user's alpha, -1 padded
        parity = np.zeros(n, dtype=np.int64)
        for c in range(members.shape[1]):
            col = members[:, c]
            parity ^= np.where(col >= 0, x[np.arange(n), np.maximum(col, 0)], 0)
        plus = 1 - parity  # bit 1: (-1)^{<alpha, x>} = +1
        return np.stack([index, _rr_bits(plus, self._pq[0], gen)], axis=1)

    def _illegal(self, values):
        idx, bit = values[:, 0], values[:, 1]
        bad_index = (idx < 0) | (idx >= self._n_index)
        return bad_index, ~bad_index & ((bit < 0) | (bit > 1))

    def _public_rows(self, ids):
        index, value = self._public_index_and(ids, 2)
        return np.stack([index, value], axis=1)

    def _stats(self, clean, ids=None):
        m = np.bincount(clean[:, 0], minlength=self._n_index)
        plus = np.bincount(clean[:, 0], weights=clean[:, 1], minlength=self._n_index)
        return np.concatenate([m, np.rint(plus)]).astype(np.int64)

    def _coefficient_estimates(self, est) -> tuple:
        """``c_alpha`` and ``Var[c_alpha]`` of every index (0 and inf where nobody reported)."""
        m = est.stats[:self._n_index].astype(np.float64)
        plus = est.stats[self._n_index:].astype(np.float64)
        gap = 2 * self._pq[0] - 1
        with np.errstate(divide="ignore", invalid="ignore"):
            c = np.where(m > 0, (2 * plus - m) / np.maximum(m, 1) / gap, 0.0)
            var = np.where(m > 0, (1 / gap**2 - np.clip(c, -1, 1) ** 2) / np.maximum(m, 1),
                           np.inf)
        return c, var

    _empty_is_zero = False

    def _coefficient_rows(self) -> np.ndarray:  # pragma: no cover - abstract
        """``(C(d, k), 2^k - 1)``: the index of coefficient ``mask`` of every ``k``-set."""
        raise NotImplementedError

    def _tables(self, est) -> tuple:
        """Every ``k``-way table at once: ``n 2^-k (1 + C H)``, ``H`` the sign matrix."""
        sets = list(itertools.combinations(range(self.n_attributes), self.k))
        cells = 1 << self.k
        c, var = self._coefficient_estimates(est)
        rows = self._coefficient_rows()
        masks = np.arange(1, cells)[:, None] & np.arange(cells)[None, :]
        parity = np.zeros(masks.shape, dtype=np.int64)
        for bit in range(self.k):
            parity ^= (masks >> bit) & 1
        signs = 1.0 - 2.0 * parity  # (2^k - 1, 2^k): (-1)^{<mask, gamma>}
        scale = est.n / cells
        counts = scale * (1.0 + c[rows] @ signs)
        variance = scale**2 * var[rows].sum(axis=1, keepdims=True)
        if self._empty_is_zero:  # MargHT: a marginal with a coefficient nobody reported
            counts[~np.isfinite(variance[:, 0])] = 0.0
        return sets, counts.ravel(), np.repeat(variance, cells, axis=1).ravel()

    def _from_coefficients(self, n, attrs, alphas, c, var) -> tuple:
        """The marginal of ``attrs`` from ``c_alpha`` (``alphas``: their attribute tuples)."""
        t = len(attrs)
        cells = np.ones(1 << t)
        variance = np.zeros(1 << t)
        for alpha, ca, va in zip(alphas, c, var):
            signs = _parity_signs(alpha, attrs)
            cells = cells + ca * signs
            variance = variance + va
        scale = n / (1 << t)
        return scale * cells, scale**2 * variance


class InpHT(_Hadamard):
    """The Fourier (Hadamard) approach: one sampled coefficient of weight at most ``k``.

    Each user draws ``alpha`` uniformly from the nonzero subsets of at most
    ``k`` of the ``d`` binary attributes and reports
    ``(-1)^{<alpha, x>}`` through randomized response at ``epsilon`` with
    the index of ``alpha`` (Cormode et al. 2018, Section 4.3, "InpHT"; the
    Fourier baseline CALM compares, Zhang et al. 2018). The marginal of any
    ``t <= k`` attributes is
    ``n 2^{-t} (1 + sum_{0 != alpha <= T} c_alpha (-1)^{<alpha, gamma>})``.

    Parameters
    ----------
    n_attributes : int in [1, 64]
    epsilon : float in (0, 700]
    k : int in [1, 3]
        The largest marginal the server answers.
    codebook_seed : int or None

    Notes
    -----
    Reports: int64 ``(n, 2)``, ``(index of alpha, bit)`` with bit 1 for
    ``+1``. The estimate's ``counts`` are the ``k``-way marginals of every
    ``k`` attributes (``sets``).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.multidim import InpHT
    >>> mech = InpHT(n_attributes=6, epsilon=2.0, k=2, codebook_seed=0)
    >>> est = mech.estimate(mech.privatize(mech.example_data(5_000, np.random.default_rng(0)),
    ...                                    rng=1))
    >>> est.marginal([4, 1])[0].shape
    (2, 2)
    """

    def __init__(self, *, n_attributes: int, epsilon: float, k: int = 2,
                 codebook_seed: Optional[int] = None) -> None:
        self._setup(n_attributes, epsilon, k, codebook_seed, MAX_BINARY_ATTRIBUTES)
        self.alphas = _coefficients(self.n_attributes, self.k)
        self._position = {a: i for i, a in enumerate(self.alphas)}
        self._n_index = len(self.alphas)
        self._members = np.full((self._n_index, self.k), -1, dtype=np.int64)
        for i, a in enumerate(self.alphas):
            self._members[i, :len(a)] = a
        self._pq = _rr_pq(self.epsilon)
        self._rows: Optional[np.ndarray] = None

    def _coefficient_rows(self) -> np.ndarray:
        if self._rows is None:
            self._rows = np.array(
                [[self._position[tuple(a for i, a in enumerate(beta)
                                       if mask >> (self.k - 1 - i) & 1)]
                  for mask in range(1, 1 << self.k)]
                 for beta in itertools.combinations(range(self.n_attributes), self.k)],
                dtype=np.int64).reshape(-1, (1 << self.k) - 1)
        return self._rows

    def _marginal(self, est, attrs: tuple) -> tuple:
        c, var = self._coefficient_estimates(est)
        alphas = [a for w in range(1, len(attrs) + 1) for a in itertools.combinations(attrs, w)]
        rows = [self._position[a] for a in alphas]
        return self._from_coefficients(est.n, attrs, alphas, c[rows], var[rows])


# --------------------------------------------------------------------------- marginal perturbation
class _Marginals(_Sampled):
    """MargRR, MargPS, MargHT: a user reports about one of the ``C(d, k)`` ``k``-way marginals."""

    def _setup_marginals(self) -> None:
        self.sets = list(itertools.combinations(range(self.n_attributes), self.k))
        self._cells = 1 << self.k

    def _containing(self, attrs) -> list:
        return [b for b, s in enumerate(self.sets) if set(attrs) <= set(s)]



class _MargTable(_Marginals):
    """MargRR and MargPS: a drawn marginal's cell through a table oracle."""

    def _tables(self, est) -> tuple:
        """Every drawn marginal's table at once (``n / m_b`` times its group's estimate)."""
        M, C, n = len(self.sets), self._cells, est.n
        m = est.stats[:M].astype(np.float64)[:, None]
        hits = est.stats[M:].reshape(M, C).astype(np.float64)
        p, q = self._pq
        with np.errstate(divide="ignore", invalid="ignore"):
            counts = np.where(m > 0, (hits - m * q) / (p - q) * (n / np.maximum(m, 1)), 0.0)
            f = np.clip(counts / max(n, 1), 0.0, 1.0)
            variances = np.where(m > 0, n**2 * _table_variance(self._law_kind, p, q, 1, f)
                                 / np.maximum(m, 1), np.inf)
        return list(self.sets), counts.ravel(), variances.ravel()

    def _stats(self, clean, ids=None):
        M, C = len(self.sets), self._cells
        m = np.bincount(clean[:, 0], minlength=M)
        return np.concatenate([m, self._cell_hits(clean).ravel()]).astype(np.int64)

    def _marginal(self, est, attrs: tuple) -> tuple:
        M, C, n = len(self.sets), self._cells, est.n
        m = est.stats[:M].astype(np.float64)
        hits = est.stats[M:].reshape(M, C).astype(np.float64)
        p, q = self._pq
        s = 1 << (self.k - len(attrs))
        total = np.zeros(1 << len(attrs))
        variance = np.zeros(1 << len(attrs))
        used = 0
        for b in self._containing(attrs):
            if m[b] == 0:
                continue
            table = (hits[b] - m[b] * q) / (p - q) * (n / m[b])
            proj = np.ravel(project(table, self.sets[b], list(attrs)))
            f = np.clip(proj / max(n, 1), 0.0, 1.0)
            total += proj
            variance += n**2 * _table_variance(self._law_kind, p, q, s, f) / m[b]
            used += 1
        if used == 0:
            return total, np.full(total.shape, np.inf)
        return total / used, variance / used**2


class MargPS(_MargTable):
    """Marginal perturbation by preferential sampling: a drawn ``k``-way marginal's cell via GRR.

    Each user draws one of the ``C(d, k)`` sets of ``k`` binary attributes
    uniformly and reports its record's cell of that marginal through GRR
    over ``2^k`` cells at ``epsilon``, with the set's index (Cormode et al.
    2018, Section 4.4). A marginal of ``t < k`` attributes averages the
    projections of the ``k``-way marginals that contain it.

    Parameters
    ----------
    n_attributes : int in [k, 64]
    epsilon : float in (0, 700]
    k : int in [1, 3]
    codebook_seed : int or None

    Notes
    -----
    Reports: int64 ``(n, 2)``, ``(index of the set, reported cell)``.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.multidim import MargPS
    >>> mech = MargPS(n_attributes=5, epsilon=2.0, k=2, codebook_seed=0)
    >>> est = mech.estimate(mech.privatize(mech.example_data(5_000, np.random.default_rng(0)),
    ...                                    rng=1))
    >>> est.marginal([3])[0].shape
    (2,)
    """

    _width = 2
    _law_kind = "grr"

    def __init__(self, *, n_attributes: int, epsilon: float, k: int = 2,
                 codebook_seed: Optional[int] = None) -> None:
        self._setup(n_attributes, epsilon, k, codebook_seed, MAX_BINARY_ATTRIBUTES)
        self._setup_marginals()
        self._n_index = len(self.sets)
        self._members = np.array(self.sets, dtype=np.int64)
        self._pq = _grr_pq(self.epsilon, self._cells)

    def _privatize_rows(self, x, gen, ids=None):
        n = x.shape[0]
        index = gen.integers(0, self._n_index, n) if n else np.zeros(0, dtype=np.int64)
        cells = _member_cells(x, self._members[index])
        return np.stack([index, _grr(cells, self._cells, self._pq[0], gen)], axis=1)

    def _illegal(self, values):
        idx, cell = values[:, 0], values[:, 1]
        bad_index = (idx < 0) | (idx >= self._n_index)
        return bad_index, ~bad_index & ((cell < 0) | (cell >= self._cells))

    def _public_rows(self, ids):
        return np.stack(self._public_index_and(ids, self._cells), axis=1)

    def _cell_hits(self, clean):
        flat = clean[:, 0] * self._cells + clean[:, 1]
        return np.bincount(flat, minlength=self._n_index * self._cells)


class MargRR(_MargTable):
    """Marginal perturbation by randomized response: a drawn marginal's one-hot cells, bit by bit.

    Each user draws one of the ``C(d, k)`` sets of ``k`` binary attributes
    uniformly and reports the ``2^k``-bit one-hot vector of its cell with
    every bit through randomized response at ``epsilon / 2``, with the
    set's index (Cormode et al. 2018, Section 4.4).

    Parameters
    ----------
    n_attributes : int in [k, 64]
    epsilon : float in (0, 700]
    k : int in [1, 3]
    codebook_seed : int or None

    Notes
    -----
    Reports: int64 ``(n, 1 + 2^k)``, the set's index, then the bits.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.multidim import MargRR
    >>> mech = MargRR(n_attributes=4, epsilon=2.0, k=3, codebook_seed=0)
    >>> est = mech.estimate(mech.privatize(mech.example_data(5_000, np.random.default_rng(0)),
    ...                                    rng=1))
    >>> est.marginal([0, 1, 3])[0].shape
    (2, 2, 2)
    """

    _law_kind = "unary"

    def __init__(self, *, n_attributes: int, epsilon: float, k: int = 2,
                 codebook_seed: Optional[int] = None) -> None:
        self._setup(n_attributes, epsilon, k, codebook_seed, MAX_BINARY_ATTRIBUTES)
        self._setup_marginals()
        self._n_index = len(self.sets)
        self._members = np.array(self.sets, dtype=np.int64)
        self._width = 1 + self._cells
        self._pq = _rr_pq(self.epsilon / 2)

    def _privatize_rows(self, x, gen, ids=None):
        n = x.shape[0]
        index = gen.integers(0, self._n_index, n) if n else np.zeros(0, dtype=np.int64)
        cells = _member_cells(x, self._members[index])
        bits = _unary(cells, self._cells, self._pq[0], self._pq[1], gen)
        return np.concatenate([index[:, None], bits.astype(np.int64)], axis=1)

    def _illegal(self, values):
        idx = values[:, 0]
        bad_index = (idx < 0) | (idx >= self._n_index)
        return bad_index, ~bad_index & ((values[:, 1:] < 0) | (values[:, 1:] > 1)).any(axis=1)

    def _public_rows(self, ids):
        index, _ = self._public_index_and(ids, 2)
        bits = public_uniforms(self.codebook_seed ^ 0x5A5A5A5A, ids, self._cells) < 0.5
        return np.concatenate([index[:, None], bits.astype(np.int64)], axis=1)

    def _cell_hits(self, clean):
        out = np.zeros((self._n_index, self._cells), dtype=np.int64)
        np.add.at(out, clean[:, 0], clean[:, 1:])
        return out


def _member_cells(x: np.ndarray, members: np.ndarray) -> np.ndarray:
    """Each record's cell of its own set of attributes (``members``: (n, k), first slowest)."""
    n = x.shape[0]
    rows = np.arange(n)
    cells = np.zeros(n, dtype=np.int64)
    for c in range(members.shape[1]):
        cells = (cells << 1) | x[rows, members[:, c]]
    return cells


class MargHT(_Hadamard, _Marginals):
    """Marginal perturbation by Hadamard: a drawn marginal and one of its nonzero coefficients.

    Each user draws one of the ``C(d, k)`` sets ``beta`` of ``k`` binary
    attributes and one of its ``2^k - 1`` nonzero subsets ``alpha``, both
    uniformly, and reports ``(-1)^{<alpha, x>}`` through randomized
    response at ``epsilon`` with the index of ``(beta, alpha)`` (Cormode et
    al. 2018, Section 4.4). The marginal of ``T`` within ``beta`` comes
    from the coefficients ``alpha <= T`` estimated by ``beta``'s users; a
    marginal of ``t < k`` attributes averages over the ``beta`` containing it.

    Parameters
    ----------
    n_attributes : int in [k, 64]
    epsilon : float in (0, 700]
    k : int in [1, 3]
    codebook_seed : int or None

    Notes
    -----
    Reports: int64 ``(n, 2)``, ``(beta (2^k - 1) + alpha - 1, bit)``, with
    ``alpha`` a bit mask over ``beta``'s attributes (the first the highest
    bit) and bit 1 for ``+1``.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.multidim import MargHT
    >>> mech = MargHT(n_attributes=4, epsilon=2.0, k=2, codebook_seed=0)
    >>> est = mech.estimate(mech.privatize(mech.example_data(5_000, np.random.default_rng(0)),
    ...                                    rng=1))
    >>> est.marginal([2, 3])[0].shape
    (2, 2)
    """

    def __init__(self, *, n_attributes: int, epsilon: float, k: int = 2,
                 codebook_seed: Optional[int] = None) -> None:
        self._setup(n_attributes, epsilon, k, codebook_seed, MAX_BINARY_ATTRIBUTES)
        self._setup_marginals()
        per = self._cells - 1
        self._n_index = len(self.sets) * per
        self._members = np.full((self._n_index, self.k), -1, dtype=np.int64)
        self.alphas = []
        for b, beta in enumerate(self.sets):
            for mask in range(1, self._cells):
                alpha = tuple(a for i, a in enumerate(beta) if mask >> (self.k - 1 - i) & 1)
                self._members[b * per + mask - 1, :len(alpha)] = alpha
                self.alphas.append(alpha)
        self._pq = _rr_pq(self.epsilon)

    _empty_is_zero = True

    def _coefficient_rows(self) -> np.ndarray:
        return np.arange(self._n_index, dtype=np.int64).reshape(len(self.sets), -1)

    def _marginal(self, est, attrs: tuple) -> tuple:
        c, var = self._coefficient_estimates(est)
        per = self._cells - 1
        alphas = [a for w in range(1, len(attrs) + 1) for a in itertools.combinations(attrs, w)]
        total = np.zeros(1 << len(attrs))
        variance = np.zeros(1 << len(attrs))
        used = 0
        for b in self._containing(attrs):
            rows = [b * per + self.alphas[b * per:(b + 1) * per].index(a) for a in alphas]
            if not np.all(np.isfinite(var[rows])):
                continue
            counts, v = self._from_coefficients(est.n, attrs, alphas, c[rows], var[rows])
            total += counts
            variance += v
            used += 1
        if used == 0:
            return total, np.full(total.shape, np.inf)
        return total / used, variance / used**2
