"""CALM-style marginal release: groups of users report one marginal each, made consistent.

Every user holds ``A`` categorical attributes (attribute ``j`` in
``[0, k_j)``). :class:`CALM` (Zhang, Wang, Li, He, Chen, CCS 2018) splits
the users into ``m`` groups, one per chosen *reported marginal* (a set of
``l`` attributes); a user of group ``g`` reports the cell of its record in
the cross product of ``g``'s attributes through GRR or OLH at ``epsilon``
(GRR while the cross product has fewer than ``3 e^eps + 2`` cells, OLH
above, the rule of Wang et al. 2017 that CALM follows). The server

1. estimates every reported marginal without bias from its group
   (``n / m_g`` times the oracle's estimate of the group's counts);
2. makes them **consistent** (:func:`make_consistent`, CALM Section 4.3):
   for every set ``B`` of attributes that two reported marginals share
   (the subsets of their intersections, smallest first), the marginals'
   projections onto ``B`` are replaced by their inverse-variance weighted
   average ``t_B``, each marginal taking the difference spread evenly over
   the cells that project onto a cell of ``B``; this is the weighted
   least-squares projection onto consistent tables;
3. applies **Norm-Sub** (:func:`norm_sub`): each table becomes
   ``max(x + delta, 0)`` with ``delta`` such that it sums to ``n``;
   steps 2 and 3 alternate :data:`ROUNDS` times (Norm-Sub last: tables
   non-negative, consistent up to the last Norm-Sub's change);
4. answers the marginal of any ``t <= 3`` attributes ``T``: the average
   of the projections of the reported marginals that contain ``T``, or,
   when none does, the maximum-entropy table that agrees with every
   reported marginal's projection onto its attributes in ``T``
   (iterative proportional fitting, CALM Section 4.4).

The choice of the reported marginals. CALM picks ``l`` and ``m`` by
minimizing an estimate of the noise plus the reconstruction error. This
class takes the documented simpler choice: every set of
``marginal_size`` attributes (default 2, all ``C(A, l)`` of them) unless
``marginals`` lists the sets to report; with ``l >= t`` every marginal of
``t`` attributes is a projection (no reconstruction error), at the price
of ``C(A, l)`` groups.

References
----------
Z. Zhang, T. Wang, N. Li, S. He, J. Chen, "CALM: Consistent Adaptive Local
Marginal for Marginal Release under Local Differential Privacy", CCS 2018.
T. Wang, J. Blocki, N. Li, S. Jha, "Locally Differentially Private Protocols
for Frequency Estimation", USENIX Security 2017.
W. Qardaji, W. Yang, N. Li, "PriView: Practical Differentially Private
Release of Marginal Contingency Tables", SIGMOD 2014 (the consistency step).
"""

from __future__ import annotations

import itertools
import math
from typing import Any, Optional

import numpy as np

from .._random import resolve_codebook_seed
from .._validation import check_float, check_int, param_error
from ..oracles import OLH
from ._frequency import MAX_ATTRIBUTE_DOMAIN, _symbol_pq, check_categorical_records
from ._marginal_release import (EPSILON_MAX, MAX_MARGINAL_ORDER, _grr, _MarginalRelease,
                                 _Shown, _table_variance)
from ._sanitizing import public_uniforms

__all__ = ["CALM", "make_consistent", "norm_sub", "ROUNDS", "MAX_GROUP_DOMAIN"]

#: consistency / Norm-Sub alternations
ROUNDS = 10
#: the largest cross product of one reported marginal (its server keeps one count per cell)
MAX_GROUP_DOMAIN = 1 << 20
#: the most reported marginals (groups)
MAX_GROUPS = 10_000
_ORACLES = ("auto", "GRR", "OLH")
_SEED_STEP = 0x9E3779B97F4A7C15


def _project(table: np.ndarray, attrs, sizes, onto) -> np.ndarray:
    """``table`` over sorted ``attrs`` (flat or shaped) summed onto sorted ``onto`` (shaped)."""
    cube = np.asarray(table, dtype=np.float64).reshape([sizes[a] for a in attrs])
    others = tuple(i for i, a in enumerate(attrs) if a not in onto)
    return cube.sum(axis=others) if others else cube


def _broadcast_shape(attrs, sizes, onto) -> list:
    return [sizes[a] if a in onto else 1 for a in attrs]


