"""fastldp.regression (paper 002): shuffle primitives, accounting, estimators, bounds."""

import math

import numpy as np
import pytest
from scipy import optimize, stats

from fastldp.regression import (LDPIHT, U2R, Lasso, SampleSDP, ShuffledBits, ShuffledVectorSum,
                                TwoStageSLR, bounds, make_sparse_regression)
from fastldp.regression.baselines import lasso_gram
from fastldp.regression.sample_sdp import solve_soft_thresholded
from fastldp.regression.shuffle import (_ALPHAS, flip_probability, shares_needed, shuffle,
                                        shuffled_bits_delta, skellam_epsilon, skellam_rdp,
                                        skellam_variance)


# ---------------------------------------------------------------- shuffler
def test_shuffle_is_a_permutation_of_each_stream():
    rng = np.random.default_rng(0)
    msgs = rng.integers(0, 1000, size=(5, 200))
    out = shuffle(msgs, rng=1)
    assert out.shape == msgs.shape
    np.testing.assert_array_equal(np.sort(out, axis=1), np.sort(msgs, axis=1))
    assert not np.array_equal(out, msgs)
    one = shuffle(np.arange(50), rng=2)
    np.testing.assert_array_equal(np.sort(one), np.arange(50))


def test_shuffle_positions_are_uniform():
    # where message 0 lands, over many shuffles: chi-square against uniform
    rng = np.random.default_rng(3)
    counts = np.zeros(8)
    for _ in range(4000):
        counts[np.flatnonzero(shuffle(np.arange(8), rng) == 0)[0]] += 1
    assert stats.chisquare(counts).pvalue > 1e-4


# ---------------------------------------------------------------- summation
def test_summation_is_exact_without_noise():
    rng = np.random.default_rng(4)
    v = rng.integers(-50, 50, size=(40, 6)).astype(float)
    summer = ShuffledVectorSum(epsilon=None, norm_bound=200.0, scale=1.0)
    res = summer.sum(v, rng=5)
    np.testing.assert_array_equal(res.integer_total, v.sum(axis=0).astype(np.int64))
    assert res.simulated and res.messages == 40 * 6 * res.shares


