"""The relation report (paper 000, section 7) from a results table alone: summaries, paired differences, tests, slopes, audit.

Every function takes the rows of :func:`fastldp.experiments.read_results`
(dicts keyed by :data:`fastldp.experiments.table.COLUMNS`) and returns a
list of flat dicts, one per output-table row, so each result can be written
as CSV and printed. Failed rows (non-empty ``failure``) are left out of
every statistic and counted by :func:`failure_summary`.

Conventions follow paper 000, section 7.1: a configuration is the content
of the ``config`` column; seeds are paired across methods and across the
clean/attacked twins of a configuration; scenario-level tests first average
the seeds within a scenario and then treat scenario means as the units.

References
----------
.. [1] Paper 000, section 7 (Tables 4-8, Figures 3-6).
.. [2] S. Holm, "A simple sequentially rejective multiple test procedure",
   Scand. J. Statist. 6 (1979) 65-70.
"""

from __future__ import annotations

import math
import warnings
from pathlib import Path

import numpy as np

from ..report import (
    Report,
    _fmt,
    _group,
    _mean_sd,
    _ok,
    _repetitions,
    _short,
    failure_summary,
    format_table,
    holm,
    paired_interval,
    write_report_files,
)
from ._labels import scenario_label
from .figures import make_figures
from .table import read_results

__all__ = [
    "CONFIG_FIELDS",
    "paired_interval",
    "holm",
    "summarize",
    "attack_increments",
    "method_differences",
    "scenario_tests",
    "slope_fits",
    "ablation_ratios",
    "regime_table",
    "failure_summary",
    "scenario_label",
    "format_table",
    "build_report",
    "Report",
]

#: The columns that define a configuration (``config`` is their hash).
CONFIG_FIELDS = ("population", "population_params", "n", "d1", "d2", "s", "k", "budget",
                 "eps0", "alpha", "corruption", "attack", "groups")
_METRICS = ("E_s", "loss_full", "precision", "recall", "f1", "runtime_s")


# ---------------------------------------------------------------- statistics


# ---------------------------------------------------------------- grouping


def _fields(row, exclude=()) -> tuple:
    return tuple(row[f] for f in CONFIG_FIELDS if f not in exclude)


def _named(key: tuple, exclude=()) -> dict:
    return dict(zip([f for f in CONFIG_FIELDS if f not in exclude], key))


def _sort_key(row: dict):
    return tuple((0, v) if isinstance(v, (int, float)) and not isinstance(v, bool) else (1, str(v))
                 for v in (row.get("population"), row.get("population_params"), row.get("budget"),
                           row.get("eps0"), row.get("n"), row.get("alpha"), row.get("method")))


def summarize(rows, metrics=_METRICS) -> list[dict]:
    """Mean and sd over seeds of each metric, per (configuration, method)."""
    out = []
    for (config, method), group in _group(rows, lambda r: (r["config"], r["method"])).items():
        good = _ok(group)
        entry = {"config": config, **_named(_fields(group[0])), "method": method,
                 "repetitions": len(good), "failed": len(group) - len(good)}
        for m in metrics:
            entry[f"{m}_mean"], entry[f"{m}_sd"] = _mean_sd([r[m] for r in good])
        out.append(entry)
    return sorted(out, key=_sort_key)


