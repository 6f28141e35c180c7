"""The README's Python examples run as written, print what README shows, and stay small.

Each ```python block runs on its own in a fresh interpreter, as a reader
would run it. Where README shows the output (a ```text block right after
the code, with nothing or only "prints" between them), the
printed text must be exactly that. Each block's peak resident set (VmHWM,
Linux) must stay under 1 GiB unless the block states its memory in a
comment ("# needs about 1.8 GB"), in which case it must stay within that
figure plus a quarter.
"""

import re
import subprocess
import sys
from pathlib import Path

import pytest

README = Path(__file__).resolve().parents[1] / "README.md"
LIMIT_BYTES = 2**30
STATED = re.compile(r"#.*needs about (\d+(?:\.\d+)?) ?(GB|GiB|MB|MiB)")

# Runs one block, then reports its own peak resident set on stderr. VmHWM
# belongs to the new process image; ru_maxrss would carry over the resident
# set of the forking pytest process.
RUNNER = """
import sys
path = sys.argv[1]
with open(path) as fh:
    code = compile(fh.read(), path, "exec")
exec(code, {"__name__": "__main__"})
sys.stdout.flush()
try:
    with open("/proc/self/status") as fh:
        kib = next(int(line.split()[1]) for line in fh if line.startswith("VmHWM"))
    sys.stderr.write(f"\\nVmHWM-KiB {kib}\\n")
except (OSError, StopIteration):
    pass
"""


def python_blocks(text: str) -> list:
    """(code, shown output or None) for every ```python block of README."""
    fences = list(re.finditer(r"^```(\w*)\n(.*?)^```", text, flags=re.S | re.M))
    blocks = []
    for k, fence in enumerate(fences):
        if fence.group(1) != "python":
            continue
        shown = None
        if k + 1 < len(fences) and fences[k + 1].group(1) == "text":
            between = text[fence.end():fences[k + 1].start()].strip()
            if re.fullmatch(r"(?i)((it )?prints|output)?:?", between):
                shown = fences[k + 1].group(2)
        blocks.append((fence.group(2), shown))
    return blocks


def stated_limit(code: str) -> int:
    m = STATED.search(code)
    if m is None:
        return LIMIT_BYTES
    scale = {"GB": 1e9, "GiB": 2**30, "MB": 1e6, "MiB": 2**20}[m.group(2)]
    return int(1.25 * float(m.group(1)) * scale)


def run_block(code: str, folder: Path, name: str):
    """(stdout, peak resident set in bytes or None) of ``code`` run in a fresh interpreter."""
    path = folder / f"{name}.py"
    path.write_text(code)
    proc = subprocess.run([sys.executable, "-c", RUNNER, str(path)], cwd=folder,
                          capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{name} failed:\n{proc.stdout}\n{proc.stderr}"
    m = re.search(r"VmHWM-KiB (\d+)", proc.stderr)
    return proc.stdout, (int(m.group(1)) * 1024 if m else None)


@pytest.mark.slow
def test_readme_python_blocks_run(tmp_path):
    if not README.exists():  # e.g. tests run from an installed wheel's copy
        pytest.skip("README.md is not next to the tests")
    blocks = python_blocks(README.read_text())
    # README is a front page: the product quickstart (shown with its output) and the
    # research quickstart; each family's examples live on its docs page
    assert len(blocks) >= 2
    assert blocks[0][1] is not None, "the product quickstart shows what it prints"
    for i, (code, shown) in enumerate(blocks):
        name = f"block{i + 1}"
        if i == 0:  # the consistent estimate is what README says it is, and the ledger charged
            code += ("\nassert clean.counts.min() >= 0 and abs(clean.counts.sum() - est.n) < 1e-6"
                     "\nassert (ledger.spent(users) == 1.0).all()\n")
        out, peak = run_block(code, tmp_path, name)
        if shown is not None:
            assert out == shown, f"README python {name} prints\n{out}\nbut README shows\n{shown}"
        if peak is not None:
            limit = stated_limit(code)
            assert peak < limit, (f"README python {name} peaked at {peak / 2**20:.0f} MiB; make "
                                  f"it smaller or state its memory ('# needs about ... GB')")


def test_block_parsing_and_limits():
    text = ("```python\nprint(1)\n```\n\nprints\n\n```text\n1\n```\n\n"
            "```python\nx = 2  # needs about 1.5 GB\n```\n\nSome prose in between.\n\n"
            "```text\nnot its output\n```\n")
    (a, shown_a), (b, shown_b) = python_blocks(text)
    assert shown_a == "1\n" and shown_b is None  # prose between: not an output block
    assert stated_limit(a) == LIMIT_BYTES
    assert stated_limit(b) == int(1.25 * 1.5e9)


@pytest.mark.skipif(not Path("/proc/self/status").exists(), reason="VmHWM is Linux's")
def test_memory_check_sees_a_large_block(tmp_path):
    # the check must be able to fail: 300 MiB touched shows up in the child's VmHWM
    _, peak = run_block("import numpy as np\nx = np.ones(300 * 2**20 // 8)\n", tmp_path, "big")
    assert peak > 300 * 2**20