def test_shares_are_uniform_and_sum_to_the_value():
    v = np.array([[3.0, -2.0], [1.0, 4.0], [0.0, 0.0]])
    summer = ShuffledVectorSum(epsilon=None, norm_bound=10.0, scale=1.0, shares=4)
    shares, plan = summer.encode(v, rng=6)
    q = plan["modulus"]
    assert shares.shape == (3, 2, 4) and shares.max() < q
    total = shares.sum(axis=-1, dtype=np.uint64) % np.uint64(q)
    decoded = np.where(total >= q // 2, total.astype(np.int64) - q, total.astype(np.int64))
    np.testing.assert_array_equal(decoded, v.astype(np.int64))


def test_summation_is_unbiased_with_the_known_variance():
    rng = np.random.default_rng(7)
    v = rng.normal(size=(30, 3))
    v /= np.linalg.norm(v, axis=1, keepdims=True)
    summer = ShuffledVectorSum(epsilon=1.0, delta=1e-5, norm_bound=1.0)
    reps = 400
    totals = np.array([summer.sum(v, rng=rng).total for _ in range(reps)])
    res = summer.sum(v, rng=rng)
    # noise variance plus at most n/4 units^2 of rounding variance
    var = res.noise_sd ** 2 + v.shape[0] / 4 / res.scale ** 2
    err = totals.mean(axis=0) - v.sum(axis=0)
    assert np.all(np.abs(err) < 5 * math.sqrt(var / reps))
    ratio = totals.var(axis=0, ddof=1) / var
    assert np.all((ratio > 1 - 5 * math.sqrt(2 / reps)) & (ratio < 1 + 5 * math.sqrt(2 / reps)))


def test_aggregate_path_has_the_same_law():
    rng = np.random.default_rng(8)
    v = rng.normal(size=(25, 2)) * 0.3
    small = ShuffledVectorSum(epsilon=2.0, norm_bound=2.0, max_messages=1)
    res = small.sum(v, rng=9)
    assert not res.simulated
    full = ShuffledVectorSum(epsilon=2.0, norm_bound=2.0).sum(v, rng=9)
    assert full.simulated and full.noise_sd == res.noise_sd and full.delta == res.delta


def test_summation_rejects_vectors_over_the_bound_and_nan():
    summer = ShuffledVectorSum(epsilon=1.0, norm_bound=1.0)
    with pytest.raises(ValueError, match="norm_bound"):
        summer.sum(np.full((5, 2), 3.0), rng=0)
    with pytest.raises(ValueError, match="finite"):
        summer.sum(np.array([[np.nan, 0.0]] * 4), rng=0)
    with pytest.raises(ValueError, match="'epsilon'"):
        ShuffledVectorSum(epsilon=float("nan"), norm_bound=1.0)
    with pytest.raises(ValueError, match="'norm_bound'"):
        ShuffledVectorSum(epsilon=1.0, norm_bound=-1.0)


# ---------------------------------------------------------------- accounting
def _skellam_pmf(z, mu):
    return stats.skellam.pmf(z, mu / 2, mu / 2)


@pytest.mark.parametrize("mu,t", [(20.0, 1), (20.0, 3), (200.0, 2)])
def test_skellam_rdp_bounds_the_exact_divergence(mu, t):
    from scipy.special import logsumexp

    z = np.arange(-int(12 * math.sqrt(mu)) - 10, int(12 * math.sqrt(mu)) + 10)
    lp, lq = np.log(_skellam_pmf(z, mu)), np.log(_skellam_pmf(z - t, mu))
    ok = np.isfinite(lp) & np.isfinite(lq)
    for alpha in (2, 5, 10):
        exact = logsumexp(alpha * lp[ok] + (1 - alpha) * lq[ok]) / (alpha - 1)
        bound = skellam_rdp(alpha, mu, t, t)
        assert exact <= bound + 1e-12
        assert bound <= 1.6 * exact + 1e-9  # and not loose: the Gaussian term dominates


def test_skellam_epsilon_meets_delta_by_direct_hockey_stick():
    mu, t, delta = 300.0, 3, 1e-5
    eps = skellam_epsilon(mu, t, t, delta)
    z = np.arange(-2000, 2000)
    p, q = _skellam_pmf(z, mu), _skellam_pmf(z - t, mu)
    direct = np.clip(p - math.exp(eps) * q, 0, None).sum()
    assert direct <= delta
    # calibration inverts it
    mu_star = skellam_variance(eps, delta, t, t)
    assert mu_star == pytest.approx(mu, rel=1e-3)


def test_shares_needed_formula():
    # Balle et al. (CCS 2020): ceil((2 sigma + log2 q) / (log2 n - log2 e)) + 1
    assert shares_needed(1000, 20, 30) == math.ceil(80 / (math.log2(1000) - math.log2(math.e))) + 1
    with pytest.raises(ValueError, match="'n_parties'"):
        shares_needed(2, 20, 30)


def test_plan_splits_delta_between_noise_and_shares():
    plan = ShuffledVectorSum(epsilon=2.0, delta=1e-6, norm_bound=1.0).plan(5000, 8)
    assert plan["delta_noise"] == pytest.approx(5e-7)
    # a view within TV t of an (eps, d)-DP view is (eps, d + (1 + e^eps) t)-DP
    assert (1 + math.exp(2.0)) * plan["delta_shares"] <= 5e-7
    assert plan["delta"] == pytest.approx(plan["delta_noise"]
                                          + (1 + math.exp(2.0)) * plan["delta_shares"])
    assert plan["delta"] <= 1e-6
    assert skellam_epsilon(plan["mu"], plan["l2"], plan["l1"], plan["delta_noise"]) <= 2.0


def _direct_bits_delta(n, gamma, eps):
    """Worst case over the other parties' bits of the exact hockey-stick divergence."""
    worst = 0.0
    others = n - 1
    for ones in range(others + 1):
        a = stats.binom.pmf(np.arange(ones + 1), ones, 1 - gamma)
        b = stats.binom.pmf(np.arange(others - ones + 1), others - ones, gamma)
        rest = np.convolve(a, b)
        p0 = np.convolve(rest, [1 - gamma, gamma])
        p1 = np.convolve(rest, [gamma, 1 - gamma])
        for x, y in ((p0, p1), (p1, p0)):
            worst = max(worst, float(np.clip(x - math.exp(eps) * y, 0, None).sum()))
    return worst


@pytest.mark.parametrize("n,gamma,eps", [(6, 0.2, 0.5), (12, 0.1, 1.0), (30, 0.05, 0.3)])
def test_shuffled_bits_accounting_bounds_the_direct_computation(n, gamma, eps):
    direct = _direct_bits_delta(n, gamma, eps)
    bound = shuffled_bits_delta(n, gamma, eps)
    assert direct <= bound + 1e-12
    assert bound <= 3 * direct + 1e-3


def test_shuffled_bits_delta_with_shared_pmf_rows_is_bit_identical():
    # the flip-probability search keeps Bin(K, 1/2) rows across its steps; each value must be
    # the one SciPy computes in one fresh matrix call
    from fastldp.regression.shuffle import _bits_delta, _blanket_delta_given_k

    rows: dict = {}
    for gamma in (0.3, 0.05, 0.051, 0.2, 0.3):  # overlapping and repeated K windows
        for n in (40, 700):
            assert (_bits_delta(n, gamma, 0.7, rows).hex()
                    == shuffled_bits_delta(n, gamma, 0.7).hex())
    k = np.array([0, 3, 9, 250])
    for rows_ in (None, {}, rows):
        got = _blanket_delta_given_k(k, 0.1, 0.4, rows_)
        z = np.arange(252)
        b0 = stats.binom.pmf(z[None, :], k[:, None], 0.5)
        b1 = np.zeros_like(b0)
        b1[:, 1:] = b0[:, :-1]
        p0, p1 = 0.9 * b0 + 0.1 * b1, 0.1 * b0 + 0.9 * b1
        want = np.clip(p0 - math.exp(0.4) * p1, 0, None).sum(axis=1)
        assert np.array_equal(got, want)


def test_flip_probability_is_the_smallest_that_meets_delta():
    g = flip_probability(2000, 0.5, 1e-6)
    assert shuffled_bits_delta(2000, g, 0.5) <= 1e-6
    assert shuffled_bits_delta(2000, g * 0.99, 0.5) > 1e-6 * 0.9
    # few parties need almost uniform bits (gamma -> 1/2 always meets delta)
    assert flip_probability(5, 0.1, 1e-9) > 0.45
    with pytest.raises(ValueError, match="'n_parties'"):
        flip_probability(1, 0.1, 1e-9)


def test_shuffled_bits_debiasing_is_unbiased():
    rng = np.random.default_rng(10)
    index = rng.integers(0, 5, size=300)
    truth = np.bincount(index, minlength=5)
    bits = ShuffledBits(epsilon=1.0, d=5)
    gamma = 0.1
    reps = 300
    est = np.array([bits.counts(index, rng, gamma=gamma)[0] for _ in range(reps)])
    sd = math.sqrt(300 * gamma * (1 - gamma)) / (1 - 2 * gamma)
    assert np.all(np.abs(est.mean(axis=0) - truth) < 5 * sd / math.sqrt(reps))


# ---------------------------------------------------------------- solvers
def test_closed_form_matches_brute_force():
    rng = np.random.default_rng(11)
    for _ in range(5):
        A = rng.normal(size=(6, 4))
        G = A.T @ A / 6 + 0.1 * np.eye(4)
        b = rng.normal(size=4)
        lam = 0.3
        theta, ls = solve_soft_thresholded(G, b, lam)
        obj = lambda t: 0.5 * np.sum((t - ls) ** 2) + lam * np.abs(t).sum()  # noqa: E731
        best = min((optimize.minimize(obj, rng.normal(size=4), method="Powell",
                                      options={"xtol": 1e-10, "ftol": 1e-14})
                    for _ in range(5)), key=lambda r: r.fun)
        assert obj(theta) <= best.fun + 1e-9
        np.testing.assert_allclose(theta, best.x, atol=1e-4)


def test_lasso_coordinate_descent_matches_a_generic_solver():
    rng = np.random.default_rng(12)
    X = rng.normal(size=(40, 6))
    y = X @ np.array([1.0, 0, 0, -0.5, 0, 0]) + 0.1 * rng.normal(size=40)
    alpha = 0.05
    coef = Lasso(alpha=alpha, fit_intercept=False, tol=1e-14).fit(X, y).coef_
    # exact reformulation theta = u - v, u, v >= 0
    def f(w):
        t = w[:6] - w[6:]
        r = y - X @ t
        return r @ r / 80 + alpha * w.sum()
    def g(w):
        t = w[:6] - w[6:]
        grad = -X.T @ (y - X @ t) / 40
        return np.concatenate([grad + alpha, -grad + alpha])
    res = optimize.minimize(f, np.zeros(12), jac=g, method="L-BFGS-B", bounds=[(0, None)] * 12,
                            options={"ftol": 1e-15, "gtol": 1e-12})
    np.testing.assert_allclose(coef, res.x[:6] - res.x[6:], atol=1e-5)
    G, b = X.T @ X / 40, X.T @ y / 40
    np.testing.assert_allclose(lasso_gram(G, b, alpha, tol=1e-14), coef, atol=1e-10)


@pytest.mark.parametrize("nested", [False, True])
def test_fastldp_sampler_same_generators_same_order(nested):
    """sampler="fastldp" draws every normal of the data with fastldp's ziggurat, from the
    same generators in the same order as "numpy" (the default, NumPy's values)."""
    from fastldp._random import as_generator, standard_normal

    kw = dict(n=30, m=4, d=5, k=2, n_test=6, sigma=0.5, nested=nested)
    fast = make_sparse_regression(rng=3, sampler="fastldp", **kw)
    default = make_sparse_regression(rng=3, **kw)
    assert np.array_equal(make_sparse_regression(rng=3, sampler="numpy", **kw).X, default.X)
    assert np.array_equal(fast.theta, default.theta)  # the same draws before the normals
    # the same generators, fastldp's normals (rng=3: the data purpose's keyed stream, issue 37)
    gen = as_generator(3, purpose="data")
    gen.choice(5, size=2, replace=False), gen.choice([-1.0, 1.0], size=2)
    if nested:
        X_test = standard_normal(gen, (6, 5))
        e_test = standard_normal(gen, 6)
        x_gen, e_gen = (np.random.default_rng(int(s)) for s in gen.integers(0, 2 ** 63, 2))
        X, e = standard_normal(x_gen, (120, 5)), standard_normal(e_gen, 120)
    else:
        X, e = standard_normal(gen, (120, 5)), standard_normal(gen, 120)
        X_test, e_test = standard_normal(gen, (6, 5)), standard_normal(gen, 6)
    assert np.array_equal(fast.X, X) and np.array_equal(fast.X_test, X_test)
    np.testing.assert_allclose(fast.y, X @ fast.theta + 0.5 * e, rtol=0, atol=1e-12)
    np.testing.assert_allclose(fast.y_test, X_test @ fast.theta + 0.5 * e_test, rtol=0,
                               atol=1e-12)
    assert not np.array_equal(fast.X, default.X)
    if nested:  # prefixes of larger draws, as with NumPy's normals
        big = make_sparse_regression(rng=3, sampler="fastldp", **dict(kw, n=50))
        assert np.array_equal(big.X[:120], fast.X) and np.array_equal(big.y[:120], fast.y)
    with pytest.raises(ValueError, match="'sampler' parameter of make_sparse_regression must "
                       "be 'numpy' or 'fastldp'. Got 'mkl'"):
        make_sparse_regression(rng=3, sampler="mkl", **kw)
    with pytest.raises(TypeError, match="'sampler'"):
        make_sparse_regression(rng=3, sampler=None, **kw)


# ---------------------------------------------------------------- estimators
@pytest.fixture(scope="module")
def noiseless():
    return make_sparse_regression(n=900, m=40, d=32, k=3, sigma=0.0, n_test=200, rng=13)


def test_u2r_noiseless_support_recovery_is_exact(noiseless):
    D = noiseless
    est = U2R(epsilon=1e4, k=3, rows_per_user=40, sigma=0.05, rho=D.beta_min).fit(
        D.X, D.y, users=D.users, rng=14)
    np.testing.assert_array_equal(est.support_recovered_, D.support)
    np.testing.assert_array_equal(est.support_, D.support)
    assert np.linalg.norm(est.coef_ - D.theta) < 1e-2
    assert est.privacy_.unit == "user" and est.privacy_.model == "shuffle"
    assert est.privacy_.epsilon == 1e4 and est.privacy_.delta <= 1e-5
    assert sum(est.groups_) == 900
    assert all(s.simulated for s in est.summations_)


def test_estimators_fit_predict_score(noiseless):
    D = noiseless
    for est in (U2R(epsilon=8.0, k=3, rows_per_user=40, sigma=0.1),
                SampleSDP(epsilon=8.0, sigma=0.1), Lasso(alpha=1e-3), LDPIHT(epsilon=8.0, k=3),
                TwoStageSLR(epsilon=8.0, k=3, rows_per_user=40)):
        est.fit(D.X, D.y, users=D.users, rng=15)
        assert est.coef_.shape == (32,) and np.isfinite(est.coef_).all()
        assert est.predict(D.X_test).shape == (200,)
        assert est.score(D.X_test, D.y_test) <= 1.0
        assert set(est.support_) <= set(range(32))
        assert est.privacy_.unit in ("user", "sample", "none")


def test_sample_sdp_privacy_is_the_summation_accounting(noiseless):
    D = noiseless
    est = SampleSDP(epsilon=2.0, delta=1e-6).fit(D.X, D.y, rng=16)
    assert est.privacy_ .unit == "sample" and est.privacy_.epsilon == 2.0
    assert est.privacy_.delta == est.summation_.delta <= 1e-6
    assert est.summation_.delta_noise == pytest.approx(5e-7)


@pytest.mark.parametrize("level", [True, 0.02, 0.0])
def test_u2r_with_shrinkage_is_the_shrinkage_fit_bit_for_bit(noiseless, level):
    D = noiseless
    kw = dict(epsilon=6.0, k=3, rows_per_user=40, sigma=0.3, rho=D.beta_min)
    plain = U2R(**kw).fit(D.X, D.y, users=D.users, rng=21)
    before = plain.coef_.copy()
    derived = plain.with_shrinkage(level)
    cold = U2R(**kw, shrinkage=level).fit(D.X, D.y, users=D.users, rng=21)
    assert np.array_equal(derived.coef_.view(np.uint64), cold.coef_.view(np.uint64))
    assert np.array_equal(derived.support_, cold.support_)
    assert derived.shrinkage == level and derived.get_params() == cold.get_params()
    assert derived.privacy_ == cold.privacy_
    assert np.array_equal(derived.support_recovered_, cold.support_recovered_)
    assert np.array_equal(plain.coef_, before) and plain.shrinkage is False  # left as is
    if level is True:  # the level sigma sqrt(log d / n) moved every coordinate
        shift = 0.3 * np.sqrt(np.log(32) / 900)
        S = plain.support_recovered_
        np.testing.assert_allclose(np.abs(before[S]) - np.abs(derived.coef_[S]), shift,
                                   rtol=1e-12)


def test_u2r_with_shrinkage_errors(noiseless):
    D = noiseless
    kw = dict(epsilon=6.0, k=3, rows_per_user=40, sigma=0.3)
    with pytest.raises(ValueError, match="not fitted"):
        U2R(**kw).with_shrinkage()
    shrunk = U2R(**kw, shrinkage=True).fit(D.X, D.y, users=D.users, rng=2)
    with pytest.raises(ValueError, match="already has shrinkage=True"):
        shrunk.with_shrinkage()
    plain = U2R(**kw).fit(D.X, D.y, users=D.users, rng=2)
    with pytest.raises(ValueError, match="'shrinkage'.*-1"):
        plain.with_shrinkage(-1.0)


def test_params_round_trip_like_clone():
    est = U2R(epsilon=2.0, k=4, rows_per_user=20, sigma=0.3, shrinkage=True)
    params = est.get_params()
    twin = U2R(**params)
    assert twin.get_params() == params
    assert twin.set_params(epsilon=3.0).epsilon == 3.0
    with pytest.raises(ValueError, match="Invalid parameter"):
        twin.set_params(bogus=1)
    assert "U2R(" in repr(est)
    with pytest.raises(AttributeError, match="not fitted"):
        est.predict(np.zeros((2, 3)))


def test_bad_inputs_and_parameters_raise(noiseless):
    D = noiseless
    X, y, u = D.X, D.y, D.users
    with pytest.raises(TypeError, match="'users'"):
        U2R(epsilon=1.0, k=3, rows_per_user=40).fit(X, y)
    with pytest.raises(ValueError, match="'epsilon'"):
        U2R(epsilon=-1.0, k=3, rows_per_user=40).fit(X, y, users=u)
    with pytest.raises(ValueError, match="'epsilon'"):
        U2R(epsilon=float("nan"), k=3, rows_per_user=40).fit(X, y, users=u)
    with pytest.raises(ValueError, match="'k'"):
        U2R(epsilon=1.0, k=99, rows_per_user=40).fit(X, y, users=u)
    with pytest.raises(TypeError, match="'k'"):
        TwoStageSLR(epsilon=1.0, k=2.5, rows_per_user=40).fit(X, y, users=u)
    with pytest.raises(ValueError, match="'split'"):
        U2R(epsilon=1.0, k=3, rows_per_user=40, split=(0.5, 0.5)).fit(X, y, users=u)
    bad = X.copy()
    bad[3, 2] = np.nan
    with pytest.raises(ValueError, match="'X'"):
        Lasso().fit(bad, y)
    with pytest.raises(ValueError, match="'y'"):
        SampleSDP(epsilon=1.0).fit(X, y[:-1])
    with pytest.raises(ValueError, match="'X'"):
        Lasso().fit(X[0], y)
    with pytest.raises(TypeError, match="rows_per_user"):
        U2R(epsilon=1.0, k=3)  # the rows per user are public: no default read from the data
    for bad_rows in (1, 0):
        with pytest.raises(ValueError, match="'rows_per_user' parameter of U2R"):
            U2R(epsilon=1.0, k=3, rows_per_user=bad_rows).fit(X, y, users=u)
        with pytest.raises(ValueError, match="'rows_per_user' parameter of TwoStageSLR"):
            TwoStageSLR(epsilon=1.0, k=3, rows_per_user=bad_rows).fit(X, y, users=u)
    with pytest.raises(TypeError, match="'rows_per_user'"):
        U2R(epsilon=1.0, k=3, rows_per_user=40.0).fit(X, y, users=u)
    with pytest.raises(ValueError, match="fewer than 3 users"):
        U2R(epsilon=1.0, k=3, rows_per_user=40).fit(X[:200], y[:200], users=u[:200])
    with pytest.raises(ValueError, match="'x_clip'"):
        SampleSDP(epsilon=1.0, x_clip=0.0).fit(X, y)
    with pytest.raises(ValueError, match="'iterations'"):
        LDPIHT(epsilon=1.0, k=3, iterations=0).fit(X, y)


def test_users_need_not_be_sorted_or_equal(noiseless):
    D = noiseless
    rng = np.random.default_rng(17)
    perm = rng.permutation(D.X.shape[0])
    users = D.users.copy()
    users[users == 5] = 6  # one user with 80 rows
    est = U2R(epsilon=1e4, k=3, rows_per_user=40, sigma=0.05, rho=D.beta_min)
    est.fit(D.X[perm], D.y[perm], users=users[perm], rng=18)
    np.testing.assert_array_equal(est.support_recovered_, D.support)


# ---------------------------------------------------------------- bounds
def test_bounds_have_the_theorems_shapes():
    kw = dict(k=8, epsilon=4.0)
    # Theorem 3 has no polynomial d and falls like 1/n in its privacy term
    a = bounds.u2r_upper_bound(n=10_000, m=50, **kw)
    b = bounds.u2r_upper_bound(n=20_000, m=50, **kw)
    assert b < a
    assert bounds.u2r_upper_bound(n=10_000, m=50, d=64, **kw) == bounds.u2r_upper_bound(
        n=10_000, m=50, d=4096, **kw)
    # Theorem 2 >= Theorem 1 (c = 1), both grow with d
    lo = [bounds.noninteractive_lower_bound(n=10_000, d=d, **kw) for d in (64, 512)]
    up = [bounds.noninteractive_upper_bound(n=10_000, d=d, **kw) for d in (64, 512)]
    assert lo[1] > lo[0] and up[1] > up[0] and all(x <= y for x, y in zip(lo, up))
    assert lo[1] / lo[0] == pytest.approx(math.sqrt(8))
    # Theorem 4 is Theorem 3 times log(d/k) in both terms
    t4 = bounds.user_level_lower_bound(n=10_000, m=50, d=256, **kw)
    L = math.log(256 / 8)
    assert t4 == pytest.approx(math.sqrt(8 * L / 500_000) + 8 * L / (10_000 * math.sqrt(50) * 4))
    with pytest.raises(ValueError, match="'epsilon'"):
        bounds.u2r_upper_bound(n=10, m=5, k=2, epsilon=0.0)


# ---------------------------------------------------------------- statistics
@pytest.mark.slow
def test_u2r_error_is_within_the_predicted_noise():
    """U2R's error on the support: the noise of stage 2b plus the sampling error."""
    D = make_sparse_regression(n=3000, m=50, d=64, k=4, sigma=0.25, n_test=10, rng=19)
    errs = []
    for seed in range(3):
        est = U2R(epsilon=2.0, k=4, rows_per_user=50, sigma=0.25, rho=D.beta_min).fit(
            D.X, D.y, users=D.users, rng=seed)
        np.testing.assert_array_equal(est.support_recovered_, D.support)
        res_b = est.summations_[1]
        nb = est.groups_[2]
        # predicted mean squared error: privacy noise + local OLS spread / n_b (no clipping bias)
        pred = 4 * (res_b.noise_sd / nb) ** 2 + 0.25 ** 2 * 4 / (50 - 4 - 1) / nb
        errs.append(np.sum((est.coef_ - D.theta) ** 2) / pred)
    # a chi-square(4)/4-like ratio: its mean over three fits is far below 4
    assert np.mean(errs) < 4


def test_local_lasso_does_not_depend_on_threads(noiseless):
    from fastldp.regression._rows import group_users
    from fastldp.regression.local import screened_local_lasso

    D = noiseless
    data = group_users(D.X, D.y, D.users, "test")
    one = screened_local_lasso(data.X, data.y, data.counts, 0.01, screen=10, chunk=64,
                               n_threads=1)
    two = screened_local_lasso(data.X, data.y, data.counts, 0.01, screen=10, chunk=64,
                               n_threads=2)
    np.testing.assert_array_equal(one, two)
    assert one.shape == (900, 32) and np.all((one != 0).sum(axis=1) <= 10)


def test_local_lasso_is_exact_and_per_user():
    """The local Lasso meets the KKT conditions, and a user's solution ignores its batch."""
    from fastldp.regression._rows import group_users
    from fastldp.regression.local import local_lasso, screened_local_lasso

    D = make_sparse_regression(n=300, m=30, d=40, k=3, sigma=0.25, rng=5)
    data = group_users(D.X, D.y, D.users, "test")
    alpha = 0.25 * math.sqrt(2 * math.log(40) / 30)
    B = local_lasso(data.X, data.y, data.counts, alpha)
    X, y = data.X, data.y
    grad = np.einsum("umj,um->uj", X, y - np.einsum("umj,uj->um", X, B)) / 30
    on = B != 0
    # stationarity: |grad| <= alpha off the support, grad = alpha sign(b) on it (float32 data)
    assert np.all(np.abs(grad[~on]) <= alpha * (1 + 1e-3))
    np.testing.assert_allclose(grad[on], alpha * np.sign(B[on]), atol=1e-4 * alpha)
    # per user: any subset, any chunking, any order gives the same bits
    full = screened_local_lasso(X, y, data.counts, alpha, screen=20, chunk=64)
    who = np.random.default_rng(0).permutation(300)[:77]
    part = screened_local_lasso(X, y, data.counts, alpha, users=who, screen=20, chunk=10)
    np.testing.assert_array_equal(part, full[who])


def _precomputed_against_cold(names, epsilons=(0.5, 4.0, 0.5)):
    """One Precomputed shared by the methods ``names`` and every eps gives what each cold fit gives."""
    D = make_sparse_regression(n=900, m=25, d=24, k=3, sigma=0.25, rng=6)
    pre = U2R(epsilon=1.0, k=3, rows_per_user=25).precompute(D.X, D.y, users=D.users)
    makers = {
        "U2R": lambda e: U2R(epsilon=e, k=3, rows_per_user=25, sigma=0.25, rho=D.beta_min),
        "U2R-shrink": lambda e: U2R(epsilon=e, k=3, rows_per_user=25, sigma=0.25,
                                    rho=D.beta_min, shrinkage=True),
        "2-SLR": lambda e: TwoStageSLR(epsilon=e, k=3, rows_per_user=25, sigma=0.25,
                                       rho=D.beta_min),
        "Sample-SDP": lambda e: SampleSDP(epsilon=e, sigma=0.25, max_messages=1000),
        "Sample-SDP-simulated": lambda e: SampleSDP(epsilon=e, sigma=0.25,
                                                    max_messages=10 ** 9),
        "LDP-IHT": lambda e: LDPIHT(epsilon=e, k=3),
        "Lasso": lambda e: Lasso(sigma=0.25),
    }
    for eps in epsilons:
        for name in names:
            make = makers[name]
            seed = int(eps * 10) + len(name)
            warm = make(eps).fit_precomputed(pre, rng=seed)
            cold = make(eps).fit(D.X, D.y, users=D.users, rng=seed)
            np.testing.assert_array_equal(warm.coef_, cold.coef_, err_msg=name)
            assert warm.privacy_ == cold.privacy_
            if hasattr(cold, "counts_"):
                np.testing.assert_array_equal(warm.counts_, cold.counts_, err_msg=name)
    return pre


def test_fit_precomputed_is_bit_identical_to_a_cold_fit():
    """One Precomputed shared by every method and eps gives what each cold fit gives.

    Sample-SDP with the simulated shuffler (seconds per fit) is checked in the slow tier;
    Sample-SDP's fit_precomputed path is the same but for the shuffler."""
    pre = _precomputed_against_cold(["U2R", "U2R-shrink", "2-SLR", "Sample-SDP", "LDP-IHT",
                                     "Lasso"])
    assert pre._lasso and pre._ls and pre._sums


@pytest.mark.slow
def test_fit_precomputed_with_the_simulated_shuffler_at_every_budget():
    _precomputed_against_cold(["Sample-SDP-simulated"])


# ---------------------------------------------------------------- issue 17: privacy holes
def _with_extreme_user(D, user, value=1e200):
    X, y = D.X.copy(), D.y.copy()
    rows = D.users == user
    X[rows] = value * np.where(np.arange(X.shape[1]) % 2, -1.0, 1.0)
    y[rows] = -value
    return X, y


def test_two_stage_slr_is_finite_with_an_extreme_user():
    """One user's rows at 1e200 made 2-SLR's coef_ NaN in about 40% of the runs (0% without)."""
    D = make_sparse_regression(n=40, m=20, d=8, k=2, sigma=0.1, rng=21)
    X, y = _with_extreme_user(D, 5)
    replaced = 0
    for seed in range(12):
        est = TwoStageSLR(epsilon=4.0, k=2, rows_per_user=20, sigma=0.1).fit(
            X, y, users=D.users, rng=seed)
        assert np.isfinite(est.coef_).all(), seed
        assert np.linalg.norm(est.coef_) <= 1.0 + 1e-12  # the theta_bound ball
        replaced += est.sanitized_["nonfinite"]
    assert replaced > 0  # the user's overflowing statistic was replaced, not passed on


def test_u2r_sanitizes_an_extreme_user_without_error():
    D = make_sparse_regression(n=60, m=20, d=8, k=2, sigma=0.1, rng=22)
    X, y = _with_extreme_user(D, 9)
    for seed in range(4):
        est = U2R(epsilon=4.0, k=2, rows_per_user=20, sigma=0.1).fit(X, y, users=D.users,
                                                                     rng=seed)
        assert np.isfinite(est.coef_).all()
        assert est.sanitized_["nonfinite"] == 1  # the one user, in whichever stage it was


def test_lasso_is_never_nan_on_huge_data():
    rng = np.random.default_rng(23)
    X = rng.normal(size=(60, 4))
    y = X @ np.array([1.0, 0, 0, -2.0]) + 0.1 * rng.normal(size=60)
    # the Lasso on (c X, c y) with penalty c^2 alpha is the Lasso on (X, y) with alpha; with
    # c = 2^520, X^T X overflowed (coef_ all NaN); the exact power-of-two rescaling solves it
    c, alpha = 2.0 ** 520, 2.0 ** -30
    base = Lasso(alpha=alpha).fit(X, y)
    big = Lasso(alpha=alpha * c * c).fit(X * c, y * c)
    np.testing.assert_array_equal(big.coef_, base.coef_)
    assert big.intercept_ == pytest.approx(base.intercept_ * c, rel=1e-12)
    # one group of rows at 1e200 among ordinary ones: a finite fit
    X2, y2 = X.copy(), y.copy()
    X2[:5], y2[:5] = 1e200, -1e200
    assert np.isfinite(Lasso(alpha=0.01).fit(X2, y2).coef_).all()
    # on a Precomputed the Gram diagonal proves ordinary data small (no pass over X); huge
    # data, and entries just above the limit, are still rescaled: the same coefficients
    from fastldp.regression.baselines import _LASSO_SCALE_LIMIT
    from fastldp.regression.local import Precomputed

    for Xp, yp, a in [(X * c, y * c, alpha * c * c), (X2, y2, 0.01), (X, y, alpha)]:
        warm = Lasso(alpha=a).fit_precomputed(Precomputed(Xp, yp))
        np.testing.assert_array_equal(warm.coef_, Lasso(alpha=a).fit(Xp, yp).coef_)
    X3 = X.copy()
    X3[0, 0] = _LASSO_SCALE_LIMIT * 1.5  # its square alone is above the limit's square
    pre = Precomputed(X3, y)
    assert not np.isfinite(pre.gram()).all() or pre.gram()[0, 0] > _LASSO_SCALE_LIMIT ** 2
    np.testing.assert_array_equal(Lasso(alpha=alpha).fit_precomputed(pre).coef_,
                                  Lasso(alpha=alpha).fit(X3, y).coef_)


def test_rows_per_user_takes_each_users_first_rows(noiseless):
    """A user with more rows contributes its first rows_per_user: rows after them change nothing."""
    D = noiseless
    extra = np.flatnonzero(D.users == 7)[:15]
    X = np.concatenate([D.X, 1e200 * np.ones((15, D.X.shape[1]))])  # appended after user 7's
    y = np.concatenate([D.y, -1e200 * np.ones(15)])
    users = np.concatenate([D.users, D.users[extra]])
    for make in (lambda: U2R(epsilon=2.0, k=3, rows_per_user=40, sigma=0.05),
                 lambda: TwoStageSLR(epsilon=2.0, k=3, rows_per_user=40, sigma=0.05)):
        a = make().fit(D.X, D.y, users=D.users, rng=24)
        b = make().fit(X, y, users=users, rng=24)
        np.testing.assert_array_equal(a.coef_, b.coef_)
        assert a.sanitized_["subsampled"] == 0 and b.sanitized_["subsampled"] == 1
        assert b.sanitized_["nonfinite"] == 0  # the extreme rows were never read


def test_users_with_fewer_rows_follow_the_documented_rule(noiseless):
    """A user with fewer rows solves on them; in stage 2 one with < s + 2 rows sends the default."""
    D = noiseless
    keep = ~((D.users == 4) & (np.arange(D.users.shape[0]) % 40 >= 2))  # user 4 keeps 2 rows
    X, y, users = D.X[keep], D.y[keep], D.users[keep]
    defaults = 0
    for seed in range(4):
        est = U2R(epsilon=1e4, k=3, rows_per_user=40, sigma=0.05, rho=D.beta_min).fit(
            X, y, users=users, rng=seed)
        assert est.sanitized_["short"] == 1
        np.testing.assert_array_equal(est.support_recovered_, D.support)
        defaults += est.sanitized_["short_default"]  # 2 < s + 2 = 5 rows in stage 2
    assert defaults > 0  # user 4 was in stage 2 in some seed (n_a + n_b = 2/3 of the users)


def test_local_lasso_on_scaled_data_is_the_float64_answer():
    """float32 overflowed on data scaled by 1e20: empty support; now such users run in float64."""
    from fastldp.regression._rows import group_users
    from fastldp.regression.local import local_lasso, screened_local_lasso

    D = make_sparse_regression(n=20, m=30, d=12, k=2, sigma=0.1, rng=25)
    data = group_users(D.X, D.y, D.users, "test")
    c = 1e20
    alpha = 0.05 * c * c  # the same problem as alpha = 0.05 on the unscaled data
    got = screened_local_lasso(data.X * c, data.y * c, data.counts, alpha, screen=None)
    ref = local_lasso(data.X * c, data.y * c, data.counts, alpha, dtype=np.float64)
    np.testing.assert_array_equal(got != 0, ref != 0)
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-12)
    unscaled = screened_local_lasso(data.X, data.y, data.counts, 0.05, screen=None)
    np.testing.assert_array_equal(got != 0, unscaled != 0)
    assert (got != 0).any()


