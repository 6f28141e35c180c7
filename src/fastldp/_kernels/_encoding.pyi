import numpy as np
import numpy.typing as npt

LEVELS: int
BLOCK_ROWS: int
LEVEL_BITS: int
K_LO: int
ROWS: int
SHE_STREAM: int
BETA_RANGE: tuple[int, int]
MIN_ROWS_PER_THREAD: int

def laplace_from_words(words: npt.NDArray[np.uint64]) -> npt.NDArray[np.float64]: ...
def she_perturb(
    k0: int,
    k1: int,
    values: npt.NDArray[np.int64],
    scales: npt.NDArray[np.float64],
    D: int,
    n_threads: int = ...,
) -> npt.NDArray[np.float64]: ...
def she_floor(k0: int, k1: int, n: int, D: int, n_threads: int = ...) -> float: ...
def she_legal_rows(
    x: npt.NDArray[np.float64],
    lo: npt.NDArray[np.float64],
    hi: npt.NDArray[np.float64],
    n_threads: int = ...,
) -> npt.NDArray[np.uint8]: ...
def she_column_sums(
    x: npt.NDArray[np.float64],
    lo: npt.NDArray[np.float64],
    hi: npt.NDArray[np.float64],
    weights: npt.NDArray[np.float64] | None,
    group: npt.NDArray[np.uint8] | None,
    n_groups: int,
    beta: int,
    n_threads: int = ...,
) -> tuple[npt.NDArray[np.uint8], npt.NDArray[np.int64]]: ...
