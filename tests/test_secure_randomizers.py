"""Floating-point-safe randomizers: Laplace(secure=True) and DiscretePiecewise.

Naive twins: the discrete Laplace pmf of fastldp.noise (H4's exact law) mixed by hand
for the secure Laplace; the Piecewise grid channel written from its description in
fractions for DiscretePiecewise.
"""

import math
from decimal import Decimal, localcontext
from fractions import Fraction

import numpy as np
import pytest
from scipy import stats

from fastldp._random import as_generator
from fastldp.audit import audit_law
from fastldp.oracles._laws import discrete_piecewise_law
from fastldp.noise import discrete_laplace_pmf
from fastldp.oracles.randomizers import DiscretePiecewise, Laplace, Piecewise


# ----------------------------------------------------------------- Laplace(secure=True)
def _units(eps, g):
    """The scale in grid units, from the docstring: ceil(2^16 * 2 / (g eps)) / 2^16."""
    target = Fraction(2) / (Fraction(g) * Fraction(eps))
    return Fraction(math.ceil(target * 2**16), 2**16)


def _twin_pmf(k, u, eps, g, scale_factor=1):
    """P(Y = k g | u): the rounding mixture of two grid inputs, each plus discrete Laplace.

    ``scale_factor`` scales the noise (the power check of the law test uses 1.1).
    """
    t = _units(eps, g) * Fraction(scale_factor)
    x = Fraction(u) / Fraction(g)
    low = math.floor(x)
    f = float(x - low)
    return ((1 - f) * discrete_laplace_pmf(k - low, t)
            + f * discrete_laplace_pmf(k - low - 1, t))


def test_default_laplace_is_bit_identical_to_numpy():
    u = np.linspace(-1, 1, 1001)
    y = Laplace(epsilon=1.5).privatize(u, rng=7)
    # rng=7 draws numpy's laplace from the keyed Generator as_generator(7) (issue 37)
    np.testing.assert_array_equal(y, u + as_generator(7).laplace(0.0, 2 / 1.5, u.shape))
    assert repr(Laplace(epsilon=1.5)) == "Laplace(epsilon=1.5)"


@pytest.mark.parametrize("eps", [0.1, 1.0, 7.0])
@pytest.mark.parametrize("g", [2.0**-10, 2.0**-3, 1.0])
def test_secure_effective_epsilon_is_exact_and_at_most_eps(eps, g):
    q = Laplace(epsilon=eps, secure=True, grid=g)
    t = _units(eps, g)
    assert q.units == t
    exact = Fraction(2) / (Fraction(g) * t)
    assert exact <= Fraction(eps)
    assert Fraction(q.effective_epsilon) >= exact                 # rounded up, never down
    assert q.effective_epsilon - float(exact) <= 1e-15 * float(exact)
    # the rounding of t costs at most 2^-16 g eps / 2 relative
    assert float(exact) >= eps * (1 - 2.0**-16 * g * eps / 2) * (1 - 1e-15)
    assert q.privacy.epsilon == q.effective_epsilon


@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_secure_largest_ratio_is_the_effective_epsilon(eps):
    """Exact law on a truncated support: the ratio reaches e^eps' (at u = +-1) and no more."""
    g = 2.0**-3
    q = Laplace(epsilon=eps, secure=True, grid=g)
    k = np.arange(-400, 401)                     # |k| <= 50 / g: far beyond the inputs
    us = [-1.0, -0.6, -0.3, 0.0, 0.05, 0.5, 1.0]
    table = np.stack([_twin_pmf(k, u, eps, g) for u in us])
    np.testing.assert_allclose(np.stack([q.density(k * g, u) for u in us]), table,
                               rtol=1e-12, atol=0)
    ratio = (table.max(axis=0) / table.min(axis=0)).max()
    assert math.log(ratio) == pytest.approx(q.effective_epsilon, rel=1e-9)
    assert math.log(ratio) <= q.effective_epsilon * (1 + 1e-12)


