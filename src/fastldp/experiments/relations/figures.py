"""Figures of a relation results table (matplotlib, PNG and PDF), after paper 000 Figures 3-6.

Each figure is drawn only when the table holds what it shows: sample-size
scaling needs two or more ``n``; attack increments need attacked rows with
clean twins; the privacy sweep needs two or more ``eps0``; the heat map needs
two or more scenarios; the real-data bars need rows on a real population.
Without matplotlib nothing is drawn and one line says so.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ..figures import _MAX_PANELS, _panels, _save, have_matplotlib, legend
from ..report import _group, _ok
from ._labels import scenario_label

__all__ = ["make_figures"]

_REAL = ("movielens", "foursquare", "gowalla")


def _methods(rows):
    seen = []
    for r in rows:
        if r["method"] not in seen:
            seen.append(r["method"])
    return seen


def _n_ticks(ax, ns) -> None:
    from matplotlib.ticker import NullFormatter

    ns = sorted(set(ns))
    ax.set_xticks(ns, [f"{n / 1000:g}k" if n >= 1000 else str(n) for n in ns], fontsize=7)
    ax.xaxis.set_minor_formatter(NullFormatter())


def _scaling(rows, out):
    clean = [r for r in _ok(rows) if r["alpha"] == 0]
    groups = _group(clean, lambda r: (r["population_params"], r["budget"], r["eps0"], r["s"]))
    groups = {k: g for k, g in groups.items() if len({r["n"] for r in g}) >= 2}
    if not groups:
        return []
    fig, axes = _panels(len(groups))
    for ax, ((_, budget, eps0, _s), group) in zip(axes, groups.items()):
        for method in _methods(group):
            by_n = _group([r for r in group if r["method"] == method], lambda r: r["n"])
            ns = sorted(by_n)
            means = [np.mean([r["E_s"] for r in by_n[n]]) for n in ns]
            sds = [np.std([r["E_s"] for r in by_n[n]], ddof=1) if len(by_n[n]) > 1 else 0.0
                   for n in ns]
            ax.errorbar(ns, means, yerr=sds, marker="o", capsize=3, label=method)
        ax.set_xscale("log")
        ax.set_yscale("log")
        _n_ticks(ax, [r["n"] for r in group])
        ax.set_xlabel("n (identities)")
        ax.set_ylabel("E_s (clean), mean ± sd")
        ax.set_title(f"{scenario_label(group[0])}, {budget}, eps0={eps0:g}", fontsize=9)
    legend(axes, fontsize=7)
    return _save(fig, out, "scaling")


_SWEEPS = ("alpha", "n", "eps0")
_FIXED = ("population_params", "budget", "eps0", "n", "alpha", "s", "corruption", "attack")


def _increments(tables, out):
    """Paired increments against each swept axis (alpha first: Figure 3b)."""
    inc = tables["attack_increments"]
    panels = []
    for axis in _SWEEPS:
        others = [f for f in _FIXED if f != axis]
        for key, group in _group(inc, lambda r: tuple(r[f] for f in others)).items():
            if len({r[axis] for r in group}) >= 2:
                panels.append((axis, dict(zip(others, key)), group))
    if not panels:
        return []
    panels = panels[:_MAX_PANELS]
    fig, axes = _panels(len(panels))
    for ax, (axis, fixed, group) in zip(axes, panels):
        for method in _methods(group):
            g = sorted((r for r in group if r["method"] == method), key=lambda r: r[axis])
            x = np.array([r[axis] for r in g], dtype=float)
            y = np.array([r["delta"] for r in g])
            err = np.vstack([y - np.array([r["delta_lo"] for r in g]),
                             np.array([r["delta_hi"] for r in g]) - y])
            ax.errorbar(x, y, yerr=np.nan_to_num(err), marker="o", capsize=3, label=method)
        ax.axhline(0.0, color="0.6", lw=0.8)
        if axis == "n":
            ax.set_xscale("log")
            _n_ticks(ax, [r["n"] for r in group])
        ax.set_xlabel(axis)
        ax.set_ylabel("paired Δ E_s (attacked - clean), 95% CI")
        where = ", ".join(f"{f}={fixed[f]:g}" for f in ("eps0", "n", "alpha")
                          if f != axis and fixed.get(f) is not None)
        ax.set_title(f"{scenario_label(group[0])}, {fixed['budget']}, {where}", fontsize=9)
    legend(axes, fontsize=7)
    return _save(fig, out, "attack_increments")


def _privacy(rows, out):
    good = _ok(rows)
    groups = _group(good, lambda r: (r["n"], r["alpha"], r["budget"], r["s"], r["d1"], r["d2"]))
    groups = {k: g for k, g in groups.items() if len({r["eps0"] for r in g}) >= 2}
    if not groups:
        return []
    chosen = list(groups.items())[:_MAX_PANELS]
    fig, axes = _panels(len(chosen))
    for ax, ((n, alpha, budget, *_), group) in zip(axes, chosen):
        scenarios = len({r["population_params"] for r in group})
        for method in _methods(group):
            g = [r for r in group if r["method"] == method]
            xs, ys, es = [], [], []
            for eps0, at in sorted(_group(g, lambda r: r["eps0"]).items()):
                # scenario means are the units when several scenarios are present
                scen = [np.mean([r["E_s"] for r in s]) for s in
                        _group(at, lambda r: r["population_params"]).values()]
                units = scen if len(scen) > 1 else [r["E_s"] for r in at]
                xs.append(eps0)
                ys.append(np.mean(units))
                es.append(np.std(units, ddof=1) if len(units) > 1 else 0.0)
            ax.errorbar(xs, ys, yerr=es, marker="o", capsize=3, label=method)
        ax.set_yscale("log")
        ax.set_xlabel("eps0")
        ax.set_ylabel("E_s, mean ± sd" + (f" over {scenarios} scenarios" if scenarios > 1 else ""))
        ax.set_title(f"n={n}, alpha={alpha:g}, {budget}", fontsize=9)
    legend(axes, fontsize=7)
    return _save(fig, out, "privacy_sweep")


def _heatmap(tables, out):
    summary = [r for r in tables["summary"] if r["repetitions"] > 0]
    ops = _group(summary, lambda r: (r["n"], r["budget"], r["eps0"], r["alpha"], r["s"]))
    ops = {k: g for k, g in ops.items() if len({r["population_params"] for r in g}) >= 2}
    if not ops:
        return []
    chosen = list(ops.items())[-min(len(ops), 4):]
    fig, axes = _panels(len(chosen))
    for ax, ((n, budget, eps0, alpha, _s), group) in zip(axes, chosen):
        scenarios = list(dict.fromkeys(scenario_label(r) for r in group))
        methods = _methods(group)
        grid = np.full((len(scenarios), len(methods)), np.nan)
        for r in group:
            grid[scenarios.index(scenario_label(r)), methods.index(r["method"])] = r["E_s_mean"]
        from matplotlib.colors import LogNorm

        positive = grid[~np.isnan(grid)]
        norm = LogNorm() if positive.size and positive.min() > 0 else None
        im = ax.imshow(grid, aspect="auto", cmap="viridis", norm=norm)  # losses span decades
        ax.set_xticks(range(len(methods)), methods, rotation=45, ha="right", fontsize=7)
        ax.set_yticks(range(len(scenarios)), scenarios, fontsize=7)
        for i in range(grid.shape[0]):
            for j in range(grid.shape[1]):
                if not np.isnan(grid[i, j]):
                    light = im.norm(grid[i, j]) > 0.6
                    ax.text(j, i, f"{grid[i, j]:.2f}", ha="center", va="center", fontsize=6,
                            color="black" if light else "white")
        ax.set_title(f"E_s: eps0={eps0:g}, alpha={alpha:g}, n={n}", fontsize=9)
        ax.figure.colorbar(im, ax=ax, fraction=0.046)
    return _save(fig, out, "scenario_heatmap")


def _real(tables, out):
    summary = [r for r in tables["summary"] if r["population"] in _REAL and r["repetitions"] > 0]
    if not summary:
        return []
    ops = _group(summary, lambda r: (r["budget"], r["eps0"], r["alpha"]))
    fig, axes = _panels(len(ops))
    for ax, ((budget, eps0, alpha), group) in zip(axes, list(ops.items())[:_MAX_PANELS]):
        datasets = list(dict.fromkeys(scenario_label(r) for r in group))
        methods = _methods(group)
        width = 0.8 / max(1, len(methods))
        for j, method in enumerate(methods):
            g = {scenario_label(r): r for r in group if r["method"] == method}
            x = np.arange(len(datasets)) + (j - (len(methods) - 1) / 2) * width
            y = [g[d]["E_s_mean"] if d in g else np.nan for d in datasets]
            e = [np.nan_to_num(g[d]["E_s_sd"]) if d in g else 0.0 for d in datasets]
            ax.bar(x, y, width, yerr=e, capsize=2, label=method)
        ax.set_xticks(range(len(datasets)), datasets, fontsize=7)
        ax.set_ylabel("E_s")
        ax.set_title(f"real data: eps0={eps0:g}, alpha={alpha:g}, {budget}", fontsize=9)
    legend(axes, fontsize=7)
    return _save(fig, out, "real_data")


def make_figures(rows, tables, out, *, log=None) -> list[Path]:
    """Draw every figure the table supports into ``out``; return the files written."""
    if not have_matplotlib(log):
        return []
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    files: list[Path] = []
    files += _scaling(rows, out)
    files += _increments(tables, out)
    files += _privacy(rows, out)
    files += _heatmap(tables, out)
    files += _real(tables, out)
    return files
