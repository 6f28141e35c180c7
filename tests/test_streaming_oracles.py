"""The partial / merge / finalize protocol of the frequency oracles and of P-RS.

For GRR, OLH, FLH, Hadamard response, OUE, SUE, CMS, HCMS and THE (equal budgets, personal
budgets from a continuum and from a few levels; legal reports, malformed
reports of the right dtype, malformed reports of another dtype) and for
P-RS-GRR/OLH/HR: reports are split at random points, every chunk becomes a
partial (with its slice of the identities), the partials are merged in a
random order or tree, and the finalized result must equal the one-shot
``estimate`` bit for bit. Also: the exact sums against ``math.fsum``, empty
chunks, byte and pickle round trips, partials of any budgets merging
(equal personal budgets are the equal-budget decode), refusal of partials
of other mechanisms or parameters, rebuilding a server from
``stream_params``, and a state whose size does not grow with the number of
reports.
"""

import functools
import json
import math
import pickle
import zlib

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _merging import merge_in_order
from fastldp.oracles import FLH, GRR, OLH, OUE, SUE, FrequencyEstimate, HadamardResponse
from fastldp.oracles import BLH, AdaptiveOracle, SubsetSelection
from fastldp.oracles import CMS, HCMS
from fastldp.oracles import THE
from fastldp.oracles import DiscreteSHE
from fastldp.oracles._exact_sums import add_weighted_hits
from fastldp.oracles.olh import olh_hash
from fastldp.relations import JPRS, PaddedRelationSampling
from fastldp.relations.decoders import Decoded
from fastldp.streaming import ExactSum, Partial, merge_all

N = 300

ORACLES = {
    "grr": lambda: GRR(domain_size=23, epsilon=1.0, codebook_seed=7, n_threads=2),
    "olh": lambda: OLH(domain_size=40, epsilon=1.5, codebook_seed=8, n_threads=2),
    "flh": lambda: FLH(domain_size=30, epsilon=1.0, n_hashes=16, codebook_seed=9, n_threads=2),
    "hr": lambda: HadamardResponse(domain_size=20, epsilon=1.0, codebook_seed=10),
    "oue": lambda: OUE(domain_size=19, epsilon=1.0, codebook_seed=11, n_threads=2),
    "sue": lambda: SUE(domain_size=19, epsilon=2.0, codebook_seed=12, n_threads=2),
    "ss": lambda: SubsetSelection(domain_size=19, epsilon=1.0, codebook_seed=15, n_threads=2),
    "blh": lambda: BLH(domain_size=40, epsilon=1.5, codebook_seed=16, n_threads=2),
    # chooses GRR (D < 3 e^eps + 2): integer reports
    "auto": lambda: AdaptiveOracle(domain_size=5, epsilon=2.0, codebook_seed=17, n_threads=2),
    # 70 columns: two sign words, 6 bits used in the last
    "cms": lambda: CMS(domain_size=21, epsilon=1.0, n_rows=8, n_columns=70,
                       codebook_seed=13, n_threads=2),
    "hcms": lambda: HCMS(domain_size=21, epsilon=1.0, n_rows=8, n_columns=32,
                         codebook_seed=14, n_threads=2),
    # thresholded histogram encoding: OUE's packed rows, personal budgets at their own threshold
    "the": lambda: THE(domain_size=19, epsilon=1.0, codebook_seed=18, n_threads=2),
    # integer (n, D) rows; D = 8 so that the default corruption writes one 8-vector per row
    "she-discrete": lambda: DiscreteSHE(domain_size=8, epsilon=1.0, codebook_seed=19),
}
BUDGETS = ("equal", "continuous", "levels")
MALFORMED = ("none", "same-dtype", "object")


def _budgets(kind, n, rng):
    if kind == "equal":
        return None
    if kind == "continuous":
        return rng.uniform(0.3, 3.0, n)
    return rng.choice([0.5, 1.0, 2.5], n)


def _seed(*words):
    return zlib.crc32("/".join(words).encode())


def _ids(n, seed):
    return np.random.default_rng(seed).choice(2**40, size=n, replace=False).astype(np.uint64)


