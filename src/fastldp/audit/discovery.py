"""The channels the audit runs: those of every class :func:`fastldp.protocol.audited_classes` finds.

The audit knows no family: each family describes its randomizers in its own
folder and answers ``channels(epsilon)`` on its classes
(:mod:`fastldp.channels`); :func:`discovered` asks every audited class, in
the order the families export them, and refuses a name given twice.
"""

from __future__ import annotations

from ..channels import Channel
from ..protocol import audited_classes

__all__ = ["discovered"]


def discovered(epsilon: float = 1.0) -> list[Channel]:
    """Every audited class's channels and negative controls at claimed ``epsilon``.

    A negative control is a channel with ``control_of`` set (and
    ``expect_violation``); a name given by two classes is a ``ValueError``
    naming both.
    """
    found: list[Channel] = []
    owner: dict[str, str] = {}
    for cls in audited_classes():
        for ch in cls.channels(epsilon):
            if not isinstance(ch, Channel):
                raise TypeError(f"{cls.__name__}.channels must return fastldp.channels.Channel "
                                f"objects; got {type(ch).__name__}")
            if ch.name in owner:
                raise ValueError(f"the audit channel {ch.name!r} is given by both "
                                 f"{owner[ch.name]}.channels and {cls.__name__}.channels")
            if ch.expect_violation != (ch.control_of is not None):
                raise ValueError(f"{cls.__name__}.channels: {ch.name!r} must set both "
                                 f"expect_violation and control_of (a negative control) or "
                                 f"neither (a channel)")
            owner[ch.name] = cls.__name__
            found.append(ch)
    return found
