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
    sets = mech.example_data(n, rng)
    eps = rng.uniform(0.2, 3.0, n)
    ids = rng.choice(2**50, n, replace=False).astype(np.uint64)
    bits = mech.privatize(sets, epsilons=eps, identities=ids, rng=seed)
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
    _same(decode_files(mech, path), mech.estimate(bits, epsilons=eps, identities=ids))
    # two files, a glob, a folder: the same result
    write_reports(tmp_path / "a.parquet", mech, bits[:1234], eps[:1234], ids[:1234])
    write_reports(tmp_path / "b.parquet", mech, bits[1234:], eps[1234:], ids[1234:])
    whole = mech.estimate(bits, epsilons=eps, identities=ids)
    _same(decode_files(mech, [tmp_path / "b.parquet", tmp_path / "a.parquet"]), whole)
    _same(decode_files(mech, str(tmp_path / "[ab].parquet")), whole)


def test_malformed_rows_are_sanitized_and_counted_as_in_memory(tmp_path):
    mech, bits, eps, ids = _jprs_reports(500)
    packets = bits.astype(np.int64)
    packets[[3, 50, 77, 300]] = [0, 7, -3, 2**40]
    # an integer report column with a null report (read as NaN)
    table = pa.table({"identity": pa.array(ids), "epsilon": pa.array(eps),
                      "report": pa.array(packets, mask=np.arange(500) == 10)})
    meta = {"format": "fastldp-reports", "version": 1, "mechanism": "JPRS",
            "params": mech.stream_params(), "report_shape": [], "report_dtype": "int64"}
    table = table.replace_schema_metadata({METADATA_KEY: json.dumps(meta).encode()})
    pq.write_table(table, tmp_path / "bad.parquet", row_group_size=128)
    in_file = packets.astype(np.float64)
    in_file[10] = np.nan
    from_file = decode_files(mech, tmp_path / "bad.parquet")
    in_memory = mech.estimate(in_file, epsilons=eps, identities=ids)
    _same(from_file, in_memory)
    assert from_file.sanitization.by_reason["nan"] == 1
    assert from_file.sanitization.n_sanitized == 5


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
    _same(resumed, mech.estimate(bits, epsilons=eps, identities=ids))
    assert not ck.exists()
    # a checkpoint of other files is refused, not silently reused
    ck.write_text(json.dumps({"format": "fastldp-checkpoint", "version": 2,
                              "files": [{"path": "x"}], "position": [0, 1], "partial": ""}))
    with pytest.raises(ValueError, match="another decode"):
        decode_files(mech, path, checkpoint=ck)
    # a checkpoint of the format that named files by path only is refused, not trusted
    ck.write_text(json.dumps({"format": "fastldp-checkpoint", "version": 1,
                              "files": [str(path)], "position": [0, 1], "partial": ""}))
    with pytest.raises(ValueError, match="version 1"):
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
    np.testing.assert_array_equal(res["matrix"], mech.estimate(r, epsilons=e, identities=i).matrix)
    # a mismatching --mechanism is refused with exit status 2
    assert main(["decode", str(out), "--quiet", "--mechanism", "olh-4096"]) == 2
    assert "cannot be decoded" in capsys.readouterr().err
    assert main(["decode", str(tmp_path / "none.parquet"), "--quiet"]) == 2


def test_oracle_file_with_malformed_rows_equals_memory(tmp_path):
    oracle = fastldp.oracles.OLH(domain_size=40, epsilon=None, codebook_seed=5)
    rng = np.random.default_rng(8)
    x = rng.integers(0, 40, 900)
    eps = rng.uniform(0.5, 3.0, 900)
    rep = oracle.privatize(x, epsilons=eps, rng=2)
    rep[[1, 20, 300]] = [-1, 10**9, 2**40]
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


