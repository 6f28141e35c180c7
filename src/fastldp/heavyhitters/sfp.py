"""Apple's Sequence Fragment Puzzle (SFP): frequent fragments, joined by a hash of the whole item.

An item of ``m`` bits (a byte string of at most ``L <= 8`` bytes, or an
integer; :mod:`fastldp.heavyhitters.items`) is cut into ``P = ceil(m / f)``
fragments of ``f`` bits (``f = 8``, one byte, by default; Apple's two
characters are ``f = 16``; the code is padded with zero bits on the right to
``P f`` bits). Every user sends
one report of two parts, each at budget ``eps / 2`` (``eps``-LDP by
composition; Apple and pure-ldp's ``SFPServer`` split it the same way):

1. **the fragment part**: the user's public position ``t(i) = (h_i P) >> 32``
   (the PEM split of the identity, :func:`~fastldp._kernels._heavy.heavy_groups`)
   and the *record* ``y = (psi(x) << f) | frag_t(x)``: the fragment at position
   ``t`` behind the *puzzle piece* ``psi(x)``, a public hash of the whole item onto
   ``2^a`` values (``a = 8``, Apple's 256, by default), through the HCMS law
   (Apple's Algorithm 3) with the hash functions of position ``t``;
2. **the item part**: the whole item through HCMS with other hash functions.

The HCMS oracle is that of :mod:`fastldp.heavyhitters.treehist`
(:func:`~fastldp.heavyhitters.treehist.hadamard_fo_perturb`: ``R`` hash
functions onto ``T`` columns, one signed Hadamard coefficient, flipped with
probability ``1 / (1 + e^(eps/2))``; :class:`fastldp.oracles.HCMS` is the same
law). Position ``t``'s hash functions are the OLH hashes of identities
``0 .. R-1`` under the seed ``s_t`` derived from ``(codebook_seed, t)``; the
item part uses ``s_P``, the puzzle piece the hash of identity 0 under
``s_{P+1}`` onto ``2^a`` values (:meth:`SFP.derived_seed`).

The server (Apple's, "Learning with Privacy at Scale", Section 4.3):

1. for each position ``t`` it estimates the count of every record
   ``y in [0, 2^(a + f))`` from the position's integer table ``Z_t``
   (``f_t(y) = (n / n_t) r (c sum_j F_t[j, h_j(y)] - n_t / T)``,
   ``F_t = Z_t H_T``, in ``O(R 2^(a+f))`` by
   :func:`~fastldp._kernels._flh.flh_support`) and keeps the ``c k``
   largest (ties: the smaller record), among those at least ``threshold``
   standard deviations of a record nobody holds (``threshold = None``, the
   default, keeps the ``c k`` largest: Apple's "most frequent fragments");
2. for each puzzle piece ``psi`` that has a kept record at every position,
   it assembles every combination of those positions' fragments (the
   puzzle: fragments of one item share its piece). When a piece has more
   than ``max_combinations`` combinations, each position keeps its
   ``floor(max_combinations^(1/P))`` largest fragments of that piece. A
   combination is kept when it is an item (the padding bits are zero) and
   its own puzzle piece is ``psi`` (a check Apple leaves to the second
   sketch, which removes ``1 - 2^-a`` of the false combinations for free);
3. it counts the candidates with the item part over all ``n`` reports
   (``r (c sum_j F[j, h_j(v)] - n / T)``) and returns the top ``k`` (ties:
   the smaller code).

Every table is an integer sum of ``omega``, so any chunking of the reports
decodes bit-identically; the decode makes one pass over the reports.

Sketch size. The hashes are fixed by the seed, so a record that shares a
bucket with a heavy record in ``s`` of the ``R`` rows carries ``s / R`` of
its count (:mod:`fastldp.oracles.cms`, "Moments for a fixed set of hash
functions"). Step 1 ranks all ``2^(a+f)`` records, so such twins compete
with the true fragments: about ``2^(a+f) R / T`` records share one row
(bias ``1/R`` of the heavy count) and ``2^(a+f) C(R, 2) / T^2`` share two.
The defaults ``R = 16``, ``T = 4096`` keep both small for ``a + f = 16``
(256 records at ``1/16``, about 0.5 at ``1/8``); the noise of a count does not
depend on ``R`` or ``T`` (HCMS's variance ``r^2 (c^2 - kappa^2)``). With
``R = 2``, ``T = 1024`` the twins of the most frequent word fill the top of
every position.

Variance of a final count (plug-in, ``f`` clipped to ``[0, n]``):
``r^2 (f (c^2 - 1) + (n - f)(c^2 - 1/T^2 - (1/T)(1 - 1/T) / R))``.

Reports are int64 rows ``(j, l, omega, j', l', omega')`` (fragment part, item
part); the position is public. Illegal parts are replaced as in
:mod:`~fastldp.heavyhitters.treehist` (the triple ``(0, 0, s)``, a public fair sign).

Strings longer than 8 bytes are not supported: the family carries an item in
one ``uint64`` (:mod:`fastldp.heavyhitters.items`).

References
----------
.. [1] Differential Privacy Team, Apple, "Learning with Privacy at Scale",
   Apple Machine Learning Journal 1(8), 2017 (CMS/HCMS and the Sequence
   Fragment Puzzle).
.. [2] G. Cormode, S. Maddock, C. Maple, "Frequency estimation under local
   differential privacy", PVLDB 14(11), 2021 (pure-ldp's SFP).
"""

