"""TreeHist: the Hadamard oracle's law and estimator, the pruned tree, streaming, sanitization."""

import math

import numpy as np
import pytest
from scipy.linalg import hadamard

from fastldp.heavyhitters.treehist import TreeHist, fo_hash, hadamard_fo_counts, hadamard_fo_table


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
    # fails if the sign convention, the flip probability or the row/column layout changes
    th = TreeHist(epsilon=2.0, k=2, item_bits=3, eta=1, n_rows=2, n_columns=4, codebook_seed=9)
    H = hadamard(4)
    q = 1 / (math.exp(1.0) + 1)  # each part at eps / 2
    for level in range(th.g + 1):
        law = th.part_channel(level)
        b = 3 if level == th.g else th.prefix_bits[level]
        assert law.shape == (1 << b, 2 * 2 * 4)
        for x in range(1 << b):
            for j in range(2):
                h = int(fo_hash(9, level * 2 + j, np.array([x], dtype=np.uint64), 4)[0])
                for l in range(4):
                    for bit, w in ((1, 1), (0, -1)):
                        want = ((1 - q) if H[l, h] == w else q) / 8
                        assert law[x, 2 * (j * 4 + l) + bit] == pytest.approx(want, rel=1e-12)
        assert np.allclose(law.sum(axis=1), 1.0)


def test_whole_report_is_exactly_epsilon_ldp():
    # the largest likelihood ratio over items is e^eps, not more (two parts at eps/2 each);
    # fails if a part were given the whole eps
    eps = 1.3
    th = TreeHist(epsilon=eps, k=2, item_bits=4, eta=2, n_rows=2, n_columns=4, codebook_seed=4)
    for identity in range(4):
        P = th.channel(identity)
        assert np.allclose(P.sum(axis=1), 1.0)
        ratio = (P[:, None, :] / P[None, :, :]).max()
        assert ratio <= math.exp(eps) * (1 + 1e-12)
        assert ratio == pytest.approx(math.exp(eps), rel=1e-9)


def test_privatize_follows_the_part_law():
    # empirical law of the prefix part of one level vs part_channel (chi-square style bound)
    th = TreeHist(epsilon=3.0, k=2, item_bits=4, eta=4, n_rows=2, n_columns=4, codebook_seed=2)
    n = 40000
    x = np.full(n, 11, dtype=np.uint64)
    reps = th.privatize(x, rng=5)
    assert reps.shape == (n, 6) and reps.dtype == np.int64
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


# ---------------------------------------------------------------- the tree
def _naive_decode(th, ids, reps, n):
    """The pruned tree of the module docstring, with per-report sums."""
    levels = th.levels_of(ids)
    R, T, e = th.n_rows, th.n_columns, th.part_epsilon
    c = (math.exp(e) + 1) / (math.exp(e) - 1)
    r = T / (T - 1)
    cands = list(range(1 << th.prefix_bits[0]))
    kept_per_level = []
    for t in range(th.g):
        mine = reps[levels == t][:, :3]
        n_t = mine.shape[0]
        est = (n / n_t) * _naive_counts(th.codebook_seed, mine, t * R, R, T, e, cands)
        sd = (n / n_t) * r * math.sqrt(n_t * (c * c - 1 / T**2 - (1 / T) * (1 - 1 / T) / R))
        ok = [(-est[i], cands[i]) for i in range(len(cands)) if est[i] >= th.threshold * sd]
        kept = sorted(v for _, v in sorted(ok)[:th.c * th.k])
        kept_per_level.append(len(kept))
        if t < th.g - 1:
            cands = [(p << th.eta) | s for p in kept for s in range(1 << th.eta)]
    final = _naive_counts(th.codebook_seed, reps[:, 3:], th.g * R, R, T, e, kept)
    order = sorted(range(len(kept)), key=lambda i: (-final[i], kept[i]))[:th.k]
    return [kept[i] for i in order], final[order], kept_per_level


def test_pruned_tree_matches_naive_twin():
    # candidate extension, threshold, cap c*k, final count and top-k against the naive decode;
    # fails if a level used another hash, the cap or the threshold were off, or ties broke otherwise
    th = TreeHist(epsilon=3.0, k=3, item_bits=6, eta=2, c=2, threshold=1.0, n_rows=2,
                  n_columns=16, codebook_seed=11)
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


