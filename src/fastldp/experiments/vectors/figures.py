"""Figures of paper 001, section 8: MAE against eps (Figures 3-6) and against q (Figures 7-9).

Drawn from the summary table with the panels and file conventions of
:mod:`fastldp.experiments.figures` (PNG and PDF; nothing without
matplotlib). Each point is the mean MAE over repetitions with its 95% interval
(``1.96 sd / sqrt(repetitions)``). Synthetic populations get one figure each with
a panel per ``m``; real datasets share one figure with a panel per dataset.
Colours follow the paper where it names them: RPC green, Collision orange,
PCKV-UE black.
"""

from __future__ import annotations

import math
import re
from pathlib import Path

import numpy as np

from ..figures import _MAX_PANELS, _panels, _save, have_matplotlib, legend
from ..report import _group
from .spec import REAL_KINDS

__all__ = ["make_figures"]

_STYLE = {
    "RPC": dict(color="tab:green", lw=2.0, marker="o"),
    "RPC-minvar": dict(color="tab:red", lw=1.8, ls="-.", marker="h"),
    "RPC-Duchi": dict(color="tab:green", ls="--", marker="v", alpha=0.7),
    "RPC-Piecewise": dict(color="tab:olive", ls=":", marker="^", alpha=0.7),
    "Collision": dict(color="tab:orange", lw=1.6, marker="s"),
    "PCKV-UE": dict(color="black", marker="D"),
    "PCKV-GRR": dict(color="0.55", marker="x"),
    "PrivKVM": dict(color="tab:purple", marker="P"),
    "Succinct": dict(color="tab:blue", marker="*"),
    "Succinct-bigR": dict(color="tab:blue", ls="--", marker="*", alpha=0.6),
}


_LOG_TICKS = [k * 10.0 ** e for e in range(-4, 1) for k in (1, 2, 5)]




def _slug(text: str) -> str:
    return re.sub(r"[^A-Za-z0-9]+", "_", text).strip("_").lower()


def _panel_title(e) -> str:
    if e["population"] in REAL_KINDS:
        return f"{e['label']} (n={e['n']}, d={e['d']}, m={e['m']})"
    return f"{e['label']}, m={e['m']}"


def _curves(ax, entries, x_field, methods):
    for method in methods:
        pts = sorted((e for e in entries if e["method"] == method and e["repetitions"]),
                     key=lambda e: e[x_field])
        if not pts:
            continue
        x = np.array([e[x_field] for e in pts], dtype=float)
        y = np.array([e["mae_mean"] for e in pts])
        ci = np.array([1.96 * e["mae_sd"] / math.sqrt(e["repetitions"])
                       if e["repetitions"] > 1 and e["mae_sd"] == e["mae_sd"] else 0.0 for e in pts])
        ax.errorbar(x, y, yerr=ci, capsize=2, ms=4, label=method, **_STYLE.get(method, {}))


def _figure_key(e):
    return "real" if e["population"] in REAL_KINDS else e["label"]


def _eps_figures(summary, out, methods):
    from matplotlib.ticker import FormatStrFormatter, NullFormatter

    clean = [e for e in summary if e["q_frac"] == 0]
    files = []
    for fig_key, group in _group(clean, _figure_key).items():
        panels = [(k, g) for k, g in _group(group, lambda e: (e["label"], e["m"])).items()
                  if len({e["eps"] for e in g}) >= 2][:_MAX_PANELS]
        if not panels:
            continue
        fig, axes = _panels(len(panels))
        for ax, (_, g) in zip(axes, panels):
            _curves(ax, g, "eps", methods)
            ax.set_yscale("log")
            lo, hi = ax.get_ylim()
            ticks = [t for t in _LOG_TICKS if lo <= t <= hi]
            if len(ticks) >= 2:  # 1-2-5 labels: a decade tick alone is unreadable
                ax.set_yticks(ticks)
                ax.yaxis.set_major_formatter(FormatStrFormatter("%g"))
                ax.yaxis.set_minor_formatter(NullFormatter())
            ax.set_xlabel("eps")
            ax.set_ylabel("MAE")
            ax.set_title(_panel_title(g[0]), fontsize=9)
        legend(axes, fontsize=7)
        files += _save(fig, out, f"mae_vs_eps_{_slug(fig_key)}")
    return files


def _q_figures(summary, out, methods):
    attacked = [e for e in summary if e["q_frac"] > 0]
    clean = [e for e in summary if e["q_frac"] == 0]
    files = []
    for (fig_key, model, attack, target, eps), group in _group(
            attacked, lambda e: (_figure_key(e), e["model"], e["attack"], e["target"],
                                 e["eps"])).items():
        panels = list(_group(group, lambda e: (e["label"], e["m"], e["population_params"]))
                      .items())[:_MAX_PANELS]
        fig, axes = _panels(len(panels))
        for ax, ((_, m, params), g) in zip(axes, panels):
            base = [e for e in clean if e["population_params"] == params and e["m"] == m
                    and e["eps"] == eps]
            _curves(ax, g + base, "q_frac", methods)
            ax.set_xlabel("q / n")
            ax.set_ylabel("MAE")
            ax.set_ylim(bottom=0)
            ax.set_title(_panel_title(g[0]), fontsize=9)
        what = attack + (f" |T|={target}" if attack == "targeted" else "")
        fig.suptitle(f"{model} contamination, {what} attack, eps={eps:g}", fontsize=10)
        legend(axes, fontsize=7)
        name = f"mae_vs_q_{_slug(fig_key)}_{model}_{attack}"
        files += _save(fig, out, name)
    return files


def make_figures(summary, out, *, methods=None, log=None) -> list[Path]:
    """Draw the MAE figures the summary supports into ``out``; return the files written."""
    if not have_matplotlib(log):
        return []
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    present = list(dict.fromkeys(e["method"] for e in summary))
    methods = [m for m in (methods or present) if m in present]
    return _eps_figures(summary, out, methods) + _q_figures(summary, out, methods)
