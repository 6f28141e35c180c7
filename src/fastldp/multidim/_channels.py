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
    name = mech.bases[j] if hasattr(mech, "bases") else mech.chosen[j]
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
    if mech.bases[j] == "GRR":
        return np.full(k, 1.0 / k)
    if mech.fakes[j] == "random":
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


def _mixed_key(mech):
    """The key of a report of ``oracle="auto"`` mixing symbol and bit-packed attributes.

    int64 rows: a symbol attribute is one column, a bit-packed one a byte per
    column; SMP's rows start with the attribute index.
    """
    sizes, n_bytes, unary = mech.domain_sizes, mech.n_bytes, mech._unary_parts

    def part(r, j, start):
        if unary[j]:
            bits = np.unpackbits(np.asarray(r[start:start + n_bytes[j]], dtype=np.uint8),
                                 bitorder="little")[:sizes[j]]
            return [int(b) for b in bits], start + n_bytes[j]
        return [int(r[start])], start + 1

    if isinstance(mech, SMP):
        def smp_key(r):
            j = int(r[0])
            return (j, *part(r, j, 1)[0])
        return smp_key

    def key(r):
        out, start = [], 0
        for j in range(len(sizes)):
            got, start = part(r, j, start)
            out.extend(got)
        return tuple(out)
    return key


def _key(mech):
    """The output key of one report (a row): the flat tuple the law's outputs use."""
    if not mech.unary and any(getattr(mech, "_unary_parts", ())):
        return _mixed_key(mech)
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


#: the auto channels' domains: at eps = 1, SPL's attribute of 9 values goes through OUE and the
#: one of 2 through GRR (a mixed report); the choice follows the budget the channel is built at
AUTO_DOMAIN = (2, 9)


def _auto_channel(cls, name: str, epsilon: float) -> Channel:
    """``oracle="auto"``: the law and the keys follow the layout the built mechanism chose."""
    key_name = "variant" if cls is RSpFD else "oracle"

    def build(eps):
        return cls(domain_sizes=AUTO_DOMAIN, epsilon=eps, codebook_seed=_SEED,
                   **{key_name: "auto"})

    def sample(mech, eps, xs, ids, gen):
        key = _key(mech)
        return [key(r) for r in _sample(mech, eps, xs, ids, gen)]

    return Channel(name, f"{cls.__name__} with {key_name}='auto', domains {AUTO_DOMAIN} (a "
                   "symbol and a bit-packed attribute where the budget makes the choices "
                   "differ), the whole report's law", epsilon, build, law=_law, sample=sample,
                   output_key=lambda key: key)


@channels_of(SPL)
def _spl_channels(epsilon):
    chs = [_channel(SPL, f"spl-{o.lower()}", o, epsilon) for o in ("GRR", "OUE", "OLH")]
    chs.append(_auto_channel(SPL, "spl-auto", epsilon))
    grr = chs[0]
    fault = replace(grr, name="control:spl-grr-sampler", control_of=grr.name,
                    expect_violation=True,
                    build=lambda eps: _louder(SPL)(domain_sizes=MULTIDIM_DOMAIN, epsilon=eps,
                                                   oracle="GRR", codebook_seed=_SEED),
                    description="SPL over GRR perturbing at 1.5 eps / A (law honest)")
    return [*chs, fault]


@channels_of(SMP)
def _smp_channels(epsilon):
    return [*(_channel(SMP, f"smp-{o.lower()}", o, epsilon) for o in ("GRR", "OUE", "OLH")),
            _auto_channel(SMP, "smp-auto", epsilon)]


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
    # Hybrid mixes Piecewise's continuous outputs with Duchi's atoms: no finite law, so
    # audited as Piecewise is, by the sum of the values under all ones vs all minus ones
    hybrid = replace(piecewise, name=f"{prefix}-hybrid", build=_mean_build(cls, "Hybrid", **extra),
                     description=f"{cls.__name__} over Hybrid, d = {MEAN_DIMENSION}, all ones vs "
                                 "all minus ones: the sum of the values")
    hybrid_fault = replace(hybrid, name=f"control:{prefix}-hybrid-sampler",
                           control_of=hybrid.name, expect_violation=True,
                           build=_mean_build(_wider(cls), "Hybrid", **extra),
                           description=f"{cls.__name__} over Hybrid drawing at 2 eps "
                                       "(claims honest)")
    return [duchi, piecewise, fault, hybrid, hybrid_fault]


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


# --------------------------------------------------------------------------- marginal release
# Cormode et al.'s six protocols on d = 3 binary attributes (k = 2 for the sampled ones): the
# law of the whole report, written from the papers' definitions (not from the samplers), and
# a control per protocol whose sampler perturbs at LAW_FACTOR times its budget (law honest).
from . import _marginal_release as _mr  # noqa: E402

