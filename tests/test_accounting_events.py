"""fastldp.accounting.events: every release's DpEvent, the custom events, JSON.

The walk over the families' estimators reuses tests/test_contract.py's
discovery and examples, so a new estimator is checked here as soon as it is
exported (and a new client without a result must be listed in
``NO_RESULT`` with its reason).
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest

pytest.importorskip("dp_accounting")

import dp_accounting  # noqa: E402
from dp_accounting import dp_event as dpe  # noqa: E402
from dp_accounting.rdp import rdp_privacy_accountant as rdp_mod  # noqa: E402

import fastldp  # noqa: E402
from fastldp.accounting import (Accountant, DisjointGroupsDpEvent, EpsilonDeltaDpEvent,  # noqa: E402
                                RdpCurveEvent, approximate_dp_event, compose, from_json,
                                laplace_event, pure_dp_event, pure_epsilon,
                                randomized_response_event, to_json, zcdp_event)
from fastldp.results import PrivacyStatement  # noqa: E402
from test_contract import (BY_KIND, DECODER_EXAMPLES, ESTIMATORS,  # noqa: E402
                           HISTOGRAM_EXAMPLES, REGRESSION_EXAMPLES, _regression_data)

#: the kinds of estimator whose release is not a result object, with the reason
NO_RESULT_KINDS = {
    "client": "a scalar randomizer's privatize returns a plain array (no result): its event is "
              "pure_dp_event(randomizer.epsilon) (laplace_event for Laplace), checked below",
}
NO_RESULT = sorted(n for kind in NO_RESULT_KINDS for n in BY_KIND[kind])


def _binary_rr_rows(eps: float) -> np.ndarray:
    """The naive twin: binary randomized response keeps its bit w.p. e^eps / (e^eps + 1)."""
    keep, flip = math.exp(eps) / (math.exp(eps) + 1), 1 / (math.exp(eps) + 1)
    return np.array([[keep, flip], [flip, keep]])


def _rr_rows(p: float, k: int) -> np.ndarray:
    """dp_accounting's k-ary randomized response, written out: keep w.p. 1 - p + p/k."""
    rows = np.full((k, k), p / k)
    np.fill_diagonal(rows, 1 - p + p / k)
    return rows


def _renyi(P: np.ndarray, Q: np.ndarray, alpha: float) -> float:
    return float(np.log(np.sum(P ** alpha * Q ** (1 - alpha))) / (alpha - 1))


def _rdp_of_rows(rows: np.ndarray, alpha: float) -> float:
    k = rows.shape[0]
    return max(_renyi(rows[i], rows[j], alpha) for i in range(k) for j in range(k) if i != j)


# ---------------------------------------------------------------- the walk
def _event_of(name: str):
    """The event of one release of estimator ``name``, and the budget it must carry."""
    family, cls = ESTIMATORS[name]
    kind = next(k for k, names in BY_KIND.items() if name in names)
    if kind == "decoder":
        make, data = DECODER_EXAMPLES[name]
        mech = make()
        result = mech.estimate(mech.privatize(data(np.random.default_rng(0)), rng=1))
        return result.privacy.event(), result.privacy
    if kind == "release":
        mech = HISTOGRAM_EXAMPLES[name]()
        result = mech.release_result(np.arange(20.0), rng=0)
        return result.privacy.event(), result.privacy
    if kind == "model":
        import inspect
        model = REGRESSION_EXAMPLES[name]()
        X, y, users = _regression_data()
        per_user = "rows_per_user" in inspect.signature(cls.__init__).parameters
        model.fit(X, y, users=users if per_user else None, rng=0)
        return model.privacy_.event(), model.privacy_.statement()
    raise AssertionError(f"{name}: a {kind} with no result")


def test_the_walk_is_not_empty():
    assert {"GRR", "JPRS", "RPC", "U2R", "ShiftedLogGaussian", "Laplace"} <= set(ESTIMATORS)
    assert {"Laplace", "Piecewise", "Duchi"} <= set(NO_RESULT)


