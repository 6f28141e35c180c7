"""Items of the heavy-hitter protocols: 64-bit integers or byte strings, and their prefixes.

An item of ``m = item_bits`` bits travels as a *code*, read most significant
bit first:

* **integers**: ``item_bits = m`` in ``[1, 64]``; an item is an integer in
  ``[0, 2^m)``;
* **byte strings**: ``item_bytes = L`` in ``[1, 64]``, ``m = 8 L``. A string
  of at most ``L`` bytes is right-padded with zero bytes to ``L`` bytes and
  read big-endian. The zero byte is the terminator: a string must not
  contain ``b"\\x00"``, so the padding is unambiguous and decoding strips the
  trailing zero bytes. ``str`` items are encoded as UTF-8.

Layout of codes (and of prefixes of ``b`` bits, whose width is ``b``):

* width ``<= 64``: a 1-d ``uint64`` array ``(n,)``, the value itself;
* width ``> 64``: a 2-d C-contiguous ``uint64`` array ``(n, W)``,
  ``W = ceil(width / 64)`` words, word 0 the most significant, the value
  right-aligned: ``value = sum_w codes[:, w] << 64 (W - 1 - w)``.

Why right padding with a terminator, and no length field: a prefix of the
code's bits is then a prefix of the string (a prefix protocol learns a
string left to right, one byte per 8 bits), and no level is spent on the
length, which a length field in front would cost.

The prefix of ``b`` bits of a code is ``code >> (m - b)`` (:func:`prefix`);
:func:`extend` appends every ``eta``-bit suffix. A frequency oracle hashes a
prefix through one ``uint64`` *key* (:func:`prefix_keys`): the prefix itself
when ``b <= 64`` (so short items hash exactly as before), else
``2^63 | (h << 3) | (prefix & 7)``, ``h`` a public 60-bit Philox hash of
``(b, prefix >> 3)`` (:func:`~fastldp._kernels._heavy.heavy_prefix_keys`).
The 8 prefixes that differ only in their low 3 bits share ``h``, hence one
Philox block of the OLH hash (the support kernel's runs of 8); two distinct
prefixes of one width get one key with probability ``2^-60`` (``h`` modelled
as a random function), and a candidate list of ``C`` prefixes has a
colliding pair with probability at most ``C^2 2^-61``. A collision only
merges two candidates' supports, it does not change any report.

:func:`code_order`, :func:`top_k_order` and :func:`unique_codes` sort,
rank and deduplicate codes of either layout.

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
>>> long = ItemCodec(item_bytes=12)
>>> codes = long.encode([b"heavy hitter", b"heavy"])
>>> codes.shape, long.words
((2, 2), 2)
>>> [int(p).to_bytes(5, "big") for p in prefix(codes, 40, 96)]   # 5 bytes: 1-d
[b'heavy', b'heavy']
>>> prefix(codes, 72, 96).shape                                   # 9 bytes: 2 words
(2, 2)
>>> bool(prefix_keys(prefix(codes, 72, 96), 72)[0] >> 63)        # a hashed key
True
"""

from __future__ import annotations

import numbers
from typing import Any, Optional, Sequence, Union

import numpy as np

from .._kernels._heavy import heavy_prefix_keys
from .._validation import check_int, param_error

__all__ = ["ItemCodec", "encode_items", "decode_items", "prefix", "extend", "prefix_keys",
           "string_prefix_mask", "utf8_prefix_mask", "ended_mask",
           "code_order", "top_k_order", "unique_codes", "code_words", "MAX_ITEM_BYTES"]

#: The longest byte string an item holds (8 words of 64 bits).
MAX_ITEM_BYTES = 64

#: The widest code, in bits.
MAX_ITEM_BITS = 8 * MAX_ITEM_BYTES

Item = Union[int, bytes]