def shared_sets(sets) -> list:
    """``(B, holders)`` for every set ``B`` inside two or more of ``sets``, smallest first.

    These are the subsets of the pairwise intersections (the empty set
    included), found by counting each table's ``2^l`` subsets rather than
    by intersecting every pair (``C(A, 2)`` tables have ``~A^4 / 8`` pairs).
    """
    holders: dict = {}
    for i, s in enumerate(sets):
        for w in range(len(s) + 1):
            for sub in itertools.combinations(s, w):
                holders.setdefault(sub, []).append(i)
    return sorted(((b, h) for b, h in holders.items() if len(h) >= 2),
                  key=lambda item: (len(item[0]), item[0]))


def make_consistent(tables: list, sets: list, domain_sizes, cell_variances,
                    shared: Optional[list] = None) -> list:
    """CALM's consistency step: overlapping tables agree on every attribute set they share.

    Parameters
    ----------
    tables : list of numpy.ndarray
        Table ``i`` over the sorted attributes ``sets[i]`` (flat, the first
        attribute slowest).
    sets : list of tuple of int
    domain_sizes : sequence of int
    cell_variances : sequence of float
        The variance of one cell of each table (the weights are
        ``1 / (cell_variances[i] * c_i)``, ``c_i`` the number of the
        table's cells per cell of the shared set).
    shared : list, optional
        :func:`shared_sets` of ``sets`` (computed when not given).

    Returns
    -------
    list of numpy.ndarray
        The consistent tables (flat): for tables with independent cells of
        these variances, the weighted least-squares projection onto the
        tables that agree on every shared set.
    """
    out = [np.asarray(t, dtype=np.float64).copy() for t in tables]
    for shared_set, holders in (shared_sets(sets) if shared is None else shared):
        projections, weights, spread = [], [], []
        for i in holders:
            c = math.prod(domain_sizes[a] for a in sets[i]) // math.prod(
                domain_sizes[a] for a in shared_set)
            projections.append(_project(out[i], sets[i], domain_sizes, shared_set))
            weights.append(1.0 / (cell_variances[i] * c))
            spread.append(c)
        w = np.asarray(weights) / np.sum(weights)
        target = sum(wi * p for wi, p in zip(w, projections))
        for i, p, c in zip(holders, projections, spread):
            shape = [domain_sizes[a] for a in sets[i]]
            delta = ((target - p) / c).reshape(_broadcast_shape(sets[i], domain_sizes, shared_set))
            out[i] = (out[i].reshape(shape) + delta).ravel()
    return out


def norm_sub(table: np.ndarray, total: float) -> np.ndarray:
    """``max(x + delta, 0)`` with ``delta`` such that the result sums to ``total`` (Norm-Sub).

    Examples
    --------
    >>> norm_sub(np.array([5.0, 1.0, -2.0]), 4.0)
    array([4., 0., 0.])
    """
    x = np.asarray(table, dtype=np.float64).ravel()
    if x.size == 0 or total <= 0:
        return np.zeros_like(x)
    desc = np.sort(x)[::-1]
    sums = np.cumsum(desc)
    r = np.arange(1, x.size + 1)
    deltas = (total - sums) / r
    keep = desc + deltas > 0
    j = int(np.flatnonzero(keep)[-1])  # the largest r whose r-th value stays positive
    return np.maximum(x + deltas[j], 0.0)


def max_entropy(n: float, target: tuple, domain_sizes, constraints: list,
                iterations: int = 500) -> np.ndarray:
    """The maximum-entropy table over ``target`` (sorted) matching ``(attrs, table)`` projections.

    Iterative proportional fitting from the uniform table of total ``n``;
    each constraint is a table over a sorted subset of ``target``.
    """
    shape = [domain_sizes[a] for a in target]
    x = np.full(shape, n / math.prod(shape))
    for _ in range(iterations):
        before = x.copy()
        for attrs, table in constraints:
            current = _project(x, target, domain_sizes, attrs)
            goal = np.maximum(np.asarray(table, dtype=np.float64).reshape(current.shape), 0.0)
            with np.errstate(divide="ignore", invalid="ignore"):
                ratio = np.where(current > 0, goal / current, 0.0)
            x = x * ratio.reshape(_broadcast_shape(target, domain_sizes, attrs))
        if np.abs(x - before).max() <= 1e-10 * max(n, 1.0):
            break
    return x.ravel()


