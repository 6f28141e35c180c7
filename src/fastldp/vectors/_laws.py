"""Exact output laws of the sparse-vector mechanisms on tiny domains.

Each function reads only a mechanism's public parameters (its budgets,
``d``, ``m``, the padding length, the hash range and the public hashes that
the mechanism exposes) and returns an :class:`~fastldp.channels.ExactLaw`
over every *key-value set* of at most ``m`` pairs with keys in ``[0, d)`` and
values in a small grid (default ``{-1, 0, 1}``; a stored 0 is an item the
user holds with value 0, which the mechanisms round to a fair sign). The
samplers of :mod:`fastldp.vectors` are checked against these laws by
:mod:`fastldp.audit` (through :mod:`._channels`).

The formulas (``e1 = e^{eps1}``, ``p = e^{eps2} / (e^{eps2} + 1)``):

* RPC on the Duchi route: ``u = Clip(<x, S_i>, R)`` from :meth:`RPC.encode`
  for every ternary vector with at most ``m`` non-zeros, then Duchi at ``u / R``
  (:func:`fastldp.oracles._laws.duchi_law`); outputs ``+-R C``.

* PCKV sampling (both variants): with ``l = m`` slots, each held pair
  ``(k, v)`` is sampled with probability ``1 / l`` and its sign is ``+1`` with
  probability ``(1 + v) / 2``; the other ``(l - s) / l`` of the mass goes to
  the ``l`` dummy keys ``d .. d + l - 1`` uniformly, each with a fair sign.
* PCKV-UE over ``{-1, 0, 1}^{d + l}``: given the sampled ``(k, s)``,
  ``y(k) = s`` w.p. ``a p``, ``-s`` w.p. ``a (1 - p)``, 0 w.p. ``1 - a``; every
  other entry is ``+-1`` w.p. ``b / 2`` each and 0 w.p. ``1 - b``,
  independently (``a = 1/2``, ``b = 1 / (e1 + 1)``).
* PCKV-GRR over ``[0, d + l) x {-1, +1}``: ``(k, s)`` w.p. ``a p``,
  ``(k, -s)`` w.p. ``a (1 - p)``, every ``(k', +-1)`` with ``k' != k`` w.p.
  ``b / 2`` (``a = e1 / (e1 + d + l - 1)``, ``b = 1 / (e1 + d + l - 1)``).
* PrivKVM, with ``p1 = e^{eps/2} / (e^{eps/2} + 1)`` and
  ``p2 = e^{eps/(2c)} / (e^{eps/(2c)} + 1)``: the key ``j`` is uniform over
  ``[0, d)``; the key bit is 1 w.p. ``p1`` if the user holds ``j`` and
  ``1 - p1`` otherwise; under a 1-bit, round ``r`` sends ``+1`` w.p.
  ``1/2 + (2 p2 - 1) s_r / 2`` with ``s_r`` the held value, or the public fake
  value ``v~_r`` when ``j`` is not held (``v~_1 = 0``); under a 0-bit it sends
  nothing (0). :func:`privkvm_round_law` is the law of the first round's
  messages ``(j, bit, value_1)``; :func:`privkvm_law` the law of all ``c``
  rounds for each public fake trajectory in a grid.
* Collision (signed mode): the pair ``(k, v)`` becomes symbol ``k`` (sign
  ``+1``, w.p. ``(1 + v) / 2``) or ``d + k``; with ``H`` the set of distinct
  hashed symbols (``c = |H|``) and ``Omega = m e^eps + t - m``, ``P(y) = e^eps /
  Omega`` for ``y`` in ``H`` and ``(Omega - e^eps c) / ((t - c) Omega)``
  otherwise (paper 001, Eq. (13)), mixed over the sign draws.
* Succinct with Duchi's ``Q`` at ``eps / b``: ``B_k = sum_{h(j) = k} x(j) S(j)``,
  ``u_k = Clip(B_k, R) / R``, and each bucket independently releases ``+R C``
  w.p. ``1/2 + u_k (e^{eps/b} - 1) / (2 (e^{eps/b} + 1))``; outputs are the
  sign tuples.
"""

from __future__ import annotations

import itertools
from math import exp

import numpy as np
import scipy.sparse as sp

from ..channels import ExactLaw, as_identities as _ids
from ..oracles.olh import olh_hash

__all__ = [
    "kv_sets", "kv_csr", "pckv_sampling", "pckv_ue_law", "pckv_grr_law", "privkvm_round_law",
    "privkvm_law", "fake_grid", "collision_law", "succinct_duchi_law", "VALUE_GRID",
    "ternary_vectors", "rpc_law",
]

