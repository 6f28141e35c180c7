"""The opt-in Philox4x32-10 pair-sign codebook (issue 38, 2).

Known answers from Random123 (tests/kat_vectors of DEShawResearch/random123,
commit 9545ff64, the three ``philox4x32 10`` lines: counter[4] key[2] ->
output[4]); the SIMD batch generator against the portable C one; the sketch
kernels against a naive twin built from ``pair_signs``; and JPRS's public
``codebook`` parameter: recorded in the spec and report files, refused on a
mismatch, bit-identical across thread counts.
"""

import numpy as np
import pytest

import fastldp
from fastldp._kernels import _hash, _sketch
from fastldp.protocol import completed_spec

KAT_PHILOX4X32_10 = [
    ((0x00000000, 0x00000000, 0x00000000, 0x00000000), (0x00000000, 0x00000000),
     (0x6627e8d5, 0xe169c58d, 0xbc57ac4c, 0x9b00dbd8)),
    ((0xffffffff, 0xffffffff, 0xffffffff, 0xffffffff), (0xffffffff, 0xffffffff),
     (0x408f276d, 0x41c83b0e, 0xa20bc7c6, 0x6d5451fd)),
    ((0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344), (0xa4093822, 0x299f31d0),
     (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)),
]
CB32 = "philox4x32-10"
CB64 = "philox4x64-10"
M32 = 0xFFFFFFFF


def py_philox4x32_10(ctr, key):
    """Philox4x32-10 in Python integers, from the published round function."""
    c0, c1, c2, c3 = ctr
    k0, k1 = key
    for r in range(10):
        if r:
            k0, k1 = (k0 + 0x9E3779B9) & M32, (k1 + 0xBB67AE85) & M32
        p0, p1 = 0xD2511F53 * c0, 0xCD9E8D57 * c2
        c0, c1, c2, c3 = ((p1 >> 32) ^ c1 ^ k0, p1 & M32, (p0 >> 32) ^ c3 ^ k1, p0 & M32)
    return c0, c1, c2, c3


def py_pair_block(seed, identity, b):
    """The documented layout: two sub-blocks, 64-bit word 2h + r = u_2r | u_2r+1 << 32."""
    words = []
    for h in range(2):
        sub = 2 * b + h
        u = py_philox4x32_10((sub & M32, sub >> 32, identity & M32, identity >> 32),
                             (seed & M32, seed >> 32))
        words += [u[0] | u[1] << 32, u[2] | u[3] << 32]
    return words


@pytest.fixture
def simd_caps():
    """Run a test body at every SIMD cap of both kernel modules, restoring them."""
    old = (_hash.set_simd_cap(3), _sketch.set_simd_cap(3))

    def levels():
        for cap in (0, 1, 2, 3):
            _hash.set_simd_cap(cap)
            _sketch.set_simd_cap(cap)
            yield cap

    yield levels
    _hash.set_simd_cap(old[0])
    _sketch.set_simd_cap(old[1])


@pytest.mark.parametrize("ctr,key,expected", KAT_PHILOX4X32_10)
def test_philox4x32_10_known_answers(ctr, key, expected):
    # the C reference (the one a FASTLDP_PORTABLE build runs) and the Python twin
    assert [int(w) for w in _hash.philox4x32_10(ctr, key)] == list(expected)
    assert py_philox4x32_10(ctr, key) == expected


def test_pair_blocks_follow_the_documented_layout():
    rng = np.random.default_rng(2)
    ids = np.concatenate([rng.integers(0, 2**64, 5, dtype=np.uint64),
                          np.array([0, 2**64 - 1], dtype=np.uint64)])
    seed = 0x243F6A8885A308D3
    got = _hash.pair_blocks(seed, ids, 3, CB32, batched=False)
    for i, ident in enumerate(ids):
        for b in range(3):
            assert [int(w) for w in got[i, b]] == py_pair_block(seed, int(ident), b)
    # a block index past 2**31 carries into the counter's second word
    far = _hash.pair_blocks(seed, ids[:1], 1, CB32, batched=False)  # block 0 as a control
    assert [int(w) for w in far[0, 0]] == py_pair_block(seed, int(ids[0]), 0)
    sign = _hash.pair_signs(seed, ids[:1], np.array([(2**33 + 1) * 256 + 77], dtype=np.int64),
                            CB32)[0]
    word = py_pair_block(seed, int(ids[0]), 2**33 + 1)[(77 >> 6) & 3]
    assert sign == 1 - 2 * ((word >> (77 & 63)) & 1)


@pytest.mark.parametrize("n", [1, 7, 8, 9, 16, 17, 37])
def test_simd_batch_gives_the_portable_words(n, simd_caps):
    # the AVX-512 and AVX2 generators (where the CPU has them) against the
    # scalar C, ragged batches included; the default codebook is unchanged by batching too
    rng = np.random.default_rng(n)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    for cb in (CB32, CB64):
        ref = _hash.pair_blocks(99, ids, 4, cb, batched=False)
        for _ in simd_caps():
            np.testing.assert_array_equal(_hash.pair_blocks(99, ids, 4, cb, batched=True), ref)


