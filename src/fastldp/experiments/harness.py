"""Family-neutral entry points: run any spec, report any results table.

The family of a spec is its ``family`` key (default ``relations``); the
family of a results table is recognised by its header. Both dispatch
through :mod:`fastldp.experiments.registry`.
"""

from __future__ import annotations

from pathlib import Path

from .registry import get_spec_family, spec_families
from .spec import Spec, read_spec_file, spec_family

__all__ = ["run", "build_report", "table_family"]


def run(spec, out=None, *, workers: int = 1, quick: bool = False, progress: bool = True,
        data_dir=None, retry_failures: bool = False, parquet: bool = False):
    """Run every missing row of a spec of any family into ``OUT/results.csv``.

    Parameters
    ----------
    spec : path or Spec
        A TOML spec; its ``family`` key picks the family.
    out : path, optional
        Output folder (default ``results/<spec name>``); resumes if it has a table.
    workers : int
        Worker processes; results do not depend on it.
    quick : bool
        Apply the spec's ``[quick]`` table.
    progress : bool
        Show a progress bar on stderr.
    data_dir : path, optional
        Folder that relative data paths in the spec are read from.
    retry_failures : bool
        Drop the table's failed rows first, so they run again.
    parquet : bool
        Also write ``results.parquet`` (families that support it).

    Returns
    -------
    RunSummary
        With ``failed``, the number of failed rows written.

    Raises
    ------
    ValueError
        Before any work, listing every problem that would make rows fail
        (unknown methods, unreadable data paths, the family's own checks:
        :mod:`fastldp.experiments.preflight`).
    """
    if isinstance(spec, Spec):
        family = get_spec_family(spec.family)
    else:
        family = get_spec_family(spec_family(read_spec_file(spec)))
    return family.run(spec, out, workers=workers, quick=quick, progress=progress,
                      data_dir=data_dir, retry_failures=retry_failures, parquet=parquet)


def table_family(results) -> str:
    """The family whose results table is at ``results`` (by its header)."""
    path = Path(results)
    if not path.is_file():
        raise FileNotFoundError(f"No results table at {str(path)!r}.")
    for name, family in spec_families().items():
        if family.owns_table(path):
            return name
    raise ValueError(f"{str(path)!r} is not a results table of any fastldp family "
                     f"(its header matches none of {', '.join(spec_families())}).")


def build_report(results, out=None, *, reference: str | None = None, figures: bool = True,
                 slope_min_n: int | None = None):
    """Tables, text and figures from a results table of any family.

    ``reference`` is the baseline of paired comparisons (default: the
    family's, JPRS-Global or RPC); ``slope_min_n`` applies to relation tables.
    """
    family = get_spec_family(table_family(results))
    out = Path(out) if out is not None else Path(results).parent / "report"
    return family.report(results, out, reference=reference, figures=figures,
                         slope_min_n=slope_min_n)
