"""The relation experiments (paper 000, section 7): methods, specs, runner, table, report.

Registered in :mod:`fastldp.experiments.registry` as the ``relations``
family: ``fastldp reproduce high-information | theorem-audit |
distributional | real-data | ablation`` and user specs with
``family = "relations"`` (the default).
"""

from functools import partial

from ..quick import resolutions
from ..registry import Experiment, SpecFamily, register_experiment, register_spec_family
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
from .report import build_report
from .reproduce import EXPERIMENTS, SPECS_DIR, reproduce, spec_path
from .runner import cell_streams, run, run_cell
from .spec import DEFAULTS, REAL_KINDS, expand_grid, load_spec, spec_from_dict
from .table import COLUMNS, RelationResultsTable, read_results

__all__ = [
    "COLUMNS", "Context", "DEFAULTS", "EXPERIMENTS", "Privatized", "REAL_KINDS",
    "RelationResultsTable", "UnknownMethodError", "build_report", "cell_streams", "expand_grid",
    "known_methods", "load_spec", "read_results", "register_decoder", "register_family",
    "reproduce", "resolve_method", "run", "run_cell", "run_family", "spec_from_dict", "spec_path",
]

for _name, (_spec, _description, _needs_data) in EXPERIMENTS.items():
    register_experiment(Experiment(
        name=_name, family="relations", description=_description,
        run=partial(reproduce, _name), needs_data=_needs_data, spec=str(SPECS_DIR / _spec),
        resolution=partial(resolutions, metrics={"E_s": "E_s", "f1": "F1@s"})))


def _run_spec(path, out=None, *, workers=1, quick=False, progress=True, data_dir=None,
              retry_failures=False, parquet=False):
    return run(path, out, workers=workers, quick=quick, progress=progress, data_dir=data_dir,
               retry_failures=retry_failures, parquet=parquet)


def _report(results, out=None, *, reference=None, figures=True, slope_min_n=None):
    return build_report(results, out, reference=reference or "JPRS-Global",
                        slope_min_n=slope_min_n, figures=figures)


register_spec_family(SpecFamily(name="relations", run=_run_spec, report=_report,
                                owns_table=RelationResultsTable.owns, table=RelationResultsTable,
                                default_reference="JPRS-Global"))
