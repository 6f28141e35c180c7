"""The audit's channels of the regression estimators: the baselines' randomizers and whole fits.

The regression family (:mod:`fastldp.regression`, paper 002) releases to an
untrusted server through three local randomizers besides the shuffle
protocols (:mod:`._shuffle_channels`), and its estimators claim a
``privacy_`` for the whole fit. The channels here:

* ``ldp-iht-laplace`` (empirical): LDP-IHT's per-record report, a gradient
  clipped to the box ``[-c, c]^d`` plus i.i.d. Laplace noise of scale
  :func:`~fastldp.regression.baselines.ldp_iht_laplace_scale` ``(c, d,
  eps)``, drawn by :func:`~fastldp.regression.baselines.laplace_vector`.
  The two records are the box's opposite corners ``+c 1`` and ``-c 1``
  (the l1 diameter of the box, the worst case). The statistic is the
  privacy loss itself, ``sum_j clip(y_j, -c, c)`` (up to the factor
  ``2 / scale``), whose upper tail has likelihood ratio ``e^eps`` exactly:
  the most powerful threshold test. This is ``LDPIHT(mechanism="laplace")``.
* ``ldp-iht-coordinate`` (empirical): LDP-IHT's default per-record report,
  one coordinate ``j`` of the clipped gradient (``j`` uniform, independent
  of the record, so the channel given ``j`` is the whole channel) plus
  Laplace noise of scale
  :func:`~fastldp.regression.baselines.ldp_iht_coordinate_scale` ``(c, d,
  eps) = 2 c / eps``: a one-coordinate Laplace release, the records ``+c``
  and ``-c``, the same statistic.
* ``2slr-krr`` (exact): 2-SLR's stage-1 report, k-ary randomized response
  over ``[d]`` (:func:`~fastldp.regression.baselines.kary_randomized_response`),
  whose law :func:`kary_rr_law` is written from the
  formula; the sampler check runs the function on the exact witness.
* ``2slr-laplace`` (empirical): 2-SLR's stage-2 report, a user's solution
  clipped to ``[-R, R]^k`` plus Laplace noise of scale
  :func:`~fastldp.regression.baselines.two_slr_laplace_scale` ``(R, k,
  eps)``; the same corners and statistic as LDP-IHT.
* ``u2r-fit`` (fit, end to end): a whole :class:`~fastldp.regression.U2R`
  fit on a tiny instance (:data:`U2R_USERS` users of :data:`U2R_ROWS` rows,
  ``d = U2R_D``, ``k = 2``). The two data sets differ in user 0 only: its
  response is ``C x_0`` in ``D`` and ``C x_1`` in ``D'`` (its local Lasso
  picks coordinate 0 or 1, its local least squares points along it, far
  outside every clipping radius). The other users' data are the same
  seeded draw in both. The statistics are those of the released model:
  ``coef_[0] - coef_[1]`` and ``[0 in S] - [1 in S]`` (``S`` the recovered
  support). The claim is the fitted ``privacy_`` ``(epsilon, delta)``. Each
  draw is one :meth:`U2R.fit_precomputed` (bit for bit :meth:`U2R.fit`;
  the local Lassos, which do not depend on the randomness, are computed
  once per data set).
* ``sample-sdp-fit`` (fit, end to end): a whole
  :class:`~fastldp.regression.SampleSDP` fit with its default l2 clipping
  on :data:`SDP_ROWS` rows, ``d = 2``, on the aggregate path of the summation
  (the same release in distribution as the simulated shuffle, whose own
  audit is ``shuffled-sum``; four times faster a fit). The two data
  sets differ in row 0 only, placed far outside both radii (``||x|| = y /
  10 = SDP_FAR``) at the pair that attains the stated sensitivity: after
  clipping, ``x_c = R_x e_0`` with ``y_c = R_y`` in ``D`` and ``x_c' = R_x
  (cos phi, sin phi)`` with ``y_c' = -R_y`` in ``D'``, ``R_x^2 cos phi =
  min(R_y^2 / 2, R_x^2)``, so the released totals' means differ by exactly
  ``calibration_["sensitivity"]``. The statistic is the release (the
  noisy total, ``summation_.total``) projected on that difference, the
  most powerful direction. A clipping that let the far row through would
  move it by about ``SDP_FAR^2``; the fit's own norm checks refuse such a
  record, so the row audits the noise calibrated to the clipped
  sensitivity, not a clipping bypass. Its control fits with the noise of
  :data:`SDP_CONTROL_FACTOR` times the claimed eps.

What they prove and do not prove
--------------------------------
The Laplace channels' tests refute an ``eps`` claim when the release is
noisier-looking than it should be on the hardest pair (e.g. a scale
computed for a smaller box); they do not check the clipping of records
other than the corners, nor the batch sums that the fits draw directly
(a difference of Gamma variables, the same law). The k-ary law is exact.
The U2R audit is end to end but weak: one user moves one of three groups,
and each group's noise keeps its effect at about ``0.2`` standard
deviations, so its lower bound stays far below the claim and it refutes
only a fit whose noise is calibrated at several times the claimed budget
(:data:`U2R_CONTROL_FACTOR`); the row says so ("low power").

The estimators answer ``channels(epsilon)`` with what is registered here
(:func:`fastldp.channels.channels_of`); :data:`CONTROLS` lists each
channel's negative control.
"""

