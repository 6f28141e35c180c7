"""PEM's user allocation on the synthetic workloads (issue 34, item 3): "equal" beside "front".

Zipf items over 2^32 (:func:`~fastldp.heavyhitters.data.zipf_items`, item
seeds 21, 22, 23, codebook seed ``1 + seed``) and corpus words of at most 8
bytes (:func:`~fastldp.heavyhitters.data.word_items`, item seed 21), 10^6
users, ``k = 32``, epsilon 2 and 4: PEM's precision@k and NCR, the mean over
the seeds, for each allocation. The real-text comparison is
``bench/heavyhitters_text.py --configs default front``.

Run: ``python bench/heavyhitters_allocation.py [--n N]``.
"""

from __future__ import annotations

import argparse
from collections import Counter

import numpy as np

from fastldp.heavyhitters import PEM
from fastldp.heavyhitters.data import true_top_k, word_items, zipf_items
from fastldp.heavyhitters.metrics import ncr, precision_at_k

SEEDS = {"zipf32": (21, 22, 23), "words8": (21,)}


def workload(name: str, n: int, seed: int):
    """``(items, truth, codec kwargs)`` of a workload, its true top 32."""
    gen = np.random.default_rng(seed)
    if name == "zipf32":
        items = zipf_items(n, rng=gen)
        return items, true_top_k(items, 32)[0].tolist(), {"item_bits": 32}
    items = word_items(n, item_bytes=8, rng=gen)
    top = sorted(Counter(items).items(), key=lambda t: (-t[1], t[0]))[:32]
    return items, [w for w, _ in top], {"item_bytes": 8}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**6)
    args = ap.parse_args(argv)
    print(f"{'workload':>8} {'eps':>4} {'allocation':>10} {'prec@32':>8} {'NCR':>6}  per seed")
    for name, seeds in SEEDS.items():
        for eps in (2.0, 4.0):
            for allocation in ("equal", "front"):
                precision, ratio = [], []
                for seed in seeds:
                    items, truth, kwargs = workload(name, args.n, seed)
                    pem = PEM(epsilon=eps, k=32, codebook_seed=1 + seed,
                              allocation=allocation, **kwargs)
                    found = pem.estimate(pem.privatize(items, rng=np.random.default_rng(seed)))
                    got = (found.items.tolist() if isinstance(found.items, np.ndarray)
                           else list(found.items))
                    precision.append(precision_at_k(got, truth, 32))
                    ratio.append(ncr(got, truth, 32))
                print(f"{name:>8} {eps:4g} {allocation:>10} {np.mean(precision):8.3f} "
                      f"{np.mean(ratio):6.3f}  {[round(p, 3) for p in precision]}", flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
