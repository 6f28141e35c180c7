"""``_gram.gram_and_l2_sums_prefixes`` gives each prefix's ``gram_and_l2_sums`` bit for bit.

Nested data (regression-n: the data of ``n`` users are the first ``n m`` rows of one
draw) take the Lasso's ``X[:p].T @ X[:p]`` and Sample-SDP's clipped sums of several
prefixes from one pass; each must be the plain products of that prefix alone.
"""

import numpy as np
import pytest

from fastldp.regression import _gram
from fastldp.regression._clipping import _row_norms
from fastldp.regression.sample_sdp import default_radii, l2_clipped_sums


def _data(N, d, seed):
    gen = np.random.default_rng(seed)
    X = gen.standard_normal((N, d))
    return X, X[:, 0] * 0.5 + gen.standard_normal(N)


def _chunk():
    pytest.importorskip("threadpoolctl")
    q = _gram.blas_chunk_rows()
    if q is None:
        pytest.skip("no OpenBLAS chunk found: the plain products are used")
    return q


def _one_blas_thread():
    threadpoolctl = pytest.importorskip("threadpoolctl")
    return threadpoolctl.threadpool_limits(limits=1, user_api="blas")


def _check(X, y, prefixes, radii, rows, got):
    # each prefix alone: gram_and_l2_sums, and the plain products it equals
    assert len(got) == len(prefixes)
    for p, (xr, yr), (gram, sums) in zip(prefixes, radii, got):
        alone_gram, alone = _gram.gram_and_l2_sums(X[:p], y[:p], xr, yr, rows)
        plain_gram = X[:p].T @ X[:p]
        plain = l2_clipped_sums(X[:p], y[:p], xr, yr, rows)
        for ref_gram, ref in ((alone_gram, alone), (plain_gram, plain)):
            assert np.array_equal(gram, ref_gram), p
            assert np.array_equal(sums[0], ref[0]), p
            assert np.array_equal(sums[1], ref[1]), p
            assert sums[2:] == tuple(ref[2:]), p


def _prefixes(N, q, rows):
    # at and off the multiples of q and of rows, one row, the whole X; unsorted, repeated
    return [N, q - 1, 1, 2 * q + 1, rows, rows + 1, q, 2 * q, 3 * q - 1, 2 * rows,
            2 * rows + q, 3 * rows - 1, N - 1, rows, N]


@pytest.mark.parametrize("d", [37, 64])
def test_each_prefix_is_its_own_gram_and_clipped_sums_bit_for_bit(d):
    # fails if a prefix takes a running sum of the wrong length, a shared block product
    # where its radius clips a row, another prefix's tail, or a block in another order
    q = _chunk()
    rows = 3 * q + 5
    N = 5 * rows + 2 * q + 17
    X, y = _data(N, d, 100 + d)
    X[rows + 7] *= 3.0   # clipped at every radius below: a block no prefix shares
    X[4 * rows + 2] *= 1.8  # clipped for the small prefixes' radius only
    prefixes = _prefixes(N, q, rows)
    small_r = float(np.sqrt(d) + 0.4)  # clips some rows of most blocks
    large_r = float(1.5 * np.sqrt(d))
    # small prefixes: x and y clipped; large ones: neither (except the scaled rows);
    # the repeated ones with other radii too
    radii = [(large_r, 50.0) if p > 2 * rows else (small_r, 1.2) for p in prefixes]
    radii[-2] = (small_r, 50.0)
    norms = _row_norms(X)
    blocks = [(s, s + rows) for s in range(0, 5 * rows, rows)]
    assert any((norms[s:e] > small_r).any() and not (norms[s:e] > large_r).any()
               for s, e in blocks)
    assert (norms[rows:2 * rows] > large_r).any()
    with _one_blas_thread():
        got = _gram.gram_and_l2_sums_prefixes(X, y, prefixes, radii, rows)
        _check(X, y, prefixes, radii, rows, got)
    counts = {p: sums[2:] for p, _, (g, sums) in zip(prefixes, radii, got)}
    assert counts[2 * q + 1][0] > 0 and counts[2 * q + 1][1] > 0  # small: x and y clipped
    assert got[0][1][2] >= 1 and got[0][1][3] == 0  # whole X: the scaled rows only
    # repeats are copies, not the same arrays
    assert got[0][0] is not got[-1][0] and got[0][1][0] is not got[-1][1][0]


