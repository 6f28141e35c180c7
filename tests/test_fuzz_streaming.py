"""Fuzzing the streaming entry points: hostile chunks, hostile bytes, hostile specs.

The contract is the one of ``tests/test_fuzz_api.py``: a clear ``ValueError``
/ ``TypeError``, or - for report contents - a sanitized and counted result.
A chunk's partial must merge with the others into the one-shot estimate.
"""

import json
import os

import numpy as np
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st

from conftest import fuzz
from fastldp import mechanisms, oracles
from fastldp.relations import JPRS
from fastldp.streaming import ExactSum, Partial

CLEAR = (ValueError, TypeError)

scalars = st.one_of(
    st.integers(-2**70, 2**70), st.floats(allow_nan=True, allow_infinity=True),
    st.text(max_size=3), st.none(), st.booleans(), st.just(2**63),
    st.sampled_from([np.nan, np.inf, -np.inf, 1e308, -0.0, 5e-324]),
)


@fuzz(30)
@given(reports=st.lists(scalars, min_size=0, max_size=8), cut=st.integers(0, 8))
def test_jprs_partials_of_hostile_chunks_merge_into_the_estimate(reports, cut):
    mech = JPRS(shape=(3, 4), k=2, s=2, codebook_seed=1, n_threads=1)
    n = len(reports)
    cut = min(cut, n)
    eps = np.linspace(0.1, 3.0, n)
    ids = np.arange(n)
    parts = [mech.partial(np.array(reports[a:b], dtype=object), eps[a:b], ids[a:b])
             for a, b in ((0, cut), (cut, n))]
    merged = parts[1].merge(parts[0])
    if n == 0:
        with pytest.raises(ValueError, match="no reports"):
            mech.finalize(merged)
        return
    one = mech.estimate(np.array(reports, dtype=object), epsilons=eps)
    got = mech.finalize(merged)
    np.testing.assert_array_equal(got.sketch, one.sketch)
    assert got.sanitization == one.sanitization
    assert np.isfinite(got.matrix).all()


@fuzz(30)
@given(reports=st.lists(scalars, min_size=0, max_size=8))
def test_oracle_partial_sanitizes_hostile_chunks(reports):
    oracle = oracles.GRR(domain_size=5, epsilon=1.0, codebook_seed=2)
    p = oracle.partial(np.array(reports, dtype=object))
    assert p.counts["n"] == len(reports)
    if reports:
        assert np.isfinite(oracle.finalize(p).counts).all()


@fuzz(40)
@given(data=st.binary(max_size=200))
def test_partial_from_bytes_refuses_garbage_clearly(data):
    with pytest.raises(ValueError):
        Partial.from_bytes(data)


@fuzz(40)
@given(values=st.lists(st.floats(allow_nan=True, allow_infinity=True), max_size=6),
       index=st.lists(st.integers(-3, 5), max_size=6))
def test_exact_sum_add_checks_or_adds(values, index):
    s = ExactSum(3)
    index = (index + [0] * len(values))[:len(values)]
    ok = all(np.isfinite(values)) and all(0 <= j < 3 for j in index)
    if ok:
        s.add(values, index)
        assert s.value().shape == (3,)
    else:
        with pytest.raises(ValueError):
            s.add(values, index)


@fuzz(30)
@given(text=st.one_of(st.text(max_size=40), st.just("."), st.just('{"mechanism": "JPRS"}'),
                      st.just('{"mechanism": "OLH", "params": {"domain_size": -1}}'),
                      st.just('[1, 2]'), st.just('{"mechanism": "GRR", "params": 3}')))
def test_specs_are_refused_clearly(text):
    try:
        mechanisms.from_spec(text)
    except CLEAR:
        pass


json_values = st.recursive(
    st.one_of(st.none(), st.booleans(), st.integers(-2**40, 2**40), st.floats(allow_nan=False),
              st.text(max_size=6)),
    lambda children: st.one_of(st.lists(children, max_size=3),
                               st.dictionaries(st.text(max_size=5), children, max_size=3)),
    max_leaves=6)


@pytest.fixture(scope="module")
def checkpointed_decode(tmp_path_factory):
    """A report file of 3 row groups and the checkpoint a decode stopped after one left."""
    pytest.importorskip("pyarrow")
    from fastldp.reports import decode_files, write_reports

    folder = tmp_path_factory.mktemp("checkpoint")
    oracle = oracles.GRR(domain_size=5, epsilon=1.0, codebook_seed=2)
    reports = oracle.privatize(np.arange(300) % 5, rng=0)
    path = str(folder / "r.parquet")
    write_reports(path, oracle, reports, row_group_size=100)
    ck = folder / "ck.json"

    class Stop(Exception):
        pass

    def stop(done, total):
        if done >= 100:
            raise Stop

    with pytest.raises(Stop):
        decode_files(oracle, path, checkpoint=ck, progress=stop)
    return oracle, reports, path, json.loads(ck.read_text())


@fuzz(40)
@given(key=st.sampled_from(["format", "version", "files", "position", "partial", "extra"]),
       value=json_values, inner=st.booleans())
def test_a_hostile_checkpoint_is_refused_clearly(checkpointed_decode, key, value, inner):
    # any field of a real checkpoint replaced (or, inside files and position, one entry):
    # a clear ValueError, or the untouched decode; never IndexError, KeyError or TypeError
    from fastldp.reports import decode_files

    oracle, reports, path, state = checkpointed_decode
    state = json.loads(json.dumps(state))
    # another real position is a legitimate checkpoint (of another decode state)
    assume(not (key == "position" and (value in (0, 2) if inner else value in ([0, 0], [0, 2],
                                                                             [1, 0]))))
    if inner and key == "files":
        state["files"][0][str(value)[:8] if isinstance(value, str) else "bytes"] = value
    elif inner and key == "position":
        state["position"][1] = value
    else:
        state[key] = value
    ck = os.path.join(os.path.dirname(path), "hostile.json")
    with open(ck, "w") as fh:
        json.dump(state, fh)
    try:
        got = decode_files(oracle, path, checkpoint=ck)
    except ValueError:
        return
    assert got.counts.tobytes() == oracle.estimate(reports).counts.tobytes()
