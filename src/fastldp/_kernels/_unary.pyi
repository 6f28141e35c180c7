import numpy as np
import numpy.typing as npt

WEIGHTED_CHUNK: int

def ue_perturb(
    k0: int,
    k1: int,
    values: npt.NDArray[np.int64],
    q_threshold: npt.NDArray[np.uint64],
    p: npt.NDArray[np.float64],
    D: int,
    n_threads: int = ...,
) -> npt.NDArray[np.uint8]: ...
def ue_counts(reports: npt.NDArray[np.uint8], D: int, n_threads: int = ...) -> npt.NDArray[np.int64]: ...
def ue_weighted_counts(
    reports: npt.NDArray[np.uint8],
    weights: npt.NDArray[np.float64],
    D: int,
    n_threads: int = ...,
) -> npt.NDArray[np.float64]: ...
