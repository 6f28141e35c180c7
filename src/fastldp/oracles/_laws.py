"""Exact output laws of the frequency oracles and scalar randomizers on tiny domains.

Each function reads only a mechanism's public parameters (its budget, domain,
codebook seed, and the public methods it already exposes, such as
:meth:`fastldp.oracles.Duchi.prob_plus` or :meth:`fastldp.oracles.CMS.hash_table`)
and returns an :class:`~fastldp.channels.ExactLaw`: ``P[i, x, y]`` for every
listed identity ``i``, input ``x`` and output ``y``. The laws are written
here from the papers' formulas, apart from the samplers, so that the audit
(:mod:`fastldp.audit`, through :mod:`._channels`) checks the two against
each other. The other families' laws build on these (P-RS mixes an oracle's
law over slots).

The formulas (``e = e^eps``):

* GRR over ``D`` symbols: ``P(y = x) = e / (e + D - 1)``, else ``1 / (e + D - 1)``.
* OLH with ``g = round(e) + 1`` buckets and the public hash ``H_i``:
  ``P(y = H_i(x)) = e / (e + g - 1)``, every other bucket ``1 / (e + g - 1)``.
* HR with ``K`` the next power of two above ``D``: ``P(y) = 2e / (K (e + 1))``
  when ``H_K[x + 1, y] = +1``, else ``2 / (K (e + 1))``.
* OUE / SUE over all ``2^D`` bit vectors: bit ``x`` is 1 with probability
  ``p``, every other bit with ``q``, independently (OUE: ``p = 1/2``,
  ``q = 1 / (e + 1)``; SUE: ``p = e^{eps/2} / (e^{eps/2} + 1) = 1 - q``).
* FLH with the public pool ``H_j`` (``j < h``, :meth:`FLH.pool`): the report
  ``(j, y)`` has ``P = p / h`` when ``y = H_j(x)`` and ``(1 - p) / ((g - 1) h)``
  otherwise, ``p = e / (e + g - 1)``.
* CMS with ``k`` public hashes ``h_j`` onto ``m`` columns (:meth:`CMS.hash_table`):
  the report ``(j, s)``, ``s`` the signs, has ``P = (1/k) prod_l P_l`` with
  ``P_l = e^{eps/2} / (e^{eps/2} + 1)`` where ``s_l`` agrees with the one-hot
  vector (``+1`` at ``h_j(x)``, ``-1`` elsewhere) and ``1 / (e^{eps/2} + 1)``
  where it does not.
* HCMS: the report ``(j, l, omega)`` has ``P = e / ((e + 1) k m)`` when
  ``omega = H_m[l, h_j(x)]`` and ``1 / ((e + 1) k m)`` otherwise.
* Duchi: ``P(+C | u) = (1 + u / C) / 2`` on a grid of inputs including ``+-1``.
* Stochastic rounding: the sign ``+1`` with probability ``(1 + u) / 2``, kept with
  ``p = e / (e + 1)``: ``P(+C | u) = p (1 + u) / 2 + (1 - p) (1 - u) / 2``,
  ``C = (e + 1) / (e - 1)``.
* Hybrid's atoms: Duchi's two points with mass ``1 - alpha`` (``alpha = 1 - e^{-eps/2}``
  above the class's threshold, else 0); the Piecewise part lumped into one
  output (``inf``), mass ``alpha`` under every input (absent when ``alpha = 0``).
* DiscretePiecewise on its grid inputs ``u_i = -1 + 2 i / m``: cell ``j`` (the
  output ``y_j``) has ``P = A / T`` for ``i <= j < i + W`` and ``B / T``
  otherwise, ``T = W A + m B`` (the public integers of the mechanism).
* Subset selection, sets of ``k`` symbols (outputs: the ``C(D, k)`` sets as bit
  tuples): ``P(Z | x) = e / Omega`` when ``x`` is in ``Z``, ``1 / Omega`` otherwise,
  ``Omega = C(D - 1, k - 1) e + C(D - 1, k)``.
* BLH (OLH with ``g = 2``): ``P(y = H_i(x)) = e / (e + 1)``, the other bit
  ``1 / (e + 1)``.
* THE with threshold ``theta``: OUE's law over all ``2^D`` bit vectors with
  ``p = 1 - exp(-(1 - theta) eps / 2) / 2`` and ``q = exp(-theta eps / 2) / 2``
  (the Laplace tails of ``Lap(2 / eps)`` beyond ``theta - 1`` and ``theta``).
* DiscreteSHE over all ``(M + 2L + 1)^D`` integer reports: coordinates
  independent, ``y_v = clamp(M [v = x] + Z, -L, M + L)`` with ``Z`` discrete
  Laplace of scale ``t`` (``q = e^(-1/t)``, ``c = (1 - q) / (1 + q)``):
  ``P = c q^|y - b M|`` inside, ``c q^(L + b M) / (1 - q)`` at ``-L`` and
  ``c q^(M + L - b M) / (1 - q)`` at ``M + L`` (``b = [v = x]``).
* One-time RAPPOR over all ``2^k`` reports: identity ``i`` is in cohort
  ``c = i mod C``, the Bloom filter ``B`` of ``x`` sets bit ``H_{c,t}(x)`` (the
  OLH hash of identity ``c h + t`` onto ``k`` buckets) for ``t < h``, and each
  bit ``y_j`` equals ``B_j`` with probability ``p = 1 - q``,
  ``q = 1 / (1 + e^{eps / (2h)})``, independently.
"""

