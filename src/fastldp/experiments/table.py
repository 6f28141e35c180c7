"""The results table of every family: one CSV, one row per configuration-method-seed, append-only.

Each family names its columns (``fastldp.experiments.<family>.table``);
the file discipline below is the same for all of them. The first column is
the unique ``config/method/seed`` key and the last is ``failure`` (empty when
the row succeeded).

Rows are appended in whole lines by one ``write`` per cell followed by
``fsync``, so a process killed at any moment leaves complete rows plus at
most one torn final line. :meth:`ResultsTable.prepare` cuts that line off
and returns the keys already present; the runner skips them. Every record
is one physical line: text fields never hold a newline.
"""

from __future__ import annotations

import csv
import io
import math
import os
from pathlib import Path

__all__ = ["ResultsTable", "read_results", "write_parquet", "encode_rows", "table_header"]

def _encode(value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, (int, str)) and not hasattr(value, "dtype"):
        text = value if isinstance(value, str) else str(value)
        return text.replace("\r", " ").replace("\n", " | ")
    if hasattr(value, "dtype"):  # numpy scalar
        if value.dtype.kind == "b":
            return _encode(bool(value))
        if value.dtype.kind in "iu":
            return str(int(value))
    x = float(value)
    return "" if math.isnan(x) else repr(x)


def _decode(text: str, kind):
    if kind is str:
        return text
    if kind is float:
        return math.nan if text == "" else float(text)
    if kind is int:
        return None if text == "" else int(text)
    if text == "":
        return None
    return text == "true"


def encode_rows(rows, columns) -> str:
    """Return the CSV text (whole lines) of ``rows`` (dicts keyed by ``columns``)."""
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in rows:
        unknown = set(row) - set(columns)
        if unknown:
            raise KeyError(f"Results rows have no columns {sorted(unknown)}.")
        writer.writerow([_encode(row.get(name)) for name in columns])
    return buf.getvalue()


class ResultsTable:
    """An append-only, resumable CSV of results rows at ``path``.

    A family subclasses it and sets :attr:`columns` (and the :attr:`kind`
    named in errors).
    """

    #: Column name -> type (``str``, ``int``, ``float``, ``bool``), in file order.
    columns: dict = {}
    #: What the table holds, for error messages.
    kind = "fastldp results table"

    def __init__(self, path):
        if not self.columns:
            raise TypeError("ResultsTable is abstract: use a family's table (its columns).")
        self.path = Path(path)

    @classmethod
    def owns(cls, path) -> bool:
        """Whether the CSV at ``path`` has exactly this table's header."""
        return table_header(path) == ",".join(cls.columns)

    @property
    def header(self) -> str:
        return ",".join(self.columns) + "\n"

    def prepare(self) -> set:
        """Create the file or repair a torn tail; return the keys already present.

        Raises ValueError when the file exists with other columns.
        """
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists() or self.path.stat().st_size == 0:
            self._replace(self.header)
            return set()
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):
            # a kill mid-write: drop the incomplete last line
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                self._replace(self.header)
                return set()
            os.truncate(self.path, cut)
            data = data[:cut]
        header, _, body = data.decode("utf-8").partition("\n")
        if header + "\n" != self.header:
            raise ValueError(
                f"{str(self.path)!r} is not a {self.kind} with the current columns; "
                f"write to another --out folder."
            )
        keys = set()
        for lineno, record in enumerate(csv.reader(io.StringIO(body)), start=2):
            if len(record) != len(self.columns):
                raise ValueError(
                    f"{str(self.path)!r} line {lineno} has {len(record)} fields, "
                    f"expected {len(self.columns)}."
                )
            keys.add(record[0])
        return keys

    def append(self, rows) -> None:
        """Append ``rows`` as whole lines and make them durable."""
        text = encode_rows(rows, self.columns)
        if not text:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            payload = text.encode("utf-8")
            while payload:
                written = os.write(fd, payload)
                payload = payload[written:]
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self) -> list[dict]:
        """Return the complete rows, typed by :attr:`columns` (a torn last line is ignored)."""
        return read_results(self.path, self.columns)

    def failed_keys(self) -> list:
        """The keys of the table's failed rows (a torn last line is ignored)."""
        if not self.path.is_file():
            return []
        text = self.path.read_text("utf-8")
        if text and not text.endswith("\n"):
            text = text[: text.rfind("\n") + 1]
        reader = csv.reader(io.StringIO(text))
        next(reader, None)
        return [record[0] for record in reader if len(record) == len(self.columns) and record[-1]]

    def drop_failures(self) -> int:
        """Rewrite the table without its failed rows (atomically); return how many went."""
        self.prepare()
        lines = self.path.read_text("utf-8").splitlines(keepends=True)
        keep = [self.header]
        dropped = 0
        for record, line in zip(csv.reader(lines[1:]), lines[1:]):
            if record[-1]:
                dropped += 1
            else:
                keep.append(line)
        if dropped:
            self._replace("".join(keep))
        return dropped

    def _replace(self, text: str) -> None:
        tmp = self.path.with_name(self.path.name + ".tmp")
        with open(tmp, "w", encoding="utf-8", newline="") as fh:
            fh.write(text)
            fh.flush()
            os.fsync(fh.fileno())
        os.replace(tmp, self.path)


def table_header(path) -> str:
    """The first line of the CSV at ``path`` (without the newline); ``""`` if unreadable."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.readline().rstrip("\r\n")
    except (OSError, UnicodeDecodeError):
        return ""


def read_results(path, columns=None) -> list[dict]:
    """Read a results CSV into typed dicts (file order; a torn last line is ignored).

    ``columns`` gives the known columns and their types; by default they are
    those of the family whose table has this header.
    """
    if columns is None:  # the family whose table has this header
        from .harness import table_family
        from .registry import get_spec_family

        columns = get_spec_family(table_family(path)).table.columns
    path = Path(path)
    if not path.is_file():
        raise FileNotFoundError(f"No results table at {str(path)!r}.")
    text = path.read_text("utf-8")
    if text and not text.endswith("\n"):
        text = text[: text.rfind("\n") + 1]
    reader = csv.reader(io.StringIO(text))
    header = next(reader, None)
    if header is None:
        return []
    unknown = [name for name in header if name not in columns]
    if unknown:
        raise ValueError(f"{str(path)!r} has unknown columns {unknown}.")
    kinds = [columns[name] for name in header]
    return [
        {name: _decode(value, kind) for name, kind, value in zip(header, kinds, record)}
        for record in reader
        if len(record) == len(header)
    ]


def write_parquet(csv_path, columns, parquet_path=None) -> Path:
    """Write the CSV's rows (typed by ``columns``) to Parquet (needs pyarrow); return its path."""
    try:
        import pyarrow as pa
        import pyarrow.parquet as pq
    except ImportError as exc:
        raise ImportError("Parquet output needs pyarrow: pip install pyarrow") from exc
    rows = read_results(csv_path, columns)
    parquet_path = Path(parquet_path or Path(csv_path).with_suffix(".parquet"))
    values = {name: [row.get(name) for row in rows] for name in columns}
    types = {str: pa.string(), int: pa.int64(), float: pa.float64(), bool: pa.bool_()}
    table = pa.table({name: pa.array(values[name], type=types[kind])
                      for name, kind in columns.items()})
    tmp = parquet_path.with_name(parquet_path.name + ".tmp")
    pq.write_table(table, tmp)
    os.replace(tmp, parquet_path)
    return parquet_path
