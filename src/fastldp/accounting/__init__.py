"""Privacy accounting across releases: every release's ``DpEvent`` and an :class:`Accountant`.

Built on Google's ``dp_accounting`` package (the optional extra
``fastldp[accounting]``: ``pip install 'fastldp[accounting]'``); importing
this package without it raises an ImportError that names the extra.

- :mod:`fastldp.accounting.events` - the event of each kind of release
  (pure epsilon as randomized response, Laplace, zCDP, RDP curves with a
  total variation term, bare ``(epsilon, delta)`` claims, rounds on disjoint
  groups), :func:`to_json` / :func:`from_json`;
- :mod:`fastldp.accounting.accountant` - :class:`Accountant`: basic
  composition for pure epsilon, RDP or PLD (the tighter) for approximate
  DP, parallel composition over declared disjoint groups.

A result gives its event with ``result.privacy.event()``
(:meth:`fastldp.results.PrivacyStatement.event`), a fitted regression model
with ``model.privacy_.event()``.

Examples
--------
>>> from fastldp.accounting import Accountant, pure_dp_event, zcdp_event
>>> acc = Accountant().add(pure_dp_event(1.0)).add(zcdp_event(0.02))
>>> round(acc.epsilon(1e-6), 3)
1.886
"""

from .events import (DisjointGroupsDpEvent, DpEvent, EpsilonDeltaDpEvent,
                     EpsilonRandomizedResponseDpEvent, RdpCurveEvent,
                     approximate_dp_event, compose, from_json, laplace_event, non_private_event,
                     pure_dp_event, pure_epsilon, randomized_response_event, to_json, zcdp_event)
from .accountant import DEFAULT_ORDERS, Accountant, delta_at, epsilon_at
from .ledger import (DEFAULT_DELTA, MAX_EPSILON, BudgetExceededError, Ledger,
                     LedgerDamagedError)

__all__ = [
    "Accountant",
    "epsilon_at",
    "delta_at",
    "DEFAULT_ORDERS",
    "DpEvent",
    "RdpCurveEvent",
    "EpsilonDeltaDpEvent",
    "DisjointGroupsDpEvent",
    "EpsilonRandomizedResponseDpEvent",
    "pure_dp_event",
    "randomized_response_event",
    "laplace_event",
    "zcdp_event",
    "approximate_dp_event",
    "non_private_event",
    "compose",
    "pure_epsilon",
    "to_json",
    "from_json",
    "Ledger",
    "BudgetExceededError",
    "LedgerDamagedError",
    "MAX_EPSILON",
    "DEFAULT_DELTA",
]