#: the audits' binary attributes and marginal order
RELEASE_ATTRIBUTES, RELEASE_ORDER = 3, 2


def _rr(eps: float) -> tuple:
    p = 1.0 / (1.0 + np.exp(-eps))
    return p, 1.0 - p


def _cell(x, attributes) -> int:
    out = 0
    for a in attributes:
        out = 2 * out + int(x[a])
    return out


def marginal_release_law(mech) -> tuple:
    """``(inputs, outputs, P)`` of one report of a Cormode et al. protocol, from its definition.

    Inputs are every record of ``{0, 1}^d``; outputs are the report rows as
    tuples. The sampled protocols draw their index uniformly.
    """
    d, eps = mech.n_attributes, mech.epsilon
    inputs = list(itertools.product((0, 1), repeat=d))
    name = next(c.__name__ for c in type(mech).__mro__  # a control's subclass: its protocol
                if c.__name__ in ("InpRR", "InpPS", "InpHT", "MargRR", "MargPS", "MargHT"))
    rows: list = []
    if name in ("InpRR", "InpPS"):
        size = 1 << d
        if name == "InpRR":
            p, q = _rr(eps / 2)
            outputs = list(itertools.product((0, 1), repeat=size))
            for x in inputs:
                c = _cell(x, range(d))
                rows.append([float(np.prod([(p if i == c else q) if b else
                                            (1 - p if i == c else 1 - q)
                                            for i, b in enumerate(y)])) for y in outputs])
        else:
            e = np.exp(eps)
            outputs = [(y,) for y in range(size)]
            for x in inputs:
                c = _cell(x, range(d))
                rows.append([(e if y == c else 1.0) / (e + size - 1) for (y,) in outputs])
        return inputs, outputs, np.array(rows)
    if name == "InpHT" or name == "MargHT":
        p, q = _rr(eps)
        if name == "InpHT":
            alphas = [a for w in range(1, mech.k + 1)
                      for a in itertools.combinations(range(d), w)]
        else:
            alphas = [tuple(a for i, a in enumerate(beta) if mask >> (mech.k - 1 - i) & 1)
                      for beta in itertools.combinations(range(d), mech.k)
                      for mask in range(1, 1 << mech.k)]
        outputs = [(j, b) for j in range(len(alphas)) for b in (0, 1)]
        for x in inputs:
            row = []
            for j, alpha in enumerate(alphas):
                plus = sum(x[a] for a in alpha) % 2 == 0
                row += [(q if plus else p) / len(alphas), (p if plus else q) / len(alphas)]
            rows.append(row)
        return inputs, outputs, np.array(rows)
    sets = list(itertools.combinations(range(d), mech.k))
    cells = 1 << mech.k
    if name == "MargPS":
        e = np.exp(eps)
        outputs = [(b, y) for b in range(len(sets)) for y in range(cells)]
        for x in inputs:
            rows.append([(e if y == _cell(x, sets[b]) else 1.0) / (e + cells - 1) / len(sets)
                         for b, y in outputs])
        return inputs, outputs, np.array(rows)
    p, q = _rr(eps / 2)  # MargRR
    outputs = [(b, *y) for b in range(len(sets))
               for y in itertools.product((0, 1), repeat=cells)]
    for x in inputs:
        row = []
        for b, *y in outputs:
            c = _cell(x, sets[b])
            row.append(float(np.prod([(p if i == c else q) if v else (1 - p if i == c else 1 - q)
                                      for i, v in enumerate(y)])) / len(sets))
        rows.append(row)
    return inputs, outputs, np.array(rows)


def _release_law(mech, eps, ids) -> ExactLaw:
    inputs, outputs, probs = marginal_release_law(mech)
    ids = np.atleast_1d(np.asarray(ids, dtype=np.uint64))
    return ExactLaw(inputs, outputs, ids, np.stack([probs] * ids.shape[0]))


def _release_sample(mech, eps, xs, ids, gen):
    return mech.privatize(np.asarray(xs, dtype=np.int64).reshape(-1, mech.n_attributes),
                          rng=gen)


