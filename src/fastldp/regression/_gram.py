"""Two Gram matrices of one data set from one set of BLAS products, bit for bit.

An experiment's repetition needs ``X^T X`` twice: the non-private
:class:`~fastldp.regression.Lasso` takes ``X.T @ X`` over all rows (one BLAS
``syrk``), and :class:`~fastldp.regression.SampleSDP` takes the sum over
blocks of 7,680 rows of each block's ``xc.T @ xc`` (its rows clipped to the
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

Nested data (the data of ``n`` users are the first ``n m`` rows of one draw)
need both sums for several prefixes ``X[:p]``: the syrk steps of a prefix are
those of the whole ``X`` up to its last step, and its blocks of ``rows`` rows
are the whole ``X``'s blocks up to its last one, so
:func:`gram_and_l2_sums_prefixes` computes every chunk product once for all
the prefixes (about ``max(p) d^2`` flops instead of ``sum(p) d^2``).
"""

from __future__ import annotations

import functools
import operator
from typing import Optional

import numpy as np

from ._clipping import _row_norms, l2_clipped_sums

__all__ = ["blas_chunk_rows", "gram_and_l2_sums", "gram_and_l2_sums_prefixes"]

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
        C = _step_onto(X, s, e, C, q)
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
    q = blas_chunk_rows()
    if q is None or not X.flags.c_contiguous:
        return X.T @ X, l2_clipped_sums(X, y, x_radius, y_radius, rows)
    limit = _one_thread()
    assert limit is not None  # the probe found q: threadpoolctl is there
    with limit:
        return _shared(X, y, x_radius, y_radius, rows, q)


def _plain_block(X: np.ndarray, start: int, stop: int, q: int, shared: dict,
                 lasso_upto) -> np.ndarray:
    """``X[start:stop]^T X[start:stop]`` (lower, Fortran order) by that block's ``syrk`` steps.

    Each one-chunk product is left in ``shared`` under its rows, and ``lasso_upto``
    (the running ``X^T X``) is advanced after it, so the chunks that the block
    and the whole-``X`` product have in common are computed once.
    """
    B: Optional[np.ndarray] = None
    for s, e in _chunks(start, stop, q):
        if e - s <= q:
            P = _step(X, s, e, None)
            shared[(s, e)] = P
            B = P.copy(order="F") if B is None else _add(B, P)
            lasso_upto(e)
        else:
            B = _step(X, s, e, B)
    assert B is not None  # the block has rows
    return B


def _shared(X: np.ndarray, y: np.ndarray, x_radius: float, y_radius: float, rows: int,
            q: int) -> tuple[np.ndarray, tuple[np.ndarray, np.ndarray, int, int]]:
    """:func:`gram_and_l2_sums` with the chunk ``q``."""
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
        # sample_sdp.l2_clip; a block with no row scaled has x_c = x and shares its products
        norms = _row_norms(X[start:stop])
        if (norms > x_radius).any():
            B, bb, nx, ny = _own_block(X, y, start, stop, x_radius, y_radius, q, norms)
        else:
            B = _plain_block(X, start, stop, q, shared, lasso_upto)
            yb = y[start:stop]
            bb = X[start:stop].T @ np.clip(yb, -y_radius, y_radius)
            nx, ny = 0, int((np.abs(yb) > y_radius).sum())
        cx, cy = cx + nx, cy + ny
        G = B if G is None else _add(G, B)
        b += bb
        lasso_upto(stop)
    lasso_upto(N)
    assert C is not None and G is not None
    return _full(C), (_full(G), b, cx, cy)


