"""``fastldp reproduce histograms``: the quick run writes its tables and its numbers are right."""

import csv
import io
import math

import pytest

from fastldp.experiments.histograms import reproduce


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def quick(tmp_path_factory):
    out = tmp_path_factory.mktemp("histograms-quick")
    stream = io.StringIO()
    result = reproduce(quick=True, out=out, file=stream, trials=4000)
    return out, stream.getvalue(), result


def test_quick_run_writes_tables_and_passes_its_checks(quick):
    out, printed, result = quick
    assert result.failed == 0, [c for c in result.checks if not c["ok"]]
    assert printed == result.text and "48 of 48 passed" in result.text
    names = {p.name for p in result.files}
    for name in ("calibration", "budget_curve", "constants", "relative_error", "naive_failure",
                 "drift", "monte_carlo", "checks"):
        assert f"{name}.csv" in names
        rows = _read(out / f"{name}.csv")
        assert rows, name
    assert (out / "report.txt").read_text() == result.text
    header = (out / "calibration.csv").read_text().splitlines()[0]
    assert header.startswith("r,drift,margin,sigma,mu,c,")
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        assert result.figures == []
    else:
        assert sorted(p.name for p in result.figures) == [
            "histograms_budget.png", "histograms_naive_failure.png", "histograms_relative_error.png"]
        assert all(p.stat().st_size > 10_000 for p in result.figures)


def test_quick_run_numbers(quick):
    out, _, _ = quick
    cal = _read(out / "calibration.csv")
    assert {(row["r"], row["drift"]) for row in cal} == {
        (r, d) for r in ("0.5", "0.1", "0.01") for d in ("median", "mean")}
    for row in cal:
        r = float(row["r"])
        assert row["certified"] == "True" and float(row["worst_ratio_quadrature"]) < 1
        sigma = float(row["sigma"])
        if row["drift"] == "median":  # erf(sigma / sqrt 2) = r (1 - margin)
            assert math.erf(sigma / math.sqrt(2)) == pytest.approx(r * 0.99, rel=1e-12)
        assert float(row["n2v_at_1e6"]) == pytest.approx(1 / (2 * sigma ** 2), rel=2e-6)
        assert float(row["ratio_to_lower_bound"]) > 1
    constants = {(row["name"], row["r"]): float(row["value"]) for row in _read(out / "constants.csv")}
    assert round(constants[("ratio C_upper / C_lower", "")], 3) == 2.995
    assert round(constants[("r^2 lim n^2 v(n), margin -> 0 (median drift)", "0.01")], 3) == 0.318
    assert round(constants[("r^2 n^2 v(n) from rho(), r=0.01, margin=1e-4, n=1e7", "0.01")], 3) == 0.318
    naive = {int(row["n"]): row for row in _read(out / "naive_failure.csv")}
    assert float(naive[1]["critical_order"]) == pytest.approx(4 / 3)
    assert float(naive[10]["critical_order"]) == pytest.approx(121 / 21)
    assert naive[10]["back_at_critical"] == "inf" and math.isfinite(float(naive[10]["back_just_below"]))
    rel = _read(out / "relative_error.csv")
    slg = [row for row in rel if row["mechanism"].startswith("shifted-log")]
    assert all(float(row["relative_error"]) < 0.1 for row in slg)
    big = [row for row in rel if row["x"] == "100000"]
    slg_v = next(float(row["v"]) for row in big if row["mechanism"].startswith("shifted-log"))
    assert all(slg_v < 1e-6 * float(row["v"]) for row in big if not row["mechanism"].startswith("shifted"))


def test_registered_in_the_experiment_registry():
    from fastldp.experiments.registry import get_experiment

    exp = get_experiment("histograms")
    assert exp.family == "histograms" and exp.run is reproduce
    assert "n^2 v(n)" in exp.description


def test_bad_trials_raise(tmp_path):
    with pytest.raises(ValueError, match="'trials'"):
        reproduce(quick=True, out=tmp_path, trials=1, file=io.StringIO(), figures=False)