from __future__ import annotations

import math
from dataclasses import replace
from typing import Any

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike
from ..channels import Channel, ExactLaw, ViewSample, channels_of
from . import baselines
from .baselines import LDPIHT, TwoStageSLR
from .sample_sdp import SampleSDP, default_radii
from .u2r import U2R

__all__ = [
    "LaplaceRelease", "KaryRR", "U2RFit", "laplace_corner_draw", "kary_sample",
    "ldp_iht_laplace", "ldp_iht_coordinate", "two_slr_krr", "two_slr_laplace", "u2r_fit", "u2r_fit_claim",
    "u2r_fit_views", "kary_rr_law", "CONTROLS",
    "IHT_D", "SLR_D", "SLR_K", "SLR_RADIUS", "U2R_USERS", "U2R_ROWS", "U2R_D",
    "U2R_CONTROL_FACTOR", "U2R_DRAWS", "SampleSDPFit", "sample_sdp_fit",
    "sample_sdp_fit_claim", "sample_sdp_fit_views", "SDP_ROWS", "SDP_FAR",
    "SDP_CONTROL_FACTOR", "SDP_DRAWS",
]

#: coordinates of the audited LDP-IHT gradient
IHT_D = 2
#: domain of the audited k-ary randomized response
SLR_D = 5
#: support size and clipping radius of the audited 2-SLR stage-2 report
SLR_K, SLR_RADIUS = 2, 1.0
#: the tiny U2R instance: users, rows per user, dimension
U2R_USERS, U2R_ROWS, U2R_D = 36, 8, 2
#: user 0's response is this multiple of one of its covariates
U2R_SIGNAL = 1000.0
#: the other users' responses are this noise only
U2R_OTHERS_NOISE = 0.01
#: the U2R control calibrates its noise at this multiple of the claimed eps
U2R_CONTROL_FACTOR = 32.0
#: (test, pilot) fits per side of the U2R audit
U2R_DRAWS = (2_000, 500)
_SEED = 20240617
#: the tiny Sample-SDP instance: rows (d = 2); row 0's covariate norm (its response: 10 times)
SDP_ROWS, SDP_FAR = 20, 1000.0
#: the Sample-SDP control calibrates its noise at this multiple of the claimed eps
SDP_CONTROL_FACTOR = 4.0
#: (test, pilot) fits per side of the Sample-SDP audit (0.2 ms a fit)
SDP_DRAWS = (10_000, 3_000)


def _baselines():
    """The baselines' module, whose functions the releases look up at call time."""
    return baselines


