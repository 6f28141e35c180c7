"""The speed, time and memory figures of README and the docs pages cannot drift silently.

Every such figure in README.md and in the Markdown pages of the
documentation (``docs/*.md``, ``docs/guide/*.md``: the pages that hold the
tables README moved out when it became a front page, and the evaluation
pages) sits in a paragraph, table or code block that names the command
printing it (``python bench/<script>.py ...`` or ``python
tools/readme_figures.py ...``); that script exists, and it holds the
template of the figure's line: an f-string (or ``str.format`` string) whose
literal text is the page's wording and whose replacement fields produce the
figure. A reader runs the named command and compares the printed line with
the page's. ``tools/remeasure.sh`` runs every such script. Figure-bearing
text lives in Markdown pages (Sphinx reads them through myst-parser), so one
block parser serves README and the docs. The figures of the docs pages
written before the rule reached them, which name no script, are listed in
``tests/data/docs_figures_without_script.json``; that list may only shrink.

Which numbers are figures:

* a number with a unit of time, memory or throughput (``48 s``, ``12-20 ms``,
  ``6 min``, ``194 KiB``, ``1.8 GB``, ``33 MB/s``) anywhere on a page
  outside inline code and Python blocks;
* in the performance sections (``PERFORMANCE_SECTIONS``, or a page's own in
  ``PAGE_PERFORMANCE_SECTIONS``) and in any block that has a figure of the
  first kind, also a ratio (``156x``, ``1.75x``) and a rate in millions or
  thousands (``5.38 M``, ``240 k``).

A figure is covered by a template when the template's text matches the
page's (whitespace aside; a whole table row for a figure in a table, a
stretch of the sentence otherwise) and the figure's number falls inside one
of its replacement fields, not in literal text: the script computes it.
A replacement field matches one value or a range of values (``95-98 s``),
since the pages quote ranges where runs vary. The matching is done by a
matcher with a memory of its dead ends (``Match``), whose work is bounded
and counted, not by a backtracking regular expression.

This test parses files only; it times nothing.

The second rule: the benchmarks run against the installed package. No
script in ``bench/`` (nor ``tools/readme_figures.py``) puts the source tree
on ``sys.path``, and both READMEs state the same rule (``BENCH_RULE``).
"""

from __future__ import annotations

import ast
import json
import re
import string
from pathlib import Path
from collections import Counter
from typing import NamedTuple, Optional

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BENCH_README = ROOT / "bench" / "README.md"
REMEASURE = ROOT / "tools" / "remeasure.sh"

pytestmark = pytest.mark.skipif(
    not (README.exists() and (ROOT / "bench").is_dir()),
    reason="README.md and bench/ are not next to the tests (an sdist leaves bench/ out)")

# Headings (prefixes of `## ` lines) of the sections where ratios and rates are figures,
# on any page not listed in PAGE_PERFORMANCE_SECTIONS.
PERFORMANCE_SECTIONS = ("Performance", "Scale-out")
# Pages with their own such headings ("": every section of the page); each must exist.
PAGE_PERFORMANCE_SECTIONS = {"README.md": ("Performance",), "docs/performance.md": ("",),
                             "docs/regression.md": ("Performance",)}
# The pages that received README's figures when it became a front page (issue 33).
MOVED_README_PAGES = ("docs/performance.md", "docs/relations_evaluation.md",
                      "docs/guide/service_load.md")
# Figures of the documentation pages written before the rule reached them, which
# name no script (or one without their line); the list may only shrink.
UNSCRIPTED = ROOT / "tests" / "data" / "docs_figures_without_script.json"

# The rule both READMEs state, word for word (line breaks aside).
BENCH_RULE = (
    "The scripts in `bench/` and `tools/readme_figures.py` time the installed fastldp, the "
    "one the set-up commands build; none of them puts `src/` on `sys.path`. To time a "
    "working tree, "
    "install it (`pip install -e .`), or build its kernels in place "
    "(`python setup.py build_ext --inplace`) and run the script with `PYTHONPATH=src`.")

