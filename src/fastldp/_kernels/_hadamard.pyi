import numpy as np
import numpy.typing as npt

def fwht(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]: ...
def hadamard_entries(
    rows: npt.NDArray[np.int64], cols: npt.NDArray[np.int64]
) -> npt.NDArray[np.int8]: ...
