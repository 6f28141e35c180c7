import numpy as np
import numpy.typing as npt

def pairwise_sum(values: npt.NDArray[np.float64]) -> float: ...
def forward(
    theta: npt.NDArray[np.float64],
    mid: npt.NDArray[np.float64],
    a: npt.NDArray[np.float64],
    J: npt.NDArray[np.int64],
    part: npt.NDArray[np.float64],
    widths_out: npt.NDArray[np.float64],
    p: float,
    q: float,
) -> npt.NDArray[np.float64]: ...
def backward(
    r: npt.NDArray[np.float64],
    powers: npt.NDArray[np.float64],
    above: npt.NDArray[np.int64],
    cpoly: npt.NDArray[np.float64],
    widths_out: npt.NDArray[np.float64],
    p: float,
    q: float,
) -> npt.NDArray[np.float64]: ...
def expectation_maximization(
    hist: npt.NDArray[np.float64],
    theta: npt.NDArray[np.float64],
    mid: npt.NDArray[np.float64],
    a: npt.NDArray[np.float64],
    J: npt.NDArray[np.int64],
    part: npt.NDArray[np.float64],
    widths_out: npt.NDArray[np.float64],
    powers: npt.NDArray[np.float64],
    above: npt.NDArray[np.int64],
    cpoly: npt.NDArray[np.float64],
    p: float,
    q: float,
    smoothing: bool,
    tolerance: float,
    max_iterations: int,
) -> tuple[int, bool, float]: ...
