import numpy as np
import numpy.typing as npt

def standard_normal_fill(
    bit_generator: np.random.BitGenerator,
    out: npt.NDArray[np.float64],
    k: npt.NDArray[np.uint64],
    w: npt.NDArray[np.float64],
    f: npt.NDArray[np.float64],
    r: float,
) -> None: ...
