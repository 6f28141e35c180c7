"""Scores of an estimate against a target matrix (paper 000, section 7.1)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ._kernels._projection import top_s_indices
from ._validation import check_int, param_error
from .results import Result

__all__ = ["squared_frobenius_loss", "support_scores", "SupportScores"]


def _array(value, name, owner):
    """The array of ``value``: a result's estimate (any family's, loaded ones too), or the array."""
    if isinstance(value, Result):
        value = value.estimate
        if value is None:
            raise param_error(name, owner, "a result with an estimate, or an array",
                              "a result without one", TypeError)
    try:
        return np.asarray(value, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error(name, owner, "an array of numbers or a result", value,
                          TypeError) from None


def _pair(estimate, target, owner):
    est = _array(estimate, "estimate", owner)
    tgt = _array(target, "target", owner)
    if est.shape != tgt.shape:
        raise param_error("estimate", owner, f"an array of shape {tgt.shape}", f"shape {est.shape}")
    return est.ravel(), tgt.ravel()


def squared_frobenius_loss(estimate, target) -> float:
    """Return ``||estimate - target||_F^2``.

    ``estimate`` and ``target`` are arrays or results (any family's, one read
    back by :func:`fastldp.reports.load_result` too): a result stands for its
    ``.estimate``.
    """
    est, tgt = _pair(estimate, target, "squared_frobenius_loss")
    diff = est - tgt
    return float(np.dot(diff, diff))


@dataclass(frozen=True)
class SupportScores:
    """Precision, recall and F1 of a top-s support."""

    precision: float
    recall: float
    f1: float


def support_scores(estimate, target, s: int) -> SupportScores:
    """Precision / recall / F1 at ``s``.

    The predicted support is the ``s`` largest entries of ``estimate`` (ties
    toward the smaller index); the true support is the ``s`` largest entries
    of ``target`` among its non-zero ones (all of them when it has at most
    ``s``). Either may be a result (its ``.estimate``).
    """
    est, tgt = _pair(estimate, target, "support_scores")
    s = check_int(s, "s", "support_scores", low=1, high=est.shape[0])
    predicted = set(top_s_indices(np.ascontiguousarray(est), s).tolist())
    nonzero = np.flatnonzero(tgt)
    if nonzero.shape[0] > s:
        nonzero = top_s_indices(np.ascontiguousarray(tgt), s)
    truth = set(nonzero.tolist())
    hits = len(predicted & truth)
    precision = hits / len(predicted)
    recall = hits / len(truth) if truth else 0.0
    f1 = 0.0 if hits == 0 else 2 * precision * recall / (precision + recall)
    return SupportScores(precision, recall, f1)
