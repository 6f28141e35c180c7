"""Declarative experiment specs: a TOML file that expands into a grid of cells.

A spec names the methods, the seeds and the configurations to run. The
configurations are the union of one or more ``[[grid]]`` tables, each a
Cartesian product of its axes, over the values of ``[fixed]`` and the
package defaults. Every configuration runs every method on every seed.

Example
-------
::

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

import hashlib
import itertools
import json
import math
import numbers
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["DEFAULTS", "REAL_KINDS", "Spec", "Cell", "load_spec", "spec_from_dict", "expand_grid", "config_id"]

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

_TOP_KEYS = {"name", "description", "methods", "seeds", "fixed", "grid", "quick", "report", "threads"}
_REPORT_KEYS = {"reference", "slope_min_n", "headline", "ablation"}
_QUICK_KEYS = {"description", "methods", "seeds", "fixed", "grid", "threads", "report"}


@dataclass(frozen=True)
class Spec:
    """A parsed spec (see the module docstring for the file format).

    Attributes
    ----------
    name : str
        Also the default output folder name.
    methods : tuple of str
        Method names as ``FAMILY-DECODER`` (see :mod:`fastldp.experiments.methods`).
    seeds : tuple of int
    fixed : dict
        Defaults overridden by ``[fixed]``.
    grids : tuple of dict
        Each maps a parameter to a tuple of values.
    report : dict
        Settings for :func:`fastldp.experiments.report.build_report`.
    threads : int or None
        Kernel threads per worker (``None``: the cores divided by the workers).
    quick : bool
        Whether the ``[quick]`` table was applied.
    """

    name: str
    methods: tuple
    seeds: tuple
    fixed: dict
    grids: tuple
    description: str = ""
    report: dict = field(default_factory=dict)
    threads: int | None = None
    quick: bool = False
    source: str = ""


@dataclass(frozen=True)
class Cell:
    """One configuration on one seed; it produces one row per method.

    ``config`` holds every key of :data:`DEFAULTS` in canonical form;
    ``config_id`` is its content hash, so the row key
    ``f"{config_id}/{method}/{seed}"`` never depends on the spec it came from.
    """

    spec: str
    config: dict
    config_id: str
    seed: int
    methods: tuple

    def key(self, method: str) -> str:
        return row_key(self.config_id, method, self.seed)


def row_key(config_id: str, method: str, seed: int) -> str:
    """Return the unique ``configuration/method/seed`` key of a results row."""
    return f"{config_id}/{method}/{seed}"


def _error(where: str, message: str) -> ValueError:
    return ValueError(f"Spec {where}: {message}")


def _read_toml(path: Path) -> dict:
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python < 3.11 only
        try:
            import tomli as tomllib
        except ImportError as exc:
            raise ImportError(
                "Reading experiment specs on Python < 3.11 needs the 'tomli' package: "
                "pip install tomli"
            ) from exc
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def load_spec(path, *, quick: bool = False) -> Spec:
    """Read a TOML spec; with ``quick`` apply its ``[quick]`` table."""
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No experiment spec at {str(path)!r}.")
    try:
        data = _read_toml(path)
    except Exception as exc:  # tomllib.TOMLDecodeError and friends
        if isinstance(exc, ImportError):
            raise
        raise ValueError(f"Spec {str(path)!r} is not valid TOML: {exc}") from None
    data.setdefault("name", path.stem)
    return spec_from_dict(data, quick=quick, source=str(path))


def spec_from_dict(data: dict, *, quick: bool = False, source: str = "<dict>") -> Spec:
    """Build a :class:`Spec` from the parsed TOML tables."""
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise _error(source, f"unknown top-level keys {sorted(unknown)}; "
                     f"the keys are {sorted(_TOP_KEYS)}")
    data = dict(data)
    if quick:
        _apply_quick(data, source, _QUICK_KEYS)
    name = data.get("name", "experiment")
    if not isinstance(name, str) or not name or any(c in name for c in "/\\"):
        raise _error(source, f"'name' must be a non-empty string without slashes, got {name!r}")

    methods = data.get("methods")
    if not (isinstance(methods, list) and methods and all(isinstance(m, str) and m for m in methods)):
        raise _error(source, f"'methods' must be a non-empty list of method names, got {methods!r}")
    if len(set(methods)) != len(methods):
        raise _error(source, f"'methods' repeats a name: {methods!r}")
    if any("/" in m for m in methods):
        raise _error(source, f"method names may not contain '/': {methods!r}")

    seeds = data.get("seeds", 5)
    if isinstance(seeds, int) and not isinstance(seeds, bool):
        if seeds < 1:
            raise _error(source, f"'seeds' must be >= 1, got {seeds}")
        seeds = list(range(seeds))
    if not (isinstance(seeds, list) and seeds and all(
            isinstance(x, int) and not isinstance(x, bool) and x >= 0 for x in seeds)):
        raise _error(source, f"'seeds' must be a count or a list of ints >= 0, got {seeds!r}")
    if len(set(seeds)) != len(seeds):
        raise _error(source, f"'seeds' repeats a seed: {seeds!r}")

    fixed, grids = _fixed_and_grids(data, source, _normalize)

    threads = data.get("threads")
    if threads is not None and not (isinstance(threads, int) and not isinstance(threads, bool)
                                    and threads >= 1):
        raise _error(source, f"'threads' must be an int >= 1, got {threads!r}")
    report = data.get("report", {})
    if not isinstance(report, dict):
        raise _error(source, "[report] must be a table")
    bad = set(report) - _REPORT_KEYS
    if bad:
        raise _error(source, f"unknown keys {sorted(bad)} in [report]; "
                     f"the keys are {sorted(_REPORT_KEYS)}")
    return Spec(
        name=name, methods=tuple(methods), seeds=tuple(seeds), fixed=fixed, grids=tuple(grids),
        description=str(data.get("description", "")), report=report, threads=threads,
        quick=quick, source=source,
    )


def _axis_values(key: str, value) -> list:
    if key == "shape":
        if isinstance(value, list) and value and all(isinstance(v, list) for v in value):
            return value
        return [value]
    if isinstance(value, list):
        return value
    return [value]


def _apply_quick(data: dict, source: str, quick_keys) -> None:
    """Merge the spec's ``[quick]`` overrides into ``data`` in place.

    ``[fixed]`` and ``[report]`` are merged key by key; other keys replace.
    """
    overrides = data.get("quick")
    if overrides is None:
        raise _error(source, "has no [quick] table, so --quick cannot be used")
    bad = set(overrides) - set(quick_keys)
    if bad:
        raise _error(source, f"unknown keys {sorted(bad)} in [quick]; "
                     f"the keys are {sorted(quick_keys)}")
    for key, value in overrides.items():
        if key in ("fixed", "report"):
            data[key] = {**data.get(key, {}), **value}
        else:
            data[key] = value


def _fixed_and_grids(data: dict, source: str, normalize) -> tuple[dict, list]:
    """Parse a spec's ``[fixed]`` table and its ``[[grid]]`` axes with ``normalize``.

    Shared by every experiment family; ``normalize(key, value, where)``
    checks one parameter value of that family and returns it canonical.
    """
    fixed_raw = data.get("fixed", {})
    if not isinstance(fixed_raw, dict):
        raise _error(source, "[fixed] must be a table")
    fixed = {key: normalize(key, value, f"{source} [fixed]") for key, value in fixed_raw.items()}
    grids_raw = data.get("grid", [{}])
    if isinstance(grids_raw, dict):
        grids_raw = [grids_raw]
    if not (isinstance(grids_raw, list) and all(isinstance(g, dict) for g in grids_raw)):
        raise _error(source, "'grid' must be a table or an array of tables ([[grid]])")
    grids = []
    for i, grid in enumerate(grids_raw):
        where = f"{source} [[grid]] #{i + 1}"
        axes = {}
        for key, value in grid.items():
            values = _axis_values(key, value)
            if not values:
                raise _error(where, f"axis {key!r} is empty")
            axes[key] = tuple(normalize(key, v, where) for v in values)
        grids.append(axes)
    return fixed, grids


def _is_int(x) -> bool:
    return isinstance(x, numbers.Integral) and not isinstance(x, bool)


def _is_real(x) -> bool:
    return isinstance(x, numbers.Real) and not isinstance(x, bool)


def _normalize(key: str, value, where: str):
    """Return ``value`` in the canonical form of parameter ``key`` or raise."""
    if key not in DEFAULTS:
        raise _error(where, f"unknown parameter {key!r}; the parameters are {sorted(DEFAULTS)}")

    def bad(expected):
        return _error(where, f"{key!r} must be {expected}, got {value!r}")

    if key == "population":
        if isinstance(value, str):
            value = {"kind": value}
        if not (isinstance(value, dict) and isinstance(value.get("kind"), str)):
            raise bad("a table with a string 'kind' (e.g. { kind = \"zipf\" })")
        return {k: value[k] for k in sorted(value)}
    if key == "shape":
        if not (isinstance(value, (list, tuple)) and len(value) == 2
                and all(_is_int(v) and v >= 1 for v in value)):
            raise bad("a pair [d1, d2] of ints >= 1")
        return (int(value[0]), int(value[1]))
    if key in ("n", "s", "k", "groups"):
        if not (_is_int(value) and value >= 1):
            raise bad("an int >= 1")
        return int(value)
    if key == "eps0":
        if not (_is_real(value) and 0 < value < math.inf):
            raise bad("a float in (0, inf)")
        return float(value)
    if key == "alpha":
        if not (_is_real(value) and 0 <= value < 1):
            raise bad("a float in [0, 1)")
        return float(value)
    if key == "corruption":
        if isinstance(value, list) and all(_is_int(v) and v >= 0 for v in value):
            return tuple(int(v) for v in value)
        if not isinstance(value, str):
            raise bad('"largest", "random" or a list of identity indices')
        return value
    if not isinstance(value, str):  # budget, attack
        raise bad("a string")
    return value


def _canonical(config: dict) -> str:
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=list)


def config_id(config: dict) -> str:
    """Return the 12-hex-digit content hash of a canonical configuration."""
    return hashlib.sha256(_canonical(config).encode()).hexdigest()[:12]


def expand_grid(spec: Spec) -> list[Cell]:
    """Return the spec's cells: every configuration of the union of its grids, times its seeds.

    Configurations repeated across grids appear once, in first-seen order;
    cells are ordered configuration-major, then by seed.
    """
    base = {**DEFAULTS, **spec.fixed}
    configs: dict[str, dict] = {}
    for axes in spec.grids:
        names = list(axes)
        for values in itertools.product(*(axes[name] for name in names)):
            config = dict(base)
            config.update(zip(names, values))
            if config["population"]["kind"] in REAL_KINDS:
                config["n"] = config["shape"] = None
            cid = config_id(config)
            configs.setdefault(cid, config)
    return [
        Cell(spec.name, config, cid, seed, spec.methods)
        for cid, config in configs.items()
        for seed in spec.seeds
    ]
