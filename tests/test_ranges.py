"""fastldp.ranges: flat baseline, hierarchical histograms with consistency, quantiles (issue 35).

Constrained inference against a naive twin (the least-squares solve with
the constraint, by its KKT system, on small trees); range counts, the CDF
and quantiles against brute force; the exact law of every level's report
(largest likelihood ratio ``e^eps`` exactly, with negative controls);
partials that merge bit for bit; unbiasedness and variances by simulation
(fixed seeds, tolerances from the variances); the exact aggregate
simulator against real privatization; sanitization; bad input.
"""

from __future__ import annotations

import math

import numpy as np
import pytest

import fastldp
from fastldp.ranges import (FlatRange, HierarchicalHistogram, RangeEstimate,
                            optimal_level_weights, quantile_from_cdf)
from fastldp.ranges._consistency import (consistent_tree, consistent_variances,
                                         pooled_range_variance)
from fastldp.ranges._channels import RANGE_DOMAIN, range_law
from fastldp.results import PrivacyStatement
from fastldp.streaming import Partial


# ----------------------------------------------------------------------------- naive twins
def _design(B: int, h: int) -> list:
    """``A_l``: level ``l``'s node sums of the ``B^h`` leaves (level 1 first)."""
    return [np.kron(np.eye(B**l), np.ones((1, B ** (h - l)))) for l in range(1, h + 1)]


def _lstsq_twin(levels, variances, B, total):
    """The constrained weighted least squares, by its KKT system, and its covariance.

    Minimize ``sum_l ||A_l x - y_l||^2 / sigma_l^2`` subject to ``sum(x) =
    total``; levels with an infinite variance are left out.
    """
    h = len(levels)
    A = _design(B, h)
    L = B**h
    keep = [i for i in range(h) if np.isfinite(variances[i])]
    M = sum(A[i].T @ A[i] / variances[i] for i in keep)
    r = sum(A[i].T @ levels[i] / variances[i] for i in keep)
    one = np.ones(L)
    K = np.block([[M, one[:, None]], [one[None, :], np.zeros((1, 1))]])
    x = np.linalg.solve(K, np.concatenate([r, [total]]))[:L]
    Mi = np.linalg.pinv(M)
    cov = Mi - np.outer(Mi @ one, one @ Mi) / (one @ Mi @ one)
    return x, cov, A


TREES = [(2, 2), (2, 3), (2, 4), (3, 2), (3, 3), (4, 2), (4, 3)]


@pytest.mark.parametrize("B,h", TREES)
def test_consistency_is_the_constrained_least_squares_solve(B, h):
    rng = np.random.default_rng(100 * B + h)
    variances = rng.uniform(0.3, 8.0, h)  # users split: every level its own variance
    levels = [rng.normal(5.0, 3.0, B**l) for l in range(1, h + 1)]
    total = 37.5
    out = consistent_tree(levels, variances, B, total)
    x, cov, A = _lstsq_twin(levels, variances, B, total)
    np.testing.assert_allclose(out[-1], x, rtol=0, atol=1e-10)
    for li in range(h):  # every level is the sum of its children, level 1 sums to the root
        np.testing.assert_allclose(out[li], A[li] @ out[-1], rtol=0, atol=1e-10)
    P = consistent_variances(variances, B)
    for li in range(h):
        np.testing.assert_allclose(np.diag(A[li] @ cov @ A[li].T), P[li], rtol=0, atol=1e-10)


@pytest.mark.parametrize("missing", [0, 1])
def test_a_level_without_reports_is_left_out_of_the_solve(missing):
    B, h = 3, 3
    rng = np.random.default_rng(7 + missing)
    variances = rng.uniform(0.5, 4.0, h)
    variances[missing] = np.inf
    levels = [rng.normal(0.0, 2.0, B**l) for l in range(1, h + 1)]
    out = consistent_tree(levels, variances, B, 10.0)
    x, _, _ = _lstsq_twin(levels, variances, B, 10.0)
    np.testing.assert_allclose(out[-1], x, rtol=0, atol=1e-10)


