"""One-time RAPPOR: a Bloom filter per cohort, permanent randomized response, least-squares decode.

Client (Erlingsson, Pihur and Korolova 2014, sections 3 and 4, the permanent
randomized response only: one report per user, no instantaneous step):

1. Identity ``i`` belongs to cohort ``c_i = i mod C`` (``C = n_cohorts``, a
   public function of the public identity). Cohort ``c`` has ``h`` public
   hash functions ``H_{c,t} : [D] -> [k]`` (``t < h``; the OLH hash of
   :func:`~fastldp.oracles.olh.olh_hash` with identity ``c h + t`` under the
   codebook seed), and the Bloom filter of ``v`` is the ``k``-bit vector
   ``B`` with ``B_j = 1`` iff ``H_{c,t}(v) = j`` for some ``t``.
2. Every bit is kept with probability ``1 - f/2`` and flipped with
   probability ``f/2``, independently: ``P(B'_j = B_j) = p = 1 - f/2``,
   ``q = f/2``. Two values' filters differ in at most ``2h`` bits, so the
   likelihood ratio of a report is at most ``(p / q)^(2h)``, and

       eps = 2 h ln((1 - f/2) / (f/2)),   i.e.   q = f/2 = 1 / (1 + e^(eps / (2h))).

The report is the ``k`` bits packed as unary encoding packs them: a
``(n, ceil(k / 8))`` uint8 row, bit ``j`` in bit ``j & 7`` of byte ``j >> 3``
(``numpy.packbits(bits, axis=1, bitorder="little")``). The flips are drawn
by the Bernoulli kernel of :mod:`fastldp.oracles.unary` (``[U < q 2^64]``):
the bits follow the binary64 ``q`` the audit checks exactly.

Cohorts by identity
-------------------
RAPPOR's clients draw a cohort at random and send it. Here the cohort is
``identity mod n_cohorts``: public, fixed by the identity the server is
given anyway, so the report carries only the bits, and the default
identities ``0 .. n-1`` fill the cohorts evenly. The decode assumes that
every cohort holds the values in the population's proportions (below), so
identities must not be chosen by value.

Decoding a known candidate list
-------------------------------
The candidates are the domain ``[D]`` (or its ``categories``). With ``m_c``
reports in cohort ``c`` and ``y_cj`` of them reporting bit ``j``,
``t_cj = (y_cj - q m_c) / (p - q)`` is an unbiased estimate of the number of
cohort ``c``'s users whose filter has bit ``j`` set, ``sum_v X_c[j, v]
N_c(v)`` (``X_c[j, v] = B_{c}(v)_j``). Assuming ``N_c(v) = m_c N(v) / n``
(RAPPOR's model: each cohort a sample of the population), the frequencies
``f = N / n`` solve the least-squares problem

    min_f  sum_c sum_j (t_cj - m_c (X_c f)_j)^2 / m_c,

weighted by the inverse variance of each equation (``Var t_cj = m_c s^2``,
``s^2 = p q / (p - q)^2``, the same for every bit because ``p = 1 - q``): with
equal cohorts it is RAPPOR's unweighted regression on the cohorts' bit
proportions. Its normal equations are

    G f = h,    G = sum_c m_c X_c^T X_c,    h = sum_c X_c^T t_c,

and the counts are ``N = n f``. ``nonnegative=True`` solves the same problem
under ``f >= 0`` (:func:`scipy.optimize.nnls` on ``||L^T f - L^{-1} h||``
with ``G = L L^T``), RAPPOR's non-negative variant.

Variances
---------
Given the reports' cohorts, ``Cov(h) = s^2 G`` exactly (the bits of one
report are flipped independently and ``p (1 - p) = q (1 - q)``), so the
least-squares counts have covariance ``n^2 s^2 G^{-1}``; the result's
``variances`` are its diagonal, computed from the Cholesky factor
(``diag G^{-1}`` = the column sums of squares of ``L^{-1}``). They depend on
the cohort sizes only, not on the data (no plug-in is needed). They are the
variances over the randomized response; the decode's model error when a
cohort's values are not in the population's proportions is not included.
With ``nonnegative=True`` the estimate is biased near zero and has no such
closed form: ``variances`` is ``None``.

Cost of a decode
----------------
Two paths give the same counts (to ``1e-9`` of the largest; the tests check
it at small and moderate ``D``, for both estimators): the dense
factorization below, which ``all_variances=True`` (the default) uses because
it needs ``G^{-1}``'s diagonal, and the sparse path of
``all_variances=False``, which never forms ``G`` (with ``nonnegative=True``
it solves the NNLS problem by a primal-dual active-set method whose inner
solves are the conjugate gradients below,
:meth:`RAPPOR._nonnegative_sparse`): conjugate gradients on ``G f = h``
with ``G v = sum_c m_c X_c^T (X_c v)`` read from the filters' positions
(:mod:`fastldp._kernels._bloom`: no sparse matrix is built; ``2 nnz(X) <=
2 C h D`` adds a product, 0.35 ms at the benchmark's ``D = 4096, k = 128,
h = 2, C = 64`` on one core of a loaded machine; the number of products
grows with ``D / (C k)``, which sets the spread of ``G``'s spectrum). A
nonsingular ``G`` is solved in one kernel call, preconditioned by the Gram
matrix of random filters ``a I + c 1 1^T`` and stopped by an estimate of
the error against :data:`ERROR_TOL` (:meth:`RAPPOR._cg_solve`: 74 products
at the benchmark's sizes, against 94 unpreconditioned to a relative
residual of :data:`CG_TOL`); a singular one (beyond
``MAX_DENSE_CANDIDATES``) and the non-negative decode's inner solves stay
unpreconditioned to :data:`CG_TOL`, so that a singular but consistent
system converges to the minimum-norm solution (the diagonal of ``G`` is
nearly constant, so a diagonal preconditioner would gain little). The rule: the
sparse path uses a factorization already in the cache when there is one
(two triangular solves: cheaper than the iterations), the dense one also
when ``G`` is singular by the design's structure (fewer equations from the
cohorts with reports than candidates, or two candidates with the same
filter in all of them) and ``D <= MAX_DENSE_CANDIDATES``, so that the
minimum-norm solution is the same one; else it iterates. Its variances
for chosen candidates (:meth:`RAPPOR.candidate_variances`) are solves
``G z = e_v`` of the same kind, ``2 z_v - z^T G z`` (exact up to a term
quadratic in the residual).

The dense path:
Everything a decode needs besides the reports' bit counts depends only on
public parameters: the design ``X`` on the codebook seed, ``k``, ``h``,
``C`` and the candidates (``0 .. D-1``), and ``G`` and its factorization
also on the cohort sizes ``m_c``. ``G`` is built from the design's sparse
rows without a dense ``X`` (:func:`~fastldp._kernels._cms.bloom_gram`: each
entry a sum of integer cohort sizes, so exact); it is dense (two
candidates share a bit of some cohort with probability close to one at
the default sizes), and the exact decode factorizes it: Cholesky,
``D^3 / 3`` flops, then the triangular inverse that gives the variances'
diagonal (``diag G^{-1}`` needs every entry of ``L^{-1}``), another
``D^3 / 3``. The Cholesky factorization alone is the floor of an exact
decode (``python bench/oracle_compare.py`` times it beside the decode): an
iterative solve (conjugate gradients on
``X^T W X``) would give the counts in ``O(nnz(X))`` per iteration, but not
the exact variances, whose diagonal is what costs the ``D^3``.
Factorizations are therefore kept in a module-level cache
(:func:`clear_factor_cache`, :data:`FACTOR_CACHE_SIZE` entries, least
recently used first out) keyed by the public design (codebook seed,
``n_bits``, ``n_hashes``, ``n_cohorts``, ``domain_size``) and the cohort
sizes, shared by every RAPPOR server of the process: a second decode of
the same design and cohort sizes, by the same oracle or a new one, costs
``O(n k + C h D + D^2)``. The designs are cached the same way
(:data:`DESIGN_CACHE_SIZE`).

When ``G`` is singular (fewer equations ``C k`` than candidates, or two
candidates with the same filter in every cohort), the candidates cannot all
be told apart: the decode returns the minimum-norm least-squares solution
(eigen-decomposition of ``G``, eigenvalues below ``1e-10`` of the largest
dropped), its variances the diagonal of ``n^2 s^2 G^+``, and warns.

Streaming
---------
The estimate is a least-squares solve, not a sum over reports: a partial
holds the exact integer bit counts per cohort (``C k`` positions) and the
cohort sizes (``C``), which merge by adding; :meth:`RAPPOR.finalize` does
the solve. So a decode split into any chunks is bit-identical to the
one-shot :meth:`~RAPPOR.estimate`. One-time RAPPOR has one budget (``f`` is
a parameter of the deployment): ``epsilons`` is accepted only when it
equals ``epsilon``.

References
----------
.. [1] U. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response", CCS 2014 (sections 3, 4 and 5:
   Bloom filters, cohorts, permanent randomized response, ``eps_inf = 2 h
   ln((1 - f/2) / (f/2))``, decoding by regression).
.. [2] G. Fanti, V. Pihur, U. Erlingsson, "Building a RAPPOR with the
   unknown: privacy-preserving learning of associations and data
   dictionaries", PoPETs 2016 (the least-squares decode of a candidate list).
.. [3] C. L. Lawson, R. J. Hanson, "Solving least squares problems", SIAM
   1995 (non-negative least squares).
"""

