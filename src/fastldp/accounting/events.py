"""The privacy event of one release, as a ``dp_accounting`` :class:`~dp_accounting.DpEvent`.

Every release of fastldp maps to an event of Google's ``dp_accounting``
package, so that a release can be composed with others by
:class:`~fastldp.accounting.Accountant` (or by ``dp_accounting``'s own
accountants where the event is one of theirs):

- pure epsilon-LDP (every oracle, JPRS, the vectors' mechanisms, LDP-IHT,
  two-stage SLR): :func:`pure_dp_event`, binary randomized response at
  ``epsilon``, ``RandomizedResponseDpEvent(2 / (e^eps + 1), 2)``;
- k-ary randomized response (GRR): :func:`randomized_response_event`;
- a Laplace randomizer: :func:`laplace_event`, ``LaplaceDpEvent(1 / eps)``;
- central zCDP (the histograms): :func:`zcdp_event`, ``ZCDpEvent(rho)``;
- the Skellam shuffle sums: :class:`RdpCurveEvent`, an RDP curve and a total
  variation term;
- an ``(epsilon, delta)`` claim only: :class:`EpsilonDeltaDpEvent`;
- rounds of a protocol on disjoint users: :class:`DisjointGroupsDpEvent`;
- sequential rounds: ``ComposedDpEvent`` (:func:`compose`);
- not private: ``NonPrivateDpEvent``.

Why binary randomized response for pure epsilon
-----------------------------------------------
Every epsilon-DP pair of output laws ``(P, Q)`` is a post-processing of
binary randomized response at ``epsilon`` (Kairouz, Oh and Viswanath, "The
Composition Theorem for Differential Privacy", ICML 2015): its two rows,
``(e^eps, 1) / (e^eps + 1)`` and ``(1, e^eps) / (e^eps + 1)``, dominate
every epsilon-DP mechanism in every divergence that obeys data processing
(hockey-stick, hence the privacy loss distribution, and Renyi). So
``RandomizedResponseDpEvent(noise_parameter=2 / (e^eps + 1), num_buckets=2)``
is the tightest event that is valid for *any* epsilon-LDP randomizer, and
``dp_accounting``'s RDP and PLD accountants both support it (with the
``REPLACE_ONE`` neighbour relation, which is local DP's: one user's input
replaced by another). A mechanism whose law is known better gives a tighter
event: GRR is k-ary randomized response (:func:`randomized_response_event`)
and the Laplace randomizer's RDP is Mironov's closed form
(:func:`laplace_event`).

The events ``dp_accounting`` 0.6 lacks
--------------------------------------
``dp_accounting`` has no event for an RDP curve, nor for a bare
``(epsilon, delta)`` claim, nor for rounds of a protocol that each user takes
part in at most once. They are defined here as ``attrs`` classes derived from
``DpEvent`` (so they nest inside ``ComposedDpEvent`` and convert to named
tuples), and :class:`~fastldp.accounting.Accountant` composes them;
``dp_accounting``'s own accountants report them as unsupported.

Serialization
-------------
:func:`to_json` writes any event tree (``dp_accounting``'s and these) as
JSON, and :func:`from_json` reads it back to an equal event. Only the
event classes of ``dp_accounting.dp_event`` and of this module are read
back: a JSON text never names a class to import.

Examples
--------
>>> import math
>>> from fastldp.accounting import events
>>> e = events.pure_dp_event(1.0)
>>> type(e).__name__, e.num_buckets
('RandomizedResponseDpEvent', 2)
>>> math.isclose(events.pure_epsilon(e), 1.0)
True
>>> events.from_json(events.to_json(e)) == e
True
>>> events.pure_epsilon(events.zcdp_event(0.5)) is None
True
"""

from __future__ import annotations

import json
import math
from typing import Any, Iterable, Optional

import numpy as np

from .._validation import check_float, check_int, param_error

try:
    import attr
    from dp_accounting import DpEvent
    from dp_accounting import dp_event as _dpe
except ImportError as exc:  # pragma: no cover - the extra is installed in the test environment
    raise ImportError(
        "fastldp.accounting needs Google's dp-accounting package, an optional dependency: "
        "pip install 'fastldp[accounting]'") from exc