def _corrupt(name, y, kind, rng):
    """Malformed reports at a few rows: same dtype (out of range) or an object array."""
    if kind == "none":
        return y
    rows = rng.choice(y.shape[0], size=8, replace=False)
    if name in ("oue", "sue", "ss", "the"):
        if kind == "same-dtype":  # uint8 rows with padding bits set (D = 19: 5 padding bits)
            y = y.copy()
            y[rows, -1] |= np.uint8(0x80)
            return y
        y = y.astype(object)
        y[rows[:3], 0] = ["x", None, 2.5]
        y[rows[3:], 1] = [300, -1, np.nan, float("inf"), 7.0]
        return y
    if name == "flh":
        if kind == "same-dtype":
            y = y.copy()
            y[rows[:4], 0] = [-1, 16, 99, 2**40]
            y[rows[4:], 1] = [-3, 10**6, 4, 5]
            return y
        y = y.astype(object)
        y[rows[:4], 0] = ["x", None, 2.5, np.nan]
        y[rows[4:], 1] = [-1, 1e300, 3.0, 10**30]
        return y
    if name == "cms":  # (row, two sign words); a padding bit of the last word is illegal
        if kind == "same-dtype":
            y = y.copy()
            y[rows[:4], 0] = [-1, 8, 99, 2**40]
            y[rows[4:], 2] |= 1 << 10
            return y
        y = y.astype(object)
        y[rows[:4], 0] = ["x", None, 2.5, np.nan]
        y[rows[4:], 1] = [2**64, 1e300, 3.5, "y"]
        return y
    if name == "hcms":  # (row, Hadamard row, +-1)
        if kind == "same-dtype":
            y = y.copy()
            y[rows[:4], 0] = [-1, 8, 99, 2**40]
            y[rows[4:], 2] = [0, 2, -3, 5]
            return y
        y = y.astype(object)
        y[rows[:4], 1] = ["x", None, 2.5, np.nan]
        y[rows[4:], 2] = [0, 1e300, 0.5, 10**30]
        return y
    if kind == "same-dtype":
        y = y.copy()
        y[rows] = [-1, -5, 10**6, 2**40, 99, 64, -2**62, 1000]
        return y
    y = y.astype(object)
    y[rows] = ["x", None, 2.5, np.nan, float("-inf"), -1, 10**30, 3 + 1j]
    return y


@functools.lru_cache(maxsize=None)
def oracle_case(name, budgets, malformed, custom_ids, n=N):
    oracle = ORACLES[name]()
    rng = np.random.default_rng(_seed(name, budgets, malformed))
    eps = _budgets(budgets, n, rng)
    ids = _ids(n, 3) if custom_ids else None
    x = rng.integers(0, oracle.domain_size, n)
    y = oracle.privatize(x, epsilons=eps, identities=ids, rng=rng)
    y = _corrupt(name, y, malformed, rng)
    want = oracle.estimate(y, epsilons=eps, identities=ids)
    return oracle, y, eps, ids, want


def _bounds(n, cuts):
    b = [0, *sorted(cuts), n]
    return list(zip(b[:-1], b[1:]))


def _slice(v, a, b):
    return None if v is None or np.ndim(v) == 0 else v[a:b]


def _chunk_ids(ids, a, b):
    return np.arange(a, b, dtype=np.uint64) if ids is None else ids[a:b]


def _merge(server, partials, mode, seed):
    return merge_in_order(server, partials, mode, seed)


def _same_array(a, b):
    return a.dtype == b.dtype and a.shape == b.shape and a.tobytes() == b.tobytes()


def assert_same_estimate(got, want):
    assert isinstance(got, FrequencyEstimate)
    assert _same_array(got.counts, want.counts)
    assert _same_array(got.variances, want.variances)
    assert got.sanitization == want.sanitization
    assert got.n == want.n


def assert_same_decode(got, want):
    assert isinstance(got, Decoded)
    assert _same_array(got.matrix, want.matrix) and _same_array(got.linear, want.linear)
    assert (got.decoder, got.n_groups, got.medoid_group) == (want.decoder, want.n_groups,
                                                             want.medoid_group)
    assert got.sanitization == want.sanitization


