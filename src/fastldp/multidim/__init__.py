"""Multi-attribute records: the frequency of every attribute (SPL, SMP, RSpFD).

Each user holds a record of ``A`` categorical attributes, attribute ``j``
in ``[0, k_j)``; the server estimates the count of every value of every
attribute. :class:`SPL` splits the budget over the attributes, :class:`SMP`
reports one sampled attribute with its index, :class:`RSpFD` reports the
sampled attribute and fake data for the others (Arcolezi et al., CIKM
2021). Each goes through the oracles of :mod:`fastldp.oracles`, decodes
from exact integer partials, and implements
:class:`fastldp.protocol.StreamingMechanism`.
"""

from ._frequency import (
    ORACLES, RSPFD_VARIANTS, SMP, SPL, MultiFrequencyEstimate, RSpFD, paper_budget,
)
from . import _channels  # noqa: F401  (registers the audit's channels of the classes above)

__all__ = ["SPL", "SMP", "RSpFD", "MultiFrequencyEstimate", "paper_budget", "ORACLES",
           "RSPFD_VARIANTS"]
