"""fastldp: local differential privacy with a compiled core.

The package is organised by problem family, over shared building blocks.
Every family and module below is an attribute of ``fastldp`` (imported on
first use, so ``import fastldp`` stays fast), and every public estimator is
at the top level: ``fastldp.OLH``, ``fastldp.JPRS``, ``fastldp.RPC``,
``fastldp.U2R``, ``fastldp.ShiftedLogGaussian``...

Families
--------
- :mod:`fastldp.oracles` - frequency oracles (GRR, OLH, FLH, HadamardResponse,
  OUE, SUE) and scalar randomizers (Laplace, Piecewise, Duchi)
- :mod:`fastldp.relations` - paper 000: JPRS and padded relation sampling of
  sparse relation matrices, decoders, attacks, populations and analysis
- :mod:`fastldp.vectors` - paper 001: RPC and the sparse-vector baselines
  (PCKV-UE, PCKV-GRR, PrivKVM, Succinct, Collision), attacks and loaders
- :mod:`fastldp.regression` - paper 002: shuffled-DP sparse linear regression
  (U2R, Sample-SDP, LDP-IHT, two-stage SLR, Lasso) and shuffle protocols
- :mod:`fastldp.histograms` - paper 003: count-dependent zCDP histograms (the
  shifted-log Gaussian mechanism, its baselines and bounds)
- :mod:`fastldp.longitudinal` - memoized reports over time: L-GRR, L-OUE, L-OSUE,
  L-SUE, L-SOUE and the client memo (MemoStore in SQLite, MemoryMemo)
- :mod:`fastldp.heavyhitters` - heavy hitters of huge domains (64-bit integers,
  short strings): PEM (prefix extending on OLH), TreeHist, Apple's SFP, their items,
  workloads and metrics
- :mod:`fastldp.multidim` - records of several categorical attributes: the frequency of
  every attribute by splitting the budget (SPL), sampling (SMP) or sampling plus fake
  data (RSpFD); the mean of numeric vectors by sampling dimensions (SampledMean) or
  splitting the budget (SplitMean); marginals from the full-domain baseline (FullDomain)

Shared modules
--------------
- :mod:`fastldp.results` - the result base every family's results derive from
- :mod:`fastldp.accounting` - each release's privacy event and the Accountant that
  composes releases (the ``accounting`` extra: Google's dp-accounting)
- :mod:`fastldp.audit` - exact and empirical privacy audits of every channel
- :mod:`fastldp.reports` - privatized reports in Parquet files, streamed decode
- :mod:`fastldp.streaming` - exact mergeable partial / merge / finalize state
- :mod:`fastldp.distributed` - the streaming decode on a Dask cluster
- :mod:`fastldp.mechanisms` - rebuild a server from a spec, simulate reports
- :mod:`fastldp.experiments` - the family-neutral experiment harness
- :mod:`fastldp.budgets` - personal privacy-budget profiles
- :mod:`fastldp.corruption` - which identities an attack corrupts
- :mod:`fastldp.metrics` - scores of an estimate against the truth
- :mod:`fastldp.noise` - exact discrete Laplace and Gaussian samplers (no floating point)

The API every family follows (keyword-only ``epsilon``, ``privatize`` /
``estimate``, result objects) is written in the user guide's "The API
contract" page. :func:`show_config` says how the kernels were built.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ._version import __version__

#: the families and shared modules, loaded on first attribute access
_SUBMODULES = (
    "oracles", "relations", "vectors", "regression", "histograms", "longitudinal",
    "heavyhitters", "multidim", "ranges",
    "results", "audit", "reports", "streaming", "distributed", "mechanisms", "experiments",
    "budgets", "corruption", "metrics", "noise", "accounting", "protocol",
)

#: the families, in the order their mechanisms are listed (``fastldp.protocol`` builds the
#: registry of streaming mechanisms and of audited channels from their exports)
FAMILIES = ("oracles", "relations", "vectors", "regression", "histograms", "longitudinal",
            "heavyhitters", "multidim", "ranges")

#: public estimators and their result classes -> the family that defines them
_EXPORTS = {
    **dict.fromkeys(
        ("GRR", "OLH", "FLH", "HadamardResponse", "OUE", "SUE", "Laplace", "Piecewise",
         "Duchi", "FrequencyEstimate"), "oracles"),
    **dict.fromkeys(("CMS", "HCMS", "SketchEstimate"), "oracles"),
    **dict.fromkeys(("SubsetSelection", "BLH", "AdaptiveOracle"), "oracles"),
    **dict.fromkeys(("SHE", "THE", "RAPPOR", "DiscreteSHE", "DiscretePiecewise"), "oracles"),
    **dict.fromkeys(("Hybrid", "StochasticRounding"), "oracles"),
    **dict.fromkeys(("JPRS", "PaddedRelationSampling", "JPRSEstimate", "Decoded"),
                    "relations"),
    **dict.fromkeys(("RPC", "PCKVUE", "PCKVGRR", "PrivKVM", "Succinct", "Collision",
                     "RPCEstimate", "SparseMeanEstimate"), "vectors"),
    **dict.fromkeys(("U2R", "SampleSDP", "TwoStageSLR", "LDPIHT", "Lasso",
                     "ShuffledVectorSum", "ShuffledBits", "Privacy"), "regression"),
    **dict.fromkeys(("ShiftedLogGaussian", "EqualNoiseGaussian", "DataIndependentRelease",
                     "PrivacyReport", "HistogramRelease"), "histograms"),
    **dict.fromkeys(("LGRR", "LOUE", "LOSUE", "LSUE", "LSOUE", "MemoStore", "MemoryMemo",
                     "LongitudinalRAPPOR", "RAPPORDecode", "DBitFlipPM", "LSPL", "LSMP",
                     "LongitudinalMultiEstimate"),
                    "longitudinal"),
    **dict.fromkeys(("PEM", "TreeHist", "SFP", "HeavyHitters"), "heavyhitters"),
    **dict.fromkeys(("SPL", "SMP", "RSpFD", "MultiFrequencyEstimate", "SampledMean", "SplitMean",
                     "MeanVectorEstimate", "FullDomain", "JointEstimate"), "multidim"),
    **dict.fromkeys(("InpRR", "InpPS", "InpHT", "MargRR", "MargPS", "MargHT", "CALM",
                     "MarginalEstimate"), "multidim"),
    **dict.fromkeys(("FlatRange", "HierarchicalHistogram", "RangeEstimate",
                     "HierarchicalEstimate"), "ranges"),
    **dict.fromkeys(("SquareWave", "SquareWaveEstimate"), "ranges"),
    **dict.fromkeys(("HaarHRR", "HaarEstimate"), "ranges"),
    **dict.fromkeys(("Result", "PrivacyStatement"), "results"),
    "Accountant": "accounting",
}

__all__ = [*_EXPORTS, *_SUBMODULES, "FAMILIES", "show_config", "__version__"]

if TYPE_CHECKING:  # what type checkers see; at run time __getattr__ imports on demand
    # "X as X" marks an explicit re-export, so ``mypy --strict`` on user code accepts
    # ``fastldp.OLH`` (the run-time __all__ is built from _EXPORTS, which mypy cannot read)
    from . import audit as audit, budgets as budgets, corruption as corruption
    from . import distributed as distributed, experiments as experiments
    from . import histograms as histograms, mechanisms as mechanisms, metrics as metrics
    from . import longitudinal as longitudinal
    from . import heavyhitters as heavyhitters
    from . import multidim as multidim
    from .multidim import SPL as SPL, SMP as SMP, RSpFD as RSpFD
    from .multidim import MultiFrequencyEstimate as MultiFrequencyEstimate
    from .multidim import SampledMean as SampledMean, SplitMean as SplitMean
    from .multidim import MeanVectorEstimate as MeanVectorEstimate
    from .multidim import FullDomain as FullDomain, JointEstimate as JointEstimate
    from .multidim import InpHT as InpHT, InpPS as InpPS, InpRR as InpRR
    from .multidim import MargHT as MargHT, MargPS as MargPS, MargRR as MargRR
    from .multidim import CALM as CALM, MarginalEstimate as MarginalEstimate
    from . import noise as noise
    from . import ranges as ranges
    from .ranges import FlatRange as FlatRange, HierarchicalHistogram as HierarchicalHistogram
    from .ranges import RangeEstimate as RangeEstimate
    from .ranges import HierarchicalEstimate as HierarchicalEstimate
    from .ranges import SquareWave as SquareWave, SquareWaveEstimate as SquareWaveEstimate
    from .ranges import HaarHRR as HaarHRR, HaarEstimate as HaarEstimate
    from . import oracles as oracles, regression as regression, relations as relations
    from . import protocol as protocol
    from . import reports as reports, results as results, streaming as streaming
    from . import vectors as vectors
    from . import accounting as accounting
    from .accounting import Accountant as Accountant
    from .histograms import DataIndependentRelease as DataIndependentRelease
    from .histograms import EqualNoiseGaussian as EqualNoiseGaussian
    from .histograms import HistogramRelease as HistogramRelease
    from .histograms import PrivacyReport as PrivacyReport
    from .histograms import ShiftedLogGaussian as ShiftedLogGaussian
    from .longitudinal import LGRR as LGRR, LOSUE as LOSUE, LOUE as LOUE, LSOUE as LSOUE
    from .longitudinal import LSUE as LSUE, MemoryMemo as MemoryMemo, MemoStore as MemoStore
    from .longitudinal import DBitFlipPM as DBitFlipPM, LongitudinalRAPPOR as LongitudinalRAPPOR
    from .longitudinal import RAPPORDecode as RAPPORDecode
    from .longitudinal import LSMP as LSMP, LSPL as LSPL
    from .longitudinal import LongitudinalMultiEstimate as LongitudinalMultiEstimate
    from .heavyhitters import PEM as PEM, HeavyHitters as HeavyHitters
    from .heavyhitters import SFP as SFP, TreeHist as TreeHist
    from .oracles import FLH as FLH, GRR as GRR, OLH as OLH, OUE as OUE, SUE as SUE
    from .oracles import CMS as CMS, HCMS as HCMS, SketchEstimate as SketchEstimate
    from .oracles import BLH as BLH, AdaptiveOracle as AdaptiveOracle
    from .oracles import SubsetSelection as SubsetSelection
    from .oracles import RAPPOR as RAPPOR, SHE as SHE, THE as THE
    from .oracles import DiscretePiecewise as DiscretePiecewise, DiscreteSHE as DiscreteSHE
    from .oracles import Duchi as Duchi, Laplace as Laplace, Piecewise as Piecewise
    from .oracles import Hybrid as Hybrid, StochasticRounding as StochasticRounding
    from .oracles import FrequencyEstimate as FrequencyEstimate
    from .oracles import HadamardResponse as HadamardResponse
    from .regression import LDPIHT as LDPIHT, U2R as U2R, Lasso as Lasso
    from .regression import Privacy as Privacy, SampleSDP as SampleSDP
    from .regression import ShuffledBits as ShuffledBits
    from .regression import ShuffledVectorSum as ShuffledVectorSum
    from .regression import TwoStageSLR as TwoStageSLR
    from .relations import JPRS as JPRS, Decoded as Decoded, JPRSEstimate as JPRSEstimate
    from .relations import PaddedRelationSampling as PaddedRelationSampling
    from .results import PrivacyStatement as PrivacyStatement, Result as Result
    from .vectors import PCKVGRR as PCKVGRR, PCKVUE as PCKVUE, RPC as RPC
    from .vectors import Collision as Collision, PrivKVM as PrivKVM
    from .vectors import RPCEstimate as RPCEstimate
    from .vectors import SparseMeanEstimate as SparseMeanEstimate
    from .vectors import Succinct as Succinct


def __getattr__(name: str) -> Any:
    # PEP 562: the families pull in scipy and compiled kernels (a third of a
    # second), so ``import fastldp`` loads none of them until one is used
    if name in _SUBMODULES:
        return importlib.import_module(f"{__name__}.{name}")
    family = _EXPORTS.get(name)
    if family is not None:
        value = getattr(importlib.import_module(f"{__name__}.{family}"), name)
        globals()[name] = value  # later lookups skip this function
        return value
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list:
    return sorted(__all__)


def show_config(file=None) -> dict:
    """Print and return how the kernels were built (OpenMP, threads).

    Parameters
    ----------
    file : file-like, optional
        Where to print (default ``sys.stdout``).

    Returns
    -------
    dict
        The versions of fastldp, numpy, scipy and Python, whether OpenMP is
        on and the default thread count.
    """
    import sys

    import numpy
    import scipy

    from ._kernels._openmp import max_threads, openmp_enabled

    config = {
        "fastldp": __version__,
        "openmp": openmp_enabled(),
        "default_threads": max_threads(),
        "numpy": numpy.__version__,
        "scipy": scipy.__version__,
        "python": sys.version.split()[0],
    }
    out = file or sys.stdout
    for key, value in config.items():
        print(f"{key:>16}: {value}", file=out)
    return config
