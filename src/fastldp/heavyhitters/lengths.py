"""A first round that learns the strings' lengths, so that the tree's levels cover only the lengths that hold mass.

Issue 34, item 1 ("no user's budget goes to padding"). A prefix tree over a
field of ``L`` bytes has a level per byte, each decoded from its own group
of about ``n / L`` users: the noise of a prefix's count at a level grows as
``sqrt(L)``. When most strings end long before ``L`` (words: 90% within 10
bytes; the standard library's ``def`` lines: median 28 of 64), most levels
serve only the few long strings, and every level's group is smaller for it.

Two rounds, each user sending one report (so the whole is ``eps``-LDP for
every user, who is in one round only):

1. **The survey**: the users of a public share
   (``share``, default 2.5%, chosen by a public hash of their identity under
   a key of its own: :func:`survey_members`, independent of the protocols'
   groups) report the byte length of their string,
   ``min(len, max_bytes)`` in ``[0, max_bytes]`` (:func:`string_lengths`),
   through a frequency oracle over those ``max_bytes + 1`` values
   (:func:`length_oracle`: ``"auto"``, the one of least variance). The
   server (:func:`length_plan`) makes
   the estimated counts a distribution (Norm-Sub,
   :func:`fastldp.oracles.postprocess.norm_sub`) and picks the field
   ``item_bytes``: the fewest bytes whose estimated share of the strings
   that fit is at least ``coverage`` (default 0.85), at least
   ``min_bytes`` (default 8). A :class:`LengthPlan` holds both.
   **The byte survey**, beside it: the users of a second public share
   (``byte_share``, default 2.5%, the same hash, never a user of the length
   survey: :func:`byte_survey_members`) report one byte of their string,
   drawn uniformly among its distinct bytes (:func:`string_bytes`), through
   the least-variance oracle over the 256 values (:func:`byte_oracle`). The
   server keeps the bytes whose estimated share clears the noise
   (:func:`byte_alphabet`) as the plan's ``alphabet``, which PEM's tree then
   extends with (``PEM(alphabet=...)``): a prefix nobody holds has one
   extension per byte of the alphabet instead of 256, so the chains of such
   prefixes that fill PEM's cap at deep levels (pem's module docstring, "Path
   score") branch over 67 bytes instead of 256 on the ``def`` lines. The
   bet: the bytes of a heavy string are common overall (the rarest byte of
   the top 32 ``def`` lines, ``'``, is in 0.042% of the byte reports; the
   survey's bar at eps 8 is about 0.020%). A string holding a byte the survey
   missed cannot be found, so the alphabet is used only when the survey is
   sharp: ``unseen``, the sum over the left-out bytes of their estimated
   share (clipped at 0) plus their ``1 - 1/256`` bound, bounds the share of
   the surveyed bytes the alphabet leaves out, and when it exceeds
   ``max_unseen`` (default 0.1) the plan's alphabet is None. At 25,000 survey
   users that admits eps 8 (0.068 on the ``def`` lines, 0.050 on the words)
   and not eps 4 (0.84 on the words), where a forced alphabet left out 2
   bytes of the top 32 words and lowered PEM from 0.918 to 0.883 at k = 32.
   On the ``def`` lines at eps 8, k = 32 the alphabet raises PEM from 0.812
   to 0.885 (with the path score; 0.807 without it; 0.902 with pem's exact final
   bar, its "Result"). All from the model
   of PEM's decode, ``python bench/heavyhitters_path_model.py --alphabet
   survey`` (``forced``; ``--workload words --epsilon 4 --field 8``), 8 or
   16 draws. The 5% taken by both surveys is the 5% the length survey had
   alone; at 25,000 users it picks the same fields as at 50,000 (42 bytes
   for the ``def`` lines and 8 for the words at eps 4 and 8, six draws each).
2. **The tree**: the other users run the protocol (PEM, TreeHist or SFP)
   over ``item_bytes``, each string cut to it at a character boundary
   (:func:`cut_to_field`). A string longer than the field is reported by its
   cut prefix, which the server may return when that prefix is itself
   heavy (the plan's ``coverage`` bounds the share of such users). PEM gets
   the survey's alphabet (TreeHist and SFP take none).

:func:`two_rounds` runs both on a list of strings, for simulation and
benchmarks.

The coverage. Fewer levels mean less noise at every level; a field that
cuts a heavy string loses it. Frequent strings are short (the law of
abbreviation: the top 32 words are at most 4 bytes, the top 32 ``def``
lines at most 39 of 64), so the field can leave out the longest strings'
tail. Measured on the eight-language words (10^6 users, ``epsilon = 4``,
``k = 16``, the draw of ``fastldp reproduce heavy-hitters-text``): coverage
0.9 picks 10 bytes and finds 0.875 of the top 16; 0.8 and 0.7 pick 8 bytes
and find 0.938 (the known-dictionary ceiling: 1.000); raising PEM's
``max_kept`` to 512 at 10 bytes still finds 0.875, so the levels are the
limit, not the width. The default 0.85 picks 8 bytes for the words and 42
for the ``def`` lines (0.8 would pick 39, at the edge of the 39-byte lines
of the top 32). See docs/guide/heavyhitters.rst for the table.

Examples
--------
>>> words = ["cat"] * 7000 + ["horse"] * 2500 + ["hippopotamus"] * 500
>>> survey = length_oracle(epsilon=4.0, max_bytes=32, codebook_seed=1)
>>> plan = length_plan(survey.estimate(survey.privatize(string_lengths(words, 32), rng=2)))
>>> plan.item_bytes
8
>>> cut_to_field(["hippopotamus", "日本語"], 7)
['hippopo', '日本']
"""

