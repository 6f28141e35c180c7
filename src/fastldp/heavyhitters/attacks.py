"""MGA: promoting chosen items into PEM's top-k with fake users' legal reports.

The maximal gain attack of Cao, Jia and Gong [1]_ (MGA, for OLH),
applied to PEM (:mod:`fastldp.heavyhitters.pem`). The attacker wants ``r``
*target* items in the top-k. It controls ``m = beta n`` fake users and knows
everything public (the codebook seed, hence every identity's group and OLH
hash); it does not see the honest reports. A fake user sends one *legal*
report: a bucket in ``[0, G)``, so the server cannot tell it from an honest
one and sanitization changes nothing.

In OLH [1]_ a fake user picks its hash seed so that its hash maps as many
targets as possible to one bucket, and reports that bucket: every target
whose hash hits the report gains one support. In fastldp the OLH hash of a
user is keyed by its public identity, so the seed choice is the choice of
the identity: the attacker draws ``search`` candidate identities per fake
user (from a pool disjoint from the honest ones), and for each computes its
group ``j`` and the hashes ``H_i(t_j)`` of the targets' ``b_j``-bit
prefixes; the best bucket is the one hit by the most targets
(``supported``; ties: the smaller bucket), and the fake user keeps the
candidate identity of the largest ``supported`` (ties: the first drawn). With
``search = 1`` the identities are fixed and only the bucket is chosen.

Objective
---------
Cao et al.'s *frequency gain*: the sum over the targets of the estimated
frequency after the attack minus before. PEM's final count of an item is
decided at the last level ``J = g - 1``, whose group has ``N`` honest and
``m_J`` fake reports; the estimated frequency of ``t`` there is
``f_hat(t) = (S(t) / N_J' - 1/G) / (p - 1/G)`` with ``S(t)`` the support and
``N_J'`` the group's reports. Let ``F_t`` be the number of fake reports of
group ``J`` that support ``t`` (fixed by the attacker). Since an honest report
supports ``t`` with probability ``q_t = f_t (p - 1/G) + 1/G`` (``f_t`` the
target's true frequency; for an item other than ``t`` the report hits
``H_i(t)`` with probability ``p/G + (1 - 1/G)(1 - p)/(G - 1) = 1/G``),

    E[gain_t] = (F_t - m_J / G) / ((N + m_J) (p - 1/G)) - m_J f_t / (N + m_J),

where ``N = N_J`` is the honest size of the group. ``objective`` is the sum
over the targets (the attacker's prediction, from public quantities and
``f_t``, 0 by default: fake items). The realized gain differs from it by
``-m_J (S_t - E S_t) / (N (N + m_J) (p - 1/G))`` per target, whose standard
deviation is ``m_J sqrt(N q_t (1 - q_t)) / (N (N + m_J) (p - 1/G))``
(``prediction_std``, summed over targets: a bound on the sum's).

:func:`level_frequencies` evaluates PEM's estimated frequency of given items
at a level (what the server would compute if they were candidates), so the
realized gain can be measured whether or not a target reached the top-k.

Long items (more than 8 bytes): every hash above is of the key of the
prefix (:func:`~fastldp.heavyhitters.items.prefix_keys`), as in PEM itself;
the attacker knows the keys (they are public), so the attack and its
objective are unchanged. For items of at most 64 bits the keys are the
prefixes.

References
----------
.. [1] X. Cao, J. Jia, N. Z. Gong, "Data poisoning attacks to local
   differential privacy protocols", USENIX Security 2021 (MGA).
.. [2] T. Wang, N. Li, S. Jha, "Locally differentially private heavy hitter
   identification", IEEE TDSC 2019 (PEM).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._kernels._heavy import heavy_buckets, heavy_support
from .._random import as_generator, resolve_identities
from .._validation import check_int, param_error
from .items import prefix, prefix_keys
from .pem import PEM

__all__ = ["MGAResult", "mga_attack", "level_frequencies", "best_buckets"]

#: the fake identities are drawn from [FAKE_BASE, 2^63): disjoint from ordinary honest ids
FAKE_BASE = 1 << 62


@dataclass(frozen=True)
class MGAResult:
    """What :func:`mga_attack` produced.

    Attributes
    ----------
    reports : int64 array, shape (m,)
        The fake users' reports (legal OLH buckets).
    identities : uint64 array, shape (m,)
        Their identities (append both to the honest ones before decoding).
    groups : int64 array, shape (m,)
        Their public PEM groups.
    supported : int64 array, shape (m,)
        How many targets' prefixes each fake report supports at its level.
    targets : uint64 array, shape (r,)
        The target codes.
    objective : float
        The predicted frequency gain of the targets at PEM's last level,
        summed (module docstring).
    per_target : float64 array, shape (r,)
        The predicted gain of each target.
    prediction_std : float
        Standard deviation bound of the realized gain around ``objective``.
    """

    reports: np.ndarray
    identities: np.ndarray
    groups: np.ndarray
    supported: np.ndarray
    targets: np.ndarray
    objective: float
    per_target: np.ndarray
    prediction_std: float

    @property
    def n_fake(self) -> int:
        return int(self.reports.shape[0])


def _target_prefixes(pem: PEM, targets: np.ndarray, groups: np.ndarray) -> np.ndarray:
    """``(m, r)``: the key of the ``b_j``-bit prefix of every target at each user's level."""
    if targets.ndim == 1:  # up to 64 bits: the prefix is its own key
        shift = pem.item_bits - np.asarray(pem.prefix_bits, dtype=np.int64)[groups]
        return targets[None, :] >> shift.astype(np.uint64)[:, None]
    table = np.stack([prefix_keys(prefix(targets, b, pem.item_bits), b)
                      for b in pem.prefix_bits])
    return table[groups]


