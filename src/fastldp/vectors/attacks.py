"""Optimal legal-output attacks on RPC and the sparse-vector baselines (paper 001, section 7).

The adversary controls the reports of up to ``q`` users and replaces them by
*legal* outputs (elements of the mechanism's output space, so the server
cannot tell them from honest ones). It knows the codebook (public hashes and
signs) and every honest report (section 3.2).

Objectives
----------
Targeted: for signed target weights ``w`` (``w = +1`` on a target set ``T`` to
push the estimate up, ``-1`` to push it down) the adversary maximizes

    G(Z) = sum_j w_j (mu_hat(j) - mu_hat_c(j))

where ``mu_hat_c`` is the clean estimate (Eqs. (41), (43), (45)-(47), (49)).
All estimators but PrivKVM's are linear in the reports, so ``G`` is a sum of
per-user terms and each corrupted user's best legal output has a closed form:

=========  ===========================================================  ==========
method     optimal legal output of a corrupted user ``i``                paper
=========  ===========================================================  ==========
RPC        ``Z_i = c_eps R sign(sum_j w_j S_i(j))``                      Eq. (52)
PCKV-UE    ``Z_i(j) = sign(w_j)`` where ``w_j != 0``                      Eq. (41)
PCKV-GRR   ``(k, sign(w_k))`` with ``k`` maximizing ``|w_k|``             Eq. (41)
Collision  ``Z_i = argmax_k sum_j w_j 1(H_i(j) = k)``                    Eq. (44)
Succinct   ``Z_ik = c_eps R sign(sum_j w_j 1(h_i(j) = k) S_i(j))``       Eq. (48)
=========  ===========================================================  ==========

Where the bracketed sum is 0 the output does not matter; the honest report
is kept there (it is legal and looks natural). For Collision on signed data
the symbol weights are ``w_j`` on ``j+`` and ``-w_j`` on ``j-``. Under the
strong contamination model the adversary corrupts the ``q`` users with the
largest gains ``G_i`` (Eqs. (53)-(56)): the value of the best output minus
the honest report's contribution. Eq. (55) as printed omits the factor
``c_eps R`` of its first term, which Eq. (48) implies; the gains here include
it (a test checks every gain against the exact change of the objective).

Untargeted: the adversary maximizes the displacement ``||mu_hat - mu_hat_c||_1``
(the error it adds; it does not know ``mu``), i.e. the targeted objective
maximized over all sign patterns ``w in {-1, +1}^d`` (section 7: "maximize
the gain over all possible targets"). The exact maximum is a max-cut-like
problem; :func:`sparse_untargeted_attack` runs an alternating ascent from
several starts: best outputs (and, under the strong model, best users) for
the current ``w``, then ``w <- sign(displacement)``. Each step cannot decrease
``||mu_hat - mu_hat_c||_1`` for the linear estimators, so it stops at a local
maximum; the best start is kept.

Reported objective values are computed by running the mechanism's own
``estimate`` on the clean and the attacked reports (before any final
clipping of the estimate), so they are exactly the change the server sees.

PrivKVM is not in paper 001's section 7. Its attack here is a heuristic of
the same kind: corrupted users report the key with the largest ``|w_k|``,
key bit 1 and value ``sign(w_k)`` in every round; strong-model gains are the
first-order change ``|w_k*| - w_{k_i} b_i mean_r(v_ir)`` (the estimator is
a product of ratios, so this choice need not dominate the additive model's
random one). Reports are replaced after the clean run; to let honest users
react to the contaminated round estimates, pass the forged reports to
``PrivKVM.privatize(forged=...)``.

A Laplace randomizer has an unbounded output space (``c_eps = inf``), so no
optimal legal output exists; RPC and Succinct attacks then need an explicit
``magnitude``.

References
----------
.. [1] Paper 001, section 3.2 (threat model), section 7 (Eqs. (41)-(56)),
   section 8.3.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._kernels._olh import olh_bucket_search, olh_buckets
from .._random import as_generator, resolve_identities
from .._validation import check_choice, check_float, check_int, param_error
from .collision import Collision
from .pckv import PCKVGRR, PCKVUE
from .privkvm import PrivKVM, PrivKVMReports
from .succinct import Succinct
from .rpc import RPC

__all__ = [
    "SparseAttackResult",
    "sparse_targeted_attack",
    "sparse_untargeted_attack",
    "random_legal_reports",
    "replace_reports",
    "attack_objective",
    "MODELS",
]

MODELS = ("additive", "strong")


@dataclass(frozen=True)
class SparseAttackResult:
    """What an attack produced.

    Attributes
    ----------
    reports
        The attacked reports, in the mechanism's report format.
    corrupted : int64 array
        The users whose reports were replaced (sorted).
    weights : float64 array, shape (d,)
        The signed target weights the outputs were chosen for.
    objective : float
        Targeted: ``sum_j w_j (mu_hat - mu_hat_c)_j``. Untargeted:
        ``||mu_hat - mu_hat_c||_1``. Both on the estimator before final clipping.
    shift : float64 array, shape (d,)
        ``mu_hat - mu_hat_c``.
    model : str
        ``"additive"`` or ``"strong"``.
    kind : str
        ``"targeted"`` or ``"untargeted"``.
    gains : float64 array or None
        Strong model: every user's gain ``G_i`` for the final weights.

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> from fastldp.vectors import frequency_vectors, sparse_targeted_attack
    >>> mech = fastldp.RPC(d=10, m=2, epsilon=1.0, codebook_seed=1)
    >>> reports = mech.privatize(frequency_vectors(n=500, d=10, m=2, rng=0), rng=1)
    >>> att = sparse_targeted_attack(mech, reports, target=[3], q=50, rng=2)
    >>> att.kind, att.model, att.corrupted.shape, bool(att.objective > 0)
    ('targeted', 'additive', (50,), True)
    """

    reports: object
    corrupted: np.ndarray
    weights: np.ndarray
    objective: float
    shift: np.ndarray
    model: str
    kind: str
    gains: np.ndarray | None = None


# --------------------------------------------------------------------- helpers
def _n_reports(mech, reports) -> int:
    if isinstance(reports, PrivKVMReports):
        return reports.n
    return int(np.shape(reports)[0])


def replace_reports(reports, users, forged):
    """A copy of ``reports`` with the rows of ``users`` replaced by ``forged``."""
    users = np.asarray(users, dtype=np.int64)
    if isinstance(reports, PrivKVMReports):
        return reports.replace(users, forged)
    out = np.array(reports, copy=True)
    out[users] = forged
    return out


def _estimate_raw(mech, reports, identities):
    return mech.estimate(reports, identities=identities).raw


def attack_objective(mech, clean, attacked, weights=None, *, identities=None) -> float:
    """``sum_j w_j (mu_hat - mu_hat_c)_j``, or ``||mu_hat - mu_hat_c||_1`` when ``weights`` is None."""
    shift = _estimate_raw(mech, attacked, identities) - _estimate_raw(mech, clean, identities)
    if weights is None:
        return float(np.abs(shift).sum())
    return float(np.dot(np.asarray(weights, dtype=np.float64), shift))


def _tie_break(values: np.ndarray, gen) -> np.ndarray:
    """Indices of the ``len`` largest first by value, ties in random order."""
    return np.lexsort((gen.random(values.shape[0]), -values))


# ------------------------------------------------------------------ adversaries
class _Adversary:
    """Per-mechanism closed forms: best legal outputs, gains, random legal outputs."""

    def __init__(self, mech, reports, identities, magnitude):
        self.mech = mech
        self.reports = reports
        self.n = _n_reports(mech, reports)
        self.ids = resolve_identities(identities, self.n, "attack")
        self.magnitude = magnitude

    def best(self, users, w, gen):
        """(forged reports of ``users``, best value per user) for weights ``w``."""
        raise NotImplementedError

    def honest_value(self, users, w):
        """Each user's current contribution to ``sum_j w_j mu_hat(j)``, times the same scale."""
        raise NotImplementedError

    def gains(self, w, gen):
        users = np.arange(self.n)
        _, best = self.best(users, w, gen)
        return best - self.honest_value(users, w)

    def random_legal(self, users, gen):
        raise NotImplementedError


