"""The frequency-oracle consistency experiment (``fastldp reproduce oracle-consistency``).

The tiny grid (:data:`TINY`) runs GRR, OLH and OUE over ``d = 64`` symbols
with ``n = 100`` reports at ``eps`` 0.5 and 4, five repetitions, every
post-processing method. Why its two statistical checks cannot fail by chance:

* **Errors fall with eps.** The raw estimate is unbiased, so its expected
  squared error per frequency is the oracle's variance over ``n``:
  ``q(1-q)/(p-q)^2 / n`` at a symbol not held. At eps = 0.5 that is 1.51
  (GRR, D = 64), 0.158 (OLH, g = 3) and 0.157 (OUE, ``4e^eps/(e^eps-1)^2``);
  at eps = 4 it is 4.1e-4, 7.6e-4 and 7.6e-4, plus at most ``1.2 / (d n)
  = 1.9e-4`` for the held symbols. The ratio is above 150 for every oracle.
  The check asks for 10, so it fails only if the eps = 0.5 mean falls below
  0.3 of its expectation or the eps = 4 mean exceeds 4.5 times its own. The
  smallest of the averages is the top-k one, over 16 items x 5 repetitions =
  80 squared errors of near-Gaussian errors (sums of 100 independent
  reports): by the chi-square Chernoff bound ``exp(-(k/2)(r - 1 - ln r))``
  the first has probability below ``exp(-40 x 0.504) < 2e-9`` and the second
  below ``exp(-40 x 2.0)``.
* **norm_sub beats raw at eps = 0.5.** norm_sub is the Euclidean projection
  onto the simplex (:func:`fastldp.oracles.postprocess.norm_sub`), and the
  truth lies in the simplex, so ``||P(x) - f||^2 <= ||x - f||^2`` for every
  estimate at every eps (checked in every row, to rounding), with equality
  only when ``x`` is already in the simplex: at eps = 0.5 each of the ~40
  symbols of true count 0 or 1 is negative with probability about 0.4, so
  all are non-negative with probability below
  ``0.6^40 < 1e-8``. Moreover two points of the simplex are at most
  ``sqrt(2)`` apart, so norm_sub's full-domain MSE is at most ``2/d =
  0.031`` in every row, against the raw expectation of at least 0.157: the
  mean ratio exceeds 0.5 only if the raw mean over 64 x 5 = 320 squared
  errors falls below 0.4 of its expectation, probability below
  ``exp(-160 x 0.316) = e^-50``.
"""

from __future__ import annotations

import csv
import gzip
import math

import numpy as np
import pytest

from fastldp import GRR
from fastldp.experiments import get_experiment
from fastldp.experiments.oracles import (
    COLUMNS, METHODS, apply_method, build_report, errors, expand_grid, find_real_data,
    load_population, load_spec, random_sets, read_oracle_results, run, spec_from_dict, spec_path,
    streams, top_items, top_k_items, with_real_data,
)
from fastldp.experiments.oracles.spec import set_size

ORACLES = ["grr", "olh", "oue"]
EPS = [0.5, 4.0]
SEEDS = 5
TINY = {
    "family": "oracles", "name": "tiny", "methods": list(METHODS), "seeds": SEEDS,
    "fixed": {"n": 100, "d": 64, "top_k": 16, "set_fraction": 0.1, "queries": 50},
    "grid": [{"oracle": ORACLES, "eps": EPS}],
}


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("tiny")
    summary = run(spec_from_dict(TINY), out, workers=1, progress=False)
    return out, summary, read_oracle_results(out / "results.csv")


def _rows(rows, **where):
    values = [r for r in rows if all(r[k] == v for k, v in where.items())]
    assert len(values) == SEEDS, where
    return values


# ------------------------------------------------------------------ registration
def test_the_experiment_is_registered_with_its_spec():
    exp = get_experiment("oracle-consistency")
    assert exp.family == "oracles" and not exp.needs_data and exp.takes_repetitions
    full = load_spec(spec_path("oracle-consistency"))
    quick = load_spec(spec_path("oracle-consistency"), quick=True)
    assert set(full.methods) <= set(METHODS), set(full.methods) - set(METHODS)
    assert {"norm_sub", "base_cut", "raw"} <= set(full.methods)
    assert len(expand_grid(quick)) < len(expand_grid(full))
    configs = {(c.config["oracle"], c.config["eps"]) for c in expand_grid(full)}
    assert {o for o, _ in configs} >= {"grr", "olh", "oue"}
    assert min(e for _, e in configs) == 0.5 and max(e for _, e in configs) == 4.0


