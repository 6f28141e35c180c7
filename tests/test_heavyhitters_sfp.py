"""SFP: fragments and puzzle pieces, the HCMS law, record counts, assembly, decode, streaming."""

import itertools
import math

import numpy as np
import pytest
from scipy.linalg import hadamard

from fastldp.heavyhitters.items import ItemCodec
from fastldp.heavyhitters.sfp import SFP
from fastldp.heavyhitters.treehist import fo_hash, hadamard_fo_counts, hadamard_fo_perturb
from fastldp.oracles import HCMS


def _naive_counts(seed, triples, R, T, eps, candidates):
    """Per report ``r (c omega H[l, h_j(v)] - 1/T)`` summed in Python, hash identities 0..R-1."""
    H = hadamard(T)
    c = (math.exp(eps) + 1) / (math.exp(eps) - 1)
    r = T / (T - 1)
    out = []
    for v in candidates:
        h = [int(fo_hash(seed, j, np.array([v], dtype=np.uint64), T)[0]) for j in range(R)]
        out.append(sum(r * (c * int(w) * H[int(l), h[int(j)]] - 1.0 / T) for j, l, w in triples))
    return np.array(out)


def _words(n, rng):
    gen = np.random.default_rng(rng)
    heavy = [b"cat", b"dogs", b"pony"]
    counts = [int(0.30 * n), int(0.20 * n), int(0.15 * n)]
    rest = n - sum(counts)
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    noise = [bytes(letters[gen.integers(0, 26, 4)]) for _ in range(rest)]
    items = [w for w, c in zip(heavy, counts) for _ in range(c)] + noise
    return items, heavy, np.array(counts)


# ---------------------------------------------------------------- items to records
def test_fragments_and_records_match_byte_slicing():
    sfp = SFP(epsilon=1.0, k=2, item_bytes=6, fragment_bits=16, puzzle_bits=8, codebook_seed=1)
    words = [b"abcdef", b"xy", b"hello"]
    codes = ItemCodec(item_bytes=6).encode(words)
    assert sfp.n_positions == 3
    for t in range(3):
        frags = sfp.fragments(codes, np.full(3, t))
        want = [int.from_bytes(w.ljust(6, b"\0")[2 * t:2 * t + 2], "big") for w in words]
        assert frags.tolist() == want
        recs = sfp.records(codes, np.full(3, t))
        assert (recs >> np.uint64(16)).tolist() == sfp.puzzle(codes).tolist()
    # the puzzle piece is the public hash of the whole item (identity 0 under s_{P+1})
    psi = fo_hash(sfp.derived_seed(4), 0, codes, 256)
    assert sfp.puzzle(codes).tolist() == psi.tolist()


def test_fragments_with_padding_bits():
    # 10-bit integers, 4-bit fragments: 3 positions, the code padded with 2 zero bits
    sfp = SFP(epsilon=1.0, k=2, item_bits=10, fragment_bits=4, puzzle_bits=3, codebook_seed=2)
    xs = np.array([0b1011001110, 5, 1023], dtype=np.uint64)
    for t in range(3):
        bits = [format(int(x), "010b") + "00" for x in xs]
        want = [int(b[4 * t:4 * t + 4], 2) for b in bits]
        assert sfp.fragments(xs, np.full(3, t)).tolist() == want


# ---------------------------------------------------------------- the oracle
def test_item_part_is_hcms_law():
    # the item part's estimator equals fastldp.oracles.HCMS's on the same reports and seed
    R, T, eps, seed = 3, 16, 1.5, 77
    hcms = HCMS(domain_size=40, epsilon=eps, n_rows=R, n_columns=T, codebook_seed=seed)
    x = (np.arange(3000) % 40).astype(np.uint64)
    reps = hadamard_fo_perturb(seed, x, 0, R, T, eps, np.random.default_rng(0))
    from fastldp.heavyhitters.treehist import hadamard_fo_table
    ours = hadamard_fo_counts(seed, hadamard_fo_table(reps, R, T), 3000, 0, eps,
                              np.arange(40, dtype=np.uint64))
    assert np.allclose(ours, hcms.estimate(reps).counts, rtol=1e-12, atol=1e-8)
    # and the client draws the same law as HCMS.channel
    law = hcms.channel(eps)
    from fastldp.heavyhitters.treehist import hadamard_fo_law
    assert np.allclose(hadamard_fo_law(seed, 0, R, T, eps, np.arange(40, dtype=np.uint64)),
                       law)


