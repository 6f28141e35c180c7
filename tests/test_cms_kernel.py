"""The hash-sketch server kernels (fastldp._kernels._cms) against naive twins.

Each kernel is compared with a plain Python / NumPy loop on random inputs,
edge sizes included (no reports, one report, a sketch row with more reports
than one carry-save block, widths around a word boundary), and each
counting kernel must refuse (return None for) a report that is not legal.
Integer results are compared exactly, and with 1 and 3 threads.
"""

from __future__ import annotations

import numpy as np
import pytest

from fastldp._kernels._cms import (
    bloom_design, bloom_gram, cms_counts, cohort_bit_counts, fwht_rows_int64, hcms_counts,
    int64_to_float64, pair_counts,
)
from fastldp.oracles.olh import olh_hash


# ---------------------------------------------------------------- naive twins
def naive_pairs(reports, h, g):
    out = np.zeros(h * g, dtype=np.int64)
    for j, y in reports.tolist():
        if not (0 <= j < h and 0 <= y < g):
            return None
        out[j * g + y] += 1
    return out


def naive_hcms(reports, k, m, signed):
    out = np.zeros((k, m) if signed else 2 * k * m, dtype=np.int64)
    for j, l, w in reports.tolist():
        if not (0 <= j < k and 0 <= l < m and w in (-1, 1)):
            return None
        if signed:
            out[j, l] += w
        else:
            out[2 * (j * m + l) + (w > 0)] += 1
    return out