#: the value grid of the exact sparse-vector audits
VALUE_GRID = (-1.0, 0.0, 1.0)


def kv_sets(d: int, m: int, grid=VALUE_GRID) -> list:
    """Every set of at most ``m`` pairs ``(key, value)``, keys in ``[0, d)`` ascending, values in ``grid``."""
    out = []
    for size in range(m + 1):
        for keys in itertools.combinations(range(d), size):
            for vals in itertools.product(grid, repeat=size):
                out.append(tuple(zip(keys, (float(v) for v in vals))))
    return out


def kv_csr(sets, d: int) -> sp.csr_matrix:
    """Key-value sets as a CSR matrix whose stored entries (stored zeros included) are the items."""
    if len(sets) > 1 and all(s is sets[0] for s in sets):     # one input repeated: tile it
        one = kv_csr(sets[:1], d)
        k = len(sets)
        size = one.indices.shape[0]
        return sp.csr_matrix((np.tile(one.data, k), np.tile(one.indices, k),
                              np.arange(k + 1, dtype=np.int64) * size), shape=(k, d))
    sizes = np.array([len(s) for s in sets], dtype=np.int64)
    cols = np.array([k for s in sets for k, _ in s], dtype=np.int64)
    vals = np.array([v for s in sets for _, v in s], dtype=np.float64)
    indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    return sp.csr_matrix((vals, cols, indptr), shape=(len(sets), d))


def _plus(v: float) -> float:
    """Probability that randomized rounding sends ``v`` to ``+1``."""
    return 0.5 * (1.0 + v)


def pckv_sampling(s, d: int, ell: int) -> np.ndarray:
    """``P(k, sign | s)`` of PCKV's Padding-and-Sampling, shape ``(d + ell, 2)``; column 0 is ``-1``."""
    out = np.zeros((d + ell, 2))
    for k, v in s:
        out[k, 1] += _plus(v) / ell
        out[k, 0] += (1.0 - _plus(v)) / ell
    dummy = (ell - len(s)) / ell / ell
    out[d:, :] += dummy / 2.0
    return out


def pckv_ue_law(d: int, ell: int, eps1: float, eps2: float, grid=VALUE_GRID, m=None) -> ExactLaw:
    """PCKV-UE over all ``3^{d + ell}`` ternary reports (as tuples)."""
    D = d + ell
    a, b = 0.5, 1.0 / (exp(eps1) + 1.0)
    p = exp(eps2) / (exp(eps2) + 1.0)
    sets = kv_sets(d, ell if m is None else m, grid)
    outputs = list(itertools.product((-1, 0, 1), repeat=D))
    Y = np.array(outputs, dtype=np.int64)                     # (3^D, D)
    g = np.where(Y == 0, 1.0 - b, b / 2.0)                    # other entries
    # P(y | k, s) = f_s(y_k) prod_{j != k} g(y_j)
    cond = np.empty((D, 2, Y.shape[0]))
    for k in range(D):
        rest = np.prod(np.delete(g, k, axis=1), axis=1)
        for col, s in enumerate((-1, 1)):
            f = np.where(Y[:, k] == s, a * p, np.where(Y[:, k] == -s, a * (1 - p), 1.0 - a))
            cond[k, col] = f * rest
    probs = np.empty((1, len(sets), Y.shape[0]))
    for j, s in enumerate(sets):
        w = pckv_sampling(s, d, ell)                          # (D, 2)
        probs[0, j] = np.einsum("kc,kcy->y", w, cond)
    return ExactLaw(sets, outputs, np.zeros(1, dtype=np.uint64), probs,
                    note="PCKV-UE law from (eps1, eps2, d, l); binary64, converted exactly")


def pckv_grr_law(d: int, ell: int, eps1: float, eps2: float, grid=VALUE_GRID, m=None) -> ExactLaw:
    """PCKV-GRR over the ``2 (d + ell)`` reports ``(key, value)``."""
    D = d + ell
    e1 = exp(eps1)
    a, b = e1 / (e1 + D - 1), 1.0 / (e1 + D - 1)
    p = exp(eps2) / (exp(eps2) + 1.0)
    sets = kv_sets(d, ell if m is None else m, grid)
    outputs = [(k, v) for k in range(D) for v in (-1, 1)]
    # cond[k, s, (k', v')]
    cond: np.ndarray = np.full((D, 2, D, 2), b / 2.0)
    for k in range(D):
        for col, s in enumerate((-1, 1)):
            cond[k, col, k, col] = a * p
            cond[k, col, k, 1 - col] = a * (1 - p)
    cond = cond.reshape(D, 2, 2 * D)
    probs = np.empty((1, len(sets), 2 * D))
    for j, s in enumerate(sets):
        probs[0, j] = np.einsum("kc,kcy->y", pckv_sampling(s, d, ell), cond)
    return ExactLaw(sets, outputs, np.zeros(1, dtype=np.uint64), probs,
                    note="PCKV-GRR law from (eps1, eps2, d, l); binary64, converted exactly")


