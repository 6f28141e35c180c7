"""Building blocks shared by the families: frequency oracles and scalar randomizers.

Frequency oracles (a categorical value in ``[0, domain_size)``, personal
budgets allowed; :mod:`.frequency`): :class:`GRR`, :class:`OLH`,
:class:`FLH`, :class:`HadamardResponse`, :class:`OUE`, :class:`SUE`.
Scalar randomizers (a value in ``[-1, 1]``): :class:`Laplace`,
:class:`Piecewise`, :class:`Duchi`.
"""

from ._base import FrequencyEstimate, FrequencyOracle
from .flh import FLH
from .frequency import FREQUENCY_ORACLES
from .grr import GRR
from .hadamard import HadamardResponse
from .olh import OLH
from .unary import OUE, SUE
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
    "GRR", "OLH", "FLH", "HadamardResponse", "OUE", "SUE", "FrequencyOracle",
    "FrequencyEstimate", "FREQUENCY_ORACLES",
    "Randomizer", "Laplace", "Piecewise", "Duchi", "RANDOMIZERS", "make_randomizer",
    "min_variance_randomizer",
]
