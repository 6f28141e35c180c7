"""Declarative experiment specs, the same file format for every family.

A spec is a TOML file that names its family, methods, seeds and
configurations. The configurations are the union of one or more
``[[grid]]`` tables, each a Cartesian product of its axes, over the values
of ``[fixed]`` and the family's defaults; every configuration runs every
method on every seed::

    family = "relations"             # relations (default), vectors, regression, ...
    name = "theorem-audit"
    methods = ["JPRS-Global", "NonPrivate-TopS"]
    seeds = 5                        # 5 repetitions, seeds 0..4, or an explicit list [0, 3]

    [fixed]                          # one value each, shared by every grid
    eps0 = 0.75

    [[grid]]                         # an axis is a list; a scalar is a one-value axis
    n = [16000, 32000, 64000]
    alpha = [0.0, 0.10]

    [quick]                          # --quick: these keys replace the full spec's
    seeds = 2

    [report]                         # the family's report settings, optional

``repetitions`` is accepted as another name of ``seeds`` (one of the two
per table): each repetition runs on its own seed.

This module holds what every family shares: :class:`Spec` and
:class:`Cell`, reading TOML, the top-level keys, ``[quick]``, ``[fixed]``
and ``[[grid]]`` parsing with a family's ``normalize(key, value, where)``,
content-hashed configuration ids and grid expansion. The parameters, their
defaults and canonical forms are each family's
(``fastldp.experiments.<family>.spec``).
"""

from __future__ import annotations

import hashlib
import itertools
import json
import numbers
import sys
from dataclasses import dataclass, field
from pathlib import Path

__all__ = ["Spec", "Cell", "row_key", "read_spec_file", "spec_family", "spec_from_dict",
           "config_id", "expand_configs", "DEFAULT_FAMILY", "make_normalize", "Invalid",
           "population_table", "int_at_least", "real_in", "one_of", "boolean",
           "shipped_spec_path", "repetitions_alias", "UNSET"]

#: The family of a spec without a ``family`` key (the first family of the package).
DEFAULT_FAMILY = "relations"

_TOP_KEYS = {"family", "name", "description", "methods", "seeds", "repetitions", "fixed", "grid",
             "quick", "report", "threads"}
_QUICK_KEYS = {"description", "methods", "seeds", "repetitions", "fixed", "grid", "threads",
               "report"}


@dataclass(frozen=True)
class Spec:
    """A parsed spec (see the module docstring for the file format).

    Attributes
    ----------
    name : str
        Also the default output folder name.
    methods : tuple of str
        Method names of the spec's family.
    seeds : tuple of int
        One seed per repetition.
    fixed : dict
        Defaults overridden by ``[fixed]``.
    grids : tuple of dict
        Each maps a parameter to a tuple of values.
    report : dict
        The family's report settings.
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
    family: str = DEFAULT_FAMILY


@dataclass(frozen=True)
class Cell:
    """One configuration on one seed; it produces one row per method.

    ``config`` holds every parameter of the family in canonical form;
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


def read_spec_file(path) -> dict:
    """Read a TOML spec into a dict; a missing or malformed file is a clear error.

    ``name`` defaults to the file's stem.
    """
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
    return data


def shipped_spec_path(experiments: dict, folder, experiment: str, kind: str = "") -> Path:
    """The spec file of a family's shipped ``experiment``.

    ``experiments`` maps each name to a tuple whose first entry is the file
    name inside ``folder``; ``kind`` qualifies the error ("relation", ...).
    """
    if experiment not in experiments:
        what = f"{kind} experiment" if kind else "experiment"
        raise ValueError(f"Unknown {what} {experiment!r}; the experiments are "
                         f"{', '.join(experiments)}.")
    return Path(folder) / experiments[experiment][0]


