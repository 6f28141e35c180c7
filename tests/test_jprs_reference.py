"""JPRS against naive twins built from the paper's definitions alone.

``tests/_reference.py`` enumerates ``a_m`` over all sign patterns, takes the
signs from ``numpy.random.Philox`` and sums the sketch identity by identity,
so nothing here shares a table or a kernel with the package. Every check is
deterministic, with tolerances of a few ulps: scaling the sketch or ``c_k``
by 2% (or 0.1%) fails them.
"""

import numpy as np
import pytest

import fastldp
from fastldp.relations import calibration
from fastldp.relations.calibration import a_m_exact, a_m_table, c_k, c_k_table, kappa_k
from _reference import naive_jprs_p_plus, naive_jprs_sketch, naive_kappa_and_c

ULPS = 64 * np.finfo(float).eps


@pytest.mark.parametrize("k", [1, 2, 3, 5, 8, 11, 14])
def test_kappa_and_c_k_match_enumeration(k):
    kappa, c = naive_kappa_and_c(k)
    assert kappa_k(k) == pytest.approx(kappa, rel=ULPS)
    np.testing.assert_allclose(c_k_table(k), c, rtol=ULPS, atol=0)
    for m in range(1, k + 1):
        assert c_k(m, k) == pytest.approx(c[m], rel=ULPS)


def test_a_m_table_meets_its_error_bound_against_exact_fractions():
    k = 3001
    table = a_m_table(k)
    u = 2.0**-53
    for m in range(1, k + 1):
        exact = float(a_m_exact(m))
        assert abs(table[m] / exact - 1.0) <= 1.01 * (m - 1) * u + u, m


def test_calibration_is_linear_in_k():
    # the table of a million entries is O(k) floats: it is built, bounded and monotone
    table = c_k_table(10**6)
    assert table[0] == 0.0 and table[-1] == 1.0
    assert np.all(np.diff(table[1:]) >= -1e-12) and np.all(table[1:] > 0)
    assert calibration.kappa_k(10**6) == pytest.approx(np.sqrt(2 / np.pi), rel=1e-6)


@pytest.mark.parametrize("k", [1, 3, 8])
def test_channel_probabilities_match_the_naive_channel(k):
    rng = np.random.default_rng(k)
    d1, d2 = 5, 7
    p = d1 * d2
    sets = [rng.choice(p, size=rng.integers(0, k + 1), replace=False) for _ in range(40)]
    eps = rng.uniform(0.1, 3.0, len(sets))
    relations = [np.column_stack(np.divmod(np.asarray(s, dtype=np.int64), d2)) for s in sets]
    mech = fastldp.JPRS(shape=(d1, d2), k=k, s=3, codebook_seed=77)
    got = mech.output_probabilities(relations, eps)
    want = [naive_jprs_p_plus(77, i, s, e, k, p) for i, (s, e) in enumerate(zip(sets, eps))]
    np.testing.assert_allclose(got, want, rtol=ULPS, atol=ULPS)


