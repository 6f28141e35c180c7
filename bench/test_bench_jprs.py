"""pytest-benchmark suite for the JPRS kernels (a few seconds in total).

It times the installed fastldp (see bench/README.md for timing a working
tree); from the repository root::

    python -m pytest bench -q
    python -m pytest bench -q --benchmark-only --benchmark-sort=name

The main test suite does not collect this folder (``testpaths = ["tests"]``),
and nothing here asserts on a time: timings are reported, never tested.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pytest_benchmark")

import fastldp  # noqa: E402
from fastldp._kernels._hash import philox_floor  # noqa: E402
from fastldp._kernels._openmp import max_threads  # noqa: E402
from fastldp._kernels._projection import project_sparse_capped  # noqa: E402
from fastldp._kernels._sketch import global_sketch  # noqa: E402

SEED = 20240601
N = 128_000
SHAPE = (64, 64)
P = SHAPE[0] * SHAPE[1]  # 4,096
K, S, EPS = 8, 128, 0.75
N_PRIVATIZE = 100_000
DEFAULT_THREADS = max(1, max_threads())
THREADS = sorted({1, DEFAULT_THREADS})


def _rounds(fn, benchmark, rounds=5):
    """A fixed, small number of rounds after one warm-up call."""
    return benchmark.pedantic(fn, rounds=rounds, iterations=1, warmup_rounds=1)


@pytest.fixture(scope="module")
def population():
    return fastldp.relations.rate_diagnostic_population(shape=SHAPE, s=S, k=K, n=N, rng=0)


@pytest.fixture(scope="module")
def mech():
    return fastldp.JPRS(shape=SHAPE, k=K, s=S, codebook_seed=SEED)


@pytest.fixture(scope="module")
def reports(mech, population):
    eps = np.full(N, EPS)
    return mech.privatize(population.relations, epsilons=eps, rng=0), eps


@pytest.fixture(scope="module")
def identities():
    return np.arange(N, dtype=np.uint64)


# ------------------------------------------------------------------ kernels
@pytest.mark.benchmark(group="global_sketch n=128000 p=4096")
@pytest.mark.parametrize("n_threads", THREADS)
def test_global_sketch_equal_weights(benchmark, mech, reports, identities, n_threads):
    """Equal |w_i| (one budget for everyone): the integer sign-counting path."""
    bits, eps = reports
    w = mech.sketch_weights(bits, eps)
    v = _rounds(lambda: global_sketch(SEED, identities, w, P, n_threads), benchmark)
    assert v.shape == (P,) and np.all(np.isfinite(v))


@pytest.mark.benchmark(group="global_sketch n=128000 p=4096")
@pytest.mark.parametrize("n_threads", THREADS)
def test_global_sketch_float_weights(benchmark, identities, n_threads):
    """Unequal weights (personalized budgets): the float table path."""
    w = np.random.default_rng(1).standard_normal(N)
    v = _rounds(lambda: global_sketch(SEED, identities, w, P, n_threads), benchmark)
    assert v.shape == (P,) and np.all(np.isfinite(v))


@pytest.mark.benchmark(group="philox_floor n=128000 p=4096")
@pytest.mark.parametrize("n_threads", THREADS)
def test_philox_floor(benchmark, identities, n_threads):
    """The n * ceil(p/256) Philox blocks every exact decoder must generate."""
    fold = _rounds(lambda: philox_floor(SEED, identities, P, n_threads), benchmark)
    assert isinstance(fold, int)


@pytest.mark.benchmark(group="projection p=4096")
def test_project_sparse_capped(benchmark):
    v = np.random.default_rng(2).standard_normal(P) * 0.3
    v[:S] += 1.0
    x, support = benchmark.pedantic(project_sparse_capped, args=(v, S, float(K)),
                                    rounds=50, iterations=10, warmup_rounds=1)
    assert support.shape == (S,) and x.sum() <= K + 1e-9


# ---------------------------------------------------------------- mechanism
@pytest.mark.benchmark(group="JPRS")
def test_estimate(benchmark, mech, reports):
    bits, eps = reports
    est = _rounds(lambda: mech.estimate(bits, epsilons=eps), benchmark)
    assert est.matrix.shape == SHAPE
    assert np.count_nonzero(est.matrix) <= S


@pytest.mark.benchmark(group="JPRS")
def test_privatize(benchmark, mech, population):
    relations = population.relations[:N_PRIVATIZE]
    eps = np.full(N_PRIVATIZE, EPS)
    bits = _rounds(lambda: mech.privatize(relations, epsilons=eps, rng=0), benchmark)
    assert bits.shape == (N_PRIVATIZE,) and bits.dtype == np.int8
    assert set(np.unique(bits).tolist()) <= {-1, 1}


# ------------------------------------------------------ reference (no timing)
def test_numpy_reference_matches_kernel():
    """The NumPy decoder that compare.py times computes the same sketch."""
    from numpy_reference import check_against_kernel

    check_against_kernel(n=700, shape=(8, 40), k=4, s=16, verbose=False)