# ---------------------------------------------------------------- a file given twice
def test_a_file_given_twice_is_refused_naming_both_arguments(tmp_path, monkeypatch, capsys):
    import shutil

    mech, bits, eps, ids = _jprs_reports(300)
    write_reports(tmp_path / "a.parquet", mech, bits, eps, ids)
    (tmp_path / "other").mkdir()
    os.symlink(tmp_path / "a.parquet", tmp_path / "other" / "link.parquet")
    os.link(tmp_path / "a.parquet", tmp_path / "other" / "hard.parquet")
    monkeypatch.chdir(tmp_path)
    for sources in (["a.parquet", "a.parquet"], ["a.parquet", "*.parquet"], [".", "a.parquet"],
                    [str(tmp_path / "a.parquet"), "./a.parquet"],
                    ["a.parquet", "other/link.parquet"], ["other/hard.parquet", "a.parquet"]):
        with pytest.raises(ValueError, match="given twice") as info:
            decode_files(mech, sources)
        assert (f"argument 1 ({sources[0]!r})" in str(info.value)
                and f"argument 2 ({sources[1]!r})" in str(info.value))
    # a copy holds the same reports: the same file id
    (tmp_path / "copies").mkdir()
    shutil.copy(tmp_path / "a.parquet", tmp_path / "copies" / "b.parquet")
    with pytest.raises(ValueError, match="same reports") as info:
        decode_files(mech, ["a.parquet", "copies"])
    assert ReportFile("a.parquet").file_id in str(info.value)
    assert main(["decode", "a.parquet", "*.parquet", "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastldp: error: ") and "'*.parquet'" in err and err.count("\n") == 1
    # distinct files still decode together
    write_reports(tmp_path / "c.parquet", mech, bits, eps, ids + np.uint64(2**60))
    assert decode_files(mech, ["a.parquet", "c.parquet"]).budget.n == 600


def test_the_writer_records_a_file_id_and_the_row_count(tmp_path):
    from fastldp.reports import ROWS_KEY

    mech, bits, eps, ids = _jprs_reports(700)
    a = ReportFile(write_reports(tmp_path / "a.parquet", mech, bits, eps, ids, row_group_size=300))
    b = ReportFile(write_reports(tmp_path / "b.parquet", mech, bits, eps, ids))
    assert len(a.file_id) == 32 and int(a.file_id, 16) >= 0 and a.file_id != b.file_id
    footer = json.loads(pq.ParquetFile(a.path).metadata.metadata[ROWS_KEY])
    assert footer == {"file_id": a.file_id, "rows": 700}
    # a footer that disagrees with the file is refused
    meta = pq.read_schema(a.path).metadata
    with pq.ParquetWriter(tmp_path / "odd.parquet", pq.read_schema(a.path)) as w:
        w.write_table(pq.read_table(a.path))
        w.add_key_value_metadata({ROWS_KEY: json.dumps({"file_id": a.file_id, "rows": 9})})
    with pytest.raises(ValueError, match="altered"):
        ReportFile(tmp_path / "odd.parquet")
    # version 1 files written before the file id are still read (without the new checks)
    old = json.loads(meta[METADATA_KEY])
    del old["file_id"]
    table = pq.read_table(a.path).replace_schema_metadata({METADATA_KEY: json.dumps(old)})
    pq.write_table(table, tmp_path / "old1.parquet")
    pq.write_table(table, tmp_path / "old2.parquet")
    assert ReportFile(tmp_path / "old1.parquet").file_id is None
    _same(decode_files(mech, tmp_path / "old1.parquet"),
          mech.estimate(bits, epsilons=eps, identities=ids))
    decode_files(mech, [tmp_path / "old1.parquet", tmp_path / "old2.parquet"])


# ---------------------------------------------------------------- checkpoints
class _Stop(Exception):
    pass


def test_a_checkpoint_of_a_changed_file_is_refused(tmp_path):
    import shutil

    mech, bits, eps, ids = _jprs_reports(4000, seed=5)
    path = tmp_path / "r.parquet"
    write_reports(path, mech, bits, eps, ids, row_group_size=500)
    shutil.copy(path, tmp_path / "original.parquet")
    ck = tmp_path / "ck.json"

    def stop(done, total):
        if done >= 1500:
            raise _Stop

    with pytest.raises(_Stop):
        decode_files(mech, path, checkpoint=ck, progress=stop)
    saved = ck.read_text()
    assert json.loads(saved)["position"] == [0, 3]
    regenerated = [
        # the same reports written again: another file id (the bytes may be the same size)
        lambda: write_reports(path, mech, bits, eps, ids, row_group_size=500),
        # a shorter file (this raised IndexError)
        lambda: write_reports(path, mech, bits[:1000], eps[:1000], ids[:1000],
                              row_group_size=500),
        # rewritten outside fastldp, keeping its metadata (and file id)
        lambda: pq.write_table(pq.read_table(tmp_path / "original.parquet"), path,
                               row_group_size=700),
    ]
    for regenerate in regenerated:
        regenerate()
        ck.write_text(saved)
        with pytest.raises(ValueError, match="changed since") as info:
            decode_files(mech, path, checkpoint=ck)
        assert str(path) in str(info.value)
    shutil.copy(tmp_path / "original.parquet", path)
    _same(decode_files(mech, path, checkpoint=ck),
          mech.estimate(bits, epsilons=eps, identities=ids))
    assert not ck.exists()


# ---------------------------------------------------------------- fixed budgets
def _sparse(n, d, m, rng, binary=False):
    import scipy.sparse as sp

    idx = np.stack([rng.choice(d, m, replace=False) for _ in range(n)])
    values = np.ones(n * m) if binary else rng.uniform(-1, 1, n * m)
    return sp.csr_matrix((values, idx.ravel(), np.arange(0, n * m + 1, m)), shape=(n, d))


def _fixed_budget_case(name, n=600):
    """A mechanism built with a fixed epsilon and its reports."""
    rng = np.random.default_rng(11)
    o = fastldp.oracles
    oracles = {"GRR": o.GRR, "OLH": o.OLH, "OUE": o.OUE, "SUE": o.SUE,
               "HadamardResponse": o.HadamardResponse}
    if name in oracles or name == "FLH":
        extra = {"n_hashes": 16} if name == "FLH" else {}
        cls = o.FLH if name == "FLH" else oracles[name]
        mech = cls(domain_size=30, epsilon=1.5, codebook_seed=4, **extra)
        return mech, mech.privatize(rng.integers(0, 30, n), rng=1)
    v = fastldp.vectors
    mech = {"RPC": lambda: v.RPC(d=30, m=4, epsilon=1.5, values="rounded", codebook_seed=3),
            "PCKVUE": lambda: v.PCKVUE(d=30, m=4, epsilon=1.5),
            "PCKVGRR": lambda: v.PCKVGRR(d=30, m=4, epsilon=1.5),
            "Succinct": lambda: v.Succinct(d=30, m=4, epsilon=1.5, R=2.0, codebook_seed=1),
            "Collision": lambda: v.Collision(d=30, m=4, epsilon=1.5, codebook_seed=1)}[name]()
    x = _sparse(n, 30, 4, rng, binary=name == "Collision")
    return mech, np.asarray(mech.privatize(x, rng=1))


FIXED = ["GRR", "OLH", "FLH", "HadamardResponse", "OUE", "SUE", "RPC", "PCKVUE", "PCKVGRR",
         "Succinct", "Collision"]


@pytest.mark.parametrize("name", FIXED)
def test_a_fixed_budget_mechanism_refuses_another_budget_in_the_file(tmp_path, name):
    mech, rep = _fixed_budget_case(name)
    assert mechanisms.mechanism_spec(mech)["mechanism"] in mechanisms.STREAMING
    path = write_reports(tmp_path / "r.parquet", mech, rep, row_group_size=200)
    t = pq.read_table(path)  # the epsilon column rewritten to 7 in row 250 (group 1, row 50)
    eps = np.full(t.num_rows, 1.5)
    eps[250] = 7.0
    pq.write_table(t.set_column(1, "epsilon", pa.array(eps)), tmp_path / "x.parquet",
                   row_group_size=200)
    with pytest.raises(ValueError) as info:
        decode_files(mech, tmp_path / "x.parquet")
    text = str(info.value)
    assert all(part in text for part in (str(tmp_path / "x.parquet"), "row group 1", "7.0",
                                         "row 50", "epsilon=1.5"))
    with pytest.raises(ValueError, match="fixed epsilon=1.5"):
        write_reports(tmp_path / "y.parquet", mech, rep, 7.0)


@pytest.mark.parametrize("name", ["GRR", "OLH", "OUE", "SUE", "FLH", "HadamardResponse",
                                  "RPC", "Collision"])
def test_a_fixed_budget_file_decode_is_bit_identical_to_estimate(tmp_path, name):
    mech, rep = _fixed_budget_case(name, n=1000)
    if name in ("GRR", "OLH", "HadamardResponse"):  # malformed rows, sanitized the same way
        rep = rep.copy()
        rep[[3, 400, 999]] = [-1, 10**9, 2**40]
    path = write_reports(tmp_path / "r.parquet", mech, rep, row_group_size=300)
    got, want = decode_files(mech, path), mech.estimate(rep)
    for field in ("counts", "variances", "mean", "raw"):
        if hasattr(want, field):
            a, b = getattr(got, field), getattr(want, field)
            assert a.dtype == b.dtype and a.tobytes() == b.tobytes(), field
    assert got.sanitization == want.sanitization


def test_a_file_of_personal_budgets_decodes_as_estimate_with_them(tmp_path):
    oracle = fastldp.oracles.OUE(domain_size=25, epsilon=None, codebook_seed=2)
    rng = np.random.default_rng(3)
    eps = rng.choice([0.5, 1.0, 2.0], 900)
    rep = oracle.privatize(rng.integers(0, 25, 900), epsilons=eps, rng=4)
    path = write_reports(tmp_path / "r.parquet", oracle, rep, eps, row_group_size=200)
    got, want = decode_files(oracle, path), oracle.estimate(rep, epsilons=eps)
    assert got.counts.tobytes() == want.counts.tobytes()
    assert got.variances.tobytes() == want.variances.tobytes()


# ---------------------------------------------------------------- report column types
def _replace_reports(path, out, column):
    t = pq.read_table(path)
    pq.write_table(t.set_column(2, "report", column), out)
    return out


def test_a_report_column_of_the_wrong_type_is_refused_before_decoding(tmp_path, capsys):
    mech, rep = _fixed_budget_case("OLH", n=400)
    path = write_reports(tmp_path / "r.parquet", mech, rep)
    cases = {"string": pa.array([str(v) for v in rep]), "double": pa.array(rep.astype(float)),
             "bool": pa.array(rep > 0)}
    for type_name, column in cases.items():
        bad = _replace_reports(path, tmp_path / f"{type_name}.parquet", column)
        with pytest.raises(ValueError) as info:
            decode_files(mech, bad)
        text = str(info.value)
        assert str(bad) in text and f"type {type_name}" in text and "integer type" in text
    assert main(["decode", str(tmp_path / "string.parquet"), "--quiet"]) == 2
    captured = capsys.readouterr()
    assert "type string" in captured.err and "largest counts" not in captured.out
    with pytest.raises(ValueError, match="must be an integer array: OLH"):
        write_reports(tmp_path / "f.parquet", mech, rep.astype(float))
    # float reports are right for RPC; strings are not
    rpc, rep = _fixed_budget_case("RPC", n=300)
    path = write_reports(tmp_path / "rpc.parquet", rpc, rep)
    decode_files(rpc, path)
    bad = _replace_reports(path, tmp_path / "rpc-str.parquet", pa.array([str(v) for v in rep]))
    with pytest.raises(ValueError, match="type string.*numeric type"):
        decode_files(rpc, bad)


def test_a_mostly_sanitized_decode_warns(tmp_path, capsys):
    import warnings

    from fastldp.reports import SanitizationWarning

    mech, rep = _fixed_budget_case("GRR", n=1000)
    junk = rep.copy()
    junk[:600] = 10**6  # 60% out of range
    path = write_reports(tmp_path / "junk.parquet", mech, junk, row_group_size=300)
    with pytest.warns(SanitizationWarning, match="600 of 1,000 reports"):
        got = decode_files(mech, path)
    assert got.counts.tobytes() == mech.estimate(junk).counts.tobytes()
    half = rep.copy()
    half[:500] = 10**6  # exactly half: no warning
    write_reports(tmp_path / "half.parquet", mech, half)
    with warnings.catch_warnings():
        warnings.simplefilter("error", SanitizationWarning)
        decode_files(mech, tmp_path / "half.parquet")
        assert main(["decode", str(tmp_path / "half.parquet"), "--quiet"]) == 0
    capsys.readouterr()
    with warnings.catch_warnings():
        warnings.simplefilter("error", SanitizationWarning)  # the CLI says it in one line
        assert main(["decode", str(path), "--quiet", "--out", str(tmp_path / "r.npz")]) == 1
    captured = capsys.readouterr()
    assert "largest counts" in captured.out and (tmp_path / "r.npz").exists()
    assert captured.err.startswith("fastldp: warning: 600 of 1,000 reports (60%)")
    assert captured.err.count("\n") == 1


def test_every_streaming_mechanism_has_a_report_column_type():
    # the decoder's table of report types covers every mechanism by name and agrees
    # with what privatize returns
    from fastldp.reports import _report_kind

    # every class's kind is its report schema's now (tests/test_protocol.py checks each
    # class's schema against a literal table of the kinds the old name table gave)
    for name in FIXED:
        mech, rep = _fixed_budget_case(name, n=50)
        assert (rep.dtype.kind in "iu") == (_report_kind(mech) == "integer"), name
    assert _report_kind(_jprs()) == "integer"


# ---------------------------------------------------------------- what decode prints, result files
def test_decode_says_the_sanitized_reports_in_words(tmp_path, capsys):
    mech, rep = _fixed_budget_case("GRR", n=1000)
    clean = write_reports(tmp_path / "clean.parquet", mech, rep)
    assert main(["decode", str(clean), "--quiet"]) == 0
    line = [s for s in capsys.readouterr().out.splitlines() if "sanitized" in s]
    assert line == ["  sanitized reports: none of 1,000"]  # was "0 of 1000 {}"
    bad = rep.copy()
    bad[[3, 30, 300, 301, 302, 600, 999]] = 10**6  # seven reports outside the alphabet
    dirty = write_reports(tmp_path / "dirty.parquet", mech, bad)
    assert main(["decode", str(dirty), "--quiet"]) == 0
    line = [s for s in capsys.readouterr().out.splitlines() if "sanitized" in s]
    assert line == ["  sanitized reports: 7 of 1,000 (out_of_range 7)"]


def _round_trip(result, path):
    import dataclasses

    from fastldp.reports import load_result, save_result

    loaded = load_result(save_result(result, path))
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        got = getattr(loaded, f.name)
        if isinstance(value, np.ndarray):
            assert got.dtype == value.dtype and got.tobytes() == value.tobytes(), f.name
        elif isinstance(value, tuple) and value and isinstance(value[0], np.ndarray):
            assert len(got) == len(value), f.name
            for a, b in zip(got, value):
                np.testing.assert_array_equal(a, b)
        elif f.name == "privacy":  # read back as the statement itself (issue 37, item 2)
            assert got == value and type(got) is type(value), f.name
        elif dataclasses.is_dataclass(value):
            assert got == json.loads(json.dumps(dataclasses.asdict(value), default=str)), f.name
        elif isinstance(value, (int, float, str, dict)) and value is not None:
            assert got == value, f.name
    assert loaded.kind.endswith(type(result).__qualname__)
    return loaded


def test_load_result_reads_back_an_oracle_result(tmp_path):
    oracle = fastldp.oracles.OLH(domain_size=40, epsilon=1.0, codebook_seed=5)
    rep = oracle.privatize(np.random.default_rng(3).integers(0, 40, 2000), rng=4)
    rep[:5] = 10**6  # the sanitization summary survives too
    result = oracle.estimate(rep)
    loaded = _round_trip(result, tmp_path / "olh.npz")
    assert loaded.estimate_name == "counts" and loaded.estimate is loaded.arrays["counts"]
    np.testing.assert_array_equal(loaded.estimate, result.counts)
    np.testing.assert_array_equal(loaded.std, result.std)
    assert loaded.n == 2000 and loaded.sanitization["n_received"] == 2000
    assert loaded.sanitization["by_reason"]["out_of_range"] == 5
    assert set(loaded.arrays) == {"counts", "variances"}
    assert "counts(40,)" in repr(loaded) and "n=2000" in repr(loaded)
    with pytest.raises(AttributeError, match="no field 'matrix'"):
        loaded.matrix


def test_load_result_reads_back_a_jprs_result_from_the_cli(tmp_path):
    from fastldp.reports import load_result

    mech, bits, eps, ids = _jprs_reports(n=1500)
    path = write_reports(tmp_path / "r.parquet", mech, bits, eps, ids, row_group_size=500)
    result = decode_files(mech, path)
    loaded = _round_trip(result, tmp_path / "jprs.npz")
    assert loaded.estimate_name == "matrix" and loaded.variances is None and loaded.std is None
    assert isinstance(loaded.support, tuple) and len(loaded.support) == len(result.support)
    # what `fastldp decode --out` writes is the same file
    assert main(["decode", str(path), "--quiet", "--out", str(tmp_path / "cli.npz")]) == 0
    cli = load_result(tmp_path / "cli.npz")
    assert cli.matrix.tobytes() == result.matrix.tobytes()
    assert cli.budget == loaded.budget and cli.sanitization == loaded.sanitization


def test_load_result_reads_back_an_rpc_result(tmp_path):
    import scipy.sparse as sp

    rpc = fastldp.RPC(d=30, m=4, epsilon=1.0, values="rounded", codebook_seed=3)
    rng = np.random.default_rng(1)
    idx = np.stack([rng.choice(30, 4, replace=False) for _ in range(500)])
    x = sp.csr_matrix((rng.uniform(-1, 1, 2000), idx.ravel(), np.arange(0, 2001, 4)),
                      shape=(500, 30))
    result = rpc.estimate(rpc.privatize(x, rng=4))
    loaded = _round_trip(result, tmp_path / "rpc.npz")
    assert loaded.estimate_name == "mean"
    np.testing.assert_array_equal(loaded.estimate, result.mean)
    np.testing.assert_array_equal(loaded.raw, result.raw)
    assert loaded.alpha == result.alpha and loaded.R == result.R


def test_load_result_reads_a_file_without_the_fastldp_entry_and_refuses_others(tmp_path):
    from fastldp.reports import load_result

    # a file of the first layout (arrays and summary only): the main array is guessed
    summary = np.frombuffer(json.dumps({"n": 3}).encode(), dtype=np.uint8)
    np.savez(tmp_path / "old.npz", counts=np.arange(3.0), variances=np.ones(3), summary=summary)
    old = load_result(tmp_path / "old.npz")
    assert old.estimate_name == "counts" and old.n == 3 and old.kind == ""
    np.savez(tmp_path / "plain.npz", counts=np.arange(3.0))
    with pytest.raises(ValueError, match="not a fastldp result file.*'summary'"):
        load_result(tmp_path / "plain.npz")
    np.savez(tmp_path / "text.npz", summary=np.frombuffer(b"[1, 2]", dtype=np.uint8))
    with pytest.raises(ValueError, match="not a JSON object"):
        load_result(tmp_path / "text.npz")
    (tmp_path / "junk.npz").write_bytes(b"not a zip")
    with pytest.raises(ValueError, match="not a fastldp result file"):
        load_result(tmp_path / "junk.npz")
    with pytest.raises(FileNotFoundError):
        load_result(tmp_path / "missing.npz")


class _FakeTqdm:
    """Stands in for tqdm.tqdm: records what the bar was told."""

    made: list = []

    def __init__(self, total, desc, unit, file, dynamic_ncols):
        self.total, self.desc, self.unit, self.n, self.closed = total, desc, unit, 0, False
        _FakeTqdm.made.append(self)

    def update(self, n=1):
        self.n += n

    def close(self):
        self.closed = True


@pytest.mark.parametrize("tqdm_installed", [False, True])
def test_decode_files_progress_true_draws_a_bar(tmp_path, capsys, monkeypatch, tqdm_installed):
    import sys
    import types

    fake = types.SimpleNamespace(tqdm=_FakeTqdm) if tqdm_installed else None
    monkeypatch.setitem(sys.modules, "tqdm", fake)  # None: tqdm missing, the built-in bar
    _FakeTqdm.made.clear()
    mech, rep = _fixed_budget_case("GRR", n=1000)
    path = write_reports(tmp_path / "r.parquet", mech, rep, row_group_size=250)
    got = decode_files(mech, path, progress=True)  # was a TypeError
    assert got.counts.tobytes() == mech.estimate(rep).counts.tobytes()
    err = capsys.readouterr().err
    if tqdm_installed:
        (bar,) = _FakeTqdm.made
        assert (bar.total, bar.desc, bar.unit, bar.n, bar.closed) == (1000, "decode", "report",
                                                                      1000, True)
    else:
        assert err.startswith("decode:") and "1000/1000 reports" in err.splitlines()[-1]
    for off in (False, None):
        decode_files(mech, path, progress=off)
        assert capsys.readouterr().err == ""
    seen = []
    decode_files(mech, path, progress=lambda done, total: seen.append((done, total)))
    assert seen == [(250, 1000), (500, 1000), (750, 1000), (1000, 1000)]
    with pytest.raises(TypeError, match="'progress' parameter of decode_files.*Got 'yes'"):
        decode_files(mech, path, progress="yes")


def test_a_resumed_decode_bar_starts_at_its_checkpoint(tmp_path, capsys, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "tqdm", None)
    mech, rep = _fixed_budget_case("GRR", n=1000)
    path = write_reports(tmp_path / "r.parquet", mech, rep, row_group_size=250)
    ck = tmp_path / "ck.json"

    def kill_after_two(done, total):
        if done == 500:
            raise KeyboardInterrupt

    with pytest.raises(KeyboardInterrupt):
        decode_files(mech, path, checkpoint=ck, progress=kill_after_two)
    decode_files(mech, path, checkpoint=ck, progress=True)
    lines = capsys.readouterr().err.splitlines()
    # the bar jumps to the two row groups the checkpoint holds, then counts the rest
    assert "500/1000" in lines[1] and "50%" in lines[1] and "1000/1000" in lines[-1]
    assert not any("250/1000" in line or "750/1000" in line for line in lines[:2])


@pytest.mark.parametrize("categories", [["a", "b", "c", "d"], [10, 20, 30, 40],
                                        ["x", 7, "y", 8]])
def test_simulate_writes_reports_of_an_oracle_with_categories(tmp_path, categories):
    """simulate passed integer symbols, which an oracle with categories refuses (it takes its
    labels): the file now holds the labels' reports, and decodes to the Zipf(1.1) law."""
    mech = fastldp.GRR(categories=categories, epsilon=2.0, codebook_seed=5)
    n = 20_000
    path = mechanisms.simulate(mech, n, tmp_path / "r.parquet", seed=1, chunk=7_000)
    server = mechanisms.from_spec(ReportFile(path).spec)
    est = decode_files(server, path)
    assert est.categories == tuple(categories) and est.n == n
    # the symbols are Zipf(1.1) over the four labels: each count is within 5 standard
    # deviations of n p (the sampling variance n p (1 - p) plus the reports' plug-in variance)
    w = 1.0 / np.arange(1, 5) ** 1.1
    p = w / w.sum()
    sd = np.sqrt(n * p * (1 - p) + est.variances)
    assert np.all(np.abs(est.counts - n * p) < 5 * sd)
    # the same seed writes the same reports; the labels are those of the integer oracle
    plain = fastldp.GRR(domain_size=4, epsilon=2.0, codebook_seed=5)
    twin = mechanisms.simulate(plain, n, tmp_path / "plain.parquet", seed=1, chunk=7_000)
    assert np.array_equal(pq.read_table(path)["report"].to_numpy(),
                          pq.read_table(twin)["report"].to_numpy())
