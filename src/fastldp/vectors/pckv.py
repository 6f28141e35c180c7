"""PCKV-UE and PCKV-GRR (Gu et al., USENIX Security 2020) for sparse-vector means.

Client (Padding-and-Sampling, then a correlated key-value perturbation):

1. the user's ``s <= l`` items are padded with ``l - s`` dummy keys from
   ``{d, ..., d + l - 1}`` (value 0) and one of the ``l`` entries is sampled
   uniformly: a real item ``k`` with probability ``1 / l`` each, otherwise a
   dummy key uniform over the ``l`` dummies;
2. the value is discretized to ``v* = +-1`` with ``P(+1) = (1 + v) / 2``
   (a dummy's 0 becomes a fair sign);
3. PCKV-UE (paper 001 Eqs. (65), (69)) releases ``y in {-1, 0, 1}^{d + l}``:
   ``y(k) = v*`` w.p. ``a p``, ``-v*`` w.p. ``a (1 - p)``, 0 w.p. ``1 - a``;
   every other ``y(j) = +-1`` w.p. ``b / 2`` each, 0 w.p. ``1 - b``; with
   ``a = 1/2`` and ``b = 1 / (e^{eps1} + 1)`` (optimized unary encoding, so
   ``a (1 - b) / (b (1 - a)) = e^{eps1}``).
   PCKV-GRR releases one pair ``(k', v')``: ``k' = k`` w.p.
   ``a = e^{eps1} / (e^{eps1} + d + l - 1)`` and then ``v' = v*`` w.p. ``p``;
   otherwise ``k'`` is uniform over the other ``d + l - 1`` keys and ``v'`` a
   fair sign.

Here ``p = e^{eps2} / (e^{eps2} + 1)``.

Both key perturbations are variants of the plain oracles of
:mod:`fastldp.oracles`, and take their parameters and, for GRR, the key
draw from them: PCKV-GRR's key is :class:`~fastldp.oracles.GRR` over the
``d + l`` keys at ``eps1`` (``a, b = p, q`` of GRR; the key is drawn by
``GRR.perturb``), and the value is then kept, flipped or replaced by a fair
sign depending on whether the key was kept - a correlated step plain GRR
does not have. PCKV-UE's support is :class:`~fastldp.oracles.OUE` at
``eps1`` (``a, b = p, q`` of OUE), but each set entry carries a sign
(ternary ``{-1, 0, 1}`` instead of OUE's bits), so its sampler stays here.

PCKV uses no public randomness: ``identities`` is accepted by ``privatize``,
``estimate`` and ``partial`` for a uniform interface with the hashed
mechanisms, and ignored.

The server's sums are integer counts, so a decode split into chunks and
merged in any order (``partial``, ``merge``, ``finalize``) is bit-identical
to ``estimate``.

Server (paper 001 Eq. (70)), for a real key ``j < d``:

    mu_hat(j) = l / (n a (2p - 1)) * sum_i y_i(j)

Its plug-in variance (:attr:`SparseMeanEstimate.variances`) comes from the
same counts: ``y_i(j)^2`` is 1 exactly when report ``i`` sets key ``j``, so
``sum_i (scale y_i(j))^2 = scale^2 N_j`` with ``scale = l / (a (2p - 1))``
(:func:`~fastldp.vectors.base.plug_in_variances`).

with ``y_i(j)`` the GRR report's value when its key is ``j`` (else 0). It is
unbiased for the sample mean ``(1/n) sum_i x_i(j)`` when every user has at
most ``l`` items. :attr:`SparseMeanEstimate.details` also holds PCKV's key
frequency estimate ``f_hat(j) = l (N_j / n - b) / (a - b)`` with ``N_j`` the
number of reports whose key ``j`` is set (``b = (1 - a) / (d + l - 1)`` for
GRR).

Budget split
------------
The correlated perturbation is ``epsilon``-LDP with
``epsilon = max{eps2, eps1 + ln(2 / (1 + e^{-eps2}))}`` (Gu et al.'s
composition for correlated key-value perturbation; paper 001, Appendix B) -
not ``eps1 + eps2``. The default split is ``eps2 = epsilon`` and
``eps1 = ln((e^epsilon + 1) / 2)``: both terms of the max then equal
``epsilon`` exactly, so the composed bound is tight. On that boundary it
also minimizes the dominant variance term of Eq. (70): for UE the per-report
variance ``b / (a (2p - 1))^2``, for GRR ``1 / (a (2p - 1))^2`` with
``a ~ e^{eps1} / (d + l)``; along the boundary ``a (2p - 1)`` is then
proportional to ``1 - e^{-eps2}``, largest at ``eps2 = epsilon``. A custom ``epsilon_split=(eps1, eps2)`` is accepted
when its composed budget does not exceed ``epsilon``.

Choices where the descriptions are ambiguous
--------------------------------------------
- Padding length ``l``: paper 001's Eq. (70) has the factor ``m``, i.e.
  ``l = m``; fastldp fixes ``l = m`` and rejects users with more than ``m``
  items (Gu et al. sample among all ``s > l`` items, which biases Eq. (70)).
- Paper 001's ``mu`` is the sparse-vector mean (frequency times the mean
  value among holders), so the estimator is Eq. (70), not Gu et al.'s
  separate mean-of-values estimator; on ``{0, 1}`` data it estimates
  frequencies and has smaller variance than ``f_hat`` (ratio
  ``(e^eps + 1) / (e^eps + 3)`` per report at the default split).
- The same default split is used for PCKV-GRR (see *Budget split*); any
  other allocation can be passed as ``epsilon_split``.

References
----------
.. [1] X. Gu, M. Li, Y. Cheng, L. Xiong, Y. Cao, "PCKV: Locally
   Differentially Private Correlated Key-Value Data Collection with
   Optimized Utility", USENIX Security 2020, Algorithms 2-3.
.. [2] Paper 001, Appendix B, Eqs. (65)-(70); section 7 (Eq. (41)).
"""

