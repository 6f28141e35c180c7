"""Input checks shared by the histogram mechanisms (counts, non-negative reals)."""

from __future__ import annotations

import functools
import warnings
from typing import Any, Callable, TypeVar, Union

import numpy as np

from .._validation import param_error

__all__ = ["check_counts", "check_nonnegative", "scalar_or_array", "RngLike",
           "positional_deprecated"]

#: what every ``rng`` parameter accepts
RngLike = Union[None, int, np.random.SeedSequence, np.random.Generator]

_Init = TypeVar("_Init", bound=Callable[..., Any])


def positional_deprecated(*names: str) -> Callable[[_Init], _Init]:
    """Let a now keyword-only ``__init__`` take its old positional parameters, with a warning.

    ``names`` are the parameters that used to be positional, in order. A
    positional call still works for one release and emits a
    ``DeprecationWarning`` naming the keyword to use; more positional
    arguments than ``names`` are a ``TypeError``. ``inspect.signature`` and
    type checkers see the keyword-only signature of the wrapped ``__init__``.
    """

    def wrap(init: _Init) -> _Init:
        @functools.wraps(init)
        def call(self, *args, **kwargs):
            if args:
                owner = type(self).__name__
                if len(args) > len(names):
                    raise TypeError(f"{owner}() takes its parameters by keyword only. "
                                    f"Got {len(args)} positional arguments instead.")
                for name, value in zip(names, args):
                    if name in kwargs:
                        raise TypeError(f"{owner}() got {name!r} both by position and by "
                                        "keyword")
                    kwargs[name] = value
                shown = ", ".join(f"{name}={value!r}" for name, value in zip(names, args))
                warnings.warn(
                    f"Passing {', '.join(map(repr, names[:len(args)]))} positionally to {owner} "
                    f"is deprecated and will stop working in the next release: call "
                    f"{owner}({shown}) instead.", DeprecationWarning, stacklevel=2)
            init(self, **kwargs)

        return call  # type: ignore[return-value]

    return wrap


def _first_bad(bad: np.ndarray) -> tuple:
    return tuple(int(i) for i in np.argwhere(bad)[0])


def _where(index: tuple) -> str:
    if not index:
        return ""
    return f" at index {index[0]}" if len(index) == 1 else f" at index {index}"


def check_counts(values, name: str, owner: str) -> np.ndarray:
    """Return ``values`` as a float64 array of non-negative integers or raise.

    Integer arrays and float arrays whose entries are finite whole numbers are
    accepted; booleans, strings, objects, NaN, infinities, fractions and
    negative entries are not. The error names the first offending index.
    """
    expected = "an array of non-negative integers"
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        raise param_error(name, owner, expected, values, TypeError) from None
    if arr.dtype.kind not in "iuf":
        raise param_error(name, owner, expected, values, TypeError)
    if arr.dtype.kind == "f":
        bad = ~np.isfinite(arr)
        if not bad.any():
            bad = arr != np.floor(arr)
        if bad.any():
            i = _first_bad(bad)
            raise ValueError(f"The {name!r} parameter of {owner} must be {expected}. "
                             f"Got {arr[i].item()!r}{_where(i)} instead.")
    if arr.size and arr.min() < 0:
        i = _first_bad(arr < 0)
        raise ValueError(f"The {name!r} parameter of {owner} must be {expected}. "
                         f"Got {arr[i].item()!r}{_where(i)} instead.")
    return arr.astype(np.float64)


def check_nonnegative(values, name: str, owner: str) -> np.ndarray:
    """Return ``values`` as a float64 array of finite reals ``>= 0`` or raise."""
    expected = "an array of finite floats in [0, inf)"
    try:
        arr = np.asarray(values)
    except (TypeError, ValueError):
        raise param_error(name, owner, expected, values, TypeError) from None
    if arr.dtype.kind not in "iuf":
        raise param_error(name, owner, expected, values, TypeError)
    arr = arr.astype(np.float64)
    bad = ~(np.isfinite(arr) & (arr >= 0))
    if bad.any():
        i = _first_bad(bad)
        raise ValueError(f"The {name!r} parameter of {owner} must be {expected}. "
                         f"Got {arr[i].item()!r}{_where(i)} instead.")
    return arr


def scalar_or_array(result: np.ndarray, like=None) -> float | np.ndarray:
    """A Python float when ``like`` (default: ``result``) is 0-d, else the array."""
    shape_of = result if like is None else like
    return float(result) if np.ndim(shape_of) == 0 else result
