"""The mean of numeric vectors by sampling dimensions (Wang et al., ICDE 2019), and splitting.

Every user holds ``x`` in ``[-1, 1]^d``. :class:`SampledMean` draws ``k``
of the ``d`` dimensions uniformly without replacement and reports each
through a scalar randomizer of :mod:`fastldp.oracles` (Hybrid, the paper's
choice and the default, Piecewise or Duchi) at ``epsilon / k``, with the
dimensions' indices; :class:`SplitMean`, the
baseline, reports every dimension at ``epsilon / d`` (``k = d``).

The report ``t_j = (d / k) y_j`` for a sampled ``j`` and ``0`` otherwise is
unbiased for ``x_j`` (Wang et al. 2019, Algorithm 4), so the server's mean
is ``(d / k) sum_i y_ij / n``; its variance is estimated from the same
reports, ``(sum t^2 - (sum t)^2 / n) / (n (n - 1))``. The sums are exact
(:class:`~fastldp.streaming.ExactSum`), so partials merge bit for bit.

References
----------
N. Wang, X. Xiao, Y. Yang, J. Zhao, S. C. Hui, H. Shin, J. Shin, G. Yu,
"Collecting and Analyzing Multidimensional Data with Local Differential
Privacy", ICDE 2019.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Optional

import numpy as np

from .._random import as_generator, resolve_identities
from .._sanitize import SanitizationReport
from .._validation import check_float, check_int, param_error
from ..oracles import Duchi, Piecewise
from ..oracles.randomizers import Hybrid
from ..protocol import FixedBudgetMembers, ReportSchema
from ..results import PrivacyStatement, Result
from ..streaming import ExactSum, Partial
from ._sanitizing import (MEAN_REASONS, partial_sanitization, public_uniforms, real_entries,
                          report_counts, report_rows, tally)

__all__ = ["SampledMean", "SplitMean", "MeanVectorEstimate", "RANDOMIZERS", "optimal_k"]

#: the scalar randomizers of :mod:`fastldp.oracles` a sampled dimension goes through
RANDOMIZERS = {"Hybrid": Hybrid, "Piecewise": Piecewise, "Duchi": Duchi}
#: the default randomizer: Wang et al. (2019) recommend Hybrid (worst-case variance at most
#: Piecewise's and Duchi's at every budget) for the sampled dimensions (their Algorithm 4)
DEFAULT_RANDOMIZER = "Hybrid"
#: uniform arrays the randomizers' ``_draw`` may read per value (Hybrid: Duchi's coin, the
#: mixture coin, Piecewise's two), the public replacements' budget of sanitize-stream words
_DRAWS_PER_VALUE = 4
MAX_DIMENSION = 1 << 20
EPSILON_MAX = 700.0
#: the public seed of the sanitize stream that repairs malformed mean reports (the classes
#: have no codebook seed: no public hash keys their reports otherwise)
SANITIZE_SEED = 0x6D65616E  # "mean"


class _PublicUniforms:
    """A stand-in for a Generator whose ``random`` returns given public uniforms in turn.

    It lets the scalar randomizer's own ``_draw`` turn public uniforms into
    an output, so a replaced value has exactly the randomizer's law at 0.
    """

    def __init__(self, *uniforms: np.ndarray) -> None:
        self._uniforms = list(uniforms)

    def random(self, shape) -> np.ndarray:
        return self._uniforms.pop(0).reshape(shape)


def _worst_variance(cls, d: int, k: int, eps: float) -> float:
    """``max_x Var[t_j]`` of one user's report of dimension ``j`` (``t_j = (d/k) y_j`` or 0)."""
    r = cls(epsilon=eps / k)
    x = np.linspace(-1.0, 1.0, 201)
    second = r.variance(x) + x**2  # E[y^2 | x]
    return float(np.max((d / k) * second - x**2))


