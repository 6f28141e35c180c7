"""Square Wave with EM and EMS (issue 35, item 4): the wave, the binned channel, the EM's fixed
point, the fast products against their dense twin, partials, the audit, and accuracy against
the authors' published anchors (Beta(5, 2), n = 10^5)."""

from decimal import Decimal, localcontext
from math import exp, sqrt

import numpy as np
import pytest
from scipy import integrate

from fastldp import audit
from fastldp.ranges import SquareWave, SquareWaveEstimate
from fastldp.ranges.square_wave import (DenseChannel, WaveChannel, bandwidth,
                                        expectation_maximization, smooth, transition_matrix)
from fastldp.streaming import Partial


# ------------------------------------------------------------------ the wave
def _bandwidth_decimal(eps: float) -> float:
    """The paper's formula at 60 digits (no cancellation)."""
    with localcontext() as ctx:
        ctx.prec = 60
        e = Decimal(eps).exp()
        x = Decimal(eps)
        return float((x * e - e + 1) / (2 * e * (e - 1 - x)))


@pytest.mark.parametrize("eps", [1e-4, 1e-3, 0.05, 0.5, 0.999, 1.0, 1.001, 2.0, 4.0, 10.0, 20.0])
def test_bandwidth_is_the_papers_formula(eps):
    assert bandwidth(eps) == pytest.approx(_bandwidth_decimal(eps), rel=1e-12)


def test_bandwidth_limits():
    assert bandwidth(1e-4) == pytest.approx(0.5, abs=1e-4)      # b -> 1/2 as eps -> 0
    b = bandwidth(20.0)
    assert b == pytest.approx((20.0 - 1.0) / (2.0 * (exp(20.0) - 21.0)), rel=1e-8)


@pytest.mark.parametrize("eps", [0.1, 1.0, 4.0])
def test_densities_normalize_with_ratio_e_eps(eps):
    sw = SquareWave(epsilon=eps)
    assert sw.p / sw.q == pytest.approx(exp(eps), rel=1e-13)
    assert 2 * sw.b * sw.p + sw.q == pytest.approx(1.0, rel=1e-14)


@pytest.mark.parametrize("eps, v", [(1.0, 0.0), (1.0, 0.3), (4.0, 1.0)])
def test_reports_follow_the_wave(eps, v):
    """Bin frequencies of the reports against the exact law, 5 binomial sd each."""
    n = 200_000
    sw = SquareWave(epsilon=eps, bins=8)
    y = sw.privatize(np.full(n, v), rng=11)
    assert (y >= -sw.b).all() and (y <= 1 + sw.b).all()
    edges = np.linspace(-sw.b, 1 + sw.b, 41)
    lo, hi = edges[:-1], edges[1:]
    overlap = np.clip(np.minimum(hi, v + sw.b) - np.maximum(lo, v - sw.b), 0, None)
    prob = sw.q * (hi - lo) + (sw.p - sw.q) * overlap
    assert prob.sum() == pytest.approx(1.0, abs=1e-12)
    freq = np.histogram(y, bins=edges)[0] / n
    assert np.all(np.abs(freq - prob) <= 5 * np.sqrt(prob * (1 - prob) / n))


def test_density_ratio_is_bounded_by_e_eps():
    sw = SquareWave(epsilon=1.5)
    ys = np.linspace(-sw.b, 1 + sw.b, 3001)
    vs = np.linspace(0, 1, 101)
    dens = np.array([sw.density(ys, v) for v in vs])
    ratio = dens.max(axis=0) / dens.min(axis=0)
    assert ratio.max() == pytest.approx(exp(1.5), rel=1e-13)


# ------------------------------------------------------------------ the binned channel
@pytest.mark.parametrize("eps, d, d_out", [(0.5, 6, 9), (2.0, 8, 8), (6.0, 5, 7)])
def test_transition_matrix_against_numeric_integration(eps, d, d_out):
    M = transition_matrix(eps, d, d_out)
    b = bandwidth(eps)
    e = exp(eps)
    p, q = e / (2 * b * e + 1), 1 / (2 * b * e + 1)
    y = np.linspace(-b, 1 + b, d_out + 1)

    def prob(v, j):  # P(report in output bin j | v), from the density
        over = max(0.0, min(y[j + 1], v + b) - max(y[j], v - b))
        return q * (y[j + 1] - y[j]) + (p - q) * over

    for i in range(d):
        x0, x1 = i / d, (i + 1) / d
        for j in range(d_out):
            kinks = [t for t in (y[j] - b, y[j] + b, y[j + 1] - b, y[j + 1] + b) if x0 < t < x1]
            got = integrate.quad(prob, x0, x1, args=(j,), points=kinks or None,
                                 epsabs=1e-15, epsrel=1e-12)[0] * d
            assert M[j, i] == pytest.approx(got, rel=1e-9, abs=1e-13), (i, j)
    np.testing.assert_allclose(M.sum(axis=0), 1.0, atol=1e-12)


