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
reduced one, with few trials.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from ..report import Report
from .report import build_report
from .runner import run
from .spec import load_spec

__all__ = ["EXPERIMENTS", "spec_path", "reproduce"]

EXPERIMENTS = {
    "rpc-frequency": "rpc_frequency.toml",
    "rpc-mean": "rpc_mean.toml",
    "rpc-attack": "rpc_attack.toml",
    "rpc-real": "rpc_real.toml",
}

SPECS_DIR = Path(__file__).resolve().parent.parent / "specs"


def spec_path(experiment: str) -> Path:
    if experiment not in EXPERIMENTS:
        raise ValueError(f"Unknown experiment {experiment!r}; the experiments are "
                         f"{', '.join(EXPERIMENTS)}.")
    return SPECS_DIR / EXPERIMENTS[experiment]


def reproduce(experiment: str, *, quick: bool = False, out=None, workers: int = 1,
              trials: int | None = None, data_dir=None, progress: bool = True,
              figures: bool = True, file=None) -> Report:
    """Run a shipped rpc-* spec, then report it; print the run summary and the report.

    Results go to ``OUT/results.csv`` (default ``results/<experiment>[-quick]``)
    and the report to ``OUT/report/``. A second call resumes; rows that
    failed (e.g. a real-data file that was missing) are run again.
    ``trials`` replaces the spec's trial count. ``data_dir`` (default
    ``$FASTLDP_DATA``) is where relative data paths are read from.
    """
    file = file or sys.stdout
    spec = load_spec(spec_path(experiment), quick=quick, trials=trials)
    out = Path(out) if out is not None else Path("results") / (
        spec.name + ("-quick" if quick else ""))
    if data_dir is None:
        data_dir = os.environ.get("FASTLDP_DATA")
    print(f"fastldp reproduce {experiment}{' --quick' if quick else ''}: {spec.description} "
          f"({len(spec.seeds)} trials)", file=file)
    summary = run(spec, out, workers=workers, progress=progress, data_dir=data_dir,
                  retry_failures=True)
    print(summary, file=file)
    report = build_report(summary.table, out / "report", figures=figures,
                          reference=spec.report.get("reference", "RPC"),
                          figure_methods=spec.report.get("figure_methods"))
    print(report.text, file=file)
    print(f"\nTables in {out / 'report'}" + (
        f"; figures: {', '.join(p.name for p in report.figures if p.suffix == '.png')}"
        if report.figures else ""), file=file)
    return report
