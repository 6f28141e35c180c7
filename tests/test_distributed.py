"""The Dask path on a LocalCluster of two worker processes equals the in-memory decode bit for bit."""

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")
dd = pytest.importorskip("dask.dataframe")
distributed_mod = pytest.importorskip("distributed")
pd = pytest.importorskip("pandas")

import fastldp  # noqa: E402
from fastldp import distributed, mechanisms  # noqa: E402
from fastldp.reports import ReportFile, decode_files, write_reports  # noqa: E402


@pytest.fixture(scope="module")
def client():
    cluster = distributed_mod.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                           dashboard_address=":0", silence_logs=40)
    with distributed_mod.Client(cluster) as c:
        yield c
    cluster.close()


def _reports(n=6000, seed=0):
    mech = fastldp.JPRS(shape=(16, 16), k=4, s=8, codebook_seed=77, n_threads=1)
    rng = np.random.default_rng(seed)
    eps = rng.uniform(0.1, 4.0, n)
    ids = rng.choice(2**40, n, replace=False).astype(np.uint64)
    bits = mech.privatize(mech.example_data(n, rng), epsilons=eps, identities=ids,
                          rng=1)
    bits[[300, n - 1]] = [0, 2]  # sanitized the same everywhere
    return mech, bits, eps, ids


def _same(a, b):
    np.testing.assert_array_equal(a.sketch, b.sketch)
    np.testing.assert_array_equal(a.matrix, b.matrix)
    assert a.budget == b.budget and a.sanitization == b.sanitization


def test_files_on_two_workers_equal_memory_and_local_stream(client, tmp_path):
    mech, bits, eps, ids = _reports()
    write_reports(tmp_path / "a.parquet", mech, bits[:2500], eps[:2500], ids[:2500],
                  row_group_size=600)
    write_reports(tmp_path / "b.parquet", mech, bits[2500:], eps[2500:], ids[2500:],
                  row_group_size=900)
    in_memory = mech.estimate(bits, epsilons=eps, identities=ids)
    on_dask = distributed.estimate(mech, str(tmp_path / "*.parquet"), client=client)
    _same(on_dask, in_memory)
    _same(decode_files(mech, tmp_path), in_memory)
    # both workers took part
    assert len(client.scheduler_info()["workers"]) == 2


def test_dask_dataframe_source(client):
    mech, bits, eps, ids = _reports(3000, seed=2)
    # a nullable integer column with a missing report (read as NaN)
    column = pd.array(bits, dtype="Int8")
    column[5] = pd.NA
    frame = pd.DataFrame({"identity": ids, "epsilon": eps, "report": column})
    ddf = dd.from_pandas(frame, npartitions=7)
    in_memory = bits.astype(np.float64)
    in_memory[5] = np.nan
    _same(distributed.estimate(mech, ddf, client=client),
          mech.estimate(in_memory, epsilons=eps, identities=ids))


def test_dask_refuses_mismatch_before_work(client, tmp_path):
    mech, bits, eps, ids = _reports(500)
    path = write_reports(tmp_path / "r.parquet", mech, bits, eps, ids)
    other = fastldp.JPRS(shape=(16, 16), k=4, s=8, codebook_seed=78)
    with pytest.raises(ValueError, match="cannot be decoded"):
        distributed.estimate(other, path, client=client)
    bad = dd.from_pandas(pd.DataFrame({"identity": ids, "report": bits}), npartitions=2)
    with pytest.raises(ValueError, match="epsilon"):
        distributed.estimate(mech, bad, client=client)
    assert ReportFile(path).num_rows == 500


def test_an_oracle_on_two_workers(client, tmp_path):
    oracle = fastldp.oracles.OUE(domain_size=50, epsilon=None, codebook_seed=3)
    rng = np.random.default_rng(4)
    eps = rng.uniform(0.5, 2.0, 1500)
    rep = oracle.privatize(rng.integers(0, 50, 1500), epsilons=eps, rng=5)
    write_reports(tmp_path / "oue.parquet", oracle, rep, eps, row_group_size=200)
    got = distributed.estimate(oracle, tmp_path / "oue.parquet", client=client)
    want = oracle.estimate(rep, epsilons=eps)
    np.testing.assert_array_equal(got.counts, want.counts)
    np.testing.assert_array_equal(got.variances, want.variances)


