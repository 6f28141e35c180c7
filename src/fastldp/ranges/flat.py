"""The flat baseline: one frequency oracle over the whole domain, ranges as sums of its counts.

Every user reports their value through one oracle of :mod:`fastldp.oracles`
over ``[0, D)``; a range's count is the sum of the ``b - a + 1`` counts it
covers, so its variance grows linearly with its length (Cormode et al.
2019, Section 3). This is the reference every range method must beat.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._sanitize import SanitizationReport
from ._base import RangeEstimate
from ._protocol import LevelMechanism

__all__ = ["FlatRange"]


class FlatRange(LevelMechanism):
    """Range counts, CDF and quantiles from one oracle over ``[0, D)``.

    Parameters
    ----------
    epsilon : float in (0, 700]
        The budget of every report.
    domain_size : int in [2, 2^30]
        ``D``: values are ``0 .. D - 1``.
    oracle : {"auto", "grr", "oue", "olh", "hr"}
        The oracle (``"auto"``: the rule of :mod:`fastldp.ranges._protocol`,
        the least variance whose cost fits).
    codebook_seed : int or None
        Public seed of the oracle (OLH's hashes, the sanitization coins);
        ``None`` draws one from OS entropy.

    Notes
    -----
    Reports are int64 rows: one column (the oracle's symbol) or, for OUE,
    ``ceil(D / 64)`` words of its bits. ``estimate`` returns a
    :class:`~fastldp.ranges.RangeEstimate` whose ``variances`` are the
    oracle's plug-in variances of each value's count.

    References
    ----------
    G. Cormode, T. Kulkarni, D. Srivastava, "Answering range queries under
    local differential privacy", PVLDB 12(10), 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.ranges import FlatRange
    >>> flat = FlatRange(epsilon=2.0, domain_size=16, oracle="oue", codebook_seed=1)
    >>> x = np.arange(4000) % 16
    >>> est = flat.estimate(flat.privatize(x, rng=0))
    >>> bool(est.range_count(0, 15) == est.counts.sum())
    True
    """

    def __init__(self, *, epsilon: float, domain_size: int, oracle: str = "auto",
                 codebook_seed: Optional[int] = None) -> None:
        owner = type(self).__name__
        self._check_common(owner, epsilon, domain_size, oracle, codebook_seed)
        self.split = "budget"  # one level at the whole budget
        self._build_levels([self.domain_size], [1])

    def stream_params(self) -> dict:
        """The public parameters that rebuild an equivalent server (JSON values)."""
        return {"epsilon": self.epsilon, "domain_size": self.domain_size,
                "oracle": self.oracle, "codebook_seed": self.codebook_seed}

    def _result(self, counts: list, noise: np.ndarray, plug_in: list, n: int,
                sanitization: Optional[SanitizationReport]) -> RangeEstimate:
        return RangeEstimate(counts[0], plug_in[0], n, self.privacy(), sanitization)

    def estimate(self, reports: Any, *, epsilons: Any = None,
                 identities: Any = None) -> RangeEstimate:
        """The :class:`RangeEstimate` of the reports (``finalize(partial(...))`` exactly)."""
        return self.finalize(self.partial(reports, epsilons, identities))
