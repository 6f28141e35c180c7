"""Seeds, generators and thread counts.

Client-side randomness flows from a :class:`numpy.random.Generator`; public
randomness (the codebook) from the counter-based hash keyed by
``(codebook_seed, identity, counter)``. Nothing here touches global state.

Integer seeds are domain-separated. :func:`as_generator` turns an int ``s``
into ``Generator(PCG64(SeedSequence([SEED_KEY, PURPOSES[purpose], s])))``:
the entropy starts with :data:`SEED_KEY`, a fixed 128-bit constant of
fastldp, and the code of what the stream is for (:data:`PURPOSES`). Without
it, ``privatize(x, rng=0)`` drew the same numbers as
``np.random.default_rng(0)``, so data drawn with ``default_rng(0)`` and
privatized with ``rng=0`` had noise correlated with the values (GRR, OLH,
SS, BLH and Hadamard response counts 24 to 45 standard deviations off:
``tests/test_seeds.py``). With it, one int gives independent streams to
numpy's own ``default_rng(s)``, to the privatization and to fastldp's
synthetic data, attacks and samplers. The key is a prefix of fixed length
(four 32-bit words, then one for the purpose), so two different
``(purpose, s)`` never share an entropy. A
:class:`~numpy.random.SeedSequence` or a Generator passed in is used as
given (see :func:`as_generator`).
"""

from __future__ import annotations

import functools
import numbers
import os
from decimal import ROUND_FLOOR, Decimal, localcontext
from typing import Optional, Union

import numpy as np

from ._kernels._normal import standard_normal_fill
from ._kernels._openmp import max_threads
from ._validation import param_error

__all__ = ["as_generator", "seed_sequence", "SEED_KEY", "PURPOSES", "resolve_codebook_seed",
           "resolve_n_threads", "resolve_identities", "standard_normal", "ziggurat_tables",
           "RngLike"]

UINT64_MAX = 2**64 - 1

#: fastldp's key in the entropy of an int seed's SeedSequence: 128 bits drawn once
#: (``secrets.randbits(128)``) and fixed, so that no stream of fastldp seeded by an int
#: is numpy's ``default_rng`` of that int. Changing it moves every seeded result.
SEED_KEY = 0xCACE43F04E47F9276C1262B1E239744A

#: What an int-seeded stream is for, and its code in the entropy after :data:`SEED_KEY`:
#: a mechanism's private coins (``privatize``, ``release``, ``fit``, the noise
#: samplers), fastldp's synthetic data (``example`` generators, :func:`standard_normal`),
#: a sampler run outside the mechanism (a shuffler's permutation, a padded
#: sampler's ``sample_items``), an attacker's and a corruption policy's choices,
#: the public example items drawn from a ``codebook_seed``, and a simulation
#: (population and clients from one seed: ``fastldp simulate``, ``simulate_clients``).
PURPOSES = {"privatize": 1, "data": 2, "sampling": 3, "attack": 4, "codebook": 5,
            "simulate": 6}

#: What every ``rng`` parameter accepts (see :func:`as_generator`).
RngLike = Union[None, int, np.random.SeedSequence, np.random.Generator]


def as_generator(rng, owner: str = "privatize", *,
                 purpose: str = "privatize") -> np.random.Generator:
    """Return a Generator for ``rng``.

    Parameters
    ----------
    rng : None, int, SeedSequence or Generator
        ``None`` draws fresh OS entropy. A non-negative int ``s`` seeds
        PCG64 from ``SeedSequence([SEED_KEY, PURPOSES[purpose], s])``, a
        stream independent of ``np.random.default_rng(s)`` and of the
        other purposes' streams of the same ``s`` (see the module
        docstring). A :class:`~numpy.random.SeedSequence` seeds PCG64 as
        given, with no key: the user built it (for instance spawned it
        from an experiment's root), so it already names its own stream,
        and the experiments' published tables, which spawn their streams
        this way, stay what they are. A Generator is used as is (and
        advanced).
    owner : str
        The function named in the error of a bad ``rng``.
    purpose : str
        A key of :data:`PURPOSES`: what the stream of an int seed is for.

    Returns
    -------
    numpy.random.Generator
    """
    if isinstance(rng, np.random.Generator):
        return rng
    if rng is None or isinstance(rng, np.random.SeedSequence):
        return np.random.default_rng(rng)
    if isinstance(rng, numbers.Integral) and not isinstance(rng, bool):
        if rng < 0:
            raise param_error("rng", owner, "None, a non-negative int, a SeedSequence or a Generator", rng)
        return np.random.Generator(np.random.PCG64(seed_sequence(int(rng), purpose)))
    raise param_error(
        "rng", owner, "None, a non-negative int, a SeedSequence or a Generator", rng, TypeError
    )


