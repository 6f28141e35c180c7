"""Negative controls: deliberately under-noised copies that the audit must flag.

Two kinds of fault are planted, so that both halves of the audit are shown
to bite:

* *law faults* - the mechanism is built at a larger budget than it claims
  (``factor * eps``; for PrivKVM's round-1 channel, ``factor`` times its
  round budget): its exact law, read from its public parameters,
  exceeds ``e^eps`` and the exact audit fails (for continuous channels the
  distinguishing test does);
* *sampler faults* - the public parameters are honest but ``privatize`` draws
  with less noise than its law (a subclass, below): the exact law passes and
  only the sampler check can catch it;
* *noise faults* of the shuffle protocols - the summation's Skellam noise and
  the shuffled bits' flip probability calibrated at
  :data:`fastldp.audit.shuffle.SHUFFLE_CONTROL_FACTOR` times the claimed eps
  while the claim stays eps, and the summation's variance divided by 4;
* *protocol faults* of the shuffle protocols, which no order-free statistic
  shows: a shuffler that returns its input unpermuted (summation and bits),
  and shares left unmasked (every party sends ``m - 1`` zeros and its value);
* faults of the regression baselines' local randomizers and of a whole U2R
  fit (:mod:`fastldp.audit.regression`): the Laplace scale halved, k-ary
  randomized response keeping its input with the probability of ``2 eps``,
  U2R with its noise calibrated at a larger eps;
* *memo faults* of the longitudinal protocols: a client that skips its memo
  (a fresh permanent response per report), caught by an empirical audit of
  ``TAU`` reports of one value against ``epsilon_inf``
  (:mod:`fastldp.audit.longitudinal`).

Each control's ``expect_violation`` is True; :func:`fastldp.audit.audit_all`
with ``controls=True`` reports whether it was caught.
"""

from __future__ import annotations

from dataclasses import replace

import numpy as np

from .registry import Channel, channels

__all__ = ["negative_controls", "LAW_FACTOR"]

#: budget multiplier of the law faults
LAW_FACTOR = 1.5


def _undernoised_jprs(eps):
    from ..relations import JPRS

    class UnderNoisedJPRS(JPRS):
        """Samples at 1.5 eps; output_probabilities still tells the truth about eps."""

        def privatize(self, relations, epsilons, **kwargs):
            return super().privatize(relations, epsilons=LAW_FACTOR * np.asarray(epsilons), **kwargs)

    return UnderNoisedJPRS(shape=(2, 3), k=2, s=1, codebook_seed=20240611, n_threads=1)


def _undernoised_grr(eps):
    from ..oracles import GRR

    class UnderNoisedGRR(GRR):
        """Keeps the input with the probability of 1.5 eps; epsilon and channel() stay honest."""

        def perturb(self, values, eps, identities, rng):
            return super().perturb(values, LAW_FACTOR * eps, identities, rng)

    return UnderNoisedGRR(domain_size=5, epsilon=eps, codebook_seed=20240614, n_threads=1)


def _undernoised_sketch(name):
    """CMS / HCMS flipping with the probability of 1.5 eps; epsilon and the hashes stay honest."""
    def build(eps):
        from .. import oracles
        from .registry import SKETCH_SHAPE

        base = {"cms": oracles.CMS, "hcms": oracles.HCMS}[name]

        class UnderNoisedSketch(base):  # type: ignore[valid-type, misc]
            def perturb(self, values, eps, identities, rng):
                return super().perturb(values, LAW_FACTOR * eps, identities, rng)

        return UnderNoisedSketch(domain_size=5, epsilon=eps, codebook_seed=20240614,
                                 n_threads=1, **SKETCH_SHAPE)
    return build


def _undernoised_ss(eps):
    from .registry import SS_SUBSET_SIZE
    from ..oracles import SubsetSelection

    class UnderNoisedSS(SubsetSelection):
        """Holds its input with the probability of 1.5 eps; epsilon and channel() stay honest."""

        def perturb(self, values, eps, identities, rng):
            return super().perturb(values, LAW_FACTOR * eps, identities, rng)

    return UnderNoisedSS(domain_size=5, epsilon=eps, subset_size=SS_SUBSET_SIZE,
                         codebook_seed=20240614, n_threads=1)


