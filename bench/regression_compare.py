"""Paper 002 at its default size: one U2R fit, one Sample-SDP fit, and the shuffled summation.

It times the installed fastldp (see bench/README.md for timing a working
tree)::

    python bench/regression_compare.py            # n = 15,000, m = 50, d = 256, k = 8
    python bench/regression_compare.py --repeats 3

Sections:

(a) One ``U2R.fit`` and one ``SampleSDP.fit`` at section C.1's defaults
    (``n = 15,000`` users, ``m = 50``, ``d = 256``, ``k = 8``,
    ``sigma = 0.25``, ``eps = 4``, ``delta = 1e-5``), with their relative
    coefficient errors.
(b) The ratio line: ``ShuffledVectorSum.sum`` (every party's Skellam noise
    share and its additive shares modulo ``q`` drawn, one shuffler per
    coordinate, the analyzer's modular sum) against a plain NumPy
    implementation of the same release (``v.sum(axis=0)`` plus one Gaussian
    draw of the same variance), at stage 2b's size of U2R (7,500 users,
    ``s = 8`` coordinates). The two are checked to agree within the noise first.
(c) ``fit_precomputed`` (what the eps sweeps run): the first fit on a
    ``Precomputed`` fills it with the eps-independent work, a fit at another
    eps reuses it (U2R: the local Lassos of users solved before; Sample-SDP:
    the clipped totals).
(d) Where a repetition's fixed cost goes (one BLAS thread, as in the sweeps'
    workers): the ``N d`` normals drawn into an existing array, ``X @ theta``,
    and the two Gram matrices (the Lasso's ``X.T @ X`` and Sample-SDP's
    clipped sums) computed apart against together
    (:func:`fastldp.regression._gram.gram_and_l2_sums`, the same bits),
    interleaved, best of ``max(3, repeats)``.

No thread count is forced: NumPy's BLAS and the local-Lasso thread pool use
the cores (set ``OPENBLAS_NUM_THREADS=1`` in the environment for a
one-BLAS-thread figure).

Times are ``time.perf_counter`` wall-clock seconds, best of N repeats, with
the CPU time (``time.process_time``, all threads) of the fits beside them.
The machine load is printed in the header: on a shared machine the wall
times depend on it; the CPU time much less (run with
``OPENBLAS_NUM_THREADS=1`` for a one-thread figure).

It ends with README's sentences (Performance, and the memory note of the
regression section), in the README's words, with this run's figures; the
memory is the peak resident set of the script through section (c) (the data
and every fit; section (d) draws a second array of the data's size).
"""

from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

from fastldp.regression import SampleSDP, ShuffledVectorSum, U2R, make_sparse_regression


def peak_memory() -> str:
    """The peak resident set of this process so far, as README writes it (``1.8 GB``)."""
    try:
        with open("/proc/self/status") as fh:
            kib = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))
    except (OSError, StopIteration):
        import resource

        kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        kib //= 1024 if sys.platform == "darwin" else 1  # bytes on macOS
    return f"{kib * 1024 / 1e9:.1f} GB" if kib >= 2**20 else f"{kib / 1024:.0f} MiB"


