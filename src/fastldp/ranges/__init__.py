"""Ordinal and numeric data: range counts, CDFs and quantiles under local differential privacy.

Every user holds a value in an ordered domain ``[0, D)``; the server
answers "how many fall in ``[a, b]``" for many ranges at once, the CDF and
quantiles. :class:`FlatRange` is the baseline (one oracle over the domain,
ranges as sums); :class:`HierarchicalHistogram` reports a ``B``-ary tree of
intervals, one oracle per level, and makes the tree consistent (Cormode,
Kulkarni, Srivastava, VLDB 2019; Hay et al. 2010); :class:`HaarHRR` reports
the Haar wavelet coefficients by Hadamard randomized response (the same
paper). They return a
:class:`RangeEstimate` (``range_count``, ``cdf``, ``quantile``), decode from
exact integer partials, and implement
:class:`fastldp.protocol.StreamingMechanism`.
"""

from ._base import RangeEstimate, quantile_from_cdf
from .flat import FlatRange
from .hierarchical import (SPLITS, HierarchicalEstimate, HierarchicalHistogram,
                           optimal_level_weights)
from ._protocol import ORACLES, OUE_MAX_BITS
from .square_wave import SquareWave, SquareWaveEstimate
from . import _sw_channels  # noqa: F401  (registers the audit's channels of SquareWave)
from . import _channels  # noqa: F401  (registers the audit's channels of the classes above)
from .haar import HaarEstimate, HaarHRR

__all__ = ["RangeEstimate", "FlatRange", "HierarchicalHistogram", "HierarchicalEstimate",
           "quantile_from_cdf", "ORACLES", "OUE_MAX_BITS", "SPLITS", "SquareWave",
           "SquareWaveEstimate", "HaarHRR", "HaarEstimate"]
