"""Fuzzing the compiled kernels against their naive twins (tests/_reference.py).

Every property runs a kernel and an obvious, independent Python model side by
side on Hypothesis-generated inputs (the pyroaring habit), and checks that
each kernel rejects what its wrappers reject. The example counts are fixed
per test so the whole fuzz suite stays within its CI budget (see
tests/conftest.py); ``HYPOTHESIS_PROFILE=fastldp-fuzz-long`` multiplies them.
"""

import numpy as np
import pytest
import scipy.linalg
from hypothesis import given
from hypothesis import strategies as st

from fastldp._kernels._hadamard import fwht, hadamard_entries
from fastldp._kernels._hash import hash_blocks, pair_signs, philox4x64_10, set_sign_sums
from fastldp._kernels._olh import olh_bucket_search, olh_buckets, olh_support
from fastldp._kernels._projection import project_capped_simplex, project_sparse_capped
from fastldp._kernels._sketch import global_sketch, jprs_sketch

from _reference import (
    brute_force_sparse_projection,
    capped_simplex_bisection,
    naive_jprs_sketch,
    naive_sketch,
    numpy_olh_bucket,
    numpy_philox_block,
    numpy_sign_row,
)
from conftest import fuzz

u64 = st.integers(0, 2**64 - 1)
small_ids = st.lists(st.integers(0, 2**64 - 1), min_size=1, max_size=6, unique=True)
finite = st.floats(-1e6, 1e6, allow_nan=False, allow_infinity=False)


# ---------------------------------------------------------------- _hash
@fuzz(40)
@given(seed=u64, identity=u64, block=st.integers(0, 2**40), stream=st.integers(0, 3))
def test_philox_block_matches_numpy(seed, identity, block, stream):
    got = hash_blocks(seed, np.array([identity], dtype=np.uint64), 1, stream)
    # hash_blocks starts at block 0; compare philox4x64_10 directly for an arbitrary block
    want = numpy_philox_block(seed, identity, block, stream)
    direct = philox4x64_10([block, stream, 0, 0], [seed, identity])
    np.testing.assert_array_equal(direct, want)
    np.testing.assert_array_equal(got[0, 0], numpy_philox_block(seed, identity, 0, stream))


@fuzz(30)
@given(seed=u64, ids=small_ids, p=st.integers(1, 700), data=st.data())
def test_pair_signs_and_set_sums_match_numpy_rows(seed, ids, p, data):
    ids_arr = np.array(ids, dtype=np.uint64)
    rows = {i: numpy_sign_row(seed, i, p) for i in ids}
    sets = [data.draw(st.lists(st.integers(0, p - 1), max_size=5)) for _ in ids]
    flat = np.array([e for s in sets for e in s], dtype=np.int64)
    owner = np.repeat(ids_arr, [len(s) for s in sets])
    if flat.size:
        got = pair_signs(seed, owner, flat)
        want = np.array([rows[int(i)][e] for i, e in zip(owner, flat)])
        np.testing.assert_array_equal(got, want)
    indptr = np.concatenate([[0], np.cumsum([len(s) for s in sets])]).astype(np.int64)
    sums = set_sign_sums(seed, ids_arr, indptr, flat, 2)
    np.testing.assert_array_equal(sums, [int(sum(rows[i][e] for e in s)) for i, s in zip(ids, sets)])


@fuzz(20)
@given(bad=st.integers(-2**40, -1))
def test_set_sign_sums_rejects_negative_pairs(bad):
    with pytest.raises(ValueError):
        set_sign_sums(1, np.zeros(1, dtype=np.uint64), np.array([0, 1], dtype=np.int64),
                      np.array([bad], dtype=np.int64))


# ---------------------------------------------------------------- _sketch
@fuzz(25)
@given(seed=u64, ids=small_ids, p=st.integers(1, 600), data=st.data())
def test_global_sketch_matches_naive(seed, ids, p, data):
    w = np.array(data.draw(st.lists(finite, min_size=len(ids), max_size=len(ids))))
    got = global_sketch(seed, np.array(ids, dtype=np.uint64), w, p, 2)
    np.testing.assert_allclose(got, naive_sketch(seed, ids, w, p), rtol=1e-12,
                               atol=1e-9 * (np.abs(w).sum() + 1))


@fuzz(25)
@given(seed=u64, n=st.integers(1, 6), p=st.integers(1, 400), k=st.integers(1, 4), data=st.data(),
       explicit_ids=st.booleans())
