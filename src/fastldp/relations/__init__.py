"""Sparse relation matrices under personalized LDP and Byzantine contamination (paper 000).

Every concept of the paper, by name:

==========================  ===================================================
module                      what it holds
==========================  ===================================================
:mod:`.jprs`                :class:`JPRS`, the one-bit Joint Personalized
                            Relation Sketch (Alg. 1 client, Alg. 2 decoder)
:mod:`.padded_sampling`     :class:`PaddedRelationSampling` (P-RS) over the
                            GRR / OLH / Hadamard oracles of :mod:`fastldp.oracles`
:mod:`.decoders`            global, grouped-medoid, pooled and unprojected decoders
:mod:`.relation_sets`       relation sets in CSR form and the ``k`` cap
:mod:`.calibration`         ``gamma(eps)``, ``c_k(m)``, ``kappa_k``, ``a_m``
:mod:`.attacks`             optimized, random and targeted native-alphabet attacks
:mod:`.populations`         the Eq. (12) rate diagnostic and population hashing
:mod:`.scenarios`           the frozen Table 2 scenarios
:mod:`.loaders`             MovieLens, Foursquare and Gowalla relation loaders
:mod:`.build`               :func:`build_population` by name (the harness's entry)
:mod:`.analysis`            I_eff, L_eff, rho_ind, the bounds, the regime audit
==========================  ===================================================

Report sanitization (:func:`fastldp._sanitize.sanitize_bits`), the budget
profiles (:mod:`fastldp.budgets`) and the corruption policies
(:mod:`fastldp.corruption`) are shared with the other families.
"""

from .._sanitize import SanitizationReport, sanitize_bits
from . import analysis
from .attacks import (
    AttackResult,
    apply_attack,
    false_support,
    optimized_attack,
    random_attack,
    targeted_attack,
)
from .base import RelationMechanism
from .build import POPULATION_KINDS, build_population
from .decoders import DECODERS, Decoded, decode, public_groups
from .jprs import JPRS, BudgetSummary, JPRSEstimate
from .loaders import REAL_DATASETS, load_foursquare, load_gowalla, load_movielens, relation_population
from .padded_sampling import PaddedRelationSampling
from .populations import (
    Population,
    best_sparse_approximation,
    population_content_hash,
    population_from_csr,
    rate_diagnostic_population,
)
from .relation_sets import RelationSets, as_relation_sets
from .scenarios import (
    FROZEN_HASHES,
    FROZEN_SEEDS,
    PAPER_TABLE2,
    SCENARIOS,
    export_frozen,
    format_table2,
    frozen_populations,
    load_frozen,
    population_statistics,
    scenario_population,
    table2_statistics,
)
from . import _channels  # noqa: F401  (registers the audit's channels of the classes above)

__all__ = [
    "JPRS", "JPRSEstimate", "BudgetSummary", "PaddedRelationSampling", "RelationMechanism",
    "DECODERS", "Decoded", "decode", "public_groups", "RelationSets", "as_relation_sets",
    "SanitizationReport", "sanitize_bits",
    "AttackResult", "optimized_attack", "random_attack", "targeted_attack", "false_support",
    "apply_attack",
    "Population", "rate_diagnostic_population", "best_sparse_approximation",
    "population_content_hash", "population_from_csr",
    "SCENARIOS", "FROZEN_SEEDS", "FROZEN_HASHES", "PAPER_TABLE2", "scenario_population",
    "frozen_populations", "population_statistics", "table2_statistics", "format_table2",
    "export_frozen", "load_frozen",
    "REAL_DATASETS", "load_movielens", "load_foursquare", "load_gowalla", "relation_population",
    "POPULATION_KINDS", "build_population", "analysis",
]
