"""The textbook floating-point Laplace sampler and the set of doubles it can release (Mironov 2012).

A model of a faulty randomizer, shared by the audit's demonstration of
Mironov's attack (:mod:`fastldp.audit.mironov`, which explains the sampler's
Eq. (1) and the attack) and by the negative control
``control:laplace-textbook-lsb`` of :class:`~fastldp.oracles.Laplace`
(:mod:`fastldp.oracles._channels`): :func:`textbook_laplace` draws
``y = fl(x + s fl(b fl(-ln U)))``, :func:`textbook_support` decides exactly
whether it can release ``y`` from ``x``, and :func:`attack_statistic` is the
attack's statistic of a release. Not a mechanism of the package.

References
----------
.. [1] I. Mironov, "On significance of the least significant bits for
   differential privacy", CCS 2012.
"""

from __future__ import annotations

from math import inf
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike

from ._random import as_generator
from ._validation import check_float, check_int

__all__ = ["textbook_laplace", "textbook_support", "attack_statistic", "TextbookLaplace",
           "lsb_draw", "WINDOW", "K_MAX"]

#: uniform integers ``k`` of the textbook sampler lie in ``[1, K_MAX)``; ``U = k 2^-53``
K_MAX = 2**53
#: neighbours of the binary search's ``k`` tried exactly on each side
WINDOW = 4
_TWO_M53 = 2.0**-53


def _noise(k: np.ndarray, scale: float) -> np.ndarray:
    """``fl(b fl(-ln(k 2^-53)))``, the textbook noise magnitude (non-increasing in ``k``)."""
    return scale * -np.log(k.astype(np.float64) * _TWO_M53)


def textbook_laplace(x: ArrayLike, scale: float, size: Optional[int] = None, *,
                     rng: Any = None) -> np.ndarray:
    """The textbook double-precision Laplace sampler, Eq. (1) of :mod:`fastldp.audit.mironov`.

    ``y = x + s b (-ln U)`` with ``U = k 2^-53``, ``k`` uniform in
    ``[1, 2^53)`` (53 random bits, zero excluded) and ``s = +-1`` a fair
    sign, every operation rounded to double: the sampler Mironov (2012)
    attacks. Not a mechanism of the package: the package's own
    :class:`~fastldp.oracles.Laplace` draws numpy's ``Generator.laplace``
    (the same weakness) or, with ``secure=True``, integer noise on a grid.

    Parameters
    ----------
    x : float or array_like of float
        The input(s); broadcast against ``size``.
    scale : float > 0
        ``b``.
    size : int, optional
        Number of draws (default: the shape of ``x``).
    rng : None, int, SeedSequence or Generator

    Returns
    -------
    numpy.ndarray of float64

    Examples
    --------
    >>> from fastldp.audit.mironov import textbook_laplace, textbook_support
    >>> y = textbook_laplace(0.0, 1.0, 5, rng=0)
    >>> bool(textbook_support(y, 0.0, 1.0).all())
    True
    """
    owner = "textbook_laplace"
    b = check_float(scale, "scale", owner, low=0.0, high=inf)
    xs = np.asarray(x, dtype=np.float64)
    shape = xs.shape if size is None else (check_int(size, "size", owner, low=0),)
    gen = as_generator(rng, owner)
    k = gen.integers(1, K_MAX, size=shape, dtype=np.int64)
    negative = gen.integers(0, 2, size=shape, dtype=np.int8).astype(bool)
    w = _noise(k, b)
    return np.broadcast_to(xs, shape) + np.where(negative, -w, w)


def _in_positive_image(y: np.ndarray, x: np.ndarray, scale: float) -> np.ndarray:
    """Whether ``y = fl(x + w(k))`` for some ``k`` (``w`` non-increasing in ``k``)."""
    n = y.shape[0]
    lo = np.ones(n, dtype=np.int64)
    hi = np.full(n, K_MAX - 1, dtype=np.int64)
    f_lo = x + _noise(lo, scale)
    # the largest output is at k = 1; the smallest at K_MAX - 1
    reachable = (y <= f_lo) & (y >= x + _noise(hi, scale))
    # invariant (where reachable): f(lo) >= y > ... find the largest k with f(k) >= y
    for _ in range(54):
        active = hi - lo > 1
        if not active.any():
            break
        mid = lo + (hi - lo) // 2
        ge = x + _noise(mid, scale) >= y
        lo = np.where(active & ge, mid, lo)
        hi = np.where(active & ~ge, mid, hi)
    found = np.zeros(n, dtype=bool)
    for d in range(-WINDOW, WINDOW + 2):
        k = np.clip(lo + d, 1, K_MAX - 1)
        found |= x + _noise(k, scale) == y
    return reachable & found


