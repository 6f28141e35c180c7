"""Compose the privacy events of many releases: basic, RDP or PLD, and parallel composition.

:class:`Accountant` holds events (:mod:`fastldp.accounting.events`), each in
a group of identities or in none (every identity), and reports the
``epsilon`` the composition guarantees at a target ``delta``
(:meth:`Accountant.epsilon`) and the ``delta`` at a target ``epsilon``
(:meth:`Accountant.delta`).

Which composition is used
-------------------------
The events of one group are reduced to a *profile*, five quantities that
compose by addition:

- ``pure``: the sum of the pure epsilons (basic composition), or none when
  an event is not pure (zCDP, Gaussian, an RDP curve, ``delta > 0``);
- ``rdp``: the Renyi-DP curve at a grid of orders, the sum of the events'
  curves (Mironov 2017, Proposition 1): Laplace and Gaussian by
  ``dp_accounting``'s :class:`~dp_accounting.rdp.RdpAccountant` (relation
  ``REPLACE_ONE``), randomized response by the same formula evaluated at
  every order at once, zCDP as ``rho alpha``,
  :class:`~fastldp.accounting.RdpCurveEvent` as given;
- ``pld``: the privacy loss distribution (``dp_accounting.pld``,
  pessimistic, discretization ``1e-4``) when every event has one (randomized
  response, Laplace, discrete Laplace, Gaussian); the composition is the
  convolution (Koskela et al. 2020; Doroshenko et al. 2022); skipped for a
  pure composition whose epsilons sum above 20, where it is slow and gains
  almost nothing on the sum;
- ``E, D``: the epsilons and deltas of :class:`~fastldp.accounting.EpsilonDeltaDpEvent`
  claims with ``delta > 0``, added (basic composition);
- ``T``: the total variation terms of RDP curves, added.

At ``delta = 0`` the answer is ``pure`` (``inf`` when an event is not
pure). At ``delta > 0`` every route that applies gives a valid bound and the
smallest is reported (and named by :meth:`Accountant.epsilon_and_method`):

- basic: ``pure`` (valid at any delta);
- PLD: ``pld.get_epsilon_for_delta(delta)``;
- RDP: the smallest ``eps`` with ``delta_R(eps - E) + D + (1 + e^eps) T <=
  delta``, where ``delta_R`` converts the curve with Canonne, Kamath and
  Steinke (2020) / Asoodeh et al. (2020), Proposition 12:
  ``eps_R(delta) = min_alpha rdp(alpha) + log((alpha - 1) / alpha) -
  (log delta + log alpha) / (alpha - 1)``
  (``dp_accounting.rdp.rdp_privacy_accountant.compute_epsilon``).

So pure-epsilon compositions get the smaller of the sum and the PLD bound
(the PLD bound wins for many releases at ``delta > 0``); compositions with a
zCDP release or a shuffle sum go through RDP.

Parallel composition
--------------------
Events added with ``group=g`` concern only the identities of group ``g``;
the groups a user declares must be disjoint (the accountant cannot check
it). Events added without a group concern everyone. An identity in group
``g`` is charged the events of ``g`` and the ungrouped events, so the
guarantee for all identities is the maximum over the groups (McSherry,
"Privacy Integrated Queries", SIGMOD 2009, Theorem 4). Rounds of one
protocol on disjoint users (U2R's stages) are one
:class:`~fastldp.accounting.DisjointGroupsDpEvent` instead.

Neighbouring relation
---------------------
Each event states its release's guarantee for its own unit (one report in
local DP, one party in the shuffle sums, add-or-remove of one person for
the histograms). Composing them bounds the loss of an identity whose data
changes in each release in the way that release's unit allows; choosing
releases whose units fit the identity is the user's part.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Hashable, Iterable, Optional

import numpy as np
from scipy.special import logsumexp as _logsumexp

from .._validation import check_float, check_int, param_error
from . import events as ev

from dp_accounting import dp_event as _dpe
from dp_accounting.pld import privacy_loss_distribution as _pld
from dp_accounting.rdp import rdp_privacy_accountant as _rdp

__all__ = ["Accountant", "epsilon_at", "delta_at", "DEFAULT_ORDERS"]

#: the Renyi orders of the RDP route: dp_accounting's default grid, integers up to 256 and
#: a geometric tail to 2^20 (the optimal order grows like log(1/delta) / eps); an RDP curve
#: event adds its own orders
DEFAULT_ORDERS = np.unique(np.concatenate([
    np.asarray(_rdp.DEFAULT_RDP_ORDERS, dtype=np.float64),
    np.arange(2.0, 257.0), np.round(np.geomspace(256, 2.0 ** 20, 40))]))

#: PLD discretization of the privacy loss (dp_accounting's default)
_PLD_INTERVAL = 1e-4
#: composing more PLDs than this (after grouping equal events) is slow: the PLD route is
#: skipped beyond it (the others still apply)
_PLD_MAX_DISTINCT = 64
#: the PLD route is skipped for a pure composition whose epsilons sum above this: its support
#: (sum / discretization points) makes it slow, and there it gains almost nothing on the sum
_PLD_MAX_PURE = 20.0
_PLD_CACHE: dict = {}

_REPLACE_ONE = _rdp.NeighborRel.REPLACE_ONE


@dataclass(frozen=True)
class _Profile:
    pure: Optional[float]            # basic composition of pure epsilons, None if not pure
    rdp: np.ndarray                  # at the accountant's orders
    pld: Optional[list]              # [(leaf event, count)] whose PLDs compose, None if not all
    E: float = 0.0                   # sum of epsilons of (eps, delta > 0) claims
    D: float = 0.0                   # sum of their deltas
    T: float = 0.0                   # sum of total variation terms

    # the sums and products of the guarantees (pure, E, D, T) are rounded up, never to the
    # nearest: an accountant's epsilon is never below the exact composition of its inputs
    def __add__(self, other: "_Profile") -> "_Profile":
        pure = None if self.pure is None or other.pure is None else ev.add_up(self.pure,
                                                                              other.pure)
        pld = None if self.pld is None or other.pld is None else self.pld + other.pld
        return _Profile(pure, self.rdp + other.rdp, pld, ev.add_up(self.E, other.E),
                        ev.add_up(self.D, other.D), ev.add_up(self.T, other.T))

    def times(self, count: int) -> "_Profile":
        if count == 0:  # not run: nothing spent (inf * 0 would be NaN)
            return _Profile(0.0, np.zeros_like(self.rdp), [])
        pld = None if self.pld is None else [(e, c * count) for e, c in self.pld]
        c = float(count)
        return _Profile(None if self.pure is None else ev.mul_up(self.pure, c), self.rdp * count,
                        pld, ev.mul_up(self.E, c), ev.mul_up(self.D, c), ev.mul_up(self.T, c))

    @staticmethod
    def worst(parts: list) -> "_Profile":
        pures = [p.pure for p in parts]
        pure = None if any(q is None for q in pures) else max(pures)  # type: ignore[type-var]
        return _Profile(pure, np.max([p.rdp for p in parts], axis=0), None,
                        max(p.E for p in parts), max(p.D for p in parts),
                        max(p.T for p in parts))


def _rr_rdp(event: Any, orders: np.ndarray) -> np.ndarray:
    """Randomized response's RDP (REPLACE_ONE), dp_accounting's formula over all orders at once.

    ``log(w1 r^a + w2 r^-a + w3) / (a - 1)`` with ``r = k/p - k + 1`` the likelihood ratio and
    weights ``p/k``, ``1 - p + p/k``, ``(1 - 2/k) p``
    (``rdp_privacy_accountant._randomized_response_rdp_replace_one``, one order at a time).
    """
    p, k = float(event.noise_parameter), int(event.num_buckets)
    if k == 1 or p == 1:
        return np.zeros_like(orders)
    if p == 0:
        return np.full_like(orders, np.inf)
    log_r = math.log1p(k / p - k)
    terms = np.stack([orders * log_r, -orders * log_r, np.zeros_like(orders)])
    weights = np.array([p / k, 1 - p + p / k, (1 - 2 / k) * p])[:, None]
    return np.asarray(_logsumexp(terms, axis=0, b=weights) / (orders - 1), dtype=np.float64)


def _rdp_of(event: Any, orders: np.ndarray) -> np.ndarray:
    if isinstance(event, _dpe.RandomizedResponseDpEvent):
        return _rr_rdp(event, orders)
    acc = _rdp.RdpAccountant(orders=orders, neighboring_relation=_REPLACE_ONE)
    acc.compose(event)
    return np.asarray(acc.rdp, dtype=np.float64)


def _leaf(event: Any, orders: np.ndarray) -> _Profile:
    """The profile of one event that is not a composition."""
    zero = np.zeros_like(orders)
    if isinstance(event, _dpe.NoOpDpEvent):
        return _Profile(0.0, zero, [])
    if isinstance(event, _dpe.NonPrivateDpEvent):
        return _Profile(math.inf, zero + np.inf, None)
    if isinstance(event, (_dpe.RandomizedResponseDpEvent, _dpe.LaplaceDpEvent)):
        return _Profile(ev.pure_epsilon(event), _rdp_of(event, orders), [(event, 1)])
    if isinstance(event, _dpe.DiscreteLaplaceDpEvent):
        # no RDP formula in dp_accounting: binary randomized response at its epsilon dominates
        eps = ev.mul_up(float(event.noise_parameter), float(event.sensitivity))
        return _Profile(eps, _rdp_of(ev.pure_dp_event(eps), orders), [(event, 1)])
    if isinstance(event, _dpe.GaussianDpEvent):
        return _Profile(None, _rdp_of(event, orders), [(event, 1)])
    if isinstance(event, _dpe.ZCDpEvent):
        return _Profile(None, _rdp_of(event, orders), None)
    if isinstance(event, ev.EpsilonDeltaDpEvent):
        eps = check_float(event.epsilon, "epsilon", "EpsilonDeltaDpEvent", low=0, high=math.inf,
                          low_open=False, high_open=False)
        delta = check_float(event.delta, "delta", "EpsilonDeltaDpEvent", low=0, high=1,
                            low_open=False, high_open=False)
        if delta == 0:
            return _leaf(ev.pure_dp_event(eps), orders)
        return _Profile(None, zero, None, E=eps, D=delta)
    if isinstance(event, ev.RdpCurveEvent):
        return _Profile(None, event.at(orders), None, T=float(event.tv))
    if isinstance(event, ev.DisjointGroupsDpEvent):
        if not event.events:
            return _Profile(0.0, zero, [])
        return _Profile.worst([_profile(e, orders) for e in event.events])
    if isinstance(event, _dpe.DpEvent):
        acc = _rdp.RdpAccountant(orders=orders, neighboring_relation=_REPLACE_ONE)
        if acc.supports(event):  # e.g. a Poisson-subsampled Gaussian
            return _Profile(None, _rdp_of(event, orders), None)
    raise ValueError(f"Accountant: the event {event!r} is not supported (fastldp.accounting "
                     f"composes randomized response, Laplace, discrete Laplace, Gaussian, zCDP, "
                     f"EpsilonDeltaDpEvent, RdpCurveEvent, DisjointGroupsDpEvent and their "
                     f"compositions).")


#: leaf profiles already computed, by (event JSON, orders): the RDP of randomized response
#: takes tens of milliseconds over the default orders, and a ledger asks for the same
#: events again and again
_LEAF_CACHE: dict = {}
_LEAF_CACHE_SIZE = 4096


def _cached_leaf(event: Any, orders: np.ndarray) -> _Profile:
    key = (ev.to_json(event), orders.tobytes())
    found = _LEAF_CACHE.get(key)
    if found is None:
        found = _leaf(event, orders)
        if len(_LEAF_CACHE) >= _LEAF_CACHE_SIZE:
            _LEAF_CACHE.clear()
        _LEAF_CACHE[key] = found
    return found


def _profile(event: Any, orders: np.ndarray) -> _Profile:
    total = _Profile(0.0, np.zeros_like(orders), [])
    for leaf, count in ev.flatten(event):
        total = total + _cached_leaf(leaf, orders).times(count)
    return total


def _event_of(event: Any) -> Any:
    """The event a result's privacy statement (or the statement) states; any other object as is.

    Read by duck typing (a result has ``privacy``, a statement has ``event()``), so that
    accounting, below the results in the package, imports nothing of them.
    """
    if hasattr(event, "privacy") and not isinstance(event, type):  # a result
        statement = event.privacy
        if not callable(getattr(statement, "event", None)):
            raise param_error("event", "Accountant.add", "a DpEvent, or a result that states "
                              "its privacy", event, TypeError)
        return statement.event()
    if callable(getattr(event, "event", None)):  # a privacy statement
        return event.event()
    return event


def _check_supported(event: Any, owner: str) -> None:
    ev.check_event(event, owner)
    _profile(event, np.array([2.0]))  # raises on an unsupported leaf or a bad field


# ---------------------------------------------------------------- conversions
def _pld_of(items: list) -> Any:
    """The composed PLD of ``[(leaf, count)]``, equal leaves grouped; None if too many kinds."""
    counts: dict = {}
    for e, c in items:
        key = ev.to_json(e)
        counts[key] = (e, counts.get(key, (e, 0))[1] + c)
    if len(counts) > _PLD_MAX_DISTINCT:
        return None
    cache_key = tuple(sorted((k, c) for k, (_, c) in counts.items()))
    if cache_key in _PLD_CACHE:
        return _PLD_CACHE[cache_key]
    if len(_PLD_CACHE) >= 256:
        _PLD_CACHE.clear()
    out = _PLD_CACHE[cache_key] = _compose_pld(list(counts.values()))
    return out


def _compose_pld(counts: list) -> Any:
    out = _pld.identity(value_discretization_interval=_PLD_INTERVAL)
    for e, c in counts:
        if c == 0:
            continue
        if isinstance(e, _dpe.RandomizedResponseDpEvent):
            one = _pld.from_randomized_response(
                e.noise_parameter, e.num_buckets, value_discretization_interval=_PLD_INTERVAL,
                neighboring_relation=_REPLACE_ONE)
        elif isinstance(e, _dpe.LaplaceDpEvent):
            one = _pld.from_laplace_mechanism(e.noise_multiplier, sensitivity=1,
                                              value_discretization_interval=_PLD_INTERVAL)
        elif isinstance(e, _dpe.DiscreteLaplaceDpEvent):
            one = _pld.from_discrete_laplace_mechanism(
                e.noise_parameter, sensitivity=int(e.sensitivity),
                value_discretization_interval=_PLD_INTERVAL)
        elif isinstance(e, _dpe.GaussianDpEvent):
            one = _pld.from_gaussian_mechanism(e.noise_multiplier, sensitivity=1,
                                               value_discretization_interval=_PLD_INTERVAL)
        else:  # pragma: no cover - _leaf only lists the four above
            return None
        out = out.compose(one.self_compose(c) if c > 1 else one)
    return out


def _meeting(epsilon: float, delta: float, delta_at) -> float:
    """``epsilon`` stepped up (1, 2, 4, ... ulps) until ``delta_at(epsilon) <= delta``.

    A route's epsilon comes from a float formula (dp_accounting's ``compute_epsilon``, the
    PLD's ``log((mass_upper - delta) / mass_lower)``) that may round below the smallest
    epsilon its own condition accepts; the answer is one that meets the condition as
    the route computes it (``inf`` if none within 60 steps).
    """
    start = epsilon
    for i in range(64):
        if not math.isfinite(epsilon):
            return math.inf
        if delta_at(epsilon) <= delta:
            return epsilon
        epsilon = ev.add_up(start, math.ulp(start) * 2.0 ** i)
    return math.inf


def _rdp_epsilon(p: _Profile, orders: np.ndarray, delta: float) -> float:
    """The RDP route: the smallest eps with delta_R(eps - E) + D + (1 + e^eps) T <= delta."""
    def eps_r(budget: float) -> float:
        if budget <= 0:  # no delta left for the RDP part: only a zero curve costs nothing
            return 0.0 if budget == 0 and np.all(p.rdp == 0) else math.inf
        return float(_rdp.compute_epsilon(orders, p.rdp, min(budget, 1.0))[0])

    avail = delta - p.D
    if p.T == 0:
        eps = ev.add_up(p.E, eps_r(avail))
    else:
        # increasing fixed-point iteration from below (the term (1 + e^eps) T grows with eps)
        eps = ev.add_up(p.E, eps_r(avail - 2 * p.T))
        for _ in range(200):
            if not math.isfinite(eps):
                return math.inf
            nxt = ev.add_up(p.E, eps_r(avail - (1 + math.exp(eps)) * p.T))
            if nxt <= eps * (1 + 1e-12) + 1e-15:
                eps = max(eps, nxt)
                break
            eps = nxt
    # the answer must meet the condition (as computed): step up until it does
    return _meeting(eps, delta, lambda e: _rdp_delta(p, orders, e))


def _rdp_delta(p: _Profile, orders: np.ndarray, epsilon: float) -> float:
    if epsilon < p.E:
        return 1.0
    if not math.isfinite(epsilon):
        return 0.0 if p.T == 0 and p.D == 0 else 1.0
    rest = epsilon - p.E
    d_r = float(_rdp.compute_delta(orders, p.rdp, rest)[0])
    if p.T == 0:  # no total variation term (and no e^eps to overflow above 709.78)
        return min(1.0, d_r + p.D)
    return 1.0 if epsilon > 709.0 else min(1.0, d_r + p.D + (1 + math.exp(epsilon)) * p.T)


def _epsilon(p: _Profile, orders: np.ndarray, delta: float) -> tuple[float, str]:
    if delta == 0:
        if p.pure is not None:
            return p.pure, "basic"
        return math.inf, "none"
    routes = []
    if p.pure is not None:
        routes.append((p.pure, "basic"))
        if math.isinf(p.pure):
            return math.inf, "basic"
    if p.pld and (p.pure is None or p.pure <= _PLD_MAX_PURE):  # None: no PLD; []: no-ops
        pld = _pld_of(p.pld)
        if pld is not None:
            found = max(0.0, float(pld.get_epsilon_for_delta(delta)))
            routes.append((_meeting(found, delta, pld.get_delta_for_epsilon), "PLD"))
    routes.append((_rdp_epsilon(p, orders, delta), "RDP"))
    return min(routes, key=lambda r: r[0])


def _delta(p: _Profile, orders: np.ndarray, epsilon: float) -> tuple[float, str]:
    routes = []
    if p.pure is not None and epsilon >= p.pure:
        return 0.0, "basic"
    if p.pld and (p.pure is None or p.pure <= _PLD_MAX_PURE):
        pld = _pld_of(p.pld)
        if pld is not None:
            routes.append((min(1.0, float(pld.get_delta_for_epsilon(epsilon))), "PLD"))
    routes.append((_rdp_delta(p, orders, epsilon), "RDP"))
    return min(routes, key=lambda r: r[0])


# ---------------------------------------------------------------- the accountant
class Accountant:
    """Compose the privacy events of many releases (see the module docstring for the rules).

    Parameters
    ----------
    orders : array_like, optional
        The Renyi orders of the RDP route (each > 1); default
        :data:`DEFAULT_ORDERS`. The orders of every :class:`~fastldp.accounting.RdpCurveEvent`
        added are used too.

    Attributes
    ----------
    entries : list of (DpEvent, count, group)
        What was added, in order.

    Examples
    --------
    Basic composition of pure epsilons (an OLH release and a JPRS release):

    >>> from fastldp.accounting import Accountant, pure_dp_event, zcdp_event
    >>> acc = Accountant().add(pure_dp_event(1.0)).add(pure_dp_event(0.5))
    >>> round(acc.epsilon(), 12)
    1.5

    With a zCDP release, (epsilon, delta) through RDP:

    >>> acc.add(zcdp_event(0.01))
    Accountant(3 events, no groups)
    >>> acc.epsilon()
    inf
    >>> 1.5 < acc.epsilon(1e-6) < 1.5 + 0.01 + 2 * (0.01 * 13.82) ** 0.5
    True

    Parallel composition: disjoint groups, the worst one counts:

    >>> par = Accountant()
    >>> par.add(pure_dp_event(1.0), group="EU").add(pure_dp_event(2.0), group="US")
    Accountant(2 events, 2 groups)
    >>> round(par.epsilon(), 12), par.worst_group()
    (2.0, 'US')
    """

    def __init__(self, *, orders: Any = None) -> None:
        if orders is None:
            self._orders = DEFAULT_ORDERS.copy()
        else:
            a = np.asarray(orders, dtype=np.float64).ravel()
            if a.size == 0 or not np.all(a > 1) or not np.all(np.isfinite(a)):
                raise param_error("orders", "Accountant", "finite Renyi orders > 1", orders)
            self._orders = np.unique(a)
        self.entries: list = []

    # ------------------------------------------------------------ adding
    def add(self, event: Any, *, group: Optional[Hashable] = None,
            count: int = 1) -> "Accountant":
        """Add ``count`` runs of ``event`` for the identities of ``group`` (all when None).

        ``event`` is a ``DpEvent``, or a result (any family's, one read back
        by :func:`fastldp.reports.load_result` too) or a
        :class:`~fastldp.results.PrivacyStatement`, which stand for the
        statement's :meth:`~fastldp.results.PrivacyStatement.event`.
        Returns the accountant (calls chain). Raises TypeError on another
        object and ValueError on an event the accountant cannot compose
        (checked now, not at the query).
        """
        event = _event_of(event)
        _check_supported(event, "Accountant.add")
        count = check_int(count, "count", "Accountant.add", low=0)
        if group is not None:
            try:
                hash(group)
            except TypeError:
                raise param_error("group", "Accountant.add", "a hashable label or None", group,
                                  TypeError) from None
        self.entries.append((event, count, group))
        return self

    def compose(self, events: Iterable[Any], *, group: Optional[Hashable] = None) -> "Accountant":
        """Add every event of ``events`` (sequential composition) for ``group``."""
        for e in events:
            self.add(e, group=group)
        return self

    # ------------------------------------------------------------ queries
    @property
    def groups(self) -> list:
        """The declared groups, in the order first added (None, the ungrouped, not listed)."""
        seen: dict = {}
        for _, _, g in self.entries:
            if g is not None:
                seen.setdefault(g, None)
        return list(seen)

    def _orders_now(self) -> np.ndarray:
        extra = [np.asarray(leaf.orders) for e, _, _ in self.entries
                 for leaf in _curves(e)]
        return np.unique(np.concatenate([self._orders, *extra])) if extra else self._orders

    def _profiles(self) -> dict:
        orders = self._orders_now()
        base = _Profile(0.0, np.zeros_like(orders), [])
        everyone = base
        named: dict = {}
        for e, c, g in self.entries:
            prof = _profile(e, orders).times(c)
            if g is None:
                everyone = everyone + prof
            else:
                named[g] = named.get(g, base) + prof
        if not named:
            return {None: everyone}
        return {g: everyone + p for g, p in named.items()}

    def epsilon_and_method(self, delta: float = 0.0) -> tuple[float, str, Optional[Hashable]]:
        """``(epsilon, route, group)``: the guarantee at ``delta``, its route and the worst group.

        ``route`` is ``"basic"``, ``"PLD"``, ``"RDP"`` (the route that gave the
        smallest bound in the worst group) or ``"none"`` (nothing is
        guaranteed at ``delta = 0`` for an event that is not pure).
        """
        delta = check_float(delta, "delta", "Accountant.epsilon", low=0, high=1,
                            low_open=False, high_open=True)
        orders = self._orders_now()
        worst: tuple = (-1.0, "basic", None)
        for g, p in self._profiles().items():
            eps, route = _epsilon(p, orders, delta)
            if eps > worst[0]:
                worst = (eps, route, g)
        return (max(0.0, worst[0]), worst[1], worst[2])

    def epsilon(self, delta: float = 0.0) -> float:
        """The epsilon every identity's releases compose to, at ``delta`` (``0`` by default)."""
        return self.epsilon_and_method(delta)[0]

    def delta(self, epsilon: float) -> float:
        """The smallest delta the composition guarantees at ``epsilon`` (max over the groups)."""
        epsilon = check_float(epsilon, "epsilon", "Accountant.delta", low=0, high=math.inf,
                              low_open=False, high_open=False)
        orders = self._orders_now()
        return max(_delta(p, orders, epsilon)[0] for p in self._profiles().values())

    def worst_group(self, delta: float = 0.0) -> Optional[Hashable]:
        """The group whose composition is the largest at ``delta`` (None: no groups)."""
        return self.epsilon_and_method(delta)[2]

    # ------------------------------------------------------------ text
    def __repr__(self) -> str:
        n = sum(c for _, c, _ in self.entries)
        k = len(self.groups)
        groups = "no groups" if k == 0 else f"{k} group{'s' if k != 1 else ''}"
        return f"Accountant({n} event{'s' if n != 1 else ''}, {groups})"

    def summary(self, delta: float = 1e-6) -> str:
        """A few lines: per group, the events, epsilon at ``delta = 0`` and at ``delta``, the route.

        Examples
        --------
        >>> from fastldp.accounting import Accountant, pure_dp_event
        >>> print(Accountant().add(pure_dp_event(0.1), count=100).summary(1e-6))
        Accountant: 100 events, no groups
        group        events  epsilon (delta=0)  epsilon (delta=1e-06)  route
        (everyone)      100                 10                4.78201  PLD
        """
        delta = check_float(delta, "delta", "Accountant.summary", low=0, high=1,
                            low_open=False, high_open=True)
        orders = self._orders_now()
        profiles = self._profiles()
        counts: dict = {}
        for _, c, g in self.entries:
            counts[g] = counts.get(g, 0) + c
        lines = [repr(self).replace("Accountant(", "Accountant: ").rstrip(")"),
                 f"{'group':<12} {'events':>6} {'epsilon (delta=0)':>18} "
                 f"{'epsilon (delta=' + format(delta, 'g') + ')':>22}  route"]
        for g, p in profiles.items():
            n = counts.get(None, 0) + (counts.get(g, 0) if g is not None else 0)
            e0, _ = _epsilon(p, orders, 0.0)
            e1, route = _epsilon(p, orders, delta)
            label = "(everyone)" if g is None else str(g)
            lines.append(f"{label[:12]:<12} {n:>6} {_fmt(e0):>18} {_fmt(e1):>22}  {route}")
        return "\n".join(lines)


def _fmt(x: float) -> str:
    if math.isfinite(x) and abs(x - round(x)) < 1e-9 * max(1.0, abs(x)):
        return str(int(round(x)))
    return f"{x:.6g}"


def _curves(event: Any) -> list:
    """Every RdpCurveEvent inside ``event``."""
    if isinstance(event, ev.RdpCurveEvent):
        return [event]
    if isinstance(event, _dpe.SelfComposedDpEvent):
        return _curves(event.event)
    if isinstance(event, (_dpe.ComposedDpEvent, ev.DisjointGroupsDpEvent)):
        return [c for e in event.events for c in _curves(e)]
    return []


def epsilon_at(events: Iterable[Any], delta: float = 0.0) -> float:
    """The epsilon of the sequential composition of ``events`` at ``delta`` (one group).

    ``Accountant().compose(events).epsilon(delta)``.
    """
    return Accountant().compose(events).epsilon(delta)


def delta_at(events: Iterable[Any], epsilon: float) -> float:
    """The delta of the sequential composition of ``events`` at ``epsilon``."""
    return Accountant().compose(events).delta(epsilon)
