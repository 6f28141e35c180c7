"""bench/regression_gathers.py runs (--quick) and prints one row per gather.

The script compares every kernel with its NumPy expression bit for bit
before timing it and exits on a difference, so a run to the end is that
check at the sweep's shapes (the kernels' own tests are in test_gather_kernel.py).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "regression_gathers.py"

pytestmark = pytest.mark.skipif(not BENCH.is_file(), reason="bench/ is not next to the tests")


def test_quick_run_checks_and_times_every_gather(capsys):
    spec = importlib.util.spec_from_file_location("regression_gathers", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    assert module.main(["--quick", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    rows = [line for line in out.splitlines() if line.startswith("| ") and " ms |" in line]
    assert len(rows) == 6
    assert "the local Lasso of all 1,500 users" in out
