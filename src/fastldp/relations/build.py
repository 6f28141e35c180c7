"""Populations by name: the one entry point the experiment harness uses.

============================================  =========================================
kind                                          generator
============================================  =========================================
``"rate"``                                    :func:`~fastldp.relations.populations.rate_diagnostic_population`
``"flat"``, ``"zipf"``, ``"community"``,      :func:`~fastldp.relations.scenarios.scenario_population` (Table 2)
``"hub-tail"``, ``"user-mixture"``,
``"variable-size"``
``"movielens"``, ``"foursquare"``,            :func:`~fastldp.relations.loaders.load_movielens`,
``"gowalla"``                                 ``load_foursquare``, ``load_gowalla`` (need ``path=...``)
============================================  =========================================
"""

from __future__ import annotations

import numbers

import numpy as np

from .._validation import check_choice, param_error
from .loaders import REAL_DATASETS, load_foursquare, load_gowalla, load_movielens
from .populations import Population, rate_diagnostic_population
from .scenarios import SCENARIOS, scenario_population

__all__ = ["POPULATION_KINDS", "build_population"]

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
        ``"rate"``: the generator seed (``numpy.random.default_rng(seed)``, the
        recorded experiments' populations: not the keyed stream of ``rng=seed``,
        issue 37). Scenarios: the frozen
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
    owner = "build_population"
    check_choice(kind, "kind", owner, POPULATION_KINDS)
    if kind == "rate":
        args = {**_RATE_DEFAULTS, **params}
        if isinstance(seed, bool) or not isinstance(seed, numbers.Integral) or seed < 0:
            raise param_error("seed", owner, "a non-negative int", seed,
                              ValueError if isinstance(seed, numbers.Integral) else TypeError)
        return rate_diagnostic_population(rng=np.random.default_rng(int(seed)), **args)
    if kind in SCENARIOS:
        return scenario_population(kind, seed=seed, **params)
    if "path" not in params:
        raise param_error("path", owner, f"the path of the {kind} data file (path=...)", None, TypeError)
    path = params.pop("path")
    return _LOADERS[kind](path, **params)
