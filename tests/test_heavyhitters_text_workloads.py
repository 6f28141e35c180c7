"""Issue 34, item 7: the real-text workloads that packages ship (no download at run time).

``python_signatures`` reads the running Python's standard library;
``multilingual_words`` reads the wordfreq package's tables (the ``text`` extra,
in the test extra). Each is a law ``(strings, weights)``, most frequent first.
"""

from __future__ import annotations

import sys
import sysconfig
from pathlib import Path

import numpy as np
import pytest

from fastldp.heavyhitters import data
from fastldp.heavyhitters import cut_to_field


def _check_law(strings, weights, item_bytes):
    assert len(strings) == len(set(strings)) == weights.shape[0]
    assert weights.sum() == pytest.approx(1.0, abs=1e-12)
    assert np.all(weights > 0) and np.all(np.diff(weights) <= 0)  # most frequent first
    raw = [s.encode("utf-8") for s in strings]
    assert max(len(b) for b in raw) <= item_bytes
    assert all(b"\x00" not in b and b for b in raw)


def test_cut_keeps_whole_characters():
    # the workloads cut their strings with cut_to_field
    assert cut_to_field(["abc"], 2) == ["ab"]
    assert cut_to_field(["日本語"], 7) == ["日本"]  # 9 bytes; the third character would split
    assert cut_to_field(["日本語"], 9) == ["日本語"]
    assert cut_to_field(["aé"], 2) == ["a"]  # é is 2 bytes


def test_signatures_are_the_stdlib_def_lines_with_their_counts():
    strings, weights = data.python_signatures(item_bytes=64)
    _check_law(strings, weights, 64)
    assert all(s.startswith(("def ", "async def ")) and s.endswith(":") or len(s.encode()) >= 60
               for s in strings)
    # recount one line by hand over the same files: its weight is its share of all def lines
    root = Path(sysconfig.get_paths()["stdlib"])
    target = strings[0]
    hits = total = 0
    for path in sorted(root.rglob("*.py")):
        if "site-packages" in path.parts or "dist-packages" in path.parts:
            continue
        try:
            lines = path.read_text(encoding="utf-8").splitlines()
        except (OSError, UnicodeDecodeError):
            continue
        for line in lines:
            stripped = line.strip()
            if (stripped.startswith(("def ", "async def ")) and stripped.endswith(":")) or (
                    stripped.startswith("async") and stripped.split()[1:2] == ["def"]
                    and stripped.endswith(":")):
                total += 1
                hits += stripped == target
    assert hits > 0 and weights[0] == pytest.approx(hits / total, rel=1e-12)
    cut = data.python_signatures(item_bytes=24)[0]
    assert max(len(s.encode()) for s in cut) <= 24


def test_signature_lines_are_mostly_padding_in_a_64_byte_field():
    strings, weights = data.python_signatures()
    lengths = np.array([len(s.encode()) for s in strings])
    median = lengths[np.searchsorted(np.cumsum(weights), 0.5)]
    assert 16 <= median <= 40  # most of the 64 bytes are padding (issue 34, item 6)


@pytest.mark.slow  # loads eight languages' tables (about 15 s); the sibling below loads two
def test_multilingual_words_hold_every_language_and_multibyte_text():
    pytest.importorskip("wordfreq", reason="the `text` extra (wordfreq) is not installed")
    strings, weights = data.multilingual_words(item_bytes=32)
    _check_law(strings, weights, 32)
    top = strings[:64]
    assert "the" in top and "de" in top
    assert any(any(0x400 <= ord(c) < 0x500 for c in w) for w in top)  # Cyrillic: 2 bytes
    assert any(any(0x3040 <= ord(c) < 0x30A0 for c in w) for w in top)  # Japanese kana: 3 bytes
    assert not any(w.isdigit() for w in strings)  # wordfreq's folded digits are left out


def test_multilingual_words_of_two_languages():
    pytest.importorskip("wordfreq", reason="the `text` extra (wordfreq) is not installed")
    strings, weights = data.multilingual_words(languages=["en", "ru"], per_language=200,
                                               item_bytes=4)
    _check_law(strings, weights, 4)
    assert "the" in strings[:5] and "в" in strings[:5]  # each language holds half the users
    assert any(len(w.encode()) > len(w) for w in strings)  # Cyrillic: 2 bytes a character
    # one language: its shares are its own frequencies, renormalized over its top words
    en, w_en = data.multilingual_words(languages=["en"], per_language=10)
    import wordfreq

    table = wordfreq.get_frequency_dict("en")
    top10 = sorted(((w, f) for w, f in table.items() if not w.isdigit()),
                   key=lambda kv: (-kv[1], kv[0]))[:10]
    assert en == [w for w, _ in top10]
    total = sum(f for _, f in top10)
    assert w_en == pytest.approx([f / total for _, f in top10], rel=1e-12)


def test_multilingual_words_say_which_extra_is_missing(monkeypatch):
    monkeypatch.setitem(sys.modules, "wordfreq", None)
    data._multilingual.cache_clear()
    try:
        with pytest.raises(ImportError, match=r"fastldp\[text\]"):
            data.multilingual_words(languages=["en"], per_language=3)
    finally:
        data._multilingual.cache_clear()


@pytest.mark.parametrize("kwargs, name", [({"item_bytes": 0}, "item_bytes"),
                                          ({"item_bytes": 65}, "item_bytes"),
                                          ({"per_language": 0}, "per_language"),
                                          ({"languages": "en"}, "languages"),
                                          ({"languages": []}, "languages")])
def test_multilingual_words_validate(kwargs, name):
    with pytest.raises(ValueError, match=name):
        data.multilingual_words(**kwargs)


def test_draw_text_follows_the_weights():
    law = (["a", "bb", "ccc"], np.array([0.5, 0.3, 0.2]))
    users, idx = data.draw_text(law, 20000, rng=3)
    assert users == [law[0][i] for i in idx]
    share = np.bincount(idx, minlength=3) / 20000
    # binomial sd of a share: sqrt(p (1 - p) / n) <= 0.0036; 5 sd
    assert np.abs(share - law[1]).max() < 5 * np.sqrt(0.25 / 20000)
    again, idx2 = data.draw_text(law, 20000, rng=3)
    assert np.array_equal(idx, idx2)
    with pytest.raises(ValueError, match="'n'"):
        data.draw_text(law, -1)
