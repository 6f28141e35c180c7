"""The audit's channels of the frequency oracles and scalar randomizers, and their controls.

Each class's randomizer on a tiny domain, with its exact law (:mod:`._laws`)
and sampler, or (continuous outputs) draws under the two inputs its privacy
proof says are the hardest; and the negative controls the audit must catch:
*sampler faults*, subclasses whose public parameters (and so the law) stay
honest while ``privatize`` draws with less noise (at
:data:`~fastldp.channels.LAW_FACTOR` times the claimed budget), and for the
continuous randomizers a halved scale, a sampler at twice the budget and the
textbook double-precision Laplace (Mironov 2012, :mod:`fastldp._textbook_laplace`).
:mod:`fastldp.audit` adds a *law fault* of every channel (built at
``LAW_FACTOR`` times its claim).

The exact integer noise of :mod:`fastldp.noise` (the discrete Laplace and
Gaussian that ``Laplace(secure=True)``, :class:`DiscreteSHE` and
:class:`DiscretePiecewise` draw) is audited here as well, as ``x + Z`` on the
integers: it has no class of its own, so :class:`Laplace` carries it.

The classes answer ``channels(epsilon)`` with what is registered here
(:func:`fastldp.channels.channels_of`); ``fastldp audit --list --controls``
lists them.
"""

from __future__ import annotations

import math
from dataclasses import replace
from fractions import Fraction

import numpy as np

from .. import noise
from .._textbook_laplace import TextbookLaplace, lsb_draw
from ..channels import LAW_FACTOR, Channel, ExactLaw, channels_of
from . import _laws as laws
from .blh import BLH
from .cms import CMS, HCMS
from .discrete_encoding import DiscreteSHE
from .flh import FLH
from .grr import GRR
from .hadamard import HadamardResponse
from .histogram_encoding import SHE, THE
from .olh import OLH
from .randomizers import DiscretePiecewise, Duchi, Hybrid, Laplace, Piecewise, StochasticRounding
from .rappor import RAPPOR
from .subset import SubsetSelection
from .unary import OUE, SUE

__all__ = ["ORACLE_D", "SKETCH_ROWS", "SKETCH_COLUMNS", "SKETCH_SHAPE", "SS_SUBSET_SIZE",
           "RAPPOR_SHAPE", "RAPPOR_D", "DISCRETE_SHE_D", "DISCRETE_SHE_CLAMP",
           "DISCRETE_GAUSSIAN_SIGMA2", "ExactNoise"]

#: domain of the oracle audits (OUE / SUE enumerate 2^D bit vectors)
ORACLE_D = 5
#: the hash functions and columns of the CMS / HCMS audits (k 2^m outputs for CMS)
SKETCH_ROWS, SKETCH_COLUMNS = 2, 4
SKETCH_SHAPE = {"n_rows": SKETCH_ROWS, "n_columns": SKETCH_COLUMNS}
#: subset size of the subset-selection audit (size 1 would be GRR)
SS_SUBSET_SIZE = 2
#: the RAPPOR audit: k = 4 bits (all 2^4 reports), h = 2 hashes, 2 cohorts, D = 4 candidates
RAPPOR_SHAPE = {"n_bits": 4, "n_hashes": 2, "n_cohorts": 2}
RAPPOR_D = 4
#: the DiscreteSHE audit: D = 2 symbols, clamp L = 2 (6^2 integer reports at grid 1); with D = 2
#: every float probability is a product of two factors, so the tied outputs of the two
#: directions have bit-identical probabilities (the sampler check needs one witness event)
DISCRETE_SHE_D, DISCRETE_SHE_CLAMP = 2, 2
#: the discrete Gaussian audit's variance parameter (inputs 0 and 1: rho = 1 / (2 sigma2))
DISCRETE_GAUSSIAN_SIGMA2 = 1


def _sampler_fault(ch: Channel, build, description: str, **changes) -> Channel:
    """``control:<name>-sampler``: the channel with a faulty ``build`` (its law honest)."""
    return replace(ch, control_of=ch.name, name=f"control:{ch.name}-sampler", build=build,
                   description=description, expect_violation=True, **changes)


def _louder(cls):
    """``cls`` perturbing at ``LAW_FACTOR`` times the budget; its epsilon and channel stay honest."""
    class UnderNoised(cls):  # type: ignore[valid-type, misc]
        def perturb(self, values, eps, identities, rng):
            return super().perturb(values, LAW_FACTOR * eps, identities, rng)

    UnderNoised.__name__ = UnderNoised.__qualname__ = f"UnderNoised{cls.__name__}"
    return UnderNoised


