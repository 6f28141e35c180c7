"""Padded relation sampling: the padded sampler, unbiasedness, payload, errors."""

import math

import numpy as np
import pytest

from fastldp.relations import rate_diagnostic_population
from fastldp.relations import PaddedRelationSampling

SHAPE, K = (4, 5), 3


def test_sample_items_pads_with_public_dummies_uniformly():
    mech = PaddedRelationSampling(shape=SHAPE, k=K, s=4, oracle="grr", codebook_seed=1)
    n = 30_000
    sets = [np.array([[0, 1]])] * n  # m = 1: pair 1 w.p. 1/3, dummies p+1, p+2
    items = mech.sample_items(sets, rng=0)
    p = mech.p
    counts = np.bincount(items, minlength=p + K)
    assert set(np.flatnonzero(counts)) == {1, p + 1, p + 2}
    for c in counts[[1, p + 1, p + 2]]:
        assert abs(c / n - 1 / 3) < 5 * math.sqrt((2 / 9) / n)


@pytest.mark.parametrize("oracle", ["grr", "olh", "hr"])
def test_global_linear_estimate_is_unbiased(oracle):
    # E[linear estimate] = sum lambda_i A_i / sum lambda_i over codebooks and
    # coins; per-coordinate variance <= k^2 sum lambda_i^2 (B_i + 1/4) / Lambda^2.
    rng = np.random.default_rng(5)
    n, trials = 3000, 60
    pop = rate_diagnostic_population(shape=SHAPE, s=6, k=K, n=n, rng=rng)
    eps = rng.uniform(0.5, 2.0, n)
    ids = np.arange(n, dtype=np.uint64)
    total = np.zeros(20)
    for t in range(trials):
        mech = PaddedRelationSampling(shape=SHAPE, k=K, s=6, oracle=oracle, codebook_seed=100 + t)
        reports = mech.privatize(pop.relations, epsilons=eps, rng=rng)
        clean, _ = mech.sanitize(reports, eps, ids, "test")
        total += mech.linear_estimate(clean, eps, ids)
    lam = mech.oracle.weights(eps)
    target = np.asarray(pop.relations.T @ lam).ravel() / lam.sum()
    if oracle == "hr":
        bound = 1.0 / np.tanh(eps / 2) ** 2
    elif oracle == "grr":
        p, q = mech.oracle._pq(eps)
        bound = 1.0 / (4 * (p - q) ** 2)
    else:
        g = mech.oracle.buckets(eps)
        bound = 1.0 / (4 * (mech.oracle._p(eps, g) - 1.0 / g) ** 2)
    var = K**2 * np.sum(lam**2 * (bound + 0.25)) / lam.sum() ** 2
    sd = math.sqrt(var / trials)
    assert np.max(np.abs(total / trials - target)) < 4.5 * sd


def test_payload_bits():
    eps = np.array([0.5, 1.0, 3.0])
    assert PaddedRelationSampling(shape=(64, 64), k=8, s=5, oracle="grr", codebook_seed=0) \
        .payload_bits(eps).tolist() == [13, 13, 13]
    assert PaddedRelationSampling(shape=(64, 64), k=8, s=5, oracle="hr", codebook_seed=0) \
        .payload_bits(eps).tolist() == [13, 13, 13]
    # g = round(e^eps) + 1 = 3, 4, 21
    assert PaddedRelationSampling(shape=(64, 64), k=8, s=5, oracle="olh", codebook_seed=0) \
        .payload_bits(eps).tolist() == [2, 2, 5]


def test_reports_are_legal_and_reproducible():
    pop = rate_diagnostic_population(shape=SHAPE, s=6, k=K, n=500, rng=3)
    for oracle in ("grr", "olh", "hr"):
        mech = PaddedRelationSampling(shape=SHAPE, k=K, s=6, oracle=oracle, codebook_seed=9)
        eps = np.linspace(0.2, 3, 500)
        a = mech.privatize(pop.relations, epsilons=eps, rng=np.random.SeedSequence(4))
        b = mech.privatize(pop.relations, epsilons=eps, rng=np.random.SeedSequence(4))
        np.testing.assert_array_equal(a, b)
        sizes = mech.oracle.output_sizes(eps)
        assert np.all((a >= 0) & (a < sizes))


