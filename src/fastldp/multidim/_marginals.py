"""Marginals of multi-attribute records: the full-domain baseline (issue 36, item 2, first step).

:class:`FullDomain` reports the whole record as one symbol of the cross
product of the attributes' domains (``K = prod_j k_j`` symbols, attribute 0
slowest) through GRR or OLH at ``epsilon``, estimates every cell of the
joint distribution, and sums cells into the marginal of any set of
attributes. It is the baseline of CALM (Zhang et al., CCS 2018) and of
Cormode et al. (SIGMOD 2018); it is only practical for small ``K``.

A marginal cell is a set ``S`` of ``s = K / prod_{j in T} k_j`` joint
symbols; its count estimate ``(hits_S - n s q) / (p - q)``, with ``hits_S``
the reports that support a symbol of ``S``, is the sum of the joint cells'
estimates, and its variance is exact: a holder's report supports ``S``
(GRR) with probability ``pi1 = p + (s - 1) q``, a non-holder's with
``pi0 = s q``, so the variance is
``(c pi1 (1 - pi1) + (n - c) pi0 (1 - pi0)) / (p - q)^2``; OLH's hits of
``S`` per report are a sum of ``s`` independent indicators (a fully random
hash), of variance ``p (1 - p) + (s - 1) q (1 - q)`` for a holder and
``s q (1 - q)`` otherwise, ``q = 1 / g``.

References
----------
Z. Zhang, T. Wang, N. Li, S. He, J. Chen, "CALM: Consistent Adaptive Local
Marginal for Marginal Release under Local Differential Privacy", CCS 2018.
G. Cormode, T. Kulkarni, D. Srivastava, "Marginal Release Under Local
Differential Privacy", SIGMOD 2018.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._random import as_generator, resolve_identities
from .._sanitize import SanitizationReport
from .._validation import check_int, param_error
from ..oracles import GRR, OLH
from ..oracles._sanitizing import as_report_array
from ..results import PrivacyStatement, Result
from ..streaming import Partial
from ._frequency import _MultiAttribute, _symbol_pq
from ._sanitizing import partial_sanitization, report_counts

__all__ = ["FullDomain", "JointEstimate", "total_variation", "MAX_JOINT_DOMAIN"]

#: the largest cross-product domain FullDomain takes (its server keeps one count per symbol)
MAX_JOINT_DOMAIN = 1 << 22
_JOINT_ORACLES = {"GRR": GRR, "OLH": OLH}


def total_variation(estimate: Any, truth: Any) -> float:
    """``sum |f_hat - f| / 2`` of two tables of counts, each normalized to frequencies.

    Examples
    --------
    >>> total_variation([3, 1], [2, 2])
    0.25
    """
    a = np.asarray(estimate, dtype=np.float64).ravel()
    b = np.asarray(truth, dtype=np.float64).ravel()
    if a.shape != b.shape:
        raise param_error("estimate", "total_variation", f"a table of {b.size} cells like truth",
                          f"{a.size} cells")
    if not (a.sum() != 0 and b.sum() > 0):
        raise ValueError("total_variation: the tables must have a non-zero total")
    return float(np.abs(a / a.sum() - b / b.sum()).sum() / 2)


@dataclass(frozen=True, repr=False)
class JointEstimate(Result):
    """Unbiased counts of every cell of the joint distribution, and marginals of them.

    Attributes
    ----------
    counts : numpy.ndarray of float64, shape (K,)
        Cell ``np.ravel_multi_index(x, domain_sizes)`` of record ``x``.
    variances : numpy.ndarray, shape (K,)
    n : int
    privacy : PrivacyStatement
    domain_sizes : tuple of int
    law : tuple
        ``(oracle, p, q)``: the oracle and its support probabilities, which
        :meth:`marginal`'s variances need.
    sanitization : SanitizationReport
        The malformed reports, replaced as the joint oracle replaces them
        and counted by reason.
    """

    _estimate_field = "counts"
    counts: np.ndarray
    variances: np.ndarray
    n: int
    privacy: PrivacyStatement
    domain_sizes: tuple
    law: tuple
    sanitization: SanitizationReport

    def marginal(self, attributes: Any) -> tuple:
        """The counts of the marginal of ``attributes`` and their exact plug-in variances.

        Parameters
        ----------
        attributes : sequence of distinct int
            The attributes of the marginal, in the order of its axes.

        Returns
        -------
        (numpy.ndarray, numpy.ndarray)
            Both of shape ``[domain_sizes[j] for j in attributes]``.
        """
        owner = "JointEstimate.marginal"
        A = len(self.domain_sizes)
        try:
            attrs = [check_int(j, "attributes", owner, low=0, high=A - 1) for j in attributes]
        except TypeError:
            raise param_error("attributes", owner, "a sequence of attribute indices",
                              attributes, TypeError) from None
        if not attrs or len(set(attrs)) != len(attrs):
            raise param_error("attributes", owner, f"distinct attributes in [0, {A})", attributes)
        table = self.counts.reshape(self.domain_sizes)
        others = tuple(j for j in range(A) if j not in attrs)
        summed = table.sum(axis=others) if others else table
        kept = sorted(attrs)  # axes of `summed`, in increasing attribute order
        counts = np.transpose(summed, [kept.index(j) for j in attrs])
        s = math.prod(self.domain_sizes) // math.prod(self.domain_sizes[j] for j in attrs)
        oracle, p, q = self.law
        n = self.n
        held = np.clip(counts, 0.0, n)
        if oracle == "GRR":
            pi1, pi0 = p + (s - 1) * q, s * q
            var_held, var_other = pi1 * (1 - pi1), pi0 * (1 - pi0)
        else:
            var_held, var_other = p * (1 - p) + (s - 1) * q * (1 - q), s * q * (1 - q)
        variances = (held * var_held + (n - held) * var_other) / (p - q) ** 2
        return counts, variances


class _shape(str):
    """An array's shape in an error message (shown without quotes)."""

    def __new__(cls, shape):
        return super().__new__(cls, f"an array of shape {shape}")

    def __repr__(self) -> str:
        return str(self)


