"""Mechanisms: thin classes that validate, call a kernel and wrap the result.

- :class:`JPRS` - the one-bit Joint Personalized Relation Sketch (paper 000)
- :class:`PaddedRelationSampling` - P-RS with GRR, OLH or Hadamard response
- :mod:`.frequency_oracles` - the oracles with personal budgets
- :mod:`.decoders` - global, grouped medoid, pooled and unprojected decoders
"""

from ._relations import RelationSets, as_relation_sets
from ._sanitize import SanitizationReport, sanitize_bits
from .base import RelationMechanism
from .decoders import DECODERS, Decoded, decode, public_groups
from .frequency_oracles import GRR, OLH, HadamardResponse
from .jprs import JPRS, BudgetSummary, JPRSEstimate
from .padded_sampling import PaddedRelationSampling

__all__ = [
    "JPRS", "JPRSEstimate", "BudgetSummary", "PaddedRelationSampling", "RelationMechanism",
    "GRR", "OLH", "HadamardResponse", "DECODERS", "Decoded", "decode", "public_groups",
    "RelationSets", "as_relation_sets", "SanitizationReport", "sanitize_bits",
]
