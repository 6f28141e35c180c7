"""The audit's channels of the heavy-hitter protocols (PEM, TreeHist, SFP), and their controls.

Each protocol's randomizer on tiny items, through the protocol object
itself: an identity reports one part (PEM: OLH of its item's prefix;
TreeHist: an HCMS-law report of the prefix at its level) or two (SFP: the
fragment with its puzzle piece, and the item), and the exact law is read
from the protocol's public channel per identity (``level_channel``,
``channel``), which the identity's public group or level selects. The
negative controls are sampler faults: the protocol keeping its hashed value
(PEM) or each part's bit (TreeHist, SFP) with the probability of
:data:`~fastldp.channels.LAW_FACTOR` times the budget while its published
channel stays honest. The classes answer ``channels(epsilon)`` with what is
registered here (:func:`fastldp.channels.channels_of`).
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from ..channels import LAW_FACTOR, Channel, ExactLaw, channels_of
from .pem import PEM
from .sfp import SFP
from .treehist import TreeHist

__all__ = ["PEM_ITEM_BITS", "TREEHIST_ITEM_BITS", "SFP_ITEM_BITS"]

#: PEM's audit: 3-bit items, g = 2 groups, eta = 1 (prefixes of 2 and 3 bits)
PEM_ITEM_BITS = 3
#: TreeHist's and SFP's audits: tiny items, one hash row of two columns per part
TREEHIST_ITEM_BITS = 3
SFP_ITEM_BITS = 4


def _pem(eps):
    return PEM(epsilon=eps, k=1, g=2, eta=1, item_bits=PEM_ITEM_BITS, codebook_seed=20240614,
               n_threads=1)


def _pem_law(mech, eps, ids):
    """Identity i reports OLH of its item's prefix of b_j(i) bits: row x is the row of x >> (m - b)."""
    ids = np.ascontiguousarray(ids, dtype=np.uint64)
    items = np.arange(2 ** mech.item_bits)
    probs = np.empty((ids.shape[0], items.shape[0], mech.n_buckets))
    for r, identity in enumerate(ids):
        b, level = mech.level_channel(int(identity))
        probs[r] = level[items >> (mech.item_bits - b)]
    return ExactLaw(items.tolist(), list(range(mech.n_buckets)), ids, probs)


def _sample(mech, eps, xs, ids, gen):
    return mech.privatize(np.asarray(xs, dtype=np.uint64), identities=ids, rng=gen)


def _treehist(eps):
    return TreeHist(epsilon=eps, k=1, eta=1, g=3, n_rows=1, n_columns=2,
                    item_bits=TREEHIST_ITEM_BITS, codebook_seed=20240615, n_threads=1)


def _sfp(eps):
    return SFP(epsilon=eps, k=1, oracle="hcms", fragment_share=0.5, fragment_bits=2,
               puzzle_bits=1, n_rows=1, n_columns=2, item_bits=SFP_ITEM_BITS,
               codebook_seed=20240615, n_threads=1)


def _sfp_cms(eps):
    return SFP(epsilon=eps, k=1, oracle="cms", fragment_share=0.625, fragment_bits=2,
               puzzle_bits=1, n_rows=1, n_columns=2, item_bits=SFP_ITEM_BITS,
               codebook_seed=20240615, n_threads=1)


def _sfp_cms_law(mech, eps, ids):
    """``mech.channel(i)`` per identity: ``P[x, o1 K + o2]``, ``o = j 2^m + s`` (CMS parts)."""
    ids = np.ascontiguousarray(ids, dtype=np.uint64)
    R, m = mech.n_rows, mech.n_columns
    part = [(j, s) for j in range(R) for s in range(2 ** m)]
    outputs = [a + b for a in part for b in part]
    items = np.arange(2 ** mech.item_bits)
    probs = np.stack([mech.channel(int(identity)) for identity in ids])
    return ExactLaw(items.tolist(), outputs, ids, probs)


def _six_key(r):
    return tuple(int(v) for v in r)


def _two_part_law(mech, eps, ids):
    """``mech.channel(i)`` per identity: ``P[x, o1 K + o2]``, ``o = 2 (j T + l) + (omega + 1) / 2``."""
    ids = np.ascontiguousarray(ids, dtype=np.uint64)
    R, T = mech.n_rows, mech.n_columns
    part = [(j, l, w) for j in range(R) for l in range(T) for w in (-1, 1)]
    outputs = [a + b for a in part for b in part]
    items = np.arange(2 ** mech.item_bits)
    cache: dict = {}
    probs = np.empty((ids.shape[0], items.shape[0], len(outputs)))
    for r, identity in enumerate(ids):
        group = int((mech.levels_of if hasattr(mech, "levels_of") else mech.positions_of)(
            np.array([identity], dtype=np.uint64))[0])
        if group not in cache:
            cache[group] = mech.channel(int(identity))
        probs[r] = cache[group]
    return ExactLaw(items.tolist(), outputs, ids, probs)