@pytest.mark.parametrize("B,h,D", [(2, 3, 8), (3, 2, 7), (4, 2, 13)])
def test_pooled_range_variance_is_the_twins_average_over_every_range(B, h, D):
    variances = np.random.default_rng(B).uniform(0.5, 4.0, h)
    _, cov, _ = _lstsq_twin([np.zeros(B**l) for l in range(1, h + 1)], variances, B, 0.0)
    want = np.mean([cov[a:b + 1, a:b + 1].sum() for a in range(D) for b in range(a, D)])
    assert math.isclose(pooled_range_variance(variances, B, D), want, rel_tol=1e-10)


def test_optimal_level_weights_beat_the_uniform_split():
    eps, D, B = math.log(3), 64, 4
    w = optimal_level_weights(epsilon=eps, domain_size=D, branching=B, oracle="oue")
    assert w.shape == (3,) and math.isclose(w.sum(), 1.0) and np.all(w > 0)
    per_report = 4 * 3 / (3 - 1) ** 2  # OUE at e^eps = 3
    uniform = pooled_range_variance(np.full(3, per_report * 3), B, D)
    tuned = pooled_range_variance(per_report / w, B, D)
    assert tuned < 0.97 * uniform
    hh = HierarchicalHistogram(epsilon=eps, domain_size=D, branching=B, oracle="oue",
                               level_weights=list(w * 7), codebook_seed=1)
    np.testing.assert_allclose(hh.level_weights, w)
    assert hh.stream_params()["level_weights"] == [float(v) for v in w * 7]  # as given
    again = HierarchicalHistogram(**hh.stream_params())
    assert again.stream_params() == hh.stream_params()
    np.testing.assert_array_equal(again.level_weights, hh.level_weights)
    # the users draw their level by the weights (a binomial count per level, 4.5 sd)
    x = np.zeros(40_000, dtype=np.int64)
    levels = np.bincount(hh.privatize(x, rng=0)[:, 0], minlength=3)
    assert np.all(np.abs(levels - 40_000 * w) < 4.5 * np.sqrt(40_000 * w * (1 - w)))
    # and the law of a report weighs each level's law by its share
    law = range_law(HierarchicalHistogram(epsilon=1.0, domain_size=4, branching=2, oracle="grr",
                                          level_weights=[1.0, 3.0], codebook_seed=1),
                    1.0, np.zeros(1, dtype=np.uint64))
    np.testing.assert_allclose(law.probs[0].reshape(4, -1)[:, :2].sum(axis=1), 0.25)


def test_consistency_refuses_a_level_known_exactly_or_nan():
    with pytest.raises(ValueError, match="must be > 0"):
        consistent_tree([np.zeros(2), np.zeros(4)], [0.0, 1.0], 2, 0.0)
    with pytest.raises(ValueError, match="must be > 0"):
        consistent_tree([np.zeros(2), np.zeros(4)], [np.nan, 1.0], 2, 0.0)


# ----------------------------------------------------------------------------- brute force
def _brute_range(values, a, b):
    return np.array([np.sum((values >= lo) & (values <= hi)) for lo, hi in zip(a, b)], float)


def _brute_quantile(counts, q):
    """The documented rule by a loop: value v spread uniformly over [v, v + 1)."""
    n = counts.sum()
    out = []
    for target in q:
        below = 0.0
        t = float(len(counts))
        for v, c in enumerate(counts):
            if c > 0 and (below + c) / n >= target:
                t = v + (target * n - below) / c
                break
            if c == 0 and below / n >= target:
                t = float(v)
                break
            below += c
        out.append(t)
    return np.array(out)


def _exact_estimate(values, D):
    counts = np.bincount(values, minlength=D).astype(float)
    return RangeEstimate(counts, None, int(values.size), PrivacyStatement.local(epsilon=1.0),
                         None)


def test_range_count_cdf_and_quantile_of_exact_counts_are_brute_force():
    rng = np.random.default_rng(3)
    D = 37
    values = rng.integers(0, D, 500)
    est = _exact_estimate(values, D)
    a = rng.integers(0, D, 300)
    b = a + rng.integers(0, D - a)
    np.testing.assert_array_equal(est.range_count(a, b), _brute_range(values, a, b))
    np.testing.assert_array_equal(est.range_count(a.reshape(20, 15), b.reshape(20, 15)),
                                  _brute_range(values, a, b).reshape(20, 15))
    assert est.range_count(4, 4) == np.sum(values == 4)  # inclusive at both ends
    np.testing.assert_allclose(est.cdf(), [np.mean(values <= v) for v in range(D)], atol=1e-15)
    q = rng.uniform(0, 1, 200)
    np.testing.assert_allclose(est.quantile(q), _brute_quantile(est.counts, q), atol=1e-12)