# ----------------------------------------------------------------- frequency oracles
def _oracle(cls, **extra):
    def build(eps):
        return cls(domain_size=ORACLE_D, epsilon=eps, codebook_seed=20240614, n_threads=1, **extra)
    return build


def _oracle_law(name):
    def law(mech, eps, ids):
        if name == "flh":
            return laws.flh_law(mech.domain_size, eps, mech.g, mech.pool(), ids)
        if name in ("cms", "hcms"):
            sketch_law = laws.cms_law if name == "cms" else laws.hcms_law
            return sketch_law(eps, mech.n_columns, mech.hash_table(), ids)
        return laws.oracle_law(name, mech.domain_size, eps, mech.codebook_seed, ids)
    return law


def _oracle_sample(mech, eps, xs, ids, gen):
    return mech.privatize(np.asarray(xs, dtype=np.int64), identities=ids, rng=gen)


def _bits_key(row):
    return tuple(int(b) for b in np.unpackbits(np.asarray(row, dtype=np.uint8),
                                                bitorder="little")[:ORACLE_D])


def _pair_key(r):
    return (int(r[0]), int(r[1]))


@channels_of(GRR)
def _grr_channels(epsilon):
    ch = Channel("grr", f"GRR, D = {ORACLE_D}", epsilon, _oracle(GRR), law=_oracle_law("grr"),
                 sample=_oracle_sample)
    return [ch, _sampler_fault(ch, _oracle(_louder(GRR)), "GRR keeping its input with the "
                               "probability of 1.5 eps (law honest)")]


@channels_of(OLH)
def _olh_channels(epsilon):
    return [Channel("olh", f"OLH, D = {ORACLE_D}, per-identity public hash", epsilon, _oracle(OLH),
                    law=_oracle_law("olh"), sample=_oracle_sample, keyed=True)]


@channels_of(FLH)
def _flh_channels(epsilon):
    return [Channel("flh", f"FLH, D = {ORACLE_D}, public pool of 8 hashes", epsilon,
                    _oracle(FLH, n_hashes=8), law=_oracle_law("flh"), sample=_oracle_sample,
                    output_key=_pair_key)]


@channels_of(HadamardResponse)
def _hr_channels(epsilon):
    return [Channel("hr", f"Hadamard response, D = {ORACLE_D} (K = 8)", epsilon,
                    _oracle(HadamardResponse), law=_oracle_law("hr"), sample=_oracle_sample)]


@channels_of(OUE)
def _oue_channels(epsilon):
    return [Channel("oue", f"OUE, D = {ORACLE_D}, all {2 ** ORACLE_D} bit vectors", epsilon,
                    _oracle(OUE), law=_oracle_law("oue"), sample=_oracle_sample,
                    output_key=_bits_key)]


@channels_of(SUE)
def _sue_channels(epsilon):
    return [Channel("sue", f"SUE, D = {ORACLE_D}, all {2 ** ORACLE_D} bit vectors", epsilon,
                    _oracle(SUE), law=_oracle_law("sue"), sample=_oracle_sample,
                    output_key=_bits_key)]


def _sketch_fault(ch: Channel, cls) -> Channel:
    return _sampler_fault(ch, _oracle(_louder(cls), **SKETCH_SHAPE),
                          f"{ch.name.upper()} flipping with the probability of 1.5 eps "
                          "(law honest)")


@channels_of(CMS)
def _cms_channels(epsilon):
    D = ORACLE_D
    ch = Channel("cms", f"Apple's CMS, D = {D}, k = {SKETCH_ROWS} rows x m = {SKETCH_COLUMNS} "
                 f"columns, all {SKETCH_ROWS * 2 ** SKETCH_COLUMNS} (row, signs) outputs", epsilon,
                 _oracle(CMS, **SKETCH_SHAPE), law=_oracle_law("cms"), sample=_oracle_sample,
                 output_key=_pair_key)
    return [ch, _sketch_fault(ch, CMS)]


@channels_of(HCMS)
def _hcms_channels(epsilon):
    D = ORACLE_D
    ch = Channel("hcms", f"Apple's HCMS, D = {D}, k = {SKETCH_ROWS} rows x m = {SKETCH_COLUMNS} "
                 f"columns, all {SKETCH_ROWS * SKETCH_COLUMNS * 2} (row, column, bit) outputs",
                 epsilon, _oracle(HCMS, **SKETCH_SHAPE), law=_oracle_law("hcms"),
                 sample=_oracle_sample, output_key=lambda r: (int(r[0]), int(r[1]), int(r[2])))
    return [ch, _sketch_fault(ch, HCMS)]


