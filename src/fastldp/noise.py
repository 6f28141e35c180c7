"""Exact integer noise: the discrete Laplace and discrete Gaussian, and Bernoulli(exp(-gamma)).

Every decision these samplers take is a comparison of integers: no floating
point is involved, so the output follows its stated law exactly, and no low
bit of a double can betray the input it is added to (Mironov, CCS 2012).
The algorithms are those of Canonne, Kamath and Steinke (NeurIPS 2020):

* ``Bernoulli(exp(-gamma))`` for a rational ``gamma >= 0`` (their
  Algorithm 1): for ``gamma in [0, 1]`` draw ``A_k ~ Bernoulli(gamma / k)``
  for ``k = 1, 2, ...`` until the first ``A_K = 0`` and return ``[K odd]``
  (``P[K > k] = gamma^k / k!``, so ``P[K odd] = sum_k (-gamma)^k / k! =
  exp(-gamma)``); for ``gamma > 1``, ``floor(gamma)`` draws of
  ``Bernoulli(exp(-1))`` and one of ``Bernoulli(exp(-(gamma - floor(gamma))))``
  must all be 1.
* The discrete Laplace with rational scale ``t / s`` (their Algorithm 2),
  ``P[X = x] = (1 - q) / (1 + q) * q^|x|`` with ``q = exp(-s / t)``.
* The discrete Gaussian with rational variance parameter ``sigma2``
  (their Algorithm 3), ``P[X = x] = exp(-x^2 / (2 sigma2)) / Z``, by
  rejection from a discrete Laplace of integer scale ``floor(sigma) + 1``.

Parameters are rationals: an ``int``, a :class:`fractions.Fraction`, a
``(numerator, denominator)`` tuple of ints, or a finite float, which is
taken *exactly* (``Fraction(0.1) = 3602879701896397 / 2**55``, not 1/10).

Two implementations follow the same law. The compiled one (``_kernels._noise``)
draws one 64-bit key from ``rng`` and reads counter-based Philox4x64-10 keyed
by ``(key, block index)``: the output is cut into fixed blocks of
:data:`BLOCK` samples, each block its own stream, so the samples are
bit-identical for any ``n_threads``. It works in 64-bit (and, on rare paths,
128-bit) integers and takes every rational whose numerator and denominator
are below ``2**63`` (the discrete Gaussian also needs
``2 * p * q * t^2 < 2**63`` for ``sigma2 = p / q`` and ``t = floor(sigma) + 1``);
``method="auto"`` falls back to the pure-Python reference (exact
:class:`~fractions.Fraction` arithmetic, slow) for larger ones.
The two implementations give different samples from one seed; both follow
the exact law, which ``tests/test_noise.py`` checks against
:func:`discrete_laplace_pmf` and :func:`discrete_gaussian_pmf`.

References
----------
.. [1] C. L. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
   Differential Privacy", NeurIPS 2020 (arXiv:2004.00010), Algorithms 1-3.
.. [2] I. Mironov, "On Significance of the Least Significant Bits for
   Differential Privacy", CCS 2012.
.. [3] J. K. Salmon et al., "Parallel random numbers: as easy as 1, 2, 3",
   SC 2011 (Philox).
"""

from __future__ import annotations

import math
import numbers
import operator
from fractions import Fraction
from typing import Optional, Tuple, Union

import numpy as np

from ._kernels import _noise
from ._random import RngLike, as_generator, resolve_n_threads
from ._validation import check_choice, param_error

__all__ = [
    "discrete_laplace",
    "discrete_gaussian",
    "bernoulli_exp",
    "discrete_laplace_pmf",
    "discrete_gaussian_pmf",
    "as_rational",
    "BLOCK",
    "KERNEL_LIMIT",
]

#: What a rational parameter accepts.
RationalLike = Union[int, Fraction, float, Tuple[int, int]]
SizeLike = Union[None, int, Tuple[int, ...]]

#: Samples per Philox stream in the compiled path (fixed: results never depend on threads).
BLOCK = _noise.BLOCK
#: The compiled path takes rationals whose numerator and denominator are below this.
KERNEL_LIMIT = 2**63

_METHODS = ("auto", "compiled", "python")


# --------------------------------------------------------------------------- parameters

