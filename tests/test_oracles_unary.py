"""OUE and SUE: exact privacy on every bit vector, exact moments, the packed layout, the kernels."""

import math

import numpy as np
import pytest
from scipy.stats import chisquare

from fastldp._kernels._unary import ue_counts, ue_perturb, ue_weighted_counts
from fastldp.oracles import OUE, SUE
from fastldp.oracles.unary import _thresholds

UE = [OUE, SUE]


def make(cls, D=4, eps=1.0, **kw):
    return cls(domain_size=D, epsilon=eps, codebook_seed=3, n_threads=1, **kw)


@pytest.mark.parametrize("cls", UE)
@pytest.mark.parametrize("D", [2, 3, 4])
@pytest.mark.parametrize("eps", [0.1, 0.7, 1.0, 2.5, 6.0])
def test_likelihood_ratio_over_all_bit_vectors_is_exactly_e_eps(cls, D, eps):
    law = make(cls, D=D, eps=eps).channel(eps)  # (D inputs, 2^D bit vectors)
    assert law.shape == (D, 2**D)
    np.testing.assert_allclose(law.sum(axis=1), 1.0, rtol=1e-12)
    ratio = (law.max(axis=0) / law.min(axis=0)).max()
    assert ratio <= math.exp(eps) * (1 + 1e-12)
    assert ratio == pytest.approx(math.exp(eps), rel=1e-12)


@pytest.mark.parametrize("cls", UE)
def test_likelihood_ratio_is_not_met_below_eps(cls):
    # the edge is tight: the same channel is not (eps - 1e-9)-LDP
    eps = 1.3
    law = make(cls, D=3, eps=eps).channel(eps)
    assert (law.max(axis=0) / law.min(axis=0)).max() > math.exp(eps - 1e-9)


def test_parameters_are_those_of_the_papers():
    eps = np.array([0.5, 2.0])
    p, q = make(OUE)._pq(eps)
    np.testing.assert_allclose(p, 0.5)
    np.testing.assert_allclose(q, 1 / (np.exp(eps) + 1), rtol=1e-15)
    p, q = make(SUE)._pq(eps)
    np.testing.assert_allclose(p, np.exp(eps / 2) / (np.exp(eps / 2) + 1), rtol=1e-15)
    np.testing.assert_allclose(p + q, 1.0, rtol=1e-15)


@pytest.mark.parametrize("cls", UE)
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_exact_mean_and_variance_of_one_report(cls, eps):
    # E[c(v) | x] = [x = v] and Var = variances() / held_variances(), summed
    # over all 2^D outputs with the estimator applied to each packed report
    D = 4
    o = make(cls, D=D, eps=eps)
    law = o.channel(eps)
    reports = o.pack_outputs(np.arange(2**D))
    c = np.stack([o.aggregate(reports[y:y + 1], np.array([eps]), np.zeros(1, np.uint64), np.ones(1))
                  for y in range(2**D)])
    mean = law @ c
    var = law @ c**2 - mean**2
    np.testing.assert_allclose(mean, np.eye(D), atol=1e-12)
    off = ~np.eye(D, dtype=bool)
    np.testing.assert_allclose(var[off], o.variances(np.array([eps]))[0], rtol=1e-10)
    np.testing.assert_allclose(np.diag(var), o.held_variances(np.array([eps]))[0], rtol=1e-10)


@pytest.mark.parametrize("cls", UE)
def test_sampler_draws_from_the_channel(cls):
    D, eps, n, x = 3, 1.1, 80_000, 1
    o = make(cls, D=D, eps=eps)
    reports = o.privatize(np.full(n, x), rng=0)
    bits = np.unpackbits(reports, axis=1, count=D, bitorder="little")
    y = bits @ (1 << np.arange(D))
    counts = np.bincount(y, minlength=2**D)
    assert chisquare(counts, n * o.channel(eps)[x]).pvalue > 1e-4


def test_reports_use_the_documented_packed_layout():
    D = 21
    o = make(OUE, D=D, eps=700.0)  # q ~ 0: only the held bit (p = 1/2) can be set
    x = np.arange(D).repeat(50)
    reports = o.privatize(x, rng=1)
    assert reports.shape == (x.shape[0], 3) and reports.dtype == np.uint8
    bits = np.unpackbits(reports, axis=1, count=24, bitorder="little")
    assert not bits[:, D:].any()  # padding bits zero
    assert np.all(bits[:, :D].sum(axis=1) <= 1)
    assert np.all(bits[np.arange(x.shape[0]), x][bits.sum(axis=1) == 1])
    held_rate = bits[np.arange(x.shape[0]), x].mean()
    assert abs(held_rate - 0.5) < 5 * math.sqrt(0.25 / x.shape[0])