def optimal_k(randomizer: str, dimension: int, epsilon: float) -> int:
    """The number of sampled dimensions of smallest worst-case variance.

    Minimizes ``max_x ((d / k) E[y^2 | x] - x^2)`` over ``k = 1 .. d``, with
    ``y`` the randomizer's output at ``epsilon / k``. For Piecewise this is
    the paper's ``k = max(1, min(d, floor(epsilon / 2.5)))`` (Wang et al.
    2019, Sec. IV-B) or the ``k`` next to it, where the two are near-ties
    (``epsilon = 6``: 3 here, 2 in the paper, worst-case variances 3.455 and
    3.479 at ``d = 6``). For Hybrid the paper uses the same formula; the
    minimum here is at it or one above (``epsilon = 7.5``: 4, the formula
    3), never worse than the formula's ``k`` (tests/test_multidim.py).

    Examples
    --------
    >>> optimal_k("Piecewise", 10, 1.0), optimal_k("Piecewise", 10, 5.0)
    (1, 2)
    """
    if randomizer not in RANDOMIZERS:
        raise param_error("randomizer", "optimal_k", f"one of {list(RANDOMIZERS)}", randomizer)
    d = check_int(dimension, "dimension", "optimal_k", low=1, high=MAX_DIMENSION)
    eps = check_float(epsilon, "epsilon", "optimal_k", low=0.0, high=EPSILON_MAX,
                      high_open=False)
    cls = RANDOMIZERS[randomizer]
    best, best_k = np.inf, 1
    # once eps / k < 1 the randomizers' variance grows like (k / eps)^2, so (d / k) times it
    # grows with k: no k above eps + 2 can beat the optimum near eps / 2.5
    for k in range(1, min(d, int(eps) + 2) + 1):
        v = _worst_variance(cls, d, k, eps)
        if v < best:
            best, best_k = v, k
    return best_k


@dataclass(frozen=True, repr=False)
class MeanVectorEstimate(Result):
    """Unbiased estimate of the mean vector, with the variance of every coordinate.

    ``sanitization`` counts the malformed reports, replaced as
    :meth:`SampledMean.sanitize` says.
    """

    _estimate_field = "mean"
    mean: np.ndarray
    variances: np.ndarray
    n: int
    privacy: PrivacyStatement
    sanitization: SanitizationReport