def as_rational(value, name: str, owner: str, *, allow_zero: bool = False) -> Fraction:
    """Return ``value`` as an exact positive (or, with ``allow_zero``, non-negative) Fraction.

    Accepts an int, a :class:`~fractions.Fraction` (or any
    :class:`numbers.Rational`), a finite float (taken exactly), or a
    ``(numerator, denominator)`` tuple of ints with a non-zero denominator.
    NaN, infinities, bools and anything else are refused with fastldp's
    parameter message.
    """
    lo = "[0, inf)" if allow_zero else "(0, inf)"
    expected = (f"a rational in {lo} (an int, a Fraction, a finite float or a "
                f"(numerator, denominator) tuple of ints)")
    if isinstance(value, (bool, np.bool_)):
        raise param_error(name, owner, expected, value, TypeError)
    if isinstance(value, tuple):
        if (len(value) != 2 or any(isinstance(v, (bool, np.bool_)) for v in value)
                or not all(isinstance(v, numbers.Integral) for v in value)):
            raise param_error(name, owner, expected, value, TypeError)
        num, den = (operator.index(v) for v in value)
        if den == 0:
            raise param_error(name, owner, expected, value)
        frac = Fraction(num, den)
    elif isinstance(value, numbers.Rational):  # int, numpy ints, Fraction
        frac = Fraction(int(value.numerator), int(value.denominator))
    elif isinstance(value, numbers.Real):
        x = float(value)
        if not math.isfinite(x):
            raise param_error(name, owner, expected, value)
        frac = Fraction(x)
    else:
        raise param_error(name, owner, expected, value, TypeError)
    if frac < 0 or (frac == 0 and not allow_zero):
        raise param_error(name, owner, expected, value)
    return frac


def _shape(size, owner: str) -> Optional[Tuple[int, ...]]:
    if size is None:
        return None
    expected = "None, an int >= 0 or a tuple of ints >= 0"
    dims = (size,) if not isinstance(size, tuple) else size
    out = []
    for d in dims:
        if isinstance(d, (bool, np.bool_)) or not isinstance(d, numbers.Integral):
            raise param_error("size", owner, expected, size, TypeError)
        if d < 0:
            raise param_error("size", owner, expected, size)
        out.append(int(d))
    return tuple(out)


def _count(shape) -> int:
    return 1 if shape is None else math.prod(shape)


def _finish(flat: np.ndarray, shape):
    return flat[0] if shape is None else flat.reshape(shape)


# --------------------------------------------------------------------------- reference

def _uniform_below(gen: np.random.Generator, n: int) -> int:
    """A uniform integer in ``[0, n)`` (``n >= 1``, any size), by rejection: exact."""
    if n <= 2**62:
        return int(gen.integers(0, n))
    bits = (n - 1).bit_length()
    nbytes = (bits + 7) // 8
    mask = (1 << bits) - 1
    while True:
        u = int.from_bytes(gen.bytes(nbytes), "little") & mask
        if u < n:
            return u


def _bernoulli(gen: np.random.Generator, p: Fraction) -> bool:
    """Bernoulli(p) for a rational ``p`` in [0, 1]: ``U < num`` with ``U`` uniform in ``[0, den)``."""
    if p <= 0:
        return False
    if p >= 1:
        return True
    return _uniform_below(gen, p.denominator) < p.numerator


def _bernoulli_exp_small(gen: np.random.Generator, gamma: Fraction) -> bool:
    # CKS Algorithm 1 for gamma in [0, 1]: P[K > k] = gamma^k / k!, P[K odd] = exp(-gamma)
    k = 1
    while _bernoulli(gen, gamma / k):
        k += 1
    return k % 2 == 1


def _bernoulli_exp(gen: np.random.Generator, gamma: Fraction) -> bool:
    whole = gamma.numerator // gamma.denominator
    one = Fraction(1)
    for _ in range(whole):
        if not _bernoulli_exp_small(gen, one):
            return False
    return _bernoulli_exp_small(gen, gamma - whole)


def _discrete_laplace_one(gen: np.random.Generator, t: int, s: int) -> int:
    # CKS Algorithm 2, scale t / s: X = U + t V is geometric with ratio exp(-1/t)
    # (U uniform in [0, t) kept with probability exp(-U/t); V geometric with
    # ratio exp(-1)), so floor(X / s) is geometric with ratio exp(-s/t); a
    # fair sign, with -0 rejected, makes it two-sided.
    while True:
        u = _uniform_below(gen, t)
        if not _bernoulli_exp(gen, Fraction(u, t)):
            continue
        v = 0
        while _bernoulli_exp_small(gen, Fraction(1)):
            v += 1
        y = (u + t * v) // s
        negative = _uniform_below(gen, 2) == 1
        if negative and y == 0:
            continue
        return -y if negative else y