@pytest.mark.parametrize("name", sorted(set(ESTIMATORS) - set(NO_RESULT)))
def test_every_estimator_release_yields_its_event(name):
    examples = {**DECODER_EXAMPLES, **HISTOGRAM_EXAMPLES, **REGRESSION_EXAMPLES}
    if name not in examples:  # test_contract.py's test_every_*_has_an_example fails for it
        pytest.skip(f"{name} has no example in tests/test_contract.py yet")
    event, statement = _event_of(name)
    assert isinstance(event, dp_accounting.DpEvent)
    assert from_json(to_json(event)) == event
    acc = Accountant().add(event)  # the accountant composes every release's event
    if statement.rho is not None:  # central zCDP: the event carries the same rho
        assert isinstance(event, dpe.ZCDpEvent) and event.rho == statement.rho
    elif statement.model == "not private":
        assert isinstance(event, dpe.NonPrivateDpEvent) and acc.epsilon(0.5) == math.inf
    elif not statement.delta:  # pure: basic composition gives back the budget
        assert statement.epsilon is not None
        assert pure_epsilon(event) == pytest.approx(statement.epsilon, rel=1e-12)
        assert acc.epsilon() == pytest.approx(statement.epsilon, rel=1e-12)
    else:  # a bare (epsilon, delta) claim: at its own delta the accountant gives its epsilon
        assert isinstance(event, EpsilonDeltaDpEvent)
        assert acc.epsilon(statement.delta) == pytest.approx(statement.epsilon, rel=1e-12)


@pytest.mark.parametrize("name", NO_RESULT)
def test_the_scalar_randomizers_budget_gives_the_stated_event(name):
    cls = getattr(fastldp, name)
    try:
        mech = cls(epsilon=0.7)
    except TypeError:  # a randomizer with more required parameters: its docstring example
        pytest.skip(f"{name} needs more than epsilon to build")
    assert mech.epsilon == 0.7  # the budget the event is built from
    event = laplace_event(mech.epsilon) if name == "Laplace" else pure_dp_event(mech.epsilon)
    assert pure_epsilon(event) == pytest.approx(0.7, rel=1e-12)


# ---------------------------------------------------------------- the builders
@pytest.mark.parametrize("eps", [1e-3, 0.5, 1.0, 4.0, 30.0])
def test_pure_dp_event_is_binary_randomized_response_at_epsilon(eps):
    event = pure_dp_event(eps)
    rows = _rr_rows(event.noise_parameter, event.num_buckets)
    # the naive channel: largest likelihood ratio e^eps, no more
    np.testing.assert_allclose(rows, _binary_rr_rows(eps), rtol=1e-12, atol=0)
    assert math.log(rows.max() / rows.min()) == pytest.approx(eps, rel=1e-10)
    assert pure_epsilon(event) == pytest.approx(eps, rel=1e-12)


@pytest.mark.parametrize("eps, k", [(0.5, 2), (1.0, 3), (2.0, 10), (6.0, 1000)])
def test_randomized_response_event_is_grr(eps, k):
    event = randomized_response_event(eps, k)
    rows = _rr_rows(event.noise_parameter, k)
    keep = math.exp(eps) / (math.exp(eps) + k - 1)  # GRR's keep probability (Wang et al. 2017)
    assert rows[0, 0] == pytest.approx(keep, rel=1e-12)
    assert rows[0, 1] == pytest.approx((1 - keep) / (k - 1), rel=1e-12)
    assert pure_epsilon(event) == pytest.approx(eps, rel=1e-10)


@pytest.mark.parametrize("eps", [0.3, 1.0, 3.0])
def test_binary_rr_dominates_grr_in_renyi_divergence(eps):
    # the reason pure_dp_event is valid for any eps-DP channel: GRR (k = 3, 8) at eps has an
    # RDP curve below binary RR's at every order (enumerated channels, naive divergence)
    binary = _binary_rr_rows(eps)
    for k in (3, 8):
        grr = _rr_rows(randomized_response_event(eps, k).noise_parameter, k)
        for alpha in (1.5, 2.0, 5.0, 20.0, 100.0):
            assert _rdp_of_rows(grr, alpha) <= _rdp_of_rows(binary, alpha) + 1e-12


def test_dp_accountings_rdp_of_the_events_is_the_naive_divergence():
    # what the Accountant adds up for a pure event is the Renyi divergence of its channel
    orders = np.array([1.5, 2.0, 8.0, 64.0])
    acc = rdp_mod.RdpAccountant(orders=orders, neighboring_relation=rdp_mod.NeighborRel.REPLACE_ONE)
    acc.compose(pure_dp_event(1.3))
    naive = [_rdp_of_rows(_binary_rr_rows(1.3), a) for a in orders]
    np.testing.assert_allclose(acc.rdp, naive, rtol=1e-10)