@channels_of(SubsetSelection)
def _ss_channels(epsilon):
    D, k = ORACLE_D, SS_SUBSET_SIZE
    ch = Channel("ss", f"subset selection, D = {D}, all {math.comb(D, k)} sets of k = {k}",
                 epsilon, _oracle(SubsetSelection, subset_size=k),
                 law=lambda mech, eps, ids: laws.subset_law(mech.domain_size, eps,
                                                            mech.subset_size, ids),
                 sample=_oracle_sample, output_key=_bits_key)
    return [ch, _sampler_fault(ch, _oracle(_louder(SubsetSelection), subset_size=k),
                               "Subset selection putting its input in the set with the "
                               "probability of 1.5 eps (law honest)")]


@channels_of(BLH)
def _blh_channels(epsilon):
    ch = Channel("blh", f"BLH, D = {ORACLE_D}, per-identity public hash onto 2 buckets", epsilon,
                 _oracle(BLH), law=lambda mech, eps, ids: laws.blh_law(mech.domain_size, eps,
                                                                      mech.codebook_seed, ids),
                 sample=_oracle_sample, keyed=True)
    return [ch, _sampler_fault(ch, _oracle(_louder(BLH)), "BLH keeping its bit with the "
                               "probability of 1.5 eps (law honest)")]


# ----------------------------------------------------------------- histogram encodings, RAPPOR
def _she_draw(mech, eps, side, size, gen):
    """SHE reports of symbol 0 (side 0) or 1 (side 1), as ``g(y_0) - g(y_1)``.

    ``g(y) = clip(2 y - 1, -1, 1)``: the privacy loss of a report between
    the two inputs is ``(g(y_0) - g(y_1)) / b``, so thresholds of this
    statistic are the Neyman-Pearson events (the largest ratio ``e^eps`` on
    ``y_0 >= 1, y_1 <= 0``).
    """
    y = mech.privatize(np.full(size, side, dtype=np.int64), rng=gen)
    g = np.clip(2.0 * y[:, :2] - 1.0, -1.0, 1.0)
    return g[:, 0] - g[:, 1]


@channels_of(SHE)
def _she_channels(epsilon):
    return [Channel("she", f"SHE, D = {ORACLE_D}, symbol 0 vs 1: the statistic g(y_0) - g(y_1) "
                    "(the privacy loss over b)", epsilon, _oracle(SHE), kind="empirical",
                    draw=_she_draw)]


@channels_of(THE)
def _the_channels(epsilon):
    D = ORACLE_D
    ch = Channel("the", f"THE, D = {D}, variance-optimal threshold, all {2 ** D} bit vectors",
                 epsilon, _oracle(THE),
                 law=lambda mech, eps, ids: laws.the_law(mech.domain_size, eps, mech.threshold,
                                                         ids),
                 sample=_oracle_sample, output_key=_bits_key,
                 describe=lambda mech: f"threshold {mech.threshold:.6g}")
    return [ch, _sampler_fault(ch, _oracle(_louder(THE)),
                               "THE drawing the bits of 1.5 eps (law honest)")]


def _discrete_she(cls):
    def build(eps):
        return cls(domain_size=DISCRETE_SHE_D, epsilon=eps, clamp=DISCRETE_SHE_CLAMP,
                   codebook_seed=20240614)
    return build


@channels_of(DiscreteSHE)
def _discrete_she_channels(epsilon):
    D, L = DISCRETE_SHE_D, DISCRETE_SHE_CLAMP
    ch = Channel("she-discrete", f"DiscreteSHE, D = {D}, grid 1, clamp L = {L}, all "
                 f"{(2 * L + 2) ** D} integer reports", epsilon, _discrete_she(DiscreteSHE),
                 law=lambda mech, eps, ids: laws.discrete_she_law(mech, eps),
                 sample=_oracle_sample, output_key=lambda r: tuple(int(v) for v in r),
                 describe=lambda mech: f"effective eps {mech.effective_epsilon():.10g}")
    return [ch, _sampler_fault(ch, _discrete_she(_louder(DiscreteSHE)),
                               "DiscreteSHE drawing its noise at 1.5 eps (law honest)",
                               describe=None)]


