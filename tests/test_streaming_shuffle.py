"""The shuffle-model analyzers as streaming decodes: any split of the messages, the same release."""

import pickle

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from fastldp.regression import (ShuffledBits, ShuffledBitsAnalyzer, ShuffledSumAnalyzer,
                                ShuffledVectorSum)
from fastldp._random import as_generator
from fastldp.regression.shuffle import shuffle
from fastldp.streaming import Partial, merge_all


def _messages(n=40, dim=3, seed=0):
    summation = ShuffledVectorSum(epsilon=1.0, delta=1e-5, norm_bound=1.0)
    rng = np.random.default_rng(seed)
    v = rng.normal(size=(n, dim))
    v /= np.maximum(1.0, np.linalg.norm(v, axis=1))[:, None]
    shares, plan = summation.encode(v, rng)
    streams = shuffle(shares.transpose(1, 0, 2).reshape(dim, -1), rng)
    return summation, v, streams, plan


@settings(max_examples=25, deadline=None, derandomize=True)
@given(st.lists(st.integers(0, 40 * 200), max_size=5), st.randoms(use_true_random=False))
def test_sum_split_merge_is_the_one_shot_release(cuts, order):
    summation, v, streams, plan = _messages()
    analyzer = summation.analyzer(40, 3)
    m = streams.shape[1]
    edges = [0] + sorted(min(c, m) for c in cuts) + [m]
    parts = [analyzer.partial(streams[:, a:b]) for a, b in zip(edges[:-1], edges[1:])]
    order.shuffle(parts)
    one = analyzer.estimate(streams)
    got = analyzer.finalize(merge_all(parts))
    np.testing.assert_array_equal(got.integer_total, one.integer_total)
    np.testing.assert_array_equal(got.total, one.total)
    # and the one-shot analyzer is the module's analyze()
    np.testing.assert_array_equal(one.integer_total,
                                  ShuffledVectorSum.analyze(streams, plan["modulus"]))


def test_sum_analyzer_refusals_and_reduction():
    summation, v, streams, plan = _messages()
    analyzer = summation.analyzer(40, 3)
    with pytest.raises(ValueError, match="every share"):
        analyzer.finalize(analyzer.partial(streams[:, :-1]))
    with pytest.raises(ValueError, match="merge"):
        analyzer.partial(streams).merge(summation.analyzer(41, 3).partial(streams))
    with pytest.raises(ValueError, match="messages"):
        analyzer.partial(streams[:2])
    # a message given as its representative + q is the same element of Z_q, counted
    bumped = streams.copy()
    bumped[0, 0] += np.uint64(plan["modulus"])
    p = analyzer.partial(bumped)
    assert p.counts["reason:out_of_range"] == 1
    np.testing.assert_array_equal(analyzer.finalize(p).integer_total,
                                  analyzer.estimate(streams).integer_total)
    back = Partial.from_bytes(pickle.loads(pickle.dumps(p)).to_bytes())
    np.testing.assert_array_equal(analyzer.finalize(back).total, analyzer.finalize(p).total)


def test_bits_split_merge_equals_counts():
    bits = ShuffledBits(epsilon=2.0, delta=1e-5, d=6)
    rng = np.random.default_rng(3)
    idx = rng.integers(0, 6, 500)
    counts, g = bits.counts(idx, rng=4)
    # the same streams, rebuilt with the same generator calls as counts()
    gen = as_generator(4)  # the Generator rng=4 builds (keyed, issue 37)
    streams = np.zeros((6, 500), dtype=np.uint8)
    streams[idx, np.arange(500)] = 1
    streams = shuffle(streams ^ (gen.random((6, 500)) < g).astype(np.uint8), gen)
    analyzer = bits.analyzer(500)
    np.testing.assert_array_equal(analyzer.estimate(streams), counts)
    parts = [analyzer.partial(streams[:, a:b]) for a, b in ((0, 77), (77, 300), (300, 500))]
    np.testing.assert_array_equal(analyzer.finalize(merge_all(parts[::-1])), counts)
    with pytest.raises(ValueError, match="n_parties"):
        analyzer.finalize(parts[0])
    assert isinstance(analyzer, ShuffledBitsAnalyzer)
    assert isinstance(ShuffledVectorSum(epsilon=1.0, norm_bound=1.0).analyzer(5, 2),
                      ShuffledSumAnalyzer)
