"""Exact sums and the JPRS partial / merge / finalize protocol.

``ExactSum`` is checked against ``fractions.Fraction`` (exact rational
arithmetic, then one correct rounding), so nothing here shares code with the
kernel. The JPRS checks split the reports at random points, merge the
partials in a random order and require the one-shot estimate bit for bit.
"""


import pickle
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

import fastldp
from fastldp.streaming import ExactSum, Partial, gamma_fixed_point, merge_all


def exact_reference(values, index, size):
    acc = [Fraction(0)] * size
    for v, j in zip(values, index):
        acc[int(j)] += Fraction(float(v))
    return np.array([float(a) for a in acc])


# 40 terms below 1e300 cannot overflow; subnormals and signed zeros included
finite = st.floats(min_value=-1e300, max_value=1e300, width=64)


@settings(max_examples=150, deadline=None, derandomize=True)
@given(st.lists(st.tuples(finite, st.integers(0, 3)), max_size=40), st.integers(0, 40))
def test_exact_sum_is_the_correctly_rounded_exact_sum(terms, cut):
    values = np.array([v for v, _ in terms], dtype=np.float64)
    index = np.array([j for _, j in terms], dtype=np.int64)
    want = exact_reference(values, index, 4)
    a, b = ExactSum(4), ExactSum(4)
    a.add(values[:cut], index[:cut])
    b.add(values[cut:], index[cut:])
    for merged in (a.merge(b), b.merge(a)):
        np.testing.assert_array_equal(merged.value(), want)
    assert a.merge(b) == b.merge(a)


def test_exact_sum_cancellation_and_extremes():
    s = ExactSum(3)
    s.add([1e308, 1.0, 5e-324], [0, 1, 2])
    s.add([-1e308, 2.0**-1074, 5e-324], [0, 1, 2])
    s.add([2.0**-60, -1.0, 0.0], [0, 1, 2])
    np.testing.assert_array_equal(s.value(), [2.0**-60, 2.0**-1074, 1e-323])
    # ties round to even: 2^53 + 1 is halfway between two doubles
    t = ExactSum(1)
    t.add([2.0**53, 1.0], [0, 0])
    assert t.value()[0] == 2.0**53
    t.add([2.0**-40], [0])  # a hair above the tie rounds up
    assert t.value()[0] == 2.0**53 + 2


def test_exact_sum_integers_and_many_additions():
    s = ExactSum(2)
    s.add_integers(np.array([2**62, -(2**63)], dtype=np.int64), shift=-40)
    s.add_integers(np.array([2**62, 2**63 - 1], dtype=np.int64), shift=-40)
    assert s.value()[0] == float(Fraction(2**63, 2**40))
    assert s.value()[1] == float(Fraction(-1, 2**40))
    many = ExactSum(1)
    rng = np.random.default_rng(0)
    v = rng.standard_normal(200_000)
    many.add(v, np.zeros(v.shape[0], dtype=np.int64))
    assert many.value()[0] == float(sum(Fraction(x) for x in v.tolist()))


def test_exact_sum_rejects_non_finite_and_bad_index():
    s = ExactSum(2)
    with pytest.raises(ValueError, match="finite"):
        s.add([1.0, np.nan], [0, 1])
    with pytest.raises(ValueError, match="index"):
        s.add([1.0], [2])
    with pytest.raises(ValueError):
        s.merge(ExactSum(3))


def test_partial_bytes_and_pickle_round_trip():
    s = ExactSum(5)
    s.add(np.linspace(-3, 3, 5))
    p = Partial("X", {"a": 1}, sums={"v": s}, counts={"n": 2**70}, minima={"e": 0.1},
                maxima={"e": None}, flags={"wrong_dtype": True})
    assert Partial.from_bytes(p.to_bytes()) == p
    assert pickle.loads(pickle.dumps(p)) == p
    with pytest.raises(ValueError, match="partial"):
        Partial.from_bytes(b"not a partial")
    with pytest.raises(ValueError, match="merge"):
        p.merge(Partial("Y", {"a": 1}, sums={"v": s}, counts={"n": 1}))
    with pytest.raises(ValueError, match="merge"):
        p.merge(Partial("X", {"a": 2}, sums={"v": s}, counts={"n": 1}))


def test_gamma_fixed_point_keeps_tiny_budgets():
    eps = np.array([1e-150, 1e-20, 2.0**-40, 0.5, 3.0, 700.0])
    q, x = gamma_fixed_point(eps)
    assert np.all((q >= 2**31) & (q <= 2**32))
    gamma = np.tanh(eps / 2)
    approx = np.ldexp(q.astype(float), (x - 32).astype(int))
    assert np.all(np.abs(approx / gamma - 1) <= 2.0**-32 * (1 + 1e-12))


# ---------------------------------------------------------------- JPRS
def _jprs_case(n, mixed, seed=0):
    rng = np.random.default_rng(seed)
    mech = fastldp.JPRS(shape=(6, 7), k=3, s=4, codebook_seed=99, n_threads=2)
    sets = [np.array([[i % 6, (3 * i) % 7]]) for i in range(n)]
    eps = rng.uniform(0.05, 6.0, n) if mixed else np.full(n, 1.25)
    bits = mech.privatize(sets, epsilons=eps, rng=seed).astype(np.float64)
    # a few malformed packets, sanitized and counted the same in every split
    bits[rng.choice(n, 5, replace=False)] = [0.0, np.nan, 3.5, -np.inf, -1.0]
    ids = rng.choice(2**40, n, replace=False).astype(np.uint64)
    return mech, bits, eps, ids


