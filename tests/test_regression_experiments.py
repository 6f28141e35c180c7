"""The regression experiments (paper 002, section C): specs, runner, report, Kelmarsh loader."""

import csv
import math

import numpy as np
import pytest

from fastldp.experiments import registry
from fastldp.experiments.regression import (EXPERIMENTS, build_report, expand_grid,
                                            is_regression_table, load_spec, reproduce, run)
from fastldp.experiments.regression.spec import spec_from_dict_regression
from fastldp.regression import load_kelmarsh
from fastldp.regression.data import KELMARSH_TARGET

TINY = {
    "name": "tiny",
    "family": "regression",
    "methods": ["U2R", "U2R-shrink", "Sample-SDP", "LDP-IHT", "2-SLR", "Lasso"],
    "seeds": 1,
    "fixed": {"n": 300, "m": 20, "d": 16, "k": 2, "sigma": 0.1, "n_test": 50},
    "grid": [{"eps": [2.0, 8.0]}],
}


def test_shipped_specs_parse_and_are_registered():
    names = registry.experiments()
    for name, (_, needs) in EXPERIMENTS.items():
        spec = load_spec(registry.get_experiment(name).spec)
        quick = load_spec(registry.get_experiment(name).spec, quick=True)
        assert names[name].family == "regression" and names[name].needs_data == needs
        assert names[name].takes_trials
        assert len(quick.seeds) <= len(spec.seeds)
    assert load_spec(registry.get_experiment("regression-eps").spec).seeds == tuple(range(30))
    assert load_spec(registry.get_experiment("regression-d").spec).seeds == tuple(range(10))
    assert "regression" in registry.spec_families()


def test_spec_errors_name_the_problem():
    with pytest.raises(ValueError, match="unknown methods"):
        spec_from_dict_regression({**TINY, "methods": ["Nope"]})
    with pytest.raises(ValueError, match="'eps' must be"):
        spec_from_dict_regression({**TINY, "grid": [{"eps": [-1.0]}]})
    with pytest.raises(ValueError, match="unknown parameter"):
        spec_from_dict_regression({**TINY, "fixed": {"bogus": 1}})


def test_cells_on_the_same_data_are_consecutive():
    spec = spec_from_dict_regression({**TINY, "seeds": 2, "grid": [{"eps": [1.0, 2.0, 4.0]}]})
    cells = expand_grid(spec)
    assert [c.seed for c in cells] == [0, 0, 0, 1, 1, 1]


def test_tiny_spec_runs_reports_and_resumes(tmp_path):
    spec = spec_from_dict_regression(TINY)
    summary = run(spec, tmp_path, progress=False)
    assert summary.failures == 0 and summary.rows_written == 12
    assert is_regression_table(summary.table)
    report = build_report(summary.table, tmp_path / "report", figures=False)
    assert report.failed == 0
    assert "Relative coefficient error" in report.text and "U2R" in report.text
    rows = {(e["method"], e["eps"]): e for e in report.tables["summary"]}
    assert rows[("Lasso", 2.0)]["mse_ratio_mean"] == pytest.approx(1.0)
    assert all(0 <= e["recall_mean"] <= 1 for e in report.tables["summary"])
    again = run(spec, tmp_path, progress=False)
    assert again.rows_written == 0  # resumed: every row was there
    # paired: both eps use the same data, so the Lasso rows agree
    assert rows[("Lasso", 2.0)]["test_mse_mean"] == rows[("Lasso", 8.0)]["test_mse_mean"]


def test_reproduce_a_quick_experiment_into_tmp_path(tmp_path, monkeypatch):
    from fastldp.experiments import regression as R

    tiny = spec_from_dict_regression({**TINY, "methods": ["U2R", "Lasso"]}, quick=False)
    monkeypatch.setattr(R, "load_spec", lambda *a, **k: tiny)
    out = tmp_path / "eps"
    report = reproduce("regression-eps", quick=True, out=out, progress=False, figures=True,
                       file=open(tmp_path / "log.txt", "w"))
    assert report.failed == 0 and isinstance(report.text, str)
    assert (out / "results.csv") in report.files
    assert all(p.exists() for p in report.files + report.figures)


