"""The partial / merge / finalize protocol of the sparse-vector servers.

For RPC, Succinct, PCKV-UE, PCKV-GRR, PrivKVM and Collision: reports (some
of them malformed, so sanitization runs) are split at random points, every
chunk becomes a partial, the partials are merged in a random order or tree,
and the finalized result must equal the one-shot ``estimate`` bit for bit,
array by array. Also: empty chunks, byte and pickle round trips, refusal of
partials of other mechanisms or parameters, the fixed budget's
``epsilons`` check, rebuilding a server from ``stream_params``, and a
state whose size does not grow with the number of reports.
"""

import dataclasses
import functools
import json
import pickle

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _merging import merge_in_order
from fastldp._kernels._sketch import global_sketch
from fastldp._sanitize import SanitizationReport
from fastldp.streaming import Partial, merge_all
from fastldp.vectors import PCKVGRR, PCKVUE, RPC, Collision, PrivKVM, PrivKVMReports, Succinct


# ---------------------------------------------------------------- data
def _vectors(n, d, m, kind, rng):
    """Dense (n, d) data with at most m stored entries per user."""
    x = np.zeros((n, d))
    for i in range(n):
        k = int(rng.integers(0, m + 1))
        cols = rng.choice(d, size=k, replace=False)
        if kind == "ternary":
            x[i, cols] = rng.choice([-1.0, 1.0], size=k)
        elif kind == "binary":
            x[i, cols] = 1.0
        else:
            x[i, cols] = rng.uniform(-1.0, 1.0, size=k)
    return x


def _ids(n, seed):
    return np.random.default_rng(seed).choice(2**40, size=n, replace=False).astype(np.uint64)


def _rpc(n, randomizer="duchi", **kw):
    mech = RPC(d=30, m=3, epsilon=1.0, randomizer=randomizer, codebook_seed=11, n_threads=2,
               **kw)
    kind = "values" if kw.get("values") in ("direct", "rounded") else "ternary"
    ids = _ids(n, 1)
    y = mech.privatize(_vectors(n, 30, 3, kind, np.random.default_rng(2)), identities=ids, rng=3)
    y[[3, 40, 77, 120, n - 1]] = [np.nan, np.inf, -1e9, 0.25, -np.inf]
    return mech, y, ids


def _rpc_object(n):
    mech, y, ids = _rpc(n)
    y = y.astype(object)
    y[[5, 60, 90]] = ["x", None, 3 + 1j]
    return mech, y, ids


def _succinct(n, b, randomizer):
    mech = Succinct(d=25, m=3, epsilon=2.0, b=b, n_users=n, randomizer=randomizer,
                    codebook_seed=5, n_threads=2)
    ids = _ids(n, 4)
    y = mech.privatize(_vectors(n, 25, 3, "values", np.random.default_rng(5)), identities=ids,
                       rng=6)
    y[7, 0], y[80, b - 1], y[150, 0] = np.nan, 1e6, -np.inf
    return mech, (y[:, 0].copy() if b == 1 else y), ids


def _pckvue(n):
    mech = PCKVUE(d=20, m=3, epsilon=1.5, clip_estimate="mean")
    y = mech.privatize(_vectors(n, 20, 3, "values", np.random.default_rng(7)), rng=8)
    y = y.astype(np.float64)
    y[4, 2], y[50, 0], y[99, 21], y[100, 5] = 2.0, np.nan, -np.inf, 0.5
    return mech, y, None


def _pckvgrr(n):
    mech = PCKVGRR(d=20, m=3, epsilon=1.5)
    y = mech.privatize(_vectors(n, 20, 3, "values", np.random.default_rng(9)), rng=10)
    y = y.astype(np.float64)
    y[3, 0], y[30, 0], y[60, 0], y[90, 1], y[91, 1] = 1e9, 2.5, np.nan, 0.0, np.nan
    return mech, y, None


def _privkvm(n):
    mech = PrivKVM(d=15, m=3, epsilon=2.0, n_rounds=3)
    rep = mech.privatize(_vectors(n, 15, 3, "values", np.random.default_rng(11)), rng=12)
    keys, bits, vals = (rep.keys.astype(np.float64), rep.key_bits.astype(np.float64),
                        rep.values.astype(np.float64))
    keys[[2, 40, 70]] = [np.nan, 2.5, 99.0]
    bits[[10, 11]] = [0.7, -3.0]
    vals[20, 1], vals[21, 2] = 0.0, 2.0
    vals[np.flatnonzero(bits == 0)[0], 0] = 1.0
    return mech, PrivKVMReports(keys, bits, vals), None


