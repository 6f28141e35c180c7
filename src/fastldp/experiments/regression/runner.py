"""Run a regression spec: one repetition per cell, every method on the same data.

Paired design: within one configuration and seed every method sees the same
training users and the same test observations. Each random stream is a
:class:`numpy.random.SeedSequence` of the seed and the fields it depends on,
so a row never depends on the other cells, their order or the workers:

========= =================================================================
stream    depends on
========= =================================================================
data      population, n, m, d, k, sigma, n_test (and, on Kelmarsh, the
          sampled rows and their assignment to users)
method    the data fields, eps, delta and the method
========= =================================================================

The results table (:class:`RegressionResultsTable`) has one row per
configuration, method and seed.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import json
import os
import time
import warnings
from pathlib import Path

import numpy as np

from ..runner import RunSummary, _message, run_grid
from ..spec import UNSET, Cell, Spec, repetitions_alias
from ..table import ResultsTable, read_results
from .spec import METHODS, expand_grid, is_nested, load_spec, share_fields, share_key

__all__ = ["COLUMNS", "RegressionResultsTable", "read_regression_results", "is_regression_table",
           "run", "run_cell", "streams", "build_estimator", "resolve_kelmarsh_path"]

#: Column name -> type, in file order.
COLUMNS = {
    "key": str,               # config/method/seed, unique
    "config": str,            # content hash of the configuration
    "method": str,
    "seed": int,
    "spec": str,
    "population": str,
    "population_params": str,
    "n": int,                 # users
    "m": int,                 # samples per user
    "d": int,
    "k": int,
    "sigma": float,
    "eps": float,
    "delta": float,           # the method's realized delta (0 for pure LDP)
    "unit": str,              # user, sample, none
    "model": str,             # shuffle, local, none
    "rel_error": float,       # ||theta_hat - theta|| / ||theta|| (synthetic)
    "test_mse": float,
    "recall": float,          # |support_hat & S| / |S|
    "exact_support": bool,    # support_hat == S
    "support_size": int,
    "stage1_exact": bool,     # U2R / 2-SLR: the recovered support (before shrinkage) == S
    "runtime_s": float,       # fit only, with the eps-independent work of earlier cells reused
    "failure": str,
}
HEADER = ",".join(COLUMNS) + "\n"


class RegressionResultsTable(ResultsTable):
    """An append-only, resumable CSV of regression results rows."""

    columns = COLUMNS
    kind = "fastldp regression results table"


def is_regression_table(path) -> bool:
    """Whether ``path`` is a results CSV with this module's header."""
    try:
        with open(path, encoding="utf-8") as fh:
            return fh.readline() == HEADER
    except OSError:
        return False


def read_regression_results(path) -> list[dict]:
    """Read a regression results CSV into typed dicts."""
    return read_results(path, COLUMNS)


def streams(config: dict, seed: int):
    """Return ``stream(name, method="") -> SeedSequence`` for one configuration and seed.

    With nested samples the data stream does not depend on ``n`` (a cell's
    users are the first ``n`` of every larger cell's).
    """
    data = share_fields(config)

    def stream(name: str, method: str = "") -> np.random.SeedSequence:
        fields = dict(data)
        if name == "method":
            fields.update(eps=config["eps"], delta=config["delta"])
        text = json.dumps(["regression", name, method, fields], sort_keys=True, default=list)
        words = np.frombuffer(hashlib.sha256(text.encode()).digest()[:16], dtype="<u4")
        return np.random.SeedSequence(seed, spawn_key=tuple(int(w) for w in words))

    return stream


# ---------------------------------------------------------------- data
_CACHE: dict = {}


def resolve_kelmarsh_path(population: dict, data_dir) -> Path:
    """The Kelmarsh folder of a population table, or FileNotFoundError."""
    path = population.get("path", ".")
    p = Path(os.path.expanduser(str(path)))
    if not p.is_absolute():
        if data_dir is None:
            raise FileNotFoundError(
                "The Kelmarsh experiment reads the wind-farm SCADA CSV files from a folder: pass "
                "--data DIR (or set FASTLDP_DATA); nothing is downloaded.")
        p = Path(data_dir) / p
    if not p.exists():
        raise FileNotFoundError(f"No Kelmarsh data at {str(p)!r}.")
    return p


