"""The audit table."""

from __future__ import annotations

import math
from math import isinf, isnan
from typing import Any, Iterable

from ..channels import REPR_WIDTH, one_line

__all__ = ["format_table", "format_reach", "one_line", "REPR_WIDTH", "LOW_POWER",
           "low_power_note"]

#: a row whose reach exceeds this budget multiplier is marked "low power" (the law
#: faults of the negative controls are built at 1.5 eps)
LOW_POWER = 1.5


def low_power_note(k: float) -> str:
    """The warning of a row whose reach ``k`` exceeds :data:`LOW_POWER`."""
    if math.isinf(k):
        return "low power: its tests cannot detect a fault of any size at this n"
    return f"low power: cannot detect faults smaller than about {k:.3g} times the claimed eps"


def _num(x: Any) -> str:
    if x is None:
        return "-"
    if isinf(x):
        return "inf"
    return f"{x:.6f}"


def format_reach(row: Any) -> str:
    """The ``detects`` cell: the smallest fault the row detects, as a budget multiplier.

    ``any`` for an exact law audit (every fault of the law), ``x1.08`` for a
    row whose tests detect a channel built at 1.08 eps, ``none`` when they
    detect no fault size; ``LOW`` marks a low-power row; ``-`` for controls.
    """
    if row.expect_violation or isnan(row.reach):
        return "-"
    if row.exact is not None:
        return "any"
    cell = "none" if isinf(row.reach) else f"x{row.reach:.3g}"
    return cell + (" LOW" if row.low_power else "")


def format_table(rows: Iterable[Any]) -> str:
    """Mechanism, claim, exact epsilon, empirical lower bound, reach, verdict (one line per row).

    Rows whose tests have too little power to catch a fault of
    :data:`LOW_POWER` times the claim are listed under the table with the
    size of fault they can detect.
    """
    rows = list(rows)
    head = ("mechanism", "claim", "exact eps", "empirical lb", "detects", "verdict", "seconds")
    lines = []
    for r in rows:
        claim = (f"rho={r.claimed:.4f}" if r.kind == "zcdp" else f"eps={r.claimed:g}")
        if r.kind in ("shuffle", "fit") and r.empirical is not None:
            claim += f",delta={r.empirical.delta:.1e}"
        exact = _num(r.exact.epsilon_audited) if r.exact else "-"
        lb = _num(r.empirical.lower_bound) if r.empirical else "-"
        if r.expect_violation:
            verdict = "caught" if not r.holds else "MISSED"
        else:
            verdict = "pass" if r.holds else "VIOLATION"
        lines.append((r.name, claim, exact, lb, format_reach(r), verdict, f"{r.seconds:.2f}"))
    widths = [max(len(h), *(len(line[j]) for line in lines)) if lines else len(h)
              for j, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*line) for line in lines]
    weak = [r for r in rows if r.low_power]
    if weak:
        out += ["", "low power:"] + [f"  {r.name}: {low_power_note(r.reach)}" for r in weak]
    failed = [(r, c) for r in rows for c in r.checks if not c.passed]
    if failed:
        out += ["", "failed checks of the view:"]
        out += [f"  {r.name}: {c.name}" + (f" (p = {c.p_value:.2g})" if c.statistical else "")
                + (f"; {c.detail}" if c.detail else "") for r, c in failed]
    return "\n".join(out)
