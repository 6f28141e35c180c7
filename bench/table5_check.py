"""The six methods of paper 000's Table 5 at its configuration, clean and attacked.

d1 = d2 = 64, s = 128, k = 8, n = 128,000, homogeneous eps = 0.75, alpha in
{0, 0.10}, the largest budgets corrupted (homogeneous: the first 12,800),
optimized native-alphabet attack, G = 8 groups for the medoid decoders.
Prints the mean squared Frobenius loss E_s per method over the seeds, for
each support rule of the final projection (``raw``: the exact Euclidean
projection, the package default; ``clipped``: section 6's "top s clipped
coordinates", ties toward the smaller index). Both rules decode the same
reports.

Usage: ``python bench/table5_check.py [--seeds 1] [--support-rule raw|clipped|both]``

It ends with the line README gives under the table: how long the run took,
on how many cores, and the load average when it started. It runs the
installed fastldp (see bench/README.md for running a working tree).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

import fastldp
from fastldp.relations import apply_attack, false_support, optimized_attack
from fastldp.corruption import choose_corrupted
from fastldp.relations import rate_diagnostic_population
from fastldp.relations import PaddedRelationSampling
from fastldp.metrics import squared_frobenius_loss

PAPER = {  # Table 5: clean, attacked
    "JPRS-Global": (0.461, 0.995), "JPRS-Medoid": (0.923, 1.059),
    "P-RS-HR": (0.847, 1.119), "P-RS-HR-Medoid": (1.402, 1.426),
    "P-RS-OLH": (0.850, 1.154), "P-RS-OLH-Medoid": (1.276, 1.395),
}


def run_seed(seed: int, n_groups: int, rules=("raw",)):
    ss = np.random.SeedSequence([2026, seed]).spawn(5)
    pop = rate_diagnostic_population(shape=(64, 64), s=128, k=8, n=128_000, rng=ss[0])
    eps = np.full(pop.n, 0.75)
    S = np.flatnonzero(pop.target.ravel())
    F = false_support(S, 4096, 128, rng=ss[1])
    bad = choose_corrupted(eps, 0.10)
    codebook = int(ss[2].generate_state(1, np.uint64)[0])
    mechs = {
        "JPRS": fastldp.JPRS(shape=(64, 64), k=8, s=128, codebook_seed=codebook),
        "P-RS-HR": PaddedRelationSampling(shape=(64, 64), k=8, s=128, oracle="hr", codebook_seed=codebook),
        "P-RS-OLH": PaddedRelationSampling(shape=(64, 64), k=8, s=128, oracle="olh", codebook_seed=codebook),
    }
    rows = {}
    for family, mech in mechs.items():
        t0 = time.perf_counter()
        reports = mech.privatize(pop.relations, epsilons=eps, rng=ss[3])
        attack = optimized_attack(mech, eps, bad, true_support=S, false_support=F, rng=ss[4])
        glob = "JPRS-Global" if family == "JPRS" else family
        for label, rep in (("clean", reports), ("attacked", apply_attack(reports, attack))):
            for rule in rules:
                out = mech.decode(rep, eps, decoders=("global", "medoid"), n_groups=n_groups,
                                  support_rule=rule)
                rows.setdefault(glob, {})[label, rule] = squared_frobenius_loss(
                    out["global"].matrix, pop.target)
                rows.setdefault(family + "-Medoid", {})[label, rule] = squared_frobenius_loss(
                    out["medoid"].matrix, pop.target)
        rows[glob]["seconds"] = rows[family + "-Medoid"]["seconds"] = time.perf_counter() - t0
    return rows


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--groups", type=int, default=8)
    ap.add_argument("--support-rule", choices=("raw", "clipped", "both"), default="both")
    args = ap.parse_args(argv)
    rules = ("raw", "clipped") if args.support_rule == "both" else (args.support_rule,)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    t0 = time.perf_counter()
    results = [run_seed(seed, args.groups, rules) for seed in range(args.seeds)]
    seconds = time.perf_counter() - t0
    head = "| method | " + " | ".join(f"clean ({r}) | attacked ({r})" for r in rules)
    print(head + " | paper clean | paper attacked | family time (s) |")
    print("|---" * (2 * len(rules) + 4) + "|")
    for name, (pc, pa) in PAPER.items():
        cells = []
        for rule in rules:
            for label in ("clean", "attacked"):
                cells.append(f"{np.mean([r[name][label, rule] for r in results]):.3f}")
        secs = np.mean([r[name]["seconds"] for r in results])
        print(f"| {name} | {' | '.join(cells)} | {pc:.3f} | {pa:.3f} | {secs:.1f} |")
    print(f"({args.seeds} seed(s), G = {args.groups})")
    took = f"{seconds:.0f} s" if seconds < 120 else f"about {seconds / 60:.0f} minutes"
    print(f"the run took {took} on {os.cpu_count()} cores",
          f"(load average {load:.1f} at the start)")


if __name__ == "__main__":
    main()
