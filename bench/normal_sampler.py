"""fastldp's standard-normal sampler beside NumPy's, at the regression eps sweep's size.

::

    python bench/normal_sampler.py            # 192 million normals (about 30 s)
    python bench/normal_sampler.py --quick    # a tenth

One repetition of ``fastldp reproduce regression-eps`` draws 15,000 users x
50 rows x 256 features = 192 million standard normals into one float64
array. This script fills such an array (allocated and touched once before
timing) with

- NumPy's ``Generator.standard_normal(out=...)`` (PCG64);
- :func:`fastldp._random.standard_normal` (a ziggurat on the same PCG64's
  64-bit words; ``make_sparse_regression(sampler="fastldp")``);
- the floor: the PCG64 words alone (``BitGenerator.random_raw`` in chunks
  of a million, then discarded), the work no sampler on that generator can
  skip; the array's writing is a further cost both samplers pay.

Best of ``--repeats`` runs each, interleaved. The two samplers' values
differ (the same law; tests/test_normal_kernel.py checks it). The load
average is printed before and after.
"""

from __future__ import annotations

import argparse
import os
import timeit

import numpy as np

import fastldp
from fastldp._random import standard_normal


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="19.2 million normals")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    n = 19_200_000 if args.quick else 192_000_000
    print(f"fastldp {fastldp.__version__}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}; {n:,} standard normals into one float64 array")
    out = np.zeros(n)

    def numpy_fill():
        np.random.default_rng(1).standard_normal(out=out)

    def fastldp_fill():
        standard_normal(np.random.default_rng(1), out=out)

    def words():
        bg = np.random.PCG64(1)
        for start in range(0, n, 1_000_000):
            bg.random_raw(min(1_000_000, n - start))

    cases = {"NumPy Generator.standard_normal": numpy_fill,
             "fastldp standard_normal": fastldp_fill,
             "floor: the PCG64 words alone": words}
    best = {name: float("inf") for name in cases}
    for _ in range(args.repeats):
        for name, fn in cases.items():
            best[name] = min(best[name], min(timeit.repeat(fn, number=1, repeat=1)))
    for name, seconds in best.items():
        print(f"{name}: {seconds:.2f} s ({seconds / n * 1e9:.1f} ns a value)")
    ratio = best["NumPy Generator.standard_normal"] / best["fastldp standard_normal"]
    print(f"fastldp draws the {n:,} normals {ratio:.1f}x as fast as NumPy "
          f"({best['fastldp standard_normal']:.1f} s against "
          f"{best['NumPy Generator.standard_normal']:.1f} s)")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
