"""Every ``fastldp reproduce NAME --quick`` is honest about what it can rank (issue 37, item 4).

The experiments come from the registry (``fastldp.experiments.experiments()``),
not from a list here, so a new experiment is covered the day it registers.
A quick run either has a headline that agrees with the full run's, as
README and the docs publish it (``tests/data/reproduce_headlines.json``,
which names each source), and says so with ``Experiment.quick_ranks``; or
it prints, above its tables, the paragraph of
:func:`fastldp.experiments.quick.too_small_banner` with the differences its
own standard errors resolve. A quick run with neither fails.

Running every quick run is the slow tier (minutes); the default tier runs
the same check on two quick experiments, one of each kind, and the rule on
a toy experiment whose numbers are worked out by hand.
"""

from __future__ import annotations

import io
import json
import math
import sys
from pathlib import Path

import pytest

from fastldp.experiments import experiments, get_experiment, reproduce
from fastldp.experiments import registry
from fastldp.experiments.quick import (
    BANNER_START, resolution_of, resolutions, too_small_banner,
)
from fastldp.experiments.report import Report

HEADLINES_PATH = Path(__file__).with_name("data") / "reproduce_headlines.json"
HEADLINES = json.loads(HEADLINES_PATH.read_text())["experiments"]
MODES = list(experiments())


def _agrees(quick, full) -> bool:
    """Whether every part of the quick headline is the full run's (dicts: the quick
    run's keys are a subset of the full run's, e.g. the domain sizes of a smaller grid)."""
    if isinstance(quick, dict) and isinstance(full, dict):
        return bool(quick) and all(k in full and _agrees(v, full[k]) for k, v in quick.items())
    return quick == full


def _data_for(exp, tmp_path):
    """A data folder for an experiment that reads data files, or a skip naming what is missing."""
    if not exp.needs_data:
        return None
    if exp.name == "regression-kelmarsh":  # small files in the SCADA layout, written here
        from test_regression_experiments import _write_kelmarsh

        (tmp_path / "kelmarsh").mkdir()
        return str(_write_kelmarsh(tmp_path / "kelmarsh"))
    from test_data_real import SHARED

    if exp.name == "real-data" and SHARED is not None:
        return str(SHARED)
    pytest.skip(f"{exp.name} reads data files that are not next to this checkout")


def run_quick(name: str, tmp_path, **extra):
    """(experiment, report, printed text) of ``reproduce(name, quick=True)``."""
    exp = get_experiment(name)
    data_dir = _data_for(exp, tmp_path)
    printed = io.StringIO()
    report = reproduce(name, quick=True, out=tmp_path / "out", workers=2, data_dir=data_dir,
                       progress=False, figures=False, file=printed, **extra)
    return exp, report, printed.getvalue()


def check_quick_mode(name: str, tmp_path, **extra):
    """The rule: the full run's headline, or the paragraph above every table."""
    exp, report, text = run_quick(name, tmp_path, **extra)
    if exp.quick_ranks:
        assert BANNER_START not in text, f"{name} claims quick_ranks and prints the banner"
        assert name in HEADLINES, (f"{name} sets quick_ranks but {HEADLINES_PATH.name} records "
                                   f"no full-run headline to check it against")
        got = exp.headline(report)
        full = HEADLINES[name]["headline"]
        assert _agrees(got, full), (f"--quick {name}'s headline {got} disagrees with the full "
                                    f"run's {full} ({HEADLINES[name]['source']})")
        return exp, report, text
    # the paragraph is the first thing printed: above the run summary and every table
    first, _, rest = text.partition("\n\n")
    assert first.startswith(BANNER_START), (
        f"--quick {name} neither has its full run's headline (quick_ranks) nor says that it "
        f"is too small to rank the methods; it starts:\n{text[:400]}")
    found = (exp.resolution or resolutions)(report)
    # the figures in it are this run's own standard errors
    assert " ".join(first.split()) == too_small_banner(name, found)
    assert BANNER_START not in rest
    assert report.text.startswith(too_small_banner(name, found))
    for r in found:
        assert r.cells > 0 and r.repetitions >= 2 and 0 < r.median_percent <= r.worst_percent
    return exp, report, text