NUMBER = r"\d+(?:,\d{3})*(?:\.\d+)?"
RANGE = rf"{NUMBER}(?:\s*[-\u2013]\s*{NUMBER})?"
_START = r"(?<![\w.^/\\-])"  # not the tail of a word, a decimal, 2^-32 or 3x10^7
TIME_MEMORY = re.compile(
    rf"{_START}(?P<num>{RANGE})\s?(?:ms|s|us|µs|min|minutes|seconds|hours|h|KiB|MiB|GiB|kB|KB"
    rf"|MB|GB|TB|MB/s|GB/s)(?![\w/])"
    rf"|{_START}(?P<rate>{RANGE})\s?[kMG]?\s?(?:reports|identities|users|blocks)/s\b")
# "156x" but not "64 x 64" (a shape); "5.38 M" and "240 k" (a rate), but not "1M" (a name)
RATIO_RATE = re.compile(rf"{_START}(?P<num>{RANGE})(?:(?:x|\s?\u00d7)(?![\w^])|\s[kM](?![\w^]))")
COMMAND = re.compile(r"python3? ((?:bench|tools)/[\w./-]+\.py)")
NUMERIC_TYPES = set("bdoxXeEfFgGn%")


# --------------------------------------------------------------- README parsing
def _normalize(text: str) -> str:
    return re.sub(r"\s+", " ", text).strip()


def _mask_code(text: str) -> str:
    """Inline code spans blanked (same length), so numbers in code are not figures."""
    return re.sub(r"`[^`]*`", lambda m: " " * len(m.group(0)), text)


def readme_blocks(text: str) -> list[dict]:
    """README as blocks: paragraphs (a table joins the paragraph just above it,
    its caption) and fenced code blocks, each with its section heading."""
    blocks: list[dict] = []
    section = ""
    lines = text.splitlines()
    i = 0
    current = None

    def close():
        nonlocal current
        if current is not None:
            blocks.append(current)
        current = None

    while i < len(lines):
        line = lines[i]
        if line.startswith("```"):
            close()
            lang = line[3:].strip()
            j = i + 1
            while j < len(lines) and not lines[j].startswith("```"):
                j += 1
            blocks.append({"section": section, "kind": "code", "lang": lang,
                           "prose": "\n".join(lines[i + 1:j]), "rows": [], "line": i + 1})
            i = j + 1
            continue
        if line.startswith("#"):
            close()
            section = line.lstrip("#").strip()
        elif not line.strip():
            # a table right after a blank line still belongs to the paragraph above it
            nxt = lines[i + 1] if i + 1 < len(lines) else ""
            if not (current is not None and nxt.lstrip().startswith("|")
                    and not current["rows"]):
                close()
        else:
            if current is None:
                current = {"section": section, "kind": "text", "lang": "", "prose": "",
                           "rows": [], "line": i + 1}
            if line.lstrip().startswith("|"):
                current["rows"].append(_normalize(line))
            else:
                current["prose"] += "\n" + line
        i += 1
    close()
    return blocks


def figures(block: dict) -> list[tuple[str, int, int, str]]:
    """The figures of a block: (where, start, end, text). ``where`` is "prose" or
    a row index; start/end delimit the figure's number in that normalized text."""
    if block["kind"] == "code" and block["lang"] == "python":
        return []
    texts = [("prose", _normalize(block["prose"]))] + list(enumerate(block["rows"]))
    found = []
    for where, text in texts:
        masked = _mask_code(text)
        for m in TIME_MEMORY.finditer(masked):
            group = "num" if m.group("num") else "rate"
            found.append((where, m.start(group), m.end(group), m.group(0)))
    performance = block.get("performance", block["section"].startswith(PERFORMANCE_SECTIONS))
    if performance or found:
        for where, text in texts:
            for m in RATIO_RATE.finditer(_mask_code(text)):
                if not any(f[0] == where and f[1] <= m.start("num") < f[2] for f in found):
                    found.append((where, m.start("num"), m.end("num"), m.group(0)))
    return found


def commands(block: dict) -> list[str]:
    return sorted(set(COMMAND.findall(block["prose"] + "\n" + "\n".join(block["rows"]))))


