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
from pathlib import Path

from ..spec import Cell, Spec, _is_int, _is_real, _read_toml, expand_configs, spec_from_dict

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


def _error(where, message):
    return ValueError(f"Spec {where}: {message}")


def is_regression_spec(path) -> bool:
    """Whether the TOML at ``path`` says ``family = "regression"``."""
    try:
        return _read_toml(Path(path)).get("family") == "regression"
    except Exception:
        return False


def load_spec(path, *, quick: bool = False, trials: int | None = None) -> Spec:
    """Read a regression spec; ``quick`` applies ``[quick]``, ``trials`` replaces ``seeds``."""
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
    return spec_from_dict_regression(data, quick=quick, trials=trials, source=str(path))


def spec_from_dict_regression(data: dict, *, quick=False, trials=None, source="<dict>") -> Spec:
    """Build a :class:`~fastldp.experiments.spec.Spec` with section C's parameters."""
    data = dict(data)
    data.setdefault("family", "regression")
    if data["family"] != "regression":
        raise _error(source, f"'family' must be \"regression\", got {data['family']!r}")
    spec = spec_from_dict(data, normalize=normalize, report_keys=_REPORT_KEYS, quick=quick,
                          trials=trials, source=source)
    unknown = [m for m in spec.methods if m not in METHODS]
    if unknown:
        raise _error(source, f"unknown methods {unknown}; the methods are {list(METHODS)}")
    return spec


def normalize(key: str, value, where: str):
    """Return ``value`` in the canonical form of parameter ``key`` or raise."""
    if key not in DEFAULTS:
        raise _error(where, f"unknown parameter {key!r}; the parameters are {sorted(DEFAULTS)}")

    def bad(expected):
        return _error(where, f"{key!r} must be {expected}, got {value!r}")

    if key == "population":
        if isinstance(value, str):
            value = {"kind": value}
        if not (isinstance(value, dict) and value.get("kind") in KINDS):
            raise bad(f"a table with 'kind' one of {list(KINDS)}")
        return {k: value[k] for k in sorted(value)}
    if key in ("n", "m", "d", "k", "n_test"):
        if not (_is_int(value) and value >= 1):
            raise bad("an int >= 1")
        return int(value)
    if key == "sigma":
        if not (_is_real(value) and 0 <= value < math.inf):
            raise bad("a float in [0, inf)")
        return float(value)
    if key == "eps":
        if not (_is_real(value) and 0 < value < math.inf):
            raise bad("a float in (0, inf)")
        return float(value)
    if not (_is_real(value) and 0 < value < 1):  # delta
        raise bad("a float in (0, 1)")
    return float(value)


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
    """
    cells = expand_configs(spec, DEFAULTS, canonical)
    order = {key: i for i, key in enumerate(dict.fromkeys(data_key(c.config) for c in cells))}
    return sorted(cells, key=lambda c: (order[data_key(c.config)], c.seed))
