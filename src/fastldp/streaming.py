"""Exact, mergeable partial decodes: the state behind ``partial`` / ``merge`` / ``finalize``.

Every fastldp server estimator is a sum over reports. Its *partial* state
holds those sums for a chunk of reports; two partials merge by adding them;
``finalize`` turns the merged state into the same result object that
``estimate`` returns. ``estimate(...)`` is literally
``finalize(partial(...))``, so a decode split into any chunks, merged in any
order, on any number of processes, is **bit-identical** to the one-shot
decode.

That needs sums whose value does not depend on the order of the additions.
Floating-point sums do, so partials keep

* :class:`ExactSum`: the exact sum of float64 terms, per position of a
  length-``p`` vector, as integer digits (kernel :mod:`fastldp._kernels._exact`),
  rounded once, correctly, at ``finalize``;
* integer counts (Python ``int``, unbounded);
* minima and maxima.

Which estimator keeps which sums is written in each ``partial`` docstring;
the table is in the user guide ("Scaling out"). The state of a partial is
``O(p)`` whatever the number of reports: ``p`` positions times the digit
rows the values span (a handful for budgets and reports of ordinary size).

Serialization
-------------
Partials pickle, and :meth:`Partial.to_bytes` / :meth:`Partial.from_bytes`
give a self-describing byte string for checkpoints (an ``.npz`` archive with
a JSON header: no pickled objects, safe to load from storage).
"""

from __future__ import annotations

import io
import json
import math
from typing import Any, Iterable, Optional

import numpy as np
from numpy.typing import ArrayLike

from ._kernels import _exact

__all__ = ["ExactSum", "Partial", "PARTIAL_FORMAT_VERSION", "merge_all", "check_partial",
           "gamma_fixed_point"]

PARTIAL_FORMAT_VERSION = 1
_MAGIC = "fastldp-partial"
_COUNT_LIMIT = 1 << 36  # |count| times a 27-bit half mantissa stays below 2**63
_REPR_WIDTH = 200  # the most characters a repr takes (one line), as for the results