def test_approximate_and_infinite_budgets():
    assert approximate_dp_event(1.0, 0.0) == pure_dp_event(1.0)
    assert approximate_dp_event(1.0, 1e-6) == EpsilonDeltaDpEvent(1.0, 1e-6)
    assert isinstance(pure_dp_event(math.inf), dpe.NonPrivateDpEvent)
    assert isinstance(approximate_dp_event(1.0, 1.0), dpe.NonPrivateDpEvent)
    assert pure_epsilon(pure_dp_event(math.inf)) == math.inf
    for bad in (-1.0, math.nan):
        with pytest.raises(ValueError, match="'epsilon' parameter of pure_dp_event"):
            pure_dp_event(bad)
    with pytest.raises(ValueError, match="'delta' parameter of approximate_dp_event"):
        approximate_dp_event(1.0, -1e-9)
    with pytest.raises(ValueError, match="'rho' parameter of zcdp_event"):
        zcdp_event(math.nan)


def test_pure_epsilon_of_compositions():
    e = compose([pure_dp_event(0.5), dpe.SelfComposedDpEvent(laplace_event(0.25), 4),
                 DisjointGroupsDpEvent([pure_dp_event(1.0), pure_dp_event(2.0)])])
    assert pure_epsilon(e) == pytest.approx(0.5 + 4 * 0.25 + 2.0, rel=1e-12)
    assert pure_epsilon(compose([pure_dp_event(1.0), zcdp_event(0.1)])) is None
    assert pure_epsilon(EpsilonDeltaDpEvent(1.0, 1e-6)) is None
    assert compose([zcdp_event(0.1)]) == zcdp_event(0.1)
    with pytest.raises(TypeError, match="'events' parameter of compose"):
        compose([pure_dp_event(1.0), 1.0])


# ---------------------------------------------------------------- RdpCurveEvent
def test_rdp_curve_event_checks_and_reads_the_next_order_above():
    e = RdpCurveEvent.from_curve([8, 2, 4], [0.4, 0.1, 0.2], tv=1e-9)
    assert e.orders == (2.0, 4.0, 8.0) and e.rdp == (0.1, 0.2, 0.4)
    # monotone in the order: an unlisted order takes the next listed one, inf past the last
    np.testing.assert_array_equal(e.at([1.5, 2, 3, 4, 7.9, 8, 8.1]),
                                  [0.1, 0.1, 0.2, 0.2, 0.4, 0.4, np.inf])
    with pytest.raises(ValueError, match="'orders' parameter of RdpCurveEvent"):
        RdpCurveEvent.from_curve([1.0, 2.0], [0.1, 0.2])
    with pytest.raises(ValueError, match="'orders' parameter of RdpCurveEvent"):
        RdpCurveEvent.from_curve([2.0, 2.0], [0.1, 0.2])
    with pytest.raises(ValueError, match="'rdp' parameter of RdpCurveEvent"):
        RdpCurveEvent.from_curve([2.0, 3.0], [0.1, np.nan])
    with pytest.raises(ValueError, match="'rdp' parameter of RdpCurveEvent"):
        RdpCurveEvent.from_curve([2.0, 3.0], [0.1])
    with pytest.raises(ValueError, match="'tv' parameter of RdpCurveEvent"):
        RdpCurveEvent.from_curve([2.0], [0.1], tv=-0.1)


def test_the_skellam_curve_is_the_regression_familys():
    from fastldp.regression import Privacy, ShuffledVectorSum
    from fastldp.regression.shuffle import _ALPHAS, skellam_epsilon, skellam_rdp

    plan = ShuffledVectorSum(epsilon=1.0, norm_bound=1.0).plan(100, 3)
    mu, l2, l1 = plan["mu"], plan["l2"], plan["l1"]
    event = Privacy.skellam_event(mu, l2, l1, tv=plan["delta_shares"])
    assert event.orders == tuple(_ALPHAS.tolist())
    np.testing.assert_array_equal(event.rdp, skellam_rdp(_ALPHAS, mu, l2, l1))
    # Agarwal, Kairouz and Liu (2021), Thm 3.5, written out at order 2
    a = 2.0
    hand = a * l2 ** 2 / (2 * mu) + min(((2 * a - 1) * l2 ** 2 + 6 * l1) / (4 * mu ** 2),
                                        3 * l1 / (2 * mu))
    assert event.rdp[0] == pytest.approx(hand, rel=1e-14)
    # without the shares' term the accountant converts the curve as the family does
    noise_only = Privacy.skellam_event(mu, l2, l1)
    eps = Accountant().add(noise_only).epsilon(plan["delta_noise"])
    assert eps == pytest.approx(skellam_epsilon(mu, l2, l1, plan["delta_noise"]), rel=1e-12)
    assert eps == pytest.approx(1.0, abs=1e-6)  # the calibration target (bisection to 1e-6)


