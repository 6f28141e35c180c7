"""Corruption policies and native-alphabet attacks."""

import numpy as np
import pytest

from fastldp import JPRS
from fastldp._kernels._hash import pair_signs
from fastldp.relations import (
    apply_attack,
    false_support,
    optimized_attack,
    random_attack,
    targeted_attack,
)
from fastldp.corruption import choose_corrupted
from fastldp.relations import rate_diagnostic_population
from fastldp.relations import PaddedRelationSampling


def test_largest_policy_takes_the_largest_budgets():
    eps = np.array([0.5, 2.0, 1.0, 2.0, 0.1, 1.5, 0.2, 0.3, 0.4, 0.6])
    np.testing.assert_array_equal(choose_corrupted(eps, 0.3), [1, 3, 5])
    assert choose_corrupted(eps, 0.0).size == 0
    # homogeneous budgets: the first floor(alpha n) identities
    np.testing.assert_array_equal(choose_corrupted(np.ones(10), 0.29), [0, 1])


def test_random_policy_is_reproducible_and_given_lists_are_checked():
    eps = np.ones(100)
    a = choose_corrupted(eps, 0.1, policy="random", rng=3)
    np.testing.assert_array_equal(a, choose_corrupted(eps, 0.1, policy="random", rng=3))
    assert a.size == 10 and np.unique(a).size == 10
    np.testing.assert_array_equal(choose_corrupted(eps, 0.1, policy=[5, 2]), [2, 5])
    with pytest.raises(ValueError, match="'policy' parameter of choose_corrupted"):
        choose_corrupted(eps, 0.01, policy=[1, 2])
    with pytest.raises(ValueError, match=r"'alpha' parameter of choose_corrupted must be a float in \[0, 0.5\)"):
        choose_corrupted(eps, 0.5)
    with pytest.raises(ValueError, match="'alpha'"):
        choose_corrupted(eps, float("nan"))


MECHS = [
    lambda: JPRS(shape=(8, 8), k=3, s=6, codebook_seed=4),
    lambda: PaddedRelationSampling(shape=(8, 8), k=3, s=6, oracle="grr", codebook_seed=4),
    lambda: PaddedRelationSampling(shape=(8, 8), k=3, s=6, oracle="olh", codebook_seed=4),
    lambda: PaddedRelationSampling(shape=(8, 8), k=3, s=6, oracle="hr", codebook_seed=4),
]


@pytest.mark.parametrize("make", MECHS)
def test_optimized_attack_is_legal_and_beats_random(make):
    mech = make()
    n = 2000
    eps = np.random.default_rng(0).uniform(0.5, 2.0, n)
    pop = rate_diagnostic_population(shape=(8, 8), s=6, k=3, n=n, rng=1)
    S = np.flatnonzero(pop.target.ravel())
    F = false_support(S, mech.p, 6, rng=2)
    assert np.intersect1d(S, F).size == 0
    cor = choose_corrupted(eps, 0.1)
    att = optimized_attack(mech, eps, cor, true_support=S, false_support=F, rng=3)
    ids = np.arange(n, dtype=np.uint64)
    clean, rep = mech.sanitize(att.outputs, eps[cor], ids[cor], "test")
    assert rep.n_valid == cor.size  # every output is legal
    rnd = random_attack(mech, eps, cor, true_support=S, false_support=F, rng=3)
    assert att.objective >= rnd.objective
    assert np.all(att.per_identity >= rnd.per_identity - 1e-12)  # best response per identity
    # the objective is what the reports add to mass(F) - mass(S) of the linear estimate
    honest = mech.privatize(pop.relations, epsilons=eps, rng=4)
    clean_all, _ = mech.sanitize(honest, eps, ids, "test")
    attacked, _ = mech.sanitize(apply_attack(honest, att), eps, ids, "test")
    v_att = mech.linear_estimate(attacked, eps, ids)
    v_hon = mech.linear_estimate(clean_all, eps, ids)
    delta = (v_att[F].sum() - v_att[S].sum()) - (v_hon[F].sum() - v_hon[S].sum())
    own = mech.response_objective(eps, cor, ids, clean_all[cor], np.concatenate([F, S]),
                                  np.r_[np.ones(6), -np.ones(6)])
    assert delta == pytest.approx(att.objective - own.sum(), rel=1e-9, abs=1e-9)


def test_jprs_attack_bit_is_the_sign_of_the_signed_support_sum():
    mech = JPRS(shape=(8, 8), k=3, s=6, codebook_seed=4)
    eps = np.ones(300)
    cor = np.arange(0, 300, 3)
    S, F = np.arange(6), np.arange(10, 16)
    att = optimized_attack(mech, eps, cor, true_support=S, false_support=F, rng=0)
    for j, i in enumerate(cor):
        ids = np.full(6, i, np.uint64)
        score = pair_signs(4, ids, F).sum() - pair_signs(4, ids, S).sum()
        if score != 0:
            assert att.outputs[j] == np.sign(score)


def test_targeted_attack_raises_the_target():
    mech = PaddedRelationSampling(shape=(8, 8), k=3, s=6, oracle="olh", codebook_seed=4)
    n = 3000
    eps = np.ones(n)
    pop = rate_diagnostic_population(shape=(8, 8), s=6, k=3, n=n, rng=1)
    target = int(np.flatnonzero(pop.target.ravel() == 0)[0])
    honest = mech.privatize(pop.relations, epsilons=eps, rng=4)
    att = targeted_attack(mech, eps, choose_corrupted(eps, 0.2), target=target, rng=5)
    assert att.objective > 0
    before = mech.decode(honest, eps, decoders=("none",))["none"].matrix.ravel()[target]
    after = mech.decode(apply_attack(honest, att), eps, decoders=("none",))["none"].matrix.ravel()[target]
    assert after - before == pytest.approx(att.objective - mech.response_objective(
        eps, att.corrupted, np.arange(n, dtype=np.uint64), honest[att.corrupted],
        np.array([target]), np.ones(1)).sum(), rel=1e-9)


def test_attack_argument_errors():
    mech = JPRS(shape=(8, 8), k=3, s=6, codebook_seed=4)
    with pytest.raises(ValueError, match="'corrupted' parameter of optimized_attack"):
        optimized_attack(mech, np.ones(5), [7], true_support=[0], false_support=[1])
    with pytest.raises(ValueError, match="'target' parameter of targeted_attack"):
        targeted_attack(mech, np.ones(5), [1], target=64)


@pytest.mark.parametrize("make", MECHS)
def test_targeted_attack_is_legal_and_beats_random_on_its_own_objective(make):
    mech = make()
    n = 1500
    eps = np.random.default_rng(7).uniform(0.5, 2.0, n)
    ids = np.arange(n, dtype=np.uint64)
    cor = choose_corrupted(eps, 0.2, policy="random", rng=1)
    att = targeted_attack(mech, eps, cor, target=9, rng=2)
    rnd = random_attack(mech, eps, cor, rng=2)
    _, rep = mech.sanitize(att.outputs, eps[cor], ids[cor], "test")
    assert rep.n_valid == cor.size
    own = mech.response_objective(eps, cor, ids, rnd.outputs, np.array([9]), np.ones(1))
    assert np.all(att.per_identity >= own - 1e-12) and att.objective > own.sum()
