"""Cython kernels of fastldp. This room imports nothing else of fastldp.

- :mod:`._hash` - Philox4x64-10 counter-based hash keyed by (seed, identity)
- :mod:`._sketch` - the JPRS global sketch, O(n p), deterministic in threads
- :mod:`._projection` - exact projection onto M_{s,k}
- :mod:`._olh` - optimized-local-hashing hashing, support counts, bucket search
- :mod:`._openmp` - whether OpenMP is on, and the default thread count
- :mod:`._gather` - one-pass gathers (and casts) of rows and columns for the regression solvers
- :mod:`._normal` - standard normals by a 256-layer ziggurat on a NumPy bit generator's words
- :mod:`._lasso` - per-user FISTA and power iteration of the regression family's local Lassos
- :mod:`._wave` - Square Wave's EM / EMS loop to convergence (the NumPy loop's iterates, bit for bit)
"""
