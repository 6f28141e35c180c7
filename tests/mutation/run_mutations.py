"""Mutation check: small numeric changes to kernels and constants must fail a test.

Each mutation replaces one exact piece of source text (it must occur exactly
once) in a scratch copy of the repository, rebuilds the kernels when a
``.pyx`` or ``.h`` file changed, and runs the tests that guard that code.
A mutation that no test notices is a *survivor*: the suite could not tell
the shipped constant from a wrong one. The script exits 1 if any survives.

It runs on demand, not in CI (a rebuild takes about a minute)::

    python tests/mutation/run_mutations.py            # every mutation
    python tests/mutation/run_mutations.py --list     # names only
    python tests/mutation/run_mutations.py sketch-scale c_k-below-k

The copy is made from the working tree (``git ls-files`` plus the built
extensions), so uncommitted changes are checked too.
"""

from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


@dataclass(frozen=True)
class Mutation:
    name: str
    path: str       # relative to the repository root
    old: str        # occurs exactly once in the file
    new: str
    tests: tuple    # the tests that guard it


ORACLE_TESTS = ("tests/test_frequency_oracles.py", "tests/test_oracles_api.py",
                "tests/test_oracles_unary.py", "tests/test_oracles_flh.py")

MUTATIONS = (
    Mutation("sketch-scale", "src/fastldp/relations/jprs.py",
             "return sketch.value() * (sqrt(self.k) / (self.kappa * d)), d",
             "return sketch.value() * (1.02 * sqrt(self.k) / (self.kappa * d)), d",
             ("tests/test_jprs_reference.py", "tests/test_jprs.py")),
    Mutation("sketch-scale-5pct", "src/fastldp/relations/jprs.py",
             "return sketch.value() * (sqrt(self.k) / (self.kappa * d)), d",
             "return sketch.value() * (1.05 * sqrt(self.k) / (self.kappa * d)), d",
             ("tests/test_jprs_reference.py", "tests/test_jprs.py")),
    Mutation("exact-D", "src/fastldp/relations/calibration.py",
             "total.add_repeated(float(g[0] * g[0]), eps.shape[0])",
             "total.add_repeated(1.02 * float(g[0] * g[0]), eps.shape[0])",
             ("tests/test_jprs_reference.py", "tests/test_jprs.py")),
    Mutation("fixed-point-gamma", "src/fastldp/streaming.py",
             "q = np.rint(np.ldexp(m, 32)).astype(np.int64)",
             "q = np.rint(0.98 * np.ldexp(m, 32)).astype(np.int64)",
             ("tests/test_jprs_reference.py", "tests/test_streaming.py")),
    Mutation("fixed-sketch-counting-path", "src/fastldp/_kernels/src/jprs_fixed.h",
             "for (e = 0; e < p; ++e) out[e] *= magnitude;",
             "for (e = 0; e < p; ++e) out[e] *= magnitude + magnitude / 50;",
             ("tests/test_jprs_reference.py", "tests/test_fixed_sketch.py", "tests/test_jprs.py")),
    Mutation("fixed-sketch-table", "src/fastldp/_kernels/src/jprs_fixed.h",
             "int64_t d = 2 * w[j];",
             "int64_t d = 2 * w[j] + w[j] / 50;",
             ("tests/test_jprs_reference.py", "tests/test_fixed_sketch.py")),
    Mutation("exact-sum-sticky", "src/fastldp/_kernels/_exact.pyx",
             "                if sticky:\n                    w64 |= 1\n                # bit 0",
             "                if False:\n                    w64 |= 1\n                # bit 0",
             ("tests/test_streaming.py",)),
    Mutation("c_k-below-k", "src/fastldp/relations/calibration.py",
             "table[1:] = a[k] / a[1:]",
             "table[1:] = 0.98 * a[k] / a[1:]",
             ("tests/test_jprs_reference.py", "tests/test_analysis.py", "tests/test_jprs.py")),
    Mutation("a_m-recurrence", "src/fastldp/relations/calibration.py",
             "ratios = (2.0 * j + 1.0) / (2.0 * j + 2.0)",
             "ratios = (2.0 * j + 1.02) / (2.0 * j + 2.0)",
             ("tests/test_jprs_reference.py", "tests/test_analysis.py")),
    Mutation("jprs-gamma", "src/fastldp/relations/jprs.py",
             "p_plus = 0.5 * (1.0 + np.tanh(eps / 2.0) * theta)",
             "p_plus = 0.5 * (1.0 + np.tanh(eps / 1.96) * theta)",
             ("tests/test_jprs.py", "tests/test_jprs_reference.py")),
    Mutation("gamma-sq-sum", "src/fastldp/relations/calibration.py",
             "    total.add_terms(g * g)",
             "    total.add_terms(1.02 * g * g)",
             ("tests/test_jprs_reference.py", "tests/test_analysis.py", "tests/test_jprs.py")),
    Mutation("capped-simplex-tau", "src/fastldp/_kernels/_projection.pyx",
             "tau = (n_full + sum_active - k) / n_active",
             "tau = 1.02 * (n_full + sum_active - k) / n_active",
             ("tests/test_projection.py",)),
    Mutation("corrupted-count-rounding", "src/fastldp/corruption.py",
             "return math.floor(Fraction(repr(float(alpha))) * n)",
             "return math.floor(float(alpha) * n)",
             ("tests/test_analysis.py", "tests/test_attacks.py")),
    Mutation("rpc-alpha", "src/fastldp/vectors/rpc.py",
             "return float(1 / (1 - expectation))",
             "return float(1.02 / (1 - expectation))",
             ("tests/test_rpc.py", "tests/test_rpc_variance.py")),
    Mutation("duchi-C", "src/fastldp/oracles/randomizers.py",
             "return (exp(self.epsilon) + 1.0) / expm1(self.epsilon)",
             "return 1.02 * (exp(self.epsilon) + 1.0) / expm1(self.epsilon)",
             ("tests/test_randomizers.py", "tests/test_rpc.py")),
    Mutation("grr-p", "src/fastldp/oracles/grr.py",
             "return e / denom, 1.0 / denom",
             "return 1.02 * e / denom, 1.0 / denom",
             ORACLE_TESTS),
    Mutation("olh-keep", "src/fastldp/oracles/olh.py",
             "return e / (e + g - 1)",
             "return 1.02 * e / (e + g - 1)",
             ORACLE_TESTS),
    Mutation("oue-q", "src/fastldp/oracles/unary.py",
             "q = 1.0 / (np.exp(eps) + 1.0)",
             "q = 1.02 / (np.exp(eps) + 1.0)",
             ORACLE_TESTS),
    Mutation("sue-q", "src/fastldp/oracles/unary.py",
             "q = 1.0 / (np.exp(np.asarray(eps, dtype=np.float64) / 2.0) + 1.0)",
             "q = 1.02 / (np.exp(np.asarray(eps, dtype=np.float64) / 2.0) + 1.0)",
             ORACLE_TESTS),
    Mutation("hr-gamma", "src/fastldp/oracles/hadamard.py",
             "return fwht(hits)[1:self.domain_size + 1] / np.tanh(self.epsilon / 2.0)",
             "return fwht(hits)[1:self.domain_size + 1] / np.tanh(self.epsilon / 2.04)",
             ORACLE_TESTS),
    Mutation("calibration-from-data", "src/fastldp/regression/u2r.py",
             'm = p["m"]  # rows_per_user: anything read from data.counts here would leak',
             "m = int(np.median(data.counts))",
             ("tests/test_regression_neighbours.py",)),
    Mutation("shuffle-identity", "src/fastldp/regression/shuffle.py",
             "return gen.permuted(arr, axis=-1)",
             "return arr.copy()",
             ("tests/test_audit_shuffle.py",)),
    Mutation("shares-unmasked", "src/fastldp/regression/shuffle.py",
             'shares[..., :-1] = gen.integers(0, p["modulus"], size=(n, dim, m - 1), '
             'dtype=np.uint64)',
             "shares[..., :-1] = 0",
             ("tests/test_audit_shuffle.py",)),
    Mutation("skellam-variance-quarter", "src/fastldp/regression/shuffle.py",
             "mu = skellam_variance(self.epsilon, delta_noise, l2, l1)",
             "mu = skellam_variance(self.epsilon, delta_noise, l2, l1) / 4",
             ("tests/test_audit_shuffle.py",)),
)


