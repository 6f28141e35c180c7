"""Neighbouring datasets: every private estimator of fastldp.regression, the pattern of tests/_neighbours.py.

For each estimator, two datasets that differ in one privacy unit (user-level:
one user's whole local dataset; sample-level: one row; the building blocks:
one party's input) must give (a) the identical public calibration and (b) no
output that is possible on one side only (an exception, a NaN, an empty
support).
"""

import numpy as np
import pytest

from _neighbours import assert_neighbours, compare, row_neighbour, user_neighbour
from fastldp.regression import (LDPIHT, U2R, SampleSDP, ShuffledBits, ShuffledVectorSum,
                                TwoStageSLR, make_sparse_regression)

SEEDS = range(5)


@pytest.fixture(scope="module")
def mixed_counts():
    """The review's example: 31 users with counts [4] * 15 + [40] * 16 (median 40).

    Its neighbour where user 20 has 4 rows has median 4: the old calibration
    (``m = median(counts)``) moved the radii from (1.49, 2.86) to (3.12, 7.59).
    """
    D = make_sparse_regression(n=31, m=40, d=8, k=2, sigma=0.1, rng=3)
    keep = np.ones(D.X.shape[0], dtype=bool)
    for u in range(15):
        keep[np.flatnonzero(D.users == u)[4:]] = False
    return D, D.X[keep], D.y[keep], D.users[keep]


def _u2r_calibration(est):
    out = dict(est.calibration_, groups_=est.groups_, gamma_=est.gamma_,
               threshold_=est.threshold_)
    # the radii and the noise are public functions of s = |S|, a released output
    noise = tuple((r.noise_sd, r.mu, r.scale, r.modulus, r.shares) for r in est.summations_)
    out["given"] = (len(est.support_recovered_), (est.radii_, noise))
    return out


def _u2r(X, y, users, eps=4.0, **kw):
    def fit(seed):
        return U2R(epsilon=eps, k=2, rows_per_user=40, sigma=0.1, **kw).fit(
            X, y, users=users, rng=seed)
    return fit


@pytest.mark.parametrize("kind,user", [("fewer", 20), ("one-row", 20), ("duplicated", 3),
                                       ("duplicated", 20), ("extreme", 20), ("extreme", 3)])
def test_u2r_neighbours(mixed_counts, kind, user):
    D, X, y, users = mixed_counts
    X2, y2, u2 = user_neighbour(X, y, users, user, kind, keep=4)
    pairs = compare(_u2r(X, y, users), _u2r(X2, y2, u2), _u2r_calibration, SEEDS)
    assert_neighbours(pairs)
    # the public rows per user, never the data's: the same on every seed and side
    assert all(a.calibration["rows_per_user"] == 40 for _, a, _ in pairs)
    if kind == "extreme":
        # the extreme user's local statistics overflowed and were replaced (in some stage)
        assert sum(b.sanitized["nonfinite"] for _, _, b in pairs) > 0
        assert all(a.sanitized["nonfinite"] == 0 for _, a, _ in pairs)


def test_u2r_calibration_is_the_public_one(mixed_counts):
    """The review's numbers: with rows_per_user = 40 the radii are those of m = 40 on both sides."""
    D, X, y, users = mixed_counts
    X2, y2, u2 = user_neighbour(X, y, users, 20, "fewer", keep=4)
    a = U2R(epsilon=1e4, k=2, rows_per_user=40, sigma=0.1).fit(X, y, users=users, rng=1)
    b = U2R(epsilon=1e4, k=2, rows_per_user=40, sigma=0.1).fit(X2, y2, users=u2, rng=1)
    s = len(a.support_recovered_)
    assert s == len(b.support_recovered_) == 2
    assert a.radii_ == b.radii_
    assert a.radii_[0] == pytest.approx(1.0 + 3 * 0.1 * np.sqrt(s / (40 - s - 1)))
    assert a.calibration_["local_alpha"] == pytest.approx(0.1 * np.sqrt(2 * np.log(8) / 40))
    assert a.calibration_["screen"] == 2 * 40 and a.calibration_["support_cap"] == min(8, 40 - 2)
    assert a.sanitized_["short"] == 15 and b.sanitized_["short"] == 16
    assert a.privacy_.rows_per_user == 40 and "user-level" in a.privacy_.note


def _two_slr(X, y, users, eps=4.0):
    def fit(seed):
        return TwoStageSLR(epsilon=eps, k=2, rows_per_user=40, sigma=0.1).fit(
            X, y, users=users, rng=seed)
    return fit


@pytest.mark.parametrize("kind,user", [("extreme", 20), ("fewer", 20), ("duplicated", 3)])
def test_two_stage_slr_neighbours(mixed_counts, kind, user):
    D, X, y, users = mixed_counts
    X2, y2, u2 = user_neighbour(X, y, users, user, kind, keep=4)
    pairs = compare(_two_slr(X, y, users), _two_slr(X2, y2, u2),
                    lambda est: dict(est.calibration_), range(10))
    assert_neighbours(pairs)
    if kind == "extreme":
        assert sum(b.sanitized["nonfinite"] for _, _, b in pairs) > 0


