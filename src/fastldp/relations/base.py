"""What every relation-set mechanism shares: parameters, parsing, linear decoding.

A *relation mechanism* privatizes each identity's relation set (at most
``k`` pairs of a ``d1 x d2`` table) at the identity's own budget, and its
server side is *linear*: after sanitization, an unbiased estimate of the
population matrix over any set ``J`` of identities is a weighted sum of
per-report contributions (:meth:`linear_estimate`). Decoders
(:mod:`fastldp.relations.decoders`) and attacks (:mod:`fastldp.relations.attacks`)
work through this interface only, so every mechanism x decoder x attack
combination is one call.
"""

from __future__ import annotations

import functools
import warnings
from math import inf
from typing import Any, Callable, Optional, Sequence, TypeVar, Union

import numpy as np
from numpy.typing import ArrayLike

from .._random import resolve_codebook_seed, resolve_identities, resolve_n_threads
from .._validation import (check_choice, check_float, check_int, check_positive_array,
                           param_error, resolve_alias)
from .._sanitize import SanitizationReport
from ._privacy import privacy_of_budgets, privacy_of_extremes
from ._protocol import RelationProtocol
from .decoders import decode as _decode
from .relation_sets import CAP_POLICIES, RelationSets, as_relation_sets, is_long_format

__all__ = ["RelationMechanism", "MAX_PAIRS", "MIN_EPSILON", "resolve_alias", "keyword_epsilons",
           "privacy_of_budgets", "privacy_of_extremes", "RelationsLike", "RngLike"]

#: What ``relations`` may be: a scipy.sparse matrix ``(n, d1*d2)``, a sequence
#: of ``(m_i, 2)`` pair arrays, a long-format table (a tuple of three arrays, a
#: pandas DataFrame, a pyarrow Table, a dict of arrays, a Parquet path) or
#: :class:`~fastldp.relations.RelationSets` (see :meth:`RelationMechanism.relation_sets`).
RelationsLike = Any
#: What ``rng`` may be: ``None`` (OS entropy), an int, a SeedSequence or a Generator.
RngLike = Union[None, int, np.random.SeedSequence, np.random.Generator]

_F = TypeVar("_F", bound=Callable[..., Any])

#: Pairs are encoded as ``row * d2 + col`` in int64: ``d1 * d2`` must stay below this.
MAX_PAIRS = 2**62
#: The smallest budget accepted. Below it ``gamma^2 = tanh(eps / 2)^2`` leaves the
#: normal range of binary64 and the decoders' denominators (``D = sum gamma_i^2``
#: for JPRS, the oracles' ``1 / sigma_i^2`` weights) underflow.
MIN_EPSILON = 1e-150


def keyword_epsilons(method: _F) -> _F:
    """Let ``method(data, epsilons)`` keep working for one release, with a DeprecationWarning.

    Before the API contract, the relation mechanisms took their budgets as
    a required second positional argument; the contract makes ``epsilons``
    keyword-only and optional. The wrapper moves one extra positional
    argument to ``epsilons=`` and warns; the signature that
    :func:`inspect.signature` and the documentation show is the method's own.
    """
    name = method.__name__

    @functools.wraps(method)
    def wrapper(self, *args, **kwargs):
        if len(args) > 1:
            owner = f"{type(self).__name__}.{name}"
            if len(args) > 2 or "epsilons" in kwargs:
                raise TypeError(f"{owner}() takes one positional argument, the data, and "
                                "keyword arguments (epsilons=, identities=, ...)")
            warnings.warn(
                f"Passing the budgets positionally to {owner}(data, epsilons) is deprecated "
                f"and will stop working in the next release: call {owner}(data, "
                "epsilons=...) instead, or build the mechanism with epsilon=... and omit them.",
                DeprecationWarning, stacklevel=2)
            kwargs["epsilons"] = args[1]
            args = args[:1]
        return method(self, *args, **kwargs)

    return wrapper  # type: ignore[return-value]


