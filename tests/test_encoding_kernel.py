"""The SHE kernels (fastldp._kernels._encoding) against naive twins: the client's rows against
numpy.random.Philox and math.log1p, the server's exact sums against fractions.Fraction and
ExactSum.add, the legality flags against NumPy comparisons, and thread-count independence."""

import math
from fractions import Fraction

import numpy as np
import pytest

from fastldp._kernels import _encoding as enc
from fastldp.streaming import ExactSum

TWO64 = 1 << 64


# ---------------------------------------------------------------- naive twins
def laplace_twin(word: int) -> float:
    """The module's inverse CDF, one word at a time in Python floats (math.log1p is libm's)."""
    u = min((float(word >> 11) + 0.5) * 2.0**-53, 1.0 - 2.0**-53)
    t = u - 0.5
    sign = 1.0 if t > 0 else (-1.0 if t < 0 else 0.0)  # numpy.sign
    return -sign * math.log1p(-2.0 * abs(t))


def philox_row_words(k0: int, k1: int, row: int, n_words: int) -> np.ndarray:
    """Words of row ``row``: blocks at counters (c, row, SHE_STREAM, 0), c = 0, 1, ...

    numpy's Philox returns the block of counter + 1 first and then counts up
    in the lowest word, so it starts one below (c = 0, row) as a 256-bit number.
    """
    counter = (0 + (row << 64) + (enc.SHE_STREAM << 128) - 1) % (1 << 256)
    words = [(counter >> (64 * i)) & (TWO64 - 1) for i in range(4)]
    bitgen = np.random.Philox(counter=np.array(words, dtype=np.uint64),
                              key=np.array([k0, k1], dtype=np.uint64))
    n_blocks = (n_words + 3) // 4
    return bitgen.random_raw(4 * n_blocks)[:n_words]


def fraction_column_sums(rows, weights=None):
    """Exact column sums of rows[i, v] * weights[i] (each product rounded once), as Fractions."""
    y = rows if weights is None else rows * weights[:, None]
    return [sum((Fraction(float(v)) for v in y[:, j]), Fraction(0)) for j in range(y.shape[1])]


def kernel_sums(rows, lo, hi, weights=None, group=None, n_groups=1, n_threads=1):
    top = max(np.abs(lo).max(), np.abs(hi).max())
    if weights is not None:
        top *= np.abs(weights).max()
    beta = math.frexp(top)[1] + 1
    legal, digits = enc.she_column_sums(rows, lo, hi, weights, group, n_groups, beta, n_threads)
    sums = []
    for g in range(n_groups):
        s = ExactSum.from_digits(rows.shape[1], enc.K_LO, digits[g])
        sums.append(s)
    return legal.view(bool), sums, digits


def hostile_rows(rng, n, D, bound):
    """Laplace rows with zeros, -0.0, subnormals, tiny and huge-but-legal entries, bound edges."""
    x = rng.laplace(scale=2.0, size=(n, D))
    x[np.arange(n), rng.integers(0, D, n)] += 1.0
    kinds = rng.integers(0, 12, size=(n, D))
    x[kinds == 0] = 0.0
    x[kinds == 1] = -0.0
    x[kinds == 2] = 5e-324 * rng.integers(1, 1000, size=int((kinds == 2).sum()))
    x[kinds == 3] = -2.0**-1022 * rng.random(int((kinds == 3).sum()))
    x[kinds == 4] = rng.laplace(size=int((kinds == 4).sum())) * 1e-30
    x[kinds == 5] = 1.0 + bound   # the upper edge: legal
    x[kinds == 6] = -bound        # the lower edge: legal
    x[kinds == 7] = rng.uniform(-bound, 1.0 + bound, size=int((kinds == 7).sum()))
    return x