@pytest.mark.parametrize("eps, d, d_out", [(1.0, 1024, 1024), (0.3, 64, 100), (4.0, 256, 512),
                                           (0.01, 50, 30), (2.0, 7, 300)])
def test_wave_channel_is_the_dense_matrix(eps, d, d_out):
    rng = np.random.default_rng(3)
    M = transition_matrix(eps, d, d_out)
    W = WaveChannel(eps, d, d_out)
    theta = rng.random(d)
    theta /= theta.sum()
    r = rng.random(d_out) * 1000
    np.testing.assert_allclose(W.forward(theta), M @ theta, rtol=1e-10, atol=0)
    np.testing.assert_allclose(W.backward(r), M.T @ r, rtol=1e-10, atol=0)


# ------------------------------------------------------------------ EM and EMS
def test_em_fixed_point_is_the_distribution_behind_expected_counts():
    """With counts exactly n M theta*, theta* maximizes the likelihood (M has full column rank,
    so the maximum is unique) and is a fixed point of the EM step: EM from uniform reaches it."""
    eps, d = 3.0, 6
    M = transition_matrix(eps, d, d)
    assert np.linalg.matrix_rank(M) == d
    rng = np.random.default_rng(5)
    target = rng.random(d) + 0.2
    target /= target.sum()
    hist = 1e6 * (M @ target)
    step = target * (M.T @ (hist / (M @ target))) / hist.sum()
    np.testing.assert_allclose(step, target, rtol=1e-13)           # a fixed point exactly
    theta, iterations, converged, _ = expectation_maximization(
        M, hist, smoothing=False, tolerance=0.0, max_iterations=200_000)
    assert converged
    np.testing.assert_allclose(theta, target, atol=1e-5)


def test_ems_fixed_point_satisfies_the_smoothed_step():
    """EMS stops near a fixed point of smoothing after the EM step."""
    eps, d = 2.0, 32
    sw = SquareWave(epsilon=eps, bins=d, tolerance=1e-9)
    x = np.random.default_rng(8).beta(5, 2, 50_000)
    est = sw.estimate(sw.privatize(x, rng=9))
    M = sw.transition_matrix()
    hist = np.bincount(sw.output_bin(sw.privatize(x, rng=9)), minlength=d).astype(float)
    theta = est.distribution
    step = smooth(theta * (M.T @ (hist / (M @ theta))))
    step /= step.sum()
    assert np.abs(step - theta).sum() < 1e-4
    assert est.converged


@pytest.mark.parametrize("smoothing", [True, False])
def test_fast_em_has_the_iterates_of_the_dense_twin(smoothing):
    eps, d = 1.0, 256
    sw = SquareWave(epsilon=eps, bins=d, smoothing=smoothing)
    x = np.random.default_rng(1).beta(5, 2, 20_000)
    hist = np.bincount(sw.output_bin(sw.privatize(x, rng=2)), minlength=d)
    fast = expectation_maximization(WaveChannel(eps, d, d), hist, smoothing=smoothing)
    dense = expectation_maximization(DenseChannel(transition_matrix(eps, d, d)), hist,
                                     smoothing=smoothing)
    assert fast[1] == dense[1] and fast[2] == dense[2]
    np.testing.assert_allclose(fast[0], dense[0], rtol=1e-8, atol=1e-14)


def test_the_iteration_cap_is_reported():
    sw = SquareWave(epsilon=1.0, bins=64, tolerance=1e-12, max_iterations=5)
    est = sw.estimate(sw.privatize(np.full(1000, 0.5), rng=0))
    assert est.iterations == 5 and not est.converged


def test_smoothing_is_binomial_with_renormalized_ends():
    theta = np.array([1.0, 0.0, 0.0, 0.0, 2.0])
    np.testing.assert_allclose(smooth(theta), [2 / 3, 1 / 4, 0, 2 / 4, 4 / 3])


# ------------------------------------------------------------------ partials and results
def test_partials_merge_bit_identically():
    sw = SquareWave(epsilon=1.0, bins=128)
    y = sw.privatize(np.random.default_rng(4).beta(2, 5, 30_000), rng=5)
    whole = sw.estimate(y)
    parts = [sw.partial(chunk) for chunk in np.array_split(y, 7)]
    merged = parts[0]
    for part in parts[1:]:
        merged = sw.merge(merged, part)
    again = Partial.from_bytes(merged.to_bytes())  # a round trip through bytes
    for p in (merged, again):
        est = sw.finalize(p)
        assert np.array_equal(est.counts, whole.counts) and est.iterations == whole.iterations
    hist = np.rint(merged.sums["hist"].value())
    assert np.array_equal(hist, np.bincount(sw.output_bin(y), minlength=128))