def test_quantile_rule_interpolates_inside_a_value_and_ends_at_D():
    cdf = np.array([0.0, 0.25, 0.25, 0.75, 0.75])  # mass 1/4 at 1, 1/2 at 3; 1/4 missing
    np.testing.assert_allclose(quantile_from_cdf(cdf, [0.0, 0.125, 0.25, 0.5, 0.75, 0.8, 1.0]),
                               [0.0, 1.5, 2.0, 3.5, 4.0, 5.0, 5.0])
    # a noisy CDF: made non-decreasing and clipped before it is inverted
    noisy = np.array([-0.1, 0.4, 0.3, 1.2])
    np.testing.assert_allclose(quantile_from_cdf(noisy, [0.2, 0.4, 0.9]), [1.5, 2.0, 3.0 + 0.5 / 0.6])


@pytest.mark.parametrize("B", [2, 3, 4])
def test_hierarchy_at_a_huge_budget_answers_exactly(B):
    """GRR at epsilon 700 keeps every value: every answer is the brute-force one.

    (The budget split: every level hears every user. Split by users, a level
    hears a sample and its counts are scaled, exact only in expectation.)
    """
    split = "budget"
    rng = np.random.default_rng(B)
    D = 50
    values = rng.integers(0, D, 3000)
    for consistency in (True, False):
        hh = HierarchicalHistogram(epsilon=700.0, domain_size=D, branching=B, oracle="grr",
                                   split=split, consistency=consistency, codebook_seed=1)
        est = hh.estimate(hh.privatize(values, rng=2))
        a = rng.integers(0, D, 200)
        b = a + rng.integers(0, D - a)
        np.testing.assert_allclose(est.range_count(a, b), _brute_range(values, a, b),
                                   rtol=0, atol=1e-6)
        q = rng.uniform(0.01, 0.99, 50)
        truth = _brute_quantile(np.bincount(values, minlength=D).astype(float), q)
        np.testing.assert_allclose(est.quantile(q), truth, atol=1e-9)
        np.testing.assert_allclose(est.quantile_by_descent(q), truth, atol=1e-9)


