"""Memoized two-round frequency oracles: L-GRR, L-OUE, L-OSUE, L-SUE and L-SOUE.

Every report of a value goes through two rounds of randomized response:

1. **permanent** (memoized): the first time an identity reports a value
   ``x``, it draws a permanent response ``B`` from a one-shot oracle at
   ``epsilon_inf`` (GRR, OUE or SUE: ``P(B = x) = p1``, ``q1`` for any
   other symbol or bit) and keeps it in its memo
   (:mod:`fastldp.longitudinal.memo`);
2. **instantaneous** (fresh each report): ``B`` is randomized again with
   ``(p2, q2)``: GRR over the ``D`` symbols for L-GRR; bit by bit for the
   unary protocols (a set bit stays set with probability ``p2``, a clear
   bit is set with probability ``q2``).

Composed, one report is a one-shot oracle with

    P = p1 p2 + (1 - p1) q2,        Q = q1 p2 + (1 - q1) q2,

(``P``: the report shows the user's symbol, or sets its bit; ``Q``: it
shows or sets any other one), and ``(p2, q2)`` are chosen so that the
report's largest likelihood ratio is exactly ``e^epsilon_1``
(Arcolezi et al. [1]_, section 4):

* **L-GRR** (GRR, then GRR): ``p1 = e^inf / (e^inf + D - 1)``,
  ``q1 = (1 - p1) / (D - 1)`` (``e^inf = e^epsilon_inf``), and the report's
  law is GRR with ``(P, Q)``, so its largest ratio is ``P / Q``. Solving
  ``P = e^eps_1 Q`` with ``p2 + (D - 1) q2 = 1``:

      p2 = b / ((D - 1) a + b),   q2 = a / ((D - 1) a + b),
      a = p1 - e^eps_1 q1,        b = e^eps_1 (1 - q1) - (1 - p1).

  The paper's formula (section 4.1 of [1]_, and multi-freq-ldpy's
  ``L_GRR``),
  ``p2 = (q1 - e^eps_1 p1) / (-p1 e^eps_1 + D q1 e^eps_1 - q1 e^eps_1 - p1 (D - 1) + q1)``,
  solves ``e^eps_1 = (p1 p2 + q1 q2) / (p1 q2 + q1 p2)`` instead: the
  composition of two *binary* randomized responses. Both agree for
  ``D = 2``; for ``D > 2`` the paper's ``(p2, q2)`` give one report a
  largest ratio below ``e^eps_1`` (``D = 6``, ``epsilon_inf = 2``,
  ``epsilon_1 = 1``: ``ln(P / Q) = 0.8216``), i.e. more noise than the
  budget asks for. ``LGRR(calibration="exact")`` (the default) spends
  exactly ``epsilon_1``; ``calibration="paper"`` uses the paper's formula,
  to reproduce its figures;
* **the unary protocols**: the first round is OUE (``p1 = 1/2``,
  ``q1 = 1 / (e^inf + 1)``) or SUE (``p1 = e^(inf/2) / (e^(inf/2) + 1)``,
  ``q1 = 1 - p1``), the second OUE-like (``p2 = 1/2``) or SUE-like
  (``q2 = 1 - p2``): L-OUE = OUE + OUE, L-OSUE = OUE + SUE, L-SUE = SUE +
  SUE (basic RAPPOR), L-SOUE = SUE + OUE. Two symbols differ in two bits,
  so the report's largest ratio is ``P (1 - Q) / (Q (1 - P))``, and the
  free parameter of the second round solves

      P (1 - Q) = e^eps_1 Q (1 - P),

  a quadratic in it; its root in ``(0, 1/2)`` (``q2``) or ``(1/2, 1)``
  (``p2``) is the paper's closed form (found here by bisection to the last
  bit, and checked against multi-freq-ldpy's closed forms by the tests).
  With ``p2 = 1/2`` (L-OUE, L-SOUE) the largest ratio reachable is the one at
  ``q2 = 0`` (:func:`epsilon_1_limit`: ``ln((2 e^inf + 1) / 3)`` after OUE,
  ``ln(h (2 h + 1) / (h + 2))``, ``h = e^(inf/2)``, after SUE): a larger
  ``epsilon_1`` is refused, as the paper's code refuses it.

Estimator and variance
----------------------
With ``C(v)`` the number of the ``n`` reports showing ``v`` (setting bit
``v``), the count estimate is (the paper's estimator, eq. 5 of [1]_, in counts)

    c(v) = (C(v) - n Q) / (P - Q),      P - Q = (p1 - q1)(p2 - q2),

unbiased for the number of identities holding ``v``. Reports of different
identities are independent (each one's permanent response is its own), so

    Var[c(v)] = (n Q (1 - Q) + c(v) (P (1 - P) - Q (1 - Q))) / (P - Q)^2,

whose first term, ``n Q (1 - Q) / ((p1 - q1)^2 (p2 - q2)^2)``, is the
paper's approximate variance (eq. 6 of [1]_, the variance at a symbol nobody
holds); the result reports the plug-in value, with ``c(v)`` replaced by the
estimate clipped to ``[0, n]``, as the one-shot oracles do. The counts of
one round are exact integer sums, so ``partial`` / ``merge`` / ``finalize``
are bit-identical to ``estimate`` for any split and merge order.

Privacy
-------
One report is ``epsilon_1``-LDP. Any number of reports of a value that
does not change are post-processing of one permanent response, so together
they are ``epsilon_inf``-LDP. A value that changes draws a permanent
response for each distinct value it takes: ``c`` distinct values cost at
most ``c epsilon_inf`` over the whole collection (a value that changes
``c`` times takes at most ``c + 1``), :meth:`LongitudinalPrivacy.over_time`.

References
----------
.. [1] H. H. Arcolezi, J.-F. Couchot, B. Al Bouna, X. Xiao, "Improving the
   utility of locally differentially private protocols for longitudinal and
   multidimensional frequency estimates", Digital Communications and
   Networks, 2022 (arXiv:2111.04636).
.. [2] U. Erlingsson, V. Pihur, A. Korolova, "RAPPOR: randomized aggregatable
   privacy-preserving ordinal response", CCS 2014 (memoization).
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import dataclass
from typing import Any, Optional, Union

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._unary import ue_counts, ue_perturb
from .._random import as_generator, resolve_codebook_seed, resolve_identities
from .._validation import (KeywordOnly, check_choice, check_float, check_int, param_error,
                           resolve_alias)
from ..oracles import GRR, OUE, SUE, FrequencyEstimate
from ..oracles._base import (EPSILON_MAX, MAX_DOMAIN_SIZE, RngLike, _Text, all_legal_report,
                             partial_report, report_counts)
from ..results import PrivacyStatement
from ..streaming import ExactSum, Partial, check_partial
from ._protocol import LongitudinalProtocol, statement_method
from .memo import MemoryMemo, MemoStore

__all__ = ["LongitudinalOracle", "LongitudinalPrivacy", "LGRR", "LOUE", "LOSUE", "LSUE",
           "LSOUE", "lgrr_parameters", "unary_parameters", "epsilon_1_limit"]

Memo = Union[MemoryMemo, MemoStore]


# ---------------------------------------------------------------------- parameters
def lgrr_parameters(domain_size: int, epsilon_inf: float, epsilon_1: float,
                    calibration: str = "exact") -> tuple[float, float, float, float]:
    """``(p1, q1, p2, q2)`` of L-GRR (module docstring; Arcolezi et al., section 4.1).

    ``calibration="exact"`` gives one report the largest ratio
    ``e^epsilon_1``; ``"paper"`` is the paper's formula (below it for
    ``D > 2``).

    Examples
    --------
    >>> p1, q1, p2, q2 = lgrr_parameters(4, 2.0, 1.0)
    >>> P, Q = p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2
    >>> round(float(np.log(P / Q)), 12)
    1.0
    """
    D = domain_size
    e_inf, e1 = math.exp(epsilon_inf), math.exp(epsilon_1)
    q1 = 1.0 / (e_inf + D - 1)
    p1 = e_inf * q1
    if calibration == "paper":
        p2 = (q1 - e1 * p1) / (-p1 * e1 + D * q1 * e1 - q1 * e1 - p1 * (D - 1) + q1)
        return p1, q1, p2, (1.0 - p2) / (D - 1)
    # P = e1 Q  <=>  p2 (p1 - e1 q1) = q2 (e1 (1 - q1) - (1 - p1)); a = p1 - e1 q1 written
    # as e1 q1 (e^(inf - eps_1) - 1) keeps its digits when epsilon_1 is close to epsilon_inf
    a = e1 * q1 * math.expm1(epsilon_inf - epsilon_1)
    b = e1 * (1.0 - q1) - (1.0 - p1)
    denom = (D - 1) * a + b
    return p1, q1, b / denom, a / denom


_FIRST = {"oue": lambda e: (0.5, 1.0 / (math.exp(e) + 1.0)),
          "sue": lambda e: (1.0 - 1.0 / (math.exp(e / 2.0) + 1.0),
                            1.0 / (math.exp(e / 2.0) + 1.0))}


def _composed(p1, q1, p2, q2):
    return p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2


def unary_parameters(first: str, second: str, epsilon_inf: float,
                     epsilon_1: float) -> tuple[float, float, float, float]:
    """``(p1, q1, p2, q2)`` of a two-round unary protocol (module docstring).

    Parameters
    ----------
    first, second : {"oue", "sue"}
        The rounds' shapes: OUE (``p = 1/2``) or SUE (``q = 1 - p``).
    epsilon_inf, epsilon_1 : float

    Returns
    -------
    tuple of float
        ``(nan, nan, nan, nan)`` for the second round when no parameter in
        its open interval reaches ``epsilon_1`` (L-OUE and L-SOUE at or above
        :func:`epsilon_1_limit`).

    Examples
    --------
    >>> p1, q1, p2, q2 = unary_parameters("oue", "oue", 2.0, 1.0)
    >>> P, Q = p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2
    >>> round(float(np.log(P * (1 - Q) / (Q * (1 - P)))), 12)
    1.0
    """
    p1, q1 = _FIRST[first](epsilon_inf)
    E = math.exp(epsilon_1)
    # P = A0 + A1 t and Q = B0 + B1 t in the unknown t of the second round
    if second == "oue":  # t = q2, p2 = 1/2: P = p1/2 + (1 - p1) t
        A0, A1, B0, B1 = p1 / 2, 1 - p1, q1 / 2, 1 - q1
        lo, hi = 0.0, 0.5
    else:  # t = p2, q2 = 1 - p2: P = (1 - p1) + (2 p1 - 1) t
        A0, A1, B0, B1 = 1 - p1, 2 * p1 - 1, 1 - q1, 2 * q1 - 1
        lo, hi = 0.5, 1.0

    def excess(t):  # P (1 - Q) - E Q (1 - P): its sign says which side of e^eps_1 the ratio is
        P, Q = A0 + A1 * t, B0 + B1 * t
        return P * (1 - Q) - E * Q * (1 - P)

    # the ratio is 1 where p2 = q2 (excess < 0) and grows toward the interval's other end
    weak, strong = (hi, lo) if second == "oue" else (lo, hi)
    if not excess(strong) > 0 or not epsilon_1 < epsilon_1_limit(first, second, epsilon_inf):
        return p1, q1, math.nan, math.nan
    # bisection to the last float: the ratio is monotone in the second round's gap p2 - q2
    for _ in range(200):
        mid = 0.5 * (weak + strong)
        if mid == weak or mid == strong:
            break
        if excess(mid) > 0:
            strong = mid
        else:
            weak = mid
    t = strong if abs(excess(strong)) <= abs(excess(weak)) else weak
    return (p1, q1, 0.5, t) if second == "oue" else (p1, q1, t, 1.0 - t)


def epsilon_1_limit(first: str, second: str, epsilon_inf: float) -> float:
    """The largest ``epsilon_1`` a two-round unary protocol reaches (exclusive).

    A SUE-like second round reaches every ``epsilon_1 < epsilon_inf`` (at
    ``p2 = 1`` the report is the permanent response). An OUE-like one
    (``p2 = 1/2``) is limited by its ratio at ``q2 = 0``, where ``P = p1 / 2``
    and ``Q = q1 / 2``: ``ln(p1 (2 - q1) / (q1 (2 - p1)))``, which is
    ``ln((2 e^inf + 1) / 3)`` after OUE and ``ln(h (2 h + 1) / (h + 2))``
    (``h = e^(inf/2)``) after SUE.

    Examples
    --------
    >>> round(epsilon_1_limit("oue", "oue", 2.0), 6), epsilon_1_limit("oue", "sue", 2.0)
    (1.660011, 2.0)
    """
    if second == "sue":
        return float(epsilon_inf)
    p1, q1 = _FIRST[first](epsilon_inf)
    return math.log(p1 * (2 - q1) / (q1 * (2 - p1)))


# ---------------------------------------------------------------------- privacy
@dataclass(frozen=True)
class LongitudinalPrivacy(PrivacyStatement):
    """Local DP per report at ``epsilon`` (= ``epsilon_1``), and ``epsilon_inf`` per value.

    Attributes
    ----------
    epsilon_inf : float
        The bound over any number of reports of a value that does not change.

    Notes
    -----
    A user's reports of one value are post-processing of that value's
    permanent response (``epsilon_inf``-LDP) and also a composition of
    ``epsilon_1``-LDP reports, so ``t`` reports of one value cost
    ``min(t epsilon_1, epsilon_inf)``. A user whose value takes ``c``
    distinct values over the collection has ``c`` permanent responses, so
    at most ``c epsilon_inf`` in all (:meth:`over_time`): a value that
    changes ``c`` times takes at most ``c + 1`` distinct values. Changing
    back to an earlier value costs nothing new (its response is in the
    memo).

    Examples
    --------
    >>> s = LongitudinalPrivacy.memoized(epsilon_1=1.0, epsilon_inf=4.0)
    >>> s.over_time(), s.over_time(n_values=3), s.over_time(n_values=1, n_reports=2)
    (4.0, 12.0, 2.0)
    >>> str(s)
    'epsilon=1, epsilon_inf=4 per value over any number of reports (local DP, per report)'
    """

    epsilon_inf: Optional[float] = None

    @classmethod
    def memoized(cls, *, epsilon_1: float, epsilon_inf: float) -> "LongitudinalPrivacy":
        """The statement of memoized reports at ``(epsilon_1, epsilon_inf)``."""
        return cls("local DP", "report", epsilon=float(epsilon_1), delta=0.0,
                   epsilon_inf=float(epsilon_inf))

    def over_time(self, n_values: int = 1, n_reports: Optional[int] = None) -> float:
        """The bound over a whole collection for a user whose value took ``n_values`` values.

        ``n_values * epsilon_inf`` (each distinct value has one permanent
        response), or ``min(n_reports * epsilon_1, n_values * epsilon_inf)``
        when the number of reports is known (class notes).
        """
        owner = "LongitudinalPrivacy.over_time"
        c = check_int(n_values, "n_values", owner, low=1)
        assert self.epsilon_inf is not None and self.epsilon is not None
        bound = c * self.epsilon_inf
        if n_reports is not None:
            t = check_int(n_reports, "n_reports", owner, low=c)
            bound = min(bound, t * self.epsilon)
        return bound

    def budget(self) -> str:
        return (f"{super().budget()}, epsilon_inf={self.epsilon_inf:g} per value over any "
                "number of reports")


# ---------------------------------------------------------------------- the protocols
class MemoizedBudgets(KeywordOnly):
    """What every memoized protocol of the family shares: its two budgets, its own memo, the
    contract's ``epsilons`` check.

    A class sets ``epsilon_1``, ``epsilon_inf`` and ``_memo = None`` in its constructor, and
    ``_NO_PERSONAL_BUDGETS``, the reason its error gives for refusing other budgets.
    """

    epsilon_1: float
    epsilon_inf: float
    _memo: Optional[MemoryMemo]
    _NO_PERSONAL_BUDGETS = ("a memoized protocol has no personal budgets: its permanent "
                            "responses are drawn at one epsilon_inf")

    @property
    def epsilon(self) -> float:
        """The budget of one report, ``epsilon_1`` (the contract's name)."""
        return self.epsilon_1

    @property
    def memo(self) -> MemoryMemo:
        """This object's own in-memory memo (used when :meth:`privatize` gets none)."""
        if self._memo is None:
            self._memo = MemoryMemo()
        return self._memo

    @statement_method
    def privacy(self, epsilons: Optional[ArrayLike] = None) -> LongitudinalPrivacy:
        """Per report ``epsilon_1``; ``epsilon_inf`` over any number of reports of one memoized
        value (module docstring, "Privacy").

        ``epsilons`` is ``None`` or ``epsilon_1`` (no personal budgets). The
        statement's ``event()`` (a report at ``epsilon_1``) is what a ledger
        charges for one release; :meth:`LongitudinalPrivacy.over_time` bounds
        a whole collection. (Before the mechanism protocol this was a
        property; reading ``m.privacy.epsilon_inf`` still works for one
        release, with a ``DeprecationWarning``.)
        """
        self._check_epsilons(epsilons, f"{type(self).__name__}.privacy")
        return LongitudinalPrivacy.memoized(epsilon_1=self.epsilon_1, epsilon_inf=self.epsilon_inf)

    def _check_epsilons(self, epsilons, owner: str) -> None:
        """The contract's ``epsilons``: None or this protocol's ``epsilon_1`` (no personal budgets)."""
        if epsilons is None:
            return
        try:
            eps = np.asarray(epsilons, dtype=np.float64)
        except (TypeError, ValueError):
            raise param_error("epsilons", owner, f"None or epsilon_1 = {self.epsilon_1!r}",
                              epsilons, TypeError) from None
        if not np.all(eps == self.epsilon_1):
            raise param_error(
                "epsilons", owner, f"None or epsilon_1 = {self.epsilon_1!r} for every report "
                f"({self._NO_PERSONAL_BUDGETS})", _Text("other budgets"))


class LongitudinalOracle(MemoizedBudgets, LongitudinalProtocol):
    """Base class of the memoized two-round oracles (module docstring).

    Parameters
    ----------
    domain_size : int in [2, 2**31 - 1]
        ``D``: the symbols are ``0 .. D-1``.
    epsilon_inf : float
        The bound over any number of reports of an unchanged value: the
        permanent round's budget. Finite, in ``(epsilon_1, 700]``.
    epsilon_1 : float
        The budget of one report (the paper's name); ``epsilon`` is the
        contract's name for it (pass one of them). In ``(0, epsilon_inf)``.
    codebook_seed : int or None
        Keys the public sanitization coins (no public hash otherwise).
    n_threads : int or None
        Threads of the unary kernels; results never depend on it.
    epsilon : float, optional
        Another name for ``epsilon_1``.

    Attributes
    ----------
    p1, q1 : float
        The permanent round's probabilities (module docstring).
    p2, q2 : float
        The instantaneous round's.
    P, Q : float
        One report's composed probabilities, ``P / Q = e^epsilon_1`` (L-GRR)
        or ``P (1 - Q) / (Q (1 - P)) = e^epsilon_1`` (unary).
    memo : MemoryMemo
        The memo :meth:`privatize` uses when given none (kept by this object).
    """

    name = "longitudinal"
    first = "grr"
    second = "grr"

    def __init__(self, *, domain_size: int, epsilon_inf: float, epsilon_1: Optional[float] = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None,
                 epsilon: Optional[float] = None) -> None:
        owner = type(self).__name__
        self.domain_size = check_int(domain_size, "domain_size", owner, low=2,
                                     high=MAX_DOMAIN_SIZE)
        self.epsilon_inf = check_float(epsilon_inf, "epsilon_inf", owner, low=0.0,
                                       high=EPSILON_MAX, high_open=False)
        e1 = resolve_alias(owner, "epsilon_1", epsilon_1, "epsilon", epsilon)
        shown = "epsilon_1" if epsilon_1 is not None else "epsilon"
        self.epsilon_1 = check_float(e1, shown, owner, low=0.0, high=self.epsilon_inf)
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.n_threads = n_threads
        p1, q1, p2, q2 = self._parameters()
        if not (0.0 <= q2 < p2 <= 1.0 and q1 < p1):
            raise param_error(shown, owner, self._epsilon_1_range(), e1)
        self.p1, self.q1, self.p2, self.q2 = p1, q1, p2, q2
        self.P, self.Q = _composed(p1, q1, p2, q2)
        if not (self.P - self.Q > 0 and self.Q > 0):
            raise param_error(shown, owner, "large enough that the estimator is defined in "
                              "double precision ((p1 - q1)(p2 - q2) > 0)", e1)
        self._memo: Optional[MemoryMemo] = None

    def _parameters(self) -> tuple[float, float, float, float]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _epsilon_1_range(self) -> str:
        return f"a float in (0, epsilon_inf) = (0, {self.epsilon_inf!r})"

    # ------------------------------------------------------------ public attributes
    @property
    def memo_scope(self) -> str:
        """The memo scope of the permanent round: its law, ``D`` and ``epsilon_inf``."""
        return f"{self.first}:D={self.domain_size}:epsilon_inf={self.epsilon_inf!r}"

    def __repr__(self) -> str:
        return (f"{type(self).__name__}(domain_size={self.domain_size}, "
                f"epsilon_inf={self.epsilon_inf!r}, epsilon_1={self.epsilon_1!r}, "
                f"codebook_seed={self.codebook_seed})")

    def approximate_variance(self, n: int) -> float:
        """The paper's approximate variance of a count, ``n Q (1 - Q) / (P - Q)^2`` (eq. 6)."""
        return n * self.Q * (1 - self.Q) / (self.P - self.Q) ** 2

    def count_variances(self, n: int, counts: ArrayLike) -> np.ndarray:
        """``(n Q (1 - Q) + c (P (1 - P) - Q (1 - Q))) / (P - Q)^2`` at counts ``c``."""
        c = np.asarray(counts, dtype=np.float64)
        P, Q = self.P, self.Q
        return (n * Q * (1 - Q) + c * (P * (1 - P) - Q * (1 - Q))) / (P - Q) ** 2

    # ------------------------------------------------------------ validation
    def _check_values(self, values, owner: str) -> np.ndarray:
        return self._server.check_values(values, owner)

    # ------------------------------------------------------------ client
    def privatize(self, values: ArrayLike, *, memo: Optional[Memo] = None,
                  epsilons: Optional[ArrayLike] = None, identities: Optional[ArrayLike] = None,
                  rng: RngLike = None) -> np.ndarray:
        """One report per identity: its memoized permanent response, randomized afresh.

        Parameters
        ----------
        values : array_like of int, shape (n,)
            Each identity's current symbol in ``[0, domain_size)``.
        memo : MemoryMemo or MemoStore, optional
            Where the permanent responses live; default this object's
            :attr:`memo`. A key ``(identity, value)`` seen for the first
            time gets a new permanent response (stored, and committed by a
            :class:`MemoStore`, before this method returns); a key seen
            before reuses its stored one.
        epsilons : None or float
            ``None`` or ``epsilon_1`` (no personal budgets).
        identities : array_like of int, optional
            Distinct identities (the memo's users); default ``0 .. n-1``.
        rng : None, int, SeedSequence or Generator
            Private randomness of both rounds.

        Returns
        -------
        numpy.ndarray
            L-GRR: int64 symbols, shape (n,). The unary protocols: packed
            bits, shape ``(n, ceil(D / 8))`` uint8 (as :class:`~fastldp.OUE`).
        """
        owner = f"{type(self).__name__}.privatize"
        self._check_epsilons(epsilons, owner)
        x = self._check_values(values, owner)
        ids = resolve_identities(identities, x.shape[0], owner)
        gen = as_generator(rng, owner)
        store = self.memo if memo is None else memo
        if not isinstance(store, (MemoryMemo, MemoStore)):
            raise param_error("memo", owner, "None, a MemoryMemo or a MemoStore", store,
                              TypeError)
        dtype, width = self._response_layout()
        perm = store.responses(self.memo_scope, ids, x, self.domain_size,
                               lambda index: self._permanent(x[index], gen), dtype, width)
        return self._instantaneous(perm, gen)

    def permanent_responses(self, values: ArrayLike, *, memo: Memo,
                            identities: Optional[ArrayLike] = None) -> tuple[np.ndarray, np.ndarray]:
        """The stored permanent responses of ``(identity, value)`` keys (nothing is drawn).

        Returns
        -------
        responses : numpy.ndarray
            In the layout of :meth:`privatize`'s reports (zeros where missing).
        found : bool array, shape (n,)
        """
        owner = f"{type(self).__name__}.permanent_responses"
        x = self._check_values(values, owner)
        ids = resolve_identities(identities, x.shape[0], owner)
        dtype, width = self._response_layout()
        rows, found = memo.lookup(self.memo_scope, ids, x, self.domain_size, dtype, width)
        return self._from_rows(rows), found

    def _response_layout(self) -> tuple[Any, int]:  # pragma: no cover - abstract
        raise NotImplementedError

    def _from_rows(self, rows: np.ndarray) -> np.ndarray:
        return rows

    def _permanent(self, x: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        # pragma: no cover - abstract
        raise NotImplementedError

    def _instantaneous(self, perm: np.ndarray, gen: np.random.Generator) -> np.ndarray:
        # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------ server
    @property
    def _server(self):  # pragma: no cover - abstract
        """The one-shot oracle whose report format and sanitization this protocol shares."""
        raise NotImplementedError

    def _hits(self, clean: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    def _n_reports(self, reports, owner: str) -> int:
        return self._server._n_reports(reports, owner)

    def estimate(self, reports: ArrayLike, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> FrequencyEstimate:
        """Count estimates of every symbol from one round's reports (one per identity).

        Exactly ``finalize(partial(reports, epsilons, identities))``.

        Parameters
        ----------
        reports : array_like
            One report per identity; malformed reports are replaced by
            public random legal outputs keyed by ``(codebook_seed,
            identity)`` and counted in ``.sanitization``.
        epsilons : None or float
            ``None`` or ``epsilon_1``.
        identities : array_like of int, optional
            As given to :meth:`privatize` (they key the sanitization coins).

        Returns
        -------
        FrequencyEstimate
            ``counts``, plug-in ``variances`` (module docstring), ``n``,
            ``sanitization`` and ``privacy`` (a :class:`LongitudinalPrivacy`).
        """
        owner = f"{type(self).__name__}.estimate"
        return self.finalize(self._partial(reports, epsilons, identities, owner))

    def stream_params(self) -> dict:
        """The public parameters a partial and a report file are bound to (JSON values).

        ``type(self)(**params)`` rebuilds an equivalent server.
        """
        return {"domain_size": self.domain_size, "epsilon_inf": self.epsilon_inf,
                "epsilon_1": self.epsilon_1, "codebook_seed": self.codebook_seed}

    def partial(self, reports: ArrayLike, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """The exact, mergeable state of :meth:`estimate` over a chunk of reports.

        Holds the integer hit count of every symbol (an
        :class:`~fastldp.streaming.ExactSum` of integers) and the counts of
        reports by sanitization outcome: ``O(D)`` whatever the chunk's size.
        Pass the chunk's ``identities`` for every chunk but a first one
        (they key the sanitization coins).
        """
        return self._partial(reports, epsilons, identities, f"{type(self).__name__}.partial")

    def _partial(self, reports, epsilons, identities, owner: str) -> Partial:
        self._check_epsilons(epsilons, owner)
        n = self._n_reports(reports, owner)
        ids = resolve_identities(identities, n, owner)
        server = self._server
        clean, report = server.sanitize(reports, np.full(n, server.epsilon), ids, owner)
        hits = ExactSum(self.domain_size)
        if n:
            hits.add_integers(np.ascontiguousarray(self._hits(clean), dtype=np.int64))
        else:
            report = all_legal_report(0)
        return Partial(type(self).__name__, self.stream_params(), sums={"hits": hits},
                       counts=report_counts(report), flags={"wrong_dtype": report.wrong_dtype})

    def merge(self, a: Partial, b: Partial) -> Partial:
        """Merge the partials of two chunks (exact and order-free; neither input changes)."""
        owner = f"{type(self).__name__}.merge"
        check_partial(a, type(self).__name__, self.stream_params(), owner)
        check_partial(b, type(self).__name__, self.stream_params(), owner)
        return a.merge(b)

    def finalize(self, partial: Partial) -> FrequencyEstimate:
        """The :class:`~fastldp.oracles.FrequencyEstimate` of a (merged) partial.

        ``(hits - n Q) / (P - Q)`` and the plug-in variances (module
        docstring): a deterministic function of the integer hit counts.
        """
        owner = f"{type(self).__name__}.finalize"
        check_partial(partial, type(self).__name__, self.stream_params(), owner)
        if set(partial.sums) != {"hits"}:
            raise ValueError(f"{owner}: the partial holds the sums {sorted(partial.sums)}, not "
                             f"those of a {type(self).__name__} partial")
        n = partial.counts["n"]
        hits = partial.sums["hits"].value()
        counts = (hits - n * self.Q) / (self.P - self.Q)
        variances = self.count_variances(n, np.clip(counts, 0.0, n))
        return FrequencyEstimate(counts, variances, partial_report(partial), n, self.privacy())


class LGRR(LongitudinalOracle):
    """Longitudinal GRR: a memoized GRR at ``epsilon_inf``, then GRR with ``(p2, q2)``.

    Reports are int64 symbols in ``[0, D)``, as :class:`~fastldp.GRR`'s. The
    parameters are in the module docstring (:func:`lgrr_parameters`).

    Parameters
    ----------
    domain_size, epsilon_inf, epsilon_1, codebook_seed, n_threads, epsilon
        As :class:`LongitudinalOracle`.
    calibration : {"exact", "paper"}
        ``"exact"``: ``(p2, q2)`` give one report the largest ratio exactly
        ``e^epsilon_1``. ``"paper"``: the paper's formula, which for
        ``D > 2`` spends less than ``epsilon_1`` (module docstring).

    Notes
    -----
    Both rounds are :class:`~fastldp.GRR`'s sampler: the permanent one at
    ``epsilon_inf`` (its ``p = e^inf / (e^inf + D - 1)`` is ``p1``), the
    instantaneous one at ``ln(p2 / q2)``, since GRR is fixed by its ratio
    (``p2 + (D - 1) q2 = 1`` gives back ``p2``, to rounding).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.longitudinal import LGRR, MemoryMemo
    >>> lgrr = LGRR(domain_size=5, epsilon_inf=4.0, epsilon_1=1.0, codebook_seed=0)
    >>> memo = MemoryMemo()
    >>> values = np.arange(2000) % 5
    >>> day1 = lgrr.privatize(values, memo=memo, rng=1)
    >>> day2 = lgrr.privatize(values, memo=memo, rng=2)  # the same permanent responses
    >>> est = lgrr.estimate(day2)
    >>> bool(np.all(np.abs(est.counts - 400) < 5 * est.std))
    True
    >>> est.privacy.over_time(n_values=2)  # a user whose value changed once
    8.0
    """

    name = "l-grr"
    first = second = "grr"

    def __init__(self, *, domain_size: int, epsilon_inf: float, epsilon_1: Optional[float] = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None,
                 epsilon: Optional[float] = None, calibration: str = "exact") -> None:
        self.calibration = check_choice(calibration, "calibration", type(self).__name__,
                                        ("exact", "paper"))
        super().__init__(domain_size=domain_size, epsilon_inf=epsilon_inf, epsilon_1=epsilon_1,
                         codebook_seed=codebook_seed, n_threads=n_threads, epsilon=epsilon)

    def _parameters(self):
        return lgrr_parameters(self.domain_size, self.epsilon_inf, self.epsilon_1,
                               self.calibration)

    def stream_params(self) -> dict:
        return {**super().stream_params(), "calibration": self.calibration}

    def __repr__(self) -> str:
        text = super().__repr__()
        return text if self.calibration == "exact" else f"{text[:-1]}, calibration='paper')"

    @property
    def _server(self) -> GRR:
        server = getattr(self, "_grr", None)
        if server is None:
            server = self._grr = GRR(domain_size=self.domain_size, epsilon=self.epsilon_inf,
                                     codebook_seed=self.codebook_seed, n_threads=1)
        return server

    def _response_layout(self):
        return np.int64, 1

    def _report_layout(self):
        return np.int64, ()  # one symbol

    def _from_rows(self, rows):
        return rows[:, 0].copy()

    def _permanent(self, x, gen):
        return self._server.perturb(x, np.array([self.epsilon_inf]), None, gen)

    def _instantaneous(self, perm, gen):
        eps2 = math.log(self.p2 / self.q2)
        return self._server.perturb(np.ascontiguousarray(perm[:, 0]), np.array([eps2]), None, gen)

    def _hits(self, clean):
        return np.bincount(clean, minlength=self.domain_size)


def _bernoulli_rows(gen: np.random.Generator, n: int, D: int, prob: float,
                    n_threads: int) -> np.ndarray:
    """Packed rows of ``D`` independent Bernoulli(``prob``) bits (the unary kernel).

    The kernel sets the held bit with probability ``p`` and every other with
    ``floor(q 2^64) / 2^64``; with ``p = q = prob`` all ``D`` bits share one law.
    """
    key = gen.integers(0, 2**64, size=2, dtype=np.uint64)
    threshold = np.full(n, np.ldexp(prob, 64), dtype=np.float64).astype(np.uint64) \
        if prob < 1.0 else np.full(n, np.iinfo(np.uint64).max, dtype=np.uint64)
    return ue_perturb(int(key[0]), int(key[1]), np.zeros(n, dtype=np.int64), threshold,
                      np.full(n, prob, dtype=np.float64), D, n_threads)


class _UnaryLongitudinal(LongitudinalOracle):
    """The unary protocols: OUE / SUE permanent bits, re-randomized bit by bit."""

    first = "oue"
    second = "oue"

    def _parameters(self):
        return unary_parameters(self.first, self.second, self.epsilon_inf, self.epsilon_1)

    def _epsilon_1_range(self) -> str:
        top = epsilon_1_limit(self.first, self.second, self.epsilon_inf)
        if top < self.epsilon_inf:
            return (f"a float in (0, {top!r}): with p2 = 1/2 after a {self.first.upper()} "
                    "round the largest ratio one report can reach is P (1 - Q) / (Q (1 - P)) "
                    "at q2 = 0")
        return super()._epsilon_1_range()

    @property
    def _server(self):
        server = getattr(self, "_ue", None)
        if server is None:
            cls = OUE if self.first == "oue" else SUE
            server = self._ue = cls(domain_size=self.domain_size, epsilon=self.epsilon_inf,
                                    codebook_seed=self.codebook_seed, n_threads=self.n_threads)
        return server

    @property
    def n_bytes(self) -> int:
        """Bytes per report, ``ceil(D / 8)``."""
        return (self.domain_size + 7) // 8

    def _response_layout(self):
        return np.uint8, self.n_bytes

    def _report_layout(self):
        return np.uint8, (self.n_bytes,)  # packed bits

    def _permanent(self, x, gen):
        # the one-shot oracle at epsilon_inf is exactly the permanent round: (p1, q1)
        return self._server.perturb(x, np.array([self.epsilon_inf]), None, gen)

    def _instantaneous(self, perm, gen):
        n, D = perm.shape[0], self.domain_size
        threads = self._server.n_threads
        keep = _bernoulli_rows(gen, n, D, self.p2, threads)   # a set bit stays set w.p. p2
        raise_ = _bernoulli_rows(gen, n, D, self.q2, threads)  # a clear bit is set w.p. q2
        return (perm & keep) | (~perm & raise_)

    def _hits(self, clean):
        return ue_counts(clean, self.domain_size, self._server.n_threads)


class LOUE(_UnaryLongitudinal):
    """Longitudinal OUE: memoized OUE at ``epsilon_inf``, then OUE-like bits (``p2 = 1/2``).

    Reports are packed bits, shape ``(n, ceil(D / 8))`` uint8 (as
    :class:`~fastldp.OUE`); ``q2`` solves the module docstring's quadratic.
    ``epsilon_1`` must stay below ``ln((2 e^inf + 1) / 3)``
    (:func:`epsilon_1_limit`).

    Parameters
    ----------
    domain_size, epsilon_inf, epsilon_1, codebook_seed, n_threads, epsilon
        As :class:`LongitudinalOracle`.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.longitudinal import LOUE
    >>> loue = LOUE(domain_size=10, epsilon_inf=3.0, epsilon_1=1.0, codebook_seed=0)
    >>> loue.p1, loue.p2
    (0.5, 0.5)
    >>> reports = loue.privatize(np.arange(3000) % 10, rng=0)
    >>> reports.shape, reports.dtype
    ((3000, 2), dtype('uint8'))
    >>> est = loue.estimate(reports)
    >>> bool(np.all(np.abs(est.counts - 300) < 5 * est.std))
    True
    """

    name = "l-oue"
    first, second = "oue", "oue"


class LOSUE(_UnaryLongitudinal):
    """Longitudinal OUE then SUE: memoized OUE at ``epsilon_inf``, then SUE-like bits.

    ``p1 = 1/2``, ``q1 = 1 / (e^inf + 1)``; ``q2 = 1 - p2`` with ``p2`` the
    root of the module docstring's quadratic in ``(1/2, 1)``.

    Parameters
    ----------
    domain_size, epsilon_inf, epsilon_1, codebook_seed, n_threads, epsilon
        As :class:`LongitudinalOracle`.

    Examples
    --------
    >>> from fastldp.longitudinal import LOSUE
    >>> losue = LOSUE(domain_size=6, epsilon_inf=2.0, epsilon_1=0.5, codebook_seed=0)
    >>> round(losue.p2 + losue.q2, 12)
    1.0
    >>> losue.privatize([0, 5, 5], rng=0).shape
    (3, 1)
    """

    name = "l-osue"
    first, second = "oue", "sue"


class LSUE(_UnaryLongitudinal):
    """Longitudinal SUE (basic RAPPOR without the Bloom filter): SUE, then SUE-like bits.

    ``p1 = e^(inf/2) / (e^(inf/2) + 1) = 1 - q1`` and ``q2 = 1 - p2``.

    Parameters
    ----------
    domain_size, epsilon_inf, epsilon_1, codebook_seed, n_threads, epsilon
        As :class:`LongitudinalOracle`.

    Examples
    --------
    >>> from fastldp.longitudinal import LSUE
    >>> lsue = LSUE(domain_size=4, epsilon_inf=4.0, epsilon_1=2.0, codebook_seed=0)
    >>> est = lsue.estimate(lsue.privatize([0, 1, 2, 3] * 50, rng=0))
    >>> est.n, est.privacy.epsilon, est.privacy.epsilon_inf
    (200, 2.0, 4.0)
    """

    name = "l-sue"
    first, second = "sue", "sue"


class LSOUE(_UnaryLongitudinal):
    """Longitudinal SUE then OUE: memoized SUE at ``epsilon_inf``, then OUE-like bits.

    ``p2 = 1/2``; ``epsilon_1`` must stay below ``ln(h (2 h + 1) / (h + 2))``,
    ``h = e^(inf/2)`` (:func:`epsilon_1_limit`).

    Parameters
    ----------
    domain_size, epsilon_inf, epsilon_1, codebook_seed, n_threads, epsilon
        As :class:`LongitudinalOracle`.

    Examples
    --------
    >>> from fastldp.longitudinal import LSOUE
    >>> lsoue = LSOUE(domain_size=4, epsilon_inf=4.0, epsilon_1=1.0, codebook_seed=0)
    >>> lsoue.p2
    0.5
    """

    name = "l-soue"
    first, second = "sue", "oue"