from __future__ import annotations

import threading
import warnings
from collections import OrderedDict
from typing import Any, Callable, Hashable, Optional, cast

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._bloom import (bloom_cg, bloom_gram_apply, bloom_positions, bloom_rows,
                               bloom_transpose_apply)
from .._kernels._cms import bloom_design, bloom_gram, cohort_bit_counts
from .._kernels._unary import ue_perturb
from .._random import resolve_identities
from .._sanitize import SanitizationReport
from .._validation import check_int, param_error
from ..results import PrivacyStatement
from ..streaming import ExactSum, Partial, check_partial
from ._base import (
    FrequencyEstimate, FrequencyOracle, MatrixReports, entry_error, partial_report, report_counts,
)
from .olh import olh_hash
from .unary import UnaryEncoding, _thresholds

__all__ = ["RAPPOR", "MAX_CANDIDATES", "MAX_DENSE_CANDIDATES", "MAX_BITS", "MAX_HASHES",
           "MAX_DESIGN_ROWS", "MAX_DESIGN_ENTRIES", "FACTOR_CACHE_SIZE", "DESIGN_CACHE_SIZE",
           "clear_factor_cache"]

#: candidates at most (the sparse decode, ``all_variances=False``)
MAX_CANDIDATES = 2**20
#: candidates at most of the dense decode (a D x D factorization, ``all_variances=True``;
#: ``8 D^2`` bytes, 512 MiB at the limit)
MAX_DENSE_CANDIDATES = 8192
#: ``n_cohorts * n_hashes * domain_size`` at most (the entries of the sparse design)
MAX_DESIGN_ENTRIES = 2**26
#: relative residual at which the sparse decode's conjugate gradients stop (the unpreconditioned
#: solves: a singular design's minimum-norm solution, the non-negative decode's inner solves)
CG_TOL = 1e-13
#: relative residual at which the preconditioned solve of a nonsingular design first stops; it
#: then continues until the error estimate below is met (:meth:`RAPPOR._cg_solve`)
CG_FIRST_TOL = 3e-12
#: the sparse decode's target: ``||f - G^{-1} h||_2 <= ERROR_TOL * max|f|`` by the estimate
#: ``||r||_2 / lambda_min(G)`` with a lower estimate of ``lambda_min`` (:meth:`RAPPOR._cg_solve`;
#: the counts agree with the dense decode's to ``1e-9`` of the largest, what the tests check)
ERROR_TOL = 1e-9
#: entries of the design (``C h D``) from which a product with ``G`` uses the oracle's threads
#: (below it a parallel region per product costs more than it saves on a loaded machine)
PARALLEL_PRODUCT_ENTRIES = 2**22
#: report bytes from which the bit counts use the oracle's threads (below it one thread counts
#: in about a millisecond: 0.85 ms for 100,000 reports of 128 bits, against 8 to 15 ms with two
#: threads on a machine whose cores other work shares)
PARALLEL_COUNT_BYTES = 2**24
#: bits of a Bloom filter at most
MAX_BITS = 4096
#: hash functions per cohort at most
MAX_HASHES = 64
#: n_cohorts * n_bits at most (the rows of the least-squares design)
MAX_DESIGN_ROWS = 2**24
#: eigenvalues (and squared Cholesky pivots) below this fraction of the largest are dropped
RCOND = 1e-10
#: the smallest flip probability the sampler realizes (``[U < q 2^64]``)
MIN_Q = 2.0**-64
_CACHE = 8  # factorizations an oracle keeps referring to (one per vector of cohort sizes)
#: factorizations of ``G`` kept by the module (each ``8 D^2`` bytes: 128 MiB at D = 4096)
FACTOR_CACHE_SIZE = 4
#: designs kept by the module (about ``24 C h D`` bytes each)
DESIGN_CACHE_SIZE = 8


class _LRU:
    """A small thread-safe least-recently-used map (the module's factor and design caches)."""

    def __init__(self, size: int) -> None:
        self.size = size
        self._items: OrderedDict = OrderedDict()
        self._lock = threading.Lock()

    def get(self, key: Hashable) -> Any:
        with self._lock:
            value = self._items.get(key)
            if value is not None:
                self._items.move_to_end(key)
            return value

    def put(self, key: Hashable, value: Any) -> None:
        with self._lock:
            self._items[key] = value
            self._items.move_to_end(key)
            while len(self._items) > self.size:
                self._items.popitem(last=False)

    def clear(self) -> None:
        with self._lock:
            self._items.clear()


_FACTORS = _LRU(FACTOR_CACHE_SIZE)
_DESIGNS = _LRU(DESIGN_CACHE_SIZE)


def clear_factor_cache() -> None:
    """Forget every cached design and factorization of ``G`` (module docstring).

    The next decode of every design builds and factorizes its ``G`` again
    (benchmarks of a first decode call this; results never depend on the
    cache). An oracle keeps using the factorizations it has already used.
    """
    _FACTORS.clear()
    _DESIGNS.clear()

_SUMS = frozenset({"bits", "reports"})


