"""The regression sweeps' speed paths give the numbers of the plain code, bit for bit.

- ``_gram.gram_and_l2_sums`` (the Lasso's ``X.T @ X`` and Sample-SDP's
  clipped sums from one set of BLAS chunk products) against the two plain
  products it replaces;
- the data draw and one quick cell of ``regression-n`` pinned to the numbers
  the code gave before the speed work (recorded 2026-12-01 from commit
  86494c0): a change of a random stream or of a method moves them.
"""

import hashlib

import numpy as np
import pytest

from fastldp.experiments.regression import runner
from fastldp.experiments.regression.spec import expand_grid, spec_from_dict_regression
from fastldp.regression import Lasso, SampleSDP, make_sparse_regression
from fastldp.regression import _gram
from fastldp.regression.local import Precomputed
from fastldp.regression._clipping import _BLOCK
from fastldp.regression.sample_sdp import default_radii, l2_clipped_sums


def _data(N, d, seed=0):
    gen = np.random.default_rng(seed)
    X = gen.standard_normal((N, d))
    return X, X[:, 0] * 0.5 + gen.standard_normal(N)


def _one_blas_thread():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    return threadpoolctl.threadpool_limits(limits=1, user_api="blas")


# N around the chunk boundaries: whole blocks, a tail under Q, between Q and 2Q, one block
# under 2Q; d odd (the two triangles round differently there) and even
@pytest.mark.parametrize("N, d, radius", [
    (3 * _BLOCK, 24, None),
    (2 * _BLOCK + 100, 17, None),
    (2 * _BLOCK + 300, 32, None),
    (_BLOCK + 511, 9, None),
    (400, 5, None),
    (2 * _BLOCK + 77, 12, 3.3),   # a radius that clips rows in every block: no sharing there
])
def test_shared_grams_equal_the_plain_products_bit_for_bit(N, d, radius):
    # fails if a chunk product is added out of OpenBLAS's order, the wrong triangle is
    # computed, or a clipped block's rows are taken unclipped
    X, y = _data(N, d, N + d)
    r_x, r_y = default_radii(d, N, 0.25, 1.0)
    r_x = r_x if radius is None else radius
    q = _gram.blas_chunk_rows()
    if q is None:
        pytest.skip("no OpenBLAS chunk found: the plain products are used")
    with _one_blas_thread():
        plain_gram = X.T @ X
        plain = l2_clipped_sums(X, y, r_x, r_y)
        gram, sums = _gram._shared(X, y, r_x, r_y, _BLOCK, q)
    assert np.array_equal(gram, plain_gram)
    assert np.array_equal(sums[0], plain[0]) and np.array_equal(sums[1], plain[1])
    assert sums[2:] == plain[2:]
    if radius is not None:
        assert sums[2] > 0


def test_the_probe_finds_openblas_chunk():
    # NumPy's and SciPy's BLAS are OpenBLAS here (their wheels): the shared path must be
    # found, or the speed-up is silently lost (a wrong triangle or order in _step fails here)
    threadpoolctl = pytest.importorskip("threadpoolctl")
    blas = [i for i in threadpoolctl.threadpool_info() if i.get("user_api") == "blas"]
    if not blas or any(i.get("internal_api") != "openblas" for i in blas):
        pytest.skip("not OpenBLAS")
    assert _gram.blas_chunk_rows() is not None


def test_sample_sdp_blocks_line_up_with_the_common_chunks():
    # every block's chunk products serve the Lasso Gram only when the block is a multiple of
    # the chunk; 7,680 is one of each chunk that sample_sdp._BLOCK's comment lists
    # (OpenBLAS's common double-precision kernels use 256 rows on AMD Zen, 384 on Intel)
    for q in (64, 96, 128, 160, 192, 256, 320, 384, 512, 640, 768):
        assert _BLOCK % q == 0, q


