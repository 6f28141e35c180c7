"""The privacy statements of relation decodes, below both the base class and the decoders.

:mod:`.base` (the mechanisms' shared class) and :mod:`.decoders` both state
what a decode guarantees; the statements live here so that neither imports
the other for them. :mod:`.base` re-exports both names.
"""

from __future__ import annotations

from typing import Optional

import numpy as np

from ..results import PrivacyStatement

__all__ = ["privacy_of_budgets", "privacy_of_extremes"]


def privacy_of_budgets(eps: np.ndarray, eps_min: Optional[float] = None,
                       eps_max: Optional[float] = None) -> PrivacyStatement:
    """What a relation decode guarantees: each identity's whole set at its own budget.

    ``eps_min`` and ``eps_max``, when the caller has them, spare two passes
    over the budgets; equal ones give the plain ``epsilon`` statement.
    """
    if eps_min is not None and eps_min == eps_max:
        return PrivacyStatement.local(epsilon=eps_min, unit="user")
    return PrivacyStatement.local(epsilons=eps, unit="user")


def privacy_of_extremes(eps_min: Optional[float], eps_max: Optional[float]) -> PrivacyStatement:
    """The statement a decode from partials can make: they keep the extremes, not the budgets.

    Personal budgets give their min and max (no median: a partial holds
    exact sums, not the budgets).
    """
    if eps_min is not None and eps_min == eps_max:
        return PrivacyStatement.local(epsilon=eps_min, unit="user")
    return PrivacyStatement("local DP", "user", epsilon=None, epsilon_min=eps_min,
                            epsilon_max=eps_max, personal=eps_min is not None)
