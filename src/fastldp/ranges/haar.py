"""HaarHRR: the Haar wavelet coefficients of the users' values, one level per user, by Hadamard randomized response.

The domain ``[0, D)`` is padded to ``D' = 2^h`` leaves. For a count vector
``c`` over the leaves, detail level ``j = 0 .. h - 1`` has ``K_j = 2^j``
coefficients; coefficient ``k`` covers the block ``[k s_j, (k + 1) s_j)``
of ``s_j = D' / 2^j`` values and is (unnormalized)

    d_{j,k} = (users in the block's left half) - (users in its right half).

The total (the coarsest coefficient, ``n``) is known exactly. One user's
coefficients at level ``j`` are ``+1`` or ``-1`` at the block holding the
value and 0 elsewhere, so every level of a user is a signed one-hot vector
``w_j``.

Client (Cormode, Kulkarni, Srivastava 2019, Section 4.3): each user draws a
level uniformly, then a Hadamard row ``r`` uniformly in ``[0, K_j)``, takes
the coefficient ``H[r] . w_j = +-H[r, k]`` (``H`` the Sylvester matrix,
``H[r, k] = (-1)^popcount(r & k)``) and keeps its sign with probability
``e^eps / (e^eps + 1)`` (flips it otherwise). The report is the row
``[j, 2 r + b]`` with ``b = 1`` for ``+1``.

Server: with ``T_j[r]`` = (+1 reports) - (-1 reports) of row ``r`` at level
``j`` from ``m_j`` users, ``gamma = tanh(eps / 2)``,

    hat d_j = (n / m_j) fwht(T_j) / gamma,

unbiased (``E[z H[r]] = w`` for ``z = y / gamma``, because ``H^T H = K
I``); its noise variance is ``n^2 / (m_j gamma^2)`` per coefficient (the
coefficients of a level are uncorrelated: a user's vector has one non-zero
entry). The leaves are rebuilt by the fast inverse Haar transform in
``O(D)``: each block's mean count splits into its halves' as ``mean +-
d / s``. A range ``[a, b]`` is ``P(b + 1) - P(a)`` with the prefix

    P(x) = x n / D' + sum_j d_{j, x // s_j} min(t_j, s_j - t_j) / s_j,
    t_j = x mod s_j,

one coefficient per level (``O(log D)``); the blocks entirely below ``x``
sum to zero.

Reports are int64 rows ``[level, 2 r + b]``; partials hold, per level, the
integer histogram of the ``2 K_j`` outputs (exact, merged in any order bit
for bit), and the number of reports of each level.

References
----------
G. Cormode, T. Kulkarni, D. Srivastava, "Answering range queries under
local differential privacy", PVLDB 12(10), 2019 (HaarHRR, Section 4.3).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any, Optional

import numpy as np

from .._kernels._hadamard import fwht, hadamard_entries
from .._random import as_generator
from .._sanitize import SanitizationReport
from .._validation import param_error
from ..channels import channels_of
from ._base import RangeEstimate, check_ranges
from ._channels import _channel, _louder, RANGE_DOMAIN
from ._protocol import MAX_DOMAIN, LevelMechanism

__all__ = ["HaarHRR", "HaarEstimate", "haar_transform", "haar_inverse", "SIMULATE_MAX_LEAVES"]

#: the largest padded domain :meth:`HaarHRR.simulate` draws (its last level's table has
#: ``D'^2 / 2`` groups: 32 Mi int64 here)
SIMULATE_MAX_LEAVES = 1 << 13


def haar_transform(counts: Any) -> list:
    """The unnormalized Haar detail coefficients of ``counts`` (length ``2^h``), level 0 first.

    ``out[j][k]`` is the left half's sum minus the right half's of block ``k``
    of ``2^(h - j)`` values. ``O(D)``: pairwise sums, bottom-up.
    """
    c = np.asarray(counts, dtype=np.float64)
    out = []
    while c.shape[0] > 1:
        out.append(c[0::2] - c[1::2])
        c = c[0::2] + c[1::2]
    return out[::-1]


def haar_inverse(total: float, coefficients: list) -> np.ndarray:
    """The leaf counts whose total is ``total`` and whose :func:`haar_transform` is ``coefficients``.

    ``O(D)``: from the root's mean count per leaf, each block's mean splits
    into ``mean + d / s`` (left half) and ``mean - d / s`` (right half).
    """
    h = len(coefficients)
    size = 1 << h
    mean = np.array([float(total) / size])
    for j, d in enumerate(coefficients):
        step = np.asarray(d, dtype=np.float64) / (size >> j)
        child = np.empty(2 * mean.shape[0])
        child[0::2] = mean + step
        child[1::2] = mean - step
        mean = child
    return mean


class _HRRLevel:
    """Hadamard randomized response of one Haar level: the report layer of :class:`HaarHRR`.

    Its input is the *half-block* of the value (``2 k`` left, ``2 k + 1``
    right half of block ``k``), its output ``2 r + b``; it answers the
    questions :class:`~fastldp.ranges._protocol.LevelMechanism` and the
    audit ask a level's oracle.
    """

    uses_identities = False

    def __init__(self, K: int, codebook_seed: int, epsilon: float) -> None:  # noqa: N803
        self.K = K
        self.domain_size = 2 * K  # inputs: the half-blocks
        self.codebook_seed = codebook_seed
        self._eps = epsilon  # the decode's budget (every report of a level has it)

    def output_sizes(self, eps: np.ndarray) -> np.ndarray:
        return np.full(np.shape(eps)[0], 2 * self.K, dtype=np.int64)

    def variances(self, eps: np.ndarray) -> np.ndarray:
        """The variance of one report's term ``z H[r, k]`` at a coefficient it does not hold."""
        return 1.0 / np.tanh(np.asarray(eps, dtype=np.float64) / 2.0) ** 2

    def _signs(self, nodes: np.ndarray, rows: np.ndarray) -> np.ndarray:
        """``+-H[r, k]``: the true Hadamard coefficient of a user in half-block ``node``."""
        half = 1 - 2 * (nodes & 1)  # left half +1, right half -1
        return half * hadamard_entries(rows, nodes >> 1).astype(np.int64)

    def perturb(self, values: np.ndarray, eps: np.ndarray, identities: Optional[np.ndarray],
                rng: np.random.Generator) -> np.ndarray:
        n = values.shape[0]
        nodes = np.asarray(values, dtype=np.int64)
        rows = np.asarray(rng.integers(0, self.K, n), dtype=np.int64)
        keep = rng.random(n) < 1.0 / (1.0 + np.exp(-np.asarray(eps, dtype=np.float64)))
        sign = np.where(keep, 1, -1) * self._signs(nodes, rows)
        return 2 * rows + (sign > 0)

    def channel(self, eps: float, identity: int = 0) -> np.ndarray:
        """Exact law ``P[node, 2 r + b]``: ``1 / K`` times the kept or flipped sign's probability."""
        K = self.K
        nodes = np.repeat(np.arange(2 * K), K)
        rows = np.tile(np.arange(K), 2 * K)
        s = self._signs(nodes, rows).reshape(2 * K, K)
        keep = 1.0 / (1.0 + np.exp(-eps))
        out = np.empty((2 * K, 2 * K))
        out[:, 1::2] = np.where(s > 0, keep, 1.0 - keep) / K
        out[:, 0::2] = np.where(s < 0, keep, 1.0 - keep) / K
        return out

    def _hits(self, payload: np.ndarray, identities: Any) -> np.ndarray:
        return np.bincount(payload, minlength=2 * self.K)

    def _counts_from_hits(self, hits: np.ndarray, m: int) -> np.ndarray:
        """``fwht(T) / gamma``: the level's coefficients of the ``m`` reporters (unscaled)."""
        signed = hits[1::2] - hits[0::2]
        return fwht(np.ascontiguousarray(signed, dtype=np.float64)) / np.tanh(self._eps / 2.0)

    def _uniform_variances(self, m: int, counts: np.ndarray) -> np.ndarray:
        return np.full(self.K, m / np.tanh(self._eps / 2.0) ** 2)