def _rr(eps: float) -> float:
    return exp(eps) / (exp(eps) + 1.0)


def fake_grid(c: int, grid=VALUE_GRID) -> np.ndarray:
    """Every fake-value trajectory ``(v~_1, .., v~_c)`` in ``grid^c``, shape ``(len(grid)^c, c)``."""
    return np.array(list(itertools.product(grid, repeat=c)), dtype=np.float64).reshape(-1, c)


def privkvm_law(d: int, m: int, epsilon: float, c: int, fakes, grid=VALUE_GRID) -> ExactLaw:
    """PrivKVM's ``c``-round messages ``(j, bit, (v_1 .. v_c))`` for each public fake trajectory.

    The law's identities index the rows of ``fakes`` (shape ``(F, c)``): the
    fake values the server broadcasts are public, as a codebook row is.
    """
    fakes = np.asarray(fakes, dtype=np.float64).reshape(-1, c)
    p1, p2 = _rr(epsilon / 2.0), _rr(epsilon / (2.0 * c))
    sets = kv_sets(d, m, grid)
    patterns = list(itertools.product((-1, 1), repeat=c))
    outputs = [(j, 0, (0,) * c) for j in range(d)] + [(j, 1, v) for j in range(d) for v in patterns]
    V = np.array(patterns, dtype=np.float64)                     # (2^c, c)
    probs = np.empty((fakes.shape[0], len(sets), len(outputs)))
    for x, s in enumerate(sets):
        held = dict(s)
        for j in range(d):
            bit1 = p1 if j in held else 1.0 - p1
            src = (np.full((fakes.shape[0], c), held[j]) if j in held else fakes)  # (F, c)
            # P(v_r = +1) = 1/2 + (2 p2 - 1) s_r / 2, independently over rounds
            plus = 0.5 + (2.0 * p2 - 1.0) * src / 2.0
            rounds = np.where(V[None, :, :] > 0, plus[:, None, :], 1.0 - plus[:, None, :])
            probs[:, x, j] = (1.0 - bit1) / d
            lo = d + j * len(patterns)
            probs[:, x, lo: lo + len(patterns)] = bit1 / d * np.prod(rounds, axis=2)
    return ExactLaw(sets, outputs, np.arange(fakes.shape[0], dtype=np.uint64), probs,
                    note=f"identities: the {fakes.shape[0]} public fake-value trajectories")


def privkvm_round_law(d: int, m: int, epsilon: float, c: int, grid=VALUE_GRID) -> ExactLaw:
    """The first round's messages ``(j, bit, v_1)`` (fake value ``v~_1 = 0``).

    The key and its bit are sent once and the first value bit is spent in
    round 1, so this channel's budget is ``eps / 2 + eps / (2c)``.
    """
    p1, p2 = _rr(epsilon / 2.0), _rr(epsilon / (2.0 * c))
    sets = kv_sets(d, m, grid)
    outputs = [(j, 0, 0) for j in range(d)] + [(j, 1, v) for j in range(d) for v in (-1, 1)]
    index = {o: i for i, o in enumerate(outputs)}
    probs = np.zeros((1, len(sets), len(outputs)))
    for x, s in enumerate(sets):
        held = dict(s)
        for j in range(d):
            bit1 = p1 if j in held else 1.0 - p1
            plus = 0.5 + (2.0 * p2 - 1.0) * held.get(j, 0.0) / 2.0
            probs[0, x, index[(j, 0, 0)]] = (1.0 - bit1) / d
            probs[0, x, index[(j, 1, 1)]] = bit1 / d * plus
            probs[0, x, index[(j, 1, -1)]] = bit1 / d * (1.0 - plus)
    return ExactLaw(sets, outputs, np.zeros(1, dtype=np.uint64), probs,
                    note="round 1 of c: key, key bit and first value bit (fake value 0)")


