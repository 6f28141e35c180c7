"""fastldp's memoized protocols against multi-freq-ldpy's: client and server times, same answers.

For L-GRR (the paper's calibration, as multi-freq-ldpy computes it), L-OUE,
L-OSUE, L-SUE, L-SOUE and dBitFlipPM at ``n`` reports (default 10^5) of a
Zipf population over ``D`` symbols:

* **client**: fastldp's ``privatize`` of the ``n`` values through a fresh
  ``MemoryMemo`` (every report draws and stores its permanent response, the
  first round's cost) against multi-freq-ldpy's ``*_Client`` called once per
  value (both rounds, no memo: multi-freq-ldpy leaves memoization to the
  caller);
* **server**: fastldp's ``estimate`` against multi-freq-ldpy's
  ``*_Aggregator_MI`` on the *same* reports (fastldp's, converted to
  multi-freq-ldpy's layout), whose answers must agree: multi-freq-ldpy clips
  at zero and renormalizes, so fastldp's counts go through the same two
  steps before the largest absolute difference is taken.

Times are the best of ``--repeat`` runs, fastldp and multi-freq-ldpy
interleaved; numba's compilation (multi-freq-ldpy's first calls) is done
before timing. The server target of the issue: at least 10x at n = 10^5.

    python bench/longitudinal_compare.py [--n 100000] [--domain 16] [--repeat 3]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from fastldp.longitudinal import LGRR, LOSUE, LOUE, LSOUE, LSUE, MemoryMemo
from fastldp.longitudinal.dbitflip import DBitFlipPM


def best(fn, repeat):
    times = []
    out = None
    for _ in range(repeat):
        t0 = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t0)
    return min(times), out


def normalized(counts):
    f = np.clip(np.asarray(counts, dtype=np.float64), 0, None)
    return f / f.sum() if f.sum() > 0 else f


def short(seconds):
    return f"{seconds * 1e3:.1f} ms" if seconds < 1 else f"{seconds:.2f} s"


def unary_layout(reports, D):
    return np.unpackbits(reports, axis=1, bitorder="little")[:, :D].astype(np.int64)


def dbitflip_layout(reports, k):
    out = -np.ones((reports.shape[0], k))
    rows = np.repeat(np.arange(reports.shape[0]), reports.shape[1])
    out[rows, (reports >> 1).ravel()] = (reports & 1).ravel()
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--domain", type=int, default=16)
    ap.add_argument("--epsilon-inf", type=float, default=4.0)
    ap.add_argument("--epsilon-1", type=float, default=1.0)
    ap.add_argument("--d", type=int, default=4, help="dBitFlipPM's sampled buckets")
    ap.add_argument("--repeat", type=int, default=3)
    args = ap.parse_args()
    from multi_freq_ldpy.long_freq_est import L_GRR, L_OSUE, L_OUE, L_SOUE, L_SUE, dBitFlipPM

    n, D, ei, e1 = args.n, args.domain, args.epsilon_inf, args.epsilon_1
    rng = np.random.default_rng(0)
    w = 1.0 / np.arange(1, D + 1) ** 1.1
    x = rng.choice(D, size=n, p=w / w.sum())
    load_start = os.getloadavg()

    cases = [
        ("L-GRR", LGRR(domain_size=D, epsilon_inf=ei, epsilon_1=e1, calibration="paper",
                       codebook_seed=0),
         lambda v: L_GRR.L_GRR_Client(v, D, ei, e1),
         lambda r: L_GRR.L_GRR_Aggregator_MI(list(r), D, ei, e1), lambda r: r),
        ("L-OUE", LOUE(domain_size=D, epsilon_inf=ei, epsilon_1=e1, codebook_seed=0),
         lambda v: L_OUE.L_OUE_Client(v, D, ei, e1),
         lambda r: L_OUE.L_OUE_Aggregator_MI(r, ei, e1), lambda r: unary_layout(r, D)),
        ("L-OSUE", LOSUE(domain_size=D, epsilon_inf=ei, epsilon_1=e1, codebook_seed=0),
         lambda v: L_OSUE.L_OSUE_Client(v, D, ei, e1),
         lambda r: L_OSUE.L_OSUE_Aggregator_MI(r, ei, e1), lambda r: unary_layout(r, D)),
        ("L-SUE", LSUE(domain_size=D, epsilon_inf=ei, epsilon_1=e1, codebook_seed=0),
         lambda v: L_SUE.L_SUE_Client(v, D, ei, e1),
         lambda r: L_SUE.L_SUE_Aggregator_MI(r, ei, e1), lambda r: unary_layout(r, D)),
        ("L-SOUE", LSOUE(domain_size=D, epsilon_inf=ei, epsilon_1=e1, codebook_seed=0),
         lambda v: L_SOUE.L_SOUE_Client(v, D, ei, e1),
         lambda r: L_SOUE.L_SOUE_Aggregator_MI(r, ei, e1), lambda r: unary_layout(r, D)),
        (f"dBitFlipPM (d={args.d})",
         DBitFlipPM(domain_size=D, n_buckets=D, n_sampled=args.d, epsilon_inf=ei,
                    codebook_seed=0),
         lambda v: dBitFlipPM.dBitFlipPM_Client(v, D, D, args.d, ei),
         lambda r: dBitFlipPM.dBitFlipPM_Aggregator_MI(r, D, args.d, ei),
         lambda r: dbitflip_layout(r, D)),
    ]
    rows = []
    jit = 0.0
    for name, ours, their_client, their_server, layout in cases:
        t0 = time.perf_counter()
        their_client(int(x[0]))  # numba compiles on the first call
        jit += time.perf_counter() - t0
        xs = [int(v) for v in x]
        tc_ours, tc_theirs = [], []
        for rep in range(args.repeat):  # interleaved
            t0 = time.perf_counter()
            reports = ours.privatize(x, memo=MemoryMemo(), rng=rep)
            tc_ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            [their_client(v) for v in xs]
            tc_theirs.append(time.perf_counter() - t0)
        theirs_reports = layout(reports)
        ts_ours, ts_theirs = [], []
        for _ in range(args.repeat):
            t0 = time.perf_counter()
            est = ours.estimate(reports)
            ts_ours.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            theirs = their_server(theirs_reports)
            ts_theirs.append(time.perf_counter() - t0)
        err = float(np.max(np.abs(normalized(est.counts) - np.asarray(theirs))))
        rows.append((name, min(tc_theirs), min(tc_ours), min(ts_theirs), min(ts_ours), err))
        print(f"{name}: client {short(min(tc_ours))} vs {short(min(tc_theirs))}, server "
              f"{short(min(ts_ours))} vs {short(min(ts_theirs))}, max abs diff {err:.2e}",
              flush=True)
    load_end = os.getloadavg()

    print()
    print("README lines (Performance), in the README's words, from this run:")
    print(f"the one-minute load average was {load_start[0]:.1f} when the run started and "
          f"{load_end[0]:.1f} when it ended ({os.cpu_count()} cores); n = {n:,} reports, "
          f"D = {D}, epsilon_inf = {ei:g}, epsilon_1 = {e1:g}, best of {args.repeat}")
    print("| protocol | client multi-freq-ldpy | client fastldp | speed-up | server "
          "multi-freq-ldpy | server fastldp | speed-up | max abs difference |")
    print("|---|---|---|---|---|---|---|---|")
    for name, tc_t, tc_o, ts_t, ts_o, err in rows:
        err_text = f"{err:.1e}"  # its own field: README's figure rule reads no exponents
        print(f"| {name} | {short(tc_t)} | {short(tc_o)} | {tc_t / tc_o:.0f}x | {short(ts_t)} "
              f"| {short(ts_o)} | {ts_t / ts_o:.0f}x | {err_text} |")
    print(f"multi-freq-ldpy's numba compilation took {short(jit)} in all (first calls, not "
          "counted); fastldp's client time includes drawing and storing every permanent "
          "response in a MemoryMemo (a first round), multi-freq-ldpy's has no memo")
    worst = min(ts_t / ts_o for _, _, _, ts_t, ts_o, _ in rows)
    print(f"server target >= 10x at n = 10^5: lowest {worst:.0f}x "
          f"({'met' if worst >= 10 else 'missed'})")


if __name__ == "__main__":
    main()
