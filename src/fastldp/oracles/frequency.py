"""Frequency oracles with personal budgets: GRR, OLH, FLH, Hadamard response, OUE and SUE.

Each oracle privatizes one symbol ``x in [0, D)`` per identity at that
identity's own ``eps_i`` and gives the server, per identity, an unbiased
estimate ``c_i(v)`` of the indicator ``[x_i = v]`` for every ``v``:

* :class:`GRR` (:mod:`.grr`): a symbol in ``[0, D)``; server ``O(n + D)``;
* :class:`OLH` (:mod:`.olh`): a bucket in ``[0, g)``; server ``O(n D)`` hashes;
* :class:`FLH` (:mod:`.flh`): ``(pool index, bucket)``; server ``O(n + h D)``;
* :class:`HadamardResponse` (:mod:`.hadamard`): a column in ``[0, K)``;
  server ``O(n + K log K)``;
* :class:`OUE`, :class:`SUE` (:mod:`.unary`): ``ceil(D / 8)`` packed bytes;
  server ``O(n D / 64)`` word operations.
* :class:`CMS`, :class:`HCMS` (:mod:`.cms`): Apple's count mean sketches,
  ``(row, m signs)`` or ``(row, Hadamard row, one bit)``; server
  ``O(n m / 64 + k D)`` or ``O(n + k m log m + k D)``.
* :class:`SubsetSelection` (:mod:`.subset`): a set of ``k`` symbols as
  ``ceil(D / 8)`` packed bytes; server ``O(n D / 64)`` word operations.
* :class:`BLH` (:mod:`.blh`): OLH with two buckets, one bit; server ``O(n D)`` hashes.
* :class:`SHE`, :class:`THE` (:mod:`.histogram_encoding`): a noisy one-hot float
  vector (``D`` doubles), or its thresholded bits (``ceil(D / 8)`` packed bytes);
  server ``O(n D)`` exact sums, or ``O(n D / 64)`` word operations.
* :class:`RAPPOR` (:mod:`fastldp.oracles.rappor`): a randomized Bloom filter (``ceil(k / 8)``
  packed bytes) decoded by least squares, one budget; server ``O(n k / 64 + D^3)``.

The public API (keyword-only constructors, validated ``privatize`` and
``estimate`` returning a :class:`FrequencyEstimate`) is described in
:mod:`._base`, with the budget limits and the sanitization rules.

The oracles are linear: the server's estimate is ``sum_i lambda_i c_i(v)``,
and for the integer-output oracles (GRR, OLH, HR; :data:`ORACLES`) a
report's contribution to any linear objective ``sum_v w_v c_i(v)`` has a
closed form (``response_scores``, ``best_response``), which is what the
optimized attacks of :mod:`fastldp.relations.attacks` maximize.

Variance-optimal weights
------------------------
For a symbol ``v`` the identity does not hold, ``c_i(v)`` has variance
``sigma_i^2`` that depends only on ``eps_i`` (and ``D``). Among unbiased
combinations ``sum_i lambda_i c_i / sum_i lambda_i`` the variance
``sum lambda_i^2 sigma_i^2 / (sum lambda_i)^2`` is minimized by
``lambda_i = 1 / sigma_i^2`` (Cauchy-Schwarz); with equal budgets every
``lambda_i`` is equal and the combination is the plain mean. The variance at
the symbol an identity holds differs by a term of order ``1 / D`` relative,
which is ignored in the weights (it depends on private data).
"""

from __future__ import annotations

from .blh import BLH
from .cms import CMS, HCMS
from .flh import FLH
from .grr import GRR
from .hadamard import HadamardResponse
from .histogram_encoding import SHE, THE
from .olh import OLH
from .rappor import RAPPOR
from .subset import SubsetSelection
from .unary import OUE, SUE

# The classes live in their own modules (documented there); this module
# holds the registries.
__all__ = ["ORACLES", "FREQUENCY_ORACLES"]

#: Oracles with one integer output per identity and closed-form attack scores (P-RS uses these).
ORACLES = {"grr": GRR, "olh": OLH, "hr": HadamardResponse}

#: Every frequency oracle, by name.
FREQUENCY_ORACLES = {"grr": GRR, "olh": OLH, "flh": FLH, "hr": HadamardResponse, "oue": OUE,
                     "sue": SUE, "cms": CMS, "hcms": HCMS,
                     "ss": SubsetSelection, "blh": BLH,
                     "she": SHE, "the": THE, "rappor": RAPPOR}
