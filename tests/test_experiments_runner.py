"""The runner: paired streams, failures as rows, resumable table, worker independence."""

import csv
import math
import shutil

import numpy as np
import pytest

from fastldp.experiments.relations import (
    COLUMNS, cell_streams, expand_grid, read_results, run, run_cell, spec_from_dict,
)
from fastldp.experiments.relations import methods as registry
from fastldp.experiments.relations.table import HEADER

METHODS = ["JPRS-Global", "JPRS-NoProjection", "NonPrivate-TopS"]


def tiny_spec(**over):
    data = {
        "name": "tiny",
        "methods": METHODS,
        "seeds": 2,
        "fixed": {"shape": [8, 8], "s": 8, "k": 2, "budget": "H1", "eps0": 1.0},
        "grid": [{"n": [300, 600], "alpha": [0.0, 0.1]}],
    }
    data.update(over)
    return spec_from_dict(data)


def comparable(rows):
    """Rows sorted by key, without the wall clock."""
    return sorted(({k: v for k, v in r.items() if k != "runtime_s"} for r in rows),
                  key=lambda r: r["key"])


def same(a, b):
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.keys() == y.keys()
        for col in x:
            if isinstance(x[col], float) and math.isnan(x[col]):
                assert isinstance(y[col], float) and math.isnan(y[col]), col
            else:
                assert x[col] == y[col], (x["key"], col)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    out = tmp_path_factory.mktemp("reference")
    summary = run(tiny_spec(), out, progress=False)
    return summary, read_results(summary.table)


def test_one_row_per_key_with_metrics(reference):
    summary, rows = reference
    assert summary.cells == summary.cells_run == 8
    assert summary.rows_written == len(rows) == 24 and summary.failures == 0
    assert len({r["key"] for r in rows}) == 24
    for r in rows:
        assert r["failure"] == ""
        assert r["key"] == f"{r['config']}/{r['method']}/{r['seed']}"
        # the rate population's target is exactly s-sparse: both losses agree
        assert r["approx_tail"] == 0.0 and r["loss_full"] == pytest.approx(r["E_s"], abs=1e-12)
        assert 0 <= r["f1"] <= 1 and 0 <= r["precision"] <= 1
        assert 0.75 <= r["eps_min"] <= r["eps_mean"] <= r["eps_max"] <= 1.0  # H1 at eps0 = 1
        assert r["n_corrupted"] == math.floor(r["alpha"] * r["n"])
        assert r["theorem1"] is True  # eps <= 1, alpha < 1/2, p >= 2s
        assert r["runtime_scope"] == f"family:{r['family']}"
    jprs = [r for r in rows if r["family"] == "JPRS"]
    assert all(r["payload_bits"] == 1.0 for r in jprs)
    # the optimized attack gains on its own objective
    assert all(r["attack_objective"] > 0 for r in jprs if r["alpha"] > 0)
    assert all(math.isnan(r["attack_objective"]) for r in rows if r["alpha"] == 0)


def test_decoders_share_one_privatization(reference):
    _, rows = reference
    by = {(r["config"], r["seed"], r["method"]): r for r in rows}
    for (config, seed, method), r in by.items():
        if method == "JPRS-Global":
            raw = by[(config, seed, "JPRS-NoProjection")]
            assert raw["runtime_s"] == r["runtime_s"]  # the shared family clock
            assert raw["attack_objective"] == r["attack_objective"] or math.isnan(r["attack_objective"])
            assert raw["E_s"] > r["E_s"]  # the projection helps (section 7.6)


def test_clean_and_attacked_twins_share_holders_budgets_and_coins(reference):
    _, rows = reference
    clean = {(r["n"], r["seed"], r["method"]): r for r in rows if r["alpha"] == 0}
    for r in rows:
        if r["alpha"] > 0:
            twin = clean[(r["n"], r["seed"], r["method"])]
            for col in ("eps_mean", "eps_min", "eps_max", "approx_tail"):
                assert r[col] == twin[col]
            if r["method"] == "NonPrivate-TopS":  # a reference that is never attacked
                assert r["E_s"] == twin["E_s"]
    cfg = expand_grid(tiny_spec())[0].config
    a, b = cell_streams(cfg, 0), cell_streams({**cfg, "alpha": 0.1}, 0)
    for name in ("codebook", "budgets", "clients", "corruption", "attacker"):
        assert a(name).generate_state(2).tolist() == b(name).generate_state(2).tolist()
    assert a("clients", "JPRS").generate_state(2).tolist() != a("clients").generate_state(2).tolist()
    assert cell_streams(cfg, 1)("budgets").generate_state(2).tolist() != \
        a("budgets").generate_state(2).tolist()