def test_u2r_support_does_not_depend_on_the_scale(noiseless):
    D = noiseless
    c = 1e20
    kw = dict(epsilon=1e4, k=3, rows_per_user=40, rho=D.beta_min)
    a = U2R(sigma=0.05, **kw).fit(D.X, D.y, users=D.users, rng=26)
    b = U2R(local_alpha=a.calibration_["local_alpha"] * c * c, sigma=0.05, **kw).fit(
        D.X * c, D.y * c, users=D.users, rng=26)
    np.testing.assert_array_equal(a.support_recovered_, D.support)
    np.testing.assert_array_equal(b.support_recovered_, a.support_recovered_)


def test_sum_aggregate_refuses_a_total_above_the_bound():
    summer = ShuffledVectorSum(epsilon=1.0, norm_bound=1.0)
    with pytest.raises(ValueError, match=r"'total'.*n_parties \* norm_bound = 50"):
        summer.sum_aggregate([1e4, 0, 0], 50, rng=0)  # wrapped modulo q to -580 before
    with pytest.raises(ValueError, match="'total'"):
        summer.sum_aggregate([30.0, 40.0, 0.1], 50, rng=0)  # l2 norm 50.0001
    res = summer.sum_aggregate([30.0, 40.0, 0.0], 50, rng=0)  # at the bound: released
    assert np.all(np.abs(res.total - [30.0, 40.0, 0.0]) < 6 * res.noise_sd + 1)


