"""What ships: the sdist holds everything its tests need, and the portable C
of src/portable.h gives what the compiler builtins give.

The sdist test builds the sdist without build isolation (no network: the
test extra installs build, setuptools and Cython) and compares its files
with the repository's (git ls-files, tracked and untracked-not-ignored)
minus the exclusions listed in [tool.check-manifest] ignore - the same
comparison `check-manifest` makes, at half its cost.
"""

import fnmatch
import shutil
import subprocess
import sys
import sysconfig
import tarfile
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
HEADERS = ROOT / "src" / "fastldp" / "_kernels" / "src"

# Files setuptools writes into every sdist; they are not in the repository.
SDIST_METADATA = {"PKG-INFO", "setup.cfg"}
SDIST_METADATA_DIRS = ("src/fastldp.egg-info/",)


def _load_toml(path):
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    with open(path, "rb") as fh:
        return tomllib.load(fh)


def _repo_files():
    """Tracked plus untracked-but-not-ignored files, or None outside a git checkout."""
    if shutil.which("git") is None or not (ROOT / ".git").exists():
        return None
    result = subprocess.run(
        ["git", "ls-files", "--cached", "--others", "--exclude-standard", "-z"],
        cwd=ROOT, capture_output=True, text=True, timeout=60,
    )
    if result.returncode != 0:
        return None
    files = {f for f in result.stdout.split("\0") if f}
    return {f for f in files if (ROOT / f).is_file()}  # drop deleted-but-tracked


def _ignored(path, patterns):
    # check-manifest's rules: fnmatch on the path; "dir/**" covers the folder.
    for pattern in patterns:
        if fnmatch.fnmatch(path, pattern):
            return True
        if pattern.endswith("/**") and path.startswith(pattern[:-2]):
            return True
    return False


@pytest.mark.slow
def test_sdist_holds_every_repository_file_but_the_documented_exclusions(tmp_path):
    pytest.importorskip("build", reason="the test extra installs build")
    pytest.importorskip("Cython", reason="setup.py cythonizes; the test extra installs Cython")
    pyproject = ROOT / "pyproject.toml"
    if not pyproject.exists() or not (ROOT / "setup.py").exists():
        pytest.skip("not run from a source tree (tests of an installed wheel)")
    repo = _repo_files()
    if repo is None:
        pytest.skip("not a git checkout (e.g. an unpacked sdist): nothing to compare with")

    # Build from a clean copy of the repository's files: in the working tree,
    # setuptools would also ship whatever an earlier build listed in
    # src/fastldp.egg-info/SOURCES.txt, hiding a gap in MANIFEST.in.
    tree = tmp_path / "tree"
    copied = set()
    for f in sorted(repo):
        (tree / f).parent.mkdir(parents=True, exist_ok=True)
        try:
            shutil.copy2(ROOT / f, tree / f)
        except FileNotFoundError:  # removed meanwhile in a working tree
            continue
        copied.add(f)
    # Cython's C from an earlier build (mtimes kept) spares re-cythonizing;
    # it is not shipped either way (global-exclude *.c).
    for c in (ROOT / "src" / "fastldp" / "_kernels").glob("*.c"):
        shutil.copy2(c, tree / c.relative_to(ROOT))
    out = tmp_path / "dist"
    cmd = [sys.executable, "-m", "build", "--sdist", "--no-isolation", "--outdir", str(out), str(tree)]
    result = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert result.returncode == 0, result.stdout[-4000:] + result.stderr[-4000:]
    (sdist,) = out.glob("fastldp-*.tar.gz")
    with tarfile.open(sdist) as tar:
        names = [m.name for m in tar.getmembers() if m.isfile()]
    top = {n.split("/", 1)[0] for n in names}
    assert len(top) == 1, top
    shipped = {n.split("/", 1)[1] for n in names}

    ignore = _load_toml(pyproject)["tool"]["check-manifest"]["ignore"]
    expected = {f for f in copied if not _ignored(f, ignore)}
    generated = {f for f in shipped if f in SDIST_METADATA or f.startswith(SDIST_METADATA_DIRS)}

    missing = sorted(expected - shipped)
    unexpected = sorted(shipped - expected - generated)
    assert not missing, f"repository files missing from the sdist (fix MANIFEST.in): {missing}"
    assert not unexpected, f"sdist files that are not in the repository: {unexpected}"

    # What the test suite reads, named explicitly.
    for need in ["LICENSE", "README.md", "pyproject.toml", "tests/conftest.py", "tests/_reference.py",
                 "tests/data/stubtest_allowlist.txt", "tests/data/philox4x64_10_kat.csv",
                 "src/fastldp/_kernels/src/portable.h"]:
        assert need in shipped, need
    # Generated C is re-made by the build, never shipped.
    assert not [f for f in shipped if f.endswith((".c", ".so", ".pyd"))]


