"""Heavy hitters on real text (issue 34): PEM on MovieLens titles beside the known-dictionary ceiling.

The workload (tests/_heavyhitters_text.py): ``--n`` users (default 490,000,
issue 34's size), each holding the title of a rated movie, drawn with the
titles' real rating frequencies in MovieLens latest-small (titles with at
least 5 ratings: 3,651 distinct, 8 to 64 bytes after the cut at 64 bytes,
the most frequent held by 0.36% of the users). ``--data DIR`` names the
folder holding MovieLens latest-small's ``movies.csv.gz`` and
``ratings.csv.gz`` (GroupLens; by default the test suite's data folder);
nothing is downloaded.

For each epsilon (``--eps``, default 4 and 8) and ``k = 16``: PEM's
precision@k (the share of the true top-k in its k answers; its recall at k is
the same number, both lists having k items) and NCR, its decode seconds,
beside the ceiling: OLH told the true set of distinct titles, the same users
and epsilon, its top-k by estimated count. ``--configs`` names the PEM
settings compared (``legacy``: the pre-issue-34 defaults ``eta=4, c=1``;
``front``: ``allocation="front"``, more users for the first levels).

Run: ``python bench/heavyhitters_text.py [--data DIR] [--n N] [--seeds S]``.
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

import numpy as np

import importlib.util

# the workload's loader lives with the tests (it reads the repository's data folder); it is
# loaded from its file, so nothing is put on sys.path (bench/README.md: the installed fastldp)
_LOADER = Path(__file__).resolve().parents[1] / "tests" / "_heavyhitters_text.py"
_spec = importlib.util.spec_from_file_location("_heavyhitters_text", _LOADER)
text = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(text)

from fastldp.heavyhitters import PEM  # noqa: E402
from fastldp.heavyhitters.metrics import ncr, precision_at_k  # noqa: E402
from fastldp.oracles import OLH  # noqa: E402

CONFIGS = {
    "legacy": dict(eta=4, c=1, z=None, pool_ended=False),
    "default": dict(),
    "front": dict(allocation="front"),
}


def ceiling(users, names, eps, k, seed):
    """Top-k of OLH over the true distinct titles (same users, same epsilon)."""
    index = {t: i for i, t in enumerate(names)}
    values = np.array([index[u] for u in users], dtype=np.int64)
    olh = OLH(domain_size=len(names), epsilon=eps, codebook_seed=seed)
    est = np.asarray(olh.estimate(olh.privatize(values, rng=seed)).counts, dtype=np.float64)
    order = np.lexsort((np.arange(len(names)), -est))[:k]
    return [names[i] for i in order]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=490_000)
    ap.add_argument("--eps", type=float, nargs="+", default=[4.0, 8.0])
    ap.add_argument("--k", type=int, default=16)
    ap.add_argument("--seeds", type=int, default=1)
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=list(CONFIGS))
    ap.add_argument("--data", type=Path, default=None,
                    help="folder with MovieLens latest-small's movies.csv.gz and ratings.csv.gz")
    args = ap.parse_args(argv)
    if args.data is not None:
        text.DATA = args.data
    if not text.available():
        print(f"no data at {text.DATA}", file=sys.stderr)
        return 1
    names, _ = text.title_law()
    k = args.k
    print(f"{'eps':>4} {'seed':>4} {'config':>8} {'prec@k':>7} {'NCR':>6} {'ceiling':>8} {'seconds':>8}")
    for seed in range(args.seeds):
        users = text.title_users(args.n, rng=seed)
        truth = text.true_top(users, k)
        for eps in args.eps:
            ceil = precision_at_k(ceiling(users, names, eps, k, seed), truth, k)
            for name in args.configs:
                pem = PEM(epsilon=eps, k=k, item_bytes=64, codebook_seed=seed, **CONFIGS[name])
                reports = pem.privatize(users, rng=seed)
                t0 = time.perf_counter()
                found = pem.estimate(reports).items
                dt = time.perf_counter() - t0
                print(f"{eps:4g} {seed:4d} {name:>8} {precision_at_k(found, truth, k):7.3f} "
                      f"{ncr(found, truth, k):6.3f} {ceil:8.3f} {dt:8.1f}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
