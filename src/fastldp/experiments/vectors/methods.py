"""The methods of paper 001, section 8, built for one population and one budget.

============== ========================================================================
method         mechanism
============== ========================================================================
RPC            :class:`~fastldp.vectors.RPC`, ``Q`` the bounded randomizer of
               smallest ``V_eps`` (section 8.1: Duchi for small eps, Piecewise above
               about eps = 1.3), ``R = ceil(sqrt(m))``
RPC-minvar     RPC with ``R="min-variance"`` and ``randomizer="auto"``: the bounded
               ``Q`` and the integer ``R`` in ``1..m`` of smallest exact variance
               (:meth:`~fastldp.vectors.RPC.variance`; Duchi with ``R = 1`` at small eps).
               Not in the paper. General values take the rounded route, where the
               exact variance is known
RPC-Duchi      RPC with Duchi et al.'s two-point ``Q``
RPC-Piecewise  RPC with the Piecewise ``Q``
PCKV-UE        :class:`~fastldp.vectors.PCKVUE` (default budget split)
PCKV-GRR       :class:`~fastldp.vectors.PCKVGRR`
PrivKVM        :class:`~fastldp.vectors.PrivKVM` (3 rounds)
Succinct       :class:`~fastldp.vectors.Succinct`, ``b = 1``, ``Q`` as RPC's,
               ``R = sqrt(m ln n) / 2.5`` (the package default)
Succinct-bigR  Succinct with ``R = sqrt(m ln n)``, section 3.3's order read with constant 1
Collision      :class:`~fastldp.vectors.Collision`, ``t = round(m e^eps + 2m - 1)``
============== ========================================================================

Values (section 8.1): frequency data (``{0, 1}``) run RPC on the ternary
route and Collision over ``d`` symbols, with the final clipping to
``[0, 1]``; signed data (``{-1, 1}``) run RPC on the ternary route and
Collision over ``2d`` symbols, clipped to ``[-1, 1]``; general values run
Collision over ``2d`` symbols after rounding (Eq. (35)) and RPC on the route
section 6 prefers: the direct route (``R = beta sqrt(m ln n) + 1``) when
``beta sqrt(ln n) < 1``, otherwise the indirect (rounded) one. ``beta`` is
the population's (``0.3`` for the truncated normal data, as the paper) or,
on real data, the smallest one Assumption 1 allows:
``max_i sqrt(||x_i||^2 / m)``.
"""

from __future__ import annotations

from dataclasses import dataclass
from math import log, sqrt

from ...vectors.pckv import PCKVGRR, PCKVUE
from ...vectors.rpc import RPC
from ...vectors.collision import Collision
from ...vectors.privkvm import PrivKVM
from ...vectors.succinct import Succinct

__all__ = ["METHODS", "FAMILIES", "Population", "build_method", "UnknownMethodError"]

#: method name -> (family, options)
METHODS = {
    "RPC": ("RPC", {"randomizer": "auto"}),
    "RPC-minvar": ("RPC", {"randomizer": "auto", "R": "min-variance"}),
    "RPC-Duchi": ("RPC", {"randomizer": "duchi"}),
    "RPC-Piecewise": ("RPC", {"randomizer": "piecewise"}),
    "PCKV-UE": ("PCKV-UE", {}),
    "PCKV-GRR": ("PCKV-GRR", {}),
    "PrivKVM": ("PrivKVM", {}),
    "Succinct": ("Succinct", {"R_scale": 1.0 / 2.5}),
    "Succinct-bigR": ("Succinct", {"R_scale": 1.0}),
    "Collision": ("Collision", {}),
}
FAMILIES = ("RPC", "PCKV-UE", "PCKV-GRR", "PrivKVM", "Succinct", "Collision")


class UnknownMethodError(ValueError):
    pass


@dataclass(frozen=True)
class Population:
    """One trial's users and how their values are handled.

    Attributes
    ----------
    x : SparseVectors
    kind : str
        Population kind of the spec.
    values : {"frequency", "signed", "general"}
    m : int
        Most items per user, the mechanisms' ``m``.
    beta : float or None
        Assumption 1's bound (general values).
    route : str or None
        RPC's route forced by the population table (``route = "direct"``).
    """

    x: object
    kind: str
    values: str
    m: int
    beta: float | None = None
    route: str | None = None

    @property
    def clip_range(self) -> str:
        return "frequency" if self.values == "frequency" else "mean"


def _rpc_route(pop: Population, n: int, R=None) -> str:
    if pop.values != "general":
        return "ternary"
    if R == "min-variance":  # defined on the indirect route only
        return "rounded"
    if pop.route is not None:
        return pop.route
    return "direct" if pop.beta is not None and pop.beta * sqrt(log(n)) < 1 else "rounded"


def build_method(method: str, pop: Population, *, eps: float, clip: bool, codebook_seed: int,
                 n_threads: int = 1):
    """Return ``(mechanism, info)`` for ``method`` on ``pop`` at budget ``eps``.

    ``info`` holds the result columns ``randomizer``, ``route``, ``R`` and ``alpha``.
    """
    if method not in METHODS:
        raise UnknownMethodError(
            f"Unknown method {method!r}; the methods are {', '.join(METHODS)}.")
    family, options = METHODS[method]
    x = pop.x
    n, d, m = x.n, x.d, pop.m
    clip_range = pop.clip_range if clip else None
    info = {"randomizer": "", "route": "", "R": None, "alpha": None}
    if family == "RPC":
        route = _rpc_route(pop, n, options.get("R"))
        kwargs = {}
        if route == "direct":
            kwargs = {"beta": pop.beta, "n_users": n}
        if "R" in options:
            kwargs["R"] = options["R"]
        mech = RPC(d=d, m=m, epsilon=eps, randomizer=options["randomizer"], values=route,
                   clip_estimate=clip_range, codebook_seed=codebook_seed, n_threads=n_threads,
                   **kwargs)
        info.update(randomizer=mech.randomizer.name, route=route, R=mech.R, alpha=mech.alpha)
    elif family == "Succinct":
        R = max(1.0, options["R_scale"] * sqrt(m * log(n)))
        mech = Succinct(d=d, m=m, epsilon=eps, R=R, randomizer="auto", clip_estimate=clip_range,
                        codebook_seed=codebook_seed, n_threads=n_threads)
        info.update(randomizer=mech.randomizer.name, R=mech.R)
    elif family == "Collision":
        values = "frequency" if pop.values == "frequency" else "signed"
        mech = Collision(d=d, m=m, epsilon=eps, values=values, clip_estimate=clip_range,
                         codebook_seed=codebook_seed, n_threads=n_threads)
        info.update(route=values)
    elif family == "PCKV-UE":
        mech = PCKVUE(d=d, m=m, epsilon=eps, clip_estimate=clip_range)
    elif family == "PCKV-GRR":
        mech = PCKVGRR(d=d, m=m, epsilon=eps, clip_estimate=clip_range)
    else:
        mech = PrivKVM(d=d, m=m, epsilon=eps, clip_estimate=clip_range)
    return mech, info
