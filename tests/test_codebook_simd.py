"""The opt-in codebook's AVX-512 kernels (issue 38, item 2) against its portable words.

With AVX-512 the ``philox4x32-10`` codebook runs Philox4x32-10 in 64-bit
lanes, four identities' runs of four blocks per call (pair_blocks.h), and
the equal-magnitude counting adds the words to the bit planes straight from
the registers (jprs_count.h). Every result must equal the scalar C's (SIMD
cap 0, the code a ``FASTLDP_PORTABLE`` build runs): block counts that are
not a multiple of four (a partial last quad), groups that are not a
multiple of four or sixteen identities, counts deep enough to ripple into
the high planes, and one and two threads. On a CPU without AVX-512 the
same tests compare the AVX2 and scalar paths.
"""
import numpy as np
import pytest

from fastldp._kernels import _hash, _sketch

CB32 = "philox4x32-10"
CB64 = "philox4x64-10"


@pytest.fixture
def caps():
    """Set both kernel modules' SIMD cap; restore the old caps afterwards."""
    old = (_hash.set_simd_cap(3), _sketch.set_simd_cap(3))

    def set_cap(cap):
        _hash.set_simd_cap(cap)
        _sketch.set_simd_cap(cap)

    yield set_cap
    _hash.set_simd_cap(old[0])
    _sketch.set_simd_cap(old[1])


def test_blocks_at_every_level_in_ragged_groups(caps):
    rng = np.random.default_rng(11)
    ids = np.concatenate([rng.integers(0, 2**64, 21, dtype=np.uint64),
                          np.array([0, 2**32 - 1, 2**32, 2**64 - 1], dtype=np.uint64)])
    seed = 0xB7E151628AED2A6A
    for m in (1, 3, 4, 5, 15, 16, 17, 25):
        caps(0)
        ref = _hash.pair_blocks(seed, ids[:m], 9, CB32, batched=True)
        np.testing.assert_array_equal(ref, _hash.pair_blocks(seed, ids[:m], 9, CB32,
                                                             batched=False))
        for cap in (3, 2):
            caps(cap)
            np.testing.assert_array_equal(
                _hash.pair_blocks(seed, ids[:m], 9, CB32, batched=True), ref)


@pytest.mark.parametrize("nblocks", [1, 2, 3, 4, 5, 7, 8, 9])
def test_floor_folds_the_same_words_at_every_level(nblocks, caps):
    # the floor generates whole quads of blocks: the blocks past the last
    # one must not enter the fold, nor the padding identities of a group
    rng = np.random.default_rng(nblocks)
    ids = rng.integers(0, 2**64, 53, dtype=np.uint64)
    p = 256 * nblocks - 100
    for m in (1, 2, 3, 4, 5, 16, 17, 53):
        blocks = _hash.pair_blocks(3, ids[:m], nblocks, CB32, batched=False)
        expected = int(np.bitwise_xor.reduce(blocks.ravel()))
        for cap in (3, 2, 0):
            caps(cap)
            for t in (1, 2):
                assert _hash.philox_floor(3, ids[:m], p, t, CB32) == expected


def naive_counts(seed, ids, w, p):
    """sum_i w_i R_i(e) from the scalar signs (cap 0), exact int64."""
    out = np.zeros(p, dtype=np.int64)
    pairs = np.arange(p, dtype=np.int64)
    for ident, wi in zip(ids, w):
        signs = _hash.pair_signs(seed, np.full(p, ident, dtype=np.uint64), pairs, CB32)
        out += int(wi) * signs.astype(np.int64)
    return out


@pytest.mark.parametrize("n,p", [(1, 1), (5, 255), (19, 257), (33, 769), (64, 1024),
                                 (70, 1025), (41, 1300)])
def test_equal_magnitude_counts_equal_the_naive_twin(n, p, caps):
    # the counting tree fed from the registers, partial last quads (the
    # masked plane words), groups of 1 .. 16 identities
    rng = np.random.default_rng(7 * n + p)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = np.where(rng.random(n) < 0.5, 9, -9).astype(np.int64)
    ref = naive_counts(21, ids, w, p)
    for cap in (3, 2, 0):
        caps(cap)
        for t in (1, 2):
            np.testing.assert_array_equal(_sketch.fixed_sketch(21, ids, w, p, t, 0, CB32), ref)
            np.testing.assert_array_equal(
                _sketch.global_sketch(21, ids, w.astype(np.float64), p, t, CB32),
                ref.astype(np.float64))


def test_deep_counts_ripple_through_the_high_planes(caps):
    # 5,000 identities of one sign: counts near n need every high plane,
    # and the vector read-back converts them to doubles
    n, p = 5000, 600
    ids = np.arange(n, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    w = np.full(n, 2, dtype=np.int64)
    w[::7] = -2
    caps(0)
    ref_fixed = _sketch.fixed_sketch(5, ids, w, p, 1, 0, CB32)
    ref_float = _sketch.global_sketch(5, ids, w.astype(np.float64), p, 1, CB32)
    np.testing.assert_array_equal(ref_float, ref_fixed.astype(np.float64))
    # the sketch is sum_i w_i R_i(e): its parity and bound are those of 2n
    assert np.all(np.abs(ref_fixed) <= 2 * n) and np.all(ref_fixed % 4 == (2 * n) % 4)
    for cap in (3, 2):
        caps(cap)
        for t in (1, 2):
            np.testing.assert_array_equal(_sketch.fixed_sketch(5, ids, w, p, t, 0, CB32),
                                          ref_fixed)
            np.testing.assert_array_equal(
                _sketch.global_sketch(5, ids, w.astype(np.float64), p, t, CB32), ref_float)


@pytest.mark.parametrize("scale,eps", [(1.0, 0.8), (3e-5, 1e-3), (1e-290, 1e-12),
                                       (1e-300, 1e-310), (1e-10, 5e-324)])
def test_jprs_sketch_signs_without_tanh_match_the_weights(scale, eps, caps):
    # the counting path takes w_i < 0 from the signs of scale, eps and bits
    # where the product is a normal number, and from the weight itself in the
    # tiny cases (1e-290 * 5e-13 and below); every case equals cap 0's
    # fastldp_source_weight(...) < 0
    rng = np.random.default_rng(17)
    n, p = 150, 300
    bits = np.where(rng.random(n) < 0.4, 1, -1).astype(np.int8)
    e = np.full(n, eps)
    caps(0)
    ref = _sketch.jprs_sketch(9, bits, e, scale, None, p, 1, CB32)
    for cap in (3, 2):
        caps(cap)
        for t in (1, 2):
            np.testing.assert_array_equal(_sketch.jprs_sketch(9, bits, e, scale, None, p, t, CB32),
                                          ref)