def _oracle_partials(oracle, y, eps, ids, cuts):
    return [oracle.partial(y[a:b], _slice(eps, a, b), _chunk_ids(ids, a, b))
            for a, b in _bounds(y.shape[0], cuts)]


# ---------------------------------------------------------------- the protocol, oracles
@pytest.mark.parametrize("malformed", MALFORMED)
@pytest.mark.parametrize("budgets", BUDGETS)
@pytest.mark.parametrize("name", sorted(ORACLES))
@settings(max_examples=25, deadline=None, derandomize=True)
@given(cuts=st.lists(st.integers(0, N), max_size=6),
       mode=st.sampled_from(["sequential", "balanced", "tree"]),
       custom_ids=st.booleans(),
       seed=st.integers(0, 2**32 - 1))
def test_oracle_split_and_merge_is_bit_identical(name, budgets, malformed, cuts, mode,
                                                 custom_ids, seed):
    oracle, y, eps, ids, want = oracle_case(name, budgets, malformed, custom_ids)
    merged = _merge(oracle, _oracle_partials(oracle, y, eps, ids, cuts), mode, seed)
    assert merged.counts["n"] == N
    assert_same_estimate(oracle.finalize(merged), want)
    if malformed != "none":
        assert want.sanitization.n_valid < N


@pytest.mark.parametrize("budgets", BUDGETS)
@pytest.mark.parametrize("name", sorted(ORACLES))
def test_estimate_is_finalize_of_partial(name, budgets):
    oracle, y, eps, ids, want = oracle_case(name, budgets, "object", True)
    one = oracle.partial(y, eps, ids)
    assert one.mechanism == type(oracle).__name__ and one.params == oracle.stream_params()
    assert_same_estimate(oracle.finalize(one), want)
    # keyword arguments and the estimate's keywords agree too
    assert_same_estimate(oracle.finalize(oracle.partial(reports=y, epsilons=eps, identities=ids)),
                         oracle.estimate(y, epsilons=eps, identities=ids))


@pytest.mark.parametrize("budgets", BUDGETS)
@pytest.mark.parametrize("name", sorted(ORACLES))
def test_empty_chunks_are_neutral(name, budgets):
    oracle, y, eps, ids, want = oracle_case(name, budgets, "same-dtype", False)
    empty = oracle.partial(y[:0], None if eps is None else eps[:0], np.zeros(0, dtype=np.uint64))
    assert empty.counts["n"] == 0
    full = oracle.partial(y, eps)
    assert oracle.merge(empty, full) == full == oracle.merge(full, empty)
    # an empty decode is all zeros, as estimate([]) is
    zero = oracle.finalize(empty)
    assert zero.n == 0 and not zero.counts.any() and not zero.variances.any()
    assert zero.sanitization.n_received == 0
    assert_same_estimate(oracle.finalize(oracle.merge(empty, full)), want)


@pytest.mark.parametrize("budgets", BUDGETS)
@pytest.mark.parametrize("name", sorted(ORACLES))
def test_bytes_and_pickle_round_trips(name, budgets):
    oracle, y, eps, ids, want = oracle_case(name, budgets, "object", False)
    parts = _oracle_partials(oracle, y, eps, ids, [50, 50, 200])
    for p in parts:
        for back in (Partial.from_bytes(p.to_bytes()), pickle.loads(pickle.dumps(p))):
            assert back == p
    restored = [Partial.from_bytes(p.to_bytes()) for p in parts]
    assert_same_estimate(oracle.finalize(merge_all(restored)), want)
    pickled = pickle.loads(pickle.dumps(merge_all(parts)))
    assert_same_estimate(oracle.finalize(pickled), want)


@pytest.mark.parametrize("name", sorted(ORACLES))
def test_stream_params_rebuild_an_equivalent_server(name):
    oracle, y, eps, ids, want = oracle_case(name, "continuous", "object", True)
    params = oracle.stream_params()
    assert json.loads(json.dumps(params)) == params
    assert "n_threads" not in params
    assert {"domain_size", "epsilon", "codebook_seed"} <= set(params)
    twin = type(oracle)(**params, n_threads=1)
    assert twin.stream_params() == params
    p = oracle.partial(y, eps, ids)
    assert_same_estimate(twin.finalize(p), want)
    assert twin.partial(y, eps, ids) == p  # the thread count changes nothing


