"""The audit's exact channels of SPL, SMP and RSpFD, and their negative controls.

Each class on a tiny domain (two attributes of 2 and 3 values, all six
records as inputs) with the exact law of its *whole* report and its
sampler. The law of a report is built from the per-attribute laws:
``R_j[x_j, y_j]``, the oracle's law of attribute ``j`` at the budget it
is reported at, and for RSpFD ``F_j[y_j]``, the law of attribute ``j``'s
fake data:

- SPL: ``P[y | x] = prod_j R_j[x_j, y_j]``;
- SMP: ``P[(j, y) | x] = R_j[x_j, y] / A``;
- RSpFD: ``P[y | x] = (1 / A) sum_j R_j[x_j, y_j] prod_{i != j} F_i[y_i]``.

The controls: SPL's oracle perturbing at ``LAW_FACTOR`` times its budget
(a sampler fault, law honest), and ``control:rspfd-grr-paper``: RSpFD
with the paper's amplified budget (:func:`~._frequency.paper_budget`)
claiming the paper's ``epsilon``, which the exact law refutes (its
largest ratio is ``e^{eps'}``, reached by two records that differ in every
attribute). :mod:`fastldp.audit` adds a law fault of every channel.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from ..channels import LAW_FACTOR, Channel, ExactLaw, channels_of
from ._frequency import SMP, SPL, RSpFD, paper_budget
from ._marginals import FullDomain
from ._means import SampledMean, SplitMean

__all__ = ["MULTIDIM_DOMAIN", "MEAN_DIMENSION"]

#: the audits' domain sizes: 2 x 3 = 6 records
MULTIDIM_DOMAIN = (2, 3)
_SEED = 20240614


def _bits(k: int) -> list:
    return [tuple(b) for b in itertools.product((0, 1), repeat=k)]


def _unary_law(p: float, q: float, k: int) -> tuple:
    """Outputs (bit tuples) and ``R[x, y]`` of a unary encoding keeping bit x w.p. p, others q."""
    outs = _bits(k)
    bits = np.array(outs, dtype=float)  # (2^k, k)
    law = np.empty((k, len(outs)))
    for x in range(k):
        prob = np.full(k, q)
        prob[x] = p
        law[x] = np.prod(np.where(bits == 1, prob, 1 - prob), axis=1)
    return [tuple(o) for o in outs], law


def _attribute_law(mech, j: int, identity: int) -> tuple:
    """Attribute ``j``'s outputs (tuples) and real law ``R_j`` in ``mech`` (one identity)."""
    k = mech.domain_sizes[j]
    p, q = mech._pq[j]
    name = getattr(mech, "oracle", None) or mech.base
    if name == "OLH":
        eps = mech.attribute_epsilon
        law = mech.oracles[j].channel(eps, identity)
        return [(y,) for y in range(law.shape[1])], law
    if name == "GRR":
        law = np.full((k, k), q)
        np.fill_diagonal(law, p)
        return [(y,) for y in range(k)], law
    return _unary_law(p, q, k)


def _fake_law(mech, j: int, real: np.ndarray) -> np.ndarray:
    """``F_j``: the law of RSpFD's fake data of attribute ``j`` over the same outputs."""
    k = mech.domain_sizes[j]
    if mech.base == "GRR":
        return np.full(k, 1.0 / k)
    if mech.fake == "random":
        return real.mean(axis=0)
    q = mech._pq[j][1]
    return _unary_law(q, q, k)[1][0]


def _law(mech, eps, ids) -> ExactLaw:
    A = mech.n_attributes
    inputs = list(itertools.product(*[range(k) for k in mech.domain_sizes]))
    ids = np.atleast_1d(np.asarray(ids, dtype=np.uint64))
    tables = []
    for identity in ids.tolist():
        per = [_attribute_law(mech, j, identity) for j in range(A)]
        if isinstance(mech, SMP):
            outputs = [(j, *y) for j in range(A) for y in per[j][0]]
            rows = [np.concatenate([per[j][1][x[j]] / A for j in range(A)]) for x in inputs]
        else:
            outputs = [sum(combo, ()) for combo in itertools.product(*[o for o, _ in per])]
            rows = []
            for x in inputs:
                real = [per[j][1][x[j]] for j in range(A)]
                if isinstance(mech, SPL):
                    rows.append(_outer(real))
                else:
                    fakes = [_fake_law(mech, j, per[j][1]) for j in range(A)]
                    rows.append(sum(_outer([real[i] if i == j else fakes[i] for i in range(A)])
                                    for j in range(A)) / A)
        tables.append(np.array(rows))
    return ExactLaw(inputs, outputs, ids, np.stack(tables))


def _outer(vectors) -> np.ndarray:
    out = np.ones(1)
    for v in vectors:
        out = np.outer(out, v).ravel()
    return out


