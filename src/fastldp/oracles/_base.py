"""The base class of the frequency oracles, :class:`FrequencyOracle`, and its public API.

Every oracle privatizes one symbol ``x in [0, D)`` per identity at that
identity's own ``eps_i`` and gives the server, per identity, an unbiased
estimate ``c_i(v)`` of the indicator ``[x_i = v]`` for every ``v``. The
count estimate is ``sum_i c_i(v)``.

Two layers
----------
The public methods validate and then call the array methods, which assume
validated arrays and are what the families (P-RS, PCKV, the attacks) call:

==============================  ============================================
public                          array layer (validated inputs)
==============================  ============================================
``privatize(values, *, ...)``   ``perturb(values, eps, identities, rng)``
``estimate(reports, *, ...)``   ``sanitize(reports, eps, identities, owner)``
                                then ``aggregate(clean, eps, identities, lam)``
                                (``weighted_sums`` + ``weighted_counts``)
==============================  ============================================

``aggregate`` returns ``sum_i lam_i c_i(v)``; ``variances(eps)`` is the
per-report variance ``sigma_i^2`` of ``c_i(v)`` at a symbol the identity
does not hold and ``held_variances(eps)`` at the one it holds, so

    Var[count(v)] = sum_i sigma_i^2 + sum_{i holds v} (held_i - sigma_i^2).

:class:`FrequencyEstimate` reports the plug-in value of that sum: the
number of holders is replaced by the estimated count clipped to ``[0, n]``
and the holders' term by its mean over the identities (exact in expectation
when every identity has the same budget).

Budgets
-------
``epsilon`` (and every personal ``eps_i``) must lie in ``(0, 700]`` so that
``e^eps`` is finite, and be large enough that the estimator is defined in
double precision: ``p - q > 0`` and a finite variance. Below that (e.g.
``eps = 1e-17`` for GRR, where ``e^eps`` rounds to 1) the oracle raises a
``ValueError`` naming the parameter instead of returning infinities.

Sanitization, the streaming decode and personal budgets
-------------------------------------------------------
Illegal reports are sanitized and counted, never raised on
(:mod:`fastldp.oracles._sanitizing`). ``estimate`` is ``finalize(partial(...))``,
bit-identical whatever the chunks (:mod:`fastldp.oracles._streaming`, with the
exact sums of :mod:`fastldp.oracles._exact_sums`); reports at other budgets
than the oracle's are decoded by exact weighted sums
(:mod:`fastldp.oracles._personal`). The estimate is a
:class:`FrequencyEstimate` (:mod:`fastldp.oracles._estimate`); the law of
the statistic behind it, what IBU runs on, a :class:`CountChannel`
(:mod:`fastldp.oracles._count_channel`).
"""

from __future__ import annotations

import dataclasses
import functools
from typing import Any, Callable, Optional, TypeVar, Union

import numpy as np
from numpy.typing import ArrayLike

from .._random import as_generator, resolve_codebook_seed, resolve_identities, resolve_n_threads
from .._validation import check_float, check_int, param_error
from ..results import PrivacyStatement
from ..streaming import Partial
from ._categories import Categories, resolve_categories, shown_labels
from ._count_channel import CountChannel
from ._estimate import FrequencyEstimate
from ._personal import EPSILON_MAX
from ._protocol import OracleProtocol
from ._streaming import StreamingDecode

# The oracles, heavy hitters, longitudinal protocols and relations import these
# helpers from here: ``name as name`` re-exports them explicitly (PEP 484).
from ._exact_sums import (add_broadcast as add_broadcast, add_weighted_hits as add_weighted_hits,
                          count_sum as count_sum, scalar_sum as scalar_sum,
                          scaled_sum as scaled_sum)
