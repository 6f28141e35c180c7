"""``fastldp reproduce multidim``: multi-attribute records, against the papers' conclusions.

Three sweeps over ``epsilon``, each averaged over repetitions (fresh
privatization of the same records; the records are drawn once per table):

1. **Attribute frequencies** (Arcolezi et al., CIKM 2021): the MSE of the
   normalized frequencies of every value of every attribute (averaged over
   all values of all attributes) for :class:`~fastldp.multidim.SPL` and
   :class:`~fastldp.multidim.SMP` over every oracle of
   :data:`~fastldp.multidim.ORACLES` and ``"auto"`` (the oracle of least
   variance per attribute), and :class:`~fastldp.multidim.RSpFD` in every
   variant of :data:`~fastldp.multidim.RSPFD_VARIANTS` and ``"auto"``. RSpFD runs
   twice: at the exact budget (``RSpFD(epsilon=eps)``, ``eps``-LDP) and as
   the paper accounts for it (``RSpFD(epsilon=paper_budget(eps, A))``,
   labelled ``@paper``: ``eps``-LDP by the paper's Theorem 1, which the
   exact law refutes, see :func:`~fastldp.multidim.paper_budget`). On a
   synthetic table (Zipf attributes) and, with ``--data DIR``, on the
   Women's E-Commerce Clothing Reviews table (a CSV, plain or gzipped, whose
   name contains ``clothing``, with the columns Age, Rating, Recommended
   IND, Division Name, Department Name and Class Name; rows with a missing
   value are dropped), and on the UCI Adult table when the ``adult`` extra is
   installed (:func:`find_adult`).
2. **Marginals** of ``t = 2`` and ``t = 3`` attributes: the total variation
   distance between the estimated and the true marginal, averaged over
   every set of ``t`` attributes, for every marginal protocol that
   :mod:`fastldp.multidim` exports (a class whose estimate has a
   ``marginal`` method; found at run time, not listed here), on binary
   records (the Cormode et al. protocols take binary attributes). Each is
   built for the order ``t`` it answers (CALM: every set of ``t``
   attributes reported); the row ``CALM-model`` is CALM choosing its
   reported marginals by its error model for pairs, told ``n``
   (:func:`~fastldp.multidim.calm_parameters`).
3. **Numeric means** (Wang et al., ICDE 2019): the MSE of the mean vector of
   :class:`~fastldp.multidim.SampledMean` (its optimal ``k``) against
   :class:`~fastldp.multidim.SplitMean`, for every randomizer of
   :data:`~fastldp.multidim.RANDOMIZERS`.

The papers' conclusions are checked in shape (``checks.csv``): a check
compares two methods at one setting, agrees or disagrees only where their
difference is larger than two standard errors of the difference (over the
repetitions), and is "not resolved" otherwise. A resolved disagreement is a
failed check (the command exits non-zero). RS+FD against SMP is checked
where the estimators' own variances say that RS+FD should win: every row
also carries ``predicted_mse``, the mean over its repetitions of the
estimate's plug-in variances over ``n^2`` (the expected MSE of an unbiased
estimator), and where that prediction puts SMP ahead the paper's claim
cannot hold for the protocol as specified, whatever the implementation; the
comparison is then reported (not checked) as a disagreement the variances
predict, and checked instead against that prediction (a resolved result
contrary to both the paper and the variances fails). Why this rule and not
a budget cut-off: the amplification ``ln(A (e^eps - 1) + 1) - eps`` of
RS+FD's sampled attribute shrinks relative to the noise its fake data add
as ``eps`` grows, at a budget that depends on the variant and the domain
sizes (RS+FD[OUE-random] falls behind SMP[OUE] near ``eps = 2`` on both
tables here, RS+FD[GRR] only above it); the variance formulas say where.

Tables written to ``out``: ``frequencies.csv``, ``marginals.csv``,
``means.csv``, ``summary.csv`` (every cell: mean, sd, repetitions),
``checks.csv`` and ``report.txt``.
"""

from __future__ import annotations

import csv
import functools
import gzip
import importlib.util
import inspect
import itertools
import math
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Optional

import numpy as np

from ... import multidim
from ...multidim import (ORACLES, RANDOMIZERS, RSPFD_VARIANTS, SMP, SPL, RSpFD, SampledMean,
                         SplitMean, paper_budget, total_variation)
