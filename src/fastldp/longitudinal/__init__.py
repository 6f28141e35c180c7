"""Longitudinal collection: memoized two-round frequency oracles and the client memo.

A user reports the same attribute round after round. Each report of a value
is a fresh randomization of a *permanent* response drawn once for that
value and remembered in the client's memo, so the reports of a value that
does not change are ``epsilon_inf``-LDP together, however many there are,
while each report alone is ``epsilon_1``-LDP (Arcolezi et al., 2022):

* :class:`LGRR`, :class:`LOUE`, :class:`LOSUE`, :class:`LSUE` (basic RAPPOR
  without the Bloom filter) and :class:`LSOUE` (:mod:`.protocols`), with the
  privacy statement :class:`LongitudinalPrivacy`;
* :class:`MemoStore` (a durable SQLite memo) and :class:`MemoryMemo` (NumPy
  arrays, for simulations) (:mod:`.memo`);
* :class:`LSPL` and :class:`LSMP` (:mod:`.multidim`): records of several
  attributes over time, the budget split over the attributes or one attribute
  sampled for good, over the memoized oracles (here, not in
  :mod:`fastldp.multidim`, since this family owns the memo store).

The estimates are :class:`~fastldp.oracles.FrequencyEstimate` objects.
"""

from .dbitflip import DBitFlipPM
from .memo import MemoryMemo, MemoStore
from .protocols import (LGRR, LOSUE, LOUE, LSOUE, LSUE, LongitudinalOracle, LongitudinalPrivacy,
                        epsilon_1_limit, lgrr_parameters, unary_parameters)
from .rappor import LongitudinalRAPPOR, RAPPORDecode
from .multidim import LSMP, LSPL, LongitudinalMultiEstimate
from . import _channels, _multidim_channels, _rappor_channels  # noqa: F401  (audit channels)

__all__ = ["LGRR", "LOUE", "LOSUE", "LSUE", "LSOUE", "LongitudinalOracle",
           "LongitudinalPrivacy", "MemoStore", "MemoryMemo", "epsilon_1_limit", "lgrr_parameters",
           "unary_parameters", "LongitudinalRAPPOR", "RAPPORDecode", "DBitFlipPM", "LSPL", "LSMP",
           "LongitudinalMultiEstimate"]