from ._messages import _Text as _Text, entry_error as entry_error
from ._sanitizing import (MatrixReports as MatrixReports, _is_nan_number as _is_nan_number,
                          _to_float as _to_float, all_legal_report as all_legal_report,
                          as_report_array as as_report_array,
                          classify_integers as classify_integers,
                          partial_report as partial_report, public_uniform as public_uniform,
                          report_counts as report_counts, tally_report as tally_report)

__all__ = ["FrequencyOracle", "FrequencyEstimate", "CountChannel", "EPSILON_MAX", "MAX_DOMAIN_SIZE",
           "RngLike"]

#: what every ``rng`` parameter accepts
RngLike = Union[None, int, np.random.SeedSequence, np.random.Generator]

MAX_DOMAIN_SIZE = 2**31 - 1  # estimates are D-vectors; HR's code has K <= 2^31 columns


def fair_choice_among_max(scores: np.ndarray, rng: np.random.Generator) -> np.ndarray:
    """Row-wise argmax with a uniformly random tie-break."""
    top = scores.max(axis=1, keepdims=True)
    noise = rng.random(scores.shape)
    return np.argmax(np.where(scores == top, noise, -1.0), axis=1)



_Method = TypeVar("_Method", bound=Callable[..., Any])


def budgets_by_keyword(method: _Method) -> _Method:
    """Refuse a positional budget (``privatize(values, 1.0)``) with a TypeError that says the fix.

    The budgets are keyword-only (the API contract): a second positional
    argument never worked, so it is refused, not deprecated, with a message
    that says to pass ``epsilons=``. ``inspect.signature`` and type checkers
    see the wrapped method's own signature.
    """

    @functools.wraps(method)
    def call(self, *args, **kwargs):
        if len(args) > 1:
            shown = repr(args[1]) if np.ndim(args[1]) == 0 else "<one budget per report>"
            raise TypeError(
                f"{type(self).__name__}.{method.__name__} takes the budgets by keyword only: "
                f"pass epsilons={shown} (a float for every report, or an array with one budget "
                f"per report). Got {len(args) - 1} extra positional argument(s) instead.")
        return method(self, *args, **kwargs)

    return call  # type: ignore[return-value]


