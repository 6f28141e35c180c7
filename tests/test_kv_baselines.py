"""PCKV-UE, PCKV-GRR, PrivKVM, Succinct, Collision: exact local channels, estimators, errors."""

import itertools
import math

import numpy as np
import pytest

from fastldp.vectors import (
    PCKVGRR,
    PCKVUE,
    RPC,
    Collision,
    PrivKVM,
    PrivKVMReports,
    Succinct,
    pckv_composed_epsilon,
)
from fastldp.vectors.base import as_sparse_vectors


def _population(n, d, m, rng, values="binary", short=True):
    hot = max(m, d // 2)  # concentrate mass so that |mu(j)| is large
    k = rng.integers(1, m + 1, size=n) if short else np.full(n, m)
    order = np.argsort(rng.random((n, hot)), axis=1)
    take = np.arange(hot)[None, :] < k[:, None]
    rows = np.repeat(np.arange(n), hot)[take.ravel()]
    cols = order[take]
    if values == "binary":
        vals = np.ones(cols.size)
    elif values == "signed":
        vals = np.where(rng.random(cols.size) < 0.2, -1.0, 1.0)
    else:
        vals = rng.uniform(-0.5, 1.0, cols.size)
    x = np.zeros((n, d))
    x[rows, cols] = vals
    return x


def _max_ratio(law):
    """law: (inputs, outputs) probabilities -> max over outputs of max/min."""
    law = np.asarray(law)
    assert np.allclose(law.sum(axis=1), 1.0)
    assert (law > 0).all()
    return float((law.max(axis=0) / law.min(axis=0)).max())


# --------------------------------------------------------------------- PCKV
def _ue_law(mech, k, v):
    outs = list(itertools.product((-1, 0, 1), repeat=mech.d_padded))
    law = []
    for y in outs:
        p = 1.0
        for j, yj in enumerate(y):
            if j == k:
                p *= {v: mech.a * mech.p, -v: mech.a * (1 - mech.p), 0: 1 - mech.a}[yj]
            else:
                p *= {1: mech.b / 2, -1: mech.b / 2, 0: 1 - mech.b}[yj]
        law.append(p)
    return np.array(law), outs


def _grr_law(mech, k, v):
    outs = [(kk, vv) for kk in range(mech.d_padded) for vv in (-1, 1)]
    law = []
    for kk, vv in outs:
        if kk == k:
            law.append(mech.a * (mech.p if vv == v else 1 - mech.p))
        else:
            law.append((1 - mech.a) / (mech.d_padded - 1) / 2)
    return np.array(law), outs


@pytest.mark.parametrize("cls,law_fn", [(PCKVUE, _ue_law), (PCKVGRR, _grr_law)])
@pytest.mark.parametrize("eps", [0.3, 1.0, 2.5])
def test_pckv_pair_channel_is_exactly_eps_ldp(cls, law_fn, eps):
    mech = cls(d=2, m=1, epsilon=eps)
    assert pckv_composed_epsilon(mech.eps1, mech.eps2) == pytest.approx(eps, rel=1e-12)
    laws = [law_fn(mech, k, v)[0] for k in range(mech.d_padded) for v in (-1, 1)]
    ratio = _max_ratio(laws)
    assert ratio == pytest.approx(math.exp(eps), rel=1e-12)


@pytest.mark.parametrize("cls,law_fn", [(PCKVUE, _ue_law), (PCKVGRR, _grr_law)])
def test_pckv_user_channel_mixture_is_eps_ldp(cls, law_fn):
    # The channel from a user's data: padding-and-sampling then rounding, mixed.
    eps = 1.0
    mech = cls(d=2, m=2, epsilon=eps)
    inputs = [[], [(0, 1.0)], [(1, -1.0)], [(0, 0.3), (1, -1.0)], [(0, 1.0), (1, 1.0)]]
    laws = []
    for items in inputs:
        total = 0.0
        for slot in range(mech.ell):
            if slot < len(items):
                k, val = items[slot]
                mix = [(k, 1, (1 + val) / 2), (k, -1, (1 - val) / 2)]
                mix = [(kk, vv, w / mech.ell) for kk, vv, w in mix]
            else:
                mix = [(mech.d + dd, vv, 0.5 / mech.ell / mech.ell) for dd in range(mech.ell)
                       for vv in (-1, 1)]
            for kk, vv, w in mix:
                total = total + w * law_fn(mech, kk, vv)[0]
        laws.append(total)
    assert _max_ratio(laws) <= math.exp(eps) * (1 + 1e-12)


def test_pckv_sampler_matches_the_stated_channel():
    n = 200_000
    rng = np.random.default_rng(0)
    x = np.zeros((n, 3))
    x[:, 1] = 1.0  # every user holds key 1 with value 1; m = 1: no padding
    ue = PCKVUE(d=3, m=1, epsilon=1.0)
    y = ue.privatize(x, rng=rng)
    for got, want in [((y[:, 1] == 1).mean(), ue.a * ue.p), ((y[:, 1] == -1).mean(), ue.a * (1 - ue.p)),
                      ((y[:, 0] == 1).mean(), ue.b / 2), ((y[:, 3] == 0).mean(), 1 - ue.b)]:
        assert abs(got - want) < 5 * math.sqrt(want * (1 - want) / n)
    grr = PCKVGRR(d=3, m=1, epsilon=1.0)
    r = grr.privatize(x, rng=rng)
    for got, want in [(((r[:, 0] == 1) & (r[:, 1] == 1)).mean(), grr.a * grr.p),
                      (((r[:, 0] == 2) & (r[:, 1] == -1)).mean(), grr.b / 2)]:
        assert abs(got - want) < 5 * math.sqrt(want * (1 - want) / n)
    assert ue.is_legal(y).all() and grr.is_legal(r).all()


@pytest.mark.slow
@pytest.mark.parametrize("cls", [PCKVUE, PCKVGRR])
def test_pckv_eq70_is_unbiased(cls):
    rng = np.random.default_rng(1)
    n, d, m, trials = 20_000, 4, 2, 10
    x = _population(n, d, m, rng, values="real")
    mech = cls(d=d, m=m, epsilon=2.0)
    runs = np.array([mech.estimate(mech.privatize(x, rng=t)).raw for t in range(trials)])
    # Var[y_i(j)] <= E[y_i(j)^2] <= max(a, b): per-report weight scale / n
    sd = mech.scale * math.sqrt(max(mech.a, mech.b) / n / trials)
    assert np.abs(runs.mean(axis=0) - x.mean(axis=0)).max() < 4.5 * sd


def test_pckv_frequency_estimate_is_unbiased():
    rng = np.random.default_rng(2)
    n, d, m = 100_000, 4, 2
    x = _population(n, d, m, rng)
    mech = PCKVUE(d=d, m=m, epsilon=2.0)
    f = mech.estimate(mech.privatize(x, rng=3)).details["frequency"]
    sd = mech.ell * math.sqrt(0.25 / n) / (mech.a - mech.b)
    assert np.abs(f - (x != 0).mean(axis=0)).max() < 4.5 * sd


def test_pckv_budget_split_is_validated():
    with pytest.raises(ValueError, match="'epsilon_split' parameter of PCKVUE"):
        PCKVUE(d=4, m=2, epsilon=1.0, epsilon_split=(1.0, 1.0))
    mech = PCKVGRR(d=4, m=2, epsilon=1.0, epsilon_split=(0.3, 0.5))
    assert mech.eps1 == 0.3 and pckv_composed_epsilon(0.3, 0.5) <= 1.0


def test_pckv_sanitizes_malformed_reports():
    ue = PCKVUE(d=2, m=1, epsilon=1.0)
    y = np.array([[1, 0, -1], [5, np.nan, -np.inf]], dtype=float)
    est = ue.estimate(y)
    assert est.sanitization.by_reason == {"out_of_alphabet": 1, "infinite": 1, "nan": 1,
                                          "non_numeric": 0}
    np.testing.assert_array_equal(est.raw, ue.estimate(np.array([[1, 0, -1], [1, 0, -1]])).raw)
    grr = PCKVGRR(d=2, m=1, epsilon=1.0)
    bad = np.array([[0, 1], [7, 1], [1.5, -1], [1, 3], [1, np.nan]])
    est = grr.estimate(bad)
    assert est.sanitization.by_reason["bad_key"] == 2
    # voided keys count nowhere; value 3 -> +1, NaN -> 0
    np.testing.assert_allclose(est.raw, grr.scale / 5 * np.array([1.0, 1.0]))
    with pytest.raises(ValueError, match=r"\(n, 3\) array"):
        ue.estimate(np.zeros(3))


# ---------------------------------------------------------------- Collision
@pytest.mark.parametrize("eps", [0.5, 2.0])
@pytest.mark.parametrize("values", ["frequency", "signed"])
def test_collision_channel_is_exactly_eps_ldp(eps, values):
    d, m = 4, 2
    mech = Collision(d=d, m=m, epsilon=eps, values=values, t=5, codebook_seed=31, n_threads=1)
    alphabet = (0, 1) if values == "frequency" else (-1, 0, 1)
    xs = [np.array(v, float) for v in itertools.product(alphabet, repeat=d)
          if np.count_nonzero(v) <= m]
    best = 0.0
    for ident in range(6):
        law = np.concatenate([mech.channel(v[None, :], identities=[ident]) for v in xs])
        ratio = _max_ratio(law)
        assert ratio <= math.exp(eps) * (1 + 1e-12)
        best = max(best, ratio)
    assert best == pytest.approx(math.exp(eps), rel=1e-12)  # some hash lets c = m


def test_collision_sampler_matches_the_channel():
    rng = np.random.default_rng(4)
    n, d, m = 60_000, 6, 3
    x = _population(n, d, m, rng, short=True)
    mech = Collision(d=d, m=m, epsilon=1.0, codebook_seed=2, n_threads=1)
    law = mech.channel(x)
    y = mech.privatize(x, rng=5)
    assert mech.is_legal(y).all()
    expect = law.sum(axis=0)
    got = np.bincount(y, minlength=mech.t)
    assert np.all(np.abs(got - expect) < 5 * np.sqrt(expect))
    hit = law[np.arange(n), y]
    # P(Y_i in H_i(x_i)) per user: c_i e^eps / Omega
    _, counts = mech.hashed_sets(x)
    p_in = counts * mech.p_hit
    in_set = np.isclose(hit, mech.p_hit)
    assert abs(in_set.sum() - p_in.sum()) < 5 * math.sqrt((p_in * (1 - p_in)).sum())


@pytest.mark.slow
@pytest.mark.parametrize("values", ["frequency", "signed"])
def test_collision_eq14_is_unbiased(values):
    rng = np.random.default_rng(6)
    n, d, m, trials = 20_000, 6, 3, 10
    x = _population(n, d, m, rng, values="binary" if values == "frequency" else "real")
    mech = Collision(d=d, m=m, epsilon=1.0, values=values, codebook_seed=3, n_threads=1)
    runs = np.array([mech.estimate(mech.privatize(x, rng=t)).raw for t in range(trials)])
    k = 1 if values == "frequency" else 2  # a signed coordinate differences two symbols
    sd = k * mech.scale * math.sqrt(mech.p_hit / n / trials)
    assert np.abs(runs.mean(axis=0) - x.mean(axis=0)).max() < 4.5 * sd


def test_collision_defaults_and_sanitization():
    mech = Collision(d=10, m=5, epsilon=1.0, codebook_seed=1, n_threads=1)
    assert mech.t == round(5 * math.e + 9)
    assert Collision(d=10, m=5, epsilon=0.01).t >= 6
    y = np.array([0, mech.t, -1, 2.5, np.nan, "a"], dtype=object)
    est = mech.estimate(y)
    assert est.sanitization.n_valid == 1
    assert est.sanitization.by_reason["out_of_range"] == 2
    with pytest.raises(ValueError, match=r"'t' parameter of Collision must be an int in \[6, inf\)"):
        Collision(d=10, m=5, epsilon=1.0, t=5)
    with pytest.raises(ValueError, match=r"values in \{0, 1\} when values='frequency'"):
        mech.privatize(np.full((1, 10), -1.0) * np.eye(10)[0], rng=0)


def test_collision_thread_count_does_not_change_the_estimate():
    rng = np.random.default_rng(8)
    x = _population(5000, 8, 3, rng)
    a = Collision(d=8, m=3, epsilon=1.0, codebook_seed=2, n_threads=1)
    b = Collision(d=8, m=3, epsilon=1.0, codebook_seed=2, n_threads=2)
    y = a.privatize(x, rng=0)
    np.testing.assert_array_equal(a.estimate(y).raw, b.estimate(y).raw)


# ----------------------------------------------------------------- Succinct
@pytest.mark.parametrize("randomizer", ["piecewise", "laplace", "duchi"])
def test_succinct_density_ratio_on_a_grid_reaches_e_eps_and_no_more(randomizer):
    eps, d, m, b = 1.0, 4, 4, 2
    mech = Succinct(d=d, m=m, epsilon=eps, b=b, R=1.0, randomizer=randomizer, codebook_seed=12, n_threads=1)
    xs = [np.array(v, float) for v in itertools.product((-1, 0, 1), repeat=d)]
    ident = 3
    u = np.concatenate([np.clip(mech.bucket_sums(v[None, :], identities=[ident]), -1, 1) for v in xs])
    assert {(1.0, 1.0), (-1.0, -1.0)} <= set(map(tuple, u))  # the extremes are reachable
    if randomizer == "duchi":
        c = mech.R * mech.randomizer.c_eps
        grid = np.array(list(itertools.product((-c, c), repeat=b)))
    else:
        c = mech.R * (mech.randomizer.c_eps if randomizer == "piecewise" else 4.0)
        g1 = np.linspace(-c, c, 41)
        grid = np.array(list(itertools.product(g1, repeat=b)))
    dens = np.stack([mech.channel_density(grid, np.broadcast_to(uu, grid.shape)) for uu in u])
    dens_x = mech.density(grid[:1], xs[-1][None, :], identities=[ident])
    assert dens_x[0] == dens[-1, 0]
    assert (dens > 0).all()
    ratio = (dens.max(axis=0) / dens.min(axis=0)).max()
    assert ratio == pytest.approx(math.exp(eps), rel=1e-9)


@pytest.mark.slow
def test_succinct_without_clipping_is_unbiased_and_b2_matches_a_naive_server():
    rng = np.random.default_rng(9)
    n, d, m, trials = 20_000, 6, 3, 8
    x = _population(n, d, m, rng, values="real")
    mech = Succinct(d=d, m=m, epsilon=2.0, b=2, R=m, randomizer="duchi", codebook_seed=4, n_threads=1)
    runs = np.array([mech.estimate(mech.privatize(x, rng=t)).raw for t in range(trials)])
    sd = mech.R * mech.randomizer.c_eps / math.sqrt(n * trials)
    assert np.abs(runs.mean(axis=0) - x.mean(axis=0)).max() < 4.5 * sd
    y = mech.privatize(x[:300], rng=0)
    ids = np.repeat(np.arange(300, dtype=np.uint64), d)
    cols = np.tile(np.arange(d), 300)
    s = mech.signs(ids, cols).reshape(300, d)
    h = mech.buckets(ids, cols).reshape(300, d)
    naive = (s * np.take_along_axis(y, h, axis=1)).sum(axis=0) / 300
    np.testing.assert_allclose(mech.estimate(y).raw, naive, rtol=1e-12, atol=1e-14)


def test_succinct_defaults_and_errors():
    mech = Succinct(d=10, m=4, epsilon=1.0, n_users=10_000)
    assert mech.R == pytest.approx(math.sqrt(4 * math.log(10_000)) / 2.5)
    assert mech.randomizer.epsilon == 1.0
    assert Succinct(d=10, m=4, epsilon=1.0, b=4, R=2).randomizer.epsilon == 0.25
    with pytest.raises(ValueError, match="'R' parameter of Succinct is required"):
        Succinct(d=10, m=4, epsilon=1.0)
    with pytest.raises(ValueError, match=r"'b' parameter of Succinct must be an int in \[1, inf\)"):
        Succinct(d=10, m=4, epsilon=1.0, b=0, R=2)
    est = mech.estimate(np.array([np.nan, 1e9, -mech.extreme_report]))
    assert est.sanitization.by_reason["nan"] == 1 and est.sanitization.by_reason["out_of_range"] == 1


# ------------------------------------------------------------------ PrivKVM
@pytest.mark.parametrize("eps,c", [(1.0, 2), (2.0, 3)])
def test_privkvm_channel_is_exactly_eps_ldp(eps, c):
    # Outputs for a fixed sampled key: bit 0 (no values), or bit 1 and c value bits.
    mech = PrivKVM(d=3, m=1, epsilon=eps, n_rounds=c)
    p1, p2 = mech.p1, mech.p2

    def law(held, source):  # source: the value (held) or the fake value (not held)
        pv = p2 * (1 + source) / 2 + (1 - p2) * (1 - source) / 2  # P(value bit = +1)
        pb = p1 if held else 1 - p1
        out = [1 - pb]
        for bits in itertools.product((1, -1), repeat=c):
            out.append(pb * np.prod([pv if v == 1 else 1 - pv for v in bits]))
        return out

    laws = [law(True, v) for v in (-1, 0.3, 1)] + [law(False, f) for f in (-1, 0, 0.5, 1)]
    assert _max_ratio(laws) == pytest.approx(math.exp(eps), rel=1e-12)


def test_privkvm_messages_and_frequency_estimate():
    rng = np.random.default_rng(10)
    n, d, m = 100_000, 5, 2
    x = _population(n, d, m, rng, values="signed")
    mech = PrivKVM(d=d, m=m, epsilon=2.0, n_rounds=3)
    rep = mech.privatize(x, rng=11)
    assert isinstance(rep, PrivKVMReports) and mech.is_legal(rep).all()
    est = mech.estimate(rep)
    f = est.details["frequency"]
    nj = n / d
    sd = math.sqrt(0.25 / nj) / (2 * mech.p1 - 1)
    assert np.abs(f - (x != 0).mean(axis=0)).max() < 4.5 * sd
    assert est.details["round_means"].shape == (3, d)
    # forged reports enter every round
    users = np.arange(10)
    forged = PrivKVMReports(np.zeros(10, np.int64), np.ones(10, np.int8), np.ones((10, 3), np.int8))
    rep2 = mech.privatize(x, rng=11, forged=(users, forged))
    np.testing.assert_array_equal(rep2.values[:10], 1)
    assert mech.estimate((rep.keys.astype(float), rep.key_bits, rep.values)).raw.shape == (d,)


def test_privkvm_sanitizes_malformed_reports():
    mech = PrivKVM(d=3, m=1, epsilon=1.0, n_rounds=2)
    keys = np.array([0, 1, 9, 2.5])
    bits = np.array([1, 0.7, 1, 1])
    vals = np.array([[1, -1], [1, np.nan], [1, 1], [0, 1]])
    est = mech.estimate((keys, bits, vals))
    assert est.sanitization.by_reason["bad_key"] == 2
    assert est.sanitization.by_reason["bad_bit"] == 1
    with pytest.raises(ValueError, match=r"values of shape \(4, 2\)"):
        mech.estimate((keys, bits, vals[:, :1]))


# ----------------------------------------------------------------- shared
ALL = [
    lambda **k: PCKVUE(**k), lambda **k: PCKVGRR(**k), lambda **k: PrivKVM(**k),
    lambda **k: Succinct(R=2, **k), lambda **k: Collision(**k),
]


@pytest.mark.parametrize("make", ALL)
@pytest.mark.parametrize("kwargs,match", [
    ({"epsilon": 0}, r"'epsilon' parameter of \w+ must be a float in \(0.0, inf\)\. Got 0 instead"),
    ({"epsilon": float("nan")}, r"'epsilon' parameter of \w+"),
    ({"epsilon": -1.0}, r"'epsilon' parameter of \w+"),
    ({"m": 11}, r"'m' parameter of \w+ must be an int in \[1, 10\]\. Got 11 instead"),
    ({"d": 0}, r"'d' parameter of \w+ must be an int in \[1, inf\)"),
])
def test_bad_parameters_raise_naming_the_parameter(make, kwargs, match):
    base = {"d": 10, "m": 3, "epsilon": 1.0}
    base.update(kwargs)
    with pytest.raises(ValueError, match=match):
        make(**base)


@pytest.mark.parametrize("make", ALL)
def test_bad_inputs_raise_naming_x(make):
    mech = make(d=4, m=2, epsilon=1.0)
    for x, match in [([[1.5, 0, 0, 0]], r"values in \[-1, 1\]"), ([[np.nan, 0, 0, 0]], "Got nan"),
                     ([[1, 1, 1, 0]], "at most m = 2 items")]:
        with pytest.raises(ValueError, match=match):
            mech.privatize(np.array(x), rng=0)


@pytest.mark.parametrize("make", ALL)
def test_outputs_are_legal_reproducible_and_repr_names_the_class(make):
    rng = np.random.default_rng(12)
    x = _population(300, 6, 2, rng)
    mech = make(d=6, m=2, epsilon=1.0)
    a, b = mech.privatize(x, rng=5), mech.privatize(x, rng=5)
    if isinstance(a, PrivKVMReports):
        np.testing.assert_array_equal(a.values, b.values)
    else:
        np.testing.assert_array_equal(a, b)
    assert np.all(mech.is_legal(a))
    assert repr(mech).startswith(type(mech).__name__ + "(d=6, m=2, epsilon=1.0")
    assert mech.estimate(a).mean.shape == (6,)


def test_sparse_vectors_keep_stored_zeros_as_items():
    import scipy.sparse as sp
    m = sp.csr_matrix((np.array([0.0, 1.0]), np.array([0, 2]), np.array([0, 2])), shape=(1, 4))
    v = as_sparse_vectors(m, d=4, owner="t")
    assert v.sizes.tolist() == [2] and v.values.tolist() == [0.0, 1.0]
    assert as_sparse_vectors(m.toarray(), d=4, owner="t").sizes.tolist() == [1]


def test_inconsistent_sparse_vectors_are_rejected():
    from fastldp.vectors.base import SparseVectors
    good = SparseVectors(np.array([0, 2, 2, 3]), np.array([1, 3, 0]), np.ones(3), 4)
    assert as_sparse_vectors(good, d=4, owner="t").sizes.tolist() == [2, 0, 1]
    for indptr, indices in [([0, 2, 3], [3, 1, 0]), ([0, 2, 3], [1, 4, 0]), ([0, 2, 2], [1, 1, 0])]:
        bad = SparseVectors(np.array(indptr), np.array(indices), np.ones(3), 4)
        with pytest.raises(ValueError, match="'x' parameter of t must be a valid CSR SparseVectors"):
            as_sparse_vectors(bad, d=4, owner="t")


# ------------------------------------------------- the API contract: budgets, names, results
VECTOR_MAKERS = {
    "RPC": lambda **k: RPC(codebook_seed=3, **k), "PCKVUE": PCKVUE, "PCKVGRR": PCKVGRR,
    "PrivKVM": PrivKVM, "Succinct": lambda **k: Succinct(R=2, codebook_seed=3, **k),
    "Collision": lambda **k: Collision(codebook_seed=3, **k),
}


def _same_reports(a, b):
    if isinstance(a, PrivKVMReports):
        return all(np.array_equal(getattr(a, f), getattr(b, f)) for f in ("keys", "key_bits", "values"))
    return np.array_equal(a, b)


@pytest.mark.parametrize("make", VECTOR_MAKERS.values(), ids=VECTOR_MAKERS)
def test_epsilons_is_accepted_as_none_or_the_fixed_budget(make):
    x = _population(120, 6, 2, np.random.default_rng(1))
    mech = make(d=6, m=2, epsilon=1.25)
    reports = mech.privatize(x, rng=5)
    for same in (None, 1.25, np.full(120, 1.25)):
        assert _same_reports(mech.privatize(x, epsilons=same, rng=5), reports)
        got = mech.estimate(reports, epsilons=same)
        np.testing.assert_array_equal(got.raw, mech.estimate(reports).raw)


@pytest.mark.parametrize("make", VECTOR_MAKERS.values(), ids=VECTOR_MAKERS)
@pytest.mark.parametrize("other", [2.0, [1.25, 2.0], float("nan"), "1.25"])
def test_any_other_epsilons_is_a_value_error_saying_no_personal_budgets(make, other):
    x = _population(2, 6, 2, np.random.default_rng(1))
    mech = make(d=6, m=2, epsilon=1.25)
    name = type(mech).__name__
    reports = mech.privatize(x, rng=5)
    for method, call in (("privatize", lambda: mech.privatize(x, epsilons=other, rng=5)),
                         ("estimate", lambda: mech.estimate(reports, epsilons=other))):
        with pytest.raises(ValueError, match=rf"The 'epsilons' parameter of {name}\.{method} must "
                                             rf"be None or this mechanism's epsilon=1\.25 .*"
                                             rf"{name} does not support personal budgets"):
            call()


@pytest.mark.parametrize("make", VECTOR_MAKERS.values(), ids=VECTOR_MAKERS)
def test_items_per_user_is_an_alias_of_m(make):
    a, b = make(d=6, m=2, epsilon=1.0), make(d=6, items_per_user=2, epsilon=1.0)
    assert repr(a) == repr(b) and b.m == 2 and b.items_per_user == 2
    assert a.stream_params() == b.stream_params()
    with pytest.raises(ValueError, match=r"'items_per_user' parameter of \w+ is another name for "
                                         r"'m'.*Got m=2 and items_per_user=3"):
        make(d=6, m=2, items_per_user=3, epsilon=1.0)
    with pytest.raises(TypeError, match=r"'items_per_user' \(or its paper name 'm'\)"):
        make(d=6, epsilon=1.0)
    with pytest.raises(ValueError, match=r"'m' parameter of \w+ must be an int in \[1, 6\]"):
        make(d=6, items_per_user=7, epsilon=1.0)


@pytest.mark.parametrize("make", VECTOR_MAKERS.values(), ids=VECTOR_MAKERS)
def test_the_result_is_on_the_shared_base(make):
    from fastldp.results import REPR_WIDTH, Result

    d = 500  # issue 18: the repr of a 500-coordinate estimate printed every value
    x = _population(400, d, 3, np.random.default_rng(2))
    mech = make(d=d, m=3, epsilon=2.0)
    est = mech.estimate(mech.privatize(x, rng=6))
    assert isinstance(est, Result)
    assert est.estimate is est.mean and est.estimate.shape == (d,)
    assert est.n == 400
    assert est.privacy.epsilon == 2.0 and (est.privacy.model, est.privacy.unit) == ("local DP", "user")
    assert est.sanitization is not None
    text = repr(est)
    assert len(text) <= REPR_WIDTH and "\n" not in text and "n=400" in text
    if isinstance(mech, PrivKVM):  # f_hat * m_hat: not linear in the reports
        assert est.variances is None and est.std is None
    else:
        assert est.variances.shape == (d,) and np.all(est.variances >= 0)
        np.testing.assert_array_equal(est.std, np.sqrt(est.variances))
    pd = pytest.importorskip("pandas")
    frame = est.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == d
    assert list(frame.columns) == (["index", "estimate"] if est.std is None
                                   else ["index", "estimate", "std"])


# ------------------------------------------------- plug-in variances of the baselines
def _one_signed_users(n, d, m, rng, signed):
    """``m`` distinct keys per user, key ``j`` with weight ``1 / (j + 1)``; value 1, or
    ``(-1)^j`` when ``signed`` (every coordinate's values share a sign: ``s_j = |mu_j|``)."""
    logits = -np.log(np.arange(1.0, d + 1.0))
    keys = np.argsort(-(logits + rng.gumbel(size=(n, d))), axis=1)[:, :m]
    x = np.zeros((n, d))
    x[np.arange(n)[:, None], keys] = np.where(keys % 2 == 0, 1.0, -1.0) if signed else 1.0
    return x


PLUG_IN = {
    # R >= m: nothing is clipped, so Succinct is unbiased and its plug-in is exact
    "PCKVUE": (lambda: PCKVUE(d=16, m=2, epsilon=1.0), True),
    "PCKVGRR": (lambda: PCKVGRR(d=16, m=2, epsilon=2.0), True),
    "Succinct-b1": (lambda: Succinct(d=16, m=2, epsilon=1.0, R=2, codebook_seed=4), True),
    "Succinct-b3": (lambda: Succinct(d=16, m=2, epsilon=3.0, b=3, R=2, randomizer="piecewise",
                                     codebook_seed=4), True),
    "Collision-frequency": (lambda: Collision(d=16, m=2, epsilon=1.0, codebook_seed=4), False),
    "Collision-signed": (lambda: Collision(d=16, m=2, epsilon=1.0, values="signed",
                                           codebook_seed=4), True),
}


@pytest.mark.slow
@pytest.mark.parametrize("name", PLUG_IN)
def test_plug_in_variances_match_the_empirical_variance(name):
    """q_t = mean_j (mu_hat_tj - mu_j)^2 / v_j has mean 1 when the plug-in v is right.

    Every estimator here is unbiased on these data, so the squared errors use
    the true mean; the trials are independent (fresh identities and coins),
    so the mean of q has the standard error sd(q) / sqrt(T) measured from the
    trials. The plug-in's own noise enters through v_j, the mean over trials of
    the per-decode plug-in, whose error is at most 4 of its standard errors
    plus the bias bound sd_j / n of |mu_hat_j| against |mu_j| (a slack of a
    few per cent that the assertion adds).
    """
    make, signed = PLUG_IN[name]
    mech = make()
    n, trials = 2000, 300
    x = _one_signed_users(n, mech.d, mech.m, np.random.default_rng(len(name)), signed)
    mu = x.mean(axis=0)
    raws, plugs = [], []
    for t in range(trials):
        ids = np.arange(t * n, (t + 1) * n, dtype=np.uint64)
        est = mech.estimate(mech.privatize(x, identities=ids, rng=np.random.SeedSequence([7, t])),
                            identities=ids)
        raws.append(est.raw)
        plugs.append(est.variances)
    raw, plug = np.array(raws), np.array(plugs)
    v = plug.mean(axis=0)
    q = ((raw - mu) ** 2 / v).mean(axis=1)
    se = q.std(ddof=1) / math.sqrt(trials)
    slack = np.max((4 * plug.std(axis=0, ddof=1) / math.sqrt(trials) + np.sqrt(v) / n) / v)
    assert abs(q.mean() - 1.0) < 4 * se + slack, (q.mean(), se, slack)
    for wrong in (1.2, 0.8):  # the test resolves a 20% error either way
        assert abs((q / wrong).mean() - 1.0) > 4 * se + slack
