"""Exact epsilon audits of finite channels, decided in rational arithmetic.

A finite channel is a table ``P[i, x, y]``: for public identity (codebook
row) ``i``, the probability that input ``x`` is released as output ``y``.
It is ``eps``-LDP exactly when, for every identity and output,

    max_x P[i, x, y] <= e^eps * min_x P[i, x, y].

The package computes its probabilities in binary64, so the tables here hold
floats. Every float is a rational number, and the audit works with those
rationals exactly (:class:`fractions.Fraction`): the ratio it reports is the
exact ratio of the probabilities the mechanism uses, with no rounding. Only
the comparison with the irrational ``e^eps`` needs an approximation, and it
is decided with outward rounding: ``ln(ratio)`` is evaluated by
:mod:`decimal` at 50 significant digits (correctly rounded, so within one
unit of the 50th digit) and widened by ``1e-45`` before it is compared with
the threshold.

Floating-point slack
--------------------
A probability such as ``e^eps / (e^eps + D - 1)`` carries a relative
rounding error of a few units of ``2^-53``, so the ratio of two of them can
exceed ``e^eps`` by about ``1e-16`` relative even when the formula is exactly
at the edge. The verdict therefore allows ``ln(ratio) <= eps + tol`` with
``tol = rtol * eps + atol``, ``rtol = 1e-12``, ``atol = 1e-15`` (a few units
in the last place of a log-ratio near 1). That is four orders of magnitude
below the smallest violation the audit is required to flag: a claim of
``eps * (1 - 1e-9)`` fails for every ``eps >= 1e-5``. ``rtol = atol = 0``
asks for the literal inequality.

The sampler draws ``U < p`` with a 53-bit uniform ``U``, so what it realizes
is ``ceil(p 2^53) / 2^53``, within ``2^-53`` of ``p``; the empirical check
of each sampler (:mod:`fastldp.audit.empirical`) is what ties the sampler to
the table.
"""

from __future__ import annotations

import decimal
from dataclasses import dataclass
from fractions import Fraction
from math import inf

import numpy as np

from ..channels import ExactLaw, one_line

__all__ = ["ExactLaw", "ExactAudit", "audit_law", "RTOL", "ATOL"]

RTOL = 1e-12
ATOL = 1e-15
_DIGITS = 50
_MARGIN = decimal.Decimal("1e-45")


@dataclass(frozen=True, repr=False)
class ExactAudit:
    """Result of :func:`audit_law`.

    Attributes
    ----------
    epsilon : float
        The claimed budget.
    ratio : fractions.Fraction or float
        The largest likelihood ratio, exact (``inf`` when an output is
        impossible under one input and possible under another).
    epsilon_audited : float
        ``ln(ratio)`` rounded to the nearest float.
    holds : bool
        ``ln(ratio) <= epsilon + tol`` decided with outward rounding.
    witness : tuple
        ``(identity, x, x', y)`` attaining the ratio (indices into the law).
    max_row_error : float
        ``max |sum_y P[i, x, y] - 1|``; a law whose rows do not sum to 1
        within ``1e-9`` is not a channel and the audit fails.
    tol : float
        The slack allowed on ``ln(ratio)`` (module docstring).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.audit import ExactLaw, audit_law
    >>> law = ExactLaw([0, 1], [0, 1], np.zeros(1, dtype=np.uint64),
    ...                np.array([[[0.75, 0.25], [0.25, 0.75]]]))
    >>> audit_law(law, 1.2)
    ExactAudit(epsilon=1.2, epsilon_audited=1.098612, holds=True, witness=(0, 0, 1, 0), ...)
    """

    epsilon: float
    ratio: object
    epsilon_audited: float
    holds: bool
    witness: tuple
    max_row_error: float
    tol: float

    def __repr__(self) -> str:  # the ratio's exact fraction can run to hundreds of digits
        return one_line(f"ExactAudit(epsilon={self.epsilon:g}, "
                        f"epsilon_audited={self.epsilon_audited:.7g}, holds={self.holds}, "
                        f"witness={self.witness}, max_row_error={self.max_row_error:.3g}, "
                        f"tol={self.tol:.3g})")


def _ln(ratio: Fraction) -> decimal.Decimal:
    with decimal.localcontext() as ctx:
        ctx.prec = _DIGITS
        return (decimal.Decimal(ratio.numerator) / decimal.Decimal(ratio.denominator)).ln()


def audit_law(law: ExactLaw, epsilon: float, *, rtol: float = RTOL, atol: float = ATOL) -> ExactAudit:
    """Largest likelihood ratio of ``law``, exactly, and whether it is within ``e^epsilon``.

    Parameters
    ----------
    law : ExactLaw
    epsilon : float
        The claimed budget (``> 0``).
    rtol, atol : float
        The floating-point slack (module docstring); ``0, 0`` is the literal test.

    Returns
    -------
    ExactAudit
    """
    probs = np.asarray(law.probs, dtype=np.float64)
    if probs.ndim != 3 or probs.shape[1] < 2 or probs.shape[2] < 1:
        raise ValueError(f"The 'probs' of an ExactLaw must have shape (identities, inputs >= 2, "
                         f"outputs). Got shape {probs.shape} instead.")
    if not (np.isfinite(probs).all() and (probs >= 0).all()):
        raise ValueError("The 'probs' of an ExactLaw must be finite and non-negative.")
    row_error = float(np.abs(probs.sum(axis=2) - 1.0).max())
    tol = rtol * float(epsilon) + atol
    # float order is rational order, so the extreme entries are found in floats
    top = probs.max(axis=1)                        # (identities, outputs)
    low = probs.min(axis=1)
    impossible = (low == 0) & (top > 0)
    if impossible.any():
        i, y = map(int, np.argwhere(impossible)[0])
        wit = (i, int(probs[i, :, y].argmax()), int(probs[i, :, y].argmin()), y)
        return ExactAudit(float(epsilon), inf, inf, False, wit, row_error, tol)
    best, wit = Fraction(1), (0, 0, 0, 0)
    live = np.argwhere(top > 0)
    # only the float-largest ratios can be the rational-largest; check them exactly
    with np.errstate(divide="ignore", invalid="ignore"):
        approx = top[live[:, 0], live[:, 1]] / low[live[:, 0], live[:, 1]]
    cutoff = approx.max() * (1 - 1e-12)
    for i, y in live[approx >= cutoff]:
        r = Fraction(float(top[i, y])) / Fraction(float(low[i, y]))
        if r > best:
            best = r
            wit = (int(i), int(probs[i, :, y].argmax()), int(probs[i, :, y].argmin()), int(y))
    ln_ratio = _ln(best)
    threshold = decimal.Decimal(float(epsilon)) + decimal.Decimal(tol)
    holds = bool(ln_ratio + _MARGIN <= threshold) and row_error <= 1e-9
    return ExactAudit(float(epsilon), best, float(ln_ratio), holds, wit, row_error, tol)
