"""The mechanism protocol: what the shared machinery asks a mechanism about itself.

Report files (:mod:`fastldp.reports`), Dask (:mod:`fastldp.distributed`),
the collector (:mod:`fastldp.service`), the command line, the audit
(:mod:`fastldp.audit`) and the ledger never ask a mechanism "which class are
you?". They ask the questions of :class:`StreamingMechanism` instead, and a
family joins all of them by answering those questions inside its own folder.

The questions
-------------
``stream_params()`` / ``spec()``
    The public parameters that rebuild an equivalent server, and the spec
    ``{"mechanism": name, "params": stream_params()}`` that report files
    carry and ``fastldp decode --mechanism`` takes.
``report_schema``
    A :class:`ReportSchema`: the dtype and per-report shape in which a
    report is stored, and whether budgets are fixed (the fixed epsilon) or
    personal.
``privatize`` / ``partial`` / ``merge`` / ``finalize`` / ``estimate``
    The client's randomizer and the server's exact streaming decode:
    ``finalize(merge(partial(a), partial(b)))`` equals
    ``estimate(concat(a, b))`` bit for bit.
``privacy(epsilons)``
    The :class:`~fastldp.results.PrivacyStatement` of a release of reports
    at these budgets; its ``event()`` is the accounting event the ledger
    charges.
``example_data(n, rng)``
    ``n`` synthetic inputs that ``privatize`` takes (what ``fastldp
    simulate`` privatizes and what the collector probes its report schema
    with).
``channels(epsilon)`` (a classmethod)
    The channels (laws, samplers) and negative controls that
    ``fastldp audit`` runs for the class (:class:`Audited`).
``kind`` and ``labels``
    How the dashboard draws an estimate (one of :data:`KINDS`) and the
    labels of its entries (``None``: their indices).

Adding a family
---------------
Implement these on the family's classes (inside its folder), export the
classes from the family's ``__init__`` and from :mod:`fastldp`, and add its
docs page to the index: :func:`streaming_classes` then finds them, so
``fastldp decode``, ``fastldp simulate``, ``fastldp serve``, Dask,
``fastldp audit`` and the ledger work with them unchanged. CONTRIBUTING.md
("Adding a family") has the checklist.

Examples
--------
>>> import fastldp
>>> from fastldp.protocol import streaming_classes
>>> grr = fastldp.GRR(domain_size=4, epsilon=1.0, codebook_seed=1)
>>> streaming_classes()["GRR"] is fastldp.GRR
True
>>> grr.report_schema
ReportSchema(dtype='int64', shape=(), fixed_epsilon=1.0)
"""

from __future__ import annotations

import importlib
import os
import sys
from dataclasses import dataclass
from typing import Any, Optional, Protocol, Sequence, runtime_checkable

import numpy as np

from ._validation import KeywordOnly

__all__ = ["KINDS", "ReportSchema", "StreamingMechanism", "Audited", "ProtocolMembers",
           "AuditedMembers", "streaming_classes",
           "audited_classes", "register", "resolve_class", "check_mechanism", "probe_schema",
           "PLUGINS_ENV"]

#: How the dashboard draws an estimate: a bar per entry (``counts``), a heat map
#: (``matrix``), a signed bar per coordinate (``vector``), a ranked list of items
#: (``ranking``), or a curve over an ordered domain (``distribution``).
KINDS = ("counts", "matrix", "vector", "ranking", "distribution")

#: Environment variable naming extra modules (comma-separated) whose classes
#: :func:`resolve_class` may rebuild from a spec's ``"module:Class"`` name.
PLUGINS_ENV = "FASTLDP_MECHANISMS"


@dataclass(frozen=True)
class ReportSchema:
    """What one stored report looks like, and how its budget is given.

    Parameters
    ----------
    dtype : numpy dtype
        The dtype reports are stored in (integers: symbols, bits, rows;
        floats: noisy values). Batches are checked against it and cast to it
        without loss.
    shape : tuple of int
        The shape of one report (``()`` for a scalar report).
    fixed_epsilon : float or None
        The budget every report was privatized at, for a mechanism built
        with one; ``None`` for personal budgets (each report carries its own).
    """

    dtype: Any
    shape: tuple = ()
    fixed_epsilon: Optional[float] = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "dtype", np.dtype(self.dtype))
        object.__setattr__(self, "shape", tuple(int(s) for s in self.shape))
        if self.fixed_epsilon is not None:
            object.__setattr__(self, "fixed_epsilon", float(self.fixed_epsilon))

    @property
    def personal_budgets(self) -> bool:
        """Whether each report carries its own budget."""
        return self.fixed_epsilon is None

    @property
    def integer(self) -> bool:
        """Whether reports are integers (a float column cannot hold them)."""
        return self.dtype.kind in "biu"

    def __repr__(self) -> str:
        return (f"ReportSchema(dtype={str(self.dtype)!r}, shape={self.shape}, "
                f"fixed_epsilon={self.fixed_epsilon!r})")