from __future__ import annotations

import itertools
import math

import numpy as np

from .._kernels._hadamard import hadamard_entries
from .._kernels._olh import olh_buckets
from ..channels import ExactLaw

__all__ = [
    "grr_law", "olh_law", "hr_law", "unary_law", "flh_law", "cms_law", "hcms_law", "oracle_law",
    "duchi_law", "stochastic_rounding_law", "hybrid_atoms_law", "discrete_piecewise_law",
    "discrete_she_law", "subset_law", "blh_law",
    "the_law", "rappor_law", "olh_buckets_of", "hr_size",
]


def _ids(identities) -> np.ndarray:
    return np.ascontiguousarray(np.atleast_1d(np.asarray(identities)).astype(np.uint64))


def grr_law(domain_size: int, eps: float, identities=(0,)) -> ExactLaw:
    ids = _ids(identities)
    e = np.exp(eps)
    denom = e + domain_size - 1
    law = np.full((domain_size, domain_size), 1.0 / denom)
    np.fill_diagonal(law, e / denom)
    probs = np.broadcast_to(law, (ids.shape[0],) + law.shape).copy()
    return ExactLaw(list(range(domain_size)), list(range(domain_size)), ids, probs)


def olh_buckets_of(domain_size: int, eps: float) -> int:
    return int(np.rint(np.exp(eps))) + 1


def olh_law(domain_size: int, eps: float, codebook_seed: int, identities) -> ExactLaw:
    ids = _ids(identities)
    g = olh_buckets_of(domain_size, eps)
    e = np.exp(eps)
    p, q = e / (e + g - 1), 1.0 / (e + g - 1)
    items = np.tile(np.arange(domain_size, dtype=np.int64), ids.shape[0])
    hashed = olh_buckets(codebook_seed, np.repeat(ids, domain_size), items,
                         np.full(items.shape[0], g, dtype=np.int64)).reshape(ids.shape[0], domain_size)
    probs = np.full((ids.shape[0], domain_size, g), q)
    ii, xx = np.meshgrid(np.arange(ids.shape[0]), np.arange(domain_size), indexing="ij")
    probs[ii, xx, hashed] = p
    return ExactLaw(list(range(domain_size)), list(range(g)), ids, probs)