def _collision(n, values):
    mech = Collision(d=20, m=3, epsilon=1.0, values=values, codebook_seed=13, n_threads=2)
    ids = _ids(n, 14)
    kind = "binary" if values == "frequency" else "values"
    y = mech.privatize(_vectors(n, 20, 3, kind, np.random.default_rng(15)), identities=ids,
                       rng=16).astype(np.float64)
    y[[1, 33, 66, 99]] = [mech.t + 5, 2.5, np.nan, -1.0]
    return mech, y, ids


CASES = {
    "rpc-duchi": lambda n: _rpc(n),
    "rpc-piecewise-clip": lambda n: _rpc(n, "piecewise", clip_estimate="frequency"),
    "rpc-laplace": lambda n: _rpc(n, "laplace"),
    "rpc-direct": lambda n: _rpc(n, "piecewise", values="direct", R=2.5),
    "rpc-rounded-minvar": lambda n: _rpc(n, "auto", values="rounded", R="min-variance"),
    "rpc-object": _rpc_object,
    "succinct-b1": lambda n: _succinct(n, 1, "duchi"),
    "succinct-b3": lambda n: _succinct(n, 3, "piecewise"),
    "pckvue": _pckvue,
    "pckvgrr": _pckvgrr,
    "privkvm": _privkvm,
    "collision-frequency": lambda n: _collision(n, "frequency"),
    "collision-signed": lambda n: _collision(n, "signed"),
}
N = 240


@functools.lru_cache(maxsize=None)
def case(name, n=N):
    mech, reports, ids = CASES[name](n)
    return mech, reports, ids, mech.estimate(reports, identities=ids)


def _chunk(reports, ids, a, b):
    return reports[a:b], (None if ids is None else ids[a:b])


def _partials(mech, reports, ids, cuts):
    n = len(reports)
    bounds = [0, *sorted(cuts), n]
    out = []
    for a, b in zip(bounds[:-1], bounds[1:]):
        chunk, chunk_ids = _chunk(reports, ids, a, b)
        out.append(mech.partial(chunk, None, chunk_ids))
    return out


def _merge(mech, partials, mode, seed):
    return merge_in_order(mech, partials, mode, seed)


def assert_identical(got, want):
    """Every field but the timings equal, arrays bit for bit (dtype and -0.0 included)."""
    assert type(got) is type(want)
    for f in dataclasses.fields(want):
        if f.name == "seconds":
            continue
        a, b = getattr(got, f.name), getattr(want, f.name)
        if isinstance(b, np.ndarray):
            assert a.dtype == b.dtype and a.shape == b.shape, f.name
            assert np.array_equal(a, b) and a.tobytes() == b.tobytes(), f.name
        elif isinstance(b, dict):
            assert a.keys() == b.keys(), f.name
            for k in b:
                assert np.array_equal(a[k], b[k]) and (np.asarray(a[k]).tobytes()
                                                       == np.asarray(b[k]).tobytes()), (f.name, k)
        else:
            assert a == b, f.name


# ---------------------------------------------------------------- the protocol
@pytest.mark.parametrize("name", sorted(CASES))
@settings(max_examples=20, deadline=None, derandomize=True)
@given(cuts=st.lists(st.integers(0, N), max_size=6),
       mode=st.sampled_from(["sequential", "balanced", "tree"]),
       seed=st.integers(0, 2**32 - 1))
def test_any_split_and_merge_order_is_bit_identical(name, cuts, mode, seed):
    mech, reports, ids, want = case(name)
    merged = _merge(mech, _partials(mech, reports, ids, cuts), mode, seed)
    assert merged.counts["users"] == N
    assert_identical(mech.finalize(merged), want)


