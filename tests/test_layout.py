"""The package layout: one folder per family, and imports that run downward only.

Reads the source with :mod:`ast` (nothing is imported), resolves every
``import`` / ``from ... import`` to a ``fastldp`` module, and checks the
rules of the layout: ``_kernels`` imports nothing of fastldp, the shared
building blocks import no family, a family imports no other family, and an
experiment package imports no family but its own.
"""

import ast
from pathlib import Path

import pytest

import fastldp

PKG = Path(fastldp.__file__).resolve().parent
#: the families above the shared building blocks (oracles/), as the package lists them
FAMILIES = tuple(name for name in fastldp.FAMILIES if name != "oracles")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(PKG.parent).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts.pop()
    return ".".join(parts)


def _imports(path: Path) -> set:
    """Every fastldp module that ``path`` imports (relative imports resolved)."""
    name = _module_name(path)
    package = name.split(".") if path.name == "__init__.py" else name.split(".")[:-1]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names if a.name.split(".")[0] == "fastldp")
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package[: len(package) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            if target.split(".")[0] != "fastldp":
                continue
            found.add(target)
            found.update(f"{target}.{a.name}" for a in node.names)  # submodule imports
    return found


def _sources():
    return sorted(p for p in PKG.rglob("*.py") if "__pycache__" not in p.parts)


def _family_of(module: str):
    parts = module.split(".")
    if len(parts) >= 2 and parts[1] in FAMILIES:
        return parts[1]
    return None


def _experiment_family_of(module: str):
    parts = module.split(".")
    if len(parts) >= 3 and parts[1] == "experiments" and parts[2] in FAMILIES:
        return parts[2]
    return None


def test_the_sources_are_found():
    names = {_module_name(p) for p in _sources()}
    assert {"fastldp.relations.jprs", "fastldp.vectors.rpc", "fastldp.oracles.frequency",
            "fastldp.experiments.registry"} <= names


@pytest.mark.parametrize("path", _sources(), ids=lambda p: _module_name(p))
def test_imports_run_downward(path):
    module = _module_name(path)
    imported = _imports(path)
    own = _family_of(module)
    own_experiments = _experiment_family_of(module)
    for target in imported:
        target_family = _family_of(target)
        if module.startswith("fastldp._kernels"):
            assert target.startswith("fastldp._kernels"), f"{module} imports {target}"
        if module.startswith("fastldp.oracles") or module.split(".")[-1] in (
                "_sanitize", "_validation", "_random", "_datafiles", "budgets", "corruption", "streaming",
                "metrics", "results", "noise"):
            assert target_family is None, f"shared module {module} imports family {target}"
            assert not target.startswith("fastldp.experiments"), f"{module} imports {target}"
        if module.startswith("fastldp.accounting"):  # shared: below every family, above none
            assert target_family is None, f"shared module {module} imports family {target}"
            assert not target.startswith(("fastldp.experiments", "fastldp.cli")), target
        if own is not None:
            assert target_family in (None, own), f"family {own}: {module} imports {target}"
            assert not target.startswith("fastldp.experiments"), f"{module} imports {target}"
            assert not target.startswith("fastldp.cli"), f"{module} imports {target}"
        if own_experiments is not None:
            assert target_family in (None, own_experiments), f"{module} imports {target}"
            other = _experiment_family_of(target)
            assert other in (None, own_experiments), f"{module} imports {target}"
        if target.startswith("fastldp.service"):  # the collector is on top: only the CLI uses it
            assert module.startswith("fastldp.service") or module == "fastldp.cli", \
                f"{module} imports {target}"
        if module.startswith("fastldp.experiments") and own_experiments is None:
            # the harness itself is family-neutral: it finds families through the registry
            assert target_family is None, f"harness module {module} imports {target}"
            assert _experiment_family_of(target) is None, f"{module} imports {target}"


def test_no_module_name_carries_a_family_prefix():
    for path in _sources():
        assert not path.name.startswith(("kv_", "rpc_", "jprs_")), path