from ...multidim._frequency import AUTO

__all__ = ["MultidimResult", "reproduce", "GRIDS", "CLOTHING_COLUMNS", "load_clothing",
           "ADULT_COLUMNS", "find_adult", "load_adult", "marginal_protocols", "PAPER_CONCLUSIONS"]

#: the full and the quick grids
GRIDS: dict[str, dict[str, Any]] = {
    "full": {"epsilons": [0.5, 1.0, 2.0, 4.0, 8.0], "repetitions": 10, "n": 50_000,
             "domain_sizes": [2, 4, 8, 16, 32], "marginal_n": 50_000, "marginal_attributes": 6,
             "marginal_epsilons": [0.5, 1.0, 2.0, 4.0], "mean_n": 50_000, "dimension": 10,
             "seed": 20261204},
    "quick": {"epsilons": [1.0, 4.0], "repetitions": 4, "n": 10_000,
              "domain_sizes": [2, 4, 8, 16, 32], "marginal_n": 10_000, "marginal_attributes": 5,
              "marginal_epsilons": [1.0, 4.0], "mean_n": 10_000, "dimension": 10,
              "seed": 20261204},
}

#: the clothing table's attributes (its CSV's column names)
CLOTHING_COLUMNS = ("Age", "Rating", "Recommended IND", "Division Name", "Department Name",
                    "Class Name")
#: the UCI Adult table's attributes used (every column of the copy the ``xai`` package ships
#: but the numeric ones other than age: education-num duplicates education, the capital
#: gains and losses are mostly zero, hours-per-week is a count); Age is categorical, as in
#: the clothing table
ADULT_COLUMNS = ("age", "workclass", "education", "marital-status", "occupation",
                 "relationship", "ethnicity", "gender", "loan")
#: where the ``adult`` extra's package keeps the table (no download at run time)
ADULT_PACKAGE, ADULT_FILE = "xai", ("data", "census.csv")

PAPER_CONCLUSIONS = (
    "Arcolezi et al. (CIKM 2021): RS+FD is more accurate than SMP, and SMP than SPL, for "
    "every oracle (RS+FD under the paper's budget accounting). Wang et al. (ICDE 2019): "
    "sampling k dimensions at epsilon / k beats splitting the budget over all d.")

#: the marginal row of CALM choosing its reported marginals by its error model
#: (:func:`fastldp.multidim.calm_parameters`, for pairs); the row "CALM" reports every set of t
CALM_MODEL = "CALM-model"

#: the parameter names by which a marginal protocol takes the order of its marginals
ORDER_PARAMETERS = ("k", "marginal_size")


@dataclass
class MultidimResult:
    """What :func:`reproduce` returns: ``text``, ``failed`` (checks), files and tables."""

    text: str
    failed: int
    files: list = field(default_factory=list)
    figures: list = field(default_factory=list)
    tables: dict = field(default_factory=dict)


# ------------------------------------------------------------------------------ data
def zipf_table(n: int, domain_sizes, rng: np.random.Generator) -> np.ndarray:
    """``n`` records, attribute ``j`` Zipf(1.1) over ``[0, k_j)``, independent attributes."""
    out = np.empty((n, len(domain_sizes)), dtype=np.int64)
    for j, k in enumerate(domain_sizes):
        w = 1.0 / np.arange(1, k + 1) ** 1.1
        out[:, j] = rng.choice(k, size=n, p=w / w.sum())
    return out


def binary_table(n: int, n_attributes: int, rng: np.random.Generator) -> np.ndarray:
    """``n`` binary records with correlated attributes (a latent class per user).

    Each user draws a class in {0, 1, 2}; attribute ``j`` is 1 with a
    probability set by the class and ``j``, so the marginals are neither
    uniform nor products of their one-way margins.
    """
    latent = rng.integers(0, 3, size=n)
    prob = np.array([[0.15 + 0.1 * (j % 3), 0.5, 0.85 - 0.1 * (j % 2)]
                     for j in range(n_attributes)])  # (A, 3)
    return (rng.random((n, n_attributes)) < prob[:, latent].T).astype(np.int64)


def find_clothing(data_dir) -> Optional[Path]:
    """The clothing CSV in ``data_dir`` (a name containing ``clothing``), or ``None``."""
    if data_dir is None:
        return None
    found = sorted(p for p in Path(data_dir).expanduser().iterdir()
                   if "clothing" in p.name.lower() and p.name.lower().endswith((".csv", ".csv.gz")))
    return found[0] if found else None


