"""Report files: privatized reports on disk, and the bounded-memory streaming decode.

A deployment collects more reports than one process holds, so reports go to
Parquet files (``pip install fastldp[parquet]``) and the server decodes
them a row group at a time through the estimators' exact
``partial`` / ``merge`` / ``finalize`` (see :mod:`fastldp.streaming`): the
result is bit-identical to ``estimate`` on all the reports in memory, in
memory that does not grow with their number.

File format (version 1)
-----------------------
One row per report:

============  ==============================  ==========================================
column        Arrow type                      meaning
============  ==============================  ==========================================
``identity``  ``uint64``, no nulls            the public identity keying the codebook
``epsilon``   ``float64``, no nulls           the identity's committed budget; equal to
                                              the mechanism's ``epsilon`` in every row
                                              when the mechanism has a fixed one
``report``    integer (float for RPC and      the report as the mechanism's ``privatize``
              Succinct), or a fixed-size      returned it (one value, or a row of ``m``)
              list of ``m`` of them
============  ==============================  ==========================================

The Arrow schema's key-value metadata ``fastldp.reports`` holds a JSON object::

    {"format": "fastldp-reports", "version": 1,
     "mechanism": "JPRS", "params": {"shape": [64, 64], "k": 4, ...},
     "report_shape": [], "report_dtype": "int8",
     "file_id": "3f2b...c9"}

and the Parquet footer's key-value metadata ``fastldp.reports.rows``,
written when the file is closed, holds ``{"file_id": ..., "rows": n}``.

``mechanism`` and ``params`` are the writing mechanism's class name and
public parameters (``stream_params()``, codebook seed included); a reader
refuses a file whose mechanism or parameters differ from its own.
``file_id`` is a random identifier of the file (``uuid4`` hex: it names the
file, it is not randomness of any protocol): a decode refuses two files
with the same id, which hold the same reports. ``rows`` is checked against
the footer's row count. Both keys are optional: version 1 files written
before them are still read (without those checks).

Reports are stored as given: a malformed value (a null, an out-of-range
symbol) is sanitized and counted by the decoder exactly as in memory, and a
null report reads as NaN. A ``report`` column of the wrong type (strings,
or floats for a mechanism whose reports are integers) is refused before
any decoding, and so are nulls in ``identity`` or ``epsilon``: they are the
public inputs the decoder cannot repair. A decode in which most reports
were sanitized ends with a :class:`SanitizationWarning`.

Identities must be distinct across everything decoded together. The
in-memory ``estimate`` checks that; a streaming decode checks it within
each row group only, since checking it across groups would take memory
that grows with the number of reports. A file given twice (the same path,
link or file id) is refused.
"""

from __future__ import annotations

import base64
import glob
import json
import os
import uuid
import warnings
from pathlib import Path
from typing import Any, Callable, Iterator, Literal, Optional, Sequence, Union

import numpy as np
from numpy.typing import ArrayLike

from .results import PrivacyStatement, Result
from .streaming import Partial

__all__ = ["write_reports", "ReportWriter", "ReportFile", "decode_files", "expand_sources",
           "save_result", "load_result", "LoadedResult", "open_reports", "chunk_epsilons", "check_report_type",
           "sanitization_warning", "SanitizationWarning", "FORMAT_VERSION", "METADATA_KEY",
           "ROWS_KEY"]

FORMAT_VERSION = 1
METADATA_KEY = b"fastldp.reports"
ROWS_KEY = b"fastldp.reports.rows"
_FORMAT = "fastldp-reports"
DEFAULT_ROW_GROUP = 1 << 20
_CHECKPOINT_FORMAT = "fastldp-checkpoint"
_CHECKPOINT_VERSION = 2  # version 1 named the files only by path



class SanitizationWarning(UserWarning):
    """Most reports of a decode were malformed and replaced by public random outputs.

    Examples
    --------
    >>> import os, tempfile, warnings
    >>> import numpy as np
    >>> from fastldp import GRR
    >>> from fastldp.reports import SanitizationWarning, decode_files, write_reports
    >>> grr = GRR(domain_size=3, epsilon=1.0, codebook_seed=0)
    >>> path = write_reports(os.path.join(tempfile.mkdtemp(), "r.parquet"), grr,
    ...                      np.full(10, 99))  # no symbol of a domain of 3
    >>> with warnings.catch_warnings(record=True) as caught:
    ...     warnings.simplefilter("always")
    ...     est = decode_files(grr, path)
    >>> caught[0].category is SanitizationWarning, est.sanitization.n_sanitized
    (True, 10)
    """


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("report files need pyarrow: pip install 'fastldp[parquet]'") from None
    return pa, pq


def mechanism_spec(mechanism: Any) -> dict[str, Any]:
    """``{"mechanism": name, "params": public parameters}``: the mechanism's own ``spec()``.

    Any class implementing :class:`fastldp.protocol.StreamingMechanism`
    answers it; anything else is a ``TypeError`` naming what it lacks.
    """
    spec = getattr(mechanism, "spec", None)
    if not callable(spec) or not hasattr(mechanism, "partial"):
        raise TypeError(f"{type(mechanism).__name__} has no streaming decode "
                        "(fastldp.protocol.StreamingMechanism: spec / report_schema / partial / "
                        "finalize)")
    return spec()


def _describe(spec: dict) -> str:
    params = ", ".join(f"{k}={v!r}" for k, v in spec["params"].items())
    return f"{spec['mechanism']}({params})"


# ---------------------------------------------------------------------- budgets and types
def _fixed_epsilon(mechanism):
    """The budget a mechanism was built with (``None``: it takes personal budgets)."""
    return mechanism.report_schema.fixed_epsilon