def test_bad_parameters_are_named(tmp_path):
    with pytest.raises(ValueError, match="'oracle' must be one of"):
        spec_from_dict({**TINY, "grid": [{"oracle": ["rappor-typo"]}]})
    with pytest.raises(ValueError, match="'population' must be"):
        spec_from_dict({**TINY, "fixed": {"population": {"kind": "movielens"}}})
    with pytest.raises(ValueError, match="top_k = 80 exceeds d = 64"):
        expand_grid(spec_from_dict({**TINY, "fixed": {**TINY["fixed"], "top_k": 80}}))
    with pytest.raises(ValueError, match="unknown method 'norm_sup'"):
        run(spec_from_dict({**TINY, "methods": ["raw", "norm_sup"]}), tmp_path / "out",
            progress=False)
    assert not (tmp_path / "out").exists()   # refused before anything was written


# ------------------------------------------------------------------ metrics
def test_errors_against_a_naive_twin():
    rng = np.random.default_rng(3)
    d, size, q = 20, 5, 30
    truth = rng.dirichlet(np.ones(d))
    estimate = truth + rng.normal(0, 0.05, d)
    sets = random_sets(d, size, q, np.random.SeedSequence(1))
    assert sets.shape == (q, d) and np.all(sets.sum(axis=1) == size)
    members = [np.flatnonzero(row) for row in sets]
    top = top_k_items(truth, 4)
    got = errors(estimate, truth, sets, top)
    naive_set = sum((sum(estimate[j] for j in s) - sum(truth[j] for j in s)) ** 2
                    for s in members) / q
    naive_top = sorted(range(d), key=lambda v: (-truth[v], v))[:4]
    assert got["mse_full"] == pytest.approx(sum((estimate - truth) ** 2) / d, rel=1e-12)
    assert got["mse_set"] == pytest.approx(naive_set, rel=1e-12)
    assert list(top) == sorted(naive_top)
    assert got["mse_topk"] == pytest.approx(
        sum((estimate[v] - truth[v]) ** 2 for v in naive_top) / 4, rel=1e-12)
    assert got["negatives"] == int(np.sum(estimate < 0))
    assert not got["consistent"] and errors(truth, truth, sets, top)["consistent"]
    # ties go to the smaller item
    assert list(top_k_items(np.array([0.2, 0.3, 0.2, 0.3]), 3)) == [0, 1, 3]


def test_the_local_methods():
    grr = GRR(domain_size=8, epsilon=0.5, codebook_seed=0)
    est = grr.estimate(grr.privatize(np.arange(40) % 8, rng=1))
    raw, _ = apply_method("raw", est, grr)
    assert np.array_equal(raw, est.counts) and raw is not est.counts
    if "base_pos" in METHODS:
        pos, _ = apply_method("base_pos", est, grr)
        assert np.all(pos >= 0) and np.array_equal(pos[raw >= 0], raw[raw >= 0])
    if "norm" in METHODS:
        shifted, _ = apply_method("norm", est, grr)
        assert shifted.sum() == pytest.approx(est.n, rel=1e-12)
        assert np.allclose(np.diff(shifted - raw), 0.0)


def test_streams_pair_the_rows():
    spec = spec_from_dict(TINY)
    cells = expand_grid(spec)
    first = [c for c in cells if c.seed == 0]
    values = {c.config_id: load_population(c.config, streams(c.config, 0)).values
              for c in first}
    assert len({v.tobytes() for v in values.values()}) == 1   # every oracle and eps, one data
    other = load_population(first[0].config, streams(first[0].config, 1)).values
    assert not np.array_equal(other, next(iter(values.values())))
    grr, oue = (next(c for c in first if c.config["oracle"] == o) for o in ("grr", "oue"))
    a, b = (streams(c.config, 0) for c in (grr, oue))
    assert a("queries").generate_state(4).tolist() == b("queries").generate_state(4).tolist()
    assert a("clients").generate_state(4).tolist() != b("clients").generate_state(4).tolist()


