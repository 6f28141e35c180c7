"""The command line never shows a traceback for an expected failure.

A corrupt Parquet file, an unreadable or misplaced output, pyarrow's and the
operating system's errors and bad ``--epsilon`` budgets end in one line
``fastldp: error: ...`` on stderr and exit status 2; ``fastldp --debug``
shows the traceback instead. Unexpected failures (bugs) still raise.
"""

import os
import shutil
import subprocess
import sys
import textwrap

import numpy as np
import pytest

pa = pytest.importorskip("pyarrow")
pq = pytest.importorskip("pyarrow.parquet")

import fastldp  # noqa: E402
from fastldp.cli import main  # noqa: E402
from fastldp.reports import write_reports  # noqa: E402


def _one_error_line(err: str) -> None:
    assert err.startswith("fastldp: error: ") and err.count("\n") == 1, err
    assert "Traceback" not in err


def _corrupt_report_file(folder):
    """A valid OLH report file whose first data page (the identity column) is overwritten."""
    oracle = fastldp.oracles.OLH(domain_size=64, epsilon=1.0, codebook_seed=1)
    reports = oracle.privatize(np.random.default_rng(0).integers(0, 64, 20_000), rng=1)
    good = write_reports(folder / "good.parquet", oracle, reports, row_group_size=10_000)
    column = pq.ParquetFile(good).metadata.row_group(0).column(0)
    start = column.dictionary_page_offset or column.data_page_offset
    bad = folder / "corrupt.parquet"
    shutil.copy(good, bad)
    with open(bad, "r+b") as fh:  # the footer stays valid: the file opens, its pages do not
        fh.seek(start + column.total_compressed_size // 2)
        fh.write(b"\xff" * 256)
    return bad


def test_a_corrupt_parquet_file_is_one_error_line(tmp_path, capsys):
    bad = _corrupt_report_file(tmp_path)
    assert main(["decode", str(bad), "--quiet"]) == 2
    err = capsys.readouterr().err
    _one_error_line(err)
    assert str(bad) in err and "row group 0" in err and "damaged" in err
    with pytest.raises(ValueError, match="damaged") as info:  # --debug: the traceback
        main(["--debug", "decode", str(bad), "--quiet"])
    assert isinstance(info.value.__cause__, OSError)


def test_a_corrupt_file_in_a_real_process_prints_no_traceback(tmp_path):
    bad = _corrupt_report_file(tmp_path)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    proc = subprocess.run([sys.executable, "-m", "fastldp", "decode", str(bad), "--quiet"],
                          env=env, capture_output=True, text=True, timeout=120)
    assert proc.returncode == 2
    _one_error_line(proc.stderr)
    assert "damaged" in proc.stderr


@pytest.mark.parametrize("budgets, said", [
    (["0.5", "nan"], "got 'nan'"),
    (["nan"], "got 'nan'"),
    (["inf"], "got 'inf'"),
    (["0"], "got '0'"),
    (["-1", "2"], "got '-1'"),
])
def test_simulate_refuses_a_bad_budget_when_parsing(tmp_path, capsys, budgets, said):
    # each value is checked by the flag's type (finite, > 0): argparse's one error line, exit 2
    out = tmp_path / "r.parquet"
    with pytest.raises(SystemExit) as info:
        main(["simulate", "--n", "10", "--out", str(out), "--quiet", "--epsilon", *budgets])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert "Traceback" not in err
    (line,) = [line for line in err.splitlines() if "error:" in line]
    assert "argument --epsilon: expected a finite number > 0" in line and said in line
    assert not out.exists()


@pytest.mark.parametrize("budgets, said", [
    (["2", "1"], "Got low 2.0 >= high 1.0 instead"),
    (["1", "1"], "Got low 1.0 >= high 1.0 instead"),
    (["1", "2", "3"], "Got 3 values (1.0 2.0 3.0) instead"),
])
def test_simulate_refuses_bad_budgets_in_one_line(tmp_path, capsys, budgets, said):
    out = tmp_path / "r.parquet"
    assert main(["simulate", "--n", "10", "--out", str(out), "--quiet",
                 "--epsilon", *budgets]) == 2
    err = capsys.readouterr().err
    _one_error_line(err)
    assert "'--epsilon' option of fastldp simulate" in err and said in err
    assert not out.exists()


def test_simulate_budgets_are_checked_in_python_too(tmp_path):
    from fastldp import mechanisms

    mech = mechanisms.from_spec("olh-4096")
    for epsilon in (float("nan"), (0.5, float("nan")), (2.0, 1.0), (1.0, 1.0), 0.0):
        with pytest.raises(ValueError, match="'epsilon' parameter of simulate"):
            mechanisms.simulate(mech, 10, tmp_path / "r.parquet", epsilon=epsilon)


@pytest.mark.parametrize("error", [
    lambda: pa.lib.ArrowKeyError("no such column"),  # a KeyError, caught as pyarrow's
    lambda: pa.lib.ArrowNotImplementedError("no such codec"),
    lambda: PermissionError(13, "Permission denied", "r.parquet"),
    lambda: OverflowError("Range exceeds valid bounds"),
])
def test_pyarrow_and_os_errors_are_one_line(tmp_path, capsys, monkeypatch, error):
    oracle = fastldp.oracles.GRR(domain_size=4, epsilon=1.0, codebook_seed=1)
    path = write_reports(tmp_path / "r.parquet", oracle, np.arange(8) % 4)

    def fail(*args, **kwargs):
        raise error()

    monkeypatch.setattr("fastldp.reports.decode_files", fail)
    assert main(["decode", str(path), "--quiet"]) == 2
    _one_error_line(capsys.readouterr().err)


def test_an_unexpected_failure_still_raises(tmp_path, monkeypatch):
    # a bug is not an expected failure: its traceback must reach the user
    oracle = fastldp.oracles.GRR(domain_size=4, epsilon=1.0, codebook_seed=1)
    path = write_reports(tmp_path / "r.parquet", oracle, np.arange(8) % 4)

    def fail(*args, **kwargs):
        raise RuntimeError("a bug")

    monkeypatch.setattr("fastldp.reports.decode_files", fail)
    with pytest.raises(RuntimeError, match="a bug"):
        main(["decode", str(path), "--quiet"])


def test_run_and_reproduce_into_an_existing_file_are_one_line(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text(textwrap.dedent("""
        name = "cli"
        methods = ["JPRS-Global"]
        seeds = 1
        [fixed]
        shape = [8, 8]
        s = 8
        k = 2
        eps0 = 1.0
        [[grid]]
        n = [200]
        alpha = [0.0]
    """))
    taken = tmp_path / "a-file"
    taken.write_text("")
    assert main(["run", str(spec), "--out", str(taken), "--no-progress", "--workers", "1"]) == 2
    _one_error_line(capsys.readouterr().err)
    assert main(["reproduce", "ablation", "--quick", "--out", str(taken), "--no-progress",
                 "--workers", "1"]) == 2
    _one_error_line(capsys.readouterr().err)


def test_a_closed_pipe_is_not_an_error():
    # `fastldp audit --list | head -1`: the reader leaves early; no error line, no traceback
    import subprocess
    import sys

    proc = subprocess.Popen([sys.executable, "-m", "fastldp", "audit", "--list"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # before the listing is written: its write meets a closed pipe
    err = proc.stderr.read().decode()
    proc.wait(timeout=60)
    assert "error" not in err and "Traceback" not in err, err


def _olh_report_file(folder):
    oracle = fastldp.oracles.OLH(domain_size=64, epsilon=1.0, codebook_seed=1)
    reports = oracle.privatize(np.random.default_rng(0).integers(0, 64, 500), rng=1)
    return write_reports(folder / "r.parquet", oracle, reports)


@pytest.mark.parametrize("argv, role", [
    (["decode", "{reports}", "--quiet", "--out", "{missing}/result.npz"], "the result file"),
    (["decode", "{reports}", "--quiet", "--out", "{folder}"], "the result file"),
    (["decode", "{reports}", "--quiet", "--checkpoint", "{missing}/ck.json"], "the checkpoint"),
    (["simulate", "--mechanism", "olh-4096", "--n", "10", "--quiet", "--out",
      "{missing}/r.parquet"], "the report file"),
], ids=["decode-out", "decode-out-folder", "decode-checkpoint", "simulate-out"])
def test_a_file_that_cannot_be_written_is_named_by_its_role_before_any_work(tmp_path, capsys,
                                                                          argv, role):
    # before: "[Errno 2] No such file or directory: '.../ck.tmp'" (no role), and decode --out
    # decoded every file before failing on the missing folder
    values = {"reports": str(_olh_report_file(tmp_path)), "missing": str(tmp_path / "missing"),
              "folder": str(tmp_path)}
    assert main([a.format(**values) for a in argv]) == 2
    captured = capsys.readouterr()
    _one_error_line(captured.err)
    assert f"fastldp: error: {role} " in captured.err
    assert "fastldp decode:" not in captured.out  # nothing decoded first


@pytest.mark.parametrize("command", ["decode", "simulate"])
@pytest.mark.parametrize("spec", [
    "no-such-spec.json",
    '{"mechanism": "OLH", "params": {"domain_size": 64}}',
], ids=["missing", "bad-params"])
def test_a_bad_mechanism_spec_is_named_as_the_mechanism_spec(tmp_path, capsys, command, spec):
    argv = ({"decode": ["decode", str(_olh_report_file(tmp_path))],
             "simulate": ["simulate", "--n", "10", "--out", str(tmp_path / "s.parquet")]}[command]
            + ["--mechanism", spec, "--quiet"])
    assert main(argv) == 2
    err = capsys.readouterr().err
    _one_error_line(err)
    assert err.startswith("fastldp: error: the mechanism spec ")