def gram_and_l2_sums_prefixes(X: np.ndarray, y: np.ndarray, prefixes, radii, rows: int
                              ) -> list[tuple[np.ndarray, tuple[np.ndarray, np.ndarray, int, int]]]:
    """:func:`gram_and_l2_sums` of several prefixes ``X[:p]``, bit for bit, from one pass.

    For nested data: each prefix gets exactly ``gram_and_l2_sums(X[:p],
    y[:p], x_radius, y_radius, rows)``, that is ``(X[:p].T @ X[:p],
    l2_clipped_sums(X[:p], y[:p], x_radius, y_radius, rows))``, while every
    BLAS chunk product shared by several prefixes (or by both sums) is
    computed once: about ``max(p) d^2`` flops instead of ``sum(p) d^2``.

    Parameters
    ----------
    X : ndarray of float64, shape (N, d)
        The rows, C-contiguous for the shared path (else each prefix is
        computed on its own by :func:`gram_and_l2_sums`).
    y : ndarray of float64, shape (N,)
        The responses.
    prefixes : sequence of int
        Row counts ``p``, ``1 <= p <= N``, in any order; repeats allowed.
    radii : sequence of (float, float)
        ``radii[i] = (x_radius, y_radius)``, the clipping radii of
        ``prefixes[i]`` (the default radii depend on the number of rows).
    rows : int
        Rows per block of the clipped sums (as in
        :func:`~fastldp.regression.sample_sdp.l2_clipped_sums`).

    Returns
    -------
    list of (gram, (G, b, clipped_x, clipped_y))
        One item per entry of ``prefixes``, in their order; repeated entries
        get their own copies.

    Raises
    ------
    ValueError
        A prefix outside ``[1, N]``, ``len(radii) != len(prefixes)`` or
        ``rows < 1``.

    Notes
    -----
    The syrk steps of ``X[:p]`` (:func:`_chunks`) are the ``Q``-row chunks of
    the whole ``X`` up to the last ``Q`` boundary at least ``2 Q`` rows before
    ``p``, then one step of the rest; so the Gram matrix of ``X[:p]`` is a
    copy of the running sum of the shared chunk products, plus its own last
    step. A block of ``rows`` rows wholly inside ``p`` with no row clipped at
    ``p``'s radius has the same products as in every other such prefix (and
    its ``Q``-aligned chunks serve the running sum too); a block with a
    clipped row, and ``p``'s last partial block, take their own. Memory:
    ``O(len(prefixes) d^2 + rows d)``.
    """
    N = X.shape[0]
    ps, rs = _check_prefixes(N, prefixes, radii, rows)
    if not ps:
        return []
    q = blas_chunk_rows()
    if q is None or not X.flags.c_contiguous:
        return [gram_and_l2_sums(X[:p], y[:p], xr, yr, rows) for p, (xr, yr) in zip(ps, rs)]
    limit = _one_thread()
    assert limit is not None  # the probe found q: threadpoolctl is there
    # each distinct (prefix, radii) is computed once; a repeat gets a copy
    keys = list(dict.fromkeys((p, xr, yr) for p, (xr, yr) in zip(ps, rs)))
    with limit:
        out = _shared_prefixes(X, y, keys, rows, q)
    seen: set = set()
    result = []
    for p, (xr, yr) in zip(ps, rs):
        gram, (G, b, cx, cy) = out[(p, xr, yr)]
        if (p, xr, yr) in seen:
            gram, G, b = gram.copy(), G.copy(), b.copy()
        seen.add((p, xr, yr))
        result.append((gram, (G, b, cx, cy)))
    return result


def _check_prefixes(N: int, prefixes, radii, rows) -> tuple[list[int], list[tuple[float, float]]]:
    """The prefixes as ints and the radii as float pairs, or ValueError naming what is wrong."""
    ps = []
    for i, p in enumerate(prefixes):
        try:
            p = operator.index(p)
        except TypeError:
            raise TypeError(f"prefixes[{i}] must be an integer row count, got {p!r}") from None
        if not 1 <= p <= N:
            raise ValueError(f"prefixes[{i}] must be a row count in [1, {N}] (1 to len(X)), "
                             f"got {p}")
        ps.append(p)
    radii = list(radii)
    if len(radii) != len(ps):
        raise ValueError(f"radii must have one (x_radius, y_radius) per prefix, i.e. "
                         f"len(radii) == len(prefixes) == {len(ps)}, got len(radii) = "
                         f"{len(radii)}")
    rs = []
    for i, r in enumerate(radii):
        try:
            xr, yr = r
        except (TypeError, ValueError):
            raise ValueError(f"radii[{i}] must be a pair (x_radius, y_radius), got {r!r}") from None
        rs.append((float(xr), float(yr)))
    if operator.index(rows) < 1:
        raise ValueError(f"rows must be a positive block size in [1, inf), got {rows}")
    return ps, rs


def _step_onto(A: np.ndarray, s: int, e: int, acc: Optional[np.ndarray], q: int) -> np.ndarray:
    """One syrk step of rows ``[s, e)`` added onto ``acc`` as :func:`_shared` adds it.

    A step of at most ``q`` rows is one chunk product ``P`` added to the sum (what
    OpenBLAS adds); a longer one is a ``syrk`` onto the sum (OpenBLAS may split it).
    """
    if e - s <= q:
        P = _step(A, s, e, None)
        return P.copy(order="F") if acc is None else _add(acc, P)
    return _step(A, s, e, acc)


def _own_block(X: np.ndarray, y: np.ndarray, start: int, stop: int, x_radius: float,
               y_radius: float, q: int, norms: np.ndarray
               ) -> tuple[np.ndarray, np.ndarray, int, int]:
    """``(xc^T xc (lower), xc^T yc, clipped_x, clipped_y)`` of one block, products unshared.

    The steps of ``l2_clipped_sums``'s block (``xc`` is ``x`` when no row is scaled);
    :func:`_shared` and :func:`_shared_prefixes` take it for the blocks with a clipped row.
    """
    xb, yb = X[start:stop], y[start:stop]
    over = norms > x_radius
    n_over = int(over.sum())
    B: Optional[np.ndarray] = None
    if n_over:
        scale = np.ones_like(norms)
        scale[over] = x_radius / norms[over]
        xc = xb * scale[:, None]
        ys = yb * scale
        for s, e in _chunks(0, stop - start, q):
            B = _step(xc, s, e, B)
    else:
        xc, ys = xb, yb
        for s, e in _chunks(start, stop, q):
            B = _step_onto(X, s, e, B, q)
    assert B is not None  # the block has rows
    yc = np.clip(ys, -y_radius, y_radius)
    return B, xc.T @ yc, n_over, int((np.abs(ys) > y_radius).sum())


