"""Labels of an oracle's symbols: ``categories=`` and the encoding of labelled values.

An oracle built with ``categories=[...]`` privatizes the labels themselves:
label ``categories[v]`` is symbol ``v``. Labels are strings or integers,
distinct, given as a list, a tuple, a numpy array, a pandas ``Categorical``
(its categories, in their order), a ``CategoricalDtype``, an ``Index`` or a
``Series`` of dtype ``category``.

Encoding is vectorized where the input allows it: a numpy string or integer
array is looked up by ``searchsorted`` in the sorted labels, a pandas
``Categorical`` by its codes (one lookup per category, not per value);
anything else (object arrays, lists, mixed types) goes through a dict.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._validation import param_error

__all__ = ["Categories", "resolve_categories"]

_SHOWN = 6  # labels quoted in a message or a repr before "..."


def _as_label(value: Any):
    """A label as a plain Python ``str`` or ``int``, or ``None`` when it is neither."""
    if isinstance(value, np.generic):
        value = value.item()
    if isinstance(value, bool):
        return None
    if isinstance(value, str):
        return str(value)
    if isinstance(value, int):
        return int(value)
    return None


def _pandas_categorical(values: Any):
    """The pandas ``Categorical`` behind ``values`` (Categorical or category Series), else None."""
    if hasattr(values, "codes") and hasattr(values, "categories"):
        return values
    if str(getattr(values, "dtype", "")) == "category" and hasattr(values, "array"):
        return values.array
    return None


def shown_labels(labels) -> str:
    """The first labels as a list literal, ``...`` and the count when there are more."""
    head = ", ".join(repr(v) for v in labels[:_SHOWN])
    if len(labels) > _SHOWN:
        return f"[{head}, ... ({len(labels)} labels)]"
    return f"[{head}]"


def resolve_categories(categories: Any, owner: str) -> tuple:
    """``categories=`` as a tuple of distinct ``str`` / ``int`` labels, or raise.

    Parameters
    ----------
    categories : sequence of str or int, or a pandas Categorical, CategoricalDtype,
        Index or category Series
    owner : str
        The class named by the error messages.
    """
    expected = ("a list of distinct labels (str or int), or a pandas Categorical "
                "(its categories)")
    source = categories
    cat = _pandas_categorical(categories)
    if cat is not None:
        source = cat.categories
    elif hasattr(categories, "categories") and not isinstance(categories, (str, bytes)):
        source = categories.categories  # a CategoricalDtype
    if isinstance(source, (str, bytes, dict)) or not hasattr(source, "__iter__"):
        raise param_error("categories", owner, expected, categories, TypeError)
    arr = np.asarray(source, dtype=object) if not isinstance(source, np.ndarray) else source
    if arr.ndim != 1:
        raise param_error("categories", owner, expected, f"an array of shape {arr.shape}")
    labels = []
    for i, value in enumerate(source):
        label = _as_label(value)
        if label is None:
            raise TypeError(f"The 'categories' parameter of {owner} must be {expected}. "
                            f"Got {value!r} at index {i} instead.")
        labels.append(label)
    seen: dict = {}
    for i, label in enumerate(labels):
        if label in seen:
            raise ValueError(f"The 'categories' parameter of {owner} must be {expected}. "
                             f"Got {label!r} at indices {seen[label]} and {i} instead.")
        seen[label] = i
    return tuple(labels)


class Categories:
    """The labels of an oracle's symbols and their encoding (symbol ``v`` is ``labels[v]``)."""

    def __init__(self, labels: tuple):
        self.labels = labels
        self.index = {label: v for v, label in enumerate(labels)}
        kinds = {type(label) for label in labels}
        # one sorted array per homogeneous label type, for searchsorted lookups
        self._sorted: Optional[np.ndarray] = None
        self._order: Optional[np.ndarray] = None
        if kinds == {str}:
            self._sorted = np.array(labels, dtype=str)
        elif kinds == {int} and all(-2**63 <= v < 2**63 for v in labels):
            self._sorted = np.array(labels, dtype=np.int64)
        if self._sorted is not None:
            self._order = np.argsort(self._sorted, kind="stable")
            self._sorted = self._sorted[self._order]

    def __len__(self) -> int:
        return len(self.labels)

    def _unknown(self, name: str, owner: str, value: Any, index: int) -> ValueError:
        if isinstance(value, np.generic):
            value = value.item()
        return ValueError(f"The {name!r} parameter of {owner} must hold labels among the "
                          f"categories {shown_labels(self.labels)}. Got {value!r} at index "
                          f"{index} instead, which is not a category.")

    def encode(self, values: Any, name: str, owner: str) -> np.ndarray:
        """int64 symbols of the labels ``values`` (1-d), or a ValueError naming the first unknown."""
        cat = _pandas_categorical(values)
        if cat is not None:
            return self._encode_categorical(cat, name, owner)
        if isinstance(values, np.ndarray):
            arr = values
        else:
            try:
                arr = np.asarray(values)
            except (ValueError, TypeError):  # ragged input
                arr = np.empty(len(values), dtype=object)
                arr[:] = list(values)
        if arr.ndim != 1:
            raise param_error(name, owner, f"a 1-d array of labels among {shown_labels(self.labels)}",
                              f"an array of shape {arr.shape}")
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        if self._sorted is not None and (
                (arr.dtype.kind == "U" and self._sorted.dtype.kind == "U")
                or (arr.dtype.kind in "iu" and self._sorted.dtype.kind == "i")):
            return self._encode_sorted(arr, name, owner)
        codes = np.empty(arr.shape[0], dtype=np.int64)
        index = self.index
        for i, value in enumerate(arr.tolist()):
            try:
                v = index.get(value, -1) if not isinstance(value, bool) else -1
            except TypeError:  # unhashable
                v = -1
            if v < 0:
                raise self._unknown(name, owner, value, i)
            codes[i] = v
        return codes

    def _encode_sorted(self, arr: np.ndarray, name: str, owner: str) -> np.ndarray:
        sorted_labels, order = self._sorted, self._order
        assert sorted_labels is not None and order is not None  # checked by encode
        if arr.dtype.kind == "u" and arr.dtype.itemsize == 8 and arr.max() >= 2**63:
            i = int(np.flatnonzero(arr >= 2**63)[0])
            raise self._unknown(name, owner, arr[i], i)
        keys = arr.astype(sorted_labels.dtype) if arr.dtype.kind in "iu" else arr
        pos = np.searchsorted(sorted_labels, keys)
        pos_c = np.minimum(pos, sorted_labels.shape[0] - 1)
        found = sorted_labels[pos_c] == keys
        if not found.all():
            i = int(np.flatnonzero(~found)[0])
            raise self._unknown(name, owner, arr[i], i)
        return order[pos_c].astype(np.int64)

    def _encode_categorical(self, cat: Any, name: str, owner: str) -> np.ndarray:
        codes = np.asarray(cat.codes, dtype=np.int64)
        if codes.ndim != 1:  # pragma: no cover - pandas categoricals are 1-d
            raise param_error(name, owner, "a 1-d Categorical", f"shape {codes.shape}")
        if codes.size and codes.min() < 0:
            i = int(np.flatnonzero(codes < 0)[0])
            raise self._unknown(name, owner, float("nan"), i)
        # one lookup per category of the input, then a gather
        theirs = list(cat.categories)
        mapping = np.full(len(theirs) + 1, -1, dtype=np.int64)
        for j, label in enumerate(theirs):
            mapping[j] = self.index.get(_as_label(label), -1)
        out = mapping[codes]
        if out.size and out.min() < 0:
            i = int(np.flatnonzero(out < 0)[0])
            raise self._unknown(name, owner, theirs[codes[i]], i)
        return out
