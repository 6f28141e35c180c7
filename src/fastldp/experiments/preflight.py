"""Checks before a run: a run that cannot succeed stops in its first second, saying why.

A misspelt method, a missing data folder or a typo in a budget profile
would otherwise fail every row of a grid, one cell at a time, and leave a
table of failures. :func:`preflight` collects every problem it can find
cheaply, without building a population or privatizing anything, and
raises one :class:`ValueError` that lists them all (the CLI prints it in
one line and exits 2).

The family-neutral checks are here: method names against the names the
family registers (with a "did you mean" suggestion), and every data path
of the configurations (a population table's ``path`` or ``*_path`` keys,
resolved under ``--data`` the way the runner resolves them) exists and is
readable. A family adds its own through a hook ``check(spec, cells,
data_dir) -> list of str`` (population kinds, required keys, a data folder
that exists but lacks the files a loader reads, ...), passed by its runner
to :func:`fastldp.experiments.runner.run_grid`.
"""

from __future__ import annotations

import difflib
import os
from pathlib import Path
from typing import Callable, Iterable, Optional, Sequence

__all__ = ["preflight", "unknown_names", "suggest", "data_path_problems", "output_problems"]


def suggest(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'X'?)`` for the closest of ``known``, or ``""`` when none is close."""
    close = difflib.get_close_matches(name, list(known), n=1, cutoff=0.6)
    return f" (did you mean {close[0]!r}?)" if close else ""


def unknown_names(given: Iterable[str], known: Sequence[str], what: str) -> list[str]:
    """One problem per name of ``given`` that ``known`` lacks, with a suggestion.

    When a name has no close match, the problem lists the known names.
    """
    known = list(known)
    problems = []
    for name in given:
        if name in known:
            continue
        hint = suggest(name, known)
        problems.append(f"unknown {what} {name!r}" + (
            hint or f" (the {what}s are {', '.join(known)})"))
    return problems


def _paths(table: dict) -> list[tuple[str, str]]:
    """``(key, path)`` of the path entries of a configuration table (``path``, ``*_path``).

    A list value (a loader that reads several files) gives one entry per item.
    """
    out = []
    for key, value in table.items():
        if not (key == "path" or key.endswith("_path")):
            continue
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if isinstance(item, (str, os.PathLike)):
                out.append((key, item))
    return out


def _readable(path: Path) -> Optional[str]:
    """Why ``path`` cannot be read, or None when it can."""
    if not path.exists():
        return "not found"
    if path.is_dir():
        if not os.access(path, os.R_OK | os.X_OK):
            return "a folder that cannot be listed (permissions)"
        if next(path.iterdir(), None) is None:
            return "an empty folder"
        return None
    if not os.access(path, os.R_OK):
        return "not readable (permissions)"
    return None


def data_path_problems(cells, data_dir) -> list[str]:
    """A problem for every data path of the cells' configurations that cannot be read.

    Relative paths are read under ``data_dir`` (``--data``), as the runner
    reads them; each distinct path is checked once, and all are reported.
    """
    problems: list[str] = []
    seen: set = set()
    for cell in cells:
        for table in cell.config.values():
            if not isinstance(table, dict):
                continue
            for key, value in _paths(table):
                given = os.path.expanduser(str(value))
                path = Path(given)
                if not path.is_absolute() and data_dir is not None:
                    path = Path(data_dir) / path
                if path in seen:
                    continue
                seen.add(path)
                why = _readable(path)
                if why is None:
                    continue
                label = table.get("kind", key)
                where = "" if Path(given).is_absolute() or data_dir is not None else (
                    " (relative paths are read under --data DIR or $FASTLDP_DATA; none given)")
                problems.append(f"{label} data {str(path)!r}: {why}{where}")
    return problems


def output_problems(out, table) -> list[str]:
    """The output folder is a file, or its results table has another family's columns.

    A torn first line (a kill while the header was written) is not a
    problem: the table repairs it.
    """
    out = Path(out)
    if out.exists() and not out.is_dir():
        return [f"the output folder {str(out)!r} is a file"]
    path = Path(table.path)
    if not path.is_file():
        return []
    try:
        with open(path, "rb") as fh:
            first = fh.readline()
    except OSError as exc:
        return [f"the results table {str(path)!r} cannot be read ({exc.strerror or exc})"]
    if first.endswith(b"\n") and first.decode("utf-8", "replace") != table.header:
        return [f"{str(path)!r} is not a {table.kind} with the current columns (write to "
                f"another --out folder)"]
    return []


def preflight(spec, cells, *, data_dir=None, methods: Optional[Sequence[str]] = None,
              check: Optional[Callable[..., list]] = None, out=None, table=None) -> None:
    """Raise one ``ValueError`` listing everything that keeps ``spec`` from running.

    Parameters
    ----------
    spec : Spec
        The parsed spec (its ``methods`` and ``name``).
    cells : list of Cell
        Its expanded grid (their configurations hold the data paths).
    data_dir : path, optional
        Where relative data paths are read from.
    methods : sequence of str, optional
        Every method name the family knows; ``None`` skips the method check.
    check : callable, optional
        The family's hook ``check(spec, cells, data_dir) -> list of str``.
    out, table : optional
        The output folder and its results table, checked together (a file
        in the folder's place, a table of other columns).

    Raises
    ------
    ValueError
        Naming the spec and every problem found, before any work.
    """
    problems: list[str] = []
    if methods is not None:
        problems += unknown_names(spec.methods, methods, "method")
    problems += data_path_problems(cells, data_dir)
    if out is not None and table is not None:
        problems += output_problems(out, table)
    if check is not None:
        problems += list(check(spec, cells, data_dir))
    if problems:
        listed = "; ".join(f"({i}) {p}" for i, p in enumerate(problems, 1))
        count = "1 problem" if len(problems) == 1 else f"{len(problems)} problems"
        raise ValueError(f"Spec {spec.name!r} cannot run, so nothing was run ({count}): "
                         f"{listed}.")
