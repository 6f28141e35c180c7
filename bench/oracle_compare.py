"""Every frequency oracle, client and server, beside the pure-ldp package in one run.

For n items drawn from a Zipf law over D = 4,096 symbols at eps = 1, each
library privatizes the SAME items with its own client (hashes and coins
differ, so reports cannot be shared) and estimates every count with its own
server. For GRR, OLH, FLH, Hadamard response, OUE and SUE the script times

* the client: privatizing all n items (fastldp: one ``privatize`` call;
  pure-ldp: ``privatise`` per item), and
* the server: from the reports to all D count estimates (fastldp: one
  ``estimate`` call, sanitization included; pure-ldp: ``aggregate`` per
  report, then ``estimate`` per symbol),

and prints the ratio pure-ldp / fastldp with the max absolute error of each
library's estimate against the true counts.

Where pure-ldp is too slow to run on all n reports (its OLH server loops over
D hashes per report; its unary-encoding client draws D coins per report in
Python and keeps a D-vector per report), the peer is timed on the first
``--peer-n`` items and the per-report part is scaled linearly to n (the
per-symbol estimate loop is not scaled); the table says so, and compares the
errors of both libraries at that smaller n. pure-ldp's FLH server builds its
hash matrix (``k x D`` xxhash calls) in its constructor: that one-time cost
is reported in a note and NOT counted as server time, while fastldp's FLH
server recomputes its pool's hashes on every call.

fastldp uses its default thread count (OpenMP's, here the machine's cores)
unless ``--threads`` is given; results do not depend on it. fastldp's times
are the best of ``--repeats`` runs; pure-ldp's steps run once (they take
seconds). On a machine whose cores are busy with other work, two threads
can be slower than one (each parallel region waits for both threads to be
scheduled); ``--threads 1`` then measures the single-core kernels.

Install the peer with ``pip install '.[bench-peer]'`` (pure-ldp 1.2.0 with
``xxhash<4``, scikit-learn and statsmodels, which it imports undeclared).

It ends with README's oracle table and the sentences below it, in the
README's words, with this run's figures: the OLH server against its floor
(the ``n * D / 8`` Philox blocks it must generate, timed by
``philox_floor``), FLH's server against OLH's, and GRR's ``bincount``. It
times the installed fastldp (see bench/README.md for timing a working tree).

Usage: ``python bench/oracle_compare.py [--n 100000] [--d 4096]``
"""

from __future__ import annotations

import argparse
import os
import time
import warnings

import numpy as np

from fastldp._kernels._hash import philox_floor
from fastldp._kernels._openmp import max_threads
from fastldp.oracles import FLH, GRR, OLH, OUE, SUE, HadamardResponse


def best_of(fn, repeats):
    best = float("inf")
    out = None
    for _ in range(repeats):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def short(seconds):
    """Two significant digits, as README writes times: ``57 ms``, ``0.14 ms``, ``0.49 s``."""
    value, unit = (seconds, "s") if seconds >= 0.1 else (seconds * 1e3, "ms")
    if value >= 100 or value <= 0:
        return f"{value:.0f} {unit}"
    digits = max(0, 1 - int(np.floor(np.log10(value))))
    return f"{value:.{digits}f} {unit}"


def floors(oracles, items, names, threads, repeats):
    """README's sentences on the servers' floors: OLH's Philox blocks, GRR's bincount."""
    n, d = items.shape[0], oracles["OLH"].domain_size if "OLH" in oracles else 0
    lines = []
    if "OLH" in names:
        ids = np.arange(n, dtype=np.uint64)
        # philox_floor generates n * ceil(p / 256) blocks: p = 32 D gives OLH's n D / 8
        t_floor, _ = best_of(lambda: philox_floor(2026, ids, 32 * d, threads), repeats)
        t_olh = RESULTS["OLH"][1]
        lines.append(f"its floor is n * D / 8 Philox blocks, {short(t_floor)} on {threads} "
                     f"threads, and it runs at about {t_olh / t_floor:.1f}x that floor")
        if "FLH" in names:
            t_flh = RESULTS["FLH"][1]
            lines.append(f"FLH's server is {t_olh / t_flh:.0f}x our own OLH server "
                         f"({short(t_olh)} / {short(t_flh)})")
    if "GRR" in names:
        reports = RESULTS["GRR"][2]
        t_count, _ = best_of(lambda: np.bincount(reports, minlength=d), repeats)
        lines.append(f"A GRR server is one `bincount` ({short(t_count)}) plus the inversion")
    return lines