def load_clothing(path) -> tuple:
    """The clothing table as int64 records and the domain size of every attribute.

    Every column of :data:`CLOTHING_COLUMNS` is categorical (Age too: its
    distinct values); values are numbered in sorted order. Rows with a
    missing value in one of them are dropped.
    """
    rows = _read_columns(path, CLOTHING_COLUMNS, "clothing")
    return _numbered([r for r in rows if all(r)], len(CLOTHING_COLUMNS))


def find_adult() -> Optional[Path]:
    """The UCI Adult table shipped by the ``adult`` extra's package, or ``None``.

    The package (:data:`ADULT_PACKAGE`, ``pip install "fastldp[adult]"``)
    carries the 32,561 rows of UCI's ``adult.data`` as a CSV; it is found
    without importing the package (its import pulls in scikit-learn and
    matplotlib), and nothing is downloaded.
    """
    spec = importlib.util.find_spec(ADULT_PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        return None
    for folder in spec.submodule_search_locations:
        path = Path(folder).joinpath(*ADULT_FILE)
        if path.is_file():
            return path
    return None


def load_adult(path) -> tuple:
    """The Adult table as int64 records and the domain size of every attribute.

    The columns of :data:`ADULT_COLUMNS`, values numbered in sorted order;
    rows with a missing value (``?``, UCI's mark, in workclass or
    occupation) are dropped: 30,718 of the 32,561 rows remain (the copy has
    no native-country column, whose ``?`` rows bring the usual count to
    30,162).
    """
    rows = _read_columns(path, ADULT_COLUMNS, "Adult")
    return _numbered([r for r in rows if all(v and v != "?" for v in r)], len(ADULT_COLUMNS))


def _read_columns(path, columns, table: str) -> list:
    """The stripped values of ``columns`` in every row of a CSV (plain or gzipped), or raise."""
    path = Path(path)
    opener = gzip.open if path.name.endswith(".gz") else open
    with opener(path, "rt", newline="", encoding="utf-8") as fh:
        reader = csv.DictReader(fh)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise ValueError(f"The {table} table {str(path)!r} has no column(s) {missing}; its "
                             f"columns are {reader.fieldnames}.")
        return [tuple(r[c].strip() for c in columns) for r in reader]


def _numbered(rows: list, n_columns: int) -> tuple:
    """Rows of strings as int64 records (each column's values numbered in sorted order)."""
    columns = list(zip(*rows))
    records = np.empty((len(rows), n_columns), dtype=np.int64)
    sizes = []
    for j, col in enumerate(columns):
        values = sorted(set(col), key=lambda v: (float(v), v) if _number(v) else (math.inf, v))
        index = {v: i for i, v in enumerate(values)}
        records[:, j] = [index[v] for v in col]
        sizes.append(max(len(values), 2))
    return records, sizes


def _number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True


def true_frequencies(records: np.ndarray, domain_sizes) -> np.ndarray:
    n = max(records.shape[0], 1)
    return np.concatenate([np.bincount(records[:, j], minlength=k) / n
                           for j, k in enumerate(domain_sizes)])


# ------------------------------------------------------------------------------ methods
def frequency_methods(domain_sizes, epsilon: float, seed: int) -> dict:
    """Every frequency method at ``epsilon``: name -> mechanism (module docstring)."""
    A = len(domain_sizes)
    out: dict[str, Any] = {}
    for name in (*ORACLES, AUTO):
        out[f"SPL-{name}"] = SPL(domain_sizes=domain_sizes, epsilon=epsilon, oracle=name,
                                 codebook_seed=seed)
        out[f"SMP-{name}"] = SMP(domain_sizes=domain_sizes, epsilon=epsilon, oracle=name,
                                 codebook_seed=seed)
    for variant in (*RSPFD_VARIANTS, AUTO):
        out[f"RSpFD-{variant}"] = RSpFD(domain_sizes=domain_sizes, epsilon=epsilon,
                                        variant=variant, codebook_seed=seed)
        out[f"RSpFD-{variant}@paper"] = RSpFD(domain_sizes=domain_sizes,
                                              epsilon=paper_budget(epsilon, A),
                                              variant=variant, codebook_seed=seed)
    return out


def marginal_protocols() -> dict:
    """The classes of :mod:`fastldp.multidim` whose estimates answer ``marginal`` (by name).

    Found from the family's exports: a class with ``privatize`` that is built
    from ``domain_sizes`` or ``n_attributes`` and ``epsilon`` (the frequency
    and mean classes are told apart by their estimates, which have no
    ``marginal``: :func:`_answers_marginals`).
    """
    out = {}
    for name in multidim.__all__:
        cls = getattr(multidim, name)
        if not (isinstance(cls, type) and hasattr(cls, "privatize")):
            continue
        params = inspect.signature(cls).parameters
        if "epsilon" in params and ("domain_sizes" in params or "n_attributes" in params):
            if _answers_marginals(cls):
                out[name] = cls
    return out


def _build_marginal(cls, n_attributes: int, epsilon: float, t: int, seed: int):
    params = inspect.signature(cls).parameters
    kw: dict[str, Any] = {"epsilon": epsilon}
    if "domain_sizes" in params:
        kw["domain_sizes"] = [2] * n_attributes
    else:
        kw["n_attributes"] = n_attributes
    for order in ORDER_PARAMETERS:
        if order in params:
            kw[order] = t
    if "codebook_seed" in params:
        kw["codebook_seed"] = seed
    return cls(**kw)


def _answers_marginals(cls) -> bool:
    try:
        mech = _build_marginal(cls, 3, 1.0, 2, 0)
        rng = np.random.default_rng(0)
        est = mech.estimate(mech.privatize(binary_table(50, 3, rng), rng=rng))
    except (TypeError, ValueError):
        return False
    return callable(getattr(est, "marginal", None))


# ------------------------------------------------------------------------------ sweeps
def _stats(values) -> tuple:
    v = np.asarray(values, dtype=np.float64)
    return float(v.mean()), float(v.std(ddof=1)) if v.size > 1 else math.nan


def frequency_sweep(table: str, records, domain_sizes, grid, rng, log) -> list[dict]:
    truth = true_frequencies(records, domain_sizes)
    n = records.shape[0]
    rows = []
    for eps in grid["epsilons"]:
        methods = frequency_methods(domain_sizes, eps, grid["seed"])
        errors: dict[str, list] = {m: [] for m in methods}
        predicted: dict[str, list] = {m: [] for m in methods}
        seconds: dict[str, float] = {m: 0.0 for m in methods}
        for _ in range(grid["repetitions"]):
            for name, mech in methods.items():
                t0 = time.perf_counter()
                est = mech.estimate(mech.privatize(records, rng=rng))
                seconds[name] += time.perf_counter() - t0
                errors[name].append(float(np.mean((est.counts / n - truth) ** 2)))
                predicted[name].append(float(np.mean(est.variances)) / n ** 2)
        for name in methods:
            mean, sd = _stats(errors[name])
            rows.append({"table": table, "epsilon": eps, "method": name, "mse_mean": mean,
                         "mse_sd": sd, "repetitions": len(errors[name]),
                         "predicted_mse": float(np.mean(predicted[name])),
                         "seconds_per_run": seconds[name] / grid["repetitions"]})
        if log:
            print(f"  frequencies {table} epsilon={eps:g}: done", file=log)
    return rows


def marginal_sweep(grid, rng, log) -> list[dict]:
    A = grid["marginal_attributes"]
    records = binary_table(grid["marginal_n"], A, rng)
    protocols = marginal_protocols()
    rows = []
    for t in (2, 3):
        sets = list(itertools.combinations(range(A), t))
        truths = {s: np.bincount(np.ravel_multi_index(records[:, list(s)].T, (2,) * t),
                                 minlength=2**t).reshape((2,) * t) for s in sets}
        for eps in grid["marginal_epsilons"]:
            built = {name: functools.partial(_build_marginal, cls, A, eps, t, grid["seed"])
                     for name, cls in protocols.items()}
            # CALM with its reported marginals chosen by its error model for pairs (n known)
            built[CALM_MODEL] = functools.partial(
                multidim.CALM, domain_sizes=[2] * A, epsilon=eps,
                n_users=int(grid["marginal_n"]), codebook_seed=grid["seed"])
            for name, build in built.items():
                try:
                    mech = build()
                except ValueError as exc:  # e.g. an order the protocol does not take
                    rows.append({"t": t, "epsilon": eps, "method": name, "tvd_mean": math.nan,
                                 "tvd_sd": math.nan, "repetitions": 0, "note": str(exc)})
                    continue
                tvds = []
                for _ in range(grid["repetitions"]):
                    est = mech.estimate(mech.privatize(records, rng=rng))
                    per = []
                    for s in sets:
                        counts = np.asarray(est.marginal(list(s))[0], dtype=np.float64)
                        # the TVD of the estimate as released, projected onto the simplex by
                        # clipping negatives (a table of signed counts is no distribution)
                        clipped = np.clip(counts, 0.0, None)
                        if clipped.sum() <= 0:
                            clipped = np.full(clipped.shape, 1.0)
                        per.append(total_variation(clipped, truths[s]))
                    tvds.append(float(np.mean(per)))
                mean, sd = _stats(tvds)
                rows.append({"t": t, "epsilon": eps, "method": name, "tvd_mean": mean,
                             "tvd_sd": sd, "repetitions": len(tvds), "note": ""})
            if log:
                print(f"  marginals t={t} epsilon={eps:g}: done", file=log)
    return rows


def mean_sweep(grid, rng, log) -> list[dict]:
    d, n = grid["dimension"], grid["mean_n"]
    centre = np.linspace(-0.6, 0.6, d)
    x = np.clip(centre + rng.uniform(-0.4, 0.4, (n, d)), -1.0, 1.0)
    truth = x.mean(axis=0)
    rows = []
    for eps in grid["epsilons"]:
        for randomizer in RANDOMIZERS:
            methods = {"sampling": SampledMean(dimension=d, epsilon=eps, randomizer=randomizer),
                       "splitting": SplitMean(dimension=d, epsilon=eps, randomizer=randomizer)}
            for name, mech in methods.items():
                errors = [float(np.mean((mech.estimate(mech.privatize(x, rng=rng)).mean
                                         - truth) ** 2)) for _ in range(grid["repetitions"])]
                mean, sd = _stats(errors)
                rows.append({"epsilon": eps, "randomizer": randomizer, "method": name,
                             "k": mech.k, "mse_mean": mean, "mse_sd": sd,
                             "repetitions": len(errors)})
        if log:
            print(f"  means epsilon={eps:g}: done", file=log)
    return rows


# ------------------------------------------------------------------------------ checks
def _compare(better: dict, worse: dict, metric: str, what: str, setting: str) -> dict:
    """Whether ``better``'s metric is below ``worse``'s, resolved by two standard errors."""
    a, b = better[f"{metric}_mean"], worse[f"{metric}_mean"]
    se = math.sqrt(better[f"{metric}_sd"] ** 2 / better["repetitions"]
                   + worse[f"{metric}_sd"] ** 2 / worse["repetitions"])
    resolved = abs(a - b) > 2 * se
    verdict = ("agrees" if a < b else "DISAGREES") if resolved else "not resolved"
    failure = (f"{what}: {better['method']} {metric} {a:.4g} is above {worse['method']}'s "
               f"{b:.4g} by more than two standard errors ({2 * se:.2g}), {setting}"
               if verdict == "DISAGREES" else "")
    return {"claim": what, "setting": setting, "better": better["method"],
            "worse": worse["method"], "better_value": a, "worse_value": b,
            "two_se": 2 * se, "verdict": verdict, "ok": verdict != "DISAGREES",
            "failure": failure}


def checks(freq: list[dict], marg: list[dict], means: list[dict]) -> list[dict]:
    out = []
    by = {(r["table"], r["epsilon"], r["method"]): r for r in freq}
    for (table, eps, method), row in sorted(by.items(), key=lambda kv: str(kv[0])):
        if method.startswith("SMP-"):
            oracle = method[4:]
            spl = by[(table, eps, f"SPL-{oracle}")]
            out.append(_compare(row, spl, "mse", "SMP beats SPL", f"{table}, eps={eps:g}"))
    for (table, eps, method), row in sorted(by.items(), key=lambda kv: str(kv[0])):
        if method.endswith("@paper") and not method.startswith("RSpFD-SUE"):
            base = method[len("RSpFD-"):-len("@paper")].split("-")[0]  # auto: SMP-auto
            smp = by.get((table, eps, f"SMP-{base}"))
            if smp is None:
                continue
            setting = f"{table}, eps={eps:g}"
            if row["predicted_mse"] < smp["predicted_mse"]:
                out.append(_compare(row, smp, "mse", "RS+FD (paper's accounting) beats SMP "
                                    "where the variances predict it", setting))
            else:
                seen = _compare(row, smp, "mse", "RS+FD (paper's accounting) beats SMP where "
                                "the variances predict SMP ahead (reported, not checked)",
                                setting)
                out.append({**seen, "ok": True, "failure": ""})
                expected = _compare(smp, row, "mse", "the variances' order of RS+FD and SMP",
                                    setting)
                out.append(expected)
    by_mean = {(r["epsilon"], r["randomizer"], r["method"]): r for r in means}
    for (eps, randomizer, method), row in sorted(by_mean.items(), key=lambda kv: str(kv[0])):
        if method == "sampling" and row["k"] < by_mean[(eps, randomizer, "splitting")]["k"]:
            out.append(_compare(row, by_mean[(eps, randomizer, "splitting")], "mse",
                                "sampling beats splitting", f"{randomizer}, eps={eps:g}"))
    return out


# ------------------------------------------------------------------------------ report
def _write_csv(path: Path, rows: list[dict]) -> Path:
    keys: list = []
    for r in rows:
        keys.extend(k for k in r if k not in keys)
    with open(path, "w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=keys)
        writer.writeheader()
        writer.writerows(rows)
    return path


def _pivot(rows, row_key, col_key, value, fmt="{:.3g}") -> list[str]:
    cols = sorted({r[col_key] for r in rows})
    names = list(dict.fromkeys(r[row_key] for r in rows))
    cell = {(r[row_key], r[col_key]): r[value] for r in rows}
    width = max(len(str(n)) for n in names) + 2
    lines = [" " * width + "".join(f"{f'eps={c:g}':>11}" for c in cols)]
    for name in names:
        vals = [cell.get((name, c), math.nan) for c in cols]
        lines.append(f"{name:<{width}}" + "".join(f"{fmt.format(v):>11}" for v in vals))
    return lines


def _report(grid, freq, marg, means, checks_rows, tables_seen, quick, seconds, notes) -> str:
    lines = [f"multi-attribute records{' (quick)' if quick else ''}: "
             f"{grid['repetitions']} repetitions per cell", "", PAPER_CONCLUSIONS, ""]
    for table in tables_seen:
        rows = [r for r in freq if r["table"] == table]
        lines.append(f"Attribute frequencies, {table}: MSE of the normalized frequencies "
                     "(mean over every value of every attribute)")
        lines.extend(_pivot(rows, "method", "epsilon", "mse_mean"))
        lines.append("")
    lines.append("Marginals of binary records: mean total variation distance over every set of "
                 "t attributes")
    for t in (2, 3):
        rows = [r for r in marg if r["t"] == t and r["repetitions"]]
        if rows:
            lines.append(f"t = {t}")
            lines.extend(_pivot(rows, "method", "epsilon", "tvd_mean"))
    lines.append("")
    lines.append("Numeric means: MSE of the mean vector, sampling (optimal k) vs splitting")
    for r in means:
        r["label"] = f"{r['randomizer']} {r['method']}"
    lines.extend(_pivot(means, "label", "epsilon", "mse_mean"))
    lines.append("")
    counts = {v: sum(c["verdict"] == v for c in checks_rows)
              for v in ("agrees", "DISAGREES", "not resolved")}
    failed = sum(not c["ok"] for c in checks_rows)
    lines.append(f"Checks of the papers' conclusions (resolved at two standard errors): "
                 f"{counts['agrees']} agree, {counts['DISAGREES']} disagree, "
                 f"{counts['not resolved']} not resolved; {failed} failed (a resolved "
                 "disagreement where the claim is checked; the failure column of checks.csv)")
    for claim in dict.fromkeys(c["claim"] for c in checks_rows):
        mine = [c for c in checks_rows if c["claim"] == claim]
        agree = sum(c["verdict"] == "agrees" for c in mine)
        bad = [f"{c['better']} vs {c['worse']} ({c['setting']})" for c in mine
               if c["verdict"] == "DISAGREES"]
        lines.append(f"  {claim}: {agree} of {len(mine)} agree"
                     + (f"; disagree: {'; '.join(bad)}" if bad else ""))
    lines.extend(notes)
    lines.append(f"Time: {seconds:.1f} s")
    return "\n".join(lines) + "\n"


def reproduce(*, quick: bool = False, out=None, workers: int = 1, data_dir=None,
              progress: bool = True, figures: bool = True, file=None,
              repetitions: Optional[int] = None) -> MultidimResult:
    """Run the multi-attribute evaluation; write its tables and report.

    Parameters
    ----------
    quick : bool
        The quick grid of :data:`GRIDS` (under a minute on 2 cores).
    out : path, optional
        Output folder (default ``results/multidim`` or ``results/multidim-quick``).
    workers : int
        Accepted for the common experiment interface; unused (one process).
    data_dir : path, optional
        A folder holding the clothing CSV (module docstring); without one,
        the synthetic table only (the report says so).
    progress : bool
        Print a line per finished sweep step on stderr.
    figures : bool
        Accepted for the common interface; this experiment draws no figure.
    file : text stream, optional
        Where to print the report (default stdout).
    repetitions : int, optional
        Replace the grid's repetitions.
    """
    start = time.perf_counter()
    grid = dict(GRIDS["quick" if quick else "full"])
    if repetitions is not None:
        grid["repetitions"] = int(repetitions)
    out = Path(out) if out is not None else Path("results") / (
        "multidim-quick" if quick else "multidim")
    out.mkdir(parents=True, exist_ok=True)
    log = sys.stderr if progress else None
    rng = np.random.default_rng(grid["seed"])
    notes = []
    freq = frequency_sweep("synthetic", zipf_table(grid["n"], grid["domain_sizes"], rng),
                           grid["domain_sizes"], grid, rng, log)
    seen = ["synthetic"]
    clothing = find_clothing(data_dir)
    if clothing is not None:
        records, sizes = load_clothing(clothing)
        freq += frequency_sweep("clothing", records, sizes, grid, rng, log)
        seen.append("clothing")
        notes.append(f"clothing: {records.shape[0]:,} rows of {clothing.name}, domain sizes "
                     f"{sizes} ({', '.join(CLOTHING_COLUMNS)})")
    else:
        notes.append("clothing: no table (pass --data DIR with the Women's E-Commerce Clothing "
                     "Reviews CSV for the real-data rows)")
    adult = find_adult()
    if adult is not None:
        records, sizes = load_adult(adult)
        freq += frequency_sweep("adult", records, sizes, grid, rng, log)
        seen.append("adult")
        notes.append(f"adult: {records.shape[0]:,} rows of UCI Adult ({ADULT_PACKAGE}'s copy), "
                     f"domain sizes {sizes} ({', '.join(ADULT_COLUMNS)})")
    else:
        notes.append(f"adult: no table (pip install \"fastldp[adult]\": the {ADULT_PACKAGE} "
                     f"package ships UCI Adult)")
    marg = marginal_sweep(grid, rng, log)
    means = mean_sweep(grid, rng, log)
    check_rows = checks(freq, marg, means)
    summary = ([{"setting": f"{r['table']} eps={r['epsilon']:g}", "method": r["method"],
                 "mse_mean": r["mse_mean"], "mse_sd": r["mse_sd"],
                 "repetitions": r["repetitions"]} for r in freq]
               + [{"setting": f"t={r['t']} eps={r['epsilon']:g}", "method": r["method"],
                   "tvd_mean": r["tvd_mean"], "tvd_sd": r["tvd_sd"],
                   "repetitions": r["repetitions"]} for r in marg if r["repetitions"]]
               + [{"setting": f"{r['randomizer']} eps={r['epsilon']:g}", "method": r["method"],
                   "mean_mse_mean": r["mse_mean"], "mean_mse_sd": r["mse_sd"],
                   "repetitions": r["repetitions"]} for r in means])
    tables = {"frequencies": freq, "marginals": marg, "means": means, "summary": summary,
              "checks": check_rows}
    files = [_write_csv(out / f"{name}.csv", rows) for name, rows in tables.items() if rows]
    failed = sum(not c["ok"] for c in check_rows)
    text = _report(grid, freq, marg, means, check_rows, seen, quick,
                   time.perf_counter() - start, notes)
    report = out / "report.txt"
    report.write_text(text)
    files.append(report)
    print(text, end="", file=file or sys.stdout)
    return MultidimResult(text=text, failed=failed, files=files, tables=tables)
