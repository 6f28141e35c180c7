"""``fastldp reproduce histograms``: the numbers and figures of paper 003.

Everything is computed from :mod:`fastldp.histograms` (closed forms,
adaptive quadrature and one seeded Monte Carlo check); it runs in seconds.

Tables written to ``out`` (CSV with a header):

- ``calibration.csv``: ``(sigma, c)`` per ``r`` and drift, the certificate,
  the worst ratio ``E|x_hat - x| / (r max(x, 1))`` by quadrature on a grid
  from 0 to 1e15, ``v(n)`` at a few counts, ``n^2 v(n)`` at ``n = 10^6``
  against ``1/(2 sigma^2)`` and the two-count lower bound;
- ``budget_curve.csv``: ``v(n)``, ``n^2 v(n)``, ``r^2 n^2 v(n)`` against ``n``;
- ``constants.csv``: the leading constants (``1/pi``, ``pi/(4e^2)``, their
  ratio, ``1/128``, the mechanism's ``r^2 lim n^2 v(n)`` per ``r``);
- ``relative_error.csv``: relative error and budget against the count for the
  mechanism and the two equal-noise baselines;
- ``naive_failure.csv``: where ``N(n, r^2 n^2)`` becomes infinitely divergent;
- ``drift.csv``: the drift minimizing ``E|exp(mu + sigma Z) - 1|``;
- ``monte_carlo.csv``: simulated against exact expected errors;
- ``checks.csv``: every check with its outcome (``failed`` counts the failures).
"""

from __future__ import annotations

import csv
import io
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from scipy.optimize import minimize_scalar

from ..._validation import check_int
from ...histograms import (
    C_LOWER,
    C_UPPER,
    EqualNoiseGaussian,
    ShiftedLogGaussian,
    leading_coefficient_ratio,
    mechanism_leading_constant,
    multiplicative_error,
    proportional_gaussian_failure,
    renyi_gaussian,
    two_count_lower_bound,
)

__all__ = ["HistogramsResult", "reproduce"]

FULL_R = (0.5, 0.2, 0.1, 0.05, 0.01)
QUICK_R = (0.5, 0.1, 0.01)
DRIFTS = ("median", "mean")
SEED = 20030
ERROR_R = 0.1          # the r of the relative-error comparison


@dataclass
class HistogramsResult:
    """What :func:`reproduce` returns.

    Attributes
    ----------
    text : str
        The text report (also printed and written to ``report.txt``).
    failed : int
        How many checks failed (0 on success).
    files : list of Path
        The tables and the report written.
    figures : list of Path
        The figures written (empty without matplotlib).
    tables : dict
        Table name -> list of row dicts.
    checks : list of dict
        ``{"check", "value", "expected", "ok"}`` per check.
    """

    text: str
    failed: int
    files: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    tables: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)


def _write_csv(path: Path, rows: list[dict]) -> Path:
    columns: list = []
    for row in rows:
        columns.extend(k for k in row if k not in columns)
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=columns, lineterminator="\n")
    writer.writeheader()
    for row in rows:
        writer.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in row.items()})
    path.write_text(buf.getvalue())
    return path


