"""Naive twins of the optimized kernels: slow, obvious, independent.

Signs come from ``numpy.random.Philox`` (not from fastldp's hash), so a
layout error in the kernels cannot hide behind the same error here.
"""

from __future__ import annotations

import itertools

import math

import numpy as np

TWO64 = 2**64
TWO256 = 2**256


def numpy_philox_block(seed: int, identity: int, block: int, stream: int = 0) -> np.ndarray:
    """Philox4x64-10 at counter (block, stream, 0, 0), key (seed, identity), via numpy."""
    counter = (block + (stream << 64) - 1) % TWO256
    gen = np.random.Philox(key=seed + (identity << 64), counter=counter)
    return gen.random_raw(4).astype(np.uint64)


def numpy_sign_row(seed: int, identity: int, p: int) -> np.ndarray:
    """R_identity(e) for e in [0, p) as int64 {-1, +1}."""
    nblocks = (p + 255) // 256
    gen = np.random.Philox(key=seed + (identity << 64), counter=TWO256 - 1)
    words = gen.random_raw(4 * nblocks).astype("<u8")
    bits = np.unpackbits(words.view(np.uint8), bitorder="little")[:p]
    return 1 - 2 * bits.astype(np.int64)


def naive_sketch(seed: int, identities, weights, p: int) -> np.ndarray:
    """sum_i weights[i] * R_i(e), accumulated identity by identity."""
    out = np.zeros(p)
    for ident, w in zip(identities, weights):
        out += w * numpy_sign_row(seed, int(ident), p)
    return out


def numpy_olh_bucket(seed: int, identity: int, item: int, g: int) -> int:
    """Bucket of item for identity: 32-bit lane item & 7 of OLH block item >> 3."""
    block = numpy_philox_block(seed, identity, item >> 3, stream=1)
    lane = item & 7
    word = int(block[lane >> 1])
    value = (word >> 32) if lane & 1 else (word & 0xFFFFFFFF)
    return (value * g) >> 32


def capped_simplex_bisection(y, k, iters=200) -> np.ndarray:
    """Projection onto {x in [0,1]^s : sum x <= k} by bisection on tau."""
    y = np.asarray(y, dtype=float)
    if np.clip(y, 0, 1).sum() <= k:
        return np.clip(y, 0, 1)
    lo, hi = 0.0, float(y.max())
    for _ in range(iters):
        mid = 0.5 * (lo + hi)
        if np.clip(y - mid, 0, 1).sum() > k:
            lo = mid
        else:
            hi = mid
    return np.clip(y - 0.5 * (lo + hi), 0, 1)


def brute_force_sparse_projection(v, s, k):
    """min over all supports of size s of the capped-simplex projection distance."""
    v = np.asarray(v, dtype=float)
    p = v.shape[0]
    best, best_x = np.inf, None
    for support in itertools.combinations(range(p), min(s, p)):
        idx = list(support)
        x = np.zeros(p)
        x[idx] = capped_simplex_bisection(v[idx], k)
        d = float(np.sum((x - v) ** 2))
        if d < best:
            best, best_x = d, x
    return best_x, best


# ---------------------------------------------------------------- JPRS, from the paper's definitions
def enumerated_a_m(m: int) -> float:
    """a_m = E|xi_1 + ... + xi_m| / m by enumerating all 2^m sign patterns."""
    from fractions import Fraction

    total = sum(abs(sum(signs)) for signs in itertools.product((-1, 1), repeat=m))
    return float(Fraction(total, m * 2**m))


def naive_kappa_and_c(k: int):
    """(kappa_k, [0, c_k(1), ..., c_k(k)]) from enumeration: kappa_k = min_m sqrt(k) a_m."""
    a = [enumerated_a_m(m) for m in range(1, k + 1)]
    kappa = min(np.sqrt(k) * x for x in a)
    return kappa, np.array([0.0] + [kappa / (np.sqrt(k) * x) for x in a])


