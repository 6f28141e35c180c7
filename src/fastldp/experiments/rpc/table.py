"""The results table of the sparse-vector experiments: section 8's columns.

Same file discipline as :mod:`fastldp.experiments.table` (append-only CSV,
one ``write`` + ``fsync`` per cell, a torn last line cut off on resume, the
unique ``config/method/trial`` key first and ``failure`` last), and the same
value encoding; only the columns differ.
"""

from __future__ import annotations

import csv
import io
import os
from pathlib import Path

from ..table import ResultsTable, _decode, _encode

__all__ = ["COLUMNS", "SparseResultsTable", "read_sparse_results", "is_sparse_table"]

#: Column name -> type, in file order.
COLUMNS = {
    "key": str,               # config/method/trial, unique
    "config": str,            # content hash of the canonical configuration
    "method": str,
    "family": str,            # RPC, PCKV-UE, PCKV-GRR, PrivKVM, Succinct, Collision
    "seed": int,              # the trial
    "spec": str,
    "population": str,        # population kind
    "population_params": str, # canonical JSON of the population table
    "n": int,                 # realized users
    "d": int,
    "m": int,                 # the mechanisms' m (most items per user)
    "eps": float,
    "q_frac": float,
    "q": int,                 # corrupted users, round(q_frac n)
    "model": str,             # none, additive, strong
    "attack": str,            # none, untargeted, targeted
    "target": int,            # |T| of a targeted attack
    "clip": bool,             # final clipping of the estimate (section 8.1)
    "data_hash": str,         # content hash of the users' vectors (pairing check)
    "corrupted_hash": str,    # hash of the corrupted users (additive model: shared)
    "randomizer": str,        # Q of RPC / Succinct
    "route": str,             # value route (RPC: ternary, rounded, direct; Collision: frequency, signed)
    "R": float,               # clipping threshold (RPC, Succinct)
    "alpha": float,           # RPC's bias correction, Eq. (21)
    "mae": float,             # ||mu_hat - mu||_1 / d, the final estimate
    "mae_raw": float,         # the same before the final clipping
    "mae_clean": float,       # the final estimate of the same trial without attack
    "max_error": float,       # ||mu_hat - mu||_inf
    "attack_objective": float,  # sum_{j in T} (mu_hat - mu_hat_c)(j) before final clipping
    "runtime_s": float,       # privatize + estimate, clean run
    "attack_s": float,        # the attack (choosing users and outputs)
    "failure": str,           # empty when the row succeeded
}

HEADER = ",".join(COLUMNS) + "\n"


def encode_rows(rows) -> str:
    buf = io.StringIO()
    writer = csv.writer(buf, lineterminator="\n")
    for row in rows:
        unknown = set(row) - set(COLUMNS)
        if unknown:
            raise KeyError(f"Results rows have no columns {sorted(unknown)}.")
        writer.writerow([_encode(row.get(name)) for name in COLUMNS])
    return buf.getvalue()


class SparseResultsTable(ResultsTable):
    """An append-only, resumable CSV of sparse-vector results rows at ``path``."""

    def prepare(self) -> set:
        """Create the file or repair a torn tail; return the keys already present."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if not self.path.exists() or self.path.stat().st_size == 0:
            self._replace(HEADER)
            return set()
        data = self.path.read_bytes()
        if not data.endswith(b"\n"):
            cut = data.rfind(b"\n") + 1
            if cut == 0:
                self._replace(HEADER)
                return set()
            os.truncate(self.path, cut)
            data = data[:cut]
        header, _, body = data.decode("utf-8").partition("\n")
        if header + "\n" != HEADER:
            raise ValueError(
                f"{str(self.path)!r} is not a fastldp sparse-vector results table with the "
                f"current columns; write to another --out folder.")
        keys = set()
        for lineno, record in enumerate(csv.reader(io.StringIO(body)), start=2):
            if len(record) != len(COLUMNS):
                raise ValueError(f"{str(self.path)!r} line {lineno} has {len(record)} fields, "
                                 f"expected {len(COLUMNS)}.")
            keys.add(record[0])
        return keys

    def append(self, rows) -> None:
        text = encode_rows(rows)
        if not text:
            return
        fd = os.open(self.path, os.O_WRONLY | os.O_APPEND)
        try:
            payload = text.encode("utf-8")
            while payload:
                payload = payload[os.write(fd, payload):]
            os.fsync(fd)
        finally:
            os.close(fd)

    def read(self) -> list[dict]:
        return read_sparse_results(self.path)

    def drop_failures(self) -> int:
        """Rewrite the table without its failed rows (atomically); return how many went."""
        self.prepare()
        lines = self.path.read_text("utf-8").splitlines(keepends=True)
        keep, dropped = [HEADER], 0
        for record, line in zip(csv.reader(lines[1:]), lines[1:]):
            if record[-1]:
                dropped += 1
            else:
                keep.append(line)
        if dropped:
            self._replace("".join(keep))
        return dropped


def is_sparse_table(path) -> bool:
    """Whether ``path`` is a results CSV with this module's header."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.readline() == HEADER
    except OSError:
        return False


def read_sparse_results(path) -> list[dict]:
    """Read a sparse-vector results CSV into typed dicts (a torn last line is ignored)."""
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
    unknown = [name for name in header if name not in COLUMNS]
    if unknown:
        raise ValueError(f"{str(path)!r} has unknown columns {unknown}.")
    kinds = [COLUMNS[name] for name in header]
    return [{name: _decode(value, kind) for name, kind, value in zip(header, kinds, record)}
            for record in reader if len(record) == len(header)]