from __future__ import annotations

import math
import inspect
from dataclasses import dataclass, replace
from typing import Any, Optional, Sequence

import numpy as np
from scipy import special

from .._kernels._heavy import heavy_groups
from .._random import as_generator, resolve_codebook_seed
from .._validation import check_float, check_int, param_error
from ..oracles import make_oracle
from ..oracles.postprocess import norm_sub
from .items import MAX_ITEM_BYTES

__all__ = ["LengthPlan", "string_lengths", "length_oracle", "length_plan", "cut_to_field",
           "survey_members", "survey_seed", "two_rounds", "string_bytes", "byte_oracle",
           "byte_alphabet", "byte_survey_members"]

#: the length survey's share of the users by default
DEFAULT_SHARE = 0.025
#: the byte survey's share of the users by default (beside the length survey's)
DEFAULT_BYTE_SHARE = 0.025
#: the byte survey's bar in standard errors (:func:`byte_alphabet`)
DEFAULT_BYTE_Z = 1.645
#: the byte survey's alphabet is used only when the bytes it leaves out can hold at most
#: this share of the surveyed bytes (module docstring, "The byte survey")
DEFAULT_MAX_UNSEEN = 0.1
#: the share of the strings the field must hold by default
DEFAULT_COVERAGE = 0.85
#: the shortest field the plan picks by default (short fields gain little and cut words)
DEFAULT_MIN_BYTES = 8


def _as_bytes(item: Any, owner: str, j: int) -> bytes:
    if isinstance(item, str):
        return item.encode("utf-8")
    if isinstance(item, (bytes, bytearray, memoryview, np.bytes_)):
        return bytes(item)
    raise param_error("items", owner, "a sequence of str or bytes", f"{item!r} at index {j}",
                      TypeError)


