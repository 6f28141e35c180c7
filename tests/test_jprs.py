"""JPRS end to end: exact privacy, the sampler, unbiasedness, sanitization, errors."""

import itertools
import math

import numpy as np
import pytest
import scipy.sparse as sp
from scipy.stats import norm

import fastldp
from fastldp import JPRS
from fastldp.relations.calibration import c_k
from fastldp._kernels import _hash
from fastldp.relations import rate_diagnostic_population
from fastldp.metrics import squared_frobenius_loss


def _all_sets(shape, k):
    pairs = [(r, c) for r in range(shape[0]) for c in range(shape[1])]
    for m in range(k + 1):
        for combo in itertools.combinations(pairs, m):
            yield np.array(combo, dtype=np.int64).reshape(-1, 2)


@pytest.mark.parametrize("k", [1, 2, 3])
@pytest.mark.parametrize("eps", [0.1, 0.9, 3.0])
def test_channel_likelihood_ratio_is_exactly_e_eps(k, eps):
    # Enumerate every input set of a 2 x 3 domain for one identity under a
    # fixed codebook and compute the exact output law.
    shape = (2, 3)
    sets = list(_all_sets(shape, k))
    mech = JPRS(shape=shape, k=k, s=2, codebook_seed=20261130)
    ident = 41
    probs = np.array([
        mech.output_probabilities([E], eps, identities=[ident])[0] for E in sets
    ])
    law = np.stack([probs, 1 - probs], axis=1)  # P(+1), P(-1)
    ratio = (law.max(axis=0) / law.min(axis=0)).max()
    # The largest ratio the codebook allows: the extreme scores c_k(m)*sign
    # reachable by some set, computed from the signs themselves.
    signs = _hash.pair_signs(mech.codebook_seed, np.full(6, ident, np.uint64), np.arange(6, dtype=np.int64))
    scores = [0.0]
    for E in sets[1:]:
        total = signs[E[:, 0] * 3 + E[:, 1]].sum()
        scores.append(c_k(len(E), k) * np.sign(total))
    gamma = math.tanh(eps / 2)
    hi, lo = max(scores), min(scores)
    expected = max((1 + gamma * hi) / (1 + gamma * lo), (1 - gamma * lo) / (1 - gamma * hi))
    assert ratio == pytest.approx(expected, rel=1e-12)
    assert ratio <= math.exp(eps) * (1 + 1e-12)
    if hi == 1.0 and lo == -1.0:  # the bound is attained
        assert ratio == pytest.approx(math.exp(eps), rel=1e-12)


def test_bound_is_attained_on_this_codebook():
    # Guards the test above against a codebook that never reaches +-1.
    signs = _hash.pair_signs(20261130, np.full(6, 41, np.uint64), np.arange(6, dtype=np.int64))
    assert (signs == 1).sum() >= 2 and (signs == -1).sum() >= 2


def test_privatize_samples_the_stated_channel():
    # Mean of Y over N identities vs the mean of 2P - 1; sd <= 1/sqrt(N).
    rng = np.random.default_rng(0)
    n, shape, k = 60_000, (8, 8), 4
    sizes = rng.integers(0, k + 1, n)
    sets = [np.stack(np.divmod(rng.choice(64, m, replace=False), 8), axis=1) for m in sizes]
    eps = rng.uniform(0.2, 2.0, n)
    mech = JPRS(shape=shape, k=k, s=8, codebook_seed=5)
    p_plus = mech.output_probabilities(sets, eps)
    bits = mech.privatize(sets, epsilons=eps, rng=1)
    assert set(np.unique(bits)) <= {-1, 1}
    assert abs(bits.mean() - (2 * p_plus - 1).mean()) < 5 / math.sqrt(n)
    # per set-size class too (ties happen at even sizes)
    for m in range(k + 1):
        sel = sizes == m
        assert abs(bits[sel].mean() - (2 * p_plus[sel] - 1).mean()) < 5 / math.sqrt(sel.sum())


