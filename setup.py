"""Build the Cython kernels of fastldp.

All compiler directives live here. OpenMP is probed once by compiling a tiny
program; when the compiler lacks it the kernels build serially and stay fully
usable. Environment variables:

FASTLDP_OPENMP   "0" disables OpenMP, "1" requires it (fail if the probe fails).
FASTLDP_NATIVE   "1" adds -march=native (local builds only; never in wheels).
FASTLDP_DEBUG    "1" keeps debug info and symbols (-g) for gdb/perf. By default
                 release builds compile with -g0 and, on Linux, link with
                 -Wl,-s (no symbol table), which takes each extension from
                 1.2-1.6 MB to about 0.2 MB (GCC 12, x86-64).
FASTLDP_PORTABLE "1" defines FASTLDP_PORTABLE: src/portable.h then uses plain C
                 for the 128-bit multiply, count-trailing-zeros and popcount
                 instead of the GCC/Clang builtins - the code MSVC always gets.
                 Results are bit-identical; CI builds this way once and runs
                 the kernel tests against it.

The probe honours CC, CPPFLAGS, CFLAGS and LDFLAGS, as the build does.

macOS and OpenMP: Apple's clang has no OpenMP runtime of its own. Install
libomp (`brew install libomp`; it is keg-only) and point the build at it:

    export CPPFLAGS="-I$(brew --prefix libomp)/include"
    export LDFLAGS="-L$(brew --prefix libomp)/lib -Wl,-rpath,$(brew --prefix libomp)/lib"
    FASTLDP_OPENMP=1 pip install --no-binary fastldp fastldp   # or: pip install .

Without libomp the probe fails and the kernels build serially (correct,
with the same results, on one thread). Wheels are not built for macOS yet:
a wheel that bundles libomp can clash with the copies other packages load.
See docs/building.md.
"""

import os
import shutil
import subprocess
import sys
import sysconfig
import tempfile

from Cython.Build import cythonize
from setuptools import Extension, setup

KERNELS = ["_openmp", "_hash", "_sketch", "_projection", "_olh", "_hadamard", "_unary", "_flh", "_exact", "_cms", "_encoding", "_noise", "_heavy", "_gather", "_normal", "_lasso", "_bloom", "_wave", "_multidim"]
KERNEL_DIR = os.path.join("src", "fastldp", "_kernels")

COMPILER_DIRECTIVES = {
    "language_level": 3,
    "boundscheck": False,
    "wraparound": False,
    "initializedcheck": False,
    "cdivision": True,
    "embedsignature": True,
}


def _is_msvc():
    return sys.platform == "win32" and "GCC" not in sys.version


def _openmp_flags():
    if _is_msvc():
        return ["/openmp"], []
    if sys.platform == "darwin":
        return ["-Xpreprocessor", "-fopenmp"], ["-lomp"]
    return ["-fopenmp"], ["-fopenmp"]


def _probe_openmp(compile_flags, link_flags):
    """Compile and link a tiny OpenMP program with the configured compiler."""
    cc = os.environ.get("CC") or sysconfig.get_config_var("CC") or "cc"
    cc = cc.split()
    if not shutil.which(cc[0]):
        return False
    code = "#include <omp.h>\nint main(void){return omp_get_max_threads() > 0 ? 0 : 1;}\n"
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "probe.c")
        with open(src, "w") as fh:
            fh.write(code)
        env_flags = [os.environ.get(k, "") for k in ("CPPFLAGS", "CFLAGS")]
        env_ldflags = os.environ.get("LDFLAGS", "")
        cmd = (cc + " ".join(env_flags).split() + compile_flags
               + [src, "-o", os.path.join(tmp, "probe")] + env_ldflags.split() + link_flags)
        try:
            result = subprocess.run(cmd, capture_output=True, timeout=60)
        except (OSError, subprocess.SubprocessError):
            return False
        return result.returncode == 0


def _extensions():
    setting = os.environ.get("FASTLDP_OPENMP", "auto")
    compile_args = ["-O3"] if not _is_msvc() else ["/O2"]
    link_args = []
    if setting != "0":
        omp_compile, omp_link = _openmp_flags()
        if _is_msvc() or _probe_openmp(omp_compile, omp_link):
            compile_args += omp_compile
            link_args += omp_link
            print("fastldp: building with OpenMP")
        elif setting == "1":
            raise RuntimeError("FASTLDP_OPENMP=1 but the compiler cannot build OpenMP code")
        else:
            print("fastldp: OpenMP not available, building serial kernels")
    if os.environ.get("FASTLDP_NATIVE") == "1" and not _is_msvc():
        compile_args.append("-march=native")
    if not _is_msvc():
        if os.environ.get("FASTLDP_DEBUG") == "1":
            compile_args.append("-g")
            print("fastldp: FASTLDP_DEBUG=1, keeping debug info")
        else:
            # extra_compile_args come after Python's CFLAGS (which hold -g),
            # so -g0 wins; -s drops the symbol table (the dynamic symbols
            # Python imports through stay).
            compile_args.append("-g0")
            if sys.platform.startswith("linux"):
                link_args.append("-Wl,-s")
    macros = []
    if os.environ.get("FASTLDP_PORTABLE") == "1":
        macros.append(("FASTLDP_PORTABLE", "1"))
        print("fastldp: FASTLDP_PORTABLE=1, plain C instead of compiler builtins")
    return [
        Extension(
            f"fastldp._kernels.{name}",
            [os.path.join(KERNEL_DIR, f"{name}.pyx")],
            include_dirs=[KERNEL_DIR],
            define_macros=macros,
            extra_compile_args=compile_args,
            extra_link_args=link_args,
        )
        for name in KERNELS
    ]


setup(
    ext_modules=cythonize(
        _extensions(),
        compiler_directives=COMPILER_DIRECTIVES,
        include_path=["src"],
    ),
)
