"""Malformed multi-attribute reports: replaced by public random legal parts and counted.

The decoders of :mod:`fastldp.multidim` never raise on the contents of a
report, as the oracles of :mod:`fastldp.oracles` do not: a report that is
not a legal output is repaired and counted under the first of its reasons,

==================  ==========================================================
reason              the report
==================  ==========================================================
``wrong_width``     a row of another length than the report's (ragged input)
``non_numeric``     has an entry that is not a real number (string, None...)
``non_integer``     has NaN, +-inf or a fraction where an integer belongs
                    (``non_finite`` for the numeric vectors' reports)
``bad_index``       names no attribute (SMP) or no set of distinct dimensions
                    (SampledMean)
``out_of_range``    has a part that is no output of its oracle (a symbol or
                    bucket out of range, a set padding bit, a byte after the
                    sampled attribute's bits; ``illegal_value`` for a value no
                    output of the scalar randomizer)
==================  ==========================================================

Each malformed part of a report is replaced by what the oracle of
:mod:`fastldp.oracles` replaces it by: a public uniformly random legal
output keyed by ``(seed of the attribute's oracle, identity)``
(:func:`~fastldp.oracles._sanitizing.public_uniform`,
``UnaryEncoding.public_rows``); legal parts of the same report are kept,
since each attribute's part is a report of its own oracle. Only a wrong
number or shape of the reports as a whole raises.
"""

from __future__ import annotations

import numpy as np

from .._kernels._hash import SANITIZE_STREAM, hash_blocks
from ..oracles._sanitizing import partial_report as partial_sanitization
from ..oracles._sanitizing import record_rows as report_rows
from ..oracles._sanitizing import tally_masks as tally
from .._sanitize import sanitization_counts as report_counts

__all__ = ["FREQUENCY_REASONS", "SMP_REASONS", "MEAN_REASONS", "report_rows", "tally",
           "report_counts", "partial_sanitization", "public_uniforms"]

FREQUENCY_REASONS = ("wrong_width", "non_numeric", "non_integer", "out_of_range")
SMP_REASONS = ("wrong_width", "non_numeric", "non_integer", "bad_index", "out_of_range")
MEAN_REASONS = ("wrong_width", "non_numeric", "non_finite", "bad_index", "illegal_value")


def public_uniforms(seed: int, identities: np.ndarray, count: int) -> np.ndarray:
    """``count`` public uniforms in ``[0, 1)`` per identity (the sanitize stream, 53 bits each)."""
    n_blocks = max(1, (count + 3) // 4)
    words = hash_blocks(seed, np.ascontiguousarray(identities, dtype=np.uint64), n_blocks,
                        SANITIZE_STREAM).reshape(identities.shape[0], -1)[:, :count]
    return (words >> np.uint64(11)).astype(np.float64) * 2.0**-53


def real_entries(arr: np.ndarray) -> tuple:
    """Float64 entries of ``arr`` and the mask of entries that are not real numbers."""
    if arr.dtype.kind in "iufb":
        return arr.astype(np.float64), np.zeros(arr.shape, dtype=bool)
    flat = arr.ravel()
    out = np.zeros(flat.shape[0], dtype=np.float64)
    bad = np.zeros(flat.shape[0], dtype=bool)
    for j, v in enumerate(flat):
        if isinstance(v, (str, bytes, complex, np.complexfloating)) or v is None:
            bad[j] = True
            continue
        try:
            out[j] = float(v)
        except (TypeError, ValueError, OverflowError):
            bad[j] = True
    return out.reshape(arr.shape), bad.reshape(arr.shape)
