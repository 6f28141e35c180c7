"""Specs of the sparse-vector experiments (paper 001, section 8).

The file format is that of :mod:`fastldp.experiments.spec` (``name``,
``methods``, ``seeds``, ``[fixed]``, ``[[grid]]``, ``[quick]``, ``[report]``),
with the parameters of section 8 instead of paper 000's. ``seeds`` is the
number of trials (paper: 500). Example::

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
from dataclasses import replace
from pathlib import Path

from ..spec import (
    Cell, Spec, _apply_quick, _fixed_and_grids, _is_int, _is_real, _read_toml, config_id, spec_from_dict,
)

__all__ = ["DEFAULTS", "POPULATION_KINDS", "REAL_KINDS", "MODELS", "ATTACKS", "load_spec",
           "spec_from_dict_sparse", "expand_grid", "is_sparse_spec"]

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
_QUICK_KEYS = {"description", "methods", "seeds", "fixed", "grid", "threads", "report"}


def _error(where: str, message: str) -> ValueError:
    return ValueError(f"Spec {where}: {message}")


def is_sparse_spec(path) -> bool:
    """Whether the TOML spec at ``path`` uses this module's parameters (not paper 000's)."""
    try:
        data = _read_toml(Path(path))
    except Exception:
        return False
    tables = [data.get("fixed", {})]
    grid = data.get("grid", [])
    tables += grid if isinstance(grid, list) else [grid]
    keys = {k for t in tables if isinstance(t, dict) for k in t}
    pops = [t.get("population") for t in tables if isinstance(t, dict)]
    kinds = set()
    for p in pops:
        for item in (p if isinstance(p, list) else [p]):
            if isinstance(item, dict):
                kinds.add(item.get("kind"))
            elif isinstance(item, str):
                kinds.add(item)
    return bool(keys & {"eps", "d", "m", "q_frac", "model"}) or bool(
        kinds & (set(SYNTHETIC_KINDS) | {"commerce", "clothing", "amazon"}))


def load_spec(path, *, quick: bool = False, trials: int | None = None) -> Spec:
    """Read a sparse-vector spec; with ``quick`` apply its ``[quick]`` table.

    ``trials`` replaces ``seeds`` by ``range(trials)``.
    """
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No experiment spec at {str(path)!r}.")
    try:
        data = _read_toml(path)
    except Exception as exc:
        if isinstance(exc, ImportError):
            raise
        raise ValueError(f"Spec {str(path)!r} is not valid TOML: {exc}") from None
    data.setdefault("name", path.stem)
    return spec_from_dict_sparse(data, quick=quick, trials=trials, source=str(path))


def spec_from_dict_sparse(data: dict, *, quick: bool = False, trials: int | None = None,
                          source: str = "<dict>") -> Spec:
    """Build a :class:`~fastldp.experiments.spec.Spec` with section 8 parameters.

    Name, methods, seeds and threads are checked by
    :func:`fastldp.experiments.spec.spec_from_dict`; ``[fixed]``, ``[[grid]]``
    and ``[report]`` here.
    """
    data = dict(data)
    if quick:
        _apply_quick(data, source, _QUICK_KEYS)
    if trials is not None:
        if not (isinstance(trials, int) and not isinstance(trials, bool) and trials >= 1):
            raise _error(source, f"'trials' must be an int >= 1, got {trials!r}")
        data["seeds"] = trials
    generic = {k: v for k, v in data.items() if k not in ("fixed", "grid", "report", "quick")}
    spec = spec_from_dict(generic, source=source)

    fixed, grids = _fixed_and_grids(data, source, normalize)
    report = data.get("report", {})
    if not isinstance(report, dict):
        raise _error(source, "[report] must be a table")
    bad = set(report) - _REPORT_KEYS
    if bad:
        raise _error(source, f"unknown keys {sorted(bad)} in [report]; "
                     f"the keys are {sorted(_REPORT_KEYS)}")
    return replace(spec, fixed=fixed, grids=tuple(grids), report=report, quick=quick)


def normalize(key: str, value, where: str):
    """Return ``value`` in the canonical form of parameter ``key`` or raise."""
    if key not in DEFAULTS:
        raise _error(where, f"unknown parameter {key!r}; the parameters are {sorted(DEFAULTS)}")

    def bad(expected):
        return _error(where, f"{key!r} must be {expected}, got {value!r}")

    if key == "population":
        if isinstance(value, str):
            value = {"kind": value}
        if not (isinstance(value, dict) and value.get("kind") in POPULATION_KINDS):
            raise bad(f"a table with 'kind' one of {list(POPULATION_KINDS)}")
        return {k: value[k] for k in sorted(value)}
    if key in ("n", "d", "m", "target"):
        if not (_is_int(value) and value >= 1):
            raise bad("an int >= 1")
        return int(value)
    if key == "eps":
        if not (_is_real(value) and 0 < value < math.inf):
            raise bad("a float in (0, inf)")
        return float(value)
    if key == "q_frac":
        if not (_is_real(value) and 0 <= value < 1):
            raise bad("a float in [0, 1)")
        return float(value)
    if key == "model":
        if value not in MODELS:
            raise bad(f"one of {list(MODELS)}")
        return value
    if key == "attack":
        if value not in ATTACKS:
            raise bad(f"one of {list(ATTACKS)}")
        return value
    if not isinstance(value, bool):  # clip
        raise bad("true or false")
    return value


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
    """The spec's cells: each distinct configuration of its grids, times its trials.

    Configurations repeated across grids (such as the clean ``q_frac = 0``
    cell of several attack grids) appear once, in first-seen order.
    """
    import itertools

    base = {**DEFAULTS, **spec.fixed}
    configs: dict[str, dict] = {}
    for axes in spec.grids:
        names = list(axes)
        for values in itertools.product(*(axes[name] for name in names)):
            config = dict(base)
            config.update(zip(names, values))
            config = canonical(config)
            configs.setdefault(config_id(config), config)
    return [Cell(spec.name, config, cid, seed, spec.methods)
            for cid, config in configs.items() for seed in spec.seeds]
