"""The sparse-vector experiments (paper 001, section 8): methods, specs, runner, table, report.

The harness of :mod:`fastldp.experiments` (TOML specs with a ``[quick]``
grid, a resumable append-only results table, a worker pool, a progress bar,
report tables and figures) with section 8's parameters and metric (mean
absolute error of the final, clipped estimate)::

    from fastldp.experiments.vectors import load_spec, run, build_report
    summary = run(load_spec("rpc_frequency.toml", quick=True), "out", workers=2)
    build_report(summary.table, "out/report")

or ``fastldp reproduce rpc-frequency --quick``. Registered in
:mod:`fastldp.experiments.registry` as the ``vectors`` family (user specs
say ``family = "vectors"``).
"""

from functools import partial

from ..quick import resolutions
from ..registry import Experiment, SpecFamily, register_experiment, register_spec_family
from .methods import METHODS, Population, build_method
from .report import build_report
from .reproduce import EXPERIMENTS, SPECS_DIR, reproduce, spec_path
from .runner import load_population, run, run_cell, streams
from .spec import DEFAULTS, expand_grid, load_spec, spec_from_dict
from .table import COLUMNS, SparseResultsTable, is_sparse_table, read_sparse_results

__all__ = [
    "COLUMNS", "DEFAULTS", "EXPERIMENTS", "METHODS", "Population", "SparseResultsTable",
    "build_method", "build_report", "expand_grid", "is_sparse_table", "load_population",
    "load_spec", "read_sparse_results", "reproduce", "run", "run_cell", "spec_from_dict",
    "spec_path", "streams",
]

for _name, (_spec, _description, _needs_data) in EXPERIMENTS.items():
    register_experiment(Experiment(
        name=_name, family="vectors", description=_description,
        run=partial(reproduce, _name), needs_data=_needs_data, spec=str(SPECS_DIR / _spec),
        takes_repetitions=True, resolution=partial(resolutions, metrics={"mae": "MAE"})))


def _run_spec(path, out=None, *, workers=1, quick=False, progress=True, data_dir=None,
              retry_failures=False, parquet=False):
    if parquet:
        raise ValueError("--parquet is not available for sparse-vector specs.")
    return run(path, out, workers=workers, quick=quick, progress=progress, data_dir=data_dir,
               retry_failures=retry_failures)


def _report(results, out=None, *, reference=None, figures=True, slope_min_n=None):
    return build_report(results, out, reference=reference or "RPC", figures=figures)


register_spec_family(SpecFamily(name="vectors", run=_run_spec, report=_report,
                                owns_table=SparseResultsTable.owns, table=SparseResultsTable, default_reference="RPC"))