def test_stream_params_of_an_oracle_without_a_default_budget():
    o = OLH(domain_size=12, epsilon=None, codebook_seed=3)
    assert o.stream_params() == {"domain_size": 12, "epsilon": None, "codebook_seed": 3}
    eps = np.full(40, 1.0)
    y = o.privatize(np.arange(40) % 12, epsilons=eps, rng=0)
    assert_same_estimate(OLH(**o.stream_params()).finalize(o.partial(y, eps)),
                         o.estimate(y, epsilons=eps))
    with pytest.raises(ValueError, match="'epsilons' parameter of OLH.partial"):
        o.partial(y)
    assert FLH(domain_size=12, epsilon=1.0, n_hashes=5, codebook_seed=3).stream_params() == {
        "domain_size": 12, "epsilon": 1.0, "codebook_seed": 3, "n_hashes": 5}


# ---------------------------------------------------------------- refusals
def test_partials_of_other_oracles_or_parameters_do_not_merge():
    D = 16
    grr = GRR(domain_size=D, epsilon=1.0, codebook_seed=1)
    x = np.arange(40) % D
    p = grr.partial(grr.privatize(x, rng=0))
    others = [
        OLH(domain_size=D, epsilon=1.0, codebook_seed=1),
        GRR(domain_size=D, epsilon=2.0, codebook_seed=1),
        GRR(domain_size=D, epsilon=1.0, codebook_seed=2),
        GRR(domain_size=D + 1, epsilon=1.0, codebook_seed=1),
        HadamardResponse(domain_size=D, epsilon=1.0, codebook_seed=1),
    ]
    for other in others:
        q = other.partial(other.privatize(x, rng=0))
        with pytest.raises(ValueError):
            p.merge(q)
        with pytest.raises(ValueError):
            grr.merge(p, q)
        with pytest.raises(ValueError):
            grr.merge(q, p)
        with pytest.raises(ValueError, match="cannot be finalized here"):
            grr.finalize(q)
        with pytest.raises(ValueError, match="cannot be finalized here"):
            other.finalize(p)
    flh4, flh5 = (FLH(domain_size=D, epsilon=1.0, n_hashes=h, codebook_seed=1) for h in (4, 5))
    q4 = flh4.partial(flh4.privatize(x, rng=0))
    with pytest.raises(ValueError):
        flh5.finalize(q4)
    with pytest.raises(TypeError):
        grr.finalize("not a partial")


@pytest.mark.parametrize("malformed", ["none", "object"])
@pytest.mark.parametrize("name", sorted(ORACLES))
def test_equal_personal_budgets_are_the_fixed_budget_estimate(name, malformed):
    # every budget equal to the oracle's epsilon is the equal-budget decode, bit for bit
    # (it used to take the personal-budget path: 1e-10 apart for OLH and OUE)
    oracle, y, _, ids, want = oracle_case(name, "equal", malformed, True)
    eps = oracle.epsilon
    for epsilons in (np.full(N, eps), eps, [eps] * N):
        assert_same_estimate(oracle.estimate(y, epsilons=epsilons, identities=ids), want)
        assert oracle.partial(y, epsilons, ids) == oracle.partial(y, None, ids)


_CHUNK_BUDGETS = ("oracle", "oracle-given", "other", "mixed")


def _chunk_budgets(kind, oracle, n, rng):
    """A chunk's budgets: None, the oracle's own, one other budget, or a mix with it."""
    if kind == "oracle":
        return None
    if kind == "oracle-given":
        return np.full(n, oracle.epsilon)
    if kind == "other":
        return np.full(n, 2.5)
    return rng.choice([oracle.epsilon, 0.5, 2.5], n)


@pytest.mark.parametrize("name", sorted(ORACLES))
@settings(max_examples=20, deadline=None, derandomize=True)
@given(kinds=st.lists(st.sampled_from(_CHUNK_BUDGETS), min_size=1, max_size=5),
       sizes=st.lists(st.integers(0, 80), min_size=5, max_size=5),
       mode=st.sampled_from(["sequential", "balanced", "tree"]),
       seed=st.integers(0, 2**32 - 1))
