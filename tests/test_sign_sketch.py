"""``sign_sketch``: the equal-budget sketch from int8 signs, against a naive twin.

``sign_sketch(seed, ids, signs, c, p, ...)`` must return exactly
``fixed_sketch(seed, ids, c * signs.astype(int64), p, ...)``, which is
``c * sum_i signs[i] R_i(e)``. The twin takes every sign from the scalar
codebook (``pair_signs``, one identity and pair at a time); every SIMD level
(the opt-in codebook's AVX-512 count at level 3, the AVX2 and baseline
vector trees, scalar C) and one and two threads must give the same
integers.

The opt-in codebook's count at level 3 (jprs_count.h,
``fastldp_count_ids_q4x32_avx512``) splits the identities by sign into
batches of 256 and runs two levels of carry-save trees over 16 and 256
identities; the tests here also pin ``fixed_sketch`` and the float kernel's
equal-magnitude path (``global_sketch``), which count the same way, at the
batch and tree boundaries against scalar C.
"""

import numpy as np
import pytest

from fastldp._kernels import _hash, _sketch

CB32 = "philox4x32-10"
CB64 = "philox4x64-10"
TWO32 = 2**32


@pytest.fixture
def caps():
    """Set the sketch module's SIMD cap; restore the old cap afterwards."""
    old = _sketch.set_simd_cap(3)
    yield _sketch.set_simd_cap
    _sketch.set_simd_cap(old)


def naive_signed(seed, ids, signs, magnitude, p, codebook):
    """magnitude * sum_i signs[i] * R_{ids[i]}(e) for e in [0, p), exact int64."""
    out = np.zeros(p, dtype=np.int64)
    pairs = np.arange(p, dtype=np.int64)
    for ident, s in zip(ids, signs):
        row = _hash.pair_signs(seed, np.full(p, ident, dtype=np.uint64), pairs, codebook)
        out += int(s) * row.astype(np.int64)
    return magnitude * out


def random_signs(rng, n):
    return np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)


@pytest.mark.parametrize("codebook", [CB32, CB64])
@pytest.mark.parametrize("n,p", [(1, 1), (5, 255), (19, 257), (40, 1023), (70, 1025),
                                 (33, 2100)])
def test_equals_the_naive_twin_at_every_level_and_thread_count(codebook, n, p, caps):
    rng = np.random.default_rng(31 * n + p)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    signs = random_signs(rng, n)
    magnitude = int(rng.integers(1, TWO32 + 1))
    ref = naive_signed(13, ids, signs, magnitude, p, codebook)
    for cap in (3, 2, 1, 0):
        caps(cap)
        for t in (1, 2):
            got = _sketch.sign_sketch(13, ids, signs, magnitude, p, t, 0, codebook)
            assert got.dtype == np.int64 and got.shape == (p,)
            np.testing.assert_array_equal(got, ref)


@pytest.mark.parametrize("codebook", [CB32, CB64])
def test_identities_none_counts_from_first_identity_and_wraps(codebook):
    rng = np.random.default_rng(3)
    n, p = 23, 300
    signs = random_signs(rng, n)
    first = 2**64 - 10  # identities wrap modulo 2**64, as in fixed_sketch
    ids = (np.arange(n, dtype=np.uint64) + np.uint64(first))
    ref = naive_signed(4, ids, signs, 7, p, codebook)
    np.testing.assert_array_equal(_sketch.sign_sketch(4, None, signs, 7, p, 1, first, codebook),
                                  ref)
    np.testing.assert_array_equal(_sketch.sign_sketch(4, ids, signs, 7, p, 2, 0, codebook), ref)


