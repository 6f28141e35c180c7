"""Choosing a frequency oracle by its variance: :class:`AdaptiveOracle` and :func:`make_oracle`.

``make_oracle("auto", domain_size=D, epsilon=eps)`` builds the oracle whose
per-report variance ``sigma^2`` is the smallest at ``(D, eps)`` among
GRR, OUE, OLH, subset selection (SS) and BLH, each computed by the oracle
itself (its ``variances``, the formulas of each module docstring):

======  ==========================================================
GRR     ``(e + D - 2) / (e - 1)^2``
OUE     ``4 e / (e - 1)^2``
OLH     ``(1/g)(1 - 1/g) / (p - 1/g)^2``, ``g = round(e) + 1``,
        ``p = e / (e + g - 1)``
SS      ``(a (k - 1) + M)(a k + M) / (a^2 k (D - k))`` at the best
        ``k`` (:func:`~fastldp.oracles.subset.optimal_subset_size`)
BLH     ``((e + 1) / (e - 1))^2``
======  ==========================================================

with ``e = e^eps``, ``a = e - 1``, ``M = D - 1``. ``sigma^2`` is the
variance of one report's estimate ``c_i(v)`` at a symbol the user does not
hold: the count of ``v`` has variance ``n sigma^2`` when few users hold
``v`` (every symbol but a few, on a large domain), which is the comparison
of Wang et al. (2017) and the source of the rule of thumb "GRR when
``D < 3 e^eps + 2``" (GRR's against OUE's formula). The variance at the
held symbol adds ``n_v (held - sigma^2)`` to the count of a symbol ``n_v``
users hold; it is not part of the choice.

Ties (variances within a relative ``1e-9``, e.g. SS with ``k = 1``, which
is GRR, or OLH when ``e^eps`` is an integer, which is OUE's variance) go to
the first of GRR, OUE, SS, OLH, BLH: the smaller report or the cheaper
server. OLH is never below OUE (``g = e^eps + 1`` is its real optimum, where
it equals OUE) and BLH never below OLH; SS is below OUE on any finite domain
and equals GRR where its best ``k`` is 1, so with every candidate the choice
is GRR or SS.

References
----------
.. [1] T. Wang, J. Blocki, N. Li, S. Jha, "Locally differentially private
   protocols for frequency estimation", USENIX Security 2017 (the variances
   of GRR, OUE, OLH and BLH, and the rule of thumb).
.. [2] M. Ye, A. Barg, "Optimal schemes for discrete distribution estimation
   under locally differential privacy", IEEE Transactions on Information
   Theory 64(8), 2018 (subset selection).
"""

from __future__ import annotations

from typing import Any, Iterable, Optional

import numpy as np
from numpy.typing import ArrayLike

from .._sanitize import SanitizationReport
from .._validation import check_float, param_error
from ..streaming import ExactSum
from ._base import EPSILON_MAX, FrequencyOracle
from .frequency import FREQUENCY_ORACLES

__all__ = ["AdaptiveOracle", "make_oracle", "oracle_variances", "choose_oracle", "CANDIDATES"]

#: the oracles :class:`AdaptiveOracle` chooses among, in the order that breaks ties
CANDIDATES = ("grr", "oue", "ss", "olh", "blh")
#: variances within this relative difference are a tie
TIE_RTOL = 1e-9


def _candidates(candidates: Optional[Iterable[str]], owner: str) -> tuple:
    """``candidates`` in the order of :data:`CANDIDATES`; a ValueError names a bad one."""
    if candidates is None:
        return CANDIDATES
    expected = f"a non-empty collection of names among {', '.join(map(repr, CANDIDATES))}"
    if isinstance(candidates, str):
        raise param_error("candidates", owner, expected, candidates, TypeError)
    try:
        given = list(candidates)
    except TypeError:
        raise param_error("candidates", owner, expected, candidates, TypeError) from None
    bad = [c for c in given if c not in CANDIDATES]
    if bad or not given:
        raise param_error("candidates", owner, expected, bad[0] if bad else given)
    return tuple(c for c in CANDIDATES if c in given)


