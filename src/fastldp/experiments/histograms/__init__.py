"""The experiments of the histograms family (paper 003): ``fastldp reproduce histograms``."""

from ..registry import Experiment, register_experiment
from .reproduce import HistogramsResult, reproduce

__all__ = ["HistogramsResult", "headline", "reproduce"]

# the constants docs/histograms.md publishes (Table of leading constants); the quick grid
# keeps r = 0.01, so it computes every one of them exactly as the full run does
_HEADLINE_ROWS = {
    ("C_upper = 1/pi", None): "C_upper = 1/pi",
    ("C_lower = pi/(4 e^2)", None): "C_lower = pi/(4 e^2)",
    ("ratio C_upper / C_lower", None): "ratio C_upper / C_lower",
    ("r^2 lim n^2 v(n), margin -> 0 (median drift)", 0.01): "r^2 lim n^2 v(n) at r = 0.01",
    ("r^2 lim n^2 v(n), margin -> 0 (median drift)", 0.0001): "r^2 lim n^2 v(n) at r = 1e-4",
    ("r^2 n^2 v(n) from rho(), r=0.01, margin=1e-4, n=1e7", 0.01):
        "r^2 n^2 v(n) from rho, r = 0.01, margin 1e-4, n = 1e7",
}


def headline(result) -> dict:
    """The leading constants, to the six decimals docs/histograms.md prints.

    Closed forms and quadrature: nothing is ranked from noisy repetitions,
    so the quick run's headline is the full run's (``quick_ranks``).
    """
    out = {}
    for row in result.tables["constants"]:
        r = row.get("r")
        key = (row["name"], None if r in (None, "") else float(r))
        if key in _HEADLINE_ROWS:
            out[_HEADLINE_ROWS[key]] = f"{float(row['value']):.6f}"
    return {"constants": out, "checks failed": result.failed}

register_experiment(Experiment(
    name="histograms",
    family="histograms",
    description=("paper 003: n^2 v(n) against n for several r with the lower bounds, relative "
                 "error against count vs the equal-noise Gaussian, the table of leading constants"),
    run=reproduce,
    quick_ranks=True,
    headline=headline,
))
