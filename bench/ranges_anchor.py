"""The range-query study's anchor: D = 256, N = 2^26, e^eps = 3, Cauchy data, all ranges pooled.

Cormode, Kulkarni and Srivastava's results file (VLDB 2019) gives, at that
setting, the root mean squared error of a range's *fraction* (count / N)
over every range ``[a, b]`` of ``[0, 256)`` (32,896 ranges) pooled:
hierarchical histograms over OUE with consistency at B = 4: 7.18e-4
(B = 2: 7.62e-4, B = 16: 7.85e-4), HaarHRR 7.23e-4, flat
OUE 2.42e-3. This script prints ours beside theirs.

2^26 users are drawn with :meth:`HierarchicalHistogram.simulate`, the exact
aggregate law of the level counts (tests/test_ranges.py checks it against
real privatization), so one repetition takes milliseconds; the RMSE pools
``--reps`` repetitions of the same population. The theory column is the
RMSE the variances give: the consistent leaves' covariance is not
diagonal, so for the hierarchy it is computed from the estimate's exact
covariance with each level's noise variance
(``fastldp.ranges._consistency.pooled_range_variance``); for the flat
baseline ``sqrt(mean(r) 3 N) / N``, ``r`` the range's length; for HaarHRR
the mean of ``HaarEstimate.range_variances`` (each level's coefficient
noise ``N h / tanh(eps/2)^2`` times the range's squared weights). The row
"optimal weights" splits the users over the levels by
``optimal_level_weights`` instead of uniformly. "1-run sd" is the standard
deviation of one repetition's RMSE: how far a figure from a single run
(such as a published one) may fall from the pooled value.

The data: Cauchy with location ``D / 2`` and scale ``D / 16``, values
outside ``[0, D)`` drawn again (the study's exact parameters were not at
hand; the error is noise-dominated at this N, so the data barely matter:
``--scale`` changes them).

    python bench/ranges_anchor.py [--reps 20] [--seed 0] [--scale 16]
"""

from __future__ import annotations

import argparse
import math
import time

import numpy as np

from fastldp.ranges import FlatRange, HaarHRR, HierarchicalHistogram, optimal_level_weights

D = 256
N = 2**26
EPSILON = math.log(3.0)
#: the study's results file, RMSE of a range fraction, all ranges pooled
PUBLISHED = {"HH B=2": 7.62e-4, "HH B=4": 7.18e-4, "HH B=16": 7.85e-4, "HaarHRR": 7.23e-4,
             "flat OUE": 2.42e-3}


def cauchy_counts(rng: np.random.Generator, scale: float) -> np.ndarray:
    """How many of the N users hold each value: Cauchy(D/2, D/scale), redrawn outside [0, D)."""
    values = np.empty(0, dtype=np.int64)
    while values.size < N:
        draw = np.floor(D / 2 + (D / scale) * rng.standard_cauchy(2 * N))
        draw = draw[(draw >= 0) & (draw < D)].astype(np.int64)
        values = np.concatenate([values, draw[: N - values.size]])
    return np.bincount(values, minlength=D)


def all_ranges() -> tuple:
    a, b = np.triu_indices(D)
    return a, b


def rmse(mech, counts: np.ndarray, reps: int, rng: np.random.Generator) -> tuple:
    """The RMSE pooled over the repetitions, and the sd of one repetition's RMSE.

    The second says how far a figure from a single run may fall from the
    first: every range shares the noise of the same few nodes or
    coefficients, so one run's RMSE over all 32,896 ranges still varies.
    """
    a, b = all_ranges()
    prefix = np.concatenate([[0], np.cumsum(counts)])
    truth = (prefix[b + 1] - prefix[a]) / N
    sq = np.empty(reps)
    for r in range(reps):
        est = mech.simulate(counts, rng=rng)
        sq[r] = float(np.mean((est.range_count(a, b) / N - truth) ** 2))
    return math.sqrt(float(sq.mean())), float(np.sqrt(sq).std(ddof=1)) if reps > 1 else math.nan


