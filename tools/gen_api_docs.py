"""Write docs/api/*.rst: one page per family or shared room, one section per public module.

Run after adding a module: ``python tools/gen_api_docs.py``. The test suite
checks that the committed pages match what this script writes
(``tests/test_docs.py``), so the API reference cannot fall behind the package.
"""

from __future__ import annotations

import importlib
import pkgutil
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
API = ROOT / "docs" / "api"

#: page -> (title, intro, package whose public modules it lists, or a tuple of modules)
PAGES = {
    "relations": ("Relations (paper 000)", "JPRS, padded relation sampling, decoders, attacks, "
                  "populations, loaders and analysis.", "fastldp.relations"),
    "vectors": ("Sparse vectors (paper 001)", "RPC and the sparse-vector baselines, attacks, "
                "generators and loaders.", "fastldp.vectors"),
    "regression": ("Regression (paper 002)", "Shuffle-model building blocks, U2R, its "
                   "baselines and bounds.", "fastldp.regression"),
    "histograms": ("Histograms (paper 003)", "The shifted-log Gaussian mechanism, Rényi tools "
                   "and bounds.", "fastldp.histograms"),
    "oracles": ("Oracles and randomizers", "Frequency oracles and scalar randomizers shared "
                "by the families.", "fastldp.oracles"),
    "longitudinal": ("Longitudinal collection", "Memoized protocols for reports over time "
                     "(L-GRR, L-OUE, L-OSUE, L-SUE, L-SOUE, full RAPPOR, dBitFlipPM) and the "
                     "client memo.", "fastldp.longitudinal"),
    "heavyhitters": ("Heavy hitters", "Heavy hitters of huge domains (64-bit integers, strings, "
                     "UTF-8 text): PEM, TreeHist, SFP, the length survey, items, workloads and "
                     "metrics.", "fastldp.heavyhitters"),
    "accounting": ("Accounting", "Privacy events of every release, the accountant (on "
                   "dp-accounting) and the per-identity ledger.", "fastldp.accounting"),
    "service": ("Collector service", "fastldp serve: the HTTP collector, its store, tokens and "
                "client.", "fastldp.service"),
    "audit": ("Privacy audit", "Exact and empirical audits of every local channel.",
              "fastldp.audit"),
    "experiments": ("Experiment harness", "Specs, the runner, the results table, reports and "
                    "the registry of every family's experiments.", "fastldp.experiments"),
    "shared": ("Shared modules", "The result base every family's results derive from, budget "
               "profiles, corruption policies, metrics and the exact noise samplers.",
               ("fastldp.results", "fastldp.budgets", "fastldp.corruption", "fastldp.metrics",
                "fastldp.noise")),
    "scale": ("Scale-out", "The mechanism protocol and the audit's channels, exact mergeable "
              "partial decodes, report files, the streaming and Dask decoders, and mechanisms "
              "by name.",
              ("fastldp.protocol", "fastldp.channels", "fastldp.streaming", "fastldp.reports",
               "fastldp.distributed", "fastldp.mechanisms")),
}


def _family_pages() -> None:
    """A page for every family of ``fastldp.FAMILIES`` that PAGES does not describe yet.

    A new family needs no edit here: its title and intro are the first line of its
    package docstring.
    """
    import fastldp

    for name in fastldp.FAMILIES:
        if name in PAGES:
            continue
        doc = (importlib.import_module(f"fastldp.{name}").__doc__ or name).strip()
        first = doc.splitlines()[0].rstrip(".")
        PAGES[name] = (first.split(":")[0].strip().capitalize() if ":" in first else name,
                       first + ".", f"fastldp.{name}")


_family_pages()

#: members not documented on a module's page, and why: numpydoc links an attribute a result
#: class lists (``std``) to the one documented object of that name, so a second one makes the
#: link ambiguous. ``LoadedResult.std`` mirrors the result base's ``Result.std`` (the class
#: docstring says so), which is the target every result's ``std`` should reach.
EXCLUDED = {"fastldp.reports": ("std",),
            # dp-accounting's own base class, re-exported for type hints: its docstring is
            # not reStructuredText (Sphinx -W fails on it) and it is documented upstream
            "fastldp.accounting": ("DpEvent",), "fastldp.accounting.events": ("DpEvent",)}


def public_modules(package: str) -> list[str]:
    """The package and its public submodules (no ``_private`` part), depth first."""
    __import__(package)
    pkg = sys.modules[package]
    names = [package]
    for info in pkgutil.walk_packages(pkg.__path__, prefix=package + "."):
        if any(part.startswith("_") for part in info.name.split(".")[1:]):
            continue
        names.append(info.name)
    return sorted(names)


def _private_members(name: str) -> list[str]:
    """Public names of module ``name`` defined in one of its private modules.

    A package such as ``fastldp.relations.analysis`` defines its functions in
    ``_information`` and friends; autodoc skips imported members, so they are
    listed by name. Names that come from a public module are documented there.
    """
    module = sys.modules[name]
    out = []
    for attr in getattr(module, "__all__", []):
        obj = getattr(module, attr, None)
        home = getattr(obj, "__module__", None) or ""
        if home != name and home.startswith(name + ".") and any(
                part.startswith("_") for part in home[len(name) + 1:].split(".")):
            out.append(attr)
    return out


def render(page: str) -> str:
    title, intro, package = PAGES[page]
    modules = list(package) if isinstance(package, tuple) else public_modules(package)
    lines = [title, "=" * len(title), "", intro, "",
             ".. contents:: Modules", "   :local:", "   :depth: 1", ""]
    for name in modules:
        lines += [name, "-" * len(name), "", f".. automodule:: {name}"]
        if hasattr(importlib.import_module(name), "__path__"):
            # a package re-exports its modules' members: document them there, once
            private = _private_members(name)
            if private:
                lines += [f"   :members: {', '.join(private)}", "   :imported-members:"]
            else:
                lines += ["   :no-members:"]
        if name in EXCLUDED:
            lines += [f"   :exclude-members: {', '.join(EXCLUDED[name])}"]
        lines += [""]
    return "\n".join(lines)


def index() -> str:
    lines = ["API reference", "=============", "", ".. toctree::", "   :maxdepth: 1", ""]
    lines += [f"   {page}" for page in PAGES]
    return "\n".join(lines) + "\n"


def pages() -> dict:
    out = {"index.rst": index()}
    for page in PAGES:
        try:
            out[f"{page}.rst"] = render(page)
        except ModuleNotFoundError:  # a family not written yet
            continue
    return out


def main() -> int:
    sys.path.insert(0, str(ROOT / "src"))
    API.mkdir(parents=True, exist_ok=True)
    for name, text in pages().items():
        (API / name).write_text(text)
        print(f"wrote docs/api/{name}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