def test_shares_must_meet_half_the_delta():
    """shares=2 gave delta = 1.000005; a count below shares_needed for delta/2 is refused."""
    n, dim = 100, 3
    needed = ShuffledVectorSum(epsilon=1.0, norm_bound=1.0).plan(n, dim)["shares"]
    with pytest.raises(ValueError, match=rf"'shares'.*>= {needed} for {n} parties"):
        ShuffledVectorSum(epsilon=1.0, norm_bound=1.0, shares=2).plan(n, dim)
    with pytest.raises(ValueError, match="'shares'"):  # one below the edge
        ShuffledVectorSum(epsilon=1.0, norm_bound=1.0, shares=needed - 1).plan(n, dim)
    at_edge = ShuffledVectorSum(epsilon=1.0, delta=1e-5, norm_bound=1.0, shares=needed).plan(n, dim)
    assert (1 + math.e) * at_edge["delta_shares"] <= 0.5e-5 and at_edge["delta"] <= 1e-5
    # without noise there is no claim to keep: any count is taken, its delta reported
    assert ShuffledVectorSum(epsilon=None, norm_bound=1.0, shares=2).plan(n, dim)["shares"] == 2


def test_small_epsilon_is_served_or_refused_by_name():
    """eps = 0.001 raised OverflowError (the Renyi orders stopped at 2048)."""
    mu = skellam_variance(0.001, 5e-6, 10, 10)
    assert math.isfinite(mu) and skellam_epsilon(mu, 10, 10, 5e-6) <= 0.001
    assert skellam_epsilon(mu * 0.99, 10, 10, 5e-6) > 0.001  # the smallest variance
    D = make_sparse_regression(n=60, m=10, d=6, k=2, sigma=0.1, rng=27)
    u2r = U2R(epsilon=0.001, k=2, rows_per_user=10).fit(D.X, D.y, users=D.users, rng=0)
    s = u2r.support_recovered_.shape[0]
    for res, radius, parties in zip(u2r.summations_, u2r.radii_, u2r.groups_[1:]):
        plan = ShuffledVectorSum(epsilon=0.001, norm_bound=radius).plan(parties, s)
        assert plan["mu"] == res.mu
        assert skellam_epsilon(res.mu, plan["l2"], plan["l1"], plan["delta_noise"]) <= 0.001
    assert SampleSDP(epsilon=0.001).fit(D.X, D.y, rng=0).privacy_.epsilon == 0.001
    # where nothing can serve: a ValueError naming the epsilon the caller passed
    with pytest.raises(ValueError, match=r"'epsilon' parameter of skellam_variance must be a "
                                         r"float >= \d"):
        skellam_variance(1e-17, 1e-300, 10, 10)
    for est, name in ((U2R(epsilon=1e-12, delta=1e-12, k=2, rows_per_user=10), "U2R"),
                      (SampleSDP(epsilon=1e-12, delta=1e-12), "SampleSDP")):
        with pytest.raises(ValueError, match=rf"'epsilon' parameter of {name} must be a float "
                                             r">= \d") as info:
            est.fit(D.X, D.y, users=D.users, rng=0)
        # and the smallest budget it names is served
        est.set_params(epsilon=info.value.smallest * 1.01).fit(D.X, D.y, users=D.users, rng=0)


