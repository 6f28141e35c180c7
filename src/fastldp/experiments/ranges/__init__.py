"""The experiments of the range family: ``fastldp reproduce ranges``."""

from ..registry import Experiment, register_experiment
from .reproduce import RangesResult, reproduce

__all__ = ["RangesResult", "reproduce", "resolution"]


def resolution(report) -> list:
    """What the run resolves, per metric: range MSE, quantile error, Wasserstein-1.

    The summary holds each metric in rows of its own (one stem each), so
    each is read from its own rows (the default reads the first row's stems).
    """
    from ..quick import summary_resolutions

    rows = (getattr(report, "tables", None) or {}).get("summary") or []
    out = []
    for stem, label in (("mse", "range MSE"), ("qerr", "quantile error"),
                        ("w1", "Wasserstein-1")):
        mine = [r for r in rows if f"{stem}_mean" in r]
        out.extend(summary_resolutions(mine, {stem: label}))
    return out


register_experiment(Experiment(
    name="ranges",
    family="ranges",
    description=("range queries and quantiles: range MSE against range length and quantile "
                 "error of flat, hierarchical (with and without consistency) and HaarHRR on "
                 "D = 2^10 .. 2^20 (Zipf, Cauchy, --data: the clothing table's ages); "
                 "Wasserstein-1 and range error of Square Wave (EMS) against binning + OUE and "
                 "Piecewise means; checked in shape against the papers"),
    run=reproduce,
    takes_repetitions=True,
    resolution=resolution,
))