def test_the_probe_rejects_a_wrong_chunk():
    # the probe's test can fail: half the found chunk sums in another order (not NumPy's bits)
    q = _gram.blas_chunk_rows()
    if q is None:
        pytest.skip("no OpenBLAS chunk found: the plain products are used")
    X, _ = _data(9 * q + 5, 37, 1)
    with _one_blas_thread():
        assert np.array_equal(_gram._chunked_gram(X, q), X.T @ X)
        assert not np.array_equal(_gram._chunked_gram(X, q // 2), X.T @ X)


def test_lasso_on_a_precomputed_shared_with_sample_sdp_is_the_cold_lasso():
    # the Gram matrix Sample-SDP leaves in the Precomputed is the Lasso's own X.T @ X
    D = make_sparse_regression(n=800, m=50, d=24, k=3, sigma=0.25, rng=3)
    pre = Precomputed(D.X, D.y, D.users)
    with _one_blas_thread():
        SampleSDP(epsilon=4.0, sigma=0.25, max_messages=1000).fit_precomputed(pre, rng=0)
        assert pre.gram_cached()
        warm = Lasso(sigma=0.25, fit_intercept=False).fit_precomputed(pre)
        cold = Lasso(sigma=0.25, fit_intercept=False).fit(D.X, D.y)
    assert np.array_equal(warm.coef_, cold.coef_)


def _sha(a):
    return hashlib.sha256(np.ascontiguousarray(a).tobytes()).hexdigest()


def test_the_data_draw_is_pinned():
    # the random streams of the synthetic draw: X, X_test, theta are pure NumPy draws
    # (platform-independent bits); y mixes in a BLAS product, pinned to 1e-12
    D = make_sparse_regression(n=300, m=20, d=16, k=3, sigma=0.5, n_test=40,
                               rng=np.random.SeedSequence(2026, spawn_key=(1, 2)))
    assert _sha(D.X) == "c8114f4e457059a1d8d356c4b069c3a6315e3bb22aadceac2d966baa418a9c8d"
    assert _sha(D.X_test) == "2d7378b5473aea36f3c84515b0682f179f977273611e9ca168f849840be923ac"
    assert _sha(D.theta) == "981988d26bac926e095c27bd532895713d1f67e7db2e599022ecec2c7c2149a0"
    assert _sha(D.users) == "040a3f91be581845bb2385ebac78a3542fc4d6cb92c92bd9775f36f731829ac8"
    assert D.y[:3] == pytest.approx([-0.4497740806544414, -0.1887822029618289,
                                     -0.7916220300014756], rel=1e-12)
    assert float(D.y.sum()) == pytest.approx(-0.6969759678281093, rel=1e-10)
    assert D.y_test[:2] == pytest.approx([-0.35114010510216587, -1.4353880898744977], rel=1e-12)
    # the nested draw (regression-n): theta and the test set first as before, then x and the
    # noise from two seeded generators; a change of its order changes every row of the n sweep
    N = make_sparse_regression(n=300, m=20, d=16, k=3, sigma=0.5, n_test=40, nested=True,
                               rng=np.random.SeedSequence(2026, spawn_key=(1, 2)))
    assert _sha(N.X) == "649da8586b1243bb82b1ec4e63091c158fd1a04e31f06a18fabe5602ab593fc8"
    assert _sha(N.X_test) == "fcbeef81d005864e1bf11d7545febbf1a543c0ea996af6fb65f8da41cfdd3689"
    assert _sha(N.theta) == _sha(D.theta)
    assert N.y[:3] == pytest.approx([-0.9248382507695272, 0.3741386392715219,
                                     1.2329162771710633], rel=1e-12)
    assert float(N.y.sum()) == pytest.approx(-73.58969016589202, rel=1e-10)


#: one quick cell of regression-n (n = 2000, m = 50, d = 64, eps = 4, seed 0) before the
#: speed work: method -> (rel_error, test_mse, support_size, exact_support). U2R-shrink's
#: row is U2R's fit shrunk since 2026-12-02 (U2R's random stream: U2R.with_shrinkage); with
#: its own stream it was (0.03381263941560511, 0.06274505083690829, 8, True)
PINNED = {
    "U2R": (0.004775606242124111, 0.06170482229618349, 8, True),
    "U2R-shrink": (0.03217333865849892, 0.06265549346536854, 8, True),
    "Sample-SDP": (0.03622737262998934, 0.0630282428385703, 8, True),
    "LDP-IHT": (0.10609356581667528, 0.07362263739514864, 8, True),
    "2-SLR": (0.7525103966926533, 0.6076726820930737, 8, True),
    "Lasso": (0.006416019976886396, 0.061742346255150876, 9, False),
}


def test_a_quick_cell_is_pinned():
    # the whole pipeline (streams, data, every method, the shared Gram matrices: Sample-SDP
    # takes the aggregate path here) reproduces the earlier rows; equal bits here, the
    # tolerance only allows another BLAS's last-bit rounding
    spec = spec_from_dict_regression({
        "name": "regression-n", "methods": list(PINNED), "seeds": 1,
        "fixed": {"m": 50, "d": 64, "k": 8, "sigma": 0.25, "eps": 4.0},
        "grid": [{"n": [2000]}]})
    (cell,) = expand_grid(spec)
    rows = {r["method"]: r for r in runner.run_cell(cell, n_threads=1)}
    for method, (rel, mse, size, exact) in PINNED.items():
        row = rows[method]
        assert not row["failure"], row["failure"]
        assert row["rel_error"] == pytest.approx(rel, rel=1e-9), method
        assert row["test_mse"] == pytest.approx(mse, rel=1e-9), method
        assert (row["support_size"], row["exact_support"]) == (size, exact), method


def test_a_chunk_mixing_float32_and_float64_users_solves_each_user_alone():
    # screened_local_lasso gathers a chunk's rows once and splits it into the users solved in
    # float32 and those whose huge rows need float64: each user's solution must be the one it
    # gets alone (fails if the split takes another user's rows or row count)
    from fastldp.regression._rows import group_users
    from fastldp.regression.local import screened_local_lasso

    D = make_sparse_regression(n=40, m=12, d=10, k=2, sigma=0.25, rng=8)
    data = group_users(D.X, D.y, D.users, "test")
    X, y = data.X.copy(), data.y.copy()
    counts = data.counts.copy()
    wide = [3, 17, 30]
    X[wide] *= 2.0 ** 70  # beyond float32's products: these users are solved in float64
    y[wide] *= 2.0 ** 70
    counts[5] = 7  # one user with fewer rows: its count must follow it
    X[5, 7:], y[5, 7:] = 0.0, 0.0
    together = screened_local_lasso(X, y, counts, 0.05, screen=6, chunk=40, n_threads=1)
    for u in range(40):
        alone = screened_local_lasso(X, y, counts, 0.05, users=np.array([u]), screen=6,
                                     chunk=40, n_threads=1)
        np.testing.assert_array_equal(together[u], alone[0], err_msg=str(u))
    assert np.all(np.isfinite(together)) and np.abs(together[wide]).max() > 0
