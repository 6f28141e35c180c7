"""RPC (paper 001, Algorithm 1): exact alpha, encoding, unbiasedness, privacy, sanitization, errors."""

import itertools
import math
from fractions import Fraction

import numpy as np
import pytest
import scipy.sparse as sp

from _reference import numpy_sign_row
from fastldp.vectors.base import SparseVectors
from fastldp.oracles.randomizers import Duchi
from fastldp.vectors.rpc import RPC, clipping_alpha


def clip(u, r):
    return max(-r, min(r, u))


# ------------------------------------------------------------------ alpha
@pytest.mark.parametrize("m", range(1, 9))
def test_alpha_matches_brute_force_over_all_sign_patterns(m):
    # Lemma 2: E[Clip(<x, S>, R) S(j)] = x(j) / alpha for every x in {-1, 1}^m
    # and every j, the expectation taken over all 2^m sign vectors S.
    for R in sorted({1, 1.5, 2, 3, math.ceil(math.sqrt(m)), m}):
        alpha = clipping_alpha(m, R)
        for x in ([1] * m, [(-1) ** k for k in range(m)]):
            total = [Fraction(0)] * m
            for s in itertools.product((-1, 1), repeat=m):
                u = Fraction(clip(sum(a * b for a, b in zip(x, s)), R))
                for j in range(m):
                    total[j] += u * s[j]
            for j in range(m):
                expect = total[j] / 2**m
                assert float(expect) == pytest.approx(x[j] / alpha, rel=1e-12, abs=1e-15)


def test_alpha_special_values():
    assert clipping_alpha(5, 3) == 8 / 7       # E[Clip(U, -2, 4)] = 1/8, U ~ 4 Rademacher
    assert clipping_alpha(4, 1) == 8 / 3
    assert clipping_alpha(1, 1) == 1.0
    for m in range(1, 12):
        assert clipping_alpha(m, m) == 1.0                      # |<x, S>| <= m: no clipping
        if m > 1:
            assert clipping_alpha(m, m - 0.5) > 1.0
        alphas = [clipping_alpha(m, r) for r in range(1, m + 1)]
        assert all(a >= b for a, b in zip(alphas, alphas[1:]))  # decreasing in R (Fig. 2a)


def test_alpha_for_large_m_is_finite_and_the_default_R_is_ceil_sqrt_m():
    assert 1.0 < clipping_alpha(100, 10) < 2.0
    for m, r in [(1, 1), (4, 2), (5, 3), (9, 3), (10, 4), (50, 8), (100, 10)]:
        assert RPC(d=max(m, 2), m=m, epsilon=1.0, codebook_seed=0, n_threads=1).R == r


# ---------------------------------------------------------------- encoding
def _dense_signs(seed, ids, p):
    return np.stack([numpy_sign_row(seed, int(i), p) for i in ids])


def test_projections_and_estimate_match_a_naive_twin_with_padding():
    rng = np.random.default_rng(4)
    d, m, n = 7, 3, 40
    x = np.zeros((n, d))
    for i in range(n):
        k = rng.integers(0, m + 1)  # 0..m items: padding needed
        x[i, rng.choice(d, k, replace=False)] = rng.choice([-1, 1], k)
    ids = rng.choice(10**9, n, replace=False).astype(np.uint64)
    mech = RPC(d=d, m=m, epsilon=1.0, codebook_seed=99, n_threads=1)
    signs = _dense_signs(99, ids, d + m)
    padded = np.concatenate([x, np.zeros((n, m))], axis=1)
    for i in range(n):
        need = m - int(np.count_nonzero(x[i]))
        padded[i, d:d + need] = 1
    np.testing.assert_array_equal(mech.projections(x, identities=ids), (padded * signs).sum(axis=1))
    y = mech.privatize(x, identities=ids, rng=1)
    est = mech.estimate(y, identities=ids)
    naive = mech.alpha / n * (y[:, None] * signs[:, :d]).sum(axis=0)
    np.testing.assert_allclose(est.raw, naive, rtol=1e-12, atol=1e-12)


