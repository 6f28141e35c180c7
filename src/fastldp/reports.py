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
``epsilon``   ``float64``, no nulls           the identity's committed budget
``report``    numeric, or a fixed-size list   the report as the mechanism's ``privatize``
              of ``m`` numbers                returned it (one value, or a row of ``m``)
============  ==============================  ==========================================

The Parquet key-value metadata ``fastldp.reports`` holds a JSON object::

    {"format": "fastldp-reports", "version": 1,
     "mechanism": "JPRS", "params": {"shape": [64, 64], "k": 4, ...},
     "report_shape": [], "report_dtype": "int8"}

``mechanism`` and ``params`` are the writing mechanism's class name and
public parameters (``stream_params()``, codebook seed included); a reader
refuses a file whose mechanism or parameters differ from its own. Reports
are stored as given: a malformed value (a NaN, a null, an out-of-range
symbol) is sanitized and counted by the decoder exactly as in memory. A
null report reads as NaN. Nulls in ``identity`` or ``epsilon`` are refused:
they are the public inputs the decoder cannot repair.

Identities must be distinct across everything decoded together. The
in-memory ``estimate`` checks that; a streaming decode checks it within
each row group only, since checking it across groups would take memory
that grows with the number of reports.
"""

from __future__ import annotations

import base64
import glob
import json
import os
from pathlib import Path
from typing import Callable, Iterator, Sequence

import numpy as np

from .streaming import Partial

__all__ = ["write_reports", "ReportWriter", "ReportFile", "decode_files", "expand_sources",
           "save_result", "open_reports", "FORMAT_VERSION", "METADATA_KEY"]

FORMAT_VERSION = 1
METADATA_KEY = b"fastldp.reports"
_FORMAT = "fastldp-reports"
DEFAULT_ROW_GROUP = 1 << 20


def _pyarrow():
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("report files need pyarrow: pip install 'fastldp[parquet]'") from None
    return pa, pq


def mechanism_spec(mechanism) -> dict:
    """``{"mechanism": class name, "params": public parameters}`` of a streaming estimator."""
    params = getattr(mechanism, "stream_params", None)
    if params is None or not hasattr(mechanism, "partial"):
        raise TypeError(f"{type(mechanism).__name__} has no streaming decode "
                        "(stream_params / partial / finalize)")
    return {"mechanism": type(mechanism).__name__, "params": params()}


def _describe(spec: dict) -> str:
    params = ", ".join(f"{k}={v!r}" for k, v in spec["params"].items())
    return f"{spec['mechanism']}({params})"


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

    def __init__(self, path, mechanism, *, row_group_size: int = DEFAULT_ROW_GROUP):
        self.path = os.fspath(path)
        self.spec = mechanism_spec(mechanism)
        self.default_epsilon = getattr(mechanism, "epsilon", None)
        if not isinstance(row_group_size, (int, np.integer)) or row_group_size < 1:
            raise ValueError(f"The 'row_group_size' parameter of ReportWriter must be an int >= 1. "
                             f"Got {row_group_size!r} instead.")
        self.row_group_size = int(row_group_size)
        self._writer = None
        self._shape = None
        self.rows = 0

    def write(self, reports, epsilons=None, identities=None) -> None:
        """Append one chunk of reports.

        Parameters
        ----------
        reports : numpy array, shape (n,) or (n, m)
            Numeric reports as ``privatize`` returned them.
        epsilons : float or array of shape (n,), optional
            Budgets; default the mechanism's ``epsilon``.
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
        shape = list(arr.shape[1:])
        if arr.dtype.kind == "b":
            arr = arr.astype(np.int8)
        if self._writer is None:
            self._shape, self._dtype = shape, arr.dtype
            value_type = pa.from_numpy_dtype(arr.dtype)
            report_type = value_type if not shape else pa.list_(value_type, shape[0])
            meta = dict(self.spec, format=_FORMAT, version=FORMAT_VERSION,
                        report_shape=shape, report_dtype=str(arr.dtype))
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
        """Finish the file (an empty writer leaves no file)."""
        if self._writer is not None:
            self._writer.close()
            self._writer = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()
        return False


