"""RPC's exact variance (RPC.variance) against simulation, and R="min-variance" against brute force."""

import itertools
import math

import numpy as np
import pytest

from fastldp.oracles.randomizers import Duchi, Laplace, Piecewise
from fastldp.vectors.rpc import (
    RPC,
    clipping_alpha,
    min_variance_threshold,
    projection_law,
    report_second_moment,
)

RANDOMIZERS = {"duchi": Duchi, "piecewise": Piecewise, "laplace": Laplace}


# ---------------------------------------------------------------- simulation
def _simulate(mech, x, *, trials, seed):
    """``trials`` independent estimates from the users ``x`` (dense ``(n, d)``).

    Replica ``t`` holds the same users under fresh identities, hence fresh
    public signs ``S_i``, and fresh client coins. Its raw estimate is
    ``(alpha / n) sum_i Y_i S_i``; the first replica is checked against
    :meth:`RPC.estimate`.
    """
    n, d = x.shape
    ids = np.arange(n * trials, dtype=np.uint64)
    reports = mech.privatize(np.tile(x, (trials, 1)), identities=ids, rng=seed)
    signs = mech.sign_vectors(ids, np.arange(d))
    contrib = (mech.alpha * reports)[:, None] * signs
    est = contrib.reshape(trials, n, d).mean(axis=1)
    first = mech.estimate(reports[:n], identities=ids[:n]).raw
    np.testing.assert_allclose(est[0], first, rtol=1e-12, atol=1e-12)
    return est


def _q_statistic(est, mu, var):
    """Per trial ``q_t = mean_j (mu_hat_tj - mu_j)^2 / var_j``; E[q_t] = 1 iff ``var`` is exact.

    The raw estimate is unbiased (Lemma 2), so the squared errors use the true
    ``mu`` (no degrees of freedom lost). The ``q_t`` are independent across
    trials, so their mean has standard error ``sd(q) / sqrt(T)``, estimated
    from the trials themselves: this is the sampling sd of the (pooled) sample
    variance, including the kurtosis of the estimate and the correlation
    between coordinates.
    """
    q = ((est - mu) ** 2 / var).mean(axis=1)
    return q.mean(), q.std(ddof=1) / math.sqrt(q.shape[0])


def _passes(est, mu, var):
    mean, se = _q_statistic(est, mu, var)
    return abs(mean - 1.0) < 4.0 * se, mean, se


# users: n = 8, d = 10, m = 4; rows 5-7 are short and get padded
FREQ = np.array([
    [1, 1, 1, 1, 0, 0, 0, 0, 0, 0],
    [1, 0, 1, 0, 1, 1, 0, 0, 0, 0],
    [0, 1, 0, 0, 1, 0, 1, 1, 0, 0],
    [1, 0, 0, 0, 0, 0, 1, 0, 1, 1],
    [0, 0, 1, 1, 0, 1, 0, 1, 0, 0],
    [1, 0, 0, 0, 0, 0, 0, 0, 0, 0],
    [0, 0, 0, 0, 0, 0, 1, 0, 0, 1],
    [0, 0, 0, 0, 0, 0, 0, 0, 0, 0],
], dtype=np.float64)
SIGNED = FREQ * np.array([[1, -1, 1, -1, 1, -1, 1, -1, 1, 1]] * 8)
SIGNED[1, 0] = -1  # coordinate 0 holds +1 and -1: s_0 = 3/8 > |mu_0| = 1/8
SIGNED[3, 0] = -1
GENERAL = SIGNED * np.array([0.3, 1.0, 0.7, 0.5, 0.2, 0.9, 0.6, 0.4, 0.8, 0.1])

