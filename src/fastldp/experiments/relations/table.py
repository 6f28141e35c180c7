"""The results table of the relation experiments (paper 000, section 7): its columns.

The file discipline (append-only, resumable, typed) is
:class:`fastldp.experiments.table.ResultsTable`'s.
"""

from __future__ import annotations

from ..table import ResultsTable
from ..table import read_results as _read_results

__all__ = ["COLUMNS", "HEADER", "RelationResultsTable", "read_results"]

#: Column name -> type (``str``, ``int``, ``float``, ``bool``), in file order.
COLUMNS = {
    "key": str,               # config/method/seed, unique
    "config": str,            # content hash of the configuration
    "method": str,
    "family": str,
    "decoder": str,
    "seed": int,
    "spec": str,              # the spec that wrote the row (not part of the key)
    "population": str,        # population kind
    "population_params": str, # canonical JSON of the population table
    "n": int,                 # realized identities
    "d1": int,
    "d2": int,
    "s": int,
    "k": int,
    "budget": str,            # budget profile
    "eps0": float,            # nominal scale (public cap)
    "eps_mean": float,        # realized budgets
    "eps_min": float,
    "eps_max": float,
    "alpha": float,
    "corruption": str,
    "n_corrupted": int,
    "attack": str,
    "attack_objective": float,
    "groups": int,
    "E_s": float,             # ||M_hat - M^(s)||_F^2, M^(s) the best s-sparse target
    "loss_full": float,       # ||M_hat - M_pop||_F^2
    "precision": float,
    "recall": float,
    "f1": float,
    "approx_tail": float,     # ||M_pop - M^(s)||_F^2
    "runtime_s": float,
    "runtime_scope": str,     # "family:JPRS": shared wall clock of one family call
    "payload_bits": float,    # private payload per identity
    "theorem1": bool,         # regime audit of the realized budgets
    "theorem4": bool,
    "corollary2": bool,
    "I_eff": float,
    "L_eff": float,
    "rho_ind": float,
    "lower_bound": float,
    "upper_bound": float,
    "regime_notes": str,
    "failure": str,           # empty when the row succeeded
}

HEADER = ",".join(COLUMNS) + "\n"


class RelationResultsTable(ResultsTable):
    """An append-only, resumable CSV of relation results rows at ``path``."""

    columns = COLUMNS
    kind = "fastldp relation results table"


def read_results(path, columns=None) -> list[dict]:
    """Read a relation results CSV into typed dicts (a torn last line is ignored)."""
    return _read_results(path, COLUMNS if columns is None else columns)
