"""Statistics of an oracles results table: which post-processing method wins where.

Every statistic skips failed rows (counted in ``failures``). The methods of
one configuration and repetition post-process the same estimate, so
differences between methods are paired over repetitions
(:func:`fastldp.experiments.report.paired_interval`).

Tables (one CSV each):

========= ==================================================================
summary   mean and sd over repetitions of the three MSEs (full domain, set
          queries, top-k), the share of consistent outputs, negatives and
          time, per configuration and method
winners   per setting (population, oracle, eps) and metric: the method(s) of
          smallest mean MSE, its ratio to ``raw``, the runner-up and the paired
          95% interval of runner-up minus winner
wins      per metric and method: in how many settings the method wins
paper     the paper's conclusions, each beside what this table measures
gains     per population and oracle: norm_sub's full-domain MSE over raw's at
          each eps (the paper: the gain is largest at small eps)
failures  failed rows per method and message
========= ==================================================================

Two methods whose mean MSEs agree to a relative ``1e-9`` tie (``norm_sub``
and ``project_simplex`` compute the same projection when the positive part
of the estimate sums to at least ``n``): both win.
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ..report import (
    Report, _group, _mean_sd, _ok, _repetitions, failure_summary, format_table, markdown_block,
    paired_interval, text_block, write_report_files,
)
from .table import read_oracle_results

__all__ = ["METRICS", "PAPER", "PAPER_GAIN", "summarize", "winners", "wins", "paper_comparison",
           "gains", "headline", "pivot", "build_report"]

#: metric column -> what it measures (report labels).
METRICS = {
    "mse_full": "full-domain MSE",
    "mse_set": "set-query MSE",
    "mse_topk": "top-k MSE",
}

#: The paper's conclusions compared: metric -> (the claim, the methods it names best). The
#: first and third are the recommendations :mod:`fastldp.oracles.postprocess` cites from
#: Wang et al. (NDSS 2020); the set-query one is our reading of its evaluation, not checked
#: against the paper's text (see docs/oracles_consistency.md).
PAPER = {
    "mse_full": ("Norm-Sub (the Euclidean projection onto the simplex, the approximate MLE) "
                 "is the method to use for the whole domain", ("norm_sub", "project_simplex")),
    "mse_set": ("Norm-Sub also serves set queries (sums over subsets of the domain); the "
                "unbiased Norm (one shift added to every value) is the alternative for large "
                "sets (our reading)", ("norm_sub", "project_simplex", "norm")),
    "mse_topk": ("Base-Cut is the method for the most frequent values: it zeroes the values "
                 "below a significance threshold and leaves the frequent ones as they are "
                 "(so does Norm-Cut, counted with it)",
                 ("base_cut", "norm_cut")),
}
_TIE = 1e-9


def _label(row) -> str:
    table = json.loads(row["population_params"])
    extra = " ".join(f"{k}={v}" for k, v in table.items() if k not in ("kind", "path"))
    return f"{table['kind']} {extra}".strip()


def _setting(e) -> tuple:
    return (e["population_params"], e["d"], e["oracle"], e["eps"])


def _order(rows) -> dict:
    from .methods import METHODS

    seen = list(dict.fromkeys(r["method"] for r in rows))
    known = [m for m in METHODS if m in seen]
    return {m: i for i, m in enumerate(known + [m for m in seen if m not in known])}


def summarize(rows) -> list[dict]:
    """Mean and sd over repetitions per (configuration, method)."""
    out = []
    for (config, method), group in _group(rows, lambda r: (r["config"], r["method"])).items():
        good = _ok(group)
        first = good[0] if good else group[0]
        entry = {"config": config, "population": first["population"],
                 "population_params": first["population_params"], "label": _label(first),
                 "n": first["n"], "d": first["d"], "oracle": first["oracle"],
                 "eps": first["eps"], "top_k": first["top_k"], "set_size": first["set_size"],
                 "queries": first["queries"], "method": method, "repetitions": len(good),
                 "failed": len(group) - len(good)}
        for col in ("mse_full", "mse_set", "mse_topk", "max_error", "total", "negatives",
                    "method_s", "oracle_s"):
            entry[f"{col}_mean"], entry[f"{col}_sd"] = _mean_sd([r.get(col) for r in good])
        flags = [r["consistent"] for r in good if r.get("consistent") is not None]
        entry["consistent_share"] = sum(flags) / len(flags) if flags else math.nan
        iters = [r["iterations"] for r in good if r.get("iterations") is not None]
        entry["iterations_mean"] = sum(iters) / len(iters) if iters else None
        conv = [r["converged"] for r in good if r.get("converged") is not None]
        entry["converged_share"] = sum(conv) / len(conv) if conv else None
        out.append(entry)
    order = _order(rows)
    return sorted(out, key=lambda e: (e["population_params"], e["d"], e["oracle"], e["eps"],
                                      order.get(e["method"], 99)))


def winners(rows, summary=None, level: float = 0.95) -> list[dict]:
    """Per setting and metric: the best method(s), the ratio to ``raw``, the runner-up."""
    summary = summarize(rows) if summary is None else summary
    good = _ok(rows)
    by_seed: dict = {}
    for r in good:
        by_seed.setdefault((r["config"], r["method"]), {})[r["seed"]] = r
    out = []
    for key, group in _group(summary, _setting).items():
        group = [e for e in group if e["repetitions"]]
        if not group:
            continue
        for metric in METRICS:
            ranked = sorted((e for e in group if not math.isnan(e[f"{metric}_mean"])),
                            key=lambda e: e[f"{metric}_mean"])
            if not ranked:
                continue
            best = ranked[0][f"{metric}_mean"]
            tied = [e for e in ranked if e[f"{metric}_mean"] <= best * (1 + _TIE) + 1e-300]
            rest = ranked[len(tied):]  # the tied are a prefix of the ranking
            raw = next((e for e in group if e["method"] == "raw"), None)
            entry = {"population_params": key[0], "label": group[0]["label"], "d": key[1],
                     "oracle": key[2], "eps": key[3], "metric": metric,
                     "best": "=".join(e["method"] for e in tied), "best_mse": best,
                     "raw_mse": raw[f"{metric}_mean"] if raw else math.nan,
                     "ratio_to_raw": best / raw[f"{metric}_mean"]
                     if raw and raw[f"{metric}_mean"] > 0 else math.nan,
                     "runner_up": rest[0]["method"] if rest else "",
                     "runner_up_mse": rest[0][f"{metric}_mean"] if rest else math.nan,
                     "pairs": 0, "gap_lo": math.nan, "gap_hi": math.nan}
            if rest:
                a, b = tied[0], rest[0]
                first = by_seed.get((a["config"], a["method"]), {})
                second = by_seed.get((b["config"], b["method"]), {})
                diffs = [second[s][metric] - first[s][metric] for s in first if s in second]
                stats = paired_interval(diffs, level)
                entry.update(pairs=stats["n"], gap_lo=stats["lo"], gap_hi=stats["hi"])
            out.append(entry)
    return out


def wins(win_rows) -> list[dict]:
    """Per metric and method: the settings it wins (ties count for every tied method)."""
    out = []
    for metric in METRICS:
        group = [w for w in win_rows if w["metric"] == metric]
        counts: dict = {}
        for w in group:
            for m in w["best"].split("="):
                counts[m] = counts.get(m, 0) + 1
        for method, k in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])):
            out.append({"metric": metric, "method": method, "wins": k, "settings": len(group)})
    return out


def paper_comparison(win_rows, summary=None) -> list[dict]:
    """Each conclusion of the paper beside the measured winners.

    ``agrees`` is true when one of the methods the paper names best wins
    (alone or tied) in at least half of the settings. With the ``summary``,
    ``ratio_median`` and ``ratio_worst`` say how close the named methods
    come where they do not win: per setting, the smallest mean MSE among
    them over the best mean MSE (1 where they win). A claim none of whose
    methods ran (by the ``summary``) is left out.
    """
    means: dict = {}
    for e in summary or ():
        if e["repetitions"]:
            means[(_setting(e), e["method"])] = e
    ran = {method for (_, method) in means}
    out = []
    for metric, (claim, named) in PAPER.items():
        group = [w for w in win_rows if w["metric"] == metric]
        if not group or (summary is not None and not ran & set(named)):
            continue  # nothing measured, or none of the methods the paper names ran
        hit = [w for w in group if set(w["best"].split("=")) & set(named)]
        others: dict = {}
        for w in group:
            if w not in hit:
                others[w["best"]] = others.get(w["best"], 0) + 1
        elsewhere = ", ".join(f"{m} ({k})" for m, k in sorted(others.items(),
                                                             key=lambda kv: (-kv[1], kv[0])))
        ratios = []
        for w in group:
            key = (w["population_params"], w["d"], w["oracle"], w["eps"])
            mine = [means[(key, m)][f"{metric}_mean"] for m in named if (key, m) in means]
            if mine and w["best_mse"] > 0:
                ratios.append(min(mine) / w["best_mse"])
        out.append({"metric": metric, "paper": claim, "named": "/".join(named),
                    "won": len(hit), "settings": len(group),
                    "agrees": len(hit) * 2 >= len(group), "elsewhere": elsewhere,
                    "ratio_median": float(np.median(ratios)) if ratios else math.nan,
                    "ratio_worst": max(ratios) if ratios else math.nan})
    return out


#: The paper's remark on eps, compared by :func:`gains`.
PAPER_GAIN = ("post-processing helps most when eps is small (the estimates are noisiest); "
              "its advantage shrinks as eps grows")


def gains(summary, method: str = "norm_sub", metric: str = "mse_full") -> list[dict]:
    """Per population and oracle: ``method``'s mean ``metric`` over raw's, at each eps.

    ``falls`` is true when the ratio at the smallest eps is below the ratio at
    the largest (the gain is largest at small eps).
    """
    out = []
    key = lambda e: (e["population_params"], e["d"], e["oracle"])  # noqa: E731
    for (params, d, oracle), group in _group(summary, key).items():
        means = {(e["eps"], e["method"]): e[f"{metric}_mean"] for e in group if e["repetitions"]}
        ratios = {eps: means[(eps, method)] / means[(eps, "raw")]
                  for eps in sorted({eps for eps, _ in means})
                  if (eps, method) in means and (eps, "raw") in means and means[(eps, "raw")] > 0}
        if len(ratios) < 2:
            continue
        lo, hi = min(ratios), max(ratios)
        out.append({"population_params": params, "label": group[0]["label"], "d": d,
                    "oracle": oracle, "method": method, "metric": metric,
                    "ratios": " ".join(f"{eps:g}:{r:.3g}" for eps, r in ratios.items()),
                    "eps_low": lo, "ratio_low": ratios[lo], "eps_high": hi,
                    "ratio_high": ratios[hi], "falls": ratios[lo] < ratios[hi]})
    return out


def _fmt(x) -> str:
    if x is None or (isinstance(x, float) and math.isnan(x)):
        return "-"
    return f"{x:.3g}"


def pivot(summary, metric: str) -> list[dict]:
    """Blocks ``{"title", "header", "rows"}``: per population, a row per (oracle, eps),
    a column per method, the mean of ``metric``; ``*`` marks the row's best."""
    methods = list(dict.fromkeys(e["method"] for e in summary))
    blocks = []
    for key, group in _group(summary, lambda e: (e["population_params"], e["d"])).items():
        cells = {(e["oracle"], e["eps"], e["method"]): e for e in group}
        settings = list(dict.fromkeys((e["oracle"], e["eps"]) for e in group))
        rows = []
        for oracle, eps in settings:
            means = {m: cells[(oracle, eps, m)][f"{metric}_mean"] for m in methods
                     if (oracle, eps, m) in cells and cells[(oracle, eps, m)]["repetitions"]}
            finite = [v for v in means.values() if not math.isnan(v)]
            best = min(finite) if finite else math.nan
            rows.append([oracle, f"{eps:g}"] + [
                "-" if m not in means else
                _fmt(means[m]) + ("*" if means[m] <= best * (1 + _TIE) + 1e-300 else "")
                for m in methods])
        e0 = group[0]
        blocks.append({"title": f"{METRICS[metric]} ({e0['label']}, n={e0['n']}, d={e0['d']}, "
                                f"top_k={e0['top_k']}, sets of {e0['set_size']} items)",
                       "header": ["oracle", "eps"] + methods, "rows": rows})
    return blocks


