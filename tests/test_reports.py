"""Report files, the bounded-memory streaming decode, its checkpoints and the CLI.

Every decode from a file is compared bit for bit with the in-memory
``estimate`` of the same reports.
"""

import json
import os
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import fastldp  # noqa: E402
from fastldp import mechanisms  # noqa: E402
from fastldp.cli import main  # noqa: E402
from fastldp.reports import (ReportFile, ReportWriter, decode_files, write_reports,  # noqa: E402
                             METADATA_KEY)


def _jprs():
    return fastldp.JPRS(shape=(8, 9), k=3, s=5, codebook_seed=4242)


def _jprs_reports(n=3000, seed=0):
    mech = _jprs()
    rng = np.random.default_rng(seed)
    sets = mechanisms._relations_chunk(mech, n, rng)
    eps = rng.uniform(0.2, 3.0, n)
    ids = rng.choice(2**50, n, replace=False).astype(np.uint64)
    bits = mech.privatize(sets, eps, identities=ids, rng=seed)
    return mech, bits, eps, ids


def _same(a, b):
    np.testing.assert_array_equal(a.sketch, b.sketch)
    np.testing.assert_array_equal(a.matrix, b.matrix)
    assert a.budget == b.budget and a.sanitization == b.sanitization


def test_file_decode_equals_memory(tmp_path):
    mech, bits, eps, ids = _jprs_reports()
    path = write_reports(tmp_path / "r.parquet", mech, bits, eps, ids, row_group_size=700)
    f = ReportFile(path)
    assert f.num_rows == 3000 and f.num_row_groups == 5
    assert f.spec == {"mechanism": "JPRS", "params": mech.stream_params()}
    _same(decode_files(mech, path), mech.estimate(bits, eps, identities=ids))
    # two files, a glob, a folder: the same result
    write_reports(tmp_path / "a.parquet", mech, bits[:1234], eps[:1234], ids[:1234])
    write_reports(tmp_path / "b.parquet", mech, bits[1234:], eps[1234:], ids[1234:])
    whole = mech.estimate(bits, eps, identities=ids)
    _same(decode_files(mech, [tmp_path / "b.parquet", tmp_path / "a.parquet"]), whole)
    _same(decode_files(mech, str(tmp_path / "[ab].parquet")), whole)


def test_malformed_rows_are_sanitized_and_counted_as_in_memory(tmp_path):
    mech, bits, eps, ids = _jprs_reports(500)
    packets = bits.astype(np.float64)
    packets[[3, 50, 77, 300, 499]] = [np.nan, 0.0, 7.5, -np.inf, 0.25]
    # a float report column, and a null report (read as NaN)
    table = pa.table({"identity": pa.array(ids), "epsilon": pa.array(eps),
                      "report": pa.array(np.where(np.arange(500) == 10, 0.0, packets),
                                         mask=np.arange(500) == 10)})
    meta = {"format": "fastldp-reports", "version": 1, "mechanism": "JPRS",
            "params": mech.stream_params(), "report_shape": [], "report_dtype": "float64"}
    table = table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()})
    pq.write_table(table, tmp_path / "bad.parquet", row_group_size=128)
    packets[10] = np.nan
    from_file = decode_files(mech, tmp_path / "bad.parquet")
    in_memory = mech.estimate(packets, eps, identities=ids)
    _same(from_file, in_memory)
    assert from_file.sanitization.by_reason["nan"] == 2
    assert from_file.sanitization.n_sanitized == 6


