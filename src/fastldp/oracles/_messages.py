"""Error messages of the frequency oracles: a description shown as is, an entry of an array."""

from __future__ import annotations

import numpy as np

__all__ = ["entry_error"]


class _Text(str):
    """A description shown as is in an error message (no quotes)."""

    def __repr__(self) -> str:
        return str(self)


def entry_error(name: str, owner: str, expected: str, value, index: int, exc=ValueError):
    """``param_error`` for one entry of an array parameter, naming its index."""
    if isinstance(value, np.generic):
        value = value.item()
    return exc(f"The {name!r} parameter of {owner} must be {expected}. "
               f"Got {value!r} at index {index} instead.")
