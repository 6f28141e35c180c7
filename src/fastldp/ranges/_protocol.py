"""What every range mechanism shares: levels of oracles, the report layout, exact partials, the protocol.

A range mechanism reports one or more *levels*: level ``l`` partitions the
domain ``[0, D)`` into ``size_l`` consecutive nodes of ``span_l`` values
each, and a user's report at that level is the report of a frequency oracle
of :mod:`fastldp.oracles` on the node that holds the user's value. The flat
baseline has one level (the values themselves); a hierarchy has one per
depth of its tree.

Which oracle reports a level
----------------------------
``oracle="auto"`` takes, per level, the oracle of least variance (of a
count no user holds, :meth:`FrequencyOracle.variances`) among those whose
cost fits: GRR (always), OUE while the level has at most
:data:`OUE_MAX_BITS` nodes (a report of ``size_l`` bits; beyond, a user
sends kilobytes), and Hadamard response (reports of one symbol, decoded by
one fast Walsh-Hadamard transform, ``O(n + size_l log size_l)``). OLH is
never chosen automatically: its variance is OUE's (up to the rounding of
its hash range), and its decode evaluates ``n_l x size_l`` hashes (2 s for
``10^5`` reports over 4,096 nodes on one core). ``oracle="grr"``, ``"oue"``,
``"olh"`` or ``"hr"`` uses that oracle at every level.

Reports
-------
One report is one int64 row. A level's *payload* is one column for the
symbol oracles (GRR, OLH, HR) and ``ceil(size_l / 64)`` columns for OUE
(its bits, packed little-endian into 64-bit words). With users split by
level (``split="users"``) the row is ``[level, payload, 0, ...]``, padded
to the widest payload; with the budget split (``split="budget"``, and the
flat baseline) it is every level's payload side by side.

Partials
--------
The integer hit counts of every level's oracle statistic, in one
:class:`~fastldp.streaming.ExactSum`, and the number of reports of each
level (``m<l>``), with the sanitization counts: partials merge exactly,
in any order, bit for bit.
"""

from __future__ import annotations

from typing import Any, Optional

import numpy as np

from .._random import UINT64_MAX, as_generator, resolve_codebook_seed, resolve_identities
from .._sanitize import SanitizationReport
from .._validation import check_float, check_int, param_error
from ..oracles import GRR, OLH, OUE, HadamardResponse
from ..oracles._sanitizing import classify_integers
from ..protocol import FixedBudgetMembers, ReportSchema
from ..streaming import ExactSum, Partial
from ._sanitizing import (REASONS, bytes_to_words, level_payloads, partial_sanitization,
                          public_payloads, report_counts, report_rows, tally, words_to_bytes)

__all__ = ["ORACLES", "OUE_MAX_BITS", "EPSILON_MAX", "MAX_DOMAIN", "LevelMechanism",
           "level_oracle"]

#: the oracles a level can be reported through, by the name ``oracle=`` takes
ORACLES = {"grr": GRR, "oue": OUE, "olh": OLH, "hr": HadamardResponse}
#: the most nodes a level reported through OUE has under ``oracle="auto"`` (a 128-byte report)
OUE_MAX_BITS = 1024
EPSILON_MAX = 700.0
#: the largest domain (the padded leaves of a hierarchy stay below the oracles' 2^31 - 1)
MAX_DOMAIN = 1 << 30
#: odd constant spacing the public seeds of the levels' oracles (golden ratio, 64 bits)
_SEED_STEP = 0x9E3779B97F4A7C15


def level_oracle(choice: str, size: int, epsilon: float, seed: int):
    """The oracle that reports a level of ``size`` nodes at ``epsilon`` (module docstring rule)."""
    if choice != "auto":
        return ORACLES[choice](domain_size=size, epsilon=epsilon, codebook_seed=seed, n_threads=1)
    eps = np.array([epsilon])
    best, best_var = None, np.inf
    for name in ("grr", "oue", "hr"):
        if name == "oue" and size > OUE_MAX_BITS:
            continue
        oracle = ORACLES[name](domain_size=size, epsilon=epsilon, codebook_seed=seed, n_threads=1)
        var = float(oracle.variances(eps)[0])
        if var < best_var:
            best, best_var = oracle, var
    return best