def _extreme(mech, magnitude):
    if magnitude is not None:
        return float(magnitude)
    return mech.extreme_report


class _RPCAdversary(_Adversary):
    def _dots(self, users, w):
        cols = np.flatnonzero(w)
        if cols.size == 0:
            return np.zeros(len(users))
        s = self.mech.sign_vectors(self.ids[users], cols)
        return s @ w[cols]

    def best(self, users, w, gen):
        c = _extreme(self.mech, self.magnitude)
        a = self._dots(users, w)
        y = np.asarray(self.reports, dtype=np.float64)[users]
        z = np.where(a > 0, c, np.where(a < 0, -c, y))
        return z, (self.mech.alpha / self.n) * c * np.abs(a)

    def honest_value(self, users, w):
        y = np.asarray(self.reports, dtype=np.float64)[users]
        return (self.mech.alpha / self.n) * y * self._dots(users, w)

    def random_legal(self, users, gen):
        u = gen.uniform(-1.0, 1.0, len(users))
        return self.mech.R * self.mech.randomizer.privatize(u, rng=gen)


class _SuccinctAdversary(_Adversary):
    def _bucket_dots(self, users, w):
        mech = self.mech
        cols = np.flatnonzero(w)
        out = np.zeros((len(users), mech.b))
        if cols.size == 0:
            return out
        rep = np.repeat(self.ids[users], cols.size)
        cc = np.tile(cols, len(users))
        s = mech.signs(rep, cc).astype(np.float64)
        h = mech.buckets(rep, cc)
        rows = np.repeat(np.arange(len(users)), cols.size)
        np.add.at(out, (rows, h), s * np.tile(w[cols], len(users)))
        return out

    def best(self, users, w, gen):
        c = _extreme(self.mech, self.magnitude)
        a = self._bucket_dots(users, w)
        y = np.asarray(self.reports, dtype=np.float64).reshape(self.n, -1)[users]
        z = np.where(a > 0, c, np.where(a < 0, -c, y))
        return z, c * np.abs(a).sum(axis=1) / self.n

    def honest_value(self, users, w):
        y = np.asarray(self.reports, dtype=np.float64).reshape(self.n, -1)[users]
        return (self._bucket_dots(users, w) * y).sum(axis=1) / self.n

    def random_legal(self, users, gen):
        u = gen.uniform(-1.0, 1.0, (len(users), self.mech.b))
        return self.mech.R * self.mech.randomizer.privatize(u, rng=gen)


