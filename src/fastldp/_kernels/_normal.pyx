"""Standard normal variates: a 256-layer ziggurat on a NumPy bit generator's words.

The algorithm and the use of each 64-bit word are described in
``src/normal.h``. The tables (``k``, ``w``, ``f``, ``r``) are computed in
:mod:`fastldp._random` and checked there; this kernel assumes them valid.
"""

from cpython.pycapsule cimport PyCapsule_GetPointer

from ._typedefs cimport uint64_t, int64_t


cdef extern from "src/normal.h" nogil:
    ctypedef struct fastldp_bitgen:
        pass
    ctypedef struct fastldp_ziggurat:
        const uint64_t *k
        const double *w
        const double *f
        double r
    void fastldp_standard_normal_fill(const fastldp_ziggurat *z, fastldp_bitgen *g,
                                      int64_t n, double *out)


def standard_normal_fill(bit_generator, double[::1] out, const uint64_t[::1] k,
                         const double[::1] w, const double[::1] f, double r):
    """Fill ``out`` with standard normals drawn from ``bit_generator`` (advanced in place).

    ``bit_generator`` is a :class:`numpy.random.BitGenerator`; its lock is
    held while the words are drawn, as NumPy's own samplers do.
    ``k, w, f`` have 256 entries each.
    """
    if k.shape[0] != 256 or w.shape[0] != 256 or f.shape[0] != 256:
        raise ValueError("the ziggurat tables must have 256 entries each")
    cdef fastldp_bitgen *g = <fastldp_bitgen *>PyCapsule_GetPointer(bit_generator.capsule,
                                                                    "BitGenerator")
    cdef fastldp_ziggurat z
    z.k = &k[0]
    z.w = &w[0]
    z.f = &f[0]
    z.r = r
    cdef int64_t n = out.shape[0]
    if n == 0:
        return
    with bit_generator.lock:
        with nogil:
            fastldp_standard_normal_fill(&z, g, n, &out[0])