# ----------------------------------------------------------------- the default tier
def test_the_registry_discovers_every_experiment_and_each_claim_has_a_record():
    assert {"oracle-consistency", "longitudinal", "histograms", "theorem-audit"} <= set(MODES)
    for name in MODES:
        exp = get_experiment(name)
        if exp.quick_ranks:
            assert name in HEADLINES and HEADLINES[name]["source"], name
    # a record names where the full run's numbers were published
    for name, entry in HEADLINES.items():
        assert entry["source"] and entry["headline"], name


def test_quick_ranks_needs_a_headline_to_be_checked_with():
    with pytest.raises(ValueError, match="quick_ranks=True but gives no headline"):
        registry.Experiment(name="x", family="x", description="x", run=print, quick_ranks=True)


def test_resolution_is_two_standard_errors_of_a_difference_in_percent_of_the_mean():
    # sd 0.5 over 8 repetitions around 1: se 0.5 / sqrt 8, difference se sqrt 2 times that,
    # two of them: 2 sqrt(2) 0.5 / sqrt(8) = 0.5, i.e. 50% of the mean
    r = resolution_of([(1.0, 0.5, 8), (2.0, 0.2, 2), (3.0, 1.0, 1), (0.0, 1.0, 5),
                       (1.0, math.nan, 4)], "MSE")
    assert (r.metric, r.cells, r.repetitions) == ("MSE", 2, 2)
    assert r.median_percent == pytest.approx(35.0, rel=1e-12)
    assert r.worst_percent == pytest.approx(50.0, rel=1e-12)
    assert resolution_of([(1.0, 0.3, 1)], "MSE") is None  # one repetition: no standard error


def _toy_run(*, quick, out, workers, data_dir, progress, figures, file):
    summary = [{"setting": s, "method": m, "mse_mean": mean, "mse_sd": sd, "repetitions": 8,
                "runtime_s_mean": 1.0, "runtime_s_sd": 0.5}
               for s, m, mean, sd in [(1, "a", 1.0, 0.5), (1, "b", 1.1, 0.5),
                                      (2, "a", 4.0, 0.2), (2, "b", 2.0, 0.2)]]
    table = "setting method mse\n" + "\n".join(
        f"{e['setting']} {e['method']} {e['mse_mean']}" for e in summary)
    print(table, file=file)
    return Report({"summary": summary}, table)


@pytest.fixture
def toy_experiment():
    """A new experiment registered with nothing about quick runs (as a new family would)."""
    exp = registry.register_experiment(registry.Experiment(
        name="toy-quick", family="toy", description="a toy", run=_toy_run))
    yield exp
    registry._EXPERIMENTS.pop("toy-quick", None)


def test_a_new_experiment_gets_the_banner_above_its_table_with_its_own_errors(
        toy_experiment, tmp_path):
    printed = io.StringIO()
    report = reproduce("toy-quick", quick=True, out=tmp_path, file=printed, progress=False)
    text = printed.getvalue()
    first, _, rest = text.partition("\n\n")
    assert first.startswith(BANNER_START) and rest.startswith("setting method mse")
    # mse only (the runtime is not a metric); cells: 2 sqrt(2) sd / (sqrt(8) mean) =
    # sd / mean: 50%, 45%, 5%, 10%: median 27.5%, worst 50%
    assert ("mse 28% in the median cell (50% in the noisiest of 4)" in " ".join(first.split()))
    assert "runtime" not in first and report.text.startswith(BANNER_START)
    # the full run prints its table as it is
    printed = io.StringIO()
    reproduce("toy-quick", quick=False, out=tmp_path, file=printed, progress=False)
    assert printed.getvalue().startswith("setting method mse")


