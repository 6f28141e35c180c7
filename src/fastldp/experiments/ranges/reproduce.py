"""``fastldp reproduce ranges``: range queries, quantiles and numeric distributions, against the papers.

Two sweeps, each averaged over repetitions (fresh privatization of the same
users; the users are drawn once per data set and domain):

1. **Ranges and quantiles** (Cormode, Kulkarni, Srivastava, VLDB 2019):
   over an ordered domain of ``D`` values (the full run: ``D = 2^10 ..
   2^20``), the mean squared error of a range's *fraction* (count / n)
   against the range's length (``1, 4, 16, ...`` up to ``D / 2``, 128
   random ranges of each length, the same for every method), and the
   quantile error (the mean over the deciles of ``|q_est - q_true| / D``,
   both by the documented interpolation rule of :mod:`fastldp.ranges`), for
   the flat baseline (:class:`~fastldp.ranges.FlatRange`, its "auto"
   oracle), the hierarchy with ``B = 4`` (:class:`~fastldp.ranges.HierarchicalHistogram`)
   with and without consistency (the same reports decoded twice), and
   :class:`~fastldp.ranges.HaarHRR`, at ``e^eps = 3``. Data: Zipf(1.1) over
   the values, a Cauchy centred at ``D / 2`` with scale ``D / 16`` (redrawn
   outside the domain), and, with ``--data DIR``, the Age column of the
   Women's E-Commerce Clothing Reviews table (Kaggle; a CSV, plain or
   gzipped, whose name contains ``clothing``), ages as values of
   ``[0, 128)``.
2. **Numeric distributions** (Li et al., SIGMOD 2020): values in ``[0, 1]``
   (Beta(5, 2), the paper's synthetic, and the ages scaled to ``[0, 1]``):
   the Wasserstein-1 distance between the estimated and the empirical
   distribution, the range error (MSE of the fraction in 128 random
   intervals) and the squared error of the mean, for Square Wave with EMS
   (:class:`~fastldp.ranges.SquareWave`, 1,024 bins), binning into 64
   bins plus OUE (negative counts clipped, then normalized) and, for the
   mean only, Piecewise (:class:`~fastldp.oracles.Piecewise`, which reports
   nothing else).

The papers' conclusions are checked in shape (``checks.csv``): a check
compares two methods at one setting and agrees or disagrees only where their
difference exceeds two standard errors of the difference; otherwise it is
"not resolved". A resolved disagreement is a failed check (the command exits
non-zero). The crossover (the shortest range length from which the best
tree method beats the flat baseline) and HaarHRR against the hierarchy are
reported, not checked.

Tables written to ``out``: ``ranges.csv``, ``quantiles.csv``,
``numeric.csv``, ``summary.csv`` (every cell: mean, sd, repetitions),
``checks.csv``, ``report.txt``; figures (matplotlib): ``ranges_mse.png``,
``quantiles.png``, ``numeric.png`` (and PDFs).
"""

from __future__ import annotations

import csv
import gzip
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ...oracles import Piecewise
from ...ranges import FlatRange, HaarHRR, HierarchicalHistogram, SquareWave
from ...ranges._base import quantile_from_cdf

__all__ = ["RangesResult", "reproduce", "GRIDS", "RANGE_METHODS", "load_ages",
           "PAPER_CONCLUSIONS"]

#: the full and the quick grids
GRIDS: dict[str, dict[str, Any]] = {
    "full": {"domains": [2**10, 2**12, 2**14, 2**16, 2**18, 2**20], "n": 1_000_000,
             "repetitions": 5, "epsilon": math.log(3.0), "ranges_per_length": 128,
             "numeric_epsilons": [0.5, 1.0, 2.0, 4.0], "numeric_n": 100_000,
             "numeric_repetitions": 5, "seed": 20261205},
    "quick": {"domains": [2**8, 2**10], "n": 50_000, "repetitions": 3,
              "epsilon": math.log(3.0), "ranges_per_length": 128,
              "numeric_epsilons": [1.0, 4.0], "numeric_n": 20_000, "numeric_repetitions": 3,
              "seed": 20261205},
}

