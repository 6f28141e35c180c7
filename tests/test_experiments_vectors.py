"""Paper 001, section 8 experiments: specs, the paired runner, resume, report, CLI hooks."""

import json
import math
import textwrap

import numpy as np
import pytest

from fastldp import cli
from fastldp.experiments import experiments, read_spec_file, spec_family
from fastldp.experiments import spec_path as registered_spec_path
from fastldp.experiments.relations import spec_path as relations_spec_path
from fastldp.experiments.vectors import (
    EXPERIMENTS,
    build_report,
    expand_grid,
    is_sparse_table,
    load_spec,
    read_sparse_results,
    run,
    run_cell,
    spec_path,
)
from fastldp.experiments.vectors import spec_from_dict as _spec_from_dict
from fastldp.experiments.vectors.table import COLUMNS, SparseResultsTable
from fastldp.vectors import RPC, clipping_alpha

ALL = ["RPC", "PCKV-UE", "PCKV-GRR", "PrivKVM", "Succinct", "Collision"]

def spec_from_dict_sparse(data, **kwargs):
    return _spec_from_dict({"family": "vectors", **data}, **kwargs)


TINY = {
    "name": "rpc-tiny",
    "methods": ALL,
    "seeds": 2,
    "fixed": {"n": 300, "d": 12, "m": 3, "eps": 1.0},
    "grid": [
        {"population": [{"kind": "frequency"}, {"kind": "signed"}], "eps": [0.5, 2.0]},
        {"population": [{"kind": "frequency"}, {"kind": "signed"}],
         "q_frac": [0.0, 0.1], "model": ["additive", "strong"], "attack": "untargeted"},
        {"population": {"kind": "truncated-normal", "sigma": 0.2, "beta": 0.3},
         "q_frac": [0.0, 0.1], "model": "additive", "attack": "targeted", "target": 3},
    ],
}


# ---------------------------------------------------------------- specs
@pytest.mark.parametrize("experiment", list(EXPERIMENTS))
def test_shipped_specs_load_and_expand(experiment):
    assert experiments()[experiment].family == "vectors"
    assert registered_spec_path(experiment) == spec_path(experiment)
    full = load_spec(spec_path(experiment))
    quick = load_spec(spec_path(experiment), quick=True)
    assert spec_family(read_spec_file(spec_path(experiment))) == "vectors"
    assert len(quick.seeds) < len(full.seeds)
    assert set(full.methods) >= {"RPC", "PCKV-UE", "PCKV-GRR", "PrivKVM", "Succinct", "Collision"}
    cells = expand_grid(full)
    assert len(cells) % len(full.seeds) == 0
    assert len({c.config_id for c in cells}) == len(cells) // len(full.seeds)


def test_paper_grids():
    freq = load_spec(spec_path("rpc-frequency"))
    assert len(freq.seeds) == 500  # M = 500, section 8.2
    configs = {c.config_id: c.config for c in expand_grid(freq)}.values()
    assert {(c["n"], c["d"]) for c in configs} == {(10_000, 100)}
    assert sorted({c["m"] for c in configs}) == [5, 10, 20, 50]
    assert sorted({c["eps"] for c in configs}) == [0.5, 1.0, 1.5, 2.0, 2.5]
    attack = {c.config_id: c.config for c in expand_grid(load_spec(spec_path("rpc-attack")))}
    qs = sorted({c["q_frac"] for c in attack.values()})
    assert qs[0] == 0 and qs[-1] == 0.1 and {c["eps"] for c in attack.values()} == {1.0}
    # one clean cell per population and m, shared by both models and both attacks
    clean = [c for c in attack.values() if c["q_frac"] == 0]
    assert len(clean) == 3 * 4 and all(c["model"] == "none" and c["target"] is None for c in clean)
    assert {c["model"] for c in attack.values()} == {"none", "additive", "strong"}
    mean = {c.config_id: c.config for c in expand_grid(load_spec(spec_path("rpc-mean")))}
    normal = [c for c in mean.values() if c["population"]["kind"] == "truncated-normal"]
    assert normal and all(c["population"] == {"beta": 0.3, "kind": "truncated-normal",
                                              "sigma": 0.2} for c in normal)
    real = {c.config_id: c.config for c in expand_grid(load_spec(spec_path("rpc-real")))}
    assert {c["population"]["kind"] for c in real.values()} == {
        "commerce", "clothing", "amazon", "movielens"}
    assert all(c["n"] is None and c["m"] is None for c in real.values())


