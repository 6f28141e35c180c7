"""Reports as the server reads them: illegal reports replaced and counted, never raised on.

Sanitization
------------
Reports that are not legal outputs never raise: each is replaced by a public
uniformly random legal output keyed by ``(codebook seed, identity)`` (the
sanitize stream of the counter-based hash) and counted by reason:
``non_numeric`` (strings, None, objects), ``non_integer`` (NaN, +-inf,
fractions) and ``out_of_range`` (integers outside the identity's outputs).
Only a wrong number or shape of reports raises.

:class:`IntegerReports` gives :class:`~fastldp.oracles.FrequencyOracle` its
``sanitize`` for reports that are integers; :class:`MatrixReports` reads the
reports of the oracles whose report is a row.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Optional, Union

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._hash import SANITIZE_STREAM, hash_blocks
from .._sanitize import SanitizationReport, sanitization_counts, sanitization_report
from ..streaming import Partial

__all__ = ["REASONS", "IntegerReports", "MatrixReports", "public_uniform", "as_report_array",
           "classify_integers", "all_legal_report", "tally_report", "partial_report",
           "report_counts", "record_rows", "tally_masks"]

REASONS = ("non_numeric", "non_integer", "out_of_range")
_CAST_LIMIT = 2.0**62  # floats at or above this are out of range for every oracle


def public_uniform(seed: int, identities: np.ndarray, sizes: np.ndarray, word: int = 1) -> np.ndarray:
    """A public uniform value in ``[0, sizes[j])`` per identity (multiply-shift of a hash word).

    ``word`` picks one of the four words of block 0 of the sanitize stream
    (word 0 is the sign coin of :mod:`fastldp._sanitize`).
    """
    words = hash_blocks(seed, identities, 1, SANITIZE_STREAM)[:, 0, word]
    hi = (words >> np.uint64(32)).astype(np.float64)
    return np.minimum((hi / 2.0**32 * sizes).astype(np.int64), sizes - 1)


def as_report_array(reports) -> np.ndarray:
    """``numpy.asarray``, falling back to a 1-d object array for ragged input."""
    if isinstance(reports, np.ndarray):
        return reports
    try:
        return np.asarray(reports)
    except (ValueError, TypeError):
        items = list(reports)
        out = np.empty(len(items), dtype=object)
        for j, item in enumerate(items):
            out[j] = item
        return out


def _to_float(v) -> float:
    if isinstance(v, (str, bytes, complex, np.complexfloating)) or v is None:
        return float("nan")
    try:
        return float(v)
    except (TypeError, ValueError, OverflowError):
        return float("nan")


def _is_nan_number(v) -> bool:
    try:
        return isinstance(v, (float, np.floating)) and v != v
    except TypeError:
        return False


def classify_integers(arr: np.ndarray):
    """Read every entry of ``arr`` as an integer where it is one.

    Returns
    -------
    values : int64 array, the shape of ``arr``
        The integer, or -1 where the entry is not an integer (or is too
        large for any oracle's outputs).
    numeric, integral : bool arrays
        Entry is a real number; entry is a finite integer.
    wrong_dtype : bool
        ``arr`` is not an integer array.
    """
    shape = arr.shape
    if arr.dtype.kind in "iu":
        if arr.dtype.kind == "u" and arr.dtype.itemsize == 8:
            big = arr >= np.uint64(2**63)
            values = np.where(big, -1, arr.astype(np.int64))
            ok = np.ones(shape, dtype=bool)
            return values, ok, ok, False
        ok = np.ones(shape, dtype=bool)
        return arr.astype(np.int64), ok, ok, False
    with np.errstate(invalid="ignore"):
        try:
            if arr.dtype.kind not in "fb":
                raise TypeError
            as_float = arr.astype(np.float64)
            numeric = np.ones(shape, dtype=bool)
        except (TypeError, ValueError):
            flat = arr.ravel()
            as_float = np.array([_to_float(v) for v in flat], dtype=np.float64).reshape(shape)
            numeric = (~np.isnan(as_float)
                       | np.array([_is_nan_number(v) for v in flat], dtype=bool).reshape(shape))
    finite = np.isfinite(as_float)
    safe = np.where(finite, as_float, 0.0)
    integral = finite & (np.floor(safe) == safe)
    castable = integral & (np.abs(safe) < _CAST_LIMIT)
    values = np.where(castable, safe, -1).astype(np.int64)
    return values, numeric, integral, True


_Mask = Union[np.ndarray, np.bool_]  # a per-report mask (``.all(axis=1)`` types as either)


def all_legal_report(n: int) -> SanitizationReport:
    """The :class:`SanitizationReport` of ``n`` integer reports that were all legal as sent."""
    return SanitizationReport(n, n, {r: 0 for r in REASONS}, False)


def tally_report(n: int, numeric: _Mask, integral: _Mask, legal: _Mask,
                 wrong_dtype: bool) -> SanitizationReport:
    """The :class:`SanitizationReport` of ``n`` integer reports from their per-report masks.

    Each illegal report counts under its first reason: not a number, else
    not an integer, else out of range (``legal`` implies ``integral``
    implies ``numeric``).
    """
    by_reason = {
        "non_numeric": int((~numeric).sum()),
        "non_integer": int((numeric & ~integral).sum()),
        "out_of_range": int((integral & ~legal).sum()),
    }
    return SanitizationReport(n, int(legal.sum()), by_reason, wrong_dtype)


def partial_report(partial: Partial) -> SanitizationReport:
    """The :class:`SanitizationReport` of every report a (merged) partial holds."""
    return sanitization_report(partial.counts, partial.flags)


def report_counts(report: SanitizationReport) -> dict:
    """Sanitization counts with every oracle reason present (so partials merge)."""
    full = SanitizationReport(report.n_received, report.n_valid,
                              {r: int(report.by_reason.get(r, 0)) for r in REASONS},
                              report.wrong_dtype)
    return sanitization_counts(full)


class IntegerReports:
    """Mixin of :class:`~fastldp.oracles.FrequencyOracle`: ``sanitize`` for integer reports.

    It relies on the oracle's ``codebook_seed`` and ``output_sizes``.
    """

    codebook_seed: int

    if TYPE_CHECKING:  # given by FrequencyOracle
        def output_sizes(self, eps: np.ndarray) -> np.ndarray: ...

    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        """Replace illegal integer reports by a public uniform legal output; count them."""
        n = eps.shape[0]
        arr = as_report_array(reports)
        if arr.ndim != 1 or arr.shape[0] != n:
            raise ValueError(
                f"The 'reports' parameter of {owner} must be a 1-d array with one report per "
                f"budget ({n}). Got shape {arr.shape} instead."
            )
        sizes = self.output_sizes(eps)
        if arr.dtype.kind in "iu" and n and arr.dtype.itemsize <= 8:
            if arr.min() >= 0 and (arr.max() < sizes).all():
                return np.ascontiguousarray(arr, dtype=np.int64), all_legal_report(n)
        values, numeric, integral, wrong_dtype = classify_integers(arr)
        legal = integral & (values >= 0) & (values < sizes)
        out = values.copy()
        bad = ~legal
        if bad.any():
            out[bad] = public_uniform(self.codebook_seed, identities[bad], sizes[bad])
        return out, tally_report(n, numeric, integral, legal, wrong_dtype)


class MatrixReports:
    """Mixin of the oracles whose report is a row: FLH ``(index, bucket)``, OUE/SUE packed bits.

    The subclass gives ``_shape_error(owner, n, shape)``, which says the row's layout.
    """

    def _shape_error(self, owner: str, n: Optional[int],
                     shape: tuple[int, ...]) -> ValueError:  # pragma: no cover - abstract
        raise NotImplementedError

    def _n_reports(self, reports, owner):
        arr = as_report_array(reports)
        if arr.ndim != 2:
            raise self._shape_error(owner, None, arr.shape)
        return arr.shape[0]

    def _report_rows(self, reports, n: int, width: int, owner: str) -> np.ndarray:
        """``reports`` as an ``(n, width)`` array; any other shape is the subclass's error."""
        arr = as_report_array(reports)
        if arr.ndim != 2 or arr.shape != (n, width):
            raise self._shape_error(owner, n, arr.shape)
        return arr


# Fixed-width rows of several fields (the multidim and ranges families' reports)

def record_rows(reports: Any, width: int, owner: str, expected: str) -> tuple:
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


def tally_masks(n: int, masks: dict, reasons: tuple, wrong_dtype: bool) -> SanitizationReport:
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
