"""Print the README's time figures that no bench script prints, in the README's own words.

The README's figures each name the command that prints them; the figures of
the ``bench/`` scripts come from those scripts, the rest from this one:

``python tools/readme_figures.py runs``
    The *Run times* table: the wall time, the peak resident set and the load
    average of every shipped command the README times (the full
    ``fastldp reproduce`` jobs, ``fastldp audit``, ``fastldp demo``, the
    build), one table row each, as README shows them. ``--quick`` runs the
    ``--quick`` form of each job instead (a smoke run: its rows are labelled
    with ``--quick``); ``--only NAME ...`` picks rows by name (``--list``
    shows them); ``--keep DIR`` keeps each reproduce job's results in
    ``DIR/<experiment>``. The full table takes about 25 minutes on 2 quiet cores,
    most of it the four regression sweeps.
``python tools/readme_figures.py build``
    The build row alone, and the size of the compiled kernels (the
    *Building* section).
``python tools/readme_figures.py tiers``
    The two test tiers of the set-up section: ``python -m pytest`` (the
    default tier) and ``python -m pytest --slow -m slow`` (the slow tier
    alone), each's test count (from pytest's summary line) and wall time.

When both the build and ``reproduce theorem-audit --quick`` ran, it also
prints the sentence of the set-up section that quotes them.

Every job runs as a child process of this script, in a fresh temporary
folder (``--out`` of the reproduce jobs), with no progress bar. Its peak
resident set is the largest one among the processes it waited for
(``ru_maxrss`` from ``os.wait4``; this script imports neither NumPy nor
fastldp, so the resident set it hands to its children at fork time is
small). The load average is the one-minute load average just before the
job starts: on a shared machine it says how busy the cores were.

This script times; nothing here is asserted. ``tests/test_readme_figures.py``
checks that the README's rows have the wording of the templates here.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# (row name, arguments of `fastldp`, arguments of the --quick form or None when the
# job has no quick form and runs as is in both)
JOBS = [
    ("reproduce theorem-audit --quick", ["reproduce", "theorem-audit", "--quick"], None),
    ("reproduce theorem-audit", ["reproduce", "theorem-audit"], ["--quick"]),
    ("reproduce distributional", ["reproduce", "distributional"], ["--quick"]),
    ("reproduce high-information", ["reproduce", "high-information"], ["--quick"]),
    ("reproduce ablation", ["reproduce", "ablation"], ["--quick"]),
    ("reproduce real-data --quick", ["reproduce", "real-data", "--quick"], None),
    ("reproduce histograms --quick", ["reproduce", "histograms", "--quick"], None),
    ("reproduce histograms", ["reproduce", "histograms"], ["--quick"]),
    ("reproduce regression-eps", ["reproduce", "regression-eps"], ["--quick"]),
    ("reproduce regression-n", ["reproduce", "regression-n"], ["--quick"]),
    ("reproduce regression-d", ["reproduce", "regression-d"], ["--quick"]),
    ("reproduce regression-m", ["reproduce", "regression-m"], ["--quick"]),
    ("audit", ["audit"], None),
    ("demo", ["demo"], None),
]
BUILD = "build"


def load_average() -> str:
    try:
        return f"{os.getloadavg()[0]:.1f}"
    except (AttributeError, OSError):  # not on every platform
        return "n/a"


def duration(seconds: float) -> str:
    """``42 s`` below two minutes, ``6 min 58 s`` above."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    minutes, rest = divmod(round(seconds), 60)
    return f"{minutes} min {rest} s"


def memory(kib: int) -> str:
    """``217 MiB`` below a GiB, ``1.8 GB`` (decimal) above, as README writes them."""
    if kib >= 1024**2:
        return f"{kib * 1024 / 1e9:.1f} GB"
    return f"{kib / 1024:.0f} MiB"