from __future__ import annotations

import time
from math import exp, log, log1p
from typing import Any, Optional, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._random import as_generator
from .._validation import param_error
from .._sanitize import SanitizationReport
from ..oracles import GRR, OUE
from .base import (
    ClipLike,
    RngLike,
    SparseMeanEstimate,
    SparseVectors,
    StreamingServer,
    VectorsLike,
    _as_float,
    as_sparse_vectors,
    plug_in_variances,
    report_array,
    round_to_signs,
    sanitize_ternary,
)
from .rpc import resolve_clip_range
from ..streaming import ExactSum, Partial

__all__ = ["PCKVUE", "PCKVGRR", "pckv_composed_epsilon"]


def pckv_composed_epsilon(eps1: float, eps2: float) -> float:
    """The budget of the correlated perturbation: ``max{eps2, eps1 + ln(2 / (1 + e^{-eps2}))}``."""
    return max(eps2, eps1 + log(2.0) - log1p(exp(-eps2)))


class _PCKV(StreamingServer):
    """Shared parameters, sampling, the Eq. (70) aggregator and the streaming protocol."""

    variant = ""
    a: float  # probability of keeping the sampled key (set by the variant)
    b: float  # probability of reporting each other key

    def __init__(self, *, d: int, m: Optional[int] = None, epsilon: float,
                 items_per_user: Optional[int] = None,
                 epsilon_split: Optional[Sequence[float]] = None,
                 clip_estimate: ClipLike = None) -> None:
        owner = type(self).__name__
        self._set_d_m_epsilon(d, m, items_per_user, epsilon, owner)
        if epsilon_split is None:
            eps1, eps2 = log((exp(self.epsilon) + 1.0) / 2.0), self.epsilon
        else:
            try:
                eps1, eps2 = (float(e) for e in epsilon_split)
            except (TypeError, ValueError):
                raise param_error("epsilon_split", owner, "None or a pair (eps1, eps2) of floats",
                                  epsilon_split, TypeError) from None
            if not (eps1 > 0 and eps2 > 0):
                raise param_error("epsilon_split", owner, "a pair of floats in (0, inf)",
                                  epsilon_split)
            if pckv_composed_epsilon(eps1, eps2) > self.epsilon * (1 + 1e-12):
                raise param_error(
                    "epsilon_split", owner,
                    f"a pair whose composed budget max(eps2, eps1 + ln(2/(1+e^-eps2))) "
                    f"is at most epsilon={self.epsilon!r}", epsilon_split)
        self.eps1, self.eps2 = eps1, eps2
        self.ell = self.m
        self.d_padded = self.d + self.ell
        self.p = exp(eps2) / (exp(eps2) + 1.0)
        self.clip_estimate = resolve_clip_range(clip_estimate, owner)

    def _key_oracle(self, cls):
        """The plain oracle over the ``d + l`` keys at ``eps1`` (a, b are its p, q)."""
        owner = type(self).__name__
        try:
            oracle = cls(domain_size=self.d_padded, epsilon=self.eps1, codebook_seed=0, n_threads=1)
        except ValueError:
            raise param_error("epsilon", owner,
                              f"such that {cls.__name__} at eps1 = {self.eps1!r} is defined "
                              "(eps1 <= 700 and p - q > 0 in double precision)",
                              self.epsilon) from None
        self.a, self.b = (float(v[0]) for v in oracle._pq(np.array([self.eps1])))
        return oracle

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(d={self.d}, m={self.m}, epsilon={self.epsilon!r}, "
                f"epsilon_split=({self.eps1!r}, {self.eps2!r}), "
                f"clip_estimate={self.clip_estimate!r})")

    @property
    def scale(self) -> float:
        """``l / (a (2p - 1))``: one report's weight in Eq. (70), times ``n``."""
        return self.ell / (self.a * (2.0 * self.p - 1.0))

    def vectors(self, x: VectorsLike) -> SparseVectors:
        return as_sparse_vectors(x, d=self.d, owner=type(self).__name__, m=self.m)

    def sample(self, x: VectorsLike, *, rng: RngLike = None) -> tuple[np.ndarray, np.ndarray]:
        """Padding-and-Sampling and discretization: ``(keys, signs)`` per user.

        Keys ``>= d`` are dummies; signs are ``+-1`` (int8).
        """
        vecs = self.vectors(x)
        gen = as_generator(rng, f"{type(self).__name__}.privatize")
        n = vecs.n
        slot = gen.integers(0, self.ell, size=n)
        real = slot < vecs.sizes
        pos = vecs.indptr[:-1] + np.where(real, slot, 0)
        pos = np.minimum(pos, max(vecs.indices.shape[0] - 1, 0))
        dummy = self.d + gen.integers(0, self.ell, size=n)
        if vecs.indices.shape[0]:
            keys = np.where(real, vecs.indices[pos], dummy)
            value = np.where(real, vecs.values[pos], 0.0)
        else:
            keys, value = dummy, np.zeros(n)
        signs = round_to_signs(value, gen).astype(np.int8)
        return keys.astype(np.int64), signs

    def _sample_checked(self, x: VectorsLike, epsilons, rng: RngLike, owner: str):
        """``(gen, keys, signs)``: :meth:`sample` for ``privatize``, with its budget checks.

        ``epsilons`` is checked before the data is read (a wrong value) and
        after (a wrong length).
        """
        self._fixed_budget(epsilons, None, owner)
        gen = as_generator(rng, owner)
        keys, signs = self.sample(x, rng=gen)
        self._fixed_budget(epsilons, keys.shape[0], owner)
        return gen, keys, signs

    def _finish(self, sums, key_counts, n, report, seconds):
        raw = (self.scale / n) * sums[: self.d]
        freq = self.ell * (key_counts[: self.d] / n - self.b) / (self.a - self.b)
        mean = raw if self.clip_estimate is None else np.clip(raw, *self.clip_estimate)
        # y_i(j)^2 = 1 exactly when report i sets key j: sum_i T_ij^2 = scale^2 N_j
        variances = plug_in_variances(self.scale**2 * key_counts[: self.d], raw, n)
        return SparseMeanEstimate(mean=mean, raw=raw, sanitization=report, n=int(n),
                                  privacy=self._privacy(), variances=variances,
                                  details={"frequency": freq}, seconds=seconds)

    # ------------------------------------------------------------ streaming
    def stream_params(self) -> dict:
        """The public parameters a partial is bound to (JSON values).

        ``type(self)(**params)`` rebuilds an equivalent server
        (``epsilon_split`` is the resolved pair ``[eps1, eps2]``).
        """
        return {"d": self.d, "m": self.m, "epsilon": self.epsilon,
                "epsilon_split": [self.eps1, self.eps2],
                "clip_estimate": None if self.clip_estimate is None else list(self.clip_estimate)}

    def _sum_sizes(self) -> dict:
        return {"sums": self.d, "key_counts": self.d}

    def partial(self, reports: Any, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """The exact, mergeable state of Eq. (70) over a chunk of reports.

        Parameters
        ----------
        reports : array_like
            The chunk's reports in this variant's format (``n`` may be 0);
            sanitized and counted as in ``estimate``.
        epsilons : None or float
            The budget is fixed by the constructor: ``None`` or the
            mechanism's ``epsilon`` (a scalar or one per report); anything
            else raises ``ValueError``.
        identities : ignored
            PCKV uses no public randomness.

        Returns
        -------
        fastldp.streaming.Partial
            Holds, for every real key ``j < d``, the integer sum of the
            reported values ``sum_i y_i(j)`` (``"sums"``) and the number of
            reports whose key ``j`` is set (``"key_counts"``), both as
            :class:`~fastldp.streaming.ExactSum` fed by ``add_integers``; and
            as integer counts the number of reports (``"users"``) and the
            sanitization outcomes. ``O(d)`` memory whatever ``n``.
        """
        return self._partial(reports, epsilons, f"{type(self).__name__}.partial")

    def _partial(self, reports, epsilons, owner, allow_empty=True) -> Partial:
        n, sums, key_counts, report = self._aggregate(reports, owner, allow_empty=allow_empty)
        self._fixed_budget(epsilons, n, owner)
        total, keys = ExactSum(self.d), ExactSum(self.d)
        if n:
            total.add_integers(sums[: self.d])
            keys.add_integers(key_counts[: self.d])
        return self._new_partial(n, report, {"sums": total, "key_counts": keys})

    def _finalize(self, partial: Partial, owner: str) -> SparseMeanEstimate:
        state = self._open(partial, owner)
        return self._finish(state.sums["sums"].value(), state.sums["key_counts"].value(),
                            state.counts["users"], self._report_of(state), {})

    def estimate(self, reports: Any, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> SparseMeanEstimate:
        """Eq. (70), its plug-in variances and PCKV's key frequencies.

        Exactly ``finalize(partial(reports))``.

        Parameters
        ----------
        reports : array_like
            The reports in this variant's format (see the class); malformed
            entries are sanitized and counted, never raised on.
        epsilons : None or float, optional
            ``None`` or the constructor's ``epsilon`` (a scalar or one per
            report); anything else is a ``ValueError`` (no personal budgets).
        identities : ignored
            PCKV uses no public randomness.

        Returns
        -------
        SparseMeanEstimate
            ``details["frequency"]`` holds the key frequencies ``f_hat``.
        """
        owner = f"{type(self).__name__}.estimate"
        t0 = time.perf_counter()
        state = self._partial(reports, epsilons, owner, allow_empty=False)
        result = self._finalize(state, owner)
        result.seconds["aggregate"] = time.perf_counter() - t0
        return result


class PCKVUE(_PCKV):
    """PCKV-UE: unary-encoded correlated key-value perturbation (Gu et al. 2020, Alg. 2).

    Parameters
    ----------
    d : int
        Number of keys (dimension).
    m : int
        Padding length ``l = m``: the most items a user may hold.
    epsilon : float in (0, inf)
    epsilon_split : (eps1, eps2), optional
        Key and value budgets; default ``(ln((e^eps + 1) / 2), eps)``.
    clip_estimate : None, "frequency", "mean" or (low, high)

    Notes
    -----
    Reports are int8 arrays of shape ``(n, d + m)`` with entries in
    ``{-1, 0, 1}``; every such array is a legal output. See the module
    docstring for the estimator and the choices made.

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.PCKVUE(d=5, m=2, epsilon=2.0)
    >>> x = np.zeros((1000, 5)); x[:, 0] = 1.0; x[:500, 1] = -0.5
    >>> reports = mech.privatize(x, rng=0)
    >>> reports.shape, reports.dtype
    ((1000, 7), dtype('int8'))
    >>> est = mech.estimate(reports)
    >>> bool(abs(est.estimate[0] - 1.0) < 4 * est.std[0])
    True
    """

    variant = "ue"

    def __init__(self, *, d: int, m: Optional[int] = None, epsilon: float,
                 items_per_user: Optional[int] = None,
                 epsilon_split: Optional[Sequence[float]] = None,
                 clip_estimate: ClipLike = None) -> None:
        super().__init__(d=d, m=m, epsilon=epsilon, items_per_user=items_per_user,
                         epsilon_split=epsilon_split, clip_estimate=clip_estimate)
        self.key_oracle = self._key_oracle(OUE)  # a = 1/2, b = 1 / (e^eps1 + 1)

    def privatize(self, x: VectorsLike, *, epsilons: Optional[ArrayLike] = None,
                  identities: Optional[ArrayLike] = None, rng: RngLike = None) -> np.ndarray:
        """Return the ``(n, d + m)`` int8 reports in ``{-1, 0, 1}``.

        ``epsilons`` is ``None`` or the constructor's ``epsilon`` (no
        personal budgets); ``identities`` is ignored (no public randomness).
        """
        owner = "PCKVUE.privatize"
        gen, keys, signs = self._sample_checked(x, epsilons, rng, owner)
        n = keys.shape[0]
        r = gen.random((n, self.d_padded))
        y = np.where(r < self.b, np.where(r < 0.5 * self.b, 1, -1), 0).astype(np.int8)
        r0 = gen.random(n)
        y[np.arange(n), keys] = np.where(
            r0 < self.a * self.p, signs, np.where(r0 < self.a, -signs, 0)).astype(np.int8)
        return y

    def is_legal(self, reports: ArrayLike) -> np.ndarray:
        """Per user: all entries in ``{-1, 0, 1}`` and the right length."""
        y = np.asarray(reports)
        if y.ndim != 2 or y.shape[1] != self.d_padded:
            return np.zeros(y.shape[0] if y.ndim else 0, dtype=bool)
        return np.all((y == -1) | (y == 0) | (y == 1), axis=1)

    _REASONS = ("out_of_alphabet", "infinite", "nan", "non_numeric")

    def _aggregate(self, reports, owner, *, allow_empty):
        """``(n, sums, key_counts, report)`` of ``(n, d + m)`` reports (int64 per key)."""
        arr = np.asarray(reports) if not isinstance(reports, np.ndarray) else reports
        if arr.ndim == 1 and arr.shape[0] == 0 and allow_empty:
            arr = arr.reshape(0, self.d_padded)
        if arr.ndim != 2 or (arr.shape[0] < 1 and not allow_empty):
            what = "an" if allow_empty else "a non-empty"
            raise ValueError(
                f"The 'reports' parameter of {owner} must be {what} "
                f"(n, {self.d_padded}) array. Got shape {arr.shape} instead.")
        n = arr.shape[0]
        if n == 0:
            report_array(arr, (0, self.d_padded), owner)
            return 0, None, None, None
        y, report = sanitize_ternary(arr, (n, self.d_padded), owner)
        sums = y.sum(axis=0, dtype=np.int64)
        counts = np.count_nonzero(y, axis=0).astype(np.int64)
        return n, sums, counts, report


class PCKVGRR(_PCKV):
    """PCKV-GRR: generalized-randomized-response key-value perturbation (Gu et al. 2020, Alg. 3).

    Parameters
    ----------
    d, m, epsilon, epsilon_split, clip_estimate
        As :class:`PCKVUE`.

    Notes
    -----
    Reports are int64 arrays of shape ``(n, 2)``: ``(key, value)`` with
    ``key in [0, d + m)`` and ``value in {-1, +1}``.

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.PCKVGRR(d=5, m=2, epsilon=2.0)
    >>> x = np.zeros((1000, 5)); x[:, 0] = 1.0
    >>> reports = mech.privatize(x, rng=0)
    >>> reports.shape
    (1000, 2)
    >>> est = mech.estimate(reports)
    >>> est.n, bool(abs(est.estimate[0] - 1.0) < 4 * est.std[0])
    (1000, True)
    """

    variant = "grr"

    def __init__(self, *, d: int, m: Optional[int] = None, epsilon: float,
                 items_per_user: Optional[int] = None,
                 epsilon_split: Optional[Sequence[float]] = None,
                 clip_estimate: ClipLike = None) -> None:
        super().__init__(d=d, m=m, epsilon=epsilon, items_per_user=items_per_user,
                         epsilon_split=epsilon_split, clip_estimate=clip_estimate)
        # a = e^eps1 / (e^eps1 + d + l - 1), b = 1 / (e^eps1 + d + l - 1)
        self.key_oracle = self._key_oracle(GRR)

    def privatize(self, x: VectorsLike, *, epsilons: Optional[ArrayLike] = None,
                  identities: Optional[ArrayLike] = None, rng: RngLike = None) -> np.ndarray:
        """Return the ``(n, 2)`` int64 reports ``(key, value)``.

        ``epsilons`` is ``None`` or the constructor's ``epsilon`` (no
        personal budgets); ``identities`` is ignored (no public randomness).
        """
        owner = "PCKVGRR.privatize"
        gen, keys, signs = self._sample_checked(x, epsilons, rng, owner)
        n = keys.shape[0]
        # GRR over the d + l keys at eps1; a replaced key is never k
        out_key = self.key_oracle.perturb(keys, np.full(n, self.eps1), None, gen)
        keep = out_key == keys
        flip = gen.random(n) >= self.p
        fair = np.where(gen.random(n) < 0.5, 1, -1)
        out_val = np.where(keep, np.where(flip, -signs, signs), fair)
        return np.stack([out_key, out_val], axis=1).astype(np.int64)

    def is_legal(self, reports: ArrayLike) -> np.ndarray:
        """Per user: a key in ``[0, d + m)`` and a value in ``{-1, +1}``."""
        y = np.asarray(reports)
        if y.ndim != 2 or y.shape[1] != 2:
            return np.zeros(y.shape[0] if y.ndim else 0, dtype=bool)
        return (y[:, 0] >= 0) & (y[:, 0] < self.d_padded) & ((y[:, 1] == 1) | (y[:, 1] == -1))

    _REASONS = ("out_of_alphabet", "infinite", "nan", "non_numeric", "bad_key")

    def sanitize(self, reports: ArrayLike, owner: str = "PCKVGRR.estimate", *,
                 allow_empty: bool = False) -> tuple:
        """Project ``(key, value)`` reports: a key that is not an integer in
        ``[0, d + m)`` voids the report (no key, value 0, counted ``bad_key``);
        values go to ``{-1, 0, +1}`` by sign (NaN and non-numbers to 0)."""
        try:
            arr = np.asarray(reports)
        except ValueError:
            arr = np.asarray(reports, dtype=object)
        if arr.ndim == 1 and arr.shape[0] == 0 and allow_empty:
            arr = arr.reshape(0, 2)
        if arr.ndim != 2 or arr.shape[1] != 2 or (arr.shape[0] < 1 and not allow_empty):
            what = "an" if allow_empty else "a non-empty"
            raise ValueError(
                f"The 'reports' parameter of {owner} must be {what} (n, 2) array "
                f"of (key, value). Got shape {arr.shape} instead.")
        n = arr.shape[0]
        if n == 0:
            empty = np.zeros(0, dtype=np.int64)
            return (empty, empty.astype(np.int8), empty.astype(bool),
                    SanitizationReport(0, 0, {r: 0 for r in self._REASONS}, False))
        vals, rep_v = sanitize_ternary(arr[:, 1], (n,), owner)
        kf, _ = _as_float(arr[:, 0])
        good = np.isfinite(kf) & (kf == np.round(kf)) & (kf >= 0) & (kf < self.d_padded)
        keys = np.where(good, kf, 0).astype(np.int64)
        vals = np.where(good, vals, 0).astype(np.int8)
        by = dict(rep_v.by_reason)
        by["bad_key"] = int((~good).sum())
        valid = int((good & (np.abs(vals) == 1)).sum())
        return keys, vals, good, SanitizationReport(n, valid, by, arr.dtype.kind not in "iuf")

    def _aggregate(self, reports, owner, *, allow_empty):
        """``(n, sums, key_counts, report)`` of ``(n, 2)`` reports (int64 per key)."""
        keys, vals, good, report = self.sanitize(reports, owner, allow_empty=allow_empty)
        n = keys.shape[0]
        if n == 0:
            return 0, None, None, None
        sums = (np.bincount(keys[vals > 0], minlength=self.d_padded)
                - np.bincount(keys[vals < 0], minlength=self.d_padded)).astype(np.int64)
        counts = np.bincount(keys[good], minlength=self.d_padded).astype(np.int64)
        return n, sums, counts, report