def _undernoised_blh(eps):
    from ..oracles import BLH

    class UnderNoisedBLH(BLH):
        """Keeps its hashed bit with the probability of 1.5 eps; epsilon and channel() stay honest."""

        def perturb(self, values, eps, identities, rng):
            return super().perturb(values, LAW_FACTOR * eps, identities, rng)

    return UnderNoisedBLH(domain_size=5, epsilon=eps, codebook_seed=20240614, n_threads=1)


def _undernoised_the(eps):
    from ..oracles import THE

    class UnderNoisedTHE(THE):
        """Draws the bits of 1.5 eps; its epsilon, threshold and channel() stay honest."""

        def perturb(self, values, eps, identities, rng):
            return super().perturb(values, LAW_FACTOR * eps, identities, rng)

    return UnderNoisedTHE(domain_size=5, epsilon=eps, codebook_seed=20240614, n_threads=1)


def _undernoised_discrete_she(eps):
    from .registry import _discrete_she

    base = type(_discrete_she(eps))

    class UnderNoisedDiscreteSHE(base):  # type: ignore[valid-type, misc]
        """Draws its noise at 1.5 eps; its epsilon, scale and clamp stay honest."""

        def perturb(self, values, eps, identities, rng):
            return super().perturb(values, LAW_FACTOR * eps, identities, rng)

    from .registry import DISCRETE_SHE_CLAMP, DISCRETE_SHE_D

    return UnderNoisedDiscreteSHE(domain_size=DISCRETE_SHE_D, epsilon=eps,
                                  clamp=DISCRETE_SHE_CLAMP, codebook_seed=20240614)


def _undernoised_rappor(eps):
    from ..oracles import RAPPOR
    from .registry import RAPPOR_D, RAPPOR_SHAPE

    class UnderNoisedRAPPOR(RAPPOR):
        """Flips its Bloom bits with the probability of 1.5 eps; epsilon and f stay honest."""

        def perturb(self, values, eps, identities, rng):
            return super().perturb(values, LAW_FACTOR * eps, identities, rng)

    return UnderNoisedRAPPOR(domain_size=RAPPOR_D, epsilon=eps, codebook_seed=20240617,
                             n_threads=1, **RAPPOR_SHAPE)


def _undernoised_prs(eps):
    from ..relations import PaddedRelationSampling

    class UnderNoisedPRS(PaddedRelationSampling):
        """Reports the sampled item through the oracle at 1.5 eps."""

        def privatize(self, relations, epsilons, **kwargs):
            return super().privatize(relations, epsilons=LAW_FACTOR * np.asarray(epsilons), **kwargs)

    return UnderNoisedPRS(shape=(2, 2), k=2, s=1, oracle="grr", codebook_seed=20240612, n_threads=1)


def _half_scale_laplace(eps):
    from ..oracles.randomizers import Laplace

    class HalfScaleLaplace(Laplace):
        """Laplace noise of scale 1 / eps instead of 2 / eps (sensitivity 1 instead of 2)."""

        @property
        def scale(self):
            return 1.0 / self.epsilon

    return HalfScaleLaplace(epsilon=eps)


def _textbook_laplace(eps):
    from .mironov import TextbookLaplace

    return TextbookLaplace(epsilon=eps)


def _lsb_draw(mech, eps, side, size, gen):
    from .mironov import lsb_draw

    return lsb_draw(mech, eps, side, size, gen)


def _unclipped_piecewise(eps):
    from ..oracles.randomizers import Piecewise

    class NarrowPiecewise(Piecewise):
        """Draws from the high band with probability from 2 eps."""

        def privatize(self, u, *, rng=None):
            return Piecewise(epsilon=2 * self.epsilon).privatize(u, rng=rng)

    return NarrowPiecewise(epsilon=eps)


def _half_sigma_histogram(eps):
    from ..histograms import ShiftedLogGaussian

    mech = ShiftedLogGaussian(r=0.1)
    honest_rho = mech.rho

    class HalfSigma(ShiftedLogGaussian):
        pass

    bad = HalfSigma.__new__(HalfSigma)
    bad.__dict__.update(mech.__dict__)
    bad.sigma = mech.sigma / 2          # the release uses it ...
    bad.rho = honest_rho                # ... the claim does not
    return bad


