"""``fastldp reproduce rpc-*``: the shipped specs of paper 001's section 8, run and reported.

============== ============================================= ====================
experiment     paper 001                                     spec
============== ============================================= ====================
rpc-frequency  section 8.2, Figure 3                         rpc_frequency.toml
rpc-mean       section 8.2, Figures 4-5                      rpc_mean.toml
rpc-attack     section 8.3, Figures 7-8                      rpc_attack.toml
rpc-real       sections 8.2-8.3, Figures 6 and 9             rpc_real.toml
============== ============================================= ====================

Each spec has a ``[quick]`` variant (``--quick``): the same grid, or a
reduced one, with few repetitions.
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..report import Report
from ..spec import UNSET, repetitions_alias, shipped_spec_path
from .report import build_report
from .runner import run
from .spec import load_spec

__all__ = ["EXPERIMENTS", "spec_path", "reproduce"]

#: Experiment name -> (shipped spec, what it reproduces, needs --data).
EXPERIMENTS = {
    "rpc-frequency": ("rpc_frequency.toml",
                      "paper 001 Figure 3: frequency estimation, RPC against the sparse-vector "
                      "baselines over eps and m", False),
    "rpc-mean": ("rpc_mean.toml",
                 "paper 001 Figures 4-5: mean estimation, values in {-1, 1} and truncated "
                 "normal", False),
    "rpc-attack": ("rpc_attack.toml",
                   "paper 001 Figures 7-8: MAE against the corrupted fraction, additive and "
                   "strong models", False),
    "rpc-real": ("rpc_real.toml",
                 "paper 001 Figures 6 and 9: Commerce, Clothing, Amazon and MovieLens ratings "
                 "(reads the files under --data)", True),
}

SPECS_DIR = Path(__file__).resolve().with_name("specs")


def spec_path(experiment: str) -> Path:
    """Path of the shipped spec of ``experiment`` (a key of :data:`EXPERIMENTS`)."""
    return shipped_spec_path(EXPERIMENTS, SPECS_DIR, experiment, 'sparse-vector')


def reproduce(experiment: str, *, quick: bool = False, out=None, workers: int = 1,
              repetitions: int | None = None, data_dir=None, progress: bool = True,
              figures: bool = True, file=None, retry_failures: bool = False,
              trials=UNSET) -> Report:
    """Run a shipped rpc-* spec, then report it; print the run summary and the report.

    Results go to ``OUT/results.csv`` (default ``results/<experiment>[-quick]``)
    and the report to ``OUT/report/``. A second call resumes; with
    ``retry_failures`` the rows that failed (e.g. a real-data file that was
    missing) are run again.
    ``repetitions`` replaces the spec's count (``trials`` is its deprecated
    name). ``data_dir`` is where relative data paths are read from.
    """
    repetitions = repetitions_alias(repetitions, trials, "reproduce")
    file = file or sys.stdout
    spec = load_spec(spec_path(experiment), quick=quick, repetitions=repetitions)
    out = Path(out) if out is not None else Path("results") / (
        spec.name + ("-quick" if quick else ""))
    print(f"fastldp reproduce {experiment}{' --quick' if quick else ''}: {spec.description} "
          f"({len(spec.seeds)} repetition{'' if len(spec.seeds) == 1 else 's'})", file=file)
    summary = run(spec, out, workers=workers, progress=progress, data_dir=data_dir,
                  retry_failures=retry_failures)
    print(summary, file=file)
    report = build_report(summary.table, out / "report", figures=figures,
                          reference=spec.report.get("reference", "RPC"),
                          figure_methods=spec.report.get("figure_methods"))
    report.failed = summary.failed  # earlier runs' failed rows included
    print(report.text, file=file)
    return report