def oracle_variances(domain_size: int, epsilon: float,
                     candidates: Optional[Iterable[str]] = None) -> dict[str, float]:
    """The per-report variance ``sigma^2`` of every candidate oracle at ``(D, epsilon)``.

    Each value is the oracle's own ``variances(epsilon)`` (``inf`` where
    its estimator is not defined in double precision).

    Parameters
    ----------
    domain_size : int >= 2
    epsilon : float in (0, 700]
    candidates : collection of str, optional
        Among :data:`CANDIDATES` (default: all of them).

    Returns
    -------
    dict
        ``{name: sigma^2}`` in the order of :data:`CANDIDATES`.

    Examples
    --------
    >>> var = oracle_variances(16, 1.0)
    >>> list(var)
    ['grr', 'oue', 'ss', 'olh', 'blh']
    >>> round(var["oue"], 4), round(4 * np.e / (np.e - 1) ** 2, 4)
    (3.6827, 3.6827)
    """
    names = _candidates(candidates, "oracle_variances")
    eps = np.array([check_float(epsilon, "epsilon", "oracle_variances", low=0.0,
                                high=EPSILON_MAX, high_open=False)])
    out = {}
    for name in names:
        # epsilon=None: no budget check at construction; the variance is read, not enforced
        oracle = FREQUENCY_ORACLES[name](domain_size=domain_size, epsilon=None, codebook_seed=0,
                                         n_threads=1)
        with np.errstate(all="ignore"):
            v = float(np.asarray(oracle.variances(eps), dtype=np.float64)[0])
        out[name] = v if (np.isfinite(v) and v > 0) else float("inf")
    return out


def choose_oracle(domain_size: int, epsilon: float,
                  candidates: Optional[Iterable[str]] = None) -> str:
    """The name of the candidate of smallest ``sigma^2`` (ties: the first of :data:`CANDIDATES`).

    Examples
    --------
    >>> choose_oracle(4, 2.0), choose_oracle(1024, 1.0), choose_oracle(1024, 1.0, ["oue", "olh"])
    ('grr', 'ss', 'oue')
    """
    var = oracle_variances(domain_size, epsilon, candidates)
    best = min(var.values())
    if not np.isfinite(best):
        raise param_error("epsilon", "choose_oracle",
                          "large enough that some candidate's estimator is defined in double "
                          "precision", epsilon)
    return next(name for name, v in var.items() if v <= best * (1 + TIE_RTOL))


