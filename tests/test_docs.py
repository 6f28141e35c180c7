"""The documentation: docstring examples run, the API pages are current, the site builds.

The site build (``python -m sphinx -W docs docs/_build``) needs the ``docs``
extra; it runs here when Sphinx is installed.
"""

import doctest
import importlib
import pkgutil
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

import fastldp

ROOT = Path(__file__).resolve().parents[1]


def _modules():
    names = ["fastldp"]
    for info in pkgutil.walk_packages(fastldp.__path__, prefix="fastldp."):
        if "._kernels" in info.name or info.name == "fastldp.__main__":
            continue
        names.append(info.name)
    return sorted(names)


@pytest.mark.parametrize("name", _modules())
def test_docstring_examples_run(name):
    module = importlib.import_module(name)
    finder = doctest.DocTestFinder(exclude_empty=True)
    runner = doctest.DocTestRunner(optionflags=doctest.ELLIPSIS | doctest.NORMALIZE_WHITESPACE)
    globs = {**vars(module), "np": np}  # as doctest.testmod, with numpy at hand
    tests = [t for t in finder.find(module, name, globs=globs) if t.examples]
    report: list = []
    failed = 0
    for test in tests:
        failed += runner.run(test, out=report.append).failed
    assert failed == 0, "".join(report)[-3000:]


def test_api_pages_match_the_package():
    if not (ROOT / "tools" / "gen_api_docs.py").exists():
        pytest.skip("not a source tree")
    sys.path.insert(0, str(ROOT / "tools"))
    try:
        import gen_api_docs
    finally:
        sys.path.pop(0)
    for name, text in gen_api_docs.pages().items():
        page = ROOT / "docs" / "api" / name
        assert page.is_file() and page.read_text() == text, (
            f"docs/api/{name} is out of date: run python tools/gen_api_docs.py")


@pytest.mark.slow
def test_the_site_builds_without_warnings(tmp_path):
    pytest.importorskip("sphinx")
    pytest.importorskip("numpydoc")
    pytest.importorskip("pydata_sphinx_theme")
    pytest.importorskip("myst_parser")
    if not (ROOT / "docs" / "conf.py").exists():
        pytest.skip("not a source tree")
    result = subprocess.run(
        [sys.executable, "-m", "sphinx", "-W", "--keep-going", "-q", str(ROOT / "docs"),
         str(tmp_path / "html")], capture_output=True, text=True, timeout=900)
    assert result.returncode == 0, result.stderr[-4000:]
    back, source = _source_links(tmp_path / "html")
    broken = [link for link, ok in back + source if not ok]
    assert not broken, f"{len(broken)} broken links between the API and source pages: {broken[:10]}"


def _source_links(site: Path):
    """Every "[docs]" back-link of the ``_modules`` source pages and every "[source]" link to them.

    Returns two lists of ``(page, href)``, ok pairs: ok when the target page
    exists and has the anchor. A site without source pages has neither.
    """
    import re
    from urllib.parse import urldefrag

    anchors: dict = {}

    def resolves(page: Path, href: str) -> bool:
        url, fragment = urldefrag(href)
        target = (page.parent / url).resolve()
        if target not in anchors:
            text = target.read_text() if target.is_file() else None
            anchors[target] = None if text is None else set(re.findall(r'\bid="([^"]+)"', text))
        return anchors[target] is not None and (not fragment or fragment in anchors[target])

    back, source = [], []
    for page in sorted(site.rglob("*.html")):
        text = page.read_text()
        name = str(page.relative_to(site))
        if page.relative_to(site).parts[0] == "_modules":
            links = re.findall(r'<a class="viewcode-back" href="([^"]+)"', text)
            back += [((name, h), resolves(page, h)) for h in links]
        else:
            links = re.findall(r'<a class="reference internal" href="([^"]*_modules/[^"]+)"', text)
            source += [((name, h), resolves(page, h)) for h in links]
    if (site / "_modules").is_dir():  # else the patterns above no longer match the markup
        assert back and source, "source pages without links: update _source_links"
    return back, source


def test_the_package_description_has_no_relative_links():
    # DESCRIPTION.md is the package-index page (pyproject's readme): a relative link or
    # image there breaks wherever the package is shown, unlike README.md's
    import re

    path = ROOT / "DESCRIPTION.md"
    if not path.exists():
        pytest.skip("not a source tree")
    targets = re.findall(r"\]\(([^)]+)\)", path.read_text())
    assert all(t.startswith(("https://", "http://", "#")) for t in targets), targets


def test_the_install_page_lists_every_extra():
    install = ROOT / "docs" / "guide" / "install.rst"
    pyproject = ROOT / "pyproject.toml"
    if not (install.exists() and pyproject.exists()):
        pytest.skip("not a source tree")
    try:
        import tomllib
    except ImportError:  # Python < 3.11
        import tomli as tomllib
    with open(pyproject, "rb") as fh:
        extras = tomllib.load(fh)["project"]["optional-dependencies"]
    text = install.read_text()
    missing = [name for name in extras if f"``{name}``" not in text]
    assert not missing, f"docs/guide/install.rst does not list the extras {missing}"


def _guide_blocks():
    guide = ROOT / "docs" / "guide"
    if not guide.is_dir():
        return []
    import re
    import textwrap

    out = []
    for page in sorted(guide.glob("*.rst")):
        for i, body in enumerate(re.findall(r"\.\. code-block:: python\n\n((?:   .*\n|\n)+)",
                                            page.read_text())):
            out.append(pytest.param(textwrap.dedent(body), id=f"{page.stem}-{i + 1}"))
    return out


@pytest.mark.slow
@pytest.mark.parametrize("code", _guide_blocks())
def test_user_guide_examples_run(code):
    exec(compile(code, "<user guide>", "exec"), {})
