"""``fastldp reproduce ranges`` (issue 35, item 7): registered, honest when quick, the clothing
table's ages, and the checks and crossovers on hand-made rows."""

import io
import math
from pathlib import Path

import numpy as np
import pytest

from fastldp.experiments import experiments, reproduce
from fastldp.experiments.quick import BANNER_START
from fastldp.experiments.ranges.reproduce import (AGE_DOMAIN, GRIDS, RANGE_METHODS, checks,
                                                  crossovers, load_ages, range_lengths)

CLOTHING = (Path(__file__).resolve().parents[2] / "shared" / "data" / "womens-clothing-reviews")

TINY = {"domains": [2**6], "n": 4000, "repetitions": 2, "epsilon": math.log(3.0),
        "ranges_per_length": 16, "numeric_epsilons": [2.0], "numeric_n": 3000,
        "numeric_repetitions": 2, "seed": 1}


@pytest.fixture
def tiny(monkeypatch):
    monkeypatch.setitem(GRIDS, "quick", TINY)


def _run(tmp_path, **kwargs):
    printed = io.StringIO()
    report = reproduce("ranges", quick=True, out=tmp_path / "out", progress=False,
                       figures=False, file=printed, **kwargs)
    return report, printed.getvalue()


def test_registered_and_a_quick_run_says_it_cannot_rank(tiny, tmp_path):
    assert "ranges" in experiments()
    report, text = _run(tmp_path)
    first = " ".join(text.split("\n\n")[0].split())
    assert first.startswith(BANNER_START) and "range MSE" in first and "Wasserstein-1" in first
    assert report.failed == sum(not c["ok"] for c in report.tables["checks"])
    names = {p.name for p in report.files}
    assert {"ranges.csv", "quantiles.csv", "numeric.csv", "summary.csv", "checks.csv",
            "report.txt"} <= names
    rows = report.tables["ranges"]
    # every method at every length of D = 64, on both synthetic data sets
    assert len(rows) == 2 * len(RANGE_METHODS) * len(range_lengths(64))
    assert all(r["mse_mean"] > 0 and r["repetitions"] == 2 for r in rows)
    assert "age: no table" in text


def test_range_lengths_reach_half_the_domain():
    assert range_lengths(64) == [1, 4, 16, 32]
    assert range_lengths(2**10) == [1, 4, 16, 64, 256, 512]


@pytest.mark.skipif(not CLOTHING.is_dir(), reason="the clothing table is not next to this checkout")
def test_the_ages_of_the_clothing_table(tiny, tmp_path):
    ages = load_ages(next(CLOTHING.glob("*clothing*.csv*")))
    assert ages.size == 23_486 and ages.min() == 18 and ages.max() == 99
    report, text = _run(tmp_path, data_dir=str(CLOTHING))
    assert {r["data"] for r in report.tables["ranges"]} == {"zipf", "cauchy", "age"}
    assert {r["D"] for r in report.tables["ranges"] if r["data"] == "age"} == {128}
    assert {r["data"] for r in report.tables["numeric"]} == {"beta(5,2)", "age"}
    assert "23,486 ages (18 to 99)" in text


def test_load_ages_refuses_a_table_without_ages(tmp_path):
    path = tmp_path / "clothing.csv"
    path.write_text("Rating,Age\n5,\n4,n/a\n")
    with pytest.raises(ValueError, match="no 'Age' column"):
        load_ages(path)


def _rows(mse):
    """Range rows of one setting: {(length, method): (mean, sd)}, 4 repetitions."""
    return [{"data": "z", "D": 64, "length": L, "method": m, "mse_mean": v, "mse_sd": s,
             "repetitions": 4} for (L, m), (v, s) in mse.items()]