class AdaptiveOracle(FrequencyOracle):
    """The frequency oracle of smallest variance at ``(domain_size, epsilon)``, chosen and used.

    Builds :func:`choose_oracle`'s pick among GRR, OUE, subset selection,
    OLH and BLH (module docstring) and behaves as that oracle: the same
    reports, estimates, sanitization, partials and variances, bit for bit.
    What it chose is :attr:`chosen` (a name of
    :data:`~fastldp.oracles.FREQUENCY_ORACLES`), :attr:`oracle` (the
    oracle itself) and the repr.

    Parameters
    ----------
    domain_size : int >= 2, optional
        Defaults to ``len(categories)``.
    epsilon : float in (0, 700]
        The budget the choice is made for, and the default budget of every
        report (personal budgets are then decoded by the chosen oracle).
    candidates : collection of str, optional
        Restrict the choice (names among ``'grr', 'oue', 'ss', 'olh',
        'blh'``); default all of them.
    categories : list of labels or a pandas Categorical, optional
        Labels of the symbols (:class:`~fastldp.oracles.FrequencyOracle`).
    codebook_seed : int or None
        The chosen oracle's codebook seed.
    n_threads : int or None

    Notes
    -----
    A partial of an ``AdaptiveOracle`` is bound to its own
    :meth:`stream_params` (``domain_size``, ``epsilon``, ``codebook_seed``,
    and ``candidates`` when not the default), which rebuild the same choice:
    a report file written by one is decoded by
    ``AdaptiveOracle(**params)``. Its numbers are those of the chosen
    oracle's partial over the same reports.

    The choice with every candidate, by domain size ``D`` (rows) and
    budget ``eps`` (columns):

    ======  ====  ====  ====  ====  ====  ====  ====
    D       0.5   1     2     3     4     6     8
    ======  ====  ====  ====  ====  ====  ====  ====
    2       GRR   GRR   GRR   GRR   GRR   GRR   GRR
    4       GRR   GRR   GRR   GRR   GRR   GRR   GRR
    8       SS    SS    GRR   GRR   GRR   GRR   GRR
    16      SS    SS    SS    GRR   GRR   GRR   GRR
    64      SS    SS    SS    SS    GRR   GRR   GRR
    256     SS    SS    SS    SS    SS    GRR   GRR
    1024    SS    SS    SS    SS    SS    SS    GRR
    4096    SS    SS    SS    SS    SS    SS    GRR
    ======  ====  ====  ====  ====  ====  ====  ====

    Without SS (``candidates=("grr", "oue", "olh", "blh")``) the choice is
    GRR exactly where ``D < 3 e^eps + 2`` and OUE elsewhere.

    Examples
    --------
    >>> import numpy as np
    >>> auto = AdaptiveOracle(domain_size=1000, epsilon=1.0, codebook_seed=0)
    >>> auto.chosen, type(auto.oracle).__name__
    ('ss', 'SubsetSelection')
    >>> auto
    AdaptiveOracle(domain_size=1000, epsilon=1.0, codebook_seed=0)  # chose SubsetSelection
    >>> AdaptiveOracle(domain_size=4, epsilon=2.0, codebook_seed=0).chosen
    'grr'
    >>> y = auto.privatize(np.arange(10_000) % 1000, rng=1)
    >>> bool((auto.estimate(y).counts == auto.oracle.estimate(y).counts).all())
    True
    """

    name = "auto"

    def __init__(self, *, domain_size: Optional[int] = None, epsilon: float,
                 candidates: Optional[Iterable[str]] = None, categories: Any = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None) -> None:
        owner = type(self).__name__
        if epsilon is None:
            raise param_error("epsilon", owner,
                              f"a float in (0, {EPSILON_MAX!r}] (the choice depends on it)",
                              epsilon, TypeError)
        self.candidates = _candidates(candidates, owner)
        super().__init__(domain_size=domain_size, epsilon=epsilon, categories=categories,
                         codebook_seed=codebook_seed, n_threads=n_threads)

    def _setup(self) -> None:
        assert self.epsilon is not None  # the constructor refuses None
        var = oracle_variances(self.domain_size, self.epsilon, self.candidates)
        best = min(var.values())
        if not np.isfinite(best):
            raise param_error("epsilon", type(self).__name__,
                              "large enough that some candidate's estimator is defined in "
                              "double precision", self.epsilon)
        #: the name of the chosen oracle (a key of FREQUENCY_ORACLES)
        self.chosen: str = next(name for name, v in var.items() if v <= best * (1 + TIE_RTOL))
        #: the per-report variance of every candidate at the constructor's epsilon
        self.candidate_variances: dict[str, float] = var
        #: the chosen oracle, with this oracle's parameters
        self.oracle: FrequencyOracle = FREQUENCY_ORACLES[self.chosen](
            domain_size=self.domain_size, epsilon=self.epsilon, categories=self.categories,
            codebook_seed=self.codebook_seed, n_threads=self.n_threads)

    def _stream_extra(self) -> dict:
        if self.candidates == CANDIDATES:
            return {}
        return {"candidates": list(self.candidates)}

    def _repr_extra(self) -> str:
        return "" if self.candidates == CANDIDATES else f", candidates={list(self.candidates)}"

    def __repr__(self) -> str:
        return f"{super().__repr__()}  # chose {type(self.oracle).__name__}"

    def __getattr__(self, name: str) -> Any:
        # what only the chosen oracle has (n_bytes, buckets, subset_sizes, hash ...)
        if name.startswith("__") or name == "oracle":
            raise AttributeError(name)
        try:
            oracle = self.__dict__["oracle"]
        except KeyError:
            raise AttributeError(name) from None
        return getattr(oracle, name)

    # ------------------------------------------------------------ the chosen oracle's law
    @property
    def uses_identities(self) -> bool:  # type: ignore[override]
        """Whether the identities key a public hash (OLH, BLH)."""
        return self.oracle.uses_identities

    def output_sizes(self, eps: np.ndarray) -> np.ndarray:
        return self.oracle.output_sizes(eps)

    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        """The chosen oracle's :meth:`~fastldp.oracles.FrequencyOracle.perturb`."""
        return self.oracle.perturb(values, eps, identities, rng)

    def variances(self, eps: np.ndarray) -> np.ndarray:
        return self.oracle.variances(eps)

    def held_variances(self, eps: np.ndarray) -> np.ndarray:
        return self.oracle.held_variances(eps)

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """The chosen oracle's exact law ``P[x, y]``."""
        return self.oracle.channel(eps, identity)  # type: ignore[attr-defined]

    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        return self.oracle.sanitize(reports, eps, identities, owner)

    def weighted_sums(self, clean: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                      lam: np.ndarray) -> tuple[ExactSum, ExactSum]:
        return self.oracle.weighted_sums(clean, eps, identities, lam)

    def weighted_counts(self, support: ExactSum, offset: ExactSum) -> np.ndarray:
        return self.oracle.weighted_counts(support, offset)

    def _stat_size(self) -> int:
        return self.oracle._stat_size()

    def _hits(self, clean, identities):
        return self.oracle._hits(clean, identities)

    def _counts_from_hits(self, hits, n):
        return self.oracle._counts_from_hits(hits, n)

    def _report_terms(self, eps, lam):
        return self.oracle._report_terms(eps, lam)

    def _fast_hits(self, reports, n, identities, owner):
        return self.oracle._fast_hits(reports, n, identities, owner)

    def _legal_as_is(self, reports, n):
        return self.oracle._legal_as_is(reports, n)

    def _n_reports(self, reports, owner):
        return self.oracle._n_reports(reports, owner)

    def _count_channel(self, eps, statistic):
        """The chosen oracle's law of its statistic (what IBU runs on)."""
        return self.oracle._count_channel(eps, statistic)


