"""The experiments of the heavy-hitter family: ``fastldp reproduce heavy-hitters``."""

from ..registry import Experiment, register_experiment
from .reproduce import HeavyHittersResult, reproduce

__all__ = ["HeavyHittersResult", "reproduce"]

register_experiment(Experiment(
    name="heavy-hitters",
    family="heavyhitters",
    description=("top-k of Zipf items over 2^32: precision and NCR of PEM, TreeHist and SFP "
                 "against epsilon for k in {16, 32, 64}, and MGA's promotion of fake targets "
                 "against PEM with and without the detection decode"),
    run=reproduce,
))
