"""A straightforward NumPy implementation of the JPRS decoder (paper 000, Eq. (8)).

This is the baseline that ``bench/compare.py`` times against the Cython
kernel. It is written the way one would write it without a compiled core:

* the pair signs of each identity come from ``numpy.random.Philox`` keyed by
  ``(codebook_seed, identity)`` - the same counter-based hash the kernel uses,
  but numpy's implementation, so a layout error in the kernel cannot hide;
* identities are processed in chunks (default 1024); for each chunk the
  ``chunk x p`` matrix of signs ``R_i(e) in {-1, +1}`` is materialized and
  multiplied by the chunk's weights (one matrix-vector product per chunk);
* the chunk partial sketches are summed.

Sign layout (see ``fastldp._kernels._hash``): ``R_i(e) = +1`` when bit
``e & 63`` of word ``(e >> 6) & 3`` of the Philox4x64-10 block ``e >> 8`` is 0,
else ``-1``; the block has key ``(seed, identity)`` and counter
``(block, 0, 0, 0)``. numpy's Philox increments its counter *before*
producing a block, so blocks ``0 .. B-1`` of one identity are
``Philox(key=seed + (identity << 64), counter=2**256 - 1).random_raw(4 * B)``.
Read as one little-endian bit string, those ``4 B`` words hold sign ``e`` at
bit ``e``.

Run this file to check the reference against ``global_sketch`` and
``JPRS.estimate`` on a small case::

    python bench/numpy_reference.py
"""

from __future__ import annotations

from math import sqrt

import numpy as np

__all__ = [
    "numpy_sign_matrix",
    "numpy_sketch",
    "numpy_sketch_weights",
    "numpy_project_sparse_capped",
    "numpy_estimate",
    "check_against_kernel",
]

TWO256 = 2**256
PAIRS_PER_BLOCK = 256
DEFAULT_CHUNK = 1024


def numpy_sign_matrix(seed: int, identities, p: int) -> np.ndarray:
    """Return the ``len(identities) x p`` int8 matrix of signs ``R_i(e)``."""
    identities = np.asarray(identities, dtype=np.uint64)
    nblocks = (p + PAIRS_PER_BLOCK - 1) // PAIRS_PER_BLOCK
    words = np.empty((identities.shape[0], 4 * nblocks), dtype="<u8")
    for row, ident in enumerate(identities.tolist()):
        gen = np.random.Philox(key=seed + (ident << 64), counter=TWO256 - 1)
        words[row] = gen.random_raw(4 * nblocks)
    # row r's bytes in little-endian order; bit e (LSB first) is sign e
    bits = np.unpackbits(words.view(np.uint8), axis=1, count=p, bitorder="little")
    signs = np.subtract(1, 2 * bits, dtype=np.int8)  # bit 0 -> +1, bit 1 -> -1
    return signs


def numpy_sketch(seed: int, identities, weights, p: int, chunk: int = DEFAULT_CHUNK) -> np.ndarray:
    """Return ``V(e) = sum_i weights[i] * R_i(e)`` for ``e in [0, p)`` (float64)."""
    identities = np.asarray(identities, dtype=np.uint64)
    weights = np.asarray(weights, dtype=np.float64)
    if identities.shape != weights.shape or identities.ndim != 1:
        raise ValueError("identities and weights must be 1-d arrays of the same length")
    out = np.zeros(p, dtype=np.float64)
    for start in range(0, identities.shape[0], chunk):
        stop = min(start + chunk, identities.shape[0])
        signs = numpy_sign_matrix(seed, identities[start:stop], p)
        out += weights[start:stop] @ signs.astype(np.float64)
    return out


def numpy_sketch_weights(bits, eps, k: int, kappa: float) -> np.ndarray:
    """``w_i = sqrt(k) gamma_i Ybar_i / (kappa_k D)`` with ``D = sum_i gamma_i^2`` (Eq. (8))."""
    gamma = np.tanh(np.asarray(eps, dtype=np.float64) / 2.0)
    denom = kappa * float(np.dot(gamma, gamma))
    return (sqrt(k) / denom) * gamma * np.asarray(bits, dtype=np.float64)


