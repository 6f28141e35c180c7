"""PEM, the prefix extending method (Wang, Li, Jha: heavy hitters of a huge domain by OLH on prefixes).

Users are split into ``g`` public groups by their identity: group
``j(i) = (h_i g) >> 32``, ``h_i`` a public 32-bit hash of
``(codebook_seed, i)`` (:func:`~fastldp._kernels._heavy.heavy_groups`), so
the split needs no coordination and does not depend on the reports' order. Group ``j`` (``j = 0 .. g-1``) reports the
prefix of its item of

    b_j = s + j * eta  bits,   s = m - (g - 1) * eta,  b_{g-1} = m,

by OLH on the prefix domain ``[0, 2^b_j)``: identity ``i`` hashes its
prefix with its own hash ``H_i`` onto ``G = round(e^eps) + 1`` buckets
(the OLH hash of :mod:`fastldp.oracles.olh`) and reports the bucket kept
with probability ``p = e^eps / (e^eps + G - 1)``, else one of the other
``G - 1`` buckets uniformly. A user sends one report, so PEM is
``eps``-LDP.

The server decodes level by level. Level 0 evaluates all ``2^s`` prefixes;
level ``j > 0`` evaluates the candidates ``C_j``: each of the ``c k``
prefixes kept at level ``j - 1`` extended by every ``eta``-bit suffix
(``c k 2^eta`` candidates). A candidate's support is
``S(v) = #{i in group j : H_i(v) = y_i}`` (:func:`~fastldp._kernels._heavy.heavy_support`,
``O(n_j |C_j| / 8)`` Philox blocks), its count in the group
``f_j(v) = (S(v) - n_j / G) / (p - 1/G)`` (OLH's unbiased estimate) and its
count in the population ``f(v) = (n / n_j) f_j(v)``. The top ``c k``
candidates by ``f`` (ties: the smaller code) are kept; the last level's top
``k`` are the result.

Variance of a final count (group ``J = g - 1``, ``n_J`` reports, scale
``r = n / n_J``): OLH's plug-in variance of the group's count,
``n_J V0 + f_J (V1 - V0)`` with ``V0 = (1/G)(1 - 1/G) / (p - 1/G)^2`` and
``V1 = p (1 - p) / (p - 1/G)^2``, times ``r^2``, plus the sampling variance
of the group's share of the item's holders, ``f (1 - f / n)(r - 1)``: the
group is a random sample of ``n_J`` of the ``n`` users (the public hash of the
identities) and ``r X``, ``X`` the holders in it, estimates ``f`` with
variance ``n^2 q (1 - q)(1 / n_J - 1 / n)``, ``q = f / n`` (the
finite-population correction of a ratio estimate; the binomial ``f (r - 1)``
ignores that ``r`` uses the realized ``n_J`` and overstates it for an item
held by a large share of the users).
``f`` and ``f_J`` are clipped to ``[0, n]`` and ``[0, n_J]`` in the plug-in.

Defaults: ``k = 32`` (the issue's setting), ``c = 1`` (the paper keeps the
top ``k`` prefixes at each level; since issue 34 a level keeps more by the
width rule below), ``eta = 4`` for integers and 8 for strings, and ``g`` the fewest groups
whose first level covers ``c k 2^eta`` prefixes at most:
``g = 1 + ceil((m - s_min) / eta) = ceil((m - ceil(log2(c k))) / eta)``,
``s_min = ceil(log2(c k)) + eta`` (one group when ``s_min >= m``: the whole
domain at once). That is the paper's number of groups, whose first group
reports ``ceil(log2 k) + eta`` bits (as pure-ldp's ``PEMServer``); here the
first level is shortened instead, so that the last level is exactly ``m``
bits and no item is padded.

Long items (strings of ``9 .. 64`` bytes, ``m = 8 L > 64`` bits). A
prefix wider than 64 bits is a code of several words
(:mod:`fastldp.heavyhitters.items`); the OLH hash sees its 64-bit key
``prefix_keys(prefix, b_j)`` (:func:`~fastldp.heavyhitters.items.prefix_keys`:
the prefix itself up to 64 bits, so every level of at most 64 bits, and
every short item, hashes exactly as before; beyond, a public 60-bit hash
of the prefix with its low 3 bits kept). Group ``j`` reports
``H_i(prefix_keys(prefix(x, b_j), b_j))``; the server keeps its candidates
as full prefixes (codes) and hashes their keys. Two distinct candidates of
one level share a key with probability ``2^-60`` (then they share their
support); nothing else changes, so the estimator, its variance and the
privacy (one OLH report of a function of the item: ``eps``-LDP) are the
same. The default ``g`` grows with ``m`` (the first level stays at most
``MAX_FIRST_LEVEL_BITS = 24`` bits, and at most ``ceil(log2(c k)) + eta``
by default): ``L = 16``, ``k = 32``, ``eta = 4`` gives ``g = 31`` groups.
That is the cost of long items: each level is decoded from its own group
of ``n / g`` users, so the sd of a population count of an item nobody
holds is ``sqrt(g n V0)``, ``sqrt(g)`` times that of a one-level OLH, and
an item is found only when its count clears the noise at every one of the
``g`` levels. ``eta`` (bits per level) and ``g`` are parameters: a larger
``eta`` means fewer groups (``g ~ m / eta``) at ``c k 2^eta`` candidates
per level. :meth:`PEM.level_channel` (and the audits built on it)
enumerate prefixes of at most 16 bits, so they cover the short levels
only.

Ended strings (issue 34: no budget spent on padding). A string of
``l < L`` bytes is padded with zero bytes: its zero terminator is a symbol
of the tree, and a user in a group whose prefix is longer than ``l`` bytes
reports the complete string followed by zeros, the same at every level
after the end. A candidate whose last whole byte is zero has ended (no
user holds any other extension of it, :func:`~fastldp.heavyhitters.items.string_prefix_mask`);
with ``pool_ended`` (default) its support ``S`` and its number of reports
``n_r`` are summed over every level since the one where it ended (it is
kept at each, or never seen again), and its count is
``(S - n_r / G) / (p - 1/G) * n / n_r`` with the variance above for
``n_J = n_r``: a title that ends at byte 20 of 64 is counted from about 2/3
of the users instead of 1/64. The privacy is unchanged (the reports are the
same). Strings default to byte-aligned levels (``eta = 8``).

Width (issue 34: candidates that survive their noise). With ``z`` (default
2.326 for strings; integers keep the fixed width ``c k`` by default, for
speed), a level keeps the top ``c k`` prefixes and also every prefix ``v``
with ``f(v) + z sqrt(sd(v)^2 + sd_T^2) >= T``, at most ``max_kept``
(default ``max(16 c k, 64)``) by count. ``sd(v)^2 = r^2 n_r V0 + f(v)(r - 1)``
is the variance of a prefix's count from its level: OLH's noise plus the
sampling of its holders into the level's group (``r = n / n_r``, ``f``
clipped to ``[0, n]``). The bar ``T`` is the ``k``-th count among the ended
strings of the level whose count clears the noise (below), when there are
``k`` of them: a lower estimate of the ``k``-th item count, which every
prefix of a top-``k`` item exceeds. Before that, ``T = q sd0(v)``, ``q``
the ``1 - 1/C`` normal quantile for ``C`` candidates (about one prefix
nobody holds passes per level, by the normal approximation; at large
eps more, see "Result"), ``sd0`` the OLH part of ``sd``. A prefix
whose true count is ``T`` falls below the bar with probability
``1 - Phi(z) = 1%`` at ``z = 2.326`` (normal approximation; the bar's own
error counted by ``sd_T``), per level; a longer string crosses more
levels (``1 - 0.99^levels`` in all), so raise ``z`` for long strings. The
cap keeps the cost bounded: each kept prefix costs ``2^eta`` candidates
of the next level.

Result (issue 34). The last level returns ``k`` candidates: with the width
rule, those whose count clears the noise first, by count, then the others
by their count in units of their own bar (``z=None``: by count alone). A
candidate's support when nobody holds it is ``Binomial(n_r, 1/G)``, and
the bar is its exact ``1 - FINAL_NULL_RATE / C`` quantile, in counts: a
string nobody holds clears it with probability at most
``FINAL_NULL_RATE = 0.01`` per decode.
Why exact: at eps 8, ``G = 2,982`` and a full-length candidate is decoded
from one group (about 22,600 reports for 42-byte strings at 10^6 users),
about 7.6 null hits, whose upper tail is Poisson-like and far heavier than
the normal's; the normal ``1 - 1/C`` quantile of earlier versions let in a
true prefix followed by noise bytes in most decodes of the ``def`` lines at
eps 8, k 32, ahead of true strings of the top 32. On the model of the
decode below (16 draws each, byte survey) precision went from 0.885 to
0.902 on the ``def`` lines at eps 8, k 32, and from 0.926 to 0.945 on the
words (8-byte field) at eps 4, k 32. A stricter bar leaves more true
strings below it where fewer than ``k`` clear (eps 2), so the others are
ranked by ``count / bar``, not by count (where the full-length candidates,
decoded from one group, lead by noise): words at eps 2, k 16 / 32, 0.602 /
0.344 before, 0.551 / 0.295 with the stricter bar ranking the rest by
count, 0.609 / 0.363 by ``count / bar``; the other cells tried (words eps
4 k 16, eps 8 k 32; ``def`` lines eps 4 k 16, eps 8 k 16) unchanged. The
width rule keeps the normal ``1 - 1/C`` quantile: the exact one there
lowered the ``def`` lines at eps 8, k 32 to 0.879.

Path score (issue 34). On long strings the cap binds at every deep level,
and ranking the prefixes by their count alone loses true ones there: each
prefix is decoded from its own group only, and a prefix nobody holds has
``2^eta`` null extensions at the next level, the best of which is about the
``1 - 2^-eta`` quantile of a null count, so chains of such prefixes sustain
themselves at the cap and push out a true prefix whose count fell by noise
at one level (``def`` lines, eps 8, k 32: every miss was a true prefix
dropped this way at levels 10 to 32). A true prefix, by contrast, is
supported again at every level below it. So with ``path_weight = w > 0``
(default 0.7 for strings with the width rule) the cap keeps the top ``c k``
by count and fills the rest of ``max_kept`` by the path score
``s(v) = min(f(v) / sd0(v), T / sd0(v)) + w s(parent(v))`` (``s = 0`` for
the first level's parents). The clip at the bar ``T`` (in units of ``sd0``,
the noise quantile before ``k`` strings ended) is the choice that makes
this work: a prefix held by many users says nothing about which of its
extensions are held, so without it every extension of a heavy shared prefix
(``"def __init__(self, "``) inherits a large score and they crowd out the
rest (measured: precision 0); with it a heavy parent gives its extensions
no more than a true prefix at the bar does. Along a prefix held by at
least ``T`` users the score settles near ``(T / sd0) / (1 - w)``, along a
null chain near ``q / (1 - w)``, ``q`` the best of ``2^eta`` null z-scores
(about 2.8 for 256); a true prefix with one low level keeps most of its
score. Equal scores go by count, then the smaller code: without noise
(eps 30 and up) every held prefix clips alike, and the count rule decides,
so exact recovery is unchanged. It only orders the prefixes that already
pass the width rule, so it changes nothing where the cap does not bind
(short items, integers). The
choice was made on a model of the decode (``python
bench/heavyhitters_path_model.py``: the real rule, with each level's OLH
support drawn from its binomial law given the true prefix counts): ``def``
lines cut to 42 bytes, eps 8, k 32, 16 draws of 10^6 users, precision 0.729
by count, 0.779 / 0.799 / 0.812 / 0.818 at ``w`` = 0.3 / 0.5 / 0.7 / 0.85
(sd of each mean about 0.01): a plateau from 0.7 on. It does not reach
eps 4 on that workload: there a true prefix's z per level (about 1) is
below what the best of 256 null extensions reaches at every level (about
2.8), so no score over the path tells the two kinds of chain apart.

Alphabet (issue 34). ``alphabet``, a set of byte values, restricts the
tree to strings of those bytes (and the zero terminator): a candidate is
kept only if every byte that completes at its level is in it, so a kept
prefix has one extension per allowed byte instead of ``2^eta``. It is a
decode setting (the reports do not depend on it) meant for the bytes a
public survey saw (:func:`fastldp.heavyhitters.two_rounds`, whose byte
survey supplies it when it is sharp enough to trust): fewer null
extensions slow the chains of the "Path score" above; a string holding a
byte outside the alphabet can never be returned.

Allocation (issue 34). ``allocation="equal"`` (default) gives each group
``1 / g`` of the users (the rule above). Otherwise group ``j`` gets the share
``w_j``: identity ``i`` joins the group whose cumulative bounds
``round(2^32 sum_{l <= j} w_l)`` hold its public 32-bit hash ``h_i``
(public, so the split needs no coordination). ``"front"``: ``w_j``
proportional to ``4^(-j / (g - 1))``, more users where every prefix is
still alive and fewer where only long strings continue (an ended string is
counted from every later group anyway, when pooled). The estimator needs no
change: a level's count is scaled by ``n / n_j``, ``n_j`` its realized
reports. Measured in docs/guide/heavyhitters.rst.

Verification (issue 34). ``verify = v`` in ``[0, 1)`` (default 0): a
public share ``v`` of the users, by the same identity hash as the groups,
joins the last group: they report OLH of their full item (the last level's
channel, ``b_{g-1} = m``), and the other ``1 - v`` are split over the ``g``
levels as ``allocation`` says. So the final candidates (the last level's
extensions of the prefixes kept before it, and the ended strings, pooled)
are ranked by the counts of the last group and the verification users
together: a final count's ``n_J`` grows from about ``n / g`` to
``n ((1 - v) w_{g-1} + v)``. Without it, a string that ends at the last
level is ranked from one group of ``n / g`` users (``g ~ 42`` levels for
64-byte strings), so near-ties at the ``k``-th rank fall by noise even when
every true string is a candidate. The estimator keeps its form (a count is
scaled by its group's realized reports, ``r = n / n_J``) and so does the
variance above, with the larger ``n_J``: the verification users are a
random public sample of the users like any group. The price: the discovery
levels share ``1 - v`` of the users, and the last level's support costs
``O(n_J |C_J|)``. Every user still sends one OLH report (the verification
users that of the last level), so PEM stays ``eps``-LDP. Default 0:
measured at 10^6 users on real text (docs/heavyhitters_evaluation.md) the
misses are prefixes lost mid-tree, not near-ties of the final ranking, so
the share lowered precision in every cell tried (eps 8, k 32: 0.562 to
0.469 at ``v = 0.1``).

Partials keep the reports (:mod:`fastldp.heavyhitters._base`); report
files decode in ``g`` passes with bounded memory
(:meth:`~fastldp.heavyhitters.HeavyHitterProtocol.decode_report_files`).

References
----------
.. [1] T. Wang, N. Li, S. Jha, "Locally differentially private heavy hitter
   identification", IEEE TDSC 2019 (arXiv:1708.06674).
.. [2] T. Wang, J. Blocki, N. Li, S. Jha, "Locally differentially private
   protocols for frequency estimation", USENIX Security 2017 (OLH).
"""

