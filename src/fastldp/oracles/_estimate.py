"""What a frequency oracle's decode returns: :class:`FrequencyEstimate`."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np

from .._sanitize import SanitizationReport
from ..results import PrivacyStatement, Result

__all__ = ["FrequencyEstimate"]


@dataclass(frozen=True, repr=False)
class FrequencyEstimate(Result):
    """What :meth:`FrequencyOracle.estimate` returns (a :class:`~fastldp.results.Result`).

    Attributes
    ----------
    counts : float64 array, shape (D,)
        Unbiased estimates of how many identities hold each symbol; also
        ``.estimate`` (the same array). After post-processing
        (:mod:`fastldp.oracles.postprocess`), the consistent (biased) counts.
    variances : float64 array, shape (D,), or None
        Plug-in variance of each count (:mod:`fastldp.oracles._base`); ``.std`` is its
        square root. ``None`` after post-processing: the unbiased
        estimator's variances do not describe the post-processed counts.
    sanitization : SanitizationReport or None
        How many reports were legal and why the others were replaced
        (``None`` for a post-processed plain count vector).
    n : int
        Number of reports.
    privacy : PrivacyStatement
        Local DP per report at the oracle's ``epsilon``, or the summary of
        the personal budgets (post-processing keeps it).
    categories : tuple or None
        The labels of the symbols when the oracle was built with
        ``categories=``.
    postprocessing : str or None
        ``None`` for the unbiased estimate; else the post-processing that
        produced the counts (``"norm_sub"``, ``"ibu"``...;
        ``"base_cut+norm_sub"`` for one applied after the other). The repr
        shows it: ``FrequencyEstimate[norm_sub](...)``.
    postprocessing_info : dict or None
        What the post-processing found (IBU: ``iterations``, ``converged``,
        ``distance``, the certified bound on the L1 distance of the
        frequencies to the maximizer...; see :mod:`fastldp.oracles.postprocess`).

    Examples
    --------
    >>> from fastldp import GRR
    >>> grr = GRR(domain_size=3, epsilon=2.0, codebook_seed=0, categories=["a", "b", "c"])
    >>> est = grr.estimate(grr.privatize(["a", "b", "b", "c"], rng=0))
    >>> est.estimate is est.counts
    True
    >>> est.categories
    ('a', 'b', 'c')
    >>> list(est.to_frame().columns)
    ['category', 'estimate', 'std', 'frequency']
    """

    _estimate_field = "counts"

    counts: np.ndarray
    variances: Optional[np.ndarray]
    sanitization: Optional[SanitizationReport]
    n: int
    privacy: PrivacyStatement = PrivacyStatement.local()
    categories: Optional[tuple] = None
    postprocessing: Optional[str] = None
    postprocessing_info: Optional[dict] = None

    def _repr_kind(self) -> str:
        kind = type(self).__name__
        return kind if self.postprocessing is None else f"{kind}[{self.postprocessing}]"

    @property
    def frequencies(self) -> np.ndarray:
        """``counts / n`` (zeros when there are no reports)."""
        return self.counts / self.n if self.n else np.zeros_like(self.counts)

    def _frame_columns(self) -> dict:
        return {"frequency": self.frequencies}