def _paper_lines(comparison, gain_rows=()) -> list[str]:
    lines = []
    for c in comparison:
        verdict = "agrees" if c["agrees"] else "differs"
        lines.append(f"- {METRICS[c['metric']]}: the paper: {c['paper']}. Measured: "
                     f"{c['named']} best in {c['won']} of {c['settings']} settings ({verdict})"
                     + (f"; elsewhere {c['elsewhere']}" if c["elsewhere"] else "")
                     + (f"; their MSE over the best: median {c['ratio_median']:.3g}, worst "
                        f"{c['ratio_worst']:.3g}." if not math.isnan(c["ratio_worst"]) else "."))
    if gain_rows:
        falls = sum(g["falls"] for g in gain_rows)
        verdict = "agrees" if falls * 2 >= len(gain_rows) else "differs"
        shown = "; ".join(f"{g['oracle']} ({g['label']}) {g['ratio_low']:.3g} at eps "
                          f"{g['eps_low']:g}, {g['ratio_high']:.3g} at eps {g['eps_high']:g}"
                          for g in gain_rows)
        lines.append(f"- the gain: the paper: {PAPER_GAIN}. Measured, norm_sub / raw "
                     f"full-domain MSE: {shown} (smaller at the smallest eps for {falls} of "
                     f"{len(gain_rows)}; {verdict}).")
    return lines