def test_cli_decode_on_the_scheduler(client, tmp_path, capsys):
    from fastldp.cli import main

    out = tmp_path / "sim.parquet"
    assert main(["simulate", "--n", "4000", "--out", str(out), "--row-group", "1000",
                 "--quiet"]) == 0
    address = client.scheduler.address
    assert main(["decode", str(out), "--scheduler", address, "--quiet",
                 "--out", str(tmp_path / "r.npz")]) == 0
    assert f"scheduler {address}" in capsys.readouterr().out
    mech = mechanisms.from_spec("jprs-4096")
    local = decode_files(mech, out)
    np.testing.assert_array_equal(np.load(tmp_path / "r.npz")["sketch"], local.sketch)


def test_dask_refuses_what_the_local_decode_refuses(client, tmp_path):
    oracle = fastldp.oracles.OLH(domain_size=30, epsilon=1.5, codebook_seed=3)
    rep = oracle.privatize(np.random.default_rng(5).integers(0, 30, 1200), rng=6)
    path = write_reports(tmp_path / "olh.parquet", oracle, rep, row_group_size=300)
    # a fixed budget: bit-identical to estimate(reports)
    got, want = distributed.estimate(oracle, path, client=client), oracle.estimate(rep)
    assert got.counts.tobytes() == want.counts.tobytes()
    assert got.variances.tobytes() == want.variances.tobytes()
    # another budget in the file is refused, naming the file and the row group
    table = pq.read_table(path)
    eps = np.full(1200, 1.5)
    eps[700] = 0.5
    pq.write_table(table.set_column(1, "epsilon", pa.array(eps)), tmp_path / "eps.parquet",
                   row_group_size=300)
    with pytest.raises(ValueError, match="row group 2.*0.5.*epsilon=1.5"):
        distributed.estimate(oracle, tmp_path / "eps.parquet", client=client)
    with pytest.raises(ValueError, match="given twice"):
        distributed.estimate(oracle, [path, str(tmp_path / "*.parquet")], client=client)
    # a float report column for an integer mechanism, before any work
    mech, bits, eps, ids = _reports(600)
    floats = dd.from_pandas(pd.DataFrame({"identity": ids, "epsilon": eps,
                                          "report": bits.astype(np.float64)}), npartitions=2)
    with pytest.raises(ValueError, match="dtype float64.*integers"):
        distributed.partials(mech, floats)
    from fastldp.reports import SanitizationWarning

    junk = rep.copy()
    junk[:700] = 10**6
    (tmp_path / "junk").mkdir()
    write_reports(tmp_path / "junk" / "j.parquet", oracle, junk)
    with pytest.warns(SanitizationWarning, match="700 of 1,200"):
        distributed.estimate(oracle, tmp_path / "junk", client=client)


def _closed_port() -> int:
    """A local port that nothing listens on (bound, then released)."""
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def test_an_unreachable_scheduler_fails_in_seconds_in_one_line(tmp_path, capsys):
    import time

    from fastldp.cli import main

    out = tmp_path / "sim.parquet"
    assert main(["simulate", "--n", "1000", "--mechanism", "olh-4096", "--out", str(out),
                 "--quiet"]) == 0
    capsys.readouterr()
    address = f"tcp://127.0.0.1:{_closed_port()}"
    t0 = time.perf_counter()
    assert main(["decode", str(out), "--scheduler", address, "--quiet"]) == 2
    # Client alone retried for 30 s and printed a 62-line traceback
    assert time.perf_counter() - t0 < 10
    err = capsys.readouterr().err
    assert err.startswith(f"fastldp: error: The Dask scheduler at {address} cannot be reached")
    assert err.count("\n") == 1 and "nothing listens on port" in err
    with pytest.raises(ConnectionError):  # --debug: the exception itself
        main(["--debug", "decode", str(out), "--scheduler", address, "--quiet"])


def test_check_scheduler_parses_the_address():
    import socket

    with socket.socket() as server:
        server.bind(("127.0.0.1", 0))
        server.listen()
        port = server.getsockname()[1]
        assert distributed.check_scheduler(f"tcp://127.0.0.1:{port}") == ("127.0.0.1", port)
        assert distributed.check_scheduler(f"127.0.0.1:{port}", timeout=1) == ("127.0.0.1", port)
    assert distributed.check_scheduler("inproc://10.0.0.1/1/2") == ("", 0)  # left to Dask
    for bad in ("tcp://", "tcp://host:notaport", "tcp://host:70000", "tcp://host:1/path"):
        with pytest.raises(ValueError, match="address like tcp://host:8786"):
            distributed.check_scheduler(bad)
    with pytest.raises(ConnectionError, match="does not resolve"):
        distributed.check_scheduler("tcp://no-such-host.invalid:1", timeout=2)
    with pytest.raises(ValueError, match="'timeout' parameter of check_scheduler"):
        distributed.check_scheduler("tcp://127.0.0.1:1", timeout=float("nan"))