def _isqrt_floor(r: Fraction) -> int:
    """floor(sqrt(r)) for a rational r >= 0, exactly."""
    p, q = r.numerator, r.denominator
    return math.isqrt(p * q) // q


def _discrete_gaussian_one(gen: np.random.Generator, sigma2: Fraction) -> int:
    # CKS Algorithm 3: Y ~ Lap_Z(t), t = floor(sigma) + 1, kept with probability
    # exp(-(|Y| - sigma2 / t)^2 / (2 sigma2)).
    t = _isqrt_floor(sigma2) + 1
    while True:
        y = _discrete_laplace_one(gen, t, 1)
        gamma = (abs(y) - sigma2 / t) ** 2 / (2 * sigma2)
        if _bernoulli_exp(gen, gamma):
            return y


def _int64(values, owner: str) -> np.ndarray:
    if values and max(abs(v) for v in values) > 2**63 - 1:
        raise OverflowError(f"{owner} drew a sample outside int64 (the scale is too large)")
    return np.array(values, dtype=np.int64)


# --------------------------------------------------------------------------- kernel dispatch

def _kernel_fits(*ints: int) -> bool:
    return all(0 <= v < KERNEL_LIMIT for v in ints)


def _gaussian_kernel_fits(sigma2: Fraction) -> bool:
    p, q = sigma2.numerator, sigma2.denominator
    t = _isqrt_floor(sigma2) + 1
    return _kernel_fits(p, q) and 2 * p * q * t * t < KERNEL_LIMIT


def _use_kernel(method: str, fits: bool, name: str, owner: str, value) -> bool:
    if method == "python":
        return False
    if method == "compiled" and not fits:
        raise param_error(
            name, owner, "a rational within the compiled kernel's bounds with method='compiled' "
            "(see fastldp.noise.KERNEL_LIMIT)", value)
    return fits


def _key(gen: np.random.Generator) -> int:
    return int(gen.integers(0, 2**64, dtype=np.uint64))


# --------------------------------------------------------------------------- public

def bernoulli_exp(gamma: RationalLike, size: SizeLike = None, *, rng: RngLike = None,
                  n_threads: Optional[int] = None, method: str = "auto"):
    """Draw Bernoulli(exp(-gamma)) exactly, for a rational ``gamma >= 0``.

    Parameters
    ----------
    gamma : int, Fraction, float or (int, int)
        The rate, a rational in ``[0, inf)``; a float is taken exactly.
    size : int or tuple of ints, optional
        Output shape; ``None`` returns one ``numpy.bool_``.
    rng : None, int, SeedSequence or Generator, optional
        Randomness (see :func:`fastldp._random.as_generator`); ``None`` uses
        OS entropy.
    n_threads : int, optional
        Threads of the compiled path (``None``: OpenMP's default). The
        samples do not depend on it.
    method : {"auto", "compiled", "python"}
        ``"auto"`` uses the kernel when ``gamma``'s numerator and
        denominator are below :data:`KERNEL_LIMIT`, else the reference.

    Returns
    -------
    numpy.ndarray of bool, or one NumPy bool scalar
        True with probability exactly ``exp(-gamma)``.

    Notes
    -----
    For ``gamma = a / b`` in ``[0, 1]``: draw ``A_k ~ Bernoulli(a / (b k))``
    for ``k = 1, 2, ...`` until ``A_K = 0``; then ``P[K > k] = gamma^k / k!``
    and ``P[K odd] = exp(-gamma)``. For ``gamma > 1`` all of
    ``floor(gamma)`` draws of Bernoulli(exp(-1)) and one of
    Bernoulli(exp(-(gamma - floor(gamma)))) must succeed ([1]_, Algorithm 1).
    Each ``Bernoulli(a / b)`` is ``U < a`` for ``U`` uniform in ``[0, b)``.

    References
    ----------
    .. [1] C. L. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
       Differential Privacy", NeurIPS 2020.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from fastldp.noise import bernoulli_exp
    >>> draws = bernoulli_exp(Fraction(1, 2), 10_000, rng=0)
    >>> draws.dtype
    dtype('bool')
    >>> bool(abs(draws.mean() - 0.6065) < 0.02)
    True
    """
    owner = "bernoulli_exp"
    g = as_rational(gamma, "gamma", owner, allow_zero=True)
    shape = _shape(size, owner)
    check_choice(method, "method", owner, _METHODS)
    threads = resolve_n_threads(n_threads, owner)
    gen = as_generator(rng, owner)
    n = _count(shape)
    if _use_kernel(method, _kernel_fits(g.numerator, g.denominator), "gamma", owner, gamma):
        flat = _noise.bernoulli_exp(_key(gen), g.numerator, g.denominator, n, threads)
    else:
        flat = np.array([_bernoulli_exp(gen, g) for _ in range(n)], dtype=bool)
    return _finish(flat, shape)