@pytest.mark.parametrize("u", [-1.0, 0.3, 0.0625, 1.0])
def test_secure_variance_formula_against_the_pmf(u):
    g = 2.0**-3
    q = Laplace(epsilon=1.0, secure=True, grid=g)
    k = np.arange(-2000, 2001)
    p = _twin_pmf(k, u, 1.0, g)
    mean = float((p * k * g).sum())
    var = float((p * (k * g - mean) ** 2).sum())
    assert mean == pytest.approx(u, abs=1e-12)
    assert float(q.variance(u)) == pytest.approx(var, rel=1e-10)
    assert q.V_eps >= float(q.variance(u))
    assert q.V_eps == pytest.approx(float(q.variance(g / 2)), rel=1e-14)


@pytest.mark.parametrize("u", [-1.0, 0.3, 1.0])
def test_secure_sampler_unbiased_with_the_stated_variance(u):
    """n = 20,000 draws at the default grid. The mean's sd is sqrt(V / n); the sample
    variance's sd is sqrt((m4 - V^2) / n) <= sqrt(5 / n) V (Laplace-like kurtosis 6),
    so 5 sd is 8% of V."""
    q = Laplace(epsilon=1.0, secure=True)
    n = 20_000
    y = q.privatize(np.full(n, u), rng=int(100 * (u + 2)))
    v = float(q.variance(u))
    assert abs(y.mean() - u) < 5 * math.sqrt(v / n)
    assert abs(y.var() / v - 1) < 5 * math.sqrt(5 / n)


def test_secure_sampler_follows_the_exact_law():
    """Chi-square of the grid cells at u = 0.3 (a rounding mixture) against the twin pmf.

    Power: the same counts against the law of a noise scale 1.1 times larger are
    rejected (measured p ~ 4e-14 at this seed), so the test sees a 10% scale error.
    """
    g, eps, n = 2.0**-2, 1.0, 20_000
    q = Laplace(epsilon=eps, secure=True, grid=g)
    k = np.rint(q.privatize(np.full(n, 0.3), rng=5) / g).astype(np.int64)
    edges = np.arange(-24, 26)                   # cells -24..24 and two tails (5% each)
    observed = np.array([(k < -24).sum(), *[(k == c).sum() for c in edges[:-1]],
                         (k > 24).sum()])

    def expected(factor):
        def pmf(cells):
            return _twin_pmf(cells, 0.3, eps, g, factor)
        e = np.concatenate([[pmf(np.arange(-4000, -24)).sum()], pmf(edges[:-1]),
                            [pmf(np.arange(25, 4000)).sum()]]) * n
        assert e.min() > 5 and e.sum() == pytest.approx(n, rel=1e-12)
        return e * (n / e.sum())

    assert stats.chisquare(observed, expected(1)).pvalue > 1e-4
    assert stats.chisquare(observed, expected(Fraction(11, 10))).pvalue < 1e-4


def test_secure_outputs_sit_on_the_grid_whatever_the_input():
    q = Laplace(epsilon=2.0, secure=True)
    u = np.random.default_rng(0).uniform(-1, 1, 3000)
    y = q.privatize(u, rng=1)
    assert q.is_legal(y).all()
    np.testing.assert_array_equal(y / q.grid, np.round(y / q.grid))
    np.testing.assert_array_equal(y, q.privatize(u, rng=as_generator(1)))
    assert not q.is_legal(np.array([q.grid / 3, np.nan, np.inf, 2.0**60])).any()