@runtime_checkable
class Audited(Protocol):
    """A class whose randomizers the audit runs: ``channels(epsilon)`` lists them."""

    @classmethod
    def channels(cls, epsilon: float = 1.0) -> list:  # pragma: no cover - a protocol
        """The :class:`fastldp.channels.Channel` objects of this class, controls included."""
        ...


@runtime_checkable
class StreamingMechanism(Protocol):
    """A mechanism with a client, an exact streaming decode and a self-description.

    See the module docstring for what each member answers; the page "The
    mechanism protocol" of the user guide has the reference and an example.
    """

    kind: str
    labels: Optional[Sequence[Any]]

    @property
    def report_schema(self) -> ReportSchema:  # pragma: no cover - a protocol
        ...

    def stream_params(self) -> dict:  # pragma: no cover - a protocol
        ...

    def spec(self) -> dict:  # pragma: no cover - a protocol
        ...

    def privatize(self, data: Any, *, epsilons: Any = None, identities: Any = None,
                  rng: Any = None) -> Any:  # pragma: no cover - a protocol
        ...

    def partial(self, reports: Any, epsilons: Any = None,
                identities: Any = None) -> Any:  # pragma: no cover - a protocol
        ...

    def merge(self, a: Any, b: Any) -> Any:  # pragma: no cover - a protocol
        ...

    def finalize(self, partial: Any) -> Any:  # pragma: no cover - a protocol
        ...

    def estimate(self, reports: Any, *, epsilons: Any = None,
                 identities: Any = None) -> Any:  # pragma: no cover - a protocol
        ...

    def privacy(self, epsilons: Any = None) -> Any:  # pragma: no cover - a protocol
        ...

    def example_data(self, n: int, rng: Any) -> Any:  # pragma: no cover - a protocol
        ...

    @classmethod
    def channels(cls, epsilon: float = 1.0) -> list:  # pragma: no cover - a protocol
        ...


class AuditedMembers(KeywordOnly):
    """``channels(epsilon)`` answered from the registry of :mod:`fastldp.channels`.

    A family registers its classes' channels in its ``_channels.py`` with
    :func:`fastldp.channels.channels_of`; a class that inherits this mixin
    answers :class:`Audited`'s question with them. Its constructors also
    answer a call that does not bind in fastldp's words
    (:class:`fastldp._validation.KeywordOnly`: the class, the keyword-only
    rule, the nearest keyword).
    """

    @classmethod
    def channels(cls, epsilon: float = 1.0) -> list:
        """The audit's channels and negative controls of this class at claimed ``epsilon``.

        Registered by its family's ``_channels`` module (the exact laws,
        samplers and faulty copies); ``fastldp audit`` runs them.
        """
        from .channels import registered_channels

        return registered_channels(cls, epsilon)


class ProtocolMembers(AuditedMembers):
    """The members every family's streaming mechanisms answer alike: ``spec`` and ``channels``.

    A family's protocol mixin (``<family>/_protocol.py``) inherits it and adds
    what its mechanisms answer in their own way (``report_schema``,
    ``privacy``, ``example_data``, ``kind``, ``labels``).
    """

    def spec(self) -> dict:
        """``{"mechanism": class name, "params": stream_params()}``: what rebuilds this mechanism."""
        return {"mechanism": type(self).__name__,
                "params": self.stream_params()}  # type: ignore[attr-defined]



