"""Deterministic sanitization of received one-bit packets (paper 000, Alg. 2 step 1).

Every packet is projected to ``{-1, +1}``:

==================  =========================================  ===============
packet              projected to                               counted as
==================  =========================================  ===============
exactly -1 or +1    itself                                     valid
finite, not +-1     its sign                                   out_of_alphabet
+inf / -inf         its sign                                   infinite
0                   public coin of (codebook seed, identity)   zero
NaN                 public coin of (codebook seed, identity)   nan
not a real number   public coin of (codebook seed, identity)   non_numeric
==================  =========================================  ===============

The public coin is bit 0 of stream 2 of the counter-based hash: it is fixed
by the codebook and the identity, so sanitization is deterministic, and a
sign-less packet cannot push every coordinate the same way. Non-numeric
arrays (object, string, complex) are converted element by element; booleans
are read as 1/0. The decoder never raises on packet contents; it raises only
when the number of packets does not match the number of budgets.
"""

from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from ._kernels._hash import SANITIZE_STREAM, hash_blocks

__all__ = ["SanitizationReport", "sanitize_bits", "sanitization_counts", "sanitization_report"]

REASONS = ("out_of_alphabet", "infinite", "zero", "nan", "non_numeric")


@dataclass(frozen=True)
class SanitizationReport:
    """Counts of received packets by what sanitization did to them.

    Attributes
    ----------
    n_received : int
    n_valid : int
        Packets that were exactly -1 or +1.
    by_reason : dict[str, int]
        Malformed packets by reason (keys in ``REASONS``).
    wrong_dtype : bool
        True when the packets did not arrive as a real numeric array.
    """

    n_received: int
    n_valid: int
    by_reason: dict = field(default_factory=dict)
    wrong_dtype: bool = False

    @property
    def n_sanitized(self) -> int:
        """Number of packets that were not exactly -1 or +1."""
        return self.n_received - self.n_valid


def _public_coins(seed: int, identities: np.ndarray) -> np.ndarray:
    words = hash_blocks(seed, identities, 1, SANITIZE_STREAM)[:, 0, 0]
    return np.where((words & np.uint64(1)) == 0, 1, -1).astype(np.int8)


def _all_plus_minus_one(arr: np.ndarray) -> bool:
    """True when every entry is -1 or +1 (checked in blocks, no length-n temporary)."""
    for start in range(0, arr.shape[0], 1 << 16):
        block = arr[start:start + (1 << 16)]
        if not np.all((block == 1) | (block == -1)):
            return False
    return True


def _as_float(values) -> tuple[np.ndarray, np.ndarray]:
    """Convert element by element; returns floats and a non-numeric mask."""
    flat = np.asarray(values, dtype=object).ravel()
    out = np.empty(flat.shape[0], dtype=np.float64)
    bad = np.zeros(flat.shape[0], dtype=bool)
    for j, v in enumerate(flat):
        if isinstance(v, (str, bytes, complex, np.complexfloating)) or v is None:
            bad[j] = True
            out[j] = 0.0
            continue
        try:
            out[j] = float(v)
        except (TypeError, ValueError, OverflowError):
            bad[j] = True
            out[j] = 0.0
    return out, bad


def sanitize_bits(reports, n: int, seed: int, identities: np.ndarray, owner: str):
    """Project ``reports`` to int8 ``{-1, +1}`` and count what was changed.

    Parameters
    ----------
    reports : array_like, length n
    n : int
        Expected number of packets (one per committed budget).
    seed : int
        Codebook seed (for the public coin).
    identities : uint64 array or None
        ``None`` means ``0 .. n-1``.
    owner : str
        Name used in the error message.

    Returns
    -------
    bits : int8 array of {-1, +1}
    report : SanitizationReport
    """
    arr = np.asarray(reports) if not isinstance(reports, np.ndarray) else reports
    if arr.ndim != 1 or arr.shape[0] != n:
        raise ValueError(
            f"The 'reports' parameter of {owner} must be a 1-d array with one packet per "
            f"budget ({n}). Got shape {arr.shape} instead."
        )
    if arr.dtype == np.int8 and _all_plus_minus_one(arr):
        return np.ascontiguousarray(arr), SanitizationReport(n, n, {r: 0 for r in REASONS})
    kind = arr.dtype.kind
    wrong_dtype = kind not in "iuf"
    if kind in "iufb":
        values = arr.astype(np.float64)
        non_numeric = np.zeros(n, dtype=bool)
    else:
        values, non_numeric = _as_float(arr)
    valid = (values == 1.0) | (values == -1.0)
    nan = np.isnan(values) & ~non_numeric
    zero = (values == 0.0) & ~non_numeric
    inf = np.isinf(values)
    out_of_alphabet = ~(valid | nan | zero | inf | non_numeric)
    bits = np.where(values > 0, 1, -1).astype(np.int8)
    coin = nan | zero | non_numeric
    if coin.any():
        who = identities[coin] if identities is not None else np.flatnonzero(coin).astype(np.uint64)
        coins = _public_coins(seed, who)
        bits[coin] = coins
    by_reason = {
        "out_of_alphabet": int(out_of_alphabet.sum()),
        "infinite": int(inf.sum()),
        "zero": int(zero.sum()),
        "nan": int(nan.sum()),
        "non_numeric": int(non_numeric.sum()),
    }
    return bits, SanitizationReport(n, int(valid.sum()), by_reason, wrong_dtype)


def sanitization_counts(report: SanitizationReport) -> dict:
    """The report as the integer counts a streaming partial keeps (and merges by adding)."""
    counts = {"n": int(report.n_received), "n_valid": int(report.n_valid)}
    counts.update({f"reason:{k}": int(v) for k, v in report.by_reason.items()})
    return counts


def sanitization_report(counts: dict, flags: dict) -> SanitizationReport:
    """Inverse of :func:`sanitization_counts` (after any number of merges)."""
    reasons = {k.split(":", 1)[1]: int(v) for k, v in counts.items() if k.startswith("reason:")}
    return SanitizationReport(int(counts["n"]), int(counts["n_valid"]), reasons,
                              bool(flags.get("wrong_dtype", False)))
