"""``fastldp reproduce heavy-hitters``: top-k of a huge domain, and poisoning it.

Accuracy. ``n`` users hold Zipf items over ``[0, 2^32)``
(:func:`fastldp.heavyhitters.data.zipf_items`: ``2^16`` ranks, exponent
1.1, scattered over the domain). For each protocol (PEM, TreeHist, SFP,
each with its own defaults), ``k`` in ``{16, 32, 64}`` and ``epsilon``, the
run records the PEM paper's *precision* (the share of the true top-k found
among the ``k`` returned, ``|found ∩ truth| / k``:
:func:`~fastldp.heavyhitters.metrics.recall_at_k`,
equal to precision when ``k`` items are returned), the precision of what
was returned (SFP and TreeHist may return fewer than ``k`` items), NCR, and
client + server seconds, averaged over repetitions.

The comparison with Wang, Li and Jha (IEEE TDSC 2019) is of shape: in
their precision- and NCR-against-epsilon figures both measures rise with
epsilon and fall as ``k`` grows. The checks test exactly that for PEM
(endpoints of the epsilon grid, the smallest against the largest ``k``);
the numbers depend on ``n`` and the data, which differ from the paper's.

Attack. MGA (:mod:`fastldp.heavyhitters.attacks`) adds ``beta n`` fake
users promoting ``r`` items nobody holds, against PEM at
``attack_epsilon`` / ``attack_k``; ``search`` candidate identities per fake
user (1: the identities are given, only the bucket is chosen). The table
gives the predicted and realized frequency gain of the targets, how many
targets reach the top-k and their best rank, the precision of the top-k
(clean, attacked, attacked with the detection decode of
:mod:`fastldp.heavyhitters.robust`, clean with it), and how many fake and
honest users the defence removed.

Tables written to ``out``: ``accuracy.csv``, ``attack.csv``,
``checks.csv`` and ``report.txt``; the grid is the shipped ``spec.toml``.
"""

from __future__ import annotations

import csv
import io
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ... import heavyhitters as hh
from ...heavyhitters import data, metrics
from ...heavyhitters.attacks import level_frequencies, mga_attack
from ...heavyhitters.robust import robust_pem_estimate
from ..figures import have_matplotlib

try:  # Python 3.11+
    import tomllib
except ImportError:  # pragma: no cover
    import tomli as tomllib  # type: ignore[no-redef]

__all__ = ["HeavyHittersResult", "reproduce", "load_spec", "PAPER_SHAPE"]

SPEC = Path(__file__).with_name("spec.toml")

#: what is compared with the PEM paper (Wang, Li, Jha, IEEE TDSC 2019)
PAPER_SHAPE = ("Wang, Li and Jha (IEEE TDSC 2019) plot precision and NCR of the top-k against "
               "epsilon: both rise with epsilon and fall as k grows. Agreement in shape is "
               "the claim here, not the values (other n, other data).")


@dataclass
class HeavyHittersResult:
    """What :func:`reproduce` returns: ``text``, ``failed`` (checks), files and tables."""

    text: str
    failed: int
    files: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    tables: dict = field(default_factory=dict)
    checks: list = field(default_factory=list)
    skipped: dict = field(default_factory=dict)


def load_spec(quick: bool, path: Optional[Path] = None) -> dict:
    """The grid: ``[full]``, overridden by ``[quick]`` when ``quick``."""
    with open(path or SPEC, "rb") as fh:
        spec = tomllib.load(fh)
    grid = dict(spec["full"])
    if quick:
        grid.update(spec.get("quick", {}))
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


def _publish(out: Path, tables: dict, text: str, file: Any) -> list[Path]:
    """Write each non-empty table as ``NAME.csv`` and the report as ``report.txt`` in
    ``out``; print the report (to ``file``, default stdout). Returns the files written."""
    files = [_write_csv(out / f"{name}.csv", rows) for name, rows in tables.items() if rows]
    report = out / "report.txt"
    report.write_text(text)
    files.append(report)
    print(text, end="", file=file or sys.stdout)
    return files


