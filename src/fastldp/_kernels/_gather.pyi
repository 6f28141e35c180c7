import numpy as np
import numpy.typing as npt

def gather_users_float32(
    X: npt.NDArray[np.float64], y: npt.NDArray[np.float64], who: npt.NDArray[np.intp]
) -> tuple[npt.NDArray[np.float32], npt.NDArray[np.float32], npt.NDArray[np.float64]]: ...
def take_columns(
    X: npt.NDArray[np.floating], keep: npt.NDArray[np.intp]
) -> npt.NDArray[np.floating]: ...
def gather_active(
    X: npt.NDArray[np.floating],
    rows: npt.NDArray[np.intp],
    order: npt.NDArray[np.intp],
    width: npt.NDArray[np.intp],
) -> npt.NDArray[np.float64]: ...
def take_block(
    X: npt.NDArray[np.float64], rows: npt.NDArray[np.intp], cols: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64]: ...
def take_entries(
    X: npt.NDArray[np.float64], rows: npt.NDArray[np.intp], cols: npt.NDArray[np.intp]
) -> npt.NDArray[np.float64]: ...