def _capped_simplex(y: np.ndarray, k: float) -> np.ndarray:
    """Exact projection of ``y`` onto ``{x in [0,1]^s : sum x <= k}``.

    ``f(tau) = sum_j clip(y_j - tau, 0, 1)`` is piecewise linear with
    breakpoints ``y_j - 1`` and ``y_j``; evaluate it at every breakpoint,
    find the segment where it crosses ``k`` and solve the linear equation.
    """
    if np.clip(y, 0.0, 1.0).sum() <= k:
        return np.clip(y, 0.0, 1.0)
    bp = np.unique(np.concatenate([[0.0], y - 1.0, y]))
    bp = bp[bp >= 0.0]
    f = np.clip(y[None, :] - bp[:, None], 0.0, 1.0).sum(axis=1)  # non-increasing
    j = int(np.flatnonzero(f <= k)[0])  # f(bp[0] = 0) > k, so j >= 1
    lo, hi = bp[j - 1], bp[j]
    mid = 0.5 * (lo + hi)
    full = (y - mid) >= 1.0
    active = ((y - mid) > 0.0) & ~full
    tau = (full.sum() + y[active].sum() - k) / active.sum()
    tau = min(hi, max(lo, tau))
    return np.clip(y - tau, 0.0, 1.0)


def numpy_project_sparse_capped(v, s: int, k: float):
    """Projection onto ``M_{s,k}``: keep the ``s`` largest coordinates
    (ties toward the smaller index), project them onto the capped simplex."""
    v = np.asarray(v, dtype=np.float64)
    p = v.shape[0]
    if s >= p:
        support = np.arange(p)
    else:
        order = np.lexsort((np.arange(p), -v))  # descending value, then ascending index
        support = np.sort(order[:s])
    x = np.zeros(p)
    x[support] = _capped_simplex(v[support], k)
    return x, support


def numpy_estimate(reports, eps, *, shape, k: int, s: int, codebook_seed: int, kappa: float,
                   identities=None, chunk: int = DEFAULT_CHUNK):
    """The whole decoder for well-formed reports in {-1, +1}: weights, sketch, projection.

    Returns ``(matrix, sketch)``, both of shape ``shape``.
    """
    reports = np.asarray(reports)
    n = reports.shape[0]
    eps = np.broadcast_to(np.asarray(eps, dtype=np.float64), (n,))
    ids = np.arange(n, dtype=np.uint64) if identities is None else np.asarray(identities, np.uint64)
    p = shape[0] * shape[1]
    w = numpy_sketch_weights(reports, eps, k, kappa)
    v = numpy_sketch(codebook_seed, ids, w, p, chunk=chunk)
    m, _ = numpy_project_sparse_capped(v, s, float(k))
    return m.reshape(shape), v.reshape(shape)


def sketch_atol(weights) -> float:
    """Absolute tolerance for comparing two summation orders of ``sum_i +-w_i``.

    Coordinates near zero are cancellations, where a pure relative tolerance
    is meaningless; 1e-12 * sum|w| is still far below one weight.
    """
    return 1e-12 * float(np.abs(weights).sum())