def test_direct_route_projects_real_values_without_padding():
    rng = np.random.default_rng(5)
    d, m, n = 9, 4, 30
    x = np.zeros((n, d))
    for i in range(n):
        x[i, rng.choice(d, 2, replace=False)] = rng.uniform(-1, 1, 2)
    mech = RPC(d=d, m=m, epsilon=1.0, values="direct", R=1.5, codebook_seed=3, n_threads=1)
    signs = _dense_signs(3, np.arange(n), d)
    np.testing.assert_allclose(mech.projections(x), (x * signs).sum(axis=1), rtol=1e-12)
    assert mech.alpha == 1.0
    r = RPC(d=d, m=m, epsilon=1.0, values="direct", beta=0.3, n_users=10_000).R
    assert r == pytest.approx(0.3 * math.sqrt(4 * math.log(10_000)) + 1)


# ------------------------------------------------------------ unbiasedness
def _population(n, d, m, rng, signed=True, short=True):
    hot = d // 2 + 1  # concentrate mass: large |mu(j)|
    k = rng.integers(1, m + 1, size=n) if short else np.full(n, m)
    order = np.argsort(rng.random((n, hot)), axis=1)
    take = np.arange(hot)[None, :] < k[:, None]
    rows = np.repeat(np.arange(n), hot)[take.ravel()]
    vals = np.where(rng.random(rows.size) < 0.1, -1.0, 1.0) if signed else np.ones(rows.size)
    x = np.zeros((n, d))
    x[rows, order[take]] = vals
    return x


@pytest.mark.slow
@pytest.mark.parametrize("randomizer,R", [("duchi", 1.0), ("duchi", None), ("piecewise", 2.0)])
def test_unbiased_with_clipping_lemma2(randomizer, R):
    # Monte Carlo over T independent runs; tolerance from Theorem 1's variance
    # bound alpha^2 (V_eps R^2 + m) / n per coordinate.
    rng = np.random.default_rng(11)
    n, d, m, trials = 20_000, 8, 4, 12
    x = _population(n, d, m, rng)
    mu = x.mean(axis=0)
    mech = RPC(d=d, m=m, epsilon=1.0, randomizer=randomizer, R=R, codebook_seed=5, n_threads=1)
    runs = np.array([mech.estimate(mech.privatize(x, rng=100 + t),
                                   identities=None).raw for t in range(trials)])
    sd = math.sqrt(mech.variance_bound(n) / trials)
    err = np.abs(runs.mean(axis=0) - mu)
    assert err.max() < 4.5 * sd, (err.max(), sd)
    # the test has power: without alpha the clipping bias is far outside
    biased = np.abs(runs.mean(axis=0) / mech.alpha - mu)
    assert mech.alpha > 1.0 and biased.max() > 5 * sd


@pytest.mark.slow
def test_indirect_route_is_unbiased_for_general_values():
    rng = np.random.default_rng(12)
    n, d, m, trials = 20_000, 6, 3, 10
    x = np.zeros((n, d))
    for i in range(n):
        cols = rng.choice(d, rng.integers(1, m + 1), replace=False)
        x[i, cols] = rng.uniform(-0.2, 1.0, cols.size)
    mu = x.mean(axis=0)
    mech = RPC(d=d, m=m, epsilon=1.0, values="rounded", codebook_seed=8, n_threads=1)
    runs = np.array([mech.estimate(mech.privatize(x, rng=t)).raw for t in range(trials)])
    sd = math.sqrt(mech.variance_bound(n) / trials)
    assert np.abs(runs.mean(axis=0) - mu).max() < 4.5 * sd


@pytest.mark.slow
def test_direct_route_bias_is_within_theorem3():
    rng = np.random.default_rng(13)
    n, d, m, trials, beta = 20_000, 6, 4, 10, 0.3
    x = np.zeros((n, d))
    for i in range(n):
        cols = rng.choice(d, m, replace=False)
        x[i, cols] = np.clip(rng.normal(0.1, 0.2, m), -1, 1)
    mu = x.mean(axis=0)
    mech = RPC(d=d, m=m, epsilon=1.0, values="direct", R=1.4, codebook_seed=9, n_threads=1)
    runs = np.array([mech.estimate(mech.privatize(x, rng=t)).raw for t in range(trials)])
    sd = math.sqrt(mech.variance_bound(n) / trials)
    bound = 2 * math.exp(-(mech.R - 1) ** 2 / (2 * m * beta**2))  # Eq. (36)
    assert np.abs(runs.mean(axis=0) - mu).max() < bound + 4.5 * sd


