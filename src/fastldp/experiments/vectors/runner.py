"""Run a sparse-vector spec: one trial per cell, every method on the same users.

Paired design: within one configuration and trial every method sees the
same users (``data_hash``), the same fixed corrupted users under the
additive model (``corrupted_hash``) and the same target set. Each random
stream is a :class:`numpy.random.SeedSequence` of the trial and the
configuration fields it depends on (:func:`fastldp.experiments.runner.seed_streams`),
so a row never depends on which other cells run, in which order, or on the
number of workers:

============ ===============================================================
stream       depends on
============ ===============================================================
data         population, n, d, m (the synthetic users)
codebook     the same (the public hashes and signs)
clients      the same, eps and the method's family: a clean cell and its
             attacked twins share the honest reports, so ``mae - mae_clean``
             is the attack's alone; variants of one family (RPC and
             RPC-Duchi) share the coins, so equal mechanisms give equal rows
corruption   the data fields: one permutation of the users, the additive
             model corrupts its first ``q`` (nested sets as ``q`` grows)
target       the data fields: one permutation of ``[d]``, ``T`` its first ``target``
attacker     everything above plus the family (strong-model tie-breaks)
============ ===============================================================

Real datasets are read from the given paths (nothing is downloaded) and
kept in memory by each worker while consecutive cells use them; their users
are the same in every trial, and trials vary the public hashes, the clients'
coins and the corrupted users.
"""

from __future__ import annotations

import hashlib
import json
import time
from pathlib import Path

import numpy as np

from ..runner import RunSummary, _message, _resolve_paths, run_grid, seed_streams
from ..spec import UNSET, Cell, Spec, repetitions_alias
from .attack import targeted_attack, untargeted_attack
from .methods import METHODS, Population, UnknownMethodError, build_method
from .spec import REAL_KINDS, expand_grid, load_spec
from .table import SparseResultsTable

__all__ = ["run", "run_cell", "streams", "load_population"]

_DATA = ("population", "n", "d", "m")
_STREAM_FIELDS = {
    "data": _DATA,
    "codebook": _DATA,
    "clients": _DATA + ("eps",),
    "corruption": _DATA,
    "target": _DATA,
    "attacker": _DATA + ("eps", "q_frac", "model", "attack", "target", "clip"),
}


def streams(config: dict, seed: int):
    """Return ``stream(name, method="") -> SeedSequence`` for one configuration and trial."""
    return seed_streams(config, seed, _STREAM_FIELDS, prefix=("rpc",))


def _hash_arrays(*arrays) -> str:
    h = hashlib.sha256()
    for a in arrays:
        a = np.ascontiguousarray(a)
        h.update(str(a.dtype).encode())
        h.update(a.tobytes())
    return h.hexdigest()[:12]


# ---------------------------------------------------------------- populations
_REAL_CACHE: dict = {}


def _real(kind: str, table: dict):
    from ...vectors import datasets as sv

    key = json.dumps([kind, table], sort_keys=True)
    if key in _REAL_CACHE:
        return _REAL_CACHE[key]
    opts = dict(table)
    path = opts.pop("path", None)
    if path is None:
        raise ValueError(f"The {kind!r} population needs a 'path' (nothing is downloaded).")
    # numpy's default_rng(cap_seed), as the recorded runs drew it (int seeds are keyed, issue 37)
    cap_seed = np.random.default_rng(opts.pop("cap_seed", 0))
    opts.pop("beta", None)
    opts.pop("route", None)
    if kind == "commerce":
        ds = sv.load_commerce(path, **opts)
    elif kind == "clothing":
        ds = sv.load_clothing_fit(path, rng=cap_seed, **opts)
    elif kind == "amazon":
        ds = sv.load_amazon_ratings(path, rng=cap_seed, **opts)
    else:
        ds = sv.load_movielens_ratings(path, rng=cap_seed, **opts)
    _REAL_CACHE.clear()  # one dataset per process at a time: the large ones are large
    _REAL_CACHE[key] = ds
    return ds


