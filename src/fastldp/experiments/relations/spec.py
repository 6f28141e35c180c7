"""Specs of the relation experiments (paper 000, section 7): the parameters and their defaults.

The file format is :mod:`fastldp.experiments.spec`'s, with ``family = "relations"``
(the default when the key is absent).

A spec names the methods, the seeds and the configurations to run. The
configurations are the union of one or more ``[[grid]]`` tables, each a
Cartesian product of its axes, over the values of ``[fixed]`` and the
package defaults. Every configuration runs every method on every seed.

Example
-------
::

    family = "relations"
    name = "theorem-audit"
    methods = ["JPRS-Global", "NonPrivate-TopS"]
    seeds = 5                        # seeds 0..4, or an explicit list [0, 3]

    [fixed]                          # one value each, shared by every grid
    shape = [64, 64]
    s = 128
    k = 8
    budget = "H0"
    population = { kind = "rate" }

    [[grid]]                         # n sweep at eps = 0.75
    n = [16000, 32000, 64000]
    eps0 = [0.75]
    alpha = [0.0, 0.10]

    [[grid]]                         # eps sweep at n = 128,000
    n = [128000]
    eps0 = [0.25, 0.5, 0.75, 1.0]
    alpha = [0.0, 0.10]

    [quick]                          # --quick: these keys replace the full spec's
    seeds = 2
    grid = [{ n = [16000], eps0 = [0.75], alpha = [0.0, 0.10] }]

    [report]                         # read by `fastldp reproduce`, optional
    headline = { n = 128000, eps0 = 0.75 }

A configuration holds exactly the keys of :data:`DEFAULTS` (``n`` and
``shape`` are ``None`` on real data, whose files fix them; ``d2`` and
``max_holders`` go in the population table). A value in a grid
table that is a list is an axis (for ``shape``, a list of pairs; for
``population``, a list of tables); a scalar there is a one-value axis.
"""

from __future__ import annotations

import math

from ..spec import (
    Cell, Invalid, Spec, _error, _is_int, expand_configs, int_at_least, make_normalize,
    population_table, read_spec_file, real_in,
)
from ..spec import spec_from_dict as _generic_spec_from_dict

__all__ = ["DEFAULTS", "REAL_KINDS", "FAMILY", "load_spec", "spec_from_dict", "expand_grid",
           "normalize", "canonical"]

FAMILY = "relations"

#: Every configuration parameter and its default (paper 000, section 7.1).
DEFAULTS = {
    "population": {"kind": "rate"},
    "n": 16_000,
    "shape": (64, 64),
    "s": 128,
    "k": 8,
    "budget": "H0",
    "eps0": 1.0,
    "alpha": 0.0,
    "corruption": "largest",
    "attack": "optimized",
    "groups": 8,
}

#: Population kinds read from a file: the data fix ``n`` and ``shape``, so a
#: configuration on them stores both as ``None``.
REAL_KINDS = frozenset({"movielens", "foursquare", "gowalla"})

_REPORT_KEYS = {"reference", "slope_min_n", "headline", "ablation"}


def load_spec(path, *, quick: bool = False) -> Spec:
    """Read a relation spec (TOML); with ``quick`` apply its ``[quick]`` table."""
    data = read_spec_file(path)
    return spec_from_dict(data, quick=quick, source=str(path))


def spec_from_dict(data: dict, *, quick: bool = False, source: str = "<dict>") -> Spec:
    """Build a relation :class:`~fastldp.experiments.spec.Spec` from parsed TOML tables."""
    family = data.get("family", FAMILY)
    if family != FAMILY:
        raise _error(source, f"is a {family!r} spec, not a {FAMILY!r} one")
    return _generic_spec_from_dict(data, normalize=normalize, report_keys=_REPORT_KEYS,
                                   quick=quick, source=source)


def _shape(value):
    if not (isinstance(value, (list, tuple)) and len(value) == 2
            and all(_is_int(v) and v >= 1 for v in value)):
        raise Invalid("a pair [d1, d2] of ints >= 1")
    return (int(value[0]), int(value[1]))


def _corruption(value):
    if isinstance(value, list) and all(_is_int(v) and v >= 0 for v in value):
        return tuple(int(v) for v in value)
    if not isinstance(value, str):
        raise Invalid('"largest", "random" or a list of identity indices')
    return value


def _string(value):
    if not isinstance(value, str):
        raise Invalid("a string")
    return value


#: Return a value in the canonical form of its parameter or raise.
normalize = make_normalize(DEFAULTS, {
    "population": population_table(),
    "shape": _shape,
    "n": int_at_least(1), "s": int_at_least(1), "k": int_at_least(1),
    "groups": int_at_least(1),
    "eps0": real_in(0, math.inf),
    "alpha": real_in(0, 1, low_open=False),
    "corruption": _corruption,
    "budget": _string,
    "attack": _string,
})


def canonical(config: dict) -> dict:
    """Real populations fix ``n`` and ``shape`` (stored as ``None``)."""
    if config["population"]["kind"] in REAL_KINDS:
        config = {**config, "n": None, "shape": None}
    return config


def expand_grid(spec: Spec) -> list[Cell]:
    """Return the spec's cells: every configuration of the union of its grids, times its seeds.

    Configurations repeated across grids appear once, in first-seen order;
    cells are ordered configuration-major, then by seed.
    """
    return expand_configs(spec, DEFAULTS, canonical)
