"""bench/ranges_anchor.py: its data, ranges and the study code's consistency variant."""

from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "ranges_anchor.py"


@pytest.fixture(scope="module")
def anchor():
    spec = importlib.util.spec_from_file_location("ranges_anchor", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_cauchy_probabilities_follow_the_study_codes_folding_rule(anchor):
    # Their rule: (uint) abs(x) for x ~ Cauchy(0.33 D, D / 10), kept when below D.
    D = anchor.D
    p = anchor.cauchy_probabilities(0.33, 10.0)
    assert p.shape == (D,)
    assert p.sum() == pytest.approx(1.0, abs=1e-12)
    x = np.abs(0.33 * D + (D / 10.0) * np.random.default_rng(5).standard_cauchy(2_000_000))
    kept = np.floor(x[x < D]).astype(np.int64)
    m = kept.size
    observed = np.bincount(kept, minlength=D)
    # each cell's count is Binomial(m, p_k): 5 sd either side
    assert np.all(np.abs(observed - m * p) <= 5 * np.sqrt(m * p * (1 - p)) + 1)
    # the fold at 0 matters: the mass below the location's mirror image is not lost
    assert p[0] > 0.0 and p[:10].sum() > p[-10:].sum()


def test_ranges_are_those_of_their_driver(anchor):
    a, b = anchor.all_ranges()
    assert a.size == anchor.D * (anchor.D - 1) // 2 == 32_640
    assert np.all(a < b)


def test_their_consistency_by_hand(anchor):
    # B = 2, h = 2, n = 10; level 1 = [6, 5], leaves = [3, 2, 4, 2].
    # Level 1's own weight (2 - 1) / (2 - 1) = 1 keeps it; the root's is
    # (4 - 2) / (4 - 1) = 2/3: 2/3 * 10 + 1/3 * 11 = 31/3. Mean consistency:
    # level 1 += (31/3 - 11) / 2 -> [17/3, 14/3]; leaves += (17/3 - 5) / 2 and
    # (14/3 - 6) / 2 -> [10/3, 7/3, 10/3, 4/3].
    leaves = anchor.their_consistency((np.array([6.0, 5.0]), np.array([3.0, 2.0, 4.0, 2.0])),
                                      10, 2)
    np.testing.assert_allclose(leaves, [10 / 3, 7 / 3, 10 / 3, 4 / 3], rtol=1e-12)


def test_their_consistency_is_consistent_and_exact_without_noise(anchor):
    rng = np.random.default_rng(3)
    B, h = 4, 3
    truth = rng.integers(0, 50, B**h).astype(float)
    exact = tuple(truth.reshape(B**l, -1).sum(axis=1) for l in range(1, h + 1))
    np.testing.assert_allclose(anchor.their_consistency(exact, int(truth.sum()), B), truth,
                               rtol=1e-12)
    noisy = tuple(level + rng.normal(0, 5, level.size) for level in exact)
    leaves = anchor.their_consistency(noisy, int(truth.sum()), B)
    # the leaves' total is the root after averaging, not n: their root is averaged as a count
    root = (B**h - B ** (h - 1)) / (B**h - 1) * truth.sum() + (
        1 - (B**h - B ** (h - 1)) / (B**h - 1)) * (
        # level 1 after averaging: (B^2 - B) / (B^2 - 1) own, the rest its children's
        # (level 2 kept as raw: weight 1 one level above the leaves)
        ((B**2 - B) / (B**2 - 1) * noisy[0]
         + (1 - (B**2 - B) / (B**2 - 1)) * noisy[1].reshape(-1, B).sum(axis=1)).sum())
    assert leaves.sum() == pytest.approx(root, rel=1e-12)


def test_rows_sharing_a_mechanism_share_its_reports(anchor):
    # the paired rows (ours and their consistency) must see the same simulated levels
    from fastldp.ranges import HierarchicalHistogram

    def make():
        return HierarchicalHistogram(epsilon=anchor.EPSILON, domain_size=anchor.D, branching=16,
                                     oracle="oue", codebook_seed=1)

    def ours(est, a, b):
        return est.range_count(a, b)

    shared, other = make(), make()
    rows = [("ours", shared, ours), ("same reports", shared, ours), ("other reports", other, ours)]
    p = anchor.cauchy_probabilities(0.33, 10.0)
    (r1, one1, five1, _), (r2, one2, five2, _), (r3, _, _, _) = anchor.rmse(
        rows, p, 5, np.random.default_rng(0))
    assert (r1, one1) == (r2, one2)
    assert r3 != r1
    # 5 repetitions make one group of 5: no 5-run sd
    assert np.isnan(five1) and np.isnan(five2)
    # a fresh population per repetition, and the noise is that of the 2^26 users' fractions
    assert 1e-4 < r1 < 5e-3


def test_the_script_refuses_one_repetition():
    refused = subprocess.run([sys.executable, str(BENCH), "--reps", "1"], capture_output=True,
                             text=True, timeout=120)
    assert refused.returncode != 0
    assert "--reps must be at least 2" in refused.stderr and "got 1" in refused.stderr


@pytest.mark.slow
def test_the_script_runs():
    # slow: optimal_level_weights at D = 256 alone takes seconds to tens of seconds
    done = subprocess.run([sys.executable, str(BENCH), "--reps", "2"], capture_output=True,
                          text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert "32640 ranges a < b" in lines[0]
    names = [line[:31].strip() for line in lines[2:]]
    assert names[:4] == ["HH B=2", "HH B=2 their consistency", "HH B=4",
                         "HH B=4 their consistency"]
    assert names[-2:] == ["HaarHRR", "flat OUE"]
