"""Scale-out benchmark: streaming decode from Parquet, Dask workers, and peak memory.

It times the installed fastldp (``pip install '.[distributed]'``; see
bench/README.md for timing a working tree)::

    python bench/stream_decode.py            # 1e6 / 1e7 / 3e7 reports (several minutes)
    python bench/stream_decode.py --quick    # 2e5 / 1e6 reports (about a minute)

It prints, for JPRS (64 x 64 = 4,096 pairs, personal budgets uniform in
[0.5, 2]) and OLH (domain 4,096, eps = 1):

(a) throughput in reports per second of the in-memory ``estimate`` on
    arrays already in RAM (the kernel), of the streaming decode from the
    Parquet file (``fastldp.reports.decode_files``), and their ratio;
(b) the Dask path (``fastldp.distributed.estimate``) on a LocalCluster with
    one and with two single-threaded worker processes;
(c) the peak resident set (``VmHWM``) of a fresh process that decodes
    files of increasing size; the last column must stay flat;

then the README's Scale-out table and sentences, in the README's words,
with this run's figures (the size of one JPRS partial, the extrapolation to
10^9 reports).

Report files are written once into ``--dir`` (default a temporary folder)
and reused by later runs.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

from fastldp import distributed, mechanisms
from fastldp.reports import ReportFile, decode_files


ROW_GROUP = 1 << 18  # rows per row group: the unit of work of a stream step and a Dask task


def _file(folder: str, preset: str, n: int) -> str:
    path = os.path.join(folder, f"{preset}-{n}.parquet")
    if not os.path.exists(path):
        t0 = time.perf_counter()
        mechanisms.simulate(mechanisms.from_spec(preset), n, path + ".tmp", seed=1,
                            chunk=ROW_GROUP)
        os.replace(path + ".tmp", path)
        print(f"  wrote {path} ({n:,} reports, {os.path.getsize(path) / 2**20:.0f} MiB) in "
              f"{time.perf_counter() - t0:.1f} s", flush=True)
    return path


def _best(fn, repeats: int) -> float:
    best = float("inf")
    for _ in range(repeats):
        t0 = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t0)
    return best


def _arrays(path):
    return tuple(np.concatenate(c) for c in zip(*ReportFile(path)))


def _in_memory(mech, path):
    r, e, i = _arrays(path)
    if type(mech).__name__ == "JPRS":
        return lambda: mech.estimate(r, epsilons=e, identities=i)
    return lambda: mech.estimate(r, identities=i)


def _rate(reports_per_second: float) -> str:
    """``5.38 M`` or ``240 k``, as the README's table writes rates."""
    if reports_per_second >= 1e6:
        return f"{reports_per_second / 1e6:.2f} M"
    return f"{reports_per_second / 1e3:.0f} k"


def _power(n: int) -> str:
    """``10^7`` or ``3x10^7`` (README's notation), else ``n`` with commas."""
    exponent = len(str(n)) - 1
    head, rest = divmod(n, 10**exponent)
    if rest:
        return f"{n:,}"
    return f"10^{exponent}" if head == 1 else f"{head}x10^{exponent}"


def _about(seconds: float) -> str:
    return f"{seconds:.0f} s" if seconds < 120 else f"{seconds / 60:.0f} minutes"


# VmHWM (the peak resident set of this process image) rather than ru_maxrss,
# which Linux carries over from the forking parent across exec. The child
# imports the same fastldp as this script: the installed one, or whatever
# PYTHONPATH names (the environment is inherited).
_RSS_SCRIPT = """
def hwm():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))
import pyarrow.parquet
from fastldp import mechanisms
from fastldp.reports import decode_files
mech = mechanisms.from_spec({preset!r})
base = hwm()
decode_files(mech, {path!r})
print(base, hwm())
"""


