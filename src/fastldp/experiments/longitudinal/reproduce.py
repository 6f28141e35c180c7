"""``fastldp reproduce longitudinal``: memoized frequency estimation over rounds.

A population of ``n`` users holds values in ``[0, D)`` (a Zipf law); before
each of ``tau`` rounds every user redraws its value with the public
probability ``change_rate``; every round each user sends one report through
its memo (:mod:`fastldp.longitudinal`), and the server estimates the round's
frequencies. For each protocol, domain size ``D`` and ``epsilon_inf`` at a
fixed ``epsilon_1``, the run records the MSE of the normalized frequencies
(averaged over symbols, rounds and repetitions) beside the analytic value
(the protocols' count variances at the true counts, over ``n^2``).

The protocols: L-GRR (``calibration="exact"`` and the paper's), L-OUE,
L-OSUE, L-SUE, L-SOUE (Arcolezi et al. 2022), and dBitFlipPM with ``d = D``
sampled buckets and the output perturbation ``gamma`` that makes one report
``epsilon_1``-LDP (its law is then L-SUE's: a check). Full RAPPOR is not in
the sweep: its ``epsilon_1`` and ``epsilon_inf`` are set by ``(f, p, q, h)``
and its decode is a regression over hashed bits, not comparable cell by cell.

Side by side with multi-freq-ldpy (one round, its clients and ``*_MI``
aggregators, whose estimates are clipped at zero and renormalized): the
same post-processing applied to fastldp's estimates, both MSEs and their
ratio. multi-freq-ldpy draws from numpy's and numba's global random states,
which this run does not seed, so its column changes from run to run.

Without multi-freq-ldpy the report says so in one line (there is no
side-by-side table then).

Tables written to ``out``: ``mse.csv``, ``winners.csv``, ``multi_freq.csv``,
``checks.csv`` and ``report.txt``; the figure ``figures/longitudinal_mse.png``
(MSE against ``epsilon_inf``, a panel per domain size). The grid is the
shipped ``spec.toml``.
"""

from __future__ import annotations

import csv
import io
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ...longitudinal import LGRR, LOSUE, LOUE, LSOUE, LSUE, MemoryMemo, epsilon_1_limit
from ...longitudinal.dbitflip import DBitFlipPM

try:  # Python 3.11+
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["LongitudinalResult", "reproduce", "load_spec", "PAPER_CONCLUSION"]

SPEC = Path(__file__).with_name("spec.toml")

#: Arcolezi et al. (2022), sections 5 and 6, as this run tests it
PAPER_CONCLUSION = (
    "Arcolezi et al. (2022) find L-OSUE the most accurate of the unary-encoding protocols "
    "(ahead of L-SUE, i.e. basic RAPPOR, L-SOUE and L-OUE) and L-GRR the most accurate for "
    "small domains; their adaptive L-ADP therefore picks L-GRR or L-OSUE by the approximate "
    "variance.")

UNARY = {"L-OUE": LOUE, "L-OSUE": LOSUE, "L-SUE": LSUE, "L-SOUE": LSOUE}
_SHAPES = {"L-OUE": ("oue", "oue"), "L-OSUE": ("oue", "sue"), "L-SUE": ("sue", "sue"),
           "L-SOUE": ("sue", "oue")}


@dataclass
class LongitudinalResult:
    """What :func:`reproduce` returns: ``text``, ``failed`` (checks), files and tables."""

    text: str
    failed: int
    files: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    tables: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)


def load_spec(quick: bool, path: Optional[Path] = None) -> dict:
    """The grid: ``[full]``, overridden by ``[quick]`` when ``quick``."""
    with open(path or SPEC, "rb") as fh:
        spec = tomllib.load(fh)
    grid = dict(spec["full"])
    if quick:
        grid.update(spec.get("quick", {}))
    grid.setdefault("mf_domain_sizes", grid["domain_sizes"])
    return grid


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


# ------------------------------------------------------------------ the population
def _law(D: int, s: float) -> np.ndarray:
    w = 1.0 / np.arange(1, D + 1, dtype=np.float64) ** s
    return w / w.sum()


