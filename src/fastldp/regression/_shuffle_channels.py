"""The audit's channels of the shuffle protocols: the analyzer's view of each, and its faults.

The shuffle protocols are not local randomizers: their guarantee is on the
*analyzer's view* - every stream of messages as the shuffler outputs it -
and it is an ``(eps, delta)`` guarantee between neighbouring datasets that
differ in one party's input. The audit runs the protocol's own code many
times under two such datasets, keeps what the analyzer sees and tests it in
three ways.

1. **Lower bounds on eps.** For each statistic of the view it counts a
   threshold event ``S`` (chosen on a separate pilot sample,
   :func:`fastldp.audit.empirical.threshold_test_samples`) and reports, with
   Clopper-Pearson bounds ``p_lo <= P(S | D)`` and ``q_hi >= P(S | D')``,
   ``eps >= ln((p_lo - delta) / q_hi)``, which holds with probability
   ``1 - alpha`` whenever the view is ``(eps, delta)``-DP. A claim is
   refuted when that bound exceeds the claimed ``eps``. This proves a
   violation; it never proves privacy.
2. **An exact check of the order-free view.** With a uniform shuffler, the
   analyzer of the summation learns the decoded noisy sum (and, up to the
   ``delta_shares`` of the plan, nothing else); the analyzer of shuffled
   bits learns the count of ones of each stream. Their laws for the audited
   pair are written down from the plan (Skellam ``Sk(mu)`` around the two
   integer sums; independent binomial counts with flip probability
   ``gamma``) and the hockey-stick divergence ``delta(eps) = sum_z (P(z) -
   e^eps P'(z))_+`` is computed numerically (both directions). The view
   determines that statistic, so ``delta(eps) > delta`` refutes the claim -
   *if* the view follows the plan, which is what the conformance tests check.
3. **Conformance of the view to the accounting's assumptions** (Bonferroni
   over the row's tests, :mod:`fastldp.audit.conformance`): (a) the noise is
   ``Sk(mu)`` with the plan's ``mu`` / each bit flips with the plan's
   ``gamma``; (b) each party's shares are uniform modulo ``q``; (c) the
   shuffler is a uniform permutation, so a message's position carries no
   information about the party that sent it. A failed conformance test
   does not refute the claim, it voids its proof.

Every draw runs the protocol's code: :meth:`ShuffledVectorSum.plan` and
:meth:`~ShuffledVectorSum.encode` for the summation,
:meth:`ShuffledBits.counts` for the bits, and the shuffler looked up *at
call time* as ``fastldp.regression.shuffle.shuffle`` (a module attribute; a
negative control may inject its own as ``audit_shuffler``). The bits' view
is recorded by routing that module attribute through a recorder while
:meth:`~ShuffledBits.counts` runs (it is restored afterwards; do not run an
audit while other threads shuffle).

Audited views
-------------
* ``shuffled-sum``: ``n = SUM_PARTIES`` parties, one coordinate,
  ``norm_bound = 1``. In ``D`` party 0 holds ``+1`` and in ``D'`` it holds
  ``-1`` (the replacement the default sensitivity ``2 norm_bound`` covers);
  the others hold 0, so the integer sums are ``+-scale`` exactly. The view
  is one stream of ``n m`` messages in ``Z_q`` (``m`` shares per party).
  For speed, ``T`` independent one-coordinate summations are run as the
  ``T`` coordinates of one :meth:`encode` call with the *one-coordinate*
  plan: every coordinate has its own noise, shares and shuffler, exactly as
  in :meth:`ShuffledVectorSum.sum` (only the per-party l2 check, which would
  see the ``T`` trials as one long vector, is widened).

  Statistics: the decoded sum; the decode of the *first* ``m`` messages
  (the messages of party 0 if the shuffler kept the arrival order).
  Exact check: ``delta(eps)`` of ``+-scale + Sk(mu)`` (plan's ``mu``).
  Conformance: (a) the decoded noise has mean 0 and variance ``mu`` (the
  variance test detects a relative error of about
  ``z sqrt(2 / N)``, 4% at ``N = 40,000``); (b) the first ``m - 1``
  messages of every view - never all ``m`` shares of one party, so i.i.d.
  uniform on ``Z_q`` whatever the shuffler - fall uniformly in
  :data:`VALUE_BINS` bins of their top bits; (c) the decode of the first
  ``m`` messages is uniform on ``Z_q`` under each input (it is unless those
  ``m`` positions hold exactly one party's shares, probability ``n /
  C(n m, m) < 1e-30`` for a uniform shuffler), and the shuffler, run on
  labelled streams of the same length, puts label 0 uniformly, keeps
  labels 0 and 1 adjacent with probability ``1 / L`` only, and outputs a
  permutation of its input.
* ``shuffled-bits``: ``d = 2`` streams, ``n = BITS_PARTIES`` parties; in
  ``D`` every party holds index 0, in ``D'`` party 0 holds index 1 (two
  streams change). The view is the two streams of ``n`` bits.
  Statistics: the difference of the debiased counts ``c_1 - c_0``; the
  difference of the bits at position 0 of the two streams.
  Exact check: ``delta(eps)`` of the pair of count laws (plan's ``gamma``).
  Conformance: (a) each stream's ones match the flip probability ``gamma``;
  (c) the bit at position 0 of each stream is 1 with probability (expected
  count) / ``n`` under each input - a uniform shuffler puts a uniformly
  random party there - and the label tests of the shuffler.

What the audit proves and does not prove
----------------------------------------
A failed lower bound or exact check is a violation of the claim (the exact
check, given the conformance of the view). A failed conformance test is a
broken assumption of the proof. Passing proves nothing about privacy: the
tests see faults whose traces in ``N`` views exceed ``N^-1/2``-sized
fluctuations. In particular the eps lower bounds alone are weak here: the
honest views are about ``0.2``-GDP, so no sampled test of ``10^5`` draws
can refute ``(eps, 1e-5)`` for a view with a few times less noise (the
:data:`SHUFFLE_CONTROL_FACTOR` controls); that is what the exact check and
the conformance tests are for. Not tested: the ``delta_shares`` term of the
accounting (the distance of the shuffled shares to a function of the sum,
``~1e-6``, far below what a sample can see), streams of several
coordinates, and faults that keep every tested marginal (e.g. a shuffler
that is a uniform permutation on every stream length but the audited one).
"""