def test_bernoulli_thresholds_are_exact():
    for q in (0.5, 0.25, 1 / (math.e + 1), 1 / 3, 2.0**-12, 0.1234567):
        assert int(_thresholds(np.array([q]))[0]) == int(q * 2**64)
        assert int(_thresholds(np.array([q]))[0]) / 2**64 == q


@pytest.mark.parametrize("D", [1, 5, 8, 63, 64, 65, 130, 700])
@pytest.mark.parametrize("n", [0, 1, 7, 2041, 5000])
def test_column_counts_equal_unpackbits(D, n):
    rng = np.random.default_rng(D * 7 + n)
    packed = rng.integers(0, 256, (n, (D + 7) // 8), dtype=np.uint8)
    if D % 8:
        packed[:, -1] &= (1 << (D % 8)) - 1
    bits = np.unpackbits(packed, axis=1, count=D, bitorder="little").astype(np.int64)
    for nt in (1, 2):
        np.testing.assert_array_equal(ue_counts(packed, D, nt), bits.sum(axis=0))
    w = rng.uniform(-1, 2, n)
    np.testing.assert_allclose(ue_weighted_counts(packed, w, D, 1), w @ bits, rtol=1e-12, atol=1e-9)
    np.testing.assert_array_equal(ue_weighted_counts(packed, w, D, 1), ue_weighted_counts(packed, w, D, 2))


def test_perturb_kernel_rates_and_thread_invariance():
    D, n = 37, 60_000
    rng = np.random.default_rng(2)
    values = rng.integers(-1, D, n)  # -1: holds nothing
    q, p = 0.3, 0.8
    Q = np.full(n, _thresholds(np.array([q]))[0], dtype=np.uint64)
    rows = ue_perturb(1, 2, values, Q, np.full(n, p), D, 2)
    np.testing.assert_array_equal(rows, ue_perturb(1, 2, values, Q, np.full(n, p), D, 1))
    assert not np.array_equal(rows, ue_perturb(1, 3, values, Q, np.full(n, p), D, 1))
    bits = np.unpackbits(rows, axis=1, count=D, bitorder="little").astype(bool)
    held = np.zeros((n, D), dtype=bool)
    m = values >= 0
    held[np.flatnonzero(m), values[m]] = True
    assert abs(bits[held].mean() - p) < 5 * math.sqrt(p * (1 - p) / held.sum())
    assert abs(bits[~held].mean() - q) < 5 * math.sqrt(q * (1 - q) / (~held).sum())
    # bits of one row are independent: adjacent pairs
    pair = bits[:, :-1] & bits[:, 1:] & ~held[:, :-1] & ~held[:, 1:]
    both = (~held[:, :-1] & ~held[:, 1:]).sum()
    assert abs(pair.sum() / both - q * q) < 5 * math.sqrt(q * q / both)


def test_sanitize_clears_nothing_legal_and_replaces_bad_rows_publicly():
    o = make(OUE, D=12)
    reports = o.privatize(np.arange(12), rng=0)
    eps, ids = np.full(12, 1.0), np.arange(12, dtype=np.uint64)
    clean, rep = o.sanitize(reports, eps, ids, "t")
    assert clean is reports or np.shares_memory(clean, reports) or np.array_equal(clean, reports)
    assert rep.n_valid == 12 and not rep.wrong_dtype
    bad = reports.copy()
    bad[3, 1] |= 0x30  # padding bits of D = 12
    clean, rep = o.sanitize(bad, eps, ids, "t")
    assert rep.by_reason == {"non_numeric": 0, "non_integer": 0, "out_of_range": 1}
    np.testing.assert_array_equal(clean[3], o.public_rows(ids[3:4])[0])
    assert (clean[3, 1] & 0xF0) == 0
    np.testing.assert_array_equal(np.delete(clean, 3, axis=0), np.delete(reports, 3, axis=0))
    with pytest.raises(ValueError, match=r"'reports' parameter of t must be a \(12, 2\) uint8 array"):
        o.sanitize(reports[:, :1], eps, ids, "t")


def test_public_rows_are_uniform_bits():
    o = make(SUE, D=70)
    rows = o.public_rows(np.arange(4000, dtype=np.uint64))
    bits = np.unpackbits(rows, axis=1, count=72, bitorder="little")
    assert not bits[:, 70:].any()
    assert abs(bits[:, :70].mean() - 0.5) < 5 * math.sqrt(0.25 / (4000 * 70))