class _PCKVUEAdversary(_Adversary):
    def best(self, users, w, gen):
        y = np.asarray(self.reports)[users].astype(np.int8)
        cols = np.flatnonzero(w)
        y[:, cols] = np.sign(w[cols]).astype(np.int8)
        value = np.full(len(users), np.abs(w).sum() * self.mech.scale / self.n)
        return y, value

    def honest_value(self, users, w):
        y = np.asarray(self.reports)[users, : self.mech.d].astype(np.float64)
        return (y @ w) * self.mech.scale / self.n

    def random_legal(self, users, gen):
        return gen.integers(-1, 2, size=(len(users), self.mech.d_padded)).astype(np.int8)


class _PCKVGRRAdversary(_Adversary):
    def best(self, users, w, gen):
        top = np.abs(w).max() if w.size else 0.0
        cands = np.flatnonzero(np.abs(w) == top) if top > 0 else np.arange(self.mech.d)
        keys = cands[gen.integers(0, cands.size, size=len(users))]
        vals = np.where(w[keys] < 0, -1, 1)
        return np.stack([keys, vals], axis=1).astype(np.int64), \
            np.full(len(users), top * self.mech.scale / self.n)

    def honest_value(self, users, w):
        y = np.asarray(self.reports)[users]
        k, v = y[:, 0], y[:, 1]
        wk = np.where(k < self.mech.d, w[np.minimum(k, self.mech.d - 1)], 0.0)
        return wk * v * self.mech.scale / self.n

    def random_legal(self, users, gen):
        k = gen.integers(0, self.mech.d_padded, size=len(users))
        v = np.where(gen.random(len(users)) < 0.5, -1, 1)
        return np.stack([k, v], axis=1).astype(np.int64)


