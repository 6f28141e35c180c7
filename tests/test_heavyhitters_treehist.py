"""TreeHist: the Hadamard oracle's law and estimator, the levels, the pruned tree, streaming."""

import math

import numpy as np
import pytest
from scipy.linalg import hadamard
from _reference import check_reported_variance

from fastldp.heavyhitters.treehist import (
    MAX_FIRST_LEVEL_BITS, TreeHist, fo_hash, hadamard_fo_counts, hadamard_fo_table,
    treehist_levels,
)


def _naive_counts(seed, reports, hash_base, R, T, eps, candidates):
    """Per report ``r (c omega H[l, h_j(v)] - 1/T)``, summed in Python (module docstring)."""
    H = hadamard(T)
    c = (math.exp(eps) + 1) / (math.exp(eps) - 1)
    r = T / (T - 1)
    out = []
    for v in candidates:
        h = [int(fo_hash(seed, hash_base + j, np.array([v], dtype=np.uint64), T)[0])
             for j in range(R)]
        out.append(sum(r * (c * int(w) * H[int(l), h[int(j)]] - 1.0 / T)
                       for j, l, w in reports))
    return np.array(out)


def _planted(n, rng):
    """16-bit items: three heavy ones (30 %, 20 %, 15 %) and uniform background."""
    gen = np.random.default_rng(rng)
    heavy = np.array([51234, 7, 40000], dtype=np.uint64)
    counts = [int(0.30 * n), int(0.20 * n), int(0.15 * n)]
    rest = n - sum(counts)
    items = np.concatenate([np.repeat(heavy, counts),
                            gen.integers(0, 1 << 16, rest).astype(np.uint64)])
    return items, heavy, np.array(counts)


# ---------------------------------------------------------------- the oracle
def test_part_channel_matches_hadamard_twin():
    # fails if the sign convention, the flip probability (whole eps per report), the hash of a
    # level or the row/column layout changes
    th = TreeHist(epsilon=2.0, k=2, item_bits=3, eta=1, g=3, n_rows=2, n_columns=4,
                  codebook_seed=9)
    assert th.prefix_bits == (1, 2, 3)
    H = hadamard(4)
    q = 1 / (math.exp(2.0) + 1)
    for level in range(th.g):
        law = th.part_channel(level)
        b = th.prefix_bits[level]
        assert law.shape == (1 << b, 2 * 2 * 4)
        for x in range(1 << b):
            for j in range(2):
                h = int(fo_hash(9, level * 2 + j, np.array([x], dtype=np.uint64), 4)[0])
                for l in range(4):
                    for bit, w in ((1, 1), (0, -1)):
                        want = ((1 - q) if H[l, h] == w else q) / 8
                        assert law[x, 2 * (j * 4 + l) + bit] == pytest.approx(want, rel=1e-12)
        assert np.allclose(law.sum(axis=1), 1.0)


def test_report_is_exactly_epsilon_ldp():
    # the largest likelihood ratio over items is e^eps, no more, at every identity's level;
    # fails if the report spent more than eps (or less: the ratio must reach e^eps)
    eps = 1.3
    th = TreeHist(epsilon=eps, k=2, item_bits=4, eta=2, g=2, n_rows=2, n_columns=4,
                  codebook_seed=4)
    seen = set()
    for identity in range(40):
        seen.add(int(th.levels_of(np.array([identity]))[0]))
        P = th.channel(identity)
        assert np.allclose(P.sum(axis=1), 1.0)
        ratio = (P[:, None, :] / P[None, :, :]).max()
        assert ratio <= math.exp(eps) * (1 + 1e-12)
        assert ratio == pytest.approx(math.exp(eps), rel=1e-9)
    assert seen == {0, 1}


def test_privatize_follows_the_part_law():
    # empirical law of one level's reports vs part_channel (each cell within 5 sd)
    th = TreeHist(epsilon=3.0, k=2, item_bits=4, eta=4, n_rows=2, n_columns=4, codebook_seed=2)
    assert th.g == 1
    n = 40000
    x = np.full(n, 11, dtype=np.uint64)
    reps = th.privatize(x, rng=5)
    assert reps.shape == (n, 3) and reps.dtype == np.int64
    law = th.part_channel(0)[11]  # one level: the prefix is the item
    cells = 2 * (reps[:, 0] * 4 + reps[:, 1]) + (reps[:, 2] > 0)
    freq = np.bincount(cells, minlength=16) / n
    # each cell's frequency has sd sqrt(p (1 - p) / n) <= 0.0025; 5 sd
    assert np.all(np.abs(freq - law) < 5 * np.sqrt(law * (1 - law) / n) + 1e-12)


