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

The choice of the reported marginals. CALM (Section 5) picks ``l`` and
``m`` by minimizing a model of the noise error plus the reconstruction
error. Given ``n_users``, this class does the same through
:func:`calm_parameters`: ``l`` in ``[1, min(3, A)]``, the first ``m`` sets
of a greedy design that covers the pairs of attributes, the least
modelled error (the noise term is the exact oracle variance; the
reconstruction charge is a documented prior of ours, see there). Without
``n_users`` the model cannot weigh noise against reconstruction, and the
class reports every set of ``marginal_size`` attributes (default 2, all
``C(A, l)``) unless ``marginals`` lists the sets; with ``l >= t`` every
marginal of ``t`` attributes is then a projection (no reconstruction
error), at the price of ``C(A, l)`` groups.

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
from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._random import resolve_codebook_seed
from .._validation import check_float, check_int, param_error
from ..oracles import OLH
from ..oracles.olh import olh_buckets_for
from ._frequency import MAX_ATTRIBUTE_DOMAIN, _symbol_pq, check_categorical_records
from ._marginal_release import (EPSILON_MAX, MAX_MARGINAL_ORDER, _grr, _MarginalRelease,
                                 _Shown, _table_variance)
from ._sanitizing import public_uniforms

__all__ = ["CALM", "CALMChoice", "calm_parameters", "calm_error_model", "make_consistent",
           "norm_sub", "ROUNDS", "MAX_GROUP_DOMAIN"]

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


# ------------------------------------------------------------ choice of the reported marginals
def _group_law(D: int, epsilon: float, oracle: str) -> tuple:
    """``(kind, p, q)`` of the oracle CALM gives a group whose marginal has ``D`` cells."""
    e = math.exp(epsilon)
    if oracle == "OLH" or (oracle == "auto" and D >= 3 * e + 2):
        g = int(olh_buckets_for(np.array([epsilon]))[0])
        return "unary", e / (e + g - 1), 1.0 / g
    return "grr", e / (e + D - 1), 1.0 / (e + D - 1)


@dataclass(frozen=True)
class CALMChoice:
    """The reported marginals :func:`calm_parameters` chose, and the model's errors.

    Attributes
    ----------
    marginal_size : int
        ``l``, the size of every chosen marginal.
    marginals : tuple of tuple of int
        The ``m`` chosen attribute sets (each sorted), in the order of the
        greedy design (group ``g`` reports ``marginals[g]``).
    noise_error, reconstruction_error : float
        The model's mean, over every set ``T`` of ``t`` attributes, of the
        expected squared L2 error of ``T``'s frequency table: its noise,
        and the reconstruction charge of what the reported sets miss.
    expected_tvd : float
        The model's mean expected total variation distance of those
        tables, the quantity the choice minimizes.
    candidates : tuple of tuple
        ``(l, m, noise_error, reconstruction_error, expected_tvd)`` of
        every configuration the search evaluated (the first ``m`` sets of
        the size-``l`` greedy design).
    t : int
        The order of the marginals the model targets.
    """

    marginal_size: int
    marginals: tuple
    noise_error: float
    reconstruction_error: float
    expected_tvd: float
    candidates: tuple
    t: int


def _set_subsets(s: tuple, t: int):
    for w in range(1, min(t, len(s)) + 1):
        yield from itertools.combinations(s, w)


