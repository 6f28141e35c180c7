"""The Collision mechanism (Wang et al., 2023) for set-valued and signed sparse data.

User ``i`` has a public hash ``H_i : symbols -> [t]`` and its set of hashed
symbols ``H_i(x_i)`` of size ``c_i <= m`` (collisions make it smaller). It
sends one ``Y_i in [t]`` (paper 001, Eq. (13)):

    P(Y_i = k | x_i) = e^eps / Omega                             if k in H_i(x_i)
                     = (Omega - e^eps c_i) / ((t - c_i) Omega)   otherwise

with ``Omega = m e^eps + t - m``. The server estimates (Eq. (14))

    mu_hat(j) = ((1/n) sum_i 1(Y_i = H_i(j)) - 1/t) / (e^eps / Omega - 1/t),

unbiased for the fraction of users holding symbol ``j`` (for ``j`` held,
``P(Y = H(j)) = e^eps / Omega``; for ``j`` not held, ``H(j)`` is independent
of ``Y`` and uniform, so the probability is ``1/t``).

Signed values (section 3.3): symbols are ``j`` for ``x(j) = +1`` and
``d + j`` for ``x(j) = -1`` (``2d`` symbols); ``mu = mu_e(+) - mu_e(-)``.
General values in ``[-1, 1]`` are first rounded to ``+-1`` by Eq. (35), as
Wang et al. do, so they pass through the same channel.

Plug-in variance
----------------
User ``i`` adds ``T_ij = scale (A_ij - 1/t)`` to the estimate of symbol
``j``, ``A_ij = 1(Y_i = H_i(j))``, ``scale = 1 / (e^eps / Omega - 1/t)``,
with ``E[T_ij] = x_i(j)``. In frequency mode ``T_ij^2 = scale^2 (A_ij (1 -
2/t) + 1/t^2)`` is a function of the hit counts, so ``sum_i T_ij^2`` is
read from the reports exactly. In signed mode ``T_ij = scale (A_ij -
A_i(d+j))`` and ``T_ij^2 = scale^2 (A_ij + A_i(d+j) - 2 A_ij A_i(d+j))``;
the hit counts give the first two terms, and the last is replaced by its
expectation, ``P(Y_i = H_i(j) = H_i(d + j))``, which is ``e^eps / (Omega t)``
for a user with an entry at ``j`` (one of its two symbols is held, the
other hashes uniformly) and ``1 / t^2`` otherwise, the fraction of users
with an entry at ``j`` being estimated by the two symbols' frequencies.
Both then go through :func:`~fastldp.vectors.base.plug_in_variances`.

Hashing
-------
``H_i`` is the OLH hash of the counter-based hash keyed by
``(codebook_seed, identity)`` (:mod:`fastldp._kernels._olh`, multiply-shift
onto ``t`` buckets: each bucket has probability within ``2^-32`` of ``1/t``),
so the server's count ``sum_i 1(Y_i = H_i(j))`` for all ``j`` is OLH's server
sum. Both come from :mod:`fastldp.oracles.olh` (:func:`~fastldp.oracles.olh.olh_hash`,
:func:`~fastldp.oracles.olh.olh_hits`), the one implementation of the OLH
hash; only the channel differs (a set of hashed symbols, Eq. (13), where OLH
hashes one). This replaces the biased ``hash mod t`` of some public
implementations.

The server's state is the integer hit count per symbol, so a decode split
into chunks and merged in any order (:meth:`Collision.partial`,
:meth:`Collision.merge`, :meth:`Collision.finalize`) is bit-identical to
:meth:`Collision.estimate`.

Choices where the descriptions are ambiguous
--------------------------------------------
- ``t``: Wang et al.'s optimum ``t* = m e^eps + 2m - 1`` (paper 001, section
  8.1) is real; a hash range must be an integer, so ``t = round(t*)``, at
  least ``m + 1`` (``t > c_i`` keeps the channel well defined). ``t=`` may be
  given explicitly.
- Eq. (13) lists the output law "for ``j = 1, ..., d``"; the outputs range
  over ``[t]``, which is what the probabilities sum to one over.
- Frequency mode counts an item as held when its stored value is 1; stored
  zeros are ignored. Signed mode sends every stored entry (a stored 0 is
  rounded to a fair sign).

References
----------
.. [1] S. Wang et al., "Collision" mechanism for sparse set-valued data
   (2023), as described in paper 001, section 3.3, Eqs. (13)-(14).
.. [2] Paper 001, section 7 (Eqs. (42)-(44), (54)), Appendix G.
"""

