"""fastldp: local differential privacy with a compiled core.

The primary mechanism is :class:`JPRS`, the one-bit Joint Personalized
Relation Sketch of paper 000; :class:`RPC` (paper 001) estimates sparse
vector means robustly. Rooms of the package:

- :mod:`fastldp.mechanisms` - client/server classes over the kernels
- :mod:`fastldp.attacks` - corruption policies and valid-output attacks
- :mod:`fastldp.analysis` - information functionals, bounds, regime audit
- :mod:`fastldp.data` - populations
- :mod:`fastldp.metrics` - losses and support scores
- :mod:`fastldp._kernels` - Cython kernels (counter-based hash, sketch,
  projection, OLH)
"""

from . import attacks, data, mechanisms, metrics
from .mechanisms import JPRS, RPC, JPRSEstimate, PaddedRelationSampling, RPCEstimate

__version__ = "0.1.0"

__all__ = ["JPRS", "JPRSEstimate", "PaddedRelationSampling", "RPC", "RPCEstimate", "attacks", "data", "mechanisms", "metrics", "show_config", "__version__"]


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