#: the range methods, in the order of the tables
RANGE_METHODS = ("flat", "HH B=4", "HH B=4 no consistency", "HaarHRR")
TREE_METHODS = ("HH B=4", "HaarHRR")
NUMERIC_METHODS = ("SW-EMS", "binning+OUE", "Piecewise")
#: the ages' domain: ages are values of [0, AGE_DOMAIN)
AGE_DOMAIN = 128
NUMERIC_BINS, OUE_BINS = 1024, 64
DECILES = np.linspace(0.1, 0.9, 9)

PAPER_CONCLUSIONS = (
    "Cormode et al. (VLDB 2019): the flat oracle's range error grows with the range's length, "
    "hierarchical histograms (B = 4, consistency) and HaarHRR do not, so the tree methods win "
    "beyond short ranges; consistency improves the hierarchy; HaarHRR is close to the best "
    "hierarchy; quantiles follow the long ranges. Li et al. (SIGMOD 2020): Square Wave with "
    "EMS beats binning plus an oracle in Wasserstein distance and range queries.")


@dataclass
class RangesResult:
    """What :func:`reproduce` returns: ``text``, ``failed`` (checks), files, figures and tables."""

    text: str
    failed: int
    files: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    tables: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------ data
def zipf_values(n: int, D: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` values of ``[0, D)`` with ``P(v) ~ (v + 1)^-1.1``."""
    w = 1.0 / np.arange(1, D + 1) ** 1.1
    return rng.choice(D, size=n, p=w / w.sum()).astype(np.int64)


def cauchy_values(n: int, D: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` values: Cauchy(D / 2, D / 16), floored, redrawn outside ``[0, D)``."""
    out = np.empty(0, dtype=np.int64)
    while out.size < n:
        draw = np.floor(D / 2 + (D / 16) * rng.standard_cauchy(2 * n))
        out = np.concatenate([out, draw[(draw >= 0) & (draw < D)].astype(np.int64)])
    return out[:n]


def find_clothing(data_dir) -> Optional[Path]:
    """The clothing CSV in ``data_dir`` (a name containing ``clothing``), or ``None``."""
    if data_dir is None:
        return None
    found = sorted(p for p in Path(data_dir).expanduser().iterdir()
                   if "clothing" in p.name.lower() and p.name.lower().endswith((".csv", ".csv.gz")))
    return found[0] if found else None


def load_ages(path) -> np.ndarray:
    """The Age column of the clothing table (int64; rows without an integer age dropped)."""
    path = Path(path)
    opener = gzip.open if path.suffix == ".gz" else open
    ages = []
    with opener(path, "rt", newline="", encoding="utf-8") as f:
        for row in csv.DictReader(f):
            text = (row.get("Age") or "").strip()
            if text.isdigit():
                ages.append(int(text))
    if not ages:
        raise ValueError(f"{path} has no 'Age' column with integer ages")
    arr = np.asarray(ages, dtype=np.int64)
    if arr.max() >= AGE_DOMAIN:
        raise ValueError(f"{path}: ages must be below {AGE_DOMAIN}; got {int(arr.max())}")
    return arr


# ------------------------------------------------------------------------------ sweep 1
def range_lengths(D: int) -> list:
    """``1, 4, 16, ...`` below ``D / 2``, then ``D / 2``."""
    out, L = [], 1
    while L < D // 2:
        out.append(L)
        L *= 4
    return out + [D // 2]


def _mechanisms(D: int, eps: float, seed: int) -> dict:
    return {"flat": FlatRange(epsilon=eps, domain_size=D, codebook_seed=seed),
            "HH B=4": HierarchicalHistogram(epsilon=eps, domain_size=D, branching=4,
                                            codebook_seed=seed),
            "HH B=4 no consistency": HierarchicalHistogram(
                epsilon=eps, domain_size=D, branching=4, consistency=False, codebook_seed=seed),
            "HaarHRR": HaarHRR(epsilon=eps, domain_size=D, codebook_seed=seed)}


def range_sweep(name: str, values: np.ndarray, D: int, grid: dict, rng: np.random.Generator,
                log) -> tuple:
    """Rows of range MSE by length and of quantile error, for every method (module docstring)."""
    eps, reps, n = grid["epsilon"], grid["repetitions"], values.shape[0]
    lengths = range_lengths(D)
    per = grid["ranges_per_length"]
    starts = [rng.integers(0, D - L + 1, per) for L in lengths]
    prefix = np.concatenate([[0], np.cumsum(np.bincount(values, minlength=D))])
    truth = [(prefix[s + L] - prefix[s]) / n for s, L in zip(starts, lengths)]
    true_q = quantile_from_cdf(prefix[1:] / n, DECILES)
    mechs = _mechanisms(D, eps, int(rng.integers(0, 2**31)))
    sq = {m: np.zeros((reps, len(lengths))) for m in RANGE_METHODS}
    qerr = {m: np.zeros(reps) for m in RANGE_METHODS}
    seconds = {m: 0.0 for m in RANGE_METHODS}
    for r in range(reps):
        seed = int(rng.integers(0, 2**63))
        reports = {}
        for m in RANGE_METHODS:
            t = time.perf_counter()
            source = "HH B=4" if m == "HH B=4 no consistency" else m
            if source not in reports:  # the raw hierarchy decodes the same reports
                reports[source] = mechs[source].privatize(values, rng=seed)
            est = mechs[m].estimate(reports[source])
            for i, (s, L) in enumerate(zip(starts, lengths)):
                sq[m][r, i] = np.mean((est.range_count(s, s + L - 1) / n - truth[i]) ** 2)
            qerr[m][r] = np.mean(np.abs(est.quantile(DECILES) - true_q)) / D
            seconds[m] += time.perf_counter() - t
        if log is not None:
            print(f"ranges: {name} D=2^{D.bit_length() - 1} repetition {r + 1}/{reps}",
                  file=log, flush=True)
    rows, qrows = [], []
    for m in RANGE_METHODS:
        for i, L in enumerate(lengths):
            rows.append({"data": name, "D": D, "length": L, "method": m,
                         "mse_mean": float(sq[m][:, i].mean()),
                         "mse_sd": float(sq[m][:, i].std(ddof=1)) if reps > 1 else float("nan"),
                         "repetitions": reps})
        qrows.append({"data": name, "D": D, "method": m, "qerr_mean": float(qerr[m].mean()),
                      "qerr_sd": float(qerr[m].std(ddof=1)) if reps > 1 else float("nan"),
                      "repetitions": reps, "seconds_per_run": seconds[m] / reps})
    return rows, qrows


# ------------------------------------------------------------------------------ sweep 2
def _wasserstein(cdf_est, sorted_values: np.ndarray, grid_points: np.ndarray) -> float:
    """``int_0^1 |F_est - F|`` on a fine grid (trapezoids), F the empirical CDF."""
    F = np.searchsorted(sorted_values, grid_points, side="right") / sorted_values.shape[0]
    gap = np.abs(cdf_est(grid_points) - F)
    return float(np.sum((gap[1:] + gap[:-1]) / 2 * np.diff(grid_points)))


def _binned_cdf(p: np.ndarray):
    """The CDF of a histogram over equal bins of ``[0, 1]``, linear within each bin."""
    d = p.shape[0]
    cum = np.concatenate([[0.0], np.cumsum(p)])

    def cdf(x):
        pos = np.asarray(x) * d
        i = np.minimum(np.floor(pos).astype(np.int64), d - 1)
        return cum[i] + (pos - i) * p[i]
    return cdf


def numeric_sweep(name: str, values: np.ndarray, grid: dict, rng: np.random.Generator,
                  log) -> list:
    """Rows of Wasserstein-1, range MSE and mean squared error per method and epsilon."""
    reps, n = grid["numeric_repetitions"], values.shape[0]
    srt = np.sort(values)
    points = np.linspace(0.0, 1.0, 4097)
    lo = rng.uniform(0.0, 0.9, 128)
    hi = np.minimum(lo + rng.uniform(0.02, 0.5, 128), 1.0)
    true_frac = (np.searchsorted(srt, hi, side="right") - np.searchsorted(srt, lo, side="left")) / n
    true_mean = float(values.mean())
    rows = []
    for eps in grid["numeric_epsilons"]:
        res: dict = {m: {"w1": [], "range_mse": [], "mean_se": []} for m in NUMERIC_METHODS}
        for r in range(reps):
            seed = int(rng.integers(0, 2**63))
            sw = SquareWave(epsilon=eps, bins=NUMERIC_BINS)
            est = sw.estimate(sw.privatize(values, rng=seed))
            cdf = _binned_cdf(est.distribution)
            res["SW-EMS"]["w1"].append(_wasserstein(cdf, srt, points))
            res["SW-EMS"]["range_mse"].append(float(np.mean((cdf(hi) - cdf(lo) - true_frac) ** 2)))
            res["SW-EMS"]["mean_se"].append((est.mean() - true_mean) ** 2)
            oue = FlatRange(epsilon=eps, domain_size=OUE_BINS, oracle="oue", codebook_seed=seed)
            bins = np.minimum((values * OUE_BINS).astype(np.int64), OUE_BINS - 1)
            counts = np.clip(oue.estimate(oue.privatize(bins, rng=seed)).counts, 0.0, None)
            p = counts / counts.sum() if counts.sum() > 0 else np.full(OUE_BINS, 1 / OUE_BINS)
            cdf = _binned_cdf(p)
            res["binning+OUE"]["w1"].append(_wasserstein(cdf, srt, points))
            res["binning+OUE"]["range_mse"].append(
                float(np.mean((cdf(hi) - cdf(lo) - true_frac) ** 2)))
            res["binning+OUE"]["mean_se"].append(
                (float(p @ ((np.arange(OUE_BINS) + 0.5) / OUE_BINS)) - true_mean) ** 2)
            pm = Piecewise(epsilon=eps)
            mean = (float(np.mean(pm.privatize(2.0 * values - 1.0, rng=seed))) + 1.0) / 2.0
            res["Piecewise"]["mean_se"].append((mean - true_mean) ** 2)
        for m in NUMERIC_METHODS:
            row: dict = {"data": name, "epsilon": eps, "method": m, "repetitions": reps}
            for k, v in res[m].items():
                row[f"{k}_mean"] = float(np.mean(v)) if v else float("nan")
                row[f"{k}_sd"] = float(np.std(v, ddof=1)) if len(v) > 1 else float("nan")
            rows.append(row)
        if log is not None:
            print(f"numeric: {name} eps={eps:g} done", file=log, flush=True)
    return rows


# ------------------------------------------------------------------------------ checks
def _compare(a: dict, b: dict, stem: str) -> tuple:
    """(a's mean < b's, resolved): resolved when the gap exceeds 2 standard errors of it."""
    ma, mb = a[f"{stem}_mean"], b[f"{stem}_mean"]
    se = math.hypot(a[f"{stem}_sd"], b[f"{stem}_sd"]) / math.sqrt(min(a["repetitions"],
                                                                      b["repetitions"]))
    return ma < mb, bool(abs(ma - mb) > 2 * se)


def _check(claim: str, setting: str, better: dict, worse: dict, stem: str) -> dict:
    wins, resolved = _compare(better, worse, stem)
    verdict = ("agrees" if wins else "disagrees") if resolved else "not resolved"
    return {"claim": claim, "setting": setting, "better": better["method"],
            "worse": worse["method"], "metric": stem, "better_value": better[f"{stem}_mean"],
            "worse_value": worse[f"{stem}_mean"], "verdict": verdict,
            "ok": verdict != "disagrees"}


def checks(ranges: list, quantiles: list, numeric: list) -> list:
    """The papers' conclusions at every setting (module docstring)."""
    out = []
    by = {(r["data"], r["D"], r["length"], r["method"]): r for r in ranges}
    for (data, D) in sorted({(r["data"], r["D"]) for r in ranges}):
        L = max(r["length"] for r in ranges if r["data"] == data and r["D"] == D)
        best = min((by[(data, D, L, m)] for m in TREE_METHODS), key=lambda r: r["mse_mean"])
        out.append(_check("a tree method beats flat on long ranges", f"{data} D={D} L={L}",
                          best, by[(data, D, L, "flat")], "mse"))
        pooled = {}
        for m in ("HH B=4", "HH B=4 no consistency"):
            rows = [r for r in ranges if r["data"] == data and r["D"] == D and r["method"] == m]
            pooled[m] = {"method": m, "repetitions": rows[0]["repetitions"],
                         "mse_mean": float(np.mean([r["mse_mean"] for r in rows])),
                         "mse_sd": float(np.sqrt(np.mean([r["mse_sd"] ** 2 for r in rows])))}
        out.append(_check("consistency improves the hierarchy (all lengths pooled)",
                          f"{data} D={D}", pooled["HH B=4"], pooled["HH B=4 no consistency"],
                          "mse"))
    qby = {(r["data"], r["D"], r["method"]): r for r in quantiles}
    for (data, D) in sorted({(r["data"], r["D"]) for r in quantiles}):
        best = min((qby[(data, D, m)] for m in TREE_METHODS), key=lambda r: r["qerr_mean"])
        out.append(_check("a tree method has the smaller quantile error", f"{data} D={D}",
                          best, qby[(data, D, "flat")], "qerr"))
    nby = {(r["data"], r["epsilon"], r["method"]): r for r in numeric}
    for (data, eps) in sorted({(r["data"], r["epsilon"]) for r in numeric}):
        for stem, what in (("w1", "Wasserstein-1"), ("range_mse", "range error")):
            out.append(_check(f"SW-EMS beats binning+OUE in {what}", f"{data} eps={eps:g}",
                              nby[(data, eps, "SW-EMS")], nby[(data, eps, "binning+OUE")], stem))
    return out


def crossovers(ranges: list) -> list:
    """Per data set and ``D``: the shortest length from which the best tree method beats flat."""
    out = []
    for (data, D) in sorted({(r["data"], r["D"]) for r in ranges}):
        rows = [r for r in ranges if r["data"] == data and r["D"] == D]
        lengths = sorted({r["length"] for r in rows})
        mse = {(r["length"], r["method"]): r["mse_mean"] for r in rows}
        tree_wins = [min(mse[(L, m)] for m in TREE_METHODS) < mse[(L, "flat")] for L in lengths]
        cross = next((L for i, L in enumerate(lengths) if all(tree_wins[i:])), None)
        haar = sum(mse[(L, "HaarHRR")] < mse[(L, "HH B=4")] for L in lengths)
        out.append({"data": data, "D": D, "crossover_length": cross,
                    "flat_wins_at_length_1": not tree_wins[0],
                    "haar_beats_hh_lengths": f"{haar}/{len(lengths)}"})
    return out


# ------------------------------------------------------------------------------ report
def _write_csv(path: Path, rows: list) -> Path:
    keys: list = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    with open(path, "w", newline="") as f:
        writer = csv.DictWriter(f, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _report(grid, ranges, quantiles, numeric, check_rows, cross, quick, seconds, notes) -> str:
    lines = [f"fastldp reproduce ranges{' --quick' if quick else ''}: {seconds:.0f} s", "",
             PAPER_CONCLUSIONS, "", *notes, "",
             f"Range MSE of the fraction (count / n), n = {grid['n']:,}, e^eps = "
             f"{math.exp(grid['epsilon']):.3g}, {grid['repetitions']} repetitions, "
             f"{grid['ranges_per_length']} ranges per length:"]
    for (data, D) in sorted({(r["data"], r["D"]) for r in ranges}, key=lambda k: (k[0], k[1])):
        rows = [r for r in ranges if r["data"] == data and r["D"] == D]
        lengths = sorted({r["length"] for r in rows})
        mse = {(r["length"], r["method"]): r["mse_mean"] for r in rows}
        lines.append(f"  {data}, D = 2^{D.bit_length() - 1}")
        lines.append("    " + f"{'length':>8}" + "".join(f"{m:>23}" for m in RANGE_METHODS))
        for L in lengths:
            lines.append("    " + f"{L:>8}" + "".join(f"{mse[(L, m)]:>23.3e}"
                                                     for m in RANGE_METHODS))
    lines += ["", "Quantile error (mean over the deciles of |q_est - q| / D):",
              "    " + f"{'data':<10}{'D':>9}" + "".join(f"{m:>23}" for m in RANGE_METHODS)]
    qby = {(r["data"], r["D"], r["method"]): r["qerr_mean"] for r in quantiles}
    for (data, D) in sorted({(r["data"], r["D"]) for r in quantiles}):
        lines.append("    " + f"{data:<10}{'2^' + str(D.bit_length() - 1):>9}"
                     + "".join(f"{qby[(data, D, m)]:>23.3e}" for m in RANGE_METHODS))
    lines += ["", "Crossover: the shortest range length from which the best tree method "
              "(HH B=4 or HaarHRR) beats flat at every longer length; HaarHRR vs HH B=4:"]
    for c in cross:
        lines.append(f"    {c['data']:<10} D = 2^{c['D'].bit_length() - 1}: crossover at "
                     f"length {c['crossover_length']}, flat wins at length 1: "
                     f"{c['flat_wins_at_length_1']}, HaarHRR beats HH B=4 at "
                     f"{c['haar_beats_hh_lengths']} lengths")
    lines += ["", f"Numeric distributions (n = {grid['numeric_n']:,}, "
              f"{grid['numeric_repetitions']} repetitions; SW-EMS {NUMERIC_BINS} bins, "
              f"binning+OUE {OUE_BINS} bins, Piecewise: the mean only):",
              "    " + f"{'data':<10}{'eps':>5}{'method':>13}{'W1':>11}{'range MSE':>11}"
              f"{'mean SE':>11}"]
    for r in numeric:
        lines.append("    " + f"{r['data']:<10}{r['epsilon']:>5g}{r['method']:>13}"
                     f"{r['w1_mean']:>11.3e}{r['range_mse_mean']:>11.3e}{r['mean_se_mean']:>11.3e}")
    agree = sum(c["verdict"] == "agrees" for c in check_rows)
    unresolved = sum(c["verdict"] == "not resolved" for c in check_rows)
    failed = [c for c in check_rows if not c["ok"]]
    lines += ["", f"Checks against the papers: {agree} agree, {unresolved} not resolved "
              f"(within two standard errors), {len(failed)} disagree, of {len(check_rows)}."]
    for c in failed:
        lines.append(f"    DISAGREES: {c['claim']} at {c['setting']}: {c['better']} "
                     f"{c['better_value']:.3e} vs {c['worse']} {c['worse_value']:.3e}")
    return "\n".join(lines) + "\n"


def _figures(out: Path, ranges: list, quantiles: list, numeric: list) -> list:
    from ..figures import _panels, _save, legend

    files = []
    sets = sorted({r["data"] for r in ranges})
    fig, axes = _panels(len(sets))
    for ax, data in zip(axes, sets):
        D = max(r["D"] for r in ranges if r["data"] == data)
        for m in RANGE_METHODS:
            rows = sorted((r for r in ranges if r["data"] == data and r["D"] == D
                           and r["method"] == m), key=lambda r: r["length"])
            ax.loglog([r["length"] for r in rows], [r["mse_mean"] for r in rows], "o-", label=m)
        ax.set_title(f"{data}, D = 2^{D.bit_length() - 1}")
        ax.set_xlabel("range length")
        ax.set_ylabel("MSE of the range fraction")
    legend(axes, fontsize=7)
    files += _save(fig, out, "ranges_mse")
    fig, axes = _panels(len(sets))
    for ax, data in zip(axes, sets):
        for m in RANGE_METHODS:
            rows = sorted((r for r in quantiles if r["data"] == data and r["method"] == m),
                          key=lambda r: r["D"])
            ax.semilogy([math.log2(r["D"]) for r in rows], [r["qerr_mean"] for r in rows],
                        "o-", label=m)
        ax.set_title(data)
        ax.set_xlabel("log2 D")
        ax.set_ylabel("quantile error / D")
    legend(axes, fontsize=7)
    files += _save(fig, out, "quantiles")
    nsets = sorted({r["data"] for r in numeric})
    fig, axes = _panels(len(nsets))
    for ax, data in zip(axes, nsets):
        for m in ("SW-EMS", "binning+OUE"):
            rows = [r for r in numeric if r["data"] == data and r["method"] == m]
            ax.semilogy([r["epsilon"] for r in rows], [r["w1_mean"] for r in rows], "o-",
                        label=m)
        ax.set_title(data)
        ax.set_xlabel("epsilon")
        ax.set_ylabel("Wasserstein-1")
    legend(axes, fontsize=7)
    files += _save(fig, out, "numeric")
    return files


def reproduce(*, quick: bool = False, out=None, workers: int = 1, data_dir=None,
              progress: bool = True, figures: bool = True, file=None,
              repetitions: Optional[int] = None) -> RangesResult:
    """Run the range and numeric evaluation; write its tables, figures and report.

    Parameters
    ----------
    quick : bool
        The quick grid of :data:`GRIDS` (``D = 2^8, 2^10``; under a minute on 2 cores).
    out : path, optional
        Output folder (default ``results/ranges`` or ``results/ranges-quick``).
    workers : int
        Accepted for the common experiment interface; unused (one process).
    data_dir : path, optional
        A folder holding the clothing CSV (module docstring); without one,
        the synthetic data only (the report says so).
    progress : bool
        Print a line per finished step on stderr.
    figures : bool
        Draw the figures (needs matplotlib; without it, one line says so).
    file : text stream, optional
        Where to print the report (default stdout).
    repetitions : int, optional
        Replace the grid's repetitions (both sweeps).
    """
    from ..figures import have_matplotlib

    start = time.perf_counter()
    grid = dict(GRIDS["quick" if quick else "full"])
    if repetitions is not None:
        grid["repetitions"] = grid["numeric_repetitions"] = int(repetitions)
    out = Path(out) if out is not None else Path("results") / (
        "ranges-quick" if quick else "ranges")
    out.mkdir(parents=True, exist_ok=True)
    log = sys.stderr if progress else None
    rng = np.random.default_rng(grid["seed"])
    notes = []
    ranges: list = []
    quantiles: list = []
    for D in grid["domains"]:
        for name, draw in (("zipf", zipf_values), ("cauchy", cauchy_values)):
            rows, qrows = range_sweep(name, draw(grid["n"], D, rng), D, grid, rng, log)
            ranges += rows
            quantiles += qrows
    numeric = numeric_sweep("beta(5,2)", rng.beta(5.0, 2.0, grid["numeric_n"]), grid, rng, log)
    clothing = find_clothing(data_dir)
    if clothing is not None:
        ages = load_ages(clothing)
        rows, qrows = range_sweep("age", ages, AGE_DOMAIN, grid, rng, log)
        ranges += rows
        quantiles += qrows
        scaled = (ages - ages.min()) / max(int(ages.max() - ages.min()), 1)
        numeric += numeric_sweep("age", scaled.astype(np.float64), grid, rng, log)
        notes.append(f"age: {ages.size:,} ages ({int(ages.min())} to {int(ages.max())}) of "
                     f"{clothing.name}: ranges over [0, {AGE_DOMAIN}), and scaled to [0, 1] "
                     f"for the numeric sweep")
    else:
        notes.append("age: no table (pass --data DIR with the Women's E-Commerce Clothing "
                     "Reviews CSV for the real-data rows)")
    check_rows = checks(ranges, quantiles, numeric)
    cross = crossovers(ranges)
    summary = ([{"setting": f"{r['data']} D={r['D']} L={r['length']}", "method": r["method"],
                 "mse_mean": r["mse_mean"], "mse_sd": r["mse_sd"],
                 "repetitions": r["repetitions"]} for r in ranges]
               + [{"setting": f"{r['data']} D={r['D']}", "method": r["method"],
                   "qerr_mean": r["qerr_mean"], "qerr_sd": r["qerr_sd"],
                   "repetitions": r["repetitions"]} for r in quantiles]
               + [{"setting": f"{r['data']} eps={r['epsilon']:g}", "method": r["method"],
                   "w1_mean": r["w1_mean"], "w1_sd": r["w1_sd"],
                   "repetitions": r["repetitions"]} for r in numeric
                  if r["method"] != "Piecewise"])
    tables = {"ranges": ranges, "quantiles": quantiles, "numeric": numeric, "summary": summary,
              "checks": check_rows, "crossovers": cross}
    files = [_write_csv(out / f"{name}.csv", rows) for name, rows in tables.items() if rows]
    drawn = _figures(out, ranges, quantiles, numeric) if figures and have_matplotlib(log) else []
    failed = sum(not c["ok"] for c in check_rows)
    text = _report(grid, ranges, quantiles, numeric, check_rows, cross, quick,
                   time.perf_counter() - start, notes)
    (out / "report.txt").write_text(text)
    files.append(out / "report.txt")
    print(text, end="", file=file or sys.stdout)
    return RangesResult(text=text, failed=failed, files=files, figures=drawn, tables=tables)