from __future__ import annotations

import contextlib
import copy
import math
from dataclasses import replace

import numpy as np

from ..channels import (VALUE_BINS, Channel, Check, ViewSample, binomial_test, channels_of,
                        chi2_uniform, mean_test, shuffler_checks, smallest_refuted, variance_test)
from . import shuffle as proto
from .shuffle import ShuffledBits, ShuffledVectorSum, flip_probability, skellam_variance

__all__ = [
    "SUM_PARTIES", "BITS_PARTIES", "SHUFFLE_DELTA", "SHUFFLE_CONTROL_FACTOR", "VALUE_BINS",
    "ViewSample", "current_shuffler", "recorded_shuffles", "shuffler_checks",
    "shuffled_sum", "shuffled_sum_claim", "shuffled_sum_views", "shuffled_sum_draw",
    "shuffled_sum_conformance", "sum_pair_delta",
    "shuffled_bits", "shuffled_bits_claim", "shuffled_bits_views", "shuffled_bits_draw",
    "shuffled_bits_conformance", "bits_pair_delta",
    "undernoised_sum", "undernoised_bits", "identity_shuffler", "sum_with_identity_shuffler",
    "bits_with_identity_shuffler", "sum_with_unmasked_shares", "sum_with_quarter_variance",
]

#: parties of the audited summation (shares per party: 22 at eps = 1, delta = 1e-5)
SUM_PARTIES = 16
#: parties of the audited shuffled-bits streams
BITS_PARTIES = 64
#: delta of the audited protocols
SHUFFLE_DELTA = 1e-5
#: the under-noised controls calibrate their noise at this multiple of the claimed eps
SHUFFLE_CONTROL_FACTOR = 6.0
#: party 0's input in D (side 0) and D' (side 1) of the summation
SUM_VALUES = (1.0, -1.0)
#: two-sided normal quantile at the Bonferroni level of a row of about 10 tests: the
#: resolution the variance test reports (the registry decides at the row's exact level)
_Z_ROW = 5.33
_CHUNK = 4096