def best(fn, repeats, cpu=None):
    """Best wall time of ``repeats`` calls (and, in ``cpu``, the CPU time of that call)."""
    times = []
    out = None
    for _ in range(repeats):
        t0, c0 = time.perf_counter(), time.process_time()
        out = fn()
        times.append((time.perf_counter() - t0, time.process_time() - c0))
    wall, used = min(times)
    if cpu is not None:
        cpu.append(used)
    return wall, out


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--n", type=int, default=15_000)
    p.add_argument("--m", type=int, default=50)
    p.add_argument("--d", type=int, default=256)
    p.add_argument("--k", type=int, default=8)
    p.add_argument("--eps", type=float, default=4.0)
    p.add_argument("--repeats", type=int, default=1)
    args = p.parse_args(argv)
    print(f"# paper 002 defaults: n={args.n} m={args.m} d={args.d} k={args.k} eps={args.eps}; "
          f"cores={os.cpu_count()} load={os.getloadavg()[0]:.1f}")
    t0 = time.perf_counter()
    D = make_sparse_regression(n=args.n, m=args.m, d=args.d, k=args.k, sigma=0.25, rng=0)
    print(f"data: {time.perf_counter() - t0:.2f} s ({D.X.shape[0]} rows)")

    def rel(coef):
        return np.linalg.norm(coef - D.theta) / np.linalg.norm(D.theta)

    fits, refits = {}, {}
    # warm-up: imports, the flip-probability cache is cleared by a new eps anyway
    U2R(epsilon=args.eps, k=args.k, rows_per_user=args.m, sigma=0.25).fit(
        D.X[:3000 * args.m], D.y[:3000 * args.m], users=D.users[:3000 * args.m], rng=0)
    for name, make in (("U2R", lambda: U2R(epsilon=args.eps, k=args.k, rows_per_user=args.m, sigma=0.25,
                                            rho=D.beta_min)),
                       ("Sample-SDP", lambda: SampleSDP(epsilon=args.eps, sigma=0.25))):
        cpu = []
        seconds, est = best(lambda: make().fit(D.X, D.y, users=D.users, rng=1), args.repeats,
                            cpu)
        fits[name] = seconds
        print(f"{name:<11} fit {seconds:7.3f} s wall, {cpu[0]:7.3f} s CPU (all threads)   "
              f"relative error {rel(est.coef_):.5f}   support {len(est.support_)}")

    # (c) an eps sweep's later cells: the eps-independent work (local Lassos and least
    # squares, clipped totals) is reused from a Precomputed filled by the first fit
    pre = U2R(epsilon=args.eps, k=args.k, rows_per_user=args.m).precompute(D.X, D.y, users=D.users)
    for name, make in (("U2R", lambda e: U2R(epsilon=e, k=args.k, rows_per_user=args.m,
                                             sigma=0.25, rho=D.beta_min)),
                       ("Sample-SDP", lambda e: SampleSDP(epsilon=e, sigma=0.25))):
        t0 = time.perf_counter()
        make(args.eps).fit_precomputed(pre, rng=1)
        first = time.perf_counter() - t0
        # the same rng as the first fit, as in a sweep (paired seeds: one group split per
        # repetition at every eps); another rng splits the users into other groups, whose
        # local Lassos are not computed yet
        seconds, est = best(lambda: make(2 * args.eps).fit_precomputed(pre, rng=1),
                            args.repeats)
        refits[name] = seconds
        print(f"{name:<11} fit_precomputed: first {first:7.3f} s, then at eps = "
              f"{2 * args.eps:g} {seconds:7.3f} s (relative error {rel(est.coef_):.5f})")

    memory = peak_memory()  # the data and the fits, before section (d)'s second array
    grams = gram_split(D, args.repeats)

    rng = np.random.default_rng(2)
    v = rng.normal(size=(7500, 8)) * 0.05
    summer = ShuffledVectorSum(epsilon=args.eps, delta=1e-5, norm_bound=0.5)
    res = summer.sum(v, rng=3)
    sd = res.noise_sd
    err = np.abs(res.total - v.sum(axis=0)).max()
    assert err < 8 * max(sd, 1e-9), (err, sd)

    def plain():
        return v.sum(axis=0) + rng.normal(scale=sd, size=v.shape[1])

    t_sh, _ = best(lambda: summer.sum(v, rng=4), max(3, args.repeats))
    t_np, _ = best(plain, max(3, args.repeats))
    print(f"summation (7500 x 8): shuffled {t_sh * 1e3:.2f} ms ({res.messages} messages, "
          f"{res.shares} shares, q = 2^{res.modulus.bit_length() - 1}), plain NumPy "
          f"{t_np * 1e3:.3f} ms; ratio shuffled / plain = {t_sh / t_np:.0f}x")

    print()
    print("README lines (Performance; the memory note of the regression section), from this run:")
    print(f"a U2R fit takes {fits['U2R']:.2f} s and a Sample-SDP fit "
          f"{fits['Sample-SDP']:.2f} s; refitting at another eps, with the eps-independent "
          f"work reused, {refits['U2R']:.3f} s and {refits['Sample-SDP']:.3f} s")
    print(f"Simulating U2R's second-stage summation for real ({v.shape[0]:,} users x "
          f"{v.shape[1]} coordinates, {res.messages:,} messages split, noised and shuffled) "
          f"takes {t_sh * 1e3:.1f} ms, {t_sh / t_np:.0f}x a plain NumPy sum of the same vectors")
    print(f"at n = {args.n:,} users and d = {args.d}, the data and a fit need about "
          f"{memory} of memory")
    print(f"a repetition's data draw takes {grams['normals']:.2f} s of normals and "
          f"{grams['theta']:.2f} s for X theta; the Lasso's and Sample-SDP's Gram matrices "
          f"take {grams['apart']:.2f} s apart and {grams['together']:.2f} s from shared BLAS "
          f"products ({grams['apart'] / grams['together']:.1f}x, the same bits), one thread")


def gram_split(D, repeats):
    """Section (d): CPU seconds of the draw's parts and of the Gram matrices apart / together."""
    from fastldp.regression._gram import blas_chunk_rows, gram_and_l2_sums
    from fastldp.regression.sample_sdp import default_radii, l2_clipped_sums

    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        print("(d) needs threadpoolctl (one BLAS thread); skipped")
        return {"normals": np.nan, "theta": np.nan, "apart": np.nan, "together": np.nan}
    N, d = D.X.shape
    r_x, r_y = default_radii(d, N, 0.25, 1.0)
    gen = np.random.default_rng(5)
    out = np.empty_like(D.X)
    times = {"normals": [], "theta": [], "apart": [], "together": []}

    def cpu(fn):
        c0 = time.process_time()
        fn()
        return time.process_time() - c0

    with threadpool_limits(limits=1, user_api="blas"):
        blas_chunk_rows()  # the probe, once, outside the timings
        for _ in range(max(3, repeats)):
            times["normals"].append(cpu(lambda: gen.standard_normal(out=out)))
            times["theta"].append(cpu(lambda: D.X @ D.theta))
            times["apart"].append(cpu(lambda: (D.X.T @ D.X,
                                               l2_clipped_sums(D.X, D.y, r_x, r_y))))
            times["together"].append(cpu(lambda: gram_and_l2_sums(D.X, D.y, r_x, r_y, 8192)))
    del out
    best = {k: min(v) for k, v in times.items()}
    print(f"(d) CPU s, one BLAS thread, best of {max(3, repeats)}: normals {best['normals']:.2f}, "
          f"X @ theta {best['theta']:.2f}; Gram matrices apart {best['apart']:.2f}, together "
          f"{best['together']:.2f} (chunk Q = {blas_chunk_rows()})")
    return best


if __name__ == "__main__":
    main()
