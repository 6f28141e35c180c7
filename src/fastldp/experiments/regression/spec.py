"""Specs of the regression experiments (paper 002, section C).

The file format is that of :mod:`fastldp.experiments.spec` (``name``,
``methods``, ``seeds``, ``[fixed]``, ``[[grid]]``, ``[quick]``, ``[report]``)
with ``family = "regression"`` and these parameters:

=========== ============== ==================================================
parameter   default        meaning
=========== ============== ==================================================
population  synthetic      ``{ kind = "synthetic" }`` or ``{ kind = "kelmarsh",
                           path = "DIR" }`` (a relative path is read under
                           ``--data``); ``{ kind = "synthetic", nested = true }``
                           draws so that the data of ``n`` users are the
                           first ``n`` users of any larger draw of the same
                           seed (see below); ``sampler = "fastldp"`` draws
                           the normals with fastldp's ziggurat (see below)
n           15000          users
m           50             samples per user
d           256            features (``None`` on Kelmarsh: the files fix it)
k           8              sparsity
sigma       0.25           noise s.d. (synthetic; a public bound for the methods)
eps         4.0            privacy budget
delta       1e-5
n_test      4000           fresh test observations (synthetic)
=========== ============== ==================================================

Nested samples (``nested = true``, the ``n`` sweep): the users of a cell
are the first ``n`` users of one draw per seed
(:func:`~fastldp.regression.make_sparse_regression` with ``nested=True``;
its data stream does not depend on ``n``), so the cells of one seed share
common random numbers and the runner draws, and solves each user's local
problems, once per seed for the largest ``n``. A row is still the row of its
cell run alone (the tests check it); the values differ from the
``nested = false`` draw.

Normals (``sampler``, synthetic only): ``"numpy"`` (the default, dropped
from the table so that earlier configuration ids hold) draws with NumPy's
``Generator.standard_normal``; ``"fastldp"`` with
:func:`fastldp._random.standard_normal`, the same law from the same
generators, about 2.5 times as fast on some machines. The shipped sweeps use
``"fastldp"``: the draw was a third of a repetition's time.

``seeds`` is the number of repetitions (paper: 30 for the eps and n sweeps,
10 for d and m). Methods: :data:`METHODS`. Each method's fit draws from its
own stream of the repetition, except ``U2R-shrink``: it is U2R's fit (U2R's
stream) shrunk (:meth:`fastldp.regression.U2R.with_shrinkage`, bit for bit
a fit of ``U2R(shrinkage=True)`` with that stream), so the two columns
differ by the shrinkage alone and a repetition fits U2R once.
"""

from __future__ import annotations

import json
import math

from ..preflight import suggest
from ..spec import (
    UNSET, Cell, Invalid, Spec, _error, expand_configs, int_at_least, make_normalize, population_table,
    read_spec_file, real_in, repetitions_alias, spec_family, spec_from_dict,
)

__all__ = ["DEFAULTS", "METHODS", "KINDS", "load_spec", "spec_from_dict_regression",
           "expand_grid", "data_key", "share_key", "share_fields", "is_nested",
           "is_regression_spec"]

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


def _population(value):
    """:func:`population_table` of :data:`KINDS`, with a synthetic table's ``nested`` a bool
    (``false`` is the default and is dropped, so the configuration ids of earlier runs hold),
and its ``sampler`` ``"numpy"`` or ``"fastldp"`` (``"numpy"``, the default, dropped too)."""
    table = population_table(KINDS)(value)
    if table["kind"] == "synthetic" and "nested" in table:
        if not isinstance(table["nested"], bool):
            raise Invalid("a table whose 'nested' is true or false")
        if not table["nested"]:
            table = {k: v for k, v in table.items() if k != "nested"}
    if "sampler" in table:
        if table["kind"] != "synthetic" or table["sampler"] not in ("numpy", "fastldp"):
            raise Invalid("a synthetic table whose 'sampler' is \"numpy\" or \"fastldp\"")
        if table["sampler"] == "numpy":
            table = {k: v for k, v in table.items() if k != "sampler"}
    return table


#: Return a value in the canonical form of its parameter or raise.
normalize = make_normalize(DEFAULTS, {
    "population": _population,
    "n": int_at_least(1), "m": int_at_least(1), "d": int_at_least(1), "k": int_at_least(1),
    "n_test": int_at_least(1),
    "sigma": real_in(0, math.inf, low_open=False),
    "eps": real_in(0, math.inf),
    "delta": real_in(0, 1),
})


def data_key(config: dict) -> str:
    """The configuration fields that fix the data (shared by every eps and method)."""
    return json.dumps({f: config[f] for f in _DATA}, sort_keys=True)


def is_nested(config: dict) -> bool:
    """Whether the configuration draws nested samples (``population.nested``)."""
    return bool(config["population"].get("nested", False))


def share_fields(config: dict) -> dict:
    """The fields that fix the data a worker draws once (and its random stream): those of
    :func:`data_key`, without ``n`` for nested samples (every ``n`` of a seed is a prefix of
    its largest)."""
    nested = is_nested(config)
    return {f: config[f] for f in _DATA if not (nested and f == "n")}


def share_key(config: dict) -> str:
    """:func:`share_fields` as a string (one per data set a worker draws)."""
    return json.dumps(share_fields(config), sort_keys=True)


def canonical(config: dict) -> dict:
    """Kelmarsh configurations store ``d = None`` (the files fix it)."""
    if config["population"]["kind"] == "kelmarsh":
        config = {**config, "d": None}
    return config


def expand_grid(spec: Spec) -> list[Cell]:
    """The cells, ordered so that cells on the same data and seed are consecutive.

    (A worker keeps its last dataset, so an eps sweep draws each dataset once;
    with nested samples the cells of one seed come largest ``n`` first, and the
    worker draws the largest once.)
    The data configurations come largest first (``n m d`` entries; ties in grid
    order): the pool then ends on the small repetitions, not with one worker
    still drawing the largest (longest processing time first), and a worker
    draws each smaller data set into the memory of its larger one (no fresh
    pages to fault in). The rows do not depend on the order.
    """
    cells = expand_configs(spec, DEFAULTS, canonical)
    keys = list(dict.fromkeys(share_key(c.config) for c in cells))
    size: dict = {}
    for c in cells:
        k = share_key(c.config)
        size[k] = max(size.get(k, 0), c.config["n"] * c.config["m"] * (c.config["d"] or 1))
    order = {key: i for i, key in enumerate(sorted(keys, key=lambda k: -size[k]))}
    # nested samples: a seed's cells run largest n first (the smaller are its prefixes)
    return sorted(cells, key=lambda c: (order[share_key(c.config)], c.seed, -c.config["n"]))
