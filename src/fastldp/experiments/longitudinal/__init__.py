"""The experiments of the longitudinal family: ``fastldp reproduce longitudinal``."""

from ..registry import Experiment, register_experiment
from .reproduce import LongitudinalResult, reproduce

__all__ = ["LongitudinalResult", "reproduce"]

register_experiment(Experiment(
    name="longitudinal",
    family="longitudinal",
    description=("memoized frequency estimation over rounds: MSE of L-GRR, L-OUE, L-OSUE, L-SUE, "
                 "L-SOUE and dBitFlipPM against epsilon_inf at fixed epsilon_1, which protocol "
                 "wins where, multi-freq-ldpy side by side"),
    run=reproduce,
))
