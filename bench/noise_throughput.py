"""Throughput of fastldp's exact samplers beside NumPy's (inexact) Laplace and normal.

::

    python bench/noise_throughput.py            # n = 10**7 per call (about a minute)
    python bench/noise_throughput.py --quick    # n = 10**6 (a few seconds)

For each row it prints samples per second (best of ``--repeats`` calls, the
rows interleaved so that a change in machine load hits all of them) and the
ratio to ``numpy.random.Generator.laplace`` (float64, one thread: NumPy's
generators are serial) measured in the same run:

- ``fastldp.noise.discrete_laplace`` at scales 1, 10 and 1000/7 with the
  default thread count and with one thread (the target: >= 20 M samples/s
  on 2 cores);
- ``fastldp.noise.discrete_gaussian`` at sigma2 = 1 and 1000/3;
- ``Generator.laplace`` and ``Generator.normal`` (PCG64).

The column ``M/CPU-s`` divides by the CPU seconds of the process (all its
threads, ``time.process_time``) instead of wall-clock seconds: on a loaded
machine it stays near the quiet figure, and times the thread count it is
what that many quiet cores give.

Then the floor of the discrete Laplace: the Philox4x64-10 blocks each sample
reads (counted by ``_noise.laplace_philox_blocks``) times the CPU time of one
block (``_hash.philox_floor``), beside the measured CPU time per sample of
one thread. The rest of a sample's time is the integer logic of the
rejection loops (data-dependent branches), not the random words.

Rates are best of ``--repeats`` calls. The script prints the load average
before and after: wall-clock figures from a loaded machine are not
comparable with a quiet one.
"""

from __future__ import annotations

#: the issue's throughput target for the discrete Laplace on 2 cores (samples/s)
TARGET = 20e6

import argparse
import os
import time
from fractions import Fraction

import numpy as np

import fastldp
from fastldp import noise
from fastldp._kernels import _noise
from fastldp._kernels._hash import philox_floor


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _timed(fn):
    """Wall-clock and CPU seconds (all threads of this process) of one call."""
    w0, c0 = time.perf_counter(), time.process_time()
    fn()
    return time.perf_counter() - w0, time.process_time() - c0


def main(argv=None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="n = 10**6 instead of 10**7")
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--threads", type=int, default=None,
                        help="threads of the default rows (default: OpenMP's)")
    args = parser.parse_args(argv)
    n = 10**6 if args.quick else 10**7
    threads = fastldp._random.resolve_n_threads(args.threads, "noise_throughput")
    gen = np.random.default_rng(1)

    rows = {}
    for label, scale in (("1", 1), ("10", 10), ("1000/7", Fraction(1000, 7))):
        rows[f"discrete_laplace scale {label}, {threads} threads"] = (
            lambda scale=scale: noise.discrete_laplace(scale, n, rng=gen, n_threads=threads))
        rows[f"discrete_laplace scale {label}, 1 thread"] = (
            lambda scale=scale: noise.discrete_laplace(scale, n, rng=gen, n_threads=1))
    for label, s2 in (("1", 1), ("1000/3", Fraction(1000, 3))):
        rows[f"discrete_gaussian sigma2 {label}, {threads} threads"] = (
            lambda s2=s2: noise.discrete_gaussian(s2, n, rng=gen, n_threads=threads))
    rows["numpy Generator.laplace (float64), 1 thread"] = lambda: gen.laplace(0.0, 10.0, n)
    rows["numpy Generator.normal (float64), 1 thread"] = lambda: gen.normal(0.0, 1.0, n)

    print(f"fastldp {fastldp.__version__}, numpy {np.__version__}, n = {n:,}, "
          f"{os.cpu_count()} cores, default threads {threads}")
    print(f"load average before: {os.getloadavg()[0]:.2f}")
    for fn in rows.values():  # warm-up: thread pools, page faults
        fn()
    best = dict.fromkeys(rows, float("inf"))
    cpu = dict.fromkeys(rows, float("inf"))
    for _ in range(args.repeats):  # interleaved: load changes hit every row alike
        for name, fn in rows.items():
            wall, used = _timed(fn)
            best[name] = min(best[name], wall)
            cpu[name] = min(cpu[name], used)
    base = n / best["numpy Generator.laplace (float64), 1 thread"]
    # M/CPU-s: samples per CPU-second of this process (all its threads), which a
    # loaded machine does not deflate the way it deflates wall-clock rates;
    # times the thread count it is what that many quiet cores would give
    print(f"{'sampler':52s} {'M samples/s':>11s} {'vs numpy laplace':>16s} {'M/CPU-s':>8s}")
    for name in rows:
        rate = n / best[name]
        print(f"{name:52s} {rate / 1e6:11.1f} {rate / base:15.2f}x {n / cpu[name] / 1e6:8.1f}")

    # the floor: Philox blocks per sample x time per block (one thread)
    m = 10**6
    idents = np.arange(m, dtype=np.uint64)
    block_s = min(_timed(lambda: philox_floor(7, idents, 256, 1))[1] for _ in range(3)) / m
    print(f"\nPhilox4x64-10: {block_s * 1e9:.1f} CPU-ns per block of four 64-bit words "
          f"(one thread)")
    print(f"{'discrete_laplace scale':24s} {'blocks/sample':>14s} {'floor CPU-ns/sample':>20s} "
          f"{'measured CPU-ns/sample':>23s}")
    for label, (t, s) in (("1", (1, 1)), ("10", (10, 1)), ("1000/7", (1000, 7))):
        per = _noise.laplace_philox_blocks(12345, t, s, m) / m
        one = cpu[f"discrete_laplace scale {label}, 1 thread"] / n
        print(f"{label:24s} {per:14.3f} {per * block_s * 1e9:20.1f} {one * 1e9:23.1f}")
    target = min(n / best[f"discrete_laplace scale {label}, {threads} threads"]
                 for label in ("1", "10", "1000/7"))
    per_cpu = min(n / cpu[f"discrete_laplace scale {label}, 1 thread"]
                  for label in ("1", "10", "1000/7"))
    print(f"\nslowest discrete_laplace row at {threads} threads: {target / 1e6:.1f} M samples/s "
          f"wall-clock (target >= {TARGET / 1e6:.0f} M/s on 2 cores: "
          f"{'met' if target >= TARGET else 'NOT met'} "
          f"in this run); one thread's slowest rate per CPU-second, times 2: "
          f"{2 * per_cpu / 1e6:.1f} M/s")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
