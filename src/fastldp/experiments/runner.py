"""The runner: expand a spec, run the missing cells (in parallel), append their rows.

Paired design (paper 000, section 7.1): within one configuration and seed,
every method sees the same holders, budgets, corrupted identities and attack
objective. Each random stream is a :class:`numpy.random.SeedSequence` made
from the seed and the configuration fields the stream depends on, so a
cell's rows never depend on which other cells run, in which order, or on how
many workers run them:

============== ==============================================================
stream         depends on
============== ==============================================================
codebook       population, n, shape, s, k
budgets        the above, budget, eps0
clients        the above and the family (shared by a clean cell and its
               attacked twins, so a paired increment is the attack's alone)
corruption     budgets' fields, corruption
attacker       budgets' fields, attack (the false support ``F``; each
               family's tie-breaks add the family name)
============== ==============================================================

The population itself is ``fastldp.data.build_population(kind, seed=seed,
...)`` with the cell's seed, so seeds 0-4 of the Table 2 scenarios are the
frozen populations. ``alpha`` enters no stream: the clean and attacked cells of a seed differ
only in the corrupted identities' reports.
"""

from __future__ import annotations

import concurrent.futures as cf
import hashlib
import json
import multiprocessing
import os
import time
from dataclasses import dataclass, replace
from pathlib import Path

import numpy as np

from .methods import (
    Context,
    UnknownMethodError,
    resolve_method,
    run_family,
)
from .progress import progress_bar
from .spec import REAL_KINDS, Cell, Spec, expand_grid, load_spec
from .table import ResultsTable, write_parquet

__all__ = ["run", "run_cell", "RunSummary", "cell_streams", "REAL_KINDS"]

_POPULATION = ("population", "n", "shape", "s", "k")
_BUDGETS = _POPULATION + ("budget", "eps0")
_STREAM_FIELDS = {
    "codebook": _POPULATION,
    "budgets": _BUDGETS,
    "clients": _BUDGETS,
    "corruption": _BUDGETS + ("corruption",),
    "attacker": _BUDGETS + ("attack",),
}
_MAX_MESSAGE = 600


def cell_streams(config: dict, seed: int):
    """Return ``stream(name, family="") -> SeedSequence`` for one configuration and seed."""

    def stream(name: str, family: str = "") -> np.random.SeedSequence:
        fields = {f: config[f] for f in _STREAM_FIELDS[name]}
        text = json.dumps([name, family, fields], sort_keys=True, default=list)
        words = np.frombuffer(hashlib.sha256(text.encode()).digest()[:16], dtype="<u4")
        return np.random.SeedSequence(seed, spawn_key=tuple(int(w) for w in words))

    return stream


def _message(exc: BaseException, where: str = "") -> str:
    text = f"{where}{type(exc).__name__}: {exc}".replace("\r", " ").replace("\n", " | ")
    return text if len(text) <= _MAX_MESSAGE else text[: _MAX_MESSAGE - 3] + "..."


# ---------------------------------------------------------------- set-up
def _resolve_paths(table: dict, data_dir) -> dict:
    out = dict(table)
    for key, value in table.items():
        if key == "path" or key.endswith("_path"):
            path = Path(os.path.expanduser(str(value)))
            if not path.is_absolute() and data_dir is not None:
                path = Path(data_dir) / path
            out[key] = str(path)
    return out


def _population(config: dict, seed: int, data_dir):
    from ..data import build_population

    table = _resolve_paths(config["population"], data_dir)
    kind = table.pop("kind")
    if kind in REAL_KINDS:  # the file fixes n and d1; d2 and the rest come from the table
        params = {"s": config["s"], "k": config["k"]}
    else:
        params = {"n": config["n"], "shape": tuple(config["shape"]), "s": config["s"],
                  "k": config["k"]}
    params.update(table)
    return build_population(kind, seed=seed, **params)


def _budgets(config: dict, n: int, stream) -> np.ndarray:
    from ..data import budget_profile

    eps = budget_profile(config["budget"], n, config["eps0"],
                         np.random.default_rng(stream("budgets")))
    return np.ascontiguousarray(eps, dtype=np.float64)


