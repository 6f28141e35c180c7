"""The regression solvers' gathers (``fastldp._kernels._gather``) beside the NumPy expressions they replace.

::

    python bench/regression_gathers.py            # the eps sweep's sizes (about 20 s)
    python bench/regression_gathers.py --quick    # a tenth of the users

On one repetition of ``fastldp reproduce regression-eps`` (15,000 users,
50 rows each, d = 256, one thread) it times, rows interleaved and best of
``--repeats``:

- a chunk of 128 users' rows (the local Lasso's unit of work): the float32
  copy and each user's largest magnitude, against ``X[who]``,
  ``.astype(float32)`` and the max/min scan NumPy needed;
- the chunk's 100 screened columns, against ``np.take_along_axis``;
- one active-set block (32 columns, float64, zero padding), against
  ``take_along_axis`` + ``astype`` + the masked zeroing;
- the local least squares' block of 5,000 users on 8 columns, against
  ``X[np.ix_(users, rows, S)]``;
- LDP-IHT's gathers of a batch of 375,000 records (8 columns, then one
  coordinate each), against ``X[batch[:, None], S]`` and ``X[batch, j]``;
- the whole local Lasso of every user (``screened_local_lasso``), for scale.

Every kernel's result is compared with its NumPy expression bit for bit
before it is timed (the script stops on a difference). The ratio column is
NumPy's time over the kernel's. The load average is printed before and
after: figures from a loaded machine are not comparable with a quiet one.
"""

from __future__ import annotations

import argparse
import math
import os
import timeit

import numpy as np

import fastldp
from fastldp._kernels._gather import (gather_active, gather_users_float32, take_block,
                                      take_columns, take_entries)
from fastldp.regression import make_sparse_regression
from fastldp.regression.local import screened_local_lasso


def _best(fn, repeats: int) -> float:
    """The shortest of ``repeats`` single calls, in seconds."""
    return min(timeit.repeat(fn, number=1, repeat=repeats))


def _same(a, b) -> None:
    if not (a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)):
        raise SystemExit("a kernel differs from its NumPy expression")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--quick", action="store_true", help="1,500 users instead of 15,000")
    ap.add_argument("--repeats", type=int, default=5)
    args = ap.parse_args(argv)
    n = 1500 if args.quick else 15000
    m, d, p, K = 50, 256, 100, 32
    print(f"fastldp {fastldp.__version__}, {os.cpu_count()} cores, load average "
          f"{os.getloadavg()[0]:.1f}; {n} users x {m} rows x {d} columns")
    data = make_sparse_regression(n=n, m=m, d=d, k=8, sigma=0.25, rng=0)
    X3, y2 = data.X.reshape(n, m, d), data.y.reshape(n, m)
    rng = np.random.default_rng(1)
    who = np.sort(rng.permutation(n)[:128]).astype(np.intp)
    Xc, yc, big = gather_users_float32(X3, y2, who)
    keep = np.sort(np.argsort(rng.random((128, d)), axis=1)[:, :p], axis=1).astype(np.intp)
    Xs = take_columns(Xc, keep)
    order = np.argsort(rng.random((128, p)), axis=1)[:, :K].astype(np.intp)
    width = rng.integers(0, K + 1, 128).astype(np.intp)
    rows = np.arange(128, dtype=np.intp)
    users = np.sort(rng.permutation(n)[:n // 3]).astype(np.intp)
    S = np.sort(rng.choice(d, 8, replace=False)).astype(np.intp)
    batch = np.sort(rng.permutation(n * m)[:n * m // 2]).astype(np.intp)
    j = rng.integers(0, d, batch.shape[0]).astype(np.intp)

    def numpy_chunk():
        Xw, yw = X3[who], y2[who]
        Xr, yr = Xw.reshape(128, -1), yw.reshape(128, -1)
        top = np.maximum(np.maximum(Xr.max(axis=1, initial=0.0), -Xr.min(axis=1, initial=0.0)),
                         np.maximum(yr.max(axis=1, initial=0.0), -yr.min(axis=1, initial=0.0)))
        return Xw.astype(np.float32), yw.astype(np.float32), top

    def numpy_active():
        XA = np.take_along_axis(Xs, order[:, None, :], axis=2).astype(np.float64)
        XA[np.broadcast_to((np.arange(K)[None, :] >= width[:, None])[:, None, :], XA.shape)] = 0.0
        return XA

    tiled = np.tile(S, (users.shape[0], 1))
    full = np.full(users.shape[0], S.shape[0], dtype=np.intp)
    cases = [
        ("128 users' rows: float32 copy + largest entry",
         lambda: gather_users_float32(X3, y2, who), numpy_chunk),
        ("their 100 screened columns", lambda: take_columns(Xc, keep),
         lambda: np.take_along_axis(Xc, keep[:, None, :], axis=2)),
        ("active-set block, 32 columns, float64", lambda: gather_active(Xs, rows, order, width),
         numpy_active),
        (f"local least squares: {users.shape[0]:,} users x 8 columns",
         lambda: gather_active(X3, users, tiled, full),
         lambda: X3[np.ix_(users, np.arange(m), S)]),
        (f"LDP-IHT: {batch.shape[0]:,} records x 8 columns",
         lambda: take_block(data.X, batch, S), lambda: data.X[batch[:, None], S]),
        (f"LDP-IHT: {batch.shape[0]:,} records, one entry each",
         lambda: take_entries(data.X, batch, j), lambda: data.X[batch, j]),
    ]
    for _, kernel, plain in cases:  # bit for bit before any timing
        got, want = kernel(), plain()
        for a, b in zip(got if isinstance(got, tuple) else (got,),
                        want if isinstance(want, tuple) else (want,)):
            _same(a, b)
    times = {name: [math.inf, math.inf] for name, _, _ in cases}
    for _ in range(args.repeats):  # interleaved: a change of load hits every row
        for name, kernel, plain in cases:
            times[name][0] = min(times[name][0], _best(kernel, 1))
            times[name][1] = min(times[name][1], _best(plain, 1))
    print(f"\n| gather | kernel | NumPy | NumPy / kernel |\n|---|---|---|---|")
    for name, (k, p_) in times.items():
        print(f"| {name} | {k * 1e3:.2f} ms | {p_ * 1e3:.2f} ms | {p_ / k:.1f}x |")
    alpha = 0.25 * math.sqrt(2 * math.log(d) / m)
    seconds = _best(lambda: screened_local_lasso(X3, y2, np.full(n, m), alpha, screen=2 * m,
                                                 n_threads=1), 2)
    print(f"\nthe local Lasso of all {n:,} users (screen 100, one thread): {seconds:.2f} s")
    print(f"load average after: {os.getloadavg()[0]:.1f}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
