"""The local Lassos with the compiled FISTA (``fastldp._kernels._lasso``) and with NumPy's.

::

    python bench/local_lasso.py            # the eps sweep's 15,000 users (about 30 s)
    python bench/local_lasso.py --quick    # 1,500 users

On one repetition's data of ``fastldp reproduce regression-eps`` (15,000
users, 50 rows each, d = 256, screened to 100 columns, one thread),
``screened_local_lasso`` runs with the kernel (the default) and with its
NumPy twin (``local_lasso(compiled=False)``: stacked products, one BLAS
call per user and product). The two results are compared first: the same
solutions bit for bit (the active set certifies every user here), else the
script stops. Best of ``--repeats``, interleaved; the load average is
printed before and after.
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import timeit

import numpy as np

import fastldp
from fastldp.regression import local as L
from fastldp.regression import make_sparse_regression


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1,500 users instead of 15,000")
    ap.add_argument("--repeats", type=int, default=3)
    args = ap.parse_args(argv)
    n, m, d = (1500 if args.quick else 15000), 50, 256
    print(f"fastldp {fastldp.__version__}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}; {n:,} users x {m} rows x {d} columns, screen 100")
    data = make_sparse_regression(n=n, m=m, d=d, k=8, sigma=0.25, rng=0, sampler="fastldp")
    X3, y2 = data.X.reshape(n, m, d), data.y.reshape(n, m)
    alpha = 0.25 * math.sqrt(2 * math.log(d) / m)
    plain = L.local_lasso

    def run(compiled):
        L.local_lasso = functools.partial(plain, compiled=compiled)
        try:
            return L.screened_local_lasso(X3, y2, np.full(n, m), alpha, screen=2 * m,
                                          n_threads=1)
        finally:
            L.local_lasso = plain

    if not np.array_equal(run(True), run(False)):
        raise SystemExit("the compiled and the NumPy local Lassos differ")
    best = {True: math.inf, False: math.inf}
    for _ in range(args.repeats):
        for compiled in best:
            best[compiled] = min(best[compiled],
                                 min(timeit.repeat(lambda: run(compiled), number=1, repeat=1)))
    print(f"the local Lassos of {n:,} users: {best[True]:.2f} s with the compiled FISTA, "
          f"{best[False]:.2f} s with NumPy's ({best[False] / best[True]:.2f}x), "
          f"the same solutions bit for bit")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