def test_partials_of_any_budgets_merge_into_the_one_shot_estimate(name, kinds, sizes, mode,
                                                                  seed):
    # chunks that are each uniform but differ (the oracle's budget, another one), mixed
    # chunks and empty ones: any merge order equals estimate() on all the reports
    oracle = ORACLES[name]()
    rng = np.random.default_rng(seed)
    sizes = sizes[:len(kinds)]
    n = sum(sizes)
    chunk_eps = [_chunk_budgets(k, oracle, m, rng) for k, m in zip(kinds, sizes)]
    eps = np.concatenate([np.full(m, oracle.epsilon) if e is None else e
                          for e, m in zip(chunk_eps, sizes)])
    ids = _ids(n, seed % 1000)
    y = oracle.privatize(rng.integers(0, oracle.domain_size, n), epsilons=eps, identities=ids,
                         rng=rng)
    bounds = np.concatenate([[0], np.cumsum(sizes)])
    parts = [oracle.partial(y[a:b], e, ids[a:b])
             for a, b, e in zip(bounds[:-1], bounds[1:], chunk_eps)]
    got = oracle.finalize(_merge(oracle, parts, mode, seed))
    assert_same_estimate(got, oracle.estimate(y, epsilons=eps, identities=ids))
    if not (eps != oracle.epsilon).any():  # every report at the oracle's budget
        assert_same_estimate(got, oracle.estimate(y, identities=ids))


def test_scaled_sums_are_exact():
    from fractions import Fraction

    from fastldp.oracles._exact_sums import count_sum, scaled_sum

    rng = np.random.default_rng(2)
    for count in (0, 1, 12345, 2**36 + 7, 2**63 + 2**40 + 3, 3**60):
        for value in (1.0, -0.1, 1 / 3, 7.3e25, -2.2e-9):
            got = float(scaled_sum(count_sum(count), value).value()[0])
            assert got == float(Fraction(value) * count)
    ints = ExactSum(6)
    counts = rng.integers(0, 2**40, 6)
    ints.add_integers(counts)
    value = float(rng.standard_normal())
    want = [float(Fraction(value) * int(c)) for c in counts]
    assert scaled_sum(ints, value).value().tolist() == want


def test_finalize_refuses_other_mechanisms_partials():
    grr = GRR(domain_size=25, epsilon=1.0, codebook_seed=4)
    prs = PaddedRelationSampling(shape=(4, 5), k=5, s=3, oracle="grr", codebook_seed=4)
    jprs = JPRS(shape=(4, 5), k=2, s=3, codebook_seed=4)
    y = np.arange(10) % 25
    jp = jprs.partial(np.ones(10, dtype=np.int8), 1.0)
    pp = prs.partial(y, 1.0)
    gp = grr.partial(y)
    for server, foreign in ((grr, pp), (grr, jp), (prs, gp), (prs, jp), (jprs, pp), (jprs, gp)):
        with pytest.raises(ValueError):
            server.finalize(foreign)
    other = PaddedRelationSampling(shape=(4, 5), k=5, s=3, oracle="hr", codebook_seed=4)
    with pytest.raises(ValueError):
        other.finalize(pp)
    with pytest.raises(ValueError):
        prs.merge(pp, other.partial(np.arange(10) % 32, 1.0))


# ---------------------------------------------------------------- exactness and size
def _fsum_support(weights, hit):
    """Correctly rounded ``sum_i weights[i] hit[i, v]`` per column (math.fsum)."""
    return np.array([math.fsum(weights[hit[:, v]]) for v in range(hit.shape[1])])


