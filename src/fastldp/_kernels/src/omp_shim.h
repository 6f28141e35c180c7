/* The one place fastldp touches OpenMP: a build without it runs serially. */
#ifndef FASTLDP_OMP_SHIM_H
#define FASTLDP_OMP_SHIM_H
#ifdef _OPENMP
#include <omp.h>
static inline int fastldp_openmp_enabled(void) { return 1; }
static inline int fastldp_omp_max_threads(void) { return omp_get_max_threads(); }
#else
static inline int fastldp_openmp_enabled(void) { return 0; }
static inline int fastldp_omp_max_threads(void) { return 1; }
#endif
#endif