def test_secure_constructor_errors_and_repr():
    with pytest.raises(TypeError, match="The 'secure' parameter of Laplace must be a bool"):
        Laplace(epsilon=1.0, secure="yes")
    with pytest.raises(ValueError, match=r"The 'grid' parameter of Laplace must be a power of two"):
        Laplace(epsilon=1.0, secure=True, grid=0.3)
    with pytest.raises(ValueError, match=r"The 'grid' parameter of Laplace must be a float in"):
        Laplace(epsilon=1.0, secure=True, grid=2.0)
    with pytest.raises(ValueError, match="None when secure=False"):
        Laplace(epsilon=1.0, grid=0.5)
    # the noise in grid units must stay below 2^46: eps >= 2^(1 - 46) / g
    with pytest.raises(ValueError, match=r"The 'epsilon' parameter of Laplace must be a float in "
                                         r"\[2.9103830456733704e-11, inf\)"):
        Laplace(epsilon=1e-11, secure=True)
    a, b = Laplace(epsilon=1.0, secure=True), Laplace(epsilon=1.0)
    assert a != b and a == Laplace(epsilon=1.0, secure=True, grid=2.0**-10)
    assert hash(a) != hash(b)
    assert repr(a) == "Laplace(epsilon=1.0, secure=True, grid=0.0009765625)"


# ----------------------------------------------------------------- DiscretePiecewise
def _twin_law(q):
    """P(j | u_i) from the description: A / T on the W cells [i, i + W), B / T elsewhere."""
    A, B, W, m = q.A, q.B, q.band, q.m
    T = W * A + m * B
    return [[Fraction(A if i <= j < i + W else B, T) for j in range(m + W)]
            for i in range(m + 1)]


@pytest.mark.parametrize("eps", [0.3, 1.0, 4.0, 30.0])
@pytest.mark.parametrize("m", [2, 5, 16])
def test_discrete_piecewise_channel_is_exactly_at_its_ratio(eps, m):
    q = DiscretePiecewise(epsilon=eps, m=m)
    law = _twin_law(q)
    assert law == q.grid_law()
    assert all(sum(row) == 1 for row in law)
    ratio = max(max(col) / min(col) for col in zip(*law))
    assert ratio == Fraction(q.A, q.B)
    # A / B <= e^eps, tight to within 2^-k relative (k >= 1 here, and tiny below eps = 30)
    with localcontext() as ctx:
        ctx.prec = 60
        e = Decimal(eps).exp()
        assert Decimal(q.A) / q.B <= e < (Decimal(q.A) + 1) / q.B
    assert q.effective_epsilon >= math.log(q.A / q.B) - 1e-15
    # exact unbiasedness at every grid input, in fractions
    ys = [Fraction(float(y)) for y in q.outputs]
    for i, row in enumerate(law):
        mean = sum(p * y for p, y in zip(row, ys))
        assert abs(mean - (-1 + Fraction(2 * i, m))) < Fraction(1, 10**12)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_discrete_piecewise_exact_audit_at_the_edge(eps):
    q = DiscretePiecewise(epsilon=eps, m=4)
    law = discrete_piecewise_law(q)
    res = audit_law(law, q.effective_epsilon)
    assert res.holds and abs(res.epsilon_audited - math.log(q.A / q.B)) < 1e-13
    assert not audit_law(law, q.effective_epsilon * (1 - 1e-9)).holds


def test_discrete_piecewise_sampler_follows_the_law():
    """Chi-square of the cells at every grid input of m = 4 (n = 40,000 each)."""
    q = DiscretePiecewise(epsilon=1.0, m=4)
    law = np.array(q.grid_law(), dtype=np.float64)
    for i in range(q.m + 1):
        u = -1 + 2 * i / q.m
        y = q.privatize(np.full(40_000, u), rng=10 + i)
        cells = np.searchsorted(q.outputs, y)
        assert np.array_equal(q.outputs[cells], y)          # only the N fixed doubles
        counts = np.bincount(cells, minlength=q.n_cells)
        assert stats.chisquare(counts, law[i] * counts.sum()).pvalue > 1e-4