def cut_to_field(items: Sequence[Any], item_bytes: int) -> list:
    """Each string cut to at most ``item_bytes`` bytes: ``str`` at a character boundary
    (whole UTF-8 characters only), ``bytes`` at the byte."""
    owner = "cut_to_field"
    item_bytes = check_int(item_bytes, "item_bytes", owner, low=1, high=MAX_ITEM_BYTES)
    if isinstance(items, (str, bytes)):
        raise param_error("items", owner, "a sequence of str or bytes", items, TypeError)
    out = []
    for j, item in enumerate(items):
        raw = _as_bytes(item, owner, j)
        if len(raw) <= item_bytes:
            out.append(item)
        elif isinstance(item, str):
            out.append(raw[:item_bytes].decode("utf-8", errors="ignore"))
        else:
            out.append(raw[:item_bytes])
    return out


#: the word that separates the survey's split from the protocols' groups (``SeedSequence``
#: entropy beside the codebook seed)
SURVEY_SPLIT_KEY = 0x4C454E47  # "LENG"


def survey_seed(seed: int) -> int:
    """The key of the survey's split: a ``SeedSequence`` child of ``(seed, SURVEY_SPLIT_KEY)``.

    Not ``seed`` itself: the protocols split their users into groups by the
    same hash under ``seed`` (PEM's group ``(h g) >> 32``), so a split by
    ``h < share 2^32`` would take the whole first group (every user of it
    when ``share >= 1 / g``) into the survey.
    """
    return int(np.random.SeedSequence([int(seed), SURVEY_SPLIT_KEY])
               .generate_state(1, dtype=np.uint64)[0])


def survey_members(identities: Any, share: float, seed: int) -> np.ndarray:
    """Whether each identity is in the survey: its public 32-bit hash under
    :func:`survey_seed` ``(seed)`` is below ``share 2^32`` (the hash of the PEM split,
    :func:`~fastldp._kernels._heavy.heavy_groups`, under another key)."""
    share = _share(share, "share", "survey_members")
    return _survey_hash(identities, seed) < int(round(share * 2.0 ** 32))


def byte_survey_members(identities: Any, share: float, byte_share: float,
                        seed: int) -> np.ndarray:
    """Whether each identity is in the byte survey: the same public hash as
    :func:`survey_members` in ``[share 2^32, (share + byte_share) 2^32)``, so the two
    surveys never share a user."""
    owner = "byte_survey_members"
    share = _share(share, "share", owner)
    byte_share = check_float(byte_share, "byte_share", owner, low=0.0, high=1.0 - share,
                             low_open=False, high_open=True)
    h = _survey_hash(identities, seed)
    return ((h >= int(round(share * 2.0 ** 32)))
            & (h < int(round((share + byte_share) * 2.0 ** 32))))


def _share(share: float, name: str, owner: str) -> float:
    """A survey's share of the users, in ``[0, 1]`` (NaN fails)."""
    return check_float(share, name, owner, low=0.0, high=1.0, low_open=False, high_open=False)


def _survey_hash(identities: Any, seed: int) -> np.ndarray:
    ids = np.ascontiguousarray(identities, dtype=np.uint64)
    return heavy_groups(survey_seed(seed), ids, 1 << 32)


@dataclass(frozen=True)
class LengthPlan:
    """What the survey found: the estimated length law and the field it picks.

    Attributes
    ----------
    distribution : float64 array, shape (max_bytes + 1,)
        Estimated share of the strings of each byte length (Norm-Sub of the
        oracle's counts; the last entry holds every string of ``max_bytes``
        bytes or more).
    item_bytes : int
        The field: the fewest bytes, at least ``min_bytes``, whose estimated
        share of fitting strings is at least ``coverage``.
    coverage : float
    n : int
        Survey reports decoded.
    alphabet : tuple of int or None
        The bytes the byte survey saw (:func:`byte_alphabet`), or None: no byte
        survey, or one too coarse to trust (``unseen > max_unseen``).
    unseen : float
        The byte survey's bound on the share of the strings' bytes its alphabet
        leaves out (nan without a byte survey).
    byte_n : int
        Byte survey reports decoded.
    """

    distribution: np.ndarray
    item_bytes: int
    coverage: float
    n: int
    alphabet: Optional[tuple] = None
    unseen: float = float("nan")
    byte_n: int = 0

    def covered(self, item_bytes: int) -> float:
        """The estimated share of strings of at most ``item_bytes`` bytes."""
        return float(self.distribution[: int(item_bytes) + 1].sum())