def _rounds(D, n, tau, rate, s, rng):
    """The values of every round: a Zipf draw, then each user redraws w.p. ``rate``."""
    law = _law(D, s)
    x = rng.choice(D, size=n, p=law)
    out = [x.copy()]
    for _ in range(tau - 1):
        move = rng.random(n) < rate
        x = np.where(move, rng.choice(D, size=n, p=law), x)
        out.append(x.copy())
    return out


def dbitflip_gamma(epsilon_inf: float, epsilon_1: float) -> float:
    """The output perturbation that makes one dBitFlipPM report ``epsilon_1``-LDP.

    ``P* = p1 (1 - gamma) + gamma / 2`` with ``P* / (1 - P*) = e^(epsilon_1 / 2)``.
    """
    return DBitFlipPM.gamma_for(epsilon_inf, epsilon_1)


def _protocols(D: int, e_inf: float, e_1: float) -> dict[str, Any]:
    out: dict[str, Any] = {
        "L-GRR": LGRR(domain_size=D, epsilon_inf=e_inf, epsilon_1=e_1, codebook_seed=0),
        "L-GRR (paper)": LGRR(domain_size=D, epsilon_inf=e_inf, epsilon_1=e_1, codebook_seed=0,
                              calibration="paper"),
    }
    for name, cls in UNARY.items():
        if e_1 < epsilon_1_limit(*_SHAPES[name], e_inf):
            out[name] = cls(domain_size=D, epsilon_inf=e_inf, epsilon_1=e_1, codebook_seed=0)
    out["dBitFlipPM (d=D)"] = DBitFlipPM(domain_size=D, n_buckets=D, n_sampled=D,
                                         epsilon_inf=e_inf, gamma=dbitflip_gamma(e_inf, e_1),
                                         codebook_seed=0)
    return out


def _mse_table(grid, rng, log) -> list[dict]:
    n, tau, e_1 = grid["n_users"], grid["rounds"], grid["epsilon_1"]
    rows = []
    for D in grid["domain_sizes"]:
        for e_inf in grid["epsilon_inf"]:
            protos = _protocols(D, e_inf, e_1)
            sq: dict[str, list[float]] = {name: [] for name in protos}
            an: dict[str, list[float]] = {name: [] for name in protos}
            # one MSE per repetition: the rounds of a repetition share their permanent
            # responses, so only the repetitions are independent (the standard error's unit)
            per_rep: dict[str, list[float]] = {name: [] for name in protos}
            for _ in range(grid["repetitions"]):
                values = _rounds(D, n, tau, grid["change_rate"], grid["zipf_exponent"], rng)
                memos = {name: MemoryMemo() for name in protos}
                for x in values:
                    truth = np.bincount(x, minlength=D).astype(np.float64)
                    for name, proto in protos.items():
                        est = proto.privatize(x, memo=memos[name], rng=rng)
                        counts = proto.estimate(est).counts
                        sq[name].append(float(np.mean((counts - truth) ** 2)) / n ** 2)
                        an[name].append(float(np.mean(proto.count_variances(n, truth))) / n ** 2)
                for name in protos:
                    per_rep[name].append(float(np.mean(sq[name][-tau:])))
            for name in protos:
                k = len(sq[name])
                mse, analytic = float(np.mean(sq[name])), float(np.mean(an[name]))
                reps = len(per_rep[name])
                se = float(np.std(per_rep[name], ddof=1) / math.sqrt(reps)) if reps > 1 \
                    else math.nan
                rows.append({"domain_size": D, "epsilon_inf": e_inf, "epsilon_1": e_1,
                             "protocol": name, "mse": mse, "mse_se": se,
                             "analytic_mse": analytic, "ratio": mse / analytic, "cells": k * D,
                             "repetitions": reps})
            if log:
                print(f"  D={D} epsilon_inf={e_inf:g}: done", file=log)
    return rows