def test_whole_report_is_exactly_epsilon_ldp():
    eps = 0.9
    sfp = SFP(epsilon=eps, k=2, item_bits=4, fragment_bits=2, puzzle_bits=2, n_rows=1,
              n_columns=4, codebook_seed=6)
    for identity in range(4):
        P = sfp.channel(identity)
        assert np.allclose(P.sum(axis=1), 1.0)
        ratio = (P[:, None, :] / P[None, :, :]).max()
        assert ratio <= math.exp(eps) * (1 + 1e-12)
        assert ratio == pytest.approx(math.exp(eps), rel=1e-9)


def test_record_counts_match_per_report_twin():
    sfp = SFP(epsilon=2.0, k=2, item_bits=8, fragment_bits=4, puzzle_bits=2, n_rows=2,
              n_columns=8, codebook_seed=5)
    x = np.random.default_rng(1).integers(0, 256, 400).astype(np.uint64)
    reps = sfp.privatize(x, rng=3)
    ids = np.arange(400, dtype=np.uint64)
    Z, npos, _ = sfp.tables(lambda: iter([(ids, reps)]))
    pos = sfp.positions_of(ids)
    for t in range(2):
        mine = reps[pos == t][:, :3]
        got = sfp.record_counts(Z[t], 400, int(npos[t]), t)
        want = (400 / mine.shape[0]) * _naive_counts(sfp.derived_seed(t), mine, 2, 8, 1.0,
                                                     range(64))
        assert np.allclose(got, want, rtol=1e-10, atol=1e-8)


# ---------------------------------------------------------------- selection and assembly
def test_top_records_ties_and_threshold():
    sfp = SFP(epsilon=2.0, k=2, c=2, item_bits=8, fragment_bits=4, puzzle_bits=2,
              codebook_seed=5)
    counts = np.array([5.0, 9.0, 5.0, 1.0, 5.0, 9.0, 0.0, 5.0])
    # naive: sort by (-count, record), keep c k = 4
    want = sorted(sorted(range(8), key=lambda y: (-counts[y], y))[:4])
    assert sfp._top_records(counts, 100, 100).tolist() == want == [0, 1, 2, 5]
    th = SFP(epsilon=2.0, k=2, c=2, item_bits=8, fragment_bits=4, puzzle_bits=2,
             threshold=0.5, codebook_seed=5)
    sd = (100 / 100) * (th.n_columns / (th.n_columns - 1)) * math.sqrt(100 * th._v0())
    big = counts * sd / 5  # 5 -> one sd, 9 -> 1.8 sd, 1 -> 0.2 sd
    assert th._top_records(big, 100, 100).tolist() == [0, 1, 2, 5]
    th2 = SFP(epsilon=2.0, k=2, c=2, item_bits=8, fragment_bits=4, puzzle_bits=2,
              threshold=1.5, codebook_seed=5)
    assert th2._top_records(big, 100, 100).tolist() == [1, 5]


def _naive_assemble(sfp, kept, counts):
    f, P, pad = sfp.fragment_bits, sfp.n_positions, sfp._pad
    per_piece = int(math.floor(sfp.max_combinations ** (1 / P) + 1e-9))
    out = set()
    pieces = set.intersection(*[{int(y) >> f for y in recs} for recs in kept])
    for psi in pieces:
        lists = [[(int(y) & ((1 << f) - 1), float(cnt)) for y, cnt in zip(recs, cs)
                  if int(y) >> f == psi] for recs, cs in zip(kept, counts)]
        if math.prod(len(li) for li in lists) > sfp.max_combinations:
            lists = [sorted(li, key=lambda fc: (-fc[1], fc[0]))[:per_piece] for li in lists]
        for combo in itertools.product(*lists):
            code = 0
            for frag, _ in combo:
                code = (code << f) | frag
            if code & ((1 << pad) - 1):
                continue
            code >>= pad
            if int(sfp.puzzle(np.array([code], dtype=np.uint64))[0]) == psi:
                out.add(code)
    return sorted(out)


