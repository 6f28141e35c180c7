from typing import Sequence

import numpy as np
import numpy.typing as npt

PAIR_SIGN_STREAM: int
OLH_HASH_STREAM: int
SANITIZE_STREAM: int
MINHASH_STREAM: int
PAIRS_PER_BLOCK: int
CODEBOOKS: dict[str, int]
DEFAULT_CODEBOOK: str

def codebook_id(codebook: str | int) -> int: ...
def simd_level() -> int: ...
def set_simd_cap(cap: int) -> int: ...
def philox4x32_10(counter: Sequence[int], key: Sequence[int]) -> npt.NDArray[np.uint32]: ...
def pair_blocks(
    seed: int,
    identities: npt.NDArray[np.uint64],
    n_blocks: int,
    codebook: str | int = ...,
    batched: bool = ...,
) -> npt.NDArray[np.uint64]: ...

def philox4x64_10(counter: Sequence[int], key: Sequence[int]) -> npt.NDArray[np.uint64]: ...
def hash_blocks(
    seed: int, identities: npt.NDArray[np.uint64], n_blocks: int, stream: int = ...
) -> npt.NDArray[np.uint64]: ...
def pair_signs(
    seed: int,
    identities: npt.NDArray[np.uint64],
    pairs: npt.NDArray[np.int64],
    codebook: str | int = ...,
) -> npt.NDArray[np.int8]: ...
def hash_words(
    seed: int, identities: npt.NDArray[np.uint64], items: npt.NDArray[np.int64], stream: int
) -> npt.NDArray[np.uint64]: ...
def set_sign_sums(
    seed: int,
    identities: npt.NDArray[np.uint64],
    indptr: npt.NDArray[np.int64],
    pairs: npt.NDArray[np.int64],
    n_threads: int = ...,
    codebook: str | int = ...,
) -> npt.NDArray[np.int64]: ...
def philox_floor(
    seed: int,
    identities: npt.NDArray[np.uint64],
    p: int,
    n_threads: int = ...,
    codebook: str | int = ...,
) -> int: ...