def calm_error_model(domain_sizes: Any, epsilon: float, n: int, marginals: Any, *, t: int = 2,
                     oracle: str = "auto") -> tuple:
    """The model's errors of CALM reporting ``marginals`` (one group each).

    The means over every set ``T`` of ``t`` attributes of the expected
    squared L2 distance between ``T``'s estimated and true frequency
    tables (frequencies, summing to 1), noise and reconstruction apart, and
    of the expected total variation distance. See :func:`calm_parameters`
    for the formulas; this is their plain (loop) evaluation, of which the
    search runs a vectorized twin.

    Parameters
    ----------
    domain_sizes : sequence of int >= 2
    epsilon : float in (0, 700]
    n : int >= 1
        The number of users (each group holds ``n / m`` of them).
    marginals : sequence of sequences of int
        The reported attribute sets (``m`` of them, distinct).
    t : int in [1, min(3, A)]
    oracle : {"auto", "GRR", "OLH"}

    Returns
    -------
    tuple of float
        ``(noise_error, reconstruction_error, expected_tvd)``.

    Examples
    --------
    >>> from fastldp.multidim import calm_error_model
    >>> noise, recon, tvd = calm_error_model([2, 2, 2], 1.0, 10_000, [[0, 1]])
    >>> round(recon, 6)  # (0, 2) and (1, 2) each lose 1/(3*4) + 1/(5*4) = 2/15
    0.088889
    """
    owner = "calm_error_model"
    sizes, epsilon, n, t = _check_model_args(domain_sizes, epsilon, n, t, oracle, owner)
    expected = f"distinct non-empty sets of distinct attributes in [0, {len(sizes)})"
    try:
        sets = [tuple(sorted(check_int(a, "marginals", owner, low=0, high=len(sizes) - 1)
                             for a in s)) for s in marginals]
    except TypeError:
        raise param_error("marginals", owner, expected, marginals, TypeError) from None
    if not sets or len(set(sets)) != len(sets) or any(
            not s or len(set(s)) != len(s) for s in sets):
        raise param_error("marginals", owner, expected, _Shown(f"{[list(s) for s in sets]}"))
    return _model_errors(sizes, epsilon, n, sets, t, oracle)


def _check_model_args(domain_sizes, epsilon, n, t, oracle, owner) -> tuple:
    try:
        raw = list(domain_sizes)
    except TypeError:
        raise param_error("domain_sizes", owner, "a list of ints >= 2, one per attribute",
                          domain_sizes, TypeError) from None
    if not 1 <= len(raw) <= 64:
        raise param_error("domain_sizes", owner, "a list of 1 to 64 domain sizes", domain_sizes)
    sizes = tuple(check_int(k, f"domain_sizes[{j}]", owner, low=2, high=MAX_ATTRIBUTE_DOMAIN)
                  for j, k in enumerate(raw))
    epsilon = check_float(epsilon, "epsilon", owner, low=0.0, high=EPSILON_MAX, high_open=False)
    n = check_int(n, "n", owner, low=1)
    t = check_int(t, "t", owner, low=1, high=min(MAX_MARGINAL_ORDER, len(sizes)))
    if oracle not in _ORACLES:
        raise param_error("oracle", owner, f"one of {list(_ORACLES)}", oracle)
    return sizes, epsilon, n, t


def _dimensions(sizes, S) -> int:
    """The dimension of the pure interaction (ANOVA) component of ``S``: ``prod (k_j - 1)``."""
    return math.prod(sizes[a] - 1 for a in S)


def _model_errors(sizes, epsilon, n, sets, t, oracle) -> tuple:
    """``(noise, reconstruction, expected TVD)``, means over the sets of ``t`` attributes."""
    m = len(sets)
    laws: dict = {}
    weight_sums: dict = {}  # S -> [sum of consistency weights, sum of weight^2 * alpha]
    for s in sets:
        D = math.prod(sizes[a] for a in s)
        if D not in laws:
            laws[D] = _group_law(D, epsilon, oracle)
        kind, p, q = laws[D]
        cell = _table_variance(kind, p, q, 1, 0.0)
        total = _table_variance(kind, p, q, D, 1.0)  # the group's total (0 for GRR)
        for sub in _set_subsets(s, t):
            D_sub = math.prod(sizes[a] for a in sub)
            c = D // D_sub
            trace = D_sub * _table_variance(kind, p, q, c, 1.0 / D_sub)
            alpha = (D_sub * trace - total) / (D_sub * (D_sub - 1))  # per sum-zero dimension
            w = 1.0 / (cell * c)  # make_consistent's weight
            acc = weight_sums.setdefault(sub, [0.0, 0.0])
            acc[0] += w
            acc[1] += w * w * alpha

    total_noise = total_recon = total_tvd = 0.0
    count = 0
    for T in itertools.combinations(range(len(sizes)), t):
        count += 1
        D_T = math.prod(sizes[a] for a in T)
        noise_T = recon_T = 0.0
        for S in _set_subsets(T, t):
            D_S = math.prod(sizes[a] for a in S)
            if S in weight_sums:
                w, w2a = weight_sums[S]
                noise_T += (m / n) * w2a / w**2 * _dimensions(sizes, S) * D_S / D_T
            else:
                recon_T += _dimensions(sizes, S) / ((D_S + 1) * D_T)
        total_noise += noise_T
        total_recon += recon_T
        # E[TVD] of D_T cells whose errors are normal with these mean squares
        total_tvd += 0.5 * math.sqrt(2.0 / math.pi * D_T * (noise_T + recon_T))
    return total_noise / count, total_recon / count, total_tvd / count


