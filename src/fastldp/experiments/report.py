"""Report helpers every family shares: paired intervals, Holm, grouping, text tables, files.

A family's report (``fastldp.experiments.<family>.report``) computes its
tables from the rows of its results table with these helpers and returns a
:class:`Report`.

References
----------
.. [1] S. Holm, "A simple sequentially rejective multiple test procedure",
   Scand. J. Statist. 6 (1979) 65-70.
"""

from __future__ import annotations

import csv
import io
import math
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

__all__ = ["paired_interval", "holm", "failure_summary", "format_table", "text_block",
           "markdown_block", "write_report_files", "Report"]


def paired_interval(differences, level: float = 0.95) -> dict:
    """Mean, sd and the two-sided Student-t interval of paired differences.

    Returns ``{"n", "mean", "sd", "lo", "hi", "t", "p"}``; ``p`` is the
    two-sided p-value of ``mean = 0`` (equal to ``scipy.stats.ttest_rel`` on
    the pairs). With fewer than two pairs the interval and test are NaN.
    """
    from scipy import stats

    d = np.asarray(differences, dtype=np.float64)
    n = int(d.shape[0])
    mean = float(d.mean()) if n else math.nan
    if n < 2:
        return {"n": n, "mean": mean, "sd": math.nan, "lo": math.nan, "hi": math.nan,
                "t": math.nan, "p": math.nan}
    sd = float(d.std(ddof=1))
    half = float(stats.t.ppf(0.5 + level / 2.0, n - 1)) * sd / math.sqrt(n)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        test = stats.ttest_1samp(d, 0.0)
    return {"n": n, "mean": mean, "sd": sd, "lo": mean - half, "hi": mean + half,
            "t": float(test.statistic), "p": float(test.pvalue)}


def holm(pvalues) -> np.ndarray:
    """Holm step-down adjusted p-values (statsmodels' when it is installed).

    ``p_(i)`` sorted ascending becomes ``max_{j <= i} min(1, (m - j + 1) p_(j))``;
    NaN p-values stay NaN and do not count in ``m``.
    """
    p = np.asarray(pvalues, dtype=np.float64)
    out = np.full(p.shape, math.nan)
    ok = ~np.isnan(p)
    if not ok.any():
        return out
    try:
        from statsmodels.stats.multitest import multipletests
    except ImportError:
        q = p[ok]
        order = np.argsort(q, kind="stable")
        m = q.shape[0]
        scaled = np.minimum(1.0, (m - np.arange(m)) * q[order])
        adjusted = np.empty(m)
        adjusted[order] = np.maximum.accumulate(scaled)
        out[ok] = adjusted
    else:
        out[ok] = multipletests(p[ok], method="holm")[1]
    return out


def _mean_sd(values) -> tuple[float, float]:
    v = np.asarray([x for x in values if x is not None], dtype=np.float64)
    v = v[~np.isnan(v)]
    if v.shape[0] == 0:
        return math.nan, math.nan
    return float(v.mean()), float(v.std(ddof=1)) if v.shape[0] > 1 else math.nan


def _ok(rows) -> list[dict]:
    return [r for r in rows if not r.get("failure")]


def _group(rows, keyfn) -> dict:
    groups: dict = {}
    for r in rows:
        groups.setdefault(keyfn(r), []).append(r)
    return groups


def failure_summary(rows) -> list[dict]:
    """Failed rows counted per (method, message)."""
    out = {}
    for r in rows:
        if r.get("failure"):
            key = (r["method"], r["failure"])
            out[key] = out.get(key, 0) + 1
    return [{"method": m, "rows": c, "failure": f} for (m, f), c in sorted(out.items())]


def _repetitions(rows) -> str:
    """``"1 repetition"`` or ``"5 repetitions"``: the distinct seeds of ``rows``."""
    k = len({r["seed"] for r in rows})
    return f"{k} repetition{'' if k == 1 else 's'}"


def _fmt(value, digits: int = 3) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        if math.isnan(value):
            return "-"
        if value != 0 and (abs(value) >= 1e5 or abs(value) < 10 ** -digits):
            return f"{value:.{digits}g}"
        return f"{value:.{digits}f}"
    return str(value)


def format_table(rows, columns, headers=None, title: str = "") -> str:
    """Fixed-width text of ``rows`` (dicts) restricted to ``columns``."""
    headers = list(headers or columns)
    cells = [[_fmt(r.get(c)) if not callable(c) else c(r) for c in columns] for r in rows]
    widths = [max([len(h)] + [len(row[i]) for row in cells]) for i, h in enumerate(headers)]
    lines = [title] if title else []
    lines.append("  ".join(h.ljust(w) for h, w in zip(headers, widths)).rstrip())
    lines.append("  ".join("-" * w for w in widths))
    for row in cells:
        lines.append("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip())
    return "\n".join(lines)


def text_block(block: dict) -> str:
    """A report block (``{"title", "header", "rows"}``, rows of strings) as fixed-width text."""
    rows = [dict(zip(block["header"], r)) for r in block["rows"]]
    return format_table(rows, block["header"], title=block["title"])


def markdown_block(block: dict) -> str:
    """The same block as a bold title and a Markdown table."""
    lines = [f"**{block['title']}**", "",
             "| " + " | ".join(block["header"]) + " |",
             "|" + "|".join("---" for _ in block["header"]) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in block["rows"]]
    return "\n".join(lines)


def _short(text: str, width: int = 72) -> str:
    text = text.split("; ")[0]
    return text if len(text) <= width else text[: width - 3] + "..."


@dataclass
class Report:
    """Tables (name -> rows), the text, and the files written."""

    tables: dict
    text: str
    files: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    #: Rows of the run that failed (``fastldp reproduce`` exits non-zero when positive).
    failed: int = 0


def _write_csv(path: Path, rows) -> None:
    columns: list = []
    for r in rows:
        columns.extend(c for c in r if c not in columns)
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    writer.writerow(columns)
    for r in rows:
        writer.writerow(["" if r.get(c) is None else
                         ("" if isinstance(r.get(c), float) and math.isnan(r[c]) else r.get(c))
                         for c in columns])
    path.write_text(buf.getvalue())


def write_report_files(out: Path, tables: dict, texts: dict) -> list[Path]:
    """Write each non-empty table to ``out/<name>.csv`` and each text to ``out/<file>``.

    Returns the paths written. An empty table is not written (and a stale
    file of that name from an earlier report is removed).
    """
    out.mkdir(parents=True, exist_ok=True)
    files = []
    for name, table in tables.items():
        if not table:  # a table with no rows has no columns to name: it is not written
            stale = out / f"{name}.csv"
            if stale.exists():
                stale.unlink()
            continue
        path = out / f"{name}.csv"
        _write_csv(path, table)
        files.append(path)
    for name, text in texts.items():
        (out / name).write_text(text + "\n")
        files.append(out / name)
    return files