def hr_size(domain_size: int) -> int:
    k = 1
    while k <= domain_size:
        k *= 2
    return k


def hr_law(domain_size: int, eps: float, identities=(0,)) -> ExactLaw:
    ids = _ids(identities)
    K = hr_size(domain_size)
    rows = np.repeat(np.arange(1, domain_size + 1, dtype=np.int64), K)
    cols = np.tile(np.arange(K, dtype=np.int64), domain_size)
    signs = hadamard_entries(rows, cols).reshape(domain_size, K)
    e = np.exp(eps)
    law = np.where(signs > 0, 2 * e / (K * (e + 1)), 2 / (K * (e + 1)))
    probs = np.broadcast_to(law, (ids.shape[0],) + law.shape).copy()
    return ExactLaw(list(range(domain_size)), list(range(K)), ids, probs)


def unary_law(domain_size: int, p: float, q: float, identities=(0,)) -> ExactLaw:
    """OUE/SUE: all ``2^D`` bit vectors (as tuples), bit ``x`` on w.p. ``p``, others ``q``."""
    ids = _ids(identities)
    vectors = list(itertools.product((0, 1), repeat=domain_size))
    bits = np.array(vectors, dtype=bool)                  # (2^D, D)
    law = np.empty((domain_size, len(vectors)))
    for x in range(domain_size):
        on = np.where(np.arange(domain_size) == x, p, q)  # P(bit j = 1 | x)
        law[x] = np.prod(np.where(bits, on, 1.0 - on), axis=1)
    probs = np.broadcast_to(law, (ids.shape[0],) + law.shape).copy()
    return ExactLaw(list(range(domain_size)), vectors, ids, probs)


def flh_law(domain_size: int, eps: float, g: int, pool: np.ndarray, identities=(0,)) -> ExactLaw:
    """FLH given its public pool ``pool[j, x] = H_j(x)``; outputs ``(j, y)``."""
    ids = _ids(identities)
    h = pool.shape[0]
    e = np.exp(eps)
    p = e / (e + g - 1)
    law = np.full((domain_size, h, g), (1 - p) / (g - 1) / h)
    law[np.arange(domain_size)[:, None], np.arange(h)[None, :], pool.T] = p / h
    probs = np.broadcast_to(law.reshape(domain_size, h * g), (ids.shape[0], domain_size, h * g))
    outputs = [(j, y) for j in range(h) for y in range(g)]
    return ExactLaw(list(range(domain_size)), outputs, ids, probs.copy())


def cms_law(eps: float, m: int, table: np.ndarray, identities=(0,)) -> ExactLaw:
    """Apple's CMS given its public hashes ``table[j, x] = h_j(x)``; outputs ``(j, word)``.

    ``word`` has bit ``l`` set when coordinate ``l`` is ``+1`` (the report's
    first sign word). Every coordinate is kept with probability
    ``e^{eps/2} / (e^{eps/2} + 1)``, the one-hot vector being ``+1`` at
    ``h_j(x)`` and ``-1`` elsewhere; ``j`` is uniform over the ``k`` rows.
    """
    ids = _ids(identities)
    k, domain_size = table.shape
    h = np.exp(eps / 2.0)
    keep, flip = h / (h + 1.0), 1.0 / (h + 1.0)
    words = np.arange(2**m)
    law = np.empty((domain_size, k, 2**m))
    for x in range(domain_size):
        for j in range(k):
            prob = np.ones(2**m) / k
            for col in range(m):
                plus = ((words >> col) & 1) == 1
                truth = col == table[j, x]          # the one-hot vector is +1 here
                prob *= np.where(plus == truth, keep, flip)
            law[x, j] = prob
    outputs = [(j, w) for j in range(k) for w in range(2**m)]
    probs = np.broadcast_to(law.reshape(domain_size, k * 2**m),
                            (ids.shape[0], domain_size, k * 2**m))
    return ExactLaw(list(range(domain_size)), outputs, ids, probs.copy())


