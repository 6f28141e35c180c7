"""Statistics of a sparse-vector results table: MAE per method and setting, paired comparisons.

Every statistic skips failed rows (counted in ``failures``). Trials are paired
across methods (same users) and, within a method, across the clean and
attacked cells of a repetition (same honest reports), so differences use the
paired t interval of :func:`fastldp.experiments.report.paired_interval`.

Tables (one CSV each):

============== ================================================================
summary        mean and sd over repetitions of MAE (final and raw), time, per
               configuration and method
differences    method minus the reference (RPC) MAE, paired over repetitions
increments     attacked minus clean MAE of the same repetition (``mae - mae_clean``)
failures       failed rows per method and message
============== ================================================================

``report.txt`` and ``report.md`` hold the same tables pivoted: one block
per setting, a row per ``eps`` (no attack) or per ``q / n`` (attacks), a
column per method, ``mean ± sd`` in each cell.
"""

from __future__ import annotations

import json
from pathlib import Path


from ..report import (
    Report,
    _fmt,
    _group,
    _mean_sd,
    _ok,
    _repetitions,
    format_table,
    markdown_block,
    paired_interval,
    text_block,
    write_report_files,
)
from .table import read_sparse_results

__all__ = ["CONFIG_FIELDS", "summarize", "differences", "increments", "failure_summary",
           "population_label", "pivot", "build_report"]

#: The columns that define a configuration (``config`` is their hash).
CONFIG_FIELDS = ("population", "population_params", "n", "d", "m", "eps", "q_frac", "model",
                 "attack", "target", "clip")








def population_label(row) -> str:
    """``kind`` plus the population table's options (paths and seeds left out)."""
    table = json.loads(row["population_params"])
    extra = " ".join(f"{k}={v}" for k, v in table.items()
                     if k not in ("kind", "path", "cap_seed"))
    return f"{table['kind']} {extra}".strip()


def _method_order(rows) -> list:
    from .methods import METHODS

    seen = list(dict.fromkeys(r["method"] for r in rows))
    known = [m for m in METHODS if m in seen]
    return known + [m for m in seen if m not in known]


def _sort_key(r):
    return (r["population"], r["population_params"], r["m"] or 0, r["model"], r["attack"],
            r["target"] or 0, r["eps"], r["q_frac"])


def summarize(rows) -> list[dict]:
    """Mean and sd over repetitions per (configuration, method)."""
    out = []
    for (config, method), group in _group(rows, lambda r: (r["config"], r["method"])).items():
        good = _ok(group)
        first = good[0] if good else group[0]
        entry = {"config": config, **{f: first[f] for f in CONFIG_FIELDS},
                 "label": population_label(first), "method": method, "repetitions": len(good),
                 "failed": len(group) - len(good)}
        for f in ("n", "d", "m"):  # real data: realized by the file
            entry[f] = first.get(f)
        for col in ("mae", "mae_raw", "mae_clean", "max_error", "runtime_s", "attack_s"):
            entry[f"{col}_mean"], entry[f"{col}_sd"] = _mean_sd([r.get(col) for r in good])
        for col in ("randomizer", "route", "R", "alpha"):
            entry[col] = first.get(col)
        out.append(entry)
    order = {m: i for i, m in enumerate(_method_order(rows))}
    return sorted(out, key=lambda e: (_sort_key(e), order.get(e["method"], 99)))


def differences(rows, reference: str = "RPC", level: float = 0.95) -> list[dict]:
    """MAE of each method minus the reference's, paired over repetitions, per configuration."""
    good = _ok(rows)
    ref = {(r["config"], r["seed"]): r["mae"] for r in good if r["method"] == reference}
    out = []
    for (config, method), group in _group([r for r in good if r["method"] != reference],
                                          lambda r: (r["config"], r["method"])).items():
        diffs = [r["mae"] - ref[(config, r["seed"])] for r in group if (config, r["seed"]) in ref]
        if not diffs:
            continue
        s = paired_interval(diffs, level)
        out.append({"config": config, **{f: group[0][f] for f in CONFIG_FIELDS},
                    "label": population_label(group[0]), "method": method,
                    "reference": reference, "pairs": s["n"], "difference": s["mean"],
                    "sd": s["sd"], "lo": s["lo"], "hi": s["hi"], "p": s["p"]})
    order = {m: i for i, m in enumerate(_method_order(rows))}
    return sorted(out, key=lambda e: (_sort_key(e), order.get(e["method"], 99)))


