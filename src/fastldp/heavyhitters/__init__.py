"""Heavy hitters of huge domains: 64-bit integers and strings of up to 64 bytes, found without enumerating them.

* :class:`PEM`, the prefix extending method (Wang, Li, Jha, IEEE TDSC 2019):
  OLH on item prefixes by public group, extended level by level (:mod:`.pem`);
* :class:`TreeHist` (Bassily, Nissim, Stemmer, Thakurta, NeurIPS 2017): a
  pruned prefix tree over a Hadamard (HCMS-law) frequency oracle (:mod:`.treehist`);
* :class:`SFP`, Apple's Sequence Fragment Puzzle: fragments behind a puzzle
  piece through CMS (or HCMS), assembled by the server (:mod:`.sfp`);
* the result :class:`HeavyHitters` and the base :class:`HeavyHitterProtocol`
  with its exact, mergeable :class:`HeavyPartial` (:mod:`._base`);
* items: :class:`ItemCodec`, :func:`prefix`, :func:`extend`, :func:`prefix_keys`,
  :func:`code_order`, :func:`top_k_order`, :func:`unique_codes` (:mod:`.items`);
* workloads: :func:`zipf_items`, :func:`word_items`, real text (:mod:`.data`);
* a first round that learns the strings' lengths and picks the field, and the bytes
  they use: :func:`length_oracle`, :func:`length_plan`, :func:`byte_oracle`,
  :func:`byte_alphabet`, :func:`two_rounds` (:mod:`.lengths`);
* metrics: :func:`precision_at_k`, :func:`recall_at_k`, :func:`f1_at_k`,
  :func:`ncr`, :func:`relative_error` (:mod:`.metrics`);
* poisoning: MGA's fake reports against PEM (:mod:`.attacks`) and a decode
  that detects them (:mod:`.robust`).
"""

from ._base import HeavyHitterProtocol, HeavyHitters, HeavyPartial
from .items import (
    ItemCodec, code_order, decode_items, encode_items, extend, prefix, prefix_keys, top_k_order,
    unique_codes,
)
from .pem import PEM
from .lengths import (
    LengthPlan, byte_alphabet, byte_oracle, cut_to_field, length_oracle, length_plan,
    string_bytes, string_lengths, two_rounds,
)
from .sfp import SFP
from .treehist import TreeHist
from . import attacks, data, metrics, robust
from . import _channels  # noqa: F401  (registers the audit's channels of the classes above)

__all__ = ["PEM", "TreeHist", "SFP", "HeavyHitters", "HeavyHitterProtocol", "HeavyPartial", "ItemCodec",
           "encode_items", "decode_items", "prefix", "extend", "prefix_keys", "code_order",
           "top_k_order", "unique_codes", "data", "metrics",
           "attacks", "robust", "LengthPlan", "string_lengths", "length_oracle", "length_plan",
           "cut_to_field", "two_rounds", "string_bytes", "byte_oracle", "byte_alphabet"]
