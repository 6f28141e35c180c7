"""Hostile and extreme inputs found by review (issue: privacy and robustness).

Each test fails on the behaviour the review found: a silent wrong answer,
an error far from its cause, or a success reported for a failure.
"""

import os

import numpy as np
import pytest
import scipy.sparse as sp

import fastldp
from fastldp import cli
from fastldp._random import resolve_n_threads
from fastldp.relations import PaddedRelationSampling


def _bad_csr(col, width):
    return sp.csr_matrix((np.ones(2), np.array([3, col]), np.array([0, 1, 2])), shape=(2, width))


@pytest.mark.parametrize("col", [40, 16, -1])
@pytest.mark.parametrize("make", [
    lambda: fastldp.JPRS(shape=(4, 4), k=2, s=2, codebook_seed=1),
    lambda: PaddedRelationSampling(shape=(4, 4), k=2, s=2, oracle="grr", codebook_seed=1),
    lambda: PaddedRelationSampling(shape=(4, 4), k=2, s=2, oracle="hr", codebook_seed=1),
])
def test_sparse_relations_out_of_range_columns_raise(make, col):
    with pytest.raises(ValueError, match=rf"column indices in \[0, 16\)\. Got column index {col}"):
        make().privatize(_bad_csr(col, 16), epsilons=1.0, rng=0)


@pytest.mark.parametrize("col", [6, 7, 100, -1])
def test_sparse_vectors_out_of_range_columns_raise(col):
    # column 7 of d = 6 would collide with a padding coordinate of RPC
    with pytest.raises(ValueError, match=rf"'x' parameter of RPC must have column indices in \[0, 6\)"):
        fastldp.RPC(d=6, m=2, epsilon=1.0, codebook_seed=1).privatize(_bad_csr(col, 6), rng=0)


def test_malformed_indptr_raises():
    m = sp.csr_matrix((2, 16))
    m.indptr = np.array([0, 2, 1])
    m.indices = np.array([1, 2])
    m.data = np.ones(2)
    with pytest.raises(ValueError, match="well-formed sparse matrix"):
        fastldp.JPRS(shape=(4, 4), k=2, s=2, codebook_seed=1).privatize(m, epsilons=1.0, rng=0)


def test_pair_encoding_cannot_wrap():
    with pytest.raises(ValueError, match=r"d1 \* d2 < 2\*\*62"):
        fastldp.JPRS(shape=(2**33, 2**33), k=2, s=2, codebook_seed=1)
    with pytest.raises(ValueError, match=r"d1 \* d2 < 2\*\*62"):
        PaddedRelationSampling(shape=(2**31, 2**31), k=2, s=2, codebook_seed=1)


@pytest.mark.parametrize("eps", [1e-200, 1e-160, 5e-151])
def test_budgets_that_underflow_the_denominator_are_refused_up_front(eps):
    mech = fastldp.JPRS(shape=(4, 4), k=2, s=2, codebook_seed=1)
    relations = [np.array([[0, 1]])] * 3
    with pytest.raises(ValueError, match=r"'epsilons' parameter of JPRS\.privatize must contain only floats in \[1e-150"):
        mech.privatize(relations, epsilons=eps, rng=0)
    with pytest.raises(ValueError, match=r"\[1e-150, inf\)"):
        mech.estimate(np.ones(3, np.int8), epsilons=eps)


def test_smallest_budget_gives_a_finite_estimate():
    mech = fastldp.JPRS(shape=(4, 4), k=2, s=2, codebook_seed=1)
    bits = mech.privatize([np.array([[0, 1]])] * 3, epsilons=1e-150, rng=0)
    assert np.all(np.isfinite(mech.estimate(bits, epsilons=1e-150).sketch))


def test_thread_counts_are_clamped_to_the_cores():
    cores = os.cpu_count() or 1
    assert resolve_n_threads(5000, "x") == cores
    assert resolve_n_threads(1, "x") == 1
    assert fastldp.JPRS(shape=(2, 2), k=1, s=1, n_threads=5000).n_threads == cores


def test_reproduce_checks_its_data_folder_before_running(tmp_path, capsys, monkeypatch):
    monkeypatch.delenv("FASTLDP_DATA", raising=False)
    assert cli.main(["reproduce", "real-data", "--quick", "--out", str(tmp_path / "o")]) == 2
    assert "reads data files: pass --data DIR" in capsys.readouterr().err
    assert cli.main(["reproduce", "real-data", "--quick", "--data", str(tmp_path / "nope"),
                     "--out", str(tmp_path / "o")]) == 2
    assert "does not exist" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()  # nothing ran, nothing was written


def test_a_spec_of_unknown_family_is_refused(tmp_path, capsys):
    spec = tmp_path / "s.toml"
    spec.write_text('family = "nope"\nname = "x"\nmethods = ["A"]\n')
    assert cli.main(["run", str(spec)]) == 2
    assert "Unknown experiment family 'nope'" in capsys.readouterr().err
    spec.write_text("family = [\n")  # unreadable TOML is an error, not another kind of spec
    assert cli.main(["run", str(spec)]) == 2
    assert "is not valid TOML" in capsys.readouterr().err


@pytest.mark.parametrize("oracle,eps", [("grr", 1e-17), ("grr", 800.0), ("olh", 800.0),
                                        ("hr", 1e-200)])
def test_padded_sampling_server_refuses_budgets_its_oracle_cannot_serve(oracle, eps):
    mech = PaddedRelationSampling(shape=(4, 4), k=2, s=2, codebook_seed=1, oracle=oracle)
    with pytest.raises(ValueError, match="'epsilons' parameter of PaddedRelationSampling"):
        mech.estimate(np.zeros(3, np.int64), epsilons=eps)
    with pytest.raises(ValueError, match="'epsilons' parameter of PaddedRelationSampling"):
        mech.decode(np.zeros(3, np.int64), eps, decoders=("global", "medoid"), n_groups=2)


def test_reproduce_reports_failed_rows_and_retries_them(tmp_path, capsys):
    from test_data_real import SHARED

    if SHARED is None:
        pytest.skip("the small real-data files are not next to this checkout")
    empty = tmp_path / "empty"
    empty.mkdir()
    out = tmp_path / "out"
    args = ["reproduce", "real-data", "--quick", "--out", str(out), "--no-progress",
            "--no-figures", "--workers", "1"]
    # every data set missing: the run stops before any row, naming all three, exit 2
    assert cli.main(args + ["--data", str(empty)]) == 2
    said = capsys.readouterr().err
    assert "3 problems" in said and all(name in said for name in
                                        ("movielens", "foursquare", "gowalla"))
    assert not (out / "results.csv").exists()
    # folders that exist but hold the wrong files get past the check: their rows fail
    for name in ("movielens-latest-small", "foursquare-tsmc2014", "gowalla"):
        (empty / name).mkdir()
        (empty / name / "README.txt").write_text("not the data")
    assert cli.main(args + ["--data", str(empty)]) == 1
    assert "rows failed" in capsys.readouterr().err
    # the right data without --retry-failures: nothing runs, the failures remain, exit 1
    assert cli.main(args + ["--data", str(SHARED)]) == 1
    assert "0 rows written" in capsys.readouterr().out
    assert cli.main(args + ["--data", str(SHARED), "--retry-failures"]) == 0
    said = capsys.readouterr().out
    assert " 0 failed rows" in said and "0 rows written" not in said
