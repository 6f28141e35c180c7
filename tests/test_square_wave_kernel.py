"""The compiled EM / EMS loop of Square Wave (fastldp._kernels._wave) against its NumPy twin.

The kernel evaluates every elementwise operation of the NumPy loop
(``expectation_maximization_numpy`` over a ``WaveChannel``) in the same
order, without fused multiply-adds, and sums as NumPy's pairwise ``sum``
does, so ``theta`` is the twin's bit for bit after any number of steps
(``assert_array_equal``, not a tolerance). Only the log-likelihood differs
in its last places (glibc's ``log`` and a sequential sum against NumPy's
``log`` and a BLAS dot), hence ``rtol=1e-12`` there; it decides the stop
only when it lands within that of the tolerance, which no case here does
(the iteration counts are asserted equal).
"""

import numpy as np
import pytest

from fastldp._kernels import _wave
from fastldp.ranges import SquareWave
from fastldp.ranges.square_wave import (DenseChannel, WaveChannel, expectation_maximization,
                                        expectation_maximization_numpy, transition_matrix)

CASES = [(1.0, 1024, 1024), (0.5, 256, 256), (0.3, 64, 100), (4.0, 256, 512), (2.0, 7, 300),
         (0.01, 50, 30), (10.0, 128, 64), (1.0, 2, 2)]


def _hist(eps, d, d_out, n, seed):
    sw = SquareWave(epsilon=eps, bins=d, output_bins=d_out)
    x = np.random.default_rng(seed).beta(5, 2, n)
    return np.bincount(sw.output_bin(sw.privatize(x, rng=seed + 1)),
                       minlength=d_out).astype(np.float64)


def _products(W, theta, r):
    fwd = _wave.forward(theta, W.mid, W._a, W._J, W._part, W.widths_out, W.p, W.q)
    bwd = _wave.backward(r, W._powers, W._above, W._cpoly, W.widths_out, W.p, W.q)
    return fwd, bwd


def test_kernel_sums_are_numpys_pairwise_sums():
    rng = np.random.default_rng(0)
    for n in [*range(0, 300), 1000, 1023, 1024, 1025, 2049, 4097, 16_384]:
        v = rng.random(n) * rng.choice([1e-9, 1.0, 1e6], n)  # magnitudes where order shows
        assert _wave.pairwise_sum(v) == v.sum(), n


@pytest.mark.parametrize("eps, d, d_out", CASES)
def test_kernel_products_are_the_wave_channels_bit_for_bit(eps, d, d_out):
    W = WaveChannel(eps, d, d_out)
    rng = np.random.default_rng(4)
    theta = rng.random(d)
    theta /= theta.sum()
    r = rng.random(d_out) * 1000
    fwd, bwd = _products(W, theta, r)
    np.testing.assert_array_equal(fwd, W.forward(theta))
    np.testing.assert_array_equal(bwd, W.backward(r))
    # and they are M theta and M^T r (the dense matrix, as WaveChannel's own test)
    M = transition_matrix(eps, d, d_out)
    np.testing.assert_allclose(fwd, M @ theta, rtol=1e-9, atol=0)
    np.testing.assert_allclose(bwd, M.T @ r, rtol=1e-9, atol=0)


@pytest.mark.parametrize("smoothing", [True, False], ids=["EMS", "EM"])
@pytest.mark.parametrize("eps, d, d_out", CASES)
def test_compiled_em_is_the_numpy_loop_bit_for_bit(eps, d, d_out, smoothing):
    W = WaveChannel(eps, d, d_out)
    hist = _hist(eps, d, d_out, 20_000, seed=int(eps * 100) + d)
    got = expectation_maximization(W, hist, smoothing=smoothing)
    want = expectation_maximization_numpy(W, hist, smoothing=smoothing)
    assert got[1] == want[1] and got[2] == want[2]
    np.testing.assert_array_equal(got[0], want[0])
    assert got[3] == pytest.approx(want[3], rel=1e-12)


