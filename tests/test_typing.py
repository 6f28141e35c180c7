"""``mypy --strict`` accepts the public API used as a user would (tests/typing/user_calls.py).

The file calls every family the way the guides do: the top-level names,
budgets by keyword, ``fit(...)`` chained from the constructor, the result's
common fields, report files and the audit. An untyped public function or
method fails this test ("Call to untyped function ... in typed context"),
and so does a hint that makes correct user code wrong.
"""

import importlib.util
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
USER_CALLS = ROOT / "tests" / "typing" / "user_calls.py"


def test_mypy_strict_accepts_user_style_calls():
    if importlib.util.find_spec("mypy") is None:
        pytest.skip("mypy is not installed (it is in the 'test' extra: pip install -e .[test])")
    # run from the repository root, so that pyproject.toml's [tool.mypy] applies
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(USER_CALLS)],
        capture_output=True, text=True, cwd=ROOT, timeout=600)
    assert result.returncode == 0, (
        f"mypy --strict {USER_CALLS.relative_to(ROOT)} exited {result.returncode}:\n"
        f"{result.stdout}{result.stderr}")