def check_against_kernel(n: int = 3000, shape=(16, 40), k: int = 8, s: int = 32,
                         seed: int = 0x9E3779B97F4A7C15, verbose: bool = True) -> None:
    """Assert that the NumPy reference reproduces ``global_sketch`` and ``JPRS.estimate``.

    ``p = d1 * d2`` is deliberately not a multiple of 256 (partial last block)
    and ``n`` is not a multiple of the chunk size; identities are random
    64-bit values, not ``0..n-1``. Raises AssertionError on a mismatch.
    """
    import fastldp
    from fastldp._kernels._sketch import global_sketch

    p = shape[0] * shape[1]
    rng = np.random.default_rng(12345)
    ids = np.unique(rng.integers(0, 2**64, size=n, dtype=np.uint64))
    rng.shuffle(ids)
    weights = rng.standard_normal(ids.shape[0])
    ref = numpy_sketch(seed, ids, weights, p)
    for nt in (1, 2):
        got = global_sketch(seed, ids, weights, p, nt)
        np.testing.assert_allclose(got, ref, rtol=1e-9, atol=sketch_atol(weights),
                                   err_msg=f"global_sketch (n_threads={nt}) != NumPy reference")

    mech = fastldp.JPRS(shape=shape, k=k, s=s, codebook_seed=seed)
    pop = fastldp.relations.rate_diagnostic_population(shape=shape, s=s, k=k, n=n, rng=1)
    eps = np.full(n, 0.75)
    bits = mech.privatize(pop.relations, epsilons=eps, rng=2)
    est = mech.estimate(bits, epsilons=eps)
    w_kernel = mech.sketch_weights(bits, eps)
    w_ref = numpy_sketch_weights(bits, eps, k, mech.kappa)
    np.testing.assert_allclose(w_ref, w_kernel, rtol=1e-12, atol=0)
    _, v_ref = numpy_estimate(bits, eps, shape=shape, k=k, s=s, codebook_seed=seed,
                              kappa=mech.kappa)
    np.testing.assert_allclose(est.sketch, v_ref, rtol=1e-9, atol=sketch_atol(w_ref),
                               err_msg="JPRS.estimate sketch != NumPy reference")
    # The projection is compared on the kernel's own sketch: with one budget
    # for everyone all |w_i| are equal, V lies on a lattice c * integer and
    # exact ties at the s-th largest value are common. The kernel sums those
    # integers exactly and breaks ties toward the smaller index; a float
    # matrix-vector product perturbs them by rounding and may pick the other
    # tied coordinate, so comparing top-s of two summation orders is moot.
    m_ref_on_kernel, _ = numpy_project_sparse_capped(est.sketch.ravel(), s, float(k))
    np.testing.assert_allclose(est.matrix.ravel(), m_ref_on_kernel, rtol=1e-9, atol=1e-12,
                               err_msg="JPRS.estimate matrix != NumPy projection of its sketch")
    # personalized budgets: unequal |w_i| (the kernel's float path), no
    # lattice ties, so the whole NumPy decoder must reproduce the estimate
    eps_p = rng.uniform(0.5, 1.0, n)
    bits_p = mech.privatize(pop.relations, epsilons=eps_p, rng=3)
    est_p = mech.estimate(bits_p, epsilons=eps_p)
    m_p, v_p = numpy_estimate(bits_p, eps_p, shape=shape, k=k, s=s, codebook_seed=seed,
                              kappa=mech.kappa)
    w_p = numpy_sketch_weights(bits_p, eps_p, k, mech.kappa)
    # estimate puts gamma_i on a 32-significant-bit grid (exact, mergeable sums):
    # each weight moves by at most 2^-32 of itself (JPRS.partial, Notes)
    fixed_point = 2.0**-32 * float(np.abs(w_p).sum())
    np.testing.assert_allclose(est_p.sketch, v_p, rtol=0, atol=sketch_atol(w_p) + fixed_point,
                               err_msg="JPRS.estimate sketch != NumPy reference (personalized)")
    np.testing.assert_allclose(est_p.matrix, m_p, rtol=1e-9, atol=1e-9,
                               err_msg="JPRS.estimate matrix != NumPy reference (personalized)")
    if verbose:
        err = float(np.max(np.abs(global_sketch(seed, ids, weights, p, 1) - ref)))
        print(f"NumPy reference == kernel: n={ids.shape[0]}, p={p}, max |diff| of sketch = {err:.3g}"
              f" (scale sum|w| = {np.abs(weights).sum():.3g}); JPRS.estimate agrees (equal and "
              f"personalized budgets)")


if __name__ == "__main__":
    check_against_kernel()
