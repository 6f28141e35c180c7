"""Audits of the sparse-vector baselines and the shuffle protocols.

Laws against the mechanisms' own descriptions and samplers (seeded frequency
tests), the PCKV composition claim, PrivKVM's rounds, the (eps, delta)
distinguishing test, and the new registry rows and negative controls.
"""

from math import exp, log, log1p

import numpy as np
import pytest
from scipy import stats

from fastldp import audit, cli
from fastldp.regression import _shuffle_channels as sh
from fastldp.vectors import _laws as vector_laws
from fastldp.audit.empirical import epsilon_lower_bound
from fastldp.audit.exact import audit_law
from fastldp.channels import row_tuples as _row_tuples

NEW_EXACT = ["pckv-ue", "pckv-grr", "privkvm", "privkvm-rounds", "collision", "succinct-duchi"]
NEW_EMPIRICAL = ["succinct-laplace", "succinct-piecewise"]
SHUFFLE = ["shuffled-sum", "shuffled-bits"]
NEW = NEW_EXACT + NEW_EMPIRICAL + SHUFFLE
POOL = np.arange(64, dtype=np.uint64)


def _law(name, eps=1.0, ids=POOL):
    ch = audit.get_channel(name, eps)
    mech = ch.build(ch.epsilon)
    return ch, mech, ch.law(mech, ch.epsilon, ids if ch.keyed else np.zeros(1, np.uint64))


# ----------------------------------------------------------------- laws
def test_kv_sets_enumerate_key_value_sets_with_stored_zeros():
    sets = vector_laws.kv_sets(3, 2)
    assert len(sets) == 1 + 3 * 3 + 3 * 9
    csr = vector_laws.kv_csr(sets, 3)
    assert csr.nnz == sum(len(s) for s in sets)            # stored zeros kept
    from fastldp.vectors import as_sparse_vectors
    vecs = as_sparse_vectors(csr, d=3, owner="test", m=2)
    assert np.array_equal(vecs.sizes, [len(s) for s in sets])
    one = [sets[5]] * 7
    assert (vector_laws.kv_csr(one, 3) != vector_laws.kv_csr(list(one[:1]) * 7, 3)).nnz == 0


@pytest.mark.parametrize("name", NEW_EXACT)
def test_laws_are_channels(name):
    _, _, law = _law(name)
    assert np.abs(law.probs.sum(axis=2) - 1).max() < 1e-14
    assert (law.probs > 0).all()


@pytest.mark.parametrize("split", [None, (0.5, 0.8), (0.8, 0.3), (0.2, 1.0)])
@pytest.mark.parametrize("variant", ["PCKVUE", "PCKVGRR"])
def test_pckv_law_attains_exactly_the_composed_epsilon(variant, split):
    # the claim is max{eps2, eps1 + ln(2 / (1 + e^-eps2))}, not eps1 + eps2; with l = 1 the
    # correlated perturbation attains it exactly
    from fastldp import vectors

    mech = getattr(vectors, variant)(d=3, m=1, epsilon=1.0, epsilon_split=split)
    composed = vectors.pckv_composed_epsilon(mech.eps1, mech.eps2)
    fn = vector_laws.pckv_ue_law if variant == "PCKVUE" else vector_laws.pckv_grr_law
    law = fn(3, mech.ell, mech.eps1, mech.eps2)
    res = audit_law(law, composed)
    assert res.holds and abs(res.epsilon_audited - composed) < 1e-12
    assert not audit_law(law, composed * (1 - 1e-9)).holds
    assert composed <= 1.0 * (1 + 1e-12)
    assert composed < mech.eps1 + mech.eps2


def test_pckv_default_split_composes_to_epsilon():
    from fastldp.vectors import PCKVUE, pckv_composed_epsilon

    for eps in (0.3, 1.0, 4.0):
        mech = PCKVUE(d=3, m=2, epsilon=eps)
        assert pckv_composed_epsilon(mech.eps1, mech.eps2) == pytest.approx(eps, rel=1e-14)
        assert mech.eps1 == pytest.approx(log1p(exp(eps)) - log(2.0), rel=1e-14)