def test_privatize_is_reproducible_and_consumes_only_the_given_rng():
    pop = rate_diagnostic_population(shape=(8, 8), s=10, k=3, n=500, rng=1)
    mech = JPRS(shape=(8, 8), k=3, s=10, codebook_seed=2)
    a = mech.privatize(pop.relations, epsilons=1.0, rng=np.random.SeedSequence(9))
    b = mech.privatize(pop.relations, epsilons=1.0, rng=np.random.SeedSequence(9))
    np.testing.assert_array_equal(a, b)
    c = mech.privatize(pop.relations, epsilons=1.0, rng=np.random.SeedSequence(10))
    assert not np.array_equal(a, c)


def test_sketch_is_unbiased_with_variance_at_most_2k_over_D():
    # Theorem 3 conditional on the records: E V(e) = sum gamma_i^2 A_i(e) / D.
    rng = np.random.default_rng(7)
    shape, k, n, trials = (8, 8), 3, 1500, 300
    pop = rate_diagnostic_population(shape=shape, s=6, k=k, n=n, rng=rng)
    eps = rng.uniform(0.5, 2.0, n)
    gamma2 = np.tanh(eps / 2) ** 2
    D = gamma2.sum()
    target = np.asarray(pop.relations.T @ gamma2).ravel() / D
    total = np.zeros(64)
    for t in range(trials):
        mech = JPRS(shape=shape, k=k, s=6, codebook_seed=1000 + t)
        bits = mech.privatize(pop.relations, epsilons=eps, rng=rng)
        total += mech.estimate(bits, epsilons=eps).sketch.ravel()
    mean = total / trials
    sd = math.sqrt(2 * k / (D * trials))
    z = norm.isf(1e-4 / (2 * 64))  # Bonferroni over 64 coordinates, family level 1e-4
    assert np.max(np.abs(mean - target)) < z * sd


def test_csr_and_pair_list_inputs_agree():
    pop = rate_diagnostic_population(shape=(6, 5), s=7, k=3, n=50, rng=3)
    lists = [np.stack(np.divmod(pop.relations[i].indices, 5), axis=1) for i in range(50)]
    mech = JPRS(shape=(6, 5), k=3, s=7, codebook_seed=4)
    np.testing.assert_array_equal(
        mech.privatize(pop.relations, epsilons=0.5, rng=8), mech.privatize(lists, epsilons=0.5, rng=8)
    )


def test_estimate_lies_in_the_feasible_set():
    pop = rate_diagnostic_population(shape=(16, 16), s=20, k=4, n=3000, rng=5)
    mech = JPRS(shape=(16, 16), k=4, s=20, codebook_seed=6)
    res = mech.estimate(mech.privatize(pop.relations, epsilons=1.0, rng=0), epsilons=1.0)
    m = res.matrix
    assert m.shape == (16, 16) and np.all(m >= 0) and np.all(m <= 1)
    assert np.count_nonzero(m) <= 20 and m.sum() <= 4 + 1e-9
    assert len(res.support[0]) == 20
    assert res.budget.n == 3000 and res.budget.eps_mean == 1.0
    assert res.budget.gamma_sq_sum == pytest.approx(3000 * math.tanh(0.5) ** 2)


def test_estimate_is_bit_identical_across_thread_counts():
    pop = rate_diagnostic_population(shape=(32, 32), s=30, k=4, n=9000, rng=2)
    eps = np.random.default_rng(0).uniform(0.5, 1.5, 9000)
    bits = JPRS(shape=(32, 32), k=4, s=30, codebook_seed=1).privatize(pop.relations, epsilons=eps, rng=0)
    results = [
        JPRS(shape=(32, 32), k=4, s=30, codebook_seed=1, n_threads=t).estimate(bits, epsilons=eps)
        for t in (1, 2, 4)
    ]
    for r in results[1:]:
        assert r.sketch.tobytes() == results[0].sketch.tobytes()
        assert r.matrix.tobytes() == results[0].matrix.tobytes()