def collision_law(mech, identities, grid=VALUE_GRID) -> ExactLaw:
    """Collision in signed mode, from ``(eps, m, t, d)`` and the public hash ``H_i``."""
    ids = _ids(identities)
    d, m, t = mech.d, mech.m, mech.t
    e = exp(mech.epsilon)
    omega = m * e + t - m
    hit = e / omega
    sets = kv_sets(d, m, grid)
    probs = np.zeros((ids.shape[0], len(sets), t))
    cols = np.arange(t)
    for x, s in enumerate(sets):
        for signs in itertools.product((1, -1), repeat=len(s)):
            w = 1.0
            for (_, v), sg in zip(s, signs):
                w *= _plus(v) if sg > 0 else 1.0 - _plus(v)
            if w == 0.0:
                continue
            symbols = [k if sg > 0 else d + k for (k, _), sg in zip(s, signs)]
            if symbols:
                h = olh_hash(mech.codebook_seed, np.repeat(ids, len(symbols)),
                             np.tile(np.array(symbols, dtype=np.int64), ids.shape[0]),
                             t).reshape(ids.shape[0], len(symbols))
                inset = (h[:, :, None] == cols[None, None, :]).any(axis=1)   # (ids, t)
            else:
                inset = np.zeros((ids.shape[0], t), dtype=bool)
            cnt = inset.sum(axis=1, keepdims=True)
            miss = (omega - e * cnt) / ((t - cnt) * omega)
            probs[:, x] += w * np.where(inset, hit, miss)
    return ExactLaw(sets, list(range(t)), ids, probs,
                    note="Eq. (13) from (eps, m, t) and the public hashes, mixed over sign draws")


def succinct_duchi_law(mech, identities) -> ExactLaw:
    """Succinct with Duchi's ``Q``: sign tuples of the ``b`` buckets, from the public hashes."""
    if mech.randomizer.name != "duchi":
        raise ValueError("the exact Succinct law needs randomizer='duchi'")
    ids = _ids(identities)
    d, b, R = mech.d, mech.b, mech.R
    eb = exp(mech.epsilon / b)
    slope = (eb - 1.0) / (2.0 * (eb + 1.0))
    rep = np.repeat(ids, d)
    coords = np.tile(np.arange(d, dtype=np.int64), ids.shape[0])
    S = mech.signs(rep, coords).reshape(ids.shape[0], d).astype(np.float64)
    H = mech.buckets(rep, coords).reshape(ids.shape[0], d)
    onehot = (H[:, :, None] == np.arange(b)[None, None, :]).astype(np.float64)   # (ids, d, b)
    vectors = ternary_vectors(d, mech.m)
    patterns = list(itertools.product((-1, 1), repeat=b))
    P = np.array(patterns, dtype=np.float64)                                     # (2^b, b)
    probs = np.empty((ids.shape[0], len(vectors), len(patterns)))
    for x, v in enumerate(vectors):
        B = np.einsum("id,idk->ik", S * v[None, :], onehot)                      # (ids, b)
        u = np.clip(B, -R, R) / R
        plus = 0.5 + u * slope
        probs[:, x] = np.prod(np.where(P[None] > 0, plus[:, None, :], 1.0 - plus[:, None, :]), axis=2)
    return ExactLaw(vectors, patterns, ids, probs,
                    note="Duchi at eps/b per bucket from the public hashes; outputs are signs")


def ternary_vectors(d: int, m: int) -> list:
    """Every vector in ``{-1, 0, 1}^d`` with at most ``m`` non-zeros."""
    return [np.array(v, dtype=np.float64) for v in itertools.product((-1, 0, 1), repeat=d)
            if sum(1 for t in v if t) <= m]


def rpc_law(mech, identities) -> ExactLaw:
    """RPC with Duchi's ``Q`` on the ternary route: ``u`` from :meth:`RPC.encode`, then Duchi."""
    ids = _ids(identities)
    if mech.randomizer.name != "duchi" or mech.values != "ternary":
        raise ValueError("the exact RPC law needs randomizer='duchi' and values='ternary'")
    vectors = ternary_vectors(mech.d, mech.m)
    plus = np.empty((ids.shape[0], len(vectors)))
    for j, v in enumerate(vectors):
        u = mech.encode(np.tile(v, (ids.shape[0], 1)), identities=ids)
        plus[:, j] = mech.randomizer.prob_plus(u / mech.R)
    probs = np.stack([1.0 - plus, plus], axis=2)
    c = mech.R * mech.randomizer.C
    return ExactLaw(vectors, [-c, c], ids, probs)