class _Factor:
    """A factorization of ``G``: its inverse's diagonal, a solver and an NNLS form."""

    def __init__(self, build: Callable[[], np.ndarray]) -> None:
        """Factorize the ``G`` that ``build()`` returns (a fresh C-ordered array, consumed).

        Cholesky by LAPACK's ``dpotrf`` in ``G``'s own memory (``G`` is
        symmetric, so its transpose is the same matrix in Fortran order: no
        copy), then ``dtrtri`` for the diagonal of the inverse. When ``G``
        is not numerically positive definite, ``build()`` is called again
        for the eigen-decomposition.
        """
        import scipy.linalg.lapack  # scipy loads on the first decode, not with fastldp.oracles

        G = build()
        D = G.shape[0]
        self.rank = D
        self.cholesky = False
        top = float(np.max(np.diag(G), initial=0.0))
        if top > 0:
            L, info = scipy.linalg.lapack.dpotrf(G.T, lower=1, clean=0, overwrite_a=1)
            if info == 0 and float(np.min(np.diag(L)) ** 2) > RCOND * top:
                for j in range(1, D):  # zero the strict upper triangle (column by column)
                    L[:j, j] = 0.0
                self.cholesky = True
                self.L = L
                # diag G^{-1} = the column sums of squares of L^{-1} (the triangular
                # inverse, D^3 / 3 flops, in a buffer dropped once the diagonal is known)
                Linv, info = scipy.linalg.lapack.dtrtri(L, lower=1)
                if info != 0:  # pragma: no cover - L's diagonal was checked above
                    raise np.linalg.LinAlgError(f"RAPPOR: dtrtri failed (info = {info})")
                self.diag_inverse = np.einsum("ij,ij->j", Linv, Linv)
                return
            G = build()  # dpotrf overwrote it
        lam, U = np.linalg.eigh(G)
        keep = lam > RCOND * max(float(lam.max(initial=0.0)), 0.0)
        self.rank = int(keep.sum())
        self.U, self.lam = U[:, keep], lam[keep]
        self.diag_inverse = np.einsum("ij,ij,j->i", self.U, self.U, 1.0 / self.lam)

    def _forward(self, h: np.ndarray) -> np.ndarray:
        """``L^{-1} h`` (Cholesky case)."""
        import scipy.linalg

        return scipy.linalg.solve_triangular(self.L, h, lower=True, check_finite=False)

    def solve(self, h: np.ndarray) -> np.ndarray:
        """``G^{-1} h`` (``G^+ h``, the minimum-norm solution, when singular)."""
        if self.cholesky:
            import scipy.linalg

            return scipy.linalg.solve_triangular(self.L, self._forward(h), lower=True,
                                                 trans="T", check_finite=False)
        return self.U @ ((self.U.T @ h) / self.lam)

    def nonnegative(self, h: np.ndarray) -> np.ndarray:
        """``argmin_{f >= 0} f^T G f - 2 f^T h`` by non-negative least squares."""
        if self.cholesky:
            A, rhs = self.L.T, self._forward(h)
        else:
            root = np.sqrt(self.lam)
            A, rhs = root[:, None] * self.U.T, (self.U.T @ h) / root
        D = A.shape[1]
        import scipy.optimize

        try:
            return scipy.optimize.nnls(A, rhs, maxiter=max(100, 30 * D))[0]
        except RuntimeError:  # pragma: no cover - the active set did not converge
            return scipy.optimize.lsq_linear(A, rhs, bounds=(0.0, np.inf), method="bvls").x


def _cg_pass(matvec: Callable[[np.ndarray], np.ndarray], B: np.ndarray, stop: np.ndarray,
             maxiter: int) -> np.ndarray:
    """One pass of conjugate gradients from zero on ``G Z = B``, column ``j`` stopped once its
    recursive squared residual is at most ``stop[j]``."""
    Z = np.zeros_like(B)
    R = B.copy()
    P = R.copy()
    rr = np.einsum("ij,ij->j", R, R)
    for _ in range(maxiter):
        active = rr > stop
        if not active.any():
            break
        Q = matvec(P)
        pq = np.einsum("ij,ij->j", P, Q)
        alpha = np.divide(rr, pq, out=np.zeros_like(rr), where=active & (pq > 0))
        Z += alpha * P
        R -= alpha * Q
        rr_next = np.einsum("ij,ij->j", R, R)
        beta = np.divide(rr_next, rr, out=np.zeros_like(rr), where=active)
        P *= beta
        P += R
        rr = rr_next
    return Z


def _conjugate_gradients(matvec: Callable[[np.ndarray], np.ndarray], B: np.ndarray,
                         tol: float, maxiter: int) -> tuple[np.ndarray, np.ndarray]:
    """Solve ``G Z = B`` column by column by conjugate gradients from ``Z = 0``.

    Each column has its own step sizes (``matvec`` takes a ``(D, b)`` block
    so that the columns share the sparse products). Unpreconditioned on
    purpose: from zero the iterates stay in the range of ``G``, so a
    singular but consistent system converges to its minimum-norm solution,
    the one the dense decode returns. A column stops once its recursive
    residual is below ``tol`` times its right-hand side; the true residual
    is then recomputed, and while it is above ``tol`` (the recursive one
    drifts from it) the correction is solved for the same way (iterative
    refinement, at most three times).

    Returns
    -------
    Z : float64 array, the shape of ``B``
    residual : float64 array, ``(b,)``
        The true relative residual ``||B_j - G Z_j|| / ||B_j||`` per column.
    """
    norms = np.sqrt(np.einsum("ij,ij->j", B, B))
    stop = (tol * norms) ** 2
    Z = np.zeros_like(B)
    R = B
    for _ in range(4):  # the solve, then up to three refinements
        Z += _cg_pass(matvec, R, stop, maxiter)
        R = B - matvec(Z)
        rr = np.einsum("ij,ij->j", R, R)
        if np.all(rr <= stop):
            break
    residual = np.divide(np.sqrt(rr), norms, out=np.zeros_like(norms), where=norms > 0)
    return Z, residual


