"""P_{s,k}: exact capped-simplex projection and the sparse support step."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays
from scipy.optimize import minimize

from fastldp._kernels import _projection
from _reference import brute_force_sparse_projection, capped_simplex_bisection

finite = st.floats(-3, 4, allow_nan=False, allow_infinity=False, width=64)


@settings(max_examples=300, deadline=None)
@given(y=arrays(np.float64, st.integers(1, 12), elements=finite), k=st.floats(0.05, 6))
def test_capped_simplex_matches_bisection_and_is_feasible(y, k):
    x = _projection.project_capped_simplex(y, k)
    assert np.all(x >= 0) and np.all(x <= 1)
    assert x.sum() <= k + 1e-12
    np.testing.assert_allclose(x, capped_simplex_bisection(y, k), atol=1e-12)


@settings(max_examples=200, deadline=None)
@given(y=arrays(np.float64, st.integers(1, 10), elements=finite), k=st.floats(0.05, 6))
def test_capped_simplex_satisfies_kkt(y, k):
    # x = clip(y - tau, 0, 1) with tau >= 0, and tau > 0 only if sum x = k.
    tau = _projection.capped_simplex_threshold(y, k)
    x = np.clip(y - tau, 0, 1)
    assert tau >= 0
    if tau > 0:
        assert abs(x.sum() - k) <= 1e-12 * max(1.0, k) * len(y)


def test_capped_simplex_against_scipy_qp():
    rng = np.random.default_rng(0)
    for _ in range(20):
        s = int(rng.integers(2, 7))
        y = rng.normal(0.5, 1.0, s)
        k = float(rng.uniform(0.3, s))
        x = _projection.project_capped_simplex(y, k)
        res = minimize(
            lambda z: np.sum((z - y) ** 2), np.full(s, 0.0), jac=lambda z: 2 * (z - y),
            bounds=[(0, 1)] * s, constraints=[{"type": "ineq", "fun": lambda z: k - z.sum()}],
            method="SLSQP", options={"ftol": 1e-14, "maxiter": 500},
        )
        assert np.sum((x - y) ** 2) <= res.fun + 1e-9
        np.testing.assert_allclose(x, res.x, atol=1e-5)


@pytest.mark.parametrize("trial", range(40))
def test_sparse_projection_equals_brute_force(trial):
    rng = np.random.default_rng(100 + trial)
    p = int(rng.integers(2, 8))
    s = int(rng.integers(1, p + 1))
    k = float(rng.uniform(0.2, s + 0.5))
    v = rng.normal(0.4, 0.9, p)
    x, support = _projection.project_sparse_capped(v, s, k)
    best_x, best = brute_force_sparse_projection(v, s, k)
    assert np.sum((x - v) ** 2) == pytest.approx(best, abs=1e-10)
    assert len(support) == s
    assert np.count_nonzero(x) <= s and x.sum() <= k + 1e-12


def test_top_s_breaks_ties_toward_smaller_index():
    v = np.array([0.5, 1.0, 0.5, 0.5, 2.0])
    np.testing.assert_array_equal(_projection.top_s_indices(v, 3), [0, 1, 4])


def test_projection_on_feasible_input_is_identity():
    v = np.zeros(20)
    v[[3, 7, 11]] = [0.2, 0.9, 0.5]
    x, _ = _projection.project_sparse_capped(v, 5, 2.0)
    np.testing.assert_array_equal(x, v)


def test_projection_rejects_nonfinite():
    with pytest.raises(ValueError, match="finite"):
        _projection.project_sparse_capped(np.array([0.1, np.nan]), 1, 1.0)


# ---------------------------------------------------------------- support rules
def test_raw_rule_is_the_euclidean_projection_and_clipped_is_not():
    from fastldp.relations.projection import project

    # three coordinates above 1 compete for s = 2 slots; the clipped rule ties them
    # at 1 and keeps the smaller indices, the raw rule keeps the two largest values
    v = np.array([1.2, 0.1, 3.0, 2.0, -0.5])
    raw, raw_support = project(v, 2, 1.5, "raw")
    clipped, clipped_support = project(v, 2, 1.5, "clipped")
    np.testing.assert_array_equal(raw_support, [2, 3])
    np.testing.assert_array_equal(clipped_support, [0, 2])
    best, _ = brute_force_sparse_projection(v, 2, 1.5)
    np.testing.assert_allclose(raw, best, atol=1e-9)
    assert np.sum((clipped - v) ** 2) > np.sum((raw - v) ** 2) + 0.5


@settings(max_examples=200, deadline=None)
@given(v=arrays(np.float64, st.integers(2, 8), elements=finite), data=st.data())
def test_clipped_rule_keeps_the_top_clipped_values_and_projects_them(v, data):
    from fastldp.relations.projection import project

    s = data.draw(st.integers(1, v.shape[0]))
    x, support = project(v, s, 2.0, "clipped")
    c = np.clip(v, 0, 1)
    # naive twin: a stable sort on -clip keeps the smaller index among ties
    expected = np.sort(np.argsort(-c, kind="stable")[:s])
    np.testing.assert_array_equal(support, expected)
    np.testing.assert_allclose(x[support], capped_simplex_bisection(v[support], 2.0), atol=1e-12)
    assert np.all(np.delete(x, support) == 0)


def test_support_rule_reaches_jprs_and_the_decoders():
    import fastldp
    from fastldp.relations import rate_diagnostic_population

    pop = rate_diagnostic_population(shape=(8, 8), s=8, k=2, n=400, rng=0)
    raw = fastldp.JPRS(shape=(8, 8), k=2, s=8, codebook_seed=1)
    clipped = fastldp.JPRS(shape=(8, 8), k=2, s=8, codebook_seed=1, support_rule="clipped")
    assert "support_rule='clipped'" in repr(clipped) and "support_rule" not in repr(raw)
    bits = raw.privatize(pop.relations, epsilons=4.0, rng=2)
    a, b = raw.estimate(bits, epsilons=4.0), clipped.estimate(bits, epsilons=4.0)
    np.testing.assert_array_equal(a.sketch, b.sketch)
    from fastldp.relations.projection import project

    np.testing.assert_array_equal(b.matrix.ravel(), project(a.sketch.ravel(), 8, 2.0, "clipped")[0])
    out = raw.decode(bits, 4.0, decoders=("global", "pooled"), support_rule="clipped")
    np.testing.assert_array_equal(out["global"].matrix, b.matrix)
    with pytest.raises(ValueError, match="'support_rule' parameter of JPRS must be one of"):
        fastldp.JPRS(shape=(8, 8), k=2, s=8, support_rule="top")
    with pytest.raises(ValueError, match="support_rule"):
        raw.decode(bits, 4.0, support_rule="nope")


@pytest.mark.parametrize("k", [float("nan"), float("inf"), -1.0])
def test_kernels_reject_a_bad_cap(k):
    with pytest.raises(ValueError, match="k must be finite and >= 0"):
        _projection.project_capped_simplex(np.ones(3), k)
    with pytest.raises(ValueError, match="k must be finite and >= 0"):
        _projection.project_sparse_capped(np.ones(3), 2, k)


@pytest.mark.parametrize("bad", [np.nan, np.inf, -np.inf])
def test_kernels_reject_non_finite_values(bad):
    with pytest.raises(ValueError, match="v must be finite"):
        _projection.top_s_indices(np.array([1.0, bad]), 1)
    with pytest.raises(ValueError, match="v must be finite"):
        _projection.capped_simplex_threshold(np.array([1.0, bad]), 1.0)


def test_padded_sampling_takes_the_support_rule():
    from fastldp.relations import PaddedRelationSampling, rate_diagnostic_population

    pop = rate_diagnostic_population(shape=(8, 8), s=8, k=2, n=400, rng=0)
    raw = PaddedRelationSampling(shape=(8, 8), k=2, s=8, oracle="hr", codebook_seed=1)
    clipped = PaddedRelationSampling(shape=(8, 8), k=2, s=8, oracle="hr", codebook_seed=1,
                                     support_rule="clipped")
    reports = raw.privatize(pop.relations, epsilons=2.0, rng=3)
    np.testing.assert_array_equal(
        clipped.estimate(reports, epsilons=2.0).matrix,
        raw.decode(reports, 2.0, support_rule="clipped")["global"].matrix)
    assert "support_rule='clipped'" in repr(clipped)
