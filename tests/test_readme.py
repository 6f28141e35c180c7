"""The README's Python examples run as written."""

import re
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"


@pytest.mark.slow
def test_readme_python_blocks_run():
    if not README.exists():  # e.g. tests run from an installed wheel's copy
        pytest.skip("README.md is not next to the tests")
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.S)
    assert len(blocks) >= 2  # the ten-line example and the attack comparison
    namespace: dict = {}
    for block in blocks:  # later blocks reuse names defined by earlier ones
        exec(compile(block, str(README), "exec"), namespace)
    assert namespace["est"].matrix.shape == (64, 64)