__all__ = [
    "DpEvent",
    "RdpCurveEvent",
    "EpsilonDeltaDpEvent",
    "DisjointGroupsDpEvent",
    "pure_dp_event",
    "randomized_response_event",
    "laplace_event",
    "zcdp_event",
    "approximate_dp_event",
    "non_private_event",
    "compose",
    "pure_epsilon",
    "statement_event",
    "to_json",
    "from_json",
]


def _tuple_of_floats(values: Any) -> tuple:
    return tuple(float(v) for v in np.asarray(values, dtype=np.float64).ravel())


@attr.s(frozen=True, slots=True, auto_attribs=True)
class RdpCurveEvent(DpEvent):
    """A release known by its Renyi-DP curve, up to a total variation term.

    The release's output law is within total variation distance ``tv`` of
    the output of a mechanism that is ``(alpha, rdp[i])``-Renyi DP at every
    listed order ``alpha = orders[i]`` (Mironov, "Renyi Differential
    Privacy", CSF 2017). ``tv = 0`` is a plain RDP curve.

    Parameters
    ----------
    orders : tuple of float
        Renyi orders, each > 1, increasing.
    rdp : tuple of float
        The curve at ``orders`` (each >= 0; ``inf`` allowed).
    tv : float
        Total variation distance to the RDP mechanism (``0`` by default).

    Notes
    -----
    At an order the curve does not list, :class:`~fastldp.accounting.Accountant`
    uses the value at the next listed order above (Renyi divergence is
    nondecreasing in the order: van Erven and Harremoes, "Renyi Divergence and
    Kullback-Leibler Divergence", IEEE Trans. Inf. Theory 2014, Theorem 3), and
    ``inf`` above the last. A total variation term turns into
    ``(1 + e^epsilon) tv`` of delta: if ``P`` is ``tv``-close to ``P'`` and
    ``Q`` to ``Q'``, then ``P(S) <= P'(S) + tv <= e^eps Q'(S) + delta' + tv
    <= e^eps Q(S) + delta' + (1 + e^eps) tv``; composed releases add their
    ``tv`` (total variation of adaptive compositions is subadditive).

    Examples
    --------
    >>> from fastldp.accounting import RdpCurveEvent
    >>> e = RdpCurveEvent.from_curve([2, 4, 8], [0.1, 0.2, 0.4])
    >>> e.orders, e.rdp, e.tv
    ((2.0, 4.0, 8.0), (0.1, 0.2, 0.4), 0.0)
    >>> e.at([3, 8, 9]).tolist()
    [0.2, 0.4, inf]
    """

    orders: tuple
    rdp: tuple
    tv: float = 0.0

    @classmethod
    def from_curve(cls, orders: Any, rdp: Any, *, tv: float = 0.0) -> "RdpCurveEvent":
        """Check the curve and build the event (orders sorted, both as tuples of floats)."""
        owner = "RdpCurveEvent"
        a = np.asarray(orders, dtype=np.float64).ravel()
        r = np.asarray(rdp, dtype=np.float64).ravel()
        if a.size == 0 or a.shape != r.shape:
            raise param_error("rdp", owner, f"an array as long as 'orders' ({a.size}, > 0)",
                              f"array of length {r.size}")
        if not np.all(a > 1) or not np.all(np.isfinite(a)):
            raise param_error("orders", owner, "finite Renyi orders > 1", orders)
        if not np.all(r >= 0):  # NaN fails too
            raise param_error("rdp", owner, "values in [0, inf]", rdp)
        order = np.argsort(a, kind="stable")
        a, r = a[order], r[order]
        if np.any(np.diff(a) == 0):
            raise param_error("orders", owner, "distinct orders", orders)
        tv = check_float(tv, "tv", owner, low=0, high=1, low_open=False, high_open=False)
        return cls(_tuple_of_floats(a), _tuple_of_floats(r), tv)

    def at(self, orders: Any) -> np.ndarray:
        """The curve at ``orders``: the value at the next listed order above, ``inf`` past the last."""
        a = np.asarray(self.orders, dtype=np.float64)
        r = np.asarray(self.rdp, dtype=np.float64)
        q = np.asarray(orders, dtype=np.float64)
        idx = np.searchsorted(a, q, side="left")
        out = np.full(q.shape, np.inf)
        ok = idx < a.size
        out[ok] = r[idx[ok]]
        return out


