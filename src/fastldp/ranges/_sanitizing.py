"""Malformed range reports: replaced by public random legal reports and counted.

The decoders of :mod:`fastldp.ranges` never raise on the contents of a
report. A report that is not a legal output is repaired and counted under
the first of its reasons:

==================  ==========================================================
reason              the report
==================  ==========================================================
``wrong_width``     a row of another length than the report's (ragged input)
``non_numeric``     has an entry that is not a real number (string, None...)
``non_integer``     has NaN, +-inf or a fraction where an integer belongs
``bad_index``       names no level (users split by level)
``out_of_range``    has a level's payload that is no output of its oracle (a
                    symbol out of range, a bit beyond the level's nodes, a
                    non-zero column after the payload)
==================  ==========================================================

The first three and ``bad_index`` replace the whole row by a public
uniformly random legal report keyed by ``(codebook_seed, identity)``: its
level from the sanitize stream's word 2, and each payload as the level's
oracle replaces its own (:func:`~fastldp.oracles._sanitizing.public_uniform`
keyed by the level's seed, ``UnaryEncoding.public_rows``). An illegal
payload is replaced alone; the rest of the row is kept. Only a wrong number
or shape of the reports as a whole raises.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .._sanitize import SanitizationReport
from ..oracles._sanitizing import partial_report as partial_sanitization
from ..oracles._sanitizing import public_uniform
from ..oracles._sanitizing import record_rows as report_rows
from ..oracles._sanitizing import tally_masks as tally
from .._sanitize import sanitization_counts as report_counts

__all__ = ["REASONS", "report_rows", "tally", "report_counts", "partial_sanitization",
           "level_payloads", "public_payloads", "SanitizationReport", "bytes_to_words",
           "words_to_bytes"]

REASONS = ("wrong_width", "non_numeric", "non_integer", "bad_index", "out_of_range")


def level_payloads(mech: Any, li: int, identities: np.ndarray) -> np.ndarray:
    """Level ``li``'s public legal payloads (int64, ``(k, widths[li])``) for ``identities``."""

    ids = np.ascontiguousarray(identities, dtype=np.uint64)
    oracle = mech.oracles[li]
    if mech.unary[li]:
        return bytes_to_words(oracle.public_rows(ids), mech.widths[li])
    sizes = np.full(ids.shape[0], mech.output_sizes[li], dtype=np.int64)
    return public_uniform(oracle.codebook_seed, ids, sizes)[:, None]


def public_payloads(mech: Any, identities: np.ndarray) -> np.ndarray:
    """Whole public legal reports (int64 rows) for ``identities`` (the module docstring's rule)."""
    ids = np.ascontiguousarray(identities, dtype=np.uint64)
    out = np.zeros((ids.shape[0], mech.row_width), dtype=np.int64)
    if mech.split == "users":
        level = public_uniform(mech.codebook_seed, ids,
                               np.full(ids.shape[0], mech.n_levels, dtype=np.int64), word=2)
        out[:, 0] = level
        for li in range(mech.n_levels):
            rows = np.flatnonzero(level == li)
            if rows.size:
                out[rows, 1:1 + mech.widths[li]] = level_payloads(mech, li, ids[rows])
        return out
    for li in range(mech.n_levels):
        start = mech.payload_starts[li]
        out[:, start:start + mech.widths[li]] = level_payloads(mech, li, ids)
    return out


def bytes_to_words(rows: np.ndarray, width: int) -> np.ndarray:
    """Packed bit rows (uint8, little-endian) as ``width`` int64 words per row."""
    n, nb = rows.shape
    buf = np.zeros((n, 8 * width), dtype=np.uint8)
    buf[:, :nb] = rows
    return buf.view("<i8").astype(np.int64)


def words_to_bytes(words: np.ndarray, n_bytes: int) -> np.ndarray:
    """int64 words back to ``n_bytes`` packed bytes per row (uint8, C-contiguous)."""
    raw = np.ascontiguousarray(words, dtype="<i8").view(np.uint8)
    return np.ascontiguousarray(raw.reshape(words.shape[0], 8 * words.shape[1])[:, :n_bytes])