def test_checks_agree_disagree_or_are_not_resolved_by_two_standard_errors():
    # flat 10 vs tree 4 at the longest length, sd 2 each: se of the gap 2 hypot(2, 2) / 2 = 2.83 < 6
    base = {(1, "flat"): (1.0, 0.1), (1, "HH B=4"): (2.0, 0.1),
            (1, "HH B=4 no consistency"): (3.0, 0.1), (1, "HaarHRR"): (2.5, 0.1),
            (32, "flat"): (10.0, 2.0), (32, "HH B=4"): (5.0, 2.0),
            (32, "HH B=4 no consistency"): (9.0, 2.0), (32, "HaarHRR"): (4.0, 2.0)}
    q = [{"data": "z", "D": 64, "method": m, "qerr_mean": v, "qerr_sd": 1.0, "repetitions": 4}
         for m, v in (("flat", 3.0), ("HH B=4", 2.5), ("HH B=4 no consistency", 2.0),
                      ("HaarHRR", 2.9))]
    out = {c["claim"]: c for c in checks(_rows(base), q, [])}
    long = out["a tree method beats flat on long ranges"]
    assert (long["better"], long["verdict"], long["ok"]) == ("HaarHRR", "agrees", True)
    # consistency pooled over the two lengths: 3.5 vs 6.0, sd sqrt((0.01 + 4) / 2) each
    pooled = out["consistency improves the hierarchy (all lengths pooled)"]
    assert pooled["better_value"] == pytest.approx(3.5) and pooled["verdict"] == "agrees"
    # quantiles: 2.5 vs 3.0 with sd 1: se of the gap 0.71, 2 se = 1.41 > 0.5
    assert out["a tree method has the smaller quantile error"]["verdict"] == "not resolved"
    worse = dict(base)
    worse[(32, "HaarHRR")] = worse[(32, "HH B=4")] = (20.0, 2.0)
    bad = {c["claim"]: c for c in checks(_rows(worse), q, [])}
    assert bad["a tree method beats flat on long ranges"]["verdict"] == "disagrees"
    assert not bad["a tree method beats flat on long ranges"]["ok"]


def test_the_crossover_is_where_the_trees_win_from_on():
    mse = {}
    for L, flat, hh, haar in ((1, 1.0, 2.0, 3.0), (4, 2.0, 1.5, 3.0), (16, 1.0, 2.0, 3.0),
                              (32, 9.0, 2.0, 1.0)):
        mse.update({(L, "flat"): (flat, 0.1), (L, "HH B=4"): (hh, 0.1),
                    (L, "HH B=4 no consistency"): (5.0, 0.1), (L, "HaarHRR"): (haar, 0.1)})
    (c,) = crossovers(_rows(mse))
    # the trees win at 4, lose at 16, win at 32: the crossover is 32, not 4
    assert c["crossover_length"] == 32 and c["flat_wins_at_length_1"]
    assert c["haar_beats_hh_lengths"] == "1/4"


@pytest.mark.slow  # the shipped quick grid (D = 2^8, 2^10, 50,000 users): 10-30 s
def test_the_shipped_quick_grid_runs_and_draws_its_figures(tmp_path):
    pytest.importorskip("matplotlib")
    printed = io.StringIO()
    report = reproduce("ranges", quick=True, out=tmp_path / "out", progress=False,
                       figures=True, file=printed)
    assert {Path(p).name for p in report.figures} >= {"ranges_mse.png", "quantiles.png",
                                                      "numeric.png"}
    assert printed.getvalue().startswith(BANNER_START)
    # at D = 2^10 the tree methods beat flat on the longest ranges (resolved in the quick run)
    rows = {(r["data"], r["D"], r["length"], r["method"]): r["mse_mean"]
            for r in report.tables["ranges"]}
    for data in ("zipf", "cauchy"):
        assert min(rows[(data, 1024, 512, m)] for m in ("HH B=4", "HaarHRR")) < \
            0.2 * rows[(data, 1024, 512, "flat")]


def test_module_grid_names_the_issue_domains():
    assert GRIDS["full"]["domains"][0] == 2**10 and GRIDS["full"]["domains"][-1] == 2**20
    assert AGE_DOMAIN == 128 and np.isclose(math.exp(GRIDS["full"]["epsilon"]), 3.0)
