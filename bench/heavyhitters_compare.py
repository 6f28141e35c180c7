"""Heavy hitters: PEM / TreeHist / SFP beside pure-ldp, 10^6 users, a file decode's memory.

Three parts, each printed as a table, then a "README lines" block:

1. **Side by side with pure-ldp 1.2.0** (``xxhash<4``) on the same items
   and budget: ``--peer-n`` users (default 1,000) hold Zipf items over
   ``2^--peer-bits`` (default 16: pure-ldp's servers keep a float64 array of
   the whole domain per level, and its PEM server aggregates a report in
   time linear in the domain), ``k = 16``, ``eps = 4``. pure-ldp's classes run
   with their own defaults (OLH oracles; bit strings over the alphabet
   ``{0, 1}``); its PEM is given the structure of fastldp's (``start_length
   = 4``, ``fragment_length = 4``: the same levels of 8, 12, 16 bits).
   pure-ldp's ``TreeHistServer`` and ``SFPServer`` are built with their
   defaults as well; where one cannot be built or run, the row says why
   (the exception, verbatim). Times: client (privatize every item; pure-ldp
   one ``privatise`` per item) and server (pure-ldp: ``aggregate`` per
   report, then ``find_heavy_hitters(k)``; fastldp: ``estimate``); accuracy:
   the PEM paper's precision (share of the true top-k found) and NCR. The
   peer is also built for a ``2^32`` domain, to show whether it can be.
2. **10^6 users, 2^32 domain, k = 32, eps = 4**: fastldp's client + server
   seconds per protocol (best of ``--repeats``), with precision and NCR.
3. **Report-file decode in bounded memory**: ``--file-n`` reports (default
   10^7) of PEM written to a Parquet report file, decoded by
   ``PEM.decode_report_files`` in a fresh Python process that prints its
   peak resident set (``VmHWM`` of ``/proc/self/status``); the same at a
   tenth of the reports shows whether it is flat in n.

Usage: ``python bench/heavyhitters_compare.py [--quick]`` (``--quick``:
10^5 users in part 2, 10^6 reports in part 3).
"""

from __future__ import annotations

import argparse
import os
import random
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

from fastldp.heavyhitters import PEM, SFP, TreeHist, data, metrics


def best(fn, repeats):
    times, out = [], None
    for _ in range(repeats):
        t = time.perf_counter()
        out = fn()
        times.append(time.perf_counter() - t)
    return min(times), out


def fmt(s):
    return "-" if s is None else (f"{s * 1e3:.1f} ms" if s < 1 else f"{s:.2f} s")


# ------------------------------------------------------------------ part 1: pure-ldp
def peer_run(name, items, bits, k, eps):
    """pure-ldp's client + server on ``items``: (client s, server s, found codes) or an error."""
    from pure_ldp.heavy_hitters.apple_sfp import SFPClient, SFPServer
    from pure_ldp.heavy_hitters.prefix_extending import PEMClient, PEMServer
    from pure_ldp.heavy_hitters.treehistogram import TreeHistClient, TreeHistServer

    random.seed(0)
    np.random.seed(0)
    strings = [format(int(x), f"0{bits}b") for x in items]
    try:
        if name == "PEM":
            client, server = PEMClient(eps, 4, bits, 4), PEMServer(eps, 4, bits, 4)
        elif name == "TreeHist":
            client, server = TreeHistClient(eps, 4, bits), TreeHistServer(eps, bits, 4)
        else:
            server = SFPServer(eps, 4, bits)
            client = SFPClient(eps, 4, bits)
    except Exception as exc:  # the peer's defaults may not build
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
    try:
        t = time.perf_counter()
        reports = [client.privatise(s) for s in strings]
        tc = time.perf_counter() - t
        t = time.perf_counter()
        for r in reports:
            server.aggregate(r)
        found, _ = server.find_heavy_hitters(k=k)
        ts = time.perf_counter() - t
    except Exception as exc:
        return f"{type(exc).__name__}: {str(exc).splitlines()[0][:90]}"
    return tc, ts, [int(s.split("*")[0], 2) for s in found]


def fast_run(cls, items, bits, k, eps, repeats, **kw):
    proto = cls(epsilon=eps, k=k, item_bits=bits, codebook_seed=1, **kw)
    tc, reports = best(lambda: proto.privatize(items, rng=2), repeats)
    ts, res = best(lambda: proto.estimate(reports), repeats)
    return tc, ts, res.codes


