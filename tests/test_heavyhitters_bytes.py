"""Issue 34: the byte survey of ``two_rounds`` and PEM's ``alphabet``.

A public share of the users reports one byte of its string (drawn among its
distinct bytes) through an ``epsilon``-LDP oracle over the 256 values; the
bytes that clear the noise are the alphabet PEM's tree extends with, unless
the survey is too coarse to trust (``unseen > max_unseen``). The report's law
is enumerated exactly; the alphabet rule is checked by hand; PEM never
returns a string with a byte outside its alphabet.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from fastldp import mechanisms
from fastldp.heavyhitters import PEM, TreeHist, two_rounds
from fastldp.heavyhitters.lengths import (
    byte_alphabet, byte_oracle, byte_survey_members, string_bytes, survey_members,
)
from fastldp.heavyhitters.metrics import precision_at_k
from fastldp.protocol import completed_spec


class _Estimate:
    def __init__(self, counts, std, n):
        self.counts, self.std, self.n = np.asarray(counts, float), np.asarray(std, float), n


# ------------------------------------------------------------------ the user's byte
def test_string_bytes_draws_uniformly_among_the_distinct_bytes():
    items = ["aab", b"\x01\x02\x03\x04", "", "é", "xyzw"] * 20_000
    got = string_bytes(items, max_bytes=3, rng=7)
    assert got.dtype == np.int64
    per = got.reshape(-1, 5)
    assert set(per[:, 0]) == {97, 98}          # 'a' once however often it occurs
    assert set(per[:, 1]) == {1, 2, 3}         # cut at max_bytes = 3
    assert set(per[:, 2]) == {0}               # the empty string
    assert set(per[:, 3]) == {0xC3, 0xA9}      # UTF-8 bytes of str
    n = per.shape[0]
    for col, values in ((0, (97, 98)), (1, (1, 2, 3))):
        for v in values:  # each distinct byte with probability 1/m: binomial sd
            share = 1.0 / len(values)
            assert abs(np.mean(per[:, col] == v) - share) < 4 * math.sqrt(share * (1 - share) / n)
    assert np.array_equal(got, string_bytes(items, max_bytes=3, rng=7))  # the coin is rng's


@pytest.mark.parametrize("bad, error", [("abc", TypeError), ([1, 2], TypeError)])
def test_string_bytes_rejects_what_is_not_strings(bad, error):
    with pytest.raises(error, match="'items'"):
        string_bytes(bad)


@pytest.mark.parametrize("eps, name", [(6.0, "auto"), (8.0, "auto"), (2.0, "olh"),
                                       (0.5, "grr")])
def test_a_byte_report_is_epsilon_ldp_for_the_string_exactly(eps, name):
    # the report's law given a string is the mixture over its distinct bytes of the
    # oracle's law; enumerate it for strings over a few bytes and take the largest ratio
    # ("auto" is GRR from eps 6 on; below it subset selection, whose 2^256 outputs are
    # not enumerable, so OLH and GRR stand in for the mixture step)
    oracle = byte_oracle(epsilon=eps, oracle=name, codebook_seed=3)
    channel = oracle.channel(eps)  # P[byte, output]
    strings = [b"a", b"b", b"ab", b"abc", b"c", b"", b"aaaa"]
    laws = []
    for s in strings:
        distinct = sorted(set(s)) or [0]
        laws.append(channel[distinct].mean(axis=0))
    laws = np.array(laws)
    ratio = max(np.max(laws[i] / laws[j]) for i in range(len(strings))
                for j in range(len(strings)))
    assert ratio <= math.exp(eps) * (1 + 1e-9)
    assert ratio >= math.exp(eps) * (1 - 1e-9)  # reached: "a" against "b"


# ------------------------------------------------------------------ the alphabet rule
def test_byte_alphabet_keeps_what_clears_the_noise_and_bounds_the_rest():
    q = special.ndtri(1.0 - 1.0 / 256)  # the bound's quantile
    n = 10_000
    share = np.zeros(256)
    share[[97, 98, 99]] = [0.5, 0.3, 0.2]
    share[100] = 1.2e-3                # below the bar z sd = 1.645e-3
    share[102] = 2.0e-3                # above the default bar, below 2.652 sd
    share[101] = -2e-3                 # negative estimates count as 0 in the bound
    share[103] = 1.62e-3               # 1.5% under the default bar: out
    share[104] = 1.67e-3               # 1.5% over it: in
    sd = np.full(256, 1e-3)
    alphabet, unseen = byte_alphabet(_Estimate(share * n, sd * n, n), max_unseen=1.0)
    assert alphabet == (97, 98, 99, 102, 104)
    assert unseen == pytest.approx(1.2e-3 + 1.62e-3 + 251 * q * 1e-3, rel=1e-12)
    alphabet, unseen3 = byte_alphabet(_Estimate(share * n, sd * n, n), z=q, max_unseen=1.0)
    assert alphabet == (97, 98, 99)
    assert unseen3 == pytest.approx(1.2e-3 + 2.0e-3 + 1.62e-3 + 1.67e-3 + 253 * q * 1e-3,
                                    rel=1e-12)
    # a survey too coarse to trust gives no alphabet (the bound above is 0.67)
    alphabet, unseen2 = byte_alphabet(_Estimate(share * n, sd * n, n), max_unseen=0.5)
    assert alphabet is None and unseen2 == unseen
    sd_fine = np.full(256, 1e-4)
    alphabet, unseen = byte_alphabet(_Estimate(share * n, sd_fine * n, n), max_unseen=0.1)
    assert alphabet == (97, 98, 99, 100, 102, 103, 104)  # 100 and 103 now clear their bar
    assert unseen == pytest.approx(249 * q * 1e-4, rel=1e-12)


def test_the_default_trust_bound_is_a_tenth_of_the_reports():
    q = special.ndtri(1.0 - 1.0 / 256)
    n = 10_000
    share = np.zeros(256)
    share[[97, 98, 99]] = [0.5, 0.3, 0.2]
    for bound, trusted in ((0.099, True), (0.101, False)):  # 1% either side of 0.1
        sd = np.full(256, bound / (253 * q))  # the 253 bytes left out hold q sd each
        alphabet, unseen = byte_alphabet(_Estimate(share * n, sd * n, n))
        assert unseen == pytest.approx(bound, rel=1e-12)
        assert (alphabet == (97, 98, 99)) if trusted else alphabet is None


def test_byte_alphabet_validates():
    with pytest.raises(TypeError, match="'estimate'"):
        byte_alphabet([1.0, 2.0])
    with pytest.raises(TypeError, match="'estimate'"):
        byte_alphabet(_Estimate(np.ones(10), np.ones(10), 5))
    for bad in (float("nan"), -0.1, 1.5):
        with pytest.raises(ValueError, match="'max_unseen'"):
            byte_alphabet(_Estimate(np.ones(256), np.ones(256), 5), max_unseen=bad)
    for bad in (float("nan"), -1.0):
        with pytest.raises(ValueError, match="'z'"):
            byte_alphabet(_Estimate(np.ones(256), np.ones(256), 5), z=bad)


def test_the_byte_survey_finds_the_bytes_of_the_data_at_epsilon_8():
    rng = np.random.default_rng(1)
    words = ["the", "of", "and", "to", "in", "is", "was", "for"]
    items = [words[j] for j in rng.integers(0, len(words), 60_000)]
    oracle = byte_oracle(epsilon=8.0, codebook_seed=2)
    alphabet, unseen = byte_alphabet(oracle.estimate(oracle.privatize(
        string_bytes(items, rng=3), rng=4)))
    present = {b for w in words for b in w.encode()}
    assert alphabet is not None and present <= set(alphabet)
    nulls = 256 - len(present)  # each passes the bar z = 1.645 with probability 5%
    assert len(set(alphabet) - present) <= nulls * 0.05 + 4 * math.sqrt(nulls * 0.05 * 0.95)
    assert unseen < 0.1


# ------------------------------------------------------------------ the split
def test_the_byte_survey_is_a_public_share_disjoint_from_the_length_survey():
    ids = np.arange(400_000, dtype=np.uint64)
    lengths = survey_members(ids, 0.025, seed=9)
    bytes_ = byte_survey_members(ids, 0.025, 0.04, seed=9)
    assert not np.any(lengths & bytes_)
    n = ids.shape[0]
    assert abs(bytes_.mean() - 0.04) < 4 * math.sqrt(0.04 * 0.96 / n)
    assert np.array_equal(bytes_, byte_survey_members(ids, 0.025, 0.04, seed=9))
    assert not np.any(byte_survey_members(ids, 0.025, 0.0, seed=9))
    for bad in (float("nan"), -0.1, 1.5):
        with pytest.raises(ValueError, match="'share'"):
            survey_members(ids[:5], bad, seed=9)
        with pytest.raises(ValueError, match="'share'"):
            byte_survey_members(ids[:5], bad, 0.01, seed=9)
    for bad in (float("nan"), -0.1, 0.975):  # at most 1 - share
        with pytest.raises(ValueError, match="'byte_share'"):
            byte_survey_members(ids[:5], 0.025, bad, seed=9)


# ------------------------------------------------------------------ PEM's alphabet
def test_pem_never_returns_a_byte_outside_its_alphabet():
    users = ["abc"] * 3000 + ["cab"] * 2000 + ["xyz"] * 4000 + ["abz"] * 2500
    pem = PEM(epsilon=50.0, k=3, item_bytes=4, codebook_seed=1, alphabet=b"abc")
    assert pem.alphabet == (0, 97, 98, 99)
    found = pem.estimate(pem.privatize(users, rng=1)).items
    assert found[:2] == ["abc", "cab"]
    assert all(set(x.encode()) <= {97, 98, 99} for x in found)
    every = PEM(epsilon=50.0, k=3, item_bytes=4, codebook_seed=1)
    assert every.estimate(every.privatize(users, rng=1)).items == ["xyz", "abc", "abz"]


@pytest.mark.parametrize("eta", [4, 8])
def test_the_alphabet_is_checked_as_each_byte_completes(eta):
    pem = PEM(epsilon=4.0, k=2, item_bytes=3, eta=eta, codebook_seed=1, alphabet=[0x41, 0x42])
    bits = pem.prefix_bits[1]
    before = pem.prefix_bits[0]
    cands = np.arange(1 << bits, dtype=np.uint64)
    kept = pem._possible(cands, bits)
    # a candidate passes when every byte completed since the level before is allowed
    full = bits // 8
    ok = []
    for c in cands.tolist():
        octets = [(c >> (bits - 8 * (i + 1))) & 0xFF for i in range(full)]
        new = octets[before // 8:]
        ok.append(all(o in (0, 0x41, 0x42) for o in new))
    base = PEM(epsilon=4.0, k=2, item_bytes=3, eta=eta, codebook_seed=1)._possible(cands, bits)
    assert set(kept.tolist()) == set(base.tolist()) & {c for c, y in zip(cands.tolist(), ok) if y}


def test_alphabet_spec_defaults_and_errors():
    assert PEM(epsilon=4.0, item_bytes=8, codebook_seed=0).alphabet is None
    pem = PEM(epsilon=4.0, k=4, item_bytes=8, codebook_seed=11, alphabet=[99, 97])
    assert pem.stream_params()["alphabet"] == [0, 97, 99]
    again = mechanisms.from_spec(pem.spec())
    assert again.alphabet == (0, 97, 99) and repr(again) == repr(pem)
    old = pem.spec()
    old = {"mechanism": old["mechanism"],
           "params": {k: v for k, v in old["params"].items() if k != "alphabet"}}
    assert completed_spec(old)["params"]["alphabet"] is None
    assert mechanisms.from_spec(old).alphabet is None
    with pytest.raises(ValueError, match=r"'alphabet'.*\[0, 255\].*256"):
        PEM(epsilon=4.0, item_bytes=8, alphabet=[97, 256])
    with pytest.raises(ValueError, match="'alphabet'.*integer items"):
        PEM(epsilon=4.0, item_bits=32, alphabet=b"a")
    for bad in ("abc", 5, [1.5], [True]):
        with pytest.raises(TypeError, match="'alphabet'"):
            PEM(epsilon=4.0, item_bytes=8, alphabet=bad)


# ------------------------------------------------------------------ two_rounds
def _users(n, seed):
    rng = np.random.default_rng(seed)
    head = [f"word{i:02d}" for i in range(8)]
    shares = 1.0 / np.arange(1, 9)
    return head, [head[j] for j in rng.choice(8, size=n, p=shares / shares.sum())]


def test_two_rounds_gives_pem_the_surveyed_alphabet():
    head, users = _users(80_000, 4)
    res, plan = two_rounds(PEM, users, epsilon=50.0, k=8, max_bytes=16, codebook_seed=5,
                           rng=6)
    assert set(plan.alphabet) >= set(b"word0123456789") - set(b"89")  # the bytes used
    assert plan.byte_n > 0 and plan.unseen < 0.1
    assert res.items == head and precision_at_k(res.items, head) == 1.0
    # the tree's users are neither survey's: 95% by default, 2.5% in each survey
    assert abs(res.n / len(users) - 0.95) < 0.01
    ids = np.arange(len(users), dtype=np.uint64)
    assert plan.n == int(survey_members(ids, 0.025, 5).sum())
    assert plan.byte_n == int(byte_survey_members(ids, 0.025, 0.025, 5).sum())
    assert res.n == len(users) - plan.n - plan.byte_n
    # no byte survey, a coarse one, a given alphabet, a protocol without the parameter
    res, plan = two_rounds(PEM, users, epsilon=50.0, k=8, max_bytes=16, codebook_seed=5,
                           rng=6, byte_share=0.0)
    assert plan.alphabet is None and plan.byte_n == 0 and math.isnan(plan.unseen)
    _, plan = two_rounds(PEM, users[:20_000], epsilon=1.0, k=2, max_bytes=16,
                         codebook_seed=5, rng=6)
    assert plan.alphabet is None and plan.unseen > 0.1 and plan.byte_n > 0
    res, _ = two_rounds(PEM, users, epsilon=50.0, k=8, max_bytes=16, codebook_seed=5, rng=6,
                        alphabet=b"word0123")
    assert {f"word{i:02d}" for i in range(4)} <= set(res.items)
    assert all(set(x.encode()) <= set(b"word0123") for x in res.items)
    res, plan = two_rounds(TreeHist, users, epsilon=8.0, k=2, max_bytes=16, byte_share=0.4,
                           codebook_seed=5, rng=6)
    assert plan.alphabet is not None and len(res.items) == 2
    with pytest.raises(ValueError, match="'byte_share'"):
        two_rounds(PEM, users[:10], epsilon=1.0, k=2, share=0.5, byte_share=0.5)