from __future__ import annotations

import math
from typing import Any, Callable, Iterator, Optional

import numpy as np
from scipy import special, stats

from .._kernels._heavy import heavy_buckets, heavy_groups, heavy_support
from .._sanitize import SanitizationReport
from .._validation import check_float, check_int, param_error
from ..oracles._base import (
    all_legal_report, as_report_array, classify_integers, public_uniform, tally_report,
)
from ..oracles.olh import olh_buckets_for
from ._base import Chunks, HeavyHitterProtocol
from .items import (
    _whole_octets, code_order, extend, prefix, prefix_keys, top_k_order, utf8_prefix_mask,
)

__all__ = ["PEM", "pem_groups", "pem_levels", "allocation_weights"]

#: the most prefixes the first level may enumerate
MAX_FIRST_LEVEL_BITS = 24

#: default z of the width rule: a true top-k prefix is lost at a level with
#: probability about 1% (module docstring, "Width")
DEFAULT_Z = 2.326

#: default cap on the prefixes kept per level: ``max(16 c k, 64)``
DEFAULT_MAX_KEPT_FACTOR = 16

#: the final ranking's bar: a string nobody holds clears it with probability about this,
#: per decode (module docstring, "Result")
FINAL_NULL_RATE = 0.01

#: default weight of a parent's path score for strings (module docstring, "Path score")
DEFAULT_PATH_WEIGHT = 0.7


