import numpy as np
import numpy.typing as npt

SKETCH_CHUNK: int

def global_sketch(
    seed: int,
    identities: npt.NDArray[np.uint64],
    weights: npt.NDArray[np.float64],
    p: int,
    n_threads: int = ...,
) -> npt.NDArray[np.float64]: ...
