"""Paper 001, section 8: the RPC evaluation (frequency and mean estimation, attacks, real data).

The same machinery as :mod:`fastldp.experiments` (TOML specs with a
``[quick]`` grid, a resumable append-only results table, a worker pool, a
progress bar, report tables and figures), with section 8's parameters and
metric (mean absolute error of the final, clipped estimate)::

    from fastldp.experiments.rpc import load_spec, run, build_report
    summary = run(load_spec("rpc_frequency.toml", quick=True), "out", workers=2)
    build_report(summary.table, "out/report")

or ``fastldp reproduce rpc-frequency --quick`` (see :data:`EXPERIMENTS`).
"""

from .methods import METHODS, Population, build_method
from .report import build_report
from .reproduce import EXPERIMENTS, reproduce
from .runner import load_population, run, run_cell, streams
from .spec import DEFAULTS, expand_grid, is_sparse_spec, load_spec, spec_from_dict_sparse
from .table import COLUMNS, SparseResultsTable, is_sparse_table, read_sparse_results

__all__ = [
    "COLUMNS", "DEFAULTS", "EXPERIMENTS", "METHODS", "Population", "SparseResultsTable",
    "build_method", "build_report", "expand_grid", "is_sparse_spec", "is_sparse_table",
    "load_population", "load_spec", "read_sparse_results", "reproduce", "run", "run_cell",
    "spec_from_dict_sparse", "streams",
]
