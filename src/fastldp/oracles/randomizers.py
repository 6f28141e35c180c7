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
===============  ====================================  ================================

All three are vectorized over ``u`` and draw only from the ``rng`` they are
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

from math import exp, expm1, inf
from typing import Optional, Union

import numpy as np
from numpy.typing import ArrayLike

from .._random import as_generator, resolve_identities
from .._validation import check_choice, check_float, param_error

__all__ = [
    "Randomizer",
    "Laplace",
    "Piecewise",
    "Duchi",
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


class Randomizer:
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
    epsilon : float in (0, inf)

    Notes
    -----
    The sensitivity of ``u in [-1, 1]`` is 2, so the scale is ``2 / epsilon``
    and the density ratio between any two inputs is at most ``e^epsilon``,
    attained for ``u = +-1`` and ``y`` outside ``(-1, 1)``.
    ``c_eps = inf`` and ``V_eps = 2 (2 / epsilon)^2 = 8 / epsilon^2`` (Eq. (57)).

    Examples
    --------
    >>> import numpy as np
    >>> q = Laplace(epsilon=2.0)
    >>> q.V_eps
    2.0
    >>> y = q.privatize(np.full(200_000, 0.5), rng=0)
    >>> bool(abs(y.mean() - 0.5) < 5 * np.sqrt(q.V_eps / y.size))
    True
    """

    name = "laplace"

    @property
    def scale(self) -> float:
        return 2.0 / self.epsilon

    @property
    def c_eps(self) -> float:
        return inf

    @property
    def V_eps(self) -> float:  # noqa: N802
        return 8.0 / self.epsilon**2

    def _draw(self, u: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        return u + gen.laplace(0.0, self.scale, size=u.shape)

    def variance(self, u: ArrayLike) -> np.ndarray:
        u = _check_unit_interval(u, "Laplace.variance")
        return np.full(u.shape, self.V_eps)

    def density(self, y: ArrayLike, u: ArrayLike) -> np.ndarray:
        y = np.asarray(y, dtype=np.float64)
        u = _check_unit_interval(u, "Laplace.density")
        return np.exp(-np.abs(y - u) / self.scale) / (2.0 * self.scale)

    def is_legal(self, y: ArrayLike) -> np.ndarray:
        return np.isfinite(np.asarray(y, dtype=np.float64))


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


RANDOMIZERS = {"laplace": Laplace, "piecewise": Piecewise, "duchi": Duchi}


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
