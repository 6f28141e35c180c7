import numpy as np
import numpy.typing as npt

SUPPORT_CHUNK: int
MAX_G: int

def olh_buckets(
    seed: int,
    identities: npt.NDArray[np.uint64],
    items: npt.NDArray[np.int64],
    g: npt.NDArray[np.int64],
) -> npt.NDArray[np.int64]: ...
def olh_hash_all(seed: int, identity: int, p: int, g: int) -> npt.NDArray[np.int64]: ...
def olh_support(
    seed: int,
    identities: npt.NDArray[np.uint64],
    reports: npt.NDArray[np.int64],
    g: npt.NDArray[np.int64],
    weights: npt.NDArray[np.float64],
    p: int,
    n_threads: int = ...,
) -> npt.NDArray[np.float64]: ...
def olh_bucket_scores(
    seed: int,
    identity: int,
    g: int,
    items: npt.NDArray[np.int64],
    item_weights: npt.NDArray[np.float64],
) -> npt.NDArray[np.float64]: ...
def olh_bucket_search(
    seed: int,
    identities: npt.NDArray[np.uint64],
    g: npt.NDArray[np.int64],
    items: npt.NDArray[np.int64],
    item_weights: npt.NDArray[np.float64],
    n_threads: int = ...,
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.float64], npt.NDArray[np.int64]]: ...
