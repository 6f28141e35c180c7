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

from typing import Any

import numpy as np

from .._kernels._hash import SANITIZE_STREAM, hash_blocks
from .._sanitize import SanitizationReport, sanitization_counts, sanitization_report
from ..oracles._sanitizing import as_report_array
from ..streaming import Partial

__all__ = ["FREQUENCY_REASONS", "SMP_REASONS", "MEAN_REASONS", "report_rows", "tally",
           "report_counts", "partial_sanitization", "public_uniforms"]

FREQUENCY_REASONS = ("wrong_width", "non_numeric", "non_integer", "out_of_range")
SMP_REASONS = ("wrong_width", "non_numeric", "non_integer", "bad_index", "out_of_range")
MEAN_REASONS = ("wrong_width", "non_numeric", "non_finite", "bad_index", "illegal_value")


def report_rows(reports: Any, width: int, owner: str, expected: str) -> tuple:
    """``reports`` as an ``(n, width)`` array, and the mask of rows of another length.

    A rectangular array of another width (or rank) is the caller's shape
    error (``ValueError`` naming ``reports``); a ragged list of rows keeps
    its rows of the right length and marks the others (filled with 0).
    """
    arr = as_report_array(reports)
    if arr.dtype.kind in "US" and not isinstance(reports, np.ndarray):
        # numpy turned a list mixing numbers and strings into strings: keep each entry's type,
        # so that only the strings count as non-numeric
        arr = np.asarray(reports, dtype=object)
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
    """The report of ``n`` reports from one boolean mask per reason (first reason wins).

    ``masks[reason]`` marks the reports that have that fault; a report
    counts under the first of ``reasons`` it has, and is valid with none.
    """
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
