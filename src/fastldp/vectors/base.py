"""Sparse numerical vectors and what the sparse-vector mechanisms share (paper 001).

Each user ``i`` holds ``x_i in [-1, 1]^d`` with at most ``m`` stored entries
(its items, or keys). :class:`SparseVectors` keeps them in CSR form; a stored
entry may hold the value 0 (an item the user has, with value 0: paper 001's
Clothing data maps 'small' and 'large' to 0), and every mechanism counts it as
one of the user's items. The target of estimation is always the sample mean
``mu = (1 / n) sum_i x_i`` (section 3.1).

Also here: randomized rounding to signs (Eq. (35)), sanitization of received
real-valued, ternary and symbol reports (never raising on packet contents),
and the shape check of report arrays.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Any, Optional, Sequence, Union

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from .._kernels._hash import SANITIZE_STREAM, hash_words
from .._kernels._sketch import FIXED_MAX_N, fixed_sketch
from .._random import as_generator
from .._validation import check_csr_structure, check_float, check_int, param_error, resolve_alias
from .._sanitize import SanitizationReport, sanitization_counts, sanitization_report
from ..results import PrivacyStatement, Result
from ..streaming import ExactSum, Partial, check_partial
from ._protocol import VectorProtocol

__all__ = [
    "SparseVectors",
    "SparseMeanEstimate",
    "as_sparse_vectors",
    "round_to_signs",
    "sanitize_real",
    "sanitize_ternary",
    "sanitize_symbols",
    "report_array",
    "add_sign_sketch",
    "StreamingServer",
    "plug_in_variances",
    "exact_squares",
    "items_alias",
    "VectorsLike",
    "RngLike",
    "ClipLike",
]

#: What ``x`` may be: :class:`SparseVectors`, a scipy.sparse matrix ``(n, d)``
#: (stored zeros are items with value 0) or a dense ``(n, d)`` array.
VectorsLike = Any
#: What ``rng`` may be: ``None`` (OS entropy), an int, a SeedSequence or a Generator.
RngLike = Union[None, int, np.random.SeedSequence, np.random.Generator]
#: What ``clip_estimate`` may be: ``None``, ``"frequency"``, ``"mean"`` or ``(low, high)``.
ClipLike = Union[None, str, Sequence[float]]


@dataclass(frozen=True)
class SparseVectors:
    """``n`` sparse vectors of length ``d`` in CSR form.

    Attributes
    ----------
    indptr : int64 array, shape (n + 1,)
    indices : int64 array, shape (nnz,)
        Coordinates of the stored entries, strictly increasing within a row.
    values : float64 array, shape (nnz,)
        Their values, all in ``[-1, 1]``; a stored 0 is an item with value 0.
    d : int
        Dimension.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.vectors import as_sparse_vectors
    >>> x = as_sparse_vectors(np.array([[1.0, 0, -0.5], [0, 0, 1.0]]), d=3, owner="example")
    >>> x.n, x.sizes.tolist(), x.mean().tolist()
    (2, [2, 1], [0.5, 0.0, 0.25])
    """

    indptr: np.ndarray
    indices: np.ndarray
    values: np.ndarray
    d: int

    @property
    def n(self) -> int:
        return int(self.indptr.shape[0] - 1)

    @property
    def sizes(self) -> np.ndarray:
        """Stored entries (items) per user."""
        return np.diff(self.indptr)

    @property
    def max_items(self) -> int:
        return int(self.sizes.max()) if self.n else 0

    @property
    def rows(self) -> np.ndarray:
        """The user of each stored entry (int64, shape (nnz,))."""
        return np.repeat(np.arange(self.n, dtype=np.int64), self.sizes)

    def mean(self) -> np.ndarray:
        """The sample mean ``mu = (1 / n) sum_i x_i`` (float64, shape (d,))."""
        total = np.bincount(self.indices, weights=self.values, minlength=self.d)
        return total / max(self.n, 1)

    def frequencies(self) -> np.ndarray:
        """Fraction of users holding each item (stored entries, whatever the value)."""
        return np.bincount(self.indices, minlength=self.d) / max(self.n, 1)

    def to_scipy(self) -> sp.csr_matrix:
        return sp.csr_matrix((self.values, self.indices, self.indptr), shape=(self.n, self.d))

    def to_dense(self) -> np.ndarray:
        out = np.zeros((self.n, self.d))
        out[self.rows, self.indices] = self.values
        return out

    def subset(self, users: ArrayLike) -> "SparseVectors":
        """The vectors of ``users`` (an index array), in that order."""
        users = np.asarray(users, dtype=np.int64)
        starts, stops = self.indptr[users], self.indptr[users + 1]
        sizes = stops - starts
        indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
        take = np.repeat(starts - indptr[:-1], sizes) + np.arange(indptr[-1])
        return SparseVectors(indptr, self.indices[take], self.values[take], self.d)


@dataclass(frozen=True, repr=False)
class SparseMeanEstimate(Result):
    """What a sparse-vector baseline's ``estimate`` returns, on the shared result base.

    Attributes
    ----------
    mean : float64 array, shape (d,)
        The estimate of ``mu``, clipped to the feasible range when the
        mechanism was built with ``clip_estimate`` (paper 001, section 8.1);
        also :attr:`estimate`.
    raw : float64 array, shape (d,)
        The estimator as published, before that clipping.
    sanitization : SanitizationReport
        Counts of malformed report entries.
    n : int
        The number of reports (users).
    privacy : fastldp.results.PrivacyStatement
        ``epsilon``-LDP per user (a user's whole vector).
    variances : float64 array, shape (d,), or None
        The plug-in variance of each entry of :attr:`raw`, from the reports
        (see the mechanism's ``estimate``); ``None`` where the estimator
        is not linear in the reports (PrivKVM). Clipping is 1-Lipschitz, so
        it is also an upper bound on the variance of a clipped :attr:`mean`.
    details : dict
        Method-specific by-products (e.g. PCKV's key frequencies).
    seconds : dict
        Wall-clock seconds of the aggregation steps.

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.PCKVUE(d=4, m=1, epsilon=2.0)
    >>> x = np.zeros((500, 4)); x[:, 0] = 1.0
    >>> est = mech.estimate(mech.privatize(x, rng=0))
    >>> est.estimate is est.mean, est.n, est.std.shape
    (True, 500, (4,))
    """

    _estimate_field = "mean"

    mean: np.ndarray
    raw: np.ndarray
    sanitization: SanitizationReport
    n: int = 0
    privacy: Optional[PrivacyStatement] = None
    variances: Optional[np.ndarray] = None
    details: dict = field(default_factory=dict)
    seconds: dict = field(default_factory=dict)


def items_alias(owner: str, m, items_per_user):
    """``m`` under its paper name or under ``items_per_user``, the name every family shares.

    One of the two must be given (a ``TypeError`` otherwise, as for any
    missing argument), not both (a ``ValueError``): ``fastldp._validation.resolve_alias``.
    """
    return resolve_alias(owner, "m", m, "items_per_user", items_per_user)


def plug_in_variances(square_sums, raw: np.ndarray, n: int) -> np.ndarray:
    """The plug-in variance of a mean of independent per-user terms, from the terms' squares.

    A linear sparse-vector estimator is ``mu_hat_j = (1/n) sum_i T_ij`` with
    ``T_ij`` independent across users and ``E[T_ij] = x_i(j)``, so
    ``Var(mu_hat_j) = (sum_i E[T_ij^2] - sum_i x_i(j)^2) / n^2``. The reports
    give ``sum_i T_ij^2`` (``square_sums``, unbiased for the first sum); the
    second, ``n s_j`` with ``s_j = (1/n) sum_i x_i(j)^2``, is not identified
    by the reports and is taken as ``n min(|mu_hat_j|, 1)``. That is exact in
    expectation for frequency (``{0, 1}``) data, where ``x^2 = x``, and for
    coordinates whose values share one sign and lie in ``{-1, 0, 1}``
    (the default of :meth:`fastldp.vectors.RPC.variance`); with mixed signs
    ``s_j >= |mu_j|`` and the plug-in is conservative; for general values in
    ``[-1, 1]`` it errs by ``(|mu_j| - s_j) / n``, at most ``1 / (4n)``. The
    result is clipped at 0.

    Parameters
    ----------
    square_sums : float or float64 array, shape (d,)
        ``sum_i T_ij^2`` (a scalar when it is the same for every ``j``).
    raw : float64 array, shape (d,)
        The unclipped estimate ``mu_hat``.
    n : int
        The number of users.
    """
    s = np.minimum(np.abs(raw), 1.0)
    with np.errstate(over="ignore", invalid="ignore"):
        var = (np.asarray(square_sums, dtype=np.float64) / n - s) / n
    return np.maximum(np.broadcast_to(var, raw.shape), 0.0)


def exact_squares(values: np.ndarray) -> np.ndarray:
    """``values ** 2`` with overflow capped at the largest double (never raises).

    Each square is rounded once, so their exact sum does not depend on how
    the reports are split; a report large enough to overflow (a hostile
    Laplace report) keeps the sum finite but enormous.
    """
    with np.errstate(over="ignore"):
        sq = np.square(np.asarray(values, dtype=np.float64))
    return np.minimum(sq, np.finfo(np.float64).max)


def _from_csr(csr: sp.csr_matrix, d: int, owner: str) -> SparseVectors:
    csr = sp.csr_matrix(csr, dtype=np.float64, copy=True)
    if csr.shape[1] != d:
        raise ValueError(
            f"The 'x' parameter of {owner} must have d = {d} columns. "
            f"Got a matrix of shape {csr.shape} instead."
        )
    check_csr_structure(csr, d, "x", owner)
    if not csr.has_canonical_format:
        csr.sum_duplicates()
    csr.sort_indices()
    return SparseVectors(
        csr.indptr.astype(np.int64), csr.indices.astype(np.int64),
        np.asarray(csr.data, dtype=np.float64), d,
    )


def as_sparse_vectors(x, *, d: int, owner: str, m=None, ternary: bool = False) -> SparseVectors:
    """Validate ``x`` and return it as :class:`SparseVectors`.

    Parameters
    ----------
    x : SparseVectors, scipy.sparse matrix (n, d) or 2-d array (n, d)
        A sparse matrix keeps explicitly stored zeros as items with value 0;
        a dense array holds exactly its non-zero entries.
    d : int
    owner : str
        Name used in error messages.
    m : int, optional
        When given, every user must hold at most ``m`` items.
    ternary : bool
        Require values in ``{-1, 0, 1}``.

    Raises
    ------
    ValueError
        On a wrong shape, a value outside ``[-1, 1]`` (or NaN), a non-ternary
        value when ``ternary``, or a user with more than ``m`` items.
    """
    if isinstance(x, SparseVectors):
        if x.d != d:
            raise ValueError(
                f"The 'x' parameter of {owner} must have dimension d = {d}. Got d = {x.d} instead."
            )
        ip, idx = np.asarray(x.indptr), np.asarray(x.indices)
        ok = (ip.ndim == 1 and ip.size >= 1 and ip[0] == 0 and ip[-1] == idx.size
              and idx.size == np.asarray(x.values).size and bool(np.all(np.diff(ip) >= 0)))
        if ok and idx.size:
            inner = np.ones(idx.size, dtype=bool)
            inner[ip[1:-1][ip[1:-1] < idx.size]] = False  # first entry of each later row
            ok = bool(idx.min() >= 0 and idx.max() < d and np.all(np.diff(idx)[inner[1:]] > 0))
        if not ok:
            raise ValueError(
                f"The 'x' parameter of {owner} must be a valid CSR SparseVectors: indptr from 0 "
                f"to nnz, coordinates in [0, {d}) strictly increasing within each user. "
                "Got an inconsistent SparseVectors instead.")
        vecs = SparseVectors(ip.astype(np.int64), idx.astype(np.int64),
                             np.asarray(x.values, dtype=np.float64), d)
    elif sp.issparse(x):
        vecs = _from_csr(x, d, owner)
    else:
        try:
            arr = np.asarray(x, dtype=np.float64)
        except (TypeError, ValueError):
            raise param_error("x", owner, f"SparseVectors, a sparse matrix or an (n, {d}) array",
                              type(x).__name__, TypeError) from None
        if arr.ndim != 2 or arr.shape[1] != d:
            raise ValueError(
                f"The 'x' parameter of {owner} must be an (n, {d}) array. "
                f"Got shape {arr.shape} instead."
            )
        # NaN is non-zero, so it is stored and caught by the range check below
        vecs = _from_csr(sp.csr_matrix(arr), d, owner)
    if vecs.n < 1:
        raise ValueError(f"The 'x' parameter of {owner} must hold at least one user. Got 0 instead.")
    vals = vecs.values
    bad = ~((vals >= -1.0) & (vals <= 1.0))
    if bad.any():
        j = int(np.flatnonzero(bad)[0])
        user = int(np.searchsorted(vecs.indptr, j, side="right") - 1)
        raise ValueError(
            f"The 'x' parameter of {owner} must hold values in [-1, 1]. "
            f"Got {float(vals[j])!r} for user {user}, coordinate {int(vecs.indices[j])} instead."
        )
    if ternary:
        off = ~np.isin(vals, (-1.0, 0.0, 1.0))
        if off.any():
            j = int(np.flatnonzero(off)[0])
            raise ValueError(
                f"The 'x' parameter of {owner} must hold values in {{-1, 0, 1}} "
                f"(use values='rounded' or 'direct' for general values). "
                f"Got {float(vals[j])!r} instead."
            )
    if m is not None and vecs.n and vecs.max_items > m:
        user = int(np.argmax(vecs.sizes))
        raise ValueError(
            f"The 'x' parameter of {owner} must hold at most m = {m} items per user. "
            f"Got {vecs.max_items} items for user {user} instead."
        )
    return vecs


def round_to_signs(values, rng) -> np.ndarray:
    """Randomized rounding of Eq. (35): ``+1`` w.p. ``(1 + v) / 2``, else ``-1``.

    Unbiased: ``E[result] = v``. Returns float64 in ``{-1, +1}``.
    """
    v = np.asarray(values, dtype=np.float64)
    gen = as_generator(rng)
    return np.where(gen.random(v.shape) < 0.5 * (1.0 + v), 1.0, -1.0)


def report_array(reports, shape: tuple, owner: str, name: str = "reports"):
    """Return ``reports`` as an array of ``shape`` (object dtype allowed) or raise.

    Only the shape is checked here: packet *contents* never raise.
    """
    try:
        arr = np.asarray(reports)
    except ValueError:
        arr = np.asarray(reports, dtype=object)
    if arr.shape != shape:
        raise ValueError(
            f"The {name!r} parameter of {owner} must have shape {shape} "
            f"(one report per user). Got shape {arr.shape} instead."
        )
    return arr


def _as_float(arr: np.ndarray):
    """Float values and a mask of entries that are not real numbers."""
    if arr.dtype.kind in "iufb":
        return arr.astype(np.float64), np.zeros(arr.shape, dtype=bool)
    flat = arr.astype(object).ravel()
    out = np.zeros(flat.shape[0])
    bad = np.zeros(flat.shape[0], dtype=bool)
    for j, v in enumerate(flat):
        if v is None or isinstance(v, (str, bytes, complex, np.complexfloating)):
            bad[j] = True
            continue
        try:
            out[j] = float(v)
        except (TypeError, ValueError, OverflowError):
            bad[j] = True
    return out.reshape(arr.shape), bad.reshape(arr.shape)


def sanitize_real(reports, shape: tuple, low: float, high: float, owner: str, *,
                  is_legal=None):
    """Project real-valued reports onto the hull ``[low, high]`` and count changes.

    ==================  ==========================================  ===============
    entry               becomes                                     counted as
    ==================  ==========================================  ===============
    legal               itself                                      valid
    in hull, not legal  itself (linear estimators: same influence)  off_alphabet
    finite, outside     clipped to ``[low, high]``                  out_of_range
    +-inf               the bound of its sign (0 if unbounded)      infinite
    NaN                 0 (no influence on a linear estimator)      nan
    not a number        0                                           non_numeric
    ==================  ==========================================  ===============

    Returns
    -------
    values : float64 array of ``shape``
    report : SanitizationReport (counts over entries)
    """
    arr = report_array(reports, shape, owner)
    vals, non_numeric = _as_float(arr)
    nan = np.isnan(vals) & ~non_numeric
    inf = np.isinf(vals)
    finite = np.isfinite(vals) & ~non_numeric
    outside = finite & ((vals < low) | (vals > high))
    out = np.where(finite, np.clip(vals, low, high), 0.0)
    if inf.any():
        hi = high if np.isfinite(high) else 0.0
        lo = low if np.isfinite(low) else 0.0
        out = np.where(inf, np.where(vals > 0, hi, lo), out)
    inside = finite & ~outside
    legal = inside if is_legal is None else inside & is_legal(np.where(inside, vals, 0.0))
    off = inside & ~legal
    by_reason = {
        "off_alphabet": int(off.sum()),
        "out_of_range": int(outside.sum()),
        "infinite": int(inf.sum()),
        "nan": int(nan.sum()),
        "non_numeric": int(non_numeric.sum()),
    }
    rep = SanitizationReport(int(out.size), int(legal.sum()), by_reason, arr.dtype.kind not in "iuf")
    return out, rep


def sanitize_ternary(reports, shape: tuple, owner: str):
    """Project entries onto ``{-1, 0, 1}``: finite or infinite values to their
    sign, NaN and non-numbers to 0. Returns int8 values and a report."""
    arr = report_array(reports, shape, owner)
    if arr.dtype == np.int8 and np.all((arr >= -1) & (arr <= 1)):
        return np.ascontiguousarray(arr), SanitizationReport(
            int(arr.size), int(arr.size), {k: 0 for k in
                                           ("out_of_alphabet", "infinite", "nan", "non_numeric")})
    vals, non_numeric = _as_float(arr)
    nan = np.isnan(vals) & ~non_numeric
    inf = np.isinf(vals)
    legal = np.isin(vals, (-1.0, 0.0, 1.0)) & ~non_numeric
    off = ~(legal | nan | inf | non_numeric)
    out = np.where(nan | non_numeric, 0.0, np.sign(np.where(nan, 0.0, vals))).astype(np.int8)
    by_reason = {"out_of_alphabet": int(off.sum()), "infinite": int(inf.sum()),
                 "nan": int(nan.sum()), "non_numeric": int(non_numeric.sum())}
    return out, SanitizationReport(int(out.size), int(legal.sum()), by_reason,
                                   arr.dtype.kind not in "iuf")


def sanitize_symbols(reports, n: int, t: int, seed: int, identities: np.ndarray, owner: str):
    """Project symbol reports onto ``{0, ..., t - 1}``.

    A report that is not an integer in range is replaced by a public
    pseudo-random symbol keyed by ``(seed, identity)`` (sanitize stream of the
    counter-based hash), so the replacement is deterministic and carries no
    attacker-chosen direction. Returns int64 symbols and a report.
    """
    arr = report_array(reports, (n,), owner)
    vals, non_numeric = _as_float(arr)
    finite = np.isfinite(vals) & ~non_numeric
    integral = finite & (vals == np.round(vals))
    legal = integral & (vals >= 0) & (vals < t)
    out = np.where(legal, vals, 0).astype(np.int64)
    bad = ~legal
    if bad.any():
        words = hash_words(seed, identities[bad], np.zeros(int(bad.sum()), dtype=np.int64),
                           SANITIZE_STREAM)
        out[bad] = (words % np.uint64(t)).astype(np.int64)
    by_reason = {
        "out_of_range": int((integral & ~legal).sum()),
        "not_integer": int((finite & ~integral).sum()),
        "nan": int((np.isnan(vals) & ~non_numeric).sum()),
        "infinite": int(np.isinf(vals).sum()),
        "non_numeric": int(non_numeric.sum()),
    }
    return out, SanitizationReport(n, int(legal.sum()), by_reason, arr.dtype.kind not in "iuf")


class ScaledReportSpace:
    """Output-space facts shared by mechanisms whose reports are ``R * Q(u)``.

    RPC and Succinct both release a randomizer ``Q``'s output scaled by the
    clipping radius ``R``; subclasses provide ``self.R`` and
    ``self.randomizer``.
    """

    @property
    def output_bounds(self) -> tuple:
        """``(low, high)``: the hull of the report space, ``R`` times ``Q``'s."""
        lo, hi = self.randomizer.output_bounds
        return (self.R * lo, self.R * hi)

    @property
    def extreme_report(self) -> float:
        """``c_eps R``: the largest legal report (paper 001, Eqs. (48), (52)); raises for Laplace."""
        return self.R * self.randomizer.extreme()

    def _report_mask(self, y: np.ndarray) -> np.ndarray:
        """Elementwise: is each value inside the output space of ``R * Q``?"""
        if self.randomizer.discrete:
            c = self.R * self.randomizer.c_eps
            return (y == c) | (y == -c)
        lo, hi = self.output_bounds
        return np.isfinite(y) & (y >= lo) & (y <= hi)


# ---------------------------------------------------------------- streaming decodes
def add_sign_sketch(total: ExactSum, seed: int, identities: np.ndarray, z, n_threads: int) -> None:
    """Add ``sum_i z_i S_i(e)`` for every ``e < total.size`` to ``total``, exactly.

    ``S_i(e)`` is the public pair sign keyed by ``(seed, identities[i])``
    (the signs of :func:`fastldp._kernels._sketch.global_sketch`). Each
    finite ``z_i`` is split into its exact binary form
    ``z_i = sign * (hi * 2**32 + lo) * 2**(x - 53)`` (``hi < 2**21``,
    ``lo < 2**32``); the reports of one exponent ``x`` are summed by the
    integer sketch kernel (:func:`fastldp._kernels._sketch.fixed_sketch`,
    exact int64 arithmetic) once for ``hi`` and once for ``lo``, and the two
    integer vectors enter the :class:`~fastldp.streaming.ExactSum` at their
    binary places (a class of one magnitude needs one kernel pass:
    ``sum_i sign_i S_i(e)`` times ``hi`` and ``lo``). Nothing is rounded,
    so the sum does not depend on the order, the chunks or the thread
    count. Duchi's two outputs ``+-R c``
    are one class of one magnitude: one pass of the kernel's fast
    equal-weight path.

    Parameters
    ----------
    total : fastldp.streaming.ExactSum
        The accumulator (``total.size`` is the sketch length ``p``).
    seed : int
        Codebook seed.
    identities : uint64 array, shape (n,)
    z : array_like of float64, shape (n,)
        Finite weights (sanitized reports).
    n_threads : int
        Threads of the kernel (the result does not depend on it).
    """
    z = np.ascontiguousarray(z, dtype=np.float64)
    ids = np.ascontiguousarray(identities, dtype=np.uint64)
    if z.shape[0] > FIXED_MAX_N:  # the kernel's bound on n keeps its int64 sums exact
        for start in range(0, z.shape[0], FIXED_MAX_N):
            stop = start + FIXED_MAX_N
            add_sign_sketch(total, seed, ids[start:stop], z[start:stop], n_threads)
        return
    live = np.flatnonzero(z != 0.0)
    if live.shape[0] == 0:
        return
    if live.shape[0] != z.shape[0]:
        z, ids = z[live], ids[live]
    if not np.all(np.isfinite(z)):
        raise ValueError("add_sign_sketch takes finite weights")
    mant, expo = np.frexp(z)
    magnitude = np.ldexp(np.abs(mant), 53).astype(np.int64)  # exact: an integer < 2**53
    sign = np.where(mant < 0, -1, 1).astype(np.int64)
    if expo.min() == expo.max():
        groups = [(int(expo[0]), ids, magnitude, sign)]
    else:  # group the reports by exponent (a stable sort keeps each group's order)
        order = np.argsort(expo, kind="stable")
        cuts = np.flatnonzero(np.diff(expo[order])) + 1
        groups = [(int(expo[g[0]]), ids[g], magnitude[g], sign[g]) for g in np.split(order, cuts)]
    for x, member_ids, mag, sgn in groups:
        member_ids = np.ascontiguousarray(member_ids)
        hi, lo = mag >> 32, mag & 0xFFFFFFFF
        if mag.min() == mag.max():
            # one magnitude: sum_i sign_i S_i(e) once, times hi and lo (products < 2**62)
            counts = fixed_sketch(seed, member_ids, np.ascontiguousarray(sgn), total.size,
                                  n_threads)
            total.add_integers(counts * int(hi[0]), x - 21)
            total.add_integers(counts * int(lo[0]), x - 53)
            continue
        for part, shift in ((sgn * hi, x - 21), (sgn * lo, x - 53)):
            total.add_integers(fixed_sketch(seed, member_ids, np.ascontiguousarray(part),
                                            total.size, n_threads), shift)


class StreamingServer(VectorProtocol):
    """What the sparse-vector servers share for ``partial`` / ``merge`` / ``finalize``.

    A subclass sets ``_REASONS`` (the sanitization reasons its ``estimate``
    counts) and implements ``stream_params`` and ``_sum_sizes`` (the name
    and length of every exact sum its partials hold). Partials of a sparse-vector server hold the sums of
    :mod:`fastldp.streaming` plus the integer counts ``"users"`` (reports
    received) and, as in :func:`fastldp._sanitize.sanitization_counts`,
    ``"n"`` (report entries received), ``"n_valid"`` and ``"reason:<r>"``
    for every reason of ``_REASONS``; the flag ``"wrong_dtype"`` is or-merged.
    """

    _REASONS: tuple = ()
    d: int  # set by every server's constructor (_set_d_m_epsilon)
    m: int
    epsilon: float

    def _set_d_m_epsilon(self, d, m, items_per_user, epsilon, owner: str) -> None:
        """Check and set the dimension ``d``, ``m <= d`` (or ``items_per_user``) and ``epsilon > 0``."""
        self.d = check_int(d, "d", owner, low=1)
        self.m = check_int(items_alias(owner, m, items_per_user), "m", owner, low=1, high=self.d)
        self.epsilon = check_float(epsilon, "epsilon", owner, low=0.0, high=math.inf)

    @property
    def items_per_user(self) -> int:
        """``m``, the most items one user holds (the contract's name)."""
        return self.m

    def stream_params(self) -> dict:  # pragma: no cover - every server overrides it
        raise NotImplementedError

    def _sum_sizes(self) -> dict:  # pragma: no cover - every server overrides it
        raise NotImplementedError

    @property
    def _mechanism(self) -> str:
        return type(self).__name__

    def _privacy(self) -> PrivacyStatement:
        """``epsilon``-LDP for each user's whole report."""
        return PrivacyStatement.local(epsilon=self.epsilon, unit="user")

    def _fixed_budget(self, epsilons, n: Optional[int], owner: str) -> None:
        """Accept ``epsilons`` only as ``None`` or this server's fixed budget.

        The contract's ``epsilons`` keyword is accepted everywhere, so that
        code written for the personal-budget families runs unchanged; these
        mechanisms have one budget, set by the constructor, and say so for
        any other value. ``n`` None skips the length check (a client call
        that has not read its data yet).
        """
        if epsilons is None:
            return
        try:
            # a string is not a budget, even one that numpy would parse as the right number
            arr = (None if isinstance(epsilons, (str, bytes))
                   else np.asarray(epsilons, dtype=np.float64))
        except (TypeError, ValueError):
            arr = None
        ok = (arr is not None and arr.ndim <= 1
              and (arr.ndim == 0 or n is None or arr.shape[0] == n)
              and bool(np.all(arr == self.epsilon)))
        if not ok:
            if arr is not None and arr.ndim and arr.size and arr.dtype.kind == "f":
                bad = np.flatnonzero(~(arr.ravel() == self.epsilon))
                got = (f"{float(arr.ravel()[bad[0]])!r} at index {int(bad[0])}" if bad.size
                       else f"an array of shape {arr.shape}")
            else:
                got = (f"an array of shape {arr.shape}" if arr is not None and arr.ndim
                       else repr(epsilons))
            raise ValueError(
                f"The 'epsilons' parameter of {owner} must be None or this mechanism's "
                f"epsilon={self.epsilon!r} (a scalar, or one value per report): "
                f"{self._mechanism} does not support personal budgets, its budget is set by "
                f"the constructor. Got {got} instead.")

    def _new_partial(self, users: int, report, sums: dict) -> Partial:
        """A partial of ``users`` reports with their sanitization ``report`` and ``sums``."""
        if report is None:
            report = SanitizationReport(0, 0, {}, False)
        unknown = set(report.by_reason) - set(self._REASONS)
        if unknown:  # pragma: no cover - a sanitizer and _REASONS out of step
            raise RuntimeError(f"{self._mechanism}: unexpected sanitization reasons {unknown}")
        counts = {"users": int(users)}
        counts.update(sanitization_counts(report))
        for reason in self._REASONS:
            counts.setdefault(f"reason:{reason}", 0)
        return Partial(self._mechanism, self.stream_params(), sums=sums, counts=counts,
                       flags={"wrong_dtype": bool(report.wrong_dtype)})

    def merge(self, a: Partial, b: Partial) -> Partial:
        """Merge two partials of this server (exact and order-free; neither changes).

        Parameters
        ----------
        a, b : fastldp.streaming.Partial
            Partials of this mechanism with these :meth:`stream_params`.

        Returns
        -------
        fastldp.streaming.Partial
            Every :class:`~fastldp.streaming.ExactSum` and count added.

        Raises
        ------
        ValueError
            If either partial belongs to another mechanism or other parameters.
        """
        owner = f"{self._mechanism}.merge"
        params = self.stream_params()
        check_partial(a, self._mechanism, params, owner)
        check_partial(b, self._mechanism, params, owner)
        return a.merge(b)

    def finalize(self, partial: Partial) -> Any:
        """Turn a (merged) partial into the estimate of all its reports.

        The same result object as ``estimate`` (whose docstring gives the
        formula); ``ValueError`` for a partial of another mechanism or other
        parameters, or one holding no reports.
        """
        t0 = time.perf_counter()
        result = self._finalize(partial, f"{self._mechanism}.finalize")
        result.seconds["aggregate"] = time.perf_counter() - t0
        return result

    def _open(self, partial: Partial, owner: str) -> Partial:
        """Check ``partial`` for :meth:`finalize`: this mechanism, these parameters, n >= 1."""
        check_partial(partial, self._mechanism, self.stream_params(), owner)
        sizes = {name: s.size for name, s in partial.sums.items()}
        if (set(partial.counts) != set(self._new_partial(0, None, {}).counts)
                or sizes != self._sum_sizes()):
            raise ValueError(f"{owner}: the partial does not hold this mechanism's sums and "
                             "counts")
        if partial.counts["users"] < 1:
            raise ValueError(f"{owner}: the partial holds no reports; a decode needs at least one")
        return partial

    @staticmethod
    def _report_of(partial: Partial) -> SanitizationReport:
        counts = {k: v for k, v in partial.counts.items() if k != "users"}
        return sanitization_report(counts, partial.flags)