CASES = [
    # (name, randomizer, eps, R, route, data)
    ("duchi-default-R", "duchi", 1.0, None, "ternary", FREQ),
    ("duchi-R1", "duchi", 0.5, 1, "ternary", SIGNED),
    ("piecewise-R1", "piecewise", 2.0, 1, "ternary", SIGNED),
    ("piecewise-R3", "piecewise", 2.5, 3, "ternary", FREQ),
    ("laplace-R2", "laplace", 1.5, 2, "ternary", SIGNED),
    ("laplace-R3.5", "laplace", 2.0, 3.5, "ternary", FREQ),
    ("piecewise-rounded", "piecewise", 1.0, 2, "rounded", GENERAL),
    ("duchi-rounded", "duchi", 1.0, 1, "rounded", GENERAL),
    ("laplace-rounded", "laplace", 1.0, 1, "rounded", GENERAL),
]


@pytest.mark.parametrize("name,randomizer,eps,R,route,x", CASES, ids=[c[0] for c in CASES])
def test_exact_variance_matches_simulation_and_a_2_percent_error_would_not(
        name, randomizer, eps, R, route, x):
    n, d = x.shape
    mech = RPC(d=d, m=4, epsilon=eps, randomizer=randomizer, R=R, values=route,
               codebook_seed=11, n_threads=1)
    mu = x.mean(axis=0)
    s = (x**2).mean(axis=0)
    var = mech.variance(mu, n, second_moment=s)
    # 150,000 trials: at 120,000, laplace-rounded's se is 0.00248-0.00252 over seeds, so
    # 4 se < 0.01 held or not by the seed's luck (it failed once int seeds were keyed, issue 37)
    est = _simulate(mech, x, trials=150_000, seed=sum(map(ord, name)))
    ok, mean, se = _passes(est, mu, var)
    assert ok, f"mean q = {mean:.5f}, se = {se:.5f}"
    # the test resolves 2%: a formula off by 2% either way is rejected
    assert 4.0 * se < 0.01
    assert not _passes(est, mu, 1.02 * var)[0]
    assert not _passes(est, mu, 0.98 * var)[0]


# ---------------------------------------------------------------- closed forms
def _brute_K(m, R, randomizer):
    """E[R^2 Var_Q(u / R) + u^2] over all 2^m sign patterns."""
    total = 0.0
    for signs in itertools.product((-1, 1), repeat=m):
        u = max(-R, min(R, sum(signs)))
        total += R * R * float(randomizer.variance(u / R)) + u * u
    return total / 2**m


@pytest.mark.parametrize("m", [1, 2, 3, 4, 5, 8])
def test_second_moment_matches_the_closed_forms_and_all_sign_patterns(m):
    values, probs = projection_law(m)
    assert probs.sum() == pytest.approx(1.0, abs=1e-15)
    assert np.dot(probs, values**2) == pytest.approx(m, rel=1e-14)   # E[W^2] = m
    for eps in (0.5, 1.0, 3.0):
        for R in sorted({1, 1.5, 2, math.ceil(math.sqrt(m)), m, m + 2}):
            u = np.clip(values, -R, R)
            Eu2 = float(np.dot(probs, u**2))
            duchi, pw, lap = Duchi(epsilon=eps), Piecewise(epsilon=eps), Laplace(epsilon=eps)
            h = math.expm1(eps / 2)
            closed = {
                duchi: R * R * duchi.C**2,
                lap: R * R * 8 / eps**2 + Eu2,
                pw: (1 + 1 / h) * Eu2 + R * R * (h + 4) / (3 * h * h),
            }
            for q, want in closed.items():
                got = report_second_moment(m, R, q)
                assert got == pytest.approx(want, rel=1e-12)
                assert got == pytest.approx(_brute_K(m, R, q), rel=1e-12)


def test_duchi_variance_is_the_issue_formula_and_theorem1_overshoots_by_alpha2_m():
    for m, eps, R in [(5, 0.5, None), (10, 1.0, 1), (20, 2.5, 7), (50, 1.0, None)]:
        mech = RPC(d=100, m=m, epsilon=eps, R=R, codebook_seed=0, n_threads=1)
        mu = np.linspace(0, 1, 100)
        n = 10_000
        c = mech.randomizer.c_eps
        want = (mech.alpha**2 * mech.R**2 * c**2 - mu) / n
        np.testing.assert_allclose(mech.variance(mu, n), want, rtol=1e-12)
        gap = mech.variance_bound(n) - mech.variance(mu, n)
        np.testing.assert_allclose(gap, (mech.alpha**2 * m + mu) / n, rtol=1e-9)