def headline(tables, summary) -> list[dict]:
    """The two blocks README quotes: who wins where against the paper, and the gain by eps.

    The first has a row per metric (the paper's pick, the settings it wins,
    every winner with its count, the pick's MSE over the best); the second,
    norm_sub's full-domain MSE over raw's per population and oracle, a
    column per eps.
    """
    counts: dict = {}
    for w in tables["wins"]:
        counts.setdefault(w["metric"], []).append(f"{w['method']} {w['wins']}")
    rows = []
    for c in tables["paper"]:
        rows.append([METRICS[c["metric"]], c["named"].replace("/", ", "),
                     f"{c['won']} of {c['settings']}", ", ".join(counts.get(c["metric"], [])),
                     _fmt(c["ratio_median"]), _fmt(c["ratio_worst"])])
    blocks = [{"title": "Who wins where (settings: population x oracle x eps; ties count for "
                        "each tied method)",
               "header": ["metric", "the paper's pick", "pick wins", "settings won",
                          "pick / best, median", "worst"], "rows": rows}]
    means = {(e["population_params"], e["d"], e["oracle"], e["eps"], e["method"]):
             e["mse_full_mean"] for e in summary if e["repetitions"]}
    eps = sorted({k[3] for k in means})
    gain_rows = []
    for key, group in _group(summary, lambda e: (e["label"], e["population_params"], e["d"],
                                                 e["oracle"])).items():
        label, params, d, oracle = key
        cells = []
        for x in eps:
            a, b = means.get((params, d, oracle, x, "norm_sub")), means.get(
                (params, d, oracle, x, "raw"))
            cells.append(_fmt(a / b) if a is not None and b else "-")
        if any(c != "-" for c in cells):
            gain_rows.append([oracle, f"{label}, d={d}"] + cells)
    if gain_rows:
        blocks.append({"title": "norm_sub's full-domain MSE over raw's, by eps",
                       "header": ["oracle", "data"] + [f"eps {x:g}" for x in eps],
                       "rows": gain_rows})
    return blocks


