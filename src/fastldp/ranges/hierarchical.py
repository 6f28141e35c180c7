"""Hierarchical histograms: a ``B``-ary tree of intervals, one oracle per level, made consistent.

The domain ``[0, D)`` is padded to ``B^h`` leaves (``h = ceil(log_B D)``);
level ``l = 1 .. h`` of the tree has ``B^l`` nodes, node ``j`` covering
``[j B^(h-l), (j + 1) B^(h-l))``. The root (level 0) is the number of
users ``n``, known exactly. Each level's counts come from a frequency
oracle (:mod:`fastldp.ranges._protocol` says which).

- ``split="users"`` (the paper's variant, the default): every user draws a
  level uniformly and reports it at the whole ``epsilon``; the server
  scales level ``l``'s counts by ``n / m_l`` (``m_l`` reports).
- ``split="budget"``: every user reports every level at ``epsilon / h``.

A range ``[a, b]`` is answered from the consistent tree
(``consistency=True``, :mod:`fastldp.ranges._consistency`: weighted
averaging and mean consistency with each level's own noise variance) by
summing leaves, or, without consistency, from the fewest nodes of every
level whose intervals tile ``[0, b + 1)`` and ``[0, a)`` (at most ``B - 1``
per level each; the levels above where the two ends part cancel exactly).

Branching and level weighting
-----------------------------
Cormode et al. 2019 find, for hierarchical histograms with users split
uniformly over the levels and consistency, a best branching near ``B =
4``; their results file at ``D = 256``, ``e^eps = 3``, ``N = 2^26`` gives
RMSE 7.62e-4 (``B = 2``), 7.18e-4 (``B = 4``), 7.85e-4 (``B = 16``), so
``branching=4`` is the default, and users are spread uniformly over the
levels by default, as in the paper. The levels are not equally useful to
the consistent tree, though: :func:`optimal_level_weights` gives the
shares of the users that minimize the noise of all ranges pooled (exactly,
from the estimate's covariance): at the anchor (B = 4) the RMSE drops
from 7.25e-4 to 7.00e-4 (bench/ranges_anchor.py, the study's own setting).

Quantiles
---------
``quantile(q)`` inverts the (consistent) CDF by the rule of
:mod:`fastldp.ranges._base`. ``quantile_by_descent(q)`` is the direct
baseline: a noisy search down the tree's raw counts, choosing at every
level the child where the running count crosses ``q n``.

References
----------
G. Cormode, T. Kulkarni, D. Srivastava, "Answering range queries under
local differential privacy", PVLDB 12(10), 2019.
M. Hay, V. Rastogi, G. Miklau, D. Suciu, "Boosting the accuracy of
differentially private histograms through consistency", PVLDB 3(1), 2010.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._sanitize import SanitizationReport
from .._validation import check_int, param_error
from ._base import RangeEstimate, check_probabilities
from ._consistency import consistent_tree, consistent_variances, pooled_range_variance
from ._protocol import MAX_DOMAIN, LevelMechanism

#: the largest padded domain :func:`optimal_level_weights` tunes (its cost is cubic in it)
OPTIMAL_WEIGHTS_MAX_LEAVES = 4096

__all__ = ["HierarchicalHistogram", "HierarchicalEstimate", "SPLITS", "optimal_level_weights"]

#: how the users or the budget are split over the levels
SPLITS = ("users", "budget")


@dataclass(frozen=True, repr=False)
class HierarchicalEstimate(RangeEstimate):
    """A :class:`RangeEstimate` with the tree it came from.

    Attributes
    ----------
    counts : numpy.ndarray, shape (D,)
        The leaves (consistent when ``consistent``).
    variances : numpy.ndarray, shape (D,)
        The variance of each leaf: the consistent estimate's (from the
        levels' noise variances, :func:`~._consistency.consistent_variances`:
        the noise of a count no user holds, so a lower bound; a user's own
        report and, split by users, the draw of the levels add a few
        percent where the counts are large) or, without consistency, the
        leaf level's plug-in variances.
    levels : tuple of numpy.ndarray
        The raw (unbiased, inconsistent) counts of levels ``1 .. h``, scaled
        to all ``n`` users; ``levels[-1]`` has ``B^h`` leaves (padding included).
    level_variances : numpy.ndarray, shape (h,)
        The noise variance of one count of each level (``inf``: no reports).
    tree : tuple of numpy.ndarray
        The counts ranges are answered from: the consistent levels, or ``levels``.
    branching : int
    consistent : bool
    """

    levels: tuple = ()
    level_variances: Optional[np.ndarray] = None
    tree: tuple = ()
    branching: int = 2
    consistent: bool = True

    def prefix_counts(self, x: np.ndarray) -> np.ndarray:
        """Users with a value ``< x``: leaf sums (consistent) or the B-adic node sums (raw)."""
        x = np.asarray(x, dtype=np.int64)
        if self.consistent:
            return super().prefix_counts(x)
        B, h = self.branching, len(self.tree)
        out = np.where(x >= B**h, float(self.n), 0.0)  # the root: n, known
        above = x // B**h
        for li, level in enumerate(self.tree):
            span = B ** (h - li - 1)
            cum = np.concatenate([[0.0], np.cumsum(level)])
            hi = x // span
            lo = np.minimum(above * B, hi)
            out = out + (cum[hi] - cum[lo])
            above = hi
        return out

    def quantile_by_descent(self, q: Any) -> np.ndarray:
        """The direct quantile baseline: a search down the raw tree (floats in ``[0, D]``).

        From the root with rank ``r = q n``, each level takes the children
        of the current node with their raw counts clipped at 0, moves to
        the first child whose running sum reaches ``r`` (the last if none
        does) and subtracts the children before it; at the leaves, ``r``
        over the leaf's count places the answer inside ``[leaf, leaf + 1)``.
        """
        arr = check_probabilities(q, f"{type(self).__name__}.quantile_by_descent")
        flat = arr.ravel()
        B = self.branching
        node = np.zeros(flat.shape[0], dtype=np.int64)
        r = flat * self.n
        last = np.zeros(flat.shape[0])
        for level in self.levels:
            kids = np.clip(level[node[:, None] * B + np.arange(B)], 0.0, None)
            cum = np.cumsum(kids, axis=1)
            j = np.minimum((cum < r[:, None]).sum(axis=1), B - 1)
            before = np.where(j > 0, cum[np.arange(node.shape[0]), np.maximum(j - 1, 0)], 0.0)
            r = r - before
            last = kids[np.arange(node.shape[0]), j]
            node = node * B + j
        frac = np.where(last > 0, np.clip(r / np.where(last > 0, last, 1.0), 0.0, 1.0), 0.0)
        return np.minimum(node + frac, float(self.domain_size)).reshape(arr.shape)


class HierarchicalHistogram(LevelMechanism):
    """Range counts, CDF and quantiles from a ``B``-ary hierarchy of oracles (module docstring).

    Parameters
    ----------
    epsilon : float in (0, 700]
        The budget of every report.
    domain_size : int in [2, 2^30]
        ``D``: values are ``0 .. D - 1``.
    branching : int in [2, 2^16]
        ``B``, the fan-out of the tree (default 4, Cormode et al.'s best).
    oracle : {"auto", "grr", "oue", "olh", "hr"}
        The oracle of every level, or ``"auto"``: per level, the least
        variance whose cost fits (:mod:`fastldp.ranges._protocol`).
    split : {"users", "budget"}
        Users split over the levels (each reports one, at ``epsilon``), or
        every user reports every level at ``epsilon / h``.
    consistency : bool
        Make the tree consistent (Hay et al. 2010) before answering.
    level_weights : None or sequence of h floats > 0
        The share of the users each level hears (users split) or of the
        budget it gets (budget split), normalized; ``None``: uniform, as in
        the paper. :func:`optimal_level_weights` computes the shares that
        minimize the error of all ranges pooled.
    codebook_seed : int or None
        Public seed of the levels' oracles; ``None`` draws one from OS entropy.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.ranges import HierarchicalHistogram
    >>> hh = HierarchicalHistogram(epsilon=1.0, domain_size=64, branching=4, codebook_seed=1)
    >>> x = np.random.default_rng(0).integers(0, 64, 20_000)
    >>> est = hh.estimate(hh.privatize(x, rng=1))
    >>> bool(abs(est.range_count(0, 63).item() - 20_000) < 1e-6)
    True
    >>> [len(level) for level in est.levels]
    [4, 16, 64]
    """

    def __init__(self, *, epsilon: float, domain_size: int, branching: int = 4,
                 oracle: str = "auto", split: str = "users", consistency: bool = True,
                 level_weights: Any = None, codebook_seed: Optional[int] = None) -> None:
        owner = type(self).__name__
        self._check_common(owner, epsilon, domain_size, oracle, codebook_seed)
        self.branching = check_int(branching, "branching", owner, low=2, high=1 << 16)
        if not isinstance(split, str) or split not in SPLITS:
            raise param_error("split", owner, f"one of {list(SPLITS)}", split,
                              ValueError if isinstance(split, str) else TypeError)
        self.split = split
        if not isinstance(consistency, (bool, np.bool_)):
            raise param_error("consistency", owner, "True or False", consistency, TypeError)
        self.consistency = bool(consistency)
        B = self.branching
        h = 1
        while B**h < self.domain_size:
            h += 1
        if B**h > 2 * MAX_DOMAIN:
            raise param_error("branching", owner, f"a fan-out whose padded domain B^h stays "
                              f"below {2 * MAX_DOMAIN} for domain_size {self.domain_size}",
                              branching)
        self.height = h
        weights = None
        if level_weights is not None:
            expected = f"None or {h} finite weights > 0, one per level (level 1 first)"
            try:
                arr = np.asarray(level_weights, dtype=np.float64)
            except (TypeError, ValueError):
                raise param_error("level_weights", owner, expected, level_weights,
                                  TypeError) from None
            if arr.shape != (h,) or not np.all((arr > 0) & np.isfinite(arr)):
                raise param_error("level_weights", owner, expected, level_weights)
            weights = arr / arr.sum()
        # the weights as given: a spec rebuilds bit-identical parameters (partials compare them)
        self._given_weights = None if weights is None else [float(v) for v in arr]
        self._build_levels([B**l for l in range(1, h + 1)],
                           [B ** (h - l) for l in range(1, h + 1)], weights)

    def stream_params(self) -> dict:
        """The public parameters that rebuild an equivalent server (JSON values)."""
        weights = self._given_weights
        return {"epsilon": self.epsilon, "domain_size": self.domain_size,
                "branching": self.branching, "oracle": self.oracle, "split": self.split,
                "consistency": self.consistency, "level_weights": weights,
                "codebook_seed": self.codebook_seed}

    def _result(self, counts: list, noise: np.ndarray, plug_in: list, n: int,
                sanitization: Optional[SanitizationReport]) -> HierarchicalEstimate:
        D = self.domain_size
        if self.consistency and np.isfinite(noise).any():
            tree = consistent_tree(counts, noise, self.branching, n)
            leaf_var = np.full(D, consistent_variances(noise, self.branching)[-1])
            consistent = True
        else:
            tree = counts
            leaf_var = plug_in[-1][:D]
            consistent = False
        return HierarchicalEstimate(tree[-1][:D].copy(), leaf_var, n, self.privacy(), sanitization,
                                    levels=tuple(counts), level_variances=noise,
                                    tree=tuple(tree), branching=self.branching,
                                    consistent=consistent)

    def estimate(self, reports: Any, *, epsilons: Any = None,
                 identities: Any = None) -> HierarchicalEstimate:
        """The :class:`HierarchicalEstimate` of the reports (``finalize(partial(...))`` exactly)."""
        return self.finalize(self.partial(reports, epsilons, identities))


def optimal_level_weights(*, epsilon: float, domain_size: int, branching: int = 4,
                          oracle: str = "auto") -> np.ndarray:
    """The users' shares per level that minimize the mean squared error of all ranges pooled.

    For the users split with consistency: level ``l`` heard by a share
    ``w_l`` of the users has noise variance ``n sigma_l^2 / w_l`` per node
    (``sigma_l^2`` its oracle's variance per report); the mean over every
    range ``[a, b]`` of its consistent answer's variance
    (:func:`~fastldp.ranges._consistency.pooled_range_variance`, exact) is
    minimized over the shares (``n`` cancels). Pass the result as
    ``HierarchicalHistogram(level_weights=...)``.

    Parameters
    ----------
    epsilon, domain_size, branching, oracle
        As for :class:`HierarchicalHistogram` (the padded domain ``B^h`` at
        most :data:`OPTIMAL_WEIGHTS_MAX_LEAVES`).

    Returns
    -------
    numpy.ndarray of float64, shape (h,)
        Positive shares summing to 1, level 1 first.

    Examples
    --------
    >>> w = optimal_level_weights(epsilon=1.0986, domain_size=16, branching=4)
    >>> w.round(2)
    array([0.22, 0.78])
    """
    from scipy.optimize import minimize

    owner = "optimal_level_weights"
    probe = HierarchicalHistogram(epsilon=epsilon, domain_size=domain_size, branching=branching,
                                  oracle=oracle, codebook_seed=0)
    B, h = probe.branching, probe.height
    if B**h > OPTIMAL_WEIGHTS_MAX_LEAVES:
        raise param_error("domain_size", owner, f"a domain whose padded size B^h is at most "
                          f"{OPTIMAL_WEIGHTS_MAX_LEAVES} (the cost is cubic in it)", domain_size)
    eps = np.array([probe.epsilon])
    per_report = np.array([float(o.variances(eps)[0]) for o in probe.oracles])
    if h == 1:
        return np.ones(1)

    def shares(z: np.ndarray) -> np.ndarray:
        e = np.exp(z - z.max())
        return e / e.sum()

    def loss(z: np.ndarray) -> float:
        return pooled_range_variance(per_report / shares(z), B, probe.domain_size)

    start = np.zeros(h)
    best = minimize(loss, start, method="Nelder-Mead",
                    options={"xatol": 1e-3, "fatol": 1e-9 * loss(start), "maxiter": 400 * h})
    return shares(best.x) if best.fun < loss(start) else np.full(h, 1.0 / h)
