"""The exact integer sketch kernel (``fixed_sketch``) against a naive NumPy twin.

The twin takes every sign from ``pair_signs`` one (identity, pair) at a time
and sums ``w_i * R_i(e)`` in int64; both are exact, so equality is exact.
"""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastldp._kernels import _sketch
from fastldp._kernels._hash import pair_signs
from _reference import numpy_sign_row
from _fixed_twins import naive_fixed

TWO32 = 2**32


def random_weights(rng, n, kind):
    if kind == "unequal":
        return rng.integers(-TWO32, TWO32 + 1, n, dtype=np.int64)
    if kind == "small":
        return rng.integers(-3, 4, n, dtype=np.int64)
    if kind == "equal":
        c = int(rng.integers(1, TWO32 + 1))
        return np.where(rng.random(n) < 0.5, c, -c).astype(np.int64)
    if kind == "extreme":  # every weight at +-2**32: the equal path at its limit
        return np.where(rng.random(n) < 0.5, TWO32, -TWO32).astype(np.int64)
    if kind == "extreme-mixed":  # +-2**32 beside other values: table path at its limit
        w = np.where(rng.random(n) < 0.5, TWO32, -TWO32).astype(np.int64)
        w[::3] = rng.integers(-TWO32, TWO32 + 1, w[::3].size)
        return w
    raise ValueError(kind)


@pytest.mark.parametrize("kind", ["unequal", "small", "equal", "extreme", "extreme-mixed"])
@pytest.mark.parametrize("n,p", [(1, 1), (7, 63), (8, 64), (9, 65), (15, 255), (17, 256),
                                 (127, 257), (129, 300), (300, 513), (1100, 130)])
def test_equals_naive_exactly(kind, n, p):
    # n not a multiple of 8/16/128 and p not a multiple of 64/256 exercise the
    # padded identities and the ragged last word and block
    rng = np.random.default_rng(1000 * n + p)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = random_weights(rng, n, kind)
    ref = naive_fixed(77, ids, w, p)
    for t in (1, 2):
        got = _sketch.fixed_sketch(77, ids, w, p, t)
        assert got.dtype == np.int64 and got.shape == (p,)
        np.testing.assert_array_equal(got, ref)


def test_twin_agrees_with_independent_philox():
    # the twin's signs (pair_signs) against numpy.random.Philox, so the
    # comparison above cannot share a layout error with the kernel
    rng = np.random.default_rng(5)
    ids = rng.integers(0, 2**64, 5, dtype=np.uint64)
    w = rng.integers(-TWO32, TWO32 + 1, 5, dtype=np.int64)
    ref = sum(int(wi) * numpy_sign_row(3, int(i), 300) for i, wi in zip(ids, w))
    np.testing.assert_array_equal(naive_fixed(3, ids, w, 300), ref)
    np.testing.assert_array_equal(_sketch.fixed_sketch(3, ids, w, 300), ref)


@pytest.mark.parametrize("equal", [False, True])
def test_thread_counts_and_many_chunks_give_identical_results(equal):
    # n spans several chunks (and a ragged last one), so threads really split
    rng = np.random.default_rng(11)
    n, p = 5 * 1024 + 77, 1000
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = random_weights(rng, n, "equal" if equal else "unequal")
    runs = [_sketch.fixed_sketch(9, ids, w, p, t) for t in (1, 2, 3)]
    for other in runs[1:]:
        np.testing.assert_array_equal(runs[0], other)
    # the sum is linear in the identities: two halves add up to the whole
    half = n // 2
    parts = (_sketch.fixed_sketch(9, ids[:half], w[:half], p)
             + _sketch.fixed_sketch(9, ids[half:], w[half:], p))
    np.testing.assert_array_equal(runs[0], parts)
    # and a spot check of a few positions against the twin
    cols = rng.integers(0, p, 4)
    for e in cols:
        signs = pair_signs(9, ids, np.full(n, e, dtype=np.int64)).astype(np.int64)
        assert runs[0][e] == int(np.dot(signs, w))


@pytest.mark.parametrize("kind", ["unequal", "equal"])
def test_identities_none_uses_first_identity(kind):
    rng = np.random.default_rng(4)
    n, p, first = 150, 333, 2**64 - 60  # the range wraps past 2**64
    w = random_weights(rng, n, kind)
    ids = (np.uint64(first) + np.arange(n, dtype=np.uint64))  # uint64 wraps
    ref = naive_fixed(21, ids, w, p)
    for t in (1, 2):
        np.testing.assert_array_equal(
            _sketch.fixed_sketch(21, None, w, p, t, first_identity=first), ref)
    np.testing.assert_array_equal(
        _sketch.fixed_sketch(21, None, w[:40], p), naive_fixed(21, np.arange(40), w[:40], p))


