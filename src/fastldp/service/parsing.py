"""Checking a request body of ``POST /v1/reports``: bounded JSON and Arrow parsing.

A body is parsed against public limits before anything proportional to what
it *declares* is allocated:

* ``max_body`` bytes on the wire (the route checks it while reading);
* ``max_rows`` rows per batch (default ``max_body // 8``: one row per 8
  bytes of body, the size of a ``uint64`` identity alone);
* ``max_decoded_bytes`` per Arrow stream: the buffers of its record batches,
  decompressed, hold at most ``max_rows * (32 + 8 * r)`` bytes (``r``
  numbers per report: 8 bytes each for the identity, the budget, the list
  offset, each report entry and the validity bitmaps) plus 64 bytes of
  padding per buffer;
* at most :data:`MAX_RECORD_BATCHES` record batches per Arrow stream.

An Arrow stream is read message by message (:class:`pyarrow.ipc.MessageReader`):
the row count and every buffer's decompressed length are read from the
record batch's flatbuffer metadata (and the 8-byte length that prefixes a
compressed buffer) **before** the batch is decompressed, so a compression
bomb (25 KB declaring 25 million rows) is refused (413) having allocated
nothing. Each decoded batch is checked (schema, exact report shape per row,
nulls, the token's identity range) before the next is read.

JSON is parsed by :func:`json.loads` (exact Python integers, so identities
up to ``2**64 - 1`` round-trip), then checked level by level with
C-level passes (``map``, ``min``, ``max``, :func:`itertools.chain`), never
by a Python loop over the rows; nesting deeper than the recursion limit is
a 422, not a ``RecursionError``.

Every refusal is a :class:`Refusal` (picklable: large JSON bodies are parsed
in a worker process) carrying the HTTP status, the reason counted in
``/v1/stats`` and a detail that names the parameter, the allowed range and
the value given.
"""

from __future__ import annotations

import itertools
import json
import math
import re
import struct
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

__all__ = ["Refusal", "Malformed", "TooLarge", "ForbiddenIdentity", "Limits", "BatchParser",
           "KEY_PATTERN", "MAX_RECORD_BATCHES", "default_max_rows", "check_key", "Who",
           "lower_priority"]

ARROW_TYPE = "application/vnd.apache.arrow.stream"
MAX_RECORD_BATCHES = 4096  # a stream of many tiny batches costs Python work per batch
MAX_NAMED = 100  # identities named in a 403
KEY_PATTERN = re.compile(r"[A-Za-z0-9._:-]{1,128}")  # used with fullmatch: no trailing "\n"
_EOS = b"\xff\xff\xff\xff\x00\x00\x00\x00"
_LEGACY_EOS = b"\x00\x00\x00\x00"  # Arrow < 0.15 wrote a 4-byte end-of-stream marker


class Refusal(ValueError):
    """A request body refused with an HTTP status, a counted reason and a detail."""

    reason = "malformed"
    status = 422

    def __init__(self, detail: str, extra: Optional[dict] = None) -> None:
        super().__init__(detail)
        self.extra = dict(extra or {})

    def __reduce__(self):  # the worker process sends refusals back pickled
        return (type(self), (str(self), self.extra))


class Malformed(Refusal):
    """A request body that does not hold a batch of this mechanism (HTTP 422)."""


class TooLarge(Refusal):
    """A batch over a public limit: rows, decoded bytes or record batches (HTTP 413)."""

    reason = "too_large"
    status = 413


class ForbiddenIdentity(Refusal):
    """Identities outside the token's range (HTTP 403; at most 100 of them named)."""

    reason = "forbidden_identity"
    status = 403