def increments(rows, level: float = 0.95) -> list[dict]:
    """Attacked minus clean MAE of the same repetition and method, per attacked configuration."""
    out = []
    attacked = [r for r in _ok(rows) if r["q_frac"] > 0]
    for (config, method), group in _group(attacked, lambda r: (r["config"], r["method"])).items():
        s = paired_interval([r["mae"] - r["mae_clean"] for r in group], level)
        entry = {"config": config, **{f: group[0][f] for f in CONFIG_FIELDS},
                 "label": population_label(group[0]), "method": method, "pairs": s["n"],
                 "increment": s["mean"], "sd": s["sd"], "lo": s["lo"], "hi": s["hi"]}
        entry["clean_mean"], _ = _mean_sd([r["mae_clean"] for r in group])
        entry["attacked_mean"], _ = _mean_sd([r["mae"] for r in group])
        entry["objective_mean"], _ = _mean_sd([r["attack_objective"] for r in group])
        out.append(entry)
    order = {m: i for i, m in enumerate(_method_order(rows))}
    return sorted(out, key=lambda e: (_sort_key(e), order.get(e["method"], 99)))


def failure_summary(rows) -> list[dict]:
    out: dict = {}
    for r in rows:
        if r.get("failure"):
            key = (r["method"], r["failure"])
            out[key] = out.get(key, 0) + 1
    return [{"method": m, "rows": c, "failure": f} for (m, f), c in sorted(out.items())]


# ---------------------------------------------------------------- pivots
def _pm(entry) -> str:
    if entry is None or not entry["repetitions"]:
        return "-"
    return f"{_fmt(entry['mae_mean'])} ± {_fmt(entry['mae_sd'])}"


def _setting(e) -> str:
    parts = [e["label"]]
    if e["m"] is not None and e["population"] in ("frequency", "signed", "truncated-normal"):
        parts.append(f"m={e['m']}")
    elif e["n"] is not None:
        parts.append(f"n={e['n']} d={e['d']} m={e['m']}")
    return ", ".join(parts)


def pivot(summary) -> list[dict]:
    """Blocks of pivoted MAE: ``{"title", "header", "rows"}``.

    Clean sweeps: one block per (population, m) with a row per eps. Attacks:
    one block per (population, m, eps, model, attack), a row per ``q / n``,
    the first the clean ``q = 0`` of the same repetitions.
    """
    summary = [e for e in summary if e["repetitions"] or e["failed"]]
    methods = list(dict.fromkeys(e["method"] for e in summary))
    blocks = []
    data_key = lambda e: (e["population_params"], e["m"], e["clip"])  # noqa: E731
    clean = [e for e in summary if e["q_frac"] == 0]
    attacked = [e for e in summary if e["q_frac"] > 0]
    # eps sweeps (clean settings with two or more eps, or no attacks at all)
    for key, group in _group(clean, data_key).items():
        eps = sorted({e["eps"] for e in group})
        if len(eps) < 2 and attacked:
            continue
        cells = {(e["eps"], e["method"]): e for e in group}
        rows = [[_fmt(x)] + [_pm(cells.get((x, m))) for m in methods] for x in eps]
        blocks.append({"title": f"MAE, no attack: {_setting(group[0])}",
                       "header": ["eps"] + methods, "rows": rows, "kind": "eps"})
    for key, group in _group(attacked, lambda e: data_key(e) + (e["eps"], e["model"], e["attack"],
                                                                 e["target"])).items():
        base = {(e["method"]): e for e in clean if data_key(e) == key[:3] and e["eps"] == key[3]}
        qs = sorted({e["q_frac"] for e in group})
        cells = {(e["q_frac"], e["method"]): e for e in group}
        rows = []
        if base:
            rows.append(["0"] + [_pm(base.get(m)) for m in methods])
        rows += [[_fmt(x)] + [_pm(cells.get((x, m))) for m in methods] for x in qs]
        e0 = group[0]
        what = e0["attack"] + (f" |T|={e0['target']}" if e0["attack"] == "targeted" else "")
        blocks.append({"title": f"MAE under attack: {_setting(e0)}, eps={_fmt(e0['eps'])}, "
                                f"{e0['model']} model, {what}",
                       "header": ["q/n"] + methods, "rows": rows, "kind": "q"})
    return blocks