def _key(mech):
    """The output key of one report (a row): the flat tuple the law's outputs use."""
    if not mech.unary:
        return lambda r: tuple(int(v) for v in r)
    sizes, n_bytes = mech.domain_sizes, mech.n_bytes
    if isinstance(mech, SMP):
        def smp_key(r):
            j = int(r[0]) | (int(r[1]) << 8)
            bits = np.unpackbits(np.asarray(r[2:2 + n_bytes[j]], dtype=np.uint8),
                                 bitorder="little")[:sizes[j]]
            return (j, *(int(b) for b in bits))
        return smp_key

    def key(r):
        out, start = [], 0
        for k, nb in zip(sizes, n_bytes):
            bits = np.unpackbits(np.asarray(r[start:start + nb], dtype=np.uint8),
                                 bitorder="little")[:k]
            out.extend(int(b) for b in bits)
            start += nb
        return tuple(out)
    return key


def _sample(mech, eps, xs, ids, gen):
    records = np.asarray(xs, dtype=np.int64).reshape(-1, mech.n_attributes)
    return mech.privatize(records, identities=np.asarray(ids, dtype=np.uint64), rng=gen)


def _channel(cls, name: str, choice: str, epsilon: float) -> Channel:
    key_name = "variant" if cls is RSpFD else "oracle"

    def build(eps):
        return cls(domain_sizes=MULTIDIM_DOMAIN, epsilon=eps, codebook_seed=_SEED,
                   **{key_name: choice})

    probe = build(epsilon)
    keyed = choice == "OLH"
    return Channel(name, f"{cls.__name__} over {choice}, domains {MULTIDIM_DOMAIN}, the whole "
                   "report's law" + (", per-identity public hashes" if keyed else ""),
                   epsilon, build, law=_law, sample=_sample, output_key=_key(probe),
                   keyed=keyed)


def _louder(cls):
    """``cls`` whose oracles perturb at ``LAW_FACTOR`` times their budget (parameters honest)."""
    class Louder(cls):  # type: ignore[valid-type, misc]
        def _perturb(self, j, values, ids, gen):
            return self.oracles[j].perturb(values, np.array([LAW_FACTOR * self.attribute_epsilon]),
                                           ids, gen)

    Louder.__name__ = Louder.__qualname__ = f"Louder{cls.__name__}"
    return Louder


@channels_of(SPL)
def _spl_channels(epsilon):
    chs = [_channel(SPL, f"spl-{o.lower()}", o, epsilon) for o in ("GRR", "OUE", "OLH")]
    grr = chs[0]
    fault = replace(grr, name="control:spl-grr-sampler", control_of=grr.name,
                    expect_violation=True,
                    build=lambda eps: _louder(SPL)(domain_sizes=MULTIDIM_DOMAIN, epsilon=eps,
                                                   oracle="GRR", codebook_seed=_SEED),
                    description="SPL over GRR perturbing at 1.5 eps / A (law honest)")
    return [*chs, fault]


@channels_of(SMP)
def _smp_channels(epsilon):
    return [_channel(SMP, f"smp-{o.lower()}", o, epsilon) for o in ("GRR", "OUE", "OLH")]


@channels_of(RSpFD)
def _rspfd_channels(epsilon):
    chs = [_channel(RSpFD, f"rspfd-{v.lower()}", v, epsilon)
           for v in ("GRR", "OUE-zero", "OUE-random")]
    grr = chs[0]
    amplified = paper_budget(epsilon, len(MULTIDIM_DOMAIN))
    paper = replace(grr, name="control:rspfd-grr-paper", control_of=grr.name,
                    expect_violation=True, mechanism_epsilon=amplified,
                    description="RS+FD[GRR] as the paper calibrates it: the sampled attribute "
                    "at ln(A (e^eps - 1) + 1), claiming eps (Arcolezi et al. 2021, Thm 1)")
    return [*chs, paper]


# --------------------------------------------------------------------------- numeric vectors
#: the mean audits: d = 2 dimensions (SampledMean samples k = 1 of them)
MEAN_DIMENSION = 2


def _mean_build(cls, randomizer, **extra):
    def build(eps):
        return cls(dimension=MEAN_DIMENSION, epsilon=eps, randomizer=randomizer, **extra)
    return build


def _duchi_mean_law(mech, eps, ids) -> ExactLaw:
    """Every input of {-1, 0, 1}^2; outputs (j, +-C) (k = 1) or (+-C, +-C) (k = d = 2)."""
    grid = list(itertools.product((-1.0, 0.0, 1.0), repeat=MEAN_DIMENSION))
    C = mech.scalar.C
    if mech.k == 1:
        outputs = [(j, s) for j in range(MEAN_DIMENSION) for s in (-C, C)]
        rows = []
        for x in grid:
            plus = mech.scalar.prob_plus(np.asarray(x))
            rows.append([p / MEAN_DIMENSION for j in range(MEAN_DIMENSION)
                         for p in (1 - plus[j], plus[j])])
    else:
        outputs = list(itertools.product((-C, C), repeat=MEAN_DIMENSION))
        rows = []
        for x in grid:
            plus = mech.scalar.prob_plus(np.asarray(x))
            rows.append([float(np.prod([plus[j] if s > 0 else 1 - plus[j]
                                        for j, s in enumerate(o)])) for o in outputs])
    return ExactLaw(grid, outputs, np.zeros(1, dtype=np.uint64), np.array([rows]))


