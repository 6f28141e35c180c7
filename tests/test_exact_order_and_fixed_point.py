"""The compiled median and fixed point (fastldp._kernels._exact) against numpy, value for value."""

import numpy as np
import pytest

from fastldp._kernels._exact import median
from fastldp.results import PrivacyStatement


def _same(a: float, b: float) -> bool:
    return a == b or (np.isnan(a) and np.isnan(b))


@pytest.mark.filterwarnings("ignore:overflow encountered")
@pytest.mark.parametrize("values", [
    [1.0], [2.0, 1.0], [-0.0, 0.0], [3.0, -1.0, np.inf, -np.inf], [0.7] * 1001, [0.7] * 1000,
    [1.0, 1.0, 2.0, 2.0], [1.0, 2.0, 2.0, 2.0], [5e-324, -5e-324, 0.0], [1.7e308, 1.7e308],
    [-1.7e308, -1.7e308, 1.0], [1.0, np.nan, 2.0], [np.nan],
    # values sharing their top 16 bits, so that every pass of 12 bits has work
    [1.0 + k * 2.0 ** -52 for k in (7, 3, 4095, 4096, 1, 2 ** 20, 5)],
])
def test_equals_numpy_on_edge_cases(values):
    arr = np.asarray(values, dtype=np.float64)
    assert _same(median(arr), float(np.median(arr)))


def test_equals_numpy_on_random_arrays_with_ties_and_both_signs():
    rng = np.random.default_rng(7)
    for _ in range(400):
        n = int(rng.integers(1, 300))
        base = rng.choice(np.array([-2.0, -1.0, -0.0, 0.0, 1.0, 1.5, 3.0]), size=n)
        arr = base + (rng.random(n) < 0.3) * rng.normal(size=n) * 10.0 ** rng.integers(-300, 300)
        assert _same(median(arr), float(np.median(arr)))
    for n in (99_999, 128_000):  # the budgets of a personalized decode
        arr = rng.uniform(0.5, 1.0, n)
        assert median(arr) == float(np.median(arr))


def test_empty_is_refused():
    with pytest.raises(ValueError, match="empty"):
        median(np.array([], dtype=np.float64))


def test_the_privacy_statement_reports_numpys_median():
    eps = np.random.default_rng(3).uniform(0.5, 2.0, 10_001)
    stmt = PrivacyStatement.local(epsilons=eps)
    assert stmt.epsilon_median == float(np.median(eps))
    assert (stmt.epsilon_min, stmt.epsilon_max) == (eps.min(), eps.max())


def test_fixed_point_is_numpys_frexp_ldexp_rint():
    from fastldp._kernels._exact import fixed_point
    rng = np.random.default_rng(11)
    halfway = (np.arange(1, 4000) * 2.0 + 1) / 2 ** 33 + 0.5  # m 2^32 ends in exactly .5
    for arr in (np.tanh(rng.uniform(0.0, 5.0, 50_000) * 0.5), halfway, -halfway,
                np.array([1.0, 0.5, 2.0 ** -40, 1 - 2.0 ** -53, 5e-324 * 3, 2.0 ** -1022, 0.0,
                          -0.0, -0.75, 1e300]),
                rng.normal(size=2_000) * 10.0 ** rng.integers(-300, 300, 2_000)):
        m, x = np.frexp(arr)
        q, e = fixed_point(arr)
        assert np.array_equal(q, np.rint(np.ldexp(m, 32)).astype(np.int64))
        assert np.array_equal(e, x.astype(np.int64))


def test_threaded_exact_sums_and_fixed_points_do_not_depend_on_the_thread_count():
    from fastldp._kernels._exact import fixed_point, sum_terms
    rng = np.random.default_rng(13)
    for arr in (rng.uniform(0.5, 1.0, 70_001),
                rng.normal(size=100_003) * 10.0 ** rng.integers(-300, 300, 100_003)):
        one = sum_terms(arr, 1)
        q1, x1 = fixed_point(arr, 1)
        for nt in (2, 3, 8):
            k_lo, digits = sum_terms(arr, nt)
            assert k_lo == one[0] and np.array_equal(digits, one[1])
            q, x = fixed_point(arr, nt)
            assert np.array_equal(q, q1) and np.array_equal(x, x1)
    # the error names the first non-finite value whichever thread meets it
    bad = rng.normal(size=80_000)
    bad[[50_000, 70_000]] = [np.inf, np.nan]
    for nt in (1, 2):
        with pytest.raises(ValueError, match="got inf at index 50000"):
            sum_terms(bad, nt)