class ExactSum:
    """The exact sum, per position, of any number of float64 terms.

    Parameters
    ----------
    size : int
        Number of positions ``p`` (``size >= 0``).

    Notes
    -----
    The value is kept as signed integer digits at the fixed places
    ``2**(32 k)``, rows ``k_lo .. k_lo + W - 1`` (the rows the terms need,
    plus one for carries). Additions are exact and commute, so two sums of
    the same terms in any order and any grouping are the same number;
    :meth:`value` rounds it once to the nearest double (ties to even).

    Examples
    --------
    >>> from fastldp.streaming import ExactSum
    >>> s = ExactSum(1)
    >>> s.add([1e16]); s.add([1.0]); s.add([-1e16])
    >>> float(s.value()[0])
    1.0
    """

    __slots__ = ("size", "k_lo", "digits", "_pending", "_single")

    def __init__(self, size: int) -> None:
        self.size = int(size)
        self.k_lo = 0
        self.digits = np.zeros((0, self.size), dtype=np.int64)
        self._pending = 0  # additions per digit since the last normalize (an upper bound)
        # (values, shift) while the sum is int64 values at one shift (add_integers
        # only, see _single_after): value() then rounds them straight; else None
        self._single = None

    @classmethod
    def from_digits(cls, size: int, k_lo: int, digits: ArrayLike) -> "ExactSum":
        """The sum whose digit rows ``k_lo ..`` are ``digits`` (shape ``(W, size)``)."""
        out = cls(size)
        out.k_lo = int(k_lo)  # _single stays None: the digits may hold anything
        out.digits = np.array(digits, dtype=np.int64).reshape(-1, out.size)
        return out

    # ------------------------------------------------------------ window
    def _ensure_rows(self, k_min: int, k_max: int) -> None:
        """Grow the digit window to cover rows ``k_min .. k_max`` (+ a carry row)."""
        W = self.digits.shape[0]
        if W == 0:
            self.k_lo = k_min
            self.digits = np.zeros((k_max + 2 - k_min, self.size), dtype=np.int64)
            return
        lo = min(self.k_lo, k_min)
        hi = max(self.k_lo + W - 1, k_max + 1)
        if lo == self.k_lo and hi == self.k_lo + W - 1:
            return
        grown = np.zeros((hi - lo + 1, self.size), dtype=np.int64)
        grown[self.k_lo - lo:self.k_lo - lo + W] = self.digits
        self.k_lo, self.digits = lo, grown

    def _reserve(self, additions: int) -> None:
        if self._pending + additions > _exact.SAFE_ADDS:
            self.normalize()
        if additions > _exact.SAFE_ADDS:  # pragma: no cover - callers chunk below this
            raise ValueError("too many additions at once for one exact sum")
        self._pending += additions

    def normalize(self) -> None:
        """Carry every digit into ``[0, 2**32)`` (the value is unchanged)."""
        if self.digits.shape[0]:
            _exact.normalize(self.digits)
        self._pending = 0

    # ------------------------------------------------------------ additions
    def add(self, values: ArrayLike, index: Optional[ArrayLike] = None) -> None:
        """Add ``values[t]`` at position ``index[t]`` (default: position ``t``).

        Parameters
        ----------
        values : array_like of float64
            Finite terms (``ValueError`` otherwise).
        index : array_like of int, optional
            Positions in ``[0, size)``; repeated positions add up.
        """
        v = np.ascontiguousarray(values, dtype=np.float64).ravel()
        if index is None:
            if v.shape[0] > self.size:
                raise ValueError(f"ExactSum.add got {v.shape[0]} values for {self.size} positions")
            idx = None
            per_digit = 1
        else:
            idx = np.ascontiguousarray(index, dtype=np.int64).ravel()
            if idx.shape[0] != v.shape[0]:
                raise ValueError("ExactSum.add: index and values differ in length")
            if idx.shape[0] and (idx.min() < 0 or idx.max() >= self.size):
                raise ValueError(f"ExactSum.add: index outside [0, {self.size})")
            per_digit = v.shape[0]
        rng = _exact.digit_range(v)
        if rng is None:
            return
        self._single = None
        self._ensure_rows(*rng)
        # a long index list may hit one position many times: add in slices
        step = _exact.SAFE_ADDS // 2
        for start in range(0, v.shape[0], step) if per_digit > 1 else (0,):
            stop = start + step if per_digit > 1 else v.shape[0]
            self._reserve(min(per_digit, stop - start))
            _exact.add_values(self.digits, self.k_lo, None if idx is None else idx[start:stop],
                              v[start:stop])

    def add_terms(self, values: ArrayLike, n_threads: int = 1) -> None:
        """Add every one of ``values`` to position 0 (a scalar sum; ``size`` must be 1).

        One pass over the bits of the doubles (:func:`fastldp._kernels._exact.sum_terms`),
        split over ``n_threads`` from 32,768 values on (the sum does not depend on it).
        """
        if self.size != 1:
            raise ValueError("ExactSum.add_terms adds into a sum of size 1")
        v = np.ascontiguousarray(values, dtype=np.float64).ravel()
        k_lo, acc = _exact.sum_terms(v, int(n_threads))
        rows = np.flatnonzero(acc)
        if rows.shape[0] == 0:
            return
        self._single = None
        first, last = int(rows[0]), int(rows[-1])
        self._ensure_rows(k_lo + first, k_lo + last)
        self._reserve(2)  # a normalized digit and a signed top digit per row
        r0 = k_lo + first - self.k_lo
        self.digits[r0:r0 + last - first + 1, 0] += acc[first:last + 1]

    def add_repeated(self, value: float, count: int) -> None:
        """Add ``count`` copies of ``value`` to position 0 (``size`` must be 1), in O(1)."""
        if self.size != 1:
            raise ValueError("ExactSum.add_repeated adds into a sum of size 1")
        if int(count) < 0:
            raise ValueError(f"ExactSum.add_repeated: count must be in [0, 2**36), got {count}")
        self.add_multiples(np.array([int(count)], dtype=np.int64), value)

    def add_multiples(self, counts: ArrayLike, value: float) -> None:
        """Add ``counts[j] * value`` at every position ``j`` exactly (int64 ``counts``).

        ``value``'s 53-bit mantissa is split in two halves whose products
        with ``|counts| < 2**36`` are exact int64 values.
        """
        c = np.ascontiguousarray(counts, dtype=np.int64).ravel()
        if c.shape[0] and int(np.abs(c).max()) >= _COUNT_LIMIT:
            raise ValueError(f"ExactSum.add_multiples: counts must lie in (-2**36, 2**36), "
                             f"got {int(np.abs(c).max())}")
        value = float(value)
        if not math.isfinite(value):
            raise ValueError(f"exact sums take finite values; got {value!r}")
        if value == 0.0 or not c.any():
            return
        m, e = math.frexp(value)
        mantissa = int(math.ldexp(m, 53))  # signed, |mantissa| < 2**53
        sign = -1 if mantissa < 0 else 1
        hi, lo = divmod(abs(mantissa), 1 << 26)
        if hi:
            self.add_integers(c * (sign * hi), e - 53 + 26)
        if lo:
            self.add_integers(c * (sign * lo), e - 53)

    def add_integers(self, values: ArrayLike, shift: int = 0) -> None:
        """Add ``values[j] * 2**shift`` at every position ``j`` (int64 values)."""
        v = np.ascontiguousarray(values, dtype=np.int64).ravel()
        if v.shape[0] != self.size:
            raise ValueError(f"ExactSum.add_integers got {v.shape[0]} values for {self.size} "
                             "positions")
        if not v.any():
            return
        self._single = self._single_after(v, int(shift))
        self._ensure_rows(*_exact.int_digit_range(int(shift)))
        self._reserve(1)
        _exact.add_integers(self.digits, self.k_lo, v, int(shift))

    def _single_after(self, v: np.ndarray, shift: int):
        """``_single`` once ``v 2**shift`` is added: the running int64 sum while every
        addition was at this shift and no element can reach ``2**62``; else None."""
        if self.digits.shape[0] == 0:
            return v.copy(), shift
        if self._single is None or self._single[1] != shift:
            return None
        a = self._single[0]
        # Python ints: no int64 wrap in the bound itself (-INT64_MIN overflows)
        bound = max(-int(a.min()), int(a.max())) + max(-int(v.min()), int(v.max()))
        return (a + v, shift) if bound < (1 << 62) else None

    def merge(self, other: "ExactSum") -> "ExactSum":
        """Return a new sum holding ``self + other`` (neither is changed)."""
        if not isinstance(other, ExactSum) or other.size != self.size:
            raise ValueError("ExactSum.merge needs an ExactSum of the same size")
        out = self.copy()
        if other.digits.shape[0]:
            out._ensure_rows(other.k_lo, other.k_lo + other.digits.shape[0] - 2)
            out.normalize()
            b = other.copy()
            b.normalize()
            r0 = b.k_lo - out.k_lo
            out.digits[r0:r0 + b.digits.shape[0]] += b.digits
            out._single = None
            out._pending = 2
        return out

    def copy(self) -> "ExactSum":
        out = ExactSum(self.size)
        out.k_lo, out.digits, out._pending = self.k_lo, self.digits.copy(), self._pending
        out._single = self._single  # its array is never written: sharing it is safe
        return out

    # ------------------------------------------------------------ reading
    def value(self) -> np.ndarray:
        """The exact sums, each rounded once to the nearest double."""
        if self._single is not None and -1000 <= self._single[1] <= 900:
            # one term v 2^shift: the int64 -> float64 conversion rounds v
            # once to nearest (ties to even), and a power of two in this
            # range scales it exactly (|v| < 2^63, no overflow; |v| >= 1, no
            # subnormal): the correctly rounded value, without the digits
            values, shift = self._single
            return np.ldexp(values.astype(np.float64), shift)
        d = self.digits
        if (self.k_lo == 0 and d.shape[0] and not d[2:].any()
                and np.abs(d[0]).max(initial=0) < (1 << 60)
                and (d.shape[0] == 1 or np.abs(d[1]).max(initial=0) < (1 << 28))):
            # integer sums below 2**61 (counts): one int64 -> float64 rounding
            # is the correctly rounded value
            return (d[0] + (d[1] << 32) if d.shape[0] > 1 else d[0]).astype(np.float64)
        return _exact.to_double(d, self.k_lo)

    def residue(self, bits: int) -> np.ndarray:
        """The exact value modulo ``2**bits`` (``bits <= 64``) of integer sums, as uint64.

        Raises ``ValueError`` when a sum has a fractional part.
        """
        k_lo, d = self.canonical()
        out = np.zeros(self.size, dtype=np.uint64)
        if d.shape[0] == 0:
            return out
        if k_lo < 0:
            if d[:-k_lo].any():
                raise ValueError("ExactSum.residue: the sums are not integers")
            d, k_lo = d[-k_lo:], 0
        with np.errstate(over="ignore"):
            for r in range(d.shape[0]):
                place = 32 * (k_lo + r)
                if place >= 64:
                    break  # multiples of 2**64 vanish modulo 2**bits
                out += d[r].astype(np.uint64) << np.uint64(place)
        if bits < 64:
            out &= np.uint64((1 << bits) - 1)
        return out

    def canonical(self) -> tuple[int, np.ndarray]:
        """``(k_lo, digits)`` with the window trimmed and digits normalized.

        Compact, for storage; compare values with ``==``.
        """
        c = self.copy()
        c.normalize()
        d = c.digits
        if d.shape[0] == 0:
            return 0, d
        rows = np.flatnonzero(d.any(axis=1))
        if rows.shape[0] == 0:
            return 0, d[:0]
        return c.k_lo + int(rows[0]), d[rows[0]:rows[-1] + 1]

    def _aligned(self, k_lo: int, rows: int) -> np.ndarray:
        """The digits in the window ``k_lo .. k_lo + rows - 1``, normalized there.

        Within one window the normalized digits of a value are unique (every
        row but the top in ``[0, 2**32)``), which :meth:`__eq__` relies on.
        """
        out = np.zeros((rows, self.size), dtype=np.int64)
        r0 = self.k_lo - k_lo
        out[r0:r0 + self.digits.shape[0]] = self.digits
        _exact.normalize(out)
        return out

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ExactSum) or other.size != self.size:
            return NotImplemented
        windows = [(s.k_lo, s.k_lo + s.digits.shape[0]) for s in (self, other) if s.digits.shape[0]]
        if not windows:
            return True
        lo = min(w[0] for w in windows)
        hi = max(w[1] for w in windows) + 1  # a spare row for the sign
        return bool(np.array_equal(self._aligned(lo, hi - lo), other._aligned(lo, hi - lo)))

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    def __repr__(self) -> str:
        return f"ExactSum(size={self.size}, rows={self.digits.shape[0]})"

    def __getstate__(self) -> dict[str, Any]:
        k, d = self.canonical()
        return {"size": self.size, "k_lo": k, "digits": d}

    def __setstate__(self, state: dict[str, Any]) -> None:
        other = ExactSum.from_digits(state["size"], state["k_lo"], state["digits"])
        self.size, self.k_lo, self.digits, self._pending = other.size, other.k_lo, other.digits, 0
        self._single = None