def theory_flat() -> float:
    a, b = all_ranges()
    e = math.exp(EPSILON)
    var = 4 * e / (e - 1) ** 2  # OUE, a count no user holds, per report
    return math.sqrt(np.mean(b - a + 1) * var * N) / N


def theory_hierarchy(mech: HierarchicalHistogram) -> float:
    """The noise-only RMSE of the consistent ranges, from the estimate's covariance."""
    from fastldp.ranges._consistency import pooled_range_variance

    eps = np.array([mech.epsilon])
    noise = np.array([N * float(o.variances(eps)[0]) / w
                      for o, w in zip(mech.oracles, mech.level_weights)])
    return math.sqrt(pooled_range_variance(noise, mech.branching, D)) / N


def theory_haar(mech: HaarHRR, counts: np.ndarray) -> float:
    """The noise-only RMSE of HaarHRR's ranges: the mean of ``range_variances`` over all ranges."""
    est = mech.simulate(counts, rng=0)
    return math.sqrt(float(np.mean(est.range_variances(*all_ranges())))) / N


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--reps", type=int, default=20)
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--scale", type=float, default=16.0)
    args = parser.parse_args()
    rng = np.random.default_rng(args.seed)
    counts = cauchy_counts(rng, args.scale)
    print(f"D = {D}, N = 2^26, e^eps = 3, Cauchy(D/2, D/{args.scale:g}), "
          f"{len(all_ranges()[0])} ranges pooled, {args.reps} repetitions (exact aggregate "
          f"simulation)")
    print(f"{'method':<22} {'fastldp RMSE':>13} {'1-run sd':>9} {'theory':>10} {'published':>10} "
          f"{'ours / theirs':>14} {'seconds':>8}")
    rows = [("HH B=2", HierarchicalHistogram(epsilon=EPSILON, domain_size=D, branching=2,
                                             oracle="oue", codebook_seed=1)),
            ("HH B=4", HierarchicalHistogram(epsilon=EPSILON, domain_size=D, branching=4,
                                             oracle="oue", codebook_seed=1)),
            ("HH B=16", HierarchicalHistogram(epsilon=EPSILON, domain_size=D, branching=16,
                                              oracle="oue", codebook_seed=1)),
            ("HH B=4 optimal weights", HierarchicalHistogram(
                epsilon=EPSILON, domain_size=D, branching=4, oracle="oue", codebook_seed=1,
                level_weights=optimal_level_weights(epsilon=EPSILON, domain_size=D,
                                                    branching=4, oracle="oue"))),
            ("HH B=4 auto oracle", HierarchicalHistogram(epsilon=EPSILON, domain_size=D,
                                                         branching=4, codebook_seed=1)),
            ("HH B=4 no consistency", HierarchicalHistogram(
                epsilon=EPSILON, domain_size=D, branching=4, oracle="oue", consistency=False,
                codebook_seed=1)),
            ("HaarHRR", HaarHRR(epsilon=EPSILON, domain_size=D, codebook_seed=1)),
            ("flat OUE", FlatRange(epsilon=EPSILON, domain_size=D, oracle="oue",
                                   codebook_seed=1))]
    for name, mech in rows:
        t = time.perf_counter()
        got, one_run_sd = rmse(mech, counts, args.reps, rng)
        seconds = time.perf_counter() - t
        if isinstance(mech, FlatRange):
            theory = f"{theory_flat():.3e}"
        elif isinstance(mech, HaarHRR):
            theory = f"{theory_haar(mech, counts):.3e}"
        elif mech.consistency:
            theory = f"{theory_hierarchy(mech):.3e}"
        else:
            theory = "-"
        pub = PUBLISHED.get(name)
        ratio = f"{got / pub:.3f}" if pub else "-"
        pub_text = f"{pub:.3e}" if pub else "-"
        print(f"{name:<22} {got:>13.3e} {one_run_sd:>9.1e} {theory:>10} {pub_text:>10} "
              f"{ratio:>14} {seconds:>8.2f}")


if __name__ == "__main__":
    main()