@pytest.mark.parametrize("smoothing", [True, False], ids=["EMS", "EM"])
def test_compiled_em_stopped_by_the_cap_is_the_numpy_loop_bit_for_bit(smoothing):
    """``tolerance = 0``: only the cap (or the l1 move) stops it; from a given start."""
    eps, d = 1.0, 512
    W = WaveChannel(eps, d, d)
    hist = _hist(eps, d, d, 50_000, seed=3)
    start = np.random.default_rng(9).random(d) + 0.1
    start /= start.sum()
    for cap in (1, 2, 3, 50):
        got = expectation_maximization(W, hist, smoothing=smoothing, tolerance=0.0,
                                       max_iterations=cap, start=start)
        want = expectation_maximization_numpy(W, hist, smoothing=smoothing, tolerance=0.0,
                                              max_iterations=cap, start=start)
        assert got[1:3] == want[1:3] == (cap, False)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[3] == pytest.approx(want[3], rel=1e-12)
    assert start.sum() == pytest.approx(1.0)  # the start is not written to


@pytest.mark.parametrize("tolerance", [1e-4, 1e-3, 1.0, 1e3, np.inf])
@pytest.mark.parametrize("scale", [1, 10_000], ids=["n=2e4", "n=2e8"])
def test_the_likelihood_stop_is_the_numpy_loops(tolerance, scale):
    """The kernel takes the logs only where its bounds on the likelihood's change leave the
    test open, within a rounding margin that grows with n (about 2e-4 at n = 2e8 and
    d' = 256: there every step at tolerance 1e-4 takes them, the twin's ll ~ -1e9 still
    resolving 1e-4 to about 1e-6); the stop lands on the twin's step either way."""
    eps, d = 1.0, 256
    W = WaveChannel(eps, d, d)
    hist = _hist(eps, d, d, 20_000, seed=21) * scale
    for smoothing in (True, False):
        got = expectation_maximization(W, hist, smoothing=smoothing, tolerance=tolerance)
        want = expectation_maximization_numpy(W, hist, smoothing=smoothing,
                                              tolerance=tolerance)
        assert got[1:3] == want[1:3], smoothing
        np.testing.assert_array_equal(got[0], want[0])
        assert got[3] == pytest.approx(want[3], rel=1e-12)
    if tolerance == np.inf:
        assert got[1] == 3  # the first step the rule looks at the likelihood