RESULTS = {}  # oracle name -> (client seconds, server seconds, reports, counts)


def zipf_items(n, d, rng):
    w = 1.0 / np.arange(1, d + 1) ** 1.1
    return rng.choice(d, size=n, p=w / w.sum())


def max_err(est, truth):
    return float(np.abs(np.asarray(est, dtype=np.float64) - truth).max())


def ours(oracle, items, repeats):
    """fastldp client and server times on all items, and the estimate."""
    t_client, reports = best_of(lambda: oracle.privatize(items, rng=np.random.default_rng(1)),
                                repeats)
    t_server, est = best_of(lambda: oracle.estimate(reports), repeats)
    return t_client, t_server, reports, est.counts


def peer(client_fn, make_server, items, d, n_total):
    """pure-ldp on ``items`` (maybe a prefix): client, aggregate and estimate-all times, estimate."""
    m = items.shape[0]
    t0 = time.perf_counter()
    reports = [client_fn(int(x) + 1) for x in items]  # pure-ldp's symbols are 1-based
    t_client = time.perf_counter() - t0
    server = make_server()
    t0 = time.perf_counter()
    for r in reports:
        server.aggregate(r)
    t_agg = time.perf_counter() - t0
    t0 = time.perf_counter()
    est = np.array([server.estimate(x + 1, suppress_warnings=True) for x in range(d)])
    t_est = time.perf_counter() - t0
    scale = n_total / m
    return t_client * scale, t_agg * scale + t_est, est


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=100_000)
    ap.add_argument("--d", type=int, default=4096)
    ap.add_argument("--eps", type=float, default=1.0)
    ap.add_argument("--n-hashes", type=int, default=1024, help="FLH pool size (both libraries)")
    ap.add_argument("--peer-n", type=int, default=5000,
                    help="items on which pure-ldp's OUE/SUE are timed (then scaled to n)")
    ap.add_argument("--peer-olh-n", type=int, default=1000,
                    help="items on which pure-ldp's OLH is timed (then scaled to n)")
    ap.add_argument("--repeats", type=int, default=7, help="fastldp timings: best of this many")
    ap.add_argument("--only", nargs="*", default=None, help="oracle names to run (default all)")
    ap.add_argument("--threads", type=int, default=None,
                    help="fastldp threads (default: OpenMP's default, here all cores)")
    args = ap.parse_args(argv)
    n, d, eps = args.n, args.d, args.eps
    rng = np.random.default_rng(0)
    items = zipf_items(n, d, rng)
    truth = np.bincount(items, minlength=d).astype(float)
    threads = max_threads() if args.threads is None else args.threads
    print(f"cores: {os.cpu_count()}, fastldp threads: {threads}, n = {n:,}, D = {d:,}, "
          f"eps = {eps}, FLH pool h = {args.n_hashes}")
    common = dict(domain_size=d, epsilon=eps, codebook_seed=2026, n_threads=threads)
    oracles = {
        "GRR": GRR(**common),
        "OLH": OLH(**common),
        "FLH": FLH(**common, n_hashes=args.n_hashes),
        "HR": HadamardResponse(**common),
        "OUE": OUE(**common),
        "SUE": SUE(**common),
    }
    names = [k for k in oracles if args.only is None or k in args.only]
    results = RESULTS
    results.update({k: ours(oracles[k], items, args.repeats) for k in names})
    floor_lines = floors(oracles, items, names, threads, args.repeats)

    try:
        warnings.filterwarnings("ignore")
        from pure_ldp.frequency_oracles.direct_encoding import DEClient, DEServer
        from pure_ldp.frequency_oracles.hadamard_response import (
            HadamardResponseClient, HadamardResponseServer,
        )
        from pure_ldp.frequency_oracles.local_hashing import (
            FastLHClient, FastLHServer, LHClient, LHServer,
        )
        from pure_ldp.frequency_oracles.unary_encoding import UEClient, UEServer
    except ImportError as exc:  # pragma: no cover - optional peer
        print(f"pure-ldp not installed ({exc}); fastldp only:")
        for k in names:
            tc, ts, _, est = results[k]
            print(f"  {k:<4} client {tc:.4f} s, server {ts:.4f} s, max|err| {max_err(est, truth):.1f}")
        print("\nREADME lines (Performance, below the oracle table), from this run:")
        print("\n".join(floor_lines))
        return 0

    notes = []
    rows = []
    for k in names:
        t_client, t_server, reports, est = results[k]
        m = n
        if k == "GRR":
            pc, ps, pest = peer(DEClient(eps, d).privatise, lambda: DEServer(eps, d), items, d, n)
        elif k == "OLH":
            m = min(args.peer_olh_n, n)
            c = LHClient(epsilon=eps, d=d, use_olh=True)
            pc, ps, pest = peer(c.privatise, lambda: LHServer(epsilon=eps, d=d, use_olh=True),
                                items[:m], d, n)
        elif k == "FLH":
            t0 = time.perf_counter()
            flh_server = FastLHServer(eps, d, args.n_hashes, use_olh=True)
            t_matrix = time.perf_counter() - t0
            notes.append(f"pure-ldp FLH: hash matrix built in the constructor in "
                         f"{t_matrix:.1f} s (not counted)")
            c = FastLHClient(eps, d, args.n_hashes, use_olh=True)
            pc, ps, pest = peer(c.privatise, lambda: flh_server, items, d, n)
        elif k == "HR":
            hr_server = HadamardResponseServer(eps, d)
            c = HadamardResponseClient(eps, d, hr_server.get_hash_funcs())
            pc, ps, pest = peer(c.privatise, lambda: hr_server, items, d, n)
        else:  # OUE, SUE
            m = min(args.peer_n, n)
            oue = k == "OUE"
            c = UEClient(eps, d, use_oue=oue)
            pc, ps, pest = peer(c.privatise, lambda: UEServer(eps, d, use_oue=oue), items[:m], d, n)
        client_note = server_note = ""
        if m == n:
            err_peer, err_ours = max_err(pest, truth), max_err(est, truth)
        else:
            truth_m = np.bincount(items[:m], minlength=d)
            ours_m = oracles[k].estimate(reports[:m]).counts
            err_peer, err_ours = max_err(pest, truth_m), max_err(ours_m, truth_m)
            client_note = f"peer at n = {m:,}, x{n / m:.0f}"
            server_note = f"{client_note}; errors at n = {m:,}"
        if k == "FLH":
            server_note = f"pure-ldp's hash matrix ({short(t_matrix)}) not counted"
        rows.append((k, "client", pc, t_client, "", client_note))
        rows.append((k, "server", ps, t_server, f"{err_peer:,.0f} / {err_ours:,.0f}",
                     server_note))

    print()
    print("README lines (Performance), in the README's words, from this run:")
    print("| oracle | step | pure-ldp | fastldp | speed-up | max abs error pure-ldp / fastldp "
          "| note |")
    print("|---|---|---|---|---|---|---|")
    for k, step, tp, tf, errors, note in rows:
        print(f"| {k} | {step} | {short(tp)} | {short(tf)} | {tp / tf:,.0f}x | {errors} "
              f"| {note} |")
    print("\n".join(floor_lines))
    for note in notes:
        print(note)
    sd = {k: float(np.sqrt(oracles[k].estimate(results[k][2]).variances.max())) for k in names}
    print("largest sd of one fastldp count at n: " + ", ".join(f"{k} {v:.0f}" for k, v in sd.items()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