def test_kelmarsh_without_data_fails_before_running(tmp_path, monkeypatch):
    monkeypatch.delenv("FASTLDP_DATA", raising=False)
    with pytest.raises(FileNotFoundError, match="--data"):
        reproduce("regression-kelmarsh", quick=True, out=tmp_path / "k", progress=False,
                  file=open(tmp_path / "log.txt", "w"))
    with pytest.raises(FileNotFoundError, match="Kelmarsh"):
        reproduce("regression-kelmarsh", quick=True, out=tmp_path / "k", progress=False,
                  data_dir=tmp_path, file=open(tmp_path / "log.txt", "w"))
    assert not (tmp_path / "k" / "results.csv").exists()


# ---------------------------------------------------------------- Kelmarsh format
def _write_kelmarsh(folder, turbines=2, days=40, per_day=24, seed=0):
    """Small files in the Kelmarsh SCADA layout: comment lines, '# Date and time' header."""
    rng = np.random.default_rng(seed)
    cols = ["Wind speed (m/s)", "Power (kW)", "Ambient temperature (converter) (°C)",
            "Gear oil temperature (°C)", "Rotor speed (RPM)", "Constant (x)"]
    for t in range(1, turbines + 1):
        path = folder / f"Turbine_Data_Kelmarsh_{t}_2019-01-01_-_2019-02-10_{228 + t}.csv"
        with open(path, "w", newline="", encoding="utf-8") as fh:
            fh.write("# This file was exported by Greenbyte Platform\n# Turbine: Kelmarsh "
                     f"{t}\n# Time zone: UTC\n#\n")
            w = csv.writer(fh)
            w.writerow(["# Date and time"] + cols + [KELMARSH_TARGET])
            for day in range(days):
                for h in range(per_day):
                    x = rng.normal(size=5)
                    y = 20 + 2 * x[0] - x[2] + 0.5 * x[3] + 0.3 * rng.normal()
                    row = [f"2019-01-{1 + day:02d} {h:02d}:00:00" if day < 31 else
                           f"2019-02-{day - 30:02d} {h:02d}:00:00"]
                    row += [f"{v:.4f}" for v in x] + ["1.0"]
                    row += ["" if rng.random() < 0.02 else f"{y:.4f}"]
                    if rng.random() < 0.05:
                        row[2] = ""  # a missing predictor
                    w.writerow(row)
    return folder


def test_kelmarsh_loader_reads_the_scada_format(tmp_path):
    _write_kelmarsh(tmp_path)
    K = load_kelmarsh(tmp_path)
    assert len(K.files) == 2
    assert "Constant (x)" not in K.columns and len(K.columns) == 5  # constant column dropped
    for A in (K.X_train, K.X_test, K.X_public):
        assert A.shape[1] == 5 and np.isfinite(A).all()
    n = K.X_train.shape[0] + K.X_test.shape[0] + K.X_public.shape[0]
    assert 0.95 * 2 * 40 * 24 < n <= 2 * 40 * 24  # rows without a response are dropped
    assert abs(np.median(K.y_public)) < 1e-9 and math.isfinite(K.y_offset)
    # the split is by whole dates
    assert K.X_test.shape[0] % 1 == 0 and K.X_test.shape[0] > 0
    with pytest.raises(FileNotFoundError):
        load_kelmarsh(tmp_path / "missing")
    bad = tmp_path / "bad"
    bad.mkdir()
    (bad / "Turbine_Data_Kelmarsh_9_x.csv").write_text("a,b\n1,2\n")
    with pytest.raises(ValueError, match="Date and time"):
        load_kelmarsh(bad)


