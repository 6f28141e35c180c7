"""Populations: the Eq. (12) rate diagnostic, the frozen Table 2 scenarios, budget profiles and real datasets.

:func:`build_population` is the one entry point the experiment harness uses:

============================================  =========================================
kind                                          generator
============================================  =========================================
``"rate"``                                    :func:`rate_diagnostic_population`
``"flat"``, ``"zipf"``, ``"community"``,      :func:`scenario_population` (Table 2)
``"hub-tail"``, ``"user-mixture"``,
``"variable-size"``
``"movielens"``, ``"foursquare"``,            :func:`load_movielens`, :func:`load_foursquare`,
``"gowalla"``                                 :func:`load_gowalla` (need ``path=...``)
============================================  =========================================
"""

from .sparse_vectors import (
    SparseVectorDataset, cap_items, frequency_vectors, load_amazon_ratings, load_clothing_fit,
    load_commerce, load_movielens_ratings, signed_vectors, truncated_normal_vectors, value_means,
)
from .budgets import BUDGET_PROFILES, budget_profile, budget_summary, profile_moments
from .real import REAL_DATASETS, load_foursquare, load_gowalla, load_movielens, relation_population
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
from .synthetic import (
    Population,
    best_sparse_approximation,
    population_content_hash,
    population_from_csr,
    rate_diagnostic_population,
)

__all__ = [
    "SparseVectorDataset", "frequency_vectors", "signed_vectors", "truncated_normal_vectors",
    "value_means", "cap_items", "load_commerce", "load_clothing_fit", "load_amazon_ratings",
    "load_movielens_ratings",
    "Population",
    "rate_diagnostic_population",
    "best_sparse_approximation",
    "population_content_hash",
    "population_from_csr",
    "SCENARIOS",
    "FROZEN_SEEDS",
    "FROZEN_HASHES",
    "PAPER_TABLE2",
    "scenario_population",
    "frozen_populations",
    "population_statistics",
    "table2_statistics",
    "format_table2",
    "export_frozen",
    "load_frozen",
    "BUDGET_PROFILES",
    "budget_profile",
    "budget_summary",
    "profile_moments",
    "REAL_DATASETS",
    "load_movielens",
    "load_foursquare",
    "load_gowalla",
    "relation_population",
    "POPULATION_KINDS",
    "build_population",
]

#: Every kind :func:`build_population` accepts.
POPULATION_KINDS = ("rate",) + SCENARIOS + REAL_DATASETS

_RATE_DEFAULTS = {"shape": (64, 64), "s": 128, "k": 8, "n": 16_000}
_LOADERS = {"movielens": load_movielens, "foursquare": load_foursquare, "gowalla": load_gowalla}


def build_population(kind: str, *, seed: int = 0, **params) -> Population:
    """Build the population ``kind``; the harness's single entry point.

    Parameters
    ----------
    kind : str
        One of :data:`POPULATION_KINDS`.
    seed : int
        ``"rate"``: the generator seed (``rng=seed``). Scenarios: the frozen
        seed (0-4 are the recorded populations). Real data: ignored, because a
        real population is a fixed function of its file and its public
        preprocessing parameters (pass ``minhash_seed`` / ``holder_seed`` to
        change those).
    **params
        Passed on. ``"rate"``: ``shape``, ``s``, ``k``, ``n`` (defaults
        ``(64, 64)``, 128, 8, 16,000, section 7.1). Scenarios: ``n``,
        ``shape``, ``s``, ``k`` (same defaults). Real data: ``path``
        (required), ``d2``, ``s``, ``k``, ``max_holders``, ... of the loader.

    Returns
    -------
    Population
    """
    from .._validation import check_choice, param_error

    owner = "build_population"
    check_choice(kind, "kind", owner, POPULATION_KINDS)
    if kind == "rate":
        args = {**_RATE_DEFAULTS, **params}
        return rate_diagnostic_population(rng=seed, **args)
    if kind in SCENARIOS:
        return scenario_population(kind, seed=seed, **params)
    if "path" not in params:
        raise param_error("path", owner, f"the path of the {kind} data file (path=...)", None, TypeError)
    path = params.pop("path")
    return _LOADERS[kind](path, **params)