def string_lengths(items: Sequence[Any], max_bytes: int = 64) -> np.ndarray:
    """``min(len(UTF-8 bytes), max_bytes)`` of each string (int64): the survey's values."""
    owner = "string_lengths"
    max_bytes = check_int(max_bytes, "max_bytes", owner, low=1, high=MAX_ITEM_BYTES)
    if isinstance(items, (str, bytes)):
        raise param_error("items", owner, "a sequence of str or bytes", items, TypeError)
    return np.array([min(len(_as_bytes(x, owner, j)), max_bytes) for j, x in enumerate(items)],
                    dtype=np.int64)


def length_oracle(*, epsilon: float, max_bytes: int = 64, oracle: str = "auto",
                  codebook_seed: Optional[int] = None):
    """The survey's frequency oracle over the lengths ``[0, max_bytes]``.

    :func:`fastldp.oracles.make_oracle` of ``oracle`` (``"auto"``: the least
    variance at ``epsilon`` over ``max_bytes + 1`` values). A survey user sends
    one report of its :func:`string_lengths` value, a function of its string:
    ``epsilon``-LDP (the oracle's own audit covers the channel).
    """
    max_bytes = check_int(max_bytes, "max_bytes", "length_oracle", low=1, high=MAX_ITEM_BYTES)
    return make_oracle(oracle, domain_size=max_bytes + 1, epsilon=epsilon,
                       codebook_seed=codebook_seed)


def string_bytes(items: Sequence[Any], max_bytes: int = 64, rng: Any = None) -> np.ndarray:
    """One byte of each string, drawn uniformly among the distinct bytes of its first
    ``max_bytes`` bytes (int64 in ``[0, 255]``; 0 for the empty string): the byte survey's
    values. The draw is the user's own coin (``rng``)."""
    owner = "string_bytes"
    max_bytes = check_int(max_bytes, "max_bytes", owner, low=1, high=MAX_ITEM_BYTES)
    if isinstance(items, (str, bytes)):
        raise param_error("items", owner, "a sequence of str or bytes", items, TypeError)
    gen = as_generator(rng, owner, purpose="privatize")
    out = np.zeros(len(items), dtype=np.int64)
    draws = gen.random(len(items))
    for j, x in enumerate(items):
        distinct = sorted(set(_as_bytes(x, owner, j)[:max_bytes]))
        if distinct:
            out[j] = distinct[min(int(draws[j] * len(distinct)), len(distinct) - 1)]
    return out


def byte_oracle(*, epsilon: float, oracle: str = "auto", codebook_seed: Optional[int] = None):
    """The byte survey's frequency oracle over the 256 byte values.

    :func:`fastldp.oracles.make_oracle` of ``oracle`` (``"auto"``: the least
    variance at ``epsilon`` over 256 values). A byte-survey user sends one
    report of its :func:`string_bytes` value: the value is drawn by the user
    from its own string and the oracle is ``epsilon``-LDP for every value, so
    the report is ``epsilon``-LDP for the string (a mixture of ``epsilon``-LDP
    laws; ``tests/test_heavyhitters_bytes.py`` enumerates it).
    """
    return make_oracle(oracle, domain_size=256, epsilon=epsilon, codebook_seed=codebook_seed)


