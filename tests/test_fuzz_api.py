"""Fuzzing the public API with malformed input.

Every call below gets hostile input: wrong shapes and dtypes, NaN, +-inf, huge
integers, strings and None, empty sets, out-of-range indices. The contract
(issue 11): the outcome is a clear ``ValueError`` / ``TypeError`` naming the
problem, or - for received reports, which an attacker controls - a sanitized
result whose :class:`~fastldp._sanitize.SanitizationReport` counts what was
replaced, with finite estimates. Never another exception, a crash, a hang or a
silent wrong answer. Example counts are fixed per test (tests/conftest.py).
"""

import math
import time

import numpy as np
import pytest
import scipy.sparse as sp
from hypothesis import given
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from conftest import fuzz
from fastldp import oracles
from fastldp.histograms import ShiftedLogGaussian
from fastldp.oracles import Duchi, Laplace, Piecewise
from fastldp.relations import JPRS, PaddedRelationSampling
from fastldp.vectors import PCKVGRR, PCKVUE, RPC, Collision, Succinct

CLEAR = (ValueError, TypeError)
BUDGET_S = 5.0   # any single call; far above the real cost, far below a hang

scalars = st.one_of(
    st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3), st.none(), st.booleans(), st.just(1 + 2j), st.just(2**63),
    st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -0.0, 5e-324]),
)
numeric_arrays = hnp.arrays(
    dtype=st.sampled_from([np.float64, np.float32, np.int64, np.uint64, np.int8, np.bool_]),
    shape=hnp.array_shapes(min_dims=0, max_dims=3, min_side=0, max_side=5),
)
garbage = st.one_of(st.lists(scalars, max_size=8), numeric_arrays, scalars,
                    st.lists(st.lists(scalars, max_size=3), max_size=4))


def call(fn):
    """Run ``fn``: its value, or None when it raised a clear error; fail on anything else."""
    t0 = time.perf_counter()
    try:
        return fn()
    except CLEAR as exc:
        assert str(exc), "an error must say what is wrong"
        return None
    finally:
        assert time.perf_counter() - t0 < BUDGET_S


def _plainly_illegal(v, size) -> bool:
    """A report no oracle of ``size`` outputs may count as legal."""
    if v is None or isinstance(v, (str, bytes, complex)):
        return True
    try:
        f = float(v)
    except (TypeError, ValueError, OverflowError):
        return True
    return not math.isfinite(f) or f != math.floor(f) or not 0 <= f < size


ORACLES = {
    "grr": lambda: oracles.GRR(domain_size=6, epsilon=1.0, codebook_seed=1),
    "olh": lambda: oracles.OLH(domain_size=6, epsilon=1.0, codebook_seed=1),
    "hr": lambda: oracles.HadamardResponse(domain_size=6, epsilon=1.0, codebook_seed=1),
    "oue": lambda: oracles.OUE(domain_size=6, epsilon=1.0, codebook_seed=1),
    "sue": lambda: oracles.SUE(domain_size=6, epsilon=1.0, codebook_seed=1),
    "flh": lambda: oracles.FLH(domain_size=6, epsilon=1.0, n_hashes=4, codebook_seed=1),
}


# ---------------------------------------------------------------- oracles
@pytest.mark.parametrize("name", list(ORACLES))
@fuzz(25)
@given(values=garbage, eps=st.one_of(st.none(), garbage))
def test_oracle_privatize_rejects_or_releases_legal_reports(name, values, eps):
    mech = ORACLES[name]()
    out = call(lambda: mech.privatize(values, epsilons=eps, rng=0))
    if out is not None:
        est = mech.estimate(out, epsilons=eps)
        assert est.sanitization.n_sanitized == 0      # its own reports are all legal
        assert np.isfinite(est.counts).all()


def test_flh_estimate_of_no_reports_with_budgets():
    mech = ORACLES["flh"]()
    est = mech.estimate(mech.privatize([], rng=0), epsilons=1.0)
    assert est.n == 0 and (est.counts == 0).all()