def _merge_extreme(a, b, pick):
    """``pick(a, b)`` where both are known; ``None`` marks an empty chunk."""
    if a is None:
        return b
    if b is None:
        return a
    return pick(a, b)


class Partial:
    """A server estimator's state over a chunk of reports: exact, mergeable, O(p).

    Build one with an estimator's ``partial`` method, combine with
    ``merge`` (or ``a.merge(b)``), and turn into a result with the
    estimator's ``finalize``.

    Attributes
    ----------
    mechanism : str
        The estimator's class name.
    params : dict
        Its public parameters (JSON values); partials of different
        parameters refuse to merge, and ``finalize`` refuses a partial of
        another mechanism.
    sums : dict of str to ExactSum
    counts : dict of str to int
    minima, maxima : dict of str to float or None
    flags : dict of str to bool
        Or-merged flags (e.g. "some chunk arrived with the wrong dtype").

    Examples
    --------
    Two chunks of reports, decoded apart and merged, give the one-shot
    estimate bit for bit; a partial survives a round trip through bytes:

    >>> from fastldp import GRR
    >>> from fastldp.streaming import Partial
    >>> grr = GRR(domain_size=3, epsilon=2.0, codebook_seed=0)
    >>> reports = grr.privatize([0, 1, 1, 2, 2, 2], rng=0)
    >>> merged = grr.merge(grr.partial(reports[:4]), grr.partial(reports[4:]))
    >>> merged.counts["n"]
    6
    >>> bool((grr.finalize(merged).counts == grr.estimate(reports).counts).all())
    True
    >>> Partial.from_bytes(merged.to_bytes()) == merged
    True
    """

    __slots__ = ("mechanism", "params", "sums", "counts", "minima", "maxima", "flags")

    def __init__(self, mechanism: str, params: dict[str, Any], *,
                 sums: Optional[dict[str, ExactSum]] = None,
                 counts: Optional[dict[str, int]] = None,
                 minima: Optional[dict[str, Optional[float]]] = None,
                 maxima: Optional[dict[str, Optional[float]]] = None,
                 flags: Optional[dict[str, bool]] = None) -> None:
        self.mechanism = str(mechanism)
        self.params = dict(params)
        self.sums = dict(sums or {})
        self.counts = {k: int(v) for k, v in (counts or {}).items()}
        self.minima = dict(minima or {})
        self.maxima = dict(maxima or {})
        self.flags = {k: bool(v) for k, v in (flags or {}).items()}

    # ------------------------------------------------------------ merging
    def check_compatible(self, other: "Partial", owner: str = "Partial.merge") -> None:
        """Raise ``ValueError`` unless ``other`` is a partial of the same mechanism."""
        if not isinstance(other, Partial):
            raise TypeError(f"{owner} merges Partial objects; got {type(other).__name__}")
        if other.mechanism != self.mechanism or other.params != self.params:
            raise ValueError(
                f"{owner}: cannot merge a partial of {other.mechanism}({_brief(other.params)}) "
                f"into one of {self.mechanism}({_brief(self.params)}); partials merge only "
                "when the mechanism and every public parameter agree")
        if set(other.sums) != set(self.sums) or set(other.counts) != set(self.counts):
            raise ValueError(f"{owner}: the partials hold different sums")

    def merge(self, other: "Partial") -> "Partial":
        """Return the partial of both chunks (exact; neither input changes)."""
        self.check_compatible(other)
        return Partial(
            self.mechanism, self.params,
            sums={k: s.merge(other.sums[k]) for k, s in self.sums.items()},
            counts={k: v + other.counts[k] for k, v in self.counts.items()},
            minima={k: _merge_extreme(self.minima.get(k), other.minima.get(k), min)
                    for k in set(self.minima) | set(other.minima)},
            maxima={k: _merge_extreme(self.maxima.get(k), other.maxima.get(k), max)
                    for k in set(self.maxima) | set(other.maxima)},
            flags={k: self.flags.get(k, False) or other.flags.get(k, False)
                   for k in set(self.flags) | set(other.flags)},
        )

    __add__ = merge

    # ------------------------------------------------------------ equality, bytes
    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Partial):
            return NotImplemented
        return (self.mechanism == other.mechanism and self.params == other.params
                and self.counts == other.counts and self.minima == other.minima
                and self.maxima == other.maxima and self.flags == other.flags
                and self.sums.keys() == other.sums.keys()
                and all(self.sums[k] == other.sums[k] for k in self.sums))

    __hash__ = None  # type: ignore[assignment]  # mutable: not hashable

    def __repr__(self) -> str:
        n = self.counts.get("n")
        text = (f"Partial({self.mechanism}, n={n}, sums={sorted(self.sums)}, "
                f"counts={sorted(self.counts)})")
        if len(text) > _REPR_WIDTH:  # one short line, however many sums and counts
            text = text[:_REPR_WIDTH - 4] + "...)"
        return text

    def __getstate__(self) -> dict[str, Any]:
        return {name: getattr(self, name) for name in self.__slots__}

    def __setstate__(self, state: dict[str, Any]) -> None:
        for name in self.__slots__:
            setattr(self, name, state[name])

    def to_bytes(self) -> bytes:
        """Serialize to a self-describing ``.npz`` byte string (no pickled objects)."""
        header: dict[str, Any] = {
            "format": _MAGIC, "version": PARTIAL_FORMAT_VERSION,
            "mechanism": self.mechanism, "params": self.params,
            "counts": {k: str(v) for k, v in self.counts.items()},  # ints may exceed 64 bits
            "minima": {k: _float_text(v) for k, v in self.minima.items()},
            "maxima": {k: _float_text(v) for k, v in self.maxima.items()},
            "flags": self.flags,
            "sums": {},
        }
        arrays: dict[str, Any] = {}  # Any: savez's own keywords (allow_pickle) are not arrays
        for i, (name, s) in enumerate(sorted(self.sums.items())):
            k_lo, digits = s.canonical()
            header["sums"][name] = {"size": s.size, "k_lo": k_lo, "array": f"s{i}"}
            arrays[f"s{i}"] = digits
        buf = io.BytesIO()
        np.savez(buf, header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
                 **arrays)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "Partial":
        """Inverse of :meth:`to_bytes`; raises ``ValueError`` on anything else."""
        try:
            with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as z:
                header = json.loads(z["header"].tobytes().decode())
                if header.get("format") != _MAGIC:
                    raise KeyError("format")
                if header.get("version") != PARTIAL_FORMAT_VERSION:
                    raise _VersionError(f"Partial.from_bytes: partial format version "
                                        f"{header.get('version')!r}; this fastldp reads "
                                        f"{PARTIAL_FORMAT_VERSION}")
                sums = {}
                for name, meta in header["sums"].items():
                    sums[name] = ExactSum.from_digits(int(meta["size"]), int(meta["k_lo"]),
                                                      z[meta["array"]])
        except _VersionError as exc:
            raise ValueError(str(exc)) from None
        except Exception as exc:  # zip, key and JSON errors: one clear message
            raise ValueError(f"Partial.from_bytes: not a fastldp partial ({exc})") from None
        return cls(header["mechanism"], header["params"], sums=sums,
                   counts={k: int(v) for k, v in header["counts"].items()},
                   minima={k: _float_value(v) for k, v in header["minima"].items()},
                   maxima={k: _float_value(v) for k, v in header["maxima"].items()},
                   flags=header["flags"])