# ------------------------------------------------------------- script templates
# A template is matched by a small backtracking matcher of its own, not by a
# regular expression: a template has up to a dozen replacement fields, each of
# which may end at many places, and Python's `re` tries every combination of
# those ends before it refuses a row that does not match (a 300-character
# mismatching row of the oracle table ran for minutes). The matcher remembers
# every (atom, position) from which the rest of the template failed and never
# tries it again, so its work is bounded by atoms x positions x ends per atom
# (``Match.steps`` counts it; test_a_mismatching_row_is_refused_in_bounded_work).
MAX_FIELD = 80    # characters of a free replacement field (a cell, a word or two)
MAX_NUMBER = 60   # characters of a numeric replacement field (a number or a range)
_NUMBER_CHARS = set("0123456789,.-\u2013% \t\n")
_NUMERIC = re.compile(rf"-?{RANGE}")
_NUMERIC_PERCENT = re.compile(rf"-?{RANGE}%")
# what may follow a field that ends its template: a cell or clause boundary
_TRAILING = re.compile(r"\s*\||\s*$|[.;,:)](?:\s|$)")


class Template(NamedTuple):
    """A figure line of a script: its atoms, and its literal word characters.

    Atoms, in order: ``("ws", None)`` any run of whitespace (also none),
    ``("lit", chunk)`` literal text without whitespace, ``("num", percent)``
    a numeric replacement field (one value or a range; ``percent``: with a
    ``%`` sign), ``("free", trailing)`` any other replacement field (1 to
    ``MAX_FIELD`` characters, no ``|``; ``trailing``: the template's last
    piece, which stops at a cell or clause boundary).
    """

    atoms: tuple
    words: int

    @property
    def literals(self) -> tuple:
        return tuple(arg for kind, arg in self.atoms if kind == "lit")


def template_from_pieces(pieces) -> Template:
    """The template of ``[("lit", text) | ("field", format_spec), ...]``."""
    atoms: list = []

    def ws():
        if not atoms or atoms[-1][0] != "ws":
            atoms.append(("ws", None))

    for k, (kind, value) in enumerate(pieces):
        if kind == "lit":
            for part in re.split(r"(\s+)", value):
                if not part:
                    continue
                if part.isspace():
                    ws()
                else:
                    atoms.append(("lit", part))
            continue
        ws()
        if value and (value[-1] in NUMERIC_TYPES or "," in value):
            atoms.append(("num", value.endswith("%")))
        else:
            atoms.append(("free", k == len(pieces) - 1))
        ws()
    words = sum(len(re.findall(r"\w", v)) for kind, v in pieces if kind == "lit")
    return Template(tuple(atoms), words)


class Match:
    """Matches one template against one text, remembering the dead ends.

    ``steps`` counts the states entered and the ends tried; each state
    ``(atom, position)`` is entered at most once after it failed, so
    ``steps <= (atoms + 1) * (len(text) + 1) * (MAX_FIELD + 2)``.
    """

    def __init__(self, template: Template, text: str, full: bool):
        self.atoms = template.atoms
        self.text = text
        self.full = full
        self.dead: set = set()
        self.steps = 0

    def _ends(self, kind, arg, pos):
        text, n = self.text, len(self.text)
        if kind == "ws":  # greedy, as \s*
            j = pos
            while j < n and text[j].isspace():
                j += 1
            yield from range(j, pos - 1, -1)
        elif kind == "lit":
            if text.startswith(arg, pos):
                yield pos + len(arg)
        elif kind == "num":  # greedy: the longest number or range first
            j = pos
            while j < n and j - pos < MAX_NUMBER and text[j] in _NUMBER_CHARS:
                j += 1
            pattern = _NUMERIC_PERCENT if arg else _NUMERIC
            for end in range(j, pos, -1):
                self.steps += 1
                if pattern.fullmatch(text, pos, end):
                    yield end
        else:  # free: lazy, as [^|]{1,MAX_FIELD}?
            for end in range(pos + 1, min(n, pos + MAX_FIELD) + 1):
                if text[end - 1] == "|":
                    return
                if not arg or _TRAILING.match(text, end):
                    yield end

    def at(self, i: int, pos: int):
        """(field spans, end) of atoms[i:] matched from ``pos``, or None."""
        if (i, pos) in self.dead:
            return None
        self.steps += 1
        if i == len(self.atoms):
            if not self.full or pos == len(self.text):
                return [], pos
            self.dead.add((i, pos))
            return None
        kind, arg = self.atoms[i]
        for end in self._ends(kind, arg, pos):
            self.steps += 1
            rest = self.at(i + 1, end)
            if rest is not None:
                spans, stop = rest
                return ([(pos, end)] + spans if kind in ("num", "free") else spans), stop
        self.dead.add((i, pos))
        return None


