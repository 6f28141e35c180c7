"""The compiled local-Lasso iterations (fastldp._kernels._lasso) against their twins.

- the product ``X^T (X z) inv_m - xty`` equals a NumPy twin written in the
  kernel's documented order of additions, bit for bit (every lane does the
  scalar code's float32 operations, so vectorizing cannot change it);
- FISTA and the power iteration agree with the NumPy implementation in
  ``fastldp.regression.local`` (BLAS orders its additions otherwise) to
  float32 rounding, restarts and early stops included;
- ``local_lasso`` with and without the kernel gives the same solutions bit
  for bit wherever the active set certifies a user (same support and signs,
  same float64 closed form).
"""

import math

import numpy as np
import pytest

from fastldp._kernels import _lasso
from fastldp.regression import make_sparse_regression
from fastldp.regression import local as L
from fastldp.regression._rows import group_users

LANES = 16


def _tree(s):
    s = [np.float32(v) for v in s]
    return np.float32(
        ((((s[0] + s[1]) + (s[2] + s[3])) + ((s[4] + s[5]) + (s[6] + s[7])))
         + (((s[8] + s[9]) + (s[10] + s[11])) + ((s[12] + s[13]) + (s[14] + s[15])))))


def _twin_gradient(X, z, inv_m, xty):
    """src/lasso.h's fastldp_lasso_gradient, operation by operation, in NumPy float32."""
    m, p = X.shape
    end = p - p % LANES
    r = np.empty(m, np.float32)
    for i in range(m):  # the four-row blocks only group rows; each row's order is this
        s = np.zeros(LANES, np.float32)
        for j in range(0, end, LANES):
            s = s + X[i, j:j + LANES] * z[j:j + LANES]
        t = np.float32(0)
        for j in range(end, p):
            t = np.float32(t + X[i, j] * z[j])
        r[i] = np.float32(_tree(s) + t)
    g = np.zeros(p, np.float32)
    i = 0
    while i + 4 <= m:
        g = g + ((X[i] * r[i] + X[i + 1] * r[i + 1]) + (X[i + 2] * r[i + 2] + X[i + 3] * r[i + 3]))
        i += 4
    for i in range(i, m):
        g = g + X[i] * r[i]
    return g * np.float32(inv_m) - xty


@pytest.mark.parametrize("m, p", [(50, 100), (7, 3), (13, 37), (4, 16), (1, 1), (25, 50)])
def test_gradient_matches_its_twin_bit_for_bit(m, p):
    gen = np.random.default_rng(m * 1000 + p)
    X = gen.standard_normal((m, p)).astype(np.float32)
    z = gen.standard_normal(p).astype(np.float32)
    xty = gen.standard_normal(p).astype(np.float32)
    inv = np.float32(1 / m)
    got = _lasso.gradient(X, z, inv, xty)
    want = _twin_gradient(X, z, inv, xty)
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    # and it is the product, to float32 rounding
    exact = X.astype(np.float64).T @ (X.astype(np.float64) @ z) / m - xty
    np.testing.assert_allclose(got, exact, rtol=0, atol=1e-4 * max(1.0, np.abs(exact).max()))


def _chunk(n=64, m=50, p=100, seed=1):
    D = make_sparse_regression(n=n, m=m, d=p, k=5, sigma=0.25, rng=seed, sampler="fastldp")
    g = group_users(D.X, D.y, D.users, "test")
    X = np.ascontiguousarray(g.X, dtype=np.float32)
    y = np.ascontiguousarray(g.y, dtype=np.float32)
    inv = (1.0 / g.counts.astype(np.float32))[:, None]
    return X, y, inv