def test_empty_population_and_zero_weights_give_zeros():
    for ids in (None, np.empty(0, np.uint64)):
        out = _sketch.fixed_sketch(1, ids, np.empty(0, np.int64), 10, 2)
        assert out.dtype == np.int64
        np.testing.assert_array_equal(out, np.zeros(10, np.int64))
    out = _sketch.fixed_sketch(1, None, np.zeros(40, np.int64), 70, 2)
    np.testing.assert_array_equal(out, np.zeros(70, np.int64))


def test_matches_the_float_kernel_on_small_integers():
    # small integers are exact doubles too, so the float kernel must agree
    rng = np.random.default_rng(8)
    ids = rng.integers(0, 2**64, 500, dtype=np.uint64)
    w = rng.integers(-1000, 1001, 500, dtype=np.int64)
    got = _sketch.fixed_sketch(6, ids, w, 700, 2)
    np.testing.assert_array_equal(got, _sketch.global_sketch(6, ids, w.astype(float), 700, 2))


@settings(max_examples=25, deadline=None)
@given(seed=st.integers(0, 2**64 - 1), n=st.integers(0, 70), p=st.integers(1, 600),
       kind=st.sampled_from(["unequal", "small", "equal", "extreme", "extreme-mixed"]),
       use_ids=st.booleans(), first=st.integers(0, 2**64 - 1),
       threads=st.integers(1, 3), data_seed=st.integers(0, 2**32 - 1))
def test_property_equals_naive(seed, n, p, kind, use_ids, first, threads, data_seed):
    rng = np.random.default_rng(data_seed)
    w = random_weights(rng, n, kind)
    if use_ids:
        ids = rng.integers(0, 2**64, n, dtype=np.uint64)
        got = _sketch.fixed_sketch(seed, ids, w, p, threads)
    else:
        ids = np.uint64(first) + np.arange(n, dtype=np.uint64)
        got = _sketch.fixed_sketch(seed, None, w, p, threads, first_identity=first)
    np.testing.assert_array_equal(got, naive_fixed(seed, ids, w, p))


