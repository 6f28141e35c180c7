"""How a results row's scenario is named, for the report's tables and the figures' titles.

Below both :mod:`.report` (which re-exports :func:`scenario_label`) and
:mod:`.figures`, so that neither imports the other for it.
"""

from __future__ import annotations

import json

__all__ = ["scenario_label"]


def scenario_label(row) -> str:
    """``kind`` plus the population table's other entries (paths left out)."""
    table = json.loads(row["population_params"])
    extra = " ".join(f"{k}={v}" for k, v in table.items() if k not in ("kind", "path"))
    return f"{table['kind']} {extra}".strip()