def test_codebooks_differ_and_default_is_numpy_philox():
    ids = np.arange(4, dtype=np.uint64)
    a = _hash.pair_blocks(5, ids, 2, CB64, batched=False)
    np.testing.assert_array_equal(a, _hash.hash_blocks(5, ids, 2, _hash.PAIR_SIGN_STREAM))
    b = _hash.pair_blocks(5, ids, 2, CB32, batched=False)
    assert not np.array_equal(a, b)


def naive_sketch(seed, ids, w, p, codebook):
    out = np.zeros(p, dtype=np.int64)
    pairs = np.arange(p, dtype=np.int64)
    for ident, wi in zip(ids, w):
        signs = _hash.pair_signs(seed, np.full(p, ident, dtype=np.uint64), pairs, codebook)
        out += int(wi) * signs.astype(np.int64)
    return out


@pytest.mark.parametrize("kind", ["equal", "unequal"])
@pytest.mark.parametrize("n,p", [(1, 1), (9, 65), (37, 300), (300, 513)])
def test_sketch_kernels_equal_naive_twin_in_the_new_codebook(kind, n, p, simd_caps):
    rng = np.random.default_rng(31 * n + p)
    ids = rng.integers(0, 2**64, n, dtype=np.uint64)
    if kind == "equal":
        w = np.where(rng.random(n) < 0.5, 5, -5).astype(np.int64)
    else:
        w = rng.integers(-2**32, 2**32 + 1, n, dtype=np.int64)
    ref = naive_sketch(13, ids, w, p, CB32)
    assert not np.array_equal(ref, naive_sketch(13, ids, w, p, CB64)) or n * p < 4
    for _ in simd_caps():
        for t in (1, 2):
            np.testing.assert_array_equal(_sketch.fixed_sketch(13, ids, w, p, t, 0, CB32), ref)
            np.testing.assert_array_equal(
                _sketch.global_sketch(13, ids, w.astype(np.float64), p, t, CB32),
                ref.astype(np.float64))


def test_jprs_sketch_kernel_takes_the_codebook():
    rng = np.random.default_rng(8)
    n, p = 200, 130
    bits = np.where(rng.random(n) < 0.5, 1, -1).astype(np.int8)
    eps = np.full(n, 0.8)
    got = _sketch.jprs_sketch(3, bits, eps, 1.0, None, p, 2, CB32)
    ref = naive_sketch(3, np.arange(n, dtype=np.uint64), bits.astype(np.int64), p, CB32)
    np.testing.assert_allclose(got, ref * np.tanh(0.4), rtol=1e-12)


def test_floor_folds_every_block_and_ignores_threads():
    rng = np.random.default_rng(4)
    ids = rng.integers(0, 2**64, 37, dtype=np.uint64)
    for cb in (CB32, CB64):
        blocks = _hash.pair_blocks(7, ids, 3, cb, batched=False)
        expected = int(np.bitwise_xor.reduce(blocks.ravel()))
        assert _hash.philox_floor(7, ids, 700, 1, cb) == expected
        assert _hash.philox_floor(7, ids, 700, 2, cb) == expected


def test_codebook_names_are_checked():
    with pytest.raises(ValueError, match=r"'codebook' parameter must be one of "
                                         r"\['philox4x32-10', 'philox4x64-10'\]; got 'aes'"):
        _sketch.fixed_sketch(1, None, np.ones(3, dtype=np.int64), 5, codebook="aes")
    with pytest.raises(ValueError, match=r"'codebook' parameter of JPRS must be one of "
                                         r"\['philox4x32-10', 'philox4x64-10'\]; got 1"):
        fastldp.JPRS(shape=(4, 4), k=1, s=2, codebook=1)


# --------------------------------------------------------------------- JPRS
def _population(n, shape=(8, 8), k=2):
    return fastldp.relations.rate_diagnostic_population(shape=shape, s=6, k=k, n=n, rng=1)


def test_jprs_default_codebook_and_spec():
    mech = fastldp.JPRS(shape=(4, 4), k=1, s=2, codebook_seed=3)
    assert mech.codebook == CB64
    assert mech.spec()["params"]["codebook"] == CB64
    assert "codebook=" not in repr(mech)
    new = fastldp.JPRS(shape=(4, 4), k=1, s=2, codebook_seed=3, codebook=CB32)
    assert new.spec()["params"]["codebook"] == CB32
    assert "codebook='philox4x32-10'" in repr(new)
    # a spec written before the parameter existed means the default codebook
    old = {"mechanism": "JPRS", "params": {k: v for k, v in mech.spec()["params"].items()
                                           if k != "codebook"}}
    assert completed_spec(old) == mech.spec()


