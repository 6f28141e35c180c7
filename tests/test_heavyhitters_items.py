"""Item encoding of the heavy-hitter family (fastldp.heavyhitters.items) against plain Python."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastldp.heavyhitters.items import ItemCodec, decode_items, encode_items, extend, prefix


@settings(max_examples=60, deadline=None)
@given(st.lists(st.binary(min_size=0, max_size=5).filter(lambda b: b"\x00" not in b),
                max_size=20))
def test_strings_round_trip_and_read_big_endian_right_padded(words):
    codes = encode_items(words, item_bytes=5)
    # naive twin: pad on the right to 5 bytes, read big-endian
    assert codes.tolist() == [int.from_bytes(w + b"\x00" * (5 - len(w)), "big") for w in words]
    assert decode_items(codes, item_bytes=5) == words


@settings(max_examples=60, deadline=None)
@given(st.integers(1, 64), st.data())
def test_prefix_is_the_top_bits_of_the_bit_string(m, data):
    values = data.draw(st.lists(st.integers(0, 2**m - 1), min_size=1, max_size=10))
    bits = data.draw(st.integers(0, m))
    codes = encode_items(values, item_bits=m)
    want = [int(format(v, f"0{m}b")[:bits] or "0", 2) for v in values]  # the string's prefix
    assert prefix(codes, bits, m).tolist() == want


def test_string_prefixes_are_string_prefixes():
    codes = encode_items([b"abcd", b"abx"], item_bytes=4)
    assert prefix(codes, 16, 32).tolist() == [int.from_bytes(b"ab", "big")] * 2
    assert prefix(codes, 24, 32).tolist() == [int.from_bytes(b"abc", "big"),
                                              int.from_bytes(b"abx", "big")]


def test_extend_appends_every_suffix_in_order():
    out = extend(np.array([3, 5], dtype=np.uint64), 2)
    assert out.tolist() == [(p << 2) | t for p in (3, 5) for t in range(4)]
    assert extend(np.array([2**61], dtype=np.uint64), 2).tolist() == [2**63 + t for t in range(4)]


def test_str_items_are_utf8_and_labels():
    codec = ItemCodec(item_bytes=4)
    codes = codec.encode(["é", "ab"])
    assert codec.decode(codes) == ["é".encode(), b"ab"]
    assert [codec.label(c) for c in codes] == ["é", "ab"]
    assert codec.label(codec.encode([b"a\x01"])[0]) == "b'a\\x01'"  # unprintable: the repr
    assert ItemCodec(item_bits=64).label(np.uint64(2**64 - 1)) == str(2**64 - 1)


def test_64_bit_integers_beyond_int64():
    codes = encode_items([2**64 - 1, 2**63], item_bits=64)
    assert codes.tolist() == [2**64 - 1, 2**63]
    assert encode_items(np.array([2**64 - 1], dtype=np.uint64), item_bits=64).tolist() == [2**64 - 1]


@pytest.mark.parametrize("items, kwargs, exc, match", [
    ([256], {"item_bits": 8}, ValueError, r"256 at index 0"),
    ([1, -1], {"item_bits": 8}, ValueError, r"-1 at index 1"),
    ([2**64], {"item_bits": 64}, ValueError, r"at index 0"),
    ([1.5], {"item_bits": 8}, TypeError, r"'items' parameter"),
    ([b"toolong"], {"item_bytes": 4}, ValueError, r"b'toolong' at index 0"),
    ([b"a\x00b"], {"item_bytes": 4}, ValueError, r"without a zero byte"),
    ([3], {"item_bytes": 4}, TypeError, r"3 at index 0"),
    (b"abc", {"item_bytes": 4}, TypeError, r"'items' parameter"),
])
def test_bad_items_name_the_parameter_and_index(items, kwargs, exc, match):
    with pytest.raises(exc, match=match):
        encode_items(items, owner="X", **kwargs)


@pytest.mark.parametrize("kwargs, match", [
    ({"item_bits": 0}, "'item_bits' parameter of X must be an int in \\[1, 64\\]"),
    ({"item_bytes": 9}, "'item_bytes' parameter of X must be an int in \\[1, 8\\]"),
    ({"item_bits": 8, "item_bytes": 1}, "'item_bytes' parameter of X"),
])
def test_bad_codecs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ItemCodec(owner="X", **kwargs)


def test_bad_prefix_lengths():
    with pytest.raises(ValueError, match="'bits' parameter of prefix"):
        prefix(np.zeros(1, dtype=np.uint64), 9, 8)