def _design_errors(sizes, epsilon, n, design, ms, t, oracle) -> np.ndarray:
    """:func:`_model_errors` of the first ``m`` sets of ``design`` for every ``m`` in ``ms``.

    The same model, vectorized: the consistency sums of every attribute
    set of at most ``t`` attributes grow set by set, and each ``m`` of
    ``ms`` reads them once. Returns float64 ``(len(ms), 3)``.
    """
    A = len(sizes)
    sub_index = {S: i for i, S in enumerate(_set_subsets(tuple(range(A)), t))}
    targets = list(itertools.combinations(range(A), t))
    pairs = [(T, S) for T in targets for S in _set_subsets(T, t)]
    rows = np.array([i for i, T in enumerate(targets) for _ in _set_subsets(T, t)], np.int64)
    sid = np.array([sub_index[S] for _, S in pairs], dtype=np.int64)
    d_T = np.array([math.prod(sizes[a] for a in T) for T in targets], dtype=np.float64)
    dims = np.array([_dimensions(sizes, S) for _, S in pairs], dtype=np.float64)
    d_S = np.array([math.prod(sizes[a] for a in S) for _, S in pairs], dtype=np.float64)
    noise_factor = dims * d_S / d_T[rows]
    recon_charge = dims / ((d_S + 1) * d_T[rows])
    w_sum = np.zeros(len(sub_index))
    w2a_sum = np.zeros(len(sub_index))
    laws: dict = {}
    out = np.zeros((len(ms), 3))
    done = 0
    for k, m in enumerate(ms):
        for s in design[done:m]:
            D = math.prod(sizes[a] for a in s)
            if D not in laws:
                laws[D] = _group_law(D, epsilon, oracle)
            kind, p, q = laws[D]
            cell = _table_variance(kind, p, q, 1, 0.0)
            total = _table_variance(kind, p, q, D, 1.0)
            for sub in _set_subsets(s, t):
                D_sub = math.prod(sizes[a] for a in sub)
                c = D // D_sub
                trace = D_sub * _table_variance(kind, p, q, c, 1.0 / D_sub)
                alpha = (D_sub * trace - total) / (D_sub * (D_sub - 1))
                w = 1.0 / (cell * c)
                w_sum[sub_index[sub]] += w
                w2a_sum[sub_index[sub]] += w * w * alpha
        done = m
        covered = w_sum[sid] > 0
        alpha_S = np.where(covered, (m / n) * w2a_sum[sid] / np.where(covered, w_sum[sid], 1.0)**2,
                           0.0)
        noise_T = np.bincount(rows, weights=np.where(covered, alpha_S * noise_factor, 0.0),
                              minlength=len(targets))
        recon_T = np.bincount(rows, weights=np.where(covered, 0.0, recon_charge),
                              minlength=len(targets))
        tvd_T = 0.5 * np.sqrt(2.0 / math.pi * d_T * (noise_T + recon_T))
        out[k] = noise_T.mean(), recon_T.mean(), tvd_T.mean()
    return out


