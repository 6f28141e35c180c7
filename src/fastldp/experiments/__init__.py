"""Experiments: declarative specs, the runner, the results table, the report and figures.

Typical use::

    from fastldp.experiments import load_spec, run, build_report
    summary = run(load_spec("my_spec.toml"), "out", workers=2)
    build_report(summary.table, "out/report")

or from the shell: ``fastldp run my_spec.toml --out out`` and
``fastldp report out/results.csv``; ``fastldp reproduce theorem-audit --quick``
runs a shipped spec (see :data:`EXPERIMENTS`).
"""

from .methods import (
    Context,
    Privatized,
    UnknownMethodError,
    known_methods,
    register_decoder,
    register_family,
    resolve_method,
    run_family,
)
from .reproduce import EXPERIMENTS, reproduce, spec_path
from .report import build_report
from .runner import RunSummary, run, run_cell
from .spec import DEFAULTS, Cell, Spec, expand_grid, load_spec, spec_from_dict
from .table import COLUMNS, ResultsTable, read_results

__all__ = [
    "COLUMNS",
    "Cell",
    "Context",
    "DEFAULTS",
    "EXPERIMENTS",
    "Privatized",
    "ResultsTable",
    "RunSummary",
    "Spec",
    "UnknownMethodError",
    "build_report",
    "expand_grid",
    "known_methods",
    "load_spec",
    "read_results",
    "register_decoder",
    "register_family",
    "reproduce",
    "resolve_method",
    "run",
    "run_cell",
    "run_family",
    "spec_from_dict",
    "spec_path",
]