# ---------------------------------------------------------------- sanitization
def test_malformed_packets_are_sanitized_and_counted():
    mech = JPRS(shape=(4, 4), k=2, s=3, codebook_seed=12)
    packets = [1, -1, 0, float("nan"), float("inf"), -float("inf"), 0.3, -7, "x", None, 1.0, -1]
    res = mech.estimate(np.array(packets, dtype=object), epsilons=1.0)
    rep = res.sanitization
    assert rep.n_received == 12 and rep.n_valid == 4 and rep.n_sanitized == 8
    assert rep.by_reason == {"out_of_alphabet": 2, "infinite": 2, "zero": 1, "nan": 1, "non_numeric": 2}
    assert rep.wrong_dtype
    assert np.all(np.isfinite(res.sketch))


def test_sanitization_is_deterministic_and_signs_are_kept():
    from fastldp._sanitize import sanitize_bits

    ids = np.arange(6, dtype=np.uint64)
    raw = np.array([0.0, np.nan, 2.5, -0.1, np.inf, 0.0])
    a, rep = sanitize_bits(raw, 6, 99, ids, "test")
    b, _ = sanitize_bits(raw, 6, 99, ids, "test")
    np.testing.assert_array_equal(a, b)
    assert a[2] == 1 and a[3] == -1 and a[4] == 1
    assert set(a.tolist()) <= {-1, 1}
    assert not rep.wrong_dtype and rep.n_valid == 0


def test_valid_int8_packets_pass_unchanged():
    mech = JPRS(shape=(4, 4), k=2, s=3, codebook_seed=12)
    bits = np.array([1, -1, 1], dtype=np.int8)
    assert mech.estimate(bits, epsilons=[0.5, 1.0, 2.0]).sanitization.n_sanitized == 0


def test_boolean_packets_are_flagged_as_wrong_dtype():
    mech = JPRS(shape=(4, 4), k=2, s=3, codebook_seed=12)
    rep = mech.estimate(np.array([True, False, True]), epsilons=1.0).sanitization
    assert rep.wrong_dtype and rep.n_valid == 2 and rep.by_reason["zero"] == 1


# ---------------------------------------------------------------- bad input
@pytest.mark.parametrize(
    "kwargs, exc, pattern",
    [
        (dict(shape=(0, 3), k=1, s=1), ValueError, r"'shape\[0\]' parameter of JPRS must be an int in \[1, inf\)"),
        (dict(shape=(3,), k=1, s=1), TypeError, "'shape' parameter of JPRS"),
        (dict(shape=(3, 3), k=0, s=1), ValueError, r"'k' parameter of JPRS must be an int in \[1, inf\)\. Got 0"),
        (dict(shape=(3, 3), k=1.5, s=1), TypeError, "'k' parameter of JPRS"),
        (dict(shape=(3, 3), k=1, s=10), ValueError, r"'s' parameter of JPRS must be an int in \[1, 9\]\. Got 10"),
        (dict(shape=(3, 3), k=1, s=1, codebook_seed=-1), ValueError, "'codebook_seed' parameter of JPRS"),
        (dict(shape=(3, 3), k=1, s=1, codebook_seed=2**64), ValueError, "'codebook_seed'"),
        (dict(shape=(3, 3), k=1, s=1, cap_policy="drop"), ValueError, "'cap_policy' parameter of JPRS must be one of"),
        (dict(shape=(3, 3), k=1, s=1, n_threads=0), ValueError, "'n_threads' parameter of JPRS"),
    ],
)
def test_constructor_errors_name_parameter_range_and_value(kwargs, exc, pattern):
    with pytest.raises(exc, match=pattern):
        JPRS(**kwargs)


@pytest.fixture
def mech():
    return JPRS(shape=(3, 4), k=2, s=3, codebook_seed=1)


