"""The family-neutral experiment harness.

Each family keeps its methods, parameters, report text and shipped specs in
``fastldp.experiments.<family>`` (``relations``, ``vectors``, ...) and
registers them in :mod:`fastldp.experiments.registry`. The harness they
share:

- :mod:`.spec` - the TOML spec format, grids and configuration ids;
- :mod:`.runner` - resumable grids, the bounded process pool, seed streams;
- :mod:`.table` - the append-only results CSV;
- :mod:`.report`, :mod:`.figures`, :mod:`.progress` - report helpers,
  figure helpers and the progress bar.

Typical use::

    from fastldp.experiments import run, build_report, reproduce
    summary = run("my_spec.toml", "out", workers=2)      # any family
    build_report("out/results.csv", "out/report")
    reproduce("theorem-audit", quick=True)

or from the shell: ``fastldp run my_spec.toml --out out``, ``fastldp
report out/results.csv`` and ``fastldp reproduce --help``.
"""

from .harness import build_report, run, table_family
from .registry import (
    Experiment,
    SpecFamily,
    experiments,
    get_experiment,
    register_experiment,
    register_spec_family,
)
from .report import Report
from .reproduce import reproduce, spec_path
from .runner import RunSummary, run_grid, seed_streams
from .spec import Cell, Spec, config_id, read_spec_file, spec_family
from .table import ResultsTable, read_results

__all__ = [
    "Cell", "Experiment", "Report", "ResultsTable", "RunSummary", "Spec", "SpecFamily",
    "build_report", "config_id", "experiments", "get_experiment", "read_results",
    "read_spec_file", "register_experiment", "register_spec_family", "reproduce", "run",
    "run_grid", "seed_streams", "spec_family", "spec_path", "table_family",
]
