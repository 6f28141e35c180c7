"""Unbiased scalar randomizers on [-1, 1] (paper 001, section 2.2 and Table 2).

Each randomizer ``Q`` maps ``u in [-1, 1]`` to a random ``Y`` with
``E[Y | u] = u`` under ``epsilon``-LDP, and exposes the two numbers paper 001
uses to compare them:

* ``c_eps = max |y|`` over the output space (Eq. (2)): how far a corrupted
  user can push a report without leaving the output space;
* ``V_eps = max_u Var[Y | u]`` (Eq. (3)): the worst-case noise of an honest
  report.

===============  ====================================  ================================
randomizer       c_eps                                 V_eps
===============  ====================================  ================================
Laplace          inf                                   8 / eps^2
Piecewise        (e^{eps/2} + 1) / (e^{eps/2} - 1)     4 e^{eps/2} / (3 (e^{eps/2} - 1)^2)
Duchi            (e^eps + 1) / (e^eps - 1)             ((e^eps + 1) / (e^eps - 1))^2
StochasticRound  (e^eps + 1) / (e^eps - 1)             ((e^eps + 1) / (e^eps - 1))^2
Hybrid           Piecewise's (eps > 0.6094), else      see :class:`Hybrid` (below both
                 Duchi's                               above 0.6094, Duchi's below)
===============  ====================================  ================================

All of them are vectorized over ``u`` and draw only from the ``rng`` they are
given.

Where paper 001 is wrong
------------------------
Eq. (9) gives Duchi et al.'s two-point mechanism as ``Y = +-C`` with
probabilities ``(1 +- u) / 2``, ``C = (e^eps + 1) / (e^eps - 1)``. Read
literally that is neither unbiased (``E[Y] = C u``) nor private
(``P(Y = C | u = 1) = 1`` and ``0`` at ``u = -1``). The mechanism of Duchi et
al. (2013), whose ``c_eps`` and ``V_eps`` Table 2 reports, draws ``+C`` with
probability ``(1 + u / C) / 2 = 1/2 + u (e^eps - 1) / (2 (e^eps + 1))``; that is
what :class:`Duchi` implements. Its likelihood ratio is exactly ``e^eps``.

References
----------
.. [1] Paper 001, "Robust Estimation of Sparse Numerical Vectors under Local
   Differential Privacy", section 2.2, Eqs. (2)-(9), Table 2, Appendix A.
.. [2] C. Dwork, F. McSherry, K. Nissim, A. Smith, "Calibrating noise to
   sensitivity in private data analysis", TCC 2006.
.. [3] N. Wang et al., "Collecting and analyzing multidimensional data with
   local differential privacy", ICDE 2019 (the Piecewise mechanism).
.. [4] J. Duchi, M. Jordan, M. Wainwright, "Local privacy and statistical
   minimax rates", FOCS 2013.
"""

from __future__ import annotations

from decimal import ROUND_FLOOR, Decimal, localcontext
from fractions import Fraction
from math import exp, expm1, frexp, inf, ldexp, nextafter
from typing import Optional, Union

import numpy as np
from numpy.typing import ArrayLike

from .._random import as_generator, resolve_identities
from .._validation import check_choice, check_float, check_int, param_error
from ..protocol import AuditedMembers
from ..results import PrivacyStatement

__all__ = [
    "Randomizer",
    "Laplace",
    "Piecewise",
    "DiscretePiecewise",
    "Duchi",
    "Hybrid",
    "StochasticRounding",
    "RANDOMIZERS",
    "make_randomizer",
    "min_variance_randomizer",
]


#: what every ``rng`` parameter accepts
RngLike = Union[None, int, np.random.SeedSequence, np.random.Generator]


def _check_unit_interval(u, owner: str) -> np.ndarray:
    arr = np.asarray(u, dtype=np.float64)
    bad = ~((arr >= -1.0) & (arr <= 1.0))  # NaN fails
    if bad.any():
        first = arr[bad].ravel()[0]
        raise param_error("u", owner, "an array of floats in [-1.0, 1.0]", float(first))
    return arr