def _protocol():
    """The protocol's module, whose ``shuffle`` the audit looks up at call time."""
    return proto


def current_shuffler(mech):
    """The shuffler the protocol uses now: ``fastldp.regression.shuffle.shuffle``.

    Looked up at call time (so a fault in that function is what the audit
    sees); a negative control may inject another as ``mech.audit_shuffler``.
    """
    injected = getattr(mech, "audit_shuffler", None)
    return injected if injected is not None else _protocol().shuffle


@contextlib.contextmanager
def recorded_shuffles(mech):
    """Route ``fastldp.regression.shuffle.shuffle`` through a recorder; yield its outputs.

    Inside the block, every call of the module's shuffler (by the protocol's
    own code) runs :func:`current_shuffler` and appends its output - what
    the analyzer receives - to the yielded list. The module attribute is
    restored on exit.
    """
    proto = _protocol()
    saved = proto.shuffle
    inner = current_shuffler(mech)
    seen = []

    def recorder(messages, rng=None):
        out = inner(messages, rng)
        seen.append(np.asarray(out))
        return out

    proto.shuffle = recorder
    try:
        yield seen
    finally:
        proto.shuffle = saved


def _top_bits(values, modulus_bits: int) -> np.ndarray:
    """The bin (top ``log2 VALUE_BINS`` bits) of each element of ``Z_q``; ``VALUE_BINS`` if outside."""
    v = np.asarray(values).astype(np.uint64, copy=False)
    shift = np.uint64(modulus_bits - int(math.log2(VALUE_BINS)))
    return np.minimum(v >> shift, np.uint64(VALUE_BINS)).astype(np.int64)


def _histogram(values, modulus_bits: int) -> np.ndarray:
    return np.bincount(_top_bits(values, modulus_bits).ravel(), minlength=VALUE_BINS + 1)


# ---------------------------------------------------------------- summation
def shuffled_sum(eps):
    return ShuffledVectorSum(epsilon=eps, delta=SHUFFLE_DELTA, norm_bound=1.0)


def shuffled_sum_claim(mech) -> tuple:
    """``(epsilon, delta)`` that the plan of the audited release states."""
    p = mech.plan(SUM_PARTIES, 1)
    return float(p["epsilon"]), float(p["delta"])


def shuffled_sum_views(mech, eps, side, size, gen) -> ViewSample:
    """``size`` views of the summation; party 0 holds ``SUM_VALUES[side]``, the others 0."""
    n = SUM_PARTIES
    plan = mech.plan(n, 1)
    m, q, bits, scale = plan["shares"], plan["modulus"], plan["modulus_bits"], plan["scale"]
    value = SUM_VALUES[side]
    parts = []
    for start in range(0, size, _CHUNK):
        T = min(_CHUNK, size - start)
        v = np.zeros((n, T))
        v[0] = value
        wide = copy.copy(mech)                       # T trials as T coordinates: widen
        wide.norm_bound = mech.norm_bound * math.sqrt(T) * (1 + 1e-9)   # only the l2 check
        shares, p = wide.encode(v, gen, plan)
        arrival = shares.transpose(1, 0, 2).reshape(T, n * m)     # party after party
        streams = np.asarray(current_shuffler(mech)(arrival, gen))
        total = type(mech).analyze(streams, q)                    # the analyzer's decode
        first = type(mech).analyze(streams[:, :m], q)             # the first m messages
        parts.append(ViewSample(
            {"decoded sum": total / scale, "first m messages": first / scale,
             "noise": total - scale * value},
            {"values": _histogram(streams[:, : m - 1], bits),
             "first m decode": _histogram(first.astype(np.int64) % q, bits)},
            T))
    return ViewSample.join(parts)


def shuffled_sum_draw(mech, eps, side, size, gen) -> np.ndarray:
    """``size`` decoded sums (real units) of the shuffled shares; party 0 holds ``+1`` or ``-1``."""
    return shuffled_sum_views(mech, eps, side, size, gen).stats["decoded sum"]


