"""PEM (fastldp.heavyhitters.pem) and its kernel, against naive twins.

Naive twins: the OLH hash from ``numpy.random.Philox`` (tests/_reference.py),
support counts by a Python loop, and a plain-Python PEM decode that runs
``fastldp.oracles.OLH.estimate`` on *every* prefix of each level and
extends / selects candidates with Python lists.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from _reference import check_reported_variance, numpy_philox_block, numpy_olh_bucket
from fastldp.heavyhitters import PEM, HeavyHitters, HeavyPartial
from fastldp.heavyhitters.data import true_top_k
from fastldp.heavyhitters.metrics import recall_at_k
from fastldp._kernels._heavy import heavy_buckets, heavy_groups, heavy_support
from fastldp.oracles import OLH

#: PEM before issue 34 (4-bit levels, the fixed width c k, no pooling of ended strings):
#: the pinned and naive-twin tests below were written for it
LEGACY = dict(eta=4, z=None, pool_ended=False)

TWO64 = 2**64


def naive_bucket(seed, identity, code, g):
    """The OLH bucket of a uint64 code read as int64: block (int64 code) >> 3, lane code & 7."""
    signed = code - TWO64 if code >= 2**63 else code
    block = numpy_philox_block(seed, identity, (signed >> 3) % TWO64, stream=1)
    lane = code & 7
    word = int(block[lane >> 1])
    value = (word >> 32) if lane & 1 else (word & 0xFFFFFFFF)
    return (value * g) >> 32


# ------------------------------------------------------------------ kernel
def test_heavy_buckets_is_the_olh_hash_and_covers_64_bit_codes():
    rng = np.random.default_rng(0)
    ids = rng.integers(0, 2**40, 40).astype(np.uint64)
    small = rng.integers(0, 2**62, 20).astype(np.uint64)
    big = (rng.integers(0, 2**62, 20).astype(np.uint64) | np.uint64(2**63))
    codes = np.concatenate([small, big])
    g = np.full(40, 57, dtype=np.int64)
    got = heavy_buckets(11, ids, codes, g)
    want = [naive_bucket(11, int(i), int(c), 57) for i, c in zip(ids, codes)]
    assert got.tolist() == want
    # below 2^63 the same as OLH's own hash twin
    assert got[:20].tolist() == [numpy_olh_bucket(11, int(i), int(c), 57)
                                 for i, c in zip(ids[:20], small)]


def test_heavy_support_counts_match_a_loop_for_any_candidates_and_threads():
    rng = np.random.default_rng(1)
    n = 300
    ids = rng.permutation(10_000)[:n].astype(np.uint64)
    g = rng.integers(2, 9, n).astype(np.int64)
    reports = (rng.random(n) * g).astype(np.int64)
    # unsorted, with repeats, a run of 10 codes of one block (counted 8 at a time), runs
    # across blocks and codes beyond 2^63
    cand = np.array([0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 5, 6, 7, 8, 3, 3, 2**63 + 1, 2**63 + 2,
                     1000, 17], dtype=np.uint64)
    want = [sum(naive_bucket(7, int(i), int(c), int(gi)) == int(y)
                for i, y, gi in zip(ids, reports, g)) for c in cand]
    one = heavy_support(7, ids, reports, g, cand, 1)
    assert one.tolist() == want
    assert np.array_equal(one, heavy_support(7, ids, reports, g, cand, 2))


def test_heavy_groups_match_the_naive_twin():
    ids = np.array([0, 1, 2, 99, 2**63 + 5], dtype=np.uint64)
    want = [((int(numpy_philox_block(3, int(i), 0, stream=2)[2]) >> 32) * 7) >> 32 for i in ids]
    assert heavy_groups(3, ids, 7).tolist() == want


def test_kernel_refuses_out_of_range_reports():
    ids = np.arange(2, dtype=np.uint64)
    with pytest.raises(ValueError, match="reports must lie"):
        heavy_support(0, ids, np.array([0, 5]), np.array([4, 4]), np.arange(3, dtype=np.uint64))


# ------------------------------------------------------------------ parameters
def test_default_levels():
    pem = PEM(epsilon=4.0, k=32, item_bits=32, codebook_seed=0)
    # s_min = log2(32) + 4 = 9, g = 1 + ceil(23 / 4) = 7, s = 32 - 24 = 8
    assert (pem.g, pem.eta, pem.c, pem.s) == (7, 4, 1, 8)
    assert pem.prefix_bits == (8, 12, 16, 20, 24, 28, 32)
    assert pem.n_buckets == round(math.exp(4)) + 1
    assert PEM(epsilon=1.0, k=32, item_bits=8, codebook_seed=0).prefix_bits == (8,)
    assert PEM(epsilon=1.0, item_bytes=8, codebook_seed=0).prefix_bits[-1] == 64


@pytest.mark.parametrize("kwargs, match", [
    ({"epsilon": float("nan")}, "'epsilon' parameter of PEM"),
    ({"epsilon": 0.0}, "'epsilon' parameter of PEM"),
    ({"epsilon": 1.0, "k": 0}, "'k' parameter of PEM"),
    ({"epsilon": 1.0, "item_bits": 65}, "'item_bits' parameter of PEM"),
    ({"epsilon": 1.0, "item_bits": 8, "item_bytes": 1}, "'item_bytes' parameter of PEM"),
    ({"epsilon": 1.0, "item_bits": 32, "g": 9, "eta": 4}, "'g' parameter of PEM"),
    ({"epsilon": 1.0, "item_bits": 32, "g": 1}, "'g' parameter of PEM"),  # s = 32 > 24
    ({"epsilon": 1.0, "c": 0}, "'c' parameter of PEM"),
    ({"epsilon": 1.0, "eta": 0}, "'eta' parameter of PEM"),
])
def test_bad_parameters(kwargs, match):
    with pytest.raises(ValueError, match=match):
        PEM(codebook_seed=0, **kwargs)


def test_bad_calls():
    pem = PEM(epsilon=2.0, k=2, item_bits=8, codebook_seed=0)
    with pytest.raises(ValueError, match="'items' parameter of PEM"):
        pem.privatize([1, 256])
    with pytest.raises(ValueError, match="'epsilons' parameter of PEM.privatize"):
        pem.privatize([1, 2], epsilons=1.0)
    pem.privatize([1, 2], epsilons=2.0, rng=0)  # the constructor's budget is accepted
    with pytest.raises(ValueError, match="'epsilons' parameter of PEM.estimate"):
        pem.estimate(np.zeros(2, dtype=np.int64), epsilons=[2.0, 3.0])
    with pytest.raises(ValueError, match="'epsilons' parameter of PEM.estimate"):
        pem.estimate(np.zeros(2, dtype=np.int64), epsilons=["a", "b"])
    with pytest.raises(ValueError, match="one report per identity"):
        pem.estimate(np.zeros((2, 2), dtype=np.int64))
    with pytest.raises(ValueError, match="'identities' parameter"):
        pem.estimate(np.zeros(2, dtype=np.int64), identities=[3, 3])


# ------------------------------------------------------------------ client law
def test_each_level_is_olh_on_its_prefix_domain():
    """The exact law of a report is OLH's channel on the 2^b prefixes, for every level."""
    pem = PEM(epsilon=1.5, k=1, g=3, eta=2, item_bits=6, codebook_seed=9)
    groups = pem.groups(np.arange(200, dtype=np.uint64))
    for level in range(3):
        identity = int(np.flatnonzero(groups == level)[0])
        b, law = pem.level_channel(identity)
        assert b == pem.prefix_bits[level] == 2 + 2 * level
        olh = OLH(domain_size=2**b, epsilon=1.5, codebook_seed=9)
        assert np.array_equal(law, olh.channel(1.5, identity=identity))


