"""The AVX-512 table path of ``fixed_sketch`` (issue 38, item 1) against the naive twin.

The path looks up sixteen-entry int64 tables of four identities eight
positions at a time (vpermt2q), keeps its sums in the lane order of the
vectors (undone at the end), and computes block ``b + 1``'s Philox4x64-10
words inside block ``b``'s loop. The sizes below put identities on and off
the 8-identity octets and 128-identity tiles, and pairs on and off the
64-pair words and 256-pair blocks (one block: nothing to pipeline; a last
word past ``p``: the generation that the table loop did not reach).
Every sum is an exact integer, so every comparison is exact.
"""

import numpy as np
import pytest

from fastldp._kernels import _sketch
from fastldp._kernels._hash import pair_signs
from _fixed_twins import naive_fixed, table_weights, with_simd_cap

CB32 = "philox4x32-10"


def avx512_cpu():
    try:
        with open("/proc/cpuinfo") as fh:
            flags = set(fh.read().split())
    except OSError:
        return None
    return {"avx512f", "avx512bw", "avx512vbmi", "gfni", "bmi2"} <= flags


def test_table_path_follows_the_cpu_features():
    has = avx512_cpu()
    if has is None:
        pytest.skip("no /proc/cpuinfo")
    top = with_simd_cap(3, _sketch.fixed_table_path)
    if with_simd_cap(3, _sketch.simd_level) == 0:
        assert top == "portable"  # FASTLDP_PORTABLE build: plain C everywhere
        return
    assert top == ("avx512" if has else "sse2")
    # below level 3 the SSE2 tables run, on every x86-64
    assert with_simd_cap(2, _sketch.fixed_table_path) == "sse2"
    assert with_simd_cap(0, _sketch.fixed_table_path) == "sse2"


@pytest.mark.parametrize("codebook", ["philox4x64-10", CB32])
@pytest.mark.parametrize("n,p", [(1, 1), (3, 64), (7, 65), (8, 255), (9, 256), (16, 257),
                                 (127, 100), (128, 512), (129, 513), (300, 700),
                                 (1100, 1000)])
def test_every_table_path_equals_naive_exactly(codebook, n, p):
    rng = np.random.default_rng(31 * n + p)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = table_weights(rng, n)
    ref = naive_fixed(17, ids, w, p, codebook)
    for cap in (3, 2, 0):
        for t in (1, 2):
            got = with_simd_cap(cap, lambda: _sketch.fixed_sketch(17, ids, w, p, t, 0, codebook))
            assert got.dtype == np.int64 and got.shape == (p,)
            np.testing.assert_array_equal(got, ref, err_msg=f"cap {cap}, {t} threads")


@pytest.mark.parametrize("n,p", [(5, 300), (130, 64), (257, 1)])
def test_counted_identities_wrap_on_the_avx512_path(n, p):
    # identities None: first_identity + i, wrapping past 2**64
    rng = np.random.default_rng(n + p)
    w = table_weights(rng, n)
    first = 2**64 - 3
    ref = naive_fixed(8, np.uint64(first) + np.arange(n, dtype=np.uint64), w, p)
    for cap in (3, 2):
        got = with_simd_cap(cap, lambda: _sketch.fixed_sketch(8, None, w, p, 2, first))
        np.testing.assert_array_equal(got, ref)


def test_paths_agree_at_the_benchmark_shape():
    # the shape of bench/compare.py (p = 4,096: sixteen blocks, every block
    # but the last pipelined), over several chunks and tiles; the SSE2 path
    # is itself held to the twin above
    rng = np.random.default_rng(2026)
    n, p = 20_000 + 37, 4096
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = table_weights(rng, n)
    fast = [with_simd_cap(3, lambda: _sketch.fixed_sketch(99, ids, w, p, t)) for t in (1, 2)]
    sse2 = with_simd_cap(2, lambda: _sketch.fixed_sketch(99, ids, w, p, 2))
    np.testing.assert_array_equal(fast[0], sse2)
    np.testing.assert_array_equal(fast[1], sse2)
    # and a few positions against the twin directly
    for e in rng.integers(0, p, 3):
        signs = pair_signs(99, ids, np.full(n, e, dtype=np.int64)).astype(np.int64)
        assert fast[0][e] == int(np.dot(signs, w))