@pytest.mark.parametrize("levels", [False, True])
def test_kernel_sums_are_exact(levels):
    # the limb path (many distinct weights) and the class path (few) against math.fsum
    rng = np.random.default_rng(1)
    n, D = 700, 37
    eps = rng.choice([0.4, 1.3, 2.9], n) if levels else rng.uniform(0.2, 4.0, n)
    ids = np.arange(n, dtype=np.uint64)
    # levels: three distinct weights (one unit-weight kernel pass each); otherwise
    # 700 distinct weights over many binary exponents (integer limbs)
    lam = (np.ones(n) if levels
           else rng.uniform(0.5, 2.0, n) * np.where(rng.random(n) < 0.5, 1e-3, 1e5))
    olh = OLH(domain_size=D, epsilon=None, codebook_seed=5, n_threads=2)
    y = olh.privatize(rng.integers(0, D, n), epsilons=eps, rng=2)
    support, _ = olh.weighted_sums(y, eps, ids, lam)
    g = olh.buckets(eps)
    a = lam / (olh._p(eps, g) - 1.0 / g)
    hashed = olh_hash(5, np.repeat(ids, D), np.tile(np.arange(D), n), np.repeat(g, D))
    hit = hashed.reshape(n, D) == y[:, None]
    assert _same_array(support.value(), _fsum_support(a, hit))

    oue = OUE(domain_size=D, epsilon=None, codebook_seed=5, n_threads=2)
    rows = oue.privatize(rng.integers(0, D, n), epsilons=eps, rng=3)
    support, _ = oue.weighted_sums(rows, eps, ids, lam)
    p, q = oue._pq(eps)
    bits = np.unpackbits(rows, axis=1, bitorder="little")[:, :D].astype(bool)
    assert _same_array(support.value(), _fsum_support(lam / (p - q), bits))


def test_add_weighted_hits_handles_signs_zeros_and_wide_exponents():
    rng = np.random.default_rng(4)
    n, size = 500, 9
    hit = rng.random((n, size)) < 0.3
    w = rng.standard_normal(n) * np.exp2(rng.integers(-80, 80, n))
    w[:20] = 0.0

    def hits(members, weights):
        h = hit if members is None else hit[members]
        ww = np.ones(h.shape[0]) if weights is None else weights
        return (h * ww[:, None]).sum(axis=0)

    for values in (w, np.round(w[:5].repeat(100))):
        total = ExactSum(size)
        add_weighted_hits(total, values, hits)
        assert _same_array(total.value(), _fsum_support(values, hit))


@pytest.mark.parametrize("budgets", BUDGETS)
@pytest.mark.parametrize("name", sorted(ORACLES))
def test_partial_state_does_not_grow_with_n(name, budgets):
    oracle = ORACLES[name]()
    size = {"hr": 32, "flh": 16 * getattr(oracle, "g", 0), "cms": 8 * 70,
            "hcms": 2 * 8 * 32}.get(name, oracle.domain_size)
    rng = np.random.default_rng(6)
    shapes = []
    for n in (40, 4000):
        eps = _budgets(budgets, n, rng)
        y = oracle.privatize(rng.integers(0, oracle.domain_size, n), epsilons=eps, rng=rng)
        p = oracle.partial(y, eps)
        assert set(p.sums) == {"hits", "support", "offset", "var", "held_minus_var"}
        for key, s in p.sums.items():
            assert s.size == (1 if key in ("offset", "var", "held_minus_var") else size)
            assert s.digits.shape[1] == s.size and s.canonical()[1].shape[0] <= 40
        shapes.append({k: s.canonical()[1].shape for k, s in p.sums.items()})
        assert set(p.counts) == {"n", "n_valid", "reason:non_numeric", "reason:non_integer",
                                 "reason:out_of_range", "personal"}
    for key in shapes[0]:
        assert shapes[0][key][1] == shapes[1][key][1]
        assert shapes[1][key][0] <= shapes[0][key][0] + 1  # at most one more digit row


# ---------------------------------------------------------------- P-RS
PRS_SHAPE, PRS_K = (5, 6), 3