@pytest.mark.parametrize("eps,delta", [(0.001, 5e-6), (0.0005, 1e-5), (0.001, 1e-8)])
def test_small_epsilon_calibration_meets_delta_by_direct_hockey_stick(eps, delta):
    """Budgets that no variance served with the Renyi orders stopping at 2048 (OverflowError):
    the extended orders' calibration meets delta, checked against the exact divergence."""
    old = _ALPHAS[_ALPHAS <= 2048]  # the old orders: their floor (mu -> inf) is above eps
    assert np.min(np.log((old - 1) / old) - (math.log(delta) + np.log(old)) / (old - 1)) > eps
    from scipy.special import ive

    mu = skellam_variance(eps, delta, 1, 1)
    z = np.arange(-int(14 * math.sqrt(mu)) - 10, int(14 * math.sqrt(mu)) + 10)
    # Sk(mu) has pmf e^-mu I_|z|(mu) = ive(|z|, mu) (scipy's skellam.pmf is the same, 300x slower)
    p, q = ive(np.abs(z), mu), ive(np.abs(z - 1), mu)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    direct = np.clip(p - math.exp(eps) * q, 0, None).sum()
    assert direct <= delta
    assert direct >= 0.2 * delta  # and not a wasteful calibration


def test_infinite_budgets_and_bounds_are_refused_by_their_owner():
    D = make_sparse_regression(n=60, m=10, d=6, k=2, sigma=0.1, rng=28)
    inf = float("inf")
    with pytest.raises(ValueError, match="'epsilon' parameter of U2R"):
        U2R(epsilon=inf, k=2, rows_per_user=10).fit(D.X, D.y, users=D.users, rng=0)
    with pytest.raises(ValueError, match="'epsilon' parameter of SampleSDP"):
        SampleSDP(epsilon=inf).fit(D.X, D.y, rng=0)
    with pytest.raises(ValueError, match="'epsilon' parameter of ShuffledBits"):
        ShuffledBits(epsilon=inf, d=3)
    with pytest.raises(ValueError, match="'epsilon' parameter of ShuffledVectorSum"):
        ShuffledVectorSum(epsilon=inf, norm_bound=1.0)
    with pytest.raises(ValueError, match="'norm_bound' parameter of ShuffledVectorSum"):
        ShuffledVectorSum(epsilon=1.0, norm_bound=inf)
    with pytest.raises(ValueError, match="'x_clip' parameter of SampleSDP"):
        SampleSDP(epsilon=1.0, clipping="coordinate", x_clip=1e100).fit(D.X, D.y, rng=0)
    with pytest.raises(ValueError, match="'x_radius' parameter of SampleSDP"):
        SampleSDP(epsilon=1.0, x_radius=1e200).fit(D.X, D.y, rng=0)  # a record bound of inf
    # the local-model estimators serve eps = inf (no noise: the privacy_ says so)
    est = TwoStageSLR(epsilon=inf, k=2, rows_per_user=10).fit(D.X, D.y, users=D.users, rng=0)
    assert np.isfinite(est.coef_).all() and est.privacy_.epsilon == inf
    assert np.isfinite(LDPIHT(epsilon=inf, k=2).fit(D.X, D.y, rng=0).coef_).all()