def discrete_laplace(scale: RationalLike, size: SizeLike = None, *, rng: RngLike = None,
                     n_threads: Optional[int] = None, method: str = "auto"):
    """Draw from the discrete Laplace (two-sided geometric) law, exactly.

    ``P[X = x] = (1 - q) / (1 + q) * q^|x|`` for every integer ``x``, with
    ``q = exp(-1 / scale)``: the pmf is proportional to ``exp(-|x| / scale)``.
    Added to an integer query of sensitivity ``Delta`` it is exactly
    ``(Delta / scale)``-DP.

    Parameters
    ----------
    scale : int, Fraction, float or (int, int)
        A rational in ``(0, inf)``; a float is taken exactly.
    size : int or tuple of ints, optional
        Output shape; ``None`` returns one ``numpy.int64``.
    rng : None, int, SeedSequence or Generator, optional
        Randomness; ``None`` uses OS entropy.
    n_threads : int, optional
        Threads of the compiled path; the samples do not depend on it.
    method : {"auto", "compiled", "python"}
        ``"auto"`` uses the kernel when ``scale``'s numerator and
        denominator are below :data:`KERNEL_LIMIT`, else the reference.

    Returns
    -------
    numpy.ndarray of int64 or numpy.int64

    Raises
    ------
    OverflowError
        If a sample falls outside int64 (probability below
        ``exp(-2**62 / scale)``: only for absurd scales).

    Notes
    -----
    [1]_, Algorithm 2, for ``scale = t / s``: draw ``U`` uniform in
    ``[0, t)`` and keep it with probability ``exp(-U / t)``; draw ``V``
    geometric with ratio ``exp(-1)``; ``X = U + t V`` is then geometric with
    ratio ``exp(-1 / t)`` and ``Y = floor(X / s)`` geometric with ratio
    ``exp(-s / t)``; a fair sign, rejecting ``-0``, gives the two-sided law.

    References
    ----------
    .. [1] C. L. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
       Differential Privacy", NeurIPS 2020.

    Examples
    --------
    >>> from fractions import Fraction
    >>> from fastldp.noise import discrete_laplace
    >>> x = discrete_laplace(Fraction(10, 3), 20_000, rng=1)
    >>> x.dtype
    dtype('int64')
    >>> bool(abs(x.mean()) < 0.15)
    True
    """
    owner = "discrete_laplace"
    sc = as_rational(scale, "scale", owner)
    shape = _shape(size, owner)
    check_choice(method, "method", owner, _METHODS)
    threads = resolve_n_threads(n_threads, owner)
    gen = as_generator(rng, owner)
    n = _count(shape)
    t, s = sc.numerator, sc.denominator
    if _use_kernel(method, _kernel_fits(t, s), "scale", owner, scale):
        flat = _noise.discrete_laplace(_key(gen), t, s, n, threads)
    else:
        flat = _int64([_discrete_laplace_one(gen, t, s) for _ in range(n)], owner)
    return _finish(flat, shape)


