"""Audits of the regression baselines' randomizers and of a whole U2R fit (fastldp.regression._channels)."""

import math

import numpy as np
import pytest

from fastldp import audit, cli
from fastldp.regression import _channels as rg
from fastldp.audit.exact import audit_law
from fastldp.regression import U2R, baselines

NEW = ["ldp-iht-laplace", "2slr-krr", "2slr-laplace", "u2r-fit"]


def test_cli_lists_the_new_channels(capsys):
    assert cli.main(["audit", "--list"]) == 0
    listed = {ln.split()[0]: ln.split()[1] for ln in capsys.readouterr().out.splitlines()}
    assert {name: listed[name] for name in NEW} == {
        "ldp-iht-laplace": "empirical", "2slr-krr": "exact", "2slr-laplace": "empirical",
        "u2r-fit": "fit"}


def test_every_new_channel_has_a_control_beyond_the_law_faults():
    own = {c.control_of for name, c in audit.negative_controls().items()
           if c.control_of in NEW and "@1.5eps" not in name}
    assert own == set(NEW)


# ----------------------------------------------------------------- k-ary randomized response
@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_kary_law_is_the_formula_and_sits_at_eps(eps):
    law = rg.kary_rr_law(rg.SLR_D, eps)
    e = math.exp(eps)
    assert law.probs[0, 2, 2] == pytest.approx(e / (e + rg.SLR_D - 1), rel=1e-15)
    assert law.probs[0, 2, 0] == pytest.approx(1 / (e + rg.SLR_D - 1), rel=1e-15)
    np.testing.assert_allclose(law.probs.sum(axis=2), 1.0, atol=1e-15)
    assert audit_law(law, eps).holds and not audit_law(law, eps * (1 - 1e-9)).holds
    # the regression module's (p, q) agree with the law written here from the formula
    p, q = baselines.kary_keep_probability(rg.SLR_D, eps)
    assert (p, q) == pytest.approx((law.probs[0, 0, 0], law.probs[0, 0, 1]), rel=1e-14)


def test_kary_sampler_check_catches_a_sampler_at_twice_eps():
    row = audit.audit_channel(audit.negative_controls()["control:2slr-krr-sampler"], n=40_000)
    assert row.exact.holds and not row.empirical.holds and row.as_expected


# ----------------------------------------------------------------- Laplace releases
@pytest.mark.parametrize("build, function, bound, dim", [
    (rg.ldp_iht_laplace, baselines.ldp_iht_laplace_scale, 2.0, rg.IHT_D),
    (rg.two_slr_laplace, baselines.two_slr_laplace_scale, rg.SLR_RADIUS, rg.SLR_K),
])
def test_laplace_reports_have_the_scale_of_the_fit_and_the_edge_ratio(build, function, bound,
                                                                       dim):
    mech = build(1.0)
    assert (mech.bound, mech.dim) == (bound, dim)
    assert mech.scale == function(bound, dim, 1.0) == 2 * bound * dim / 1.0
    # the top of the loss statistic (every coordinate beyond the corner) has ratio e^eps:
    # P = 2^-d under +c 1 and (e^{-2c/b} / 2)^d under -c 1
    n = 200_000
    gen = np.random.default_rng(4)
    top = dim * bound
    hits = [int((rg.laplace_corner_draw(mech, 1.0, side, n, gen) >= top).sum()) for side in (0, 1)]
    probs = [0.5 ** dim, (0.5 * math.exp(-2 * bound / mech.scale)) ** dim]
    assert probs[0] / probs[1] == pytest.approx(math.e, rel=1e-12)
    for h, p in zip(hits, probs):
        assert abs(h - n * p) < 6 * math.sqrt(n * p * (1 - p))


@pytest.mark.parametrize("name", ["control:ldp-iht-laplace-half-scale",
                                  "control:2slr-laplace-half-scale"])
def test_half_scale_controls_halve_the_scale_and_are_caught(name):
    ch = audit.negative_controls()[name]
    bad, honest = ch.build(1.0), audit.get_channel(ch.control_of).build(1.0)
    assert bad.scale == honest.scale / 2 and bad.epsilon == honest.epsilon
    row = audit.audit_channel(ch, n=40_000)
    assert not row.holds and row.empirical.lower_bound > 1.5


def test_laplace_rows_detect_faults_well_below_the_controls():
    row = audit.audit_channel(audit.get_channel("ldp-iht-laplace"), n=40_000)
    assert row.holds and 1.0 < row.reach < audit.registry.LOW_POWER and not row.low_power


