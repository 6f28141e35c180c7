"""Two Gram matrices of one data set from one set of BLAS products, bit for bit.

An experiment's repetition needs ``X^T X`` twice: the non-private
:class:`~fastldp.regression.Lasso` takes ``X.T @ X`` over all rows (one BLAS
``syrk``), and :class:`~fastldp.regression.SampleSDP` takes the sum over
blocks of 8,192 rows of each block's ``xc.T @ xc`` (its rows clipped to the
ball of radius ``R_x``; at the default radius almost every block has no
clipped row, so its ``xc`` is its ``x``). Each costs ``N d^2`` flops.

OpenBLAS's ``syrk`` walks the rows (its ``K`` dimension) in chunks of ``Q``
rows (``GEMM_Q``, fixed by the CPU's kernel), adding each chunk's product
``P = x_chunk^T x_chunk`` to the result in order; the last ``< 2Q`` rows of
a call are one more step, which OpenBLAS may split itself. Both Gram
matrices are therefore ordered sums of the same chunk products wherever the
chunks coincide: :func:`gram_and_l2_sums` computes each such ``P`` once
(a ``syrk`` of ``Q`` rows), adds it to both sums in the order each product
would have, and calls ``syrk`` on the rest directly. The results are
``X.T @ X`` and :func:`~fastldp.regression.sample_sdp.l2_clipped_sums` bit
for bit, at about half the flops.

``Q`` is found by a probe (:func:`blas_chunk_rows`): on a small random
matrix, the candidate whose chunked sum equals ``X.T @ X`` exactly, under the
current BLAS thread setting. When no candidate reproduces it (another BLAS,
another driver), the two sums are computed separately, as before.
"""

from __future__ import annotations

import functools
from typing import Optional

import numpy as np

__all__ = ["blas_chunk_rows", "gram_and_l2_sums"]

#: OpenBLAS's GEMM_Q over its kernels (double precision); the probe tries each
_CANDIDATES = (256, 384, 192, 128, 320, 512, 448, 224, 160, 96, 64, 640, 768)


def _syrk():
    from scipy.linalg.blas import dsyrk

    return dsyrk


def _one_thread():
    """A context with one BLAS thread in every loaded BLAS (NumPy's and SciPy's), or None.

    SciPy's ``dsyrk`` comes from its own OpenBLAS, which a caller's thread limit
    misses when SciPy's BLAS was loaded after the limit was set: its threads
    would then spin on chunks of a few hundred rows. Without threadpoolctl
    (optional) the shared path is not taken.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:
        return None
    _syrk()  # loaded first, so that the limit reaches it
    return threadpool_limits(limits=1, user_api="blas")


def blas_chunk_rows() -> Optional[int]:
    """OpenBLAS's row chunk ``Q`` of ``syrk`` (one BLAS thread), or None.

    Found by a probe, once per process: the first candidate ``Q`` for which
    the chunked sum (:func:`_chunked_gram`) of a random ``(7 Q + 37, 37)``
    matrix, and of a ``(5.5 Q + 3, 37)`` one, equals NumPy's ``X.T @ X`` bit
    for bit (an odd ``d``: the triangle computed is checked too). ``None``
    when none does, or without SciPy's BLAS or threadpoolctl (the callers then
    take the plain products).
    """
    return _probe()


@functools.lru_cache(maxsize=1)
def _probe() -> Optional[int]:
    try:
        limit = _one_thread()
    except ImportError:  # scipy is a dependency; kept safe anyway
        return None
    if limit is None:
        return None
    gen = np.random.default_rng(20261201)
    with limit:
        for q in _CANDIDATES:
            ok = True
            for rows in (7 * q + 37, 5 * q + q // 2 + 3):
                X = gen.standard_normal((rows, 37))
                if not np.array_equal(_chunked_gram(X, q), X.T @ X):
                    ok = False
                    break
            if ok:
                return q
    return None


def _chunks(start: int, stop: int, q: int) -> list[tuple[int, int]]:
    """The steps of one ``syrk`` call over rows ``[start, stop)``: chunks of ``q`` rows while
    ``2 q`` or more remain, then the rest in one step."""
    out = []
    s = start
    while stop - s >= 2 * q:
        out.append((s, s + q))
        s += q
    if s < stop:
        out.append((s, stop))
    return out


def _step(X: np.ndarray, s: int, e: int, acc: Optional[np.ndarray]) -> np.ndarray:
    """``acc + X[s:e]^T X[s:e]`` (lower triangle, Fortran order) by one ``syrk`` call.

    The lower triangle is the one NumPy's ``X.T @ X`` computes (and mirrors): at a
    ``d`` that is not a multiple of the kernel's tile the two triangles round differently.
    """
    dsyrk = _syrk()
    if acc is None:
        return dsyrk(1.0, X[s:e].T, trans=0, lower=1)
    return dsyrk(1.0, X[s:e].T, beta=1.0, c=acc, trans=0, lower=1, overwrite_c=1)


def _full(lower: np.ndarray) -> np.ndarray:
    """The symmetric C-ordered matrix of a lower triangle (as NumPy's ``X.T @ X`` fills it)."""
    L = np.tril(lower)
    return np.ascontiguousarray(L + np.tril(L, -1).T)


def _chunked_gram(X: np.ndarray, q: int) -> np.ndarray:
    """``X.T @ X`` as chunk products ``P`` added in order (the probe's candidate form)."""
    C: Optional[np.ndarray] = None
    for s, e in _chunks(0, X.shape[0], q):
        if e - s <= q:
            P = _step(X, s, e, None)
            C = P if C is None else _add(C, P)
        else:
            C = _step(X, s, e, C)
    assert C is not None  # X has rows
    return _full(C)


def _add(acc: np.ndarray, P: np.ndarray) -> np.ndarray:
    acc += P
    return acc


def gram_and_l2_sums(X: np.ndarray, y: np.ndarray, x_radius: float, y_radius: float,
                     rows: int) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, int, int]]:
    """``(X.T @ X, l2_clipped_sums(X, y, x_radius, y_radius, rows))``, bit for bit, sharing the products.

    ``X`` is a C-contiguous float64 ``(N, d)`` array and ``y`` float64 ``(N,)``.
    The second item is ``(G, b, clipped_x, clipped_y)`` of
    :func:`~fastldp.regression.sample_sdp.l2_clipped_sums`. A block of
    ``rows`` rows with a clipped row has its own products (its ``xc`` is not
    ``x``); every other chunk's product serves both sums.
    """
    from .sample_sdp import l2_clipped_sums

    q = blas_chunk_rows()
    if q is None or not X.flags.c_contiguous:
        return X.T @ X, l2_clipped_sums(X, y, x_radius, y_radius, rows)
    limit = _one_thread()
    assert limit is not None  # the probe found q: threadpoolctl is there
    with limit:
        return _shared(X, y, x_radius, y_radius, rows, q)


