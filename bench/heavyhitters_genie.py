"""The eps-4 limit of prefix trees on real text, measured with a genie (issue 34).

PEM as shipped beside the same PEM whose decode is told, at every level, the
set of prefixes that really occur among the users' strings (a *genie*: each
level's candidates are cut to the true prefixes, nothing else changes: the
same users, groups, reports, width rule and final ranking). The genie never
spends a candidate slot on a prefix nobody holds, so its precision is an
upper bound for any candidate rule of a prefix tree with this split of the
users over the levels. If the genie misses the target (within 0.10 of the
known-dictionary ceiling) the loss is the split (each level decoded from its
own ``n / g`` users), not the candidate rule.

Workload, seeds and ceiling as ``fastldp reproduce heavy-hitters-text``
(:mod:`fastldp.experiments.heavyhitters.text`): ``signatures`` in a 64-byte
field, ``n = 10^6`` users drawn with seed 34, codebook seed 34, coins
``default_rng(51)``; the ceiling is OLH told the true distinct strings.
Bench only: the genie is not part of the package API.

Run: ``python bench/heavyhitters_genie.py [--n N] [--epsilons 4 8] [--ks 16 32]
[--workload signatures] [--verify V ...] [--item-bytes B]`` (``--verify`` adds rows
with that verification share, for PEM and for the genie; ``--item-bytes`` cuts the
strings to a shorter field, as the length survey of ``PEM+lengths`` does).
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from fastldp.experiments.heavyhitters.text import _ceiling, workload_law
from fastldp.heavyhitters import PEM, data, metrics
from fastldp.heavyhitters.items import prefix
from fastldp.heavyhitters.lengths import cut_to_field

SEED = 34
FIELDS = {"words": 32, "signatures": 64}


class GeniePEM(PEM):
    """PEM whose decode keeps, at every level, only the prefixes of the true strings."""

    def __init__(self, *, true_strings, **kwargs) -> None:
        super().__init__(**kwargs)
        self._true_codes = self.codec.encode(list(true_strings))

    def _possible(self, candidates: np.ndarray, bits: int) -> np.ndarray:
        candidates = super()._possible(candidates, bits)
        truth = prefix(self._true_codes, bits, self.item_bits)
        if truth.ndim == 1:
            return candidates[np.isin(candidates, truth)]
        rows = {bytes(r) for r in np.ascontiguousarray(truth).view(np.uint8).reshape(
            truth.shape[0], -1)}
        flat = np.ascontiguousarray(candidates).view(np.uint8).reshape(candidates.shape[0], -1)
        return candidates[np.fromiter((bytes(r) in rows for r in flat), dtype=bool,
                                      count=candidates.shape[0])]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10**6)
    ap.add_argument("--workload", default="signatures", choices=sorted(FIELDS))
    ap.add_argument("--epsilons", type=float, nargs="+", default=[4.0, 8.0])
    ap.add_argument("--ks", type=int, nargs="+", default=[16, 32])
    ap.add_argument("--verify", type=float, nargs="*", default=[])
    ap.add_argument("--item-bytes", type=int, default=None,
                    help="cut every string to this field (as two_rounds' plan does, but for "
                         "all the users); default the workload's field")
    args = ap.parse_args(argv)
    strings, weights = workload_law(args.workload, FIELDS[args.workload])
    users, idx = data.draw_text((strings, weights), args.n, rng=np.random.default_rng(SEED))
    field = FIELDS[args.workload]
    if args.item_bytes is not None and args.item_bytes != field:
        # the truth stays the whole strings' top k (as in the reproduce table); a string
        # longer than the field is found as its cut, which the precision counts as a miss
        field = args.item_bytes
        users = cut_to_field(users, field)
    true_counts = np.bincount(idx, minlength=len(strings))
    by_count = np.lexsort((np.arange(len(strings)), -true_counts))
    held = list(dict.fromkeys(users))
    print(f"{args.workload} ({field}-byte field), n = {args.n:,}, {len(held):,} distinct strings "
          f"held; load {os.getloadavg()[0]:.1f}")
    print(f"{'eps':>4} {'k':>3} {'verify':>6} {'ceiling':>8} {'PEM':>14} {'genie':>14}")
    for eps in args.epsilons:
        ceiling = _ceiling(idx, len(strings), eps, SEED)
        for k in args.ks:
            truth = [strings[i] for i in by_count[:k]]
            ceil_p = metrics.recall_at_k([strings[i] for i in ceiling[:k]], truth)
            for verify in [0.0] + list(args.verify):
                cells = []
                for cls, extra in ((PEM, {}), (GeniePEM, {"true_strings": held})):
                    proto = cls(epsilon=eps, k=k, item_bytes=field, codebook_seed=SEED,
                                verify=verify, **extra)
                    start = time.perf_counter()
                    res = proto.estimate(proto.privatize(users, rng=np.random.default_rng(SEED + 17)))
                    secs = time.perf_counter() - start
                    cells.append(f"{metrics.recall_at_k(list(res.items), truth):.3f} [{secs:5.1f}s]")
                print(f"{eps:>4g} {k:>3} {verify:>6g} {ceil_p:>8.3f} {cells[0]:>14} {cells[1]:>14}",
                      flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
