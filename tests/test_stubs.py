"""The .pyi stubs of the compiled kernels agree with the extensions (mypy.stubtest)."""

import os
import subprocess
import sys
from pathlib import Path

import pytest

import fastldp

# Every compiled extension the package holds (a new kernel is covered without listing it),
# and at least the kernels of the first release.
_KERNEL_DIR = Path(fastldp.__file__).parent / "_kernels"
KERNELS = sorted({p.name.split(".")[0] for p in _KERNEL_DIR.iterdir()
                  if p.suffix in (".so", ".pyd") and p.name.startswith("_")})


def test_the_compiled_kernels_are_found():
    assert set(KERNELS) >= {"_hash", "_sketch", "_projection", "_olh", "_openmp", "_hadamard",
                            "_unary", "_flh", "_exact"}, KERNELS


def test_kernel_stubs_match_runtime(tmp_path):
    pytest.importorskip("mypy")  # the test extra installs it; skip only in ad-hoc envs
    here = Path(__file__).parent
    config = here.parent / "pyproject.toml"
    # Some Cython versions add a __test__ dict to every extension and some do not.
    cmd = [sys.executable, "-m", "mypy.stubtest", "--ignore-unused-allowlist",
           "--allowlist", str(here / "data" / "stubtest_allowlist.txt")]
    if config.exists():
        cmd += ["--mypy-config-file", str(config)]
    cmd += [f"fastldp._kernels.{name}" for name in KERNELS]
    # the subprocess runs elsewhere: a relative PYTHONPATH (PYTHONPATH=src) must stay valid
    env = dict(os.environ)
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    result = subprocess.run(cmd, capture_output=True, text=True, cwd=tmp_path, timeout=300,
                            env=env)
    assert result.returncode == 0, result.stdout + result.stderr


def test_every_kernel_has_a_stub_and_py_typed_ships():
    pkg = Path(fastldp.__file__).parent
    assert (pkg / "py.typed").exists()
    for name in KERNELS:
        assert (pkg / "_kernels" / f"{name}.pyi").exists(), name
