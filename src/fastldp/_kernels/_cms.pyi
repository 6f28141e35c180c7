import numpy as np
import numpy.typing as npt

def pair_counts(
    reports: npt.NDArray[np.int64], h: int, g: int
) -> npt.NDArray[np.int64] | None: ...
def hcms_counts(
    reports: npt.NDArray[np.int64], k: int, m: int, signed: bool
) -> npt.NDArray[np.int64] | None: ...
def fwht_rows_int64(table: npt.NDArray[np.int64], n_threads: int = ...) -> None: ...
def int64_to_float64(values: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]: ...
def cms_counts(
    reports: npt.NDArray[np.int64], k: int, m: int, n_threads: int = ...
) -> npt.NDArray[np.int64] | None: ...
def cohort_bit_counts(
    words: npt.NDArray[np.int64],
    identities: npt.NDArray[np.uint64],
    n_cohorts: int,
    m: int,
    n_threads: int = ...,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
def bloom_gram(
    row_ptr: npt.NDArray[np.int64],
    row_cols: npt.NDArray[np.int64],
    row_weights: npt.NDArray[np.float64],
    D: int,
    n_threads: int = ...,
    block_rows: int = ...,
) -> npt.NDArray[np.float64]: ...
def bloom_design(
    seed: int, n_cohorts: int, n_hashes: int, k: int, D: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64]]: ...