@attr.s(frozen=True, slots=True, auto_attribs=True)
class EpsilonDeltaDpEvent(DpEvent):
    """A release known only to be ``(epsilon, delta)``-DP.

    ``delta = 0`` is pure DP, which :class:`~fastldp.accounting.Accountant`
    treats as binary randomized response at ``epsilon`` (the dominating pair
    of every epsilon-DP mechanism; module docstring). With ``delta > 0`` the
    event composes by basic composition (epsilons add, deltas add) with the
    rest of the composition (whatever accounting that rest gets).

    Examples
    --------
    >>> from fastldp.accounting import EpsilonDeltaDpEvent
    >>> EpsilonDeltaDpEvent(1.0, 1e-6)
    EpsilonDeltaDpEvent(epsilon=1.0, delta=1e-06)
    """

    epsilon: float
    delta: float = 0.0


@attr.s(frozen=True, slots=True, auto_attribs=True)
class DisjointGroupsDpEvent(DpEvent):
    """Rounds of one protocol run on disjoint groups of users: each user is in at most one.

    The protocol's guarantee for one user is that of the round the user is
    in, so it is bounded by the worst round: :class:`~fastldp.accounting.Accountant`
    takes the maximum of the rounds' budgets, component by component (the
    pure epsilons, the basic-composition ``(epsilon, delta)``, the RDP
    curves order by order, the total variation terms). The group a user
    falls in may be random (a secret permutation): the bound holds given
    the assignment, hence without it (post-processing).

    Examples
    --------
    >>> from fastldp.accounting import DisjointGroupsDpEvent, pure_dp_event
    >>> e = DisjointGroupsDpEvent([pure_dp_event(1.0), pure_dp_event(2.0)])
    >>> len(e.events)
    2
    """

    events: list


def pure_dp_event(epsilon: float) -> DpEvent:
    """The event of any epsilon-DP (local) release: binary randomized response at ``epsilon``.

    ``RandomizedResponseDpEvent(noise_parameter=2 / (e^eps + 1), num_buckets=2)``:
    with probability ``1 - p/2 = e^eps / (e^eps + 1)`` it keeps its input bit,
    so the ratio of its two rows is ``e^eps``. It dominates every epsilon-DP
    mechanism (module docstring). ``epsilon = inf`` gives ``NonPrivateDpEvent``.
    """
    eps = check_float(epsilon, "epsilon", "pure_dp_event", low=0, high=math.inf,
                      low_open=False, high_open=False)
    if math.isinf(eps):
        return _dpe.NonPrivateDpEvent()
    # 2 / (e^eps + 1), computed as 2 e^-eps / (1 + e^-eps): no overflow at a large eps
    t = math.exp(-eps)
    return _dpe.RandomizedResponseDpEvent(noise_parameter=2 * t / (1 + t), num_buckets=2)


def randomized_response_event(epsilon: float, k: int) -> DpEvent:
    """k-ary randomized response (GRR) at ``epsilon``: keep w.p. ``e^eps / (e^eps + k - 1)``.

    ``RandomizedResponseDpEvent(noise_parameter=k / (e^eps + k - 1), num_buckets=k)``:
    it outputs the input w.p. ``1 - p + p/k`` and each other value w.p. ``p/k``,
    so ``(1 - p + p/k) / (p/k) = e^eps``.
    """
    owner = "randomized_response_event"
    eps = check_float(epsilon, "epsilon", owner, low=0, high=math.inf,
                      low_open=False, high_open=False)
    k = check_int(k, "k", owner, low=2)
    if math.isinf(eps):
        return _dpe.NonPrivateDpEvent()
    t = math.exp(-eps)
    return _dpe.RandomizedResponseDpEvent(noise_parameter=k * t / (1 + (k - 1) * t),
                                          num_buckets=k)


def laplace_event(epsilon: float) -> DpEvent:
    """A Laplace randomizer at ``epsilon`` (scale = sensitivity / eps): ``LaplaceDpEvent(1 / eps)``."""
    eps = check_float(epsilon, "epsilon", "laplace_event", low=0, high=math.inf, high_open=False)
    if math.isinf(eps):
        return _dpe.NonPrivateDpEvent()
    return _dpe.LaplaceDpEvent(noise_multiplier=1.0 / eps)


def zcdp_event(rho: float) -> DpEvent:
    """A ``rho``-zCDP release: ``ZCDpEvent(rho)``, i.e. ``(alpha, rho alpha)``-RDP at every order."""
    rho = check_float(rho, "rho", "zcdp_event", low=0, high=math.inf, low_open=False,
                      high_open=False)
    if math.isinf(rho):
        return _dpe.NonPrivateDpEvent()
    return _dpe.ZCDpEvent(rho=rho)