@pytest.mark.parametrize("codebook", [CB32, CB64])
@pytest.mark.parametrize("pattern", ["random", "all-plus", "all-minus", "runs"])
def test_equals_fixed_sketch_over_many_chunks(codebook, pattern):
    # n spans several chunks (and a ragged last one) so two threads split
    # them; the magnitudes include the limits 1 and 2**32
    rng = np.random.default_rng(17)
    n, p = 5 * 1024 + 77, 1100
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    if pattern == "random":
        signs = random_signs(rng, n)
    elif pattern == "all-plus":
        signs = np.ones(n, dtype=np.int8)
    elif pattern == "all-minus":
        signs = -np.ones(n, dtype=np.int8)
    else:  # long runs of one sign: whole batches of one sign, then ragged ones
        signs = np.where((np.arange(n) // 700) % 2 == 0, 1, -1).astype(np.int8)
    for magnitude in (1, 3, TWO32):
        ref = _sketch.fixed_sketch(9, ids, magnitude * signs.astype(np.int64), p, 1, 0, codebook)
        for t in (1, 2):
            np.testing.assert_array_equal(
                _sketch.sign_sketch(9, ids, signs, magnitude, p, t, 0, codebook), ref)


def test_zero_magnitude_and_empty_population_give_zeros():
    signs = np.array([1, -1, 1], dtype=np.int8)
    for codebook in (CB32, CB64):
        out = _sketch.sign_sketch(1, None, signs, 0, 70, 2, 0, codebook)
        assert out.dtype == np.int64 and out.shape == (70,) and not out.any()
        out = _sketch.sign_sketch(1, None, np.zeros(0, dtype=np.int8), 5, 70, 2, 0, codebook)
        assert out.shape == (70,) and not out.any()


def test_numpy_integer_magnitude_is_accepted():
    signs = np.array([1, -1, -1, 1, 1], dtype=np.int8)
    ref = _sketch.sign_sketch(2, None, signs, 6, 100)
    np.testing.assert_array_equal(_sketch.sign_sketch(2, None, signs, np.int64(6), 100), ref)
    np.testing.assert_array_equal(_sketch.sign_sketch(2, None, signs, np.uint8(6), 100), ref)


@pytest.mark.parametrize("bad", [0, 2, -2, 127, -128])
@pytest.mark.parametrize("codebook", [CB32, CB64])
def test_a_sign_other_than_plus_or_minus_one_names_index_and_value(bad, codebook):
    signs = np.ones(40, dtype=np.int8)
    signs[3] = -1
    signs[29] = bad
    signs[35] = 0  # a later bad value: the first one is reported
    with pytest.raises(ValueError, match=rf"signs must be \+1 or -1, got signs\[29\] = {bad}$"):
        _sketch.sign_sketch(1, None, signs, 5, 10, 1, 0, codebook)


def test_signs_of_another_dtype_or_shape_raise_type_error():
    with pytest.raises(TypeError, match=r"signs must be a one-dimensional int8 array.*int64"):
        _sketch.sign_sketch(1, None, np.ones(4, dtype=np.int64), 5, 10)
    with pytest.raises(TypeError, match=r"signs must be .*shape \(2, 2\)"):
        _sketch.sign_sketch(1, None, np.ones((2, 2), dtype=np.int8), 5, 10)


def test_non_contiguous_signs_are_read_in_full():
    rng = np.random.default_rng(8)
    signs = random_signs(rng, 60)
    ref = _sketch.sign_sketch(1, None, np.ascontiguousarray(signs[::2]), 4, 90)
    np.testing.assert_array_equal(_sketch.sign_sketch(1, None, signs[::2], 4, 90), ref)


@pytest.mark.parametrize("magnitude", [-1, TWO32 + 1, 2**70])
def test_magnitude_out_of_range_names_range_and_value(magnitude):
    with pytest.raises(ValueError,
                       match=rf"magnitude must satisfy 0 <= magnitude <= 2\*\*32 = {TWO32}, "
                             rf"got {magnitude}$"):
        _sketch.sign_sketch(1, None, np.ones(3, dtype=np.int8), magnitude, 10)


@pytest.mark.parametrize("magnitude", [1.5, 2.0, "3", None])
def test_magnitude_that_is_not_an_integer_raises_type_error(magnitude):
    with pytest.raises(TypeError, match=r"magnitude must be an integer in \[0, 2\*\*32\], got"):
        _sketch.sign_sketch(1, None, np.ones(3, dtype=np.int8), magnitude, 10)


def test_p_threads_lengths_and_codebook_are_checked():
    signs = np.ones(3, dtype=np.int8)
    with pytest.raises(ValueError, match=r"p must be >= 1, got 0"):
        _sketch.sign_sketch(1, None, signs, 1, 0)
    with pytest.raises(ValueError, match=r"n_threads must be >= 1, got 0"):
        _sketch.sign_sketch(1, None, signs, 1, 10, 0)
    with pytest.raises(ValueError, match=r"len\(identities\) = 2 and len\(signs\) = 3"):
        _sketch.sign_sketch(1, np.arange(2, dtype=np.uint64), signs, 1, 10)
    with pytest.raises(ValueError, match="codebook"):
        _sketch.sign_sketch(1, None, signs, 1, 10, 1, 0, "philox2x32-7")


# The opt-in codebook's AVX-512 count (level 3) against scalar C, for
# fixed_sketch and sign_sketch: the sign split's batches of 256 (full,
# ragged, one sign only), the 16-identity groups and 256-identity runs of
# the two-level tree, and deep counts that ripple through the high planes.
@pytest.mark.parametrize("n", [15, 16, 17, 255, 256, 257, 512, 513, 4111])
@pytest.mark.parametrize("p", [64, 1024, 1500])
def test_q4x32_count_at_batch_and_tree_boundaries_equals_scalar_c(n, p, caps):
    rng = np.random.default_rng(n + 7 * p)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    for signs in (random_signs(rng, n), np.ones(n, dtype=np.int8),
                  np.where(np.arange(n) % 5 == 0, -1, 1).astype(np.int8)):
        w = 3 * signs.astype(np.int64)
        caps(0)
        ref = _sketch.fixed_sketch(6, ids, w, p, 1, 0, CB32)
        caps(3)
        for t in (1, 2):
            np.testing.assert_array_equal(_sketch.fixed_sketch(6, ids, w, p, t, 0, CB32), ref)
            np.testing.assert_array_equal(_sketch.sign_sketch(6, ids, signs, 3, p, t, 0, CB32),
                                          ref)
            # the float kernel's equal-magnitude path counts the same way
            np.testing.assert_array_equal(
                _sketch.global_sketch(6, ids, w.astype(np.float64), p, t, CB32),
                ref.astype(np.float64))


def test_q4x32_deep_counts_ripple_through_every_high_plane(caps):
    # 70,000 identities, nearly all of one sign: the counts (about n / 2 per
    # position) reach plane 15, through the 256s ripple of the second tree
    n, p = 70_000, 200
    ids = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    signs = np.ones(n, dtype=np.int8)
    signs[::97] = -1
    caps(0)
    ref = _sketch.sign_sketch(5, ids, signs, 1, p, 1, 0, CB32)
    # sum_i s_i R_i(e): bounded by n, with the parity of n
    assert np.all(np.abs(ref) <= n) and np.all(ref % 2 == n % 2)
    caps(3)
    for t in (1, 2):
        np.testing.assert_array_equal(_sketch.sign_sketch(5, ids, signs, 1, p, t, 0, CB32), ref)
        np.testing.assert_array_equal(
            _sketch.fixed_sketch(5, ids, signs.astype(np.int64), p, t, 0, CB32), ref)
        np.testing.assert_array_equal(
            _sketch.global_sketch(5, ids, signs.astype(np.float64), p, t, CB32),
            ref.astype(np.float64))
