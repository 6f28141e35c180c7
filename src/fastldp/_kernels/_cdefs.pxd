# Declarations of the C headers under src/. Implementation lives there.
from libc.stdint cimport int64_t, uint64_t, uint32_t, int8_t


cdef extern from "src/omp_shim.h" nogil:
    int fastldp_openmp_enabled()
    int fastldp_omp_max_threads()


cdef extern from "src/philox.h" nogil:
    ctypedef struct fastldp_philox_block:
        uint64_t v[4]
    uint64_t FASTLDP_STREAM_PAIR_SIGN
    uint64_t FASTLDP_STREAM_OLH_HASH
    uint64_t FASTLDP_STREAM_SANITIZE
    uint64_t FASTLDP_STREAM_MINHASH
    fastldp_philox_block fastldp_philox4x64_10(
        uint64_t c0, uint64_t c1, uint64_t c2, uint64_t c3, uint64_t k0, uint64_t k1)
    fastldp_philox_block fastldp_hash_block(
        uint64_t seed, uint64_t identity, uint64_t block, uint64_t stream)
    int fastldp_block_bit(const fastldp_philox_block *blk, int64_t b)
    int fastldp_pair_sign(uint64_t seed, uint64_t identity, int64_t e)
    ctypedef struct fastldp_philox32_block:
        uint32_t v[4]
    fastldp_philox32_block fastldp_philox4x32_10(
        uint32_t c0, uint32_t c1, uint32_t c2, uint32_t c3, uint32_t k0, uint32_t k1)
    int FASTLDP_CODEBOOK_PHILOX4X64
    int FASTLDP_CODEBOOK_PHILOX4X32
    fastldp_philox_block fastldp_pair_block(int codebook, uint64_t seed, uint64_t identity, uint64_t b)
    int fastldp_pair_sign_cb(int codebook, uint64_t seed, uint64_t identity, int64_t e)


cdef extern from "src/pair_blocks.h" nogil:
    int fastldp_simd_cap
    int fastldp_simd_level()
    void fastldp_pair_blocks(int codebook, uint64_t seed, const uint64_t *ids, int m, uint64_t b,
                             fastldp_philox_block *out, int level)


cdef extern from "src/jprs_sketch.h" nogil:
    ctypedef struct fastldp_sketch_source:
        uint64_t seed
        int codebook
        const uint64_t *identities
        uint64_t first_identity
        const double *weights
        const int8_t *bits
        const double *eps
        double scale
        int64_t p
    void fastldp_sketch_range(const fastldp_sketch_source *src, int64_t start, int64_t stop, double *out)
    uint64_t fastldp_transpose_bits8x8(uint64_t x)


cdef extern from "src/olh.h" nogil:
    uint32_t fastldp_block_lane32(const fastldp_philox_block *blk, int lane)
    int64_t fastldp_bucket_of_lane(uint32_t lane_value, int64_t g)
    int64_t fastldp_olh_bucket(uint64_t seed, uint64_t identity, int64_t item, int64_t g)
    void fastldp_olh_support_one(
        uint64_t seed, uint64_t identity, int64_t report, int64_t g, double w,
        int64_t p, double *out)


cdef extern from "src/ordered_sum.h" nogil:
    ctypedef void (*fastldp_chunk_fn)(const void *ctx, int64_t start, int64_t stop, double *part) noexcept nogil
    void fastldp_ordered_chunk_sum(
        fastldp_chunk_fn fn, const void *ctx, int64_t n, int64_t p, int64_t chunk,
        int nthreads, int64_t slots, double *buf, double *out)


cdef extern from "src/jprs_count.h" nogil:
    void fastldp_sign_count_range(const fastldp_sketch_source *src, int64_t start, int64_t stop, double *out)


cdef extern from "src/jprs_fixed.h" nogil:
    ctypedef struct fastldp_fixed_source:
        uint64_t seed
        int codebook
        const uint64_t *identities
        uint64_t first_identity
        const int64_t *weights
        int64_t p
    int FASTLDP_FIXED_TILE
    int fastldp_fixed_sketch(
        const fastldp_fixed_source *src, int64_t n, int64_t chunk, int nthreads,
        int counting, int64_t magnitude, int64_t *out)