# ---------------------------------------------------------------- histograms
def test_the_histogram_event_is_rho_zcdp_and_tighter_than_its_conversion():
    from fastldp.histograms import ShiftedLogGaussian, zcdp_epsilon

    mech = ShiftedLogGaussian(r=0.1)
    release = mech.release_result([0, 4, 120, 50_000], rng=1)
    event = release.privacy.event()
    assert event == zcdp_event(mech.rho(0))
    report = mech.privacy_report([0, 4, 120])
    assert [e.rho for e in report.events()] == pytest.approx(report.rho.tolist(), rel=0)
    # RDP conversion of rho-zCDP (Canonne, Kamath, Steinke 2020 Prop. 12, written out here)
    # is at most Bun and Steinke's rho + 2 sqrt(rho log(1/delta)) (the family's conversion)
    rho, delta = 0.05, 1e-6
    orders = np.arange(2.0, 2000.0)
    hand = np.min(rho * orders + np.log1p(-1 / orders) - np.log(delta * orders) / (orders - 1))
    got = Accountant(orders=orders).add(zcdp_event(rho)).epsilon(delta)
    assert got == pytest.approx(hand, rel=1e-12)
    assert got < zcdp_epsilon(rho, delta)


# ---------------------------------------------------------------- statements
def test_a_statement_gives_its_event():
    assert PrivacyStatement.local(epsilon=2.0).event() == pure_dp_event(2.0)
    personal = PrivacyStatement.local(epsilons=np.array([0.5, 1.0, 3.0]))
    assert personal.event() == pure_dp_event(3.0)  # every report has at most the largest
    assert PrivacyStatement("shuffle DP", "party", epsilon=1.0, delta=1e-6).event() == \
        EpsilonDeltaDpEvent(1.0, 1e-6)
    assert isinstance(PrivacyStatement("not private", "user", epsilon=math.inf).event(),
                      dpe.NonPrivateDpEvent)
    given = randomized_response_event(1.0, 4)
    stated = PrivacyStatement("local DP", "report", epsilon=1.0, dp_event=given)
    assert stated.event() is given and stated == PrivacyStatement.local(epsilon=1.0)
    with pytest.raises(ValueError, match="states no budget"):
        PrivacyStatement.local().event()
    with pytest.raises(ValueError, match="personal budgets"):
        PrivacyStatement("local DP", "report", personal=True).event()


def test_a_fitted_models_given_event_wins():
    from fastldp.regression import Privacy

    curve = Privacy.skellam_event(1e4, 10.0, 20.0, tv=1e-9)
    p = Privacy("user", "shuffle", 1.0, 1e-5, dp_event=curve)
    assert p.event() is curve and p.statement().event() is curve
    assert Privacy("user", "shuffle", 1.0, 1e-5).event() == EpsilonDeltaDpEvent(1.0, 1e-5)
    assert "dp_event" not in repr(p)


# ---------------------------------------------------------------- JSON
def test_json_round_trips_every_event_type():
    events = [
        pure_dp_event(0.1), randomized_response_event(2.0, 7), laplace_event(0.3),
        zcdp_event(0.02), EpsilonDeltaDpEvent(1.0, 1e-7), dpe.GaussianDpEvent(3.0),
        dpe.DiscreteLaplaceDpEvent(0.5, 2), dpe.NoOpDpEvent(), dpe.NonPrivateDpEvent(),
        RdpCurveEvent.from_curve([2, 3.5, 1e18], [0.1, 1 / 3, math.inf], tv=2 ** -40),
        dpe.SelfComposedDpEvent(pure_dp_event(0.2), 5),
        dpe.PoissonSampledDpEvent(0.01, dpe.GaussianDpEvent(1.1)),
    ]
    nested = compose([*events, DisjointGroupsDpEvent([compose(events[:3]), events[9]])])
    for e in [*events, nested]:
        text = to_json(e)
        back = from_json(text)
        assert back == e and type(back) is type(e)
        assert to_json(back) == text  # deterministic: the text can key equal events
    # floats exactly (shortest repr round-trip), 1/3 included
    assert from_json(to_json(events[9])).rdp[1] == Fraction(1, 3).__float__()