# ------------------------------------------------------------------ the tiny grid
def test_the_table_has_every_row_and_column(tiny):
    out, summary, rows = tiny
    header = (out / "results.csv").read_text().splitlines()[0]
    assert header == ",".join(COLUMNS)
    assert summary.failed == 0 and not [r["failure"] for r in rows if r["failure"]]
    assert len(rows) == len(ORACLES) * len(EPS) * SEEDS * len(METHODS)
    assert len({r["key"] for r in rows}) == len(rows)
    for r in rows:
        assert r["n"] == 100 and r["d"] == 64 and r["set_size"] == 6 and r["top_k"] == 16
        for col in ("mse_full", "mse_set", "mse_topk", "max_error", "total"):
            assert math.isfinite(r[col]), (r["method"], col)
    # the methods of one cell share its estimate and its data
    cells: dict = {}
    for r in rows:
        cells.setdefault((r["config"], r["seed"]), set()).add((r["data_hash"], r["oracle_s"]))
    assert all(len(v) == 1 for v in cells.values())
    # the raw estimate of GRR sums to n exactly; norm_sub's output is consistent
    for r in rows:
        if r["method"] == "raw" and r["oracle"] == "grr":
            assert r["total"] == pytest.approx(1.0, abs=1e-12)
        if r["method"] in ("norm_sub", "project_simplex"):
            assert r["consistent"] and r["negatives"] == 0
    # a second run finds every row and runs nothing
    again = run(spec_from_dict(TINY), out, workers=1, progress=False)
    assert again.rows_written == 0 and again.cells_run == 0


def test_raw_errors_fall_with_eps(tiny):
    _, _, rows = tiny
    for oracle in ORACLES:
        for metric in ("mse_full", "mse_set", "mse_topk"):
            low, high = (np.mean([r[metric] for r in _rows(rows, oracle=oracle, eps=e,
                                                           method="raw")]) for e in EPS)
            assert high < low / 10, (oracle, metric, low, high)


def test_norm_sub_beats_raw_at_small_eps(tiny):
    _, _, rows = tiny
    by = {(r["config"], r["seed"], r["method"]): r for r in rows}
    for r in rows:                                  # the projection never moves away
        if r["method"] == "norm_sub":
            raw = by[(r["config"], r["seed"], "raw")]
            assert r["mse_full"] <= raw["mse_full"] * (1 + 1e-9), (r["oracle"], r["eps"])
    for oracle in ORACLES:
        ns = _rows(rows, oracle=oracle, eps=0.5, method="norm_sub")
        raw = [by[(r["config"], r["seed"], "raw")] for r in ns]
        assert all(a["mse_full"] < b["mse_full"] for a, b in zip(ns, raw)), oracle
        assert all(a["mse_full"] <= 2 / 64 for a in ns)           # both in the simplex
        ratio = np.mean([a["mse_full"] for a in ns]) / np.mean([b["mse_full"] for b in raw])
        assert ratio < 0.5, (oracle, ratio)


def test_the_report_names_the_winners(tiny, tmp_path):
    out, _, rows = tiny
    report = build_report(out / "results.csv", tmp_path / "report", figures=False)
    settings = len(ORACLES) * len(EPS)
    assert len(report.tables["winners"]) == 3 * settings
    for w in report.tables["winners"]:
        assert w["best"] and w["best_mse"] <= w["raw_mse"] * (1 + 1e-9)
    wins = report.tables["wins"]
    for metric in ("mse_full", "mse_set", "mse_topk"):
        assert max(w["wins"] for w in wins if w["metric"] == metric) <= settings
        assert {w["settings"] for w in wins if w["metric"] == metric} == {settings}
    paper = {p["metric"]: p for p in report.tables["paper"]}
    assert set(paper) == {"mse_full", "mse_set", "mse_topk"}
    full = [w for w in report.tables["winners"] if w["metric"] == "mse_full"]
    won = sum(bool({"norm_sub", "project_simplex"} & set(w["best"].split("="))) for w in full)
    assert paper["mse_full"]["won"] == won
    gains = report.tables["gains"]      # norm_sub / raw, full domain: the two checks above
    assert sorted(g["oracle"] for g in gains) == sorted(ORACLES)
    assert all(g["eps_low"] == 0.5 and g["ratio_low"] < 0.5 for g in gains)
    assert all(g["eps_high"] == 4.0 and g["ratio_high"] <= 1 + 1e-9 for g in gains)
    assert "Against the paper" in report.text and "full-domain MSE" in report.text
    assert "the gain: the paper" in report.text
    who, gain = (b for b in report.text.split("\n\n")[1:3])
    assert who.startswith("Who wins where") and len(who.splitlines()) == 3 + 3
    assert gain.startswith("norm_sub's full-domain MSE over raw's")
    assert len(gain.splitlines()) == 3 + len(ORACLES) and "eps 0.5" in gain
    # a claim whose methods did not run is left out, not reported as lost
    some = build_report([r for r in rows if r["method"] in ("raw", "norm_sub")], figures=False)
    assert {p["metric"] for p in some.tables["paper"]} == {"mse_full", "mse_set"}
    assert {p.name for p in report.files} >= {"summary.csv", "winners.csv", "wins.csv",
                                              "paper.csv", "report.txt", "report.md"}