def _protocols(names) -> tuple[dict, dict]:
    found, skipped = {}, {}
    for name in names:
        cls = getattr(hh, name, None)
        if cls is None:
            skipped[name] = f"fastldp.heavyhitters has no {name} (not landed)"
        else:
            found[name] = cls
    return found, skipped


def _workload(grid: dict, rep: int) -> np.ndarray:
    # the recorded runs' streams are numpy's default_rng of these ints: passed as Generators,
    # they stay what they were when the API's int seeds were keyed (issue 37)
    return data.zipf_items(grid["n_users"], item_bits=grid["item_bits"],
                           exponent=grid["zipf_exponent"],
                           rng=np.random.default_rng(grid["seed"] + 1000 * rep))


def _accuracy(grid: dict, classes: dict, log) -> list[dict]:
    cells: dict = {}
    for rep in range(grid["repetitions"]):
        items = _workload(grid, rep)
        for k in grid["ks"]:
            truth, _ = data.true_top_k(items, k)
            for eps in grid["epsilons"]:
                for name, cls in classes.items():
                    seed = grid["seed"] + rep
                    start = time.perf_counter()
                    proto = cls(epsilon=float(eps), k=int(k), item_bits=grid["item_bits"],
                                codebook_seed=seed)
                    coins = np.random.default_rng(seed + 17)  # as recorded (see _workload)
                    res = proto.estimate(proto.privatize(items, rng=coins))
                    secs = time.perf_counter() - start
                    cell = cells.setdefault((name, k, eps), [])
                    cell.append((metrics.recall_at_k(res.codes, truth),
                                 metrics.precision_at_k(res.codes, truth),
                                 metrics.ncr(res.codes, truth), len(res.codes), secs))
                    if log:
                        print(f"  {name:<8} k={k:<3} eps={eps:<4g} rep {rep}: precision "
                              f"{cell[-1][0]:.3f} NCR {cell[-1][2]:.3f} ({secs:.2f} s)", file=log)
    rows = []
    for (name, k, eps), vals in cells.items():
        v = np.array(vals, dtype=np.float64)
        # the spread over repetitions: what a quick run's differences are measured against
        sd = v[:, :3].std(axis=0, ddof=1) if len(vals) > 1 else np.full(3, np.nan)
        rows.append({"protocol": name, "k": int(k), "epsilon": float(eps),
                     "precision": float(v[:, 0].mean()), "precision_sd": float(sd[0]),
                     "ncr_sd": float(sd[2]),
                     "precision_returned": float(v[:, 1].mean()),
                     "ncr": float(v[:, 2].mean()), "returned": float(v[:, 3].mean()),
                     "seconds": float(v[:, 4].mean()), "repetitions": len(vals),
                     "n_users": grid["n_users"]})
    return rows


def _targets(items: np.ndarray, r: int, item_bits: int, gen: np.random.Generator) -> np.ndarray:
    """``r`` distinct items that nobody holds."""
    present = np.unique(items)
    out: list[int] = []
    while len(out) < r:
        v = int(gen.integers(0, 1 << item_bits, dtype=np.uint64))
        if v not in out and not np.isin(v, present):
            out.append(v)
    return np.array(out, dtype=np.uint64)


