"""A robust PEM decode: MGA's fake users detected by what their reports support together.

An MGA fake user (:mod:`fastldp.heavyhitters.attacks`) reports a bucket that
its hash maps *several* targets to; an honest report supports its own item
and, otherwise, each other prefix only by a hash collision. PEM's decode
(:mod:`fastldp.heavyhitters.pem`) is repeated level by level with one more
step: after a level's candidates are ranked, the ``c k`` kept candidates
``K`` (``k`` at the last level) are checked against every user ``i`` of the
level's group through the support matrix ``M[i, v] = (H_i(v) = y_i)``.
Two rules flag a user:

* **many kept candidates at once**: ``s_i = sum_v M[i, v] >= t``. Given its
  report, an honest user's hashes of the candidates other than its own
  item's prefix are independent and uniform on the ``G`` buckets (OLH's
  hash, modelled as a random function), so ``s_i`` is stochastically at most
  ``1 + Binomial(|K|, 1/G)``; ``t`` is the smallest value with
  ``n_j P(1 + Binomial(|K|, 1/G) >= t) <= alpha``
  (:func:`detection_threshold`);
* **an anomalous pair**: the co-support ``C[u, v] = sum_i M[i, u] M[i, v]``
  of two kept candidates exceeds the ``1 - alpha / P`` quantile of
  ``Binomial(n_j, pi_uv)``, ``pi_uv = (f_u + f_v) p / G + 1 / G^2`` the
  most an honest user can support both (own item and a collision, or two
  collisions), ``P`` the pairs (:func:`pair_thresholds`); every user that
  supports such a pair is flagged (a few honest ones among them).

Flagged users are removed from the group, the level's supports are
recomputed without them, and the ranking is redone (up to ``rounds`` times,
until no new user is flagged). The population count of a final item is its
in-group count times ``n' / n_J'``, the reports and the group's reports
left after the removals. Everything is an integer count, so the result does
not depend on the order of the reports; on clean reports few users are
flagged (``alpha`` per rule and level, in expectation or probability) and
the result is PEM's.

What it stops: fake reports that each promote several targets at once
(MGA's gain per fake user). What it does not: fake reports that each
support one target (MGA with ``search = 1`` mostly sends those), which
neither rule sees; the attacker then pays about one fake user per unit of
support per target, as in an input-manipulation attack. Detecting fake
users is one of the countermeasures Cao, Jia and Gong discuss [1]_.

Long items (more than 8 bytes) are decoded as by PEM: candidates are full
prefixes (1-d or 2-d codes, :mod:`fastldp.heavyhitters.items`) and every
hash, in the supports and in the support matrix, is of their keys
(:func:`~fastldp.heavyhitters.items.prefix_keys`); for items of at most 64
bits the keys are the prefixes, so nothing changes there.

References
----------
.. [1] X. Cao, J. Jia, N. Z. Gong, "Data poisoning attacks to local
   differential privacy protocols", USENIX Security 2021 (countermeasures).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .._kernels._heavy import heavy_buckets, heavy_support
from .._sanitize import sanitization_report
from .._validation import check_float, check_int, param_error
from ..results import PrivacyStatement
from ._base import HeavyHitters
from .items import code_order, extend, prefix_keys, top_k_order
from .pem import PEM

__all__ = ["RobustDecode", "robust_pem_estimate", "detection_threshold", "support_matrix",
           "pair_thresholds"]

#: users scored per block (bounds the memory of the scores to 8 |K| BLOCK bytes)
BLOCK = 1 << 16


@dataclass(frozen=True)
class RobustDecode:
    """What :func:`robust_pem_estimate` returns.

    Attributes
    ----------
    result : HeavyHitters
        The top-k after the removals.
    flagged : uint64 array
        The identities removed as fake (sorted).
    thresholds : tuple of int
        The score threshold of each level.
    """

    result: HeavyHitters
    flagged: np.ndarray
    thresholds: tuple


def detection_threshold(n_j: int, n_kept: int, n_buckets: int, alpha: float = 0.01) -> int:
    """The smallest ``t`` with ``n_j P(1 + Binomial(n_kept, 1/G) >= t) <= alpha``.

    See the module docstring.
    """
    from scipy.stats import binom  # late: scipy.stats is slow to import

    t = 1
    while t <= n_kept + 1 and n_j * binom.sf(t - 2, n_kept, 1.0 / n_buckets) > alpha:
        t += 1
    return t


def support_matrix(pem: PEM, identities: np.ndarray, reports: np.ndarray,
                   candidates: np.ndarray) -> np.ndarray:
    """``M[i, c] = (H_i(candidates[c]) == y_i)`` (bool, users x candidates), in blocks of users.

    ``candidates`` are what the hash sees: prefixes of at most 64 bits, or the
    keys (:func:`~fastldp.heavyhitters.items.prefix_keys`) of longer ones.
    """
    ids = np.ascontiguousarray(identities, dtype=np.uint64)
    reps = np.asarray(reports, dtype=np.int64)
    cands = np.ascontiguousarray(candidates, dtype=np.uint64)
    c = cands.shape[0]
    out = np.zeros((ids.shape[0], c), dtype=bool)
    for lo in range(0, ids.shape[0], BLOCK):
        block = ids[lo:lo + BLOCK]
        b = block.shape[0]
        hashed = heavy_buckets(pem.codebook_seed, np.repeat(block, c), np.tile(cands, b),
                               np.full(b * c, pem.n_buckets, dtype=np.int64)).reshape(b, c)
        out[lo:lo + b] = hashed == reps[lo:lo + b, None]
    return out


def pair_thresholds(n_j: int, freq: np.ndarray, p: float, n_buckets: int,
                    alpha: float = 0.01) -> np.ndarray:
    """``T[u, v]``: the smallest co-support count of two kept candidates flagged as anomalous.

    An honest user supports both ``u`` and ``v`` with probability at most
    ``pi_uv = (f_u + f_v) p / G + 1/G^2`` (its own item and one collision,
    or two collisions; ``f`` the candidates' frequencies, here the level's
    estimates clipped to ``[0, 1]``); ``T`` is the ``1 - alpha / P``
    quantile of ``Binomial(n_j, pi_uv)`` plus one, ``P`` the number of pairs
    (a Bonferroni bound: fewer than ``alpha`` false pairs per level).
    """
    from scipy.stats import binom  # late: scipy.stats is slow to import

    f = np.clip(freq, 0.0, 1.0)
    K = f.shape[0]
    pairs = max(K * (K - 1) // 2, 1)
    pi = np.minimum((f[:, None] + f[None, :]) * p / n_buckets + 1.0 / n_buckets ** 2, 1.0)
    return binom.isf(alpha / pairs, n_j, pi) + 1


def _support(pem: PEM, ids: np.ndarray, reps: np.ndarray, candidates: np.ndarray) -> np.ndarray:
    if not ids.shape[0]:
        return np.zeros(candidates.shape[0], dtype=np.int64)
    return heavy_support(pem.codebook_seed, np.ascontiguousarray(ids), np.ascontiguousarray(reps),
                         np.full(ids.shape[0], pem.n_buckets, dtype=np.int64),
                         np.ascontiguousarray(candidates), pem.n_threads)


def robust_pem_estimate(pem: PEM, reports: Any, *, identities: Any = None, alpha: float = 0.01,
                        rounds: int = 3) -> RobustDecode:
    """PEM's decode with the fake-user detection of the module docstring.

    The detection decode keeps the fixed width ``c k`` at every level and
    does not pool ended strings: it is ``PEM(..., z=None, pool_ended=False)``'s
    decode whatever ``pem.z`` and ``pem.pool_ended`` say (issue 34's
    noise-following width and pooling are not in it yet).

    Parameters
    ----------
    pem : PEM
    reports, identities
        As for :meth:`PEM.estimate` (sanitized the same way).
    alpha : float in (0, inf), default 0.01
        Expected honest users flagged per level (at most).
    rounds : int >= 1, default 3
        Detection rounds per level.

    Returns
    -------
    RobustDecode

    Examples
    --------
    >>> import numpy as np
    >>> pem = PEM(epsilon=4.0, k=2, item_bits=16, codebook_seed=1)
    >>> items = np.repeat([7, 400, 9000], [6000, 3000, 1000])
    >>> out = robust_pem_estimate(pem, pem.privatize(items, rng=0))
    >>> out.result.items.tolist(), out.flagged.size
    ([7, 400], 0)
    """
    owner = "robust_pem_estimate"
    if not isinstance(pem, PEM):
        raise param_error("pem", owner, "a PEM object", pem, TypeError)
    alpha = check_float(alpha, "alpha", owner, low=0.0)
    rounds = check_int(rounds, "rounds", owner, low=1, high=100)
    part = pem.partial(reports, identities=identities)
    ids, reps, n = part.identities, part.reports, part.n
    groups = pem.groups(ids)
    G, p = pem.n_buckets, pem.p
    d = p - 1.0 / G
    candidates = pem._possible(np.arange(1 << pem.s, dtype=np.uint64), pem.s)
    flagged: list[np.ndarray] = []
    thresholds, levels = [], []
    for j, bits in enumerate(pem.prefix_bits):
        mine = groups == j
        ids_j, reps_j = ids[mine], reps[mine]
        last = j == pem.g - 1
        keep = min(pem.k if last else pem.c * pem.k, candidates.shape[0])
        keys = prefix_keys(candidates, bits)
        hits = _support(pem, ids_j, reps_j, keys)
        alive = np.ones(ids_j.shape[0], dtype=bool)
        t = detection_threshold(int(ids_j.shape[0]), keep, G, alpha)
        for _ in range(rounds):
            n_j = int(alive.sum())
            freq = (hits / max(n_j, 1) - 1.0 / G) / d
            order = top_k_order(candidates, freq, keep)
            matrix = support_matrix(pem, ids_j[alive], reps_j[alive], keys[order])
            co = matrix.T.astype(np.int64) @ matrix.astype(np.int64)
            bad = np.triu(co >= pair_thresholds(n_j, freq[order], p, G, alpha), 1)
            new = matrix.sum(axis=1) >= t
            for u, v in zip(*np.nonzero(bad)):
                new |= matrix[:, u] & matrix[:, v]
            if not new.any():
                break
            where = np.flatnonzero(alive)[new]
            hits = hits - _support(pem, ids_j[where], reps_j[where], keys)
            alive[where] = False
            flagged.append(ids_j[where])
        n_j = int(alive.sum())
        freq = (hits / max(n_j, 1) - 1.0 / G) / d
        order = top_k_order(candidates, freq, keep)
        thresholds.append(t)
        levels.append({"level": j, "prefix_bits": bits, "n_reports": n_j,
                       "n_candidates": int(candidates.shape[0]), "kept": keep,
                       "flagged": int(ids_j.shape[0] - n_j), "threshold": t})
        if not last:
            kept = candidates[order]
            candidates = pem._possible(extend(kept[code_order(kept)], pem.eta, bits=bits),
                                       bits + pem.eta)
            continue
        out = np.sort(np.concatenate(flagged)) if flagged else np.zeros(0, dtype=np.uint64)
        n_left = n - int(out.shape[0])
        scale = n_left / n_j if n_j else 0.0
        f_j = freq[order] * n_j
        counts = f_j * scale
        v0 = (1.0 / G) * (1 - 1.0 / G) / d ** 2
        v1 = p * (1 - p) / d ** 2
        f = np.clip(counts, 0, n_left)  # the group-sampling term as PEM's (its module docstring)
        variances = (scale ** 2 * (n_j * v0 + np.clip(f_j, 0, n_j) * (v1 - v0))
                     + f * (1.0 - f / n_left) * max(scale - 1.0, 0.0)) if n_j \
            else np.full(keep, np.inf)
        codes = candidates[order]
        result = HeavyHitters(
            counts=counts, variances=variances, items=pem.codec.decode(codes), codes=codes,
            n=n, sanitization=sanitization_report(part.counts, {"wrong_dtype": part.wrong_dtype}),
            privacy=PrivacyStatement.local(epsilon=pem.epsilon),
            categories=tuple(pem.codec.label(c) for c in codes), levels=tuple(levels), k=pem.k)
        return RobustDecode(result=result, flagged=out, thresholds=tuple(thresholds))
    raise AssertionError("unreachable")  # pragma: no cover