def _winners(rows) -> list[dict]:
    out = []
    cells = sorted({(r["domain_size"], r["epsilon_inf"]) for r in rows})
    for D, e in cells:
        cell = [r for r in rows if (r["domain_size"], r["epsilon_inf"]) == (D, e)
                and r["protocol"] != "L-GRR (paper)" and not r["protocol"].startswith("dBit")]
        unary = [r for r in cell if r["protocol"] in UNARY]
        best = min(cell, key=lambda r: r["analytic_mse"])
        best_unary = min(unary, key=lambda r: r["analytic_mse"])
        sim_best = min(cell, key=lambda r: r["mse"])
        # the simulated winner differs from the analytic one by noise unless the gap
        # between their simulated MSEs exceeds two standard errors of the difference
        gap_se = math.hypot(sim_best.get("mse_se", math.nan), best.get("mse_se", math.nan))
        resolved = sim_best is best or (math.isfinite(gap_se)
                                        and best["mse"] - sim_best["mse"] > 2 * gap_se)
        out.append({"domain_size": D, "epsilon_inf": e, "best_analytic": best["protocol"],
                    "best_simulated": sim_best["protocol"], "simulated_resolved": resolved,
                    "best_unary_analytic": best_unary["protocol"],
                    "grr_over_osue": (next((r["analytic_mse"] for r in cell
                                            if r["protocol"] == "L-GRR"))
                                      / next((r["analytic_mse"] for r in cell
                                              if r["protocol"] == "L-OSUE"), math.nan))})
    return out


# ------------------------------------------------------------------ multi-freq-ldpy
def _normalized(counts: np.ndarray) -> np.ndarray:
    f = np.clip(counts, 0.0, None)
    total = f.sum()
    return f / total if total > 0 else f


#: The report's line when the peer is missing (its help promises the side-by-side table).
PEER_MISSING = ("multi-freq-ldpy is not installed, so there is no side-by-side table "
                "(pip install 'fastldp[bench-peer]' adds it).")


def _multi_freq(grid, rng, log) -> Optional[list[dict]]:
    """The side-by-side rows, or ``None`` when multi-freq-ldpy does not import."""
    try:
        from multi_freq_ldpy.long_freq_est import L_GRR, L_OSUE, L_OUE, L_SOUE, L_SUE
    except ImportError:
        if log:
            print(f"  {PEER_MISSING}", file=log)
        return None
    mods = {"L-GRR (paper)": (L_GRR, "L_GRR"), "L-OUE": (L_OUE, "L_OUE"),
            "L-OSUE": (L_OSUE, "L_OSUE"), "L-SUE": (L_SUE, "L_SUE"),
            "L-SOUE": (L_SOUE, "L_SOUE")}
    n, e_1, e_inf = grid["mf_users"], grid["epsilon_1"], grid["mf_epsilon_inf"]
    # multi-freq-ldpy draws from numpy's and numba's global states, which fastldp never
    # seeds (tests/test_audit_hygiene.py): its column varies from run to run, ours does not
    rows = []
    for D in grid["mf_domain_sizes"]:
        protos = _protocols(D, e_inf, e_1)
        law = _law(D, grid["zipf_exponent"])
        for name, (mod, stem) in mods.items():
            if name not in protos or name not in grid.get("mf_protocols", mods):
                continue
            client = getattr(mod, f"{stem}_Client")
            agg = getattr(mod, f"{stem}_Aggregator_MI")
            ours_sq, theirs_sq = [], []
            t_ours = t_theirs = 0.0
            client(0, D, e_inf, e_1)  # numba compiles on the first call: not timed
            for _ in range(grid["mf_repetitions"]):
                x = rng.choice(D, size=n, p=law)
                f_true = np.bincount(x, minlength=D) / n
                t0 = time.perf_counter()
                reports = [client(int(v), D, e_inf, e_1) for v in x]
                theirs = (agg(reports, D, e_inf, e_1) if stem == "L_GRR"
                          else agg(np.asarray(reports), e_inf, e_1))
                t1 = time.perf_counter()
                proto = protos[name]
                ours = _normalized(proto.estimate(proto.privatize(x, memo=MemoryMemo(),
                                                                  rng=rng)).counts)
                t2 = time.perf_counter()
                t_theirs += t1 - t0
                t_ours += t2 - t1
                theirs_sq.append(float(np.mean((np.asarray(theirs) - f_true) ** 2)))
                ours_sq.append(float(np.mean((ours - f_true) ** 2)))
            a, b = float(np.mean(ours_sq)), float(np.mean(theirs_sq))
            # the standard error of the ratio's logarithm from the repetitions' spread
            k = len(ours_sq)
            se = math.sqrt(np.var(np.log(ours_sq), ddof=1) / k + np.var(np.log(theirs_sq),
                                                                         ddof=1) / k) \
                if k > 1 else math.nan
            rows.append({"domain_size": D, "epsilon_inf": e_inf, "epsilon_1": e_1,
                         "protocol": name, "n_users": n, "fastldp_mse": a,
                         "multi_freq_ldpy_mse": b, "ratio": a / b, "log_ratio_se": se,
                         "fastldp_seconds": t_ours, "multi_freq_ldpy_seconds": t_theirs})
        if log:
            print(f"  multi-freq-ldpy D={D}: done", file=log)
    return rows