def _assert_same_estimate(a, b):
    np.testing.assert_array_equal(a.sketch, b.sketch)
    np.testing.assert_array_equal(a.matrix, b.matrix)
    for x, y in zip(a.support, b.support):
        np.testing.assert_array_equal(x, y)
    assert a.budget == b.budget
    assert a.sanitization == b.sanitization


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 400), max_size=6), st.booleans(), st.randoms(use_true_random=False))
def test_jprs_split_and_merge_is_bit_identical(cuts, mixed, order):
    mech, bits, eps, ids = _jprs_case(400, mixed)
    one_shot = mech.estimate(bits, epsilons=eps, identities=ids)
    edges = [0] + sorted(cuts) + [400]
    parts = [mech.partial(bits[a:b], eps[a:b], identities=ids[a:b])
             for a, b in zip(edges[:-1], edges[1:])]
    order.shuffle(parts)
    merged = parts[0]
    for p in parts[1:]:
        merged = mech.merge(merged, p) if order.random() < 0.5 else mech.merge(p, merged)
    _assert_same_estimate(mech.finalize(merged), one_shot)
    _assert_same_estimate(mech.finalize(merge_all(reversed(parts))), one_shot)


def test_jprs_partial_is_o_p_and_serializes():
    mech, bits, eps, ids = _jprs_case(3000, True, seed=3)
    small = mech.partial(bits[:30], eps[:30], identities=ids[:30])
    big = mech.partial(bits, eps, identities=ids)
    assert len(big.to_bytes()) <= len(small.to_bytes()) + 4 * 8 * mech.p  # a few digit rows
    back = Partial.from_bytes(big.to_bytes())
    _assert_same_estimate(mech.finalize(back), mech.estimate(bits, epsilons=eps, identities=ids))
    _assert_same_estimate(mech.finalize(pickle.loads(pickle.dumps(big))),
                          mech.estimate(bits, epsilons=eps, identities=ids))


def test_jprs_refuses_other_partials_and_empty_decodes():
    mech, bits, eps, ids = _jprs_case(100, True)
    other = fastldp.JPRS(shape=(6, 7), k=3, s=4, codebook_seed=100)
    p = mech.partial(bits, eps, identities=ids)
    with pytest.raises(ValueError, match="codebook_seed"):
        other.finalize(p)
    with pytest.raises(ValueError, match="merge"):
        mech.merge(p, other.partial(bits, eps, identities=ids))
    with pytest.raises(TypeError, match="partial"):
        mech.finalize({"n": 1})
    empty = mech.partial(bits[:0], eps[:0], identities=ids[:0])
    with pytest.raises(ValueError, match="no reports"):
        mech.finalize(empty)
    _assert_same_estimate(mech.finalize(mech.merge(empty, p)), mech.finalize(p))


def test_jprs_thread_count_does_not_change_the_partial():
    mech, bits, eps, ids = _jprs_case(2000, True)
    one = fastldp.JPRS(shape=(6, 7), k=3, s=4, codebook_seed=99, n_threads=1)
    assert one.partial(bits, eps, ids) == mech.partial(bits, eps, ids)





def test_add_repeated_equals_repeated_additions():
    for value, count in ((0.1, 65536), (-1e-300, 12345), (3.0, 1), (2.0**-1074, 7),
                         (1.7976931348623157e308, 1), (np.tanh(0.375) ** 2, 2**20)):
        a, b = ExactSum(1), ExactSum(1)
        a.add_repeated(value, count)
        b.add(np.full(count, value), np.zeros(count, dtype=np.int64))
        assert a == b
        assert a.value()[0] == float(Fraction(value) * count)
    with pytest.raises(ValueError):
        ExactSum(1).add_repeated(np.nan, 2)


def test_add_multiples_and_the_integer_fast_path_of_value():
    from fastldp._kernels import _exact

    rng = np.random.default_rng(5)
    counts = rng.integers(-(2**35), 2**35, 6)
    for value in (0.1, -3.75e-200, 2.0**60 + 2.0**8, 1.0):
        a = ExactSum(6)
        a.add_multiples(counts, value)
        want = [float(Fraction(value) * int(c)) for c in counts]
        np.testing.assert_array_equal(a.value(), want)
    with pytest.raises(ValueError, match="counts"):
        ExactSum(1).add_multiples([2**36], 1.0)
    with pytest.raises(ValueError, match="count"):
        ExactSum(1).add_repeated(1.0, -1)
    # integer sums take value()'s int64 path; it must agree with the general rounding
    for big in (2**20, 2**52 + 1, 2**59 - 1, 2**61 + 3):
        s = ExactSum(4)
        s.add_integers(np.array([big, -big, 7, big // 3], dtype=np.int64))
        s.add_integers(np.array([big, 1, -7, big], dtype=np.int64))
        np.testing.assert_array_equal(s.value(), _exact.to_double(s.digits, s.k_lo))