@pytest.mark.parametrize("name", ["grr", "olh", "hr"])
@fuzz(30)
@given(reports=st.lists(scalars, min_size=1, max_size=10))
def test_symbol_oracle_estimate_sanitizes_and_counts_hostile_reports(name, reports):
    mech = ORACLES[name]()
    size = {"grr": 6, "olh": mech.g if hasattr(mech, "g") else 4, "hr": 8}[name]
    if name == "olh":
        size = int(np.rint(np.exp(1.0))) + 1
    est = call(lambda: mech.estimate(reports))
    assert est is not None, "report contents never raise"
    bad = sum(_plainly_illegal(v, size) for v in reports)
    assert est.sanitization.n_received == len(reports)
    assert est.sanitization.n_sanitized >= bad
    assert sum(est.sanitization.by_reason.values()) == est.sanitization.n_sanitized
    assert np.isfinite(est.counts).all() and np.isfinite(est.variances).all()


@pytest.mark.parametrize("name", ["oue", "sue", "flh"])
@fuzz(25)
@given(reports=st.one_of(numeric_arrays, st.lists(st.lists(scalars, max_size=3), min_size=1,
                                                  max_size=5)))
def test_vector_report_oracles_sanitize_or_reject_shapes(name, reports):
    mech = ORACLES[name]()
    est = call(lambda: mech.estimate(reports))
    if est is not None:
        assert est.sanitization.n_received == est.n
        assert np.isfinite(est.counts).all()


@pytest.mark.parametrize("make", list(ORACLES.values()), ids=list(ORACLES))
@fuzz(15)
@given(domain=scalars, eps=scalars, seed=scalars)
def test_oracle_constructors_reject_bad_parameters(make, domain, eps, seed):
    cls = type(make())
    kwargs = dict(domain_size=domain, epsilon=eps, codebook_seed=seed)
    mech = call(lambda: cls(**kwargs))
    if mech is not None:
        assert isinstance(mech.domain_size, int) and mech.domain_size >= 2
        assert mech.epsilon is None or 0 < mech.epsilon <= 700   # None: budgets per call


@pytest.mark.parametrize("name", ["hr", "oue", "sue"])
def test_oracles_refuse_domains_they_cannot_serve(name):
    cls = type(ORACLES[name]())
    with pytest.raises(CLEAR):
        mech = cls(domain_size=2**62, epsilon=1.0, codebook_seed=1)
        mech.estimate(mech.privatize([0, 1], rng=0))


# ---------------------------------------------------------------- scalar randomizers
@pytest.mark.parametrize("cls", [Laplace, Piecewise, Duchi])
@fuzz(30)
@given(u=garbage, eps=scalars)
def test_randomizers_reject_or_release_legal_values(cls, u, eps):
    mech = call(lambda: cls(epsilon=eps))
    if mech is None:
        mech = cls(epsilon=1.0)
    y = call(lambda: mech.privatize(u, rng=0))
    if y is not None:
        assert np.shape(y) == np.shape(np.asarray(u, dtype=np.float64))
        assert mech.is_legal(y).all()


# ---------------------------------------------------------------- relations
RELATIONS = {
    "jprs": lambda: JPRS(shape=(3, 4), k=2, s=2, codebook_seed=1, n_threads=1),
    "p-rs-grr": lambda: PaddedRelationSampling(shape=(3, 4), k=2, s=2, oracle="grr",
                                               codebook_seed=1, n_threads=1),
    "p-rs-olh": lambda: PaddedRelationSampling(shape=(3, 4), k=2, s=2, oracle="olh",
                                               codebook_seed=1, n_threads=1),
}
pair_lists = st.lists(st.lists(st.tuples(st.integers(-3, 6), st.integers(-3, 6)), max_size=3),
                      min_size=1, max_size=4)


@pytest.mark.parametrize("name", list(RELATIONS))
@fuzz(30)
@given(sets=st.one_of(pair_lists, garbage), eps=st.one_of(scalars, garbage))
def test_relation_privatize_rejects_bad_sets_and_budgets(name, sets, eps):
    mech = RELATIONS[name]()
    rel = sets
    if (isinstance(sets, list) and sets and all(isinstance(s, list) for s in sets)
            and all(isinstance(t, tuple) for s in sets for t in s)):
        rel = [np.array(s, dtype=np.int64).reshape(-1, 2) for s in sets]
    out = call(lambda: mech.privatize(rel, epsilons=eps, rng=0))
    if out is not None:
        # accepted: every pair was in the table and every set within the cap
        assert not isinstance(rel, list) or all(isinstance(s, np.ndarray) for s in rel)
        for s in rel:
            s = np.asarray(s)
            assert s.shape[0] <= mech.k
            assert ((s[:, 0] >= 0) & (s[:, 0] < 3) & (s[:, 1] >= 0) & (s[:, 1] < 4)).all()
        est = call(lambda: mech.estimate(out, epsilons=eps))     # zero reports may be refused
        assert est is not None or len(rel) == 0