def part1(args):
    bits, k, eps, n = args.peer_bits, 16, 4.0, args.peer_n
    items = data.zipf_items(n, item_bits=bits, rng=11)
    truth, _ = data.true_top_k(items, k)
    rows = []
    for name, cls in (("PEM", PEM), ("TreeHist", TreeHist), ("SFP", SFP)):
        f = fast_run(cls, items, bits, k, eps, args.repeats)
        p = peer_run(name, items, bits, k, eps)
        row = {"protocol": name, "fast": f,
               "fast_acc": (metrics.recall_at_k(f[2], truth), metrics.ncr(f[2], truth))}
        if isinstance(p, str):
            row["peer_error"] = p
        else:
            row["peer"] = p
            row["peer_acc"] = (metrics.recall_at_k(p[2], truth), metrics.ncr(p[2], truth))
        rows.append(row)
        print(f"  part 1: {name} done", file=sys.stderr)
    big = peer_run("PEM", np.zeros(0, dtype=np.uint64), 32, k, eps) \
        if args.try_peer_32 else "not tried (--no-peer-32)"
    return rows, big, (n, bits, k, eps)


# ------------------------------------------------------------------ part 2: 10^6 users
def part2(args):
    n, bits, k, eps = args.n, 32, 32, 4.0
    items = data.zipf_items(n, item_bits=bits, rng=21)
    truth, _ = data.true_top_k(items, k)
    rows = []
    for name, cls in (("PEM", PEM), ("TreeHist", TreeHist), ("SFP", SFP)):
        tc, ts, codes = fast_run(cls, items, bits, k, eps, args.repeats)
        rows.append((name, tc, ts, metrics.recall_at_k(codes, truth), metrics.ncr(codes, truth)))
        print(f"  part 2: {name} done", file=sys.stderr)
    return rows, (n, bits, k, eps)


# ------------------------------------------------------------------ part 3: file decode RSS
CHILD = r"""
import sys, time
from fastldp.heavyhitters import PEM
pem = PEM(epsilon=4.0, k=32, item_bits=32, codebook_seed=1)
t = time.perf_counter()
res = pem.decode_report_files(sys.argv[1])
secs = time.perf_counter() - t
hwm = [l for l in open("/proc/self/status") if l.startswith("VmHWM")][0].split()[1]
print(res.n, int(hwm), secs, ",".join(str(int(c)) for c in res.codes[:3]))
"""


def write_file(path, n, chunk=1_000_000):
    from fastldp.reports import ReportWriter

    pem = PEM(epsilon=4.0, k=32, item_bits=32, codebook_seed=1)
    with ReportWriter(path, pem, row_group_size=1 << 18) as w:
        for lo in range(0, n, chunk):
            m = min(chunk, n - lo)
            items = data.zipf_items(m, item_bits=32, rng=lo + 1)
            ids = np.arange(lo, lo + m, dtype=np.uint64)
            w.write(pem.privatize(items, identities=ids, rng=lo + 2), None, ids)


