"""PrivKVM (Ye et al., 2019/2021): multi-round key-value collection by key sampling.

Protocol (paper 001, Appendix B), with ``c`` rounds:

1. each user samples one key ``j_i`` uniformly from ``[d]`` (data-independent,
   sent in the clear) and perturbs the bit "I hold ``j_i``" by randomized
   response with budget ``epsilon / 2`` (``p1 = e^{eps/2} / (1 + e^{eps/2})``);
2. in round ``r = 1..c``, a user whose *reported* bit is 1 sends one value
   bit: its own value ``x_i(j_i)`` if it holds the key, else the fake value
   ``v~_r(j_i)``; the value is discretized to ``+-1`` (``P(+1) = (1 + v) / 2``)
   and perturbed by randomized response with budget ``epsilon / (2c)``
   (``p2 = e^{eps/(2c)} / (1 + e^{eps/(2c)})``). A user whose reported bit
   is 0 sends no value (recorded as 0);
3. the fake value is ``v~_1 = 0`` and ``v~_{r+1} = m_hat_r``, the server's mean
   estimate after round ``r``, so the fake reports stop diluting the mean.

Total budget ``epsilon / 2 + c * epsilon / (2c) = epsilon``.

Server:

- key frequency (PrivKV): ``f_hat(j) = (N1_j / N_j - (1 - p1)) / (2 p1 - 1)``,
  ``N_j`` users sampling ``j`` and ``N1_j`` of them reporting bit 1;
- round mean (PrivKV): with ``n1, n2`` the ``+1`` / ``-1`` value bits for key
  ``j`` and ``N = n1 + n2``, ``n1* = (p2 - 1) N / (2 p2 - 1) + n1 / (2 p2 - 1)``
  and ``n2* = N - n1*``, both clipped to ``[0, N]``; ``m_hat(j) = (n1* - n2*) / N``;
- the sparse-vector mean ``mu_hat(j) = f_hat(j) * m_hat_c(j)`` (a key-value
  pair with value ``v`` is the entry ``x(j) = v``, paper 001 section 1).

Choices where the descriptions are ambiguous
--------------------------------------------
- The sampled key and its perturbed bit are fixed across rounds (the key
  budget ``epsilon / 2`` is spent once); only the values are re-sent. This
  is the only reading under which paper 001's total "``epsilon``" holds.
- A user who holds the key with value 0 holds it (bit 1); its value 0 is a
  fair sign.
- Keys never sampled, or with no value bits, get frequency / mean 0.
- ``c`` defaults to 3.

Reports are a :class:`PrivKVMReports` (keys, key bits, ``(n, c)`` value bits).
Because later rounds depend on earlier estimates, :meth:`PrivKVM.privatize`
runs the whole interaction; forged reports of corrupted users can be
injected into every round (``forged=``) so that honest users react to the
contaminated estimates, as they would in a deployment.

Streaming
---------
The rounds interact only on the client side (the fake value of round
``r + 1`` is the server's estimate after round ``r``, which
:meth:`PrivKVM.privatize` simulates). The server's final decode of all
messages is a function of integer counts per key - users sampling ``j``,
their 1-bits, and per round their ``+1`` and ``-1`` value bits - so
:meth:`PrivKVM.partial` / :meth:`PrivKVM.merge` / :meth:`PrivKVM.finalize`
are exact and a split decode is bit-identical to :meth:`PrivKVM.estimate`;
slice the reports (``reports[a:b]``) to decode them in chunks.

References
----------
.. [1] Q. Ye, H. Hu, X. Meng, H. Zheng, "PrivKV: Key-Value Data Collection
   with Local Differential Privacy", IEEE S&P 2019 (and the PrivKVM journal
   version, 2021).
.. [2] Paper 001, Appendix B; Table 1.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from math import exp
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike

from .._random import as_generator
from .._validation import check_int, param_error
from .._sanitize import SanitizationReport
from .base import (ClipLike, RngLike, SparseMeanEstimate, SparseVectors, StreamingServer, VectorsLike,
                   _as_float, as_sparse_vectors)
from .rpc import resolve_clip_range
from ..streaming import ExactSum, Partial

__all__ = ["PrivKVM", "PrivKVMReports"]


@dataclass(frozen=True)
class PrivKVMReports:
    """All messages of a PrivKVM run.

    Attributes
    ----------
    keys : int64 array, shape (n,)
        The sampled key of each user, in ``[0, d)``.
    key_bits : int8 array, shape (n,)
        Reported "holds the key" bits in ``{0, 1}``.
    values : int8 array, shape (n, c)
        Round ``r``'s value bit in ``{-1, +1}``, or 0 when the key bit is 0.

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.PrivKVM(d=3, m=1, epsilon=2.0, n_rounds=2)
    >>> reports = mech.privatize(np.eye(3)[[0, 1, 2, 0]], rng=0)
    >>> len(reports), reports.values.shape, len(reports[1:3])
    (4, (4, 2), 2)
    """

    keys: np.ndarray
    key_bits: np.ndarray
    values: np.ndarray

    @property
    def n(self) -> int:
        return int(self.keys.shape[0])

    def __len__(self) -> int:
        return self.n

    def __getitem__(self, users) -> "PrivKVMReports":
        """The reports of ``users``: a slice, an index array or a boolean mask.

        ``reports[a:b]`` is the chunk of users ``a .. b - 1`` (for
        :meth:`PrivKVM.partial`). An integer index raises ``TypeError``: use
        ``reports[i:i + 1]`` for one user.
        """
        if isinstance(users, (int, np.integer)):
            raise TypeError("PrivKVMReports are indexed by a slice, an index array or a mask; "
                            f"use reports[{users}:{users} + 1] for one user")
        if not isinstance(users, slice):
            users = np.asarray(users)
            if users.dtype != bool:
                users = users.astype(np.int64)
        return PrivKVMReports(self.keys[users], self.key_bits[users], self.values[users])

    def __array__(self, dtype: Any = None, copy: Any = None) -> np.ndarray:
        """The stored form: one int64 row ``(key, key_bit, value_1 .. value_c)`` per user.

        What a report file, the collector and Dask hold (the schema of
        :attr:`PrivKVM.report_schema`); :meth:`PrivKVM.partial` and
        :meth:`PrivKVM.estimate` take it back.
        """
        rows = np.empty((self.n, 2 + self.values.shape[1]), dtype=np.int64)
        rows[:, 0], rows[:, 1], rows[:, 2:] = self.keys, self.key_bits, self.values
        return rows if dtype is None else rows.astype(dtype, copy=False)

    def take(self, users: ArrayLike) -> "PrivKVMReports":
        """The reports of ``users`` (an index array), in that order."""
        users = np.asarray(users, dtype=np.int64)
        return PrivKVMReports(self.keys[users], self.key_bits[users], self.values[users])

    def replace(self, users: ArrayLike, forged: "PrivKVMReports") -> "PrivKVMReports":
        """A copy with the reports of ``users`` replaced by ``forged``."""
        users = np.asarray(users, dtype=np.int64)
        keys, bits, vals = self.keys.copy(), self.key_bits.copy(), self.values.copy()
        keys[users], bits[users], vals[users] = forged.keys, forged.key_bits, forged.values
        return PrivKVMReports(keys, bits, vals)


class PrivKVM(StreamingServer):
    """PrivKVM: key sampling, one key bit, ``c`` rounds of value bits.

    Parameters
    ----------
    d : int
    m : int
        Most items per user, ``1 <= m <= d`` (validated only; PrivKVM samples
        from all ``d`` keys).
    epsilon : float in (0, inf)
    n_rounds : int
        ``c >= 1``, the number of value rounds (default 3).
    clip_estimate : None, "frequency", "mean" or (low, high)
    items_per_user : int, optional
        The name every family shares for ``m`` (pass one of the two).

    Notes
    -----
    The estimate ``f_hat * m_hat_c`` is a product of clipped ratios, not a
    linear function of the reports, so its result has no plug-in variance
    (``variances`` and ``std`` are ``None``).

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.PrivKVM(d=4, m=1, epsilon=4.0)
    >>> x = np.zeros((2000, 4)); x[:, 0] = 0.5
    >>> reports = mech.privatize(x, rng=0)
    >>> reports.values.shape
    (2000, 3)
    >>> est = mech.estimate(reports)
    >>> est.estimate.shape, est.n, est.std is None
    ((4,), 2000, True)
    """

    def __init__(self, *, d: int, m: Optional[int] = None, epsilon: float,
                 items_per_user: Optional[int] = None, n_rounds: int = 3,
                 clip_estimate: ClipLike = None) -> None:
        owner = type(self).__name__
        self._set_d_m_epsilon(d, m, items_per_user, epsilon, owner)
        self.n_rounds = check_int(n_rounds, "n_rounds", owner, low=1)
        self.eps_key = self.epsilon / 2.0
        self.eps_value = self.epsilon / (2.0 * self.n_rounds)
        self.p1 = exp(self.eps_key) / (1.0 + exp(self.eps_key))
        self.p2 = exp(self.eps_value) / (1.0 + exp(self.eps_value))
        self.clip_estimate = resolve_clip_range(clip_estimate, owner)

    def __repr__(self) -> str:
        return (f"PrivKVM(d={self.d}, m={self.m}, epsilon={self.epsilon!r}, "
                f"n_rounds={self.n_rounds}, clip_estimate={self.clip_estimate!r})")

    @property
    def report_schema(self) -> Any:
        """One int64 row ``(key, key_bit, value_1 .. value_c)`` per user, at ``epsilon``.

        The stored form of :class:`PrivKVMReports` (``numpy.asarray`` of
        them), which :meth:`partial` takes back.
        """
        from ..protocol import ReportSchema

        return ReportSchema(np.int64, (2 + self.n_rounds,), self.epsilon)

    # ------------------------------------------------------------------ client
    def vectors(self, x: VectorsLike) -> SparseVectors:
        return as_sparse_vectors(x, d=self.d, owner=type(self).__name__, m=self.m)

    def _lookup(self, vecs: SparseVectors, keys: np.ndarray):
        """Whether each user holds its sampled key, and the value."""
        flat = vecs.rows * self.d + vecs.indices  # sorted: rows ascend, indices ascend
        want = np.arange(vecs.n, dtype=np.int64) * self.d + keys
        pos = np.searchsorted(flat, want)
        pos_c = np.minimum(pos, max(flat.shape[0] - 1, 0))
        held = (pos < flat.shape[0]) & (flat[pos_c] == want) if flat.shape[0] else np.zeros(vecs.n, bool)
        value = np.where(held, vecs.values[pos_c] if flat.shape[0] else 0.0, 0.0)
        return held, value

    def _value_bits(self, source: np.ndarray, active: np.ndarray, gen) -> np.ndarray:
        disc = np.where(gen.random(source.shape) < 0.5 * (1.0 + source), 1, -1)
        keep = gen.random(source.shape) < self.p2
        return np.where(active, np.where(keep, disc, -disc), 0).astype(np.int8)

    def privatize(self, x: VectorsLike, *, epsilons: Optional[ArrayLike] = None,
                  identities: Optional[ArrayLike] = None, rng: RngLike = None,
                  forged: Optional[tuple] = None) -> PrivKVMReports:
        """Run the ``c``-round interaction and return every message.

        Parameters
        ----------
        x : SparseVectors, scipy.sparse matrix or array, shape (n, d)
        epsilons : None or float, optional
            ``None`` or the constructor's ``epsilon`` (a scalar or one per
            user); anything else is a ``ValueError`` (no personal budgets).
        identities : ignored
            Accepted for a uniform interface (PrivKVM uses no public hashes).
        rng : None, int, SeedSequence or Generator
        forged : (users, PrivKVMReports), optional
            Reports that corrupted ``users`` send instead of their own, in
            every round, before the server computes that round's estimate.

        Returns
        -------
        PrivKVMReports
        """
        owner = "PrivKVM.privatize"
        self._fixed_budget(epsilons, None, owner)
        vecs = self.vectors(x)
        gen = as_generator(rng, owner)
        n = vecs.n
        self._fixed_budget(epsilons, n, owner)
        keys = gen.integers(0, self.d, size=n).astype(np.int64)
        held, value = self._lookup(vecs, keys)
        bits = np.where(gen.random(n) < self.p1, held, ~held).astype(np.int8)
        values = np.zeros((n, self.n_rounds), dtype=np.int8)
        users = None
        if forged is not None:
            users, fake_reports = forged
            users = np.asarray(users, dtype=np.int64)
            keys[users] = fake_reports.keys
            bits[users] = fake_reports.key_bits
            held, value = self._lookup(vecs, keys)
        fake = np.zeros(self.d)
        active = bits == 1
        for r in range(self.n_rounds):
            source = np.where(held, value, fake[keys])
            values[:, r] = self._value_bits(source, active, gen)
            if users is not None:
                values[users, r] = fake_reports.values[:, r]
            fake = self.round_mean(keys, bits, values[:, r])
        return PrivKVMReports(keys, bits, values)

    def is_legal(self, reports: PrivKVMReports) -> np.ndarray:
        k, b, v = reports.keys, reports.key_bits, reports.values
        ok = (k >= 0) & (k < self.d) & ((b == 0) | (b == 1))
        vv = np.where(b[:, None] == 1, (v == 1) | (v == -1), v == 0)
        return ok & vv.all(axis=1)

    # ------------------------------------------------------------------ server
    _REASONS = ("bad_key", "bad_bit", "bad_value")

    def round_mean(self, keys: ArrayLike, key_bits: ArrayLike,
                   values_round: ArrayLike) -> np.ndarray:
        """PrivKV's calibrated mean per key from one round's value bits."""
        vals = np.where(np.asarray(key_bits) == 1, values_round, 0)
        n1 = np.bincount(keys, weights=(vals == 1), minlength=self.d)
        n2 = np.bincount(keys, weights=(vals == -1), minlength=self.d)
        return self._round_mean_of_counts(n1, n2)

    def _round_mean_of_counts(self, n1, n2) -> np.ndarray:
        """The round mean from the ``+1`` / ``-1`` counts per key (float64)."""
        total = n1 + n2
        p = self.p2
        n1s = np.clip((p - 1.0) / (2.0 * p - 1.0) * total + n1 / (2.0 * p - 1.0), 0.0, total)
        n2s = total - n1s
        with np.errstate(invalid="ignore", divide="ignore"):
            mean = np.where(total > 0, (n1s - n2s) / total, 0.0)
        return mean

    def frequency(self, keys: ArrayLike, key_bits: ArrayLike) -> np.ndarray:
        """PrivKV's key-frequency estimate ``(N1_j / N_j - (1 - p1)) / (2 p1 - 1)``."""
        nj = np.bincount(keys, minlength=self.d).astype(np.float64)
        n1 = np.bincount(keys, weights=(np.asarray(key_bits) == 1), minlength=self.d)
        return self._frequency_of_counts(nj, n1)

    def _frequency_of_counts(self, nj, n1) -> np.ndarray:
        with np.errstate(invalid="ignore", divide="ignore"):
            f = np.where(nj > 0, (n1 / nj - (1.0 - self.p1)) / (2.0 * self.p1 - 1.0), 0.0)
        return f

    def sanitize(self, reports: Any, owner: str = "PrivKVM.estimate", *,
                 allow_empty: bool = False) -> tuple:
        """Project a :class:`PrivKVMReports` (or a ``(keys, bits, values)`` triple).

        The stored form, a numeric array of rows ``(key, key_bit, value_1
        .. value_c)`` (``numpy.asarray(reports)``, what report files hold),
        is taken too. A key that is not an integer in ``[0, d)`` voids the user's report (it
        counts for no key); a bit other than 0/1 becomes 1 when it is > 0.5
        and 0 otherwise (NaN: 0); a value bit goes to its sign, and a value
        without sign (0, NaN, not a number) under a 1-bit is dropped.
        """
        if isinstance(reports, PrivKVMReports):
            keys, bits, vals = reports.keys, reports.key_bits, reports.values
        elif isinstance(reports, np.ndarray) and reports.ndim == 2:
            # the stored rows; never a triple, whose values are 2-d and keys 1-d
            if reports.shape[1] != 2 + self.n_rounds:
                raise ValueError(
                    f"The 'reports' parameter of {owner} must be rows (key, key_bit, "
                    f"{self.n_rounds} value bits) of shape (n, {2 + self.n_rounds}). Got an "
                    f"array of shape {reports.shape} instead.")
            keys, bits, vals = reports[:, 0], reports[:, 1], reports[:, 2:]
        else:
            try:
                keys, bits, vals = reports
            except (TypeError, ValueError):
                raise param_error("reports", owner,
                                  "a PrivKVMReports or a (keys, key_bits, values) triple",
                                  type(reports).__name__, TypeError) from None
        kf, _ = _as_float(np.asarray(keys))
        n = kf.shape[0] if kf.ndim else 0
        if kf.ndim != 1 or (n < 1 and not allow_empty):
            raise ValueError(f"The 'reports' parameter of {owner} must hold at least one "
                             f"user. Got keys of shape {kf.shape} instead.")
        bf, _ = _as_float(np.asarray(bits))
        vf, _ = _as_float(np.asarray(vals))
        if n == 0 and vf.shape == (0,):
            vf = vf.reshape(0, self.n_rounds)
        if bf.shape != (n,) or vf.shape != (n, self.n_rounds):
            raise ValueError(
                f"The 'reports' parameter of {owner} must have key bits of shape ({n},) "
                f"and values of shape ({n}, {self.n_rounds}). Got {bf.shape} and {vf.shape} instead.")
        good = np.isfinite(kf) & (kf == np.round(kf)) & (kf >= 0) & (kf < self.d)
        key_ok = np.where(good, kf, 0).astype(np.int64)
        bit = np.where(bf > 0.5, 1, 0).astype(np.int8)
        bad_bit = ~((bf == 0) | (bf == 1))
        vs = np.where(np.isnan(vf), 0.0, np.sign(vf)).astype(np.int8)
        vs = np.where(bit[:, None] == 1, vs, 0)
        bad_val = (bit[:, None] == 1) & ~((vf == 1) | (vf == -1))
        bad_val |= (bit[:, None] == 0) & (vf != 0)
        # a voided user keeps its place (n is the number of committed users) but counts nowhere
        key_ok = np.where(good, key_ok, -1)
        by = {"bad_key": int((~good).sum()), "bad_bit": int(bad_bit.sum()),
              "bad_value": int(bad_val.sum())}
        valid = int((good & ~bad_bit & ~bad_val.any(axis=1)).sum())
        return key_ok, bit, vs, SanitizationReport(n, valid, by)

    def estimate(self, reports: Any, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> SparseMeanEstimate:
        """``mu_hat = f_hat * m_hat_c`` from all rounds' messages.

        Exactly ``finalize(partial(reports))`` (see :meth:`partial`).

        Parameters
        ----------
        reports : PrivKVMReports or (keys, key_bits, values) triple
            Malformed entries are sanitized and counted (:meth:`sanitize`).
        epsilons : None or float, optional
            ``None`` or the constructor's ``epsilon`` (a scalar or one per
            user); anything else is a ``ValueError`` (no personal budgets).
        identities : ignored
            PrivKVM uses no public randomness.

        Returns
        -------
        SparseMeanEstimate
            ``variances`` is ``None`` (the estimator is not linear);
            ``details`` holds ``"frequency"``, ``"value_mean"`` and
            ``"round_means"``.
        """
        owner = "PrivKVM.estimate"
        t0 = time.perf_counter()
        state = self._partial(reports, epsilons, owner, allow_empty=False)
        result = self._finalize(state, owner)
        result.seconds["aggregate"] = time.perf_counter() - t0
        return result

    # ------------------------------------------------------------ streaming
    def stream_params(self) -> dict:
        """The public parameters a partial is bound to (JSON values); ``type(self)(**params)``
        rebuilds an equivalent server."""
        return {"d": self.d, "m": self.m, "epsilon": self.epsilon, "n_rounds": self.n_rounds,
                "clip_estimate": None if self.clip_estimate is None else list(self.clip_estimate)}

    def _sum_sizes(self) -> dict:
        return {"key_users": self.d, "key_ones": self.d, "plus": self.d * self.n_rounds,
                "minus": self.d * self.n_rounds}

    def partial(self, reports: Any, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """The exact, mergeable state of the PrivKVM server over a chunk of users.

        Parameters
        ----------
        reports : PrivKVMReports or (keys, key_bits, values) triple
            The chunk's messages, e.g. ``reports[a:b]`` (may hold no user);
            sanitized and counted as in :meth:`estimate`.
        epsilons : None or float
            The budget is fixed by the constructor: ``None`` or the
            mechanism's ``epsilon`` (a scalar or one per user); anything else
            raises ``ValueError``.
        identities : ignored
            PrivKVM uses no public randomness.

        Returns
        -------
        fastldp.streaming.Partial
            Holds, per key ``j`` and as :class:`~fastldp.streaming.ExactSum`
            fed by ``add_integers`` (integer counts): the users that sampled
            ``j`` (``"key_users"``), those of them reporting bit 1
            (``"key_ones"``), and per round ``r`` the ``+1`` and ``-1`` value
            bits (``"plus"`` and ``"minus"``, position ``r d + j``); and as
            integer counts the number of users (``"users"``) and the
            sanitization outcomes. ``O(d c)`` memory whatever ``n``.
        """
        return self._partial(reports, epsilons, "PrivKVM.partial", allow_empty=True)

    def _partial(self, reports, epsilons, owner, allow_empty) -> Partial:
        keys, bits, vals, report = self.sanitize(reports, owner, allow_empty=allow_empty)
        n = keys.shape[0]
        self._fixed_budget(epsilons, n, owner)
        d, c = self.d, self.n_rounds
        sums = {name: ExactSum(size) for name, size in self._sum_sizes().items()}
        live = keys >= 0
        k, b, v = keys[live], bits[live], vals[live]
        if k.shape[0]:
            sums["key_users"].add_integers(np.bincount(k, minlength=d).astype(np.int64))
            sums["key_ones"].add_integers(np.bincount(k[b == 1], minlength=d).astype(np.int64))
            slot = np.arange(c, dtype=np.int64)[None, :] * d + k[:, None]
            for name, sign in (("plus", 1), ("minus", -1)):
                hit = (v == sign) & (b[:, None] == 1)
                sums[name].add_integers(np.bincount(slot[hit], minlength=d * c).astype(np.int64))
        return self._new_partial(n, report, sums)

    def _finalize(self, partial: Partial, owner: str) -> SparseMeanEstimate:
        state = self._open(partial, owner)
        d, c = self.d, self.n_rounds
        freq = self._frequency_of_counts(state.sums["key_users"].value(),
                                         state.sums["key_ones"].value())
        plus = state.sums["plus"].value().reshape(c, d)
        minus = state.sums["minus"].value().reshape(c, d)
        rounds = [self._round_mean_of_counts(plus[r], minus[r]) for r in range(c)]
        raw = freq * rounds[-1]
        mean = raw if self.clip_estimate is None else np.clip(raw, *self.clip_estimate)
        return SparseMeanEstimate(mean=mean, raw=raw, sanitization=self._report_of(state),
                                  n=int(state.counts["users"]), privacy=self._privacy(),
                                  details={"frequency": freq, "value_mean": rounds[-1],
                                           "round_means": np.array(rounds)})