from __future__ import annotations

import time
from math import exp
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike

from .._random import as_generator, resolve_codebook_seed, resolve_identities, resolve_n_threads
from .._validation import check_choice, check_int
from ..oracles.olh import olh_hash, olh_hits
from .base import (
    ClipLike,
    RngLike,
    SparseMeanEstimate,
    SparseVectors,
    StreamingServer,
    VectorsLike,
    as_sparse_vectors,
    plug_in_variances,
    round_to_signs,
    sanitize_symbols,
)
from .rpc import resolve_clip_range
from ..streaming import ExactSum, Partial, chunk_length

__all__ = ["Collision"]


class Collision(StreamingServer):
    """Collision mechanism: one symbol in ``[t]`` per user, epsilon-LDP.

    Parameters
    ----------
    d : int
        Dimension.
    m : int
        Most items per user, ``1 <= m <= d``.
    epsilon : float in (0, inf)
    values : {"frequency", "signed"}
        ``"frequency"``: ``x in {0, 1}^d`` over ``d`` symbols.
        ``"signed"``: ``x in [-1, 1]^d`` over ``2d`` symbols (module docstring).
    t : int, optional
        Hash range; default ``round(m e^eps + 2m - 1)``, at least ``m + 1``.
    clip_estimate : None, "frequency", "mean" or (low, high)
    codebook_seed : int or None
        Public seed of the hashes ``H_i``.
    n_threads : int or None

    items_per_user : int, optional
        The name every family shares for ``m`` (pass one of the two).

    Notes
    -----
    The channel is ``epsilon``-LDP: every output probability lies in
    ``[1 / Omega, e^eps / Omega]`` because ``c_i <= m``.

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.Collision(d=8, m=2, epsilon=2.0, codebook_seed=5)
    >>> x = np.zeros((2000, 8)); x[:, 0] = 1.0; x[:1000, 3] = 1.0
    >>> reports = mech.privatize(x, rng=0)
    >>> est = mech.estimate(reports)
    >>> est.estimate.shape, est.n
    ((8,), 2000)
    >>> bool(abs(est.estimate[3] - 0.5) < 4 * est.std[3])
    True
    """

    def __init__(self, *, d: int, m: Optional[int] = None, epsilon: float,
                 items_per_user: Optional[int] = None, values: str = "frequency",
                 t: Optional[int] = None, clip_estimate: ClipLike = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None) -> None:
        owner = type(self).__name__
        self._set_d_m_epsilon(d, m, items_per_user, epsilon, owner)
        self.values = check_choice(values, "values", owner, ("frequency", "signed"))
        if t is None:
            t = max(self.m + 1, int(round(self.m * exp(self.epsilon) + 2 * self.m - 1)))
        self.t = check_int(t, "t", owner, low=self.m + 1)
        self.n_symbols = self.d if self.values == "frequency" else 2 * self.d
        self.omega = self.m * exp(self.epsilon) + self.t - self.m
        self.clip_estimate = resolve_clip_range(clip_estimate, owner)
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.n_threads = resolve_n_threads(n_threads, owner)

    def __repr__(self) -> str:
        return (f"Collision(d={self.d}, m={self.m}, epsilon={self.epsilon!r}, "
                f"values={self.values!r}, t={self.t}, clip_estimate={self.clip_estimate!r}, "
                f"codebook_seed={self.codebook_seed})")

    @property
    def p_hit(self) -> float:
        """``e^eps / Omega``: the probability of each bucket in ``H_i(x_i)``."""
        return exp(self.epsilon) / self.omega

    @property
    def scale(self) -> float:
        """``1 / (e^eps / Omega - 1 / t)``, the estimator's slope (Eq. (14))."""
        return 1.0 / (self.p_hit - 1.0 / self.t)

    # ------------------------------------------------------------------ client
    def vectors(self, x: VectorsLike) -> SparseVectors:
        return as_sparse_vectors(x, d=self.d, owner=type(self).__name__, m=self.m)

    def _example_values(self, n_entries: int, rng: np.random.Generator) -> np.ndarray:
        """Frequencies hold the value 1 on every item they count; signed values are +-1."""
        if self.values == "frequency":
            return np.ones(n_entries)
        return super()._example_values(n_entries, rng)

    def symbols(self, x: VectorsLike, *, rng: RngLike = None) -> tuple[np.ndarray, np.ndarray]:
        """The symbols each user holds: CSR ``(indptr, symbols)``.

        Signed mode rounds values to signs (Eq. (35)) with ``rng``.
        """
        vecs = self.vectors(x)
        if self.values == "frequency":
            off = ~np.isin(vecs.values, (0.0, 1.0))
            if off.any():
                raise ValueError(
                    "The 'x' parameter of Collision must hold values in {0, 1} when "
                    "values='frequency' (use values='signed'). "
                    f"Got {float(vecs.values[off][0])!r} instead.")
            keep = vecs.values == 1.0
            sym = vecs.indices[keep]
            rows = vecs.rows[keep]
        else:
            signs = round_to_signs(vecs.values, as_generator(rng, "Collision.privatize"))
            sym = vecs.indices + np.where(signs < 0, self.d, 0)
            rows = vecs.rows
        counts = np.bincount(rows, minlength=vecs.n)
        indptr = np.concatenate([[0], np.cumsum(counts)]).astype(np.int64)
        return indptr, np.ascontiguousarray(sym, dtype=np.int64)

    def buckets(self, ids: np.ndarray, rows: np.ndarray, symbols: np.ndarray) -> np.ndarray:
        """``H_{ids[rows[k]]}(symbols[k])`` for every k (int64 in ``[0, t)``)."""
        return olh_hash(self.codebook_seed, ids[rows], symbols, self.t)

    def hashed_sets(self, x: VectorsLike, *, identities: Optional[ArrayLike] = None,
                    rng: RngLike = None) -> tuple[np.ndarray, np.ndarray]:
        """Sorted distinct buckets ``H_i(x_i)`` per user as an ``(n, m)`` matrix
        padded with ``t``, and their counts ``c_i``."""
        indptr, sym = self.symbols(x, rng=rng)
        n = indptr.shape[0] - 1
        ids = resolve_identities(identities, n, type(self).__name__)
        sizes = np.diff(indptr)
        rows = np.repeat(np.arange(n), sizes)
        buckets = self.buckets(ids, rows, sym)
        mat = np.full((n, self.m), self.t, dtype=np.int64)
        mat[rows, np.arange(sym.shape[0]) - indptr[rows]] = buckets
        mat.sort(axis=1)
        dup = np.zeros_like(mat, dtype=bool)
        dup[:, 1:] = mat[:, 1:] == mat[:, :-1]
        mat[dup] = self.t
        mat.sort(axis=1)
        counts = (mat < self.t).sum(axis=1)
        return mat, counts

    def channel(self, x: VectorsLike, *,
                identities: Optional[ArrayLike] = None) -> np.ndarray:
        """Exact ``P(Y_i = k | x_i)`` as an ``(n, t)`` matrix (Eq. (13)).

        Needs values that involve no rounding (``{0, 1}`` or ``{-1, 1}``).
        """
        mat, counts = self.hashed_sets(x, identities=identities, rng=0)
        n = mat.shape[0]
        e = exp(self.epsilon)
        out = np.empty((n, self.t))
        out[:] = ((self.omega - e * counts) / ((self.t - counts) * self.omega))[:, None]
        rows = np.repeat(np.arange(n), self.m)
        cols = mat.ravel()
        keep = cols < self.t
        out[rows[keep], cols[keep]] = self.p_hit
        return out

    def privatize(self, x: VectorsLike, *, epsilons: Optional[ArrayLike] = None,
                  identities: Optional[ArrayLike] = None, rng: RngLike = None) -> np.ndarray:
        """Release one symbol ``Y_i in [t]`` per user (int64), Eq. (13).

        Parameters
        ----------
        x : SparseVectors, scipy.sparse matrix or array, shape (n, d)
            ``{0, 1}`` values (``values="frequency"``) or values in
            ``[-1, 1]`` (``"signed"``); at most ``m`` items per user.
        epsilons : None or float, optional
            ``None`` or the constructor's ``epsilon`` (a scalar or one per
            user); anything else is a ``ValueError`` (no personal budgets).
        identities : array_like of int, optional
            Distinct public identities keying ``H_i`` (default ``0..n-1``).
        rng : None, int, SeedSequence or Generator
            The clients' private randomness.
        """
        owner = "Collision.privatize"
        self._fixed_budget(epsilons, None, owner)
        gen = as_generator(rng, owner)
        mat, counts = self.hashed_sets(x, identities=identities, rng=gen)
        n = mat.shape[0]
        self._fixed_budget(epsilons, n, owner)
        in_set = gen.random(n) < counts * self.p_hit
        r = gen.random(n)
        pick = np.minimum((r * counts).astype(np.int64), np.maximum(counts - 1, 0))
        hit = mat[np.arange(n), pick]
        # the r-th smallest bucket outside H_i(x_i): walk the sorted set
        v = np.minimum((r * (self.t - counts)).astype(np.int64), self.t - counts - 1)
        for k in range(self.m):
            v += mat[:, k] <= v
        return np.where(in_set, hit, v).astype(np.int64)

    def is_legal(self, reports: ArrayLike) -> np.ndarray:
        """Per report: an integer symbol in ``[0, t)``."""
        y = np.asarray(reports)
        if y.dtype.kind not in "iu":
            yf = y.astype(np.float64)
            return np.isfinite(yf) & (yf == np.round(yf)) & (yf >= 0) & (yf < self.t)
        return (y >= 0) & (y < self.t)

    # ------------------------------------------------------------------ server
    _REASONS = ("out_of_range", "not_integer", "nan", "infinite", "non_numeric")

    def symbol_counts(self, reports: Any, *,
                      identities: Optional[ArrayLike] = None) -> tuple[np.ndarray, object]:
        """``sum_i 1(Y_i = H_i(s))`` for every symbol ``s``, with the sanitization report."""
        n = len(reports)
        if n < 1:
            raise ValueError("The 'reports' parameter of Collision.estimate must be non-empty. "
                             "Got 0 reports instead.")
        state = self._partial(reports, None, identities, "Collision.estimate")
        return state.sums["hits"].value(), self._report_of(state)

    def estimate(self, reports: Any, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> SparseMeanEstimate:
        """Eq. (14) per symbol; signed mode returns ``mu_e(+) - mu_e(-)``.

        Exactly ``finalize(partial(reports, identities=identities))``.

        Parameters
        ----------
        reports : array_like, shape (n,)
            One symbol per user; malformed symbols are sanitized and counted.
        epsilons : None or float, optional
            ``None`` or the constructor's ``epsilon`` (a scalar or one per
            report); anything else is a ``ValueError`` (no personal budgets).
        identities : array_like of int, optional
            The identities the clients used (default ``0..n-1``).

        Returns
        -------
        SparseMeanEstimate
            With the plug-in ``variances`` of the module docstring;
            ``details["symbol_frequencies"]`` holds Eq. (14) per symbol.
        """
        t0 = time.perf_counter()
        n = len(reports)
        if n < 1:
            raise ValueError("The 'reports' parameter of Collision.estimate must be non-empty. "
                             "Got 0 reports instead.")
        state = self._partial(reports, epsilons, identities, "Collision.estimate")
        result = self._finalize(state, "Collision.estimate")
        result.seconds["aggregate"] = time.perf_counter() - t0
        return result

    # ------------------------------------------------------------ streaming
    def stream_params(self) -> dict:
        """The public parameters a partial is bound to (JSON values).

        ``type(self)(**params)`` rebuilds an equivalent server (``t`` is the
        resolved hash range). ``n_threads`` is not a parameter: results do
        not depend on it.
        """
        return {"d": self.d, "m": self.m, "epsilon": self.epsilon, "values": self.values,
                "t": self.t,
                "clip_estimate": None if self.clip_estimate is None else list(self.clip_estimate),
                "codebook_seed": self.codebook_seed}

    def _sum_sizes(self) -> dict:
        return {"hits": self.n_symbols}

    def partial(self, reports: Any, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """The exact, mergeable state of the Collision server over a chunk of reports.

        Parameters
        ----------
        reports : array_like, shape (n,)
            The chunk's symbols (``n`` may be 0); sanitized and counted as in
            :meth:`estimate` (a malformed symbol becomes the public
            pseudo-random symbol of its identity).
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
            Holds the integer hit counts ``sum_i 1(Y_i = H_i(s))`` for every
            symbol ``s`` (``"hits"``, an :class:`~fastldp.streaming.ExactSum`
            fed by ``add_integers``), and as integer counts the number of
            reports (``"users"``) and the sanitization outcomes. ``O(d)``
            memory whatever ``n``.
        """
        return self._partial(reports, epsilons, identities, "Collision.partial")

    def _partial(self, reports, epsilons, identities, owner) -> Partial:
        n = chunk_length(reports, owner)
        self._fixed_budget(epsilons, n, owner)
        ids = resolve_identities(identities, n, owner)
        hits = ExactSum(self.n_symbols)
        report = None
        if n:
            y, report = sanitize_symbols(reports, n, self.t, self.codebook_seed, ids, owner)
            # weights 1.0: every partial sum of the kernel is an integer below 2**53, exact
            counts = olh_hits(self.codebook_seed, ids, y, self.t, 1.0, self.n_symbols,
                              self.n_threads)
            hits.add_integers(np.rint(counts).astype(np.int64))
        return self._new_partial(n, report, {"hits": hits})

    def _finalize(self, partial: Partial, owner: str) -> SparseMeanEstimate:
        state = self._open(partial, owner)
        n = state.counts["users"]
        counts = state.sums["hits"].value()
        per_symbol = (counts / n - 1.0 / self.t) * self.scale
        raw = per_symbol if self.values == "frequency" else per_symbol[: self.d] - per_symbol[self.d:]
        mean = raw if self.clip_estimate is None else np.clip(raw, *self.clip_estimate)
        return SparseMeanEstimate(mean=mean, raw=raw, sanitization=self._report_of(state),
                                  n=int(n), privacy=self._privacy(),
                                  variances=self._variances(counts, per_symbol, raw, n),
                                  details={"symbol_frequencies": per_symbol})

    def _variances(self, counts, per_symbol, raw, n: int) -> np.ndarray:
        """The plug-in variance of ``raw`` from the hit counts (module docstring)."""
        t, scale2 = float(self.t), self.scale**2
        if self.values == "frequency":
            return plug_in_variances(scale2 * (counts * (1.0 - 2.0 / t) + n / t**2), raw, n)
        held = np.clip(per_symbol[: self.d] + per_symbol[self.d:], 0.0, 1.0)
        both = n * (held * self.p_hit / t + (1.0 - held) / t**2)
        return plug_in_variances(scale2 * (counts[: self.d] + counts[self.d:] - 2.0 * both),
                                 raw, n)