class _CollisionAdversary(_Adversary):
    def _symbol_weights(self, w):
        mech = self.mech
        sw = w if mech.values == "frequency" else np.concatenate([w, -w])
        items = np.flatnonzero(sw).astype(np.int64)
        return items, sw[items].astype(np.float64)

    def _scores(self, users, items, iw):
        """``sum_s w_s 1(H_i(s) = Y_i)``: the honest report's weighted hits."""
        mech = self.mech
        y = np.asarray(self.reports)[users].astype(np.int64)
        rep = np.repeat(self.ids[users], items.size)
        h = olh_buckets(mech.codebook_seed, np.ascontiguousarray(rep), np.tile(items, len(users)),
                        np.full(rep.shape[0], mech.t, dtype=np.int64)).reshape(len(users), items.size)
        return ((h == y[:, None]) * iw).sum(axis=1)

    def best(self, users, w, gen):
        mech = self.mech
        items, iw = self._symbol_weights(w)
        y = np.asarray(self.reports)[users].astype(np.int64)
        if items.size == 0:
            return y, np.zeros(len(users))
        best, score, _ = olh_bucket_search(
            mech.codebook_seed, np.ascontiguousarray(self.ids[users]),
            np.full(len(users), mech.t, dtype=np.int64), items, iw, mech.n_threads)
        # keep the honest symbol when it is already optimal (it looks natural)
        z = np.where(self._scores(users, items, iw) >= score, y, best)
        return z, score * mech.scale / self.n

    def honest_value(self, users, w):
        items, iw = self._symbol_weights(w)
        if items.size == 0:
            return np.zeros(len(users))
        return self._scores(users, items, iw) * self.mech.scale / self.n

    def random_legal(self, users, gen):
        return gen.integers(0, self.mech.t, size=len(users)).astype(np.int64)


class _PrivKVMAdversary(_Adversary):
    def best(self, users, w, gen):
        mech = self.mech
        top = np.abs(w).max() if w.size else 0.0
        cands = np.flatnonzero(np.abs(w) == top) if top > 0 else np.arange(mech.d)
        keys = cands[gen.integers(0, cands.size, size=len(users))].astype(np.int64)
        vals = np.repeat(np.where(w[keys] < 0, -1, 1)[:, None], mech.n_rounds, axis=1).astype(np.int8)
        forged = PrivKVMReports(keys, np.ones(len(users), dtype=np.int8), vals)
        return forged, np.full(len(users), top)

    def honest_value(self, users, w):
        r = self.reports
        k = r.keys[users]
        return w[k] * r.key_bits[users] * r.values[users].mean(axis=1)

    def random_legal(self, users, gen):
        mech = self.mech
        keys = gen.integers(0, mech.d, size=len(users)).astype(np.int64)
        bits = gen.integers(0, 2, size=len(users)).astype(np.int8)
        vals = np.where(gen.random((len(users), mech.n_rounds)) < 0.5, -1, 1) * bits[:, None]
        return PrivKVMReports(keys, bits, vals.astype(np.int8))