def test_estimate_is_feasible_and_counts_malformed_reports():
    mech = PaddedRelationSampling(shape=SHAPE, k=K, s=4, oracle="hr", codebook_seed=2)
    reports = np.array([1, 2, 3, -4, 99, 0.5, np.nan, 7], dtype=object)
    res = mech.estimate(reports, epsilons=1.0)
    assert res.sanitization.n_sanitized == 4
    m = res.matrix
    assert np.all(m >= 0) and np.all(m <= 1) and m.sum() <= K + 1e-9 and np.count_nonzero(m) <= 4


def test_bad_parameters():
    with pytest.raises(ValueError, match="'oracle' parameter of PaddedRelationSampling must be one of"):
        PaddedRelationSampling(shape=SHAPE, k=K, s=4, oracle="rappor")
    mech = PaddedRelationSampling(shape=SHAPE, k=K, s=4, oracle="olh", codebook_seed=2)
    with pytest.raises(ValueError, match="'epsilons' parameter of PaddedRelationSampling"):
        mech.privatize([np.array([[0, 0]])], epsilons=float("nan"), rng=0)
    with pytest.raises(ValueError, match="at most k = 3 pairs"):
        mech.privatize([np.array([[0, 0], [0, 1], [0, 2], [0, 3]])], epsilons=1.0, rng=0)
    assert "oracle='olh'" in repr(mech)


def _set_law(mech, pairs, eps, identity=0):
    """Exact output law of one identity holding ``pairs`` (encoded), slots averaged."""
    law = mech.oracle.channel(eps, identity)
    items = [pairs[u] if u < len(pairs) else mech.p + u for u in range(mech.k)]
    return law[items].mean(axis=0)


@pytest.mark.parametrize("oracle", ["grr", "olh", "hr"])
@pytest.mark.parametrize("eps", [0.4, 1.5])
def test_set_level_likelihood_ratio_is_at_most_e_eps(oracle, eps):
    # Enumerate every set of at most k = 2 pairs of a 2 x 2 table.
    import itertools

    mech = PaddedRelationSampling(shape=(2, 2), k=2, s=2, oracle=oracle, codebook_seed=3)
    sets = [list(c) for m in range(3) for c in itertools.combinations(range(4), m)]
    laws = np.stack([_set_law(mech, s, eps, identity=5) for s in sets])
    np.testing.assert_allclose(laws.sum(axis=1), 1.0, rtol=1e-12)
    ratio = (laws.max(axis=0) / laws.min(axis=0)).max()
    assert ratio <= math.exp(eps) * (1 + 1e-12)
    if oracle == "grr":
        # sampling amplifies: the largest ratio is (p + (k - 1) q) / (k q) < e^eps
        p_, q_ = (x[0] for x in mech.oracle._pq(np.array([eps])))
        assert ratio == pytest.approx((p_ + q_) / (2 * q_), rel=1e-12)


@pytest.mark.parametrize("oracle", ["grr", "olh", "hr"])
def test_privatize_samples_the_set_level_channel(oracle):
    from scipy.stats import chisquare

    mech = PaddedRelationSampling(shape=(2, 2), k=2, s=2, oracle=oracle, codebook_seed=3)
    n, eps = 40_000, 1.0
    law = _set_law(mech, [1], eps, identity=5)
    sets = [np.array([[0, 1]])] * n
    # one identity's channel (identity 5 each time), sampled n times
    items = mech.sample_items(sets, rng=1)
    out = mech.oracle.perturb(items, np.full(n, eps), np.full(n, 5, np.uint64), np.random.default_rng(2))
    counts = np.bincount(out, minlength=law.shape[0])
    assert chisquare(counts, n * law).pvalue > 1e-4