# ------------------------------------------------------------------ real data files
def _write_real_files(root):
    ml = root / "movielens-mini"
    ml.mkdir()
    ratings = [(1, 10), (1, 20), (2, 10), (3, 30), (3, 10), (4, 20), (5, 40), (6, 30)] * 5
    with gzip.open(ml / "ratings.csv.gz", "wt", newline="") as fh:
        w = csv.writer(fh)
        w.writerow(["userId", "movieId", "rating", "timestamp"])
        for user, movie in ratings:
            w.writerow([user, movie, 4.0, 0])
    gw = root / "gowalla"
    gw.mkdir()
    lines = [f"{u}\t2010-10-19T23:55:27Z\t30.2\t-97.7\t{loc}"
             for u, loc in [(0, 7), (0, 7), (1, 9), (2, 7), (3, 5), (3, 9), (4, 5), (5, 7)]]
    (gw / "loc-gowalla_totalCheckins.txt").write_text("\n".join(lines) + "\n")
    return ratings


def test_real_files_under_data_are_found_and_read(tmp_path):
    ratings = _write_real_files(tmp_path)
    found = find_real_data(tmp_path)
    assert found == [{"kind": "movielens", "path": "movielens-mini"},
                     {"kind": "gowalla", "path": "gowalla"}]
    assert find_real_data(None) == [] and find_real_data(tmp_path / "nowhere") == []
    # movies by number of ratings: 10 (15), 20 (10), 30 (10), 40 (5): the top 3, ties to the
    # smaller id, and the ratings of movie 40 dropped
    values, d = top_items(np.array([m for _, m in ratings]), 3)
    assert d == 3 and values.shape[0] == 35
    assert np.bincount(values).tolist() == [15, 10, 10]
    cfg = {"population": {"kind": "gowalla", "path": "gowalla"}, "d": 2, "n": None}
    pop = load_population(cfg, None, tmp_path)
    # locations 7 (4 check-ins), then 5 and 9 (2 each): the tie goes to 5, 9's are dropped
    assert pop.d == 2 and pop.n == 6
    assert pop.frequencies.tolist() == pytest.approx([4 / 6, 2 / 6], rel=1e-15)


def test_the_grid_runs_on_real_files(tmp_path):
    _write_real_files(tmp_path)
    spec = spec_from_dict({**TINY, "seeds": 2, "methods": ["raw", "norm_sub"],
                           "fixed": {**TINY["fixed"], "d": 4, "top_k": 2},
                           "grid": [{"oracle": ["grr"], "eps": [1.0]}]})
    spec = with_real_data(spec, find_real_data(tmp_path))
    summary = run(spec, tmp_path / "out", progress=False, data_dir=tmp_path)
    rows = read_oracle_results(tmp_path / "out" / "results.csv")
    assert summary.failed == 0
    assert {r["population"] for r in rows} == {"zipf", "movielens", "gowalla"}
    ml = [r for r in rows if r["population"] == "movielens"]
    assert {r["n"] for r in ml} == {40} and {r["d"] for r in ml} == {4}
    assert len({r["data_hash"] for r in ml}) == 1       # the same file in every repetition


@pytest.mark.slow
def test_the_quick_command_runs(tmp_path, capsys):
    from fastldp import cli

    code = cli.main(["reproduce", "oracle-consistency", "--quick", "--repetitions", "2",
                     "--out", str(tmp_path), "--workers", "1", "--quiet", "--no-figures"])
    text = capsys.readouterr().out
    assert code == 0
    assert "Synthetic data only" in text and "Against the paper" in text
    rows = read_oracle_results(tmp_path / "results.csv")
    quick = load_spec(spec_path("oracle-consistency"), quick=True, repetitions=2)
    assert len(rows) == len(expand_grid(quick)) * len(quick.methods)
    assert {r["set_size"] for r in rows} == {set_size(expand_grid(quick)[0].config)}
