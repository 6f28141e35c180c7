"""Information functionals, minimax bounds and the theorem-regime audit.

This room turns a personalized budget vector ``epsilons`` and a contamination
fraction ``alpha`` into the quantities that paper 000 uses to state its
results:

* :func:`corrupted_count`, :func:`I_eff` (Eq. (1)), :func:`L_eff` (Eq. (2)),
  :func:`rho_ind` and :func:`rho_ind_homogeneous` (Theorem 2);
* the lower bounds :func:`lower_bound_sampling` (Eq. (3)),
  :func:`lower_bound_contamination` (Eq. (4)), :func:`lower_bound`
  (Corollary 1), and the JPRS upper bounds :func:`upper_bound` (Eq. (10)),
  :func:`expected_risk_upper_bound` (Eq. (11)), with :func:`T_q` and
  :func:`regularity_condition` (Eq. (9));
* :func:`theorem_regime_audit`, which says which statements apply;
* the calibration constants :func:`a_m`, :func:`kappa_k`, :func:`c_k` and
  :func:`gamma_from_epsilon`, re-exported from :mod:`fastldp.relations.calibration`.

References
----------
.. [1] Paper 000 (see :mod:`fastldp.relations` for the citation), sections 3.4,
   4 and 6.
"""

from ..calibration import a_m, c_k, gamma_from_epsilon, kappa_k
from ._audit import RegimeAudit, TheoremCheck, theorem_regime_audit
from ._bounds import (
    RegularityCheck,
    T_q,
    expected_risk_upper_bound,
    lower_bound,
    lower_bound_contamination,
    lower_bound_sampling,
    regularity_condition,
    upper_bound,
)
from ...corruption import corrupted_count
from ._information import I_eff, L_eff, rho_ind, rho_ind_homogeneous

__all__ = [
    "a_m",
    "kappa_k",
    "c_k",
    "gamma_from_epsilon",
    "corrupted_count",
    "I_eff",
    "L_eff",
    "rho_ind",
    "rho_ind_homogeneous",
    "T_q",
    "lower_bound_sampling",
    "lower_bound_contamination",
    "lower_bound",
    "upper_bound",
    "expected_risk_upper_bound",
    "regularity_condition",
    "RegularityCheck",
    "theorem_regime_audit",
    "RegimeAudit",
    "TheoremCheck",
]