@pytest.mark.parametrize("eps", [-1.0, 0.0, float("nan"), float("inf"), [1.0, float("nan")]])
def test_bad_budgets(mech, eps):
    sets = [np.array([[0, 0]]), np.array([[1, 1]])]
    with pytest.raises(ValueError, match=r"'epsilons' parameter of JPRS\.privatize must contain only finite floats in \(0, inf\)"):
        mech.privatize(sets, epsilons=eps, rng=0)


def test_budget_length_mismatch(mech):
    with pytest.raises(ValueError, match="'epsilons'.*length 2"):
        mech.privatize([np.array([[0, 0]]), np.array([[1, 1]])], epsilons=[1.0, 1.0, 1.0], rng=0)


def test_over_cap_set_raises_with_identity(mech):
    with pytest.raises(ValueError, match=r"at most k = 2 pairs per identity\. Got 3 pairs for identity 1"):
        mech.privatize([np.array([[0, 0]]), np.array([[0, 1], [1, 1], [2, 2]])], epsilons=1.0, rng=0)


def test_out_of_range_pair_raises(mech):
    with pytest.raises(ValueError, match=r"row in \[0, 3\) and col in \[0, 4\)\. Got \(3, 0\) for identity 0"):
        mech.privatize([np.array([[3, 0]])], epsilons=1.0, rng=0)


def test_duplicate_pair_raises(mech):
    with pytest.raises(ValueError, match=r"Got \(1, 2\) twice for identity 0"):
        mech.privatize([np.array([[1, 2], [1, 2]])], epsilons=1.0, rng=0)


def test_sparse_with_non_binary_value_raises(mech):
    with pytest.raises(ValueError, match="only 0/1 values"):
        mech.privatize(sp.csr_matrix(np.array([[0, 2] + [0] * 10])), epsilons=1.0, rng=0)


def test_sparse_with_wrong_width_raises(mech):
    with pytest.raises(ValueError, match="must have 12 columns"):
        mech.privatize(sp.csr_matrix((2, 11)), epsilons=1.0, rng=0)


def test_relations_of_wrong_type_raise(mech):
    with pytest.raises(TypeError, match="'relations' parameter of JPRS"):
        mech.privatize(np.zeros((2, 12)), epsilons=1.0, rng=0)


def test_bad_rng_raises(mech):
    with pytest.raises(TypeError, match="'rng' parameter of JPRS.privatize"):
        mech.privatize([np.array([[0, 0]])], epsilons=1.0, rng="seed")


def test_report_count_mismatch_raises(mech):
    with pytest.raises(ValueError, match="'epsilons'.*length 3"):
        mech.estimate(np.array([1, -1, 1], dtype=np.int8), epsilons=[1.0, 1.0])
    with pytest.raises(ValueError, match="'reports' parameter of JPRS.estimate must be a non-empty 1-d"):
        mech.estimate(np.ones((2, 2)), epsilons=1.0)


def test_repeated_identities_raise(mech):
    with pytest.raises(ValueError, match="'identities'.*repeated"):
        mech.estimate(np.array([1, -1], dtype=np.int8), epsilons=1.0, identities=[3, 3])


def test_minhash_cap_policy_keeps_k_public_pairs_and_warns():
    mech = JPRS(shape=(3, 4), k=2, s=3, codebook_seed=1, cap_policy="minhash")
    big = np.array([[0, 1], [1, 1], [2, 2], [0, 3]])
    with pytest.warns(UserWarning, match="1 identities held more than k = 2"):
        sets = mech.relation_sets([big, np.array([[0, 0]])])
    assert sets.sizes.tolist() == [2, 1] and sets.n_capped == 1
    with pytest.warns(UserWarning):
        again = mech.relation_sets([big, np.array([[0, 0]])])
    np.testing.assert_array_equal(sets.pairs, again.pairs)


def test_repr_round_trips_parameters():
    m = JPRS(shape=(3, 4), k=2, s=3, codebook_seed=1)
    assert repr(m) == "JPRS(shape=(3, 4), k=2, s=3, codebook_seed=1, cap_policy='raise')"