class _Data:
    """One repetition's data, in the form every method takes."""

    def __init__(self, X, y, users, X_test, y_test, theta, sigma, theta_bound, rho):
        self.X, self.y, self.users = X, y, users
        self.parent: "_Data | None" = None  # nested samples: the larger draw this is a prefix of
        self.children: dict = {}  # nested samples: n -> the _Data of the first n users
        self.shared = False  # nested samples: the sums of every n filled from one pass
        self.n_threads = None  # the local Lassos' threads (run_cell sets its own)
        self.X_test, self.y_test = X_test, y_test
        self.theta, self.sigma, self.theta_bound, self.rho = theta, sigma, theta_bound, rho
        self.lasso = None  # the non-private fit, shared across eps
        self._pre = None

    @property
    def pre(self):
        """The eps-independent statistics of this repetition, shared by every method and eps.

        (:class:`fastldp.regression.local.Precomputed`: the local Lassos
        and local least squares of U2R and 2-SLR, Sample-SDP's clipped totals.)
        ``fit_precomputed`` on it gives bit for bit what a cold ``fit`` gives,
        so a row does not depend on which cells ran before it in this worker.
        """
        if self._pre is None:
            from ...regression.local import Precomputed

            if self.parent is not None:  # the first users of the parent: its per-user work
                self._pre = self.parent.pre.first_users(self.n_users)
            else:
                self._pre = Precomputed(self.X, self.y, self.users, n_threads=self.n_threads)
        return self._pre

    @property
    def n_users(self) -> int:
        return int(self.users[-1]) + 1  # synthetic data: users 0, 1, ..., n - 1, sorted

    def first_users(self, n: int) -> "_Data":
        """The data of the first ``n`` users (nested samples), cached; shares this one's work.

        All of them (``n == n_users``): this object itself.
        """
        if n == self.n_users:
            return self
        if n not in self.children:
            rows = self.X.shape[0] // self.n_users * n
            child = _Data(self.X[:rows], self.y[:rows], self.users[:rows], self.X_test,
                          self.y_test, self.theta, self.sigma, self.theta_bound, self.rho)
            child.parent = self
            self.children[n] = child
        return self.children[n]


_BUFFER: list = []  # at most one flat float64 array: the synthetic X's memory


def _buffer(rows: int, d: int) -> np.ndarray:
    """A C-contiguous ``(rows, d)`` float64 view of this worker's buffer (grown when short)."""
    size = rows * d
    if not _BUFFER or _BUFFER[0].shape[0] < size:
        _BUFFER.clear()  # the old buffer goes before the new one is allocated
        _BUFFER.append(np.empty(size))
    return _BUFFER[0][:size].reshape(rows, d)


def _kelmarsh_loaded(path: Path):
    from ...regression import load_kelmarsh

    key = ("kelmarsh-file", str(path))
    if key not in _CACHE:
        _CACHE.clear()
        _CACHE[key] = load_kelmarsh(path)
    return _CACHE[key]


