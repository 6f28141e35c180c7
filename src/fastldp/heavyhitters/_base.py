"""What every heavy-hitter protocol shares: the result, the base class and the report store.

A heavy-hitter server does not decode a fixed domain: which candidates it
evaluates at a level depends on the estimates of the level before. Its
exact streaming state is therefore the (sanitized) reports themselves,
kept in identity order (:class:`HeavyPartial`): ``merge`` is a sorted
merge, so any split of the reports into chunks and any merge order gives
the same partial, bit for bit, and ``finalize`` decodes it. That partial
takes ``O(n)`` memory (16 bytes per report of one word); the
bounded-memory path for report files is :meth:`HeavyHitterProtocol.decode_report_files`,
which decodes level by level, one pass over the files per level, keeping
only the candidates' integer support counts (memory ``O(row group +
candidates)``, flat in the number of reports), and gives the same result as
``estimate``, bit for bit: every decoder of the family reduces reports to
integer counts, whose sums do not depend on the order.

A protocol implements four hooks (see :class:`HeavyHitterProtocol`):
``_privatize_codes``, ``_sanitize``, ``_decode`` and ``_stream_extra``.
"""

from __future__ import annotations

import io
import json
from dataclasses import dataclass
from typing import Any, Callable, Iterable, Iterator, Optional

import numpy as np
from numpy.typing import ArrayLike

from .._random import as_generator, resolve_codebook_seed, resolve_identities, resolve_n_threads
from .._sanitize import SanitizationReport, sanitization_counts, sanitization_report
from .._validation import check_float, check_int, param_error
from ..results import PrivacyStatement, Result
from ._protocol import HeavyHitterProtocolMembers
from .items import MAX_ITEM_BITS, ItemCodec, ended_mask, string_prefix_mask, utf8_prefix_mask

__all__ = ["HeavyHitters", "HeavyHitterProtocol", "HeavyPartial", "Chunks"]

#: A re-iterable source of sanitized reports: calling it yields ``(identities, reports)``
#: chunks (uint64 identities, int64 reports of the protocol's layout). A source held
#: in memory also has the attribute ``memory = (identities, reports)`` (one chunk).
Chunks = Callable[[], Iterator[tuple[np.ndarray, np.ndarray]]]


@dataclass(frozen=True, repr=False)
class HeavyHitters(Result):
    """The top-k items a heavy-hitter protocol found, with estimated counts and errors.

    Attributes
    ----------
    counts : float64 array, shape (k,)
        Estimated number of users holding each item (also ``.estimate``),
        in decreasing order (ties: the smaller item code first).
    variances : float64 array, shape (k,)
        Plug-in variance of each count (the protocol's docstring); ``.std``.
    items : uint64 array, list of bytes or list of str
        The items, in the order of ``counts``: integers for ``item_bits``
        protocols, byte strings (padding stripped) for ``item_bytes`` ones,
        ``str`` for text (``text=True``, or ``str`` items given to
        ``privatize`` of the same object).
    codes : uint64 array, shape (k,) or (k, W)
        The items' codes (:mod:`fastldp.heavyhitters.items`): 1-d up to 64
        bits, rows of ``W = ceil(item_bits / 64)`` words (most significant
        first) for longer strings.
    n : int
        Reports decoded.
    sanitization : SanitizationReport
    privacy : PrivacyStatement
    categories : tuple of str
        Labels of the items (the repr and ``.to_frame()`` show them).
    levels : tuple of dict
        One per level of the decode: ``level``, ``prefix_bits``,
        ``n_reports``, ``n_candidates``, ``kept``.
    k : int
        The number of items asked for (``len(items)`` is smaller only when
        fewer candidates exist, or, for text items, when candidates that are
        not valid UTF-8 were dropped: SFP's assembled strings).

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.heavyhitters import PEM
    >>> pem = PEM(epsilon=4.0, k=2, item_bits=16, codebook_seed=3)
    >>> items = np.repeat(np.array([7, 40000, 123], dtype=np.uint64), [6000, 3000, 1000])
    >>> result = pem.estimate(pem.privatize(items, rng=1))
    >>> result.items.tolist()
    [7, 40000]
    >>> bool(np.all(np.abs(result.counts - [6000, 3000]) < 5 * result.std))
    True
    """

    _estimate_field = "counts"

    counts: np.ndarray
    variances: np.ndarray
    items: Any
    codes: np.ndarray
    n: int
    sanitization: SanitizationReport
    privacy: PrivacyStatement
    categories: tuple
    levels: tuple
    k: int


