"""Attacks of paper 001, section 7: legal outputs, optimality, gains, reproducibility."""

import itertools

import numpy as np
import pytest

from fastldp.vectors.attacks import (
    attack_objective,
    random_legal_reports,
    sparse_targeted_attack,
    sparse_untargeted_attack,
)
from fastldp.vectors import PCKVGRR, PCKVUE, Collision, PrivKVM, PrivKVMReports, Succinct
from fastldp.vectors.rpc import RPC

N, D, M = 3000, 12, 3

MECHS = {
    "rpc-duchi": lambda: RPC(d=D, m=M, epsilon=1.0, codebook_seed=1, n_threads=1),
    "rpc-piecewise": lambda: RPC(d=D, m=M, epsilon=1.0, randomizer="piecewise", codebook_seed=1,
                                 n_threads=1),
    "pckv-ue": lambda: PCKVUE(d=D, m=M, epsilon=1.0),
    "pckv-grr": lambda: PCKVGRR(d=D, m=M, epsilon=1.0),
    "collision": lambda: Collision(d=D, m=M, epsilon=1.0, codebook_seed=2, n_threads=1),
    "collision-signed": lambda: Collision(d=D, m=M, epsilon=1.0, values="signed", codebook_seed=2,
                                          n_threads=1),
    "succinct": lambda: Succinct(d=D, m=M, epsilon=1.0, R=2, codebook_seed=3, n_threads=1),
    "succinct-b2-pm": lambda: Succinct(d=D, m=M, epsilon=1.0, b=2, R=2, randomizer="piecewise",
                                       codebook_seed=3, n_threads=1),
    "privkvm": lambda: PrivKVM(d=D, m=M, epsilon=1.0, n_rounds=2),
}
LINEAR = [k for k in MECHS if k != "privkvm"]


@pytest.fixture(scope="module")
def data():
    rng = np.random.default_rng(0)
    x = np.zeros((N, D))
    for i in range(N):
        cols = rng.choice(D, M, replace=False)
        x[i, cols] = 1.0
    return x


def _reports(name, x):
    mech = MECHS[name]()
    return mech, mech.privatize(x, rng=5)


def _legal(mech, reports):
    return np.all(mech.is_legal(reports))


def _changed(reports, attacked):
    if isinstance(reports, PrivKVMReports):
        diff = (reports.keys != attacked.keys) | (reports.key_bits != attacked.key_bits) \
            | np.any(reports.values != attacked.values, axis=1)
    else:
        a, b = np.asarray(reports), np.asarray(attacked)
        diff = a != b if a.ndim == 1 else np.any(a != b, axis=1)
    return np.flatnonzero(diff)


@pytest.mark.parametrize("name", list(MECHS))
@pytest.mark.parametrize("model", ["additive", "strong"])
def test_targeted_attack_is_legal_and_beats_random_legal_outputs(name, model, data):
    mech, y = _reports(name, data)
    target = np.array([0, 3, 7])
    res = sparse_targeted_attack(mech, y, target, q=150, model=model, rng=9)
    assert _legal(mech, res.reports)
    assert res.corrupted.shape == (150,)
    assert set(_changed(y, res.reports)) <= set(res.corrupted.tolist())
    assert res.objective == pytest.approx(attack_objective(mech, y, res.reports, res.weights),
                                          rel=1e-9, abs=1e-12)
    assert res.objective > 0
    rand = random_legal_reports(mech, y, res.corrupted, rng=10)
    assert _legal(mech, rand)
    assert res.objective > attack_objective(mech, y, rand, res.weights)
    down = sparse_targeted_attack(mech, y, target, q=150, model=model, direction=-1, rng=9)
    assert down.objective > 0 and np.all(down.shift[target].sum() < 0)


@pytest.mark.parametrize("name", list(MECHS))
@pytest.mark.parametrize("model", ["additive", "strong"])
def test_untargeted_attack_is_legal_and_beats_random_legal_outputs(name, model, data):
    mech, y = _reports(name, data)
    res = sparse_untargeted_attack(mech, y, q=150, model=model, n_restarts=2, max_iter=5, rng=4)
    assert _legal(mech, res.reports)
    assert res.objective == pytest.approx(attack_objective(mech, y, res.reports), rel=1e-9)
    rand = random_legal_reports(mech, y, res.corrupted, rng=10)
    assert res.objective > attack_objective(mech, y, rand)
    targ = sparse_targeted_attack(mech, y, np.arange(D), q=150, model=model, rng=4)
    assert res.objective >= np.abs(targ.shift).sum() * (1 - 1e-9) or name == "privkvm"