def load_data(config: dict, seed: int, stream, data_dir=None) -> _Data:
    """The data of one repetition (cached: consecutive cells share it)."""
    nested = is_nested(config)
    key = (share_key(config), seed)
    if key in _CACHE:
        data = _CACHE[key]
        if not nested:
            return data
        if config["n"] <= data.n_users:  # the first users of the larger draw
            return data.first_users(config["n"])
    kind = config["population"]["kind"]
    gen = np.random.default_rng(stream("data"))
    if kind == "synthetic":
        from ...regression import make_sparse_regression

        # X is drawn into the memory of the previous repetitions (the same values as a fresh
        # array, bit for bit): a fresh 1.5 GB array costs its page faults again, about as
        # much as drawing its normals. The grid comes largest data first (spec.expand_grid),
        # so a worker allocates once.
        _CACHE.clear()  # nothing else reads the buffer now
        D = make_sparse_regression(n=config["n"], m=config["m"], d=config["d"], k=config["k"],
                                   sigma=config["sigma"], n_test=config["n_test"], rng=gen,
                                   out=_buffer(config["n"] * config["m"], config["d"]),
                                   nested=nested,
                                   sampler=config["population"].get("sampler", "numpy"))
        data = _Data(D.X, D.y, D.users, D.X_test, D.y_test, D.theta, D.sigma, 1.0, D.beta_min)
    else:
        K = _kelmarsh_loaded(resolve_kelmarsh_path(config["population"], data_dir))
        n, m = config["n"], config["m"]
        if n * m > K.X_train.shape[0]:
            raise ValueError(f"Kelmarsh: {n} users x {m} rows exceed the "
                             f"{K.X_train.shape[0]} training rows.")
        rows = gen.choice(K.X_train.shape[0], size=n * m, replace=False)
        # public quantities for the methods' parameters: OLS on the public split
        P, yp = K.X_public, K.y_public
        coef, *_ = np.linalg.lstsq(P, yp, rcond=None)
        sigma = float(np.std(yp - P @ coef))
        top = np.sort(np.abs(coef))[::-1]
        kk = min(config["k"], top.shape[0])
        data = _Data(K.X_train[rows], K.y_train[rows], np.repeat(np.arange(n), m), K.X_test,
                     K.y_test, None, sigma, float(np.linalg.norm(coef)) * 1.5,
                     float(top[kk - 1]) if kk else 1.0)
        for k_ in [k_ for k_ in _CACHE if k_[0] != "kelmarsh-file"]:
            del _CACHE[k_]
    _CACHE[key] = data
    return data


def build_estimator(method: str, config: dict, data: _Data):
    """The estimator of ``method`` with the configuration's parameters."""
    from ... import regression as R

    eps, delta, k = config["eps"], config["delta"], config["k"]
    common = dict(sigma=data.sigma, theta_bound=data.theta_bound)
    # the user-level methods' public rows per user: the configuration's m, which every
    # user of the generated (or sampled Kelmarsh) data has
    rows = dict(rows_per_user=config["m"])
    if method == "U2R":
        return R.U2R(epsilon=eps, delta=delta, k=k, rho=data.rho, **rows, **common)
    if method == "U2R-shrink":
        return R.U2R(epsilon=eps, delta=delta, k=k, rho=data.rho, shrinkage=True, **rows,
                     **common)
    if method == "Sample-SDP":
        return R.SampleSDP(epsilon=eps, delta=delta, **common)
    if method == "LDP-IHT":
        return R.LDPIHT(epsilon=eps, k=k, theta_bound=data.theta_bound)
    if method == "2-SLR":
        return R.TwoStageSLR(epsilon=eps, k=k, rho=data.rho, **rows, **common)
    if method == "Lasso":
        return R.Lasso(sigma=data.sigma, fit_intercept=False)
    raise ValueError(f"Unknown regression method {method!r}; the methods are {list(METHODS)}.")


# ---------------------------------------------------------------- one cell
def run_cell(cell: Cell, *, methods=None, n_threads: int = 1, data_dir=None,
             nested_sizes=()) -> list[dict]:
    """Run ``methods`` (default: the cell's) on one repetition; one row each, never raising.

    ``nested_sizes`` (nested samples): the ``n`` of the other cells of this draw, whose
    sums over rows are then computed with this cell's in one pass (the rows do not
    depend on it).
    """
    methods = tuple(cell.methods if methods is None else methods)
    cfg = cell.config
    base = {"config": cell.config_id, "seed": cell.seed, "spec": cell.spec,
            "population": cfg["population"]["kind"],
            "population_params": json.dumps(cfg["population"], sort_keys=True,
                                             separators=(",", ":")),
            "n": cfg["n"], "m": cfg["m"], "d": cfg["d"], "k": cfg["k"], "sigma": cfg["sigma"],
            "eps": cfg["eps"]}
    rows = {m: {**base, "key": cell.key(m), "method": m, "failure": "",
                "unit": METHODS.get(m, ("", ""))[0], "model": METHODS.get(m, ("", ""))[1]}
            for m in methods}
    with _blas_threads(n_threads):
        _run_methods(cell, rows, n_threads, data_dir, tuple(nested_sizes))
    return list(rows.values())


