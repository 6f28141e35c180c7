"""BLH: OLH's code with two buckets; the exact law, the variances, the server."""

import json
import math

import numpy as np
import pytest
from scipy.stats import chisquare

from _merging import merge_in_order
from fastldp.oracles import _laws as laws
from fastldp.audit.exact import audit_law
from fastldp.oracles import BLH, OLH
from fastldp.oracles.olh import olh_hash


def make(D=6, eps=1.0, **kw):
    kw.setdefault("codebook_seed", 11)
    kw.setdefault("n_threads", 1)
    return BLH(domain_size=D, epsilon=eps, **kw)


def test_blh_is_olh_with_two_buckets():
    o = make()
    assert isinstance(o, OLH) and o.uses_identities
    for eps in (np.array([0.1, 1.0, 5.0, 700.0]), np.zeros((2, 3)) + 2.0, np.array(3.0)):
        g = o.buckets(eps)
        assert g.shape == np.shape(eps) and g.dtype == np.int64 and (g == 2).all()
    eps = np.array([0.2, 1.0, 3.0])
    e = np.exp(eps)
    np.testing.assert_allclose(o.variances(eps), ((e + 1) / (e - 1)) ** 2, rtol=1e-12)
    np.testing.assert_allclose(o.held_variances(eps), 4 * e / (e - 1) ** 2, rtol=1e-12)
    # never below OLH's variance (OLH's g is the optimum; equal where OLH's g is 2)
    olh = OLH(domain_size=6, epsilon=None)
    grid = np.linspace(0.05, 8, 60)
    assert np.all(o.variances(grid) >= olh.variances(grid) * (1 - 1e-12))
    low = grid[np.exp(grid) < 1.5]
    np.testing.assert_array_equal(o.variances(low), olh.variances(low))


def test_reports_are_olh_reports_where_olh_has_two_buckets():
    # eps < ln 1.5: OLH's g = round(e^eps) + 1 = 2; the same hash family keyed by
    # (codebook_seed, identity) and the same coins give the same reports and estimates
    eps, n = 0.3, 2000
    blh, olh = make(50, eps, codebook_seed=4), OLH(domain_size=50, epsilon=eps, codebook_seed=4)
    assert int(olh.buckets(np.array([eps]))[0]) == 2
    x = np.random.default_rng(0).integers(0, 50, n)
    ids = np.random.default_rng(1).choice(2**40, n, replace=False).astype(np.uint64)
    y = blh.privatize(x, identities=ids, rng=5)
    assert y.tobytes() == olh.privatize(x, identities=ids, rng=5).tobytes()
    a, b = blh.estimate(y, identities=ids), olh.estimate(y, identities=ids)
    assert a.counts.tobytes() == b.counts.tobytes()
    # at a larger budget BLH still hashes with OLH's hash, onto 2 buckets
    np.testing.assert_array_equal(blh.hash(ids, x, np.full(n, 2)), olh_hash(4, ids, x, 2))


@pytest.mark.parametrize("eps", [0.3, 1.0, 2.5])
@pytest.mark.parametrize("identity", [0, 7, 123])
def test_channel_likelihood_ratio_is_exactly_e_eps(eps, identity):
    o = make(6, None)
    law = o.channel(eps, identity)
    assert law.shape == (6, 2)
    np.testing.assert_allclose(law.sum(axis=1), 1.0, rtol=1e-12)
    hashed = olh_hash(11, np.full(6, identity, np.uint64), np.arange(6), 2)
    np.testing.assert_allclose(law[np.arange(6), hashed], math.exp(eps) / (math.exp(eps) + 1))
    ratio = (law.max(axis=0) / law.min(axis=0)).max()
    if len(set(hashed)) > 1:
        assert ratio == pytest.approx(math.exp(eps), rel=1e-12)
    assert ratio <= math.exp(eps) * (1 + 1e-12)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_the_audit_law_is_exact_at_eps_and_matches_the_channel(eps):
    o = make(5, eps)
    ids = np.arange(64, dtype=np.uint64)
    law = laws.blh_law(5, eps, o.codebook_seed, ids)
    res = audit_law(law, eps)
    assert res.holds and abs(res.epsilon_audited - eps) < 1e-13
    assert not audit_law(law, eps * (1 - 1e-9)).holds
    for j, ident in enumerate(ids[:8]):
        np.testing.assert_allclose(law.probs[j], o.channel(eps, int(ident)), rtol=1e-15)