class Randomizer(AuditedMembers):
    """Base class: an unbiased ``epsilon``-LDP randomizer on ``[-1, 1]``.

    Subclasses define :meth:`_draw`, :meth:`variance`, :meth:`density`,
    :meth:`is_legal` and the properties :attr:`c_eps` and :attr:`V_eps`.

    Parameters
    ----------
    epsilon : float in [1e-150, inf)
        (``[1e-150, 700]`` for Piecewise and Duchi, whose constants use
        ``e^eps``). Keyword-only.

    Notes
    -----
    A randomizer has one budget: :meth:`privatize` takes the contract's
    ``epsilons`` and ``identities`` keywords, accepts ``epsilons`` only when
    it is ``None`` or equal to :attr:`epsilon` (build one randomizer per
    budget otherwise) and validates ``identities`` without using them
    (there is no public hash). The server's estimate of a mean of
    privatized values is their plain mean (each report is unbiased).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.oracles import Duchi
    >>> q = Duchi(epsilon=1.0)
    >>> y = q.privatize(np.zeros(4), rng=0)
    >>> bool(np.all(np.abs(y) == q.c_eps))
    True
    """

    name = "randomizer"
    #: True when the output space is a finite set (then :meth:`density` is a pmf)
    discrete = False
    #: the largest budget whose constants (``e^eps``) are finite in binary64
    max_epsilon = inf
    #: the smallest budget: below it ``1 / eps`` (Laplace's scale) and the other
    #: constants leave the normal range of binary64, and outputs would be infinite
    min_epsilon = 1e-150


    def __init__(self, *, epsilon: float) -> None:
        self.epsilon = check_float(epsilon, "epsilon", type(self).__name__, low=self.min_epsilon,
                                   high=self.max_epsilon, low_open=False,
                                   high_open=self.max_epsilon == inf)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon!r})"

    def __eq__(self, other: object) -> bool:
        return type(self) is type(other) and self.epsilon == other.epsilon

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.epsilon))

    # ----------------------------------------------------------------- Table 2
    @property
    def c_eps(self) -> float:
        """``max |y|`` over the output space (Eq. (2))."""
        raise NotImplementedError

    @property
    def V_eps(self) -> float:  # noqa: N802 - the paper's symbol
        """``max_{u in [-1, 1]} Var[Y | u]`` (Eq. (3))."""
        raise NotImplementedError

    @property
    def output_bounds(self) -> tuple:
        """``(low, high)``: the closed hull of the output space."""
        return (-self.c_eps, self.c_eps)

    # -------------------------------------------------------------- behaviour
    def privatize(self, u: ArrayLike, *, epsilons: Optional[ArrayLike] = None,
                  identities: Optional[ArrayLike] = None, rng: RngLike = None) -> np.ndarray:
        """Return ``Y ~ Q(u)`` element-wise (float64, same shape as ``u``).

        Parameters
        ----------
        u : array_like of float in [-1, 1]
            The values, any shape.
        epsilons : float or array_like, optional
            ``None`` or the randomizer's own :attr:`epsilon` (a scalar, or
            one per value); a randomizer has a single budget, so any other
            value is a ``ValueError``.
        identities : array_like of int, optional
            Distinct identities, one per value of a 1-d ``u``; validated and
            unused (no public hash keys the output).
        rng : None, int, SeedSequence or Generator
            Private randomness.

        Returns
        -------
        numpy.ndarray of float64, the shape of ``u``
        """
        owner = f"{type(self).__name__}.privatize"
        x = _check_unit_interval(u, owner)
        self._check_budgets(epsilons, x.shape, owner)
        if identities is not None:
            resolve_identities(identities, x.shape[0] if x.ndim else 1, owner)
        return self._draw(x, as_generator(rng, owner))

    def _check_budgets(self, epsilons, shape: tuple, owner: str) -> None:
        if epsilons is None:
            return
        try:
            eps = np.asarray(epsilons, dtype=np.float64)
        except (TypeError, ValueError):
            raise param_error("epsilons", owner, f"None or the randomizer's epsilon "
                              f"({self.epsilon!r})", epsilons, TypeError) from None
        if not (eps.ndim == 0 or eps.shape == shape) or not np.all(eps == self.epsilon):
            raise param_error(
                "epsilons", owner,
                f"None or the randomizer's epsilon ({self.epsilon!r}), as a scalar or one per "
                f"value (a randomizer has one budget: build {type(self).__name__}(epsilon=...) "
                "per budget)", epsilons)

    def _draw(self, u: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        """``Y ~ Q(u)`` for validated ``u`` (subclasses)."""
        raise NotImplementedError

    def variance(self, u: ArrayLike) -> np.ndarray:
        """Exact ``Var[Y | u]`` element-wise."""
        raise NotImplementedError

    def density(self, y: ArrayLike, u: ArrayLike) -> np.ndarray:
        """Conditional density (or pmf when :attr:`discrete`) of ``y`` given ``u``."""
        raise NotImplementedError

    def is_legal(self, y: ArrayLike) -> np.ndarray:
        """Boolean mask: which values lie in the output space."""
        raise NotImplementedError

    def extreme(self) -> float:
        """The largest legal output ``c_eps``; raises when it is unbounded."""
        c = self.c_eps
        if not np.isfinite(c):
            raise ValueError(
                f"{type(self).__name__} has an unbounded output space (c_eps = inf), "
                "so no legal output is extreme; pass an explicit magnitude instead."
            )
        return c


class Laplace(Randomizer):
    """Laplace mechanism: ``Y = u + W``, ``W ~ Lap(2 / epsilon)`` (paper 001, section 2.2).

    Parameters
    ----------
    epsilon : float in [1e-150, inf)
        (``[2**(k - 45), inf)`` with ``secure=True`` and ``grid=2**-k``: the
        noise, in grid units, must stay far inside ``2^53``.)
    secure : bool, default False
        ``False``: numpy's double-precision Laplace sampler (bit-identical to
        earlier releases). ``True``: the discretized Laplace mechanism on a
        public grid, exactly ``epsilon``-DP in the floating-point world too
        (below).
    grid : float, optional
        ``secure=True`` only: the grid spacing ``g = 2**-k``, ``k`` an
        integer in ``[0, 40]``; default ``2**-10``.

    Notes
    -----
    The sensitivity of ``u in [-1, 1]`` is 2, so the scale is ``2 / epsilon``
    and the density ratio between any two inputs is at most ``e^epsilon``,
    attained for ``u = +-1`` and ``y`` outside ``(-1, 1)``.
    ``c_eps = inf`` and ``V_eps = 2 (2 / epsilon)^2 = 8 / epsilon^2`` (Eq. (57)).

    **secure=False** draws IEEE doubles: its guarantee is the ideal
    real-valued mechanism's. The set of doubles a release can take depends
    on the input, and an observer of the exact bits can rule inputs out
    (Mironov, CCS 2012; :mod:`fastldp.audit.mironov` runs the attack).

    **secure=True** releases ``Y = g (I + Z)``:

    1. the input is rounded to the grid at random, ``I = floor(u / g)`` plus
       a coin of probability ``frac(u / g)``, so ``E[g I] = u`` and
       ``g I in [-1, 1]`` (``u / g`` is exact: ``g`` is a power of two);
    2. ``Z`` is the discrete Laplace law ``P(Z = z) ∝ exp(-|z| / t)`` on the
       integers, drawn by the exact sampler of :mod:`fastldp.noise` (integer
       and rational arithmetic only), with the rational scale
       ``t = ceil(2^16 * 2 / (g eps)) / 2^16 >= 2 / (g eps)`` grid units;
    3. ``g (I + Z)`` is a double exactly (an integer below ``2^53`` times a
       power of two); ``I + Z`` is clipped to ``+-2^52`` (post-processing;
       ``P(|Z| > 2^52 - 1/g) < e^-64`` at the smallest budget allowed).

    Two grid inputs differ by at most ``2 / g`` units, so the ratio of the
    pmfs of ``I + Z`` is at most ``exp(2 / (g t)) = e^eps'`` with the
    **effective epsilon** ``eps' = 2 / (g t) <= eps`` (a rational; the
    rounding of ``t`` costs at most a relative ``2^-16 g eps / 2``), and a
    release is a mixture of grid inputs' releases, so the ratio holds for
    every ``u`` whatever the rounding coin's floating-point probability
    (that coin only biases ``E[Y | u]`` by at most ``g 2^-53``).
    :attr:`effective_epsilon` gives ``eps'`` (rounded up), and
    :attr:`privacy` states it. Every release is a multiple of ``g``
    whatever the input: no bit of it depends on the input except through
    the exact law, so the guarantee holds for the doubles themselves.
    What must hold of the platform: IEEE binary64 for the products and
    ``floor`` (exact here), and integers from the ``rng`` (numpy's
    ``Generator.integers`` draws them without floating point).

    Why discretization rather than snapping: snapping (Mironov's defence:
    clamp to ``[-B, B]``, add the double Laplace, round to a power of two
    ``Lambda >= scale``) gives ``eps (1 + 12 B eta) + ...``-DP only under
    a correctly rounded ``ln``, which numpy does not promise, and its
    epsilon grows with ``B``; the discretized mechanism needs no property of
    ``ln`` at all and gives ``eps' <= eps`` exactly.

    Cost in variance: ``Var[Y | u] = g^2 (2 p / (1 - p)^2 + f (1 - f))``
    with ``p = e^(-1/t)`` and ``f = frac(u / g)``; the first term is
    ``8 / eps'^2 - g^2 / 6 + O(g^4 eps^2)``, so
    ``V_eps = g^2 (2 p / (1 - p)^2 + 1/4)`` is within ``g^2 / 12`` of the
    continuous ``8 / eps'^2`` (``1e-7`` at the default grid).

    Examples
    --------
    >>> import numpy as np
    >>> q = Laplace(epsilon=2.0)
    >>> q.V_eps
    2.0
    >>> y = q.privatize(np.full(200_000, 0.5), rng=0)
    >>> bool(abs(y.mean() - 0.5) < 5 * np.sqrt(q.V_eps / y.size))
    True
    >>> s = Laplace(epsilon=2.0, secure=True)
    >>> s
    Laplace(epsilon=2.0, secure=True, grid=0.0009765625)
    >>> s.effective_epsilon <= 2.0, round(s.V_eps, 6)
    (True, 2.0)
    >>> y = s.privatize(np.full(5, 0.3), rng=0)
    >>> bool(np.all(y * 1024 == np.round(y * 1024)))
    True
    """

    name = "laplace"
    #: default grid of ``secure=True``
    DEFAULT_GRID = 2.0**-10
    #: the scale in grid units is a multiple of ``2**-SCALE_BITS``
    SCALE_BITS = 16
    #: ``I + Z`` is clipped to ``[-CLIP, CLIP]`` (so ``g (I + Z)`` is an exact double)
    CLIP = 2**52
    #: largest scale in grid units: ``P(|Z| > CLIP - 1/g) < exp(-2^52 / 2^46 + 1) < e^-63``
    MAX_UNITS_LOG2 = 46

    def __init__(self, *, epsilon: float, secure: bool = False,
                 grid: Optional[float] = None) -> None:
        owner = type(self).__name__
        if not isinstance(secure, (bool, np.bool_)):
            raise param_error("secure", owner, "a bool", secure, TypeError)
        self.secure = bool(secure)
        if not self.secure:
            if grid is not None:
                raise param_error("grid", owner, "None when secure=False (the grid is the "
                                  "discretized mechanism's)", grid)
            self.grid: Optional[float] = None
            super().__init__(epsilon=epsilon)
            return
        g = self.DEFAULT_GRID if grid is None else grid
        g = check_float(g, "grid", owner, low=2.0**-40, high=1.0, low_open=False, high_open=False)
        if frexp(g)[0] != 0.5:
            raise param_error("grid", owner, "a power of two 2**-k, k an integer in [0, 40]", g)
        self.grid = g
        # a distinct name, so that a server rebuilt from stream_params() (RPC, succinct)
        # holds the secure randomizer and not the plain one; only the default grid is a
        # RANDOMIZERS entry, another grid is recorded but does not rebuild by name
        self.name = ("laplace-secure" if g == self.DEFAULT_GRID
                     else f"laplace-secure(grid={g!r})")
        self.min_epsilon = ldexp(2.0 / g, -self.MAX_UNITS_LOG2)  # type: ignore[misc]
        super().__init__(epsilon=epsilon)
        target = Fraction(2) / (Fraction(g) * Fraction(self.epsilon))
        den = 1 << self.SCALE_BITS
        #: the discrete Laplace scale in grid units (a rational >= 2 / (g eps))
        self.units = Fraction(-((-target.numerator * den) // target.denominator), den)

    def __repr__(self) -> str:
        if not self.secure:
            return f"{type(self).__name__}(epsilon={self.epsilon!r})"
        return f"{type(self).__name__}(epsilon={self.epsilon!r}, secure=True, grid={self.grid!r})"

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and self.epsilon == other.epsilon  # type: ignore
                and self.secure == other.secure and self.grid == other.grid)  # type: ignore

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.epsilon, self.secure, self.grid))

    @property
    def scale(self) -> float:
        """``2 / epsilon`` (``g t``, the noise scale in output units, with ``secure=True``)."""
        if self.secure:
            return float(self.grid * self.units)  # type: ignore[operator]
        return 2.0 / self.epsilon

    @property
    def effective_epsilon(self) -> float:
        """The ``epsilon`` the release gives: ``2 / (g t)`` rounded up (``epsilon`` if not secure)."""
        if not self.secure:
            return self.epsilon
        exact = Fraction(2) / (Fraction(self.grid) * self.units)  # type: ignore[arg-type]
        e = float(exact)
        return e if Fraction(e) >= exact else nextafter(e, inf)

    @property
    def privacy(self) -> PrivacyStatement:
        """Local DP per value at :attr:`effective_epsilon`."""
        return PrivacyStatement.local(epsilon=self.effective_epsilon, unit="value")

    def _noise_variance(self) -> float:
        """``g^2 2 p / (1 - p)^2``, ``p = e^(-1/t)``: the discrete Laplace variance in output units."""
        inv_t = 1.0 / float(self.units)
        p = exp(-inv_t)
        return self.grid**2 * 2.0 * p / expm1(-inv_t) ** 2  # type: ignore[operator]

    @property
    def c_eps(self) -> float:
        return inf

    @property
    def V_eps(self) -> float:  # noqa: N802
        if self.secure:
            return self._noise_variance() + 0.25 * self.grid**2  # type: ignore[operator]
        return 8.0 / self.epsilon**2

    def _draw(self, u: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        if not self.secure:
            return u + gen.laplace(0.0, self.scale, size=u.shape)
        from ..noise import discrete_laplace

        x = u * (1.0 / self.grid)  # type: ignore[operator]  # exact: a power of two
        low = np.floor(x)
        units = low.astype(np.int64) + (gen.random(u.shape) < x - low)
        z = np.asarray(discrete_laplace(self.units, int(u.size), rng=gen),
                       dtype=np.int64).reshape(u.shape)
        k = np.clip(units + z, -self.CLIP, self.CLIP)
        return k.astype(np.float64) * self.grid

    def variance(self, u: ArrayLike) -> np.ndarray:
        u = _check_unit_interval(u, "Laplace.variance")
        if not self.secure:
            return np.full(u.shape, self.V_eps)
        x = u * (1.0 / self.grid)  # type: ignore[operator]
        f = x - np.floor(x)
        return self._noise_variance() + self.grid**2 * f * (1.0 - f)  # type: ignore[operator]

    def density(self, y: ArrayLike, u: ArrayLike) -> np.ndarray:
        """The density of ``y`` given ``u``; with ``secure=True`` the pmf on the grid."""
        y = np.asarray(y, dtype=np.float64)
        u = _check_unit_interval(u, "Laplace.density")
        if not self.secure:
            return np.exp(-np.abs(y - u) / self.scale) / (2.0 * self.scale)
        g = self.grid
        x = u * (1.0 / g)  # type: ignore[operator]
        low = np.floor(x)
        f = x - low
        k = y * (1.0 / g)  # type: ignore[operator]
        inv_t = 1.0 / float(self.units)
        norm = -expm1(-inv_t) / (1.0 + exp(-inv_t))  # (1 - p) / (1 + p)

        def pmf(d):
            return norm * np.exp(-np.abs(d) * inv_t)

        on_grid = self.is_legal(y)
        return np.where(on_grid, (1.0 - f) * pmf(k - low) + f * pmf(k - low - 1.0), 0.0)

    def is_legal(self, y: ArrayLike) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        if not self.secure:
            return np.isfinite(y)
        with np.errstate(invalid="ignore"):
            k = y * (1.0 / self.grid)  # type: ignore[operator]
            return np.isfinite(y) & (k == np.round(k)) & (np.abs(k) <= self.CLIP)


class Piecewise(Randomizer):
    """Piecewise mechanism of Wang et al. (2019), paper 001 Eq. (6).

    Output in ``[-b, b]``, ``b = (e^{eps/2} + 1) / (e^{eps/2} - 1)``. Given
    ``u``, the density is ``p`` on ``[l(u), r(u)]`` and ``p e^{-eps}``
    elsewhere in ``[-b, b]``, with ``p = (e^eps - e^{eps/2}) / (2 (e^{eps/2} + 1))``,
    ``l(u) = (b + 1) u / 2 - (b - 1) / 2`` and ``r(u) = l(u) + b - 1``.
    The high band carries probability ``e^{eps/2} / (e^{eps/2} + 1)``.

    ``Var[Y | u] = u^2 / (e^{eps/2} - 1) + (e^{eps/2} + 3) / (3 (e^{eps/2} - 1)^2)``,
    largest at ``|u| = 1``: ``V_eps = 4 e^{eps/2} / (3 (e^{eps/2} - 1)^2)`` (Eq. (59)).

    Parameters
    ----------
    epsilon : float in (0, 700]

    Examples
    --------
    >>> import numpy as np
    >>> q = Piecewise(epsilon=1.0)
    >>> y = q.privatize(np.linspace(-1, 1, 5), rng=0)
    >>> bool(np.all(np.abs(y) <= q.b))
    True
    """

    name = "piecewise"
    max_epsilon = 700.0  # e^eps overflows binary64 above 709.78

    @property
    def b(self) -> float:
        """Half-width of the output interval, equal to :attr:`c_eps` (Eq. (58))."""
        h = expm1(self.epsilon / 2.0)
        return (h + 2.0) / h

    @property
    def p(self) -> float:
        """The density on the high band ``[l(u), r(u)]``."""
        e2 = exp(self.epsilon / 2.0)
        return (exp(self.epsilon) - e2) / (2.0 * (e2 + 1.0))

    @property
    def c_eps(self) -> float:
        return self.b

    @property
    def V_eps(self) -> float:  # noqa: N802
        e2 = exp(self.epsilon / 2.0)
        return 4.0 * e2 / (3.0 * expm1(self.epsilon / 2.0) ** 2)

    def band(self, u: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(l(u), r(u))``, the high-density band of Eq. (6)."""
        b = self.b
        left = 0.5 * (b + 1.0) * np.asarray(u, dtype=np.float64) - 0.5 * (b - 1.0)
        return left, left + (b - 1.0)

    def _draw(self, u: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        b = self.b
        e2 = exp(self.epsilon / 2.0)
        left, right = self.band(u)
        inside = gen.random(u.shape) < e2 / (e2 + 1.0)
        t = gen.random(u.shape)
        y_in = left + t * (b - 1.0)
        # the low region [-b, l) u (r, b] has total length b + 1; map t onto it
        s = t * (b + 1.0)
        low_len = left + b  # length of [-b, l)
        y_out = np.where(s < low_len, -b + s, right + (s - low_len))
        return np.where(inside, y_in, y_out)

    def variance(self, u: ArrayLike) -> np.ndarray:
        u = _check_unit_interval(u, "Piecewise.variance")
        h = expm1(self.epsilon / 2.0)
        return u * u / h + (h + 4.0) / (3.0 * h * h)

    def density(self, y: ArrayLike, u: ArrayLike) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        u = _check_unit_interval(u, "Piecewise.density")
        left, right = self.band(u)
        p = self.p
        inside = (y >= left) & (y <= right)
        legal = np.abs(y) <= self.b
        return np.where(legal, np.where(inside, p, p * exp(-self.epsilon)), 0.0)

    def is_legal(self, y: ArrayLike) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        return np.abs(y) <= self.b


def _exp_floor(eps: float, den: int) -> int:
    """``floor(e^eps den)`` for the double ``eps``, by correctly rounded decimal arithmetic.

    60 significant digits: the floor is wrong only if ``e^eps den`` lay within
    ``10^-40`` relative of an integer, which a transcendental number at a
    rational point does not.
    """
    with localcontext() as ctx:
        ctx.prec = 60
        return int((Decimal(eps).exp() * den).to_integral_value(rounding=ROUND_FLOOR))


class DiscretePiecewise(Randomizer):
    """Wang et al.'s (2019) Piecewise mechanism on a public grid: a finite, exactly audited channel.

    The input ``u in [-1, 1]`` is rounded at random to the grid
    ``u_i = -1 + 2 i / m`` (``i = 0 .. m``; ``E[u_I] = u``). The output is
    one of ``N = m + W`` cells ``j = 0 .. N - 1`` released as the double
    ``y_j = a (j - (N - 1) / 2)``: the *high band* of grid input ``i`` is
    the ``W`` cells ``[i, i + W)``, and

        P(j | i) = A / T on the band,   B / T on the m other cells,
        T = W A + m B,

    with the integers ``A / B <= e^eps`` (``B = 2^k``, the largest with
    ``T < 2^62``, and ``A = floor(e^eps B)``). This is the discrete analogue of Eq. (6) of
    paper 001: the band slides with the input over ``m`` cells and the low
    region has ``m`` cells, as the continuous band slides by ``b + 1``;
    ``W = max(1, round(m e^(-eps/2)))`` keeps the continuous proportion
    ``(b - 1) / (b + 1) = e^(-eps/2)``. With ``P_h - P_l = (A - B) / T``,

        E[j - (N - 1) / 2 | i] = (P_h - P_l) W (i - m / 2),

    so ``a = 2 T / (m W (A - B))`` makes ``E[Y | i] = u_i`` and ``Y`` is
    unbiased for ``u``. ``Var[Y | i] = a^2 (P_l N (N^2 - 1) / 12 + (P_h - P_l)
    (W (i - m/2)^2 + W (W^2 - 1) / 12)) - u_i^2``; :meth:`variance` mixes the
    two grid inputs' second moments.

    Privacy: every output has probability ``A / T`` or ``B / T`` under every
    grid input, so the largest likelihood ratio is exactly ``A / B``; a
    release of ``u`` is a mixture of two grid inputs' releases, so the ratio
    holds for every ``u``. :attr:`effective_epsilon` ``= ln(A / B) <= eps``
    (within ``2^-k`` relative of ``e^eps``); :attr:`privacy` states it.

    Sampling is exact: one uniform integer below ``T`` per value
    (``Generator.integers``, no floating point) picks the cell; only the
    input's rounding coin compares a double (its probability, ``frac``, is
    within ``2^-53`` of exact: a bias of at most ``2^-52 / m`` in ``E[Y]``,
    and no effect on privacy, which holds for any mixture). Every output is
    one of ``N`` fixed doubles whatever the input: no floating-point side
    channel.

    Parameters
    ----------
    epsilon : float in [2**-20, 40]
        (``A - B >= 2^12``: the budget is resolved, and ``T < 2^62``.)
    m : int in [2, 2**20], default 64
        Grid intervals of the input (the output has ``m + W`` cells).

    Notes
    -----
    ``discrete`` stays ``False`` (it means a two-point output to the vector
    family); the output space is finite and :meth:`density` is its pmf.
    :meth:`grid_law` gives the exact channel of the grid inputs as
    fractions, for audits.

    Examples
    --------
    >>> import numpy as np
    >>> q = DiscretePiecewise(epsilon=1.0, m=8)
    >>> q.n_cells, q.band
    (13, 5)
    >>> law = q.grid_law()
    >>> max(max(col) / min(col) for col in zip(*law)) == q.ratio
    True
    >>> y = q.privatize(np.linspace(-1, 1, 5), rng=0)
    >>> bool(q.is_legal(y).all())
    True
    """

    name = "piecewise-discrete"
    max_epsilon = 40.0
    min_epsilon = 2.0**-20
    DEFAULT_M = 64

    def __init__(self, *, epsilon: float, m: int = DEFAULT_M) -> None:
        owner = type(self).__name__
        super().__init__(epsilon=epsilon)
        self.m = check_int(m, "m", owner, low=2, high=2**20)
        eps = self.epsilon
        self.band = max(1, int(round(self.m * exp(-eps / 2.0))))
        # B = 2^k, the largest with B (W e^eps + m) < 2^62: A / B within 2^-k of e^eps
        size = self.band * exp(eps) + self.m
        k = 61 - int(size).bit_length()
        self.B = 1 << k
        self.A = _exp_floor(eps, self.B)
        if self.A - self.B < 2**12:
            raise param_error("epsilon", owner, f"a float in [{self.min_epsilon!r}, "
                              f"{self.max_epsilon!r}] resolved by A / B (A - B >= 2^12)", eps)
        self.T = self.band * self.A + self.m * self.B
        self.n_cells = self.m + self.band
        #: the output values y_j, j = 0 .. N - 1
        self.outputs = self._a * (np.arange(self.n_cells, dtype=np.float64)
                                  - (self.n_cells - 1) / 2.0)
        self.outputs.setflags(write=False)

    def __repr__(self) -> str:
        return f"{type(self).__name__}(epsilon={self.epsilon!r}, m={self.m})"

    def __eq__(self, other: object) -> bool:
        return (type(self) is type(other) and self.epsilon == other.epsilon  # type: ignore
                and self.m == other.m)  # type: ignore[attr-defined]

    def __hash__(self) -> int:
        return hash((type(self).__name__, self.epsilon, self.m))

    @property
    def _a(self) -> float:
        return float(Fraction(2 * self.T, self.m * self.band * (self.A - self.B)))

    @property
    def ratio(self) -> Fraction:
        """``A / B``: the channel's largest likelihood ratio, exactly."""
        return Fraction(self.A, self.B)

    @property
    def effective_epsilon(self) -> float:
        """``ln(A / B) <= epsilon``, rounded up."""
        with localcontext() as ctx:
            ctx.prec = 40
            value = (Decimal(self.A) / Decimal(self.B)).ln()
        e = float(value)
        return e if Decimal(e) >= value else nextafter(e, inf)

    @property
    def privacy(self) -> PrivacyStatement:
        """Local DP per value at :attr:`effective_epsilon`."""
        return PrivacyStatement.local(epsilon=self.effective_epsilon, unit="value")

    def grid_law(self) -> list:
        """``P(j | u_i)`` as fractions: a list of ``m + 1`` rows of ``N`` entries."""
        hi, lo = Fraction(self.A, self.T), Fraction(self.B, self.T)
        W = self.band
        return [[hi if i <= j < i + W else lo for j in range(self.n_cells)]
                for i in range(self.m + 1)]

    @property
    def c_eps(self) -> float:
        return float(self.outputs[-1])

    def _second_moment(self, i: np.ndarray) -> np.ndarray:
        """``E[Y^2 | u_i]`` (module docstring of the class)."""
        N, W, m = self.n_cells, self.band, self.m
        p_lo = self.B / self.T
        gap = (self.A - self.B) / self.T
        d = i - m / 2.0
        return self._a**2 * (p_lo * N * (N * N - 1) / 12.0
                             + gap * (W * d * d + W * (W * W - 1) / 12.0))

    def _split(self, u: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(floor(x), frac(x))`` of the grid position ``x = (u + 1) m / 2``."""
        x = u * (self.m / 2.0) + self.m / 2.0
        low = np.minimum(np.floor(x), self.m - 1.0)
        return low, x - low

    @property
    def V_eps(self) -> float:  # noqa: N802
        grid = np.linspace(-1.0, 1.0, 4 * self.m + 1)
        return float(self.variance(grid).max())

    def _draw(self, u: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        low, f = self._split(u)
        i = low.astype(np.int64) + (gen.random(u.shape) < f)
        k = gen.integers(0, self.T, size=u.shape, dtype=np.int64)
        high = self.band * self.A
        in_band = k < high
        r = np.where(in_band, 0, (k - high) // self.B)
        j = np.where(in_band, i + k // self.A, np.where(r < i, r, r + self.band))
        return self.outputs[j]

    def variance(self, u: ArrayLike) -> np.ndarray:
        u = _check_unit_interval(u, "DiscretePiecewise.variance")
        low, f = self._split(u)
        m2 = (1.0 - f) * self._second_moment(low) + f * self._second_moment(low + 1.0)
        return m2 - u * u

    def _cells(self, y: np.ndarray) -> np.ndarray:
        """The cell of each ``y`` (``-1`` where ``y`` is no output)."""
        j = np.searchsorted(self.outputs, y)
        j = np.clip(j, 0, self.n_cells - 1)
        return np.where(self.outputs[j] == y, j, -1)

    def density(self, y: ArrayLike, u: ArrayLike) -> np.ndarray:
        """The pmf of ``y`` given ``u`` (0 off the output space)."""
        y = np.asarray(y, dtype=np.float64)
        u = _check_unit_interval(u, "DiscretePiecewise.density")
        y, u = np.broadcast_arrays(y, u)
        low, f = self._split(u)
        j = self._cells(y)
        hi, lo = self.A / self.T, self.B / self.T

        def pmf(i):
            return np.where((j >= i) & (j < i + self.band), hi, lo)

        return np.where(j >= 0, (1.0 - f) * pmf(low) + f * pmf(low + 1.0), 0.0)

    def is_legal(self, y: ArrayLike) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        with np.errstate(invalid="ignore"):
            return (self._cells(np.where(np.isfinite(y), y, 0.0)) >= 0) & np.isfinite(y)


class Duchi(Randomizer):
    """Duchi et al. (2013) two-point mechanism (paper 001, Eq. (9), corrected).

    ``Y = +C`` with probability ``(1 + u / C) / 2`` and ``-C`` otherwise,
    ``C = (e^eps + 1) / (e^eps - 1)``, so ``E[Y | u] = u`` and
    ``Var[Y | u] = C^2 - u^2`` (largest at ``u = 0``: ``V_eps = C^2``, Eq. (61)).
    The likelihood ratio between ``u = 1`` and ``u = -1`` is exactly ``e^eps``.
    See the module docstring for the misprint in Eq. (9).

    Parameters
    ----------
    epsilon : float in (0, 700]

    Examples
    --------
    >>> q = Duchi(epsilon=1.0)
    >>> round(q.C, 4)
    2.164
    >>> float(q.prob_plus(1.0)) == 0.5 * (1 + 1 / q.C)
    True
    """

    name = "duchi"
    discrete = True
    max_epsilon = 700.0  # e^eps overflows binary64 above 709.78

    @property
    def C(self) -> float:  # noqa: N802 - the paper's symbol
        return (exp(self.epsilon) + 1.0) / expm1(self.epsilon)

    @property
    def c_eps(self) -> float:
        return self.C

    @property
    def V_eps(self) -> float:  # noqa: N802
        return self.C**2

    def prob_plus(self, u: ArrayLike) -> np.ndarray:
        """``P(Y = +C | u)``."""
        u = _check_unit_interval(u, "Duchi.prob_plus")
        return 0.5 * (1.0 + u / self.C)

    def _draw(self, u: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        plus = gen.random(u.shape) < 0.5 * (1.0 + u / self.C)
        return np.where(plus, self.C, -self.C)

    def variance(self, u: ArrayLike) -> np.ndarray:
        u = _check_unit_interval(u, "Duchi.variance")
        return self.C**2 - u * u

    def density(self, y: ArrayLike, u: ArrayLike) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        pp = self.prob_plus(u)
        return np.where(y == self.C, pp, np.where(y == -self.C, 1.0 - pp, 0.0))

    def is_legal(self, y: ArrayLike) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        return (y == self.C) | (y == -self.C)


def _secure_laplace(*, epsilon: float) -> Laplace:
    """``Laplace(epsilon=epsilon, secure=True)`` on the default grid (the name ``"laplace-secure"``)."""
    return Laplace(epsilon=epsilon, secure=True)


RANDOMIZERS = {"laplace": Laplace, "laplace-secure": _secure_laplace, "piecewise": Piecewise,
               "duchi": Duchi}


def min_variance_randomizer(epsilon: float, *, bounded: bool = True) -> Randomizer:
    """Return the randomizer with the smallest ``V_eps`` at ``epsilon``.

    Paper 001, section 8.1, picks per ``epsilon`` the randomizer with the
    smallest error: Duchi for small ``epsilon``, Piecewise for large. With
    ``bounded=True`` (the default) Laplace is excluded because its output
    space is unbounded (``c_eps = inf``, Remark 6), which leaves the robust
    guarantees of Theorem 2 without content.
    """
    eps = check_float(epsilon, "epsilon", "min_variance_randomizer", low=0.0, high=inf)
    names = ("piecewise", "duchi") if bounded else ("laplace", "piecewise", "duchi")
    cands = [RANDOMIZERS[nm](epsilon=eps) for nm in names]
    return min(cands, key=lambda r: r.V_eps)


def make_randomizer(spec: Union[str, Randomizer], epsilon: float, owner: str) -> Randomizer:
    """Resolve ``spec`` (a name, ``"auto"`` or a :class:`Randomizer`) at ``epsilon``.

    A :class:`Randomizer` instance must have the same ``epsilon``.
    """
    if isinstance(spec, Randomizer):
        if spec.epsilon != epsilon:
            raise param_error(
                "randomizer", owner, f"a randomizer with epsilon={epsilon!r}",
                spec,
            )
        return spec
    name = check_choice(spec, "randomizer", owner, ("auto",) + tuple(RANDOMIZERS))
    if name == "auto":
        return min_variance_randomizer(epsilon)
    return RANDOMIZERS[name](epsilon=epsilon)


class StochasticRounding(Randomizer):
    """Stochastic rounding to ``+-1``, then binary randomized response, debiased.

    The value ``u in [-1, 1]`` is rounded to ``s = +1`` with probability
    ``(1 + u) / 2`` and to ``-1`` otherwise (``E[s] = u``); ``s`` is kept
    with probability ``p = e^eps / (e^eps + 1)`` and flipped otherwise; the
    report is ``Y = C s'`` with ``C = 1 / (2 p - 1) = (e^eps + 1) / (e^eps - 1)``,
    so ``E[Y | u] = C (2 p - 1) u = u``.

    Variance: ``Y^2 = C^2`` always, so ``Var[Y | u] = C^2 - u^2`` and the
    worst case, at ``u = 0``, is ``V_eps = C^2 = ((e^eps + 1) / (e^eps - 1))^2``.

    The composed channel is ``P(Y = +C | u) = p (1 + u) / 2 + (1 - p) (1 - u) / 2
    = 1/2 + u / (2 C)``: exactly the law of :class:`Duchi` (its two points,
    its ``c_eps`` and ``V_eps``). In one dimension stochastic rounding is
    Duchi et al.'s mechanism drawn with two coins instead of one; the class
    exists because the two-stage form is how the literature (and the
    multidimensional and federated settings) write it, and the audit checks
    the composition against its own law. The likelihood ratio between
    ``u = 1`` and ``u = -1`` is ``p / (1 - p) = e^eps`` exactly.

    Parameters
    ----------
    epsilon : float in [1e-150, 700]
        Keyword-only.

    Examples
    --------
    >>> import numpy as np
    >>> q = StochasticRounding(epsilon=1.0)
    >>> round(q.C, 4), round(q.V_eps, 4)
    (2.164, 4.6827)
    >>> bool(np.all(np.abs(q.privatize(np.zeros(8), rng=0)) == q.C))
    True
    """

    name = "stochastic-rounding"
    discrete = True
    max_epsilon = 700.0  # e^eps overflows binary64 above 709.78

    @property
    def keep(self) -> float:
        """``p = e^eps / (e^eps + 1)``: the probability that the rounded sign is kept."""
        return 1.0 / (1.0 + exp(-self.epsilon))

    @property
    def C(self) -> float:  # noqa: N802 - the debiasing factor 1 / (2 p - 1)
        return (exp(self.epsilon) + 1.0) / expm1(self.epsilon)

    @property
    def c_eps(self) -> float:
        return self.C

    @property
    def V_eps(self) -> float:  # noqa: N802
        return self.C**2

    def prob_plus(self, u: ArrayLike) -> np.ndarray:
        """``P(Y = +C | u) = p (1 + u) / 2 + (1 - p) (1 - u) / 2`` (rounding, then the flip)."""
        u = _check_unit_interval(u, "StochasticRounding.prob_plus")
        p = self.keep
        return p * (1.0 + u) / 2.0 + (1.0 - p) * (1.0 - u) / 2.0

    def _draw(self, u: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        up = gen.random(u.shape) < (1.0 + u) / 2.0
        kept = gen.random(u.shape) < self.keep
        return np.where(up == kept, self.C, -self.C)

    def variance(self, u: ArrayLike) -> np.ndarray:
        u = _check_unit_interval(u, "StochasticRounding.variance")
        return self.C**2 - u * u

    def density(self, y: ArrayLike, u: ArrayLike) -> np.ndarray:
        """The pmf of ``y`` given ``u`` (``0`` off ``{-C, +C}``)."""
        y = np.asarray(y, dtype=np.float64)
        pp = self.prob_plus(u)
        return np.where(y == self.C, pp, np.where(y == -self.C, 1.0 - pp, 0.0))

    def is_legal(self, y: ArrayLike) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        return (y == self.C) | (y == -self.C)


def _hybrid_threshold() -> float:
    """The root of ``(e^{eps/2} + 3) / (3 (e^{eps/2} - 1)^2) = ((e^eps + 1) / (e^eps - 1))^2``."""
    def gap(eps: float) -> float:
        h = expm1(eps / 2.0)
        return (h + 4.0) / (3.0 * h * h) - ((exp(eps) + 1.0) / expm1(eps)) ** 2

    lo, hi = 0.5, 0.7  # gap(0.5) > 0 > gap(0.7)
    for _ in range(200):  # bisection to the last bit
        mid = 0.5 * (lo + hi)
        if mid in (lo, hi):
            break
        lo, hi = (mid, hi) if gap(mid) > 0.0 else (lo, mid)
    return hi


class Hybrid(Randomizer):
    """Hybrid mechanism of Wang et al. (ICDE 2019): Piecewise with probability ``alpha``, else Duchi

    ``alpha = 1 - e^{-eps/2}`` when ``eps > eps*`` and ``alpha = 0`` (Duchi
    alone) otherwise. Both parts are unbiased and ``eps``-LDP, and ``alpha``
    does not depend on the input, so the mixture is both.

    Derivation. With ``h = e^{eps/2} - 1`` and ``C = (e^eps + 1) / (e^eps - 1)``,
    Piecewise has ``Var_P(u) = u^2 / h + (h + 4) / (3 h^2)`` and Duchi
    ``Var_D(u) = C^2 - u^2``. Both means are ``u``, so the mixture's
    variance is the mixture of the variances,

        Var_H(u) = alpha (h + 4) / (3 h^2) + (1 - alpha) C^2 + u^2 (alpha / h - (1 - alpha)),

    linear in ``u^2``: its maximum over ``[-1, 1]`` is at ``u = 0`` or
    ``|u| = 1``. At ``u = 0`` it falls with ``alpha`` when Piecewise's
    variance at 0 is below Duchi's, ``(h + 4) / (3 h^2) < C^2``; at ``|u| = 1``
    it rises with ``alpha`` (``Var_P(1) > Var_D(1)``). The worst case is then
    smallest where the two meet, where the ``u^2`` coefficient vanishes:
    ``alpha = h / (h + 1) = 1 - e^{-eps/2}``, and the variance is the same
    for every input,

        V_eps = (e^{eps/2} + 3) / (3 e^{eps/2} (e^{eps/2} - 1))
                + (e^eps + 1)^2 / (e^{eps/2} (e^eps - 1)^2),

    the paper's Eq. for the worst-case variance of HM. ``eps*`` is where
    Piecewise's variance at 0 equals Duchi's:
    ``(e^{eps/2} + 3) / (3 (e^{eps/2} - 1)^2) = C^2``, ``eps* = 0.60935249...``
    (:attr:`EPSILON_STAR`, by bisection; in closed form
    ``ln((2 (6353 - 405 sqrt(241))^{1/3} + 2 (6353 + 405 sqrt(241))^{1/3} - 5) / 27)``,
    the root of a cubic in ``e^{eps/2}``; the paper rounds it to 0.61). Below
    it Duchi alone is best (``alpha = 0``, ``V_eps = C^2``).

    Output: the atoms ``+-C`` (Duchi's part, mass ``1 - alpha``) and, when
    ``alpha > 0``, a density on ``[-b, b]`` (Piecewise's, ``b > C``).
    :meth:`density` is taken against Lebesgue measure plus the counting
    measure on ``{-C, +C}``: at ``+-C`` it returns the atom's mass, elsewhere
    ``alpha`` times Piecewise's density (ratios between inputs at the same
    ``y`` are likelihood ratios).

    Parameters
    ----------
    epsilon : float in [1e-150, 700]
        Keyword-only.

    References
    ----------
    .. [1] N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin,
       G. Yu, "Collecting and analyzing multidimensional data with local
       differential privacy", ICDE 2019, section III-C.

    Examples
    --------
    >>> q = Hybrid(epsilon=1.0)
    >>> round(q.alpha, 4), round(q.V_eps, 4)
    (0.3935, 4.289)
    >>> Hybrid(epsilon=0.5).alpha
    0.0
    """

    name = "hybrid"
    max_epsilon = 700.0  # e^eps overflows binary64 above 709.78
    #: the budget above which Piecewise enters the mixture (the paper's 0.61)
    EPSILON_STAR = _hybrid_threshold()

    def __init__(self, *, epsilon: float) -> None:
        super().__init__(epsilon=epsilon)
        self.piecewise = Piecewise(epsilon=self.epsilon)
        self.duchi = Duchi(epsilon=self.epsilon)
        #: a two-point output (Duchi alone) below the threshold
        self.discrete = self.alpha == 0.0

    @property
    def alpha(self) -> float:
        """The weight of Piecewise: ``1 - e^{-eps/2}`` above :attr:`EPSILON_STAR`, else 0."""
        return -expm1(-self.epsilon / 2.0) if self.epsilon > self.EPSILON_STAR else 0.0

    @property
    def C(self) -> float:  # noqa: N802 - Duchi's atom
        return self.duchi.C

    @property
    def c_eps(self) -> float:
        return self.piecewise.b if self.alpha > 0.0 else self.duchi.C

    @property
    def V_eps(self) -> float:  # noqa: N802
        # linear in u^2: the larger of u = 0 and |u| = 1 (equal when alpha = 1 - e^{-eps/2})
        return float(self.variance(np.array([0.0, 1.0])).max())

    def prob_atoms(self, u: ArrayLike) -> tuple[np.ndarray, np.ndarray]:
        """``(P(Y = -C | u), P(Y = +C | u))``: Duchi's part, weighted by ``1 - alpha``."""
        plus = self.duchi.prob_plus(u)
        w = 1.0 - self.alpha
        return w * (1.0 - plus), w * plus

    def _draw(self, u: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        alpha = self.alpha
        y = self.duchi._draw(u, gen)
        if alpha == 0.0:
            return y
        use_piecewise = gen.random(u.shape) < alpha
        return np.where(use_piecewise, self.piecewise._draw(u, gen), y)

    def variance(self, u: ArrayLike) -> np.ndarray:
        u = _check_unit_interval(u, "Hybrid.variance")
        alpha = self.alpha
        return alpha * self.piecewise.variance(u) + (1.0 - alpha) * self.duchi.variance(u)

    def density(self, y: ArrayLike, u: ArrayLike) -> np.ndarray:
        """Atom masses at ``+-C``, ``alpha`` times Piecewise's density elsewhere (see the class)."""
        y = np.asarray(y, dtype=np.float64)
        u = _check_unit_interval(u, "Hybrid.density")
        minus, plus = self.prob_atoms(u)
        cont = self.alpha * self.piecewise.density(y, u) if self.alpha > 0.0 else 0.0 * y
        C = self.C
        return np.where(y == C, plus, np.where(y == -C, minus, cont))

    def is_legal(self, y: ArrayLike) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        if self.alpha == 0.0:
            return self.duchi.is_legal(y)
        return self.piecewise.is_legal(y)


RANDOMIZERS["hybrid"] = Hybrid
RANDOMIZERS["stochastic-rounding"] = StochasticRounding
