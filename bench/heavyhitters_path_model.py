"""PEM's path score and the byte survey's alphabet on a model of PEM's decode: precision@k.

The choices of ``PEM(path_weight=...)`` (pem's module docstring, "Path
score") and of when ``two_rounds`` hands PEM the byte survey's alphabet
(lengths' module docstring) were made here. One real PEM decode of the
``def`` lines at 10^6 users takes minutes; this model runs the real decode
(the width rule, the cap, the path score, the alphabet, the pooling of ended
strings, the final ranking: ``PEM._decode`` itself) with only the OLH support
of each level drawn from its law instead of computed from reports: a
candidate held by ``h`` of the level's ``n_j`` users gets ``Binomial(h, p) +
Binomial(n_j - h, 1/G)`` hits (a holder's report supports its prefix with
probability ``p``, anyone else's with ``1/G``), the users are split over the
levels by the real public groups, and each draw takes new users. Each draw
is seconds, so settings can be compared over many draws. (What the model
leaves out: the hits of different candidates are drawn independently, where
the real ones share their users.)

    python bench/heavyhitters_path_model.py [--workload signatures] [--epsilon 8] [--k 32]
        [--field 42] [--draws 8] [--weights 0 0.3 0.5 0.7 0.85] [--alphabet none]
        [--byte-z 1.645] [--verify 0] [--max-kept N] [--z Z] [--genie]

``--alphabet survey`` runs the real byte survey of ``two_rounds`` (its share
of the users, ``string_bytes``, ``byte_oracle``, ``byte_alphabet``) on each
draw and gives PEM its alphabet when the survey trusts it; ``forced`` gives
it whatever the survey saw, trusted or not. The tree gets 95% of the users,
as after ``two_rounds``' two surveys. It prints, one line per weight, the
mean precision over the draws and the sd of that mean, and for the byte
survey the rarest byte of the true top k and its share of the byte reports.
"""

from __future__ import annotations

import argparse
import time

import numpy as np

from fastldp.experiments.heavyhitters.text import workload_law
from fastldp.heavyhitters import PEM, data, metrics
from fastldp.heavyhitters.items import prefix, prefix_keys
from fastldp.heavyhitters.lengths import (
    DEFAULT_BYTE_SHARE, DEFAULT_BYTE_Z, DEFAULT_MAX_UNSEEN, byte_alphabet, byte_oracle, cut_to_field,
    string_bytes,
)


def model_decode(pem: PEM, codes: np.ndarray, rng: np.random.Generator,
                 genie: bool = False) -> list:
    """``pem``'s decode of users holding ``codes``, each level's support drawn from its law.

    ``genie``: each level's candidates are cut to the prefixes some user holds.
    """
    m = codes.shape[0]
    groups = pem.groups(np.arange(m, dtype=np.uint64))
    held = [np.sort(prefix_keys(prefix(codes[groups == j], bits, pem.item_bits), bits))
            for j, bits in enumerate(pem.prefix_bits)]
    if genie:
        occur = {bits: np.unique(prefix_keys(prefix(codes, bits, pem.item_bits), bits))
                 for bits in pem.prefix_bits}
        possible = pem._possible

        def genie_possible(candidates, bits):
            candidates = possible(candidates, bits)
            return candidates[np.isin(prefix_keys(candidates, bits), occur[bits])]

        pem._possible = genie_possible

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