def test_collision_law_is_the_mechanisms_channel_on_signed_inputs():
    ch, mech, law = _law("collision")
    for j, s in enumerate(law.inputs):
        if any(v == 0.0 for _, v in s):
            continue                      # channel() needs inputs that involve no rounding
        x = vector_laws.kv_csr([s] * POOL.shape[0], mech.d)
        np.testing.assert_allclose(law.probs[:, j], mech.channel(x, identities=POOL),
                                   rtol=1e-15, atol=0)


def test_collision_law_mixes_stored_zeros_over_fair_signs():
    _, mech, law = _law("collision")
    idx = {s: j for j, s in enumerate(law.inputs)}
    zero, plus, minus = ((0, 0.0),), ((0, 1.0),), ((0, -1.0),)
    np.testing.assert_allclose(law.probs[:, idx[zero]],
                               (law.probs[:, idx[plus]] + law.probs[:, idx[minus]]) / 2, rtol=1e-15)


def test_succinct_law_is_the_mechanisms_density():
    ch, mech, law = _law("succinct-duchi")
    c = mech.R * mech.randomizer.C
    for j, v in enumerate(law.inputs):
        x = np.tile(v, (POOL.shape[0], 1))
        for o, signs in enumerate(law.outputs):
            y = np.tile(np.array(signs, dtype=np.float64) * c, (POOL.shape[0], 1))
            np.testing.assert_allclose(law.probs[:, j, o], mech.density(y, x, identities=POOL),
                                       rtol=1e-13)


def test_privkvm_round_law_is_the_first_round_marginal_of_the_full_law():
    from fastldp.vectors import PrivKVM

    mech = PrivKVM(d=3, m=2, epsilon=1.3, n_rounds=3)
    full = vector_laws.privkvm_law(3, 2, 1.3, 3, np.zeros((1, 3)))
    r1 = vector_laws.privkvm_round_law(3, 2, 1.3, 3)
    index = {o: i for i, o in enumerate(r1.outputs)}
    marg = np.zeros_like(r1.probs)
    for col, (j, bit, vals) in enumerate(full.outputs):
        marg[0, :, index[(j, bit, vals[0])]] += full.probs[0, :, col]
    np.testing.assert_allclose(marg, r1.probs, rtol=1e-13)
    # the whole c-round channel, over every public fake trajectory, is exactly eps = 1.3
    res = audit_law(vector_laws.privkvm_law(3, 2, 1.3, 3, vector_laws.fake_grid(3)), 1.3)
    assert res.holds and abs(res.epsilon_audited - 1.3) < 1e-12
    # round 1 stays within its budget eps/2 + eps/(2c), strictly (the fake value is 0)
    share = mech.eps_key + mech.eps_value
    res1 = audit_law(r1, share)
    assert res1.holds and res1.epsilon_audited < share
    assert not audit_law(r1, 0.99 * res1.epsilon_audited).holds


# ----------------------------------------------------------------- laws against the samplers
FREQ_INPUTS = {
    "pckv-ue": [(), ((0, 1.0), (2, -1.0)), ((1, 0.0),)],
    "pckv-grr": [(), ((0, -1.0),), ((2, 0.0),)],
    "privkvm": [(), ((0, 1.0), (1, -1.0)), ((2, 0.0),)],
    "collision": [(), ((0, 1.0), (1, -1.0)), ((2, 0.0), (0, 1.0))],
}


def _chi2(counts, probs):
    keep = probs * counts.sum() >= 5
    obs = np.append(counts[keep], counts[~keep].sum())
    exp_ = np.append(probs[keep], probs[~keep].sum()) * counts.sum()
    if exp_[-1] == 0:
        obs, exp_ = obs[:-1], exp_[:-1]
    return stats.chisquare(obs, exp_).pvalue


FREQ_POOL = np.arange(2000, dtype=np.uint64)   # keyed channels: 30 draws per identity