def test_show_config_reports_openmp(capsys):
    cfg = fastldp.show_config()
    assert isinstance(cfg["openmp"], bool) and cfg["default_threads"] >= 1
    assert "openmp" in capsys.readouterr().out


# ---------------------------------------------------------------- paper check
@pytest.mark.slow
def test_clean_loss_in_line_with_table_5():
    # Table 5, JPRS-Global clean: 0.461 +- 0.035 (sd over 5 seeds) at
    # d1 = d2 = 64, s = 128, k = 8, n = 128,000, eps = 0.75. The mean of 5
    # seeds has sd 0.035 / sqrt(5) = 0.016; the difference of two such means
    # has sd 0.022, so 4 sd = 0.09.
    losses = []
    for seed in range(5):
        ss = np.random.SeedSequence([2026, seed]).spawn(3)
        pop = rate_diagnostic_population(shape=(64, 64), s=128, k=8, n=128_000, rng=ss[0])
        mech = JPRS(shape=(64, 64), k=8, s=128,
                    codebook_seed=int(ss[1].generate_state(1, np.uint64)[0]))
        bits = mech.privatize(pop.relations, epsilons=0.75, rng=ss[2])
        losses.append(squared_frobenius_loss(mech.estimate(bits, epsilons=0.75).matrix, pop.target))
    assert abs(np.mean(losses) - 0.461) < 0.09, losses


# ------------------------------------------------- the API contract: budgets, names, results
def _prs(**kwargs):
    return fastldp.PaddedRelationSampling(oracle="grr", **kwargs)


RELATION_MAKERS = {"JPRS": JPRS, "P-RS": _prs}
_SETS = [np.array([[0, 1], [2, 3]]), np.array([[1, 1]]), np.array([[3, 0]])] * 40


@pytest.mark.parametrize("make", RELATION_MAKERS.values(), ids=RELATION_MAKERS)
def test_positional_budgets_still_work_with_a_deprecation_warning(make):
    mech = make(shape=(4, 4), k=2, s=3, codebook_seed=9)
    eps = np.linspace(0.5, 2.0, len(_SETS))
    want = mech.privatize(_SETS, epsilons=eps, rng=4)
    with pytest.warns(DeprecationWarning, match=r"privatize\(data, epsilons=\.\.\.\)") as rec:
        got = mech.privatize(_SETS, eps, rng=4)
    assert rec[0].filename == __file__  # points at the caller's line, not at fastldp
    np.testing.assert_array_equal(got, want)
    with pytest.warns(DeprecationWarning, match=r"estimate\(data, epsilons=\.\.\.\)"):
        old = mech.estimate(want, eps)
    np.testing.assert_array_equal(old.matrix, mech.estimate(want, epsilons=eps).matrix)


@pytest.mark.parametrize("make", RELATION_MAKERS.values(), ids=RELATION_MAKERS)
def test_budgets_given_twice_or_extra_positionals_are_type_errors(make):
    mech = make(shape=(4, 4), k=2, s=3, codebook_seed=9)
    with pytest.raises(TypeError, match="one positional argument"):
        mech.privatize(_SETS, 1.0, epsilons=1.0)
    with pytest.raises(TypeError, match="one positional argument"):
        mech.estimate(np.ones(3, np.int64), 1.0, None)


