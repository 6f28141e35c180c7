"""Issue 34: PEM's final ranking bar, the exact binomial tail of a null support.

A candidate nobody holds gets ``Binomial(n_r, 1/G)`` hits; the last level ranks
first the candidates whose count clears the ``1 - FINAL_NULL_RATE / C``
quantile of that law (pem's module docstring, "Result"). These tests hold
``PEM._null_counts`` to a plain-Python twin of the tail, show why the exact
tail matters at eps 8 (the normal quantile lets many times more nulls through)
and follow the bar through a one-level decode.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from fastldp.heavyhitters import PEM
from fastldp.heavyhitters import pem as pem_module


def _pmf(n: int, b: float, x: int) -> float:
    """P(Binomial(n, b) = x) in plain Python."""
    return math.exp(math.lgamma(n + 1) - math.lgamma(x + 1) - math.lgamma(n - x + 1)
                    + x * math.log(b) + (n - x) * math.log1p(-b))


def _tail(n: int, b: float, h: float) -> float:
    """P(Binomial(n, b) > h) in plain Python (terms past 60 sd above the mean are nil)."""
    top = int(n * b + 60 * math.sqrt(n * b + 1)) + 60
    return sum(_pmf(n, b, x) for x in range(int(math.floor(h)) + 1, top))


def _tail_hits(n: int, b: float, rate: float) -> int:
    """The smallest h with P(Binomial(n, b) > h) <= rate: from the mean, raise h one hit at
    a time, taking that hit's probability off the tail."""
    h = int(n * b)
    tail = _tail(n, b, h)
    while tail > rate:
        h += 1
        tail -= _pmf(n, b, h)
    return h


def _counts(pem, hits, n_r, scale):
    G, p = pem.n_buckets, pem.p
    return (hits - n_r / G) / (p - 1.0 / G) * scale


@pytest.mark.parametrize("epsilon", [2.0, 4.0, 8.0, 12.0])
@pytest.mark.parametrize("rate", [1e-2, 1e-5, 3e-7])
def test_null_counts_match_a_plain_python_tail(epsilon, rate):
    pem = PEM(epsilon=epsilon, k=4, item_bytes=8, codebook_seed=0)
    reports = np.array([22_600.0, 22_600.0, 150_000.0, 3_000.0, 0.0])  # pooled ones: larger
    scale = np.array([44.0, 44.0, 6.6, 330.0, 0.0])
    got = pem._null_counts(reports, scale, rate)
    for i in range(4):
        h = _tail_hits(int(reports[i]), 1.0 / pem.n_buckets, rate)
        assert got[i] == pytest.approx(_counts(pem, h, reports[i], scale[i]), rel=1e-12)
    assert got[4] == 0.0  # no reports: nothing to clear but a positive count


def test_at_eps_8_the_exact_tail_keeps_nulls_out_where_the_normal_one_does_not():
    # a 42-byte candidate at 10^6 users: one group of about 22,600 reports, 7.6 null hits
    pem = PEM(epsilon=8.0, k=4, item_bytes=8, codebook_seed=0)
    n_r, G = 22_600, pem.n_buckets
    v0 = (1.0 / G) * (1 - 1.0 / G) / (pem.p - 1.0 / G) ** 2
    one = np.array([1.0])

    def hits_of(count):
        return count * (pem.p - 1.0 / G) + n_r / G

    # simulated at a rate that draws can see: 2 x 10^6 null supports
    rate, draws = 1e-3, 2_000_000
    hits = np.random.default_rng(34).binomial(n_r, 1.0 / G, draws).astype(np.float64)
    counts = _counts(pem, hits, n_r, 1.0)
    exact = pem._null_counts(np.array([float(n_r)]), one, rate)[0]
    normal = special.ndtri(1.0 - rate) * math.sqrt(n_r * v0)
    assert np.mean(counts > exact) <= rate + 4 * math.sqrt(rate / draws)
    assert np.mean(counts > normal) > 1.5 * rate
    # the rate of a decode (0.01 over about 34,000 candidates), by the plain-Python tail
    rate = 0.01 / 34_000
    exact = pem._null_counts(np.array([float(n_r)]), one, rate)[0]
    normal = special.ndtri(1.0 - rate) * math.sqrt(n_r * v0)
    assert _tail(n_r, 1.0 / G, hits_of(exact)) <= rate
    assert _tail(n_r, 1.0 / G, hits_of(normal)) > 20 * rate  # normal: 50 times the rate


def test_the_one_level_decode_ranks_by_the_exact_bar():
    pem = PEM(epsilon=8.0, k=2, item_bytes=1, codebook_seed=0)
    n_j = 22_600
    seen = {}

    def support(level_data, level, candidates):
        C = candidates.shape[0]
        h = _tail_hits(n_j, 1.0 / pem.n_buckets, pem_module.FINAL_NULL_RATE / C)
        hits = np.full(C, 7, dtype=np.int64)
        # candidate 1 sits at the bar (does not clear it), 2 is one hit above (clears it)
        # and 3 far above
        hits[1], hits[2], hits[3] = h, h + 1, h + 40
        seen["candidates"] = candidates
        return hits, n_j

    pem._by_level = lambda chunks: None
    pem._level_support = support
    found, counts, _, _ = pem._decode(None, n_j)
    c = seen["candidates"]
    assert found.tolist() == [c[3], c[2]]
    assert pem_module.FINAL_NULL_RATE == 0.01