def test_privatize_follows_the_level_law():
    """Empirical law of one identity's report, item fixed, over 4,000 draws.

    Each bucket frequency is Binomial(N, P[y]) / N: |freq - P| < 5 sqrt(P(1-P)/N)
    fails with probability < 1e-5 per bucket.
    """
    pem = PEM(epsilon=1.0, k=1, g=2, eta=3, item_bits=8, codebook_seed=4)
    identity = 17
    b, law = pem.level_channel(identity)
    item = 0b10110101
    x = item >> (8 - b)
    N = 4000
    rng = np.random.default_rng(5)
    draws = np.array([pem.privatize([item], identities=[identity], rng=rng)[0]
                      for _ in range(N)])
    freq = np.bincount(draws, minlength=law.shape[1]) / N
    P = law[x]
    assert np.all(np.abs(freq - P) < 5 * np.sqrt(P * (1 - P) / N))


# ------------------------------------------------------------------ decode vs naive twin
def naive_levels(pem, counts_of):
    """Plain-Python prefix extension: level ``j``'s candidates (all ``2^b`` prefixes, then the
    ``eta``-bit children of the kept ones), ranked by ``counts_of(j, b, candidates)[v]``
    (ties: the smaller prefix), ``c k`` kept per level and ``k`` at the last."""
    kept = None
    for j, b in enumerate(pem.prefix_bits):
        if kept is None:
            candidates = list(range(2**b))
        else:
            candidates = [(v << pem.eta) | t for v in kept for t in range(2**pem.eta)]
        est = counts_of(j, b, candidates)
        ranked = sorted(candidates, key=lambda v: (-est[v], v))
        last = j == pem.g - 1
        top = ranked[: (pem.k if last else pem.c * pem.k)]
        if last:
            return top, [est[v] for v in top]
        kept = sorted(top)


