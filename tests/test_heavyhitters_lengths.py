"""Issue 34, item 1: a first round learns the strings' lengths and picks the tree's field.

Also PEM's final selection for strings: a candidate whose count clears the
noise ranks before one that does not (the last level's fresh candidates are
decoded from one group and are much noisier than the pooled ended strings).
"""

from __future__ import annotations

import math

import numpy as np
import pytest

from fastldp.heavyhitters import (
    PEM, cut_to_field, length_oracle, length_plan, string_lengths, two_rounds,
)
from fastldp.heavyhitters.lengths import survey_members
from fastldp.heavyhitters.metrics import precision_at_k


def test_cut_to_field_keeps_whole_characters_and_types():
    assert cut_to_field(["abcdef", "ab", "日本語", "aé"], 4) == ["abcd", "ab", "日", "aé"]
    assert cut_to_field(["aé"], 2) == ["a"]  # é is 2 bytes: it does not fit after the a
    assert cut_to_field([b"abcdef", b"\xff\xfe\xfd"], 2) == [b"ab", b"\xff\xfe"]
    with pytest.raises(TypeError, match="'items'"):
        cut_to_field("abc", 2)
    with pytest.raises(TypeError, match="index 1"):
        cut_to_field(["a", 3], 2)
    with pytest.raises(ValueError, match="'item_bytes'.*65"):
        cut_to_field(["a"], 65)


def test_survey_members_are_a_public_share():
    ids = np.arange(200_000, dtype=np.uint64)
    members = survey_members(ids, 0.05, seed=7)
    # binomial: sd sqrt(n p (1 - p)) = 97.5; 5 sd
    assert abs(int(members.sum()) - 10_000) < 5 * math.sqrt(200_000 * 0.05 * 0.95)
    assert np.array_equal(members, survey_members(ids, 0.05, seed=7))
    assert not np.array_equal(members, survey_members(ids, 0.05, seed=8))
    # the 5% are inside the 10%: one hash, two bars
    assert np.all(survey_members(ids, 0.10, seed=7)[members])


def test_survey_split_is_independent_of_the_protocols_groups():
    # the survey must not empty a group of the tree: PEM's groups hash the identities under
    # the codebook seed, the survey under a key of its own (a split by the same hash took all
    # of PEM's first group into the survey when share >= 1 / g: garbage results)
    ids = np.arange(300_000, dtype=np.uint64)
    members = survey_members(ids, 0.05, seed=3)
    groups = PEM(epsilon=4.0, k=16, item_bytes=46, codebook_seed=3).groups(ids)
    sizes = np.bincount(groups, minlength=46)
    inside = np.bincount(groups[members], minlength=46)
    # each group keeps about 95% of its users: binomial sd of the survey count per group
    sd = np.sqrt(sizes * 0.05 * 0.95)
    assert np.all(np.abs(inside - 0.05 * sizes) < 5 * sd)


def _plan(words, **kwargs):
    survey = length_oracle(epsilon=50.0, max_bytes=64, codebook_seed=3)
    return length_plan(survey.estimate(survey.privatize(string_lengths(words), rng=1)),
                       **kwargs)


def test_plan_is_the_exact_length_law_when_the_noise_vanishes():
    # epsilon = 50: the oracle over 65 lengths is exact up to O(e^-50)
    words = ["ab"] * 500 + ["abcdefghij"] * 300 + ["x" * 20] * 150 + ["y" * 70] * 50
    assert list(string_lengths(words[:1] + words[-1:])) == [2, 64]  # capped at max_bytes
    assert list(string_lengths(["日本", b"ab"], max_bytes=4)) == [4, 2]  # UTF-8 bytes
    plan = _plan(words)
    assert plan.n == 1000
    expected = np.zeros(65)
    expected[[2, 10, 20, 64]] = [0.5, 0.3, 0.15, 0.05]
    assert np.allclose(plan.distribution, expected, atol=1e-9)
    assert plan.item_bytes == 20  # 0.5 + 0.3 < 0.9 <= 0.95
    assert plan.covered(10) == pytest.approx(0.8, abs=1e-9)
    # coverage 0.8: the 10-byte field; the floor min_bytes applies below it
    assert _plan(words, coverage=0.8).item_bytes == 10
    assert _plan(words, coverage=0.5, min_bytes=8).item_bytes == 8


