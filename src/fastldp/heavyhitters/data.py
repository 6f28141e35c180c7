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

__all__ = ["zipf_items", "zipf_ranked_items", "scatter", "word_items", "vocabulary",
           "word_counts", "true_top_k"]

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