class FixedBudgetMembers(ProtocolMembers):
    """:class:`ProtocolMembers` of a mechanism whose every report is at its one ``epsilon``.

    ``privacy`` and the check of an ``epsilons`` argument, which may only
    repeat that budget; ``_budget_note`` (a class attribute) says in the
    error why a family's reports have one budget.
    """

    _budget_note = ""

    def _check_epsilons(self, epsilons: Any, owner: str) -> None:
        """Budgets are fixed: ``epsilons`` may only repeat ``epsilon``."""
        if epsilons is None:
            return
        eps = np.asarray(epsilons, dtype=np.float64)
        fixed = self.epsilon  # type: ignore[attr-defined]
        if eps.size and not bool(np.all(eps == fixed)):
            from ._validation import param_error

            note = f" ({self._budget_note})" if self._budget_note else ""
            raise param_error("epsilons", owner,
                              f"None or the mechanism's fixed epsilon {fixed!r}{note}", epsilons)

    def privacy(self, epsilons: Any = None) -> Any:
        """Local DP of every whole report at ``epsilon``."""
        from .results import PrivacyStatement

        self._check_epsilons(epsilons, f"{type(self).__name__}.privacy")
        return PrivacyStatement.local(epsilon=self.epsilon)  # type: ignore[attr-defined]

    def merge(self, a: Any, b: Any) -> Any:
        """The partial of both chunks (exact sums; neither input changes)."""
        owner = f"{type(self).__name__}.merge"
        self._check_partial(a, owner)
        self._check_partial(b, owner)
        return a.merge(b)

    def _check_partial(self, partial: Any, owner: str) -> None:
        """Refuse what is not a partial of this class with these stream parameters."""
        from .streaming import Partial

        if not isinstance(partial, Partial):
            raise TypeError(f"{owner} takes a fastldp.streaming.Partial; got "
                            f"{type(partial).__name__}")
        params = self.stream_params()  # type: ignore[attr-defined]
        if partial.mechanism != type(self).__name__ or partial.params != params:
            raise ValueError(f"{owner}: the partial belongs to {partial.mechanism} with other "
                             f"parameters ({partial.params}); this is {self!r}")


_REGISTERED: dict[str, type] = {}


def register(cls: type) -> type:
    """Make a class outside the package's families known by name (usable as a decorator).

    Its spec name is the class name; :func:`resolve_class` then rebuilds it
    in this process. A collector or ``fastldp decode`` in another process
    finds it through :data:`PLUGINS_ENV` instead (the module is imported
    there), since a registration does not cross processes.
    """
    if not isinstance(cls, type) or not _implements(cls):
        raise TypeError(f"register takes a class that implements fastldp.protocol."
                        f"StreamingMechanism; got {cls!r}")
    _REGISTERED[cls.__name__] = cls
    return cls


#: members :func:`_implements` does not require (none: every family's classes answer
#: ``channels`` with the audit's channels registered in their folder, issue 33)
_NOT_YET_REQUIRED: tuple = ()


def _implements(cls: type) -> bool:
    members = [m for m in dir(StreamingMechanism)
               if not m.startswith("_") and m not in ("kind", "labels", "report_schema")
               and m not in _NOT_YET_REQUIRED]
    return all(callable(getattr(cls, m, None)) for m in members)


def probe_schema(mechanism: Any, fixed_epsilon: Optional[float]) -> ReportSchema:
    """The :class:`ReportSchema` of two probe reports: what a family may answer for ``report_schema``.

    Privatizes ``example_data(2, rng)`` at identities 0 and 1 (budgets 1.0
    when ``fixed_epsilon`` is ``None``) with ``rng = default_rng(0)``, as
    the collector has always probed a mechanism, so that the schemas that
    stores recorded before the protocol stay the same. Integer reports keep
    their dtype (booleans are stored as int8), any other reports are
    stored as float64.

    Examples
    --------
    >>> import fastldp
    >>> probe_schema(fastldp.OUE(domain_size=12, epsilon=1.0, codebook_seed=1), 1.0)
    ReportSchema(dtype='uint8', shape=(2,), fixed_epsilon=1.0)
    """
    cached = getattr(mechanism, "__dict__", {}).get("_fastldp_probed_schema")
    if cached is not None and cached.fixed_epsilon == (
            None if fixed_epsilon is None else float(fixed_epsilon)):
        return cached  # the probe privatizes: report files and the collector ask per batch
    rng = np.random.default_rng(0)
    data = mechanism.example_data(2, rng)
    budgets = {} if fixed_epsilon is not None else {"epsilons": np.ones(2)}
    reports = np.asarray(mechanism.privatize(data, identities=np.arange(2), rng=rng, **budgets))
    if reports.dtype.kind == "b":
        dtype = np.dtype(np.int8)
    elif reports.dtype.kind in "iu":
        dtype = reports.dtype
    else:
        dtype = np.dtype(np.float64)
    schema = ReportSchema(dtype, reports.shape[1:], fixed_epsilon)
    try:
        mechanism.__dict__["_fastldp_probed_schema"] = schema
    except AttributeError:  # pragma: no cover - a class with __slots__ probes each time
        pass
    return schema