@pytest.mark.slow
def test_without_padding_short_users_bias_the_estimate():
    rng = np.random.default_rng(14)
    n, d, m, trials = 20_000, 8, 4, 8
    x = _population(n, d, m, rng, signed=False)
    mu = x.mean(axis=0)
    mech = RPC(d=d, m=m, epsilon=2.0, R=1, pad=False, codebook_seed=5, n_threads=1)
    runs = np.array([mech.estimate(mech.privatize(x, rng=t)).raw for t in range(trials)])
    sd = math.sqrt(mech.variance_bound(n) / trials)
    assert np.abs(runs.mean(axis=0) - mu).max() > 8 * sd


def test_l1_error_is_below_theorem1():
    rng = np.random.default_rng(15)
    n, d, m = 10_000, 50, 10
    x = _population(n, d, m, rng, short=False)
    mech = RPC(d=d, m=m, epsilon=1.0, codebook_seed=2, n_threads=1)
    est = mech.estimate(mech.privatize(x, rng=0))
    bound = d * mech.alpha * math.sqrt((mech.randomizer.V_eps * mech.R**2 + m) / n)
    assert np.abs(est.raw - x.mean(axis=0)).sum() < bound


# ----------------------------------------------------------------- privacy
@pytest.mark.parametrize("eps", [0.2, 1.0, 3.0])
def test_duchi_rpc_channel_is_exactly_eps_ldp(eps):
    # Enumerate every x in {-1, 0, 1}^3 with at most m = 2 non-zeros for one
    # identity; P(Y = +cR | x) = (1 + u / (R C)) / 2 exactly.
    d, m = 3, 2
    mech = RPC(d=d, m=m, epsilon=eps, R=1, codebook_seed=77, n_threads=1)
    xs = [np.array(v) for v in itertools.product((-1, 0, 1), repeat=d) if np.count_nonzero(v) <= m]
    u = np.array([mech.encode(v[None, :], identities=[5])[0] for v in xs])
    q = Duchi(epsilon=eps)
    p_plus = q.prob_plus(u / mech.R)
    law = np.stack([p_plus, 1 - p_plus], axis=1)
    ratio = (law.max(axis=0) / law.min(axis=0)).max()
    assert ratio <= math.exp(eps) * (1 + 1e-12)
    assert u.max() == mech.R and u.min() == -mech.R   # the extremes are reachable,
    assert ratio == pytest.approx(math.exp(eps), rel=1e-12)  # so the bound is attained
    y = mech.privatize(np.stack(xs), identities=np.arange(len(xs)) + 5, rng=0)
    assert mech.is_legal(y).all()


@pytest.mark.parametrize("name", ["duchi", "piecewise", "laplace"])
def test_reports_are_legal_and_reproducible(name):
    rng = np.random.default_rng(3)
    x = _population(500, 10, 3, rng)
    mech = RPC(d=10, m=3, epsilon=0.8, randomizer=name, codebook_seed=4, n_threads=1)
    y1, y2 = mech.privatize(x, rng=9), mech.privatize(x, rng=9)
    np.testing.assert_array_equal(y1, y2)
    assert mech.is_legal(y1).all()
    if name != "laplace":
        assert np.abs(y1).max() <= mech.extreme_report
    else:
        with pytest.raises(ValueError, match="unbounded"):
            mech.extreme_report


def test_accepts_sparse_matrices_and_sparse_vectors_alike():
    rng = np.random.default_rng(6)
    x = _population(200, 10, 3, rng)
    mech = RPC(d=10, m=3, epsilon=1.0, codebook_seed=4, n_threads=1)
    csr = sp.csr_matrix(x)
    vecs = SparseVectors(csr.indptr.astype(np.int64), csr.indices.astype(np.int64), csr.data, 10)
    a = mech.privatize(x, rng=1)
    np.testing.assert_array_equal(a, mech.privatize(csr, rng=1))
    np.testing.assert_array_equal(a, mech.privatize(vecs, rng=1))


def test_thread_count_does_not_change_the_estimate():
    rng = np.random.default_rng(7)
    x = _population(3000, 20, 5, rng)
    m1 = RPC(d=20, m=5, epsilon=1.0, codebook_seed=4, n_threads=1)
    m2 = RPC(d=20, m=5, epsilon=1.0, codebook_seed=4, n_threads=2)
    y = m1.privatize(x, rng=2)
    np.testing.assert_array_equal(y, m2.privatize(x, rng=2))
    np.testing.assert_array_equal(m1.estimate(y).raw, m2.estimate(y).raw)


