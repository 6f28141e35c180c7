"""DiscreteSHE: the exact channel law, exact partials, report files, sanitization, variance.

Naive twins: the clamped coordinate's law and moments summed from H4's exact discrete
Laplace pmf (fastldp.noise.discrete_laplace_pmf) over a wide truncated support.
"""

import itertools
import math

import numpy as np
import pytest
from scipy import stats

from fastldp import audit
from fastldp.audit import audit_law
from fastldp.oracles._laws import discrete_she_law
from fastldp.noise import discrete_laplace_pmf
from fastldp.oracles import SHE, DiscreteSHE
from fastldp.oracles.discrete_encoding import clamped_moments

Z = np.arange(-6000, 6001)


def _twin_coordinate(t, M, L, b):
    """P(clamp(b M + Z, -L, M + L) = y) for y = -L .. M + L, by summing the pmf."""
    p = discrete_laplace_pmf(Z, t)
    y = np.clip(b * M + Z, -L, M + L)
    return np.array([p[y == v].sum() for v in range(-L, M + L + 1)])


@pytest.mark.parametrize("t, M, L", [(2.0, 1, 2), (3.5, 4, 10), (1.0, 1, 40), (0.75, 2, 1)])
def test_clamped_moments_against_the_pmf(t, M, L):
    p = discrete_laplace_pmf(Z, t)
    y = np.clip(Z, -L, M + L)
    mu = float((p * y).sum())
    var = float((p * (y - mu) ** 2).sum())
    got_mu, got_var = clamped_moments(t, M, L)
    assert got_mu == pytest.approx(mu, abs=1e-15)
    assert got_var == pytest.approx(var, rel=1e-12)
    # the held coordinate: mean M - mu_0, same variance (the reflection y -> M - y)
    y1 = np.clip(M + Z, -L, M + L)
    assert float((p * y1).sum()) == pytest.approx(M - got_mu, abs=1e-13)


@pytest.mark.parametrize("eps, grid", [(1.0, 1.0), (0.7, 0.5), (2.0, 0.25)])
def test_exact_law_is_the_twin_and_its_ratio_is_the_effective_epsilon(eps, grid):
    she = DiscreteSHE(domain_size=2, epsilon=eps, grid=grid, clamp=2, codebook_seed=0)
    law = discrete_she_law(she, eps)
    t, M, L = float(she.units(eps)), she.M, 2
    per = [_twin_coordinate(t, M, L, b) for b in (0, 1)]
    for x in range(2):
        twin = np.array([per[int(x == 0)][a + L] * per[int(x == 1)][b + L]
                         for a, b in itertools.product(range(-L, M + L + 1), repeat=2)])
        np.testing.assert_allclose(law.probs[0, x], twin, rtol=1e-12, atol=0)
    res = audit_law(law, she.effective_epsilon())
    assert res.holds and res.epsilon_audited == pytest.approx(she.effective_epsilon(), rel=1e-12)
    assert not audit_law(law, she.effective_epsilon() * (1 - 1e-9)).holds
    assert she.effective_epsilon() <= eps


def test_effective_epsilon_is_exact_when_the_scale_is_dyadic():
    # 2 M / eps = 4 and 8 / 3: t = 4 exactly (eps' = eps); t = ceil(2^16 8/3)/2^16 (eps' < eps)
    assert DiscreteSHE(domain_size=3, epsilon=0.5, codebook_seed=0).effective_epsilon() == 0.5
    she = DiscreteSHE(domain_size=3, epsilon=0.75, codebook_seed=0)
    t = math.ceil(2**16 * 8 / 3) / 2**16
    assert she.effective_epsilon() == pytest.approx(2 / t, rel=1e-15)
    assert 0.75 * (1 - 2**-16) < she.effective_epsilon() < 0.75