@pytest.mark.parametrize("randomizer", ["duchi", "piecewise", "laplace"])
def test_theorem1_bound_is_above_the_exact_variance(randomizer):
    for m in (1, 3, 10, 40):
        for R in range(1, m + 2):
            for eps in (0.3, 1.0, 4.0):
                mech = RPC(d=max(m, 2), m=m, epsilon=eps, randomizer=randomizer, R=R,
                           codebook_seed=0, n_threads=1)
                assert mech.variance(0.0, 100) <= mech.variance_bound(100) * (1 + 1e-12)


def test_variance_arguments_shapes_and_errors():
    mech = RPC(d=4, m=2, epsilon=1.0, codebook_seed=0, n_threads=1)
    assert mech.variance(0.25, 10).shape == ()
    assert mech.variance([0.0, 0.5, -0.5, 1.0], 10).shape == (4,)
    # default s = |mu|; an explicit s overrides it
    assert mech.variance(-0.5, 10) == mech.variance(0.5, 10)
    assert mech.variance(0.5, 10, second_moment=0.8) < mech.variance(0.5, 10)
    with pytest.raises(ValueError, match="'mu' parameter of RPC.variance"):
        mech.variance(1.5, 10)
    with pytest.raises(ValueError, match="'second_moment' parameter of RPC.variance"):
        mech.variance(0.5, 10, second_moment=-0.1)
    with pytest.raises(ValueError, match="'n' parameter of RPC.variance"):
        mech.variance(0.5, 0)
    direct = RPC(d=4, m=2, epsilon=1.0, values="direct", R=2.0, codebook_seed=0)
    with pytest.raises(ValueError, match="exact on the 'ternary' and 'rounded' routes"):
        direct.variance(0.0, 10)
    with pytest.raises(ValueError, match="exact on the 'ternary' and 'rounded' routes"):
        RPC(d=4, m=2, epsilon=1.0, pad=False, codebook_seed=0).variance(0.0, 10)


# ---------------------------------------------------------------- R = "min-variance"
def _brute_force_R(m, eps, randomizer, mu):
    best = None
    for R in range(1, m + 1):
        mech = RPC(d=max(m, 2), m=m, epsilon=eps, randomizer=randomizer, R=R,
                   codebook_seed=0, n_threads=1)
        v = float(np.mean(mech.variance(mu, 1000)))
        if best is None or v < best[0]:
            best = (v, R, mech.alpha)
    return best


@pytest.mark.parametrize("randomizer", ["duchi", "piecewise", "laplace"])
def test_min_variance_R_is_the_brute_force_argmin_over_1_to_m(randomizer):
    for m in list(range(1, 13)) + [20, 50]:
        for eps in (0.5, 1.0, 2.5, 5.0):
            mech = RPC(d=max(m, 2), m=m, epsilon=eps, randomizer=randomizer, R="min-variance",
                       codebook_seed=0, n_threads=1)
            assert mech.R_rule == "min-variance"
            # the argmin does not depend on the data: mu = 0 and mu = 0.4 agree
            for mu in (0.0, 0.4):
                v, R, alpha = _brute_force_R(m, eps, randomizer, mu)
                assert mech.R == R, (m, eps)
                assert mech.alpha == alpha == clipping_alpha(m, R)
                assert float(np.mean(mech.variance(mu, 1000))) == pytest.approx(v, rel=1e-12)


def test_min_variance_R_is_1_with_duchi():
    for m in range(1, 61):
        for eps in (0.1, 0.5, 1.0, 2.5, 8.0):
            assert min_variance_threshold(m, Duchi(epsilon=eps))[0] == 1.0


