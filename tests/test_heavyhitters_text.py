"""Issue 34: heavy hitters on real text (PEM).

str in gives str out and no invalid UTF-8; ended strings pool their reports
over the levels after their end (no budget spent on padding); the width kept
per level follows the level's noise; PEM recovers the exact top k when the
randomization noise vanishes (epsilon = 30) on a workload of the shape of
issue 34's titles; and on the real titles (MovieLens latest-small, from
../shared/data, skipped without it) it finds most of the top 16 at epsilon 30
where the pre-issue defaults found 4.
"""

from __future__ import annotations

import codecs

import numpy as np
import pytest
from scipy import special

import _heavyhitters_text as text
from fastldp.heavyhitters import PEM
from fastldp.heavyhitters.pem import pem_groups
from fastldp.heavyhitters.items import ItemCodec, ended_mask, prefix, utf8_prefix_mask
from fastldp.heavyhitters.metrics import precision_at_k

#: PEM before issue 34: 4-bit levels, the fixed width c k, no pooling of ended strings
LEGACY = dict(eta=4, z=None, pool_ended=False)


def _title_shaped(n: int, seed: int = 0) -> tuple[list[str], list[str]]:
    """``n`` users over 3,600 distinct ASCII titles of 10 to 64 bytes (most 20 to 45), and
    the true top 16.

    Shares: the top 16 hold 1.2% down to 0.6% of the users (a gap of 2 to 1 to the 17th,
    so that at epsilon 30 only the group sampling varies the counts), the other 3,584
    share the rest by a Zipf law of exponent 0.3 (the most frequent 0.2%).
    """
    rng = np.random.default_rng([seed, 3415])
    words = ["The", "Star", "Story", "Night", "of", "and", "Return", "Man", "Day", "Lost",
             "King", "Dark", "Love", "War", "City", "Last", "Life", "Blue", "a", "in"]
    seen: set[str] = set()
    titles: list[str] = []
    while len(titles) < 3600:
        target = int(np.clip(rng.normal(32, 8), 10, 64))
        t = ""
        while len(t) < target - 7:
            t += ("" if not t else " ") + words[rng.integers(len(words))]
        t = f"{t[:57]} ({1930 + int(rng.integers(90))})"
        if 10 <= len(t) <= 64 and t not in seen:
            seen.add(t)
            titles.append(t)
    head = np.linspace(0.012, 0.006, 16)
    tail = np.arange(1, 3585, dtype=np.float64) ** -0.3
    tail *= (1.0 - head.sum()) / tail.sum()
    assert tail[0] < 0.0031
    probs = np.concatenate([head, tail])
    idx = rng.choice(3600, size=n, p=probs / probs.sum())
    users = [titles[i] for i in idx]
    return users, text.true_top(users, 16)


# ------------------------------------------------------------------ UTF-8 and types
def test_utf8_prefix_mask_agrees_with_pythons_decoder():
    rng = np.random.default_rng(7)
    alphabet = [0x41, 0x7A, 0xC3, 0xA9, 0xE2, 0x82, 0xAC, 0xF0, 0x9F, 0x98, 0x80, 0xED, 0xA0,
                0xC0, 0xFF, 0xF4, 0x90, 0xBF]
    codec = ItemCodec(item_bytes=12)
    for _ in range(400):
        raw = bytes(rng.choice(alphabet, size=int(rng.integers(1, 12))).tolist())
        code = codec.encode([raw])
        for nb in range(1, len(raw) + 1):
            head = raw[:nb]
            p = prefix(code, 8 * nb, 96)
            try:
                head.decode("utf-8")
                complete = True
            except UnicodeDecodeError:
                complete = False
            # a valid prefix: the incremental decoder accepts it and it has no surrogate
            # lead (ED A0..BF), which Python's incremental decoder only rejects one byte later
            try:
                codecs.getincrementaldecoder("utf-8")().decode(head, final=False)
                partial = not any(head[i] == 0xED and i + 1 < nb and head[i + 1] >= 0xA0
                                  for i in range(nb))
            except UnicodeDecodeError:
                partial = False
            assert bool(utf8_prefix_mask(p, 8 * nb)[0]) == partial, (raw, nb)
            assert bool(utf8_prefix_mask(p, 8 * nb, complete=True)[0]) == complete, (raw, nb)
    # a string that ended inside a character is not valid
    ended = codec.encode([b"ab\xc3"])
    assert not utf8_prefix_mask(prefix(ended, 32, 96), 32)[0]
    assert ended_mask(prefix(ended, 32, 96), 32)[0] and not ended_mask(prefix(ended, 24, 96), 24)[0]