@pytest.mark.parametrize("where", ["first", "middle", "last"])
@pytest.mark.parametrize("smoothing", [True, False], ids=["EMS", "EM"])
def test_all_reports_in_one_output_bin(where, smoothing):
    eps, d = 2.0, 128
    W = WaveChannel(eps, d, d)
    hist = np.zeros(d)
    hist[{"first": 0, "middle": d // 2, "last": d - 1}[where]] = 5_000
    got = expectation_maximization(W, hist, smoothing=smoothing)
    want = expectation_maximization_numpy(W, hist, smoothing=smoothing)
    assert got[1:3] == want[1:3]
    np.testing.assert_array_equal(got[0], want[0])
    assert got[3] == pytest.approx(want[3], rel=1e-12)
    assert got[0].sum() == pytest.approx(1.0, abs=1e-12)


def test_an_empty_histogram_returns_the_start_as_before():
    W = WaveChannel(1.0, 16, 16)
    theta, iterations, converged, ll = expectation_maximization(W, np.zeros(16), smoothing=True)
    np.testing.assert_array_equal(theta, np.full(16, 1 / 16))
    assert (iterations, converged, ll) == (0, True, 0.0)
    start = np.arange(1.0, 17.0) / 136
    got = expectation_maximization(W, np.zeros(16), smoothing=False, start=start)
    np.testing.assert_array_equal(got[0], start)
    assert got[1:] == (0, True, 0.0)


def test_wave_channel_em_runs_compiled_not_through_the_numpy_products(monkeypatch):
    """The WaveChannel case never calls forward / backward (the NumPy loop did, each step)."""
    W = WaveChannel(1.0, 64, 64)
    hist = _hist(1.0, 64, 64, 10_000, seed=5)
    want = expectation_maximization_numpy(W, hist, smoothing=True)

    def refuse(*args):
        raise AssertionError("the NumPy products were called")

    monkeypatch.setattr(WaveChannel, "forward", refuse)
    monkeypatch.setattr(WaveChannel, "backward", refuse)
    got = expectation_maximization(W, hist, smoothing=True)
    np.testing.assert_array_equal(got[0], want[0])
    assert got[1] == want[1]


def test_dense_channels_keep_the_numpy_loop():
    eps, d = 1.0, 32
    M = transition_matrix(eps, d, d)
    hist = _hist(eps, d, d, 5_000, seed=6)
    for channel in (M, DenseChannel(M)):
        got = expectation_maximization(channel, hist, smoothing=True)
        want = expectation_maximization_numpy(DenseChannel(M), hist, smoothing=True)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[1:] == want[1:]


def test_square_wave_estimate_is_the_numpy_loops_reconstruction():
    sw = SquareWave(epsilon=1.0, bins=256)
    x = np.random.default_rng(11).beta(5, 2, 30_000)
    reports = sw.privatize(x, rng=12)
    est = sw.estimate(reports)
    hist = np.bincount(sw.output_bin(reports), minlength=256).astype(np.float64)
    theta, iterations, converged, ll = expectation_maximization_numpy(
        WaveChannel(1.0, 256, 256), hist, smoothing=True)
    np.testing.assert_array_equal(est.distribution, theta)
    assert (est.iterations, est.converged) == (iterations, converged)
    np.testing.assert_array_equal(est.counts, 30_000 * theta)


def test_mismatched_shapes_and_tables_are_refused():
    W = WaveChannel(1.0, 16, 20)
    with pytest.raises(ValueError, match=r"hist must have shape \(20,\) and start \(16,\)"):
        expectation_maximization(W, np.ones(16), smoothing=True)
    with pytest.raises(ValueError, match=r"start \(16,\)"):
        expectation_maximization(W, np.ones(20), smoothing=True, start=np.ones(15) / 15)
    with pytest.raises(ValueError, match="'J' must have length 42"):
        _wave.expectation_maximization(np.ones(20), np.full(16, 1 / 16), W.mid, W._a,
                                       W._J[:-1], W._part, W.widths_out, W._powers, W._above,
                                       W._cpoly, W.p, W.q, True, 1e-3, 10)
    bad = W._J.copy()
    bad[3] = 99
    with pytest.raises(ValueError, match=r"J\[3\] = 99 is outside \[0, 17\]"):
        _wave.expectation_maximization(np.ones(20), np.full(16, 1 / 16), W.mid, W._a, bad,
                                       W._part, W.widths_out, W._powers, W._above, W._cpoly,
                                       W.p, W.q, True, 1e-3, 10)
    with pytest.raises(ValueError, match="positive total"):
        _wave.expectation_maximization(np.zeros(20), np.full(16, 1 / 16), W.mid, W._a, W._J,
                                       W._part, W.widths_out, W._powers, W._above, W._cpoly,
                                       W.p, W.q, True, 1e-3, 10)


@pytest.mark.slow
def test_compiled_em_is_the_numpy_loop_on_random_settings():
    """Many random (eps, d, d', n, smoothing, tolerance) settings; the fast sibling is
    test_compiled_em_is_the_numpy_loop_bit_for_bit."""
    rng = np.random.default_rng(2026)
    for case in range(60):
        eps = float(np.exp(rng.uniform(np.log(0.05), np.log(12.0))))
        d, d_out = (int(v) for v in rng.integers(2, 1500, size=2))
        n = int(rng.integers(1, 200_000))
        smoothing = bool(rng.integers(2))
        tolerance = float(10.0 ** rng.uniform(-6, 0))
        W = WaveChannel(eps, d, d_out)
        hist = _hist(eps, d, d_out, n, seed=case)
        got = expectation_maximization(W, hist, smoothing=smoothing, tolerance=tolerance)
        want = expectation_maximization_numpy(W, hist, smoothing=smoothing,
                                              tolerance=tolerance)
        assert got[1:3] == want[1:3], (case, eps, d, d_out, n, smoothing, tolerance)
        np.testing.assert_array_equal(got[0], want[0])
        assert got[3] == pytest.approx(want[3], rel=1e-12)