# ---------------------------------------------------------------- client
def test_laplace_from_words_is_the_inverse_cdf_bit_for_bit():
    rng = np.random.default_rng(0)
    edges = [0, 1, 2**11 - 1, 2**11, 2**63 - 2**11, 2**63 - 1, 2**63, 2**63 + 2**11,
             TWO64 - 2**11, TWO64 - 1, (2**52 - 1) << 11, (2**52 + 1) << 11]
    words = np.concatenate([np.array(edges, dtype=np.uint64),
                            rng.integers(0, 2**64, size=5000, dtype=np.uint64)])
    got = enc.laplace_from_words(words)
    want = np.array([laplace_twin(int(w)) for w in words])
    # the kernel's logarithm is fdlibm's (branch-free), libm's log1p is another within
    # one unit in the last place: they agree to 1 ulp, and on the sign (of zeros too)
    ulps = np.abs(got - want) / np.spacing(np.abs(want))
    assert ulps.max() <= 1.0
    assert np.array_equal(np.signbit(got), np.signbit(want))
    assert np.mean(got == want) > 0.9  # mostly the same double
    # u = 1/2 (word 2**63: 2**52 + 0.5 rounds to 2**52) gives +0.0, as numpy's -sign(0) * 0 does
    assert math.copysign(1.0, float(enc.laplace_from_words(np.array([2**63], np.uint64))[0])) > 0
    # the largest magnitude: |log1p(-(1 - 2**-53))| = 53 ln 2 < 745 (the sanitization bound);
    # the top word's u rounds to 1 before the cap: without it this variate would be inf
    assert np.abs(got).max() <= 53 * math.log(2) + 1e-12
    assert got[edges.index(TWO64 - 1)] == pytest.approx(52 * math.log(2), rel=1e-15)
    # the public noise of the module maps words the same way (NumPy's log1p may differ
    # from libm's in the last place; every other operation is the same)
    from fastldp.oracles.histogram_encoding import _laplace_from_words
    np.testing.assert_allclose(_laplace_from_words(words), got, rtol=4 * 2.0**-52, atol=0)


def test_she_rows_are_one_hot_plus_scaled_laplace_of_philox_words():
    k0, k1, D = 0x0123456789ABCDEF, 0xFEDCBA9876543210, 11  # D not a multiple of 4
    values = np.array([0, 10, -1, 4, 7, 3], dtype=np.int64)
    scales = np.array([2.0, 0.5, 1.0, 3.0, 2.0 / 0.7, 1e-3])
    got = enc.she_perturb(k0, k1, values, scales, D, 1)
    for r in range(values.shape[0]):
        words = philox_row_words(k0, k1, r, D)
        noise = np.array([laplace_twin(int(w)) * scales[r] for w in words])
        want = noise.copy()
        if values[r] >= 0:
            want[values[r]] += 1.0
        # the variates to 1 ulp (fdlibm's log against libm's log1p), each scaled and
        # its one added with one rounding each
        tol = 2.0**-51 * np.abs(noise) + np.spacing(np.abs(want))
        assert np.all(np.abs(got[r] - want) <= tol), r
        assert got[r].tobytes() == (enc.laplace_from_words(words) * scales[r]
                                    + np.eye(D)[values[r]] * (values[r] >= 0)).tobytes()
    # one scale for every row is the same as that scale repeated
    one = enc.she_perturb(k0, k1, values, np.array([2.0]), D, 1)
    assert one.tobytes() == enc.she_perturb(k0, k1, values, np.full(6, 2.0), D, 1).tobytes()
    # another key, other noise
    assert not np.array_equal(enc.she_perturb(k0 + 1, k1, values, scales, D, 1), got)


def test_she_perturb_does_not_depend_on_the_thread_count():
    rng = np.random.default_rng(1)
    values = rng.integers(-1, 37, 3001)
    scales = rng.uniform(0.1, 5.0, 3001)
    a = enc.she_perturb(5, 6, values, scales, 37, 1)
    b = enc.she_perturb(5, 6, values, scales, 37, 2)
    assert a.tobytes() == b.tobytes()


def test_she_perturb_refuses_bad_arguments():
    with pytest.raises(ValueError, match="values must lie"):
        enc.she_perturb(1, 2, np.array([5], dtype=np.int64), np.array([1.0]), 5)
    with pytest.raises(ValueError, match="scales must have length"):
        enc.she_perturb(1, 2, np.array([0, 1], dtype=np.int64), np.ones(3), 5)


def test_she_floor_generates_the_clients_variates():
    # the floor's sum is the sum of the unscaled variates of every row
    n, D = 40, 9
    total = enc.she_floor(1, 2, n, D, 2)
    rows = enc.she_perturb(1, 2, np.full(n, -1, dtype=np.int64), np.array([1.0]), D, 1)
    assert total == pytest.approx(rows.sum(axis=1).sum(), rel=1e-12, abs=1e-9)
    assert total == enc.she_floor(1, 2, n, D, 1)