def chunk_epsilons(mechanism: Any, epsilons: Any, where: str) -> Any:
    """The ``epsilons`` to pass to ``mechanism.partial`` for budgets read from storage.

    A mechanism built with a fixed ``epsilon`` decodes every report at that
    budget, so the stored budgets must all equal it (a ``ValueError`` names
    ``where``, the value found and the mechanism's budget); it then gets
    ``None``, its fixed-budget decode, which is what its in-memory
    ``estimate(reports)`` computes. A mechanism with personal budgets gets
    them unchanged.

    Parameters
    ----------
    mechanism : estimator
    epsilons : float64 array, shape (n,)
        The stored budgets of one chunk.
    where : str
        Where the chunk came from, for the message (file and row group).
    """
    fixed = _fixed_epsilon(mechanism)
    if fixed is None:
        return epsilons
    eps = np.asarray(epsilons, dtype=np.float64)
    bad = ~(eps == fixed)  # NaN differs too
    if bad.any():
        i = int(np.flatnonzero(bad)[0])
        raise ValueError(
            f"{where}: the epsilon column holds {float(eps[i])!r} (row {i} of the group), but "
            f"{type(mechanism).__name__} was built with the fixed epsilon={fixed!r}; a mechanism "
            "with a fixed budget decodes every report at that budget, so every row must hold "
            "it (decode personal budgets with a mechanism built with epsilon=None)")
    return None


def _report_kind(mechanism) -> str:
    """``"integer"`` or ``"float"``: the kind of the mechanism's reports (its report schema)."""
    return "integer" if mechanism.report_schema.integer else "float"


def check_report_type(mechanism: Any, report_type: Any, where: str) -> None:
    """Refuse a ``report`` column whose Arrow type cannot hold ``mechanism``'s reports.

    Integers (or fixed-size lists of them) for the mechanisms whose reports
    are integers, any numbers for the others: strings, booleans or floats
    where integers are expected are a ``ValueError`` naming ``where``, the
    column's type and the expected one, before any decoding.
    """
    pa, _ = _pyarrow()
    values = report_type
    if (pa.types.is_fixed_size_list(values) or pa.types.is_list(values)
            or pa.types.is_large_list(values)):
        values = values.value_type
    kind = _report_kind(mechanism)
    if pa.types.is_integer(values) or (pa.types.is_floating(values) and kind != "integer"):
        return
    expected = ("an integer type (int8 ... uint64), or a fixed-size list of integers"
                if kind == "integer" else "a numeric type, or a fixed-size list of numbers")
    raise ValueError(f"{where}: the 'report' column has type {report_type}, but reports of "
                     f"{type(mechanism).__name__} need {expected}, as ReportWriter writes them")


def _check_frame_report_dtype(mechanism, dtype, where: str) -> None:
    """:func:`check_report_type` for a pandas / Dask column dtype (object columns pass)."""
    kind = getattr(dtype, "kind", "O")
    name = str(dtype)
    if kind in "iu" or (kind == "f" and _report_kind(mechanism) != "integer"):
        return
    if kind == "O" and not name.startswith("str"):
        return  # lists (vector reports): each partition's Arrow type is checked on its worker
    expected = "integers" if _report_kind(mechanism) == "integer" else "numbers"
    raise ValueError(f"{where}: the 'report' column has dtype {name}, but reports of "
                     f"{type(mechanism).__name__} need {expected}")


def sanitization_warning(result: Any) -> str | None:
    """The warning of a decode in which most reports (more than half) were sanitized."""
    san = getattr(result, "sanitization", None)
    received = getattr(san, "n_received", 0)
    sanitized = getattr(san, "n_sanitized", 0)
    if not received or 2 * sanitized <= received:
        return None
    reasons = {k: v for k, v in san.by_reason.items() if v}
    return (f"{sanitized:,} of {received:,} reports ({sanitized / received:.0%}) were malformed "
            f"and replaced by public random outputs {reasons}: the input probably does not hold "
            "reports of this mechanism, and the estimate is mostly noise")


