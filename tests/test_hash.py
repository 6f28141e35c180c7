"""The counter-based hash: Random123 vectors, numpy.random.Philox, bit layout."""

import csv
from pathlib import Path

import numpy as np
import pytest

from fastldp._kernels import _hash
from _reference import TWO256, numpy_philox_block, numpy_sign_row

KAT = Path(__file__).parent / "data" / "philox4x64_10_kat.csv"


def _kat_rows():
    with KAT.open() as fh:
        rows = [line for line in fh if not line.startswith("#")]
    for row in csv.DictReader(rows):
        yield {key: int(value, 16) for key, value in row.items()}


KAT_ROWS = list(_kat_rows())


def test_kat_file_has_three_vectors():
    assert len(KAT_ROWS) == 3


@pytest.mark.parametrize("row", KAT_ROWS)
def test_random123_known_answers(row):
    ctr = [row[f"ctr{j}"] for j in range(4)]
    key = [row["key0"], row["key1"]]
    out = _hash.philox4x64_10(ctr, key)
    assert [int(x) for x in out] == [row[f"out{j}"] for j in range(4)]


@pytest.mark.parametrize("row", KAT_ROWS)
def test_numpy_philox_reproduces_known_answers(row):
    # Guards the CSV itself: an independent implementation agrees with it.
    counter = sum(row[f"ctr{j}"] << (64 * j) for j in range(4))
    key = row["key0"] + (row["key1"] << 64)
    gen = np.random.Philox(key=key, counter=(counter - 1) % TWO256)
    assert [int(x) for x in gen.random_raw(4)] == [row[f"out{j}"] for j in range(4)]


@pytest.mark.parametrize("seed", [0, 1, 2**64 - 1, 0x0123456789ABCDEF])
@pytest.mark.parametrize("identity", [0, 5, 2**63 + 11, 2**64 - 1])
def test_blocks_match_numpy_philox(seed, identity):
    ours = _hash.hash_blocks(seed, np.array([identity], dtype=np.uint64), 5, 0)[0]
    for b in range(5):
        np.testing.assert_array_equal(ours[b], numpy_philox_block(seed, identity, b))


@pytest.mark.parametrize("stream", [1, 2, 3])
def test_streams_are_counter_word_one(stream):
    ours = _hash.hash_blocks(9, np.array([4], dtype=np.uint64), 3, stream)[0]
    for b in range(3):
        np.testing.assert_array_equal(ours[b], numpy_philox_block(9, 4, b, stream))


def test_pair_signs_follow_documented_layout():
    seed, p = 77, 700
    ids = np.array([0, 3, 2**40], dtype=np.uint64)
    for ident in ids:
        expected = numpy_sign_row(seed, int(ident), p)
        got = _hash.pair_signs(seed, np.full(p, ident, dtype=np.uint64), np.arange(p, dtype=np.int64))
        np.testing.assert_array_equal(got, expected)


def test_signs_are_balanced():
    # 256 * 40 signs of one identity: mean has sd 1/sqrt(10240) ~ 0.0099.
    row = _hash.pair_signs(5, np.full(10240, 1, dtype=np.uint64), np.arange(10240, dtype=np.int64))
    assert abs(row.mean()) < 5 * 0.0099


def test_set_sign_sums_match_naive():
    rng = np.random.default_rng(3)
    seed, p, n = 11, 3000, 50
    ids = rng.integers(0, 2**62, n).astype(np.uint64)
    sizes = rng.integers(0, 9, n)
    indptr = np.concatenate([[0], np.cumsum(sizes)]).astype(np.int64)
    pairs = np.concatenate([np.sort(rng.choice(p, m, replace=False)) for m in sizes]).astype(np.int64)
    got = _hash.set_sign_sums(seed, ids, indptr, pairs, 2)
    for i in range(n):
        row = numpy_sign_row(seed, int(ids[i]), p)
        assert got[i] == row[pairs[indptr[i]:indptr[i + 1]]].sum()


def test_hash_words_layout():
    seed, ident = 3, 8
    items = np.arange(12, dtype=np.int64)
    words = _hash.hash_words(seed, np.full(12, ident, dtype=np.uint64), items, 3)
    for x in range(12):
        assert words[x] == numpy_philox_block(seed, ident, x >> 2, 3)[x & 3]


def test_philox_floor_is_the_fold_of_all_blocks():
    ids = np.arange(6, dtype=np.uint64)
    blocks = _hash.hash_blocks(2, ids, 3, 0)
    expected = int(np.bitwise_xor.reduce(blocks.ravel()))
    assert _hash.philox_floor(2, ids, 3 * 256, 1) == expected
    assert _hash.philox_floor(2, ids, 3 * 256, 2) == expected
