"""Paper 002, section C: the shuffled sparse-regression evaluation (family ``regression``).

``fastldp reproduce regression-eps | regression-n | regression-d |
regression-m [--quick]`` runs a shipped spec (synthetic data) and
``fastldp reproduce regression-kelmarsh --data DIR`` the wind-farm one; each
writes ``OUT/results.csv`` (one :class:`RegressionResultsTable`), the report
and ``OUT/report/figures/regression_<axis>.png``. A user's TOML with
``family = "regression"`` runs through ``fastldp run`` / ``fastldp report``.

============================ ======================================= ========================
experiment                   paper 002                               spec
============================ ======================================= ========================
regression-eps               C.2 Exp1, Figure 1 (30 repetitions)     regression_eps.toml
regression-n                 C.2 Exp2 (30 repetitions)               regression_n.toml
regression-d                 C.2 Exp3 (10 repetitions)               regression_d.toml
regression-m                 C.3 Exp4, Table 8 (10 repetitions)      regression_m.toml
regression-kelmarsh          C.2 Kelmarsh, Table 9                   regression_kelmarsh.toml
============================ ======================================= ========================
"""

from __future__ import annotations

import functools
import os
import sys
from pathlib import Path

from ..quick import resolutions
from ..registry import Experiment, SpecFamily, register_experiment, register_spec_family
from ..spec import UNSET, repetitions_alias, shipped_spec_path
from .report import RegressionReport, build_report
from .runner import (COLUMNS, RegressionResultsTable, is_regression_table,
                     read_regression_results, run, run_cell)
from .spec import DEFAULTS, METHODS, expand_grid, is_regression_spec, load_spec

__all__ = ["COLUMNS", "DEFAULTS", "EXPERIMENTS", "METHODS", "RegressionReport",
           "RegressionResultsTable", "build_report", "expand_grid", "is_regression_spec",
           "is_regression_table", "load_spec", "read_regression_results", "reproduce", "run",
           "run_cell", "spec_path"]

SPECS_DIR = Path(__file__).resolve().parent

#: Experiment name -> (spec file, needs --data).
EXPERIMENTS = {
    "regression-eps": ("regression_eps.toml", False),
    "regression-n": ("regression_n.toml", False),
    "regression-d": ("regression_d.toml", False),
    "regression-m": ("regression_m.toml", False),
    "regression-kelmarsh": ("regression_kelmarsh.toml", True),
}


def spec_path(experiment: str) -> Path:
    """Path of the shipped spec of ``experiment`` (a key of :data:`EXPERIMENTS`)."""
    return shipped_spec_path(EXPERIMENTS, SPECS_DIR, experiment)


def reproduce(experiment: str, *, quick: bool = False, out=None, workers: int = 1,
              data_dir=None, progress: bool = True, figures: bool = True, file=None,
              repetitions=None, trials=UNSET) -> RegressionReport:
    """Run a shipped regression spec, then report it (printed to ``file``).

    Results go to ``OUT/results.csv`` (default ``results/<experiment>[-quick]``)
    and the report to ``OUT/report/``. A second call resumes; failed rows run
    again. ``repetitions`` replaces the spec's repetitions (``trials`` is its
    deprecated name). The Kelmarsh
    experiment raises FileNotFoundError before running anything when
    ``data_dir`` (default ``$FASTLDP_DATA``) holds no SCADA files.
    """
    file = file or sys.stdout
    repetitions = repetitions_alias(repetitions, trials, "reproduce")
    spec = load_spec(spec_path(experiment), quick=quick, repetitions=repetitions)
    if data_dir is None:
        data_dir = os.environ.get("FASTLDP_DATA")
    out = Path(out) if out is not None else Path("results") / (
        spec.name + ("-quick" if quick else ""))
    print(f"fastldp reproduce {experiment}{' --quick' if quick else ''}: {spec.description} "
          f"({len(spec.seeds)} repetition{'' if len(spec.seeds) == 1 else 's'})", file=file)
    summary = run(spec, out, workers=workers, progress=progress, data_dir=data_dir,
                  retry_failures=True)
    print(summary, file=file)
    axis = spec.report.get("axis")
    report = build_report(summary.table, out / "report", axis=axis,
                          paper=spec.report.get("paper"), figures=figures,
                          name=f"regression_{experiment.split('-', 1)[1]}", log=file)
    report.files = [summary.table] + report.files
    print(report.text, file=file)
    if report.figures:
        print(f"\nFigures: {', '.join(str(p) for p in report.figures)}", file=file)
    return report


def _run_spec(spec_file, out=None, *, workers=1, quick=False, progress=True, data_dir=None,
              retry_failures=False, parquet=False, **_ignored):
    return run(spec_file, out, workers=workers, quick=quick, progress=progress,
               data_dir=data_dir, retry_failures=retry_failures)


def _report(results_path, out=None, *, reference=None, figures=True, **options):
    return build_report(results_path, out, figures=figures, **options)


for _name, (_file, _needs) in EXPERIMENTS.items():
    _spec = load_spec(SPECS_DIR / _file)
    register_experiment(Experiment(
        name=_name, family="regression", description=_spec.description,
        run=functools.partial(reproduce, _name), needs_data=_needs, spec=str(SPECS_DIR / _file),
        takes_repetitions=True,
        resolution=functools.partial(resolutions, metrics={"rel_error": "relative error",
                                                           "test_mse": "test MSE"})))
register_spec_family(SpecFamily(name="regression", run=_run_spec, report=_report,
                                owns_table=is_regression_table, default_reference="Lasso"))