# ---------------------------------------------------------------------- writing
class ReportWriter:
    """Write reports to a Parquet file chunk by chunk (a context manager).

    Parameters
    ----------
    path : str or os.PathLike
    mechanism : estimator
        The mechanism whose ``privatize`` produced the reports.
    row_group_size : int
        Rows per Parquet row group: the unit a reader decodes at a time.

    Attributes
    ----------
    file_id : str
        A random identifier of the file (``uuid4().hex``), stored in its
        metadata so that a decode can refuse the same reports twice. It
        names the file; it is not randomness of the protocol.
    rows : int
        Rows written so far (stored in the footer when the file is closed).

    Examples
    --------
    >>> import numpy as np, fastldp, tempfile, os
    >>> from fastldp.reports import ReportWriter, ReportFile
    >>> mech = fastldp.JPRS(shape=(4, 4), k=1, s=2, codebook_seed=3)
    >>> path = os.path.join(tempfile.mkdtemp(), "r.parquet")
    >>> with ReportWriter(path, mech) as w:
    ...     w.write(np.array([1, -1], dtype=np.int8), np.array([1.0, 2.0]), np.array([7, 9]))
    >>> ReportFile(path).num_rows
    2
    """

    _writer: Any  # pyarrow's ParquetWriter, opened when the first chunk fixes the schema
    _shape: Optional[list[int]]  # the report shape the first chunk fixed

    def __init__(self, path: Union[str, "os.PathLike[str]"], mechanism: Any, *,
                 row_group_size: int = DEFAULT_ROW_GROUP) -> None:
        self.path = os.fspath(path)
        self.spec = mechanism_spec(mechanism)
        self.mechanism = mechanism
        self.default_epsilon = _fixed_epsilon(mechanism)
        if not isinstance(row_group_size, (int, np.integer)) or row_group_size < 1:
            raise ValueError(f"The 'row_group_size' parameter of ReportWriter must be an int >= 1. "
                             f"Got {row_group_size!r} instead.")
        self.row_group_size = int(row_group_size)
        self.file_id = uuid.uuid4().hex
        self._writer = None
        self._shape = None
        self.rows = 0

    def write(self, reports: ArrayLike, epsilons: Optional[ArrayLike] = None,
              identities: Optional[ArrayLike] = None) -> None:
        """Append one chunk of reports.

        Parameters
        ----------
        reports : numpy array, shape (n,) or (n, m)
            Numeric reports as ``privatize`` returned them.
        epsilons : float or array of shape (n,), optional
            Budgets; default the mechanism's ``epsilon``. A mechanism built
            with a fixed ``epsilon`` takes only that value (a decode would
            refuse any other).
        identities : array of int, shape (n,), optional
            Default: the next ``n`` integers after the rows already written.
        """
        pa, pq = _pyarrow()
        arr = np.asarray(reports)
        if arr.ndim not in (1, 2) or arr.dtype.kind not in "biuf":
            raise ValueError(f"The 'reports' parameter of ReportWriter.write must be a numeric "
                             f"array of shape (n,) or (n, m). Got {arr.dtype} of shape "
                             f"{arr.shape} instead.")
        n = arr.shape[0]
        if identities is None:
            ids = np.arange(self.rows, self.rows + n, dtype=np.uint64)
        else:
            ids = np.asarray(identities)
            if ids.shape != (n,) or ids.dtype.kind not in "iu" or (ids.dtype.kind == "i" and n
                                                                  and ids.min() < 0):
                raise ValueError(f"The 'identities' parameter of ReportWriter.write must be {n} "
                                 f"non-negative integers. Got {ids.dtype} of shape {ids.shape}.")
            ids = ids.astype(np.uint64)
        if epsilons is None:
            if self.default_epsilon is None:
                raise ValueError("The 'epsilons' parameter of ReportWriter.write is required: "
                                 f"{self.spec['mechanism']} has no default epsilon")
            epsilons = self.default_epsilon
        eps = np.broadcast_to(np.asarray(epsilons, dtype=np.float64), (n,))
        if not np.all(np.isfinite(eps) & (eps > 0)):
            bad = int(np.flatnonzero(~(np.isfinite(eps) & (eps > 0)))[0])
            raise ValueError(f"The 'epsilons' parameter of ReportWriter.write must hold finite "
                             f"floats > 0. Got {eps[bad]!r} at index {bad} instead.")
        if self.default_epsilon is not None and not np.all(eps == self.default_epsilon):
            bad = int(np.flatnonzero(eps != self.default_epsilon)[0])
            raise ValueError(f"The 'epsilons' parameter of ReportWriter.write must equal "
                             f"{self.spec['mechanism']}'s fixed epsilon={self.default_epsilon!r} "
                             f"(or be omitted). Got {float(eps[bad])!r} at index {bad} instead.")
        if arr.dtype.kind == "f" and _report_kind(self.mechanism) == "integer":
            raise ValueError(
                f"The 'reports' parameter of ReportWriter.write must be an integer array: "
                f"{self.spec['mechanism']} reports integers (a decoder refuses a file of "
                f"floats for it). Got {arr.dtype} instead.")
        shape = list(arr.shape[1:])
        if arr.dtype.kind == "b":
            arr = arr.astype(np.int8)
        if self._writer is None:
            self._shape, self._dtype = shape, arr.dtype
            value_type = pa.from_numpy_dtype(arr.dtype)
            report_type = value_type if not shape else pa.list_(value_type, shape[0])
            meta = dict(self.spec, format=_FORMAT, version=FORMAT_VERSION,
                        report_shape=shape, report_dtype=str(arr.dtype), file_id=self.file_id)
            self.schema = pa.schema(
                [pa.field("identity", pa.uint64(), nullable=False),
                 pa.field("epsilon", pa.float64(), nullable=False),
                 pa.field("report", report_type)],
                metadata={METADATA_KEY: json.dumps(meta).encode()})
            self._writer = pq.ParquetWriter(self.path, self.schema)
        elif shape != self._shape:
            raise ValueError(f"ReportWriter.write: reports of shape {shape} after {self._shape}")
        arr = arr.astype(self._dtype, copy=False)
        if shape:
            report_col = pa.FixedSizeListArray.from_arrays(
                pa.array(np.ascontiguousarray(arr).ravel()), shape[0])
        else:
            report_col = pa.array(arr)
        table = pa.Table.from_arrays([pa.array(ids), pa.array(np.ascontiguousarray(eps)),
                                      report_col], schema=self.schema)
        self._writer.write_table(table, row_group_size=self.row_group_size)
        self.rows += n

    def close(self) -> None:
        """Finish the file, its row count in the footer (an empty writer leaves no file)."""
        if self._writer is not None:
            self._writer.add_key_value_metadata(
                {ROWS_KEY: json.dumps({"file_id": self.file_id, "rows": self.rows})})
            self._writer.close()
            self._writer = None

    def __enter__(self) -> "ReportWriter":
        return self

    def __exit__(self, *exc: object) -> Literal[False]:
        self.close()
        return False


def write_reports(path: Union[str, "os.PathLike[str]"], mechanism: Any, reports: ArrayLike,
                  epsilons: Optional[ArrayLike] = None, identities: Optional[ArrayLike] = None,
                  *, row_group_size: int = DEFAULT_ROW_GROUP) -> Path:
    """Write one batch of reports to a Parquet report file; returns the path.

    Parameters are those of :meth:`ReportWriter.write`; ``identities``
    default to ``0 .. n-1``, as the in-memory ``estimate`` assumes.
    """
    with ReportWriter(path, mechanism, row_group_size=row_group_size) as w:
        w.write(reports, epsilons, identities)
    return Path(path)


