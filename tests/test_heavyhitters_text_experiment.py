"""``fastldp reproduce heavy-hitters-text`` (issue 34, item 7) on a small grid.

The full run (10^6 users, both workloads, eps 2, 4, 8, k 16, 32) writes the
table of docs/guide/heavyhitters.rst; here the same code runs on a grid small
enough for the default tier, and the parts that do not depend on the scale
are checked: the truth, the ceiling, the rows, the checks and the report.
"""

from __future__ import annotations

import io

import numpy as np
import pytest

from fastldp.experiments import get_experiment
from fastldp.experiments.heavyhitters import text


@pytest.fixture
def small_spec(tmp_path):
    path = tmp_path / "spec.toml"
    path.write_text(text.SPEC.read_text().replace("n_users = 1000000", "n_users = 5000")
                    .replace('workloads = ["words", "signatures"]', 'workloads = ["signatures"]')
                    .replace("epsilons = [2.0, 4.0, 8.0]", "epsilons = [50.0]")
                    .replace("ks = [16, 32]", "ks = [4]")
                    .replace("signatures = 64", "signatures = 24")
                    .replace("target_epsilons = [4.0, 8.0]", "target_epsilons = [50.0]"))
    return path


def test_the_real_text_mode_is_registered():
    exp = get_experiment("heavy-hitters-text")
    assert exp.run is text.reproduce_text and not exp.needs_data


def test_small_run_rows_checks_and_report(small_spec, tmp_path):
    printed = io.StringIO()
    res = text.reproduce_text(spec=small_spec, out=tmp_path / "out", progress=False,
                              figures=False, file=printed)
    rows = res.tables["accuracy"]
    assert {r["protocol"] for r in rows} == {"ceiling", "PEM", "PEM+lengths", "TreeHist", "SFP"}
    assert {(r["k"], r["epsilon"]) for r in rows} == {(4, 50.0)}
    by = {(r["protocol"], r["epsilon"]): r for r in rows}
    # at epsilon = 50 OLH told the dictionary is exact: the ceiling is the truth
    assert by[("ceiling", 50.0)]["precision"] == 1.0 and by[("ceiling", 50.0)]["ncr"] == 1.0
    # most def lines are longer than 23 bytes: the survey keeps the whole 24-byte field
    assert by[("PEM+lengths", 50.0)]["field_bytes"] == 24
    assert all(0.0 <= r["precision"] <= 1.0 and r["returned"] <= 4 for r in rows)
    # one check per (workload, k, eps) of the target budgets, on the best protocol
    assert len(res.checks) == 1 and "within 0.1" in res.checks[0]["check"]
    best = max(r["precision"] for r in rows if r["epsilon"] == 50.0 and r["protocol"] != "ceiling")
    assert res.checks[0]["value"] == (best, 1.0)
    assert res.failed == sum(not c["ok"] for c in res.checks)
    out = printed.getvalue()
    assert "signatures (24-byte field)" in out and "field picked by the length survey" in out
    assert (tmp_path / "out" / "accuracy.csv").exists() and (tmp_path / "out" / "report.txt").exists()


def test_ceiling_is_olh_over_the_true_strings():
    # three strings held by 500, 300 and 200 users: OLH at epsilon 50 ranks them exactly
    idx = np.repeat(np.arange(3), [500, 300, 200])
    assert list(text._ceiling(idx, 3, 50.0, seed=1)) == [0, 1, 2]


def test_unknown_workload_is_named():
    with pytest.raises(ValueError, match="'poems'"):
        text.workload_law("poems", 32)


def test_the_cli_says_which_checks_failed(monkeypatch, tmp_path, capsys):
    # a run whose checks fail exits 1 and says so (not "rows failed ... 'failure' column",
    # which is the runner's message for rows that raised)
    from fastldp import cli
    from fastldp.experiments import registry
    from fastldp.experiments.heavyhitters.reproduce import HeavyHittersResult

    def run(*, quick, out, workers, data_dir, progress, figures, file):
        print("report", file=file)
        return HeavyHittersResult(text="report\n", failed=2, checks=[
            {"check": "a", "ok": False}, {"check": "b", "ok": False}, {"check": "c", "ok": True}])

    registry.register_experiment(registry.Experiment(name="zz-checks", family="test",
                                                     description="a test", run=run))
    try:
        assert cli.main(["reproduce", "zz-checks", "--out", str(tmp_path), "--quiet",
                         "--no-figures"]) == 1
    finally:
        registry._EXPERIMENTS.pop("zz-checks", None)
    err = capsys.readouterr().err
    assert "2 of 3 checks failed" in err and "'failure' column" not in err
