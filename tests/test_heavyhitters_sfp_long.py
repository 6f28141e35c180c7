"""SFP on long items (byte strings of 9 to 64 bytes, codes of several words) and wide paddings."""

import itertools
import math

import numpy as np
import pytest

from fastldp.heavyhitters.items import ItemCodec, prefix_keys
from fastldp.heavyhitters.sfp import SFP
from fastldp.heavyhitters.treehist import fo_hash


def _int(row):
    """The integer of one code (a scalar or a row of words, most significant first)."""
    words = np.atleast_1d(np.asarray(row, dtype=np.uint64)).tolist()
    out = 0
    for w in words:
        out = (out << 64) | int(w)
    return out


def _naive_fragment(value, t, m, f, P):
    """Bits ``[t f, (t + 1) f)`` of the ``m``-bit value padded with zeros to ``P f`` bits."""
    padded = value << (P * f - m)
    return (padded >> (f * (P - 1 - t))) & ((1 << f) - 1)


@pytest.mark.parametrize("item_bytes, f", [(12, 16), (16, 8), (9, 24 - 4), (64, 16)])
def test_wide_fragments_match_integer_slicing(item_bytes, f):
    sfp = SFP(epsilon=1.0, k=2, item_bytes=item_bytes, fragment_bits=f, puzzle_bits=4,
              n_rows=4, codebook_seed=3)
    m, P = 8 * item_bytes, sfp.n_positions
    assert P == -(-m // f) and sfp._wide
    words = [b"abcdefghijkl"[:item_bytes], b"x", b"heavy hitter"[:item_bytes],
             bytes(range(1, 1 + item_bytes))]
    codes = ItemCodec(item_bytes=item_bytes).encode(words)
    for t in range(P):
        got = sfp.fragments(codes, np.full(len(words), t)).tolist()
        want = [_naive_fragment(_int(c), t, m, f, P) for c in codes]
        assert got == want
    # mixed positions in one call, and the record = puzzle piece of the whole item's key
    pos = np.arange(len(words)) % P
    recs = sfp.records(codes, pos)
    keys = prefix_keys(codes, m)
    psi = fo_hash(sfp.derived_seed(P + 1), 0, keys, 1 << sfp.puzzle_bits)
    for i, c in enumerate(codes):
        assert int(recs[i]) == (int(psi[i]) << f) | _naive_fragment(_int(c), int(pos[i]), m, f, P)


def test_wide_path_of_a_64_bit_integer():
    # m = 64, f = 23: P = 3 positions, 69 padded bits (more than one word), 5 padding bits
    sfp = SFP(epsilon=1.0, k=2, item_bits=64, fragment_bits=23, puzzle_bits=1, n_rows=2,
              codebook_seed=4)
    assert sfp._wide and sfp._pad == 5
    xs = np.array([2**64 - 1, 0x8000000000000001, 123456789], dtype=np.uint64)
    for t in range(3):
        want = [_naive_fragment(int(x), t, 64, 23, 3) for x in xs]
        assert sfp.fragments(xs, np.full(3, t)).tolist() == want
    recs = [sfp.records(xs, np.full(3, t)) for t in range(3)]
    for i, x in enumerate(xs):
        got = sfp.assemble([r[i:i + 1] for r in recs], [np.ones(1)] * 3)
        assert got.ndim == 1 and got.tolist() == [int(x)]


def _naive_join(sfp, lists):
    """Every combination as a Python integer; padding bits must be zero (itertools.product)."""
    f, P, pad = sfp.fragment_bits, sfp.n_positions, sfp._pad
    out = []
    for combo in itertools.product(*[[int(v) for v in li] for li in lists]):
        value = 0
        for frag in combo:
            value = (value << f) | frag
        if value & ((1 << pad) - 1):
            continue
        out.append(value >> pad)
    return sorted(out)


@pytest.mark.parametrize("item_bytes, f", [(9, 16), (20, 12), (16, 8)])
def test_join_matches_product_twin(item_bytes, f):
    sfp = SFP(epsilon=1.0, k=2, item_bytes=item_bytes, fragment_bits=f, puzzle_bits=2,
              n_rows=2, codebook_seed=5)
    rng = np.random.default_rng(item_bytes)
    P = sfp.n_positions
    lists = [np.unique(rng.integers(0, 1 << f, 2 if P > 8 else 3)).astype(np.uint64)
             for _ in range(P)]
    if sfp._pad:  # some last fragments with zero padding bits, some without
        lists[-1] = np.array([0, 1, 1 << sfp._pad, (1 << f) - (1 << sfp._pad)], dtype=np.uint64)
    got = sfp._join(lists)
    assert got.shape[1] == math.ceil(8 * item_bytes / 64)
    assert sorted(_int(row) for row in got) == _naive_join(sfp, lists)


def test_assembly_of_long_items_matches_twin():
    # records of two true 12-byte words and noise at each of the 6 positions; the candidates
    # are the combinations (per puzzle piece) whose own piece matches: a Python-int twin
    sfp = SFP(epsilon=1.0, k=2, item_bytes=12, fragment_bits=16, puzzle_bits=2, n_rows=2,
              codebook_seed=6)
    codec = ItemCodec(item_bytes=12)
    true = codec.encode([b"differential", b"privacy"])
    P, f = sfp.n_positions, sfp.fragment_bits
    rng = np.random.default_rng(1)
    kept, counts = [], []
    for t in range(P):
        recs = np.concatenate([sfp.records(true, np.full(2, t)),
                               rng.integers(0, 1 << (f + 2), 3).astype(np.uint64)])
        recs = np.unique(recs)
        kept.append(recs)
        counts.append(np.ones(recs.shape[0]))
    got = sfp.assemble(kept, counts)
    assert got.ndim == 2 and got.shape[1] == 2
    want = set()
    for psi in set.intersection(*[{int(y) >> f for y in r} for r in kept]):
        lists = [[int(y) & ((1 << f) - 1) for y in r if int(y) >> f == psi] for r in kept]
        for value in _naive_join(sfp, lists):
            row = np.array([[value >> 64, value & (2**64 - 1)]], dtype=np.uint64)
            if int(sfp.puzzle(row)[0]) == psi:
                want.add(value)
    assert [_int(r) for r in got] == sorted(want)
    assert {_int(r) for r in true} <= want


def test_trimming_spends_the_budget_on_the_positions_with_several_fragments():
    # issue 34, item 4: three 4-byte strings of one puzzle piece in a 64-byte field (32
    # positions of 16 bits, 30 of them the zero padding). Their combinations (3 x 3 = 9)
    # exceed max_combinations = 4, so the piece is trimmed: the two positions that hold
    # several fragments keep floor(4^(1/2)) = 2 each, and the two heaviest strings are
    # assembled. Before: floor(4^(1/32)) = 1 fragment per position, the heaviest string only.
    sfp = SFP(epsilon=4.0, k=3, item_bytes=64, max_combinations=4, codebook_seed=6)
    codec = ItemCodec(item_bytes=64)
    gen = np.random.default_rng([34, 4])
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    by_piece: dict = {}
    while True:  # three strings of one piece with distinct fragments at both positions
        word = bytes(gen.choice(letters, 4))
        piece = int(sfp.puzzle(codec.encode([word]))[0])
        same = by_piece.setdefault(piece, [])
        if all(word[:2] != w[:2] and word[2:] != w[2:] for w in same):
            same.append(word)
        if len(same) == 3:
            break
    codes = codec.encode(same)
    kept, counts = [], []
    for t in range(sfp.n_positions):
        recs = sfp.records(codes, np.full(3, t))
        recs, first = np.unique(recs, return_index=True)
        kept.append(recs)
        counts.append(np.array([300.0, 200.0, 100.0])[first])  # same[0] the heaviest
    got = {codec.decode(row[None, :])[0] for row in sfp.assemble(kept, counts)}
    assert {same[0], same[1]} <= got
    assert same[2] not in got


def _long_words(n, rng):
    gen = np.random.default_rng(rng)
    heavy = [b"differential", b"privacy-at-scale", b"fragments"]  # 12, 16 and 9 bytes
    counts = [int(0.30 * n), int(0.20 * n), int(0.15 * n)]
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    noise = [bytes(letters[gen.integers(0, 26, gen.integers(9, 17))])
             for _ in range(n - sum(counts))]
    items = [w for w, c in zip(heavy, counts) for _ in range(c)] + noise
    return items, heavy, np.array(counts)


@pytest.mark.parametrize("oracle", ["cms", "hcms"])
def test_long_words_are_recovered(oracle):
    # Easy on purpose: three words of 9-16 bytes held by 30%, 20% and 15% of n = 40,000 users,
    # eps = 4, 16-byte items cut into P = 16 one-byte fragments (8-bit puzzle: 2^16 records).
    # A position has n/16 = 2,500 reports: a record count's sd is about sqrt(P n v) with v a
    # report's variance (CMS at 0.625 eps: 0.56; HCMS: 1.5), 600 to 1,000, so the planted
    # words' records (>= 6,000) stand 6 sd or more above the largest of the 2^16 empty records
    # (about 4.5 sd); the other users' random strings spread over ~26^12 values, none heavy.
    # n_rows = 16 keeps the server's 16 x 2^16 x 16 hashes fast (the defaults take 256 rows).
    n = 40000
    items, heavy, true = _long_words(n, 3)
    sfp = SFP(epsilon=4.0, k=3, oracle=oracle, item_bytes=16, fragment_bits=8,
              puzzle_bits=8, n_rows=16, codebook_seed=41)
    reps = sfp.privatize(items, rng=5)
    res = sfp.estimate(reps)
    assert res.items == heavy
    assert res.codes.shape == (3, 2)
    assert np.all(np.abs(res.counts - true) < 5 * res.std)
    # chunks and merges give the same result, bit for bit
    ids = np.arange(n)
    merged = sfp.partial(reps[:15000], identities=ids[:15000]).merge(
        sfp.partial(reps[15000:], identities=ids[15000:]))
    again = sfp.finalize(merged)
    assert again.items == res.items and np.array_equal(again.counts, res.counts)


def test_long_words_with_the_default_fragments():
    # The defaults for strings (f = 16, a = 4: 2^20 records) on 12-byte words: P = 6
    # positions; same margins as above (n / 6 reports per position); n_rows = 16 for speed.
    n = 30000
    items, heavy, true = _long_words(n, 4)
    items = [w[:12] for w in items]
    heavy = [w[:12] for w in heavy]
    sfp = SFP(epsilon=4.0, k=3, item_bytes=12, n_rows=16, codebook_seed=42)
    assert (sfp.fragment_bits, sfp.puzzle_bits, sfp.n_positions) == (16, 4, 6)
    res = sfp.estimate(sfp.privatize(items, rng=6))
    assert res.items == heavy
    assert np.all(np.abs(res.counts - true) < 5 * res.std)


def test_long_items_report_files_decode_like_estimate(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.reports import decode_files, write_reports
    n = 6000
    items, heavy, _ = _long_words(n, 7)
    sfp = SFP(epsilon=4.0, k=3, item_bytes=16, fragment_bits=8, puzzle_bits=8, n_rows=8,
              codebook_seed=43)
    reps = sfp.privatize(items, rng=8)
    write_reports(tmp_path / "a.parquet", sfp, reps[:2500], identities=np.arange(2500))
    write_reports(tmp_path / "b.parquet", sfp, reps[2500:], identities=np.arange(2500, n))
    whole = sfp.estimate(reps)
    res = decode_files(sfp, [tmp_path / "a.parquet", tmp_path / "b.parquet"])
    assert res.items == whole.items and np.array_equal(res.codes, whole.codes)
    assert np.array_equal(res.counts, whole.counts)
    assert whole.items[:1] == heavy[:1]