# ---------------------------------------------------------------- Laplace releases
class LaplaceRelease:
    """One party's local Laplace report: a vector clipped to ``[-bound, bound]^dim`` plus noise.

    The scale is the regression module's function named ``scale_function``
    (:func:`~fastldp.regression.baselines.ldp_iht_laplace_scale` or
    :func:`~fastldp.regression.baselines.two_slr_laplace_scale`), looked up
    at call time, and the noise is drawn by
    :func:`~fastldp.regression.baselines.laplace_vector`.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.regression._channels import LaplaceRelease
    >>> mech = LaplaceRelease(bound=1.0, dim=2, epsilon=1.0,
    ...                       scale_function="ldp_iht_laplace_scale")
    >>> mech.scale  # 2 bound dim / eps: the l1 diameter of the box over eps
    4.0
    >>> mech.privatize(np.zeros((3, 2)), 0).shape
    (3, 2)
    """

    def __init__(self, *, bound: float, dim: int, epsilon: float, scale_function: str) -> None:
        self.bound = float(bound)
        self.dim = int(dim)
        self.epsilon = float(epsilon)
        self.scale_function = scale_function

    @property
    def scale(self) -> float:
        """The Laplace scale, from the regression module's ``scale_function``."""
        return float(getattr(_baselines(), self.scale_function)(self.bound, self.dim,
                                                                 self.epsilon))

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(bound={self.bound!r}, dim={self.dim!r}, "
                f"epsilon={self.epsilon!r}, scale_function={self.scale_function!r})")

    def privatize(self, values: ArrayLike, rng: RngLike) -> np.ndarray:
        """Clip ``values`` to the box and add the Laplace noise."""
        v = np.clip(np.asarray(values, dtype=np.float64), -self.bound, self.bound)
        return _baselines().laplace_vector(v, self.scale, rng)


def laplace_corner_draw(mech, eps, side, size, gen) -> np.ndarray:
    """The privacy-loss statistic ``sum_j clip(y_j, -c, c)`` of reports of ``+c 1`` (side 0) or ``-c 1``."""
    corner = mech.bound if side == 0 else -mech.bound
    y = mech.privatize(np.full((size, mech.dim), corner), gen)
    return np.clip(y, -mech.bound, mech.bound).sum(axis=1)


def ldp_iht_laplace(eps):
    """LDP-IHT's report at its default ``grad_clip``, ``d = IHT_D``."""
    clip = LDPIHT(epsilon=eps, k=1).grad_clip
    return LaplaceRelease(bound=clip, dim=IHT_D, epsilon=eps,
                          scale_function="ldp_iht_laplace_scale")


def ldp_iht_coordinate(eps):
    """LDP-IHT's default report at its default ``grad_clip``: one coordinate (``dim = 1``)."""
    clip = LDPIHT(epsilon=eps, k=1).grad_clip
    return LaplaceRelease(bound=clip, dim=1, epsilon=eps,
                          scale_function="ldp_iht_coordinate_scale")


def two_slr_laplace(eps):
    """2-SLR's stage-2 report, ``k = SLR_K``, ``R = SLR_RADIUS``."""
    return LaplaceRelease(bound=SLR_RADIUS, dim=SLR_K, epsilon=eps,
                          scale_function="two_slr_laplace_scale")


def _half_scale(build):
    def control(eps):
        mech = build(eps)

        class HalfScale(LaplaceRelease):
            """The scale function's value halved (e.g. the box's l1 diameter counted once)."""

            @property
            def scale(self) -> float:
                return super().scale / 2

        return HalfScale(**vars(mech))
    return control


def _laplace_describe(mech) -> str:
    return (f"{mech.scale_function}({mech.bound:g}, {mech.dim}, eps) = {mech.scale:.6g}; "
            f"corners +-{mech.bound:g} 1")