def _peak_rss(preset: str, path: str) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", _RSS_SCRIPT.format(preset=preset, path=path)],
                         capture_output=True, text=True, check=True).stdout.split()
    return int(out[0]) / 1024, int(out[1]) / 1024  # kB -> MiB


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--dir", default=os.path.join(tempfile.gettempdir(), "fastldp-bench"))
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    os.makedirs(args.dir, exist_ok=True)
    sizes = [200_000, 1_000_000] if args.quick else [1_000_000, 10_000_000, 30_000_000]
    # OLH's server hashes every report against all 4,096 symbols (about 15 us per
    # report on 2 cores), so its memory rows stop at the first size
    olh_sizes = sizes[:1]
    tput_n = sizes[0] if args.quick else 1_000_000
    presets = ("jprs-4096", "olh-4096")
    print(f"fastldp scale-out benchmark: {os.cpu_count()} cores, files in {args.dir}")

    print("\n(a) throughput, reports/s (best of %d)" % args.repeats)
    print(f"  {'mechanism':<10}{'n':>12}{'in memory':>14}{'from file':>14}{'ratio':>8}")
    memory_rate, file_rate = {}, {}
    for preset in presets:
        mech = mechanisms.from_spec(preset)
        path = _file(args.dir, preset, tput_n)
        t_mem = _best(_in_memory(mech, path), args.repeats)
        t_file = _best(lambda: decode_files(mech, path), args.repeats)
        memory_rate[preset], file_rate[preset] = tput_n / t_mem, tput_n / t_file
        print(f"  {preset:<10}{tput_n:>12,}{tput_n / t_mem:>14,.0f}{tput_n / t_file:>14,.0f}"
              f"{t_mem / t_file:>8.0%}", flush=True)

    print("\n(b) Dask LocalCluster, single-threaded worker processes, reports/s")
    local_rate, dask_rate = {}, {}
    try:
        from dask.distributed import Client, LocalCluster
    except ImportError:
        print("  skipped: pip install 'fastldp[distributed]'")
    else:
        # OLH's server is O(n D): 1e6 reports already take about 20 s per run
        dask_sizes = {"jprs-4096": sizes[1] if args.quick else 10_000_000,
                      "olh-4096": sizes[0] if args.quick else 1_000_000}
        for preset, n_dask in dask_sizes.items():
            path = _file(args.dir, preset, n_dask)
            warm = _file(args.dir, preset, tput_n)
            mech = mechanisms.from_spec(preset)
            mech.n_threads = 1
            local = _best(lambda: decode_files(mech, path), 1)
            local_rate[preset] = n_dask / local
            row = [f"  {preset:<10}{n_dask:>12,}  local 1 thread {n_dask / local:>12,.0f}"]
            for workers in (1, 2):
                # silence_logs=50 (CRITICAL): a worker logs a heartbeat error when the
                # cluster closes under it, which says nothing about the decode
                with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=50) as cluster, \
                        Client(cluster) as client:
                    distributed.estimate(mech, warm, client=client)  # workers import fastldp
                    t = _best(lambda: distributed.estimate(mech, path, client=client), 1)
                dask_rate[preset, workers] = n_dask / t
                row.append(f"  {workers} worker{'s' if workers > 1 else ''} {n_dask / t:>12,.0f}")
            print("".join(row), flush=True)

    print("\n(c) peak resident set of a fresh process decoding a file (MiB)")
    print(f"  {'mechanism':<10}{'reports':>12}{'seconds':>10}{'after import':>14}{'peak':>8}")
    rss = {}
    for preset, preset_sizes in (("jprs-4096", sizes), ("olh-4096", olh_sizes)):
        for n in preset_sizes:
            path = _file(args.dir, preset, n)
            t0 = time.perf_counter()
            base, peak = _peak_rss(preset, path)
            rss[preset, n] = (time.perf_counter() - t0, base, peak)
            print(f"  {preset:<10}{n:>12,}{rss[preset, n][0]:>10.1f}{base:>14.0f}"
                  f"{peak:>8.0f}", flush=True)

    # one JPRS partial of a row group: what a Dask task sends back to be merged
    mech = mechanisms.from_spec("jprs-4096")
    r, e, i = _arrays(_file(args.dir, "jprs-4096", tput_n))
    partial = mech.partial(r[:ROW_GROUP], epsilons=e[:ROW_GROUP], identities=i[:ROW_GROUP])
    p = mech.p
    digit_rows = sum(s.canonical()[1].size for s in partial.sums.values() if s.size == p) // p
    partial_kib = len(partial.to_bytes()) / 1024

    print("\nREADME lines (Scale-out), in the README's words, from this run:")
    j, o = presets
    print(f"A partial is `O(p)` ({digit_rows} rows of `p` int64 digits for JPRS: "
          f"{partial_kib:.0f} KiB at p = {p:,})")
    print("| what | JPRS | OLH |")
    print("|---|---|---|")
    print(f"| in-memory `estimate`, reports/s | {_rate(memory_rate[j])} | "
          f"{_rate(memory_rate[o])} |")
    print(f"| streaming decode from Parquet, reports/s | {_rate(file_rate[j])} "
          f"({file_rate[j] / memory_rate[j]:.0%}) | {_rate(file_rate[o])} "
          f"({file_rate[o] / memory_rate[o]:.0%}) |")
    if dask_rate:
        print(f"| 1 thread, local stream, reports/s | {_rate(local_rate[j])} | "
              f"{_rate(local_rate[o])} |")
        print(f"| Dask LocalCluster, 1 worker process (1 thread) | {_rate(dask_rate[j, 1])} | "
              f"{_rate(dask_rate[o, 1])} |")
        print(f"| Dask LocalCluster, 2 worker processes | {_rate(dask_rate[j, 2])} "
              f"({dask_rate[j, 2] / dask_rate[j, 1]:.2f}x) | {_rate(dask_rate[o, 2])} "
              f"({dask_rate[o, 2] / dask_rate[o, 1]:.2f}x) |")
    print(f"| fresh process decoding {' / '.join(_power(n) for n in sizes)} reports: peak RSS "
          f"| {' / '.join(f'{rss[j, n][2]:.0f}' for n in sizes)} MiB "
          f"| {rss[o, olh_sizes[0]][2]:.0f} MiB ({_power(olh_sizes[0])}) |")
    print(f"| of which Python, NumPy, SciPy, pyarrow and fastldp after import "
          f"| {rss[j, sizes[-1]][1]:.0f} MiB | |")
    print(f"| wall time of that process for {' / '.join(_power(n) for n in sizes[1:])} reports "
          f"| {' / '.join(f'{rss[j, n][0]:.1f} s' for n in sizes[1:])} | |")
    if dask_rate:
        one = dask_rate[j, 1]
        bytes_per_report = os.path.getsize(_file(args.dir, j, sizes[-1])) / sizes[-1]
        tasks = -(-10**9 // ROW_GROUP)
        print(f"One worker process decodes about {one / 1e6:.1f} M JPRS reports per second per "
              f"core at p = {p:,} (measured above), and the work splits into one task per row "
              f"group ({tasks:,} tasks of {ROW_GROUP:,} reports for 10^9) whose partials "
              f"({partial_kib:.0f} KiB each) merge as a tree.")
        print(f"With N single-threaded workers that is about 10^9 / ({one / 1e6:.1f} M x N) s: "
              f"some {_about(1e9 / one)} on one core, {_about(1e9 / one / 16)} on 16 and "
              f"{_about(1e9 / one / 64)} on 64, provided the storage delivers about "
              f"{one * bytes_per_report / 1e6:.0f} MB/s of Parquet ({bytes_per_report:.1f} bytes "
              f"per report) per worker.")
    return 0


if __name__ == "__main__":
    sys.exit(main())
