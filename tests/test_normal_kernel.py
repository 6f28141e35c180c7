"""The ziggurat normal sampler (fastldp._random.standard_normal, kernel _normal).

- a naive pure-Python twin of the algorithm, fed the same 64-bit words, gives
  the kernel's values bit for bit and consumes the same words (every path:
  fast, wedge, tail, tail retry);
- the tables' two closing conditions hold;
- the law: a chi-square over equiprobable bins and the count beyond the
  base strip's edge, on 40 million variates, with thresholds from the
  statistics' known spread; the chi-square rejects tables built from a v
  1% off, and the tail count's threshold (5 sd; at 40 million draws
  about 10,300 are expected beyond r, sd 102) rejects a tail that restarts
  the ziggurat instead of retrying (6.5% too few beyond r: 6.6 sd).
"""

import math
from decimal import Decimal, localcontext

import numpy as np
import pytest
from scipy import special, stats

from fastldp._kernels._normal import standard_normal_fill
from fastldp._random import (ZIGGURAT_R, ZIGGURAT_V, as_generator, standard_normal,
                             ziggurat_tables)


def _twin(words, tables):
    """The ziggurat in plain Python on a word sequence; (values, words used, path counts)."""
    k, w, f, r = tables
    k = [int(v) for v in k]
    pos = 0
    paths = {"fast": 0, "fast_after_reject": 0, "wedge": 0, "wedge_reject": 0, "tail": 0,
             "tail_retry": 0}

    def word():
        nonlocal pos
        pos += 1
        return int(words[pos - 1])

    def unit(x):
        return (x >> 11) * 2.0 ** -53

    def signed(x, wd):
        return -x if wd & 0x100 else x

    out = []
    while len(out) < n_wanted[0]:
        wd = word()
        first = True
        while True:
            layer = wd & 0xFF
            u = (wd >> 9) & ((1 << 52) - 1)
            x = u * float(w[layer])
            if u < k[layer]:
                paths["fast" if first else "fast_after_reject"] += 1
                out.append(signed(x, wd))
                break
            first = False
            if layer == 0:
                while True:
                    e1 = -math.log1p(-unit(word())) / r
                    e2 = -math.log1p(-unit(word()))
                    if e2 + e2 > e1 * e1:
                        break
                    paths["tail_retry"] += 1
                paths["tail"] += 1
                out.append(signed(r + e1, wd))
                break
            y = float(f[layer]) + unit(word()) * (float(f[layer - 1]) - float(f[layer]))
            if y < math.exp(-0.5 * x * x):
                paths["wedge"] += 1
                out.append(signed(x, wd))
                break
            paths["wedge_reject"] += 1
            wd = word()
    return np.array(out), pos, paths


n_wanted = [0]


