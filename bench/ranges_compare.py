"""fastldp's hierarchical histograms beside ldp-hierarchical-mechanism, the one Python package for LDP ranges.

Same users, domain, branching and budget: ``D = 256`` values, ``B = 4``,
``epsilon = 1``, each user reporting one level drawn at random at the whole
budget (the peer's ``on_all_levels=False``; with ``True`` the peer spends
``epsilon`` per level, ``epsilon (depth - 1)`` in all, as its
``get_privacy`` says), OUE at every level, consistency (the peer's
``post_process``, Hay et al. with equal level variances). The peer loops
over users in Python (pure-LDP clients); its ``cdf`` gives ``[a, b]`` as
``cdf[b] - cdf[a - 1]``. Errors: the RMSE of every range's fraction (all
32,896 ranges), and the mean absolute error of the 0.1 .. 0.9 quantiles in
values (ours: the integer ``ceil(t) - 1`` of the float quantile ``t``; the
peer's ``get_quantile``), against the data's own (``inverted_cdf``).
fastldp's HaarHRR (no counterpart in the peer) is printed beside them.

Speed: the peer's client and tree update loop over users in Python, so its
time is linear in ``n``; it runs at ``--users`` and its time per user is
scaled to ``--speed-users`` (default 10^6, said in the output). fastldp's
hierarchy runs at ``--speed-users`` itself (best of ``--reps``), and the
speed-up is the ratio of the two times per 10^6 users.

    python bench/ranges_compare.py [--users 20000] [--reps 3] [--epsilon 1.0]
                                   [--speed-users 1000000]
"""

from __future__ import annotations

import argparse
import os
import time

import numpy as np

from fastldp.ranges import HaarHRR, HierarchicalHistogram

D, B = 256, 4
QS = np.linspace(0.1, 0.9, 9)


def errors(range_fraction, quantiles, values) -> tuple:
    a, b = np.triu_indices(D)
    prefix = np.concatenate([[0], np.cumsum(np.bincount(values, minlength=D))]) / values.size
    rmse = float(np.sqrt(np.mean((range_fraction(a, b) - (prefix[b + 1] - prefix[a])) ** 2)))
    truth = np.quantile(values, QS, method="inverted_cdf")
    return rmse, float(np.mean(np.abs(np.asarray(quantiles, dtype=float) - truth)))


def run_ours(values, eps, seed) -> tuple:
    t = time.perf_counter()
    hh = HierarchicalHistogram(epsilon=eps, domain_size=D, branching=B, oracle="oue",
                               codebook_seed=seed)
    est = hh.estimate(hh.privatize(values, rng=seed))
    seconds = time.perf_counter() - t
    q = np.ceil(est.quantile(QS)) - 1
    return (*errors(lambda a, b: est.range_count(a, b) / values.size, q, values), seconds)


def run_haar(values, eps, seed) -> tuple:
    t = time.perf_counter()
    haar = HaarHRR(epsilon=eps, domain_size=D, codebook_seed=seed)
    est = haar.estimate(haar.privatize(values, rng=seed))
    seconds = time.perf_counter() - t
    q = np.ceil(est.quantile(QS)) - 1
    return (*errors(lambda a, b: est.range_count(a, b) / values.size, q, values), seconds)


def run_peer(values, eps, seed) -> tuple:
    from hierarchical_mechanism_LDP import Private_TreeBary

    np.random.seed(seed)  # the peer draws its levels and noise from numpy's global state
    t = time.perf_counter()
    tree = Private_TreeBary(D, B, eps, protocol="unary_encoding", on_all_levels=False)
    tree.update_tree(values)
    tree.compute_attributes()
    tree.post_process()
    seconds = time.perf_counter() - t
    cdf = np.concatenate([[0.0], np.asarray(tree.cdf, dtype=float)])  # cdf[v + 1] = P(<= v)
    q = [tree.get_quantile(float(x)) for x in QS]
    return (*errors(lambda a, b: cdf[b + 1] - cdf[a], q, values), seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--users", type=int, default=20_000)
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--epsilon", type=float, default=1.0)
    parser.add_argument("--speed-users", type=int, default=1_000_000)
    args = parser.parse_args()
    rng = np.random.default_rng(0)
    values = np.clip(np.floor(rng.normal(100, 40, args.users)), 0, D - 1).astype(np.int64)
    load = os.getloadavg()[0] if hasattr(os, "getloadavg") else float("nan")
    print(f"D = {D}, B = {B}, n = {args.users:,}, epsilon = {args.epsilon}, users split by level, "
          f"OUE, consistency; {args.reps} runs each; 1-min load {load:.1f}")
    print(f"{'':<30} {'range RMSE':>11} {'quantile MAE':>13} {'seconds/run':>12}")
    rows = {}
    for name, run in (("fastldp HierarchicalHistogram", run_ours),
                      ("ldp-hierarchical-mechanism", run_peer),
                      ("fastldp HaarHRR", run_haar)):
        out = np.array([run(values, args.epsilon, s) for s in range(args.reps)])
        rows[name] = out.mean(axis=0)
        rmse, mae, seconds = rows[name]
        print(f"{name:<30} {rmse:>11.3e} {mae:>13.2f} {seconds:>12.3f}")
    ours, peer = rows["fastldp HierarchicalHistogram"], rows["ldp-hierarchical-mechanism"]
    print(f"speed-up at n = {args.users:,} {peer[2] / ours[2]:.0f}x; RMSE ratio (ours / peer) "
          f"{ours[0] / peer[0]:.3f} (each over {args.reps} runs: the ratio carries their noise)")
    big = np.clip(np.floor(rng.normal(100, 40, args.speed_users)), 0, D - 1).astype(np.int64)
    best = min(run_ours(big, args.epsilon, s)[2] for s in range(args.reps))
    scaled = peer[2] * args.speed_users / args.users
    print(f"per {args.speed_users:,} users: fastldp {best:.3f} s (run at that n, best of "
          f"{args.reps}); the peer {scaled:.1f} s (its {peer[2]:.2f} s at n = {args.users:,} "
          f"scaled linearly: it loops over users in Python); speed-up {scaled / best:.0f}x")


if __name__ == "__main__":
    main()
