"""CALM's choice of its reported marginals by its error model (issue 36, item 2).

The model (:func:`fastldp.multidim.calm_parameters`) has a noise term,
checked here against the oracles' variances computed by hand and against
a seeded simulation, and a reconstruction charge, checked by hand; the
search is checked against an exhaustive search over every family of
attribute sets on four attributes; the class records the chosen sets in
its spec; and on a small table the chosen configuration's measured TVD is
compared with the old default's (every pair).
"""

import itertools
import math

import numpy as np
import pytest

from fastldp.multidim import CALM, calm_error_model, calm_parameters


def _grr_pq(eps, D):
    e = math.exp(eps)
    return e / (e + D - 1), 1.0 / (e + D - 1)


# ------------------------------------------------------------------ the noise term by hand
def test_noise_of_one_grr_group_is_the_grr_variance_of_its_table():
    # one group reports (0, 1): 6 cells, GRR (6 < 3e + 2); every user is in it.
    # At uniform cells each hit probability is 1/6: sum of cell variances
    # (1 - 1/6) / (n (p - q)^2) (the oracle's and the sampling's together)
    eps, n = 1.0, 1_000
    p, q = _grr_pq(eps, 6)
    noise, recon, _ = calm_error_model([2, 3], eps, n, [[0, 1]], t=2)
    assert noise == pytest.approx((1 - 1 / 6) / (n * (p - q) ** 2), rel=1e-12)
    assert recon == 0.0
    # the one-way marginals are projections: a set of c cells is hit with
    # probability 1/D_S, the same (p - q)
    noise1, recon1, _ = calm_error_model([2, 3], eps, n, [[0, 1]], t=1)
    assert noise1 == pytest.approx(((1 - 1 / 2) + (1 - 1 / 3)) / 2 / (n * (p - q) ** 2),
                                   rel=1e-12)
    assert recon1 == 0.0


def test_noise_of_one_olh_group_is_the_olh_variance_less_the_total():
    # 64 cells >= 3e + 2: OLH with g = round(e) + 1 = 4 buckets. A report
    # supports its own cell with probability p and every other one with
    # 1/g, independently (the i.i.d. hash model); Norm-Sub fixes the total,
    # so the model keeps the sum-zero part: trace - Var[total] / D
    eps, n, D = 1.0, 50_000, 64
    e = math.exp(eps)
    g = 4
    p, q = e / (e + g - 1), 1 / g
    v1, v0 = p * (1 - p), q * (1 - q)
    f = 1 / D
    # a cell is hit with probability p by its own users (f of them), 1/g by
    # the others, estimated as (hit - q) / (p - q); plus the sampling f (1 - f)
    trace = D * ((f * v1 + (1 - f) * v0) / (p - q) ** 2 + f * (1 - f))
    total = (v1 + (D - 1) * v0) / (p - q) ** 2
    noise, recon, _ = calm_error_model([8, 8], eps, n, [[0, 1]], t=2)
    assert noise == pytest.approx((trace - total / D) / n, rel=1e-12)
    assert recon == 0.0
    # and CALM gives this group that oracle with those probabilities
    calm = CALM(domain_sizes=[8, 8], epsilon=eps, marginals=[[0, 1]], codebook_seed=0)
    assert calm.group_oracles[0] is not None
    assert calm._pq[0] == pytest.approx((p, q), rel=1e-15)


def test_consistency_averages_the_groups_that_share_an_attribute():
    # groups (0, 1) and (0, 2), n/2 users each, 4 cells (GRR). Attribute 0
    # is in both: the consistency step averages them with equal weights
    # (half the variance of one); attributes 1 and 2 are in one group each
    eps, n = 1.0, 10_000
    p, q = _grr_pq(eps, 4)
    one_group = (1 - 1 / 2) / ((n / 2) * (p - q) ** 2)
    noise, recon, _ = calm_error_model([2, 2, 2], eps, n, [[0, 1], [0, 2]], t=1)
    assert noise == pytest.approx((one_group / 2 + one_group + one_group) / 3, rel=1e-12)
    assert recon == 0.0