def test_auto_with_min_variance_picks_randomizer_and_R_jointly():
    for m in (1, 5, 10, 20, 50):
        for eps in (0.5, 1.0, 1.5, 2.0, 2.5, 4.0):
            mech = RPC(d=max(m, 2), m=m, epsilon=eps, randomizer="auto", R="min-variance",
                       codebook_seed=0, n_threads=1)
            cands = []
            for name in ("duchi", "piecewise"):
                v, R, _ = _brute_force_R(m, eps, name, 0.0)
                cands.append((v, name, R))
            v, name, R = min(cands)
            assert (mech.randomizer.name, mech.R) == (name, R), (m, eps)
            # never worse than the paper's threshold with V_eps's randomizer
            paper = RPC(d=max(m, 2), m=m, epsilon=eps, randomizer="auto", codebook_seed=0)
            assert mech.variance(0.0, 10) <= paper.variance(0.0, 10)


def test_default_R_is_unchanged_and_min_variance_is_the_same_mechanism_as_its_R():
    for m in (1, 4, 5, 10, 50):
        mech = RPC(d=max(m, 2), m=m, epsilon=1.0, codebook_seed=0)
        assert mech.R == math.ceil(math.sqrt(m)) and mech.R_rule == "default"
    assert RPC(d=4, m=2, epsilon=1.0, R=2, codebook_seed=0).R_rule == "given"
    x = FREQ
    a = RPC(d=10, m=4, epsilon=1.0, R="min-variance", codebook_seed=5, n_threads=1)
    b = RPC(d=10, m=4, epsilon=1.0, R=1, codebook_seed=5, n_threads=1)
    assert a.R == b.R == 1.0 and a.alpha == b.alpha
    np.testing.assert_array_equal(a.privatize(x, rng=3), b.privatize(x, rng=3))


@pytest.mark.parametrize("kwargs,match", [
    ({"R": "smallest"}, r"'R' parameter of RPC must be one of 'min-variance'"),
    ({"R": "min-variance", "values": "direct"}, r"can be 'min-variance' only on the 'ternary'"),
    ({"R": "min-variance", "pad": False}, r"can be 'min-variance' only on the 'ternary'"),
])
def test_min_variance_errors(kwargs, match):
    with pytest.raises(ValueError, match=match):
        RPC(d=10, m=3, epsilon=1.0, **kwargs)


# ---------------------------------------------------------------- the plug-in variance
def _skewed_users(n, d, m, rng, kind):
    """``m`` distinct keys per user, key ``j`` with weight ``1 / (j + 1)`` (Gumbel top-m).

    ``kind``: ``"frequency"`` (value 1), ``"one-signed"`` (coordinate ``j``
    holds ``(-1)^j``), ``"mixed"`` (a fair sign per entry) or ``"general"``
    (a value in ``[-1, 1]`` per entry, of sign ``(-1)^j``).
    """
    logits = -np.log(np.arange(1.0, d + 1.0))
    keys = np.argsort(-(logits + rng.gumbel(size=(n, d))), axis=1)[:, :m]
    signs = np.where(keys % 2 == 0, 1.0, -1.0)
    values = {"frequency": np.ones(keys.shape), "one-signed": signs,
              "mixed": np.where(rng.random(keys.shape) < 0.5, 1.0, -1.0),
              "general": signs * rng.uniform(0.2, 1.0, keys.shape)}[kind]
    x = np.zeros((n, d))
    x[np.arange(n)[:, None], keys] = values
    return x


def _plug_in_runs(mech, x, trials, seed):
    """``trials`` estimates of ``x`` under fresh identities and coins: (raw, variances)."""
    n = x.shape[0]
    raws, variances = [], []
    for t in range(trials):
        ids = np.arange(t * n, (t + 1) * n, dtype=np.uint64)
        est = mech.estimate(mech.privatize(x, identities=ids, rng=np.random.SeedSequence([seed, t])), identities=ids)
        raws.append(est.raw)
        variances.append(est.variances)
    return np.array(raws), np.array(variances)


