"""Shuffle-model building blocks: a shuffler, private vector summation, shuffled bits.

Three primitives serve every shuffled protocol of :mod:`fastldp.regression`:

- :func:`shuffle` permutes messages uniformly (one shuffler per stream);
- :class:`ShuffledVectorSum` is multi-message private summation of rounded
  integer vectors: every party adds its share of distributed Skellam noise,
  splits the result into additive shares modulo a public power of two and
  sends each share as one anonymous message; one shuffler per coordinate
  mixes the messages of all parties, and the analyzer only adds them up;
- :class:`ShuffledBits` is binary randomized response sent through ``d``
  independent shuffled streams (the heavy-hitter step of U2R, Stage 1),
  with the debiasing of the counts.

Privacy accounting (summation)
------------------------------
The analyzer's view is the set of shuffled shares. Its privacy is split as in
paper 002, Appendix D.2 / E.2: the noisy integer sum is (eps, delta/2)-DP,
and the shuffled shares are within total variation ``t`` of a function of
that sum, with ``(1 + e^eps) t <= delta/2`` (*Shares* below says why the
factor).

*Noise.* The sum of the parties' Skellam shares ``Sk(mu/n)`` is exactly
``Sk(mu)`` per coordinate (Poisson sums are Poisson), so the released
integer vector is the Skellam mechanism of Agarwal, Kairouz and Liu,
"The Skellam Mechanism for Differentially Private Federated Learning"
(NeurIPS 2021), Theorem 3.5: for an integer-valued query with l2 and l1
sensitivities ``D2`` and ``D1`` and per-coordinate noise variance ``mu``
(``Sk(mu) = Poisson(mu/2) - Poisson(mu/2)``), for every integer ``alpha > 1``
it is ``(alpha, eps_R(alpha))``-RDP with::

    eps_R(alpha) = alpha D2^2 / (2 mu) + min(((2 alpha - 1) D2^2 + 6 D1) / (4 mu^2), 3 D1 / (2 mu))

converted to (eps, delta) by Canonne, Kamath and Steinke (2020) /
Balle et al. (2020)::

    eps = min_alpha  eps_R(alpha) + log((alpha - 1) / alpha) - (log delta + log alpha) / (alpha - 1).

:func:`skellam_variance` finds the smallest ``mu`` (bisection) that meets a
target. The noise is calibrated to the l2 sensitivity, as the paper's
centered-binomial noise is (Appendix B); we use Skellam instead of the
centered binomial because its sum over parties is exactly Skellam and its
RDP bound has no support-mismatch term, so the accounting is one formula
(checked against a direct numerical Renyi divergence in the tests).
Rounding: each party rounds ``scale * v`` stochastically (unbiased), which
moves every coordinate by less than one unit, so a change of one party's
real vector by at most ``S`` in l2 changes its integer vector by at most
``scale * S + 2 sqrt(D)`` (``D`` coordinates), the ``D2`` used.

*Shares.* With ``m`` shares per party and coordinate, uniformly random
modulo ``q`` and summing to the party's value, the shuffled multiset of all
``n m`` shares of one coordinate is ``2^-sigma``-close in total variation to
a function of the sum alone when (Balle, Bell, Gascon and Nissim, "Private
Summation in the Multi-Message Shuffle Model", CCS 2020, Theorem 1 as we
read it)::

    m >= ceil((2 sigma + log2 q) / (log2 n - log2 e)) + 1.

With ``D`` independent shufflers the distances add to ``delta_shares =
D 2^-sigma``. A view within total variation ``delta_shares`` of an
``(eps, delta_noise)``-DP view is ``(eps, delta_noise + (1 + e^eps)
delta_shares)``-DP: ``P[V(x) in S] <= P[V*(x) in S] + t <= e^eps
P[V*(x') in S] + delta_noise + t <= e^eps P[V(x') in S] + delta_noise + (1 +
e^eps) t``. So ``sigma = log2(2 D (1 + e^eps) / delta)`` gives the shares'
part ``(1 + e^eps) delta_shares <= delta/2``. :func:`shares_needed` computes
``m``. (Before 2026-12, the shares' part was counted as ``delta_shares``
alone, which understated ``delta`` by ``e^eps delta_shares``.)

Simulation
----------
The shares are really drawn, put in one stream per coordinate, permuted
(:func:`shuffle`) and summed modulo ``q`` by the analyzer; nothing uses the
known sum. Everything is vectorized (one ``(D, n m)`` array). When the
messages would exceed ``max_messages`` (the non-interactive protocol at
``d = 256`` would send ``15,000 x 33,152 x 10`` of them), :meth:`ShuffledVectorSum.sum_aggregate`
releases the same integer sum in distribution from the parties' total:
the noise is one ``Sk(mu)`` draw per coordinate (exactly the law of the sum
of the shares) and the total is rounded stochastically once instead of per
party (the rounding errors differ by less than ``sqrt(n)/2`` units per
coordinate, against a noise s.d. ``sqrt(mu)``). The accounting is the same.

Privacy accounting (shuffled bits)
----------------------------------
Each of ``n`` parties holds one bit per stream; with probability ``2 gamma``
it sends a uniform random bit, otherwise its bit (so each bit flips with
probability ``gamma``). The shuffled stream reveals only its count.
:func:`shuffled_bits_delta` bounds the hockey-stick divergence between two
neighbouring inputs exactly (numerically) after revealing to the analyzer
which other parties sent a uniform bit (the privacy blanket of Balle, Bell,
Gascon and Nissim, "The Privacy Blanket of the Shuffle Model", CRYPTO 2019;
closed forms of the same shape are in Cheu, Smith, Ullman, Zeber and
Zhilyaev, EUROCRYPT 2019): with ``K ~ Bin(n - 1, 2 gamma)`` blanket parties,
the count is ``own + Bin(K, 1/2)`` plus a known offset, where ``own ~
Bern(gamma)`` for bit 0 and ``Bern(1 - gamma)`` for bit 1, and
``delta = E_K[sum_z (P_0(z) - e^eps P_1(z))_+]``. Changing one party's index
in Stage 1 changes two streams, so each stream is calibrated to
``(eps/2, delta/2)`` (basic composition), as in paper 002, Appendix E.1.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from typing import Any, Callable, Optional, TypeVar, Union

import numpy as np
from numpy.typing import ArrayLike

from .._random import RngLike, as_generator
from ..results import PrivacyStatement, Result
from ..streaming import ExactSum, Partial, check_partial
from .._validation import check_float, check_int, param_error

__all__ = [
    "BudgetError",
    "ShuffledSumAnalyzer",
    "ShuffledBitsAnalyzer",
    "shuffle",
    "skellam_rdp",
    "rdp_to_epsilon",
    "skellam_epsilon",
    "skellam_variance",
    "shares_needed",
    "stochastic_round",
    "SummationResult",
    "ShuffledVectorSum",
    "shuffled_bits_delta",
    "flip_probability",
    "ShuffledBits",
]

# Renyi orders: a fine grid up to 2048 (where the optimum lies for the usual budgets), then a
# geometric one up to 2^60, which a small eps needs (the optimal order grows like
# log(1/delta) / eps; with the orders stopping at 2048, eps below about log(1/delta) / 2048
# could not be reached by any variance). Where the minimum lies on the fine grid, as for the
# usual budgets, the extra orders do not change it (nor the calibration).
_ALPHAS = np.concatenate([np.arange(2, 64), np.arange(64, 257, 4), np.arange(264, 2049, 16),
                          np.unique(np.round(np.geomspace(2304, 2.0 ** 60, 160)))]).astype(
    np.float64)
#: the largest Skellam variance skellam_variance tries (mu^2 must stay finite in skellam_rdp)
_MU_MAX = 1e150
#: the largest total Skellam variance a release can draw: NumPy's Poisson sampler takes
#: lam = mu / 2 up to about 9.2e18
_MU_SAMPLER_MAX = 1.8e19
_LOG2E = math.log2(math.e)

_T = TypeVar("_T")


class BudgetError(ValueError):
    """A privacy budget that the calibration cannot serve.

    ``smallest`` is the smallest ``epsilon`` that can be served with the
    other parameters unchanged (``math.inf`` when none can) and ``reason``
    says why in a few words; estimators catch it and name their own
    ``epsilon`` parameter (:func:`owner_budget`).

    Examples
    --------
    >>> from fastldp.regression.shuffle import BudgetError, skellam_variance
    >>> try:
    ...     skellam_variance(1e-17, 1e-300, 10, 10)
    ... except BudgetError as exc:
    ...     print(f"{exc.smallest:.2g}", isinstance(exc, ValueError))
    5.6e-16 True
    """

    def __init__(self, owner: str, epsilon: Any, smallest: float, reason: str) -> None:
        self.owner, self.epsilon, self.smallest, self.reason = owner, epsilon, smallest, reason
        super().__init__(budget_message(owner, epsilon, smallest, reason))


def budget_message(owner: str, epsilon: Any, smallest: float, reason: str) -> str:
    """The message of a :class:`BudgetError` (the house format of a parameter error)."""
    if math.isfinite(smallest):
        expected = f"a float >= {smallest:.4g} ({reason})"
    else:
        expected = f"a float that can be served, and none can ({reason})"
    return str(param_error("epsilon", owner, expected, epsilon))


def owner_budget(owner: str, epsilon: Any, step: Callable[[], _T]) -> _T:
    """Run ``step()``; a :class:`BudgetError` becomes a ValueError about ``owner``'s 'epsilon'.

    The estimators calibrate through these building blocks; their users
    passed the estimator's ``epsilon``, so that is the parameter the error names.
    """
    try:
        return step()
    except BudgetError as exc:
        raise BudgetError(owner, epsilon, exc.smallest, exc.reason) from exc


# ---------------------------------------------------------------- shuffler
def shuffle(messages: ArrayLike, rng: RngLike = None) -> np.ndarray:
    """Permute messages uniformly at random, one independent shuffler per row.

    Parameters
    ----------
    messages : array_like
        A 1-d array of messages (one shuffler) or a 2-d array whose rows are
        independent streams (one shuffler each).
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    ndarray
        A new array: each row a uniformly random permutation of the input row.
    """
    arr = np.asarray(messages)
    if arr.ndim not in (1, 2):
        raise param_error("messages", "shuffle", "a 1-d or 2-d array", f"array of shape {arr.shape}")
    gen = as_generator(rng, "shuffle", purpose="sampling")
    return gen.permuted(arr, axis=-1)


# ---------------------------------------------------------------- accounting
def skellam_rdp(alpha: ArrayLike, mu: float, l2: float,
                l1: float) -> Union[float, np.ndarray]:
    """Renyi-DP of the Skellam mechanism (Agarwal, Kairouz and Liu 2021, Theorem 3.5).

    Parameters
    ----------
    alpha : float or ndarray
        Renyi orders (integers > 1).
    mu : float
        Per-coordinate variance of the Skellam noise, ``Sk(mu) = Poisson(mu/2) - Poisson(mu/2)``.
    l2, l1 : float
        l2 and l1 sensitivities of the integer query.

    Returns
    -------
    float or ndarray
        ``alpha l2^2 / (2 mu) + min(((2 alpha - 1) l2^2 + 6 l1) / (4 mu^2), 3 l1 / (2 mu))``.
    """
    a = np.asarray(alpha, dtype=np.float64)
    out = a * l2 ** 2 / (2 * mu) + np.minimum(((2 * a - 1) * l2 ** 2 + 6 * l1) / (4 * mu ** 2),
                                              3 * l1 / (2 * mu))
    return out if out.ndim else float(out)


def rdp_to_epsilon(rdp: ArrayLike, alphas: ArrayLike, delta: float) -> float:
    """Convert an RDP curve to (eps, delta)-DP (Canonne, Kamath and Steinke 2020, Prop. 12).

    ``eps = min_alpha rdp(alpha) + log((alpha-1)/alpha) - (log delta + log alpha)/(alpha-1)``.
    """
    a = np.asarray(alphas, dtype=np.float64)
    r = np.asarray(rdp, dtype=np.float64)
    eps = r + np.log((a - 1) / a) - (math.log(delta) + np.log(a)) / (a - 1)
    return float(max(0.0, eps.min()))


def skellam_epsilon(mu: float, l2: float, l1: float, delta: float) -> float:
    """The eps at which Skellam noise of variance ``mu`` is (eps, delta)-DP."""
    return rdp_to_epsilon(skellam_rdp(_ALPHAS, mu, l2, l1), _ALPHAS, delta)


def skellam_variance(epsilon: float, delta: float, l2: float, l1: float) -> float:
    """The smallest per-coordinate Skellam variance ``mu`` that is (eps, delta)-DP.

    Bisection on ``log mu`` (relative precision 1e-6) over :func:`skellam_epsilon`.
    Raises :class:`BudgetError` (a ValueError naming ``epsilon`` and the
    smallest budget that can be served) when no variance up to ``1e150`` meets
    ``epsilon``.
    """
    owner = "skellam_variance"
    epsilon = check_float(epsilon, "epsilon", owner, low=0, high=math.inf)
    delta = check_float(delta, "delta", owner, low=0, high=1)
    l2 = check_float(l2, "l2", owner, low=0, high=math.inf)
    l1 = check_float(l1, "l1", owner, low=0, high=math.inf)
    return _skellam_variance(epsilon, delta, l2, l1)


@functools.lru_cache(maxsize=1024)
def _skellam_variance(epsilon: float, delta: float, l2: float, l1: float) -> float:
    # a pure function of four public floats, asked again by every plan of a fit
    # (and of an eps sweep): the bisection is most of a small U2R fit's time
    owner = "skellam_variance"
    lo = hi = l2 ** 2
    while skellam_epsilon(hi, l2, l1, delta) > epsilon:
        if hi > _MU_MAX / 4:
            smallest = skellam_epsilon(_MU_MAX, l2, l1, delta)
            raise BudgetError(owner, epsilon, smallest,
                              f"the smallest budget any Skellam variance up to {_MU_MAX:g} "
                              f"serves at delta = {delta:g}, l2 = {l2:g}, l1 = {l1:g}")
        hi *= 4.0
    while lo > 1e-12 and skellam_epsilon(lo, l2, l1, delta) <= epsilon:
        lo /= 4.0
    for _ in range(80):
        mid = math.sqrt(lo * hi)
        if skellam_epsilon(mid, l2, l1, delta) <= epsilon:
            hi = mid
        else:
            lo = mid
        if hi / lo < 1 + 1e-6:
            break
    return hi


def shares_needed(n_parties: int, modulus_bits: float, sigma: float) -> int:
    """Shares per party and coordinate for ``2^-sigma`` statistical security.

    Balle, Bell, Gascon and Nissim (CCS 2020), Theorem 1 (as we read it):
    ``m = ceil((2 sigma + log2 q) / (log2 n - log2 e)) + 1``. Needs ``n >= 3``.
    """
    n_parties = check_int(n_parties, "n_parties", "shares_needed", low=3)
    return int(math.ceil((2 * sigma + modulus_bits) / (math.log2(n_parties) - _LOG2E))) + 1


def share_security(n_parties: int, modulus_bits: float, shares: int) -> float:
    """The ``sigma`` that ``shares`` messages give (inverse of :func:`shares_needed`)."""
    return ((shares - 1) * (math.log2(n_parties) - _LOG2E) - modulus_bits) / 2.0


def stochastic_round(values: ArrayLike, rng: np.random.Generator) -> np.ndarray:
    """Unbiased randomized rounding to int64: ``floor(v) + Bernoulli(v - floor(v))``."""
    v = np.asarray(values, dtype=np.float64)
    low = np.floor(v)
    return (low + (rng.random(v.shape) < (v - low))).astype(np.int64)


def _skellam(mu: float, size, rng) -> np.ndarray:
    if mu <= 0:
        return np.zeros(size, dtype=np.int64)
    return rng.poisson(mu / 2.0, size) - rng.poisson(mu / 2.0, size)


# ---------------------------------------------------------------- summation
@dataclass(frozen=True, repr=False)
class SummationResult(Result):
    """What :class:`ShuffledVectorSum` released and how.

    A result on the shared base (:class:`fastldp.results.Result`):
    ``.estimate`` is ``total``, ``.n`` the number of parties, ``.privacy``
    the ``(epsilon, delta)`` of the analyzer's view (shuffle DP, per
    party), and the repr is one short line whatever the dimension.
    ``.variances`` is ``None``: ``noise_sd`` is the noise's part, and the
    rounding adds a data-dependent variance below ``n / (4 scale^2)``.

    Attributes
    ----------
    total : ndarray
        The analyzer's estimate of the sum of the parties' real vectors.
    integer_total : ndarray
        The decoded noisy integer sum (centered representative modulo ``q``).
    noise_sd : float
        Standard deviation of the noise per coordinate of ``total`` (real units).
    mu, scale, modulus, shares : float, float, int, int
        Skellam variance (integer units), rounding scale, modulus ``q`` and
        shares per party and coordinate.
    epsilon, delta : float
        The guarantee of the view: ``delta = delta_noise + (1 + e^eps) delta_shares``
        (module docstring: a view within total variation ``delta_shares`` of an
        ``(eps, delta_noise)``-DP one).
    delta_noise, delta_shares : float
        The noise's part of ``delta``, and the total-variation distance of the
        shuffled shares to a function of the sum.
    messages : int
        Messages the parties sent (``n * D * shares``).
    simulated : bool
        True when the shares were drawn and shuffled, False on the aggregate path.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.regression import ShuffledVectorSum
    >>> v = np.full((50, 3), 0.1)
    >>> res = ShuffledVectorSum(epsilon=1.0, norm_bound=1.0).sum(v, rng=0)
    >>> res.n, res.estimate.shape, res.simulated
    (50, (3,), True)
    >>> len(repr(res)) <= 200
    True
    """

    _estimate_field = "total"

    total: np.ndarray
    integer_total: np.ndarray
    noise_sd: float
    mu: float
    scale: float
    modulus: int
    shares: int
    epsilon: float
    delta: float
    delta_noise: float
    delta_shares: float
    messages: int
    simulated: bool

    @property
    def n(self) -> int:
        """The number of parties (``messages = n * dim * shares``)."""
        return int(self.messages) // max(1, int(self.total.shape[0]) * int(self.shares))

    @property
    def privacy(self) -> PrivacyStatement:
        """The guarantee of the analyzer's view: ``(epsilon, delta)``, shuffle DP, per party.

        A summation without noise (``epsilon=None``, ``epsilon = inf`` here) is not private.
        """
        eps = float(self.epsilon)
        return PrivacyStatement("shuffle DP" if math.isfinite(eps) else "not private", "party",
                                epsilon=eps, delta=float(self.delta))


class ShuffledVectorSum:
    """Multi-message shuffled private summation of real vectors (see the module docstring).

    Parameters
    ----------
    epsilon : float or None
        Privacy budget in (0, inf); ``None`` turns the noise off (then the
        release is the exact sum of the rounded vectors, not private).
    delta : float
        In (0, 1); half goes to the noise, half to the shares.
    norm_bound : float
        Public bound on the l2 norm of every party's vector (checked).
    sensitivity : float, optional
        l2 change of one party's vector between neighbouring datasets (real
        units; default ``2 * norm_bound``, replacement of a whole vector).
    scale : float, optional
        Rounding scale (integer units per real unit); default
        ``200 sqrt(D) / sensitivity``, so rounding adds 1% to the sensitivity.
    shares : int, optional
        Shares per party and coordinate; default :func:`shares_needed` for
        ``delta/2``, the smallest count whose shares stay within total
        variation ``delta / (2 (1 + e^eps))`` of a function of the sum. A
        given count must meet the same rule (the release is then
        ``(epsilon, delta)``-DP as stated): :meth:`plan`
        refuses a smaller one with a ValueError naming ``'shares'`` and the
        smallest count that works for those parties and coordinates. Without
        noise (``epsilon=None``) any count >= 2 is taken, and its ``delta``
        is only reported.
    max_messages : int
        Above this many messages :meth:`sum` uses the aggregate path.

    Examples
    --------
    Without noise (``epsilon=None``) the release is the sum of the rounded
    vectors (here at 10 units per real unit), read through the shuffled shares:

    >>> import numpy as np
    >>> from fastldp.regression import ShuffledVectorSum
    >>> v = np.array([[0.6, 0.0], [0.0, 0.6], [0.3, 0.3], [0.2, -0.2]])
    >>> ShuffledVectorSum(epsilon=None, norm_bound=1.0, scale=10.0).sum(v, rng=0).total
    array([1.1, 0.7])

    With a budget, each party adds its share of Skellam noise:

    >>> summer = ShuffledVectorSum(epsilon=1.0, norm_bound=1.0)
    >>> res = summer.sum(np.full((100, 2), 0.5), rng=0)
    >>> res.n, res.estimate.shape, round(res.noise_sd, 1)
    (100, (2,), 8.5)
    >>> print(res.privacy)
    epsilon=1, delta=... (shuffle DP, per party)
    """

    _owner = "ShuffledVectorSum"

    @classmethod
    def channels(cls, epsilon: float = 1.0) -> list:
        """The audit's channels and negative controls of this class at claimed ``epsilon``.

        Registered by :mod:`fastldp.regression._shuffle_channels` (the analyzer's view of
        the protocol, and faulty copies);
        ``fastldp audit`` runs them.
        """
        from ..channels import registered_channels

        return registered_channels(cls, epsilon)

    def __init__(self, *, epsilon: Optional[float], delta: float = 1e-5, norm_bound: float,
                 sensitivity: Optional[float] = None, scale: Optional[float] = None,
                 shares: Optional[int] = None, max_messages: int = 50_000_000) -> None:
        o = self._owner
        # the accounting needs a finite budget and finite bounds (inf would give no noise)
        self.epsilon = (None if epsilon is None
                        else check_float(epsilon, "epsilon", o, low=0, high=math.inf))
        self.delta = check_float(delta, "delta", o, low=0, high=1)
        self.norm_bound = check_float(norm_bound, "norm_bound", o, low=0, high=math.inf)
        self.sensitivity = (2 * self.norm_bound if sensitivity is None
                            else check_float(sensitivity, "sensitivity", o, low=0, high=math.inf))
        self.scale = None if scale is None else check_float(scale, "scale", o, low=0,
                                                            high=math.inf)
        self.shares = None if shares is None else check_int(shares, "shares", o, low=2)
        self.max_messages = check_int(max_messages, "max_messages", o, low=1)

    def __repr__(self) -> str:
        return (f"ShuffledVectorSum(epsilon={self.epsilon!r}, delta={self.delta!r}, "
                f"norm_bound={self.norm_bound!r}, sensitivity={self.sensitivity!r}, "
                f"scale={self.scale!r}, shares={self.shares!r}, "
                f"max_messages={self.max_messages!r})")

    # -- public parameters of one release
    def plan(self, n_parties: int, dim: int) -> dict[str, Any]:
        """The public parameters for ``n_parties`` parties and ``dim`` coordinates."""
        o = self._owner
        n_parties = check_int(n_parties, "n_parties", o, low=3)
        dim = check_int(dim, "dim", o, low=1)
        root = math.sqrt(dim)
        scale = self.scale if self.scale is not None else 200.0 * root / self.sensitivity
        l2 = scale * self.sensitivity + 2 * root
        l1 = min(root * l2, root * scale * self.sensitivity + 2 * dim)
        if self.epsilon is None:
            mu, delta_noise, eps = 0.0, 0.0, math.inf
        else:
            delta_noise = self.delta / 2
            mu = skellam_variance(self.epsilon, delta_noise, l2, l1)
            eps = self.epsilon
        data_bound = n_parties * (scale * self.norm_bound + 1.0) + 1.0
        limit = (2.0 ** 62 - 1) / 2  # the largest bound a 62-bit modulus holds
        if self.epsilon is not None and data_bound < limit:
            # the noise must fit the modulus and NumPy's Poisson sampler: otherwise name the
            # smallest budget whose noise does
            mu_cap = min(_MU_SAMPLER_MAX, ((limit - data_bound) / 40.0) ** 2)
            if mu > mu_cap:
                raise BudgetError(o, self.epsilon, skellam_epsilon(mu_cap, l2, l1, delta_noise),
                                  f"for {n_parties} parties and {dim} coordinate(s) at "
                                  f"delta = {self.delta:g}: a smaller budget needs more Skellam "
                                  f"noise than can be drawn and held modulo 2^62")
        bound = data_bound + 40.0 * math.sqrt(mu)
        bits = max(8, int(math.ceil(math.log2(2 * bound + 1))))
        if bits > 62:
            raise ValueError(
                f"{o}: the modulus needs {bits} bits (> 62) for {n_parties} parties at scale "
                f"{scale:.4g}; lower 'scale' or 'norm_bound'.")
        # the shares' distance t costs (1 + e^eps) t of delta (module docstring)
        # log2(1 + e^eps), written to stay finite for any finite eps
        log2_cost = (0.0 if self.epsilon is None else
                     self.epsilon * _LOG2E + math.log1p(math.exp(-self.epsilon)) / math.log(2))
        sigma = math.log2(2 * dim / self.delta) + log2_cost
        needed = shares_needed(n_parties, bits, sigma)
        if self.shares is not None and self.shares < needed and self.epsilon is not None:
            # fewer shares would leave the view more than delta/2 from a function of the sum
            raise param_error(
                "shares", o, f"an int >= {needed} for {n_parties} parties and {dim} "
                f"coordinate(s) at delta = {self.delta:g} (the shares' part of delta, "
                f"delta/2, needs that many; None chooses it)", self.shares)
        shares = self.shares if self.shares is not None else needed
        got = share_security(n_parties, bits, shares)
        delta_shares = min(1.0, dim * 2.0 ** (-got))
        shares_part = min(1.0, dim * 2.0 ** min(log2_cost - got, 0.0))
        return {"scale": scale, "l2": l2, "l1": l1, "mu": mu, "modulus_bits": bits,
                "modulus": 1 << bits, "shares": shares, "epsilon": eps,
                "delta_noise": delta_noise, "delta_shares": delta_shares,
                "delta": min(1.0, delta_noise + shares_part)}

    def _check(self, vectors: ArrayLike) -> np.ndarray:
        v = np.asarray(vectors, dtype=np.float64)
        if v.ndim != 2:
            raise param_error("vectors", self._owner, "a 2-d array (parties x coordinates)",
                              f"array of shape {v.shape}")
        if not np.isfinite(v).all():
            raise param_error("vectors", self._owner, "finite", "an array with NaN or inf")
        norms = np.sqrt(np.einsum("ij,ij->i", v, v))
        if norms.size and norms.max() > self.norm_bound * (1 + 1e-9):
            raise ValueError(f"{self._owner}: a party's vector has l2 norm {norms.max():.6g} "
                             f"> norm_bound = {self.norm_bound:.6g}; clip before summing.")
        return v

    def _result(self, p: dict[str, Any], integer_total: np.ndarray, n: int, dim: int,
                simulated: bool) -> SummationResult:
        scale = p["scale"]
        return SummationResult(
            total=integer_total / scale, integer_total=integer_total,
            noise_sd=math.sqrt(p["mu"]) / scale, mu=p["mu"], scale=scale, modulus=p["modulus"],
            shares=p["shares"], epsilon=p["epsilon"], delta=p["delta"],
            delta_noise=p["delta_noise"], delta_shares=p["delta_shares"],
            messages=n * dim * p["shares"], simulated=simulated)

    def encode(self, vectors: ArrayLike, rng: RngLike,
               plan: Optional[dict[str, Any]] = None) -> tuple[np.ndarray, dict[str, Any]]:
        """The local randomizers: each party's shares, ``(n, D, shares)`` uint64 modulo ``q``."""
        gen = as_generator(rng, self._owner)
        v = self._check(vectors)
        n, dim = v.shape
        p = plan or self.plan(n, dim)
        q = np.uint64(p["modulus"])
        x = stochastic_round(v * p["scale"], gen) + _skellam(p["mu"] / n, v.shape, gen)
        x = np.mod(x, p["modulus"]).astype(np.uint64)
        m = p["shares"]
        shares = np.empty((n, dim, m), dtype=np.uint64)
        shares[..., :-1] = gen.integers(0, p["modulus"], size=(n, dim, m - 1), dtype=np.uint64)
        # the last share completes the sum modulo q (q divides 2^64: uint64 wrap-around is exact)
        shares[..., -1] = (x - shares[..., :-1].sum(axis=-1)) & (q - np.uint64(1))
        return shares, p

    @staticmethod
    def analyze(streams: np.ndarray, modulus: int) -> np.ndarray:
        """The analyzer: add each coordinate's shuffled messages modulo ``q``, centered."""
        q = np.uint64(modulus)
        total = streams.sum(axis=-1, dtype=np.uint64) & (q - np.uint64(1))
        out = total.astype(np.int64)
        out[total >= q // np.uint64(2)] -= np.int64(modulus)
        return out

    def sum(self, vectors: ArrayLike, rng: RngLike = None) -> SummationResult:
        """Privately sum the rows of ``vectors`` (one party each) through shufflers.

        Draws the shares (:meth:`encode`), routes the messages of coordinate
        ``j`` to shuffler ``j``, permutes each stream (:func:`shuffle`) and
        adds them up (:meth:`analyze`). Falls back to :meth:`sum_aggregate`
        above ``max_messages``.
        """
        gen = as_generator(rng, self._owner)
        v = self._check(vectors)
        n, dim = v.shape
        p = self.plan(n, dim)
        if n * dim * p["shares"] > self.max_messages:
            return self.sum_aggregate(v.sum(axis=0), n, gen)
        shares, p = self.encode(v, gen, p)
        streams = shuffle(shares.transpose(1, 0, 2).reshape(dim, n * p["shares"]), gen)
        return self.analyzer(n, dim).estimate(streams)

    def sum_aggregate(self, total: ArrayLike, n_parties: int,
                      rng: RngLike = None) -> SummationResult:
        """The same release from the parties' real total (see "Simulation" in the module doc).

        ``total`` must be a possible total: l2 norm at most ``n_parties *
        norm_bound`` (ValueError otherwise, as :meth:`sum` refuses a party's
        vector above ``norm_bound``).
        """
        gen = as_generator(rng, self._owner)
        t = np.asarray(total, dtype=np.float64).ravel()
        if not np.isfinite(t).all():
            raise param_error("total", self._owner, "finite", "an array with NaN or inf")
        n_parties = check_int(n_parties, "n_parties", self._owner, low=3)
        # the total of n parties' vectors has l2 norm at most n * norm_bound; a larger one
        # is no such total, and its integer sum would wrap around modulo q
        big = float(np.abs(t).max(initial=0.0))
        norm = big * math.sqrt(float(np.sum((t / big) ** 2))) if big > 0 else 0.0
        if norm > n_parties * self.norm_bound * (1 + 1e-9):
            raise param_error("total", self._owner,
                              f"the total of {n_parties} parties' vectors, of l2 norm at most "
                              f"n_parties * norm_bound = {n_parties * self.norm_bound:.6g}",
                              f"a vector of l2 norm {norm:.6g}")
        p = self.plan(n_parties, t.shape[0])
        x = stochastic_round(t * p["scale"], gen) + _skellam(p["mu"], t.shape, gen)
        x = np.mod(x, p["modulus"]).astype(np.uint64)
        return self._result(p, self.analyze(x[:, None], p["modulus"]), n_parties, t.shape[0],
                            False)


    def analyzer(self, n_parties: int, dim: int) -> "ShuffledSumAnalyzer":
        """The analyzer of one release as a streaming decode (messages in chunks)."""
        return ShuffledSumAnalyzer(self, n_parties, dim)


def _message_array(messages: ArrayLike, rows: int, owner: str) -> np.ndarray:
    """``messages`` as a 2-d integer array with ``rows`` streams, or a clear error."""
    arr = np.asarray(messages)
    if arr.ndim != 2 or arr.shape[0] != rows:
        raise param_error("messages", owner, f"a 2-d array with one row per stream ({rows})",
                          f"an array of shape {arr.shape}")
    if arr.dtype.kind not in "iub":
        raise param_error("messages", owner, "integer messages", f"dtype {arr.dtype}", TypeError)
    return arr


class ShuffledSumAnalyzer:
    """The analyzer of :class:`ShuffledVectorSum` over message chunks: partial / merge / finalize.

    The analyzer adds each coordinate's shuffled messages modulo ``q``, so
    its state is the per-coordinate sum of the messages received so far:
    held exactly (:class:`~fastldp.streaming.ExactSum` of the chunk sums
    modulo ``q``), it merges in any order and :meth:`finalize` reduces it
    modulo ``q`` once. The result equals :meth:`ShuffledVectorSum.analyze`
    on all the messages, bit for bit.

    Messages are the protocol's elements of ``Z_q``: a negative or larger
    integer is reduced modulo ``q`` (as the arithmetic of the protocol does)
    and counted as ``out_of_range``. A release needs every share: finalize
    refuses a state with a different number of messages than ``n_parties *
    shares`` per coordinate, since a missing share leaves the sum uniformly
    random.

    Parameters
    ----------
    summation : ShuffledVectorSum
    n_parties, dim : int
        The public size of the release (they fix the modulus and the shares).

    Examples
    --------
    The shuffled messages, one row per coordinate, decoded in two chunks:

    >>> import numpy as np
    >>> from fastldp.regression import ShuffledVectorSum
    >>> summer = ShuffledVectorSum(epsilon=1.0, norm_bound=1.0)
    >>> shares, plan = summer.encode(np.full((100, 2), 0.5), rng=1)
    >>> messages = shares.transpose(1, 0, 2).reshape(2, -1)  # (coordinates, messages)
    >>> analyzer = summer.analyzer(100, 2)
    >>> state = analyzer.merge(analyzer.partial(messages[:, :500]),
    ...                        analyzer.partial(messages[:, 500:]))
    >>> bool((analyzer.finalize(state).total == analyzer.estimate(messages).total).all())
    True
    """

    _owner = "ShuffledSumAnalyzer"

    def __init__(self, summation: ShuffledVectorSum, n_parties: int, dim: int) -> None:
        self.summation = summation
        self.n_parties = check_int(n_parties, "n_parties", self._owner, low=3)
        self.dim = check_int(dim, "dim", self._owner, low=1)
        self.plan = summation.plan(self.n_parties, self.dim)

    def __repr__(self) -> str:
        return (f"ShuffledSumAnalyzer({self.summation!r}, n_parties={self.n_parties}, "
                f"dim={self.dim})")

    def stream_params(self) -> dict[str, Any]:
        """Public parameters the partials are bound to."""
        s = self.summation
        return {"epsilon": s.epsilon, "delta": s.delta, "norm_bound": s.norm_bound,
                "sensitivity": s.sensitivity, "scale": self.plan["scale"],
                "shares": self.plan["shares"], "n_parties": self.n_parties, "dim": self.dim}

    def partial(self, messages: ArrayLike, epsilons: Any = None,
                identities: Any = None) -> Partial:
        """The state after a chunk of messages, shape ``(dim, m)`` (one row per shuffler)."""
        owner = f"{self._owner}.partial"
        arr = _message_array(messages, self.dim, owner)
        q = self.plan["modulus"]
        wide = arr.astype(np.int64) if arr.dtype != np.uint64 else arr
        if wide.dtype == np.uint64:
            outside = int((wide >= np.uint64(q)).sum())
            reduced = wide & np.uint64(q - 1)
        else:
            outside = int(((wide < 0) | (wide >= q)).sum())
            reduced = (wide & np.int64(q - 1)).astype(np.uint64)  # two's complement: mod q
        # the chunk's sum modulo q (uint64 arithmetic wraps modulo 2^64, a multiple of q)
        chunk = (reduced.sum(axis=1, dtype=np.uint64) & np.uint64(q - 1)).astype(np.int64)
        total = ExactSum(self.dim)
        total.add_integers(chunk)
        return Partial("ShuffledSumAnalyzer", self.stream_params(), sums={"residue": total},
                       counts={"messages": arr.shape[1], "reason:out_of_range": outside})

    def merge(self, a: Partial, b: Partial) -> Partial:
        check_partial(a, "ShuffledSumAnalyzer", self.stream_params(), f"{self._owner}.merge")
        return a.merge(b)

    def finalize(self, partial: Partial) -> SummationResult:
        """The release (:class:`SummationResult`) from every message's partial."""
        owner = f"{self._owner}.finalize"
        check_partial(partial, "ShuffledSumAnalyzer", self.stream_params(), owner)
        expected = self.n_parties * self.plan["shares"]
        if partial.counts["messages"] != expected:
            raise ValueError(f"{owner}: {partial.counts['messages']} messages per coordinate, "
                             f"expected n_parties * shares = {expected}; every share is needed")
        residue = partial.sums["residue"].residue(self.plan["modulus_bits"])
        total = ShuffledVectorSum.analyze(residue[:, None], self.plan["modulus"])
        return self.summation._result(self.plan, total, self.n_parties, self.dim, True)

    def estimate(self, messages: ArrayLike) -> SummationResult:
        """Finalize one chunk holding every message."""
        return self.finalize(self.partial(messages))


# ---------------------------------------------------------------- shuffled bits
def _half_binomial(k: np.ndarray, width: int, rows: Optional[dict]) -> np.ndarray:
    """``binom.pmf(z, K, 1/2)`` for ``z < width`` (rows ``K`` of ``k``), from ``rows`` when given.

    ``rows`` (K -> the pmf at ``z = 0..K``) keeps the rows of earlier calls:
    the bisection of :func:`_flip_probability` asks for nearly the same ``K``
    at every step, and SciPy's pmf costs most of it. The pmf is evaluated
    entry by entry, so a cached row holds the values a fresh call computes,
    bit for bit; beyond ``K`` the pmf is 0.
    """
    from scipy.stats import binom

    if rows is None:
        z = np.arange(width)
        return binom.pmf(z[None, :], k[:, None], 0.5)
    missing = np.array(sorted({K for K in k.tolist() if K not in rows}), dtype=np.int64)
    if missing.shape[0]:  # one call for the new rows (SciPy's per-call overhead is large)
        z = np.arange(int(missing[-1]) + 1)
        table = binom.pmf(z[None, :], missing[:, None], 0.5)
        for K, row in zip(missing.tolist(), table):
            rows[K] = row[:K + 1].copy()
    out = np.zeros((k.shape[0], width))
    for i, K in enumerate(k.tolist()):
        out[i, :K + 1] = rows[K][:width]
    return out


def _blanket_delta_given_k(k, gamma, eps, rows: Optional[dict] = None):
    """``sum_z (P0 - e^eps P1)_+`` for ``own + Bin(K, 1/2)`` (vectorized over K, exact)."""
    k = np.atleast_1d(np.asarray(k, dtype=np.int64))
    kmax = int(k.max())
    b0 = _half_binomial(k, kmax + 2, rows)       # Bin(K, 1/2) at z
    b1 = np.zeros_like(b0)
    b1[:, 1:] = b0[:, :-1]                       # at z - 1
    p0 = (1 - gamma) * b0 + gamma * b1
    p1 = gamma * b0 + (1 - gamma) * b1
    if eps > 700:  # e^eps p1 >= p0 wherever p1 > 0; p1 = 0 only where p0 = 0 too (gamma > 0)
        return np.clip(p0 - np.where(p1 > 0, np.inf, 0.0), 0, None).sum(axis=1)
    return np.clip(p0 - math.exp(eps) * p1, 0, None).sum(axis=1)


def shuffled_bits_delta(n_parties: int, gamma: float, epsilon: float) -> float:
    """Upper bound on delta of one shuffled binary randomized-response stream at ``epsilon``.

    Exact for the analyzer that also learns which other parties sent a
    uniform bit (the privacy blanket): ``delta = sum_K Bin(K; n-1, 2 gamma)
    delta_K``. Mass of ``K`` outside 14 standard deviations of its mean is
    counted as ``delta_K = 1``.
    """
    owner = "shuffled_bits_delta"
    n = check_int(n_parties, "n_parties", owner, low=1)
    gamma = check_float(gamma, "gamma", owner, low=0, high=0.5, high_open=False)
    epsilon = check_float(epsilon, "epsilon", owner, low=0, low_open=False)
    return _bits_delta(n, gamma, epsilon)


def _bits_delta(n: int, gamma: float, epsilon: float, rows: Optional[dict] = None) -> float:
    """:func:`shuffled_bits_delta` on checked arguments; ``rows``: see :func:`_half_binomial`."""
    from scipy.stats import binom

    others = n - 1
    w = 2 * gamma
    mean, sd = others * w, math.sqrt(others * w * (1 - w))
    lo = max(0, int(math.floor(mean - 14 * sd)))
    hi = min(others, int(math.ceil(mean + 14 * sd)))
    ks = np.arange(lo, hi + 1)
    weights = binom.pmf(ks, others, w)
    outside = max(0.0, 1.0 - float(weights.sum()))
    total = 0.0
    for start in range(0, ks.shape[0], 256):
        sl = slice(start, start + 256)
        total += float(np.dot(weights[sl], _blanket_delta_given_k(ks[sl], gamma, epsilon, rows)))
    return min(1.0, total + outside)


def _smallest_bits_epsilon(n: int, delta: float, epsilon: float,
                           rows: Optional[dict] = None) -> float:
    """The smallest eps (to 1%) at which ``n`` parties can hide one bit (``gamma -> 1/2``).

    ``rows``: the pmf rows of :func:`_half_binomial` (every step has the same ``gamma``,
    so the same ``K``).
    """
    rows = {} if rows is None else rows
    lo, hi = epsilon, max(2 * epsilon, 1e-3)
    while _bits_delta(n, 0.5 - 1e-9, hi, rows) > delta:
        lo, hi = hi, 2 * hi
        if hi > 1e4:
            return math.inf
    while hi - lo > 0.01 * hi:
        mid = 0.5 * (lo + hi)
        if _bits_delta(n, 0.5 - 1e-9, mid, rows) > delta:
            lo = mid
        else:
            hi = mid
    return hi


@functools.lru_cache(maxsize=256)
def _flip_probability(n: int, epsilon: float, delta: float) -> float:
    rows: dict = {}  # the Bin(K, 1/2) pmf rows, shared by the steps of this search
    if _bits_delta(n, 0.5 - 1e-9, epsilon, rows) > delta:
        smallest = _smallest_bits_epsilon(n, delta, epsilon, rows)
        raise BudgetError("flip_probability", epsilon, smallest,
                          f"{n} parties at delta = {delta:g} cannot hide one bit at a smaller "
                          f"budget")
    # bracket around the Gaussian approximation gamma n ~ 4 log(1.25/delta) / eps^2
    guess = min(0.25, 4 * math.log(1.25 / delta) / (epsilon ** 2 * max(n - 1, 1)))
    lo, hi = guess / 4, min(0.5 - 1e-9, guess * 2)
    if _bits_delta(n, hi, epsilon, rows) > delta:
        lo, hi = hi, 0.5 - 1e-9
    if _bits_delta(n, lo, epsilon, rows) <= delta:
        lo = 0.0
    for _ in range(60):  # to 0.2% of gamma: the conservative end is returned
        mid = 0.5 * (lo + hi)
        if _bits_delta(n, mid, epsilon, rows) <= delta:
            hi = mid
        else:
            lo = mid
        if hi - lo < 2e-3 * hi or hi < 1e-12:
            break
    return hi


def flip_probability(n_parties: int, epsilon: float, delta: float) -> float:
    """The smallest flip probability ``gamma`` with :func:`shuffled_bits_delta` <= ``delta``.

    Raises ValueError when even ``gamma = 1/2`` (pure noise minus the own bit) cannot meet it.
    """
    owner = "flip_probability"
    n = check_int(n_parties, "n_parties", owner, low=2)
    epsilon = check_float(epsilon, "epsilon", owner, low=0)
    delta = check_float(delta, "delta", owner, low=0, high=1)
    return _flip_probability(n, epsilon, delta)


class ShuffledBits:
    """Binary randomized response over ``d`` independent shuffled streams, with debiasing.

    Each party holds one index in ``[0, d)``; in stream ``j`` it holds the
    bit ``[index == j]``. Each bit flips with probability ``gamma``
    (:func:`flip_probability` at ``(eps/2, delta/2)`` per stream, since one
    changed index changes two streams). The analyzer sees each stream's
    shuffled bits and returns the debiased counts ``(c_j - gamma n) / (1 - 2 gamma)``.

    Parameters
    ----------
    epsilon : float
        Budget of the whole view (all streams), in (0, inf).
    delta : float
    d : int
        Number of streams (the index domain).

    :meth:`gamma` raises :class:`BudgetError` (a ValueError naming
    ``epsilon`` and the smallest budget that can be served) when too few
    parties cannot hide one bit at this budget.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.regression import ShuffledBits
    >>> bits = ShuffledBits(epsilon=4.0, d=4)
    >>> indices = np.repeat(np.arange(4), [400, 100, 100, 0])  # 600 parties
    >>> counts, gamma = bits.counts(indices, rng=0)
    >>> counts.round(-1), round(gamma, 3)
    (array([400., 100., 100.,   0.]), 0.023)
    """

    _owner = "ShuffledBits"

    @classmethod
    def channels(cls, epsilon: float = 1.0) -> list:
        """The audit's channels and negative controls of this class at claimed ``epsilon``.

        Registered by :mod:`fastldp.regression._shuffle_channels` (the analyzer's view of
        the protocol, and faulty copies);
        ``fastldp audit`` runs them.
        """
        from ..channels import registered_channels

        return registered_channels(cls, epsilon)

    def __init__(self, *, epsilon: float, delta: float = 1e-5, d: int) -> None:
        # the blanket accounting needs a finite budget (eps = inf would send the bits unflipped)
        self.epsilon = check_float(epsilon, "epsilon", self._owner, low=0, high=math.inf)
        self.delta = check_float(delta, "delta", self._owner, low=0, high=1)
        self.d = check_int(d, "d", self._owner, low=1)

    def __repr__(self) -> str:
        return f"ShuffledBits(epsilon={self.epsilon!r}, delta={self.delta!r}, d={self.d!r})"

    def gamma(self, n_parties: int) -> float:
        """The flip probability for ``n_parties`` parties."""
        try:
            return flip_probability(n_parties, self.epsilon / 2, self.delta / 2)
        except BudgetError as exc:  # in this object's terms: each stream has half the budget
            raise BudgetError(self._owner, self.epsilon, 2 * exc.smallest,
                              f"{n_parties} parties at delta = {self.delta:g} cannot hide one "
                              f"bit in each stream at a smaller budget") from None

    def counts(self, indices: ArrayLike, rng: RngLike = None,
               gamma: Optional[float] = None) -> tuple[np.ndarray, float]:
        """Return ``(debiased counts of length d, gamma)`` for the parties' ``indices``."""
        gen = as_generator(rng, self._owner)
        idx = np.asarray(indices)
        if idx.ndim != 1 or idx.dtype.kind not in "iu":
            raise param_error("indices", self._owner, "a 1-d integer array", indices, TypeError)
        if idx.size and (idx.min() < 0 or idx.max() >= self.d):
            raise param_error("indices", self._owner, f"indices in [0, {self.d})",
                              f"values in [{idx.min()}, {idx.max()}]")
        n = idx.shape[0]
        g = self.gamma(n) if gamma is None else gamma
        bits = np.zeros((self.d, n), dtype=np.uint8)
        bits[idx, np.arange(n)] = 1
        flips = (gen.random((self.d, n)) < g).astype(np.uint8)
        streams = shuffle(bits ^ flips, gen)
        return self.analyzer(n, gamma=g).estimate(streams), g

    def analyzer(self, n_parties: int, gamma: Optional[float] = None) -> "ShuffledBitsAnalyzer":
        """The analyzer of ``n_parties`` parties' streams as a streaming decode."""
        return ShuffledBitsAnalyzer(self, n_parties, gamma)


class ShuffledBitsAnalyzer:
    """The analyzer of :class:`ShuffledBits` over chunks of the streams: partial / merge / finalize.

    The state is the number of ones received per stream and the number of
    bits per stream (integers, exact); :meth:`finalize` debiases,
    ``(c_j - gamma n) / (1 - 2 gamma)``, and refuses a state that does not
    hold exactly ``n_parties`` bits per stream. A bit other than 0 or 1 is
    read as its truth value (nonzero is one) and counted as ``out_of_range``.

    Examples
    --------
    Three streams of four parties' bits, flip probability 0.1, in two chunks:

    >>> import numpy as np
    >>> from fastldp.regression import ShuffledBits
    >>> analyzer = ShuffledBits(epsilon=4.0, d=3).analyzer(4, gamma=0.1)
    >>> streams = np.array([[1, 1, 0, 1], [0, 0, 1, 0], [0, 0, 0, 0]])
    >>> state = analyzer.merge(analyzer.partial(streams[:, :2]), analyzer.partial(streams[:, 2:]))
    >>> analyzer.finalize(state).round(2)
    array([ 3.25,  0.75, -0.5 ])
    """

    _owner = "ShuffledBitsAnalyzer"

    def __init__(self, bits: ShuffledBits, n_parties: int, gamma: Optional[float] = None) -> None:
        self.bits = bits
        self.n_parties = check_int(n_parties, "n_parties", self._owner, low=1)
        self.gamma = bits.gamma(self.n_parties) if gamma is None else check_float(
            gamma, "gamma", self._owner, low=0, high=0.5)

    def __repr__(self) -> str:
        return (f"ShuffledBitsAnalyzer({self.bits!r}, n_parties={self.n_parties}, "
                f"gamma={self.gamma!r})")

    def stream_params(self) -> dict[str, Any]:
        """Public parameters the partials are bound to."""
        return {"epsilon": self.bits.epsilon, "delta": self.bits.delta, "d": self.bits.d,
                "n_parties": self.n_parties, "gamma": self.gamma}

    def partial(self, streams: ArrayLike, epsilons: Any = None,
                identities: Any = None) -> Partial:
        """The state after a chunk of every stream's bits, shape ``(d, m)``."""
        arr = _message_array(streams, self.bits.d, f"{self._owner}.partial")
        outside = int(((arr != 0) & (arr != 1)).sum())
        ones = ExactSum(self.bits.d)
        ones.add_integers((arr != 0).sum(axis=1, dtype=np.int64))
        return Partial("ShuffledBitsAnalyzer", self.stream_params(), sums={"ones": ones},
                       counts={"bits": arr.shape[1], "reason:out_of_range": outside})

    def merge(self, a: Partial, b: Partial) -> Partial:
        check_partial(a, "ShuffledBitsAnalyzer", self.stream_params(), f"{self._owner}.merge")
        return a.merge(b)

    def finalize(self, partial: Partial) -> np.ndarray:
        """The debiased counts, length ``d``."""
        owner = f"{self._owner}.finalize"
        check_partial(partial, "ShuffledBitsAnalyzer", self.stream_params(), owner)
        if partial.counts["bits"] != self.n_parties:
            raise ValueError(f"{owner}: {partial.counts['bits']} bits per stream, expected "
                             f"n_parties = {self.n_parties}")
        c = partial.sums["ones"].value()
        g, n = self.gamma, self.n_parties
        return (c - g * n) / (1 - 2 * g)

    def estimate(self, streams: ArrayLike) -> np.ndarray:
        """Finalize one chunk holding every stream's bits: the debiased counts."""
        return self.finalize(self.partial(streams))