def test_reconstruction_charge_counts_the_lost_interaction_dimensions():
    # three binary attributes, one reported pair: (0, 2) and (1, 2) lose
    # the component of {2} (1 dimension, D_S = 2) and their interaction
    # (1 dimension, D_S = 4), each charged d(S) / ((D_S + 1) D_T), D_T = 4
    noise, recon, _ = calm_error_model([2, 2, 2], 1.0, 10_000, [[0, 1]], t=2)
    lost = 1 / (3 * 4) + 1 / (5 * 4)
    assert recon == pytest.approx((0 + lost + lost) / 3, rel=1e-12)
    # sizes (3, 2, 2): (0, 2) (D_T = 6) loses {2} (1 / (3 * 6)) and {0, 2}
    # (2 x 1 dimensions: 2 / (7 * 6)); (1, 2) (D_T = 4) loses 1 / (3 * 4)
    # and 1 / (5 * 4)
    _, recon, _ = calm_error_model([3, 2, 2], 1.0, 10_000, [[0, 1]], t=2)
    assert recon == pytest.approx((0 + (1 / 18 + 2 / 42) + (1 / 12 + 1 / 20)) / 3, rel=1e-12)
    # every pair reported: nothing to reconstruct
    _, recon, _ = calm_error_model([3, 2, 2], 1.0, 10_000, [[0, 1], [0, 2], [1, 2]], t=2)
    assert recon == 0.0


def test_noise_term_matches_the_measured_error_of_a_grr_group():
    # one GRR group over (0, 1), uniform records drawn afresh: the mean over
    # R runs of sum (f_hat - 1/D)^2 has the model's noise as expectation;
    # the tolerance is 4 standard errors of that mean (measured spread)
    sizes, eps, n, R = [2, 3], 1.0, 2_000, 300
    calm = CALM(domain_sizes=sizes, epsilon=eps, marginals=[[0, 1]], codebook_seed=3)
    gen = np.random.default_rng(12)
    errors = []
    for _ in range(R):
        x = np.stack([gen.integers(0, k, n) for k in sizes], axis=1)
        tables, _, _ = calm.raw_tables(calm.estimate(calm.privatize(x, rng=gen)))
        errors.append(np.sum((tables[0] / n - 1 / 6) ** 2))
    errors = np.asarray(errors)
    noise, _, _ = calm_error_model(sizes, eps, n, [[0, 1]], t=2)
    se = errors.std(ddof=1) / math.sqrt(R)
    assert abs(errors.mean() - noise) < 4 * se, (errors.mean(), noise, se)


# ------------------------------------------------------------------ the search
CASES = [((2, 2, 2, 2), 0.5, 1_000), ((2, 2, 2, 2), 1.0, 10_000), ((2, 2, 2, 2), 2.0, 100_000),
         ((3, 2, 2, 4), 0.5, 1_000), ((3, 2, 2, 4), 1.0, 2_000), ((3, 2, 2, 4), 0.5, 50_000),
         ((2, 3, 4, 5), 1.0, 2_000), ((2, 3, 4, 5), 1.0, 10_000), ((2, 3, 4, 5), 2.0, 100_000)]


@pytest.mark.parametrize("sizes, eps, n", CASES)
def test_the_choice_is_the_exhaustive_optimum_on_four_attributes(sizes, eps, n):
    choice = calm_parameters(sizes, eps, n)
    # every candidate the search evaluated, re-evaluated by the plain model
    for l, m, noise, recon, tvd in choice.candidates:
        assert 1 <= l <= 3 and m >= 1
    chosen = [c for c in choice.candidates
              if (c[0], c[1]) == (choice.marginal_size, len(choice.marginals))]
    assert len(chosen) == 1
    assert chosen[0][4] == min(c[4] for c in choice.candidates)
    assert calm_error_model(sizes, eps, n, choice.marginals)[0] == pytest.approx(
        choice.noise_error, rel=1e-9)
    assert calm_error_model(sizes, eps, n, choice.marginals)[1] == pytest.approx(
        choice.reconstruction_error, rel=1e-9, abs=1e-15)
    # the brute-force twin: every family of l-sets, l = 1, 2, 3 (93 families)
    best = math.inf
    for l in (1, 2, 3):
        all_sets = list(itertools.combinations(range(4), l))
        for r in range(1, len(all_sets) + 1):
            for family in itertools.combinations(all_sets, r):
                best = min(best, calm_error_model(sizes, eps, n, family)[2])
    assert choice.expected_tvd == pytest.approx(best, rel=1e-9)
    assert all(len(s) == choice.marginal_size for s in choice.marginals)