def load_population(config: dict, seed: int, stream, data_dir=None) -> Population:
    """The users of one trial (section 8.1)."""
    from ...vectors import datasets as sv

    table = _resolve_paths(config["population"], data_dir)
    kind = table.pop("kind")
    if kind in REAL_KINDS:
        ds = _real(kind, table)
        x = ds.vectors
        m = max(1, x.max_items)
        if "beta" in table:
            beta = float(table["beta"])
        else:  # the smallest beta of Assumption 1 for these users
            sq = np.bincount(x.rows, weights=x.values ** 2, minlength=x.n)
            beta = float(np.sqrt(sq.max() / m))
        return Population(x, kind, "general", m, beta, table.get("route"))
    n, d, m = config["n"], config["d"], config["m"]
    gen = np.random.default_rng(stream("data"))
    if kind == "frequency":
        return Population(sv.frequency_vectors(n=n, d=d, m=m, rng=gen), kind, "frequency", m)
    if kind == "signed":
        return Population(sv.signed_vectors(n=n, d=d, m=m, rng=gen), kind, "signed", m)
    x = sv.truncated_normal_vectors(n=n, d=d, m=m, sigma=table.get("sigma", 0.2), rng=gen)
    return Population(x, kind, "general", m, table.get("beta", 0.3), table.get("route"))


# ---------------------------------------------------------------- one cell
def _base_row(cell: Cell) -> dict:
    cfg = cell.config
    return {
        "config": cell.config_id, "seed": cell.seed, "spec": cell.spec,
        "population": cfg["population"]["kind"],
        "population_params": json.dumps(cfg["population"], sort_keys=True, separators=(",", ":")),
        "n": cfg["n"], "d": cfg["d"], "m": cfg["m"], "eps": cfg["eps"], "q_frac": cfg["q_frac"],
        "model": cfg["model"], "attack": cfg["attack"], "target": cfg["target"],
        "clip": cfg["clip"],
    }


def _errors(est: np.ndarray, mu: np.ndarray) -> tuple[float, float]:
    err = np.abs(est - mu)
    return float(err.mean()), float(err.max())


def run_cell(cell: Cell, *, methods=None, n_threads: int = 1, data_dir=None) -> list[dict]:
    """Run ``methods`` (default: the cell's) on one trial; return one row each.

    Never raises for a failing population, method or attack: the failure is
    written into the ``failure`` column of the rows it affects.
    """
    methods = tuple(cell.methods if methods is None else methods)
    base = _base_row(cell)
    rows = {m: {**base, "key": cell.key(m), "method": m,
                "family": METHODS[m][0] if m in METHODS else "", "failure": ""}
            for m in methods}
    cfg = cell.config
    stream = streams(cfg, cell.seed)
    try:
        pop = load_population(cfg, cell.seed, stream, data_dir)
        x = pop.x
        n, d = x.n, x.d
        mu = x.mean()
        q = int(round(cfg["q_frac"] * n))
        corrupted = None
        if cfg["model"] == "additive":
            perm = np.random.default_rng(stream("corruption")).permutation(n)
            corrupted = np.sort(perm[:q]).astype(np.int64)
        target = None
        if cfg["attack"] == "targeted":
            if cfg["target"] > d:
                raise ValueError(f"target = {cfg['target']} exceeds d = {d}")
            target = np.sort(np.random.default_rng(stream("target")).permutation(d)[: cfg["target"]])
        codebook = int(stream("codebook").generate_state(1, dtype=np.uint64)[0])
        shared = {
            "n": n, "d": d, "m": pop.m, "q": q,
            "data_hash": _hash_arrays(x.indptr, x.indices, x.values),
            "corrupted_hash": "" if corrupted is None else _hash_arrays(corrupted),
        }
    except Exception as exc:
        for row in rows.values():
            row["failure"] = _message(exc, "set-up: ")
        return list(rows.values())

    for method, row in rows.items():
        row.update(shared)
        try:
            mech, info = build_method(method, pop, eps=cfg["eps"], clip=cfg["clip"],
                                      codebook_seed=codebook, n_threads=n_threads)
            row.update(info)
            t0 = time.perf_counter()
            family = METHODS[method][0]
            reports = mech.privatize(x, rng=np.random.default_rng(stream("clients", family)))
            clean = mech.estimate(reports)
            row["runtime_s"] = time.perf_counter() - t0
            row["mae_clean"], _ = _errors(clean.mean, mu)
            if q == 0:
                final, raw = clean.mean, clean.raw
            else:
                t1 = time.perf_counter()
                rng = np.random.default_rng(stream("attacker", family))
                if cfg["attack"] == "targeted":
                    res, objective = targeted_attack(mech, reports, target, model=cfg["model"],
                                                     q=q, corrupted=corrupted, rng=rng)
                else:
                    res, objective = untargeted_attack(mech, reports, model=cfg["model"], q=q,
                                                       corrupted=corrupted, rng=rng)
                attacked = mech.estimate(res.reports)
                row["attack_s"] = time.perf_counter() - t1
                row["attack_objective"] = objective
                final, raw = attacked.mean, attacked.raw
            row["mae"], row["max_error"] = _errors(final, mu)
            row["mae_raw"], _ = _errors(raw, mu)
        except UnknownMethodError as exc:
            row["failure"] = _message(exc)
        except Exception as exc:
            row["failure"] = _message(exc, f"{method}: ")
    return list(rows.values())