def hcms_law(eps: float, m: int, table: np.ndarray, identities=(0,)) -> ExactLaw:
    """Apple's HCMS given its public hashes; outputs ``(j, l, omega)``, ``omega = +-1``.

    ``(j, l)`` uniform over ``k m``; ``omega = H_m[l, h_j(x)]`` (Sylvester
    order) with probability ``e^eps / (e^eps + 1)``, its negation otherwise.
    """
    ids = _ids(identities)
    k, domain_size = table.shape
    e = np.exp(eps)
    outputs = [(j, col, w) for j in range(k) for col in range(m) for w in (-1, 1)]
    law = np.empty((domain_size, len(outputs)))
    for x in range(domain_size):
        for t, (j, col, w) in enumerate(outputs):
            sign = (-1) ** bin(col & int(table[j, x])).count("1")
            law[x, t] = (e if w == sign else 1.0) / ((e + 1.0) * k * m)
    probs = np.broadcast_to(law, (ids.shape[0],) + law.shape)
    return ExactLaw(list(range(domain_size)), outputs, ids, probs.copy())


def oracle_law(name: str, domain_size: int, eps: float, codebook_seed: int, identities) -> ExactLaw:
    """The law of frequency oracle ``name`` ('grr', 'olh', 'hr', 'oue', 'sue')."""
    if name == "grr":
        return grr_law(domain_size, eps, identities)
    if name == "olh":
        return olh_law(domain_size, eps, codebook_seed, identities)
    if name == "hr":
        return hr_law(domain_size, eps, identities)
    if name == "oue":
        return unary_law(domain_size, 0.5, 1.0 / (np.exp(eps) + 1.0), identities)
    if name == "sue":
        h = np.exp(eps / 2.0)
        return unary_law(domain_size, h / (h + 1.0), 1.0 / (h + 1.0), identities)
    raise ValueError(f"no exact law for oracle {name!r}")


def duchi_law(randomizer, inputs=(-1.0, -0.5, 0.0, 0.5, 1.0)) -> ExactLaw:
    """Duchi's two-point law from :meth:`Duchi.prob_plus` (outputs ``-C, +C``)."""
    u = np.asarray(inputs, dtype=np.float64)
    plus = randomizer.prob_plus(u)
    probs = np.stack([1.0 - plus, plus], axis=1)[None]
    C = randomizer.C
    return ExactLaw(list(u), [-C, C], np.zeros(1, dtype=np.uint64), probs)


def stochastic_rounding_law(eps: float, inputs=(-1.0, -0.5, 0.0, 0.5, 1.0)) -> ExactLaw:
    """Rounding to ``+-1`` then binary randomized response, from ``eps`` (outputs ``-C, +C``)."""
    u = np.asarray(inputs, dtype=np.float64)
    e = math.exp(eps)
    keep = e / (e + 1.0)
    up = (1.0 + u) / 2.0
    plus = up * keep + (1.0 - up) * (1.0 - keep)
    C = (e + 1.0) / math.expm1(eps)  # the sampler's expression: the same double
    probs = np.stack([1.0 - plus, plus], axis=1)[None]
    return ExactLaw(list(u), [-C, C], np.zeros(1, dtype=np.uint64), probs)


