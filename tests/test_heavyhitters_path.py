"""Issue 34: PEM's path score, the order in which the cap keeps prefixes (``path_weight``).

When more prefixes pass the width rule than ``max_kept``, PEM keeps the top
``c k`` by count and fills the rest by ``s(v) = min(f / sd0, T / sd0) + w
s(parent)`` (pem's module docstring, "Path score"); equal scores go by count,
then by the smaller code. These tests hold the compiled-free rule to a plain
Python twin written from that text, check the parent lookup on short and long
codes, and the parameter's defaults, spec and errors.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import special

from fastldp import mechanisms
from fastldp.heavyhitters import PEM
from fastldp.heavyhitters.items import extend, prefix, prefix_keys
from fastldp.protocol import completed_spec


def _twin(pem, codes, counts, null_sd, sd, ended, parent):
    """The kept indices (in order) and their path scores, from the docstring, in plain Python."""
    C = len(counts)
    q = special.ndtri(1.0 - 1.0 / C)
    strong = [i for i in ended if counts[i] >= q * null_sd[i]]
    if len(strong) >= pem.k:
        t = sorted(strong, key=lambda i: -counts[i])[pem.k - 1]  # stable: ended order
        bar = [counts[t]] * C
        bar_sd = sd[t]
        clip = [counts[t] / null_sd[i] for i in range(C)]
    else:
        bar = [q * null_sd[i] for i in range(C)]
        bar_sd = 0.0
        clip = [q] * C
    path = [min(counts[i] / null_sd[i], clip[i]) + pem.path_weight * parent[i] for i in range(C)]
    by_count = sorted(range(C), key=lambda i: (-counts[i], int(codes[i])))
    first = by_count[: min(pem.c * pem.k, C)]
    chosen = set(first)
    rest = [i for i in range(C) if i not in chosen
            and counts[i] + pem.z * math.sqrt(sd[i] ** 2 + bar_sd ** 2) >= bar[i]]
    rest.sort(key=lambda i: (-path[i], -counts[i], int(codes[i])))
    order = first + rest[: pem.max_kept - len(first)]
    return order, [path[i] for i in order]


def _level(rng, C, n_ended, strong_counts):
    codes = rng.permutation(np.arange(1, 4 * C, dtype=np.uint64))[:C]
    null_sd = rng.uniform(80.0, 120.0, C)
    counts = rng.normal(0.0, null_sd)
    ended = np.sort(rng.choice(C, n_ended, replace=False))
    counts[ended[: len(strong_counts)]] += strong_counts
    counts[rng.choice(C, 150, replace=False)] += rng.uniform(300.0, 3000.0, 150)  # held prefixes
    sd = np.sqrt(null_sd ** 2 + np.clip(counts, 0.0, None) * 3.0)
    parent = rng.exponential(4.0, C)
    return codes, counts, null_sd, sd, ended, parent


@pytest.mark.parametrize("strong", [False, True])
@pytest.mark.parametrize("seed", range(6))
def test_the_cap_by_path_score_matches_a_plain_python_twin(strong, seed):
    rng = np.random.default_rng(seed)
    pem = PEM(epsilon=4.0, k=8, item_bytes=8, codebook_seed=0, max_kept=64, path_weight=0.7)
    # with strong: 12 complete strings far above the noise, so the bar is the 8th of them
    strong_counts = rng.uniform(600.0, 1500.0, 12) if strong else np.zeros(0)
    codes, counts, null_sd, sd, ended, parent = _level(rng, 3000, 30, strong_counts)
    # the decode's noise bar for the width rule: the 1 - 1/C normal quantile of a null count
    noise = special.ndtri(1.0 - 1.0 / counts.shape[0]) * null_sd
    assert np.ndim(pem._bar(counts, noise, sd, ended)[0]) == (0 if strong else 1)
    order, path = pem._kept(codes, counts, null_sd, noise, sd, ended, parent)
    want_order, want_path = _twin(pem, codes, counts, null_sd, sd, ended, parent)
    assert order.tolist() == want_order
    assert np.allclose(path, want_path, rtol=1e-13, atol=0.0)
    assert order.shape[0] == 64  # the cap binds: the order decided who stays


def test_the_score_clips_own_evidence_at_the_bar_and_weighs_the_parent():
    # one candidate per role, the bar the noise quantile q of C candidates, sd0 = 1
    C = 1000
    q = special.ndtri(1.0 - 1.0 / C)
    pem = PEM(epsilon=4.0, k=1, item_bytes=8, codebook_seed=0, max_kept=3, path_weight=0.5)
    codes = np.arange(C, dtype=np.uint64)
    counts = np.zeros(C)
    counts[:5] = [100.0, 50.0, q + 1.0, q - 0.5, q + 0.5]
    parent = np.zeros(C)
    parent[1:5] = [0.0, 0.0, 6.0, 0.0]
    ones = np.ones(C)
    order, path = pem._kept(codes, counts, ones, q * ones, ones, np.zeros(0, dtype=np.int64),
                            parent)
    # the top c k = 1 by count first; then by score: 3 (q - 0.5 + 3) before 1, 2 (q, clipped)
    assert order.tolist() == [0, 3, 1]
    assert path.tolist() == pytest.approx([q, q - 0.5 + 3.0, q])
    # the same level ranked by count (path_weight 0): the rule before
    by_count = PEM(epsilon=4.0, k=1, item_bytes=8, codebook_seed=0, max_kept=3, path_weight=0.0)
    assert by_count._kept(codes, counts, ones, q * ones, ones, np.zeros(0, dtype=np.int64),
                          parent)[0].tolist() == [0, 1, 2]


def test_equal_scores_go_by_count_then_code():
    # noise-free levels (eps 30 and up) clip every held prefix at q alike
    C = 200
    pem = PEM(epsilon=4.0, k=1, item_bytes=8, codebook_seed=0, max_kept=3, path_weight=0.7)
    codes = np.arange(C, dtype=np.uint64)[::-1].copy()
    counts = np.zeros(C)
    counts[[10, 20, 30, 40]] = [900.0, 500.0, 700.0, 700.0]
    tiny = np.full(C, 1e-3)
    noise = special.ndtri(1.0 - 1.0 / C) * tiny
    order, _ = pem._kept(codes, counts, tiny, noise, tiny, np.zeros(0, dtype=np.int64),
                         np.zeros(C))
    assert order.tolist() == [10, 40, 30]  # 700 twice: code 159 (index 40) before 169


@pytest.mark.parametrize("item_bytes, bits", [(8, 24), (16, 72), (64, 136)])
def test_parent_scores_follow_each_candidate_to_its_parent(item_bytes, bits):
    rng = np.random.default_rng(bits)
    pem = PEM(epsilon=4.0, k=4, item_bytes=item_bytes, codebook_seed=0)
    words = (bits + 63) // 64
    shape = (40,) if words == 1 else (40, words)
    kept = rng.integers(0, 2 ** 63, size=shape, dtype=np.uint64)
    kept = prefix(np.asarray(kept), bits, 64 * words) if words > 1 else kept >> np.uint64(64 - bits)
    kept = np.unique(kept, axis=0)
    scores = rng.normal(5.0, 2.0, kept.shape[0])
    keys = prefix_keys(kept, bits)
    by_key = np.argsort(keys, kind="stable")
    children = extend(kept, 8, bits=bits)
    stranger = extend(np.asarray(kept[:1]) ^ np.uint64(1), 8, bits=bits)  # a parent not kept
    got = pem._parent_scores(np.concatenate([children, stranger]), bits + 8,
                             (keys[by_key], scores[by_key]))
    assert np.array_equal(got[: children.shape[0]], np.repeat(scores, 256))
    assert np.array_equal(got[children.shape[0]:], np.zeros(256))


def test_path_weight_defaults_spec_and_errors():
    assert PEM(epsilon=4.0, item_bytes=16, codebook_seed=0).path_weight == 0.7
    assert PEM(epsilon=4.0, item_bits=32, codebook_seed=0).path_weight == 0.0  # fixed width
    assert PEM(epsilon=4.0, item_bytes=16, codebook_seed=0, z=None).path_weight == 0.0
    pem = PEM(epsilon=4.0, k=4, item_bytes=8, codebook_seed=11, path_weight=0.25)
    assert pem.stream_params()["path_weight"] == 0.25
    assert mechanisms.from_spec(pem.spec()).path_weight == 0.25
    old = pem.spec()
    old = {"mechanism": old["mechanism"],
           "params": {k: v for k, v in old["params"].items() if k != "path_weight"}}
    assert completed_spec(old)["params"]["path_weight"] == 0.0  # older specs: by count
    assert mechanisms.from_spec(old).path_weight == 0.0
    for bad in (float("nan"), -0.1, 1.0, float("inf")):
        with pytest.raises(ValueError, match=r"path_weight.*PEM.*\[0(\.0)?, 1(\.0)?\)") as err:
            PEM(epsilon=4.0, item_bytes=8, path_weight=bad)
        assert str(bad) in str(err.value)
    for bad in ("half", True, [0.2]):
        with pytest.raises(TypeError, match="path_weight"):
            PEM(epsilon=4.0, item_bytes=8, path_weight=bad)
