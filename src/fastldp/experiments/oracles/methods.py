"""The post-processing methods compared, and the frequency oracles they post-process.

================ ==============================================================
method           what it does to the unbiased count estimate ``c`` (``n`` reports)
================ ==============================================================
raw              nothing: the oracle's unbiased estimate (the paper's *Base*)
base_pos         negative counts set to 0 (the paper's *Base-Pos*)
norm             the same shift ``(n - sum c) / d`` added to every count, so the
                 counts sum to ``n`` (the paper's *Norm*; unbiased, not
                 non-negative)
the others       every method of :mod:`fastldp.oracles.postprocess` (its ``METHODS``:
                 ``base_cut``, ``norm_sub``, ``norm_mul``, ``norm_cut``,
                 ``project_simplex``, ``ibu``), called as
                 ``postprocess(estimate, name)``; ``ibu`` also gets the oracle
                 (its channel)
================ ==============================================================

``base_pos`` and ``norm`` are two lines each and are defined here, for the
comparison only, when :mod:`fastldp.oracles.postprocess` does not provide
them. The oracles are those of :data:`fastldp.oracles.FREQUENCY_ORACLES`,
built with ``(domain_size=d, epsilon=eps, codebook_seed=...)``.

References
----------
.. [1] T. Wang, M. Lopuhaä-Zwakenberg, Z. Li, B. Skoric, N. Li, "Locally
   differentially private frequency estimation with consistency", NDSS 2020
   (arXiv:1905.08320).
"""

from __future__ import annotations

import importlib
import inspect
from typing import Any

import numpy as np

__all__ = ["LOCAL_METHODS", "METHODS", "UnknownMethodError", "postprocess_module",
           "build_oracle", "apply_method"]

#: The methods this module defines itself (when the package's module lacks them).
LOCAL_METHODS = ("raw", "base_pos", "norm")


class UnknownMethodError(ValueError):
    pass


def postprocess_module():
    """:mod:`fastldp.oracles.postprocess`, or None when this installation has none."""
    try:
        return importlib.import_module("fastldp.oracles.postprocess")
    except ModuleNotFoundError as exc:
        if exc.name != "fastldp.oracles.postprocess":
            raise
        return None


def _package_methods() -> tuple:
    module = postprocess_module()
    if module is None:
        return ()
    return tuple(str(name) for name in getattr(module, "METHODS", ()))


#: Every method name a spec may use: the local ones, then the package's, in its order.
METHODS = LOCAL_METHODS + tuple(m for m in _package_methods() if m not in LOCAL_METHODS)


def build_oracle(name: str, *, d: int, eps: float, codebook_seed: int, n_threads: int = 1):
    """The frequency oracle ``name`` over ``d`` symbols at budget ``eps``."""
    from ...oracles import FREQUENCY_ORACLES

    cls = FREQUENCY_ORACLES[name]
    kwargs = {"domain_size": d, "epsilon": eps, "codebook_seed": codebook_seed}
    if "n_threads" in inspect.signature(cls).parameters:
        kwargs["n_threads"] = n_threads
    return cls(**kwargs)


def apply_method(method: str, estimate, oracle) -> tuple[np.ndarray, dict]:
    """``(counts, info)``: ``method`` applied to a :class:`~fastldp.oracles.FrequencyEstimate`.

    ``info`` holds ``iterations`` and ``converged`` when the method reports
    them (IBU), else None.
    """
    counts = np.asarray(estimate.counts, dtype=np.float64)
    info: dict[str, Any] = {"iterations": None, "converged": None}
    package = _package_methods()
    if method == "raw":
        return counts.copy(), info
    if method not in package:
        if method == "base_pos":
            return np.maximum(counts, 0.0), info
        if method == "norm":
            return counts + (estimate.n - counts.sum()) / counts.shape[0], info
        raise UnknownMethodError(
            f"Unknown method {method!r}; the methods are {', '.join(METHODS)}.")
    module = postprocess_module()
    kwargs = {"oracle": oracle} if method == "ibu" else {}
    result = module.postprocess(estimate, method, **kwargs)
    found = getattr(result, "postprocessing_info", None) or {}
    for key in ("iterations", "converged"):
        value = found.get(key)
        if value is not None:
            info[key] = int(value) if key == "iterations" else bool(value)
    return np.asarray(result.counts, dtype=np.float64), info