# ---------------------------------------------------------------- k-ary randomized response
class KaryRR:
    """2-SLR's stage-1 randomizer over ``[d]``: :func:`~fastldp.regression.baselines.kary_randomized_response`.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.regression._channels import KaryRR
    >>> KaryRR(d=4, epsilon=50.0).privatize(np.arange(4), 0)  # keeps with e^50 / (e^50 + 3)
    array([0, 1, 2, 3])
    """

    def __init__(self, *, d: int, epsilon: float) -> None:
        self.d = int(d)
        self.epsilon = float(epsilon)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(d={self.d!r}, epsilon={self.epsilon!r})"

    def privatize(self, indices: ArrayLike, rng: RngLike) -> np.ndarray:
        """The k-ary randomized response of each index."""
        return _baselines().kary_randomized_response(indices, self.d, self.epsilon, rng)


def two_slr_krr(eps):
    return KaryRR(d=SLR_D, epsilon=eps)


def kary_rr_law(d: int, eps: float) -> ExactLaw:
    """k-ary randomized response over ``[d]``, from the formula (not from the sampler's code).

    ``P(y = x) = e^eps / (e^eps + d - 1)`` and ``P(y) = 1 / (e^eps + d - 1)``
    for each of the ``d - 1`` other values ``y``.
    """
    if d < 2:
        raise ValueError(f"The 'd' parameter of kary_rr_law must be an int in [2, inf). "
                         f"Got {d!r} instead.")
    e = float(np.exp(eps))
    probs = np.full((1, d, d), 1.0 / (e + d - 1))
    probs[0, np.arange(d), np.arange(d)] = e / (e + d - 1)
    return ExactLaw(list(range(d)), list(range(d)), np.zeros(1, dtype=np.uint64), probs,
                    note="the formula of k-ary randomized response")


def _krr_law(mech, eps, ids):
    return kary_rr_law(mech.d, mech.epsilon)


def kary_sample(mech, eps, xs, ids, gen):
    return mech.privatize(np.asarray(xs, dtype=np.int64), gen)


def _krr_at_double_eps(eps):
    class DoubleKeep(KaryRR):
        """Keeps its input with the probability of 2 eps; ``epsilon`` (and so the law) stays honest."""

        def privatize(self, indices, rng):
            return _baselines().kary_randomized_response(indices, self.d, 2 * self.epsilon, rng)

    return DoubleKeep(d=SLR_D, epsilon=eps)


# ---------------------------------------------------------------- a whole U2R fit
class U2RFit:
    """A U2R estimator and the audited pair of data sets (module docstring).

    Examples
    --------
    >>> from fastldp.regression._channels import U2R_D, U2R_ROWS, U2R_USERS, U2RFit
    >>> X0, y0, users = U2RFit.data(0)
    >>> X1, y1, _ = U2RFit.data(1)
    >>> X0.shape == (U2R_USERS * U2R_ROWS, U2R_D), bool((X0 == X1).all())
    (True, True)
    >>> int((y0 != y1).sum()) <= U2R_ROWS  # only user 0's responses differ
    True
    """

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator
        self._pre: dict[int, Any] = {}

    @staticmethod
    def data(side: int):
        """``(X, y, users)`` of ``D`` (side 0) or ``D'``; only user 0's responses differ."""
        gen = np.random.default_rng(_SEED)
        n, m, d = U2R_USERS, U2R_ROWS, U2R_D
        X = gen.standard_normal((n * m, d))
        # the others carry no signal, so the fitted model moves only with the noise and user 0
        y = U2R_OTHERS_NOISE * gen.standard_normal(n * m)
        y[:m] = U2R_SIGNAL * X[:m, side]          # user 0 points at coordinate 0 or 1
        return X, y, np.repeat(np.arange(n), m)

    def precomputed(self, side: int):
        if side not in self._pre:
            X, y, users = self.data(side)
            self._pre[side] = self.estimator.precompute(X, y, users=users)
        return self._pre[side]


def u2r_fit(eps):
    return U2RFit(U2R(epsilon=eps, delta=1e-5, k=2, rows_per_user=U2R_ROWS))