# ------------------------------------------------------------------ checks and report
def _checks(mse, winners, mf, grid) -> list[dict]:
    checks = []
    # the simulated MSE averages squared errors of D symbols over rounds and repetitions;
    # a squared normal error has relative sd sqrt(2), the D symbols are nearly independent
    # but the rounds of one repetition are not (they share the permanent responses), so
    # only the repetitions count: relative sd <= sqrt(2 / (repetitions D)); 4 of those
    for r in mse:
        tol = 4 * math.sqrt(2.0 / (grid["repetitions"] * r["domain_size"]))
        checks.append({"check": f"mse/analytic {r['protocol']} D={r['domain_size']} "
                                f"eps_inf={r['epsilon_inf']:g}",
                       "value": r["ratio"], "expected": f"within 1 +- {tol:.3f}",
                       "ok": abs(r["ratio"] - 1) <= tol})
    for D in grid["domain_sizes"]:
        for e in grid["epsilon_inf"]:
            cell = {r["protocol"]: r for r in mse
                    if (r["domain_size"], r["epsilon_inf"]) == (D, e)}
            a, b = cell["dBitFlipPM (d=D)"]["analytic_mse"], cell["L-SUE"]["analytic_mse"]
            checks.append({"check": f"dBitFlipPM(d=D) == L-SUE analytically D={D} eps_inf={e:g}",
                           "value": a / b, "expected": "1 (the same law)",
                           "ok": abs(a / b - 1) < 1e-9})
            g, pg = cell["L-GRR"]["analytic_mse"], cell["L-GRR (paper)"]["analytic_mse"]
            checks.append({"check": f"L-GRR exact <= paper calibration D={D} eps_inf={e:g}",
                           "value": g / pg, "expected": "<= 1 (== 1 at D = 2)",
                           "ok": g <= pg * (1 + 1e-12)})
    for r in mf:
        z = abs(math.log(r["ratio"])) / r["log_ratio_se"] if r["log_ratio_se"] > 0 else 0.0
        checks.append({"check": f"fastldp vs multi-freq-ldpy {r['protocol']} "
                                f"D={r['domain_size']}",
                       "value": r["ratio"], "expected": "log ratio within 4 standard errors",
                       "ok": bool(z <= 4 or not math.isfinite(z))})
    return checks


