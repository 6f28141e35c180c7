"""The attacks of section 8.3, built from section 7's optimal legal outputs.

Targeted (section 7.1): raise the estimate on a target set ``T``,
``max sum_{j in T} (mu_hat - mu_hat_c)(j)``, with the optimal legal output of
each corrupted user (Eqs. (41), (44), (48), (52)); under the strong model the
adversary corrupts the ``q`` users of largest gain (Eqs. (53)-(56)).

Untargeted: section 7 "maximize[s] the gain over all possible targets
``T ⊆ [d]``". The gain grows with ``T`` for RPC, PCKV and Succinct (per
user it is a sum of non-negative terms or the absolute value of a sum of
random signs, whose expectation grows with ``|T|``) and, in expectation, for
Collision (the best bucket's count of target items grows with ``T``), so the
maximizing target is ``T = [d]``: every coordinate is raised.
:func:`untargeted_attack` is that attack.

Why not :func:`fastldp.vectors.sparse_untargeted_attack`: it maximizes the
l1 displacement ``||mu_hat - mu_hat_c||_1`` over sign patterns of the
estimate *before* section 8.1's final clipping. On frequency data it then
often pushes every coordinate down, and the clipping at 0 removes most of
that (the attacked MAE of PCKV-UE fell below its clean MAE in a trial run).
Any direction chosen from the clean estimate is correlated with that
estimate's noise and can also move the estimate *toward* the truth; raising
a fixed set ``T`` cannot.
"""

from __future__ import annotations

import numpy as np

from ...vectors.attacks import sparse_targeted_attack

__all__ = ["untargeted_attack", "targeted_attack"]


def _users(model, q, corrupted):
    return ({"q": q, "model": "strong"} if model == "strong"
            else {"corrupted": corrupted, "model": "additive"})


def targeted_attack(mech, reports, target, *, model: str, q: int, corrupted=None, rng=None):
    """Raise the estimate on ``target`` (section 7.1).

    Parameters
    ----------
    mech
        A built mechanism.
    reports
        The honest reports.
    target : int array
        ``T``.
    model : {"additive", "strong"}
    q : int
        Corrupted users (strong model: those of largest gain).
    corrupted : int array, optional
        The fixed corrupted users of the additive model.
    rng
        Tie-breaks.

    Returns
    -------
    (SparseAttackResult, float)
        The attack and ``sum_{j in T} (mu_hat - mu_hat_c)(j)`` before final clipping.
    """
    res = sparse_targeted_attack(mech, reports, target=target, direction=1, rng=rng,
                                 **_users(model, q, corrupted))
    return res, res.objective


def untargeted_attack(mech, reports, *, model: str, q: int, corrupted=None, rng=None):
    """The targeted attack with ``T = [d]`` (module docstring)."""
    return targeted_attack(mech, reports, np.arange(mech.d), model=model, q=q,
                           corrupted=corrupted, rng=rng)
