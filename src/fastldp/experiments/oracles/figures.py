"""Figures of the consistency comparison: each MSE against eps, a panel per oracle.

Drawn from the summary table with the panels and file conventions of
:mod:`fastldp.experiments.figures` (PNG and PDF; nothing without
matplotlib): one figure per population and metric
(``<metric>_vs_eps_<population>``), a line per post-processing method, the
mean over repetitions with its 95% interval (``1.96 sd / sqrt(repetitions)``)
on a log scale.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ..figures import _MAX_PANELS, _panels, _save, have_matplotlib, legend
from ..report import _group

__all__ = ["make_figures"]

_STYLE: dict[str, dict] = {
    "raw": dict(color="black", lw=2.0, marker="o"),
    "base_pos": dict(color="0.55", ls=":", marker="x"),
    "norm": dict(color="tab:gray", ls="--", marker="+"),
    "base_cut": dict(color="tab:orange", marker="s"),
    "norm_sub": dict(color="tab:green", lw=2.0, marker="D"),
    "project_simplex": dict(color="tab:olive", ls="--", marker="v", alpha=0.7),
    "norm_mul": dict(color="tab:purple", marker="P"),
    "norm_cut": dict(color="tab:red", marker="^"),
    "ibu": dict(color="tab:blue", marker="*"),
}
_LABELS = {"mse_full": "full-domain MSE", "mse_set": "set-query MSE", "mse_topk": "top-k MSE"}


def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


def make_figures(summary, out, *, methods=None, log=None) -> list[Path]:
    """Draw the MSE-against-eps figures the summary supports into ``out``; return the files."""
    if not have_matplotlib(log):
        return []
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    present = list(dict.fromkeys(e["method"] for e in summary))
    methods = [m for m in (methods or present) if m in present]
    files: list[Path] = []
    for (params, d), group in _group(summary, lambda e: (e["population_params"], e["d"])).items():
        panels = [(k, g) for k, g in _group(group, lambda e: e["oracle"]).items()
                  if len({e["eps"] for e in g}) >= 2][:_MAX_PANELS]
        if not panels:
            continue
        for metric, label in _LABELS.items():
            fig, axes = _panels(len(panels))
            for ax, (oracle, g) in zip(axes, panels):
                for method in methods:
                    pts = sorted((e for e in g if e["method"] == method and e["repetitions"]),
                                 key=lambda e: e["eps"])
                    if not pts:
                        continue
                    x = np.array([e["eps"] for e in pts])
                    y = np.array([e[f"{metric}_mean"] for e in pts])
                    sd = [e[f"{metric}_sd"] for e in pts]
                    ci = np.array([1.96 * s / math.sqrt(e["repetitions"])
                                   if e["repetitions"] > 1 and s == s else 0.0
                                   for e, s in zip(pts, sd)])
                    ax.errorbar(x, y, yerr=ci, capsize=2, ms=4, label=method,
                                **_STYLE.get(method, {}))
                ax.set_yscale("log")
                ax.set_xlabel("eps")
                ax.set_ylabel(label)
                ax.set_title(f"{oracle.upper()}, {g[0]['label']}, d={d}", fontsize=9)
            legend(axes, fontsize=7)
            files += _save(fig, out, f"{metric}_vs_eps_{_slug(group[0]['label'])}_d{d}")
    return files