def oracle_name(oracle) -> str:
    """The ``oracle=`` name of a level's oracle object."""
    return next(k for k, cls in ORACLES.items() if type(oracle) is cls)


class LevelMechanism(FixedBudgetMembers):
    """The shared machinery of :class:`FlatRange` and :class:`HierarchicalHistogram`.

    Subclasses set, in ``__init__``, ``domain_size``, ``epsilon``,
    ``codebook_seed``, ``split`` and call :meth:`_build_levels` with the
    levels' sizes and spans; they implement :meth:`stream_params` and
    :meth:`_result` (the estimate from the levels' counts).
    """

    _budget_note = "range reports have one budget"

    kind = "distribution"
    labels = None
    domain_size: int
    epsilon: float
    codebook_seed: int
    split: str

    # ------------------------------------------------------------ construction
    def _check_common(self, owner: str, epsilon: Any, domain_size: Any, oracle: Any,
                      codebook_seed: Any) -> None:
        self.domain_size = check_int(domain_size, "domain_size", owner, low=2, high=MAX_DOMAIN)
        self.epsilon = check_float(epsilon, "epsilon", owner, low=0.0, high=EPSILON_MAX,
                                   high_open=False)
        if not isinstance(oracle, str) or oracle not in ("auto", *ORACLES):
            raise param_error("oracle", owner, f"one of {['auto', *ORACLES]}", oracle,
                              TypeError if not isinstance(oracle, str) else ValueError)
        self.oracle = oracle
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)

    def level_seed(self, level: int) -> int:
        """The public seed of level ``level``'s oracle (0-based)."""
        return (self.codebook_seed + (level + 1) * _SEED_STEP) & UINT64_MAX

    def _build_levels(self, sizes: list, spans: list, weights: Optional[np.ndarray] = None) -> None:
        """Levels of ``sizes`` nodes spanning ``spans`` values each, and their oracles.

        ``weights`` (summing to 1; ``None``: uniform) is the share of the
        users each level hears (users split) or of the budget it gets
        (budget split).
        """
        self.level_sizes = [int(s) for s in sizes]
        self.level_spans = [int(s) for s in spans]
        self.n_levels = len(sizes)
        L = self.n_levels
        self.level_weights = np.full(L, 1.0 / L) if weights is None else np.asarray(weights)
        self._uniform_levels = weights is None
        if self.split == "users":
            self.level_epsilons = [self.epsilon] * L
        elif weights is None:
            self.level_epsilons = [self.epsilon / L] * L
        else:
            self.level_epsilons = [self.epsilon * float(w) for w in self.level_weights]
        self.oracles = [level_oracle(self.oracle, s, self.level_epsilons[li], self.level_seed(li))
                        for li, s in enumerate(self.level_sizes)]
        self.level_oracles = tuple(oracle_name(o) for o in self.oracles)
        self.unary = [isinstance(o, OUE) for o in self.oracles]
        self.widths = [(s + 63) // 64 if u else 1 for s, u in zip(self.level_sizes, self.unary)]
        self.output_sizes = [0 if u else int(o.output_sizes(np.array([e]))[0])
                             for o, u, e in zip(self.oracles, self.unary, self.level_epsilons)]
        self.stat_sizes = [o.K if isinstance(o, HadamardResponse) else o.domain_size
                           for o in self.oracles]
        self.stat_offsets = np.concatenate([[0], np.cumsum(self.stat_sizes)]).astype(np.int64)
        if self.split == "users":
            self.row_width = 1 + max(self.widths)
            self.payload_starts = [1] * self.n_levels
        else:
            self.row_width = int(sum(self.widths))
            self.payload_starts = [int(v) for v in np.concatenate([[0], np.cumsum(self.widths)])[:-1]]

    def __repr__(self) -> str:
        params = ", ".join(f"{k}={v!r}" for k, v in self.stream_params().items())
        return f"{type(self).__name__}({params})"

    # ------------------------------------------------------------ protocol questions
    def stream_params(self) -> dict:  # pragma: no cover - abstract
        raise NotImplementedError

    @property
    def report_schema(self) -> ReportSchema:
        """int64 rows of :attr:`row_width` columns; every report has the budget ``epsilon``."""
        return ReportSchema(np.int64, (self.row_width,), fixed_epsilon=self.epsilon)

    def example_data(self, n: int, rng: np.random.Generator) -> np.ndarray:
        """``n`` values (int64) in ``[0, D)``: a normal around ``D / 3`` with sd ``D / 8``, clipped."""
        n = check_int(n, "n", f"{type(self).__name__}.example_data", low=0)
        D = self.domain_size
        x = np.floor(rng.normal(D / 3.0, D / 8.0, n))
        return np.clip(x, 0, D - 1).astype(np.int64)

    # ------------------------------------------------------------ client
    def check_values(self, values: Any, owner: str) -> np.ndarray:
        """``values`` as int64 in ``[0, D)``, or raise naming the first bad entry."""
        D = self.domain_size
        expected = f"a 1-d array of integers in [0, {D})"
        try:
            arr = np.asarray(values)
        except (TypeError, ValueError):
            raise param_error("values", owner, expected, values, TypeError) from None
        if arr.ndim != 1:
            raise param_error("values", owner, expected, f"an array of shape {arr.shape}")
        if arr.size == 0:
            return np.zeros(0, dtype=np.int64)
        if arr.dtype.kind == "f":
            finite = np.isfinite(arr)
            bad = ~(finite & (np.floor(np.where(finite, arr, 0.5)) == arr))
            if bad.any():
                i = int(np.flatnonzero(bad)[0])
                raise ValueError(f"The 'values' parameter of {owner} must be {expected}. "
                                 f"Got {arr[i]!r} at index {i} instead.")
        elif arr.dtype.kind not in "iu":
            raise param_error("values", owner, expected, f"an array of dtype {arr.dtype}",
                              TypeError)
        bad = ~((arr >= 0) & (arr < D))
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            raise ValueError(f"The 'values' parameter of {owner} must be {expected}. "
                             f"Got {arr[i]!r} at index {i} instead.")
        return np.ascontiguousarray(arr, dtype=np.int64)

    def privatize(self, values: Any, *, epsilons: Any = None, identities: Any = None,
                  rng: Any = None) -> np.ndarray:
        """Privatize one value in ``[0, D)`` per user.

        Parameters
        ----------
        values : array_like of int, shape (n,)
        epsilons : None or the fixed epsilon
            Budgets are fixed (keyword-only).
        identities : array_like of int, optional
            Distinct identities (they key OLH's hashes); default ``0 .. n-1``.
        rng : None, int, SeedSequence or Generator
            Private randomness (the level a user reports, and the oracles' noise).

        Returns
        -------
        numpy.ndarray of int64, shape (n, row_width)
            The reports (layout in :mod:`fastldp.ranges._protocol`).
        """
        owner = f"{type(self).__name__}.privatize"
        self._check_epsilons(epsilons, owner)
        x = self.check_values(values, owner)
        n = x.shape[0]
        ids = resolve_identities(identities, n, owner)
        gen = as_generator(rng, owner)
        out = np.zeros((n, self.row_width), dtype=np.int64)
        groups: list[Optional[np.ndarray]] = [None] * self.n_levels
        if self.split == "users":
            level: np.ndarray
            if self._uniform_levels:
                level = np.asarray(gen.integers(0, self.n_levels, n))
            else:
                edges = np.cumsum(self.level_weights)[:-1]
                level = np.asarray(np.searchsorted(edges, gen.random(n), side="right"))
            out[:, 0] = level
            groups = self._level_rows(out)
        for li, rows in enumerate(groups):
            nodes = x // self.level_spans[li] if rows is None else x[rows] // self.level_spans[li]
            who = ids if rows is None else ids[rows]
            oracle = self.oracles[li]
            eps = np.array([self.level_epsilons[li]])
            payload = oracle.perturb(nodes, eps, who if oracle.uses_identities else None, gen)
            self._write_payload(out, rows, li, payload)
        return out

    def _write_payload(self, out: np.ndarray, rows: Optional[np.ndarray], li: int,
                       payload: np.ndarray) -> None:
        start = self.payload_starts[li]
        sel = slice(None) if rows is None else rows
        if self.unary[li]:
            out[sel, start:start + self.widths[li]] = bytes_to_words(payload, self.widths[li])
        else:
            out[sel, start] = payload

    # ------------------------------------------------------------ server
    def partial(self, reports: Any, epsilons: Any = None, identities: Any = None) -> Partial:
        """The exact state of :meth:`estimate` over a chunk of reports.

        Parameters
        ----------
        reports : array_like, shape (n, row_width)
            The chunk's reports (from :meth:`privatize`); malformed reports
            are replaced and counted (:mod:`fastldp.ranges._sanitizing`).
        epsilons : None or the fixed epsilon
        identities : array_like of int, optional
            The chunk's identities (they key OLH's hashes and the public
            replacements); default ``0 .. n-1``, right only for a first chunk.

        Returns
        -------
        fastldp.streaming.Partial
            ``hits`` (an :class:`~fastldp.streaming.ExactSum` of integers:
            every level's oracle statistic, level 0 first), ``m<l>`` (the
            reports of level ``l``), ``n`` and the sanitization counts.
        """
        owner = f"{type(self).__name__}.partial"
        self._check_epsilons(epsilons, owner)
        expected = f"an array of int64 reports of shape (n, {self.row_width})"
        arr, wrong = report_rows(reports, self.row_width, owner, expected)
        ids = resolve_identities(identities, arr.shape[0], owner)
        clean, report, groups = self._sanitize(arr, wrong, ids)
        hits, about = self._hits(clean, ids, groups)
        total = ExactSum(int(self.stat_offsets[-1]))
        total.add(hits.astype(np.float64))  # integers below 2^53: exact
        counts = report_counts(report)
        counts.update({f"m{li}": int(m) for li, m in enumerate(about)})
        return Partial(type(self).__name__, self.stream_params(), sums={"hits": total},
                       counts=counts, flags={"wrong_dtype": report.wrong_dtype})

    def _level_rows(self, clean: np.ndarray) -> list:
        """The rows of each level (users split; ``None`` each: every row), by one counting sort."""
        if self.split != "users":
            return [None] * self.n_levels
        level = clean[:, 0].astype(np.int16)  # a narrow key: numpy sorts it by radix
        order = np.argsort(level, kind="stable")
        bounds = np.concatenate([[0], np.cumsum(np.bincount(level, minlength=self.n_levels))])
        return [order[bounds[li]:bounds[li + 1]] for li in range(self.n_levels)]

    def _hits(self, clean: np.ndarray, ids: np.ndarray, groups: Optional[list] = None) -> tuple:
        parts, about = [], []
        groups = self._level_rows(clean) if groups is None else groups
        for li, rows in enumerate(groups):
            start, width = self.payload_starts[li], self.widths[li]
            who = ids if rows is None else ids[rows]
            oracle = self.oracles[li]
            if self.unary[li]:
                words = clean[:, start:start + width] if rows is None else clean[rows, start:start + width]
                payload = words_to_bytes(words, oracle.n_bytes)
            else:
                payload = np.ascontiguousarray(clean[:, start] if rows is None else clean[rows, start])
            if payload.shape[0]:
                hits = np.asarray(oracle._hits(payload, who), dtype=np.int64)
            else:
                hits = np.zeros(self.stat_sizes[li], dtype=np.int64)
            parts.append(hits)
            about.append(payload.shape[0])
        return np.concatenate(parts), about

    def sanitize(self, arr: np.ndarray, wrong: np.ndarray, ids: np.ndarray) -> tuple:
        """Legal reports from ``arr`` and the count of what was replaced, by reason.

        A row of another length, or with an entry that is not an integer,
        is replaced whole; a row naming no level (users split) too; a
        level's payload that is no output of its oracle is replaced by the
        oracle's public uniform output keyed by (the level's seed,
        identity). A row counts once, under its first reason.
        """
        out, report, _ = self._sanitize(arr, wrong, ids)
        return out, report

    def _sanitize(self, arr: np.ndarray, wrong: np.ndarray, ids: np.ndarray) -> tuple:
        """:meth:`sanitize`, and the rows of each level (what the hits read next)."""
        n = arr.shape[0]
        if arr.dtype == np.int64:
            values, wrong_dtype = arr, False
            numeric_row = integral_row = np.ones(n, dtype=bool)
        else:
            values, numeric, integral, wrong_dtype = classify_integers(arr)
            numeric_row, integral_row = numeric.all(axis=1), integral.all(axis=1)
        out = np.ascontiguousarray(values, dtype=np.int64)
        copied = out is not arr  # the caller's array is copied before the first repair only
        whole = wrong | ~numeric_row | ~integral_row
        bad_level = np.zeros(n, dtype=bool)
        if self.split == "users":
            level = out[:, 0]
            bad_level = ~whole & ~((level >= 0) & (level < self.n_levels))
        replaced = whole | bad_level
        illegal = np.zeros(n, dtype=bool)
        if replaced.any():
            if not copied:
                out, copied = out.copy(), True
            rows = np.flatnonzero(replaced)
            out[rows] = public_payloads(self, ids[rows])
        groups = self._level_rows(out)
        for li, rows in enumerate(groups):
            legal = self._legal_payload(out, li, rows)
            bad = ~legal
            if rows is not None:
                bad &= ~replaced[rows]
            else:
                bad &= ~replaced
            if bad.any():
                fix = np.flatnonzero(bad) if rows is None else rows[bad]
                if not copied:
                    out, copied = out.copy(), True
                illegal[fix] = True
                start = self.payload_starts[li]
                if self.split == "users":
                    out[fix, 1:] = 0
                out[fix, start:start + self.widths[li]] = level_payloads(self, li, ids[fix])
        masks = {"wrong_width": wrong, "non_numeric": ~numeric_row,
                 "non_integer": ~integral_row, "bad_index": bad_level, "out_of_range": illegal}
        return out, tally(n, masks, REASONS, wrong_dtype), groups

    def _legal_payload(self, out: np.ndarray, li: int, rows: Optional[np.ndarray]) -> np.ndarray:
        """Which of ``rows`` (``None``: all) hold an output of level ``li``'s oracle (padding 0)."""
        start, width = self.payload_starts[li], self.widths[li]
        m = out.shape[0] if rows is None else rows.shape[0]

        def column(j: int) -> np.ndarray:
            return out[:, j] if rows is None else out[rows, j]

        if self.unary[li]:
            used = self.level_sizes[li] - 64 * (width - 1)
            if used < 64:
                legal = (column(start + width - 1).view(np.uint64) >> np.uint64(used)) == 0
            else:
                legal = np.ones(m, dtype=bool)
        else:
            s = column(start)
            legal = (s >= 0) & (s < self.output_sizes[li])
        if self.split == "users":
            for j in range(start + width, self.row_width):
                legal &= column(j) == 0
        return legal

    def finalize(self, partial: Partial) -> Any:
        """The estimate of a (merged) partial: ``estimate`` of all its reports, bit for bit."""
        self._check_partial(partial, f"{type(self).__name__}.finalize")
        hits = np.rint(partial.sums["hits"].value())
        about = [partial.counts[f"m{li}"] for li in range(self.n_levels)]
        return self._from_hits(hits, about, partial.counts["n"], partial_sanitization(partial))

    def estimate(self, reports: Any, *, epsilons: Any = None, identities: Any = None) -> Any:
        """The estimate of the reports: ``finalize(partial(reports, epsilons, identities))``."""
        return self.finalize(self.partial(reports, epsilons, identities))

    def _from_hits(self, hits: np.ndarray, about: list, n: int,
                   sanitization: Optional[SanitizationReport]) -> Any:
        """Level counts (scaled to all ``n`` users) and their noise variances, then the result."""
        counts, noise, plug_in = [], [], []
        for li, oracle in enumerate(self.oracles):
            eps = np.array([self.level_epsilons[li]])
            h = hits[self.stat_offsets[li]:self.stat_offsets[li + 1]].astype(np.float64)
            m = about[li]
            if m == 0:  # no report: nothing known (no users at all: exactly 0, as the oracles say)
                counts.append(np.zeros(self.level_sizes[li]))
                noise.append(np.inf)
                plug_in.append(np.full(self.level_sizes[li], 0.0 if n == 0 else np.inf))
                continue
            scale = n / m  # users split: level li heard from m of the n users
            c = np.asarray(oracle._counts_from_hits(h, m), dtype=np.float64)
            counts.append(c * scale)
            noise.append(scale**2 * m * float(oracle.variances(eps)[0]))
            plug_in.append(scale**2 * oracle._uniform_variances(m, c))
        return self._result(counts, np.array(noise), plug_in, n, sanitization)

    def _result(self, counts: list, noise: np.ndarray, plug_in: list, n: int,
                sanitization: Optional[SanitizationReport]) -> Any:  # pragma: no cover
        raise NotImplementedError

    # ------------------------------------------------------------ aggregate simulation
    def simulate(self, counts: Any, *, rng: Any = None) -> Any:
        """An exact draw of :meth:`estimate` on users holding ``counts``, without their reports.

        The levels' statistics are drawn from their exact joint law given
        the data: with users split, each value's holders are spread over
        the levels by a multinomial (each user draws a level by the level
        weights, as :meth:`privatize` does); at each level, OUE's hit at node ``v`` is
        ``Binom(c_v, p) + Binom(m - c_v, q)`` and GRR's counts keep
        ``Binom(c_v, p)`` of each node's holders and spread the rest
        uniformly over the other nodes. Then the same decode as
        :meth:`finalize`. What ``N = 2^26`` users would report, in
        milliseconds (bench/ranges_anchor.py); tests/test_ranges.py checks
        its law against :meth:`privatize`.

        Parameters
        ----------
        counts : array_like of int, shape (D,)
            How many users hold each value.
        rng : None, int, SeedSequence or Generator

        Raises
        ------
        NotImplementedError
            For a level reported through OLH or Hadamard response (their
            statistics are not independent across nodes).
        """
        owner = f"{type(self).__name__}.simulate"
        c = np.asarray(counts)
        if c.shape != (self.domain_size,) or c.dtype.kind not in "iu" or (c < 0).any():
            raise param_error("counts", owner, f"an array of {self.domain_size} non-negative "
                              "integers", counts)
        for li, o in enumerate(self.oracles):
            if not isinstance(o, (OUE, GRR)):
                raise NotImplementedError(f"{owner} draws OUE and GRR levels; level {li} is "
                                          f"reported through {type(o).__name__}")
        gen = as_generator(rng, owner)
        c = c.astype(np.int64)
        n = int(c.sum())
        if self.split == "users":
            per = gen.multinomial(c, self.level_weights)  # (D, L): each value's holders
        else:
            per = np.repeat(c[:, None], self.n_levels, axis=1)
        hits, about = [], []
        for li, oracle in enumerate(self.oracles):
            eps = np.array([self.level_epsilons[li]])
            size, span = self.level_sizes[li], self.level_spans[li]
            nodes = np.bincount(np.arange(self.domain_size) // span, weights=per[:, li],
                                minlength=size).astype(np.int64)
            m = int(nodes.sum())
            p, q = (float(v[0]) for v in oracle._pq(eps))
            if isinstance(oracle, OUE):
                h = gen.binomial(nodes, p) + gen.binomial(m - nodes, q)
            else:
                kept = gen.binomial(nodes, p)
                h = kept.copy()
                for v in np.flatnonzero(nodes - kept):
                    moved = gen.multinomial(int(nodes[v] - kept[v]), np.full(size - 1,
                                                                            1.0 / (size - 1)))
                    h += np.insert(moved, v, 0)
            hits.append(h.astype(np.int64))
            about.append(m)
        return self._from_hits(np.concatenate(hits).astype(np.float64), about, n, None)
