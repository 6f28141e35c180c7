"""Frequency-oracle experiments: consistent post-processing compared (Wang et al., NDSS 2020).

``fastldp reproduce oracle-consistency [--quick] [--data DIR]`` privatizes
Zipf data (and the real files found under ``--data``) with GRR, OLH, OUE,
subset selection and BLH at budgets 0.5 to 4, post-processes each estimate
with every method of :mod:`fastldp.oracles.postprocess` (and ``raw``,
``base_pos``, ``norm``), and reports the full-domain, set-query and top-k
MSE of each, which method wins where, and the paper's conclusions beside the
measured winners::

    from fastldp.experiments.oracles import reproduce
    report = reproduce(quick=True, out="out")
    print(report.tables["paper"])

A user's TOML with ``family = "oracles"`` runs through ``fastldp run`` /
``fastldp report`` (parameters: :mod:`.spec`).
"""

from __future__ import annotations

from functools import partial

from ..quick import resolutions
from ..registry import Experiment, SpecFamily, register_experiment, register_spec_family
from .data import Population, find_real_data, load_population, top_items, zipf_law
from .methods import METHODS, apply_method, build_oracle
from .report import (
    METRICS, PAPER, PAPER_GAIN, build_report, gains, paper_comparison, summarize, winners, wins,
)
from .reproduce import EXPERIMENTS, SPECS_DIR, reproduce, spec_path, with_real_data
from .runner import errors, random_sets, run, run_cell, streams, top_k_items
from .spec import DEFAULTS, expand_grid, is_oracles_spec, load_spec, spec_from_dict
from .table import COLUMNS, OracleResultsTable, is_oracles_table, read_oracle_results

__all__ = [
    "COLUMNS", "DEFAULTS", "EXPERIMENTS", "METHODS", "METRICS", "PAPER", "PAPER_GAIN",
    "OracleResultsTable", "gains",
    "Population", "apply_method", "build_oracle", "build_report", "errors", "expand_grid",
    "find_real_data", "is_oracles_spec", "is_oracles_table", "load_population", "load_spec",
    "paper_comparison", "random_sets", "read_oracle_results", "reproduce", "run", "run_cell",
    "spec_from_dict", "spec_path", "streams", "summarize", "top_items", "top_k_items",
    "winners", "wins", "with_real_data", "zipf_law",
]

for _name, (_spec, _description, _needs_data) in EXPERIMENTS.items():
    register_experiment(Experiment(
        name=_name, family="oracles", description=_description,
        run=partial(reproduce, _name), needs_data=_needs_data, spec=str(SPECS_DIR / _spec),
        takes_repetitions=True, resolution=partial(resolutions, metrics=METRICS)))


def _run_spec(path, out=None, *, workers=1, quick=False, progress=True, data_dir=None,
              retry_failures=False, parquet=False):
    if parquet:
        raise ValueError("--parquet is not available for frequency-oracle specs.")
    return run(path, out, workers=workers, quick=quick, progress=progress, data_dir=data_dir,
               retry_failures=retry_failures)


def _report(results, out=None, *, reference=None, figures=True, slope_min_n=None):
    return build_report(results, out, figures=figures)


register_spec_family(SpecFamily(name="oracles", run=_run_spec, report=_report,
                                owns_table=OracleResultsTable.owns, table=OracleResultsTable,
                                default_reference="raw"))