def _attack(grid: dict, log) -> list[dict]:
    n, k, eps = grid["n_users"], grid["attack_k"], float(grid["attack_epsilon"])
    rows = []
    for rep in range(grid["attack_repetitions"]):
        items = _workload(grid, rep)
        truth, _ = data.true_top_k(items, k)
        gen = np.random.default_rng(grid["seed"] + 7 * rep + 3)
        targets = _targets(items, grid["attack_targets"], grid["item_bits"], gen)
        pem = hh.PEM(epsilon=eps, k=k, item_bits=grid["item_bits"],
                     codebook_seed=grid["seed"] + rep)
        reps = pem.privatize(items, rng=gen)
        ids = np.arange(n, dtype=np.uint64)
        clean = pem.estimate(reps)
        clean_robust = robust_pem_estimate(pem, reps)
        before = level_frequencies(pem, reps, ids, targets)
        for beta in grid["attack_betas"]:
            for search in grid["attack_search"]:
                attack = mga_attack(pem, targets, int(round(beta * n)), n_honest=n,
                                    search=int(search), rng=gen)
                all_reps = np.concatenate([reps, attack.reports])
                all_ids = np.concatenate([ids, attack.identities])
                plain = pem.estimate(all_reps, identities=all_ids)
                robust = robust_pem_estimate(pem, all_reps, identities=all_ids)
                after = level_frequencies(pem, all_reps, all_ids, targets)
                ranks = [i + 1 for i, c in enumerate(plain.codes.tolist()) if c in targets]
                ranks_r = [i + 1 for i, c in enumerate(robust.result.codes.tolist())
                           if c in targets]
                fake = np.isin(robust.flagged, attack.identities)
                rows.append({
                    "beta": float(beta), "search": int(search), "repetition": rep,
                    "n_fake": attack.n_fake, "targets": len(targets),
                    "objective": attack.objective, "realized_gain": float(np.sum(after - before)),
                    "prediction_std": attack.prediction_std,
                    "targets_in_top_k": len(ranks), "best_target_rank": min(ranks, default=0),
                    "targets_in_top_k_defended": len(ranks_r),
                    "best_target_rank_defended": min(ranks_r, default=0),
                    "precision_clean": metrics.recall_at_k(clean.codes, truth),
                    "precision_attacked": metrics.recall_at_k(plain.codes, truth),
                    "precision_defended": metrics.recall_at_k(robust.result.codes, truth),
                    "precision_clean_defended": metrics.recall_at_k(clean_robust.result.codes,
                                                                    truth),
                    "flagged_fake": int(fake.sum()), "flagged_honest": int((~fake).sum()),
                    "flagged_clean": int(clean_robust.flagged.size),
                })
                if log:
                    r = rows[-1]
                    print(f"  MGA beta={beta:g} search={search}: targets in top-{k} "
                          f"{r['targets_in_top_k']} -> {r['targets_in_top_k_defended']} "
                          f"defended", file=log)
    return rows


def _mean_attack(rows: list[dict]) -> list[dict]:
    out = []
    for key in dict.fromkeys((r["beta"], r["search"]) for r in rows):
        sel = [r for r in rows if (r["beta"], r["search"]) == key]
        agg = {"beta": key[0], "search": key[1], "repetitions": len(sel)}
        for col in sel[0]:
            if col not in ("beta", "search", "repetition"):
                agg[col] = float(np.mean([r[col] for r in sel]))
        out.append(agg)
    return out