def _shared_prefixes(X: np.ndarray, y: np.ndarray, keys: list[tuple[int, float, float]],
                     rows: int, q: int) -> dict:
    """:func:`gram_and_l2_sums_prefixes` with the chunk ``q``: ``{(p, xr, yr): result}``."""
    d = X.shape[1]
    U = len(keys)
    plen = [k[0] for k in keys]
    pmax = max(plen)

    # --- X[:p]^T X[:p]: the running sum C of the shared chunks (k q, (k + 1) q), k < need.
    # Prefix p starts from the sum of its first `base` chunks: those of its q-chunks
    # (while >= 2q rows remain), and its last step too when that is a whole aligned chunk
    # (p a multiple of q: adding it is the running sum's next step, bit for bit)
    base = [p // q if p % q == 0 else max(0, p // q - 1) for p in plen]
    need = max(base)
    waiting: dict[int, list[int]] = {}
    for u, k in enumerate(base):
        waiting.setdefault(k, []).append(u)
    gram: list[Optional[np.ndarray]] = [None] * U
    C: Optional[np.ndarray] = None
    li = 0
    shared: dict = {}  # a block's aligned chunk product, for the running sum (one at a time)

    def finish(k: int) -> None:
        # the prefixes whose Gram matrix is the running sum of k chunks plus their own tail
        for u in waiting.pop(k, ()):
            acc = None if C is None else C.copy(order="F")
            s, p = base[u] * q, plen[u]
            if s < p:
                acc = _step_onto(X, s, p, acc, q)
            assert acc is not None  # p >= 1
            gram[u] = _full(acc)

    def lasso_upto(row: int) -> None:
        nonlocal li, C
        while li < need and (li + 1) * q <= row:
            s, e = li * q, (li + 1) * q
            P = shared.pop((s, e), None)
            P = _step(X, s, e, None) if P is None else P
            C = P.copy(order="F") if C is None else _add(C, P)
            li += 1
            finish(li)
        shared.clear()

    finish(0)

    # --- the clipped sums: one accumulator per prefix, blocks in order
    G: list[Optional[np.ndarray]] = [None] * U
    b = [np.zeros(d) for _ in range(U)]
    cx, cy = [0] * U, [0] * U

    def add_block(u: int, B: np.ndarray, own: bool) -> None:
        # a shared block product is copied: the accumulator is summed into in place
        acc = G[u]
        G[u] = (B if own else B.copy(order="F")) if acc is None else _add(acc, B)

    for start in range(0, pmax, rows):
        stop = start + rows
        whole = [u for u in range(U) if plen[u] >= stop]
        if whole:
            xb, yb = X[start:stop], y[start:stop]
            norms = _row_norms(xb)  # the same slice (and bits) in every prefix
            plain = []  # prefixes with no row of this block scaled at their radius
            for u in whole:
                xr, yr = keys[u][1], keys[u][2]
                if (norms > xr).any():
                    B, bu, nx, ny = _own_block(X, y, start, stop, xr, yr, q, norms)
                    add_block(u, B, True)
                    b[u] += bu
                    cx[u] += nx
                    cy[u] += ny
                else:
                    plain.append(u)
            if plain:
                # xc is x for all of them: one set of chunk products, the aligned ones
                # serving the running sum too (as in _shared)
                B = _plain_block(X, start, stop, q, shared, lasso_upto)
                xy = None  # x^T y of the block, for the prefixes with no y clipped either
                for u in plain:
                    add_block(u, B, False)
                    yr = keys[u][2]
                    ny = int((np.abs(yb) > yr).sum())
                    if ny:
                        b[u] += xb.T @ np.clip(yb, -yr, yr)
                    else:
                        xy = xb.T @ yb if xy is None else xy
                        b[u] += xy
                    cy[u] += ny
        for u in range(U):
            if start < plen[u] < stop:
                # p's last, partial block: its own rows, its own products
                p, xr, yr = keys[u]
                B, bu, nx, ny = _own_block(X, y, start, p, xr, yr, q, _row_norms(X[start:p]))
                add_block(u, B, True)
                b[u] += bu
                cx[u] += nx
                cy[u] += ny
        lasso_upto(min(stop, pmax))
    assert li == need and not waiting

    out = {}
    for u, key in enumerate(keys):
        g, Gu = gram[u], G[u]
        assert g is not None and Gu is not None
        out[key] = (g, (_full(Gu), b[u], cx[u], cy[u]))
    return out