def _greedy_design(sizes, l, t, limit) -> list:
    """The first (at most ``limit``) sets of ``l`` attributes in the greedy covering order.

    Each step takes the set that covers the most sets of ``t`` attributes
    not covered yet; ties go to the set whose ``t``-subsets are covered
    the fewest times so far (balance), then to the smaller cross product,
    then to the lexicographically first. With more than 256 candidate
    sets the design stops at twice the length that covered every
    ``t``-set (further sets only rebalance the coverage).
    """
    A = len(sizes)
    cands = np.array([c for c in itertools.combinations(range(A), l)
                      if math.prod(sizes[a] for a in c) <= MAX_GROUP_DOMAIN], dtype=np.int64)
    if cands.size == 0:
        return []
    cands = cands.reshape(-1, l)
    cells = np.array([math.prod(sizes[a] for a in c) for c in cands.tolist()], dtype=np.float64)
    rank = np.empty(len(cands), dtype=np.int64)
    rank[np.lexsort((np.arange(len(cands)), cells))] = np.arange(len(cands))
    t_index = {T: i for i, T in enumerate(itertools.combinations(range(A), t))}
    subs = [list(itertools.combinations(c, t)) for c in cands.tolist()]
    per = len(subs[0])
    tsub = np.array([[t_index[T] for T in row] for row in subs],
                    dtype=np.int64).reshape(len(cands), per)
    cover = np.zeros(len(t_index), dtype=np.int64)
    used = np.zeros(len(cands), dtype=bool)
    # the candidates holding each t-set (CSR), to update the scores of the touched ones only
    holder_order = np.argsort(tsub.ravel(), kind="stable")
    holder_start = np.searchsorted(tsub.ravel()[holder_order], np.arange(len(t_index) + 1))
    holders_of = holder_order // max(per, 1)
    new = np.full(len(cands), per, dtype=np.int64)  # t-subsets not covered yet
    balance = np.zeros(len(cands), dtype=np.int64)  # coverage counts of its t-subsets
    out: list = []
    steps = min(limit, len(cands))
    big = len(cands) + 1
    covered_at = None
    uncovered = len(t_index)
    for step in range(steps):
        if covered_at is not None and len(cands) > 256 and step >= 2 * covered_at:
            break  # past full coverage extra sets only rebalance: the model's noise stays flat
        key = ((per - new) * (per * (steps + 1) + 1) + balance) * big + rank
        key[used] = np.iinfo(np.int64).max
        g = int(np.argmin(key))
        used[g] = True
        for T in tsub[g].tolist():
            touched = holders_of[holder_start[T]:holder_start[T + 1]]
            if cover[T] == 0:
                new[touched] -= 1
                uncovered -= 1
            balance[touched] += 1
            cover[T] += 1
        out.append(tuple(int(a) for a in cands[g]))
        if covered_at is None and per and uncovered == 0:
            covered_at = step + 1
    return out


def _candidate_counts(total: int) -> list:
    if total <= 128:
        return list(range(1, total + 1))
    ms = set(range(1, 33))
    m = 32.0
    while m < total:
        m *= 1.06
        ms.add(min(total, int(math.ceil(m))))
    ms.add(total)
    return sorted(ms)