def matches(template: Template, text: str, full: bool, stats: Optional[dict] = None):
    """The field spans of each match: one whole-text match (``full``), or each
    non-overlapping match from left to right (as ``re.finditer``)."""
    found = []
    if all(chunk in text for chunk in template.literals):
        m = Match(template, text, full)
        if full:
            hit = m.at(0, 0)
            found = [hit[0]] if hit is not None else []
        else:
            pos = 0
            while pos <= len(text):
                hit = m.at(0, pos)
                if hit is None:
                    pos += 1
                    continue
                found.append(hit[0])
                pos = hit[1] if hit[1] > pos else pos + 1
        if stats is not None:
            stats["steps"] = stats.get("steps", 0) + m.steps
    return found


def _literal_regex(text: str) -> str:
    parts = re.split(r"(\s+)", text)
    return "".join(r"\s*" if p.isspace() else re.escape(p) for p in parts if p)


def templates(path: Path) -> list[Template]:
    """The template of every f-string and format string of a script that has a
    replacement field."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    inside = set()  # the literal pieces and format specs of f-strings are not templates
    for node in ast.walk(tree):
        if isinstance(node, ast.JoinedStr):
            inside.update(id(v) for v in node.values if isinstance(v, ast.Constant))
        if isinstance(node, ast.FormattedValue) and node.format_spec is not None:
            inside.add(id(node.format_spec))
    out = []
    for node in ast.walk(tree):
        pieces = None
        if isinstance(node, ast.JoinedStr) and id(node) not in inside:
            pieces = []
            for v in node.values:
                if isinstance(v, ast.Constant):
                    pieces.append(("lit", str(v.value)))
                else:
                    spec = ""
                    if v.format_spec is not None:
                        spec = "".join(str(c.value) for c in v.format_spec.values
                                       if isinstance(c, ast.Constant))
                    pieces.append(("field", spec))
        elif (isinstance(node, ast.Constant) and isinstance(node.value, str)
              and id(node) not in inside and "{" in node.value):
            try:
                parsed = list(string.Formatter().parse(node.value))
            except ValueError:
                continue
            pieces = []
            for literal, field, spec, _ in parsed:
                if literal:
                    pieces.append(("lit", literal))
                if field is not None:
                    pieces.append(("field", spec or ""))
        if not pieces or not any(kind == "field" for kind, _ in pieces):
            continue
        out.append(template_from_pieces(pieces))
    return out


def covered(text: str, start: int, end: int, candidates, whole_row: bool) -> bool:
    """Does some template match ``text`` with every digit of the figure ``text[start:end]``
    inside a replacement field? (A range's two ends may come from two fields.)"""
    digits = [i for i in range(start, end) if text[i].isdigit()]
    for template in candidates:
        if not whole_row and template.words < 8:
            continue  # too little wording to tie a sentence to a template
        for spans in matches(template, text, full=whole_row):
            if all(any(a <= i < b for a, b in spans) for i in digits):
                return True
    return False


# ---------------------------------------------------------------------- tests
def pages() -> list[Path]:
    """README and every Markdown page of the documentation site."""
    docs = ROOT / "docs"
    found = sorted(docs.glob("*.md")) + sorted(docs.glob("guide/*.md"))
    return [README] + [p for p in found if "_build" not in p.parts]


def _name(page: Path) -> str:
    return page.relative_to(ROOT).as_posix()


def page_blocks(page: Path) -> list[dict]:
    blocks = readme_blocks(page.read_text(encoding="utf-8"))
    prefixes = PAGE_PERFORMANCE_SECTIONS.get(_name(page), PERFORMANCE_SECTIONS)
    for block in blocks:
        block["performance"] = block["section"].startswith(prefixes)
    return blocks


def _figure_blocks(page: Path):
    return [(b, figures(b)) for b in page_blocks(page) if figures(b)]


def _checked(page: Path):
    """(block, its commands, its figures without a template) for every figure block."""
    for block, found in _figure_blocks(page):
        cmds = [c for c in commands(block) if (ROOT / c).is_file()]
        if not cmds or len(cmds) < len(commands(block)):
            yield block, cmds, found
            continue
        candidates = [t for c in cmds for t in templates(ROOT / c)]
        prose = _normalize(block["prose"])
        missing = []
        for figure in found:
            where, start, end, shown = figure
            text = prose if where == "prose" else block["rows"][where]
            if not covered(text, start, end, candidates, whole_row=where != "prose"):
                missing.append(figure)
        yield block, cmds, missing


def unscripted(page: Path) -> list[str]:
    """Each figure of the page that names no existing script, or has no template in the
    scripts its block names: "line N: figure" strings."""
    return [f"line {block['line']}: {f[3]}" for block, _, missing in _checked(page)
            for f in missing]


def _without_lines(entries) -> Counter:
    return Counter(e.split(": ", 1)[1] for e in entries)


def test_performance_sections_exist():
    # renaming a heading must not silently turn the ratio rule off
    for name, prefixes in PAGE_PERFORMANCE_SECTIONS.items():
        sections = {b["section"] for b in readme_blocks((ROOT / name).read_text(encoding="utf-8"))}
        for prefix in prefixes:
            assert any(s.startswith(prefix) for s in sections), (name, prefix)


def test_the_pages_hold_the_moved_readme_content():
    # the figures README quoted before it became a front page live on these pages now
    names = {_name(p) for p in pages()}
    assert set(MOVED_README_PAGES) <= names, set(MOVED_README_PAGES) - names
    assert not set(MOVED_README_PAGES) & set(json.loads(UNSCRIPTED.read_text())), (
        "a page holding README's moved figures has no unscripted figures to excuse")


@pytest.mark.parametrize("page", pages(), ids=_name)
def test_every_figure_names_its_script_and_has_its_template_there(page):
    """Every figure of the page names a script whose template prints it. The pages
    written before the rule reached the docs have their unscripted figures listed
    in ``tests/data/docs_figures_without_script.json``: a figure not on that list
    fails, and so does a listed figure the page no longer has (the list only shrinks)."""
    known = json.loads(UNSCRIPTED.read_text(encoding="utf-8")).get(_name(page), [])
    found = unscripted(page)
    new = _without_lines(found) - Counter(known)
    gone = Counter(known) - _without_lines(found)
    assert not new, (f"{_name(page)}: figures without a script that prints them (name "
                     f"`python bench/<script>.py` in their paragraph or table caption, with "
                     f"the line's template in the script): "
                     f"{[e for e in found if e.split(': ', 1)[1] in new]}")
    assert not gone, (f"{_name(page)}: listed in {UNSCRIPTED.name} but no longer an unscripted "
                      f"figure of the page; remove them from the list: {sorted(gone)}")


def test_remeasure_runs_every_figure_script():
    # the scripts that print a figure of a page (a block whose figures are all
    # unscripted, on the list of the pages written before the rule, prints none)
    named = {c for page in pages() for block, cmds, missing in _checked(page)
             for c in cmds if len(missing) < len(figures(block))}
    script = REMEASURE.read_text(encoding="utf-8")
    assert {c for block, _ in _figure_blocks(README) for c in commands(block)}, \
        "README names no figure script"
    assert not [c for c in named if c not in script], (
        sorted(c for c in named if c not in script), "tools/remeasure.sh")


# ------------------------------------------------- the rule test checks itself
def _t(*pieces) -> Template:
    return template_from_pieces(pieces)


def test_rule_flags_a_figure_without_its_script():
    readme = ("## Performance\n\nIt takes 48 s (`python bench/compare.py`).\n\n"
              "| what | time |\n|---|---|\n| decode | 17 ms |\n")
    blocks = [b for b in readme_blocks(readme) if figures(b)]
    assert [len(figures(b)) for b in blocks] == [2]
    assert commands(blocks[0]) == ["bench/compare.py"]
    # 'It is ... s' has 5 word characters: too little wording to tie a sentence to it
    short = _t(("lit", "It is "), ("field", "g"), ("lit", " s"))
    assert short.words == 5
    assert not covered("It is 48 s", 6, 8, [short], whole_row=False)
    template = [_t(("lit", "It takes "), ("field", "g"), ("lit", " s"))]
    assert template[0].words == 8
    assert covered("It takes 48 s", 9, 11, template, whole_row=False)
    assert covered("It takes 95-98 s", 9, 14, template, whole_row=False)
    assert not covered("It lasts 48 s", 9, 11, template, whole_row=False)
    two_fields = [_t(("lit", "It takes "), ("field", "d"), ("lit", "-"), ("field", "d"),
                     ("lit", " s"))]
    assert covered("It takes 95-98 s", 9, 14, two_fields, whole_row=False)
    # the number must come from a field, not from the template's literal text
    literal = [_t(("lit", "It takes 48 s, about "), ("field", ""))]
    assert not covered("It takes 48 s, about right", 9, 11, literal, whole_row=False)
    # a row matches as a whole, an empty cell from an empty field too
    row = [_t(("lit", "| decode | "), ("field", ".0f"), ("lit", " ms | "), ("field", ""),
              ("lit", " |"))]
    assert covered("| decode | 17 ms | |", 11, 13, row, whole_row=True)
    assert covered("| decode | 17 ms | note |", 11, 13, row, whole_row=True)
    assert not covered("| decode | 17 ms | note | more |", 11, 13, row, whole_row=True)


def _oracle_row_template() -> Template:
    # the ten-field row of bench/oracle_compare.py's peer table
    cells = [("field", "")] + [("field", ",d")] + [("field", "")] * 8
    pieces = [("lit", "| ")]
    for k, cell in enumerate(cells):
        pieces += [cell, ("lit", " |" if k == len(cells) - 1 else " | ")]
    return template_from_pieces(pieces)


def test_a_mismatching_row_is_refused_in_bounded_work():
    """A row that matches the template's cells but one (300 characters, long text
    cells) used to keep ``re.fullmatch`` busy for minutes: each of the ten fields
    could end in several places and `re` tried every combination. The matcher enters
    each (atom, position) once, so its work is a few steps per character."""
    template = _oracle_row_template()
    good = _normalize("| GRR | 1,024 | client | 38 ms | 67 ms | 0.40 ms | 94x | 166x |  |  |")
    assert covered(good, good.index("38"), good.index("38") + 2, [template], whole_row=True)
    bad = _normalize(
        "| GRR | 1,024 | client | 38 ms | 67 ms | 0.40 ms | 94x | 166x | a b c d e f g h i j "
        "k l m n o p q r s t | u v w x y z a b c d e f g h i j k l m n o p q r s t u v w x "
        "y z a b c d e f g | the last cell of a row that has one cell too many, here |")
    bad = bad + " " * (300 - len(bad))
    assert len(bad) == 300
    stats: dict = {}
    assert matches(template, bad, full=True, stats=stats) == []
    bound = (len(template.atoms) + 1) * (len(bad) + 1) * (MAX_FIELD + 2)
    assert stats["steps"] <= bound
    assert stats["steps"] < 20 * len(bad), stats  # linear here: about a step per character
    # the same for a sentence searched at every start (prose): each state once
    prose = _normalize("took 5 s, " * 30)
    stats = {}
    sentence = _t(("lit", "took "), ("field", ""), ("lit", " s, and then "), ("field", ""),
                  ("lit", " s, and then it stopped"))
    assert matches(sentence, prose, full=False, stats=stats) == []
    assert stats.get("steps", 0) <= (len(sentence.atoms) + 1) * (len(prose) + 1) * (MAX_FIELD + 2)


def test_figure_detection():
    def shown(text, section="Performance"):
        block = {"section": section, "kind": "text", "lang": "", "prose": text, "rows": []}
        return [f[3] for f in figures(block)]

    assert shown("took 6 min 58 s, 12-20 ms, 1.8 GB and 33 MB/s") == [
        "6 min", "58 s", "12-20 ms", "1.8 GB", "33 MB/s"]
    assert shown("156x and 4.16 M (1.75x), 240 k reports") == ["156x", "4.16 M", "1.75x",
                                                                 "240 k"]
    # not figures: code, exponents, dimensions, counts, ratios outside performance sections
    assert shown("`n = 128 s` 2^-32, 3x10^7, 64 x 64, k = 8, s = 128") == []
    assert shown("inflates the loss 7.7x at eps0 = 2", section="Experiments") == []
    assert shown("inflates the loss 7.7x in 3 s", section="Experiments") == ["3 s", "7.7x"]


# ----------------------------------------------- benches use the installed package
def _path_mutations(path: Path) -> list[str]:
    """Ways the script changes sys.path or PYTHONPATH towards the source tree."""
    source = path.read_text(encoding="utf-8")
    tree = ast.parse(source)
    own_folder = set()  # names bound to the script's own folder: sibling imports are fine
    for node in ast.walk(tree):
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name)
                and ast.unparse(node.value) in ("os.path.dirname(os.path.abspath(__file__))",
                                                "str(Path(__file__).resolve().parent)")):
            own_folder.add(node.targets[0].id)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.FunctionDef, ast.ClassDef))
                  and node.body and isinstance(node.body[0], ast.Expr)}
    found = []
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and ast.unparse(node.func.value) == "sys.path"
                and node.func.attr in ("insert", "append", "extend")):
            arg = node.args[-1] if node.args else None
            if not (isinstance(arg, ast.Name) and arg.id in own_folder):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if isinstance(node, (ast.Assign, ast.AugAssign)):
            targets = node.targets if isinstance(node, ast.Assign) else [node.target]
            if any("sys.path" in ast.unparse(t) for t in targets):
                found.append(f"line {node.lineno}: {ast.unparse(node)}")
        if (isinstance(node, ast.Constant) and isinstance(node.value, str)
                and id(node) not in docstrings):
            # code run in a child interpreter, or an environment handed to one
            if re.search(r"sys\.path\.(insert|append|extend)|PYTHONPATH", node.value):
                if "src" in node.value or "{" in node.value:
                    found.append(f"line {node.lineno}: string {node.value.strip()[:60]!r}")
    return found