def attack_increments(rows, metric: str = "E_s", level: float = 0.95) -> list[dict]:
    """Attacked minus clean ``metric`` per seed, for every attacked configuration and method.

    The clean twin has the same configuration with ``alpha = 0`` and the same
    method and seed; the mean, sd and t interval are over the paired seeds.
    """
    good = _ok(rows)
    clean = {(_fields(r, ("alpha",)), r["method"], r["seed"]): r for r in good if r["alpha"] == 0}
    groups = _group([r for r in good if r["alpha"] > 0],
                    lambda r: (_fields(r, ("alpha",)), r["alpha"], r["method"]))
    out = []
    for (fields, alpha, method), attacked in groups.items():
        pairs = [(clean[(fields, method, r["seed"])], r) for r in attacked
                 if (fields, method, r["seed"]) in clean]
        if not pairs:
            continue
        c = [p[0][metric] for p in pairs]
        a = [p[1][metric] for p in pairs]
        stats_ = paired_interval(np.subtract(a, c), level)
        entry = {**_named(fields, ("alpha",)), "alpha": alpha, "method": method,
                 "pairs": stats_["n"]}
        entry["clean_mean"], entry["clean_sd"] = _mean_sd(c)
        entry["attacked_mean"], entry["attacked_sd"] = _mean_sd(a)
        entry.update(delta=stats_["mean"], delta_sd=stats_["sd"], delta_lo=stats_["lo"],
                     delta_hi=stats_["hi"], p=stats_["p"])
        entry["f1_clean_mean"], entry["f1_clean_sd"] = _mean_sd([p[0]["f1"] for p in pairs])
        entry["f1_attacked_mean"], _ = _mean_sd([p[1]["f1"] for p in pairs])
        entry["runtime_mean"], _ = _mean_sd([p[1]["runtime_s"] for p in pairs])
        out.append(entry)
    return sorted(out, key=_sort_key)


def method_differences(rows, reference: str = "JPRS-Global", metric: str = "E_s",
                       level: float = 0.95) -> list[dict]:
    """``metric`` of each method minus the reference's, paired over seeds, per configuration."""
    good = _ok(rows)
    ref = {(r["config"], r["seed"]): r[metric] for r in good if r["method"] == reference}
    out = []
    groups = _group([r for r in good if r["method"] != reference],
                    lambda r: (r["config"], r["method"]))
    for (config, method), group in groups.items():
        diffs = [r[metric] - ref[(config, r["seed"])] for r in group if (config, r["seed"]) in ref]
        if not diffs:
            continue
        s = paired_interval(diffs, level)
        out.append({"config": config, **_named(_fields(group[0])), "method": method,
                    "reference": reference, "pairs": s["n"], "difference": s["mean"],
                    "sd": s["sd"], "lo": s["lo"], "hi": s["hi"], "p": s["p"]})
    return sorted(out, key=_sort_key)


def _scenario(row) -> str:
    return row["population_params"]


def scenario_tests(rows, reference: str = "JPRS-Global", metric: str = "E_s",
                   level: float = 0.95) -> list[dict]:
    """Paired tests of each method against ``reference`` over scenario means.

    Within each operating point (the configuration fields other than the
    population), the seeds of each scenario (population) are averaged first;
    the scenario means are then the paired units of ``scipy.stats.ttest_rel``.
    The p-values of one operating point are Holm-adjusted together.
    ``reference_first`` counts the scenarios where the reference has the
    smallest mean ``metric`` of all methods shown.
    """
    from scipy import stats

    good = _ok(rows)
    ops = _group(good, lambda r: _fields(r, ("population", "population_params")))
    out = []
    for op, group in ops.items():
        means: dict = {}
        for (scen, method), g in _group(group, lambda r: (_scenario(r), r["method"])).items():
            means.setdefault(method, {})[scen] = float(np.mean([r[metric] for r in g]))
        if reference not in means:
            continue
        scenarios = sorted(means[reference])
        if len(scenarios) < 2:
            continue
        first = sum(
            1 for sc in scenarios
            if all(means[reference][sc] <= means[m].get(sc, math.inf) for m in means)
        )
        block = []
        for method in sorted(means):
            if method == reference:
                continue
            common = [sc for sc in scenarios if sc in means[method]]
            if len(common) < 2:
                continue
            x = np.array([means[method][sc] for sc in common])
            y = np.array([means[reference][sc] for sc in common])
            s = paired_interval(x - y, level)
            with warnings.catch_warnings():
                warnings.simplefilter("ignore", RuntimeWarning)
                test = stats.ttest_rel(x, y)
            block.append({**_named(op, ("population", "population_params")), "method": method,
                          "reference": reference, "scenarios": len(common),
                          "method_mean": float(x.mean()), "reference_mean": float(y.mean()),
                          "difference": s["mean"], "lo": s["lo"], "hi": s["hi"],
                          "t": float(test.statistic), "p": float(test.pvalue),
                          "reference_first": first, "scenarios_total": len(scenarios)})
        for entry, adj in zip(block, holm([b["p"] for b in block])):
            entry["p_holm"] = float(adj)
        out.extend(block)
    return sorted(out, key=_sort_key)


