"""The audit's channels of the memoized protocols (L-GRR, L-OUE, ...), and their control.

Three exact channels per protocol, on ``D = 3`` symbols, with
``epsilon_1 = epsilon_inf / 2``:

* ``<name>-permanent``: the memoized permanent response, claimed at
  ``epsilon_inf``; its law is the first round's (GRR over the symbols, or
  OUE / SUE over all ``2^D`` bit vectors) from the protocol's ``(p1, q1)``;
  the sampler check reads the responses the protocol stored in its memo;
* ``<name>``: one report (permanent, then instantaneous), claimed at
  ``epsilon_1``: ``P[x, y] = sum_b P1[x, b] P2[b, y]``, with the
  instantaneous law ``P2`` from ``(p2, q2)`` (GRR, or every bit kept with
  ``p2`` when set and raised with ``q2`` when clear);
* ``<name>-rounds``: :data:`ROUNDS` reports of one unchanged value through
  one memo, claimed at ``epsilon_inf``:
  ``P[x, (y_1, y_2)] = sum_b P1[x, b] P2[b, y_1] P2[b, y_2]``.

The laws are computed here from the protocol's public probabilities, not
by its sampler, and audited in rational arithmetic
(:func:`fastldp.audit.exact.audit_law`); one report's largest ratio is
``e^epsilon_1`` to rounding (the protocols are calibrated at the edge).
Each class answers ``channels(epsilon)`` with what is registered here
(:func:`fastldp.channels.channels_of`).

The negative control ``control:<name>-memo-skipped`` draws a fresh permanent
response for every report (no memo) and is audited empirically over
:data:`TAU` reports of one unchanged value against the claim
``epsilon_inf``: the statistic is ``#reports showing symbol 0 - #reports
showing symbol 1`` (bit 0 minus bit 1 summed over the reports for the unary
protocols), the log-likelihood ratio of independent reports up to a
factor. With a memo the reports cannot be told apart beyond
``epsilon_inf``; without, ``TAU`` reports at ``epsilon_1`` each reach far
beyond it.
"""

from __future__ import annotations

import itertools
import math
from dataclasses import replace

import numpy as np

from ..channels import Channel, ExactLaw, channels_of
from .memo import MemoryMemo
from .protocols import LGRR, LOSUE, LOUE, LSOUE, LSUE

__all__ = ["permanent_law", "report_law", "PROTOCOLS", "ROUNDS", "TAU", "LONGITUDINAL_D"]

#: symbols of the audits (the unary protocols enumerate 2^D bit vectors per report)
LONGITUDINAL_D = 3
#: reports of one value in the exact ``-rounds`` channel
ROUNDS = 2
#: reports of one value in the memo-skipped control's empirical audit
TAU = 10
#: epsilon_1 / epsilon_inf in the audits (feasible for every protocol: L-OUE and L-SOUE
#: reach at least 2/3 of epsilon_inf)
RATIO = 0.5
#: channel name -> the protocol's class
PROTOCOLS = {"l-grr": LGRR, "l-oue": LOUE, "l-osue": LOSUE, "l-sue": LSUE, "l-soue": LSOUE}


def _cls(name):
    return PROTOCOLS[name]


def _builder(name, *, claim_is_inf: bool):
    def build(eps):
        e_inf, e_1 = (eps, RATIO * eps) if claim_is_inf else (eps / RATIO, eps)
        return _cls(name)(domain_size=LONGITUDINAL_D, epsilon_inf=e_inf, epsilon_1=e_1,
                          codebook_seed=20240621, n_threads=1)
    return build


def _is_grr(mech) -> bool:
    return isinstance(mech, LGRR)


def _outputs(mech):
    D = mech.domain_size
    return list(range(D)) if _is_grr(mech) else list(itertools.product((0, 1), repeat=D))