# ---------------------------------------------------------------- the result contract
def test_privacy_reads_like_a_results_privacy():
    """``privacy_`` prints as one line and converts to the shared PrivacyStatement; its fields
    (unit, model, epsilon, delta, rows_per_user, note), which the audit reads, are unchanged."""
    from fastldp.results import PrivacyStatement

    D = make_sparse_regression(n=300, m=20, d=16, k=2, sigma=0.1, rng=40)
    inf = float("inf")
    cases = [
        (U2R(epsilon=4.0, k=2, rows_per_user=20, sigma=0.1), "shuffle DP", "user", 4.0),
        (SampleSDP(epsilon=2.0), "shuffle DP", "sample", 2.0),
        (TwoStageSLR(epsilon=3.0, k=2, rows_per_user=20), "local DP", "user", 3.0),
        (TwoStageSLR(epsilon=inf, k=2, rows_per_user=20), "local DP", "user", inf),
        (LDPIHT(epsilon=5.0, k=2), "local DP", "sample", 5.0),
        (Lasso(alpha=0.01), "not private", "none", inf),
    ]
    for est, model, unit, eps in cases:
        p = est.fit(D.X, D.y, users=D.users, rng=41).privacy_
        statement = p.statement()
        assert isinstance(statement, PrivacyStatement)
        assert (statement.model, statement.unit, statement.epsilon) == (model, unit, eps)
        assert statement.delta == p.delta and not statement.personal and statement.rho is None
        text = str(p)
        assert "\n" not in text and p.budget() in text
        # as a result's privacy prints: "<budget> (<model>, per <unit>)", or "not private"
        assert text == (f"not private ({p.budget()})" if p.model == "none" else str(statement))
        assert len(repr(p)) <= 200 and repr(p).startswith("Privacy(unit=")
        assert p.note == "" or p.note[:20] in repr(p)
    assert str(cases[0][0].privacy_) == "epsilon=4, delta=1e-05 (shuffle DP, per user)"
    assert str(cases[3][0].privacy_) == "epsilon=inf (local DP, per user)"
    assert str(cases[-1][0].privacy_) == "not private (epsilon=inf)"