def _alphabet(alphabet: Any, kind: str, owner: str) -> tuple:
    """``(sorted tuple of the allowed bytes with 0, bool mask of 256)``, or ``(None, None)``."""
    if alphabet is None:
        return None, None
    if kind != "bytes":
        raise param_error("alphabet", owner, "None for integer items (an alphabet is of "
                          "string bytes: give item_bytes)", alphabet)
    expected = "None, bytes or a sequence of ints in [0, 255]"
    if isinstance(alphabet, str) or not hasattr(alphabet, "__iter__"):
        raise param_error("alphabet", owner, expected, alphabet, TypeError)
    values = list(alphabet)  # bytes give their ints
    for v in values:
        if isinstance(v, (bool, np.bool_)) or not isinstance(v, (int, np.integer)):
            raise param_error("alphabet", owner, expected, f"{alphabet!r} (holding {v!r})",
                              TypeError)
    bad = [v for v in values if not 0 <= int(v) <= 255]
    if bad:
        raise param_error("alphabet", owner, "byte values in [0, 255]",
                          f"{alphabet!r} (holding {bad[0]!r})")
    allowed = np.zeros(256, dtype=bool)
    allowed[[int(v) for v in values]] = True
    allowed[0] = True  # the terminator: every string ends
    return tuple(int(v) for v in np.flatnonzero(allowed)), allowed


