"""The shared machinery asks mechanisms the protocol's questions, never their class.

An AST walk of the modules that every family joins through
:mod:`fastldp.protocol` (report files, the mechanism registry, Dask, the
collector and the command line): none of them imports a family to dispatch
on it, tests ``isinstance`` against a family's type, compares a class name
with a string, or walks a class's MRO for names. A new family therefore
needs no edit here (CONTRIBUTING.md, "Adding a family").
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

import fastldp

SRC = Path(fastldp.__file__).resolve().parent
MODULES = ["reports.py", "mechanisms.py", "distributed.py", "cli.py",
           *sorted(f"service/{p.name}" for p in (SRC / "service").glob("*.py"))]
FAMILIES = set(fastldp.FAMILIES)

# Imports of a family that are not dispatch: ``fastldp demo`` runs JPRS on its own
# population by name, and ``fastldp data export`` writes paper 000's frozen populations.
ALLOWED_IMPORTS = {("cli.py", "_demo", "JPRS"), ("cli.py", "_demo", "rate_diagnostic_population"),
                   ("cli.py", "_data_export", "export_frozen")}


def _family_names(tree: ast.AST) -> set[str]:
    """Names bound to a family module or to a class a family exports, in this module."""
    exported = {name for name, family in fastldp._EXPORTS.items() if family in FAMILIES}
    bound = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            module = node.module or ""
            parts = module.split(".")
            for alias in node.names:
                if alias.name in FAMILIES or alias.name in exported or (
                        set(parts) & FAMILIES):
                    bound.add(alias.asname or alias.name)
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if set(alias.name.split(".")) & FAMILIES:
                    bound.add(alias.asname or alias.name.split(".")[0])
    return bound


def _enclosing_functions(tree: ast.AST) -> dict[int, str]:
    where = {}
    for fn in ast.walk(tree):
        if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef)):
            for node in ast.walk(fn):
                where.setdefault(id(node), fn.name)
    return where


def violations(path: Path, rel: str) -> list[str]:
    tree = ast.parse(path.read_text(), str(path))
    where = _enclosing_functions(tree)
    found = []
    family_names = _family_names(tree)
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            parts = set((node.module or "").split("."))
            for alias in node.names:
                if alias.name in FAMILIES or parts & FAMILIES or alias.name in {
                        n for n, f in fastldp._EXPORTS.items() if f in FAMILIES}:
                    if (rel, where.get(id(node)), alias.name) not in ALLOWED_IMPORTS:
                        found.append(f"{rel}:{node.lineno}: imports {alias.name} of a family")
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if set(alias.name.split(".")) & FAMILIES:
                    found.append(f"{rel}:{node.lineno}: imports {alias.name}")
        elif isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and \
                node.func.id in ("isinstance", "issubclass") and len(node.args) == 2:
            names = {n.id for n in ast.walk(node.args[1]) if isinstance(n, ast.Name)}
            attrs = {n.attr for n in ast.walk(node.args[1]) if isinstance(n, ast.Attribute)}
            if names & family_names or attrs & (FAMILIES | set(fastldp._EXPORTS)):
                found.append(f"{rel}:{node.lineno}: isinstance on a family's type")
        elif isinstance(node, ast.Attribute) and node.attr in ("__mro__", "mro"):
            found.append(f"{rel}:{node.lineno}: walks a class's MRO")
        elif isinstance(node, ast.Compare):
            sides = [node.left, *node.comparators]
            names = any(isinstance(s, ast.Attribute) and s.attr == "__name__" for s in sides)
            strings = any(isinstance(s, ast.Constant) and isinstance(s.value, str)
                          for s in sides) or any(
                isinstance(s, (ast.Set, ast.Tuple, ast.List)) and any(
                    isinstance(e, ast.Constant) and isinstance(e.value, str) for e in s.elts)
                for s in sides)
            if names and strings:
                found.append(f"{rel}:{node.lineno}: compares a class name with a string")
    return found


@pytest.mark.parametrize("rel", MODULES)
def test_no_dispatch_by_class(rel):
    assert violations(SRC / rel, rel) == []


def test_the_walk_catches_each_kind_of_dispatch(tmp_path):
    # the three shapes the issue found (app.py, mechanisms.py, reports.py before the protocol)
    bad = tmp_path / "bad.py"
    bad.write_text(
        "from .. import oracles, relations\n"
        "def kind_of(m):\n"
        "    if isinstance(m, (relations.JPRS, relations.PaddedRelationSampling)):\n"
        "        return 'jprs'\n"
        "    if type(m).__name__ == 'RPC':\n"
        "        return 'rpc'\n"
        "    return {c.__name__ for c in type(m).__mro__}\n")
    found = violations(bad, "bad.py")
    assert any("imports oracles" in f for f in found)
    assert any("isinstance" in f for f in found)
    assert any("class name" in f for f in found)
    assert any("MRO" in f for f in found)


def test_the_registry_comes_from_the_families_exports():
    from fastldp import mechanisms, protocol

    assert mechanisms.STREAMING == protocol.streaming_classes()
    text = (SRC / "mechanisms.py").read_text()
    assert "streaming_classes()" in text
