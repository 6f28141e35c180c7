"""The global sketch kernel against its naive twin, and thread-count invariance."""

import numpy as np
import pytest

from fastldp._kernels import _sketch
from _reference import naive_sketch


@pytest.mark.parametrize("n,p", [(1, 1), (7, 255), (8, 256), (9, 257), (20, 64), (1030, 300), (2100, 513)])
def test_sketch_equals_naive_exactly_for_dyadic_weights(n, p):
    # Dyadic weights with few bits make every partial sum exact, so any
    # summation order must give the identical double: equality is exact.
    rng = np.random.default_rng(n * 1000 + p)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = rng.integers(-2**10, 2**10, n) / 2.0**8
    got = _sketch.global_sketch(123, ids, w, p, 2)
    np.testing.assert_array_equal(got, naive_sketch(123, ids, w, p))


def test_sketch_close_to_naive_for_general_weights():
    rng = np.random.default_rng(1)
    n, p = 300, 1000
    ids = np.arange(n, dtype=np.uint64)
    w = rng.standard_normal(n)
    got = _sketch.global_sketch(5, ids, w, p, 1)
    ref = naive_sketch(5, ids, w, p)
    # n rounding errors of at most eps * |partial| each
    tol = n * np.finfo(float).eps * np.abs(w).sum()
    assert np.max(np.abs(got - ref)) <= tol


@pytest.mark.parametrize("p", [4096, 1000])
def test_bit_identical_for_any_thread_count(p):
    rng = np.random.default_rng(2)
    n = 5 * 1024 + 77  # several chunks and a ragged last one
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = rng.standard_normal(n)
    runs = [_sketch.global_sketch(9, ids, w, p, t) for t in (1, 2, 3, 4)]
    for other in runs[1:]:
        assert np.array_equal(runs[0], other)
        assert runs[0].tobytes() == other.tobytes()


def test_empty_population_gives_zero_sketch():
    out = _sketch.global_sketch(1, np.empty(0, np.uint64), np.empty(0), 10, 2)
    np.testing.assert_array_equal(out, np.zeros(10))


def test_length_mismatch_raises():
    with pytest.raises(ValueError, match="same length"):
        _sketch.global_sketch(1, np.zeros(3, np.uint64), np.zeros(2), 10, 1)


@pytest.mark.parametrize("n,p", [(1, 5), (15, 64), (16, 256), (17, 300), (1025, 1000), (3000, 4097)])
def test_equal_magnitude_path_equals_naive_exactly(n, p):
    # Homogeneous budgets give weights +-c; the kernel then counts signs in
    # integers. With a dyadic c both it and the naive sum are exact.
    rng = np.random.default_rng(n + 7 * p)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    w = rng.choice([-0.125, 0.125], n)
    np.testing.assert_array_equal(_sketch.global_sketch(4, ids, w, p, 2), naive_sketch(4, ids, w, p))


def test_equal_magnitude_path_is_c_times_an_integer():
    rng = np.random.default_rng(3)
    n, p, c = 2000, 700, 0.3
    ids = np.arange(n, dtype=np.uint64)
    w = rng.choice([-c, c], n)
    got = _sketch.global_sketch(4, ids, w, p, 2)
    counts = naive_sketch(4, ids, np.sign(w), p)  # exact integers
    np.testing.assert_array_equal(got, c * counts)
    assert [_sketch.global_sketch(4, ids, w, p, t).tobytes() for t in (1, 3)] == [got.tobytes()] * 2


@pytest.mark.parametrize("bits,eps", [([0, 1], [1.0, 1.0]), ([2, 1], [1.0, 1.0]),
                                      ([1, -1], [1.0, np.nan]), ([1, -1], [1.0, 0.0])])
def test_jprs_kernel_rejects_what_the_decoder_rejects(bits, eps):
    # equal budgets take the counting path, which reads only the sign bit
    with pytest.raises(ValueError, match="bits must be -1 or \\+1 and eps finite"):
        _sketch.jprs_sketch(1, np.array(bits, np.int8), np.array(eps), 1.0, None, 8)


def test_jprs_kernel_rejects_a_bad_scale():
    with pytest.raises(ValueError, match="scale must be finite"):
        _sketch.jprs_sketch(1, np.ones(2, np.int8), np.ones(2), np.inf, None, 8)