def timed(cmd, cwd) -> tuple:
    """Run ``cmd``; return (seconds, peak RSS in KiB, exit status, last lines of its output,
    load average at the start)."""
    load = load_average()
    t0 = time.perf_counter()
    with tempfile.TemporaryFile("w+") as log:
        # its own session, so that an interrupted job takes its worker processes with it
        proc = subprocess.Popen(cmd, cwd=cwd, stdout=log, stderr=subprocess.STDOUT,
                                start_new_session=True)
        try:
            _, status, usage = os.wait4(proc.pid, 0)
        except BaseException:
            os.killpg(proc.pid, 15)
            raise
        seconds = time.perf_counter() - t0
        rc = os.waitstatus_to_exitcode(status)
        proc.returncode = rc  # reaped here, not by Popen
        log.seek(0)
        tail = log.read().splitlines()[-5:]
    kib = usage.ru_maxrss // (1024 if sys.platform == "darwin" else 1)  # bytes on macOS
    return seconds, kib, rc, tail, load


def print_job_row(name: str, seconds: float, kib: int, load: str) -> None:
    print(f"| `fastldp {name}` | {duration(seconds)} | {memory(kib)} | {load} |", flush=True)


def print_build_row(seconds: float, kib: int, load: str) -> None:
    print(f"| build, `pip install .` without downloads | {duration(seconds)} | {memory(kib)} "
          f"| {load} |", flush=True)


def print_header() -> None:
    print("| command | time | peak RSS | load average |")
    print("|---|---|---|---|")


def fastldp_command() -> list:
    exe = shutil.which("fastldp")
    return [exe] if exe else [sys.executable, "-m", "fastldp.cli"]


def run_jobs(names, quick: bool, data, seconds: dict, keep=None) -> int:
    """Time the jobs named in ``names`` (all when None), recording their seconds;
    return how many failed. With ``keep`` (a folder), each ``reproduce`` job writes its
    results to ``keep/<experiment>`` instead of a temporary folder (the timed run's
    tables and figures are then kept)."""
    failed = 0
    done = set()
    for name, args, quick_args in JOBS:
        if names is not None and name not in names:
            continue
        if quick and quick_args is not None:
            args, name = args + quick_args, name + " --quick"
        if name in done:  # with --quick, theorem-audit's quick form is already a row
            continue
        done.add(name)
        if "real-data" in args:
            if not data:
                print(f"  ({name} skipped: pass --data DIR with the small sample files)",
                      flush=True)
                continue
            args = args + ["--data", os.path.abspath(data)]
        with tempfile.TemporaryDirectory(prefix="fastldp-figures-") as out:
            target = out
            if keep is not None and args[0] == "reproduce":
                target = os.path.join(os.path.abspath(keep), args[1])
                if os.path.exists(target):  # a resumable run would skip its rows: not timed
                    print(f"  ({name} skipped: {target} exists; --keep needs a fresh folder)",
                          flush=True)
                    failed += 1
                    continue
            extra = ["--out", target, "--quiet"] if args[0] == "reproduce" else []
            took, kib, rc, tail, load = timed(fastldp_command() + args + extra, cwd=out)
        if rc != 0:
            failed += 1
            print(f"  ({name} FAILED with exit status {rc}: {' / '.join(tail)})", flush=True)
            continue
        print_job_row(name, took, kib, load)
        seconds[name] = took
    return failed


def run_build(seconds: dict) -> int:
    """Build a wheel of the tracked files (a fresh copy: Cython runs, nothing cached).

    No build isolation and no dependencies, so nothing is downloaded: the time
    is cythonizing and compiling, which is what the README's set-up command
    spends beyond fetching setuptools and Cython.
    """
    files = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True,
                           check=True).stdout.decode().split("\0")
    with tempfile.TemporaryDirectory(prefix="fastldp-build-") as tmp:
        tree = os.path.join(tmp, "tree")
        for rel in filter(None, files):
            src = os.path.join(ROOT, rel)
            if os.path.isfile(src):
                os.makedirs(os.path.dirname(os.path.join(tree, rel)), exist_ok=True)
                shutil.copy2(src, os.path.join(tree, rel))
        wheels = os.path.join(tmp, "wheels")
        cmd = [sys.executable, "-m", "pip", "wheel", "--no-deps", "--no-build-isolation",
               "--wheel-dir", wheels, tree]
        took, kib, rc, tail, load = timed(cmd, cwd=tmp)
        if rc != 0:
            print(f"  (build FAILED with exit status {rc}: {' / '.join(tail)})", flush=True)
            return 1
        print_build_row(took, kib, load)
        seconds[BUILD] = took
        (wheel,) = [os.path.join(wheels, w) for w in os.listdir(wheels)]
        with zipfile.ZipFile(wheel) as zf:
            sizes = [i.file_size for i in zf.infolist() if i.filename.endswith((".so", ".pyd"))]
    mb = sum(sizes) / len(sizes) / 1e6
    print(f"Release builds are stripped: about {mb:.1f} MB per kernel", flush=True)
    return 0