def test_a_cell_does_not_depend_on_its_neighbours(reference):
    _, rows = reference
    cell = expand_grid(tiny_spec())[3]
    alone = run_cell(cell, methods=["JPRS-Global"])
    full = [r for r in rows if r["key"] == cell.key("JPRS-Global")]
    assert alone[0]["E_s"] == full[0]["E_s"] and alone[0]["f1"] == full[0]["f1"]


def test_resume_after_a_kill_completes_the_same_table(reference, tmp_path):
    summary, rows = reference
    lines = summary.table.read_text().splitlines(keepends=True)
    for cut in (0, 1, 5, 13):  # header only ... mid-cell; then a torn line
        out = tmp_path / f"cut{cut}"
        out.mkdir()
        torn = lines[1 + cut][: len(lines[1 + cut]) // 2]
        (out / "results.csv").write_text("".join(lines[: 1 + cut]) + torn)
        again = run(tiny_spec(), out, progress=False)
        assert again.rows_written == 24 - cut
        resumed = read_results(again.table)
        assert len(resumed) == len({r["key"] for r in resumed}) == 24
        same(comparable(resumed), comparable(rows))
    # a torn header, an empty file, and a complete table
    for text in (HEADER[:10], ""):
        out = tmp_path / f"h{len(text)}"
        out.mkdir()
        (out / "results.csv").write_text(text)
        same(comparable(read_results(run(tiny_spec(), out, progress=False).table)),
             comparable(rows))
    done = run(tiny_spec(), out, progress=False)
    assert done.rows_written == 0 and done.cells_run == 0


def test_every_line_is_a_whole_record(reference):
    summary, _ = reference
    text = summary.table.read_text()
    assert text.endswith("\n")
    records = list(csv.reader(text.splitlines()))
    assert records[0] == list(COLUMNS)
    assert all(len(r) == len(COLUMNS) for r in records)


def test_worker_count_does_not_change_results(reference, tmp_path):
    _, rows = reference
    two = run(tiny_spec(), tmp_path, workers=2, progress=False)
    assert two.rows_written == 24
    same(comparable(read_results(two.table)), comparable(rows))


@pytest.fixture
def boom_decoder():
    def boom(ctx, priv):
        raise RuntimeError("decoder exploded\non two lines")

    registry.register_decoder("JPRS", "Boom", boom)
    yield
    del registry.DECODERS["JPRS"]["Boom"]


def test_failures_are_rows_and_the_grid_goes_on(tmp_path, boom_decoder):
    # failures no check can foresee: a decoder that raises, a population whose
    # parameters only its generator refuses (s = 8 > 2 x 2 cells)
    spec = tiny_spec(
        methods=["JPRS-Global", "JPRS-Boom"],
        seeds=1,
        grid=[{"n": [300], "shape": [[8, 8], [2, 2]]}],
    )
    summary = run(spec, tmp_path, progress=False)
    rows = {(r["d1"], r["method"]): r for r in read_results(summary.table)}
    assert len(rows) == 4 and summary.failures == 3
    ok = rows[(8, "JPRS-Global")]
    assert ok["failure"] == "" and ok["E_s"] >= 0
    boom = rows[(8, "JPRS-Boom")]["failure"]
    assert "RuntimeError: decoder exploded | on two lines" in boom
    assert math.isnan(rows[(8, "JPRS-Boom")]["E_s"])
    bad = [rows[(2, m)]["failure"] for m in ("JPRS-Global", "JPRS-Boom")]
    assert len(bad) == 2 and all(b.startswith("set-up: ") and "'s' parameter" in b for b in bad)


def test_a_grid_that_cannot_run_stops_before_any_work(tmp_path):
    # each of these used to fail its rows one cell at a time; now all are named at once
    spec = tiny_spec(
        methods=["JPRS-Globl", "JPRS-Global", "P-RS-Nothing"],
        seeds=1,
        fixed={"shape": [8, 8], "s": 8, "k": 2, "budget": "H9", "eps0": 1.0,
               "attack": "optimised"},
        grid=[{"n": [300], "alpha": [0.1],
               "population": [{"kind": "rate"}, {"kind": "no-such-kind"}, {"kind": "zpf"},
                              {"kind": "gowalla"},
                              {"kind": "movielens", "path": str(tmp_path / "ml-missing")}]}],
    )
    out = tmp_path / "out"
    with pytest.raises(ValueError) as info:
        run(spec, out, progress=False)
    said = str(info.value)
    assert said.startswith("Spec 'tiny' cannot run, so nothing was run (8 problems)")
    for part in ("unknown method 'JPRS-Globl' (did you mean 'JPRS-Global'?)",
                 "unknown method 'P-RS-Nothing'",
                 "unknown population kind 'no-such-kind' (the population kinds are rate,",
                 "unknown population kind 'zpf' (did you mean 'zipf'?)",
                 "the 'gowalla' population needs a 'path'",
                 f"movielens data {str(tmp_path / 'ml-missing')!r}: not found",
                 "unknown budget profile 'H9'",
                 "unknown attack 'optimised' (did you mean 'optimized'?)"):
        assert part in said, part
    assert "JPRS-Global'" not in said.replace("'JPRS-Global'?", "")  # a known name is no problem
    assert not out.exists()  # no table, no manifest


def test_an_unknown_attack_on_clean_cells_only_is_no_problem(tmp_path):
    # clean cells (alpha = 0) never read the attack or the corruption policy
    spec = tiny_spec(methods=["JPRS-Global"], seeds=1,
                     fixed={"shape": [8, 8], "s": 8, "k": 2, "eps0": 1.0,
                            "attack": "optimised", "corruption": "smallest"},
                     grid=[{"n": [300], "alpha": [0.0]}])
    assert run(spec, tmp_path, progress=False).failures == 0



def test_retry_failures(tmp_path):
    def not_yet(ctx, priv):  # a decoder whose cause is fixed between the runs
        raise RuntimeError("not yet")

    spec = tiny_spec(methods=["JPRS-Global", "JPRS-Later"], seeds=1, grid=[{"n": [300]}])
    registry.register_decoder("JPRS", "Later", not_yet)
    try:
        first = run(spec, tmp_path, progress=False)
        assert first.failures == 1
        registry.register_decoder("JPRS", "Later", lambda ctx, priv: np.zeros(ctx.shape))
        skipped = run(spec, tmp_path, progress=False)
        assert skipped.rows_written == 0  # failed rows count as done ...
        again = run(spec, tmp_path, progress=False, retry_failures=True)  # ... unless retried
    finally:
        del registry.DECODERS["JPRS"]["Later"]
    assert again.rows_written == 1 and again.failures == 0
    rows = read_results(again.table)
    assert len(rows) == 2 and all(r["failure"] == "" for r in rows)
    later = [r for r in rows if r["method"] == "JPRS-Later"][0]
    assert later["E_s"] == pytest.approx(2**2 / 8)  # ||0 - M||^2 = s (k/s)^2 = k^2 / s


def test_other_columns_refuse_to_mix(tmp_path):
    (tmp_path / "results.csv").write_text("key,other\n")
    with pytest.raises(ValueError, match="not a fastldp relation results table"):
        run(tiny_spec(), tmp_path, progress=False)


def test_copying_a_table_keeps_it_resumable(reference, tmp_path):
    summary, rows = reference
    shutil.copy(summary.table, tmp_path / "results.csv")
    assert run(tiny_spec(), tmp_path, progress=False).rows_written == 0


@pytest.fixture
def scratch_registry():
    """Registrations made in a test vanish afterwards (the lead's stay)."""
    families = dict(registry.FAMILIES)
    decoders = {k: dict(v) for k, v in registry.DECODERS.items()}
    yield registry
    registry.FAMILIES.clear()
    registry.FAMILIES.update(families)
    registry.DECODERS.clear()
    registry.DECODERS.update(decoders)


def test_adapters_register_any_mechanism_in_one_line(tmp_path, scratch_registry):
    from fastldp.relations import PaddedRelationSampling

    reg = scratch_registry
    calls = []

    def counting(name):
        inner = reg.mechanism_decoder(name)

        def decode(ctx, priv):
            calls.append((name, "decoded" in priv.cache and bool(priv.cache["decoded"])))
            return inner(ctx, priv)

        decode.mechanism_decoder = name
        return decode

    reg.register_family("P-RS-HR", reg.mechanism_family(
        lambda ctx: PaddedRelationSampling(shape=ctx.shape, k=ctx.k, s=ctx.s, oracle="hr",
                                           codebook_seed=ctx.codebook_seed,
                                           n_threads=ctx.n_threads)))
    reg.register_decoder("P-RS-HR", "Global", reg.mechanism_decoder("global"))
    reg.register_decoder("JPRS", "Medoid", counting("medoid"))
    reg.register_decoder("JPRS", "Pooled", counting("pooled"))
    assert reg.resolve_method("P-RS-HR") == ("P-RS-HR", "Global")
    assert reg.resolve_method("P-RS-HR-Global") == ("P-RS-HR", "Global")

    spec = tiny_spec(methods=["JPRS-Global", "JPRS-Medoid", "JPRS-Pooled", "P-RS-HR"],
                     seeds=1, grid=[{"n": [400], "alpha": [0.0, 0.1]}],
                     fixed={"shape": [8, 8], "s": 8, "k": 2, "budget": "H1", "eps0": 1.0,
                            "groups": 4})
    cell = expand_grid(spec)[1]
    rows = {r["method"]: r for r in run_cell(cell)}
    assert all(r["failure"] == "" for r in rows.values()), rows
    # Global, Medoid and Pooled came from one decode call of one privatization
    assert calls == [("medoid", True), ("pooled", True)]
    assert rows["P-RS-HR"]["payload_bits"] >= 1 and rows["P-RS-HR"]["attack_objective"] > 0
    assert rows["JPRS-Medoid"]["runtime_s"] == rows["JPRS-Global"]["runtime_s"]

    # the same numbers as calling the mechanism by hand with the cell's streams
    from fastldp.relations import build_population
    from fastldp.budgets import budget_profile
    from fastldp.relations import JPRS
    from fastldp.metrics import squared_frobenius_loss

    stream = cell_streams(cell.config, cell.seed)
    pop = build_population("rate", seed=cell.seed, n=400, shape=(8, 8), s=8, k=2)
    eps = budget_profile("H1", 400, 1.0, np.random.default_rng(stream("budgets")))
    mech = JPRS(shape=(8, 8), k=2, s=8,
                codebook_seed=int(stream("codebook").generate_state(1, dtype=np.uint64)[0]))
    bits = mech.privatize(pop.relations, epsilons=eps,
                          rng=np.random.default_rng(stream("clients", "JPRS")))
    assert cell.config["alpha"] == 0.1 and rows["JPRS-Global"]["n_corrupted"] == 40
    from fastldp.relations import apply_attack, false_support, optimized_attack
    from fastldp.corruption import choose_corrupted

    bad = choose_corrupted(eps, 0.1, policy="largest")
    truth = np.flatnonzero(pop.approximation.ravel())
    fake = false_support(truth, 64, 8, rng=np.random.default_rng(stream("attacker")))
    attack = optimized_attack(mech, eps, bad, true_support=truth, false_support=fake,
                              rng=np.random.default_rng(stream("attacker", "JPRS")))
    decoded = mech.decode(apply_attack(bits, attack), eps, decoders=("global", "medoid", "pooled"),
                          n_groups=4)
    for method, name in (("JPRS-Global", "global"), ("JPRS-Medoid", "medoid"),
                         ("JPRS-Pooled", "pooled")):
        assert rows[method]["E_s"] == squared_frobenius_loss(decoded[name].matrix, pop.target)
    assert rows["JPRS-Global"]["attack_objective"] == attack.objective
