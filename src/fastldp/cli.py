"""The ``fastldp`` command line."""

from __future__ import annotations

import argparse
import sys
import time

import numpy as np


def _demo(args) -> int:
    from . import JPRS
    from .data import rate_diagnostic_population
    from .metrics import squared_frobenius_loss, support_scores

    seeds = np.random.SeedSequence(args.seed).spawn(3)
    t0 = time.perf_counter()
    pop = rate_diagnostic_population(
        shape=(args.d1, args.d2), s=args.s, k=args.k, n=args.n, rng=seeds[0]
    )
    t1 = time.perf_counter()
    codebook = int(seeds[1].generate_state(1, dtype=np.uint64)[0])
    mech = JPRS(shape=(args.d1, args.d2), k=args.k, s=args.s, codebook_seed=codebook,
                n_threads=args.threads)
    bits = mech.privatize(pop.relations, args.eps, rng=seeds[2])
    t2 = time.perf_counter()
    result = mech.estimate(bits, args.eps)
    t3 = time.perf_counter()
    loss = squared_frobenius_loss(result.matrix, pop.target)
    scores = support_scores(result.matrix, pop.target, args.s)
    print(f"fastldp demo: {mech!r}")
    print(f"  population  n={args.n}, d1 x d2 = {args.d1} x {args.d2}, s={args.s}, k={args.k}, "
          f"eps={args.eps} (Eq. 12, seed {args.seed})")
    print(f"  squared Frobenius loss E_s : {loss:.4f}")
    print(f"  precision / recall / F1 @s : {scores.precision:.3f} / {scores.recall:.3f} / {scores.f1:.3f}")
    print(f"  sanitized packets          : {result.sanitization.n_sanitized}")
    print(f"  time: population {t1 - t0:.3f} s, privatize {t2 - t1:.3f} s, "
          f"estimate {t3 - t2:.3f} s (sketch {result.seconds['sketch']:.3f} s, "
          f"{result.n_threads} threads)")
    return 0


def _config(args) -> int:
    from . import show_config

    show_config()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="fastldp", description=__doc__)
    sub = parser.add_subparsers(dest="command", required=True)
    demo = sub.add_parser("demo", help="privatize a synthetic population with JPRS and score the estimate")
    demo.add_argument("--n", type=int, default=128_000, help="identities (default 128000)")
    demo.add_argument("--d1", type=int, default=64)
    demo.add_argument("--d2", type=int, default=64)
    demo.add_argument("--s", type=int, default=128, help="support size (default 128)")
    demo.add_argument("--k", type=int, default=8, help="relations per identity (default 8)")
    demo.add_argument("--eps", type=float, default=0.75, help="homogeneous budget (default 0.75)")
    demo.add_argument("--seed", type=int, default=0, help="master seed (default 0)")
    demo.add_argument("--threads", type=int, default=None, help="threads (default: all)")
    demo.set_defaults(func=_demo)
    cfg = sub.add_parser("config", help="show how the kernels were built")
    cfg.set_defaults(func=_config)
    return parser


def main(argv=None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return args.func(args)
    except (ValueError, TypeError) as exc:
        print(f"fastldp: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())
