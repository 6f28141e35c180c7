"""The audit's exact channels of LSPL and LSMP (memoized multi-attribute reports), and controls.

Each class over L-GRR and L-OSUE on two attributes (LSPL: 2 and 3 values,
LSMP: 3 and 3; all records as inputs), with ``epsilon_1 = epsilon_inf / 2``.
LSMP's two attributes have the same domain so that their laws are equal bit
for bit: every attribute's one-report ratio is ``e^epsilon_1`` exactly, and
with unequal domains the largest ratio would be reached, up to rounding, by
outputs of both attributes, a tie the audit's float and rational searches
for the witness could break differently. The laws are
built from the attribute oracles' exact laws of :mod:`._channels`
(``R_j``: one report, ``R2_j``: two reports of one value through one
permanent response, from the public ``(p1, q1, p2, q2)``):

- ``lspl-<oracle>``: one report, claim ``epsilon_1``:
  ``P[y | x] = prod_j R_j[x_j, y_j]`` (each at ``epsilon_1 / A``);
- ``lspl-<oracle>-rounds``: two reports of one record through one memo, claim
  ``epsilon_inf``: ``prod_j R2_j[x_j, (y_j, y'_j)]``;
- ``lsmp-<oracle>``: one report, claim ``epsilon_1``:
  ``P[(j, y) | x] = R_j[x_j, y] / A``;
- ``lsmp-<oracle>-rounds``: two reports through one memo, claim
  ``epsilon_inf``: the attribute is memoized, so both name the same ``j``:
  ``P[(j, (y, y')) | x] = R2_j[x_j, (y, y')] / A``.

The negative controls ``control:lspl-lgrr-memo-skipped`` and
``control:lsmp-lgrr-memo-skipped`` draw fresh permanent responses (and, for
LSMP, a fresh attribute) every round and are audited empirically over
:data:`~._channels.TAU` reports of one record against ``epsilon_inf``; the
statistic is the number of report parts showing 0 minus those showing 1.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from ..channels import Channel, ExactLaw, channels_of
from ._channels import RATIO, TAU, _key, report_law
from .memo import MemoryMemo
from .multidim import LSMP, LSPL

__all__ = ["LONGITUDINAL_MULTIDIM_DOMAIN", "LSMP_DOMAIN"]

#: the audits' domain sizes: 2 x 3 = 6 records (LSPL), 3 x 3 = 9 (LSMP: module docstring)
LONGITUDINAL_MULTIDIM_DOMAIN = (2, 3)
LSMP_DOMAIN = (3, 3)
_SEED = 20240622


def _domain(cls) -> tuple:
    return LSMP_DOMAIN if cls is LSMP else LONGITUDINAL_MULTIDIM_DOMAIN


def _builder(cls, oracle: str, *, claim_is_inf: bool):
    def build(eps):
        e_inf, e_1 = (eps, RATIO * eps) if claim_is_inf else (eps / RATIO, eps)
        return cls(domain_sizes=_domain(cls), epsilon_inf=e_inf, epsilon_1=e_1,
                   oracle=oracle, codebook_seed=_SEED)
    return build


def _law(rounds: int):
    def law(mech, eps, ids) -> ExactLaw:
        ids = np.atleast_1d(np.asarray(ids, dtype=np.uint64))
        per = [report_law(o, rounds, ids[:1]) for o in mech.oracles]
        inputs = list(itertools.product(*[range(k) for k in mech.domain_sizes]))
        A = mech.n_attributes
        if isinstance(mech, LSMP):
            outputs = [(j, y) for j in range(A) for y in per[j].outputs]
            rows = [np.concatenate([per[j].probs[0, x[j]] / A for j in range(A)])
                    for x in inputs]
        else:
            outputs = list(itertools.product(*[p.outputs for p in per]))
            rows = []
            for x in inputs:
                row = np.ones(1)
                for j in range(A):
                    row = np.outer(row, per[j].probs[0, x[j]]).ravel()
                rows.append(row)
        table = np.array(rows)
        probs = np.broadcast_to(table, (ids.shape[0],) + table.shape).copy()
        return ExactLaw(inputs, outputs, ids, probs,
                        note=f"{rounds} report(s) of one record from the attribute oracles' "
                             "laws (p1, q1, p2, q2), binary64, exact rationals")
    return law


def _report_key(mech, row):
    """One report as the law's key: per-attribute keys (LSPL) or ``(j, key)`` (LSMP)."""
    if isinstance(mech, LSMP):
        if mech.unary:
            j = int(row[0]) | (int(row[1]) << 8)
            return j, _key(mech.oracles[j], row[2:2 + mech.n_bytes[j]])
        j = int(row[0])
        return j, _key(mech.oracles[j], row[1])
    keys, start = [], 0
    for j, o in enumerate(mech.oracles):
        width = mech.n_bytes[j] if mech.unary else 1
        part = row[start:start + width]
        keys.append(_key(o, part if mech.unary else part[0]))
        start += width
    return tuple(keys)


