"""Figures of ``fastldp reproduce histograms`` (matplotlib, PNG; imported only when installed)."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ...histograms import C_LOWER, C_UPPER, proportional_gaussian_failure

__all__ = ["draw_all"]


def _figure(cols: int, width: float = 5.2, height: float = 3.9):
    from matplotlib.figure import Figure  # no pyplot: the caller's backend is left alone

    fig = Figure(figsize=(width * cols, height))
    return fig, list(np.atleast_1d(fig.subplots(1, cols)))


def _save(fig, path: Path) -> Path:
    fig.tight_layout()
    fig.savefig(path, dpi=130)
    return path


def _budget(out: Path, tables: dict, mechs: dict) -> Path:
    rows = tables["budget_curve"]
    rs = sorted({row["r"] for row in rows}, reverse=True)
    fig, (left, right) = _figure(2)
    colors = [f"C{i}" for i in range(len(rs))]
    for r, color in zip(rs, colors):
        sel = [row for row in rows if row["r"] == r]
        n = np.array([row["n"] for row in sel], dtype=float)
        left.loglog(n, [row["n2v"] for row in sel], color=color, label=f"r = {r:g}")
        left.axhline(sel[0]["one_over_2sigma2"], color=color, ls="--", lw=0.8)
        left.axhline(sel[0]["two_count_lower_bound"], color=color, ls=":", lw=1.2)
        right.semilogx(n, [row["r2n2v"] for row in sel], color=color, label=f"r = {r:g}")
    left.set_xlabel("count n")
    left.set_ylabel("n^2 v(n)")
    left.set_title("n^2 v(n): shifted-log Gaussian (solid), 1/(2 sigma^2) (dashed),\n"
                   "two-count lower bound (dotted)", fontsize=8)
    left.legend(fontsize=7)
    right.axhline(C_UPPER, color="k", ls="--", lw=0.9, label="1/pi (upper, r -> 0)")
    right.axhline(C_LOWER, color="k", ls=":", lw=1.2, label="pi/(4e^2) (lower, r -> 0)")
    right.axhline(1 / 128, color="0.5", ls=":", lw=1.0, label="1/128 (two-count, r -> 0)")
    right.set_ylim(0, 0.6)
    right.set_xlabel("count n")
    right.set_ylabel("r^2 n^2 v(n)")
    right.set_title("normalized: tends to r^2/(2 sigma^2), between the C* bounds as r -> 0",
                    fontsize=8)
    right.legend(fontsize=7)
    return _save(fig, out / "histograms_budget.png")


def _relative_error(out: Path, tables: dict) -> Path:
    rows = [row for row in tables["relative_error"] if row["x"] >= 1]
    names = []
    for row in rows:
        if row["mechanism"] not in names:
            names.append(row["mechanism"])
    r = rows[0]["r"]
    fig, (left, right) = _figure(2)
    for name, style in zip(names, ["-", "--", "-."]):
        sel = [row for row in rows if row["mechanism"] == name]
        x = [row["x"] for row in sel]
        left.loglog(x, [row["relative_error"] for row in sel], style, label=name)
        right.loglog(x, [row["v"] for row in sel], style, label=name)
    left.axhline(r, color="k", lw=0.7, ls=":", label=f"requirement r = {r:g}")
    left.set_xlabel("count x")
    left.set_ylabel("E|x_hat - x| / max(x, 1)")
    left.set_title(f"relative error against count (r = {r:g})", fontsize=9)
    left.legend(fontsize=7)
    right.set_xlabel("count n")
    right.set_ylabel("zCDP budget v(n)")
    right.set_title("privacy budget of a group's members", fontsize=9)
    right.legend(fontsize=7)
    return _save(fig, out / "histograms_relative_error.png")


def _naive(out: Path, tables: dict, mechs: dict) -> Path:
    fig, (ax,) = _figure(1, width=6.0)
    r = 0.1
    for i, n in enumerate((1, 3, 10)):
        fail = proportional_gaussian_failure(n, r)
        crit = fail.critical_order
        orders = np.concatenate([np.linspace(1.01, crit * (1 - 1e-4), 200), [crit * 1.0001, crit * 1.5]])
        fwd, back = fail.divergences(orders)
        finite = np.isfinite(back)
        ax.semilogy(orders[finite], back[finite] / orders[finite], color=f"C{i}",
                    label=f"N(n+1)||N(n), n = {n}: inf from {crit:.3f}")
        ax.semilogy(orders, fwd / orders, color=f"C{i}", ls=":", lw=0.9)
        ax.axvline(crit, color=f"C{i}", ls="--", lw=0.7)
    ax.set_xlabel("order alpha")
    ax.set_ylabel("D_alpha / alpha")
    ax.set_title("N(n, r^2 n^2) is not zCDP (r = 0.1): one direction is infinite\n"
                 "from alpha = (n+1)^2/(2n+1) (dashed); the other stays finite (dotted)",
                 fontsize=8)
    ax.legend(fontsize=7)
    return _save(fig, out / "histograms_naive_failure.png")


def draw_all(out, tables: dict, mechs: dict) -> list[Path]:
    """Draw the three figures into ``out``; return their paths."""
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    return [_budget(out, tables, mechs), _relative_error(out, tables), _naive(out, tables, mechs)]
