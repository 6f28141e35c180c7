"""The Succinct mechanism (Zhou et al., 2022) with clipping, under pure epsilon-LDP.

User ``i`` has two public hashes, ``h_i : [d] -> [b]`` and ``S_i : [d] -> {-1, +1}``,
and releases, for every bucket ``k`` (paper 001, section 3.3),

    B_ik = sum_j 1(h_i(j) = k) x_i(j) S_i(j),      Y_ik = R Q(Clip(B_ik, R) / R).

The server estimates ``mu_hat(j) = (1/n) sum_i S_i(j) Y_{i, h_i(j)}``. The
clipping makes the estimate biased towards 0 (no correction: the
bias-variance trade-off of section 4.3 is set by ``R``). Its plug-in
variance about its own expectation comes from ``sum_i Y_{i, h_i(j)}^2``
(:func:`~fastldp.vectors.base.plug_in_variances`).

Hashing: ``S_i`` is the pair sign of the counter-based hash (stream 0) and
``h_i`` the OLH bucket (stream 1, multiply-shift onto ``b`` buckets,
:func:`fastldp.oracles.olh.olh_hash`), both keyed by ``(codebook_seed,
identity)``; the two streams are independent.
With ``b = 1`` the aggregate is the global sketch ``(1 / n) sum_i Y_i S_i``.

Every sum of the server is exact (:class:`fastldp.streaming.ExactSum`) and
rounded once, so a decode split into chunks and merged in any order
(:meth:`Succinct.partial`, :meth:`Succinct.merge`, :meth:`Succinct.finalize`)
is bit-identical to :meth:`Succinct.estimate`.

Choices where the descriptions are ambiguous
--------------------------------------------
- Budget: paper 001 lets the user send all ``b`` values ``Y_ik``, each from a
  randomizer ``Q`` "under epsilon-LDP". Releasing ``b`` such values is only
  ``b epsilon``-LDP, so fastldp runs each bucket's ``Q`` at ``epsilon / b``
  (sequential composition; the clipping step is what makes this pure LDP,
  paper 001 section 8.1). The whole report is then ``epsilon``-LDP.
- ``b``: default 1. The bound quoted in paper 001, ``O(d sqrt(m ln n / (n eps^2)))``,
  holds for ``b = O(1)``; ``b`` is a parameter.
- ``R``: paper 001 says only ``R ~ sqrt(m ln n)``. The default is
  ``max(1, sqrt(m ln n_users) / 2.5)``, the constant used by the public
  reference implementations of the Succinct mechanism.
- ``Q``: any randomizer of section 2.2 (default Duchi, as for RPC).

References
----------
.. [1] M. Zhou, T. Wang, T-H. H. Chan, G. Fanti, E. Shi, "Locally
   Differentially Private Sparse Vector Aggregation", IEEE S&P 2022,
   Algorithm 1.
.. [2] Paper 001, section 3.3; section 7 (Eqs. (45)-(48), (55)); section 8.1.
"""

from __future__ import annotations

import time
from math import log, sqrt
from typing import Any, Optional, Union

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._hash import pair_signs
from .._random import as_generator, resolve_codebook_seed, resolve_identities, resolve_n_threads
from .._validation import check_float, check_int
from .base import (
    ClipLike,
    RngLike,
    ScaledReportSpace,
    SparseMeanEstimate,
    SparseVectors,
    StreamingServer,
    VectorsLike,
    add_sign_sketch,
    as_sparse_vectors,
    exact_squares,
    plug_in_variances,
    sanitize_real,
)
from ..streaming import ExactSum, Partial
from ..oracles.olh import olh_hash
from ..oracles.randomizers import Randomizer, make_randomizer
from .rpc import resolve_clip_range

__all__ = ["Succinct"]

_CHUNK = 4096  # users per chunk of the O(n d) server gather when b > 1


