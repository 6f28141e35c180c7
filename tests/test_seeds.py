"""Integer seeds are domain-separated (issue 37, item 1: the seed trap).

``privatize(x, rng=s)`` used to draw from ``np.random.default_rng(s)``: data
drawn with ``default_rng(s)`` and privatized with ``rng=s`` shared one stream,
and the noise was correlated with the values (in the test below, GRR, OLH,
SS, BLH and Hadamard response counts 24 to 45 standard deviations off). :func:`as_generator` now
seeds an int from ``SeedSequence([SEED_KEY, purpose, s])``.
"""

from __future__ import annotations

import itertools

import numpy as np
import pytest

from fastldp import protocol
from fastldp._random import PURPOSES, SEED_KEY, as_generator, seed_sequence
from fastldp.oracles import GRR, FrequencyOracle

#: every concrete frequency oracle the package registers (the streaming registry)
ORACLE_CLASSES = sorted(
    (cls for cls in set(protocol.streaming_classes().values())
     if issubclass(cls, FrequencyOracle) and cls is not FrequencyOracle),
    key=lambda cls: cls.__name__)

D, N = 32, 20_000
#: a Zipf(1.1) law over the domain: the data of the trap, drawn with numpy's own default_rng(s)
ZIPF = 1.0 / np.arange(1, D + 1) ** 1.1
ZIPF /= ZIPF.sum()
#: |z| bound of every count: with 13 to 15 oracles x 10 seeds x 32 counts (about 4,800
#: near-normal z-scores) the chance that one passes 5 by luck is about 3e-3
Z_BOUND = 5.0


def _oracle(cls) -> FrequencyOracle:
    return cls(domain_size=D, epsilon=1.0, codebook_seed=0)


def test_the_registry_lists_the_oracles_of_the_trap():
    names = {cls.__name__ for cls in ORACLE_CLASSES}
    assert {"GRR", "OLH", "SubsetSelection", "BLH", "HadamardResponse"} <= names
    assert len(names) >= 13


@pytest.mark.parametrize("cls", ORACLE_CLASSES, ids=lambda cls: cls.__name__)
def test_data_from_default_rng_privatized_with_the_same_int_is_unbiased(cls):
    """Data from ``default_rng(s)``, reports from ``rng=s``, s in 0..9: every count within 5 sd.

    The sd is the oracle's own plug-in variance of each count. Before the key,
    GRR's worst count was 33 sd off, OLH's 44, SS's 45 (BLH 24, HR 24, and the
    adaptive oracle, which builds SS here, 45).
    """
    oracle = _oracle(cls)
    worst = 0.0
    for s in range(10):
        x = np.random.default_rng(s).choice(D, size=N, p=ZIPF)
        est = oracle.estimate(oracle.privatize(x, rng=s))
        z = (est.counts - np.bincount(x, minlength=D)) / np.sqrt(est.variances)
        worst = max(worst, float(np.abs(z).max()))
    assert worst < Z_BOUND, f"{cls.__name__}: a count {worst:.1f} sd off"


@pytest.mark.parametrize("cls", ORACLE_CLASSES, ids=lambda cls: cls.__name__)
def test_the_same_int_seed_gives_the_same_reports(cls):
    oracle = _oracle(cls)
    x = np.random.default_rng(1).choice(D, size=2_000, p=ZIPF)
    a = oracle.privatize(x, rng=3)
    b = oracle.privatize(x, rng=np.int64(3))  # a numpy int is the same seed
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))
    c = oracle.privatize(x, rng=4)
    assert not np.array_equal(np.asarray(a), np.asarray(c))


def test_a_generator_is_used_as_given_and_advanced():
    oracle = _oracle(GRR)
    x = np.random.default_rng(1).choice(D, size=2_000, p=ZIPF)
    gen = np.random.default_rng(5)
    first = oracle.privatize(x, rng=gen)
    second = oracle.privatize(x, rng=gen)
    assert not np.array_equal(first, second)  # the two calls advanced one stream
    # no key is mixed into a Generator: the first call is numpy's default_rng(5) itself
    np.testing.assert_array_equal(first, oracle.privatize(x, rng=np.random.default_rng(5)))
    assert as_generator(gen) is gen