def build_report(results, out=None, *, figures: bool = True, log=None) -> Report:
    """Compute every table from a results CSV, write them to ``out``, return the text.

    Parameters
    ----------
    results : path or list of row dicts
    out : path, optional
        Folder for ``summary.csv``, ``winners.csv``, ``wins.csv``, ``paper.csv``,
        ``failures.csv``, ``report.txt``, ``report.md`` and ``figures/`` (with
        matplotlib). Nothing is written when ``None``.
    figures : bool
    log : file, optional
        Where to say that figures were skipped.
    """
    rows = read_oracle_results(results) if isinstance(results, (str, Path)) else list(results)
    summary = summarize(rows)
    win_rows = winners(rows, summary)
    tables = {"summary": summary, "winners": win_rows, "wins": wins(win_rows),
              "paper": paper_comparison(win_rows, summary), "gains": gains(summary),
              "failures": failure_summary(rows)}
    good = _ok(rows)
    head = (f"{len(rows)} rows, {len(good)} succeeded, {len(rows) - len(good)} failed; "
            f"{len({r['config'] for r in rows})} configurations, "
            f"{len({r['method'] for r in rows})} methods, {_repetitions(rows)}. "
            f"Errors on frequencies (counts / n); * marks the best of a row.")
    blocks = [b for metric in METRICS for b in pivot(summary, metric)]
    consistent = format_table(
        [{"method": m, "consistent": _fmt(sum(e["consistent_share"] for e in es) / len(es)),
          "negatives": _fmt(sum(e["negatives_mean"] for e in es) / len(es))}
         for m, es in _group([e for e in summary if e["repetitions"]],
                             lambda e: e["method"]).items()],
        ["method", "consistent", "negatives"],
        title="Share of consistent outputs (non-negative, summing to 1) and mean negatives")
    win_text = format_table(tables["wins"], ["metric", "method", "wins", "settings"],
                            title="Settings won (population x oracle x eps)")
    paper = _paper_lines(tables["paper"], tables["gains"])
    parts, md = [head], [head]
    if tables["failures"]:
        parts.append(format_table(tables["failures"], ["method", "rows", "failure"],
                                  title="Failures"))
        md.append("**Failures**\n\n" + "\n".join(
            f"- {f['method']}: {f['rows']} rows: {f['failure']}" for f in tables["failures"]))
    top = headline(tables, summary)
    parts += [text_block(b) for b in top + blocks] + [consistent, win_text]
    md += [markdown_block(b) for b in top + blocks]
    md.append("**Settings won**\n\n" + "\n".join(
        f"- {METRICS[w['metric']]}: {w['method']} {w['wins']} of {w['settings']}"
        for w in tables["wins"]))
    parts.append("Against the paper (Wang et al., NDSS 2020):\n" + "\n".join(paper))
    md.append("**Against the paper (Wang et al., NDSS 2020)**\n\n" + "\n".join(paper))
    text = "\n\n".join(parts)
    report = Report(tables, text)
    if out is not None:
        out = Path(out)
        report.files += write_report_files(out, tables, {"report.txt": text,
                                                         "report.md": "\n\n".join(md)})
        if figures:
            from .figures import make_figures

            report.figures = make_figures(summary, out / "figures", log=log)
    return report