def test_oracle_counts_match_per_report_twin():
    rng = np.random.default_rng(0)
    R, T, eps = 3, 8, 1.1
    reps = np.stack([rng.integers(0, R, 50), rng.integers(0, T, 50),
                     rng.choice([-1, 1], 50)], axis=1).astype(np.int64)
    Z = hadamard_fo_table(reps, R, T)
    naive_Z = np.zeros((R, T), dtype=np.int64)
    for j, l, w in reps:
        naive_Z[j, l] += w
    assert np.array_equal(Z, naive_Z)
    cands = np.array([0, 5, 2**40 + 3, 2**64 - 1], dtype=np.uint64)
    got = hadamard_fo_counts(7, Z, 50, 6, eps, cands)
    want = _naive_counts(7, reps, 6, R, T, eps, [int(v) for v in cands])
    assert np.allclose(got, want, rtol=1e-12, atol=1e-9)


def test_one_level_decode_matches_numpy_twin():
    # one level of a tiny instance: the level's table (np.add.at over its own reports) and the
    # counts F = Z H_T read at each hash, against level_tables + hadamard_fo_counts; fails if a
    # report landed at another level, a level used another hash base, or the scale n / n_l moved
    th = TreeHist(epsilon=2.0, k=2, item_bits=8, eta=4, g=2, n_rows=2, n_columns=8,
                  codebook_seed=13)
    rng = np.random.default_rng(1)
    n = 400
    items = rng.integers(0, 256, n).astype(np.uint64)
    ids = np.arange(1000, 1000 + n, dtype=np.uint64)
    reps = th.privatize(items, identities=ids, rng=2)
    part = th.partial(reps, identities=ids)

    def chunks():
        yield part.identities, part.reports

    chunks.memory = (part.identities, part.reports)
    levels = th.levels_of(ids)
    H = hadamard(8)
    c = (math.exp(2.0) + 1) / (math.exp(2.0) - 1)
    cands = np.arange(16, dtype=np.uint64)  # level 0: 4-bit prefixes
    for t, Z, n_t in th.level_tables(chunks):
        mine = reps[levels == t]
        naive = np.zeros((2, 8), dtype=np.int64)
        np.add.at(naive, (mine[:, 0], mine[:, 1]), mine[:, 2])
        assert n_t == mine.shape[0] and np.array_equal(Z, naive)
        if t == 0:
            F = naive @ H
            hashes = np.stack([fo_hash(13, j, cands, 8) for j in range(2)])  # base 0 * R
            want = (n / n_t) * (8 / 7) * (c * F[[0, 1], hashes.T].sum(axis=1) - n_t / 8)
            got = (n / n_t) * hadamard_fo_counts(13, Z, n_t, 0, 2.0, cands)
            assert np.allclose(got, want, rtol=1e-12)
    # the streaming path (one pass over the chunks per level) gives the same tables
    def two_chunks():
        yield part.identities[:150], part.reports[:150]
        yield part.identities[150:], part.reports[150:]
    for (t1, Z1, n1), (t2, Z2, n2) in zip(th.level_tables(chunks), th.level_tables(two_chunks)):
        assert (t1, n1) == (t2, n2) and np.array_equal(Z1, Z2)


# ---------------------------------------------------------------- the levels
def _levels_twin(m, k, c, eta):
    """The most levels whose first level has >= c k 2^eta prefixes (else 1), then the fewest
    that bring the first level to <= 24 bits, by search."""
    best = 1
    for g in range(1, m + 1):
        s = m - (g - 1) * eta
        if s >= 1 and 2**s >= c * k * 2**eta:
            best = g
    while m - (best - 1) * eta > MAX_FIRST_LEVEL_BITS:
        best += 1
    s = m - (best - 1) * eta
    return tuple(range(s, m + 1, eta))


@pytest.mark.parametrize("m", [1, 3, 8, 16, 31, 32, 33, 64])
def test_level_rule_matches_search_twin(m):
    # fails if the first level could hold fewer than c k 2^eta prefixes (wasted users), or
    # more than one level's worth more than needed, or the 24-bit cap were off
    for k in (1, 2, 5, 32, 1500):
        for c in (1, 3, 4):
            for eta in range(1, min(m, 8) + 1):
                got = treehist_levels(m, k, c, eta)
                assert got == _levels_twin(m, k, c, eta), (m, k, c, eta)
                assert got[-1] == m and 1 <= got[0] <= MAX_FIRST_LEVEL_BITS


