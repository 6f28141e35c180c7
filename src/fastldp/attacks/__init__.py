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
    "random_attack", "targeted_attack", "false_support", "apply_attack",
    "SparseAttackResult", "sparse_targeted_attack", "sparse_untargeted_attack",
    "random_legal_reports", "replace_reports", "attack_objective",
]