def test_sampler_draws_from_the_channel():
    o = make(6, None)
    eps, ident, x, n = 1.2, 5, 2, 40_000
    law = o.channel(eps, ident)[x]
    out = o.perturb(np.full(n, x), np.full(n, eps), np.full(n, ident, np.uint64),
                    np.random.default_rng(0))
    assert chisquare(np.bincount(out, minlength=2), n * law).pvalue > 1e-4


def test_mean_over_identities_is_the_indicator():
    # the exact expectation per identity (its hash fixed), averaged over identities:
    # the held symbol exactly 1; another symbol ([H(x) = H(v)] - 1/2)(2p - 1) / (p - 1/2),
    # mean 0 over hashes and sd (2p - 1) / (2 (p - 1/2)) = 1 per identity
    o = make(6, None)
    eps, n_id = 1.3, 4000
    p = math.exp(eps) / (math.exp(eps) + 1)
    total = np.zeros((6, 6))
    for ident in range(n_id):
        law = o.channel(eps, ident)  # (D, 2)
        hashed = olh_hash(11, np.full(6, ident, np.uint64), np.arange(6), 2)
        c = ((hashed[None, :] == np.arange(2)[:, None]) - 0.5) / (p - 0.5)  # (2, D)
        total += law @ c
    mean = total / n_id
    np.testing.assert_allclose(np.diag(mean), 1.0, atol=1e-12)
    assert np.abs(mean[~np.eye(6, dtype=bool)]).max() < 5 / math.sqrt(n_id)


def test_estimate_equals_the_per_report_sum_with_personal_budgets():
    o = make(9, None)
    rng = np.random.default_rng(2)
    n = 300
    eps = rng.uniform(0.3, 3.0, n)
    ids = rng.integers(0, 2**60, n).astype(np.uint64)
    y = o.privatize(rng.integers(0, 9, n), epsilons=eps, identities=ids, rng=3)
    H = olh_hash(11, np.repeat(ids, 9), np.tile(np.arange(9), n), 2).reshape(n, 9)
    p = np.exp(eps) / (np.exp(eps) + 1)
    per = ((H == y[:, None]) - 0.5) / (p - 0.5)[:, None]
    est = o.estimate(y, epsilons=eps, identities=ids)
    np.testing.assert_allclose(est.counts, per.sum(axis=0), rtol=1e-10, atol=1e-9)


@pytest.mark.parametrize("budgets", ["equal", "levels", "continuous"])
@pytest.mark.parametrize("mode", ["sequential", "tree"])
def test_split_and_merge_is_bit_identical(budgets, mode):
    o = make(17, 1.0, n_threads=2)
    rng = np.random.default_rng(8)
    n = 400
    eps = {"equal": None, "levels": rng.choice([0.5, 1.0, 2.5], n),
           "continuous": rng.uniform(0.3, 3.0, n)}[budgets]
    ids = rng.choice(2**40, n, replace=False).astype(np.uint64)
    y = o.privatize(rng.integers(0, 17, n), epsilons=eps, identities=ids, rng=rng).astype(object)
    y[[5, 99, 300]] = ["x", 2, -1]
    want = o.estimate(y, epsilons=eps, identities=ids)
    cuts = [0, 40, 40, 222, n]
    parts = [o.partial(y[a:b], None if eps is None else eps[a:b], ids[a:b])
             for a, b in zip(cuts[:-1], cuts[1:])]
    got = o.finalize(merge_in_order(o, parts, mode, seed=3))
    assert got.counts.tobytes() == want.counts.tobytes()
    assert got.variances.tobytes() == want.variances.tobytes()
    assert got.sanitization == want.sanitization and got.sanitization.n_valid == n - 3


