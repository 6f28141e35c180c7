import numpy as np
import numpy.typing as npt

SPL: int
SMP: int
RSPFD: int
UE_SPL: int
UE_ZERO: int
UE_RANDOM: int
MIN_ROWS_PER_THREAD: int

def check_records(x: npt.NDArray[np.int64], k: npt.NDArray[np.int64], n_threads: int = ...) -> int: ...
def grr_reports(
    k0: int,
    k1: int,
    mode: int,
    x: npt.NDArray[np.int64],
    k: npt.NDArray[np.int64],
    p: npt.NDArray[np.float64],
    n_threads: int = ...,
) -> tuple[npt.NDArray[np.int64], int]: ...
def grr_given(
    k0: int,
    k1: int,
    s: npt.NDArray[np.int64],
    v: npt.NDArray[np.int64],  # (n, 1) values or (n, A) records
    k: npt.NDArray[np.int64],
    p: npt.NDArray[np.float64],
    n_threads: int = ...,
) -> tuple[npt.NDArray[np.int64], int]: ...
def ue_reports(
    k0: int,
    k1: int,
    mode: int,
    x: npt.NDArray[np.int64],
    k: npt.NDArray[np.int64],
    p: npt.NDArray[np.float64],
    byte0: npt.NDArray[np.int64],
    Q: int,
    n_threads: int = ...,
) -> tuple[npt.NDArray[np.uint8], int]: ...
def ue_rerandomize(
    k0: int,
    k1: int,
    perm: npt.NDArray[np.uint8],
    k: npt.NDArray[np.int64],
    byte0: npt.NDArray[np.int64],
    Qkeep: int,
    Qraise: int,
    n_threads: int = ...,
) -> npt.NDArray[np.uint8]: ...
def smp_ue_reports(
    k0: int,
    k1: int,
    x: npt.NDArray[np.int64],
    k: npt.NDArray[np.int64],
    p: npt.NDArray[np.float64],
    Q: int,
    n_threads: int = ...,
    given: npt.NDArray[np.int64] | None = ...,
) -> tuple[npt.NDArray[np.uint8], int]: ...
def smp_ue_rerandomize(
    k0: int,
    k1: int,
    perm: npt.NDArray[np.uint8],
    k: npt.NDArray[np.int64],
    Qkeep: int,
    Qraise: int,
    n_threads: int = ...,
) -> tuple[npt.NDArray[np.uint8], int]: ...
def count_symbols(
    y: npt.NDArray[np.int64], k: npt.NDArray[np.int64], n_threads: int = ...
) -> tuple[npt.NDArray[np.int64], int]: ...
def count_smp_symbols(
    y: npt.NDArray[np.int64], k: npt.NDArray[np.int64], n_threads: int = ...
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]: ...
def count_smp_bits(
    y: npt.NDArray[np.uint8], k: npt.NDArray[np.int64], n_threads: int = ...
) -> tuple[npt.NDArray[np.int64], npt.NDArray[np.int64], int]: ...
def stream_words(k0: int, k1: int, rows: npt.NDArray[np.uint64], count: int) -> npt.NDArray[np.uint64]: ...