def test_mismatch_and_schema_refusals(tmp_path):
    mech, bits, eps, ids = _jprs_reports(200)
    path = write_reports(tmp_path / "r.parquet", mech, bits, eps, ids)
    other = fastldp.JPRS(shape=(8, 9), k=3, s=5, codebook_seed=4243)
    with pytest.raises(ValueError, match="codebook_seed=4242"):
        decode_files(other, path)
    oracle = fastldp.oracles.GRR(domain_size=72, epsilon=1.0, codebook_seed=4242)
    with pytest.raises(ValueError, match="cannot be decoded by GRR"):
        decode_files(oracle, path)
    pq.write_table(pa.table({"identity": pa.array(ids), "report": pa.array(bits)}),
                   tmp_path / "plain.parquet")
    with pytest.raises(ValueError, match="not a fastldp report file"):
        ReportFile(tmp_path / "plain.parquet")
    (tmp_path / "junk.parquet").write_bytes(b"not parquet")
    with pytest.raises(ValueError, match="not a readable Parquet"):
        ReportFile(tmp_path / "junk.parquet")
    with pytest.raises(FileNotFoundError):
        decode_files(mech, tmp_path / "missing.parquet")
    # a null identity cannot be repaired
    t = pq.read_table(path)
    t = t.set_column(0, "identity", pa.array(ids, mask=np.arange(200) == 5))
    pq.write_table(t, tmp_path / "nullid.parquet")
    with pytest.raises(ValueError, match="'identity' column has 1 null"):
        decode_files(mech, tmp_path / "nullid.parquet")


def test_vector_reports_round_trip(tmp_path):
    oracle = fastldp.oracles.FLH(domain_size=50, epsilon=2.0, codebook_seed=9)
    x = np.random.default_rng(0).integers(0, 50, 400)
    rep = oracle.privatize(x, rng=1)
    assert rep.ndim == 2
    path = write_reports(tmp_path / "flh.parquet", oracle, rep, row_group_size=150)
    back = np.concatenate([r for r, _, _ in ReportFile(path)])
    np.testing.assert_array_equal(back, rep)


def test_killed_decode_resumes_from_its_checkpoint(tmp_path):
    mech, bits, eps, ids = _jprs_reports(4000, seed=5)
    path = write_reports(tmp_path / "r.parquet", mech, bits, eps, ids, row_group_size=500)
    ck = tmp_path / "ck.json"
    script = textwrap.dedent(f"""
        import os, signal, fastldp
        from fastldp.reports import decode_files
        mech = fastldp.JPRS(shape=(8, 9), k=3, s=5, codebook_seed=4242)
        def kill(done, total):
            if done >= 1500:  # a real SIGKILL after the third row group
                os.kill(os.getpid(), signal.SIGKILL)
        decode_files(mech, {str(path)!r}, checkpoint={str(ck)!r}, progress=kill)
    """)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True)
    assert proc.returncode == -9, proc.stderr.decode()
    state = json.loads(ck.read_text())
    assert state["position"] == [0, 3]
    seen = []
    resumed = decode_files(mech, path, checkpoint=ck, progress=lambda d, t: seen.append(d))
    assert seen[0] == 2000  # it did not start over
    _same(resumed, mech.estimate(bits, eps, identities=ids))
    assert not ck.exists()
    # a checkpoint of other files is refused, not silently reused
    ck.write_text(json.dumps({"format": "fastldp-checkpoint", "files": ["x"], "position": [0, 1],
                              "partial": ""}))
    with pytest.raises(ValueError, match="another decode"):
        decode_files(mech, path, checkpoint=ck)


def test_writer_validation(tmp_path):
    mech = _jprs()
    with pytest.raises(ValueError, match="epsilons"):
        write_reports(tmp_path / "x.parquet", mech, np.ones(3, dtype=np.int8))
    with pytest.raises(ValueError, match="epsilons"):
        write_reports(tmp_path / "x.parquet", mech, np.ones(3, dtype=np.int8), [1.0, np.nan, 1])
    with pytest.raises(ValueError, match="reports"):
        write_reports(tmp_path / "x.parquet", mech, np.array(["a", "b"]), 1.0)
    with pytest.raises(ValueError, match="identities"):
        write_reports(tmp_path / "x.parquet", mech, np.ones(2, dtype=np.int8), 1.0, [-1, 2])
    with pytest.raises(ValueError, match="row_group_size"):
        ReportWriter(tmp_path / "x.parquet", mech, row_group_size=0)