def discrete_gaussian(sigma2: RationalLike, size: SizeLike = None, *, rng: RngLike = None,
                      n_threads: Optional[int] = None, method: str = "auto"):
    """Draw from the discrete Gaussian law, exactly.

    ``P[X = x] = exp(-x^2 / (2 sigma2)) / Z`` for every integer ``x``, with
    ``Z = sum_k exp(-k^2 / (2 sigma2))``. Added to an integer query of
    sensitivity ``Delta`` it is ``Delta^2 / (2 sigma2)``-zCDP ([1]_,
    Theorem 4); it is not pure DP.

    Parameters
    ----------
    sigma2 : int, Fraction, float or (int, int)
        The variance parameter (the law's variance is slightly below it), a
        rational in ``(0, inf)``; a float is taken exactly.
    size : int or tuple of ints, optional
        Output shape; ``None`` returns one ``numpy.int64``.
    rng : None, int, SeedSequence or Generator, optional
        Randomness; ``None`` uses OS entropy.
    n_threads : int, optional
        Threads of the compiled path; the samples do not depend on it.
    method : {"auto", "compiled", "python"}
        ``"auto"`` uses the kernel when ``sigma2 = p / q`` has
        ``p, q < 2**63`` and ``2 p q t^2 < 2**63`` (``t = floor(sigma) + 1``),
        else the reference. A float such as 0.1 is ``3602879701896397 / 2**55``
        and goes to the slow reference: pass ``Fraction(1, 10)`` instead.

    Returns
    -------
    numpy.ndarray of int64 or numpy.int64

    Notes
    -----
    [1]_, Algorithm 3: with ``t = floor(sigma) + 1``, draw ``Y`` from the
    discrete Laplace of scale ``t`` and keep it with probability
    ``exp(-(|Y| - sigma2 / t)^2 / (2 sigma2))``, a Bernoulli(exp(-gamma))
    with rational ``gamma``.

    References
    ----------
    .. [1] C. L. Canonne, G. Kamath, T. Steinke, "The Discrete Gaussian for
       Differential Privacy", NeurIPS 2020.

    Examples
    --------
    >>> from fastldp.noise import discrete_gaussian
    >>> x = discrete_gaussian(4, 20_000, rng=2)
    >>> bool(abs(x.var() - 4) < 0.2)
    True
    """
    owner = "discrete_gaussian"
    s2 = as_rational(sigma2, "sigma2", owner)
    shape = _shape(size, owner)
    check_choice(method, "method", owner, _METHODS)
    threads = resolve_n_threads(n_threads, owner)
    gen = as_generator(rng, owner)
    n = _count(shape)
    if _use_kernel(method, _gaussian_kernel_fits(s2), "sigma2", owner, sigma2):
        flat = _noise.discrete_gaussian(_key(gen), s2.numerator, s2.denominator, n, threads)
    else:
        flat = _int64([_discrete_gaussian_one(gen, s2) for _ in range(n)], owner)
    return _finish(flat, shape)


# --------------------------------------------------------------------------- exact laws

def discrete_laplace_pmf(x, scale: RationalLike) -> np.ndarray:
    """The discrete Laplace pmf ``tanh(1 / (2 scale)) * exp(-|x| / scale)`` at integers ``x``.

    ``(1 - q) / (1 + q) = tanh(1 / (2 scale))`` for ``q = exp(-1 / scale)``;
    evaluated in float64 (relative error a few ulps), for tests and audits.

    Examples
    --------
    >>> from fastldp.noise import discrete_laplace_pmf
    >>> p = discrete_laplace_pmf([0, 1], 1)
    >>> bool(abs(p[0] - (1 - 1 / 2.718281828459045) / (1 + 1 / 2.718281828459045)) < 1e-15)
    True
    """
    sc = float(as_rational(scale, "scale", "discrete_laplace_pmf"))
    k = np.abs(np.asarray(x, dtype=np.float64))
    return math.tanh(0.5 / sc) * np.exp(-k / sc)


def _gaussian_normalizer(sigma2: float) -> float:
    # Z = sum_k exp(-k^2 / (2 sigma2)). Truncated at |k| <= K with
    # (K + 1)^2 / (2 sigma2) >= 50: the tail 2 sum_{k > K} is at most
    # 2 exp(-50) (1 + sigma2 / (K + 1)) (the sum's first term plus the Mills
    # bound on the integral), below 1e-21 of Z. For sigma2 > 1e10 the sum is
    # long; Poisson summation gives Z = sqrt(2 pi sigma2) (1 + 2 sum_j
    # exp(-2 pi^2 sigma2 j^2)), whose correction is below exp(-1e11).
    if sigma2 > 1e10:
        return math.sqrt(2 * math.pi * sigma2)
    K = math.ceil(math.sqrt(100 * sigma2))
    k = np.arange(1, K + 1, dtype=np.float64)
    terms = np.exp(-(k * k) / (2 * sigma2))
    return 1.0 + 2.0 * float(np.sum(terms[::-1]))  # small terms first


def discrete_gaussian_pmf(x, sigma2: RationalLike) -> np.ndarray:
    """The discrete Gaussian pmf ``exp(-x^2 / (2 sigma2)) / Z`` at integers ``x`` (float64).

    ``Z`` is the sum over ``|k| <= K`` with ``(K + 1)^2 >= 100 sigma2``:
    the omitted tail is below ``1e-21 Z`` (see the source for the bound).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.noise import discrete_gaussian_pmf
    >>> p = discrete_gaussian_pmf(np.arange(-40, 41), 9)
    >>> bool(abs(p.sum() - 1) < 1e-12)
    True
    """
    s2 = float(as_rational(sigma2, "sigma2", "discrete_gaussian_pmf"))
    k = np.asarray(x, dtype=np.float64)
    return np.exp(-(k * k) / (2 * s2)) / _gaussian_normalizer(s2)