class HeavyPartial:
    """The exact streaming state of a heavy-hitter decoder: its sanitized reports, by identity.

    Attributes
    ----------
    mechanism : str
    params : dict
        ``stream_params()`` of the protocol; partials of different
        parameters refuse to merge.
    identities : uint64 array, sorted increasing, distinct
    reports : int64 array, rows in the order of ``identities``
    counts : dict of str to int
        Sanitization counts (``n``, ``n_valid``, ``reason:*``).
    wrong_dtype : bool
    """

    __slots__ = ("mechanism", "params", "identities", "reports", "counts", "wrong_dtype")

    def __init__(self, mechanism: str, params: dict, identities: np.ndarray, reports: np.ndarray,
                 counts: dict, wrong_dtype: bool = False) -> None:
        order = np.argsort(identities, kind="stable")
        ids = np.ascontiguousarray(identities[order], dtype=np.uint64)
        if ids.shape[0] > 1 and bool(np.any(ids[1:] == ids[:-1])):
            j = int(np.flatnonzero(ids[1:] == ids[:-1])[0])
            raise ValueError(f"{mechanism}: identity {int(ids[j])} appears twice; identities "
                             "must be distinct across everything decoded together")
        self.mechanism = mechanism
        self.params = dict(params)
        self.identities = ids
        self.reports = np.ascontiguousarray(reports[order], dtype=np.int64)
        self.counts = {k: int(v) for k, v in counts.items()}
        self.wrong_dtype = bool(wrong_dtype)

    @property
    def n(self) -> int:
        return int(self.identities.shape[0])

    def merge(self, other: "HeavyPartial") -> "HeavyPartial":
        """The partial of both chunks (exact, order-free; neither input changes)."""
        if not isinstance(other, HeavyPartial):
            raise TypeError(f"{self.mechanism}.merge merges HeavyPartial objects; got "
                            f"{type(other).__name__}")
        if other.mechanism != self.mechanism or other.params != self.params:
            raise ValueError(f"cannot merge a partial of {other.mechanism}({other.params}) into "
                             f"one of {self.mechanism}({self.params}): partials merge only when "
                             "the mechanism and every public parameter agree")
        counts = {k: self.counts.get(k, 0) + other.counts.get(k, 0)
                  for k in set(self.counts) | set(other.counts)}
        return HeavyPartial(self.mechanism, self.params,
                            np.concatenate([self.identities, other.identities]),
                            np.concatenate([self.reports, other.reports]), counts,
                            self.wrong_dtype or other.wrong_dtype)

    __add__ = merge

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, HeavyPartial):
            return NotImplemented
        return (self.mechanism == other.mechanism and self.params == other.params
                and self.counts == other.counts and self.wrong_dtype == other.wrong_dtype
                and np.array_equal(self.identities, other.identities)
                and self.reports.shape == other.reports.shape
                and np.array_equal(self.reports, other.reports))

    __hash__ = None  # type: ignore[assignment]

    def __repr__(self) -> str:
        return f"HeavyPartial({self.mechanism}, n={self.n})"

    def to_bytes(self) -> bytes:
        """A self-describing ``.npz`` byte string (no pickled objects)."""
        header = {"format": "fastldp-heavy-partial", "version": 1, "mechanism": self.mechanism,
                  "params": self.params, "counts": self.counts, "wrong_dtype": self.wrong_dtype}
        buf = io.BytesIO()
        np.savez(buf, header=np.frombuffer(json.dumps(header).encode(), dtype=np.uint8),
                 identities=self.identities, reports=self.reports)
        return buf.getvalue()

    @classmethod
    def from_bytes(cls, data: bytes) -> "HeavyPartial":
        """Inverse of :meth:`to_bytes`; ``ValueError`` on anything else."""
        try:
            with np.load(io.BytesIO(bytes(data)), allow_pickle=False) as z:
                header = json.loads(z["header"].tobytes().decode())
                if header.get("format") != "fastldp-heavy-partial" or header.get("version") != 1:
                    raise KeyError("format")
                return cls(header["mechanism"], header["params"], z["identities"],
                           z["reports"], header["counts"], header["wrong_dtype"])
        except Exception as exc:
            raise ValueError(f"HeavyPartial.from_bytes: not a heavy-hitter partial ({exc})") \
                from None


