"""Run an oracles spec: one estimate per cell, every post-processing method on it.

Paired design. Within one configuration and repetition every method
post-processes the same estimate (the same reports), and is scored on the
same true values, the same random set queries and the same top-k items.
Each random stream is a :class:`numpy.random.SeedSequence` of the
repetition and the configuration fields it depends on
(:func:`fastldp.experiments.runner.seed_streams`), so a row never depends on
which other cells run, in which order, or on the number of workers:

========== ==================================================================
stream     depends on
========== ==================================================================
data       population, n, d: the synthetic values (shared by every oracle and
           eps of a repetition)
codebook   the same and the oracle: the public hashes
clients    the same, the oracle and eps: the clients' coins
queries    population, d, set_fraction, queries: the random set queries
           (shared by every oracle and eps of a repetition)
========== ==================================================================

The metrics (:func:`errors`) are those of Wang et al. (NDSS 2020),
on frequencies ``f_hat = counts / n``: the mean squared error over the whole
domain, over random set queries (the squared error of a subset sum), and
over the true ``top_k`` items.
"""

from __future__ import annotations

import json
import time
from pathlib import Path

import numpy as np

from ..runner import RunSummary, _message, run_grid, seed_streams
from ..spec import UNSET, Cell, Spec, repetitions_alias
from .data import load_population
from .methods import METHODS, UnknownMethodError, apply_method, build_oracle
from .spec import expand_grid, load_spec, set_size
from .table import OracleResultsTable

__all__ = ["run", "run_cell", "streams", "errors", "random_sets", "top_k_items"]

_DATA = ("population", "n", "d")
_STREAM_FIELDS = {
    "data": _DATA,
    "codebook": _DATA + ("oracle",),
    "clients": _DATA + ("oracle", "eps"),
    "queries": ("population", "d", "set_fraction", "queries"),
}


def streams(config: dict, seed: int):
    """Return ``stream(name) -> SeedSequence`` for one configuration and repetition."""
    return seed_streams(config, seed, _STREAM_FIELDS, prefix=("oracle-consistency",))


def random_sets(d: int, size: int, queries: int, rng) -> np.ndarray:
    """``queries`` uniform random subsets of ``[0, d)`` of ``size`` items: a 0/1 matrix."""
    keys = np.random.default_rng(rng).random((queries, d))
    members = np.argpartition(keys, size - 1, axis=1)[:, :size]
    out = np.zeros((queries, d), dtype=np.float64)
    np.put_along_axis(out, members, 1.0, axis=1)
    return out


def top_k_items(frequencies: np.ndarray, k: int) -> np.ndarray:
    """The ``k`` items of largest true frequency (ties to the smaller item)."""
    order = np.lexsort((np.arange(frequencies.shape[0]), -frequencies))
    return np.sort(order[:k])


def errors(estimate: np.ndarray, truth: np.ndarray, sets: np.ndarray, top: np.ndarray) -> dict:
    """The error columns of one estimate (frequencies) against the truth.

    Parameters
    ----------
    estimate, truth : float64 arrays, shape (d,)
    sets : 0/1 float64 array, shape (queries, d)
        The random set queries (:func:`random_sets`).
    top : int array
        The true top-k items (:func:`top_k_items`).
    """
    diff = estimate - truth
    total = float(estimate.sum())
    return {
        "mse_full": float(np.mean(diff ** 2)),
        "mse_set": float(np.mean((sets @ diff) ** 2)),
        "mse_topk": float(np.mean(diff[top] ** 2)),
        "max_error": float(np.max(np.abs(diff))),
        "total": total,
        "negatives": int(np.count_nonzero(estimate < 0)),
        "consistent": bool(np.all(estimate >= 0) and abs(total - 1.0) <= 1e-9),
    }