def part3(args):
    out = []
    with tempfile.TemporaryDirectory() as tmp:
        for n in (args.file_n // 10, args.file_n):
            path = Path(tmp) / f"pem_{n}.parquet"
            t = time.perf_counter()
            write_file(path, n)
            wrote = time.perf_counter() - t
            proc = subprocess.run([sys.executable, "-c", CHILD, str(path)], capture_output=True,
                                  text=True, check=True)
            n_dec, hwm_kib, secs, top = proc.stdout.split()
            out.append((n, int(n_dec), int(hwm_kib) / 1024, float(secs), wrote,
                        path.stat().st_size / 2**20))
            path.unlink()
            print(f"  part 3: {n} reports done", file=sys.stderr)
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--peer-n", type=int, default=1000)
    ap.add_argument("--peer-bits", type=int, default=16)
    ap.add_argument("--n", type=int, default=None)
    ap.add_argument("--file-n", type=int, default=None)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--no-peer-32", dest="try_peer_32", action="store_false")
    ap.add_argument("--skip", default="", help="comma-separated parts to skip (1,2,3)")
    args = ap.parse_args(argv)
    args.n = args.n or (100_000 if args.quick else 1_000_000)
    args.file_n = args.file_n or (1_000_000 if args.quick else 10_000_000)
    skip = set(args.skip.split(","))
    load0 = os.getloadavg()[0]
    lines = []

    if "1" not in skip:
        rows, big, (n, bits, k, eps) = part1(args)
        print(f"\n1. Beside pure-ldp: n = {n:,} users, Zipf items over 2^{bits}, k = {k}, "
              f"eps = {eps:g} (fastldp best of {args.repeats})")
        print(f"{'protocol':<9} {'library':<8} {'client':>10} {'server':>10} {'precision':>9} "
              f"{'NCR':>6}  ratio (pure-ldp / fastldp, client + server)")
        for r in rows:
            f = r["fast"]
            print(f"{r['protocol']:<9} {'fastldp':<8} {fmt(f[0]):>10} {fmt(f[1]):>10} "
                  f"{r['fast_acc'][0]:>9.3f} {r['fast_acc'][1]:>6.3f}")
            if "peer" in r:
                p = r["peer"]
                ratio = (p[0] + p[1]) / (f[0] + f[1])
                print(f"{'':<9} {'pure-ldp':<8} {fmt(p[0]):>10} {fmt(p[1]):>10} "
                      f"{r['peer_acc'][0]:>9.3f} {r['peer_acc'][1]:>6.3f}  {ratio:,.0f}x")
                lines.append(f"| {r['protocol']} | 2^{bits} | {n:,} | {fmt(p[0] + p[1])} | "
                             f"{fmt(f[0] + f[1])} | {ratio:,.0f}x | {r['peer_acc'][0]:.3f} / "
                             f"{r['peer_acc'][1]:.3f} | {r['fast_acc'][0]:.3f} / "
                             f"{r['fast_acc'][1]:.3f} |")
            else:
                print(f"{'':<9} {'pure-ldp':<8} could not run: {r['peer_error']}")
                lines.append(f"| {r['protocol']} | 2^{bits} | {n:,} | could not run "
                             f"({r['peer_error']}) | {fmt(f[0] + f[1])} | - | - | "
                             f"{r['fast_acc'][0]:.3f} / {r['fast_acc'][1]:.3f} |")
        big_text = big if isinstance(big, str) else "built and ran (0 users)"
        print(f"pure-ldp PEMServer for a 2^32 domain with its defaults: {big_text}")
        lines.append(f"pure-ldp's PEMServer for a 2^32 domain (its defaults): {big_text}")

    if "2" not in skip:
        rows2, (n, bits, k, eps) = part2(args)
        print(f"\n2. n = {n:,} users, 2^{bits} domain, k = {k}, eps = {eps:g} "
              f"(best of {args.repeats}; {os.cpu_count()} cores)")
        print(f"{'protocol':<9} {'client':>10} {'server':>10} {'total':>10} {'precision':>9} "
              f"{'NCR':>6}")
        for name, tc, ts, prec, ncr in rows2:
            print(f"{name:<9} {fmt(tc):>10} {fmt(ts):>10} {fmt(tc + ts):>10} {prec:>9.3f} "
                  f"{ncr:>6.3f}")
            lines.append(f"{name}, {n:,} users, 2^32, k = 32, eps = 4: client {fmt(tc)} + "
                         f"server {fmt(ts)} = {fmt(tc + ts)} "
                         f"(precision {prec:.3f}, NCR {ncr:.3f})")

    if "3" not in skip:
        rows3 = part3(args)
        print("\n3. PEM report files decoded by decode_report_files in a fresh process "
              "(k = 32, 2^32, eps = 4)")
        print(f"{'reports':>12} {'file MiB':>9} {'peak RSS MiB':>13} {'decode':>10}")
        for n, n_dec, mib, secs, wrote, size in rows3:
            print(f"{n:>12,} {size:>9.1f} {mib:>13.1f} {fmt(secs):>10}")
            lines.append(f"PEM decode of a {n:,}-report file: peak RSS {mib:.0f} MiB "
                         f"(VmHWM, fresh process), {fmt(secs)}")

    print(f"\nREADME lines (Heavy hitters), from this run (load {load0:.1f} at start, "
          f"{os.getloadavg()[0]:.1f} at end, {os.cpu_count()} cores):")
    if "1" not in skip:
        print("| protocol | domain | users | pure-ldp client + server | fastldp | ratio "
              "| pure-ldp precision / NCR | fastldp precision / NCR |")
        print("|---|---|---|---|---|---|---|---|")
    for line in lines:
        print(line)


if __name__ == "__main__":
    main()