# ---------------------------------------------------------------------- reading
class ReportFile:
    """A report file opened for reading in row groups.

    Parameters
    ----------
    path : str or os.PathLike

    Attributes
    ----------
    spec : dict
        ``{"mechanism": ..., "params": ...}`` of the writing mechanism.
    num_rows, num_row_groups : int
    file_id : str or None
        The writer's file identifier (``None`` in files written before it).

    Examples
    --------
    >>> import os, tempfile
    >>> import numpy as np
    >>> from fastldp import GRR
    >>> from fastldp.reports import ReportFile, write_reports
    >>> grr = GRR(domain_size=3, epsilon=1.0, codebook_seed=0)
    >>> path = write_reports(os.path.join(tempfile.mkdtemp(), "r.parquet"), grr,
    ...                      grr.privatize([0, 1, 2, 2], rng=0))
    >>> f = ReportFile(path)
    >>> f.spec["mechanism"], f.num_rows, f.num_row_groups
    ('GRR', 4, 1)
    >>> f.check(grr)  # the same mechanism and parameters: no error
    >>> reports, epsilons, identities = f.row_group(0)
    >>> epsilons.tolist(), identities.tolist()
    ([1.0, 1.0, 1.0, 1.0], [0, 1, 2, 3])
    """

    def __init__(self, path: Union[str, "os.PathLike[str]"]) -> None:
        pa, pq = _pyarrow()
        self.path = os.fspath(path)
        try:
            self._file = pq.ParquetFile(self.path)
        except (OSError, pa.ArrowException) as exc:
            raise ValueError(f"{self.path}: not a readable Parquet report file ({exc})") from None
        schema = self._file.schema_arrow
        raw = (schema.metadata or {}).get(METADATA_KEY)
        if raw is None:
            raise ValueError(f"{self.path}: not a fastldp report file (no "
                             f"'{METADATA_KEY.decode()}' metadata)")
        meta = _json_object(raw, f"{self.path}: the '{METADATA_KEY.decode()}' metadata")
        if meta.get("format") != _FORMAT or meta.get("version") != FORMAT_VERSION:
            raise ValueError(f"{self.path}: report format {meta.get('format')!r} version "
                             f"{meta.get('version')!r}; this fastldp reads {_FORMAT!r} version "
                             f"{FORMAT_VERSION}")
        names = schema.names
        if names[:3] != ["identity", "epsilon", "report"]:
            raise ValueError(f"{self.path}: columns {names}, expected identity, epsilon, report")
        if "mechanism" not in meta or not isinstance(meta.get("params"), dict):
            raise ValueError(f"{self.path}: the '{METADATA_KEY.decode()}' metadata names no "
                             "mechanism and parameters")
        self.spec = {"mechanism": meta["mechanism"], "params": meta["params"]}
        self.report_shape = tuple(meta.get("report_shape", []))
        self.report_type = schema.field("report").type
        self.file_id = meta.get("file_id")
        self.num_rows = self._file.metadata.num_rows
        self.num_row_groups = self._file.num_row_groups
        footer = (self._file.metadata.metadata or {}).get(ROWS_KEY)
        if footer is not None:
            closed = _json_object(footer, f"{self.path}: the '{ROWS_KEY.decode()}' metadata")
            if closed.get("rows") != self.num_rows or closed.get("file_id") != self.file_id:
                raise ValueError(
                    f"{self.path}: the writer recorded {closed.get('rows')!r} rows of file "
                    f"{closed.get('file_id')!r}, but the file holds {self.num_rows} rows of "
                    f"file {self.file_id!r}; it was altered after it was written")

    def check(self, mechanism: Any) -> None:
        """Raise ``ValueError`` unless ``mechanism`` wrote the file and can read its reports.

        The mechanism and every public parameter must agree with the file's,
        and the ``report`` column must have a type that holds the mechanism's
        reports (:func:`check_report_type`).
        """
        mine = mechanism_spec(mechanism)
        if mine != self.spec and not self._written_before(mine):
            raise ValueError(
                f"{self.path} holds reports of {_describe(self.spec)}; they cannot be decoded "
                f"by {_describe(mine)} (every public parameter, the codebook seed included, "
                "must agree)")
        check_report_type(mechanism, self.report_type, self.path)

    def _written_before(self, mine: dict) -> bool:
        """Whether the file's spec is ``mine`` as written before parameters were added to it."""
        from .protocol import completed_spec

        try:
            return completed_spec(self.spec) == mine
        except ValueError:  # a mechanism this installation does not know
            return False

    def identity(self) -> dict[str, Any]:
        """What a checkpoint records of the file: path, file id, bytes, row groups, rows."""
        return {"path": self.path, "file_id": self.file_id, "bytes": os.path.getsize(self.path),
                "row_groups": self.num_row_groups, "rows": self.num_rows}

    def row_group(self, i: int) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """``(reports, epsilons, identities)`` of row group ``i`` as NumPy arrays."""
        pa, _ = _pyarrow()
        try:
            table = self._file.read_row_group(i)
        except (OSError, pa.ArrowException) as exc:
            raise ValueError(f"{self.path}: row group {i} cannot be read, the file is damaged "
                             f"({exc})") from exc
        return _table_arrays(table, f"{self.path}, row group {i}", self.report_shape)

    def __iter__(self) -> Iterator[tuple[np.ndarray, np.ndarray, np.ndarray]]:
        for i in range(self.num_row_groups):
            yield self.row_group(i)


def _json_object(raw: bytes, what: str) -> dict:
    try:
        value = json.loads(raw)
    except (ValueError, UnicodeDecodeError):
        value = None
    if not isinstance(value, dict):
        raise ValueError(f"{what} is not a JSON object")
    return value