def test_from_json_refuses_what_it_does_not_know():
    with pytest.raises(ValueError, match="unknown event type 'system'"):
        from_json('{"type": "system", "command": "rm"}')
    with pytest.raises(ValueError, match="not a JSON event"):
        from_json("{not json")
    with pytest.raises(ValueError, match="no field"):
        from_json('{"type": "ZCDpEvent", "rho": 0.1, "xi": 0.0, "extra": 1}')
    with pytest.raises(ValueError, match="holds no event"):
        from_json("[1, 2]")
    with pytest.raises(TypeError, match="'event' parameter of to_json"):
        to_json({"type": "ZCDpEvent"})


# ---------------------------------------------------------------- rounding up (issue 32)
def _budgets(n_logspaced: int, n_random: int) -> list:
    """Budgets log-spaced over [1e-8, 700] (both ends) and drawn log-uniformly (fixed seed)."""
    rng = np.random.default_rng(32)
    drawn = np.exp(rng.uniform(math.log(1e-8), math.log(700.0), n_random))
    return np.geomspace(1e-8, 700.0, n_logspaced).tolist() + drawn.tolist()


def _assert_never_below_and_within_one_ulp(budgets, recover):
    below = [e for e in budgets if not recover(e) >= e]
    above = [e for e in budgets if not recover(e) <= math.nextafter(e, math.inf)]
    assert not below, f"{len(below)} of {len(budgets)} below the budget, e.g. {below[:3]}"
    assert not above, f"{len(above)} of {len(budgets)} more than 1 ulp above, e.g. {above[:3]}"


def test_the_pure_epsilon_of_an_event_is_never_below_its_budget():
    # the review's case: 0.6999999999999998 on the old code
    assert Accountant().add(pure_dp_event(0.7)).epsilon() >= 0.7
    assert Accountant().add(pure_dp_event(0.7)).epsilon() <= math.nextafter(0.7, math.inf)
    budgets = _budgets(10_000, 2_000)
    for k in (2, 3, 1000):  # the events of pure epsilon and of k-ary randomized response
        _assert_never_below_and_within_one_ulp(
            budgets, lambda e: pure_epsilon(randomized_response_event(e, k)))
    _assert_never_below_and_within_one_ulp(budgets, lambda e: pure_epsilon(pure_dp_event(e)))
    # the accountant's basic composition, on a spread of 500 (all 12,000: the slow sibling)
    _assert_never_below_and_within_one_ulp(
        np.geomspace(1e-8, 700.0, 500).tolist(),
        lambda e: Accountant().add(pure_dp_event(e)).epsilon())


@pytest.mark.slow
def test_the_accountants_epsilon_of_12000_budgets_is_never_below_them():
    _assert_never_below_and_within_one_ulp(
        _budgets(10_000, 2_000), lambda e: Accountant().add(pure_dp_event(e)).epsilon())


def test_events_known_only_by_their_parameters_recover_an_epsilon_never_below():
    from decimal import Decimal, localcontext

    budgets = _budgets(2_000, 500)
    with localcontext() as ctx:
        ctx.prec = 50
        for e in budgets:
            for k in (2, 7):
                built = randomized_response_event(e, k)
                p = Decimal(built.noise_parameter)
                if p == 0:
                    continue
                # the built noise is rounded down: its randomized response is at least
                # e-DP's worst case, so the PLD and RDP routes that use it stay valid
                exact = (k / p - k + 1).ln()
                assert exact >= Decimal(e), (e, k)
                # the same randomized response without its budget (dp_accounting's own
                # event, as an older ledger stored it): the formula is rounded up
                bare = dpe.RandomizedResponseDpEvent(built.noise_parameter, k)
                got = pure_epsilon(bare)
                assert Decimal(got) >= exact, (e, k, got)
                assert got <= math.nextafter(float(exact), math.inf) + 8 * math.ulp(got)
            lap = pure_epsilon(laplace_event(e))  # 1 / (1 / e): both divisions rounded
            assert e <= lap <= e + 2 * math.ulp(e), e
            assert Decimal(1) / Decimal(laplace_event(e).noise_multiplier) >= Decimal(e)


