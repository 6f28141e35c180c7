"""Items of the heavy-hitter protocols: 64-bit integers or short byte strings, and their prefixes.

Every item travels as a ``uint64`` *code* whose low ``m`` bits are the item,
read most significant bit first (``m = item_bits``):

* **integers**: ``item_bits = m`` in ``[1, 64]``; an item is an integer in
  ``[0, 2^m)``;
* **byte strings**: ``item_bytes = L`` in ``[1, 8]``, ``m = 8 L``. A string
  of at most ``L`` bytes is right-padded with zero bytes to ``L`` bytes and
  read big-endian. The zero byte is the terminator: a string must not
  contain ``b"\\x00"``, so the padding is unambiguous and decoding strips the
  trailing zero bytes. ``str`` items are encoded as UTF-8.

Why right padding with a terminator, and no length field: a prefix of the
code's bits is then a prefix of the string (a prefix protocol learns a
string left to right, one byte per 8 bits), and no level is spent on the
length, which a length field in front would cost. ``L <= 8`` because an item
is one ``uint64``; longer strings are the fragment protocols' domain.

The prefix of ``b`` bits of a code is ``code >> (m - b)``
(:func:`prefix`); :func:`extend` appends every ``eta``-bit suffix.

Examples
--------
>>> codec = ItemCodec(item_bytes=4)
>>> codes = codec.encode([b"ab", "abc"])
>>> [hex(int(c)) for c in codes]
['0x61620000', '0x61626300']
>>> codec.decode(codes)
[b'ab', b'abc']
>>> [int(p) for p in prefix(codes, 16, 32)]
[24930, 24930]
>>> [int(x) for x in extend(np.array([1, 2], dtype=np.uint64), 1)]
[2, 3, 4, 5]
"""

from __future__ import annotations

import numbers
from typing import Any, Optional, Sequence, Union

import numpy as np

from .._validation import check_int, param_error

__all__ = ["ItemCodec", "encode_items", "decode_items", "prefix", "extend", "MAX_ITEM_BYTES"]

#: The longest byte string an item holds (one uint64).
MAX_ITEM_BYTES = 8

Item = Union[int, bytes]


