"""Apple's Sequence Fragment Puzzle (SFP): frequent fragments, joined by a hash of the whole item.

An item of ``m`` bits (a byte string of at most ``L <= 8`` bytes, or an
integer; :mod:`fastldp.heavyhitters.items`) is cut into ``P = ceil(m / f)``
fragments of ``f`` bits (the code is padded with zero bits on the right to
``P f`` bits). Every user sends one report of two parts, the fragment part
at budget ``eps_f = s eps`` and the item part at ``eps_i = (1 - s) eps``
(``eps``-LDP by composition; ``s = fragment_share``):

1. **the fragment part**: the user's public position ``t(i) = (h_i P) >> 32``
   (the PEM split of the identity, :func:`~fastldp._kernels._heavy.heavy_groups`)
   and the *record* ``y = (psi(x) << f) | frag_t(x)``: the fragment at position
   ``t`` behind the *puzzle piece* ``psi(x)``, a public hash of the whole item onto
   ``2^a`` values, through the oracle with the hash functions of position ``t``;
2. **the item part**: the whole item through the oracle with other hash functions.

The oracle (``oracle=``) is one of Apple's two sketches, with ``R`` hash
functions onto ``T`` columns (:mod:`fastldp.oracles.cms` gives both laws;
the same hashes under the same seed):

* ``"cms"`` (default; Apple's Algorithm 1, :class:`fastldp.oracles.CMS`):
  a row ``j ~ U[R]`` and the ``T`` signs of the one-hot vector of
  ``h_j(x)``, each flipped with probability ``1 / (1 + e^(e/2))`` (``e`` the
  part's budget); a part is ``1 + ceil(T / 64)`` int64 words ``(j, sign
  words)``, sign ``l`` the bit ``l % 64`` of word ``1 + l // 64``;
* ``"hcms"`` (Apple's Algorithm 3, :class:`fastldp.oracles.HCMS`,
  :func:`~fastldp.heavyhitters.treehist.hadamard_fo_perturb`): one signed
  Hadamard coefficient ``(j, l, omega)``, flipped with probability
  ``1 / (1 + e^e)``.

Position ``t``'s hash functions are the OLH hashes of identities ``0 .. R-1``
under the seed ``s_t`` derived from ``(codebook_seed, t)``; the item part
uses ``s_P``, the puzzle piece the hash of identity 0 under ``s_{P+1}`` onto
``2^a`` values (:meth:`SFP.derived_seed`).

The server (Apple's, "Learning with Privacy at Scale", Section 4.3):

1. for each position ``t`` it estimates the count of every record
   ``y in [0, 2^(a + f))`` from the position's integer table ``Z_t`` (HCMS:
   ``sum omega`` per ``(j, l)``, transformed ``F_t = Z_t H_T``; CMS: the
   number of ``+1`` signs per ``(j, l)``, ``F_t = Z_t``) through
   ``S_t(y) = sum_j F_t[j, h_j(y)]`` (:func:`~fastldp._kernels._flh.flh_support`,
   ``O(R 2^(a+f))``)::

       HCMS: f_t(y) = (n / n_t) r (c S_t(y) - n_t / T),            c = c_(eps_f),
       CMS:  f_t(y) = (n / n_t) r (c S_t(y) + n_t (1/2 - c/2 - 1/T)), c = c_(eps_f / 2),

   ``r = T / (T - 1)``, ``c_e = (e^e + 1) / (e^e - 1)`` (Apple's Algorithms 2
   and 4), and keeps the ``c k`` largest (ties: the smaller record), among
   those at least ``threshold`` standard deviations of a record nobody holds
   (``threshold = None``, the default, keeps the ``c k`` largest: Apple's
   "most frequent fragments");
2. for each puzzle piece ``psi`` that has a kept record at every position,
   it assembles every combination of those positions' fragments (the
   puzzle: fragments of one item share its piece). When a piece has more
   than ``max_combinations`` combinations, each position that holds several
   fragments of that piece keeps its ``floor(max_combinations^(1/B))``
   largest, ``B`` the number of such positions (a position with one
   fragment, such as a short string's padding, multiplies nothing). A
   combination is kept when it is an item (the padding bits are zero; for
   strings also no set bit after a zero byte) and
   its own puzzle piece is ``psi`` (a check Apple leaves to the second
   sketch, which removes ``1 - 2^-a`` of the false combinations for free).
   Byte strings above 8 bytes are assembled string by string instead
   ("Long items" below);
3. it counts the candidates with the item part over all ``n`` reports (the
   same formulas with ``n``, the item table and ``eps_i``) and returns the
   top ``k`` (ties: the smaller code).

Every table is an integer count, so any chunking of the reports decodes
bit-identically; the decode makes one pass over the reports.

Variance of a final count (plug-in, ``f`` clipped to ``[0, n]``; the
moments of :mod:`fastldp.oracles.cms` averaged over the hash functions)::

    HCMS: r^2 (f (c^2 - 1) + (n - f)(c^2 - 1/T^2 - (1/T)(1 - 1/T) / R)),        c = c_(eps_i),
    CMS:  r^2 (f (c^2 - 1) + (n - f)(c^2 - (1 - 2/T)^2 - 4 (1/T)(1 - 1/T) / R)) / 4,
                                                                            c = c_(eps_i / 2).

Defaults
--------
Measured at the issue's setting (``python bench/heavyhitters_compare.py``,
part 2: 10^6 users, Zipf items over ``2^32`` from
:func:`~fastldp.heavyhitters.data.zipf_items`, ``k = 32``, ``eps = 4``),
precision / NCR averaged over the item seeds 21, 22, 23 (codebook seed
``1 + seed``); PEM reaches 0.844 / 0.972 there. The numbers of the
previous defaults (HCMS, ``R = 16``, ``T = 4096``, ``c = 2``, ``s = 1/2``)
were 0.240 / 0.416; one change at a time from the defaults below:

============================================  =============  ==============
setting                                       precision      NCR
============================================  =============  ==============
defaults (CMS 256 x 256, s = 0.625, c = 32)    0.615          0.835
``oracle="hcms"`` (16 x 4096)                 0.417          0.640
``fragment_share=0.5`` (Apple's split)         0.510          0.742
``fragment_share=0.5, c=2``                   0.375          0.600
``fragment_share=0.75``                       0.646          0.854
``c=8`` / ``c=128``                           0.531 / 0.604  0.763 / 0.821
``n_columns=1024`` (CMS)                      0.625          0.833
``fragment_bits=16, puzzle_bits=4``           0.583          0.807
``max_combinations=256``                      0.573          0.801
============================================  =============  ==============

Why each default:

* **the oracle, CMS** (Apple's SFP used CMS): at a part's budget ``e`` a
  report's variance is ``(c_(e/2)^2 - 1) / 4`` against HCMS's
  ``c_e^2``; at ``e = 2`` that is 0.92 against 1.72, and the record
  counts' noise is what loses the true fragments (a Gaussian model of
  steps 1-3 with these variances predicts 0.29 for the old defaults,
  measured 0.24).
* **``T = 256`` columns, ``R = 256`` rows for CMS** (Apple's CMS uses
  ``m = 1024``): the client draws ``T`` signs per part, 0.4 s per 10^6
  parts at ``T = 256`` against 2.2 s at 1024, and 1024 measured no better
  (0.625). ``R`` sets the bias a fixed set of hashes gives the records
  that share buckets with a heavy one (sd about ``count / sqrt(R T)``,
  :mod:`fastldp.oracles.cms`): with ``R = 64`` the twins of the heaviest
  items crowd the kept records (precision 0.375 at ``f = 16``). HCMS keeps
  16 x 4096.
* **``fragment_share = 0.625``**: Apple and pure-ldp split ``eps`` in
  halves; the candidates are lost at step 1 (a true item whose fragment
  misses one position's cut is never assembled), while step 3 ranks a few
  hundred candidates, so the fragment part is worth more of the budget:
  0.615 against 0.510 at halves. The Gaussian model over
  ``eps in {1, 2, 4, 8}`` prefers 0.625 to 0.5 up to ``eps = 4`` and 0.5 at
  ``eps = 8`` (0.958 against 0.927); 0.75 helps at small ``eps`` but is
  worse than 0.625 at 8. ``fragment_share=0.5`` is Apple's split. Over
  the item seeds 21-28 the defaults reach 0.602 / 0.821, ``s = 0.7``
  0.629 / 0.839 and ``s = 0.75`` 0.625 / 0.840 (``s = 0.7, c = 16``:
  0.609 / 0.828): a gain within a few hundredths, bought at large ``eps``.
  The bench's single run (item seed 21, codebook seed 1) gave 0.562 / 0.801.
* **``c = 32``** (``c k = 1024`` records per position out of ``2^16``): the
  cut is a multiple test over all ``2^(a+f)`` records, so it sits near the
  ``1 - ck / 2^(a+f)`` quantile of the noise; keeping more lowers it until
  the false candidates (about ``(ck)^P / 2^(a (P - 1))`` combinations pass
  the puzzle check) compete at step 3. 8: 0.531, 32: 0.615, 128: 0.604.
* **``f`` and ``a``**: Apple's fragment is two characters and its puzzle
  256 pieces. For byte strings of at most 8 bytes ``f = 16`` (two
  characters; longer strings: "Long items"), for integers
  ``f = 8``; ``a = min(8, 20 - f)``, so ``2^(a+f) <= 2^20`` records (the
  server's cost, ``O(R 2^(a+f))`` per position, and the multiple test grow
  with it): ``f = 16, a = 4`` for strings, ``f = 8, a = 8`` for integers.
  Fewer positions (``P``) means more reports per position (the record
  variance is ``P n`` times a report's): on the words workload
  (:func:`~fastldp.heavyhitters.data.word_items`, 8-byte items, same
  ``n``, ``k``, ``eps``, item seeds 21-23) ``f = 16, a = 4`` reaches
  0.771 / 0.939 against 0.625 / 0.843 at ``f = 8, a = 8`` (PEM: 0.740 /
  0.900); on the 32-bit Zipf items ``f = 8`` is better (0.615 against
  0.583).
* **``max_combinations = 4096``**: the trimming only bites when a piece
  collects many records; 256 lost true items (0.573).

Reports are int64 rows (fragment part, item part); the position is public.
An illegal part is replaced by a public random legal part (HCMS: the triple
``(0, 0, s)``, a public fair sign, as in :mod:`~fastldp.heavyhitters.treehist`;
CMS: :meth:`fastldp.oracles.CMS.public_rows`, one codebook per part) and the
row is counted once, under its first reason.

Long items
----------
A byte string of ``L`` up to 64 bytes (``m = 8 L`` bits) is a code of
``W = ceil(m / 64)`` words (:mod:`fastldp.heavyhitters.items`). Fragment
``t`` is read from the prefix of ``min((t + 1) f, m)`` bits
(:func:`~fastldp.heavyhitters.items.prefix`; for whole-byte fragments of
strings, bytes ``t f / 8`` on, one gather); the item part and the puzzle
hash see the item's key :func:`~fastldp.heavyhitters.items.prefix_keys`
``(code, m)`` (the code itself when ``m <= 64``, so short items decode bit
for bit as before; above 64 bits a public 60-bit hash, so two distinct items
share a key, hence their item-part counts and puzzle pieces, with
probability ``2^-60``). Every ``P f > 64`` returns codes of ``W`` words.

**Defaults above 8 bytes: ``f = 8, a = 8``** (one byte per position, 256
puzzle pieces, ``2^16`` records; ``P = L`` positions) **and
``fragment_share = 0.75``**. Short strings keep ``f = 16, a = 4`` and
integers ``f = 8, a = 8``, both ``s = 0.625``. The choice follows the
server's cost and the puzzle, not ``n``, ``k`` or ``eps`` (every one of
those measured below chose the same):

* the server enumerates ``R 2^(a+f)`` hashes per position: at 64 bytes,
  ``f = 16, a = 4`` is 32 positions of ``2^20`` records (0.5 to 0.7 s each
  at ``R = 256``, 17 to 31 s per decode), ``f = 8, a = 8`` 64 positions of
  ``2^16`` (0.055 s each, 3 to 4.5 s per decode); a wider record
  (``a + f`` up to 24) multiplies that by 16 per 4 bits;
* with 16 pieces a piece collects ``1/16`` of the strings, so its partial
  strings multiply at every position; with 256 pieces most pieces hold
  one heavy string;
* measured at 10^6 users, ``k = 16``, the exact test's synthetic long
  workload (``python bench/heavyhitters_sfp_long.py --workload synthetic
  --configs default f16a2 f16a4``: 216 strings of 10 to 24 letters, top
  shares 23% to 1.5%), true top-16 strings returned at ``eps = 2, 4, 8``:
  ``f = 8, a = 8`` 4 / 7 / 15 (decode 2.8 to 4.5 s); ``f = 16, a = 4``
  with the same assembly 4 / 7 / 11 (17 to 25 s); ``f = 16, a = 2``
  3 / 4 / 5; the code before issue 34 (``f = 16, a = 4``, combinations
  trimmed per piece) 2 / 4 / 7 (16 to 20 s). At 16 bytes (the same
  strings cut, item seeds 5 and 6) ``f = 8, a = 8`` 6, 8 / 15, 14 / 16, 16
  against ``f = 16, a = 4``'s 8, 8 / 13, 13 / 15, 15, in 2 s against 6 s
  (those at ``s = 0.625``).
* ``s = 0.75``: with ``P = L`` positions a record count's variance is
  ``L n`` times a report's, and a true string is lost when one of its
  records misses its position's cut, while the item part ranks a few
  hundred candidates: the fragments need the budget. True top-16 strings
  at 10^6 users on the synthetic workload (item seeds 5, 6; ``eps = 2, 4,
  8``), ``s = 0.625 / 0.75 / 0.875``: 64 bytes 4, 3 / 7, 8 / 15, 15 against
  4, 4 / 9, 9 / 16, 15 and 4, 6 / 11, 11 / 16, 15 (NCR at ``eps = 4``:
  0.669, 0.735 / 0.787, 0.794 / 0.882, 0.890); 16 bytes 6, 8 / 15, 14 /
  16, 16 against 8, 9 / 16, 16 / 16, 16 and 11, 8 / 15, 16 / 16, 16. On the
  ``def`` lines at ``eps = 8``: 1, 1 and 2 of the top 16. 0.75 gains in
  every one of those cells; 0.875 gains more at 64 bytes but leaves the
  item part ``eps / 8``: the variance of a returned count (CMS at
  ``eps = 4``) is 9.4 times that at 0.625 (2.3 times at 0.75), and at a
  few thousand users it swaps the top two of 30% and 20% (the report-file
  test of tests/test_heavyhitters_sfp_long.py, 6,000 users).

**Assembly of long strings** (:meth:`SFP._assemble_strings`). Partial
strings grow position by position within their piece; an extension that
makes an impossible string (a set byte after a zero byte; for text,
:attr:`text_items`, bytes that are not UTF-8 so far) is never made, and a
partial that holds its zero terminator extends by zeros with no record
needed (the positions past a string's end hold only padding). While a
piece holds at most ``max_combinations`` partials this is every
combination. A piece that would hold more is decoded greedily with
peeling: up to ``PEEL_ROUNDS = 16`` rounds each follow the largest
remaining count at every position and subtract the path's bottleneck from
the records on it, so the next round finds the piece's next string; a
position's all-zero record, which pools every string of the piece that
ended by then, loses a found string's count at every position past that
string's end, so it counts the strings not found yet (taking the
previous position's count off instead doubles its variance: a 24-byte
string of the synthetic workload at ``eps = 4`` lost its terminator to a
noise record, 16,508 against 17,210). Ending the partials of a string at
its terminator is what makes the strings of 10 to 24 bytes of a 64-byte
field exact at ``eps = 50``: 16 of the top 16 at 200,000 users
(tests/test_heavyhitters_exact.py; the code before assembled 9).

**What SFP cannot do on real text.** A record count's sd is
``sqrt(P n v)``: every position sees ``n / P`` users, and the users whose
position lies past their string's end report only its padding. On the
standard library's ``def`` lines (``python bench/heavyhitters_sfp_long.py``:
39,000 distinct lines, shares 1.3% down to 0.20% for the 16th) at 10^6
users, eps 8 (``v`` about 0.1 at the fragment's budget 5) the sd is 2,530
at ``P = 64`` (1,790 at ``P = 32``), the 512 records kept per position cut
at about 2.4 sd (6,100), and the second line holds 6,371 users: 1 of the
top 16 is found at ``eps = 8``, none at ``eps = 4``, with the defaults
(``s = 0.75``) as at ``s = 0.625`` (before: none at either, in 28 to 31 s;
``f = 16, a = 4`` with the new assembly: none). The synthetic workload's
top 16 (shares 23% to 1.5%) with the defaults: 4 / 9 / 16 at ``eps = 2, 4,
8``.
PEM and TreeHist (prefix trees over the same users) are the protocols
for such workloads.

Time at 64 bytes, 10^6 users, on 2 cores shared with other work (load
average 3 to 6): ``privatize`` 1.3 to 3.4 s (about 1 s of it the item
encoding of :class:`~fastldp.heavyhitters.items.ItemCodec`), ``estimate``
1.5 to 4.6 s (most of it the 64 positions' enumeration); 3 to 8 s in all
(before: 18 to 35 s).

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

from .._kernels._cms import cms_counts
from .._kernels._flh import flh_support
from .._kernels._heavy import heavy_groups
from .._kernels._unary import ue_perturb
from .._sanitize import SanitizationReport
from .._validation import check_float, check_int, param_error
from ..oracles._base import all_legal_report, as_report_array, tally_report
from ..oracles.cms import CMS, _exact_words, c_eps, cms_report_rows, fwht_rows
from ._base import Chunks, HeavyHitterProtocol
from .items import (
    code_words, prefix, prefix_keys, string_prefix_mask, top_k_order, unique_codes,
    utf8_prefix_mask,
)
from .treehist import (
    all_legal_rows, fo_hash, hadamard_fo_counts, hadamard_fo_law, hadamard_fo_perturb,
    hadamard_fo_table, sanitize_triples,
)

__all__ = ["SFP"]

#: the most records ``2^(a + f)`` a position enumerates
MAX_RECORD_BITS = 24
#: ``(n_rows, n_columns)`` by oracle (module docstring, "Defaults")
SKETCH_DEFAULTS = {"cms": (256, 256), "hcms": (16, 4096)}
#: the fewest parts the client's kernel draws on several threads (their start costs more
#: below; the draws do not depend on the thread count)
_THREADED_MIN = 1 << 16
#: ``a = min(8, 20 - f)`` by default: at most ``2^20`` records per position (module docstring)
RECORD_BITS_DEFAULT = 20
#: records kept per position: ``c * k`` (module docstring, "Defaults")
C_DEFAULT = 32
#: the fragment part's share of the budget (module docstring, "Defaults")
SHARE_DEFAULT = 0.625
#: the same for byte strings above 8 bytes (module docstring, "Long items")
SHARE_LONG = 0.75
#: the most greedy paths per crowded puzzle piece when assembling long strings
#: (:meth:`SFP._assemble_strings`; module docstring, "Long items")
PEEL_ROUNDS = 16


class SFP(HeavyHitterProtocol):
    """Apple's Sequence Fragment Puzzle: fragments with a puzzle piece, assembled by the server.

    Parameters
    ----------
    epsilon : float in (0, 700]
        The budget of a report: ``s eps`` for the fragment, ``(1 - s) eps`` for the item.
    k : int >= 1, default 32
        Heavy hitters returned (at most).
    oracle : {"cms", "hcms"}, default "cms"
        Apple's sketch for both parts (module docstring).
    fragment_share : float in (0, 1), optional
        ``s``, the fragment part's share of ``eps`` (Apple's: 0.5); default
        0.625 (module docstring, "Defaults"), 0.75 for byte strings above 8
        bytes ("Long items").
    fragment_bits : int >= 1, optional
        ``f``, bits per fragment; default 16 (Apple's two characters) for
        byte strings of at most 8 bytes, 8 for longer strings (module
        docstring, "Long items") and for integers, at most ``item_bits``.
    puzzle_bits : int >= 1, optional
        ``a``, bits of the puzzle piece; default ``min(8, 20 - f)``;
        ``a + f <= 24``.
    c : int >= 1, default 32
        Records kept per position: ``c * k``.
    threshold : float >= 0 or None, default None
        When set, a record is kept only if its count is at least
        ``threshold`` standard deviations of a record nobody holds.
    max_combinations : int >= 1, default 4096
        The most combinations assembled per puzzle piece (long strings: the
        most partial strings per piece before it is decoded greedily with
        peeling; module docstring, "Long items").
    n_rows : int >= 1, optional
        ``R``, hash functions of each sketch; default 256 (CMS), 16 (HCMS).
    n_columns : int >= 2, optional
        ``T``, their range; default 256 (CMS), 4096 (HCMS, a power of two:
        the Hadamard order).
    item_bits, item_bytes : int, optional
        The items (:mod:`fastldp.heavyhitters.items`); default 32-bit integers.
    codebook_seed : int or None
        Keys the positions, the puzzle hash and the sketches.
    n_threads : int or None
    text : bool or None
        True: items are UTF-8 text, results are ``str`` and only valid UTF-8
        strings are assembled; None (default): text once :meth:`privatize` saw
        ``str`` items (:attr:`text_items`).

    Attributes
    ----------
    n_positions : int
        ``P = ceil(item_bits / fragment_bits)``.
    part_epsilon, item_epsilon : float
        ``eps_f = s eps`` and ``eps_i = eps - eps_f``.
    part_width, report_width : int
        int64 words of one part (3 for HCMS, ``1 + ceil(T / 64)`` for CMS) and
        of a report (two parts).

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

    def __init__(self, *, epsilon: float, k: int = 32, oracle: str = "cms",
                 fragment_share: Optional[float] = None, fragment_bits: Optional[int] = None,
                 puzzle_bits: Optional[int] = None, c: int = C_DEFAULT,
                 threshold: Optional[float] = None, max_combinations: int = 4096,
                 n_rows: Optional[int] = None, n_columns: Optional[int] = None,
                 item_bits: Optional[int] = None, item_bytes: Optional[int] = None,
                 codebook_seed: Optional[int] = None, n_threads: Optional[int] = None,
                 text: Optional[bool] = None) -> None:
        super().__init__(epsilon=epsilon, k=k, item_bits=item_bits, item_bytes=item_bytes,
                         codebook_seed=codebook_seed, n_threads=n_threads, text=text)
        owner = "SFP"
        if oracle not in ("cms", "hcms"):
            raise param_error("oracle", owner, "'cms' or 'hcms'", oracle)
        self.oracle = oracle
        rows_default, columns_default = SKETCH_DEFAULTS[oracle]
        n_rows = rows_default if n_rows is None else n_rows
        n_columns = columns_default if n_columns is None else n_columns
        m = self.item_bits
        if puzzle_bits is not None:
            puzzle_bits = check_int(puzzle_bits, "puzzle_bits", owner, low=1,
                                    high=MAX_RECORD_BITS - 1)
        high_f = min(m, MAX_RECORD_BITS - (puzzle_bits or 1))
        if fragment_bits is None:  # Apple's two characters for short strings, else a byte
            short_string = self.codec.kind == "bytes" and m <= 64
            fragment_bits = min(16 if short_string else 8, high_f)
        self.fragment_bits = check_int(fragment_bits, "fragment_bits", owner, low=1, high=high_f)
        if puzzle_bits is None:  # Apple's 256 pieces while the records stay <= 2^16 ... 2^20
            puzzle_bits = max(1, min(8, RECORD_BITS_DEFAULT - self.fragment_bits))
        self.puzzle_bits = puzzle_bits
        self.c = check_int(c, "c", owner, low=1, high=1 << 16)
        self.threshold = None if threshold is None else check_float(
            threshold, "threshold", owner, low=0.0, high=1e6, low_open=False, high_open=False)
        self.max_combinations = check_int(max_combinations, "max_combinations", owner, low=1,
                                          high=1 << 24)
        self.n_rows = check_int(n_rows, "n_rows", owner, low=1, high=1 << 12)
        self.n_columns = check_int(n_columns, "n_columns", owner, low=2,
                                   high=(1 << 22) // self.n_rows)
        if oracle == "hcms" and self.n_columns & (self.n_columns - 1):
            raise param_error("n_columns", owner, "a power of two (the Hadamard order)",
                              n_columns)
        self.n_positions = -(-m // self.fragment_bits)
        if fragment_share is None:  # long strings: the fragments lose the items ("Long items")
            long_string = self.codec.kind == "bytes" and m > 64
            fragment_share = SHARE_LONG if long_string else SHARE_DEFAULT
        self.fragment_share = check_float(fragment_share, "fragment_share", owner, low=0.0,
                                          high=1.0)
        #: the fragment part's budget ``s eps``; the item part's is ``item_epsilon = eps - s eps``
        self.part_epsilon = self.epsilon * self.fragment_share
        self.item_epsilon = self.epsilon - self.part_epsilon
        self._seeds = tuple(self.derived_seed(t) for t in range(self.n_positions + 2))
        #: int64 words of one part: ``(j, l, omega)`` (HCMS) or ``(j, ceil(m / 64) sign words)``
        self.part_width = 3 if oracle == "hcms" else 1 + (self.n_columns + 63) // 64
        self.report_width = 2 * self.part_width
        if oracle == "cms":  # the sanitizer's public rows, one codebook per part
            self._cms_parts = tuple(
                CMS(domain_size=2, epsilon=self.epsilon, n_rows=self.n_rows,
                    n_columns=self.n_columns, codebook_seed=self.derived_seed(t), n_threads=1)
                for t in (self.n_positions + 2, self.n_positions + 3))

    def _stream_extra(self) -> dict:
        return {"oracle": self.oracle, "fragment_share": self.fragment_share,
                "fragment_bits": self.fragment_bits, "puzzle_bits": self.puzzle_bits,
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

    @property
    def _wide(self) -> bool:
        """Whether the padded code ``P f`` exceeds one word (the multi-word path)."""
        return self.n_positions * self.fragment_bits > 64

    def keys(self, codes: Any) -> np.ndarray:
        """The ``uint64`` key the item part and the puzzle hash of each code:
        :func:`~fastldp.heavyhitters.items.prefix_keys` (the code itself up to 64 bits)."""
        if self.item_bits <= 64:
            return np.asarray(codes, dtype=np.uint64)
        return prefix_keys(codes, self.item_bits)

    def positions_of(self, identities: Any) -> np.ndarray:
        """The public fragment position of each identity (int64 in ``[0, P)``)."""
        return heavy_groups(self.codebook_seed,
                            np.ascontiguousarray(identities, dtype=np.uint64), self.n_positions)

    def puzzle(self, codes: Any) -> np.ndarray:
        """``psi(x)``: the puzzle piece of each item code (int64 in ``[0, 2^a)``)."""
        return fo_hash(self._seeds[self.n_positions + 1], 0, self.keys(codes),
                       1 << self.puzzle_bits)

    def fragments(self, codes: Any, positions: Any) -> np.ndarray:
        """``frag_t(x)``: the ``f`` bits at position ``t`` of the zero-padded code (uint64)."""
        f = self.fragment_bits
        if self._string_path:
            return self._string_fragments(codes, positions)
        if self._wide:
            return self._wide_fragments(codes, positions)
        codes = np.asarray(codes, dtype=np.uint64) << np.uint64(self._pad)
        shift = ((self.n_positions - 1 - np.asarray(positions, dtype=np.int64)) * f)
        return (codes >> shift.astype(np.uint64)) & np.uint64((1 << f) - 1)

    def _wide_fragments(self, codes: Any, positions: Any) -> np.ndarray:
        """:meth:`fragments` when ``P f > 64``: fragment ``t`` is the low ``e - t f`` bits of
        the prefix of ``e = min((t + 1) f, m)`` bits, shifted over the padding."""
        m, f = self.item_bits, self.fragment_bits
        codes = np.asarray(codes, dtype=np.uint64)
        pos = np.broadcast_to(np.asarray(positions, dtype=np.int64), codes.shape[:1])
        out = np.zeros(codes.shape[0], dtype=np.uint64)
        for t in np.unique(pos).tolist():
            sel = pos == t
            end = min((t + 1) * f, m)
            pre = prefix(codes[sel], end, m)
            low = pre if pre.ndim == 1 else pre[:, -1]
            frag = low & np.uint64((1 << (end - t * f)) - 1)
            out[sel] = frag << np.uint64((t + 1) * f - end)
        return out

    def _string_fragments(self, codes: Any, positions: Any) -> np.ndarray:
        """:meth:`fragments` of long byte strings cut into whole bytes: bytes ``t f / 8`` to
        ``(t + 1) f / 8 - 1`` of the string (zero past its ``L`` bytes), read from the codes'
        big-endian bytes in one gather."""
        fb, L = self.fragment_bits // 8, self.item_bytes
        codes = np.asarray(codes, dtype=np.uint64)
        n, W = codes.shape[0], code_words(self.item_bits)
        octets = np.zeros((n, 8 * W + fb), dtype=np.uint8)  # fb zero bytes past the end
        octets[:, :8 * W] = codes.reshape(n, W).astype(">u8").view(np.uint8)
        pos = np.broadcast_to(np.asarray(positions, dtype=np.int64), (n,))
        first = 8 * W - L + fb * pos
        out = np.zeros(n, dtype=np.uint64)
        rows = np.arange(n)
        for b in range(fb):
            out = (out << np.uint64(8)) | octets[rows, first + b].astype(np.uint64)
        return out

    def records(self, codes: Any, positions: Any) -> np.ndarray:
        """``y = (psi(x) << f) | frag_t(x)`` (uint64)."""
        codes = np.asarray(codes, dtype=np.uint64)
        return self._records(codes, positions, self.keys(codes))

    def _records(self, codes: np.ndarray, positions: Any, keys: np.ndarray) -> np.ndarray:
        """:meth:`records` given the codes' :meth:`keys` (the client hashes them once)."""
        psi = fo_hash(self._seeds[self.n_positions + 1], 0, keys, 1 << self.puzzle_bits)
        return ((psi.astype(np.uint64) << np.uint64(self.fragment_bits))
                | self.fragments(codes, positions))

    # ------------------------------------------------------------ client
    def _privatize_codes(self, codes, identities, rng):
        n = codes.shape[0]
        pos = self.positions_of(identities)
        keys = self.keys(codes)
        rec = self._records(codes, pos, keys)
        R, T, e, e_item = self.n_rows, self.n_columns, self.part_epsilon, self.item_epsilon
        perturb = hadamard_fo_perturb if self.oracle == "hcms" else self._cms_perturb
        first = np.empty((n, self.part_width), dtype=np.int64)
        for t in range(self.n_positions):
            mine = np.flatnonzero(pos == t)
            if mine.size:
                first[mine] = perturb(self._seeds[t], rec[mine], 0, R, T, e, rng)
        second = perturb(self._seeds[self.n_positions], keys, 0, R, T, e_item, rng)
        return np.concatenate([first, second], axis=1)

    def _cms_perturb(self, seed: int, values: np.ndarray, hash_base: int, n_rows: int,
                     n_columns: int, epsilon: float, rng: np.random.Generator) -> np.ndarray:
        """Apple's CMS client on ``values``: ``(n, 1 + ceil(m / 64))`` rows ``(j, sign words)``.

        ``j ~ U[R]``; bit ``h_j(x)`` (the hash of identity ``hash_base + j``
        under ``seed``, as the HCMS part's) is set with probability
        ``e^(eps/2) / (1 + e^(eps/2))``, every other of the ``m`` bits with
        ``1 / (1 + e^(eps/2))`` (:class:`fastldp.oracles.CMS`'s law and layout).
        """
        n, W = values.shape[0], (n_columns + 63) // 64
        rows = np.asarray(rng.integers(0, n_rows, n, dtype=np.int64))
        buckets = fo_hash(seed, np.uint64(hash_base) + rows.astype(np.uint64), values, n_columns)
        q = 1.0 / (math.exp(epsilon / 2.0) + 1.0)
        key = rng.integers(0, 2**64, size=2, dtype=np.uint64)
        bits = ue_perturb(int(key[0]), int(key[1]), np.ascontiguousarray(buckets, dtype=np.int64),
                          np.full(n, np.ldexp(q, 64), dtype=np.float64).astype(np.uint64),
                          np.full(n, 1.0 - q), n_columns,
                          self.n_threads if n >= _THREADED_MIN else 1)
        return cms_report_rows(rows, bits, W)

    def part_channel(self, t: int) -> np.ndarray:
        """Exact law of one part: rows the records (``t < P``) or the items (``t = P``).

        Columns: HCMS ``2 (j T + l) + (omega + 1) / 2``; CMS ``j 2^m + s``, ``s``
        the sign word (bit ``l`` set for ``+1``; ``m <= 8``). At most ``2^12`` rows.
        """
        t = check_int(t, "t", "SFP.part_channel", low=0, high=self.n_positions)
        b = self.item_bits if t == self.n_positions else self.puzzle_bits + self.fragment_bits
        if b > 12:
            raise ValueError(f"part_channel enumerates 2^{b} inputs; at most 2^12")
        xs = np.arange(1 << b, dtype=np.uint64)
        e = self.item_epsilon if t == self.n_positions else self.part_epsilon
        law = hadamard_fo_law if self.oracle == "hcms" else cms_part_law
        return law(self._seeds[t], 0, self.n_rows, self.n_columns, e, xs)

    def channel(self, identity: int = 0) -> np.ndarray:
        """Exact law of a whole report of ``identity`` on the items (``item_bits <= 6``).

        ``P[x, o1 K + o2] = P_t[y_t(x), o1] P_item[x, o2]``, ``K`` the outputs
        of one part (``2 R T``, or ``R 2^m`` for CMS).
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
        n, width = identities.shape[0], self.report_width
        arr = as_report_array(reports)
        if arr.ndim != 2 or arr.shape != (n, width):
            layout = ("(j, l, omega, j', l', omega')" if self.oracle == "hcms" else
                      f"(j, {self.part_width - 1} sign words, j', {self.part_width - 1} "
                      "sign words)")
            raise ValueError(f"The 'reports' parameter of {owner} must be an array of shape "
                             f"({n}, {width}) (one row {layout} per identity). "
                             f"Got shape {arr.shape} instead.")
        if n == 0:
            return np.zeros((0, width), dtype=np.int64), SanitizationReport(0, 0, {
                "non_numeric": 0, "non_integer": 0, "out_of_range": 0}, False)
        if self.oracle == "cms":
            return self._sanitize_cms(arr, identities)
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

    def _sanitize_cms(self, arr, identities) -> tuple[np.ndarray, SanitizationReport]:
        """CMS parts: a part is legal when ``j in [0, R)``, every word an integer in
        ``[-2^63, 2^64)`` (read as 64-bit two's complement) and no padding bit is set;
        an illegal part becomes a public random legal part (:meth:`CMS.public_rows`,
        one codebook per part); a row counts once, under its first reason."""
        n, w = arr.shape[0], self.part_width
        if arr.dtype.kind in "iu" and arr.dtype.itemsize <= 8:
            values = arr.view(np.int64) if arr.dtype == np.uint64 else arr.astype(np.int64)
            numeric = integral = in_word = np.ones(arr.shape, dtype=bool)
            wrong_dtype = False
        else:
            values, numeric, integral, in_word = _exact_words(arr)
            wrong_dtype = True
        oks = []
        for part, cms in enumerate(self._cms_parts):
            j = values[:, part * w]
            ok = (j >= 0) & (j < self.n_rows)
            if wrong_dtype:
                ok &= (integral & in_word)[:, part * w:(part + 1) * w].all(axis=1)
            pad = cms._padding_mask()
            if pad:
                ok &= (values[:, (part + 1) * w - 1].view(np.uint64) & np.uint64(pad)) == 0
            oks.append(ok)
        legal = oks[0] & oks[1]
        if not wrong_dtype and legal.all():
            return np.ascontiguousarray(values, dtype=np.int64), all_legal_report(n)
        clean = np.ascontiguousarray(values, dtype=np.int64).copy()
        for part, (cms, ok) in enumerate(zip(self._cms_parts, oks)):
            if not ok.all():
                clean[~ok, part * w:(part + 1) * w] = cms.public_rows(identities[~ok])
        return clean, tally_report(n, numeric.all(axis=1), integral.all(axis=1), legal,
                                   wrong_dtype)

    def _part_table(self, parts: np.ndarray) -> np.ndarray:
        """The ``(R, T)`` integer table of legal parts: HCMS ``sum omega`` per ``(j, l)``,
        CMS the number of ``+1`` signs per ``(j, l)``."""
        R, T = self.n_rows, self.n_columns
        if self.oracle == "hcms":
            return hadamard_fo_table(parts, R, T)
        if parts.shape[0] == 0:
            return np.zeros((R, T), dtype=np.int64)
        z = cms_counts(np.ascontiguousarray(parts, dtype=np.int64), R, T,
                       self.n_threads if parts.shape[0] >= _THREADED_MIN else 1)
        if z is None:  # pragma: no cover - sanitized parts are legal
            raise ValueError("SFP: the CMS table needs legal parts")
        return np.asarray(z, dtype=np.int64).reshape(R, T)

    def tables(self, chunks: Chunks) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """One pass over the reports: the integer tables ``(Z, n_position, Z_item)``.

        ``Z``: ``(P, R, T)``; ``n_position``: ``(P,)``; ``Z_item``: ``(R, T)``
        (:meth:`_part_table`).
        """
        R, T, P, w = self.n_rows, self.n_columns, self.n_positions, self.part_width
        Z = np.zeros((P, R, T), dtype=np.int64)
        n_pos = np.zeros(P, dtype=np.int64)
        Z_item = np.zeros((R, T), dtype=np.int64)
        for ids, reps in chunks():
            if not ids.shape[0]:
                continue
            Z_item += self._part_table(reps[:, w:])
            pos = self.positions_of(ids)
            for t in range(P):
                mine = reps[pos == t]
                if mine.shape[0]:
                    Z[t] += self._part_table(mine[:, :w])
                    n_pos[t] += mine.shape[0]
        return Z, n_pos, Z_item

    def _c(self, e: float) -> float:
        """``c`` of a part of budget ``e``: ``c_e`` for HCMS, ``c_(e/2)`` for CMS."""
        return float(c_eps(e if self.oracle == "hcms" else e / 2.0))

    def _v0(self, e: float) -> float:
        """Variance of one report's term at an item the user does not hold, over the hashes,
        divided by ``r^2`` (part budget ``e``)."""
        R, T, c = self.n_rows, self.n_columns, self._c(e)
        if self.oracle == "hcms":
            return c * c - 1.0 / T**2 - (1.0 / T) * (1 - 1.0 / T) / R
        return (c * c - (1 - 2.0 / T) ** 2 - 4 * (1.0 / T) * (1 - 1.0 / T) / R) / 4.0

    def _v1(self, e: float) -> float:
        """The same at the item the user holds (``kappa = 1``), divided by ``r^2``."""
        c = self._c(e)
        return c * c - 1.0 if self.oracle == "hcms" else (c * c - 1.0) / 4.0

    def _sums_to_counts(self, sums: np.ndarray, n_reports: int, e: float) -> np.ndarray:
        """Counts from ``S(v) = sum_j F[j, h_j(v)]`` of ``n_reports`` reports of budget ``e``."""
        T, c = self.n_columns, self._c(e)
        r = T / (T - 1.0)
        if self.oracle == "hcms":
            return r * (c * sums - n_reports / T)
        return r * (c * sums + n_reports * (0.5 - c / 2.0 - 1.0 / T))

    def _transformed(self, table: np.ndarray) -> np.ndarray:
        """``F``: ``Z H_T`` for HCMS, the bit counts themselves for CMS (float64)."""
        if self.oracle == "hcms":
            return np.ascontiguousarray(fwht_rows(table))
        return np.ascontiguousarray(table, dtype=np.float64)

    def record_counts(self, table: np.ndarray, n: int, n_t: int, t: int) -> np.ndarray:
        """``f_t(y)`` for every record ``y in [0, 2^(a+f))`` (module docstring, step 1)."""
        size = 1 << (self.puzzle_bits + self.fragment_bits)
        if n_t == 0:
            return np.zeros(size)
        total = flh_support(self._seeds[t], self._transformed(table), size, self.n_threads)
        return (n / n_t) * self._sums_to_counts(total, n_t, self.part_epsilon)

    def item_counts(self, table: np.ndarray, n: int, candidates: Any) -> np.ndarray:
        """The item part's count of every candidate code (module docstring, step 3)."""
        cands = np.ascontiguousarray(self.keys(candidates), dtype=np.uint64)
        if self.oracle == "hcms":
            return hadamard_fo_counts(self._seeds[self.n_positions], table, n, 0,
                                      self.item_epsilon, cands)
        total = np.zeros(cands.shape[0])
        seed, T = self._seeds[self.n_positions], self.n_columns
        for j in range(self.n_rows):
            total += table[j, fo_hash(seed, j, cands, T)]
        return self._sums_to_counts(total, n, self.item_epsilon) if cands.shape[0] else total

    def _top_records(self, counts: np.ndarray, n: int, n_t: int) -> np.ndarray:
        """The ``c k`` largest records (ties: the smaller), above the threshold if set; sorted."""
        idx = np.arange(counts.shape[0])
        if self.threshold is not None:
            sd = (n / n_t) * (self.n_columns / (self.n_columns - 1.0)) * math.sqrt(
                n_t * self._v0(self.part_epsilon)) if n_t else math.inf
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

        ``kept[t]`` are position ``t``'s records (uint64, sorted), ``counts[t]`` their counts.
        Long byte strings: :meth:`_assemble_strings`.
        """
        if self._string_path:
            return self._assemble_strings(kept, counts)
        f = self.fragment_bits
        mask = np.uint64((1 << f) - 1)
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
                # only the positions with several fragments multiply the combinations: they
                # share the budget (a long string's padding positions hold one fragment, the
                # zero one, and must not shrink the others to one fragment each)
                busy = sum(len(frags) > 1 for frags, _ in lists)
                per_piece = max(1, int(math.floor(self.max_combinations ** (1.0 / busy)
                                                  + 1e-9)))
                trimmed = []
                for frags, cnt in lists:
                    order = np.lexsort((frags, -cnt))[:per_piece]
                    trimmed.append((frags[order], cnt[order]))
                lists = trimmed
            if self._wide:
                combo = self._join([frags for frags, _ in lists])
            else:
                combo = np.zeros(1, dtype=np.uint64)
                for frags, _ in lists:
                    combo = ((combo[:, None] << np.uint64(f)) | frags[None, :]).ravel()
                if self._pad:
                    low = np.uint64((1 << self._pad) - 1)
                    combo = combo[(combo & low) == 0] >> np.uint64(self._pad)
            combo = combo[self.puzzle(combo) == psi]
            out.append(combo)
        W = code_words(self.item_bits)
        if not out:
            return np.zeros(0 if W == 1 else (0, W), dtype=np.uint64)
        return unique_codes(np.concatenate(out))

    @property
    def _string_path(self) -> bool:
        """Whether assembly goes string by string, byte by byte (:meth:`_assemble_strings`):
        byte strings of more than 64 bits cut into whole bytes."""
        return self._wide and self.codec.kind == "bytes" and self.fragment_bits % 8 == 0

    def _extensions(self, psi: np.ndarray, octets: np.ndarray, ended: np.ndarray,
                    recs_psi: np.ndarray, recs_octets: np.ndarray,
                    usable: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Every possible one-position extension of the partial strings ``octets``.

        A partial that has ended (holds a zero byte) extends only by the zero fragment,
        with no record (index -1): every later byte of its string is padding. Another
        extends by each usable record of its own piece (``recs_psi`` sorted) whose bytes
        keep it a possible string prefix: no set bit after a zero byte, and for text valid
        UTF-8 so far (:func:`~fastldp.heavyhitters.items.string_prefix_mask`,
        :func:`~fastldp.heavyhitters.items.utf8_prefix_mask`, on the bytes from the start
        of the partial's last character on). Returns ``(parent, record)`` index arrays.
        """
        fb = recs_octets.shape[1]
        usable_idx = np.flatnonzero(usable)
        upsi = recs_psi[usable_idx]
        live = np.flatnonzero(~ended)
        lo = np.searchsorted(upsi, psi[live], side="left")
        hi = np.searchsorted(upsi, psi[live], side="right")
        reps = hi - lo
        parent = np.repeat(live, reps)
        start = np.repeat(lo - (np.cumsum(reps) - reps), reps)
        rec = usable_idx[start + np.arange(parent.shape[0])] if parent.size else \
            np.zeros(0, dtype=np.int64)
        if parent.size:
            # the window: the partial's last 4 bytes from its last character's lead byte on
            # ('a' before it, a neutral ASCII byte), then the new bytes; the partial itself is
            # possible, so the window decides whether the extension is
            width = octets.shape[1]
            tail = np.full((parent.shape[0], 4), ord("a"), dtype=np.uint8)
            if width:
                take = min(4, width)
                tail[:, 4 - take:] = octets[parent, width - take:]
            lead = (tail < 0x80) | (tail >= 0xC0)
            last_lead = 3 - np.argmax(lead[:, ::-1], axis=1)
            tail[np.arange(4)[None, :] < last_lead[:, None]] = ord("a")
            window = np.concatenate([tail, recs_octets[rec]], axis=1)
            bits = 8 * window.shape[1]
            code = np.zeros(window.shape[0], dtype=np.uint64)
            for col in range(window.shape[1]):
                code = (code << np.uint64(8)) | window[:, col].astype(np.uint64)
            ok = string_prefix_mask(code, bits)
            if self.text_items:
                ok &= utf8_prefix_mask(code, bits)
            parent, rec = parent[ok], rec[ok]
        done = np.flatnonzero(ended)
        parent = np.concatenate([parent, done])
        rec = np.concatenate([rec, np.full(done.shape[0], -1, dtype=np.int64)])
        order = np.argsort(parent, kind="stable")
        return parent[order], rec[order]

    def _assemble_strings(self, kept: list, counts: list) -> np.ndarray:
        """Step 2 for long byte strings: partial strings grown position by position.

        Every piece starts from the empty string; a partial extends by the kept
        fragments of its piece that keep it a possible string (:meth:`_extensions`),
        and once it holds the zero terminator by zeros alone, with no record needed
        at the positions that are only padding. While a piece holds at most
        ``max_combinations`` partials this is every combination (the short items'
        rule). A piece that would hold more is decoded greedily with peeling, at most
        ``PEEL_ROUNDS`` rounds: each round follows the largest remaining count at
        every position (ties: the smaller fragment), then subtracts the path's
        smallest count (its bottleneck, the string's own count when nothing else
        shares its rarest fragment) from every record on it, so that the next round
        finds the piece's next string. The all-zero record of a position pools
        every string of the piece that ended by then: it never sets the
        bottleneck, stays usable at zero, and a found string's count comes off it
        at every position past the string's end (kept there or not on the path),
        so it counts the strings not yet found. A complete string whose own
        puzzle piece is its piece is a candidate.
        """
        f, P, L = self.fragment_bits, self.n_positions, self.item_bytes
        fb, a = f // 8, self.puzzle_bits
        shifts = np.uint64(8) * np.arange(fb - 1, -1, -1, dtype=np.uint64)
        recs_psi = [(np.asarray(r, dtype=np.uint64) >> np.uint64(f)).astype(np.int64)
                    for r in kept]
        recs_oct = [((np.asarray(r, dtype=np.uint64)[:, None] >> shifts[None, :])
                     & np.uint64(0xFF)).astype(np.uint8) for r in kept]
        found_psi, found_oct = [], []

        def grow(t, psi, octets, ended, rec):
            new = np.zeros((rec.shape[0], fb), dtype=np.uint8)
            real = rec >= 0
            new[real] = recs_oct[t][rec[real]]
            return np.concatenate([octets, new], axis=1), ended | (new == 0).any(axis=1)

        # phase 1: every combination while a piece holds few
        psi = np.unique(recs_psi[0]) if P else np.zeros(0, dtype=np.int64)
        octets = np.zeros((psi.shape[0], 0), dtype=np.uint8)
        ended = np.zeros(psi.shape[0], dtype=bool)
        crowded = np.zeros(0, dtype=np.int64)
        for t in range(P):
            parent, rec = self._extensions(psi, octets, ended, recs_psi[t], recs_oct[t],
                                           np.ones(recs_psi[t].shape[0], dtype=bool))
            psi = psi[parent]
            octets, ended = grow(t, psi, octets[parent], ended[parent], rec)
            pieces, sizes = np.unique(psi, return_counts=True)
            over = pieces[sizes > self.max_combinations]
            if over.size:
                crowded = np.union1d(crowded, over)
                keep = ~np.isin(psi, over)
                psi, octets, ended = psi[keep], octets[keep], ended[keep]
        found_psi.append(psi)
        found_oct.append(octets)

        # phase 2: greedy paths with peeling for the crowded pieces
        if crowded.size:
            resid = [np.asarray(c, dtype=np.float64).copy() for c in counts]
            # an all-zero record ends a string: it stays usable after peeling (it pools
            # every string of the piece that ended) and never sets the bottleneck
            is_end = [(o == 0).all(axis=1) for o in recs_oct]
            end_of = np.full((P, 1 << a), -1, dtype=np.int64)  # the piece's all-zero record
            for t in range(P):
                end_of[t, recs_psi[t][is_end[t]]] = np.flatnonzero(is_end[t])
            pieces = crowded
            for _ in range(PEEL_ROUNDS):
                if not pieces.size:
                    break
                n_p = pieces.shape[0]
                row = np.arange(n_p)  # partial -> its piece's row
                octets = np.zeros((n_p, 0), dtype=np.uint8)
                ended = np.zeros(n_p, dtype=bool)
                path = np.full((n_p, P), -1, dtype=np.int64)
                for t in range(P):
                    parent, rec = self._extensions(pieces[row], octets, ended, recs_psi[t],
                                                   recs_oct[t],
                                                   (resid[t] > 0) | (is_end[t] & (t > 0)))
                    if not parent.size:
                        row = row[:0]
                        break
                    real = rec >= 0  # ended partials (-1) have the zero fragment only
                    score = np.full(rec.shape[0], np.inf)
                    score[real] = resid[t][rec[real]]
                    frag = np.full(rec.shape[0], -1.0)
                    frag[real] = np.asarray(kept[t], dtype=np.float64)[rec[real]]
                    order = np.lexsort((frag, -score, parent))
                    parent, rec = parent[order], rec[order]
                    first = np.ones(parent.shape[0], dtype=bool)
                    first[1:] = parent[1:] != parent[:-1]
                    parent, rec = parent[first], rec[first]
                    row = row[parent]
                    path[row, t] = rec
                    octets, ended = grow(t, pieces[row], octets[parent], ended[parent], rec)
                # peel: the path's smallest count off every record on it (dead paths too, so
                # that the next round differs); a piece with no record left at position 0 is done
                used = path >= 0
                bottleneck = np.full(n_p, np.inf)
                ends = np.full(n_p, np.inf)
                for t in range(P):
                    on = np.flatnonzero(used[:, t])
                    if on.size:
                        mine = path[on, t]
                        end = is_end[t][mine]
                        bottleneck[on[~end]] = np.minimum(bottleneck[on[~end]],
                                                          resid[t][mine[~end]])
                        ends[on[end]] = np.minimum(ends[on[end]], resid[t][mine[end]])
                bottleneck = np.where(np.isfinite(bottleneck), bottleneck, ends)
                for t in range(P):
                    on = np.flatnonzero(used[:, t])
                    if on.size:
                        np.subtract.at(resid[t], path[on, t], bottleneck[on])
                # a complete string of z bytes is in the all-zero record of every position
                # t >= ceil(z / fb); the path holds the first of them only when the
                # terminator starts a fragment
                ended_at = np.full(n_p, P)
                if row.size:
                    zero = octets == 0
                    length = np.where(zero.any(axis=1), np.argmax(zero, axis=1), P * fb)
                    ended_at[row] = -(-length // fb)
                for t in range(1, P):
                    on = np.flatnonzero((ended_at <= t) & ~used[:, t])
                    idx = end_of[t, pieces[on]]
                    hit = idx >= 0
                    resid[t][idx[hit]] -= bottleneck[on[hit]]
                if row.size:  # the paths that reached the last position
                    found_psi.append(pieces[row])
                    found_oct.append(octets)
                pieces = pieces[used[:, 0]]
        psi = np.concatenate(found_psi)
        octets = np.concatenate([o.reshape(-1, P * fb) for o in found_oct])
        inside = (octets[:, L:] == 0).all(axis=1)  # the bytes past the item are padding
        psi, octets = psi[inside], octets[inside, :L]
        W = code_words(self.item_bits)
        buf = np.zeros((octets.shape[0], 8 * W), dtype=np.uint8)
        buf[:, 8 * W - L:] = octets
        codes = buf.view(">u8").astype(np.uint64)
        codes = codes[:, 0].copy() if W == 1 else codes
        codes = codes[self.puzzle(codes) == psi]
        if not codes.shape[0]:
            return np.zeros(0 if W == 1 else (0, W), dtype=np.uint64)
        return unique_codes(codes)

    def _join(self, lists: list) -> np.ndarray:
        """Every combination of the positions' fragments as item codes (``P f > 64``).

        Combinations whose padding bits are not zero are dropped; the others are
        ``sum_t frag_t << (f (P - 1 - t) - pad)`` written into ``W = ceil(m / 64)`` words
        (most significant first; 1-d when ``m <= 64``).
        """
        f, P, pad = self.fragment_bits, self.n_positions, self._pad
        W = code_words(self.item_bits)
        grids = np.meshgrid(*[np.asarray(fr, dtype=np.uint64) for fr in lists], indexing="ij")
        frags = np.stack([g.ravel() for g in grids], axis=1)
        frags = frags[(frags[:, P - 1] & np.uint64((1 << pad) - 1)) == 0] if pad else frags
        out = np.zeros((frags.shape[0], W), dtype=np.uint64)
        for t in range(P):
            v, shift = frags[:, t], f * (P - 1 - t) - pad
            if shift < 0:  # the last fragment: its low bits are the padding
                v, shift = v >> np.uint64(-shift), 0
            word, r = divmod(shift, 64)
            out[:, W - 1 - word] |= v << np.uint64(r)
            if r + f > 64 and word + 1 < W:
                out[:, W - 2 - word] |= v >> np.uint64(64 - r)
        return out[:, 0].copy() if W == 1 else out

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
        cands = self._possible(self.assemble(kept, kept_counts), self.item_bits)
        final = self.item_counts(Z_item, n, cands)
        order = (np.lexsort((cands, -final))[:self.k] if cands.ndim == 1
                 else top_k_order(cands, final, self.k))
        levels.append({"level": self.n_positions, "prefix_bits": self.item_bits,
                       "n_reports": n, "n_candidates": int(cands.shape[0]),
                       "kept": int(order.shape[0])})
        codes, counts = cands[order], final[order]
        r = self.n_columns / (self.n_columns - 1.0)
        f = np.clip(counts, 0.0, float(n))
        e = self.item_epsilon
        variances = r * r * (f * self._v1(e) + (n - f) * self._v0(e))
        return codes, counts, variances, levels


def cms_part_law(seed: int, hash_base: int, n_rows: int, n_columns: int, epsilon: float,
                 codes: np.ndarray) -> np.ndarray:
    """Exact law ``P[i, j 2^m + s]`` of the CMS part of ``codes[i]`` (``m <= 8``).

    ``(1 / R) prod_l P(bit l of s)``, bit ``h_j(x)`` set with probability
    ``p = e^(eps/2) / (1 + e^(eps/2))``, every other with ``q = 1 - p``.
    """
    R, m = n_rows, n_columns
    if m > 8:
        raise ValueError(f"cms_part_law enumerates R 2^m outputs; m <= 8, got {m}")
    q = 1.0 / (math.exp(epsilon / 2.0) + 1.0)
    bits = (np.arange(1 << m)[None, :] >> np.arange(m)[:, None]) & 1  # (m, 2^m)
    law = np.empty((codes.shape[0], R, 1 << m))
    for j in range(R):
        h = fo_hash(seed, hash_base + j, codes, m)
        on = np.where(np.arange(m)[None, :] == h[:, None], 1.0 - q, q)  # (size, m)
        law[:, j] = np.prod(np.where(bits[None] == 1, on[:, :, None], 1.0 - on[:, :, None]),
                            axis=1) / R
    return law.reshape(codes.shape[0], R << m)
