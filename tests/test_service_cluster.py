"""Several collectors behind one estimate: disjoint identity ranges, one decode over all stores.

Two ``fastldp serve`` subprocesses, each with its own store and a token bound
to its own half of the identities, get the batches of a client that spreads
them round robin (each batch to the collector of its identities, as a load
balancer routing by shard does); a single collector's store (the same
``Store``, fed in process) gets every batch. After
the stops, ``fastldp decode`` over both stores, the Dask path over them, and
the decode of the single collector's store are the same bit for bit: the
mechanism's partials are exact sums (``fastldp.streaming.ExactSum``), so the
order and the split of the reports do not matter.
"""

import contextlib

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")
pytest.importorskip("pyarrow")

from fastldp import cli  # noqa: E402
from fastldp.mechanisms import from_spec  # noqa: E402
from fastldp.reports import decode_files, load_result  # noqa: E402
from fastldp.service import Client  # noqa: E402
from fastldp.service.client import ServiceError  # noqa: E402
from fastldp.service.app import probe_reports  # noqa: E402
from fastldp.service.store import Batch, Store  # noqa: E402
from fastldp.service.testing import running_server  # noqa: E402

JPRS = {"mechanism": "JPRS", "params": {"shape": [6, 5], "k": 2, "s": 4, "codebook_seed": 3,
                                        "support_rule": "raw"}}
SHARDS = [(0, 49_999), (50_000, 99_999)]
BATCHES, SIZE = 12, 250


def _batches(mech):
    """``(shard, identities, budgets, reports)`` of each batch; batch ``b`` is of shard b % 2."""
    import scipy.sparse as sp

    rng = np.random.default_rng(32)
    out = []
    for b in range(BATCHES):
        shard = b % 2
        first = SHARDS[shard][0] + (b // 2) * SIZE
        ids = np.arange(first, first + SIZE, dtype=np.uint64)
        cells = rng.integers(0, 30, size=SIZE)
        relations = sp.csr_matrix((np.ones(SIZE, dtype=np.int8), cells, np.arange(SIZE + 1)),
                                  shape=(SIZE, 30))
        eps = rng.uniform(0.5, 2.0, SIZE)
        out.append((shard, ids, eps, mech.privatize(relations, epsilons=eps, identities=ids,
                                                    rng=b)))
    return out


def _arrays(loaded):
    """Every array of a result file, and its summary (``n``, ``sanitization``, ``privacy``)."""
    return dict(loaded.arrays, summary=loaded.summary)


def test_two_collectors_decode_bit_for_bit_as_one(tmp_path, capsys):
    mech = from_spec(JPRS)
    batches = _batches(mech)
    # the single collector's store, fed in process (the same Store fastldp serve runs)
    shape, dtype = probe_reports(mech)
    one = Store(tmp_path / "one", mech, report_shape=shape, report_dtype=dtype)
    for b, (_, ids, eps, reports) in enumerate(batches):
        assert one.submit(Batch("all", f"b{b}", ids, eps, reports)).result(30)[0] == 201
    one.close()
    with contextlib.ExitStack() as stack:
        shards = [stack.enter_context(running_server(
            tmp_path / f"shard{i}", JPRS, tokens={f"shard-{i}": rng}, unrestricted=False))
            for i, rng in enumerate(SHARDS)]
        clients = [stack.enter_context(Client(s.url, s.token, retries=0)) for s in shards]
        for b, (shard, ids, eps, reports) in enumerate(batches):
            assert clients[shard].send_batch(ids, reports, eps, key=f"b{b}")["accepted"] == SIZE
        _, ids, eps, reports = batches[0]
        # an identity outside every range: refused (403) by every collector, nothing stored
        for client in clients:
            with pytest.raises(ServiceError) as info:
                client.send_batch([100_000], reports[:1], eps[:1], key="outside")
            assert info.value.status == 403
            assert info.value.body["identities"] == [100_000]
        # an identity of the other shard: refused too (each identity has one collector)
        with pytest.raises(ServiceError) as info:
            clients[0].send_batch([50_000], reports[:1], eps[:1], key="other")
        assert info.value.status == 403
        assert [c.stats()["reports"] for c in clients] == [BATCHES // 2 * SIZE] * 2
        # a running collector's store is not decoded: its open segment is not closed
        assert cli.main(["decode", str(shards[0].store), "--quiet"]) == 2
        err = capsys.readouterr().err
        assert f"is in use by pid {shards[0].pid}" in err and "stop that collector" in err
    # stopped: every batch is in a closed segment of its collector's store
    two, single_out = tmp_path / "two.npz", tmp_path / "one.npz"
    assert cli.main(["decode", str(shards[0].store), str(shards[1].store), "--out", str(two),
                     "--quiet"]) == 0
    assert cli.main(["decode", str(one.dir), "--out", str(single_out), "--quiet"]) == 0
    got, want = _arrays(load_result(two)), _arrays(load_result(single_out))
    assert got.keys() == want.keys() and {"matrix", "sketch", "support_0"} <= set(got)
    assert got["summary"]["n"] == BATCHES * SIZE
    for name in want:
        if name == "summary":  # seconds differ; everything else is the same
            assert {k: v for k, v in got[name].items() if k != "seconds"} == \
                {k: v for k, v in want[name].items() if k != "seconds"}
        else:
            assert np.array_equal(got[name], want[name], equal_nan=True), name
    # the merged partials themselves are equal (exact sums: order and split do not matter)
    stores = [str(s.store) for s in shards]
    assert decode_files(mech, stores, finalize=False) == decode_files(mech, str(one.dir),
                                                                      finalize=False)
    # the Dask path over the same stores
    from fastldp import distributed

    pytest.importorskip("dask")
    dask_result = distributed.estimate(mech, stores)
    assert np.array_equal(dask_result.matrix, want["matrix"])
    # and the in-memory estimate of all the batches
    ids = np.concatenate([b[1] for b in batches])
    eps = np.concatenate([b[2] for b in batches])
    reports = np.concatenate([b[3] for b in batches])
    assert np.array_equal(mech.estimate(reports, epsilons=eps, identities=ids).matrix,
                          want["matrix"])
