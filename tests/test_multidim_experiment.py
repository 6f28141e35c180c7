"""``fastldp reproduce multidim`` (issue 36, item 4): its data, its discovery, its checks."""

import importlib
import io
import math
from pathlib import Path

import numpy as np
import pytest

from fastldp.experiments.registry import get_experiment

# the package exports the function reproduce, which shadows the module of the same name
mod = importlib.import_module("fastldp.experiments.multidim.reproduce")

CLOTHING = (Path(__file__).resolve().parents[2] / "shared" / "data" / "womens-clothing-reviews")


def test_registered_and_takes_repetitions():
    exp = get_experiment("multidim")
    assert exp.family == "multidim" and exp.takes_repetitions and not exp.needs_data


def test_marginal_protocols_are_found_from_the_family_exports():
    found = mod.marginal_protocols()
    assert "FullDomain" in found
    # the frequency and mean classes have no marginal: left out by their estimates
    assert not {"SPL", "SMP", "RSpFD", "SampledMean", "SplitMean"} & set(found)


def test_binary_table_has_correlated_attributes():
    x = mod.binary_table(20_000, 4, np.random.default_rng(0))
    assert set(np.unique(x)) == {0, 1}
    # the latent class makes attributes 0 and 1 positively correlated (independent would be 0)
    assert np.corrcoef(x[:, 0], x[:, 1])[0, 1] > 0.1


@pytest.mark.skipif(not CLOTHING.is_dir(), reason="the shared clothing table is not here")
def test_clothing_table_loads_every_attribute_as_categories():
    path = mod.find_clothing(CLOTHING)
    records, sizes = mod.load_clothing(path)
    assert sizes == [77, 5, 2, 3, 6, 20]
    assert records.shape == (23_472, 6)
    assert (records.min(axis=0) == 0).all() and (records.max(axis=0) == np.array(sizes) - 1).all()


def test_clothing_table_without_a_column_is_refused_by_name(tmp_path):
    bad = tmp_path / "clothing.csv"
    bad.write_text("Age,Rating\n30,4\n")
    with pytest.raises(ValueError, match=r"no column\(s\) \['Recommended IND'"):
        mod.load_clothing(bad)


def _row(method, mean, sd, reps=10):
    return {"method": method, "mse_mean": mean, "mse_sd": sd, "repetitions": reps}


def test_a_check_is_resolved_only_beyond_two_standard_errors():
    # two standard errors of the difference: 2 sqrt(2 * 1^2 / 100) = 0.283
    assert mod._compare(_row("a", 1.0, 1.0, 100), _row("b", 1.2, 1.0, 100), "mse", "c",
                        "s")["verdict"] == "not resolved"
    agree = mod._compare(_row("a", 1.0, 1.0, 100), _row("b", 1.3, 1.0, 100), "mse", "c", "s")
    assert agree["verdict"] == "agrees" and agree["ok"]
    assert math.isclose(agree["two_se"], 2 * math.sqrt(0.02))
    against = mod._compare(_row("a", 1.3, 1.0, 100), _row("b", 1.0, 1.0, 100), "mse", "c", "s")
    assert against["verdict"] == "DISAGREES" and not against["ok"]


def test_rsfd_against_smp_is_checked_only_in_the_papers_regime():
    freq = []
    for eps in (1.0, 4.0):
        for method, mean in (("SMP-GRR", 1.0), ("SPL-GRR", 2.0), ("RSpFD-GRR@paper", 1.5)):
            freq.append({"table": "t", "epsilon": eps, **_row(method, mean, 0.01)})
    rows = mod.checks(freq, [], [])
    rsfd = [r for r in rows if r["better"] == "RSpFD-GRR@paper"]
    assert [(r["setting"], r["verdict"], r["ok"]) for r in rsfd] == [
        ("t, eps=1", "DISAGREES", False), ("t, eps=4", "DISAGREES", True)]
    assert all(r["ok"] for r in rows if r["claim"] == "SMP beats SPL")


def test_a_tiny_run_writes_every_table_and_checks(tmp_path, monkeypatch):
    tiny = dict(mod.GRIDS["quick"], epsilons=[2.0], repetitions=2, n=2_000,
                domain_sizes=[2, 5], marginal_n=2_000, marginal_attributes=3,
                marginal_epsilons=[2.0], mean_n=2_000, dimension=4)
    monkeypatch.setitem(mod.GRIDS, "quick", tiny)
    out = io.StringIO()
    result = mod.reproduce(quick=True, out=tmp_path, progress=False, file=out)
    assert {p.name for p in result.files} >= {"frequencies.csv", "marginals.csv", "means.csv",
                                               "summary.csv", "checks.csv", "report.txt"}
    methods = {r["method"] for r in result.tables["frequencies"]}
    assert len(methods) == 2 * 5 + 2 * 6  # SPL, SMP x (4 oracles, auto); RSpFD x 6 x 2
    assert "FullDomain" in {r["method"] for r in result.tables["marginals"]}
    assert all(r["repetitions"] == 2 for r in result.tables["frequencies"])
    assert "no table (pass --data DIR" in out.getvalue()
    assert result.failed == sum(not c["ok"] for c in result.tables["checks"])