def slope_fits(rows, metric: str = "E_s", min_n: int | None = None,
               min_points: int = 3) -> list[dict]:
    """Least-squares slope of ``log(mean metric)`` on ``log n`` per configuration family and method.

    Points are the seed means at each ``n`` (``n >= min_n`` when given); a
    fit needs ``min_points`` distinct ``n``. Uses ``scipy.stats.linregress``
    and reports ``r2 = rvalue**2``.
    """
    from scipy import stats

    good = [r for r in _ok(rows) if r[metric] > 0 and (min_n is None or r["n"] >= min_n)]
    out = []
    for (fields, method), group in _group(good, lambda r: (_fields(r, ("n",)), r["method"])).items():
        by_n = _group(group, lambda r: r["n"])
        if len(by_n) < min_points:
            continue
        ns = np.array(sorted(by_n), dtype=np.float64)
        ys = np.array([np.mean([r[metric] for r in by_n[n]]) for n in sorted(by_n)])
        fit = stats.linregress(np.log(ns), np.log(ys))
        out.append({**_named(fields, ("n",)), "method": method, "metric": metric,
                    "points": len(ns), "n_min": int(ns[0]), "n_max": int(ns[-1]),
                    "slope": float(fit.slope), "intercept": float(fit.intercept),
                    "r2": float(fit.rvalue ** 2), "slope_se": float(fit.stderr)})
    return sorted(out, key=_sort_key)


def ablation_ratios(rows, ablated: str = "JPRS-NoProjection", full: str = "JPRS-Global",
                    metric: str = "E_s") -> list[dict]:
    """Loss inflation of an ablation: mean ablated loss / mean full loss, per configuration.

    ``ratio`` is the ratio of seed means (section 7.6); ``seed_ratio_*`` are
    the mean and range of the per-seed ratios.
    """
    good = _ok(rows)
    out = []
    for config, group in _group(good, lambda r: r["config"]).items():
        a = {r["seed"]: r[metric] for r in group if r["method"] == ablated}
        f = {r["seed"]: r[metric] for r in group if r["method"] == full}
        seeds = sorted(set(a) & set(f))
        if not seeds:
            continue
        ra = np.array([a[s] for s in seeds])
        rf = np.array([f[s] for s in seeds])
        with np.errstate(divide="ignore", invalid="ignore"):
            per_seed = ra / rf
        out.append({"config": config, **_named(_fields(group[0])), "ablated": ablated,
                    "full": full, "repetitions": len(seeds), "ablated_mean": float(ra.mean()),
                    "full_mean": float(rf.mean()), "ratio": float(ra.mean() / rf.mean()),
                    "seed_ratio_mean": float(per_seed.mean()),
                    "seed_ratio_min": float(per_seed.min()),
                    "seed_ratio_max": float(per_seed.max())})
    return sorted(out, key=_sort_key)


def regime_table(rows) -> list[dict]:
    """The theorem-regime audit of each configuration, from the audit columns.

    ``theorem1`` etc. read ``yes`` when the hypotheses held on every seed,
    ``no`` when on none, ``some`` otherwise; numbers are seed means.
    """
    out = []
    with_audit = [r for r in rows if r.get("theorem1") is not None]
    for config, group in _group(with_audit, lambda r: r["config"]).items():
        by_seed = {r["seed"]: r for r in group}.values()

        def verdict(col):
            vals = [bool(r[col]) for r in by_seed]
            return "yes" if all(vals) else ("no" if not any(vals) else "some")

        entry = {"config": config, **_named(_fields(group[0])), "repetitions": len(by_seed),
                 "eps_min": min(r["eps_min"] for r in by_seed),
                 "eps_max": max(r["eps_max"] for r in by_seed),
                 "theorem1": verdict("theorem1"), "theorem4": verdict("theorem4"),
                 "corollary2": verdict("corollary2")}
        for col in ("I_eff", "L_eff", "rho_ind", "lower_bound", "upper_bound"):
            entry[col], _ = _mean_sd([r[col] for r in by_seed])
        first = min(by_seed, key=lambda r: r["seed"])
        entry["notes"] = first["regime_notes"] or ""  # the first seed's, as an example
        out.append(entry)
    return sorted(out, key=_sort_key)