def byte_shares(strings, weights) -> np.ndarray:
    """Each byte's share of the byte reports: a user draws one of its string's distinct bytes."""
    share = np.zeros(256)
    w = np.asarray(weights, dtype=np.float64) / np.sum(weights)
    for x, p in zip(strings, w):
        distinct = np.unique(np.frombuffer(x.encode("utf-8"), dtype=np.uint8))
        if distinct.size:
            share[distinct] += p / distinct.size
    return share


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--workload", choices=["signatures", "words"], default="signatures")
    ap.add_argument("--draws", type=int, default=8)
    ap.add_argument("--weights", type=float, nargs="+", default=[0.0, 0.3, 0.5, 0.7, 0.85])
    ap.add_argument("--epsilon", type=float, default=8.0)
    ap.add_argument("--k", type=int, default=32)
    ap.add_argument("--field", type=int, default=42)
    ap.add_argument("--users", type=int, default=1_000_000)
    ap.add_argument("--alphabet", choices=["none", "survey", "forced"], default="none")
    ap.add_argument("--byte-z", type=float, default=DEFAULT_BYTE_Z)
    ap.add_argument("--verify", type=float, default=0.0, help="PEM's verify share")
    ap.add_argument("--max-kept", type=int, default=None, help="PEM's cap (default its own)")
    ap.add_argument("--genie", action="store_true",
                    help="cut each level's candidates to the prefixes some user holds")
    ap.add_argument("--z", type=float, default=None, help="PEM's width z (default its own)")
    args = ap.parse_args()
    strings, weights = workload_law(args.workload, 64 if args.workload == "signatures" else 32)
    name = {"signatures": "def lines", "words": "words"}[args.workload]
    draws = []
    for d in range(args.draws):
        users, idx = data.draw_text((strings, weights), args.users,
                                    rng=np.random.default_rng(34 + d))
        counts = np.bincount(idx, minlength=len(strings))
        truth = [strings[i] for i in np.lexsort((np.arange(len(strings)), -counts))[: args.k]]
        order = np.random.default_rng(1034 + d).permutation(len(users))
        n_bytes = int(DEFAULT_BYTE_SHARE * len(users))
        tree = order[: int(0.95 * len(users))]
        alphabet = None
        if args.alphabet != "none":
            oracle = byte_oracle(epsilon=args.epsilon, codebook_seed=3034 + d)
            surveyed = [users[i] for i in order[len(users) - n_bytes:]]
            estimate = oracle.estimate(oracle.privatize(
                string_bytes(surveyed, rng=4034 + d), rng=5034 + d))
            alphabet, unseen = byte_alphabet(
                estimate, z=args.byte_z,
                max_unseen=1.0 if args.alphabet == "forced" else DEFAULT_MAX_UNSEEN)
            if d == 0:
                share = byte_shares(strings, weights)
                used = sorted({b for x in truth for b in x.encode("utf-8")}, key=lambda b: share[b])
                bar = float(np.median(np.asarray(estimate.std) / estimate.n)) * args.byte_z
                print(f"byte survey ({n_bytes:,} users, draw 1): alphabet of "
                      f"{'no' if alphabet is None else len(alphabet)} bytes, unseen bound "
                      f"{unseen:.3f}; rarest byte of the true top {args.k}: {bytes([used[0]])!r} "
                      f"in {100 * share[used[0]]:.3f}% of the byte reports; the survey's bar "
                      f"about {100 * bar:.3f}%; bytes of the true top {args.k} left out: "
                      f"{0 if alphabet is None else sum(b not in alphabet for b in used)}")
        draws.append((truth, cut_to_field([users[i] for i in tree], args.field), alphabet))
    print(f"{name}, {args.field}-byte field, eps = {args.epsilon:g}, k = {args.k}, "
          f"{args.users:,} users (95% in the tree), {args.draws} draws, alphabet: {args.alphabet}"
          + (", genie (candidates cut to the prefixes some user holds)" if args.genie else ""))
    for w in args.weights:
        t0 = time.perf_counter()
        found = []
        for d, (truth, cut, alphabet) in enumerate(draws):
            pem = PEM(epsilon=args.epsilon, k=args.k, item_bytes=args.field,
                      codebook_seed=34 + d, path_weight=w, alphabet=alphabet,
                      verify=args.verify, max_kept=args.max_kept,
                      **({} if args.z is None else {"z": args.z}))
            items = model_decode(pem, pem.codec.encode(cut), np.random.default_rng(2034 + d),
                                 genie=args.genie)
            found.append(metrics.recall_at_k(items, truth))
        sem = np.std(found, ddof=1) / np.sqrt(len(found)) if len(found) > 1 else float("nan")
        print(f"path_weight {w:g}: precision {np.mean(found):.3f} (sd of the mean {sem:.3f}; "
              f"{time.perf_counter() - t0:.0f} s)", flush=True)


if __name__ == "__main__":
    main()