def test_the_sampler_follows_the_exact_law():
    """Chi-square over all 36 reports of D = 2, L = 2 at eps = 1 (n = 40,000 per input)."""
    she = DiscreteSHE(domain_size=2, epsilon=1.0, clamp=2, codebook_seed=0)
    law = discrete_she_law(she, 1.0)
    index = {k: j for j, k in enumerate(law.outputs)}
    for x in (0, 1):
        y = she.privatize(np.full(40_000, x), rng=7 + x)
        cells = np.array([index[(int(a), int(b))] for a, b in y])
        counts = np.bincount(cells, minlength=len(law.outputs))
        assert stats.chisquare(counts, law.probs[0, x] * counts.sum()).pvalue > 1e-4


def test_unbiased_per_report_with_the_stated_variance():
    """Per-report estimator c(v) = (y_v - mu_0) / (M - 2 mu_0): mean [v = x], variance s^2 /
    (M - 2 mu_0)^2. n = 50,000 reports of symbol 0 at eps = 1, grid 1/2; 5 sd bounds: the
    mean's sd is sqrt(var / n); the sample variance's is <= sqrt((kurtosis - 1) / n) var,
    kurtosis <= 6 (a clamped discrete Laplace's)."""
    eps, n = 1.0, 50_000
    she = DiscreteSHE(domain_size=4, epsilon=eps, grid=0.5, codebook_seed=1)
    mu0, s2 = clamped_moments(float(she.units(eps)), she.M, int(she.bounds(eps)[0]))
    y = she.privatize(np.zeros(n, dtype=np.int64), rng=3)
    c = (y - mu0) / (she.M - 2 * mu0)
    var = float(she.variances(np.array([eps]))[0])
    assert var == pytest.approx(s2 / (she.M - 2 * mu0) ** 2, rel=1e-15)
    for v in range(4):
        assert abs(c[:, v].mean() - (v == 0)) < 5 * math.sqrt(var / n)
        assert abs(c[:, v].var() / var - 1) < 5 * math.sqrt(5 / n)
    # about SHE's 8 / eps'^2 less 1 / (6 M^2) (discrete Laplace variance 2 t^2 - 1/6 + O(1/t^2))
    eff = she.effective_epsilon()
    assert var == pytest.approx(8 / eff**2 - 1 / (6 * she.M**2), rel=1e-3)
    assert var < float(SHE(domain_size=4, epsilon=eps, codebook_seed=1).variances(
        np.array([eps]))[0])


def test_estimate_uses_the_exact_integer_column_sums():
    she = DiscreteSHE(domain_size=5, epsilon=2.0, codebook_seed=2)
    y = she.privatize(np.arange(3000) % 5, rng=4)
    assert y.dtype == np.int64 and y.shape == (3000, 5)
    mu0, _ = clamped_moments(float(she.units(2.0)), 1, int(she.bounds(2.0)[0]))
    want = (y.sum(axis=0) - 3000 * mu0) / (1 - 2 * mu0)
    est = she.estimate(y)
    np.testing.assert_allclose(est.counts, want, rtol=1e-15)
    assert np.all(np.abs(est.counts - 600) < 5 * est.std)


@pytest.mark.parametrize("personal", [False, True])
def test_partials_merge_bit_identically_in_any_order(personal):
    she = DiscreteSHE(domain_size=6, epsilon=None if personal else 1.0, codebook_seed=3)
    n = 2000
    rng = np.random.default_rng(5)
    eps = rng.choice([0.5, 1.0, 2.5], n) if personal else None
    y = she.privatize(rng.integers(0, 6, n), epsilons=eps, rng=6)
    want = she.estimate(y, epsilons=eps)
    cuts = [(0, 300), (300, 1100), (1100, 2000)]
    parts = [she.partial(y[a:b], None if eps is None else eps[a:b],
                         np.arange(a, b, dtype=np.uint64)) for a, b in cuts]
    for order in ((0, 1, 2), (2, 0, 1), (1, 2, 0)):
        merged = parts[order[0]]
        for k in order[1:]:
            merged = she.merge(merged, parts[k])
        got = she.finalize(merged)
        assert got.counts.tobytes() == want.counts.tobytes()
        assert got.variances.tobytes() == want.variances.tobytes()
    assert (want.privacy.personal if personal else want.privacy.epsilon == 1.0)