def test_str_in_gives_str_out_and_bytes_in_gives_bytes_out():
    words = ["café"] * 6000 + ["naïve"] * 4000 + ["x"] * 500
    pem = PEM(epsilon=4.0, k=2, item_bytes=8, codebook_seed=5)
    got = pem.estimate(pem.privatize(words, rng=2)).items
    assert got == ["café", "naïve"]
    raw = PEM(epsilon=4.0, k=2, item_bytes=8, codebook_seed=5)
    assert raw.estimate(raw.privatize([w.encode() for w in words], rng=2)).items == [
        "café".encode(), "naïve".encode()]
    explicit = PEM(epsilon=4.0, k=2, item_bytes=8, codebook_seed=5, text=True)
    assert explicit.stream_params()["text"] is True
    assert explicit.estimate(raw.privatize([w.encode() for w in words], rng=2)).items == [
        "café", "naïve"]
    with pytest.raises(TypeError, match="'text'"):
        PEM(epsilon=4.0, item_bytes=8, text="yes")
    with pytest.raises(ValueError, match="'text'"):
        PEM(epsilon=4.0, item_bits=16, text=True)


def test_str_input_never_returns_invalid_utf8_even_from_noise():
    # k larger than the heavy items: the rest of the answer is noise, which must still be text
    words = ["é" * 3] * 3000 + ["€uro"] * 2000
    pem = PEM(epsilon=1.0, k=12, item_bytes=8, codebook_seed=11)
    result = pem.estimate(pem.privatize(words, rng=4))
    assert len(result.items) == 12
    assert all(isinstance(x, str) for x in result.items)
    assert utf8_prefix_mask(result.codes, 64, complete=True).all()


# ------------------------------------------------------------------ no budget on padding
def test_ended_strings_pool_their_reports_over_the_later_levels():
    # 'abc' ends at byte 4 of 12: the users of levels 3 .. 11 (9 of the 12 groups) all
    # report it. The plug-in variance (module docstring of pem) of a count f = 20000 of
    # n = 100000 at eps 8 from 3/4 of the users is about 32,000 (holders' OLH term
    # r^2 f_j (V1 - V0), r = 4/3, plus sampling f (1 - f/n)(r - 1)), from one group of 1/12
    # about 418,000 (r = 12): a ratio of 0.077, and not more than 1/9
    items = [b"abc"] * 20000 + [b"abcdefghijkl"] * 10000 + [b"z%d" % (i % 9999)
                                                            for i in range(70000)]
    pooled = PEM(epsilon=8.0, k=2, item_bytes=12, codebook_seed=1)
    single = PEM(epsilon=8.0, k=2, item_bytes=12, codebook_seed=1, pool_ended=False)
    a = pooled.estimate(pooled.privatize(items, rng=0))
    b = single.estimate(single.privatize(items, rng=0))
    assert a.items == b.items == [b"abc", b"abcdefghijkl"]
    ratio = a.variances[0] / b.variances[0]
    assert 0.06 < ratio < 0.095  # group sizes vary by a few percent
    assert a.variances[1] == b.variances[1]  # full length: nothing to pool
    # the pooled count is within 4 of its own sd (its variance is the plug-in of the
    # module docstring over the pooled reports)
    assert abs(a.counts[0] - 20000) < 4 * a.std[0]


# ------------------------------------------------------------------ exact recovery
def test_pem_recovers_the_exact_top_16_at_epsilon_30_on_title_shaped_strings():
    users, truth = _title_shaped(100_000)
    pem = PEM(epsilon=30.0, k=16, item_bytes=64, codebook_seed=3)
    found = pem.estimate(pem.privatize(users, rng=4)).items
    assert all(isinstance(x, str) for x in found)
    assert precision_at_k(found, truth, 16) == 1.0
    assert set(found) == set(truth)