def u2r_fit_claim(mech) -> tuple:
    """The ``privacy_`` of a fit on ``D``: ``(epsilon, delta)``."""
    est = mech.estimator.fit_precomputed(mech.precomputed(0), rng=0)
    return float(est.privacy_.epsilon), float(est.privacy_.delta)


def u2r_fit_views(mech, eps, side, size, gen) -> ViewSample:
    """``size`` fits on ``D`` (side 0) or ``D'``: statistics of ``coef_`` and of the support."""
    pre = mech.precomputed(side)
    est = mech.estimator
    coef = np.empty(size)
    support = np.empty(size)
    for t in range(size):
        est.fit_precomputed(pre, rng=gen)
        coef[t] = est.coef_[0] - est.coef_[1]
        s = set(np.asarray(est.support_recovered_).tolist())
        support[t] = float(0 in s) - float(1 in s)
    return ViewSample({"coef_[0] - coef_[1]": coef, "[0 in S] - [1 in S]": support}, {}, size)


def _overclaiming_u2r(eps):
    """U2R whose noise is calibrated at ``U2R_CONTROL_FACTOR * eps`` while ``privacy_`` states eps."""
    class Overclaiming(U2R):
        def fit_precomputed(self, pre, *, rng=None):
            claimed = self.epsilon
            self.epsilon = U2R_CONTROL_FACTOR * claimed
            try:
                super().fit_precomputed(pre, rng=rng)
            finally:
                self.epsilon = claimed
            self.privacy_ = replace(self.privacy_, epsilon=claimed)
            return self

    return U2RFit(Overclaiming(epsilon=eps, delta=1e-5, k=2, rows_per_user=U2R_ROWS))


def _u2r_describe(mech) -> str:
    est = mech.estimator.fit_precomputed(mech.precomputed(0), rng=0)
    return (f"{U2R_USERS} users x {U2R_ROWS} rows, d={U2R_D}, k=2; groups {est.groups_}; "
            f"user 0: y = {U2R_SIGNAL:g} x_0 vs {U2R_SIGNAL:g} x_1")


# ---------------------------------------------------------------- a whole Sample-SDP fit
class SampleSDPFit:
    """A SampleSDP estimator (l2 clipping) and the audited pair of data sets (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.regression._channels import SDP_ROWS, sample_sdp_fit
    >>> mech = sample_sdp_fit(1.0)
    >>> (X0, y0), (X1, y1) = mech.data(0), mech.data(1)
    >>> X0.shape == (SDP_ROWS, 2), bool((X0[1:] == X1[1:]).all()), bool((X0[0] != X1[0]).any())
    (True, True, True)
    >>> est = mech.estimator.fit_precomputed(mech.precomputed(0), rng=0)
    >>> est.sanitized_["clipped_x"], est.sanitized_["clipped_y"]  # row 0, far outside
    (1, 1)
    """

    def __init__(self, estimator: Any) -> None:
        self.estimator = estimator
        self._pre: dict[int, Any] = {}

    def radii(self) -> tuple[float, float]:
        """``(R_x, R_y)``: the public radii the fit uses (its calibration, read on ``D``)."""
        est = self.estimator.fit_precomputed(self.precomputed(0), rng=0)
        return est.calibration_["x_radius"], est.calibration_["y_radius"]

    def data(self, side: int) -> tuple[np.ndarray, np.ndarray]:
        """``(X, y)`` of ``D`` (side 0) or ``D'``; only row 0 differs."""
        gen = np.random.default_rng(_SEED + 1)
        X = gen.standard_normal((SDP_ROWS, 2))
        y = 0.1 * gen.standard_normal(SDP_ROWS)
        est = self.estimator
        r_x, r_y = default_radii(2, SDP_ROWS, est.sigma, est.theta_bound)
        r_x = r_x if est.x_radius is None else est.x_radius
        r_y = r_y if est.y_radius is None else est.y_radius
        cos = min(r_y * r_y / 2, r_x * r_x) / (r_x * r_x)
        direction = np.array([1.0, 0.0]) if side == 0 else np.array([cos, math.sqrt(1 - cos ** 2)])
        X[0] = SDP_FAR * direction
        y[0] = (10.0 if side == 0 else -10.0) * SDP_FAR
        return X, y

    def precomputed(self, side: int):
        if side not in self._pre:
            self._pre[side] = self.estimator.precompute(*self.data(side))
        return self._pre[side]

    def direction(self) -> np.ndarray:
        """The unit vector of ``E[total | D] - E[total | D']`` (isometric coordinates)."""
        (X0, y0), (X1, y1) = self.data(0), self.data(1)
        est = self.estimator.fit_precomputed(self.precomputed(0), rng=0)
        r_x, r_y = est.calibration_["x_radius"], est.calibration_["y_radius"]
        diff = _isometric_record(X0[0], y0[0], r_x, r_y) - _isometric_record(X1[0], y1[0], r_x, r_y)
        return diff / np.linalg.norm(diff)


