"""``fastldp reproduce NAME``: run and report a shipped experiment of any family.

The experiments are those the families register in
:mod:`fastldp.experiments.registry`; :func:`experiments` lists them with
what each reproduces and whether it reads data files (``--data``).
"""

from __future__ import annotations

import inspect
import io
import os
import sys
import textwrap
from pathlib import Path

from .quick import resolutions, too_small_banner
from .registry import Experiment, experiments, get_experiment
from .spec import UNSET, repetitions_alias

__all__ = ["reproduce", "experiments", "spec_path", "check_data_dir"]


def spec_path(experiment: str) -> Path:
    """Path of the shipped TOML spec of ``experiment``."""
    exp = get_experiment(experiment)
    if exp.spec is None:
        raise ValueError(f"Experiment {experiment!r} has no TOML spec.")
    return Path(exp.spec)


def check_data_dir(exp: Experiment, data_dir):
    """Resolve ``data_dir`` (default ``$FASTLDP_DATA``) and check it before anything runs.

    An experiment that reads data files refuses to start without a readable
    folder, instead of failing every row; a folder given that does not exist
    is refused by every experiment, also those that read data only when
    they find it.
    """
    given = data_dir is not None
    if data_dir is None:
        data_dir = os.environ.get("FASTLDP_DATA") or None
    if data_dir is not None and not Path(data_dir).expanduser().is_dir():
        # also where the data are optional (oracle-consistency reads real files when it
        # finds them): a folder that is not there must not silently mean "synthetic only"
        where = "--data" if given else "$FASTLDP_DATA"
        raise FileNotFoundError(f"The data folder of experiment {exp.name!r} ({where}) does "
                                f"not exist or is not a folder: "
                                f"{str(Path(data_dir).expanduser())!r}.")
    if not exp.needs_data:
        return data_dir
    if data_dir is None:
        raise ValueError(f"Experiment {exp.name!r} reads data files: pass --data DIR (or set "
                         f"FASTLDP_DATA) with the folder that holds them. fastldp never "
                         f"downloads data.")
    path = Path(data_dir).expanduser()
    if not path.is_dir():
        raise FileNotFoundError(f"The data folder of experiment {exp.name!r} does not exist or "
                                f"is not a folder: {str(path)!r}.")
    return str(path)


def _accepts(function, name: str) -> bool:
    try:
        return name in inspect.signature(function).parameters
    except (TypeError, ValueError):
        return False


def reproduce(experiment: str, *, quick: bool = False, out=None, workers: int = 1,
              data_dir=None, progress: bool = True, figures: bool = True, file=None,
              repetitions: int | None = None, retry_failures: bool = False,
              trials=UNSET):
    """Run a shipped experiment, then report it; print the summary and the report.

    Parameters
    ----------
    experiment : str
        A name of :func:`experiments` (``fastldp reproduce --help`` lists them).
    quick : bool
        The spec's reduced ``[quick]`` grid. Unless the experiment's quick
        headline is known to agree with its full run's
        (``Experiment.quick_ranks``), the text starts with a paragraph saying
        that the run is too small to rank the methods and which differences
        its standard errors resolve (:mod:`fastldp.experiments.quick`).
    out : path, optional
        Output folder (default ``results/<experiment>[-quick]``); a second call
        resumes, keeping finished rows and rerunning failed ones.
    workers : int
        Worker processes; results do not depend on it.
    data_dir : path, optional
        Folder of the data files (default ``$FASTLDP_DATA``); checked before
        anything runs for the experiments that read data.
    progress, figures : bool
        Progress bar; figures (need matplotlib).
    file : file-like, optional
        Where the text goes (default stdout).
    repetitions : int, optional
        Replace the spec's number of repetitions (its ``seeds``), for the
        experiments that take it (``Experiment.takes_repetitions``).
    retry_failures : bool
        Drop the failed rows of an earlier run first, so they run again
        (experiments with a results table).
    trials : int, optional
        Deprecated name of ``repetitions`` (``DeprecationWarning``).

    Returns
    -------
    Report-like
        With ``text``, ``files``, ``figures`` and ``failed`` (rows that failed).

    Raises
    ------
    ValueError
        Before any work, when the experiment cannot succeed: a missing data
        folder, and for spec-driven experiments every unknown method and
        unreadable data file at once (:mod:`fastldp.experiments.preflight`).
    """
    repetitions = repetitions_alias(repetitions, trials, "reproduce")
    exp = get_experiment(experiment)
    if repetitions is not None and not exp.takes_repetitions:
        takes = ", ".join(n for n, e in experiments().items() if e.takes_repetitions)
        raise ValueError(f"The 'repetitions' parameter of reproduce does not apply to "
                         f"{experiment!r} (it applies to {takes}). Got repetitions="
                         f"{repetitions!r} instead.")
    data_dir = check_data_dir(exp, data_dir)
    file = file or sys.stdout
    extra: dict[str, object] = ({"retry_failures": retry_failures}
                                if _accepts(exp.run, "retry_failures") else {})
    if repetitions is not None:
        # a family function written before the rename still calls the count 'trials'
        name = "repetitions" if _accepts(exp.run, "repetitions") else "trials"
        extra[name] = repetitions
    honest = quick and not exp.quick_ranks
    # a quick run that cannot rank the methods says so above its tables: its text is held
    # back until the run's own standard errors give the differences it resolves
    shown_to = io.StringIO() if honest else file
    try:
        report = exp.run(quick=quick, out=out, workers=workers, data_dir=data_dir,
                         progress=progress, figures=figures, file=shown_to, **extra)
    except BaseException:
        if honest:  # what the run printed before it failed is not lost with the banner
            file.write(shown_to.getvalue())
        raise
    if honest:
        banner = too_small_banner(exp.name, (exp.resolution or resolutions)(report))
        print(textwrap.fill(banner, width=100) + "\n", file=file)
        file.write(shown_to.getvalue())
        text = getattr(report, "text", None)
        if isinstance(text, str):  # the report's text as printed: the paragraph first
            setattr(report, "text", banner + "\n\n" + text)
    files = list(getattr(report, "files", []) or [])
    shown = [p for p in getattr(report, "figures", []) or [] if Path(p).suffix == ".png"]
    if files:
        print(f"\nTables in {Path(files[0]).parent}", file=file)
    if shown:
        print(f"Figures in {Path(shown[0]).parent}: {', '.join(Path(p).name for p in shown)}",
              file=file)
    return report