@pytest.mark.parametrize("name", sorted(CASES))
def test_one_partial_and_merge_algebra(name):
    mech, reports, ids, want = case(name)
    whole = mech.partial(reports, None, ids)
    assert_identical(mech.finalize(whole), want)
    parts = _partials(mech, reports, ids, [17, 17, 101, 230])
    assert len(parts) == 5 and parts[1].counts["users"] == 0
    left = mech.merge(mech.merge(parts[0], parts[1]), mech.merge(parts[2], parts[3]))
    assert mech.merge(left, parts[4]) == whole
    assert mech.merge(parts[4], left) == whole
    # sanitization counts add up over chunks
    report = mech.finalize(whole).sanitization
    assert isinstance(report, SanitizationReport) and report.n_sanitized > 0


@pytest.mark.parametrize("name", sorted(CASES))
def test_empty_chunks(name):
    mech, reports, ids, want = case(name)
    empty, empty_ids = _chunk(reports, ids, 5, 5)
    e = mech.partial(empty, None, empty_ids)
    assert e.counts["users"] == 0 and e.counts["n"] == 0
    assert not any(s.value().any() for s in e.sums.values())
    full = mech.partial(reports, None, ids)
    assert mech.merge(e, full) == full == mech.merge(full, e)
    assert_identical(mech.finalize(mech.merge(e, mech.merge(full, e))), want)
    with pytest.raises(ValueError, match="no reports"):
        mech.finalize(e)
    with pytest.raises(ValueError, match="no reports"):
        mech.finalize(mech.merge(e, e))


@pytest.mark.parametrize("mech", [
    RPC(d=5, m=2, epsilon=1.0, codebook_seed=1),
    Succinct(d=5, m=2, epsilon=1.0, b=1, R=1.0, codebook_seed=1),
    Succinct(d=5, m=2, epsilon=1.0, b=2, R=1.0, codebook_seed=1),
    Collision(d=5, m=2, epsilon=1.0, codebook_seed=1),
    PCKVUE(d=5, m=2, epsilon=1.0),
    PCKVGRR(d=5, m=2, epsilon=1.0),
], ids=lambda m: type(m).__name__)
def test_plain_empty_inputs_are_chunks(mech):
    for empty in ([], np.empty(0), np.empty(0, dtype=object)):
        p = mech.partial(empty)
        assert p.counts["users"] == 0
    assert mech.partial(np.empty(0), None, np.empty(0, dtype=np.uint64)).counts["users"] == 0


def test_privkvm_reports_slice_and_triple_chunks():
    mech, rep, _, want = case("privkvm")
    assert len(rep) == N and len(rep[10:20]) == 10 and len(rep[5:5]) == 0
    mask = np.zeros(N, dtype=bool)
    mask[::3] = True
    assert len(rep[mask]) == mask.sum() and len(rep[np.arange(4)]) == 4
    np.testing.assert_array_equal(rep[np.arange(4)].keys, rep.take(np.arange(4)).keys)
    with pytest.raises(TypeError, match="slice"):
        rep[3]
    parts = [mech.partial(rep[:100]),
             mech.partial((rep.keys[100:], rep.key_bits[100:], rep.values[100:])),
             mech.partial(rep[0:0]),
             mech.partial((np.empty(0), np.empty(0), np.empty(0)))]
    assert_identical(mech.finalize(merge_all(parts)), want)
    with pytest.raises(ValueError, match="at least one user"):
        mech.estimate(rep[0:0])


# ---------------------------------------------------------------- serialization
@pytest.mark.parametrize("name", sorted(CASES))
def test_bytes_and_pickle_round_trips(name):
    mech, reports, ids, want = case(name)
    a, b = _partials(mech, reports, ids, [90])
    for p in (a, b, mech.merge(a, b)):
        for back in (Partial.from_bytes(p.to_bytes()), pickle.loads(pickle.dumps(p))):
            assert back == p
            assert back.params == mech.stream_params()
    restored = mech.merge(Partial.from_bytes(a.to_bytes()), pickle.loads(pickle.dumps(b)))
    assert_identical(mech.finalize(restored), want)
    # the header is JSON: the parameters survive it unchanged
    assert json.loads(json.dumps(mech.stream_params())) == mech.stream_params()


# ---------------------------------------------------------------- refusals
def _other_params(name):
    """A server of the same class with one public parameter changed."""
    mech = case(name)[0]
    params = mech.stream_params()
    for key in ("codebook_seed", "epsilon"):
        if key in params:
            params[key] = params[key] + 1
            break
    if "epsilon_split" in params:
        params["epsilon_split"] = None
    return type(mech)(**params)