def _isometric_record(x, y, r_x, r_y):
    """A record's statistic under the l2 rule, written here from the formula (d = 2)."""
    s = min(1.0, r_x / float(np.linalg.norm(x)))
    xc, yc = s * np.asarray(x, dtype=np.float64), float(np.clip(s * y, -r_y, r_y))
    return np.array([xc[0] ** 2, math.sqrt(2) * xc[0] * xc[1], xc[1] ** 2, xc[0] * yc,
                     xc[1] * yc])


def sample_sdp_fit(eps):
    return SampleSDPFit(SampleSDP(epsilon=eps, delta=1e-5, max_messages=1))


def sample_sdp_fit_claim(mech) -> tuple:
    """The ``privacy_`` of a fit on ``D``: ``(epsilon, delta)``."""
    est = mech.estimator.fit_precomputed(mech.precomputed(0), rng=0)
    return float(est.privacy_.epsilon), float(est.privacy_.delta)


def sample_sdp_fit_views(mech, eps, side, size, gen) -> ViewSample:
    """``size`` fits on ``D`` (side 0) or ``D'``: the released total along the pair's difference."""
    pre = mech.precomputed(side)
    est = mech.estimator
    u = mech.direction()
    out = np.empty(size)
    for t in range(size):
        est.fit_precomputed(pre, rng=gen)
        # summation_.total is the noisy sum of the records as sent (isometric coordinates)
        out[t] = float(est.summation_.total @ u)
    return ViewSample({"total . (s(r) - s(r'))": out}, {}, size)


def _overclaiming_sample_sdp(eps):
    """SampleSDP whose noise is calibrated at ``SDP_CONTROL_FACTOR * eps``, privacy_ stating eps."""
    class Overclaiming(SampleSDP):
        def fit_precomputed(self, pre, *, rng=None):
            claimed = self.epsilon
            self.epsilon = SDP_CONTROL_FACTOR * claimed
            try:
                super().fit_precomputed(pre, rng=rng)
            finally:
                self.epsilon = claimed
            self.privacy_ = replace(self.privacy_, epsilon=claimed)
            return self

    return SampleSDPFit(Overclaiming(epsilon=eps, delta=1e-5, max_messages=1))


def _sample_sdp_describe(mech) -> str:
    est = mech.estimator.fit_precomputed(mech.precomputed(0), rng=0)
    cal = est.calibration_
    return (f"{SDP_ROWS} rows, d=2, l2 clipping R_x={cal['x_radius']:.4g}, "
            f"R_y={cal['y_radius']:.4g}; row 0 at the pair attaining the sensitivity "
            f"{cal['sensitivity']:.4g}; noise s.d. {est.summation_.noise_sd:.4g}")