def best_buckets(pem: PEM, identities: Any, targets: Any) -> tuple[np.ndarray, np.ndarray]:
    """For each identity: the bucket hit by the most targets' prefixes, and how many.

    ``targets`` are codes (uint64; rows of words for items over 64 bits).
    Ties go to the smaller bucket.
    Returns ``(bucket int64, supported int64)``.
    """
    ids = np.ascontiguousarray(identities, dtype=np.uint64)
    codes = np.ascontiguousarray(targets, dtype=np.uint64)
    m, r = ids.shape[0], codes.shape[0]
    if codes.ndim != (1 if pem.codec.words == 1 else 2):
        raise param_error("targets", "best_buckets", f"codes of {pem.item_bits}-bit items",
                          f"an array of shape {codes.shape}")
    groups = pem.groups(ids)
    prefixes = _target_prefixes(pem, codes, groups)
    hashed = heavy_buckets(pem.codebook_seed, np.repeat(ids, r),
                           np.ascontiguousarray(prefixes.reshape(-1)),
                           np.full(m * r, pem.n_buckets, dtype=np.int64)).reshape(m, r)
    # hits[i, c] = how many targets share the bucket of target c
    hits = (hashed[:, :, None] == hashed[:, None, :]).sum(axis=2)
    best = hits.max(axis=1)
    bucket = np.where(hits == best[:, None], hashed, pem.n_buckets).min(axis=1)
    return bucket.astype(np.int64), best.astype(np.int64)


def _draw_identities(gen: np.random.Generator, size: int, taken: np.ndarray) -> np.ndarray:
    """``size`` distinct identities from ``[2^62, 2^63)``, none in ``taken``."""
    out = np.zeros(0, dtype=np.uint64)
    while out.shape[0] < size:
        more = gen.integers(FAKE_BASE, 1 << 63, size=size, dtype=np.uint64)
        out = np.unique(np.concatenate([out, more]))
        if taken.shape[0]:
            out = out[~np.isin(out, taken, assume_unique=True)]
    return gen.permutation(out)[:size]


