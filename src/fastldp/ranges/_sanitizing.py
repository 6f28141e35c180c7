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

from .._sanitize import SanitizationReport, sanitization_counts, sanitization_report
from ..oracles._sanitizing import as_report_array, public_uniform
from ..streaming import Partial

__all__ = ["REASONS", "report_rows", "tally", "report_counts", "partial_sanitization",
           "level_payloads", "public_payloads", "SanitizationReport"]

REASONS = ("wrong_width", "non_numeric", "non_integer", "bad_index", "out_of_range")


def report_rows(reports: Any, width: int, owner: str, expected: str) -> tuple:
    """``reports`` as an ``(n, width)`` array, and the mask of rows of another length.

    A rectangular array of another width (or rank) is the caller's shape
    error (``ValueError`` naming ``reports``); a ragged list of rows keeps
    its rows of the right length and marks the others (filled with 0).
    """
    arr = as_report_array(reports)
    if arr.dtype.kind in "US" and not isinstance(reports, np.ndarray):
        arr = np.asarray(reports, dtype=object)  # keep each entry's type: strings count alone
    if arr.ndim == 2 and arr.shape[1] == width:
        return arr, np.zeros(arr.shape[0], dtype=bool)
    if arr.ndim == 1 and arr.shape[0] == 0:
        return np.zeros((0, width), dtype=np.int64), np.zeros(0, dtype=bool)
    if arr.ndim == 1 and arr.dtype == object:
        n = arr.shape[0]
        out = np.zeros((n, width), dtype=object)
        wrong = np.zeros(n, dtype=bool)
        for i, row in enumerate(arr):
            try:
                items = list(row)
            except TypeError:  # a scalar where a row belongs
                wrong[i] = True
                continue
            if len(items) != width:
                wrong[i] = True
                continue
            out[i, :] = items
        return out, wrong
    raise ValueError(f"The 'reports' parameter of {owner} must be {expected}. Got an array of "
                     f"shape {arr.shape} instead.")


def tally(n: int, masks: dict, reasons: tuple, wrong_dtype: bool) -> SanitizationReport:
    """The report of ``n`` reports from one boolean mask per reason (first reason wins)."""
    seen = np.zeros(n, dtype=bool)
    by_reason = {}
    for reason in reasons:
        mask = np.asarray(masks.get(reason, np.zeros(n, dtype=bool)), dtype=bool) & ~seen
        by_reason[reason] = int(mask.sum())
        seen |= mask
    return SanitizationReport(n, int(n - seen.sum()), by_reason, bool(wrong_dtype))


def report_counts(report: SanitizationReport) -> dict:
    """The report as integer partial counts (``n``, ``n_valid``, ``reason:<r>``)."""
    return sanitization_counts(report)


def partial_sanitization(partial: Partial) -> SanitizationReport:
    """The :class:`SanitizationReport` of every report a (merged) partial holds."""
    return sanitization_report(partial.counts, partial.flags)


def level_payloads(mech: Any, li: int, identities: np.ndarray) -> np.ndarray:
    """Level ``li``'s public legal payloads (int64, ``(k, widths[li])``) for ``identities``."""
    from ._protocol import bytes_to_words

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
