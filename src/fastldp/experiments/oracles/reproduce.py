"""``fastldp reproduce oracle-consistency``: the shipped spec, run and reported.

================== ================================================ =========================
experiment         Wang et al., NDSS 2020                           spec
================== ================================================ =========================
oracle-consistency the comparison of post-processing methods:       oracle_consistency.toml
                   full-domain, set-query and top-k MSE against eps
================== ================================================ =========================

``--quick`` runs the spec's ``[quick]`` grid (smaller ``n`` and ``d``, four
budgets, ten repetitions). With ``--data DIR`` (or ``$FASTLDP_DATA``) the
same grid also runs on every real file found under ``DIR``
(:func:`fastldp.experiments.oracles.data.find_real_data`: MovieLens ratings,
Gowalla check-ins); without it the run is synthetic only. fastldp ships no
real data set and downloads none.
"""

from __future__ import annotations

import dataclasses
import os
import sys
from pathlib import Path

from ..report import Report
from ..spec import UNSET, Spec, repetitions_alias, shipped_spec_path
from .data import find_real_data
from .report import build_report
from .runner import run
from .spec import load_spec, normalize

__all__ = ["EXPERIMENTS", "SPECS_DIR", "spec_path", "with_real_data", "reproduce"]

#: Experiment name -> (shipped spec, what it reproduces, needs --data).
EXPERIMENTS = {
    "oracle-consistency": (
        "oracle_consistency.toml",
        "Wang et al. NDSS 2020: which consistency post-processing (norm_sub, base_cut, "
        "norm_mul, norm_cut, projection, IBU) wins for full-domain, set-query and top-k MSE "
        "(GRR, OLH, OUE, SS, BLH; Zipf data, real files with --data)", False),
}

SPECS_DIR = Path(__file__).resolve().with_name("specs")


def spec_path(experiment: str) -> Path:
    """Path of the shipped spec of ``experiment`` (a key of :data:`EXPERIMENTS`)."""
    return shipped_spec_path(EXPERIMENTS, SPECS_DIR, experiment, "frequency-oracle")


def with_real_data(spec: Spec, populations: list) -> Spec:
    """``spec`` with each of its grids repeated on the real ``populations`` as well."""
    if not populations:
        return spec
    tables = tuple(normalize("population", p, spec.source) for p in populations)
    extra = tuple({**grid, "population": tables} for grid in spec.grids)
    return dataclasses.replace(spec, grids=spec.grids + extra)


def reproduce(experiment: str = "oracle-consistency", *, quick: bool = False, out=None,
              workers: int = 1, repetitions: int | None = None, data_dir=None,
              progress: bool = True, figures: bool = True, file=None,
              retry_failures: bool = False, trials=UNSET) -> Report:
    """Run the shipped spec, then report it; print the run summary and the report.

    Results go to ``OUT/results.csv`` (default ``results/<experiment>[-quick]``)
    and the report to ``OUT/report/``. A second call resumes. ``repetitions``
    replaces the spec's count (``trials`` is its deprecated name).
    ``data_dir`` (default ``$FASTLDP_DATA``) adds the real files found there.
    """
    repetitions = repetitions_alias(repetitions, trials, "reproduce")
    file = file or sys.stdout
    if data_dir is None:
        data_dir = os.environ.get("FASTLDP_DATA") or None
    spec = load_spec(spec_path(experiment), quick=quick, repetitions=repetitions)
    real = find_real_data(data_dir)
    spec = with_real_data(spec, real)
    out = Path(out) if out is not None else Path("results") / (
        spec.name + ("-quick" if quick else ""))
    print(f"fastldp reproduce {experiment}{' --quick' if quick else ''}: {spec.description} "
          f"({len(spec.seeds)} repetition{'' if len(spec.seeds) == 1 else 's'})", file=file)
    if data_dir is None:
        print("Synthetic data only (no --data folder given).", file=file)
    else:
        print(f"Real data under {data_dir}: "
              + (", ".join(f"{p['kind']} ({p['path']})" for p in real) if real else
                 "none found (MovieLens ratings or Gowalla check-ins); synthetic data only."),
              file=file)
    summary = run(spec, out, workers=workers, progress=progress, data_dir=data_dir,
                  retry_failures=retry_failures)
    print(summary, file=file)
    report = build_report(summary.table, out / "report", figures=figures, log=file)
    report.failed = summary.failed  # earlier runs' failed rows included
    print(report.text, file=file)
    return report
