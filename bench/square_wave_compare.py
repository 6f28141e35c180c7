"""Square Wave (EMS and EM) beside the authors' published anchors, binning + OUE, and Piecewise.

The setting of the anchors (issue 35): the authors' reference code of Li et
al. (SIGMOD 2020) on Beta(5, 2) values, n = 10^5 users, d = d' = 1024
bins, reports EMS Wasserstein-1 distances 0.0107, 0.0064, 0.0036 and
0.0015 at eps = 0.5, 1, 2 and 4 (EM at eps = 0.5: 0.0135), in 30 to 130 s
per run. For each budget the script runs, ``--reps`` times on fresh data:

* ``SW-EMS`` / ``SW-EM``: :class:`fastldp.ranges.SquareWave` at its
  defaults (d = d' = 1024, the reference code's stopping rule); the time is
  the server's (counting the reports' bins, then the EM), the client apart;
* ``bin+OUE``: the values binned into ``--oue-bins`` equal bins, OUE over
  them, counts made a distribution by Norm-Sub
  (:func:`fastldp.oracles.postprocess.norm_sub`), each bin's mass spread
  evenly over the 1024 fine bins it covers;
* ``Piecewise``: the mean only (each value mapped to ``[-1, 1]``), for the
  mean-error column: a mean randomizer has no distribution, so no W1.

W1 is measured as the reference code measures it: between the estimate and
the sample's own histogram on the 1024 bins, ``sum |F_est - F_sample| / 1024``.
The mean error is ``|estimated mean - sample mean|``. Cells are the mean over
the repetitions (with the standard deviation for W1).

Usage: ``python bench/square_wave_compare.py [--n 100000] [--reps 5] [--seed 1]``.
``--n 1000000 --reps 1`` prints the reconstruction time the issue asks
about (under 2 s at 1024 bins).

Beside the authors' reference code (``--reference PATH``)
----------------------------------------------------------
``--reference`` names a local copy of ``sw.py`` from the authors' repository
https://github.com/vvv214/LDP_Protocols (Tianhao Wang's, the README's
"Square Wave" entry; the run in bench/logs/square_wave_reference-2026-12-05.txt
used commit f7252b07733dc0e100e2f077218ab2d35d3519d5 of 2023-07-26, the file
last changed in 59f7cf4, sha256 56728fd6...7aa90f), or a folder holding it.
Nothing is downloaded and their file is not edited: it is imported as it is
and driven by this adapter. Their ``sw(ori_samples, l, h, eps,
randomized_bins, domain_bins)`` is client and server in one call (the
reports, the 1024 x 1024 transform built in a Python loop, the EM) and
returns the counts over the domain bins; it calls the module's ``EM`` (their
``EMS`` is commented out), so the EMS rows rebind the module's ``EM`` to its
``EMS`` for the call (same signature). Their randomness is NumPy's global
stream, seeded with ``np.random.seed`` before each call. Their E-steps are
counted by wrapping the module's ``np`` so that its ``np.inner`` (called once
per iteration, in EM and EMS alike) is counted.

In that mode the script prints only the side-by-side table: for each budget
(EMS, and EM at ``eps = 0.5``, the anchors' rows) and each of ``--reps``
repetitions, one Beta(5, 2) sample of ``--n`` values goes to both, theirs
and ours (:class:`fastldp.ranges.SquareWave` at d = d' = 1024); the seconds
are end to end for both, values in and distribution out (ours: the
mechanism and its channel built, the reports drawn, the EM; theirs: the
whole ``sw`` call), timed in the same run. W1 is :func:`w1` on both
distributions. ``ours - ref`` is the mean paired difference of W1 with two
standard errors; ``speedup`` is their mean time over ours.
``python bench/square_wave_compare.py --reference /path/to/sw.py --reps 5``.
"""

from __future__ import annotations

import argparse
import importlib.util
import time
from pathlib import Path

import numpy as np

from fastldp.oracles import OUE, Piecewise
from fastldp.oracles.postprocess import norm_sub
from fastldp.ranges import SquareWave

BINS = 1024
ANCHORS = {("SW-EMS", 0.5): 0.0107, ("SW-EMS", 1.0): 0.0064, ("SW-EMS", 2.0): 0.0036,
           ("SW-EMS", 4.0): 0.0015, ("SW-EM", 0.5): 0.0135}