def test_specs_and_presets():
    mech = mechanisms.from_spec("jprs-4096")
    assert mech.p == 4096
    spec = {"mechanism": "JPRS", "params": mech.stream_params()}
    assert mechanisms.from_spec(json.dumps(spec)).stream_params() == mech.stream_params()
    with pytest.raises(ValueError, match="every public parameter"):
        mechanisms.from_spec({"mechanism": "JPRS", "params": {"shape": [4, 4], "k": 1, "s": 2}})
    with pytest.raises(ValueError, match="unknown mechanism"):
        mechanisms.from_spec({"mechanism": "Nope", "params": {}})
    with pytest.raises(ValueError, match="preset"):
        mechanisms.read_spec("no-such-preset")


def test_cli_simulate_and_decode(tmp_path, capsys):
    out = tmp_path / "sim.parquet"
    assert main(["simulate", "--n", "3000", "--out", str(out), "--row-group", "1000",
                 "--quiet", "--seed", "3"]) == 0
    f = ReportFile(out)
    assert f.num_rows == 3000 and f.spec["mechanism"] == "JPRS"
    assert main(["decode", str(out), "--quiet", "--out", str(tmp_path / "res.npz")]) == 0
    text = capsys.readouterr().out
    assert "3,000 reports of JPRS" in text and "largest entries" in text
    res = np.load(tmp_path / "res.npz")
    mech = mechanisms.from_spec("jprs-4096")
    r, e, i = (np.concatenate(c) for c in zip(*f))
    np.testing.assert_array_equal(res["matrix"], mech.estimate(r, e, identities=i).matrix)
    # a mismatching --mechanism is refused with exit status 2
    assert main(["decode", str(out), "--quiet", "--mechanism", "olh-4096"]) == 2
    assert "cannot be decoded" in capsys.readouterr().err
    assert main(["decode", str(tmp_path / "none.parquet"), "--quiet"]) == 2


def test_oracle_file_with_malformed_rows_equals_memory(tmp_path):
    oracle = fastldp.oracles.OLH(domain_size=40, epsilon=None, codebook_seed=5)
    rng = np.random.default_rng(8)
    x = rng.integers(0, 40, 900)
    eps = rng.uniform(0.5, 3.0, 900)
    rep = oracle.privatize(x, epsilons=eps, rng=2).astype(np.float64)
    rep[[1, 20, 300]] = [np.nan, 2.5, 10**9]
    path = write_reports(tmp_path / "olh.parquet", oracle, rep, eps, row_group_size=250)
    from_file = decode_files(oracle, path)
    in_memory = oracle.estimate(rep, epsilons=eps)
    np.testing.assert_array_equal(from_file.counts, in_memory.counts)
    np.testing.assert_array_equal(from_file.variances, in_memory.variances)
    assert from_file.sanitization == in_memory.sanitization
    assert from_file.sanitization.n_sanitized == 3


def test_vector_mechanism_file_equals_memory(tmp_path):
    import scipy.sparse as sp

    rpc = fastldp.RPC(d=30, m=4, epsilon=1.0, values="rounded", codebook_seed=3)
    rng = np.random.default_rng(1)
    idx = np.stack([rng.choice(30, 4, replace=False) for _ in range(700)])
    x = sp.csr_matrix((rng.uniform(-1, 1, 2800), idx.ravel(), np.arange(0, 2801, 4)),
                      shape=(700, 30))
    rep = rpc.privatize(x, rng=4)
    path = write_reports(tmp_path / "rpc.parquet", rpc, rep, row_group_size=200)
    got = decode_files(rpc, path)
    want = rpc.estimate(rep)
    np.testing.assert_array_equal(got.mean, want.mean)
    np.testing.assert_array_equal(got.raw, want.raw)