def _adversary(mech, reports, identities, magnitude) -> _Adversary:
    table = [(RPC, _RPCAdversary), (Succinct, _SuccinctAdversary), (PCKVUE, _PCKVUEAdversary),
             (PCKVGRR, _PCKVGRRAdversary), (Collision, _CollisionAdversary),
             (PrivKVM, _PrivKVMAdversary)]
    for cls, adv in table:
        if isinstance(mech, cls):
            if isinstance(mech, PrivKVM) and not isinstance(reports, PrivKVMReports):
                raise param_error("reports", "attack", "a PrivKVMReports for PrivKVM",
                                  type(reports).__name__, TypeError)
            return adv(mech, reports, identities, magnitude)
    raise param_error("mechanism", "attack",
                      "an RPC, PCKVUE, PCKVGRR, PrivKVM, Succinct or Collision instance",
                      type(mech).__name__, TypeError)


def _resolve_users(adv, q, corrupted, model, gen, owner):
    n = adv.n
    model = check_choice(model, "model", owner, MODELS)
    if corrupted is not None:
        if model == "strong":
            raise param_error("corrupted", owner, "None under the strong model (the adversary "
                              "picks the users)", "an array")
        users = np.unique(np.asarray(corrupted, dtype=np.int64))
        if users.size and (users[0] < 0 or users[-1] >= n):
            raise param_error("corrupted", owner, f"indices in [0, {n})", corrupted)
        return model, users, None
    if q is None:
        raise param_error("q", owner, "an int in [0, n] when 'corrupted' is not given", q)
    q = check_int(q, "q", owner, low=0, high=n)
    if model == "additive":
        return model, np.sort(gen.choice(n, size=q, replace=False)).astype(np.int64), q
    return model, None, q


def _weights(adv, target, direction, weights, owner):
    d = adv.mech.d
    if weights is not None:
        w = np.asarray(weights, dtype=np.float64)
        if w.shape != (d,) or not np.all(np.isfinite(w)):
            raise param_error("weights", owner, f"a finite float array of shape ({d},)", weights)
        return w
    t = np.unique(np.asarray(target, dtype=np.int64).ravel())
    if t.size == 0 or t[0] < 0 or t[-1] >= d:
        raise param_error("target", owner, f"a non-empty set of coordinates in [0, {d})", target)
    direction = check_float(direction, "direction", owner)
    if direction == 0:
        raise param_error("direction", owner, "+1 or -1", direction)
    w = np.zeros(d)
    w[t] = np.sign(direction)
    return w


def _respond(adv, model, users, q, w, gen):
    """Best users (strong model) and outputs for ``w``: (users, forged, gains)."""
    gains = None
    if model == "strong":
        gains = adv.gains(w, gen)
        users = np.sort(_tie_break(gains, gen)[:q]).astype(np.int64)
    forged, _ = adv.best(users, w, gen)
    return users, forged, gains


# ---------------------------------------------------------------------- attacks
def sparse_targeted_attack(mechanism, reports, target=None, *, q=None, corrupted=None,
                           model="additive", direction=1, weights=None, identities=None,
                           magnitude=None, rng=None) -> SparseAttackResult:
    """Push the estimate up (or down) on a target set ``T`` with legal outputs.

    Parameters
    ----------
    mechanism : RPC, PCKVUE, PCKVGRR, PrivKVM, Succinct or Collision
    reports
        The honest reports (as ``mechanism.privatize`` returned them).
    target : array_like of int
        The target coordinates ``T``.
    q : int, optional
        Number of corrupted users. Additive model: drawn uniformly with
        ``rng`` when ``corrupted`` is not given (fixed in advance, independent
        of the data). Strong model: the ``q`` users of largest gain.
    corrupted : array_like of int, optional
        The corrupted users (additive model only).
    model : {"additive", "strong"}
    direction : +1 or -1
        Increase (+1) or decrease (-1) the estimate on ``T``.
    weights : float array (d,), optional
        General signed target weights instead of ``target`` and ``direction``.
    identities : array_like of int, optional
        The identities the clients used (RPC, Succinct, Collision).
    magnitude : float, optional
        Output magnitude for randomizers with unbounded output (Laplace).
    rng : None, int, SeedSequence or Generator
        Draws the additive corrupted set and breaks ties; the attack is
        reproducible from it.

    Returns
    -------
    SparseAttackResult
        ``objective = sum_j w_j (mu_hat - mu_hat_c)_j``.
    """
    owner = "sparse_targeted_attack"
    gen = as_generator(rng, owner, purpose="attack")
    adv = _adversary(mechanism, reports, identities, magnitude)
    w = _weights(adv, target, direction, weights, owner)
    model, users, q = _resolve_users(adv, q, corrupted, model, gen, owner)
    users, forged, gains = _respond(adv, model, users, q, w, gen)
    attacked = replace_reports(reports, users, forged)
    clean = _estimate_raw(mechanism, reports, identities)
    shift = _estimate_raw(mechanism, attacked, identities) - clean
    return SparseAttackResult(reports=attacked, corrupted=users, weights=w,
                              objective=float(np.dot(w, shift)), shift=shift, model=model,
                              kind="targeted", gains=gains)