@pytest.mark.parametrize("patch,match", [
    ({"fixed": {"k": 3}}, "unknown parameter 'k'"),
    ({"fixed": {"model": "weak"}}, "'model' must be one of"),
    ({"fixed": {"population": {"kind": "zipf"}}}, "'population' must be a table with 'kind'"),
    ({"fixed": {"q_frac": 1.5}}, r"'q_frac' must be a float in \[0, 1\)"),
    ({"fixed": {"eps": 0}}, r"'eps' must be a float in \(0, inf\)"),
    ({"methods": []}, "'methods' must be a non-empty list"),
    ({"report": {"headline": 1}}, r"unknown keys \['headline'\] in \[report\]"),
])
def test_spec_errors_name_the_parameter(patch, match):
    data = {**TINY, **patch}
    with pytest.raises(ValueError, match=match):
        spec_from_dict_sparse(data)


def test_m_above_d_is_rejected_and_quick_needs_a_table():
    spec = spec_from_dict_sparse({**TINY, "fixed": {"n": 10, "d": 4, "m": 5}})
    with pytest.raises(ValueError, match="m = 5 exceeds d = 4"):
        expand_grid(spec)
    with pytest.raises(ValueError, match="no \\[quick\\] table"):
        spec_from_dict_sparse(TINY, quick=True)


def test_paper_000_specs_are_not_sparse():
    assert spec_family(read_spec_file(relations_spec_path("theorem-audit"))) == "relations"
    assert spec_family(read_spec_file(relations_spec_path("real-data"))) == "relations"
    with pytest.raises(ValueError, match="'family' must be 'vectors'"):
        load_spec(relations_spec_path("theorem-audit"))


# ---------------------------------------------------------------- runs
@pytest.fixture(scope="module")
def tiny_run(tmp_path_factory):
    out = tmp_path_factory.mktemp("rpc") / "out"
    spec = spec_from_dict_sparse(TINY)
    summary = run(spec, out, progress=False)
    return spec, out, summary, read_sparse_results(out / "results.csv")


def test_tiny_run_writes_every_row(tiny_run):
    spec, out, summary, rows = tiny_run
    cells = expand_grid(spec)
    assert summary.failures == 0 and summary.rows_written == len(cells) * len(ALL)
    assert len(rows) == len({r["key"] for r in rows}) == len(cells) * len(ALL)
    assert not [r["failure"] for r in rows if r["failure"]]
    assert all(0 <= r["mae"] <= 2 and r["mae"] <= r["max_error"] for r in rows)
    assert (out / "manifest.json").is_file()
    rpc = [r for r in rows if r["method"] == "RPC"]
    assert {r["R"] for r in rpc if r["population"] != "truncated-normal"} == {2.0}
    assert {r["alpha"] for r in rpc if r["route"] == "ternary"} == {clipping_alpha(3, 2.0)}
    # section 6: direct route with beta = 0.3 when beta sqrt(ln n) < 1
    assert {r["route"] for r in rpc if r["population"] == "truncated-normal"} == {"direct"}
    assert {r["randomizer"] for r in rpc if r["eps"] == 0.5} == {"duchi"}
    assert {r["randomizer"] for r in rpc if r["eps"] == 2.0} == {"piecewise"}


def test_every_method_sees_the_same_users_in_a_trial(tiny_run):
    _, _, _, rows = tiny_run
    by_trial = {}
    for r in rows:
        by_trial.setdefault((r["population_params"], r["seed"]), set()).add(r["data_hash"])
    assert all(len(h) == 1 for h in by_trial.values())  # across methods, eps, q, models
    for pop in {r["population_params"] for r in rows}:
        hashes = {r["seed"]: r["data_hash"] for r in rows if r["population_params"] == pop}
        assert len(set(hashes.values())) == len(hashes)  # trials differ
    by_cell = {}
    for r in rows:
        if r["model"] == "additive":
            by_cell.setdefault(r["config"] + str(r["seed"]), set()).add(r["corrupted_hash"])
    assert by_cell and all(len(h) == 1 for h in by_cell.values())


def test_attacked_cells_share_the_honest_reports_of_their_clean_twin(tiny_run):
    _, _, _, rows = tiny_run
    clean = {(r["population_params"], r["eps"], r["method"], r["seed"]): r["mae"]
             for r in rows if r["q_frac"] == 0}
    attacked = [r for r in rows if r["q_frac"] > 0]
    assert attacked
    for r in attacked:
        assert r["q"] == 30 and r["attack_objective"] > 0
        assert r["mae_clean"] == clean[(r["population_params"], r["eps"], r["method"], r["seed"])]
    ue = [r for r in attacked if r["method"] == "PCKV-UE" and r["attack"] == "untargeted"]
    assert all(r["mae"] > r["mae_clean"] for r in ue)