def _corrupted(config: dict, eps: np.ndarray, stream) -> np.ndarray:
    if not config["alpha"] > 0:
        return np.empty(0, dtype=np.intp)
    from ..attacks import choose_corrupted

    policy = config["corruption"]
    policy = np.asarray(policy, dtype=np.int64) if isinstance(policy, (list, tuple)) else policy
    chosen = choose_corrupted(eps, config["alpha"], policy=policy,
                              rng=np.random.default_rng(stream("corruption")))
    return np.ascontiguousarray(chosen, dtype=np.intp)


def _sparse_target(pop, s: int) -> np.ndarray:
    """``M^(s)``, the best s-sparse approximation of the population target."""
    from ..data import best_sparse_approximation

    if getattr(pop, "approximation", None) is not None and getattr(pop, "s", None) == s:
        return np.asarray(pop.approximation, dtype=np.float64).reshape(pop.shape)
    return best_sparse_approximation(pop.target, s).reshape(pop.shape)


def _false_support(true_support: np.ndarray, p: int, s: int, stream) -> np.ndarray:
    from ..attacks import false_support

    rest = p - true_support.shape[0]
    return np.asarray(false_support(true_support, p, min(s, rest),
                                    rng=np.random.default_rng(stream("attacker"))),
                      dtype=np.intp)


def _audit(eps: np.ndarray, alpha: float, shape, s: int, k: int) -> dict:
    try:
        from ..analysis import theorem_regime_audit

        audit = theorem_regime_audit(eps, alpha, shape=tuple(shape), s=s, k=k)
    except Exception as exc:  # the audit informs; it never fails a row
        return {"regime_notes": _message(exc, "audit failed: ")}
    reasons = [f"{c.key}: {r}" for c in audit.checks if c.key in ("theorem1", "theorem4")
               for r in c.reasons]  # the "why not" of the two statements the runs test
    return {
        "theorem1": audit.check("theorem1").holds,
        "theorem4": audit.check("theorem4").holds,
        "corollary2": audit.check("corollary2").holds,
        "I_eff": audit.I_eff,
        "L_eff": audit.L_eff,
        "rho_ind": audit.rho_ind,
        "lower_bound": audit.applicable_lower_bound,
        "upper_bound": audit.upper_bound,
        "regime_notes": "; ".join(reasons),
    }


# ---------------------------------------------------------------- one cell
def _base_row(cell: Cell) -> dict:
    cfg = cell.config
    pop = dict(cfg["population"])
    corruption = cfg["corruption"]
    return {
        "config": cell.config_id,
        "seed": cell.seed,
        "spec": cell.spec,
        "population": pop["kind"],
        "population_params": json.dumps(pop, sort_keys=True, separators=(",", ":")),
        "n": cfg["n"],
        "d1": None if cfg["shape"] is None else cfg["shape"][0],
        "d2": None if cfg["shape"] is None else cfg["shape"][1],
        "s": cfg["s"],
        "k": cfg["k"],
        "budget": cfg["budget"],
        "eps0": cfg["eps0"],
        "alpha": cfg["alpha"],
        "corruption": corruption if isinstance(corruption, str) else "given",
        "attack": cfg["attack"],
        "groups": cfg["groups"],
    }


def _method_row(base: dict, cell: Cell, method: str, family: str = "", decoder: str = "") -> dict:
    return {**base, "key": cell.key(method), "method": method, "family": family,
            "decoder": decoder, "failure": ""}


def _metrics(est: np.ndarray, target: np.ndarray, target_s: np.ndarray, s: int) -> dict:
    from ..metrics import squared_frobenius_loss, support_scores

    scores = support_scores(est, target, s)
    return {
        "E_s": squared_frobenius_loss(est, target_s),
        "loss_full": squared_frobenius_loss(est, target),
        "precision": scores.precision,
        "recall": scores.recall,
        "f1": scores.f1,
    }


