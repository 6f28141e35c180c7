"""bench/normal_sampler.py and bench/local_lasso.py run (--quick) and print their lines.

local_lasso.py compares the compiled and the NumPy local Lassos bit for bit
before timing and exits on a difference, so a run to the end is that check
at the sweep's shapes (a tenth of the users).
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"

pytestmark = pytest.mark.skipif(not (BENCH / "local_lasso.py").is_file(),
                                reason="bench/ is not next to the tests")


def _load(name):
    spec = importlib.util.spec_from_file_location(name, BENCH / f"{name}.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_normal_sampler_quick(capsys):
    assert _load("normal_sampler").main(["--quick", "--repeats", "1"]) == 0
    out = capsys.readouterr().out
    assert "fastldp draws the 19,200,000 normals" in out
    assert "floor: the PCG64 words alone" in out


def test_local_lasso_quick(capsys):
    assert _load("local_lasso").main(["--quick", "--repeats", "1"]) == 0
    assert "the same solutions bit for bit" in capsys.readouterr().out