def _skellam_pmf(z, mu: float) -> np.ndarray:
    """``P(Sk(mu) = z)`` with ``Sk(mu) = Poisson(mu/2) - Poisson(mu/2)``: ``e^-mu I_|z|(mu)``."""
    from scipy.special import ive

    z = np.abs(np.asarray(z, dtype=np.float64))
    if mu <= 0:
        return (z == 0).astype(np.float64)
    return ive(z, mu)


def _rounded_law(value: float):
    """Stochastic rounding of ``value``: ``[(integer, probability)]``."""
    low = math.floor(value)
    frac = value - low
    return [(low, 1.0 - frac), (low + 1, frac)] if frac > 0 else [(low, 1.0)]


def sum_pair_delta(mu: float, scaled, eps: float) -> float:
    """``delta(eps)`` between the decoded sums of the audited pair, both directions.

    ``scaled`` holds party 0's scaled input under ``D`` and ``D'``; the
    decoded sum is its stochastic rounding plus ``Sk(mu)`` (the other parties
    hold 0). Exact up to the mass beyond 50 standard deviations.
    """
    laws = [_rounded_law(x) for x in scaled]
    sd = math.sqrt(max(mu, 0.0))
    lo = min(t for law in laws for t, _ in law) - int(50 * sd) - 1
    hi = max(t for law in laws for t, _ in law) + int(50 * sd) + 1
    z = np.arange(lo, hi + 1)
    pmf = [sum(w * _skellam_pmf(z - t, mu) for t, w in law) for law in laws]
    e = math.exp(eps)
    return float(max(np.clip(pmf[0] - e * pmf[1], 0, None).sum(),
                     np.clip(pmf[1] - e * pmf[0], 0, None).sum()))


def shuffled_sum_conformance(mech, fresh, gen, rows: int) -> list:
    """The exact check and conformance tests of the summation's views (module docstring)."""
    proto = _protocol()
    n = SUM_PARTIES
    plan = mech.plan(n, 1)
    eps, delta = shuffled_sum_claim(mech)
    mu, scale, m = plan["mu"], plan["scale"], plan["shares"]
    scaled = [scale * v for v in SUM_VALUES]
    checks = []
    # exact: the order-free statistic's law for the pair, from the plan
    got = sum_pair_delta(mu, scaled, eps)

    def refuted(k):
        mu_k = proto.skellam_variance(k * eps, plan["delta_noise"], plan["l2"], plan["l1"])
        return sum_pair_delta(mu_k, scaled, eps) > delta

    k = smallest_refuted(refuted)
    checks.append(Check("exact: decoded sum +-scale + Sk(mu) within (eps, delta)", None,
                        got <= delta, detail=f"delta(eps) = {got:.3g} vs {delta:.3g}; refutes "
                        f"noise calibrated at >= {k:.3g} eps", reach=k))
    # (a) the decoded noise is Sk(mu): mean 0, variance mu (+ the rounding of party 0's input)
    noise = np.concatenate([f.stats["noise"] for f in fresh])
    frac = [x - math.floor(x) for x in scaled]
    var = mu + float(np.mean([f * (1 - f) for f in frac]))
    z, p = mean_test(noise, var)
    checks.append(Check("(a) decoded noise has mean 0", p, True, detail=f"z = {z:.2f}"))
    ratio, p = variance_test(noise, var)
    checks.append(Check("(a) decoded noise variance = plan mu", p, True,
                        detail=f"sample / plan = {ratio:.4f}; detects about "
                        f"+-{_Z_ROW * math.sqrt(2 / noise.shape[0]):.1%}"))
    # (b) shares uniform on Z_q
    values = sum(f.tallies["values"] for f in fresh)
    outside = int(values[VALUE_BINS])
    stat, p = chi2_uniform(values[:VALUE_BINS])
    checks.append(Check("(b) shares uniform on Z_q", 0.0 if outside else p, True,
                        detail=f"first m-1 messages of each view: chi2 = {stat:.1f}"
                        + (f", {outside} outside Z_q" if outside else "")))
    # (c) a position carries no information: the first m messages decode uniformly
    for side, f in enumerate(fresh):
        stat, p = chi2_uniform(f.tallies["first m decode"][:VALUE_BINS])
        checks.append(Check(f"(c) first m messages decode uniformly (x{chr(39) * side})", p,
                            True, detail=f"chi2 = {stat:.1f}"))
    checks += shuffler_checks(current_shuffler(mech), n * m, rows, gen)
    return checks


