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


def _one_piece_strings(sfp, codec, count, length, seed):
    """``count`` strings of ``length`` letters that share one puzzle piece and differ at every
    byte (so every position of the piece holds ``count`` fragments)."""
    gen = np.random.default_rng([34, 4, seed])
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    by_piece: dict = {}
    while True:
        word = bytes(gen.choice(letters, length))
        piece = int(sfp.puzzle(codec.encode([word]))[0])
        same = by_piece.setdefault(piece, [])
        if all(x != y for w in same for x, y in zip(word, w)):
            same.append(word)
        if len(same) == count:
            return same


def _records_of(sfp, codes, weights, end):
    """Each position's distinct records of ``codes`` with the summed ``weights`` (kept,
    counts), only positions ``t < end``: the records past ``end`` are left out."""
    kept, counts = [], []
    for t in range(sfp.n_positions):
        recs = sfp.records(codes, np.full(codes.shape[0], t))
        if t >= end:
            recs, weights_t = recs[:0], weights[:0]
        else:
            weights_t = weights
        uniq, inverse = np.unique(recs, return_inverse=True)
        kept.append(uniq)
        counts.append(np.bincount(inverse, weights=weights_t, minlength=uniq.shape[0]))
    return kept, counts


def test_peeling_assembles_every_string_of_a_crowded_piece():
    # issue 34, item 4: three 4-byte strings of one puzzle piece in a 64-byte field (64
    # positions of one byte, 60 of them the zero padding), counts 300, 200, 100. Their
    # combinations (3^4 = 81) exceed max_combinations = 4, so the piece is decoded greedily
    # with peeling: the heaviest path, its smallest count off every record on it, again.
    # All three come out. Before: floor(4^(1/B)) fragments per busy position, the lightest
    # string never assembled.
    sfp = SFP(epsilon=4.0, k=3, item_bytes=64, max_combinations=4, codebook_seed=6)
    assert (sfp.fragment_bits, sfp.n_positions) == (8, 64)
    codec = ItemCodec(item_bytes=64)
    same = _one_piece_strings(sfp, codec, 3, 4, 0)
    codes = codec.encode(same)
    weights = np.array([300.0, 200.0, 100.0])
    kept, counts = _records_of(sfp, codes, weights, sfp.n_positions)
    got = {codec.decode(row[None, :])[0] for row in sfp.assemble(kept, counts)}
    assert got == set(same)
    # the positions past the terminator hold only padding: no record is needed there (the
    # strings end at byte 4, position 4 holds the terminator, 5 .. 63 nothing)
    kept, counts = _records_of(sfp, codes, weights, 5)
    got = {codec.decode(row[None, :])[0] for row in sfp.assemble(kept, counts)}
    assert got == set(same)
    # with max_combinations large enough the piece is enumerated: the same three
    wide = SFP(epsilon=4.0, k=3, item_bytes=64, max_combinations=81, codebook_seed=6)
    got = {codec.decode(row[None, :])[0] for row in wide.assemble(kept, counts)}
    assert got == set(same)


@pytest.mark.parametrize("f", [8, 16])
def test_peeling_finds_the_lighter_string_that_shares_a_prefix(f):
    # three strings of one piece: "<stem>x" (count 300) and "<stem>yz<4 letters>" (120) share
    # a 5-byte stem, and a 3-letter string (200) ends before both. The all-zero record at
    # byte 6 pools every string of the piece that ended by then (500). Greedy finds
    # "<stem>x" first (the stem holds 420); peeling takes its 300 off its records and off
    # the all-zero records from byte 6 on, then the short string's 200 (from byte 3 on), so
    # that the third round's "<stem>y" finds 0 at byte 6 and goes on to "z": all three.
    # Counted raw, the pooled record would end that path at "<stem>y" and its peel would
    # take the lighter string's stem with it. With two-byte fragments the short string's
    # terminator sits inside its second fragment ("c\0"), so its path holds no all-zero
    # record: its count must still come off the pooled ones (positions 2 on).
    sfp = SFP(epsilon=4.0, k=3, item_bytes=16, fragment_bits=f, puzzle_bits=8,
              max_combinations=1, codebook_seed=9)
    codec = ItemCodec(item_bytes=16)
    gen = np.random.default_rng(5)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    while True:
        stem = bytes(gen.choice(letters, 5))
        pair = [stem + b"x", stem + b"yz" + bytes(gen.choice(letters, 4))]
        psi = sfp.puzzle(codec.encode(pair))
        if psi[0] == psi[1]:
            break
    while True:
        short = bytes(gen.choice(letters, 3))
        if short[0] != stem[0] and sfp.puzzle(codec.encode([short]))[0] == psi[0]:
            break
    strings = pair + [short]
    codes = codec.encode(strings)
    kept, counts = _records_of(sfp, codes, np.array([300.0, 120.0, 200.0]), sfp.n_positions)
    at = 6 * 8 // f  # the position whose fragment starts at byte 6
    zero = np.flatnonzero(kept[at] == np.uint64(int(psi[0]) << f))
    assert counts[at][zero].tolist() == [500.0]
    got = {codec.decode(row[None, :])[0] for row in sfp.assemble(kept, counts)}
    assert got == set(strings)