def hybrid_atoms_law(eps: float, threshold: float,
                     inputs=(-1.0, -0.5, 0.0, 0.5, 1.0)) -> ExactLaw:
    """Hybrid with its Piecewise part lumped into the output ``inf`` (outputs ``-C, +C, inf``).

    ``alpha = 1 - e^{-eps/2}`` for ``eps > threshold``, else 0; Duchi's part:
    ``P(+C | u) = (1 - alpha) (1 + u / C) / 2``.
    """
    u = np.asarray(inputs, dtype=np.float64)
    alpha = -math.expm1(-eps / 2.0) if eps > threshold else 0.0
    C = (math.exp(eps) + 1.0) / math.expm1(eps)
    plus = (1.0 - alpha) * 0.5 * (1.0 + u / C)
    minus = (1.0 - alpha) * 0.5 * (1.0 - u / C)
    if alpha == 0.0:  # Duchi alone: no Piecewise output (a zero column has no ratio)
        probs = np.stack([minus, plus], axis=1)[None]
        return ExactLaw(list(u), [-C, C], np.zeros(1, dtype=np.uint64), probs)
    probs = np.stack([minus, plus, np.full(u.shape, alpha)], axis=1)[None]
    return ExactLaw(list(u), [-C, C, math.inf], np.zeros(1, dtype=np.uint64), probs,
                    note="Piecewise's continuous part lumped into one output")


def discrete_piecewise_law(randomizer) -> ExactLaw:
    """DiscretePiecewise's law from its public integers ``A, B, W, m`` (every grid input)."""
    m, W = randomizer.m, randomizer.band
    cells = np.arange(m + W)
    grid = np.arange(m + 1)
    band = (cells[None, :] >= grid[:, None]) & (cells[None, :] < grid[:, None] + W)
    T = W * randomizer.A + m * randomizer.B
    probs = np.where(band, randomizer.A / T, randomizer.B / T)[None]
    inputs = [-1.0 + 2.0 * i / m for i in range(m + 1)]
    return ExactLaw(inputs, [float(y) for y in randomizer.outputs],
                    np.zeros(1, dtype=np.uint64), probs)


def discrete_she_law(mech, eps: float) -> ExactLaw:
    """DiscreteSHE's law from its public ``M``, scale ``t`` and clamp ``L`` (every report)."""
    D, M = mech.domain_size, mech.M
    L = int(mech.bounds(eps)[0])
    t = float(mech.units(eps))
    q = math.exp(-1.0 / t)
    c = (1.0 - q) / (1.0 + q)
    values = np.arange(-L, M + L + 1)

    def coordinate(b):
        z = np.abs(values - b * M).astype(np.float64)
        p = c * q**z
        p[0] = c * q ** (L + b * M) / (1.0 - q)
        p[-1] = c * q ** (M + L - b * M) / (1.0 - q)
        return p

    per = (coordinate(0), coordinate(1))
    outputs = list(itertools.product(range(values.shape[0]), repeat=D))
    idx = np.array(outputs, dtype=np.int64).reshape(len(outputs), D)
    probs = np.empty((1, D, len(outputs)))
    for x in range(D):
        p = np.ones(len(outputs))
        for v in range(D):
            p *= per[int(v == x)][idx[:, v]]
        probs[0, x] = p
    keys = [tuple(int(values[j]) for j in row) for row in outputs]
    return ExactLaw(list(range(D)), keys, np.zeros(1, dtype=np.uint64), probs,
                    note="binary64 probabilities (q^k by pow), converted exactly to rationals")


def subset_law(domain_size: int, eps: float, subset_size: int, identities=(0,)) -> ExactLaw:
    """Subset selection with sets of ``k = subset_size`` symbols, from the formula.

    Outputs are the ``C(D, k)`` sets as tuples of ``D`` bits (bit ``v`` for
    symbol ``v``, as OUE's outputs), in the order of
    :func:`itertools.combinations`; ``P(Z | x) = e / Omega`` when ``x`` is in
    ``Z`` and ``1 / Omega`` otherwise, ``Omega = C(D - 1, k - 1) e + C(D - 1, k)``.
    """
    ids = _ids(identities)
    k = int(subset_size)
    e = float(np.exp(eps))
    omega = math.comb(domain_size - 1, k - 1) * e + math.comb(domain_size - 1, k)
    sets = list(itertools.combinations(range(domain_size), k))
    outputs = [tuple(int(v in s) for v in range(domain_size)) for s in sets]
    law = np.array([[e / omega if x in s else 1.0 / omega for s in sets]
                    for x in range(domain_size)])
    probs = np.broadcast_to(law, (ids.shape[0],) + law.shape).copy()
    return ExactLaw(list(range(domain_size)), outputs, ids, probs,
                    note="the formula of subset selection, binary64 probabilities converted "
                         "exactly to rationals")