def _x_grid(quick: bool) -> np.ndarray:
    k = 40 if quick else 120
    return np.concatenate([[0.0, 1e-9], np.linspace(0.02, 1.0, k // 4), np.arange(2.0, 11.0),
                           np.geomspace(11.0, 1e15, k)])


# ------------------------------------------------------------------ tables
def _calibration(rs, quick):
    rows, mechs = [], {}
    xs = _x_grid(quick)
    for r in rs:
        for drift in DRIFTS:
            mech = ShiftedLogGaussian(r=r, drift=drift)
            mechs[(r, drift)] = mech
            err = mech.expected_error(xs)                      # adaptive quadrature
            ratio = err / (r * np.maximum(xs, 1.0))
            n_big = 1e6
            rows.append({
                "r": r, "drift": drift, "margin": mech.margin, "sigma": mech.sigma,
                "mu": mech.mu, "c": mech.c, "multiplicative_error": mech.multiplicative_error,
                "certified": mech.certificate.ok, "certificate_worst": mech.certificate.worst,
                "tail_start": mech.certificate.tail_start, "grid_points": int(xs.size),
                "worst_ratio_quadrature": float(ratio.max()),
                "worst_x": float(xs[int(np.argmax(ratio))]),
                "v_0": mech.rho(0), "v_1": mech.rho(1), "v_10": mech.rho(10),
                "v_100": mech.rho(100), "v_10000": mech.rho(10_000),
                "n2v_at_1e6": n_big ** 2 * mech.rho(n_big),
                "one_over_2sigma2": mech.leading_constant,
                "r2_lim_n2v": r * r * mech.leading_constant,
                "two_count_lower_bound": two_count_lower_bound(r),
                "ratio_to_lower_bound": mech.leading_constant / two_count_lower_bound(r),
            })
    return rows, mechs


def _budget_curve(rs, mechs, quick):
    ns = np.unique(np.round(np.geomspace(1, 1e6, 40 if quick else 120)))
    rows = []
    for r in rs:
        mech = mechs[(r, "median")]
        lb = two_count_lower_bound(r)
        for n, v in zip(ns, mech.rho(ns)):
            rows.append({"r": r, "n": int(n), "v": float(v), "n2v": float(n * n * v),
                         "r2n2v": float(r * r * n * n * v), "one_over_2sigma2": mech.leading_constant,
                         "two_count_lower_bound": lb})
    return rows


def _constants(rs):
    rows = [
        {"name": "C_upper = 1/pi", "r": "", "value": C_UPPER,
         "note": "shifted-log Gaussian, r -> 0"},
        {"name": "C_lower = pi/(4 e^2)", "r": "", "value": C_LOWER,
         "note": "many-count (hidden offset) lower bound"},
        {"name": "ratio C_upper / C_lower", "r": "", "value": leading_coefficient_ratio(),
         "note": "4 e^2 / pi^2"},
        {"name": "r^2 times the two-count bound as r -> 0", "r": "",
         "value": 1 / 128, "note": "1/128"},
    ]
    for r in sorted(set(rs) | {0.001, 0.0001}, reverse=True):
        if r < 1:
            rows.append({"name": "r^2 lim n^2 v(n), margin -> 0 (median drift)", "r": r,
                         "value": float(mechanism_leading_constant(r)), "note": "r^2 / (2 sigma_r^2)"})
    for r in rs:
        rows.append({"name": "r^2 two-count lower bound", "r": r,
                     "value": float(r * r * two_count_lower_bound(r)), "note": "(1-r)^6/(128 (1+r)^2)"})
    mech = ShiftedLogGaussian(r=0.01, margin=1e-4)
    n = 1e7
    rows.append({"name": "r^2 n^2 v(n) from rho(), r=0.01, margin=1e-4, n=1e7", "r": 0.01,
                 "value": float(0.01 ** 2 * n ** 2 * mech.rho(n)), "note": "measured"})
    mech = ShiftedLogGaussian(r=0.01)
    rows.append({"name": "r^2 n^2 v(n) from rho(), r=0.01, margin=0.01, n=1e7", "r": 0.01,
                 "value": float(0.01 ** 2 * n ** 2 * mech.rho(n)), "note": "measured, default margin"})
    return rows


def _relative_error(mechs, quick):
    mech = mechs[(ERROR_R, "median")]
    xs = np.unique(np.concatenate([np.arange(0, 11), np.round(np.geomspace(10, 1e5, 25 if quick else 60)),
                                   [100, 1000, 10_000, 100_000]]))
    util = EqualNoiseGaussian.matching_utility(ERROR_R, margin=mech.margin)
    priv = EqualNoiseGaussian.matching_privacy(mech)
    rows = []
    for name, m, err in [
        ("shifted-log Gaussian (median drift)", mech, mech.expected_error(xs)),
        (util.label, util, util.expected_error(xs)),
        (priv.label, priv, priv.expected_error(xs)),
    ]:
        v = m.rho(xs)
        for x, e, b in zip(xs, err, v):
            rows.append({"mechanism": name, "r": ERROR_R, "x": int(x), "expected_error": float(e),
                         "relative_error": float(e / max(x, 1.0)), "v": float(b),
                         "scale": getattr(m, "scale", math.nan)})
    return rows


def _naive_failure():
    rows = []
    r = 0.1
    for n in (1, 2, 3, 10, 100, 1000):
        fail = proportional_gaussian_failure(n, r)
        a = fail.critical_order
        fwd, back = fail.divergences(np.array([a * (1 - 1e-6), a, 2 * a]))
        rows.append({"n": n, "r": r, "critical_order": a, "formula": (n + 1) ** 2 / (2 * n + 1),
                     "back_just_below": float(back[0]), "back_at_critical": float(back[1]),
                     "back_at_2x": float(back[2]), "forward_at_2x": float(fwd[2]),
                     "forward_at_1e9": float(renyi_gaussian(n, r * n, n + 1, r * (n + 1), 1e9))})
    return rows


def _drift():
    rows = []
    for sigma in (0.05, 0.25, 0.5, 1.0, 2.0):
        res = minimize_scalar(lambda mu: float(multiplicative_error(sigma, mu)),
                              bounds=(-3 * sigma ** 2, 0.0), method="bounded",
                              options={"xatol": 1e-12})
        rows.append({"sigma": sigma, "argmin_mu": float(res.x), "minus_sigma2": -sigma ** 2,
                     "argmin_over_sigma2": float(-res.x / sigma ** 2),
                     "error_median_drift": float(multiplicative_error(sigma, -sigma ** 2)),
                     "erf_sigma_over_sqrt2": math.erf(sigma / math.sqrt(2)),
                     "error_mean_drift": float(multiplicative_error(sigma, -sigma ** 2 / 2))})
    return rows


def _monte_carlo(rs, mechs, draws):
    rows = []
    rng = np.random.default_rng(SEED)
    for r in rs:
        mech = mechs[(r, "median")]
        for x in (0, 1, 10, 1000):
            dev = np.abs(mech.release(np.full(draws, x), rng=rng) - x)
            exact = float(mech.expected_error(x))
            se = float(dev.std(ddof=1) / math.sqrt(draws))
            z = (float(dev.mean()) - exact) / se if se > 0 else 0.0
            rows.append({"r": r, "x": x, "draws": draws, "mean_abs_error": float(dev.mean()),
                         "exact": exact, "standard_error": se, "z": z,
                         "bound": r * max(x, 1)})
    return rows


# ------------------------------------------------------------------ checks
def _checks(cal, budget, constants, naive, drift, mc, mechs):
    checks = []

    def add(name, value, expected, ok):
        checks.append({"check": name, "value": value, "expected": expected, "ok": bool(ok)})

    for row in cal:
        add(f"utility bound, r={row['r']}, {row['drift']}: worst ratio by quadrature",
            row["worst_ratio_quadrature"], "< 1 (and certified)",
            row["certified"] and row["worst_ratio_quadrature"] < 1)
        add(f"n^2 v(n) at n=1e6 vs 1/(2 sigma^2), r={row['r']}, {row['drift']}",
            row["n2v_at_1e6"] / row["one_over_2sigma2"], "1 within 2e-6",
            abs(row["n2v_at_1e6"] / row["one_over_2sigma2"] - 1) <= 2e-6)
        add(f"mechanism above the two-count bound, r={row['r']}, {row['drift']}",
            row["ratio_to_lower_bound"], ">= 1", row["ratio_to_lower_bound"] >= 1)
    for r in {row["r"] for row in budget}:
        v = np.array([row["v"] for row in budget if row["r"] == r])
        add(f"v(n) non-increasing, r={r}", float(np.max(np.diff(v))), "<= 0", np.all(np.diff(v) <= 0))
    by_name = {(row["name"], row["r"]): row["value"] for row in constants}
    c01 = by_name[("r^2 lim n^2 v(n), margin -> 0 (median drift)", 0.01)]
    add("r^2 n^2 v(n) -> 1/pi: limit calibration at r=0.01", c01, "0.318 (3 d.p.)", round(c01, 3) == 0.318)
    measured = by_name[("r^2 n^2 v(n) from rho(), r=0.01, margin=1e-4, n=1e7", 0.01)]
    add("r^2 n^2 v(n) from rho() at r=0.01, margin 1e-4, n=1e7", measured, "0.318 (3 d.p.)",
        round(measured, 3) == 0.318)
    c4 = by_name[("r^2 lim n^2 v(n), margin -> 0 (median drift)", 0.0001)]
    add("r^2 lim n^2 v(n) at r=1e-4 vs 1/pi", c4, f"{C_UPPER:.8f} within 1e-7", abs(c4 - C_UPPER) < 1e-7)
    ratio = leading_coefficient_ratio()
    add("ratio of the constant bounds 1/pi : pi/(4e^2)", ratio, "2.995 (3 d.p.)", round(ratio, 3) == 2.995)
    for row in naive:
        ok = (abs(row["critical_order"] - row["formula"]) <= 1e-12 * row["formula"]
              and math.isfinite(row["back_just_below"]) and math.isinf(row["back_at_critical"])
              and math.isinf(row["back_at_2x"]) and math.isfinite(row["forward_at_1e9"]))
        add(f"N(n, r^2 n^2) fails zCDP, n={row['n']}: infinite from order", row["critical_order"],
            "(n+1)^2/(2n+1), finite just below", ok)
    for row in drift:
        add(f"drift argmin at sigma={row['sigma']}", row["argmin_over_sigma2"], "1 within 1e-4 (mu = -sigma^2)",
            abs(row["argmin_over_sigma2"] - 1) < 1e-4
            and abs(row["error_median_drift"] - row["erf_sigma_over_sqrt2"]) < 1e-13
            and row["error_median_drift"] < row["error_mean_drift"])
    for row in mc:
        add(f"Monte Carlo error, r={row['r']}, x={row['x']}", row["z"], "|z| < 5", abs(row["z"]) < 5)
    return checks


# ------------------------------------------------------------------ figures
def _have_matplotlib(log) -> bool:
    """The shared check of :mod:`fastldp.experiments.figures`, or the same check here."""
    try:
        from ..figures import have_matplotlib
    except ImportError:
        try:
            import matplotlib  # noqa: F401
        except ImportError:
            print("fastldp: matplotlib is not installed, so no figures were drawn.",
                  file=log or sys.stderr)
            return False
        return True
    return bool(have_matplotlib(log))


def _figures(out: Path, tables: dict, mechs: dict, log) -> list[Path]:
    if not _have_matplotlib(log):
        return []
    from .figures import draw_all

    return draw_all(out, tables, mechs)


# ------------------------------------------------------------------ report
def _report(tables, checks, quick, seconds) -> str:
    lines = [f"paper 003: count-dependent zCDP histograms{' (quick)' if quick else ''}", ""]
    lines.append("Calibration (E|x_hat - x| < r max(x, 1) for all x >= 0; margin 0.01):")
    lines.append(f"{'r':>6} {'drift':>7} {'sigma':>10} {'c':>10} {'worst ratio':>12} "
                 f"{'v(0)=v(1)':>11} {'v(100)':>10} {'1/(2s^2)':>10} {'r^2/(2s^2)':>10} {'2-count LB':>10}")
    for row in tables["calibration"]:
        lines.append(f"{row['r']:>6g} {row['drift']:>7} {row['sigma']:>10.6f} {row['c']:>10.6f} "
                     f"{row['worst_ratio_quadrature']:>12.8f} {row['v_0']:>11.4g} {row['v_100']:>10.4g} "
                     f"{row['one_over_2sigma2']:>10.4g} {row['r2_lim_n2v']:>10.5f} "
                     f"{row['two_count_lower_bound']:>10.4g}")
    lines += ["", "Leading constants:"]
    for row in tables["constants"]:
        r = f" (r={row['r']:g})" if row["r"] != "" else ""
        lines.append(f"  {row['name']}{r}: {row['value']:.6f}")
    lines += ["", "N(n, r^2 n^2) fails zCDP: D_alpha(N(n+1)||N(n)) = inf from the critical order on:"]
    for row in tables["naive_failure"]:
        lines.append(f"  n={row['n']:>5}: critical order {row['critical_order']:.6f} "
                     f"= (n+1)^2/(2n+1); D just below = {row['back_just_below']:.4g}")
    lines += ["", "Relative error against count (r = 0.1):"]
    sample = {1, 10, 100, 1000, 10000, 100000}
    for row in tables["relative_error"]:
        if row["x"] in sample:
            lines.append(f"  {row['mechanism']:<40} x={row['x']:>6}: rel. error {row['relative_error']:.4g}, "
                         f"v = {row['v']:.4g}")
    failed = [c for c in checks if not c["ok"]]
    lines += ["", f"Checks: {len(checks) - len(failed)} of {len(checks)} passed."]
    for c in failed:
        lines.append(f"  FAILED: {c['check']}: {c['value']!r}, expected {c['expected']}")
    lines.append(f"Time: {seconds:.1f} s")
    return "\n".join(lines) + "\n"


def reproduce(*, quick: bool = False, out=None, workers: int = 1, data_dir=None,
              progress: bool = True, figures: bool = True, file=None, trials=None) -> HistogramsResult:
    """Reproduce paper 003's numbers and figures; write tables, report and figures.

    Parameters
    ----------
    quick : bool
        Fewer ``r`` values and coarser grids (still every check).
    out : path, optional
        Output folder (default ``results/histograms`` or ``results/histograms-quick``).
    workers, data_dir, progress
        Accepted for the common experiment interface; unused (it is fast and
        reads no data).
    figures : bool
        Draw the figures (needs matplotlib).
    file : text stream, optional
        Where to print the report (default stdout).
    trials : int, optional
        Draws per Monte Carlo cell (default 200000, quick 20000).

    Returns
    -------
    HistogramsResult
    """
    start = time.perf_counter()
    draws = (check_int(trials, "trials", "reproduce histograms", low=2) if trials is not None
             else (20_000 if quick else 200_000))
    out = Path(out) if out is not None else Path("results") / ("histograms-quick" if quick else "histograms")
    out.mkdir(parents=True, exist_ok=True)
    rs = QUICK_R if quick else FULL_R

    calibration, mechs = _calibration(rs, quick)
    tables = {
        "calibration": calibration,
        "budget_curve": _budget_curve(rs, mechs, quick),
        "constants": _constants(rs),
        "relative_error": _relative_error(mechs, quick),
        "naive_failure": _naive_failure(),
        "drift": _drift(),
        "monte_carlo": _monte_carlo(rs, mechs, draws),
    }
    checks = _checks(tables["calibration"], tables["budget_curve"], tables["constants"],
                     tables["naive_failure"], tables["drift"], tables["monte_carlo"], mechs)
    tables["checks"] = checks
    files = [_write_csv(out / f"{name}.csv", rows) for name, rows in tables.items()]
    figs = _figures(out, tables, mechs, sys.stderr) if figures else []
    failed = sum(not c["ok"] for c in checks)
    text = _report(tables, checks, quick, time.perf_counter() - start)
    report = out / "report.txt"
    report.write_text(text)
    files.append(report)
    print(text, end="", file=file or sys.stdout)
    return HistogramsResult(text=text, failed=failed, files=files, figures=figs,
                            tables=tables, checks=checks)
