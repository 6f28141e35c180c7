"""The audit's channels of full RAPPOR and dBitFlipPM (memoized), and their controls.

Two exact channels each, with laws written out here from the public
probabilities (not by the samplers) and audited in rational arithmetic:

* ``rappor-longitudinal-permanent``: the memoized permanent response of
  :class:`~fastldp.longitudinal.rappor.LongitudinalRAPPOR` (``k = 4`` bits,
  all 16 outputs, ``h = 2``, one cohort, ``D = 3`` values, a codebook seed
  under which values 0 and 1 have disjoint two-bit filters), claimed at
  ``epsilon_inf = 2 h ln((1 - f/2) / (f/2))``: ``f`` is set from the claim;
  each bit is the filter's bit flipped with probability ``f/2``;
* ``rappor-longitudinal``: one report (permanent, then ``q`` for a set bit
  and ``p`` for a clear one), claimed at ``epsilon_1 = h ln(q* (1 - p*) /
  (p* (1 - q*)))``: ``f`` from ``epsilon_inf = 2 epsilon_1`` and the
  symmetric ``p = 1 - q`` that reaches the claim
  (:func:`~fastldp.longitudinal.rappor.symmetric_q`); per bit
  ``P(S = 1) = P(B' = 1) q + P(B' = 0) p``;
* ``dbitflip-permanent``: the memoized response of
  :class:`~fastldp.longitudinal.dbitflip.DBitFlipPM` (``k = 3`` buckets,
  ``d = 2`` sampled, all ``C(3, 2) 2^2 = 12`` outputs), claimed at
  ``epsilon_inf``: a uniform 2-subset, then bit ``p`` is 1 with
  probability ``e^(eps/2) / (e^(eps/2) + 1)`` at the value's bucket and
  ``1 / (e^(eps/2) + 1)`` elsewhere;
* ``dbitflip``: one report with output perturbation, claimed at
  ``epsilon_1 = 2 ln(P* / Q*)`` (``epsilon_inf = 2 epsilon_1`` and the
  ``gamma`` of :meth:`~fastldp.longitudinal.dbitflip.DBitFlipPM.gamma_for`).

Products are taken in sorted order (:func:`math.prod` of sorted factors),
so entries equal by symmetry are equal bit for bit.

The negative controls ``control:rappor-longitudinal-memo-skipped`` and
``control:dbitflip-memo-skipped`` draw a fresh permanent response (and, for
dBitFlipPM, a fresh bucket sample) for every report, and are audited
empirically over :data:`TAU` reports of one unchanged value against the
claim ``epsilon_inf``. The statistic sums, over the reports, the bits of
value 0's filter minus those of value 1's (RAPPOR) or the bits sent for
bucket 0 minus those for bucket 1 (dBitFlipPM). Through a memo the reports
are post-processing of one ``epsilon_inf`` response; without one, ``TAU``
fresh responses reach far beyond it.

The classes answer ``channels(epsilon)`` with what is registered here
(:func:`fastldp.channels.channels_of`).
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np

from ..channels import Channel, ExactLaw, channels_of
from .dbitflip import DBitFlipPM
from .memo import MemoryMemo
from .rappor import LongitudinalRAPPOR, symmetric_q

__all__ = ["rappor_law", "dbitflip_law", "TAU", "RAPPOR_SEED"]

#: reports of one value in the memo-skipped controls
TAU = 10
#: the RAPPOR audits' codebook seed: values 0 and 1 have disjoint two-bit filters in 4 bits
RAPPOR_SEED = 20240646
#: the RAPPOR audits' shape and domain
RAPPOR_K, RAPPOR_H, RAPPOR_D = 4, 2, 3
#: the dBitFlipPM audits' buckets and sampled buckets
DBF_K, DBF_D = 3, 2


# ------------------------------------------------------------------ RAPPOR
def _rappor_f(epsilon_inf: float) -> float:
    """``f`` with ``2 h ln((1 - f/2) / (f/2)) = epsilon_inf``: ``f/2 = 1 / (1 + e^(eps / 2h))``."""
    return 2.0 / (1.0 + math.exp(epsilon_inf / (2 * RAPPOR_H)))


def _rappor_permanent(eps):
    return LongitudinalRAPPOR(domain_size=RAPPOR_D, k=RAPPOR_K, h=RAPPOR_H, m=1,
                              f=_rappor_f(eps), p=0.25, q=0.75, codebook_seed=RAPPOR_SEED,
                              n_threads=1)


def _rappor_report(eps):
    f = _rappor_f(2 * eps)
    q = symmetric_q(eps, h=RAPPOR_H, f=f)
    return LongitudinalRAPPOR(domain_size=RAPPOR_D, k=RAPPOR_K, h=RAPPOR_H, m=1, f=f,
                              p=1.0 - q, q=q, codebook_seed=RAPPOR_SEED, n_threads=1)


def rappor_law(mech, which: str, identities=(0,)) -> ExactLaw:
    """The law of the permanent response or of one report over all ``2^k`` bit tuples."""
    ids = np.atleast_1d(np.asarray(identities)).astype(np.uint64)
    k, half = mech.n_bits, mech.f / 2
    outs = list(itertools.product((0, 1), repeat=k))
    rows = []
    for v in range(mech.domain_size):
        filt = set(int(j) for j in mech.bloom_positions([0], [v])[0])
        one = []
        for j in range(k):
            perm_one = 1.0 - half if j in filt else half
            one.append(perm_one if which == "permanent"
                       else perm_one * mech.q + (1.0 - perm_one) * mech.p)
        rows.append([math.prod(sorted(one[j] if y[j] else 1.0 - one[j] for j in range(k)))
                     for y in outs])
    probs = np.broadcast_to(np.array(rows), (ids.shape[0], len(rows), len(outs))).copy()
    return ExactLaw(list(range(mech.domain_size)), outs, ids, probs,
                    note=f"{which}: independent bits from the filters and (f, p, q), binary64, "
                         "exact rationals")


def _rappor_key(row):
    bits = np.unpackbits(np.asarray(row, dtype=np.uint8), bitorder="little")
    return tuple(int(b) for b in bits[:RAPPOR_K])


def _rappor_sample_permanent(mech, eps, xs, ids, gen):
    memo, x = MemoryMemo(), np.asarray(xs, dtype=np.int64)
    mech.privatize(x, memo=memo, identities=ids, rng=gen)
    rows, found = memo.lookup(mech.memo_scope, ids, x, mech.domain_size, np.uint8, mech.n_bytes)
    assert found.all()
    return list(rows)


def _rappor_sample_report(mech, eps, xs, ids, gen):
    return list(mech.privatize(np.asarray(xs, dtype=np.int64), memo=MemoryMemo(),
                               identities=ids, rng=gen))


def _rappor_describe(mech) -> str:
    return (f"f={mech.f:.6g}, p={mech.p:.6g}, q={mech.q:.6g}; epsilon_inf={mech.epsilon_inf:g}, "
            f"epsilon_1={mech.epsilon_1:g}")


# ------------------------------------------------------------------ dBitFlipPM
def _dbf_permanent(eps):
    return DBitFlipPM(domain_size=DBF_K, n_buckets=DBF_K, n_sampled=DBF_D, epsilon_inf=eps,
                      codebook_seed=RAPPOR_SEED)


def _dbf_report(eps):
    return DBitFlipPM(domain_size=DBF_K, n_buckets=DBF_K, n_sampled=DBF_D,
                      epsilon_inf=2 * eps, gamma=DBitFlipPM.gamma_for(2 * eps, eps),
                      codebook_seed=RAPPOR_SEED)


def dbitflip_law(mech, which: str, identities=(0,)) -> ExactLaw:
    """The law of the memoized response or of one report over every (subset, bits) report."""
    ids = np.atleast_1d(np.asarray(identities)).astype(np.uint64)
    k, d = mech.n_buckets, mech.n_sampled
    if which == "permanent":
        e = math.exp(mech.epsilon_inf / 2)
        hi, lo = e / (e + 1.0), 1.0 / (e + 1.0)
    else:
        hi, lo = mech.P, mech.Q
    subsets = list(itertools.combinations(range(k), d))
    outs = [tuple(2 * j + b for j, b in zip(s, bits)) for s in subsets
            for bits in itertools.product((0, 1), repeat=d)]
    rows = []
    for v in range(k):
        row = []
        for y in outs:
            factors = [1.0 / len(subsets)]
            for entry in y:
                one = hi if entry >> 1 == v else lo
                factors.append(one if entry & 1 else 1.0 - one)
            row.append(math.prod(sorted(factors)))
        rows.append(row)
    probs = np.broadcast_to(np.array(rows), (ids.shape[0], k, len(outs))).copy()
    return ExactLaw(list(range(k)), outs, ids, probs,
                    note=f"{which}: a uniform {d}-subset of {k} buckets, then independent bits, "
                         "binary64, exact rationals")


def _dbf_key(row):
    return tuple(int(v) for v in row)


def _dbf_sample_permanent(mech, eps, xs, ids, gen):
    memo, x = MemoryMemo(), np.asarray(xs, dtype=np.int64)
    mech.privatize(x, memo=memo, identities=ids, rng=gen)
    scope_s, scope_b = mech.memo_scopes
    d = mech.n_sampled
    sampled, ok_s = memo.lookup(scope_s, ids, np.zeros(x.shape[0], np.int64), 1, np.int64, d)
    cases = mech.cases(sampled, mech.buckets(x))
    bits, ok_b = memo.lookup(scope_b, ids, cases, d + 1, np.uint8, d)
    assert ok_s.all() and ok_b.all()
    return list(2 * sampled + bits.astype(np.int64))


def _dbf_sample_report(mech, eps, xs, ids, gen):
    return list(mech.privatize(np.asarray(xs, dtype=np.int64), memo=MemoryMemo(),
                               identities=ids, rng=gen))


def _dbf_describe(mech) -> str:
    return (f"k={mech.n_buckets}, d={mech.n_sampled}, gamma={mech.gamma:.6g}; "
            f"epsilon_inf={mech.epsilon_inf:g}, epsilon_1={mech.epsilon_1:g}")


# ------------------------------------------------------------------ controls
def _rappor_skipping(eps):
    class MemoSkipped(LongitudinalRAPPOR):
        """The fault: the memo it is given is ignored; every report draws a fresh permanent
        response."""

        def privatize(self, values, *, memo=None, **kwargs):
            return super().privatize(values, memo=MemoryMemo(), **kwargs)

    f = _rappor_f(eps)
    q = symmetric_q(eps / 2, h=RAPPOR_H, f=f)
    return MemoSkipped(domain_size=RAPPOR_D, k=RAPPOR_K, h=RAPPOR_H, m=1, f=f, p=1.0 - q, q=q,
                       codebook_seed=RAPPOR_SEED, n_threads=1)


def _rappor_tau_draw(mech, eps, side, size, gen):
    """``TAU`` reports of value ``side`` by ``size`` users through one memo: the sum over the
    reports of the bits of value 0's filter minus those of value 1's."""
    f0 = [int(j) for j in mech.bloom_positions([0], [0])[0]]
    f1 = [int(j) for j in mech.bloom_positions([0], [1])[0]]
    x = np.full(size, side, dtype=np.int64)
    memo = MemoryMemo()
    stat = np.zeros(size)
    for _ in range(TAU):
        bits = np.unpackbits(mech.privatize(x, memo=memo, rng=gen), axis=1, bitorder="little")
        stat += bits[:, f0].sum(axis=1).astype(float) - bits[:, f1].sum(axis=1)
    return stat


def _dbf_skipping(eps):
    class MemoSkipped(DBitFlipPM):
        """The fault: the memo it is given is ignored; every report draws fresh buckets and
        bits."""

        def privatize(self, values, *, memo=None, **kwargs):
            return super().privatize(values, memo=MemoryMemo(), **kwargs)

    return MemoSkipped(domain_size=DBF_K, n_buckets=DBF_K, n_sampled=DBF_D, epsilon_inf=eps,
                       codebook_seed=RAPPOR_SEED)


def _dbf_tau_draw(mech, eps, side, size, gen):
    """``TAU`` reports of bucket ``side``: the bits sent for bucket 0 minus those for 1."""
    x = np.full(size, side, dtype=np.int64)
    memo = MemoryMemo()
    stat = np.zeros(size)
    for _ in range(TAU):
        r = mech.privatize(x, memo=memo, rng=gen)
        stat += (r == 1).sum(axis=1).astype(float) - (r == 3).sum(axis=1)
    return stat


def _memo_skipped(base: Channel, build, draw, cls_name: str) -> Channel:
    """``control:<name>-memo-skipped`` of the permanent channel ``base``, audited empirically
    over ``TAU`` reports against ``epsilon_inf``."""
    name = base.name[: -len("-permanent")]
    return replace(
        base, name=f"control:{name}-memo-skipped", kind="empirical", build=build,
        draw=draw, law=None, sample=None, control_of=base.name, expect_violation=True,
        description=f"{cls_name} with the memo skipped (a fresh permanent response per "
                    f"report): {TAU} reports of one value, claim epsilon_inf")


@channels_of(LongitudinalRAPPOR)
def _rappor_channels(epsilon):
    """The exact channels of full RAPPOR (module docstring) and its control."""
    permanent = Channel(
        "rappor-longitudinal-permanent",
        f"LongitudinalRAPPOR permanent (memoized) response, k = {RAPPOR_K} bits (all "
        f"{2 ** RAPPOR_K} outputs), h = {RAPPOR_H}, D = {RAPPOR_D}; claim epsilon_inf",
        epsilon, _rappor_permanent,
        law=lambda mech, eps, ids: rappor_law(mech, "permanent", ids),
        sample=_rappor_sample_permanent, output_key=_rappor_key, describe=_rappor_describe)
    return [
        permanent,
        Channel("rappor-longitudinal",
                f"LongitudinalRAPPOR one report (permanent f, then p = 1 - q), k = {RAPPOR_K}, "
                f"h = {RAPPOR_H}, D = {RAPPOR_D}; claim epsilon_1", epsilon, _rappor_report,
                law=lambda mech, eps, ids: rappor_law(mech, "report", ids),
                sample=_rappor_sample_report, output_key=_rappor_key,
                describe=_rappor_describe),
        _memo_skipped(permanent, _rappor_skipping, _rappor_tau_draw, "LongitudinalRAPPOR"),
    ]


@channels_of(DBitFlipPM)
def _dbitflip_channels(epsilon):
    """The exact channels of dBitFlipPM (module docstring) and its control."""
    n_out = math.comb(DBF_K, DBF_D) * 2 ** DBF_D
    permanent = Channel(
        "dbitflip-permanent",
        f"DBitFlipPM memoized response, k = {DBF_K} buckets, d = {DBF_D} (all {n_out} "
        "outputs); claim epsilon_inf", epsilon, _dbf_permanent,
        law=lambda mech, eps, ids: dbitflip_law(mech, "permanent", ids),
        sample=_dbf_sample_permanent, output_key=_dbf_key, describe=_dbf_describe)
    return [
        permanent,
        Channel("dbitflip",
                f"DBitFlipPM one report with output perturbation, k = {DBF_K}, d = {DBF_D}; "
                "claim epsilon_1", epsilon, _dbf_report,
                law=lambda mech, eps, ids: dbitflip_law(mech, "report", ids),
                sample=_dbf_sample_report, output_key=_dbf_key, describe=_dbf_describe),
        _memo_skipped(permanent, _dbf_skipping, _dbf_tau_draw, "DBitFlipPM"),
    ]