from __future__ import annotations

import math
from typing import Any, Optional

import numpy as np

from .._kernels._flh import flh_support
from .._kernels._heavy import heavy_groups
from .._sanitize import SanitizationReport
from .._validation import check_float, check_int, param_error
from ..oracles._base import all_legal_report, as_report_array
from ..oracles.cms import c_eps, fwht_rows
from ._base import Chunks, HeavyHitterProtocol
from .treehist import (
    all_legal_rows, fo_hash, hadamard_fo_counts, hadamard_fo_law, hadamard_fo_perturb,
    hadamard_fo_table, sanitize_triples,
)

__all__ = ["SFP"]

#: the most records ``2^(a + f)`` a position enumerates
MAX_RECORD_BITS = 24


class SFP(HeavyHitterProtocol):
    """Apple's Sequence Fragment Puzzle: fragments with a puzzle piece, assembled by the server.

    Parameters
    ----------
    epsilon : float in (0, 700]
        The budget of a report: ``eps / 2`` for the fragment, ``eps / 2`` for the item.
    k : int >= 1, default 32
        Heavy hitters returned (at most).
    fragment_bits : int >= 1, optional
        ``f``, bits per fragment; default ``min(8, item_bits)`` (one byte;
        Apple's two characters are ``fragment_bits=16``).
    puzzle_bits : int >= 1, default 8
        ``a``, bits of the puzzle piece; ``a + f <= 24``.
    c : int >= 1, default 2
        Records kept per position: ``c * k``.
    threshold : float >= 0 or None, default None
        When set, a record is kept only if its count is at least
        ``threshold`` standard deviations of a record nobody holds.
    max_combinations : int >= 1, default 4096
        The most combinations assembled per puzzle piece.
    n_rows : int >= 1, default 16
        ``R``, hash functions of each sketch.
    n_columns : int, a power of two >= 2, default 4096
        ``T``, their range and the Hadamard order (the defaults: module
        docstring, "Sketch size").
    item_bits, item_bytes : int, optional
        The items (:mod:`fastldp.heavyhitters.items`); default 32-bit integers.
    codebook_seed : int or None
        Keys the positions, the puzzle hash and the sketches.
    n_threads : int or None

    Attributes
    ----------
    n_positions : int
        ``P = ceil(item_bits / fragment_bits)``.

    Notes
    -----
    See the module docstring for the protocol, the assembly and the variance.

    Examples
    --------
    >>> sfp = SFP(epsilon=4.0, k=2, item_bytes=4, fragment_bits=8, puzzle_bits=4,
    ...           codebook_seed=3)
    >>> words = [b"cat"] * 9000 + [b"dogs"] * 7000 + [b"ox"] * 200
    >>> result = sfp.estimate(sfp.privatize(words, rng=2))
    >>> result.items
    [b'cat', b'dogs']
    >>> sfp.n_positions
    4
    """

    report_width = 6

    def __init__(self, *, epsilon: float, k: int = 32, fragment_bits: Optional[int] = None,
                 puzzle_bits: int = 8, c: int = 2, threshold: Optional[float] = None,
                 max_combinations: int = 4096, n_rows: int = 16, n_columns: int = 4096,
                 item_bits: Optional[int] = None, item_bytes: Optional[int] = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None) -> None:
        super().__init__(epsilon=epsilon, k=k, item_bits=item_bits, item_bytes=item_bytes,
                         codebook_seed=codebook_seed, n_threads=n_threads)
        owner = "SFP"
        m = self.item_bits
        self.puzzle_bits = check_int(puzzle_bits, "puzzle_bits", owner, low=1,
                                     high=MAX_RECORD_BITS - 1)
        high_f = min(m, MAX_RECORD_BITS - self.puzzle_bits)
        if fragment_bits is None:
            fragment_bits = min(8, high_f)
        self.fragment_bits = check_int(fragment_bits, "fragment_bits", owner, low=1, high=high_f)
        self.c = check_int(c, "c", owner, low=1, high=1 << 16)
        self.threshold = None if threshold is None else check_float(
            threshold, "threshold", owner, low=0.0, high=1e6, low_open=False, high_open=False)
        self.max_combinations = check_int(max_combinations, "max_combinations", owner, low=1,
                                          high=1 << 24)
        self.n_rows = check_int(n_rows, "n_rows", owner, low=1, high=1 << 12)
        self.n_columns = check_int(n_columns, "n_columns", owner, low=2,
                                   high=(1 << 22) // self.n_rows)
        if self.n_columns & (self.n_columns - 1):
            raise param_error("n_columns", owner, "a power of two (the Hadamard order)",
                              n_columns)
        self.n_positions = -(-m // self.fragment_bits)
        self.part_epsilon = self.epsilon / 2.0
        self._seeds = tuple(self.derived_seed(t) for t in range(self.n_positions + 2))

    def _stream_extra(self) -> dict:
        return {"fragment_bits": self.fragment_bits, "puzzle_bits": self.puzzle_bits,
                "c": self.c, "threshold": self.threshold,
                "max_combinations": self.max_combinations, "n_rows": self.n_rows,
                "n_columns": self.n_columns}

    def derived_seed(self, t: int) -> int:
        """``s_t``: the public seed of position ``t`` (``P``: item part, ``P + 1``: puzzle)."""
        words = np.random.SeedSequence([self.codebook_seed, 0x5F9, int(t)]).generate_state(
            2, np.uint32)
        return (int(words[0]) << 32) | int(words[1])

    # ------------------------------------------------------------ items
    @property
    def _pad(self) -> int:
        return self.n_positions * self.fragment_bits - self.item_bits

    def positions_of(self, identities: Any) -> np.ndarray:
        """The public fragment position of each identity (int64 in ``[0, P)``)."""
        return heavy_groups(self.codebook_seed,
                            np.ascontiguousarray(identities, dtype=np.uint64), self.n_positions)

    def puzzle(self, codes: Any) -> np.ndarray:
        """``psi(x)``: the puzzle piece of each item code (int64 in ``[0, 2^a)``)."""
        return fo_hash(self._seeds[self.n_positions + 1], 0, codes, 1 << self.puzzle_bits)

    def fragments(self, codes: Any, positions: Any) -> np.ndarray:
        """``frag_t(x)``: the ``f`` bits at position ``t`` of the zero-padded code (uint64)."""
        codes = np.asarray(codes, dtype=np.uint64) << np.uint64(self._pad)
        f = self.fragment_bits
        shift = ((self.n_positions - 1 - np.asarray(positions, dtype=np.int64)) * f)
        return (codes >> shift.astype(np.uint64)) & np.uint64((1 << f) - 1)

    def records(self, codes: Any, positions: Any) -> np.ndarray:
        """``y = (psi(x) << f) | frag_t(x)`` (uint64)."""
        codes = np.asarray(codes, dtype=np.uint64)
        return ((self.puzzle(codes).astype(np.uint64) << np.uint64(self.fragment_bits))
                | self.fragments(codes, positions))

    # ------------------------------------------------------------ client
    def _privatize_codes(self, codes, identities, rng):
        n = codes.shape[0]
        pos = self.positions_of(identities)
        rec = self.records(codes, pos)
        R, T, e = self.n_rows, self.n_columns, self.part_epsilon
        first = np.empty((n, 3), dtype=np.int64)
        for t in range(self.n_positions):
            mine = np.flatnonzero(pos == t)
            if mine.size:
                first[mine] = hadamard_fo_perturb(self._seeds[t], rec[mine], 0, R, T, e, rng)
        second = hadamard_fo_perturb(self._seeds[self.n_positions], codes, 0, R, T, e, rng)
        return np.concatenate([first, second], axis=1)

    def part_channel(self, t: int) -> np.ndarray:
        """Exact law of one part: rows the records (``t < P``) or the items (``t = P``).

        Columns ``2 (j T + l) + (omega + 1) / 2``; at most ``2^12`` rows.
        """
        t = check_int(t, "t", "SFP.part_channel", low=0, high=self.n_positions)
        b = self.item_bits if t == self.n_positions else self.puzzle_bits + self.fragment_bits
        if b > 12:
            raise ValueError(f"part_channel enumerates 2^{b} inputs; at most 2^12")
        return hadamard_fo_law(self._seeds[t], 0, self.n_rows, self.n_columns,
                               self.part_epsilon, np.arange(1 << b, dtype=np.uint64))

    def channel(self, identity: int = 0) -> np.ndarray:
        """Exact law of a whole report of ``identity`` on the items (``item_bits <= 6``).

        ``P[x, o1 K + o2] = P_t[y_t(x), o1] P_item[x, o2]``, ``K = 2 R T``.
        """
        if self.item_bits > 6:
            raise ValueError("SFP.channel enumerates the items; item_bits <= 6")
        t = int(self.positions_of(np.array([identity], dtype=np.uint64))[0])
        xs = np.arange(1 << self.item_bits, dtype=np.uint64)
        frag = self.part_channel(t)[self.records(xs, np.full(xs.shape[0], t)).astype(np.int64)]
        item = self.part_channel(self.n_positions)
        return (frag[:, :, None] * item[:, None, :]).reshape(xs.shape[0], -1)

    # ------------------------------------------------------------ server
    def _sanitize(self, reports, identities, owner) -> tuple[np.ndarray, SanitizationReport]:
        n = identities.shape[0]
        arr = as_report_array(reports)
        if arr.ndim != 2 or arr.shape != (n, 6):
            raise ValueError(f"The 'reports' parameter of {owner} must be an array of shape "
                             f"({n}, 6) (one row (j, l, omega, j', l', omega') per identity). "
                             f"Got shape {arr.shape} instead.")
        if n == 0:
            return np.zeros((0, 6), dtype=np.int64), SanitizationReport(0, 0, {
                "non_numeric": 0, "non_integer": 0, "out_of_range": 0}, False)
        R, T, seed = self.n_rows, self.n_columns, self.codebook_seed
        if all_legal_rows(arr, R, T):
            return np.ascontiguousarray(arr, dtype=np.int64), all_legal_report(n)
        a, num_a, int_a, leg_a, wrong = sanitize_triples(arr[:, :3], identities, seed, R, T, 2)
        b, num_b, int_b, leg_b, _ = sanitize_triples(arr[:, 3:], identities, seed, R, T, 3)
        numeric, integral, legal = num_a & num_b, int_a & int_b, leg_a & leg_b
        by_reason = {"non_numeric": int((~numeric).sum()),
                     "non_integer": int((numeric & ~integral).sum()),
                     "out_of_range": int((integral & ~legal).sum())}
        clean = np.ascontiguousarray(np.concatenate([a, b], axis=1), dtype=np.int64)
        return clean, SanitizationReport(n, int(legal.sum()), by_reason, wrong)

    def tables(self, chunks: Chunks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One pass over the reports: the integer tables ``(Z, n_position, Z_item)``.

        ``Z``: ``(P, R, T)``; ``n_position``: ``(P,)``; ``Z_item``: ``(R, T)``.
        """
        R, T, P = self.n_rows, self.n_columns, self.n_positions
        Z = np.zeros((P, R, T), dtype=np.int64)
        n_pos = np.zeros(P, dtype=np.int64)
        Z_item = np.zeros((R, T), dtype=np.int64)
        for ids, reps in chunks():
            if not ids.shape[0]:
                continue
            Z_item += hadamard_fo_table(reps[:, 3:], R, T)
            pos = self.positions_of(ids)
            for t in range(P):
                mine = reps[pos == t]
                if mine.shape[0]:
                    Z[t] += hadamard_fo_table(mine[:, :3], R, T)
                    n_pos[t] += mine.shape[0]
        return Z, n_pos, Z_item

    def _v0(self) -> float:
        R, T = self.n_rows, self.n_columns
        c = float(c_eps(self.part_epsilon))
        return c * c - 1.0 / T**2 - (1.0 / T) * (1 - 1.0 / T) / R

    def record_counts(self, table: np.ndarray, n: int, n_t: int, t: int) -> np.ndarray:
        """``f_t(y)`` for every record ``y in [0, 2^(a+f))`` (module docstring, step 1)."""
        T = self.n_columns
        size = 1 << (self.puzzle_bits + self.fragment_bits)
        if n_t == 0:
            return np.zeros(size)
        F = np.ascontiguousarray(fwht_rows(table))
        total = flh_support(self._seeds[t], F, size, self.n_threads)
        c = float(c_eps(self.part_epsilon))
        return (n / n_t) * (T / (T - 1.0)) * (c * total - n_t / T)

    def _top_records(self, counts: np.ndarray, n: int, n_t: int) -> np.ndarray:
        """The ``c k`` largest records (ties: the smaller), above the threshold if set; sorted."""
        idx = np.arange(counts.shape[0])
        if self.threshold is not None:
            sd = (n / n_t) * (self.n_columns / (self.n_columns - 1.0)) * math.sqrt(
                n_t * self._v0()) if n_t else math.inf
            idx = np.flatnonzero(counts >= self.threshold * sd)
        cap = self.c * self.k
        vals = counts[idx]
        if idx.shape[0] > cap:
            kth = np.partition(vals, idx.shape[0] - cap)[idx.shape[0] - cap]
            above = idx[vals > kth]
            ties = idx[vals == kth][:cap - above.shape[0]]  # idx is increasing: smaller first
            idx = np.concatenate([above, ties])
        return np.sort(idx).astype(np.uint64)

    def assemble(self, kept: list, counts: list) -> np.ndarray:
        """Step 2: the candidate items from each position's kept records (sorted, distinct).

        ``kept[t]`` are position ``t``'s records (uint64), ``counts[t]`` their counts.
        """
        f, P = self.fragment_bits, self.n_positions
        mask = np.uint64((1 << f) - 1)
        per_piece = max(1, int(math.floor(self.max_combinations ** (1.0 / P) + 1e-9)))
        pieces = None
        for recs in kept:
            ps = set((recs >> np.uint64(f)).tolist())
            pieces = ps if pieces is None else pieces & ps
        out = []
        for psi in sorted(pieces or ()):
            lists = []
            for recs, cnt in zip(kept, counts):
                sel = np.flatnonzero((recs >> np.uint64(f)) == np.uint64(psi))
                lists.append((recs[sel] & mask, cnt[sel]))
            total = math.prod(len(frags) for frags, _ in lists)
            if total > self.max_combinations:
                trimmed = []
                for frags, cnt in lists:
                    order = np.lexsort((frags, -cnt))[:per_piece]
                    trimmed.append((frags[order], cnt[order]))
                lists = trimmed
            combo = np.zeros(1, dtype=np.uint64)
            for frags, _ in lists:
                combo = ((combo[:, None] << np.uint64(f)) | frags[None, :]).ravel()
            if self._pad:
                low = np.uint64((1 << self._pad) - 1)
                combo = combo[(combo & low) == 0] >> np.uint64(self._pad)
            combo = combo[self.puzzle(combo) == psi]
            out.append(combo)
        if not out:
            return np.zeros(0, dtype=np.uint64)
        return np.unique(np.concatenate(out))

    def _decode(self, chunks: Chunks, n: int):
        Z, n_pos, Z_item = self.tables(chunks)
        size = 1 << (self.puzzle_bits + self.fragment_bits)
        kept, kept_counts, levels = [], [], []
        for t in range(self.n_positions):
            n_t = int(n_pos[t])
            counts = self.record_counts(Z[t], n, n_t, t)
            recs = self._top_records(counts, n, n_t) if n_t else np.zeros(0, dtype=np.uint64)
            kept.append(recs)
            kept_counts.append(counts[recs.astype(np.int64)])
            levels.append({"level": t, "prefix_bits": self.fragment_bits, "n_reports": n_t,
                           "n_candidates": size, "kept": int(recs.shape[0])})
        cands = self.assemble(kept, kept_counts)
        final = hadamard_fo_counts(self._seeds[self.n_positions], Z_item, n, 0,
                                   self.part_epsilon, cands)
        order = np.lexsort((cands, -final))[:self.k]
        levels.append({"level": self.n_positions, "prefix_bits": self.item_bits,
                       "n_reports": n, "n_candidates": int(cands.shape[0]),
                       "kept": int(order.shape[0])})
        codes, counts = cands[order], final[order]
        c = float(c_eps(self.part_epsilon))
        r = self.n_columns / (self.n_columns - 1.0)
        f = np.clip(counts, 0.0, float(n))
        variances = r * r * (f * (c * c - 1.0) + (n - f) * self._v0())
        return codes, counts, variances, levels