class FrequencyOracle(StreamingDecode, OracleProtocol):
    """Base class: keyword-only construction, validated ``privatize`` / ``estimate``.

    Parameters
    ----------
    domain_size : int in [2, 2**31 - 1], optional
        ``D``: the symbols are ``0 .. D-1``. Defaults to ``len(categories)``;
        required without ``categories``.
    epsilon : float in (0, 700] or None
        Budget of every identity unless ``epsilons`` is given per call;
        ``None`` means every call must pass ``epsilons``.
    categories : list of str or int, or a pandas Categorical, optional
        Labels of the symbols (symbol ``v`` is ``categories[v]``): then
        :meth:`privatize` takes the labels themselves and the results are
        labelled. A pandas ``Categorical`` (or category ``Series``) gives its
        categories, in their order.
    codebook_seed : int or None
        Public seed of the hashes and of the sanitization coins; ``None``
        draws one from OS entropy.
    n_threads : int or None
        Threads of the server kernels; results never depend on it.

    Notes
    -----
    The server also decodes in chunks: ``partial`` per chunk, ``merge``,
    ``finalize`` (bit-identical to ``estimate``;
    :mod:`fastldp.oracles._streaming`). The budgets of :meth:`privatize` and :meth:`estimate` are
    keyword-only: ``privatize(values, 1.0)`` is a ``TypeError`` that says to
    pass ``epsilons=1.0``.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.oracles import GRR
    >>> grr = GRR(domain_size=5, epsilon=1.0, codebook_seed=0)
    >>> y = grr.privatize(np.arange(100) % 5, rng=0)
    >>> parts = [grr.partial(y[:60]), grr.partial(y[60:], identities=np.arange(60, 100))]
    >>> merged = grr.finalize(grr.merge(parts[1], parts[0]))
    >>> bool(np.array_equal(merged.counts, grr.estimate(y).counts))
    True
    """

    name = "oracle"
    uses_identities = False  # True when the identities key a public hash (OLH)

    def __init__(self, *, domain_size: Optional[int] = None, epsilon: Optional[float],
                 categories: Any = None, codebook_seed: Optional[int] = None,
                 n_threads: Optional[int] = None) -> None:
        owner = type(self).__name__
        labels = None if categories is None else resolve_categories(categories, owner)
        if labels is not None:
            if not 2 <= len(labels) <= MAX_DOMAIN_SIZE:
                raise param_error("categories", owner,
                                  f"between 2 and {MAX_DOMAIN_SIZE} distinct labels",
                                  _Text(f"{len(labels)} label(s)"))
            if domain_size is None:
                domain_size = len(labels)
            elif not (isinstance(domain_size, (int, np.integer)) and domain_size == len(labels)):
                raise param_error("domain_size", owner,
                                  f"len(categories) = {len(labels)} (or left out) when categories "
                                  "are given", domain_size)
        elif domain_size is None:
            raise param_error("domain_size", owner,
                              f"an int in [2, {MAX_DOMAIN_SIZE}] (or categories= to count them)",
                              None, TypeError)
        self.domain_size = check_int(domain_size, "domain_size", owner, low=2,
                                     high=MAX_DOMAIN_SIZE)
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self.n_threads = resolve_n_threads(n_threads, owner)
        if epsilon is not None:
            epsilon = check_float(epsilon, "epsilon", owner, low=0.0, high=EPSILON_MAX,
                                  high_open=False)
        self.epsilon = epsilon
        #: the labels of the symbols (a tuple), or None
        self.categories: Optional[tuple] = labels
        self._labels = None if labels is None else Categories(labels)
        self._setup()
        if epsilon is not None:
            self.check_budgets(np.array([epsilon]), "epsilon", owner)

    def _setup(self) -> None:
        """Hook for subclasses: derived constants, after the common checks."""

    def _repr_extra(self) -> str:
        return ""

    def __repr__(self) -> str:
        labels = "" if self.categories is None else f", categories={shown_labels(self.categories)}"
        return (f"{type(self).__name__}(domain_size={self.domain_size}, epsilon={self.epsilon!r}"
                f"{self._repr_extra()}{labels}, codebook_seed={self.codebook_seed})")

    # ------------------------------------------------------------ per-report law
    def output_sizes(self, eps: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """Number of legal outputs per identity (integer-output oracles)."""
        raise NotImplementedError

    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:  # pragma: no cover - abstract
        """Array layer of :meth:`privatize`: reports of validated symbols at budgets ``eps``.

        ``eps`` has one budget per value, or one for all (length 1);
        ``identities`` is ``None`` for the oracles that do not hash them.
        """
        raise NotImplementedError

    def variances(self, eps: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """Variance of ``c_i(v)`` at a symbol identity ``i`` does not hold."""
        raise NotImplementedError

    def held_variances(self, eps: np.ndarray) -> np.ndarray:  # pragma: no cover - abstract
        """Variance of ``c_i(v)`` at the symbol identity ``i`` holds."""
        raise NotImplementedError

    def weights(self, eps: np.ndarray) -> np.ndarray:
        """Variance-optimal weights ``lambda_i = 1 / sigma_i^2``."""
        return 1.0 / self.variances(eps)

    def count_channel(self, eps: float, *, statistic: str = "counts") -> CountChannel:
        """The law of the oracle's aggregated statistic at budget ``eps`` (what IBU runs on).

        Parameters
        ----------
        eps : float
            The budget every report had.
        statistic : {"counts", "hits"}
            ``"counts"``: the ``D`` support counts ``S(v)`` that an
            equal-budget estimate's counts determine,
            ``S = counts (p - q) + n q`` (a ``"symmetric"``
            :class:`CountChannel`). ``"hits"``: the statistic a
            :meth:`partial` keeps (its ``"hits"``): the same support counts,
            except for Hadamard response, whose partial keeps the ``K``
            column counts (a ``"hadamard"`` channel, on which the EM is the
            exact maximum likelihood).

        Returns
        -------
        CountChannel

        Raises
        ------
        NotImplementedError
            For an oracle that does not give its statistic's law.
        """
        owner = f"{type(self).__name__}.count_channel"
        e = check_float(eps, "eps", owner, low=0.0, high=EPSILON_MAX, high_open=False)
        if statistic not in ("counts", "hits"):
            raise param_error("statistic", owner, "'counts' or 'hits'", statistic)
        return self._count_channel(e, statistic)

    def _count_channel(self, eps: float, statistic: str) -> CountChannel:
        """Hook of :meth:`count_channel` (validated arguments)."""
        raise NotImplementedError(
            f"{type(self).__name__} does not give the law of its statistic (count_channel), "
            "which IBU needs")

    # ------------------------------------------------------------ validation
    def check_values(self, values: ArrayLike, owner: str) -> np.ndarray:
        """Return ``values`` as int64 in ``[0, D)`` or raise, naming the first bad entry."""
        D = self.domain_size
        expected = f"a 1-d array of integers in [0, {D})"
        try:
            arr = np.asarray(values)
        except (ValueError, TypeError):
            raise param_error("values", owner, expected, values, TypeError) from None
        if arr.ndim != 1:
            raise param_error("values", owner, expected, _Text(f"an array of shape {arr.shape}"))
        kind = arr.dtype.kind
        if kind == "f":
            finite = np.isfinite(arr)
            safe = np.where(finite, arr, 0.5)
            bad = ~(finite & (np.floor(safe) == safe))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise entry_error("values", owner, expected, arr[i], i)
        elif kind == "O" and arr.size:
            _, numeric, integral, _ = classify_integers(arr)
            if not integral.all():
                i = int(np.flatnonzero(~integral)[0])
                raise entry_error("values", owner, expected, arr[i], i,
                                  ValueError if numeric[i] else TypeError)
            arr = np.array([int(v) for v in arr], dtype=object)
        elif kind not in "iu" and arr.size:
            raise param_error("values", owner, expected, _Text(f"an array of dtype {arr.dtype}"),
                              TypeError)
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        lo, hi = arr.min(), arr.max()
        if not (lo >= 0 and hi < D):
            bad = ~((arr >= 0) & (arr < D))
            i = int(np.flatnonzero(bad)[0])
            raise entry_error("values", owner, expected, arr[i], i)
        return np.ascontiguousarray(arr, dtype=np.int64)

    def _n_reports(self, reports, owner: str) -> int:
        try:
            return len(reports)
        except TypeError:
            raise param_error("reports", owner, "an array with one report per identity",
                              reports, TypeError) from None

    # ------------------------------------------------------------ public API
    def encode(self, labels: ArrayLike) -> np.ndarray:
        """The symbols (int64) of labels, for an oracle built with ``categories=``.

        Parameters
        ----------
        labels : array_like, shape (n,)
            Labels among :attr:`categories`: a list, a numpy string or
            integer array, a pandas ``Series`` or ``Categorical``.

        Returns
        -------
        numpy.ndarray of int64, shape (n,)
            ``categories.index(label)`` for every label.

        Raises
        ------
        ValueError
            Naming the first label that is not a category (and its index).
        """
        owner = f"{type(self).__name__}.encode"
        if self._labels is None:
            raise ValueError(f"{owner} needs labels: build {type(self).__name__} with "
                             "categories=[...] (its symbols are the integers 0 .. D-1 "
                             "otherwise)")
        return self._labels.encode(labels, "labels", owner)

    @budgets_by_keyword
    def privatize(self, values: ArrayLike, *, epsilons: Optional[ArrayLike] = None,
                  identities: Optional[ArrayLike] = None, rng: RngLike = None) -> np.ndarray:
        """Privatize one symbol per identity.

        Parameters
        ----------
        values : array_like, shape (n,)
            Symbols in ``[0, domain_size)``, or labels among
            :attr:`categories` when the oracle has categories (a list, a
            numpy array, a pandas ``Series`` or ``Categorical``); anything
            else raises.
        epsilons : float or array_like, shape (n,), optional
            Personal budgets; default ``epsilon`` for everyone. Keyword-only.
        identities : array_like of int, optional
            Distinct identities (key the public hashes); default ``0 .. n-1``.
        rng : None, int, SeedSequence or Generator
            Private randomness.

        Returns
        -------
        numpy.ndarray
            The reports (the oracle's docstring gives their shape).
        """
        owner = f"{type(self).__name__}.privatize"
        if self._labels is not None:
            x = self._labels.encode(values, "values", owner)
        else:
            x = self.check_values(values, owner)
        n = x.shape[0]
        # one shared budget is passed as a length-1 array: the array layer
        # broadcasts it (and computes p, q once instead of n times)
        eps = self._budgets(epsilons, n if epsilons is not None else 1, owner)
        ids = self._identities(identities, n, owner)
        return self.perturb(x, eps, ids, as_generator(rng, owner))

    def _identities(self, identities, n: int, owner: str):
        """Validated identities; ``None`` stays ``None`` for oracles that do not hash them."""
        if identities is None and not self.uses_identities:
            return None
        return resolve_identities(identities, n, owner)

    @budgets_by_keyword
    def estimate(self, reports: ArrayLike, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> FrequencyEstimate:
        """Count estimates of every symbol, their variances and the sanitization counts.

        The numbers are exactly those of ``finalize(partial(reports,
        epsilons, identities))``: see :meth:`partial` for the exact sums
        that make a decode split into chunks bit-identical to this one.
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
        owner = f"{type(self).__name__}.estimate"
        est = self.finalize(self._partial(reports, epsilons, identities, owner))
        if epsilons is not None:  # validated by _partial
            eps = np.broadcast_to(np.asarray(epsilons, dtype=np.float64), (est.n,))
            est = dataclasses.replace(
                est, privacy=PrivacyStatement.local(epsilon=self.epsilon, epsilons=eps))
        return est

    # ------------------------------------------------------------ streaming
    def _stream_extra(self) -> dict:
        """Oracle-specific public parameters of :meth:`stream_params` (FLH: ``n_hashes``)."""
        return {}

    def stream_params(self) -> dict:
        """The public parameters a partial is bound to (JSON values).

        ``type(self)(**oracle.stream_params())`` builds an equivalent server:
        ``domain_size``, ``epsilon`` (``None`` allowed), ``codebook_seed``,
        any oracle-specific public parameter (FLH's ``n_hashes``) and, for
        an oracle with labels, ``categories`` (a list); not ``n_threads``,
        which never changes a result.

        Returns
        -------
        dict
        """
        params: dict[str, Any] = {"domain_size": self.domain_size, "epsilon": self.epsilon,
                                  "codebook_seed": self.codebook_seed}
        params.update(self._stream_extra())
        if self.categories is not None:
            params["categories"] = list(self.categories)
        return params

    def partial(self, reports: ArrayLike, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """The exact, mergeable state of :meth:`estimate` over a chunk of reports.

        Parameters
        ----------
        reports : array_like
            The chunk's reports (there may be none); sanitized and counted as
            in :meth:`estimate`.
        epsilons : float or array_like, shape (n,), optional
            The chunk's personal budgets; ``None`` uses the oracle's
            ``epsilon`` for every report (the equal-budget decode). A budget
            equal to the oracle's ``epsilon`` counts as that decode too.
        identities : array_like of int, optional
            The chunk's identities. The default ``0 .. n-1`` is right only
            for a first chunk: pass them for every other chunk (they key the
            sanitization coins and, for OLH, the hashes).

        Returns
        -------
        fastldp.streaming.Partial
            Mechanism ``type(self).__name__``, parameters
            :meth:`stream_params`. The reports at the oracle's ``epsilon``
            (all of them when ``epsilons`` is ``None``): the integer hit
            counts per position of the oracle's statistic (``"hits"``:
            integers in an :class:`~fastldp.streaming.ExactSum`). The
            reports at other budgets: :class:`~fastldp.streaming.ExactSum` s
            of the report weights per position (``"support"``), of the
            constant added to every count (``"offset"``), of the per-report
            variances ``sigma_i^2`` (``"var"``) and of ``held_i - sigma_i^2``
            (``"held_minus_var"``), and their number (``"personal"``). Also
            the integer counts of reports by sanitization outcome (``"n"``,
            ``"n_valid"``, ``"reason:<reason>"``) and the or-merged
            ``"wrong_dtype"`` flag. Partials of any budgets merge. The state
            has one position per symbol (``K`` columns for Hadamard
            response, ``h g`` cells for FLH), whatever ``n``.
        """
        return self._partial(reports, epsilons, identities, f"{type(self).__name__}.partial")

    def merge(self, a: Partial, b: Partial) -> Partial:
        """Merge the partials of two chunks (exact, order-free; neither input changes).

        Every sum is an :class:`~fastldp.streaming.ExactSum` or an integer
        count, so ``merge(merge(a, b), c)`` and ``merge(a, merge(c, b))``
        hold the same numbers. Chunks of any budgets merge: the oracle's
        budget, personal budgets, or both.

        Parameters
        ----------
        a, b : fastldp.streaming.Partial
            Partials of this oracle (same :meth:`stream_params`).

        Returns
        -------
        fastldp.streaming.Partial

        Raises
        ------
        ValueError
            When a partial belongs to another oracle or other parameters.
        """
        owner = f"{type(self).__name__}.merge"
        self._check_partial(a, owner)
        self._check_partial(b, owner)
        return a.merge(b)

    def finalize(self, partial: Partial) -> FrequencyEstimate:
        """Turn a (merged) partial into the :class:`FrequencyEstimate` of all its reports.

        A deterministic function of the partial's exact state. When every
        report had the oracle's budget, the closed form of the equal-budget
        estimator applied to the integer hit counts (what
        ``estimate(reports)`` computes). Otherwise the hit counts are folded
        into the personal sums exactly (:meth:`_folded_sums`) and the counts
        round ``support + offset`` once (HR and FLH first map the rounded
        statistic through their transform). A partial without reports gives
        zero counts and variances.

        Parameters
        ----------
        partial : fastldp.streaming.Partial
            From :meth:`partial` or :meth:`merge` of this oracle.

        Returns
        -------
        FrequencyEstimate
        """
        owner = f"{type(self).__name__}.finalize"
        self._check_partial(partial, owner)
        n = partial.counts["n"]
        report = partial_report(partial)
        if partial.counts["personal"] == 0 and self.epsilon is not None:
            counts = self._counts_from_hits(partial.sums["hits"].value(), n)
            variances = self._uniform_variances(n, counts)
        else:
            sums = self._folded_sums(partial)
            counts = self.weighted_counts(sums["support"], sums["offset"])
            if n == 0:
                variances = np.zeros_like(counts)
            else:
                base = float(sums["var"].value()[0])
                extra = float(sums["held_minus_var"].value()[0]) / n
                variances = base + np.clip(counts, 0.0, n) * extra
        if partial.counts["personal"] == 0:
            privacy = PrivacyStatement.local(epsilon=self.epsilon)
        else:  # a partial keeps exact sums, not the budgets: only that they differed
            privacy = PrivacyStatement("local DP", "report", personal=True)
        return FrequencyEstimate(counts, variances, report, n, privacy, self.categories)
