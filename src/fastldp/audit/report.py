"""The audit table."""

from __future__ import annotations

from math import isinf

__all__ = ["format_table"]


def _num(x) -> str:
    if x is None:
        return "-"
    if isinf(x):
        return "inf"
    return f"{x:.6f}"


def format_table(rows) -> str:
    """Mechanism, claim, exact epsilon, empirical lower bound, verdict (one line per row)."""
    head = ("mechanism", "claim", "exact eps", "empirical lb", "verdict", "seconds")
    lines = []
    for r in rows:
        claim = (f"rho={r.claimed:.4f}" if r.kind == "zcdp" else f"eps={r.claimed:g}")
        if r.kind == "shuffle" and r.empirical is not None:
            claim += f",delta={r.empirical.delta:.1e}"
        exact = _num(r.exact.epsilon_audited) if r.exact else "-"
        lb = _num(r.empirical.lower_bound) if r.empirical else "-"
        if r.expect_violation:
            verdict = "caught" if not r.holds else "MISSED"
        else:
            verdict = "pass" if r.holds else "VIOLATION"
        lines.append((r.name, claim, exact, lb, verdict, f"{r.seconds:.2f}"))
    widths = [max(len(h), *(len(line[j]) for line in lines)) if lines else len(h)
              for j, h in enumerate(head)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    out = [fmt.format(*head), fmt.format(*("-" * w for w in widths))]
    out += [fmt.format(*line) for line in lines]
    return "\n".join(out)
