import numpy as np
import numpy.typing as npt

SKETCH_CHUNK: int
SLOTS_PER_THREAD: int
MAX_CHUNKS: int

def chunk_size(n: int) -> int: ...
def simd_level() -> int: ...
def set_simd_cap(cap: int) -> int: ...
def fixed_table_path() -> str: ...
def global_sketch(
    seed: int,
    identities: npt.NDArray[np.uint64],
    weights: npt.NDArray[np.float64],
    p: int,
    n_threads: int = ...,
    codebook: str | int = ...,
) -> npt.NDArray[np.float64]: ...
def jprs_sketch(
    seed: int,
    bits: npt.NDArray[np.int8],
    eps: npt.NDArray[np.float64],
    scale: float,
    identities: npt.NDArray[np.uint64] | None,
    p: int,
    n_threads: int = ...,
    codebook: str | int = ...,
) -> npt.NDArray[np.float64]: ...

FIXED_MAX_WEIGHT: int
FIXED_MAX_N: int
FIXED_MAX_MASS: int

def fixed_sketch(
    seed: int,
    identities: npt.NDArray[np.uint64] | None,
    weights: npt.NDArray[np.int64],
    p: int,
    n_threads: int = ...,
    first_identity: int = ...,
    codebook: str | int = ...,
) -> npt.NDArray[np.int64]: ...
def sign_sketch(
    seed: int,
    identities: npt.NDArray[np.uint64] | None,
    signs: npt.NDArray[np.int8],
    magnitude: int,
    p: int,
    n_threads: int = ...,
    first_identity: int = ...,
    codebook: str | int = ...,
) -> npt.NDArray[np.int64]: ...