def byte_alphabet(estimate: Any, *, z: float = DEFAULT_BYTE_Z,
                  max_unseen: float = DEFAULT_MAX_UNSEEN) -> tuple:
    """``(alphabet, unseen)`` from the byte survey's estimate (module docstring).

    The alphabet holds every byte whose estimated share ``f_b`` clears
    ``z sd_b`` (default 1.645: a byte nobody uses passes with probability 5%,
    a byte of the data whose share is ``(z + 1.645) sd_b`` is missed with
    probability 5%; a missed byte loses every string that holds it, an extra
    one only adds candidates, hence the low bar). ``unseen = sum over the
    others of max(f_b, 0) + q sd_b``, ``q`` the ``1 - 1/256`` normal quantile,
    bounds the share of the surveyed bytes the alphabet leaves out; when
    ``unseen > max_unseen`` the survey is too coarse to trust and the
    alphabet is None.
    """
    owner = "byte_alphabet"
    z = check_float(z, "z", owner, low=0.0, high=40.0, low_open=False, high_open=False)
    max_unseen = check_float(max_unseen, "max_unseen", owner, low=0.0, high=1.0,
                             low_open=False, high_open=False)
    counts = getattr(estimate, "counts", None)
    if counts is None or np.asarray(counts).shape != (256,):
        raise param_error("estimate", owner, "a frequency oracle's estimate over the 256 bytes",
                          estimate, TypeError)
    n = int(estimate.n)
    if not n:
        return None, float("inf")
    share = np.asarray(counts, dtype=np.float64) / n
    sd = np.asarray(estimate.std, dtype=np.float64) / n
    q = float(special.ndtri(1.0 - 1.0 / 256))
    seen = share >= z * sd
    unseen = float(np.sum(np.maximum(share[~seen], 0.0) + q * sd[~seen]))
    if unseen > max_unseen:
        return None, unseen
    return tuple(int(b) for b in np.flatnonzero(seen)), unseen


def length_plan(estimate: Any, *, coverage: float = DEFAULT_COVERAGE,
                min_bytes: int = DEFAULT_MIN_BYTES) -> LengthPlan:
    """The :class:`LengthPlan` of a survey's estimate (module docstring).

    Parameters
    ----------
    estimate : FrequencyEstimate
        The length oracle's estimate over ``[0, max_bytes]``.
    coverage : float in (0, 1], default 0.85
        The share of the strings the field must hold.
    min_bytes : int in [1, max_bytes], default 8
        The shortest field picked.
    """
    owner = "length_plan"
    coverage = check_float(coverage, "coverage", owner, low=0.0, high=1.0, low_open=True,
                           high_open=False)
    counts = getattr(estimate, "counts", None)
    if counts is None:
        raise param_error("estimate", owner, "a frequency oracle's estimate over the lengths",
                          estimate, TypeError)
    size = int(np.asarray(counts).shape[0])
    min_bytes = check_int(min_bytes, "min_bytes", owner, low=1, high=max(1, size - 1))
    n = int(estimate.n)
    dist = (np.asarray(norm_sub(estimate).counts, dtype=np.float64) / n if n
            else np.full(size, 1.0 / size))
    fits = np.flatnonzero(np.cumsum(dist) >= coverage - 1e-12)
    field = int(fits[0]) if fits.size else size - 1
    return LengthPlan(distribution=dist, item_bytes=max(min_bytes, field, 1),
                      coverage=coverage, n=n)


