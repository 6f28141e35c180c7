"""The privacy event of one release, as a ``dp_accounting`` :class:`~dp_accounting.DpEvent`.

Every release of fastldp maps to an event of Google's ``dp_accounting``
package, so that a release can be composed with others by
:class:`~fastldp.accounting.Accountant` (or by ``dp_accounting``'s own
accountants where the event is one of theirs):

- pure epsilon-LDP (every oracle, JPRS, the vectors' mechanisms, LDP-IHT,
  two-stage SLR): :func:`pure_dp_event`, binary randomized response at
  ``epsilon``, ``RandomizedResponseDpEvent(2 / (e^eps + 1), 2)`` (as an
  :class:`EpsilonRandomizedResponseDpEvent`, which keeps ``epsilon`` exactly);
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
:class:`EpsilonRandomizedResponseDpEvent` is ``dp_accounting``'s randomized
response (its accountants compose it) that also keeps the budget it was built
at, so that the pure epsilon of a release is given back exactly.

Rounding
--------
An epsilon the accounting reports is a guarantee, so it is rounded up, never
to the nearest: :func:`pure_epsilon` and basic composition add and multiply
with upward rounding (:func:`add_up`, :func:`mul_up`), randomized response's
epsilon from its noise parameter is moved up past its float error, the noise
parameters of the built events are rounded down (less noise: the event's
epsilon is at least the budget) and the Laplace scale likewise.

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
>>> import dp_accounting
>>> e = events.pure_dp_event(1.0)
>>> isinstance(e, dp_accounting.RandomizedResponseDpEvent), e.num_buckets, e.epsilon
(True, 2, 1.0)
>>> events.pure_epsilon(e)
1.0
>>> events.from_json(events.to_json(e)) == e
True
>>> events.pure_epsilon(events.zcdp_event(0.5)) is None
True
"""

from __future__ import annotations

import json
import math
import sys
from fractions import Fraction
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
    "EpsilonRandomizedResponseDpEvent",
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


# ---------------------------------------------------------------- rounding up
# An epsilon the accounting reports is a guarantee: where a float operation rounds, the
# result is rounded up (to the next float above the exact value), never to the nearest.

def _up(x: float, steps: int = 1) -> float:
    """``x`` moved ``steps`` floats up (``inf`` and NaN stay)."""
    for _ in range(steps):
        x = math.nextafter(x, math.inf)
    return x


def _down(x: float, steps: int = 1) -> float:
    """``x`` moved ``steps`` floats down, not below 0."""
    for _ in range(steps):
        x = math.nextafter(x, 0.0)
    return x


def add_up(a: float, b: float) -> float:
    """``a + b`` rounded up: the smallest float >= the exact sum (non-negative operands).

    The nearest-rounded sum ``s`` misses the exact sum by ``e = (a - (s - bv)) + (b - bv)``
    with ``bv = s - a`` (Knuth's TwoSum, exact in binary floating point); when ``e > 0`` the
    exact sum is above ``s`` and the answer is the next float up.
    """
    s = a + b
    if not math.isfinite(s):
        return s
    bv = s - a
    err = (a - (s - bv)) + (b - bv)
    return math.nextafter(s, math.inf) if err > 0 else s


def mul_up(a: float, b: float) -> float:
    """``a * b`` rounded up (the smallest float >= the exact product; checked exactly)."""
    p = a * b
    if not math.isfinite(p) or p == 0:
        return p
    return math.nextafter(p, math.inf) if Fraction(p) < Fraction(a) * Fraction(b) else p


def _div_up(a: float, b: float) -> float:
    """``a / b`` rounded up (exact check)."""
    q = a / b
    if not math.isfinite(q) or q == 0:
        return q
    return math.nextafter(q, math.inf) if Fraction(q) < Fraction(a) / Fraction(b) else q


def _div_down(a: float, b: float) -> float:
    """``a / b`` rounded down (exact check)."""
    q = a / b
    if not math.isfinite(q) or q == 0:
        return q
    return math.nextafter(q, 0.0) if Fraction(q) > Fraction(a) / Fraction(b) else q