def approximate_dp_event(epsilon: float, delta: float) -> DpEvent:
    """An ``(epsilon, delta)`` claim: :func:`pure_dp_event` when ``delta = 0``, else :class:`EpsilonDeltaDpEvent`."""
    owner = "approximate_dp_event"
    eps = check_float(epsilon, "epsilon", owner, low=0, high=math.inf, low_open=False,
                      high_open=False)
    delta = check_float(delta, "delta", owner, low=0, high=1, low_open=False, high_open=False)
    if delta == 0 or math.isinf(eps):
        return pure_dp_event(eps)
    if delta >= 1:
        return _dpe.NonPrivateDpEvent()
    return EpsilonDeltaDpEvent(eps, delta)


def non_private_event() -> DpEvent:
    """``NonPrivateDpEvent()``: a release that guarantees nothing."""
    return _dpe.NonPrivateDpEvent()


def compose(events: Iterable[DpEvent]) -> DpEvent:
    """Sequential composition of ``events`` (rounds that may each see every user).

    ``ComposedDpEvent(list(events))``; one event is returned as itself.
    """
    items = list(events)
    for e in items:
        if not isinstance(e, DpEvent):
            raise param_error("events", "compose", "DpEvent objects", e, TypeError)
    if len(items) == 1:
        return items[0]
    return _dpe.ComposedDpEvent(events=items)


def statement_event(statement: Any) -> DpEvent:
    """The event of a :class:`~fastldp.results.PrivacyStatement` (what its ``event()`` returns).

    Its ``dp_event`` when set; else ``rho`` gives :func:`zcdp_event`, a "not
    private" model or ``epsilon = inf`` ``NonPrivateDpEvent``, ``(epsilon,
    delta)`` :func:`approximate_dp_event` (pure when ``delta`` is 0 or None),
    personal budgets the event of ``epsilon_max``.
    """
    given = getattr(statement, "dp_event", None)
    if given is not None:
        return check_event(given, "PrivacyStatement")
    if statement.rho is not None:
        return zcdp_event(statement.rho)
    if statement.model == "not private":
        return _dpe.NonPrivateDpEvent()
    eps = statement.epsilon
    if eps is None and statement.personal:
        eps = statement.epsilon_max
        if eps is None:
            raise ValueError(
                "PrivacyStatement.event: the reports had personal budgets that this result no "
                "longer holds (finalized from partials); build each identity's event with "
                "fastldp.accounting.pure_dp_event(epsilon).")
    if eps is None:
        raise ValueError(f"PrivacyStatement.event: the statement {statement} states no budget "
                         "to derive an event from.")
    return approximate_dp_event(eps, statement.delta or 0.0)


def pure_epsilon(event: DpEvent) -> Optional[float]:
    """The pure-DP epsilon of ``event`` by basic composition, or ``None`` if it is not pure.

    Randomized response (``log(k/p - k + 1)``), Laplace (``1 / noise_multiplier``),
    discrete Laplace (``parameter * sensitivity``), ``EpsilonDeltaDpEvent`` with
    ``delta = 0``, no-op (0), non-private (``inf``); compositions add,
    self-compositions multiply, disjoint groups take the maximum. Every
    other event (zCDP, Gaussian, RDP curves, ``delta > 0``) is not pure.
    """
    if isinstance(event, _dpe.NoOpDpEvent):
        return 0.0
    if isinstance(event, _dpe.NonPrivateDpEvent):
        return math.inf
    if isinstance(event, _dpe.RandomizedResponseDpEvent):
        p, k = float(event.noise_parameter), int(event.num_buckets)
        if k == 1 or p == 1:
            return 0.0
        if p == 0:
            return math.inf
        return math.log1p(k / p - k)
    if isinstance(event, _dpe.LaplaceDpEvent):
        return 1.0 / float(event.noise_multiplier)
    if isinstance(event, _dpe.DiscreteLaplaceDpEvent):
        return float(event.noise_parameter) * float(event.sensitivity)
    if isinstance(event, EpsilonDeltaDpEvent):
        return float(event.epsilon) if event.delta == 0 else None
    if isinstance(event, _dpe.SelfComposedDpEvent):
        inner = pure_epsilon(event.event)
        return None if inner is None else inner * int(event.count)
    if isinstance(event, _dpe.ComposedDpEvent):
        total = 0.0
        for e in event.events:
            inner = pure_epsilon(e)
            if inner is None:
                return None
            total += inner
        return total
    if isinstance(event, DisjointGroupsDpEvent):
        parts = [pure_epsilon(e) for e in event.events]
        if any(p is None for p in parts):
            return None
        return max(parts, default=0.0)  # type: ignore[type-var]
    return None