# ---------------------------------------------------------------- text


def _varying(rows, exclude=()) -> list[str]:
    cols = [f for f in CONFIG_FIELDS if f not in exclude and f not in ("d1", "d2", "population")]
    out = [f for f in cols if len({r.get(f) for r in rows}) > 1]
    return ["scenario" if f == "population_params" else f for f in out]


def _label(row, fields) -> str:
    parts = []
    for f in fields:
        if f == "scenario":
            parts.append(scenario_label(row))
            continue
        v = row.get(f)
        parts.append(f"{f}={_fmt(v, 3) if isinstance(v, float) else v}")
    return " ".join(parts) or "all"


def _pm(mean_key, sd_key):
    return lambda r: f"{_fmt(r[mean_key])} ± {_fmt(r[sd_key])}"


def _matches(row, headline: dict) -> bool:
    for key, want in headline.items():
        got = row.get(key)
        if isinstance(want, float) or isinstance(got, float):
            if got is None or not math.isclose(float(got), float(want), rel_tol=1e-9):
                return False
        elif got != want:
            return False
    return True


# ---------------------------------------------------------------- the report


def build_report(results, out=None, *, reference: str = "JPRS-Global",
                 slope_min_n: int | None = None, headline: dict | None = None,
                 figures: bool = True, ablation=("JPRS-NoProjection", "JPRS-Global"),
                 log=None) -> Report:
    """Compute every table from a results CSV, write them to ``out``, return the text.

    Parameters
    ----------
    results : path or list of row dicts
    out : path, optional
        Folder for ``summary.csv``, ``attack_increments.csv``,
        ``method_differences.csv``, ``scenario_tests.csv``, ``slopes.csv``,
        ``ablation.csv``, ``regime_audit.csv``, ``failures.csv``,
        ``report.txt`` and ``figures/`` (PNG and PDF, with matplotlib).
        Nothing is written when ``None``.
    reference : str
        Method that paired method comparisons and scenario tests use as baseline.
    slope_min_n : int, optional
        Fit log-log slopes only over ``n >= slope_min_n``.
    headline : dict, optional
        Configuration values (e.g. ``{"n": 128000, "eps0": 0.75}``) that pick
        the paired clean/attacked table printed first.
    figures : bool
        Draw the figures when matplotlib is installed.
    log : file, optional
        Where to say that figures were skipped (default stderr).
    """
    rows = read_results(results) if isinstance(results, (str, Path)) else list(results)
    tables = {
        "summary": summarize(rows),
        "attack_increments": attack_increments(rows),
        "method_differences": method_differences(rows, reference),
        "scenario_tests": scenario_tests(rows, reference),
        "slopes": slope_fits(rows, min_n=slope_min_n),
        "ablation": ablation_ratios(rows, *ablation),
        "regime_audit": regime_table(rows),
        "failures": failure_summary(rows),
    }
    text = _text(rows, tables, headline=headline or {}, slope_min_n=slope_min_n)
    report = Report(tables, text)
    if out is not None:
        out = Path(out)
        report.files += write_report_files(out, tables, {"report.txt": text})
        if figures:
            report.figures = make_figures(rows, tables, out / "figures", log=log)
    return report