def _undernoised_discrete_laplace(eps):
    from fractions import Fraction

    from .registry import _ExactNoise

    scale = 1 / Fraction(eps)
    return _ExactNoise("laplace", scale, noise_param=scale / 2)  # the law reads scale


def _half_sigma_discrete_gaussian(eps):
    from .registry import DISCRETE_GAUSSIAN_SIGMA2, _ExactNoise

    return _ExactNoise("gaussian", DISCRETE_GAUSSIAN_SIGMA2,
                       noise_param=DISCRETE_GAUSSIAN_SIGMA2 / 4)  # the claim reads sigma2


def _undernoised_pem(eps):
    from ..heavyhitters import PEM

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


def negative_controls(epsilon: float = 1.0) -> dict[str, Channel]:
    """Every control, by name (``control:<what>``); each must be flagged."""
    reg = channels(epsilon)
    out = []
    # law faults: every exact and empirical channel built at LAW_FACTOR * eps
    # (a channel's own claim: PrivKVM's round-1 channel claims its share of eps)
    for ch in reg.values():
        if ch.kind in ("zcdp", "shuffle", "fit"):
            continue
        out.append(replace(ch, name=f"control:{ch.name}@{LAW_FACTOR:g}eps",
                           description=f"{ch.name} built at {LAW_FACTOR:g} eps, claiming eps",
                           mechanism_epsilon=LAW_FACTOR * ch.epsilon, expect_violation=True,
                           control_of=ch.name))
    # sampler faults
    out += [
        replace(reg["grr"], control_of="grr", name="control:grr-sampler",
                build=_undernoised_grr,
                description="GRR keeping its input with the probability of 1.5 eps (law honest)",
                expect_violation=True),
        *(replace(reg[name], control_of=name, name=f"control:{name}-sampler",
                  build=_undernoised_sketch(name),
                  description=f"{name.upper()} flipping with the probability of 1.5 eps "
                              "(law honest)", expect_violation=True)
          for name in ("cms", "hcms")),
        replace(reg["the"], control_of="the", name="control:the-sampler", build=_undernoised_the,
                description="THE drawing the bits of 1.5 eps (law honest)", expect_violation=True),
        replace(reg["she-discrete"], control_of="she-discrete",
                name="control:she-discrete-sampler", build=_undernoised_discrete_she,
                describe=None, description="DiscreteSHE drawing its noise at 1.5 eps (law honest)",
                expect_violation=True),
        replace(reg["rappor"], control_of="rappor", name="control:rappor-sampler",
                build=_undernoised_rappor,
                description="RAPPOR flipping its bits with the probability of 1.5 eps (law honest)",
                expect_violation=True),
        replace(reg["jprs"], control_of="jprs", name="control:jprs-sampler",
                build=_undernoised_jprs,
                description="JPRS whose privatize uses 1.5 eps (law honest)", expect_violation=True),
        replace(reg["p-rs-grr"], control_of="p-rs-grr", name="control:p-rs-grr-sampler",
                build=_undernoised_prs,
                description="P-RS-GRR whose privatize uses 1.5 eps (law honest)",
                expect_violation=True),
        replace(reg["ss"], control_of="ss", name="control:ss-sampler", build=_undernoised_ss,
                description="Subset selection putting its input in the set with the "
                            "probability of 1.5 eps (law honest)", expect_violation=True),
        replace(reg["blh"], control_of="blh", name="control:blh-sampler", build=_undernoised_blh,
                description="BLH keeping its bit with the probability of 1.5 eps (law honest)",
                expect_violation=True),
        replace(reg["pem-olh"], control_of="pem-olh", name="control:pem-olh-sampler",
                build=_undernoised_pem,
                description="PEM keeping its hashed prefix with the probability of 1.5 eps "
                            "(law honest)", expect_violation=True),
        *(replace(reg[name], control_of=name, name=f"control:{name}-sampler",
                  build=_undernoised_two_part(reg[name].build),
                  description=f"{name} flipping each part's bit with the probability of "
                              "1.5 times the part's budget (law honest)", expect_violation=True)
          for name in ("treehist", "sfp", "sfp-cms")),
        replace(reg["laplace"], control_of="laplace", name="control:laplace-half-scale",
                build=_half_scale_laplace,
                description="Laplace with half the scale", expect_violation=True),
        replace(reg["laplace-secure"], control_of="laplace-secure",
                name="control:laplace-textbook-lsb",
                build=_textbook_laplace, draw=_lsb_draw, describe=None, expect_violation=True,
                description="textbook double-precision Laplace (Mironov 2012), audited "
                            "through its low-order bits (fastldp.audit.mironov)"),
        replace(reg["piecewise"], control_of="piecewise", name="control:piecewise-sampler",
                build=_unclipped_piecewise,
                description="Piecewise sampling at 2 eps", expect_violation=True),
        replace(reg["histogram-zcdp"], control_of="histogram-zcdp",
                name="control:histogram-half-sigma",
                build=_half_sigma_histogram,
                description="ShiftedLogGaussian releasing with sigma / 2, claiming v(n)",
                expect_violation=True),
        replace(reg["discrete-laplace"], control_of="discrete-laplace",
                name="control:discrete-laplace-sampler", build=_undernoised_discrete_laplace,
                description="discrete Laplace drawn at scale / 2 (law honest)",
                expect_violation=True),
        replace(reg["discrete-gaussian"], control_of="discrete-gaussian",
                name="control:discrete-gaussian-half-sigma", build=_half_sigma_discrete_gaussian,
                description="discrete Gaussian drawn with sigma / 2, claiming rho of sigma",
                expect_violation=True),
    ]
    # shuffle protocols: noise calibrated at SHUFFLE_CONTROL_FACTOR eps, claim eps (a 1.5 eps
    # fault is out of reach of a sampled (eps, 1e-5) test; see fastldp.audit.shuffle)
    from . import shuffle as sh

    k = f"{sh.SHUFFLE_CONTROL_FACTOR:g}"
    out += [
        replace(reg["shuffled-sum"], control_of="shuffled-sum",
                name=f"control:shuffled-sum-noise@{k}eps", build=sh.undernoised_sum,
                description=f"ShuffledVectorSum with Skellam noise for {k} eps, plan stating eps",
                expect_violation=True),
        replace(reg["shuffled-bits"], control_of="shuffled-bits",
                name=f"control:shuffled-bits-flips@{k}eps", build=sh.undernoised_bits,
                description=f"ShuffledBits with the flip probability of {k} eps, claiming eps",
                expect_violation=True),
        replace(reg["shuffled-sum"], control_of="shuffled-sum",
                name="control:shuffled-sum-identity-shuffler",
                build=sh.sum_with_identity_shuffler,
                description="ShuffledVectorSum whose shuffler returns the messages in arrival "
                            "order", expect_violation=True),
        replace(reg["shuffled-bits"], control_of="shuffled-bits",
                name="control:shuffled-bits-identity-shuffler",
                build=sh.bits_with_identity_shuffler,
                description="ShuffledBits whose shuffler returns the bits in arrival order",
                expect_violation=True),
        replace(reg["shuffled-sum"], control_of="shuffled-sum",
                name="control:shuffled-sum-unmasked-shares", build=sh.sum_with_unmasked_shares,
                description="ShuffledVectorSum whose parties send m - 1 zeros and their value",
                expect_violation=True),
        replace(reg["shuffled-sum"], control_of="shuffled-sum",
                name="control:shuffled-sum-variance/4", build=sh.sum_with_quarter_variance,
                description="ShuffledVectorSum drawing Skellam noise of variance mu / 4, "
                            "claiming eps", expect_violation=True),
    ]
    out += _regression_controls(reg)
    out += _longitudinal_controls(reg)
    from .rappor_dbitflip import rappor_dbitflip_controls

    out += rappor_dbitflip_controls(reg)
    return {ch.name: ch for ch in out}


def _longitudinal_controls(reg) -> list:
    """The memo-skipped controls of the memoized protocols (:mod:`fastldp.audit.longitudinal`)."""
    from .longitudinal import longitudinal_controls

    return longitudinal_controls(reg)


def _regression_controls(reg) -> list:
    """Controls of the regression channels (:mod:`fastldp.audit.regression`)."""
    from . import regression as rg

    out = []
    for name, build, what in rg.CONTROLS:
        if name in reg:
            out.append(replace(reg[name], control_of=name, name=f"control:{name}-{what[0]}",
                               build=build, description=what[1], expect_violation=True))
    return out