def _copy_tree(dest: Path) -> None:
    files = subprocess.run(["git", "ls-files", "-co", "--exclude-standard"], cwd=ROOT,
                           capture_output=True, text=True, check=True).stdout.split()
    files += [str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*.so")]
    files += [str(p.relative_to(ROOT)) for p in (ROOT / "src").rglob("*.c")]
    for rel in files:
        src = ROOT / rel
        if src.is_file():
            target = dest / rel
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, target)  # keeps mtimes, so unchanged kernels are not rebuilt


def _run(cmd, cwd: Path, env=None) -> subprocess.CompletedProcess:
    return subprocess.run(cmd, cwd=cwd, capture_output=True, text=True, env=env)


def check(mutation: Mutation, workdir: Path) -> tuple[str, str]:
    """Apply one mutation to a fresh copy; return (verdict, detail)."""
    tree = workdir / mutation.name
    _copy_tree(tree)
    path = tree / mutation.path
    text = path.read_text()
    count = text.count(mutation.old)
    if count != 1:
        return "stale", f"the original text occurs {count} times in {mutation.path}"
    path.write_text(text.replace(mutation.old, mutation.new))
    env = {**os.environ, "PYTHONPATH": str(tree / "src")}
    if path.suffix in (".pyx", ".h", ".pxd"):
        build = _run([sys.executable, "setup.py", "build_ext", "--inplace", "-j", "2"], tree, env)
        if build.returncode != 0:
            return "killed", "the mutant does not build"
    result = _run([sys.executable, "-m", "pytest", "-q", "-x", "-p", "no:cacheprovider",
                   *mutation.tests], tree, env)
    if result.returncode == 0:
        return "SURVIVED", result.stdout.strip().splitlines()[-1]
    failed = [line for line in result.stdout.splitlines() if line.startswith("FAILED")]
    return "killed", failed[0] if failed else result.stdout.strip().splitlines()[-1]


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("names", nargs="*", help="mutations to run (default: all)")
    ap.add_argument("--list", action="store_true", help="list the mutations and exit")
    args = ap.parse_args(argv)
    by_name = {m.name: m for m in MUTATIONS}
    if args.list:
        for m in MUTATIONS:
            print(f"{m.name:28s} {m.path}")
        return 0
    unknown = [n for n in args.names if n not in by_name]
    if unknown:
        print(f"unknown mutations: {', '.join(unknown)}", file=sys.stderr)
        return 2
    chosen = [by_name[n] for n in args.names] if args.names else list(MUTATIONS)
    survivors = 0
    with tempfile.TemporaryDirectory(prefix="fastldp-mutants-") as tmp:
        for m in chosen:
            t0 = time.perf_counter()
            verdict, detail = check(m, Path(tmp))
            survivors += verdict in ("SURVIVED", "stale")
            print(f"{m.name:28s} {verdict:9s} {time.perf_counter() - t0:6.1f} s  {detail}",
                  flush=True)
            shutil.rmtree(Path(tmp) / m.name, ignore_errors=True)
    print(f"{len(chosen)} mutations, {survivors} survived or stale")
    return 1 if survivors else 0


if __name__ == "__main__":
    sys.exit(main())
