"""Statistics from a results table: checked against hand-computed values."""

import json
import math
import sys

import pytest

from fastldp.experiments.relations import build_report
from fastldp.experiments.relations.report import (
    ablation_ratios,
    attack_increments,
    holm,
    method_differences,
    paired_interval,
    regime_table,
    scenario_tests,
    slope_fits,
    summarize,
)
from fastldp.experiments.relations.table import COLUMNS

T_975_DF3 = 3.182446305284263  # Student t quantile, 0.975, 3 degrees of freedom (tables)


def t3_two_sided_p(t):
    """Closed-form two-sided p-value of Student's t with 3 degrees of freedom."""
    x = abs(t) / math.sqrt(3)
    cdf = 0.5 + (x / (1 + x * x) + math.atan(x)) / math.pi
    return 2 * (1 - cdf)


def row(**kw):
    base = {name: None for name in COLUMNS}
    base.update(population="rate", population_params='{"kind":"rate"}', n=1000, d1=8, d2=8,
                s=8, k=2, budget="H0", eps0=1.0, alpha=0.0, corruption="largest",
                attack="optimized", groups=16, failure="", E_s=1.0, loss_full=1.0,
                precision=0.5, recall=0.5, f1=0.5, runtime_s=0.1)
    base.update(kw)
    cfg = {f: base[f] for f in ("population_params", "n", "s", "k", "budget", "eps0", "alpha")}
    base.setdefault("config", None)
    base["config"] = base["config"] or json.dumps(cfg, sort_keys=True)
    base["key"] = f"{base['config']}/{base['method']}/{base['seed']}"
    return base


def test_paired_interval_by_hand():
    d = [1.0, 2.0, 3.0, 4.0]
    s = paired_interval(d)
    sd = math.sqrt(5 / 3)
    half = T_975_DF3 * sd / 2
    assert s["n"] == 4 and s["mean"] == 2.5
    assert s["sd"] == pytest.approx(sd, rel=1e-12)
    assert (s["lo"], s["hi"]) == (pytest.approx(2.5 - half, rel=1e-9), pytest.approx(2.5 + half, rel=1e-9))
    t = 2.5 / (sd / 2)
    assert s["t"] == pytest.approx(t, rel=1e-12)
    assert s["p"] == pytest.approx(t3_two_sided_p(t), rel=1e-9)
    one = paired_interval([0.3])
    assert one["mean"] == 0.3 and math.isnan(one["lo"]) and math.isnan(one["p"])


def test_holm_by_hand():
    p = [0.01, 0.04, 0.03, 0.005]
    # sorted 0.005, 0.01, 0.03, 0.04 -> 4*0.005, 3*0.01, 2*0.03, max(1*0.04, 0.06)
    assert holm(p) == pytest.approx([0.03, 0.06, 0.06, 0.02])
    assert holm([0.5, 0.6]) == pytest.approx([1.0, 1.0])
    out = holm([0.01, float("nan"), 0.02])
    assert out[0] == pytest.approx(0.02) and math.isnan(out[1]) and out[2] == pytest.approx(0.02)


def test_holm_fallback_matches(monkeypatch):
    monkeypatch.setitem(sys.modules, "statsmodels", None)
    monkeypatch.setitem(sys.modules, "statsmodels.stats.multitest", None)
    assert holm([0.01, 0.04, 0.03, 0.005]) == pytest.approx([0.03, 0.06, 0.06, 0.02])


def paired_table():
    """Four seeds; attacked = clean + (1, 2, 3, 4) for A, + 0.5 for B."""
    rows = []
    for seed in range(4):
        for method, clean, bump in (("A", 1.0 + seed, 1.0 + seed), ("B", 2.0, 0.5)):
            rows.append(row(method=method, seed=seed, alpha=0.0, E_s=clean))
            rows.append(row(method=method, seed=seed, alpha=0.1, E_s=clean + bump))
    rows.append(row(method="A", seed=9, alpha=0.1, E_s=50.0, failure="boom"))  # ignored
    return rows


def test_summary_and_attack_increments():
    rows = paired_table()
    summary = {(r["alpha"], r["method"]): r for r in summarize(rows)}
    a0 = summary[(0.0, "A")]
    assert a0["repetitions"] == 4 and a0["failed"] == 0
    assert a0["E_s_mean"] == 2.5 and a0["E_s_sd"] == pytest.approx(math.sqrt(5 / 3))
    assert summary[(0.1, "A")]["failed"] == 1
    inc = {r["method"]: r for r in attack_increments(rows)}
    a = inc["A"]
    half = T_975_DF3 * math.sqrt(5 / 3) / 2
    assert a["pairs"] == 4 and a["delta"] == 2.5
    assert a["delta_lo"] == pytest.approx(2.5 - half) and a["delta_hi"] == pytest.approx(2.5 + half)
    assert a["clean_mean"] == 2.5 and a["attacked_mean"] == 5.0
    b = inc["B"]
    assert b["delta"] == 0.5 and b["delta_sd"] == 0.0 and b["delta_lo"] == b["delta_hi"] == 0.5


def test_method_differences():
    rows = [r for r in paired_table() if r["alpha"] == 0.0]
    diff = method_differences(rows, reference="A")
    assert len(diff) == 1 and diff[0]["method"] == "B"
    # B - A = 2 - (1, 2, 3, 4) = (1, 0, -1, -2)
    assert diff[0]["difference"] == -0.5 and diff[0]["pairs"] == 4
    assert diff[0]["sd"] == pytest.approx(math.sqrt(5 / 3))


