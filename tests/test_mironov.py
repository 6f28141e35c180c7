"""Mironov's attack (fastldp.audit.mironov): it breaks the textbook sampler, and gains nothing
against the secure options (Laplace(secure=True), the exact samplers of fastldp.noise)."""

import math

import numpy as np
import pytest

from fastldp import audit, cli
from fastldp.audit.empirical import threshold_test
from fastldp.audit.mironov import (K_MAX, attack_statistic, mironov_attack, textbook_laplace,
                                   textbook_support)


def _brute_support(y: float, x: float, scale: float, window: int = 3000) -> bool:
    """Naive twin of textbook_support: scan every k within `window` of the real inverse.

    Uses the sampler's formula term by term on a numpy array of candidate k (the same
    np.log), both signs, and compares each output with y exactly.
    """
    for sign in (1.0, -1.0):
        w = sign * (y - x)                      # the noise magnitude, approximately
        if w < 0:
            continue
        k_est = math.exp(-w / scale) * 2.0**53
        lo = max(1, int(k_est) - window)
        hi = min(K_MAX - 1, int(k_est) + window)
        k = np.arange(lo, hi + 1, dtype=np.int64)
        noise = scale * -np.log(k.astype(np.float64) * 2.0**-53)
        if np.any(x + sign * noise == y):
            return True
    return False


@pytest.mark.parametrize("scale", [0.5, 1.0, 2.0])
def test_the_support_check_never_misses_a_release(scale):
    # every release of x is in the image of x: the attack has no false alarms
    for x, seed in ((0.0, 1), (1.0, 2), (-1.0, 3)):
        y = textbook_laplace(x, scale, 5000, rng=seed)
        assert textbook_support(y, x, scale).all()


def test_the_support_check_matches_an_exhaustive_local_scan():
    # releases of x = 1 (some inside the image of 0, most not) against the naive scan
    y = textbook_laplace(1.0, 1.0, 300, rng=4)
    fast = textbook_support(y, 0.0, 1.0)
    slow = np.array([_brute_support(float(v), 0.0, 1.0) for v in y])
    np.testing.assert_array_equal(fast, slow)
    assert 0 < fast.sum() < fast.size        # both verdicts occur: the comparison can fail
    assert not textbook_support(np.array([np.nan, np.inf, -np.inf]), 0.0, 1.0).any()


def test_the_attack_succeeds_far_above_the_claim_on_the_textbook_sampler():
    """At eps = 1 (b = 1, inputs 0 and 1): most releases are impossible under the other input.

    Measured at these seeds: 63% of releases distinguishable with certainty. The
    fraction of releases of 1 outside the image of 0 is a mean of n = 20,000 Bernoulli
    variables (sd <= sqrt(0.25 / n) = 0.0035), so 0.55 is over 20 sd below it; the
    event has probability 0 under x = 0 (no false alarms), and the Clopper-Pearson
    lower bound on eps is ln(p_lo / q_hi) with q_hi = 1 - (alpha/2)^(1/n) ~ 7e-4:
    about ln(0.62 / 7e-4) = 6.8, against the claimed 1.
    """
    n = 20_000
    y0 = textbook_laplace(0.0, 1.0, n, rng=11)
    y1 = textbook_laplace(1.0, 1.0, n, rng=12)
    res = mironov_attack(y0, y1, 1.0, claimed=1.0)
    assert res.false_alarms == 0
    assert res.distinguishable > 0.55
    assert res.audit.counts[2] == 0          # never under x0: an infinite likelihood ratio
    assert res.epsilon_lower_bound > 6.0 and not res.audit.holds
    assert "MironovResult(distinguishable=0.6" in repr(res)


def test_the_attack_statistic_is_post_processing_on_the_secure_laplace():
    """Laplace(secure=True) at eps = 1: every release is a multiple of the grid whatever u.

    The attack's statistic (the textbook images of u = +1 and -1 at b = 2 / eps) is a
    function of the release, so no threshold event of it can show a ratio above e^eps;
    the test's false-alarm probability is alpha = 1e-6. The same statistic on the
    textbook sampler (the control below) refutes eps = 1 by far.
    """
    from fastldp.oracles import Laplace

    q = Laplace(epsilon=1.0, secure=True)
    g = q.grid

    def draw(side, size, gen):
        y = q.privatize(np.full(size, 1.0 if side == 0 else -1.0), rng=gen)
        assert np.all(np.round(y / g) == y / g)
        return attack_statistic(y, 2.0, x0=-1.0, x1=1.0)

    res = threshold_test(draw, q.effective_epsilon, n=20_000, pilot=5_000, rng=3)
    assert res.holds, res
    # both inputs put every release on the same grid: the support test tells nothing
    y_plus = q.privatize(np.full(2000, 1.0), rng=5)
    y_minus = q.privatize(np.full(2000, -1.0), rng=6)
    assert q.is_legal(y_plus).all() and q.is_legal(y_minus).all()


def test_the_attack_gains_nothing_against_the_exact_discrete_laplace():
    """x + Z, Z ~ discrete Laplace of scale t = 1 (exactly 1-DP for x in {0, 1})."""
    from fastldp.noise import discrete_laplace

    def draw(side, size, gen):
        y = (1 - side) + discrete_laplace(1, size, rng=gen).astype(np.float64)
        return attack_statistic(y, 1.0, x0=0.0, x1=1.0)

    res = threshold_test(draw, 1.0, n=20_000, pilot=5_000, rng=4)
    assert res.holds, res


def test_the_negative_control_is_caught_and_fails_when_believed(capsys):
    controls = audit.negative_controls()
    ch = controls["control:laplace-textbook-lsb"]
    assert ch.expect_violation and ch.control_of == "laplace-secure"
    row = audit.audit_channel(ch, n=20_000, rng=2)
    assert not row.holds and row.as_expected and row.empirical.lower_bound > 4.0
    # audited as if honest, the command exits 1
    assert cli.main(["audit", "control:laplace-textbook-lsb", "--n", "20000"]) == 1
    assert "VIOLATION" in capsys.readouterr().out


@pytest.mark.parametrize("bad", [0.0, -1.0, float("nan"), float("inf")])
def test_bad_scale_is_refused(bad):
    with pytest.raises(ValueError, match=r"The 'scale' parameter of textbook_laplace must be"):
        textbook_laplace(0.0, bad, 3, rng=0)
    with pytest.raises(ValueError, match=r"The 'scale' parameter of textbook_support must be"):
        textbook_support([0.5], 0.0, bad)


def test_mironov_attack_needs_equal_sample_sizes():
    with pytest.raises(ValueError, match="same positive number"):
        mironov_attack([0.1, 0.2], [0.3], 1.0)
