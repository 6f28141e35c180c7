"""Workloads for the heavy-hitter protocols: Zipf items over 2^32 or 2^64, and English words.

* :func:`zipf_items`: ranks drawn from a Zipf law truncated at ``support``
  ranks, ``P(r) = r^-a / sum_{t <= support} t^-a`` (``r = 1, 2, ...``),
  mapped to items by :func:`scatter`, a public bijection of
  ``[0, 2^item_bits)`` (so the heavy items are spread over the domain and
  share no prefixes by construction). :func:`zipf_ranked_items` gives the
  items of the ranks, most frequent first.
* :func:`word_items`: words of the English text that CPython ships
  (``pydoc_data.topics``, the help topics: about 64,000 words, 3,100
  distinct), drawn with their frequencies in that text: a realistic token
  law (``the``, ``a``, ``is``, ``of`` ... lead) that needs no download.
  :func:`vocabulary` lists them, most frequent first.
* :func:`true_top_k`: the exact top-k of a workload (the truth the metrics
  compare with).

Real text (issue 34), each a law ``(strings, weights)`` of distinct UTF-8
strings, most frequent first, drawn by :func:`draw_text`:

* :func:`multilingual_words`: the 5,000 most frequent words of each of eight
  languages (English, German, French, Spanish, Russian, Arabic, Chinese,
  Japanese) from the ``wordfreq`` package's shipped tables (the ``text``
  extra; nothing is downloaded), each language given an equal share of the
  users, a word's weight its frequency in its language (a word of several
  languages sums its shares). Multi-byte UTF-8 included (Cyrillic 2 bytes,
  CJK 3 bytes a character).
* :func:`python_signatures`: the ``def`` lines of the Python standard
  library that runs this code (``async def`` included, stripped, cut to
  ``item_bytes`` at a character boundary), weighted by how often each occurs
  in it: ``def setUp(self):`` leads; median 28 bytes, most of a 64-byte field
  is padding. The law depends on the Python version (CPython 3.11.7's
  library: 38,942 distinct lines, 57,540 in all).

Examples
--------
>>> items = zipf_items(1000, item_bits=32, rng=0)
>>> items.dtype, bool(items.max() < 2**32)
(dtype('uint64'), True)
>>> vocabulary(item_bytes=4)[:4]
[b'the', b'a', b'is', b'of']
>>> max(len(w) for w in vocabulary(item_bytes=64)) > 8   # longer words need 2-d codes
True
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache
from typing import Any, Optional

import numpy as np

from .._random import as_generator
from .._validation import check_float, check_int
from .items import MAX_ITEM_BYTES, top_k_order, unique_codes
from .lengths import cut_to_field

__all__ = ["zipf_items", "zipf_ranked_items", "scatter", "word_items", "vocabulary",
           "word_counts", "true_top_k", "multilingual_words", "python_signatures", "draw_text",
           "WORDFREQ_LANGUAGES"]

_M1 = 0x9E3779B97F4A7C15  # odd multipliers (Fibonacci hashing, splitmix64)
_M2 = 0xBF58476D1CE4E5B9


def scatter(values: Any, item_bits: int = 32, seed: int = 0) -> np.ndarray:
    """A public bijection of ``[0, 2^item_bits)``: xor a key, multiply by an odd constant, xorshift, multiply.

    Each step is invertible modulo ``2^item_bits`` (an odd multiplier has an
    inverse; ``x ^ (x >> s)`` with ``s >= 1`` is undone by repeating it), so
    distinct ranks give distinct items.
    """
    m = check_int(item_bits, "item_bits", "scatter", low=1, high=64)
    mask = np.uint64((1 << m) - 1) if m < 64 else np.uint64(2**64 - 1)
    x = np.asarray(values, dtype=np.uint64) & mask
    key = np.uint64((int(seed) * _M2 + 0x632BE59BD9B4E019) % 2**64) & mask
    shift = np.uint64(max(1, m // 2))
    with np.errstate(over="ignore"):
        x = ((x ^ key) * np.uint64(_M1)) & mask
        x = x ^ (x >> shift)
        x = (x * np.uint64(_M2)) & mask
    return x


def _zipf_probabilities(support: int, exponent: float) -> np.ndarray:
    w = np.arange(1, support + 1, dtype=np.float64) ** -exponent
    return w / w.sum()


def zipf_items(n: int, *, item_bits: int = 32, exponent: float = 1.1, support: int = 1 << 16,
               seed: int = 0, rng: Any = None) -> np.ndarray:
    """``n`` items (uint64) of Zipf ranks scattered over ``[0, 2^item_bits)`` (module docstring).

    Parameters
    ----------
    n : int >= 0
    item_bits : int in [1, 64]
    exponent : float > 0
        ``a`` of the Zipf law.
    support : int >= 1
        Ranks drawn (at most ``2^item_bits``).
    seed : int
        The public scatter key.
    rng : None, int, SeedSequence or Generator
    """
    owner = "zipf_items"
    n = check_int(n, "n", owner, low=0)
    item_bits = check_int(item_bits, "item_bits", owner, low=1, high=64)
    exponent = check_float(exponent, "exponent", owner, low=0.0)
    support = check_int(support, "support", owner, low=1, high=min(1 << 26, 2**item_bits))
    gen = as_generator(rng, owner, purpose="data")
    ranks = gen.choice(support, size=n, p=_zipf_probabilities(support, exponent))
    return scatter(ranks, item_bits, seed)


def zipf_ranked_items(item_bits: int, n_ranks: int, *, seed: int = 0) -> np.ndarray:
    """The items of Zipf ranks ``0 .. n_ranks - 1`` (most frequent first)."""
    return scatter(np.arange(n_ranks, dtype=np.uint64), item_bits, seed)


@lru_cache(maxsize=None)
def word_counts() -> tuple:
    """``((word, count), ...)`` of the words of ``pydoc_data.topics``, most frequent first.

    Words are runs of ASCII letters, lower-cased; ties are in alphabetical
    order.
    """
    from pydoc_data.topics import topics

    text = " ".join(topics[key] for key in sorted(topics)).lower()
    counts = Counter(re.findall(r"[a-z]+", text))
    return tuple(sorted(counts.items(), key=lambda kv: (-kv[1], kv[0])))


def vocabulary(item_bytes: int = 8) -> list:
    """The corpus words of at most ``item_bytes`` bytes (``1 .. 64``; as ``bytes``), most frequent first."""
    item_bytes = check_int(item_bytes, "item_bytes", "vocabulary", low=1, high=MAX_ITEM_BYTES)
    return [w.encode() for w, _ in word_counts() if len(w) <= item_bytes]


def word_items(n: int, *, item_bytes: int = 8, rng: Any = None) -> list:
    """``n`` words (``bytes``, at most ``item_bytes`` in ``1 .. 64``) drawn with their corpus
    frequencies (module docstring)."""
    owner = "word_items"
    n = check_int(n, "n", owner, low=0)
    item_bytes = check_int(item_bytes, "item_bytes", owner, low=1, high=MAX_ITEM_BYTES)
    pairs = [(w.encode(), c) for w, c in word_counts() if len(w) <= item_bytes]
    weights = np.array([c for _, c in pairs], dtype=np.float64)
    picks = as_generator(rng, owner, purpose="data").choice(len(pairs), size=n,
                                                            p=weights / weights.sum())
    words = [w for w, _ in pairs]
    return [words[j] for j in picks]


def true_top_k(codes: Any, k: int) -> tuple[np.ndarray, np.ndarray]:
    """The ``k`` most frequent codes and their counts (ties: the smaller code first).

    ``codes`` 1-d, or 2-d for items over 64 bits (:mod:`fastldp.heavyhitters.items`).
    """
    k = check_int(k, "k", "true_top_k", low=0)
    values, counts = unique_codes(np.asarray(codes, dtype=np.uint64), return_counts=True)
    order = top_k_order(values, counts, k)
    return values[order], counts[order].astype(np.int64)


#: the languages of :func:`multilingual_words` (wordfreq codes)
WORDFREQ_LANGUAGES = ("en", "de", "fr", "es", "ru", "ar", "zh", "ja")


def _law(weights: dict) -> tuple[list, np.ndarray]:
    """``(strings, weights)`` most frequent first (ties: by the UTF-8 bytes), weights summing to 1."""
    pairs = sorted(weights.items(), key=lambda kv: (-kv[1], kv[0].encode("utf-8")))
    w = np.array([v for _, v in pairs], dtype=np.float64)
    return [t for t, _ in pairs], w / w.sum()


@lru_cache(maxsize=None)
def _multilingual(languages: tuple, per_language: int, item_bytes: int) -> tuple:
    try:
        import wordfreq
    except ImportError:
        raise ImportError("multilingual_words needs the wordfreq package (its shipped word "
                          "tables): pip install 'fastldp[text]'") from None
    weights: dict = {}
    for lang in languages:
        table = wordfreq.get_frequency_dict(lang)
        # wordfreq folds every digit to 0 ('00', '0000'): those are not words
        words = sorted(((w, f) for w, f in table.items() if not w.isdigit()),
                       key=lambda kv: (-kv[1], kv[0]))[:per_language]
        total = sum(f for _, f in words)
        for w, f in words:
            key = cut_to_field([w], item_bytes)[0]
            weights[key] = weights.get(key, 0.0) + f / total / len(languages)
    return _law(weights)


def multilingual_words(*, item_bytes: int = 32, per_language: int = 5000,
                       languages: Any = WORDFREQ_LANGUAGES) -> tuple[list, np.ndarray]:
    """The law of words over eight languages from ``wordfreq`` (module docstring).

    Parameters
    ----------
    item_bytes : int in [1, 64], default 32
        Words longer in UTF-8 are cut at a character boundary.
    per_language : int >= 1, default 5000
        The most frequent words taken from each language (digit-only tokens
        excluded: wordfreq folds digits to ``0``).
    languages : sequence of str
        wordfreq language codes; each holds an equal share of the users.

    Returns
    -------
    strings : list of str
        Distinct words, most frequent first.
    weights : ndarray of float
        Their probabilities (summing to 1).
    """
    owner = "multilingual_words"
    item_bytes = check_int(item_bytes, "item_bytes", owner, low=1, high=MAX_ITEM_BYTES)
    per_language = check_int(per_language, "per_language", owner, low=1)
    if isinstance(languages, str) or not len(languages):
        raise ValueError(f"The 'languages' parameter of {owner} must be a non-empty sequence of "
                         f"wordfreq language codes. Got {languages!r} instead.")
    return _multilingual(tuple(str(x) for x in languages), per_language, item_bytes)


@lru_cache(maxsize=None)
def _signatures(item_bytes: int) -> tuple:
    import os
    import sysconfig

    root = sysconfig.get_paths()["stdlib"]
    pattern = re.compile(r"^\s*((?:async\s+)?def\s.*:)\s*$")
    weights: dict = {}
    for folder, dirs, files in os.walk(root):
        dirs[:] = sorted(d for d in dirs if d not in ("site-packages", "dist-packages"))
        for name in sorted(files):
            if not name.endswith(".py"):
                continue
            try:
                with open(os.path.join(folder, name), encoding="utf-8") as fh:
                    lines = fh.read().splitlines()
            except (OSError, UnicodeDecodeError):
                continue  # a test file in another encoding, or unreadable: not Python text here
            for line in lines:
                hit = pattern.match(line)
                if hit:
                    key = cut_to_field([hit.group(1)], item_bytes)[0]
                    weights[key] = weights.get(key, 0.0) + 1.0
    if not weights:
        raise FileNotFoundError(f"python_signatures found no .py files under {root}")
    return _law(weights)


def python_signatures(*, item_bytes: int = 64) -> tuple[list, np.ndarray]:
    """The law of the ``def`` lines of the running Python's standard library (module docstring).

    Returns ``(strings, weights)`` as :func:`multilingual_words`; a line's
    weight is its number of occurrences over the total.
    """
    item_bytes = check_int(item_bytes, "item_bytes", "python_signatures", low=1,
                           high=MAX_ITEM_BYTES)
    return _signatures(item_bytes)


def draw_text(law: tuple, n: int, *, rng: Any = None) -> tuple[list, np.ndarray]:
    """``n`` users' strings drawn from ``law = (strings, weights)``.

    Returns the strings (``str``, for the protocols' text mode) and the index
    of each in ``law``'s list (for the truth and the known-dictionary ceiling).
    """
    owner = "draw_text"
    n = check_int(n, "n", owner, low=0)
    strings, weights = law
    picks = as_generator(rng, owner, purpose="data").choice(len(strings), size=n, p=weights)
    return [strings[j] for j in picks], picks