def _blas_threads(n_threads: int):
    """At most ``n_threads`` BLAS threads inside (threadpoolctl, when installed).

    The runner already runs one worker per core; each worker's BLAS spinning
    up one thread per core as well oversubscribes the machine, which costs
    OpenBLAS far more than it gains. The results do not depend on it.
    """
    try:
        from threadpoolctl import threadpool_limits
    except ImportError:  # optional: without it BLAS keeps its own thread count
        return contextlib.nullcontext()
    return threadpool_limits(limits=max(1, int(n_threads)), user_api="blas")


def _warn_without_threadpoolctl() -> None:
    """Say once that the sweeps run slowly without threadpoolctl (their rows are the same)."""
    try:
        import threadpoolctl  # noqa: F401
    except ImportError:
        warnings.warn("threadpoolctl is not installed: each worker's BLAS runs one thread per "
                      "core (oversubscribed) and the Gram products are not shared, so the "
                      "regression sweeps run 2-3 times slower (with the same rows). Install it "
                      "with pip install 'fastldp[experiments]'.", RuntimeWarning, stacklevel=3)


def _run_methods(cell: Cell, rows: dict, n_threads: int, data_dir,
                 nested_sizes: tuple = ()) -> None:
    """Fill ``rows`` (method -> row) for one cell.

    ``nested_sizes``: with nested samples, the ``n`` of the cells that share this
    cell's draw (their sums over rows are then made in one pass).
    """
    cfg = cell.config
    stream = streams(cfg, cell.seed)
    try:
        data = load_data(cfg, cell.seed, stream, data_dir)
    except Exception as exc:
        for row in rows.values():
            row["failure"] = _message(exc, "set-up: ")
        return
    data.n_threads = n_threads
    if nested_sizes and "Sample-SDP" in rows and data.parent is None and not data.shared:
        # nested samples: every n's Gram and clipped sums from one pass over the largest
        from ...regression.sample_sdp import share_nested_sums

        try:
            share_nested_sums([data.first_users(n).pre for n in nested_sizes
                               if n <= data.n_users],
                              data.sigma, data.theta_bound)
        except Exception as exc:
            for row in rows.values():
                row["failure"] = _message(exc, "set-up: ")
            return
        data.shared = True
    fits: dict = {}  # this cell's fits by method (U2R-shrink reads U2R's)
    for method, row in rows.items():
        row["d"] = data.X.shape[1]
        try:
            est, seconds = _fit(method, cfg, data, stream, fits)
            row["runtime_s"] = seconds
            row["delta"] = est.privacy_.delta
            row["test_mse"] = float(np.mean((est.predict(data.X_test) - data.y_test) ** 2))
            row["support_size"] = int(est.support_.shape[0])
            if data.theta is not None:
                truth = np.flatnonzero(data.theta)
                row["rel_error"] = float(np.linalg.norm(est.coef_ - data.theta)
                                         / np.linalg.norm(data.theta))
                hit = np.intersect1d(est.support_, truth).shape[0]
                row["recall"] = hit / truth.shape[0]
                row["exact_support"] = bool(np.array_equal(est.support_, truth))
                recovered = getattr(est, "support_recovered_", None)
                if recovered is not None:
                    row["stage1_exact"] = bool(np.array_equal(np.sort(recovered), truth))
        except Exception as exc:
            row["failure"] = _message(exc, f"{method}: ")