def test_jprs_sketch_matches_naive(seed, n, p, k, data, explicit_ids):
    bits = np.array(data.draw(st.lists(st.sampled_from([-1, 1]), min_size=n, max_size=n)), np.int8)
    equal = data.draw(st.booleans())
    eps = (np.full(n, data.draw(st.floats(0.05, 8))) if equal
           else np.array(data.draw(st.lists(st.floats(0.05, 8), min_size=n, max_size=n))))
    ids = np.arange(n, dtype=np.uint64) if not explicit_ids else np.array(
        data.draw(st.lists(u64, min_size=n, max_size=n, unique=True)), dtype=np.uint64)
    from fastldp.relations.calibration import kappa_k

    scale = np.sqrt(k) / (kappa_k(k) * float(np.sum(np.tanh(eps / 2) ** 2)))
    got = jprs_sketch(seed, bits, eps, scale, ids if explicit_ids else None, p, 2)
    want = naive_jprs_sketch(seed, ids, bits, eps, k, p)
    np.testing.assert_allclose(got, want, rtol=1e-9, atol=1e-12)


@fuzz(20)
@given(bit=st.integers(-128, 127).filter(lambda b: b not in (-1, 1)))
def test_jprs_sketch_rejects_bits_other_than_plus_minus_one(bit):
    with pytest.raises(ValueError):
        jprs_sketch(1, np.array([1, bit], dtype=np.int8), np.ones(2), 1.0, None, 4, 1)


@fuzz(20)
@given(scale=st.sampled_from([0.0, -1.0, np.nan, np.inf]),
       eps=st.sampled_from([0.0, -1.0, np.nan, np.inf]))
def test_jprs_sketch_rejects_bad_scale_and_budgets(scale, eps):
    with pytest.raises(ValueError):
        jprs_sketch(1, np.array([1], dtype=np.int8), np.ones(1), scale, None, 4, 1)
    with pytest.raises(ValueError):
        jprs_sketch(1, np.array([1], dtype=np.int8), np.array([eps]), 1.0, None, 4, 1)


# ---------------------------------------------------------------- _projection
@fuzz(50)
@given(y=st.lists(st.floats(-50, 50), min_size=1, max_size=30), k=st.floats(0, 40))
def test_capped_simplex_projection_matches_bisection(y, k):
    y = np.array(y)
    got = project_capped_simplex(y, k)
    want = capped_simplex_bisection(y, k)
    assert ((got >= 0) & (got <= 1)).all() and got.sum() <= k + 1e-9
    np.testing.assert_allclose(got, want, atol=1e-7)


@fuzz(30)
@given(v=st.lists(st.floats(-3, 3), min_size=1, max_size=7), data=st.data())
def test_sparse_projection_matches_brute_force(v, data):
    v = np.array(v)
    s = data.draw(st.integers(1, v.shape[0]))
    k = data.draw(st.floats(0.25, float(s)))
    x, _ = project_sparse_capped(v, s, k)
    _, best = brute_force_sparse_projection(v, s, k)
    assert np.count_nonzero(x) <= s
    assert float(np.sum((x - v) ** 2)) <= best + 1e-7


@fuzz(20)
@given(k=st.sampled_from([np.nan, -1.0, -np.inf, np.inf]),
       y=st.lists(st.floats(-5, 5), min_size=1, max_size=5))
def test_projection_rejects_bad_caps(k, y):
    with pytest.raises(ValueError):
        project_capped_simplex(np.array(y), k)
    with pytest.raises(ValueError):
        project_sparse_capped(np.array(y), 1, k)


@fuzz(20)
@given(y=st.lists(st.floats(-5, 5), min_size=1, max_size=5), pos=st.integers(0, 4),
       bad=st.sampled_from([np.nan, np.inf, -np.inf]))
def test_sparse_projection_rejects_non_finite_values(y, pos, bad):
    v = np.array(y)
    v[pos % v.shape[0]] = bad
    with pytest.raises(ValueError):
        project_sparse_capped(v, 1, 1.0)


# ---------------------------------------------------------------- _olh
@fuzz(40)
@given(seed=u64, identity=u64, item=st.integers(0, 2**40), g=st.integers(2, 2**32))
def test_olh_bucket_matches_numpy(seed, identity, item, g):
    got = olh_buckets(seed, np.array([identity], dtype=np.uint64), np.array([item], dtype=np.int64),
                      np.array([g], dtype=np.int64))
    assert int(got[0]) == numpy_olh_bucket(seed, identity, item, g)
    assert 0 <= int(got[0]) < g


