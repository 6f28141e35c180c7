"""Time a batch charge of the per-identity ledger at scale (issue 22: 10^6 identities < 5 s).

Fills a ledger file with ``--identities`` identities (10^7 by default) in
disjoint batches of ``--batch`` (10^6), each charged one epsilon, then
charges further batches drawn at random from all of them (every identity
already has a release set, the heaviest case), alternately with one epsilon
for all ("one") and with an epsilon of each identity's own ("own": a
personal budget drawn from a continuum, the slower path), and prints the
seconds of each charge. Beside each charge it
times the floor of any SQLite ledger: the same rows inserted by
``executemany`` into a bare ``WITHOUT ROWID`` table of the same file, in one
transaction (no validation, no per-identity totals); the ratio of the two is
what to compare across machines, since a loaded machine slows both. Then it
times ``spent`` and ``can_release`` for a batch, and ``groups``.

Run: ``python bench/ledger_charge.py`` (14 charges of 10^6 and a ledger file of
about 940 MiB in a temporary folder, ``--dir`` to choose where; 4 minutes on 2
cores shared with a load of 11, about a minute expected on quiet ones);
``--identities 2e6`` for a quick look.
"""

from __future__ import annotations

import argparse
import os
import sqlite3
import tempfile
import time
from pathlib import Path

import numpy as np

from fastldp.accounting.ledger import Ledger


def _count(text: str) -> int:
    return int(float(text))


def _floor(path: Path, ids: np.ndarray, eps: np.ndarray, tag: int) -> float:
    """The same rows into a bare table of the same file: executemany, one transaction."""
    con = sqlite3.connect(path, isolation_level=None, timeout=60)
    con.execute("PRAGMA synchronous=FULL")
    con.execute("CREATE TABLE IF NOT EXISTS floor(release INTEGER, identity INTEGER, "
                "epsilon REAL, PRIMARY KEY (release, identity)) WITHOUT ROWID")
    t0 = time.perf_counter()
    order = np.argsort(ids)
    con.execute("BEGIN IMMEDIATE")
    con.executemany("INSERT INTO floor VALUES (?, ?, ?)",
                    zip([tag] * ids.size, ids[order].tolist(), eps[order].tolist()))
    con.execute("COMMIT")
    seconds = time.perf_counter() - t0
    con.execute("DELETE FROM floor")
    con.close()
    return seconds


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--identities", type=_count, default=10_000_000)
    parser.add_argument("--batch", type=_count, default=1_000_000)
    parser.add_argument("--random-batches", type=int, default=4,
                        help="batches drawn from all identities after the fill, one epsilon "
                             "and own epsilons in turn (default 4)")
    parser.add_argument("--dir", type=Path, default=None, help="where the ledger file goes")
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    with tempfile.TemporaryDirectory(dir=args.dir) as folder:
        path = Path(folder) / "ledger.db"
        ledger = Ledger(path)
        print(f"ledger {path}: {args.identities:,} identities, batches of {args.batch:,}, "
              f"SQLite {sqlite3.sqlite_version}, {os.cpu_count()} cpus")
        print(f"{'charge':>8} {'epsilons':>8} {'identities so far':>18} {'seconds':>8} "
              f"{'floor s':>8} {'ratio':>6}")
        space = rng.permutation(args.identities).astype(np.int64)
        fill = range(0, args.identities, args.batch)
        plan = [space[start:start + args.batch] for start in fill]
        plan += [rng.choice(space, args.batch, replace=False)
                 for _ in range(args.random_batches)]
        worst = {"one": 0.0, "own": 0.0}
        for k, ids in enumerate(plan):
            kind = "own" if k >= len(fill) and (k - len(fill)) % 2 else "one"
            eps = (rng.uniform(0.05, 0.5, ids.size) if kind == "own"
                   else np.full(ids.size, rng.uniform(0.05, 0.5)))
            t0 = time.perf_counter()
            ledger.charge(ids, eps if kind == "own" else float(eps[0]), release=f"batch-{k}")
            seconds = time.perf_counter() - t0
            floor = _floor(path, ids, eps, k)
            worst[kind] = max(worst[kind], seconds)
            print(f"{k:>8} {kind:>8} {ledger.n_identities:>18,} {seconds:>8.2f} {floor:>8.2f} "
                  f"{seconds / floor:>6.2f}", flush=True)
        query = plan[-1]
        t0 = time.perf_counter()
        ledger.spent(query)
        t1 = time.perf_counter()
        ledger.can_release(query, 0.1, cap=10.0)
        t2 = time.perf_counter()
        groups = ledger.groups(cap=10.0)
        t3 = time.perf_counter()
        size = sum(p.stat().st_size for p in Path(folder).iterdir()) / 2**20
        print(f"worst charge {worst['one']:.2f} s (one epsilon), {worst['own']:.2f} s (own "
              f"epsilons); spent of {query.size:,}: {t1 - t0:.2f} s; "
              f"can_release: {t2 - t1:.2f} s; groups ({len(groups):,}): {t3 - t2:.2f} s; "
              f"files {size:,.0f} MiB")
        ledger.close()


if __name__ == "__main__":
    main()