def _frequencies(ch, mech, law, j, gen, n=60_000):
    """Counts of each output of ``law`` over ``n`` sampler draws of input ``j``, and the
    expected probabilities (averaged over the identities used)."""
    key = {o: i for i, o in enumerate(law.outputs)}
    counts = np.zeros(len(law.outputs))
    if ch.keyed:
        for _ in range(n // FREQ_POOL.shape[0]):
            reports = ch.sample(mech, ch.epsilon, [law.inputs[j]] * FREQ_POOL.shape[0],
                                FREQ_POOL, gen)
            counts += np.bincount([key[r] for r in reports], minlength=len(law.outputs))
        return counts, law.probs[:, j].mean(axis=0)
    reports = ch.sample(mech, ch.epsilon, [law.inputs[j]] * n, np.arange(n, dtype=np.uint64), gen)
    counts += np.bincount([key[r] for r in reports], minlength=len(law.outputs))
    return counts, law.probs[0, j]


@pytest.mark.parametrize("name", list(FREQ_INPUTS))
def test_sampler_frequencies_match_the_law(name):
    """Seeded frequency test of the whole output law (not only the witness event).

    Keyed channels mix the laws of 2000 identities; the chi-square test with the
    averaged law is then conservative (each cell is a Poisson-binomial count)."""
    ch, mech, law = _law(name, ids=FREQ_POOL)
    gen = np.random.default_rng(3)
    for s in FREQ_INPUTS[name]:
        j = law.inputs.index(tuple(sorted((k, float(v)) for k, v in s)))
        counts, probs = _frequencies(ch, mech, law, j, gen)
        assert _chi2(counts, probs) > 1e-4, (name, s)


def test_succinct_sampler_frequencies_match_the_law():
    ch, mech, law = _law("succinct-duchi", ids=FREQ_POOL)
    gen = np.random.default_rng(4)
    for j in (0, 4, len(law.inputs) - 1):
        counts, probs = _frequencies(ch, mech, law, j, gen)
        assert _chi2(counts, probs) > 1e-4


def test_row_tuples():
    arr = np.array([[1, -1, 0], [0, 0, 0], [1, -1, 0]], dtype=np.int8)
    assert _row_tuples(arr) == [(1, -1, 0), (0, 0, 0), (1, -1, 0)]
    assert all(type(v) is int for v in _row_tuples(arr)[0])


# ----------------------------------------------------------------- (eps, delta) test
def test_delta_lower_bound_subtracts_delta():
    base = epsilon_lower_bound(3000, 10_000, 1000, 10_000)
    with_delta = epsilon_lower_bound(3000, 10_000, 1000, 10_000, delta=0.05)
    assert 0 < with_delta < base
    assert epsilon_lower_bound(3000, 10_000, 1000, 10_000, delta=0.5) == 0.0
    assert epsilon_lower_bound(3000, 10_000, 1000, 10_000, delta=0.0) == base


def test_shuffled_sum_draws_are_the_protocols_release():
    """The vectorized draws have the law of ShuffledVectorSum.sum on the same data."""
    mech = sh.shuffled_sum(1.0)
    gen = np.random.default_rng(0)
    fast = sh.shuffled_sum_draw(mech, 1.0, 0, 4000, gen)
    v = np.zeros((sh.SUM_PARTIES, 1))
    v[0] = 1.0
    slow = np.array([mech.sum(v, gen).total[0] for _ in range(600)])
    res = mech.sum(v, gen)
    assert res.simulated and res.epsilon == 1.0
    # noise s.d. from the plan; both samples centred on the true sum 1
    for sample in (fast, slow):
        assert abs(sample.mean() - 1.0) < 6 * res.noise_sd / np.sqrt(sample.shape[0])
    assert fast.std() == pytest.approx(res.noise_sd, rel=0.05)
    assert stats.ks_2samp(fast, slow).pvalue > 1e-4


def test_shuffled_bits_draws_are_the_protocols_counts():
    mech = sh.shuffled_bits(1.0)
    g = mech.gamma(sh.BITS_PARTIES)
    d0 = sh.shuffled_bits_draw(mech, 1.0, 0, 3000, np.random.default_rng(1))
    d1 = sh.shuffled_bits_draw(mech, 1.0, 1, 3000, np.random.default_rng(2))
    # debiased counts are unbiased: c1 - c0 has mean -n under D and -(n - 2) under D'
    sd = np.sqrt(2 * sh.BITS_PARTIES * g * (1 - g)) / (1 - 2 * g)
    assert abs(d0.mean() + sh.BITS_PARTIES) < 6 * sd / np.sqrt(3000)
    assert abs(d1.mean() + sh.BITS_PARTIES - 2) < 6 * sd / np.sqrt(3000)
    assert d0.std() == pytest.approx(sd, rel=0.08)


def test_shuffle_controls_are_under_noised_and_claim_eps():
    honest, bad = sh.shuffled_sum(1.0), sh.undernoised_sum(1.0)
    assert sh.shuffled_sum_claim(bad) == sh.shuffled_sum_claim(honest)
    assert bad.plan(sh.SUM_PARTIES, 1)["mu"] < honest.plan(sh.SUM_PARTIES, 1)["mu"] / 10
    hb, bb = sh.shuffled_bits(1.0), sh.undernoised_bits(1.0)
    assert sh.shuffled_bits_claim(bb) == sh.shuffled_bits_claim(hb)
    assert bb.gamma(sh.BITS_PARTIES) < hb.gamma(sh.BITS_PARTIES) / 3


# ----------------------------------------------------------------- registry rows and controls
@pytest.mark.parametrize("name", NEW)
def test_new_channels_pass_with_the_cli_defaults(name):
    row = audit.audit_channel(audit.get_channel(name), rng=0)
    assert row.holds and row.as_expected, (name, row.exact, row.empirical, row.notes)
    if name in SHUFFLE:
        assert row.kind == "shuffle" and row.empirical.delta > 0
        assert row.empirical.lower_bound < 0.5      # far below the claim: the test only refutes
    if name == "privkvm":
        assert row.claimed == pytest.approx(2 / 3)
    if name == "privkvm-rounds":
        assert row.empirical is None and any("no sampler check" in n for n in row.notes)
    if name.startswith("pckv"):
        assert any("composed" in n for n in row.notes)


NEW_CONTROLS = [c for c, ch in audit.negative_controls().items() if ch.control_of in NEW]


def test_every_new_entry_has_a_control():
    assert {audit.negative_controls()[c].control_of for c in NEW_CONTROLS} == set(NEW)


@pytest.mark.parametrize("name", NEW_CONTROLS)
def test_new_controls_are_caught_with_the_cli_defaults(name):
    ch = audit.negative_controls()[name]
    row = audit.audit_channel(ch, rng=0)
    assert not row.holds and row.as_expected, (name, row.exact, row.empirical)
    if ch.kind == "exact":
        assert not row.exact.holds


@pytest.mark.parametrize("seed", [5, 6])
@pytest.mark.parametrize("name", [c for c in NEW_CONTROLS if "shuffled" in c and "eps" in c])
def test_shuffle_controls_are_caught_on_other_seeds(name, seed):
    row = audit.audit_channel(audit.negative_controls()[name], rng=seed)
    assert not row.holds


def test_cli_audit_new_entries_and_controls(capsys):
    assert cli.main(["audit", "pckv-grr", "privkvm", "shuffled-bits", "--controls"]) == 0
    out = capsys.readouterr().out
    for name in ("pckv-grr", "privkvm", "shuffled-bits"):
        line = next(ln for ln in out.splitlines() if ln.startswith(name + " "))
        assert line.split()[-2] == "pass"
    rows = [ln for ln in out.splitlines() if ln.startswith("control:")]
    assert {ln.split()[0] for ln in rows} == {"control:pckv-grr@1.5eps", "control:privkvm@1.5eps",
                                              "control:shuffled-bits-flips@6eps",
                                              "control:shuffled-bits-identity-shuffler"}
    assert all(ln.split()[-2] == "caught" for ln in rows)
    assert "eps=1,delta=1.0e-05" in out


def test_frequency_test_rejects_a_sampler_at_another_budget():
    ch, mech, law = _law("pckv-grr")
    bad = ch.build(1.5)                               # sampler at 1.5 eps against the law at eps
    j = law.inputs.index(((0, -1.0),))
    counts, probs = _frequencies(ch, bad, law, j, np.random.default_rng(3))
    assert _chi2(counts, probs) < 1e-6
