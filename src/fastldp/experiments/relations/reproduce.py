"""``fastldp reproduce``: the shipped specs of paper 000, section 7, run and reported.

=================== ===================================== ==========================
experiment          paper 000                             spec
=================== ===================================== ==========================
high-information    Figure 3, Table 4                     high_information.toml
theorem-audit       Figure 4, Table 5                     theorem_audit.toml
distributional      Figure 5, Tables 6-7                  distributional.toml
real-data           Figure 6, Table 8 (needs ``--data``)  real_data.toml
ablation            section 7.6 (projection ablation)     projection_ablation.toml
=================== ===================================== ==========================

Each spec has a ``[quick]`` reduced grid (``--quick``).
"""

from __future__ import annotations

import sys
from pathlib import Path

from ..report import Report
from ..spec import UNSET, repetitions_alias, shipped_spec_path
from .report import build_report
from .runner import run
from .spec import load_spec

__all__ = ["EXPERIMENTS", "SPECS_DIR", "spec_path", "reproduce"]

SPECS_DIR = Path(__file__).resolve().with_name("specs")

#: Experiment name -> (shipped spec, what it reproduces, needs --data).
EXPERIMENTS = {
    "high-information": ("high_information.toml",
                         "paper 000 Figure 3 / Table 4: high-information budgets (H1, eps0 = 2), "
                         "n and alpha sweeps", False),
    "theorem-audit": ("theorem_audit.toml",
                      "paper 000 Figure 4 / Table 5: the theorem regime (H0, eps <= 1), n and eps "
                      "sweeps, clean and attacked", False),
    "distributional": ("distributional.toml",
                       "paper 000 Figure 5 / Tables 6-7: the six frozen Table 2 scenarios, eps0 "
                       "and alpha sweeps", False),
    "real-data": ("real_data.toml",
                  "paper 000 Figure 6 / Table 8: MovieLens, Foursquare and Gowalla relations "
                  "(reads the files under --data)", True),
    "ablation": ("projection_ablation.toml",
                 "paper 000 section 7.6: JPRS with and without the final projection", False),
}


def spec_path(experiment: str) -> Path:
    """Path of the shipped spec of ``experiment`` (a key of :data:`EXPERIMENTS`)."""
    return shipped_spec_path(EXPERIMENTS, SPECS_DIR, experiment, 'relation')


def reproduce(experiment: str, *, quick: bool = False, out=None, workers: int = 1,
              data_dir=None, progress: bool = True, figures: bool = True, file=None,
              repetitions: int | None = None, retry_failures: bool = False,
              trials=UNSET) -> Report:
    """Run a shipped relation spec, then report it; print the run summary and the report.

    Results go to ``OUT/results.csv`` (default ``results/<experiment>[-quick]``)
    and the report to ``OUT/report/``. A second call resumes: finished rows
    are kept; with ``retry_failures`` the failed rows of an earlier run are
    dropped and run again. ``data_dir`` is where relative data
    paths of the real-data spec are read from. ``repetitions`` is not taken
    (the relation specs fix their seeds; ``trials`` is its deprecated name).
    """
    repetitions = repetitions_alias(repetitions, trials, "reproduce")
    if repetitions is not None:
        raise ValueError(f"The 'repetitions' parameter of reproduce does not apply to "
                         f"{experiment!r} (its spec fixes the seeds). Got repetitions="
                         f"{repetitions!r} instead.")
    file = file or sys.stdout
    spec = load_spec(spec_path(experiment), quick=quick)
    out = Path(out) if out is not None else Path("results") / (
        spec.name + ("-quick" if quick else ""))
    k = len(spec.seeds)
    print(f"fastldp reproduce {experiment}{' --quick' if quick else ''}: {spec.description} "
          f"({k} repetition{'' if k == 1 else 's'})", file=file)
    summary = run(spec, out, workers=workers, progress=progress, data_dir=data_dir,
                  retry_failures=retry_failures)
    print(summary, file=file)
    settings = dict(spec.report)
    if "ablation" in settings:
        settings["ablation"] = tuple(settings["ablation"])
    report = build_report(summary.table, out / "report", figures=figures, **settings)
    report.failed = summary.failed  # earlier runs' failed rows included
    print(report.text, file=file)
    return report
