"""Apple's CMS and HCMS: exact privacy, the server, exact moments, streaming, files, junk."""

import math

import numpy as np
import pytest
from scipy.linalg import hadamard
from scipy.stats import binom, chisquare

from _merging import merge_in_order
from fastldp import audit
from fastldp._kernels._hadamard import fwht
from fastldp._kernels._olh import olh_buckets
from fastldp.oracles import _laws as laws
from fastldp.audit.exact import audit_law
from fastldp.oracles import CMS, HCMS, FrequencyEstimate, SketchEstimate
from fastldp.oracles.cms import _GROUP_MIN, fwht_rows

SKETCHES = [CMS, HCMS]
NAME = lambda cls: cls.__name__  # noqa: E731


def make(cls, D=5, eps=1.0, k=2, m=4, seed=3, **kw):
    kw.setdefault("n_threads", 1)
    return cls(domain_size=D, epsilon=eps, n_rows=k, n_columns=m, codebook_seed=seed, **kw)


def c_of(cls, eps):
    """Apple's c_eps (at eps / 2 for CMS), from its definition."""
    e = math.exp(eps / 2 if cls is CMS else eps)
    return (e + 1) / (e - 1)


def report_of_output(o, col):
    """The report of column ``col`` of ``o.channel()``."""
    if isinstance(o, CMS):
        j, word = divmod(col, 2**o.n_columns)
        return np.array([[j, word]], dtype=np.int64)
    cell, b = divmod(col, 2)
    j, l = divmod(cell, o.n_columns)
    return np.array([[j, l, 2 * b - 1]], dtype=np.int64)


def law_of(o, eps):
    law = laws.cms_law if isinstance(o, CMS) else laws.hcms_law
    return law(eps, o.n_columns, o.hash_table())


# ---------------------------------------------------------------- privacy
@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
@pytest.mark.parametrize("eps", [0.2, 1.0, 2.5, 6.0])
@pytest.mark.parametrize("seed", [0, 1, 2])
def test_likelihood_ratio_over_every_output_is_exactly_e_eps(cls, eps, seed):
    o = make(cls, eps=eps, seed=seed, k=3)
    law = o.channel(eps)
    n_out = 3 * 2**4 if cls is CMS else 3 * 4 * 2
    assert law.shape == (5, n_out)
    np.testing.assert_allclose(law.sum(axis=1), 1.0, rtol=1e-12)
    ratio = (law.max(axis=0) / law.min(axis=0)).max()
    assert ratio <= math.exp(eps) * (1 + 1e-12)
    assert ratio == pytest.approx(math.exp(eps), rel=1e-12)


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_exact_audit_in_rationals_holds_at_eps_and_fails_just_below(cls, eps):
    o = make(cls, eps=eps)
    law = law_of(o, eps)
    at = audit_law(law, eps)
    assert at.holds and abs(at.epsilon_audited - eps) < 1e-13
    assert not audit_law(law, eps * (1 - 1e-9)).holds
    # negative control: the channel of 1.5 eps claimed as eps
    assert not audit_law(law_of(o, 1.5 * eps), eps).holds


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_the_audit_law_is_the_oracles_own_channel(cls):
    o = make(cls, k=3)
    for eps in (0.3, 1.3, 4.0):
        np.testing.assert_allclose(law_of(o, eps).probs[0], o.channel(eps), rtol=1e-13, atol=0)


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_personal_budgets_keep_the_sketch_and_meet_their_own_eps(cls):
    o = make(cls, eps=2.0)
    for eps in (0.3, 1.0, 3.0):
        law = o.channel(eps)
        assert (law.max(axis=0) / law.min(axis=0)).max() == pytest.approx(math.exp(eps), rel=1e-12)


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_sampler_draws_from_the_channel(cls):
    o = make(cls)
    n, x = 100_000, 3
    reports = o.privatize(np.full(n, x), rng=0)
    assert reports.dtype == np.int64 and reports.shape == (n, 2 if cls is CMS else 3)
    if cls is CMS:
        cols = reports[:, 0] * 16 + reports[:, 1]
    else:
        cols = 2 * (reports[:, 0] * 4 + reports[:, 1]) + (reports[:, 2] > 0)
    counts = np.bincount(cols, minlength=o.channel(1.0).shape[1])
    assert chisquare(counts, n * o.channel(1.0)[x]).pvalue > 1e-4
    # the test bites: the same draws are far from the law of 1.5 eps
    assert chisquare(counts, n * o.channel(1.5)[x]).pvalue < 1e-10


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_registry_audits_the_sketch_and_catches_its_controls(cls):
    name = cls.__name__.lower()
    row = audit.audit_channel(audit.get_channel(name, 1.0), n=20_000, rng=1)
    assert row.holds and row.exact.holds and abs(row.exact.epsilon_audited - 1.0) < 1e-13
    controls = audit.negative_controls(1.0)
    for control in (f"control:{name}@1.5eps", f"control:{name}-sampler"):
        row = audit.audit_channel(controls[control], n=20_000, rng=2)
        assert not row.holds and row.as_expected, control
    row = audit.audit_channel(controls[f"control:{name}-sampler"], n=20_000, rng=2)
    assert row.exact.holds and not row.empirical.holds  # only the sampler check sees it