def _failing_run(*, quick, out, workers, data_dir, progress, figures, file):
    print("cell 1 of 2 done", file=file)
    raise RuntimeError("cell 2 failed")


def test_a_quick_run_that_fails_still_shows_what_it_printed(tmp_path):
    # the quick run's text is held back for the paragraph; a failure must not swallow it
    registry.register_experiment(registry.Experiment(
        name="toy-failing", family="toy", description="fails", run=_failing_run))
    try:
        printed = io.StringIO()
        with pytest.raises(RuntimeError, match="cell 2 failed"):
            reproduce("toy-failing", quick=True, out=tmp_path, file=printed, progress=False)
        assert printed.getvalue() == "cell 1 of 2 done\n"
    finally:
        registry._EXPERIMENTS.pop("toy-failing", None)


def test_heavy_hitters_resolution_reads_its_accuracy_table():
    from types import SimpleNamespace

    from fastldp.experiments.heavyhitters import resolution

    rows = [{"protocol": "PEM", "k": 16, "epsilon": 1.0, "precision": 0.5, "precision_sd": 0.1,
             "ncr": 0.4, "ncr_sd": 0.2, "repetitions": 2},
            {"protocol": "SFP", "k": 16, "epsilon": 1.0, "precision": 0.2, "precision_sd": 0.1,
             "ncr": 0.1, "ncr_sd": 0.2, "repetitions": 2}]
    found = resolution(SimpleNamespace(tables={"accuracy": rows}))
    # 2 sqrt(2) sd / (sqrt(2) mean) = 2 sd / mean: precision 40% and 100%, NCR 100% and 400%
    assert [r.metric for r in found] == ["precision", "NCR"]
    assert found[0].median_percent == pytest.approx(70.0) and found[0].worst_percent == \
        pytest.approx(100.0)
    assert found[1].median_percent == pytest.approx(250.0) and found[1].worst_percent == \
        pytest.approx(400.0)
    one = [dict(r, repetitions=1, precision_sd=math.nan, ncr_sd=math.nan) for r in rows]
    assert resolution(SimpleNamespace(tables={"accuracy": one})) == []


def test_no_standard_errors_says_it_resolves_nothing():
    text = too_small_banner("heavy-hitters", [])
    assert text.startswith(BANNER_START) and "cannot resolve any difference" in text


def test_quick_histograms_has_the_full_runs_headline(tmp_path):
    exp, _, text = check_quick_mode("histograms", tmp_path)
    assert exp.quick_ranks and "Checks: 48 of 48 passed." in text


def test_quick_ablation_prints_the_banner_above_its_tables(tmp_path):
    exp, report, text = check_quick_mode("ablation", tmp_path)
    assert not exp.quick_ranks
    found = exp.resolution(report)
    assert [r.metric for r in found] == ["E_s", "F1@s"] and found[0].repetitions == 2
    # above the run's first line and its first table
    assert text.index(BANNER_START) < text.index("fastldp reproduce ablation --quick") \
        < text.index("Means ± sd over repetitions")


def _without_the_peer(monkeypatch):
    # an import of multi_freq_ldpy (or its module) raises ImportError, as when not installed
    for name in [m for m in sys.modules if m.startswith("multi_freq_ldpy")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "multi_freq_ldpy", None)
    monkeypatch.setitem(sys.modules, "multi_freq_ldpy.long_freq_est", None)


# the quick grid's shape on fewer users and rounds: the same code path in about a second
TINY_LONGITUDINAL = """
[full]
seed = 7
n_users = 3000
rounds = 2
change_rate = 0.2
zipf_exponent = 1.1
repetitions = 2
domain_sizes = [4, 16]
epsilon_1 = 1.0
epsilon_inf = [2.0, 6.0]
mf_epsilon_inf = 4.0
mf_users = 300
mf_repetitions = 2
mf_domain_sizes = [4]
"""