def _factors(mech, p, q, a, y) -> list:
    """The factors of one round's probability of output ``y`` on input ``a``.

    GRR: ``p`` when ``y = a``, else ``q``. Unary (bit vectors): per bit of
    ``y``, ``p`` or ``1 - p`` where ``a`` has a 1, ``q`` or ``1 - q`` where it
    has a 0.
    """
    if _is_grr(mech):
        return [p if y == a else q]
    return [(p if av else q) if yv else (1.0 - p if av else 1.0 - q) for av, yv in zip(a, y)]


def _probability(factor_lists) -> float:
    """``sum_b prod(factors_b)``, in a canonical order.

    The factors of a product are multiplied in sorted order and the terms
    summed by :func:`math.fsum` (correctly rounded), so two entries that are
    equal in exact arithmetic by symmetry (one symbol's ratio against
    another, in either direction) are equal bit for bit: the sampler check
    needs its witness event's probabilities to repeat exactly.
    """
    return math.fsum(math.prod(sorted(f)) for f in factor_lists)


def _inputs(mech) -> list:
    D = mech.domain_size
    return list(range(D)) if _is_grr(mech) else [tuple(int(v == x) for v in range(D))
                                                  for x in range(D)]


def permanent_law(mech, identities=(0,)) -> ExactLaw:
    """The law of the memoized permanent response (the first round at ``epsilon_inf``)."""
    ids = np.atleast_1d(np.asarray(identities)).astype(np.uint64)
    outs = _outputs(mech)
    law = np.array([[_probability([_factors(mech, mech.p1, mech.q1, a, b)]) for b in outs]
                    for a in _inputs(mech)])
    probs = np.broadcast_to(law, (ids.shape[0],) + law.shape).copy()
    return ExactLaw(list(range(mech.domain_size)), outs, ids, probs,
                    note="the first round's law from (p1, q1), binary64, exact rationals")


def report_law(mech, rounds: int = 1, identities=(0,)) -> ExactLaw:
    """The joint law of ``rounds`` reports of one value through one permanent response.

    ``P[x, (y_1 .. y_r)] = sum_b P1[x, b] prod_t P2[b, y_t]``.
    """
    ids = np.atleast_1d(np.asarray(identities)).astype(np.uint64)
    outs = _outputs(mech)
    joint = list(itertools.product(outs, repeat=rounds))
    law = np.array([[_probability(
        [_factors(mech, mech.p1, mech.q1, a, b)
         + [f for y in ys for f in _factors(mech, mech.p2, mech.q2, b, y)] for b in outs])
        for ys in joint] for a in _inputs(mech)])
    probs = np.broadcast_to(law, (ids.shape[0],) + law.shape).copy()
    keys = [ys[0] for ys in joint] if rounds == 1 else joint
    return ExactLaw(list(range(mech.domain_size)), keys, ids, probs,
                    note=f"{rounds} report(s) of one value: sum_b P1[x, b] prod_t P2[b, y_t] "
                         "from (p1, q1, p2, q2), binary64, exact rationals")


def _key(mech, row):
    if _is_grr(mech):
        return int(row)
    bits = np.unpackbits(np.asarray(row, dtype=np.uint8), bitorder="little")
    return tuple(int(b) for b in bits[:mech.domain_size])


def _sample_permanent(mech, eps, xs, ids, gen):
    memo = MemoryMemo()
    x = np.asarray(xs, dtype=np.int64)
    mech.privatize(x, memo=memo, identities=ids, rng=gen)
    perm, found = mech.permanent_responses(x, memo=memo, identities=ids)
    assert found.all()
    return [_key(mech, r) for r in perm]


def _sample_reports(mech, eps, xs, ids, gen):
    reports = mech.privatize(np.asarray(xs, dtype=np.int64), memo=MemoryMemo(), identities=ids,
                             rng=gen)
    return [_key(mech, r) for r in reports]


def _sample_rounds(mech, eps, xs, ids, gen):
    memo, x = MemoryMemo(), np.asarray(xs, dtype=np.int64)
    rounds = [mech.privatize(x, memo=memo, identities=ids, rng=gen) for _ in range(ROUNDS)]
    return [tuple(_key(mech, r[i]) for r in rounds) for i in range(x.shape[0])]