def naive_pem(pem, reports, identities, n):
    """Plain-Python PEM: OLH.estimate of every prefix per level, Python candidate lists."""
    groups = pem.groups(identities)

    def counts_of(j, b, candidates):
        mine = groups == j
        olh = OLH(domain_size=2**b, epsilon=pem.epsilon, codebook_seed=pem.codebook_seed)
        return olh.estimate(reports[mine], identities=identities[mine]).counts * (
            n / int(mine.sum()))
    return naive_levels(pem, counts_of)


@pytest.mark.parametrize("c, eta", [(1, 2), (2, 3)])
def test_decode_matches_the_naive_twin(c, eta):
    rng = np.random.default_rng(2)
    n = 6000
    # z=None: the paper's fixed width c k, which the naive twin implements (issue 34's
    # noise-following width is tested in test_heavyhitters_text.py)
    pem = PEM(epsilon=3.0, k=3, c=c, eta=eta, g=3, item_bits=2 + 2 * eta, codebook_seed=21,
              z=None)
    heavy = rng.integers(0, 2**pem.item_bits, 4)
    items = np.where(rng.random(n) < 0.7, heavy[rng.integers(0, 4, n)],
                     rng.integers(0, 2**pem.item_bits, n)).astype(np.uint64)
    ids = rng.permutation(10**6)[:n].astype(np.uint64)
    reports = pem.privatize(items, identities=ids, rng=3)
    result = pem.estimate(reports, identities=ids)
    top, counts = naive_pem(pem, reports, ids, n)
    assert result.codes.tolist() == top
    np.testing.assert_allclose(result.counts, counts, rtol=1e-12)
    first = 2**pem.s
    second = min(first, c * 3) * 2**eta  # the c k kept prefixes (or all), each extended
    assert [lv["n_candidates"] for lv in result.levels] == [
        first, second, min(second, c * 3) * 2**eta]


# ------------------------------------------------------------------ utility
def test_planted_heavy_hitters_are_found_with_calibrated_errors():
    """n = 100,000, 2^32 items, eps = 4, k = 8: 8 items of 5,000 users each, the rest uniform.

    Tolerance: G = 56 buckets, p = 0.498, so V0 = (1/G)(1-1/G)/(p-1/G)^2 = 0.076
    and V1 = p(1-p)/(p-1/G)^2 = 1.08. Group J holds n_J ~ n/g = 12,500 reports
    and f_J ~ 625 holders of a planted item: Var f_J = n_J V0 + f_J (V1 - V0)
    ~ 1,580; scaled by r = n/n_J = 8 and with the group-sampling term
    f (r - 1) = 35,000, a population count has sd ~ sqrt(64 * 1,580 + 35,000)
    ~ 370. A noise candidate's count has sd ~ 8 sqrt(950) ~ 250, so a planted
    prefix (5,000) beats the largest of <= 128 noise candidates (~ 2.7 sd ~ 700)
    by > 15 sd at every level: recall is 1 except with negligible probability,
    and each count lies within 5 std of 5,000.
    """
    rng = np.random.default_rng(8)
    n = 100_000
    planted = rng.integers(0, 2**32, 8).astype(np.uint64)
    items = np.concatenate([np.repeat(planted, 5000),
                            rng.integers(0, 2**32, n - 40_000).astype(np.uint64)])
    pem = PEM(epsilon=4.0, k=8, item_bits=32, codebook_seed=77)
    result = pem.estimate(pem.privatize(items, rng=9))
    assert isinstance(result, HeavyHitters)
    assert recall_at_k(result.items, planted) == 1.0
    assert np.all(np.abs(result.counts - 5000) < 5 * result.std)
    # the plug-in sd agrees with the derivation above (~ 370; n_J varies by ~ 1%)
    assert np.all((result.std > 320) & (result.std < 420))


def test_64_bit_and_string_items():
    rng = np.random.default_rng(4)
    top = np.array([2**64 - 1, 2**63 + 12345, 7], dtype=np.uint64)
    items = np.concatenate([np.repeat(top, [4000, 3000, 2000]),
                            rng.integers(0, 2**63, 3000).astype(np.uint64)])
    pem = PEM(epsilon=5.0, k=3, item_bits=64, codebook_seed=1)
    result = pem.estimate(pem.privatize(items, rng=5))
    assert result.items.tolist() == top.tolist()
    words = [b"the"] * 3000 + [b"of"] * 2000 + [b"x"] * 500
    spem = PEM(epsilon=5.0, k=2, item_bytes=4, codebook_seed=2)
    sres = spem.estimate(spem.privatize(words, rng=6))
    assert sres.items == [b"the", b"of"]
    assert sres.categories == ("the", "of")
    assert list(sres.to_frame()["category"]) == ["the", "of"]
    assert len(repr(sres)) <= 200


