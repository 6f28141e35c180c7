"""README's speed, time and memory figures cannot drift silently.

Every such figure in README.md sits in a paragraph, table or code block
that names the command printing it (``python bench/<script>.py ...`` or
``python tools/readme_figures.py ...``); that script exists, and it holds
the template of the figure's line: an f-string (or ``str.format`` string)
whose literal text is the README's wording and whose replacement fields
produce the figure. A reader runs the named command and compares the
printed line with README's. ``tools/remeasure.sh`` runs every such script.

Which numbers are figures:

* a number with a unit of time, memory or throughput (``48 s``, ``12-20 ms``,
  ``6 min``, ``194 KiB``, ``1.8 GB``, ``33 MB/s``) anywhere in README
  outside inline code and Python blocks;
* in the performance sections (``PERFORMANCE_SECTIONS``) and in any block
  that has a figure of the first kind, also a ratio (``156x``, ``1.75x``)
  and a rate in millions or thousands (``5.38 M``, ``240 k``).

A figure is covered by a template when the template's text matches the
README's (whitespace aside; a whole table row for a figure in a table, a
stretch of the sentence otherwise) and the figure's number falls inside one
of its replacement fields, not in literal text: the script computes it.
A replacement field matches one value or a range of values (``95-98 s``),
since README quotes ranges where runs vary.

This test parses files only; it times nothing.

The second rule: the benchmarks run against the installed package. No
script in ``bench/`` (nor ``tools/readme_figures.py``) puts the source tree
on ``sys.path``, and both READMEs state the same rule (``BENCH_RULE``).
"""

from __future__ import annotations

import ast
import re
import string
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BENCH_README = ROOT / "bench" / "README.md"
REMEASURE = ROOT / "tools" / "remeasure.sh"

pytestmark = pytest.mark.skipif(
    not (README.exists() and (ROOT / "bench").is_dir()),
    reason="README.md and bench/ are not next to the tests (an sdist leaves bench/ out)")

# Headings (prefixes of `## ` lines) of the sections where ratios and rates are figures.
PERFORMANCE_SECTIONS = ("Performance", "Scale-out")

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
    performance = block["section"].startswith(PERFORMANCE_SECTIONS)
    if performance or found:
        for where, text in texts:
            for m in RATIO_RATE.finditer(_mask_code(text)):
                if not any(f[0] == where and f[1] <= m.start("num") < f[2] for f in found):
                    found.append((where, m.start("num"), m.end("num"), m.group(0)))
    return found


def commands(block: dict) -> list[str]:
    return sorted(set(COMMAND.findall(block["prose"] + "\n" + "\n".join(block["rows"]))))


# ------------------------------------------------------------- script templates
def _field_regex(spec: str, trailing: bool) -> str:
    if spec and (spec[-1] in NUMERIC_TYPES or "," in spec):
        body = RANGE + ("%" if spec.endswith("%") else "")
        return rf"-?{body}"
    if trailing:  # a field at the end of a template stops at a cell or clause boundary
        return r"[^|]{1,80}?(?=\s*\||\s*$|[.;,:)](?:\s|$))"
    return r"[^|]{1,80}?"


def _literal_regex(text: str) -> str:
    parts = re.split(r"(\s+)", text)
    return "".join(r"\s*" if p.isspace() else re.escape(p) for p in parts if p)


def templates(path: Path) -> list[tuple[str, int]]:
    """(regex, literal word characters) of every f-string and format string of a script;
    each replacement field is a named group ``f<i>``."""
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
        regex, n_field = [], 0
        for k, (kind, value) in enumerate(pieces):
            if kind == "lit":
                regex.append(_literal_regex(value))
            else:
                trailing = k == len(pieces) - 1
                regex.append(rf"\s*(?P<f{n_field}>{_field_regex(value, trailing)})\s*")
                n_field += 1
        words = sum(len(re.findall(r"\w", v)) for kind, v in pieces if kind == "lit")
        out.append(("".join(regex), words))
    return out


