"""The relation-family runner (paper 000, section 7): expand a spec, run the missing cells (in parallel), append their rows.

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

The population itself is ``fastldp.relations.build_population(kind, seed=seed,
...)`` with the cell's seed, so seeds 0-4 of the Table 2 scenarios are the
frozen populations. ``alpha`` enters no stream: the clean and attacked cells of a seed differ
only in the corrupted identities' reports.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..preflight import unknown_names
from ..runner import RunSummary, _message, _resolve_paths, run_grid, seed_streams
from ..table import write_parquet
from .methods import (ATTACKS, FAMILIES, Context, UnknownMethodError, known_methods,
                      resolve_method, run_family)
from .spec import REAL_KINDS, Cell, Spec, expand_grid, load_spec
from .table import COLUMNS, RelationResultsTable

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


def cell_streams(config: dict, seed: int):
    """Return ``stream(name, family="") -> SeedSequence`` for one configuration and seed."""
    return seed_streams(config, seed, _STREAM_FIELDS)


def _population(config: dict, seed: int, data_dir):
    from ...relations.build import build_population

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
    from ...budgets import budget_profile

    eps = budget_profile(config["budget"], n, config["eps0"],
                         np.random.default_rng(stream("budgets")))
    return np.ascontiguousarray(eps, dtype=np.float64)


def _corrupted(config: dict, eps: np.ndarray, stream) -> np.ndarray:
    if not config["alpha"] > 0:
        return np.empty(0, dtype=np.intp)
    from ...corruption import choose_corrupted

    policy = config["corruption"]
    policy = np.asarray(policy, dtype=np.int64) if isinstance(policy, (list, tuple)) else policy
    chosen = choose_corrupted(eps, config["alpha"], policy=policy,
                              rng=np.random.default_rng(stream("corruption")))
    return np.ascontiguousarray(chosen, dtype=np.intp)


def _sparse_target(pop, s: int) -> np.ndarray:
    """``M^(s)``, the best s-sparse approximation of the population target."""
    from ...relations.populations import best_sparse_approximation

    if getattr(pop, "approximation", None) is not None and getattr(pop, "s", None) == s:
        return np.asarray(pop.approximation, dtype=np.float64).reshape(pop.shape)
    return best_sparse_approximation(pop.target, s).reshape(pop.shape)


def _false_support(true_support: np.ndarray, p: int, s: int, stream) -> np.ndarray:
    from ...relations.attacks import false_support

    rest = p - true_support.shape[0]
    return np.asarray(false_support(true_support, p, min(s, rest),
                                    rng=np.random.default_rng(stream("attacker"))),
                      dtype=np.intp)


def _audit(eps: np.ndarray, alpha: float, shape, s: int, k: int) -> dict:
    try:
        from ...relations.analysis import theorem_regime_audit

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
    from ...metrics import squared_frobenius_loss, support_scores

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


def method_names() -> list[str]:
    """Every method name a relation spec may use: ``FAMILY-DECODER`` and bare family names."""
    return known_methods() + [f for f in FAMILIES if f not in known_methods()]


def check(spec: Spec, cells, data_dir) -> list[str]:
    """What keeps a relation spec from running, found without building anything.

    Population kinds, the path a real population needs, budget profiles,
    attacks and corruption policies: each would otherwise fail every row
    that uses it. (Method names and data paths are the harness's checks.)
    """
    from ...budgets import BUDGET_PROFILES
    from ...relations.build import POPULATION_KINDS

    configs = [cell.config for cell in cells]
    kinds = {c["population"]["kind"] for c in configs}
    problems = unknown_names(sorted(kinds), POPULATION_KINDS, "population kind")
    for kind in sorted(kinds & REAL_KINDS):
        if any(c["population"]["kind"] == kind and "path" not in c["population"]
               for c in configs):
            problems.append(f"the {kind!r} population needs a 'path' (its data file or "
                            f"folder; nothing is downloaded)")
    problems += unknown_names(sorted({c["budget"] for c in configs}), BUDGET_PROFILES,
                              "budget profile")
    attacked = [c for c in configs if c["alpha"] > 0]  # clean cells read neither
    problems += unknown_names(sorted({c["attack"] for c in attacked}), ATTACKS, "attack")
    problems += unknown_names(sorted({c["corruption"] for c in attacked
                                      if isinstance(c["corruption"], str)}),
                              ("largest", "random"), "corruption policy")
    return problems


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
    table = RelationResultsTable(out / "results.csv")
    summary = run_grid(spec, out, table, expand_grid(spec), _task, workers=workers,
                       threads=threads, data_dir=data_dir, progress=progress,
                       retry_failures=retry_failures, methods=method_names(), check=check)
    if parquet:
        write_parquet(table.path, COLUMNS)
    return summary