@pytest.mark.parametrize("u", [-1.0, -0.37, 0.0, 0.6, 1.0])
def test_discrete_piecewise_variance_formula_and_simulation(u):
    q = DiscretePiecewise(epsilon=1.5, m=16)
    law = _twin_law(q)
    x = (Fraction(u) + 1) * q.m / 2
    low = min(math.floor(x), q.m - 1)
    f = x - low
    probs = [(1 - f) * a + f * b for a, b in zip(law[low], law[low + 1])]
    ys = [Fraction(float(y)) for y in q.outputs]
    mean = sum(p * y for p, y in zip(probs, ys))
    var = float(sum(p * y * y for p, y in zip(probs, ys)) - mean * mean)
    assert float(mean) == pytest.approx(u, abs=1e-12)
    assert float(q.variance(u)) == pytest.approx(var, rel=1e-9)
    np.testing.assert_allclose(q.density(q.outputs, u), np.array(probs, dtype=float), rtol=1e-12)
    # simulation: |Y| <= c_eps, so Var[(Y - u)^2] <= c_eps^4 and 5 sd of the mean of squares
    n = 100_000
    y = q.privatize(np.full(n, u), rng=21)
    assert abs(y.mean() - u) < 5 * math.sqrt(var / n)
    assert abs(((y - u) ** 2).mean() - var) < 5 * math.sqrt(q.c_eps**4 / n)


def test_discrete_piecewise_is_close_to_the_continuous_one():
    for eps in (0.5, 2.0):
        q, c = DiscretePiecewise(epsilon=eps, m=64), Piecewise(epsilon=eps)
        assert q.V_eps == pytest.approx(c.V_eps, rel=0.05)
        assert q.c_eps <= c.c_eps * 1.05


def test_discrete_piecewise_legality_and_errors():
    q = DiscretePiecewise(epsilon=1.0, m=8)
    assert q.is_legal(q.outputs).all()
    assert not q.is_legal(np.array([q.outputs[0] + 1e-9, np.nan, np.inf, 0.1234])).any()
    assert q.density(0.1234, 0.0) == 0.0
    assert repr(q) == "DiscretePiecewise(epsilon=1.0, m=8)"
    with pytest.raises(ValueError, match=r"The 'm' parameter of DiscretePiecewise must be"):
        DiscretePiecewise(epsilon=1.0, m=1)
    with pytest.raises(ValueError, match=r"The 'epsilon' parameter of DiscretePiecewise must be"):
        DiscretePiecewise(epsilon=41.0)
    with pytest.raises(ValueError, match=r"The 'epsilon' parameter of DiscretePiecewise must be"):
        DiscretePiecewise(epsilon=1e-7)


def test_a_server_rebuilt_from_stream_params_keeps_the_secure_randomizer():
    """RPC recorded ``randomizer='laplace'`` for a secure instance, so a rebuilt server held the plain one."""
    from fastldp.oracles.randomizers import RANDOMIZERS, make_randomizer
    from fastldp.vectors import RPC

    secure = Laplace(epsilon=1.0, secure=True)
    assert secure.name == "laplace-secure" and Laplace(epsilon=1.0).name == "laplace"
    assert make_randomizer("laplace-secure", 1.0, "RPC") == secure
    assert RANDOMIZERS["laplace-secure"](epsilon=2.0) == Laplace(epsilon=2.0, secure=True)
    mech = RPC(d=6, m=2, epsilon=1.0, randomizer=secure, codebook_seed=3)
    params = mech.stream_params()
    assert params["randomizer"] == "laplace-secure"
    rebuilt = RPC(**params)
    assert rebuilt.randomizer == secure and rebuilt.randomizer != Laplace(epsilon=1.0)
    # another grid is recorded by its own name, which does not rebuild by name
    other = Laplace(epsilon=1.0, secure=True, grid=2.0**-4)
    assert other.name == "laplace-secure(grid=0.0625)"
    with pytest.raises(ValueError, match="'randomizer'"):
        make_randomizer(other.name, 1.0, "RPC")