@pytest.mark.parametrize("name", LINEAR)
def test_strong_model_dominates_additive_for_linear_estimators(name, data):
    mech, y = _reports(name, data)
    t = np.array([1, 2])
    add = sparse_targeted_attack(mech, y, t, q=100, model="additive", rng=3)
    strong = sparse_targeted_attack(mech, y, t, q=100, model="strong", rng=3)
    assert strong.objective >= add.objective - 1e-12
    # gains are exactly each user's marginal value (Eqs. (53)-(56))
    for i in np.argsort(strong.gains)[-3:]:
        one = sparse_targeted_attack(mech, y, t, corrupted=[i], rng=3)
        assert one.objective == pytest.approx(strong.gains[i], rel=1e-9, abs=1e-12)


def _all_legal_outputs(mech):
    if isinstance(mech, RPC):
        c = mech.extreme_report
        return [np.float64(c), np.float64(-c)]
    if isinstance(mech, PCKVUE):
        return [np.array(v, dtype=np.int8) for v in itertools.product((-1, 0, 1), repeat=mech.d_padded)]
    if isinstance(mech, PCKVGRR):
        return [np.array([k, v]) for k in range(mech.d_padded) for v in (-1, 1)]
    if isinstance(mech, Collision):
        return list(range(mech.t))
    if isinstance(mech, Succinct):
        c = mech.extreme_report
        return [np.array(v) for v in itertools.product((-c, c), repeat=mech.b)]
    raise AssertionError


@pytest.mark.parametrize("make", [
    lambda: RPC(d=4, m=2, epsilon=1.0, codebook_seed=7, n_threads=1),
    lambda: PCKVUE(d=3, m=1, epsilon=1.0),
    lambda: PCKVGRR(d=4, m=2, epsilon=1.0),
    lambda: Collision(d=4, m=2, epsilon=1.0, codebook_seed=7, n_threads=1),
    lambda: Collision(d=4, m=2, epsilon=1.0, values="signed", codebook_seed=7, n_threads=1),
    lambda: Succinct(d=4, m=2, epsilon=1.0, b=2, R=1, codebook_seed=7, n_threads=1),
])
def test_closed_form_outputs_are_optimal_by_brute_force(make):
    mech = make()
    rng = np.random.default_rng(1)
    x = np.zeros((40, mech.d))
    for i in range(40):
        x[i, rng.choice(mech.d, 1 + i % mech.m, replace=False)] = 1
    y = mech.privatize(x, rng=2)
    w = np.array([1.0, -1.0, 0.0, 1.0])[: mech.d]
    for user in (0, 5, 17):
        res = sparse_targeted_attack(mech, y, weights=w, corrupted=[user], rng=0)
        best = -np.inf
        for z in _all_legal_outputs(mech):
            att = np.array(y, copy=True)
            att[user] = z
            best = max(best, attack_objective(mech, y, att, w))
        assert res.objective == pytest.approx(best, rel=1e-9, abs=1e-12)


def test_attacks_are_reproducible_from_seeds(data):
    for name in ("rpc-duchi", "collision", "privkvm"):
        mech, y = _reports(name, data)
        a = sparse_untargeted_attack(mech, y, q=50, model="additive", max_iter=3, rng=11)
        b = sparse_untargeted_attack(mech, y, q=50, model="additive", max_iter=3, rng=11)
        assert a.objective == b.objective
        np.testing.assert_array_equal(a.corrupted, b.corrupted)


def test_laplace_needs_an_explicit_magnitude(data):
    mech = RPC(d=D, m=M, epsilon=1.0, randomizer="laplace", codebook_seed=1, n_threads=1)
    y = mech.privatize(data, rng=0)
    with pytest.raises(ValueError, match="unbounded output space"):
        sparse_targeted_attack(mech, y, [0], q=10, rng=0)
    res = sparse_targeted_attack(mech, y, [0], q=10, magnitude=50.0, rng=0)
    assert res.objective > 0 and mech.is_legal(res.reports).all()


def test_bad_attack_parameters_raise_naming_them(data):
    mech, y = _reports("rpc-duchi", data)
    with pytest.raises(ValueError, match="'q' parameter of sparse_targeted_attack"):
        sparse_targeted_attack(mech, y, [0], q=N + 1)
    with pytest.raises(ValueError, match="'target' parameter of sparse_targeted_attack"):
        sparse_targeted_attack(mech, y, [D], q=3)
    with pytest.raises(ValueError, match="'model' parameter of sparse_untargeted_attack"):
        sparse_untargeted_attack(mech, y, q=3, model="weak")
    with pytest.raises(ValueError, match="'corrupted' parameter of sparse_targeted_attack"):
        sparse_targeted_attack(mech, y, [0], corrupted=[1], model="strong")
    with pytest.raises(TypeError, match="'mechanism' parameter of attack"):
        sparse_targeted_attack(object(), y, [0], q=3)