def test_report_files_round_trip(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.reports import decode_files, write_reports

    she = DiscreteSHE(domain_size=4, epsilon=1.5, codebook_seed=4)
    y = she.privatize(np.arange(500) % 4, rng=8)
    path = write_reports(tmp_path / "r.parquet", she, y)
    got = decode_files(she, path)
    want = she.estimate(y)
    assert got.counts.tobytes() == want.counts.tobytes()
    # integer reports: the writer refuses floats for DiscreteSHE (reports.py: a FrequencyOracle)
    with pytest.raises(ValueError, match="must be an integer array: DiscreteSHE reports integers"):
        write_reports(tmp_path / "f.parquet", she, y.astype(np.float64) + 0.5)


def test_malformed_rows_are_replaced_by_public_noise_and_counted():
    she = DiscreteSHE(domain_size=4, epsilon=1.0, codebook_seed=5)
    y = she.privatize(np.arange(400) % 4, rng=9)
    L = int(she.bounds(1.0)[0])
    bad = y.astype(object)
    bad[3, 0], bad[7, 1], bad[9, 2], bad[11, 3] = "x", 0.5, L + 2, -L - 1
    bad[13, 0] = float("nan")
    ids = np.arange(400, dtype=np.uint64)
    clean, report = she.sanitize(bad, np.full(400, 1.0), ids, "test")
    assert report.by_reason == {"non_numeric": 1, "non_integer": 2, "out_of_range": 2}
    assert report.n_valid == 395 and report.wrong_dtype
    rows = [3, 7, 9, 11, 13]
    public = she.public_rows(ids[rows], np.full(5, 1.0))
    np.testing.assert_array_equal(clean[rows], public)
    assert np.all((public >= -L) & (public <= 1 + L))
    keep = np.setdiff1d(np.arange(400), rows)
    np.testing.assert_array_equal(clean[keep], y[keep])
    # public rows follow the law at a symbol not held: mean mu_0 ~ 0, variance s^2
    mu0, s2 = clamped_moments(float(she.units(1.0)), 1, L)
    many = she.public_rows(np.arange(20_000, dtype=np.uint64), np.full(20_000, 1.0))
    assert abs(many.mean() - mu0) < 5 * math.sqrt(s2 / many.size)
    est = she.estimate(bad)
    assert est.sanitization.n_sanitized == 5


def test_shape_and_parameter_errors():
    she = DiscreteSHE(domain_size=4, epsilon=1.0, codebook_seed=6)
    with pytest.raises(ValueError, match=r"must be a \(n, 4\) integer array"):
        she.estimate(np.zeros(10, dtype=np.int64))
    with pytest.raises(ValueError, match=r"The 'grid' parameter of DiscreteSHE must be a power"):
        DiscreteSHE(domain_size=4, epsilon=1.0, grid=0.3)
    with pytest.raises(ValueError, match=r"The 'clamp' parameter of DiscreteSHE must be"):
        DiscreteSHE(domain_size=4, epsilon=1.0, clamp=0)
    with pytest.raises(ValueError, match=r"The 'epsilon' parameter of DiscreteSHE must be at "
                                         r"least 2 M / 2\*\*40"):
        DiscreteSHE(domain_size=4, epsilon=1e-13)
    assert repr(DiscreteSHE(domain_size=4, epsilon=1.0, grid=0.5, clamp=9, codebook_seed=1)) == (
        "DiscreteSHE(domain_size=4, epsilon=1.0, grid=0.5, clamp=9, codebook_seed=1)")


def test_registry_row_and_controls():
    row = audit.audit_channel(audit.get_channel("she-discrete"), n=20_000, rng=1)
    assert row.holds and row.exact.holds
    controls = audit.negative_controls()
    sampler = audit.audit_channel(controls["control:she-discrete-sampler"], n=20_000, rng=2)
    assert sampler.exact.holds and not sampler.empirical.holds and sampler.as_expected
