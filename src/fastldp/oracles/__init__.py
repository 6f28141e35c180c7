"""Building blocks shared by the families: frequency oracles and scalar randomizers.

Frequency oracles (a categorical value in ``[0, domain_size)``, personal
budgets allowed; :mod:`.frequency`): :class:`GRR`, :class:`OLH`,
:class:`FLH`, :class:`HadamardResponse`, :class:`OUE`, :class:`SUE`.
Consistent post-processing of any estimate (Norm-Sub, projection, IBU...):
:mod:`.postprocess`.
Also :class:`SubsetSelection` and :class:`BLH`; :class:`AdaptiveOracle`
(:func:`make_oracle` with ``"auto"``) builds the one of smallest variance.
Histogram encoding :class:`SHE` and :class:`THE`, and one-time :class:`RAPPOR`;
:class:`DiscreteSHE`, SHE on a public grid with integer reports (an exact channel).
Scalar randomizers (a value in ``[-1, 1]``): :class:`Laplace`,
:class:`Piecewise`, :class:`Duchi`, :class:`Hybrid` (Piecewise or Duchi, Wang et
al. 2019), :class:`StochasticRounding`; :class:`DiscretePiecewise` (Piecewise on a
public grid: a finite channel) and ``Laplace(secure=True)`` (discrete noise on a grid).
"""

from ._base import CountChannel, FrequencyEstimate, FrequencyOracle
from .adaptive import AdaptiveOracle, make_oracle
from .blh import BLH
from .cms import CMS, HCMS, SketchEstimate
from .flh import FLH
from .frequency import FREQUENCY_ORACLES
from .grr import GRR
from .hadamard import HadamardResponse
from .histogram_encoding import SHE, THE
from .discrete_encoding import DiscreteSHE
from .olh import OLH
from .rappor import RAPPOR
from .subset import SubsetSelection
from .unary import OUE, SUE
from .randomizers import (
    RANDOMIZERS,
    DiscretePiecewise,
    Duchi,
    Hybrid,
    Laplace,
    Piecewise,
    Randomizer,
    StochasticRounding,
    make_randomizer,
    min_variance_randomizer,
)
from . import postprocess
from . import _channels  # noqa: F401  (registers the audit's channels of the classes above)

__all__ = [
    "GRR", "OLH", "FLH", "HadamardResponse", "OUE", "SUE", "FrequencyOracle",
    "FrequencyEstimate", "FREQUENCY_ORACLES", "CountChannel",
    "CMS", "HCMS", "SketchEstimate",
    "SubsetSelection", "BLH", "AdaptiveOracle", "make_oracle",
    "SHE", "THE", "RAPPOR", "DiscreteSHE",
    "Randomizer", "Laplace", "Piecewise", "DiscretePiecewise", "Duchi", "Hybrid",
    "StochasticRounding", "RANDOMIZERS", "make_randomizer",
    "min_variance_randomizer",
]