def _rappor(cls):
    def build(eps):
        return cls(domain_size=RAPPOR_D, epsilon=eps, codebook_seed=20240617, n_threads=1,
                   **RAPPOR_SHAPE)
    return build


def _rappor_key(row):
    return tuple(int(b) for b in np.unpackbits(np.asarray(row, dtype=np.uint8),
                                                bitorder="little")[:RAPPOR_SHAPE["n_bits"]])


@channels_of(RAPPOR)
def _rappor_channels(epsilon):
    k = RAPPOR_SHAPE["n_bits"]
    ch = Channel("rappor", f"one-time RAPPOR, D = {RAPPOR_D}, k = {k} bits (all {2 ** k} "
                 f"reports), h = {RAPPOR_SHAPE['n_hashes']}, {RAPPOR_SHAPE['n_cohorts']} "
                 "cohorts by identity", epsilon, _rappor(RAPPOR),
                 law=lambda mech, eps, ids: laws.rappor_law(mech, eps, ids),
                 sample=_oracle_sample, output_key=_rappor_key, keyed=True)
    return [ch, _sampler_fault(ch, _rappor(_louder(RAPPOR)), "RAPPOR flipping its bits with the "
                               "probability of 1.5 eps (law honest)")]


# ----------------------------------------------------------------- scalar randomizers
def _scalar_sample(mech, eps, xs, ids, gen):
    return mech.privatize(np.asarray(xs, dtype=np.float64), rng=gen)


def _scalar_draw(mech, eps, side, size, gen):
    return mech.privatize(np.full(size, 1.0 if side == 0 else -1.0), rng=gen)


@channels_of(Duchi)
def _duchi_channels(epsilon):
    return [Channel("duchi", "Duchi two-point randomizer, u in {-1, -.5, 0, .5, 1}", epsilon,
                    lambda eps: Duchi(epsilon=eps),
                    law=lambda mech, eps, ids: laws.duchi_law(mech), sample=_scalar_sample)]


@channels_of(DiscretePiecewise)
def _discrete_piecewise_channels(epsilon):
    return [Channel("piecewise-discrete", "DiscretePiecewise, m = 4, all 5 grid inputs x "
                    "m + W outputs", epsilon, lambda eps: DiscretePiecewise(epsilon=eps, m=4),
                    law=lambda mech, eps, ids: laws.discrete_piecewise_law(mech),
                    sample=_scalar_sample,
                    describe=lambda mech: f"A / B = e^{mech.effective_epsilon:.10g}")]


def _half_scale_laplace(eps):
    class HalfScaleLaplace(Laplace):
        """Laplace noise of scale 1 / eps instead of 2 / eps (sensitivity 1 instead of 2)."""

        @property
        def scale(self):
            return 1.0 / self.epsilon

    return HalfScaleLaplace(epsilon=eps)


def _narrow_piecewise(eps):
    class NarrowPiecewise(Piecewise):
        """Draws from the high band with probability from 2 eps."""

        def privatize(self, u, *, rng=None):
            return Piecewise(epsilon=2 * self.epsilon).privatize(u, rng=rng)

    return NarrowPiecewise(epsilon=eps)


@channels_of(Piecewise)
def _piecewise_channels(epsilon):
    ch = Channel("piecewise", "Piecewise randomizer, u = +1 vs -1", epsilon,
                 lambda eps: Piecewise(epsilon=eps), kind="empirical", draw=_scalar_draw)
    return [ch, _sampler_fault(ch, _narrow_piecewise, "Piecewise sampling at 2 eps")]


def _louder_rounding(eps):
    class LouderRounding(StochasticRounding):
        """Keeps the rounded sign with the probability of ``LAW_FACTOR`` eps."""

        @property
        def keep(self):
            return 1.0 / (1.0 + math.exp(-LAW_FACTOR * self.epsilon))

    return LouderRounding(epsilon=eps)


@channels_of(StochasticRounding)
def _stochastic_rounding_channels(epsilon):
    ch = Channel("stochastic-rounding", "stochastic rounding to +-1, then binary randomized "
                 "response, u in {-1, -.5, 0, .5, 1}", epsilon,
                 lambda eps: StochasticRounding(epsilon=eps),
                 law=lambda mech, eps, ids: laws.stochastic_rounding_law(mech.epsilon),
                 sample=_scalar_sample)
    return [ch, _sampler_fault(ch, _louder_rounding, "stochastic rounding keeping the sign "
                               "with the probability of 1.5 eps (law honest)")]


