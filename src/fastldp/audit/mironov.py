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

The negative control ``control:laplace-textbook-lsb`` of
:class:`~fastldp.oracles.Laplace` (registered in
``fastldp/oracles/_channels.py``; the sampler model is
:mod:`fastldp._textbook_laplace`) is the textbook sampler at ``b = 2 / eps``
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

import numpy as np
from numpy.typing import ArrayLike

from .._textbook_laplace import (K_MAX, WINDOW, TextbookLaplace, attack_statistic, lsb_draw,
                                 textbook_laplace, textbook_support)
from .empirical import ALPHA, EmpiricalAudit, epsilon_lower_bound
from .report import one_line

__all__ = ["textbook_laplace", "textbook_support", "attack_statistic", "mironov_attack",
           "MironovResult", "TextbookLaplace", "lsb_draw", "WINDOW", "K_MAX"]


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