def _report(grid, mse, winners, mf, checks, quick, seconds) -> str:
    lines = [f"longitudinal frequency estimation (memoized reports){' (quick)' if quick else ''}",
             f"n = {grid['n_users']} users, tau = {grid['rounds']} rounds, change rate "
             f"{grid['change_rate']:g} per round, Zipf({grid['zipf_exponent']:g}) values, "
             f"epsilon_1 = {grid['epsilon_1']:g}, {grid['repetitions']} repetitions", "",
             "MSE of the normalized frequencies (x 1e-6; analytic in parentheses):"]
    names = list(dict.fromkeys(r["protocol"] for r in mse))
    header = f"{'D':>4} {'eps_inf':>7} " + " ".join(f"{n:>20}" for n in names)
    lines.append(header)
    for D in grid["domain_sizes"]:
        for e in grid["epsilon_inf"]:
            cell = {r["protocol"]: r for r in mse
                    if (r["domain_size"], r["epsilon_inf"]) == (D, e)}
            parts = []
            for n in names:
                r = cell.get(n)
                parts.append(f"{'-':>20}" if r is None else
                             f"{r['mse'] * 1e6:>9.3f} ({r['analytic_mse'] * 1e6:>8.3f})")
            lines.append(f"{D:>4} {e:>7g} " + " ".join(parts))
    lines += ["", "Which protocol wins (smallest analytic MSE, exact; the smallest simulated "
                  "MSE in brackets, marked when it is within two standard errors of the "
                  "analytic winner's, i.e. not resolved by the repetitions):"]
    for w in winners:
        sim = w["best_simulated"] + ("" if w.get("simulated_resolved", True) else
                                     f", within 2 se of {w['best_analytic']}")
        lines.append(f"  D={w['domain_size']:>3} eps_inf={w['epsilon_inf']:>4g}: "
                     f"{w['best_analytic']} [{sim}], best unary "
                     f"{w['best_unary_analytic']}, L-GRR / L-OSUE = {w['grr_over_osue']:.3g}")
    osue = sum(w["best_unary_analytic"] == "L-OSUE" for w in winners)
    grr_small = [w for w in winners if w["best_analytic"] == "L-GRR"]
    lines += ["", "The paper's conclusion: " + PAPER_CONCLUSION,
              f"Here: L-OSUE is the best unary protocol in {osue} of {len(winners)} cells; "
              f"L-GRR wins in {len(grr_small)} cells"
              + (f" (domain sizes {sorted({w['domain_size'] for w in grr_small})})"
                 if grr_small else "") + "."]
    # at a fixed epsilon_1 one report's law of L-GRR (exact: P / Q = e^eps_1 with
    # P + (D - 1) Q = 1), L-OSUE (P = 1/2) and L-SUE (P + Q = 1) does not depend on
    # epsilon_inf: their analytic MSE is flat in it; say which protocols are
    flat = []
    for name in names:
        for D in grid["domain_sizes"]:
            vals = [r["analytic_mse"] for r in mse
                    if r["protocol"] == name and r["domain_size"] == D]
            if len(vals) < 2 or max(vals) > min(vals) * (1 + 1e-9):
                break
        else:
            flat.append(name)
    if len(grid["epsilon_inf"]) > 1:
        lines += [f"At fixed epsilon_1 the analytic MSE does not depend on epsilon_inf for "
                  f"{', '.join(flat) or 'no protocol'} (one report's law is fixed by epsilon_1); "
                  "it does for the others."]
    if mf is None:  # said in the report, not only on the progress log: no silent column
        lines += ["", PEER_MISSING]
    if mf:
        lines += ["", "Side by side with multi-freq-ldpy (one round, estimates clipped at 0 and "
                  "renormalized by both; MSE x 1e-6; the ratio's log standard error from the "
                  "repetitions; speed: python bench/longitudinal_compare.py):"]
        for r in mf:
            lines.append(f"  D={r['domain_size']:>3} {r['protocol']:<14} fastldp "
                         f"{r['fastldp_mse'] * 1e6:9.3f}  multi-freq-ldpy "
                         f"{r['multi_freq_ldpy_mse'] * 1e6:9.3f}  ratio {r['ratio']:.3f} "
                         f"(log se {r['log_ratio_se']:.3f})")
    failed = [c for c in checks if not c["ok"]]
    lines += ["", f"Checks: {len(checks) - len(failed)} of {len(checks)} passed."]
    for c in failed:
        lines.append(f"  FAILED: {c['check']}: {c['value']!r}, expected {c['expected']}")
    lines.append(f"Time: {seconds:.1f} s")
    return "\n".join(lines) + "\n"