class Succinct(ScaledReportSpace, StreamingServer):
    """Succinct mechanism: ``b`` clipped, randomized bucket sums per user.

    Parameters
    ----------
    d : int
    m : int
        Most items per user, ``1 <= m <= d``.
    epsilon : float in (0, inf)
        Budget of the whole report; each bucket uses ``epsilon / b``.
    b : int
        Number of buckets of ``h_i`` (default 1).
    R : float >= 1, optional
        Clipping threshold; default ``max(1, sqrt(m ln n_users) / 2.5)``.
    n_users : int, optional
        Needed for the default ``R``.
    randomizer : {"duchi", "piecewise", "laplace", "auto"}
        ``Q`` (built at ``epsilon / b``).
    clip_estimate : None, "frequency", "mean" or (low, high)
    codebook_seed : int or None
    n_threads : int or None

    items_per_user : int, optional
        The name every family shares for ``m`` (pass one of the two).

    Notes
    -----
    Reports are float64 arrays of shape ``(n, b)``; the output space of each
    entry is ``R`` times that of ``Q``.

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.Succinct(d=6, m=2, epsilon=2.0, R=1.0, codebook_seed=4)
    >>> x = np.zeros((3000, 6)); x[:, 0] = 1.0
    >>> reports = mech.privatize(x, rng=0)
    >>> reports.shape
    (3000, 1)
    >>> est = mech.estimate(reports)
    >>> est.estimate.shape, est.n, est.std.shape
    ((6,), 3000, (6,))
    """

    def __init__(self, *, d: int, m: Optional[int] = None, epsilon: float,
                 items_per_user: Optional[int] = None, b: int = 1, R: Optional[float] = None,
                 n_users: Optional[int] = None, randomizer: Union[str, Randomizer] = "duchi",
                 clip_estimate: ClipLike = None, codebook_seed: Optional[int] = None,
                 n_threads: Optional[int] = None) -> None:
        owner = type(self).__name__
        self._set_d_m_epsilon(d, m, items_per_user, epsilon, owner)
        self.b = check_int(b, "b", owner, low=1)
        self.n_users = None if n_users is None else check_int(n_users, "n_users", owner, low=2)
        if R is None:
            if self.n_users is None:
                raise ValueError(
                    f"The 'R' parameter of {owner} is required unless 'n_users' is given "
                    "(R = max(1, sqrt(m ln n) / 2.5)). Got R=None instead.")
            R = max(1.0, sqrt(self.m * log(self.n_users)) / 2.5)
        self.R = check_float(R, "R", owner, low=1.0, low_open=False)
        self.randomizer: Randomizer = make_randomizer(randomizer, self.epsilon / self.b, owner)
        self.clip_estimate = resolve_clip_range(clip_estimate, owner)
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.n_threads = resolve_n_threads(n_threads, owner)

    def __repr__(self) -> str:
        return (f"Succinct(d={self.d}, m={self.m}, epsilon={self.epsilon!r}, b={self.b}, "
                f"R={self.R!r}, randomizer={self.randomizer.name!r}, "
                f"clip_estimate={self.clip_estimate!r}, codebook_seed={self.codebook_seed})")

    def is_legal(self, reports: ArrayLike) -> np.ndarray:
        """Per user: every bucket value in the output space of ``R * Q``."""
        y = np.asarray(reports, dtype=np.float64)
        return self._report_mask(y).reshape(y.shape[0], -1).all(axis=1)

    # ----------------------------------------------------------- public hashes
    def signs(self, identities: ArrayLike, coords: ArrayLike) -> np.ndarray:
        """``S_i(j)`` for paired arrays of identities and coordinates (int8)."""
        return pair_signs(self.codebook_seed, np.ascontiguousarray(identities, dtype=np.uint64),
                          np.ascontiguousarray(coords, dtype=np.int64))

    def buckets(self, identities: ArrayLike, coords: ArrayLike) -> np.ndarray:
        """``h_i(j)`` for paired arrays (int64 in ``[0, b)``)."""
        coords = np.ascontiguousarray(coords, dtype=np.int64)
        if self.b == 1:
            return np.zeros(coords.shape[0], dtype=np.int64)
        return olh_hash(self.codebook_seed, identities, coords, self.b)

    # ------------------------------------------------------------------ client
    def vectors(self, x: VectorsLike) -> SparseVectors:
        return as_sparse_vectors(x, d=self.d, owner=type(self).__name__, m=self.m)

    def bucket_sums(self, x: VectorsLike, *, identities: Optional[ArrayLike] = None) -> np.ndarray:
        """``B_ik`` before clipping, shape ``(n, b)``."""
        vecs = self.vectors(x)
        ids = resolve_identities(identities, vecs.n, type(self).__name__)
        rep = np.repeat(ids, vecs.sizes)
        s = self.signs(rep, vecs.indices)
        h = self.buckets(rep, vecs.indices)
        out = np.zeros(vecs.n * self.b)
        np.add.at(out, vecs.rows * self.b + h, s * vecs.values)
        return out.reshape(vecs.n, self.b)

    def privatize(self, x: VectorsLike, *, epsilons: Optional[ArrayLike] = None,
                  identities: Optional[ArrayLike] = None, rng: RngLike = None) -> np.ndarray:
        """Release ``Y_ik = R Q(Clip(B_ik, R) / R)``, shape ``(n, b)`` float64.

        Parameters
        ----------
        x : SparseVectors, scipy.sparse matrix or array, shape (n, d)
            At most ``m`` items per user, values in ``[-1, 1]``.
        epsilons : None or float, optional
            ``None`` or the constructor's ``epsilon`` (a scalar or one per
            user); anything else is a ``ValueError`` (no personal budgets).
        identities : array_like of int, optional
            Distinct public identities keying ``S_i`` and ``h_i`` (default
            ``0..n-1``); the server must use the same ones.
        rng : None, int, SeedSequence or Generator
            The clients' private randomness.
        """
        owner = "Succinct.privatize"
        self._fixed_budget(epsilons, None, owner)
        gen = as_generator(rng, owner)
        u = np.clip(self.bucket_sums(x, identities=identities), -self.R, self.R)
        self._fixed_budget(epsilons, u.shape[0], owner)
        return self.R * self.randomizer.privatize(u / self.R, rng=gen)

    def channel_density(self, reports: ArrayLike, u: ArrayLike) -> np.ndarray:
        """Joint density of reports ``(n, b)`` given normalized bucket inputs
        ``u = Clip(B, R) / R`` (product over buckets; a probability for Duchi)."""
        u = np.asarray(u, dtype=np.float64)
        y = np.asarray(reports, dtype=np.float64).reshape(u.shape) / self.R
        dens = self.randomizer.density(y, u)
        if not self.randomizer.discrete:
            dens = dens / self.R
        return dens.prod(axis=-1)

    def density(self, reports: ArrayLike, x: VectorsLike, *,
                identities: Optional[ArrayLike] = None) -> np.ndarray:
        """Joint density of each user's report given ``x_i`` (see :meth:`channel_density`)."""
        u = np.clip(self.bucket_sums(x, identities=identities), -self.R, self.R) / self.R
        return self.channel_density(reports, u)

    # ------------------------------------------------------------------ server
    _REASONS = ("off_alphabet", "out_of_range", "infinite", "nan", "non_numeric")

    def _report_matrix(self, reports, owner: str, *, allow_empty: bool):
        """``reports`` as an ``(n, b)`` array (a 1-d array when ``b = 1``), or raise."""
        try:
            arr = np.asarray(reports)
        except ValueError:
            arr = np.asarray(reports, dtype=object)
        if allow_empty and arr.ndim == 1 and arr.shape[0] == 0:
            arr = arr.reshape(0, self.b)
        if arr.ndim == 1 and self.b == 1:
            arr = arr[:, None]
        if (arr.ndim != 2 or arr.shape[1] != self.b
                or (arr.shape[0] < 1 and not allow_empty)):
            what = "an" if allow_empty else "a non-empty"
            raise ValueError(
                f"The 'reports' parameter of {owner} must be {what} (n, {self.b}) "
                f"array. Got shape {arr.shape} instead.")
        return arr

    def estimate(self, reports: Any, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> SparseMeanEstimate:
        """``mu_hat(j) = (1/n) sum_i S_i(j) Y_{i, h_i(j)}``; malformed entries are sanitized.

        Exactly ``finalize(partial(reports, identities=identities))`` (see
        :meth:`partial`).

        Parameters
        ----------
        reports : array_like, shape (n, b) (or (n,) when ``b = 1``)
        epsilons : None or float, optional
            ``None`` or the constructor's ``epsilon`` (a scalar or one per
            report); anything else is a ``ValueError`` (no personal budgets).
        identities : array_like of int, optional
            The identities the clients used (default ``0..n-1``).

        Returns
        -------
        SparseMeanEstimate
            With the plug-in ``variances`` from ``sum_i Y_{i, h_i(j)}^2``.
        """
        owner = "Succinct.estimate"
        self._report_matrix(reports, owner, allow_empty=False)
        t0 = time.perf_counter()
        state = self._partial(reports, epsilons, identities, owner)
        t1 = time.perf_counter()
        result = self._finalize(state, owner)
        result.seconds["aggregate"] = t1 - t0 + result.seconds.pop("scale")
        return result

    # ------------------------------------------------------------ streaming
    def stream_params(self) -> dict:
        """The public parameters a partial is bound to (JSON values).

        ``type(self)(**params)`` rebuilds an equivalent server: ``R`` is the
        resolved threshold and ``randomizer`` the resolved randomizer's name
        (a custom :class:`Randomizer` subclass rebuilds only if its ``name``
        is one of :data:`fastldp.oracles.randomizers.RANDOMIZERS`).
        ``n_threads`` is not a parameter: results do not depend on it.
        """
        return {"d": self.d, "m": self.m, "epsilon": self.epsilon, "b": self.b, "R": self.R,
                "n_users": self.n_users, "randomizer": self.randomizer.name,
                "clip_estimate": None if self.clip_estimate is None else list(self.clip_estimate),
                "codebook_seed": self.codebook_seed}

    def _sum_sizes(self) -> dict:
        return {"sketch": self.d, "squares": 1 if self.b == 1 else self.d}

    def partial(self, reports: Any, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """The exact, mergeable state of the Succinct server over a chunk of reports.

        Parameters
        ----------
        reports : array_like, shape (n, b) (or (n,) when ``b = 1``)
            The chunk's reports (``n`` may be 0); sanitized and counted as in
            :meth:`estimate`.
        epsilons : None or float
            The budget is fixed by the constructor: ``None`` or the
            mechanism's ``epsilon`` (a scalar or one per report); anything
            else raises ``ValueError``.
        identities : array_like of int, optional
            The chunk's identities. The default ``0 .. n-1`` is right only
            for a first chunk: pass them for every other chunk.

        Returns
        -------
        fastldp.streaming.Partial
            Holds ``sum_i S_i(j) Y_{i, h_i(j)}`` for ``j < d`` as an
            :class:`~fastldp.streaming.ExactSum` (``"sketch"``: with ``b = 1``
            built by :func:`~fastldp.vectors.base.add_sign_sketch`, with
            ``b > 1`` by ``ExactSum.add`` of the ``n d`` exact terms
            ``S_i(j) Y_{i, h_i(j)}``, ``4096`` users at a time), the exact sum
            of the squares ``Y_{i, h_i(j)}^2`` (``"squares"``: one position
            when ``b = 1``, ``d`` otherwise; each square rounded once), and as
            integer counts the number of reports (``"users"``) and the
            sanitization outcomes of the ``n b`` entries. ``O(d)`` memory
            whatever ``n``.
        """
        return self._partial(reports, epsilons, identities, "Succinct.partial")

    def _partial(self, reports, epsilons, identities, owner) -> Partial:
        arr = self._report_matrix(reports, owner, allow_empty=True)
        n = arr.shape[0]
        self._fixed_budget(epsilons, n, owner)
        ids = resolve_identities(identities, n, owner)
        sketch = ExactSum(self.d)
        squares = ExactSum(self._sum_sizes()["squares"])
        report = None
        if n:
            lo, hi = self.output_bounds
            legal = None
            if self.randomizer.discrete:
                c = self.R * self.randomizer.c_eps
                legal = lambda v: (v == c) | (v == -c)  # noqa: E731
            y, report = sanitize_real(arr, arr.shape, lo, hi, owner, is_legal=legal)
            if self.b == 1:
                add_sign_sketch(sketch, self.codebook_seed, ids, y[:, 0], self.n_threads)
                squares.add_terms(exact_squares(y[:, 0]))
            else:
                coords = np.arange(self.d, dtype=np.int64)
                positions = np.tile(coords, min(n, _CHUNK))
                for start in range(0, n, _CHUNK):
                    stop = min(n, start + _CHUNK)
                    rep = np.repeat(ids[start:stop], self.d)
                    cc = positions[: (stop - start) * self.d]
                    s = self.signs(rep, cc).reshape(stop - start, self.d)
                    h = self.buckets(rep, cc).reshape(stop - start, self.d)
                    vals = np.take_along_axis(y[start:stop], h, axis=1)
                    sketch.add((s * vals).ravel(), cc)
                    squares.add(exact_squares(vals).ravel(), cc)
        return self._new_partial(n, report, {"sketch": sketch, "squares": squares})

    def finalize(self, partial: Partial) -> SparseMeanEstimate:
        """Turn a (merged) partial into the estimate of all its reports.

        ``raw = S / n`` with ``S`` the exact sum rounded once; ``ValueError``
        for a partial of another mechanism or other parameters, or one
        holding no reports.
        """
        result = self._finalize(partial, "Succinct.finalize")
        result.seconds["aggregate"] = result.seconds.pop("scale")
        return result

    def _finalize(self, partial: Partial, owner: str) -> SparseMeanEstimate:
        state = self._open(partial, owner)
        t0 = time.perf_counter()
        n = state.counts["users"]
        raw = state.sums["sketch"].value() / n
        mean = raw if self.clip_estimate is None else np.clip(raw, *self.clip_estimate)
        squares = state.sums["squares"].value()
        # T_ij = S_i(j) Y_{i, h_i(j)}: sum_i T_ij^2 = sum_i Y_{i, h_i(j)}^2
        variances = plug_in_variances(squares[0] if self.b == 1 else squares, raw, n)
        return SparseMeanEstimate(mean=mean, raw=raw, sanitization=self._report_of(state),
                                  n=int(n), privacy=self._privacy(), variances=variances,
                                  seconds={"scale": time.perf_counter() - t0})
