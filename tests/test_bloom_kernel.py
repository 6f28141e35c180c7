"""The Bloom-position kernels of RAPPOR's sparse decode against naive twins.

Naive twins: the positions from :meth:`RAPPOR.bloom_positions` (the OLH hash
checked against numpy's Philox elsewhere) with a repeated bit replaced by
``k``, and dense products with the 0/1 design built from them by NumPy.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastldp._kernels._bloom import (
    bloom_cg,
    bloom_gram_apply,
    bloom_positions,
    bloom_rows,
    bloom_transpose_apply,
    cohort_chunk,
)
from fastldp._kernels._cms import bloom_design
from fastldp.oracles.rappor import RAPPOR


def naive_positions(seed: int, C: int, h: int, k: int, D: int) -> np.ndarray:
    oracle = RAPPOR(domain_size=D, epsilon=1.0, n_bits=k, n_hashes=h, n_cohorts=C,
                    codebook_seed=seed)
    out = np.empty((C, D, h), dtype=np.int64)
    for c in range(C):
        pos = oracle.bloom_positions(np.full(D, c), np.arange(D))
        for t in range(h):
            repeated = (pos[:, :t] == pos[:, t:t + 1]).any(axis=1)
            out[c, :, t] = np.where(repeated, k, pos[:, t])
    return out


def naive_design(pos: np.ndarray, k: int) -> np.ndarray:
    """Dense ``X`` ``(C k, D)`` from positions (the sentinel ``k`` sets nothing)."""
    C, D, h = pos.shape
    X = np.zeros((C, k + 1, D))
    for t in range(h):
        X[np.arange(C)[:, None], pos[:, :, t], np.arange(D)[None, :]] = 1.0
    return X[:, :k, :].reshape(C * k, D)


SHAPES = [(1, 1, 2, 9), (5, 2, 16, 40), (7, 3, 4, 33), (40, 2, 8, 64), (3, 4, 2, 5)]


@pytest.mark.parametrize("C,h,k,D", SHAPES)
def test_positions_are_the_filters_hashes_with_repeats_as_k(C, h, k, D):
    pos = bloom_positions(12345, C, h, k, D)
    assert pos.dtype == np.uint16 and pos.shape == (C, D, h)
    np.testing.assert_array_equal(pos, naive_positions(12345, C, h, k, D))


@pytest.mark.parametrize("C,h,k,D", SHAPES)
def test_rows_are_the_compressed_design(C, h, k, D):
    pos = bloom_positions(12345, C, h, k, D)
    ptr, cols = bloom_rows(pos, k)
    want_ptr, want_cols = bloom_design(12345, C, h, k, D)
    np.testing.assert_array_equal(ptr, want_ptr)
    np.testing.assert_array_equal(cols.astype(np.int64), want_cols)


@pytest.mark.parametrize("C,h,k,D", SHAPES)
def test_products_equal_the_dense_design_and_do_not_depend_on_threads(C, h, k, D):
    rng = np.random.default_rng(7)
    pos = bloom_positions(99, C, h, k, D)
    X = naive_design(naive_positions(99, C, h, k, D), k)
    w = rng.integers(0, 50, C).astype(np.float64)
    v = rng.standard_normal(D)
    t = rng.standard_normal((C, k))
    want = X.T @ (np.repeat(w, k) * (X @ v))
    got = bloom_gram_apply(pos, *bloom_rows(pos, k), k, w, v, 1)
    np.testing.assert_allclose(got, want, rtol=0, atol=1e-12 * np.abs(want).max())
    np.testing.assert_allclose(bloom_transpose_apply(pos, k, t, 1), X.T @ t.ravel(),
                               rtol=0, atol=1e-12 * np.abs(t).sum())
    for threads in (2, 3):
        assert np.array_equal(bloom_gram_apply(pos, *bloom_rows(pos, k), k, w, v, threads), got)
        assert np.array_equal(bloom_transpose_apply(pos, k, t, threads),
                              bloom_transpose_apply(pos, k, t, 1))


def test_chunks_depend_on_the_cohorts_only():
    assert [cohort_chunk(C) for C in (1, 8, 9, 64, 1000)] == [1, 1, 2, 8, 125]


@pytest.mark.parametrize("precondition", [False, True])
def test_conjugate_gradients_solve_the_gram_system(precondition):
    C, h, k, D = 12, 2, 32, 200
    rng = np.random.default_rng(3)
    pos = bloom_positions(5, C, h, k, D)
    X = naive_design(naive_positions(5, C, h, k, D), k)
    w = rng.integers(50, 100, C).astype(np.float64)
    G = X.T @ (np.repeat(w, k)[:, None] * X)
    b = rng.standard_normal(D)
    want = np.linalg.solve(G, b)
    a = c = 0.0
    if precondition:
        c = (G.sum() - np.trace(G)) / (D * (D - 1))
        a = np.trace(G) / D - c
    x, iterations, alphas, betas = bloom_cg(pos, *bloom_rows(pos, k), k, w, b, a, c, 1e-13, 5000, 1)
    np.testing.assert_allclose(x, want, rtol=0, atol=1e-9 * np.abs(want).max())
    assert 1 < iterations < 5000 and alphas.shape == betas.shape == (iterations,)
    assert np.linalg.norm(b - G @ x) <= 2e-13 * np.linalg.norm(b)
    x2, iterations2, _, _ = bloom_cg(pos, *bloom_rows(pos, k), k, w, b, a, c, 1e-13, 5000, 2)
    assert np.array_equal(x2, x) and iterations2 == iterations
    # the Lanczos tridiagonal's smallest Ritz value bounds lambda_min(M^-1 G) from above
    diag = 1.0 / alphas
    diag[1:] += betas[:-1] / alphas[:-1]
    off = np.sqrt(betas[:-1]) / alphas[:-1]
    T = np.diag(diag) + np.diag(off, 1) + np.diag(off, -1)
    M = a * np.eye(D) + c if precondition else np.eye(D)
    lam = np.linalg.eigvals(np.linalg.solve(M, G)).real.min()
    theta = np.linalg.eigvalsh(T)[0]
    assert lam <= theta <= 1.01 * lam


def test_the_preconditioner_saves_products_at_the_benchmark_shape():
    # one large eigenvalue (the all-ones direction) is what a I + c 11^T removes
    C, h, k, D = 64, 2, 128, 1024
    pos = bloom_positions(11, C, h, k, D)
    w = np.full(C, 1000.0)
    b = bloom_gram_apply(pos, *bloom_rows(pos, k), k, w, np.random.default_rng(2).random(D), 1)
    trace = float(np.sum(w[:, None, None] * (pos < k)))
    total = float(bloom_gram_apply(pos, *bloom_rows(pos, k), k, w, np.ones(D), 1).sum())
    c = (total - trace) / (D * (D - 1))
    a = trace / D - c
    plain = bloom_cg(pos, *bloom_rows(pos, k), k, w, b, 0.0, 0.0, 1e-13, 5000, 1)
    pre = bloom_cg(pos, *bloom_rows(pos, k), k, w, b, a, c, 1e-13, 5000, 1)
    assert pre[1] < plain[1]
    np.testing.assert_allclose(pre[0], plain[0], rtol=0, atol=1e-9 * np.abs(plain[0]).max())


def test_bad_arguments_are_refused():
    pos = bloom_positions(1, 2, 2, 8, 10)
    ptr, cols = bloom_rows(pos, 8)
    with pytest.raises(ValueError, match="k must be"):
        bloom_gram_apply(pos, ptr, cols, 0, np.ones(2), np.ones(10))
    with pytest.raises(ValueError, match="outside"):
        bloom_gram_apply(pos, ptr, cols, 3, np.ones(2), np.ones(10))
    with pytest.raises(ValueError, match="length"):
        bloom_gram_apply(pos, ptr, cols, 8, np.ones(3), np.ones(10))
    with pytest.raises(ValueError, match="rows"):
        bloom_gram_apply(pos, ptr[:-1].copy(), cols, 8, np.ones(2), np.ones(10))
    bad = cols.copy()
    bad[3] = 10
    with pytest.raises(ValueError, match=r"row_cols\[3\] = 10 is outside"):
        bloom_gram_apply(pos, ptr, bad, 8, np.ones(2), np.ones(10))
    with pytest.raises(ValueError, match="shape"):
        bloom_transpose_apply(pos, 8, np.ones((2, 7)))
    with pytest.raises(ValueError, match="positive definite"):
        bloom_cg(pos, ptr, cols, 8, np.ones(2), np.ones(10), float("nan"), 0.0, 1e-12, 10)
    with pytest.raises(ValueError, match="maxiter"):
        bloom_cg(pos, ptr, cols, 8, np.ones(2), np.ones(10), 0.0, 0.0, 1e-12, -1)
    with pytest.raises(ValueError, match="need"):
        bloom_positions(1, 0, 2, 8, 10)
