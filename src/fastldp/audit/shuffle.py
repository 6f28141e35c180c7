"""Empirical (eps, delta) audits of the shuffle protocols of :mod:`fastldp.regression`.

The shuffle protocols are not local randomizers: their guarantee is on the
*analyzer's view* - the shuffled multiset of every party's messages - and it
is an ``(eps, delta)`` guarantee between neighbouring datasets that differ in
one party's input. The audit draws that view many times under two such
datasets, counts a distinguishing event ``S`` of a statistic of the view
(chosen on a separate pilot sample, :func:`fastldp.audit.empirical.threshold_test`)
and reports, with Clopper-Pearson bounds ``p_lo <= P(S | D)`` and
``q_hi >= P(S | D')``,

    eps >= ln((p_lo - delta) / q_hi),

which holds with probability ``1 - alpha`` whenever the view is
``(eps, delta)``-DP (``P(S | D) <= e^eps P(S | D') + delta``). A claim is
refuted when that bound exceeds the claimed ``eps``.

Audited views
-------------
* ``shuffled-sum``: :class:`~fastldp.regression.ShuffledVectorSum` with
  ``n = SUM_PARTIES`` parties and one coordinate, ``norm_bound = 1``. In
  ``D`` party 0 holds ``+1`` and in ``D'`` it holds ``-1`` (the replacement
  the default sensitivity ``2 norm_bound`` covers); the others hold 0. The
  statistic is what the analyzer computes from the shuffled shares, the
  decoded noisy sum. The claim is the plan's ``(epsilon, delta)`` (``delta =
  delta_noise + delta_shares``).
* ``shuffled-bits``: :class:`~fastldp.regression.ShuffledBits` with
  ``d = 2`` streams and ``n = BITS_PARTIES`` parties: in ``D`` every party
  holds index 0, in ``D'`` party 0 holds index 1 (two streams change). The
  statistic is the difference of the two debiased counts; the claim is the
  object's ``(epsilon, delta)``.

Both run the protocol's own code (:meth:`ShuffledVectorSum.encode`,
:func:`~fastldp.regression.shuffle.shuffle`, :meth:`ShuffledVectorSum.analyze`,
:meth:`ShuffledBits.counts`). For speed, ``T`` independent one-coordinate
summations are run as the ``T`` coordinates of one :meth:`encode` call with
the *one-coordinate* plan: every coordinate has its own noise, shares and
shuffler, exactly as in :meth:`ShuffledVectorSum.sum`, so each is one
draw of the audited view (only the per-party l2 check, which would see the
``T`` trials as one long vector, is widened).

What such an audit can and cannot see
-------------------------------------
A distinguishing test on ``N`` draws sees events of probability about
``1 / N`` at best, while these protocols are calibrated to ``delta ~ 1e-5``
by noise that is close to Gaussian: at ``eps = 1`` the honest views are
about ``0.2``-GDP, and even a view built at ``1.5 eps`` has a privacy-loss
distribution whose ``e^eps`` tail lies far below ``1 / N``. No sampled test
of ``10^5`` draws can refute ``(eps, 1e-5)`` for it, so the negative
controls here are under-noised by :data:`SHUFFLE_CONTROL_FACTOR` (noise
calibrated at that multiple of ``eps``): that is the scale of fault this
audit detects. The honest lower bounds are correspondingly far below the
claim; the audit refutes, it does not prove.
"""

from __future__ import annotations

import copy
import math

import numpy as np

__all__ = [
    "SUM_PARTIES", "BITS_PARTIES", "SHUFFLE_DELTA", "SHUFFLE_CONTROL_FACTOR",
    "shuffled_sum", "shuffled_sum_claim", "shuffled_sum_draw",
    "shuffled_bits", "shuffled_bits_claim", "shuffled_bits_draw",
    "undernoised_sum", "undernoised_bits",
]

