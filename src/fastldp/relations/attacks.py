"""Valid-output attacks in each mechanism's own alphabet (paper 000, section 7.1).

The corrupted identities know the codebook (and may see the honest reports)
and send legal outputs only. Every mechanism here has a linear server, so
the estimated mass that the corrupted reports add to any weighted item set
``sum_x w_x V(x)`` splits into one term per report, and each corrupted
identity can maximize its own term exactly:

* JPRS: the bit ``sign(sum_x w_x R_i(x))``, a fair coin on ties;
* P-RS-GRR: a symbol of maximal weight (a pair of the false support);
* P-RS-OLH: an exhaustive scan of all ``g_i`` legal buckets (bucket-search
  kernel), a fair pick among maximizers;
* P-RS-HR: the Hadamard output with the largest ``sum_v w_v H[v+1, y]``,
  from one fast Walsh-Hadamard transform of the weights.

:func:`optimized_attack` uses ``w = +1`` on a false support ``F`` (``s``
pairs off the true support) and ``-1`` on the true support ``S``: the
estimated mass on ``F`` minus the mass on ``S``, the same objective for every
mechanism. :func:`targeted_attack` pushes one pair; :func:`random_attack`
sends uniformly random legal outputs. All report the attacker's objective:
the corrupted reports' total contribution to ``sum_x w_x V(x)`` of the
global linear estimate.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .._random import as_generator, resolve_identities
from .._validation import check_int, check_positive_array, param_error

__all__ = [
    "AttackResult",
    "optimized_attack",
    "random_attack",
    "targeted_attack",
    "false_support",
    "apply_attack",
]


@dataclass(frozen=True)
class AttackResult:
    """Outputs of the corrupted identities and the attacker's objective.

    Attributes
    ----------
    corrupted : int64 array
        Indices of the corrupted identities.
    outputs : array
        One legal output per corrupted identity, in the mechanism's alphabet.
    objective : float
        ``sum_x w_x V_B(x)``: what the corrupted reports add to the weighted
        mass of the global linear estimate.
    per_identity : float64 array
        Each corrupted report's share of ``objective``.

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> from fastldp.relations import random_attack
    >>> mech = fastldp.JPRS(shape=(4, 4), k=1, s=2, codebook_seed=3)
    >>> eps = np.ones(100)
    >>> att = random_attack(mech, eps, np.arange(10), rng=0)
    >>> att.corrupted.shape, att.outputs.shape
    ((10,), (10,))
    """

    corrupted: np.ndarray
    outputs: np.ndarray
    objective: float
    per_identity: np.ndarray


def _prepare(mechanism, epsilons, corrupted, identities, owner):
    eps = check_positive_array(epsilons, "epsilons", owner)
    n = eps.shape[0]
    idx = np.asarray(corrupted)
    if idx.dtype.kind not in "iu" or idx.ndim != 1 or (idx.size and (idx.min() < 0 or idx.max() >= n)):
        raise param_error("corrupted", owner, f"a 1-d array of indices in [0, {n})", corrupted)
    ids = resolve_identities(identities, n, owner)
    return eps, idx.astype(np.int64), ids


def false_support(true_support, p: int, s: int, rng=None) -> np.ndarray:
    """``s`` encoded pairs drawn uniformly from outside ``true_support``."""
    gen = as_generator(rng, "false_support", purpose="attack")
    outside = np.setdiff1d(np.arange(p), np.asarray(true_support, dtype=np.int64))
    s = check_int(s, "s", "false_support", low=1, high=outside.shape[0])
    return np.sort(gen.choice(outside, size=s, replace=False)).astype(np.int64)


def _result(corrupted, outputs, per_identity):
    return AttackResult(corrupted, outputs, float(np.sum(per_identity)), per_identity)


def optimized_attack(mechanism, epsilons, corrupted, *, true_support, false_support,
                     identities=None, rng=None) -> AttackResult:
    """Best legal outputs for ``mass(F) - mass(S)`` (false minus true support).

    Parameters
    ----------
    mechanism : RelationMechanism
        :class:`fastldp.JPRS` or :class:`fastldp.relations.PaddedRelationSampling`.
    epsilons : array_like, shape (n,)
        Every committed budget (the decoder's normalization uses all of them).
    corrupted : array_like of int
        Indices of the corrupted identities (see :func:`choose_corrupted`).
    true_support, false_support : array_like of int
        Encoded pairs ``row * d2 + col``.
    identities : array_like of int, optional
    rng : None, int, SeedSequence or Generator
        Tie-breaking coins.
    """
    owner = "optimized_attack"
    eps, idx, ids = _prepare(mechanism, epsilons, corrupted, identities, owner)
    fs = np.asarray(false_support, dtype=np.int64)
    ts = np.asarray(true_support, dtype=np.int64)
    items = np.concatenate([fs, ts])
    weights = np.concatenate([np.ones(fs.shape[0]), -np.ones(ts.shape[0])])
    outputs, per = mechanism.best_response(eps, idx, ids, items, weights,
                                           as_generator(rng, owner, purpose="attack"))
    return _result(idx, outputs, per)


def targeted_attack(mechanism, epsilons, corrupted, *, target, identities=None, rng=None) -> AttackResult:
    """Best legal outputs for the estimated mass of one pair ``target``."""
    owner = "targeted_attack"
    eps, idx, ids = _prepare(mechanism, epsilons, corrupted, identities, owner)
    target = check_int(target, "target", owner, low=0, high=mechanism.p - 1)
    items = np.array([target], dtype=np.int64)
    outputs, per = mechanism.best_response(eps, idx, ids, items, np.ones(1),
                                           as_generator(rng, owner, purpose="attack"))
    return _result(idx, outputs, per)


def random_attack(mechanism, epsilons, corrupted, *, true_support=None, false_support=None,
                  identities=None, rng=None) -> AttackResult:
    """Uniformly random legal outputs; the objective is scored on F and S if given."""
    owner = "random_attack"
    eps, idx, ids = _prepare(mechanism, epsilons, corrupted, identities, owner)
    outputs = mechanism.random_response(eps, idx, ids, as_generator(rng, owner, purpose="attack"))
    if true_support is None or false_support is None:
        return AttackResult(idx, outputs, float("nan"), np.full(idx.shape[0], np.nan))
    fs = np.asarray(false_support, dtype=np.int64)
    ts = np.asarray(true_support, dtype=np.int64)
    items = np.concatenate([fs, ts])
    weights = np.concatenate([np.ones(fs.shape[0]), -np.ones(ts.shape[0])])
    per = mechanism.response_objective(eps, idx, ids, outputs, items, weights)
    return _result(idx, outputs, per)


def apply_attack(reports, attack: AttackResult) -> np.ndarray:
    """Return a copy of ``reports`` with the corrupted identities' outputs replaced."""
    out = np.array(reports, copy=True)
    out[attack.corrupted] = attack.outputs
    return out