def sample_histogram(x: np.ndarray) -> np.ndarray:
    return np.bincount(np.minimum((x * BINS).astype(np.int64), BINS - 1), minlength=BINS) / x.size


def w1(distribution: np.ndarray, x: np.ndarray) -> float:
    return float(np.abs(np.cumsum(distribution) - np.cumsum(sample_histogram(x))).sum() / BINS)


def run_sw(eps, x, rng, smoothing):
    sw = SquareWave(epsilon=eps, bins=BINS, smoothing=smoothing)
    sw.channel()  # built once per mechanism, as a collector would
    y = sw.privatize(x, rng=rng)
    t = time.perf_counter()
    est = sw.estimate(y)
    elapsed = time.perf_counter() - t
    return w1(est.distribution, x), abs(est.mean() - x.mean()), elapsed, est.iterations


def run_oue(eps, x, rng, bins):
    oue = OUE(domain_size=bins, epsilon=eps, codebook_seed=0)
    cells = np.minimum((x * bins).astype(np.int64), bins - 1)
    reports = oue.privatize(cells, rng=rng)
    t = time.perf_counter()
    counts = norm_sub(oue.estimate(reports), n=x.size).counts
    elapsed = time.perf_counter() - t
    coarse = counts / counts.sum()
    fine = np.repeat(coarse / (BINS // bins), BINS // bins)
    centres = (np.arange(bins) + 0.5) / bins
    return w1(fine, x), abs(float(coarse @ centres) - x.mean()), elapsed, 0


def run_piecewise(eps, x, rng):
    pm = Piecewise(epsilon=eps)
    y = pm.privatize(2.0 * x - 1.0, rng=rng)
    t = time.perf_counter()
    mean = (float(y.mean()) + 1.0) / 2.0
    elapsed = time.perf_counter() - t
    return float("nan"), abs(mean - x.mean()), elapsed, 0


class _CountingNumPy:
    """NumPy as the reference module sees it, counting its ``np.inner`` calls (one per E-step)."""

    def __init__(self) -> None:
        self.inner_calls = 0

    def inner(self, a, b):
        self.inner_calls += 1
        return np.inner(a, b)

    def __getattr__(self, name):
        return getattr(np, name)


def load_reference(path: str):
    """Import the authors' ``sw.py`` (a file, or a folder holding it) as it is.

    Raises
    ------
    ValueError
        When the path holds no such file, or the module lacks ``sw``, ``EM``
        or ``EMS``.
    """
    where = Path(path)
    file = where / "sw.py" if where.is_dir() else where
    if not file.is_file():
        raise ValueError(f"--reference must name the reference sw.py or a folder holding it; "
                         f"got {path!r}, where there is no such file")
    spec = importlib.util.spec_from_file_location("square_wave_reference", file)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    missing = [name for name in ("sw", "EM", "EMS") if not callable(getattr(module, name, None))]
    if missing:
        raise ValueError(f"--reference {str(file)!r} lacks {', '.join(missing)}: not the reference "
                         f"sw.py (it defines sw, EM and EMS)")
    return module


def run_reference(module, eps, x, seed, smoothing):
    """Their ``sw`` on ``x`` (EMS or EM): W1, seconds end to end, E-steps."""
    counting = _CountingNumPy()
    saved_em, saved_np = module.EM, module.np
    module.np = counting
    if smoothing:
        module.EM = module.EMS  # ``sw`` calls the module's EM; EMS takes the same arguments
    try:
        np.random.seed(seed)
        t = time.perf_counter()
        counts = module.sw(x, 0.0, 1.0, eps, BINS, BINS)
        elapsed = time.perf_counter() - t
    finally:
        module.EM, module.np = saved_em, saved_np
    return w1(counts / counts.sum(), x), elapsed, counting.inner_calls


def run_ours_end_to_end(eps, x, seed, smoothing):
    """Ours from values to distribution (mechanism, channel, reports, EM): W1, seconds, E-steps."""
    t = time.perf_counter()
    sw = SquareWave(epsilon=eps, bins=BINS, smoothing=smoothing)
    est = sw.estimate(sw.privatize(x, rng=np.random.default_rng(seed)))
    elapsed = time.perf_counter() - t
    return w1(est.distribution, x), elapsed, est.iterations


def compare_with_reference(module, args) -> None:
    """The side-by-side table (module docstring): same samples, same seeds, one run."""
    rng = np.random.default_rng(args.seed)
    print(f"Beta(5, 2), n = {args.n}, {args.reps} runs each, d = d' = {BINS}; "
          f"ours (fastldp) beside the reference sw.py, seconds end to end")
    header = (f"{'eps':>4}  {'method':<7} {'ours W1':>8} {'ref W1':>8} {'anchor':>7} "
              f"{'ours - ref (2 se)':>18} {'ours s':>7} {'ref s':>7} {'speedup':>8} "
              f"{'iters':>6} {'ref it':>6}")
    print(header)
    print("-" * len(header))
    for eps in args.eps:
        methods = [("SW-EMS", True)] + ([("SW-EM", False)] if eps == 0.5 else [])
        rows = {name: [] for name, _ in methods}
        for _ in range(args.reps):
            x = rng.beta(5.0, 2.0, args.n)
            for name, smoothing in methods:
                seed = int(rng.integers(2**32))
                rows[name].append(run_ours_end_to_end(eps, x, seed, smoothing)
                                  + run_reference(module, eps, x, seed, smoothing))
        for name, _ in methods:
            r = np.array(rows[name])  # ours W1, s, iters, ref W1, s, iters
            diff = r[:, 0] - r[:, 3]
            se2 = 2 * diff.std(ddof=1) / np.sqrt(len(diff)) if len(diff) > 1 else float("nan")
            anchor = ANCHORS.get((name, eps))
            anchor_cell = f"{anchor:7.4f}" if anchor else f"{'-':>7}"
            print(f"{eps:4g}  {name:<7} {r[:, 0].mean():8.4f} {r[:, 3].mean():8.4f} {anchor_cell} "
                  f"{diff.mean():+9.4f} ({se2:6.4f}) {r[:, 1].mean():7.3f} {r[:, 4].mean():7.2f} "
                  f"{r[:, 4].mean() / r[:, 1].mean():7.0f}x {r[:, 2].mean():6.0f} "
                  f"{r[:, 5].mean():6.0f}", flush=True)


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--n", type=int, default=100_000)
    parser.add_argument("--reps", type=int, default=5)
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--oue-bins", type=int, default=32)
    parser.add_argument("--eps", type=float, nargs="+", default=[0.5, 1.0, 2.0, 4.0])
    parser.add_argument("--reference", metavar="PATH",
                        help="the authors' sw.py (or its folder): print the side-by-side table "
                             "against it instead (module docstring)")
    args = parser.parse_args(argv)
    if BINS % args.oue_bins:
        parser.error(f"--oue-bins must divide {BINS}")
    if args.reference is not None:
        try:
            module = load_reference(args.reference)
        except ValueError as exc:
            parser.error(str(exc))
        compare_with_reference(module, args)
        return 0
    rng = np.random.default_rng(args.seed)
    print(f"Beta(5, 2), n = {args.n}, {args.reps} runs each, d = d' = {BINS}; "
          f"bin+OUE over {args.oue_bins} bins")
    header = (f"{'eps':>4}  {'method':<9} {'W1 mean':>9} {'W1 sd':>8} {'anchor':>7} "
              f"{'mean err':>9} {'server s':>9} {'iters':>6}")
    print(header)
    print("-" * len(header))
    for eps in args.eps:
        methods = [("SW-EMS", lambda x: run_sw(eps, x, rng, True))]
        if eps == 0.5:
            methods.append(("SW-EM", lambda x: run_sw(eps, x, rng, False)))
        methods += [("bin+OUE", lambda x: run_oue(eps, x, rng, args.oue_bins)),
                    ("Piecewise", lambda x: run_piecewise(eps, x, rng))]
        for name, run in methods:
            rows = np.array([run(rng.beta(5.0, 2.0, args.n)) for _ in range(args.reps)])
            anchor = ANCHORS.get((name, eps))
            w_mean, w_sd = rows[:, 0].mean(), rows[:, 0].std(ddof=1) if args.reps > 1 else 0.0
            w_cell = f"{w_mean:9.4f}" if np.isfinite(w_mean) else f"{'-':>9}"
            sd_cell = f"{w_sd:8.4f}" if np.isfinite(w_mean) else f"{'-':>8}"
            anchor_cell = f"{anchor:7.4f}" if anchor else f"{'-':>7}"
            print(f"{eps:4g}  {name:<9} {w_cell} {sd_cell} {anchor_cell} "
                  f"{rows[:, 1].mean():9.5f} {rows[:, 2].mean():9.3f} {rows[:, 3].mean():6.0f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
