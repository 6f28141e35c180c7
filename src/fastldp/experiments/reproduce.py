"""``fastldp reproduce``: the shipped specs of paper 000 section 7 and paper 001 section 8.

=================== ===================================== ==========================
experiment          paper                                 spec
=================== ===================================== ==========================
high-information    Figure 3, Table 4                     high_information.toml
theorem-audit       Figure 4, Table 5                     theorem_audit.toml
distributional      Figure 5, Tables 6-7                  distributional.toml
real-data           Figure 6, Table 8                     real_data.toml
ablation            section 7.6 (projection ablation)     projection_ablation.toml
rpc-frequency       paper 001, section 8 (frequencies)    rpc_frequency.toml
rpc-mean            paper 001, section 8 (mean values)    rpc_mean.toml
rpc-attack          paper 001, section 8 (attacks)        rpc_attack.toml
rpc-real            paper 001, section 8.1 (real data)    rpc_real.toml
=================== ===================================== ==========================

Each spec has a ``[quick]`` reduced grid (``--quick``).
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

from .report import Report, build_report
from .runner import run
from .spec import load_spec

__all__ = ["EXPERIMENTS", "spec_path", "reproduce"]

#: Experiment name -> shipped spec file.
EXPERIMENTS = {
    "high-information": "high_information.toml",
    "theorem-audit": "theorem_audit.toml",
    "distributional": "distributional.toml",
    "real-data": "real_data.toml",
    "ablation": "projection_ablation.toml",
    # paper 001, section 8 (run by fastldp.experiments.rpc)
    "rpc-frequency": "rpc_frequency.toml",
    "rpc-mean": "rpc_mean.toml",
    "rpc-attack": "rpc_attack.toml",
    "rpc-real": "rpc_real.toml",
}

SPECS_DIR = Path(__file__).with_name("specs")


def spec_path(experiment: str) -> Path:
    """Path of the shipped spec of ``experiment`` (a key of :data:`EXPERIMENTS`)."""
    if experiment not in EXPERIMENTS:
        raise ValueError(
            f"Unknown experiment {experiment!r}; the experiments are {', '.join(EXPERIMENTS)}."
        )
    return SPECS_DIR / EXPERIMENTS[experiment]


def reproduce(experiment: str, *, quick: bool = False, out=None, workers: int = 1,
              data_dir=None, progress: bool = True, figures: bool = True,
              file=None, trials: int | None = None) -> Report:
    """Run a shipped spec, then report it; print the run summary and the report.

    Results go to ``OUT/results.csv`` (default ``results/<experiment>[-quick]``)
    and the report to ``OUT/report/``. A second call resumes: finished rows
    are kept. ``data_dir`` (default ``$FASTLDP_DATA``) is where relative
    data paths of the real-data spec are read from. The ``rpc-*``
    experiments (paper 001) run through :func:`fastldp.experiments.rpc.reproduce`,
    and only they take ``trials``.
    """
    if experiment.startswith("rpc-"):
        from .rpc import reproduce as reproduce_sparse

        return reproduce_sparse(experiment, quick=quick, out=out, workers=workers,
                                trials=trials, data_dir=data_dir, progress=progress,
                                figures=figures, file=file)
    if trials is not None:
        raise ValueError("The 'trials' parameter of reproduce applies to the rpc-* experiments "
                         f"only. Got trials={trials!r} for {experiment!r} instead.")
    file = file or sys.stdout
    spec = load_spec(spec_path(experiment), quick=quick)
    out = Path(out) if out is not None else Path("results") / (
        spec.name + ("-quick" if quick else ""))
    if data_dir is None:
        data_dir = os.environ.get("FASTLDP_DATA")
    print(f"fastldp reproduce {experiment}{' --quick' if quick else ''}: {spec.description}",
          file=file)
    summary = run(spec, out, workers=workers, progress=progress, data_dir=data_dir)
    print(summary, file=file)
    settings = dict(spec.report)
    if "ablation" in settings:
        settings["ablation"] = tuple(settings["ablation"])
    report = build_report(summary.table, out / "report", figures=figures, **settings)
    print(report.text, file=file)
    print(f"\nTables in {out / 'report'}" + (
        f"; figures: {', '.join(p.name for p in report.figures if p.suffix == '.png')}"
        if report.figures else ""), file=file)
    return report
