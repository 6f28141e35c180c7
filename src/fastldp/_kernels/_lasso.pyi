import numpy as np
import numpy.typing as npt

def gradient(
    X: npt.NDArray[np.float32],
    z: npt.NDArray[np.float32],
    inv_m: float,
    xty: npt.NDArray[np.float32],
) -> npt.NDArray[np.float32]: ...
def power_steps(
    X: npt.NDArray[np.float32], inv_m: npt.NDArray[np.float32], rounds: int = ...
) -> npt.NDArray[np.float32]: ...
def fista(
    X: npt.NDArray[np.float32],
    Xty: npt.NDArray[np.float32],
    inv_m: npt.NDArray[np.float32],
    step: npt.NDArray[np.float32],
    alpha: float,
    b: npt.NDArray[np.float32],
    z: npt.NDArray[np.float32],
    t: npt.NDArray[np.float64],
    iterations: int,
    tol: float,
    bound: npt.NDArray[np.float64],
) -> None: ...