@pytest.mark.parametrize("name", sorted(CASES))
def test_mismatched_partials_refuse_to_merge_and_finalize(name):
    mech, reports, ids, _ = case(name)
    mine = mech.partial(reports[:50], None, None if ids is None else ids[:50])
    other = _other_params(name)
    theirs = other.partial(reports[:50], None, None if ids is None else ids[:50])
    with pytest.raises(ValueError, match="merge"):
        mech.merge(mine, theirs)
    with pytest.raises(ValueError, match="merge"):
        mech.merge(theirs, mine)
    with pytest.raises(ValueError):
        mine.merge(theirs)
    with pytest.raises(ValueError, match="finalize"):
        mech.finalize(theirs)
    with pytest.raises(ValueError, match="finalize"):
        other.finalize(mine)
    with pytest.raises(TypeError):
        mech.finalize(mech.finalize(mine))


def test_other_mechanisms_partials_are_refused():
    ue, grr = PCKVUE(d=6, m=2, epsilon=1.0), PCKVGRR(d=6, m=2, epsilon=1.0)
    assert ue.stream_params() == grr.stream_params()  # same parameters, other mechanism
    a = ue.partial(ue.privatize(np.eye(6)[:4], rng=0))
    b = grr.partial(grr.privatize(np.eye(6)[:4], rng=0))
    with pytest.raises(ValueError, match="PCKVGRR"):
        ue.merge(a, b)
    with pytest.raises(ValueError, match="PCKVUE"):
        grr.finalize(a)
    rpc = RPC(d=6, m=2, epsilon=1.0, codebook_seed=1)
    succ = Succinct(d=6, m=2, epsilon=1.0, R=1.0, codebook_seed=1)
    y = rpc.privatize(np.eye(6)[:4], rng=0)
    with pytest.raises(ValueError, match="RPC"):
        succ.finalize(rpc.partial(y))
    # a forged partial with this mechanism's name and parameters but other sums
    p = rpc.partial(y)
    forged = Partial("RPC", rpc.stream_params(), sums={}, counts=p.counts, flags=p.flags)
    with pytest.raises(ValueError, match="sums"):
        rpc.finalize(forged)


@pytest.mark.parametrize("name", ["rpc-duchi", "succinct-b3", "pckvue", "pckvgrr", "privkvm",
                                  "collision-signed"])
def test_epsilons_must_be_the_fixed_budget(name):
    mech, reports, ids, _ = case(name)
    chunk, chunk_ids = _chunk(reports, ids, 0, 30)
    ref = mech.partial(chunk, None, chunk_ids)
    assert mech.partial(chunk, mech.epsilon, chunk_ids) == ref
    assert mech.partial(chunk, np.full(30, mech.epsilon), chunk_ids) == ref
    for bad in (mech.epsilon * 2, np.full(30, 0.5), np.full(29, mech.epsilon), "one"):
        with pytest.raises(ValueError, match="epsilons"):
            mech.partial(chunk, bad, chunk_ids)


# ---------------------------------------------------------------- parameters
REBUILD = [
    RPC(d=12, m=4, epsilon=0.7, codebook_seed=2**63 + 5),
    RPC(d=12, m=4, epsilon=0.7, randomizer="auto", R="min-variance", values="rounded",
        clip_estimate=(-0.5, 0.5), codebook_seed=3),
    RPC(d=12, m=4, epsilon=0.7, randomizer="laplace", values="direct", beta=0.5, n_users=500,
        codebook_seed=3),
    RPC(d=12, m=4, epsilon=0.7, pad=False, R=2.0, codebook_seed=3),
    Succinct(d=12, m=4, epsilon=3.0, b=2, n_users=1000, randomizer="auto", codebook_seed=4),
    PCKVUE(d=12, m=4, epsilon=0.01),
    PCKVUE(d=12, m=4, epsilon=1.0),
    PCKVGRR(d=12, m=4, epsilon=7.3, clip_estimate="frequency"),
    PCKVGRR(d=12, m=4, epsilon=2.0, epsilon_split=(0.5, 1.0)),
    PrivKVM(d=12, m=4, epsilon=2.0, n_rounds=5, clip_estimate="mean"),
    Collision(d=12, m=4, epsilon=1.0, values="signed", codebook_seed=9),
    Collision(d=12, m=4, epsilon=1.0, t=40, codebook_seed=9),
]