def test_a_cell_does_not_depend_on_the_run(tiny_run):
    spec, _, _, rows = tiny_run
    cell = [c for c in expand_grid(spec) if c.config["model"] == "strong"][-1]
    again = {r["method"]: r for r in run_cell(cell, methods=("Collision", "RPC"))}
    stored = {r["method"]: r for r in rows if r["key"] in (cell.key("RPC"), cell.key("Collision"))}
    for m in ("RPC", "Collision"):
        for col in ("mae", "mae_raw", "mae_clean", "attack_objective", "data_hash"):
            assert again[m][col] == stored[m][col]


def test_resume_skips_finished_rows_and_repairs_a_torn_tail(tiny_run, tmp_path):
    spec, out, _, rows = tiny_run
    path = tmp_path / "results.csv"
    lines = (out / "results.csv").read_text().splitlines(keepends=True)
    path.write_text("".join(lines[:-6]) + lines[-6][:20])  # the last cell lost, a line torn
    summary = run(spec, tmp_path, progress=False)
    assert summary.rows_written == len(ALL) and summary.cells_run == 1
    again = read_sparse_results(path)
    assert sorted(r["key"] for r in again) == sorted(r["key"] for r in rows)
    assert run(spec, tmp_path, progress=False).rows_written == 0


def test_a_run_that_cannot_succeed_stops_before_any_cell(tmp_path):
    # an unknown method and a missing data folder are both named at once, and nothing is
    # written (the run used to write a failure row per cell and exit 1 at the end)
    spec = spec_from_dict_sparse({
        "name": "rpc-fail", "methods": ["RPC", "Nope"], "seeds": 1,
        "grid": [{"population": {"kind": "commerce", "path": str(tmp_path / "missing")}}]})
    with pytest.raises(ValueError) as info:
        run(spec, tmp_path / "out", progress=False)
    message = str(info.value)
    assert "unknown method 'Nope'" in message
    assert "commerce data" in message and "not found" in message
    assert not (tmp_path / "out" / "results.csv").exists()
    # a single cell still turns a failure into a row (the runner's retry path)
    cell = expand_grid(spec_from_dict_sparse({**TINY, "methods": ["Nope"], "seeds": 1}))[0]
    assert "Unknown method 'Nope'" in run_cell(cell)[0]["failure"]


def test_rpc_error_matches_its_exact_variance():
    # Duchi: Y_i^2 = R^2 C^2 always, so Var(alpha Y_i S_i(j)) = alpha^2 R^2 C^2 - x_ij^2
    spec = spec_from_dict_sparse({
        "name": "rpc-var", "methods": ["RPC-Duchi"], "seeds": 3,
        "fixed": {"n": 4000, "d": 50, "m": 4, "eps": 1.0, "clip": False}})
    rows = [r for c in expand_grid(spec) for r in run_cell(c)]
    e = math.e
    C = (e + 1) / (e - 1)
    alpha = clipping_alpha(4, 2.0)
    mu = 4 / 50
    sd = math.sqrt((alpha**2 * 4 * C**2 - mu) / 4000)
    expect = math.sqrt(2 / math.pi) * sd  # E|N(0, sd^2)|
    got = np.mean([r["mae_raw"] for r in rows])
    # 150 coordinates: the mean of |N| has relative sd sqrt(pi/2 - 1) / sqrt(150) = 6.2%
    assert abs(got / expect - 1) < 4 * 0.062
    assert all(r["mae"] == r["mae_raw"] for r in rows)  # clip = false


# ---------------------------------------------------------------- report
def test_report_tables_and_pivots(tiny_run, tmp_path):
    spec, out, _, rows = tiny_run
    report = build_report(out / "results.csv", tmp_path / "report", figures=False)
    summary = report.tables["summary"]
    assert len(summary) == len({(r["config"], r["method"]) for r in rows})
    one = summary[0]
    vals = [r["mae"] for r in rows if r["config"] == one["config"] and r["method"] == one["method"]]
    assert one["mae_mean"] == pytest.approx(np.mean(vals))
    assert one["mae_sd"] == pytest.approx(np.std(vals, ddof=1))
    diff = [d for d in report.tables["differences"] if d["method"] == "Collision"][0]
    ref = {r["seed"]: r["mae"] for r in rows if r["config"] == diff["config"] and r["method"] == "RPC"}
    col = [r["mae"] - ref[r["seed"]] for r in rows
           if r["config"] == diff["config"] and r["method"] == "Collision"]
    assert diff["difference"] == pytest.approx(np.mean(col))
    inc = report.tables["increments"]
    assert inc and all(i["pairs"] == 2 for i in inc)
    text = (tmp_path / "report" / "report.txt").read_text()
    assert "MAE, no attack: frequency, m=3" in text
    assert "MAE under attack: signed, m=3, eps=1.000, strong model, untargeted" in text
    assert "targeted |T|=3" in text
    md = (tmp_path / "report" / "report.md").read_text()
    assert "| eps | RPC | PCKV-UE | PCKV-GRR | PrivKVM | Succinct | Collision |" in md
    for name in ("summary", "differences", "increments"):
        assert (tmp_path / "report" / f"{name}.csv").is_file()
    assert not (tmp_path / "report" / "failures.csv").exists()  # no failures: no empty file