def _naive_prefix(levels, B, x, n):
    """Users below ``x`` from the fewest nodes tiling ``[0, x)``, largest first, by a loop."""
    h = len(levels)
    if x >= B**h:
        return float(n)  # the root
    total, pos = 0.0, 0
    for li in range(h):
        span = B ** (h - 1 - li)
        while pos + span <= x:
            total += levels[li][pos // span]
            pos += span
    return total


def test_raw_tree_ranges_sum_the_b_adic_nodes():
    rng = np.random.default_rng(11)
    B, h, D = 3, 3, 25  # padded to 27 leaves
    levels = tuple(rng.normal(0, 5, B**l) for l in range(1, h + 1))
    from fastldp.ranges import HierarchicalEstimate

    est = HierarchicalEstimate(levels[-1][:D].copy(), None, 400,
                               PrivacyStatement.local(epsilon=1.0), None, levels=levels,
                               level_variances=np.ones(h), tree=levels, branching=B,
                               consistent=False)
    a = rng.integers(0, D, 300)
    b = a + rng.integers(0, D - a)
    want = [_naive_prefix(levels, B, int(hi) + 1, 400) - _naive_prefix(levels, B, int(lo), 400)
            for lo, hi in zip(a, b)]
    np.testing.assert_allclose(est.range_count(a, b), want, rtol=0, atol=1e-9)


# ----------------------------------------------------------------------------- oracle rule
def test_auto_picks_the_least_variance_whose_cost_fits():
    hh = HierarchicalHistogram(epsilon=math.log(3), domain_size=2**20, branching=4,
                               codebook_seed=1)
    # GRR at 4 nodes (variance 1.25 n against OUE's 3 n), OUE up to 1,024 nodes, then HR
    assert hh.level_oracles == ("grr", "oue", "oue", "oue", "oue", "hr", "hr", "hr", "hr", "hr")
    assert hh.row_width == 1 + 1024 // 64
    big = HierarchicalHistogram(epsilon=6.0, domain_size=256, branching=16, codebook_seed=1)
    assert big.level_oracles == ("grr", "grr")  # GRR's e^6 + 254 below OUE's 4 e^6
    assert FlatRange(epsilon=1.0, domain_size=4096, codebook_seed=1).level_oracles == ("hr",)


# ----------------------------------------------------------------------------- partials
MECHS = {
    "hh-users": lambda: HierarchicalHistogram(epsilon=1.5, domain_size=40, branching=3,
                                              codebook_seed=5),
    "hh-budget-olh": lambda: HierarchicalHistogram(epsilon=1.5, domain_size=40, branching=4,
                                                   oracle="olh", split="budget",
                                                   codebook_seed=5),
    "hh-hr-raw": lambda: HierarchicalHistogram(epsilon=1.5, domain_size=40, oracle="hr",
                                               consistency=False, codebook_seed=5),
    "flat-oue": lambda: FlatRange(epsilon=1.5, domain_size=130, oracle="oue", codebook_seed=5),
    "flat-grr": lambda: FlatRange(epsilon=1.5, domain_size=5, oracle="grr", codebook_seed=5),
}


@pytest.mark.parametrize("name", sorted(MECHS))
def test_partials_merge_bit_for_bit(name):
    mech = MECHS[name]()
    x = mech.example_data(3000, np.random.default_rng(1))
    reports = mech.privatize(x, rng=2)
    whole = mech.estimate(reports)
    cuts = [0, 700, 701, 2100, 3000]
    parts = [mech.partial(reports[lo:hi], identities=np.arange(lo, hi))
             for lo, hi in zip(cuts[:-1], cuts[1:])]
    merged = mech.merge(mech.merge(parts[3], parts[1]), mech.merge(parts[0], parts[2]))
    merged = Partial.from_bytes(merged.to_bytes())
    out = mech.finalize(merged)
    np.testing.assert_array_equal(out.counts, whole.counts)
    a, b = [0, 1, 3], [4, 1, mech.domain_size - 1]
    np.testing.assert_array_equal(out.range_count(a, b), whole.range_count(a, b))
    assert out.n == whole.n == 3000
    other = type(mech)(**{**mech.stream_params(), "codebook_seed": 6})
    with pytest.raises(ValueError, match="other parameters"):
        other.finalize(merged)


# ----------------------------------------------------------------------------- audit laws
def _all_channels():
    return [ch for cls in (HierarchicalHistogram, FlatRange) for ch in cls.channels(1.0)]


@pytest.mark.parametrize("ch", [c for c in _all_channels() if not c.expect_violation],
                         ids=lambda c: c.name)
def test_every_level_law_has_largest_ratio_e_eps_exactly(ch):
    from fastldp.audit import audit_law

    for eps in (0.5, 1.0, 2.0):
        mech = ch.build(eps)
        law = range_law(mech, eps, np.arange(3, dtype=np.uint64))
        np.testing.assert_allclose(law.probs.sum(axis=2), 1.0, rtol=0, atol=1e-12)
        audit = audit_law(law, eps)
        assert audit.holds
        assert math.isclose(float(audit.ratio), math.exp(eps), rel_tol=1e-12)
        assert not audit_law(law, 0.999 * eps).holds  # tight: not private at any smaller budget


def test_the_users_split_law_is_the_levels_laws_over_L():
    hh = HierarchicalHistogram(epsilon=1.0, domain_size=RANGE_DOMAIN, branching=2,
                               oracle="grr", codebook_seed=1)
    law = range_law(hh, 1.0, np.zeros(1, dtype=np.uint64))
    e = math.e
    # value 0: level 0 (nodes {0,1}, {2,3}) keeps node 0 w.p. e/(e+1); level 1 keeps 0 w.p. e/(e+3)
    want = np.array([e / (e + 1), 1 / (e + 1), e / (e + 3), 1 / (e + 3), 1 / (e + 3),
                     1 / (e + 3)]) / 2
    np.testing.assert_allclose(law.probs[0, 0], want, rtol=1e-15)
    assert law.outputs == [(0, 0), (0, 1), (1, 0), (1, 1), (1, 2), (1, 3)]


@pytest.mark.parametrize("ch", _all_channels(), ids=lambda c: c.name)
def test_the_audit_passes_the_channels_and_catches_the_controls(ch):
    from fastldp.audit import audit_channel

    row = audit_channel(ch)
    assert row.holds != ch.expect_violation, ch.name


# ----------------------------------------------------------------------------- simulation
D_SIM = 16


def _population(n, seed=0):
    rng = np.random.default_rng(seed)
    return np.clip(np.floor(rng.normal(5.0, 3.0, n)), 0, D_SIM - 1).astype(np.int64)


def _repeat(mech, x, reps, seed):
    return [mech.estimate(mech.privatize(x, rng=seed * 10_000 + r)) for r in range(reps)]


def _check_unbiased(ests, truth_leaves, x, z=4.5):
    """Every leaf and a few ranges within z standard errors (the empirical sd) of the truth."""
    leaves = np.array([e.counts for e in ests])
    se = leaves.std(axis=0, ddof=1) / math.sqrt(len(ests))
    assert np.all(np.abs(leaves.mean(axis=0) - truth_leaves) < z * se)
    a, b = np.array([0, 2, 5, 0]), np.array([15, 9, 5, 3])
    ranges = np.array([e.range_count(a, b) for e in ests])
    se = ranges.std(axis=0, ddof=1) / math.sqrt(len(ests))
    assert np.all(np.abs(ranges.mean(axis=0) - _brute_range(x, a, b)) < z * se + 1e-9)


def _unbiased(reps, n):
    x = _population(n)
    truth = np.bincount(x, minlength=D_SIM).astype(float)
    for mech in (HierarchicalHistogram(epsilon=1.0, domain_size=D_SIM, branching=2,
                                       codebook_seed=3),
                 HierarchicalHistogram(epsilon=1.0, domain_size=D_SIM, branching=4, oracle="hr",
                                       consistency=False, codebook_seed=3),
                 FlatRange(epsilon=1.0, domain_size=D_SIM, oracle="oue", codebook_seed=3)):
        _check_unbiased(_repeat(mech, x, reps, 1), truth, x)


def test_estimates_are_unbiased():
    _unbiased(reps=150, n=1500)


@pytest.mark.slow
def test_estimates_are_unbiased_at_scale():
    _unbiased(reps=1500, n=5000)


def _exact_consistent_variance(mech, x):
    """The variance of each consistent leaf: the twin's linear map over independent counts.

    Budget split over OUE: every level's counts are independent, each with
    the oracle's exact variance ``n q(1-q) / (p-q)^2 + c (p(1-p) - q(1-q)) / (p-q)^2``.
    """
    B, h = mech.branching, mech.height
    A = _design(B, h)
    eps = np.array([mech.level_epsilons[0]])
    var_node = []
    for li, oracle in enumerate(mech.oracles):
        c = np.bincount(x // mech.level_spans[li], minlength=mech.level_sizes[li]).astype(float)
        var_node.append(oracle._uniform_variances(x.size, c))
    noise = np.array([x.size * float(o.variances(eps)[0]) for o in mech.oracles])
    # the consistent leaves are linear in the level counts: map each unit vector through
    var = np.zeros(B**h)
    for li in range(h):
        for j in range(B**li * B):
            unit = [np.zeros(B ** (k + 1)) for k in range(h)]
            unit[li][j] = 1.0
            col = consistent_tree(unit, noise, B, 0.0)[-1]
            var += col**2 * var_node[li][j]
    return var


def _budget_variance(reps, n):
    x = _population(n)
    mech = HierarchicalHistogram(epsilon=2.0, domain_size=D_SIM, branching=4, oracle="oue",
                                 split="budget", codebook_seed=4)
    ests = _repeat(mech, x, reps, 2)
    leaves = np.array([e.counts for e in ests])
    want = _exact_consistent_variance(mech, x)
    got = leaves.var(axis=0, ddof=1)
    # sample variance of R normal draws: relative sd sqrt(2 / (R - 1)); 4.5 sd, per leaf
    assert np.all(np.abs(got / want - 1) < 4.5 * math.sqrt(2 / (reps - 1))), got / want
    # the result's variances are the noise part of that (no user's own count): below it, close
    assert np.all(ests[0].variances <= want) and np.all(ests[0].variances > 0.9 * want)


def test_budget_split_variance_is_the_consistent_linear_map_of_the_oracles():
    _budget_variance(reps=300, n=2000)


@pytest.mark.slow
def test_budget_split_variance_at_scale():
    _budget_variance(reps=3000, n=4000)


def _simulator_matches(reps, n):
    """simulate() and privatize() + estimate() give level counts of the same law.

    Means and variances of every raw level count agree within 4.5 standard
    errors of their difference (the variance of a sample variance taken as
    2 s^4 / (R - 1), the normal case).
    """
    x = _population(n, seed=5)
    counts = np.bincount(x, minlength=D_SIM)
    mech = HierarchicalHistogram(epsilon=1.0, domain_size=D_SIM, branching=4, codebook_seed=6)
    assert mech.level_oracles == ("grr", "oue")  # both simulated laws
    real = [np.concatenate(e.levels) for e in _repeat(mech, x, reps, 3)]
    gen = np.random.default_rng(9)
    sim = [np.concatenate(mech.simulate(counts, rng=gen).levels) for _ in range(reps)]
    real, sim = np.array(real), np.array(sim)
    v_r, v_s = real.var(axis=0, ddof=1), sim.var(axis=0, ddof=1)
    se_mean = np.sqrt((v_r + v_s) / reps)
    assert np.all(np.abs(real.mean(axis=0) - sim.mean(axis=0)) < 4.5 * se_mean)
    se_var = np.sqrt(2 * (v_r**2 + v_s**2) / (reps - 1))
    assert np.all(np.abs(v_r - v_s) < 4.5 * se_var)


def test_the_aggregate_simulator_has_the_law_of_privatize():
    _simulator_matches(reps=200, n=2000)


@pytest.mark.slow
def test_the_aggregate_simulator_has_the_law_of_privatize_at_scale():
    _simulator_matches(reps=2000, n=20_000)


def test_simulate_refuses_levels_it_cannot_draw():
    hh = HierarchicalHistogram(epsilon=1.0, domain_size=16, oracle="hr", codebook_seed=1)
    with pytest.raises(NotImplementedError, match="HadamardResponse"):
        hh.simulate(np.ones(16, dtype=np.int64), rng=0)
    with pytest.raises(ValueError, match="'counts'"):
        hh.simulate(np.ones(15, dtype=np.int64), rng=0)


# ----------------------------------------------------------------------------- sanitization
def test_malformed_reports_are_replaced_and_counted():
    hh = HierarchicalHistogram(epsilon=1.0, domain_size=200, branching=4, codebook_seed=2)
    assert hh.level_oracles[:2] == ("grr", "oue") and hh.level_oracles[-1] == "oue"
    x = hh.example_data(50, np.random.default_rng(0))
    good = hh.privatize(x, rng=1)
    rows = [list(r) for r in good]
    grr_row = next(i for i in range(5, 50) if rows[i][0] == 0)
    rows[grr_row][1] = 99  # no output of GRR over 4 nodes
    rows[1] = rows[1][:-1]  # wrong width
    rows[2][3] = "x"  # not a number
    rows[3][2] = 0.5  # not an integer
    rows[4][0] = hh.n_levels  # names no level
    oue_row = next(i for i in range(5, 50) if rows[i][0] == 1)
    rows[oue_row][2] = 5  # level 1 (16 nodes) uses one word: a second one must be 0
    est = hh.estimate(np.array(rows, dtype=object))
    san = est.sanitization
    assert san.n_received == 50 and san.n_valid == 44
    assert san.by_reason == {"wrong_width": 1, "non_numeric": 1, "non_integer": 1,
                             "bad_index": 1, "out_of_range": 2}
    again = hh.estimate(np.array(rows, dtype=object))  # replacements are public: repeatable
    np.testing.assert_array_equal(again.counts, est.counts)
    # the partial keeps the counts: a merge adds them
    p = hh.partial(np.array(rows, dtype=object))
    merged = hh.finalize(hh.merge(p, hh.partial(good, identities=np.arange(50, 100))))
    assert merged.sanitization.n_received == 100 and merged.sanitization.n_valid == 94


def test_set_bits_beyond_an_oue_level_are_out_of_range():
    flat = FlatRange(epsilon=1.0, domain_size=70, oracle="oue", codebook_seed=2)
    reports = flat.privatize(np.arange(10), rng=0)
    reports[3, 1] |= 1 << 10  # bit 74: beyond node 69
    est = flat.estimate(reports)
    assert est.sanitization.by_reason["out_of_range"] == 1


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("kwargs,exc,words", [
    (dict(epsilon=float("nan")), ValueError, "'epsilon'"),
    (dict(epsilon=0.0), ValueError, "'epsilon'"),
    (dict(epsilon="1"), TypeError, "'epsilon'"),
    (dict(domain_size=1), ValueError, "'domain_size'"),
    (dict(domain_size=2.5), TypeError, "'domain_size'"),
    (dict(domain_size=True), TypeError, "'domain_size'"),
    (dict(branching=1), ValueError, "'branching'"),
    (dict(branching=float("nan")), TypeError, "'branching'"),
    (dict(oracle="rappor"), ValueError, "'oracle'"),
    (dict(oracle=3), TypeError, "'oracle'"),
    (dict(split="levels"), ValueError, "'split'"),
    (dict(consistency="yes"), TypeError, "'consistency'"),
    (dict(level_weights=[1.0, 2.0]), ValueError, "'level_weights'.*3 finite weights"),
    (dict(level_weights=[1.0, float("nan"), 1.0]), ValueError, "'level_weights'"),
    (dict(level_weights=[1.0, 0.0, 1.0]), ValueError, "'level_weights'"),
    (dict(level_weights=["a", "b", "c"]), TypeError, "'level_weights'"),
])
def test_bad_parameters_name_themselves(kwargs, exc, words):
    params = dict(epsilon=1.0, domain_size=64, codebook_seed=1, **{}) | kwargs
    with pytest.raises(exc, match=words):
        HierarchicalHistogram(**params)


def test_bad_calls_and_queries_are_refused_clearly():
    with pytest.raises(TypeError, match="keyword"):
        HierarchicalHistogram(1.0, 64)
    hh = HierarchicalHistogram(epsilon=1.0, domain_size=64, codebook_seed=1)
    for bad in ([0, 64], [0.5], [float("nan")], [[1, 2]]):
        with pytest.raises(ValueError, match="'values'.*\\[0, 64\\)"):
            hh.privatize(bad, rng=0)
    with pytest.raises(TypeError, match="'values'"):
        hh.privatize(["a"], rng=0)
    with pytest.raises(ValueError, match="'epsilons'"):
        hh.privatize([1, 2], epsilons=2.0, rng=0)
    est = hh.estimate(hh.privatize(np.arange(64), rng=0))
    with pytest.raises(ValueError, match="a=5, b=4"):
        est.range_count(5, 4)
    with pytest.raises(ValueError, match="a=0, b=64"):
        est.range_count([0, 1], [64, 2])
    with pytest.raises(ValueError, match="'a'"):
        est.range_count(float("nan"), 3)
    with pytest.raises(ValueError, match="'q'"):
        est.quantile([0.5, float("nan")])
    with pytest.raises(ValueError, match="'q'"):
        est.quantile_by_descent(1.5)
    with pytest.raises(ValueError, match="'reports'"):
        hh.estimate(np.zeros((3, hh.row_width + 1), dtype=np.int64))


def test_family_is_exported_and_documented():
    assert "ranges" in fastldp.FAMILIES
    assert fastldp.HierarchicalHistogram is HierarchicalHistogram
    assert fastldp.FlatRange is FlatRange
    assert HierarchicalHistogram(epsilon=1.0, domain_size=10, codebook_seed=1).kind == "distribution"


# ----------------------------------------------------------------------------- the shared machinery
def _olh_case():
    """A hierarchy whose OLH levels hash the identities: files must carry them."""
    hh = HierarchicalHistogram(epsilon=2.0, domain_size=50, branching=4, oracle="olh",
                               codebook_seed=21)
    ids = np.arange(10_000, 12_000, dtype=np.uint64)
    x = hh.example_data(2_000, np.random.default_rng(3))
    return hh, ids, hh.privatize(x, identities=ids, rng=4)


def test_it_implements_the_protocol():
    from fastldp import protocol
    from fastldp.protocol import StreamingMechanism

    for cls in (FlatRange, HierarchicalHistogram):
        assert protocol.streaming_classes()[cls.__name__] is cls
        assert cls in protocol.audited_classes()
    hh, _, _ = _olh_case()
    assert isinstance(hh, StreamingMechanism)
    protocol.check_mechanism(hh)


def test_report_files_and_fastldp_decode(tmp_path):
    import subprocess
    import sys

    pytest.importorskip("pyarrow")
    from fastldp.reports import ReportFile, decode_files, load_result, write_reports

    hh, ids, reports = _olh_case()
    path = write_reports(tmp_path / "hh.parquet", hh, reports, identities=ids, row_group_size=300)
    assert ReportFile(path).spec == hh.spec()
    whole = hh.estimate(reports, identities=ids)
    offline = decode_files(hh, [path])
    np.testing.assert_array_equal(offline.counts, whole.counts)
    out = tmp_path / "r.npz"
    proc = subprocess.run([sys.executable, "-m", "fastldp", "decode", str(path), "--out",
                           str(out), "--quiet"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    np.testing.assert_array_equal(np.asarray(load_result(out).counts), whole.counts)
    # the wrong identities give other counts (they key OLH's hashes)
    assert not np.array_equal(hh.estimate(reports).counts, whole.counts)


def test_a_collector_serves_it_and_decodes_it_live(tmp_path):
    pytest.importorskip("starlette")
    import httpx

    from fastldp.reports import decode_files
    from fastldp.service.client import Client
    from fastldp.service.testing import running_server

    mech = HierarchicalHistogram(epsilon=2.0, domain_size=100, branching=4, codebook_seed=22)
    x = mech.example_data(2_000, np.random.default_rng(8))
    with running_server(tmp_path, mechanism=mech.spec(), publish_every=1) as srv:
        info = httpx.get(srv.url + "/v1/mechanism").json()
        assert info["spec"] == mech.spec() and info["kind"] == "distribution"
        assert info["report_shape"] == [mech.row_width] and info["report_dtype"] == "int64"
        with Client(srv.url, srv.token) as client:
            done = client.send(x, identities=np.arange(2_000), rng=5, batch_size=500)
            assert done["accepted"] == 2_000
            live = client.estimate()
        srv.stop()
        offline = decode_files(mech, sorted(str(p) for p in srv.store.glob("seg-*.parquet")))
    assert live["n"] == offline.n == 2_000
    np.testing.assert_array_equal(np.asarray(live["estimate"], dtype=float), offline.estimate)


def test_fastldp_audit_lists_and_runs_its_channels():
    import subprocess
    import sys

    listed = subprocess.run([sys.executable, "-m", "fastldp", "audit", "--list", "--controls"],
                            capture_output=True, text=True, timeout=300)
    assert listed.returncode == 0, listed.stderr
    for name in ("hh-oue", "hh-olh", "hh-budget-oue", "flat-range-grr",
                 "control:hh-budget-oue-composition"):
        assert name in listed.stdout
    run = subprocess.run([sys.executable, "-m", "fastldp", "audit", "hh-grr", "--n", "2000"],
                         capture_output=True, text=True, timeout=300)
    assert run.returncode == 0, run.stdout + run.stderr


def test_no_reports_give_zero_counts_and_variances_as_the_oracles_do():
    for mech in (HierarchicalHistogram(epsilon=1.0, domain_size=50, codebook_seed=1),
                 FlatRange(epsilon=1.0, domain_size=50, codebook_seed=1)):
        est = mech.estimate(np.zeros((0, mech.row_width), dtype=np.int64))
        assert est.n == 0 and not est.counts.any() and not est.variances.any()
        assert est.quantile(0.5) == 50.0  # the curve never reaches q: D