def run_cell(cell: Cell, *, methods=None, n_threads: int = 1, data_dir=None) -> list[dict]:
    """Run ``methods`` (default: all of the cell's) on one cell; return one row each.

    Never raises for a failing population, method or decoder: the failure is
    written into the ``failure`` column of the rows it affects.
    """
    methods = tuple(cell.methods if methods is None else methods)
    base = _base_row(cell)
    rows = {m: _method_row(base, cell, m) for m in methods}

    # methods grouped by family; unknown ones fail now
    families: dict[str, list[tuple[str, str]]] = {}
    for m in methods:
        try:
            family, decoder = resolve_method(m)
        except UnknownMethodError as exc:
            rows[m]["failure"] = _message(exc)
            continue
        rows[m].update(family=family, decoder=decoder)
        families.setdefault(family, []).append((m, decoder))
    if not families:
        return list(rows.values())

    cfg = cell.config
    stream = cell_streams(cfg, cell.seed)
    try:
        pop = _population(cfg, cell.seed, data_dir)
        shape = tuple(int(d) for d in pop.shape)
        n = int(pop.n)
        s, k = cfg["s"], cfg["k"]
        target = np.asarray(pop.target, dtype=np.float64).reshape(shape)
        target_s = _sparse_target(pop, s)
        eps = _budgets(cfg, n, stream)
        corrupted = _corrupted(cfg, eps, stream)
        true_support = np.flatnonzero(target_s.ravel()).astype(np.intp)
        false_support = _false_support(true_support, shape[0] * shape[1], s, stream)
        codebook = int(stream("codebook").generate_state(1, dtype=np.uint64)[0])
    except Exception as exc:
        for m, _ in (pair for group in families.values() for pair in group):
            rows[m]["failure"] = _message(exc, "set-up: ")
        return list(rows.values())

    shared = {
        "n": n, "d1": shape[0], "d2": shape[1],
        "eps_mean": float(eps.mean()), "eps_min": float(eps.min()), "eps_max": float(eps.max()),
        "n_corrupted": int(corrupted.shape[0]),
        "approx_tail": float(np.sum((target - target_s) ** 2)),
        **_audit(eps, cfg["alpha"], shape, s, k),
    }
    ctx = Context(
        config=cfg, seed=cell.seed, population=pop, epsilons=eps, shape=shape, s=s, k=k,
        groups=cfg["groups"], corrupted=corrupted, true_support=true_support,
        false_support=false_support, attack=cfg["attack"], codebook_seed=codebook,
        n_threads=n_threads, streams=stream,
    )
    for family, pairs in families.items():
        for m, _ in pairs:
            rows[m].update(shared)
        try:
            estimates, objective, payload, seconds = run_family(
                replace(ctx, family=family), [d for _, d in pairs])
        except Exception as exc:
            for m, _ in pairs:
                rows[m]["failure"] = _message(exc, f"{family}: ")
            continue
        for m, decoder in pairs:
            row = rows[m]
            row.update(attack_objective=objective, payload_bits=payload, runtime_s=seconds,
                       runtime_scope=f"family:{family}")
            est = estimates[decoder]
            if isinstance(est, Exception):
                row["failure"] = _message(est, f"{m}: ")
                continue
            try:
                row.update(_metrics(est, target, target_s, s))
            except Exception as exc:
                row["failure"] = _message(exc, f"{m} metrics: ")
    return list(rows.values())


def _task(cell: Cell, methods: tuple, n_threads: int, data_dir) -> list[dict]:
    return run_cell(cell, methods=methods, n_threads=n_threads, data_dir=data_dir)


# ---------------------------------------------------------------- a whole spec
@dataclass(frozen=True)
class RunSummary:
    """What :func:`run` did."""

    table: Path
    cells: int          # cells in the grid
    cells_run: int      # cells that had missing rows
    rows_written: int
    failures: int       # failed rows written by this run
    seconds: float

    def __str__(self) -> str:
        skipped = self.cells - self.cells_run
        return (f"{self.rows_written} rows written to {self.table} ({self.cells_run} of "
                f"{self.cells} cells run, {skipped} already complete; {self.failures} failed "
                f"rows) in {self.seconds:.1f} s")


