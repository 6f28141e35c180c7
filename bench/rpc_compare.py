"""RPC and Collision aggregation beside straightforward NumPy versions (paper 001 sizes).

It times the installed fastldp (see bench/README.md for timing a working
tree)::

    python bench/rpc_compare.py              # n = 10,000, d = 100, m = 50
    python bench/rpc_compare.py --repeats 9 --threads 2

Sections:

(a) Aggregation throughput. ``RPC.estimate`` (``mu_hat = (alpha/n) sum_i Z_i S_i``
    through the global-sketch kernel) against a NumPy version that builds each
    user's sign vector ``S_i`` with ``numpy.random.Philox`` (the same
    counter-based hash, numpy's implementation) and forms ``S^T Z``; and
    ``Collision.estimate`` (``sum_i 1(Y_i = H_i(j))`` through the OLH support
    kernel) against a NumPy version that hashes every ``(i, j)`` with
    ``numpy.random.Philox`` and counts matches. Both twins are checked against
    the kernels before timing. Throughput is users per second.
(b) One trial (client ``privatize`` + server ``estimate``) of every method of
    paper 001's comparison at that size.

It ends with README's sentences on RPC (Performance), in the README's
words, with this run's figures (the default thread count's rows).

Times are ``time.perf_counter`` wall-clock seconds, best of N repeats after
one warm-up call. Nothing here is asserted; the numbers are printed. On a
shared machine the multi-threaded rows depend on the load (printed in the
header); the one-thread rows are the stable ones.
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

import fastldp
from fastldp.vectors.datasets import frequency_vectors, signed_vectors
from fastldp.vectors import PCKVGRR, PCKVUE, Collision, PrivKVM, Succinct
from fastldp.vectors.rpc import RPC

TWO256 = 2**256
SEED = 20240601


def best_of(fn, repeats):
    """Best wall-clock time of ``repeats`` calls after one untimed warm-up call
    (the first parallel region starts the OpenMP thread pool)."""
    best, out = float("inf"), fn()
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def short(seconds):
    """Three significant digits, as README writes times: ``0.20 ms``, ``1.25 ms``, ``36 ms``."""
    value, unit = (seconds, "s") if seconds >= 1.0 else (seconds * 1e3, "ms")
    if value >= 100 or value <= 0:
        return f"{value:.0f} {unit}"
    digits = max(0, 2 - int(np.floor(np.log10(value))))
    return f"{value:.{digits}f} {unit}"


def fmt(seconds):
    return f"{seconds * 1e3:9.2f} ms" if seconds < 1 else f"{seconds:9.3f} s "


# ------------------------------------------------------------ NumPy twins
def numpy_rpc_aggregate(seed, reports, alpha, d):
    """``(alpha / n) S^T Z`` with ``S_i`` from numpy's Philox (stream 0, one row per user)."""
    n = reports.shape[0]
    nblocks = (d + 255) // 256
    words = np.empty((n, 4 * nblocks), dtype="<u8")
    for i in range(n):
        words[i] = np.random.Philox(key=seed + (i << 64), counter=TWO256 - 1).random_raw(4 * nblocks)
    bits = np.unpackbits(words.view(np.uint8), axis=1, count=d, bitorder="little")
    signs = 1.0 - 2.0 * bits
    return (alpha / n) * (signs.T @ reports)


def numpy_collision_aggregate(seed, reports, t, p, scale):
    """Eq. (14) with ``H_i(j)`` from numpy's Philox (OLH stream 1, multiply-shift)."""
    n = reports.shape[0]
    nblocks = (p + 7) // 8
    counts = np.zeros(p)
    base = (1 << 64) - 1  # numpy increments the counter before each block
    for i in range(n):
        words = np.random.Philox(key=seed + (i << 64), counter=base).random_raw(4 * nblocks)
        lanes = words.astype("<u8").view("<u4")[:p].astype(np.uint64)  # 32-bit lanes in order
        buckets = (lanes * np.uint64(t)) >> np.uint64(32)
        counts += buckets == np.uint64(reports[i])
    return (counts / n - 1.0 / t) * scale


