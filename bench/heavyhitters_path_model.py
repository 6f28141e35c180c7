"""PEM's path score on a model of its decode: precision@k against ``path_weight``.

The choice of ``PEM(path_weight=...)`` (pem's module docstring, "Path score")
was made here. One real PEM decode of the ``def`` lines at 10^6 users takes
minutes; this model runs the real decode (the width rule, the cap, the path
score, the pooling of ended strings, the final ranking: ``PEM._decode``
itself) with only the OLH support of each level drawn from its law instead of
computed from reports: a candidate held by ``h`` of the level's ``n_j`` users
gets ``Binomial(h, p) + Binomial(n_j - h, 1/G)`` hits (a holder's report
supports its prefix with probability ``p``, anyone else's with ``1/G``), the
users are split over the levels by the real public groups, and each draw takes
new users. Each draw is seconds, so the weights can be compared over many
draws. (What the model leaves out: the hits of different candidates are drawn
independently, where the real ones share their users.)

    python bench/heavyhitters_path_model.py [--draws 8] [--weights 0 0.3 0.5 0.7 0.85]

prints, for the ``def`` lines cut to 42 bytes (the field ``PEM+lengths`` picks;
95% of 10^6 users, as after its survey), eps = 8, k = 32, one line per weight:
the mean precision over the draws and the sd of that mean.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fastldp.experiments.heavyhitters.text import workload_law
from fastldp.heavyhitters import PEM, data, metrics
from fastldp.heavyhitters.items import prefix, prefix_keys
from fastldp.heavyhitters.lengths import cut_to_field


def model_decode(pem: PEM, codes: np.ndarray, rng: np.random.Generator) -> list:
    """``pem``'s decode of users holding ``codes``, each level's support drawn from its law."""
    m = codes.shape[0]
    groups = pem.groups(np.arange(m, dtype=np.uint64))
    held = [np.sort(prefix_keys(prefix(codes[groups == j], bits, pem.item_bits), bits))
            for j, bits in enumerate(pem.prefix_bits)]

    def level_support(level_data, level, candidates):
        keys = prefix_keys(candidates, pem.prefix_bits[level])
        mine = held[level]
        h = np.searchsorted(mine, keys, side="right") - np.searchsorted(mine, keys, side="left")
        n_j = mine.shape[0]
        return rng.binomial(h, pem.p) + rng.binomial(n_j - h, 1.0 / pem.n_buckets), n_j

    pem._by_level = lambda chunks: None  # the model needs no reports
    pem._level_support = level_support
    found, _, _, _ = pem._decode(None, m)
    return [x.rstrip("\x00") if isinstance(x, str) else x for x in pem.codec.decode(found)]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--draws", type=int, default=8)
    ap.add_argument("--weights", type=float, nargs="+", default=[0.0, 0.3, 0.5, 0.7, 0.85])
    ap.add_argument("--epsilon", type=float, default=8.0)
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--field", type=int, default=42)
    ap.add_argument("--users", type=int, default=1_000_000)
    args = ap.parse_args()
    strings, weights = workload_law("signatures", 64)
    draws = []
    for d in range(args.draws):
        users, idx = data.draw_text((strings, weights), args.users,
                                    rng=np.random.default_rng(34 + d))
        counts = np.bincount(idx, minlength=len(strings))
        truth = [strings[i] for i in np.lexsort((np.arange(len(strings)), -counts))[: args.k]]
        tree = np.random.default_rng(1034 + d).permutation(len(users))[: int(0.95 * len(users))]
        draws.append((truth, cut_to_field([users[i] for i in tree], args.field)))
    print(f"def lines, {args.field}-byte field, eps = {args.epsilon:g}, k = {args.k}, "
          f"{args.users:,} users (95% in the tree), {args.draws} draws")
    for w in args.weights:
        t0 = time.perf_counter()
        found = []
        for d, (truth, cut) in enumerate(draws):
            pem = PEM(epsilon=args.epsilon, k=args.k, item_bytes=args.field,
                      codebook_seed=34 + d, path_weight=w)
            items = model_decode(pem, pem.codec.encode(cut), np.random.default_rng(2034 + d))
            found.append(metrics.recall_at_k(items, truth))
        sem = np.std(found, ddof=1) / np.sqrt(len(found)) if len(found) > 1 else float("nan")
        print(f"path_weight {w:g}: precision {np.mean(found):.3f} (sd of the mean {sem:.3f}; "
              f"{time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