# ------------------------------------------------------------------ partials and threads
def test_partials_merge_bit_identically_in_any_order():
    rng = np.random.default_rng(3)
    n = 3000
    pem = PEM(epsilon=2.0, k=4, item_bits=16, codebook_seed=5)
    items = rng.zipf(1.5, n).clip(max=2**16 - 1).astype(np.uint64)
    ids = rng.permutation(50_000)[:n].astype(np.uint64)
    reports = pem.privatize(items, identities=ids, rng=1)
    whole = pem.estimate(reports, identities=ids)
    cuts = [0, 700, 1900, n]
    parts = [pem.partial(reports[a:b], identities=ids[a:b]) for a, b in zip(cuts, cuts[1:])]
    ab_c = pem.merge(pem.merge(parts[0], parts[1]), parts[2])
    c_ba = pem.merge(parts[2], pem.merge(parts[1], parts[0]))
    assert ab_c == c_ba == pem.partial(reports, identities=ids)
    for merged in (ab_c, c_ba, HeavyPartial.from_bytes(c_ba.to_bytes())):
        got = pem.finalize(merged)
        assert got.codes.tolist() == whole.codes.tolist()
        assert got.counts.tobytes() == whole.counts.tobytes()
        assert got.variances.tobytes() == whole.variances.tobytes()
    with pytest.raises(ValueError, match="appears twice"):
        pem.merge(parts[0], parts[0])
    other = PEM(epsilon=2.0, k=4, item_bits=16, codebook_seed=6)
    with pytest.raises(ValueError, match="merge only when"):
        pem.merge(parts[0], other.partial(reports[:5], identities=ids[:5]))


def test_results_do_not_depend_on_threads():
    rng = np.random.default_rng(6)
    items = rng.integers(0, 2**20, 5000).astype(np.uint64)
    out = []
    for nt in (1, 2):
        pem = PEM(epsilon=3.0, k=4, item_bits=20, codebook_seed=3, n_threads=nt)
        reports = pem.privatize(items, rng=0)
        out.append(pem.estimate(reports))
    assert out[0].codes.tolist() == out[1].codes.tolist()
    assert out[0].counts.tobytes() == out[1].counts.tobytes()


# ------------------------------------------------------------------ sanitization
def test_malformed_reports_are_sanitized_and_counted():
    pem = PEM(epsilon=2.0, k=2, item_bits=8, codebook_seed=0)
    reports = pem.privatize(np.arange(10, dtype=np.uint64), rng=0)
    G = pem.n_buckets
    bad = reports.astype(object)
    bad[0], bad[1], bad[2], bad[3], bad[4] = float("nan"), -1, G, 2.5, "x"
    result = pem.estimate(bad)
    san = result.sanitization
    assert (san.n_received, san.n_valid) == (10, 5)
    # NaN is a number that is not an integer (the oracles count it so too)
    assert san.by_reason == {"non_numeric": 1, "non_integer": 2, "out_of_range": 2}
    # the replacement is public: the same malformed reports decode the same way
    again = pem.estimate(bad)
    assert again.counts.tobytes() == result.counts.tobytes()