class FullDomain(_MultiAttribute):
    """The full-domain baseline: the whole record as one symbol through GRR or OLH.

    Parameters
    ----------
    domain_sizes : list of int >= 2
        Their product ``K`` is at most :data:`MAX_JOINT_DOMAIN`.
    epsilon : float in (0, 700]
    oracle : {"GRR", "OLH"}
    codebook_seed : int or None
        Public seed of the OLH hashes.

    Notes
    -----
    Reports: int64 ``(n,)``, the oracle's report of
    ``np.ravel_multi_index(x, domain_sizes)``. ``labels`` is ``None`` (the
    entries are the joint cells, by that index).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.multidim import FullDomain
    >>> fd = FullDomain(domain_sizes=[2, 3, 2], epsilon=4.0, codebook_seed=0)
    >>> est = fd.estimate(fd.privatize(fd.example_data(5_000, np.random.default_rng(0)), rng=1))
    >>> counts, variances = est.marginal([2, 0])
    >>> counts.shape
    (2, 2)
    """

    @property
    def labels(self) -> Optional[tuple]:
        """``None``: the entries are the joint cells, by their mixed-radix index."""
        return None

    def __init__(self, *, domain_sizes: Any, epsilon: float, oracle: str = "OLH",
                 codebook_seed: Optional[int] = None) -> None:
        owner = type(self).__name__
        if oracle not in _JOINT_ORACLES:
            raise param_error("oracle", owner, f"one of {list(_JOINT_ORACLES)}", oracle)
        super().__init__(domain_sizes=domain_sizes, epsilon=epsilon, choice=oracle,
                         codebook_seed=codebook_seed)
        self.oracle = oracle
        self.joint_size = math.prod(self.domain_sizes)
        if self.joint_size > MAX_JOINT_DOMAIN:
            raise param_error("domain_sizes", owner, f"sizes whose product is at most "
                              f"{MAX_JOINT_DOMAIN}", list(self.domain_sizes))
        self.joint_oracle: Any = _JOINT_ORACLES[oracle](domain_size=self.joint_size,
                                                   epsilon=self.epsilon,
                                                   codebook_seed=self.codebook_seed,
                                                   n_threads=1)
        self._joint_pq = _symbol_pq(oracle, self.epsilon, self.joint_size, self.joint_oracle)

    def _layout(self) -> tuple:
        return np.int64, ()

    def hit_probabilities(self, j: int) -> tuple:
        p, q = self._joint_pq
        return q, p

    def privatize(self, data: Any, *, epsilons: Any = None, identities: Any = None,
                  rng: Any = None) -> np.ndarray:
        """Reports of ``n`` records (int ``(n, A)``): each record's joint symbol through the oracle."""
        owner = f"{type(self).__name__}.privatize"
        self._check_epsilons(epsilons, owner)
        x = self.check_records(data, owner)
        ids = resolve_identities(identities, x.shape[0], owner)
        gen = as_generator(rng, owner)
        symbols = (np.ravel_multi_index(tuple(x.T), self.domain_sizes).astype(np.int64)
                   if x.shape[0] else np.zeros(0, dtype=np.int64))
        return np.asarray(self.joint_oracle.perturb(symbols, np.array([self.epsilon]), ids, gen))

    def _hits(self, arr: np.ndarray, ids: np.ndarray, owner: str) -> tuple:
        n = arr.shape[0]
        K = self.joint_size
        if self.oracle == "OLH":
            g = int(self.joint_oracle.buckets(np.array([self.epsilon]))[0])
            if n and (arr.min() < 0 or arr.max() >= g):
                bad = int(np.flatnonzero((arr < 0) | (arr >= g))[0])
                raise self._bad_report(owner, f"its bucket is not in [0, {g})", bad)
            hits = (np.rint(self.joint_oracle.support(arr, ids, np.full(n, g, dtype=np.int64),
                                                      np.ones(n))).astype(np.int64)
                    if n else np.zeros(K, dtype=np.int64))
        else:
            if n and (arr.min() < 0 or arr.max() >= K):
                bad = int(np.flatnonzero((arr < 0) | (arr >= K))[0])
                raise self._bad_report(owner, f"its symbol is not in [0, {K})", bad)
            hits = np.bincount(arr, minlength=K).astype(np.int64)
        return hits, [n] * self.n_attributes

    def partial(self, reports: Any, epsilons: Any = None, identities: Any = None) -> Partial:
        """The exact state of :meth:`estimate`: integer hits of every joint symbol."""
        owner = f"{type(self).__name__}.partial"
        self._check_epsilons(epsilons, owner)
        arr = as_report_array(reports)
        if arr.ndim != 1:
            raise param_error("reports", owner, "a 1-d array of int64 reports, one per record",
                              _shape(arr.shape))
        n = arr.shape[0]
        ids = resolve_identities(identities, n, owner)
        # the joint oracle's own rule: a public uniform legal output keyed by the identity
        clean, report = self.joint_oracle.sanitize(arr, np.full(n, self.epsilon), ids, owner)
        hits, _ = self._hits(clean, ids, owner)
        from ..streaming import ExactSum

        total = ExactSum(self.joint_size)
        total.add(hits.astype(np.float64))  # integers below 2^53: exact
        return Partial(type(self).__name__, self.stream_params(), sums={"hits": total},
                       counts=report_counts(report), flags={"wrong_dtype": report.wrong_dtype})

    def finalize(self, partial: Partial) -> JointEstimate:  # type: ignore[override]
        """The :class:`JointEstimate` of a (merged) partial."""
        self._check_partial(partial, f"{type(self).__name__}.finalize")
        n = partial.counts["n"]
        hits = np.rint(partial.sums["hits"].value()).astype(np.int64)
        p, q = self._joint_pq
        counts = (hits - n * q) / (p - q)
        held = np.clip(counts, 0.0, n)
        variances = (n * q * (1 - q) + held * (p * (1 - p) - q * (1 - q))) / (p - q) ** 2
        return JointEstimate(counts, variances, n, self.privacy(), self.domain_sizes,
                             (self.oracle, p, q), partial_sanitization(partial))

    def estimate(self, reports: Any, *, epsilons: Any = None,  # type: ignore[override]
                 identities: Any = None) -> JointEstimate:
        """Unbiased counts of every joint cell: ``finalize(partial(...))`` exactly."""
        return self.finalize(self.partial(reports, epsilons, identities))
