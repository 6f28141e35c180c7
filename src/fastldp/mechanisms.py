"""Mechanisms by name: rebuild a server from a spec, and simulate report files.

A *spec* is the JSON object a report file carries and ``fastldp decode
--mechanism`` takes::

    {"mechanism": "JPRS", "params": {"shape": [64, 64], "k": 4, "s": 16,
                                     "codebook_seed": 1, "support_rule": "raw"}}

``params`` are the mechanism's ``stream_params()``: the keyword arguments
that rebuild an equivalent server. A few *presets* name the configurations
of the scale-out benchmark (:data:`PRESETS`).

The registry of names is built by :func:`fastldp.protocol.streaming_classes`
from the families' exports; this module asks a mechanism the protocol's
questions (``spec``, ``report_schema``, ``example_data``) and never its class.

Examples
--------
Rebuild a server from a spec, write a file of simulated reports for it, and
decode the file with the server the file's own spec rebuilds:

>>> import os, tempfile
>>> from fastldp.mechanisms import from_spec, simulate
>>> from fastldp.reports import ReportFile, decode_files
>>> spec = {"mechanism": "GRR", "params": {"domain_size": 4, "epsilon": 2.0,
...                                        "codebook_seed": 1}}
>>> mech = from_spec(spec)
>>> mech
GRR(domain_size=4, epsilon=2.0, codebook_seed=1)
>>> path = simulate(mech, 1_000, os.path.join(tempfile.mkdtemp(), "r.parquet"), seed=0)
>>> est = decode_files(from_spec(ReportFile(path).spec), path)
>>> est.n, est.estimate.shape
(1000, (4,))
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Optional, Union

import numpy as np

from . import protocol
from ._random import as_generator
from ._validation import param_error
from .reports import ReportWriter, mechanism_spec

__all__ = ["STREAMING", "PRESETS", "from_spec", "read_spec", "simulate", "mechanism_spec"]


#: The streaming estimator classes by spec name at import (``fastldp.protocol.streaming_classes``
#: also sees classes registered later; :func:`from_spec` asks it).
STREAMING = protocol.streaming_classes()

PRESETS = {
    # p = 4,096 pairs: the configurations of bench/stream_decode.py
    "jprs-4096": {"mechanism": "JPRS", "params": {
        "shape": [64, 64], "k": 4, "s": 16, "codebook_seed": 20261130, "support_rule": "raw"}},
    "olh-4096": {"mechanism": "OLH", "params": {
        "domain_size": 4096, "epsilon": 1.0, "codebook_seed": 20261130}},
}


def read_spec(text_or_path: Union[str, os.PathLike[str]]) -> dict[str, Any]:
    """A spec from a preset name, a JSON/TOML file, or inline JSON."""
    text = os.fspath(text_or_path)
    if text in PRESETS:
        return json.loads(json.dumps(PRESETS[text]))
    if os.path.isfile(text):
        raw = Path(text).read_text()
        if text.endswith(".toml"):
            try:
                import tomllib
            except ImportError:  # pragma: no cover - Python < 3.11
                import tomli as tomllib  # type: ignore[no-redef]
            try:
                spec = tomllib.loads(raw)
            except tomllib.TOMLDecodeError as exc:
                raise ValueError(f"{text}: not a TOML mechanism spec ({exc})") from None
        else:
            try:
                spec = json.loads(raw)
            except json.JSONDecodeError as exc:
                raise ValueError(f"{text}: not a JSON mechanism spec ({exc})") from None
    else:
        try:
            spec = json.loads(text)
        except json.JSONDecodeError:
            raise ValueError(
                f"--mechanism {text!r} is neither a preset ({', '.join(PRESETS)}), an existing "
                "JSON/TOML file nor inline JSON like "
                '\'{"mechanism": "OLH", "params": {"domain_size": 64, "epsilon": 1.0, '
                '"codebook_seed": 1}}\'') from None
    if not isinstance(spec, dict) or "mechanism" not in spec or not isinstance(
            spec.get("params", {}), dict):
        raise ValueError(f"a mechanism spec is an object with 'mechanism' and 'params'; got {spec!r}")
    spec.setdefault("params", {})
    return spec


def from_spec(spec: Union[dict[str, Any], str, os.PathLike[str]]) -> Any:
    """Build the server a spec (dict, preset, file or JSON text) describes."""
    if not isinstance(spec, dict):
        spec = read_spec(spec)
    name = spec["mechanism"]
    cls = protocol.resolve_class(name)
    spec = protocol.completed_spec(spec)  # a spec written before a parameter was added
    try:
        mech = cls(**spec["params"])
    except TypeError as exc:
        raise ValueError(f"bad parameters for {name}: {exc}") from None
    if mechanism_spec(mech) != {"mechanism": name, "params": spec["params"]}:
        # a spec missing a parameter would get a default (a random codebook seed)
        raise ValueError(f"the spec of {name} must give every public parameter: "
                         f"{sorted(mech.stream_params())}; got {sorted(spec['params'])}")
    return mech


# ---------------------------------------------------------------------- simulation
def _simulation_budgets(epsilon: Any) -> Union[float, tuple[float, float]]:
    """``epsilon`` of :func:`simulate` checked: a finite budget > 0, or ``(low, high)``, low < high."""
    expected = "a finite float > 0, or a pair (low, high) of them with low < high"
    try:
        values = np.asarray(epsilon, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error("epsilon", "simulate", expected, epsilon, TypeError) from None
    if values.ndim > 1 or values.size not in (1, 2) or (values.ndim == 1 and values.size == 1):
        raise param_error("epsilon", "simulate", expected, epsilon)
    if not np.all(np.isfinite(values) & (values > 0)):  # NaN fails too
        raise param_error("epsilon", "simulate", expected, epsilon)
    if values.ndim == 0:
        return float(values)
    low, high = (float(v) for v in values)
    if not low < high:
        raise param_error("epsilon", "simulate", expected, epsilon)
    return low, high


def simulate(mechanism: Any, n: int, out: Union[str, os.PathLike[str]], *,
             epsilon: Union[float, tuple[float, float]] = (0.5, 2.0), seed: Any = 0,
             chunk: int = 1 << 20,
             progress: Optional[Callable[[int, int], None]] = None) -> Path:
    """Write a report file of ``n`` privatized reports from a synthetic population.

    Parameters
    ----------
    mechanism : streaming estimator (:class:`fastldp.protocol.StreamingMechanism`)
        Its ``example_data`` is the synthetic population.
    n : int
        Reports, ``n >= 1``.
    out : path
        The Parquet file to write.
    epsilon : float or (low, high)
        A fixed budget, or personal budgets uniform in ``[low, high]``
        (relations; oracles built with an ``epsilon`` use it). Budgets are
        finite and > 0, and ``low < high``.
    seed : int
        Seeds the population and the clients' coins.
    chunk : int
        Reports privatized and written at a time (one row group each).
    progress : callable, optional
        ``progress(rows_done, n)``.
    """
    if not isinstance(n, (int, np.integer)) or n < 1:
        raise ValueError(f"The 'n' parameter of simulate must be an int >= 1. Got {n!r} instead.")
    budgets = _simulation_budgets(epsilon)
    rng = as_generator(seed, "simulate", purpose="simulate")
    protocol.check_mechanism(mechanism)
    fixed = mechanism.report_schema.fixed_epsilon
    with ReportWriter(out, mechanism, row_group_size=chunk) as writer:
        for start in range(0, n, chunk):
            m = min(chunk, n - start)
            ids = np.arange(start, start + m, dtype=np.uint64)
            if isinstance(budgets, tuple):
                low, high = budgets
                eps = rng.uniform(low, high, m)
            else:
                eps = np.full(m, budgets)
            data = mechanism.example_data(m, rng)
            if fixed is not None:  # a mechanism built with a budget privatizes at it
                eps = np.full(m, fixed)
                reports = mechanism.privatize(data, identities=ids, rng=rng)
            else:
                reports = mechanism.privatize(data, epsilons=eps, identities=ids, rng=rng)
            writer.write(reports, eps, ids)
            if progress is not None:
                progress(start + m, n)
    return Path(out)

