"""LDP-IHT at paper 002's size: why the old form did not converge, and the sweep behind the defaults.

Prints three tables for docs/regression.md (section "LDP-IHT")::

    python bench/ldp_iht_diagnostics.py              # n = 15,000 users x m = 50 rows, d = 256, k = 8
    python bench/ldp_iht_diagnostics.py --seeds 1    # faster

(a) Relative error after each iteration, 10 iterations (the old default),
    at eps = 32 and eps = inf, for both local randomizers
    (``mechanism="laplace"``: the whole clipped gradient plus Laplace noise of
    scale ``2 c d / eps``; ``"coordinate"``: one uniformly sampled coordinate
    plus Laplace noise of scale ``2 c / eps``), with the gradient clip ``c``
    swept.
(b) The privacy noise of a batch's mean gradient per coordinate against the
    smallest true coefficient ``beta_min = 1 / sqrt(k)``: public formulas,
    ``sqrt(2 / n_t) 2 c d / eps`` (laplace) and ``sqrt(2 d / n_t) 2 c / eps``
    (coordinate: the sampling adds ``sqrt(d E g_j^2 / n_t)``, which is data,
    so it is left out), with ``n_t = N / T`` records per batch. A ratio near
    or above ``1 / 3`` means the top ``k`` of ``d`` noisy coordinates are
    mostly noise (the largest of 248 standard normals is about 3).
(c) The final relative error against ``iterations`` (T) and eps for the
    default randomizer, and the old default (laplace, T = 10) beside it.

Errors are means over ``--seeds`` fits on one data draw (seed 1, not a
draw of the experiments' streams), each fit with its own seed.
"""

from __future__ import annotations

import argparse
import math

import numpy as np

from fastldp.regression import LDPIHT, make_sparse_regression


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seeds", type=int, default=3)
    ap.add_argument("--n", type=int, default=15_000)
    args = ap.parse_args(argv)
    n, m, d, k = args.n, 50, 256, 8
    data = make_sparse_regression(n=n, m=m, d=d, k=k, sigma=0.25, rng=1)
    X, y, theta = data.X, data.y, data.theta
    N = X.shape[0]
    beta_min = 1 / math.sqrt(k)

    def path(**kw):
        """Mean over seeds of the relative error after each iteration."""
        errs = [np.linalg.norm(LDPIHT(k=k, **kw).fit(X, y, rng=s).coef_path_ - theta, axis=1)
                for s in range(args.seeds)]
        return np.mean(errs, axis=0) / np.linalg.norm(theta)

    print(f"LDP-IHT diagnostics: n = {n:,} users x m = {m} = N = {N:,} records, d = {d}, "
          f"k = {k}, sigma = 0.25, theta_bound = 1; mean of {args.seeds} fits\n")
    print("(a) relative error after iterations 1..10 (T = 10)")
    print("| eps | randomizer | grad_clip | error after iteration 1, 2, ..., 10 |")
    print("|---|---|---|---|")
    for eps in (math.inf, 32.0):
        for mech in ("laplace", "coordinate"):
            for c in (0.5, 1.0, 2.0, 4.0):
                e = path(epsilon=eps, iterations=10, grad_clip=c, mechanism=mech)
                print(f"| {eps:g} | {mech} | {c:g} | {' '.join(f'{v:.3f}' for v in e)} |",
                      flush=True)

    print("\n(b) privacy noise per coordinate of a batch's mean gradient / beta_min "
          f"(beta_min = {beta_min:.3f}), grad_clip = 2")
    print("| eps | laplace, T = 10 | laplace, T = 2 | coordinate, T = 10 | coordinate, T = 2 |")
    print("|---|---|---|---|---|")
    for eps in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0):
        cells = []
        for mech in ("laplace", "coordinate"):
            for T in (10, 2):
                nt = N / T
                if mech == "laplace":
                    sd = math.sqrt(2 / nt) * 2 * 2.0 * d / eps
                else:
                    sd = math.sqrt(2 * d / nt) * 2 * 2.0 / eps
                cells.append(f"{sd / beta_min:.3f}")
        print(f"| {eps:g} | {' | '.join(cells)} |")

    Ts = (1, 2, 3, 5, 10)
    print("\n(c) final relative error against iterations T (grad_clip = 2, step = 1)")
    print(f"| eps | {' | '.join(f'coordinate, T = {T}' for T in Ts)} | laplace, T = 10 (old) |")
    print("|---|" + "---|" * (len(Ts) + 1))
    for eps in (0.5, 1.0, 2.0, 4.0, 8.0, 16.0, 32.0, math.inf):
        cells = [f"{path(epsilon=eps, iterations=T)[-1]:.3f}" for T in Ts]
        old = path(epsilon=eps, iterations=10, mechanism="laplace")[-1]
        print(f"| {eps:g} | {' | '.join(cells)} | {old:.3f} |", flush=True)


if __name__ == "__main__":
    main()