def test_kernel_matches_naive_twin_bit_for_bit_on_every_path():
    n = 120_000
    n_wanted[0] = n
    seed = 20261202
    words = np.random.PCG64(seed).random_raw(n + n // 10)  # the slow paths use a few more
    expected, used, paths = _twin(words, ziggurat_tables())
    assert min(paths.values()) > 0, paths
    bg = np.random.PCG64(seed)
    got = np.empty(n)
    standard_normal_fill(bg, got, *ziggurat_tables())
    assert np.array_equal(got.view(np.uint64), expected.view(np.uint64))
    # the kernel took exactly the twin's words, in order
    ref = np.random.PCG64(seed)
    ref.random_raw(used)
    assert bg.state == ref.state


def test_prefix_and_generator_forms():
    a = standard_normal(np.random.default_rng(3), 10_000)
    b = standard_normal(np.random.default_rng(3), (20, 100))
    assert np.array_equal(a[:2000], b.ravel())
    # an int seeds the keyed stream of simulated data (issue 37), not default_rng(3)
    assert standard_normal(3) == standard_normal(as_generator(3, purpose="data"), 1)[0]
    assert isinstance(standard_normal(3), float) and standard_normal(3) != a[0]
    out = np.empty((50, 200))
    assert standard_normal(np.random.SeedSequence(3), out=out) is out
    assert np.array_equal(out.ravel(), a)
    # a Generator is advanced: two calls continue one stream
    g = np.random.default_rng(3)
    first, second = standard_normal(g, 4000), standard_normal(g, 6000)
    assert np.array_equal(np.concatenate([first, second]), a)
    assert standard_normal(3, 0).shape == (0,)


@pytest.mark.parametrize("out, what", [
    (np.empty(4, dtype=np.float32), "float32"),
    (np.empty((4, 4))[:, ::2], "C-contiguous"),
    ([0.0, 1.0], "list"),
])
def test_bad_out(out, what):
    with pytest.raises(TypeError, match="'out'.*standard_normal.*writeable C-contiguous float64"):
        standard_normal(0, out=out)


def test_bad_size_and_rng():
    with pytest.raises(TypeError, match="'size'"):
        standard_normal(0, "ten")
    with pytest.raises(ValueError, match="'size'.*-3"):
        standard_normal(0, -3)
    with pytest.raises(ValueError, match="'rng'"):
        standard_normal(-1, 3)


def test_tables_close_the_ziggurat():
    r, v = float(ZIGGURAT_R), float(ZIGGURAT_V)
    # the base strip and the tail have area v
    tail = math.sqrt(math.pi / 2) * special.erfc(r / math.sqrt(2))
    assert abs(r * math.exp(-r * r / 2) + tail - v) < 1e-16
    # the recursion from x_255 = r ends at x_0 = 0: f(x_1) + v / x_1 = 1
    with localcontext() as ctx:
        ctx.prec = 50
        R, V = Decimal(ZIGGURAT_R), Decimal(ZIGGURAT_V)
        x = R
        for _ in range(254):
            x = (-2 * (V / x + (-(x * x) / 2).exp()).ln()).sqrt()
        assert abs(V / x + (-(x * x) / 2).exp() - 1) < Decimal("1e-30")
    k, w, f, rr = ziggurat_tables()
    assert rr == r and k[1] == 0 and f[0] == 1.0
    assert k.shape == w.shape == f.shape == (256,)
    # layer widths increase to r; f decreases from 1
    assert np.all(np.diff(w[1:]) > 0) and math.isclose(w[255] * 2.0 ** 52, r, rel_tol=1e-15)
    assert np.all(np.diff(f) < 0)
    assert np.all(k[2:] < 2 ** 52) and k[0] < 2 ** 52


BINS = 512


def _law(tables, n_chunks=4, chunk=10_000_000, seed=5):
    """Chi-square over BINS equiprobable bins and the z of the count beyond r."""
    counts = np.zeros(BINS, dtype=np.int64)
    beyond = 0
    bg = np.random.PCG64(seed)
    buf = np.empty(chunk)
    r = tables[3]
    for _ in range(n_chunks):
        standard_normal_fill(bg, buf, *tables)
        cell = np.minimum((special.ndtr(buf) * BINS).astype(np.int64), BINS - 1)
        counts += np.bincount(cell, minlength=BINS)
        beyond += int(np.count_nonzero(np.abs(buf) > r))
    n = n_chunks * chunk
    chi2 = float(((counts - n / BINS) ** 2 / (n / BINS)).sum())
    p = special.erfc(r / math.sqrt(2))
    z_tail = (beyond - n * p) / math.sqrt(n * p * (1 - p))
    return chi2, z_tail


def _limit():
    # the chi-square statistic's 1 - 1e-6 quantile with BINS - 1 degrees of freedom
    return stats.chi2.isf(1e-6, BINS - 1)


def test_law_is_standard_normal():
    chi2, z_tail = _law(ziggurat_tables())
    assert chi2 < _limit(), chi2
    assert abs(z_tail) < 5, z_tail


def test_law_test_rejects_a_wrong_table():
    """Tables built from v 1% too large: the layers no longer match the curve."""
    k, w, f, r = ziggurat_tables()
    with localcontext() as ctx:
        ctx.prec = 50
        R, V = Decimal(ZIGGURAT_R), Decimal(ZIGGURAT_V) * Decimal("1.01")
        x = [Decimal(0)] * 256
        x[255] = R
        for i in range(254, 0, -1):
            arg = V / x[i + 1] + (-(x[i + 1] ** 2) / 2).exp()
            x[i] = (-2 * min(arg, Decimal(1)).ln()).sqrt() if arg < 1 else Decimal("1e-9")
        bad_w = w.copy()
        bad_w[1:] = [float(x[i]) / 2.0 ** 52 for i in range(1, 256)]
        bad_f = f.copy()
        bad_f[1:] = [float((-(x[i] ** 2) / 2).exp()) for i in range(1, 256)]
        bad_k = k.copy()
        bad_k[2:] = [int(x[i - 1] / x[i] * Decimal(2) ** 52) for i in range(2, 256)]
    chi2, _ = _law((bad_k, bad_w, bad_f, r), n_chunks=1)
    assert chi2 > _limit(), chi2
