"""Negative controls: deliberately faulty copies of the channels that the audit must flag.

Two sources, so that every part of the audit is shown to bite:

* *law faults*, planted here in every exact and empirical channel: the
  mechanism is built at :data:`LAW_FACTOR` times the budget it claims (for
  PrivKVM's round-1 channel, times its round budget), so its exact law, read
  from its public parameters, exceeds ``e^eps`` and the exact audit fails
  (for continuous channels the distinguishing test does);
* the families' own controls, registered beside their channels
  (``channels(epsilon)`` of their classes, :mod:`fastldp.channels`), each
  naming the channel it is a faulty copy of (``control_of``):

  - *sampler faults* - the public parameters are honest but ``privatize``
    draws with less noise than its law (a subclass): the exact law passes
    and only the sampler check can catch it (e.g. :mod:`fastldp.oracles._channels`);
  - *noise faults* of the shuffle protocols, noise calibrated at several
    times the claimed eps, and *protocol faults* no order-free statistic
    shows: an unpermuting shuffler, unmasked shares
    (:mod:`fastldp.regression._shuffle_channels`);
  - faults of the regression baselines' randomizers and of whole fits
    (:mod:`fastldp.regression._channels`);
  - *memo faults* of the longitudinal protocols: a client that skips its
    memo, caught by an empirical audit of many reports of one value
    (:mod:`fastldp.longitudinal._channels`);
  - the textbook double-precision Laplace of Mironov (2012), audited
    through its low-order bits (:mod:`.mironov`).

Each control's ``expect_violation`` is True; :func:`fastldp.audit.audit_all`
with ``controls=True`` reports whether it was caught.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Iterable

from ..channels import LAW_FACTOR, Channel
from .discovery import discovered

__all__ = ["negative_controls", "law_faults", "LAW_FACTOR"]


def law_faults(channels: Iterable[Channel]) -> list[Channel]:
    """``control:<name>@1.5eps`` of every exact and empirical channel: built at
    :data:`LAW_FACTOR` times its own claim, claiming it."""
    return [replace(ch, name=f"control:{ch.name}@{LAW_FACTOR:g}eps",
                    description=f"{ch.name} built at {LAW_FACTOR:g} eps, claiming eps",
                    mechanism_epsilon=LAW_FACTOR * ch.epsilon, expect_violation=True,
                    control_of=ch.name)
            for ch in channels if ch.kind not in ("zcdp", "shuffle", "fit")]


def negative_controls(epsilon: float = 1.0) -> dict[str, Channel]:
    """Every control, by name (``control:<what>``); each must be flagged."""
    found = discovered(epsilon)
    out = law_faults(ch for ch in found if ch.control_of is None)
    out += [ch for ch in found if ch.control_of is not None]
    return {ch.name: ch for ch in out}
