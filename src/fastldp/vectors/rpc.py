"""Randomized Projection with Clipping (RPC), paper 001 Algorithm 1.

Client ``i`` holds an ``m``-sparse ``x_i``. With the public sign vector
``S_i in {-1, +1}^d`` it sends one number

    u_i = Clip(<x_i, S_i>, R),        Y_i = R * Q(u_i / R)

where ``Q`` is an unbiased ``epsilon``-LDP randomizer on ``[-1, 1]``
(:mod:`fastldp.oracles.randomizers`). The server returns

    mu_hat = (alpha / n) * sum_i Z_i S_i                          (Eq. (20))

with the exact clipping-bias correction ``alpha`` of Eqs. (21) / (86)-(87).

Public signs
------------
``S_i(e)`` is the pair sign ``R_i(e)`` of the counter-based hash keyed by
``(codebook_seed, identity)`` (see :mod:`fastldp._kernels._hash`), so the
aggregator is exactly the global sketch ``sum_i w_i S_i`` with
``w_i = alpha Z_i / n``, computed by :func:`fastldp._kernels._sketch.global_sketch`
in ``O(n d)``, bit-identical for any thread count. A client evaluates only the
Philox blocks that hold its ``<= m`` coordinates (plus padding).

Value routes (``values=``)
--------------------------
``"ternary"``
    ``x_i(j) in {-1, 0, 1}`` (section 3.1; frequency estimation over
    set-valued data is the case ``{0, 1}``, Remark 2). Users with fewer than
    ``m`` non-zeros are padded (Remark 1): the padding coordinates
    ``d, ..., d + m - 1`` receive ``+1`` until the user has exactly ``m``
    non-zeros; they enter ``<x_i, S_i>`` but are never estimated.
``"rounded"``
    The indirect route of section 6: every stored value in ``[-1, 1]`` is
    first rounded to ``+-1`` by Eq. (35) on the client, then as ``"ternary"``.
``"direct"``
    The direct route of section 6: ``u_i = Clip(<x_i, S_i>, R)`` on the raw
    values, no padding and no correction (``alpha = 1``); the default
    threshold is ``R = beta sqrt(m ln n) + 1`` (Theorem 3), which needs
    ``beta`` (Assumption 1) and the number of users ``n_users``.

How alpha is computed
---------------------
For ``x_i(j) = +-1`` the other ``m - 1`` non-zeros make
``U_ij = sum_{l != j} x_i(l) S_i(l) S_i(j)`` a sum of ``m - 1`` independent
Rademacher variables, so ``U_ij = 2L + 1 - m`` with ``L ~ Binomial(m - 1, 1/2)``
and

    E[Clip(U, -R + 1, R + 1)] = sum_l C(m - 1, l) 2^{-(m - 1)} Clip(2l + 1 - m, -R + 1, R + 1)

(Eq. (87)); ``alpha = 1 / (1 - E[...])`` (Eq. (86)). :func:`clipping_alpha`
evaluates this sum exactly in rational arithmetic (integer binomial
coefficients; the clipped values are integers when ``R`` is) and rounds
once to float. The test suite checks it against a brute-force expectation
over all ``2^m`` sign patterns.

References
----------
.. [1] Paper 001, "Robust Estimation of Sparse Numerical Vectors under Local
   Differential Privacy": Algorithm 1, Eqs. (17)-(21), Lemma 2 (Appendix D),
   Theorem 1 (Eq. (23)), Corollary 1, section 6 (Eq. (35), Theorem 3),
   section 8.1 (final clipping).
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from fractions import Fraction
from math import comb, inf, isqrt, log, sqrt

import numpy as np

from .._kernels._hash import pair_signs, set_sign_sums
from .._kernels._sketch import global_sketch
from .._random import as_generator, resolve_codebook_seed, resolve_identities, resolve_n_threads
from .._validation import check_choice, check_float, check_int, param_error
from .._sanitize import SanitizationReport
from .base import ScaledReportSpace, SparseVectors, as_sparse_vectors, round_to_signs, sanitize_real
from ..oracles.randomizers import Randomizer, make_randomizer

__all__ = ["RPC", "RPCEstimate", "clipping_alpha", "resolve_clip_range", "VALUE_ROUTES"]

VALUE_ROUTES = ("ternary", "rounded", "direct")
_CLIP_NAMES = {"frequency": (0.0, 1.0), "mean": (-1.0, 1.0)}


def clipping_alpha(m: int, R: float) -> float:
    """Exact bias-correction factor ``alpha`` of Eq. (21) for ``m`` non-zeros and threshold ``R``.

    ``alpha = 1 / (1 - sum_{l=0}^{m-1} C(m-1, l) 2^{-(m-1)} Clip(2l + 1 - m, -R + 1, R + 1))``.
    The sum is taken in exact rational arithmetic (see the module docstring).

    Parameters
    ----------
    m : int >= 1
    R : float >= 1

    Returns
    -------
    float
        ``alpha >= 1``; equal to 1 exactly when ``R >= m`` (nothing is clipped).
    """
    m = check_int(m, "m", "clipping_alpha", low=1)
    R = check_float(R, "R", "clipping_alpha", low=1.0, low_open=False)
    exact = float(R).is_integer()
    lo = Fraction(1) - Fraction(R) if exact else 1.0 - R
    hi = Fraction(1) + Fraction(R) if exact else 1.0 + R
    total = Fraction(0) if exact else 0.0
    for ell in range(m):
        c = 2 * ell + 1 - m
        clipped = min(max(c, lo), hi)
        total += comb(m - 1, ell) * clipped
    expectation = total / (2 ** (m - 1))
    return float(1 / (1 - expectation))


def resolve_clip_range(clip, owner: str):
    """``None``, ``"frequency"`` (``[0, 1]``), ``"mean"`` (``[-1, 1]``) or ``(low, high)``."""
    if clip is None:
        return None
    if isinstance(clip, str):
        return _CLIP_NAMES[check_choice(clip, "clip_estimate", owner, tuple(_CLIP_NAMES))]
    try:
        low, high = (float(v) for v in clip)
    except (TypeError, ValueError):
        raise param_error("clip_estimate", owner,
                          "None, 'frequency', 'mean' or a pair (low, high)", clip, TypeError) from None
    if not (low < high):
        raise param_error("clip_estimate", owner, "a pair (low, high) with low < high", clip)
    return (low, high)


@dataclass(frozen=True)
class RPCEstimate:
    """Result of :meth:`RPC.estimate`.

    Attributes
    ----------
    mean : float64 array, shape (d,)
        The estimate, clipped to the feasible range when the mechanism was
        built with ``clip_estimate`` (section 8.1), otherwise equal to ``raw``.
    raw : float64 array, shape (d,)
        ``(alpha / n) sum_i Z_i S_i`` of Eq. (20): unbiased for the sample mean
        in a trusted environment (Lemma 2).
    alpha : float
    R : float
    sanitization : SanitizationReport
        Counts of malformed reports (see :func:`~fastldp.vectors.base.sanitize_real`).
    n_threads : int
    seconds : dict
    """

    mean: np.ndarray
    raw: np.ndarray
    alpha: float
    R: float
    sanitization: SanitizationReport
    n_threads: int
    seconds: dict = field(default_factory=dict)


class RPC(ScaledReportSpace):
    """Randomized Projection with Clipping: one real number per user, epsilon-LDP.

    Parameters
    ----------
    d : int
        Dimension, ``d >= 1``.
    m : int
        Sparsity: every user holds at most ``m <= d`` items.
    epsilon : float in (0, inf)
        Privacy budget of the randomizer ``Q``.
    randomizer : {"duchi", "piecewise", "laplace", "auto"} or Randomizer
        ``Q`` of Algorithm 1, step 4. ``"auto"`` takes the bounded randomizer
        with the smallest ``V_eps`` (section 8.1). Default ``"duchi"``: binary
        output, ``O(1)`` communication, and the smallest ``c_eps``.
    R : float >= 1, optional
        Clipping threshold. Default ``ceil(sqrt(m))`` (Corollary 1) for the
        ``"ternary"`` and ``"rounded"`` routes, ``beta sqrt(m ln n_users) + 1``
        for ``"direct"``.
    values : {"ternary", "rounded", "direct"}
        How values are handled (module docstring).
    beta : float in (0, 1), optional
        Assumption 1's bound, for the direct route's default ``R``.
    n_users : int, optional
        Number of users, for the direct route's default ``R``.
    pad : bool
        Pad users with fewer than ``m`` non-zeros (Remark 1; ternary and
        rounded routes). ``pad=False`` is only for measuring what padding
        buys: short users then make the estimate biased.
    clip_estimate : None, "frequency", "mean" or (low, high)
        Final clipping of the estimate (section 8.1): ``"frequency"`` is
        ``[0, 1]``, ``"mean"`` is ``[-1, 1]``.
    codebook_seed : int in [0, 2**64) or None
        Public seed of the sign vectors ``S_i``.
    n_threads : int or None
        Threads for the server sketch and client sign sums; results do not
        depend on it.

    Attributes
    ----------
    alpha : float
        Eq. (21) (1 on the direct route).
    randomizer : Randomizer
    R : float

    Notes
    -----
    Privacy: ``u_i / R in [-1, 1]`` whatever ``x_i`` and ``S_i`` are, so
    ``Y_i`` is ``epsilon``-LDP because ``Q`` is. The output space is
    ``R`` times that of ``Q``: ``{-R c, R c}`` for Duchi, ``[-R b, R b]`` for
    Piecewise, the real line for Laplace.

    Accuracy (Theorem 1): every coordinate has variance at most
    ``alpha^2 (V_eps R^2 + m) / n`` and ``E ||mu_hat - mu||_1 <= d alpha sqrt((V_eps R^2 + m) / n)``.

    References
    ----------
    .. [1] Paper 001, Algorithm 1, Eqs. (20)-(21), Lemma 2, Theorems 1-4.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.vectors.rpc import RPC
    >>> mech = RPC(d=6, m=2, epsilon=1.0, codebook_seed=3)
    >>> x = np.array([[1, 0, -1, 0, 0, 0], [0, 1, 0, 0, 0, 0]])
    >>> y = mech.privatize(x, rng=0)
    >>> y.shape, mech.is_legal(y).all()
    ((2,), True)
    """

    def __init__(self, *, d, m, epsilon, randomizer="duchi", R=None, values="ternary",
                 beta=None, n_users=None, pad=True, clip_estimate=None, codebook_seed=None,
                 n_threads=None):
        owner = type(self).__name__
        self.d = check_int(d, "d", owner, low=1)
        self.m = check_int(m, "m", owner, low=1, high=self.d)
        self.epsilon = check_float(epsilon, "epsilon", owner, low=0.0, high=inf)
        self.values = check_choice(values, "values", owner, VALUE_ROUTES)
        self.randomizer: Randomizer = make_randomizer(randomizer, self.epsilon, owner)
        self.beta = None if beta is None else check_float(beta, "beta", owner, low=0.0, high=1.0)
        self.n_users = None if n_users is None else check_int(n_users, "n_users", owner, low=2)
        if R is None:
            if self.values == "direct":
                if self.beta is None or self.n_users is None:
                    raise ValueError(
                        f"The 'R' parameter of {owner} is required on the direct route unless "
                        "both 'beta' and 'n_users' are given (R = beta sqrt(m ln n) + 1). "
                        "Got R=None instead."
                    )
                R = self.beta * sqrt(self.m * log(self.n_users)) + 1.0
            else:
                R = float(isqrt(self.m - 1) + 1)  # ceil(sqrt(m)) in integers
        self.R = check_float(R, "R", owner, low=1.0, low_open=False)
        if not isinstance(pad, (bool, np.bool_)):
            raise param_error("pad", owner, "a bool", pad, TypeError)
        self.pad = bool(pad)
        self.clip_estimate = resolve_clip_range(clip_estimate, owner)
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.n_threads = resolve_n_threads(n_threads, owner)
        self.alpha = 1.0 if self.values == "direct" else clipping_alpha(self.m, self.R)

    def __repr__(self) -> str:
        return (
            f"RPC(d={self.d}, m={self.m}, epsilon={self.epsilon!r}, "
            f"randomizer={self.randomizer.name!r}, R={self.R!r}, values={self.values!r}, "
            f"pad={self.pad}, clip_estimate={self.clip_estimate!r}, "
            f"codebook_seed={self.codebook_seed})"
        )

    # ------------------------------------------------------------ public facts
    def is_legal(self, reports) -> np.ndarray:
        """Mask of reports inside the output space of ``R * Q``."""
        return self._report_mask(np.asarray(reports, dtype=np.float64))

    def variance_bound(self, n: int) -> float:
        """Theorem 1's per-coordinate variance bound ``alpha^2 (V_eps R^2 + m) / n``."""
        n = check_int(n, "n", "RPC.variance_bound", low=1)
        return self.alpha**2 * (self.randomizer.V_eps * self.R**2 + self.m) / n

    def sign_vectors(self, identities, coords) -> np.ndarray:
        """The public signs ``S_i(e)`` as an int8 matrix ``(len(identities), len(coords))``."""
        ids = np.ascontiguousarray(identities, dtype=np.uint64)
        coords = np.ascontiguousarray(coords, dtype=np.int64)
        rows = np.repeat(ids, coords.shape[0])
        cols = np.tile(coords, ids.shape[0])
        return pair_signs(self.codebook_seed, rows, cols).reshape(ids.shape[0], coords.shape[0])

    # ------------------------------------------------------------------ client
    def vectors(self, x) -> SparseVectors:
        """Validate ``x`` for this mechanism and return it as :class:`SparseVectors`."""
        return as_sparse_vectors(x, d=self.d, owner=type(self).__name__, m=self.m,
                                 ternary=self.values == "ternary")

    def _padding_sums(self, ids: np.ndarray, counts: np.ndarray) -> np.ndarray:
        """``sum_{k < counts[i]} S_i(d + k)`` per user (Remark 1)."""
        counts = counts.astype(np.int64)
        if not counts.any():
            return np.zeros(ids.shape[0], dtype=np.int64)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        pairs = self.d + (np.arange(indptr[-1], dtype=np.int64) - np.repeat(indptr[:-1], counts))
        return set_sign_sums(self.codebook_seed, ids, indptr, pairs, self.n_threads)

    def _signed_sums(self, ids, vecs: SparseVectors, signs: np.ndarray) -> np.ndarray:
        """``sum_j signs_j S_i(j)`` for entries with ``signs in {-1, 0, +1}``."""
        out = np.zeros(vecs.n, dtype=np.int64)
        rows = vecs.rows
        for sgn in (1, -1):
            keep = signs == sgn
            if not keep.any():
                continue
            counts = np.bincount(rows[keep], minlength=vecs.n)
            indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
            out += sgn * set_sign_sums(self.codebook_seed, ids, indptr,
                                       np.ascontiguousarray(vecs.indices[keep]), self.n_threads)
        return out

    def projections(self, x, *, identities=None, rng=None) -> np.ndarray:
        """Return ``<x_i', S_i>`` before clipping (``x_i'`` rounded and padded per route).

        ``rng`` is used only by the rounded route (Eq. (35)).
        """
        vecs = self.vectors(x)
        ids = resolve_identities(identities, vecs.n, type(self).__name__)
        if self.values == "direct":
            s = pair_signs(self.codebook_seed, np.repeat(ids, vecs.sizes), vecs.indices)
            return np.bincount(vecs.rows, weights=s * vecs.values, minlength=vecs.n)
        if self.values == "rounded":
            signs = round_to_signs(vecs.values, as_generator(rng, "RPC.privatize")).astype(np.int8)
        else:
            signs = vecs.values.astype(np.int8)
        total = self._signed_sums(ids, vecs, signs)
        if self.pad:
            nonzero = np.bincount(vecs.rows, weights=(signs != 0), minlength=vecs.n)
            total = total + self._padding_sums(ids, self.m - nonzero.astype(np.int64))
        return total.astype(np.float64)

    def encode(self, x, *, identities=None, rng=None) -> np.ndarray:
        """``u_i = Clip(<x_i, S_i>, R)`` (Algorithm 1, step 3)."""
        return np.clip(self.projections(x, identities=identities, rng=rng), -self.R, self.R)

    def privatize(self, x, *, identities=None, rng=None) -> np.ndarray:
        """Release ``Y_i = R Q(u_i / R)`` for every user (Algorithm 1, steps 2-5).

        Parameters
        ----------
        x : SparseVectors, scipy.sparse matrix (n, d) or array (n, d)
            Values per route (``values=``); at most ``m`` items per user.
        identities : array_like of int, optional
            Distinct public identities keying ``S_i`` (default ``0..n-1``); the
            server must use the same ones.
        rng : None, int, SeedSequence or Generator
            The clients' private randomness (rounding and ``Q``).

        Returns
        -------
        float64 array, shape (n,)
        """
        gen = as_generator(rng, "RPC.privatize")
        u = self.encode(x, identities=identities, rng=gen)
        return self.R * self.randomizer.privatize(u / self.R, rng=gen)

    # ------------------------------------------------------------------ server
    def sanitize(self, reports, n: int):
        """Project received reports onto the hull of the output space (counted)."""
        lo, hi = self.output_bounds
        return sanitize_real(reports, (n,), lo, hi, "RPC.estimate", is_legal=self.is_legal)

    def estimate(self, reports, *, identities=None) -> RPCEstimate:
        """Aggregate ``mu_hat = (alpha / n) sum_i Z_i S_i`` (Eq. (20), Algorithm 1 step 14).

        Parameters
        ----------
        reports : array_like, shape (n,)
            One received number per user; malformed reports are sanitized and
            counted, never raised on.
        identities : array_like of int, optional
            The identities the clients used (default ``0..n-1``).

        Returns
        -------
        RPCEstimate
        """
        try:
            n = len(reports)
        except TypeError:
            raise ValueError(
                "The 'reports' parameter of RPC.estimate must be a non-empty 1-d array. "
                f"Got {type(reports).__name__} instead."
            ) from None
        if n < 1:
            raise ValueError("The 'reports' parameter of RPC.estimate must be non-empty. Got 0 reports instead.")
        ids = resolve_identities(identities, n, "RPC.estimate")
        z, report = self.sanitize(reports, n)
        t0 = time.perf_counter()
        raw = global_sketch(self.codebook_seed, ids, (self.alpha / n) * z, self.d, self.n_threads)
        t1 = time.perf_counter()
        mean = raw if self.clip_estimate is None else np.clip(raw, *self.clip_estimate)
        return RPCEstimate(mean=mean, raw=raw, alpha=self.alpha, R=self.R, sanitization=report,
                           n_threads=self.n_threads, seconds={"sketch": t1 - t0})
