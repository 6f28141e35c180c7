"""Benchmark table for the JPRS decoder, client and memory footprint.

It times the installed fastldp (see bench/README.md for timing a working
tree)::

    python bench/compare.py            # full sizes (about a minute)
    python bench/compare.py --quick    # smoke run (a few seconds)

Sections (see bench/README.md for what each number means):

(a) ``JPRS.estimate`` against the NumPy reference decoder (bench/numpy_reference.py)
    on the same reports;
(b) the Philox floor (``philox_floor``: the ``n * ceil(p / 256)`` Philox4x64-10
    blocks every exact decoder must generate) and estimate / floor, with the
    default thread count and with one thread; then the sketch kernels alone
    on the personalized-budget weights: ``global_sketch`` (float table path)
    and ``fixed_sketch`` (exact int64 path, the weights as 32-bit fixed point);
(b2) the same for the opt-in codebook ``philox4x32-10`` (``JPRS(codebook=...)``):
    its floor (the same pairs' Philox4x32-10 blocks, SIMD where the CPU has
    it), how much lower it is than the default floor, and both estimates
    against it;
(c) ``JPRS.privatize`` (the client side) for many identities;
(d) peak memory of ``JPRS.estimate`` (tracemalloc and resident-set growth),
    measured in a fresh subprocess;

then the rows of README's performance table, in the README's words, with
this run's figures.

All times are ``time.perf_counter`` wall-clock seconds, best of N repeats.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

import numpy as np

# numpy_reference.py sits beside this script (python puts the script's folder on the
# path; the memory worker re-runs this file, so it gets it too)
HERE = os.path.dirname(os.path.abspath(__file__))
if HERE not in sys.path:
    sys.path.insert(0, HERE)

import fastldp  # noqa: E402
from fastldp._kernels._hash import philox_floor, simd_level  # noqa: E402
from fastldp._kernels._sketch import fixed_sketch, global_sketch  # noqa: E402

from numpy_reference import check_against_kernel, numpy_sketch, sketch_atol  # noqa: E402

CODEBOOK_SEED = 20240601
CB32 = "philox4x32-10"  # the opt-in codebook of section (b2)
EPS = 0.75
K = 8
S = 128
MiB = 2.0**20
BLAS_IDLE = 0.15  # seconds for OpenBLAS's spinning threads to go to sleep
PRIVATIZE_TARGET_S = 0.5  # the client's target for (c) at full size


# --------------------------------------------------------------------- helpers
def best_of(fn, repeats: int):
    """Return (best seconds, result of the last call)."""
    best = float("inf")
    out = None
    for _ in range(max(1, repeats)):
        t0 = time.perf_counter()
        out = fn()
        best = min(best, time.perf_counter() - t0)
    return best, out


def fmt_s(seconds: float) -> str:
    if seconds >= 1.0:
        return f"{seconds:9.3f} s "
    return f"{seconds * 1e3:9.2f} ms"


def short(seconds: float) -> str:
    """Three significant digits, as README writes times: ``17.3 ms``, ``2.69 s``."""
    value, unit = (seconds, "s") if seconds >= 1.0 else (seconds * 1e3, "ms")
    digits = max(0, 2 - int(np.floor(np.log10(value)))) if value > 0 else 0
    return f"{value:.{digits}f} {unit}"


def loadavg() -> str:
    try:
        with open("/proc/loadavg") as fh:
            return " ".join(fh.read().split()[:3])
    except OSError:
        return "n/a"


_BURN = "import time\nt=time.perf_counter()\nx=0\nfor i in range(6_000_000): x+=i\nprint(time.perf_counter()-t)"


def cpu_capacity() -> tuple:
    """Parallel capacity of the machine right now: run a pure-Python busy loop
    alone, then in two processes at once; returns (2 * t_alone / t_pair,
    t_alone). About 2.0 when two cores are really available, about 1.0 when
    the two (virtual) cores share one core's worth of time."""
    def run(k):
        procs = [subprocess.Popen([sys.executable, "-c", _BURN], stdout=subprocess.PIPE,
                                  text=True) for _ in range(k)]
        return max(float(pr.communicate()[0]) for pr in procs)

    alone = run(1)
    pair = run(2)
    return 2.0 * alone / pair, alone