def _mean_key(mech):
    if mech.k == 1:
        return lambda r: (int(r[0]), float(r[1]))
    return lambda r: tuple(float(v) for v in r[mech.k:])


def _mean_sample(mech, eps, xs, ids, gen):
    return mech.privatize(np.asarray(xs, dtype=np.float64).reshape(-1, MEAN_DIMENSION), rng=gen)


def _mean_draw(mech, eps, side, size, gen):
    """The sum of a report's values under the all-ones (side 0) or all-minus-ones vector.

    Piecewise's privacy loss is increasing in each output, so this sum
    orders the reports as the loss does (exactly so for one sampled value).
    """
    x = np.full((size, MEAN_DIMENSION), 1.0 if side == 0 else -1.0)
    return mech.privatize(x, rng=gen)[:, mech.k:].sum(axis=1)


def _wider(cls):
    """``cls`` whose scalar randomizer draws at twice its budget (parameters honest)."""
    class Wider(cls):  # type: ignore[valid-type, misc]
        def __init__(self, **kw):
            super().__init__(**kw)
            self.scalar = type(self.scalar)(epsilon=2 * self.epsilon / self.k)

    Wider.__name__ = Wider.__qualname__ = f"Wider{cls.__name__}"
    return Wider


def _mean_channels(cls, prefix, epsilon, **extra):
    duchi = Channel(f"{prefix}-duchi", f"{cls.__name__} over Duchi, d = {MEAN_DIMENSION}, "
                    "inputs {-1, 0, 1}^2, the whole report's law", epsilon,
                    _mean_build(cls, "Duchi", **extra), law=_duchi_mean_law,
                    sample=_mean_sample, output_key=_mean_key(_mean_build(cls, "Duchi",
                                                                         **extra)(epsilon)))
    piecewise = Channel(f"{prefix}-piecewise", f"{cls.__name__} over Piecewise, d = "
                        f"{MEAN_DIMENSION}, all ones vs all minus ones: the sum of the values",
                        epsilon, _mean_build(cls, "Piecewise", **extra), kind="empirical",
                        draw=_mean_draw)
    fault = replace(piecewise, name=f"control:{prefix}-piecewise-sampler",
                    control_of=piecewise.name, expect_violation=True,
                    build=_mean_build(_wider(cls), "Piecewise", **extra),
                    description=f"{cls.__name__} over Piecewise drawing at 2 eps (claims honest)")
    return [duchi, piecewise, fault]


@channels_of(SampledMean)
def _sampled_mean_channels(epsilon):
    return _mean_channels(SampledMean, "sampled-mean", epsilon, k=1)


@channels_of(SplitMean)
def _split_mean_channels(epsilon):
    return _mean_channels(SplitMean, "split-mean", epsilon)


# --------------------------------------------------------------------------- marginals
def _joint_law(mech, eps, ids) -> ExactLaw:
    """The joint symbol's oracle law: row ``x`` is the record's symbol's row (every identity)."""
    inputs = list(itertools.product(*[range(k) for k in mech.domain_sizes]))
    ids = np.atleast_1d(np.asarray(ids, dtype=np.uint64))
    tables = []
    for identity in ids.tolist():
        law = mech.joint_oracle.channel(mech.epsilon, identity)
        tables.append(np.array([law[np.ravel_multi_index(x, mech.domain_sizes)] for x in inputs]))
    return ExactLaw(inputs, list(range(tables[0].shape[1])), ids, np.stack(tables))


def _joint_channel(oracle: str, epsilon: float) -> Channel:
    def build(eps):
        return FullDomain(domain_sizes=MULTIDIM_DOMAIN, epsilon=eps, oracle=oracle,
                          codebook_seed=_SEED)

    return Channel(f"full-domain-{oracle.lower()}", f"FullDomain over {oracle}, domains "
                   f"{MULTIDIM_DOMAIN} (K = 6 joint symbols)", epsilon, build, law=_joint_law,
                   sample=_sample, keyed=oracle == "OLH")


@channels_of(FullDomain)
def _full_domain_channels(epsilon):
    grr, olh = _joint_channel("GRR", epsilon), _joint_channel("OLH", epsilon)

    class LouderFullDomain(FullDomain):
        def privatize(self, data, *, epsilons=None, identities=None, rng=None):
            louder = FullDomain(domain_sizes=self.domain_sizes, epsilon=LAW_FACTOR * self.epsilon,
                                oracle=self.oracle, codebook_seed=self.codebook_seed)
            return louder.privatize(data, identities=identities, rng=rng)

    fault = replace(grr, name="control:full-domain-grr-sampler", control_of=grr.name,
                    expect_violation=True,
                    build=lambda eps: LouderFullDomain(domain_sizes=MULTIDIM_DOMAIN, epsilon=eps,
                                                       oracle="GRR", codebook_seed=_SEED),
                    description="FullDomain over GRR perturbing at 1.5 eps (law honest)")
    return [grr, olh, fault]