def _exported_classes(module: Any) -> list[type]:
    found = []
    for name in getattr(module, "__all__", ()):
        obj = getattr(module, name, None)
        if isinstance(obj, type):
            found.append(obj)
    return found


def _family_modules() -> list[Any]:
    """The family modules that the package names in ``fastldp.FAMILIES``, imported.

    This module sits below the families and imports none of them by name:
    it reads the package's own list from the package object (initialized
    before any of its modules) and imports each family by that name, as a
    plugin registry does, so a new family joins by being listed there.
    """
    package = sys.modules[__name__.rpartition(".")[0]]
    return [importlib.import_module(f"{package.__name__}.{name}") for name in package.FAMILIES]


def _plugin_modules() -> list[Any]:
    names = [n.strip() for n in os.environ.get(PLUGINS_ENV, "").split(",") if n.strip()]
    return [importlib.import_module(n) for n in names]


def streaming_classes() -> dict[str, type]:
    """Every streaming estimator class, by spec name: built from the exports, not from a list.

    The classes that each family of ``fastldp.FAMILIES`` exports and that
    implement :class:`StreamingMechanism`, then
    those :func:`register` made known, then the exported classes of the
    modules named in :data:`PLUGINS_ENV`.
    """
    found: dict[str, type] = {}
    for module in _family_modules():
        for cls in _exported_classes(module):
            if _implements(cls):
                found.setdefault(cls.__name__, cls)
    found.update(_REGISTERED)
    for module in _plugin_modules():
        for cls in _exported_classes(module):
            if _implements(cls):
                found.setdefault(cls.__name__, cls)
    return found


def audited_classes() -> list[type]:
    """Every class whose ``channels`` the audit runs, in the order the families export them."""
    found: list[type] = []
    seen: set[int] = set()
    modules = _family_modules()
    for module in (*modules, *_plugin_modules()):
        for cls in _exported_classes(module):
            if id(cls) in seen or not callable(getattr(cls, "channels", None)):
                continue
            seen.add(id(cls))
            found.append(cls)
    for cls in _REGISTERED.values():
        if id(cls) not in seen and callable(getattr(cls, "channels", None)):
            found.append(cls)
    return found


def resolve_class(name: str) -> type:
    """The streaming class a spec names (a ``ValueError`` lists the known names)."""
    classes = streaming_classes()
    if name not in classes:
        raise ValueError(f"unknown mechanism {name!r}; streaming estimators: "
                         f"{', '.join(sorted(classes))} (a class of your own: register it with "
                         f"fastldp.protocol.register, or name its module in ${PLUGINS_ENV})")
    return classes[name]


def completed_spec(spec: dict) -> dict:
    """``spec`` with the parameters its class added since the spec was written.

    A class that adds a public parameter after report files recorded its
    specs lists it in ``spec_added``: the value (or a function of the
    recorded parameters) that reproduces what those files meant, so that a
    file written before still rebuilds its mechanism and decodes as it did.
    A spec that gives every parameter is returned as it is.
    """
    cls = resolve_class(spec["mechanism"])
    added = getattr(cls, "spec_added", None) or {}
    params = dict(spec.get("params", {}))
    missing = {name: (value(params) if callable(value) else value)
               for name, value in added.items() if name not in params}
    if not missing:
        return spec
    return {"mechanism": spec["mechanism"], "params": {**params, **missing}}


def check_mechanism(mechanism: Any) -> None:
    """Raise ``TypeError`` naming the missing members when ``mechanism`` is not streaming."""
    missing = [m for m in ("report_schema", "stream_params", "spec", "privatize", "partial",
                           "merge", "finalize", "estimate", "privacy", "example_data",
                           "channels", "kind", "labels")
               if not hasattr(mechanism, m)]
    if missing:
        raise TypeError(f"{type(mechanism).__name__} does not implement the mechanism protocol "
                        f"(fastldp.protocol.StreamingMechanism): it lacks {', '.join(missing)}")
    if mechanism.kind not in KINDS:
        raise TypeError(f"{type(mechanism).__name__}.kind must be one of {KINDS}; "
                        f"got {mechanism.kind!r}")
