"""Honest quick runs: what a ``--quick`` run can and cannot say (issue 37, item 4).

A ``--quick`` grid is sized to finish in a minute or two, not to rank the
methods: ``oracle-consistency --quick`` once found ``base_cut`` best for the
full-domain MSE in 15 of 20 settings while the full run has ``norm_sub``
winning 29 of 40, and printed its table as if it could rank them. The rule,
applied by :func:`fastldp.experiments.reproduce` to every experiment of the
registry (new ones included, with nothing to opt into):

- an experiment whose quick headline agrees with its full run's declares it
  (``Experiment.quick_ranks``, with a ``headline`` function that
  ``tests/test_reproduce_quick.py`` checks against the full runs' published
  headlines, ``tests/data/reproduce_headlines.json``);
- every other quick run prints, above its tables, the paragraph of
  :func:`too_small_banner`: that it is too small to rank the methods, and
  which differences it can resolve, from its own standard errors
  (:func:`resolutions`).

What "resolve" means here: a cell is a (setting, method) pair whose metric
was measured in ``r`` repetitions, with mean ``m`` and standard deviation
``s`` over them; the standard error of its mean is ``s / sqrt(r)``, and the
difference of two such means has standard error ``sqrt(2) s / sqrt(r)``
(two independent cells of equal spread; the methods of one repetition share
their data, which can only make the paired difference's error smaller, so
the figure is the conservative one for an unpaired reading of the table).
A difference below ``2 sqrt(2) s / (sqrt(r) m)`` of the mean is within two
standard errors of zero: the run cannot tell it from noise.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Iterable, Optional

import numpy as np

__all__ = ["BANNER_START", "Resolution", "resolution_of", "resolutions", "summary_resolutions",
           "too_small_banner"]

#: The first words of the paragraph every quick run without ``quick_ranks`` prints.
BANNER_START = "TOO SMALL TO RANK"

# columns of a summary that measure time or bookkeeping, not the error being ranked
_NOT_METRICS = ("time", "runtime", "seconds", "iterations", "negatives", "total", "failed",
                "repetitions", "reps")


@dataclass(frozen=True)
class Resolution:
    """The smallest differences a run's cells resolve, for one metric.

    Attributes
    ----------
    metric : str
        What was measured (a report label, e.g. ``"full-domain MSE"``).
    cells : int
        (setting, method) cells with a standard error (two repetitions or more).
    repetitions : int
        The fewest repetitions among those cells.
    median_percent, worst_percent : float
        Two standard errors of the difference of two cells' means, in percent
        of the cell's mean: the median over the cells, and the largest.
    """

    metric: str
    cells: int
    repetitions: int
    median_percent: float
    worst_percent: float

    def clause(self) -> str:
        """``"<metric> X% in the median cell (Y% in the noisiest of N)"``."""
        return (f"{self.metric} {_percent(self.median_percent)} in the median cell "
                f"({_percent(self.worst_percent)} in the noisiest of {self.cells:,})")


def _percent(x: float) -> str:
    if not math.isfinite(x):
        return "any amount"
    return f"{x:.2g}%" if x < 10 else f"{x:,.0f}%"


def resolution_of(cells: Iterable[tuple[Optional[float], Optional[float], Optional[int]]],
                  metric: str) -> Optional[Resolution]:
    """A :class:`Resolution` from ``(mean, sd, repetitions)`` per cell.

    Cells with fewer than two repetitions, a non-finite sd or a mean of 0
    have no relative standard error and are left out; ``None`` when no cell
    has one.
    """
    relative, reps = [], []
    for mean, sd, r in cells:
        if r is None or not (r >= 2) or mean is None or sd is None:
            continue
        mean, sd = float(mean), float(sd)
        if not (math.isfinite(mean) and math.isfinite(sd)) or mean == 0:
            continue
        # two standard errors of the difference of two independent means of this spread
        relative.append(100.0 * 2.0 * math.sqrt(2.0) * sd / math.sqrt(r) / abs(mean))
        reps.append(int(r))
    if not relative:
        return None
    return Resolution(metric=metric, cells=len(relative), repetitions=min(reps),
                      median_percent=float(np.median(relative)),
                      worst_percent=float(max(relative)))


def summary_resolutions(summary, metrics: Optional[dict] = None) -> list[Resolution]:
    """Resolutions from a family's summary table (one row per setting and method).

    Parameters
    ----------
    summary : list of dict
        Rows with ``<metric>_mean``, ``<metric>_sd`` and ``repetitions`` (or
        ``reps``), as every spec-driven family's ``summarize`` writes them.
    metrics : dict, optional
        Metric column stem -> label, e.g. ``{"mse_full": "full-domain MSE"}``.
        Default: every ``<stem>_mean`` with an ``<stem>_sd`` beside it that
        does not measure time or bookkeeping.
    """
    rows = [r for r in summary or () if isinstance(r, dict)]
    if not rows:
        return []
    if metrics is None:
        stems = [k[:-5] for k in rows[0] if k.endswith("_mean") and f"{k[:-5]}_sd" in rows[0]]
        metrics = {s: s for s in stems
                   if not s.endswith("_s") and not any(w in s for w in _NOT_METRICS)}
    out = []
    for stem, label in metrics.items():
        res = resolution_of(((r.get(f"{stem}_mean"), r.get(f"{stem}_sd"),
                              r.get("repetitions", r.get("reps"))) for r in rows), label)
        if res is not None:
            out.append(res)
    return out


def resolutions(report, metrics: Optional[dict] = None) -> list[Resolution]:
    """The resolutions of a report: from its ``tables["summary"]`` (see
    :func:`summary_resolutions`); an empty list when it has none."""
    tables = getattr(report, "tables", None) or {}
    return summary_resolutions(tables.get("summary"), metrics)


def too_small_banner(experiment: str, found: list[Resolution]) -> str:
    """The paragraph a quick run prints above its tables when it cannot rank the methods.

    Parameters
    ----------
    experiment : str
        The experiment's name.
    found : list of Resolution
        From the run's own standard errors; empty when it has none (one
        repetition per cell), which the paragraph then says.
    """
    head = (f"{BANNER_START}: this is the --quick form of {experiment}, a smoke test of the "
            f"pipeline on a reduced grid. It is too small to rank the methods: its winners, "
            f"win counts and orderings below may differ from the full run's, by noise and "
            f"because a smaller population or grid can change which method wins (run it "
            f"without --quick for the result; the evaluation pages give the full runs' "
            f"tables).")
    if not found:
        return (head + " Its tables carry no standard errors (one repetition per cell, or "
                "none recorded), so it cannot resolve any difference between methods.")
    reps = min(r.repetitions for r in found)
    return (head + f" From its own standard errors ({reps} or more repetitions per cell), a "
            f"difference between two methods smaller than this share of their mean is within "
            f"two standard errors, and the run cannot tell it from noise: "
            + "; ".join(r.clause() for r in found) + ".")