def test_kelmarsh_experiment_runs_on_a_small_file(tmp_path):
    _write_kelmarsh(tmp_path, days=60)
    spec = spec_from_dict_regression({
        "name": "kel", "family": "regression", "methods": ["U2R", "Sample-SDP", "Lasso"],
        "seeds": 1, "fixed": {"population": {"kind": "kelmarsh", "path": "."}, "n": 100,
                              "m": 10, "k": 2, "eps": 8.0}})
    summary = run(spec, tmp_path / "out", progress=False, data_dir=tmp_path)
    assert summary.failures == 0
    report = build_report(summary.table, tmp_path / "out" / "report", figures=False)
    assert "Test-MSE ratio" in report.text
    lasso = [e for e in report.tables["summary"] if e["method"] == "Lasso"][0]
    assert lasso["d"] == 5 and lasso["test_mse_mean"] < 1.0


def test_rows_do_not_depend_on_which_cells_ran_before(tmp_path):
    """The per-worker cache of eps-independent work never changes a row."""
    from fastldp.experiments.regression import runner

    spec = spec_from_dict_regression(dict(TINY, grid=[{"eps": [1.0, 4.0, 16.0]}], seeds=2))
    cells = expand_grid(spec)

    def rows(order):
        runner._CACHE.clear()
        out = {}
        for cell in order:
            for row in runner.run_cell(cell):
                assert not row["failure"], row["failure"]
                row.pop("runtime_s")
                out[row["key"]] = row
        return out

    forward = rows(cells)
    alone = {}
    for cell in cells[::-1]:  # each cell cold, in reverse order
        alone.update(rows([cell]))
    assert forward == alone


def test_a_repetition_is_drawn_into_the_previous_ones_array_with_fresh_values():
    """The runner draws seed 1's X over seed 0's memory (same shape), and a smaller data set
    (fewer users, then fewer features) into the same memory too; every array is bit for bit
    what a fresh draw from its data stream gives. Fails if the reuse is lost, or if drawing
    into an array changed a value."""
    from fastldp.experiments.regression import runner
    from fastldp.regression import make_sparse_regression

    cfg = expand_grid(spec_from_dict_regression(TINY))[0].config
    runner._CACHE.clear()
    first = runner.load_data(cfg, 0, runner.streams(cfg, 0))
    array = first.X
    cases = [(cfg, 1), ({**cfg, "n": 200}, 0), ({**cfg, "n": 250, "d": 9}, 2)]
    for config, seed in cases:
        data = runner.load_data(config, seed, runner.streams(config, seed))
        assert np.shares_memory(data.X, array)
        fresh = make_sparse_regression(
            n=config["n"], m=20, d=config["d"], k=2, sigma=0.1, n_test=50,
            rng=np.random.default_rng(runner.streams(config, seed)("data")))
        for field in ("X", "y", "users", "theta", "X_test", "y_test"):
            np.testing.assert_array_equal(getattr(data, field), getattr(fresh, field))
    runner._CACHE.clear()


def test_larger_data_come_first_in_the_grid():
    """The data configurations are ordered by size, largest first (the pool's tail is the
    small repetitions; a worker reuses its largest array); seeds stay consecutive."""
    spec = spec_from_dict_regression({**TINY, "seeds": 2, "grid": [{"n": [100, 300, 200]}]})
    order = [(c.config["n"], c.seed) for c in expand_grid(spec)]
    assert order == [(300, 0), (300, 1), (200, 0), (200, 1), (100, 0), (100, 1)]


def test_make_sparse_regression_out_is_checked():
    from fastldp.regression import make_sparse_regression

    with pytest.raises(TypeError, match=r"'out' parameter of make_sparse_regression must be a "
                                        r"writeable C-contiguous float64 array of shape \(40, 3\)"):
        make_sparse_regression(n=10, m=4, d=3, k=1, out=np.zeros((40, 3), dtype=np.float32))
    with pytest.raises(TypeError, match="'out' parameter"):
        make_sparse_regression(n=10, m=4, d=3, k=1, out=np.zeros((3, 40)).T)