@pytest.mark.parametrize("mech", REBUILD, ids=lambda m: type(m).__name__)
def test_stream_params_rebuild_an_equivalent_server(mech):
    params = mech.stream_params()
    assert "n_threads" not in params
    text = json.dumps(params)
    rebuilt = type(mech)(**json.loads(text))
    assert rebuilt.stream_params() == params
    for attr in ("alpha", "R", "a", "b", "p", "p1", "p2", "t", "omega", "scale"):
        if hasattr(mech, attr):
            assert getattr(rebuilt, attr) == getattr(mech, attr), attr
    if hasattr(mech, "randomizer"):
        assert rebuilt.randomizer.name == mech.randomizer.name
    x = _vectors(60, 12, 4, "binary", np.random.default_rng(0))
    ids = _ids(60, 0)
    y = mech.privatize(x, identities=ids, rng=1)
    assert_identical(rebuilt.finalize(mech.partial(y, None, ids)), mech.estimate(y, identities=ids))


# ---------------------------------------------------------------- size and threads
def _tiled(reports, times):
    if isinstance(reports, PrivKVMReports):
        return PrivKVMReports(np.tile(reports.keys, times), np.tile(reports.key_bits, times),
                              np.tile(reports.values, (times, 1)))
    return np.tile(reports, (times,) + (1,) * (np.ndim(reports) - 1))


@pytest.mark.parametrize("name", sorted(CASES))
def test_state_size_does_not_grow_with_n(name):
    """20 times the reports (same values, new identities): same sums, at most one more carry row.

    An exact sum holds ``p`` positions times the 32-bit digit rows that the
    values' binary range spans, plus the ``log2 n`` bits of carries.
    """
    mech, reports, ids, _ = case(name, 200)
    big = _tiled(reports, 20)
    big_ids = None if ids is None else _ids(4000, 99)
    ps = mech.partial(reports, None, ids)
    pl = mech.partial(big, None, big_ids)
    assert pl.counts["users"] == 4000
    assert {k: s.size for k, s in ps.sums.items()} == {k: s.size for k, s in pl.sums.items()}
    assert ps.counts.keys() == pl.counts.keys()
    for k, s in pl.sums.items():
        assert s.size in (1, mech.d, 2 * mech.d, mech.d * getattr(mech, "n_rounds", 1))
        assert s.canonical()[1].shape[0] <= ps.sums[k].canonical()[1].shape[0] + 1, k
    assert len(pl.to_bytes()) <= len(ps.to_bytes()) + 8 * sum(s.size for s in pl.sums.values())
    assert_identical(mech.finalize(pl), mech.estimate(big, identities=big_ids))


@pytest.mark.parametrize("name", ["rpc-piecewise-clip", "succinct-b1", "succinct-b3",
                                  "collision-frequency"])
def test_partials_do_not_depend_on_threads(name):
    mech, reports, ids, _ = case(name)
    params = mech.stream_params()
    one = type(mech)(**params, n_threads=1)
    four = type(mech)(**params, n_threads=4)
    assert one.partial(reports, None, ids) == four.partial(reports, None, ids)


def test_rpc_and_succinct_match_the_float_formula():
    """The exact sums change the published estimators only by rounding."""
    for name in ("rpc-duchi", "rpc-laplace", "rpc-direct"):
        mech, y, ids, est = case(name)
        z, _ = mech.sanitize(y, N)
        ref = global_sketch(mech.codebook_seed, ids, (mech.alpha / N) * z, mech.d, 1)
        np.testing.assert_allclose(est.raw, ref, rtol=1e-12, atol=1e-14)
    mech, y, ids, est = case("succinct-b3")
    lo, hi = mech.output_bounds
    yy = np.nan_to_num(np.clip(y, lo, hi), nan=0.0, posinf=hi, neginf=lo)
    coords = np.arange(mech.d)
    naive = np.zeros(mech.d)
    for i in range(N):
        s = mech.signs(np.full(mech.d, ids[i]), coords)
        h = mech.buckets(np.full(mech.d, ids[i]), coords)
        naive += s * yy[i, h]
    np.testing.assert_allclose(est.raw, naive / N, rtol=1e-12, atol=1e-14)
