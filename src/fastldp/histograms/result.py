"""What a histogram release returns: the noisy counts on the shared result base.

:meth:`~fastldp.histograms.ShiftedLogGaussian.release` returns the noisy
counts as a plain array (what code written against it expects);
``release_result`` returns the same numbers, bit for bit for the same
``rng``, as a :class:`HistogramRelease`: ``.estimate`` (alias ``.counts``),
``.n`` (the number of groups released), ``.privacy`` (the zCDP budget the
release guarantees to everyone, whatever the data), ``.to_frame()`` and a
short repr. The histograms define no plug-in variance of a released count
(the noise depends on the true count), so ``.variances`` and ``.std`` are
``None``; nothing is received from users, so ``.sanitization`` is ``None``.
"""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..results import PrivacyStatement, Result

__all__ = ["HistogramRelease"]


@dataclass(frozen=True, repr=False)
class HistogramRelease(Result):
    """Noisy counts of a central histogram release (a :class:`~fastldp.results.Result`).

    Attributes
    ----------
    counts : float64 array, the shape of the true counts
        The released counts; also ``.estimate`` (the same array).
    n : int
        The number of groups released (public: the true counts are not).
    privacy : fastldp.results.PrivacyStatement
        ``model`` ``"zCDP"``, ``unit`` ``"person"`` (add-or-remove-one),
        ``rho`` the budget every person gets whatever the counts: the
        worst group's, ``v(0)`` for the shifted-log Gaussian, whose members
        of larger groups get less (:meth:`~fastldp.histograms.ShiftedLogGaussian.rho`).
    mechanism : str
        The repr of the mechanism that released it.

    Examples
    --------
    >>> from fastldp.histograms import ShiftedLogGaussian
    >>> mech = ShiftedLogGaussian(r=0.1)
    >>> out = mech.release_result([0, 4, 120, 50_000], rng=1)
    >>> out.estimate is out.counts, out.n, out.privacy.model
    (True, 4, 'zCDP')
    >>> out.privacy.rho == mech.rho(0)
    True
    >>> list(out.to_frame().columns)
    ['index', 'estimate']
    """

    _estimate_field = "counts"

    counts: np.ndarray
    n: int
    privacy: PrivacyStatement
    mechanism: str = ""
