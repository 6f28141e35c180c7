"""The audit's vocabulary, shared by the families and :mod:`fastldp.audit`.

A family describes each randomizer it releases to the audit in its own folder
(a ``_channels.py`` beside its mechanisms): a :class:`Channel` with its claimed
budget and the means to audit it - an :class:`ExactLaw` and the mechanism's
sampler where the output space is finite, draws of a release where it is not,
or :class:`ViewSample` s of a protocol's view and its conformance
:class:`Check` s - and negative controls, faulty copies (``control_of`` set)
that the audit must flag. It registers them for its classes with
:func:`channels_of`; each class answers the question ``channels(epsilon)`` of
:class:`fastldp.protocol.Audited` with :func:`registered_channels`, and
:mod:`fastldp.audit` runs what :func:`fastldp.protocol.audited_classes` finds.

The statistical tests a conformance check runs (:func:`chi2_uniform`,
:func:`binomial_test`, :func:`mean_test`, :func:`variance_test`,
:func:`shuffler_checks`) are here too, since a family's checks call them;
:mod:`fastldp.audit.conformance` says how the audit decides them.

This room sits below the families and the audit: it imports numpy, scipy and
nothing of a family or of :mod:`fastldp.audit`.

Examples
--------
A family registers the channels of its class; the class answers with them:

>>> import numpy as np
>>> from fastldp.channels import Channel, ExactLaw, channels_of, registered_channels
>>> class Coin:
...     @classmethod
...     def channels(cls, epsilon=1.0):
...         return registered_channels(cls, epsilon)
>>> @channels_of(Coin)
... def _coin_channels(epsilon):
...     law = lambda mech, eps, ids: ExactLaw([0, 1], [0, 1], ids,
...                                           np.array([[[0.75, 0.25], [0.25, 0.75]]]))
...     return [Channel("coin", "one bit kept w.p. 3/4", epsilon, lambda eps: Coin(), law=law)]
>>> Coin.channels(np.log(3))
[Channel('coin', kind='exact', epsilon=1.09861, description='one bit kept w.p. 3/4')]
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Callable, Iterable, Optional

import numpy as np

__all__ = [
    "Channel", "ExactLaw", "ViewSample", "Check", "channels_of", "registered_channels",
    "LAW_FACTOR", "one_line", "REPR_WIDTH", "as_identities", "row_tuples",
    "chi2_uniform", "binomial_test", "mean_test", "variance_test", "shuffler_checks",
    "smallest_refuted", "VALUE_BINS", "REACH_MAX",
]

#: the most characters an audit object's repr takes (as for the results)
REPR_WIDTH = 200
#: budget multiplier of the negative controls' faults: a law fault builds the channel at
#: ``LAW_FACTOR`` times its claim; most sampler faults draw at ``LAW_FACTOR`` times it
LAW_FACTOR = 1.5
#: bins of the uniformity tests (of messages' top bits, of a label's position)
VALUE_BINS = 64
#: the largest budget multiplier :func:`smallest_refuted` searches up to
REACH_MAX = 64.0


def one_line(text: str) -> str:
    """``text`` on one line of at most :data:`REPR_WIDTH` characters (cut with ``...)``)."""
    text = " ".join(text.split())
    if len(text) > REPR_WIDTH:
        text = text[:REPR_WIDTH - 4] + "...)"
    return text


def as_identities(identities) -> np.ndarray:
    """``identities`` as a contiguous uint64 array of at least one dimension (a law's rows)."""
    return np.ascontiguousarray(np.atleast_1d(np.asarray(identities)).astype(np.uint64))


def row_tuples(arr) -> list:
    """The rows of an integer array as tuples of ints (fast: via the few distinct rows)."""
    arr = np.asarray(arr)
    uniq, inverse = np.unique(arr, axis=0, return_inverse=True)
    keys = [tuple(r) for r in uniq.tolist()]
    return [keys[i] for i in np.asarray(inverse).ravel().tolist()]


# ----------------------------------------------------------------- channels
@dataclass(frozen=True, repr=False)
class Channel:
    """One local randomizer, as the audit sees it.

    Attributes
    ----------
    name : str
        Short name (``fastldp audit NAME``).
    description : str
    epsilon : float
        The claimed budget (``rho`` for zCDP channels).
    build : callable ``(eps) -> mechanism``
        The mechanism at budget ``eps`` (on a tiny domain for exact channels).
    mechanism_epsilon : float or None
        The budget ``build`` is called with (default: ``epsilon``). Negative
        controls set it above the claim.
    kind : {"exact", "empirical", "zcdp", "shuffle", "fit"}
    law : callable ``(mech, eps, identities) -> ExactLaw``
        Exact channels only.
    sample : callable ``(mech, eps, inputs, identities, generator) -> reports``
        Exact channels: the mechanism's sampler on a list of inputs (one per
        identity); ``output_key`` maps a report to a key of ``law.outputs``.
    keyed : bool
        Whether the law depends on the identity (public per-identity
        randomness: OLH hashes, JPRS / RPC signs).
    draw : callable ``(mech, eps, side, size, generator)``
        Empirical channels: releases (a float array) under the two chosen
        inputs (``side`` 0 or 1). Shuffle and fit channels: a
        :class:`ViewSample` of the views.
    claim : callable, optional
        zCDP channels: ``(mech) -> rho`` read from the mechanism; shuffle and
        fit channels: ``(mech) -> (eps, delta)`` of the analyzer's view or
        the fitted model.
    draws : (int, int), optional
        Empirical, shuffle and fit channels whose draws are expensive: at
        most this many draws per side for the test and for the pilot.
    statistics : tuple of str
        Shuffle and fit channels: the statistics of the views that get a
        threshold test (keys of ``ViewSample.stats``).
    conformance : callable ``(mech, fresh, generator, rows) -> list of Check``, optional
        Shuffle channels: the exact check and the conformance tests of the
        fresh views (a pair of ``ViewSample``), undecided; the audit decides
        them at the row's Bonferroni level.
    known_reach : float
        A fault size (budget multiplier) that the channel's registered
        negative control shows the audit catches at its default draws
        (``draws[0]``; the test suite checks it); the row's reach when its
        tests estimate none smaller and it ran at least those draws. ``nan``
        when not declared.
    describe : callable ``(mech) -> str``, optional
        A note on the mechanism's public parameters, added to the row.
    expect_violation : bool
        True for negative controls.
    control_of : str or None
        The channel a negative control is a faulty copy of.

    Examples
    --------
    >>> from fastldp.audit import audit_channel, get_channel
    >>> grr = get_channel("grr", epsilon=1.0)
    >>> grr
    Channel('grr', kind='exact', epsilon=1, description='GRR, D = 5')
    >>> row = audit_channel(grr, n=2_000)
    >>> row.holds, row.exact.holds, round(row.exact.epsilon_audited, 6)
    (True, True, 1.0)
    """

    name: str
    description: str
    epsilon: float
    build: Callable
    kind: str = "exact"
    mechanism_epsilon: Optional[float] = None
    law: Optional[Callable] = None
    sample: Optional[Callable] = None
    output_key: Callable = staticmethod(lambda r: r.item() if hasattr(r, "item") else r)
    keyed: bool = False
    draw: Optional[Callable] = None
    claim: Optional[Callable] = None
    draws: Optional[tuple] = None
    statistics: tuple = ()
    conformance: Optional[Callable] = None
    known_reach: float = math.nan
    describe: Optional[Callable] = None
    expect_violation: bool = False
    control_of: Optional[str] = None

    @property
    def built_epsilon(self) -> float:
        """The budget ``build`` is called with (``mechanism_epsilon``, else the claim)."""
        return self.epsilon if self.mechanism_epsilon is None else self.mechanism_epsilon

    def __repr__(self) -> str:  # the callables' reprs say nothing a reader needs
        built = ("" if self.mechanism_epsilon is None
                 else f", built at epsilon={self.mechanism_epsilon:g}")
        control = "" if self.control_of is None else f", control_of={self.control_of!r}"
        return one_line(f"Channel({self.name!r}, kind={self.kind!r}, epsilon={self.epsilon:g}"
                        f"{built}{control}, description={self.description!r})")


# ----------------------------------------------------------------- exact laws
@dataclass(frozen=True, repr=False)
class ExactLaw:
    """The output law of a finite channel on a tiny domain.

    Attributes
    ----------
    inputs : list
        The inputs ``x`` (any objects the mechanism accepts).
    outputs : list
        The outputs ``y`` (hashable keys, in the order of the last axis).
    identities : numpy.ndarray of uint64
        The public identities the law is computed for (the codebook rows).
    probs : float64 array, shape (n_identities, n_inputs, n_outputs)
        ``P[i, x, y]``; each row ``P[i, x, :]`` sums to 1.
    note : str
        How the probabilities were computed.

    Examples
    --------
    Randomized response on one bit at ``eps = ln 3`` (keep with probability 3/4):

    >>> import numpy as np
    >>> from fastldp.audit import ExactLaw, audit_law
    >>> law = ExactLaw([0, 1], [0, 1], np.zeros(1, dtype=np.uint64),
    ...                np.array([[[0.75, 0.25], [0.25, 0.75]]]))
    >>> law
    ExactLaw(2 inputs x 2 outputs x 1 identities, note='binary64 probabilities, converted exactly to rationals')
    >>> audit = audit_law(law, np.log(3))
    >>> audit.ratio, audit.holds, audit_law(law, 1.0).holds
    (Fraction(3, 1), True, False)
    """

    inputs: list
    outputs: list
    identities: np.ndarray
    probs: np.ndarray
    note: str = "binary64 probabilities, converted exactly to rationals"

    def __repr__(self) -> str:  # the sizes, not the probabilities
        return one_line(f"ExactLaw({len(self.inputs)} inputs x {len(self.outputs)} outputs x "
                        f"{self.identities.shape[0]} identities, note={self.note!r})")


# ----------------------------------------------------------------- views of a protocol
@dataclass(frozen=True, repr=False)
class ViewSample:
    """Statistics of ``size`` analyzer views drawn under one dataset.

    Attributes
    ----------
    stats : dict
        Name -> float array of length ``size``: one value of each statistic
        per view (the first ones are the statistics the eps tests use, see
        the channel's ``statistics``).
    tallies : dict
        Name -> integer array summed over the views (histograms, counts).
    size : int

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.channels import ViewSample
    >>> part = ViewSample({"total": np.array([1.0, 2.0])}, {"hist": np.array([2, 0])}, 2)
    >>> both = ViewSample.join([part, part])
    >>> both
    ViewSample(size=4, stats=['total'], tallies=['hist'])
    >>> both.tallies["hist"]
    array([4, 0])
    """

    stats: dict
    tallies: dict
    size: int

    def __repr__(self) -> str:  # the statistics' names, not their arrays
        return one_line(f"ViewSample(size={self.size}, stats={list(self.stats)}, "
                        f"tallies={list(self.tallies)})")

    @staticmethod
    def join(parts: Iterable["ViewSample"]) -> "ViewSample":
        """One sample of all the views of ``parts`` (statistics concatenated, tallies added)."""
        parts = list(parts)
        stats = {k: np.concatenate([p.stats[k] for p in parts]) for k in parts[0].stats}
        tallies = {k: sum(p.tallies[k] for p in parts) for k in parts[0].tallies}
        return ViewSample(stats, tallies, sum(p.size for p in parts))


# ----------------------------------------------------------------- conformance checks
@dataclass(frozen=True, repr=False)
class Check:
    """One conformance test or deterministic check of a row.

    Attributes
    ----------
    name : str
        What is tested, in words.
    p_value : float or None
        The p-value under the assumption; ``None`` for a deterministic check.
    passed : bool
        ``p_value > alpha`` (statistical) or the check's own verdict.
    alpha : float
        The significance it was decided at (0 for a deterministic check).
    detail : str
        The statistic and, where it measures one, the size of fault it detects.
    reach : float
        The smallest fault this check detects, as the budget multiplier ``k``
        of a mechanism built at ``k eps`` that claims ``eps`` (``nan`` when
        the check measures another kind of fault).

    Examples
    --------
    >>> from fastldp.channels import Check, binomial_test
    >>> check = Check("heads are fair", binomial_test(530, 1000, 0.5), True).decided(1e-3)
    >>> check.passed, check.statistical
    (True, True)
    >>> check
    Check('heads are fair', passed=True, p_value=0.062, alpha=0.001)
    """

    name: str
    p_value: Optional[float]
    passed: bool
    alpha: float = 0.0
    detail: str = ""
    reach: float = math.nan

    @property
    def statistical(self) -> bool:
        """Whether the check is a test with a p-value (not a deterministic check)."""
        return self.p_value is not None

    def __repr__(self) -> str:
        p = "" if self.p_value is None else f", p_value={self.p_value:.3g}"
        alpha = f", alpha={self.alpha:g}" if self.alpha else ""
        reach = "" if self.reach != self.reach else f", reach={self.reach:.3g}"  # NaN: none
        detail = f", detail={self.detail!r}" if self.detail else ""
        return one_line(f"Check({self.name!r}, passed={self.passed}{p}{alpha}{reach}{detail})")

    def decided(self, alpha: float) -> "Check":
        """The check decided at significance ``alpha`` (deterministic checks are unchanged)."""
        if not self.statistical:
            return self
        assert self.p_value is not None  # statistical
        return replace(self, alpha=float(alpha), passed=bool(self.p_value > alpha))


def _two_sided(cdf: float, sf: float) -> float:
    return float(min(1.0, 2.0 * min(cdf, sf)))


def chi2_uniform(counts, expected=None) -> tuple:
    """Pearson's chi-square test of ``counts`` against ``expected`` (default: uniform).

    Returns ``(statistic, p_value)``; upper tail, ``len(counts) - 1`` degrees
    of freedom. Needs every expected count large (the audits use hundreds).
    """
    from scipy import stats

    c = np.asarray(counts, dtype=np.float64)
    total = c.sum()
    e = (np.full(c.shape, total / c.size) if expected is None
         else np.asarray(expected, dtype=np.float64) * (total / np.sum(expected)))
    stat = float(((c - e) ** 2 / e).sum())
    return stat, float(stats.chi2.sf(stat, c.size - 1))


def binomial_test(successes: int, trials: int, p: float) -> float:
    """Exact two-sided binomial p-value of ``successes`` in ``trials`` at probability ``p``."""
    from scipy import stats

    return float(stats.binomtest(int(successes), int(trials), float(p)).pvalue)


def mean_test(residuals, variance: float) -> tuple:
    """``z = sum(r) / sqrt(N variance)`` and its two-sided normal p-value (the mean is 0)."""
    from scipy import stats

    r = np.asarray(residuals, dtype=np.float64)
    z = float(r.sum() / math.sqrt(r.shape[0] * variance))
    return z, _two_sided(stats.norm.cdf(z), stats.norm.sf(z))


def variance_test(residuals, variance: float) -> tuple:
    """``sum(r^2) / variance`` against chi-square with ``N`` degrees of freedom, two-sided.

    Exact for Gaussian residuals of mean 0; the audits use it on sums of
    Skellam noise of variance ``mu ~ 10^5 - 10^6``, whose excess kurtosis
    ``1 / mu`` changes the variance of ``r^2`` by a relative ``1 / (2 mu)``.
    Returns ``(ratio of the sample variance to variance, p_value)``.
    """
    from scipy import stats

    r = np.asarray(residuals, dtype=np.float64)
    s = float((r * r).sum() / variance)
    n = r.shape[0]
    return s / n, _two_sided(stats.chi2.cdf(s, n), stats.chi2.sf(s, n))


def shuffler_checks(shuffler, length: int, rows: int, gen) -> list:
    """Tests of (c) on the shuffler alone: ``rows`` labelled streams ``0 .. length - 1``.

    A uniform permutation outputs a permutation of each row, puts label 0 at
    a uniform position and puts label 1 right after label 0 with
    probability ``1 / length``.
    """
    labels = np.tile(np.arange(length, dtype=np.int64), (rows, 1))
    out = np.asarray(shuffler(labels, gen))
    is_perm = out.shape == labels.shape and bool(
        (np.sort(out, axis=1) == labels).all())
    checks = [Check("shuffler output is a permutation of each stream", None, is_perm,
                    detail=f"{rows} labelled streams of {length}")]
    if not is_perm:
        return checks
    pos0 = np.argmax(out == 0, axis=1)
    pos1 = np.argmax(out == 1, axis=1)
    edges = np.linspace(0, length, min(length, VALUE_BINS) + 1).round().astype(np.int64)
    counts = np.histogram(pos0, bins=edges)[0]
    stat, p = chi2_uniform(counts, np.diff(edges))
    checks.append(Check("shuffler: label 0 at a uniform position", p, True,
                        detail=f"chi2 = {stat:.1f} on {counts.size - 1} dof"))
    adjacent = int((pos1 == pos0 + 1).sum())
    checks.append(Check("shuffler: labels 0, 1 adjacent at rate 1/L", binomial_test(
        adjacent, rows, 1.0 / length), True, detail=f"{adjacent} of {rows}, expected "
        f"{rows / length:.1f}"))
    return checks


def smallest_refuted(refuted) -> float:
    """The smallest ``k`` in ``[1, REACH_MAX]`` with ``refuted(k)`` (to 1%), or ``inf``."""
    if refuted(1.0):
        return 1.0
    if not refuted(REACH_MAX):
        return math.inf
    lo, hi = 1.0, REACH_MAX
    while hi / lo > 1.01:
        mid = math.sqrt(lo * hi)
        lo, hi = (lo, mid) if refuted(mid) else (mid, hi)
    return hi


# ----------------------------------------------------------------- who audits which class
#: class -> the function ``(epsilon) -> list of Channel`` its family registered
_REGISTERED: dict = {}


def channels_of(*classes: type) -> Callable:
    """Decorator: the function ``(epsilon) -> list of Channel`` gives the channels of ``classes``.

    A family's ``_channels`` module registers its functions this way (the
    family's ``__init__`` imports it), and each class answers
    ``channels(epsilon)`` with :func:`registered_channels`. The registration
    is by exact class: a subclass has its own channels, or none.
    """
    def register(fn: Callable) -> Callable:
        for cls in classes:
            old = _REGISTERED.get(cls)
            if old is not None and (old.__module__, old.__qualname__) != (fn.__module__,
                                                                           fn.__qualname__):
                raise ValueError(f"the channels of {cls.__name__} are registered twice: by "
                                 f"{old.__module__}.{old.__qualname__} and by "
                                 f"{fn.__module__}.{fn.__qualname__}")
            _REGISTERED[cls] = fn
        return fn
    return register


def registered_channels(cls: type, epsilon: float = 1.0) -> list:
    """The channels and negative controls registered for ``cls`` at claimed ``epsilon`` (none: ``[]``)."""
    fn = _REGISTERED.get(cls)
    return [] if fn is None else list(fn(epsilon))