def _choose(pem: PEM, codes: np.ndarray, n_fake: int, search: int,
            gen: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """The fake identities, their reports and supports (module docstring).

    Fake user ``u`` is meant for group ``u mod g`` (the groups stay balanced:
    every level must be promoted); with ``search > 1`` it takes, among
    ``search`` drawn candidates of its group, the largest ``supported``.
    """
    if search == 1:
        ids = _draw_identities(gen, n_fake, np.zeros(0, dtype=np.uint64))
        bucket, supported = best_buckets(pem, ids, codes)
        return ids, bucket, supported
    want = np.bincount(np.arange(n_fake) % pem.g, minlength=pem.g) * search
    pools: list[list[np.ndarray]] = [[] for _ in range(pem.g)]
    have = np.zeros(pem.g, dtype=np.int64)
    taken = np.zeros(0, dtype=np.uint64)
    while np.any(have < want):
        size = int(np.max(want - have)) * pem.g * 5 // 4 + 64  # enough for the neediest group
        draw = _draw_identities(gen, size, taken)
        taken = np.union1d(taken, draw)
        groups = pem.groups(draw)
        for j in range(pem.g):
            need = int(want[j] - have[j])
            if need > 0:
                got = draw[groups == j][:need]
                pools[j].append(got)
                have[j] += got.shape[0]
    ids_out, rep_out, sup_out = [], [], []
    for j in range(pem.g):
        if not want[j]:
            continue
        cand = np.concatenate(pools[j])
        bucket, supported = best_buckets(pem, cand, codes)
        pick = np.argsort(-supported, kind="stable")[:want[j] // search]
        ids_out.append(cand[pick])
        rep_out.append(bucket[pick])
        sup_out.append(supported[pick])
    if not ids_out:
        return (np.zeros(0, dtype=np.uint64), np.zeros(0, dtype=np.int64),
                np.zeros(0, dtype=np.int64))
    return np.concatenate(ids_out), np.concatenate(rep_out), np.concatenate(sup_out)


def mga_attack(pem: PEM, targets: Any, n_fake: int, *, honest_identities: Any = None,
               n_honest: Optional[int] = None, search: int = 1,
               target_frequencies: Any = None, rng: Any = None) -> MGAResult:
    """MGA's fake reports promoting ``targets`` in PEM (module docstring).

    Parameters
    ----------
    pem : PEM
    targets : sequence of items
        The ``r`` items to promote, in ``pem``'s encoding (ints or bytes).
    n_fake : int >= 0
        ``m``, the fake users (``beta n``).
    honest_identities : array of uint64, optional
        The honest users' identities (default ``0 .. n_honest - 1``); only
        their public groups are used (group sizes in the objective).
    n_honest : int, optional
        Needed when ``honest_identities`` is None.
    search : int >= 1
        Candidate identities tried per fake user (the hash-seed choice).
    target_frequencies : array of float, optional
        The targets' true frequencies ``f_t`` (default 0) for the objective.
    rng : None, int, SeedSequence or Generator
        Draws the candidate identities from ``[2^62, 2^63)``.

    Returns
    -------
    MGAResult

    Examples
    --------
    >>> pem = PEM(epsilon=4.0, k=4, item_bits=16, codebook_seed=3)
    >>> attack = mga_attack(pem, [11, 22, 33], 100, n_honest=1000, search=8, rng=0)
    >>> attack.reports.shape, bool(attack.supported.min() >= 1)
    ((100,), True)
    >>> bool(attack.objective > 0)
    True
    """
    owner = "mga_attack"
    if not isinstance(pem, PEM):
        raise param_error("pem", owner, "a PEM object", pem, TypeError)
    codes = pem.codec.encode(targets)
    r = int(codes.shape[0])
    if r == 0:
        raise param_error("targets", owner, "a non-empty sequence of items", targets)
    n_fake = check_int(n_fake, "n_fake", owner, low=0)
    search = check_int(search, "search", owner, low=1, high=1 << 16)
    if honest_identities is None:
        if n_honest is None:
            raise param_error("n_honest", owner, "an int when honest_identities is None",
                              n_honest)
        n_honest = check_int(n_honest, "n_honest", owner, low=0)
        honest = np.arange(n_honest, dtype=np.uint64)
    else:
        honest = resolve_identities(honest_identities, len(honest_identities), owner)
    if target_frequencies is None:
        f_t = np.zeros(r)
    else:
        f_t = np.asarray(target_frequencies, dtype=np.float64)
        if f_t.shape != (r,) or not np.all((f_t >= 0) & (f_t <= 1)):
            raise param_error("target_frequencies", owner,
                              f"an array of {r} frequencies in [0, 1]", target_frequencies)
    gen = as_generator(rng, owner, purpose="attack")
    ids, reports, supported = _choose(pem, codes, n_fake, search, gen)
    groups = pem.groups(ids)

    # the objective at the last level (module docstring)
    G, p, J = pem.n_buckets, pem.p, pem.g - 1
    last = groups == J
    m_J = int(last.sum())
    N = int(np.sum(pem.groups(honest) == J)) if honest.shape[0] else 0
    if m_J:
        keys = prefix_keys(codes, pem.item_bits)
        hashed = heavy_buckets(pem.codebook_seed, np.repeat(ids[last], r),
                               np.tile(keys, m_J), np.full(m_J * r, G, dtype=np.int64))
        F = (hashed.reshape(m_J, r) == reports[last][:, None]).sum(axis=0)
    else:
        F = np.zeros(r, dtype=np.int64)
    d = p - 1.0 / G
    total = N + m_J
    if total:
        per_target = (F - m_J / G) / (total * d) - m_J * f_t / total
        q = f_t * d + 1.0 / G
        std = float(np.sum(m_J * np.sqrt(N * q * (1 - q)) / (max(N, 1) * total * d)))
    else:
        per_target, std = np.zeros(r), 0.0
    return MGAResult(reports=reports, identities=ids, groups=groups, supported=supported,
                     targets=codes, objective=float(per_target.sum()), per_target=per_target,
                     prediction_std=std)


def level_frequencies(pem: PEM, reports: Any, identities: Any, items: Any,
                      level: Optional[int] = None) -> np.ndarray:
    """PEM's estimated frequency of ``items`` at ``level`` (default the last).

    ``(S(v) / n_j - 1/G) / (p - 1/G)`` over the group's reports, ``v`` the
    item's ``b_j``-bit prefix: the in-group frequency the server computes
    when ``v`` is a candidate (:mod:`fastldp.heavyhitters.pem`).
    """
    owner = "level_frequencies"
    level = pem.g - 1 if level is None else check_int(level, "level", owner, low=0,
                                                      high=pem.g - 1)
    reps = np.asarray(reports, dtype=np.int64)
    ids = resolve_identities(identities, reps.shape[0], owner)
    codes = pem.codec.encode(items)
    mine = pem.groups(ids) == level
    n_j = int(mine.sum())
    if not n_j:
        return np.full(codes.shape[0], np.nan)
    bits = pem.prefix_bits[level]
    keys = prefix_keys(prefix(codes, bits, pem.item_bits), bits)
    hits = heavy_support(pem.codebook_seed, np.ascontiguousarray(ids[mine]),
                         np.ascontiguousarray(reps[mine]),
                         np.full(n_j, pem.n_buckets, dtype=np.int64), keys, pem.n_threads)
    G = pem.n_buckets
    return (hits / n_j - 1.0 / G) / (pem.p - 1.0 / G)