@functools.lru_cache(maxsize=None)
def prs_case(oracle, budgets, malformed, n=N):
    mech = PaddedRelationSampling(shape=PRS_SHAPE, k=PRS_K, s=5, oracle=oracle, codebook_seed=21,
                                  n_threads=2)
    rng = np.random.default_rng(_seed('prs', oracle, budgets, malformed))
    p = mech.p
    sets = []
    for _ in range(n):
        m = int(rng.integers(0, PRS_K + 1))
        pairs = rng.choice(p, size=m, replace=False)
        sets.append(np.stack(np.divmod(pairs, PRS_SHAPE[1]), axis=1).reshape(-1, 2))
    eps = {"equal": 1.0, "continuous": rng.uniform(0.3, 3.0, n),
           "levels": rng.choice([0.5, 1.0, 2.5], n)}[budgets]
    ids = _ids(n, 22)
    y = mech.privatize(sets, epsilons=eps, identities=ids, rng=rng)
    if malformed == "object":
        y = y.astype(object)
        rows = rng.choice(n, size=6, replace=False)
        y[rows] = ["x", None, 2.5, np.nan, -1, 10**9]
    want = mech.estimate(y, epsilons=eps, identities=ids)
    return mech, y, eps, ids, want


@pytest.mark.parametrize("malformed", ["none", "object"])
@pytest.mark.parametrize("budgets", BUDGETS)
@pytest.mark.parametrize("oracle", ["grr", "olh", "hr"])
@settings(max_examples=25, deadline=None, derandomize=True)
@given(cuts=st.lists(st.integers(0, N), max_size=6),
       mode=st.sampled_from(["sequential", "balanced", "tree"]),
       seed=st.integers(0, 2**32 - 1))
def test_prs_split_and_merge_is_bit_identical(oracle, budgets, malformed, cuts, mode, seed):
    mech, y, eps, ids, want = prs_case(oracle, budgets, malformed)
    parts = [mech.partial(y[a:b], eps if np.ndim(eps) == 0 else eps[a:b], ids[a:b])
             for a, b in _bounds(N, cuts)]
    merged = _merge(mech, parts, mode, seed)
    assert merged.counts["n"] == N and merged.mechanism == mech.family
    assert_same_decode(mech.finalize(merged), want)


@pytest.mark.parametrize("oracle", ["grr", "olh", "hr"])
def test_prs_estimate_is_the_global_decoder(oracle):
    mech, y, eps, ids, want = prs_case(oracle, "continuous", "object")
    assert_same_decode(mech.decode(y, eps, identities=ids)["global"], want)
    assert_same_decode(mech.finalize(mech.partial(y, eps, ids)), want)


@pytest.mark.parametrize("oracle", ["grr", "olh", "hr"])
def test_prs_round_trips_params_and_empty_chunks(oracle):
    mech, y, eps, ids, want = prs_case(oracle, "levels", "object")
    params = mech.stream_params()
    assert json.loads(json.dumps(params)) == params
    twin = PaddedRelationSampling(**params)
    assert twin.stream_params() == params and twin.family == mech.family
    parts = [mech.partial(y[:0], eps[:0], ids[:0]), mech.partial(y[:100], eps[:100], ids[:100]),
             mech.partial(y[100:], eps[100:], ids[100:])]
    for p in parts:
        assert Partial.from_bytes(p.to_bytes()) == p == pickle.loads(pickle.dumps(p))
    merged = merge_all([Partial.from_bytes(p.to_bytes()) for p in parts])
    assert_same_decode(twin.finalize(merged), want)
    with pytest.raises(ValueError, match="holds no reports"):
        mech.finalize(parts[0])
    # the state: p + k symbols (K Hadamard columns), whatever n
    width = 64 if oracle == "hr" else mech.p + mech.k
    assert merged.sums["support"].size == width
    assert merged.sums["offset"].size == merged.sums["lam_sum"].size == 1


def test_partial_repr_is_one_short_line():
    # the repr listed every sum and count name: a state with many of them ran past a line
    oracle = GRR(domain_size=5, epsilon=1.0, codebook_seed=3)
    part = oracle.partial(oracle.privatize(np.arange(5), rng=0))
    assert repr(part).startswith("Partial(GRR, n=5, sums=[") and len(repr(part)) <= 200
    many = Partial("Toy", {"d": 1}, counts={f"reason:malformed_kind_{i}": 0 for i in range(40)},
                   sums={f"sum_{i}": ExactSum(1) for i in range(40)})
    text = repr(many)
    assert len(text) <= 200 and "\n" not in text and text.startswith("Partial(Toy, n=None")
    assert text.endswith("...)")