def test_default_fragments_follow_the_item_length():
    # short items keep f = 16, a = 4 (strings) and f = 8, a = 8 (integers); strings above
    # 8 bytes are cut into bytes with 256 puzzle pieces and give the fragments 3/4 of the
    # budget (module docstring, "Long items")
    assert (SFP(epsilon=1.0, item_bytes=8).fragment_bits,
            SFP(epsilon=1.0, item_bytes=8).puzzle_bits) == (16, 4)
    assert (SFP(epsilon=1.0, item_bits=32).fragment_bits,
            SFP(epsilon=1.0, item_bits=32).puzzle_bits) == (8, 8)
    for item_bytes, positions in [(9, 9), (16, 16), (64, 64)]:
        sfp = SFP(epsilon=1.0, item_bytes=item_bytes)
        assert (sfp.fragment_bits, sfp.puzzle_bits, sfp.n_positions) == (8, 8, positions)
    # an explicit choice is kept
    sfp = SFP(epsilon=1.0, item_bytes=64, fragment_bits=16, puzzle_bits=4)
    assert (sfp.fragment_bits, sfp.puzzle_bits, sfp.n_positions) == (16, 4, 32)
    # the fragment part's share: 0.75 above 8 bytes, 0.625 otherwise, an explicit one kept
    assert SFP(epsilon=4.0, item_bytes=9).fragment_share == 0.75
    assert SFP(epsilon=4.0, item_bytes=9).part_epsilon == 3.0
    assert SFP(epsilon=4.0, item_bytes=8).fragment_share == 0.625
    assert SFP(epsilon=4.0, item_bits=64).fragment_share == 0.625
    assert SFP(epsilon=4.0, item_bytes=64, fragment_share=0.5).fragment_share == 0.5


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
    # The defaults for strings above 8 bytes (f = 8, a = 8: 2^16 records) on 12-byte words:
    # P = 12 positions of n / 12 reports; a record count's sd about sqrt(12 n v), 600 to
    # 800 at n = 30,000 (v = 0.56 for CMS at 0.625 eps), the planted words' records (>=
    # 4,500) 5.6 sd or more above 0, the 512th largest of the 2^16 empty records about
    # 2.4 sd; n_rows = 16 for speed.
    n = 30000
    items, heavy, true = _long_words(n, 4)
    items = [w[:12] for w in items]
    heavy = [w[:12] for w in heavy]
    sfp = SFP(epsilon=4.0, k=3, item_bytes=12, n_rows=16, codebook_seed=42)
    assert (sfp.fragment_bits, sfp.puzzle_bits, sfp.n_positions) == (8, 8, 12)
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


def _raw_codes(strings, item_bytes):
    """Codes of byte strings the codec refuses (a zero byte inside): big-endian words."""
    W = math.ceil(item_bytes / 8)
    buf = np.zeros((len(strings), 8 * W), dtype=np.uint8)
    for i, s in enumerate(strings):
        buf[i, 8 * W - item_bytes:8 * W - item_bytes + len(s)] = np.frombuffer(s, np.uint8)
    return buf.view(">u8").astype(np.uint64)


