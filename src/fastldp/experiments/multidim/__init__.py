"""The experiments of the multi-attribute family: ``fastldp reproduce multidim``."""

from typing import Any

from ..registry import Experiment, register_experiment
from .reproduce import MultidimResult, reproduce

__all__ = ["MultidimResult", "reproduce", "resolution"]


def resolution(report) -> list:
    """What the run resolves, per metric: frequency MSE, marginal TVD, mean MSE.

    The summary holds three metrics in rows of their own (one stem each), so
    each is read from its own rows (the default reads the first row's stems).
    """
    from ..quick import summary_resolutions

    rows = (getattr(report, "tables", None) or {}).get("summary") or []
    out = []
    for stem, label in (("mse", "frequency MSE"), ("tvd", "marginal TVD"),
                        ("mean_mse", "mean-vector MSE")):
        mine = [r for r in rows if f"{stem}_mean" in r]
        out.extend(summary_resolutions(mine, {stem: label}))
    return out


_QUICK: dict[str, Any] = ({"resolution": resolution}
          if "resolution" in getattr(Experiment, "__dataclass_fields__", {}) else {})

register_experiment(Experiment(
    name="multidim",
    family="multidim",
    description=("multi-attribute records: frequency MSE of SPL, SMP and RSpFD (every oracle "
                 "and variant) over epsilon on a synthetic and (--data) the clothing-reviews "
                 "table, marginal TVD for t = 2, 3 of every marginal protocol, mean-vector MSE "
                 "of sampling vs splitting; checked in shape against the papers"),
    run=reproduce,
    takes_repetitions=True,
    **_QUICK,
))