def test_default_levels_at_the_issue_setting():
    th = TreeHist(epsilon=4.0, codebook_seed=1)
    assert th.prefix_bits == (12, 16, 20, 24, 28, 32)
    assert (th.k, th.c, th.eta, th.n_rows, th.n_columns, th.threshold) == (
        32, 4, 4, 8, 65536, None)


# ---------------------------------------------------------------- the tree
def _naive_decode(th, ids, reps, n):
    """The pruned tree of the module docstring, with per-report sums and Python lists."""
    levels = th.levels_of(ids)
    R, T, e = th.n_rows, th.n_columns, th.epsilon
    c = (math.exp(e) + 1) / (math.exp(e) - 1)
    r = T / (T - 1)
    cands = list(range(1 << th.prefix_bits[0]))
    kept_per_level = []
    for t in range(th.g):
        mine = reps[levels == t]
        n_t = mine.shape[0]
        est = (n / n_t) * _naive_counts(th.codebook_seed, mine, t * R, R, T, e, cands)
        sd = (n / n_t) * r * math.sqrt(n_t * (c * c - 1 / T**2 - (1 / T) * (1 - 1 / T) / R))
        ok = [(-est[i], cands[i], est[i]) for i in range(len(cands))
              if th.threshold is None or est[i] >= th.threshold * sd]
        top = sorted(ok)[:th.k if t == th.g - 1 else th.c * th.k]
        kept_per_level.append(len(top))
        if t == th.g - 1:
            return [v for _, v, _ in top], np.array([x for _, _, x in top]), kept_per_level
        cands = [(p << th.eta) | s for p in sorted(v for _, v, _ in top)
                 for s in range(1 << th.eta)]


@pytest.mark.parametrize("threshold", [None, 1.0])
def test_pruned_tree_matches_naive_twin(threshold):
    # candidate extension, top c k per level (ties: smaller code), optional threshold, the last
    # level's top k and its counts against the naive decode; fails if a level used another
    # hash or scale, the cap or the threshold were off, or ties broke otherwise
    th = TreeHist(epsilon=3.0, k=3, item_bits=6, eta=2, g=3, c=2, threshold=threshold,
                  n_rows=2, n_columns=64, codebook_seed=11)
    rng = np.random.default_rng(3)
    n = 1500
    items = np.where(rng.random(n) < 0.5, 45, rng.integers(0, 64, n)).astype(np.uint64)
    items[:300] = 12
    reps = th.privatize(items, rng=4)
    ids = np.arange(n, dtype=np.uint64)
    res = th.estimate(reps)
    codes, counts, kept = _naive_decode(th, ids, reps, n)
    assert res.codes.tolist() == codes
    assert np.allclose(res.counts, counts, rtol=1e-10, atol=1e-7)
    assert [lv["kept"] for lv in res.levels] == kept
    assert [lv["prefix_bits"] for lv in res.levels] == [2, 4, 6]
    assert res.codes[:2].tolist() == [45, 12]
    if threshold is None:
        assert kept == [4, 6, 3]  # all 4 prefixes of 2 bits, then c k = 6, then k = 3


def test_top_k_breaks_ties_by_the_smaller_code():
    # two candidates with the same reports' count: the smaller code ranks first. Every report
    # is the legal (0, 0, +1): F[0, h] = n for every bucket, so every candidate of a level has
    # the same count
    th = TreeHist(epsilon=2.0, k=3, item_bits=4, eta=2, g=2, c=1, n_rows=1, n_columns=2,
                  codebook_seed=3)
    reps = np.tile(np.array([[0, 0, 1]], dtype=np.int64), (200, 1))
    res = th.estimate(reps)
    # level 0: 4 prefixes tie, the 3 smallest kept (0, 1, 2); level 1: their 12 children tie
    assert res.codes.tolist() == [0, 1, 2]
    assert [lv["kept"] for lv in res.levels] == [3, 3]


def test_recall_of_planted_heavy_hitters():
    # n = 60000, eps = 4, 16-bit items, k = 3, c = 4: g = floor((16 - 4) / 4) = 3 levels of
    # ~n/3 reports. A level's null sd is ~ (n / n_l) c sqrt(n_l) = 1.037 sqrt(3 n) ~ 440 (plus
    # the 2/3 share's sampling), while the planted counts are >= 9000: each survives every
    # level's top 12; the counts are checked against 5 reported sd.
    n = 60000
    items, heavy, true = _planted(n, 8)
    th = TreeHist(epsilon=4.0, k=3, item_bits=16, codebook_seed=21)
    assert th.g == 3
    res = th.estimate(th.privatize(items, rng=9))
    assert res.items.tolist() == heavy.tolist()
    assert np.all(np.abs(res.counts - true) < 5 * res.std)