def _table_arrays(table, where: str, report_shape=()):
    """NumPy ``(reports, epsilons, identities)`` of an Arrow table or pandas frame."""
    pa, _ = _pyarrow()
    if not isinstance(table, pa.Table):
        table = pa.Table.from_pandas(table, preserve_index=False)
    for name in ("identity", "epsilon"):
        if table.column(name).null_count:
            raise ValueError(f"{where}: the '{name}' column has {table.column(name).null_count} "
                             "null rows; identities and budgets are public inputs the decoder "
                             "cannot repair")
    ids = table.column("identity").to_numpy()
    if ids.dtype.kind not in "iu" or (ids.dtype.kind == "i" and ids.size and ids.min() < 0):
        raise ValueError(f"{where}: the 'identity' column must hold non-negative integers")
    eps = np.ascontiguousarray(table.column("epsilon").to_numpy(), dtype=np.float64)
    col = table.column("report").combine_chunks()
    if pa.types.is_fixed_size_list(col.type) or pa.types.is_list(col.type):
        m = report_shape[0] if report_shape else col.type.list_size
        flat = col.flatten().to_numpy(zero_copy_only=False)
        if col.null_count:  # a null row reads as a row of NaN
            values = np.full((len(col), m), np.nan)
            valid = col.is_valid().to_numpy(zero_copy_only=False)
            values[valid] = flat.reshape(-1, m)
            reports = values
        else:
            reports = flat.reshape(len(col), m)
    else:
        reports = col.to_numpy(zero_copy_only=False)
    return reports, eps, ids.astype(np.uint64)


def _expand(sources) -> list[tuple[str, str]]:
    """``(path, the argument that named it)`` for every file of ``sources``, in order."""
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    out = []
    for number, src in enumerate(sources, 1):
        text = os.fspath(src)
        origin = f"argument {number} ({text!r})"
        if os.path.isdir(text) and os.path.exists(os.path.join(text, "index.sqlite")):
            from ._stores import store_segments  # a collector's store: its closed segments

            out.extend((p, origin) for p in store_segments(text))
        elif os.path.isdir(text):
            out.extend((str(p), origin) for p in sorted(Path(text).glob("*.parquet")))
        elif any(c in text for c in "*?["):
            out.extend((p, origin) for p in sorted(glob.glob(text)))
        else:
            out.append((text, origin))
    if not out:
        raise ValueError(f"no report files match {sources!r}")
    missing = [p for p, _ in out if not os.path.exists(p)]
    if missing:
        raise FileNotFoundError(f"report file not found: {missing[0]}")
    seen = {}
    for path, origin in out:
        st = os.stat(path)
        # one key per file: a symbolic link, another spelling or a hard link meet here
        for key in (os.path.realpath(path), (st.st_dev, st.st_ino)):
            if key in seen:
                first_path, first_origin = seen[key]
                raise ValueError(
                    f"the report file {first_path} is given twice: by {first_origin} and by "
                    f"{origin} (as {path}); a decode reads each file once")
            seen[key] = (path, origin)
    return out


def expand_sources(sources: Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]) -> list[str]:
    """Expand a path, a glob, a directory or a list of them into file paths.

    Globs and directories expand to sorted paths. A store directory of
    ``fastldp serve`` (it holds ``index.sqlite``) expands to the closed
    segments its journal lists, and is refused while a collector holds it or
    while its journal holds batches outside a segment
    (:func:`fastldp._stores.store_segments`). A file named twice (the
    same path, a link to it, or two arguments that both match it) is a
    ``ValueError`` naming both arguments.
    """
    return [path for path, _ in _expand(sources)]


RESULT_FORMAT = "fastldp-result"
RESULT_VERSION = 1


def _json_bytes(obj) -> np.ndarray:
    return np.frombuffer(json.dumps(obj, default=str).encode(), dtype=np.uint8)


def _estimate_name(result, fields) -> str | None:
    """The field that holds the result's main array (``.estimate``), if it can be told."""
    name = getattr(type(result), "_estimate_field", "")  # the shared result base names it
    if name in fields:
        return name
    try:
        main = result.estimate
    except Exception:  # an older result class without the shared base
        return None
    return next((f for f in fields if getattr(result, f) is main), None)


def save_result(result: Any, path: Union[str, "os.PathLike[str]"]) -> Path:
    """Write an estimate (any family's result dataclass) to an ``.npz`` file.

    Parameters
    ----------
    result : dataclass or LoadedResult
        What an ``estimate`` / ``finalize`` returned, or what
        :func:`load_result` read (written back as it was read).
    path : path
        The file to write (NumPy adds no suffix: name it ``.npz``).

    Returns
    -------
    Path
        ``path``.

    Notes
    -----
    The file is a plain NumPy ``.npz`` archive (no pickles), version 1:

    ==================  =====================================================
    entry               content
    ==================  =====================================================
    ``<field>``         each array field of the result under its own name
                        (``counts``, ``variances``, ``matrix``, ``sketch``,
                        ``mean``, ``raw``, ...)
    ``<field>_<i>``     the ``i``-th array of a field that is a tuple of
                        arrays (JPRS's ``support_0``, ``support_1``)
    ``summary``         ``uint8``: the UTF-8 bytes of a JSON object holding
                        every other field (``n``, ``alpha``, ``seconds``, ...;
                        ``sanitization``, ``privacy``, ``budget`` as objects;
                        values JSON cannot hold as their ``str``)
    ``fastldp``         ``uint8``: the UTF-8 bytes of a JSON object
                        ``{"format": "fastldp-result", "version": 1,
                        "class": "<module>.<class>", "estimate": "<field>",
                        "tuples": {"<field>": <count>}}``: who wrote the
                        file, which array is ``.estimate``, and how many
                        arrays each tuple field has
    ==================  =====================================================

    :func:`load_result` reads it back; with NumPy alone::

        with np.load(path) as f:
            counts = f["counts"]
            summary = json.loads(f["summary"].tobytes())
    """
    import dataclasses

    if isinstance(result, LoadedResult):  # written back as it was read
        arrays = dict(result.arrays)
        meta = {"format": RESULT_FORMAT, "version": RESULT_VERSION, "class": result.kind,
                "estimate": result.estimate_name, "tuples": dict(result._tuples)}
        arrays["summary"] = _json_bytes(result.summary)
        arrays["fastldp"] = _json_bytes(meta)
        with open(path, "wb") as fh:
            np.savez(fh, **arrays)
        return Path(path)
    if not dataclasses.is_dataclass(result) or isinstance(result, type):
        raise TypeError(f"save_result writes the result of an estimate (a dataclass, or one "
                        f"load_result read); got {type(result).__name__}.")
    arrays, summary, tuples, fields = {}, {}, {}, []
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        if isinstance(value, np.ndarray):
            arrays[f.name] = value
            fields.append(f.name)
        elif isinstance(value, tuple) and value and all(isinstance(v, np.ndarray) for v in value):
            for i, v in enumerate(value):
                arrays[f"{f.name}_{i}"] = v
            tuples[f.name] = len(value)
        elif dataclasses.is_dataclass(value):
            summary[f.name] = dataclasses.asdict(value)
        else:
            summary[f.name] = value
    meta = {"format": RESULT_FORMAT, "version": RESULT_VERSION,
            "class": f"{type(result).__module__}.{type(result).__qualname__}",
            "estimate": _estimate_name(result, fields), "tuples": tuples}
    arrays["summary"] = _json_bytes(summary)
    arrays["fastldp"] = _json_bytes(meta)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return Path(path)


