"""Mechanisms: thin classes that validate, call a kernel and wrap the result.

- :class:`JPRS` - the one-bit Joint Personalized Relation Sketch (paper 000)
- :class:`PaddedRelationSampling` - P-RS with GRR, OLH or Hadamard response
- :mod:`.frequency_oracles` - the oracles with personal budgets
- :mod:`.decoders` - global, grouped medoid, pooled and unprojected decoders
- :class:`RPC` - robust sparse-vector mean estimation (paper 001) with the
  randomizers :class:`Laplace`, :class:`Piecewise`, :class:`Duchi`
- baselines of paper 001: :class:`PCKVUE`, :class:`PCKVGRR`, :class:`PrivKVM`,
  :class:`Succinct`, :class:`Collision`
"""

from ._relations import RelationSets, as_relation_sets
from ._sanitize import SanitizationReport, sanitize_bits
from .base import RelationMechanism
from .decoders import DECODERS, Decoded, decode, public_groups
from .frequency_oracles import GRR, OLH, HadamardResponse
from .jprs import JPRS, BudgetSummary, JPRSEstimate
from .padded_sampling import PaddedRelationSampling
from .randomizers import (
    RANDOMIZERS, Duchi, Laplace, Piecewise, Randomizer, make_randomizer, min_variance_randomizer,
)
from .rpc import RPC, RPCEstimate, clipping_alpha
from .kv_common import SparseMeanEstimate, SparseVectors, as_sparse_vectors, round_to_signs
from .kv_baselines import (
    PCKVGRR, PCKVUE, Collision, PrivKVM, PrivKVMReports, Succinct, pckv_composed_epsilon,
)

__all__ = [
    "JPRS", "JPRSEstimate", "BudgetSummary", "PaddedRelationSampling", "RelationMechanism",
    "GRR", "OLH", "HadamardResponse", "DECODERS", "Decoded", "decode", "public_groups",
    "RelationSets", "as_relation_sets", "SanitizationReport", "sanitize_bits",
    "Randomizer", "Laplace", "Piecewise", "Duchi", "RANDOMIZERS", "make_randomizer",
    "min_variance_randomizer", "RPC", "RPCEstimate", "clipping_alpha", "SparseVectors",
    "SparseMeanEstimate", "as_sparse_vectors", "round_to_signs", "PCKVUE", "PCKVGRR", "PrivKVM",
    "PrivKVMReports", "Succinct", "Collision", "pckv_composed_epsilon",
]
