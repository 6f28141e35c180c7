"""The opt-in codebook's general-weight table path at SIMD level 3 (issue 38, item 2).

With philox4x32-10 and AVX-512 F/BW/VBMI + GFNI, ``fixed_sketch`` takes
``fastldp_fixed_table_range_q4x32`` (jprs_fixed.h): the words of sixteen
identities come from the SIMD generator's registers as it leaves them (lane
``2i + h`` of vector ``s``: sub-block ``h`` of identity ``4s + i``), a
two-source byte permute picks each octet's word out of two of those vectors,
and block ``b + 1`` of group ``g`` is generated inside block ``b``'s table
loop (at octet ``8 (g // 4)`` of word ``g % 4``). The sizes below put the
identities on and off the 8-identity octets, 16-identity generator groups
(a padded last group), the groups generated at octet 8 (more than 64
identities in a tile) and the 128-identity tiles, and the pairs on and off
the 64-pair words and 256-pair blocks (one block: nothing generated ahead;
a last block cut inside a word). Lower SIMD levels (AVX2 blocks with SSE2
tables, scalar C) and a naive twin built from the scalar codebook signs
(``pair_signs``) give the reference; every sum is an exact integer, so every
comparison is exact.
"""

import numpy as np
import pytest

from fastldp._kernels import _sketch
from fastldp._kernels._hash import pair_signs
from _fixed_twins import naive_fixed, table_weights, with_simd_cap

CB32 = "philox4x32-10"
MAX_MASS = 2**61  # max|w| * max(n, 16) <= 2**61: fixed_sketch's batch limit


def all_levels(seed, ids, w, p, first=0):
    """{(cap, threads): fixed_sketch} at SIMD caps 3, 2, 0 on 1 and 2 threads."""
    return {(cap, t): with_simd_cap(cap, lambda: _sketch.fixed_sketch(seed, ids, w, p, t, first, CB32))
            for cap in (3, 2, 0) for t in (1, 2)}


@pytest.mark.parametrize("n,p", [(1, 1), (5, 63), (15, 64), (16, 65), (17, 255), (33, 256),
                                 (65, 257), (96, 300), (127, 511), (128, 512), (129, 769),
                                 (200, 100), (257, 1000)])
def test_level_3_equals_naive_and_lower_levels(n, p):
    rng = np.random.default_rng(1000 * n + p)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = table_weights(rng, n)
    ref = naive_fixed(23, ids, w, p, CB32)
    for (cap, t), got in all_levels(23, ids, w, p).items():
        assert got.dtype == np.int64 and got.shape == (p,)
        np.testing.assert_array_equal(got, ref, err_msg=f"cap {cap}, {t} threads")


@pytest.mark.parametrize("sign", [1, -1, 0])
def test_weights_at_the_batch_limit_both_signs(sign):
    # |w| = 2**61 / max(n, 16): the largest weights a batch allows, all of one
    # sign (sign 0: mixed) and unequal (the table path)
    n, p = 40, 700
    limit = MAX_MASS // n
    rng = np.random.default_rng(7 + sign)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = table_weights(rng, n, limit)
    if sign:
        w = sign * np.abs(w)
        w[0] = sign * limit
    ref = naive_fixed(5, ids, w, p, CB32)
    for (cap, t), got in all_levels(5, ids, w, p).items():
        np.testing.assert_array_equal(got, ref, err_msg=f"cap {cap}, {t} threads")


@pytest.mark.parametrize("n,p", [(5, 300), (130, 64), (257, 1)])
def test_counted_identities_wrap(n, p):
    # identities None: first_identity + i, wrapping past 2**64
    rng = np.random.default_rng(n * p + 1)
    w = table_weights(rng, n)
    first = 2**64 - 3
    ref = naive_fixed(8, np.uint64(first) + np.arange(n, dtype=np.uint64), w, p, CB32)
    for (cap, t), got in all_levels(8, None, w, p, first).items():
        np.testing.assert_array_equal(got, ref, err_msg=f"cap {cap}, {t} threads")


def test_threads_and_levels_agree_over_many_chunks():
    # several 1024-identity chunks (two threads share them) and tiles, a
    # ragged last tile and group, p past a whole number of blocks
    rng = np.random.default_rng(38)
    n, p = 5 * 1024 + 77, 1300
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = table_weights(rng, n)
    got = all_levels(99, ids, w, p)
    ref = got[(0, 1)]
    for key, value in got.items():
        np.testing.assert_array_equal(value, ref, err_msg=f"cap, threads = {key}")
    # and a few positions against the twin directly
    for e in rng.integers(0, p, 3):
        signs = pair_signs(99, ids, np.full(n, e, dtype=np.int64), CB32).astype(np.int64)
        assert ref[e] == int(np.dot(signs, w))


@pytest.mark.slow
def test_benchmark_shape_levels_agree():
    # the benchmark's shape (n = 128,000, p = 4,096) with personal-budget-like
    # weights scaled to 2**32; its fast sibling is the test above
    rng = np.random.default_rng(2026)
    n, p = 128_000, 4096
    w = table_weights(rng, n)
    fast = [with_simd_cap(3, lambda: _sketch.fixed_sketch(3, None, w, p, t, 0, CB32)) for t in (1, 2)]
    lower = with_simd_cap(2, lambda: _sketch.fixed_sketch(3, None, w, p, 2, 0, CB32))
    np.testing.assert_array_equal(fast[0], lower)
    np.testing.assert_array_equal(fast[1], lower)
    ids = np.arange(n, dtype=np.uint64)
    for e in rng.integers(0, p, 2):
        signs = pair_signs(3, ids, np.full(n, e, dtype=np.int64), CB32).astype(np.int64)
        assert fast[0][e] == int(np.dot(signs, w))