def test_default_radii_and_the_block_size_of_sample_sdp():
    # the experiment's call: radii from default_radii per prefix, sample_sdp's blocks
    from fastldp.regression.sample_sdp import _BLOCK as B

    q = _chunk()
    N, d = 3 * B + 2 * q + 3, 24
    X, y = _data(N, d, 7)
    prefixes = [N, B, B + q, 2 * B + 1, 3 * B]
    radii = [default_radii(d, p, 0.25, 1.0) for p in prefixes]
    with _one_blas_thread():
        got = _gram.gram_and_l2_sums_prefixes(X, y, prefixes, radii, B)
        _check(X, y, prefixes, radii, B, got)


def test_a_prefix_of_one_row_alone():
    q = _chunk()
    X, y = _data(2 * q + 9, 5, 3)
    with _one_blas_thread():
        got = _gram.gram_and_l2_sums_prefixes(X, y, [1], [(0.5, 0.1)], 4)
        _check(X, y, [1], [(0.5, 0.1)], 4, got)
    assert got[0][1][2:] == (1, int(abs(y[0] * 0.5 / np.linalg.norm(X[0])) > 0.1))


@pytest.mark.parametrize("how", ["no chunk", "not C-contiguous"])
def test_the_plain_fallback(monkeypatch, how):
    # without the OpenBLAS chunk (or on a Fortran-ordered X) each prefix is computed alone;
    # runs everywhere (no skip)
    q = 40
    rows = 3 * q + 5
    X, y = _data(4 * rows + 11, 9, 5)
    N = len(X)
    if how == "no chunk":
        monkeypatch.setattr(_gram, "blas_chunk_rows", lambda: None)
    else:
        X = np.asfortranarray(X)
    prefixes = [N, q - 1, rows, rows + 1, 1, rows]
    radii = [(3.2 if p < N else 9.0, 1.0) for p in prefixes]
    got = _gram.gram_and_l2_sums_prefixes(X, y, prefixes, radii, rows)
    assert len(got) == len(prefixes)
    for p, (xr, yr), (gram, sums) in zip(prefixes, radii, got):
        plain = l2_clipped_sums(X[:p], y[:p], xr, yr, rows)
        assert np.array_equal(gram, X[:p].T @ X[:p])
        assert np.array_equal(sums[0], plain[0]) and np.array_equal(sums[1], plain[1])
        assert sums[2:] == tuple(plain[2:])
    assert got[2][1][2] > 0 and got[0][1][2] == 0  # the small radius clips, the large not


def test_no_prefixes_give_an_empty_list():
    X, y = _data(10, 3, 0)
    assert _gram.gram_and_l2_sums_prefixes(X, y, [], [], 4) == []


@pytest.mark.parametrize("prefixes, radii, match", [
    ([0], [(1.0, 1.0)], r"prefixes\[0\].*\[1, 10\].*got 0"),
    ([5, 11], [(1.0, 1.0)] * 2, r"prefixes\[1\].*\[1, 10\].*got 11"),
    ([-1], [(1.0, 1.0)], r"prefixes\[0\].*\[1, 10\].*got -1"),
    ([5, 6], [(1.0, 1.0)], r"radii.*len\(prefixes\) == 2.*got len\(radii\) = 1"),
    ([5], [(1.0, 1.0)] * 3, r"radii.*len\(prefixes\) == 1.*got len\(radii\) = 3"),
])
def test_bad_input_names_the_parameter_the_range_and_the_value(prefixes, radii, match):
    X, y = _data(10, 3, 0)
    with pytest.raises(ValueError, match=match):
        _gram.gram_and_l2_sums_prefixes(X, y, prefixes, radii, 4)