#: issue 38's target for the estimates: within this factor of the floor
FLOOR_TARGET = 1.5


def over_target(first: str, second: str, ratios: dict) -> str:
    """The two ratios to the floor per thread count, unrounded, beside issue 38's target
    (one line per thread count)."""
    return "\n".join(f"  against the floor (target {FLOOR_TARGET}x), {t} {'threads' if t > 1 else 'thread'}: "
                     f"{first} {a:.2f}x the floor, {second} {b:.2f}x"
                     for t, (a, b) in ratios.items())


def rule(title: str) -> None:
    print()
    print(title)
    print("-" * 78)


def make_population(n: int, shape, seed: int = 0):
    return fastldp.relations.rate_diagnostic_population(shape=shape, s=S, k=K, n=n, rng=seed)


# ----------------------------------------------------------- (a) + (b) decode
def section_decode(n: int, shape, threads, repeats: int, numpy_n: int) -> dict:
    d1, d2 = shape
    p = d1 * d2
    mech = fastldp.JPRS(shape=shape, k=K, s=S, codebook_seed=CODEBOOK_SEED, n_threads=threads)
    mech1 = fastldp.JPRS(shape=shape, k=K, s=S, codebook_seed=CODEBOOK_SEED, n_threads=1)
    nt = mech.n_threads
    labels = (nt, 1) if nt != 1 else (1,)
    mechs = {nt: mech, 1: mech1}
    # the opt-in codebook: its own reports (the signs differ), same budgets
    mechs32 = {t: fastldp.JPRS(shape=shape, k=K, s=S, codebook_seed=CODEBOOK_SEED, n_threads=t,
                               codebook=CB32) for t in labels}
    pop = make_population(n, shape)
    ids = np.arange(n, dtype=np.uint64)
    nblocks = n * ((p + 255) // 256)
    # the benchmark case: one budget eps = 0.75 for everyone. Equal budgets
    # give equal |w_i|, which global_sketch decodes by exact integer sign
    # counting; personalized budgets take its general float-weight path, so
    # that path is timed too (secondary rows).
    eps_main = np.full(n, EPS)
    eps_pers = np.random.default_rng(3).uniform(0.5, 1.0, n)
    cases = {"main": eps_main, "pers": eps_pers}
    reports = {c: mech.privatize(pop.relations, epsilons=e, rng=0) for c, e in cases.items()}
    reports32 = {c: mechs32[nt].privatize(pop.relations, epsilons=e, rng=0)
                 for c, e in cases.items()}

    # floor, global_sketch alone and estimate (both cases), default threads
    # and one thread; all measurements interleaved round by round after one
    # untimed warm-up round, so they see the same machine load; best (and
    # median) of `repeats`. The floor and the lone sketch run after a pause
    # (BLAS_IDLE seconds): a multithreaded BLAS call - estimate makes one,
    # np.dot(gamma, gamma) - leaves OpenBLAS's threads spinning for a while,
    # and they would compete with the kernel's OpenMP threads. Untimed calls
    # after the pause bring idle (virtual) cores back to speed.
    w_main = mech.sketch_weights(reports["main"], eps_main)
    # personalized weights for the lone kernels, as floats and as signed
    # 32-bit fixed point (|w| <= 2**32, what fixed_sketch accepts)
    w_pers = mech.sketch_weights(reports["pers"], eps_pers)
    fix_scale = 2.0**32 / float(np.max(np.abs(w_pers)))
    w_fix = np.clip(np.rint(w_pers * fix_scale), -2**32, 2**32).astype(np.int64)
    times: dict = {}
    est = None
    for rnd in range(repeats + 1):
        for t in labels:
            time.sleep(BLAS_IDLE)
            # untimed: bring the (virtual) cores back to speed after the pause
            philox_floor(CODEBOOK_SEED, ids, p, t)
            global_sketch(CODEBOOK_SEED, ids, w_main, p, t)
            t0 = time.perf_counter()
            philox_floor(CODEBOOK_SEED, ids, p, t)
            t1 = time.perf_counter()
            global_sketch(CODEBOOK_SEED, ids, w_main, p, t)
            t2 = time.perf_counter()
            global_sketch(CODEBOOK_SEED, ids, w_pers, p, t)
            t3 = time.perf_counter()
            fixed_sketch(CODEBOOK_SEED, ids, w_fix, p, t)
            t4 = time.perf_counter()
            philox_floor(CODEBOOK_SEED, ids, p, t, CB32)
            t5 = time.perf_counter()
            if rnd:
                times.setdefault(("floor32", t), []).append(t5 - t4)
                times.setdefault(("floor", t), []).append(t1 - t0)
                times.setdefault(("alone", t), []).append(t2 - t1)
                times.setdefault(("pers-float", t), []).append(t3 - t2)
                times.setdefault(("pers-fixed", t), []).append(t4 - t3)
            for c, e in cases.items():
                t0 = time.perf_counter()
                r = mechs[t].estimate(reports[c], epsilons=e)
                dt = time.perf_counter() - t0
                if rnd == 0:
                    if c == "main" and t == nt:
                        est = r
                    continue
                times.setdefault(("est", c, t), []).append(dt)
                times.setdefault(("sketch", c, t), []).append(r.seconds["sketch"])
            for c, e in cases.items():
                t0 = time.perf_counter()
                mechs32[t].estimate(reports32[c], epsilons=e)
                dt = time.perf_counter() - t0
                if rnd:
                    times.setdefault(("est32", c, t), []).append(dt)
    best = {key: min(v) for key, v in times.items()}
    med = {key: float(np.median(v)) for key, v in times.items()}

    # NumPy reference decoder on the same (main-case) reports; it gets the
    # kernel's sketch_weights, and its sketch is the expensive part
    weights = w_main
    n_np = min(numpy_n, n)
    np_repeats = min(repeats, 3)
    np_times = []
    for _ in range(np_repeats):
        t0 = time.perf_counter()
        v_np = numpy_sketch(CODEBOOK_SEED, ids[:n_np], weights[:n_np], p)
        np_times.append(time.perf_counter() - t0)
    if n_np == n:
        ref = est.sketch.ravel()
    else:
        ref = global_sketch(CODEBOOK_SEED, ids[:n_np], weights[:n_np], p, nt)
    np.testing.assert_allclose(v_np, ref, rtol=1e-9, atol=sketch_atol(weights[:n_np]),
                               err_msg="NumPy reference sketch != kernel sketch")
    max_diff = float(np.max(np.abs(v_np - ref)))
    scale = n / n_np
    t_np, t_np_med = min(np_times) * scale, float(np.median(np_times)) * scale

    t_ref = best[("est", "main", nt)]
    t_ref1 = best[("est", "main", 1)]
    rule(f"(a) decode: JPRS.estimate vs NumPy reference   n={n:,}  p={p:,} ({d1}x{d2})  "
         f"k={K} s={S} eps={EPS}")
    print(f"  {'decoder':<42}{'best':>11}{'median':>11}{'/est(' + str(nt) + ')':>9}"
          f"{'/est(1)':>9}")

    def line(label, b, m=None):
        m_s = fmt_s(m) if m is not None else ""
        print(f"  {label:<42}{fmt_s(b):>11}{m_s:>11}{b / t_ref:>8.1f}x{b / t_ref1:>8.1f}x")

    for t in labels:
        line(f"JPRS.estimate, n_threads={t}", best[("est", "main", t)], med[("est", "main", t)])
        print(f"  {'  of which global_sketch kernel':<42}{fmt_s(best[('sketch', 'main', t)]):>11}"
              f"{fmt_s(med[('sketch', 'main', t)]):>11}")
    for t in labels:
        line(f"global_sketch alone, n_threads={t}", best[("alone", t)], med[("alone", t)])
    if n_np == n:
        line(f"NumPy reference sketch (best of {np_repeats})", t_np, t_np_med)
    else:
        line(f"NumPy reference, scaled x{scale:g}", t_np, t_np_med)
        print(f"  (NumPy reference timed at n={n_np:,}, best of {np_repeats}: "
              f"{fmt_s(min(np_times)).strip()}, then scaled linearly to n={n:,}:\n"
              f"   its cost is linear in n, one Philox stream and one sign row per identity)")
    print(f"  NumPy reference == kernel sketch on these reports (n={n_np:,}): "
          f"max |diff| = {max_diff:.2e}")
    print("  NumPy row: the sketch only (no sanitizing, weights or projection, which the\n"
          "  estimate rows include); its matrix-vector products may use BLAS threads.")
    print("  personalized budgets eps_i ~ U[0.5, 1.0] (unequal |w_i|: float-weight path):")
    for t in labels:
        line(f"JPRS.estimate, n_threads={t}", best[("est", "pers", t)], med[("est", "pers", t)])

    rule(f"(b) Philox floor: n * ceil(p/256) = {nblocks:,} Philox4x64-10 blocks  "
         f"(n={n:,}, p={p:,})")
    print(f"  {'threads':>7}{'floor':>11}{'ns/block':>9}{'sketch':>11}{'/floor':>8}"
          f"{'estimate':>11}{'/floor':>8}{'pers. est.':>12}{'/floor':>8}")
    for t in labels:
        t_f = best[("floor", t)]
        t_s = best[("alone", t)]
        t_e = best[("est", "main", t)]
        t_p = best[("est", "pers", t)]
        print(f"  {t:>7}{fmt_s(t_f):>11}{t_f / nblocks * 1e9 * t:>9.2f}{fmt_s(t_s):>11}"
              f"{t_s / t_f:>7.1f}x{fmt_s(t_e):>11}{t_e / t_f:>7.1f}x{fmt_s(t_p):>12}"
              f"{t_p / t_f:>7.1f}x")
    print("  sketch = global_sketch alone (equal budgets); estimate = JPRS.estimate, equal "
          "budgets;\n  pers. est. = JPRS.estimate, personalized budgets.")
    print(over_target("estimate", "personalized estimate",
                      {t: (best[("est", "main", t)] / best[("floor", t)],
                           best[("est", "pers", t)] / best[("floor", t)]) for t in labels}))
    print(f"  ns/block is per thread (floor time x threads / blocks). Best of {repeats}; medians: "
          + ", ".join(f"floor({t}) {fmt_s(med[('floor', t)]).strip()}" for t in labels))
    slow = [t for t in labels if t > 1
            and med[("sketch", "main", t)] > 1.5 * med[("alone", t)]]
    if slow:
        print(f"  NOTE: with n_threads={slow[0]} the sketch inside estimate (median "
              f"{fmt_s(med[('sketch', 'main', slow[0])]).strip()}) is much slower than\n"
              f"  global_sketch alone ({fmt_s(med[('alone', slow[0])]).strip()}). Seen causes: "
              f"estimate's multithreaded np.dot\n  leaves OpenBLAS threads spinning on the "
              f"cores the kernel's OpenMP threads need\n  (OPENBLAS_NUM_THREADS=1 avoids it; "
              f"this run: {os.environ.get('OPENBLAS_NUM_THREADS') or 'unset'}), and the "
              f"kernel's per-wave barriers\n  stall whenever a core is taken away. "
              f"See bench/README.md.")
    # the fixed-point sketch is exact: it must be the rounded float weights'
    # sketch, up to the float kernel's rounding
    v_fix = fixed_sketch(CODEBOOK_SEED, ids, w_fix, p, nt) / fix_scale
    v_flt = global_sketch(CODEBOOK_SEED, ids, w_fix / fix_scale, p, nt)
    fix_diff = float(np.max(np.abs(v_fix - v_flt)))
    np.testing.assert_allclose(v_fix, v_flt, rtol=0, atol=1e-9 * float(np.abs(w_pers).sum()),
                               err_msg="fixed_sketch != global_sketch on the same weights")
    print("  sketch kernels alone, personalized budgets (unequal |w_i|):")
    print(f"  {'threads':>7}{'floor':>11}{'float sketch':>14}{'/floor':>8}"
          f"{'fixed sketch':>14}{'/floor':>8}")
    for t in labels:
        t_f = best[("floor", t)]
        t_pf = best[("pers-float", t)]
        t_px = best[("pers-fixed", t)]
        print(f"  {t:>7}{fmt_s(t_f):>11}{fmt_s(t_pf):>14}{t_pf / t_f:>7.1f}x"
              f"{fmt_s(t_px):>14}{t_px / t_f:>7.2f}x")
    print("  float sketch = global_sketch (float table path); fixed sketch = fixed_sketch,\n"
          "  exact int64 sums of the weights as signed 32-bit fixed point "
          f"(scale 2**32 / max|w|);\n  fixed / scale == float sketch of the same weights "
          f"up to max |diff| = {fix_diff:.2e}.")
    if nt != 1:
        print(f"  speed-up of {nt} threads over 1: floor {best[('floor', 1)] / best[('floor', nt)]:.2f}x, "
              f"sketch alone {best[('alone', 1)] / best[('alone', nt)]:.2f}x, "
              f"sketch in estimate {best[('sketch', 'main', 1)] / best[('sketch', 'main', nt)]:.2f}x, "
              f"estimate {t_ref1 / t_ref:.2f}x, "
              f"personalized estimate {best[('est', 'pers', 1)] / best[('est', 'pers', nt)]:.2f}x, "
              f"fixed sketch {best[('pers-fixed', 1)] / best[('pers-fixed', nt)]:.2f}x")
    rule(f"(b2) opt-in codebook {CB32}: n * ceil(p/256) pair-sign blocks of two "
         f"Philox4x32-10 blocks each  (SIMD level {simd_level()})")
    print(f"  {'threads':>7}{'floor':>11}{'x lower':>9}{'estimate':>11}{'/floor':>8}"
          f"{'pers. est.':>12}{'/floor':>8}   (medians: floor, estimate, pers. est.)")
    for t in labels:
        t_f = best[("floor32", t)]
        t_e = best[("est32", "main", t)]
        t_p = best[("est32", "pers", t)]
        print(f"  {t:>7}{fmt_s(t_f):>11}{best[('floor', t)] / t_f:>8.2f}x{fmt_s(t_e):>11}"
              f"{t_e / t_f:>7.2f}x{fmt_s(t_p):>12}{t_p / t_f:>7.2f}x   "
              f"({fmt_s(med[('floor32', t)]).strip()}, {fmt_s(med[('est32', 'main', t)]).strip()}, "
              f"{fmt_s(med[('est32', 'pers', t)]).strip()})")
    print(over_target("its estimate", "its personalized estimate",
                      {t: (best[("est32", "main", t)] / best[("floor32", t)],
                           best[("est32", "pers", t)] / best[("floor32", t)]) for t in labels}))
    print(f"  x lower = default floor / this floor (same pairs, same run); estimate and pers. est. = "
          f"JPRS(codebook='{CB32}').estimate\n  on its own reports, equal and personalized budgets.")
    return {"n": n, "shape": shape, "threads": nt, "blocks": nblocks, "numpy": t_np,
            "best": best}


# ------------------------------------------------------------- (c) privatize
def section_privatize(n: int, shape, threads, repeats: int) -> float:
    mech = fastldp.JPRS(shape=shape, k=K, s=S, codebook_seed=CODEBOOK_SEED, n_threads=threads)
    t0 = time.perf_counter()
    pop = make_population(n, shape, seed=1)
    t_pop = time.perf_counter() - t0
    eps = np.full(n, EPS)
    t, bits = best_of(lambda: mech.privatize(pop.relations, epsilons=eps, rng=0), repeats)
    assert bits.shape == (n,) and bits.dtype == np.int8
    rule(f"(c) client: JPRS.privatize   n={n:,} identities, k={K}, p={mech.p:,}, "
         f"n_threads={mech.n_threads}")
    print(f"  {'privatize (best of ' + str(repeats) + ')':<44}{fmt_s(t):>12}"
          f"{n / t / 1e6:>10.2f} M identities/s  ({t / n * 1e9:.0f} ns each)")
    print(f"  {'(population build, not timed above)':<44}{fmt_s(t_pop):>12}")
    return t


# --------------------------------------------------------------- (d) memory
def _rss_kib(field: str) -> int:
    with open("/proc/self/status") as fh:
        for line in fh:
            if line.startswith(field + ":"):
                return int(line.split()[1])
    raise RuntimeError(f"{field} not in /proc/self/status")


def _reset_peak_rss() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as fh:
            fh.write("5")
        return True
    except OSError:
        return False


def memory_worker(n: int, shape, threads) -> dict:
    """Runs in a fresh interpreter; returns the measurements as a dict."""
    import threading
    import tracemalloc

    d1, d2 = shape
    p = d1 * d2
    mech = fastldp.JPRS(shape=shape, k=K, s=S, codebook_seed=CODEBOOK_SEED, n_threads=threads)
    # warm-up on a tiny case so lazy imports and first-call caches are not counted
    mech.estimate(np.ones(64, dtype=np.int8), epsilons=np.full(64, EPS))
    rng = np.random.default_rng(7)
    reports = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
    eps = np.full(n, EPS)
    input_bytes = reports.nbytes + eps.nbytes

    # 1) resident-set growth, no tracing
    rss_before = _rss_kib("VmRSS")
    method = "VmHWM after clear_refs"
    if _reset_peak_rss():
        t0 = time.perf_counter()
        est = mech.estimate(reports, epsilons=eps)
        seconds = time.perf_counter() - t0
        rss_peak = _rss_kib("VmHWM")
    else:  # sample VmRSS from a thread (approximate)
        method = "VmRSS sampled every 1 ms"
        peak = [rss_before]
        done = threading.Event()

        def sample():
            while not done.is_set():
                peak[0] = max(peak[0], _rss_kib("VmRSS"))
                time.sleep(0.001)

        th = threading.Thread(target=sample)
        th.start()
        t0 = time.perf_counter()
        est = mech.estimate(reports, epsilons=eps)
        seconds = time.perf_counter() - t0
        done.set()
        th.join()
        rss_peak = peak[0]
    del est

    # 2) peak traced allocation (numpy reports its buffers to tracemalloc)
    tracemalloc.start()
    base, _ = tracemalloc.get_traced_memory()
    tracemalloc.reset_peak()
    est = mech.estimate(reports, epsilons=eps)
    current, peak_traced = tracemalloc.get_traced_memory()
    tracemalloc.stop()
    retained = est.matrix.nbytes + est.sketch.nbytes
    return {
        "n": n, "p": p, "shape": list(shape), "n_threads": mech.n_threads,
        "input_bytes": input_bytes, "reports_bytes": reports.nbytes, "eps_bytes": eps.nbytes,
        "peak_traced_bytes": peak_traced - base, "result_bytes": retained,
        "rss_growth_bytes": (rss_peak - rss_before) * 1024, "rss_method": method,
        "seconds": seconds,
    }


def _partial_slots(n: int, threads: int) -> int:
    """Partial vectors the ordered chunk sum keeps (see fastldp._kernels._sketch)."""
    from fastldp._kernels import _sketch

    chunks = -(-n // _sketch.chunk_size(n))
    return min(chunks, _sketch.SLOTS_PER_THREAD * max(1, threads))


def section_memory(n: int, shape, threads) -> dict:
    cmd = [sys.executable, os.path.abspath(__file__), "--memory-worker", str(n),
           str(shape[0]), str(shape[1])]
    if threads is not None:
        cmd += ["--threads", str(threads)]
    proc = subprocess.run(cmd, capture_output=True, text=True, check=False)
    if proc.returncode != 0:
        raise RuntimeError(f"memory worker failed:\n{proc.stdout}\n{proc.stderr}")
    r = json.loads(proc.stdout.strip().splitlines()[-1])
    p = r["p"]
    rule(f"(d) memory of JPRS.estimate   n={r['n']:,}  p={p:,} ({shape[0]}x{shape[1]})  "
         f"k={K} s={S} n_threads={r['n_threads']}  (fresh process)")
    rows = [
        ("input: reports int8 + eps float64", r["input_bytes"],
         f"{r['reports_bytes'] / MiB:.2f} + {r['eps_bytes'] / MiB:.2f} MiB"),
        ("p * 8 bytes (one float64 sketch)", p * 8, ""),
        ("slots * p * 8 (chunk partials)", _partial_slots(r["n"], r["n_threads"]) * p * 8,
         f"{_partial_slots(r['n'], r['n_threads'])} slots"),
        ("peak traced allocation (tracemalloc)", r["peak_traced_bytes"],
         f"{r['peak_traced_bytes'] / r['n']:.1f} bytes/identity"),
        ("  of it kept in the result (matrix+sketch)", r["result_bytes"], ""),
        ("resident-set growth", r["rss_growth_bytes"], r["rss_method"]),
    ]
    for label, b, note in rows:
        print(f"  {label:<44}{b / MiB:>10.2f} MiB   {note}")
    print(f"  (estimate took {r['seconds']:.2f} s in the untraced run; reports are random +-1, "
          f"not privatized)")
    return r


def readme_rows(dec: dict, n_priv: int, t_priv: float, mem) -> None:
    """The rows of README's performance table, in its words, with this run's figures."""
    best, nt = dec["best"], dec["threads"]
    d1, d2 = dec["shape"]

    def over_floor(key, t):
        return best[key] / best[("floor", t)]

    est, est1 = over_floor(("est", "main", nt), nt), over_floor(("est", "main", 1), 1)
    pers, pers1 = over_floor(("est", "pers", nt), nt), over_floor(("est", "pers", 1), 1)
    t_est = best[("est", "main", nt)]
    print()
    print("README lines (Performance), in the README's words, from this run:")
    print("| what | fastldp | baseline | ratio |")
    print("|---|---|---|---|")
    print(f"| (a) `estimate`, n = {dec['n']:,}, {d1} x {d2}, eps = {EPS}, {nt} threads "
          f"| {short(t_est)} | NumPy decoder {short(dec['numpy'])} "
          f"| {dec['numpy'] / t_est:.0f}x |")
    print(f"| (a) `estimate`, personalized eps_i ~ U[0.5, 1], {nt} threads "
          f"| {short(best[('est', 'pers', nt)])} | | |")
    print(f"| (b) Philox floor: n * p / 256 = {dec['blocks']:,} blocks, {nt} threads "
          f"| {short(best[('floor', nt)])} | | `estimate` / floor = {est:.1f}x (1 thread: "
          f"{est1:.1f}x); sketch alone {over_floor(('alone', nt), nt):.1f}x; personalized "
          f"{pers:.1f}x (1 thread: {pers1:.1f}x) |")
    print(f"| (b) the personalized sketch kernel alone (`fixed_sketch`) "
          f"| {short(best[('pers-fixed', nt)])} | float table path "
          f"{short(best[('pers-float', nt)])} | {over_floor(('pers-fixed', nt), nt):.2f}x the "
          f"floor (float path {over_floor(('pers-float', nt), nt):.1f}x) |")
    for t in sorted({nt, 1}, reverse=True):
        f32 = best[("floor32", t)]
        print(f"| (b2) opt-in codebook `{CB32}`: its floor, {t} thread{'s' if t > 1 else ''} "
              f"| {short(f32)} | default floor {short(best[('floor', t)])} "
              f"| {best[('floor', t)] / f32:.1f}x lower; `estimate` / its floor = "
              f"{best[('est32', 'main', t)] / f32:.1f}x; personalized "
              f"{best[('est32', 'pers', t)] / f32:.1f}x |")
    print(f"| (c) `privatize`, {n_priv:,} identities, k = {K} | {short(t_priv)} "
          f"| target < {PRIVATIZE_TARGET_S} s | |")
    if mem is not None:
        print(f"| (d) peak memory of `estimate`, n = {mem['n']:,}, p = {mem['p']:,} "
              f"| {mem['rss_growth_bytes'] / MiB:.1f} MiB beyond the "
              f"{mem['input_bytes'] / MiB:.1f} MiB input | | O(p): exact digit rows of p; one "
              f"budget for all, so no per-identity temporary (personal budgets: int64 weights "
              f"in blocks of 65,536 identities) |")


# ---------------------------------------------------------------------- main
def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--quick", action="store_true", help="smaller sizes for a smoke run")
    ap.add_argument("--threads", type=int, default=None,
                    help="thread count of the default rows (default: OpenMP's default)")
    ap.add_argument("--repeats", type=int, default=7, help="best of N for (a) and (b)")
    ap.add_argument("--numpy-n", type=int, default=None,
                    help="identities for the NumPy reference timing (scaled linearly to n)")
    ap.add_argument("--skip-memory", action="store_true", help="skip section (d)")
    ap.add_argument("--memory-worker", nargs=3, type=int, metavar=("N", "D1", "D2"),
                    help=argparse.SUPPRESS)
    args = ap.parse_args(argv)
    threads = args.threads

    if args.memory_worker:
        n, d1, d2 = args.memory_worker
        print(json.dumps(memory_worker(n, (d1, d2), threads)))
        return

    if args.quick:
        n_dec, n_priv, n_mem, repeats = 16_000, 100_000, 200_000, min(args.repeats, 3)
    else:
        n_dec, n_priv, n_mem, repeats = 128_000, 1_000_000, 2_000_000, args.repeats
    numpy_n = args.numpy_n if args.numpy_n else n_dec

    try:
        affinity = len(os.sched_getaffinity(0))
    except AttributeError:
        affinity = os.cpu_count()
    print("fastldp benchmark" + ("  [--quick]" if args.quick else ""))
    print(f"  cores: os.cpu_count()={os.cpu_count()}, usable={affinity}; "
          f"load average {loadavg()}")
    print("  OMP_NUM_THREADS=" + (os.environ.get("OMP_NUM_THREADS") or "unset")
          + ", OPENBLAS_NUM_THREADS=" + (os.environ.get("OPENBLAS_NUM_THREADS") or "unset"))
    cap, alone = cpu_capacity()
    print(f"  parallel capacity now: {cap:.2f} of 2 (two busy processes at once vs one; "
          f"~2 = two real cores, ~1 = one core's worth shared)")
    print(f"  timings: time.perf_counter, best of {repeats} unless stated")
    fastldp.show_config()
    print()
    check_against_kernel()

    dec = section_decode(n_dec, (64, 64), threads, repeats, numpy_n)
    t_priv = section_privatize(n_priv, (64, 64), threads, 3)
    mem = None if args.skip_memory else section_memory(n_mem, (128, 128), threads)
    print()
    cap, _ = cpu_capacity()
    print(f"  at the end: load average {loadavg()}; parallel capacity {cap:.2f} of 2")
    readme_rows(dec, n_priv, t_priv, mem)


if __name__ == "__main__":
    main()