@pytest.mark.parametrize("name", list(RELATIONS))
@fuzz(20)
@given(cols=st.lists(st.integers(-2**62, 2**62), min_size=1, max_size=4))
def test_relation_privatize_range_checks_sparse_columns(name, cols):
    mech = RELATIONS[name]()
    n = len(cols)
    # scipy's constructor does not range-check indices; the mechanism must
    csr = sp.csr_matrix((np.ones(n), np.array(cols, dtype=np.int64),
                         np.arange(n + 1, dtype=np.int64)), shape=(n, 12))
    out = call(lambda: mech.privatize(csr, epsilons=1.0, rng=0))
    assert (out is None) == any(not 0 <= c < 12 for c in cols)


@pytest.mark.parametrize("name", list(RELATIONS))
@fuzz(30)
@given(reports=st.lists(scalars, min_size=1, max_size=8))
def test_relation_estimate_sanitizes_hostile_reports(name, reports):
    mech = RELATIONS[name]()
    est = call(lambda: mech.estimate(reports, epsilons=1.0))
    assert est is not None, "report contents never raise"
    assert est.sanitization.n_received == len(reports)
    if name == "jprs":
        bad = sum(not (isinstance(v, (int, float)) and not isinstance(v, bool) and v in (-1, 1))
                  for v in reports)
        assert est.sanitization.n_sanitized >= bad - sum(isinstance(v, bool) for v in reports)
    assert np.isfinite(est.matrix).all()


# ---------------------------------------------------------------- vectors
VECTORS = {
    "rpc": lambda: RPC(d=5, m=2, epsilon=1.0, codebook_seed=1, n_threads=1),
    "pckv-ue": lambda: PCKVUE(d=5, m=2, epsilon=1.0),
    "pckv-grr": lambda: PCKVGRR(d=5, m=2, epsilon=1.0),
    "succinct": lambda: Succinct(d=5, m=2, epsilon=1.0, R=1.0, codebook_seed=1),
    "collision": lambda: Collision(d=5, m=2, epsilon=1.0, codebook_seed=1),
}


@pytest.mark.parametrize("name", list(VECTORS))
@fuzz(25)
@given(x=st.one_of(garbage, hnp.arrays(np.float64, (3, 5),
                                       elements=st.floats(allow_nan=True, allow_infinity=True))))
def test_vector_privatize_rejects_bad_vectors(name, x):
    mech = VECTORS[name]()
    out = call(lambda: mech.privatize(x, rng=0))
    if out is not None:
        arr = np.asarray(x, dtype=np.float64)
        assert arr.ndim == 2 and arr.shape[1] == 5 and np.isfinite(arr).all()
        assert (np.abs(arr) <= 1).all() and ((arr != 0).sum(axis=1) <= 2).all()


@pytest.mark.parametrize("name", ["rpc", "succinct"])
@fuzz(30)
@given(reports=st.lists(scalars, min_size=1, max_size=8))
def test_real_report_estimate_sanitizes_hostile_reports(name, reports):
    mech = VECTORS[name]()
    est = call(lambda: mech.estimate(reports))
    assert est is not None, "report contents never raise"
    assert est.sanitization.n_received == len(reports)
    bad = sum(v is None or isinstance(v, (str, complex)) or
              (isinstance(v, float) and not math.isfinite(v)) for v in reports)
    assert est.sanitization.n_sanitized >= bad
    assert np.isfinite(est.mean).all()


# ---------------------------------------------------------------- histograms
@fuzz(40)
@given(counts=garbage)
def test_histogram_release_rejects_or_releases_non_negative_counts(counts):
    mech = ShiftedLogGaussian(r=0.5)
    out = call(lambda: mech.release(counts, rng=0))
    if out is not None:
        assert np.isfinite(out).all() and (out >= 0).all()
        assert np.shape(out) == np.shape(counts)
    rho = call(lambda: mech.rho(counts))
    if rho is not None:
        assert np.all(np.isfinite(rho)) and np.all(np.asarray(rho) >= 0)  # 0: underflow
