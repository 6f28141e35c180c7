"""Frequency-oracle servers (OLH, HR) beside the pure-ldp package, in one run.

For n reports of items drawn from a Zipf law over p = 4,096 symbols at
eps = 1, each library privatizes the SAME items with its own client (the
hashes differ, so the reports cannot be shared), and the script times

* OLH: server aggregation (support counting over all p items), and
* HR: client privatization and server aggregation,

printing the ratio pure-ldp / fastldp and the max absolute error of each
estimate against the true counts. pure-ldp's OLH server is a Python loop
over p items per report (about 46 s per 10,000 reports here), so it is timed
on a smaller n (``--peer-olh-n``) and scaled linearly; the output says so.

Install the peer with ``pip install '.[bench-peer]'`` (pure-ldp 1.2.0 with
``xxhash<4``, scikit-learn and statsmodels, which it imports undeclared).

Usage: ``PYTHONPATH=src python bench/oracle_compare.py [--n 100000] [--peer-olh-n 2000]``
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from fastldp._kernels._openmp import max_threads
from fastldp.oracles import OLH, HadamardResponse


def best_of(fn, repeats):
    best = float("inf")
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def zipf_items(n, p, rng):
    w = 1.0 / np.arange(1, p + 1) ** 1.1
    return rng.choice(p, size=n, p=w / w.sum())


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--p", type=int, default=4096)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--peer-olh-n", type=int, default=2000)
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    n, p, eps = args.n, args.p, args.eps
    rng = np.random.default_rng(0)
    items = zipf_items(n, p, rng)
    truth = np.bincount(items, minlength=p).astype(float)
    ids = np.arange(n, dtype=np.uint64)
    epsv = np.full(n, eps)
    lam = np.ones(n)
    print(f"cores: {os.cpu_count()}, fastldp threads: {max_threads()}, n = {n:,}, p = {p:,}, eps = {eps}")
    rows = []

    threads = max_threads()
    olh = OLH(p, 2026, threads)
    reports = olh.privatize(items, epsv, ids, np.random.default_rng(1))
    t_ours, est = best_of(lambda: olh.aggregate(reports, epsv, ids, lam), args.repeats)
    err_ours = np.abs(est - truth).max()

    hr = HadamardResponse(p, 2026, threads)
    t_hr_client, hr_reports = best_of(lambda: hr.privatize(items, epsv, ids, np.random.default_rng(2)),
                                      args.repeats)
    t_hr_server, hr_est = best_of(lambda: hr.aggregate(hr_reports, epsv, ids, lam), args.repeats)
    err_hr = np.abs(hr_est - truth).max()

    try:
        from pure_ldp.frequency_oracles.hadamard_response import (
            HadamardResponseClient, HadamardResponseServer,
        )
        from pure_ldp.frequency_oracles.local_hashing import LHClient, LHServer
    except ImportError as exc:  # pragma: no cover - optional peer
        print(f"pure-ldp not installed ({exc}); fastldp only:")
        print(f"  OLH server {t_ours:.3f} s (max |err| {err_ours:.1f});"
              f" HR client {t_hr_client:.3f} s, HR server {t_hr_server:.4f} s (max |err| {err_hr:.1f})")
        return 0

    # pure-ldp OLH on a prefix of the same items, scaled to n
    m = min(args.peer_olh_n, n)
    client = LHClient(epsilon=eps, d=p, use_olh=True)
    server = LHServer(epsilon=eps, d=p, use_olh=True)
    peer_reports = [client.privatise(int(x) + 1) for x in items[:m]]
    t0 = time.perf_counter()
    for r in peer_reports:
        server.aggregate(r)
    t_peer_olh_m = time.perf_counter() - t0
    peer_est_m = np.array([server.estimate(x + 1, suppress_warnings=True) for x in range(p)])
    t_peer_olh = t_peer_olh_m * n / m
    truth_m = np.bincount(items[:m], minlength=p)
    ours_m = olh.aggregate(reports[:m], epsv[:m], ids[:m], lam[:m])
    rows.append(("OLH server", t_peer_olh, t_ours,
                 f"peer timed on n = {m:,} and scaled x{n / m:.0f}; max|err| at that n: "
                 f"peer {np.abs(peer_est_m - truth_m).max():.1f}, fastldp {np.abs(ours_m - truth_m).max():.1f}"))

    hr_server_peer = HadamardResponseServer(eps, p)
    hr_client_peer = HadamardResponseClient(eps, p, hr_server_peer.get_hash_funcs())
    t0 = time.perf_counter()
    peer_hr_reports = [hr_client_peer.privatise(int(x) + 1) for x in items]
    t_peer_hr_client = time.perf_counter() - t0

    def peer_server():
        hr_server_peer.reset()
        for r in peer_hr_reports:
            hr_server_peer.aggregate(r)
        return np.array([hr_server_peer.estimate(x + 1, suppress_warnings=True) for x in range(p)])

    t0 = time.perf_counter()
    for r in peer_hr_reports:
        hr_server_peer.aggregate(r)
    hr_server_peer.estimate(1, suppress_warnings=True)  # triggers the decode
    t_peer_hr_server = time.perf_counter() - t0
    peer_hr_est = peer_server()
    rows.append(("HR client", t_peer_hr_client, t_hr_client, ""))
    rows.append(("HR server", t_peer_hr_server, t_hr_server,
                 f"max|err|: peer {np.abs(peer_hr_est - truth).max():.1f}, fastldp {err_hr:.1f}"))

    print(f"{'step':<12}{'pure-ldp (s)':>14}{'fastldp (s)':>14}{'ratio':>10}  note")
    for name, t_peer, t_fast, note in rows:
        print(f"{name:<12}{t_peer:>14.3f}{t_fast:>14.4f}{t_peer / t_fast:>9.0f}x  {note}")
    print(f"OLH max|err| at n = {n:,}: fastldp {err_ours:.1f} "
          f"(sd of one count ~ {np.sqrt(n * 0.75) / 0.5:.0f})")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