def test_recall_of_planted_heavy_hitters():
    # n = 60000, eps = 4, eta = 4 on 16 bits: g = 4 levels of ~n/4 reports. Per part eps/2 = 2,
    # c = coth(1) = 1.313; the sd of a prefix count is sigma ~ sqrt(g n) c r ~ 644, so the
    # threshold is 3 sigma ~ 1930 and the planted counts (>= 9000, i.e. >= 14 sigma) survive every
    # level with overwhelming probability; their final counts (all n reports) are checked
    # against 5 reported sd.
    n = 60000
    items, heavy, true = _planted(n, 8)
    th = TreeHist(epsilon=4.0, k=3, item_bits=16, eta=4, codebook_seed=21)
    res = th.estimate(th.privatize(items, rng=9))
    assert res.items.tolist() == heavy.tolist()
    assert np.all(np.abs(res.counts - true) < 5 * res.std)


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
    # the tables do not depend on the chunking either
    def chunks_of(size):
        return lambda: ((ids[a:a + size].astype(np.uint64), reps[a:a + size])
                        for a in range(0, 6000, size))
    for u, v in zip(th.tables(chunks_of(6000)), th.tables(chunks_of(777))):
        assert np.array_equal(u, v)


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
    again = TreeHist(**th.stream_params())
    assert repr(again) == repr(th)
    assert again.stream_params() == th.stream_params()


# ---------------------------------------------------------------- sanitization and inputs
def test_sanitization_replaces_illegal_parts():
    th = TreeHist(epsilon=2.0, k=2, item_bits=8, n_rows=2, n_columns=8, codebook_seed=1)
    reps = th.privatize(np.arange(10, dtype=np.uint64), rng=0).astype(np.float64)
    reps[1, 2] = 3          # omega out of range
    reps[2, 3] = 2          # row index out of range (item part)
    reps[3, 1] = 0.5        # not an integer
    reps[4, 4] = np.nan     # a float that is no integer (the oracles' convention)
    part = th.partial(reps)
    clean = part.reports
    assert part.counts["n"] == 10 and part.counts["n_valid"] == 6
    assert part.counts["reason:out_of_range"] == 2
    assert part.counts["reason:non_integer"] == 2 and part.counts["reason:non_numeric"] == 0
    assert part.wrong_dtype
    for row, cols in ((1, slice(0, 3)), (2, slice(3, 6)), (3, slice(0, 3)), (4, slice(3, 6))):
        assert clean[row, cols][:2].tolist() == [0, 0] and abs(clean[row, cols][2]) == 1
    good = [0, 5, 6, 7, 8, 9]
    assert np.array_equal(clean[good], reps[good].astype(np.int64))
    res = th.estimate(reps)
    assert res.sanitization.n_valid == 6


@pytest.mark.parametrize("kwargs, name", [
    ({"epsilon": -1.0}, "epsilon"), ({"epsilon": float("nan")}, "epsilon"),
    ({"epsilon": 1.0, "n_columns": 100}, "n_columns"), ({"epsilon": 1.0, "eta": 0}, "eta"),
    ({"epsilon": 1.0, "threshold": -2.0}, "threshold"), ({"epsilon": 1.0, "c": 0}, "c"),
    ({"epsilon": 1.0, "n_rows": 0}, "n_rows"),
])
def test_bad_parameters(kwargs, name):
    with pytest.raises(ValueError, match=f"'{name}' parameter of TreeHist"):
        TreeHist(**kwargs)


def test_bad_reports_and_items():
    th = TreeHist(epsilon=1.0, k=2, item_bits=8, codebook_seed=1)
    with pytest.raises(ValueError, match="shape"):
        th.estimate(np.zeros((5, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="items"):
        th.privatize([256])
    with pytest.raises(ValueError, match="epsilons"):
        th.estimate(th.privatize([1, 2], rng=0), epsilons=[2.0, 2.0])
    empty = th.estimate(np.zeros((0, 6), dtype=np.int64))
    assert empty.n == 0 and len(empty.codes) == 0


def test_fast_legal_path_agrees_with_the_classifying_path():
    # legal integer reports skip the classification; the result must be the same rows
    th = TreeHist(epsilon=2.0, k=2, item_bits=8, n_rows=2, n_columns=8, codebook_seed=1)
    reps = th.privatize(np.arange(50, dtype=np.uint64), rng=0)
    fast, slow = th.partial(reps), th.partial(reps.astype(np.float64))
    assert np.array_equal(fast.reports, slow.reports) and fast.counts == slow.counts
    assert not fast.wrong_dtype and slow.wrong_dtype
    as_u64 = reps.astype(np.uint64)  # omega = -1 wraps to 2**64 - 1: out of range, not -1
    assert th.partial(as_u64).counts["n_valid"] == int((reps[:, [2, 5]] == 1).all(axis=1).sum())
    bad = reps.astype(np.int32)
    bad[3, 4] = 8  # one column out of range: the whole array takes the classifying path
    part = th.partial(bad)
    assert part.counts["reason:out_of_range"] == 1
    assert np.array_equal(np.delete(part.reports, 3, 0), np.delete(reps, 3, 0))
