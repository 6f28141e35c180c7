"""ExactSum.value's shortcut for a sum of one integer vector (one ``add_integers``).

The shortcut rounds the int64 values straight to doubles and scales them by a
power of two; the general path (``_exact.to_double`` over the digit rows) is
the reference. They must agree bit for bit, including halfway cases (values
above 2**53 whose low bits sit exactly between two doubles) and signs.
"""

import numpy as np
import pytest

from fastldp._kernels import _exact
from fastldp.streaming import ExactSum


def _general(s: ExactSum) -> np.ndarray:
    return _exact.to_double(s.digits, s.k_lo)


def _hard_values(rng) -> np.ndarray:
    """int64 values with every rounding case: exact, halfway (odd and even), near 2**62."""
    base = rng.integers(-(1 << 62), 1 << 62, 4000, dtype=np.int64)
    halfway = (rng.integers(1 << 52, 1 << 53, 500, dtype=np.int64) << 11) | (1 << 10)  # ties
    above = halfway + 1
    below = halfway - 1
    small = rng.integers(-5000, 5000, 500, dtype=np.int64)
    v = np.concatenate([base, halfway, -halfway, above, -below, small, [0, 1, -1, (1 << 62)]])
    return v.astype(np.int64)


@pytest.mark.parametrize("shift", [-1000, -95, -33, -1, 0, 7, 64, 900])
def test_one_integer_vector_rounds_as_the_digits_do(shift):
    v = _hard_values(np.random.default_rng(shift & 0xFFFF))
    s = ExactSum(v.shape[0])
    s.add_integers(v, shift)
    assert s._single is not None
    fast = s.value()
    assert fast.tobytes() == _general(s).tobytes()
    # the halfway cases really are ties (the test would not bite without them)
    ties = (np.abs(v) > (1 << 53)) & ((np.abs(v) & 0x7FF) == 0x400)
    assert ties.sum() >= 500


def test_outside_the_safe_shifts_the_digits_decide():
    v = np.array([3, -(1 << 61) - 1, 12345], dtype=np.int64)
    for shift in (-1080, -1001, 901, 960):
        s = ExactSum(3)
        s.add_integers(v, shift)
        assert s.value().tobytes() == _general(s).tobytes()


def test_any_further_change_drops_the_shortcut():
    rng = np.random.default_rng(4)
    v = rng.integers(-(1 << 40), 1 << 40, 64, dtype=np.int64)
    w = rng.integers(-(1 << 40), 1 << 40, 64, dtype=np.int64)
    for change in ("add_integers", "add", "add_multiples", "merge", "pickle"):
        s = ExactSum(64)
        s.add_integers(v, -20)
        if change == "add_integers":
            s.add_integers(w, -3)
        elif change == "add":
            s.add(w.astype(np.float64) * 0.25)
        elif change == "add_multiples":
            s.add_multiples(w >> 8, 0.1)
        elif change == "merge":
            other = ExactSum(64)
            other.add_integers(w, 5)
            s = s.merge(other)
        else:
            import pickle
            s = pickle.loads(pickle.dumps(s))
        assert s._single is None, change
        assert s.value().tobytes() == _general(s).tobytes()
    # a first sum of v alone equals the exact value v 2^-20
    s = ExactSum(64)
    s.add_integers(v, -20)
    assert np.array_equal(s.value(), v.astype(np.float64) * 2.0**-20)


def test_the_caller_may_reuse_its_array():
    v = np.arange(1, 9, dtype=np.int64)
    s = ExactSum(8)
    s.add_integers(v, -2)
    v[:] = 0
    assert np.array_equal(s.value(), np.arange(1, 9) * 0.25)


def test_integer_vectors_at_one_shift_keep_a_running_sum():
    rng = np.random.default_rng(9)
    s = ExactSum(300)
    total = np.zeros(300, dtype=object)
    for _ in range(5):
        v = rng.integers(-(1 << 60), 1 << 60, 300, dtype=np.int64)
        s.add_integers(v, -33)
        total += v.astype(object)
    assert s._single is not None
    assert s.value().tobytes() == _general(s).tobytes()
    assert [int(t) for t in s._single[0]] == list(total)
    # a sum that could reach 2**62 falls back to the digits, with the same value
    s.add_integers(np.full(300, (1 << 62) - 1, dtype=np.int64), -33)
    assert s._single is None
    assert s.value().tobytes() == _general(s).tobytes()
    # INT64_MIN does not fool the bound
    t = ExactSum(2)
    t.add_integers(np.array([1, 2], dtype=np.int64), 0)
    t.add_integers(np.array([np.iinfo(np.int64).min, 0], dtype=np.int64), 0)
    assert t._single is None
    assert t.value().tobytes() == _general(t).tobytes()
