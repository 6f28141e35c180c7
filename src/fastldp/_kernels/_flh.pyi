import numpy as np
import numpy.typing as npt

POOL_CHUNK: int

def flh_support(
    seed: int, counts: npt.NDArray[np.float64], p: int, n_threads: int = ...
) -> npt.NDArray[np.float64]: ...
