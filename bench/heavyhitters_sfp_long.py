"""SFP on long strings (issue 34, item 4): time and top-k recovery at 64 bytes on real text.

The workloads (``--workload``):

* ``signatures`` (default): the ``def`` lines of the running Python's
  standard library (site-packages left out), stripped and cut at 64 bytes,
  each distinct line with its real number of occurrences (about 39,000
  distinct lines, the most frequent ``def setUp(self):`` 1.3% of the lines,
  the 16th 0.21%); ``--n`` users (default 10^6) draw a line with those
  frequencies (``--seed``). Nothing is downloaded.
* ``synthetic``: the exact-recovery test's "long" workload
  (tests/test_heavyhitters_exact.py: 216 strings of 10 to 24 letters in a
  64-byte field, the top 16 with Zipf shares ``1 / i``, 25% down to 1.6%,
  the tail at most a third of the 16th).

For each epsilon (``--eps``, default 4 and 8), ``k`` (default 16) and
configuration (``--configs``): the seconds of ``privatize`` and of
``estimate``, the number of answers, the hits (true top-k among them) and
the hits over ``k`` (precision@k when there are k answers; SFP returns only
what it assembled, often fewer). Configurations: ``default`` (the defaults:
one-byte fragments, 256 puzzle pieces at 64 bytes), ``f16a4`` (two-byte
fragments, 16 pieces: the defaults before issue 34), ``f16a2``. The load
(``os.getloadavg``) is printed first: the machine's other work slows both
steps.

Run: ``python bench/heavyhitters_sfp_long.py [--n N] [--eps E ...] [--configs C ...]``.
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import sysconfig
import time

import numpy as np

from fastldp.heavyhitters import SFP

CONFIGS = {
    "default": {},
    "f16a4": {"fragment_bits": 16, "puzzle_bits": 4},
    "f16a2": {"fragment_bits": 16, "puzzle_bits": 2},
}

_DEF = re.compile(r"^\s*(?:async\s+)?def\s+[^\n]*:\s*$")


def signature_law(item_bytes: int = 64) -> tuple[list, np.ndarray]:
    """The stdlib's distinct ``def`` lines (cut at ``item_bytes``), most frequent first, and
    their counts."""
    root = sysconfig.get_paths()["stdlib"]
    counts: collections.Counter = collections.Counter()
    for folder, _, files in os.walk(root):
        if "site-packages" in folder:
            continue
        for name in files:
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as fh:
                    lines = fh.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue
            for line in lines:
                if _DEF.match(line):
                    counts[line.strip().encode()[:item_bytes]] += 1
    names = sorted(counts, key=lambda s: (-counts[s], s))
    return names, np.array([counts[s] for s in names], dtype=np.float64)


def _exact_tests():
    """tests/test_heavyhitters_exact.py, loaded from its file (nothing put on sys.path)."""
    import importlib.util
    from pathlib import Path

    path = Path(__file__).resolve().parents[1] / "tests" / "test_heavyhitters_exact.py"
    spec = importlib.util.spec_from_file_location("_heavyhitters_exact", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=1_000_000)
    ap.add_argument("--eps", type=float, nargs="+", default=[4.0, 8.0])
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--seed", type=int, default=5)
    ap.add_argument("--configs", nargs="+", default=["default"], choices=list(CONFIGS))
    ap.add_argument("--workload", default="signatures", choices=["signatures", "synthetic"])
    args = ap.parse_args(argv)
    if args.workload == "signatures":
        names, weights = signature_law()
        rng = np.random.default_rng(args.seed)
        which = rng.choice(len(names), size=args.n, p=weights / weights.sum())
    else:
        users, _, _ = _exact_tests().workload("long", args.n, args.seed)
        names, which = np.unique(np.array(users, dtype=object), return_inverse=True)
        names = list(names)
    users = [names[i] for i in which]
    held = np.bincount(which, minlength=len(names))
    top = np.lexsort((np.arange(len(names)), -held))[:args.k]
    truth = {names[i] for i in top}
    print(f"load {os.getloadavg()[0]:.2f}; {args.workload}; n {args.n}; {len(names)} distinct; "
          f"top-{args.k} shares {held[top[0]] / args.n:.4f} .. {held[top[-1]] / args.n:.4f}")
    print(f"{'eps':>4} {'config':>8} {'f':>3} {'a':>2} {'P':>3} {'privatize':>9} "
          f"{'estimate':>8} {'answers':>7} {'hits':>4} {'hits/k':>6}")
    for eps in args.eps:
        for name in args.configs:
            sfp = SFP(epsilon=eps, k=args.k, item_bytes=64, codebook_seed=args.seed,
                      **CONFIGS[name])
            t0 = time.perf_counter()
            reports = sfp.privatize(users, rng=args.seed)
            t1 = time.perf_counter()
            found = sfp.estimate(reports).items
            t2 = time.perf_counter()
            hits = len(set(found) & truth)
            print(f"{eps:4g} {name:>8} {sfp.fragment_bits:3d} {sfp.puzzle_bits:2d} "
                  f"{sfp.n_positions:3d} {t1 - t0:9.2f} {t2 - t1:8.2f} {len(found):7d} "
                  f"{hits:4d} {hits / args.k:6.3f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
