"""Joint Personalized Relation Sketch (JPRS), paper 000 sections 5-6.

Client (Algorithm 1): identity ``i`` holding ``E_i`` (``|E_i| = m <= k``)
evaluates its public signs ``R_i(e)`` on its own pairs only, forms the set
score ``theta_i = c_k(m) * sgn0(sum_{e in E_i} R_i(e))`` (a fair coin when the
sum is 0, and 0 for the empty set) and releases one bit with
``P(Y = y) = (1 + y gamma_i theta_i) / 2``, ``gamma_i = tanh(eps_i / 2)``
(Eq. (6)).

Server (Algorithm 2): sanitize packets to ``{-1, +1}``, form the global sketch
``V(e) = sqrt(k) / (kappa_k D) * sum_i gamma_i Ybar_i R_i(e)`` with
``D = sum_i gamma_i^2`` over every committed identity (Eq. (8)), and return
its projection onto ``M_{s,k}``.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field, replace
from math import sqrt
from typing import Optional, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .calibration import add_gamma_squares, c_k_table, gamma_sq_sum, kappa_k
from .._kernels._hash import CODEBOOKS, DEFAULT_CODEBOOK, set_sign_sums
from .._random import as_generator, resolve_identities
from .._kernels._hash import pair_signs
from .._sanitize import REASONS as SANITIZE_REASONS
from .._sanitize import (SanitizationReport, sanitization_counts, sanitization_report,
                         sanitize_bits)
from ..results import PrivacyStatement, Result
from ..streaming import ExactSum, Partial, check_partial, fixed_point_of
from ..streaming import chunk_length as _chunk_length
from .._kernels._sketch import FIXED_MAX_MASS, fixed_sketch, sign_sketch
from .base import (RelationMechanism, RelationsLike, RngLike, keyword_epsilons,
                   privacy_of_budgets, privacy_of_extremes)
from .projection import check_support_rule, project

__all__ = ["JPRS", "JPRSEstimate", "BudgetSummary"]

_BLOCK = 1 << 16  # identities per block of the exact sums: bounded temporaries
_SIGN_SUMS_MAX = 1 << 30  # identities per int64 sign sum (n 2^32 stays below 2^62)


@dataclass(frozen=True)
class BudgetSummary:
    """The committed budgets a decoder used.

    Attributes
    ----------
    n : int
        Committed identities.
    eps_min, eps_mean, eps_max : float
        Realized budget statistics.
    gamma_sq_sum : float
        ``D = sum_i tanh(eps_i / 2)^2``, the public denominator of Eq. (8).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.relations import BudgetSummary
    >>> b = BudgetSummary.from_epsilons(np.array([1.0, 2.0, 3.0]))
    >>> b.n, b.eps_min, b.eps_mean, b.eps_max
    (3, 1.0, 2.0, 3.0)
    """

    n: int
    eps_min: float
    eps_mean: float
    eps_max: float
    gamma_sq_sum: float

    @classmethod
    def from_epsilons(cls, eps: np.ndarray) -> "BudgetSummary":
        """The summary of the budgets ``eps`` (a non-empty float64 array)."""
        return cls(
            n=int(eps.shape[0]),
            eps_min=float(eps.min()),
            eps_mean=float(eps.mean()),
            eps_max=float(eps.max()),
            gamma_sq_sum=gamma_sq_sum(eps),
        )


@dataclass(frozen=True, repr=False)
class JPRSEstimate(Result):
    """Result of :meth:`JPRS.estimate`, on the shared result base (:class:`fastldp.results.Result`).

    Attributes
    ----------
    matrix : float64 array, shape (d1, d2)
        The estimate ``P_{s,k}(V)`` in ``M_{s,k}``; also :attr:`estimate`.
    sketch : float64 array, shape (d1, d2)
        The raw global sketch ``V`` of Eq. (8) (unbiased, not projected).
    support : tuple of two intp arrays
        ``(rows, cols)`` of the ``s`` coordinates the projection retained.
    budget : BudgetSummary
    sanitization : SanitizationReport
        What happened to malformed packets.
    n_threads : int
        Threads the sketch used (the result does not depend on it).
    privacy : fastldp.results.PrivacyStatement
        Local DP per user (an identity's whole relation set) at the budgets
        of the decode: one ``epsilon``, or the min / median / max of personal
        budgets (a decode from partials knows their extremes only).
    n : int
        The number of reports (committed identities), ``budget.n``.
    seconds : dict
        Wall-clock seconds of the ``sketch`` and ``projection`` steps.
    variances, std : None
        The projection onto ``M_{s,k}`` is not linear, so the estimate has no
        plug-in variance; each coordinate of the unprojected :attr:`sketch`
        has variance at most ``2k / D`` (``D = budget.gamma_sq_sum``,
        Theorem 3).

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.JPRS(shape=(3, 3), k=1, s=2, epsilon=2.0, codebook_seed=1)
    >>> sets = [np.array([[0, 0]])] * 200 + [np.array([[1, 2]])] * 100
    >>> est = mech.estimate(mech.privatize(sets, rng=0))
    >>> est.estimate is est.matrix, est.n, est.std is None
    (True, 300, True)
    >>> str(est.privacy)
    'epsilon=2 (local DP, per user)'
    """

    _estimate_field = "matrix"

    matrix: np.ndarray
    sketch: np.ndarray
    support: tuple
    budget: BudgetSummary
    sanitization: SanitizationReport
    n_threads: int
    n: int
    privacy: PrivacyStatement
    seconds: dict = field(default_factory=dict)

    def _frame_columns(self) -> dict:
        return {"sketch": self.sketch}


class JPRS(RelationMechanism):
    """Joint Personalized Relation Sketch: one bit per identity, user-level eps_i-LDP.

    Parameters
    ----------
    shape : tuple of int (d1, d2)
        Relation table shape; pairs are encoded as ``e = row * d2 + col`` and
        ``p = d1 * d2``.
    k : int
        Public cap on the number of relations per identity, ``k >= 1``.
    s : int
        Sparsity of the estimate, ``1 <= s <= p``.
    codebook_seed : int in [0, 2**64) or None
        Public seed of the pair-sign codebook. ``None`` draws one from OS
        entropy (read it back from :attr:`codebook_seed` to publish it).
    codebook : {"philox4x64-10", "philox4x32-10"}
        The versioned pseudorandom function behind the pair signs
        ``R_i(e)``. ``"philox4x64-10"`` (the default) is bit-compatible with
        ``numpy.random.Philox``; ``"philox4x32-10"`` (opt-in) is Random123's
        Philox4x32-10, whose 32-bit products run eight to an AVX2 vector, so
        its hash floor - and the decode - is several times cheaper (see
        :mod:`fastldp._kernels._hash` for both layouts). The privacy
        guarantee is the same for either; the choice is public, recorded in
        :meth:`spec` and report files, and reports made with one codebook
        are refused by a decoder with the other.
    cap_policy : {"raise", "minhash"}
        What to do with an identity holding more than ``k`` relations (see
        :func:`fastldp.relations.relation_sets.as_relation_sets`).
    n_threads : int or None
        Threads for the server sketch and the client sign sums. ``None``:
        OpenMP's default; ``-1``: all cores. Results are bit-identical for
        any value.
    support_rule : {"raw", "clipped"}
        Which ``s`` coordinates the final projection keeps. ``"raw"`` (the
        default) ranks by raw sketch value and is the exact Euclidean
        projection onto ``M_{s,k}``; ``"clipped"`` ranks by ``clip(v, 0, 1)``
        with ties toward the smaller index, section 6's literal wording. See
        :mod:`fastldp.relations.projection` for the proof and the difference.
    epsilon : float in [1e-150, inf) or None
        The budget of every identity where a call passes no ``epsilons``
        (default ``None``: every :meth:`privatize` and :meth:`estimate` call
        then passes its personal budgets).
    items_per_user, sparsity : int, optional
        The names every family shares for ``k`` and ``s`` (pass one of each
        pair).

    Notes
    -----
    The channel is ``eps_i``-LDP for every public seed: the output
    likelihood ratio between two sets is at most
    ``(1 + gamma_i) / (1 - gamma_i) = e^{eps_i}`` because ``|theta_i| <= 1``
    (Theorem 3). The sketch is unbiased for the ``gamma^2``-weighted mean of
    the sets, with coordinate variance at most ``2k / D``.

    References
    ----------
    .. [1] Paper 000, "Information-Theoretic Limits and One-Bit Estimation of
       Sparse Relation Matrices Under Personalized Local Differential Privacy
       and Byzantine Contamination", Algorithms 1-2, Eqs. (6)-(8).

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.JPRS(shape=(4, 4), k=2, s=3, codebook_seed=7)
    >>> sets = [np.array([[0, 1], [2, 3]]), np.array([[1, 1]])]
    >>> bits = mech.privatize(sets, epsilons=[1.0, 2.0], rng=0)
    >>> bits.dtype, bits.shape
    (dtype('int8'), (2,))
    >>> est = mech.estimate(bits, epsilons=[1.0, 2.0])
    >>> est.estimate.shape, est.n
    ((4, 4), 2)
    """

    family = "JPRS"
    #: report files and specs written before the codebook was a parameter
    #: were made with the only codebook there was
    spec_added = {"codebook": DEFAULT_CODEBOOK}

    def __init__(self, *, shape: Sequence[int], k: Optional[int] = None,
                 s: Optional[int] = None, items_per_user: Optional[int] = None,
                 sparsity: Optional[int] = None, epsilon: Optional[float] = None,
                 codebook_seed: Optional[int] = None, cap_policy: str = "raise",
                 n_threads: Optional[int] = None, support_rule: str = "raw",
                 codebook: str = DEFAULT_CODEBOOK) -> None:
        if not (isinstance(codebook, str) and codebook in CODEBOOKS):
            raise ValueError(f"The 'codebook' parameter of {type(self).__name__} must be one of "
                             f"{sorted(CODEBOOKS)}; got {codebook!r}")
        super().__init__(shape=shape, k=k, s=s, items_per_user=items_per_user,
                         sparsity=sparsity, epsilon=epsilon, codebook_seed=codebook_seed,
                         cap_policy=cap_policy, n_threads=n_threads)
        self.codebook = codebook
        self.support_rule = check_support_rule(support_rule, type(self).__name__)
        self.kappa = kappa_k(self.k)
        self._calibration = c_k_table(self.k)

    def _repr_extra(self) -> str:
        return "" if self.codebook == DEFAULT_CODEBOOK else f", codebook={self.codebook!r}"

    def payload_bits(self, epsilons: ArrayLike) -> np.ndarray:
        """One bit per identity."""
        return np.ones(np.atleast_1d(np.asarray(epsilons)).shape[0], dtype=np.int64)

    # ------------------------------------------------------------------ client
    def set_scores(self, relations: RelationsLike, *,
                   identities: Optional[ArrayLike] = None) -> tuple[np.ndarray, np.ndarray]:
        """Return each identity's sign sum ``sum_{E_i} R_i(e)`` and set size.

        The client work of Algorithm 1, step 1: ``O(k)`` per identity.
        """
        sets = self.relation_sets(relations, identities=identities)
        ids = self._client_identities(sets, identities)
        sums = set_sign_sums(self.codebook_seed, ids, sets.indptr, sets.pairs, self.n_threads,
                             self.codebook)
        return sums, sets.sizes

    def output_probabilities(self, relations: RelationsLike, epsilons: Optional[ArrayLike] = None, *,
                             identities: Optional[ArrayLike] = None) -> np.ndarray:
        """Return the exact ``P(Y_i = +1 | E_i, codebook)`` of every identity.

        The fair coin of ``sgn0`` is averaged out: a zero sign sum gives 1/2.
        This is the channel that :meth:`privatize` samples. ``epsilons``
        defaults to the constructor's ``epsilon``.
        """
        sums, sizes = self.set_scores(relations, identities=identities)
        eps = self._budgets(epsilons, sums.shape[0])
        theta = self._calibration[sizes] * np.sign(sums)
        return 0.5 * (1.0 + np.tanh(eps / 2.0) * theta)

    @keyword_epsilons
    def privatize(self, relations: RelationsLike, *, epsilons: Optional[ArrayLike] = None,
                  identities: Optional[ArrayLike] = None, rng: RngLike = None) -> np.ndarray:
        """Release one bit per identity (Algorithm 1).

        Parameters
        ----------
        relations : scipy.sparse matrix (n, d1*d2), sequence of (m_i, 2) int arrays, or long format
            Each identity's relation set, at most ``k`` pairs. The long format
            (:mod:`fastldp.relations.relation_sets`) is a tuple of three 1-d
            int arrays ``(identity, row, col)``, a pandas DataFrame, pyarrow
            Table or dict of arrays with those columns, or the path of a
            Parquet file with them; its clients are the distinct identities
            in ascending order, keyed by those values (``n`` of them).
        epsilons : float or array_like of float, shape (n,), optional
            Personal budgets ``eps_i`` in ``[1e-150, inf)``; default: the
            constructor's ``epsilon`` (a ``ValueError`` when it has none).
            Passing them positionally is deprecated.
        identities : array_like of int, optional
            Distinct public identities keying the codebook (default ``0..n-1``,
            or the long format's distinct identities). With the long format,
            they define the population and its order: identities without
            lines report an empty set. The server must use the same identities.
        rng : None, int, SeedSequence or Generator
            Source of the client's private coins; ``None`` uses OS entropy.

        Returns
        -------
        numpy.ndarray of int8, shape (n,)
            Values in ``{-1, +1}``.
        """
        gen = as_generator(rng, "JPRS.privatize")
        sums, sizes = self.set_scores(relations, identities=identities)
        n = sums.shape[0]
        eps = self._budgets(epsilons, n, "JPRS.privatize")
        direction = np.sign(sums).astype(np.float64)
        ties = (sums == 0) & (sizes > 0)
        if ties.any():
            direction[ties] = np.where(gen.random(int(ties.sum())) < 0.5, 1.0, -1.0)
        theta = self._calibration[sizes] * direction
        p_plus = 0.5 * (1.0 + np.tanh(eps / 2.0) * theta)
        return np.where(gen.random(n) < p_plus, 1, -1).astype(np.int8)

    # ------------------------------------------------------------------ server
    def sketch_scale(self, eps: np.ndarray) -> float:
        """Return ``sqrt(k) / (kappa_k D)``, ``D = sum_i gamma_i^2`` (Eq. (8))."""
        return sqrt(self.k) / (self.kappa * gamma_sq_sum(eps))

    def sketch_weights(self, bits: np.ndarray, eps: np.ndarray) -> np.ndarray:
        """Return ``w_i = sqrt(k) gamma_i Ybar_i / (kappa_k D)`` of Eq. (8)."""
        return self.sketch_scale(eps) * np.tanh(eps / 2.0) * bits.astype(np.float64)

    @keyword_epsilons
    def estimate(self, reports: ArrayLike, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> JPRSEstimate:
        """Decode the population relation matrix (Algorithm 2).

        Exactly ``finalize(partial(reports, epsilons, identities))`` (the
        same bits; only :attr:`JPRSEstimate.privacy` knows more here, the
        median of personal budgets): see :meth:`partial` for the
        fixed-point sums that make a split decode bit-identical to this one.

        Parameters
        ----------
        reports : array_like, shape (n,)
            Received packets, one per committed identity. Malformed packets
            are sanitized (see :mod:`fastldp._sanitize`) and counted.
        epsilons : float or array_like of float, shape (n,), optional
            Committed budgets; the denominator ``D`` includes every identity.
            Default: the constructor's ``epsilon``. Passing them positionally
            is deprecated.
        identities : array_like of int, optional
            The identities the clients used (default ``0..n-1``).

        Returns
        -------
        JPRSEstimate
        """
        owner = "JPRS.estimate"
        n = self._report_count(reports, owner)
        eps = self._budgets(epsilons, n, owner)
        t0 = time.perf_counter()
        # the budgets are checked once, here; their extremes serve the
        # partial and the privacy statement (each was a pass over n before)
        extremes = (float(eps.min()), float(eps.max()))
        state = self._partial_of(reports, eps, identities, owner, extremes)
        t1 = time.perf_counter()
        result = replace(self.finalize(state), privacy=privacy_of_budgets(eps, *extremes))
        result.seconds["sketch"] = t1 - t0 + result.seconds.pop("scale")
        return result

    # ------------------------------------------------------------ streaming
    def stream_params(self) -> dict:
        """The public parameters a partial is bound to (JSON values)."""
        return {"shape": list(self.shape), "k": self.k, "s": self.s,
                "codebook_seed": self.codebook_seed, "support_rule": self.support_rule,
                "codebook": self.codebook}

    def partial(self, reports: ArrayLike, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """The exact, mergeable state of Algorithm 2 over a chunk of reports.

        Parameters
        ----------
        reports : array_like, shape (n,)
            The chunk's packets (``n`` may be 0); sanitized and counted as in
            :meth:`estimate`.
        epsilons : float or array_like of float, shape (n,), optional
            The chunk's committed budgets (default: the constructor's
            ``epsilon``).
        identities : array_like of int, optional
            The chunk's identities. The default ``0 .. n-1`` is right only
            for a first chunk: pass them for every other chunk.

        Returns
        -------
        fastldp.streaming.Partial
            Holds, exactly: ``S(e) = sum_i q_i 2^(x_i - 32) Ybar_i R_i(e)``
            (``"sketch"``), ``D = sum_i gamma_i^2`` (``"gamma_sq"``) and
            ``sum_i eps_i`` (``"eps_sum"``) as :class:`~fastldp.streaming.ExactSum`;
            the counts of reports by sanitization outcome; the budget extremes.
            ``O(p)`` memory whatever ``n``.

        Notes
        -----
        **Fixed-point weights.** ``gamma_i = tanh(eps_i / 2)`` enters the
        sketch rounded to 32 significant bits, ``q_i 2^(x_i - 32)`` with
        ``q_i in [2^31, 2^32]`` (:func:`fastldp.streaming.gamma_fixed_point`).
        Identities of equal exponent ``x`` are summed by the integer sketch
        kernel, so every sum is an exact integer and merges in any order.
        The change to Eq. (8) is bounded by
        ``|V~(e) - V(e)| <= 2^-32 sqrt(k) / (kappa_k D) * sum_i gamma_i``,
        i.e. at most ``2^-32`` of the largest possible ``|V(e)|``, and the
        sketch's expectation moves by at most that relative amount (far below
        its standard deviation ``sqrt(2k / D)``). A grid with a fixed number
        of fractional bits would instead round budgets below ``2^-31`` to
        weight zero; the per-identity exponent keeps every accepted budget
        (down to ``1e-150``) at full relative precision. ``D`` keeps the
        exact ``gamma_i^2`` (rounded once per identity, summed exactly).
        """
        return self._partial(reports, epsilons, identities, "JPRS.partial")

    def _partial(self, reports, epsilons, identities, owner) -> Partial:
        n = _chunk_length(reports, owner)
        eps = self._budgets(epsilons, n, owner) if n else np.zeros(0)
        return self._partial_of(reports, eps, identities, owner,
                                (float(eps.min()), float(eps.max())) if n else None)

    def _partial_of(self, reports, eps, identities, owner, extremes) -> Partial:
        """The partial of validated budgets ``eps`` with their ``(min, max)`` (None if empty)."""
        n = eps.shape[0]
        ids = None if identities is None else resolve_identities(identities, n, owner)
        if n:
            bits, report = sanitize_bits(reports, n, self.codebook_seed, ids, owner)
        else:
            bits = np.zeros(0, dtype=np.int8)
            report = SanitizationReport(0, 0, {r: 0 for r in SANITIZE_REASONS}, False)
        eps_sum = ExactSum(1)
        sketch, gamma_sq = self._exact_sums(bits, eps, ids, eps_sum, extremes)
        return Partial(
            "JPRS", self.stream_params(),
            sums={"sketch": sketch, "gamma_sq": gamma_sq, "eps_sum": eps_sum},
            counts=sanitization_counts(report),
            minima={"eps": extremes[0] if n else None},
            maxima={"eps": extremes[1] if n else None},
            flags={"wrong_dtype": report.wrong_dtype},
        )

    def _exact_sums(self, bits, eps, ids, eps_sum=None,
                    extremes=None) -> tuple[ExactSum, ExactSum]:
        """The exact ``S(e)`` (fixed-point ``gamma``) and ``D`` over the given identities.

        ``ids`` None means ``0 .. n-1``. See :meth:`partial`, Notes.
        ``eps_sum``, when given, also receives ``sum eps_i``; ``extremes``,
        when given, is ``(min(eps), max(eps))``.

        One budget for everyone (the common case) takes one weight ``q``:
        ``S = q 2^(x - 32) sum_i Ybar_i R_i(e)``, the sign sums counted from
        the int8 reports by one kernel call per ``2^30`` identities
        (:func:`~fastldp._kernels._sketch.sign_sketch`, no temporaries), and
        ``D``, ``sum eps_i`` as ``n`` copies of one term. Personal budgets go
        in blocks of ``_BLOCK`` identities, so their int64 weights are
        ``O(block)`` whatever ``n``. The sums are exact, so their grouping
        cannot change them.
        """
        n = bits.shape[0]
        sketch, gamma_sq = ExactSum(self.p), ExactSum(1)
        if n and extremes is None:
            extremes = (float(eps.min()), float(eps.max()))
        if n and extremes[0] == extremes[1]:
            g = np.tanh(eps[:1] * 0.5)
            q, x = fixed_point_of(g, self.n_threads)
            gamma_sq.add_repeated(float(g[0] * g[0]), n)
            if eps_sum is not None:
                eps_sum.add_repeated(extremes[0], n)
            for start in range(0, n, _SIGN_SUMS_MAX):
                stop = min(n, start + _SIGN_SUMS_MAX)
                # |sum| <= 2^30 * 2^32 = 2^62 per call: exact in int64
                counts = sign_sketch(self.codebook_seed, None if ids is None else ids[start:stop],
                                     bits[start:stop], int(q[0]), self.p, self.n_threads, start,
                                     self.codebook)
                sketch.add_integers(counts, int(x[0]) - 32)
            return sketch, gamma_sq
        for start in range(0, n, _BLOCK):
            stop = min(n, start + _BLOCK)
            e = eps[start:stop]
            block_ids = None if ids is None else ids[start:stop]
            # one budget in the block (the homogeneous case): one tanh, scalar sums
            uniform = e[0] == e[-1] and bool(np.all(e == e[0]))
            g = np.tanh((e[:1] if uniform else e) * 0.5)
            q, x = fixed_point_of(g, self.n_threads)
            lo, hi = int(x.min()), int(x.max())
            if lo < hi and (1 << (32 + hi - lo)) * max(stop - start, 16) <= FIXED_MAX_MASS:
                # the exponent classes in one kernel call: q_i 2^(x_i - lo) fits
                # the batch's weight bound, and 2^(lo - 32) sum_i q_i 2^(x_i - lo)
                # Ybar_i R_i(e) is the same exact sum as one call per class
                np.left_shift(q, np.subtract(x, lo, out=x), out=q)  # in place: fresh arrays
                hi = lo
            # int64 weights: q broadcasts in the uniform case, else in place
            weights = (q * bits[start:stop] if uniform
                       else np.multiply(q, bits[start:stop], out=q))
            add_gamma_squares(gamma_sq, e, None if uniform else g, self.n_threads)
            if eps_sum is not None:
                if uniform:
                    eps_sum.add_repeated(float(e[0]), stop - start)
                else:
                    eps_sum.add_terms(e, self.n_threads)
            for c in range(lo, hi + 1):
                if lo == hi:
                    members_ids, members_w, first = block_ids, weights, start
                else:
                    members = np.flatnonzero(x == c)
                    if members.shape[0] == 0:
                        continue
                    members_w = weights[members]
                    members_ids = ((members + start).astype(np.uint64) if block_ids is None
                                   else block_ids[members])
                    first = 0
                counts = fixed_sketch(self.codebook_seed, members_ids, members_w, self.p,
                                      self.n_threads, first, self.codebook)
                # identities of one exponent class x: sum_i q_i Ybar_i R_i(e) is exact
                sketch.add_integers(counts, c - 32)
        return sketch, gamma_sq

    def _scaled_sketch(self, sketch: ExactSum, gamma_sq: ExactSum) -> tuple[np.ndarray, float]:
        """Eq. (8) from the exact sums: ``(sqrt(k) / (kappa_k D)) S``, and ``D``."""
        d = float(gamma_sq.value()[0])
        return sketch.value() * (sqrt(self.k) / (self.kappa * d)), d

    def merge(self, a: Partial, b: Partial) -> Partial:
        """Merge two partials of this mechanism (exact, order-free)."""
        check_partial(a, "JPRS", self.stream_params(), "JPRS.merge")
        return a.merge(b)

    def finalize(self, partial: Partial) -> JPRSEstimate:
        """Turn a (merged) partial into the :class:`JPRSEstimate` of all its reports."""
        owner = "JPRS.finalize"
        check_partial(partial, "JPRS", self.stream_params(), owner)
        n = partial.counts["n"]
        if n < 1:
            raise ValueError(f"{owner}: the partial holds no reports; a decode needs at least one")
        t0 = time.perf_counter()
        v, d = self._scaled_sketch(partial.sums["sketch"], partial.sums["gamma_sq"])
        t1 = time.perf_counter()
        m, support = project(v, self.s, float(self.k), self.support_rule)
        t2 = time.perf_counter()
        rows, cols = np.divmod(support, self.shape[1])
        budget = BudgetSummary(
            n=n, eps_min=partial.minima["eps"],
            eps_mean=float(partial.sums["eps_sum"].value()[0]) / n,
            eps_max=partial.maxima["eps"], gamma_sq_sum=d)
        return JPRSEstimate(
            matrix=m.reshape(self.shape),
            sketch=v.reshape(self.shape),
            support=(rows, cols),
            budget=budget,
            sanitization=sanitization_report(partial.counts, partial.flags),
            n_threads=self.n_threads,
            n=n,
            privacy=privacy_of_extremes(budget.eps_min, budget.eps_max),
            seconds={"scale": t1 - t0, "projection": t2 - t1},
        )

    # ------------------------------------------------ linear interface (decoders, attacks)
    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        return sanitize_bits(reports, eps.shape[0], self.codebook_seed, identities, owner)

    def linear_estimate(self, clean: np.ndarray, eps: np.ndarray, identities: np.ndarray,
                        members: Optional[np.ndarray] = None) -> np.ndarray:
        """The sketch of Eq. (8) over ``members`` (Theorem 3's ``M~_J``), length p.

        The same exact fixed-point sums as :meth:`estimate`, so the global
        decoder is bit-identical to it.
        """
        if members is not None:
            clean, eps, identities = clean[members], eps[members], identities[members]
        sums = self._exact_sums(np.ascontiguousarray(clean), np.ascontiguousarray(eps),
                                np.ascontiguousarray(identities, dtype=np.uint64))
        return self._scaled_sketch(*sums)[0]

    def _item_scores(self, identities, items, item_weights):
        """``sum_x w_x R_i(x)`` for each identity (O(|items|) signs each)."""
        items = np.asarray(items, dtype=np.int64)
        w = np.asarray(item_weights, dtype=np.float64)
        signs = pair_signs(self.codebook_seed, np.repeat(identities, items.shape[0]),
                           np.tile(items, identities.shape[0]), self.codebook)
        return (signs.reshape(identities.shape[0], -1) * w[None, :]).sum(axis=1)

    def _weights_of(self, eps, corrupted):
        return self.sketch_scale(eps) * np.tanh(eps[corrupted] / 2.0)

    def best_response(self, eps: np.ndarray, corrupted: np.ndarray, identities: np.ndarray,
                      items: ArrayLike, item_weights: ArrayLike,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        """The bit ``sign(sum_x w_x R_i(x))`` per corrupted identity, fair ties."""
        score = self._item_scores(identities[corrupted], items, item_weights)
        coin = np.where(rng.random(score.shape[0]) < 0.5, 1, -1)
        bits = np.where(score > 0, 1, np.where(score < 0, -1, coin)).astype(np.int8)
        return bits, self._weights_of(eps, corrupted) * np.abs(score)

    def random_response(self, eps: np.ndarray, corrupted: np.ndarray, identities: np.ndarray,
                        rng: np.random.Generator) -> np.ndarray:
        return np.where(rng.random(corrupted.shape[0]) < 0.5, 1, -1).astype(np.int8)

    def response_objective(self, eps: np.ndarray, corrupted: np.ndarray, identities: np.ndarray,
                           outputs: ArrayLike, items: ArrayLike,
                           item_weights: ArrayLike) -> np.ndarray:
        score = self._item_scores(identities[corrupted], items, item_weights)
        return self._weights_of(eps, corrupted) * np.asarray(outputs, dtype=np.float64) * score
