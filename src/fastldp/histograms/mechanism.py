"""The shifted-log Gaussian mechanism of paper 003, with a certified calibration.

Each group's count ``x >= 0`` is released as

    x_hat = max(0, (x + c) W - c),   W = exp(mu + sigma Z),  Z ~ N(0, 1),

i.e. Gaussian noise of constant variance in the shifted log space
``Y = log(x + c) + mu + sigma Z``, exponentiated, shifted back and clipped at 0.

Privacy (the count-dependent budget ``v(n)``)
---------------------------------------------
Adjacency is add-or-remove-one: a person joins or leaves one group, whose
count moves between ``n`` and ``n + 1``. Following the paper, ``v(n)`` must
bound ``D_alpha(M(n) || M(n')) / alpha`` for every order ``alpha > 1``, in
both directions, for both neighbours ``n' = n - 1`` and ``n' = n + 1`` of a
group whose count is ``n`` (only ``n' = 1`` exists when ``n = 0``), and be
non-increasing. We take the smallest such function of the log-space release.
``x_hat`` is a deterministic function of ``Y``, so by post-processing any
bound for ``Y`` holds for ``x_hat`` (clipping can only lower it). ``Y`` is
``N(log(n + c) + mu, sigma^2)``; equal variances give
``D_alpha = alpha delta^2 / (2 sigma^2)`` in either direction
(:func:`fastldp.histograms.renyi_gaussian`), so the edge ``{k, k+1}`` costs

    edge(k) = log((k + 1 + c) / (k + c))^2 / (2 sigma^2)      (both ways, every order)

and ``v(n) = max(edge(n - 1), edge(n)) = edge(max(n - 1, 0))`` because
``edge`` decreases. Hence ``v(0) = v(1) = log(1 + 1/c)^2 / (2 sigma^2)`` and
``n^2 v(n) -> 1/(2 sigma^2)`` as ``n -> inf``.

The bound is also exact for the clipped release ``x_hat``, not just an upper
bound: in the log space of ``x_hat + c`` the release is ``Y`` with the mass
below ``log c`` merged into an atom, so for equal variances
(``m_alpha = alpha m1 + (1 - alpha) m2``, ``u_i = (log c - m_i)/sigma``)

    exp((alpha - 1) D_alpha) = Phi(u1)^alpha Phi(u2)^(1 - alpha)
        + exp(alpha (alpha - 1) delta^2 / (2 sigma^2)) Phi((m_alpha - log c) / sigma)

(:meth:`ShiftedLogGaussian.released_renyi`). From the larger count to the
smaller (``m1 > m2``) ``m_alpha -> inf``, so ``D_alpha / alpha -> delta^2 /
(2 sigma^2)`` as ``alpha -> inf``: the supremum is not lowered by clipping.
(In the other direction clipping helps a lot at the edge ``{0, 1}``.)

The drift
---------
With ``a = x + c`` and no clipping, ``E|x_hat - x| = a E|W - 1|``, the
expected absolute multiplicative error. For ``W = exp(mu + sigma Z)`` and
``t = -mu/sigma`` (``W < 1`` iff ``Z < t``), using
``E[W 1{Z < s}] = e^{mu + sigma^2/2} Phi(s - sigma)``:

    E|W - 1| = (2 Phi(t) - 1) - e^{mu + sigma^2/2} (2 Phi(t - sigma) - 1).

Its derivative in ``mu`` is ``-e^{mu + sigma^2/2} (2 Phi(t - sigma) - 1)``
(the ``Phi'`` terms cancel), which vanishes only at ``t = sigma``, i.e.
``mu = -sigma^2``: the drift ``"median"`` (``e^{-mu}`` is the median of the
size-biased law of ``e^{sigma Z}``) minimizes the error, and there

    E|exp(sigma Z - sigma^2) - 1| = 2 Phi(sigma) - 1 = erf(sigma / sqrt 2).

The drift ``"mean"``, ``mu = -sigma^2/2``, makes ``E W = 1`` (unbiased before
clipping) and costs ``E|W - 1| = 2 erf(sigma / (2 sqrt 2))``, larger at every
``sigma``; for the same ``r`` it needs a smaller ``sigma``, hence a larger
``v(n)`` (the two agree to first order as ``r -> 0``).

Calibration and its proof
-------------------------
Write ``e = E|W - 1|`` and ``kappa(x) = E[(c - (x + c) W)^+]``. On
``{(x + c) W < c}`` the release is 0 and the error is
``x = (x + c)(1 - W) - (c - (x + c) W)``; elsewhere it is ``(x + c)|W - 1|``.
So, exactly,

    err(x) = E|x_hat - x| = (x + c) e - kappa(x),
    kappa(x) = c Phi(z0) - (x + c) e^{mu + sigma^2/2} Phi(z0 - sigma),
    z0 = (log(c / (x + c)) - mu) / sigma.

Facts used: ``kappa >= 0`` and ``kappa`` is non-increasing in ``x`` (its
derivative is ``-E[W 1{(x+c)W < c}]``), so ``err`` is non-decreasing in
``x``; and ``err`` is non-decreasing in ``c`` (derivative
``E[|W - 1| 1{(x+c)W >= c}]``).

1. ``sigma`` solves ``e(sigma) = r (1 - margin)``:
   ``sigma = sqrt(2) erfinv(r (1 - margin))`` for ``"median"`` and
   ``2 sqrt(2) erfinv(r (1 - margin) / 2)`` for ``"mean"``. Since
   ``err(x)/x -> e`` as ``x -> inf``, ``e < r`` is necessary, so some margin
   is unavoidable; ``sigma`` tends to the supremum as ``margin -> 0``.
2. ``c`` is the largest value (bisection) passing the certificate below
   with the target ``err(x) <= (1 - s) r max(x, 1)``, ``s = margin / 1000``:

   - ``x in [0, 1]``: ``err(x) <= err(1)``, so check ``err(1)`` only;
   - ``x >= X = c e / ((1 - s) r - e)``: ``err(x) <= (x + c) e <= (1 - s) r x``
     with no computation (the tail, up to infinite ``x``);
   - ``x in [x_i, x_{i+1}]`` for a geometric grid of ``[1, X]``:
     ``err(x) - (1 - s) r x <= c e - ((1 - s) r - e) x_i - kappa(x_{i+1})``
     by the monotonicity of ``kappa``; check that this is ``<= 0``.

   Passing the certificate proves ``E|x_hat - x| < r max(x, 1)`` for every
   real ``x >= 0``, up to the floating-point evaluation of ``Phi`` (relative
   error ~1e-16, far below the slack ``s r``). ``c = 0`` always passes, and
   every ``c`` below a certified one is feasible by monotonicity in ``c``.

Small ``margin`` gives the best large-count budget ``1/(2 sigma^2 n^2)``
but a small ``c`` and so a large ``v(0) = v(1)``; larger ``margin`` trades the
other way. :meth:`ShiftedLogGaussian.expected_error` recomputes ``err`` by
adaptive quadrature, independently of the closed form.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np
from numpy.typing import ArrayLike
from scipy import integrate, special

from .._random import as_generator
from .._validation import KeywordOnly, check_choice, check_float
from ..results import PrivacyStatement
from ._checks import RngLike, check_counts, check_nonnegative, scalar_or_array
from .privacy import HistogramRelease, PrivacyReport

__all__ = [
    "DRIFTS",
    "drift_mu",
    "multiplicative_error",
    "sigma_for_error",
    "Certificate",
    "certify",
    "ShiftedLogGaussian",
]

#: The drift options: ``"median"`` is ``mu = -sigma^2``, ``"mean"`` is ``mu = -sigma^2 / 2``.
DRIFTS = ("median", "mean")

_SQRT2 = math.sqrt(2.0)
_OWNER = "ShiftedLogGaussian"
_GRID = 4000          # geometric certificate grid on [1, X]
_Z_LIMIT = 14.0       # quadrature in z over [-14, 14 + sigma]; the rest has mass < 1e-43


def drift_mu(sigma: float, drift: str) -> float:
    """The log-space drift: ``-sigma^2`` for ``"median"``, ``-sigma^2/2`` for ``"mean"``."""
    drift = check_choice(drift, "drift", "drift_mu", DRIFTS)
    sigma = check_float(sigma, "sigma", "drift_mu", low=0)
    return -sigma * sigma if drift == "median" else -sigma * sigma / 2


def multiplicative_error(sigma, mu):
    """``E|exp(mu + sigma Z) - 1|`` in closed form (vectorized in ``mu``).

    ``(2 Phi(t) - 1) - e^{mu + sigma^2/2} (2 Phi(t - sigma) - 1)`` with
    ``t = -mu / sigma``; it is ``erf(sigma/sqrt 2)`` at ``mu = -sigma^2``, its
    minimum over ``mu`` (derivation in the module docstring).

    Parameters
    ----------
    sigma : float
        Log-space noise scale, in ``(0, inf)``.
    mu : float or array_like
        Log-space drift, finite.

    Returns
    -------
    float or ndarray
    """
    sigma = check_float(sigma, "sigma", "multiplicative_error", low=0)
    mu_arr = np.asarray(mu, dtype=np.float64)
    if not np.all(np.isfinite(mu_arr)):
        raise ValueError("The 'mu' parameter of multiplicative_error must be finite floats. "
                         f"Got {mu!r} instead.")
    t = -mu_arr / sigma
    out = special.erf(t / _SQRT2) - np.exp(mu_arr + sigma * sigma / 2) * special.erf((t - sigma) / _SQRT2)
    return scalar_or_array(np.asarray(out, dtype=np.float64))


def sigma_for_error(error: float, drift: str = "median") -> float:
    """The ``sigma`` whose multiplicative error under ``drift`` equals ``error``.

    ``sqrt(2) erfinv(error)`` for ``"median"`` (``error`` in ``(0, 1)``) and
    ``2 sqrt(2) erfinv(error / 2)`` for ``"mean"`` (``error`` in ``(0, 2)``).
    """
    drift = check_choice(drift, "drift", "sigma_for_error", DRIFTS)
    if drift == "median":
        error = check_float(error, "error", "sigma_for_error", low=0, high=1)
        return _SQRT2 * float(special.erfinv(error))
    error = check_float(error, "error", "sigma_for_error", low=0, high=2)
    return 2 * _SQRT2 * float(special.erfinv(error / 2))


def _kappa(x: np.ndarray, c: float, sigma: float, mu: float) -> np.ndarray:
    """``E[(c - (x + c) W)^+]``: how much clipping at 0 lowers the error."""
    a = x + c
    z0 = (np.log(c / a) - mu) / sigma
    m = math.exp(mu + sigma * sigma / 2)
    return np.maximum(c * special.ndtr(z0) - a * m * special.ndtr(z0 - sigma), 0.0)


def _error_exact(x: np.ndarray, c: float, sigma: float, mu: float, e: float) -> np.ndarray:
    if c == 0:
        return x * e
    return (x + c) * e - _kappa(x, c, sigma, mu)


def _error_quadrature(x: float, c: float, sigma: float, mu: float) -> float:
    """``E|x_hat - x|`` by adaptive quadrature over ``z`` (three smooth pieces)."""
    a = x + c
    z1 = -mu / sigma                           # W < 1 iff z < z1
    z0 = (math.log(c / a) - mu) / sigma        # release is 0 iff z < z0 (<= z1)
    lo, hi = -_Z_LIMIT, _Z_LIMIT + sigma
    norm = 1.0 / math.sqrt(2 * math.pi)

    def phi(z):
        return norm * math.exp(-0.5 * z * z)

    def below(z):   # 0 < x_hat < x: error a (1 - W)
        return -a * math.expm1(mu + sigma * z) * phi(z)

    def above(z):   # x_hat >= x: error a (W - 1)
        return a * math.expm1(mu + sigma * z) * phi(z)

    opts = dict(epsabs=1e-15 * a, epsrel=1e-10, limit=200)
    total = 0.0
    if z0 > lo and x > 0:   # x_hat = 0: error x
        total += x * integrate.quad(phi, lo, min(z0, hi), **opts)[0]
    b0 = max(z0, lo)
    if z1 > b0:
        total += integrate.quad(below, b0, min(z1, hi), **opts)[0]
    total += integrate.quad(above, max(z1, lo), hi, **opts)[0]
    return total


@dataclass(frozen=True)
class Certificate:
    """The outcome of :func:`certify`.

    Examples
    --------
    >>> cert = certify(0.1, 0.5, 0.2)
    >>> cert.ok, cert.worst < 1
    (True, True)

    Attributes
    ----------
    ok : bool
        Whether ``E|x_hat - x| <= (1 - slack) r max(x, 1)`` was proved for every
        real ``x >= 0``.
    worst : float
        The largest certified upper bound of ``err(x) / (r max(x, 1))`` over the
        checked pieces (``< 1`` when ``ok``).
    tail_start : float
        ``X``: beyond it the bound holds with no computation.
    grid_points : int
        Points of the geometric grid on ``[1, X]``.
    """

    ok: bool
    worst: float
    tail_start: float
    grid_points: int


def certify(sigma: float, c: float, r: float, *, drift: str = "median",
            slack: float = 0.0, grid: int = _GRID) -> Certificate:
    """Prove ``E|x_hat - x| <= (1 - slack) r max(x, 1)`` for every real ``x >= 0``.

    The argument (module docstring, "Calibration and its proof"): the point
    ``x = 1`` covers ``[0, 1]``; the monotonicity of ``kappa`` bounds each
    interval of a geometric grid on ``[1, X]``; beyond ``X`` the unclipped
    error already satisfies the bound. It fails (``ok=False``) whenever
    ``E|W - 1| >= (1 - slack) r``, since then large counts violate it.

    Parameters
    ----------
    sigma : float
        Log-space noise scale, ``> 0``.
    c : float
        Shift, ``>= 0``.
    r : float
        Target relative error, in ``(0, 1]``.
    drift : {"median", "mean"}
    slack : float
        Relative slack in ``[0, 1)`` kept below the target.
    grid : int
        Points of the interval grid.

    Returns
    -------
    Certificate
    """
    owner = "certify"
    sigma = check_float(sigma, "sigma", owner, low=0)
    c = check_float(c, "c", owner, low=0, low_open=False)
    r = check_float(r, "r", owner, low=0, high=1, high_open=False)
    drift = check_choice(drift, "drift", owner, DRIFTS)
    slack = check_float(slack, "slack", owner, low=0, high=1, low_open=False)
    mu = drift_mu(sigma, drift)
    e = float(multiplicative_error(sigma, mu))
    target = (1 - slack) * r
    if not e < target:
        return Certificate(False, math.inf, math.inf, 0)
    if c == 0:   # err(x) = e x exactly
        return Certificate(True, e / r, 0.0, 0)
    one = float(_error_exact(np.array([1.0]), c, sigma, mu, e)[0])
    worst = one / r
    ok = one <= target
    tail = c * e / (target - e)
    points = 0
    if tail > 1:
        xs = np.geomspace(1.0, tail, grid)
        points = grid
        kap = _kappa(xs, c, sigma, mu)
        excess = c * e - (target - e) * xs[:-1] - kap[1:]      # bound of err - target x on each piece
        ok = ok and bool(np.all(excess <= 0))
        worst = max(worst, float(np.max((excess + target * xs[:-1]) / (r * xs[:-1]))))
    return Certificate(bool(ok), float(worst), float(max(tail, 1.0)), points)


def _calibrate_c(sigma: float, r: float, drift: str, slack: float) -> float:
    def passes(c):
        return certify(sigma, c, r, drift=drift, slack=slack).ok

    lo, hi = 0.0, 1.0
    while passes(hi):
        lo, hi = hi, 2 * hi
        if hi > 1e12:   # cannot happen for r <= 1 (err grows linearly in c)
            raise RuntimeError("ShiftedLogGaussian: the shift c did not stay bounded.")
    for _ in range(200):
        mid = 0.5 * (lo + hi)
        if passes(mid):
            lo = mid
        else:
            hi = mid
        if hi - lo <= 1e-12 * hi:
            break
    if not lo > 0:
        raise RuntimeError("ShiftedLogGaussian: no positive shift c passed the certificate.")
    return lo


class ShiftedLogGaussian(KeywordOnly):
    """Count-dependent zCDP histograms: the shifted-log Gaussian mechanism (paper 003).

    Releases ``max(0, exp(log(x + c) + mu + sigma Z) - c)`` for each count
    ``x``, with ``(sigma, c)`` calibrated so that
    ``E|x_hat - x| < r max(x, 1)`` for every ``x >= 0`` (proved by
    :func:`certify`; see the module docstring). Members of a group of count
    ``n`` get the zCDP budget ``v(n) = log(1 + 1/(max(n-1, 0) + c))^2 /
    (2 sigma^2)`` (:meth:`rho`), about ``1 / (2 sigma^2 n^2)`` for large ``n``.

    Parameters
    ----------
    r : float
        Target relative error, in ``(0, 1]``.
    drift : {"median", "mean"}, default "median"
        ``"median"`` is ``mu = -sigma^2``, which minimizes the expected absolute
        multiplicative error (so allows the largest ``sigma``); ``"mean"`` is
        ``mu = -sigma^2/2``, unbiased in the multiplicative noise before
        clipping.
    margin : float, default 0.01
        In ``(0, 0.5]``: ``sigma`` is calibrated to the multiplicative error
        ``r (1 - margin)``, leaving room for the shift ``c``. Smaller margins
        give smaller budgets for large counts (``r^2 n^2 v(n) -> r^2 / (2
        sigma^2)``, which tends to ``1/pi`` as ``r, margin -> 0``) and larger
        budgets for the smallest counts.

    Attributes
    ----------
    r, drift, margin : as given
    sigma : float
        Log-space noise scale.
    mu : float
        Log-space drift.
    c : float
        Shift, the largest value passing the certificate (bisection to a
        relative 1e-12).
    certificate : Certificate
        The proof of the utility bound for ``(sigma, c)``.

    Examples
    --------
    >>> mech = ShiftedLogGaussian(r=0.1)
    >>> noisy = mech.release([0, 3, 250, 10_000], rng=7)
    >>> bool((noisy >= 0).all())
    True
    >>> round(mech.rho(10**6) * 10**12 * 2 * mech.sigma**2, 4)
    1.0
    >>> out = mech.release_result([0, 3, 250, 10_000], rng=7)
    >>> bool((out.estimate == noisy).all()), out.privacy.rho == mech.rho(0)
    (True, True)
    """

    @classmethod
    def channels(cls, epsilon: float = 1.0) -> list:
        """The audit's channels and negative controls of this class at claimed ``epsilon``.

        Registered by :mod:`fastldp.histograms._channels` (the release of one
        count against its zCDP budget, and a faulty copy); ``fastldp audit``
        runs them.
        """
        from ..channels import registered_channels

        return registered_channels(cls, epsilon)

    def __init__(self, *, r: float, drift: str = "median", margin: float = 0.01):
        self.r = check_float(r, "r", _OWNER, low=0, high=1, high_open=False)
        self.drift = check_choice(drift, "drift", _OWNER, DRIFTS)
        self.margin = check_float(margin, "margin", _OWNER, low=0, high=0.5, high_open=False)
        self.sigma = sigma_for_error(self.r * (1 - self.margin), self.drift)
        self.mu = drift_mu(self.sigma, self.drift)
        self.slack = self.margin / 1000
        self.c = _calibrate_c(self.sigma, self.r, self.drift, self.slack)
        self.certificate = certify(self.sigma, self.c, self.r, drift=self.drift, slack=self.slack)

    def __repr__(self) -> str:
        return (f"ShiftedLogGaussian(r={self.r!r}, drift={self.drift!r}, margin={self.margin!r}; "
                f"sigma={self.sigma:.6g}, c={self.c:.6g})")

    @property
    def multiplicative_error(self) -> float:
        """``E|W - 1|``, the error of large counts relative to ``x + c``."""
        return float(multiplicative_error(self.sigma, self.mu))

    @property
    def leading_constant(self) -> float:
        """``lim n^2 v(n) = 1 / (2 sigma^2)``."""
        return 1.0 / (2 * self.sigma * self.sigma)

    def release(self, counts: ArrayLike, *, rng: RngLike = None) -> np.ndarray:
        """Release noisy counts.

        Parameters
        ----------
        counts : array_like of int
            Non-negative integer counts, any shape (whole-number floats are
            accepted).
        rng : None, int, SeedSequence or Generator
            Randomness; an int makes the release reproducible.

        Returns
        -------
        ndarray of float
            ``max(0, (x + c) exp(mu + sigma Z) - c)``, the shape of ``counts``.
        """
        return self._release(counts, rng, f"{_OWNER}.release")

    def _release(self, counts, rng, owner: str) -> np.ndarray:
        x = check_counts(counts, "counts", owner)
        gen = as_generator(rng, owner)
        z = gen.standard_normal(x.shape)
        return np.maximum((x + self.c) * np.exp(self.mu + self.sigma * z) - self.c, 0.0)

    def release_result(self, counts: ArrayLike, *, rng: RngLike = None) -> HistogramRelease:
        """:meth:`release` as a :class:`~fastldp.histograms.HistogramRelease`.

        The same numbers as ``release(counts, rng=rng)``, bit for bit, with
        ``.n`` (the number of groups) and ``.privacy``: zCDP per person at
        ``rho = v(0)``, the largest budget of any group (members of larger
        groups get less: :meth:`rho`; :meth:`privacy_report` gives the
        per-group budgets to the data holder, as they depend on the true
        counts).
        """
        noisy = self._release(counts, rng, f"{_OWNER}.release_result")
        return HistogramRelease(noisy, int(noisy.size),
                                PrivacyStatement.zcdp(rho=float(self.rho(0))), repr(self))

    def edge_rho(self, k: ArrayLike) -> float | np.ndarray:
        """zCDP of the edge between counts ``k`` and ``k + 1`` (both ways, every order).

        ``log((k + 1 + c) / (k + c))^2 / (2 sigma^2)`` for non-negative integers ``k``.
        """
        k = check_counts(k, "k", f"{_OWNER}.edge_rho")
        out = np.log1p(1.0 / (k + self.c)) ** 2 / (2 * self.sigma * self.sigma)
        return scalar_or_array(out)

    def released_renyi(self, k: float, order: ArrayLike) -> tuple:
        """Rényi divergences of the released (clipped) laws at counts ``k`` and ``k + 1``.

        Closed form (module docstring): the log-space Gaussians with the mass
        below ``log c`` merged into the atom at 0.

        Parameters
        ----------
        k : int
            A count ``>= 0``.
        order : float or array_like
            Orders in ``(1, inf)``.

        Returns
        -------
        (ndarray, ndarray) or (float, float)
            ``D_order(M(k) || M(k+1))`` and ``D_order(M(k+1) || M(k))``. Both
            are at most ``order * edge_rho(k)``; the second tends to it as
            ``order -> inf``.
        """
        owner = f"{_OWNER}.released_renyi"
        k = float(check_counts(k, "k", owner))
        a = np.asarray(order, dtype=np.float64)
        if not np.all(a > 1) or np.any(np.isinf(a)):
            raise ValueError(f"The 'order' parameter of {owner} must be floats in (1, inf). "
                             f"Got {order!r} instead.")
        s, cut = self.sigma, math.log(self.c)
        lo, hi = math.log(k + self.c) + self.mu, math.log(k + 1 + self.c) + self.mu

        def div(m1, m2):
            atom = a * special.log_ndtr((cut - m1) / s) + (1 - a) * special.log_ndtr((cut - m2) / s)
            m_a = a * m1 + (1 - a) * m2
            cont = a * (a - 1) * (m1 - m2) ** 2 / (2 * s * s) + special.log_ndtr((m_a - cut) / s)
            return scalar_or_array(np.maximum(np.logaddexp(atom, cont) / (a - 1), 0.0))

        return div(lo, hi), div(hi, lo)

    def rho(self, n: ArrayLike) -> float | np.ndarray:
        """The count-dependent zCDP budget ``v(n)`` (vectorized).

        ``v(n) = max(edge(n-1), edge(n)) = log(1 + 1/(max(n - 1, 0) + c))^2 /
        (2 sigma^2)``: the supremum over orders ``alpha > 1`` of the Rényi
        divergence divided by ``alpha``, in both directions, between a count
        ``n`` and each neighbour ``n +- 1`` (only ``1`` for ``n = 0``), for the
        log-space release; the clipped release inherits it by post-processing.
        Non-increasing, with ``n^2 v(n) -> 1/(2 sigma^2)``.

        Parameters
        ----------
        n : int or array_like of int
            Non-negative counts.

        Returns
        -------
        float or ndarray
        """
        n = check_counts(n, "n", f"{_OWNER}.rho")
        k = np.maximum(n - 1.0, 0.0)
        out = np.log1p(1.0 / (k + self.c)) ** 2 / (2 * self.sigma * self.sigma)
        return scalar_or_array(out)

    def expected_error(self, x: ArrayLike, *, method: str = "quadrature") -> float | np.ndarray:
        """``E|x_hat - x|`` for true values ``x >= 0`` (vectorized).

        Parameters
        ----------
        x : float or array_like
            Finite non-negative reals (the utility requirement is stated for
            every real ``x >= 0``, not only integers).
        method : {"quadrature", "exact"}
            ``"quadrature"`` integrates the error against the normal density
            with adaptive Gauss-Kronrod (scipy ``quad``, relative 1e-10,
            absolute 1e-15 (x + c)) over the three smooth pieces of the
            release; ``"exact"`` is the closed form
            ``(x + c) E|W - 1| - kappa(x)`` of the module docstring.

        Returns
        -------
        float or ndarray
        """
        owner = f"{_OWNER}.expected_error"
        method = check_choice(method, "method", owner, ("quadrature", "exact"))
        xs = check_nonnegative(x, "x", owner)
        if method == "exact":
            out = _error_exact(xs, self.c, self.sigma, self.mu, self.multiplicative_error)
        else:
            flat = [_error_quadrature(float(v), self.c, self.sigma, self.mu) for v in xs.ravel()]
            out = np.asarray(flat, dtype=np.float64).reshape(xs.shape)
        return scalar_or_array(out)

    def zero_probability(self, x: ArrayLike) -> float | np.ndarray:
        """``P(x_hat = 0) = Phi((log(c / (x + c)) - mu) / sigma)`` (vectorized)."""
        xs = check_nonnegative(x, "x", f"{_OWNER}.zero_probability")
        out = special.ndtr((np.log(self.c / (xs + self.c)) - self.mu) / self.sigma)
        return scalar_or_array(out)

    def cdf(self, y: ArrayLike, x: ArrayLike) -> float | np.ndarray:
        """``P(x_hat <= y)`` for a true count ``x`` (the law of the release).

        ``0`` for ``y < 0`` and ``Phi((log((y + c)/(x + c)) - mu) / sigma)`` for
        ``y >= 0``, which has an atom of :meth:`zero_probability` at 0.
        """
        y = np.asarray(y, dtype=np.float64)
        xs = check_nonnegative(x, "x", f"{_OWNER}.cdf")
        with np.errstate(divide="ignore", invalid="ignore"):
            z = (np.log((np.maximum(y, 0.0) + self.c) / (xs + self.c)) - self.mu) / self.sigma
        out = np.where(y < 0, 0.0, special.ndtr(z))
        return scalar_or_array(np.asarray(out, dtype=np.float64))

    def privacy_report(self, counts: ArrayLike, *, delta: float = 1e-6) -> PrivacyReport:
        """Per-group privacy and utility of a histogram released with this mechanism.

        Parameters
        ----------
        counts : array_like of int
            The true counts (the budget is a function of the true count, which
            is itself private: the report is for the data holder).
        delta : float
            For the ``(epsilon, delta)``-DP column, in ``(0, 1)``.

        Returns
        -------
        PrivacyReport
        """
        x = check_counts(counts, "counts", f"{_OWNER}.privacy_report")
        delta = check_float(delta, "delta", f"{_OWNER}.privacy_report", low=0, high=1)
        rho = np.atleast_1d(np.asarray(self.rho(x), dtype=np.float64))
        err = np.atleast_1d(np.asarray(self.expected_error(x, method="exact"), dtype=np.float64))
        return PrivacyReport.build(mechanism=repr(self), counts=np.atleast_1d(x),
                                   rho=rho, expected_error=err,
                                   error_bound=self.r * np.maximum(np.atleast_1d(x), 1.0),
                                   delta=delta, leading_constant=self.leading_constant)