@dataclass(frozen=True, repr=False)
class HaarEstimate(RangeEstimate):
    """A :class:`RangeEstimate` with the Haar coefficients it came from.

    Attributes
    ----------
    counts : numpy.ndarray, shape (D,)
        The leaves, by the inverse Haar transform.
    variances : numpy.ndarray, shape (D,)
        The noise variance of each leaf, ``sum_j v_j / s_j^2``.
    coefficients : tuple of numpy.ndarray
        The unbiased detail coefficients of levels ``0 .. h - 1`` (level
        ``j`` has ``2^j``), scaled to all ``n`` users.
    coefficient_variances : numpy.ndarray, shape (h,)
        ``v_j``: the noise variance of one coefficient of level ``j``,
        ``n^2 / (m_j tanh(eps / 2)^2)`` (``inf``: the level has no reports).
    """

    coefficients: tuple = ()
    coefficient_variances: Optional[np.ndarray] = None

    @property
    def padded_size(self) -> int:
        """``D' = 2^h``, the leaves of the transform."""
        return 1 << len(self.coefficients)

    def prefix_counts(self, x: np.ndarray) -> np.ndarray:
        """Users with a value ``< x``: ``x n / D'`` and one coefficient per level (module docstring)."""
        x = np.asarray(x, dtype=np.int64)
        size = self.padded_size
        out = x * (float(self.n) / size)
        for j, d in enumerate(self.coefficients):
            span = size >> j
            k = np.minimum(x // span, d.shape[0] - 1)
            t = x - k * span
            out = out + d[k] * (np.minimum(t, span - t) / span)
        return out

    def range_weights(self, a: Any, b: Any) -> list:
        """Per level, the weight of each coefficient in ``range_count(a, b)`` (shape ``(..., K_j)``).

        ``range_count(a, b) = (b - a + 1) n / D' + sum_j weights[j] . coefficients[j]``.
        """
        lo, hi = check_ranges(a, b, self.domain_size, f"{type(self).__name__}.range_weights")
        size = self.padded_size
        out = []
        for j, d in enumerate(self.coefficients):
            span = size >> j
            w = np.zeros(lo.shape + (d.shape[0],))
            for x, sign in ((hi + 1, 1.0), (lo, -1.0)):
                k = np.minimum(x // span, d.shape[0] - 1)
                t = x - k * span
                np.put_along_axis(w, k[..., None], np.take_along_axis(w, k[..., None], -1)
                                  + sign * (np.minimum(t, span - t) / span)[..., None], -1)
            out.append(w)
        return out

    def range_variances(self, a: Any, b: Any) -> np.ndarray:
        """The noise variance of ``range_count(a, b)``: ``sum_j v_j |weights_j|^2``.

        The randomized response's, given the levels' report counts; it
        leaves out the users' own spread over the levels (zero when every
        user holds the same value: tests/test_ranges_haar.py checks the
        whole variance by simulation).
        """
        weights = self.range_weights(a, b)
        v = np.asarray(self.coefficient_variances)
        return sum(v[j] * (w**2).sum(axis=-1) for j, w in enumerate(weights))


class HaarHRR(LevelMechanism):
    """Range counts, CDF and quantiles from the Haar coefficients by Hadamard randomized response.

    Parameters
    ----------
    epsilon : float in (0, 700]
        The budget of every report.
    domain_size : int in [2, 2^30]
        ``D``: values are ``0 .. D - 1`` (padded to a power of two).
    codebook_seed : int or None
        Public seed of the sanitization's replacement reports (the
        Hadamard code is fixed); ``None`` draws one from OS entropy.

    Notes
    -----
    Users are split uniformly over the ``h = log2 D'`` detail levels, each
    reporting one Hadamard coefficient of its level at the whole
    ``epsilon`` (module docstring). ``estimate`` returns a
    :class:`HaarEstimate`; every range is answered from ``h``
    coefficients. Cormode et al. find HaarHRR on a par with the best
    hierarchy (B = 4 with consistency) and better for long ranges; at
    ``D = 256``, ``e^eps = 3``, ``N = 2^26`` (Cauchy) their results file
    gives RMSE 7.23e-4 over all ranges (bench/ranges_anchor.py).

    References
    ----------
    G. Cormode, T. Kulkarni, D. Srivastava, "Answering range queries under
    local differential privacy", PVLDB 12(10), 2019.

    Examples
    --------
    >>> import numpy as np
    >>> from fastldp.ranges import HaarHRR
    >>> haar = HaarHRR(epsilon=1.0, domain_size=64, codebook_seed=1)
    >>> x = np.random.default_rng(0).integers(0, 64, 20_000)
    >>> est = haar.estimate(haar.privatize(x, rng=1))
    >>> [len(d) for d in est.coefficients]
    [1, 2, 4, 8, 16, 32]
    >>> bool(abs(est.range_count(0, 63).item() - 20_000) < 1e-6)
    True
    """

    oracle = "hrr"

    def __init__(self, *, epsilon: float, domain_size: int,
                 codebook_seed: Optional[int] = None) -> None:
        owner = type(self).__name__
        self._check_common(owner, epsilon, domain_size, "grr", codebook_seed)
        self.oracle = "hrr"
        self.split = "users"
        h = max(1, int(self.domain_size - 1).bit_length())
        if (1 << h) > 2 * MAX_DOMAIN:  # pragma: no cover - domain_size is checked above
            raise param_error("domain_size", owner, f"at most {MAX_DOMAIN}", domain_size)
        self.height = h
        self._build_levels([1 << j for j in range(h)], [1 << (h - j - 1) for j in range(h)])

    def _build_levels(self, sizes: list, spans: list, weights: Optional[np.ndarray] = None) -> None:
        """Level ``j`` has ``sizes[j]`` coefficients; ``spans[j]`` is its half-block's width."""
        L = len(sizes)
        self.level_sizes = [int(s) for s in sizes]
        self.level_spans = [int(s) for s in spans]
        self.n_levels = L
        self.level_weights = np.full(L, 1.0 / L)
        self._uniform_levels = True
        self.level_epsilons = [self.epsilon] * L
        self.oracles = []
        for li, K in enumerate(self.level_sizes):
            self.oracles.append(_HRRLevel(K, self.level_seed(li), self.epsilon))
        self.level_oracles = ("hrr",) * L
        self.unary = [False] * L
        self.widths = [1] * L
        self.output_sizes = [2 * K for K in self.level_sizes]
        self.stat_sizes = list(self.output_sizes)
        self.stat_offsets = np.concatenate([[0], np.cumsum(self.stat_sizes)]).astype(np.int64)
        self.row_width = 2
        self.payload_starts = [1] * L

    def stream_params(self) -> dict:
        """The public parameters that rebuild an equivalent server (JSON values)."""
        return {"epsilon": self.epsilon, "domain_size": self.domain_size,
                "codebook_seed": self.codebook_seed}

    def _result(self, counts: list, noise: np.ndarray, plug_in: list, n: int,
                sanitization: Optional[SanitizationReport]) -> HaarEstimate:
        coefficients = tuple(np.asarray(c, dtype=np.float64) for c in counts)
        leaves = haar_inverse(float(n), list(coefficients))[:self.domain_size]
        size = 1 << self.height
        spans = np.array([float(size >> j) for j in range(self.height)])
        leaf_var = np.full(self.domain_size, float(np.sum(noise / spans**2)))
        return HaarEstimate(leaves, leaf_var, n, self.privacy(), sanitization,
                            coefficients=coefficients, coefficient_variances=np.asarray(noise))

    def estimate(self, reports: Any, *, epsilons: Any = None,
                 identities: Any = None) -> HaarEstimate:
        """The :class:`HaarEstimate` of the reports (``finalize(partial(...))`` exactly)."""
        return self.finalize(self.partial(reports, epsilons, identities))

    def simulate(self, counts: Any, *, rng: Any = None) -> HaarEstimate:
        """An exact draw of :meth:`estimate` on users holding ``counts``, without their reports.

        Each value's holders are spread over the levels by a multinomial;
        at level ``j`` the holders of each half-block spread over the
        ``K_j`` Hadamard rows by a multinomial, and each (half-block, row)
        group's ``+1`` reports are ``Binom(g, p)`` when its true sign is
        ``+1``, ``Binom(g, 1 - p)`` otherwise (``p = e^eps / (e^eps +
        1)``). Then the decode of :meth:`finalize`. Memory ``O(D'^2)`` at
        the last level: padded domains up to :data:`SIMULATE_MAX_LEAVES`
        (bench/ranges_anchor.py: ``D = 256``, ``N = 2^26``).
        """
        owner = f"{type(self).__name__}.simulate"
        if (1 << self.height) > SIMULATE_MAX_LEAVES:
            raise ValueError(f"{owner} draws padded domains of at most {SIMULATE_MAX_LEAVES} "
                             f"values (its memory is quadratic in them); this one has "
                             f"domain_size={self.domain_size} (padded {1 << self.height}): use "
                             f"privatize and estimate")
        c = np.asarray(counts)
        if c.shape != (self.domain_size,) or c.dtype.kind not in "iu" or (c < 0).any():
            raise param_error("counts", owner, f"an array of {self.domain_size} non-negative "
                              "integers", counts)
        gen = as_generator(rng, owner)
        c = c.astype(np.int64)
        n = int(c.sum())
        per = gen.multinomial(c, self.level_weights)  # (D, L): each value's holders by level
        keep = 1.0 / (1.0 + np.exp(-self.epsilon))
        hits, about = [], []
        for li, level in enumerate(self.oracles):
            K = level.K
            groups = np.bincount(np.arange(self.domain_size) // self.level_spans[li],
                                 weights=per[:, li], minlength=2 * K).astype(np.int64)
            by_row = gen.multinomial(groups, np.full(K, 1.0 / K))  # (2K, K)
            nodes = np.repeat(np.arange(2 * K), K)
            sign = level._signs(nodes, np.tile(np.arange(K), 2 * K)).reshape(2 * K, K)
            plus = gen.binomial(by_row, np.where(sign > 0, keep, 1.0 - keep)).sum(axis=0)
            h = np.empty(2 * K, dtype=np.int64)
            h[1::2] = plus
            h[0::2] = by_row.sum(axis=0) - plus
            hits.append(h)
            about.append(int(groups.sum()))
        return self._from_hits(np.concatenate(hits).astype(np.float64), about, n, None)


# ----------------------------------------------------------------------------- the audit
def _haar_build(cls=HaarHRR):
    def build(eps):
        return cls(epsilon=eps, domain_size=RANGE_DOMAIN, codebook_seed=20240614)
    return build


@channels_of(HaarHRR)
def _haar_channels(epsilon):
    """HaarHRR on ``D = 4`` (levels of 1 and 2 coefficients), and a louder sampler as control."""
    ch = _channel("haar-hrr", f"HaarHRR, D = {RANGE_DOMAIN}, users split by level: the report "
                  "(level, 2 r + b)", epsilon, _haar_build())
    louder = replace(ch, name="control:haar-hrr-sampler", control_of=ch.name,
                     expect_violation=True, build=_haar_build(_louder(HaarHRR)),
                     description="HaarHRR perturbing at 1.5 eps (law honest)")
    return [ch, louder]