@pytest.mark.slow
def test_reported_std_matches_the_spread_over_seeds():
    # The reported variance against the sample variance of the counts of two planted items
    # (50 % and 25 % of the users) over N runs with fresh codebook seeds (a fresh level split
    # and fresh hashes) and fresh privatization. (N - 1) s^2 / sigma^2 is chi-square with N - 1
    # degrees of freedom; accept within its 0.05 % and 99.95 % quantiles ([0.88, 1.13] at
    # N = 1500). sigma^2: the mean reported variance (its spread over runs is ~2 %).
    # At eps = 4, g = 3 the sampling term f (1 - f/n)(rho - 1) is 22 % (50 % item) and 13 %
    # (25 % item) of the total. Measured when written: ratios 0.96 and 1.01; without the
    # sampling term 1.24 and 1.17 (fails), with the binomial f (rho - 1) 0.78 (fails); it
    # fails as well without the n / n_l scale or with c at eps / 2.
    check_reported_variance(lambda run: TreeHist(epsilon=4.0, k=2, item_bits=16,
                                                 n_columns=4096, codebook_seed=100 + run))


# ---------------------------------------------------------------- streaming
def test_partials_merge_bit_identically():
    th = TreeHist(epsilon=4.0, k=3, item_bits=16, eta=4, codebook_seed=21)
    items, _, _ = _planted(6000, 1)
    reps = th.privatize(items, rng=2)
    whole = th.estimate(reps)
    ids = np.arange(6000)
    parts = [th.partial(reps[a:b], identities=ids[a:b])
             for a, b in ((0, 1000), (1000, 4500), (4500, 6000))]
    for merged in (parts[0].merge(parts[1]).merge(parts[2]),
                   parts[2].merge(parts[0]).merge(parts[1])):
        res = th.finalize(merged)
        assert res.codes.tolist() == whole.codes.tolist()
        assert np.array_equal(res.counts, whole.counts)
        assert np.array_equal(res.variances, whole.variances)


def test_report_files_decode_like_estimate(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.reports import decode_files, write_reports
    th = TreeHist(epsilon=4.0, k=3, item_bits=16, eta=4, codebook_seed=21)
    items, _, _ = _planted(5000, 3)
    reps = th.privatize(items, rng=6)
    write_reports(tmp_path / "a.parquet", th, reps[:2000], identities=np.arange(2000))
    write_reports(tmp_path / "b.parquet", th, reps[2000:], identities=np.arange(2000, 5000))
    whole = th.estimate(reps)
    res = decode_files(th, [tmp_path / "a.parquet", tmp_path / "b.parquet"])
    assert res.codes.tolist() == whole.codes.tolist()
    assert np.array_equal(res.counts, whole.counts)
    assert np.array_equal(res.variances, whole.variances)
    again = TreeHist(**th.stream_params())
    assert repr(again) == repr(th)
    assert again.stream_params() == th.stream_params()


# ---------------------------------------------------------------- sanitization and inputs
def test_sanitization_replaces_illegal_reports():
    th = TreeHist(epsilon=2.0, k=2, item_bits=8, n_rows=2, n_columns=8, codebook_seed=1)
    reps = th.privatize(np.arange(10, dtype=np.uint64), rng=0).astype(np.float64)
    reps[1, 2] = 3          # omega out of range
    reps[2, 0] = 2          # row index out of range
    reps[3, 1] = 0.5        # not an integer
    reps[4, 1] = np.nan     # a float that is no integer (the oracles' convention)
    part = th.partial(reps)
    clean = part.reports
    assert part.counts["n"] == 10 and part.counts["n_valid"] == 6
    assert part.counts["reason:out_of_range"] == 2
    assert part.counts["reason:non_integer"] == 2 and part.counts["reason:non_numeric"] == 0
    assert part.wrong_dtype
    for row in (1, 2, 3, 4):
        assert clean[row, :2].tolist() == [0, 0] and abs(clean[row, 2]) == 1
    good = [0, 5, 6, 7, 8, 9]
    assert np.array_equal(clean[good], reps[good].astype(np.int64))
    res = th.estimate(reps)
    assert res.sanitization.n_valid == 6


@pytest.mark.parametrize("kwargs, name", [
    ({"epsilon": -1.0}, "epsilon"), ({"epsilon": float("nan")}, "epsilon"),
    ({"epsilon": 1.0, "n_columns": 100}, "n_columns"), ({"epsilon": 1.0, "eta": 0}, "eta"),
    ({"epsilon": 1.0, "threshold": -2.0}, "threshold"), ({"epsilon": 1.0, "c": 0}, "c"),
    ({"epsilon": 1.0, "n_rows": 0}, "n_rows"), ({"epsilon": 1.0, "g": 0}, "g"),
    ({"epsilon": 1.0, "g": 9}, "g"),   # 32 bits, eta 4: s = 32 - 8 * 4 < 1
    ({"epsilon": 1.0, "g": 2}, "g"),   # s = 28 > 24 bits at the first level
])
def test_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=f"'{name}' parameter of TreeHist"):
        TreeHist(**kwargs)


