"""Building blocks shared by the families: frequency oracles and scalar randomizers.

Frequency oracles (a categorical value in ``[0, domain_size)``, personal
budgets allowed): :class:`GRR`, :class:`OLH`, :class:`HadamardResponse`.
Scalar randomizers (a value in ``[-1, 1]``): :class:`Laplace`,
:class:`Piecewise`, :class:`Duchi`.
"""

from .frequency import GRR, OLH, HadamardResponse
from .randomizers import (
    RANDOMIZERS,
    Duchi,
    Laplace,
    Piecewise,
    Randomizer,
    make_randomizer,
    min_variance_randomizer,
)

__all__ = [
    "GRR", "OLH", "HadamardResponse",
    "Randomizer", "Laplace", "Piecewise", "Duchi", "RANDOMIZERS", "make_randomizer",
    "min_variance_randomizer",
]