def _shared(X: np.ndarray, y: np.ndarray, x_radius: float, y_radius: float, rows: int,
            q: int) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, int, int]]:
    """:func:`gram_and_l2_sums` with the chunk ``q``."""
    from .sample_sdp import _row_norms

    N, d = X.shape
    lasso = _chunks(0, N, q)
    li = 0
    C: Optional[np.ndarray] = None       # X^T X, lower
    G: Optional[np.ndarray] = None       # the clipped sum, lower
    b = np.zeros(d)
    cx = cy = 0
    shared: dict = {}

    def lasso_upto(row: int) -> None:
        nonlocal li, C
        while li < len(lasso) and lasso[li][1] <= row:
            s, e = lasso[li]
            if e - s <= q:
                P = shared.pop((s, e), None)
                P = _step(X, s, e, None) if P is None else P
                C = P.copy(order="F") if C is None else _add(C, P)
            else:
                C = _step(X, s, e, C)
            li += 1
        shared.clear()

    for start in range(0, N, rows):
        stop = min(start + rows, N)
        xb, yb = X[start:stop], y[start:stop]
        # sample_sdp.l2_clip, with x_c not formed when no row is scaled (then x_c is x)
        norms = _row_norms(xb)
        over = norms > x_radius
        n_over = int(over.sum())
        if n_over:
            scale = np.ones_like(norms)
            scale[over] = x_radius / norms[over]
            xc = xb * scale[:, None]
            ys = yb * scale
        else:
            xc, ys = xb, yb
        yc = np.clip(ys, -y_radius, y_radius)
        cx, cy = cx + n_over, cy + int((np.abs(ys) > y_radius).sum())
        B: Optional[np.ndarray] = None
        for s, e in _chunks(start, stop, q):
            if n_over:
                B = _step(xc, s - start, e - start, B)
                continue
            if e - s <= q:
                P = _step(X, s, e, None)
                shared[(s, e)] = P
                B = P.copy(order="F") if B is None else _add(B, P)
                lasso_upto(e)
            else:
                B = _step(X, s, e, B)
        assert B is not None  # the block has rows
        G = B if G is None else _add(G, B)
        b += xc.T @ yc
        lasso_upto(stop)
    lasso_upto(N)
    assert C is not None and G is not None
    return _full(C), (_full(G), b, cx, cy)
