"""LDP-IHT (issue 24): both local randomizers against naive twins, the coordinate
estimate's mean and variance, its exact privacy loss, convergence, neighbours."""

from __future__ import annotations

import math

import numpy as np
import pytest

from _neighbours import assert_neighbours, compare, row_neighbour
from fastldp._random import as_generator
from fastldp.regression import LDPIHT, make_sparse_regression
from fastldp.regression.baselines import ldp_iht_coordinate_scale, ldp_iht_laplace_scale

inf = math.inf


def _naive_iht(X, y, *, epsilon, k, iterations, step=1.0, cx=3.0, cy=3.0, cg=2.0, tb=1.0,
               mechanism, seed):
    """Plain-Python LDP-IHT: one record at a time, the fit's draws in the fit's order."""
    gen = as_generator(seed)  # the Generator fit(rng=seed) builds (keyed, issue 37)
    N, d = X.shape
    batches = np.array_split(gen.permutation(N), iterations)
    theta = [0.0] * d
    for batch in batches:
        batch = sorted(int(i) for i in batch)
        nb = len(batch)
        if mechanism == "laplace":
            total = [0.0] * d
            for i in batch:
                x = [min(max(float(v), -cx), cx) for v in X[i]]
                r = sum(x[c] * theta[c] for c in range(d)) - min(max(float(y[i]), -cy), cy)
                for c in range(d):
                    total[c] += min(max(x[c] * r, -cg), cg)
            scale = 2 * cg * d / epsilon
            if scale > 0:
                noise = gen.gamma(nb, scale, d) - gen.gamma(nb, scale, d)
                total = [t + float(z) for t, z in zip(total, noise)]
        else:
            js = gen.integers(0, d, nb)
            total = [0.0] * d
            counts = [0] * d
            for i, j in zip(batch, js):
                x = [min(max(float(v), -cx), cx) for v in X[i]]
                r = sum(x[c] * theta[c] for c in range(d)) - min(max(float(y[i]), -cy), cy)
                total[j] += min(max(x[j] * r, -cg), cg)
                counts[j] += 1
            scale = 2 * cg / epsilon
            if scale > 0:
                noise = gen.gamma(np.array(counts), scale) - gen.gamma(np.array(counts), scale)
                total = [t + float(z) for t, z in zip(total, noise)]
            total = [t * d for t in total]
        z = [theta[c] - step * total[c] / nb for c in range(d)]
        keep = sorted(range(d), key=lambda c: -abs(z[c]))[:k]
        theta = [z[c] if c in keep else 0.0 for c in range(d)]
        norm = math.sqrt(sum(t * t for t in theta))
        if norm > tb:
            theta = [t * tb / norm for t in theta]
    return np.array(theta)


@pytest.fixture(scope="module")
def small():
    return make_sparse_regression(n=30, m=4, d=6, k=2, sigma=0.2, rng=11)


@pytest.mark.parametrize("mechanism", ["coordinate", "laplace"])
@pytest.mark.parametrize("epsilon", [0.7, 4.0, inf])
def test_fit_matches_the_naive_twin(small, mechanism, epsilon):
    """Each randomizer, record by record in plain Python, gives the fit's coefficients.

    Fails if a record's clipping, the sampled coordinate, the d scaling, the Laplace
    scale or the batch split changes (the sums differ only in rounding order).
    """
    for seed in range(3):
        for T in (1, 3):
            est = LDPIHT(epsilon=epsilon, k=2, iterations=T, mechanism=mechanism)
            got = est.fit(small.X, small.y, rng=seed).coef_
            want = _naive_iht(small.X, small.y, epsilon=epsilon, k=2, iterations=T,
                              mechanism=mechanism, seed=seed)
            np.testing.assert_allclose(got, want, rtol=1e-10, atol=1e-12)


def test_coordinate_estimate_is_unbiased_with_the_stated_variance():
    """One step from 0 with no thresholding returns minus the server's estimate g_hat.

    g_hat_j = (d / N) sum_i [j_i = j] (g_ij + L_i), j_i uniform on [d], L_i ~ Laplace(b),
    b = 2 c / eps: E g_hat_j = mean_i g_ij and
    Var g_hat_j = (1 / N^2) sum_i (d (g_ij^2 + 2 b^2) - g_ij^2).
    Over R fits the mean is within 4.5 standard errors of mean_i g_ij (5 coordinates: a
    false alarm below 1e-4), and the sample variance within 5 of its standard deviations,
    sqrt(2 / R) relative for a near-normal sum of N = 400 terms. Fails for a scale of
    2 c d / eps (d^2 / d = 5 times the variance), a factor d - 1, or a biased draw of j.
    """
    rng = np.random.default_rng(3)
    N, d, eps, c = 400, 5, 2.0, 2.0
    X = rng.normal(size=(N, d))
    y = rng.normal(size=N)
    g = np.clip(np.clip(X, -3, 3) * -np.clip(y, -3, 3)[:, None], -c, c)
    b = ldp_iht_coordinate_scale(c, d, eps)
    mean = g.mean(axis=0)
    var = (d * (g ** 2 + 2 * b * b) - g ** 2).sum(axis=0) / N ** 2
    R = 2000
    est = LDPIHT(epsilon=eps, k=d, iterations=1, theta_bound=1e9, grad_clip=c)
    draws = np.array([-est.fit(X, y, rng=s).coef_ for s in range(R)])
    assert np.all(np.abs(draws.mean(axis=0) - mean) < 4.5 * np.sqrt(var / R))
    ratio = draws.var(axis=0, ddof=1) / var
    assert np.all(np.abs(ratio - 1) < 5 * math.sqrt(2 / R)), ratio