def _hybrid_atoms_sample(mech, eps, xs, ids, gen):
    y = mech.privatize(np.asarray(xs, dtype=np.float64), rng=gen)
    # the Piecewise part lumped into one output (inf): only the atoms carry Duchi's ratio
    return np.where(np.abs(y) == mech.C, y, np.inf)


def _narrow_hybrid(eps):
    class NarrowHybrid(Hybrid):
        """Draws as Hybrid at 2 eps (its mixture weight and both parts)."""

        def privatize(self, u, *, rng=None):
            return Hybrid(epsilon=2 * self.epsilon).privatize(u, rng=rng)

    return NarrowHybrid(epsilon=eps)


def _louder_hybrid_atoms(eps):
    class LouderAtoms(Hybrid):
        """Duchi's part drawn at ``LAW_FACTOR`` eps (the atoms stay at the honest ``+-C``)."""

        def _draw(self, u, gen):
            y = super()._draw(u, gen)
            loud = Duchi(epsilon=LAW_FACTOR * self.epsilon).prob_plus(u)
            atom = np.abs(y) == self.C
            return np.where(atom, np.where(gen.random(u.shape) < loud, self.C, -self.C), y)

    return LouderAtoms(epsilon=eps)


@channels_of(Hybrid)
def _hybrid_channels(epsilon):
    cont = Channel("hybrid", "Hybrid randomizer (Piecewise or Duchi), u = +1 vs -1", epsilon,
                   lambda eps: Hybrid(epsilon=eps), kind="empirical", draw=_scalar_draw)
    atoms = Channel("hybrid-atoms", "Hybrid's atoms +-C (Duchi's part) and its Piecewise part "
                    "as one output, u in {-1, -.5, 0, .5, 1}", epsilon,
                    lambda eps: Hybrid(epsilon=eps),
                    law=lambda mech, eps, ids: laws.hybrid_atoms_law(mech.epsilon,
                                                                       Hybrid.EPSILON_STAR),
                    sample=_hybrid_atoms_sample)
    return [cont, _sampler_fault(cont, _narrow_hybrid, "Hybrid sampling at 2 eps"),
            atoms, _sampler_fault(atoms, _louder_hybrid_atoms, "Hybrid drawing its Duchi part "
                                  "at 1.5 eps (law honest)")]


# ----------------------------------------------------------------- exact integer noise
class ExactNoise:
    """An integer input plus exact noise of :mod:`fastldp.noise` (sensitivity 1).

    ``scale`` (the discrete Laplace's) or ``sigma2`` (the discrete
    Gaussian's) is what the law and the claim read; ``noise_param`` is what
    the sampler draws with (the same, except in the negative controls).

    Examples
    --------
    >>> from fractions import Fraction
    >>> from fastldp.oracles._channels import ExactNoise
    >>> ExactNoise("laplace", Fraction(1)).privatize([0, 5], rng=1).dtype
    dtype('int64')
    """

    def __init__(self, family: str, param, noise_param=None):
        self.family = family
        self.param = param
        self.noise_param = param if noise_param is None else noise_param
        # the laplace law's outputs: -span - 1 stands for y <= -span - 1, span + 2 for
        # y >= span + 2 (lumped tails keep the ratio: both are e^(1/t) exactly)
        self.span = int(math.ceil(4 * param)) + 1 if family == "laplace" else None

    def privatize(self, x, *, rng=None):
        x = np.asarray(x, dtype=np.int64)
        sampler = noise.discrete_laplace if self.family == "laplace" else noise.discrete_gaussian
        return x + sampler(self.noise_param, x.shape, rng=rng)


def _discrete_laplace(eps):
    return ExactNoise("laplace", 1 / Fraction(eps))  # scale 1 / eps, taken exactly


