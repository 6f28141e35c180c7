"""How well a heavy-hitter protocol found the top k: precision, recall, F1, NCR, relative error.

``found`` is what a protocol returned (its ``.items`` or ``.codes``, any
order for the set metrics); ``truth`` is the true top-k, most frequent
first (:func:`~fastldp.heavyhitters.data.true_top_k`). Items compare as
Python values (``int`` for integer codes, ``bytes`` for strings).

* precision at k: ``|found ∩ truth| / |found|`` (0 when nothing is found);
* recall at k: ``|found ∩ truth| / |truth|``; with ``|found| = |truth| = k``
  the two are equal (the PEM paper's "precision");
* F1: their harmonic mean (0 when both are 0);
* NCR, the normalized cumulative rank (Wang, Li, Jha 2019): the item of true
  rank ``r`` (1-based) scores ``k - r + 1``; NCR is the found items' scores
  over ``k (k + 1) / 2``, so missing the top item costs the most;
* relative error: the mean over the true top-k of ``|est - true| / true``,
  ``est`` the estimated count of the item, 0 when it was not found.

Examples
--------
>>> precision_at_k([1, 2, 9], [1, 2, 3]), ncr([1, 2, 9], [1, 2, 3])
(0.6666666666666666, 0.8333333333333334)
>>> relative_error({1: 90.0}, [1, 2], [100, 50])
0.55
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

__all__ = ["precision_at_k", "recall_at_k", "f1_at_k", "ncr", "relative_error"]


def _value(x: Any) -> Any:
    if isinstance(x, (bytes, bytearray, np.bytes_)):
        return bytes(x)
    if isinstance(x, str):  # text items (str in, str out) compare with their UTF-8 bytes
        return x.encode("utf-8")
    if isinstance(x, (list, tuple)):  # a row of a 2-d code array (items over 64 bits)
        return tuple(int(w) for w in x)
    return int(x)


def _values(items: Any) -> list:
    """Hashable values of items: ``bytes``, ints, or word tuples (rows of 2-d codes)."""
    return [_value(x) for x in (items.tolist() if isinstance(items, np.ndarray) else list(items))]


def _cut(found, truth, k):
    f, t = _values(found), _values(truth)
    if k is not None:
        f, t = f[:k], t[:k]
    return f, t


def precision_at_k(found: Any, truth: Any, k: Optional[int] = None) -> float:
    """``|found ∩ truth| / |found|`` (first ``k`` of each when ``k`` is given)."""
    f, t = _cut(found, truth, k)
    return len(set(f) & set(t)) / len(set(f)) if f else 0.0


def recall_at_k(found: Any, truth: Any, k: Optional[int] = None) -> float:
    """``|found ∩ truth| / |truth|``."""
    f, t = _cut(found, truth, k)
    return len(set(f) & set(t)) / len(set(t)) if t else 0.0


def f1_at_k(found: Any, truth: Any, k: Optional[int] = None) -> float:
    """Harmonic mean of precision and recall (0 when both are 0)."""
    p, r = precision_at_k(found, truth, k), recall_at_k(found, truth, k)
    return 2 * p * r / (p + r) if p + r > 0 else 0.0


def ncr(found: Any, truth: Any, k: Optional[int] = None) -> float:
    """Normalized cumulative rank (module docstring)."""
    f, t = _cut(found, truth, k)
    size = len(t)
    if not size:
        return 0.0
    score = {item: size - r for r, item in enumerate(t)}  # rank r (0-based) scores k - r
    return sum(score.get(item, 0) for item in set(f)) / (size * (size + 1) / 2)


def relative_error(estimated: Any, truth: Any, truth_counts: Any) -> float:
    """Mean relative error of the true top-k's estimated counts (0 for an unfound item).

    ``estimated`` is a :class:`~fastldp.heavyhitters.HeavyHitters` result
    (its ``items`` and ``counts``) or a mapping item -> estimated count.
    """
    if hasattr(estimated, "counts") and hasattr(estimated, "items"):
        mapping = dict(zip(_values(estimated.items), np.asarray(estimated.counts).tolist()))
    else:
        mapping = {(_values([key])[0]): float(v) for key, v in dict(estimated).items()}
    t = _values(truth)
    counts = np.asarray(truth_counts, dtype=np.float64)
    if len(t) != counts.shape[0]:
        raise ValueError(f"truth has {len(t)} items and truth_counts {counts.shape[0]} counts")
    if not t:
        return 0.0
    errs = [abs(mapping.get(item, 0.0) - c) / c for item, c in zip(t, counts)]
    return float(np.mean(errs))