class LoadedResult(Result):
    """A result read back by :func:`load_result`: a :class:`~fastldp.results.Result` again.

    Attributes
    ----------
    arrays : dict of str to ndarray
        Every array of the file, by its ``.npz`` name (a tuple field's
        arrays as ``<field>_<i>``).
    summary : dict
        The other fields (``n``, ``sanitization``, ``privacy``, ...), as
        JSON read them (objects are dicts).
    kind : str
        The class that wrote the file (``"fastldp.oracles._base.FrequencyEstimate"``),
        or ``""`` for a file written before the ``fastldp`` entry existed.
    estimate_name : str or None
        Which array is the main one (``.estimate``).
    path : Path

    Any array or summary field is also an attribute: ``loaded.counts``,
    ``loaded.n``, ``loaded.sanitization["n_received"]``; a tuple field is a
    tuple again (``loaded.support``). ``.estimate`` is the main array,
    ``.variances`` and ``.std`` are ``None`` where the result had no
    variances. As on every result, ``.privacy`` is a
    :class:`~fastldp.results.PrivacyStatement` (``.privacy.event()`` for the
    accountant; the JSON object is ``summary["privacy"]``), ``.categories``
    a tuple of labels or ``None``, and ``.to_frame()`` works; so a loaded
    result goes wherever the estimate went (post-processing, metrics, the
    ledger) with its ``n``, labels and privacy statement.

    Examples
    --------
    >>> import tempfile, os
    >>> from fastldp import GRR
    >>> from fastldp.reports import load_result, save_result
    >>> grr = GRR(domain_size=3, epsilon=2.0, codebook_seed=0)
    >>> est = grr.estimate(grr.privatize([0, 1, 1, 2], rng=0))
    >>> path = os.path.join(tempfile.mkdtemp(), "result.npz")
    >>> loaded = load_result(save_result(est, path))
    >>> bool((loaded.estimate == est.counts).all()), loaded.n
    (True, 4)
    """

    def __init__(self, arrays: dict[str, np.ndarray], summary: dict[str, Any], *,
                 kind: str = "", estimate_name: str | None = None,
                 tuples: dict[str, int] | None = None, path: Optional[Union[str, "os.PathLike[str]"]] = None) -> None:
        self.arrays = arrays
        self.summary = summary
        self.kind = kind
        self.estimate_name = estimate_name
        self._tuples = dict(tuples or {})
        self.path = None if path is None else Path(path)

    @property
    def estimate(self) -> np.ndarray | None:  # type: ignore[override]
        """The main array (``counts``, ``matrix``, ``mean``...), or None if none is known."""
        return None if self.estimate_name is None else self.arrays[self.estimate_name]

    @property
    def privacy(self) -> Optional[PrivacyStatement]:
        """The result's privacy statement, rebuilt (``None`` for a file without one)."""
        fields = self.summary.get("privacy")
        if fields is None:
            return None
        try:
            return PrivacyStatement.from_dict(fields)
        except (TypeError, ValueError) as exc:
            raise ValueError(f"the result in {self.path}: its privacy statement cannot be "
                             f"read ({exc})") from None

    @property
    def categories(self) -> Optional[tuple]:
        """The labels of the entries (a tuple, as the result had them), or ``None``."""
        labels = self.summary.get("categories")
        return None if labels is None else tuple(labels)

    @property
    def variances(self) -> np.ndarray | None:
        """The ``variances`` array, or ``None`` where the result had none."""
        return self.arrays.get("variances")

    @property
    def std(self) -> np.ndarray | None:
        """``sqrt(variances)``, or ``None``."""
        v = self.variances
        return None if v is None else np.sqrt(v)

    def __getattr__(self, name: str) -> Any:
        if name.startswith("_"):
            raise AttributeError(name)
        if name in self.arrays:
            return self.arrays[name]
        if name in self._tuples:
            return tuple(self.arrays[f"{name}_{i}"] for i in range(self._tuples[name]))
        if name in self.summary:
            return self.summary[name]
        if name in ("variances", "sanitization", "categories"):
            return None  # optional on every result (fastldp.results)
        raise AttributeError(f"the result in {self.path} has no field {name!r}; it has "
                             f"{', '.join([*self.arrays, *self.summary])}")

    def __dir__(self) -> list[str]:
        return sorted({*super().__dir__(), *self.arrays, *self._tuples, *self.summary})

    def __repr__(self) -> str:
        kind = self.kind.rsplit(".", 1)[-1] or "result"
        main = self.estimate
        shape = "" if main is None else f" {self.estimate_name}{tuple(main.shape)}"
        n = f", n={self.summary['n']}" if "n" in self.summary else ""
        return f"LoadedResult({kind}{shape}{n}, from {str(self.path)!r})"