def _discrete_laplace_law(mech, eps, ids):
    """Inputs 0 and 1, outputs ``y = x + Z`` clamped to ``[-M - 1, M + 2]``.

    ``P[Z = z] = c q^|z|`` with ``q = e^(-1/t)``, ``c = (1 - q) / (1 + q)``;
    the clamped tails ``P[Y <= -M - 1 | x] = c q^(M + 1 + x) / (1 - q)`` and
    ``P[Y >= M + 2 | x] = c q^(M + 2 - x) / (1 - q)``. Every output's ratio
    between the two inputs is ``q^(+-1)``: the largest is ``e^(1/t)`` exactly.
    """
    inv = 1.0 / float(mech.param)
    q, c, one_minus_q = math.exp(-inv), math.tanh(inv / 2), -math.expm1(-inv)
    M = mech.span
    ys = list(range(-M - 1, M + 3))
    probs = np.empty((1, 2, len(ys)))
    for x in (0, 1):
        probs[0, x, 1:-1] = [c * q ** abs(y - x) for y in ys[1:-1]]
        probs[0, x, 0] = c * q ** (M + 1 + x) / one_minus_q
        probs[0, x, -1] = c * q ** (M + 2 - x) / one_minus_q
    return ExactLaw([0, 1], ys, np.zeros(1, dtype=np.uint64), probs,
                    note="float64 pmf of the exact sampler, tails lumped")


def _discrete_laplace_sample(mech, eps, xs, ids, gen):
    return np.clip(mech.privatize(np.asarray(xs), rng=gen), -mech.span - 1, mech.span + 2)


def _discrete_gaussian(eps):
    return ExactNoise("gaussian", DISCRETE_GAUSSIAN_SIGMA2)


def _exact_noise_draw(mech, eps, side, size, gen):
    return mech.privatize(np.full(size, 1 - side), rng=gen).astype(np.float64)


def _undernoised_discrete_laplace(eps):
    scale = 1 / Fraction(eps)
    return ExactNoise("laplace", scale, noise_param=scale / 2)  # the law reads scale


def _half_sigma_discrete_gaussian(eps):
    return ExactNoise("gaussian", DISCRETE_GAUSSIAN_SIGMA2,
                      noise_param=DISCRETE_GAUSSIAN_SIGMA2 / 4)  # the claim reads sigma2


def _noise_channels(epsilon):
    """The samplers of :mod:`fastldp.noise` as ``x + Z`` on the integers, and their controls."""
    laplace = Channel("discrete-laplace", "fastldp.noise.discrete_laplace, scale 1 / eps, x + Z "
                      "for x = 0 vs 1, outputs clamped to [-M - 1, M + 2]", epsilon,
                      _discrete_laplace, law=_discrete_laplace_law,
                      sample=_discrete_laplace_sample,
                      describe=lambda mech: f"scale {mech.param}, M = {mech.span}")
    gaussian = Channel("discrete-gaussian", f"fastldp.noise.discrete_gaussian, sigma2 = "
                       f"{DISCRETE_GAUSSIAN_SIGMA2}, x + Z for x = 0 vs 1, rho = 1 / (2 sigma2) "
                       "(not pure DP: audited against its zCDP claim)", float("nan"),
                       _discrete_gaussian, kind="zcdp", draw=_exact_noise_draw,
                       claim=lambda mech: 1.0 / (2.0 * float(mech.param)))
    return [
        laplace, gaussian,
        _sampler_fault(laplace, _undernoised_discrete_laplace,
                       "discrete Laplace drawn at scale / 2 (law honest)"),
        replace(gaussian, control_of="discrete-gaussian",
                name="control:discrete-gaussian-half-sigma", build=_half_sigma_discrete_gaussian,
                description="discrete Gaussian drawn with sigma / 2, claiming rho of sigma",
                expect_violation=True),
    ]


@channels_of(Laplace)
def _laplace_channels(epsilon):
    """Laplace, Laplace(secure=True), and the exact noise its secure mode draws."""
    plain = Channel("laplace", "Laplace randomizer, u = +1 vs -1", epsilon,
                    lambda eps: Laplace(epsilon=eps), kind="empirical", draw=_scalar_draw)
    secure = Channel("laplace-secure", "Laplace(secure=True): grid 2^-10, discrete Laplace "
                     "noise, u = +1 vs -1", epsilon, lambda eps: Laplace(epsilon=eps, secure=True),
                     kind="empirical", draw=_scalar_draw,
                     describe=lambda mech: f"effective eps {mech.effective_epsilon:.10g}")
    return [
        plain, secure,
        replace(plain, control_of="laplace", name="control:laplace-half-scale",
                build=_half_scale_laplace, description="Laplace with half the scale",
                expect_violation=True),
        replace(secure, control_of="laplace-secure", name="control:laplace-textbook-lsb",
                build=lambda eps: TextbookLaplace(epsilon=eps), draw=lsb_draw, describe=None,
                expect_violation=True,
                description="textbook double-precision Laplace (Mironov 2012), audited "
                            "through its low-order bits (fastldp.audit.mironov)"),
        *_noise_channels(epsilon),
    ]
