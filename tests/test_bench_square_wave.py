"""bench/square_wave_compare.py --reference: the adapter around the authors' sw.py.

The authors' file is not shipped; a stand-in module with their signatures
(``sw`` calling the module's ``EM``; ``EM`` and ``EMS`` taking the same
arguments, each calling ``np.inner`` once per E-step) checks what the
adapter does to it: EMS rows really run ``EMS``, the E-steps are counted,
the module is left as it was, NumPy's global stream is seeded, W1 is the
Wasserstein-1 distance, and a wrong path exits 2 naming ``--reference``.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from scipy.stats import wasserstein_distance

BENCH = Path(__file__).resolve().parents[1] / "bench" / "square_wave_compare.py"

pytestmark = pytest.mark.skipif(not BENCH.is_file(), reason="bench/ is not next to the tests")

# EM answers the uniform distribution after 3 E-steps, EMS the sample's own
# histogram after 2, so a row shows which one ran and how many steps it took.
STAND_IN = '''
import numpy as np

last_draw = None


def sw(ori_samples, l, h, eps, randomized_bins=1024, domain_bins=1024):
    global last_draw
    last_draw = np.random.uniform(0, 1, 3)
    samples = (ori_samples - l) / (h - l)
    cells = np.minimum((samples * domain_bins).astype(np.int64), domain_bins - 1)
    hist = np.bincount(cells, minlength=domain_bins)
    return EM(domain_bins, hist, None, 10000, 1e-3) * len(ori_samples)


def EMS(n, ns_hist, transform, max_iteration, loglikelihood_threshold):
    for _ in range(2):
        np.inner(ns_hist, ns_hist)
    return ns_hist / ns_hist.sum()


def EM(n, ns_hist, transform, max_iteration, loglikelihood_threshold):
    for _ in range(3):
        np.inner(ns_hist, ns_hist)
    return np.ones(n) / n
'''


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("square_wave_compare", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.fixture()
def stand_in(tmp_path):
    (tmp_path / "sw.py").write_text(STAND_IN)
    return tmp_path


def test_reference_rows_run_ems_or_em_and_count_their_steps(bench, stand_in):
    ref = bench.load_reference(str(stand_in))  # a folder holding sw.py
    original_em, original_np = ref.EM, ref.np
    x = np.random.default_rng(3).beta(5.0, 2.0, 5000)
    w1_ems, seconds, steps_ems = bench.run_reference(ref, 1.0, x, seed=7, smoothing=True)
    assert w1_ems == 0.0 and steps_ems == 2 and seconds >= 0.0
    w1_em, _, steps_em = bench.run_reference(ref, 1.0, x, seed=7, smoothing=False)
    assert steps_em == 3
    centres = (np.arange(bench.BINS) + 0.5) / bench.BINS
    expected = wasserstein_distance(centres, centres, u_weights=np.ones(bench.BINS),
                                    v_weights=bench.sample_histogram(x))
    assert w1_em == pytest.approx(expected, rel=1e-9)
    assert ref.EM is original_em and ref.np is original_np  # left as it was


def test_reference_stream_is_seeded(bench, stand_in):
    ref = bench.load_reference(str(stand_in / "sw.py"))
    x = np.random.default_rng(4).beta(5.0, 2.0, 100)
    bench.run_reference(ref, 1.0, x, seed=11, smoothing=True)
    first = ref.last_draw.copy()
    bench.run_reference(ref, 1.0, x, seed=12, smoothing=True)
    assert not np.array_equal(ref.last_draw, first)
    bench.run_reference(ref, 1.0, x, seed=11, smoothing=False)
    np.testing.assert_array_equal(ref.last_draw, first)


def test_side_by_side_table(bench, stand_in, capsys):
    assert bench.main(["--reference", str(stand_in), "--n", "3000", "--reps", "2",
                       "--eps", "4", "0.5"]) == 0
    rows = {tuple(line.split()[:2]): line.split() for line in capsys.readouterr().out.splitlines()
            if line.split()[:1] in (["4"], ["0.5"])}
    assert set(rows) == {("4", "SW-EMS"), ("0.5", "SW-EMS"), ("0.5", "SW-EM")}
    for (eps, method), cells in rows.items():
        ours_w1, ref_w1, ref_steps = float(cells[2]), float(cells[3]), int(cells[-1])
        assert 0.0 < ours_w1 < 0.1  # fastldp's estimate from 3,000 reports
        if method == "SW-EMS":
            assert ref_w1 == 0.0 and ref_steps == 2  # the stand-in's EMS: the sample's histogram
        else:
            assert ref_w1 > 0.05 and ref_steps == 3  # its EM: uniform, far from Beta(5, 2)


def test_wrong_reference_path_exits_2_naming_the_option(bench, tmp_path, capsys):
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--reference", str(tmp_path)])  # a folder without sw.py
    assert exit_info.value.code == 2
    assert "--reference" in capsys.readouterr().err
    (tmp_path / "sw.py").write_text("def sw(*args):\n    return None\n")
    with pytest.raises(SystemExit) as exit_info:
        bench.main(["--reference", str(tmp_path / "sw.py")])
    assert exit_info.value.code == 2
    assert "lacks EM, EMS" in capsys.readouterr().err