# the main array of a result file written before the ``fastldp`` entry named it
_MAIN_ARRAYS = ("estimate", "counts", "matrix", "mean")


def load_result(path: Union[str, "os.PathLike[str]"]) -> LoadedResult:
    """Read a result written by :func:`save_result` (or ``fastldp decode --out``).

    Parameters
    ----------
    path : path
        The ``.npz`` file (layout in :func:`save_result`). Nothing is
        unpickled.

    Returns
    -------
    LoadedResult
        ``.arrays``, ``.summary``, ``.estimate`` and attribute access to
        every field.

    Raises
    ------
    ValueError
        When the file is not a result file of fastldp (no JSON ``summary``).
    """
    path = Path(path)
    try:
        with np.load(path, allow_pickle=False) as npz:
            entries = {name: npz[name] for name in npz.files}
    except (ValueError, OSError) as exc:
        if isinstance(exc, FileNotFoundError):
            raise
        raise ValueError(f"{str(path)!r} is not a fastldp result file (.npz): {exc}") from None

    def decoded(name: str, required: bool):
        raw = entries.pop(name, None)
        if raw is None:
            if required:
                raise ValueError(f"{str(path)!r} is not a fastldp result file: it has no "
                                 f"'{name}' entry")
            return {}
        if raw.dtype != np.uint8 or raw.ndim != 1:
            raise ValueError(f"{str(path)!r}: its '{name}' entry is not JSON bytes (uint8)")
        return _json_object(raw.tobytes(), f"{str(path)!r}: its '{name}' entry")

    summary = decoded("summary", True)
    meta = decoded("fastldp", False)
    if meta and (meta.get("format") != RESULT_FORMAT or meta.get("version") != RESULT_VERSION):
        raise ValueError(f"{str(path)!r} is a result file of format {meta.get('format')!r} "
                         f"version {meta.get('version')!r}; this fastldp reads "
                         f"{RESULT_FORMAT!r} version {RESULT_VERSION}")
    name = meta.get("estimate")
    if name not in entries:
        name = next((n for n in _MAIN_ARRAYS if n in entries), None)
    tuples = meta.get("tuples") or {}
    return LoadedResult(entries, summary, kind=str(meta.get("class", "")), estimate_name=name,
                        tuples={k: int(v) for k, v in tuples.items()}, path=path)


def open_reports(mechanism: Any, sources: Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]]) -> list[ReportFile]:
    """Open every report file of ``sources``; refuse repeats and other mechanisms' files.

    Reads only the files' metadata, so a file given twice (the same path or
    the same file id: a copy), a file of another mechanism or parameters,
    and a ``report`` column of the wrong type are refused before any
    decoding work.
    """
    readers, seen = [], {}
    for path, origin in _expand(sources):
        reader = ReportFile(path)
        if reader.file_id is not None:
            if reader.file_id in seen:
                first_path, first_origin = seen[reader.file_id]
                raise ValueError(
                    f"{first_path} (from {first_origin}) and {path} (from {origin}) hold the "
                    f"same reports (file id {reader.file_id}): one is a copy of the other, and "
                    "a decode reads each report once")
            seen[reader.file_id] = (path, origin)
        reader.check(mechanism)
        readers.append(reader)
    return readers


# ---------------------------------------------------------------------- streaming decode
def _write_checkpoint(path: str, files: Sequence[dict], position: tuple,
                      partial: Partial) -> None:
    state = {"format": _CHECKPOINT_FORMAT, "version": _CHECKPOINT_VERSION, "files": list(files),
             "position": list(position), "partial": base64.b64encode(partial.to_bytes()).decode()}
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)  # atomic: a kill leaves the old checkpoint or the new one


def _read_checkpoint(path: str, readers: Sequence["ReportFile"]):
    """Position and partial of a checkpoint, refused unless it belongs to exactly these files."""
    fix = "delete it or pass another --checkpoint path"
    try:
        with open(path) as fh:
            state = json.load(fh)
    except (ValueError, UnicodeDecodeError) as exc:
        raise ValueError(f"checkpoint {path} is not a fastldp checkpoint ({exc}); {fix}") from None
    if not isinstance(state, dict) or state.get("format") != _CHECKPOINT_FORMAT:
        raise ValueError(f"checkpoint {path} is not a fastldp checkpoint; {fix}")
    if state.get("version") != _CHECKPOINT_VERSION:
        raise ValueError(f"checkpoint {path} has version {state.get('version')!r}; this fastldp "
                         f"resumes version {_CHECKPOINT_VERSION} only; {fix}")
    recorded = state.get("files")
    paths = [r.path for r in readers]
    if not isinstance(recorded, list) or [f.get("path") if isinstance(f, dict) else f
                                          for f in recorded] != paths:
        raise ValueError(f"checkpoint {path} belongs to another decode (other files); {fix}")
    for was, reader in zip(recorded, readers):
        now = reader.identity()
        changed = [f"{key} {was.get(key)!r} -> {now[key]!r}" for key in now
                   if was.get(key) != now[key]]
        if changed:
            raise ValueError(
                f"checkpoint {path} was written for another version of {reader.path} "
                f"({', '.join(changed)}): the file changed since, and resuming would mix the "
                f"counts of both; {fix}")
    position = state.get("position")
    valid = (isinstance(position, list) and len(position) == 2
             and all(isinstance(v, int) for v in position)
             and (0 <= position[0] < len(readers) and 0 <= position[1]
                  < readers[position[0]].num_row_groups
                  or position == [len(readers), 0]))
    if not valid:
        raise ValueError(f"checkpoint {path} holds the position {position!r}, which these files "
                         f"do not have; {fix}")
    try:
        partial = Partial.from_bytes(base64.b64decode(state["partial"], validate=True))
    except (KeyError, TypeError, ValueError) as exc:
        raise ValueError(f"checkpoint {path}: its partial cannot be read ({exc}); {fix}") from None
    return tuple(position), partial


