"""The experiment command line: run, report, reproduce, data export; the progress bar."""

import io
import sys
import textwrap

import pytest

from fastldp import cli
from fastldp.experiments import read_results
from fastldp.experiments.progress import progress_bar

SPEC = """
name = "cli"
methods = ["JPRS-Global", "JPRS-NoProjection", "JPRS-Later"]
seeds = 2
[fixed]
shape = [8, 8]
s = 8
k = 2
eps0 = 1.0
[[grid]]
n = [200, 400, 800]
alpha = [0.0, 0.1]
"""


@pytest.fixture
def later_decoder():
    from fastldp.experiments.relations import methods as registry

    def later(ctx, priv):
        raise RuntimeError("JPRS-Later is not written yet")

    registry.register_decoder("JPRS", "Later", later)
    yield
    del registry.DECODERS["JPRS"]["Later"]


def test_a_misspelt_method_stops_the_run_at_once(tmp_path, capsys):
    spec = tmp_path / "cli.toml"
    spec.write_text(textwrap.dedent(SPEC).replace('"JPRS-Global"', '"JPRS-Globl"'))
    out = tmp_path / "out"
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastldp: error: Spec 'cli' cannot run") and err.count("\n") == 1
    assert "unknown method 'JPRS-Globl' (did you mean 'JPRS-Global'?)" in err
    assert "unknown method 'JPRS-Later'" in err  # every problem, not the first
    assert not out.exists()


def test_run_then_report(tmp_path, capsys, later_decoder):
    spec = tmp_path / "cli.toml"
    spec.write_text(textwrap.dedent(SPEC))
    out = tmp_path / "out"
    # JPRS-Later fails when it runs: its 12 rows fail, so the run exits 1 and says why first
    # (one worker: the decoder is registered in this process only)
    assert cli.main(["run", str(spec), "--out", str(out), "--no-progress",
                     "--workers", "1"]) == 1
    captured = capsys.readouterr()
    said = captured.out
    assert "36 rows written" in said and "12 of 12 cells run" in said and "12 failed" in said
    assert "12 rows failed" in captured.err
    rows = read_results(out / "results.csv")
    assert len(rows) == 36
    assert (out / "manifest.json").is_file()

    # resumed: nothing left to run, but the table still holds the failed rows
    assert cli.main(["run", str(spec), "--out", str(out), "--quiet", "--workers", "1"]) == 1
    said = capsys.readouterr().out
    assert "0 rows written" in said and "holds 12 failed rows" in said

    assert cli.main(["report", str(out / "results.csv"), "--no-figures",
                     "--slope-min-n", "200"]) == 0
    text = capsys.readouterr().out
    assert "JPRS-Later is not written yet" in text
    assert "Paired attack increments" in text and "Log-log fits" in text
    assert "Projection ablation" in text and "Theorem-regime audit" in text
    assert (out / "report" / "summary.csv").is_file()
    assert (out / "report" / "report.txt").read_text().startswith("36 rows")


def test_errors_are_one_line(tmp_path, capsys):
    assert cli.main(["run", str(tmp_path / "nope.toml")]) == 2
    assert "No experiment spec" in capsys.readouterr().err
    assert cli.main(["report", str(tmp_path / "nope.csv")]) == 2
    assert "No results table" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        cli.main(["reproduce", "table9"])
    with pytest.raises(SystemExit):
        cli.main(["run", "x.toml", "--workers", "0"])


def test_data_export(tmp_path, capsys, monkeypatch):
    import fastldp.relations.scenarios as data

    calls = []
    monkeypatch.setattr(data, "export_frozen", lambda d: calls.append(d) or d / "manifest.json",
                        raising=False)
    assert cli.main(["data", "export", "--out", str(tmp_path)]) == 0
    assert calls == [tmp_path] and "manifest.json" in capsys.readouterr().out


def test_demo_and_config_still_parse():
    parser = cli.build_parser()
    assert parser.parse_args(["demo", "--n", "10"]).n == 10
    assert parser.parse_args(["config"]).func is cli._config


def test_builtin_progress_bar(monkeypatch):
    monkeypatch.setitem(sys.modules, "tqdm", None)
    buf = io.StringIO()
    bar = progress_bar(4, "grid", file=buf)
    for _ in range(4):
        bar.update(1)
    bar.close()
    lines = buf.getvalue().splitlines()
    assert lines[0].startswith("grid:   0%") and "0/4 cells" in lines[0] and "ETA ?" in lines[0]
    assert "4/4 cells" in lines[-1] and "100%" in lines[-1] and "ETA 00:00" in lines[-1]


def test_parquet_needs_pyarrow(tmp_path, monkeypatch):
    from fastldp.experiments.table import write_parquet

    monkeypatch.setitem(sys.modules, "pyarrow", None)
    (tmp_path / "r.csv").write_text("key\n")
    with pytest.raises(ImportError, match="pip install pyarrow"):
        write_parquet(tmp_path / "r.csv", {"key": str})


def test_parquet_copy_has_the_csv_rows(tmp_path):
    pq = pytest.importorskip("pyarrow.parquet")  # the test extra installs pyarrow
    from fastldp.experiments.table import write_parquet

    (tmp_path / "r.csv").write_text("key,failure,E_s\na/b/0,,0.5\na/c/0,boom,\n")
    from fastldp.experiments.relations.table import COLUMNS

    table = pq.read_table(write_parquet(tmp_path / "r.csv", COLUMNS))
    assert table.num_rows == 2
    assert table.column("key").to_pylist() == ["a/b/0", "a/c/0"]


@pytest.mark.parametrize("experiment, kinds", [
    ("rpc-real", ["commerce", "clothing", "amazon", "movielens"]),
    ("real-data", ["movielens", "foursquare", "gowalla"]),
])
def test_reproduce_without_its_data_stops_at_once_listing_every_file(tmp_path, capsys,
                                                                    experiment, kinds):
    # rpc-real used to run 6,000 cells, write 36,000 failure rows and three empty figures
    data = tmp_path / "emptydata"
    data.mkdir()
    out = tmp_path / "out"
    assert cli.main(["reproduce", experiment, "--data", str(data), "--out", str(out),
                     "--quiet", "--workers", "1"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastldp: error: Spec ") and err.count("\n") == 1
    assert f"({len(kinds)} problems)" in err
    for kind in kinds:
        assert f"{kind} data '{data}" in err, kind
    assert not out.exists()
    # a folder that exists but holds nothing is named as such
    (data / "womens-clothing-reviews").mkdir()
    assert cli.main(["reproduce", "rpc-real", "--data", str(data), "--out", str(out),
                     "--quiet", "--quick"]) == 2
    assert "womens-clothing-reviews': an empty folder" in capsys.readouterr().err
    assert not out.exists()


def test_a_misspelt_vector_method_stops_the_run_at_once(tmp_path, capsys):
    spec = tmp_path / "v.toml"
    spec.write_text(textwrap.dedent("""
        family = "vectors"
        name = "v"
        methods = ["RPC", "PCKV-EU", "Colision"]
        seeds = 1
        [fixed]
        n = 100
        d = 8
        m = 2
        attack = "targeted"
        q_frac = 0.1
        target = 20
    """))
    assert cli.main(["run", str(spec), "--out", str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert "unknown method 'PCKV-EU' (did you mean 'PCKV-UE'?)" in err
    assert "unknown method 'Colision' (did you mean 'Collision'?)" in err
    assert "the targeted set (target = 20) exceeds d = 8" in err
    assert not (tmp_path / "out").exists()
