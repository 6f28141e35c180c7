"""The experiments of the longitudinal family: ``fastldp reproduce longitudinal``."""

from ..registry import Experiment, register_experiment
from .reproduce import LongitudinalResult, reproduce

__all__ = ["LongitudinalResult", "headline", "reproduce"]


def headline(result) -> dict:
    """The protocol of smallest analytic MSE per domain size (over every ``epsilon_inf``).

    The ranking is analytic (exact), so the quick grid, whose domain sizes are
    the full grid's, gives the full run's headline (``quick_ranks``); the
    simulated winners in brackets are marked where the repetitions do not
    resolve them.
    """
    by_size: dict = {}
    for w in result.tables["winners"]:
        by_size.setdefault(str(w["domain_size"]), set()).add(w["best_analytic"])
    return {"winner by domain size": {d: "/".join(sorted(names))
                                      for d, names in by_size.items()}}


register_experiment(Experiment(
    name="longitudinal",
    family="longitudinal",
    description=("memoized frequency estimation over rounds: MSE of L-GRR, L-OUE, L-OSUE, L-SUE, "
                 "L-SOUE and dBitFlipPM against epsilon_inf at fixed epsilon_1, which protocol "
                 "wins where, multi-freq-ldpy side by side (when installed; the report says "
                 "so when not)"),
    run=reproduce,
    quick_ranks=True,
    headline=headline,
))