PORTABLE_CHECK = r"""
#include <stdio.h>
#include <inttypes.h>
#include "portable.h"

static uint64_t state = 0x9E3779B97F4A7C15ULL;
static uint64_t next(void) { state ^= state << 13; state ^= state >> 7; state ^= state << 17; return state; }

int main(void)
{
    static const uint64_t edge[] = {0ULL, 1ULL, 2ULL, 3ULL, 0xFFFFFFFFULL, 0x100000000ULL,
        0x7FFFFFFFFFFFFFFFULL, 0x8000000000000000ULL, 0xFFFFFFFFFFFFFFFFULL,
        0xD2E7470EE14C6C93ULL, 0xCA5A826395121157ULL};
    int n = (int)(sizeof(edge) / sizeof(edge[0])), i, j;
    printf("%d\n", FASTLDP_PORTABLE_C);
    for (i = 0; i < n; ++i) {
        for (j = 0; j < n; ++j) {
            uint64_t hi, lo = fastldp_mul64x64_128(edge[i], edge[j], &hi);
            printf("%016" PRIx64 "%016" PRIx64 "\n", hi, lo);
        }
        printf("%d\n", fastldp_popcount64(edge[i]));
    }
    for (i = 0; i < 32; ++i) printf("%d\n", fastldp_ctz32((uint32_t)1 << i) + fastldp_ctz32(~0u << i));
    for (i = 1; i < 256; ++i) printf("%d\n", fastldp_ctz32((uint32_t)i));
    for (i = 0; i < 20000; ++i) {
        uint64_t a = next(), b = next() >> (i % 64), hi, lo = fastldp_mul64x64_128(a, b, &hi);
        uint32_t c = (uint32_t)(next() >> (i % 32)) | 0x80000000u >> (i % 32);
        printf("%016" PRIx64 "%016" PRIx64 " %d %d\n", hi, lo, fastldp_popcount64(a ^ b), fastldp_ctz32(c));
    }
    return 0;
}
"""


def test_portable_c_matches_the_compiler_builtins(tmp_path):
    """portable.h's plain C (forced by -DFASTLDP_PORTABLE) agrees with the builtins bit for bit."""
    if not (HEADERS / "portable.h").exists():
        pytest.skip("src/portable.h is not next to the tests (tests of an installed wheel)")
    cc = (sysconfig.get_config_var("CC") or "cc").split()
    if shutil.which(cc[0]) is None:
        pytest.skip(f"no C compiler ({cc[0]}) to build the check")
    src = tmp_path / "check.c"
    src.write_text(PORTABLE_CHECK)
    outputs = {}
    for name, defines in [("builtin", []), ("portable", ["-DFASTLDP_PORTABLE=1"])]:
        exe = tmp_path / name
        build = subprocess.run(cc + ["-O2", "-std=c99", "-Wall", "-Werror", *defines, f"-I{HEADERS}",
                                     str(src), "-o", str(exe)],
                               capture_output=True, text=True, timeout=120)
        assert build.returncode == 0, build.stderr
        run = subprocess.run([str(exe)], capture_output=True, text=True, timeout=60)
        assert run.returncode == 0
        outputs[name] = run.stdout.splitlines()
    assert outputs["portable"][0] == "1"
    if outputs["builtin"][0] != "0":
        pytest.skip("this compiler has no builtins: both builds are the plain C")
    assert outputs["portable"][1:] == outputs["builtin"][1:]