@pytest.mark.slow
def test_pem_before_issue_34_misses_top_16_at_epsilon_30_on_title_shaped_strings():
    # the same workload with the old settings (the finding of issue 34: the loss is in the
    # design, not the privacy)
    users, truth = _title_shaped(100_000)
    pem = PEM(epsilon=30.0, k=16, item_bytes=64, codebook_seed=3, **LEGACY)
    assert precision_at_k(pem.estimate(pem.privatize(users, rng=4)).items, truth, 16) < 1.0


@pytest.mark.slow
@pytest.mark.skipif(not text.available(), reason="../shared/data/movielens-latest-small absent")
def test_pem_finds_most_of_the_real_top_16_titles_at_epsilon_30():
    users = text.title_users(490_000, rng=0)
    truth = text.true_top(users, 16)
    pem = PEM(epsilon=30.0, k=16, item_bytes=64, codebook_seed=0)
    found = pem.estimate(pem.privatize(users, rng=0)).items
    # 13 of 16 at this seed (the lost three are 41 to 64 bytes long, each decoded from one
    # group of 1/64 of the users at every level of its length); the settings before
    # issue 34 found 4
    assert precision_at_k(found, truth, 16) >= 12 / 16


# ------------------------------------------------------------------ the width rule
def test_width_defaults_and_errors():
    assert PEM(epsilon=4.0, item_bytes=16, codebook_seed=0).z == 2.326
    assert PEM(epsilon=4.0, item_bits=32, codebook_seed=0).z is None  # speed at 2^32
    pem = PEM(epsilon=4.0, k=16, item_bytes=16, codebook_seed=0)
    assert pem.max_kept == 256 and pem.eta == 8 and pem.pool_ended
    with pytest.raises(ValueError, match="'z'"):
        PEM(epsilon=4.0, item_bytes=16, z=-1.0)
    with pytest.raises(ValueError, match="'z'"):
        PEM(epsilon=4.0, item_bytes=16, z=float("nan"))
    with pytest.raises(ValueError, match="'max_kept'"):
        PEM(epsilon=4.0, k=16, item_bytes=16, max_kept=8)
    with pytest.raises(TypeError, match="'pool_ended'"):
        PEM(epsilon=4.0, item_bytes=16, pool_ended=1)


@pytest.mark.parametrize("z, miss", [(2.326, 0.01), (1.645, 0.05)])
def test_width_rule_loses_a_prefix_at_the_bar_with_probability_one_minus_phi_z(z, miss):
    # A level with k = 16 complete strings, the k-th of count T = 1000 (sd 30 each), and
    # a true prefix of count T whose estimate has sd 200, among 2000 null prefixes (sd 200):
    # the rule keeps it unless f + z sqrt(200^2 + 30^2) < T, i.e. with probability
    # 1 - Phi(z sqrt(200^2 + 30^2) / sqrt(200^2 + 30^2)) = 1 - Phi(z) when the bar's own
    # error is counted (the normal model of pem's module docstring). 4000 levels: the
    # binomial sd of the miss rate is sqrt(miss (1 - miss) / 4000) (0.0016 at 1%).
    rng = np.random.default_rng(34)
    k, nulls, trials = 16, 2000, 4000
    pem = PEM(epsilon=4.0, k=k, item_bytes=8, codebook_seed=0, z=z, max_kept=nulls + k + 1)
    candidates = np.arange(nulls + k + 1, dtype=np.uint64)
    ended = np.arange(1, k + 1)
    sd = np.full(candidates.shape[0], 200.0)
    sd[ended] = 30.0
    noise = special.ndtri(1.0 - 1.0 / candidates.shape[0]) * sd  # the decode's noise bar
    missed = 0
    for _ in range(trials):
        counts = rng.normal(0.0, sd)
        counts[ended] += np.where(np.arange(k) < k - 1, 3000.0, 1000.0)  # the k-th is T
        counts[0] += 1000.0                                      # the true prefix, count T
        kept, _ = pem._kept(candidates, counts, sd, noise, sd, ended,
                            np.zeros(candidates.shape[0]))
        missed += 0 not in set(kept.tolist())
    rate = missed / trials
    assert abs(rate - miss) < 4 * np.sqrt(miss * (1 - miss) / trials), rate


