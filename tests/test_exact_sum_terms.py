"""``_exact.sum_terms`` (exponent buckets, then digits) against the exact rational sum.

The kernel adds mantissas of equal exponents in int64 buckets and moves the
buckets into 32-bit digits; the reference is Python's ``Fraction`` sum of the
same doubles. Both are exact, so the digits must spell the same rational.
"""

from fractions import Fraction

import numpy as np
import pytest

from fastldp._kernels._exact import sum_terms


def _value(k_lo, digits) -> Fraction:
    return sum((Fraction(int(d)) * Fraction(2) ** (32 * (k_lo + r)) for r, d in enumerate(digits)),
               Fraction(0))


def _cases():
    rng = np.random.default_rng(21)
    yield "one exponent", rng.uniform(0.5, 1.0, 3000)
    yield "squares of tanh", np.tanh(rng.uniform(0.5, 1.0, 3000) * 0.5) ** 2
    yield "both signs, every scale", (rng.normal(size=3000)
                                      * 10.0 ** rng.integers(-307, 307, 3000))
    yield "subnormals and extremes", np.array([5e-324, -5e-324, 1e-310, 2.2250738585072014e-308,
                                              -1e-320, 1.7976931348623157e308,
                                              1.7976931348623157e308, -1e308, 3.0])
    yield "cancellation", np.array([1e300, 1.0, -1e300, 1e-300, -1.0, 2.0 ** -1074])
    yield "one value repeated", np.full(5000, 0.1)


@pytest.mark.parametrize("name,values", list(_cases()))
@pytest.mark.parametrize("threads", [1, 2])
def test_digits_are_the_exact_rational_sum(name, values, threads):
    k_lo, digits = sum_terms(np.ascontiguousarray(values, dtype=np.float64), threads)
    assert _value(k_lo, digits) == sum((Fraction(float(v)) for v in values), Fraction(0)), name
    # normalized: every digit but the top one in [0, 2**32)
    assert np.all((digits[:-1] >= 0) & (digits[:-1] < 2**32))