def covered(text: str, start: int, end: int, regexes, whole_row: bool) -> bool:
    """Does some template match ``text`` with every digit of the figure ``text[start:end]``
    inside a replacement field? (A range's two ends may come from two fields.)"""
    digits = [i for i in range(start, end) if text[i].isdigit()]
    for regex, words in regexes:
        if whole_row:
            matches = [m for m in [re.fullmatch(regex, text)] if m]
        else:
            if words < 8:  # too little wording to tie a sentence to a template
                continue
            matches = re.finditer(regex, text)
        for m in matches:
            spans = [m.span(name) for name, value in m.groupdict().items() if value is not None]
            if all(any(a <= i < b for a, b in spans) for i in digits):
                return True
    return False


# ---------------------------------------------------------------------- tests
def _readme_figure_blocks():
    blocks = readme_blocks(README.read_text(encoding="utf-8"))
    return [(b, figures(b)) for b in blocks if figures(b)]


def test_performance_sections_exist():
    # renaming a heading must not silently turn the ratio rule off
    sections = {b["section"] for b in readme_blocks(README.read_text(encoding="utf-8"))}
    for prefix in PERFORMANCE_SECTIONS:
        assert any(s.startswith(prefix) for s in sections), prefix


def test_every_readme_figure_names_an_existing_script():
    missing = []
    for block, found in _readme_figure_blocks():
        cmds = commands(block)
        absent = [c for c in cmds if not (ROOT / c).is_file()]
        if not cmds or absent:
            missing.append(f"README line {block['line']} ({block['section']}): figures "
                           f"{[f[3] for f in found]} name "
                           f"{cmds or 'no python bench/... or tools/... command'}"
                           f"{'; missing: ' + str(absent) if absent else ''}")
    assert not missing, "\n".join(missing)


def test_every_readme_figure_has_its_template_in_the_named_script():
    problems = []
    for block, found in _readme_figure_blocks():
        regexes = [t for c in commands(block) if (ROOT / c).is_file()
                   for t in templates(ROOT / c)]
        prose = _normalize(block["prose"])
        for where, start, end, shown in found:
            text = prose if where == "prose" else block["rows"][where]
            if not covered(text, start, end, regexes, whole_row=where != "prose"):
                problems.append(f"README line {block['line']}: {shown!r} in {text[:90]!r}... "
                                f"has no template in {commands(block)}")
    assert not problems, "\n".join(problems)


def test_remeasure_runs_every_figure_script():
    named = {c for block, _ in _readme_figure_blocks() for c in commands(block)}
    script = REMEASURE.read_text(encoding="utf-8")
    assert named, "README names no figure script"
    assert not [c for c in named if c not in script], (named, "tools/remeasure.sh")


# ------------------------------------------------- the rule test checks itself
def test_rule_flags_a_figure_without_its_script():
    readme = ("## Performance\n\nIt takes 48 s (`python bench/compare.py`).\n\n"
              "| what | time |\n|---|---|\n| decode | 17 ms |\n")
    blocks = [b for b in readme_blocks(readme) if figures(b)]
    assert [len(figures(b)) for b in blocks] == [2]
    assert commands(blocks[0]) == ["bench/compare.py"]
    ok = [(_literal_regex("It takes ") + rf"\s*(?P<f0>-?{RANGE})\s*" + _literal_regex(" s"),
           6)]
    # 'It takes' has 7 word characters: too little wording to tie a sentence to it
    assert not covered("It takes 48 s", 9, 11, ok, whole_row=False)
    template = [(ok[0][0], 8)]
    assert covered("It takes 48 s", 9, 11, template, whole_row=False)
    assert covered("It takes 95-98 s", 9, 14, template, whole_row=False)
    two_fields = [(_literal_regex("It takes ") + rf"\s*(?P<f0>{NUMBER})\s*-\s*(?P<f1>{NUMBER})"
                   + _literal_regex(" s"), 8)]
    assert covered("It takes 95-98 s", 9, 14, two_fields, whole_row=False)
    # the number must come from a field, not from the template's literal text
    literal = [(_literal_regex("It takes 48 s, about ") + r"\s*(?P<f0>[^|]{1,80}?)\s*", 20)]
    assert not covered("It takes 48 s, about right", 9, 11, literal, whole_row=False)


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