def spec_family(data_or_path) -> str:
    """The ``family`` of a spec (a parsed dict or a path); :data:`DEFAULT_FAMILY` if absent."""
    data = data_or_path if isinstance(data_or_path, dict) else read_spec_file(data_or_path)
    family = data.get("family", DEFAULT_FAMILY)
    if not (isinstance(family, str) and family):
        raise _error(str(data.get("name", "<spec>")),
                     f"'family' must be a family name, got {family!r}")
    return family


#: The default of a deprecated ``trials`` parameter: "not given" (None is a value).
UNSET = object()


def repetitions_alias(repetitions, trials, owner: str):
    """``repetitions``, or the deprecated ``trials`` given instead (with a DeprecationWarning).

    ``trials`` is :data:`UNSET` when the caller did not pass it.
    """
    if trials is UNSET:
        return repetitions
    import warnings

    warnings.warn(f"The 'trials' parameter of {owner} is deprecated and will be removed in the "
                  f"next release; use 'repetitions'.", DeprecationWarning, stacklevel=3)
    if repetitions is not None:
        raise TypeError(f"{owner} got both 'repetitions' and its deprecated name 'trials'; "
                        f"pass 'repetitions' only.")
    return trials


def _seeds_key(table: dict, where: str) -> None:
    """Read ``repetitions`` as ``seeds`` in ``table`` (in place); both at once is an error."""
    if "repetitions" in table:
        if "seeds" in table:
            raise _error(where, "gives both 'seeds' and 'repetitions' (one name for the same "
                                "count); keep one")
        table["seeds"] = table.pop("repetitions")