def test_malformed_reports_are_sanitized_and_counted():
    o = make(6, 1.0)
    y = o.privatize(np.arange(30) % 6, rng=1).astype(object)
    y[:6] = [2, -1, 0.5, "one", None, np.nan]
    est = o.estimate(y)
    assert est.sanitization.by_reason == {"non_numeric": 2, "non_integer": 2,
                                          "out_of_range": 2}
    clean, _ = o.sanitize(y, np.full(30, 1.0), np.arange(30, dtype=np.uint64), "t")
    assert set(np.unique(clean)) <= {0, 1}


def test_stream_params_and_report_files_round_trip(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.mechanisms import from_spec, mechanism_spec
    from fastldp.reports import decode_files, write_reports

    o = make(12, 1.5, codebook_seed=7)
    params = o.stream_params()
    assert json.loads(json.dumps(params)) == params == {"domain_size": 12, "epsilon": 1.5,
                                                        "codebook_seed": 7}
    twin = from_spec(mechanism_spec(o))
    assert type(twin) is BLH and repr(twin) == "BLH(domain_size=12, epsilon=1.5, codebook_seed=7)"
    y = o.privatize(np.arange(700) % 12, rng=2)
    y[[4, 9]] = [5, -3]
    path = write_reports(tmp_path / "r.parquet", o, y, row_group_size=250)
    got, want = decode_files(twin, path), o.estimate(y)
    assert got.counts.tobytes() == want.counts.tobytes()
    assert got.sanitization == want.sanitization and got.sanitization.n_sanitized == 2


@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_per_report_variances_by_simulation(eps):
    """The sample variance of ``c_i(v)`` over many identities against the formulas.

    Off the held symbol ``[H_i(v) = y_i]`` is a fair coin over the hash, so
    ``c(v)^2 = 1 / (4 (p - 1/2)^2) = sigma^2`` always and the sample variance
    is ``sigma^2`` less the squared mean, within about ``sigma^2 / N``: a
    0.1% tolerance. On the held symbol the bit ``[H_i(x) = y_i]`` is
    Bernoulli(``p``), whose sample variance has relative standard deviation
    ``sqrt((kappa - 1) / N)``, ``kappa - 1 = (1 - 4 p (1 - p)) / (p (1 - p))
    <= 5.6`` for ``p <= 0.881`` (``eps <= 2``): ``N = 10^6`` identities give
    0.24%, so the 1.2% tolerance is 5 standard deviations and a 2% error
    lies 3.4 beyond it.
    """
    D, x, N = 16, 3, 200_000
    o = make(D, eps, n_threads=2)
    p = math.exp(eps) / (math.exp(eps) + 1)
    assert p <= 0.881
    sigma2 = float(o.variances(np.array([eps]))[0])
    held = float(o.held_variances(np.array([eps]))[0])
    ids = np.arange(N, dtype=np.uint64)
    y = o.privatize(np.full(N, x), identities=ids, rng=9)
    H = olh_hash(11, np.repeat(ids, D), np.tile(np.arange(D), N), 2).reshape(N, D)
    c = ((H == y[:, None]) - 0.5) / (p - 0.5)
    others = np.delete(np.arange(D), x)
    var = c[:, others].var(axis=0, ddof=1)
    assert np.all(np.abs(var / sigma2 - 1) < 0.001)
    assert np.all(np.abs(c[:, others].mean(axis=0)) < 5 * math.sqrt(sigma2 / N))
    # the held symbol, over 10^6 identities
    M = 1_000_000
    ids = np.arange(M, dtype=np.uint64)
    y = o.privatize(np.full(M, x), identities=ids, rng=10)
    c_held = ((olh_hash(11, ids, np.full(M, x), 2) == y) - 0.5) / (p - 0.5)
    assert abs(c_held.var(ddof=1) / held - 1) < 0.012
    assert abs(c_held.mean() - 1) < 5 * math.sqrt(held / M)
