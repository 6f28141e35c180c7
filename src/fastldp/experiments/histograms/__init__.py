"""The experiments of the histograms family (paper 003): ``fastldp reproduce histograms``."""

from ..registry import Experiment, register_experiment
from .reproduce import HistogramsResult, reproduce

__all__ = ["HistogramsResult", "reproduce"]

register_experiment(Experiment(
    name="histograms",
    family="histograms",
    description=("paper 003: n^2 v(n) against n for several r with the lower bounds, relative "
                 "error against count vs the equal-noise Gaussian, the table of leading constants"),
    run=reproduce,
))