def write_reports(path, mechanism, reports, epsilons=None, identities=None, *,
                  row_group_size: int = DEFAULT_ROW_GROUP) -> Path:
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
    """

    def __init__(self, path):
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
        meta = json.loads(raw)
        if meta.get("format") != _FORMAT or meta.get("version") != FORMAT_VERSION:
            raise ValueError(f"{self.path}: report format {meta.get('format')!r} version "
                             f"{meta.get('version')!r}; this fastldp reads {_FORMAT!r} version "
                             f"{FORMAT_VERSION}")
        names = schema.names
        if names[:3] != ["identity", "epsilon", "report"]:
            raise ValueError(f"{self.path}: columns {names}, expected identity, epsilon, report")
        self.spec = {"mechanism": meta["mechanism"], "params": meta["params"]}
        self.report_shape = tuple(meta.get("report_shape", []))
        self.num_rows = self._file.metadata.num_rows
        self.num_row_groups = self._file.num_row_groups

    def check(self, mechanism) -> None:
        """Raise ``ValueError`` unless ``mechanism`` is the one that wrote the file."""
        mine = mechanism_spec(mechanism)
        if mine != self.spec:
            raise ValueError(
                f"{self.path} holds reports of {_describe(self.spec)}; they cannot be decoded "
                f"by {_describe(mine)} (every public parameter, the codebook seed included, "
                "must agree)")

    def row_group(self, i: int):
        """``(reports, epsilons, identities)`` of row group ``i`` as NumPy arrays."""
        table = self._file.read_row_group(i)
        return _table_arrays(table, self.path, self.report_shape)

    def __iter__(self) -> Iterator[tuple]:
        for i in range(self.num_row_groups):
            yield self.row_group(i)


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


def expand_sources(sources) -> list[str]:
    """Expand a path, a glob, a directory or a list of them into sorted file paths."""
    if isinstance(sources, (str, os.PathLike)):
        sources = [sources]
    out = []
    for src in sources:
        text = os.fspath(src)
        if os.path.isdir(text):
            out.extend(sorted(str(p) for p in Path(text).glob("*.parquet")))
        elif any(c in text for c in "*?["):
            out.extend(sorted(glob.glob(text)))
        else:
            out.append(text)
    if not out:
        raise ValueError(f"no report files match {sources!r}")
    missing = [p for p in out if not os.path.exists(p)]
    if missing:
        raise FileNotFoundError(f"report file not found: {missing[0]}")
    return out


def save_result(result, path) -> Path:
    """Write an estimate's arrays to an ``.npz`` file (summaries as a JSON ``summary``)."""
    import dataclasses

    arrays, summary = {}, {}
    for f in dataclasses.fields(result):
        value = getattr(result, f.name)
        if isinstance(value, np.ndarray):
            arrays[f.name] = value
        elif isinstance(value, tuple) and all(isinstance(v, np.ndarray) for v in value):
            for i, v in enumerate(value):
                arrays[f"{f.name}_{i}"] = v
        elif dataclasses.is_dataclass(value):
            summary[f.name] = dataclasses.asdict(value)
        else:
            summary[f.name] = value
    arrays["summary"] = np.frombuffer(json.dumps(summary, default=str).encode(), dtype=np.uint8)
    with open(path, "wb") as fh:
        np.savez(fh, **arrays)
    return Path(path)


def open_reports(mechanism, sources) -> list:
    """Open every report file of ``sources`` and refuse any written by another mechanism.

    Reads only the files' metadata, so a mismatch is refused before any
    decoding work.
    """
    readers = [ReportFile(f) for f in expand_sources(sources)]
    for reader in readers:
        reader.check(mechanism)
    return readers


# ---------------------------------------------------------------------- streaming decode
def _write_checkpoint(path: str, files: Sequence[str], position: tuple, partial: Partial) -> None:
    state = {"format": "fastldp-checkpoint", "version": 1, "files": list(files),
             "position": list(position), "partial": base64.b64encode(partial.to_bytes()).decode()}
    tmp = f"{path}.tmp"
    with open(tmp, "w") as fh:
        json.dump(state, fh)
        fh.flush()
        os.fsync(fh.fileno())
    os.replace(tmp, path)  # atomic: a kill leaves the old checkpoint or the new one


def _read_checkpoint(path: str, files: Sequence[str]):
    with open(path) as fh:
        state = json.load(fh)
    if state.get("format") != "fastldp-checkpoint" or state.get("files") != list(files):
        raise ValueError(f"checkpoint {path} belongs to another decode (other files); "
                         "delete it or pass another --checkpoint path")
    return tuple(state["position"]), Partial.from_bytes(base64.b64decode(state["partial"]))


def decode_files(mechanism, sources, *, checkpoint=None, progress: Callable | None = None,
                 finalize: bool = True):
    """Decode report files in bounded memory, one row group at a time.

    Parameters
    ----------
    mechanism : estimator
        The server estimator (its parameters must match every file's).
    sources : path, glob, directory or list of them
    checkpoint : path, optional
        After each row group the merged partial and the position are written
        there atomically; a decode that was killed resumes from it and gives
        the same result bit for bit. Removed after a successful decode.
    progress : callable, optional
        Called as ``progress(rows_done, rows_total)`` after each row group.
    finalize : bool
        ``False`` returns the merged :class:`~fastldp.streaming.Partial`.

    Returns
    -------
    The mechanism's estimate object (or the partial).
    """
    readers = open_reports(mechanism, sources)
    files = [r.path for r in readers]
    total = sum(r.num_rows for r in readers)
    start, state = (0, 0), None
    if checkpoint is not None and os.path.exists(checkpoint):
        start, state = _read_checkpoint(os.fspath(checkpoint), files)
    done = sum(r.num_rows for r in readers[:start[0]])
    if start[1]:
        done += sum(readers[start[0]]._file.metadata.row_group(g).num_rows
                    for g in range(start[1]))
    for fi in range(start[0], len(readers)):
        reader = readers[fi]
        for gi in range(start[1] if fi == start[0] else 0, reader.num_row_groups):
            reports, eps, ids = reader.row_group(gi)
            part = mechanism.partial(reports, eps, ids)
            state = part if state is None else mechanism.merge(state, part)
            done += reports.shape[0]
            if checkpoint is not None:
                nxt = (fi, gi + 1) if gi + 1 < reader.num_row_groups else (fi + 1, 0)
                _write_checkpoint(os.fspath(checkpoint), files, nxt, state)
            if progress is not None:
                progress(done, total)
    if state is None:
        state = mechanism.partial(np.zeros(0), np.zeros(0), np.zeros(0, dtype=np.uint64))
    if not finalize:
        return state
    result = mechanism.finalize(state)
    if checkpoint is not None and os.path.exists(checkpoint):
        os.remove(checkpoint)
    return result