def test_partials_of_other_parameters_are_refused():
    a, b = SquareWave(epsilon=1.0, bins=64), SquareWave(epsilon=1.0, bins=64, smoothing=False)
    pa = a.partial(a.privatize(np.full(10, 0.5), rng=0))
    with pytest.raises(ValueError, match="other parameters"):
        b.finalize(pa)
    with pytest.raises(TypeError, match="Partial"):
        a.merge(pa, "not a partial")


def test_malformed_reports_are_replaced_and_counted():
    sw = SquareWave(epsilon=1.0, bins=16)
    good = list(sw.privatize(np.full(5, 0.5), rng=0))
    reports = good + [float("nan"), float("inf"), -float("inf"), 7.0, "x", None]
    est = sw.estimate(np.array(reports, dtype=object))
    s = est.sanitization
    assert s.n_received == 11 and s.n_valid == 5 and s.wrong_dtype
    assert s.by_reason == {"out_of_range": 1, "infinite": 2, "nan": 1, "non_numeric": 2}
    assert est.n == 11
    clean, _ = sw.sanitize(np.array([7.0, -7.0, np.nan]), "test")
    np.testing.assert_array_equal(clean, [1 + sw.b, -sw.b, 0.5])


def _estimate(distribution):
    from fastldp.results import PrivacyStatement
    n = 1000
    return SquareWaveEstimate(n * distribution, None, n, PrivacyStatement.local(epsilon=1.0),
                              None, distribution=distribution)


def test_range_and_quantile_answers_against_brute_force():
    rng = np.random.default_rng(6)
    dist = rng.random(10)
    dist /= dist.sum()
    est = _estimate(dist)
    # brute force: 10^6 points spread evenly in each bin, weighted by the bin's mass
    fine = 100_000
    xs = (np.arange(10 * fine) + 0.5) / (10 * fine)
    w = np.repeat(dist / fine, fine)
    for lo, hi in [(0.0, 1.0), (0.13, 0.57), (0.5, 0.5), (0.91, 1.0)]:
        brute = 1000 * w[(xs >= lo) & (xs <= hi)].sum()
        assert est.value_range_count(lo, hi) == pytest.approx(brute, abs=1000 * 2 / fine)
    for q in (0.1, 0.5, 0.93):
        brute = xs[np.searchsorted(np.cumsum(w), q)]
        assert est.value_quantile(q) == pytest.approx(brute, abs=2 / (10 * fine))
    assert est.range_count(2, 4) == pytest.approx(1000 * dist[2:5].sum())
    assert est.mean() == pytest.approx(float(dist @ ((np.arange(10) + 0.5) / 10)))
    with pytest.raises(ValueError, match="low, high"):
        est.value_range_count(0.5, 0.4)


# ------------------------------------------------------------------ audit
@pytest.mark.parametrize("eps", [1.0, 2.5])
def test_audit_channels_pass_and_controls_are_caught(eps):
    for name in ("square-wave", "square-wave-binned"):
        row = audit.audit_channel(audit.get_channel(name, epsilon=eps), n=40_000, rng=2)
        assert row.holds and row.as_expected, name
        if row.exact is not None:
            assert row.exact.epsilon_audited == pytest.approx(eps, rel=1e-12)
    controls = {k: c for k, c in audit.negative_controls(eps).items()
                if c.control_of in ("square-wave", "square-wave-binned")}
    assert len(controls) == 4
    for ctrl in controls.values():
        row = audit.audit_channel(ctrl, n=40_000, rng=2)
        assert not row.holds and row.as_expected, ctrl.name


# ------------------------------------------------------------------ input
def test_bad_input_names_the_parameter():
    for bad in (float("nan"), 0.0, 25.0):
        with pytest.raises(ValueError, match="epsilon"):
            SquareWave(epsilon=bad)
    with pytest.raises(ValueError, match="bins"):
        SquareWave(epsilon=1.0, bins=1)
    with pytest.raises(TypeError, match="smoothing"):
        SquareWave(epsilon=1.0, smoothing="yes")
    with pytest.raises(ValueError, match="tolerance"):
        SquareWave(epsilon=1.0, tolerance=float("nan"))
    sw = SquareWave(epsilon=1.0, bins=8)
    with pytest.raises(ValueError, match=r"values.*\[0.0, 1.0\].*1.5.*index 1"):
        sw.privatize([0.2, 1.5])
    with pytest.raises(ValueError, match="values"):
        sw.privatize([float("nan")])
    with pytest.raises(ValueError, match="epsilons"):
        sw.privatize([0.5], epsilons=2.0)
    with pytest.raises(ValueError, match="reports"):
        sw.partial(np.zeros((2, 2)))