class RAPPOR(MatrixReports, FrequencyOracle):
    """One-time RAPPOR: a per-cohort Bloom filter and permanent randomized response.

    Parameters
    ----------
    domain_size : int, optional
        ``D``, the candidates ``0 .. D-1``; defaults to ``len(categories)``.
        At most :data:`MAX_DENSE_CANDIDATES` (8,192) with
        ``all_variances=True`` (a ``D x D`` factorization), else
        :data:`MAX_CANDIDATES` (``2**20``); and
        ``n_cohorts * n_hashes * D <= MAX_DESIGN_ENTRIES``.
    epsilon : float in (0, 700]
        Sets ``f = 2 / (1 + e^(epsilon / (2 h)))``; one budget for every report.
    n_bits : int in [2, 4096]
        ``k``, the bits of the Bloom filter (default 128).
    n_hashes : int in [1, 64]
        ``h``, the hash functions per cohort (default 2).
    n_cohorts : int >= 1
        ``C``, the cohorts; identity ``i`` is in cohort ``i mod C`` (default
        64; ``C k <= 2**24``).
    nonnegative : bool
        Decode by non-negative least squares (then ``variances`` is ``None``).
    all_variances : bool
        ``True`` (default): the decode factorizes ``G`` and returns every
        candidate's exact variance. ``False``: the counts come from
        conjugate gradients on the sparse design (no ``D x D`` matrix; equal
        to the factorization's to ``1e-9`` of the largest count), the
        result's ``variances`` is ``None``, and
        :meth:`candidate_variances` gives the exact variances of the
        candidates asked for; with ``nonnegative=True`` (no variances either
        way) it picks the sparse active-set NNLS over the dense one. A
        decode option: not part of the partial's parameters (any RAPPOR of
        the same design finalizes the partial).
    categories : list of labels or a pandas Categorical, optional
        Labels of the candidates (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        Seed of the cohorts' hash functions (and of the sanitization coins).
    n_threads : int or None
        Threads of the client's and server's bit kernels; results never
        depend on it.

    Notes
    -----
    Reports are ``(n, ceil(n_bits / 8))`` uint8 rows of packed bits; the
    server must be given the identities of the clients (they fix the
    cohorts). See the module docstring for the least-squares decode, its
    exact variances and the partial state.

    Examples
    --------
    >>> import numpy as np
    >>> rappor = RAPPOR(domain_size=10, epsilon=4.0, n_bits=32, n_hashes=2, n_cohorts=8,
    ...                 codebook_seed=1)
    >>> round(rappor.f, 4)
    0.5379
    >>> values = np.repeat(np.arange(10), [4000, 2000, 1000, 1000, 500, 500, 400, 300, 200, 100])
    >>> reports = rappor.privatize(values, rng=0)
    >>> reports.shape, reports.dtype
    ((10000, 4), dtype('uint8'))
    >>> est = rappor.estimate(reports)
    >>> truth = np.bincount(values, minlength=10)
    >>> bool(np.all(np.abs(est.counts - truth) < 5 * est.std))
    True
    """

    name = "rappor"
    uses_identities = True  # the identity fixes the cohort

    def __init__(self, *, domain_size: Optional[int] = None, epsilon: float, n_bits: int = 128,
                 n_hashes: int = 2, n_cohorts: int = 64, nonnegative: bool = False,
                 all_variances: bool = True, categories: Any = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None) -> None:
        owner = type(self).__name__
        if epsilon is None:
            raise param_error("epsilon", owner, "a float in (0, 700.0] (one-time RAPPOR has one "
                              "budget: it fixes f)", epsilon, TypeError)
        # two bits at least: the OLH hash has g >= 2 buckets (one bit tells no values apart)
        self.n_bits = check_int(n_bits, "n_bits", owner, low=2, high=MAX_BITS)
        self.n_hashes = check_int(n_hashes, "n_hashes", owner, low=1, high=MAX_HASHES)
        self.n_cohorts = check_int(n_cohorts, "n_cohorts", owner, low=1,
                                   high=MAX_DESIGN_ROWS // self.n_bits)
        if not isinstance(nonnegative, (bool, np.bool_)):
            raise param_error("nonnegative", owner, "a bool", nonnegative, TypeError)
        self.nonnegative = bool(nonnegative)
        if not isinstance(all_variances, (bool, np.bool_)):
            raise param_error("all_variances", owner, "a bool", all_variances, TypeError)
        self.all_variances = bool(all_variances)
        self._design: Any = None
        self._singular_seen: set[bytes] = set()  # cohort sizes the sparse decode warned about
        self._factors: dict[bytes, _Factor] = {}  # those this oracle has used (warned about)
        super().__init__(domain_size=domain_size, epsilon=epsilon, categories=categories,
                         codebook_seed=codebook_seed, n_threads=n_threads)

    def _setup(self) -> None:
        owner = type(self).__name__
        if self.all_variances:
            if self.domain_size > MAX_DENSE_CANDIDATES:
                raise param_error(
                    "domain_size", owner,
                    f"an int in [2, {MAX_DENSE_CANDIDATES}] with all_variances=True (the decode "
                    "factorizes the D x D Gram matrix; all_variances=False decodes up to "
                    f"{MAX_CANDIDATES} candidates by a sparse solve)", self.domain_size)
        elif self.domain_size > MAX_CANDIDATES:
            raise param_error("domain_size", owner, f"an int in [2, {MAX_CANDIDATES}]",
                              self.domain_size)
        entries = self.n_cohorts * self.n_hashes * self.domain_size
        if entries > MAX_DESIGN_ENTRIES:
            raise param_error(
                "domain_size", owner,
                f"at most {MAX_DESIGN_ENTRIES // (self.n_cohorts * self.n_hashes)} with "
                f"n_cohorts = {self.n_cohorts} and n_hashes = {self.n_hashes} (the design has "
                f"n_cohorts * n_hashes * domain_size <= {MAX_DESIGN_ENTRIES} entries)",
                self.domain_size)

    def _repr_extra(self) -> str:
        extra = f", n_bits={self.n_bits}, n_hashes={self.n_hashes}, n_cohorts={self.n_cohorts}"
        extra += ", nonnegative=True" if self.nonnegative else ""
        return extra + ("" if self.all_variances else ", all_variances=False")

    def _stream_extra(self) -> dict[str, Any]:
        return {"n_bits": self.n_bits, "n_hashes": self.n_hashes, "n_cohorts": self.n_cohorts,
                "nonnegative": self.nonnegative}

    # ------------------------------------------------------------ the randomized response
    def _pq(self, eps: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``p = 1 - q`` and ``q = f / 2 = 1 / (1 + e^(eps / (2h)))`` per budget."""
        q = 1.0 / (1.0 + np.exp(np.asarray(eps, dtype=np.float64) / (2.0 * self.n_hashes)))
        return 1.0 - q, q

    @property
    def f(self) -> float:
        """RAPPOR's ``f``: a bit is replaced by a fair coin with probability ``f``."""
        return float(2.0 * self._pq(np.array([self.epsilon]))[1][0])

    def variances(self, eps: np.ndarray) -> np.ndarray:
        """``s^2 = p q / (p - q)^2``: the variance of one report's debiased bit.

        The counts' variances come from the least-squares solve
        (:meth:`finalize`); this per-bit variance is what they scale.
        """
        p, q = self._pq(eps)
        return p * q / (p - q) ** 2

    def held_variances(self, eps: np.ndarray) -> np.ndarray:
        """Equal to :meth:`variances`: ``p (1 - p) = q (1 - q)`` for a set or a clear bit."""
        return self.variances(eps)

    def check_budgets(self, eps: np.ndarray, name: str, owner: str) -> None:
        """Also refuse a budget whose flips the sampler cannot draw: ``q < 2^-64``.

        The flips are ``[U < q 2^64]`` for a 64-bit uniform ``U``: below
        ``2^-64`` no bit would ever flip and a report would be its Bloom
        filter (``eps > 88.7 h``).
        """
        super().check_budgets(eps, name, owner)
        with np.errstate(all="ignore"):
            _, q = self._pq(eps)
        bad = ~(q >= MIN_Q)
        if bad.any():
            expected = (f"at most {2 * self.n_hashes} ln(2^64 - 1) (q = f/2 >= 2**-64: the "
                        "sampler flips bits with probability [U < q 2^64])")
            i = int(np.flatnonzero(bad)[0])
            if eps.shape[0] == 1 and name == "epsilon":
                raise param_error(name, owner, expected, float(eps[0]))
            raise entry_error(name, owner, expected, float(eps[i]), i)

    def _budgets(self, epsilons, n: int, owner: str) -> np.ndarray:
        eps = super()._budgets(epsilons, n, owner)
        if epsilons is not None:
            bad = ~(eps == self.epsilon)
            if bad.any():
                expected = (f"None or RAPPOR's epsilon ({self.epsilon!r}), as a scalar or one "
                            "per report (one-time RAPPOR has one budget: f is a parameter of "
                            "the deployment; build one RAPPOR(epsilon=...) per budget)")
                i = int(np.flatnonzero(bad)[0])
                if np.ndim(epsilons) == 0:
                    raise param_error("epsilons", owner, expected, float(eps[i]))
                raise entry_error("epsilons", owner, expected, float(eps[i]), i)
        return eps

    # ------------------------------------------------------------ cohorts and filters
    def cohorts(self, identities: ArrayLike) -> np.ndarray:
        """The cohort ``identity mod n_cohorts`` of each identity (int64)."""
        ids = np.asarray(identities, dtype=np.uint64)
        return (ids % np.uint64(self.n_cohorts)).astype(np.int64)

    def bloom_positions(self, cohorts: ArrayLike, values: ArrayLike) -> np.ndarray:
        """``H_{c,t}(v)`` for paired cohorts and values: int64 array of shape ``(n, h)``."""
        c = np.asarray(cohorts, dtype=np.int64)
        v = np.asarray(values, dtype=np.int64)
        h = self.n_hashes
        fn = (c[:, None] * h + np.arange(h, dtype=np.int64)[None, :]).astype(np.uint64)
        items = np.broadcast_to(v[:, None], fn.shape)
        return olh_hash(self.codebook_seed, fn.ravel(), items.ravel(),
                        self.n_bits).reshape(c.shape[0], h)

    def bloom_filters(self, cohort: int) -> np.ndarray:
        """The Bloom filter of every candidate in one cohort: bool array ``(D, n_bits)``."""
        D = self.domain_size
        pos = self.bloom_positions(np.full(D, int(cohort)), np.arange(D))
        out = np.zeros((D, self.n_bits), dtype=bool)
        out[np.repeat(np.arange(D), self.n_hashes), pos.ravel()] = True
        return out

    def design(self) -> Any:
        """The 0/1 matrix ``X``, ``(C k, D)``: row ``c k + j``, column ``v`` is ``X_c[j, v]``.

        Computed once from the public parameters (``C h D`` hashes) and
        shared with every RAPPOR of the same public design (module
        docstring).
        """
        if self._design is None:
            self._design = self._shared_design()
        return self._design

    def _design_key(self) -> tuple:
        return (self.codebook_seed, self.n_bits, self.n_hashes, self.n_cohorts, self.domain_size)

    def _positions(self) -> np.ndarray:
        """The Bloom positions ``(C, D, h)`` (uint16, a repeated bit as ``k``): :meth:`_bloom`."""
        return self._bloom()[0]

    def _bloom(self) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """The design as the sparse decode's kernels read it, from the module's cache (built on
        a miss): the Bloom positions (:func:`~fastldp._kernels._bloom.bloom_positions`, the
        same hashes as :meth:`design`) and the same design in rows (``row_ptr``, ``row_cols``,
        :func:`~fastldp._kernels._bloom.bloom_rows`); no scipy matrix."""
        key = self._design_key() + ("positions",)
        bloom = _DESIGNS.get(key)
        if bloom is None:
            pos = bloom_positions(self.codebook_seed, self.n_cohorts, self.n_hashes,
                                  self.n_bits, self.domain_size)
            bloom = (pos,) + tuple(bloom_rows(pos, self.n_bits))
            _DESIGNS.put(key, bloom)
        return bloom

    def _product_threads(self) -> int:
        entries = self.n_cohorts * self.n_hashes * self.domain_size
        return self.n_threads if entries >= PARALLEL_PRODUCT_ENTRIES else 1

    def _shared_design(self) -> Any:
        """``X`` (compressed rows, increasing columns) from the module's cache, built on a miss."""
        key = self._design_key()
        X = _DESIGNS.get(key)
        if X is None:
            import scipy.sparse as sp

            C, h, k, D = self.n_cohorts, self.n_hashes, self.n_bits, self.domain_size
            # the cohorts' filters (bloom_positions' hashes), a bit set twice counted once
            indptr, indices = bloom_design(self.codebook_seed, C, h, k, D)
            X = sp.csr_matrix((np.ones(indices.shape[0]), indices, indptr), shape=(C * k, D))
            X.has_sorted_indices = True
            _DESIGNS.put(key, X)
        return X

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """Exact law ``P[x, y]`` of the report of ``identity`` for every bit vector ``y``.

        Column ``y`` is the vector whose bit ``j`` is ``(y >> j) & 1`` (as
        :meth:`fastldp.oracles.OUE.channel`); needs ``n_bits <= 12``.
        """
        k = self.n_bits
        if k > 12:
            raise ValueError(f"channel() enumerates 2^n_bits outputs; needs n_bits <= 12, got {k}")
        p, q = (float(v[0]) for v in self._pq(np.array([eps], dtype=np.float64)))
        B = self.bloom_filters(int(self.cohorts([identity])[0]))       # (D, k)
        y = (np.arange(2**k)[None, :] >> np.arange(k)[:, None]) & 1      # (k, 2^k)
        same = B[:, :, None] == y[None, :, :].astype(bool)               # (D, k, 2^k)
        return np.where(same, p, q).prod(axis=1)

    # ------------------------------------------------------------ client
    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        """Array layer of :meth:`privatize`: ``(n, ceil(n_bits / 8))`` uint8 reports.

        The filter's bits are set row by row for each hash function (``h``
        vectorized passes); the flips are ``Bernoulli(q)`` bits of the
        unary-encoding kernel (a row of ``k + 1`` bits whose extra bit is
        dropped), xor-ed onto the filters.
        """
        n, k = values.shape[0], self.n_bits
        ids = cast(np.ndarray, identities)
        pos = self.bloom_positions(self.cohorts(ids), values)
        rows = np.zeros((n, self.n_bytes), dtype=np.uint8)
        index = np.arange(n)
        for t in range(self.n_hashes):  # one vectorized pass per hash function
            rows[index, pos[:, t] >> 3] |= (np.uint8(1) << (pos[:, t] & 7).astype(np.uint8))
        _, q = self._pq(eps)
        key = rng.integers(0, 2**64, size=2, dtype=np.uint64)
        flips = ue_perturb(int(key[0]), int(key[1]), np.full(n, k, dtype=np.int64),
                           np.ascontiguousarray(np.broadcast_to(_thresholds(q), (n,))),
                           np.full(n, 0.5), k + 1, self.n_threads)
        flips = flips[:, :self.n_bytes]
        pad = self._padding_mask()
        if pad:  # bit k (the extra bit) and beyond: not part of the report
            flips[:, -1] &= np.uint8(~pad & 0xFF)
        rows ^= flips
        return rows

    # ------------------------------------------------------------ reports (unary layout)
    @property
    def n_bytes(self) -> int:
        """Bytes per report, ``ceil(n_bits / 8)``."""
        return (self.n_bits + 7) // 8

    def _padding_mask(self) -> int:
        """Bits of the last byte that lie beyond bit ``n_bits - 1``."""
        used = self.n_bits - 8 * (self.n_bytes - 1)
        return (0xFF << used) & 0xFF

    def _shape_error(self, owner: str, n: Optional[int], shape: tuple[int, ...]) -> ValueError:
        rows = "n" if n is None else str(n)
        return ValueError(
            f"The 'reports' parameter of {owner} must be a ({rows}, {self.n_bytes}) uint8 array "
            f"of packed Bloom-filter bits (numpy.packbits(bits, axis=1, bitorder='little')). "
            f"Got shape {shape} instead.")

    # RAPPOR's reports have unary encoding's layout with n_bits columns: its row checks and
    # its public replacement rows read only n_bytes, _padding_mask, _shape_error and the seed.
    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        """Replace illegal rows by public random legal rows; count them by reason.

        A row that is not ``ceil(n_bits / 8)`` integers in ``[0, 255]`` with
        zero padding bits is replaced by public uniformly random bits keyed
        by ``(codebook seed, identity)`` and counted (``non_numeric``,
        ``non_integer``, ``out_of_range``, the first that applies), as
        :meth:`fastldp.oracles.OUE.sanitize` does.
        """
        return UnaryEncoding.sanitize(cast(Any, self), reports, eps, identities, owner)

    def public_rows(self, identities: np.ndarray) -> np.ndarray:
        """Public uniformly random legal reports keyed by ``(codebook seed, identity)``."""
        return UnaryEncoding.public_rows(cast(Any, self), identities)

    # ------------------------------------------------------------ server
    def bit_counts(self, clean: np.ndarray, cohorts: np.ndarray) -> np.ndarray:
        """Per cohort, how many of the (legal) reports set each bit: int64 ``(C, n_bits)``.

        One kernel pass (:func:`~fastldp._kernels._cms.cohort_bit_counts`):
        a counting sort of the reports by cohort, then each cohort's bits
        counted in place by a carry-save adder.
        """
        c = np.ascontiguousarray(cohorts, dtype=np.uint64)
        return self._cohort_counts(clean, c)[0]

    def _cohort_counts(self, clean: np.ndarray,
                       identities: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """``(bit counts (C, k), reports per cohort)`` of legal reports and their identities."""
        n, nbytes = clean.shape[0], self.n_bytes
        W = (self.n_bits + 63) // 64
        if nbytes == 8 * W:
            rows = np.require(clean, dtype=np.uint8, requirements=["C", "A"])
        else:  # whole words: the padding bytes zero
            rows = np.zeros((n, 8 * W), dtype=np.uint8)
            rows[:, :nbytes] = clean
        words = rows.view("<i8").astype(np.int64, copy=False)  # bit j: bit j % 64 of word j // 64
        # integer counts: the same for any thread count; threads only for a large batch
        threads = self.n_threads if words.nbytes >= PARALLEL_COUNT_BYTES else 1
        return cohort_bit_counts(words, np.ascontiguousarray(identities, dtype=np.uint64),
                                 self.n_cohorts, self.n_bits, threads)

    def partial(self, reports: ArrayLike, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """The exact, mergeable state of :meth:`estimate` over a chunk of reports.

        Parameters
        ----------
        reports : array_like, shape (n, ceil(n_bits / 8))
            The chunk's reports (there may be none); sanitized and counted as
            in :meth:`estimate`.
        epsilons : float or array_like, optional
            ``None`` or the oracle's ``epsilon`` (one budget).
        identities : array_like of int, optional
            The chunk's identities (they fix the cohorts); the default
            ``0 .. n-1`` is right only for a first chunk.

        Returns
        -------
        fastldp.streaming.Partial
            Exact integer sums: ``"bits"``, the number of reports setting
            bit ``j`` in cohort ``c`` at position ``c n_bits + j``, and
            ``"reports"``, the reports per cohort; the counts of reports by
            sanitization outcome and the ``"wrong_dtype"`` flag. The state has
            ``n_cohorts (n_bits + 1)`` positions, whatever ``n``.
        """
        return self._partial(reports, epsilons, identities, f"{type(self).__name__}.partial")

    def _partial(self, reports: Any, epsilons: Any, identities: Any, owner: str) -> Partial:
        n = self._n_reports(reports, owner)
        eps = self._budgets(epsilons, n, owner)
        ids = resolve_identities(identities, n, owner)
        clean, report = self.sanitize(reports, eps, ids, owner)
        counts, per_cohort = self._cohort_counts(clean, ids)
        bits = ExactSum(self.n_cohorts * self.n_bits)
        bits.add_integers(counts.ravel())
        sizes = ExactSum(self.n_cohorts)
        sizes.add_integers(per_cohort)
        return Partial(type(self).__name__, self.stream_params(),
                       sums={"bits": bits, "reports": sizes}, counts=report_counts(report),
                       flags={"wrong_dtype": report.wrong_dtype})

    def _check_partial(self, partial: Any, owner: str) -> Partial:
        check_partial(partial, type(self).__name__, self.stream_params(), owner)
        if frozenset(partial.sums) != _SUMS:
            raise ValueError(f"{owner}: the partial holds the sums {sorted(partial.sums)}, not "
                             f"those of a {type(self).__name__} partial")
        return partial

    def finalize(self, partial: Partial) -> FrequencyEstimate:
        """The least-squares counts of every candidate and their variances (module docstring).

        A deterministic function of the partial's exact counts: the
        debiased bit counts ``t_c``, the normal equations ``G f = h`` and
        ``N = n f`` (``f >= 0`` by NNLS with ``nonnegative=True``). The
        factorization of ``G`` depends only on the cohort sizes and is
        reused across calls. A partial without reports gives zero counts.

        Parameters
        ----------
        partial : fastldp.streaming.Partial
            From :meth:`partial` or :meth:`merge` of this oracle.

        Returns
        -------
        FrequencyEstimate
            ``variances``: the diagonal of ``n^2 s^2 G^{-1}``, or ``None``
            with ``nonnegative=True``.
        """
        owner = f"{type(self).__name__}.finalize"
        self._check_partial(partial, owner)
        n = partial.counts["n"]
        D = self.domain_size
        variances: Optional[np.ndarray]
        if n == 0:
            counts = np.zeros(D)
            variances = None if self.nonnegative or not self.all_variances else np.zeros(D)
        else:
            y = partial.sums["bits"].value().reshape(self.n_cohorts, self.n_bits)
            m = partial.sums["reports"].value()
            counts, variances = self._decode(y, m)
        return FrequencyEstimate(counts, cast(Any, variances), partial_report(partial), n,
                                 PrivacyStatement.local(epsilon=self.epsilon), self.categories)

    def _decode(self, y: np.ndarray, m: np.ndarray) -> tuple[np.ndarray, Optional[np.ndarray]]:
        p, q = (float(v[0]) for v in self._pq(np.array([self.epsilon])))
        t = (y - q * m[:, None]) / (p - q)           # debiased bit counts per cohort
        n = float(m.sum())
        key = np.ascontiguousarray(m, dtype=np.float64).tobytes()
        cached = key in self._factors or _FACTORS.get(self._design_key() + (key,)) is not None
        if not self.all_variances and not cached:
            # X^T t from the positions: no sparse matrix for the sparse decode
            h = bloom_transpose_apply(self._positions(), self.n_bits, np.ascontiguousarray(t),
                                      self._product_threads())
        else:  # the dense decode's sums, so that a cached factorization gives its counts
            h = np.asarray(self.design().T @ t.ravel(), dtype=np.float64)
        if not self.all_variances:
            if self.nonnegative:
                return n * self._nonnegative_sparse(m, h), None
            return n * self._solve(m, h[:, None])[:, 0], None
        factor = self._factor(m)
        if self.nonnegative:
            return n * factor.nonnegative(h), None
        s2 = p * q / (p - q) ** 2
        return n * factor.solve(h), (n * n * s2) * factor.diag_inverse

    # ------------------------------------------------------------ the sparse decode
    def _gram_operator(self, m: np.ndarray) -> Callable[[np.ndarray], np.ndarray]:
        """``V -> G V = sum_c m_c X_c^T X_c V`` column by column from the Bloom positions
        (:func:`~fastldp._kernels._bloom.bloom_gram_apply`)."""
        (pos, ptr, cols), k, threads = self._bloom(), self.n_bits, self._product_threads()
        w = np.ascontiguousarray(m, dtype=np.float64)

        def matvec(V: np.ndarray) -> np.ndarray:
            return np.column_stack([bloom_gram_apply(pos, ptr, cols, k, w,
                                                     np.ascontiguousarray(V[:, j]), threads)
                                    for j in range(V.shape[1])])

        return matvec

    def _structurally_singular(self, m: np.ndarray) -> bool:
        """Whether ``G`` is singular by the design's structure (the sparse decode's check).

        ``G`` is singular when the cohorts with reports give fewer equations
        than candidates (``k`` per cohort), or when two candidates have the
        same filter in every cohort with reports (equal columns of the
        design on those rows). Other linear dependences are not looked for
        (the dense decode finds them; at the default sizes they do not
        occur).
        """
        D = self.domain_size
        used = np.flatnonzero(np.asarray(m) > 0)
        if used.shape[0] * self.n_bits < D:
            return True
        pos, k, threads = self._positions(), self.n_bits, self._product_threads()
        # two random keys per candidate (sums of fixed random weights of the used rows its
        # filters set) sort equal columns together; a shared key is then checked exactly
        weights = np.random.default_rng(0x5A11).random((2, self.n_cohorts, k))
        weights *= (np.asarray(m, dtype=np.float64) > 0)[None, :, None]
        keys = np.column_stack([bloom_transpose_apply(pos, k, weights[0], threads),
                                bloom_transpose_apply(pos, k, weights[1], threads)])
        order = np.lexsort((keys[:, 1], keys[:, 0]))
        same = np.flatnonzero(np.all(keys[order[1:]] == keys[order[:-1]], axis=1))
        for i in same:
            # the filters as sorted position tuples (a repeated bit is k in both)
            u, v = np.sort(pos[used, int(order[i])], axis=1), np.sort(pos[used, int(order[i + 1])],
                                                                     axis=1)
            if np.array_equal(u, v):
                return True
        return False

    def _solve(self, m: np.ndarray, B: np.ndarray) -> np.ndarray:
        """``G^+ B`` without a new factorization (``B`` a ``(D, b)`` block).

        The module's cached factorization of ``G`` when there is one (two
        triangular solves); else preconditioned conjugate gradients on the
        filters' positions, column by column (:meth:`_cg_solve`, to
        :data:`ERROR_TOL` of the largest entry), unless ``G`` is singular by
        the design's structure: then the dense decode's minimum-norm
        solution, which drops eigenvalues below :data:`RCOND` of the largest,
        as the dense decode does (``D <= MAX_DENSE_CANDIDATES``; above it,
        unpreconditioned conjugate gradients' own minimum-norm solution,
        :func:`_conjugate_gradients` to a relative residual of
        :data:`CG_TOL`). Both paths warn when ``G`` is singular.
        """
        key = np.ascontiguousarray(m, dtype=np.float64).tobytes()
        factor = None
        singular = False
        if key in self._factors or _FACTORS.get(self._design_key() + (key,)) is not None:
            factor = self._factor(m)  # cached: the oracle's own (it has warned on a rank)
        elif self._structurally_singular(m):
            singular = True
            if self.domain_size <= MAX_DENSE_CANDIDATES:
                factor = self._factor(m)  # warns with the rank
            elif key not in self._singular_seen:
                self._singular_seen.add(key)
                warnings.warn(
                    f"RAPPOR: the least-squares design is singular ({self.domain_size} "
                    f"candidates, n_cohorts * n_bits = {self.n_cohorts * self.n_bits} "
                    "equations, or candidates with the same Bloom filter in every cohort with "
                    "reports): the minimum-norm solution is returned, and combinations of "
                    "candidates cannot be told apart", RuntimeWarning, stacklevel=5)
        if factor is not None:
            return np.column_stack([factor.solve(B[:, j]) for j in range(B.shape[1])])
        if not singular:
            return np.column_stack([self._cg_solve(m, B[:, j]) for j in range(B.shape[1])])
        Z, residual = _conjugate_gradients(self._gram_operator(m), B, CG_TOL,
                                           maxiter=max(1000, 2 * self.domain_size))
        if not np.all(residual <= CG_TOL):
            # pragma: no cover - the design's Gram matrices are well conditioned
            warnings.warn(f"RAPPOR: the sparse solve stopped at a relative residual of "
                          f"{float(residual.max()):.3g} (target {CG_TOL:g})", RuntimeWarning,
                          stacklevel=5)
        return Z

    def _cg_solve(self, m: np.ndarray, b: np.ndarray) -> np.ndarray:
        """``G^{-1} b`` for a nonsingular ``G``: preconditioned conjugate gradients in one kernel.

        :func:`~fastldp._kernels._bloom.bloom_cg` with ``M = a I + c 1 1^T``,
        the Gram matrix of random filters (``G``'s mean diagonal entry
        ``a + c`` and mean off-diagonal entry ``c``, from ``trace G`` and
        ``1^T G 1``, both sums over the design's row lengths; ``M^{-1}`` by
        Sherman-Morrison in ``O(D)``): it removes
        ``G``'s one large eigenvalue (``~ c D``, the all-ones direction), ten
        fewer products at the benchmark's sizes (84 instead of 94 to a
        relative residual of ``1e-13``). It stops at a relative residual of
        :data:`CG_FIRST_TOL`, then checks the error
        ``||x - G^{-1} b||_2 <= ||r||_2 / lambda_min(G)`` (``r`` the true
        residual) against ``ERROR_TOL * max|x|``, with ``lambda_min(G) >=
        lambda_min(M) lambda_min(M^{-1} G)`` (``lambda_min(M) = min(a, a + c D)``) and
        ``lambda_min(M^{-1} G)`` estimated by the smallest Ritz value of the
        run's Lanczos tridiagonal, halved: a Ritz value is at least the
        eigenvalue it approaches, and at this residual the smallest has
        converged to well within a factor 2 (0.3% above the true eigenvalue at
        the benchmark's sizes). While the estimate is above the target the
        residual's correction is solved to the residual the target needs
        (at most three times). At the benchmark's sizes: 74 products and a
        true error of ``3e-12`` of the largest count (a 2-norm bound is
        loose for the largest entry's error by about ``sqrt(D)``).
        """
        from scipy.linalg import eigvalsh_tridiagonal

        (pos, ptr, cols), k, threads = self._bloom(), self.n_bits, self._product_threads()
        w = np.ascontiguousarray(m, dtype=np.float64)
        D = self.domain_size
        # trace G = sum_c m_c nnz(X_c) and 1^T G 1 = sum_c m_c ||X_c 1||^2, from the rows' lengths
        lengths = np.diff(ptr).reshape(self.n_cohorts, k).astype(np.float64)
        trace = float(w @ lengths.sum(axis=1))
        total = float(w @ (lengths * lengths).sum(axis=1))
        c = (total - trace) / (D * (D - 1)) if D > 1 else 0.0
        a = trace / D - c
        if not (a > 0 and a + c * D > 0):  # pragma: no cover - not a Gram matrix of filters
            a = c = 0.0
        maxiter = max(1000, 2 * D)
        b = np.ascontiguousarray(b, dtype=np.float64)
        x = np.zeros(D)
        r = b
        lam = None
        tol = CG_FIRST_TOL
        bound = np.inf
        for _ in range(4):  # the solve, then up to three corrections
            dx, iterations, alphas, betas = bloom_cg(pos, ptr, cols, k, w,
                                                     np.ascontiguousarray(r), a, c, tol,
                                                     maxiter, threads)
            x += dx
            r = b - bloom_gram_apply(pos, ptr, cols, k, w, x, threads)
            if lam is None and iterations > 1:  # the first run's Ritz value (the longest run)
                diag = 1.0 / alphas
                diag[1:] += betas[:-1] / alphas[:-1]
                off = np.sqrt(betas[:-1]) / alphas[:-1]
                theta = float(eigvalsh_tridiagonal(diag, off, select="i",
                                                   select_range=(0, 0))[0])
                lam = 0.5 * theta * (min(a, a + c * D) if a > 0 else 1.0)  # lambda_min(M)
            if lam is None or not (lam > 0):
                break
            norm_r = float(np.sqrt(r @ r))
            target = ERROR_TOL * float(np.abs(x).max(initial=0.0)) * lam  # on ||r||
            bound = norm_r / lam
            if norm_r <= target:
                return x
            # the correction's own relative residual: the target with a factor 2 to spare
            tol = 0.5 * target / norm_r
        largest = float(np.abs(x).max(initial=0.0))
        if not np.all(np.isfinite(x)) or not (bound <= ERROR_TOL * largest):
            norm = float(np.sqrt(b @ b))
            rel = float(np.sqrt(r @ r)) / norm if norm > 0 else 0.0
            if rel > CG_FIRST_TOL:
                warnings.warn(f"RAPPOR: the sparse solve stopped at a relative residual of "
                              f"{rel:.3g} (target {CG_FIRST_TOL:g})", RuntimeWarning,
                              stacklevel=6)
        return x

    def _nonnegative_sparse(self, m: np.ndarray, h: np.ndarray) -> np.ndarray:
        """``argmin_{f >= 0} f^T G f - 2 f^T h`` on the sparse design (``nonnegative=True``).

        The primal-dual active-set method of Hintermueller, Ito and Kunisch
        (2003): with ``A`` the candidates held at zero and ``F`` the others,
        solve ``G_FF f_F = h_F`` (conjugate gradients on the masked sparse
        operator, warm-started from the previous ``f``), set
        ``mu = G f - h``, and move a candidate of ``F`` with ``f_v < 0`` to
        ``A`` and one of ``A`` with ``mu_v < 0`` to ``F`` (both beyond a margin
        of ``1e3`` times the solves' tolerance, so that a weakly active bound
        does not flip back and forth); when no candidate moves, ``f_F >= 0``
        and ``mu_A >= 0`` up to that margin (``f_F`` is clipped at zero):
        the KKT conditions of the problem, whose solution is unique (``G``
        positive definite), so it is the dense path's NNLS solution. It
        starts from the unconstrained solution's negative entries and takes
        a few rounds at the benchmark's sizes. A cached factorization, or a
        ``G`` singular by the design's structure, decodes by the dense NNLS
        instead (``D <= MAX_DENSE_CANDIDATES``; above it a singular ``G`` is
        refused).
        """
        D = self.domain_size
        key = np.ascontiguousarray(m, dtype=np.float64).tobytes()
        cached = key in self._factors or _FACTORS.get(self._design_key() + (key,)) is not None
        if cached or self._structurally_singular(m):
            if D > MAX_DENSE_CANDIDATES:
                raise ValueError(
                    f"RAPPOR: the least-squares design is singular ({D} candidates, "
                    f"n_cohorts * n_bits = {self.n_cohorts * self.n_bits} equations, or "
                    "candidates with the same Bloom filter in every cohort with reports): the "
                    "non-negative decode needs distinguishable candidates beyond "
                    f"{MAX_DENSE_CANDIDATES}")
            return self._factor(m).nonnegative(h)
        op = self._gram_operator(m)
        maxiter = max(1000, 2 * D)
        f = _conjugate_gradients(op, h[:, None], CG_TOL, maxiter)[0][:, 0]
        # moves need a margin above the solves' own error (a candidate whose bound is weakly
        # active, f_v = mu_v = 0 up to rounding, would otherwise flip back and forth)
        tol_f = 1e3 * CG_TOL * float(np.abs(f).max(initial=0.0))
        tol_mu = 1e3 * CG_TOL * float(np.abs(h).max(initial=0.0))
        held = f < -tol_f  # A: the candidates held at zero
        for _ in range(50):
            free = (~held).astype(np.float64)[:, None]
            f = np.where(held, 0.0, f)
            r = free[:, 0] * (h - op(f[:, None])[:, 0])  # the masked system's residual
            step = _conjugate_gradients(lambda V: free * op(free * V), r[:, None], CG_TOL,
                                        maxiter)[0][:, 0]
            f = f + step
            mu = op(f[:, None])[:, 0] - h
            moved = np.where(held, mu > -tol_mu, f < -tol_f)
            if np.array_equal(moved, held):
                return np.where(held, 0.0, np.maximum(f, 0.0))
            held = moved
        # pragma: no cover - the active sets cycled (not seen on RAPPOR's designs)
        if D <= MAX_DENSE_CANDIDATES:
            return self._factor(m).nonnegative(h)
        raise RuntimeError("RAPPOR: the non-negative decode's active sets did not settle")

    def candidate_variances(self, candidates: ArrayLike, cohort_sizes: ArrayLike) -> np.ndarray:
        """The exact variances of the least-squares counts of some candidates.

        The diagonal entries ``n^2 s^2 (G^{-1})_{vv}`` of the counts'
        covariance (module docstring) for the candidates asked for only,
        each by a solve ``G z = e_v`` (conjugate gradients on the sparse
        design, or the cached factorization): what a server that decodes
        with ``all_variances=False`` (no ``D x D`` factorization) reports
        beside the candidates it publishes. Equal to the entries of
        ``estimate(...).variances`` of an ``all_variances=True`` oracle.

        Parameters
        ----------
        candidates : array_like of int
            Indices in ``[0, domain_size)``.
        cohort_sizes : array_like of int, shape (n_cohorts,)
            The reports per cohort (``partial.sums["reports"].value()``, or
            ``numpy.bincount(oracle.cohorts(identities), minlength=n_cohorts)``).

        Returns
        -------
        float64 array, the shape of ``candidates``

        Raises
        ------
        ValueError
            A candidate out of range, cohort sizes of the wrong length or
            not finite and >= 0, or a singular ``G`` (the counts of some
            candidates are not identifiable: no variance).
        """
        owner = f"{type(self).__name__}.candidate_variances"
        D, C = self.domain_size, self.n_cohorts
        try:
            raw = np.asarray(candidates)
            cand = raw.astype(np.int64)
        except (TypeError, ValueError):
            raise param_error("candidates", owner, f"ints in [0, {D - 1}]", candidates,
                              TypeError) from None
        if raw.dtype.kind not in "iu" and not (raw.size == 0 or np.array_equal(raw, cand)):
            raise param_error("candidates", owner, f"ints in [0, {D - 1}]", candidates,
                              TypeError)
        bad = ~((cand >= 0) & (cand < D))
        if bad.any():
            raise param_error("candidates", owner, f"ints in [0, {D - 1}]",
                              int(cand.ravel()[np.flatnonzero(bad.ravel())[0]]))
        m = np.asarray(cohort_sizes, dtype=np.float64)
        if m.shape != (C,) or not np.all(m >= 0) or not np.all(np.isfinite(m)):
            raise param_error("cohort_sizes", owner,
                              f"{C} finite counts >= 0 (the reports per cohort)",
                              cohort_sizes)
        n = float(m.sum())
        if cand.size == 0 or n == 0:
            return np.zeros(cand.shape)
        if self._structurally_singular(m):
            raise ValueError(f"{owner}: G is singular at these cohort sizes (fewer equations "
                             "than candidates, or candidates with the same filter in every "
                             "cohort with reports): the counts have no variance")
        flat = cand.ravel()
        out = np.empty(flat.shape[0])
        for a in range(0, flat.shape[0], 64):  # blocks of 64 right-hand sides
            v = flat[a:a + 64]
            E = np.zeros((D, v.shape[0]))
            E[v, np.arange(v.shape[0])] = 1.0
            Z = self._solve(m, E)
            # e_v^T G^{-1} e_v = 2 z_v - z^T G z up to a term quadratic in the residual
            GZ = self._gram_operator(m)(Z)
            out[a:a + 64] = 2.0 * Z[v, np.arange(v.shape[0])] - np.einsum("ij,ij->j", Z, GZ)
        p, q = (float(x[0]) for x in self._pq(np.array([self.epsilon])))
        s2 = p * q / (p - q) ** 2
        return (n * n * s2 * out).reshape(cand.shape)

    def gram(self, cohort_sizes: ArrayLike) -> np.ndarray:
        """``G = sum_c m_c X_c^T X_c`` for the given cohort sizes (dense ``(D, D)``).

        Built from the design's compressed rows by
        :func:`~fastldp._kernels._cms.bloom_gram` (no dense ``X``): entry
        ``(u, v)`` sums ``m_c`` over the bits that ``u`` and ``v`` share in
        cohort ``c``; exact for integer cohort sizes.
        """
        X = self.design()
        w = np.repeat(np.asarray(cohort_sizes, dtype=np.float64), self.n_bits)
        return bloom_gram(X.indptr.astype(np.int64), X.indices.astype(np.int64),
                          np.ascontiguousarray(w), self.domain_size, self.n_threads)

    def _factor(self, m: np.ndarray) -> _Factor:
        key = np.ascontiguousarray(m, dtype=np.float64).tobytes()
        factor = self._factors.get(key)
        if factor is None:
            shared = self._design_key() + (key,)
            factor = _FACTORS.get(shared)
            if factor is None:
                factor = _Factor(lambda: self.gram(m))
                _FACTORS.put(shared, factor)
            if factor.rank < self.domain_size:
                warnings.warn(
                    f"RAPPOR: the least-squares design has rank {factor.rank} < "
                    f"{self.domain_size} candidates (n_cohorts * n_bits = "
                    f"{self.n_cohorts * self.n_bits} equations, or candidates with the same "
                    "Bloom filter in every cohort with reports): the minimum-norm solution "
                    "is returned, and combinations of candidates cannot be told apart",
                    RuntimeWarning, stacklevel=4)
            if len(self._factors) >= _CACHE:
                self._factors.pop(next(iter(self._factors)))
            self._factors[key] = factor
        return factor