def test_longitudinal_without_the_peer_says_so_in_one_line_and_draws_its_figure(
        tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from fastldp.experiments.longitudinal import reproduce as longitudinal
    from fastldp.experiments.longitudinal.reproduce import PEER_MISSING

    _without_the_peer(monkeypatch)
    spec = tmp_path / "spec.toml"
    spec.write_text(TINY_LONGITUDINAL)
    printed = io.StringIO()
    result = longitudinal(out=tmp_path / "out", progress=False, file=printed, spec=spec)
    text = printed.getvalue()
    assert text.count(PEER_MISSING) == 1 and PEER_MISSING in text.splitlines()
    assert "Side by side with multi-freq-ldpy" not in text
    assert not (tmp_path / "out" / "multi_freq.csv").exists() and result.failed == 0
    png = tmp_path / "out" / "figures" / "longitudinal_mse.png"
    assert png in result.figures and png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    assert png.stat().st_size > 10_000  # two panels of curves, not an empty canvas
    # its headline has the full run's form: the analytic winner per domain size
    assert get_experiment("longitudinal").headline(result) == {
        "winner by domain size": {"4": "L-GRR", "16": "L-OSUE"}}


def test_longitudinal_marks_a_simulated_winner_the_repetitions_do_not_resolve():
    from fastldp.experiments.longitudinal.reproduce import _winners

    def row(protocol, mse, se, analytic):
        return {"domain_size": 16, "epsilon_inf": 4.0, "protocol": protocol, "mse": mse,
                "mse_se": se, "analytic_mse": analytic}

    # L-OSUE is the analytic winner; L-SOUE's simulated MSE is lower by 0.05, two standard
    # errors of the difference are 2 hypot(0.1, 0.1) = 0.28: not resolved
    cell = [row("L-GRR", 3.0, 0.1, 3.0), row("L-OUE", 1.2, 0.1, 1.1),
            row("L-OSUE", 1.0, 0.1, 0.9), row("L-SUE", 1.1, 0.1, 1.0),
            row("L-SOUE", 0.95, 0.1, 0.95)]
    (w,) = _winners(cell)
    assert (w["best_analytic"], w["best_simulated"], w["simulated_resolved"]) == (
        "L-OSUE", "L-SOUE", False)
    # the same gap with standard errors 100 times smaller is resolved
    (w,) = _winners([dict(r, mse_se=r["mse_se"] / 100) for r in cell])
    assert w["simulated_resolved"] is True


# ----------------------------------------------------------------- the slow tier
@pytest.mark.slow  # a minute or two each; the default tier checks histograms and ablation
@pytest.mark.parametrize("name", MODES)
def test_every_quick_run_has_the_full_headline_or_says_it_cannot_rank(name, tmp_path):
    check_quick_mode(name, tmp_path)


@pytest.mark.slow  # the quick grid and multi-freq-ldpy's numba compiles: 10-20 s; the
# default tier's sibling runs the same code on a tiny grid without the peer
@pytest.mark.parametrize("peer", [True, False], ids=["with-peer", "without-peer"])
def test_longitudinal_quick_draws_its_figure_and_says_whether_the_peer_ran(
        peer, tmp_path, monkeypatch):
    pytest.importorskip("matplotlib")
    from fastldp.experiments.longitudinal.reproduce import PEER_MISSING

    if peer:
        pytest.importorskip("multi_freq_ldpy")
    else:
        _without_the_peer(monkeypatch)
    printed = io.StringIO()
    result = reproduce("longitudinal", quick=True, out=tmp_path, progress=False, file=printed)
    text = printed.getvalue()
    assert ("Side by side with multi-freq-ldpy" in text) is peer
    assert text.count(PEER_MISSING) == (0 if peer else 1)
    assert (tmp_path / "multi_freq.csv").exists() is peer
    png = tmp_path / "figures" / "longitudinal_mse.png"
    assert png in result.figures and png.stat().st_size > 10_000