@pytest.mark.parametrize("max_combinations", [4096, 30])
def test_assembly_matches_product_twin(max_combinations):
    # records of every piece at every position; the puzzle check, the padding and the
    # trimming of a piece with too many combinations against itertools.product
    sfp = SFP(epsilon=2.0, k=2, item_bits=10, fragment_bits=4, puzzle_bits=2,
              max_combinations=max_combinations, codebook_seed=8)
    rng = np.random.default_rng(4)
    kept, counts = [], []
    for t in range(sfp.n_positions):
        recs = np.unique(rng.integers(0, 64, 30)).astype(np.uint64)
        kept.append(recs)
        counts.append(rng.integers(0, 5, recs.shape[0]).astype(float))  # ties too
    got = sfp.assemble(kept, counts)
    assert got.tolist() == _naive_assemble(sfp, kept, counts)
    assert len(got) > 0
    # a true item's records at every position are assembled into it
    x = np.array([613], dtype=np.uint64)
    recs = [sfp.records(x, [t]) for t in range(sfp.n_positions)]
    assert sfp.assemble(recs, [np.ones(1)] * sfp.n_positions).tolist() == [613]


def _naive_decode(sfp, reps, n):
    ids = np.arange(n, dtype=np.uint64)
    pos = sfp.positions_of(ids)
    e, R, T = sfp.part_epsilon, sfp.n_rows, sfp.n_columns
    size = 1 << (sfp.puzzle_bits + sfp.fragment_bits)
    kept, kept_counts = [], []
    for t in range(sfp.n_positions):
        mine = reps[pos == t][:, :3]
        cnt = (n / mine.shape[0]) * _naive_counts(sfp.derived_seed(t), mine, R, T, e,
                                                  range(size))
        top = sorted(sorted(range(size), key=lambda y: (-cnt[y], y))[:sfp.c * sfp.k])
        kept.append(np.array(top, dtype=np.uint64))
        kept_counts.append(cnt[top])
    cands = _naive_assemble(sfp, kept, kept_counts)
    final = _naive_counts(sfp.derived_seed(sfp.n_positions), reps[:, 3:], R, T, e, cands)
    order = sorted(range(len(cands)), key=lambda i: (-final[i], cands[i]))[:sfp.k]
    return [cands[i] for i in order], final[order]


def test_decode_matches_naive_twin():
    sfp = SFP(epsilon=4.0, k=3, c=3, item_bits=8, fragment_bits=4, puzzle_bits=2, n_rows=2,
              n_columns=16, codebook_seed=12)
    rng = np.random.default_rng(2)
    n = 1200
    x = np.where(rng.random(n) < 0.4, 201, rng.integers(0, 256, n)).astype(np.uint64)
    x[:250] = 18
    reps = sfp.privatize(x, rng=7)
    res = sfp.estimate(reps)
    codes, counts = _naive_decode(sfp, reps, n)
    assert res.codes.tolist() == codes
    assert np.allclose(res.counts, counts, rtol=1e-10, atol=1e-7)
    assert 201 in codes and 18 in codes


def test_recall_of_planted_words():
    # n = 60000, eps = 4 (eps/2 per part, HCMS c = coth(1) = 1.313), 4-byte words, 8-bit
    # fragments (P = 4 positions, n/4 reports each), 8-bit puzzle: a position's record count
    # has sd about sqrt(P n) c r ~ 643 and the largest of the 2^16 records nobody holds is
    # about 4.5 sd ~ 2900, while the planted words' records count >= 9000 (14 sd): each is among
    # the c k = 6 largest at every position; their final counts (all n item parts) are checked
    # against 5 reported sd.
    n = 60000
    items, heavy, true = _words(n, 5)
    sfp = SFP(epsilon=4.0, k=3, item_bytes=4, fragment_bits=8, puzzle_bits=8, n_rows=4,
              codebook_seed=31)
    res = sfp.estimate(sfp.privatize(items, rng=6))
    assert res.items == heavy
    assert np.all(np.abs(res.counts - true) < 5 * res.std)


# ---------------------------------------------------------------- streaming
def _small():
    return SFP(epsilon=4.0, k=3, item_bytes=4, fragment_bits=8, puzzle_bits=4, n_rows=2,
               codebook_seed=31)