# -------------------------------------------------------------- sections
def section_aggregate(n, d, m, threads, repeats):
    print()
    print(f"(a) aggregation, n = {n:,}, d = {d}, m = {m}, eps = 1")
    print("-" * 78)
    x = frequency_vectors(n=n, d=d, m=m, rng=0)
    rows = []
    for label, nt in (("default", threads), ("1 thread", 1)):
        rpc = RPC(d=d, m=m, epsilon=1.0, codebook_seed=SEED, n_threads=nt)
        col = Collision(d=d, m=m, epsilon=1.0, codebook_seed=SEED, n_threads=nt)
        y_rpc = rpc.privatize(x, rng=1)
        y_col = col.privatize(x, rng=1)
        t_rpc, est_rpc = best_of(lambda: rpc.estimate(y_rpc), repeats)
        t_col, est_col = best_of(lambda: col.estimate(y_col), repeats)
        rows.append((label, rpc.n_threads, t_rpc, t_col, est_rpc, est_col, rpc, col, y_rpc, y_col))
    _, _, _, _, est_rpc, est_col, rpc, col, y_rpc, y_col = rows[-1]
    t_np_rpc, ref_rpc = best_of(lambda: numpy_rpc_aggregate(SEED, y_rpc, rpc.alpha, d),
                                max(1, repeats // 3))
    t_np_col, ref_col = best_of(lambda: numpy_collision_aggregate(SEED, y_col, col.t, d, col.scale),
                                max(1, repeats // 3))
    err_rpc = float(np.abs(ref_rpc - est_rpc.raw).max())
    err_col = float(np.abs(ref_col - est_col.raw).max())
    print(f"NumPy twins agree with the kernels: RPC max |diff| = {err_rpc:.1e}, "
          f"Collision max |diff| = {err_col:.1e}")
    print(f"{'method':<11}{'threads':>8}{'fastldp':>13}{'NumPy':>13}{'ratio':>9}{'users/s':>15}")
    for label, nt, t_rpc, t_col, *_ in rows:
        print(f"{'RPC':<11}{nt:>8}{fmt(t_rpc):>13}{fmt(t_np_rpc):>13}{t_np_rpc / t_rpc:>8.0f}x"
              f"{n / t_rpc:>15,.0f}")
        print(f"{'Collision':<11}{nt:>8}{fmt(t_col):>13}{fmt(t_np_col):>13}{t_np_col / t_col:>8.0f}x"
              f"{n / t_col:>15,.0f}")
    _, _, t_rpc, t_col, *_ = rows[0]  # the default thread count
    _, _, t_rpc1, _, *_ = rows[-1]  # one thread: the stable row on a busy machine
    return [f"at n = {n:,}, d = {d}, m = {m}, RPC aggregation takes {short(t_rpc)}, "
            f"{t_np_rpc / t_rpc:.0f}x a straightforward NumPy version ({short(t_rpc1)} and "
            f"{t_np_rpc / t_rpc1:.0f}x with one thread)",
            f"Collision takes {short(t_col)} ({t_np_col / t_col:.0f}x its NumPy version)"]


def section_trials(n, d, m, threads, repeats):
    print()
    print(f"(b) one trial (privatize + estimate), n = {n:,}, d = {d}, m = {m}, eps = 1, "
          f"{threads} thread(s)")
    print("-" * 78)
    freq = frequency_vectors(n=n, d=d, m=m, rng=0)
    signed = signed_vectors(n=n, d=d, m=m, rng=0)
    kw = {"codebook_seed": SEED, "n_threads": threads}
    methods = [
        ("RPC (Duchi)", RPC(d=d, m=m, epsilon=1.0, **kw), freq),
        ("RPC signed", RPC(d=d, m=m, epsilon=1.0, **kw), signed),
        ("PCKV-UE", PCKVUE(d=d, m=m, epsilon=1.0), freq),
        ("PCKV-GRR", PCKVGRR(d=d, m=m, epsilon=1.0), freq),
        ("PrivKVM c=3", PrivKVM(d=d, m=m, epsilon=1.0), freq),
        ("Succinct", Succinct(d=d, m=m, epsilon=1.0, n_users=n, **kw), freq),
        ("Collision", Collision(d=d, m=m, epsilon=1.0, **kw), freq),
        ("Coll. signed", Collision(d=d, m=m, epsilon=1.0, values="signed", **kw), signed),
    ]
    print(f"{'method':<14}{'privatize':>13}{'estimate':>13}{'trial':>13}{'MAE':>9}")
    trials = []
    for name, mech, x in methods:
        t_p, y = best_of(lambda: mech.privatize(x, rng=2), repeats)
        t_e, est = best_of(lambda: mech.estimate(y), repeats)
        mae = float(np.abs(est.raw - x.mean()).mean())
        trials.append(t_p + t_e)
        print(f"{name:<14}{fmt(t_p):>13}{fmt(t_e):>13}{fmt(t_p + t_e):>13}{mae:>9.4f}")
    return [f"One trial of every paper-001 method (privatize and estimate) takes "
            f"{min(trials) * 1e3:.0f}-{max(trials) * 1e3:.0f} ms"]


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10_000)
    ap.add_argument("--d", type=int, default=100)
    ap.add_argument("--m", type=int, default=50)
    ap.add_argument("--threads", type=int, default=None,
                    help="threads of the default rows (default: OpenMP's default)")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    threads = args.threads
    cfg = fastldp.show_config(file=open(os.devnull, "w"))
    if threads is None:
        threads = max(1, cfg["default_threads"])
    try:
        load = " ".join(open("/proc/loadavg").read().split()[:3])
    except OSError:
        load = "n/a"
    print(f"fastldp {cfg['fastldp']}, numpy {cfg['numpy']}, OpenMP {cfg['openmp']}, "
          f"{os.cpu_count()} cores, load average {load}")
    lines = section_aggregate(args.n, args.d, args.m, threads, args.repeats)
    lines += section_trials(args.n, args.d, args.m, 1, args.repeats)
    print()
    print("README lines (Performance), in the README's words, from this run:")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
