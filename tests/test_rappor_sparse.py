"""RAPPOR's sparse decode (``all_variances=False``): conjugate gradients on the sparse design
against the dense factorization (1e-9 of the largest count), cohorts without reports and
custom identities, singular designs, candidates beyond the dense limit, the exact variances of
chosen candidates against the dense diagonal and by simulation, and the parameters."""

import math
import warnings

import numpy as np
import pytest

from fastldp.oracles import RAPPOR
from fastldp.oracles import rappor as rappor_module
from fastldp.oracles.rappor import (
    MAX_CANDIDATES, MAX_DENSE_CANDIDATES, MAX_DESIGN_ENTRIES, clear_factor_cache,
)
from fastldp.streaming import ExactSum, Partial, merge_all

REL = 1e-9  # the paths agree to this fraction of the largest count


def make(D=40, eps=2.0, **kw):
    kw.setdefault("n_bits", 32)
    kw.setdefault("n_hashes", 2)
    kw.setdefault("n_cohorts", 6)
    kw.setdefault("codebook_seed", 5)
    kw.setdefault("n_threads", 1)
    return RAPPOR(domain_size=D, epsilon=eps, **kw)


def _close(got, want, rel=REL):
    scale = float(np.abs(want).max())
    assert scale > 0
    np.testing.assert_allclose(got, want, rtol=0, atol=rel * scale)


@pytest.fixture
def no_dense(monkeypatch):
    """Make any dense Gram matrix (the factorization's input) an error."""
    def refuse(self, cohort_sizes):
        raise AssertionError("the sparse decode built the dense Gram matrix")

    clear_factor_cache()
    monkeypatch.setattr(RAPPOR, "gram", refuse)
    yield
    clear_factor_cache()


def _reports(o, n, rng, ids=None, values=None):
    x = (np.minimum(rng.zipf(1.4, n) - 1, o.domain_size - 1) if values is None else values)
    return o.privatize(x, identities=ids, rng=rng), x


# ---------------------------------------------------------------- sparse = dense
@pytest.mark.parametrize("D, kw", [(12, dict(n_bits=24, n_cohorts=5)),
                                   (300, dict(n_bits=64, n_cohorts=16)),
                                   (1500, dict(n_bits=128, n_cohorts=32, n_hashes=3))])