def naive_cms(reports, k, m):
    """Bit l of a report: bit l % 64 of the integer in column 1 + l // 64."""
    W = (m + 63) // 64
    out = np.zeros((k, m), dtype=np.int64)
    for row in reports.tolist():
        j, words = row[0], [w % 2**64 for w in row[1:]]  # two's complement
        if not 0 <= j < k or words[W - 1] >> (m - 64 * (W - 1)):
            return None
        for l in range(m):
            out[j, l] += (words[l // 64] >> (l % 64)) & 1
    return out


def sylvester(m):
    H = np.ones((1, 1), dtype=np.int64)
    while H.shape[0] < m:
        H = np.block([[H, H], [H, -H]])
    return H


# ---------------------------------------------------------------- FLH and HCMS cells
@pytest.mark.parametrize("n", [0, 1, 17, 2000])
def test_pair_counts_are_the_cell_counts_or_none(n):
    rng = np.random.default_rng(n)
    h, g = 7, 5
    r = np.stack([rng.integers(0, h, n), rng.integers(0, g, n)], axis=1).astype(np.int64)
    np.testing.assert_array_equal(pair_counts(r, h, g), naive_pairs(r, h, g))
    for col, bad in ((0, h), (1, g), (0, -1), (1, -(2**62))):
        if n:
            r2 = r.copy()
            r2[-1, col] = bad  # the last report: the check reaches the end
            assert naive_pairs(r2, h, g) is None and pair_counts(r2, h, g) is None


@pytest.mark.parametrize("signed", [False, True])
@pytest.mark.parametrize("n", [0, 1, 33, 3000])
def test_hcms_counts_are_the_cell_counts_or_none(n, signed):
    rng = np.random.default_rng(n + 7)
    k, m = 3, 8
    r = np.stack([rng.integers(0, k, n), rng.integers(0, m, n),
                  2 * rng.integers(0, 2, n) - 1], axis=1).astype(np.int64)
    np.testing.assert_array_equal(hcms_counts(r, k, m, signed), naive_hcms(r, k, m, signed))
    for col, bad in ((0, k), (1, m), (1, -1), (2, 0), (2, 2), (2, -3)):
        if n:
            r2 = r.copy()
            r2[n // 2, col] = bad
            assert hcms_counts(r2, k, m, signed) is None


@pytest.mark.parametrize("m", [1, 2, 4, 64, 256])
@pytest.mark.parametrize("k", [0, 1, 5])
def test_fwht_rows_int64_is_the_product_with_the_sylvester_matrix(k, m):
    rng = np.random.default_rng(k * 1000 + m)
    Z = rng.integers(-(2**40), 2**40, (k, m))
    want = Z @ sylvester(m)
    for threads in (1, 3):
        got = Z.copy()
        assert fwht_rows_int64(got, threads) is None
        np.testing.assert_array_equal(got, want)
    with pytest.raises(ValueError, match="power of two"):
        fwht_rows_int64(np.zeros((2, 6), dtype=np.int64))


def test_int64_to_float64_rounds_as_astype_in_place():
    rng = np.random.default_rng(4)
    v = np.concatenate([rng.integers(-(2**63), 2**63 - 1, 500, dtype=np.int64),
                        np.array([0, -1, 2**53 + 1, -(2**53) - 1, 2**63 - 1, -(2**63)])])
    want = v.astype(np.float64)
    out = int64_to_float64(v)
    assert out.dtype == np.float64 and np.shares_memory(out, v)
    np.testing.assert_array_equal(out, want)
    assert int64_to_float64(np.zeros(0, dtype=np.int64)).shape == (0,)


# ---------------------------------------------------------------- CMS bit counts
@pytest.mark.parametrize("k, m, n", [(1, 1, 0), (3, 63, 1), (3, 64, 16), (4, 65, 47),
                                     (40, 130, 700), (1, 70, 4500)])
def test_cms_counts_equal_the_bit_by_bit_loop(k, m, n):
    """(1, 70, 4500): one sketch row over more than one carry-save block (2032 reports)."""
    rng = np.random.default_rng(k * m + n)
    W = (m + 63) // 64
    r = np.empty((n, 1 + W), dtype=np.int64)
    r[:, 0] = rng.integers(0, k, n)
    r[:, 1:] = rng.integers(-(2**63), 2**63 - 1, (n, W), dtype=np.int64, endpoint=True)
    used = m - 64 * (W - 1)
    if used < 64:  # clear the padding bits of the last word
        r[:, W] = (r[:, W].view(np.uint64) & np.uint64((1 << used) - 1)).view(np.int64)
    want = naive_cms(r, k, m) if n <= 700 else None
    if want is None:  # the long case: the NumPy unpacking twin
        bits = np.unpackbits(r[:, 1:].astype("<i8").view(np.uint8), axis=1,
                             bitorder="little", count=m)
        want = np.zeros((k, m), dtype=np.int64)
        np.add.at(want, r[:, 0], bits)
    for threads in (1, 3):
        np.testing.assert_array_equal(cms_counts(r, k, m, threads), want)
    if n:
        bad = r.copy()
        bad[-1, 0] = k
        assert cms_counts(bad, k, m) is None
        bad[-1, 0] = -1
        assert cms_counts(bad, k, m) is None
        if used < 64:  # a padding bit
            bad = r.copy()
            bad[n // 2, W] |= np.int64(1) << np.int64(used) if used < 63 else np.int64(-(2**63))
            assert naive_cms(bad[n // 2:n // 2 + 1], k, m) is None
            assert cms_counts(bad, k, m) is None
    with pytest.raises(ValueError, match="columns"):
        cms_counts(np.zeros((2, W + 2), dtype=np.int64), k, m)


@pytest.mark.parametrize("C, m, n", [(1, 1, 0), (3, 63, 1), (64, 128, 3000), (5, 130, 400),
                                     (1, 65, 4500)])
def test_cohort_bit_counts_equal_the_unpacked_sums_per_cohort(C, m, n):
    """RAPPOR's counts: cohort ``identity mod C`` (identities up to 2**64 - 1)."""
    rng = np.random.default_rng(C * m + n)
    W = (m + 63) // 64
    words = rng.integers(-(2**63), 2**63 - 1, (n, W), dtype=np.int64, endpoint=True)
    ids = rng.integers(0, 2**64 - 1, n, dtype=np.uint64, endpoint=True)
    bits = np.unpackbits(words.astype("<i8").view(np.uint8), axis=1, bitorder="little",
                         count=m).astype(np.int64)
    cohort = (ids % np.uint64(C)).astype(np.int64)
    want = np.zeros((C, m), dtype=np.int64)
    for i in range(n):  # the plain loop
        want[cohort[i]] += bits[i]
    for threads in (1, 3):
        counts, sizes = cohort_bit_counts(words, ids, C, m, threads)
        np.testing.assert_array_equal(counts, want)
        np.testing.assert_array_equal(sizes, np.bincount(cohort, minlength=C))


@pytest.mark.parametrize("C, h, k, D, seed", [(1, 1, 2, 1, 0), (5, 3, 16, 37, 11),
                                              (3, 9, 4, 20, 2**64 - 1), (2, 2, 128, 1030, 7)])
def test_bloom_design_is_the_set_of_olh_hashes_per_cohort(C, h, k, D, seed):
    """Row c k + j lists, increasing, every v with olh_hash(seed, c h + t, v, k) = j for some t
    (a bit two hash functions set listed once); D = 1030 ends in a partial Philox block."""
    indptr, indices = bloom_design(seed, C, h, k, D)
    want_rows = [[] for _ in range(C * k)]
    for c in range(C):
        pos = olh_hash(seed, np.repeat(np.arange(c * h, (c + 1) * h, dtype=np.uint64), D),
                       np.tile(np.arange(D), h), k).reshape(h, D)
        for v in range(D):
            for j in sorted(set(pos[:, v].tolist())):
                want_rows[c * k + j].append(v)
    assert indptr.tolist() == np.r_[0, np.cumsum([len(r) for r in want_rows])].tolist()
    assert indices.tolist() == [v for r in want_rows for v in r]


# ---------------------------------------------------------------- RAPPOR's Gram
@pytest.mark.parametrize("R, D", [(1, 1), (6, 9), (40, 25), (300, 700)])
def test_bloom_gram_is_the_dense_weighted_product(R, D):
    """Blocks of G's rows of every size, threads splitting them: always the same sums."""
    rng = np.random.default_rng(R * D)
    X = (rng.random((R, D)) < 0.3).astype(np.int64)
    X[0] = 0  # an empty row
    rows = [np.flatnonzero(X[r]) for r in range(R)]
    row_ptr = np.r_[0, np.cumsum([len(c) for c in rows])].astype(np.int64)
    row_cols = np.concatenate(rows + [np.zeros(0, np.int64)]).astype(np.int64)
    w = rng.integers(0, 1000, R).astype(np.float64)
    want = X.T @ np.diag(w) @ X  # integers: exact in both
    for threads in (1, 3):
        for block in (0, 1, 7):  # the default block, one row of G per pass, blocks of 7
            np.testing.assert_array_equal(bloom_gram(row_ptr, row_cols, w, D, threads, block),
                                          want)
    frac = rng.random(R)
    np.testing.assert_allclose(bloom_gram(row_ptr, row_cols, frac, D),
                               X.T @ np.diag(frac) @ X, rtol=1e-13, atol=1e-13)
    if row_cols.shape[0]:
        bad = row_cols.copy()
        bad[-1] = D
        with pytest.raises(ValueError, match="outside"):
            bloom_gram(row_ptr, bad, w, D)
    long = int(np.argmax(np.diff(row_ptr)))
    if row_ptr[long + 1] - row_ptr[long] > 1:  # a row's columns must be increasing
        shuffled = row_cols.copy()
        shuffled[row_ptr[long]:row_ptr[long + 1]] = shuffled[row_ptr[long]:row_ptr[long + 1]][::-1]
        with pytest.raises(ValueError, match="increasing"):
            bloom_gram(row_ptr, shuffled, w, D)