def test_a_seed_sequence_is_used_as_given():
    """A SeedSequence names its own stream (experiments spawn them): no key is added."""
    oracle = _oracle(GRR)
    x = np.random.default_rng(1).choice(D, size=2_000, p=ZIPF)
    spawned = np.random.SeedSequence(11).spawn(2)[1]
    np.testing.assert_array_equal(
        oracle.privatize(x, rng=spawned),
        oracle.privatize(x, rng=np.random.default_rng(np.random.SeedSequence(11).spawn(2)[1])))
    np.testing.assert_array_equal(
        as_generator(np.random.SeedSequence(11)).random(4), np.random.default_rng(11).random(4))


def test_an_int_seed_is_the_documented_seed_sequence():
    """``rng=s`` seeds PCG64 from ``SeedSequence([SEED_KEY, PURPOSES[purpose], s])``."""
    assert 2**124 <= SEED_KEY < 2**128  # a 128-bit key
    assert sorted(PURPOSES.values()) == list(range(1, len(PURPOSES) + 1))
    assert {"privatize", "data", "sampling", "attack", "codebook", "simulate"} <= set(PURPOSES)
    for s, purpose in itertools.product((0, 7, 2**64 - 1), PURPOSES):
        expected = np.random.Generator(np.random.PCG64(
            np.random.SeedSequence([SEED_KEY, PURPOSES[purpose], s]))).integers(2**63, size=4)
        np.testing.assert_array_equal(as_generator(s, purpose=purpose).integers(2**63, size=4),
                                      expected)
        assert seed_sequence(s, purpose).entropy == [SEED_KEY, PURPOSES[purpose], s]
    # the default purpose is the mechanisms' private coins
    np.testing.assert_array_equal(as_generator(7).random(4),
                                  as_generator(7, purpose="privatize").random(4))


@pytest.mark.parametrize("s", [0, 1, 42, 2**32, 2**64 - 1])
def test_the_purposes_and_numpy_draw_different_streams_from_one_int(s):
    streams = {"numpy default_rng": np.random.default_rng(s).integers(2**63, size=8)}
    for purpose in PURPOSES:
        streams[purpose] = as_generator(s, purpose=purpose).integers(2**63, size=8)
    for (a, va), (b, vb) in itertools.combinations(streams.items(), 2):
        # 8 words of 63 bits: equal by chance with probability 2**-504
        assert not np.array_equal(va, vb), f"{a} and {b} share the stream of {s}"


def test_privatize_with_an_int_is_not_numpy_default_rng_of_it():
    oracle = _oracle(GRR)
    x = np.random.default_rng(1).choice(D, size=2_000, p=ZIPF)
    for s in range(10):
        keyed = oracle.privatize(x, rng=s)
        assert not np.array_equal(keyed, oracle.privatize(x, rng=np.random.default_rng(s)))
        np.testing.assert_array_equal(
            keyed, oracle.privatize(x, rng=np.random.Generator(np.random.PCG64(seed_sequence(s)))))


def test_fastldp_data_and_privatize_from_one_int_are_independent():
    """fastldp's own data generator and a mechanism given the same int draw two streams."""
    from fastldp.heavyhitters.data import zipf_items

    items = zipf_items(1_000, rng=9)
    np.testing.assert_array_equal(items, zipf_items(1_000, rng=as_generator(9, purpose="data")))
    assert not np.array_equal(items, zipf_items(1_000, rng=as_generator(9)))


@pytest.mark.parametrize("bad", [-1, 1.5, "0", True])
def test_a_bad_seed_is_refused_naming_rng(bad):
    with pytest.raises((ValueError, TypeError), match="'rng' parameter of GRR.privatize"):
        _oracle(GRR).privatize(np.zeros(3, dtype=np.int64), rng=bad)
