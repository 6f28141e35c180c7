"""Padded relation sampling (P-RS) with a frequency oracle (paper 000, section 7.1).

Each identity pads its relation set to exactly ``k`` items with public dummy
symbols outside ``[p]`` - slot ``u`` of an identity holding ``m`` pairs is
its ``u``-th pair for ``u < m`` and the dummy ``p + u`` otherwise - samples
one slot uniformly and reports the item through a frequency oracle (GRR,
OLH or Hadamard response, :mod:`fastldp.oracles.frequency`) at its
own ``eps_i`` over ``D = p + k`` symbols. Since every held pair is sampled
with probability ``1/k``, ``k * c_i(e)`` is unbiased for ``A_i(e)``. The
server combines identities with the variance-optimal weights
``lambda_i = 1 / sigma_i^2`` (equal weights for equal budgets), multiplies by
``k``, drops the dummies and decodes.

Streaming: :meth:`PaddedRelationSampling.estimate` is
``finalize(partial(...))``. A partial holds the oracle's exact weighted sums
(:meth:`fastldp.oracles.FrequencyOracle.weighted_sums` with
``lambda_i = 1 / sigma_i^2``) and the exact ``sum_i lambda_i``, so a decode
split into chunks and merged in any order is bit-identical to the one-shot
decode.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Optional, Sequence

import numpy as np
from numpy.typing import ArrayLike

from .._random import as_generator, resolve_identities
from .._sanitize import SanitizationReport
from .._validation import check_choice
from ..oracles._base import partial_report, report_counts, scalar_sum
from ..oracles.frequency import ORACLES
from ..streaming import Partial, check_partial
from ..streaming import chunk_length as _chunk_length
from .base import (RelationMechanism, RelationsLike, RngLike, keyword_epsilons,
                   privacy_of_budgets, privacy_of_extremes)
from .decoders import Decoded
from .projection import check_support_rule, project

__all__ = ["PaddedRelationSampling"]


class PaddedRelationSampling(RelationMechanism):
    """Padded relation sampling with a native frequency oracle.

    Parameters
    ----------
    shape : tuple (d1, d2)
    k : int
        Public cap on the set size (and the padding length).
    s : int
        Sparsity of the decoded estimate.
    oracle : {"grr", "olh", "hr"}
        Generalized randomized response, optimized local hashing
        (``g_i = round(e^eps_i) + 1``) or Hadamard response.
    epsilon : float or None
        The budget of every identity where a call passes no ``epsilons``
        (default ``None``: every call passes its personal budgets); within
        the oracle's limits.
    items_per_user, sparsity : int, optional
        The names every family shares for ``k`` and ``s`` (pass one of each
        pair).
    codebook_seed, cap_policy, n_threads, support_rule
        As for :class:`fastldp.JPRS`.

    References
    ----------
    .. [1] Paper 000, section 7.1 (P-RS-GRR, P-RS-OLH, P-RS-HR).
    .. [2] T. Wang et al., "Locally differentially private protocols for
       frequency estimation", USENIX Security 2017 (GRR, OLH).
    .. [3] J. Acharya, Z. Sun, H. Zhang, "Hadamard response: estimating
       distributions privately, efficiently, and with little communication",
       AISTATS 2019.

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.PaddedRelationSampling(shape=(3, 3), items_per_user=1, sparsity=2,
    ...                                       oracle="grr", epsilon=3.0, codebook_seed=1)
    >>> sets = [np.array([[0, 0]])] * 300 + [np.array([[2, 1]])] * 100
    >>> reports = mech.privatize(sets, rng=0)
    >>> est = mech.estimate(reports)
    >>> est.estimate.shape, est.n, str(est.privacy)
    ((3, 3), 400, 'epsilon=3 (local DP, per user)')
    """

    def __init__(self, *, shape: Sequence[int], k: Optional[int] = None,
                 s: Optional[int] = None, items_per_user: Optional[int] = None,
                 sparsity: Optional[int] = None, oracle: str = "hr",
                 epsilon: Optional[float] = None, codebook_seed: Optional[int] = None,
                 cap_policy: str = "raise", n_threads: Optional[int] = None,
                 support_rule: str = "raw") -> None:
        super().__init__(shape=shape, k=k, s=s, items_per_user=items_per_user,
                         sparsity=sparsity, epsilon=epsilon, codebook_seed=codebook_seed,
                         cap_policy=cap_policy, n_threads=n_threads)
        owner = type(self).__name__
        self.support_rule = check_support_rule(support_rule, owner)
        self.oracle_name = check_choice(oracle, "oracle", owner, tuple(ORACLES))
        self.domain_size = self.p + self.k
        # the oracle has no budget of its own: P-RS resolves every call's budgets
        self.oracle = ORACLES[self.oracle_name](domain_size=self.domain_size, epsilon=None,
                                                codebook_seed=self.codebook_seed,
                                                n_threads=self.n_threads)
        if self.epsilon is not None:
            self.oracle.check_budgets(np.array([self.epsilon]), "epsilon", owner)
        self.family = "P-RS-" + self.oracle_name.upper()

    def _repr_extra(self) -> str:
        return f", oracle={self.oracle_name!r}"

    def payload_bits(self, epsilons: ArrayLike) -> np.ndarray:
        """The oracle's report size, ``ceil(log2(outputs))`` bits per identity."""
        eps = np.atleast_1d(np.asarray(epsilons, dtype=np.float64))
        return np.ceil(np.log2(self.oracle.output_sizes(eps))).astype(np.int64)

    # ------------------------------------------------------------ client
    def sample_items(self, relations: RelationsLike, *,
                     identities: Optional[ArrayLike] = None, rng: RngLike = None) -> np.ndarray:
        """Each identity's padded-and-sampled item in ``[0, p + k)``."""
        gen = as_generator(rng, f"{type(self).__name__}.sample_items",
                           purpose="sampling")
        sets = self.relation_sets(relations, identities=identities)
        sizes = sets.sizes
        slot = gen.integers(0, self.k, sets.n)
        held = slot < sizes
        safe = sets.indptr[:-1] + np.where(held, slot, 0)
        safe = np.minimum(safe, max(sets.pairs.shape[0] - 1, 0))
        pairs = sets.pairs[safe] if sets.pairs.shape[0] else np.zeros(sets.n, dtype=np.int64)
        return np.where(held, pairs, self.p + slot).astype(np.int64)

    def _budgets(self, epsilons, n: int, owner: Optional[str] = None) -> np.ndarray:
        # the oracle's limits too (eps <= 700, p - q > 0 in double precision), on the
        # client and on every server path (estimate, decode, attacks)
        owner = owner or type(self).__name__
        eps = super()._budgets(epsilons, n, owner)
        self.oracle.check_budgets(eps, "epsilons", owner)
        return eps

    @keyword_epsilons
    def privatize(self, relations: RelationsLike, *, epsilons: Optional[ArrayLike] = None,
                  identities: Optional[ArrayLike] = None, rng: RngLike = None) -> np.ndarray:
        """Sample one padded item per identity and report it through the oracle.

        Parameters
        ----------
        relations : scipy.sparse matrix (n, d1*d2), sequence of (m_i, 2) int arrays, or long format
            Each identity's relation set, at most ``k`` pairs. The long format
            (:mod:`fastldp.relations.relation_sets`) is a tuple of three 1-d
            int arrays ``(identity, row, col)``, a pandas DataFrame, pyarrow
            Table or dict of arrays with those columns, or the path of a
            Parquet file with them; its clients are the distinct identities
            in ascending order, keyed by those values (``n`` of them).
        epsilons : float or array_like of float, shape (n,), optional
            Personal budgets within the oracle's limits; default: the
            constructor's ``epsilon``. Passing them positionally is
            deprecated.
        identities : array_like of int, optional
            Distinct public identities keying the codebook (default ``0..n-1``,
            or the long format's distinct identities). With the long format,
            they define the population and its order: identities without
            lines report an empty set. The server must use the same identities.
        rng : None, int, SeedSequence or Generator
            Source of the client's private coins.

        Returns
        -------
        numpy.ndarray of int64
            One oracle output per identity.
        """
        owner = f"{type(self).__name__}.privatize"
        gen = as_generator(rng, owner)
        sets = self.relation_sets(relations, identities=identities)
        eps = self._budgets(epsilons, sets.n, owner)
        ids = self._client_identities(sets, identities)
        items = self.sample_items(sets, rng=gen)
        return self.oracle.perturb(items, eps, ids, gen)

    # ------------------------------------------------------------ server
    def sanitize(self, reports: ArrayLike, eps: np.ndarray, identities: np.ndarray,
                 owner: str) -> tuple[np.ndarray, SanitizationReport]:
        return self.oracle.sanitize(reports, eps, identities, owner)

    def _linear_sums(self, clean, eps, identities) -> dict:
        """The exact sums of the global linear estimate over these reports."""
        lam = self.oracle.weights(eps)
        support, offset = self.oracle.weighted_sums(clean, eps, identities, lam)
        return {"support": support, "offset": offset, "lam_sum": scalar_sum(lam)}

    def _linear_value(self, sums) -> np.ndarray:
        """``k / sum(lambda) * (weighted counts)[:p]`` from the exact sums."""
        raw = self.oracle.weighted_counts(sums["support"], sums["offset"])
        return (self.k / float(sums["lam_sum"].value()[0])) * raw[: self.p]

    def linear_estimate(self, clean: np.ndarray, eps: np.ndarray, identities: np.ndarray,
                        members: Optional[np.ndarray] = None) -> np.ndarray:
        """The weighted, unbiased linear estimate over ``members`` (length p), from exact sums."""
        if members is not None:
            clean, eps, identities = clean[members], eps[members], identities[members]
        return self._linear_value(self._linear_sums(clean, eps, identities))

    @keyword_epsilons
    def estimate(self, reports: ArrayLike, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> Decoded:
        """Global decoder: sanitize, weighted inversion, ``P_{s,k}`` projection.

        Exactly ``finalize(partial(reports, epsilons, identities))`` (the
        same bits; only :attr:`Decoded.privacy` knows more here, the median
        of personal budgets), and the same result as ``decode(...,
        decoders=("global",))["global"]``.

        Parameters
        ----------
        reports : array_like, shape (n,)
            One oracle output per committed identity (``n >= 1``); malformed
            reports are sanitized and counted.
        epsilons : float or array_like of float, shape (n,), optional
            Committed budgets; default: the constructor's ``epsilon``.
            Passing them positionally is deprecated.
        identities : array_like of int, optional
            The identities the clients used (default ``0..n-1``).

        Returns
        -------
        fastldp.relations.decoders.Decoded
        """
        owner = f"{type(self).__name__}.estimate"
        n = self._report_count(reports, owner)
        eps = self._budgets(epsilons, n, owner)
        result = self.finalize(self._partial(reports, eps, identities, owner))
        return replace(result, privacy=privacy_of_budgets(eps))

    # ------------------------------------------------------------ streaming
    def stream_params(self) -> dict:
        """The public parameters a partial is bound to (JSON values).

        ``PaddedRelationSampling(**mech.stream_params())`` builds an
        equivalent server (``shape``, ``k``, ``s``, ``oracle``,
        ``codebook_seed``, ``support_rule``; not ``cap_policy``, a client
        rule, nor ``n_threads``).
        """
        return {"shape": list(self.shape), "k": self.k, "s": self.s, "oracle": self.oracle_name,
                "codebook_seed": self.codebook_seed, "support_rule": self.support_rule}

    def partial(self, reports: ArrayLike, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> Partial:
        """The exact, mergeable state of :meth:`estimate` over a chunk of reports.

        Parameters
        ----------
        reports : array_like, shape (n,)
            The chunk's oracle outputs (``n`` may be 0); sanitized and
            counted as in :meth:`estimate`.
        epsilons : float or array_like of float, shape (n,), optional
            The chunk's committed budgets (default: the constructor's
            ``epsilon``).
        identities : array_like of int, optional
            The chunk's identities. The default ``0 .. n-1`` is right only
            for a first chunk: pass them for every other chunk.

        Returns
        -------
        fastldp.streaming.Partial
            Mechanism :attr:`family` (``"P-RS-GRR"``, ``"P-RS-OLH"``,
            ``"P-RS-HR"``), parameters :meth:`stream_params`. Holds, as
            :class:`~fastldp.streaming.ExactSum` s, the oracle's weighted
            statistic with ``lambda_i = 1 / sigma_i^2`` over the ``p + k``
            padded symbols (``"support"``, per symbol; per Hadamard column
            for HR) and its constant (``"offset"``), both from
            :meth:`fastldp.oracles.FrequencyOracle.weighted_sums`, and
            ``sum_i lambda_i`` (``"lam_sum"``); the integer counts of
            reports by sanitization outcome, the ``"wrong_dtype"`` flag and
            the smallest and largest budget (``"eps"``, for the result's
            :attr:`~Decoded.privacy`). ``O(p + k)`` memory whatever ``n``.
        """
        return self._partial(reports, epsilons, identities, f"{type(self).__name__}.partial")

    def _partial(self, reports, epsilons, identities, owner) -> Partial:
        n = _chunk_length(reports, owner)
        eps = self._budgets(epsilons, n, owner)
        ids = resolve_identities(identities, n, owner)
        clean, report = self.sanitize(reports, eps, ids, owner)
        return Partial(self.family, self.stream_params(),
                       sums=self._linear_sums(clean, eps, ids),
                       counts=report_counts(report),
                       minima={"eps": float(eps.min()) if n else None},
                       maxima={"eps": float(eps.max()) if n else None},
                       flags={"wrong_dtype": report.wrong_dtype})

    def merge(self, a: Partial, b: Partial) -> Partial:
        """Merge the partials of two chunks (exact, order-free; neither input changes).

        Raises ``ValueError`` when either belongs to another mechanism or
        other parameters.
        """
        owner = f"{type(self).__name__}.merge"
        check_partial(a, self.family, self.stream_params(), owner)
        check_partial(b, self.family, self.stream_params(), owner)
        return a.merge(b)

    def finalize(self, partial: Partial) -> Decoded:
        """Turn a (merged) partial into the global decode of all its reports.

        Rounds the exact sums once (``support + offset``; HR transforms the
        rounded column sums), scales by ``k / sum(lambda)``, drops the
        dummies and projects onto ``M_{s,k}``: a deterministic function of
        the partial.

        Parameters
        ----------
        partial : fastldp.streaming.Partial
            From :meth:`partial` or :meth:`merge` of this mechanism.

        Returns
        -------
        fastldp.relations.decoders.Decoded
            As :meth:`estimate`.
        """
        owner = f"{type(self).__name__}.finalize"
        check_partial(partial, self.family, self.stream_params(), owner)
        if set(partial.sums) != {"support", "offset", "lam_sum"}:
            raise ValueError(f"{owner}: the partial holds the sums {sorted(partial.sums)}, not "
                             f"those of a {self.family} partial")
        if partial.counts["n"] < 1:
            raise ValueError(f"{owner}: the partial holds no reports; a decode needs at least one")
        v = self._linear_value(partial.sums)
        m, _ = project(v, self.s, float(self.k), self.support_rule)
        privacy = privacy_of_extremes(partial.minima.get("eps"), partial.maxima.get("eps"))
        return Decoded(m.reshape(self.shape), v.reshape(self.shape), "global", 1, -1,
                       partial_report(partial), n=int(partial.counts["n"]), privacy=privacy)

    # ------------------------------------------------------------ attacks
    def _scale(self, eps, corrupted):
        lam = self.oracle.weights(eps)
        return self.k * lam[corrupted] / float(lam.sum())

    def best_response(self, eps: np.ndarray, corrupted: np.ndarray, identities: np.ndarray,
                      items: ArrayLike, item_weights: ArrayLike,
                      rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray]:
        outputs, scores = self.oracle.best_response(
            eps[corrupted], identities[corrupted], np.asarray(items, dtype=np.int64),
            np.asarray(item_weights, dtype=np.float64), rng)
        return outputs, self._scale(eps, corrupted) * scores

    def random_response(self, eps: np.ndarray, corrupted: np.ndarray, identities: np.ndarray,
                        rng: np.random.Generator) -> np.ndarray:
        return self.oracle.random_outputs(eps[corrupted], identities[corrupted], rng)

    def response_objective(self, eps: np.ndarray, corrupted: np.ndarray, identities: np.ndarray,
                           outputs: ArrayLike, items: ArrayLike,
                           item_weights: ArrayLike) -> np.ndarray:
        scores = self.oracle.response_scores(
            eps[corrupted], identities[corrupted], np.asarray(items, dtype=np.int64),
            np.asarray(item_weights, dtype=np.float64), np.asarray(outputs, dtype=np.int64))
        return self._scale(eps, corrupted) * scores
