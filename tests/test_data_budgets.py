"""Budget profiles under the public cap: support, moments from the known laws, summaries, errors."""

import numpy as np
import pytest
from scipy import stats

from fastldp._random import as_generator
from fastldp.budgets import BUDGET_PROFILES, budget_profile, budget_summary, profile_moments

N = 200_000


@pytest.mark.parametrize("name", BUDGET_PROFILES)
@pytest.mark.parametrize("eps0", [0.25, 1.0, 2.0])
def test_budgets_lie_in_zero_to_cap(name, eps0):
    eps = budget_profile(name, 5000, eps0, rng=3)
    assert eps.shape == (5000,) and eps.dtype == np.float64
    assert np.all(eps > 0) and np.all(eps <= eps0)


@pytest.mark.parametrize("name", BUDGET_PROFILES)
def test_realized_moments_match_the_documented_law(name):
    eps0 = 2.0
    eps = budget_profile(name, N, eps0, rng=11)
    mean, var = profile_moments(name, eps0)
    # the sample mean has sd sqrt(var / n); the sample variance sd sqrt((mu4 - var^2) / n)
    assert abs(eps.mean() - mean) <= 4 * np.sqrt(var / N) + 1e-12
    mu4 = np.mean((eps - mean) ** 4)
    assert abs(eps.var() - var) <= 4 * np.sqrt(max(mu4 - var**2, 0) / N) + 1e-12


def test_h0_is_exactly_homogeneous():
    np.testing.assert_array_equal(budget_profile("H0", 7, 0.75, rng=0), np.full(7, 0.75))
    np.testing.assert_array_equal(budget_profile("H0", 3, 1.0), [1.0, 1.0, 1.0])


def test_h1_at_eps0_two_is_the_papers_profile():
    eps = budget_profile("H1", N, 2.0, rng=5)
    summary = budget_summary(eps, eps0=2.0)
    assert summary["eps0"] == 2.0
    assert 1.5 <= summary["min"] < 1.5 + 1e-3 and 2.0 - 1e-3 < summary["max"] <= 2.0
    assert summary["mean"] == pytest.approx(1.75, abs=4 * 0.5 / np.sqrt(12 * N))
    assert profile_moments("H1", 2.0) == pytest.approx((1.75, 0.5**2 / 12))
    assert stats.kstest((eps - 1.5) / 0.5, "uniform").pvalue > 1e-4


@pytest.mark.parametrize("n", [1, 2, 5, 10, 9999])
def test_two_tier_has_exactly_one_fifth_at_the_cap(n):
    eps = budget_profile("two-tier", n, 1.0, rng=n)
    high = int(np.floor(0.2 * n + 0.5))
    assert np.count_nonzero(eps == 1.0) == high
    assert np.count_nonzero(eps == 0.5) == n - high
    assert profile_moments("two-tier", 1.0) == pytest.approx((0.6, 0.04))


def test_two_tier_positions_are_random():
    a = budget_profile("two-tier", 1000, 1.0, rng=1)
    b = budget_profile("two-tier", 1000, 1.0, rng=2)
    assert not np.array_equal(a, b)
    assert a.sum() == b.sum()


def test_long_tail_is_beta_and_its_inverse_is_pareto():
    eps = budget_profile("long-tail", N, 1.0, rng=9)
    assert stats.kstest(eps, stats.beta(1.5, 1).cdf).pvalue > 1e-4
    assert stats.kstest(1 / eps, stats.pareto(1.5).cdf).pvalue > 1e-4
    assert profile_moments("long-tail", 1.0) == pytest.approx((0.6, 1.5 / (6.25 * 3.5)))
    assert eps.min() < 1e-3  # the heavy tail reaches very small budgets
    two = budget_profile("two-tier", N, 1.0, rng=9)
    assert abs(eps.mean() - two.mean()) < 0.01  # same mean, different spread
    assert eps.std() > 1.2 * two.std()


def test_profiles_are_reproducible_from_a_seed_or_generator():
    a = budget_profile("long-tail", 100, 2.0, rng=42)
    # an int seeds the data purpose's keyed stream (issue 37), not default_rng(42)
    b = budget_profile("long-tail", 100, 2.0, rng=as_generator(42, purpose="data"))
    c = budget_profile("long-tail", 100, 2.0, 42)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert not np.array_equal(a, budget_profile("long-tail", 100, 2.0, rng=43))


def test_budget_summary_fields():
    summary = budget_summary([0.5, 1.0, 1.5])
    assert summary == {"eps0": None, "mean": 1.0, "min": 0.5, "max": 1.5}
    assert budget_summary(np.array([2.0]), eps0=2)["eps0"] == 2.0


@pytest.mark.parametrize(
    "args, exc, match",
    [
        (("H2", 10, 1.0), ValueError, "'name' parameter of budget_profile must be one of 'H0', 'H1'"),
        (("H1", 0, 1.0), ValueError, r"'n' parameter of budget_profile must be an int in \[1, inf\)"),
        (("H1", 2.5, 1.0), TypeError, "'n' parameter"),
        (("H1", 10, float("nan")), ValueError, r"'eps0' parameter .* \(0.0, inf\). Got nan"),
        (("H1", 10, 0.0), ValueError, "'eps0' parameter"),
        (("H1", 10, float("inf")), ValueError, "'eps0' parameter"),
        (("H1", 10, "2"), TypeError, "'eps0' parameter"),
    ],
)
def test_budget_profile_rejects_bad_parameters(args, exc, match):
    with pytest.raises(exc, match=match):
        budget_profile(*args, rng=0)


@pytest.mark.parametrize(
    "eps, eps0, match",
    [
        ([], None, "non-empty"),
        ([1.0, float("nan")], None, "finite budgets"),
        ([1.0, 0.0], None, "finite budgets"),
        ([1.0, 2.5], 2.0, "budgets <= eps0"),
        ([1.0], -1.0, "'eps0' parameter"),
    ],
)
def test_budget_summary_rejects_bad_input(eps, eps0, match):
    with pytest.raises(ValueError, match=match):
        budget_summary(eps, eps0=eps0)
