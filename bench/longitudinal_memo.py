"""Speed of the longitudinal client in simulation: L-GRR privatize through MemoryMemo.

10^6 users report for 30 rounds; each round a public fraction of them (``--change``,
default 0.1) changes value, so the memo grows by about that many keys a round. The
issue's target: the whole run under 30 s on 2 cores. Also times the SQLite
MemoStore on a smaller batch (its cost is per key, not NumPy speed), and a one-shot
GRR privatize of the same batches as the floor (no memo).

    python bench/longitudinal_memo.py [--users 1000000] [--rounds 30] [--domain 100]
"""

from __future__ import annotations

import argparse
import os
import tempfile
import time

import numpy as np

from fastldp.longitudinal import LGRR, MemoryMemo, MemoStore
from fastldp.oracles import GRR


def rounds_of_values(n_users, n_rounds, domain, change, seed):
    rng = np.random.default_rng(seed)
    values = rng.integers(0, domain, n_users)
    for _ in range(n_rounds):
        yield values
        moved = rng.random(n_users) < change
        values = values.copy()
        values[moved] = rng.integers(0, domain, int(moved.sum()))


def run_memory(n_users, n_rounds, domain, change):
    lgrr = LGRR(domain_size=domain, epsilon_inf=4.0, epsilon_1=1.0, codebook_seed=0)
    memo = MemoryMemo()
    rng = np.random.default_rng(1)
    per_round = []
    t0 = time.perf_counter()
    for values in rounds_of_values(n_users, n_rounds, domain, change, 2):
        t = time.perf_counter()
        lgrr.privatize(values, memo=memo, rng=rng)
        per_round.append(time.perf_counter() - t)
    return time.perf_counter() - t0, per_round, len(memo)


def run_one_shot(n_users, n_rounds, domain, change):
    grr = GRR(domain_size=domain, epsilon=1.0, codebook_seed=0)
    rng = np.random.default_rng(1)
    t0 = time.perf_counter()
    for values in rounds_of_values(n_users, n_rounds, domain, change, 2):
        grr.privatize(values, rng=rng)
    return time.perf_counter() - t0


def run_sqlite(n_users, n_rounds, domain, change):
    lgrr = LGRR(domain_size=domain, epsilon_inf=4.0, epsilon_1=1.0, codebook_seed=0)
    rng = np.random.default_rng(1)
    with tempfile.TemporaryDirectory() as tmp:
        with MemoStore(os.path.join(tmp, "memo.sqlite")) as memo:
            t0 = time.perf_counter()
            for values in rounds_of_values(n_users, n_rounds, domain, change, 2):
                lgrr.privatize(values, memo=memo, rng=rng)
            return time.perf_counter() - t0, len(memo)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--rounds", type=int, default=30)
    ap.add_argument("--domain", type=int, default=100)
    ap.add_argument("--change", type=float, default=0.1)
    ap.add_argument("--sqlite-users", type=int, default=20_000)
    args = ap.parse_args()
    total, per_round, keys = run_memory(args.users, args.rounds, args.domain, args.change)
    floor = run_one_shot(args.users, args.rounds, args.domain, args.change)
    print(f"L-GRR + MemoryMemo: {args.users:,} users x {args.rounds} rounds (D = {args.domain}, "
          f"{args.change:.0%} change a round): {total:.2f} s "
          f"(first round {per_round[0]:.2f} s, later rounds median "
          f"{float(np.median(per_round[1:])):.2f} s); {keys:,} permanent responses")
    print(f"one-shot GRR privatize of the same batches (no memo): {floor:.2f} s "
          f"(memo overhead x{total / floor:.1f})")
    print(f"target: under 30 s -> {'met' if total < 30 else 'NOT met'}")
    sq, sq_keys = run_sqlite(args.sqlite_users, 3, args.domain, args.change)
    print(f"L-GRR + MemoStore (SQLite, WAL, synchronous=FULL): {args.sqlite_users:,} users x 3 "
          f"rounds: {sq:.2f} s ({3 * args.sqlite_users / sq:,.0f} reports/s); "
          f"{sq_keys:,} permanent responses")


if __name__ == "__main__":
    main()