def undernoised_sum(eps):
    """A summation whose Skellam noise is calibrated at ``SHUFFLE_CONTROL_FACTOR * eps``;
    its plan still states ``eps``."""
    class UnderNoisedSum(ShuffledVectorSum):
        def plan(self, n_parties, dim):
            p = super().plan(n_parties, dim)
            p["mu"] = skellam_variance(SHUFFLE_CONTROL_FACTOR * self.epsilon, p["delta_noise"],
                                       p["l2"], p["l1"])
            return p

    return UnderNoisedSum(epsilon=eps, delta=SHUFFLE_DELTA, norm_bound=1.0)


def identity_shuffler(messages, rng=None):
    """A broken shuffler: the messages in arrival order."""
    return np.array(messages, copy=True)


def sum_with_identity_shuffler(eps):
    """The summation with a shuffler that does not permute (``fault: shuffle-identity``)."""
    class Unshuffled(ShuffledVectorSum):
        audit_shuffler = staticmethod(identity_shuffler)

    return Unshuffled(epsilon=eps, delta=SHUFFLE_DELTA, norm_bound=1.0)


def sum_with_unmasked_shares(eps):
    """The summation whose parties send ``m - 1`` zeros and their noisy value (no masking)."""
    class Unmasked(ShuffledVectorSum):
        def encode(self, vectors, rng, plan=None):
            shares, p = super().encode(vectors, rng, plan)
            q = np.uint64(p["modulus"])
            value = shares.sum(axis=-1, dtype=np.uint64) & (q - np.uint64(1))
            shares[..., :-1] = 0
            shares[..., -1] = value
            return shares, p

    return Unmasked(epsilon=eps, delta=SHUFFLE_DELTA, norm_bound=1.0)


def sum_with_quarter_variance(eps):
    """The summation whose plan draws (and states) ``mu / 4``, still claiming ``eps``."""
    class QuarterVariance(ShuffledVectorSum):
        def plan(self, n_parties, dim):
            p = super().plan(n_parties, dim)
            p["mu"] = p["mu"] / 4
            return p

    return QuarterVariance(epsilon=eps, delta=SHUFFLE_DELTA, norm_bound=1.0)


# ---------------------------------------------------------------- shuffled bits
def shuffled_bits(eps):
    return ShuffledBits(epsilon=eps, delta=SHUFFLE_DELTA, d=2)


def shuffled_bits_claim(mech) -> tuple:
    return float(mech.epsilon), float(mech.delta)


def shuffled_bits_views(mech, eps, side, size, gen) -> ViewSample:
    """``size`` views of two shuffled streams; party 0 holds index ``side``, the others 0."""
    n = BITS_PARTIES
    idx = np.zeros(n, dtype=np.int64)
    idx[0] = side
    diff = np.empty(size)
    first = np.empty(size)
    ones = np.zeros(mech.d, dtype=np.int64)
    at_zero = np.zeros(mech.d, dtype=np.int64)
    missing = 0
    with recorded_shuffles(mech) as seen:
        for t in range(size):
            c, _ = mech.counts(idx, gen)
            diff[t] = c[1] - c[0]
            if len(seen) != 1:              # the messages did not pass the shuffler once
                missing += 1
                first[t] = 0.0
                seen.clear()
                continue
            streams = seen.pop()
            first[t] = float(streams[1, 0]) - float(streams[0, 0])
            ones += (streams != 0).sum(axis=1)
            at_zero += streams[:, 0] != 0
    return ViewSample({"c1 - c0": diff, "bits at position 0": first},
                      {"ones": ones, "ones at position 0": at_zero,
                       "unshuffled": np.array([missing])}, size)


def shuffled_bits_draw(mech, eps, side, size, gen) -> np.ndarray:
    """``size`` views' statistic ``c_1 - c_0`` (debiased counts); party 0 holds index ``side``."""
    return shuffled_bits_views(mech, eps, side, size, gen).stats["c1 - c0"]


