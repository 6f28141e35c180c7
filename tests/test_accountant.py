"""fastldp.accounting.Accountant: composition matched against hand computations.

Every expected value below is computed here from its textbook formula (the
binary randomized-response Renyi divergence, the Skellam bound of Agarwal,
Kairouz and Liu 2021, rho alpha for zCDP, the RDP-to-DP conversion of
Canonne, Kamath and Steinke 2020 Prop. 12, the exact privacy-loss law of
k-fold randomized response), never by calling the accountant's code path.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

pytest.importorskip("dp_accounting")

from dp_accounting import dp_event as dpe  # noqa: E402
from hypothesis import given, settings, strategies as st  # noqa: E402
from scipy.special import comb  # noqa: E402

import fastldp  # noqa: E402
from fastldp.accounting import (Accountant, DisjointGroupsDpEvent, EpsilonDeltaDpEvent,  # noqa: E402
                                RdpCurveEvent, delta_at, epsilon_at, laplace_event,
                                pure_dp_event, zcdp_event)


def rr_rdp(eps: float, alpha: np.ndarray) -> np.ndarray:
    """Renyi divergence of binary randomized response at eps, order alpha (written out)."""
    q = math.exp(eps) / (1 + math.exp(eps))
    lq, lp = math.log(q), math.log1p(-q)
    # log(q^a (1-q)^(1-a) + (1-q)^a q^(1-a)), in logs (the orders reach 2^60)
    return np.logaddexp(alpha * lq + (1 - alpha) * lp, alpha * lp + (1 - alpha) * lq) / (alpha - 1)


def skellam_rdp_hand(alpha, mu, l2, l1):
    """Agarwal, Kairouz and Liu (NeurIPS 2021), Theorem 3.5."""
    return alpha * l2 ** 2 / (2 * mu) + np.minimum(((2 * alpha - 1) * l2 ** 2 + 6 * l1)
                                                   / (4 * mu ** 2), 3 * l1 / (2 * mu))


def delta_of_rdp(rdp, alpha, eps):
    """Prop. 12 of Canonne, Kamath and Steinke (2020): min_alpha of the delta bound."""
    log_d = (alpha - 1) * (rdp - eps + np.log1p(-1 / alpha)) - np.log(alpha)
    return float(min(1.0, np.exp(np.min(log_d))))


def epsilon_of_rdp(rdp, alpha, delta):
    """The same proposition solved for eps."""
    return float(max(0.0, np.min(rdp + np.log1p(-1 / alpha) - np.log(delta * alpha) / (alpha - 1))))


# ---------------------------------------------------------------- four families
@pytest.fixture(scope="module")
def four_releases():
    from fastldp.regression import Privacy, ShuffledVectorSum
    from fastldp.regression.shuffle import _ALPHAS

    rng = np.random.default_rng(0)
    jprs = fastldp.JPRS(shape=(100, 100), k=2, s=50, epsilon=1.0, codebook_seed=1)
    rel = jprs.estimate(jprs.privatize([np.array([[i % 100, (3 * i) % 100]])
                                        for i in range(200)], rng=1))
    grr = fastldp.GRR(domain_size=20, epsilon=0.5, codebook_seed=0)
    oracle = grr.estimate(grr.privatize(rng.integers(0, 20, 200), rng=2))
    summer = ShuffledVectorSum(epsilon=2.0, norm_bound=1.0)
    vectors = rng.uniform(-0.5, 0.5, (100, 3)) / 2
    sums = summer.sum(vectors, rng=3)
    plan = summer.plan(100, 3)
    assert sums.mu == plan["mu"]  # the curve below is this release's
    hist = fastldp.ShiftedLogGaussian(r=1.0).release_result([0, 3, 40, 900], rng=4)
    return {
        "jprs": (rel.privacy.event(), 1.0),
        "grr": (oracle.privacy.event(), 0.5),
        "shuffle": (Privacy.skellam_event(plan["mu"], plan["l2"], plan["l1"],
                                          tv=plan["delta_shares"]), plan),
        "hist": (hist.privacy.event(), hist.privacy.rho),
        "orders": _ALPHAS,
    }


def test_four_families_compose_as_computed_by_hand(four_releases):
    r = four_releases
    alpha = r["orders"]
    plan, rho = r["shuffle"][1], r["hist"][1]
    acc = Accountant(orders=alpha)  # the grid is the shuffle curve's own orders
    for key in ("jprs", "grr", "shuffle", "hist"):
        acc.add(r[key][0])
    # by hand: the RDP curves add order by order
    total = (rr_rdp(1.0, alpha) + rr_rdp(0.5, alpha)
             + skellam_rdp_hand(alpha, plan["mu"], plan["l2"], plan["l1"]) + rho * alpha)
    tv = plan["delta_shares"]
    for eps in (4.0, 6.0, 9.0):
        # delta(eps) = delta_R(eps) + (1 + e^eps) tv (the shares' total variation, coupled)
        hand = min(1.0, delta_of_rdp(total, alpha, eps) + (1 + math.exp(eps)) * tv)
        assert acc.delta(eps) == pytest.approx(hand, rel=1e-9)
    target = 5e-3  # the sum of the two delta terms has its minimum near 1.1e-3 (eps ~ 5.7)
    eps = acc.epsilon(target)
    assert 4.0 < eps < 5.5
    assert acc.epsilon_and_method(target)[1] == "RDP"  # a zCDP release and a curve: RDP only
    # the smallest eps whose hand delta meets the target
    assert delta_of_rdp(total, alpha, eps) + (1 + math.exp(eps)) * tv <= target * (1 + 1e-9)
    slightly_less = eps - 1e-6
    assert delta_of_rdp(total, alpha, slightly_less) + (1 + math.exp(slightly_less)) * tv > target
    # none of them pure: no guarantee at delta = 0
    assert acc.epsilon() == math.inf
    # the pure pair alone: the sum of their epsilons
    pure = Accountant().add(r["jprs"][0]).add(r["grr"][0])
    assert pure.epsilon() == pytest.approx(1.0 + 0.5, rel=1e-12)


def test_four_families_in_parallel_groups_take_the_worst(four_releases):
    r = four_releases
    alpha = r["orders"]
    acc = Accountant(orders=alpha)
    acc.add(r["jprs"][0], group="A").add(r["grr"][0], group="A")
    acc.add(r["hist"][0], group="B")
    acc.add(pure_dp_event(0.25))  # everyone
    rho = r["hist"][1]
    for delta in (1e-6, 1e-3):
        a = epsilon_of_rdp(rr_rdp(1.0, alpha) + rr_rdp(0.5, alpha) + rr_rdp(0.25, alpha),
                           alpha, delta)
        a = min(a, 1.75)  # basic composition is valid too: the accountant takes the smaller
        b = epsilon_of_rdp(rho * alpha + rr_rdp(0.25, alpha), alpha, delta)
        got = acc.epsilon(delta)
        # group A may also get PLD, which is at most its RDP/basic value
        assert got <= max(a, b) * (1 + 1e-9) and got >= b * (1 - 1e-9)
    assert acc.groups == ["A", "B"]
    pure_groups = Accountant().add(pure_dp_event(1.0), group="A").add(
        pure_dp_event(0.5), group="A").add(pure_dp_event(2.0), group="B").add(pure_dp_event(0.25))
    assert pure_groups.epsilon() == pytest.approx(max(1.75, 2.0) + 0.25, rel=1e-12)
    assert pure_groups.worst_group() == "B"


# ---------------------------------------------------------------- pure epsilon: basic and PLD
def test_basic_composition_sums_pure_epsilons():
    eps = [0.1, 0.25, 1.0, 2.0]
    acc = Accountant().compose([pure_dp_event(e) for e in eps]).add(laplace_event(0.5), count=3)
    assert acc.epsilon() == pytest.approx(sum(eps) + 1.5, rel=1e-12)
    assert acc.epsilon_and_method(0.0)[1] == "basic"
    assert acc.delta(sum(eps) + 1.5 + 1e-9) == 0.0
    assert epsilon_at([pure_dp_event(0.3)] * 4) == pytest.approx(1.2, rel=1e-12)


def _exact_delta_k_fold_rr(eps: float, k: int, target: float) -> float:
    """Hockey-stick divergence of k-fold binary RR, from its privacy-loss law (exact).

    With i flips among k reports, the privacy loss is eps (k - 2 i), with probability
    C(k, i) q^(k - i) (1 - q)^i, q = e^eps / (1 + e^eps); delta(target) =
    E[(1 - e^(target - L))_+].
    """
    q = math.exp(eps) / (1 + math.exp(eps))
    total = 0.0
    for i in range(k + 1):
        loss = eps * (k - 2 * i)
        if loss > target:
            total += comb(k, i, exact=True) * q ** (k - i) * (1 - q) ** i * (
                1 - math.exp(target - loss))
    return total


@pytest.mark.parametrize("eps, k", [(0.1, 100), (0.5, 30)])
def test_pld_of_many_pure_releases_is_tight_and_valid(eps, k):
    acc = Accountant().add(pure_dp_event(eps), count=k)
    for target in (0.5 * eps * k, 0.7 * eps * k):
        got = acc.delta(target)
        # pessimistic PLD: never below the exact value; each release's loss is rounded up by
        # at most the discretization 1e-4, so the composed loss by at most k 1e-4
        assert _exact_delta_k_fold_rr(eps, k, target) <= got
        assert got <= _exact_delta_k_fold_rr(eps, k, target - k * 1e-4) * (1 + 1e-9)
    delta = 1e-6
    got = acc.epsilon(delta)
    assert acc.epsilon_and_method(delta)[1] == "PLD"
    assert got < eps * k  # far below basic composition
    assert _exact_delta_k_fold_rr(eps, k, got) <= delta * (1 + 1e-9)
    assert _exact_delta_k_fold_rr(eps, k, got * 0.98) > delta  # and close to the smallest


@pytest.mark.parametrize("eps, k", [(0.2, 2), (1.0, 5), (4.0, 64)])
def test_randomized_response_rdp_is_the_naive_divergence_of_its_channel(eps, k):
    from fastldp.accounting import randomized_response_event

    event = randomized_response_event(eps, k)
    p = event.noise_parameter
    rows = np.full((k, k), p / k)
    np.fill_diagonal(rows, 1 - p + p / k)
    alpha = np.array([1.5, 2.0, 3.0, 8.0, 64.0])
    # replace-one: the largest divergence between two different inputs' output laws
    naive = np.array([max(np.log(np.sum(rows[i] ** a * rows[j] ** (1 - a))) / (a - 1)
                          for i in range(min(k, 3)) for j in range(min(k, 3)) if i != j)
                      for a in alpha])
    # a zCDP release of rho = 0 adds nothing but has no PLD: the answer is the RDP route's
    acc = Accountant(orders=alpha).add(event).add(zcdp_event(0.0))
    assert acc.delta(eps / 2) == pytest.approx(delta_of_rdp(naive, alpha, eps / 2), rel=1e-9)
    assert Accountant(orders=alpha).add(event).delta(eps / 2) <= acc.delta(eps / 2)  # PLD


# ---------------------------------------------------------------- approximate claims, tv
def test_epsilon_delta_claims_compose_by_basic_composition():
    alpha = np.arange(2.0, 400.0)
    claim = EpsilonDeltaDpEvent(1.0, 1e-6)
    acc = Accountant(orders=alpha).add(claim).add(zcdp_event(0.1))
    for delta in (2e-6, 1e-4):
        hand = 1.0 + epsilon_of_rdp(0.1 * alpha, alpha, delta - 1e-6)
        assert acc.epsilon(delta) == pytest.approx(hand, rel=1e-12)
    assert acc.epsilon(1e-6) == math.inf  # nothing left for the zCDP part
    assert Accountant().add(claim).epsilon(1e-6) == 1.0
    assert Accountant().add(claim).epsilon(1e-7) == math.inf
    assert acc.delta(0.5) == 1.0  # below the claim's epsilon nothing is guaranteed


def test_a_total_variation_term_costs_one_plus_e_eps_times_tv():
    alpha = np.arange(2.0, 200.0)
    curve = 0.02 * alpha
    tv = 1e-8
    acc = Accountant(orders=alpha).add(RdpCurveEvent.from_curve(alpha, curve, tv=tv), count=3)
    for eps in (1.0, 2.0):
        hand = delta_of_rdp(3 * curve, alpha, eps) + (1 + math.exp(eps)) * 3 * tv
        assert acc.delta(eps) == pytest.approx(hand, rel=1e-9)
    eps = acc.epsilon(1e-6)
    assert acc.delta(eps) <= 1e-6 * (1 + 1e-9)
    assert acc.delta(eps * (1 - 1e-6)) > 1e-6


def test_disjoint_groups_event_is_the_worst_round():
    alpha = np.arange(2.0, 100.0)
    rounds = DisjointGroupsDpEvent([RdpCurveEvent.from_curve(alpha, 0.01 * alpha),
                                    RdpCurveEvent.from_curve(alpha, 0.02 + 0.005 * alpha)])
    acc = Accountant(orders=alpha).add(rounds)
    worst = np.maximum(0.01 * alpha, 0.02 + 0.005 * alpha)
    assert acc.epsilon(1e-5) == pytest.approx(epsilon_of_rdp(worst, alpha, 1e-5), rel=1e-12)
    pure = Accountant().add(DisjointGroupsDpEvent([pure_dp_event(1.0), pure_dp_event(3.0)]))
    assert pure.epsilon() == pytest.approx(3.0, rel=1e-12)


def test_curve_orders_join_the_grid_and_other_orders_read_the_next_one_above():
    alpha = np.array([2.0, 4.0, 16.0])
    curve = RdpCurveEvent.from_curve(alpha, [0.1, 0.3, 1.5])
    acc = Accountant(orders=[3.0]).add(curve)
    # at order 3 the curve reads its value at 4 (a valid upper bound: D_alpha grows with alpha)
    grid = np.array([2.0, 3.0, 4.0, 16.0])
    values = np.array([0.1, 0.3, 0.3, 1.5])
    assert acc.epsilon(1e-5) == pytest.approx(epsilon_of_rdp(values, grid, 1e-5), rel=1e-12)


def test_an_event_run_zero_times_costs_nothing():
    acc = Accountant().add(dpe.NonPrivateDpEvent(), count=0).add(pure_dp_event(1.0))
    assert acc.epsilon() == pytest.approx(1.0, rel=1e-12)
    assert acc.epsilon(1e-6) <= 1.0 + 1e-12


def test_non_private_and_no_op():
    assert Accountant().add(dpe.NonPrivateDpEvent()).epsilon(0.1) == math.inf
    assert Accountant().add(dpe.NoOpDpEvent()).epsilon() == 0.0
    assert Accountant().epsilon() == 0.0 and Accountant().epsilon(1e-6) == 0.0
    assert delta_at([pure_dp_event(1.0)], 1.0) == 0.0


def _random_event(draw_kind: int, x: float):
    if draw_kind == 0:
        return pure_dp_event(x)
    if draw_kind == 1:
        return zcdp_event(x / 10)
    if draw_kind == 2:
        alpha = np.arange(2.0, 60.0)
        return RdpCurveEvent.from_curve(alpha, x / 5 * alpha, tv=1e-9 * x)
    if draw_kind == 3:
        return EpsilonDeltaDpEvent(x, 1e-8)
    return laplace_event(x)


@settings(max_examples=25)
@given(st.lists(st.tuples(st.integers(0, 4), st.floats(0.01, 2.0)), min_size=1, max_size=5),
       st.sampled_from([1e-7, 1e-5, 1e-3]))
def test_epsilon_and_delta_answer_each_other(items, delta):
    # whatever the mixture: the epsilon at delta has a delta at most delta, and a larger delta
    # never costs more epsilon
    acc = Accountant()
    for kind, x in items:
        acc.add(_random_event(kind, x))
    eps = acc.epsilon(delta)
    if math.isfinite(eps):
        assert acc.delta(eps) <= delta * (1 + 1e-6)
    assert acc.epsilon(min(10 * delta, 0.5)) <= eps * (1 + 1e-9)
    pure = [x for kind, x in items if kind in (0, 4)]
    if len(pure) == len(items):
        assert eps <= sum(pure) * (1 + 1e-12)  # never worse than basic composition


# ---------------------------------------------------------------- errors and text
def test_clear_errors():
    acc = Accountant().add(pure_dp_event(1.0))
    for bad in (-1e-9, math.nan, 1.0):
        with pytest.raises(ValueError, match="'delta' parameter of Accountant.epsilon"):
            acc.epsilon(bad)
    with pytest.raises(ValueError, match="'epsilon' parameter of Accountant.delta"):
        acc.delta(-1.0)
    with pytest.raises(ValueError, match="'epsilon' parameter of Accountant.delta"):
        acc.delta(math.nan)
    with pytest.raises(TypeError, match="'event' parameter of Accountant.add"):
        acc.add(1.0)
    with pytest.raises(ValueError, match="not supported"):
        acc.add(dpe.UnsupportedDpEvent())
    with pytest.raises(ValueError, match="not supported"):  # no RDP for subsampled Laplace
        acc.add(dpe.PoissonSampledDpEvent(0.1, dpe.LaplaceDpEvent(1.0)))
    with pytest.raises(TypeError, match="'group' parameter of Accountant.add"):
        acc.add(pure_dp_event(1.0), group=["a"])
    with pytest.raises(ValueError, match="'count' parameter of Accountant.add"):
        acc.add(pure_dp_event(1.0), count=-1)
    with pytest.raises(ValueError, match="'orders' parameter of Accountant"):
        Accountant(orders=[0.5, 2.0])
    with pytest.raises(ValueError, match="'delta' parameter of EpsilonDeltaDpEvent"):
        acc.add(EpsilonDeltaDpEvent(1.0, -0.5))
    assert len(acc.entries) == 1  # nothing was added by the failed calls


def test_repr_and_summary():
    acc = Accountant().add(pure_dp_event(1.0), group="EU", count=2).add(zcdp_event(0.01))
    assert repr(acc) == "Accountant(3 events, 1 group)"
    lines = acc.summary(1e-6).splitlines()
    assert lines[0] == "Accountant: 3 events, 1 group"
    assert lines[1].split()[:2] == ["group", "events"]
    assert lines[2].split()[:3] == ["EU", "3", "inf"] and lines[2].endswith("RDP")
    assert repr(Accountant()) == "Accountant(0 events, no groups)"
