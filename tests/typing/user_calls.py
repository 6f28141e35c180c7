"""User-style calls that ``mypy --strict`` must accept (tests/test_typing.py runs it).

Each line is written the way a user of the public API would write it: the
names from the top level, budgets by keyword, the result's common fields.
Nothing here is run; it is type-checked only. One function per family.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import numpy.typing as npt

import fastldp


# ---------------------------------------------------------------- oracles
def oracle_counts(values: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    oracle = fastldp.OLH(domain_size=16, epsilon=1.0)
    reports = oracle.privatize(values, rng=0)
    result = oracle.estimate(reports)
    std = result.std
    assert std is not None
    # a 95% lower bound of every count
    estimate: npt.NDArray[np.float64] = np.asarray(result.estimate, dtype=np.float64)
    return estimate - 1.96 * np.asarray(std, dtype=np.float64)


def labelled_counts(labels: list[str]) -> object:
    oracle = fastldp.GRR(categories=["a", "b", "c"], epsilon=2.0)
    return oracle.estimate(oracle.privatize(labels, rng=1)).to_frame()


def personal_budgets(values: npt.NDArray[np.int64], budgets: npt.NDArray[np.float64]) -> int:
    oracle = fastldp.OUE(domain_size=8, epsilon=1.0)
    result = oracle.estimate(oracle.privatize(values, epsilons=budgets, rng=2),
                             epsilons=budgets)
    return result.n


# ---------------------------------------------------------------- relations
def relations(sets: object, budgets: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    # sets: a scipy.sparse matrix of 0/1 rows, one relation set per identity
    mech = fastldp.JPRS(shape=(16, 16), k=2, s=4, codebook_seed=12)
    reports = mech.privatize(sets, epsilons=budgets, rng=12)
    result = mech.estimate(reports, epsilons=budgets)
    print(result.n, result.privacy, result.std is None)
    return np.asarray(result.estimate, dtype=np.float64)


# ---------------------------------------------------------------- sparse vectors
def vectors(x: npt.NDArray[np.float64]) -> npt.NDArray[np.float64]:
    # x: one row of d = 50 values in {-1, 0, 1} per user, at most 4 of them nonzero
    mech = fastldp.RPC(d=50, items_per_user=4, epsilon=1.0, codebook_seed=13)
    result = mech.estimate(mech.privatize(x, rng=13))
    std = result.std
    assert std is not None
    mean: npt.NDArray[np.float64] = np.asarray(result.estimate, dtype=np.float64)
    return mean - 1.96 * np.asarray(std, dtype=np.float64)


# ---------------------------------------------------------------- histograms
def histogram(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.float64]:
    mech = fastldp.ShiftedLogGaussian(r=0.1)
    return np.asarray(mech.release_result(counts, rng=3).estimate, dtype=np.float64)


# ---------------------------------------------------------------- regression
def regression(X: npt.NDArray[np.float64], y: npt.NDArray[np.float64],
               users: npt.NDArray[np.int64]) -> float:
    model = fastldp.U2R(epsilon=1.0, k=4, rows_per_user=20).fit(X, y, users=users, rng=4)
    return float(model.privacy_.epsilon)


def regression_baselines(X: npt.NDArray[np.float64], y: npt.NDArray[np.float64],
                         users: npt.NDArray[np.int64]) -> list[float]:
    scores = []
    sdp = fastldp.SampleSDP(epsilon=2.0, delta=1e-6).fit(X, y, rng=5)
    scores.append(sdp.score(X, y))
    slr = fastldp.TwoStageSLR(epsilon=2.0, k=4, rows_per_user=20).fit(X, y, users=users, rng=6)
    scores.append(slr.score(X, y))
    iht = fastldp.LDPIHT(epsilon=4.0, k=4, iterations=5).fit(X, y, rng=7)
    scores.append(float(iht.predict(X).mean()))
    lasso = fastldp.Lasso(alpha=0.01).set_params(fit_intercept=False).fit(X, y)
    scores.append(lasso.intercept_)
    statement: fastldp.PrivacyStatement = sdp.privacy_.statement()
    print(statement.budget(), str(slr.privacy_), int(lasso.support_.shape[0]))
    return scores


def shuffled_sum(vectors: npt.NDArray[np.float64]) -> tuple[int, float]:
    summer = fastldp.ShuffledVectorSum(epsilon=1.0, delta=1e-6, norm_bound=1.0)
    res = summer.sum(vectors, rng=8)
    total: npt.NDArray[np.float64] = res.estimate
    bits = fastldp.ShuffledBits(epsilon=2.0, d=4)
    counts, gamma = bits.counts(np.zeros(100, dtype=np.int64), rng=9)
    return res.n + int(counts.sum()) + int(total.shape[0]), res.noise_sd + gamma


# ---------------------------------------------------------------- report files
def report_files(values: npt.NDArray[np.int64], folder: Path) -> int:
    oracle = fastldp.GRR(domain_size=8, epsilon=1.0, codebook_seed=1)
    path = fastldp.reports.write_reports(folder / "r.parquet", oracle,
                                         oracle.privatize(values, rng=10))
    result: fastldp.FrequencyEstimate = fastldp.reports.decode_files(oracle, path,
                                                                     progress=False)
    saved = fastldp.reports.save_result(result, folder / "result.npz")
    loaded = fastldp.reports.load_result(saved)
    estimate = loaded.estimate
    assert estimate is not None
    return result.n + int(estimate.shape[0])


# ---------------------------------------------------------------- audit
def audit() -> bool:
    registry = fastldp.audit.channels(epsilon=1.0)
    row = fastldp.audit.audit_channel(registry["grr"], n=10_000, rng=11)
    rows = fastldp.audit.audit_all(["oue"], epsilon=1.0, controls=True, n=10_000)
    print(fastldp.audit.format_table([row, *rows]))
    return row.holds and all(r.as_expected for r in rows)


def version() -> str:
    return fastldp.__version__