# ---------------------------------------------------------------- JSON
def _event_classes() -> dict:
    classes = {name: obj for name, obj in vars(_dpe).items()
               if isinstance(obj, type) and issubclass(obj, DpEvent)}
    classes.update({c.__name__: c for c in (RdpCurveEvent, EpsilonDeltaDpEvent,
                                            DisjointGroupsDpEvent)})
    return classes


def _to_obj(value: Any) -> Any:
    if isinstance(value, DpEvent):
        out = {"type": type(value).__name__}
        for field in attr.fields(type(value)):
            out[field.name] = _to_obj(getattr(value, field.name))
        return out
    if isinstance(value, (list, tuple)):
        return [_to_obj(v) for v in value]
    if isinstance(value, (np.floating, float)):
        return float(value)
    if isinstance(value, (np.integer, int)) and not isinstance(value, bool):
        return int(value)
    return value


def to_json(event: DpEvent) -> str:
    """The event as a JSON text: ``{"type": class name, field: value, ...}``, nested.

    Floats are written exactly (``json`` writes the shortest repr that reads
    back to the same double; ``inf`` as ``Infinity``). Tuples become lists
    and are read back as tuples where the class holds tuples
    (:class:`RdpCurveEvent`).
    """
    if not isinstance(event, DpEvent):
        raise param_error("event", "to_json", "a dp_accounting DpEvent", event, TypeError)
    return json.dumps(_to_obj(event), sort_keys=True)


def _from_obj(value: Any, classes: dict) -> Any:
    if isinstance(value, dict):
        name = value.get("type")
        cls = classes.get(name)
        if cls is None:
            raise ValueError(f"from_json: unknown event type {name!r}; known: "
                             f"{', '.join(sorted(classes))}.")
        fields = {f.name: f for f in attr.fields(cls)}
        extra = set(value) - set(fields) - {"type"}
        if extra:
            raise ValueError(f"from_json: {name} has no field(s) {sorted(extra)}.")
        kwargs = {}
        for key, v in value.items():
            if key == "type":
                continue
            v = _from_obj(v, classes)
            if cls in (RdpCurveEvent,) and key in ("orders", "rdp"):
                v = _tuple_of_floats(v)
            kwargs[key] = v
        return cls(**kwargs)
    if isinstance(value, list):
        return [_from_obj(v, classes) for v in value]
    return value


def from_json(text: str) -> DpEvent:
    """The event written by :func:`to_json` (``from_json(to_json(e)) == e``).

    Raises
    ------
    ValueError
        On a text that is not JSON, names an event type that is neither
        ``dp_accounting``'s nor fastldp's, or has unknown fields.
    """
    try:
        obj = json.loads(text)
    except (TypeError, json.JSONDecodeError) as exc:
        raise ValueError(f"from_json: not a JSON event text ({exc}).") from None
    event = _from_obj(obj, _event_classes())
    if not isinstance(event, DpEvent):
        raise ValueError(f"from_json: the text holds no event (got {type(event).__name__}).")
    return event


def check_event(event: Any, owner: str) -> DpEvent:
    """Return ``event`` if it is a ``DpEvent``, else raise TypeError naming ``owner``."""
    if not isinstance(event, DpEvent):
        raise param_error("event", owner, "a dp_accounting DpEvent (see fastldp.accounting)",
                          event, TypeError)
    return event


def flatten(event: DpEvent, count: int = 1) -> list:
    """``[(leaf event, count), ...]`` of a tree of compositions (disjoint groups stay leaves)."""
    if isinstance(event, _dpe.SelfComposedDpEvent):
        return flatten(event.event, count * int(event.count))
    if isinstance(event, _dpe.ComposedDpEvent):
        out: list = []
        for e in event.events:
            out.extend(flatten(e, count))
        return out
    return [(event, count)]
