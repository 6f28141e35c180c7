import numpy as np
import numpy.typing as npt

MAX_G: int
PREFIX_KEY_TAG: int

def heavy_buckets(
    seed: int,
    identities: npt.NDArray[np.uint64],
    codes: npt.NDArray[np.uint64],
    g: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]: ...
def heavy_support(
    seed: int,
    identities: npt.NDArray[np.uint64],
    reports: npt.NDArray[np.int64],
    g: npt.NDArray[np.int64],
    candidates: npt.NDArray[np.uint64],
    n_threads: int = ...,
) -> npt.NDArray[np.int64]: ...
def heavy_groups(seed: int, identities: npt.NDArray[np.uint64], g: int) -> npt.NDArray[np.int64]: ...
def heavy_prefix_keys(prefixes: npt.NDArray[np.uint64], bits: int) -> npt.NDArray[np.uint64]: ...
