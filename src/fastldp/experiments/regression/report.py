"""Tables and figures of a regression results table (paper 002, section C.2-C.3).

:func:`summarize` averages each configuration and method over its seeds
(failed rows left out and counted); the test-MSE ratio is each method's MSE
over the non-private Lasso's on the same seed (section C.2's Kelmarsh
metric). :func:`build_report` pivots the summary along the swept axis
(eps, n, d or m), puts the paper's numbers beside ours where the spec gives
them, writes ``summary.csv``, ``report.txt``, ``report.md`` and, with
matplotlib, ``figures/regression_<axis>.png``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..report import write_report_files
from .runner import read_regression_results

__all__ = ["summarize", "build_report", "RegressionReport", "make_figures"]

_KEY = ("population_params", "n", "m", "d", "k", "sigma", "eps")
_AXES = ("eps", "n", "d", "m")


@dataclass
class RegressionReport:
    """What :func:`build_report` computed and wrote."""

    tables: dict
    text: str
    files: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    failed: int = 0


def _mean_sd(values):
    v = np.asarray([x for x in values if x is not None and not (isinstance(x, float)
                                                                 and math.isnan(x))], float)
    if v.size == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else 0.0


def summarize(rows) -> list[dict]:
    """One entry per configuration and method: means and s.d. over the seeds."""
    lasso = {(r["config"], r["seed"]): r["test_mse"] for r in rows
             if r["method"] == "Lasso" and not r["failure"]}
    groups: dict = {}
    for r in rows:
        groups.setdefault(tuple(r[f] for f in _KEY) + (r["method"],), []).append(r)
    out = []
    for key, group in groups.items():
        ok = [r for r in group if not r["failure"]]
        e = dict(zip(_KEY + ("method",), key))
        e["population"] = group[0]["population"]
        e["reps"], e["failed"] = len(ok), len(group) - len(ok)
        for metric in ("rel_error", "test_mse", "recall", "runtime_s"):
            e[f"{metric}_mean"], e[f"{metric}_sd"] = _mean_sd(r[metric] for r in ok)
        exact = [r["exact_support"] for r in ok if r["exact_support"] is not None]
        e["exact_rate"] = float(np.mean(exact)) if exact else math.nan
        stage = [r["stage1_exact"] for r in ok if r["stage1_exact"] is not None]
        e["stage1_exact_rate"] = float(np.mean(stage)) if stage else math.nan
        ratios = [r["test_mse"] / lasso[(r["config"], r["seed"])] for r in ok
                  if (r["config"], r["seed"]) in lasso and lasso[(r["config"], r["seed"])]]
        e["mse_ratio_mean"], e["mse_ratio_sd"] = _mean_sd(ratios)
        out.append(e)
    return out


def _fmt(x, digits=4):
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    if isinstance(x, float) and (abs(x) >= 1e4 or (abs(x) < 1e-3 and x != 0)):
        return f"{x:.{digits - 1}e}"
    return f"{x:.{digits}g}" if isinstance(x, float) else str(x)


def _axis(summary, axis=None):
    if axis:
        return axis
    for a in _AXES:
        if len({e[a] for e in summary}) > 1:
            return a
    return "eps"


def _pivot(summary, axis, metric, paper=None, pm=True):
    methods = list(dict.fromkeys(e["method"] for e in summary))
    xs = sorted({e[axis] for e in summary if e[axis] is not None})
    cells = {(e[axis], e["method"]): e for e in summary}
    header = [axis] + methods
    paper = paper or {}
    extra = [m for m in paper if m in methods]
    header += [f"{m} (paper)" for m in extra]
    rows = []
    for x in xs:
        line = [_fmt(float(x)) if axis == "eps" else str(x)]
        for m in methods:
            e = cells.get((x, m))
            if e is None or not e["reps"]:
                line.append("-")
            elif pm and f"{metric}_sd" in e:
                line.append(f"{_fmt(e[metric + '_mean'])} ± {_fmt(e[metric + '_sd'], 2)}")
            else:
                line.append(_fmt(e.get(metric, e.get(metric + "_mean"))))
        for m in extra:
            ref = paper[m].get(_fmt(float(x)) if axis == "eps" else str(x))
            if ref is None:
                ref = paper[m].get(str(x))
            line.append("-" if ref is None else _fmt(float(ref)))
        rows.append(line)
    return header, rows


def _text(title, header, rows):
    widths = [max(len(str(h)), *(len(r[i]) for r in rows)) if rows else len(str(h))
              for i, h in enumerate(header)]
    lines = [title, "  ".join(str(h).ljust(w) for h, w in zip(header, widths)),
             "  ".join("-" * w for w in widths)]
    lines += ["  ".join(c.ljust(w) for c, w in zip(r, widths)) for r in rows]
    return "\n".join(lines)


def _md(title, header, rows):
    lines = [f"**{title}**", "", "| " + " | ".join(header) + " |",
             "|" + "|".join("---" for _ in header) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


def build_report(results, out=None, *, axis=None, paper=None, figures: bool = True,
                 name: str = "regression", log=None, **_ignored) -> RegressionReport:
    """Compute the tables of a regression results CSV, write them to ``out``, return the text.

    Parameters
    ----------
    results : path or list of row dicts
    out : path, optional
        Folder for ``summary.csv``, ``report.txt``, ``report.md`` and ``figures/``.
    axis : str, optional
        The swept parameter (default: the first of eps, n, d, m that varies).
    paper : dict, optional
        ``{method: {axis value: number}}``, the paper's relative errors (or, on
        Kelmarsh, MSE ratios) shown beside ours.
    figures : bool
    name : str
        Figure file stem: ``<name>.png``.
    """
    rows = (read_regression_results(results) if isinstance(results, (str, Path))
            else list(results))
    summary = summarize(rows)
    failed = sum(1 for r in rows if r["failure"])
    axis = _axis(summary, axis)
    kelmarsh = any(e["population"] == "kelmarsh" for e in summary)
    reps = len({r['seed'] for r in rows})
    head = (f"{len(rows)} rows, {len(rows) - failed} succeeded, {failed} failed; "
            f"{len({r['config'] for r in rows})} configurations, "
            f"{reps} repetition{'' if reps == 1 else 's'}; axis {axis}.")
    blocks = []
    if kelmarsh:
        for eps in sorted({e["eps"] for e in summary}):
            sub = [e for e in summary if e["eps"] == eps]
            blocks.append((f"Test-MSE ratio to the non-private Lasso, eps = {_fmt(eps)}",)
                          + _pivot(sub, "m", "mse_ratio", (paper or {}).get(_fmt(eps))))
            blocks.append((f"Test MSE, eps = {_fmt(eps)}",) + _pivot(sub, "m", "test_mse"))
    else:
        blocks.append(("Relative coefficient error ||theta_hat - theta|| / ||theta||",)
                      + _pivot(summary, axis, "rel_error", paper))
        blocks.append(("Test MSE",) + _pivot(summary, axis, "test_mse"))
        blocks.append(("Support recall",) + _pivot(summary, axis, "recall", pm=False))
        blocks.append(("Exact support recovery (fraction of repetitions)",)
                      + _pivot(summary, axis, "exact_rate", pm=False))
        blocks.append(("Fit time (s)",) + _pivot(summary, axis, "runtime_s", pm=False))
    if failed:
        reasons: dict = {}
        for r in rows:
            if r["failure"]:
                reasons[(r["method"], r["failure"])] = reasons.get((r["method"], r["failure"]),
                                                                   0) + 1
        blocks.append(("Failures", ["method", "rows", "failure"],
                       [[m, str(c), f] for (m, f), c in sorted(reasons.items())]))
    text = "\n\n".join([head] + [_text(*b) for b in blocks])
    md = "\n\n".join([head] + [_md(*b) for b in blocks])
    report = RegressionReport({"summary": summary}, text, failed=failed)
    if out is not None:
        out = Path(out)
        report.files += write_report_files(out, {"summary": summary},
                                           {"report.txt": text, "report.md": md})
        if figures:
            report.figures = make_figures(summary, out / "figures", axis=axis, name=name,
                                          paper=paper, log=log)
    return report


def make_figures(summary, out, *, axis, name="regression", paper=None, log=None) -> list[Path]:
    """Relative error (or MSE ratio) against ``axis`` per method; support recall beside it."""
    from ..figures import have_matplotlib, legend

    if not summary or not have_matplotlib(log):
        return []
    from matplotlib.figure import Figure

    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    kelmarsh = any(e["population"] == "kelmarsh" for e in summary)
    methods = list(dict.fromkeys(e["method"] for e in summary))
    fig = Figure(figsize=(10, 3.8))
    axes = fig.subplots(1, 2)
    if kelmarsh:
        panels = [("mse_ratio", "test-MSE ratio to Lasso", e) for e in
                  sorted({e["eps"] for e in summary})][:2]
        for ax, (metric, label, eps) in zip(axes, panels):
            for m in methods:
                pts = sorted((e["m"], e["mse_ratio_mean"]) for e in summary
                             if e["method"] == m and e["eps"] == eps and e["reps"])
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=m)
            ax.set_xlabel("m (samples per user)")
            ax.set_ylabel(label)
            ax.set_title(f"Kelmarsh, eps = {eps:g}", fontsize=9)
    else:
        for m in methods:
            pts = sorted((e[axis], e["rel_error_mean"]) for e in summary
                         if e["method"] == m and e["reps"] and e["rel_error_mean"] > 0)
            if pts:
                axes[0].plot(*zip(*pts), marker="o", label=m)
            rec = sorted((e[axis], e["recall_mean"]) for e in summary
                         if e["method"] == m and e["reps"])
            if rec and m != "Lasso":
                axes[1].plot(*zip(*rec), marker="o", label=m)
        for m, ref in (paper or {}).items():
            pts = sorted((float(x), float(v)) for x, v in ref.items())
            if pts:
                axes[0].plot(*zip(*pts), linestyle="--", marker="x", color="black",
                             label=f"{m} (paper)")
        axes[0].set_yscale("log")
        for ax in axes:
            ax.set_xlabel(axis)
            if axis in ("eps", "n", "d"):
                ax.set_xscale("log")
        axes[0].set_ylabel("relative coefficient error")
        axes[1].set_ylabel("support recall")
        axes[0].set_title(f"paper 002, section C.2: {axis} sweep", fontsize=9)
        axes[1].set_title("support recall", fontsize=9)
    for ax in axes:
        ax.grid(True, alpha=0.3)
    legend(axes, fontsize=7)
    fig.tight_layout()
    path = out / f"{name}.png"
    fig.savefig(path, dpi=120)
    return [path]
