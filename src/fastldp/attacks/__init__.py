"""Attacks: who is corrupted, and what they send (always legal outputs)."""

from .corruption import CORRUPTION_POLICIES, choose_corrupted
from .sparse_vector import (
    SparseAttackResult, attack_objective, random_legal_reports, replace_reports,
    sparse_targeted_attack, sparse_untargeted_attack,
)
from .native import (
    AttackResult,
    apply_attack,
    false_support,
    optimized_attack,
    random_attack,
    targeted_attack,
)

__all__ = [
    "choose_corrupted", "CORRUPTION_POLICIES", "AttackResult", "optimized_attack",
    "random_attack", "targeted_attack", "false_support", "apply_attack", "jprs_optimized_attack",
    "SparseAttackResult", "sparse_targeted_attack", "sparse_untargeted_attack",
    "random_legal_reports", "replace_reports", "attack_objective",
]


def jprs_optimized_attack(mech, corrupted, *, true_support, false_support, epsilons, rng=None,
                          identities=None) -> AttackResult:
    """:func:`optimized_attack` for JPRS with the arguments in the runner's order."""
    return optimized_attack(mech, epsilons, corrupted, true_support=true_support,
                            false_support=false_support, identities=identities, rng=rng)