@pytest.mark.parametrize("make", RELATION_MAKERS.values(), ids=RELATION_MAKERS)
def test_the_constructor_epsilon_is_the_default_budget(make):
    fixed = make(shape=(4, 4), k=2, s=3, epsilon=1.5, codebook_seed=9)
    personal = make(shape=(4, 4), k=2, s=3, codebook_seed=9)
    bits = fixed.privatize(_SETS, rng=3)
    np.testing.assert_array_equal(bits, personal.privatize(_SETS, epsilons=1.5, rng=3))
    a, b = fixed.estimate(bits), personal.estimate(bits, epsilons=1.5)
    np.testing.assert_array_equal(a.matrix, b.matrix)
    assert a.privacy == b.privacy and a.privacy.epsilon == 1.5 and not a.privacy.personal
    # a call's own budgets win over the default
    np.testing.assert_array_equal(fixed.estimate(bits, epsilons=0.5).matrix,
                                  personal.estimate(bits, epsilons=0.5).matrix)
    np.testing.assert_array_equal(fixed.decode(bits)["global"].matrix, a.matrix)
    assert fixed.finalize(fixed.partial(bits)).privacy == a.privacy
    assert "epsilon=1.5" in repr(fixed) and "epsilon" not in repr(personal)


@pytest.mark.parametrize("make", RELATION_MAKERS.values(), ids=RELATION_MAKERS)
def test_no_budget_anywhere_is_a_value_error_naming_epsilons(make):
    mech = make(shape=(4, 4), k=2, s=3, codebook_seed=9)
    name = type(mech).__name__
    for call in (lambda: mech.privatize(_SETS, rng=0),
                 lambda: mech.estimate(np.ones(3, np.int64)),
                 lambda: mech.decode(np.ones(3, np.int64)),
                 lambda: mech.partial(np.ones(3, np.int64))):
        with pytest.raises(ValueError, match=rf"'epsilons' parameter of {name}\.\w+ .*"
                                             r"without epsilon=.*Got None instead"):
            call()


@pytest.mark.parametrize("make", RELATION_MAKERS.values(), ids=RELATION_MAKERS)
@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf"), 1e-200])
def test_a_bad_constructor_epsilon_names_epsilon(make, bad):
    name = "JPRS" if make is JPRS else "PaddedRelationSampling"
    with pytest.raises(ValueError, match=rf"The 'epsilon' parameter of {name} must be a float "
                                         r"in \[1e-150, inf\)"):
        make(shape=(4, 4), k=2, s=3, epsilon=bad)
    with pytest.raises(TypeError, match="'epsilon' parameter"):
        make(shape=(4, 4), k=2, s=3, epsilon="1.0")


def test_prs_constructor_epsilon_is_held_to_the_oracle_limits():
    with pytest.raises(ValueError, match="'epsilon' parameter of PaddedRelationSampling"):
        _prs(shape=(4, 4), k=2, s=3, epsilon=800.0)  # e^eps overflows: GRR's limit is 700


@pytest.mark.parametrize("make", RELATION_MAKERS.values(), ids=RELATION_MAKERS)
def test_items_per_user_and_sparsity_are_aliases_of_k_and_s(make):
    a = make(shape=(4, 4), k=2, s=3, codebook_seed=9)
    b = make(shape=(4, 4), items_per_user=2, sparsity=3, codebook_seed=9)
    assert repr(a) == repr(b) and (b.k, b.s) == (2, 3)
    assert (b.items_per_user, b.sparsity) == (2, 3)
    assert b.stream_params() == a.stream_params()
    with pytest.raises(ValueError, match=r"'items_per_user' parameter of \w+ is another name "
                                         r"for 'k'.*Got k=2 and items_per_user=3"):
        make(shape=(4, 4), k=2, items_per_user=3, s=3)
    with pytest.raises(ValueError, match=r"'sparsity' parameter .* for 's'"):
        make(shape=(4, 4), k=2, s=3, sparsity=3)
    with pytest.raises(TypeError, match="'items_per_user' \\(or its paper name 'k'\\)"):
        make(shape=(4, 4), s=3)
    with pytest.raises(TypeError, match="'sparsity' \\(or its paper name 's'\\)"):
        make(shape=(4, 4), items_per_user=2)
    with pytest.raises(ValueError, match=r"'k' parameter of \w+ must be an int in \[1, inf\)"):
        make(shape=(4, 4), items_per_user=0, s=3)  # the alias is validated as k