@pytest.mark.parametrize("name", ["TreeHist", "SFP"])
def test_treehist_and_sfp_give_str_for_str_and_never_invalid_utf8(name):
    from fastldp import heavyhitters

    words = ["café"] * 6000 + ["naïve"] * 4000 + ["é€x"] * 2000 + [f"w{i}" for i in range(8000)]
    proto = getattr(heavyhitters, name)(epsilon=2.0, k=6, item_bytes=8, codebook_seed=5)
    result = proto.estimate(proto.privatize(words, rng=2))
    assert result.items[:2] == ["café", "naïve"]
    assert all(isinstance(x, str) for x in result.items)
    # SFP assembles candidates from fragments: those that are not UTF-8 are dropped, so
    # it may return fewer than k; TreeHist extends only valid prefixes
    assert utf8_prefix_mask(result.codes, 64, complete=True).all()
    assert len(result.items) == len(result.counts) == len(result.codes) <= 6
    raw = getattr(heavyhitters, name)(epsilon=2.0, k=6, item_bytes=8, codebook_seed=5)
    got = raw.estimate(raw.privatize([w.encode() for w in words], rng=2)).items
    assert all(isinstance(x, bytes) for x in got) and got[:2] == [w.encode() for w in words[:1]] + [b"na\xc3\xafve"]


# ------------------------------------------------------------------ allocation (item 3)
def test_allocation_splits_users_by_the_shares_and_equal_keeps_the_old_groups():
    ids = np.arange(200_000, dtype=np.uint64)
    equal = PEM(epsilon=4.0, k=4, item_bytes=8, codebook_seed=11)
    assert equal.allocation == "equal"
    # equal shares keep the (h g) >> 32 rule bit for bit (report files of older versions)
    assert np.array_equal(equal.groups(ids), pem_groups(11, ids, equal.g))
    front = PEM(epsilon=4.0, k=4, item_bytes=8, codebook_seed=11, allocation="front")
    g = front.g
    shares = 4.0 ** (-np.arange(g) / (g - 1))
    shares /= shares.sum()
    assert shares[0] / shares[-1] == pytest.approx(4.0)
    counts = np.bincount(front.groups(ids), minlength=g)
    sd = np.sqrt(ids.shape[0] * shares * (1 - shares))
    assert np.all(np.abs(counts - ids.shape[0] * shares) < 4 * sd)
    given = PEM(epsilon=4.0, k=4, item_bytes=8, codebook_seed=11,
                allocation=[1.0] * (g - 1) + [5.0])
    counts = np.bincount(given.groups(ids), minlength=g)
    share = np.array([1.0] * (g - 1) + [5.0]) / (g + 4)
    assert np.all(np.abs(counts - ids.shape[0] * share)
                  < 4 * np.sqrt(ids.shape[0] * share * (1 - share)))
    # the allocation is a public parameter: the spec rebuilds the same split
    again = PEM(**given.stream_params())
    assert np.array_equal(again.groups(ids), given.groups(ids))
    assert PEM(**front.stream_params()).allocation == "front"


@pytest.mark.parametrize("bad", ["back", [1.0, 2.0], [1.0] * 7 + [0.0], [float("nan")] * 8])
def test_allocation_errors_name_the_parameter(bad):
    with pytest.raises(ValueError, match="allocation"):
        PEM(epsilon=4.0, k=4, item_bytes=8, allocation=bad)


def test_front_allocation_estimates_stay_unbiased_within_their_sd():
    # counts are scaled by each level's realized reports, so unequal shares change the
    # variance, not the mean: planted words within 4 reported sd, found at eps 4
    words = [b"river"] * 9000 + [b"stone"] * 6000 + [b"cloud"] * 4000
    gen = np.random.default_rng([5, 34])
    letters = np.frombuffer(b"abcdefghijklmnopqrstuvwxyz", dtype=np.uint8)
    words += [bytes(gen.choice(letters, 6)) for _ in range(21000)]
    pem = PEM(epsilon=4.0, k=3, item_bytes=8, codebook_seed=2, allocation="front")
    res = pem.estimate(pem.privatize(words, rng=3))
    assert sorted(res.items) == [b"cloud", b"river", b"stone"]
    true = np.array([{b"river": 9000, b"stone": 6000, b"cloud": 4000}[w] for w in res.items])
    assert np.all(np.abs(res.counts - true) < 4 * res.std)
