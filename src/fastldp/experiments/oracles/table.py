"""The results table of the frequency-oracle experiments: one row per estimate and method.

Same file discipline as :mod:`fastldp.experiments.table` (append-only CSV,
one ``write`` + ``fsync`` per cell, a torn last line cut off on resume, the
unique ``config/method/seed`` key first and ``failure`` last).
"""

from __future__ import annotations

from ..table import ResultsTable, read_results

__all__ = ["COLUMNS", "OracleResultsTable", "read_oracle_results", "is_oracles_table"]

#: Column name -> type, in file order. Errors are on frequencies (counts / n).
COLUMNS = {
    "key": str,               # config/method/seed, unique
    "config": str,            # content hash of the canonical configuration
    "method": str,            # post-processing method (raw: the unbiased estimate)
    "seed": int,              # the repetition
    "spec": str,
    "population": str,        # zipf, movielens, gowalla
    "population_params": str, # canonical JSON of the population table
    "n": int,                 # reports (realized on real data)
    "d": int,                 # domain size (realized on real data)
    "oracle": str,            # grr, olh, oue, ...
    "eps": float,
    "top_k": int,
    "set_size": int,          # items in each random set query
    "queries": int,           # random set queries
    "data_hash": str,         # hash of the true values (the rows of a repetition share it)
    "mse_full": float,        # mean over the d items of (f_hat - f)^2
    "mse_set": float,         # mean over the queries of (sum_S f_hat - sum_S f)^2
    "mse_topk": float,        # mean over the true top_k items of (f_hat - f)^2
    "max_error": float,       # max over the items of |f_hat - f|
    "total": float,           # sum of f_hat (1 for a consistent estimate)
    "negatives": int,         # items with f_hat < 0
    "consistent": bool,       # f_hat >= 0 and sum f_hat = 1 (to 1e-9)
    "iterations": int,        # IBU's iterations (empty for the other methods)
    "converged": bool,        # IBU's convergence (empty for the other methods)
    "oracle_s": float,        # privatize + estimate, shared by the rows of a cell
    "method_s": float,        # this method's post-processing
    "failure": str,           # empty when the row succeeded
}


class OracleResultsTable(ResultsTable):
    """An append-only, resumable CSV of frequency-oracle results rows at ``path``."""

    columns = COLUMNS
    kind = "fastldp frequency-oracle results table"


def is_oracles_table(path) -> bool:
    """Whether ``path`` is a results CSV with this module's header."""
    return OracleResultsTable.owns(path)


def read_oracle_results(path) -> list[dict]:
    """Read a frequency-oracle results CSV into typed dicts (a torn last line is ignored)."""
    return read_results(path, COLUMNS)
