"""Shuffled-DP sparse linear regression (paper 002): U2R, Sample-SDP and baselines.

Estimators (scikit-learn conventions; scikit-learn is not needed):

- :class:`U2R` - the two-round user-level shuffled protocol (section 5);
- :class:`SampleSDP` - the non-interactive sample-level shuffled algorithm (section 4.2);
- :class:`Lasso` - non-private Lasso by coordinate descent;
- :class:`LDPIHT` - LDP iterative hard thresholding (sample-level eps-LDP);
- :class:`TwoStageSLR` - two-stage sparse regression under user-level eps-LDP.

Each has ``fit(X, y, *, users=None, rng=None)``, ``predict``, ``score``,
``get_params`` / ``set_params`` and, once fitted, ``coef_``, ``intercept_``,
``support_`` and ``privacy_``. The shuffle-model building blocks are in
:mod:`fastldp.regression.shuffle`, the rates of Theorems 1-4 in
:mod:`fastldp.regression.bounds`, the data in :mod:`fastldp.regression.data`.
"""

from . import bounds, shuffle
from ._base import Privacy, RegressionEstimator
from .baselines import LDPIHT, Lasso, TwoStageSLR
from .data import KelmarshData, RegressionData, load_kelmarsh, make_sparse_regression
from .sample_sdp import SampleSDP
from .shuffle import ShuffledBits, ShuffledBitsAnalyzer, ShuffledSumAnalyzer, ShuffledVectorSum
from .u2r import U2R
from . import _channels, _shuffle_channels  # noqa: F401  (register the audit's channels)

__all__ = [
    "U2R", "SampleSDP", "Lasso", "LDPIHT", "TwoStageSLR", "Privacy", "RegressionEstimator",
    "ShuffledVectorSum", "ShuffledBits", "ShuffledSumAnalyzer", "ShuffledBitsAnalyzer", "make_sparse_regression", "load_kelmarsh",
    "RegressionData", "KelmarshData", "bounds", "shuffle",
]