class SampledMean(FixedBudgetMembers):
    """The mean of vectors in ``[-1, 1]^d``: ``k`` sampled dimensions at ``epsilon / k`` each.

    Parameters
    ----------
    dimension : int >= 1
        ``d``.
    epsilon : float in (0, 700]
        The budget of a whole report (``k`` values at ``epsilon / k``; the
        sampled indices do not depend on the vector).
    randomizer : {"Hybrid", "Piecewise", "Duchi"}
        The scalar randomizer of :mod:`fastldp.oracles` of each sampled
        dimension; Hybrid (the default) is the paper's (Wang et al. 2019,
        Algorithm 4 with HM).
    k : int in [1, d] or None
        The number of sampled dimensions; ``None``: :func:`optimal_k`.

    Notes
    -----
    Reports: float64 ``(n, 2 k)``: the ``k`` sampled indices (integers, as
    floats), then their ``k`` randomized values.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.multidim import SampledMean
    >>> sm = SampledMean(dimension=6, epsilon=4.0)  # Hybrid at the optimal k
    >>> x = sm.example_data(20_000, np.random.default_rng(0))
    >>> est = sm.estimate(sm.privatize(x, rng=1))
    >>> bool(np.all(np.abs(est.mean - x.mean(axis=0)) < 5 * est.std))
    True
    """

    kind = "vector"
    labels = None

    def __init__(self, *, dimension: int, epsilon: float, randomizer: str = DEFAULT_RANDOMIZER,
                 k: Optional[int] = None) -> None:
        owner = type(self).__name__
        self.dimension = check_int(dimension, "dimension", owner, low=1, high=MAX_DIMENSION)
        self.epsilon = check_float(epsilon, "epsilon", owner, low=0.0, high=EPSILON_MAX,
                                   high_open=False)
        if randomizer not in RANDOMIZERS:
            raise param_error("randomizer", owner, f"one of {list(RANDOMIZERS)}", randomizer)
        self.randomizer = randomizer
        if k is None:
            k = optimal_k(randomizer, self.dimension, self.epsilon)
        self.k = check_int(k, "k", owner, low=1, high=self.dimension)
        self.scalar = RANDOMIZERS[randomizer](epsilon=self.epsilon / self.k)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dimension={self.dimension}, epsilon={self.epsilon!r}, "
                f"randomizer={self.randomizer!r}, k={self.k})")

    # ------------------------------------------------------------ protocol
    def stream_params(self) -> dict:
        """The public parameters that rebuild an equivalent server (JSON values)."""
        return {"dimension": self.dimension, "epsilon": self.epsilon,
                "randomizer": self.randomizer, "k": self.k}

    @property
    def report_schema(self) -> ReportSchema:
        """float64 ``(2 k,)`` reports, every one at ``epsilon``."""
        return ReportSchema(np.float64, (2 * self.k,), fixed_epsilon=self.epsilon)

    def example_data(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` vectors in ``[-1, 1]^d``: coordinate ``j`` uniform around ``(j / d) - 0.5``."""
        n = check_int(n, "n", f"{type(self).__name__}.example_data", low=0)
        centre = np.arange(self.dimension) / self.dimension - 0.5
        return np.clip(centre + rng.uniform(-0.5, 0.5, (n, self.dimension)), -1.0, 1.0)

    # ------------------------------------------------------------ client
    def privatize(self, data: Any, *, epsilons: Any = None, identities: Any = None,
                  rng: Any = None) -> np.ndarray:
        """Reports of ``n`` vectors (float ``(n, d)`` in ``[-1, 1]``): ``k`` indices, ``k`` values."""
        owner = f"{type(self).__name__}.privatize"
        self._check_epsilons(epsilons, owner)
        d = self.dimension
        expected = f"a float array of shape (n, {d}) with entries in [-1, 1]"
        try:
            x = np.asarray(data, dtype=np.float64)
        except (TypeError, ValueError):
            raise param_error("data", owner, expected, data, TypeError) from None
        if x.ndim != 2 or x.shape[1] != d:
            raise param_error("data", owner, expected, f"an array of shape {x.shape}")
        ok = np.abs(x) <= 1.0  # NaN fails
        if not ok.all():
            i, j = (int(v) for v in np.argwhere(~ok)[0])
            raise param_error("data", owner, expected, f"{x[i, j]!r} at row {i}, column {j}")
        n = x.shape[0]
        resolve_identities(identities, n, owner)  # checked; no public hash uses them
        gen = as_generator(rng, owner)
        if self.k == d:
            idx = np.broadcast_to(np.arange(d), (n, d))
        else:  # k of d without replacement: the k smallest of d uniform keys
            idx = np.argsort(gen.random((n, d)), axis=1)[:, :self.k]
        values = np.take_along_axis(x, idx, axis=1)
        y = self.scalar.privatize(values, rng=gen)
        return np.concatenate([idx.astype(np.float64), y], axis=1)

    # ------------------------------------------------------------ server
    def partial(self, reports: Any, epsilons: Any = None, identities: Any = None) -> Partial:
        """Exact sums of ``t`` and ``t^2`` per dimension over a chunk of reports.

        Malformed reports are replaced and counted (:meth:`sanitize`);
        ``identities`` (default ``0 .. n-1``, right only for a first chunk)
        key the public replacements.
        """
        owner = f"{type(self).__name__}.partial"
        self._check_epsilons(epsilons, owner)
        k, d = self.k, self.dimension
        expected = f"a float array of reports of shape (n, {2 * k}) from privatize"
        arr, wrong = report_rows(reports, 2 * k, owner, expected)
        ids = resolve_identities(identities, arr.shape[0], owner)
        clean, report = self.sanitize(arr, wrong, ids)
        idx, y = clean[:, :k], clean[:, k:]
        t = y * (d / k)
        s1, s2 = ExactSum(d), ExactSum(d)
        pos = idx.astype(np.int64).ravel()
        s1.add(t.ravel(), index=pos)
        s2.add((t * t).ravel(), index=pos)
        return Partial(type(self).__name__, self.stream_params(), sums={"t": s1, "t2": s2},
                       counts=report_counts(report), flags={"wrong_dtype": report.wrong_dtype})

    def sanitize(self, arr: np.ndarray, wrong: np.ndarray, ids: np.ndarray) -> tuple:
        """Legal reports from the rows ``arr``, and the count of what was replaced, by reason.

        A row whose indices are not ``k`` distinct integers in ``[0, d)``
        (or of another length, ``wrong``) is replaced whole by the report
        of the zero vector drawn with public randomness: ``k`` public
        uniform distinct dimensions and the randomizer's output at 0 for
        each. A row with good indices keeps them, and each value that is
        no legal output of the randomizer (non-numeric, NaN, infinite or
        outside its outputs) is replaced by the randomizer's output at 0
        drawn with public randomness. The public uniforms are the sanitize
        stream of :data:`SANITIZE_SEED` keyed by the identity, so the
        replacement is deterministic, legal and unbiased for 0 (it pulls no
        coordinate any way an attacker chose). A row counts once, under the
        first of ``wrong_width``, ``non_numeric``, ``non_finite``,
        ``bad_index``, ``illegal_value``.

        Returns
        -------
        clean : float64 array, shape (n, 2 k)
        report : SanitizationReport
        """
        k, d = self.k, self.dimension
        n = arr.shape[0]
        vals, non_numeric = real_entries(arr)
        finite = np.isfinite(vals) & ~non_numeric
        idx = np.where(finite[:, :k], vals[:, :k], -1.0)
        bad_idx = ~((idx >= 0) & (idx < d) & (np.floor(idx) == idx))
        index_bad = bad_idx.any(axis=1) | wrong
        if k > 1 and n:
            ordered = np.sort(np.where(bad_idx, -1.0, idx), axis=1)
            index_bad |= (ordered[:, 1:] == ordered[:, :-1]).any(axis=1)
        y = np.where(finite[:, k:], vals[:, k:], 0.0)
        value_bad = ~(finite[:, k:] & self.scalar.is_legal(y))
        redo = index_bad[:, None] | value_bad
        clean = np.concatenate([np.where(index_bad[:, None], 0.0, idx), y], axis=1)
        rows = np.flatnonzero(redo.any(axis=1))
        if rows.size:
            # k words per row to draw the dimensions, then k per uniform array the randomizer's
            # draw reads (the first arrays are the same words whatever the randomizer)
            u = public_uniforms(SANITIZE_SEED, ids[rows], (1 + _DRAWS_PER_VALUE) * k)
            whole = index_bad[rows]
            if whole.any():
                clean[rows[whole], :k] = self._public_dimensions(u[whole, :k])
            public: Any = _PublicUniforms(*(u[:, (1 + i) * k:(2 + i) * k]
                                            for i in range(_DRAWS_PER_VALUE)))
            draw = self.scalar._draw(np.zeros((rows.size, k)), public)
            block = clean[rows, k:]
            block[redo[rows]] = draw[redo[rows]]
            clean[rows, k:] = block
        masks = {"wrong_width": wrong, "non_numeric": non_numeric.any(axis=1),
                 "non_finite": ~(finite | non_numeric).all(axis=1), "bad_index": index_bad,
                 "illegal_value": value_bad.any(axis=1)}
        return clean, tally(n, masks, MEAN_REASONS, arr.dtype.kind not in "iuf")

    def _public_dimensions(self, u: np.ndarray) -> np.ndarray:
        """``k`` distinct dimensions per row from ``k`` uniforms (Floyd's sampling; all if k = d)."""
        k, d = self.k, self.dimension
        rows = u.shape[0]
        if k == d:
            return np.broadcast_to(np.arange(d, dtype=np.float64), (rows, d))
        chosen = np.empty((rows, k), dtype=np.int64)
        for t, top in enumerate(range(d - k, d)):
            r = np.minimum((u[:, t] * (top + 1)).astype(np.int64), top)  # uniform in [0, top]
            taken = (chosen[:, :t] == r[:, None]).any(axis=1)
            chosen[:, t] = np.where(taken, top, r)
        return chosen.astype(np.float64)

    def finalize(self, partial: Partial) -> MeanVectorEstimate:
        """The mean estimate ``sum t / n`` and its variance from a (merged) partial."""
        self._check_partial(partial, f"{type(self).__name__}.finalize")
        n = partial.counts["n"]
        s1, s2 = partial.sums["t"].value(), partial.sums["t2"].value()
        d = self.dimension
        report = partial_sanitization(partial)
        if n == 0:
            return MeanVectorEstimate(np.zeros(d), np.full(d, np.inf), 0, self.privacy(), report)
        mean = s1 / n
        variances = (np.maximum(s2 - s1 * s1 / n, 0.0) / (n * (n - 1)) if n > 1
                     else np.full(d, np.inf))
        return MeanVectorEstimate(mean, variances, n, self.privacy(), report)

    def estimate(self, reports: Any, *, epsilons: Any = None,
                 identities: Any = None) -> MeanVectorEstimate:
        """The unbiased mean vector: ``finalize(partial(...))`` exactly."""
        return self.finalize(self.partial(reports, epsilons, identities))


class SplitMean(SampledMean):
    """The budget-split baseline: every dimension through the randomizer at ``epsilon / d``.

    :class:`SampledMean` with ``k = d`` (no sampling); the same reports,
    estimator and variance.

    Examples
    --------
    >>> from fastldp.multidim import SplitMean
    >>> SplitMean(dimension=4, epsilon=2.0).k
    4
    """

    def __init__(self, *, dimension: int, epsilon: float,
                 randomizer: str = DEFAULT_RANDOMIZER) -> None:
        d = check_int(dimension, "dimension", type(self).__name__, low=1, high=MAX_DIMENSION)
        super().__init__(dimension=d, epsilon=epsilon, randomizer=randomizer, k=d)

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(dimension={self.dimension}, epsilon={self.epsilon!r}, "
                f"randomizer={self.randomizer!r})")

    def stream_params(self) -> dict:
        """``dimension``, ``epsilon``, ``randomizer`` (``k`` is ``dimension``)."""
        return {"dimension": self.dimension, "epsilon": self.epsilon,
                "randomizer": self.randomizer}
