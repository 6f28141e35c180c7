"""The experiments of the heavy-hitter family: ``fastldp reproduce heavy-hitters``."""

from ..quick import resolution_of
from ..registry import Experiment, register_experiment
from .reproduce import HeavyHittersResult, reproduce
from .text import reproduce_text

__all__ = ["HeavyHittersResult", "reproduce", "reproduce_text", "resolution"]


def resolution(result) -> list:
    """The differences in precision and NCR the run's repetitions resolve (its accuracy table:
    one row per protocol, k and epsilon; none with a single repetition)."""
    rows = result.tables.get("accuracy") or []
    found = (resolution_of(((r[m], r.get(f"{m}_sd"), r["repetitions"]) for r in rows), label)
             for m, label in (("precision", "precision"), ("ncr", "NCR")))
    return [r for r in found if r is not None]

register_experiment(Experiment(
    name="heavy-hitters",
    family="heavyhitters",
    description=("top-k of Zipf items over 2^32: precision and NCR of PEM, TreeHist and SFP "
                 "against epsilon for k in {16, 32, 64}, and MGA's promotion of fake targets "
                 "against PEM with and without the detection decode"),
    run=reproduce,
    resolution=resolution,
))

register_experiment(Experiment(
    name="heavy-hitters-text",
    family="heavyhitters",
    description=("heavy hitters on real text (wordfreq words in eight languages, the standard "
                 "library's def lines): precision and NCR of PEM, TreeHist and SFP beside the "
                 "known-dictionary ceiling, epsilon 2, 4, 8 and k 16, 32 at 10^6 users"),
    run=reproduce_text,
))