def code_words(bits: int) -> int:
    """``W = ceil(bits / 64)``: the words of a code of width ``bits`` (1 for ``bits <= 64``)."""
    return max(1, -(-int(bits) // 64))


def _as_words(codes: Any, name: str, owner: str) -> np.ndarray:
    """``codes`` as a 2-d C-contiguous uint64 array (a 1-d array is one word per code)."""
    arr = np.asarray(codes)
    if arr.ndim == 1:
        return np.ascontiguousarray(arr, dtype=np.uint64)[:, None]
    if arr.ndim != 2 or arr.shape[1] < 1:
        raise param_error(name, owner, "a 1-d or 2-d array of uint64 codes",
                          f"an array of shape {arr.shape}")
    return np.ascontiguousarray(arr, dtype=np.uint64)


def _layout(words: np.ndarray, bits: int) -> np.ndarray:
    """The layout of width ``bits`` (1-d when ``bits <= 64``) of a 2-d array of words."""
    if bits <= 64:
        return np.ascontiguousarray(words[:, -1])
    return np.ascontiguousarray(words)


class ItemCodec:
    """Encode items to codes and back (module docstring for the layout).

    Parameters
    ----------
    item_bits : int in [1, 64], optional
        Integer items in ``[0, 2^item_bits)``.
    item_bytes : int in [1, 64], optional
        Byte-string items of at most ``item_bytes`` bytes, no zero byte.
        Exactly one of ``item_bits`` / ``item_bytes``; with neither, integer
        items of 32 bits.
    owner : str
        The class or function named by error messages.

    Attributes
    ----------
    bits : int
        ``m``, the width of a code (``8 item_bytes`` for strings).
    words : int
        ``ceil(bits / 64)``: 1 (1-d codes) up to 8 bytes, else the columns
        of the 2-d codes.

    Examples
    --------
    >>> ItemCodec(item_bits=8).encode([3, 255]).tolist()
    [3, 255]
    >>> ItemCodec(item_bytes=2).decode(np.array([0x6869], dtype=np.uint64))
    [b'hi']
    >>> codec = ItemCodec(item_bytes=10)
    >>> codes = codec.encode([b"0123456789"])
    >>> [hex(int(w)) for w in codes[0]]
    ['0x3031', '0x3233343536373839']
    >>> codec.label(codes[0])
    '0123456789'
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
        self.words = code_words(self.bits)

    def __repr__(self) -> str:
        if self.kind == "bytes":
            return f"ItemCodec(item_bytes={self.item_bytes})"
        return f"ItemCodec(item_bits={self.bits})"

    # ------------------------------------------------------------ encode
    def encode(self, items: Any, name: str = "items") -> np.ndarray:
        """The codes of ``items`` (a 1-d sequence): 1-d uint64, or ``(n, words)`` when
        ``bits > 64``; ``ValueError`` names a bad item."""
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
        if L <= 8:
            out = np.empty(len(items), dtype=np.uint64)
        else:
            rows = []
            lead = b"\x00" * (8 * self.words - L)  # right-aligned in the words
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
            if L <= 8:
                out[j] = int.from_bytes(item.ljust(L, b"\x00"), "big")
            else:
                rows.append(lead + item.ljust(L, b"\x00"))
        if L <= 8:
            return out
        return np.frombuffer(b"".join(rows), dtype=">u8").reshape(
            len(rows), self.words).astype(np.uint64)

    # ------------------------------------------------------------ decode
    def _check_codes(self, codes: Any) -> np.ndarray:
        arr = np.asarray(codes, dtype=np.uint64)
        want = 1 if self.words == 1 else 2
        if arr.ndim != want or (want == 2 and arr.shape[1] != self.words):
            shape = "(n,)" if want == 1 else f"(n, {self.words})"
            raise param_error("codes", f"{self.owner} (decode)",
                              f"an array of shape {shape} for {self.bits}-bit items",
                              f"an array of shape {arr.shape}")
        return arr

    def decode(self, codes: Any) -> Any:
        """Items of ``codes``: a ``uint64`` array (integers) or a list of ``bytes``."""
        codes = self._check_codes(codes)
        if self.kind == "int":
            return codes.copy()
        L = int(self.item_bytes)  # type: ignore[arg-type]
        if self.words == 1:
            return [int(c).to_bytes(L, "big").rstrip(b"\x00") for c in codes]
        raw = codes.astype(">u8").tobytes()
        size = 8 * self.words
        return [raw[i * size + size - L:(i + 1) * size].rstrip(b"\x00")
                for i in range(codes.shape[0])]

    def label(self, code: Any) -> str:
        """A short text label of one code (a scalar, or a row of words when ``bits > 64``):
        the decimal integer, the string when it is printable UTF-8, else the ``repr`` of
        its bytes."""
        if self.kind == "int":
            return str(int(code))
        raw = self.decode(np.asarray(code, dtype=np.uint64).reshape(
            (1,) if self.words == 1 else (1, self.words)))[0]
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


def _shift_right(words: np.ndarray, shift: int, out_words: int) -> np.ndarray:
    """The low ``out_words`` words of ``value >> shift`` (2-d, most significant word first)."""
    n, W = words.shape
    q, r = divmod(shift, 64)
    ls = words[:, ::-1]  # least significant first
    out = np.zeros((n, out_words), dtype=np.uint64)
    for t in range(out_words):  # out word t, least significant first
        if t + q < W:
            out[:, t] = ls[:, t + q] >> np.uint64(r)
            if r and t + q + 1 < W:
                out[:, t] |= ls[:, t + q + 1] << np.uint64(64 - r)
    return np.ascontiguousarray(out[:, ::-1])


def prefix(codes: Any, bits: int, item_bits: int) -> np.ndarray:
    """The top ``bits`` bits of each ``item_bits``-bit code: ``code >> (item_bits - bits)``.

    ``bits = 0`` gives 0 (the empty prefix), ``bits = item_bits`` the code.
    ``codes`` are of width ``item_bits`` (1-d up to 64 bits, else
    ``(n, ceil(item_bits / 64))``); the result is of width ``bits`` (1-d up to
    64 bits, else ``(n, ceil(bits / 64))``).
    """
    item_bits = check_int(item_bits, "item_bits", "prefix", low=1, high=MAX_ITEM_BITS)
    bits = check_int(bits, "bits", "prefix", low=0, high=item_bits)
    if item_bits <= 64:
        codes = np.asarray(codes, dtype=np.uint64)
        if bits == 0:
            return np.zeros(codes.shape, dtype=np.uint64)
        return codes >> np.uint64(item_bits - bits)
    words = _as_words(codes, "codes", "prefix")
    if words.shape[1] != code_words(item_bits):
        raise param_error("codes", "prefix",
                          f"an array of shape (n, {code_words(item_bits)}) for "
                          f"item_bits={item_bits}", f"an array of shape {words.shape}")
    if bits == 0:
        return np.zeros(words.shape[0], dtype=np.uint64)
    return _layout(_shift_right(words, item_bits - bits, code_words(bits)), bits)


def extend(prefixes: Any, eta: int, bits: Optional[int] = None) -> np.ndarray:
    """Every prefix followed by every ``eta``-bit suffix, ``(p << eta) | t``, parent-major.

    The prefixes are of width ``bits``; the result is of width ``bits + eta``
    (1-d up to 64 bits, else ``(len(prefixes) * 2^eta, ceil((bits + eta) / 64))``).
    The prefixes must be sorted and distinct (:func:`code_order`) for the
    output to be. ``bits`` is needed when the prefixes are 2-d, or 1-d with
    ``bits + eta > 64``; without it a 1-d input is extended in 64 bits
    (the behaviour for short items).
    """
    eta = check_int(eta, "eta", "extend", low=0, high=63)
    suffix = np.arange(1 << eta, dtype=np.uint64)
    arr = np.asarray(prefixes)
    if bits is None:
        if arr.ndim != 1:
            raise param_error("bits", "extend", "the prefixes' width (an int) when they are 2-d",
                              bits)
        prefixes = np.asarray(prefixes, dtype=np.uint64)
        return ((prefixes[:, None] << np.uint64(eta)) | suffix[None, :]).ravel()
    bits = check_int(bits, "bits", "extend", low=0, high=MAX_ITEM_BITS - eta)
    width = bits + eta
    if arr.ndim == 1 and width <= 64:
        prefixes = np.asarray(prefixes, dtype=np.uint64)
        return ((prefixes[:, None] << np.uint64(eta)) | suffix[None, :]).ravel()
    words = _as_words(arr, "prefixes", "extend")
    if words.shape[1] != code_words(bits):
        raise param_error("prefixes", "extend",
                          f"an array of {code_words(bits)} words per prefix for bits={bits}",
                          f"an array of shape {np.asarray(prefixes).shape}")
    n, W = words.shape
    out_w = code_words(width)
    ls = words[:, ::-1]
    shifted = np.zeros((n, out_w), dtype=np.uint64)  # value << eta, least significant first
    for t in range(out_w):
        if t < W:
            shifted[:, t] = ls[:, t] << np.uint64(eta)
        if eta and 0 <= t - 1 < W:
            shifted[:, t] |= ls[:, t - 1] >> np.uint64(64 - eta)
    out = np.repeat(shifted[:, ::-1], 1 << eta, axis=0)
    out[:, -1] |= np.tile(suffix, n)
    return _layout(out, width)


def prefix_keys(prefixes: Any, bits: int) -> np.ndarray:
    """The ``uint64`` key a frequency oracle hashes for each prefix of width ``bits``.

    ``bits <= 64``: the prefix itself (short items hash as before).
    ``bits > 64``: ``2^63 | (h << 3) | (prefix & 7)``, ``h`` a public 60-bit
    hash of ``(bits, prefix >> 3)`` (module docstring;
    :func:`~fastldp._kernels._heavy.heavy_prefix_keys`).
    """
    bits = check_int(bits, "bits", "prefix_keys", low=0, high=MAX_ITEM_BITS)
    if bits <= 64:
        arr = np.asarray(prefixes)
        if arr.ndim == 2 and arr.shape[1] == 1:
            arr = arr[:, 0]
        if arr.ndim != 1:
            raise param_error("prefixes", "prefix_keys", f"a 1-d array for bits={bits}",
                              f"an array of shape {arr.shape}")
        return np.ascontiguousarray(arr, dtype=np.uint64)
    words = _as_words(prefixes, "prefixes", "prefix_keys")
    if words.shape[1] != code_words(bits):
        raise param_error("prefixes", "prefix_keys",
                          f"an array of shape (n, {code_words(bits)}) for bits={bits}",
                          f"an array of shape {words.shape}")
    return heavy_prefix_keys(words, bits)


def code_order(codes: Any) -> np.ndarray:
    """A stable ascending order of codes (``np.argsort`` for 1-d, ``np.lexsort`` over words)."""
    arr = np.asarray(codes)
    if arr.ndim == 1:
        return np.argsort(arr, kind="stable")
    return np.lexsort(arr.T[::-1])


def top_k_order(codes: Any, counts: Any, keep: int) -> np.ndarray:
    """Indices of the ``keep`` largest ``counts``, ties broken by the smaller code.

    For 1-d codes this is ``np.lexsort((codes, -counts))[:keep]``.
    """
    arr = np.asarray(codes)
    neg = np.asarray(counts)
    neg = -(neg.astype(np.int64) if neg.dtype.kind in "ub" else neg)  # no unsigned wrap
    if arr.ndim == 1:
        return np.lexsort((arr, neg))[:keep]
    return np.lexsort((*arr.T[::-1], neg))[:keep]


def unique_codes(codes: Any, return_counts: bool = False) -> Any:
    """Sorted distinct codes (``np.unique``; rows for 2-d codes), with their counts if asked."""
    arr = np.asarray(codes, dtype=np.uint64)
    if arr.ndim == 1:
        return np.unique(arr, return_counts=True) if return_counts else np.unique(arr)
    if arr.shape[0] == 0:
        empty = np.zeros((0, arr.shape[1]), dtype=np.uint64)
        return (empty, np.zeros(0, dtype=np.int64)) if return_counts else empty
    order = code_order(arr)
    srt = arr[order]
    new = np.r_[True, np.any(srt[1:] != srt[:-1], axis=1)]
    out = np.ascontiguousarray(srt[new])
    if not return_counts:
        return out
    starts = np.flatnonzero(new)
    return out, np.diff(np.r_[starts, srt.shape[0]]).astype(np.int64)


def string_prefix_mask(prefixes: Any, bits: int) -> np.ndarray:
    """Which ``bits``-bit prefixes can begin the code of a byte string (bool, one per prefix).

    A string item has no zero byte and is right-padded with zero bytes, so in
    its code every bit after the first zero byte is zero. A prefix is
    possible unless one of its whole bytes is zero and a later bit of it is
    not. The heavy-hitter servers drop impossible candidates at every level
    (no user holds them; only noise can rank them), so an impossible string
    such as ``b"is\\x00\\x0e"`` is never returned.
    ``prefixes`` are of width ``bits`` (1-d up to 64 bits, else 2-d words).
    """
    bits = check_int(bits, "bits", "string_prefix_mask", low=0, high=MAX_ITEM_BITS)
    if bits <= 64:
        arr = np.asarray(prefixes, dtype=np.uint64).reshape(-1)
        n = arr.shape[0]
    else:
        arr = _as_words(prefixes, "prefixes", "string_prefix_mask")
        n = arr.shape[0]
    n_bytes, tail_bits = divmod(bits, 8)
    if n_bytes == 0 or n == 0:
        return np.ones(n, dtype=bool)
    whole = prefix(arr, 8 * n_bytes, bits)  # the prefix's whole bytes, right-aligned
    if 8 * n_bytes <= 64:
        shifts = np.uint64(8) * np.arange(n_bytes - 1, -1, -1, dtype=np.uint64)
        octets = (whole[:, None] >> shifts[None, :]) & np.uint64(0xFF)
    else:  # big-endian bytes of the words; the string's bytes are the last n_bytes
        octets = whole.astype(">u8").view(np.uint8).reshape(n, -1)[:, -n_bytes:]
    zero = octets == 0
    seen = np.logical_or.accumulate(zero, axis=1)
    bad = np.any(seen[:, :-1] & ~zero[:, 1:], axis=1)
    if tail_bits:
        last = arr if bits <= 64 else arr[:, -1]
        tail = last & np.uint64((1 << tail_bits) - 1)
        bad |= seen[:, -1] & (tail != 0)
    return ~bad


def _whole_octets(prefixes: Any, bits: int) -> np.ndarray:
    """The whole bytes of ``bits``-bit prefixes, most significant first: uint8 ``(n, bits // 8)``."""
    if bits <= 64:
        arr = np.asarray(prefixes, dtype=np.uint64).reshape(-1)
    else:
        arr = _as_words(prefixes, "prefixes", "utf8_prefix_mask")
    n_bytes = bits // 8
    n = arr.shape[0]
    if n_bytes == 0 or n == 0:
        return np.zeros((n, 0), dtype=np.uint8)
    whole = prefix(arr, 8 * n_bytes, bits)
    if 8 * n_bytes <= 64:
        shifts = np.uint64(8) * np.arange(n_bytes - 1, -1, -1, dtype=np.uint64)
        return ((whole[:, None] >> shifts[None, :]) & np.uint64(0xFF)).astype(np.uint8)
    return whole.astype(">u8").view(np.uint8).reshape(n, -1)[:, -n_bytes:]


def ended_mask(prefixes: Any, bits: int) -> np.ndarray:
    """Which possible string prefixes have ended: their last whole byte is the zero terminator.

    For a possible prefix (:func:`string_prefix_mask`) every bit after a zero
    byte is zero, so it holds a zero byte exactly when its last whole byte is
    zero; the string it begins is then complete (every later bit is padding).
    """
    octets = _whole_octets(prefixes, bits)
    if octets.shape[1] == 0:
        return np.zeros(octets.shape[0], dtype=bool)
    return octets[:, -1] == 0


def utf8_prefix_mask(prefixes: Any, bits: int, complete: bool = False) -> np.ndarray:
    """Which string prefixes are valid UTF-8 so far (bool, one per prefix).

    The whole bytes up to the zero terminator must be a prefix of valid UTF-8
    (RFC 3629: no overlong form, no surrogate, nothing above U+10FFFF); a
    sequence may be unfinished at the end of the prefix unless the string
    ended there (a zero byte) or ``complete`` is set (a full-length item). The
    low ``bits % 8`` bits of a prefix are not checked (they begin a byte).
    """
    octets = _whole_octets(prefixes, bits)
    n = octets.shape[0]
    ok = np.ones(n, dtype=bool)
    need = np.zeros(n, dtype=np.int8)       # continuation bytes still due
    lo = np.full(n, 0x80, dtype=np.int16)   # range of the next continuation byte
    hi = np.full(n, 0xBF, dtype=np.int16)
    ended = np.zeros(n, dtype=bool)
    for col in range(octets.shape[1]):
        b = octets[:, col].astype(np.int16)
        zero = (b == 0) & ~ended
        ok &= ~(zero & (need > 0))           # the string ended inside a character
        ended |= zero
        live = ~ended
        cont = live & (need > 0)
        ok &= ~(cont & ((b < lo) | (b > hi)))
        need[cont] -= 1
        lo[cont], hi[cont] = 0x80, 0xBF
        lead = live & ~cont
        ascii_ = lead & (b < 0x80)
        two = lead & (b >= 0xC2) & (b <= 0xDF)
        three = lead & (b >= 0xE0) & (b <= 0xEF)
        four = lead & (b >= 0xF0) & (b <= 0xF4)
        ok &= ~(lead & ~(ascii_ | two | three | four))
        need[two], need[three], need[four] = 1, 2, 3
        lo[lead & (b == 0xE0)] = 0xA0
        hi[lead & (b == 0xED)] = 0x9F
        lo[lead & (b == 0xF0)] = 0x90
        hi[lead & (b == 0xF4)] = 0x8F
    if complete:
        ok &= need == 0
    return ok