def _task(cell: Cell, methods: tuple, n_threads: int, data_dir) -> list[dict]:
    return run_cell(cell, methods=methods, n_threads=n_threads, data_dir=data_dir)


def check(spec: Spec, cells, data_dir) -> list[str]:
    """What keeps a sparse-vector spec from running, found without loading any data.

    A real population without a ``path``, and a targeted set larger than
    the dimension, would fail every row that uses them. (Method names and
    data paths are the harness's checks.)
    """
    problems = []
    configs = [cell.config for cell in cells]
    for kind in sorted({c["population"]["kind"] for c in configs
                        if c["population"]["kind"] in REAL_KINDS
                        and "path" not in c["population"]}):
        problems.append(f"the {kind!r} population needs a 'path' (its data file or folder; "
                        f"nothing is downloaded)")
    for target, d in sorted({(c["target"], c["d"]) for c in configs
                             if c["attack"] == "targeted" and c["d"] is not None
                             and c["target"] > c["d"]}):
        problems.append(f"the targeted set (target = {target}) exceeds d = {d}")
    return problems


# ---------------------------------------------------------------- a whole spec
def run(spec, out=None, *, workers: int = 1, quick: bool = False,
        repetitions: int | None = None, progress: bool = True, data_dir=None,
        retry_failures: bool = False, threads: int | None = None, trials=UNSET) -> RunSummary:
    """Run every missing row of a sparse-vector spec into ``OUT/results.csv``.

    Parameters are those of :func:`fastldp.experiments.run`; ``repetitions``
    replaces the spec's ``seeds`` by ``range(repetitions)`` (only when
    ``spec`` is a path; ``trials`` is its deprecated name). Rows already in
    the table are kept and skipped, so more ``repetitions`` later adds only
    the new ones.
    """
    repetitions = repetitions_alias(repetitions, trials, "run")
    if not isinstance(spec, Spec):
        spec = load_spec(spec, quick=quick, repetitions=repetitions)
    if not (isinstance(workers, int) and workers >= 1):
        raise ValueError(f"The 'workers' parameter of run must be an int >= 1. Got {workers!r} instead.")
    out = Path(out) if out is not None else Path("results") / spec.name
    return run_grid(spec, out, SparseResultsTable(out / "results.csv"), expand_grid(spec), _task,
                    workers=workers, threads=threads, data_dir=data_dir, progress=progress,
                    retry_failures=retry_failures, methods=list(METHODS), check=check)