def test_partials_merge_bit_identically():
    sfp = _small()
    items, _, _ = _words(5000, 1)
    reps = sfp.privatize(items, rng=2)
    whole = sfp.estimate(reps)
    ids = np.arange(5000)
    parts = [sfp.partial(reps[a:b], identities=ids[a:b])
             for a, b in ((0, 1200), (1200, 3000), (3000, 5000))]
    for merged in (parts[0].merge(parts[1]).merge(parts[2]),
                   parts[1].merge(parts[2]).merge(parts[0])):
        res = sfp.finalize(merged)
        assert res.codes.tolist() == whole.codes.tolist()
        assert np.array_equal(res.counts, whole.counts)
        assert np.array_equal(res.variances, whole.variances)

    def chunks_of(size):
        return lambda: ((ids[a:a + size].astype(np.uint64), reps[a:a + size])
                        for a in range(0, 5000, size))
    for u, v in zip(sfp.tables(chunks_of(5000)), sfp.tables(chunks_of(613))):
        assert np.array_equal(u, v)


def test_report_files_decode_like_estimate(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.reports import decode_files, write_reports
    sfp = _small()
    items, _, _ = _words(4000, 3)
    reps = sfp.privatize(items, rng=4)
    write_reports(tmp_path / "a.parquet", sfp, reps[:1500], identities=np.arange(1500))
    write_reports(tmp_path / "b.parquet", sfp, reps[1500:], identities=np.arange(1500, 4000))
    whole = sfp.estimate(reps)
    res = decode_files(sfp, [tmp_path / "a.parquet", tmp_path / "b.parquet"])
    assert res.items == whole.items
    assert np.array_equal(res.counts, whole.counts)
    again = SFP(**sfp.stream_params())
    assert repr(again) == repr(sfp) and again.stream_params() == sfp.stream_params()


# ---------------------------------------------------------------- sanitization and inputs
def test_sanitization_replaces_illegal_parts():
    sfp = _small()
    reps = sfp.privatize([b"ab"] * 8, rng=0).astype(object)
    reps[1, 5] = 7          # omega out of range
    reps[2, 1] = 10**6      # column out of range
    reps[3, 0] = "x"        # not a number
    part = sfp.partial(reps)
    assert part.counts["n"] == 8 and part.counts["n_valid"] == 5
    assert part.counts["reason:out_of_range"] == 2 and part.counts["reason:non_numeric"] == 1
    clean = part.reports
    for row, cols in ((1, slice(3, 6)), (2, slice(0, 3)), (3, slice(0, 3))):
        assert clean[row, cols][:2].tolist() == [0, 0] and abs(clean[row, cols][2]) == 1
    assert sfp.estimate(reps).sanitization.n_valid == 5


@pytest.mark.parametrize("kwargs, name", [
    ({"epsilon": 0.0}, "epsilon"),
    ({"epsilon": 1.0, "puzzle_bits": 10, "fragment_bits": 16}, "fragment_bits"),
    ({"epsilon": 1.0, "item_bits": 8, "fragment_bits": 9}, "fragment_bits"),
    ({"epsilon": 1.0, "n_columns": 1000}, "n_columns"),
    ({"epsilon": 1.0, "puzzle_bits": 0}, "puzzle_bits"),
    ({"epsilon": 1.0, "threshold": float("nan")}, "threshold"),
    ({"epsilon": 1.0, "max_combinations": 0}, "max_combinations"),
])
def test_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=f"'{name}' parameter of SFP"):
        SFP(**kwargs)


def test_bad_reports_and_items():
    sfp = _small()
    with pytest.raises(ValueError, match="shape"):
        sfp.estimate(np.zeros(5, dtype=np.int64))
    with pytest.raises(ValueError, match="items"):
        sfp.privatize([b"toolong!"])
    with pytest.raises(ValueError, match="epsilons"):
        sfp.partial(sfp.privatize([b"a"], rng=0), epsilons=[1.0])
    empty = sfp.estimate(np.zeros((0, 6), dtype=np.int64))
    assert empty.n == 0 and empty.items == []


def test_result_does_not_depend_on_threads():
    # the record counts go through flh_support with n_threads: bit-identical for any count
    items, _, _ = _words(3000, 9)
    one = SFP(epsilon=4.0, k=3, item_bytes=4, codebook_seed=31, n_threads=1)
    many = SFP(epsilon=4.0, k=3, item_bytes=4, codebook_seed=31, n_threads=4)
    reps = one.privatize(items, rng=1)
    a, b = one.estimate(reps), many.estimate(reps)
    assert a.items == b.items and np.array_equal(a.counts, b.counts)
    Z, npos, _ = one.tables(lambda: iter([(np.arange(3000, dtype=np.uint64), reps)]))
    assert np.array_equal(one.record_counts(Z[0], 3000, int(npos[0]), 0),
                          many.record_counts(Z[0], 3000, int(npos[0]), 0))