def test_final_clipping_to_the_feasible_range():
    x = np.eye(6)[:, :6]
    mech = RPC(d=6, m=1, epsilon=0.2, clip_estimate="frequency", codebook_seed=1, n_threads=1)
    est = mech.estimate(mech.privatize(x, rng=0))
    assert est.mean.min() >= 0 and est.mean.max() <= 1
    np.testing.assert_array_equal(est.mean, np.clip(est.raw, 0, 1))
    assert RPC(d=6, m=1, epsilon=1.0, clip_estimate=(-2, 3)).clip_estimate == (-2.0, 3.0)


# ------------------------------------------------------------ sanitization
def test_malformed_reports_are_sanitized_and_counted_never_raised_on():
    mech = RPC(d=5, m=2, epsilon=1.0, codebook_seed=1, n_threads=1)
    c = mech.extreme_report
    reports = np.array([c, -c, 0.5, 10 * c, -np.inf, np.nan, "x", None], dtype=object)
    est = mech.estimate(reports)
    rep = est.sanitization
    assert rep.n_received == 8 and rep.n_valid == 2
    assert rep.by_reason == {"off_alphabet": 1, "out_of_range": 1, "infinite": 1, "nan": 1,
                             "non_numeric": 2}
    clean = mech.estimate(np.array([c, -c, 0.5, c, -c, 0.0, 0.0, 0.0]))
    np.testing.assert_allclose(est.raw, clean.raw)
    with pytest.raises(ValueError, match="'identities' parameter of RPC.estimate"):
        mech.estimate(np.ones(3) * c, identities=[1, 2])
    with pytest.raises(ValueError, match="non-empty"):
        mech.estimate([])


# ------------------------------------------------------------------ errors
@pytest.mark.parametrize("kwargs,match", [
    ({"R": 0.5}, r"The 'R' parameter of RPC must be a float in \[1.0, inf\)\. Got 0.5 instead"),
    ({"R": float("nan")}, r"'R' parameter of RPC"),
    ({"m": 11}, r"The 'm' parameter of RPC must be an int in \[1, 10\]\. Got 11 instead"),
    ({"epsilon": 0}, r"The 'epsilon' parameter of RPC must be a float in \(0.0, inf\)\. Got 0 instead"),
    ({"epsilon": -1}, r"'epsilon' parameter of RPC .* Got -1 instead"),
    ({"epsilon": float("nan")}, r"'epsilon' parameter of RPC"),
    ({"values": "real"}, r"'values' parameter of RPC must be one of"),
    ({"values": "direct"}, r"'R' parameter of RPC is required on the direct route"),
    ({"randomizer": "gauss"}, r"'randomizer' parameter of RPC"),
    ({"clip_estimate": "range"}, r"'clip_estimate' parameter of RPC"),
    ({"clip_estimate": (1, 0)}, r"'clip_estimate' parameter of RPC"),
    ({"beta": 1.5}, r"'beta' parameter of RPC"),
])
def test_bad_parameters_raise_naming_the_parameter(kwargs, match):
    base = {"d": 10, "m": 3, "epsilon": 1.0}
    base.update(kwargs)
    with pytest.raises((ValueError, TypeError), match=match):
        RPC(**base)


@pytest.mark.parametrize("x,match", [
    ([[1.5, 0, 0, 0]], r"must hold values in \[-1, 1\]\. Got 1.5 for user 0, coordinate 0"),
    ([[np.nan, 0, 0, 0]], r"must hold values in \[-1, 1\]\. Got nan"),
    ([[0.5, 0, 0, 0]], r"must hold values in \{-1, 0, 1\}"),
    ([[1, 1, 1, 0]], r"at most m = 2 items per user\. Got 3 items for user 0"),
    ([[1, 0, 0]], r"must be an \(n, 4\) array"),
])
def test_bad_inputs_raise_naming_x(x, match):
    mech = RPC(d=4, m=2, epsilon=1.0, codebook_seed=1, n_threads=1)
    with pytest.raises(ValueError, match=match):
        mech.privatize(np.array(x), rng=0)


def test_repr_names_the_parameters():
    text = repr(RPC(d=4, m=2, epsilon=1.0, codebook_seed=1, n_threads=1))
    assert text.startswith("RPC(d=4, m=2, epsilon=1.0, randomizer='duchi', R=2.0")