def test_benches_do_not_put_the_source_tree_on_the_path():
    # tools/gen_api_docs.py reads the source tree on purpose: it documents it, it times nothing
    scripts = sorted((ROOT / "bench").glob("*.py")) + [ROOT / "tools" / "readme_figures.py"]
    assert any(p.name == "stream_decode.py" for p in scripts)
    found = {p.name: _path_mutations(p) for p in scripts}
    assert not {k: v for k, v in found.items() if v}, found


def test_path_check_catches_the_old_stream_decode_pattern(tmp_path):
    old = tmp_path / "old.py"
    old.write_text(
        "import os, sys\n"
        "HERE = os.path.dirname(os.path.abspath(__file__))\n"
        "SRC = os.path.join(os.path.dirname(HERE), 'src')\n"
        "sys.path.insert(0, SRC)\n"
        "sys.path.insert(0, HERE)\n"
        "CHILD = '''\nimport sys\nsys.path.insert(0, {src!r})\n'''\n")
    found = _path_mutations(old)
    assert len(found) == 2 and "SRC" in found[0] and "string" in found[1], found


def test_both_readmes_state_the_bench_rule():
    for path in (README, BENCH_README):
        assert BENCH_RULE in _normalize(path.read_text(encoding="utf-8")), path


def test_readme_figures_keep_writes_each_job_to_its_folder(tmp_path, monkeypatch, capsys):
    """``--keep DIR``: a reproduce job gets ``--out DIR/<experiment>``; an existing folder
    is refused (a resumed run would skip rows and time nothing)."""
    import importlib.util
    import sys

    spec = importlib.util.spec_from_file_location("readme_figures",
                                                  ROOT / "tools" / "readme_figures.py")
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    # a stand-in for the fastldp command: it writes its argv into --out
    stub = ("import sys, pathlib; a = sys.argv[1:]; out = pathlib.Path(a[a.index('--out') + 1]);"
            " out.mkdir(parents=True); (out / 'argv.txt').write_text(' '.join(a))")
    monkeypatch.setattr(mod, "fastldp_command", lambda: [sys.executable, "-c", stub])
    seconds: dict = {}
    keep = tmp_path / "kept"
    assert mod.run_jobs(["reproduce regression-eps"], False, None, seconds, keep) == 0
    argv = (keep / "regression-eps" / "argv.txt").read_text().split()
    assert argv[:2] == ["reproduce", "regression-eps"] and "--quiet" in argv
    assert "reproduce regression-eps" in seconds
    assert mod.run_jobs(["reproduce regression-eps"], False, None, {}, keep) == 1
    assert "needs a fresh folder" in capsys.readouterr().out
