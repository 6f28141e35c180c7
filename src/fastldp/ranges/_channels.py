"""The audit's exact channels of the range mechanisms, per level, and their negative controls.

Each mechanism on a tiny domain (``D = 4``; the hierarchy with ``B = 2``
has levels of 2 and 4 nodes), every value an input, with the exact law of
its *whole* report built from its levels' oracle laws ``R_l[node, y]``
(:meth:`FrequencyOracle.channel`, at the level's budget), where
``node_l(x) = x // span_l``:

- users split by level: the report ``(l, y)`` has ``P = w_l R_l[node_l(x), y]``
  (``w_l`` the level's weight, ``1 / L`` by default);
- budget split: the report ``(y_1, ..., y_L)`` has ``P = prod_l R_l[node_l(x), y_l]``
  with level ``l`` at ``w_l epsilon``;
- flat: ``P = R[x, y]``.

The tiny levels fit one int64 word each (OUE's bits are the word, bit
``v`` the node ``v``, the order of ``UnaryEncoding.channel``), so a
report's key is its row. The controls: the hierarchy (GRR levels) and the
flat baseline (OUE) perturbing at ``LAW_FACTOR`` times their budget (a
sampler fault, law honest), and the budget split whose every level is
reported at the whole ``epsilon`` (the composition forgotten: built at
``2 epsilon``, claiming ``epsilon``), whose exact law the audit refutes. :mod:`fastldp.audit` adds a law fault of
every channel.
"""

from __future__ import annotations

import itertools
from dataclasses import replace

import numpy as np

from ..channels import LAW_FACTOR, Channel, ExactLaw, channels_of
from .flat import FlatRange
from .hierarchical import HierarchicalHistogram

__all__ = ["RANGE_DOMAIN", "RANGE_BRANCHING", "range_law"]

#: the audits' domain and branching: levels of 2 and 4 nodes
RANGE_DOMAIN, RANGE_BRANCHING = 4, 2
_SEED = 20240614


def range_law(mech, eps, ids) -> ExactLaw:
    """The exact law of ``mech``'s whole report for every value of its (tiny) domain.

    ``eps`` is the mechanism's budget (the law's levels report at
    ``eps`` when users are split, ``w_l eps`` when the budget is).
    """
    L = mech.n_levels
    w = mech.level_weights
    level_eps = [eps if mech.split == "users" else eps * float(w[li]) for li in range(L)]
    inputs = list(range(mech.domain_size))
    ids = np.atleast_1d(np.asarray(ids, dtype=np.uint64))
    tables = []
    outputs: list = []
    for identity in ids.tolist():
        laws = [mech.oracles[li].channel(level_eps[li], identity) for li in range(L)]
        nodes = [[x // mech.level_spans[li] for x in inputs] for li in range(L)]
        if mech.split == "users":
            outputs = [(li, y) for li in range(L) for y in range(laws[li].shape[1])]
            rows = [np.concatenate([laws[li][nodes[li][x]] * w[li] for li in range(L)])
                    for x in range(len(inputs))]
        else:
            outputs = list(itertools.product(*[range(law.shape[1]) for law in laws]))
            rows = []
            for x in range(len(inputs)):
                row = np.ones(1)
                for li in range(L):
                    row = np.outer(row, laws[li][nodes[li][x]]).ravel()
                rows.append(row)
        tables.append(np.array(rows))
    return ExactLaw(inputs, outputs, ids, np.stack(tables))


def _key(r) -> tuple:
    return tuple(int(v) for v in r)


def _sample(mech, eps, xs, ids, gen):
    return mech.privatize(np.asarray(xs, dtype=np.int64),
                          identities=np.asarray(ids, dtype=np.uint64), rng=gen)


def _hh_build(oracle: str, split: str = "users", cls=HierarchicalHistogram):
    def build(eps):
        return cls(epsilon=eps, domain_size=RANGE_DOMAIN, branching=RANGE_BRANCHING,
                   oracle=oracle, split=split, codebook_seed=_SEED)
    return build


def _flat_build(oracle: str, cls=FlatRange):
    def build(eps):
        return cls(epsilon=eps, domain_size=RANGE_DOMAIN, oracle=oracle, codebook_seed=_SEED)
    return build


def _louder(cls, factor: float = LAW_FACTOR):
    """``cls`` whose levels perturb at ``factor`` times their budget (parameters honest)."""
    class Louder(cls):  # type: ignore[valid-type, misc]
        def _build_levels(self, sizes, spans, weights=None):
            super()._build_levels(sizes, spans, weights)
            for oracle in self.oracles:
                inner = oracle.perturb

                def perturb(values, eps, identities, rng, _inner=inner):
                    return _inner(values, factor * eps, identities, rng)
                oracle.perturb = perturb

    Louder.__name__ = Louder.__qualname__ = f"Louder{cls.__name__}"
    return Louder


def _channel(name: str, description: str, epsilon: float, build, keyed: bool = False) -> Channel:
    return Channel(name, description, epsilon, build, law=range_law, sample=_sample,
                   output_key=_key, keyed=keyed)


@channels_of(HierarchicalHistogram)
def _hierarchical_channels(epsilon):
    chs = [_channel(f"hh-{o}", f"HierarchicalHistogram over {o.upper()}, D = {RANGE_DOMAIN}, "
                    f"B = {RANGE_BRANCHING}, users split by level: the report (level, output)"
                    + (", per-identity public hashes" if o == "olh" else ""),
                    epsilon, _hh_build(o), keyed=o == "olh")
           for o in ("grr", "oue", "olh", "hr")]
    budget = _channel("hh-budget-oue", f"HierarchicalHistogram over OUE, D = {RANGE_DOMAIN}, "
                      f"B = {RANGE_BRANCHING}, every level at epsilon / 2", epsilon,
                      _hh_build("oue", "budget"))
    grr = chs[0]
    louder = replace(grr, name="control:hh-grr-sampler", control_of=grr.name,
                     expect_violation=True,
                     build=_hh_build("grr", cls=_louder(HierarchicalHistogram)),
                     description="HierarchicalHistogram over GRR perturbing at 1.5 eps "
                     "(law honest)")
    forgotten = replace(budget, name="control:hh-budget-oue-composition", control_of=budget.name,
                        expect_violation=True, mechanism_epsilon=2 * epsilon,
                        description="HierarchicalHistogram, budget split, every level at the "
                        "whole epsilon, claiming epsilon (the composition over 2 levels "
                        "forgotten)")
    return [*chs, budget, louder, forgotten]


@channels_of(FlatRange)
def _flat_channels(epsilon):
    chs = [_channel(f"flat-range-{o}", f"FlatRange over {o.upper()}, D = {RANGE_DOMAIN}",
                    epsilon, _flat_build(o)) for o in ("grr", "oue")]
    oue = chs[1]
    louder = replace(oue, name="control:flat-range-oue-sampler", control_of=oue.name,
                     expect_violation=True, build=_flat_build("oue", cls=_louder(FlatRange)),
                     description="FlatRange over OUE perturbing at 1.5 eps (law honest)")
    return [*chs, louder]
