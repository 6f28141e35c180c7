"""Specs of the frequency-oracle consistency experiments (Wang et al., NDSS 2020).

The file format is that of :mod:`fastldp.experiments.spec` (``name``,
``methods``, ``seeds``, ``[fixed]``, ``[[grid]]``, ``[quick]``, ``[report]``)
with ``family = "oracles"``. The *methods* are the post-processing methods
(:data:`fastldp.experiments.oracles.methods.METHODS`: ``raw`` is the
unbiased estimate itself); every method of a repetition post-processes the
same estimate. The parameters:

============ ================ ===================================================
parameter    default          meaning
============ ================ ===================================================
population   zipf             ``{ kind = "zipf", exponent = 1.1 }`` (the package's
                              synthetic law, ``P(v) ~ (v + 1)^-exponent``), or a
                              real file: ``{ kind = "movielens", path = "DIR" }``
                              (one report per rating, the movie id) or
                              ``{ kind = "gowalla", path = "DIR" }`` (one report per
                              check-in, the location id); a relative path is
                              read under ``--data``. Real data keep the ``d``
                              most frequent items and drop the other records
n            100000           reports (``None`` on real data: the file fixes it)
d            1024             domain size
oracle       "olh"            a frequency oracle of
                              :data:`fastldp.oracles.FREQUENCY_ORACLES`
eps          1.0              privacy budget
top_k        32               the true ``top_k`` most frequent items (top-k MSE)
set_fraction 0.1              size of a random set query, as a fraction of ``d``
                              (``max(1, round(set_fraction d))`` items)
queries      200              random set queries per repetition
============ ================ ===================================================

Every error is measured on frequencies (counts divided by the number of
reports), as in the paper.
"""

from __future__ import annotations

import json
import math

from ..spec import (
    UNSET, Cell, Invalid, Spec, _error, expand_configs, int_at_least, make_normalize,
    read_spec_file, real_in, repetitions_alias, spec_family,
)
from ..spec import spec_from_dict as _generic_spec_from_dict

__all__ = ["FAMILY", "DEFAULTS", "SYNTHETIC_KINDS", "REAL_KINDS", "POPULATION_KINDS",
           "load_spec", "spec_from_dict", "normalize", "canonical", "expand_grid", "data_key",
           "is_oracles_spec", "set_size"]

FAMILY = "oracles"

DEFAULTS = {
    "population": {"kind": "zipf", "exponent": 1.1},
    "n": 100_000,
    "d": 1024,
    "oracle": "olh",
    "eps": 1.0,
    "top_k": 32,
    "set_fraction": 0.1,
    "queries": 200,
}

SYNTHETIC_KINDS = ("zipf",)
REAL_KINDS = ("movielens", "gowalla")
POPULATION_KINDS = SYNTHETIC_KINDS + REAL_KINDS
_REPORT_KEYS: set = set()  # no report settings yet
_DATA = ("population", "n", "d")


def is_oracles_spec(path) -> bool:
    """Whether the TOML at ``path`` says ``family = "oracles"``."""
    return spec_family(path) == FAMILY


def load_spec(path, *, quick: bool = False, repetitions: int | None = None,
              trials=UNSET) -> Spec:
    """Read an oracles spec; ``quick`` applies ``[quick]``, ``repetitions`` replaces ``seeds``.

    ``trials`` is the deprecated name of ``repetitions``.
    """
    repetitions = repetitions_alias(repetitions, trials, "load_spec")
    return spec_from_dict(read_spec_file(path), quick=quick, repetitions=repetitions,
                          source=str(path))


def spec_from_dict(data: dict, *, quick: bool = False, repetitions: int | None = None,
                   source: str = "<dict>", trials=UNSET) -> Spec:
    """Build a :class:`~fastldp.experiments.spec.Spec` with this module's parameters.

    The spec must say ``family = "oracles"`` (``trials`` is the deprecated
    name of ``repetitions``). Method names are checked by the runner's
    preflight, which lists every unknown one with a suggestion.
    """
    repetitions = repetitions_alias(repetitions, trials, "spec_from_dict")
    family = data.get("family")
    if family != FAMILY:
        raise _error(source, f"'family' must be {FAMILY!r} for a frequency-oracle spec, "
                     f"got {family!r}")
    return _generic_spec_from_dict(data, normalize=normalize, report_keys=_REPORT_KEYS,
                                   quick=quick, repetitions=repetitions, source=source)


def _population(value):
    if isinstance(value, str):
        value = {"kind": value}
    if not (isinstance(value, dict) and value.get("kind") in POPULATION_KINDS):
        raise Invalid(f"a table with 'kind' one of {list(POPULATION_KINDS)}")
    value = dict(value)
    if value["kind"] == "zipf":
        extra = set(value) - {"kind", "exponent"}
        if extra:
            raise Invalid(f"a zipf table with 'exponent' only (not {sorted(extra)})")
        exponent = value.get("exponent", 1.1)
        if not (isinstance(exponent, (int, float)) and not isinstance(exponent, bool)
                and 0 <= exponent < math.inf):
            raise Invalid("a zipf table whose 'exponent' is a float >= 0")
        value["exponent"] = float(exponent)
    else:
        extra = set(value) - {"kind", "path"}
        if extra:
            raise Invalid(f"a {value['kind']} table with 'path' only (not {sorted(extra)})")
        if not isinstance(value.get("path"), str) or not value["path"]:
            raise Invalid(f"a {value['kind']} table with a 'path' (its file or folder; "
                          f"nothing is downloaded)")
    return {k: value[k] for k in sorted(value)}


def _oracle(value):
    from ...oracles import FREQUENCY_ORACLES

    if not (isinstance(value, str) and value in FREQUENCY_ORACLES):
        raise Invalid(f"one of {sorted(FREQUENCY_ORACLES)}")
    return value


#: Return a value in the canonical form of its parameter or raise.
normalize = make_normalize(DEFAULTS, {
    "population": _population,
    "n": int_at_least(1),
    "d": int_at_least(2),
    "oracle": _oracle,
    "eps": real_in(0, 700, high_open=False),
    "top_k": int_at_least(1),
    "set_fraction": real_in(0, 1, high_open=False),
    "queries": int_at_least(1),
})


def set_size(config: dict) -> int:
    """Items in one random set query: ``max(1, round(set_fraction d))``."""
    return max(1, int(round(config["set_fraction"] * config["d"])))


def canonical(config: dict) -> dict:
    """Real populations store ``n = None`` (the file fixes it); ``top_k`` must not exceed ``d``."""
    config = dict(config)
    if config["population"]["kind"] in REAL_KINDS:
        config["n"] = None
    if config["top_k"] > config["d"]:
        raise ValueError(f"Spec: top_k = {config['top_k']} exceeds d = {config['d']}.")
    return config


def data_key(config: dict) -> str:
    """The configuration fields that fix the data (shared by every oracle, eps and method)."""
    return json.dumps({f: config[f] for f in _DATA}, sort_keys=True)


def expand_grid(spec: Spec) -> list[Cell]:
    """The cells, those on the same data and seed consecutive (a worker keeps its last data)."""
    cells = expand_configs(spec, DEFAULTS, canonical)
    order = {key: i for i, key in enumerate(dict.fromkeys(data_key(c.config) for c in cells))}
    return sorted(cells, key=lambda c: (order[data_key(c.config)], c.seed))