def test_basic_composition_rounds_every_sum_and_product_up():
    rng = np.random.default_rng(7)
    for _ in range(300):
        eps = (10.0 ** rng.uniform(-8, 2, int(rng.integers(2, 6)))).tolist()
        exact = sum(Fraction(e) for e in eps)
        for got in (Accountant().compose([pure_dp_event(e) for e in eps]).epsilon(),
                    pure_epsilon(compose([pure_dp_event(e) for e in eps]))):
            # the smallest float at or above the exact sum of the budgets
            assert Fraction(got) >= exact, eps
            assert Fraction(math.nextafter(got, -math.inf)) < exact or len(eps) > 2, eps
        count = int(rng.integers(2, 10**6))
        got = Accountant().add(pure_dp_event(eps[0]), count=count).epsilon()
        assert Fraction(got) >= Fraction(eps[0]) * count
        assert Fraction(math.nextafter(got, -math.inf)) < Fraction(eps[0]) * count
        got = pure_epsilon(dpe.SelfComposedDpEvent(pure_dp_event(eps[0]), count))
        assert Fraction(got) >= Fraction(eps[0]) * count


def test_every_route_meets_its_own_condition():
    from fastldp.accounting.accountant import _pld_of, _profile, _rdp_delta

    cases = [[pure_dp_event(0.1)] * 100, [pure_dp_event(0.5)] * 30,
             [pure_dp_event(1.0), laplace_event(0.3)], [zcdp_event(0.05), pure_dp_event(0.2)],
             [RdpCurveEvent.from_curve([2, 8, 32], [0.01, 0.05, 0.3], tv=1e-9)]]
    for events in cases:
        acc = Accountant().compose(events)
        for delta in (1e-9, 1e-6, 1e-3):
            eps, route = acc.epsilon_and_method(delta)[:2]
            if math.isinf(eps):  # the curve's tv term: nothing finite at delta = 1e-9
                assert (route, delta) == ("RDP", 1e-9)
                continue
            prof = _profile(compose(events), acc._orders_now())
            if route == "PLD":
                assert _pld_of(prof.pld).get_delta_for_epsilon(eps) <= delta
            elif route == "RDP":
                assert _rdp_delta(prof, acc._orders_now(), eps) <= delta
            assert acc.delta(eps) <= delta  # the other question, asked back, agrees


def test_an_event_that_keeps_its_budget_is_checked_and_round_trips():
    from fastldp.accounting import EpsilonRandomizedResponseDpEvent

    e = pure_dp_event(0.25)
    assert isinstance(e, dpe.RandomizedResponseDpEvent)  # dp_accounting's accountants take it
    assert e.epsilon == 0.25 and e.noise_parameter < 2 / (math.exp(0.25) + 1)
    assert from_json(to_json(e)) == e
    assert dp_accounting.pld.PLDAccountant(
        dp_accounting.NeighboringRelation.REPLACE_ONE).compose(e).get_epsilon(1e-6) > 0
    # an older ledger's JSON (dp_accounting's own event) still reads, as that event
    old = from_json('{"noise_parameter": 0.5, "num_buckets": 2, '
                    '"type": "RandomizedResponseDpEvent"}')
    assert type(old) is dpe.RandomizedResponseDpEvent
    assert pure_epsilon(old) >= math.log(3)
    # more noise than the budget allows would make the PLD and RDP routes under-count
    with pytest.raises(ValueError, match="'noise_parameter' parameter of "
                                         "EpsilonRandomizedResponseDpEvent"):
        EpsilonRandomizedResponseDpEvent(2 / (math.exp(0.25) + 1) * (1 + 1e-12), 2, 0.25)
    with pytest.raises(ValueError, match="'noise_parameter'"):
        EpsilonRandomizedResponseDpEvent(0.5, 2, 0.25)  # far from the budget's
    with pytest.raises(ValueError, match="'epsilon' parameter"):
        EpsilonRandomizedResponseDpEvent(0.5, 2, math.nan)
    assert EpsilonRandomizedResponseDpEvent(0.0, 2, 0.25).epsilon == 0.25  # no noise: valid