#: floats the noise parameter of randomized response is moved down from its computed value:
#: ``k t / (1 + (k - 1) t)`` with ``t = exp(-eps)`` is within 4 units of 2^-53 (relative)
#: of the exact value (exp: under 1 ulp, at most 2^-52 relative; four roundings of 2^-53
#: each; the parameter's sensitivity to t's error is at most 1), and each float down is at
#: least 2^-53 relative, so 6 floats down are below the exact parameter: less noise, so
#: the event's epsilon is at least the budget (the event still dominates the mechanism)
_RR_NOISE_STEPS_DOWN = 6
#: floats a randomized-response epsilon ``log1p(k (1 - p) / p)`` is moved up from its
#: computed value: ``k (1 - p) / p`` is within 2.5 * 2^-53 (relative) of exact, which moves
#: ``log1p`` by at most 2.5 * 2^-53 * x / (1 + x) <= 2.5 * 2^-53 * log1p(x) (under 2.5
#: ulps), and log1p itself errs by under one ulp: 4 floats up are above the exact epsilon
_RR_EPSILON_STEPS_UP = 4


def _rr_noise(eps: float, k: int) -> float:
    """Randomized response's noise parameter at ``eps``, rounded down (0 when e^-eps is not
    a normal float: randomized response at eps > 708 keeps its input, not private)."""
    t = math.exp(-eps)
    if t < sys.float_info.min:
        return 0.0
    return _down(k * t / (1 + (k - 1) * t), _RR_NOISE_STEPS_DOWN)


def _rr_epsilon_up(p: float, k: int) -> float:
    """The epsilon ``log(k / p - k + 1)`` of randomized response with noise ``p``, rounded up."""
    if k == 1 or p >= 1:
        return 0.0
    if p <= 0:
        return math.inf
    # k (1 - p) / p, not k / p - k: no cancellation when p is near 1 (small epsilons)
    return _up(math.log1p(k * (1 - p) / p), _RR_EPSILON_STEPS_UP)