def _default_threads(workers: int) -> int:
    return max(1, (os.cpu_count() or 1) // max(1, workers))


def run(spec, out=None, *, workers: int = 1, quick: bool = False, progress: bool = True,
        data_dir=None, retry_failures: bool = False, parquet: bool = False,
        threads: int | None = None) -> RunSummary:
    """Run every missing row of a spec and append it to ``OUT/results.csv``.

    Parameters
    ----------
    spec : Spec or path to a TOML spec
    out : path, optional
        Output folder (default ``results/<spec name>``); the table is
        ``results.csv`` inside it. Rows already there are kept and skipped.
    workers : int
        Worker processes (1 runs in this process). Results do not depend on it.
    quick : bool
        Apply the spec's ``[quick]`` table (only when ``spec`` is a path).
    progress : bool
        Show a progress bar with ETA on stderr.
    data_dir : path, optional
        Folder that relative ``path`` entries of population tables are read from.
    retry_failures : bool
        Drop the table's failed rows first, so they run again.
    parquet : bool
        Also write ``results.parquet`` (needs pyarrow).
    threads : int, optional
        Kernel threads per worker (default: the spec's, else cores / workers).

    Returns
    -------
    RunSummary
    """
    if not isinstance(spec, Spec):
        spec = load_spec(spec, quick=quick)
    if not (isinstance(workers, int) and workers >= 1):
        raise ValueError(f"The 'workers' parameter of run must be an int >= 1. Got {workers!r} instead.")
    out = Path(out) if out is not None else Path("results") / spec.name
    table = ResultsTable(out / "results.csv")
    summary = run_grid(spec, out, table, expand_grid(spec), _task, workers=workers,
                       threads=threads, data_dir=data_dir, progress=progress,
                       retry_failures=retry_failures)
    if parquet:
        write_parquet(table.path)
    return summary


def run_grid(spec: Spec, out: Path, table, cells, task, *, workers: int, threads, data_dir,
             progress: bool, retry_failures: bool) -> RunSummary:
    """Run the rows of ``cells`` missing from ``table`` and append them.

    ``task(cell, methods, n_threads, data_dir) -> rows`` computes one cell's
    missing methods. Shared by every experiment family's runner: resume
    (rows already present are skipped; with ``retry_failures`` failed rows
    are dropped first), the manifest, the progress bar and the pool.
    """
    t0 = time.perf_counter()
    if retry_failures and table.path.exists():
        table.drop_failures()
    done = table.prepare()
    _write_manifest(out, spec)
    pending = [(cell, missing) for cell in cells
               if (missing := tuple(m for m in cell.methods if cell.key(m) not in done))]
    n_threads = threads or spec.threads or _default_threads(workers)
    data_dir = None if data_dir is None else str(data_dir)

    written = failures = 0
    bar = progress_bar(len(pending), spec.name, enabled=progress)

    def record(rows):
        nonlocal written, failures
        table.append(rows)
        written += len(rows)
        failures += sum(1 for r in rows if r["failure"])
        bar.update(1)

    try:
        run_tasks(task, [(cell, missing, n_threads, data_dir) for cell, missing in pending],
                  workers, record)
    finally:
        bar.close()
    return RunSummary(table.path, len(cells), len(pending), written, failures,
                      time.perf_counter() - t0)


def run_tasks(task, arguments, workers: int, record) -> None:
    """Run ``task(*args)`` for each tuple in ``arguments``; pass each result to ``record``.

    Serial when ``workers == 1`` (or there is at most one task), else in a
    pool of ``workers`` spawned processes (no fork after OpenMP) with at
    most ``2 * workers`` tasks in flight, so memory stays flat whatever the
    grid size; results are recorded in completion order. On any error or
    interrupt the queued tasks are cancelled.
    """
    if workers == 1 or len(arguments) <= 1:
        for args in arguments:
            record(task(*args))
        return
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(max_workers=workers, mp_context=ctx) as pool:
        queue = iter(arguments)
        running = set()

        def submit_next() -> bool:
            args = next(queue, None)
            if args is None:
                return False
            running.add(pool.submit(task, *args))
            return True

        for _ in range(2 * workers):
            if not submit_next():
                break
        try:
            while running:
                finished, _ = cf.wait(running, return_when=cf.FIRST_COMPLETED)
                for fut in finished:
                    running.discard(fut)
                    record(fut.result())
                    submit_next()
        except BaseException:
            for fut in running:
                fut.cancel()
            raise


def _write_manifest(out: Path, spec: Spec) -> None:
    from .. import __version__

    manifest = {
        "spec": spec.name, "source": spec.source, "quick": spec.quick,
        "description": spec.description, "methods": list(spec.methods),
        "seeds": list(spec.seeds), "fixed": spec.fixed, "grids": list(spec.grids),
        "report": spec.report, "fastldp": __version__,
    }
    path = out / "manifest.json"
    tmp = out / "manifest.json.tmp"
    tmp.write_text(json.dumps(manifest, indent=2, sort_keys=True, default=list) + "\n")
    os.replace(tmp, path)