def test_jprs_new_codebook_decodes_its_own_reports_and_matches_the_twin():
    n, shape = 3000, (8, 8)
    pop = _population(n, shape)
    eps = np.random.default_rng(5).uniform(0.5, 1.5, n)
    runs = {}
    for t in (1, 2):
        mech = fastldp.JPRS(shape=shape, k=2, s=6, codebook_seed=11, n_threads=t, codebook=CB32)
        bits = mech.privatize(pop.relations, epsilons=eps, rng=0)
        runs[t] = (bits, mech.estimate(bits, epsilons=eps))
    np.testing.assert_array_equal(runs[1][0], runs[2][0])
    np.testing.assert_array_equal(runs[1][1].sketch, runs[2][1].sketch)
    np.testing.assert_array_equal(runs[1][1].estimate, runs[2][1].estimate)
    # the client's sign sums are those of pair_signs in the same codebook
    mech = fastldp.JPRS(shape=shape, k=2, s=6, codebook_seed=11, n_threads=1, codebook=CB32)
    sums, sizes = mech.set_scores(pop.relations)
    sets = mech.relation_sets(pop.relations)
    ids = np.repeat(np.arange(n, dtype=np.uint64), np.diff(sets.indptr))
    signs = _hash.pair_signs(11, ids, sets.pairs, CB32).astype(np.int64)
    np.testing.assert_array_equal(sums, np.add.reduceat(signs, sets.indptr[:-1])
                                  * (np.diff(sets.indptr) > 0))
    # the server's sketch is Eq. (8) over the same signs
    bits = runs[1][0]
    w = mech.sketch_weights(bits, eps)
    ref = naive_sketch_float(11, w, mech.p, CB32)
    # the decoder rounds each weight to 32 significant bits (relative error
    # <= 2**-32) and sums exactly, so it differs from the float twin by at
    # most 2**-32 sum |w|, plus the twin's own rounding
    np.testing.assert_allclose(runs[1][1].sketch.ravel(), ref, rtol=0,
                               atol=2.0**-31 * float(np.abs(w).sum()))


def naive_sketch_float(seed, w, p, codebook):
    n = w.shape[0]
    pairs = np.tile(np.arange(p, dtype=np.int64), n)
    ids = np.repeat(np.arange(n, dtype=np.uint64), p)
    signs = _hash.pair_signs(seed, ids, pairs, codebook).reshape(n, p).astype(np.float64)
    return w @ signs


def test_jprs_new_codebook_is_unbiased():
    # the sketch estimates the gamma^2-weighted mean of the sets; its
    # coordinate variance is at most 2k / D (class docstring), so 5 sigma
    n, shape, k = 20000, (8, 8), 2
    pop = _population(n, shape, k)
    eps = np.full(n, 1.0)
    mech = fastldp.JPRS(shape=shape, k=k, s=6, codebook_seed=21, codebook=CB32, n_threads=1)
    bits = mech.privatize(pop.relations, epsilons=eps, rng=4)
    est = mech.estimate(bits, epsilons=eps)
    truth = np.zeros(mech.p)
    sets = mech.relation_sets(pop.relations)
    np.add.at(truth, sets.pairs, 1.0 / n)
    sigma = np.sqrt(2 * k / est.budget.gamma_sq_sum)
    assert np.max(np.abs(est.sketch.ravel() - truth)) < 5 * sigma


def test_jprs_refuses_partials_of_the_other_codebook():
    pop = _population(50)
    eps = np.full(50, 1.0)
    a = fastldp.JPRS(shape=(8, 8), k=2, s=6, codebook_seed=2, codebook=CB32)
    b = fastldp.JPRS(shape=(8, 8), k=2, s=6, codebook_seed=2)
    part = a.partial(a.privatize(pop.relations, epsilons=eps, rng=0), eps)
    with pytest.raises(ValueError, match="cannot be finalized here"):
        b.finalize(part)
    assert a.finalize(part).n == 50


def test_report_files_record_the_codebook_and_refuse_a_mismatch(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.reports import ReportFile, decode_files, write_reports

    pop = _population(40)
    eps = np.full(40, 1.0)
    a = fastldp.JPRS(shape=(8, 8), k=2, s=6, codebook_seed=2, codebook=CB32, n_threads=1)
    b = fastldp.JPRS(shape=(8, 8), k=2, s=6, codebook_seed=2, n_threads=1)
    bits = a.privatize(pop.relations, epsilons=eps, rng=0)
    path = write_reports(tmp_path / "r.parquet", a, bits, eps)
    assert ReportFile(path).spec["params"]["codebook"] == CB32
    with pytest.raises(ValueError, match="cannot be decoded"):
        decode_files(b, [path])
    np.testing.assert_array_equal(decode_files(a, [path]).sketch,
                                  a.estimate(bits, epsilons=eps).sketch)


def test_privacy_statement_does_not_depend_on_the_codebook():
    pop = _population(30)
    eps = np.random.default_rng(1).uniform(0.3, 2.0, 30)
    a = fastldp.JPRS(shape=(8, 8), k=2, s=6, codebook_seed=2, codebook=CB32)
    b = fastldp.JPRS(shape=(8, 8), k=2, s=6, codebook_seed=2)
    assert a.privacy(eps) == b.privacy(eps)
    # and the channel's output probabilities stay within (1 +- gamma_i) / 2
    prob = a.output_probabilities(pop.relations, eps)
    g = np.tanh(eps / 2)
    assert np.all(prob >= (1 - g) / 2 - 1e-12) and np.all(prob <= (1 + g) / 2 + 1e-12)