def pem_groups(seed: int, identities: Any, g: int) -> np.ndarray:
    """The public group ``(h_i g) >> 32`` of each identity (int64 in ``[0, g)``)."""
    return heavy_groups(seed, np.ascontiguousarray(identities, dtype=np.uint64), g)


#: allocation="front": the first level gets this many times the users of the last, the
#: shares in between geometric (module docstring, "Allocation")
FRONT_RATIO = 4.0


def allocation_weights(allocation: Any, g: int, owner: str = "PEM") -> Optional[np.ndarray]:
    """The share of the users of each of the ``g`` groups; None for ``"equal"``.

    ``"front"``: ``w_j`` proportional to ``FRONT_RATIO^(-j / (g - 1))`` (the
    first level ``FRONT_RATIO`` times the last); a sequence of ``g`` positive
    finite numbers: those, normalized.
    """
    if isinstance(allocation, str):
        if allocation == "equal":
            return None
        if allocation == "front":
            if g == 1:
                return None
            w = FRONT_RATIO ** (-np.arange(g) / (g - 1.0))
            return w / w.sum()
        raise param_error("allocation", owner, "'equal', 'front' or g positive weights",
                          allocation)
    try:
        w = np.asarray(allocation, dtype=np.float64)
    except (TypeError, ValueError):
        raise param_error("allocation", owner, "'equal', 'front' or g positive weights",
                          allocation, TypeError) from None
    if w.ndim != 1 or w.shape[0] != g or not bool(np.all(w > 0)) \
            or not bool(np.all(np.isfinite(w))):
        raise param_error("allocation", owner,
                          f"'equal', 'front' or {g} positive finite weights (one per group)",
                          allocation)
    return w / w.sum()


def pem_levels(item_bits: int, k: int, c: int, eta: Optional[int], g: Optional[int],
               default_eta: int = 4):
    """``(g, eta, s)``: the defaults of the module docstring where ``g`` / ``eta`` are None."""
    if eta is None:
        eta = min(default_eta, item_bits)
    s_min = math.ceil(math.log2(c * k)) + eta
    if g is None:
        g = 1 if s_min >= item_bits else 1 + math.ceil((item_bits - s_min) / eta)
    s = item_bits - (g - 1) * eta
    return g, eta, s


