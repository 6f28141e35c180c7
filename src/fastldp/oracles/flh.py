"""Fast local hashing (FLH): OLH with a public pool of ``h`` hash functions.

Cormode, Maddock and Maple's heuristic: instead of a hash of its own, each
user picks one of ``h`` public hash functions uniformly, ``j ~ U[h]``, and
reports ``(j, y)`` with ``y`` the GRR over ``g`` buckets of ``H_j(x)``
(:func:`~fastldp.oracles.olh.hashed_grr`, the client OLH uses). Hash
function ``j`` is the OLH hash of identity ``j`` under the codebook seed, so
the pool is fixed by ``codebook_seed``.

Server, in ``O(n + h D)``: count the reports per ``(j, bucket)`` (one
``bincount``), then map all ``D`` symbols through each of the ``h``
functions (:func:`~fastldp._kernels._flh.flh_support`):

    S(v) = sum_j C[j, H_j(v)],      count(v) = (S(v) - n / g) / (p - 1/g).

OLH's server costs ``O(n D)`` instead.

Bias from a fixed pool
----------------------
For a symbol ``v`` a user does not hold, ``P(H_j(v) = y)`` is ``1/g`` on
average over pools (the null probability the estimator subtracts), but for
one fixed pool it is ``1/g + (kappa(x, v) - 1/g)(p - q')``, with
``kappa(x, v)`` the fraction of the pool's functions that collide ``x`` and
``v`` and ``q' = (1 - p)/(g - 1)``. The estimate is therefore unbiased over
the choice of ``codebook_seed`` (what the tests check), and for a fixed
pool each non-held symbol carries a bias whose standard deviation is about
``sqrt((1/g)(1 - 1/g) / h) (p - q') / (p - 1/g)`` per user holding another
symbol: ``h`` trades server time against it (Cormode et al., section 4.3).
The variances reported are OLH's (they ignore this pool term).

``g = round(e^epsilon) + 1`` is fixed by the constructor's ``epsilon``,
capped at ``MAX_BUCKETS = 4096`` because the server's table has ``h g``
cells (at most ``MAX_CELLS = 2^24``; the constructor rejects a larger
pool). GRR over fewer buckets than optimal is still ``eps``-LDP; from
``eps ~ 8.3`` on, the cap adds about ``1 / g`` to each report's variance.
Personal budgets ``eps_i`` keep ``g`` and use
``p_i = e^eps_i / (e^eps_i + g - 1)``, GRR over the same buckets, which is
``eps_i``-LDP.

References
----------
.. [1] G. Cormode, S. Maddock, C. Maple, "Frequency estimation under local
   differential privacy", PVLDB 14(11), 2021, section 4.3 (FLH).
.. [2] T. Wang, J. Blocki, N. Li, S. Jha, "Locally differentially private
   protocols for frequency estimation", USENIX Security 2017 (OLH).
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._cms import pair_counts
from .._kernels._flh import flh_support
from .._sanitize import SanitizationReport
from .._validation import check_int, param_error
from ..results import PrivacyStatement
from ..streaming import ExactSum
from ._base import (
    FrequencyEstimate, FrequencyOracle, MatrixReports, all_legal_report, budgets_by_keyword,
    classify_integers, public_uniform, scalar_sum, tally_report,
)
from .olh import bucket_keep_probability, hashed_grr, olh_buckets_for, olh_hash

__all__ = ["FLH", "MAX_BUCKETS", "MAX_CELLS"]

MAX_BUCKETS = 4096
MAX_CELLS = 2**24  # h * g cells of the server's (pool index, bucket) table


def int64_rows(reports: Any, n: int, width: int) -> Optional[np.ndarray]:
    """``reports`` as a C-contiguous int64 ``(n, width)`` array, or None if it is not one of integers.

    Only integer arrays of that shape with ``n > 0`` qualify (what the
    counting kernels read); uint64 is viewed as int64, so an entry at or
    above ``2**63`` reads as negative, which every kernel refuses as out of
    range. Anything else goes the sanitizing way.
    """
    arr = reports
    if not (isinstance(arr, np.ndarray) and arr.shape == (n, width) and n
            and arr.dtype.kind in "iu" and arr.dtype.itemsize <= 8):
        return None
    if arr.dtype == np.uint64:
        arr = arr.view(np.int64)
    return np.ascontiguousarray(arr, dtype=np.int64)


class CountedEstimate:
    """Mixin of the table servers (FLH, CMS, HCMS): one kernel pass for clean reports.

    When every report has the oracle's budget and is legal as sent,
    :meth:`estimate` counts the reports into the server's integer table with
    one kernel that also checks them (``_legal_table``; ``None`` when a
    report is not legal) and applies the equal-budget closed form to that
    table (``_estimate_from_table``): the same table the partial's
    ``"hits"`` holds and the same operations as :meth:`finalize`, so the
    same bits, without building the exact sums a partial keeps. Every other
    call is :meth:`FrequencyOracle.estimate`.
    """

    @budgets_by_keyword
    def estimate(self, reports: ArrayLike, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> FrequencyEstimate:
        """Count estimates of every symbol, their variances and the sanitization counts.

        The numbers are exactly those of ``finalize(partial(reports,
        epsilons, identities))``: see :meth:`partial` for the exact sums
        that make a decode split into chunks bit-identical to this one.
        With equal budgets and reports that are all legal as sent, the
        reports are counted into the server's table in one kernel pass
        (the same integer table a partial keeps, the same closed form).
        With personal budgets, ``.privacy`` also summarizes them (min,
        median, max), which a partial does not keep.

        Parameters
        ----------
        reports : array_like
            One report per identity; malformed reports are sanitized and
            counted, never dropped.
        epsilons, identities
            As given to :meth:`privatize` (keyword-only).

        Returns
        -------
        FrequencyEstimate
        """
        oracle: Any = self
        if epsilons is None and oracle.epsilon is not None:
            owner = f"{type(self).__name__}.estimate"
            n = oracle._n_reports(reports, owner)
            table = oracle._legal_table(reports, n)
            if table is not None:
                oracle._identities(identities, n, owner)  # checked as a partial checks them
                return oracle._estimate_from_table(table, n)
        return super().estimate(reports, epsilons=epsilons,  # type: ignore[misc]
                                identities=identities)

    def _equal_budget_estimate(self, counts: np.ndarray, n: int,
                               kind: type = FrequencyEstimate, **extra: Any) -> Any:
        """What :meth:`finalize` returns for ``n`` legal reports at the oracle's budget.

        ``kind`` and ``extra``: a subclass of :class:`FrequencyEstimate` and
        its own fields (CMS's :class:`~fastldp.oracles.SketchEstimate`).
        """
        oracle: Any = self
        return kind(counts, oracle._uniform_variances(n, counts), all_legal_report(n), n,
                    PrivacyStatement.local(epsilon=oracle.epsilon), oracle.categories, **extra)


class FLH(CountedEstimate, MatrixReports, FrequencyOracle):
    """Fast local hashing: a public pool of ``n_hashes`` OLH hashes (Cormode et al. 2021).

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700]
        Sets ``g = min(round(e^epsilon) + 1, 4096)`` and the default budget.
    n_hashes : int >= 1
        ``h``, the size of the public pool (default 1024).
    categories : list of labels or a pandas Categorical, optional
        Labels of the symbols: :meth:`privatize` then takes the labels and
        the results are labelled (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        Seed of the pool.
    n_threads : int or None

    Notes
    -----
    Reports are int64 arrays of shape ``(n, 2)``: ``(j, y)`` with the pool
    index ``j in [0, h)`` and the bucket ``y in [0, g)``. See the module
    docstring for the server and the bias of a fixed pool.

    Examples
    --------
    >>> import numpy as np
    >>> flh = FLH(domain_size=100, epsilon=2.0, n_hashes=256, codebook_seed=3)
    >>> reports = flh.privatize(np.arange(5000) % 100, rng=0)
    >>> reports.shape
    (5000, 2)
    >>> est = flh.estimate(reports)
    >>> est.n, est.counts.shape
    (5000, (100,))
    """

    name = "flh"

    def __init__(self, *, domain_size: Optional[int] = None, epsilon: float,
                 n_hashes: int = 1024, categories: Any = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None) -> None:
        owner = type(self).__name__
        if epsilon is None:
            raise param_error("epsilon", owner, "a float in (0, 700.0] (it fixes g)", epsilon,
                              TypeError)
        self.n_hashes = check_int(n_hashes, "n_hashes", owner, low=1, high=MAX_CELLS // 2)
        super().__init__(domain_size=domain_size, epsilon=epsilon, categories=categories,
                         codebook_seed=codebook_seed, n_threads=n_threads)

    def _setup(self):
        self.g = min(int(olh_buckets_for(np.array([self.epsilon]))[0]), MAX_BUCKETS)
        if self.n_hashes * self.g > MAX_CELLS:
            raise param_error("n_hashes", type(self).__name__,
                              f"an int in [1, {MAX_CELLS // self.g}] at g = {self.g} buckets "
                              f"(the server table has n_hashes * g <= 2**24 cells)", self.n_hashes)

    def _repr_extra(self):
        return f", n_hashes={self.n_hashes}"

    def _p(self, eps):
        return bucket_keep_probability(eps, self.g)

    def variances(self, eps: np.ndarray) -> np.ndarray:
        p = self._p(eps)
        g = self.g
        return (1.0 / g) * (1 - 1.0 / g) / (p - 1.0 / g) ** 2

    def held_variances(self, eps: np.ndarray) -> np.ndarray:
        p = self._p(eps)
        return p * (1 - p) / (p - 1.0 / self.g) ** 2

    def pool(self) -> np.ndarray:
        """The public hash table ``H[j, v]``, shape ``(h, D)`` (for tests and audits)."""
        h, D = self.n_hashes, self.domain_size
        return olh_hash(self.codebook_seed, np.repeat(np.arange(h, dtype=np.uint64), D),
                        np.tile(np.arange(D, dtype=np.int64), h), self.g).reshape(h, D)

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """Exact law ``P[x, j g + y]`` of the report ``(j, y)`` given the fixed pool."""
        p = float(self._p(np.array([eps]))[0])
        g, h = self.g, self.n_hashes
        H = self.pool()
        law = np.full((self.domain_size, h, g), (1 - p) / (g - 1) / h)
        law[np.arange(self.domain_size)[:, None], np.arange(h)[None, :], H.T] = p / h
        return law.reshape(self.domain_size, h * g)

    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        """Array layer of :meth:`privatize`: ``(n, 2)`` int64 reports ``(j, y)``."""
        n = values.shape[0]
        j = np.asarray(rng.integers(0, self.n_hashes, n)).astype(np.uint64)
        g = np.full(n, self.g, dtype=np.int64)
        y = hashed_grr(self.codebook_seed, j, values, g, self._p(eps), rng)
        return np.stack([j.astype(np.int64), y], axis=1)

    def _cells(self, reports):
        return reports[:, 0] * self.g + reports[:, 1]

    # ------------------------------------------------------------ server statistic
    def _stream_extra(self):
        return {"n_hashes": self.n_hashes}

    def _stat_size(self):
        return self.n_hashes * self.g

    def weighted_sums(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                      lam: np.ndarray) -> tuple[ExactSum, ExactSum]:
        """Exact table ``T[j, y] = sum_{i: (j_i, y_i) = (j, y)} a_i`` and ``-sum_i a_i / g``.

        ``a_i = lam_i / (p_i - 1/g)``. The table (``h g`` cells) and the
        offset are :class:`~fastldp.streaming.ExactSum` s of the per-report
        terms; the counts map the rounded table through the pool
        (:meth:`weighted_counts`).
        """
        a, c = self._report_terms(eps, lam)
        table = ExactSum(self.n_hashes * self.g)
        table.add(a, self._cells(clean))
        return table, scalar_sum(c)

    def _report_terms(self, eps, lam):
        a = np.ascontiguousarray(lam / (self._p(eps) - 1.0 / self.g), dtype=np.float64)
        return a, -(a / self.g)

    def weighted_counts(self, support: ExactSum, offset: ExactSum) -> np.ndarray:
        """``sum_j T[j, H_j(v)]`` of the rounded table, plus the offset."""
        table = support.value().reshape(self.n_hashes, self.g)
        return (flh_support(self.codebook_seed, table, self.domain_size, self.n_threads)
                + float(offset.value()[0]))

    def _hits(self, clean, identities):
        hits = pair_counts(np.ascontiguousarray(clean, dtype=np.int64), self.n_hashes, self.g)
        if hits is None:  # pragma: no cover - clean reports are legal
            raise ValueError("FLH._hits needs legal reports")
        return hits

    def _legal_table(self, reports, n):
        """The ``(j, y)`` counts of reports that are all legal as sent (one pass), else None."""
        arr = int64_rows(reports, n, 2)
        return None if arr is None else pair_counts(arr, self.n_hashes, self.g)

    def _fast_hits(self, reports, n, identities, owner):
        hits = self._legal_table(reports, n)
        if hits is not None:
            self._identities(identities, n, owner)
        return hits

    def _estimate_from_table(self, hits, n):
        return self._equal_budget_estimate(self._counts_from_hits(hits, n), n)

    def _counts_from_hits(self, hits, n):
        p = float(self._p(np.array([self.epsilon]))[0])
        table = np.ascontiguousarray(hits, dtype=np.float64).reshape(self.n_hashes, self.g)
        support = flh_support(self.codebook_seed, table, self.domain_size, self.n_threads)
        return (support - n / self.g) / (p - 1.0 / self.g)

    def _shape_error(self, owner, n, shape):
        rows = "n" if n is None else str(n)
        return ValueError(f"The 'reports' parameter of {owner} must be a ({rows}, 2) array of "
                          f"(pool index, bucket). Got shape {shape} instead.")

    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        """Replace illegal ``(j, y)`` by a public uniform legal pair; count them by reason."""
        n = eps.shape[0]
        arr = self._report_rows(reports, n, 2, owner)
        h, g = self.n_hashes, self.g
        if arr.dtype.kind in "iu" and n and arr.dtype.itemsize <= 8:
            if (arr.min(axis=0) >= 0).all() and arr[:, 0].max() < h and arr[:, 1].max() < g:
                return np.ascontiguousarray(arr, dtype=np.int64), all_legal_report(n)
        values, numeric, integral, wrong_dtype = classify_integers(arr)
        in_range = integral & (values >= 0) & (values < np.array([h, g]))
        legal = in_range.all(axis=1)
        numeric_row, integral_row = numeric.all(axis=1), integral.all(axis=1)
        out = values.copy()
        bad = ~legal
        if bad.any():
            ids = identities[bad]
            out[bad, 0] = public_uniform(self.codebook_seed, ids, np.full(ids.shape[0], h), word=1)
            out[bad, 1] = public_uniform(self.codebook_seed, ids, np.full(ids.shape[0], g), word=2)
        return out, tally_report(n, numeric_row, integral_row, legal, wrong_dtype)