# ---------------------------------------------------------------- server
@pytest.mark.parametrize("weighted", [False, True])
def test_column_sums_equal_fraction_sums_on_hostile_inputs(weighted):
    rng = np.random.default_rng(2 + weighted)
    for trial in range(12):
        n, D = int(rng.integers(1, 1300)), int(rng.integers(1, 7))
        bound = 745.0 * 2.0 / float(rng.choice([0.5, 1.0, 3.0]))
        x = hostile_rows(rng, n, D, bound)
        lo, hi = np.full(n, -bound), np.full(n, 1.0 + bound)
        w = rng.uniform(-3.0, 3.0, n) if weighted else None
        if weighted:
            w[rng.random(n) < 0.1] = 0.0
        legal, (s,), _ = kernel_sums(x, lo, hi, w, n_threads=1 + trial % 2)
        assert legal.all()
        want = fraction_column_sums(x, w)
        # exact: the correctly rounded Fraction sums (and the same number as ExactSum.add's)
        assert s.value().tobytes() == np.array([float(f) for f in want]).tobytes()
        slow = ExactSum(D)
        y = x if w is None else x * w[:, None]
        slow.add(y.ravel(), np.broadcast_to(np.arange(D), y.shape).ravel())
        assert s == slow


def test_column_sums_catch_every_remainder():
    # entries far below the last grid (2**-1074, 1e-300) and one large entry per column:
    # dropping the remainder path would lose exactly the tiny part
    n, D = 700, 3
    x = np.zeros((n, D))
    x[::2, 0] = 5e-324
    x[1::7, 1] = -1e-300
    x[:, 2] = 1000.0
    x[5, 2] = 1000.0 + 2.0**-43  # a bit just below the first grid's unit
    lo, hi = np.full(n, -1500.0), np.full(n, 1501.0)
    legal, (s,), _ = kernel_sums(x, lo, hi)
    assert legal.all()
    want = fraction_column_sums(x)
    assert want[0] == 350 * Fraction(5e-324) and want[0] != 0
    assert s.value().tolist() == [float(f) for f in want]
    exact = ExactSum(D)
    exact.add(x.ravel(), np.broadcast_to(np.arange(D), x.shape).ravel())
    assert s == exact


def test_illegal_rows_are_flagged_and_left_out():
    rng = np.random.default_rng(4)
    n, D = 300, 5
    x = np.clip(rng.laplace(size=(n, D)), -1.9, 1.9)
    lo = -rng.uniform(2.0, 4.0, n)
    hi = 1.0 - lo
    bad = {3: np.nan, 10: np.inf, 11: -np.inf, 20: 1e300}
    for i, v in bad.items():
        x[i, i % D] = v
    x[30, 0] = hi[30] * (1 + 2**-52)     # just beyond the upper edge
    x[31, 1] = np.nextafter(lo[31], -np.inf)  # just beyond the lower edge
    x[32, 2] = hi[32]                    # on the edge: legal
    legal, (s,), _ = kernel_sums(x, lo, hi)
    with np.errstate(invalid="ignore"):
        twin = ((x >= lo[:, None]) & (x <= hi[:, None])).all(axis=1)
    assert np.array_equal(legal, twin)
    assert sorted(np.flatnonzero(~legal)) == [3, 10, 11, 20, 30, 31]
    assert np.array_equal(enc.she_legal_rows(x, lo, hi, 2).view(bool), twin)
    want = fraction_column_sums(x[twin])
    assert s.value().tolist() == [float(f) for f in want]


def test_groups_sum_apart():
    rng = np.random.default_rng(5)
    n, D = 2000, 4
    x = hostile_rows(rng, n, D, 1490.0)
    lo, hi = np.full(n, -1490.0), np.full(n, 1491.0)
    group = rng.integers(0, 3, n).astype(np.uint8)
    legal, sums, _ = kernel_sums(x, lo, hi, None, group, 3)
    for g in range(3):
        assert sums[g].value().tolist() == [float(f) for f in fraction_column_sums(x[group == g])]


def test_column_sums_do_not_depend_on_the_thread_count():
    rng = np.random.default_rng(6)
    n, D = 5000, 17
    x = hostile_rows(rng, n, D, 1490.0)
    x[17, 3] = np.nan
    lo, hi = np.full(n, -1490.0), np.full(n, 1491.0)
    w = rng.uniform(0.0, 2.0, n)
    one = kernel_sums(x, lo, hi, w, n_threads=1)
    two = kernel_sums(x, lo, hi, w, n_threads=2)
    assert np.array_equal(one[0], two[0]) and not one[0][17]
    assert one[2].tobytes() == two[2].tobytes()  # the same normalized digits


def test_column_sums_refuse_a_grid_beyond_the_doubles():
    x = np.zeros((2, 2))
    lo, hi = np.full(2, -1.0), np.full(2, 2.0)
    with pytest.raises(ValueError, match="beta must be in"):
        enc.she_column_sums(x, lo, hi, None, None, 1, enc.BETA_RANGE[1] + 1)
    with pytest.raises(ValueError, match="group must lie"):
        enc.she_column_sums(x, lo, hi, None, np.array([0, 2], np.uint8), 2, 3)