def _text(rows, tables, *, headline: dict, slope_min_n) -> str:
    parts = []
    good = _ok(rows)
    parts.append(f"{len(rows)} rows, {len(good)} succeeded, {len(rows) - len(good)} failed; "
                 f"{len({r['config'] for r in rows})} configurations, "
                 f"{len({r['method'] for r in rows})} methods, "
                 f"{_repetitions(rows)}.")
    if tables["failures"]:
        parts.append(format_table(tables["failures"], ["method", "rows", "failure"],
                                  title="Failures"))

    inc = tables["attack_increments"]
    if inc:
        chosen = [r for r in inc if _matches(r, headline)] if headline else inc
        fields = _varying(chosen, ("alpha",))
        groups = _group(chosen, lambda r: (_label(r, fields), r["alpha"]))
        for (label, alpha), group in groups.items():
            parts.append(format_table(
                group,
                ["method", _pm("clean_mean", "clean_sd"), _pm("attacked_mean", "attacked_sd"),
                 lambda r: f"{_fmt(r['delta'])} [{_fmt(r['delta_lo'])}, {_fmt(r['delta_hi'])}]",
                 _pm("f1_clean_mean", "f1_clean_sd"), "runtime_mean", "pairs"],
                ["Method", "Clean E_s", "Attacked E_s", "Paired Δadv (95% CI)", "F1@s (clean)",
                 "Time (s)", "repetitions"],
                title=f"Paired attack increments, alpha = {_fmt(alpha)}"
                      + (f" ({label})" if label != "all" else ""),
            ))

    summary = [r for r in tables["summary"] if r["repetitions"] > 0]
    if summary:
        fields = _varying(summary)
        parts.append(format_table(
            summary,
            [lambda r: _label(r, fields), "method", _pm("E_s_mean", "E_s_sd"),
             _pm("loss_full_mean", "loss_full_sd"), _pm("f1_mean", "f1_sd"), "runtime_s_mean",
             "repetitions", "failed"],
            ["configuration", "method", "E_s", "full loss", "F1@s", "time (s)", "repetitions",
             "failed"],
            title="Means ± sd over repetitions",
        ))

    if tables["slopes"]:
        fields = _varying(tables["slopes"], ("n",))
        where = f", n >= {slope_min_n}" if slope_min_n else ""
        parts.append(format_table(
            tables["slopes"],
            [lambda r: _label(r, fields), "method", "points", "n_min", "n_max", "slope", "r2"],
            ["configuration", "method", "points", "n min", "n max", "slope", "R^2"],
            title=f"Log-log fits of mean E_s against n{where}",
        ))

    if tables["scenario_tests"]:
        fields = _varying(tables["scenario_tests"], ("population", "population_params"))
        parts.append(format_table(
            tables["scenario_tests"],
            [lambda r: _label(r, fields), "method", "scenarios", "method_mean", "reference_mean",
             lambda r: f"{_fmt(r['difference'])} [{_fmt(r['lo'])}, {_fmt(r['hi'])}]", "p",
             "p_holm", lambda r: f"{r['reference_first']}/{r['scenarios_total']}"],
            ["operating point", "method", "scenarios", "mean", "reference", "diff (95% CI)",
             "p", "Holm p", "ref. first"],
            title=f"Scenario-level paired tests against {tables['scenario_tests'][0]['reference']}",
        ))

    if tables["ablation"]:
        abl = tables["ablation"]
        fields = _varying(abl)
        ratios = [r["ratio"] for r in abl]
        parts.append(format_table(
            abl, [lambda r: _label(r, fields), "ablated_mean", "full_mean", "ratio", "repetitions"],
            ["configuration", abl[0]["ablated"], abl[0]["full"], "ratio", "repetitions"],
            title=f"Projection ablation: loss inflation {min(ratios):.1f}x to {max(ratios):.1f}x",
        ))

    if tables["regime_audit"]:
        audit = tables["regime_audit"]
        fields = _varying(audit)
        parts.append(format_table(
            audit,
            [lambda r: _label(r, fields), "eps_max", "theorem1", "theorem4", "corollary2",
             "I_eff", "lower_bound", "upper_bound", lambda r: _short(r["notes"])],
            ["configuration", "max eps", "Thm 1", "Thm 4", "Cor 2", "I_eff", "lower bd",
             "upper bd", "why not"],
            title="Theorem-regime audit (paper 000, section 7.3)",
        ))
    return "\n\n".join(parts)
