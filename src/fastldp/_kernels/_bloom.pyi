import numpy as np
import numpy.typing as npt

MAX_BITS: int
MAX_CHUNKS: int
SLOTS_PER_THREAD: int

def cohort_chunk(n_cohorts: int) -> int: ...
def bloom_positions(
    seed: int, n_cohorts: int, n_hashes: int, k: int, D: int
) -> npt.NDArray[np.uint16]: ...
def bloom_rows(
    pos: npt.NDArray[np.uint16], k: int
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.uint32]]: ...
def bloom_gram_apply(
    pos: npt.NDArray[np.uint16],
    row_ptr: npt.NDArray[np.int64],
    row_cols: npt.NDArray[np.uint32],
    k: int,
    weights: npt.NDArray[np.float64],
    v: npt.NDArray[np.float64],
    n_threads: int = ...,
) -> npt.NDArray[np.float64]: ...
def bloom_transpose_apply(
    pos: npt.NDArray[np.uint16],
    k: int,
    t: npt.NDArray[np.float64],
    n_threads: int = ...,
) -> npt.NDArray[np.float64]: ...
def bloom_cg(
    pos: npt.NDArray[np.uint16],
    row_ptr: npt.NDArray[np.int64],
    row_cols: npt.NDArray[np.uint32],
    k: int,
    weights: npt.NDArray[np.float64],
    rhs: npt.NDArray[np.float64],
    precond_a: float,
    precond_b: float,
    tol: float,
    maxiter: int,
    n_threads: int = ...,
) -> tuple[npt.NDArray[np.float64], int, npt.NDArray[np.float64], npt.NDArray[np.float64]]: ...
