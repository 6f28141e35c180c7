"""The public frequency-oracle API, the same for all six oracles.

Keyword-only constructors, validated ``privatize``, ``estimate`` returning
counts, variances and sanitization counts; budgets at both extremes;
unbiasedness by seeded simulation with tolerances from the reported
variance; results independent of the thread count.
"""

import math

import numpy as np
import pytest

from fastldp.oracles import FLH, GRR, OLH, OUE, SUE, FrequencyEstimate, HadamardResponse

ALL = [GRR, OLH, FLH, HadamardResponse, OUE, SUE]
D = 10


def make(cls, *, epsilon=1.0, domain_size=D, seed=5, n_threads=1, **kw):
    if cls is FLH:
        kw.setdefault("n_hashes", 4096)  # small pool bias (see fastldp.oracles.flh)
    return cls(domain_size=domain_size, epsilon=epsilon, codebook_seed=seed, n_threads=n_threads,
               **kw)


def legal_reports(oracle, n, rng=0):
    return oracle.privatize(np.random.default_rng(rng).integers(0, oracle.domain_size, n), rng=rng)


@pytest.mark.parametrize("cls", ALL)
def test_constructor_is_keyword_only_and_repr_shows_it(cls):
    with pytest.raises(TypeError):
        cls(D, 1.0)
    o = make(cls)
    text = repr(o)
    assert text.startswith(f"{cls.__name__}(domain_size={D}, epsilon=1.0")
    assert "codebook_seed=5" in text


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("kwargs,exc,match", [
    ({"domain_size": 1}, ValueError, r"'domain_size' parameter of \w+ must be an int in \[2, 2147483647\]"),
    ({"domain_size": 2**62}, ValueError, "Got 4611686018427387904 instead"),
    ({"domain_size": 2.5}, TypeError, "'domain_size' parameter"),
    ({"epsilon": float("nan")}, ValueError, r"'epsilon' parameter of \w+ must be a float in \(0.0, 700.0\]"),
    ({"epsilon": -1.0}, ValueError, "Got -1.0 instead"),
    ({"epsilon": 0.0}, ValueError, "'epsilon' parameter"),
    ({"epsilon": 701.0}, ValueError, r"\(0.0, 700.0\]. Got 701.0"),
    ({"epsilon": "1"}, TypeError, "'epsilon' parameter"),
    ({"seed": -1}, ValueError, "'codebook_seed' parameter"),
    ({"n_threads": 0}, ValueError, "'n_threads' parameter"),
])
def test_bad_constructor_arguments_name_the_parameter(cls, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        make(cls, **kwargs)


@pytest.mark.parametrize("cls", ALL)
def test_tiny_budgets_raise_instead_of_returning_infinities(cls):
    # e^eps rounds to 1, so p - q is 0 (GRR, OLH, FLH, OUE, SUE); for HR,
    # tanh(eps / 2)^2 underflows to 0
    with pytest.raises(ValueError, match=r"'epsilon' parameter of \w+ must be large enough .* "
                                         r"Got 1e-200 instead"):
        make(cls, epsilon=1e-200)
    o = make(cls)
    with pytest.raises(ValueError, match=r"'epsilons' parameter of \w+\.privatize .* "
                                         r"Got 1e-200 at index 1 instead"):
        o.privatize([0, 1, 2], epsilons=[1.0, 1e-200, 1.0])
    with pytest.raises(ValueError, match=r"'epsilons' parameter of \w+\.estimate .* at index 0"):
        o.estimate(legal_reports(o, 2), epsilons=[800.0, 1.0])


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("eps", [0.05, 20.0, 700.0])
def test_extreme_but_legal_budgets_give_finite_estimates(cls, eps):
    o = make(cls, epsilon=eps, n_hashes=64) if cls is FLH else make(cls, epsilon=eps)
    x = np.random.default_rng(1).integers(0, D, 300)
    est = o.estimate(o.privatize(x, epsilons=np.full(300, eps), rng=2),
                     epsilons=np.full(300, eps))
    assert np.all(np.isfinite(est.counts)) and np.all(np.isfinite(est.variances))
    assert np.all(est.variances > 0)


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("values,exc,match", [
    ([0, 10], ValueError, r"'values' parameter of \w+\.privatize must be a 1-d array of integers "
                          r"in \[0, 10\). Got 10 at index 1 instead"),
    ([3, -3], ValueError, "Got -3 at index 1"),
    ([1.0, 2.5], ValueError, "Got 2.5 at index 1"),
    ([1.0, float("nan")], ValueError, "Got nan at index 1"),
    ([1, float("inf")], ValueError, "Got inf at index 1"),
    (np.array([True, False]), TypeError, "dtype bool"),
    (["a", "b"], TypeError, "'values' parameter"),
    (np.array([1, None], dtype=object), TypeError, "Got None at index 1"),
    ([[1, 2]], ValueError, r"shape \(1, 2\)"),
    (5, ValueError, r"shape \(\)"),
])
def test_bad_values_are_rejected_never_echoed(cls, values, exc, match):
    with pytest.raises(exc, match=match):
        make(cls).privatize(values, rng=0)


@pytest.mark.parametrize("cls", ALL)
def test_integral_floats_and_object_ints_are_accepted(cls):
    o = make(cls)
    a = o.privatize(np.array([1, 2, 9]), rng=3)
    b = o.privatize([1.0, 2.0, 9.0], rng=3)
    c = o.privatize(np.array([1, 2, 9], dtype=object), rng=3)
    np.testing.assert_array_equal(a, b)
    np.testing.assert_array_equal(a, c)
    assert o.privatize([], rng=0).shape[0] == 0


@pytest.mark.parametrize("cls", ALL)
def test_epsilons_and_identities_are_checked(cls):
    o = make(cls)
    with pytest.raises(ValueError, match="'epsilons' parameter"):
        o.privatize([1, 2], epsilons=[1.0, float("nan")])
    with pytest.raises(ValueError, match="'epsilons' parameter"):
        o.privatize([1, 2], epsilons=[1.0, 1.0, 1.0])
    with pytest.raises(ValueError, match="'identities' parameter"):
        o.privatize([1, 2], identities=[3, 3])
    if cls is not FLH:  # FLH needs epsilon: it fixes g
        with pytest.raises(ValueError, match="'epsilons' parameter of .* given when the oracle "
                                             "was built with epsilon=None"):
            make(cls, epsilon=None).privatize([1, 2])
    with pytest.raises(ValueError, match=r"'epsilons' parameter of \w+\.estimate must be a scalar "
                                         r"or an array of length 3"):
        o.estimate(legal_reports(o, 3), epsilons=np.ones(4))


def test_flh_needs_epsilon_and_bounds_its_table():
    with pytest.raises(TypeError, match="'epsilon' parameter of FLH"):
        FLH(domain_size=5, epsilon=None)
    with pytest.raises(ValueError, match="'n_hashes' parameter of FLH"):
        FLH(domain_size=5, epsilon=9.0, n_hashes=8192)  # g = 4096 buckets
    assert FLH(domain_size=5, epsilon=9.0, n_hashes=4096).g == 4096
    assert FLH(domain_size=5, epsilon=1.0).g == 4


@pytest.mark.parametrize("cls", ALL)
def test_estimate_returns_counts_variances_and_sanitization(cls):
    o = make(cls)
    reports = legal_reports(o, 50)
    est = o.estimate(reports)
    assert isinstance(est, FrequencyEstimate)
    assert est.counts.shape == est.variances.shape == (D,)
    assert est.n == 50 and est.sanitization.n_received == 50 and est.sanitization.n_sanitized == 0
    np.testing.assert_allclose(est.frequencies, est.counts / 50)
    np.testing.assert_allclose(est.std, np.sqrt(est.variances))


def _malformed(oracle, reports):
    """Five malformed reports of each kind the oracle's report type admits, and their count."""
    bad = np.array(reports, dtype=object)
    if bad.ndim == 1:  # integer outputs
        size = int(oracle.output_sizes(np.array([oracle.epsilon]))[0])
        bad[:5] = ["x", None, 2.5, float("nan"), size]
    elif isinstance(oracle, FLH):
        bad[0, 0] = "x"
        bad[1, 1] = None
        bad[2, 0] = 0.5
        bad[3, 1] = float("inf")
        bad[4, 1] = oracle.g
    else:  # packed bits
        bad[0, 0] = "x"
        bad[1, -1] = None
        bad[2, 0] = 1.5
        bad[3, 0] = float("nan")
        bad[4, 0] = 256
        bad[4, -1] = 0xFF  # and padding bits set (D = 10: 6 padding bits)
    return bad, {"non_numeric": 2, "non_integer": 2, "out_of_range": 1}


@pytest.mark.parametrize("cls", ALL)
def test_malformed_reports_are_sanitized_counted_and_never_dropped(cls):
    o = make(cls)
    reports = legal_reports(o, 40)
    bad, reasons = _malformed(o, reports)
    est = o.estimate(bad)
    again = o.estimate(bad)
    rep = est.sanitization
    assert rep.n_received == 40 and rep.n_valid == 35 and rep.wrong_dtype
    assert rep.by_reason == reasons
    assert np.all(np.isfinite(est.counts))
    np.testing.assert_array_equal(est.counts, again.counts)  # public, deterministic coins
    # the 35 legal reports are used as they are
    clean, _ = o.sanitize(bad, np.full(40, 1.0), np.arange(40, dtype=np.uint64), "t")
    np.testing.assert_array_equal(np.asarray(clean)[5:], np.asarray(reports)[5:])
    with pytest.raises(ValueError, match="'reports' parameter"):
        o.sanitize(reports[:3], np.full(40, 1.0), np.arange(40, dtype=np.uint64), "t")


@pytest.mark.parametrize("cls", ALL)
def test_ragged_reports_do_not_crash_the_server(cls):
    o = make(cls)
    reports = list(legal_reports(o, 6))
    reports[2] = [1, 2, 3] if np.ndim(reports[0]) == 0 else [1]
    try:
        est = o.estimate(reports)
    except ValueError as err:  # a 2-d report type cannot hold a ragged row: a shape error
        assert np.ndim(reports[0]) == 1 and "'reports' parameter" in str(err)
    else:
        assert est.sanitization.n_sanitized == 1


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("heterogeneous", [False, True])
def test_counts_are_unbiased_within_the_reported_variance(cls, heterogeneous):
    # 8 independent seeded runs; every count within 5 sd of the truth, and the
    # mean over runs within 5 sd / sqrt(8)
    n, runs = 20_000, 8
    rng = np.random.default_rng(10)
    x = np.minimum(rng.geometric(0.3, n) - 1, D - 1)
    truth = np.bincount(x, minlength=D)
    eps = rng.uniform(0.5, 3.0, n) if heterogeneous else None
    errors, sds = [], []
    for run in range(runs):
        o = make(cls, seed=100 + run, epsilon=1.5)
        est = o.estimate(o.privatize(x, epsilons=eps, rng=run), epsilons=eps)
        errors.append(est.counts - truth)
        sds.append(est.std)
    errors, sds = np.array(errors), np.array(sds)
    assert np.all(np.abs(errors) < 5 * sds)
    assert np.all(np.abs(errors.mean(axis=0)) < 5 * sds.mean(axis=0) / math.sqrt(runs))


@pytest.mark.parametrize("cls", ALL)
def test_reported_variance_matches_the_spread_over_runs(cls):
    n, runs = 4000, 60
    x = np.random.default_rng(11).integers(0, 3, n)  # symbols 3.. are held by nobody
    truth = np.bincount(x, minlength=D)
    errs, var = [], None
    for run in range(runs):
        o = make(cls, seed=200 + run)
        est = o.estimate(o.privatize(x, rng=run))
        errs.append(est.counts - truth)
        var = est.variances
    ratio = np.var(np.array(errs), axis=0, ddof=1) / var
    # chi-square with 59 df: the variance ratio lies in [0.5, 1.6] with probability > 0.999
    assert np.all((ratio > 0.5) & (ratio < 1.6)), ratio


@pytest.mark.parametrize("cls", ALL)
def test_uniform_fast_path_equals_the_weighted_path(cls):
    o = make(cls)
    reports = legal_reports(o, 3000)
    fast = o.estimate(reports)
    general = o.estimate(reports, epsilons=np.full(3000, 1.0))
    np.testing.assert_allclose(fast.counts, general.counts, rtol=1e-9, atol=1e-7)
    np.testing.assert_allclose(fast.variances, general.variances, rtol=1e-12)


@pytest.mark.parametrize("cls", ALL)
def test_results_do_not_depend_on_the_thread_count(cls):
    x = np.random.default_rng(12).integers(0, D, 9000)
    eps = np.random.default_rng(13).uniform(0.5, 2.0, 9000)
    one, two = make(cls, n_threads=1), make(cls, n_threads=2)
    r1 = one.privatize(x, epsilons=eps, rng=4)
    r2 = two.privatize(x, epsilons=eps, rng=4)
    np.testing.assert_array_equal(r1, r2)
    for e in (None, eps):
        np.testing.assert_array_equal(one.estimate(r1, epsilons=e).counts,
                                      two.estimate(r1, epsilons=e).counts)


@pytest.mark.parametrize("cls", ALL)
def test_same_seed_same_reports(cls):
    o = make(cls)
    x = np.arange(D)
    np.testing.assert_array_equal(o.privatize(x, rng=np.random.SeedSequence(1)),
                                  o.privatize(x, rng=np.random.SeedSequence(1)))


@pytest.mark.parametrize("cls", ALL)
@pytest.mark.parametrize("eps", [None, 1.0])
def test_no_reports_give_zero_counts(cls, eps):
    o = make(cls)
    est = o.estimate(o.privatize([], epsilons=eps, rng=0), epsilons=eps)
    assert est.n == 0 and est.counts.shape == (D,) and not est.counts.any()
    assert est.sanitization.n_received == 0