def test_assembly_returns_no_impossible_string_on_adversarial_reports():
    # issue 34, item 4: crafted reports (through the protocol's own client, at eps = 50) of
    # byte strings no user can hold: a set byte after a zero byte, and for text invalid UTF-8
    # (0xFF, an overlong 0xC0 0xAF, a surrogate 0xED 0xA0 0x80, a character cut by the end
    # of the string). They hold 80% of the reports; two valid non-ASCII strings hold the rest.
    # Neither the assembled candidates nor the result hold an impossible string, and the
    # valid ones are found. Before: the assembly returned the impossible strings (the
    # decode dropped them afterwards).
    from fastldp.heavyhitters.items import string_prefix_mask, utf8_prefix_mask
    bad = [b"ab\x00cd", b"\xff\xfe hello", b"\xc0\xafslash", b"\xed\xa0\x80surrogate",
           b"caf\xc3", b"ok\x00\xc3\xa9"]
    good = ["héllo wörld", "naïve café"]
    n_each = 4000
    codec = ItemCodec(item_bytes=16)
    codes = np.concatenate([_raw_codes(bad, 16), codec.encode(good)])
    which = np.repeat(np.arange(len(bad) + len(good)), n_each)
    which = np.random.default_rng(1).permutation(which)
    sfp = SFP(epsilon=50.0, k=4, item_bytes=16, n_rows=16, text=True, codebook_seed=11)
    assert sfp._string_path
    reps = sfp._privatize_codes(codes[which], np.arange(which.shape[0], dtype=np.uint64),
                                np.random.default_rng(2))
    seen = {}
    assemble = sfp.assemble

    def spy(kept, counts):
        seen["out"] = assemble(kept, counts)
        return seen["out"]

    sfp.assemble = spy
    res = sfp.estimate(reps)
    out = seen["out"]
    assert out.shape[0] >= len(good)
    assert string_prefix_mask(out, 128).all()
    assert utf8_prefix_mask(out, 128, complete=True).all()
    assert sorted(res.items) == sorted(good)


@pytest.mark.parametrize("item_bytes, f, text", [(16, 8, False), (16, 8, True), (63, 16, True),
                                                 (24, 16, False)])
def test_assembled_strings_are_made_of_kept_records(item_bytes, f, text):
    # random records (bytes drawn to hit zero bytes, ASCII, UTF-8 leads and continuations)
    # on 4 pieces, counts 1 to 100, beside the records of three planted strings (counts 150
    # to 250), with max_combinations = 8 so that most pieces are peeled: the planted strings
    # are assembled, and every assembled string is possible (and complete UTF-8 for text),
    # its puzzle piece is the piece of its records, and its record at every position up to
    # its terminator is a kept one
    from fastldp.heavyhitters.items import string_prefix_mask, utf8_prefix_mask
    sfp = SFP(epsilon=1.0, k=2, item_bytes=item_bytes, fragment_bits=f, puzzle_bits=2,
              max_combinations=8, n_rows=2, text=text, codebook_seed=12)
    assert sfp._string_path
    gen = np.random.default_rng([item_bytes, f, text])
    alphabet = np.array([0, 0, 0x61, 0x62, 0x63, 0x20, 0xC3, 0xA9, 0x80, 0xE2, 0xFF],
                        dtype=np.uint64)
    kept, counts = [], []
    for t in range(sfp.n_positions):
        size = 24 if t < 6 else 6
        frag = np.zeros(size, dtype=np.uint64)
        for _ in range(f // 8):
            frag = (frag << np.uint64(8)) | gen.choice(alphabet, size)
        recs = np.unique((gen.integers(0, 4, size).astype(np.uint64) << np.uint64(f)) | frag)
        kept.append(recs)
        counts.append(gen.uniform(1.0, 100.0, recs.shape[0]))
    codec = ItemCodec(item_bytes=item_bytes)
    planted = ["café au lait", "naïve", "ab"]
    codes = codec.encode(planted)
    for t in range(sfp.n_positions):
        recs = sfp.records(codes, np.full(3, t))
        weights = np.array([250.0, 200.0, 150.0])
        merged = np.concatenate([kept[t], recs])
        uniq, inverse = np.unique(merged, return_inverse=True)
        kept[t] = uniq
        counts[t] = np.bincount(inverse, weights=np.concatenate([counts[t], weights]),
                                minlength=uniq.shape[0])
    got = sfp.assemble(kept, counts)
    assert {tuple(c) for c in codes.tolist()} <= {tuple(c) for c in got.tolist()}
    bits = 8 * item_bytes
    assert string_prefix_mask(got, bits).all()
    if text:
        assert utf8_prefix_mask(got, bits, complete=True).all()
    for row in got:
        length = len(codec.decode(row[None, :])[0])
        last = min(sfp.n_positions, length * 8 // f + 1)  # the position of the terminator
        for t in range(last):
            rec = int(sfp.records(row[None, :], np.array([t]))[0])
            assert rec in set(kept[t].tolist()), (t, row)