def reproduce(*, quick: bool = False, out=None, workers: int = 1, data_dir=None,
              progress: bool = True, figures: bool = True, file=None,
              spec: Optional[Path] = None) -> LongitudinalResult:
    """Run the longitudinal evaluation; write its tables and report.

    Parameters
    ----------
    quick : bool
        The ``[quick]`` grid of ``spec.toml`` (well under a minute).
    out : path, optional
        Output folder (default ``results/longitudinal`` or
        ``results/longitudinal-quick``).
    workers, data_dir
        Accepted for the common experiment interface; unused (one process,
        synthetic data).
    figures : bool
        Draw ``figures/longitudinal_mse.png`` (needs matplotlib).
    progress : bool
        Print a line per finished cell on stderr.
    file : text stream, optional
        Where to print the report (default stdout).
    spec : path, optional
        Another spec file with the shipped one's keys.

    Returns
    -------
    LongitudinalResult
    """
    start = time.perf_counter()
    grid = load_spec(quick, spec)
    out = Path(out) if out is not None else Path("results") / (
        "longitudinal-quick" if quick else "longitudinal")
    out.mkdir(parents=True, exist_ok=True)
    log = sys.stderr if progress else None
    rng = np.random.default_rng(grid["seed"])
    mse = _mse_table(grid, rng, log)
    winners = _winners(mse)
    mf = _multi_freq(grid, rng, log)
    checks = _checks(mse, winners, mf or [], grid)
    tables = {"mse": mse, "winners": winners, "multi_freq": mf or [], "checks": checks}
    files = [_write_csv(out / f"{name}.csv", rows) for name, rows in tables.items() if rows]
    failed = sum(not c["ok"] for c in checks)
    drawn = draw_figure(mse, out / "figures", log=sys.stderr) if figures else []
    text = _report(grid, mse, winners, mf, checks, quick, time.perf_counter() - start)
    report = out / "report.txt"
    report.write_text(text)
    files.append(report)
    print(text, end="", file=file or sys.stdout)
    return LongitudinalResult(text=text, failed=failed, files=files, figures=drawn,
                              tables=tables, checks=checks)


def draw_figure(mse, out: Path, log=None) -> list[Path]:
    """``longitudinal_mse.png`` (and ``.pdf``): MSE against ``epsilon_inf``, a panel per D.

    Lines are the analytic MSE, markers the simulated one with bars of two
    standard errors over the repetitions; nothing is drawn (and ``log`` says
    so) without matplotlib.
    """
    from ..figures import _panels, _save, have_matplotlib, legend

    if not mse or not have_matplotlib(log):
        return []
    out.mkdir(parents=True, exist_ok=True)
    sizes = sorted({r["domain_size"] for r in mse})
    fig, axes = _panels(len(sizes))
    names = list(dict.fromkeys(r["protocol"] for r in mse))
    for ax, D in zip(axes, sizes):
        for i, name in enumerate(names):
            rows = sorted((r for r in mse if r["domain_size"] == D and r["protocol"] == name),
                          key=lambda r: r["epsilon_inf"])
            if not rows:
                continue
            x = [r["epsilon_inf"] for r in rows]
            color = f"C{i}"
            ax.plot(x, [r["analytic_mse"] for r in rows], color=color, lw=1, label=name)
            bars = [2 * r["mse_se"] if math.isfinite(r.get("mse_se", math.nan)) else 0.0
                    for r in rows]
            # a log axis has no room below 0: the lower bar stops just above it
            low = [min(b, 0.99 * r["mse"]) for b, r in zip(bars, rows)]
            ax.errorbar(x, [r["mse"] for r in rows], yerr=[low, bars], fmt="o", ms=3,
                        color=color, capsize=2, lw=0.8)
        ax.set_yscale("log")
        ax.set_xlabel("epsilon_inf")
        ax.set_ylabel("MSE of the frequencies")
        ax.set_title(f"D = {D}, epsilon_1 = {mse[0]['epsilon_1']:g}", fontsize=9)
    fig.suptitle("MSE against epsilon_inf: analytic (lines), simulated +- 2 standard errors "
                 "(dots)", fontsize=9)
    legend(axes, fontsize=7)
    return _save(fig, out, "longitudinal_mse")