class ItemCodec:
    """Encode items to ``uint64`` codes and back (module docstring for the layout).

    Parameters
    ----------
    item_bits : int in [1, 64], optional
        Integer items in ``[0, 2^item_bits)``.
    item_bytes : int in [1, 8], optional
        Byte-string items of at most ``item_bytes`` bytes, no zero byte.
        Exactly one of ``item_bits`` / ``item_bytes``; with neither, integer
        items of 32 bits.
    owner : str
        The class or function named by error messages.

    Examples
    --------
    >>> ItemCodec(item_bits=8).encode([3, 255]).tolist()
    [3, 255]
    >>> ItemCodec(item_bytes=2).decode(np.array([0x6869], dtype=np.uint64))
    [b'hi']
    """

    def __init__(self, *, item_bits: Optional[int] = None, item_bytes: Optional[int] = None,
                 owner: str = "ItemCodec") -> None:
        if item_bits is not None and item_bytes is not None:
            raise param_error("item_bytes", owner, "None when item_bits is given", item_bytes)
        self.owner = owner
        if item_bytes is not None:
            self.item_bytes: Optional[int] = check_int(item_bytes, "item_bytes", owner, low=1,
                                                       high=MAX_ITEM_BYTES)
            self.bits = 8 * self.item_bytes
            self.kind = "bytes"
        else:
            self.item_bytes = None
            self.bits = check_int(32 if item_bits is None else item_bits, "item_bits", owner,
                                  low=1, high=64)
            self.kind = "int"

    def __repr__(self) -> str:
        if self.kind == "bytes":
            return f"ItemCodec(item_bytes={self.item_bytes})"
        return f"ItemCodec(item_bits={self.bits})"

    # ------------------------------------------------------------ encode
    def encode(self, items: Any, name: str = "items") -> np.ndarray:
        """The ``uint64`` codes of ``items`` (a 1-d sequence); ``ValueError`` names a bad one."""
        if self.kind == "bytes":
            return self._encode_bytes(items, name)
        return self._encode_ints(items, name)

    def _encode_ints(self, items, name):
        expected = f"a 1-d array of integers in [0, 2**{self.bits})"
        if isinstance(items, np.ndarray) and items.dtype.kind in "iu":
            arr = items
        else:
            try:
                arr = np.asarray(items)
            except (TypeError, ValueError):
                raise param_error(name, self.owner, expected, items, TypeError) from None
            if arr.dtype == object and arr.ndim == 1:  # Python ints beyond int64
                try:
                    vals = [operator_index(v) for v in arr]
                except TypeError:
                    raise param_error(name, self.owner, expected, items, TypeError) from None
                for j, v in enumerate(vals):
                    if not 0 <= v < 2**self.bits:
                        raise param_error(name, self.owner, expected, f"{v} at index {j}")
                return np.array(vals, dtype=np.uint64)
        if arr.ndim != 1 or arr.dtype.kind not in "iu":
            raise param_error(name, self.owner, expected, items, TypeError)
        if arr.dtype.kind == "i" and arr.size and int(arr.min()) < 0:
            j = int(np.argmin(arr))
            raise param_error(name, self.owner, expected, f"{int(arr[j])} at index {j}")
        codes = arr.astype(np.uint64)
        if self.bits < 64 and codes.size:
            bad = np.flatnonzero(codes >> np.uint64(self.bits))
            if bad.size:
                j = int(bad[0])
                raise param_error(name, self.owner, expected, f"{int(codes[j])} at index {j}")
        return codes

    def _encode_bytes(self, items, name):
        L = int(self.item_bytes)  # type: ignore[arg-type]
        expected = (f"a sequence of byte strings (or str, UTF-8) of at most {L} bytes "
                    "without a zero byte")
        if isinstance(items, (bytes, str)) or not isinstance(items, (Sequence, np.ndarray)):
            raise param_error(name, self.owner, expected, items, TypeError)
        out = np.empty(len(items), dtype=np.uint64)
        for j, item in enumerate(items):
            if isinstance(item, str):
                item = item.encode("utf-8")
            elif isinstance(item, (np.bytes_, bytearray, memoryview)):
                item = bytes(item)
            if not isinstance(item, bytes):
                raise param_error(name, self.owner, expected, f"{item!r} at index {j}",
                                  TypeError)
            if len(item) > L or b"\x00" in item:
                raise param_error(name, self.owner, expected, f"{item!r} at index {j}")
            out[j] = int.from_bytes(item.ljust(L, b"\x00"), "big")
        return out

    # ------------------------------------------------------------ decode
    def decode(self, codes: Any) -> Any:
        """Items of ``codes``: a ``uint64`` array (integers) or a list of ``bytes``."""
        codes = np.asarray(codes, dtype=np.uint64)
        if self.kind == "int":
            return codes.copy()
        L = int(self.item_bytes)  # type: ignore[arg-type]
        return [int(c).to_bytes(L, "big").rstrip(b"\x00") for c in codes]

    def label(self, code: Any) -> str:
        """A short text label of one code: the decimal integer, the string when it is
        printable UTF-8, else the ``repr`` of its bytes."""
        if self.kind == "int":
            return str(int(code))
        L = int(self.item_bytes)  # type: ignore[arg-type]
        raw = int(code).to_bytes(L, "big").rstrip(b"\x00")
        try:
            text = raw.decode("utf-8")
        except UnicodeDecodeError:
            return repr(raw)
        return text if text.isprintable() else repr(raw)


def operator_index(v: Any) -> int:
    if isinstance(v, (bool, np.bool_)) or not isinstance(v, numbers.Integral):
        raise TypeError(v)
    return int(v)


def encode_items(items: Any, *, item_bits: Optional[int] = None,
                 item_bytes: Optional[int] = None, owner: str = "encode_items") -> np.ndarray:
    """``ItemCodec(item_bits=..., item_bytes=...).encode(items)``."""
    return ItemCodec(item_bits=item_bits, item_bytes=item_bytes, owner=owner).encode(items)


def decode_items(codes: Any, *, item_bits: Optional[int] = None,
                 item_bytes: Optional[int] = None) -> Any:
    """``ItemCodec(item_bits=..., item_bytes=...).decode(codes)``."""
    return ItemCodec(item_bits=item_bits, item_bytes=item_bytes, owner="decode_items").decode(codes)


def prefix(codes: Any, bits: int, item_bits: int) -> np.ndarray:
    """The top ``bits`` bits of each ``item_bits``-bit code: ``code >> (item_bits - bits)``.

    ``bits = 0`` gives 0 (the empty prefix), ``bits = item_bits`` the code.
    """
    item_bits = check_int(item_bits, "item_bits", "prefix", low=1, high=64)
    bits = check_int(bits, "bits", "prefix", low=0, high=item_bits)
    codes = np.asarray(codes, dtype=np.uint64)
    if bits == 0:
        return np.zeros(codes.shape, dtype=np.uint64)
    return codes >> np.uint64(item_bits - bits)


def extend(prefixes: Any, eta: int) -> np.ndarray:
    """Every prefix followed by every ``eta``-bit suffix, ``(p << eta) | t``, sorted.

    The prefixes must be sorted and distinct for the output to be; shape
    ``(len(prefixes) * 2^eta,)``.
    """
    eta = check_int(eta, "eta", "extend", low=0, high=63)
    prefixes = np.asarray(prefixes, dtype=np.uint64)
    suffix = np.arange(1 << eta, dtype=np.uint64)
    return ((prefixes[:, None] << np.uint64(eta)) | suffix[None, :]).ravel()
