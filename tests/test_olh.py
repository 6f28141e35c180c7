"""OLH kernels: hashing layout, support counting, bucket search."""

import numpy as np
import pytest

from fastldp._kernels import _olh
from _reference import numpy_olh_bucket


def test_buckets_follow_documented_layout():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 2**64, 40, dtype=np.uint64)
    items = rng.integers(0, 5000, 40).astype(np.int64)
    g = rng.integers(2, 30, 40).astype(np.int64)
    got = _olh.olh_buckets(17, ids, items, g)
    for j in range(40):
        assert got[j] == numpy_olh_bucket(17, int(ids[j]), int(items[j]), int(g[j]))


def test_hash_all_agrees_with_single_item_hashing():
    allb = _olh.olh_hash_all(3, 12, 100, 7)
    single = _olh.olh_buckets(3, np.full(100, 12, np.uint64), np.arange(100, dtype=np.int64),
                              np.full(100, 7, np.int64))
    np.testing.assert_array_equal(allb, single)


def test_buckets_are_uniform():
    # chi-square over g = 5 buckets with 20,000 items: df = 4, P(chi2 > 23.5) ~ 1e-4
    b = _olh.olh_hash_all(1, 2, 20000, 5)
    counts = np.bincount(b, minlength=5)
    chi2 = np.sum((counts - 4000.0) ** 2 / 4000.0)
    assert chi2 < 23.5


def test_support_counts_match_naive():
    rng = np.random.default_rng(1)
    n, p = 150, 77
    ids = np.arange(n, dtype=np.uint64)
    g = rng.integers(2, 6, n).astype(np.int64)
    reports = np.array([rng.integers(0, gi) for gi in g], dtype=np.int64)
    w = rng.integers(1, 8, n) / 4.0
    got = _olh.olh_support(5, ids, reports, g, w, p, 2)
    ref = np.zeros(p)
    for i in range(n):
        ref += w[i] * (_olh.olh_hash_all(5, int(ids[i]), p, int(g[i])) == reports[i])
    np.testing.assert_array_equal(got, ref)
    one = _olh.olh_support(5, ids, reports, g, w, p, 1)
    assert one.tobytes() == got.tobytes()


@pytest.mark.parametrize("trial", range(25))
def test_bucket_search_equals_brute_force(trial):
    rng = np.random.default_rng(trial)
    n = 6
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    g = rng.integers(2, 9, n).astype(np.int64)
    m = int(rng.integers(1, 12))
    items = rng.choice(300, m, replace=False).astype(np.int64)
    weights = rng.choice([-1.0, 1.0, 0.5, -2.0], m)
    best, score, n_max = _olh.olh_bucket_search(8, ids, g, items, weights, 2)
    for i in range(n):
        scores = _olh.olh_bucket_scores(8, int(ids[i]), int(g[i]), items, weights)
        assert score[i] == scores.max()
        assert best[i] == int(np.flatnonzero(scores == scores.max())[0])
        assert n_max[i] == int(np.sum(scores == scores.max()))
