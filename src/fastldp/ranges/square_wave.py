"""Square Wave: distributions of values in ``[0, 1]`` by EM or EMS (Li et al., SIGMOD 2020).

Client
------
A value ``v in [0, 1]`` is reported as ``y in [-b, 1 + b]`` with density
``p`` on the *wave* ``|y - v| <= b`` and ``q`` elsewhere,

    p = e^eps / (2 b e^eps + 1),   q = 1 / (2 b e^eps + 1),

so ``p / q = e^eps`` (``eps``-LDP: every output's density ratio between two
inputs is at most ``e^eps``) and ``2 b p + q = 1``. The bandwidth is the
paper's choice, the ``b`` that maximizes an upper bound on the mutual
information between ``v`` and ``y`` (Li et al. 2020, Section 4):

    b(eps) = (eps e^eps - e^eps + 1) / (2 e^eps (e^eps - 1 - eps)),

which tends to ``1/2`` as ``eps -> 0`` and to ``eps e^-eps / 2`` for large
``eps``. One inverse-CDF draw per user, vectorized (no loop over users):
with ``u`` uniform, the output is ``-b + u / q`` below ``q v``, on the wave
``v - b + (u - q v) / p`` up to ``q v + 2 b p``, and ``v + b + (u - q v -
2 b p) / q`` above (the reference code's sampler).

Server
------
The ``d'`` output bins (equal widths over ``[-b, 1 + b]``) are counted;
those integer counts are the whole state (:meth:`SquareWave.partial`), so
partials merge exactly. The distribution over ``d`` equal input bins of
``[0, 1]`` is the maximum-likelihood estimate under the binned channel::

    M[j, i] = P(y in output bin j | v uniform in input bin i)
            = q w' + (p - q) (1 / w) int_{bin i} |bin j  cap  [v - b, v + b]| dv,

computed exactly (the overlap's integral is a sum of ``relu(.)^2 / 2``
terms: :func:`transition_matrix`), by expectation-maximization::

    theta <- theta * M^T (h / (M theta)) / n,

and for EMS each step is followed by the binomial smoothing ``[1, 2, 1] /
4`` (``[2, 1] / 3`` at the two ends), renormalized. Each step is two
products with ``M``, done in ``O(d + d')`` without the matrix: ``M theta``
is a difference of a piecewise-quadratic function of the bin edges (the
integral of the piecewise-linear CDF of ``theta``) and ``M^T r`` its
transpose by suffix sums (:class:`WaveChannel`). The whole loop runs in
compiled code (:mod:`fastldp._kernels._wave`; :func:`expectation_maximization_numpy`,
the same loop in NumPy calls, is its twin, bit for bit): about 13 us a step
for ``d = d' = 1024`` on a shared core (the NumPy loop: 0.1 to 0.2 ms), so
10^6 users reconstruct in about 0.03 s at ``eps = 1`` (2,016 steps; the
NumPy loop 0.3 s, the dense products 8 s). The
stopping rule is the authors' reference code's: stop when the step moves
``theta`` by at most ``1 / n``
in l1, or (from the third step on) when the log-likelihood ``sum_j h_j
log (M theta)_j`` improves by less than ``tolerance`` (``1e-3``), or after
``max_iterations`` (10,000). Defaults ``d = d' = 1024`` are the paper's.

Result
------
A :class:`SquareWaveEstimate` (a :class:`~fastldp.ranges.RangeEstimate`
over the ``d`` input bins: ``range_count``, ``cdf``, ``quantile`` in bin
units) with the reconstruction ``distribution`` and value-space helpers
(``value_quantile``, ``value_range_count``, ``mean``).

Floating point
--------------
The report is an IEEE double computed from ``v`` and a uniform double: its
guarantee is the ideal real-valued mechanism's, as for
:class:`~fastldp.oracles.Piecewise` (docs/guide/floating_point.rst). The
set of doubles a report can take depends on ``v`` (on the wave the output
is ``v - b + t`` rounded), so an observer of the exact bits learns more
than ``eps`` allows. The server only ever uses the output's bin; a client
that must be exact in floating point can send its bin index instead (the
binned channel ``M`` evaluated at its value, a finite channel).

References
----------
Z. Li, T. Wang, M. Lopuhaä-Zwakenberg, N. Li, B. Škorić, "Estimating
numerical distributions under local differential privacy", SIGMOD 2020.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import exp, expm1, factorial
from typing import Any, Optional

import numpy as np

from .._kernels import _wave
from .._random import as_generator, resolve_identities
from .._sanitize import (SanitizationReport, _as_float, sanitization_counts,
                         sanitization_report)
from .._validation import check_float, check_int, param_error
from ..protocol import FixedBudgetMembers, ReportSchema
from ..streaming import ExactSum, Partial
from ._base import RangeEstimate, check_probabilities

__all__ = ["SquareWave", "SquareWaveEstimate", "bandwidth", "transition_matrix", "WaveChannel",
           "DenseChannel", "expectation_maximization", "expectation_maximization_numpy", "smooth"]

#: the budgets SquareWave takes: below, b is 1/2 to 1e-9; above 20 the wave
#: (2 b < 1e-7) nears the spacing of doubles around 1
EPSILON_RANGE = (1e-4, 20.0)
#: what a malformed report is counted as (module ``_sanitize``'s names where they apply)
REASONS = ("out_of_range", "infinite", "nan", "non_numeric")


def bandwidth(epsilon: float) -> float:
    """``b(eps) = (eps e^eps - e^eps + 1) / (2 e^eps (e^eps - 1 - eps))`` (Li et al. 2020).

    Both the numerator and ``e^eps - 1 - eps`` cancel to order ``eps^2``
    for small ``eps``; below ``eps = 1`` they are summed as series
    (``sum_k eps^k (k - 1) / k!`` and ``sum_k eps^k / k!``, ``k >= 2``).

    Examples
    --------
    >>> round(bandwidth(1.0), 6), round(bandwidth(1e-3), 6)
    (0.256083, 0.499667)
    """
    eps = float(epsilon)
    if eps < 1.0:
        num = sum(eps**k * (k - 1) / factorial(k) for k in range(2, 30))
        den = sum(eps**k / factorial(k) for k in range(2, 30))
        return num / (2.0 * exp(eps) * den)
    e = exp(eps)
    return (eps * e - expm1(eps)) / (2.0 * e * (expm1(eps) - eps))


def _ramp_integral(a: np.ndarray, x0: np.ndarray, x1: np.ndarray) -> np.ndarray:
    """``int_{x0}^{x1} relu(a - v) dv`` (broadcast)."""
    return 0.5 * (np.maximum(a - x0, 0.0) ** 2 - np.maximum(a - x1, 0.0) ** 2)


def transition_matrix(epsilon: float, bins: int, output_bins: int) -> np.ndarray:
    """``M[j, i]``: the probability of output bin ``j`` for a value uniform in input bin ``i``.

    Exact: the overlap of the output bin ``[y0, y1]`` with the wave
    ``[v - b, v + b]`` is ``relu(y1 - v + b) - relu(y0 - v + b) - relu(y1 - v - b)
    + relu(y0 - v - b)``, whose integral over the input bin is a sum of
    :func:`_ramp_integral` terms. Columns sum to 1 (to rounding).

    Returns
    -------
    numpy.ndarray of float64, shape (output_bins, bins)
    """
    b = bandwidth(epsilon)
    e = exp(epsilon)
    p, q = e / (2.0 * b * e + 1.0), 1.0 / (2.0 * b * e + 1.0)
    x = np.linspace(0.0, 1.0, bins + 1)
    y = np.linspace(-b, 1.0 + b, output_bins + 1)
    x0, x1 = x[None, :-1], x[None, 1:]
    y0, y1 = y[:-1, None], y[1:, None]
    overlap = (_ramp_integral(y1 + b, x0, x1) - _ramp_integral(y0 + b, x0, x1)
               - _ramp_integral(y1 - b, x0, x1) + _ramp_integral(y0 - b, x0, x1))
    width_in = 1.0 / bins
    return q * (y1 - y0) + (p - q) * overlap / width_in


class WaveChannel:
    """``M theta`` and ``M^T r`` in ``O(d + d')`` from the wave's structure (no matrix).

    With ``V`` piecewise uniform on the input bins (mass ``theta_i`` on bin
    ``i``), the probability of output bin ``[y0, y1]`` is
    ``q w' sum(theta) + (p - q) (Phi(y1 + b) - Phi(y0 + b) - Phi(y1 - b) + Phi(y0 - b))``,
    where ``Phi(a) = int_{-inf}^a P(V <= t) dt`` is piecewise quadratic:
    ``a S0 - S1 + theta_K (a - x_K)^2 / (2 w)`` with ``K`` the bin holding ``a``,
    ``S0`` and ``S1`` the prefix sums of ``theta`` and ``theta`` times the bin
    centres. The transpose telescopes ``r`` over the output edges
    (``e_k = r_{k-1} - r_k``) and reads ``T(x) = sum_k e_k relu(a_k - x)^2 / 2``
    from suffix sums at the input edges (both sets of shifted edges share the
    sums of ``e``, ``e y`` and ``e y^2``). Both agree with the dense
    :func:`transition_matrix` to ``2e-11`` relative for ``eps <= 4`` and
    ``4e-10`` at ``eps = 10`` (tests/test_square_wave.py: ``1e-10`` up to 4).
    """

    def __init__(self, epsilon: float, bins: int, output_bins: int) -> None:
        self.b = b = bandwidth(epsilon)
        e = exp(epsilon)
        self.p, self.q = e / (2.0 * b * e + 1.0), 1.0 / (2.0 * b * e + 1.0)
        self.d, self.d_out = bins, output_bins
        self.width = 1.0 / bins
        self.x = np.linspace(0.0, 1.0, bins + 1)
        self.mid = (np.arange(bins) + 0.5) / bins
        y = np.linspace(-b, 1.0 + b, output_bins + 1)
        self.widths_out = np.diff(y)
        self.plus, self.minus = y + b, y - b
        # forward: Phi at both sets of shifted edges at once. J indexes the padded prefix
        # sums: 0 for an edge at or below 0 (Phi = 0), K + 1 for an edge in input bin K, d + 1
        # at or above 1 (the padded theta is 0 there: no partial bin)
        a = np.concatenate([self.plus, self.minus])
        K = np.clip(np.floor(a * bins), 0, bins).astype(np.int64)
        self._a = a
        self._J = np.where(a > 0.0, K + 1, 0)
        self._part = np.where(a > 0.0, (a - self.x[K]) ** 2 / (2.0 * self.width), 0.0)
        self._n1 = output_bins + 1
        # backward: the first shifted edge above each input edge, per set, into suffix sums
        # padded with a 0 (no edge above); T(x) = sum_{k >= idx} e_k (y_k - c)^2 / 2 with the
        # raw edges y and c = x -+ b, so both sets share the suffix sums of e, e y, e y^2
        above = np.stack([np.searchsorted(self.plus, self.x, side="right"),
                          np.searchsorted(self.minus, self.x, side="right")])
        self._above = np.ascontiguousarray(above, dtype=np.int64)  # the compiled loop's table
        # flat positions in the (3, d' + 2) buffer of suffix sums: one take gathers them all
        rows = np.arange(3)[:, None, None] * (output_bins + 2)
        self._flat_above = (rows + above[None, :, :]).ravel()
        self._powers = np.stack([np.ones_like(y), y, y * y])
        c = np.stack([self.x - b, self.x + b])
        self._cpoly = 0.5 * np.stack([c * c, -2.0 * c, np.ones_like(c)])

    def forward(self, theta: np.ndarray) -> np.ndarray:
        """``M theta`` (shape ``(d',)``)."""
        d = self.d
        S0, S1, padded = np.zeros(d + 2), np.zeros(d + 2), np.zeros(d + 2)
        np.cumsum(theta, out=S0[2:])
        np.cumsum(theta * self.mid, out=S1[2:])
        padded[1:d + 1] = theta
        J = self._J
        phi = self._a * S0[J] - S1[J] + padded[J] * self._part
        step = np.diff(phi)
        n1 = self._n1
        wave = step[:n1 - 1] - step[n1:]
        return self.q * S0[-1] * self.widths_out + (self.p - self.q) * wave

    def backward(self, r: np.ndarray) -> np.ndarray:
        """``M^T r`` (shape ``(d,)``)."""
        n1 = self._n1
        e = np.zeros(n1)
        e[:-1] = -r
        e[1:] += r                                      # e_k = r_{k-1} - r_k
        suffix = np.zeros((3, n1 + 1))
        np.cumsum((self._powers * e)[:, ::-1], axis=1, out=suffix[:, -2::-1])
        at = suffix.ravel().take(self._flat_above).reshape(self._cpoly.shape)
        T = (at * self._cpoly).sum(axis=0)              # (2 sets, input edges)
        Td = T[0] - T[1]
        wave = (Td[:-1] - Td[1:]) * self.d  # / width, with d exact where 1 / d is rounded
        # (w' * r).sum(), not a BLAS dot: NumPy's pairwise order, which the compiled loop
        # (fastldp._kernels._wave) reproduces bit for bit
        return self.q * float((self.widths_out * r).sum()) + (self.p - self.q) * wave


class DenseChannel:
    """A channel given by its matrix (the naive twin of :class:`WaveChannel`)."""

    def __init__(self, M: np.ndarray) -> None:
        self.M = np.asarray(M, dtype=np.float64)
        self.Mt = np.ascontiguousarray(self.M.T)

    def forward(self, theta: np.ndarray) -> np.ndarray:
        return self.M @ theta

    def backward(self, r: np.ndarray) -> np.ndarray:
        return self.Mt @ r


def smooth(theta: np.ndarray) -> np.ndarray:
    """EMS's binomial smoothing ``[1, 2, 1] / 4``; ``[2, 1] / 3`` and ``[1, 2] / 3`` at the ends."""
    out = 2.0 * theta
    out[1:] += theta[:-1]
    out[:-1] += theta[1:]
    weights = np.full(theta.shape[0], 4.0)
    weights[[0, -1]] = 3.0
    return out / weights


def expectation_maximization(channel: Any, hist: np.ndarray, *, smoothing: bool,
                             tolerance: float = 1e-3, max_iterations: int = 10_000,
                             start: Optional[np.ndarray] = None) -> tuple:
    """EM (or EMS) for ``theta`` given output counts ``hist`` and the channel ``M``.

    The module docstring has the update and the stopping rule. ``channel``
    is a :class:`WaveChannel`, a :class:`DenseChannel` or a matrix ``M``.
    For a :class:`WaveChannel` the whole loop runs in compiled code
    (:mod:`fastldp._kernels._wave`, a few microseconds a step at ``d = d'
    = 1024`` instead of the NumPy loop's 0.1 to 0.2 ms of call overhead);
    any other channel runs :func:`expectation_maximization_numpy`, the
    kernel's naive twin (the same iterates bit for bit, and the same stop;
    the log-likelihood to its last few places).

    Returns
    -------
    theta : numpy.ndarray, shape (d,)
        The distribution over the input bins (sums to 1).
    iterations : int
    converged : bool
        False when ``max_iterations`` stopped it.
    log_likelihood : float
        ``sum_j hist_j log (M theta)_j`` at ``theta``.
    """
    if not isinstance(channel, WaveChannel):
        return expectation_maximization_numpy(channel, hist, smoothing=smoothing,
                                              tolerance=tolerance, max_iterations=max_iterations,
                                              start=start)
    hist = np.ascontiguousarray(hist, dtype=np.float64)
    d = channel.d
    theta = (np.full(d, 1.0 / d) if start is None
             else np.array(start, dtype=np.float64, copy=True, order="C"))
    if hist.shape != (channel.d_out,) or theta.shape != (d,):
        raise ValueError(f"hist must have shape ({channel.d_out},) and start ({d},) for this "
                         f"channel; got {hist.shape} and {theta.shape}")
    if float(hist.sum()) == 0:
        return theta, 0, True, 0.0
    iterations, converged, log_likelihood = _wave.expectation_maximization(
        hist, theta, channel.mid, channel._a, channel._J, channel._part, channel.widths_out,
        channel._powers, channel._above, channel._cpoly, channel.p, channel.q,
        bool(smoothing), float(tolerance), int(max_iterations))
    return theta, iterations, converged, log_likelihood


def expectation_maximization_numpy(channel: Any, hist: np.ndarray, *, smoothing: bool,
                                   tolerance: float = 1e-3, max_iterations: int = 10_000,
                                   start: Optional[np.ndarray] = None) -> tuple:
    """:func:`expectation_maximization` as a loop of NumPy calls over ``channel.forward`` and
    ``channel.backward`` (any channel; the compiled loop's naive twin). Same arguments and
    result."""
    hist = np.asarray(hist, dtype=np.float64)
    n = float(hist.sum())
    if isinstance(channel, np.ndarray):
        channel = DenseChannel(channel)
    d = channel.backward(np.zeros_like(hist)).shape[0]
    theta = np.full(d, 1.0 / d) if start is None else np.asarray(start, dtype=np.float64)
    predicted = channel.forward(theta)
    seen = hist > 0  # empty output bins add nothing to the likelihood
    old = 0.0
    log_likelihood = float(hist[seen] @ np.log(predicted[seen]))
    if n == 0:
        return theta, 0, True, 0.0
    for step in range(max_iterations):
        new = theta * channel.backward(hist / predicted)
        new *= 1.0 / new.sum()  # a product, not d quotients: the compiled loop's order
        if smoothing:
            new = smooth(new)
            new *= 1.0 / new.sum()
        predicted = channel.forward(new)
        log_likelihood = float(hist[seen] @ np.log(predicted[seen]))
        moved = float(np.abs(new - theta).sum())
        theta = new
        if moved <= 1.0 / n or (step > 1 and abs(log_likelihood - old) < tolerance):
            return theta, step + 1, True, log_likelihood
        old = log_likelihood
    return theta, max_iterations, False, log_likelihood


@dataclass(frozen=True, repr=False)
class SquareWaveEstimate(RangeEstimate):
    """The reconstructed distribution of Square Wave over ``d`` equal bins of ``[0, 1]``.

    A :class:`~fastldp.ranges.RangeEstimate` over the bins (``counts`` is
    ``n`` times ``distribution``; ``range_count(a, b)``, ``cdf()`` and
    ``quantile(q)`` are in bin units, bin ``i`` covering ``[i / d, (i + 1) / d)``),
    with the value-space answers :meth:`value_quantile`,
    :meth:`value_range_count` and :meth:`mean`.

    Attributes
    ----------
    distribution : numpy.ndarray, shape (d,)
        The EM / EMS estimate (non-negative, sums to 1).
    iterations : int
    converged : bool
        False when the iteration cap stopped the EM.
    log_likelihood : float
    smoothing : bool
        EMS (True) or EM.
    """

    distribution: np.ndarray = None  # type: ignore[assignment]  # always given by SquareWave
    iterations: int = 0
    converged: bool = True
    log_likelihood: float = 0.0
    smoothing: bool = True

    def value_quantile(self, q: Any) -> np.ndarray:
        """The ``q``-quantiles as values in ``[0, 1]`` (:meth:`quantile` over ``d``)."""
        arr = check_probabilities(q, f"{type(self).__name__}.value_quantile")
        return self.quantile(arr) / self.domain_size

    def value_cdf(self, x: Any) -> np.ndarray:
        """``P(value <= x)`` for ``x`` in ``[0, 1]``, linear within each bin."""
        owner = f"{type(self).__name__}.value_cdf"
        arr = np.asarray(x, dtype=np.float64)
        if not np.all((arr >= 0.0) & (arr <= 1.0)):
            raise param_error("x", owner, "floats in [0.0, 1.0]", x)
        d = self.domain_size
        cum = np.concatenate([[0.0], np.cumsum(self.distribution)])
        pos = arr * d
        i = np.minimum(np.floor(pos).astype(np.int64), d - 1)
        return cum[i] + (pos - i) * self.distribution[i]

    def value_range_count(self, low: Any, high: Any) -> np.ndarray:
        """The estimated number of users with a value in ``[low, high]`` (floats in ``[0, 1]``)."""
        owner = f"{type(self).__name__}.value_range_count"
        lo, hi = np.broadcast_arrays(np.asarray(low, dtype=np.float64),
                                     np.asarray(high, dtype=np.float64))
        if not np.all((lo >= 0.0) & (lo <= hi) & (hi <= 1.0)):
            raise param_error("low, high", owner, "floats with 0 <= low <= high <= 1",
                              (low, high))
        return self.n * (self.value_cdf(hi) - self.value_cdf(lo))

    def mean(self) -> float:
        """The mean value (bin centres weighted by the distribution)."""
        d = self.domain_size
        return float(self.distribution @ ((np.arange(d) + 0.5) / d))


class SquareWave(FixedBudgetMembers):
    """Square Wave reports of values in ``[0, 1]`` and their distribution by EM or EMS.

    Parameters
    ----------
    epsilon : float in [1e-4, 20]
        The budget of every report. Keyword-only, as every parameter.
    bins : int in [2, 2^14], default 1024
        ``d``: the input bins of the reconstructed distribution.
    output_bins : int in [2, 2^14], optional
        ``d'``: the bins the reports are counted in (default ``bins``).
    smoothing : bool, default True
        EMS (EM with binomial smoothing after each step, the paper's
        choice) or plain EM.
    tolerance : float in (0, inf), default 1e-3
        Stop when the log-likelihood improves by less (the reference
        code's rule; module docstring).
    max_iterations : int in [1, 10^6], default 10,000

    Notes
    -----
    Reports are float64 scalars in ``[-b, 1 + b]``. A malformed report is
    replaced and counted (``estimate(...).sanitization``): a finite value
    outside the range is clipped to it (``out_of_range``), an infinity to
    the end of its sign (``infinite``), NaN and non-numbers to ``0.5``
    (``nan``, ``non_numeric``; a legal output whatever the input).
    ``identities`` are validated and unused (no public hash).

    Examples
    --------
    >>> import numpy as np
    >>> sw = SquareWave(epsilon=2.0, bins=64)
    >>> x = np.random.default_rng(0).beta(5, 2, 20_000)
    >>> est = sw.estimate(sw.privatize(x, rng=1))
    >>> est.converged, round(float(est.distribution.sum()), 12)
    (True, 1.0)
    >>> bool(abs(est.value_quantile(0.5) - np.median(x)) < 0.05)
    True
    """

    _budget_note = "Square Wave reports have one budget"

    kind = "distribution"
    labels = None

    def __init__(self, *, epsilon: float, bins: int = 1024, output_bins: Optional[int] = None,
                 smoothing: bool = True, tolerance: float = 1e-3,
                 max_iterations: int = 10_000) -> None:
        owner = type(self).__name__
        self.epsilon = check_float(epsilon, "epsilon", owner, low=EPSILON_RANGE[0],
                                   high=EPSILON_RANGE[1], low_open=False, high_open=False)
        self.bins = check_int(bins, "bins", owner, low=2, high=1 << 14)
        self.output_bins = (self.bins if output_bins is None
                            else check_int(output_bins, "output_bins", owner, low=2, high=1 << 14))
        if not isinstance(smoothing, (bool, np.bool_)):
            raise param_error("smoothing", owner, "a bool (True: EMS, False: EM)", smoothing,
                              TypeError)
        self.smoothing = bool(smoothing)
        self.tolerance = check_float(tolerance, "tolerance", owner, low=0.0, high=np.inf)
        self.max_iterations = check_int(max_iterations, "max_iterations", owner, low=1,
                                        high=10**6)
        self.b = bandwidth(self.epsilon)
        e = exp(self.epsilon)
        #: the densities on and off the wave (``p / q = e^eps``, ``2 b p + q = 1``)
        self.p = e / (2.0 * self.b * e + 1.0)
        self.q = 1.0 / (2.0 * self.b * e + 1.0)
        self._matrix: Optional[np.ndarray] = None
        self._channel: Optional[WaveChannel] = None

    # ------------------------------------------------------------ protocol questions
    def stream_params(self) -> dict:
        """The public parameters that rebuild an equivalent server (JSON values)."""
        return {"epsilon": self.epsilon, "bins": self.bins, "output_bins": self.output_bins,
                "smoothing": self.smoothing, "tolerance": self.tolerance,
                "max_iterations": self.max_iterations}

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.stream_params().items())
        return f"{type(self).__name__}({params})"

    @property
    def report_schema(self) -> ReportSchema:
        """float64 scalars; every report has the budget ``epsilon``."""
        return ReportSchema(np.float64, (), fixed_epsilon=self.epsilon)

    @property
    def output_bounds(self) -> tuple:
        """``(-b, 1 + b)``: the range of a report."""
        return (-self.b, 1.0 + self.b)

    def example_data(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` values from Beta(5, 2), the paper's synthetic data."""
        n = check_int(n, "n", f"{type(self).__name__}.example_data", low=0)
        return rng.beta(5.0, 2.0, n)

    # ------------------------------------------------------------ client
    def check_values(self, values: Any, owner: str) -> np.ndarray:
        """``values`` as a 1-d float64 array in ``[0, 1]``, or raise naming the first bad one."""
        expected = "a 1-d array of floats in [0.0, 1.0]"
        try:
            arr = np.asarray(values, dtype=np.float64)
        except (TypeError, ValueError):
            raise param_error("values", owner, expected, values, TypeError) from None
        if arr.ndim != 1:
            raise param_error("values", owner, expected, f"an array of shape {arr.shape}")
        bad = ~((arr >= 0.0) & (arr <= 1.0))  # NaN fails
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"The 'values' parameter of {owner} must be {expected}. "
                             f"Got {arr[i]!r} at index {i} instead.")
        return arr

    def privatize(self, values: Any, *, epsilons: Any = None, identities: Any = None,
                  rng: Any = None) -> np.ndarray:
        """One Square Wave report per value (float64 in ``[-b, 1 + b]``, shape ``(n,)``).

        Parameters
        ----------
        values : array_like of float in [0, 1], shape (n,)
        epsilons : None or the fixed epsilon
        identities : array_like of int, optional
            Validated, unused.
        rng : None, int, SeedSequence or Generator
            Private randomness (one uniform per value).
        """
        owner = f"{type(self).__name__}.privatize"
        self._check_epsilons(epsilons, owner)
        v = self.check_values(values, owner)
        resolve_identities(identities, v.shape[0], owner)
        u = np.asarray(as_generator(rng, owner).random(v.shape[0]), dtype=np.float64)
        return self._report(v, u)

    def _report(self, v: np.ndarray, u: np.ndarray) -> np.ndarray:
        """The inverse CDF of the report's law at ``u`` (module docstring)."""
        b, p, q = self.b, self.p, self.q
        below, wave = q * v, q * v + 2.0 * b * p
        y = np.where(u < below, -b + u / q,
                     np.where(u < wave, v - b + (u - below) / p, v + b + (u - wave) / q))
        return np.clip(y, -b, 1.0 + b)

    def density(self, y: Any, v: Any) -> np.ndarray:
        """The density of report ``y`` given ``v``: ``p`` on the wave, ``q`` off it, 0 outside."""
        y = np.asarray(y, dtype=np.float64)
        v = np.asarray(v, dtype=np.float64)
        inside = (y >= -self.b) & (y <= 1.0 + self.b)
        return np.where(inside, np.where(np.abs(y - v) <= self.b, self.p, self.q), 0.0)

    # ------------------------------------------------------------ server
    def transition_matrix(self) -> np.ndarray:
        """``M``, shape ``(output_bins, bins)`` (:func:`transition_matrix`; computed once)."""
        if self._matrix is None:
            self._matrix = transition_matrix(self.epsilon, self.bins, self.output_bins)
            self._matrix.setflags(write=False)
        return self._matrix

    def channel(self) -> WaveChannel:
        """The EM's ``O(d + d')`` products with ``M`` (:class:`WaveChannel`; built once)."""
        if self._channel is None:
            self._channel = WaveChannel(self.epsilon, self.bins, self.output_bins)
        return self._channel

    def output_bin(self, y: Any) -> np.ndarray:
        """The output bin of each report in ``[-b, 1 + b]`` (int64; the top end in the last bin)."""
        y = np.asarray(y, dtype=np.float64)
        j = np.floor((y + self.b) * (self.output_bins / (1.0 + 2.0 * self.b)))
        return np.clip(j, 0, self.output_bins - 1).astype(np.int64)

    def sanitize(self, reports: Any, owner: str) -> tuple:
        """Legal reports (float64) from ``reports`` and what was replaced, by reason."""
        try:
            arr = np.asarray(reports)
        except (TypeError, ValueError):
            arr = np.asarray(list(reports), dtype=object)
        if arr.ndim != 1:
            raise ValueError(f"The 'reports' parameter of {owner} must be a 1-d array of float "
                             f"reports. Got an array of shape {arr.shape} instead.")
        if arr.dtype.kind in "fiu" and arr.dtype != bool:
            vals, wrong_dtype = arr.astype(np.float64), False
            non_numeric = np.zeros(arr.shape, dtype=bool)
        else:
            vals, non_numeric = _as_float(arr)
            wrong_dtype = True
        nan = np.isnan(vals) & ~non_numeric
        inf = np.isinf(vals)
        low, high = self.output_bounds
        outside = np.isfinite(vals) & ((vals < low) | (vals > high))
        out = np.where(nan | non_numeric, 0.5, np.clip(vals, low, high))
        by_reason = {"out_of_range": int(outside.sum()), "infinite": int(inf.sum()),
                     "nan": int(nan.sum()), "non_numeric": int(non_numeric.sum())}
        n = int(arr.shape[0])
        report = SanitizationReport(n, n - sum(by_reason.values()), by_reason, wrong_dtype)
        return out, report

    def partial(self, reports: Any, epsilons: Any = None, identities: Any = None) -> Partial:
        """The exact state of :meth:`estimate` over a chunk: the integer counts of the output bins.

        Returns
        -------
        fastldp.streaming.Partial
            ``hist`` (an :class:`~fastldp.streaming.ExactSum` of the
            ``output_bins`` integer counts), ``n`` and the sanitization counts.
        """
        owner = f"{type(self).__name__}.partial"
        self._check_epsilons(epsilons, owner)
        y, report = self.sanitize(reports, owner)
        resolve_identities(identities, y.shape[0], owner)
        hist = np.bincount(self.output_bin(y), minlength=self.output_bins)
        total = ExactSum(self.output_bins)
        total.add(hist.astype(np.float64))  # integers below 2^53: exact
        return Partial(type(self).__name__, self.stream_params(), sums={"hist": total},
                       counts=sanitization_counts(report),
                       flags={"wrong_dtype": report.wrong_dtype})

    def finalize(self, partial: Partial) -> SquareWaveEstimate:
        """The reconstruction of a (merged) partial: ``estimate`` of its reports, bit for bit."""
        self._check_partial(partial, f"{type(self).__name__}.finalize")
        hist = np.rint(partial.sums["hist"].value())
        n = int(partial.counts["n"])
        theta, iterations, converged, ll = expectation_maximization(
            self.channel(), hist, smoothing=self.smoothing, tolerance=self.tolerance,
            max_iterations=self.max_iterations)
        return SquareWaveEstimate(n * theta, None, n, self.privacy(),
                                  sanitization_report(partial.counts, partial.flags),
                                  distribution=theta, iterations=iterations, converged=converged,
                                  log_likelihood=ll, smoothing=self.smoothing)

    def estimate(self, reports: Any, *, epsilons: Any = None,
                 identities: Any = None) -> SquareWaveEstimate:
        """The reconstruction of the reports: ``finalize(partial(reports, ...))``."""
        return self.finalize(self.partial(reports, epsilons, identities))