def _checks(acc: list[dict], attack: list[dict], grid: dict) -> list[dict]:
    checks = []

    def add(name, value, expected, ok):
        checks.append({"check": name, "value": value, "expected": expected, "ok": bool(ok)})

    pem = [r for r in acc if r["protocol"] == "PEM"]
    lo, hi = min(grid["epsilons"]), max(grid["epsilons"])
    for k in grid["ks"]:
        cell = {r["epsilon"]: r for r in pem if r["k"] == k}
        if lo in cell and hi in cell and lo != hi:
            for m in ("precision", "ncr"):
                add(f"PEM {m} rises with epsilon (k={k}: eps={lo:g} vs {hi:g})",
                    (cell[lo][m], cell[hi][m]), "first < second", cell[lo][m] < cell[hi][m])
    kmin, kmax = min(grid["ks"]), max(grid["ks"])
    a = {r["k"]: r for r in pem if r["epsilon"] == hi}
    if kmin in a and kmax in a and kmin != kmax:
        add(f"PEM precision falls as k grows (eps={hi:g}: k={kmin} vs {kmax})",
            (a[kmin]["precision"], a[kmax]["precision"]), "first >= second",
            a[kmin]["precision"] >= a[kmax]["precision"])
    for r in attack:
        tol = 5 * r["prediction_std"] + 1e-12
        add(f"MGA realized gain within 5 sd of the objective (beta={r['beta']:g}, "
            f"search={r['search']}, rep {r['repetition']})",
            (r["objective"], r["realized_gain"]), f"|difference| <= {tol:.3g}",
            abs(r["realized_gain"] - r["objective"]) <= tol)
    if attack:
        strongest = max(attack, key=lambda r: (r["beta"], r["search"]))
        add("the strongest MGA promotes targets into the top-k", strongest["targets_in_top_k"],
            ">= 1", strongest["targets_in_top_k"] >= 1)
        add("the defence removes promoted targets (strongest MGA)",
            (strongest["targets_in_top_k"], strongest["targets_in_top_k_defended"]),
            "defended < undefended",
            strongest["targets_in_top_k_defended"] < strongest["targets_in_top_k"])
        add("the defence flags nobody on clean reports", max(r["flagged_clean"] for r in attack),
            "<= 1 per level (alpha = 0.01)", max(r["flagged_clean"] for r in attack) <= 1)
    return checks


def _report(grid, acc, attack_mean, checks, skipped, quick, seconds) -> str:
    lines = [f"heavy hitters over 2^{grid['item_bits']}{' (quick)' if quick else ''}",
             f"n = {grid['n_users']} users, Zipf({grid['zipf_exponent']:g}) over 2^16 ranks "
             f"scattered over the domain, {grid['repetitions']} repetitions; protocols with "
             "their defaults", ""]
    names = list(dict.fromkeys(r["protocol"] for r in acc))
    for k in grid["ks"]:
        lines.append(f"k = {k}: precision / NCR (returned items) [client + server seconds]")
        lines.append(f"{'eps':>5} " + " ".join(f"{n:>28}" for n in names))
        for eps in grid["epsilons"]:
            cell = {r["protocol"]: r for r in acc if r["k"] == k and r["epsilon"] == eps}
            parts = []
            for n in names:
                r = cell.get(n)
                parts.append(f"{'-':>28}" if r is None else
                             f"{r['precision']:.3f} / {r['ncr']:.3f} ({r['returned']:4.1f}) "
                             f"[{r['seconds']:5.2f}]")
            lines.append(f"{eps:>5g} " + " ".join(parts))
        lines.append("")
    for name, why in skipped.items():
        lines.append(f"skipped {name}: {why}")
    lines += ["The paper: " + PAPER_SHAPE, ""]
    if attack_mean:
        lines.append(f"MGA against PEM (eps = {grid['attack_epsilon']:g}, k = {grid['attack_k']}, "
                     f"{grid['attack_targets']} fake targets; means over "
                     f"{grid['attack_repetitions']} repetitions):")
        lines.append(f"{'beta':>5} {'search':>6} {'gain pred':>9} {'gain real':>9} "
                     f"{'in top-k':>8} {'best rank':>9} {'defended':>8} {'prec clean':>10} "
                     f"{'attacked':>8} {'defended':>8} {'fake out':>8} {'honest out':>10}")
        for r in attack_mean:
            lines.append(
                f"{r['beta']:>5g} {r['search']:>6} {r['objective']:>9.4f} "
                f"{r['realized_gain']:>9.4f} {r['targets_in_top_k']:>8.1f} "
                f"{r['best_target_rank']:>9.1f} {r['targets_in_top_k_defended']:>8.1f} "
                f"{r['precision_clean']:>10.3f} {r['precision_attacked']:>8.3f} "
                f"{r['precision_defended']:>8.3f} {r['flagged_fake']:>8.0f} "
                f"{r['flagged_honest']:>10.0f}")
        clean = np.mean([r["precision_clean_defended"] for r in attack_mean])
        lines.append("(best rank 0: no target in the top-k; precision with the defence on clean "
                     f"reports: {clean:.3f})")
    failed = [c for c in checks if not c["ok"]]
    lines += ["", f"Checks: {len(checks) - len(failed)} of {len(checks)} passed."]
    for c in failed:
        lines.append(f"  FAILED: {c['check']}: {c['value']!r}, expected {c['expected']}")
    lines.append(f"Time: {seconds:.1f} s")
    return "\n".join(lines) + "\n"



