"""The proof of the mechanism protocol: a class defined in the tests goes everywhere.

``tests/_protocol_mechanism.py`` defines ``BinaryRR`` (binary randomized
response) from numpy and the protocol's small types only. Implementing
:class:`fastldp.protocol.StreamingMechanism` and nothing else, it writes and
decodes report files (in process and with ``fastldp decode``), merges partials
through Dask, is served by a collector and decoded live, is listed and audited
by ``fastldp audit`` (its negative control caught), and is charged to a
ledger. Other processes find it through ``FASTLDP_MECHANISMS``.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from fastldp import protocol
from fastldp.protocol import PLUGINS_ENV, StreamingMechanism

TESTS = Path(__file__).resolve().parent
MODULE = "_protocol_mechanism"


@pytest.fixture
def plugin_env(monkeypatch):
    """This process and its children find BinaryRR by name, as a user's deployment would."""
    monkeypatch.setenv(PLUGINS_ENV, MODULE)
    path = os.environ.get("PYTHONPATH", "")
    monkeypatch.setenv("PYTHONPATH", str(TESTS) + (os.pathsep + path if path else ""))
    monkeypatch.syspath_prepend(str(TESTS))
    from _protocol_mechanism import BinaryRR

    return BinaryRR


def _reports(BinaryRR, n=5_000, seed=3):
    rr = BinaryRR(epsilon=1.0)
    rng = np.random.default_rng(seed)
    data = rr.example_data(n, rng)
    return rr, data, rr.privatize(data, rng=rng)


def _fastldp(*args, timeout=300):
    return subprocess.run([sys.executable, "-m", "fastldp", *args], capture_output=True,
                          text=True, timeout=timeout, env=dict(os.environ))


def test_it_implements_the_protocol_and_nothing_else(plugin_env):
    BinaryRR = plugin_env
    assert BinaryRR.__mro__ == (BinaryRR, object)  # no base class of fastldp's
    rr = BinaryRR(epsilon=1.0)
    assert isinstance(rr, StreamingMechanism)
    protocol.check_mechanism(rr)
    assert protocol.streaming_classes()["BinaryRR"] is BinaryRR
    assert protocol.resolve_class("BinaryRR") is BinaryRR
    assert BinaryRR in protocol.audited_classes()


def test_report_files_and_fastldp_decode(plugin_env, tmp_path):
    from fastldp.reports import ReportFile, decode_files, load_result, write_reports

    rr, _, reports = _reports(plugin_env)
    path = write_reports(tmp_path / "rr.parquet", rr, reports)
    assert ReportFile(path).spec == {"mechanism": "BinaryRR", "params": {"epsilon": 1.0}}
    whole = rr.estimate(reports)
    offline = decode_files(rr, [path])
    assert np.array_equal(offline.counts, whole.counts) and offline.n == whole.n
    out = tmp_path / "r.npz"
    proc = _fastldp("decode", str(path), "--out", str(out), "--quiet")
    assert proc.returncode == 0, proc.stderr
    assert "5,000 reports of BinaryRR" in proc.stdout
    assert np.array_equal(np.asarray(load_result(out).counts), whole.counts)


def test_dask_merges_its_partials(plugin_env, tmp_path):
    distributed = pytest.importorskip("distributed")
    from fastldp import distributed as fd
    from fastldp.reports import write_reports

    rr, _, reports = _reports(plugin_env)
    paths = [write_reports(tmp_path / f"part{i}.parquet", rr, chunk, row_group_size=700)
             for i, chunk in enumerate(np.array_split(reports, 3))]
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2,
                            dashboard_address=None) as client:
        result = fd.estimate(rr, [str(p) for p in paths], client=client)
    assert np.array_equal(result.counts, rr.estimate(reports).counts)


def test_a_collector_serves_it_and_decodes_it_live(plugin_env, tmp_path):
    pytest.importorskip("starlette")
    import httpx

    from fastldp.service.client import Client
    from fastldp.service.testing import running_server

    rr, data, _ = _reports(plugin_env, n=2_000)
    with running_server(tmp_path, mechanism=rr.spec(), publish_every=1) as srv:
        info = httpx.get(srv.url + "/v1/mechanism").json()
        assert info["spec"] == rr.spec() and info["kind"] == "counts"
        assert info["report_shape"] == [] and info["report_dtype"] == "int8"
        with Client(srv.url, srv.token) as client:
            done = client.send(data, identities=np.arange(2_000), rng=5, batch_size=500)
            assert done["accepted"] == 2_000
            live = client.estimate()
        srv.stop()
        from fastldp.reports import decode_files

        offline = decode_files(rr, sorted(str(p) for p in srv.store.glob("seg-*.parquet")))
    assert live["n"] == offline.n == 2_000 and live["kind"] == "counts"
    assert live["labels"] == ["no", "yes"]
    np.testing.assert_array_equal(np.asarray(live["estimate"], dtype=float), offline.counts)


def test_fastldp_audit_lists_and_audits_it(plugin_env):
    listed = _fastldp("audit", "--list", "--controls")
    assert listed.returncode == 0, listed.stderr
    assert "binary-rr" in listed.stdout and "binary-rr-at-1.5x" in listed.stdout
    from fastldp.audit import audit_channel, get_channel, negative_controls

    row = audit_channel(get_channel("binary-rr", epsilon=1.0), n=2_000)
    assert row.holds and row.exact.holds
    assert abs(row.exact.epsilon_audited - 1.0) < 1e-9
    controls = negative_controls(1.0)
    assert "binary-rr-at-1.5x" in controls  # the audit's own law fault is planted in it too
    control = audit_channel(controls["binary-rr-at-1.5x"], n=2_000)
    assert control.expect_violation and not control.holds  # caught
    run = _fastldp("audit", "binary-rr", "--n", "2000")
    assert run.returncode == 0, run.stdout + run.stderr


def test_a_ledger_charges_its_releases(plugin_env, tmp_path):
    from fastldp.accounting import Ledger

    rr = plugin_env(epsilon=0.5)
    statement = rr.privacy()
    with Ledger(tmp_path / "budget.db") as ledger:
        ledger.charge(np.arange(100), statement.epsilon, statement.event(), release="a")
        ledger.charge(np.arange(50), statement.epsilon, statement.event(), release="b")
        spent = ledger.spent([0, 99])
    assert spent[0] >= 1.0 and spent[0] <= 1.0 + 1e-12 and spent[1] >= 0.5