def test_sparse_counts_equal_the_dense_solve(D, kw, monkeypatch):
    """Unequal cohorts (random identities), at small and moderate D: the sparse decode's counts
    are the dense factorization's to 1e-9 of the largest count, and no dense G was built."""
    dense = make(D=D, **kw)
    sparse = make(D=D, all_variances=False, **kw)
    rng = np.random.default_rng(D)
    n = 20 * D + 1001
    ids = rng.choice(2**40, n, replace=False).astype(np.uint64)
    y, _ = _reports(dense, n, rng, ids)
    want = dense.estimate(y, identities=ids)
    clear_factor_cache()
    calls = []
    real_gram = RAPPOR.gram
    monkeypatch.setattr(RAPPOR, "gram", lambda self, m: calls.append(1) or real_gram(self, m))
    got = sparse.estimate(y, identities=ids)
    assert not calls  # the sparse path ran
    _close(got.counts, want.counts)
    assert got.variances is None and got.std is None and got.n == n
    assert got.sanitization == want.sanitization
    # the variances of chosen candidates: the dense diagonal's entries
    some = np.array([0, D // 2, D - 1, 1])
    m = np.bincount(dense.cohorts(ids), minlength=dense.n_cohorts)
    np.testing.assert_allclose(sparse.candidate_variances(some, m), want.variances[some],
                               rtol=REL)
    assert not calls


@pytest.mark.parametrize("D, kw", [(12, dict(n_bits=24, n_cohorts=5)),
                                   (300, dict(n_bits=64, n_cohorts=16)),
                                   (1500, dict(n_bits=128, n_cohorts=32))])
def test_sparse_nonnegative_equals_the_dense_nnls(D, kw, monkeypatch):
    """nonnegative=True: the active-set decode on the sparse design equals the dense path's NNLS
    (scipy.optimize.nnls on the Cholesky factor) to 1e-9 of the largest count, with the same
    zeros, and built no dense G; a skewed population puts most candidates at zero."""
    dense = make(D=D, nonnegative=True, **kw)
    sparse = make(D=D, nonnegative=True, all_variances=False, **kw)
    rng = np.random.default_rng(D + 1)
    n = 20 * D + 1001
    ids = rng.choice(2**40, n, replace=False).astype(np.uint64)
    y, _ = _reports(dense, n, rng, ids)
    want = dense.estimate(y, identities=ids).counts
    clear_factor_cache()
    calls = []
    real_gram = RAPPOR.gram
    monkeypatch.setattr(RAPPOR, "gram", lambda self, m: calls.append(1) or real_gram(self, m))
    got = sparse.estimate(y, identities=ids)
    assert not calls and got.variances is None
    _close(got.counts, want)
    tiny = REL * np.abs(want).max()
    assert (got.counts >= 0).all() and (want == 0).sum() > 0
    np.testing.assert_array_equal(got.counts <= tiny, want <= tiny)  # the same support


@pytest.mark.slow
def test_sparse_counts_equal_the_dense_solve_at_the_benchmark_size():
    """D = 4,096 at the defaults (k = 128, h = 2, C = 64) and n = 100,000, as in
    bench/oracle_compare.py (the quick test's code path at its largest size): counts to 1e-9 of
    the largest, and the variances of a few candidates equal the dense diagonal."""
    dense = RAPPOR(domain_size=4096, epsilon=1.0, codebook_seed=2026)
    sparse = RAPPOR(domain_size=4096, epsilon=1.0, codebook_seed=2026, all_variances=False)
    rng = np.random.default_rng(4096)
    y, _ = _reports(dense, 100_000, rng)
    want = dense.estimate(y)
    clear_factor_cache()
    got = sparse.estimate(y)
    _close(got.counts, want.counts)
    some = np.array([0, 1, 2047, 4095])
    m = np.bincount(np.arange(100_000) % 64, minlength=64)
    np.testing.assert_allclose(sparse.candidate_variances(some, m), want.variances[some],
                               rtol=REL)


def test_cohorts_without_reports_and_one_report_per_cohort(no_dense):
    """Identities that leave cohorts empty (their equations drop out) and a cohort of a single
    report: the sparse decode still equals the naive weighted least squares."""
    o = make(D=30, n_bits=64, n_cohorts=8, all_variances=False)
    rng = np.random.default_rng(4)
    cohorts = np.r_[np.full(700, 1), np.full(500, 4), np.full(400, 6), 3]  # 4 of 8 cohorts
    ids = (cohorts + 8 * np.arange(cohorts.shape[0])).astype(np.uint64)
    y, _ = _reports(o, ids.shape[0], rng, ids)
    got = o.estimate(y, identities=ids)
    want = _naive(o, y, ids)
    _close(got.counts, want)


def _naive(o, reports, ids):
    """The weighted least squares written out densely with lstsq (minimum norm)."""
    k, C = o.n_bits, o.n_cohorts
    p, q = (float(v[0]) for v in o._pq(np.array([o.epsilon])))
    bits = np.unpackbits(reports, axis=1, count=k, bitorder="little").astype(float)
    cohort = np.array([int(i) % C for i in ids.tolist()])
    rows, rhs = [], []
    for c in range(C):
        m = int((cohort == c).sum())
        if m:
            rows.append(math.sqrt(m) * o.bloom_filters(c).T.astype(float))
            rhs.append((bits[cohort == c].sum(axis=0) - q * m) / (p - q) / math.sqrt(m))
    f = np.linalg.lstsq(np.vstack(rows), np.concatenate(rhs), rcond=1e-10)[0]
    return reports.shape[0] * f


def test_a_cached_factorization_is_used_and_agrees():
    """After a dense decode of the same design and cohort sizes, the sparse oracle uses the
    cached factorization (the dense decode's counts, bit for bit); on a cleared cache it solves
    by conjugate gradients: the two agree to 1e-9."""
    clear_factor_cache()
    dense, sparse = make(D=200, n_bits=64, n_cohorts=8), make(D=200, n_bits=64, n_cohorts=8,
                                                              all_variances=False)
    y, _ = _reports(dense, 5000, np.random.default_rng(2))
    want = dense.estimate(y).counts
    cached = sparse.estimate(y).counts
    assert cached.tobytes() == want.tobytes()
    clear_factor_cache()
    fresh = make(D=200, n_bits=64, n_cohorts=8, all_variances=False)
    got = fresh.estimate(y).counts
    assert got.tobytes() != want.tobytes()  # another path ran
    _close(got, want)


def test_sparse_decode_is_thread_invariant_and_splits_bit_identically(no_dense):
    o1 = make(D=100, n_bits=64, n_cohorts=8, all_variances=False)
    o2 = make(D=100, n_bits=64, n_cohorts=8, all_variances=False, n_threads=2)
    y, _ = _reports(o1, 3000, np.random.default_rng(8))
    want = o1.estimate(y)
    assert o2.estimate(y).counts.tobytes() == want.counts.tobytes()
    parts = [o1.partial(y[a:b], None, np.arange(a, b, dtype=np.uint64))
             for a, b in ((0, 1000), (1000, 1001), (1001, 3000))]
    assert o1.finalize(merge_all(parts)).counts.tobytes() == want.counts.tobytes()
    empty = o1.finalize(o1.partial(y[:0]))
    assert empty.n == 0 and not empty.counts.any() and empty.variances is None


# ---------------------------------------------------------------- singular designs
def test_fewer_equations_than_candidates_warns_and_matches_the_dense_minimum_norm():
    """C k < D: singular by structure; within the dense limit the sparse oracle gives the dense
    decode's minimum-norm solution and its warning."""
    clear_factor_cache()
    o = make(D=20, n_bits=4, n_cohorts=2, all_variances=False)  # 8 equations
    y = o.privatize(np.arange(500) % 20, rng=1)
    with pytest.warns(RuntimeWarning, match=r"rank \d+ < 20 candidates"):
        got = o.estimate(y)
    _close(got.counts, _naive(o, y, np.arange(500, dtype=np.uint64)), rel=1e-8)


def test_equal_filters_in_every_used_cohort_are_detected():
    """Two candidates with the same filter in every cohort that has reports (here: one cohort
    used, 30 candidates on 32 bits with one hash: a collision) make G singular although
    C k >= D; the check finds it, and a design without such a pair is not flagged."""
    o = make(D=30, n_bits=32, n_hashes=1, n_cohorts=2, all_variances=False, codebook_seed=3)
    B = o.bloom_filters(0)
    pairs = [(u, v) for u in range(30) for v in range(u) if (B[u] == B[v]).all()]
    assert pairs  # the premise: a collision in cohort 0
    assert o._structurally_singular(np.array([100.0, 0.0]))
    both = np.array([100.0, 100.0])
    B1 = o.bloom_filters(1)
    shared = [(u, v) for u, v in pairs if (B1[u] == B1[v]).all()]
    assert o._structurally_singular(both) == bool(shared)
    wide = make(D=30, n_bits=64, n_hashes=2, n_cohorts=4, all_variances=False)
    assert not wide._structurally_singular(np.full(4, 50.0))
    ids = (2 * np.arange(400)).astype(np.uint64)  # every report in cohort 0
    y = o.privatize(np.arange(400) % 30, identities=ids, rng=2)
    clear_factor_cache()
    with pytest.warns(RuntimeWarning, match=r"rank \d+ < 30 candidates"):
        got = o.estimate(y, identities=ids)
    _close(got.counts, _naive(o, y, ids), rel=1e-8)
    with pytest.raises(ValueError, match="singular"):
        o.candidate_variances([0, 1], [400, 0])


def test_a_singular_design_beyond_the_dense_limit_gives_the_minimum_norm_solution(no_dense):
    """D = 9,000 > 8,192 candidates on C k = 1,024 equations: conjugate gradients' minimum-norm
    solution, checked against the dual system (A A^T)^+ of the 1,024 equations, and a warning
    (once per oracle and cohort sizes)."""
    import scipy.sparse as sp

    D = MAX_DENSE_CANDIDATES + 808
    o = make(D=D, n_bits=64, n_cohorts=16, all_variances=False)
    y, _ = _reports(o, 4000, np.random.default_rng(6))
    with pytest.warns(RuntimeWarning, match="singular"):
        got = o.estimate(y)
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert o.estimate(y).counts.tobytes() == got.counts.tobytes()
    p, q = (float(v[0]) for v in o._pq(np.array([o.epsilon])))
    partial = o.partial(y)
    bits = partial.sums["bits"].value().reshape(16, 64)
    m = partial.sums["reports"].value()
    t = (bits - q * m[:, None]) / (p - q)
    r = np.sqrt(np.repeat(m, 64))
    A = sp.diags(r) @ o.design()                      # sqrt(W) X
    b = t.ravel() / r                                  # the weighted equations
    K = (A @ A.T).toarray()  # positive definite: every one of the 1,024 bits is some filter's
    want = 4000 * (A.T @ np.linalg.solve(K, b))
    _close(got.counts, want, rel=1e-8)
    # the non-negative decode refuses a singular design it cannot factorize
    nn = make(D=D, n_bits=64, n_cohorts=16, all_variances=False, nonnegative=True)
    with pytest.raises(ValueError, match="singular.*non-negative decode"):
        nn.estimate(y)


# ---------------------------------------------------------------- beyond the dense limit
def _expected_partial(o, per_cohort):
    """A partial holding the EXPECTED bit counts of cohorts with the counts ``per_cohort``."""
    C, k = o.n_cohorts, o.n_bits
    p, q = (float(v[0]) for v in o._pq(np.array([o.epsilon])))
    X = o.design()
    m = per_cohort.sum(axis=1)
    T = np.stack([X[c * k:(c + 1) * k] @ per_cohort[c] for c in range(C)])
    bits, sizes = ExactSum(C * k), ExactSum(C)
    bits.add((q * m[:, None] + (p - q) * T).ravel())
    sizes.add(m)
    counts = {"n": int(m.sum()), "n_valid": int(m.sum()), "reason:non_numeric": 0,
              "reason:non_integer": 0, "reason:out_of_range": 0}
    return Partial("RAPPOR", o.stream_params(), sums={"bits": bits, "reports": sizes},
                   counts=counts, flags={"wrong_dtype": False})


def test_twenty_thousand_candidates(no_dense):
    """D = 20,000 (the dense decode stops at 8,192): fed the expected bit counts of cohorts that
    share the population's mix, the least squares returns the true counts (1e-9); on privatized
    reports every count is within 5 sd (sd from candidate_variances) of the truth."""
    D, C, k = 20_000, 16, 4096
    o = make(D=D, n_bits=k, n_cohorts=C, eps=4.0, all_variances=False)
    rng = np.random.default_rng(20)
    mix = np.zeros(D)
    mix[rng.choice(D, 50, replace=False)] = rng.integers(1, 30, 50)
    partial = _expected_partial(o, np.tile(mix, (C, 1)))
    _close(o.finalize(partial).counts, C * mix)
    # the non-negative decode too: the truth is feasible, so it is the solution
    nn = make(D=D, n_bits=k, n_cohorts=C, eps=4.0, all_variances=False, nonnegative=True)
    _close(nn.finalize(_expected_partial(nn, np.tile(mix, (C, 1)))).counts, C * mix)
    # privatized: 16 cohorts of 200 reports, 12 distinct values
    values = rng.choice(D, 12, replace=False)
    x = values[rng.integers(0, 12, 3200)]
    y = o.privatize(x, rng=rng)
    est = o.estimate(y)
    truth = np.bincount(x, minlength=D)
    look = np.r_[values, rng.choice(D, 4, replace=False)]
    sd = np.sqrt(o.candidate_variances(look, est.n / C * np.ones(C)))
    assert np.all(np.abs(est.counts[look] - truth[look]) < 5 * sd)


# ---------------------------------------------------------------- variances by simulation
def _simulate(R, D=16, C=4, per=48, eps=2.0):
    """R decodes of n = C x per reports, each cohort holding the same mix; the pooled ratio
    mean_v (N_hat_v - N_v)^2 / Var_v per repetition, Var from candidate_variances."""
    o = RAPPOR(domain_size=D, epsilon=eps, n_bits=32, n_hashes=2, n_cohorts=C, codebook_seed=9,
               n_threads=1, all_variances=False)
    mix = np.minimum(np.random.default_rng(1).zipf(1.5, per) - 1, D - 1)
    x = np.repeat(mix, C)
    truth = np.bincount(x, minlength=D).astype(float)
    variances = o.candidate_variances(np.arange(D), np.full(C, per))
    rng = np.random.default_rng(13)
    s = np.empty(R)
    mean_err = np.zeros(D)
    for r in range(R):
        ids = np.arange(r * C * per, (r + 1) * C * per, dtype=np.uint64)
        est = o.estimate(o.privatize(x, identities=ids, rng=rng), identities=ids).counts
        s[r] = ((est - truth) ** 2 / variances).mean()
        mean_err += (est - truth) / R
    return s, mean_err, variances


def _check_simulation(s, mean_err, variances, R, bound):
    mean, se = s.mean(), s.std(ddof=1) / math.sqrt(len(s))
    assert 4 * se < bound, se
    assert abs(mean - 1.0) < 4 * se, (mean, se)
    for wrong in (1 + 2 * bound, 1 - 2 * bound):  # a formula that far off is caught
        assert abs(mean / wrong - 1.0) > 4 * se
    assert np.all(np.abs(mean_err) < 4.5 * np.sqrt(variances / R))  # unbiased


def test_candidate_variances_by_simulation_quick():
    """R = 300: the per-repetition variance of the pooled ratio is about 0.2 (2/16 for 16
    independent candidates, more with their correlations), so se = sqrt(0.2 / 300) = 0.026 and
    4 se < 0.12: a variance 24% off either way fails."""
    R = 300
    _check_simulation(*_simulate(R), R, 0.12)


@pytest.mark.slow
def test_candidate_variances_by_simulation():
    """R = 6,000 (the quick test's code path): se = sqrt(0.2 / 6000) = 0.0058, 4 se < 0.025: a
    variance 5% off either way fails."""
    R = 6000
    _check_simulation(*_simulate(R), R, 0.025)


# ---------------------------------------------------------------- parameters
def test_parameters_of_the_sparse_decode_are_validated():
    assert make(D=MAX_DENSE_CANDIDATES + 1, n_cohorts=1, n_bits=64, all_variances=False)
    with pytest.raises(ValueError, match=r"'domain_size' parameter of RAPPOR must be an int in "
                                         r"\[2, 8192\] with all_variances=True.*Got 8193"):
        make(D=MAX_DENSE_CANDIDATES + 1)
    with pytest.raises(ValueError, match=r"'domain_size'.*with all_variances=True"):
        make(D=MAX_DENSE_CANDIDATES + 1, nonnegative=True)
    assert make(D=MAX_DENSE_CANDIDATES + 1, n_cohorts=1, n_bits=64, nonnegative=True,
                all_variances=False)
    with pytest.raises(ValueError, match=rf"'domain_size'.*\[2, {MAX_CANDIDATES}\]"):
        make(D=MAX_CANDIDATES + 1, n_cohorts=1, all_variances=False)
    with pytest.raises(ValueError, match=rf"'domain_size'.*<= {MAX_DESIGN_ENTRIES} entries"):
        make(D=MAX_CANDIDATES, n_cohorts=64, all_variances=False)
    for bad in ("no", None, 1):
        with pytest.raises(TypeError, match="'all_variances' parameter of RAPPOR"):
            make(all_variances=bad)
    o = make(D=10, all_variances=False)
    assert "all_variances=False" in repr(o) and "all_variances" not in repr(make(D=10))
    m = np.full(6, 10)
    for cand, err in (([0, 10], ValueError), ([-1], ValueError), ([0.5], TypeError),
                      (["a"], TypeError)):
        with pytest.raises(err, match="'candidates' parameter of RAPPOR.candidate_variances"):
            o.candidate_variances(cand, m)
    for sizes in (np.full(5, 10), np.r_[np.full(5, 10), -1], np.r_[np.full(5, 10), np.nan]):
        with pytest.raises(ValueError, match="'cohort_sizes' parameter of RAPPOR.candidate_var"):
            o.candidate_variances([0], sizes)
    assert o.candidate_variances([], m).shape == (0,)
    assert o.candidate_variances(np.array([[1, 2]]), m).shape == (1, 2)


def test_the_sparse_module_keeps_no_factorization(no_dense):
    """A sparse decode leaves the module's factor cache empty (it factorizes nothing)."""
    o = make(D=64, n_bits=64, n_cohorts=8, all_variances=False)
    o.estimate(o.privatize(np.arange(2000) % 64, rng=0))
    assert not rappor_module._FACTORS._items and not o._factors


# ---------------------------------------------------------------- the kernel path
def test_the_sparse_decode_builds_no_sparse_matrix(no_dense, monkeypatch):
    """A fresh sparse decode reads the filters' positions only: no scipy design is built (it
    was most of a fresh decode's set-up), and the counts still equal the dense solve's."""
    o = make(D=300, n_bits=64, n_cohorts=16, all_variances=False)
    y, _ = _reports(o, 6000, np.random.default_rng(21))

    def refuse(self):
        raise AssertionError("the sparse decode built the scipy design")

    monkeypatch.setattr(RAPPOR, "_shared_design", refuse)
    got = o.estimate(y).counts
    monkeypatch.undo()
    clear_factor_cache()
    _close(got, make(D=300, n_bits=64, n_cohorts=16).estimate(y).counts)


def test_the_preconditioned_solve_meets_its_target_in_fewer_products(no_dense, monkeypatch):
    """_cg_solve (a I + c 11^T, stopped by the error estimate) against the dense solve of G f =
    h at ERROR_TOL of the largest entry, in fewer products than unpreconditioned conjugate
    gradients to the relative residual CG_TOL."""
    from fastldp._kernels._bloom import bloom_cg

    o = make(D=1500, n_bits=64, n_cohorts=48, all_variances=False)
    y, _ = _reports(o, 40_000, np.random.default_rng(22))
    m = o.partial(y).sums["reports"].value().astype(np.float64)
    h = np.random.default_rng(23).random(o.domain_size)
    products = []

    def counting(*args):
        out = bloom_cg(*args)
        products.append(out[1])
        return out

    monkeypatch.setattr(rappor_module, "bloom_cg", counting)
    x = o._cg_solve(m, h)
    monkeypatch.undo()
    G = make(D=1500, n_bits=64, n_cohorts=48).gram(m)
    want = np.linalg.solve(G, h)
    _close(x, want, rel=rappor_module.ERROR_TOL)
    pos, ptr, cols = o._bloom()
    plain = bloom_cg(pos, ptr, cols, o.n_bits, m, h, 0.0, 0.0, rappor_module.CG_TOL, 10_000)[1]
    assert sum(products) < plain