def test_the_survey_oracle_is_the_least_variance_one():
    assert length_oracle(epsilon=4.0, max_bytes=64, codebook_seed=1).chosen == "grr"
    assert length_oracle(epsilon=1.0, max_bytes=64, codebook_seed=1).chosen != "grr"


@pytest.mark.parametrize("call, name", [
    (lambda: length_oracle(epsilon=0.0), "epsilon"),
    (lambda: length_oracle(epsilon=float("nan")), "epsilon"),
    (lambda: length_oracle(epsilon=1.0, max_bytes=65), "max_bytes"),
    (lambda: string_lengths(["a"], max_bytes=0), "max_bytes"),
    (lambda: _plan(["a"], coverage=0.0), "coverage"),
    (lambda: _plan(["a"], coverage=float("nan")), "coverage"),
    (lambda: _plan(["a"], min_bytes=65), "min_bytes"),
])
def test_survey_validates(call, name):
    with pytest.raises(ValueError, match=f"'{name}'"):
        call()


def test_plan_needs_an_estimate():
    with pytest.raises(TypeError, match="'estimate'"):
        length_plan([1.0, 2.0])


def test_two_rounds_find_the_exact_top_k_of_short_strings_in_a_long_field():
    # a 64-byte field whose strings all end by byte 9: the survey picks 9 bytes (or 8, the
    # floor, when the coverage lets the tail be cut), and the tree recovers the exact top 8
    # at epsilon = 50
    rng = np.random.default_rng(4)
    head = [f"word{i:02d}" for i in range(8)]  # 6 bytes
    tail = [f"rare{i:05d}" for i in range(200)]  # 9 bytes
    shares = np.concatenate([1.0 / np.arange(1, 9), np.full(200, (1.0 / 8) / 3 / 20)])
    pool = head + tail
    users = [pool[j] for j in rng.choice(len(pool), size=60_000, p=shares / shares.sum())]
    res, plan = two_rounds(PEM, users, epsilon=50.0, k=8, max_bytes=64, coverage=0.9,
                           codebook_seed=5, rng=6)
    assert plan.item_bytes == 9  # the 9-byte tail holds 13% of the users: coverage 0.9
    assert res.items == head  # str in, str out; exactly the head, in order of share
    assert precision_at_k(res.items, head) == 1.0
    # the default coverage (0.85) cuts the tail to 8 bytes: the head is still found exactly
    res, plan = two_rounds(PEM, users, epsilon=50.0, k=8, max_bytes=64, codebook_seed=5, rng=6)
    assert plan.item_bytes == 8 and res.items == head
    with pytest.raises(ValueError, match="'share'"):
        two_rounds(PEM, users[:10], epsilon=1.0, k=2, share=1.0)


def test_pem_ranks_candidates_that_clear_the_noise_first():
    pem = PEM(epsilon=4.0, k=3, item_bytes=16, codebook_seed=1)
    candidates = np.arange(6, dtype=np.uint64)
    counts = np.array([900.0, 5000.0, 800.0, 700.0, 4000.0, 5.0])
    # the count each candidate's noise alone exceeds (PEM._null_counts): 5000 and 4000 were
    # decoded from few reports and do not clear theirs
    bars = np.array([30.0, 6000.0, 30.0, 30.0, 6000.0, 30.0])
    order = pem._final(candidates, counts, bars, 3)
    assert list(order) == [0, 2, 3]
    # fewer than k clear it: the rest by count in units of its bar (28 of 30 before 5000
    # of 6000 before 4000 of 6000; by count alone it would be 1, 4)
    counts2 = counts.copy()
    counts2[[2, 3]] = 1.0
    counts2[5] = 28.0
    assert list(pem._final(candidates, counts2, bars, 3)) == [0, 5, 1]
    # a candidate without reports (count 0, bar 0) comes after every other
    counts3, no_bar = counts2.copy(), bars.copy()
    counts3[5] = no_bar[5] = 0.0
    counts3[[1, 4]] = -50.0
    assert list(pem._final(candidates, counts3, no_bar, 3)) == [0, 2, 3]
    # the paper's rule (z=None): by count alone
    plain = PEM(epsilon=4.0, k=3, item_bytes=16, codebook_seed=1, z=None)
    assert list(plain._final(candidates, counts, bars, 3)) == [1, 4, 0]