# ---------------------------------------------------------------- hashes and layout
@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_hash_functions_are_the_olh_hash_of_the_row_index(cls):
    o = make(cls, D=9, k=7, m=8, seed=11)
    table = o.hash_table()
    assert table.shape == (7, 9)
    for j in range(7):
        np.testing.assert_array_equal(
            table[j], olh_buckets(11, np.full(9, j, np.uint64), np.arange(9), np.full(9, 8)))


@pytest.mark.parametrize("m", [2, 5, 63, 64, 65, 130])
def test_cms_reports_pack_signs_into_words(m):
    o = make(CMS, m=m, k=3)
    rng = np.random.default_rng(m)
    rows = rng.integers(0, 3, 50)
    signs = rng.choice(np.array([-1, 1], dtype=np.int8), (50, m))
    reports = o.pack_reports(rows, signs)
    assert reports.shape == (50, 1 + (m + 63) // 64) == (50, o.report_width)
    back_rows, back_signs = o.unpack_reports(reports)
    np.testing.assert_array_equal(back_rows, rows)
    np.testing.assert_array_equal(back_signs, signs)
    # sign l is bit l % 64 of word l // 64 (1 for +1)
    l = m - 1
    bit = (reports[:, 1 + l // 64].view(np.uint64) >> np.uint64(l % 64)) & np.uint64(1)
    np.testing.assert_array_equal(bit.astype(np.int8) * 2 - 1, signs[:, l])
    with pytest.raises(ValueError, match="'signs' parameter of CMS.pack_reports"):
        o.pack_reports(rows, np.zeros((50, m)))
    with pytest.raises(ValueError, match="'rows' parameter"):
        o.pack_reports(rows + 3, signs)


def test_cms_client_is_sue_over_the_hashed_buckets():
    # the held coordinate is +1 with e^(eps/2) / (1 + e^(eps/2)), the others with 1 / (1 + ...)
    o = make(CMS, D=6, eps=2.0, k=4, m=70)
    n = 40_000
    rows, signs = o.unpack_reports(o.privatize(np.full(n, 2), rng=1))
    held = o.hash_table()[rows, 2]
    plus = signs == 1
    at_held = plus[np.arange(n), held]
    p, q = math.e / (1 + math.e), 1 / (1 + math.e)
    assert abs(at_held.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)
    others = plus.sum() - at_held.sum()
    assert abs(others / (n * 69) - q) < 5 * math.sqrt(q * (1 - q) / (n * 69))
    assert np.bincount(rows, minlength=4).min() > n / 4 - 5 * math.sqrt(n)


# ---------------------------------------------------------------- Apple's server
def apple_server(o, reports, eps):
    """Apple's Algorithms 2 and 4 as pure-ldp writes them: per report, then per candidate."""
    k, m = o.n_rows, o.n_columns
    M = np.zeros((k, m))
    rows_of = np.zeros(k)
    if isinstance(o, CMS):
        c = c_of(CMS, eps)
        rows, signs = o.unpack_reports(reports)
        for j, v in zip(rows, signs):
            M[j] += k * ((c / 2) * v + 0.5)
            rows_of[j] += 1
    else:
        c = c_of(HCMS, eps)
        for j, l, w in reports:
            M[j, l] += k * c * w
        M = M @ hadamard(m).T
    return M, rows_of


def apple_count(o, M, n, candidates):
    k, m = M.shape
    out = []
    for d in candidates:
        h = olh_buckets(o.codebook_seed, np.arange(k, dtype=np.uint64), np.full(k, d),
                        np.full(k, m))
        out.append((m / (m - 1)) * ((1 / k) * sum(M[j, h[j]] for j in range(k)) - n / m))
    return np.array(out)


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
@pytest.mark.parametrize("shape", [(7, 16), (3, 64), (5, 128)])
def test_estimate_is_apples_server(cls, shape):
    k, m = shape
    o = make(cls, D=40, eps=1.5, k=k, m=m, seed=8)
    x = np.random.default_rng(2).integers(0, 40, 700)
    reports = o.privatize(x, rng=3)
    est = o.estimate(reports)
    assert isinstance(est, SketchEstimate) and isinstance(est, FrequencyEstimate)
    M, rows_of = apple_server(o, reports, 1.5)
    want = apple_count(o, M, 700, range(40))
    np.testing.assert_allclose(est.counts, want, rtol=1e-10, atol=1e-8)
    if cls is CMS:  # Apple's per-row term k (1 - c) n_j / 2, replaced by its mean (1 - c) n / 2
        c = c_of(CMS, 1.5)
        M = M - (k * (1 - c) * rows_of / 2)[:, None] + (1 - c) * 700 / 2
    np.testing.assert_allclose(est.sketch, M, rtol=1e-10, atol=1e-8)
    # any candidate, not only the symbols
    far = [40, 10**6, 2**40 + 3]
    np.testing.assert_allclose(est.count_of(far), apple_count(o, M, 700, far), rtol=1e-10,
                               atol=1e-8)
    np.testing.assert_allclose(est.count_of(np.arange(40)), est.counts, rtol=1e-12, atol=1e-9)
    np.testing.assert_allclose(est.frequency_of([3, 40]), est.count_of([3, 40]) / 700)


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_personal_budgets_are_the_per_report_sum(cls):
    o = make(cls, D=12, eps=None, k=5, m=16, seed=4)
    rng = np.random.default_rng(5)
    n = 400
    x, eps = rng.integers(0, 12, n), rng.uniform(0.3, 3.0, n)
    reports = o.privatize(x, epsilons=eps, rng=6)
    table = o.hash_table()
    r = 16 / 15
    if cls is CMS:
        rows, signs = o.unpack_reports(reports)
        s = signs[np.arange(n)[:, None], table[rows]]  # (n, D): the sign at h_j(v)
        c = 1 / np.tanh(eps / 4)
        per = r * ((c / 2)[:, None] * s + 0.5 - 1 / 16)
    else:
        j, l, w = reports.T
        H = hadamard(16)
        c = 1 / np.tanh(eps / 2)
        per = r * ((c * w)[:, None] * H[l[:, None], table[j]] - 1 / 16)
    est = o.estimate(reports, epsilons=eps)
    np.testing.assert_allclose(est.counts, per.sum(axis=0), rtol=1e-10, atol=1e-9)
    M = est.sketch
    np.testing.assert_allclose(est.count_of(np.arange(12)), est.counts, rtol=1e-10, atol=1e-9)
    assert M.shape == (5, 16)


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_equal_budgets_are_the_fixed_budget_decode_bit_for_bit(cls):
    o = make(cls, D=30, eps=1.2, k=8, m=32)
    reports = o.privatize(np.arange(500) % 30, rng=1)
    want = o.estimate(reports)
    for eps in (1.2, np.full(500, 1.2)):
        got = o.estimate(reports, epsilons=eps)
        assert got.counts.tobytes() == want.counts.tobytes()
        assert got.sketch.tobytes() == want.sketch.tobytes()
    # the personal-budget path gives the same numbers up to rounding
    twin = make(cls, D=30, eps=None, k=8, m=32)
    other = twin.estimate(reports, epsilons=np.full(500, 1.2))
    np.testing.assert_allclose(other.counts, want.counts, rtol=1e-10, atol=1e-9)
    np.testing.assert_allclose(other.sketch, want.sketch, rtol=1e-10, atol=1e-8)


def _layouts(cls, reports):
    """The same reports as every integer layout the one-pass path reads."""
    out = {"int64": reports, "fortran": np.asfortranarray(reports),
           "uint64": reports.view(np.uint64), "strided": np.repeat(reports, 2, axis=0)[::2]}
    if cls is HCMS:  # small integers fit narrower types (CMS's sign words do not)
        out["int8"] = reports.astype(np.int8)
    return out


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_one_pass_estimate_is_finalize_of_the_partial_bit_for_bit(cls):
    """estimate() counts clean equal-budget reports in one kernel pass: every field equals
    finalize(partial()) exactly, for every integer layout; one illegal report (a row index
    outside [0, k), or at 2**63 and above in a uint64 array) goes the sanitizing way."""
    o = make(cls, D=40, eps=1.3, k=8, m=128 if cls is HCMS else 100, seed=4)
    reports = o.privatize(np.arange(900) % 40, rng=2)
    clean = o.finalize(o.partial(reports))
    for name, r in _layouts(cls, reports).items():
        got, want = o.estimate(r), o.finalize(o.partial(r))
        assert isinstance(got, SketchEstimate), name
        for field in ("counts", "variances", "sketch"):
            assert getattr(got, field).tobytes() == getattr(want, field).tobytes(), (name, field)
        assert got.sanitization == want.sanitization and got.n == 900 and got.privacy == want.privacy
        # HCMS's omega = -1 as uint64 is 2**64 - 1: out of range, as sanitize reads it
        legal = not (cls is HCMS and name == "uint64")
        assert (got.counts.tobytes() == clean.counts.tobytes()) == legal, name
        assert (got.sanitization.n_valid == 900) == legal, name
    bad = reports.copy()
    bad[5, 0] = o.n_rows
    huge = reports.view(np.uint64).copy()
    huge[7, 0] = np.uint64(2**63 + 1)
    minus = int((reports[:, 2] == -1).sum()) if cls is HCMS else 0  # as uint64: out of range
    for r, illegal in ((bad, 1), (huge, 1 + minus - int(cls is HCMS and reports[7, 2] == -1))):
        got = o.estimate(r)
        ref = o.finalize(o.partial(r))
        assert got.sanitization.by_reason["out_of_range"] == illegal
        assert got.sanitization == ref.sanitization
        assert got.counts.tobytes() == ref.counts.tobytes()
        assert got.sketch.tobytes() == ref.sketch.tobytes()
    with pytest.raises(ValueError, match="identities"):  # checked as the partial checks them
        o.estimate(reports, identities=np.arange(3))


def test_fwht_rows_is_the_kernel_per_row():
    rng = np.random.default_rng(0)
    for m in (1, 2, 8, 64, 128, 512):  # vectorized below 128 columns, per row from 128
        t = rng.standard_normal((5, m))
        want = np.stack([fwht(np.ascontiguousarray(row)) for row in t])
        np.testing.assert_array_equal(fwht_rows(t), want)
        if m > 1:
            np.testing.assert_allclose(fwht_rows(t), t @ hadamard(m), rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("k,n", [(3, 2000), (500, 300)])  # per-row counts, then unpacked sums
def test_both_bit_count_paths_are_exact(k, n, weighted):
    o = make(CMS, D=50, k=k, m=100, seed=2)
    rng = np.random.default_rng(k)
    reports = o.privatize(rng.integers(0, 50, n), rng=1)
    rows, signs = o.unpack_reports(reports)
    assert (n >= _GROUP_MIN * np.unique(rows).shape[0]) == (k == 3)
    w = rng.integers(1, 2**20, n).astype(np.float64) if weighted else None
    want = np.zeros((k, 100))
    np.add.at(want, rows, (signs > 0) * (1.0 if w is None else w[:, None]))
    got = o._bit_sums(rows, o._packed_bits(reports), w)
    assert got.dtype == (np.float64 if weighted else np.int64)
    np.testing.assert_array_equal(got.reshape(k, 100), want)


# ---------------------------------------------------------------- moments
@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
@pytest.mark.parametrize("eps", [0.5, 2.0])
@pytest.mark.parametrize("seed", [0, 7])
def test_exact_moments_by_enumerating_every_output(cls, eps, seed):
    # E[c(v) | x] and Var[c(v) | x] over every output, the server's own decode of each
    # (aggregate on the one report), against the closed forms of exact_moments
    o = make(cls, D=5, eps=eps, k=3, m=4, seed=seed)
    law = o.channel(eps)
    C = np.stack([o.aggregate(report_of_output(o, y), np.array([eps]), np.zeros(1, np.uint64),
                              np.ones(1)) for y in range(law.shape[1])])
    mean, second = law @ C, law @ C**2
    for x in range(5):
        m_x, v_x = o.exact_moments(np.eye(5)[x], eps)
        np.testing.assert_allclose(mean[x], m_x, rtol=1e-11, atol=1e-12)
        np.testing.assert_allclose(second[x] - mean[x] ** 2, v_x, rtol=1e-11, atol=1e-11)
    assert mean[np.arange(5), np.arange(5)] == pytest.approx(1.0, rel=1e-12)  # unbiased if held
    # the counts of a population are the sums over its users
    counts = np.array([3, 0, 5, 1, 2])
    m_all, v_all = o.exact_moments(counts, eps)
    np.testing.assert_allclose(m_all, counts @ mean, rtol=1e-11, atol=1e-11)
    np.testing.assert_allclose(v_all, counts @ (second - mean**2), rtol=1e-11)


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
@pytest.mark.parametrize("k,m", [(1, 2), (3, 8), (16, 64)])
def test_reported_variances_average_the_exact_ones_over_hash_functions(cls, k, m):
    # kappa = t / k with t ~ Binomial(k, 1/m) for a pair x != v under random hashes
    o = make(cls, D=5, k=k, m=m)
    r = m / (m - 1)
    for eps in (0.5, 2.0, 5.0):
        c = c_of(cls, eps)
        t = np.arange(k + 1)
        pmf = binom.pmf(t, k, 1 / m)
        kappa = t / k
        per = (r * r * (c * c - (2 * kappa - 1) ** 2) / 4 if cls is CMS
               else r * r * (c * c - kappa**2))
        e = np.array([eps])
        assert o.variances(e)[0] == pytest.approx(pmf @ per, rel=1e-12)
        held = r * r * (c * c - 1) / 4 if cls is CMS else r * r * (c * c - 1)
        assert o.held_variances(e)[0] == pytest.approx(held, rel=1e-12)
    if cls is CMS:  # the held variance is SUE's, times r^2
        h = math.exp(0.25)
        assert o.held_variances(np.array([0.5]))[0] == pytest.approx(r * r * h / (h - 1) ** 2)


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_estimate_is_unbiased_over_hash_functions(cls):
    # the exact mean of a fixed codebook, averaged over codebooks: the bias
    # r (kappa - 1/m) has mean 0 and sd r sqrt((1/m)(1 - 1/m) / k) per seed
    k, m, seeds = 4, 8, 300
    counts = np.array([40, 0, 10, 0, 25, 5])
    total = np.zeros(6)
    for s in range(seeds):
        total += make(cls, D=6, k=k, m=m, seed=1000 + s).exact_moments(counts)[0]
    r = m / (m - 1)
    sd = r * math.sqrt((1 / m) * (1 - 1 / m) / k) * np.sqrt(counts.sum() ** 2)  # worst case
    assert np.abs(total / seeds - counts).max() < 5 * sd / math.sqrt(seeds)
    # while one codebook is biased: not every symbol's exact mean is its count
    one = make(cls, D=6, k=k, m=m, seed=1000).exact_moments(counts)[0]
    assert np.abs(one - counts).max() > 1.0


def _kurtosis_two_point(mean_u):
    """mu_4 / sigma^4 of a variable taking two values, +1 w.p. (1 + mean_u) / 2."""
    pq = (1 + mean_u) * (1 - mean_u) / 4
    return (1 - 3 * pq) / pq


@pytest.mark.slow
@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_variance_of_a_report_by_simulation(cls, eps):
    # each report's estimate c(v) takes two values (r (c/2) s + const for CMS, r c omega H +
    # const for HCMS), so its sample variance over N draws has the relative variance
    # (kurtosis - 1) / N + 2 / (N (N - 1)), with the two-point kurtosis of u = s or omega H.
    # N is chosen so that 4 standard errors are at most 0.9% (asserted below 1%): a 2% error
    # in the formula is then more than 4 standard errors outside the tolerance.
    D, k, m = 6, 4, 8
    o = make(cls, D=D, eps=eps, k=k, m=m, seed=5)
    table = o.hash_table()
    c = c_of(cls, eps)
    r = m / (m - 1)
    for x in (0, 3):
        kappa = (table[:, [x]] == table).mean(axis=0)
        mean_u = (2 * kappa - 1) / c if cls is CMS else kappa / c
        worst = _kurtosis_two_point(np.abs(mean_u).max())
        N = int(math.ceil(16 * (worst - 1) / 0.009**2))
        assert N <= 1_500_000
        reports = o.privatize(np.full(N, x), rng=100 + x)
        if cls is CMS:
            rows, signs = o.unpack_reports(reports)
            u = signs[np.arange(N)[:, None], table[rows]]
            est = r * ((c / 2) * u + 0.5 - 1 / m)
        else:
            j, l, w = reports.T
            u = w[:, None] * hadamard(m)[l[:, None], table[j]]
            est = r * (c * u - 1 / m)
        _, exact = o.exact_moments(np.eye(D)[x], eps)
        # Var[s^2] / sigma^4 = (kurtosis - 1) / N + 2 / (N (N - 1)) exactly (ddof = 1)
        tol = 4 * np.sqrt((_kurtosis_two_point(mean_u) - 1) / N + 2 / (N * (N - 1.0)))
        assert tol.max() <= 0.01
        got = est.var(axis=0, ddof=1)
        assert np.all(np.abs(got / exact - 1) < tol), (x, got / exact - 1, tol)
        # and the mean: the fixed codebook's exact expectation, within 5 standard errors
        mean, _ = o.exact_moments(np.eye(D)[x], eps)
        assert np.all(np.abs(est.mean(axis=0) - mean) < 5 * np.sqrt(exact / N))


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_reported_variances_are_the_plug_in_of_the_closed_forms(cls):
    o = make(cls, D=20, eps=1.0, k=16, m=32)
    est = o.estimate(o.privatize(np.arange(1000) % 20, rng=0))
    e = np.array([1.0])
    var, held = o.variances(e)[0], o.held_variances(e)[0]
    np.testing.assert_allclose(est.variances, 1000 * var + np.clip(est.counts, 0, 1000) *
                               (held - var), rtol=1e-12)


# ---------------------------------------------------------------- streaming and files
def _case(cls, budgets, malformed, n=300):
    o = make(cls, D=25, eps=None if budgets == "personal" else 1.0, k=6, m=32, seed=9,
             n_threads=2)
    rng = np.random.default_rng(4)
    eps = rng.uniform(0.3, 3.0, n) if budgets == "personal" else None
    ids = rng.choice(2**40, n, replace=False).astype(np.uint64)
    y = o.privatize(rng.integers(0, 25, n), epsilons=eps, identities=ids, rng=rng)
    if malformed:
        y = y.astype(object)
        y[[3, 50, 51, 200], 0] = ["x", None, 2.5, 10**30]
        y[[7, 8], -1] = [np.nan, -(2**70)]
    return o, y, eps, ids


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
@pytest.mark.parametrize("budgets", ["equal", "personal"])
@pytest.mark.parametrize("malformed", [False, True])
@pytest.mark.parametrize("mode", ["sequential", "balanced", "tree"])
def test_split_and_merge_is_bit_identical(cls, budgets, malformed, mode):
    o, y, eps, ids = _case(cls, budgets, malformed)
    want = o.estimate(y, epsilons=eps, identities=ids)
    cuts = [0, 17, 17, 120, 299, 300]
    parts = [o.partial(y[a:b], None if eps is None else eps[a:b], ids[a:b])
             for a, b in zip(cuts[:-1], cuts[1:])]
    got = o.finalize(merge_in_order(o, parts, mode, seed=5))
    for field in ("counts", "variances", "sketch"):
        assert getattr(got, field).tobytes() == getattr(want, field).tobytes(), field
    assert got.sanitization == want.sanitization and got.n == 300
    assert (want.sanitization.n_valid < 300) == malformed
    state = parts[1].sums["hits"].size
    assert state == o.n_rows * o.n_columns * (1 if cls is CMS else 2)


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_stream_params_rebuild_the_server(cls):
    o = make(cls, D=25, k=6, m=32, seed=9)
    params = o.stream_params()
    assert params == {"domain_size": 25, "epsilon": 1.0, "codebook_seed": 9, "n_rows": 6,
                      "n_columns": 32}
    y = o.privatize(np.arange(100) % 25, rng=0)
    twin = cls(**params)
    assert twin.estimate(y).counts.tobytes() == o.estimate(y).counts.tobytes()
    other = cls(**{**params, "n_rows": 7})
    with pytest.raises(ValueError):
        other.finalize(o.partial(y))


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_report_file_decode_is_bit_identical(cls, tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.mechanisms import from_spec
    from fastldp.reports import ReportFile, decode_files, write_reports

    o = make(cls, D=40, eps=1.5, k=8, m=128 if cls is CMS else 64, seed=2)
    y = o.privatize(np.random.default_rng(0).integers(0, 40, 1000), rng=1)
    y[[5, 600]] = y[[5, 600]] * 0 - 1  # two malformed reports, sanitized the same way
    path = write_reports(tmp_path / "r.parquet", o, y, row_group_size=300)
    back = np.concatenate([r for r, _, _ in ReportFile(path)])
    np.testing.assert_array_equal(back, y)
    server = from_spec(ReportFile(path).spec)
    got, want = decode_files(server, path), o.estimate(y)
    assert isinstance(got, SketchEstimate)
    for field in ("counts", "variances", "sketch"):
        assert getattr(got, field).tobytes() == getattr(want, field).tobytes(), field
    assert got.sanitization == want.sanitization and got.sanitization.n_valid == 998
    # personal budgets in the file
    p = make(cls, D=40, eps=None, k=8, m=64, seed=2)
    eps = np.random.default_rng(1).choice([0.5, 1.0, 2.0], 900)
    y = p.privatize(np.arange(900) % 40, epsilons=eps, rng=2)
    path = write_reports(tmp_path / "p.parquet", p, y, eps, row_group_size=250)
    got, want = decode_files(p, path), p.estimate(y, epsilons=eps)
    assert got.counts.tobytes() == want.counts.tobytes()
    assert got.sketch.tobytes() == want.sketch.tobytes()


# ---------------------------------------------------------------- sanitization
def test_cms_sanitization_replaces_and_counts_illegal_rows():
    o = make(CMS, D=8, k=4, m=70, seed=6)  # two words, 6 bits used in the last
    y = o.privatize(np.arange(12) % 8, rng=0)
    eps, ids = np.full(12, 1.0), np.arange(12, dtype=np.uint64)
    bad = y.copy()
    bad[0, 0] = 4                 # row index outside [0, k)
    bad[1, 0] = -1
    bad[2, 2] |= 1 << 6           # a padding bit of the last word
    clean, rep = o.sanitize(bad, eps, ids, "t")
    assert rep.n_valid == 9 and rep.by_reason["out_of_range"] == 3 and not rep.wrong_dtype
    np.testing.assert_array_equal(clean[3:], y[3:])
    assert np.all((clean[:3, 0] >= 0) & (clean[:3, 0] < 4))
    assert not (clean[:3, 2] >> 6).any()          # replacements are legal rows ...
    np.testing.assert_array_equal(clean[:3], o.public_rows(ids[:3]))  # ... public, keyed
    np.testing.assert_array_equal(clean, o.sanitize(bad, eps, ids, "t")[0])
    # objects: exact Python integers are legal words (no float rounding), others counted
    obj = y.astype(object)
    obj[4, 1] = int(y[4, 1]) + 2**65     # outside [-2**63, 2**64)
    obj[5, 1] = "x"
    obj[6, 1] = 0.5
    obj[7, 0] = float("nan")
    clean, rep = o.sanitize(obj, eps, ids, "t")
    assert rep.by_reason == {"non_numeric": 1, "non_integer": 2, "out_of_range": 1}
    assert rep.n_valid == 8 and rep.wrong_dtype
    keep = [0, 1, 2, 3, 8, 9, 10, 11]
    np.testing.assert_array_equal(clean[keep], y[keep])
    # unsigned words are the same bits; floats that hold integers exactly are read exactly
    as_u = y.view(np.uint64)
    assert o.sanitize(as_u, eps, ids, "t")[0].tobytes() == y.tobytes()
    small = o.pack_reports(np.arange(12) % 4, np.ones((12, 70), dtype=np.int8))
    small[:, 1] = 12345
    clean, rep = o.sanitize(small.astype(np.float64), eps, ids, "t")
    assert rep.n_valid == 12 and clean.tobytes() == small.tobytes()
    with pytest.raises(ValueError, match=r"'reports' parameter of t must be a \(12, 3\) array"):
        o.sanitize(y[:, :2], eps, ids, "t")


def test_hcms_sanitization_replaces_and_counts_illegal_triples():
    o = make(HCMS, D=8, k=4, m=8, seed=6)
    y = o.privatize(np.arange(12) % 8, rng=0)
    eps, ids = np.full(12, 1.0), np.arange(12, dtype=np.uint64)
    bad = y.copy()
    bad[0, 0], bad[1, 1], bad[2, 2], bad[3, 2] = 4, 8, 0, 2  # j, l, a bit of 0 or 2
    clean, rep = o.sanitize(bad, eps, ids, "t")
    assert rep.n_valid == 8 and rep.by_reason["out_of_range"] == 4
    np.testing.assert_array_equal(clean[4:], y[4:])
    assert np.all((clean[:, 0] < 4) & (clean[:, 1] < 8) & (np.abs(clean[:, 2]) == 1))
    np.testing.assert_array_equal(clean, o.sanitize(bad, eps, ids, "t")[0])
    obj = y.astype(object)
    obj[4, 2], obj[5, 1], obj[6, 0] = None, 1.5, float("inf")
    clean, rep = o.sanitize(obj, eps, ids, "t")
    assert rep.by_reason == {"non_numeric": 1, "non_integer": 2, "out_of_range": 0}
    # an unsigned 2**64 - 1 is not the bit -1
    u = np.abs(y).astype(np.uint64)
    u[:, 2] = 1
    u[0, 2] = np.uint64(2**64 - 1)
    assert o.sanitize(u, eps, ids, "t")[1].n_valid == 11


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_estimate_never_crashes_on_junk_and_counts_it(cls):
    o = make(cls, D=10, k=3, m=16)
    junk = np.full((20, o.report_width), np.nan)
    est = o.estimate(junk)
    assert est.sanitization.n_valid == 0 and est.sanitization.by_reason["non_integer"] == 20
    assert np.isfinite(est.counts).all() and np.isfinite(est.sketch).all()
    empty = o.estimate(np.zeros((0, o.report_width), dtype=np.int64))
    assert empty.n == 0 and not empty.counts.any() and not empty.sketch.any()
    with pytest.raises(ValueError, match="'reports' parameter"):
        o.estimate(np.zeros((5, o.report_width + 1), dtype=np.int64))


# ---------------------------------------------------------------- API
def test_constructor_checks_its_shape():
    with pytest.raises(ValueError, match="'n_columns' parameter of HCMS must be a power of two"):
        HCMS(domain_size=5, epsilon=1.0, n_rows=2, n_columns=12)
    with pytest.raises(ValueError, match="'n_columns' parameter of CMS"):
        CMS(domain_size=5, epsilon=1.0, n_rows=2**14, n_columns=2**11)  # 2^25 cells
    with pytest.raises(ValueError, match="'n_rows' parameter of CMS"):
        CMS(domain_size=5, epsilon=1.0, n_rows=0)
    with pytest.raises(TypeError, match="'n_columns' parameter of HCMS"):
        HCMS(domain_size=5, epsilon=1.0, n_columns=8.0)
    with pytest.raises(TypeError):
        CMS(5, 1.0)
    o = CMS(domain_size=5, epsilon=1.0, codebook_seed=1)
    assert (o.n_rows, o.n_columns, o.report_width) == (256, 1024, 17)
    assert repr(o) == ("CMS(domain_size=5, epsilon=1.0, n_rows=256, n_columns=1024, "
                       "codebook_seed=1)")
    with pytest.raises(ValueError, match="'epsilon' parameter of HCMS"):
        HCMS(domain_size=5, epsilon=1e-320)


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_labels_and_candidates(cls):
    o = make(cls, D=3, eps=2.0, k=8, m=16, categories=["a", "b", "c"])
    est = o.estimate(o.privatize(["a", "c", "c"] * 100, rng=0))
    assert est.categories == ("a", "b", "c")
    np.testing.assert_allclose(est.count_of(["c", "a"]), est.counts[[2, 0]], rtol=1e-12,
                               atol=1e-9)
    np.testing.assert_allclose(est.count_of("b"), est.counts[[1]], rtol=1e-12, atol=1e-9)
    with pytest.raises(ValueError, match="'candidates' parameter.*'z'"):
        est.count_of(["z"])
    plain = make(cls)
    est = plain.estimate(plain.privatize([0, 1], rng=0))
    with pytest.raises(ValueError, match="'candidates' parameter"):
        est.count_of([-1])
    with pytest.raises(TypeError, match="'candidates' parameter"):
        est.count_of(["a"])
    assert est.frequency_of([0]).shape == (1,)


@pytest.mark.parametrize("cls", SKETCHES, ids=NAME)
def test_threads_change_nothing(cls):
    one, two = (make(cls, D=300, k=16, m=64, n_threads=t) for t in (1, 2))
    x = np.arange(30_000) % 300
    a, b = one.privatize(x, rng=4), two.privatize(x, rng=4)
    assert a.tobytes() == b.tobytes()
    assert one.estimate(a).counts.tobytes() == two.estimate(a).counts.tobytes()
    eps = np.random.default_rng(0).uniform(0.5, 2, 30_000)
    assert (one.estimate(a, epsilons=eps).counts.tobytes()
            == two.estimate(a, epsilons=eps).counts.tobytes())