def _diff_blocks(diffs) -> list[dict]:
    methods = list(dict.fromkeys(e["method"] for e in diffs))
    out = []
    for key, group in _group(diffs, lambda e: (e["population_params"], e["m"], e["model"],
                                               e["attack"], e["target"])).items():
        axis = "eps" if group[0]["q_frac"] == 0 else "q_frac"
        xs = sorted({(e["eps"], e["q_frac"]) for e in group})
        cells = {((e["eps"], e["q_frac"]), e["method"]): e for e in group}

        def cell(e):
            if e is None:
                return "-"
            return f"{e['difference']:+.4f} [{e['lo']:+.4f}, {e['hi']:+.4f}]"

        rows = [[_fmt(x[0] if axis == "eps" else x[1])] + [cell(cells.get((x, m))) for m in methods]
                for x in xs]
        e0 = group[0]
        what = "no attack" if e0["model"] == "none" else f"{e0['model']} {e0['attack']}"
        out.append({"title": f"MAE minus {e0['reference']}'s, paired over repetitions (95% CI): "
                             f"{_setting(e0)}, {what}",
                    "header": [axis.replace("q_frac", "q/n")] + methods, "rows": rows})
    return out


def build_report(results, out=None, *, reference: str = "RPC", figures: bool = True,
                 figure_methods=None, log=None) -> Report:
    """Compute every table from a results CSV, write them to ``out``, return the text.

    Parameters
    ----------
    results : path or list of row dicts
    out : path, optional
        Folder for ``summary.csv``, ``differences.csv``, ``increments.csv``,
        ``failures.csv``, ``report.txt``, ``report.md`` and ``figures/``
        (PNG and PDF, with matplotlib). Nothing is written when ``None``.
    reference : str
        The method of the paired differences (default RPC).
    figures : bool
    figure_methods : list of str, optional
        Methods drawn in the figures (default: all).
    log : file, optional
        Where to say that figures were skipped.
    """
    rows = read_sparse_results(results) if isinstance(results, (str, Path)) else list(results)
    tables = {
        "summary": summarize(rows),
        "differences": differences(rows, reference),
        "increments": increments(rows),
        "failures": failure_summary(rows),
    }
    good = _ok(rows)
    head = (f"{len(rows)} rows, {len(good)} succeeded, {len(rows) - len(good)} failed; "
            f"{len({r['config'] for r in rows})} configurations, "
            f"{len({r['method'] for r in rows})} methods, "
            f"{_repetitions(rows)}.")
    blocks = pivot(tables["summary"])
    dblocks = _diff_blocks(tables["differences"])
    parts, md = [head], [head]
    if tables["failures"]:
        parts.append(format_table(tables["failures"], ["method", "rows", "failure"],
                                  title="Failures"))
        md.append("**Failures**\n\n" + "\n".join(
            f"- {f['method']}: {f['rows']} rows: {f['failure']}" for f in tables["failures"]))
    parts += [text_block(b) for b in blocks]
    md += [markdown_block(b) for b in blocks]
    parts += [text_block(b) for b in dblocks]
    md += [markdown_block(b) for b in dblocks]
    text = "\n\n".join(parts)
    report = Report(tables, text)
    if out is not None:
        out = Path(out)
        report.files += write_report_files(out, tables, {"report.txt": text,
                                                         "report.md": "\n\n".join(md)})
        if figures:
            from .figures import make_figures

            report.figures = make_figures(tables["summary"], out / "figures",
                                          methods=figure_methods, log=log)
    return report