def _progress_callback(progress, done: int, total: int):
    """``(callback or None, bar or None)`` from ``decode_files``'s ``progress``."""
    if progress is None or progress is False or progress is np.False_:
        return None, None
    if progress is True or progress is np.True_:
        from ._progress import progress_bar  # tqdm when installed, else built in

        bar = progress_bar(total, "decode", unit="report")
        bar.update(done)  # a resumed decode starts where its checkpoint left off
        seen = [done]

        def update(rows_done: int, rows_total: int) -> None:
            bar.update(rows_done - seen[0])
            seen[0] = rows_done

        return update, bar
    if callable(progress):
        return progress, None
    from ._validation import param_error

    raise param_error("progress", "decode_files",
                      "True (a progress bar on stderr), False, None or a callable "
                      "progress(rows_done, rows_total)", progress, TypeError)


def decode_files(mechanism: Any, sources: Union[str, "os.PathLike[str]", Sequence[Union[str, "os.PathLike[str]"]]], *,
                 checkpoint: Optional[Union[str, "os.PathLike[str]"]] = None,
                 progress: bool | Callable[[int, int], None] | None = None,
                 finalize: bool = True) -> Any:
    """Decode report files in bounded memory, one row group at a time.

    Parameters
    ----------
    mechanism : estimator
        The server estimator (its parameters must match every file's). One
        built with a fixed ``epsilon`` refuses a file whose epsilon column
        holds another value (:func:`chunk_epsilons`) and decodes at its own
        budget, so the result is bit-identical to ``mechanism.estimate(reports,
        identities=...)``; one with personal budgets decodes the column, like
        ``mechanism.estimate(reports, epsilons, identities=...)``.
    sources : path, glob, directory or list of them
        A file may appear once (the same path, link or file id twice is a
        ``ValueError``).
    checkpoint : path, optional
        After each row group the merged partial, the position and each
        file's identity (file id, size, row groups, rows) are written there
        atomically; a decode that was killed resumes from it and gives the
        same result bit for bit. A checkpoint of other files, or of files
        that changed since, is refused. Removed after a successful decode.
    progress : bool or callable, optional
        ``True`` shows a progress bar on stderr (tqdm when it is installed,
        else a small built-in bar); ``False`` or ``None`` shows none; a
        callable is called as ``progress(rows_done, rows_total)`` after each
        row group.
    finalize : bool
        ``False`` returns the merged :class:`~fastldp.streaming.Partial`.

    Returns
    -------
    The mechanism's estimate object (or the partial).

    Warns
    -----
    SanitizationWarning
        When more than half of the reports were malformed (sanitized).
    """
    if checkpoint is None and finalize and hasattr(mechanism, "decode_report_files"):
        # heavy hitters: one pass per level over the files, memory flat in n
        # (fastldp.heavyhitters._base); bit-identical to the partial/merge path
        result = mechanism.decode_report_files(sources)
        message = sanitization_warning(result)
        if message is not None:
            warnings.warn(message, SanitizationWarning, stacklevel=2)
        return result
    if checkpoint is None:
        return _decode_stream(mechanism, sources, None, progress, finalize)
    from ._stores import FileLock

    # one decode per checkpoint: two would overwrite each other's progress (the lock
    # file beside it names the holder; the OS releases it when the holder exits)
    lock = FileLock(f"{os.fspath(checkpoint)}.lock", f"the decode checkpoint {checkpoint}",
                    "fastldp decode --checkpoint").acquire()
    try:
        result = _decode_stream(mechanism, sources, checkpoint, progress, finalize)
    except BaseException:
        lock.release()
        raise
    lock.release(remove=True)
    return result


def _decode_stream(mechanism: Any, sources: Any, checkpoint: Any, progress: Any,
                   finalize: bool) -> Any:
    """:func:`decode_files`'s streaming decode (the checkpoint, if any, locked by the caller)."""
    readers = open_reports(mechanism, sources)
    files = [r.identity() for r in readers]
    total = sum(r.num_rows for r in readers)
    start, state = (0, 0), None
    if checkpoint is not None and os.path.exists(checkpoint):
        start, state = _read_checkpoint(os.fspath(checkpoint), readers)
    done = sum(r.num_rows for r in readers[:start[0]])
    if start[1]:
        done += sum(readers[start[0]]._file.metadata.row_group(g).num_rows
                    for g in range(start[1]))
    progress, bar = _progress_callback(progress, done, total)
    try:
        for fi in range(start[0], len(readers)):
            reader = readers[fi]
            for gi in range(start[1] if fi == start[0] else 0, reader.num_row_groups):
                reports, eps, ids = reader.row_group(gi)
                eps = chunk_epsilons(mechanism, eps, f"{reader.path}, row group {gi}")
                part = mechanism.partial(reports, eps, ids)
                state = part if state is None else mechanism.merge(state, part)
                done += reports.shape[0]
                if checkpoint is not None:
                    nxt = (fi, gi + 1) if gi + 1 < reader.num_row_groups else (fi + 1, 0)
                    _write_checkpoint(os.fspath(checkpoint), files, nxt, state)
                if progress is not None:
                    progress(done, total)
    finally:
        if bar is not None:
            bar.close()
    if state is None:
        empty = np.zeros(0)
        state = mechanism.partial(empty, chunk_epsilons(mechanism, empty, "no reports"),
                                  np.zeros(0, dtype=np.uint64))
    if not finalize:
        return state
    result = mechanism.finalize(state)
    if checkpoint is not None and os.path.exists(checkpoint):
        os.remove(checkpoint)
    message = sanitization_warning(result)
    if message is not None:
        warnings.warn(message, SanitizationWarning, stacklevel=3)
    return result
