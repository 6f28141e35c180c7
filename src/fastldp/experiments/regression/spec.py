"""Specs of the regression experiments (paper 002, section C).

The file format is that of :mod:`fastldp.experiments.spec` (``name``,
``methods``, ``seeds``, ``[fixed]``, ``[[grid]]``, ``[quick]``, ``[report]``)
with ``family = "regression"`` and these parameters:

=========== ============== ==================================================
parameter   default        meaning
=========== ============== ==================================================
population  synthetic      ``{ kind = "synthetic" }`` or ``{ kind = "kelmarsh",
                           path = "DIR" }`` (a relative path is read under
                           ``--data``)
n           15000          users
m           50             samples per user
d           256            features (``None`` on Kelmarsh: the files fix it)
k           8              sparsity
sigma       0.25           noise s.d. (synthetic; a public bound for the methods)
eps         4.0            privacy budget
delta       1e-5
n_test      4000           fresh test observations (synthetic)
=========== ============== ==================================================

``seeds`` is the number of repetitions (paper: 30 for the eps and n sweeps,
10 for d and m). Methods: :data:`METHODS`.
"""

from __future__ import annotations

import json
import math

from ..preflight import suggest
from ..spec import (
    UNSET, Cell, Spec, _error, expand_configs, int_at_least, make_normalize, population_table,
    read_spec_file, real_in, repetitions_alias, spec_family, spec_from_dict,
)

__all__ = ["DEFAULTS", "METHODS", "KINDS", "load_spec", "spec_from_dict_regression",
           "expand_grid", "data_key", "is_regression_spec"]

DEFAULTS = {
    "population": {"kind": "synthetic"},
    "n": 15_000,
    "m": 50,
    "d": 256,
    "k": 8,
    "sigma": 0.25,
    "eps": 4.0,
    "delta": 1e-5,
    "n_test": 4000,
}

#: Method name -> (privacy unit, trust model).
METHODS = {
    "U2R": ("user", "shuffle"),
    "U2R-shrink": ("user", "shuffle"),
    "Sample-SDP": ("sample", "shuffle"),
    "LDP-IHT": ("sample", "local"),
    "2-SLR": ("user", "local"),
    "Lasso": ("none", "none"),
}
KINDS = ("synthetic", "kelmarsh")
_REPORT_KEYS = {"axis", "paper"}
_DATA = ("population", "n", "m", "d", "k", "sigma", "n_test")


def is_regression_spec(path) -> bool:
    """Whether the TOML at ``path`` says ``family = "regression"``.

    A missing or malformed file is an error, not another kind of spec.
    """
    return spec_family(path) == "regression"


def load_spec(path, *, quick: bool = False, repetitions: int | None = None,
              trials=UNSET) -> Spec:
    """Read a regression spec; ``quick`` applies ``[quick]``, ``repetitions`` replaces ``seeds``.

    ``trials`` is the deprecated name of ``repetitions``.
    """
    repetitions = repetitions_alias(repetitions, trials, "load_spec")
    data = read_spec_file(path)
    return spec_from_dict_regression(data, quick=quick, source=str(path),
                                     repetitions=repetitions)


def spec_from_dict_regression(data: dict, *, quick=False, repetitions=None, source="<dict>",
                              trials=UNSET) -> Spec:
    """Build a :class:`~fastldp.experiments.spec.Spec` with section C's parameters.

    ``trials`` is the deprecated name of ``repetitions``.
    """
    repetitions = repetitions_alias(repetitions, trials, "spec_from_dict_regression")
    data = dict(data)
    data.setdefault("family", "regression")
    if data["family"] != "regression":
        raise _error(source, f"'family' must be \"regression\", got {data['family']!r}")
    spec = spec_from_dict(data, normalize=normalize, report_keys=_REPORT_KEYS, quick=quick,
                          repetitions=repetitions, source=source)
    unknown = [m for m in spec.methods if m not in METHODS]
    if unknown:
        hints = "".join(suggest(m, METHODS) for m in unknown)
        raise _error(source, f"unknown methods {unknown}{hints}; the methods are {list(METHODS)}")
    return spec


#: Return a value in the canonical form of its parameter or raise.
normalize = make_normalize(DEFAULTS, {
    "population": population_table(KINDS),
    "n": int_at_least(1), "m": int_at_least(1), "d": int_at_least(1), "k": int_at_least(1),
    "n_test": int_at_least(1),
    "sigma": real_in(0, math.inf, low_open=False),
    "eps": real_in(0, math.inf),
    "delta": real_in(0, 1),
})


def data_key(config: dict) -> str:
    """The configuration fields that fix the data (shared by every eps and method)."""
    return json.dumps({f: config[f] for f in _DATA}, sort_keys=True)


def canonical(config: dict) -> dict:
    """Kelmarsh configurations store ``d = None`` (the files fix it)."""
    if config["population"]["kind"] == "kelmarsh":
        config = {**config, "d": None}
    return config


def expand_grid(spec: Spec) -> list[Cell]:
    """The cells, ordered so that cells on the same data and seed are consecutive.

    (A worker keeps its last dataset, so an eps sweep draws each dataset once.)
    The data configurations come largest first (``n m d`` entries; ties in grid
    order): the pool then ends on the small repetitions, not with one worker
    still drawing the largest (longest processing time first), and a worker
    draws each smaller data set into the memory of its larger one (no fresh
    pages to fault in). The rows do not depend on the order.
    """
    cells = expand_configs(spec, DEFAULTS, canonical)
    keys = list(dict.fromkeys(data_key(c.config) for c in cells))
    size = {data_key(c.config): c.config["n"] * c.config["m"] * (c.config["d"] or 1)
            for c in cells}
    order = {key: i for i, key in enumerate(sorted(keys, key=lambda k: -size[k]))}
    return sorted(cells, key=lambda c: (order[data_key(c.config)], c.seed))