def _bits_expected_ones(gamma: float, side: int) -> np.ndarray:
    """Expected ones of streams 0 and 1 (``BITS_PARTIES`` parties, party 0 at index ``side``)."""
    n = BITS_PARTIES
    holders = np.array([n - side, side], dtype=np.float64)   # parties whose bit is 1
    return holders * (1 - gamma) + (n - holders) * gamma


def _count_law(holders: int, n: int, gamma: float) -> np.ndarray:
    """Law of the ones of one stream: ``Bin(holders, 1 - gamma) + Bin(n - holders, gamma)``."""
    from scipy.stats import binom

    k = np.arange(n + 1)
    return np.convolve(binom.pmf(k[: holders + 1], holders, 1 - gamma),
                       binom.pmf(k[: n - holders + 1], n - holders, gamma))


def bits_pair_delta(gamma: float, eps: float, n: int = BITS_PARTIES) -> float:
    """``delta(eps)`` between the two streams' counts under ``D`` and ``D'``, both directions."""
    laws = []
    for side in (0, 1):
        c0 = _count_law(n - side, n, gamma)        # stream 0: holders of index 0
        c1 = _count_law(side, n, gamma)            # stream 1
        laws.append(np.outer(c0, c1))
    e = math.exp(eps)
    return float(max(np.clip(laws[0] - e * laws[1], 0, None).sum(),
                     np.clip(laws[1] - e * laws[0], 0, None).sum()))


def shuffled_bits_conformance(mech, fresh, gen, rows: int) -> list:
    """The exact check and conformance tests of the shuffled bits' views (module docstring)."""
    proto = _protocol()
    n = BITS_PARTIES
    eps, delta = shuffled_bits_claim(mech)
    gamma = mech.gamma(n)
    missing = int(sum(f.tallies["unshuffled"][0] for f in fresh))
    checks = [Check("every release passes the shuffler once", None, missing == 0,
                    detail=f"{missing} releases did not" if missing else "")]
    got = bits_pair_delta(gamma, eps)

    def refuted(k):
        return bits_pair_delta(proto.flip_probability(n, k * eps / 2, delta / 2), eps) > delta

    k = smallest_refuted(refuted)
    checks.append(Check("exact: stream counts with flip probability gamma within (eps, delta)",
                        None, got <= delta, detail=f"delta(eps) = {got:.3g} vs {delta:.3g}; "
                        f"refutes flips calibrated at >= {k:.3g} eps", reach=k))
    # (a) each stream's ones: sums of independent Bernoulli bits of known probabilities
    views = np.array([f.size for f in fresh], dtype=np.float64)
    mean = sum(views[s] * _bits_expected_ones(gamma, s) for s in (0, 1))
    var = (views.sum() * n) * gamma * (1 - gamma)     # every bit flips with gamma
    ones = sum(f.tallies["ones"] for f in fresh)
    for j in (0, 1):
        z = float((ones[j] - mean[j]) / math.sqrt(var))
        p = float(min(1.0, 2 * _norm_sf(abs(z))))
        checks.append(Check(f"(a) stream {j} flips with the plan's gamma", p, True,
                            detail=f"z = {z:.2f}"))
    # (c) position 0 holds a uniformly random party's bit
    for side, f in enumerate(fresh):
        expected = _bits_expected_ones(gamma, side) / n
        for j in (0, 1):
            p = binomial_test(f.tallies["ones at position 0"][j], f.size, expected[j])
            checks.append(Check(f"(c) stream {j}, position 0: a random party's bit "
                                f"(x{chr(39) * side})", p, True,
                                detail=f"{f.tallies['ones at position 0'][j]} ones of {f.size}, "
                                f"expected {expected[j] * f.size:.0f}"))
    checks += shuffler_checks(current_shuffler(mech), n, rows, gen)
    return checks


def _norm_sf(z: float) -> float:
    return 0.5 * math.erfc(z / math.sqrt(2))


