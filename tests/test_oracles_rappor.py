"""One-time RAPPOR: f from epsilon, Bloom filters against a naive hash, the exact channel and
its rational audit, the sampler, the least-squares decode against naive solvers (plain and
non-negative), its exact variances, streaming, report files, sanitization, the contract, and
the variances by simulation."""

import math
import pickle
import warnings
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from scipy import stats
from scipy.optimize import nnls

from _merging import merge_in_order
from _reference import numpy_olh_bucket
from fastldp import audit
from fastldp.oracles import _laws as laws
from fastldp.audit.exact import audit_law
from fastldp.oracles import RAPPOR, FrequencyEstimate
from fastldp.oracles.rappor import MAX_CANDIDATES
from fastldp.results import REPR_WIDTH, PrivacyStatement
from fastldp.streaming import ExactSum, Partial, merge_all

ULP = 2.0**-52


def make(D=12, eps=2.0, **kw):
    kw.setdefault("n_bits", 32)
    kw.setdefault("n_hashes", 2)
    kw.setdefault("n_cohorts", 4)
    kw.setdefault("codebook_seed", 5)
    kw.setdefault("n_threads", 1)
    return RAPPOR(domain_size=D, epsilon=eps, **kw)


def _same(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def _bits(reports, k):
    return np.unpackbits(reports, axis=1, count=k, bitorder="little").astype(bool)


# ---------------------------------------------------------------- parameters
@pytest.mark.parametrize("h", [1, 2, 4])
@pytest.mark.parametrize("eps", [0.1, 1.0, 3.0, 8.0])
def test_f_is_the_papers_function_of_epsilon(h, eps):
    o = make(eps=eps, n_hashes=h)
    f = o.f
    assert 0 < f <= 1
    # eps_inf = 2 h ln((1 - f/2) / (f/2)) (Erlingsson et al., section 4)
    assert 2 * h * math.log((1 - f / 2) / (f / 2)) == pytest.approx(eps, rel=1e-12)
    p, q = (float(v[0]) for v in o._pq(np.array([eps])))
    assert q == f / 2 and p == 1 - q


def test_bloom_filters_are_the_olh_hash_of_cohort_and_function():
    o = make(D=9, n_bits=16, n_hashes=3, n_cohorts=5, codebook_seed=11)
    for c in range(5):
        B = o.bloom_filters(c)
        for v in range(9):
            want = {numpy_olh_bucket(11, c * 3 + t, v, 16) for t in range(3)}
            assert set(np.flatnonzero(B[v])) == want
    # the design stacks the cohorts' filters, transposed
    X = o.design().toarray()
    assert X.shape == (5 * 16, 9) and set(np.unique(X)) <= {0.0, 1.0}
    for c in range(5):
        np.testing.assert_array_equal(X[c * 16:(c + 1) * 16], o.bloom_filters(c).T)


def test_cohorts_are_identity_mod_n_cohorts():
    o = make(n_cohorts=7)
    ids = np.array([0, 6, 7, 13, 2**40 + 3, 2**64 - 1], dtype=np.uint64)
    np.testing.assert_array_equal(o.cohorts(ids), [int(i) % 7 for i in ids.tolist()])


def test_parameters_are_validated():
    with pytest.raises(TypeError, match="'epsilon' parameter of RAPPOR"):
        RAPPOR(domain_size=4, epsilon=None)
    for kw, match in ((dict(n_bits=0), "'n_bits' parameter of RAPPOR"),
                      (dict(n_bits=1), r"'n_bits' parameter of RAPPOR must be an int in \[2, "),
                      (dict(n_bits=5000), "'n_bits' parameter of RAPPOR"),
                      (dict(n_hashes=0), "'n_hashes' parameter of RAPPOR"),
                      (dict(n_hashes=65), "'n_hashes' parameter of RAPPOR"),
                      (dict(n_cohorts=0), "'n_cohorts' parameter of RAPPOR"),
                      (dict(n_bits=4096, n_cohorts=5000), "'n_cohorts' parameter of RAPPOR"),
                      (dict(eps=-1.0), "'epsilon' parameter of RAPPOR"),
                      (dict(eps=700.0), r"'epsilon' parameter of RAPPOR must be at most 4 ln"),
                      (dict(D=MAX_CANDIDATES + 1), "'domain_size' parameter of RAPPOR")):
        with pytest.raises(ValueError, match=match):
            make(**kw)
    with pytest.raises(TypeError, match="'nonnegative' parameter of RAPPOR"):
        make(nonnegative="yes")
    with pytest.raises(TypeError):
        RAPPOR(4, 1.0)  # keyword-only


# ---------------------------------------------------------------- the exact channel
def _disjoint_pair(o, identity):
    B = o.bloom_filters(int(o.cohorts([identity])[0]))
    return any(B[x].sum() == o.n_hashes and B[y].sum() == o.n_hashes and not (B[x] & B[y]).any()
               for x in range(o.domain_size) for y in range(o.domain_size))


@pytest.mark.parametrize("eps", [0.5, 1.0, 3.0])
def test_channel_ratio_is_p_over_q_to_the_hamming_distance_and_at_most_e_eps(eps):
    # the audit's instance: k = 4 bits (all 16 reports), h = 2, two cohorts, D = 4
    o = audit.get_channel("rappor", eps).build(eps)
    p, q = (float(v[0]) for v in o._pq(np.array([eps])))
    for identity in range(4):
        law = o.channel(eps, identity)
        assert law.shape == (4, 16)
        np.testing.assert_allclose(law.sum(axis=1), 1.0, rtol=1e-12)
        B = o.bloom_filters(int(o.cohorts([identity])[0]))
        dist = max(int((B[x] ^ B[y]).sum()) for x in range(4) for y in range(4))
        ratio = (law.max(axis=0) / law.min(axis=0)).max()
        assert ratio == pytest.approx((p / q) ** dist, rel=1e-12)
    # the codebook realizes two disjoint filters of h bits: the edge e^eps is attained
    assert _disjoint_pair(o, 0) or _disjoint_pair(o, 1)
    # in rationals, from the binary64 p and q: (p / q)^(2h) is e^eps within a few ulps
    exact = (Fraction(p) / Fraction(q)) ** (2 * o.n_hashes)
    assert float(exact) == pytest.approx(math.exp(eps), rel=16 * ULP)


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_the_audit_law_is_the_channel_and_its_rational_audit_is_tight(eps):
    ch = audit.get_channel("rappor", eps)
    o = ch.build(eps)
    ids = np.arange(6, dtype=np.uint64)
    law = laws.rappor_law(o, eps, ids)
    for j, identity in enumerate(ids):
        cols = [sum(b << v for v, b in enumerate(bits)) for bits in law.outputs]
        np.testing.assert_allclose(law.probs[j], o.channel(eps, int(identity))[:, cols],
                                   rtol=1e-15, atol=0)
    res = audit_law(law, eps)
    assert res.holds and abs(res.epsilon_audited - eps) < 1e-13
    assert not audit_law(law, eps * (1 - 1e-9)).holds
    loud = RAPPOR(domain_size=o.domain_size, epsilon=1.5 * eps, codebook_seed=o.codebook_seed,
                  n_bits=o.n_bits, n_hashes=o.n_hashes, n_cohorts=o.n_cohorts)
    assert not audit_law(laws.rappor_law(loud, 1.5 * eps, ids), eps).holds


def test_sampler_draws_from_the_channel():
    o = make(D=5, eps=1.5, n_bits=5, n_hashes=2, n_cohorts=3, codebook_seed=2)
    n, x, c = 60_000, 3, 1
    ids = (c + 3 * np.arange(n)).astype(np.uint64)  # every identity in cohort 1
    bits = _bits(o.privatize(np.full(n, x), identities=ids, rng=4), 5)
    y = bits @ (1 << np.arange(5))
    law = o.channel(1.5, identity=c)[x]
    assert stats.chisquare(np.bincount(y, minlength=32), n * law).pvalue > 1e-4
    # the test bites: the law of another cohort (other hash functions) is rejected
    other = o.channel(1.5, identity=0)[x]
    if not np.allclose(other, law):
        assert stats.chisquare(np.bincount(y, minlength=32), n * other).pvalue < 1e-6


def test_reports_are_packed_bits_with_zero_padding_and_thread_invariant():
    o1, o2 = make(D=20, n_bits=21, n_threads=1), make(D=20, n_bits=21, n_threads=2)
    x = np.arange(3000) % 20
    y1, y2 = o1.privatize(x, rng=7), o2.privatize(x, rng=7)
    assert y1.shape == (3000, 3) and y1.dtype == np.uint8 and _same(y1, y2)
    assert not (y1[:, -1] & np.uint8(0xE0)).any()
    assert _same(o1.estimate(y1).counts, o2.estimate(y1).counts)
    # at a budget this large (q = 3.5e-19) nothing is flipped: the reports are the filters
    exact = make(D=20, n_bits=21, eps=170.0)
    ids = np.arange(3000, dtype=np.uint64)
    bits = _bits(exact.privatize(x, rng=1), 21)
    for c in range(4):
        rows = exact.cohorts(ids) == c
        np.testing.assert_array_equal(bits[rows], exact.bloom_filters(c)[x[rows]])


# ---------------------------------------------------------------- the least-squares decode
def _naive_decode(o, reports, ids):
    """The weighted least squares written out densely, cohort by cohort, with lstsq."""
    k, C, D = o.n_bits, o.n_cohorts, o.domain_size
    p, q = (float(v[0]) for v in o._pq(np.array([o.epsilon])))
    bits = _bits(reports, k)
    cohort = np.array([int(i) % C for i in ids.tolist()])
    rows, rhs = [], []
    for c in range(C):
        m = int((cohort == c).sum())
        if m == 0:
            continue
        t = (bits[cohort == c].sum(axis=0) - q * m) / (p - q)
        rows.append(math.sqrt(m) * o.bloom_filters(c).T.astype(float))
        rhs.append(t / math.sqrt(m))
    A, b = np.vstack(rows), np.concatenate(rhs)
    # the (pseudo-)inverse through the SVD of A, singular values below 1e-10 dropped
    U, S, Vt = np.linalg.svd(A, full_matrices=False)
    keep = S > 1e-10 * S[0]
    f = Vt[keep].T @ ((U[:, keep].T @ b) / S[keep])
    n = reports.shape[0]
    s2 = p * q / (p - q) ** 2
    diag = ((Vt[keep] / S[keep, None]) ** 2).sum(axis=0)
    return n * f, n * n * s2 * diag, A, b


def test_counts_and_variances_equal_the_naive_weighted_least_squares():
    o = make(D=14, eps=2.0, n_bits=24, n_cohorts=5)
    rng = np.random.default_rng(3)
    n = 3001  # cohorts of unequal sizes
    ids = rng.choice(2**30, n, replace=False).astype(np.uint64)
    y = o.privatize(rng.integers(0, 14, n), identities=ids, rng=4)
    est = o.estimate(y, identities=ids)
    counts, variances, A, b = _naive_decode(o, y, ids)
    np.testing.assert_allclose(est.counts, counts, rtol=1e-9, atol=1e-7)
    np.testing.assert_allclose(est.variances, variances, rtol=1e-9)
    assert isinstance(est, FrequencyEstimate) and est.n == n
    assert est.privacy == PrivacyStatement.local(epsilon=2.0)
    # non-negative least squares against scipy's nnls on the dense system
    nn = make(D=14, eps=2.0, n_bits=24, n_cohorts=5, nonnegative=True)
    got = nn.estimate(y, identities=ids)
    want = n * nnls(A, b, maxiter=10_000)[0]
    np.testing.assert_allclose(got.counts, want, rtol=1e-7, atol=1e-6)
    assert (got.counts >= 0).all() and got.variances is None and got.std is None
    # its KKT conditions: the gradient G f - h vanishes on the support, is >= 0 off it
    G, h = A.T @ A, A.T @ b
    grad = G @ (got.counts / n) - h
    scale = np.abs(h).max()
    assert np.all(np.abs(grad[got.counts > 0]) < 1e-8 * scale)
    assert np.all(grad[got.counts == 0] > -1e-8 * scale)


def test_the_decode_is_unbiased_when_cohorts_share_the_population_mix():
    """Feed finalize the expected bit counts (exact floats in a hand-built partial): with every
    cohort holding the population's mix the least squares returns the true counts; when the
    cohorts' mixes differ it does not (the documented model error)."""
    o = make(D=10, eps=1.5, n_bits=32, n_cohorts=4)
    p, q = (float(v[0]) for v in o._pq(np.array([1.5])))
    per_cohort = np.array([5, 0, 3, 1, 1, 2, 0, 4, 2, 2], dtype=float)  # N_c(v), each cohort

    def expected_partial(mix):
        m = mix.sum(axis=1)
        T = np.stack([o.bloom_filters(c).T.astype(float) @ mix[c] for c in range(4)])
        bits, sizes = ExactSum(4 * 32), ExactSum(4)
        bits.add((q * m[:, None] + (p - q) * T).ravel())
        sizes.add(m)
        counts = {"n": int(m.sum()), "n_valid": int(m.sum()), "reason:non_numeric": 0,
                  "reason:non_integer": 0, "reason:out_of_range": 0}
        return Partial("RAPPOR", o.stream_params(), sums={"bits": bits, "reports": sizes},
                       counts=counts, flags={"wrong_dtype": False})

    same = np.tile(per_cohort, (4, 1))
    np.testing.assert_allclose(o.finalize(expected_partial(same)).counts, 4 * per_cohort,
                               rtol=1e-10, atol=1e-9)
    skewed = same.copy()
    skewed[0], skewed[1] = per_cohort[::-1], per_cohort[::-1] * 0 + 2
    got = o.finalize(expected_partial(skewed)).counts
    assert not np.allclose(got, skewed.sum(axis=0), atol=1e-3)


def test_a_singular_design_warns_and_returns_the_minimum_norm_solution():
    o = make(D=20, eps=2.0, n_bits=4, n_cohorts=2)  # 8 equations, 20 candidates
    ids = np.arange(500, dtype=np.uint64)
    y = o.privatize(np.arange(500) % 20, rng=1)
    with pytest.warns(RuntimeWarning, match=r"rank \d+ < 20 candidates"):
        est = o.estimate(y)
    counts, variances, _, _ = _naive_decode(o, y, ids)
    np.testing.assert_allclose(est.counts, counts, rtol=1e-8, atol=1e-6)
    np.testing.assert_allclose(est.variances, variances, rtol=1e-8, atol=1e-6)
    # the factorization is cached by cohort sizes: a second decode does not warn again
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert _same(o.estimate(y).counts, est.counts)


def test_gram_is_the_weighted_product_of_the_design_exactly():
    """The Gram kernel against the sparse product X^T diag(w) X (integer cohort sizes: every
    entry an exact integer in both), with a cohort of no reports and unequal sizes."""
    import scipy.sparse as sp

    o = make(D=37, n_bits=16, n_hashes=3, n_cohorts=5)
    X = o.design()
    for m in ([0, 7, 7, 1000, 3], [2**40, 1, 0, 0, 5]):
        w = np.repeat(np.asarray(m, dtype=np.float64), o.n_bits)
        want = (X.T @ sp.diags(w) @ X).toarray()
        assert _same(o.gram(m), want)
        assert _same(make(D=37, n_bits=16, n_hashes=3, n_cohorts=5, n_threads=3).gram(m), want)


def test_factorizations_are_shared_by_the_public_design_and_cohort_sizes():
    """A fresh oracle of the same public design reuses the module's factorization (the same
    object, the same bits); another seed, other sizes or a cleared cache factorize anew; the
    rank warning is still given once per oracle."""
    from fastldp.oracles.rappor import clear_factor_cache

    clear_factor_cache()
    a, b, c = make(D=15, codebook_seed=11), make(D=15, codebook_seed=11), make(D=15, codebook_seed=12)
    ids = np.arange(400, dtype=np.uint64)
    y = a.privatize(np.arange(400) % 15, rng=3)
    ea, eb = a.estimate(y), b.estimate(y)
    m = np.bincount(a.cohorts(ids), minlength=a.n_cohorts).astype(np.float64)
    assert a._factor(m) is b._factor(m) and c._factor(m) is not a._factor(m)
    assert a._factor(m + 1) is not a._factor(m)
    assert _same(ea.counts, eb.counts) and _same(ea.variances, eb.variances)
    assert a.design() is b.design()
    clear_factor_cache()
    fresh = make(D=15, codebook_seed=11)
    ef = fresh.estimate(y)
    assert fresh._factor(m) is not a._factor(m)
    assert _same(ef.counts, ea.counts) and _same(ef.variances, ea.variances)
    # a singular design warns once per oracle, even when the factorization is shared
    for _ in range(2):
        o = make(D=20, eps=2.0, n_bits=4, n_cohorts=2)
        with pytest.warns(RuntimeWarning, match=r"rank \d+ < 20 candidates"):
            o.estimate(o.privatize(np.arange(100) % 20, rng=1))


def test_rappor_estimates_a_skewed_population():
    o = RAPPOR(domain_size=30, epsilon=3.0, codebook_seed=8)  # the defaults: k = 128, h = 2, C = 64
    assert (o.n_bits, o.n_hashes, o.n_cohorts, o.nonnegative) == (128, 2, 64, False)
    x = np.minimum(np.random.default_rng(2).zipf(1.6, 40_000) - 1, 29)
    est = o.estimate(o.privatize(x, rng=3))
    truth = np.bincount(x, minlength=30)
    assert np.all(np.abs(est.counts - truth) < 5 * est.std)


# ---------------------------------------------------------------- budgets
def test_one_budget_only():
    o = make()
    x = np.arange(40) % 12
    y = o.privatize(x, rng=1)
    for same in (2.0, np.full(40, 2.0), [2.0] * 40):
        assert _same(o.privatize(x, epsilons=same, rng=1), y)
        assert _same(o.estimate(y, epsilons=same).counts, o.estimate(y).counts)
        assert o.partial(y, same) == o.partial(y)
    with pytest.raises(ValueError, match=r"'epsilons' parameter of RAPPOR.privatize must be None "
                                         r"or RAPPOR's epsilon \(2.0\).*one budget.*Got 1.0"):
        o.privatize(x, epsilons=1.0, rng=1)
    with pytest.raises(ValueError, match=r"'epsilons' parameter of RAPPOR.estimate .*at index 3"):
        o.estimate(y, epsilons=np.r_[np.full(3, 2.0), 1.0, np.full(36, 2.0)])
    with pytest.raises(ValueError, match="'epsilons' parameter of RAPPOR.partial"):
        o.partial(y, 3.0)


# ---------------------------------------------------------------- sanitization
def test_malformed_rows_are_replaced_publicly_and_counted():
    o = make(n_bits=13)  # 2 bytes, 3 padding bits
    n = 60
    y = o.privatize(np.arange(n) % 12, rng=2)
    bad = y.copy()
    bad[4, 1] |= np.uint8(0x80)  # a padding bit
    ids = np.arange(n, dtype=np.uint64)
    clean, rep = o.sanitize(bad, np.full(n, 2.0), ids, "t")
    assert rep.n_valid == n - 1 and rep.by_reason["out_of_range"] == 1
    np.testing.assert_array_equal(clean[4], o.public_rows(ids[4:5])[0])
    assert not (clean[:, -1] & np.uint8(0xE0)).any()
    obj = y.astype(object)
    obj[0, 0], obj[1, 1], obj[2, 0], obj[3, 1] = "x", None, 2.5, 300
    est = o.estimate(obj)
    assert est.sanitization.by_reason == {"non_numeric": 2, "non_integer": 1, "out_of_range": 1}
    assert est.sanitization.wrong_dtype and est.n == n
    for shape in ((n, 3), (n,), (n, 2, 1)):
        with pytest.raises(ValueError, match=r"'reports' parameter of RAPPOR.estimate must be"):
            o.estimate(np.zeros(shape, dtype=np.uint8))


# ---------------------------------------------------------------- streaming
N = 300


def _case(malformed, custom_ids, nonnegative=False):
    o = make(D=12, eps=2.0, n_bits=20, n_cohorts=6, nonnegative=nonnegative)
    rng = np.random.default_rng(21)
    ids = rng.choice(2**40, N, replace=False).astype(np.uint64) if custom_ids else None
    y = o.privatize(rng.integers(0, 12, N), identities=ids, rng=rng)
    if malformed == "same-dtype":
        y[rng.choice(N, 5, replace=False), -1] |= np.uint8(0xF0)
    elif malformed == "object":
        y = y.astype(object)
        y[rng.choice(N, 5, replace=False), 0] = ["x", None, 2.5, -1, np.nan]
    return o, y, ids


@pytest.mark.parametrize("nonnegative", [False, True])
@pytest.mark.parametrize("malformed", ["none", "same-dtype", "object"])
@settings(max_examples=15, deadline=None, derandomize=True)
@given(cuts=st.lists(st.integers(0, N), max_size=6),
       mode=st.sampled_from(["sequential", "balanced", "tree"]), custom_ids=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_split_and_merge_is_bit_identical(nonnegative, malformed, cuts, mode, custom_ids, seed):
    o, y, ids = _case(malformed, custom_ids, nonnegative)
    want = o.estimate(y, identities=ids)
    b = [0, *sorted(cuts), N]
    parts = [o.partial(y[a:c], None, np.arange(a, c, dtype=np.uint64) if ids is None else ids[a:c])
             for a, c in zip(b[:-1], b[1:])]
    got = o.finalize(merge_in_order(o, parts, mode, seed))
    assert _same(got.counts, want.counts)
    assert (got.variances is None and want.variances is None) or _same(got.variances,
                                                                        want.variances)
    assert got.sanitization == want.sanitization and got.n == N
    if malformed != "none":
        assert want.sanitization.n_valid < N


def test_partial_round_trips_params_empty_chunks_and_refusals():
    o, y, ids = _case("object", True)
    parts = [o.partial(y[:0], None, ids[:0]), o.partial(y[:120], None, ids[:120]),
             o.partial(y[120:], None, ids[120:])]
    for p in parts:
        assert Partial.from_bytes(p.to_bytes()) == p == pickle.loads(pickle.dumps(p))
    want = o.estimate(y, identities=ids)
    assert _same(o.finalize(merge_all([Partial.from_bytes(p.to_bytes()) for p in parts])).counts,
                 want.counts)
    zero = o.finalize(parts[0])
    assert zero.n == 0 and not zero.counts.any() and not zero.variances.any()
    assert o.merge(parts[0], parts[1]) == parts[1]
    params = o.stream_params()
    assert params == {"domain_size": 12, "epsilon": 2.0, "codebook_seed": 5, "n_bits": 20,
                      "n_hashes": 2, "n_cohorts": 6, "nonnegative": False}
    twin = RAPPOR(**params, n_threads=2)
    assert twin.partial(y, None, ids) == o.partial(y, None, ids)
    assert _same(twin.finalize(o.partial(y, None, ids)).counts, want.counts)
    # the state: C (k + 1) positions, whatever n
    big = o.partial(o.privatize(np.arange(5000) % 12, rng=1))
    assert big.sums["bits"].size == 6 * 20 and big.sums["reports"].size == 6
    assert big.sums["bits"].canonical()[1].shape[0] <= 2
    for other in (make(D=12, eps=2.0, n_bits=20, n_cohorts=7),
                  make(D=12, eps=2.0, n_bits=20, n_cohorts=6, nonnegative=True),
                  make(D=12, eps=1.0, n_bits=20, n_cohorts=6)):
        with pytest.raises(ValueError, match="cannot be finalized here"):
            other.finalize(parts[1])
        with pytest.raises(ValueError):
            o.merge(parts[1], other.partial(other.privatize(np.arange(5), rng=0)))
    from fastldp.oracles import GRR
    g = GRR(domain_size=12, epsilon=2.0, codebook_seed=5)
    with pytest.raises(ValueError):
        o.finalize(g.partial(g.privatize(np.arange(5), rng=0)))


def test_report_file_decodes_bit_identically(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.mechanisms import from_spec
    from fastldp.reports import ReportFile, decode_files, write_reports

    o = make(D=16, eps=1.5, n_bits=42, n_cohorts=8)  # 6 bytes, 6 padding bits
    y = o.privatize(np.arange(900) % 16, rng=3)
    y[[5, 500]] = 255  # padding bits set: sanitized the same way from the file
    path = write_reports(tmp_path / "r.parquet", o, y, row_group_size=250)
    server = from_spec(ReportFile(path).spec)
    assert server.stream_params() == o.stream_params()
    got, want = decode_files(server, path), o.estimate(y)
    assert _same(got.counts, want.counts) and _same(got.variances, want.variances)
    assert got.sanitization == want.sanitization and got.sanitization.n_valid == 898


# ---------------------------------------------------------------- the contract
def test_the_contract_members_repr_and_labels():
    o = make(D=3, categories=["x", "y", "z"])
    assert o.domain_size == 3 and o.categories == ("x", "y", "z")
    text = repr(o)
    assert text.startswith("RAPPOR(domain_size=3, epsilon=2.0, n_bits=32, n_hashes=2, n_cohorts=4")
    assert "categories=['x', 'y', 'z']" in text
    est = o.estimate(o.privatize(["z", "x", "x", "y"] * 50, rng=0))
    assert est.categories == ("x", "y", "z") and est.estimate is est.counts
    np.testing.assert_array_equal(est.std, np.sqrt(est.variances))
    frame = est.to_frame()
    assert list(frame.columns) == ["category", "estimate", "std", "frequency"]
    assert len(repr(est)) <= REPR_WIDTH and "x=" in repr(est)
    server = RAPPOR(**o.stream_params())
    assert _same(server.estimate(o.privatize(["y"] * 10, rng=1)).counts,
                 o.estimate(o.privatize(["y"] * 10, rng=1)).counts)
    big = make(D=500, n_bits=64, n_cohorts=16)
    text = repr(big.estimate(big.privatize(np.arange(4000) % 500, rng=0)))
    assert len(text) <= REPR_WIDTH and "\n" not in text


# ---------------------------------------------------------------- audit registry
def test_the_registry_audits_rappor_and_catches_its_controls():
    small = np.arange(64, dtype=np.uint64)
    row = audit.audit_channel(audit.get_channel("rappor", 1.0), n=20_000, rng=1,
                              identities=small)
    assert row.holds and abs(row.exact.epsilon_audited - 1.0) < 1e-13
    controls = audit.negative_controls(1.0)
    for name in ("control:rappor@1.5eps", "control:rappor-sampler"):
        caught = audit.audit_channel(controls[name], n=20_000, rng=2, identities=small)
        assert not caught.holds and caught.as_expected, name
    assert audit.audit_channel(controls["control:rappor-sampler"], n=20_000, rng=2,
                               identities=small).exact.holds


# ---------------------------------------------------------------- variances by simulation
@pytest.mark.slow
def test_variance_formula_and_unbiasedness_by_simulation():
    """R repetitions of n = 8 cohorts x 64 users over D = 64 candidates (k = 64 bits, h = 2),
    every cohort holding the same mix of values (so the decode is unbiased). The estimates
    are correlated across candidates, so the standard error of the pooled ratio
    ``mean_v (N_hat_v - N_v)^2 / Var_v`` comes from the repetitions themselves: its per-repetition
    variance is about 0.035 (2/64 for independent candidates, a little more with the
    correlations), so R = 8000 gives se = sqrt(0.035 / 8000) = 0.0021 and 4 se = 0.84% < 0.98%:
    a variance formula 2% off either way fails (see the assertions)."""
    D, C, per, R, eps = 64, 8, 64, 8000, 2.0
    o = RAPPOR(domain_size=D, epsilon=eps, n_bits=64, n_hashes=2, n_cohorts=C, codebook_seed=9,
               n_threads=1)  # many small calls: one thread
    n = C * per
    mix = np.minimum(np.random.default_rng(1).zipf(1.5, per) - 1, D - 1)
    x = np.repeat(mix, C)  # users j C .. j C + C - 1 hold mix[j]: one per cohort
    truth = np.bincount(x, minlength=D).astype(float)
    est = np.empty((R, D))
    variances = None
    rng = np.random.default_rng(13)
    for r in range(R):
        ids = np.arange(r * n, (r + 1) * n, dtype=np.uint64)
        res = o.estimate(o.privatize(x, identities=ids, rng=rng), identities=ids)
        est[r] = res.counts
        variances = res.variances if variances is None else variances
        assert _same(res.variances, variances)  # data independent, the same every time
    s = ((est - truth) ** 2 / variances).mean(axis=1)
    mean, se = s.mean(), s.std(ddof=1) / math.sqrt(R)
    assert 4 * se < 0.0098, se
    assert abs(mean - 1.0) < 4 * se, (mean, se)
    for wrong in (1.02, 0.98):
        assert abs(mean / wrong - 1.0) > 4 * se
    # unbiased: every candidate's mean within 4.5 sd (64 candidates)
    assert np.all(np.abs(est.mean(axis=0) - truth) < 4.5 * np.sqrt(variances / R))


# ---------------------------------------------------------------- hostile input (as tests/test_fuzz_api.py)
from conftest import fuzz  # noqa: E402
from test_fuzz_api import call, garbage, numeric_arrays, scalars  # noqa: E402


@fuzz(25)
@given(values=garbage, eps=st.one_of(st.none(), garbage))
def test_privatize_rejects_or_releases_legal_reports(values, eps):
    mech = make(D=6, eps=1.0, n_bits=12, n_cohorts=3)
    out = call(lambda: mech.privatize(values, epsilons=eps, rng=0))
    if out is not None:
        est = mech.estimate(out, epsilons=eps)
        assert est.sanitization.n_sanitized == 0      # its own reports are all legal
        assert np.isfinite(est.counts).all()


@fuzz(25)
@given(reports=st.one_of(numeric_arrays, st.lists(st.lists(scalars, min_size=2, max_size=2),
                                                  min_size=1, max_size=5),
                         st.lists(st.lists(scalars, max_size=3), min_size=1, max_size=5)))
def test_estimate_sanitizes_hostile_reports_or_rejects_their_shape(reports):
    mech = make(D=6, eps=1.0, n_bits=12, n_cohorts=3)  # 2 bytes a report
    est = call(lambda: mech.estimate(reports))
    if est is not None:
        assert est.sanitization.n_received == est.n
        assert sum(est.sanitization.by_reason.values()) == est.sanitization.n_sanitized
        assert np.isfinite(est.counts).all() and np.isfinite(est.variances).all()


@fuzz(15)
@given(domain=scalars, eps=scalars, seed=scalars, bits=scalars, hashes=scalars, cohorts=scalars)
def test_constructor_rejects_bad_parameters(domain, eps, seed, bits, hashes, cohorts):
    mech = call(lambda: RAPPOR(domain_size=domain, epsilon=eps, codebook_seed=seed, n_bits=bits,
                               n_hashes=hashes, n_cohorts=cohorts))
    if mech is not None:
        assert isinstance(mech.domain_size, int) and 2 <= mech.domain_size <= MAX_CANDIDATES
        assert 0 < mech.epsilon <= 700 and mech.f > 0