def calm_parameters(domain_sizes: Any, epsilon: float, n: int, *, t: int = 2,
                    oracle: str = "auto") -> CALMChoice:
    """Choose CALM's reported marginals (size ``l``, number ``m``, the sets) by an error model.

    CALM (Zhang et al., CCS 2018, Section 5) chooses ``l`` and ``m`` to
    minimize the noise error plus the reconstruction error of the
    ``t``-way marginals, and picks the ``m`` sets so that they cover the
    sets of ``t`` attributes. This function searches ``l`` in
    ``[1, min(3, A)]`` and, for each ``l``, the first ``m`` sets of a
    greedy covering order (most uncovered ``t``-sets first, then the least
    covered, then the smaller cross product), and returns the
    configuration of the least modelled mean expected TVD over the
    ``t``-sets. Sets whose cross product exceeds :data:`MAX_GROUP_DOMAIN`
    cells are left out, at most :data:`MAX_GROUPS` sets are taken, and
    with more than 256 candidate sets the design stops at twice the length
    that covers every ``t``-set.

    The model. Write a table's deviation from uniform in its ANOVA
    components: ``T``'s table splits into one component per non-empty
    ``S`` inside ``T``, of ``d(S) = prod_{j in S} (k_j - 1)`` dimensions.
    CALM's consistency step averages, for every ``S``, the projections of
    all the reported sets that contain ``S`` (the holders of ``S``), so

    * **noise**: group ``g`` (``n / m`` users; ``D_g`` cells; GRR or OLH
      at ``epsilon`` by CALM's rule, probabilities ``(p, q)``) estimates
      ``S``'s table, each cell a set of ``c = D_g / D_S`` of its cells.
      The exact per-report variance of such a set at frequency
      ``f = 1 / D_S`` (the oracle's law plus the sampling ``f (1 - f)``,
      :func:`._marginal_release._table_variance`) summed over ``S``'s cells
      is the trace ``tr_g``; the variance of the table's total ``v_g``
      (0 for GRR, whose reports hit one cell each) is the part Norm-Sub
      removes; at uniform cells the covariance is exchangeable, so each
      sum-zero dimension has the variance
      ``a_g = (D_S tr_g - v_g) / (D_S (D_S - 1)) * m / n``. The holders are
      averaged with the consistency weights ``w_g = 1 / (c Var_g[one cell,
      f = 0])``: ``a_S = sum w_g^2 a_g / (sum w_g)^2``. Spread over ``T``'s
      cells a component keeps ``D_S / D_T`` of its squared norm:
      ``noise(T) = sum_{S covered} a_S d(S) D_S / D_T``. For one GRR group
      reporting ``T`` this is exactly the GRR table's variance
      ``(1 - 1 / D_T) / (n (p - q)^2)``; the oracle part does not depend
      on the data (it is linear in ``f``), the sampling part is the largest
      at uniform cells.
    * **reconstruction**: a component ``S`` inside no reported set is
      lost (the maximum-entropy answer has none of it). ``S``'s own
      marginal is taken as a table drawn uniformly from the simplex
      (Dirichlet(1, ..., 1) over its ``D_S`` cells), whose deviation from
      uniform has the variance ``1 / (D_S (D_S + 1))`` per dimension; the
      ``d(S)`` dimensions of the component, spread over ``T``'s cells,
      are charged ``reconstruction(T) = sum_{S uncovered} d(S) / ((D_S +
      1) D_T)``. (One Dirichlet over ``T``'s cells would make its lower
      marginals nearly uniform when ``D_T`` is large, which data are not:
      every order gets its own.)
    * **TVD**: ``E[TVD(T)] = (1/2) sqrt(2 / pi * D_T * (noise(T) +
      reconstruction(T)))``, the mean absolute error of ``D_T`` normal
      cell errors of that mean square (the evaluation's metric; it weighs
      noise against bias as the measured TVD does, which squared error
      does not).

    What is the paper's and what is ours: the split of the error into a
    noise part that falls with ``n`` and ``epsilon`` and a data-dependent
    reconstruction part, the minimization over ``l`` and ``m``, and
    covering the ``t``-sets are CALM's (Section 5; its text was not at
    hand when this was written, so no formula here is quoted from it).
    The component (ANOVA) form of the noise after consistency, the exact
    oracle variances, the greedy covering order, the TVD objective and
    the reconstruction charge are ours. The charge is a data-free prior:
    data whose attributes depend on each other less than a random table
    favour fewer marginals than the model, more dependent data more. On
    ``CALM.example_data`` with every pair reported the model's mean
    expected TVD was within 4% of the measured one where the noise is
    small (0.098 predicted, 0.095 measured on ten binary attributes at
    eps 1, n 10^4; 0.066 and 0.066 on sizes (3, 2, 4, 2, 3, 5) at eps 2,
    n 2 10^4) and above it where the noise is large, for Norm-Sub clips
    what the model leaves normal (0.19 and 0.17 on (3, 2, 4, 2, 3) at
    eps 1, n 5,000; 1.1 and 0.46 on six attributes of size 4 at eps 0.5,
    n 5,000): there the model overprices coverage.

    Parameters
    ----------
    domain_sizes : sequence of int >= 2
        One per attribute (1 to 64 attributes).
    epsilon : float in (0, 700]
    n : int >= 1
        The expected number of users.
    t : int in [1, min(3, A)]
        The order of the marginals the model targets (default 2: pairs).
    oracle : {"auto", "GRR", "OLH"}
        The oracle of every group, as in :class:`CALM`.

    Returns
    -------
    CALMChoice

    Examples
    --------
    >>> from fastldp.multidim import calm_parameters
    >>> few = calm_parameters([2] * 8, 1.0, 2_000)
    >>> many = calm_parameters([2] * 8, 1.0, 2_000_000)
    >>> len(few.marginals) < len(many.marginals)
    True
    """
    owner = "calm_parameters"
    sizes, epsilon, n, t = _check_model_args(domain_sizes, epsilon, n, t, oracle, owner)
    A = len(sizes)
    best = None
    candidates = []
    for l in range(1, min(MAX_MARGINAL_ORDER, A) + 1):
        design = _greedy_design(sizes, l, t, MAX_GROUPS)
        ms = _candidate_counts(len(design))
        for m, (noise, recon, tvd) in zip(ms, _design_errors(sizes, epsilon, n, design, ms, t,
                                                             oracle).tolist()):
            candidates.append((l, m, noise, recon, tvd))
            if best is None or tvd < best[0]:
                best = (tvd, l, tuple(design[:m]), noise, recon)
    assert best is not None  # l = 1 always has a design (every attribute is <= MAX_GROUP_DOMAIN)
    total, l, chosen, noise, recon = best
    return CALMChoice(marginal_size=l, marginals=chosen, noise_error=noise,
                      reconstruction_error=recon, expected_tvd=total,
                      candidates=tuple(candidates), t=t)