def test_cells_run_with_one_blas_thread_give_the_rows_of_two(tmp_path):
    """run_cell limits BLAS to its n_threads: the rows (but runtime) do not depend on it."""
    from fastldp.experiments.regression import runner

    cell = expand_grid(spec_from_dict_regression(TINY))[0]
    rows = []
    for threads in (1, 2):
        runner._CACHE.clear()
        rows.append([{k: v for k, v in r.items() if k != "runtime_s"}
                     for r in runner.run_cell(cell, n_threads=threads)])
    assert rows[0] == rows[1] and not any(r["failure"] for r in rows[0])
    runner._CACHE.clear()


# ---------------------------------------------------------------- nested samples (regression-n)
NESTED = dict(TINY, seeds=2, fixed={**TINY["fixed"], "population": {"kind": "synthetic",
                                                                    "nested": True}},
              grid=[{"n": [200, 300, 250]}])


def test_nested_draws_are_prefixes_of_larger_draws():
    """With nested=True the data of n users are the first n users of a larger draw (every
    field), whatever n; the default order is unchanged (it differs from the nested one)."""
    from fastldp.regression import make_sparse_regression

    kw = dict(m=7, d=5, k=2, sigma=0.3, n_test=11)
    big = make_sparse_regression(n=40, rng=3, nested=True, **kw)
    for n in (1, 13, 39):
        small = make_sparse_regression(n=n, rng=3, nested=True, **kw)
        for field in ("X", "y", "users"):
            np.testing.assert_array_equal(getattr(small, field), getattr(big, field)[:n * 7])
        for field in ("theta", "X_test", "y_test"):
            np.testing.assert_array_equal(getattr(small, field), getattr(big, field))
    # y is x theta + sigma e, user by user
    e = (big.y - big.X @ big.theta) / 0.3
    assert abs(e.mean()) < 4 / np.sqrt(e.size) and abs(e.std() - 1) < 0.2
    joint = make_sparse_regression(n=40, rng=3, **kw)
    assert not np.array_equal(joint.X, big.X)
    out = np.empty((40 * 7, 5))
    into = make_sparse_regression(n=40, rng=3, nested=True, out=out, **kw)
    assert into.X is out and np.array_equal(out, big.X) and np.array_equal(into.y, big.y)
    with pytest.raises(TypeError, match="'nested' parameter of make_sparse_regression must be "
                                        "a bool. Got 1"):
        make_sparse_regression(n=4, m=2, d=3, k=1, nested=1)


def test_nested_population_is_checked_and_false_is_the_default():
    spec = spec_from_dict_regression(NESTED)
    assert spec.fixed["population"] == {"kind": "synthetic", "nested": True}
    plain = spec_from_dict_regression(
        dict(TINY, fixed={**TINY["fixed"], "population": {"kind": "synthetic",
                                                           "nested": False}}))
    # nested = false is dropped: the configuration ids of earlier runs hold
    assert [c.config_id for c in expand_grid(plain)] == [
        c.config_id for c in expand_grid(spec_from_dict_regression(TINY))]
    with pytest.raises(ValueError, match="'nested' is true or false, got"):
        spec_from_dict_regression(dict(TINY, fixed={**TINY["fixed"], "population": {
            "kind": "synthetic", "nested": "yes"}}))


def test_u2r_shrink_row_is_u2r_fit_shrunk_whatever_the_other_methods():
    """U2R-shrink's row is U2R(shrinkage=True) fitted with U2R's stream (the runner derives it
    from the cell's U2R fit); a cell without U2R gives the same row."""
    from fastldp.experiments.regression import runner
    from fastldp.regression import U2R

    both = spec_from_dict_regression(TINY)
    alone = spec_from_dict_regression(dict(TINY, methods=["U2R-shrink"]))
    keys = ("rel_error", "test_mse", "support_size", "delta", "stage1_exact")
    cell = expand_grid(both)[0]
    runner._CACHE.clear()
    row = {r["method"]: r for r in runner.run_cell(cell)}["U2R-shrink"]
    runner._CACHE.clear()
    (solo,) = runner.run_cell(expand_grid(alone)[0])
    assert not row["failure"] and all(row[k] == solo[k] for k in keys)
    cfg = cell.config
    data = runner.load_data(cfg, cell.seed, runner.streams(cfg, cell.seed))
    est = runner.build_estimator("U2R-shrink", cfg, data)
    assert isinstance(est, U2R) and est.shrinkage is True
    est.fit(data.X, data.y, users=data.users,
            rng=np.random.default_rng(runner.streams(cfg, cell.seed)("method", "U2R")))
    assert row["rel_error"] == float(np.linalg.norm(est.coef_ - data.theta)
                                     / np.linalg.norm(data.theta))
    runner._CACHE.clear()


