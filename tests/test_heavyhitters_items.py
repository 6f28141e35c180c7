"""Item encoding of the heavy-hitter family (fastldp.heavyhitters.items) against plain Python."""

from __future__ import annotations

import random

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fastldp._kernels._hash import philox4x64_10
from fastldp.heavyhitters.items import (
    MAX_ITEM_BYTES, ItemCodec, code_order, decode_items, encode_items, extend, prefix,
    prefix_keys, string_prefix_mask, top_k_order, unique_codes,
)


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
    ({"item_bytes": 65}, "'item_bytes' parameter of X must be an int in \\[1, 64\\]"),
    ({"item_bits": 8, "item_bytes": 1}, "'item_bytes' parameter of X"),
])
def test_bad_codecs(kwargs, match):
    with pytest.raises(ValueError, match=match):
        ItemCodec(owner="X", **kwargs)


def test_bad_prefix_lengths():
    with pytest.raises(ValueError, match="'bits' parameter of prefix"):
        prefix(np.zeros(1, dtype=np.uint64), 9, 8)



# ---------------------------------------------------------------- long items (> 64 bits)
# Naive twins: a code of width b is the Python int sum_w row[w] << 64 (W - 1 - w).

def as_ints(codes, width):
    """Python ints of codes of ``width`` bits (checks the layout on the way)."""
    arr = np.asarray(codes)
    assert arr.dtype == np.uint64
    if width <= 64:
        assert arr.ndim == 1
        return [int(v) for v in arr]
    W = -(-width // 64)
    assert arr.ndim == 2 and arr.shape[1] == W and arr.flags.c_contiguous
    return [sum(int(w) << (64 * (W - 1 - t)) for t, w in enumerate(row)) for row in arr]


def from_ints(values, width):
    if width <= 64:
        return np.array(values, dtype=np.uint64)
    W = -(-width // 64)
    return np.array([[(v >> (64 * (W - 1 - t))) & (2**64 - 1) for t in range(W)]
                     for v in values], dtype=np.uint64).reshape(len(values), W)


def test_max_item_bytes_is_64():
    assert MAX_ITEM_BYTES == 64
    assert ItemCodec(item_bytes=64).words == 8 and ItemCodec(item_bytes=9).words == 2
    assert ItemCodec(item_bytes=8).words == 1 and ItemCodec(item_bits=64).words == 1


@settings(max_examples=60, deadline=None)
@given(st.integers(9, 64), st.data())
def test_long_strings_are_right_aligned_big_endian_words(L, data):
    words = data.draw(st.lists(st.binary(min_size=0, max_size=L).filter(
        lambda b: b"\x00" not in b), min_size=1, max_size=8))
    codec = ItemCodec(item_bytes=L)
    codes = codec.encode(words)
    # naive twin: pad on the right to L bytes, read big-endian as one integer
    assert as_ints(codes, 8 * L) == [int.from_bytes(w.ljust(L, b"\x00"), "big") for w in words]
    assert codec.decode(codes) == words
    assert [codec.label(row) for row in codes] == [naive_label(w) for w in words]


def naive_label(w):
    try:
        text = w.decode("utf-8")
    except UnicodeDecodeError:
        return repr(w)
    return text if text.isprintable() else repr(w)


def test_long_string_errors_and_decode_shape():
    codec = ItemCodec(item_bytes=12, owner="X")
    with pytest.raises(ValueError, match=r"at most 12 bytes .* at index 1"):
        codec.encode([b"a", b"x" * 13])
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        codec.decode(np.zeros(3, dtype=np.uint64))
    assert codec.encode([]).shape == (0, 2)


@settings(max_examples=80, deadline=None)
@given(st.integers(65, 512), st.data())
def test_long_prefix_is_the_top_bits(m, data):
    values = data.draw(st.lists(st.integers(0, 2**m - 1), min_size=1, max_size=6))
    bits = data.draw(st.sampled_from(sorted({0, 1, 3, 63, 64, 65, 128, m - 1, m,
                                             data.draw(st.integers(0, m))} & set(range(m + 1)))))
    got = prefix(from_ints(values, m), bits, m)
    assert as_ints(got, bits) == [v >> (m - bits) for v in values]


@settings(max_examples=80, deadline=None)
@given(st.integers(0, 500), st.integers(0, 12), st.data())
def test_long_extend_appends_every_suffix_parent_major(bits, eta, data):
    width = bits + eta
    if width > 512:
        return
    values = sorted(set(data.draw(st.lists(st.integers(0, 2**bits - 1), min_size=1,
                                           max_size=4))))
    got = extend(from_ints(values, bits), eta, bits=bits)
    want = [(v << eta) | t for v in values for t in range(1 << eta)]
    assert as_ints(got, width) == want
    if bits <= 64 and width <= 64:  # the old 1-d call, without bits, agrees
        assert extend(from_ints(values, bits), eta).tolist() == want


def test_extend_crossing_64_bits_needs_bits():
    p = np.array([2**62 + 5], dtype=np.uint64)
    assert as_ints(extend(p, 4, bits=63), 67) == [((2**62 + 5) << 4) | t for t in range(16)]
    with pytest.raises(ValueError, match="'bits' parameter of extend"):
        extend(from_ints([1], 100), 2)


def naive_key(value, bits):
    """2^63 | (h << 3) | (v & 7): the Philox chain over the words of v >> 3 (plain ints)."""
    W = -(-bits // 64)
    q = value >> 3
    k0, k1 = bits, W
    blk = None
    for t in range(W):
        word = (q >> (64 * (W - 1 - t))) & (2**64 - 1)
        blk = [int(x) for x in philox4x64_10([word, t, 0x7072656669786B65, 0], [k0, k1])]
        k0, k1 = blk[0], blk[1]
    return (1 << 63) | ((blk[2] >> 4) << 3) | (value & 7)


@settings(max_examples=60, deadline=None)
@given(st.integers(65, 512), st.data())
def test_prefix_keys_of_long_prefixes(bits, data):
    values = data.draw(st.lists(st.integers(0, 2**bits - 1), min_size=1, max_size=5))
    keys = prefix_keys(from_ints(values, bits), bits)
    assert keys.dtype == np.uint64 and keys.ndim == 1
    assert keys.tolist() == [naive_key(v, bits) for v in values]
    for v, key in zip(values, keys.tolist()):
        assert key >> 63 == 1 and key & 7 == v & 7
    # the 8 siblings of a prefix share (key >> 3): one Philox block of the OLH hash
    base = values[0] & ~7
    sib = prefix_keys(from_ints([base | t for t in range(8)], bits), bits)
    assert len({int(x) >> 3 for x in sib}) == 1 and [int(x) & 7 for x in sib] == list(range(8))


@settings(max_examples=40, deadline=None)
@given(st.integers(0, 64), st.data())
def test_prefix_keys_of_short_prefixes_are_the_prefixes(bits, data):
    values = data.draw(st.lists(st.integers(0, 2**bits - 1), max_size=6))
    assert prefix_keys(np.array(values, dtype=np.uint64), bits).tolist() == values


def test_prefix_keys_distinct_and_width_dependent():
    rng = np.random.default_rng(0)
    codes = rng.integers(0, 2**63, size=(20000, 2), dtype=np.uint64)
    keys = prefix_keys(codes, 128)
    assert np.unique(codes, axis=0).shape[0] == np.unique(keys).shape[0]
    # the same values read as prefixes of another width hash apart (bits is in the hash)
    assert not np.any(prefix_keys(codes, 127) >> np.uint64(3) == keys >> np.uint64(3))


@settings(max_examples=60, deadline=None)
@given(st.sampled_from([7, 64, 65, 130, 512]), st.data())
def test_order_top_k_and_unique_against_sorted_ints(width, data):
    values = data.draw(st.lists(st.integers(0, 2**width - 1), max_size=12))
    values += data.draw(st.lists(st.sampled_from(values), max_size=4)) if values else []
    counts = data.draw(st.lists(st.integers(0, 3), min_size=len(values),
                                max_size=len(values)))
    codes = from_ints(values, width)
    order = code_order(codes)
    assert [values[i] for i in order] == sorted(values)
    assert list(order) == sorted(range(len(values)), key=lambda i: values[i])  # stable
    keep = data.draw(st.integers(0, len(values)))
    want = sorted(range(len(values)), key=lambda i: (-counts[i], values[i]))[:keep]
    got = top_k_order(codes, np.array(counts, dtype=np.float64), keep)
    assert [(counts[i], values[i]) for i in got] == [(counts[i], values[i]) for i in want]
    uniq, cnt = unique_codes(codes, return_counts=True)
    assert as_ints(uniq, width) == sorted(set(values))
    assert cnt.tolist() == [values.count(v) for v in sorted(set(values))]
    assert as_ints(unique_codes(codes), width) == sorted(set(values))


def test_long_codes_on_random_full_width_values():
    # seeded draws of full-width values (every word busy), every shift class mod 64
    rnd = random.Random(20261201)
    for _ in range(120):
        m = rnd.randint(65, 512)
        values = [rnd.getrandbits(m) for _ in range(4)]
        bits = rnd.randint(0, m)
        assert as_ints(prefix(from_ints(values, m), bits, m), bits) == \
            [v >> (m - bits) for v in values]
        eta = rnd.randint(0, 12)
        if m + eta <= 512:
            assert as_ints(extend(from_ints(values, m), eta, bits=m), m + eta) == \
                [(v << eta) | t for v in values for t in range(1 << eta)]
        if bits > 64:
            pre = [v >> (m - bits) for v in values]
            assert prefix_keys(from_ints(pre, bits), bits).tolist() == \
                [naive_key(v, bits) for v in pre]
    for bits in range(1, 64):  # 1-d prefixes whose children cross 64 bits
        values = [rnd.getrandbits(bits) for _ in range(3)]
        eta = 65 - bits + rnd.randint(0, 3) if bits > 52 else 4
        assert as_ints(extend(from_ints(values, bits), eta, bits=bits), bits + eta) == \
            [(v << eta) | t for v in values for t in range(1 << eta)]


def test_vocabulary_and_word_items_take_long_words():
    from fastldp.heavyhitters import data

    words16 = data.vocabulary(item_bytes=16)
    # naive twin: the corpus words of at most 16 letters, most frequent first
    assert words16 == [w.encode() for w, _ in data.word_counts() if len(w) <= 16]
    assert any(len(w) > 8 for w in words16) and data.vocabulary(8) == \
        [w for w in words16 if len(w) <= 8]
    drawn = data.word_items(500, item_bytes=16, rng=1)
    assert all(w in set(words16) for w in drawn)
    with pytest.raises(ValueError, match=r"'item_bytes' parameter of vocabulary must be an int "
                                         r"in \[1, 64\]"):
        data.vocabulary(65)
    # true_top_k on 2-d codes: counts and order as plain Python computes them
    codec = ItemCodec(item_bytes=16)
    codes, counts = data.true_top_k(codec.encode(drawn), 5)
    tally = {}
    for w in drawn:
        tally[w] = tally.get(w, 0) + 1
    want = sorted(tally, key=lambda w: (-tally[w], w.ljust(16, b"\x00")))[:5]
    assert codec.decode(codes) == want and counts.tolist() == [tally[w] for w in want]


def test_top_k_order_takes_unsigned_counts():
    codes = from_ints([5, 3, 9], 100)
    assert top_k_order(codes, np.array([1, 7, 7], dtype=np.uint64), 2).tolist() == [1, 2]
    assert top_k_order(np.array([5, 3, 9], dtype=np.uint64),
                       np.array([1, 7, 7], dtype=np.uint8), 3).tolist() == [1, 2, 0]


def _possible_string_twin(v: int, bits: int) -> bool:
    """Python-int twin: no set bit after the first whole zero byte of the prefix."""
    n_bytes, tail = divmod(bits, 8)
    seen = False
    for i in range(n_bytes):
        octet = (v >> (bits - 8 * (i + 1))) & 0xFF
        if seen and octet:
            return False
        seen = seen or octet == 0
    return not (seen and tail and v & ((1 << tail) - 1))


@pytest.mark.parametrize("bits", [1, 8, 9, 16, 23, 40, 63, 64, 65, 72, 100, 128, 130, 512])
def test_string_prefix_mask_matches_the_python_twin(bits):
    rng = np.random.default_rng(bits)
    vals = []
    for _ in range(300):
        v = int.from_bytes(rng.bytes((bits + 7) // 8), "big") >> (8 * ((bits + 7) // 8) - bits)
        if bits >= 8 and rng.random() < 0.7:  # a zero byte, often followed by zero bits only
            shift = bits - 8 * (int(rng.integers(bits // 8)) + 1)
            v &= ~(0xFF << shift)
            if rng.random() < 0.5:
                v &= ~((1 << shift) - 1)
        vals.append(v)
    W = (bits + 63) // 64
    arr = (np.array(vals, dtype=np.uint64) if bits <= 64 else
           np.array([[(v >> (64 * (W - 1 - w))) & (2**64 - 1) for w in range(W)] for v in vals],
                    dtype=np.uint64))
    expected = [_possible_string_twin(v, bits) for v in vals]
    if bits >= 16:  # both kinds occur (under 16 bits every prefix is possible)
        assert 0 < sum(expected) < len(vals)
    assert string_prefix_mask(arr, bits).tolist() == expected


@pytest.mark.parametrize("cls", ["PEM", "TreeHist", "SFP"])
def test_decodes_never_return_an_impossible_string(cls):
    # 30,000 words, k = 16 at eps = 4: the lower part of the top 16 is noise, which before the
    # servers dropped impossible candidates included strings such as b"is\x00\x00\x00\x0e"
    # (8 of PEM's 16 here, when measured without the mask)
    import fastldp.heavyhitters as hh
    from fastldp.heavyhitters.data import word_items

    proto = getattr(hh, cls)(epsilon=4.0, k=16, item_bytes=6, codebook_seed=4)
    result = proto.estimate(proto.privatize(word_items(30000, item_bytes=6, rng=5), rng=6))
    assert len(result.items) > 0
    assert all(b"\x00" not in item for item in result.items), result.items