def seed_sequence(seed: int, purpose: str = "privatize") -> np.random.SeedSequence:
    """The :class:`~numpy.random.SeedSequence` of an int ``seed`` for ``purpose``.

    ``SeedSequence([SEED_KEY, PURPOSES[purpose], seed])``: what
    :func:`as_generator` seeds PCG64 with (a non-negative ``seed``).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp._random import as_generator, seed_sequence
    >>> a = as_generator(3).integers(2**32, size=2)
    >>> b = np.random.Generator(np.random.PCG64(seed_sequence(3))).integers(2**32, size=2)
    >>> bool((a == b).all())
    True
    """
    return np.random.SeedSequence([SEED_KEY, PURPOSES[purpose], seed])


def resolve_codebook_seed(seed, owner: str) -> int:
    """Return the 64-bit public codebook seed; ``None`` draws one from OS entropy."""
    if seed is None:
        return int(np.random.SeedSequence().generate_state(1, dtype=np.uint64)[0])
    expected = f"None or an int in [0, {UINT64_MAX}]"
    if isinstance(seed, (bool, np.bool_)) or not isinstance(seed, numbers.Integral):
        raise param_error("codebook_seed", owner, expected, seed, TypeError)
    if not 0 <= int(seed) <= UINT64_MAX:
        raise param_error("codebook_seed", owner, expected, seed)
    return int(seed)


def resolve_n_threads(n_threads, owner: str) -> int:
    """Return a thread count in ``[1, cores]``.

    ``None`` uses OpenMP's default (``OMP_NUM_THREADS`` or all cores), ``-1``
    all cores, a positive int that many, clamped to the number of cores:
    more threads than cores only adds contention, and asking libgomp for
    thousands of threads under a memory limit ends the process without a
    Python exception. Results never depend on it.
    """
    if n_threads is None:
        return max(1, max_threads())
    expected = "None, -1 or an int >= 1"
    if isinstance(n_threads, (bool, np.bool_)) or not isinstance(n_threads, numbers.Integral):
        raise param_error("n_threads", owner, expected, n_threads, TypeError)
    if n_threads == -1:
        return max(1, os.cpu_count() or 1)
    if n_threads < 1:
        raise param_error("n_threads", owner, expected, n_threads)
    return min(int(n_threads), max(1, os.cpu_count() or 1))


def resolve_identities(identities, n: int, owner: str) -> np.ndarray:
    """Return the uint64 identities of ``n`` reports (default ``0 .. n-1``).

    Identities key each holder's public signs, so they must be distinct
    non-negative integers below 2**64.
    """
    if identities is None:
        return np.arange(n, dtype=np.uint64)
    arr = np.asarray(identities)
    expected = f"a 1-d array of {n} distinct integers in [0, 2**64)"
    if arr.dtype.kind not in "iu" or arr.ndim != 1:
        raise param_error("identities", owner, expected, identities, TypeError)
    if arr.shape[0] != n:
        raise param_error("identities", owner, expected, f"an array of length {arr.shape[0]}")
    if arr.dtype.kind == "i" and arr.size and arr.min() < 0:
        raise param_error("identities", owner, expected, f"negative identity {int(arr.min())}")
    arr = arr.astype(np.uint64)
    # increasing identities (report files, ranges) are distinct without a sort
    if n > 1 and not bool(np.all(arr[1:] > arr[:-1])):
        ordered = np.sort(arr)
        if bool(np.any(ordered[1:] == ordered[:-1])):
            raise param_error("identities", owner, expected, "repeated identities")
    return np.ascontiguousarray(arr)


# ---------------------------------------------------------------- standard normals
#: The 256-layer ziggurat's base-strip edge ``r`` and common layer area ``v``, to 40
#: digits. They solve the two closing conditions of Marsaglia and Tsang's construction
#: (f(x) = exp(-x**2 / 2)): the base strip plus the tail has area v,
#: ``v = r f(r) + int_r^inf f``, and the recursion ``f(x_{i-1}) = f(x_i) + v / x_i``
#: from ``x_255 = r`` ends at ``x_0 = 0``, ``f(x_1) + v / x_1 = 1`` (solved with mpmath at
#: 60 digits; tests/test_normal_kernel.py checks both conditions).
ZIGGURAT_R = "3.654152885361008771645429720399515762975"
ZIGGURAT_V = "0.004928673233974655347361775402336028069135"


