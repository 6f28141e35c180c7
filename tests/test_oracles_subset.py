"""Subset selection: the variance-optimal size, the exact law, the exact sampler, the server."""

import json
import math
from itertools import combinations

import numpy as np
import pytest
from scipy.stats import chisquare

from _merging import merge_in_order
from fastldp.oracles import _laws as laws
from fastldp.audit.exact import audit_law
from fastldp.oracles import GRR, SubsetSelection
from fastldp.oracles import subset as ss_module
from fastldp.oracles.subset import (optimal_subset_size, random_subsets, row_popcounts,
                                    subset_held_variance, subset_variance)

DOMAINS = [2, 3, 4, 5, 6, 7, 10, 16, 33, 64, 100, 257, 1000, 4096]
BUDGETS = [1e-3, 0.01, 0.1, 0.3, 0.5, 0.7, 1.0, 1.5, 2.0, 3.0, 4.0, 5.0, 8.0, 12.0, 30.0, 100.0,
           700.0]


def make(D=6, eps=1.0, **kw):
    kw.setdefault("codebook_seed", 3)
    kw.setdefault("n_threads", 1)
    return SubsetSelection(domain_size=D, epsilon=eps, **kw)


def _as_int(rows, D):
    """Each packed row as the integer whose bit v is symbol v."""
    bits = np.unpackbits(rows, axis=1, bitorder="little")[:, :D].astype(np.int64)
    return bits @ (1 << np.arange(D))


# ---------------------------------------------------------------- the subset size
@pytest.mark.parametrize("D", DOMAINS)
def test_the_default_size_is_the_argmin_of_the_exact_variance_over_every_size(D):
    eps = np.array(BUDGETS)
    k = np.arange(1, D)
    table = subset_variance(D, eps[:, None], k[None, :])  # (budgets, sizes)
    want = k[np.argmin(table, axis=1)]                     # first minimum: the smaller size
    got = optimal_subset_size(D, eps)
    np.testing.assert_array_equal(got, want)
    assert got.dtype == np.int64
    # one budget at a time and through the oracle: the same sizes
    for e, w in zip(eps, want):
        assert int(optimal_subset_size(D, e)) == w
        assert int(make(D, e).subset_sizes(np.array([e]))[0]) == w
    # e^eps >= D: the variance grows with k (GRR)
    assert (got[np.exp(eps) >= D] == 1).all()


@pytest.mark.parametrize("D", [1000, 4096, 100_000])
def test_the_default_size_is_about_d_over_e_eps_plus_one(D):
    eps = np.array([0.25, 0.5, 1.0, 2.0, 4.0])
    k = optimal_subset_size(D, eps)
    approx = D / (np.exp(eps) + 1)
    assert np.all(np.abs(k - approx) <= 2), (k, approx)