def spec_from_dict(data: dict, *, normalize, report_keys=(), quick: bool = False,
                   repetitions: int | None = None, source: str = "<dict>",
                   trials=UNSET) -> Spec:
    """Build a :class:`Spec` from parsed TOML tables.

    Parameters
    ----------
    data : dict
        The top-level tables (see the module docstring).
    normalize : callable
        ``normalize(key, value, where)``: the family's check of one
        parameter value; returns it in canonical form or raises ``ValueError``.
    report_keys : iterable of str
        The keys the family's ``[report]`` table may hold.
    quick : bool
        Apply the ``[quick]`` table.
    repetitions : int, optional
        Replace ``seeds`` by ``range(repetitions)``.
    source : str
        Where the spec came from, for error messages.
    trials : int, optional
        Deprecated name of ``repetitions`` (``DeprecationWarning``).
    """
    repetitions = repetitions_alias(repetitions, trials, "spec_from_dict")
    unknown = set(data) - _TOP_KEYS
    if unknown:
        raise _error(source, f"unknown top-level keys {sorted(unknown)}; "
                     f"the keys are {sorted(_TOP_KEYS)}")
    data = dict(data)
    _seeds_key(data, source)
    if quick:
        _apply_quick(data, source, _QUICK_KEYS)
    if repetitions is not None:
        if not (isinstance(repetitions, int) and not isinstance(repetitions, bool)
                and repetitions >= 1):
            raise _error(source, f"'repetitions' must be an int >= 1, got {repetitions!r}")
        data["seeds"] = repetitions
    family = data.get("family", DEFAULT_FAMILY)
    if not (isinstance(family, str) and family):
        raise _error(source, f"'family' must be a family name, got {family!r}")
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

    fixed, grids = _fixed_and_grids(data, source, normalize)

    threads = data.get("threads")
    if threads is not None and not (isinstance(threads, int) and not isinstance(threads, bool)
                                    and threads >= 1):
        raise _error(source, f"'threads' must be an int >= 1, got {threads!r}")
    report = data.get("report", {})
    if not isinstance(report, dict):
        raise _error(source, "[report] must be a table")
    bad = set(report) - set(report_keys)
    if bad:
        raise _error(source, f"unknown keys {sorted(bad)} in [report]; "
                     f"the keys are {sorted(report_keys)}")
    return Spec(
        name=name, methods=tuple(methods), seeds=tuple(seeds), fixed=fixed, grids=tuple(grids),
        description=str(data.get("description", "")), report=report, threads=threads,
        quick=quick, source=source, family=family,
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
    overrides = dict(overrides)
    _seeds_key(overrides, f"{source} [quick]")
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


def _canonical(config: dict) -> str:
    return json.dumps(config, sort_keys=True, separators=(",", ":"), default=list)


def config_id(config: dict) -> str:
    """Return the 12-hex-digit content hash of a canonical configuration."""
    return hashlib.sha256(_canonical(config).encode()).hexdigest()[:12]


def expand_configs(spec: Spec, defaults: dict, canonical=None) -> list[Cell]:
    """Return the spec's cells: every configuration of the union of its grids, times its seeds.

    Each configuration starts from ``defaults`` and ``spec.fixed``; the
    family's ``canonical(config) -> config`` puts it in canonical form (so
    that equal experiments share one id), or raises ``ValueError``.
    Configurations repeated across grids appear once, in first-seen order;
    cells are ordered configuration-major, then by seed.
    """
    base = {**defaults, **spec.fixed}
    configs: dict[str, dict] = {}
    for axes in spec.grids:
        names = list(axes)
        for values in itertools.product(*(axes[name] for name in names)):
            config = dict(base)
            config.update(zip(names, values))
            if canonical is not None:
                config = canonical(config)
            configs.setdefault(config_id(config), config)
    return [
        Cell(spec.name, config, cid, seed, spec.methods)
        for cid, config in configs.items()
        for seed in spec.seeds
    ]


# ---------------------------------------------------------------- parameter checks
class Invalid(ValueError):
    """Raised by a parameter checker; its message is what the value must be."""


def make_normalize(defaults: dict, checkers: dict):
    """A family's ``normalize(key, value, where)`` from one checker per parameter.

    A checker takes a value and returns it in canonical form, or raises
    :class:`Invalid` with what the value must be; the error then names the
    spec, the parameter, the expectation and the value given.
    """
    def normalize(key: str, value, where: str):
        if key not in defaults:
            raise _error(where, f"unknown parameter {key!r}; the parameters are {sorted(defaults)}")
        try:
            return checkers[key](value)
        except Invalid as exc:
            raise _error(where, f"{key!r} must be {exc}, got {value!r}") from None

    return normalize


def population_table(kinds=None):
    """A population: a kind name or a table with ``kind``; canonical as a sorted dict."""
    def check(value):
        if isinstance(value, str):
            value = {"kind": value}
        if kinds is None:
            if not (isinstance(value, dict) and isinstance(value.get("kind"), str)):
                raise Invalid("a table with a string 'kind' (e.g. { kind = \"zipf\" })")
        elif not (isinstance(value, dict) and value.get("kind") in kinds):
            raise Invalid(f"a table with 'kind' one of {list(kinds)}")
        return {k: value[k] for k in sorted(value)}

    return check


def int_at_least(low: int = 1):
    """An int (not a bool) ``>= low``."""
    def check(value):
        if not (_is_int(value) and value >= low):
            raise Invalid(f"an int >= {low}")
        return int(value)

    return check


def real_in(low: float, high: float, *, low_open: bool = True, high_open: bool = True):
    """A real number in the interval; NaN fails."""
    left, right = "(" if low_open else "[", ")" if high_open else "]"
    text = f"a float in {left}{low:g}, {'inf' if high == float('inf') else f'{high:g}'}{right}"

    def check(value):
        ok = _is_real(value) and (low < value if low_open else low <= value) and (
            value < high if high_open else value <= high)
        if not ok:
            raise Invalid(text)
        return float(value)

    return check


def one_of(options):
    """One of ``options``."""
    def check(value):
        if value not in options:
            raise Invalid(f"one of {list(options)}")
        return value

    return check


def boolean(value):
    """``true`` or ``false``."""
    if not isinstance(value, bool):
        raise Invalid("true or false")
    return value

