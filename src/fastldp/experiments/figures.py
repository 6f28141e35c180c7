"""Figure helpers every family shares (matplotlib, PNG and PDF; no pyplot).

Without matplotlib, :func:`have_matplotlib` says so in one line and the
families draw nothing.
"""

from __future__ import annotations

import sys
from pathlib import Path

__all__ = ["have_matplotlib", "legend"]

_MAX_PANELS = 6


def _panels(n):
    from matplotlib.figure import Figure  # no pyplot: the caller's backend is left alone

    n = max(1, min(n, _MAX_PANELS))
    cols = min(n, 3)
    rows = (n + cols - 1) // cols
    fig = Figure(figsize=(4.2 * cols, 3.4 * rows))
    axes = fig.subplots(rows, cols, squeeze=False)
    flat = list(axes.ravel())
    for ax in flat[n:]:
        ax.set_visible(False)
    return fig, flat[:n]


def _save(fig, out: Path, name: str) -> list[Path]:
    fig.tight_layout()
    paths = []
    for ext in ("png", "pdf"):
        path = out / f"{name}.{ext}"
        fig.savefig(path, dpi=150)
        paths.append(path)
    return paths


def have_matplotlib(log=None) -> bool:
    """True when matplotlib imports; otherwise say so on ``log`` (stderr)."""
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        print("fastldp: matplotlib is not installed, so no figures were drawn "
              "(pip install 'fastldp[plot]').", file=log or sys.stderr)
        return False
    return True


def legend(axes, **kwargs) -> None:
    """A legend on the first panel that has labelled curves (none if no panel has).

    matplotlib warns "No artists with labels found" for a legend of an empty
    panel, which happens when a data file was missing and its rows failed.
    """
    for ax in (axes if hasattr(axes, "__iter__") else [axes]):
        handles, _ = ax.get_legend_handles_labels()
        if handles:
            ax.legend(**kwargs)
            return

