"""The results table of the sparse-vector experiments: section 8's columns.

Same file discipline as :mod:`fastldp.experiments.table` (append-only CSV,
one ``write`` + ``fsync`` per cell, a torn last line cut off on resume, the
unique ``config/method/trial`` key first and ``failure`` last), and the same
value encoding; only the columns differ.
"""

from __future__ import annotations

from ..table import ResultsTable, read_results

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


class SparseResultsTable(ResultsTable):
    """An append-only, resumable CSV of sparse-vector results rows at ``path``."""

    columns = COLUMNS
    kind = "fastldp sparse-vector results table"


def is_sparse_table(path) -> bool:
    """Whether ``path`` is a results CSV with this module's header."""
    return SparseResultsTable.owns(path)


def read_sparse_results(path) -> list[dict]:
    """Read a sparse-vector results CSV into typed dicts (a torn last line is ignored)."""
    return read_results(path, COLUMNS)
