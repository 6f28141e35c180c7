"""Whether the kernels were built with OpenMP, and how many threads they use."""

from ._cdefs cimport fastldp_openmp_enabled, fastldp_omp_max_threads


def openmp_enabled():
    """Return True when the extensions were compiled with OpenMP."""
    return bool(fastldp_openmp_enabled())


def max_threads():
    """Return OpenMP's default thread count (1 in a serial build).

    It honours ``OMP_NUM_THREADS``.
    """
    return int(fastldp_omp_max_threads())
