"""The method registry: mechanism families, their decoders, and one family run.

A method is named ``FAMILY-DECODER`` (``JPRS-Global``, ``JPRS-NoProjection``,
``NonPrivate-TopS``); a bare family name means its default decoder
(``P-RS-HR`` is ``P-RS-HR-Global``). A family privatizes a population once,
attack included, and every requested decoder reads those same reports, so a
cell's decoders differ only in aggregation (paper 000, section 7.1).

Adding a family or a decoder is one call; for the mechanisms of
:mod:`fastldp.relations` the adapters do the work::

    register_family("P-RS-HR", mechanism_family(
        lambda ctx: PaddedRelationSampling(shape=ctx.shape, k=ctx.k, s=ctx.s, oracle="hr",
                                           codebook_seed=ctx.codebook_seed,
                                           n_threads=ctx.n_threads)))
    register_decoder("P-RS-HR", "Global", mechanism_decoder("global"))
    register_decoder("JPRS", "Medoid", mechanism_decoder("medoid"))

A family's ``privatize(ctx) -> Privatized`` draws client coins from
``ctx.rng("clients")`` and passes its reports through :func:`attack_reports`,
which replaces the reports of ``ctx.corrupted`` by the configured attack's
legal outputs. A decoder ``decode(ctx, priv) -> ndarray (d1, d2)`` may keep
work shared between decoders in ``priv.cache``. A method the registry does
not know fails its rows with :class:`UnknownMethodError`; the grid goes on.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field
from typing import Callable

import numpy as np

__all__ = [
    "Context",
    "Privatized",
    "Family",
    "UnknownMethodError",
    "register_family",
    "register_decoder",
    "resolve_method",
    "known_methods",
    "run_family",
    "attack_reports",
    "mechanism_family",
    "mechanism_decoder",
    "ATTACKS",
]


class UnknownMethodError(KeyError):
    """A method name that names no registered family or decoder."""

    def __str__(self) -> str:  # KeyError would quote the message
        return str(self.args[0])


@dataclass(frozen=True)
class Context:
    """Everything one family needs for one cell; shared by all methods of the cell.

    Attributes
    ----------
    config : dict
        The cell's configuration (keys of :data:`fastldp.experiments.spec.DEFAULTS`).
    seed : int
    population : fastldp.relations.Population
    epsilons : float64 array, shape (n,)
        Realized budgets, shared by every family.
    shape, s, k, groups : the problem size and the medoid group count G.
    corrupted : intp array
        Identities whose reports the attacker replaces (empty when clean).
    true_support, false_support : intp arrays
        Flat pair indices ``row * d2 + col`` of the attacker's objective:
        push mass onto ``false_support`` and off ``true_support``.
    attack : str
        Attack kind, one of :data:`ATTACKS`.
    codebook_seed : int
        Public codebook seed of the cell.
    n_threads : int
        Kernel threads (results never depend on it).
    family : str
        The family being run (it keys the family's private streams).
    """

    config: dict
    seed: int
    population: object
    epsilons: np.ndarray
    shape: tuple
    s: int
    k: int
    groups: int
    corrupted: np.ndarray
    true_support: np.ndarray
    false_support: np.ndarray
    attack: str
    codebook_seed: int
    n_threads: int
    streams: Callable = field(repr=False)
    family: str = ""

    @property
    def attacked(self) -> bool:
        return self.corrupted.shape[0] > 0

    def rng(self, name: str) -> np.random.Generator:
        """A fresh generator for the named stream of this family (``"clients"``, ``"attacker"``)."""
        return np.random.default_rng(self.streams(name, self.family))


@dataclass
class Privatized:
    """One family's reports for one cell, attack applied.

    ``payload_bits`` (mean private bits per identity) overrides the family's
    registered value when it is not NaN. ``cache`` holds work several
    decoders share; ``requested`` names the decoders this run will call.
    """

    mechanism: object
    reports: object
    epsilons: np.ndarray
    attack_objective: float = math.nan
    payload_bits: float = math.nan
    cache: dict = field(default_factory=dict)
    requested: tuple = ()


@dataclass(frozen=True)
class Family:
    """A registered family (see :func:`register_family`)."""

    name: str
    privatize: Callable[[Context], Privatized]
    payload_bits: Callable[[Context], float]
    default_decoder: str
    note: str = ""


FAMILIES: dict[str, Family] = {}
DECODERS: dict[str, dict[str, Callable]] = {}


def register_family(name: str, privatize, *, payload_bits=math.nan, default_decoder: str = "Global",
                    note: str = "") -> None:
    """Register a mechanism family.

    Parameters
    ----------
    name : str
        Family name, the method-name prefix (may contain hyphens).
    privatize : callable ``(Context) -> Privatized``
    payload_bits : float or callable ``(Context) -> float``
        Private payload per identity in bits, used when ``privatize`` leaves
        ``Privatized.payload_bits`` NaN (NaN for a non-private reference).
    default_decoder : str
        The decoder a bare family name means.
    """
    bits = payload_bits if callable(payload_bits) else (lambda ctx, _b=float(payload_bits): _b)
    FAMILIES[name] = Family(name, privatize, bits, default_decoder, note)
    DECODERS.setdefault(name, {})


def register_decoder(family: str, name: str, decode) -> None:
    """Register ``decode(ctx, priv) -> (d1, d2) estimate`` as ``FAMILY-NAME``."""
    if family not in FAMILIES:
        raise UnknownMethodError(f"Register the family {family!r} before its decoders.")
    DECODERS[family][name] = decode


def known_methods() -> list[str]:
    """Every registered ``FAMILY-DECODER`` name."""
    return [f"{fam}-{dec}" for fam in FAMILIES for dec in DECODERS[fam]]


def resolve_method(method: str) -> tuple[str, str]:
    """Split a method name into (family, decoder); raise :class:`UnknownMethodError`."""
    for fam in sorted(FAMILIES, key=len, reverse=True):
        if method == fam:
            decoder = FAMILIES[fam].default_decoder
        elif method.startswith(fam + "-"):
            decoder = method[len(fam) + 1:]
        else:
            continue
        if decoder in DECODERS[fam]:
            return fam, decoder
        raise UnknownMethodError(
            f"Unknown method {method!r}: family {fam!r} has no decoder {decoder!r} "
            f"(registered: {', '.join(sorted(DECODERS[fam])) or 'none'})."
        )
    raise UnknownMethodError(
        f"Unknown method {method!r}: no registered family; the registry knows "
        f"{', '.join(known_methods())}."
    )


def run_family(ctx: Context, decoders) -> tuple[dict, float, float, float]:
    """Privatize once and run each decoder.

    Returns
    -------
    estimates : dict decoder -> ndarray or Exception
        A decoder that raised maps to its exception; the others still run.
    attack_objective : float
    payload_bits : float
    seconds : float
        The family's shared wall clock: privatization, attack and every decoder.
    """
    family = FAMILIES[ctx.family]
    t0 = time.perf_counter()
    priv = family.privatize(ctx)
    priv.requested = tuple(decoders)
    estimates = {}
    for name in decoders:
        try:
            est = np.asarray(DECODERS[ctx.family][name](ctx, priv), dtype=np.float64)
            estimates[name] = est.reshape(ctx.shape)
        except Exception as exc:  # one decoder's failure is its row's failure
            estimates[name] = exc
    seconds = time.perf_counter() - t0
    bits = priv.payload_bits if not math.isnan(priv.payload_bits) else family.payload_bits(ctx)
    return estimates, float(priv.attack_objective), float(bits), seconds


#: Attack kinds of the spec's ``attack`` parameter (see :mod:`fastldp.relations.attacks`).
ATTACKS = ("optimized", "random", "targeted")


def attack_reports(ctx: Context, mechanism, reports):
    """Replace the corrupted identities' reports by the configured attack's legal outputs.

    ``"optimized"`` maximizes the estimated mass on ``F`` minus the mass on
    ``S``; ``"random"`` sends uniform legal outputs (scored on the same
    objective); ``"targeted"`` pushes the first pair of ``F``. Works for any
    mechanism :func:`fastldp.relations.attacks.optimized_attack` accepts. Returns
    ``(reports, objective)``; clean cells come back unchanged with NaN.
    """
    if not ctx.attacked:
        return reports, math.nan
    from ...relations import attacks

    common = {"rng": ctx.rng("attacker")}
    if ctx.attack == "optimized":
        result = attacks.optimized_attack(mechanism, ctx.epsilons, ctx.corrupted,
                                          true_support=ctx.true_support,
                                          false_support=ctx.false_support, **common)
    elif ctx.attack == "random":
        result = attacks.random_attack(mechanism, ctx.epsilons, ctx.corrupted,
                                       true_support=ctx.true_support,
                                       false_support=ctx.false_support, **common)
    elif ctx.attack == "targeted":
        result = attacks.targeted_attack(mechanism, ctx.epsilons, ctx.corrupted,
                                         target=int(ctx.false_support[0]), **common)
    else:
        raise ValueError(f"Unknown attack {ctx.attack!r}; the attacks are {', '.join(ATTACKS)}.")
    return attacks.apply_attack(reports, result), float(result.objective)


# ---------------------------------------------------------------- adapters
def mechanism_family(make):
    """A family ``privatize`` for any :class:`fastldp.relations.RelationMechanism`.

    ``make(ctx)`` builds the mechanism (use ``ctx.codebook_seed`` and
    ``ctx.n_threads``); the clients privatize with ``ctx.rng("clients")``,
    :func:`attack_reports` applies the attack, and the payload is the mean of
    ``mechanism.payload_bits``.
    """

    def privatize(ctx: Context) -> Privatized:
        mech = make(ctx)
        reports = mech.privatize(ctx.population.relations, epsilons=ctx.epsilons,
                                 rng=ctx.rng("clients"))
        reports, objective = attack_reports(ctx, mech, reports)
        bits = float(np.mean(mech.payload_bits(ctx.epsilons)))
        return Privatized(mech, reports, ctx.epsilons, objective, payload_bits=bits)

    return privatize


def mechanism_decoder(name: str):
    """Decoder ``name`` of :func:`fastldp.relations.decode` (``"global"``, ``"medoid"``,
    ``"pooled"`` or ``"none"``), with ``G = ctx.groups``.

    The first such decoder of a family run decodes every requested one in a
    single call, so sanitizing and the group estimates are shared.
    """

    def decode(ctx: Context, priv: Privatized) -> np.ndarray:
        done = priv.cache.setdefault("decoded", {})
        if name not in done:
            wanted = [getattr(DECODERS[ctx.family][d], "mechanism_decoder", None)
                      for d in priv.requested]
            wanted = list(dict.fromkeys(w for w in wanted + [name] if w is not None))
            done.update(priv.mechanism.decode(priv.reports, priv.epsilons, decoders=wanted,
                                              n_groups=ctx.groups))
        return done[name].matrix

    decode.mechanism_decoder = name
    return decode


# ---------------------------------------------------------------- JPRS
def _jprs(ctx: Context):
    from ...relations.jprs import JPRS

    return JPRS(shape=ctx.shape, k=ctx.k, s=ctx.s, codebook_seed=ctx.codebook_seed,
                n_threads=ctx.n_threads)


register_family("JPRS", mechanism_family(_jprs))
register_decoder("JPRS", "Global", mechanism_decoder("global"))
register_decoder("JPRS", "Medoid", mechanism_decoder("medoid"))
register_decoder("JPRS", "Pooled", mechanism_decoder("pooled"))
# the projection ablation of section 7.6: the raw Eq. (8) sketch as the estimate
register_decoder("JPRS", "NoProjection", mechanism_decoder("none"))


# ---------------------------------------------------------------- P-RS
def _padded_sampling(oracle: str):
    def make(ctx: Context):
        from ...relations.padded_sampling import PaddedRelationSampling

        return PaddedRelationSampling(shape=ctx.shape, k=ctx.k, s=ctx.s, oracle=oracle,
                                      codebook_seed=ctx.codebook_seed, n_threads=ctx.n_threads)

    return make


for _oracle in ("grr", "olh", "hr"):
    _family = "P-RS-" + _oracle.upper()
    register_family(_family, mechanism_family(_padded_sampling(_oracle)))
    register_decoder(_family, "Global", mechanism_decoder("global"))
    register_decoder(_family, "Medoid", mechanism_decoder("medoid"))
    register_decoder(_family, "Pooled", mechanism_decoder("pooled"))
    register_decoder(_family, "NoProjection", mechanism_decoder("none"))


# ---------------------------------------------------------------- NonPrivate
def _nonprivate_privatize(ctx: Context) -> Privatized:
    # a reference, not a privacy comparator: it sees the true sets and no attack
    return Privatized(None, ctx.population.empirical_mean, ctx.epsilons)


def _top_s(ctx: Context, priv: Privatized) -> np.ndarray:
    from ..._kernels._projection import project_sparse_capped

    v = np.ascontiguousarray(priv.reports, dtype=np.float64).ravel()
    return project_sparse_capped(v, ctx.s, float(ctx.k))[0]


register_family("NonPrivate", _nonprivate_privatize, payload_bits=math.nan,
                default_decoder="TopS", note="exact empirical mean; never attacked")
register_decoder("NonPrivate", "TopS", _top_s)