#: parties of the audited summation (shares per party: 22 at eps = 1, delta = 1e-5)
SUM_PARTIES = 16
#: parties of the audited shuffled-bits streams
BITS_PARTIES = 64
#: delta of the audited protocols
SHUFFLE_DELTA = 1e-5
#: the negative controls calibrate their noise at this multiple of the claimed eps
SHUFFLE_CONTROL_FACTOR = 6.0
_CHUNK = 8192


# ---------------------------------------------------------------- summation
def shuffled_sum(eps):
    from ..regression import ShuffledVectorSum

    return ShuffledVectorSum(epsilon=eps, delta=SHUFFLE_DELTA, norm_bound=1.0)


def shuffled_sum_claim(mech) -> tuple:
    """``(epsilon, delta)`` that the plan of the audited release states."""
    p = mech.plan(SUM_PARTIES, 1)
    return float(p["epsilon"]), float(p["delta"])


def shuffled_sum_draw(mech, eps, side, size, gen):
    """``size`` decoded sums (real units) of the shuffled shares; party 0 holds ``+1`` or ``-1``."""
    from ..regression.shuffle import shuffle

    n = SUM_PARTIES
    plan = mech.plan(n, 1)
    out = []
    for start in range(0, size, _CHUNK):
        T = min(_CHUNK, size - start)
        v = np.zeros((n, T))
        v[0] = 1.0 if side == 0 else -1.0
        wide = copy.copy(mech)                       # T trials as T coordinates: widen
        wide.norm_bound = mech.norm_bound * math.sqrt(T) * (1 + 1e-9)   # only the l2 check
        shares, p = wide.encode(v, gen, plan)
        streams = shuffle(shares.transpose(1, 0, 2).reshape(T, n * p["shares"]), gen)
        out.append(type(mech).analyze(streams, p["modulus"]) / p["scale"])
    return np.concatenate(out)


def undernoised_sum(eps):
    """A summation whose Skellam noise is calibrated at ``SHUFFLE_CONTROL_FACTOR * eps``;
    its plan still states ``eps``."""
    from ..regression import ShuffledVectorSum
    from ..regression.shuffle import skellam_variance

    class UnderNoisedSum(ShuffledVectorSum):
        def plan(self, n_parties, dim):
            p = super().plan(n_parties, dim)
            p["mu"] = skellam_variance(SHUFFLE_CONTROL_FACTOR * self.epsilon, p["delta_noise"],
                                       p["l2"], p["l1"])
            return p

    return UnderNoisedSum(epsilon=eps, delta=SHUFFLE_DELTA, norm_bound=1.0)


# ---------------------------------------------------------------- shuffled bits
def shuffled_bits(eps):
    from ..regression import ShuffledBits

    return ShuffledBits(epsilon=eps, delta=SHUFFLE_DELTA, d=2)


def shuffled_bits_claim(mech) -> tuple:
    return float(mech.epsilon), float(mech.delta)


def shuffled_bits_draw(mech, eps, side, size, gen):
    """``size`` views' statistic ``c_1 - c_0`` (debiased counts); party 0 holds index ``side``."""
    idx = np.zeros(BITS_PARTIES, dtype=np.int64)
    idx[0] = side
    out = np.empty(size)
    for t in range(size):
        c, _ = mech.counts(idx, gen)
        out[t] = c[1] - c[0]
    return out


def undernoised_bits(eps):
    """Shuffled bits whose flip probability is calibrated at ``SHUFFLE_CONTROL_FACTOR * eps``."""
    from ..regression import ShuffledBits
    from ..regression.shuffle import flip_probability

    class UnderNoisedBits(ShuffledBits):
        def gamma(self, n_parties):
            return flip_probability(n_parties, SHUFFLE_CONTROL_FACTOR * self.epsilon / 2,
                                    self.delta / 2)

    return UnderNoisedBits(epsilon=eps, delta=SHUFFLE_DELTA, d=2)