def test_power_steps_match_numpy_power_iteration():
    X, _, inv = _chunk()
    n, m, p = X.shape
    X64 = X.astype(np.float64)
    v = np.ones((n, p), dtype=np.float32) / np.sqrt(p)
    for _ in range(6):
        v = L._xt(X64, L._x(X64, v)) * inv
        norm = np.linalg.norm(v, axis=1, keepdims=True)
        v /= np.maximum(norm, 1e-12)
    want = (1.0 / (norm[:, 0] * 1.15 + 1e-6).astype(np.float32))
    got = _lasso.power_steps(X, np.ascontiguousarray(inv[:, 0]))
    assert got.dtype == np.float32
    np.testing.assert_allclose(got, want, rtol=1e-6)
    # the step is 1 / (1.15 L), L = ||A v|| <= the largest eigenvalue of A (six rounds
    # from a flat start may stay well below it: FISTA's restarts cover that)
    top = np.array([np.linalg.eigvalsh(X64[u].T @ X64[u] * inv[u, 0])[-1] for u in range(n)])
    estimate = (1.0 / got - 1e-6) / 1.15
    assert np.all(estimate <= top * (1 + 1e-5)) and np.all(estimate > 0.5 * top)


@pytest.mark.parametrize("tol", [None, 1e-4])
def test_fista_matches_numpy_fista(tol):
    X, y, inv = _chunk(seed=2)
    n, m, p = X.shape
    Xty = L._xt(X, y) * inv
    step = _lasso.power_steps(X, np.ascontiguousarray(inv[:, 0]))[:, None]
    alpha = 0.25 * math.sqrt(2 * math.log(p) / m)
    bound = np.full((n, 1), 1e6)
    # a few users with a bound their iterates exceed: they restart with half the step
    bound[:5] = 1e-3
    b0 = np.zeros((n, p), np.float32)
    t0 = np.ones((n, 1))
    want = L._fista(X, Xty, inv, step, alpha, b0, None, t0, 60, tol, bound)
    got = L._fista_compiled(X, Xty, inv, step, alpha, b0, None, t0, 60, tol, bound)
    b_w, z_w, t_w, s_w = want
    b_g, z_g, t_g, s_g = got
    assert np.array_equal(s_g, s_w)  # the restarts (halvings) happened at the same users
    assert s_g[:5].max() < step[:5].min() and np.array_equal(s_g[5:], step[5:])
    np.testing.assert_allclose(b_g, b_w, rtol=0, atol=2e-5)
    np.testing.assert_allclose(z_g, z_w, rtol=0, atol=2e-5)
    if tol is None:
        assert np.array_equal(t_g, t_w)  # t depends on the iteration count only
    else:  # early stops: the same iteration for nearly every user (t counts them)
        assert np.mean(t_g[:, 0] == t_w[:, 0]) > 0.95
    assert (b0 == 0).all() and (t0 == 1).all()  # inputs left as they were


@pytest.mark.parametrize("m, screen", [(50, 100), (25, 50)])
def test_local_lasso_same_solutions_with_and_without_the_kernel(m, screen):
    D = make_sparse_regression(n=600, m=m, d=256, k=8, sigma=0.25, rng=7, sampler="fastldp")
    g = group_users(D.X, D.y, D.users, "test")
    alpha = 0.25 * math.sqrt(2 * math.log(256) / m)
    corr = np.abs(L._xt(g.X, g.y))
    keep = np.sort(np.argpartition(-corr, screen - 1, axis=1)[:, :screen], axis=1)
    Xs = np.take_along_axis(g.X, keep[:, None, :], axis=2).astype(np.float32)
    ys = g.y.astype(np.float32)
    fast = L.local_lasso(Xs, ys, g.counts, alpha)
    twin = L.local_lasso(Xs, ys, g.counts, alpha, compiled=False)
    assert np.array_equal(fast, twin)
    assert (fast != 0).sum(axis=1).mean() > 2  # solutions with supports, not all zero


def test_kernel_inputs_are_checked():
    with pytest.raises(ValueError, match="m, p >= 1"):
        _lasso.gradient(np.zeros((2, 3), np.float32), np.zeros(2, np.float32), 1.0,
                        np.zeros(3, np.float32))