def _identity(key):
    return key


def _describe(mech) -> str:
    return (f"epsilon_inf={mech.epsilon_inf:g}, epsilon_1={mech.epsilon_1:g}; p1={mech.p1:.6g}, "
            f"q1={mech.q1:.6g}, p2={mech.p2:.6g}, q2={mech.q2:.6g}")


def _protocol_channels(name: str, epsilon: float) -> list[Channel]:
    """The three exact channels of protocol ``name`` (module docstring) and its control."""
    D = LONGITUDINAL_D
    cls_name = PROTOCOLS[name].__name__
    outputs = f"{D} symbols" if name == "l-grr" else f"all {2 ** D} bit vectors"
    rounds = Channel(f"{name}-rounds", f"{cls_name}, {ROUNDS} reports of one value through one "
                     f"memo, D = {D}; claim epsilon_inf", epsilon,
                     _builder(name, claim_is_inf=True),
                     law=lambda mech, eps, ids: report_law(mech, ROUNDS, ids),
                     sample=_sample_rounds, output_key=_identity, describe=_describe)
    return [
        Channel(f"{name}-permanent", f"{cls_name} permanent (memoized) response, D = {D}, "
                f"{outputs}; claim epsilon_inf", epsilon, _builder(name, claim_is_inf=True),
                law=lambda mech, eps, ids: permanent_law(mech, ids),
                sample=_sample_permanent, output_key=_identity, describe=_describe),
        Channel(name, f"{cls_name} one report (permanent then instantaneous), D = {D}, "
                f"{outputs}; claim epsilon_1", epsilon, _builder(name, claim_is_inf=False),
                law=lambda mech, eps, ids: report_law(mech, 1, ids),
                sample=_sample_reports, output_key=_identity, describe=_describe),
        rounds,
        _memo_skipped(name, rounds),
    ]


def _skipping_builder(name):
    def make(eps):
        class MemoSkipped(_cls(name)):  # type: ignore[misc, valid-type]
            """The fault: the memo it is given is ignored, every report draws a fresh
            permanent response."""

            def privatize(self, values, *, memo=None, **kwargs):
                return super().privatize(values, memo=MemoryMemo(), **kwargs)

        return MemoSkipped(domain_size=LONGITUDINAL_D, epsilon_inf=eps, epsilon_1=RATIO * eps,
                           codebook_seed=20240621, n_threads=1)
    return make


def _tau_draw(mech, eps, side, size, gen):
    """``TAU`` reports of symbol ``side`` by ``size`` users through one memo.

    The statistic is ``#reports showing 0 - #reports showing 1`` (bits 0 and 1
    for the unary protocols).
    """
    x = np.full(size, side, dtype=np.int64)
    memo = MemoryMemo()
    stat = np.zeros(size)
    for _ in range(TAU):
        reports = mech.privatize(x, memo=memo, rng=gen)
        if _is_grr(mech):
            stat += (reports == 0).astype(float) - (reports == 1)
        else:
            stat += (reports[:, 0] & 1).astype(float) - ((reports[:, 0] >> 1) & 1)
    return stat


def _memo_skipped(name: str, base: Channel) -> Channel:
    """``control:<name>-memo-skipped``: a fresh permanent response per report, audited
    empirically over ``TAU`` reports of one value against ``epsilon_inf``."""
    return replace(
        base, name=f"control:{name}-memo-skipped", kind="empirical",
        build=_skipping_builder(name), draw=_tau_draw, law=None, sample=None,
        control_of=f"{name}-rounds", expect_violation=True,
        description=f"{PROTOCOLS[name].__name__} with the memo skipped (a fresh permanent "
                    f"response per report): {TAU} reports of one value, claim epsilon_inf")


def _register(name: str) -> None:
    @channels_of(PROTOCOLS[name])
    def protocol_channels(epsilon):
        return _protocol_channels(name, epsilon)


for _name in PROTOCOLS:
    _register(_name)