@attr.s(frozen=True, slots=True, auto_attribs=True)
class EpsilonRandomizedResponseDpEvent(_dpe.RandomizedResponseDpEvent):
    """k-ary randomized response built at a budget ``epsilon``, which it keeps exactly.

    A ``dp_accounting`` :class:`~dp_accounting.RandomizedResponseDpEvent` (its
    accountants compose it by its ``noise_parameter`` and ``num_buckets``) that also
    holds the budget it was built at, so that the pure epsilon recovered from it
    (:func:`pure_epsilon`, basic composition in :class:`~fastldp.accounting.Accountant`)
    is that budget exactly. Recovering it from the noise parameter cannot be exact: near
    ``p = 1`` the floats ``p`` are 2^-53 apart, which is 2.2e-16 of epsilon, a hundred
    million ulps of a budget of 1e-8; and a recovered value rounds to either side.

    The noise parameter is rounded down (:func:`pure_dp_event`): the randomized response
    it describes is at least ``epsilon``-DP's worst case, so the PLD and RDP routes,
    which use it, stay valid. Built by :func:`pure_dp_event` and
    :func:`randomized_response_event`; a hand-made one whose noise parameter is above
    the budget's (more noise than ``epsilon`` allows, which would make those routes
    under-count) or far below it is refused.

    Examples
    --------
    >>> from fastldp.accounting import pure_dp_event
    >>> e = pure_dp_event(0.7)
    >>> e.epsilon, e.num_buckets, e.noise_parameter < 2 / (math.exp(0.7) + 1)
    (0.7, 2, True)
    """

    epsilon: float

    def __attrs_post_init__(self) -> None:
        owner = "EpsilonRandomizedResponseDpEvent"
        eps = check_float(self.epsilon, "epsilon", owner, low=0, high=math.inf,
                          low_open=False, high_open=True)
        k = check_int(self.num_buckets, "num_buckets", owner, low=2)
        p = check_float(self.noise_parameter, "noise_parameter", owner, low=0, high=1,
                        low_open=False, high_open=False)
        t = math.exp(-eps)
        exact = k * t / (1 + (k - 1) * t)  # within a few ulps of the exact parameter
        # at most the budget's parameter (its own rounding allowed), and close to it; 0
        # (no noise at all) dominates every mechanism
        if not (p == 0 or exact * (1 - 2.0 ** -40) <= p <= exact):
            raise param_error("noise_parameter", owner,
                              f"randomized response's noise at epsilon {eps!r} with {k} "
                              f"buckets, {exact!r} (rounded down)", p)


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

    The event is an :class:`EpsilonRandomizedResponseDpEvent`: the noise
    parameter is rounded down (the event's own epsilon is at least
    ``epsilon``) and ``epsilon`` is kept, so :func:`pure_epsilon` and basic
    composition give it back exactly.
    """
    eps = check_float(epsilon, "epsilon", "pure_dp_event", low=0, high=math.inf,
                      low_open=False, high_open=False)
    if math.isinf(eps):
        return _dpe.NonPrivateDpEvent()
    # 2 / (e^eps + 1), computed as 2 e^-eps / (1 + e^-eps): no overflow at a large eps;
    # rounded down, and the budget kept exactly (EpsilonRandomizedResponseDpEvent)
    return EpsilonRandomizedResponseDpEvent(_rr_noise(eps, 2), 2, eps)


def randomized_response_event(epsilon: float, k: int) -> DpEvent:
    """k-ary randomized response (GRR) at ``epsilon``: keep w.p. ``e^eps / (e^eps + k - 1)``.

    ``RandomizedResponseDpEvent(noise_parameter=k / (e^eps + k - 1), num_buckets=k)``:
    it outputs the input w.p. ``1 - p + p/k`` and each other value w.p. ``p/k``,
    so ``(1 - p + p/k) / (p/k) = e^eps``. An :class:`EpsilonRandomizedResponseDpEvent`
    (the noise rounded down, ``epsilon`` kept exactly).
    """
    owner = "randomized_response_event"
    eps = check_float(epsilon, "epsilon", owner, low=0, high=math.inf,
                      low_open=False, high_open=False)
    k = check_int(k, "k", owner, low=2)
    if math.isinf(eps):
        return _dpe.NonPrivateDpEvent()
    return EpsilonRandomizedResponseDpEvent(_rr_noise(eps, k), k, eps)


def laplace_event(epsilon: float) -> DpEvent:
    """A Laplace randomizer at ``epsilon`` (scale = sensitivity / eps): ``LaplaceDpEvent(1 / eps)``.

    ``1 / eps`` is rounded down (less noise), so the event's epsilon is at least ``epsilon``.
    """
    eps = check_float(epsilon, "epsilon", "laplace_event", low=0, high=math.inf, high_open=False)
    if math.isinf(eps):
        return _dpe.NonPrivateDpEvent()
    return _dpe.LaplaceDpEvent(noise_multiplier=_div_down(1.0, eps))


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

    Rounded up, never down (it is a guarantee): sums and products are rounded up
    exactly, randomized response's ``log1p(k (1 - p) / p)`` by a bound on its float
    error (a few ulps), and an :class:`EpsilonRandomizedResponseDpEvent`
    (:func:`pure_dp_event`) gives back its budget exactly.
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
    if isinstance(event, EpsilonRandomizedResponseDpEvent):
        return float(event.epsilon)  # the budget it was built at, exactly
    if isinstance(event, _dpe.RandomizedResponseDpEvent):
        return _rr_epsilon_up(float(event.noise_parameter), int(event.num_buckets))
    if isinstance(event, _dpe.LaplaceDpEvent):
        return _div_up(1.0, float(event.noise_multiplier))
    if isinstance(event, _dpe.DiscreteLaplaceDpEvent):
        return mul_up(float(event.noise_parameter), float(event.sensitivity))
    if isinstance(event, EpsilonDeltaDpEvent):
        return float(event.epsilon) if event.delta == 0 else None
    if isinstance(event, _dpe.SelfComposedDpEvent):
        inner = pure_epsilon(event.event)
        return None if inner is None else mul_up(inner, float(int(event.count)))
    if isinstance(event, _dpe.ComposedDpEvent):
        total = 0.0
        for e in event.events:
            inner = pure_epsilon(e)
            if inner is None:
                return None
            total = add_up(total, inner)
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
                                            DisjointGroupsDpEvent,
                                            EpsilonRandomizedResponseDpEvent)})
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