def blh_law(domain_size: int, eps: float, codebook_seed: int, identities) -> ExactLaw:
    """Binary local hashing: ``H_i(x)`` in ``{0, 1}`` kept with probability ``e / (e + 1)``."""
    ids = _ids(identities)
    e = float(np.exp(eps))
    items = np.tile(np.arange(domain_size, dtype=np.int64), ids.shape[0])
    hashed = olh_buckets(codebook_seed, np.repeat(ids, domain_size), items,
                         np.full(items.shape[0], 2, dtype=np.int64)).reshape(ids.shape[0],
                                                                             domain_size)
    probs = np.where(hashed[:, :, None] == np.arange(2)[None, None, :], e / (e + 1.0),
                     1.0 / (e + 1.0))
    return ExactLaw(list(range(domain_size)), [0, 1], ids, probs)


def the_law(domain_size: int, eps: float, threshold: float, identities=(0,)) -> ExactLaw:
    """THE: OUE's law with the Laplace tails ``p = 1 - F(theta - 1)``, ``q = 1 - F(theta)``.

    ``F`` is the CDF of ``Lap(2 / eps)``; for ``theta`` in ``[0, 1]``,
    ``p = 1 - exp(-(1 - theta) eps / 2) / 2`` and ``q = exp(-theta eps / 2) / 2``.
    """
    theta = float(threshold)
    p = 1.0 - 0.5 * math.exp(-(1.0 - theta) * eps / 2.0)
    q = 0.5 * math.exp(-theta * eps / 2.0)
    return unary_law(domain_size, p, q, identities)


def rappor_law(mech, eps: float, identities) -> ExactLaw:
    """One-time RAPPOR over all ``2^k`` reports (outputs: tuples of ``k`` bits, bit ``j`` first).

    Reads the public parameters ``n_bits``, ``n_hashes``, ``n_cohorts``,
    ``domain_size`` and ``codebook_seed``: identity ``i`` is in cohort
    ``i mod C``, whose hash ``t`` of ``x`` is the OLH hash of identity
    ``c h + t`` onto ``k`` buckets; each bit of the filter is reported as is
    with probability ``1 - q``, ``q = 1 / (1 + e^{eps / (2h)})``.
    """
    ids = _ids(identities)
    k, h, C, D = mech.n_bits, mech.n_hashes, mech.n_cohorts, mech.domain_size
    q = 1.0 / (1.0 + math.exp(eps / (2.0 * h)))
    p = 1.0 - q
    vectors = [tuple(reversed(v)) for v in itertools.product((0, 1), repeat=k)]
    bits = np.array(vectors, dtype=bool)                      # (2^k, k): bit j of each output
    cohorts = (ids % np.uint64(C)).astype(np.int64)
    laws_by_cohort = {}
    for c in np.unique(cohorts):
        fn = np.repeat(int(c) * h + np.arange(h, dtype=np.int64), D).astype(np.uint64)
        items = np.tile(np.arange(D, dtype=np.int64), h)
        pos = olh_buckets(mech.codebook_seed, fn, items, np.full(h * D, k, dtype=np.int64))
        bloom = np.zeros((D, k), dtype=bool)
        bloom[items, pos] = True
        laws_by_cohort[int(c)] = np.where(bits[None, :, :] == bloom[:, None, :], p, q).prod(axis=2)
    probs = np.stack([laws_by_cohort[int(c)] for c in cohorts])
    return ExactLaw(list(range(D)), vectors, ids, probs,
                    note="Bloom filters from the OLH hash, binary64 probabilities converted "
                         "exactly to rationals")