def make_oracle(name: str, **params: Any) -> FrequencyOracle:
    """Build a frequency oracle by name; ``"auto"`` is :class:`AdaptiveOracle`.

    Parameters
    ----------
    name : str
        A key of :data:`~fastldp.oracles.FREQUENCY_ORACLES` (``'grr'``,
        ``'olh'``, ``'flh'``, ``'hr'``, ``'oue'``, ``'sue'``, ``'ss'``,
        ``'blh'``, ...), case-insensitive, or ``'auto'``.
    **params
        The oracle's keyword arguments (``domain_size``, ``epsilon``,
        ``codebook_seed`` ...).

    Returns
    -------
    FrequencyOracle

    Examples
    --------
    >>> make_oracle("auto", domain_size=4, epsilon=2.0, codebook_seed=1).chosen
    'grr'
    >>> make_oracle("OUE", domain_size=10, epsilon=1.0, codebook_seed=1)
    OUE(domain_size=10, epsilon=1.0, codebook_seed=1)
    """
    names = ("auto",) + tuple(FREQUENCY_ORACLES)
    key = name.lower() if isinstance(name, str) else name
    if key not in names:
        raise param_error("name", "make_oracle", "one of " + ", ".join(map(repr, names)), name)
    if key == "auto":
        return AdaptiveOracle(**params)
    return FREQUENCY_ORACLES[key](**params)