def test_the_candidates_agree_with_the_plain_model():
    # the search evaluates prefixes of its greedy design with a vectorized
    # twin of calm_error_model; the chosen prefix re-evaluated by the plain one
    sizes, eps, n = (3, 2, 4, 2, 3, 5), 1.0, 10_000
    choice = calm_parameters(sizes, eps, n)
    noise, recon, tvd = calm_error_model(sizes, eps, n, choice.marginals)
    assert (noise, recon, tvd) == pytest.approx(
        (choice.noise_error, choice.reconstruction_error, choice.expected_tvd), rel=1e-9)


def _covered(choice, A, t=2):
    sets = [set(s) for s in choice.marginals]
    return sum(any(set(T) <= s for s in sets)
               for T in itertools.combinations(range(A), t)) / math.comb(A, t)


@pytest.mark.parametrize("sizes", [(2,) * 8, (4,) * 6, (3, 2, 4, 2, 3, 5)])
def test_more_users_or_budget_buy_more_coverage(sizes):
    # the noise falls as 1/n (and with epsilon) while the reconstruction
    # charge does not: the chosen coverage of the pairs never shrinks
    for eps in (0.5, 1.0, 2.0):
        by_n = [calm_parameters(sizes, eps, n) for n in (10**3, 10**4, 10**5, 10**6)]
        cover = [_covered(c, len(sizes)) for c in by_n]
        assert cover == sorted(cover), (eps, cover)
        recon = [c.reconstruction_error for c in by_n]
        assert recon == sorted(recon, reverse=True)
        total = [c.expected_tvd for c in by_n]
        assert total == sorted(total, reverse=True)
    for n in (10**3, 10**4, 10**5):
        # over epsilon the coverage may trade against the size (a pair at
        # eps 0.5 or every single attribute at eps 1), not the errors
        by_eps = [calm_parameters(sizes, eps, n) for eps in (0.25, 0.5, 1.0, 2.0, 4.0)]
        recon = [c.reconstruction_error for c in by_eps]
        assert recon == sorted(recon, reverse=True), (n, recon)
        total = [c.expected_tvd for c in by_eps]
        assert total == sorted(total, reverse=True)


def test_larger_marginals_at_larger_n_times_epsilon():
    sizes = (2,) * 8
    small = calm_parameters(sizes, 0.5, 1_000)
    middle = calm_parameters(sizes, 0.5, 100_000)
    large = calm_parameters(sizes, 2.0, 100_000)
    assert (small.marginal_size, middle.marginal_size, large.marginal_size) == (1, 2, 3)
    assert _covered(small, 8) == 0.0 and _covered(middle, 8) == 1.0


def test_bad_arguments_name_the_parameter():
    with pytest.raises(ValueError, match="n"):
        calm_parameters([2, 3], 1.0, 0)
    with pytest.raises(ValueError, match="epsilon"):
        calm_parameters([2, 3], float("nan"), 100)
    with pytest.raises(ValueError, match="t"):
        calm_parameters([2, 3], 1.0, 100, t=3)
    with pytest.raises(ValueError, match="oracle"):
        calm_parameters([2, 3], 1.0, 100, oracle="OUE")
    with pytest.raises(ValueError, match="marginals"):
        calm_error_model([2, 3], 1.0, 100, [[0, 2]])
    with pytest.raises(ValueError, match="marginals"):
        calm_error_model([2, 3], 1.0, 100, [[0, 1], [1, 0]])