def test_coordinate_report_privacy_loss_is_exactly_eps():
    """A report (j, v): j does not depend on the record, v = g_j + Laplace(b) with g_j in
    [-c, c]. The log-likelihood ratio between two records is (|v - g'_j| - |v - g_j|) / b,
    largest at the box's opposite corners and v beyond them: 2 c / b, which the scale
    function makes eps exactly (true at eps, false just below)."""
    for c, d, eps in ((2.0, 256, 4.0), (0.5, 3, 0.3), (1.0, 1, 9.0)):
        b = ldp_iht_coordinate_scale(c, d, eps)
        v = np.linspace(-5 * c - 10 * b, 5 * c + 10 * b, 20001)
        losses = (np.abs(v + c) - np.abs(v - c)) / b  # record +c against record -c
        assert math.isclose(losses.max(), eps, rel_tol=1e-12)
        assert losses.max() > eps * (1 - 1e-9)
    # the scale does not grow with d, unlike the whole-vector report's
    assert ldp_iht_coordinate_scale(2.0, 256, 4.0) == ldp_iht_coordinate_scale(2.0, 1, 4.0) == 1.0
    assert ldp_iht_laplace_scale(2.0, 256, 4.0) == 256.0
    assert ldp_iht_coordinate_scale(2.0, 8, inf) == 0.0
    with pytest.raises(ValueError, match="'grad_clip' parameter of ldp_iht_coordinate_scale"):
        ldp_iht_coordinate_scale(math.nan, 8, 1.0)
    with pytest.raises(ValueError, match="'d' parameter of ldp_iht_coordinate_scale"):
        ldp_iht_coordinate_scale(1.0, 0, 1.0)


@pytest.fixture(scope="module")
def moderate():
    # N = 20,000 records, d = 64, k = 4, beta_min = 0.5
    return make_sparse_regression(n=400, m=50, d=64, k=4, sigma=0.25, rng=21)


def _error(est, D, seed):
    return float(np.linalg.norm(est.fit(D.X, D.y, rng=seed).coef_ - D.theta)
                 / np.linalg.norm(D.theta))


def test_coordinate_reports_converge_where_whole_vector_reports_drown(moderate):
    """At eps = 8 with T = 2 batches of 10,000 records, a coordinate of a batch's mean
    gradient carries privacy noise of sd sqrt(2 / 10^4) 2 c d / eps = 0.45 with whole-vector
    reports, against beta_min = 0.5 (the top 4 of 64 are mostly noise), and
    sqrt(2 d / 10^4) 2 c / eps = 0.057 with one coordinate per record, plus a sampling
    sd of sqrt(d E g_j^2 / 10^4) <= 0.09. The first must stay far from theta (error > 0.7
    in every seed), the second close (< 0.25: 4 coordinates of sd <= 0.11)."""
    D = moderate
    for seed in range(3):
        assert _error(LDPIHT(epsilon=8.0, k=4), D, seed) < 0.25
        assert _error(LDPIHT(epsilon=8.0, k=4, mechanism="laplace"), D, seed) > 0.7


def test_noiseless_fits_converge(moderate):
    """eps = inf: the whole-vector form is exact gradient descent on clipped data; after
    10 iterations its error is one batch's least-squares error, sqrt(k sigma^2 / (N / T))
    = 0.011 (< 0.02); the coordinate form keeps its sampling noise,
    sd sqrt(d E g_j^2 / (N / T)) per coordinate with E g_j^2 about sigma^2 near theta:
    0.028 at T = 2, 4 coordinates: about 0.06 (< 0.15). Both decrease from iteration 1
    (the clipping shrinks the first step by about a fifth)."""
    D = moderate
    exact = LDPIHT(epsilon=inf, k=4, iterations=10, mechanism="laplace").fit(D.X, D.y, rng=0)
    errs = np.linalg.norm(exact.coef_path_ - D.theta, axis=1)
    assert errs[-1] < 0.02 and errs[0] > 5 * errs[-1]
    coord = LDPIHT(epsilon=inf, k=4).fit(D.X, D.y, rng=0)
    errs = np.linalg.norm(coord.coef_path_ - D.theta, axis=1)
    assert errs[-1] < 0.15 and errs[0] > errs[-1]
    np.testing.assert_array_equal(coord.coef_path_[-1], coord.coef_)
    assert coord.calibration_ == {"laplace_scale": 0.0, "batches": 2, "mechanism": "coordinate"}


def test_mechanism_is_checked(small):
    with pytest.raises(ValueError, match="'mechanism' parameter of LDPIHT must be 'coordinate' "
                                         "or 'laplace'. Got 'duchi' instead."):
        LDPIHT(epsilon=1.0, k=2, mechanism="duchi").fit(small.X, small.y, rng=0)


def test_fit_precomputed_is_fit(small):
    est = LDPIHT(epsilon=2.0, k=2)
    pre = est.precompute(small.X, small.y)
    np.testing.assert_array_equal(est.fit_precomputed(pre, rng=4).coef_,
                                  LDPIHT(epsilon=2.0, k=2).fit(small.X, small.y, rng=4).coef_)


@pytest.mark.parametrize("mechanism", ["coordinate", "laplace"])
def test_neighbours(mechanism):
    """One row replaced by an extreme one: the same public calibration, nothing possible on
    one side only (both randomizers)."""
    D = make_sparse_regression(n=100, m=5, d=8, k=2, sigma=0.1, rng=5)
    X2, y2 = row_neighbour(D.X, D.y, 11, "extreme")

    def make(X, y):
        return lambda seed: LDPIHT(epsilon=2.0, k=2, mechanism=mechanism).fit(X, y, rng=seed)

    assert_neighbours(compare(make(D.X, D.y), make(X2, y2),
                              lambda est: dict(est.calibration_, privacy=est.privacy_),
                              range(5)))