def default_max_rows(max_body: int) -> int:
    """``max_body // 8`` (at least 1): one row per 8 bytes of body, a ``uint64`` identity's size."""
    return max(1, int(max_body) // 8)


@dataclass(frozen=True)
class Limits:
    """The public limits of one batch (see the module docstring)."""

    max_rows: int
    max_decoded_bytes: int
    max_record_batches: int = MAX_RECORD_BATCHES

    @classmethod
    def derive(cls, max_body: int, report_shape: tuple,
               max_rows: Optional[int] = None) -> "Limits":
        """The limits of a collector: ``max_rows`` defaults to :func:`default_max_rows`."""
        rows = default_max_rows(max_body) if max_rows is None else int(max_rows)
        if not rows >= 1:
            raise ValueError(f"The 'max_rows' parameter must be an integer >= 1. Got {rows!r} "
                             "instead.")
        per_report = int(np.prod(report_shape)) if report_shape else 1
        return cls(rows, rows * (32 + 8 * per_report))


def check_key(key: Any) -> str:
    """The idempotency key if it is 1 to 128 of ``[A-Za-z0-9._:-]`` (the whole string), else 422."""
    if not isinstance(key, str) or KEY_PATTERN.fullmatch(key) is None:
        shown = repr(key) if isinstance(key, str) and len(key) <= 140 else type(key).__name__
        raise Malformed("an idempotency key of 1 to 128 characters [A-Za-z0-9._:-] is required "
                        "(the JSON field 'idempotency_key', or the header 'Idempotency-Key' "
                        f"with Arrow); got {shown}")
    return key


@dataclass(frozen=True)
class Who:
    """The token a batch came with: its name and identity range (``None``: every identity)."""

    name: str
    lo: Optional[int] = None
    hi: Optional[int] = None


def _check_range(ids: np.ndarray, who: Optional[Who]) -> None:
    """403 naming at most :data:`MAX_NAMED` identities outside the token's range (vectorized)."""
    if who is None or who.lo is None or ids.size == 0:
        return
    lo, hi = np.uint64(who.lo), np.uint64(who.hi)
    if int(ids.min()) >= who.lo and int(ids.max()) <= who.hi:
        return
    outside = ids[(ids < lo) | (ids > hi)][:MAX_NAMED]
    raise ForbiddenIdentity(f"the token of {who.name!r} may report identities "
                            f"{who.lo}..{who.hi} only",
                            {"identities": [int(i) for i in outside]})


def _type_names(types: set) -> str:
    return ", ".join(sorted(t.__name__ for t in types))


def _refuse_constant(name: str) -> Any:
    raise Malformed(f"the body is not JSON: {name} is not a JSON number")


def _object(pairs: list) -> dict:
    keys = [k for k, _ in pairs]
    if len(set(keys)) != len(keys):
        twice = sorted({k for k in keys if keys.count(k) > 1})
        raise Malformed(f"the JSON object repeats the fields {twice}")
    return dict(pairs)


# ---------------------------------------------------------------------- flatbuffers
class _Corrupt(Exception):
    pass


_STRUCTS = {fmt: struct.Struct(fmt) for fmt in ("<i", "<I", "<H", "<B", "<q")}


def _unpack(fmt: str, buf: Any, pos: int) -> Any:
    unpacker = _STRUCTS[fmt]
    if pos < 0 or pos + unpacker.size > len(buf):
        raise _Corrupt
    return unpacker.unpack_from(buf, pos)[0]


class _Table:
    """A flatbuffer table: scalar, table and vector fields by index, every read bounds-checked."""

    def __init__(self, buf: Any, pos: int) -> None:
        self.buf, self.pos = buf, pos
        self.vt = pos - _unpack("<i", buf, pos)
        self.vt_size = _unpack("<H", buf, self.vt)
        if self.vt_size < 4 or self.vt_size % 2:
            raise _Corrupt

    def _offset(self, field: int) -> int:
        at = 4 + 2 * field
        return 0 if at + 2 > self.vt_size else _unpack("<H", self.buf, self.vt + at)

    def scalar(self, field: int, fmt: str) -> Any:
        off = self._offset(field)
        return 0 if off == 0 else _unpack(fmt, self.buf, self.pos + off)

    def table(self, field: int) -> Optional["_Table"]:
        off = self._offset(field)
        if off == 0:
            return None
        at = self.pos + off
        return _Table(self.buf, at + _unpack("<I", self.buf, at))

    def structs(self, field: int, size: int) -> tuple[int, int]:
        """``(position of the first element, count)`` of a vector of ``size``-byte structs."""
        off = self._offset(field)
        if off == 0:
            return 0, 0
        at = self.pos + off
        start = at + _unpack("<I", self.buf, at)
        count = _unpack("<I", self.buf, start)
        if start + 4 + count * size > len(self.buf):
            raise _Corrupt
        return start + 4, count


@dataclass
class _BatchHeader:
    rows: int
    decoded_bytes: int
    n_buffers: int


def _record_batch_header(metadata: Any, body: Any) -> _BatchHeader:
    """Rows and decompressed bytes of a record batch message, read before decoding it.

    ``Message { version: short; header_type: ubyte; header: RecordBatch; bodyLength: long }``,
    ``RecordBatch { length: long; nodes: [FieldNode]; buffers: [Buffer]; compression }``
    (Arrow's ``Message.fbs``); a compressed buffer starts with its int64
    decompressed length (-1: stored uncompressed).
    """
    try:
        root = _Table(metadata, _unpack("<I", metadata, 0))
        if root.scalar(1, "<B") != 3:  # MessageHeader.RecordBatch
            raise _Corrupt
        batch = root.table(2)
        if batch is None:
            raise _Corrupt
        rows = batch.scalar(0, "<q")
        first, n_buffers = batch.structs(2, 16)
        compressed = batch.table(3) is not None
        decoded = 0
        pairs = struct.unpack_from(f"<{2 * n_buffers}q", metadata, first)  # bounds: structs()
        for i in range(n_buffers):
            offset, length = pairs[2 * i], pairs[2 * i + 1]
            if offset < 0 or length < 0 or offset + length > len(body):
                raise _Corrupt
            if compressed and length > 0:
                if length < 8:
                    raise _Corrupt
                size = _unpack("<q", body, offset)
                decoded += length - 8 if size == -1 else size
                if size < -1:
                    raise _Corrupt
            else:
                decoded += length
    except (_Corrupt, struct.error):
        raise Malformed("the Arrow stream is corrupt: a record batch's metadata (row count, "
                        "buffer offsets or lengths) does not fit its message") from None
    if rows < 0:
        raise Malformed(f"the Arrow stream is corrupt: a record batch declares {rows} rows")
    return _BatchHeader(rows, decoded, n_buffers)


# ---------------------------------------------------------------------- the parser
class BatchParser:
    """Check a request body against the mechanism and the limits; return its arrays.

    Picklable (it holds the mechanism's name, budget and report layout, not
    the mechanism): large JSON bodies are parsed in a worker process.

    Parameters
    ----------
    mechanism : streaming estimator
        The collector's mechanism.
    report_shape, report_dtype : tuple, numpy dtype
        What one report is and how the store keeps it
        (:func:`fastldp.service.app.probe_reports`).
    limits : Limits, optional
        Default: ``Limits.derive(16 MiB, report_shape)``.
    """

    def __init__(self, mechanism: Any, report_shape: tuple, report_dtype: np.dtype,
                 limits: Optional[Limits] = None) -> None:
        from ..reports import _fixed_epsilon

        self.name = type(mechanism).__name__
        self.fixed = _fixed_epsilon(mechanism)
        self.report_shape = tuple(report_shape)
        self.report_dtype = np.dtype(report_dtype)
        self.limits = limits or Limits.derive(16 << 20, self.report_shape)

    # ------------------------------------------------------------------ shared checks
    def _rows(self, n: int) -> None:
        if n > self.limits.max_rows:
            raise TooLarge(f"the batch has {n} rows; the limit is {self.limits.max_rows} "
                           "(--max-rows)")

    def _epsilons(self, eps: Optional[np.ndarray], n: int) -> np.ndarray:
        if eps is None:
            if self.fixed is None:
                raise Malformed(f"{self.name} takes personal budgets: 'epsilons' (or the Arrow "
                                "column 'epsilon') is required")
            return np.full(n, self.fixed)
        if eps.shape != (n,):
            raise Malformed(f"'epsilons' must hold {n} numbers (one per identity); "
                            f"got shape {list(eps.shape)}")
        ok = np.isfinite(eps) & (eps > 0)
        if not ok.all():
            bad = eps[~ok][0]
            raise Malformed(f"'epsilons' must be finite numbers > 0; got {bad!r}")
        if self.fixed is not None and not np.all(eps == self.fixed):
            raise Malformed(f"{self.name} has the fixed epsilon={self.fixed!r}; every epsilon "
                            "must equal it (or be omitted)")
        return eps

    def _integer_range(self, lo: int, hi: int) -> None:
        info = np.iinfo(self.report_dtype)  # stored as given: no value may wrap
        if lo < info.min or hi > info.max:
            raise Malformed(f"reports of {self.name} are stored as {self.report_dtype} "
                            f"({info.min}..{info.max}); got values {lo}..{hi}")

    def _finite(self, values: np.ndarray) -> None:
        if values.size and not np.isfinite(values).all():
            bad = values[~np.isfinite(values)][0]
            raise Malformed(f"reports of {self.name} must be finite numbers; got {bad!r}")

    def _reports(self, values: np.ndarray) -> np.ndarray:
        """Numeric report values (any shape) in the store's dtype, or 422."""
        if self.report_dtype.kind in "iu":
            if values.dtype.kind not in "iu":
                raise Malformed(f"reports of {self.name} are integers; got {values.dtype} values")
            if values.size:
                self._integer_range(int(values.min()), int(values.max()))
        elif values.dtype.kind not in "iuf":
            raise Malformed(f"reports of {self.name} are numbers; got {values.dtype} values")
        out = np.ascontiguousarray(values, dtype=self.report_dtype)
        if out.dtype.kind == "f":
            self._finite(out)
        return out

    def arrays(self, ids: Any, eps: Any, reps: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Checked ``(identities, epsilons, reports)`` in the store's types, or :class:`Malformed`.

        For arrays already parsed (``ids`` integers, ``reps`` numeric); the
        request paths are :meth:`from_json` and :meth:`from_arrow`.
        """
        ids = np.asarray(ids)
        if ids.ndim != 1 or ids.dtype.kind not in "iu":
            raise Malformed("'identities' must be a list of integers")
        if ids.dtype.kind == "i" and ids.size and ids.min() < 0:
            raise Malformed(f"identities must be integers in [0, 2**64); got {int(ids.min())}")
        ids = ids.astype(np.uint64, copy=False)
        n = ids.shape[0]
        if n == 0:
            raise Malformed("the batch holds no reports")
        self._rows(n)
        if eps is not None:
            eps = np.asarray(eps)
            if eps.dtype.kind not in "iuf":
                raise Malformed(f"'epsilons' must be numbers; got {eps.dtype} values")
            eps = eps.astype(np.float64, copy=False)
        eps = self._epsilons(eps, n)
        reps = np.asarray(reps)
        want = (n, *self.report_shape)
        if reps.shape != want:
            raise Malformed(f"'reports' must have shape {list(want)} (one report of shape "
                            f"{list(self.report_shape)} per identity); got {list(reps.shape)}")
        return ids, eps, self._reports(reps)

    # ------------------------------------------------------------------ JSON
    def from_json(self, body: bytes, who: Optional[Who] = None) -> tuple[str, tuple]:
        """``(key, (identities, epsilons, reports))`` of a JSON body, or a :class:`Refusal`."""
        try:
            obj = json.loads(body, parse_constant=_refuse_constant, object_pairs_hook=_object)
        except RecursionError:
            raise Malformed("the JSON nests deeper than a batch can: identities are a list of "
                            f"integers and reports a list of reports of shape "
                            f"{list(self.report_shape)}") from None
        except Refusal:
            raise
        except (ValueError, UnicodeDecodeError) as exc:
            raise Malformed(f"the body is not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise Malformed("the body must be a JSON object with 'idempotency_key', "
                            "'identities', 'reports' and optionally 'epsilons'")
        extra = set(obj) - {"idempotency_key", "identities", "epsilons", "reports"}
        if extra:
            raise Malformed(f"unknown fields {sorted(extra)}")
        for name in ("idempotency_key", "identities", "reports"):
            if name not in obj:
                raise Malformed(f"the field '{name}' is missing")
        key = check_key(obj["idempotency_key"])
        ids = self._json_identities(obj["identities"], who)
        n = ids.shape[0]
        eps = obj.get("epsilons")
        if eps is not None:
            eps = self._json_numbers(eps, "epsilons", n)
        eps = self._epsilons(eps, n)
        return key, (ids, eps, self._json_reports(obj["reports"], n))

    def _json_identities(self, values: Any, who: Optional[Who]) -> np.ndarray:
        if not isinstance(values, list):
            raise Malformed(f"'identities' must be a list of integers; got a JSON "
                            f"{type(values).__name__}")
        n = len(values)
        if n == 0:
            raise Malformed("the batch holds no reports")
        self._rows(n)
        types = set(map(type, values))
        if bool in types:
            raise Malformed("identities must be integers, not booleans")
        if types != {int}:
            raise Malformed(f"identities must be integers in [0, 2**64); got "
                            f"{_type_names(types - {int})} values (a flat list is required)")
        lo, hi = min(values), max(values)
        if lo < 0 or hi >= 2**64:
            raise Malformed("identities must be integers in [0, 2**64); got "
                            f"{lo if lo < 0 else hi}")
        ids = np.array(values, dtype=np.uint64)  # exact: no float64 round trip
        _check_range(ids, who)
        return ids

    def _json_numbers(self, values: Any, name: str, n: int) -> np.ndarray:
        if not isinstance(values, list):
            raise Malformed(f"'{name}' must be a list of numbers; got a JSON "
                            f"{type(values).__name__}")
        if len(values) != n:
            raise Malformed(f"'{name}' must hold {n} numbers (one per identity); got "
                            f"{len(values)}")
        types = set(map(type, values))
        if not types <= {int, float}:
            raise Malformed(f"'{name}' must be numbers; got {_type_names(types - {int, float})}"
                            " values")
        try:
            return np.array(values, dtype=np.float64)
        except OverflowError:
            raise Malformed(f"'{name}' must be finite numbers > 0; got an integer beyond "
                            "float64") from None

    def _json_reports(self, values: Any, n: int) -> np.ndarray:
        want = [n, *self.report_shape]
        shape_error = (f"'reports' must have shape {want} (one report of shape "
                       f"{list(self.report_shape)} per identity)")
        if not isinstance(values, list):
            raise Malformed(f"{shape_error}; got a JSON {type(values).__name__}")
        if len(values) != n:
            raise Malformed(f"{shape_error}; got {len(values)} reports")
        level = values
        for depth, size in enumerate(self.report_shape, start=1):
            types = set(map(type, level))
            if types != {list}:
                raise Malformed(f"{shape_error}; got {_type_names(types - {list})} values at "
                                f"depth {depth}")
            lengths = set(map(len, level))
            if lengths != {size}:
                raise Malformed(f"{shape_error}; got lists of {sorted(lengths)[:5]} entries at "
                                f"depth {depth}")
            level = list(itertools.chain.from_iterable(level))
        types = set(map(type, level))
        if bool in types:
            raise Malformed("reports must be numbers, not booleans")
        if list in types:
            raise Malformed(f"{shape_error}; got lists nested deeper")
        if self.report_dtype.kind in "iu":
            if types - {int}:
                raise Malformed(f"reports of {self.name} are integers; got "
                                f"{_type_names(types - {int})} values")
            if level:
                self._integer_range(min(level), max(level))
            flat = np.array(level, dtype=self.report_dtype)
        else:
            if not types <= {int, float}:
                raise Malformed(f"reports of {self.name} are numbers; got "
                                f"{_type_names(types - {int, float})} values")
            try:
                flat = np.array(level, dtype=np.float64).astype(self.report_dtype, copy=False)
            except OverflowError:
                raise Malformed(f"reports of {self.name} must be finite numbers; got an "
                                "integer beyond float64") from None
            self._finite(flat)
        return flat.reshape(want)

    # ------------------------------------------------------------------ Arrow
    def _schema(self, schema: Any) -> dict:
        """Column positions by name, after the names, types and report layout are checked."""
        import pyarrow as pa

        try:
            names = list(schema.names)
        except UnicodeDecodeError:
            raise Malformed("the Arrow schema has a column name that is not valid UTF-8") \
                from None
        got = sorted(names)
        if (len(set(names)) != len(names) or not {"identity", "report"} <= set(names)
                or set(names) - {"identity", "epsilon", "report"}):
            raise Malformed("the Arrow stream needs the columns 'identity' and 'report' "
                            f"(and optionally 'epsilon'), once each; got {got}")
        where = {name: i for i, name in enumerate(names)}
        ident = schema.field(where["identity"]).type
        if not pa.types.is_integer(ident):
            raise Malformed(f"the Arrow column 'identity' must be integers; got {ident}")
        if "epsilon" in where:
            eps = schema.field(where["epsilon"]).type
            if not (pa.types.is_integer(eps) or pa.types.is_floating(eps)):
                raise Malformed(f"the Arrow column 'epsilon' must be numbers; got {eps}")
        rep = schema.field(where["report"]).type
        numeric = (pa.types.is_integer, pa.types.is_floating)
        if self.report_shape == ():
            value = rep
            if not any(f(rep) for f in numeric):
                raise Malformed(f"the Arrow column 'report' must be numbers (one per row); "
                                f"got {rep}")
        elif len(self.report_shape) == 1:
            m = self.report_shape[0]
            if pa.types.is_fixed_size_list(rep):
                if rep.list_size != m:
                    raise Malformed(f"each report must be a list of {m} numbers; the Arrow "
                                    f"column 'report' is {rep}")
            elif not (pa.types.is_list(rep) or pa.types.is_large_list(rep)):
                raise Malformed(f"the Arrow column 'report' must be lists of {m} numbers; "
                                f"got {rep}")
            value = rep.value_type
            if not any(f(value) for f in numeric):
                raise Malformed(f"the Arrow column 'report' must be lists of {m} numbers; "
                                f"got {rep}")
        else:
            raise Malformed(f"reports of shape {list(self.report_shape)} cannot be sent as "
                            "Arrow; send JSON")
        if self.report_dtype.kind in "iu" and not pa.types.is_integer(value):
            raise Malformed(f"reports of {self.name} are integers; the Arrow column 'report' "
                            f"is {rep}")
        return where

    def _arrow_reports(self, col: Any) -> np.ndarray:
        import pyarrow as pa

        n = len(col)
        if self.report_shape == ():
            return self._reports(col.to_numpy(zero_copy_only=False))
        m = self.report_shape[0]
        if not pa.types.is_fixed_size_list(col.type):
            offsets = col.offsets.to_numpy(zero_copy_only=False)
            lengths = np.diff(offsets)
            wrong = np.flatnonzero(lengths != m)
            if wrong.size:
                row = int(wrong[0])
                raise Malformed(f"each report must be a list of {m} numbers (report shape "
                                f"[{m}]); row {row} of a record batch has {int(lengths[row])}")
        values = col.flatten()
        if values.null_count:
            raise Malformed("the Arrow column 'report' has null entries")
        flat = values.to_numpy(zero_copy_only=False)
        if flat.shape[0] != n * m:  # flatten() of a valid list array: n * m values
            raise Malformed(f"each report must be a list of {m} numbers")
        return self._reports(flat).reshape(n, m)

    def from_arrow(self, body: bytes, key: Optional[str],
                   who: Optional[Who] = None) -> tuple[Optional[str], tuple]:
        """``(key, (identities, epsilons, reports))`` of an Arrow IPC stream, or a :class:`Refusal`.

        Each record batch is checked against the limits from its metadata
        before it is decompressed, then decoded, validated in full (list
        offsets, buffer sizes) and checked (nulls, report shape per row,
        identity range) before the next message is read.
        """
        import pyarrow as pa

        key = check_key(key)
        limits = self.limits
        source = pa.BufferReader(body)
        try:
            reader = pa.ipc.MessageReader.open_stream(source)
        except Exception as exc:  # pyarrow raises ArrowInvalid and friends
            raise Malformed(f"the body is not an Arrow IPC stream ({exc})") from None
        schema = where = None
        parts: list = []
        rows = decoded = batches = buffers = 0
        while True:
            at = source.tell()
            try:
                message = reader.read_next_message()
            except StopIteration:
                break
            except Exception as exc:
                raise Malformed(f"the body is not an Arrow IPC stream ({exc})") from None
            if message.type == "schema":
                if schema is not None:
                    raise Malformed("the Arrow stream has a second schema message")
                try:
                    schema = pa.ipc.read_schema(message)
                except Exception as exc:
                    raise Malformed(f"the Arrow schema is corrupt ({exc})") from None
                where = self._schema(schema)
                continue
            if message.type != "record batch":
                raise Malformed(f"the Arrow stream holds a {message.type} message; only a "
                                "schema and record batches are read (no dictionaries)")
            if schema is None:
                raise Malformed("the Arrow stream has a record batch before its schema")
            head = _record_batch_header(message.metadata, message.body)
            batches += 1
            if batches > limits.max_record_batches:
                raise TooLarge(f"the Arrow stream has more than {limits.max_record_batches} "
                               "record batches")
            rows += head.rows
            self._rows(rows)
            decoded += head.decoded_bytes
            buffers += head.n_buffers
            allowed = limits.max_decoded_bytes + 64 * buffers
            if decoded > allowed:
                per_row = limits.max_decoded_bytes // limits.max_rows
                raise TooLarge(f"the Arrow stream's buffers decode to more than {allowed} bytes "
                               f"(--max-rows {limits.max_rows} x {per_row} bytes per row, plus "
                               "64 bytes of padding per buffer)")
            try:
                batch = pa.ipc.read_record_batch(message, schema)
                batch.validate(full=True)
            except Exception as exc:
                raise Malformed(f"the Arrow stream is corrupt ({exc})") from None
            if batch.num_rows != head.rows:
                raise Malformed("the Arrow stream is corrupt: a record batch's row count does "
                                "not match its metadata")
            parts.append(self._arrow_batch(batch, where, who))
        if schema is None:
            raise Malformed("the body is not an Arrow IPC stream (no schema message)")
        if bytes(body[at:]) not in (_EOS, _LEGACY_EOS):
            raise Malformed("the Arrow stream is truncated: it does not end with the "
                            "end-of-stream marker right after its last message")
        if rows == 0:
            raise Malformed("the batch holds no reports")
        ids = np.concatenate([p[0] for p in parts])
        eps = None if parts[0][1] is None else np.concatenate([p[1] for p in parts])
        reps = np.concatenate([p[2] for p in parts])
        return key, (ids, self._epsilons(eps, ids.shape[0]), reps)

    def _arrow_batch(self, batch: Any, where: dict, who: Optional[Who]) -> tuple:
        for name, i in where.items():
            if batch.column(i).null_count:
                raise Malformed(f"the Arrow column '{name}' has null rows")
        ids = batch.column(where["identity"]).to_numpy(zero_copy_only=False)
        if ids.dtype.kind == "i" and ids.size and ids.min() < 0:
            raise Malformed(f"identities must be integers in [0, 2**64); got {int(ids.min())}")
        ids = ids.astype(np.uint64, copy=False)
        _check_range(ids, who)
        eps = None
        if "epsilon" in where:
            eps = batch.column(where["epsilon"]).to_numpy(zero_copy_only=False).astype(
                np.float64, copy=False)
        return ids, eps, self._arrow_reports(batch.column(where["report"]))


def parse_json_job(parser: BatchParser, body: bytes, who: Optional[Who]) -> tuple:
    """:meth:`BatchParser.from_json` as a module function (a worker process's job)."""
    return parser.from_json(body, who)


def lower_priority() -> None:
    """Lower the calling thread's CPU priority (nice +10; Linux sets it per thread), if allowed.

    The initializer of the bulk parsers: on a busy machine the event loop,
    which answers every other request, gets the CPU before them.
    """
    import os
    import threading

    try:
        tid = threading.get_native_id()
        os.setpriority(os.PRIO_PROCESS, tid, min(19, os.getpriority(os.PRIO_PROCESS, tid) + 10))
    except (AttributeError, OSError):  # not Linux, or not permitted: the default priority
        pass


def warm_job() -> bool:
    """Nothing: a worker process's first job, so that its imports happen before a request's."""
    return math.isfinite(1.0)