def test_a_cell_leaves_no_reference_cycle_holding_its_data():
    """Once the runner's cache lets go of a repetition's data, it is freed at once, without
    the cyclic garbage collector (a self-calling closure in the runner once held every
    repetition's data and caches in a cycle: a worker grew by them every repetition)."""
    import gc
    import weakref

    from fastldp.experiments.regression import runner

    runner._CACHE.clear()
    gc.collect()
    gc.disable()
    try:
        for row in runner.run_cell(expand_grid(spec_from_dict_regression(TINY))[0]):
            assert not row["failure"], row["failure"]
        (data,) = runner._CACHE.values()
        ref = weakref.ref(data)
        del data
        runner._CACHE.clear()
        assert ref() is None
    finally:
        gc.enable()


def test_sampler_population_is_checked_and_numpy_is_the_default():
    fast = spec_from_dict_regression(dict(TINY, fixed={**TINY["fixed"], "population": {
        "kind": "synthetic", "sampler": "fastldp"}}))
    assert fast.fixed["population"] == {"kind": "synthetic", "sampler": "fastldp"}
    plain = spec_from_dict_regression(dict(TINY, fixed={**TINY["fixed"], "population": {
        "kind": "synthetic", "sampler": "numpy"}}))
    # sampler = "numpy" is dropped: the configuration ids of earlier runs hold
    ids = [c.config_id for c in expand_grid(spec_from_dict_regression(TINY))]
    assert [c.config_id for c in expand_grid(plain)] == ids
    assert not set(c.config_id for c in expand_grid(fast)) & set(ids)
    for bad in ({"kind": "synthetic", "sampler": "mkl"},
                {"kind": "kelmarsh", "path": ".", "sampler": "fastldp"}):
        with pytest.raises(ValueError, match="'sampler' is \"numpy\" or \"fastldp\", got"):
            spec_from_dict_regression(dict(TINY, fixed={**TINY["fixed"], "population": bad}))


def test_sampler_population_reaches_the_data():
    """A cell of a "fastldp" population draws its data with make_sparse_regression's
    sampler="fastldp" (the runner passes the field through)."""
    from fastldp.experiments.regression import runner
    from fastldp.regression import make_sparse_regression

    fast = spec_from_dict_regression(dict(TINY, fixed={**TINY["fixed"], "population": {
        "kind": "synthetic", "sampler": "fastldp"}}))
    for spec, sampler in ((fast, "fastldp"), (spec_from_dict_regression(TINY), "numpy")):
        cell = expand_grid(spec)[0]
        runner._CACHE.clear()
        data = runner.load_data(cell.config, cell.seed, runner.streams(cell.config, cell.seed))
        cfg = cell.config
        gen = np.random.default_rng(runner.streams(cfg, cell.seed)("data"))
        D = make_sparse_regression(n=cfg["n"], m=cfg["m"], d=cfg["d"], k=cfg["k"],
                                   sigma=cfg["sigma"], n_test=cfg["n_test"], rng=gen,
                                   sampler=sampler)
        assert np.array_equal(data.X, D.X) and np.array_equal(data.y_test, D.y_test)
    runner._CACHE.clear()