class RelationMechanism(RelationProtocol):
    """Base class: validated ``shape``, ``k``, ``s``, ``epsilon``, codebook seed, threads.

    ``k`` and ``s`` are the paper's letters; ``items_per_user`` and
    ``sparsity`` are the same parameters under the names every family
    shares (pass one name of each). ``epsilon`` is the budget of every
    identity where a call passes no ``epsilons`` (``None``: every call must).

    Examples
    --------
    >>> import fastldp
    >>> from fastldp.relations import RelationMechanism
    >>> mech = fastldp.JPRS(shape=(4, 5), items_per_user=3, sparsity=6)
    >>> isinstance(mech, RelationMechanism), mech.k, mech.s, mech.p
    (True, 3, 6, 20)
    """

    #: short name used in results tables
    family = "mechanism"
    #: which ``s`` coordinates the final projection keeps (see :mod:`.projection`)
    support_rule = "raw"

    def __init__(self, *, shape: Sequence[int], k: Optional[int] = None,
                 s: Optional[int] = None, items_per_user: Optional[int] = None,
                 sparsity: Optional[int] = None, epsilon: Optional[float] = None,
                 codebook_seed: Optional[int] = None, cap_policy: str = "raise",
                 n_threads: Optional[int] = None) -> None:
        owner = type(self).__name__
        k = resolve_alias(owner, "k", k, "items_per_user", items_per_user)
        s = resolve_alias(owner, "s", s, "sparsity", sparsity)
        if not (isinstance(shape, (tuple, list)) and len(shape) == 2):
            raise param_error("shape", owner, "a pair (d1, d2) of ints >= 1", shape, TypeError)
        d1 = check_int(shape[0], "shape[0]", owner, low=1)
        d2 = check_int(shape[1], "shape[1]", owner, low=1)
        if d1 * d2 >= MAX_PAIRS:
            # pairs are encoded as row * d2 + col in int64 (and hashed in blocks of 256)
            raise param_error("shape", owner, f"a pair (d1, d2) with d1 * d2 < 2**62",
                              f"{(d1, d2)} (d1 * d2 = {d1 * d2})")
        self.shape = (d1, d2)
        self.p = d1 * d2
        self.k = check_int(k, "k", owner, low=1)
        self.s = check_int(s, "s", owner, low=1, high=self.p)
        # the budget used where a call passes no epsilons (None: every call must)
        self.epsilon: Optional[float] = (
            None if epsilon is None
            else check_float(epsilon, "epsilon", owner, low=MIN_EPSILON, low_open=False, high=inf))
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.cap_policy = check_choice(cap_policy, "cap_policy", owner, CAP_POLICIES)
        self.n_threads = resolve_n_threads(n_threads, owner)

    @property
    def items_per_user(self) -> int:
        """The public cap ``k`` on the pairs one identity holds (the contract's name)."""
        return self.k

    @property
    def sparsity(self) -> int:
        """``s``, the number of nonzeros the estimate keeps (the contract's name)."""
        return self.s

    def _repr_extra(self) -> str:
        return ""

    def __repr__(self) -> str:
        rule = "" if self.support_rule == "raw" else f", support_rule={self.support_rule!r}"
        eps = "" if self.epsilon is None else f", epsilon={self.epsilon!r}"
        return (
            f"{type(self).__name__}(shape={self.shape}, k={self.k}, s={self.s}{eps}"
            f"{self._repr_extra()}{rule}, codebook_seed={self.codebook_seed}, "
            f"cap_policy={self.cap_policy!r})"
        )

    # ------------------------------------------------------------ helpers
    def _budgets(self, epsilons, n: int, owner: Optional[str] = None) -> np.ndarray:
        """The ``n`` budgets of a call: ``epsilons``, else the constructor's ``epsilon``."""
        owner = owner or type(self).__name__
        if epsilons is None:
            if self.epsilon is None:
                raise param_error(
                    "epsilons", owner,
                    "a float or an array of floats in (0, inf) (this mechanism was built "
                    "without epsilon=, so every call must pass its budgets)", None)
            epsilons = self.epsilon
        eps = check_positive_array(epsilons, "epsilons", owner, size=n)
        if eps.size and eps.min() < MIN_EPSILON:
            i = int(np.argmin(eps))
            raise ValueError(
                f"The 'epsilons' parameter of {owner} must contain only floats in "
                f"[{MIN_EPSILON!r}, inf): below it the estimator's denominators underflow. "
                f"Got {float(eps[i])!r} at index {i} instead."
            )
        return eps

    def relation_sets(self, relations: RelationsLike, *,
                      identities: Optional[ArrayLike] = None) -> RelationSets:
        """Validate ``relations`` and return them in CSR form (see :class:`RelationSets`).

        ``relations`` is a sparse matrix ``(n, d1*d2)``, a sequence of ``n``
        ``(m_i, 2)`` pair arrays, or the long format (see
        :mod:`fastldp.relations.relation_sets`): a tuple of three 1-d arrays
        ``(identity, row, col)``, a pandas DataFrame / pyarrow Table / dict of
        arrays with those columns, or the path of a Parquet file with them.
        The long format's sets are its distinct identities in ascending order
        (they become :attr:`RelationSets.identities`), or, when
        ``identities`` is given, that population in that order.
        """
        owner = type(self).__name__
        if isinstance(relations, RelationSets):
            if relations.identities is not None and identities is not None:
                ids = resolve_identities(identities, relations.n, owner)
                if not np.array_equal(ids, relations.identities):
                    raise param_error("identities", owner,
                                      "the identities the relation sets were built with",
                                      identities)
            return relations
        if is_long_format(relations):
            return as_relation_sets(
                relations, shape=self.shape, k=self.k, owner=owner,
                cap_policy=self.cap_policy, seed=self.codebook_seed, identities=identities,
            )
        if hasattr(relations, "shape") and len(relations.shape) == 0:
            raise param_error("relations", owner,
                              "a sparse matrix (n, d1*d2), a sequence of (m, 2) pair arrays "
                              "or a long-format (identity, row, col) table",
                              relations, TypeError)
        n = relations.shape[0] if hasattr(relations, "shape") else len(relations)
        ids = resolve_identities(identities, n, owner)
        return as_relation_sets(
            relations, shape=self.shape, k=self.k, owner=owner,
            cap_policy=self.cap_policy, seed=self.codebook_seed, identities=ids,
        )

    def _client_identities(self, sets: RelationSets, identities) -> np.ndarray:
        """The uint64 identities of ``sets``: their own (long format), else the caller's."""
        if sets.identities is not None:
            return sets.identities
        return resolve_identities(identities, sets.n, type(self).__name__)

    def _server_inputs(self, reports, epsilons, identities, owner):
        """Return (n, eps, identities) after checking the report count."""
        n = self._report_count(reports, owner)
        eps = self._budgets(epsilons, n, owner)
        ids = resolve_identities(identities, n, owner)
        return n, eps, ids

    @staticmethod
    def _report_count(reports, owner) -> int:
        """The number of packets, or a clear error for a non-1-d input."""
        try:
            shape = np.shape(reports)
        except ValueError:
            shape = ("ragged",)
        if len(shape) != 1 or not isinstance(shape[0], int) or shape[0] < 1:
            raise ValueError(
                f"The 'reports' parameter of {owner} must be a non-empty 1-d array of packets. "
                f"Got shape {shape} instead."
            )
        return shape[0]

    def decode(self, reports: ArrayLike, epsilons: Optional[ArrayLike] = None, *,
               decoders: Union[str, tuple, list] = ("global",), n_groups: int = 8,
               identities: Optional[ArrayLike] = None,
               support_rule: Optional[str] = None) -> dict:
        """Run one or several decoders on one set of reports.

        See :func:`fastldp.relations.decoders.decode`; ``epsilons`` defaults
        to the constructor's ``epsilon``, and ``support_rule`` (default: the
        mechanism's) picks the projection's support.
        """
        return _decode(self, reports, epsilons, decoders=decoders, n_groups=n_groups,
                       identities=identities, support_rule=support_rule)

    # ------------------------------------------------------------ interface
    def payload_bits(self, epsilons: ArrayLike) -> np.ndarray:  # pragma: no cover - abstract
        """Private payload of each identity's report, in bits."""
        raise NotImplementedError

    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:  # pragma: no cover - abstract
        """Project received reports to legal outputs; return them and a report."""
        raise NotImplementedError

    def linear_estimate(self, clean: np.ndarray, eps: np.ndarray, identities: np.ndarray,
                        members: Optional[np.ndarray] = None) -> np.ndarray:  # pragma: no cover
        """Unbiased estimate (length p) from the sanitized reports of ``members``."""
        raise NotImplementedError

    def best_response(self, eps: np.ndarray, corrupted: np.ndarray, identities: np.ndarray,
                      items: ArrayLike, item_weights: ArrayLike,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:  # pragma: no cover
        """Legal outputs of the corrupted identities maximizing the linear objective."""
        raise NotImplementedError

    def random_response(self, eps: np.ndarray, corrupted: np.ndarray, identities: np.ndarray,
                        rng: np.random.Generator) -> np.ndarray:  # pragma: no cover
        """Uniformly random legal outputs of the corrupted identities."""
        raise NotImplementedError

    def response_objective(self, eps: np.ndarray, corrupted: np.ndarray, identities: np.ndarray,
                           outputs: ArrayLike, items: ArrayLike,
                           item_weights: ArrayLike) -> np.ndarray:  # pragma: no cover
        """Each corrupted output's contribution to ``sum_x w_x V(x)`` (global estimate)."""
        raise NotImplementedError