# ------------------------------------------------------------------ report files
def test_report_files_decode_bit_identically_in_level_passes(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp import mechanisms
    from fastldp.reports import ReportFile, decode_files, write_reports

    rng = np.random.default_rng(7)
    n = 4000
    pem = PEM(epsilon=3.0, k=4, item_bits=24, codebook_seed=8)
    items = rng.zipf(1.4, n).clip(max=2**24 - 1).astype(np.uint64)
    reports = pem.privatize(items, rng=2)
    path = write_reports(tmp_path / "pem.parquet", pem, reports, row_group_size=700)
    rebuilt = mechanisms.from_spec(ReportFile(path).spec)
    assert repr(rebuilt) == repr(pem)
    got = decode_files(rebuilt, path)
    want = pem.estimate(reports)
    assert got.codes.tolist() == want.codes.tolist()
    assert got.counts.tobytes() == want.counts.tobytes()
    assert got.sanitization == want.sanitization
    assert got.n == n
    # the partial / merge path over row groups agrees too
    merged = decode_files(rebuilt, path, finalize=False)
    assert pem.finalize(merged).counts.tobytes() == want.counts.tobytes()


def test_cli_decode_and_the_dask_path(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    from fastldp import cli
    from fastldp.reports import write_reports

    pem = PEM(epsilon=5.0, k=2, item_bytes=3, codebook_seed=4)
    words = [b"cat"] * 3000 + [b"dog"] * 2000 + [b"x"] * 200
    reports = pem.privatize(words, rng=0)
    path = write_reports(tmp_path / "w.parquet", pem, reports, row_group_size=1000)
    assert cli.main(["decode", str(path), "--quiet"]) == 0
    out = capsys.readouterr().out
    assert "1 file(s), 5,200 reports of PEM" in out
    assert "top items: cat: " in out and ", dog: " in out
    pytest.importorskip("dask")
    from fastldp import distributed

    # partial per row group, merged as a tree (dask's local scheduler): the same result
    got = distributed.estimate(pem, str(path))
    want = pem.estimate(reports)
    assert got.items == want.items == [b"cat", b"dog"]
    assert got.counts.tobytes() == want.counts.tobytes()


_SPLIT_PEM = PEM(epsilon=2.0, k=3, item_bits=12, codebook_seed=31)
_SPLIT_REPORTS = _SPLIT_PEM.privatize(
    np.random.default_rng(0).zipf(1.3, 600).clip(max=4095).astype(np.uint64), rng=1)
_SPLIT_WHOLE = _SPLIT_PEM.estimate(_SPLIT_REPORTS)


@settings(max_examples=15, deadline=None)
@given(st.lists(st.integers(1, 599), max_size=5, unique=True), st.randoms(use_true_random=False))
def test_any_split_and_merge_order_is_bit_identical(cuts, order):
    cuts = [0, *sorted(cuts), 600]
    ids = np.arange(600, dtype=np.uint64)
    parts = [_SPLIT_PEM.partial(_SPLIT_REPORTS[a:b], identities=ids[a:b])
             for a, b in zip(cuts, cuts[1:])]
    order.shuffle(parts)
    merged = parts[0]
    for part in parts[1:]:
        merged = _SPLIT_PEM.merge(part, merged) if order.random() < 0.5 else \
            _SPLIT_PEM.merge(merged, part)
    assert merged == _SPLIT_PEM.partial(_SPLIT_REPORTS)  # the state itself, in identity order
    got = _SPLIT_PEM.finalize(merged)
    assert got.codes.tolist() == _SPLIT_WHOLE.codes.tolist()
    assert got.counts.tobytes() == _SPLIT_WHOLE.counts.tobytes()
    assert got.variances.tobytes() == _SPLIT_WHOLE.variances.tobytes()


# ------------------------------------------------------------------ short items: pinned
def test_short_items_are_bit_identical_to_the_result_before_long_items():
    """Recorded at commit 86494c0 (before items over 8 bytes): reports and results of
    integer and 6-byte-string items must not change by one bit (the variances: see below).
    Re-recorded when int seeds were keyed (issue 37: ``rng=12`` is no longer
    ``default_rng(12)``, and the data's ``rng=11`` draws the data purpose's stream)."""
    import hashlib

    from fastldp.heavyhitters import data

    items = data.zipf_items(30000, item_bits=32, exponent=1.3, support=1000, rng=11)
    # LEGACY: the settings these were recorded with (issue 34 changed the defaults)
    pem = PEM(epsilon=3.0, k=6, item_bits=32, codebook_seed=7, **LEGACY)
    rep = pem.privatize(items, rng=12)
    assert hashlib.sha256(rep.tobytes()).hexdigest()[:16] == "2cbfd929ee20e5d1"
    r = pem.estimate(rep)
    assert r.items.tolist() == [1916155337, 3999007450, 2350767446, 2761033892, 2350767547,
                                2350767451]
    assert [float(x).hex() for x in r.counts] == [
        '0x1.105b6ba84b63dp+13', '0x1.d6de651de3a18p+11', '0x1.3156b2cbe1e01p+11',
        '0x1.731826ddb3bc5p+10', '0x1.c8593a86f9ef1p+8', '0x1.a58007832f758p+8']
    # the variances were re-recorded when the group-sampling term got its finite-population
    # correction f (1 - f/n)(r - 1) (test_reported_std_matches_the_spread_over_seeds)
    assert [float(x).hex() for x in r.variances] == [
        '0x1.3f5054d170b24p+17', '0x1.98ba5c03d9ed3p+16', '0x1.53bdd4d34f614p+16',
        '0x1.1fd9ffa99353bp+16', '0x1.ccb4ab3d66512p+15', '0x1.c8bdaf585a23fp+15']
    words = data.word_items(30000, item_bytes=6, rng=13)
    spem = PEM(epsilon=4.0, k=5, item_bytes=6, codebook_seed=8, **LEGACY)
    srep = spem.privatize(words, rng=14)
    assert hashlib.sha256(srep.tobytes()).hexdigest()[:16] == "e6e8870e42791ab8"
    s = spem.estimate(srep)
    # the decode drops impossible candidates (a set bit after a zero byte:
    # items.string_prefix_mask); the fifth is a possible string, a false positive of k = 5
    assert s.items == [b'the', b'is', b'and', b'to', b'and\x03\x95\xb1']
    assert [float(x).hex() for x in s.counts] == [
        '0x1.581d7972b4473p+11', '0x1.4da378bf8c9dcp+10', '0x1.65d0b570ad111p+9',
        '0x1.1873266d12068p+9', '0x1.7c61547c64f42p+8']


# ------------------------------------------------------------------ long items (> 8 bytes)
def test_long_item_defaults_and_parameters():
    pem = PEM(epsilon=4.0, k=32, item_bytes=16, codebook_seed=0, eta=4)  # issue 34: default 8
    # m = 128, s_min = 5 + 4 = 9: g = 1 + ceil(119 / 4) = 31, s = 128 - 30 * 4 = 8
    assert (pem.g, pem.eta, pem.s) == (31, 4, 8)
    assert pem.prefix_bits == tuple(range(8, 129, 4))
    wide = PEM(epsilon=4.0, k=32, item_bytes=16, eta=8, codebook_seed=0)
    # s_min = 5 + 8 = 13: g = 1 + ceil(115 / 8) = 16, s = 128 - 120 = 8
    assert (wide.g, wide.s) == (16, 8)
    assert PEM(epsilon=4.0, item_bytes=64, g=100, eta=5, codebook_seed=0).s == 17
    with pytest.raises(ValueError, match=r"'eta' parameter of PEM must be an int in \[1, 63\]"):
        PEM(epsilon=4.0, item_bytes=16, eta=64, codebook_seed=0)
    with pytest.raises(ValueError, match=r"'g' parameter of PEM must be .* \[1, 24\]"):
        PEM(epsilon=4.0, item_bytes=16, g=20, eta=4, codebook_seed=0)  # s = 52
    with pytest.raises(ValueError, match=r"'item_bytes' parameter of PEM must be an int in "
                                         r"\[1, 64\]"):
        PEM(epsilon=4.0, item_bytes=65, codebook_seed=0)


def _long_reports_follow_their_keys(pem, words, ids, reports):
    """Share of reports equal to H_i(key of the own prefix) and of a wrong prefix's key."""
    from test_heavyhitters_items import naive_key

    groups = pem.groups(ids)
    m = pem.item_bits
    own, wrong = [], []
    for i, (w, gi) in enumerate(zip(words, groups)):
        b = pem.prefix_bits[gi]
        v = int.from_bytes(w.ljust(m // 8, b"\x00"), "big") >> (m - b)
        for value, out in ((v, own), (v ^ 8, wrong)):  # v ^ 8: another Philox block
            key = value if b <= 64 else naive_key(value, b)
            out.append(int(heavy_buckets(pem.codebook_seed, ids[i:i + 1],
                                         np.array([key], dtype=np.uint64),
                                         np.array([pem.n_buckets]))[0]) == int(reports[i]))
    return np.mean(own), np.mean(wrong)


def test_long_item_reports_are_olh_of_the_prefix_keys():
    """Each report is OLH of the key of its group's prefix: it equals H_i(own key) with
    probability p, and H_i(another key) with probability 1/G. Over N = 3,000 users the
    shares have sd sqrt(p(1-p)/N) <= 0.0092 and sqrt((1/G)(1-1/G)/N) = 0.0080 (G = 16 at
    eps = 2.7, p = e^eps / (e^eps + G - 1) = 0.50): 5 sd bounds."""
    rng = np.random.default_rng(3)
    N = 3000
    pem = PEM(epsilon=2.7, k=2, item_bytes=12, eta=8, codebook_seed=12)
    G, p = pem.n_buckets, pem.p
    assert G == 16
    words = [bytes(rng.integers(1, 256, rng.integers(1, 13), dtype=np.uint8)) for _ in range(N)]
    ids = (np.arange(N, dtype=np.uint64) * np.uint64(2**40 + 7919)) ^ np.uint64(13)
    reports = pem.privatize(words, identities=ids, rng=4)
    own, wrong = _long_reports_follow_their_keys(pem, words, ids, reports)
    assert abs(own - p) < 5 * math.sqrt(p * (1 - p) / N)
    assert abs(wrong - 1 / G) < 5 * math.sqrt((1 / G) * (1 - 1 / G) / N)


def naive_long_pem(pem, reports, identities):
    """Plain-Python PEM decode on Python-int prefixes: keys by the plain Philox chain
    (tests/test_heavyhitters_items.py), supports by the (separately tested) OLH hash."""
    from test_heavyhitters_items import naive_key

    groups = pem.groups(identities)
    n, G, p = identities.shape[0], pem.n_buckets, pem.p

    def counts_of(j, b, candidates):
        mine = groups == j
        ids_j, reps_j = identities[mine], reports[mine]
        n_j = int(mine.sum())
        est = {}
        for v in candidates:
            key = v if b <= 64 else naive_key(v, b)
            hashed = heavy_buckets(pem.codebook_seed, ids_j, np.full(n_j, key, dtype=np.uint64),
                                   np.full(n_j, G, dtype=np.int64))
            hits = int(np.sum(hashed == reps_j))
            est[v] = (hits - n_j / G) / (p - 1.0 / G) * (n / n_j)
        return est
    return naive_levels(pem, counts_of)


def test_long_item_decode_matches_the_naive_twin():
    from test_heavyhitters_items import as_ints

    rng = np.random.default_rng(5)
    n = 3000
    pem = PEM(epsilon=3.0, k=2, item_bytes=9, codebook_seed=23,  # 72 bits: g = 18, s = 4
              **LEGACY)  # the naive twin: the paper's fixed width, no pooling
    assert (pem.g, pem.s) == (18, 4) and pem.prefix_bits[-2:] == (68, 72)
    heavy = [b"ninebytes", b"longwords"]
    words = [heavy[0] if u < 0.4 else heavy[1] if u < 0.65 else
             bytes(rng.integers(1, 256, 9, dtype=np.uint8)) for u in rng.random(n)]
    ids = rng.permutation(10**6)[:n].astype(np.uint64)
    reports = pem.privatize(words, identities=ids, rng=6)
    result = pem.estimate(reports, identities=ids)
    top, counts = naive_long_pem(pem, reports, ids)
    assert result.codes.shape == (2, 2)
    assert as_ints(result.codes, 72) == top
    np.testing.assert_allclose(result.counts, counts, rtol=1e-12)
    assert result.items == heavy and result.categories == ("ninebytes", "longwords")
    assert list(result.to_frame()["category"]) == ["ninebytes", "longwords"]


def test_eight_byte_words_give_the_same_top_items_at_16_bytes():
    """The same words (at most 8 bytes) as 8-byte items (64-bit codes, g = 15) and as
    16-byte items (2-word codes, g = 31): the same top 4.

    Easy instance: n = 100,000, eps = 4 (G = 56, p = 0.498, V0 = 0.076). At L = 16 a
    level's group has n_j ~ 3,200 users; a candidate nobody holds has an in-group count
    of sd sqrt(n_j V0) ~ 16, the fourth word (5%) ~ 160 = 10 sd. c k = 12 prefixes are
    kept per level; the check below shows that fewer than 8 other prefixes hold over 2.5%
    at any level, so a heavy prefix falls out only if the noise moves it ~5 sd.
    """
    from fastldp.heavyhitters import data

    rng = np.random.default_rng(9)
    n = 100_000
    voc = data.vocabulary(8)
    heavy, rest = voc[:4], voc[4:]
    sizes = [24_000, 16_000, 10_000, 5_000]
    words = [w for w, c in zip(heavy, sizes) for _ in range(c)]
    words += [rest[j] for j in rng.integers(0, len(rest), n - len(words))]
    codes = [int.from_bytes(w.ljust(16, b"\x00"), "big") for w in words]
    for b in range(8, 129, 4):  # the precondition: few other prefixes above 2.5%
        tally = {}
        for v in codes:
            tally[v >> (128 - b)] = tally.get(v >> (128 - b), 0) + 1
        hp = {int.from_bytes(w.ljust(16, b"\x00"), "big") >> (128 - b) for w in heavy}
        assert sum(1 for v, c in tally.items() if v not in hp and c > 0.025 * n) < 8
    tops = []
    for L in (8, 16):
        pem = PEM(epsilon=4.0, k=4, c=3, item_bytes=L, codebook_seed=17)
        tops.append(pem.estimate(pem.privatize(words, rng=10)).items)
    assert tops[0] == tops[1] == heavy


def test_long_words_of_9_to_16_bytes_are_recovered():
    """n = 200,000 words of 9-16 bytes (the corpus's), eps = 4, k = 8, c = 2, L = 16.

    Four heavy words hold 24%, 16%, 10% and 5%, the rest are uniform over 952 other
    long words. g = 31 groups (s = 8, eta = 4), so n_j ~ 6,450 per level. At eps = 4,
    G = 56, p = 0.498, V0 = (1/G)(1-1/G)/(p-1/G)^2 = 0.076, V1 = p(1-p)/(p-1/G)^2 = 1.08:
    a candidate nobody holds has an in-group count of sd sqrt(n_j V0) ~ 22, the
    smallest heavy word ~ 0.05 n_j = 320, i.e. 14 sd; of the c k = 16 prefixes kept per
    level, fewer than 12 others hold over 2.5% (checked below), so a heavy prefix
    is lost only if noise moves it by ~ 7 sd. Margins between the four final counts
    (>= 10,000) are >= 4 sd of their differences (each count's plug-in sd is 1,000-1,800
    here: the scaled OLH term plus the group sampling term f (r - 1), r ~ 31), and
    each count lies within 5 of its sd of the truth.
    """
    from fastldp.heavyhitters import data

    rng = np.random.default_rng(0)
    n = 200_000
    voc = [w for w in data.vocabulary(16) if len(w) > 8]
    heavy, rest = voc[:4], voc[4:]
    sizes = [48_000, 32_000, 20_000, 10_000]
    words = [w for w, c in zip(heavy, sizes) for _ in range(c)]
    back = [rest[j] for j in rng.integers(0, len(rest), n - len(words))]
    codes = [int.from_bytes(w.ljust(16, b"\x00"), "big") for w in back]
    for b in (8, 12, 16, 20, 24, 28, 32):  # longer prefixes only split these further
        tally = {}
        for v in codes:
            tally[v >> (128 - b)] = tally.get(v >> (128 - b), 0) + 1
        hp = {int.from_bytes(w.ljust(16, b"\x00"), "big") >> (128 - b) for w in heavy}
        assert sum(1 for v, c in tally.items() if v not in hp and c > 0.025 * n) < 12
    words += back
    pem = PEM(epsilon=4.0, k=8, c=2, item_bytes=16, codebook_seed=3, **LEGACY)
    assert (pem.g, pem.s) == (31, 8)
    result = pem.estimate(pem.privatize(words, rng=1))
    assert result.items[:4] == heavy
    assert np.all(np.abs(result.counts[:4] - sizes) < 5 * result.std[:4])
    assert np.all((result.std[:4] > 800) & (result.std[:4] < 2200))


def test_long_item_partials_and_report_files_are_bit_identical(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp import mechanisms
    from fastldp.reports import ReportFile, decode_files, write_reports

    rng = np.random.default_rng(11)
    n = 4000
    pem = PEM(epsilon=3.0, k=3, item_bytes=10, eta=6, codebook_seed=41)
    pool = [b"0123456789", b"abcdefghij", b"short", b"x" * 10]
    words = [pool[j] for j in rng.choice(4, n, p=[0.4, 0.3, 0.2, 0.1])]
    ids = rng.permutation(10**6)[:n].astype(np.uint64)
    reports = pem.privatize(words, identities=ids, rng=2)
    whole = pem.estimate(reports, identities=ids)
    assert whole.codes.shape == (3, 2) and whole.items == pool[:3]
    cuts = [0, 900, 2500, n]
    parts = [pem.partial(reports[a:b], identities=ids[a:b]) for a, b in zip(cuts, cuts[1:])]
    merged = pem.merge(parts[2], pem.merge(parts[0], parts[1]))
    for m in (merged, HeavyPartial.from_bytes(merged.to_bytes())):
        got = pem.finalize(m)
        assert got.codes.tobytes() == whole.codes.tobytes()
        assert got.counts.tobytes() == whole.counts.tobytes()
        assert got.variances.tobytes() == whole.variances.tobytes()
    path = write_reports(tmp_path / "long.parquet", pem, reports, identities=ids,
                         row_group_size=700)
    rebuilt = mechanisms.from_spec(ReportFile(path).spec)
    assert repr(rebuilt) == repr(pem)
    for got in (decode_files(rebuilt, path), rebuilt.decode_report_files(path)):
        assert got.codes.tobytes() == whole.codes.tobytes()
        assert got.counts.tobytes() == whole.counts.tobytes()
        assert got.items == whole.items and got.n == n


def test_level_channel_covers_the_short_levels_of_long_items():
    pem = PEM(epsilon=2.0, k=2, item_bytes=9, eta=4, codebook_seed=2)
    groups = pem.groups(np.arange(400, dtype=np.uint64))
    short = int(np.flatnonzero(groups == 0)[0])
    b, law = pem.level_channel(short)
    assert b == pem.prefix_bits[0] and law.shape == (2**b, pem.n_buckets)
    with pytest.raises(ValueError, match="at most 2\\^16"):
        pem.level_channel(int(np.flatnonzero(groups == pem.g - 1)[0]))


@pytest.mark.slow
def test_reported_std_matches_the_spread_over_seeds():
    # The reported variance against the sample variance of the counts of two planted items
    # (50 % and 25 % of the users) over N runs with fresh codebook seeds (a fresh group
    # split, fresh hashes) and fresh privatization. (N - 1) s^2 / sigma^2 is chi-square with
    # N - 1 degrees of freedom: accept within its 0.05 % and 99.95 % quantiles ([0.88, 1.13]
    # at N = 1500); sigma^2 is the mean reported variance. Here g = 4 (r ~ 4), G = 56: the
    # oracle term r^2 (n_J V0 + f_J (V1 - V0)) is ~ 27,700 for the 50 % item and the group
    # sampling term f (1 - f/n)(r - 1) ~ 9,000; the binomial f (r - 1) (18,000) would make
    # the ratio ~ 0.80 (fails), and dropping the sampling term ~ 1.3 (fails).
    def build(run):
        pem = PEM(epsilon=4.0, k=2, item_bits=16, codebook_seed=100 + run)
        assert pem.g == 4
        return pem

    check_reported_variance(build)
