# The fixed-width types every fastldp kernel uses. Indices are signed.
from libc.stdint cimport int64_t, uint64_t, uint32_t, int8_t

ctypedef Py_ssize_t intp_t
ctypedef double float64_t
