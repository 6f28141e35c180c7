"""Multi-attribute records: the frequency of every attribute, and the mean of numeric vectors.

Each user holds a record of ``A`` categorical attributes, attribute ``j``
in ``[0, k_j)``; the server estimates the count of every value of every
attribute. :class:`SPL` splits the budget over the attributes, :class:`SMP`
reports one sampled attribute with its index, :class:`RSpFD` reports the
sampled attribute and fake data for the others (Arcolezi et al., CIKM
2021); ``oracle="auto"`` / ``variant="auto"`` choose per attribute the
oracle of least variance. Each goes through the oracles of
:mod:`fastldp.oracles`, decodes from exact integer partials, and implements
:class:`fastldp.protocol.StreamingMechanism`.

For numeric vectors in ``[-1, 1]^d``, :class:`SampledMean` reports ``k``
sampled dimensions through Hybrid (the default), Piecewise or Duchi at
``epsilon / k`` (Wang et al., ICDE 2019; :func:`optimal_k`), and
:class:`SplitMean`, the baseline, every dimension at ``epsilon / d``. :class:`FullDomain`, the baseline of
marginal release, reports the whole record as one symbol of the cross
product and gives the marginal of any set of attributes. :class:`CALM`
reports one marginal per group of users and makes them consistent (Zhang
et al., CCS 2018); :class:`InpRR`, :class:`InpPS`, :class:`InpHT` (the
Fourier approach), :class:`MargRR`, :class:`MargPS` and :class:`MargHT`
are the protocols of Cormode et al. (SIGMOD 2018) on binary attributes.

Over time, SPL and SMP over the memoized oracles are
:class:`fastldp.longitudinal.LSPL` and :class:`fastldp.longitudinal.LSMP`:
they live in the longitudinal family, which owns the memo store (a family
never imports another).
"""

from ._frequency import (
    ORACLES, RSPFD_VARIANTS, SMP, SPL, MultiFrequencyEstimate, RSpFD, paper_budget,
)
from ._means import RANDOMIZERS, MeanVectorEstimate, SampledMean, SplitMean, optimal_k
from ._marginals import FullDomain, JointEstimate, total_variation
from ._marginal_release import InpHT, InpPS, InpRR, MargHT, MargPS, MargRR, MarginalEstimate
from ._calm import CALM, CALMChoice, calm_error_model, calm_parameters
from . import _channels  # noqa: F401  (registers the audit's channels of the classes above)

__all__ = ["SPL", "SMP", "RSpFD", "MultiFrequencyEstimate", "paper_budget", "ORACLES",
           "RSPFD_VARIANTS", "SampledMean", "SplitMean", "MeanVectorEstimate", "optimal_k",
           "RANDOMIZERS", "FullDomain", "JointEstimate", "total_variation",
           "InpRR", "InpPS", "InpHT", "MargRR", "MargPS", "MargHT", "CALM", "MarginalEstimate",
           "CALMChoice", "calm_parameters", "calm_error_model"]