def test_the_variance_formulas_are_those_of_p_and_q():
    for D in (2, 5, 64, 1000):
        for k in sorted(k for k in {1, 2, D // 3, D - 1} if 1 <= k <= D - 1):
            o = make(D, None, subset_size=k)
            eps = np.array([0.05, 0.5, 1.0, 3.0, 9.0])
            p, q = o._pq(eps)
            np.testing.assert_allclose(o.variances(eps), q * (1 - q) / (p - q) ** 2, rtol=1e-9)
            np.testing.assert_allclose(o.held_variances(eps), p * (1 - p) / (p - q) ** 2,
                                       rtol=1e-9)
            e = np.exp(eps)
            np.testing.assert_allclose(p, k * e / (k * e + D - k), rtol=1e-13)
            np.testing.assert_allclose(
                q, k * ((k - 1) * e + D - k) / ((k * e + D - k) * (D - 1)), rtol=1e-13)
    # k = 1 is GRR
    eps = np.array([0.3, 1.0, 4.0])
    for D in (2, 7, 50):
        np.testing.assert_allclose(subset_variance(D, eps, 1),
                                   GRR(domain_size=D, epsilon=None).variances(eps), rtol=1e-12)
        np.testing.assert_allclose(subset_held_variance(D, eps, 1),
                                   GRR(domain_size=D, epsilon=None).held_variances(eps),
                                   rtol=1e-12)


def test_extreme_budgets_stay_finite_or_are_refused():
    o = make(100, 700.0)
    assert np.isfinite(o.variances(np.array([700.0]))).all()
    with pytest.raises(ValueError, match="'epsilon' parameter of SubsetSelection"):
        make(100, 1e-300)
    big = make(100, None, subset_size=99)
    assert np.isfinite(big.variances(np.array([700.0]))).all()  # p' without overflow
    p, q = big._pq(np.array([700.0]))
    assert p[0] == 1.0 and q[0] == pytest.approx(98 / 99)


# ---------------------------------------------------------------- the exact law
@pytest.mark.parametrize("subset_size", [None, 1, 2, 3, 5])
@pytest.mark.parametrize("eps", [0.3, 1.0, 2.5])
def test_channel_likelihood_ratio_is_exactly_e_eps(eps, subset_size):
    o = make(6, None, subset_size=subset_size)
    law = o.channel(eps)
    k = int(o.subset_sizes(np.array([eps]))[0])
    np.testing.assert_allclose(law.sum(axis=1), 1.0, rtol=1e-12)
    sizes = np.array([bin(y).count("1") for y in range(2**6)])
    assert not law[:, sizes != k].any()  # only sets of k symbols
    live = law[:, sizes == k]
    assert (live > 0).all()
    ratio = (live.max(axis=0) / live.min(axis=0)).max()
    assert ratio <= math.exp(eps) * (1 + 1e-12)
    assert ratio == pytest.approx(math.exp(eps), rel=1e-12)


@pytest.mark.parametrize("k", [1, 2, 3, 4])
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_the_audit_law_is_exact_at_eps_and_matches_the_channel(eps, k):
    law = laws.subset_law(5, eps, k)
    assert len(law.outputs) == math.comb(5, k)
    res = audit_law(law, eps)
    assert res.holds and abs(res.epsilon_audited - eps) < 1e-13
    assert not audit_law(law, eps * (1 - 1e-9)).holds
    own = make(5, None, subset_size=k).channel(eps)
    cols = [sum(b << v for v, b in enumerate(t)) for t in law.outputs]
    np.testing.assert_allclose(law.probs[0], own[:, cols], rtol=1e-14, atol=0)


@pytest.mark.parametrize("subset_size", [None, 2, 4])
@pytest.mark.parametrize("eps", [0.4, 2.0])
def test_exact_mean_and_variance_of_one_report(eps, subset_size):
    # every output y of every input x: E[c(v)] = [x = v]; the second moments are
    # variances() off the held symbol and held_variances() on it
    o = make(6, None, subset_size=subset_size)
    law = o.channel(eps)
    reports = o.pack_outputs(np.arange(2**6))
    k = int(o.subset_sizes(np.array([eps]))[0])
    live = row_popcounts(reports) == k
    one = np.ones(1)
    c = np.stack([o.aggregate(reports[y:y + 1], np.array([eps]), np.zeros(1, np.uint64), one)
                  for y in np.flatnonzero(live)])
    mean = law[:, live] @ c
    var = law[:, live] @ c**2 - mean**2
    np.testing.assert_allclose(mean, np.eye(6), atol=1e-12)
    off = ~np.eye(6, dtype=bool)
    np.testing.assert_allclose(var[off], o.variances(np.array([eps]))[0], rtol=1e-10)
    np.testing.assert_allclose(np.diag(var), o.held_variances(np.array([eps]))[0], rtol=1e-10)


# ---------------------------------------------------------------- the sampler
@pytest.mark.parametrize("kernel", [False, True])
@pytest.mark.parametrize("t", [0, 1, 2, 3, 4, 6])
def test_random_subsets_are_uniform_over_the_sets_without_the_excluded_symbol(t, kernel,
                                                                              monkeypatch):
    # kernel=True runs the independent-bits stage on a tiny domain (threshold 1, a small
    # margin, so that rows over t are drawn again and the rounds top the others up)
    if kernel:
        monkeypatch.setattr(ss_module, "BERNOULLI_MIN", 1)
        monkeypatch.setattr(ss_module, "MARGIN", 0.5)
    D, x, n = 7, 3, 30_000
    rows = random_subsets(D, np.full(n, t), np.full(n, x), np.random.default_rng(t))
    assert rows.shape == (n, 1) and rows.dtype == np.uint8
    assert (row_popcounts(rows) == t).all()
    assert not (rows[:, 0] & (1 << x)).any()
    assert not (rows[:, 0] & 0x80).any()  # the padding bit
    sets = [sum(1 << v for v in s) for s in combinations([v for v in range(D) if v != x], t)]
    index = {s: j for j, s in enumerate(sets)}
    got = np.bincount([index[int(r)] for r in rows[:, 0]], minlength=len(sets))
    if len(sets) > 1:
        assert chisquare(got).pvalue > 1e-4, got


def test_random_subsets_on_a_large_domain_have_uniform_margins():
    D, n = 300, 20_000
    rng = np.random.default_rng(5)
    sizes = rng.choice([40, 100, 150, 200, 260], n)  # the bits stage, and complements
    exclude = rng.integers(0, D, n)
    rows = random_subsets(D, sizes, exclude, np.random.default_rng(6), n_threads=2)
    assert (row_popcounts(rows) == sizes).all()
    bits = np.unpackbits(rows, axis=1, bitorder="little")[:, :D].astype(bool)
    assert not bits[np.arange(n), exclude].any()
    for size in (40, 100, 150, 200, 260):
        sel = sizes == size
        # each other symbol is in a row with probability size / (D - 1)
        hits = bits[sel].sum(axis=0)
        trials = sel.sum() - np.bincount(exclude[sel], minlength=D)
        p = size / (D - 1)
        sd = np.sqrt(trials * p * (1 - p))
        assert np.all(np.abs(hits - trials * p) < 5 * sd), size


def test_random_subsets_do_not_depend_on_the_thread_count():
    D, n = 1000, 3000
    sizes = np.random.default_rng(1).integers(0, D, n)
    exclude = np.random.default_rng(2).integers(0, D, n)
    a = random_subsets(D, sizes, exclude, np.random.default_rng(3), n_threads=1)
    b = random_subsets(D, sizes, exclude, np.random.default_rng(3), n_threads=2)
    assert a.tobytes() == b.tobytes()
    assert (row_popcounts(a) == sizes).all()


@pytest.mark.parametrize("subset_size", [None, 3])
def test_sampler_draws_from_the_channel(subset_size):
    o = make(6, 1.2, subset_size=subset_size)
    n, x = 40_000, 2
    reports = o.privatize(np.full(n, x), rng=0)
    law = o.channel(1.2)[x]
    counts = np.bincount(_as_int(reports, 6), minlength=2**6)
    live = law > 0
    assert counts[~live].sum() == 0
    assert chisquare(counts[live], n * law[live]).pvalue > 1e-4


def test_reports_at_4096_symbols_hold_exactly_k_symbols_and_the_input_at_rate_p():
    o = make(4096, 1.0, n_threads=2)
    k = int(o.subset_sizes(np.array([1.0]))[0])
    assert abs(k - 4096 / (math.e + 1)) < 2
    n = 4000
    x = np.random.default_rng(0).integers(0, 4096, n)
    rows = o.privatize(x, rng=1)
    assert rows.shape == (n, 512) and (row_popcounts(rows) == k).all()
    held = (rows[np.arange(n), x >> 3] >> (x & 7)) & 1
    p = float(o._pq(np.array([1.0]))[0][0])
    assert abs(held.mean() - p) < 5 * math.sqrt(p * (1 - p) / n)


# ---------------------------------------------------------------- the server
def test_estimate_equals_the_per_report_sum_with_personal_budgets():
    o = make(20, None)
    rng = np.random.default_rng(7)
    n = 500
    eps = rng.uniform(0.2, 4.0, n)
    x = rng.integers(0, 20, n)
    reports = o.privatize(x, epsilons=eps, rng=8)
    k = o.subset_sizes(eps)
    assert len(np.unique(k)) > 3 and (row_popcounts(reports) == k).all()
    bits = np.unpackbits(reports, axis=1, bitorder="little")[:, :20]
    p, q = o._pq(eps)
    per = (bits - q[:, None]) / (p - q)[:, None]
    est = o.estimate(reports, epsilons=eps)
    np.testing.assert_allclose(est.counts, per.sum(axis=0), rtol=1e-10, atol=1e-9)
    v, h = o.variances(eps), o.held_variances(eps)
    want_var = v.sum() + np.clip(est.counts, 0, n) * (h - v).sum() / n
    np.testing.assert_allclose(est.variances, want_var, rtol=1e-12)


@pytest.mark.parametrize("budgets", ["equal", "levels", "continuous"])
@pytest.mark.parametrize("mode", ["sequential", "balanced", "tree"])
def test_split_and_merge_is_bit_identical(budgets, mode):
    o = make(19, 1.0, n_threads=2)
    rng = np.random.default_rng(11)
    n = 400
    eps = {"equal": None, "levels": rng.choice([0.5, 1.0, 2.5], n),
           "continuous": rng.uniform(0.3, 3.0, n)}[budgets]
    ids = np.arange(n, dtype=np.uint64)
    y = o.privatize(rng.integers(0, 19, n), epsilons=eps, rng=rng)
    y = y.astype(object)
    y[[3, 50]] = [["x"] + [0] * 2, [0, 300, 0]]  # malformed rows in the middle
    want = o.estimate(y, epsilons=eps)
    cuts = [0, 17, 17, 150, 333, n]
    parts = [o.partial(y[a:b], None if eps is None else eps[a:b], ids[a:b])
             for a, b in zip(cuts[:-1], cuts[1:])]
    got = o.finalize(merge_in_order(o, parts, mode, seed=4))
    assert got.counts.tobytes() == want.counts.tobytes()
    assert got.variances.tobytes() == want.variances.tobytes()
    assert got.sanitization == want.sanitization and got.sanitization.n_valid == n - 2


def test_equal_personal_budgets_are_the_fixed_budget_decode_bit_for_bit():
    o = make(40, 1.5)
    y = o.privatize(np.arange(300) % 40, rng=2)
    want = o.estimate(y)
    for eps in (1.5, np.full(300, 1.5), [1.5] * 300):
        got = o.estimate(y, epsilons=eps)
        assert got.counts.tobytes() == want.counts.tobytes()
        assert got.variances.tobytes() == want.variances.tobytes()


def test_stream_params_and_report_files_round_trip(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.mechanisms import from_spec, mechanism_spec
    from fastldp.reports import decode_files, write_reports

    for o in (make(30, 1.0, codebook_seed=5), make(30, 2.0, subset_size=4, codebook_seed=5)):
        params = o.stream_params()
        assert json.loads(json.dumps(params)) == params
        assert ("subset_size" in params) == (o.subset_size is not None)
        twin = from_spec(mechanism_spec(o))
        assert type(twin) is SubsetSelection and twin.stream_params() == params
        y = o.privatize(np.arange(500) % 30, rng=3)
        path = write_reports(tmp_path / f"r{o.epsilon}.parquet", o, y, row_group_size=120)
        got, want = decode_files(twin, path), o.estimate(y)
        assert got.counts.tobytes() == want.counts.tobytes()
        assert got.variances.tobytes() == want.variances.tobytes()
    # personal budgets: the sets have several sizes but one width
    o = make(30, None, codebook_seed=6)
    eps = np.random.default_rng(1).choice([0.3, 1.0, 3.0], 600)
    y = o.privatize(np.arange(600) % 30, epsilons=eps, rng=4)
    path = write_reports(tmp_path / "personal.parquet", o, y, eps, row_group_size=200)
    got, want = decode_files(o, path), o.estimate(y, epsilons=eps)
    assert got.counts.tobytes() == want.counts.tobytes()


# ---------------------------------------------------------------- malformed reports
def test_malformed_reports_are_sanitized_publicly_and_counted():
    o = make(13, 1.0)  # 2 bytes a report, 3 padding bits
    k = int(o.subset_sizes(np.array([1.0]))[0])
    y = o.privatize(np.arange(40) % 13, rng=5)
    bad = y.copy()
    bad[0, 0] ^= np.uint8(1)                                         # one symbol more or less
    bad[1, 1] |= np.uint8(0x80)                                      # a padding bit
    bad[2] = 0                                                       # the empty set
    before = bad.copy()
    eps, ids = np.full(40, 1.0), np.arange(40, dtype=np.uint64)
    clean, rep = o.sanitize(bad, eps, ids, "t")
    assert bad.tobytes() == before.tobytes()  # the caller's array is not written
    assert rep.n_valid == 37 and rep.by_reason["out_of_range"] == 3 and not rep.wrong_dtype
    assert (row_popcounts(clean) == k).all() and not (clean[:, 1] & 0xE0).any()
    np.testing.assert_array_equal(clean[3:], y[3:])
    again, _ = o.sanitize(bad, eps, ids, "t")
    np.testing.assert_array_equal(clean, again)  # public: fixed by seed and identity
    # other dtypes: strings, None, fractions, bytes out of range, NaN
    obj = y.astype(object)
    obj[5, 0], obj[6, 1], obj[7, 0], obj[8, 1], obj[9, 0] = "x", None, 2.5, 300, np.nan
    est = o.estimate(obj)
    assert est.sanitization.by_reason == {"non_numeric": 2, "non_integer": 2,
                                          "out_of_range": 1}
    assert est.sanitization.wrong_dtype and est.n == 40
    with pytest.raises(ValueError, match=r"'reports' parameter of SubsetSelection.estimate must "
                                         r"be a \(40, 2\) uint8 array"):
        o.estimate(y[:, :1])


def test_public_subsets_have_the_requested_sizes_and_spread_over_symbols():
    o = make(50, None, codebook_seed=9)
    ids = np.arange(4000, dtype=np.uint64)
    sizes = np.random.default_rng(0).integers(1, 50, 4000)
    rows = o.public_subsets(ids, sizes)
    assert (row_popcounts(rows) == sizes).all()
    bits = np.unpackbits(rows, axis=1, bitorder="little")[:, :50]
    freq = bits.sum(axis=0) / (sizes.sum() / 50)
    assert np.all(np.abs(freq - 1) < 0.1)
    assert o.public_subsets(ids[:5], sizes[:5]).tobytes() == rows[:5].tobytes()


# ---------------------------------------------------------------- parameters, formats
@pytest.mark.parametrize("bad,exc", [(0, ValueError), (6, ValueError), (1.5, TypeError),
                                     (True, TypeError), ("2", TypeError)])
def test_subset_size_is_checked(bad, exc):
    with pytest.raises(exc, match="'subset_size' parameter of SubsetSelection"):
        make(6, 1.0, subset_size=bad)


def test_repr_and_params_show_a_given_subset_size():
    assert repr(make(6, 1.0)) == "SubsetSelection(domain_size=6, epsilon=1.0, codebook_seed=3)"
    o = make(6, 1.0, subset_size=2)
    assert repr(o) == ("SubsetSelection(domain_size=6, epsilon=1.0, subset_size=2, "
                       "codebook_seed=3)")
    assert SubsetSelection(**o.stream_params()).subset_sizes(np.array([5.0]))[0] == 2


def test_symbol_lists_round_trip():
    o = make(20, None)
    eps = np.array([0.2, 1.0, 3.0, 6.0] * 5)
    rows = o.privatize(np.arange(20), epsilons=eps, rng=1)
    sym = o.subsets(rows)
    k = o.subset_sizes(eps)
    assert sym.shape == (20, k.max()) and ((sym >= 0).sum(axis=1) == k).all()
    padded = np.where(sym >= 0, sym, 99 + np.arange(sym.shape[1]))
    assert (np.diff(padded, axis=1) > 0).all()  # increasing, then -1
    assert o.pack_subsets(sym).tobytes() == rows.tobytes()
    with pytest.raises(ValueError, match="distinct symbols"):
        o.pack_subsets([[1, 1, -1]])
    with pytest.raises(ValueError, match=r"symbols in \[0, 20\)"):
        o.pack_subsets([[1, 20]])


# ---------------------------------------------------------------- variances by simulation
@pytest.mark.slow
@pytest.mark.parametrize("eps", [0.5, 2.0])
def test_per_report_variances_by_simulation(eps):
    """The sample variance of ``c(v)`` over ``N`` reports against the formulas.

    ``c(v) = (b_v - q') / (p' - q')`` is an affine map of a Bernoulli(``r``)
    bit (``r = q'`` off the held symbol, ``p'`` on it), so its sample
    variance is ``N / (N - 1) r^ (1 - r^) / (p' - q')^2`` with ``r^`` the
    bit's frequency, and has relative standard deviation
    ``sqrt((kappa - 1) / N)``, ``kappa - 1 = (1 - 4 r (1 - r)) / (r (1 - r))``
    (the bit's kurtosis less one). Here ``r >= 0.1``, so ``kappa - 1 <= 7.2``
    and ``N = 10^6`` reports give at most 0.27% per symbol: the 1.5%
    tolerance of each symbol is 5.6 standard deviations. The mean over the
    63 symbols not held moves far less (every set has the same size, so
    their frequencies nearly sum to a constant): its 1% tolerance resolves
    a 2% error of the formula. On the held symbol ``r = p'`` is near 1/2 and
    the relative standard deviation is below 0.05%.
    """
    D, x, N = 64, 5, 1_000_000
    o = make(D, eps, n_threads=2)
    rng = np.random.default_rng(21)
    ones = np.zeros(D)
    for _ in range(4):
        rows = o.privatize(np.full(N // 4, x), rng=rng)
        ones += np.unpackbits(rows, axis=1, bitorder="little")[:, :D].sum(axis=0)
    p, q = (float(v[0]) for v in o._pq(np.array([eps])))
    assert q > 0.1 and 0.4 < p < 0.6
    freq = ones / N
    var = N / (N - 1) * freq * (1 - freq) / (p - q) ** 2   # the sample variance of c(v)
    sigma2 = float(o.variances(np.array([eps]))[0])
    held = float(o.held_variances(np.array([eps]))[0])
    others = np.delete(np.arange(D), x)
    assert abs(var[x] / held - 1) < 0.01
    assert np.all(np.abs(var[others] / sigma2 - 1) < 0.015)
    assert abs(var[others].mean() / sigma2 - 1) < 0.01
    # and the means: 1 at the held symbol, 0 elsewhere, within 5 sd
    mean = (freq - q) / (p - q)
    assert abs(mean[x] - 1) < 5 * math.sqrt(held / N)
    assert np.all(np.abs(mean[others]) < 5 * math.sqrt(sigma2 / N))



@pytest.mark.slow
def test_count_variance_with_personal_budgets_by_repetition():
    """``Var[count(v)] = sum_i sigma_i^2 + sum_{i holds v} (held_i - sigma_i^2)`` over repetitions.

    With ``R`` repetitions the sample variance of a count has relative
    standard deviation about ``sqrt(2 / R)`` (the count is nearly normal);
    pooled over the ``D`` symbols (independent enough: the reports are),
    ``R = 2,000`` gives ``sqrt(2 / (R D)) = 0.8%`` for ``D = 16``; the 3%
    tolerance is 3.9 standard deviations and resolves a 2% error of the
    per-symbol formula only in aggregate, so the per-report test above is
    the sharp one.
    """
    D, n, R = 16, 400, 2_000
    o = make(D, None, n_threads=1)
    rng = np.random.default_rng(31)
    eps = rng.choice([0.5, 1.0, 3.0], n)
    x = rng.integers(0, D, n)
    counts = np.empty((R, D))
    for r in range(R):
        counts[r] = o.estimate(o.privatize(x, epsilons=eps, rng=rng), epsilons=eps).counts
    truth = np.bincount(x, minlength=D)
    v, h = o.variances(eps), o.held_variances(eps)
    want = v.sum() + np.array([(h - v)[x == s].sum() for s in range(D)])
    ratio = counts.var(axis=0, ddof=1) / want
    assert abs(ratio.mean() - 1) < 0.03
    assert np.all(np.abs(counts.mean(axis=0) - truth) < 5 * np.sqrt(want / R))
