"""Sample-SDP's l2 clipping rule and its clipped sums, below the estimator and the shared Gram pass.

``s = min(1, R_x / ||x||)``, ``x_c = s x``, ``y_c = clip(s y, +-R_y)``
(:func:`l2_clip`), and the sums ``X_c^T X_c``, ``X_c^T y_c`` over blocks of
``_BLOCK`` rows (:func:`l2_clipped_sums`). :mod:`.sample_sdp` (which
re-exports both) fits with them, and :mod:`._gram` reproduces the sums bit for
bit while sharing their products with the Lasso's Gram matrix; neither imports
the other for them.
"""

from __future__ import annotations

import numpy as np
from numpy.typing import ArrayLike

__all__ = ["l2_clip", "l2_clipped_sums"]

#: rows per block of the clipped sums (a block at d = 512 is 30 MiB): 7,680 = 20 x 384 =
#: 30 x 256, a multiple of OpenBLAS's syrk row chunk on its common double-precision kernels
#: (256 or 384 rows; also 64, 96, 128, 160, 192, 320, 512, 640, 768), so every block's chunk
#: products are the Lasso Gram matrix's too and _gram shares all of them (with 8,192 rows
#: and a 384-row chunk only every third block lined up: the sums took 30 % longer)
_BLOCK = 7680


def _row_norms(X: np.ndarray) -> np.ndarray:
    """l2 norms of the rows, without overflow for finite rows of huge entries."""
    norms = np.sqrt(np.einsum("ij,ij->i", X, X))
    bad = ~np.isfinite(norms)
    if bad.any():  # the squares overflowed: scale by the largest entry first
        big = np.abs(X[bad]).max(axis=1)
        norms[bad] = big * np.linalg.norm(X[bad] / big[:, None], axis=1)
    return norms


def l2_clip(X: ArrayLike, y: ArrayLike, x_radius: float,
            y_radius: float) -> tuple[np.ndarray, np.ndarray, int, int]:
    """``(X_c, y_c, clipped_x, clipped_y)`` of the l2 rule for finite rows.

    ``s = min(1, R_x / ||x||)``, ``x_c = s x``, ``y_c = clip(s y, +-R_y)``;
    ``clipped_x`` counts the rows with ``||x|| > R_x``, ``clipped_y`` those
    with ``|s y| > R_y``.
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    norms = _row_norms(X)
    over = norms > x_radius
    scale = np.ones_like(norms)
    scale[over] = x_radius / norms[over]
    Xc = X * scale[:, None]
    ys = y * scale
    yc = np.clip(ys, -y_radius, y_radius)
    return Xc, yc, int(over.sum()), int((np.abs(ys) > y_radius).sum())


def l2_clipped_sums(X: ArrayLike, y: ArrayLike, x_radius: float, y_radius: float,
                    rows: int = _BLOCK) -> tuple[np.ndarray, np.ndarray, int, int]:
    """``(X_c^T X_c, X_c^T y_c, clipped_x, clipped_y)`` of the l2 rule, by blocks of rows.

    Accumulated in float64 over blocks of ``rows`` clipped rows: memory
    ``O(rows d)``, never a clipped copy of ``X``. ``xc.T @ xc`` of one block
    is a BLAS ``syrk`` (NumPy's matmul detects an operand times its own
    transpose: half the work of a general product, the result exactly
    symmetric). Deterministic for a given BLAS and thread setting; blocked
    sums round differently from one product over all rows (the entries agree
    to floating-point rounding).
    """
    X = np.asarray(X, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    d = X.shape[1]
    G = np.zeros((d, d))
    b = np.zeros(d)
    cx = cy = 0
    for start in range(0, X.shape[0], rows):
        xc, yc, nx, ny = l2_clip(X[start:start + rows], y[start:start + rows], x_radius,
                                 y_radius)
        G += xc.T @ xc
        b += xc.T @ yc
        cx, cy = cx + nx, cy + ny
    return G, b, cx, cy