#: ``(channel, build, (name suffix, description))`` of each control
CONTROLS = [
    ("ldp-iht-laplace", _half_scale(ldp_iht_laplace),
     ("half-scale", "LDP-IHT's report with half the Laplace scale")),
    ("ldp-iht-coordinate", _half_scale(ldp_iht_coordinate),
     ("half-scale", "LDP-IHT's one-coordinate report with half the Laplace scale")),
    ("2slr-krr", _krr_at_double_eps,
     ("sampler", "k-ary randomized response keeping its input with the probability of 2 eps "
                 "(law honest)")),
    ("2slr-laplace", _half_scale(two_slr_laplace),
     ("half-scale", "2-SLR's stage-2 report with half the Laplace scale")),
    ("u2r-fit", _overclaiming_u2r,
     (f"noise@{U2R_CONTROL_FACTOR:g}eps", f"U2R with its noise calibrated at "
      f"{U2R_CONTROL_FACTOR:g} eps, privacy_ stating eps")),
    ("sample-sdp-fit", _overclaiming_sample_sdp,
     (f"noise@{SDP_CONTROL_FACTOR:g}eps", f"Sample-SDP with its noise calibrated at "
      f"{SDP_CONTROL_FACTOR:g} eps, privacy_ stating eps")),
]


def _with_controls(channels: list) -> list:
    """``channels`` and the negative control :data:`CONTROLS` gives each."""
    out = list(channels)
    for ch in channels:
        for name, build, (suffix, description) in CONTROLS:
            if name == ch.name:
                out.append(replace(ch, control_of=name, name=f"control:{name}-{suffix}",
                                   build=build, description=description,
                                   expect_violation=True))
    return out


@channels_of(LDPIHT)
def _ldp_iht_channels(epsilon):
    return _with_controls([
        Channel("ldp-iht-laplace", f"LDP-IHT record report: gradient in [-c, c]^{IHT_D} + "
                "Laplace, corners +c 1 vs -c 1", epsilon, ldp_iht_laplace, kind="empirical",
                draw=laplace_corner_draw, describe=_laplace_describe),
        Channel("ldp-iht-coordinate", "LDP-IHT record report (default): one uniformly sampled "
                "gradient coordinate in [-c, c] + Laplace, +c vs -c", epsilon,
                ldp_iht_coordinate, kind="empirical", draw=laplace_corner_draw,
                describe=_laplace_describe),
    ])


@channels_of(TwoStageSLR)
def _two_slr_channels(epsilon):
    return _with_controls([
        Channel("2slr-krr", f"2-SLR stage 1: k-ary randomized response over [d], d = {SLR_D}",
                epsilon, two_slr_krr, law=_krr_law, sample=kary_sample),
        Channel("2slr-laplace", f"2-SLR stage 2: solution in [-R, R]^{SLR_K} + Laplace, "
                f"R = {SLR_RADIUS:g}, corners +R 1 vs -R 1", epsilon, two_slr_laplace,
                kind="empirical", draw=laplace_corner_draw, describe=_laplace_describe),
    ])


@channels_of(U2R)
def _u2r_channels(epsilon):
    return _with_controls([
        Channel("u2r-fit", f"a whole U2R fit, {U2R_USERS} users x {U2R_ROWS} rows, d = {U2R_D}, "
                "one user changed; claim: the fitted privacy_", epsilon, u2r_fit, kind="fit",
                draw=u2r_fit_views, claim=u2r_fit_claim, draws=U2R_DRAWS,
                statistics=("coef_[0] - coef_[1]", "[0 in S] - [1 in S]"),
                known_reach=U2R_CONTROL_FACTOR, describe=_u2r_describe),
    ])


@channels_of(SampleSDP)
def _sample_sdp_channels(epsilon):
    return _with_controls([
        Channel("sample-sdp-fit", f"a whole Sample-SDP fit (l2 clipping), {SDP_ROWS} rows, "
                "d = 2, one row changed at the sensitivity's edge; claim: the fitted privacy_",
                epsilon, sample_sdp_fit, kind="fit", draw=sample_sdp_fit_views,
                claim=sample_sdp_fit_claim, draws=SDP_DRAWS,
                statistics=("total . (s(r) - s(r'))",), known_reach=SDP_CONTROL_FACTOR,
                describe=_sample_sdp_describe),
    ])
