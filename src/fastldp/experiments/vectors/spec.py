"""Specs of the sparse-vector experiments (paper 001, section 8).

The file format is that of :mod:`fastldp.experiments.spec` (``family =
"vectors"``, ``name``, ``methods``, ``seeds``, ``[fixed]``, ``[[grid]]``, ``[quick]``, ``[report]``),
with the parameters of section 8 instead of paper 000's. ``seeds`` (or
``repetitions``) is the number of repetitions (paper: 500 trials). Example::

    family = "vectors"
    name = "rpc-frequency"
    methods = ["RPC", "PCKV-UE", "Collision"]
    seeds = 500

    [fixed]
    population = { kind = "frequency" }
    n = 10000
    d = 100

    [[grid]]
    m = [5, 10, 20, 50]
    eps = [0.5, 1.0, 1.5, 2.0, 2.5]

    [quick]
    seeds = 10

=========== ============ ===================================================
parameter   default      meaning
=========== ============ ===================================================
population  frequency    a table with ``kind`` (:data:`POPULATION_KINDS`) and
                         its options (``sigma``, ``beta``, ``path``, ...)
n           10000        users (``None`` on real data: the file fixes it)
d           100          dimension (``None`` on real data)
m           5            items per user (``None`` on real data: the most
                         items any user holds after the loader's cap)
eps         1.0          privacy budget
q_frac      0.0          corrupted users as a fraction of ``n``: ``q = round(q_frac n)``
model       "additive"   contamination model, ``"additive"`` or ``"strong"``
attack      "untargeted" ``"untargeted"`` or ``"targeted"``
target      10           size of the targeted set ``T`` (targeted attack only)
clip        true         final clipping of the estimate (section 8.1)
=========== ============ ===================================================

Canonical forms keep one configuration per distinct experiment: with
``q_frac = 0`` the model and attack are ``"none"`` (one clean cell shared by
every attack grid), an untargeted attack has ``target = None``, and real
populations have ``n = d = m = None``.
"""

from __future__ import annotations

import math

from ..spec import (
    UNSET, Cell, Spec, _error, boolean, expand_configs, int_at_least, make_normalize, one_of,
    population_table, read_spec_file, real_in, repetitions_alias,
)
from ..spec import spec_from_dict as _generic_spec_from_dict

__all__ = ["DEFAULTS", "FAMILY", "POPULATION_KINDS", "REAL_KINDS", "MODELS", "ATTACKS",
           "load_spec", "spec_from_dict", "expand_grid", "normalize", "canonical"]

FAMILY = "vectors"

DEFAULTS = {
    "population": {"kind": "frequency"},
    "n": 10_000,
    "d": 100,
    "m": 5,
    "eps": 1.0,
    "q_frac": 0.0,
    "model": "additive",
    "attack": "untargeted",
    "target": 10,
    "clip": True,
}

#: Synthetic populations of section 8.1 and the real datasets.
SYNTHETIC_KINDS = ("frequency", "signed", "truncated-normal")
REAL_KINDS = ("commerce", "clothing", "amazon", "movielens")
POPULATION_KINDS = SYNTHETIC_KINDS + REAL_KINDS
MODELS = ("additive", "strong")
ATTACKS = ("untargeted", "targeted")

_REPORT_KEYS = {"figure_methods", "reference"}


def load_spec(path, *, quick: bool = False, repetitions: int | None = None,
              trials=UNSET) -> Spec:
    """Read a sparse-vector spec; with ``quick`` apply its ``[quick]`` table.

    ``repetitions`` replaces ``seeds`` by ``range(repetitions)`` (``trials``
    is its deprecated name).
    """
    repetitions = repetitions_alias(repetitions, trials, "load_spec")
    data = read_spec_file(path)
    return spec_from_dict(data, quick=quick, repetitions=repetitions, source=str(path))


def spec_from_dict(data: dict, *, quick: bool = False, repetitions: int | None = None,
                   source: str = "<dict>", trials=UNSET) -> Spec:
    """Build a :class:`~fastldp.experiments.spec.Spec` with section 8 parameters.

    The spec must say ``family = "vectors"``; ``trials`` is the deprecated
    name of ``repetitions``.
    """
    repetitions = repetitions_alias(repetitions, trials, "spec_from_dict")
    family = data.get("family")
    if family != FAMILY:
        raise _error(source, f"'family' must be {FAMILY!r} for a sparse-vector spec, "
                     f"got {family!r}")
    return _generic_spec_from_dict(data, normalize=normalize, report_keys=_REPORT_KEYS,
                                   quick=quick, repetitions=repetitions, source=source)


#: Return a value in the canonical form of its parameter or raise.
normalize = make_normalize(DEFAULTS, {
    "population": population_table(POPULATION_KINDS),
    "n": int_at_least(1), "d": int_at_least(1), "m": int_at_least(1), "target": int_at_least(1),
    "eps": real_in(0, math.inf),
    "q_frac": real_in(0, 1, low_open=False),
    "model": one_of(MODELS),
    "attack": one_of(ATTACKS),
    "clip": boolean,
})


def canonical(config: dict) -> dict:
    """The canonical form of a configuration (see the module docstring)."""
    config = dict(config)
    if config["population"]["kind"] in REAL_KINDS:
        config["n"] = config["d"] = config["m"] = None
    elif config["m"] > config["d"]:
        raise ValueError(f"Spec: m = {config['m']} exceeds d = {config['d']}.")
    if not config["q_frac"] > 0:
        config["model"] = config["attack"] = "none"
    if config["attack"] != "targeted":
        config["target"] = None
    return config


def expand_grid(spec: Spec) -> list[Cell]:
    """The spec's cells: each distinct configuration of its grids, times its repetitions.

    Configurations repeated across grids (such as the clean ``q_frac = 0``
    cell of several attack grids) appear once, in first-seen order.
    """
    return expand_configs(spec, DEFAULTS, canonical)