class _VersionError(Exception):
    pass


def _float_text(v):
    return None if v is None else float(v).hex()


def _float_value(v):
    return None if v is None else float.fromhex(v)


def _brief(params: dict) -> str:
    return ", ".join(f"{k}={v!r}" for k, v in params.items())


def check_partial(partial: Any, mechanism: str, params: dict, owner: str) -> Partial:
    """Raise unless ``partial`` is a :class:`Partial` of this mechanism and parameters."""
    if not isinstance(partial, Partial):
        raise TypeError(f"The 'partial' parameter of {owner} must be a fastldp.streaming.Partial "
                        f"(from partial() or merge()). Got {type(partial).__name__} instead.")
    if partial.mechanism != mechanism or partial.params != params:
        raise ValueError(
            f"The 'partial' parameter of {owner} holds reports of "
            f"{partial.mechanism}({_brief(partial.params)}), not of "
            f"{mechanism}({_brief(params)}): it cannot be finalized here")
    return partial


def chunk_length(reports: Any, owner: str) -> int:
    """Number of reports in a chunk (``0`` allowed), or a clear error for a non-array."""
    try:
        shape = np.shape(reports)
    except ValueError:
        shape = ("ragged",)
    if len(shape) < 1 or not isinstance(shape[0], int):
        raise ValueError(f"The 'reports' parameter of {owner} must be an array with one report "
                         f"per identity along its first axis. Got shape {shape} instead.")
    return shape[0]