@pytest.mark.parametrize("make", RELATION_MAKERS.values(), ids=RELATION_MAKERS)
def test_the_result_is_on_the_shared_base(make):
    from fastldp.results import REPR_WIDTH, Result

    mech = make(shape=(300, 300), k=2, s=5000, codebook_seed=9)
    eps = np.random.default_rng(0).uniform(0.5, 2.0, len(_SETS))
    bits = mech.privatize(_SETS, epsilons=eps, rng=1)
    est = mech.estimate(bits, epsilons=eps)
    assert isinstance(est, Result)
    assert est.estimate is est.matrix and est.estimate.shape == (300, 300)
    assert est.n == len(_SETS) and est.sanitization.n_received == len(_SETS)
    assert est.variances is None and est.std is None
    p = est.privacy
    assert (p.model, p.unit, p.personal) == ("local DP", "user", True)
    assert (p.epsilon_min, p.epsilon_median, p.epsilon_max) == (eps.min(), np.median(eps), eps.max())
    text = repr(est)  # 90,000 entries: one short line
    assert len(text) <= REPR_WIDTH and "\n" not in text and f"n={len(_SETS)}" in text
    # a decode from partials keeps the budget extremes, not the median
    merged = mech.finalize(mech.merge(mech.partial(bits[:50], eps[:50]),
                                      mech.partial(bits[50:], eps[50:], np.arange(50, 120))))
    np.testing.assert_array_equal(merged.matrix, est.matrix)
    assert merged.n == est.n and merged.privacy.personal and merged.privacy.epsilon is None
    assert (merged.privacy.epsilon_min, merged.privacy.epsilon_max) == (eps.min(), eps.max())
    assert merged.privacy.epsilon_median is None and len(repr(merged)) <= REPR_WIDTH
    decoded = mech.decode(bits, epsilons=eps, decoders=("global", "pooled"), n_groups=4)
    for out in decoded.values():
        assert isinstance(out, Result) and out.n == est.n and out.privacy == est.privacy
        assert len(repr(out)) <= REPR_WIDTH


def test_the_result_to_frame_is_long_format_with_the_sketch():
    pytest.importorskip("pandas")
    mech = JPRS(shape=(4, 5), k=2, s=3, epsilon=1.0, codebook_seed=9)
    est = mech.estimate(mech.privatize(_SETS, rng=1))
    frame = est.to_frame()
    assert list(frame.columns) == ["row", "col", "estimate", "sketch"]
    assert len(frame) == 20
    np.testing.assert_array_equal(frame["estimate"].to_numpy().reshape(4, 5), est.matrix)
    np.testing.assert_array_equal(frame["sketch"].to_numpy().reshape(4, 5), est.sketch)
    np.testing.assert_array_equal(frame["row"].to_numpy(), np.repeat(np.arange(4), 5))


def test_the_package_never_calls_its_own_deprecated_form(tmp_path):
    """The relation call sites inside fastldp pass epsilons= by keyword (no self-warning)."""
    import warnings

    from fastldp import mechanisms
    from fastldp.audit import controls, registry

    sets = [np.array([[0, 1]]), np.zeros((0, 2), np.int64), np.array([[1, 0], [1, 1]])]
    ids = np.arange(len(sets), dtype=np.uint64)
    with warnings.catch_warnings():
        warnings.simplefilter("error", DeprecationWarning)
        found = {**registry.channels(1.0), **controls.negative_controls(1.0)}
        used = [ch for name, ch in found.items() if "jprs" in name or "p-rs" in name]
        assert len(used) >= 4
        for ch in used:
            eps = ch.mechanism_epsilon or ch.epsilon
            ch.sample(ch.build(eps), eps, sets, ids, np.random.default_rng(0))
        mechanisms.simulate(JPRS(shape=(4, 4), k=2, s=2, codebook_seed=1), 50,
                            tmp_path / "r.parquet", epsilon=1.0, seed=0)