# ----------------------------------------------------------------- a whole U2R fit
def test_u2r_pair_differs_in_user_zero_only():
    X0, y0, u0 = rg.U2RFit.data(0)
    X1, y1, u1 = rg.U2RFit.data(1)
    m = rg.U2R_ROWS
    assert np.array_equal(X0, X1) and np.array_equal(u0, u1)
    assert np.array_equal(y0[m:], y1[m:]) and not np.array_equal(y0[:m], y1[:m])
    np.testing.assert_allclose(y0[:m], rg.U2R_SIGNAL * X0[:m, 0])
    np.testing.assert_allclose(y1[:m], rg.U2R_SIGNAL * X0[:m, 1])


def test_u2r_views_are_fits():
    mech = rg.u2r_fit(1.0)
    views = rg.u2r_fit_views(mech, 1.0, 0, 3, np.random.default_rng(5))
    est = mech.estimator
    gen = np.random.default_rng(5)
    X, y, users = rg.U2RFit.data(0)
    for t in range(3):
        est.fit(X, y, users=users, rng=gen)      # fit itself, not the precomputed path
        assert views.stats["coef_[0] - coef_[1]"][t] == est.coef_[0] - est.coef_[1]
    assert rg.u2r_fit_claim(mech) == (est.privacy_.epsilon, est.privacy_.delta) == (1.0, 1e-5)


def test_u2r_control_fits_with_the_noise_of_a_larger_eps_and_claims_eps():
    bad = dict((ch, build) for ch, build, _ in rg.CONTROLS)["u2r-fit"](1.0)  # by name
    honest = rg.U2RFit(U2R(epsilon=rg.U2R_CONTROL_FACTOR, delta=1e-5, k=2,
                           rows_per_user=rg.U2R_ROWS))
    pre = bad.precomputed(0)
    a = bad.estimator.fit_precomputed(pre, rng=3)
    b = honest.estimator.fit_precomputed(pre, rng=3)
    np.testing.assert_array_equal(a.coef_, b.coef_)
    assert a.privacy_.epsilon == 1.0 and b.privacy_.epsilon == rg.U2R_CONTROL_FACTOR
    assert bad.estimator.epsilon == 1.0                         # restored after the fit


@pytest.mark.slow
def test_u2r_fit_passes_and_says_it_has_low_power():
    row = audit.audit_channel(audit.get_channel("u2r-fit"), n=1000, rng=1)
    assert row.holds and row.kind == "fit" and len(row.tests) == 2
    assert row.claimed == 1.0 and row.empirical.delta == 1e-5
    assert row.low_power and row.reach > rg.U2R_CONTROL_FACTOR   # fewer draws than the control's
    assert any(n.startswith("low power:") for n in row.notes)


def _gaussian_fit_channel(shift):
    """A cheap stand-in for a fit channel: one Gaussian statistic, shifted by ``shift`` in D."""
    from fastldp.audit.registry import Channel
    from fastldp.channels import ViewSample

    def draw(mech, eps, side, size, gen):
        return ViewSample({"y": gen.normal(shift * (side == 0), 1.0, size)}, {}, size)

    return Channel("gauss", "test", 1.0, lambda eps: None, kind="fit", draw=draw,
                   claim=lambda mech: (1.0, 1e-5), draws=(500, 200), known_reach=7.0)


def test_a_declared_reach_counts_only_at_the_draws_it_was_shown_at():
    ch = _gaussian_fit_channel(0.0)
    at_default = audit.audit_channel(ch, n=10_000, rng=0)        # capped at draws[0] = 500
    assert at_default.tests[0].counts[1] == 500 and at_default.reach == 7.0
    fewer = audit.audit_channel(ch, n=100, rng=0)
    assert fewer.reach > 7.0 and fewer.low_power
    # a test whose event carries signal estimates its own, smaller reach
    assert audit.audit_channel(_gaussian_fit_channel(2.0), n=10_000, rng=0).reach < 7.0


@pytest.mark.slow
def test_u2r_control_is_caught_at_the_default_draws():
    """The reach the u2r-fit row states (its known_reach) is what this shows."""
    ch = audit.negative_controls()[f"control:u2r-fit-noise@{rg.U2R_CONTROL_FACTOR:g}eps"]
    row = audit.audit_channel(ch, rng=0)
    assert row.empirical.counts[1] == rg.U2R_DRAWS[0]
    assert not row.holds and row.as_expected