def _figure(acc: list[dict], grid: dict, out: Path, quick: bool) -> list[Path]:
    """Precision (top row) and NCR (bottom row) against epsilon, one column per k.

    The shape of the PEM paper's figures: both measures rise with epsilon and fall as k
    grows; one curve per protocol (``heavy_hitters.png`` and ``.pdf`` in ``out``).
    """
    from ..figures import _panels, _save, legend  # matplotlib is imported by these only

    ks = [int(k) for k in grid["ks"]]
    fig, axes = _panels(2 * len(ks))
    for col, k in enumerate(ks):
        for row, (key, label) in enumerate((("precision", "precision"), ("ncr", "NCR"))):
            ax = axes[row * len(ks) + col]
            for name in grid["protocols"]:
                pts = sorted((r["epsilon"], r[key]) for r in acc
                             if r["protocol"] == name and r["k"] == k)
                if pts:
                    ax.plot(*zip(*pts), marker="o", label=name)
            ax.set_xlabel("epsilon")
            ax.set_ylabel(label)
            ax.set_ylim(0.0, 1.02)
            ax.set_title(f"{label}, k = {k}")
            ax.grid(alpha=0.3)
    legend(axes, loc="upper left")
    fig.suptitle(f"heavy hitters: {grid['n_users']:,} users, Zipf({grid['zipf_exponent']:g}) "
                 f"over 2^{grid['item_bits']}" + (" (quick)" if quick else ""))
    return _save(fig, out, "heavy_hitters")


def reproduce(*, quick: bool = False, out: Any = None, workers: int = 1, data_dir: Any = None,
              progress: bool = True, figures: bool = True, file: Any = None,
              spec: Optional[Path] = None) -> HeavyHittersResult:
    """Run the heavy-hitter evaluation; write its tables and report.

    Parameters
    ----------
    quick : bool
        The ``[quick]`` grid of ``spec.toml`` (under a minute).
    out : path, optional
        Output folder (default ``results/heavy-hitters`` or
        ``results/heavy-hitters-quick``).
    figures : bool
        Draw precision and NCR against epsilon (``heavy_hitters.png``; needs matplotlib).
    workers, data_dir
        Accepted for the common experiment interface; unused.
    progress : bool
        Print a line per finished cell on stderr.
    file : text stream, optional
        Where to print the report (default stdout).
    spec : path, optional
        Another spec file with the shipped one's keys.

    Returns
    -------
    HeavyHittersResult
    """
    start = time.perf_counter()
    grid = load_spec(quick, spec)
    out = Path(out) if out is not None else Path("results") / (
        "heavy-hitters-quick" if quick else "heavy-hitters")
    out.mkdir(parents=True, exist_ok=True)
    log = sys.stderr if progress else None
    classes, skipped = _protocols(grid["protocols"])
    acc = _accuracy(grid, classes, log)
    attack = _attack(grid, log) if grid.get("attack_betas") else []
    attack_mean = _mean_attack(attack) if attack else []
    checks = _checks(acc, attack, grid)
    tables = {"accuracy": acc, "attack": attack, "attack_mean": attack_mean, "checks": checks}
    failed = sum(not c["ok"] for c in checks)
    text = _report(grid, acc, attack_mean, checks, skipped, quick, time.perf_counter() - start)
    files = _publish(out, tables, text, file)
    drawn = _figure(acc, grid, out, quick) if figures and acc and have_matplotlib() else []
    return HeavyHittersResult(text=text, failed=failed, files=files, figures=drawn, tables=tables,
                              checks=checks, skipped=skipped)