def test_nested_cells_of_a_seed_run_together_largest_first():
    from fastldp.experiments.regression import runner

    cells = expand_grid(spec_from_dict_regression(NESTED))
    assert [(c.config["n"], c.seed) for c in cells] == [
        (300, 0), (250, 0), (200, 0), (300, 1), (250, 1), (200, 1)]
    groups = [runner._data_group(c) for c in cells]
    assert groups[0] == groups[1] == groups[2] != groups[3] == groups[4] == groups[5]
    # not nested: one group per n and seed, as before
    plain = expand_grid(spec_from_dict_regression(dict(NESTED, fixed=TINY["fixed"])))
    assert len({runner._data_group(c) for c in plain}) == 6


def test_nested_rows_equal_each_cell_run_alone():
    """A worker draws a seed's largest n once and serves the smaller cells from its first
    users, sharing the users' local solutions: every row is the row of its cell run cold
    (which draws only its own n users). Fails if a prefix is not the cold draw, or if a shared
    cache leaks another cell's work into a row."""
    from fastldp.experiments.regression import runner

    cells = expand_grid(spec_from_dict_regression(NESTED))
    sizes = runner._nested_sizes(cells)
    assert set(sizes.values()) == {(300, 250, 200)}

    def rows(order):
        runner._CACHE.clear()
        out, draws = {}, []
        for cell in order:
            for row in runner._task(cell, cell.methods, 1, None, sizes):
                assert not row["failure"], row["failure"]
                row.pop("runtime_s")
                out[row["key"]] = row
            cfg = cell.config  # the cached data the cell ran on
            draws.append(runner.load_data(cfg, cell.seed, runner.streams(cfg, cell.seed)))
        return out, draws

    together, draws = rows(cells)
    assert draws[1].parent is draws[0] and draws[2].parent is draws[0]  # one draw per seed
    assert draws[1].pre._parent is draws[0].pre  # the local solutions are shared
    # the sums over rows of every n came from the first cell's one pass, and Sample-SDP used
    # them (it asked for no other radii)
    for data in draws[:3]:
        assert data.pre.gram_cached() and [k[0] for k in data.pre._sums] == ["l2"]
    assert draws[0].shared and not draws[1].shared
    alone = {}
    for cell in cells[::-1]:
        alone.update(rows([cell])[0])
    assert together == alone
    runner._CACHE.clear()


def test_first_users_shares_the_local_solutions_bit_for_bit():
    from fastldp.regression import make_sparse_regression
    from fastldp.regression.local import Precomputed

    data = make_sparse_regression(n=60, m=9, d=12, k=3, sigma=0.2, rng=5, nested=True)
    big = Precomputed(data.X, data.y, data.users, n_threads=1)
    small = big.first_users(25)
    cold = Precomputed(data.X[:225], data.y[:225], data.users[:225], n_threads=1)
    assert small.shape == (225, 12)
    who = np.array([3, 24, 0, 7])
    np.testing.assert_array_equal(small.local_lasso(who, 0.05, 6, rows_per_user=9),
                                  cold.local_lasso(who, 0.05, 6, rows_per_user=9))
    key = (0.05, 6, 9)
    assert big._lasso[key][1][who].all() and not big._lasso[key][1][30:].any()
    np.testing.assert_array_equal(small.local_least_squares(who, [1, 4]),
                                  cold.local_least_squares(who, [1, 4]))
    np.testing.assert_array_equal(small.gram(), cold.gram())
    assert small.first_users(10)._parent is big
    with pytest.raises(ValueError, match=r"'n_users' parameter of Precomputed.first_users "
                                         r"must be .*60.* Got 61"):
        big.first_users(61)
    shuffled = Precomputed(data.X, data.y, data.users[::-1].copy())
    with pytest.raises(ValueError, match="sorted by integer user id"):
        shuffled.first_users(3)


def test_a_regression_run_without_threadpoolctl_says_it_is_slow(tmp_path, monkeypatch):
    import sys

    monkeypatch.setitem(sys.modules, "threadpoolctl", None)  # import raises ImportError
    spec = spec_from_dict_regression(dict(TINY, methods=["Lasso"], grid=[{"eps": [2.0]}]))
    with pytest.warns(RuntimeWarning, match=r"threadpoolctl is not installed.*"
                                            r"fastldp\[experiments\]"):
        run(spec, tmp_path, progress=False)