def _one_part_law(mech, eps, ids):
    """``mech.channel(i)`` per identity: ``P[x, o]``, ``o = 2 (j T + l) + (omega + 1) / 2``."""
    ids = np.ascontiguousarray(ids, dtype=np.uint64)
    R, T = mech.n_rows, mech.n_columns
    outputs = [(j, l, w) for j in range(R) for l in range(T) for w in (-1, 1)]
    items = np.arange(2 ** mech.item_bits)
    probs = np.stack([mech.channel(int(identity)) for identity in ids])
    return ExactLaw(items.tolist(), outputs, ids, probs)


# ----------------------------------------------------------------- sampler faults
def _undernoised_pem(eps):
    class UnderNoisedPEM(PEM):
        """Keeps the hashed prefix with the probability of 1.5 eps; level_channel stays honest."""

        def _privatize_codes(self, codes, identities, rng):
            honest, e = self.p, np.exp(LAW_FACTOR * self.epsilon)
            self.p = e / (e + self.n_buckets - 1)
            try:
                return super()._privatize_codes(codes, identities, rng)
            finally:
                self.p = honest

    return UnderNoisedPEM(epsilon=eps, k=1, g=2, eta=1, item_bits=3, codebook_seed=20240614,
                          n_threads=1)


def _undernoised_two_part(build):
    """TreeHist / SFP flipping each part's bit at 1.5 x the part's eps (law honest)."""

    def make(eps):
        mech = build(eps)
        honest = mech.part_epsilon
        privatize = mech._privatize_codes

        def loud(codes, identities, rng):
            mech.part_epsilon = LAW_FACTOR * honest
            try:
                return privatize(codes, identities, rng)
            finally:
                mech.part_epsilon = honest

        mech._privatize_codes = loud
        return mech

    return make


def _part_fault(ch: Channel) -> Channel:
    return replace(ch, control_of=ch.name, name=f"control:{ch.name}-sampler",
                   build=_undernoised_two_part(ch.build),
                   description=f"{ch.name} flipping each part's bit with the probability of "
                               "1.5 times the part's budget (law honest)", expect_violation=True)


@channels_of(PEM)
def _pem_channels(epsilon):
    ch = Channel("pem-olh", f"PEM: OLH of the item's prefix, {PEM_ITEM_BITS}-bit items, g = 2 "
                 "groups of 2- and 3-bit prefixes, per-identity hash and group", epsilon, _pem,
                 law=_pem_law, sample=_sample, keyed=True)
    return [ch, replace(ch, control_of="pem-olh", name="control:pem-olh-sampler",
                        build=_undernoised_pem, expect_violation=True,
                        description="PEM keeping its hashed prefix with the probability of "
                                    "1.5 eps (law honest)")]


@channels_of(TreeHist)
def _treehist_channels(epsilon):
    ch = Channel("treehist", f"TreeHist: one HCMS-law report at eps (the prefix at the "
                 f"identity's level), {TREEHIST_ITEM_BITS}-bit items, binary tree of 3 levels, "
                 "R = 1 x T = 2, all 4 (j, l, omega) outputs", epsilon,
                 _treehist, law=_one_part_law, sample=_sample, output_key=_six_key, keyed=True)
    return [ch, _part_fault(ch)]


@channels_of(SFP)
def _sfp_channels(epsilon):
    hcms = Channel("sfp", f"Apple's SFP: HCMS-law parts at eps/2 (fragment + puzzle piece at the "
                   f"identity's position, the item), {SFP_ITEM_BITS}-bit items, 2 positions of "
                   "2 bits, 1-bit puzzle, R = 1 x T = 2, all 16 outputs", epsilon, _sfp,
                   law=_two_part_law, sample=_sample, output_key=_six_key, keyed=True)
    cms = Channel("sfp-cms", f"Apple's SFP with CMS parts (its default): fragment + puzzle piece "
                  f"at 0.625 eps, the item at 0.375 eps, {SFP_ITEM_BITS}-bit items, 2 positions "
                  "of 2 bits, 1-bit puzzle, R = 1 x m = 2, all 16 (j, signs, j', signs') "
                  "outputs", epsilon, _sfp_cms, law=_sfp_cms_law, sample=_sample,
                  output_key=_six_key, keyed=True)
    return [hcms, cms, _part_fault(hcms), _part_fault(cms)]