def naive_jprs_p_plus(seed: int, identity: int, pairs, eps: float, k: int, p: int) -> float:
    """P(Y = +1 | E, codebook) of Algorithm 1, the sgn0 coin averaged out."""
    _, c = naive_kappa_and_c(k)
    row = numpy_sign_row(seed, identity, p)
    score = int(sum(row[e] for e in pairs))
    theta = c[len(pairs)] * np.sign(score)
    return 0.5 * (1.0 + np.tanh(eps / 2.0) * theta)


def naive_jprs_sketch(seed: int, identities, bits, eps, k: int, p: int,
                      fixed_point: bool = False) -> np.ndarray:
    """Eq. (8): sqrt(k) / (kappa_k D) * sum_i gamma_i Ybar_i R_i, D = sum gamma_i^2.

    ``fixed_point=True`` rounds each ``gamma_i`` in the weights (not in D) to
    32 significant bits, as the package documents for its exact sums.
    """
    kappa, _ = naive_kappa_and_c(k)
    gamma = np.tanh(np.asarray(eps, dtype=float) / 2.0)
    if fixed_point:
        from fractions import Fraction
        rounded = []
        for g in gamma:
            m, x = math.frexp(float(g))
            rounded.append(float(Fraction(round(Fraction(m) * 2**32)) * Fraction(2) ** (x - 32)))
        weights = (np.sqrt(k) / (kappa * np.sum(gamma**2)) * np.array(rounded)
                   * np.asarray(bits, dtype=float))
        return naive_sketch(seed, identities, weights, p)
    weights = np.sqrt(k) / (kappa * np.sum(gamma**2)) * gamma * np.asarray(bits, dtype=float)
    return naive_sketch(seed, identities, weights, p)


#: the two planted items of the heavy-hitter variance tests: code -> holders among 12,000
PLANTED_HEAVY = {1234: 6000, 777: 3000}


def planted_heavy_items() -> np.ndarray:
    """12,000 16-bit items: 1234 held by half, 777 by a quarter, the rest uniform."""
    return np.concatenate([np.full(6000, 1234), np.full(3000, 777),
                           np.random.default_rng(0).integers(0, 1 << 16, 3000)]).astype(
                               np.uint64)


def check_reported_variance(build, runs: int = 1500) -> None:
    """The reported variance of a heavy-hitter protocol against the spread over ``runs`` seeds.

    ``build(run)`` returns a protocol with ``k = 2`` and a fresh codebook seed. Over
    ``runs`` runs (fresh seeds, fresh privatization) the counts of the two planted items
    have a sample variance ``s^2``; ``(N - 1) s^2 / sigma^2`` is chi-square with ``N - 1``
    degrees of freedom, ``sigma^2`` the mean reported variance: accepted within its 0.05 %
    and 99.95 % quantiles ([0.88, 1.13] at N = 1500). The mean count must lie within 4
    standard errors of the truth.
    """
    from scipy.stats import chi2

    items = planted_heavy_items()
    counts: dict = {code: [] for code in PLANTED_HEAVY}
    variances: dict = {code: [] for code in PLANTED_HEAVY}
    for run in range(runs):
        proto = build(run)
        res = proto.estimate(proto.privatize(items, rng=run))
        assert sorted(res.codes.tolist()) == sorted(PLANTED_HEAVY)
        for code, cnt, var in zip(res.codes.tolist(), res.counts, res.variances):
            counts[code].append(cnt)
            variances[code].append(var)
    lo, hi = chi2.ppf([0.0005, 0.9995], runs - 1) / (runs - 1)
    for code, true in PLANTED_HEAVY.items():
        s2 = np.var(counts[code], ddof=1)
        sigma2 = np.mean(variances[code])
        assert lo < s2 / sigma2 < hi, (code, s2, sigma2)
        assert abs(np.mean(counts[code]) - true) < 4 * math.sqrt(sigma2 / runs)
