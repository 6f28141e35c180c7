"""Metrics and workloads of the heavy-hitter family, against naive twins."""

from __future__ import annotations

import numpy as np
import pytest

from fastldp.heavyhitters import PEM
from fastldp.heavyhitters.data import (scatter, true_top_k, vocabulary, word_items, zipf_items,
                                       zipf_ranked_items)
from fastldp.heavyhitters.metrics import f1_at_k, ncr, precision_at_k, recall_at_k, relative_error


def naive_ncr(found, truth):
    k = len(truth)
    return sum(k - truth.index(x) for x in set(found) if x in truth) / (k * (k + 1) / 2)


@pytest.mark.parametrize("found, truth", [
    ([1, 2, 3], [1, 2, 3]), ([3, 2, 1], [1, 2, 3]), ([9, 8, 7], [1, 2, 3]),
    ([1, 9], [1, 2, 3]), ([3, 9, 8], [1, 2, 3]), ([], [1, 2]),
])
def test_set_metrics_and_ncr_match_naive_twins(found, truth):
    hit = len(set(found) & set(truth))
    p = hit / len(found) if found else 0.0
    r = hit / len(truth)
    assert precision_at_k(found, truth) == p
    assert recall_at_k(found, truth) == r
    assert f1_at_k(found, truth) == (2 * p * r / (p + r) if p + r else 0.0)
    assert ncr(found, truth) == pytest.approx(naive_ncr(found, truth), abs=0)


def test_ncr_weighs_the_top_item_most():
    assert ncr([2, 3], [1, 2, 3]) < ncr([1, 3], [1, 2, 3]) < ncr([1, 2], [1, 2, 3])
    assert ncr(np.array([1, 2], dtype=np.uint64), [1, 2, 3]) == 5 / 6
    assert precision_at_k([b"a", b"b"], [b"a", b"c"]) == 0.5


def test_relative_error_of_a_result():
    pem = PEM(epsilon=6.0, k=2, item_bits=8, codebook_seed=0)
    items = np.repeat(np.array([5, 9], dtype=np.uint64), [3000, 1000])
    res = pem.estimate(pem.privatize(items, rng=0))
    est = dict(zip(res.items.tolist(), res.counts.tolist()))
    want = (abs(est[5] - 3000) / 3000 + abs(est[9] - 1000) / 1000) / 2
    assert relative_error(res, [5, 9], [3000, 1000]) == pytest.approx(want, rel=1e-15)
    assert relative_error({5: 3000.0}, [5, 9], [3000, 1000]) == 0.5  # unfound item: error 1


def test_scatter_is_a_bijection():
    for m in (3, 8, 12):
        out = scatter(np.arange(2**m), m, seed=4)
        assert sorted(out.tolist()) == list(range(2**m))
    big = scatter(np.arange(1000), 64)
    assert np.unique(big).shape == (1000,)


def test_zipf_items_follow_the_truncated_law():
    """Frequency of rank 1 over n = 50,000 draws: p1 = 1/H(support, a); |f - p1| < 5 sd."""
    n, a, support = 50_000, 1.1, 1000
    items = zipf_items(n, item_bits=32, exponent=a, support=support, rng=1)
    p1 = 1 / np.sum(np.arange(1, support + 1, dtype=float) ** -a)
    top = zipf_ranked_items(32, 3)
    f1 = np.mean(items == top[0])
    assert abs(f1 - p1) < 5 * np.sqrt(p1 * (1 - p1) / n)
    codes, counts = true_top_k(items, 3)
    assert codes.tolist() == top.tolist()
    assert counts.tolist() == [int(np.sum(items == t)) for t in top]
    assert zipf_items(10, item_bits=64, rng=0).dtype == np.uint64


def test_words_come_from_the_shipped_corpus():
    vocab = vocabulary(3)
    assert vocab[:3] == [b"the", b"a", b"is"]
    assert all(len(w) <= 3 for w in vocab)
    words = word_items(2000, item_bytes=3, rng=0)
    assert set(words) <= set(vocab)
    assert max(set(words), key=words.count) == b"the"


def test_true_top_k_breaks_ties_by_code():
    codes, counts = true_top_k(np.array([4, 4, 2, 2, 7], dtype=np.uint64), 3)
    assert codes.tolist() == [2, 4, 7] and counts.tolist() == [2, 2, 1]


def test_metrics_take_two_dimensional_codes():
    # codes of items over 64 bits are (n, W) word rows: a row is one item
    found = np.array([[1, 5], [0, 7], [2, 9]], dtype=np.uint64)
    truth = np.array([[0, 7], [1, 5], [3, 3]], dtype=np.uint64)
    assert precision_at_k(found, truth) == pytest.approx(2 / 3)
    assert recall_at_k(found[:1], truth, k=2) == pytest.approx(1 / 2)
    # a row differing in one word is another item
    assert precision_at_k(np.array([[1, 6]], dtype=np.uint64), truth) == 0.0