def _release_channels(cls, epsilon):
    extra = {} if cls in (_mr.InpRR, _mr.InpPS) else {"k": RELEASE_ORDER}

    def build(eps):
        return cls(n_attributes=RELEASE_ATTRIBUTES, epsilon=eps, codebook_seed=_SEED, **extra)

    class _Louder(cls):  # type: ignore[valid-type, misc]
        """The sampler of ``cls`` at LAW_FACTOR times the budget; parameters and law honest."""

        def _privatize_rows(self, x, gen, ids=None):
            return cls(n_attributes=self.n_attributes, epsilon=LAW_FACTOR * self.epsilon,
                       codebook_seed=self.codebook_seed, **extra)._privatize_rows(x, gen, ids)

    _Louder.__name__ = _Louder.__qualname__ = f"_Louder{cls.__name__}"
    lower = cls.__name__.lower()
    honest = Channel(lower, f"{cls.__name__}, d = {RELEASE_ATTRIBUTES} binary attributes"
                     + (f", k = {RELEASE_ORDER}" if extra else "") + ", the whole report's law",
                     epsilon, build, law=_release_law, sample=_release_sample,
                     output_key=lambda r: tuple(int(v) for v in r))
    fault = replace(honest, name=f"control:{lower}-sampler", control_of=lower,
                    expect_violation=True,
                    build=lambda eps: _Louder(n_attributes=RELEASE_ATTRIBUTES, epsilon=eps,
                                             codebook_seed=_SEED, **extra),
                    description=f"{cls.__name__} perturbing at {LAW_FACTOR} eps (law honest)")
    return [honest, fault]


for _cls in (_mr.InpRR, _mr.InpPS, _mr.InpHT, _mr.MargRR, _mr.MargPS, _mr.MargHT):
    channels_of(_cls)(lambda epsilon, _c=_cls: _release_channels(_c, epsilon))


# CALM on three binary attributes, reporting the three pairs: the group is drawn uniformly,
# then its cell of 4 goes through GRR (law from its definition) or OLH (the oracle's exact law
# per identity). Groups of equal cross products have equal laws bit for bit, so the audit's
# witness of the largest ratio is not split by rounding between groups (with groups of 2, 3
# and 6 cells the generic 1.5 eps control found no witness event).
from ._calm import CALM  # noqa: E402

CALM_DOMAIN = (2, 2, 2)
CALM_MARGINALS = [[0, 1], [0, 2], [1, 2]]


def _calm_law(mech, eps, ids) -> ExactLaw:
    inputs = list(itertools.product(*[range(k) for k in mech.domain_sizes]))
    ids = np.atleast_1d(np.asarray(ids, dtype=np.uint64))
    M = len(mech.sets)
    outputs = [(g, y) for g in range(M) for y in range(mech._outputs[g])]
    tables = []
    for identity in ids.tolist():
        laws = []
        for g, s in enumerate(mech.sets):
            D = mech._group_domain[g]
            if mech.group_oracles[g] is None:
                e = np.exp(mech.epsilon)
                law = np.full((D, D), 1.0 / (e + D - 1))
                np.fill_diagonal(law, e / (e + D - 1))
            else:
                law = mech.group_oracles[g].channel(mech.epsilon, identity)
            laws.append(law)
        rows = []
        for x in inputs:
            row = []
            for g, s in enumerate(mech.sets):
                cell = int(np.ravel_multi_index([x[a] for a in s],
                                                [mech.domain_sizes[a] for a in s]))
                row.extend(laws[g][cell] / M)
            rows.append(row)
        tables.append(np.array(rows))
    return ExactLaw(inputs, outputs, ids, np.stack(tables))


def _calm_sample(mech, eps, xs, ids, gen):
    records = np.asarray(xs, dtype=np.int64).reshape(-1, mech.n_attributes)
    return mech.privatize(records, identities=np.asarray(ids, dtype=np.uint64), rng=gen)


@channels_of(CALM)
def _calm_channels(epsilon):
    def build(oracle):
        return lambda eps: CALM(domain_sizes=CALM_DOMAIN, epsilon=eps,
                                marginals=CALM_MARGINALS, oracle=oracle, codebook_seed=_SEED)

    chs = [Channel(f"calm-{o.lower()}", f"CALM over {o}, domains {CALM_DOMAIN}, marginals "
                   f"{CALM_MARGINALS}, the whole report's law", epsilon, build(o),
                   law=_calm_law, sample=_calm_sample,
                   output_key=lambda r: tuple(int(v) for v in r), keyed=o == "OLH")
           for o in ("GRR", "OLH")]

    class _LouderCALM(CALM):
        def _privatize_rows(self, x, gen, ids=None):
            return CALM(domain_sizes=self.domain_sizes, epsilon=LAW_FACTOR * self.epsilon,
                        marginals=self.marginals, oracle=self.oracle,
                        codebook_seed=self.codebook_seed)._privatize_rows(x, gen, ids)

    fault = replace(chs[0], name="control:calm-grr-sampler", control_of=chs[0].name,
                    expect_violation=True,
                    build=lambda eps: _LouderCALM(domain_sizes=CALM_DOMAIN, epsilon=eps,
                                                  marginals=CALM_MARGINALS, oracle="GRR",
                                                  codebook_seed=_SEED),
                    description=f"CALM over GRR perturbing at {LAW_FACTOR} eps (law honest)")
    return [*chs, fault]