def test_scenario_tests_with_holm():
    # three scenarios, two seeds each; scenario means of R: 1, 2, 3
    means = {"R": [1.0, 2.0, 3.0], "X": [2.0, 4.0, 5.0], "Y": [1.5, 2.5, 3.2]}
    rows = []
    for j, scen in enumerate(("flat", "zipf", "community")):
        for method, m in means.items():
            for seed, jitter in ((0, -0.1), (1, 0.1)):
                rows.append(row(method=method, seed=seed, population=scen,
                                population_params=json.dumps({"kind": scen}), E_s=m[j] + jitter))
    tests = {r["method"]: r for r in scenario_tests(rows, reference="R")}
    x, y = tests["X"], tests["Y"]
    assert x["scenarios"] == 3 and x["reference_first"] == 3 and x["scenarios_total"] == 3
    # X - R = (1, 2, 2): mean 5/3, sd sqrt(1/3), t = 5; Y - R = (0.5, 0.5, 0.2): mean 0.4,
    # sd sqrt(0.03), t = 4
    tx, ty = 5.0, 4.0
    assert x["t"] == pytest.approx(tx) and y["t"] == pytest.approx(ty)
    assert x["difference"] == pytest.approx(5 / 3) and y["difference"] == pytest.approx(0.4)
    # df = 2: two-sided p = 1 - |t| / sqrt(t^2 + 2)
    px, py = (1 - abs(t) / math.sqrt(t * t + 2) for t in (tx, ty))
    assert x["p"] == pytest.approx(px) and y["p"] == pytest.approx(py)
    assert px < py
    assert x["p_holm"] == pytest.approx(2 * px)
    assert y["p_holm"] == pytest.approx(max(2 * px, py))


def test_slope_fit_on_an_exact_power_law():
    rows = [row(method="A", seed=seed, n=n, E_s=3.0 * n ** -0.75)
            for n in (16000, 32000, 64000, 128000, 256000) for seed in range(2)]
    fit = slope_fits(rows)[0]
    assert fit["points"] == 5 and fit["n_min"] == 16000 and fit["n_max"] == 256000
    assert fit["slope"] == pytest.approx(-0.75, abs=1e-12)
    assert fit["intercept"] == pytest.approx(math.log(3.0), abs=1e-9)
    assert fit["r2"] == pytest.approx(1.0, abs=1e-12)
    assert slope_fits(rows, min_n=32000)[0]["points"] == 4
    assert slope_fits(rows, min_n=128000) == []  # two points are not a fit


def test_ablation_ratio():
    rows = []
    for seed, (raw, full) in enumerate(((30.0, 1.0), (50.0, 1.0))):
        rows.append(row(method="JPRS-NoProjection", seed=seed, E_s=raw))
        rows.append(row(method="JPRS-Global", seed=seed, E_s=full))
    (r,) = ablation_ratios(rows)
    assert r["ratio"] == 40.0 and r["seed_ratio_min"] == 30.0 and r["seed_ratio_max"] == 50.0


def test_regime_table():
    rows = [row(method=m, seed=s, theorem1=s == 0, theorem4=True, corollary2=False,
                I_eff=10.0 + s, L_eff=1.0, rho_ind=0.5, lower_bound=0.1, upper_bound=1.0,
                eps_min=1.0, eps_max=1.0, regime_notes="")
            for m in ("A", "B") for s in (0, 1)]
    (audit,) = regime_table(rows)
    assert audit["repetitions"] == 2 and audit["theorem1"] == "some"
    assert audit["theorem4"] == "yes" and audit["corollary2"] == "no"
    assert audit["I_eff"] == 10.5


def test_build_report_writes_tables(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    rows = paired_table()
    messages = tmp_path / "log.txt"
    with open(messages, "w") as log:
        rep = build_report(rows, tmp_path / "rep", reference="A", log=log)
    assert "matplotlib is not installed" in messages.read_text() and rep.figures == []
    names = {p.name for p in rep.files}
    assert {"summary.csv", "attack_increments.csv", "report.txt", "failures.csv"} <= names
    assert "Paired attack increments" in rep.text and "2.500 [" in rep.text
    assert "boom" in (tmp_path / "rep" / "failures.csv").read_text()


def test_figures_when_matplotlib_is_there(tmp_path):
    pytest.importorskip("matplotlib")
    rows = [row(method=m, seed=seed, n=n, alpha=a, eps0=e,
                E_s=(2.0 if m == "A" else 3.0) * n ** -0.5 + a)
            for m in ("A", "B") for seed in range(2) for n in (1000, 4000)
            for a in (0.0, 0.1) for e in (0.5, 1.0)]
    rep = build_report(rows, tmp_path, reference="A")
    names = {p.name for p in rep.figures}
    assert {"scaling.png", "scaling.pdf", "attack_increments.png", "privacy_sweep.png"} <= names
    assert all(p.stat().st_size > 0 for p in rep.figures)


def test_empty_tables_are_not_written_as_one_byte_files(tmp_path):
    from fastldp.experiments.report import write_report_files

    (tmp_path / "ablation.csv").write_text("\n")  # a stale one-byte file of an older report
    files = write_report_files(tmp_path, {"summary": [{"a": 1}], "ablation": [], "failures": []},
                               {"report.txt": "text"})
    assert sorted(p.name for p in files) == ["report.txt", "summary.csv"]
    assert not (tmp_path / "ablation.csv").exists() and not (tmp_path / "failures.csv").exists()
    assert (tmp_path / "summary.csv").read_text() == "a\n1\n"