def _tests_run(tail) -> int:
    """The tests pytest ran (passed, failed, xfailed, xpassed; not skipped) from its summary."""
    import re

    line = next((t for t in reversed(tail) if " in " in t and ("passed" in t or "failed" in t)),
                "")
    counts = re.findall(r"(\d+) (passed|failed|xfailed|xpassed|errors?)\b", line)
    return sum(int(n) for n, _ in counts)


def run_tiers() -> int:
    """Time both test tiers from the repository root; print the set-up section's sentence."""
    tiers = {}
    for name, extra in (("default", []), ("slow", ["--slow", "-m", "slow"])):
        cmd = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *extra]
        seconds, kib, rc, tail, load = timed(cmd, ROOT)
        print(f"  ({name} tier: exit status {rc}, load average {load} at the start; "
              f"{tail[-1] if tail else ''})", flush=True)
        if rc != 0:
            return 1
        tiers[name] = (_tests_run(tail), seconds)
    (n_default, t_default), (n_slow, t_slow) = tiers["default"], tiers["slow"]
    print(f"On {os.cpu_count()} quiet cores the default tier runs {n_default:,} tests in "
          f"{duration(t_default)}; the slow tier adds {n_slow:,} tests in {duration(t_slow)}",
          flush=True)
    return 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("figure", choices=("runs", "build", "tiers"), nargs="?", default="runs")
    ap.add_argument("--quick", action="store_true",
                    help="the --quick form of every job that has one (a smoke run)")
    ap.add_argument("--only", nargs="+", metavar="NAME", help="rows by name (see --list)")
    ap.add_argument("--list", action="store_true", help="print the row names and stop")
    ap.add_argument("--data", help="folder of the small real-data sample files")
    ap.add_argument("--keep", metavar="DIR", help="write each reproduce job's results to "
                    "DIR/<experiment> (a fresh folder) instead of a temporary one")
    args = ap.parse_args(argv)
    names = [BUILD] + [name for name, _, _ in JOBS]
    if args.list:
        print("\n".join(names))
        return 0
    unknown = set(args.only or ()) - set(names)
    if unknown:
        ap.error(f"unknown row names {sorted(unknown)}; --list shows them")
    print(f"# {os.cpu_count()} cores, {platform_cpu()}")
    if args.figure == "tiers":
        return run_tiers()
    print_header()
    seconds: dict = {}
    if args.figure == "build":
        return run_build(seconds)
    failed = 0
    if not args.only or BUILD in args.only:
        failed += run_build(seconds)
    jobs = None if not args.only else [n for n in args.only if n != BUILD]
    if jobs != []:
        failed += run_jobs(jobs, args.quick, args.data, seconds, args.keep)
    quick_audit = "reproduce theorem-audit --quick"
    if BUILD in seconds and quick_audit in seconds:
        print(f"On {os.cpu_count()} cores the run takes about {seconds[quick_audit]:.0f} s after "
              f"a build of about {seconds[BUILD]:.0f} s")
    return 1 if failed else 0


def platform_cpu() -> str:
    """The CPU's model name (``lscpu``'s, from /proc/cpuinfo where there is one)."""
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    import platform

    return platform.processor() or platform.machine()


if __name__ == "__main__":
    sys.exit(main())