def test_summation_result_is_a_short_result():
    """SummationResult is on the shared result base: .estimate is .total, .n the parties,
    .privacy the view's (epsilon, delta), and a one-line repr of at most 200 characters
    however many coordinates (the dataclass repr printed whole arrays)."""
    from fastldp.results import REPR_WIDTH, Result

    v = np.full((40, 500), 0.001)
    for epsilon in (1.0, None):
        res = ShuffledVectorSum(epsilon=epsilon, norm_bound=1.0).sum(v, rng=42)
        assert isinstance(res, Result)
        assert res.estimate is res.total and res.n == 40
        assert res.messages == res.n * 500 * res.shares
        assert res.std is None and res.sanitization is None
        assert res.privacy.delta == res.delta
        text = repr(res)
        assert len(text) <= REPR_WIDTH and "\n" not in text and "n=40" in text
    assert res.privacy.model == "not private" and res.privacy.epsilon == float("inf")
    noisy = ShuffledVectorSum(epsilon=1.0, norm_bound=1.0).sum(v, rng=42)
    assert noisy.privacy.model == "shuffle DP" and noisy.privacy.epsilon == 1.0
    # the aggregate path too, and a U2R fit's summations
    agg = ShuffledVectorSum(epsilon=1.0, norm_bound=1.0, max_messages=1).sum(v, rng=43)
    assert not agg.simulated and agg.n == 40 and len(repr(agg)) <= REPR_WIDTH