def undernoised_bits(eps):
    """Shuffled bits whose flip probability is calibrated at ``SHUFFLE_CONTROL_FACTOR * eps``."""
    class UnderNoisedBits(ShuffledBits):
        def gamma(self, n_parties):
            return flip_probability(n_parties, SHUFFLE_CONTROL_FACTOR * self.epsilon / 2,
                                    self.delta / 2)

    return UnderNoisedBits(epsilon=eps, delta=SHUFFLE_DELTA, d=2)


def bits_with_identity_shuffler(eps):
    """Shuffled bits whose shuffler does not permute (``fault: shuffle-identity``)."""
    class Unshuffled(ShuffledBits):
        audit_shuffler = staticmethod(identity_shuffler)

    return Unshuffled(epsilon=eps, delta=SHUFFLE_DELTA, d=2)


# ---------------------------------------------------------------- the channels and their faults
#: (test, pilot) draws per side of the shuffle audits
SUM_DRAWS = (20_000, 4_000)
BITS_DRAWS = (10_000, 2_500)


def _sum_describe(mech):
    return "plan: " + ", ".join(f"{k}={v:.4g}" for k, v in mech.plan(SUM_PARTIES, 1).items()
                                if k in ("mu", "shares", "modulus", "delta_noise",
                                         "delta_shares"))


def _fault(ch: Channel, name: str, build, description: str) -> Channel:
    return replace(ch, control_of=ch.name, name=f"control:{ch.name}-{name}", build=build,
                   description=description, expect_violation=True)


@channels_of(ShuffledVectorSum)
def _shuffled_sum_channels(epsilon):
    """The summation's view, and its faults: noise of a larger eps (a 1.5 eps fault is out of
    reach of a sampled (eps, 1e-5) test, see the module docstring), an unpermuting shuffler,
    unmasked shares, a quarter of the variance."""
    ch = Channel("shuffled-sum", f"ShuffledVectorSum view (one stream of shuffled shares), "
                 f"n={SUM_PARTIES}, one coordinate, party 0: +1 vs -1", epsilon,
                 shuffled_sum, kind="shuffle", draw=shuffled_sum_views,
                 claim=shuffled_sum_claim, draws=SUM_DRAWS,
                 statistics=("decoded sum", "first m messages"),
                 conformance=shuffled_sum_conformance, describe=_sum_describe)
    k = f"{SHUFFLE_CONTROL_FACTOR:g}"
    return [
        ch,
        _fault(ch, f"noise@{k}eps", undernoised_sum,
               f"ShuffledVectorSum with Skellam noise for {k} eps, plan stating eps"),
        _fault(ch, "identity-shuffler", sum_with_identity_shuffler,
               "ShuffledVectorSum whose shuffler returns the messages in arrival order"),
        _fault(ch, "unmasked-shares", sum_with_unmasked_shares,
               "ShuffledVectorSum whose parties send m - 1 zeros and their value"),
        _fault(ch, "variance/4", sum_with_quarter_variance,
               "ShuffledVectorSum drawing Skellam noise of variance mu / 4, claiming eps"),
    ]


@channels_of(ShuffledBits)
def _shuffled_bits_channels(epsilon):
    """The shuffled bits' view, and its faults: flips of a larger eps, an unpermuting shuffler."""
    ch = Channel("shuffled-bits", f"ShuffledBits view (two shuffled bit streams), "
                 f"n={BITS_PARTIES}, d=2, party 0: index 0 vs 1", epsilon, shuffled_bits,
                 kind="shuffle", draw=shuffled_bits_views, claim=shuffled_bits_claim,
                 draws=BITS_DRAWS, statistics=("c1 - c0", "bits at position 0"),
                 conformance=shuffled_bits_conformance,
                 describe=lambda mech: f"gamma = {mech.gamma(BITS_PARTIES):.6g}")
    k = f"{SHUFFLE_CONTROL_FACTOR:g}"
    return [
        ch,
        _fault(ch, f"flips@{k}eps", undernoised_bits,
               f"ShuffledBits with the flip probability of {k} eps, claiming eps"),
        _fault(ch, "identity-shuffler", bits_with_identity_shuffler,
               "ShuffledBits whose shuffler returns the bits in arrival order"),
    ]
