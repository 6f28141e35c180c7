"""Scale-out benchmark: streaming decode from Parquet, Dask workers, and peak memory.

Run from the repository root (in-place build, or an installed fastldp with
``pip install '.[distributed]'``)::

    python bench/stream_decode.py            # 1e6 / 1e7 / 3e7 reports (several minutes)
    python bench/stream_decode.py --quick    # 2e5 / 1e6 reports (about a minute)

It prints, for JPRS (64 x 64 = 4,096 pairs, personal budgets uniform in
[0.5, 2]) and OLH (domain 4,096, eps = 1):

(a) throughput in reports per second of the in-memory ``estimate`` on
    arrays already in RAM (the kernel), of the streaming decode from the
    Parquet file (``fastldp.reports.decode_files``), and their ratio;
(b) the Dask path (``fastldp.distributed.estimate``) on a LocalCluster with
    one and with two single-threaded worker processes;
(c) the peak resident set (``ru_maxrss``) of a fresh process that decodes
    files of increasing size; the last column must stay flat.

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

HERE = os.path.dirname(os.path.abspath(__file__))
SRC = os.path.join(os.path.dirname(HERE), "src")
if os.path.isdir(os.path.join(SRC, "fastldp")) and SRC not in sys.path:
    sys.path.insert(0, SRC)

from fastldp import distributed, mechanisms  # noqa: E402
from fastldp.reports import ReportFile, decode_files  # noqa: E402


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


def _in_memory(mech, path):
    reader = ReportFile(path)
    r, e, i = (np.concatenate(c) for c in zip(*reader))
    if type(mech).__name__ == "JPRS":
        return lambda: mech.estimate(r, e, identities=i)
    return lambda: mech.estimate(r, identities=i)


# VmHWM (the peak resident set of this process image) rather than ru_maxrss,
# which Linux carries over from the forking parent across exec.
_RSS_SCRIPT = """
import sys
sys.path.insert(0, {src!r})
def hwm():
    with open("/proc/self/status") as fh:
        return next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))
from fastldp import mechanisms
from fastldp.reports import decode_files
mech = mechanisms.from_spec({preset!r})
base = hwm()
decode_files(mech, {path!r})
print(base, hwm())
"""


def _peak_rss(preset: str, path: str) -> tuple[float, float]:
    out = subprocess.run([sys.executable, "-c", _RSS_SCRIPT.format(src=SRC, preset=preset,
                                                                     path=path)],
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
    # report on 2 cores), so its memory rows stop at 1e6 reports
    olh_sizes = sizes[:1] if args.quick else sizes[:1]
    tput_n = sizes[0] if args.quick else 1_000_000
    print(f"fastldp scale-out benchmark: {os.cpu_count()} cores, files in {args.dir}")

    print("\n(a) throughput, reports/s (best of %d)" % args.repeats)
    print(f"  {'mechanism':<10}{'n':>12}{'in memory':>14}{'from file':>14}{'ratio':>8}")
    for preset in ("jprs-4096", "olh-4096"):
        mech = mechanisms.from_spec(preset)
        path = _file(args.dir, preset, tput_n)
        t_mem = _best(_in_memory(mech, path), args.repeats)
        t_file = _best(lambda: decode_files(mech, path), args.repeats)
        print(f"  {preset:<10}{tput_n:>12,}{tput_n / t_mem:>14,.0f}{tput_n / t_file:>14,.0f}"
              f"{t_mem / t_file:>8.0%}", flush=True)

    print("\n(b) Dask LocalCluster, single-threaded worker processes, reports/s")
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
            row = [f"  {preset:<10}{n_dask:>12,}  local 1 thread {n_dask / local:>12,.0f}"]
            for workers in (1, 2):
                with LocalCluster(n_workers=workers, threads_per_worker=1, processes=True,
                                  dashboard_address=":0", silence_logs=40) as cluster, \
                        Client(cluster) as client:
                    distributed.estimate(mech, warm, client=client)  # workers import fastldp
                    t = _best(lambda: distributed.estimate(mech, path, client=client), 1)
                row.append(f"  {workers} worker{'s' if workers > 1 else ''} {n_dask / t:>12,.0f}")
            print("".join(row), flush=True)

    print("\n(c) peak resident set of a fresh process decoding a file (MiB)")
    print(f"  {'mechanism':<10}{'reports':>12}{'seconds':>10}{'after import':>14}{'peak':>8}")
    for preset, preset_sizes in (("jprs-4096", sizes), ("olh-4096", olh_sizes)):
        for n in preset_sizes:
            path = _file(args.dir, preset, n)
            t0 = time.perf_counter()
            base, peak = _peak_rss(preset, path)
            print(f"  {preset:<10}{n:>12,}{time.perf_counter() - t0:>10.1f}{base:>14.0f}"
                  f"{peak:>8.0f}", flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