# ------------------------------------------------------------------ accuracy (the anchors)
#: the authors' reference code on Beta(5, 2), n = 10^5, d = d' = 1024 (issue 35)
ANCHORS = {("EMS", 0.5): 0.0107, ("EMS", 1.0): 0.0064, ("EMS", 2.0): 0.0036,
           ("EMS", 4.0): 0.0015, ("EM", 0.5): 0.0135}


def wasserstein_to_sample(est, x, bins):
    """W1 between the estimate and the sample's histogram on the same bins (as the reference)."""
    real = np.bincount(np.minimum((x * bins).astype(np.int64), bins - 1), minlength=bins)
    return float(np.abs(np.cumsum(est.distribution) - np.cumsum(real / x.size)).sum() / bins)


def _anchor_check(method, eps, reps):
    """Mean W1 over ``reps`` runs is at most the anchor plus 3 standard errors of that mean."""
    sw = SquareWave(epsilon=eps, smoothing=method == "EMS")
    rng = np.random.default_rng(20261204)
    w = []
    for _ in range(reps):
        x = rng.beta(5.0, 2.0, 100_000)
        w.append(wasserstein_to_sample(sw.estimate(sw.privatize(x, rng=rng)), x, sw.bins))
    w = np.array(w)
    mean, se = w.mean(), w.std(ddof=1) / sqrt(reps)
    assert mean <= ANCHORS[(method, eps)] + 3 * se, (method, eps, w)
    return mean


def test_ems_matches_the_published_accuracy_at_eps_4():
    """The fast sibling of the slow test below: one budget, three runs."""
    _anchor_check("EMS", 4.0, 3)


@pytest.mark.slow
@pytest.mark.parametrize("method, eps", list(ANCHORS))
def test_ems_and_em_match_the_published_accuracy(method, eps):
    _anchor_check(method, eps, 8)


# ------------------------------------------------------------------ floating point
def _possible_on_the_wave_of_zero(y: float, b: float, p: float) -> bool:
    """Can ``privatize(0.0)`` return exactly ``y`` on its wave? There the report is
    ``fl(-b + fl(u / p))`` with ``u`` a multiple of 2^-53 (numpy's ``Generator.random``);
    invert and try the neighbouring grid points."""
    j = round((y + b) * p * 2**53)
    return any((-b) + (t * 2.0**-53) / p == y for t in range(max(j - 4, 0), j + 5))


def test_reports_are_doubles_whose_set_depends_on_the_value():
    """The floating-point position (module docstring): like Piecewise, Square Wave carries the
    ideal mechanism's guarantee only. Reports of v = 0.3 below 0.3 - b (drawn as -b + u / q)
    mostly lie off the double grid v = 0 can produce there (-b + u / p), so they rule v = 0 out
    with certainty; every report of v = 0 in the same interval is on its grid (the check is
    exact)."""
    sw = SquareWave(epsilon=1.0, bins=8)
    b, p = sw.b, sw.p
    top = 0.3 - b                          # inside the wave of v = 0 (b > 0.15 at eps = 1)
    y0 = sw.privatize(np.zeros(20_000), rng=21)
    y0 = y0[y0 < top][:300]
    assert y0.size == 300 and all(_possible_on_the_wave_of_zero(float(y), b, p) for y in y0)
    y1 = sw.privatize(np.full(20_000, 0.3), rng=22)
    y1 = y1[y1 < top][:300]
    impossible = np.mean([not _possible_on_the_wave_of_zero(float(y), b, p) for y in y1])
    assert impossible > 0.5


def test_report_files_decode_to_the_estimate(tmp_path):
    """Two report files decoded together give the in-memory estimate bit for bit."""
    pytest.importorskip("pyarrow")
    from fastldp import reports
    sw = SquareWave(epsilon=1.0, bins=64)
    y = sw.privatize(np.random.default_rng(0).beta(5, 2, 5000), rng=1)
    paths = [tmp_path / "a.parquet", tmp_path / "b.parquet"]
    reports.write_reports(paths[0], sw, y[:2000])
    reports.write_reports(paths[1], sw, y[2000:])
    decoded = reports.decode_files(sw, [str(p) for p in paths])
    direct = sw.estimate(y)
    assert isinstance(decoded, SquareWaveEstimate)
    assert np.array_equal(decoded.counts, direct.counts)
    assert decoded.iterations == direct.iterations and decoded.n == 5000