class CALM(_MarginalRelease):
    """CALM-style marginal release: one reported marginal per group, consistency, Norm-Sub.

    Parameters
    ----------
    domain_sizes : list of int >= 2
        One per attribute (categorical attributes, ``A`` of them).
    epsilon : float in (0, 700]
    marginal_size : int in [1, min(3, A)], optional
        ``l``: the size of every reported marginal when ``marginals`` is
        ``None`` (then every set of ``l`` attributes is reported); default,
        when ``n_users`` is not given either, 2 (1 for a single attribute).
        Give it or ``marginals``, not both.
    marginals : list of lists of int, optional
        The attribute sets to report, one group each (each sorted on input,
        distinct, at most 3 attributes).
    oracle : {"auto", "GRR", "OLH"}
        The oracle of every group; ``"auto"``: GRR while its cross product
        has fewer than ``3 e^eps + 2`` cells, OLH above.
    codebook_seed : int or None
        Public seed of the OLH hashes and of the replacements of malformed
        reports.
    n_users : int >= 1, optional
        The expected number of users. Given (without ``marginal_size`` or
        ``marginals``), the reported marginals are chosen by CALM's error
        model for the pairs of attributes, :func:`calm_parameters` at
        ``t = min(2, A)`` (the choice, with the model's errors, is
        :attr:`choice`). The model needs ``n`` (its noise falls as
        ``1 / n``, its reconstruction charge does not) and the clients need
        the sets before they report, so the number comes as a hint at
        construction, not from the records; the chosen sets are recorded
        as ``marginals`` in :meth:`stream_params`, so a server rebuilt from
        the spec decodes the same groups whatever ``n`` it later sees.

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

    With ``n_users`` the sets are chosen by the error model: at 2,000 users
    the pair (0, 2), 12 cells, is left to the maximum-entropy answer.

    >>> CALM(domain_sizes=[3, 2, 4, 2], epsilon=1.0, n_users=2_000).sets
    [(1, 3), (0, 1), (0, 3), (1, 2), (2, 3)]
    """

    def __init__(self, *, domain_sizes: Any, epsilon: float, marginal_size: Optional[int] = None,
                 marginals: Any = None, oracle: str = "auto",
                 codebook_seed: Optional[int] = None, n_users: Optional[int] = None) -> None:
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
        self.n_users: Optional[int] = None
        self.choice: Optional[CALMChoice] = None
        if n_users is not None and (marginal_size is not None or marginals is not None):
            raise param_error("n_users", owner, "None when 'marginal_size' or 'marginals' is "
                              "given (n_users only serves the choice of the marginals)",
                              n_users)
        if oracle not in _ORACLES:
            raise param_error("oracle", owner, f"one of {list(_ORACLES)}", oracle)
        if n_users is not None:
            self.n_users = check_int(n_users, "n_users", owner, low=1)
            self.choice = calm_parameters(self.domain_sizes, self.epsilon, self.n_users,
                                          t=min(2, A), oracle=oracle)
            marginals = [list(s) for s in self.choice.marginals]
        if marginals is None:
            self.marginal_size = check_int(min(2, A) if marginal_size is None else marginal_size,
                                           "marginal_size", owner, low=1,
                                           high=min(MAX_MARGINAL_ORDER, A))
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