# ------------------------------------------------------------------ the class
def test_n_users_chooses_the_marginals_and_the_spec_keeps_them():
    sizes, eps, n = [3, 2, 4, 2, 3], 1.0, 5_000
    calm = CALM(domain_sizes=sizes, epsilon=eps, n_users=n, codebook_seed=1)
    choice = calm_parameters(sizes, eps, n)
    assert calm.sets == list(choice.marginals)
    assert calm.choice == choice
    assert len(calm.sets) < math.comb(5, 2)  # the model leaves pairs out at this n
    params = calm.stream_params()
    assert params["marginals"] == [list(s) for s in choice.marginals]
    assert params["marginal_size"] is None
    server = CALM(**params)
    assert server.sets == calm.sets and server.stream_params() == params
    x = calm.example_data(3_000, np.random.default_rng(0))
    reports = calm.privatize(x, rng=1)
    mine, theirs = calm.estimate(reports), server.estimate(reports)
    np.testing.assert_array_equal(mine.counts, theirs.counts)
    np.testing.assert_array_equal(mine.marginal([0, 4])[0], theirs.marginal([0, 4])[0])


def test_explicit_sizes_and_sets_keep_the_old_layout():
    sizes = [3, 2, 4, 2]
    assert CALM(domain_sizes=sizes, epsilon=1.0).sets == list(itertools.combinations(range(4), 2))
    assert CALM(domain_sizes=sizes, epsilon=1.0, marginal_size=3).sets == list(
        itertools.combinations(range(4), 3))
    assert CALM(domain_sizes=sizes, epsilon=1.0, marginals=[[2, 0], [1, 3]]).sets == [
        (0, 2), (1, 3)]
    assert CALM(domain_sizes=sizes, epsilon=1.0).choice is None


def test_n_users_with_explicit_sets_or_bad_counts_is_refused():
    with pytest.raises(ValueError, match="n_users"):
        CALM(domain_sizes=[2, 3, 2], epsilon=1.0, marginal_size=2, n_users=1_000)
    with pytest.raises(ValueError, match="n_users"):
        CALM(domain_sizes=[2, 3, 2], epsilon=1.0, marginals=[[0, 1]], n_users=1_000)
    with pytest.raises(ValueError, match="n_users"):
        CALM(domain_sizes=[2, 3, 2], epsilon=1.0, n_users=0)
    with pytest.raises(TypeError, match="n_users"):
        CALM(domain_sizes=[2, 3, 2], epsilon=1.0, n_users=1e3)


def _mean_pair_tvd(mech, x, sizes, seed):
    n = len(x)
    est = mech.estimate(mech.privatize(x, rng=seed))
    out = []
    for a, b in itertools.combinations(range(len(sizes)), 2):
        counts, _ = est.marginal([a, b])
        truth = np.bincount(x[:, a] * sizes[b] + x[:, b], minlength=sizes[a] * sizes[b]) / n
        out.append(0.5 * np.abs(np.ravel(counts) / n - truth).sum())
    return float(np.mean(out))


@pytest.mark.parametrize("sizes, eps, n", [([3, 2, 4, 2, 3], 1.0, 5_000),
                                          ([4, 4, 4, 4, 4, 4], 0.5, 5_000),
                                          ([2] * 6, 4.0, 50_000)])
def test_the_chosen_marginals_are_not_worse_than_every_pair(sizes, eps, n):
    # same records and seeds for both; the paired difference of the mean
    # pair TVD over R runs, against its measured standard error (the model
    # leaves pairs out in the first two settings, reports every triple in
    # the third)
    R = 10
    chosen = CALM(domain_sizes=sizes, epsilon=eps, n_users=n, codebook_seed=1)
    every_pair = CALM(domain_sizes=sizes, epsilon=eps, codebook_seed=1)
    assert chosen.sets != every_pair.sets
    diff = []
    for r in range(R):
        x = every_pair.example_data(n, np.random.default_rng(100 + r))
        diff.append(_mean_pair_tvd(chosen, x, sizes, 1_000 + r)
                    - _mean_pair_tvd(every_pair, x, sizes, 1_000 + r))
    diff = np.asarray(diff)
    se = diff.std(ddof=1) / math.sqrt(R)
    assert diff.mean() < 3 * se, (diff.mean(), se)
