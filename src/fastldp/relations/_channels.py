"""The audit's channels of JPRS and padded relation sampling, and their controls.

Each mechanism on a tiny table, with its exact law written here from public
parameters (the formulas below) and its sampler; the negative controls are
*sampler faults*, subclasses whose ``privatize`` spends
:data:`~fastldp.channels.LAW_FACTOR` times the budget while their public
probabilities stay honest (:mod:`fastldp.audit` adds a law fault of each
channel). The classes answer ``channels(epsilon)`` with what is registered
here (:func:`fastldp.channels.channels_of`).

The laws (``e = e^eps``):

* P-RS: the padded set's slot is uniform over ``k``, so
  ``P(y | E) = (1/k) (sum_{e in E} O(y | e) + sum_{u = |E|}^{k-1} O(y | p + u))``
  with ``O`` the oracle's law over ``D = p + k`` symbols
  (:func:`fastldp.oracles._laws.oracle_law`).
* JPRS: one bit, ``P(+1 | E) = (1 + tanh(eps/2) c_k(|E|) sgn0(sum_E R_i(e))) / 2``
  from :meth:`JPRS.output_probabilities`, for every set of at most ``k`` pairs.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np
import scipy.sparse as sp

from ..channels import LAW_FACTOR, Channel, ExactLaw, as_identities, channels_of
from ..oracles._laws import oracle_law
from .jprs import JPRS
from .padded_sampling import PaddedRelationSampling

__all__ = ["relation_sets", "jprs_law", "padded_law"]


def relation_sets(shape, k: int) -> list:
    """Every set of at most ``k`` pairs of a ``d1 x d2`` table, as ``(m, 2)`` int64 arrays."""
    d1, d2 = shape
    pairs = [(r, c) for r in range(d1) for c in range(d2)]
    out = []
    for m in range(k + 1):
        for combo in itertools.combinations(pairs, m):
            out.append(np.array(combo, dtype=np.int64).reshape(m, 2))
    return out


def jprs_law(mech, eps: float, identities, csr=None) -> ExactLaw:
    """JPRS given its codebook, from :meth:`JPRS.output_probabilities` (outputs ``-1, +1``).

    ``csr``, when given, turns a list of sets into the sparse matrix the
    mechanism also accepts (faster for many identities).
    """
    ids = as_identities(identities)
    sets = relation_sets(mech.shape, mech.k)
    plus = np.empty((ids.shape[0], len(sets)))
    for j, s in enumerate(sets):
        rel = [s] * ids.shape[0]
        plus[:, j] = mech.output_probabilities(rel if csr is None else csr(rel), eps, identities=ids)
    probs = np.stack([1.0 - plus, plus], axis=2)
    return ExactLaw(sets, [-1, 1], ids, probs)


def padded_law(mech, eps: float, identities) -> ExactLaw:
    """P-RS: uniform slot of the padded set, then the oracle over ``p + k`` symbols."""
    ids = as_identities(identities)
    base = oracle_law(mech.oracle_name, mech.domain_size, eps, mech.codebook_seed, ids)
    sets = relation_sets(mech.shape, mech.k)
    d2 = mech.shape[1]
    probs = np.empty((ids.shape[0], len(sets), base.probs.shape[2]))
    for j, s in enumerate(sets):
        items = list(s[:, 0] * d2 + s[:, 1]) + [mech.p + u for u in range(s.shape[0], mech.k)]
        probs[:, j] = base.probs[:, items, :].sum(axis=1) / mech.k
    return ExactLaw(sets, base.outputs, ids, probs)


def _csr(sets, width: int, d2: int) -> sp.csr_matrix:
    sizes = np.array([s.shape[0] for s in sets], dtype=np.int64)
    cols = (np.concatenate([s[:, 0] * d2 + s[:, 1] for s in sets]) if sizes.sum()
            else np.zeros(0, dtype=np.int64))
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    return sp.csr_matrix((np.ones(cols.shape[0]), cols, indptr), shape=(len(sets), width))


def _sample(mech, eps, xs, ids, gen):
    return mech.privatize(_csr(xs, mech.p, mech.shape[1]), epsilons=eps, identities=ids, rng=gen)


def _louder(cls):
    """``cls`` whose ``privatize`` spends ``LAW_FACTOR`` times the budget (its law honest)."""
    class UnderNoised(cls):  # type: ignore[valid-type, misc]
        def privatize(self, relations, epsilons, **kwargs):
            return super().privatize(relations, epsilons=LAW_FACTOR * np.asarray(epsilons),
                                     **kwargs)

    UnderNoised.__name__ = UnderNoised.__qualname__ = f"UnderNoised{cls.__name__}"
    return UnderNoised


def _jprs(cls):
    def build(eps):
        return cls(shape=(2, 3), k=2, s=1, codebook_seed=20240611, n_threads=1)
    return build


def _jprs_law(mech, eps, ids):
    return jprs_law(mech, eps, ids, csr=lambda sets: _csr(sets, mech.p, mech.shape[1]))


@channels_of(JPRS)
def _jprs_channels(epsilon):
    ch = Channel("jprs", "JPRS one bit, 2x3 table, k=2, all 22 sets", epsilon, _jprs(JPRS),
                 law=_jprs_law, sample=_sample, keyed=True)
    return [ch, replace(ch, control_of="jprs", name="control:jprs-sampler",
                        build=_jprs(_louder(JPRS)), expect_violation=True,
                        description="JPRS whose privatize uses 1.5 eps (law honest)")]


def _prs(oracle, cls=PaddedRelationSampling):
    def build(eps):
        return cls(shape=(2, 2), k=2, s=1, oracle=oracle, codebook_seed=20240612, n_threads=1)
    return build


@channels_of(PaddedRelationSampling)
def _prs_channels(epsilon):
    grr = Channel("p-rs-grr", "P-RS over GRR, 2x2 table, k=2 (D = 6)", epsilon, _prs("grr"),
                  law=padded_law, sample=_sample)
    return [
        grr,
        Channel("p-rs-olh", "P-RS over OLH, 2x2 table, k=2", epsilon, _prs("olh"),
                law=padded_law, sample=_sample, keyed=True),
        Channel("p-rs-hr", "P-RS over HR, 2x2 table, k=2 (K = 8)", epsilon, _prs("hr"),
                law=padded_law, sample=_sample),
        replace(grr, control_of="p-rs-grr", name="control:p-rs-grr-sampler",
                build=_prs("grr", _louder(PaddedRelationSampling)), expect_violation=True,
                description="P-RS-GRR whose privatize uses 1.5 eps (law honest)"),
    ]