def merge_all(partials: Iterable[Partial]) -> Partial:
    """Merge an iterable of partials pairwise as a balanced tree (any order gives the same)."""
    items = list(partials)
    if not items:
        raise ValueError("merge_all needs at least one partial")
    while len(items) > 1:
        items = [items[i].merge(items[i + 1]) if i + 1 < len(items) else items[i]
                 for i in range(0, len(items), 2)]
    return items[0]


def gamma_fixed_point(eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Put ``gamma = tanh(eps / 2)`` on the 32-significant-bit grid of the integer sketches.

    Returns ``(q, x)`` with ``gamma ~= q * 2**(x - 32)``, ``q`` an int64 in
    ``[2**31, 2**32]`` (the mantissa rounded to nearest) and ``x`` the
    binary exponent of ``gamma`` (``gamma = m * 2**x``, ``m in [0.5, 1)``).
    The relative error is at most ``2**-32`` (half a unit in the last
    place of a mantissa of at least ``2**31``) for every ``eps`` down to the
    smallest accepted budget; the exponent keeps tiny budgets from rounding
    to zero, which a fixed number of fractional bits would do.
    """
    return fixed_point_of(np.tanh(np.asarray(eps, dtype=np.float64) / 2.0))


def fixed_point_of(gamma: np.ndarray, n_threads: int = 1) -> tuple[np.ndarray, np.ndarray]:
    """:func:`gamma_fixed_point` of given ``gamma`` values in ``(0, 1]``.

    One compiled pass (:func:`fastldp._kernels._exact.fixed_point`), equal
    to ``numpy.frexp`` then ``numpy.rint(numpy.ldexp(m, 32))``, which took
    five array passes; ``n_threads`` split it (the result does not depend on it).
    """
    return _exact.fixed_point(np.ascontiguousarray(gamma, dtype=np.float64), int(n_threads))

