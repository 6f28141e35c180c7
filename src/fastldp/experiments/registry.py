"""One registry of the experiments of every family.

A family (``relations``, ``vectors``, ``regression``, ``histograms``) lives in
``fastldp.experiments.<family>`` and registers two kinds of things here:

- :class:`Experiment`: a named, shipped experiment that ``fastldp reproduce
  NAME`` runs (its spec, what it reproduces, whether it needs ``--data``);
- :class:`SpecFamily`: how to run and report a user's TOML spec whose
  ``family = "<name>"`` key names the family (``fastldp run`` / ``report``).

The harness and the CLI only talk to this module, so a new family adds its
experiments without touching either. Registration happens when
:func:`load_families` imports the family packages (lazily, on first use), so
``import fastldp`` stays cheap.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass, field
from typing import Callable, Optional

__all__ = [
    "Experiment",
    "SpecFamily",
    "FAMILIES",
    "register_experiment",
    "register_spec_family",
    "experiments",
    "get_experiment",
    "spec_families",
    "get_spec_family",
    "load_families",
]

#: The experiment packages, imported by :func:`load_families` in this order.
FAMILIES = ("relations", "vectors", "regression", "histograms", "oracles", "longitudinal",
            "heavyhitters", "multidim", "ranges")


@dataclass(frozen=True)
class Experiment:
    """A shipped experiment of one family.

    Attributes
    ----------
    name : str
        The name ``fastldp reproduce`` takes, e.g. ``"theorem-audit"``.
    family : str
        The family package that registered it.
    description : str
        One line for ``fastldp reproduce --help``: what it reproduces.
    run : callable
        ``run(*, quick, out, workers, data_dir, progress, figures, file)``, plus
        ``repetitions`` when it takes them (a function that still names the
        keyword ``trials`` gets the count under that name), runs and reports
        the experiment and returns an object with a ``text`` attribute (the
        report) and a ``failed`` attribute (rows that failed; the CLI exits
        non-zero when it is positive).
    needs_data : bool
        Whether it reads user-supplied data files (``--data``).
    spec : str or None
        The shipped TOML spec, if the experiment is spec-driven.
    takes_repetitions : bool
        Whether ``repetitions`` (``--repetitions``) replaces the spec's count.
    takes_trials : bool
        Deprecated name of ``takes_repetitions`` (either sets it).
    quick_ranks : bool
        Whether the ``--quick`` run's headline agrees with the full run's
        (``tests/test_reproduce_quick.py`` checks it against the published
        headline); requires ``headline``. Every other quick run prints that it
        is too small to rank the methods (:mod:`fastldp.experiments.quick`).
    headline : callable or None
        ``headline(report) -> dict``: the run's headline as JSON-like values
        (e.g. the winner per domain size), for that check.
    resolution : callable or None
        ``resolution(report) -> list[Resolution]``: the differences the run
        resolves, from its standard errors (default:
        :func:`fastldp.experiments.quick.resolutions`, which reads the
        report's ``summary`` table).
    """

    name: str
    family: str
    description: str
    run: Callable[..., object]
    needs_data: bool = False
    spec: Optional[str] = None
    takes_repetitions: bool = False
    takes_trials: bool = False
    quick_ranks: bool = False
    headline: Optional[Callable[[object], dict]] = None
    resolution: Optional[Callable[[object], list]] = None

    def __post_init__(self):
        if self.takes_trials or self.takes_repetitions:  # one flag, whichever name set it
            object.__setattr__(self, "takes_repetitions", True)
            object.__setattr__(self, "takes_trials", True)
        if self.quick_ranks and self.headline is None:
            # the claim must be checkable against the full run's published headline
            raise ValueError(f"Experiment {self.name!r} sets quick_ranks=True but gives no "
                             f"headline function to check it with.")


@dataclass(frozen=True)
class SpecFamily:
    """How ``fastldp run`` / ``fastldp report`` handle a family's own specs.

    ``run(spec_path, out, *, workers, quick, progress, data_dir,
    retry_failures, parquet)`` returns a run summary with a ``failed``
    count; ``report(results_path, out, *, reference, figures, **options)``
    returns a report; ``owns_table(path)`` tells whether a results CSV is
    this family's (by its header); ``table`` is its
    :class:`~fastldp.experiments.table.ResultsTable` subclass.
    """

    name: str
    run: Callable[..., object]
    report: Callable[..., object]
    owns_table: Callable[[object], bool]
    table: Optional[type] = None
    default_reference: str = ""
    options: dict = field(default_factory=dict)


_EXPERIMENTS: dict[str, Experiment] = {}
_SPEC_FAMILIES: dict[str, SpecFamily] = {}
_LOADED = False


def register_experiment(experiment: Experiment) -> Experiment:
    """Add ``experiment``; a second experiment of the same name is an error."""
    old = _EXPERIMENTS.get(experiment.name)
    if old is not None and old != experiment:
        raise ValueError(f"Experiment {experiment.name!r} is already registered "
                         f"by family {old.family!r}.")
    _EXPERIMENTS[experiment.name] = experiment
    return experiment


def register_spec_family(family: SpecFamily) -> SpecFamily:
    """Add the spec handlers of a family (the value of a spec's ``family`` key)."""
    _SPEC_FAMILIES[family.name] = family
    return family


def load_families() -> None:
    """Import every family's experiment package once, so that they register."""
    global _LOADED
    if _LOADED:
        return
    _LOADED = True
    for name in FAMILIES:
        try:
            importlib.import_module(f"fastldp.experiments.{name}")
        except ModuleNotFoundError as exc:  # a family not written yet
            if exc.name != f"fastldp.experiments.{name}":
                raise


def experiments() -> dict[str, Experiment]:
    """Every registered experiment, by name, in registration order."""
    load_families()
    return dict(_EXPERIMENTS)


def get_experiment(name: str) -> Experiment:
    """The experiment called ``name``, or a ``ValueError`` listing the names."""
    known = experiments()
    if name not in known:
        raise ValueError(f"Unknown experiment {name!r}; the experiments are "
                         f"{', '.join(known)}.")
    return known[name]


def spec_families() -> dict[str, SpecFamily]:
    """Every family that runs user specs, by the value of the ``family`` key."""
    load_families()
    return dict(_SPEC_FAMILIES)


def get_spec_family(name: str) -> SpecFamily:
    """The spec handlers of family ``name``, or a ``ValueError`` listing the families."""
    known = spec_families()
    if name not in known:
        raise ValueError(f"Unknown experiment family {name!r}; the families are "
                         f"{', '.join(known)}.")
    return known[name]
