"""HaarHRR (issue 35, item 3): the Haar transform against its matrix twin, range answers against
brute force, unbiasedness and the exact variance by simulation (privatize and the aggregate
simulator), the exact level law, partials, report files, sanitization and bad input."""

import math

import numpy as np
import pytest
from scipy import stats
from scipy.linalg import hadamard

from fastldp.audit import audit_channel, audit_law
from fastldp.ranges import HaarEstimate, HaarHRR, quantile_from_cdf
from fastldp.ranges._channels import range_law
from fastldp.ranges.haar import haar_inverse, haar_transform
from fastldp.streaming import Partial


# ----------------------------------------------------------------------------- the transform
def _haar_matrix(size):
    """Row 0 the total; then per level j, block k: +1 on its left half, -1 on its right half."""
    rows = [np.ones(size)]
    j = 0
    while (1 << j) < size:
        span = size >> j
        for k in range(1 << j):
            r = np.zeros(size)
            r[k * span:k * span + span // 2] = 1.0
            r[k * span + span // 2:(k + 1) * span] = -1.0
            rows.append(r)
        j += 1
    return np.array(rows)


@pytest.mark.parametrize("size", [2, 8, 64])
def test_haar_transform_and_inverse_are_the_matrix_twins(size):
    c = np.random.default_rng(size).integers(0, 50, size).astype(float)
    M = _haar_matrix(size)
    coefs = haar_transform(c)
    assert [len(d) for d in coefs] == [1 << j for j in range(len(coefs))]
    np.testing.assert_allclose(np.concatenate([[c.sum()], *coefs]), M @ c, rtol=0, atol=1e-9)
    noisy = [d + np.random.default_rng(1).normal(0, 3, d.shape) for d in coefs]
    want = np.linalg.solve(M, np.concatenate([[c.sum() + 2.5], *noisy]))
    np.testing.assert_allclose(haar_inverse(c.sum() + 2.5, noisy), want, rtol=0, atol=1e-9)


# ----------------------------------------------------------------------------- answers
def test_ranges_cdf_and_quantiles_are_the_leaf_sums():
    """Every range of a non-power-of-two domain, from O(log D) coefficients, is the leaves' sum."""
    D = 40
    haar = HaarHRR(epsilon=1.0, domain_size=D, codebook_seed=3)
    assert haar.height == 6 and haar.level_sizes == [1, 2, 4, 8, 16, 32]
    x = haar.example_data(3000, np.random.default_rng(0))
    est = haar.estimate(haar.privatize(x, rng=1))
    assert isinstance(est, HaarEstimate) and est.counts.shape == (D,)
    a, b = np.triu_indices(D)
    brute = np.array([est.counts[i:j + 1].sum() for i, j in zip(a, b)])
    np.testing.assert_allclose(est.range_count(a, b), brute, rtol=1e-12, atol=1e-8)
    np.testing.assert_allclose(est.cdf(), np.cumsum(est.counts) / 3000, rtol=1e-12, atol=1e-12)
    q = np.linspace(0, 1, 11)
    np.testing.assert_allclose(est.quantile(q),
                               quantile_from_cdf(np.cumsum(est.counts) / 3000, q), atol=1e-9)
    # the weights of range_weights rebuild every answer from the coefficients
    w = est.range_weights(a, b)
    lin = (b - a + 1) * 3000 / 64 + sum(wj @ d for wj, d in zip(w, est.coefficients))
    np.testing.assert_allclose(lin, brute, rtol=1e-12, atol=1e-8)
    # the decode against its naive twin: each report adds (n / m_j) y H[r, :] / tanh(eps / 2)
    y = haar.privatize(x, rng=2)
    got = haar.estimate(y).coefficients
    for j in range(haar.height):
        mine = y[y[:, 0] == j, 1]
        H = hadamard(1 << j)
        twin = sum((2 * (v % 2) - 1) * H[v // 2] for v in mine) / math.tanh(0.5)
        np.testing.assert_allclose(got[j], twin * 3000 / mine.size, rtol=1e-12, atol=1e-9)


# ----------------------------------------------------------------------------- moments
D_SIM, N_SIM, EPS = 16, 2000, 1.0
A_SIM, B_SIM = np.array([1, 3, 5, 6, 0]), np.array([15, 9, 5, 12, 4])


def _draws(haar, counts, x, reps, how):
    if how == "simulate":
        return [haar.simulate(counts, rng=50_000 + r) for r in range(reps)]
    return [haar.estimate(haar.privatize(x, rng=60_000 + r)) for r in range(reps)]


def _inverse_mean(n, p):
    """E[1 / m] for m ~ Binomial(n, p) given m > 0 (exact sum)."""
    m = np.arange(1, n + 1)
    pmf = stats.binom.pmf(m, n, p)
    return float((pmf / m).sum() / pmf.sum())


def _point_mass_variance(haar, est, x0, n):
    """The exact variance of each range when all n users hold x0.

    A range is ``const + sum_j a_j . d_j``; level j's term over its m_j users
    is (n / m_j) sum_u z_u (H a_j)[r_u] with mean n mu_j (mu_j = a_j . w_j(x0),
    the same for every user) and per-report variance c^2 |a_j|^2 - mu_j^2
    (Parseval over the uniform row r), c = 1 / tanh(eps / 2). The conditional
    means do not depend on the level draw, so Var = sum_j n^2 E[1/m_j] (...).
    """
    c2 = 1.0 / math.tanh(EPS / 2) ** 2
    w = est.range_weights(A_SIM, B_SIM)
    truth = haar_transform(np.bincount([x0], minlength=est.padded_size))
    inv_m = _inverse_mean(n, 1.0 / haar.n_levels)
    return sum(n**2 * inv_m * (c2 * (wj**2).sum(axis=-1) - (wj @ dj) ** 2)
               for wj, dj in zip(w, truth))


def _point_mass(reps, how):
    haar = HaarHRR(epsilon=EPS, domain_size=D_SIM, codebook_seed=4)
    x0 = 5
    x = np.full(N_SIM, x0)
    counts = np.bincount(x, minlength=D_SIM)
    ests = _draws(haar, counts, x, reps, how)
    got = np.array([e.range_count(A_SIM, B_SIM) for e in ests])
    want_var = _point_mass_variance(haar, ests[0], x0, N_SIM)
    truth = ((A_SIM <= x0) & (x0 <= B_SIM)) * float(N_SIM)
    # the mean: within 4.5 standard errors of the exact variance
    assert np.all(np.abs(got.mean(axis=0) - truth) < 4.5 * np.sqrt(want_var / reps) + 1e-9)
    # the sample variance of R near-normal draws: relative sd sqrt(2 / (R - 1)); 4.5 sd
    ratio = got.var(axis=0, ddof=1) / want_var
    assert np.all(np.abs(ratio - 1) < 4.5 * math.sqrt(2 / (reps - 1))), ratio
    # range_variances: the noise given the level sizes, sum_j v_j |a_j|^2, v_j = n^2 c^2 / m_j
    first = ests[0]
    m = N_SIM**2 / (first.coefficient_variances * math.tanh(EPS / 2) ** 2)
    assert m.sum() == pytest.approx(N_SIM, rel=1e-12)
    w = first.range_weights(A_SIM, B_SIM)
    np.testing.assert_allclose(first.range_variances(A_SIM, B_SIM),
                               sum(N_SIM**2 / (mj * math.tanh(EPS / 2) ** 2) * (wj**2).sum(-1)
                                   for mj, wj in zip(m, w)), rtol=1e-12)


@pytest.mark.parametrize("how", ["privatize", "simulate"])
def test_a_point_mass_is_unbiased_with_the_exact_variance(how):
    _point_mass(reps=400, how=how)


@pytest.mark.slow
@pytest.mark.parametrize("how", ["privatize", "simulate"])
def test_a_point_mass_is_unbiased_with_the_exact_variance_at_scale(how):
    _point_mass(reps=4000, how=how)


def test_a_spread_population_is_unbiased():
    """A skewed population (users differ by level): leaves and ranges within 4.5 empirical SE."""
    haar = HaarHRR(epsilon=EPS, domain_size=D_SIM, codebook_seed=5)
    rng = np.random.default_rng(7)
    x = np.clip(np.floor(np.abs(rng.standard_cauchy(N_SIM)) * 2), 0, D_SIM - 1).astype(np.int64)
    counts = np.bincount(x, minlength=D_SIM)
    for how in ("privatize", "simulate"):
        ests = _draws(haar, counts, x, 300, how)
        leaves = np.array([e.counts for e in ests])
        se = leaves.std(axis=0, ddof=1) / math.sqrt(len(ests))
        assert np.all(np.abs(leaves.mean(axis=0) - counts) < 4.5 * se), how
        got = np.array([e.range_count(A_SIM, B_SIM) for e in ests])
        truth = np.array([counts[a:b + 1].sum() for a, b in zip(A_SIM, B_SIM)])
        se = got.std(axis=0, ddof=1) / math.sqrt(len(ests))
        assert np.all(np.abs(got.mean(axis=0) - truth) < 4.5 * se + 1e-9), how


# ----------------------------------------------------------------------------- the law
def _naive_level_law(K, eps, node):
    """P(report 2r + b | half-block node) from the definition: r uniform, sign kept w.p. p."""
    p = math.exp(eps) / (math.exp(eps) + 1)
    k, sign = node // 2, 1 - 2 * (node % 2)
    out = np.zeros(2 * K)
    for r in range(K):
        true = sign * (-1) ** bin(r & k).count("1")
        out[2 * r + 1] += (p if true > 0 else 1 - p) / K
        out[2 * r] += (p if true < 0 else 1 - p) / K
    return out


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_the_level_law_is_exact_with_largest_ratio_e_eps(eps):
    haar = HaarHRR(epsilon=eps, domain_size=8, codebook_seed=1)
    for li, level in enumerate(haar.oracles):
        law = level.channel(eps)
        want = np.array([_naive_level_law(level.K, eps, v) for v in range(2 * level.K)])
        np.testing.assert_allclose(law, want, rtol=1e-15, atol=0)
    law = range_law(haar, eps, np.arange(2, dtype=np.uint64))
    # the whole report (level, output): the levels' laws over L = 3
    np.testing.assert_allclose(law.probs.sum(axis=2), 1.0, atol=1e-12)
    np.testing.assert_allclose(law.probs[0, 6, :2], _naive_level_law(1, eps, 6 // 4) / 3,
                               rtol=1e-15)
    audit = audit_law(law, eps)
    assert audit.holds and math.isclose(float(audit.ratio), math.exp(eps), rel_tol=1e-12)
    assert not audit_law(law, 0.999 * eps).holds


def test_the_audit_passes_haar_and_catches_its_control():
    chans = HaarHRR.channels(1.0)
    assert [c.name for c in chans] == ["haar-hrr", "control:haar-hrr-sampler"]
    for ch in chans:
        assert audit_channel(ch).holds != ch.expect_violation, ch.name


def test_privatize_draws_the_level_law():
    """The reports' frequencies against the exact law (chi-square, 200,000 reports of one value)."""
    haar = HaarHRR(epsilon=1.0, domain_size=8, codebook_seed=1)
    y = haar.privatize(np.full(200_000, 6), rng=3)
    law = range_law(haar, 1.0, np.zeros(1, dtype=np.uint64))
    keys = {o: i for i, o in enumerate(law.outputs)}
    idx = np.array([keys[(int(lv), int(p))] for lv, p in y])
    observed = np.bincount(idx, minlength=len(keys))
    expected = law.probs[0, 6] * y.shape[0]
    assert stats.chisquare(observed, expected).pvalue > 1e-4


# ----------------------------------------------------------------------------- partials, files
def test_partials_merge_bit_for_bit():
    haar = HaarHRR(epsilon=1.5, domain_size=40, codebook_seed=5)
    x = haar.example_data(3000, np.random.default_rng(1))
    reports = haar.privatize(x, rng=2)
    whole = haar.estimate(reports)
    cuts = [0, 700, 701, 2100, 3000]
    parts = [haar.partial(reports[lo:hi], identities=np.arange(lo, hi))
             for lo, hi in zip(cuts[:-1], cuts[1:])]
    merged = haar.merge(haar.merge(parts[3], parts[1]), haar.merge(parts[0], parts[2]))
    out = haar.finalize(Partial.from_bytes(merged.to_bytes()))
    np.testing.assert_array_equal(out.counts, whole.counts)
    for d1, d2 in zip(out.coefficients, whole.coefficients):
        np.testing.assert_array_equal(d1, d2)
    assert out.n == 3000 and HaarHRR(**haar.stream_params()).stream_params() == haar.stream_params()
    other = HaarHRR(**{**haar.stream_params(), "codebook_seed": 6})
    with pytest.raises(ValueError, match="other parameters"):
        other.finalize(merged)


def test_report_files_decode_to_the_estimate(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp import reports as files

    haar = HaarHRR(epsilon=1.0, domain_size=100, codebook_seed=2)
    y = haar.privatize(haar.example_data(5000, np.random.default_rng(0)), rng=1)
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    files.write_reports(paths[0], haar, y[:2000])
    files.write_reports(paths[1], haar, y[2000:], identities=np.arange(2000, 5000))
    decoded = files.decode_files(haar, [str(p) for p in paths])
    assert isinstance(decoded, HaarEstimate) and decoded.n == 5000
    np.testing.assert_array_equal(decoded.counts, haar.estimate(y).counts)


# ----------------------------------------------------------------------------- bad input
def test_malformed_reports_are_replaced_and_counted():
    haar = HaarHRR(epsilon=1.0, domain_size=16, codebook_seed=2)
    x = haar.example_data(50, np.random.default_rng(0))
    good = haar.privatize(x, rng=1)
    rows = [list(r) for r in good]
    deep = next(i for i in range(5, 50) if rows[i][0] == 1)
    rows[deep][1] = 4  # level 1 has 2 coefficients: outputs 0 .. 3
    rows[1] = rows[1][:-1]  # wrong width
    rows[2][1] = "x"  # not a number
    rows[3][1] = 0.5  # not an integer
    rows[4][0] = haar.n_levels  # names no level
    est = haar.estimate(np.array(rows, dtype=object))
    san = est.sanitization
    assert san.n_received == 50 and san.n_valid == 45
    assert san.by_reason == {"wrong_width": 1, "non_numeric": 1, "non_integer": 1,
                             "bad_index": 1, "out_of_range": 1}
    again = haar.estimate(np.array(rows, dtype=object))  # public replacements: repeatable
    np.testing.assert_array_equal(again.counts, est.counts)
    assert est.n == 50  # nobody dropped


@pytest.mark.parametrize("kwargs,exc,words", [
    (dict(epsilon=float("nan")), ValueError, "'epsilon'.*HaarHRR"),
    (dict(epsilon=-1.0), ValueError, "'epsilon'"),
    (dict(epsilon="1"), TypeError, "'epsilon'"),
    (dict(domain_size=1), ValueError, "'domain_size'"),
    (dict(domain_size=2**31), ValueError, "'domain_size'"),
    (dict(domain_size=2.5), TypeError, "'domain_size'"),
    (dict(codebook_seed="a"), TypeError, "'codebook_seed'"),
])
def test_bad_parameters_name_themselves(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        HaarHRR(**(dict(epsilon=1.0, domain_size=64, codebook_seed=1) | kwargs))


def test_bad_calls_are_refused_clearly():
    with pytest.raises(TypeError, match="keyword"):
        HaarHRR(1.0, 64)
    haar = HaarHRR(epsilon=1.0, domain_size=64, codebook_seed=1)
    with pytest.raises(ValueError, match="'values'.*\\[0, 64\\)"):
        haar.privatize([0, 64], rng=0)
    with pytest.raises(ValueError, match="'counts'"):
        haar.simulate(np.ones(63, dtype=int), rng=0)
    big = HaarHRR(epsilon=1.0, domain_size=10_000, codebook_seed=1)
    with pytest.raises(ValueError, match="at most 8192 .*domain_size=10000 \\(padded 16384\\)"):
        big.simulate(np.ones(10_000, dtype=int), rng=0)
    est = haar.estimate(haar.privatize(np.arange(64), rng=0))
    with pytest.raises(ValueError, match="a=5, b=4"):
        est.range_count(5, 4)
    with pytest.raises(ValueError, match="a=5, b=4"):
        est.range_variances(5, 4)
    with pytest.raises(ValueError, match="'q'"):
        est.quantile(float("nan"))


def test_a_collector_serves_it_and_decodes_it_live(tmp_path):
    pytest.importorskip("starlette")
    import httpx

    from fastldp.reports import decode_files
    from fastldp.service.client import Client
    from fastldp.service.testing import running_server

    haar = HaarHRR(epsilon=2.0, domain_size=100, codebook_seed=22)
    x = haar.example_data(2_000, np.random.default_rng(8))
    with running_server(tmp_path, mechanism=haar.spec(), publish_every=1) as srv:
        info = httpx.get(srv.url + "/v1/mechanism").json()
        assert info["spec"] == haar.spec() and info["kind"] == "distribution"
        assert info["report_shape"] == [2] and info["report_dtype"] == "int64"
        with Client(srv.url, srv.token) as client:
            done = client.send(x, identities=np.arange(2_000), rng=5, batch_size=500)
            assert done["accepted"] == 2_000
            live = client.estimate()
        srv.stop()
        offline = decode_files(haar, sorted(str(p) for p in srv.store.glob("seg-*.parquet")))
    assert live["n"] == offline.n == 2_000
    np.testing.assert_array_equal(np.asarray(live["estimate"], dtype=float), offline.estimate)


def test_no_reports_and_an_empty_level():
    haar = HaarHRR(epsilon=1.0, domain_size=50, codebook_seed=1)
    est = haar.estimate(np.zeros((0, 2), dtype=np.int64))
    assert est.n == 0 and not est.counts.any()
    assert est.quantile(0.5) == 50.0  # the curve never reaches q: D
    # three reports, all of level 0: the deeper levels heard nobody (infinite noise, counts 0)
    one = haar.estimate(np.array([[0, 1], [0, 1], [0, 0]]))
    assert one.n == 3 and np.isinf(one.coefficient_variances[1:]).all()
    # level 0: T = (+1 reports) - (-1 reports) = 1, scaled by n / m_0 = 1, over tanh(eps / 2)
    assert one.coefficients[0][0] == pytest.approx(1 / math.tanh(0.5), rel=1e-15)