class PEM(HeavyHitterProtocol):
    """The prefix extending method: OLH on item prefixes, by group, extended level by level.

    Parameters
    ----------
    epsilon : float in (0, 700]
    k : int >= 1, default 32
        Heavy hitters returned.
    g : int >= 1, optional
        Groups (levels); default: module docstring.
    eta : int in [1, 63], optional
        Bits added per level; default 8 for strings (a byte per level), 4 for
        integers (each level evaluates ``2^eta`` extensions of each kept
        prefix).
    c : int >= 1, default 1
        Prefixes kept per level at least: ``c * k``.
    z : float in [0, 40], None or "auto" (default)
        The width rule (module docstring, "Width"): also keep every prefix
        within ``z`` standard errors of the bar. ``None``: exactly ``c k``
        (the paper's rule and the default before issue 34). ``"auto"``:
        2.326 for strings, None for integers.
    max_kept : int >= c k, optional
        The most prefixes kept per level (the memory and time limit of the
        width rule); default ``max(16 c k, 64)``.
    path_weight : float in [0, 1) or "auto" (default)
        When more than ``max_kept`` prefixes pass the width rule, the cap keeps
        the top ``c k`` by count and then the best by path score (module
        docstring, "Path score"), each prefix's clipped evidence plus
        ``path_weight`` times its parent's score. 0: by count (the rule before).
        ``"auto"``: 0.7 for strings with the width rule, else 0.
    pool_ended : bool, default True
        Strings: estimate a string that ended (its zero terminator is in the
        prefix) from the reports of every level since it ended (module
        docstring, "Ended strings"). False: from the last level's group only.
    text : bool or None
        True: items are UTF-8 text, results are ``str`` and only valid UTF-8
        prefixes are candidates. None (default): so once :meth:`privatize` of
        this object was given ``str`` items. False: bytes.
    allocation : "equal" (default), "front" or a sequence of g positive weights
        The users' split over the groups (module docstring, "Allocation"):
        equal shares (the paper's), more users for the first levels
        (geometric, the first ``FRONT_RATIO = 4`` times the last), or the
        given shares.
    verify : float in [0, 1), default 0.0
        The share of the users that join the last level's group to verify
        the final ranking (module docstring, "Verification"); the others are
        split by ``allocation``.
    alphabet : None (default), bytes or a sequence of ints in [0, 255]
        Strings only: the bytes a candidate may hold (module docstring,
        "Alphabet"); the zero terminator is always allowed. None: every byte.
        The server's decode uses it, the reports do not depend on it.
    item_bits, item_bytes : int, optional
        The items (:mod:`fastldp.heavyhitters.items`): integers of up to 64
        bits or strings of up to 64 bytes; default 32-bit integers.
    codebook_seed : int or None
        Keys the groups and the OLH hashes.
    n_threads : int or None

    Attributes
    ----------
    prefix_bits : tuple of int
        ``b_j`` for each group.

    Notes
    -----
    ``s = item_bits - (g - 1) * eta`` must lie in ``[1, 24]`` (the first
    level enumerates ``2^s`` prefixes). See the module docstring for the
    protocol, the estimator and its variance, and for long items (more than
    8 bytes): about ``m / eta`` groups by default, ``n / g`` users each.

    Examples
    --------
    >>> import numpy as np
    >>> pem = PEM(epsilon=4.0, k=2, item_bytes=3, codebook_seed=5)
    >>> words = [b"cat"] * 5000 + [b"dog"] * 3000 + [b"ox"] * 500
    >>> result = pem.estimate(pem.privatize(words, rng=2))
    >>> result.items
    [b'cat', b'dog']
    >>> pem.prefix_bits          # strings: a byte per level
    (8, 16, 24)
    >>> text = PEM(epsilon=4.0, k=2, item_bytes=3, codebook_seed=5)
    >>> text.estimate(text.privatize([w.decode() for w in words], rng=2)).items  # str in, str out
    ['cat', 'dog']
    >>> long = PEM(epsilon=4.0, k=2, item_bytes=12, eta=8, codebook_seed=5)
    >>> long.g, long.prefix_bits[:3], long.prefix_bits[-1]
    (12, (8, 16, 24), 96)
    >>> phrases = [b"heavy hitter"] * 9000 + [b"prefix tree"] * 6000 + [b"x"] * 500
    >>> long.estimate(long.privatize(phrases, rng=2)).items
    [b'heavy hitter', b'prefix tree']
    """

    #: the parameters added after report files recorded PEM's spec (issue 34), with what a
    #: spec without them meant: the fixed width c k, no pooling of ended strings
    spec_added = {"z": None, "pool_ended": False, "allocation": "equal", "verify": 0.0,
                  "path_weight": 0.0, "alphabet": None,
                  "max_kept": lambda p: max(DEFAULT_MAX_KEPT_FACTOR * p.get("c", 1)
                                            * p.get("k", 32), 64)}

    def __init__(self, *, epsilon: float, k: int = 32, g: Optional[int] = None,
                 eta: Optional[int] = None, c: int = 1, item_bits: Optional[int] = None,
                 item_bytes: Optional[int] = None, codebook_seed: Optional[int] = None,
                 n_threads: Optional[int] = None, z: Any = "auto",
                 max_kept: Optional[int] = None, pool_ended: bool = True,
                 text: Optional[bool] = None, allocation: Any = "equal",
                 verify: Any = 0.0, path_weight: Any = "auto", alphabet: Any = None) -> None:
        super().__init__(epsilon=epsilon, k=k, item_bits=item_bits, item_bytes=item_bytes,
                         codebook_seed=codebook_seed, n_threads=n_threads, text=text)
        owner = "PEM"
        m = self.item_bits
        self.c = check_int(c, "c", owner, low=1, high=1 << 16)
        if isinstance(z, str) and z == "auto":
            # strings: the width rule (issue 34); integers: the fixed width c k, whose decode of
            # 10^6 reports over 2^32 stays under a second (the rule widens every level to
            # max_kept there: no ended strings give a bar, 0.97 instead of 0.88 of the top 32
            # at eps 4, in 9 times the time)
            z = DEFAULT_Z if self.codec.kind == "bytes" else None
        self.z = None if z is None else check_float(z, "z", owner, low=0.0, high=40.0,
                                                    high_open=False)
        if isinstance(path_weight, str) and path_weight == "auto":
            path_weight = (DEFAULT_PATH_WEIGHT if self.z is not None and self.codec.kind == "bytes"
                           else 0.0)
        self.path_weight = check_float(path_weight, "path_weight", owner, low=0.0, high=1.0,
                                       low_open=False, high_open=True)
        self.alphabet, self._allowed = _alphabet(alphabet, self.codec.kind, owner)
        self.max_kept = (max(DEFAULT_MAX_KEPT_FACTOR * self.c * self.k, 64) if max_kept is None
                         else check_int(max_kept, "max_kept", owner, low=self.c * self.k,
                                        high=1 << 24))
        if not isinstance(pool_ended, (bool, np.bool_)):
            raise param_error("pool_ended", owner, "True or False", pool_ended, TypeError)
        self.pool_ended = bool(pool_ended)
        if eta is not None:
            eta = check_int(eta, "eta", owner, low=1, high=min(m, 63))
        if g is not None:
            g = check_int(g, "g", owner, low=1, high=m)
        # strings: byte-aligned levels by default (a level adds one byte; eta=4 split every
        # byte over two levels, each decoded from its own group of users)
        self.g, self.eta, self.s = pem_levels(m, self.k, self.c, eta, g,
                                              8 if self.codec.kind == "bytes" else 4)
        if not 1 <= self.s <= MAX_FIRST_LEVEL_BITS:
            raise param_error(
                "g" if g is not None else "eta", owner,
                f"such that s = item_bits - (g - 1) * eta lies in [1, {MAX_FIRST_LEVEL_BITS}] "
                f"(item_bits={m}, eta={self.eta}, g={self.g})", g if g is not None else eta)
        self.prefix_bits = tuple(self.s + j * self.eta for j in range(self.g))
        self._weights = allocation_weights(allocation, self.g, owner)
        self.verify = check_float(verify, "verify", owner, low=0.0, high=1.0, low_open=False,
                                  high_open=True)
        if self.verify > 0.0 and self.g > 1:
            base = (np.full(self.g, 1.0 / self.g) if self._weights is None else self._weights)
            self._weights = (1.0 - self.verify) * base
            self._weights[-1] += self.verify
        self.allocation = (allocation if isinstance(allocation, str)
                           else [float(x) for x in np.asarray(allocation, dtype=np.float64)])
        if self._weights is not None:
            # the group of an identity: where its public 32-bit hash falls among the shares'
            # cumulative bounds (equal shares keep the (h g) >> 32 rule, bit for bit)
            self._bounds = np.round(np.cumsum(self._weights)[:-1] * 2.0 ** 32).astype(np.int64)
        self.n_buckets = int(olh_buckets_for(np.array([self.epsilon]))[0])
        e = math.exp(self.epsilon)
        self.p = e / (e + self.n_buckets - 1)

    def _stream_extra(self) -> dict:
        return {"g": self.g, "eta": self.eta, "c": self.c, "z": self.z,
                "max_kept": self.max_kept, "pool_ended": self.pool_ended,
                "allocation": self.allocation, "verify": self.verify,
                "path_weight": self.path_weight,
                "alphabet": None if self.alphabet is None else list(self.alphabet)}

    # ------------------------------------------------------------ client
    def groups(self, identities: Any) -> np.ndarray:
        """The public group of each identity (module docstring, "Allocation")."""
        if self._weights is None:
            return pem_groups(self.codebook_seed, identities, self.g)
        hashes = pem_groups(self.codebook_seed, identities, 1 << 32)
        return np.searchsorted(self._bounds, hashes, side="right").astype(np.int64)

    def _prefixes(self, codes: np.ndarray, groups: np.ndarray) -> np.ndarray:
        """The key (:func:`~fastldp.heavyhitters.items.prefix_keys`) of each user's prefix."""
        if codes.ndim == 1:  # up to 64 bits: the prefix is its own key
            shift = (self.item_bits - np.asarray(self.prefix_bits, dtype=np.uint64)[groups])
            return codes >> shift.astype(np.uint64)
        keys = np.empty(codes.shape[0], dtype=np.uint64)
        for j, bits in enumerate(self.prefix_bits):
            mine = groups == j
            if mine.any():
                keys[mine] = prefix_keys(prefix(codes[mine], bits, self.item_bits), bits)
        return keys

    def _privatize_codes(self, codes, identities, rng):
        n = codes.shape[0]
        G = self.n_buckets
        prefixes = self._prefixes(codes, self.groups(identities))
        hashed = heavy_buckets(self.codebook_seed, identities, prefixes,
                               np.full(n, G, dtype=np.int64))
        keep = rng.random(n) < self.p
        other = np.minimum((rng.random(n) * (G - 1)).astype(np.int64), G - 2)
        other += other >= hashed
        np.copyto(other, hashed, where=keep)
        return other

    def level_channel(self, identity: int = 0) -> tuple[int, np.ndarray]:
        """``(b, P)``: the identity's prefix length and its exact law ``P[x, y]``.

        ``x`` ranges over the ``2^b`` prefixes, ``y`` over the ``G`` buckets:
        ``P[x, H(x)] = p``, every other bucket ``(1 - p) / (G - 1)``. For the
        audit of tiny instances (``b <= 16``; for long items only the short
        levels: a prefix of more than 64 bits is hashed through its key, a
        function of the prefix, so a level's channel is OLH's on the keys).
        """
        j = int(self.groups(np.array([identity], dtype=np.uint64))[0])
        b = self.prefix_bits[j]
        if b > 16:
            raise ValueError(f"level_channel enumerates 2^{b} prefixes; at most 2^16")
        size = 1 << b
        G = self.n_buckets
        hashed = heavy_buckets(self.codebook_seed, np.full(size, identity, dtype=np.uint64),
                               np.arange(size, dtype=np.uint64), np.full(size, G, dtype=np.int64))
        law = np.full((size, G), (1 - self.p) / (G - 1))
        law[np.arange(size), hashed] = self.p
        return b, law

    # ------------------------------------------------------------ server
    def _sanitize(self, reports, identities, owner) -> tuple[np.ndarray, SanitizationReport]:
        n = identities.shape[0]
        arr = as_report_array(reports)
        if arr.ndim != 1 or arr.shape[0] != n:
            raise ValueError(f"The 'reports' parameter of {owner} must be a 1-d array with one "
                             f"report per identity ({n}). Got shape {arr.shape} instead.")
        G = self.n_buckets
        if arr.dtype.kind in "iu" and arr.dtype.itemsize <= 8 and n:
            if int(arr.min()) >= 0 and int(arr.max()) < G:
                return np.ascontiguousarray(arr, dtype=np.int64), all_legal_report(n)
        if n == 0:
            return np.zeros(0, dtype=np.int64), all_legal_report(0)
        values, numeric, integral, wrong_dtype = classify_integers(arr)
        legal = integral & (values >= 0) & (values < G)
        out = values.copy()
        bad = ~legal
        if bad.any():
            out[bad] = public_uniform(self.codebook_seed, identities[bad],
                                      np.full(int(bad.sum()), G, dtype=np.int64))
        return out, tally_report(n, numeric, integral, legal, bool(wrong_dtype))

    def _by_level(self, chunks: Chunks) -> Callable[[int], Iterator[tuple[np.ndarray, np.ndarray]]]:
        """``level -> iterator of (identities, reports)`` of that level's group.

        Reports held in memory are split by group once; a streamed source is
        read again for every level, each chunk filtered by its groups.
        """
        memory = getattr(chunks, "memory", None)
        if memory is not None:
            ids, reps = memory
            groups = self.groups(ids)
            order = np.argsort(groups, kind="stable")
            bounds = np.searchsorted(groups[order], np.arange(self.g + 1))
            ids_by, reps_by = ids[order], reps[order]

            def in_memory(level: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
                lo, hi = bounds[level], bounds[level + 1]
                yield ids_by[lo:hi], reps_by[lo:hi]
            return in_memory

        def streamed(level: int) -> Iterator[tuple[np.ndarray, np.ndarray]]:
            for ids, reps in chunks():
                mine = self.groups(ids) == level
                yield ids[mine], reps[mine]
        return streamed

    def _level_support(self, level_data, level: int,
                       candidates: np.ndarray) -> tuple[np.ndarray, int]:
        """``(S(v) for v in candidates, n_j)`` over the reports of group ``level``."""
        candidates = prefix_keys(candidates, self.prefix_bits[level])
        hits = np.zeros(candidates.shape[0], dtype=np.int64)
        n_j = 0
        for ids, reps in level_data(level):
            m = int(ids.shape[0])
            if not m:
                continue
            n_j += m
            hits += heavy_support(self.codebook_seed, np.ascontiguousarray(ids),
                                  np.ascontiguousarray(reps),
                                  np.full(m, self.n_buckets, dtype=np.int64), candidates,
                                  self.n_threads)
        return hits, n_j

    def _decode(self, chunks: Chunks, n: int):
        G, p = self.n_buckets, self.p
        v0 = (1.0 / G) * (1 - 1.0 / G) / (p - 1.0 / G) ** 2
        v1 = p * (1 - p) / (p - 1.0 / G) ** 2
        level_data = self._by_level(chunks)
        candidates = self._possible(np.arange(1 << self.s, dtype=np.uint64), self.s)
        pool: dict[int, tuple[int, int]] = {}  # ended string -> (support, reports) so far
        pooling = self.pool_ended and self.codec.kind == "bytes"
        levels = []
        parents = None  # (sorted keys, path scores) of the last level's kept prefixes
        for j, bits in enumerate(self.prefix_bits):
            last = j == self.g - 1
            if last and self.text_items:  # a full-length item must be complete UTF-8
                candidates = candidates[utf8_prefix_mask(candidates, bits, complete=True)]
            hits, n_j = self._level_support(level_data, j, candidates)
            support = hits.astype(np.float64)
            reports = np.full(candidates.shape[0], float(n_j))
            ended = (self._pool_ended(pool, candidates, bits, support, reports) if pooling
                     else np.zeros(0, dtype=np.int64))
            with np.errstate(divide="ignore", invalid="ignore"):
                scale = np.where(reports > 0, n / np.maximum(reports, 1.0), 0.0)
            in_group = (support - reports / G) / (p - 1.0 / G)
            counts = in_group * scale
            size = candidates.shape[0]
            if last:
                keep = min(self.k, size)
                order = self._final(candidates, counts,
                                    self._null_counts(reports, scale, FINAL_NULL_RATE / size), keep)
            else:
                # a held prefix's count also varies with the share of its holders that fell in
                # this level's group (the sampling term of the module docstring's variance)
                spread = np.sqrt(scale ** 2 * reports * v0
                                 + np.clip(counts, 0.0, n) * np.maximum(scale - 1.0, 0.0))
                parent_score = (self._parent_scores(candidates, bits, parents)
                                if parents is not None else np.zeros(size))
                null_sd = scale * np.sqrt(reports * v0)
                # what noise alone does not reach: the 1 - 1/C normal quantile of a null count
                # (module docstring, "Result": the exact tail measured worse here)
                noise = float(special.ndtri(1.0 - 1.0 / size)) * null_sd
                order, path = self._kept(candidates, counts, null_sd, noise, spread, ended,
                                         parent_score)
                keep = int(order.shape[0])
            levels.append({"level": j, "prefix_bits": bits, "n_reports": n_j,
                           "n_candidates": int(size), "kept": keep})
            if last:
                r, n_r = scale[order], reports[order]
                f_j = np.clip(in_group[order], 0.0, n_r)
                f = np.clip(counts[order], 0.0, n)
                variances = np.where(
                    n_r > 0,
                    r ** 2 * (n_r * v0 + f_j * (v1 - v0)) + f * (1.0 - f / n) * np.maximum(r - 1.0, 0.0),
                    np.inf)
                return candidates[order], counts[order], variances, levels
            kept = candidates[order]
            if self.path_weight > 0.0:
                keys = prefix_keys(kept, bits)
                by_key = np.argsort(keys, kind="stable")
                parents = (keys[by_key], path[by_key])
            candidates = self._possible(extend(kept[code_order(kept)], self.eta, bits=bits),
                                        bits + self.eta)
        raise AssertionError("unreachable")  # pragma: no cover

    def _final(self, candidates: np.ndarray, counts: np.ndarray, noise: np.ndarray,
               keep: int) -> np.ndarray:
        """Indices of the ``keep`` results (module docstring, "Result"), best first.

        With the width rule (``z`` set), the candidates whose count clears
        ``noise`` (the count a candidate nobody holds exceeds with probability
        ``FINAL_NULL_RATE / C``, :meth:`_null_counts`) come first, by count,
        then the others by ``count / noise``; without it (``z=None``, the
        paper's rule) the top ``keep`` by count.
        """
        if self.z is None or candidates.shape[0] <= keep:
            return top_k_order(candidates, counts, keep)  # by count, ties: smaller code
        clear = np.flatnonzero(counts > noise)
        first = clear[top_k_order(candidates[clear], counts[clear], keep)]
        if first.shape[0] == keep:
            return first
        rest = np.setdiff1d(np.arange(candidates.shape[0]), first)
        # the rest by count in units of its own bar: a pooled string's bar is far lower than
        # that of a candidate decoded from one group, whose count is mostly noise
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = np.where(noise[rest] > 0, counts[rest] / noise[rest], -np.inf)
        return np.concatenate([first, rest[top_k_order(candidates[rest], ratio,
                                                       keep - first.shape[0])]])

    def _null_counts(self, reports: np.ndarray, scale: np.ndarray, rate: float) -> np.ndarray:
        """The count that each candidate's noise alone exceeds with probability at most
        ``rate`` (module docstring, "Result"): its support when nobody holds it is
        ``Binomial(n_r, 1/G)``, taken exactly (at eps 8, ``G`` = 2,982 and a level's null
        support is about 8 hits, far from normal in its upper tail)."""
        G, p = self.n_buckets, self.p
        distinct, at = np.unique(reports, return_inverse=True)
        hits = stats.binom.isf(rate, distinct, 1.0 / G)  # P(S > hits) <= rate
        return ((hits - distinct / G) / (p - 1.0 / G))[at.reshape(-1)] * scale

    def _possible(self, candidates: np.ndarray, bits: int) -> np.ndarray:
        """The base class's possible candidates, and with ``alphabet`` only those whose
        bytes completed at this level are all in it (module docstring, "Alphabet")."""
        candidates = super()._possible(candidates, bits)
        if self._allowed is None or not candidates.shape[0]:
            return candidates
        before = bits - self.eta if bits > self.s else 0  # the bits of the level before
        octets = _whole_octets(candidates, bits)[:, before // 8:]
        return candidates[self._allowed[octets].all(axis=1)]

    def _parent_scores(self, candidates: np.ndarray, bits: int, parents: tuple) -> np.ndarray:
        """The path score of each candidate's parent (the prefix ``eta`` bits shorter)."""
        keys, scores = parents
        if bits - self.eta <= 0 or not keys.shape[0]:
            return np.zeros(candidates.shape[0])
        mine = prefix_keys(prefix(candidates, bits - self.eta, bits), bits - self.eta)
        at = np.minimum(np.searchsorted(keys, mine), keys.shape[0] - 1)
        return np.where(keys[at] == mine, scores[at], 0.0)

    def _kept(self, candidates: np.ndarray, counts: np.ndarray, null_sd: np.ndarray,
              noise: np.ndarray, sd: np.ndarray, ended: np.ndarray,
              parent_score: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Indices of the prefixes kept at a level (module docstring, "Width"), best first,
        and their path scores ("Path score"; zeros when ``path_weight`` is 0).

        The top ``c k`` by count; with ``z``, also every prefix ``v`` with
        ``f(v) + z sqrt(sd(v)^2 + sd_T^2) >= T``: ``T`` the ``k``-th count of
        the complete strings of the level (``ended``, pooled) when there are
        ``k`` of them, else ``T = noise`` (per candidate: the count a prefix
        nobody holds does not reach, ``q sd0``), ``sd`` the sd of the
        prefix's count (``null_sd``: ``sd0``, its OLH part); at most
        ``max_kept`` in all: the top ``c k`` by count, then by count
        (``path_weight`` 0) or by path score.
        """
        size = candidates.shape[0]
        base = min(self.c * self.k, size)
        if self.z is None or size <= base:
            order = top_k_order(candidates, counts, base)
            return order, np.zeros(order.shape[0])
        if self.path_weight > 0.0:
            return self._kept_by_path(candidates, counts, null_sd, noise, sd, ended,
                                      parent_score, base)
        order = top_k_order(candidates, counts, min(self.max_kept, size))
        bar, bar_sd = self._bar(counts, noise, sd, ended)
        if np.ndim(bar):
            bar = bar[order]
        within = counts[order] + self.z * np.sqrt(sd[order] ** 2 + bar_sd ** 2) >= bar
        within[:base] = True
        order = order[within]
        return order, np.zeros(order.shape[0])

    def _bar(self, counts: np.ndarray, noise: np.ndarray, sd: np.ndarray,
             ended: np.ndarray) -> tuple[Any, float]:
        """The width rule's bar ``T`` (a count, or one per candidate: ``noise``) and its sd."""
        strong = ended[counts[ended] > noise[ended]]  # complete strings above the noise
        if strong.shape[0] >= self.k:
            t = strong[np.argsort(-counts[strong], kind="stable")[self.k - 1]]
            return counts[t], float(sd[t])
        return noise, 0.0

    def _kept_by_path(self, candidates, counts, null_sd, noise, sd, ended, parent_score, base):
        """:meth:`_kept` with the cap ranked by path score (module docstring, "Path score")."""
        bar, bar_sd = self._bar(counts, noise, sd, ended)
        with np.errstate(divide="ignore", invalid="ignore"):
            evidence = np.where(null_sd > 0, counts / null_sd, 0.0)
            # the clip in units of sd0 (while no k strings ended: the noise bar's quantile)
            clip = np.where(null_sd > 0, bar / null_sd, 0.0)
        path = np.minimum(evidence, clip) + self.path_weight * parent_score
        first = top_k_order(candidates, counts, base)
        within = counts + self.z * np.sqrt(sd ** 2 + bar_sd ** 2) >= bar
        within[first] = False
        rest = np.flatnonzero(within)
        room = self.max_kept - first.shape[0]
        # by path score; equal scores (clipped alike: no noise to tell them apart) by count,
        # then the smaller code
        rank = np.empty(rest.shape[0], dtype=np.int64)
        rank[code_order(candidates[rest])] = np.arange(rest.shape[0])
        rest = rest[np.lexsort((rank, -counts[rest], -path[rest]))[:room]]
        order = np.concatenate([first, rest])
        return order, path[order]