PLUG_IN_CASES = [
    # (name, randomizer, eps, R, route, kind): s_j = |mu_j| in the first three
    ("duchi-frequency", "duchi", 1.0, None, "ternary", "frequency"),
    ("piecewise-frequency", "piecewise", 2.0, 2, "ternary", "frequency"),
    ("laplace-one-signed", "laplace", 1.5, 2, "ternary", "one-signed"),
    ("duchi-mixed-signs", "duchi", 1.0, 1, "ternary", "mixed"),
    ("piecewise-rounded", "piecewise", 1.0, 2, "rounded", "general"),
]


@pytest.mark.slow
@pytest.mark.parametrize("name,randomizer,eps,R,route,kind", PLUG_IN_CASES,
                         ids=[c[0] for c in PLUG_IN_CASES])
def test_plug_in_variance_agrees_with_the_exact_variance_and_the_empirical_one(
        name, randomizer, eps, R, route, kind):
    n, d, m, trials = 1000, 24, 3, 400
    x = _skewed_users(n, d, m, np.random.default_rng(sum(map(ord, name))), kind)
    mech = RPC(d=d, m=m, epsilon=eps, randomizer=randomizer, R=R, values=route,
               codebook_seed=5, n_threads=1)
    mu, s = x.mean(axis=0), (x**2).mean(axis=0)
    exact = mech.variance(mu, n, second_moment=s)
    raw, plug = _plug_in_runs(mech, x, trials, sum(map(ord, name)))
    mean_plug = plug.mean(axis=0)

    # 1. Against RPC.variance at the true mean. The plug-in takes s_j as |mu_hat_j|:
    # in expectation it is exact minus the documented gap (|mu_j| - s_j) / n, up to
    # E|mu_hat_j| - |mu_j|, which is in [0, sd_j]; plus the mean's sampling error.
    gap = (s - np.minimum(np.abs(mu), 1.0)) / n
    tol = 4 * plug.std(axis=0, ddof=1) / math.sqrt(trials) + np.sqrt(exact) / n
    assert np.all(np.abs(mean_plug - (exact + gap)) <= tol), np.abs(mean_plug - exact - gap) / tol
    if kind in ("frequency", "one-signed"):
        assert np.all(gap == 0)  # here the plug-in is unbiased for RPC.variance(mu, n)
    if kind == "mixed":
        assert np.all(gap >= 0) and gap.max() > 0  # s_j > |mu_j|: the plug-in is conservative

    # 2. Against the empirical variance: q_t = mean_j (mu_hat_tj - mu_j)^2 / plug_j has mean
    # 1 when the plug-in is right (the estimate is unbiased, Lemma 2), with a standard error
    # from the trials themselves; the plug-in's own error is at most tol / plug.
    q = ((raw - mu) ** 2 / mean_plug).mean(axis=1)
    se = q.std(ddof=1) / math.sqrt(trials)
    bias = np.mean((exact - mean_plug) / mean_plug)  # 0 up to tol where gap is 0
    slack = np.max((tol + np.abs(gap)) / mean_plug)
    assert abs(q.mean() - 1.0 - bias) < 4 * se + slack
    if kind in ("frequency", "one-signed"):
        assert abs(q.mean() - 1.0) < 4 * se + slack
        # the comparison resolves a 12% error in the plug-in either way
        for wrong in (1.12, 0.88):
            assert abs(((raw - mu) ** 2 / (wrong * mean_plug)).mean() - 1.0) > 4 * se + slack


def test_plug_in_variance_is_finite_and_never_raises_on_hostile_reports():
    mech = RPC(d=5, m=2, epsilon=1.0, randomizer="laplace", codebook_seed=1)
    reports = np.array([1e300, -1e308, np.inf, np.nan, "a", 0.5], dtype=object)
    est = mech.estimate(reports)
    assert est.variances.shape == (5,) and not np.isnan(est.variances).any()
    assert est.sanitization.n_valid == 3
