"""Mironov's attack on textbook floating-point Laplace noise, as a demonstration and a control.

The textbook Laplace sampler in double precision draws a uniform double
``U`` in ``(0, 1)`` and a fair sign ``s`` and releases

    y = fl(x + s fl(b fl(-ln U)))                                  (1)

(:func:`textbook_laplace`: ``U = k 2^-53`` for a uniform integer
``k in [1, 2^53)``, ``ln`` numpy's). Real-valued Laplace noise is
``eps``-DP with ``b = Delta / eps``; the doubles of (1) are not. The set of
doubles that (1) can produce from ``x`` (its *image*) is sparse among the
doubles wherever the map ``k -> b ln(1 / U)`` is coarser than the spacing of
doubles near ``y``, and the images of two inputs ``x != x'`` are different
sparse sets: an output in the image of ``x`` but not of ``x'`` reveals ``x``
with certainty, an infinite likelihood ratio (Mironov, CCS 2012, section 3).

The attack (:func:`textbook_support`) decides, for each output ``y`` and
candidate input ``x``, whether some ``(k, s)`` gives exactly ``y``: for each
sign the map ``k -> y(k)`` of (1) is monotone (each of ``ln``, the product
and the sum is monotone and rounding preserves order), so a binary search
over ``k in [1, 2^53)`` finds the ``k`` whose output is closest to ``y``,
and the ``k`` within :data:`WINDOW` of it are tried exactly (a guard against
a library ``ln`` that is not monotone in its last bit). ``fl(x - w) =
-fl(-x + w)`` (rounding to nearest is symmetric), so the negative sign is
the positive one at ``(-x, -y)``. The check has no false negatives: every
output of the sampler at ``x`` is found in the image of ``x`` (tested).

Statistic and audit
-------------------
:func:`attack_statistic` is ``[y in image(x_1)] - [y in image(x_0)]`` in
``{-1, 0, 1}``. It is a function of the release, so for an ``eps``-DP
mechanism every event of it has likelihood ratio at most ``e^eps`` (post-
processing): run on an honest release it gains nothing, whatever it
assumes about the sampler. On the textbook sampler the event
``statistic = 1`` has probability ``0`` under ``x_0`` and a large
probability under ``x_1``, and a distinguishing test
(:func:`fastldp.audit.empirical.threshold_test`) bounds ``eps`` from below
far above the claim. :func:`mironov_attack` measures both: the fraction of
distinguishable outputs and the empirical ``eps`` the counts imply.

The negative control ``control:laplace-textbook-lsb``
(:mod:`fastldp.audit.controls`) is the textbook sampler at ``b = 2 / eps``
on ``u = +1`` vs ``-1`` (the hardest pair of
:class:`~fastldp.oracles.Laplace`), claimed ``eps``-LDP, audited through
this statistic; ``fastldp audit --controls`` must catch it, and
``fastldp audit control:laplace-textbook-lsb`` (audited as if honest) exits 1.

The defences are in :class:`~fastldp.oracles.Laplace` (``secure=True``:
the input rounded to a public grid, integer discrete Laplace noise from
:mod:`fastldp.noise`, every output a multiple of the grid whatever the
input) and the finite randomizers; the user guide's "Floating point" page
states the position of every randomizer.

References
----------
.. [1] I. Mironov, "On significance of the least significant bits for
   differential privacy", CCS 2012.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import inf
from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike

from .._random import as_generator
from .._validation import check_float, check_int
from .empirical import EmpiricalAudit, epsilon_lower_bound, ALPHA
from .report import one_line

__all__ = ["textbook_laplace", "textbook_support", "attack_statistic", "mironov_attack",
           "MironovResult", "TextbookLaplace", "WINDOW", "K_MAX"]

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
    """The textbook double-precision Laplace sampler, Eq. (1) of the module docstring.

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
    """Whether the textbook sampler at input ``x`` can release exactly ``y`` (module docstring).

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


@dataclass(frozen=True, repr=False)
class MironovResult:
    """What :func:`mironov_attack` measured.

    Attributes
    ----------
    distinguishable : float
        Fraction of the releases under ``x1`` that the image of ``x0``
        cannot contain (each reveals ``x1`` with certainty), averaged with
        the same fraction for the releases under ``x0``.
    false_alarms : int
        Releases under ``x`` outside the image of ``x`` itself (0 for the
        textbook sampler: the attack never errs on it).
    audit : EmpiricalAudit
        The distinguishing test of the event "outside the image of
        ``x0``", ``x1`` vs ``x0``: its lower bound on ``eps`` (``inf`` only
        if no ``x0`` release could bound the event; Clopper-Pearson keeps it
        finite) against the claim.
    n : int
        Releases per input.
    """

    distinguishable: float
    false_alarms: int
    audit: EmpiricalAudit
    n: int

    @property
    def epsilon_lower_bound(self) -> float:
        """The empirical ``eps`` the counts imply (``1 - alpha`` lower bound)."""
        return self.audit.lower_bound

    def __repr__(self) -> str:
        return one_line(f"MironovResult(distinguishable={self.distinguishable:.4f}, "
                        f"epsilon_lower_bound={self.audit.lower_bound:.4g}, "
                        f"claimed={self.audit.claimed:g}, false_alarms={self.false_alarms}, "
                        f"n={self.n})")


def mironov_attack(releases0: ArrayLike, releases1: ArrayLike, scale: float, *,
                   x0: float = 0.0, x1: float = 1.0, claimed: float = inf,
                   alpha: float = ALPHA) -> MironovResult:
    """Run the attack on releases of ``x0`` and of ``x1`` (a textbook model of scale ``b``).

    Parameters
    ----------
    releases0, releases1 : array_like of float
        Releases of the mechanism under ``x0`` and under ``x1`` (the same
        number of each).
    scale : float
        ``b`` the attacker assumes (the mechanism's public Laplace scale).
    x0, x1 : float
        The two inputs.
    claimed : float
        The mechanism's claimed ``eps`` (the audit's verdict compares with it).
    alpha : float
        Significance of the lower bound.

    Returns
    -------
    MironovResult

    Examples
    --------
    >>> from fastldp.audit.mironov import mironov_attack, textbook_laplace
    >>> y0 = textbook_laplace(0.0, 1.0, 2000, rng=1)
    >>> y1 = textbook_laplace(1.0, 1.0, 2000, rng=2)
    >>> res = mironov_attack(y0, y1, 1.0, claimed=1.0)
    >>> res.false_alarms, res.audit.holds, res.epsilon_lower_bound > 4
    (0, False, True)
    """
    r0 = np.asarray(releases0, dtype=np.float64).ravel()
    r1 = np.asarray(releases1, dtype=np.float64).ravel()
    n = r0.shape[0]
    if r1.shape[0] != n or n == 0:
        raise ValueError(f"mironov_attack needs the same positive number of releases under each "
                         f"input. Got {n} and {r1.shape[0]} instead.")
    own0, own1 = textbook_support(r0, x0, scale), textbook_support(r1, x1, scale)
    out1 = ~textbook_support(r1, x0, scale)      # a release of x1 that x0 cannot produce
    out0 = ~textbook_support(r0, x1, scale)
    a, b = int(out1.sum()), int((~own0).sum())   # the event "outside image(x0)" under x1, x0
    lb = epsilon_lower_bound(a, n, b, n, alpha)
    audit = EmpiricalAudit(float(claimed), lb, bool(lb <= claimed),
                           f"y outside the textbook image of x0 = {x0:g}, x1 vs x0",
                           (a, n, b, n), alpha)
    false_alarms = int((~own0).sum() + (~own1).sum())
    return MironovResult(float((out1.mean() + out0.mean()) / 2), false_alarms, audit, n)


class TextbookLaplace:
    """The textbook sampler as a mechanism on ``[-1, 1]``: ``u + Lap(2 / eps)`` in doubles.

    What :class:`~fastldp.oracles.Laplace` claims (``eps``-LDP on
    ``u in [-1, 1]``, scale ``2 / eps``), drawn by Eq. (1) of the module
    docstring: the audit's negative control ``control:laplace-textbook-lsb``.

    Examples
    --------
    >>> from fastldp.audit.mironov import TextbookLaplace
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
