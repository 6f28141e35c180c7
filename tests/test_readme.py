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
    assert len(blocks) >= 3  # the ten-line example, the attack comparison, each family's
    for i, block in enumerate(blocks):  # each block runs on its own, as a reader would
        namespace: dict = {}
        exec(compile(block, f"{README}, python block {i + 1}", "exec"), namespace)
        if i == 0:
            assert namespace["est"].matrix.shape == (64, 64)