# ------------------------------------------------------------------ validation
def batch_limit(n):
    """The largest |w| fixed_sketch takes in a batch of n: 2**32, or 2**61 / max(n, 16)."""
    return max(TWO32, 2**61 // max(n, 16))


def test_weight_out_of_range_names_parameter_range_and_value():
    limit = batch_limit(20)
    assert limit == 2**61 // 20
    for bad in (limit + 1, -limit - 1, np.iinfo(np.int64).min, np.iinfo(np.int64).max):
        w = np.zeros(20, np.int64)
        w[13] = bad
        with pytest.raises(ValueError, match=rf"weights.*<= {limit} \(2\*\*32, or 2\*\*61 / "
                                             rf"max\(n, 16\) for n = 20\).*weights\[13\] = {bad}"):
            _sketch.fixed_sketch(1, None, w, 10)
    # the limits themselves are allowed
    w = np.zeros(20, np.int64)
    w[:2] = limit, -limit
    _sketch.fixed_sketch(1, None, w, 10)
    # below 16 identities the bound is that of 16
    w = np.array([2**57, -2**57], np.int64)
    _sketch.fixed_sketch(1, None, w, 10)
    with pytest.raises(ValueError, match=r"weights\[1\]"):
        _sketch.fixed_sketch(1, None, np.array([1, 2**57 + 1], np.int64), 10)


@pytest.mark.parametrize("equal", [False, True])
@pytest.mark.parametrize("n,p", [(3, 70), (16, 256), (100, 300), (4100, 129)])
def test_batch_weights_beyond_two32_stay_exact(equal, n, p):
    # weights at the batch limit (every partial sum up to 2**61): the table
    # paths and the counting path must not overflow int64 anywhere
    rng = np.random.default_rng(n + p + equal)
    limit = batch_limit(n)
    assert limit > TWO32
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    if equal:
        w = np.where(rng.random(n) < 0.5, limit, -limit).astype(np.int64)
    else:
        w = rng.integers(-limit, limit + 1, n, dtype=np.int64)
        w[: n // 2] = np.where(rng.random(n // 2) < 0.5, limit, -limit)
    # the twin in Python integers: no overflow possible there
    signs = np.stack([pair_signs(5, np.full(p, i, dtype=np.uint64), np.arange(p)) for i in ids])
    ref = [sum(int(wi) * int(sg) for wi, sg in zip(w, signs[:, e])) for e in range(p)]
    for t in (1, 2):
        got = _sketch.fixed_sketch(5, ids, w, p, t)
        assert [int(v) for v in got] == ref


@pytest.mark.parametrize("p", [0, -5])
def test_p_below_one_raises(p):
    with pytest.raises(ValueError, match=rf"p must be >= 1, got {p}"):
        _sketch.fixed_sketch(1, None, np.ones(3, np.int64), p)


def test_n_threads_below_one_raises():
    with pytest.raises(ValueError, match=r"n_threads must be >= 1, got 0"):
        _sketch.fixed_sketch(1, None, np.ones(3, np.int64), 10, 0)


def test_length_mismatch_names_both_lengths():
    with pytest.raises(ValueError, match=r"identities and weights.*len\(identities\) = 3.*"
                                         r"len\(weights\) = 2"):
        _sketch.fixed_sketch(1, np.zeros(3, np.uint64), np.zeros(2, np.int64), 10)


def test_too_many_identities_raises_before_reading_them():
    # calloc'd zeros: the 8 GiB are never touched, the check comes first
    try:
        w = np.zeros(2**30 + 1, np.int64)
    except MemoryError:
        pytest.skip("cannot reserve 8 GiB of address space here")
    with pytest.raises(ValueError, match=r"n = len\(weights\) must be <= 2\*\*30.*"
                                         rf"got {2**30 + 1}"):
        _sketch.fixed_sketch(1, None, w, 10)


@pytest.mark.parametrize("n,p", [(1, 1), (17, 65), (300, 513), (1100, 130), (2100, 1000)])
def test_every_counting_step_equals_naive_exactly(n, p):
    # the equal-magnitude path's scalar, baseline-vector and AVX2 steps
    # (issue 38, 1) must give the same integers as the twin; p not a multiple
    # of 256 exercises the padded plane stride, n past a chunk the high planes
    rng = np.random.default_rng(7 * n + p)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = random_weights(rng, n, "equal")
    ref = naive_fixed(21, ids, w, p)
    ref_float = ref.astype(np.float64)
    old = _sketch.set_simd_cap(3)
    try:
        for cap in (0, 1, 2, 3):
            _sketch.set_simd_cap(cap)
            assert _sketch.simd_level() <= cap
            for t in (1, 2):
                np.testing.assert_array_equal(_sketch.fixed_sketch(21, ids, w, p, t), ref)
                # the float kernel's counting path shares the step
                np.testing.assert_array_equal(
                    _sketch.global_sketch(21, ids, w.astype(np.float64), p, t), ref_float)
    finally:
        _sketch.set_simd_cap(old)


def test_simd_level_follows_the_cpu_features():
    # run-time dispatch, not a build flag: a default build takes the highest
    # level the CPU has (a FASTLDP_PORTABLE build has only the scalar one)
    try:
        with open("/proc/cpuinfo") as fh:
            flags = set(fh.read().split())
    except OSError:
        pytest.skip("no /proc/cpuinfo")
    level = _sketch.simd_level()
    if level == 0:
        pytest.skip("scalar counting step only (FASTLDP_PORTABLE build or no vector extensions)")
    assert level == (3 if "avx512f" in flags else 2 if "avx2" in flags else 1)
    with pytest.raises(ValueError, match="cap must be 0, 1, 2 or 3, got 4"):
        _sketch.set_simd_cap(4)


@pytest.mark.parametrize("kind", ["unequal", "small", "extreme-mixed"])
@pytest.mark.parametrize("n,p", [(17, 65), (8192, 1), (8300, 130), (9000, 300)])
def test_general_weights_equal_naive_at_every_simd_level(kind, n, p):
    # general weights take the table path at every SIMD level (issue 38: a
    # sign-counting path on radix-16 digits of |w| was tried and measured
    # slower); its Philox blocks come from the batch generator, so every
    # level must still give the twin's integers, with identities given or
    # counted from first_identity (wrapping past 2**64)
    rng = np.random.default_rng(11 * n + p)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = random_weights(rng, n, kind)
    ref = naive_fixed(5, ids, w, p)
    # identities None: 2**64 - 7, 2**64 - 6, ... wrapping past 2**64
    ref_range = naive_fixed(5, np.arange(n, dtype=np.uint64) + np.uint64(2**64 - 7), w, p)
    old = _sketch.set_simd_cap(3)
    try:
        for cap in (0, 1, 2, 3):
            _sketch.set_simd_cap(cap)
            for t in (1, 2):
                np.testing.assert_array_equal(_sketch.fixed_sketch(5, ids, w, p, t), ref)
                np.testing.assert_array_equal(
                    _sketch.fixed_sketch(5, None, w, p, t, 2**64 - 7), ref_range)
    finally:
        _sketch.set_simd_cap(old)
