"""Count-dependent zCDP histograms (paper 003, "Better Privacy Guarantees for Larger Groups").

Private histograms over fixed disjoint groups under add-or-remove-one
adjacency, where the error of a group may grow with its count ``x`` so that
members of larger groups get a smaller zCDP budget ``v(n)``:

- :class:`ShiftedLogGaussian` - the mechanism
  ``max(0, exp(log(x + c) + N(mu, sigma^2)) - c)`` with ``(sigma, c)``
  certified to meet ``E|x_hat - x| < r max(x, 1)`` at every ``x >= 0``, its
  budget :meth:`~ShiftedLogGaussian.rho` (``v(n) ~ 1/(2 sigma^2 n^2)``), its
  error by quadrature and a per-group :class:`PrivacyReport`;
- :func:`multiplicative_error`, :func:`certify` - the drift and calibration
  tools (``E|exp(sigma Z - sigma^2) - 1| = erf(sigma/sqrt 2)``);
- :func:`renyi_gaussian`, :func:`renyi_critical_order`, :func:`gaussian_zcdp`,
  :func:`proportional_gaussian_failure` - Rényi divergences between
  Gaussians at every order, and why ``N(n, r^2 n^2)`` is not zCDP;
- :func:`two_count_lower_bound`, :func:`leading_coefficient_bounds`,
  :func:`leading_coefficient_ratio`, :func:`mechanism_leading_constant`,
  :class:`DataIndependentRelease` - the bounds of the paper and the ``r = 1``
  mechanism;
- :class:`EqualNoiseGaussian` - the equal-absolute-noise baseline;
- :class:`HistogramRelease` - what ``release_result`` returns: the noisy
  counts on the shared result base (:mod:`fastldp.results`), with the zCDP
  budget in ``.privacy``.

Example
-------
>>> from fastldp.histograms import ShiftedLogGaussian
>>> mech = ShiftedLogGaussian(r=0.1)
>>> noisy = mech.release([0, 4, 120, 50_000], rng=1)
>>> report = mech.privacy_report([0, 4, 120, 50_000])
>>> out = mech.release_result([0, 4, 120, 50_000], rng=1)
>>> bool((out.estimate == noisy).all())
True
"""

from .baseline import EqualNoiseGaussian
from .bounds import (
    C_LOWER,
    C_UPPER,
    DataIndependentRelease,
    leading_coefficient_bounds,
    leading_coefficient_ratio,
    mechanism_leading_constant,
    two_count_lower_bound,
)
from .mechanism import (
    DRIFTS,
    Certificate,
    ShiftedLogGaussian,
    certify,
    drift_mu,
    multiplicative_error,
    sigma_for_error,
)
from .privacy import PrivacyReport, zcdp_epsilon
from .privacy import HistogramRelease
from .renyi import (
    ProportionalFailure,
    gaussian_zcdp,
    proportional_gaussian_failure,
    renyi_critical_order,
    renyi_gaussian,
)
from . import _channels  # noqa: F401  (registers the audit's channels of the classes above)

__all__ = [
    "C_LOWER",
    "C_UPPER",
    "Certificate",
    "DRIFTS",
    "DataIndependentRelease",
    "EqualNoiseGaussian",
    "HistogramRelease",
    "PrivacyReport",
    "ProportionalFailure",
    "ShiftedLogGaussian",
    "certify",
    "drift_mu",
    "gaussian_zcdp",
    "leading_coefficient_bounds",
    "leading_coefficient_ratio",
    "mechanism_leading_constant",
    "multiplicative_error",
    "proportional_gaussian_failure",
    "renyi_critical_order",
    "renyi_gaussian",
    "sigma_for_error",
    "two_count_lower_bound",
    "zcdp_epsilon",
]