@pytest.mark.parametrize("max_messages", [10 ** 9, 1])  # the simulated and the aggregate path
@pytest.mark.parametrize("kind", ["extreme", "negated"])
@pytest.mark.parametrize("clipping", ["l2", "coordinate"])
def test_sample_sdp_neighbours(max_messages, kind, clipping):
    D = make_sparse_regression(n=60, m=5, d=4, k=2, sigma=0.1, rng=4)
    X2, y2 = row_neighbour(D.X, D.y, 7, kind)

    def make(X, y):
        return lambda seed: SampleSDP(epsilon=2.0, clipping=clipping,
                                      max_messages=max_messages).fit(X, y, rng=seed)

    def calibration(est):
        r = est.summation_
        return dict(est.calibration_, noise_sd=r.noise_sd, delta=r.delta,
                    simulated=r.simulated, privacy=est.privacy_)

    pairs = compare(make(D.X, D.y), make(X2, y2), calibration, range(3))
    assert_neighbours(pairs)
    if kind == "extreme":  # the 1e200 row is clipped (its statistic bounded), never dropped
        assert all(b.sanitized["clipped_x"] == a.sanitized["clipped_x"] + 1
                   and b.sanitized["nonfinite"] == 0 for _, a, b in pairs)


def test_sample_sdp_l2_neighbours_at_the_sensitivity_edge():
    """The replacement that attains the stated sensitivity (two rows far outside the radii,
    at the angle of the derivation): identical public calibration, the radii those of d, N."""
    from fastldp.regression.sample_sdp import default_radii

    D = make_sparse_regression(n=60, m=5, d=4, k=2, sigma=0.1, rng=4)
    r_x, r_y = default_radii(4, 300, 0.1, 1.0)
    cos = min(r_y ** 2 / 2, r_x ** 2) / r_x ** 2
    X2, y2 = D.X.copy(), D.y.copy()
    D.X[7], D.y[7] = [1e3, 0, 0, 0], 1e4
    X2[7], y2[7] = [1e3 * cos, 1e3 * np.sqrt(1 - cos ** 2), 0, 0], -1e4

    def make(X, y):
        return lambda seed: SampleSDP(epsilon=2.0, sigma=0.1).fit(X, y, rng=seed)

    def calibration(est):
        return dict(est.calibration_, noise_sd=est.summation_.noise_sd, privacy=est.privacy_)

    pairs = compare(make(D.X, D.y), make(X2, y2), calibration, range(3))
    assert_neighbours(pairs)
    assert all(a.calibration["x_radius"] == r_x and a.calibration["y_radius"] == r_y
               for _, a, _ in pairs)


def test_ldp_iht_neighbours():
    D = make_sparse_regression(n=100, m=5, d=8, k=2, sigma=0.1, rng=5)
    X2, y2 = row_neighbour(D.X, D.y, 11, "extreme")

    def make(X, y):
        return lambda seed: LDPIHT(epsilon=2.0, k=2).fit(X, y, rng=seed)

    assert_neighbours(compare(make(D.X, D.y), make(X2, y2),
                              lambda est: dict(est.calibration_, privacy=est.privacy_), SEEDS))


def test_shuffled_vector_sum_neighbours():
    """One party's vector replaced by the opposite point of the norm ball, on both paths."""
    rng = np.random.default_rng(6)
    v = rng.normal(size=(20, 3))
    v /= np.maximum(1.0, np.linalg.norm(v, axis=1))[:, None]
    w = v.copy()
    w[0] = -v[0] / np.linalg.norm(v[0])  # the farthest replacement of party 0 in the ball
    v[0] = -w[0]

    def calibration(res):
        return {f: getattr(res, f) for f in ("noise_sd", "mu", "scale", "modulus", "shares",
                                             "epsilon", "delta", "messages")}

    for summer in (ShuffledVectorSum(epsilon=1.0, norm_bound=1.0),
                   ShuffledVectorSum(epsilon=1.0, norm_bound=1.0, max_messages=1)):
        assert_neighbours(compare(lambda s: summer.sum(v, s), lambda s: summer.sum(w, s),
                                  calibration, SEEDS))
    # sum_aggregate: two totals of 50 parties differing in one party, at the bound n * norm_bound
    summer = ShuffledVectorSum(epsilon=1.0, norm_bound=1.0)
    t = np.array([50.0, 0.0, 0.0])
    t2 = t - np.array([2.0, 0.0, 0.0])  # party 0 went from +e_1 to -e_1
    pairs = compare(lambda s: summer.sum_aggregate(t, 50, s),
                    lambda s: summer.sum_aggregate(t2, 50, s), calibration, SEEDS)
    assert_neighbours(pairs)
    for seed in SEEDS:  # and nothing wraps around modulo q at the bound
        res = summer.sum_aggregate(t, 50, seed)
        assert abs(res.total[0] - 50.0) < 8 * res.noise_sd + 1


def test_shuffled_bits_neighbours():
    bits = ShuffledBits(epsilon=1.0, delta=1e-5, d=4)
    index = np.random.default_rng(7).integers(0, 4, size=60)
    other = index.copy()
    other[0] = (index[0] + 1) % 4

    class Counts:
        def __init__(self, idx, seed):
            self.total, self.gamma = bits.counts(idx, seed)

    pairs = compare(lambda s: Counts(index, s), lambda s: Counts(other, s),
                    lambda c: {"gamma": c.gamma}, SEEDS)
    assert_neighbours(pairs)