def textbook_support(y: ArrayLike, x: ArrayLike, scale: float) -> np.ndarray:
    """Whether the textbook sampler at input ``x`` can release exactly ``y`` (:mod:`fastldp.audit.mironov`).

    Parameters
    ----------
    y : array_like of float
        Outputs.
    x : float or array_like of float
        Candidate input(s), broadcast against ``y``.
    scale : float > 0
        ``b`` of :func:`textbook_laplace`.

    Returns
    -------
    numpy.ndarray of bool, the shape of ``y``
        Some ``(k, s)`` gives exactly ``y``. Exact for the sampler as
        written (numpy's ``log``): no output of the sampler is ever missed.
    """
    b = check_float(scale, "scale", "textbook_support", low=0.0, high=inf)
    ys = np.asarray(y, dtype=np.float64)
    shape = ys.shape
    yf = ys.ravel()
    xf = np.broadcast_to(np.asarray(x, dtype=np.float64), shape).ravel()
    finite = np.isfinite(yf)
    with np.errstate(invalid="ignore", over="ignore"):
        plus = _in_positive_image(np.where(finite, yf, 0.0), xf, b)
        minus = _in_positive_image(np.where(finite, -yf, 0.0), -xf, b)
    return (finite & (plus | minus)).reshape(shape)


def attack_statistic(y: ArrayLike, scale: float, x0: float = 0.0, x1: float = 1.0) -> np.ndarray:
    """``[y in image(x1)] - [y in image(x0)]`` under the textbook sampler (float64 in {-1, 0, 1}).

    A function of the release: on an ``eps``-DP release no event of it
    has a likelihood ratio above ``e^eps``.
    """
    in1 = textbook_support(y, x1, scale)
    in0 = textbook_support(y, x0, scale)
    return in1.astype(np.float64) - in0.astype(np.float64)


class TextbookLaplace:
    """The textbook sampler as a mechanism on ``[-1, 1]``: ``u + Lap(2 / eps)`` in doubles.

    What :class:`~fastldp.oracles.Laplace` claims (``eps``-LDP on
    ``u in [-1, 1]``, scale ``2 / eps``), drawn by Eq. (1) of
    :mod:`fastldp.audit.mironov`: the audit's negative control ``control:laplace-textbook-lsb``.

    Examples
    --------
    >>> from fastldp._textbook_laplace import TextbookLaplace
    >>> TextbookLaplace(epsilon=1.0).scale
    2.0
    """

    def __init__(self, *, epsilon: float) -> None:
        self.epsilon = check_float(epsilon, "epsilon", "TextbookLaplace", low=0.0, high=inf)

    @property
    def scale(self) -> float:
        return 2.0 / self.epsilon

    def __repr__(self) -> str:
        return f"TextbookLaplace(epsilon={self.epsilon!r})"

    def privatize(self, u: ArrayLike, *, rng: Any = None) -> np.ndarray:
        """``u + s b (-ln U)`` in doubles (:func:`textbook_laplace`)."""
        return textbook_laplace(u, self.scale, rng=rng)


def lsb_draw(mech, eps, side, size, gen) -> np.ndarray:
    """Audit draw: :func:`attack_statistic` of releases of ``u = +1`` (side 0) or ``-1``.

    The statistic assumes the textbook sampler at the mechanism's scale
    ``2 / eps`` (the public scale of :class:`~fastldp.oracles.Laplace`),
    whatever ``mech`` really is.
    """
    u = 1.0 if side == 0 else -1.0
    y = mech.privatize(np.full(size, u), rng=gen)
    return attack_statistic(y, 2.0 / eps, x0=-1.0, x1=1.0)