def test_figures_when_matplotlib_is_installed(tiny_run, tmp_path):
    pytest.importorskip("matplotlib")
    _, out, _, _ = tiny_run
    report = build_report(out / "results.csv", tmp_path, figure_methods=["RPC", "Collision"])
    names = {p.name for p in report.figures}
    assert {"mae_vs_eps_frequency.png", "mae_vs_eps_frequency.pdf",
            "mae_vs_q_signed_strong_untargeted.png",
            "mae_vs_q_truncated_normal_beta_0_3_sigma_0_2_additive_targeted.pdf"} <= names


# ---------------------------------------------------------------- CLI
def test_cli_run_report_and_reproduce_hooks(tmp_path, capsys):
    spec = tmp_path / "tiny.toml"
    spec.write_text(textwrap.dedent("""
        family = "vectors"
        name = "rpc-cli"
        methods = ["RPC", "Collision"]
        seeds = 2
        [fixed]
        n = 200
        d = 8
        m = 2
        [[grid]]
        eps = [1.0, 2.0]
    """))
    out = tmp_path / "out"
    assert cli.main(["run", str(spec), "--out", str(out), "--no-progress", "--workers", "1"]) == 0
    assert "8 rows written" in capsys.readouterr().out
    assert is_sparse_table(out / "results.csv")
    assert set(read_sparse_results(out / "results.csv")[0]) == set(COLUMNS)
    assert cli.main(["report", str(out / "results.csv"), "--no-figures"]) == 0
    assert "MAE, no attack: frequency, m=2" in capsys.readouterr().out
    assert cli.main(["run", str(spec), "--out", str(out), "--parquet"]) == 2
    assert "--parquet is not available" in capsys.readouterr().err
    assert cli.main(["reproduce", "theorem-audit", "--repetitions", "3"]) == 2
    assert ("'repetitions' parameter of reproduce does not apply to 'theorem-audit'"
            in capsys.readouterr().err)
    manifest = json.loads((out / "manifest.json").read_text())
    assert manifest["spec"] == "rpc-cli" and manifest["seeds"] == [0, 1]


def test_rpc_minvar_uses_the_variance_optimal_threshold_and_matches_its_exact_variance():
    from fastldp.experiments.vectors.methods import METHODS, Population, build_method
    from fastldp.vectors.datasets import frequency_vectors, truncated_normal_vectors

    assert METHODS["RPC-minvar"][0] == "RPC"  # shares the clients' coins with RPC
    x = frequency_vectors(n=500, d=20, m=5, rng=0)
    pop = Population(x, "frequency", "frequency", 5)
    mech, info = build_method("RPC-minvar", pop, eps=0.5, clip=True, codebook_seed=1)
    assert (info["randomizer"], info["route"], info["R"]) == ("duchi", "ternary", 1.0)
    assert info["alpha"] == clipping_alpha(5, 1) and mech.R_rule == "min-variance"
    paper, pinfo = build_method("RPC", pop, eps=0.5, clip=True, codebook_seed=1)
    assert pinfo["R"] == 3.0
    assert np.all(mech.variance(x.mean(), 500) < paper.variance(x.mean(), 500))
    # general values: the rounded route, where the exact variance is known
    g = Population(truncated_normal_vectors(n=500, d=20, m=5, sigma=0.2, rng=0),
                   "truncated-normal", "general", 5, 0.3)
    assert build_method("RPC", g, eps=1.0, clip=True, codebook_seed=1)[1]["route"] == "direct"
    assert build_method("RPC-minvar", g, eps=1.0, clip=True, codebook_seed=1)[1]["route"] == "rounded"

    spec = spec_from_dict_sparse({
        "name": "rpc-minvar", "methods": ["RPC", "RPC-minvar"], "seeds": 3,
        "fixed": {"n": 4000, "d": 50, "m": 4, "eps": 1.0, "clip": False}})
    rows = [r for c in expand_grid(spec) for r in run_cell(c)]
    got = {m: np.mean([r["mae_raw"] for r in rows if r["method"] == m]) for m in ("RPC", "RPC-minvar")}
    for method, R in (("RPC", 2.0), ("RPC-minvar", 1.0)):
        assert {r["R"] for r in rows if r["method"] == method} == {R}
        mech = RPC(d=50, m=4, epsilon=1.0, R=R)
        expect = math.sqrt(2 / math.pi) * math.sqrt(mech.variance(4 / 50, 4000))
        # 150 coordinates: relative sd of the mean of |N| is 6.2%
        assert abs(got[method] / expect - 1) < 4 * 0.062