class CALM(_MarginalRelease):
    """CALM-style marginal release: one reported marginal per group, consistency, Norm-Sub.

    Parameters
    ----------
    domain_sizes : list of int >= 2
        One per attribute (categorical attributes, ``A`` of them).
    epsilon : float in (0, 700]
    marginal_size : int in [1, min(3, A)], optional
        ``l``: the size of every reported marginal when ``marginals`` is
        ``None`` (then every set of ``l`` attributes is reported); default
        2 (1 for a single attribute). Give it or ``marginals``, not both.
    marginals : list of lists of int, optional
        The attribute sets to report, one group each (each sorted on input,
        distinct, at most 3 attributes).
    oracle : {"auto", "GRR", "OLH"}
        The oracle of every group; ``"auto"``: GRR while its cross product
        has fewer than ``3 e^eps + 2`` cells, OLH above.
    codebook_seed : int or None
        Public seed of the OLH hashes and of the replacements of malformed
        reports.

    Notes
    -----
    Reports: int64 ``(n, 2)``, ``(group, the oracle's report of the
    record's cell in the group's marginal)``. A user's group is drawn
    uniformly (the random partition of the users). The estimate's
    ``counts`` are the post-processed reported marginals, one after the
    other (``sets``); their ``variances`` are ``nan``: consistency and
    Norm-Sub leave no closed form (the unbiased tables before them have
    the i.i.d.-model variances of :mod:`._marginal_release`,
    :meth:`raw_tables`).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.multidim import CALM
    >>> calm = CALM(domain_sizes=[3, 2, 4, 2], epsilon=2.0, codebook_seed=0)
    >>> x = calm.example_data(20_000, np.random.default_rng(0))
    >>> est = calm.estimate(calm.privatize(x, rng=1))
    >>> counts, _ = est.marginal([2, 0, 1])
    >>> counts.shape, bool((counts >= 0).all())
    ((4, 3, 2), True)
    """

    def __init__(self, *, domain_sizes: Any, epsilon: float, marginal_size: Optional[int] = None,
                 marginals: Any = None, oracle: str = "auto",
                 codebook_seed: Optional[int] = None) -> None:
        owner = type(self).__name__
        try:
            sizes = list(domain_sizes)
        except TypeError:
            raise param_error("domain_sizes", owner, "a list of ints >= 2, one per attribute",
                              domain_sizes, TypeError) from None
        if not 1 <= len(sizes) <= 64:
            raise param_error("domain_sizes", owner, "a list of 1 to 64 domain sizes",
                              domain_sizes)
        self.domain_sizes = tuple(check_int(k, f"domain_sizes[{j}]", owner, low=2,
                                            high=MAX_ATTRIBUTE_DOMAIN)
                                  for j, k in enumerate(sizes))
        self.n_attributes = A = len(self.domain_sizes)
        self.epsilon = check_float(epsilon, "epsilon", owner, low=0.0, high=EPSILON_MAX,
                                   high_open=False)
        if marginal_size is not None and marginals is not None:
            raise param_error("marginal_size", owner, "None when 'marginals' lists the sets "
                              "(their sizes are given by the sets)", marginal_size)
        self.marginal_size: Optional[int] = None
        if marginals is None:
            self.marginal_size = check_int(min(2, A) if marginal_size is None else marginal_size,
                                           "marginal_size", owner, low=1,
                                           high=min(MAX_MARGINAL_ORDER, A))
        if oracle not in _ORACLES:
            raise param_error("oracle", owner, f"one of {list(_ORACLES)}", oracle)
        self.oracle = oracle
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.sets = self._check_sets(marginals, owner)
        self.marginals = None if marginals is None else [list(s) for s in self.sets]
        self._n_index = len(self.sets)
        self._group_domain = [math.prod(self.domain_sizes[a] for a in s) for s in self.sets]
        too_big = [s for s, D in zip(self.sets, self._group_domain) if D > MAX_GROUP_DOMAIN]
        if too_big:
            raise param_error("marginals", owner, f"sets whose cross products have at most "
                              f"{MAX_GROUP_DOMAIN} cells", _Shown(f"{list(too_big[0])}"))
        e = math.exp(self.epsilon)
        self.group_oracles: list = []
        self._pq, self._kinds, self._outputs = [], [], []
        for g, D in enumerate(self._group_domain):
            use_olh = oracle == "OLH" or (oracle == "auto" and D >= 3 * e + 2)
            if use_olh:
                o = OLH(domain_size=D, epsilon=self.epsilon,
                        codebook_seed=(self.codebook_seed + (g + 1) * _SEED_STEP) % 2**64,
                        n_threads=1)
                self.group_oracles.append(o)
                self._pq.append(_symbol_pq("OLH", self.epsilon, D, o))
                self._kinds.append("unary")  # the hits of a set: independent hash indicators
                self._outputs.append(int(o.buckets(np.array([self.epsilon]))[0]))
            else:
                self.group_oracles.append(None)
                self._pq.append(_symbol_pq("GRR", self.epsilon, D))
                self._kinds.append("grr")
                self._outputs.append(D)
        self._offsets = np.concatenate([[0], np.cumsum(self._group_domain)]).astype(np.int64)
        self._members = [np.asarray(s, dtype=np.int64) for s in self.sets]

    def _check_sets(self, marginals, owner) -> list:
        A = self.n_attributes
        if marginals is None:
            assert self.marginal_size is not None  # set by __init__ when marginals is None
            return list(itertools.combinations(range(A), self.marginal_size))
        expected = (f"a list of 1 to {MAX_GROUPS} distinct sets of 1 to {MAX_MARGINAL_ORDER} "
                    f"distinct attributes in [0, {A})")
        try:
            raw = [list(s) for s in marginals]
        except TypeError:
            raise param_error("marginals", owner, expected, marginals, TypeError) from None
        sets = []
        for s in raw:
            try:
                attrs = tuple(sorted(check_int(a, "marginals", owner, low=0, high=A - 1)
                                     for a in s))
            except TypeError:
                raise param_error("marginals", owner, expected, marginals, TypeError) from None
            if not 1 <= len(attrs) <= MAX_MARGINAL_ORDER or len(set(attrs)) != len(attrs):
                raise param_error("marginals", owner, expected, _Shown(f"{s} among them"))
            sets.append(attrs)
        if not 1 <= len(sets) <= MAX_GROUPS or len(set(sets)) != len(sets):
            raise param_error("marginals", owner, expected, marginals)
        return sets

    # ------------------------------------------------------------ protocol
    _dtype = np.dtype(np.int64)
    _width = 2

    def stream_params(self) -> dict:
        """The public parameters that rebuild an equivalent server (JSON values)."""
        return {"domain_sizes": list(self.domain_sizes), "epsilon": self.epsilon,
                "marginal_size": self.marginal_size, "marginals": self.marginals,
                "oracle": self.oracle, "codebook_seed": self.codebook_seed}

    def _max_order(self) -> int:
        return min(MAX_MARGINAL_ORDER, self.n_attributes)

    def example_data(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` records (int64 ``(n, A)``) with dependent attributes.

        A hidden uniform ``z`` in ``[0, 1)`` per record; attribute ``j`` is
        ``floor(z k_j)`` with probability 0.7 and uniform otherwise.
        """
        n = check_int(n, "n", f"{type(self).__name__}.example_data", low=0)
        z = rng.random(n)
        out = np.empty((n, self.n_attributes), dtype=np.int64)
        for j, k in enumerate(self.domain_sizes):
            follow = rng.random(n) < 0.7
            out[:, j] = np.where(follow, np.minimum((z * k).astype(np.int64), k - 1),
                                 rng.integers(0, k, n))
        return out

    def check_records(self, records: Any, owner: str) -> np.ndarray:
        """``records`` as int64 ``(n, A)`` with column ``j`` in ``[0, k_j)``, or raise."""
        return check_categorical_records(records, self.domain_sizes, owner)

    # ------------------------------------------------------------ client
    def _cells(self, x: np.ndarray, g: int) -> np.ndarray:
        attrs = self.sets[g]
        return np.ravel_multi_index(tuple(x[:, a] for a in attrs),
                                    [self.domain_sizes[a] for a in attrs]).astype(np.int64)

    def _privatize_rows(self, x, gen, ids=None):
        n = x.shape[0]
        groups = gen.integers(0, self._n_index, n) if n else np.zeros(0, dtype=np.int64)
        values = np.zeros(n, dtype=np.int64)
        ids = np.arange(n, dtype=np.uint64) if ids is None else ids
        order = np.argsort(groups, kind="stable")  # one vectorized call per group
        bounds = np.searchsorted(groups[order], np.arange(self._n_index + 1))
        for g in range(self._n_index):
            rows = order[bounds[g]:bounds[g + 1]]
            if rows.size == 0:
                continue
            cells = self._cells(x[rows], g)
            oracle = self.group_oracles[g]
            if oracle is None:
                values[rows] = _grr(cells, self._group_domain[g], self._pq[g][0], gen)
            else:
                values[rows] = oracle.perturb(cells, np.array([self.epsilon]), ids[rows], gen)
        return np.stack([groups, values], axis=1)

    # ------------------------------------------------------------ server
    def _illegal(self, values):
        idx, value = values[:, 0], values[:, 1]
        bad_index = (idx < 0) | (idx >= self._n_index)
        sizes = np.asarray(self._outputs, dtype=np.int64)[np.where(bad_index, 0, idx)]
        return bad_index, ~bad_index & ((value < 0) | (value >= sizes))

    def _public_rows(self, ids):
        u = public_uniforms(self.codebook_seed, ids, 2)
        group = np.minimum((u[:, 0] * self._n_index).astype(np.int64), self._n_index - 1)
        sizes = np.asarray(self._outputs, dtype=np.int64)[group]
        value = np.minimum((u[:, 1] * sizes).astype(np.int64), sizes - 1)
        return np.stack([group, value], axis=1)

    def _stats(self, clean, ids=None):
        groups, values = clean[:, 0], clean[:, 1]
        m = np.bincount(groups, minlength=self._n_index)
        hits = np.zeros(int(self._offsets[-1]), dtype=np.int64)
        order = np.argsort(groups, kind="stable")
        bounds = np.searchsorted(groups[order], np.arange(self._n_index + 1))
        for g in range(self._n_index):
            rows = order[bounds[g]:bounds[g + 1]]
            sl = slice(int(self._offsets[g]), int(self._offsets[g + 1]))
            oracle = self.group_oracles[g]
            if rows.size == 0:
                continue
            if oracle is None:
                hits[sl] = np.bincount(values[rows], minlength=self._group_domain[g])
            else:
                hits[sl] = np.rint(oracle.support(values[rows], ids[rows],
                                                  np.full(rows.size, self._outputs[g]),
                                                  np.ones(rows.size))).astype(np.int64)
        return np.concatenate([m, hits]).astype(np.int64)

    def raw_tables(self, est) -> tuple:
        """The unbiased reported marginals (flat, one per group) and their cell variances.

        ``n / m_g`` times the oracle's estimate from the ``m_g`` reports of
        group ``g``; a group without reports gets the uniform table and an
        infinite variance.
        """
        n = est.n
        m = est.stats[:self._n_index].astype(np.float64)
        hits = est.stats[self._n_index:].astype(np.float64)
        tables, variances, cell_var = [], [], []
        for g in range(self._n_index):
            D = self._group_domain[g]
            h = hits[int(self._offsets[g]):int(self._offsets[g + 1])]
            p, q = self._pq[g]
            if m[g] == 0:
                tables.append(np.full(D, n / D))
                variances.append(np.full(D, np.inf))
                cell_var.append(np.inf)
                continue
            t = (h - m[g] * q) / (p - q) * (n / m[g])
            f = np.clip(t / max(n, 1), 0.0, 1.0)
            tables.append(t)
            variances.append(n**2 * _table_variance(self._kinds[g], p, q, 1, f) / m[g])
            cell_var.append(n**2 * _table_variance(self._kinds[g], p, q, 1, 0.0) / m[g])
        return tables, variances, cell_var

    def post_process(self, tables: list, cell_variances: list, n: float) -> list:
        """Consistency and Norm-Sub, alternated :data:`ROUNDS` times (Norm-Sub last)."""
        weights = [v if np.isfinite(v) and v > 0 else 1e300 for v in cell_variances]
        out = list(tables)
        shared = shared_sets(self.sets)
        for _ in range(ROUNDS):
            out = make_consistent(out, self.sets, self.domain_sizes, weights, shared)
            out = [norm_sub(t, n) for t in out]
        return out

    def _tables(self, est) -> tuple:
        tables, _, cell_var = self.raw_tables(est)
        done = self.post_process(tables, cell_var, est.n)
        counts = np.concatenate(done) if done else np.zeros(0)
        return list(self.sets), counts, np.full(counts.shape, np.nan)

    def _marginal(self, est, attrs: tuple) -> tuple:
        tables = [est.counts[int(self._offsets[g]):int(self._offsets[g + 1])]
                  for g in range(self._n_index)]
        holders = [g for g, s in enumerate(self.sets) if set(attrs) <= set(s)]
        if holders:
            counts = sum(_project(tables[g], self.sets[g], self.domain_sizes, attrs)
                         for g in holders) / len(holders)
        else:
            constraints = []
            for g, s in enumerate(self.sets):
                common = tuple(a for a in attrs if a in s)
                if common:
                    constraints.append((common, _project(tables[g], s, self.domain_sizes,
                                                         common)))
            counts = max_entropy(float(est.n), attrs, self.domain_sizes, constraints)
        counts = np.ravel(counts)
        return counts, np.full(counts.shape, np.nan)
