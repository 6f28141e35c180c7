"""Speed of hierarchical histograms at D = 2^20 with 10^6 users: clients, server, consistency.

The issue's target: hierarchical histograms with consistency (clients and
server) under 5 s on 2 cores at D = 2^20 and 10^6 users. The hierarchy is
B = 4 (10 levels, users split by level) with the default oracle rule: GRR
at the 4-node level, OUE up to 1,024 nodes, Hadamard response beyond
(``fastldp.ranges._protocol``). Prints each stage's seconds (best of
``--repeat``), the level oracles, and the RMSE of 1,000 random ranges as
a sanity line.

The numbers mean something only on a quiet machine; the load line says
how busy this one was.

    python bench/ranges_speed.py [--users 1000000] [--bits 20] [--branching 4] [--epsilon 1.0]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from fastldp.ranges import HierarchicalHistogram


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=1_000_000)
    parser.add_argument("--bits", type=int, default=20)
    parser.add_argument("--branching", type=int, default=4)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    D = 2**args.bits
    rng = np.random.default_rng(0)
    values = np.clip(np.floor(rng.normal(D / 3, D / 10, args.users)), 0, D - 1).astype(np.int64)
    hh = HierarchicalHistogram(epsilon=args.epsilon, domain_size=D, branching=args.branching,
                               codebook_seed=1)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"D = 2^{args.bits}, n = {args.users:,}, B = {args.branching}, "
          f"epsilon = {args.epsilon}, {hh.n_levels} levels: {', '.join(hh.level_oracles)}; "
          f"report {hh.row_width} int64 words; cpus {os.cpu_count()}, 1-min load {load:.1f}")
    best: dict = {}
    for r in range(args.repeat):
        t0 = time.perf_counter()
        reports = hh.privatize(values, rng=r)
        t1 = time.perf_counter()
        partial = hh.partial(reports)
        t2 = time.perf_counter()
        est = hh.finalize(partial)
        t3 = time.perf_counter()
        for name, s in (("clients (privatize)", t1 - t0), ("server: partial", t2 - t1),
                        ("server: finalize + consistency", t3 - t2), ("total", t3 - t0)):
            best[name] = min(best.get(name, float("inf")), s)
    for name, s in best.items():
        print(f"  {name:<32} {s:7.2f} s (best of {args.repeat})")
    verdict = "under" if best["total"] < 5.0 else "OVER"
    print(f"  target 5 s: {verdict}")
    a = rng.integers(0, D, 1000)
    b = a + rng.integers(0, D - a)
    prefix = np.concatenate([[0], np.cumsum(np.bincount(values, minlength=D))])
    err = est.range_count(a, b) - (prefix[b + 1] - prefix[a])
    print(f"  RMSE of 1,000 random ranges: {np.sqrt(np.mean(err**2)):.0f} users "
          f"({np.sqrt(np.mean(err**2)) / args.users:.2e} of n)")


if __name__ == "__main__":
    main()