def _base_row(cell: Cell) -> dict:
    cfg = cell.config
    return {
        "config": cell.config_id, "seed": cell.seed, "spec": cell.spec,
        "population": cfg["population"]["kind"],
        "population_params": json.dumps(cfg["population"], sort_keys=True, separators=(",", ":")),
        "n": cfg["n"], "d": cfg["d"], "oracle": cfg["oracle"], "eps": cfg["eps"],
        "top_k": cfg["top_k"], "set_size": set_size(cfg), "queries": cfg["queries"],
    }


def run_cell(cell: Cell, *, methods=None, n_threads: int = 1, data_dir=None) -> list[dict]:
    """Run ``methods`` (default: the cell's) on one repetition; return one row each.

    Never raises for a failing population, oracle or method: the failure is
    written into the ``failure`` column of the rows it affects.
    """
    methods = tuple(cell.methods if methods is None else methods)
    base = _base_row(cell)
    rows = {m: {**base, "key": cell.key(m), "method": m, "failure": ""} for m in methods}
    cfg = cell.config
    stream = streams(cfg, cell.seed)
    try:
        pop = load_population(cfg, stream, data_dir)
        truth = pop.frequencies
        size = max(1, int(round(cfg["set_fraction"] * pop.d)))
        top = top_k_items(truth, min(cfg["top_k"], pop.d))
        sets = random_sets(pop.d, size, cfg["queries"], stream("queries"))
        codebook = int(stream("codebook").generate_state(1, dtype=np.uint64)[0])
        oracle = build_oracle(cfg["oracle"], d=pop.d, eps=cfg["eps"], codebook_seed=codebook,
                              n_threads=n_threads)
        t0 = time.perf_counter()
        reports = oracle.privatize(pop.values, rng=np.random.default_rng(stream("clients")))
        estimate = oracle.estimate(reports)
        shared = {"n": pop.n, "d": pop.d, "set_size": size, "top_k": int(top.shape[0]),
                  "data_hash": pop.data_hash, "oracle_s": time.perf_counter() - t0}
    except Exception as exc:
        for row in rows.values():
            row["failure"] = _message(exc, "set-up: ")
        return list(rows.values())

    for method, row in rows.items():
        row.update(shared)
        try:
            t1 = time.perf_counter()
            counts, info = apply_method(method, estimate, oracle)
            row["method_s"] = time.perf_counter() - t1
            row.update(info)
            row.update(errors(counts / pop.n, truth, sets, top))
        except UnknownMethodError as exc:
            row["failure"] = _message(exc)
        except Exception as exc:
            row["failure"] = _message(exc, f"{method}: ")
    return list(rows.values())


def _task(cell: Cell, methods: tuple, n_threads: int, data_dir) -> list[dict]:
    return run_cell(cell, methods=methods, n_threads=n_threads, data_dir=data_dir)


def run(spec, out=None, *, workers: int = 1, quick: bool = False,
        repetitions: int | None = None, progress: bool = True, data_dir=None,
        retry_failures: bool = False, threads: int | None = None, trials=UNSET) -> RunSummary:
    """Run every missing row of an oracles spec into ``OUT/results.csv``.

    Parameters are those of :func:`fastldp.experiments.run`; ``repetitions``
    replaces the spec's ``seeds`` by ``range(repetitions)`` (only when
    ``spec`` is a path; ``trials`` is its deprecated name). Rows already in
    the table are kept and skipped.
    """
    repetitions = repetitions_alias(repetitions, trials, "run")
    if not isinstance(spec, Spec):
        spec = load_spec(spec, quick=quick, repetitions=repetitions)
    if not (isinstance(workers, int) and not isinstance(workers, bool) and workers >= 1):
        raise ValueError(f"The 'workers' parameter of run must be an int >= 1. "
                         f"Got {workers!r} instead.")
    out = Path(out) if out is not None else Path("results") / spec.name
    return run_grid(spec, out, OracleResultsTable(out / "results.csv"), expand_grid(spec), _task,
                    workers=workers, threads=threads, data_dir=data_dir, progress=progress,
                    retry_failures=retry_failures, methods=list(METHODS))