def two_rounds(protocol: Any, items: Sequence[Any], *, epsilon: float, k: int,
               max_bytes: int = 64, share: float = DEFAULT_SHARE,
               coverage: float = DEFAULT_COVERAGE, min_bytes: int = DEFAULT_MIN_BYTES,
               byte_share: float = DEFAULT_BYTE_SHARE, byte_z: float = DEFAULT_BYTE_Z,
               max_unseen: float = DEFAULT_MAX_UNSEEN,
               codebook_seed: Optional[int] = None, rng: Any = None, **options: Any):
    """Run the surveys on public shares of the users, then ``protocol`` on the others.

    Parameters
    ----------
    protocol : class
        :class:`~fastldp.heavyhitters.PEM`, :class:`~fastldp.heavyhitters.TreeHist`
        or :class:`~fastldp.heavyhitters.SFP`.
    items : sequence of str or bytes
        One string per user; user ``i`` has identity ``i``.
    epsilon, k : the budget of every report and the heavy hitters asked for.
    max_bytes : int in [1, 64], default 64
        The lengths are capped here; the largest field.
    coverage, min_bytes : see :func:`length_plan`.
    share : float in (0, 1), default 0.025
        The length survey's share of the users (public, by identity).
    byte_share : float in [0, 1 - share), default 0.025
        The byte survey's share (public, by identity, disjoint from the length
        survey's); 0: no byte survey. Its alphabet (:func:`byte_alphabet`) goes
        to a protocol that takes ``alphabet`` (PEM) unless ``options`` give one.
    byte_z, max_unseen : float, default 1.645 and 0.1
        The byte survey's bar and trust (:func:`byte_alphabet`'s ``z`` and
        ``max_unseen``).
    codebook_seed : int or None
        Keys the survey's split and oracle and the protocol.
    rng : None, int, SeedSequence or Generator
    **options
        More parameters of ``protocol``.

    Returns
    -------
    (HeavyHitters, LengthPlan)
        The protocol's result (counts scaled to the tree round's users) and the plan.
    """
    owner = "two_rounds"
    share = check_float(share, "share", owner, low=0.0, high=1.0, low_open=True, high_open=True)
    byte_share = check_float(byte_share, "byte_share", owner, low=0.0, high=1.0 - share,
                             low_open=False, high_open=True)
    seed = resolve_codebook_seed(codebook_seed, owner)
    gen = as_generator(rng, owner, purpose="privatize")
    n = len(items)
    ids = np.arange(n, dtype=np.uint64)
    in_survey = survey_members(ids, share, seed)
    first = [items[i] for i in np.flatnonzero(in_survey)]
    max_bytes = check_int(max_bytes, "max_bytes", owner, low=1, high=MAX_ITEM_BYTES)
    survey = length_oracle(epsilon=epsilon, max_bytes=max_bytes, codebook_seed=seed)
    plan = length_plan(survey.estimate(survey.privatize(string_lengths(first, max_bytes),
                                                        rng=gen)),
                       coverage=coverage, min_bytes=min(min_bytes, max_bytes))
    in_bytes = (byte_survey_members(ids, share, byte_share, seed) if byte_share > 0.0
                else np.zeros(n, dtype=bool))
    if in_bytes.any():
        # its own key for the oracle's hashes: the length survey's codebook is seed's
        bytes_seed = survey_seed(survey_seed(seed))
        oracle = byte_oracle(epsilon=epsilon, codebook_seed=bytes_seed)
        values = string_bytes([items[i] for i in np.flatnonzero(in_bytes)], max_bytes, rng=gen)
        estimate = oracle.estimate(oracle.privatize(values, rng=gen))
        alphabet, unseen = byte_alphabet(estimate, z=byte_z, max_unseen=max_unseen)
        plan = replace(plan, alphabet=alphabet, unseen=unseen, byte_n=int(estimate.n))
        if alphabet is not None and "alphabet" not in options and _takes_alphabet(protocol):
            options = dict(options, alphabet=alphabet)
    rest = np.flatnonzero(~(in_survey | in_bytes))
    tree = protocol(epsilon=epsilon, k=k, item_bytes=plan.item_bytes, codebook_seed=seed,
                    **options)
    cut = cut_to_field([items[i] for i in rest], plan.item_bytes)
    result = tree.estimate(tree.privatize(cut, identities=ids[rest], rng=gen),
                           identities=ids[rest])
    return result, plan


def _takes_alphabet(protocol: Any) -> bool:
    """Whether ``protocol``'s constructor has an ``alphabet`` parameter (PEM's)."""
    try:
        return "alphabet" in inspect.signature(protocol).parameters
    except (TypeError, ValueError):  # pragma: no cover - a builtin or odd callable
        return False
