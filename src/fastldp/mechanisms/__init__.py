"""Mechanisms: thin classes that validate, call a kernel and wrap the result."""

from .jprs import JPRS, BudgetSummary, JPRSEstimate
from ._relations import RelationSets, as_relation_sets
from ._sanitize import SanitizationReport, sanitize_bits

__all__ = [
    "JPRS", "JPRSEstimate", "BudgetSummary", "RelationSets", "as_relation_sets",
    "SanitizationReport", "sanitize_bits",
]