@functools.lru_cache(maxsize=None)
def ziggurat_tables() -> tuple[np.ndarray, np.ndarray, np.ndarray, float]:
    """The tables ``(k, w, f, r)`` of :func:`standard_normal`'s ziggurat.

    Computed in 50-digit decimal arithmetic (the same values on every
    platform), then rounded once: layer ``i`` spans ``[0, x_i)``
    (``x_255 = r``), ``w[i] = x_i / 2**52``, ``f[i] = exp(-x_i**2 / 2)``,
    ``k[i] = floor(2**52 x_{i-1} / x_i)`` (``k[1] = 0``); layer 0 is the
    base strip of virtual width ``q = v / f(r)``: ``w[0] = q / 2**52``,
    ``k[0] = floor(2**52 r / q)``, ``f[0] = 1``.
    """
    with localcontext() as ctx:
        ctx.prec = 50
        r, v = Decimal(ZIGGURAT_R), Decimal(ZIGGURAT_V)
        two52 = Decimal(2) ** 52

        def density(x):
            return (-(x * x) / 2).exp()

        x = [Decimal(0)] * 256
        x[255] = r
        for i in range(254, 0, -1):
            x[i] = (-2 * (v / x[i + 1] + density(x[i + 1])).ln()).sqrt()
        q = v / density(r)
        k = [int((r / q * two52).to_integral_value(rounding=ROUND_FLOOR)), 0]
        k += [int((x[i - 1] / x[i] * two52).to_integral_value(rounding=ROUND_FLOOR))
              for i in range(2, 256)]
        w = [float(q / two52)] + [float(x[i] / two52) for i in range(1, 256)]
        f = [1.0] + [float(density(x[i])) for i in range(1, 256)]
    tables = (np.array(k, dtype=np.uint64), np.array(w), np.array(f))
    for t in tables:
        t.flags.writeable = False
    return (*tables, float(r))


def standard_normal(rng: RngLike = None, size=None, *,
                    out: Optional[np.ndarray] = None) -> Union[float, np.ndarray]:
    """Standard normal variates, about 2.5 times as fast as NumPy's on some machines.

    A 256-layer ziggurat (Marsaglia and Tsang 2000) reading the 64-bit
    words of ``rng``'s own bit generator, so all randomness still flows from
    the :class:`numpy.random.Generator`. One word makes a variate about 99%
    of the time; its sign is set without a branch, which is where NumPy's
    ``Generator.standard_normal`` loses most of its time on some machines
    (on the 2-core Intel Xeon VM of the project: 1.5 s against 3.7 s for
    192 million values; ``python bench/normal_sampler.py`` prints both).

    The law is N(0, 1) (to the resolution of a 52-bit uniform on each
    layer); the values are not NumPy's. Words are consumed in order, so the
    first ``n`` values of a draw are those of a draw of ``n`` values from
    the same generator state. The sampler is for simulated data: it is not
    a privacy mechanism (floating-point Gaussian noise is not; see
    :mod:`fastldp.noise` for exact discrete noise).

    Parameters
    ----------
    rng : None, int, SeedSequence or Generator
        The generator (advanced in place) or a seed for a new one.
    size : int or tuple of int, optional
        Output shape; ``None`` returns one float. Ignored with ``out``.
    out : ndarray, optional
        A writeable C-contiguous float64 array to fill (and return).

    Returns
    -------
    float or ndarray

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp._random import standard_normal
    >>> a = standard_normal(np.random.default_rng(7), 5)
    >>> b = standard_normal(np.random.default_rng(7), 3)
    >>> bool((a[:3] == b).all())
    True
    """
    owner = "standard_normal"
    gen = as_generator(rng, owner, purpose="data")
    if out is None:
        if size is None:
            one = np.empty(1)
            standard_normal_fill(gen.bit_generator, one, *ziggurat_tables())
            return float(one[0])
        expected = "None, a non-negative int or a tuple of them"
        try:
            out = np.empty(size)
        except TypeError as exc:
            raise param_error("size", owner, expected, size, TypeError) from exc
        except ValueError as exc:  # a negative dimension
            raise param_error("size", owner, expected, size) from exc
    elif not (isinstance(out, np.ndarray) and out.dtype == np.float64
              and out.flags.c_contiguous and out.flags.writeable):
        shown = (f"array of dtype {out.dtype}" if isinstance(out, np.ndarray)
                 else type(out).__name__)
        raise param_error("out", owner, "a writeable C-contiguous float64 array", shown,
                          TypeError)
    standard_normal_fill(gen.bit_generator, out.reshape(-1), *ziggurat_tables())
    return out