def _sample(rounds: int):
    def sample(mech, eps, xs, ids, gen):
        records = np.asarray(xs, dtype=np.int64).reshape(-1, mech.n_attributes)
        memo, ids = MemoryMemo(), np.asarray(ids, dtype=np.uint64)
        reports = [mech.privatize(records, memo=memo, identities=ids, rng=gen)
                   for _ in range(rounds)]
        keys = [[_report_key(mech, r) for r in rep] for rep in reports]
        if rounds == 1:
            return keys[0]
        out = []
        for i in range(records.shape[0]):
            first, second = keys[0][i], keys[1][i]
            if isinstance(mech, LSMP):
                # a second report about another attribute has no key in the law: it fails
                out.append((first[0], (first[1], second[1])) if first[0] == second[0]
                           else ("another attribute", first, second))
            else:
                out.append(tuple(zip(first, second)))
        return out
    return sample


def _identity(key):
    return key


def _describe(mech) -> str:
    return (f"epsilon_inf={mech.epsilon_inf:g}, epsilon_1={mech.epsilon_1:g}, "
            f"oracle={mech.oracle}, A={mech.n_attributes}")


def _channels(cls, prefix: str, epsilon: float) -> list:
    out = []
    for oracle in ("LGRR", "LOSUE"):
        name = f"{prefix}-{oracle.lower()}"
        what = f"{cls.__name__} over {oracle}, domains {_domain(cls)}"
        out.append(Channel(name, f"{what}, one report; claim epsilon_1", epsilon,
                           _builder(cls, oracle, claim_is_inf=False), law=_law(1),
                           sample=_sample(1), output_key=_identity, describe=_describe))
        out.append(Channel(f"{name}-rounds", f"{what}, 2 reports of one record through one "
                           "memo; claim epsilon_inf", epsilon,
                           _builder(cls, oracle, claim_is_inf=True), law=_law(2),
                           sample=_sample(2), output_key=_identity, describe=_describe))
    rounds = out[1]
    out.append(replace(
        rounds, name=f"control:{prefix}-lgrr-memo-skipped", kind="empirical",
        build=_skipping(cls), draw=_tau_draw, law=None, sample=None, control_of=rounds.name,
        expect_violation=True,
        description=f"{cls.__name__} over LGRR with the memo skipped (fresh permanent "
                    f"responses every round): {TAU} reports of one record, claim epsilon_inf"))
    return out


def _skipping(cls):
    def make(eps):
        class MemoSkipped(cls):  # type: ignore[misc, valid-type]
            """The fault: the memo it is given is ignored, every round draws afresh."""

            def privatize(self, data, *, memo=None, **kwargs):
                return super().privatize(data, memo=MemoryMemo(), **kwargs)

        return MemoSkipped(domain_sizes=_domain(cls), epsilon_inf=eps,
                           epsilon_1=RATIO * eps, oracle="LGRR", codebook_seed=_SEED)
    return make


def _tau_draw(mech, eps, side, size, gen):
    """``TAU`` reports of the record all ``side`` by ``size`` users through one memo.

    The statistic: report parts showing 0 minus parts showing 1, over the rounds.
    """
    x = np.full((size, mech.n_attributes), side, dtype=np.int64)
    memo = MemoryMemo()
    stat = np.zeros(size)
    for _ in range(TAU):
        reports = mech.privatize(x, memo=memo, rng=gen)
        values = reports[:, 1:] if isinstance(mech, LSMP) else reports
        stat += (values == 0).sum(axis=1) - (values == 1).sum(axis=1)
    return stat


@channels_of(LSPL)
def _lspl_channels(epsilon):
    return _channels(LSPL, "lspl", epsilon)


@channels_of(LSMP)
def _lsmp_channels(epsilon):
    return _channels(LSMP, "lsmp", epsilon)