@pytest.mark.parametrize("budgets", ["equal", "mixed"])
@pytest.mark.parametrize("n,d1,d2,k", [(300, 4, 9, 3), (2100, 16, 17, 8)])
def test_sketch_matches_the_naive_estimator(budgets, n, d1, d2, k):
    # equal budgets take the kernel's integer-counting path, mixed ones its table path
    rng = np.random.default_rng(n + k)
    p = d1 * d2
    eps = np.full(n, 0.75) if budgets == "equal" else rng.uniform(0.25, 2.0, n)
    bits = rng.choice(np.array([-1, 1], dtype=np.int8), n)
    ids = rng.choice(2**40, n, replace=False).astype(np.uint64)
    mech = fastldp.JPRS(shape=(d1, d2), k=k, s=5, codebook_seed=2024, n_threads=2)
    got = mech.estimate(bits, epsilons=eps, identities=ids).sketch.ravel()
    scale = np.sqrt(k) / (kappa_k(k) * np.sum(np.tanh(eps / 2) ** 2)) * np.tanh(eps / 2).sum()
    # against the documented fixed point (gamma_i to 32 significant bits): the
    # package's sum is exact and rounded once, the naive one rounds n times
    fixed = naive_jprs_sketch(2024, ids, bits, eps, k, p, fixed_point=True)
    np.testing.assert_allclose(got, fixed, rtol=0, atol=4 * n * np.finfo(float).eps * scale)
    # against Eq. (8) itself: within the fixed point's documented bound 2^-32
    want = naive_jprs_sketch(2024, ids, bits, eps, k, p)
    bound = (2.0**-32 + 4 * n * np.finfo(float).eps) * scale
    np.testing.assert_allclose(got, want, rtol=0, atol=bound)
    # and both tolerances are far below a 0.1% change of the scale
    assert bound < 1e-3 * np.abs(want).max()


def test_privatize_draws_exactly_the_naive_channel():
    # Odd set sizes never tie, so privatize consumes exactly one uniform per identity:
    # replaying the generator gives the bits the naive channel would send.
    rng = np.random.default_rng(5)
    d1, d2, k = 6, 6, 3
    n = 4000
    sizes = rng.choice([1, 3], n)
    sets = [rng.choice(d1 * d2, size=m, replace=False) for m in sizes]
    relations = [np.column_stack(np.divmod(s.astype(np.int64), d2)) for s in sets]
    eps = rng.uniform(0.2, 3.0, n)
    mech = fastldp.JPRS(shape=(d1, d2), k=k, s=3, codebook_seed=99)
    bits = mech.privatize(relations, epsilons=eps, rng=np.random.default_rng(123))
    u = np.random.default_rng(123).random(n)
    p_plus = np.array([naive_jprs_p_plus(99, i, s, e, k, d1 * d2)
                       for i, (s, e) in enumerate(zip(sets, eps))])
    np.testing.assert_array_equal(bits, np.where(u < p_plus, 1, -1))


@pytest.mark.slow
def test_sketch_is_unbiased_over_codebooks_for_varying_set_sizes():
    # E[V | codebook] is the sketch of the expected bits (2 P(+1) - 1 = gamma theta); its
    # mean over codebooks is the gamma^2-weighted mean of the indicator matrices, for
    # every set size m <= k (that is what c_k(m) is for). Tolerance: 4.5 standard
    # errors of the mean over codebooks, per coordinate.
    from fastldp._kernels._sketch import global_sketch

    rng = np.random.default_rng(11)
    d1, d2, k, n = 3, 4, 4, 150
    p = d1 * d2
    sizes = np.resize(np.arange(1, k + 1), n)          # every size 1..k, equally often
    sets = [rng.choice(p, size=m, replace=False) for m in sizes]
    relations = [np.column_stack(np.divmod(s.astype(np.int64), d2)) for s in sets]
    eps = rng.uniform(0.3, 2.0, n)
    gamma2 = np.tanh(eps / 2) ** 2
    target = np.zeros(p)
    for s, g2 in zip(sets, gamma2):
        target[s] += g2
    target /= gamma2.sum()
    ids = np.arange(n, dtype=np.uint64)
    draws = []
    for seed in range(1500):
        mech = fastldp.JPRS(shape=(d1, d2), k=k, s=3, codebook_seed=seed + 1, n_threads=1)
        expected_bits = 2 * mech.output_probabilities(relations, eps) - 1
        w = mech.sketch_scale(eps) * np.tanh(eps / 2) * expected_bits
        draws.append(global_sketch(seed + 1, ids, w, p, 1))
    draws = np.array(draws)
    se = draws.std(axis=0, ddof=1) / np.sqrt(draws.shape[0])
    assert np.all(np.abs(draws.mean(axis=0) - target) <= 4.5 * se)
