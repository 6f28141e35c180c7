"""Scalar randomizers of paper 001 (Table 2): constants, unbiasedness, exact LDP, errors."""

import math

import numpy as np
import pytest

from fastldp._random import as_generator
from fastldp.oracles.randomizers import (
    Duchi,
    Laplace,
    Piecewise,
    make_randomizer,
    min_variance_randomizer,
)

EPS = [0.3, 1.0, 2.5]
CLASSES = [Laplace, Piecewise, Duchi]


@pytest.mark.parametrize("eps", EPS)
def test_table2_constants(eps):
    e, e2 = math.exp(eps), math.exp(eps / 2)
    assert Laplace(epsilon=eps).c_eps == math.inf
    assert Laplace(epsilon=eps).V_eps == pytest.approx(8 / eps**2, rel=1e-14)
    assert Piecewise(epsilon=eps).c_eps == pytest.approx((e2 + 1) / (e2 - 1), rel=1e-13)
    assert Piecewise(epsilon=eps).V_eps == pytest.approx(4 * e2 / (3 * (e2 - 1) ** 2), rel=1e-13)
    assert Duchi(epsilon=eps).c_eps == pytest.approx((e + 1) / (e - 1), rel=1e-13)
    assert Duchi(epsilon=eps).V_eps == pytest.approx(((e + 1) / (e - 1)) ** 2, rel=1e-13)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("eps", EPS)
def test_V_eps_is_the_max_of_the_exact_variance(cls, eps):
    q = cls(epsilon=eps)
    grid = np.linspace(-1, 1, 2001)
    assert q.variance(grid).max() == pytest.approx(q.V_eps, rel=1e-12)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_unbiased_with_the_stated_variance(cls, eps):
    q = cls(epsilon=eps)
    n = 200_000
    for u in (-1.0, -0.3, 0.0, 0.7, 1.0):
        y = q.privatize(np.full(n, u), rng=int(1000 * (u + 2)))
        var = float(q.variance(u))
        assert abs(y.mean() - u) < 5 * math.sqrt(var / n)
        # second moment: sd of mean(Y^2) <= sqrt(E[Y^4] / n); E[Y^4] bounded per randomizer
        m2 = var + u * u
        if cls is Laplace:
            s = q.scale
            m4 = u**4 + 12 * u * u * s * s + 24 * s**4  # E[(u + W)^4], W ~ Lap(s)
        else:
            m4 = q.c_eps**4
        assert abs((y * y).mean() - m2) < 5 * math.sqrt(m4 / n)


@pytest.mark.parametrize("cls", CLASSES)
def test_outputs_are_legal_and_reproducible(cls):
    q = cls(epsilon=1.0)
    u = np.random.default_rng(0).uniform(-1, 1, 5000)
    a = q.privatize(u, rng=7)
    b = q.privatize(u, rng=as_generator(7))  # the Generator rng=7 builds (keyed, issue 37)
    np.testing.assert_array_equal(a, b)
    assert q.is_legal(a).all()
    assert not q.is_legal(np.array([np.nan, np.inf])).any()
    if cls is not Laplace:
        assert np.abs(a).max() <= q.c_eps
        assert not q.is_legal(np.array([q.c_eps * 1.01])).any()


@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_duchi_likelihood_ratio_is_exactly_e_eps(eps):
    q = Duchi(epsilon=eps)
    us = np.linspace(-1, 1, 41)
    pp = q.density(q.C, us)
    pm = q.density(-q.C, us)
    assert np.allclose(pp + pm, 1.0)
    ratio = max(pp.max() / pp.min(), pm.max() / pm.min())
    assert ratio == pytest.approx(math.exp(eps), rel=1e-12)
    assert ratio <= math.exp(eps) * (1 + 1e-12)


@pytest.mark.parametrize("cls", [Laplace, Piecewise])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0])
def test_density_ratio_on_a_grid_reaches_e_eps_and_no_more(cls, eps):
    q = cls(epsilon=eps)
    c = q.c_eps if np.isfinite(q.c_eps) else 4.0
    ys = np.linspace(-c, c, 801)
    us = np.linspace(-1, 1, 81)
    dens = q.density(ys[None, :], us[:, None])  # (u, y)
    assert (dens > 0).all()
    ratio = (dens.max(axis=0) / dens.min(axis=0)).max()
    assert ratio == pytest.approx(math.exp(eps), rel=1e-9)
    assert ratio <= math.exp(eps) * (1 + 1e-12)


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_piecewise_density_integrates_to_one_and_matches_the_sampler(eps):
    q = Piecewise(epsilon=eps)
    b, p = q.b, q.p
    assert p * (b - 1) + p * math.exp(-eps) * (b + 1) == pytest.approx(1.0, rel=1e-13)
    n = 200_000
    u = 0.4
    y = q.privatize(np.full(n, u), rng=3)
    left, right = q.band(u)
    frac = ((y >= left) & (y <= right)).mean()
    expect = p * (b - 1)
    assert abs(frac - expect) < 5 * math.sqrt(expect * (1 - expect) / n)
    # below the band the density is flat: half of [-b, l) holds half its mass
    low = y < left
    mid = (-b + left) / 2
    assert abs((y[low] < mid).mean() - 0.5) < 5 * math.sqrt(0.25 / low.sum())


def test_min_variance_randomizer_follows_V_eps():
    assert isinstance(min_variance_randomizer(0.5), Duchi)
    assert isinstance(min_variance_randomizer(3.0), Piecewise)
    for eps in (0.2, 1.0, 2.5, 5.0):
        best = min_variance_randomizer(eps)
        assert best.V_eps == min(Piecewise(epsilon=eps).V_eps, Duchi(epsilon=eps).V_eps)
    assert isinstance(make_randomizer("auto", 3.0, "X"), Piecewise)


@pytest.mark.parametrize("cls", CLASSES)
@pytest.mark.parametrize("bad", [0, -1, float("nan"), float("inf"), 2.2e-313, 1e-151])
def test_bad_epsilon_raises_naming_it(cls, bad):
    # the floor: Laplace(epsilon=2.2e-313) once released inf (its scale 1/eps overflows)
    with pytest.raises(ValueError, match=rf"The 'epsilon' parameter of {cls.__name__} must be a float in \[1e-150"):
        cls(epsilon=bad)


@pytest.mark.parametrize("cls", CLASSES)
def test_inputs_outside_the_unit_interval_raise(cls):
    q = cls(epsilon=1.0)
    for bad in ([1.5], [np.nan], [-1.0000001]):
        with pytest.raises(ValueError, match=r"'u' parameter .* must be an array of floats in \[-1.0, 1.0\]"):
            q.privatize(np.array(bad), rng=0)


def test_make_randomizer_checks_the_name_and_epsilon():
    with pytest.raises(ValueError, match="The 'randomizer' parameter of RPC must be one of"):
        make_randomizer("gauss", 1.0, "RPC")
    with pytest.raises(ValueError, match="epsilon=1.0"):
        make_randomizer(Duchi(epsilon=2.0), 1.0, "RPC")
    assert repr(Duchi(epsilon=0.5)) == "Duchi(epsilon=0.5)"
