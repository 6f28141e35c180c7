"""``fastldp reproduce heavy-hitters`` on a tiny grid: tables, report, registration."""

import csv
import io

import pytest

from fastldp.experiments.heavyhitters import reproduce
from fastldp.experiments.heavyhitters.reproduce import load_spec
from fastldp.experiments.registry import get_experiment

TINY = """
[full]
seed = 5
n_users = 4000
item_bits = 32
zipf_exponent = 1.1
repetitions = 1
epsilons = [1.0, 4.0]
ks = [4, 8]
protocols = ["PEM", "TreeHist", "SFP", "NotAProtocol"]
attack_epsilon = 4.0
attack_k = 4
attack_targets = 3
attack_betas = [0.05]
attack_search = [1, 4]
attack_repetitions = 1
"""


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("heavy")
    spec = out / "spec.toml"
    spec.write_text(TINY)
    stream = io.StringIO()
    result = reproduce(out=out / "run", file=stream, spec=spec, progress=False)
    return out / "run", stream.getvalue(), result


def test_registered():
    exp = get_experiment("heavy-hitters")
    assert exp.family == "heavyhitters" and exp.run is reproduce


def test_tiny_run_tables_and_report(tiny):
    out, printed, result = tiny
    assert printed == result.text == (out / "report.txt").read_text()
    acc = _read(out / "accuracy.csv")
    # one row per landed protocol x k x epsilon; the unknown one skipped with its reason
    assert {(r["protocol"], r["k"], r["epsilon"]) for r in acc} == {
        (p, k, e) for p in ("PEM", "TreeHist", "SFP") for k in ("4", "8") for e in ("1.0", "4.0")}
    assert result.skipped == {"NotAProtocol": "fastldp.heavyhitters has no NotAProtocol "
                                              "(not landed)"}
    assert "skipped NotAProtocol" in result.text
    for r in acc:
        assert 0.0 <= float(r["precision"]) <= 1.0 and 0.0 <= float(r["ncr"]) <= 1.0
        assert float(r["returned"]) <= int(r["k"])
    attack = _read(out / "attack.csv")
    assert [(r["beta"], r["search"]) for r in attack] == [("0.05", "1"), ("0.05", "4")]
    for r in attack:
        assert int(r["n_fake"]) == 200
        assert abs(float(r["realized_gain"]) - float(r["objective"])) <= \
            5 * float(r["prediction_std"]) + 1e-12
    checks = _read(out / "checks.csv")
    assert len(checks) == len(result.checks) and result.failed == sum(
        c["ok"] == "False" for c in checks)
    assert "MGA against PEM" in result.text and "The paper:" in result.text


def test_quick_grid_is_the_spec_with_its_overrides():
    full, quick = load_spec(False), load_spec(True)
    assert full["ks"] == quick["ks"] == [16, 32, 64]
    assert quick["n_users"] < full["n_users"]
    assert set(full["protocols"]) == {"PEM", "TreeHist", "SFP"}


def test_tiny_run_draws_the_precision_and_ncr_figure(tiny):
    pytest.importorskip("matplotlib", reason="figures need matplotlib (fastldp[plot])")
    out, _, result = tiny
    assert [p.name for p in result.figures] == ["heavy_hitters.png", "heavy_hitters.pdf"]
    assert all((out / p.name).stat().st_size > 1000 for p in result.figures)