@fuzz(25)
@given(seed=u64, ids=small_ids, p=st.integers(1, 40), data=st.data())
def test_olh_support_matches_naive(seed, ids, p, data):
    n = len(ids)
    g = np.array(data.draw(st.lists(st.integers(2, 9), min_size=n, max_size=n)), dtype=np.int64)
    reports = np.array([data.draw(st.integers(0, int(gi) - 1)) for gi in g], dtype=np.int64)
    w = np.array(data.draw(st.lists(st.floats(-10, 10), min_size=n, max_size=n)))
    got = olh_support(seed, np.array(ids, dtype=np.uint64), reports, g, w, p, 2)
    want = np.zeros(p)
    for i, ident in enumerate(ids):
        for x in range(p):
            if numpy_olh_bucket(seed, ident, x, int(g[i])) == reports[i]:
                want[x] += w[i]
    np.testing.assert_allclose(got, want, atol=1e-9)


@fuzz(25)
@given(seed=u64, ids=small_ids, data=st.data())
def test_olh_bucket_search_finds_the_best_bucket(seed, ids, data):
    n = len(ids)
    g = np.array(data.draw(st.lists(st.integers(2, 7), min_size=n, max_size=n)), dtype=np.int64)
    items = np.array(data.draw(st.lists(st.integers(0, 30), min_size=1, max_size=6)), np.int64)
    # integer weights: every bucket's mass is exact, so ties are exact too
    w = np.array(data.draw(st.lists(st.integers(0, 5), min_size=items.shape[0],
                                    max_size=items.shape[0])), dtype=np.float64)
    best, mass, n_max = olh_bucket_search(seed, np.array(ids, dtype=np.uint64), g, items, w, 1)
    for i, ident in enumerate(ids):
        scores = np.zeros(int(g[i]))
        for it, wt in zip(items, w):
            scores[numpy_olh_bucket(seed, ident, int(it), int(g[i]))] += wt
        assert mass[i] == scores.max() and scores[best[i]] == scores.max()
        assert n_max[i] == int(np.sum(scores == scores.max()))


@fuzz(20)
@given(g=st.integers(-5, 1), item=st.integers(-2**40, -1))
def test_olh_kernels_reject_what_the_wrappers_reject(g, item):
    one = np.zeros(1, dtype=np.uint64)
    with pytest.raises(ValueError):
        olh_buckets(1, one, np.zeros(1, np.int64), np.array([g], np.int64))
    with pytest.raises(ValueError):
        olh_buckets(1, one, np.array([item], np.int64), np.array([4], np.int64))
    with pytest.raises(ValueError):
        olh_bucket_search(1, one, np.array([g], np.int64), np.zeros(1, np.int64), np.ones(1))


@pytest.mark.parametrize("item", [-1, -2**40])
def test_olh_bucket_search_rejects_negative_items(item):
    with pytest.raises(ValueError):
        olh_bucket_search(1, np.zeros(1, np.uint64), np.array([4], np.int64),
                          np.array([item], np.int64), np.ones(1))


@pytest.mark.parametrize("g", [1, 0, -5])
def test_olh_support_rejects_fewer_than_two_buckets(g):
    with pytest.raises(ValueError):
        olh_support(1, np.zeros(1, np.uint64), np.zeros(1, np.int64), np.array([g], np.int64),
                    np.ones(1), 4, 1)


# ---------------------------------------------------------------- _hadamard
@fuzz(30)
@given(log_n=st.integers(0, 7), data=st.data())
def test_fwht_matches_the_hadamard_matrix(log_n, data):
    n = 2**log_n
    x = np.array(data.draw(st.lists(st.floats(-100, 100), min_size=n, max_size=n)))
    np.testing.assert_allclose(fwht(x), scipy.linalg.hadamard(n) @ x, atol=1e-9)


@fuzz(30)
@given(rows=st.lists(st.integers(0, 2**40), min_size=1, max_size=20), data=st.data())
def test_hadamard_entries_are_parities(rows, data):
    cols = data.draw(st.lists(st.integers(0, 2**40), min_size=len(rows), max_size=len(rows)))
    got = hadamard_entries(np.array(rows, dtype=np.longlong), np.array(cols, dtype=np.longlong))
    want = [1 - 2 * (bin(r & c).count("1") & 1) for r, c in zip(rows, cols)]
    np.testing.assert_array_equal(got, want)


@fuzz(20)
@given(n=st.integers(0, 300).filter(lambda n: n & (n - 1) != 0 or n == 0))
def test_fwht_rejects_lengths_that_are_not_powers_of_two(n):
    with pytest.raises(ValueError):
        fwht(np.zeros(n))