def sparse_untargeted_attack(mechanism, reports, *, q=None, corrupted=None, model="additive",
                             n_restarts=3, max_iter=20, identities=None, magnitude=None,
                             rng=None) -> SparseAttackResult:
    """Maximize ``||mu_hat - mu_hat_c||_1`` over legal outputs (and users, strong model).

    Alternating ascent over sign patterns ``w in {-1, +1}^d`` (module
    docstring), started from ``w = +1``, ``w = -1`` and ``n_restarts - 2``
    random sign patterns; the best result is returned.

    Parameters
    ----------
    mechanism, reports, q, corrupted, model, identities, magnitude, rng
        As :func:`sparse_targeted_attack`.
    n_restarts : int >= 1
    max_iter : int >= 1
        Ascent steps per start.

    Returns
    -------
    SparseAttackResult
        ``objective = ||mu_hat - mu_hat_c||_1``; ``weights`` the final signs.
    """
    owner = "sparse_untargeted_attack"
    gen = as_generator(rng, owner, purpose="attack")
    n_restarts = check_int(n_restarts, "n_restarts", owner, low=1)
    max_iter = check_int(max_iter, "max_iter", owner, low=1)
    adv = _adversary(mechanism, reports, identities, magnitude)
    model, fixed_users, q = _resolve_users(adv, q, corrupted, model, gen, owner)
    d = mechanism.d
    clean = _estimate_raw(mechanism, reports, identities)
    starts = [np.ones(d), -np.ones(d)][:n_restarts]
    while len(starts) < n_restarts:
        starts.append(np.where(gen.random(d) < 0.5, -1.0, 1.0))
    best = None
    for w in starts:
        w = w.copy()
        for _ in range(max_iter):
            users, forged, gains = _respond(adv, model, fixed_users, q, w, gen)
            attacked = replace_reports(reports, users, forged)
            shift = _estimate_raw(mechanism, attacked, identities) - clean
            value = float(np.abs(shift).sum())
            if best is None or value > best.objective:
                best = SparseAttackResult(reports=attacked, corrupted=users, weights=w.copy(),
                                          objective=value, shift=shift, model=model,
                                          kind="untargeted", gains=gains)
            new_w = np.where(shift > 0, 1.0, np.where(shift < 0, -1.0, w))
            if np.array_equal(new_w, w):
                break
            w = new_w
    assert best is not None  # at least one start ran at least one step
    return best


def random_legal_reports(mechanism, reports, users, *, identities=None, rng=None):
    """A copy of ``reports`` where ``users`` send uniformly drawn legal outputs.

    The baseline an optimal attack must beat: RPC and Succinct draw
    ``R Q(u)`` with ``u ~ U[-1, 1]``; PCKV-UE a uniform ``{-1, 0, 1}`` vector;
    PCKV-GRR a uniform key and sign; Collision a uniform symbol; PrivKVM a
    uniform key, bit and value bits.
    """
    gen = as_generator(rng, "random_legal_reports", purpose="attack")
    adv = _adversary(mechanism, reports, identities, None)
    users = np.asarray(users, dtype=np.int64)
    return replace_reports(reports, users, adv.random_legal(users, gen))