def _fit(method: str, cfg: dict, data: _Data, stream, fits: dict):
    """``(fitted estimator, seconds)`` of ``method`` on one cell, kept in ``fits``.

    A module function, not a closure: a closure that calls itself holds its
    cell (and with it the repetition's data and caches) in a reference cycle,
    freed only by a full garbage collection, so a worker grew by the size of
    those caches every repetition.
    """
    if method in fits:
        return fits[method]
    if method == "Lasso" and data.lasso is not None:
        fits[method] = data.lasso
    elif method == "U2R-shrink":
        # U2R's fit with U2R's stream, shrunk: bit for bit the fit of U2R(shrinkage=True)
        # with that stream (U2R.with_shrinkage), at the cost of one soft-thresholding; its
        # time is U2R's fit plus the shrinkage
        plain, seconds = _fit("U2R", cfg, data, stream, fits)
        t0 = time.perf_counter()
        fits[method] = (plain.with_shrinkage(True), seconds + time.perf_counter() - t0)
    else:
        est = build_estimator(method, cfg, data)
        t0 = time.perf_counter()
        est.fit_precomputed(data.pre, rng=np.random.default_rng(stream("method", method)))
        fits[method] = (est, time.perf_counter() - t0)
        if method == "Lasso":
            data.lasso = fits[method]
    return fits[method]


def _data_group(cell: Cell):
    """Cells on one repetition's data (every eps of a sweep) run in one worker, in order,
    so the data and the eps-independent work (``precompute``) are made once."""
    return (share_key(cell.config), cell.seed)


def _task(cell: Cell, methods: tuple, n_threads: int, data_dir, sizes=None) -> list[dict]:
    nested = sizes.get(_data_group(cell), ()) if sizes else ()
    return run_cell(cell, methods=methods, n_threads=n_threads, data_dir=data_dir,
                    nested_sizes=nested)


def _nested_sizes(cells) -> dict:
    """Nested samples: group (:func:`_data_group`) -> the ``n`` of its cells, largest first."""
    out: dict = {}
    for cell in cells:
        if is_nested(cell.config):
            out.setdefault(_data_group(cell), set()).add(cell.config["n"])
    return {k: tuple(sorted(v, reverse=True)) for k, v in out.items()}


def check_data(spec: Spec, data_dir) -> None:
    """Raise FileNotFoundError now when a Kelmarsh configuration has no readable data."""
    populations = {json.dumps(c.config["population"], sort_keys=True): c.config["population"]
                   for c in expand_grid(spec)}
    for population in populations.values():
        if population["kind"] == "kelmarsh":
            path = resolve_kelmarsh_path(population, data_dir)
            if path.is_dir() and not any(path.glob("Turbine_Data_Kelmarsh_*.csv")):
                raise FileNotFoundError(f"No Kelmarsh SCADA files (Turbine_Data_Kelmarsh_*.csv) "
                                        f"in {str(path)!r}.")


def run(spec, out=None, *, workers: int = 1, quick: bool = False, repetitions=None, trials=UNSET,
        progress: bool = True, data_dir=None, retry_failures: bool = False,
        threads=None, parquet: bool = False) -> RunSummary:
    """Run every missing row of a regression spec into ``OUT/results.csv``.

    Parameters are those of :func:`fastldp.experiments.runner.run`; ``repetitions``
    (deprecated name ``trials``) replaces the spec's ``seeds`` by ``range(repetitions)``
    (only when ``spec`` is a path).
    """
    repetitions = repetitions_alias(repetitions, trials, "run")
    if not isinstance(spec, Spec):
        spec = load_spec(spec, quick=quick, repetitions=repetitions)
    if not (isinstance(workers, int) and workers >= 1):
        raise ValueError(f"The 'workers' parameter of run must be an int >= 1. Got {workers!r} "
                         f"instead.")
    if data_dir is None:
        data_dir = os.environ.get("FASTLDP_DATA")
    check_data(spec, data_dir)
    _warn_without_threadpoolctl()
    out = Path(out) if out is not None else Path("results") / spec.name
    cells = expand_grid(spec)
    sizes = _nested_sizes(cells)
    task = functools.partial(_task, sizes=sizes) if sizes else _task
    return run_grid(spec, out, RegressionResultsTable(out / "results.csv"), cells,
                    task, workers=workers, threads=threads, data_dir=data_dir,
                    progress=progress, retry_failures=retry_failures, group=_data_group)