def test_data_objects_have_short_reprs():
    D = make_sparse_regression(n=50, m=4, d=300, k=3, n_test=10, rng=44)
    assert repr(D) == ("RegressionData(n=50 users, m=4 rows each, d=300, k=3, sigma=0.25, "
                       "n_test=10)")
    from fastldp.regression import KelmarshData

    z = np.zeros((1000, 30))
    K = KelmarshData(z, z[:, 0], z[:100], z[:100, 0], z[:50], z[:50, 0],
                     tuple(f"c{i}" for i in range(30)), 41.0, ("a.csv", "b.csv"))
    assert repr(K) == ("KelmarshData(train=1000, test=100, public=50 rows, 30 predictors, "
                       "y_offset=41, files=2)")


def test_fit_returns_the_estimator_itself():
    # scikit-learn's convention, which the type hints state (fit -> the estimator's class)
    D = make_sparse_regression(n=300, m=20, d=16, k=2, sigma=0.1, rng=45)
    for est in (U2R(epsilon=4.0, k=2, rows_per_user=20), SampleSDP(epsilon=2.0),
                TwoStageSLR(epsilon=3.0, k=2, rows_per_user=20), LDPIHT(epsilon=5.0, k=2),
                Lasso(alpha=0.01)):
        assert est.fit(D.X, D.y, users=D.users, rng=46) is est
        assert est.set_params() is est


def test_shuffle_building_blocks_repr_their_parameters():
    # the house rule: a repr built from the constructor's arguments (it was <... object at 0x>)
    summer = ShuffledVectorSum(epsilon=1.0, delta=1e-6, norm_bound=2.0, scale=50.0)
    twin = eval(repr(summer), {"ShuffledVectorSum": ShuffledVectorSum})
    assert repr(twin) == repr(summer) and twin.plan(100, 3) == summer.plan(100, 3)
    bits = ShuffledBits(epsilon=3.0, delta=1e-6, d=5)
    assert repr(eval(repr(bits), {"ShuffledBits": ShuffledBits})) == repr(bits)
    assert repr(summer.analyzer(100, 3)).startswith("ShuffledSumAnalyzer(ShuffledVectorSum(")
    assert repr(bits.analyzer(50, gamma=0.1)) == (f"ShuffledBitsAnalyzer({bits!r}, n_parties=50, "
                                                  "gamma=0.1)")