def _holds_str(items: Any) -> bool:
    """Whether ``items`` are text: a numpy str array, or a sequence whose first item is ``str``."""
    if isinstance(items, np.ndarray):
        return items.dtype.kind == "U" or (items.dtype == object and items.size > 0
                                           and isinstance(items.flat[0], str))
    try:
        return len(items) > 0 and isinstance(items[0], str)
    except (TypeError, IndexError, KeyError):
        return False


class HeavyHitterProtocol(HeavyHitterProtocolMembers):
    """Base of the heavy-hitter protocols: items, budgets, identities, partials, results.

    Parameters
    ----------
    epsilon : float in (0, 700]
        The budget of every report (local DP).
    k : int >= 1
        How many heavy hitters to return.
    item_bits, item_bytes : int, optional
        The item encoding (:class:`~fastldp.heavyhitters.items.ItemCodec`):
        integers of at most 64 bits or strings of at most 64 bytes; default
        32-bit integers.
    codebook_seed : int or None
        The public randomness (hashes, groups); ``None`` draws one.
    n_threads : int or None
        Threads of the server's kernels; results never depend on it.

    Notes
    -----
    Subclasses implement ``_privatize_codes(codes, identities, rng)``,
    ``_sanitize(reports, identities, owner) -> (clean, SanitizationReport)``,
    ``_decode(chunks, n) -> (codes, counts, variances, levels)`` (``chunks``
    re-iterates ``(identities, clean reports)``, so a decode may make
    several passes) and ``_stream_extra() -> dict``.
    """

    #: how many int64 words one report takes (0: a 1-d array of reports)
    report_width = 0

    def __init__(self, *, epsilon: float, k: int = 32, item_bits: Optional[int] = None,
                 item_bytes: Optional[int] = None, codebook_seed: Optional[int] = None,
                 n_threads: Optional[int] = None, text: Optional[bool] = None) -> None:
        owner = type(self).__name__
        self.epsilon = check_float(epsilon, "epsilon", owner, low=0.0, high=700.0,
                                   high_open=False)
        self.k = check_int(k, "k", owner, low=1, high=1 << 20)
        self.codec = ItemCodec(item_bits=item_bits, item_bytes=item_bytes, owner=owner)
        self.item_bits = self.codec.bits
        self.item_bytes = self.codec.item_bytes
        self.codebook_seed = resolve_codebook_seed(codebook_seed, owner)
        self._n_threads_arg = n_threads
        self.n_threads = resolve_n_threads(n_threads, owner)
        if text is not None and not isinstance(text, (bool, np.bool_)):
            raise param_error("text", owner, "None, True or False", text, TypeError)
        if text and self.codec.kind != "bytes":
            raise param_error("text", owner, "None or False for integer items (item_bits)", text)
        self.text = None if text is None else bool(text)
        # text=None: str output once privatize on this object has seen str items
        self._saw_text = False

    @property
    def text_items(self) -> bool:
        """Whether items are UTF-8 text: ``str`` out, and only valid UTF-8 candidates.

        True when the constructor said ``text=True``, or said nothing
        (``text=None``) and :meth:`privatize` of this object was given ``str``
        items.
        """
        if self.codec.kind != "bytes":
            return False
        return bool(self.text) if self.text is not None else self._saw_text

    # ------------------------------------------------------------ repr / params
    def _repr_args(self) -> dict:
        args: dict[str, Any] = {"epsilon": self.epsilon, "k": self.k}
        args.update(self._stream_extra())
        if self.codec.kind == "bytes":
            args["item_bytes"] = self.item_bytes
        else:
            args["item_bits"] = self.item_bits
        args["codebook_seed"] = self.codebook_seed
        if self.text is not None:
            args["text"] = self.text
        return args

    def __repr__(self) -> str:
        return (f"{type(self).__name__}("
                + ", ".join(f"{k}={v!r}" for k, v in self._repr_args().items()) + ")")

    def _stream_extra(self) -> dict:  # pragma: no cover - abstract
        return {}

    def stream_params(self) -> dict:
        """The public parameters (JSON values): ``type(self)(**stream_params())`` rebuilds it."""
        return self._repr_args()

    # ------------------------------------------------------------ inputs
    def _check_epsilons(self, epsilons: Any, owner: str) -> None:
        if epsilons is None:
            return
        try:
            arr = None if isinstance(epsilons, str) else np.asarray(epsilons, dtype=np.float64)
        except (TypeError, ValueError):
            arr = None
        if arr is None or not np.all(arr == self.epsilon):
            raise param_error("epsilons", owner,
                              f"None or the constructor's epsilon ({self.epsilon!r}): the "
                              "protocol has no personal budgets", epsilons)

    def _n_reports(self, reports: Any, owner: str) -> int:
        try:
            return len(reports)
        except TypeError:
            raise param_error("reports", owner, "an array of reports", reports,
                              TypeError) from None

    # ------------------------------------------------------------ client
    def privatize(self, items: Any, *, epsilons: Optional[ArrayLike] = None,
                  identities: Optional[ArrayLike] = None, rng: Any = None) -> np.ndarray:
        """Privatize one item per user; returns the reports (int64).

        Parameters
        ----------
        items : sequence of int or of bytes / str
            One item per user, in the protocol's encoding.
        epsilons : None or the constructor's epsilon
        identities : array of distinct uint64, optional
            Public identities (default ``0 .. n-1``); they key the hashes
            and the public groups, so the server needs the same ones.
        rng : None, int, SeedSequence or Generator
        """
        owner = f"{type(self).__name__}.privatize"
        codes = self.codec.encode(items)
        if self.text is None and self.codec.kind == "bytes" and _holds_str(items):
            self._saw_text = True
        self._check_epsilons(epsilons, owner)
        ids = resolve_identities(identities, codes.shape[0], owner)
        return self._privatize_codes(codes, ids, as_generator(rng, owner))

    def _privatize_codes(self, codes: np.ndarray, identities: np.ndarray,
                         rng: np.random.Generator) -> np.ndarray:  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------ server
    def estimate(self, reports: Any, *, epsilons: Optional[ArrayLike] = None,
                 identities: Optional[ArrayLike] = None) -> HeavyHitters:
        """Decode the reports: the top-k items with their counts (``finalize(partial(...))``)."""
        return self.finalize(self._partial(reports, epsilons, identities,
                                           f"{type(self).__name__}.estimate"))

    def partial(self, reports: Any, epsilons: Optional[ArrayLike] = None,
                identities: Optional[ArrayLike] = None) -> HeavyPartial:
        """The exact, mergeable state of a chunk of reports (module docstring)."""
        return self._partial(reports, epsilons, identities, f"{type(self).__name__}.partial")

    def _partial(self, reports, epsilons, identities, owner) -> HeavyPartial:
        n = self._n_reports(reports, owner)
        self._check_epsilons(epsilons, owner)
        ids = resolve_identities(identities, n, owner)
        clean, report = self._sanitize(reports, ids, owner)
        return HeavyPartial(type(self).__name__, self.stream_params(), ids, clean,
                            sanitization_counts(report), report.wrong_dtype)

    def merge(self, a: HeavyPartial, b: HeavyPartial) -> HeavyPartial:
        """Merge two partials (exact; any order gives the same partial)."""
        self._check_partial(a, f"{type(self).__name__}.merge")
        return a.merge(b)

    def _check_partial(self, partial: Any, owner: str) -> HeavyPartial:
        if not isinstance(partial, HeavyPartial):
            raise TypeError(f"{owner} takes a HeavyPartial; got {type(partial).__name__}")
        if partial.mechanism != type(self).__name__ or partial.params != self.stream_params():
            raise ValueError(f"{owner}: the partial is of {partial.mechanism}({partial.params}), "
                             f"not of {self!r}")
        return partial

    def finalize(self, partial: HeavyPartial) -> HeavyHitters:
        """The result of a (merged) partial."""
        partial = self._check_partial(partial, f"{type(self).__name__}.finalize")
        ids, reps = partial.identities, partial.reports

        def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            yield ids, reps

        chunks.memory = (ids, reps)  # type: ignore[attr-defined]  # one chunk, in memory
        report = sanitization_report(partial.counts, {"wrong_dtype": partial.wrong_dtype})
        return self._result(chunks, partial.n, report)

    def _result(self, chunks: Chunks, n: int, report: SanitizationReport) -> HeavyHitters:
        codes, counts, variances, levels = self._decode(chunks, n)
        items = self.codec.decode(codes)
        if self.text_items:
            # str in, str out: a candidate that is not complete UTF-8 is no one's item
            # (PEM never returns one: its tree extends only valid UTF-8 prefixes)
            valid = utf8_prefix_mask(codes, self.item_bits, complete=True)
            keep = np.flatnonzero(valid)
            codes, counts, variances = codes[keep], counts[keep], variances[keep]
            items = [items[i].decode("utf-8") for i in keep]
        return HeavyHitters(
            counts=counts, variances=variances, items=items, codes=codes,
            n=n, sanitization=report, privacy=PrivacyStatement.local(epsilon=self.epsilon),
            categories=tuple(self.codec.label(c) for c in codes), levels=tuple(levels), k=self.k)

    def _sanitize(self, reports: Any, identities: np.ndarray,
                  owner: str) -> tuple[np.ndarray, SanitizationReport]:  # pragma: no cover
        raise NotImplementedError

    def _possible(self, candidates: np.ndarray, bits: int) -> np.ndarray:
        """The candidates of ``bits`` bits that can begin an item's code.

        For byte strings, the prefixes with no set bit after a zero byte
        (:func:`~fastldp.heavyhitters.items.string_prefix_mask`): no user holds
        another, so the servers drop them at every level and never return an
        impossible string; for text (:attr:`text_items`), also the prefixes
        that are not valid UTF-8 so far, and at the full length the items
        that are not complete UTF-8. Integers: every candidate.
        """
        if self.codec.kind != "bytes":
            return candidates
        possible = string_prefix_mask(candidates, bits)
        if self.text_items:  # a whole item (bits = item_bits) must be complete UTF-8
            possible &= utf8_prefix_mask(candidates, bits, complete=bits >= self.item_bits)
        return candidates[possible]

    def _pool_ended(self, pool: dict, candidates: np.ndarray, bits: int, support: np.ndarray,
                    reports: np.ndarray) -> np.ndarray:
        """Pool the reports of ended strings over the levels since they ended (in place).

        A user whose string ``x`` ended before the level's prefix length
        reports ``x`` followed by zero bytes: the same complete string at every
        later level. A candidate that ended (:func:`~fastldp.heavyhitters.items.ended_mask`)
        therefore sums its support and its reports over every level since the
        one where it ended (it is kept at each, or never seen again), so its
        count is estimated from all those groups, not from one. ``support`` is
        any statistic that adds over the levels' reports (PEM's hits,
        TreeHist's in-level counts). Returns the indices of the ended
        candidates.
        """
        ended = np.flatnonzero(ended_mask(candidates, bits))
        if not ended.size:
            return ended
        rows = candidates[ended]
        shift = MAX_ITEM_BITS - bits
        for i, row in zip(ended.tolist(), rows.tolist()):
            value = row if isinstance(row, int) else _words_value(row)
            key = value << shift  # the string's padded code, the same at every level
            before = pool.get(key)
            if before is not None:
                support[i] += before[0]
                reports[i] += before[1]
            pool[key] = (support[i], reports[i])
        return ended

    def _decode(self, chunks: Chunks, n: int):  # pragma: no cover - abstract
        raise NotImplementedError

    # ------------------------------------------------------------ report files
    def decode_report_files(self, sources: Any) -> HeavyHitters:
        """Decode report files in bounded memory, one pass per level (module docstring).

        Bit-identical to :meth:`estimate` on all the reports in memory.
        Identities are checked distinct within each row group only.
        """
        from ..reports import chunk_epsilons, open_reports  # late: pyarrow is optional

        owner = f"{type(self).__name__}.decode_report_files"
        readers = open_reports(self, sources)
        totals: dict[str, int] = {}
        wrong = [False]
        first = [True]

        def chunks() -> Iterator[tuple[np.ndarray, np.ndarray]]:
            count = first[0]
            for reader in readers:
                for gi in range(reader.num_row_groups):
                    reps, eps, ids = reader.row_group(gi)
                    chunk_epsilons(self, eps, f"{reader.path}, row group {gi}")
                    ids = resolve_identities(ids, ids.shape[0], owner)
                    clean, report = self._sanitize(reps, ids, owner)
                    if count:
                        for key, v in sanitization_counts(report).items():
                            totals[key] = totals.get(key, 0) + v
                        wrong[0] = wrong[0] or report.wrong_dtype
                    yield ids, clean
            first[0] = False

        # one counting pass first, so that n is known to the decode
        for _ in chunks():
            pass
        n = totals.get("n", 0)
        return self._result(chunks, n, sanitization_report(totals, {"wrong_dtype": wrong[0]}))


def _words_value(words) -> int:
    value = 0
    for w in words:
        value = (value << 64) | int(w)
    return value