def test_bad_reports_and_items():
    th = TreeHist(epsilon=1.0, k=2, item_bits=8, codebook_seed=1)
    with pytest.raises(ValueError, match="shape"):
        th.estimate(np.zeros((5, 6), dtype=np.int64))
    with pytest.raises(ValueError, match="items"):
        th.privatize([256])
    with pytest.raises(ValueError, match="epsilons"):
        th.estimate(th.privatize([1, 2], rng=0), epsilons=[2.0, 2.0])
    empty = th.estimate(np.zeros((0, 3), dtype=np.int64))
    assert empty.n == 0 and len(empty.codes) == 0


def test_fast_legal_path_agrees_with_the_classifying_path():
    # legal integer reports skip the classification; the result must be the same rows
    th = TreeHist(epsilon=2.0, k=2, item_bits=8, n_rows=2, n_columns=8, codebook_seed=1)
    reps = th.privatize(np.arange(50, dtype=np.uint64), rng=0)
    fast, slow = th.partial(reps), th.partial(reps.astype(np.float64))
    assert np.array_equal(fast.reports, slow.reports) and fast.counts == slow.counts
    assert not fast.wrong_dtype and slow.wrong_dtype
    as_u64 = reps.astype(np.uint64)  # omega = -1 wraps to 2**64 - 1: out of range, not -1
    assert th.partial(as_u64).counts["n_valid"] == int((reps[:, 2] == 1).sum())
    bad = reps.astype(np.int32)
    bad[3, 1] = 8  # one column out of range: the whole array takes the classifying path
    part = th.partial(bad)
    assert part.counts["reason:out_of_range"] == 1
    assert np.array_equal(np.delete(part.reports, 3, 0), np.delete(reps, 3, 0))


# ---------------------------------------------------------------- pinned results
def test_short_items_pinned_results():
    # Fixed-seed results of these defaults, recorded before long items (> 8 bytes) were added:
    # integers and strings of <= 64 bits must stay bit-identical (same codes, same floats).
    # Re-recorded when int seeds were keyed (issue 37: rng=2 is no longer default_rng(2)).
    gen = np.random.default_rng(1)
    heavy = np.array([51234, 7, 40000], dtype=np.uint64)
    items = np.concatenate([np.repeat(heavy, [1800, 1200, 900]),
                            gen.integers(0, 1 << 16, 2100).astype(np.uint64)])
    th = TreeHist(epsilon=4.0, k=4, item_bits=16, codebook_seed=21)
    res = th.estimate(th.privatize(items, rng=2))
    assert res.codes.tolist() == [51234, 7, 40000, 2]
    assert res.counts.tolist() == [1761.991357989629, 1179.737873984426, 1014.2553048461052,
                                   346.19604425066166]
    assert res.variances.tolist() == [16299.995372303147, 17440.170265638993,
                                      17723.918538006357, 18688.052134229278]
    gen = np.random.default_rng(7)
    noise = [bytes(gen.integers(97, 123, 4).astype(np.uint8)) for _ in range(6000)]
    words = [b"the"] * 12000 + [b"of"] * 7500 + [b"and"] * 4500 + noise
    # recorded with the string defaults before issue 34 (4-bit levels, no pooling of ended
    # strings), which are now passed explicitly
    th = TreeHist(epsilon=4.0, k=3, item_bytes=4, codebook_seed=5, eta=4, pool_ended=False)
    assert th.prefix_bits == (8, 12, 16, 20, 24, 28, 32)
    res = th.estimate(th.privatize(words, rng=4))
    assert res.items == [b"the", b"of", b"and"]
    assert res.codes.tolist() == [1952998656, 1868955648, 1634624512]
    assert res.counts.tolist() == [11359.624203709844, 7305.576977940968, 4039.00655142216]
    assert res.variances.tolist() == [189613.87955036372, 208875.94551394013, 219590.63768576825]
