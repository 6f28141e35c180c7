"""fastldp: local differential privacy with a compiled core.

The package is organised by problem family, over shared building blocks:

- :mod:`fastldp.relations` - paper 000: :class:`JPRS`, padded relation
  sampling, decoders, attacks, populations, loaders and analysis
- :mod:`fastldp.vectors` - paper 001: :class:`RPC` and the sparse-vector
  baselines, attacks, generators and loaders
- :mod:`fastldp.oracles` - frequency oracles and scalar randomizers
- :mod:`fastldp.budgets`, :mod:`fastldp.corruption`, :mod:`fastldp.metrics`
  - budget profiles, corruption policies, losses (shared by every family)
- :mod:`fastldp.experiments` - the family-neutral experiment harness
- :mod:`fastldp._kernels` - Cython kernels (counter-based hash, sketch,
  projection, OLH)
"""

from . import budgets, corruption, metrics, oracles, relations, vectors
from .relations import JPRS, JPRSEstimate, PaddedRelationSampling
from .vectors import RPC, RPCEstimate

__version__ = "0.1.0"

__all__ = [
    "JPRS", "JPRSEstimate", "PaddedRelationSampling", "RPC", "RPCEstimate", "budgets",
    "corruption", "metrics", "oracles", "relations", "vectors", "show_config", "__version__",
]


def show_config(file=None) -> dict:
    """Print and return how the kernels were built (OpenMP, threads)."""
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
