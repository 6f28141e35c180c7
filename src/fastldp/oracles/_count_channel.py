"""The law of a frequency oracle's aggregated statistic: :class:`CountChannel`, what IBU runs on."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Optional

import numpy as np
from numpy.typing import ArrayLike

from .._kernels._hadamard import fwht
from .._validation import param_error
from ._messages import _Text

__all__ = ["CountChannel"]


_CHANNEL_KINDS = ("symmetric", "hadamard", "matrix")


@dataclass(frozen=True, repr=False)
class CountChannel:
    """How an oracle's aggregated statistic depends on the users' symbols: what IBU runs on.

    A report of a user holding ``x`` adds 1 to position ``y`` of the
    statistic with probability ``M[y, x]`` (``size`` positions), so ``n``
    reports of symbols drawn from a distribution ``f`` give the expected
    statistic ``n M f``. :meth:`forward` computes ``M f`` and :meth:`adjoint`
    ``M^T r`` without forming ``M`` where the channel has structure
    (:meth:`FrequencyOracle.count_channel` gives an oracle's channel;
    :func:`fastldp.oracles.postprocess.ibu` runs the EM on it):

    ``"symmetric"``
        ``size = D`` and ``M[y, x] = q + (p - q) [y = x]``: position ``v``
        counts a report of ``v`` with probability ``p`` and a report of any
        other symbol with probability ``q``. GRR's histogram
        (``p + (D - 1) q = 1``), unary encoding's bit counts, OLH's and HR's
        support counts. ``O(D)`` per product.
    ``"hadamard"``
        ``size = K`` (Hadamard response's columns) and ``M[y, x] = 2 p / K``
        where ``H_K[x + 1, y] = +1``, ``2 q / K`` elsewhere
        (``p = e^eps / (e^eps + 1)``, ``q = 1 - p``): one fast
        Walsh-Hadamard transform per product, ``O(K log K)``.
    ``"matrix"``
        Any ``M``, given as a ``(size, D)`` array: ``O(size D)`` per product.

    Attributes
    ----------
    kind : {"symmetric", "hadamard", "matrix"}
    domain_size : int
        ``D``.
    size : int
        Positions of the statistic.
    p, q : float
        The two probabilities of a structured channel (``nan`` for
        ``"matrix"``).
    exact : bool
        Whether every report adds 1 at exactly one position (the columns of
        ``M`` sum to 1), so that the counts are a multinomial sample and the
        EM on them maximizes the exact likelihood of the reports: GRR's
        histogram and HR's columns. Unary encoding's bits and the support
        counts of OLH and HR are not (a report supports several symbols):
        the EM then maximizes the composite likelihood of the counts.
    matrix : float64 array, shape (size, D), or None
        ``M`` for ``"matrix"``.

    Examples
    --------
    >>> import numpy as np
    >>> ch = CountChannel.symmetric(3, 0.6, 0.2, exact=True)
    >>> ch.forward(np.array([1.0, 0.0, 0.0]))
    array([0.6, 0.2, 0.2])
    >>> bool(np.allclose(ch.dense(), [[0.6, 0.2, 0.2], [0.2, 0.6, 0.2], [0.2, 0.2, 0.6]]))
    True
    """

    kind: str
    domain_size: int
    size: int
    p: float = math.nan
    q: float = math.nan
    exact: bool = False
    matrix: Optional[np.ndarray] = None

    @classmethod
    def symmetric(cls, domain_size: int, p: float, q: float, *, exact: bool) -> "CountChannel":
        """``M[y, x] = q + (p - q) [y = x]`` over ``D`` positions."""
        return cls("symmetric", int(domain_size), int(domain_size), float(p), float(q),
                   bool(exact))

    @classmethod
    def hadamard(cls, domain_size: int, epsilon: float) -> "CountChannel":
        """Hadamard response's columns at budget ``epsilon`` (``K`` = next power of two > D)."""
        k = 1
        while k <= domain_size:
            k *= 2
        q = 1.0 / (math.exp(epsilon) + 1.0)
        return cls("hadamard", int(domain_size), k, 1.0 - q, q, True)

    @classmethod
    def from_matrix(cls, matrix: ArrayLike, *, exact: bool) -> "CountChannel":
        """Any ``(size, D)`` matrix of non-negative probabilities."""
        m = np.array(matrix, dtype=np.float64)
        if m.ndim != 2 or not (np.isfinite(m).all() and (m >= 0).all()):
            raise param_error("matrix", "CountChannel.from_matrix",
                              "a 2-d array of finite non-negative probabilities",
                              _Text(f"an array of shape {m.shape}"))
        m.setflags(write=False)
        return cls("matrix", m.shape[1], m.shape[0], exact=bool(exact), matrix=m)

    def __post_init__(self) -> None:
        if self.kind not in _CHANNEL_KINDS:
            raise param_error("kind", "CountChannel", f"one of {_CHANNEL_KINDS}", self.kind)

    def __repr__(self) -> str:
        probs = "" if self.kind == "matrix" else f", p={self.p:.6g}, q={self.q:.6g}"
        return (f"CountChannel(kind={self.kind!r}, domain_size={self.domain_size}, "
                f"size={self.size}{probs}, exact={self.exact})")

    def forward(self, f: np.ndarray) -> np.ndarray:
        """``M f``: the expected statistic of one report whose symbol has law ``f``."""
        f = np.asarray(f, dtype=np.float64)
        if self.kind == "symmetric":
            return self.q * f.sum() + (self.p - self.q) * f
        if self.kind == "hadamard":
            z = np.zeros(self.size)
            z[1:self.domain_size + 1] = f
            t, s = fwht(z), f.sum()
            # 2 p [H = 1] + 2 q [H = -1] = p (1 + H) + q (1 - H); s -+ t are never negative
            # in exact arithmetic (|t| <= s), so a rounding below zero is clipped
            return (self.p * np.maximum(s + t, 0.0) + self.q * np.maximum(s - t, 0.0)) / self.size
        assert self.matrix is not None
        return self.matrix @ f

    def adjoint(self, r: np.ndarray) -> np.ndarray:
        """``M^T r`` (length ``D``)."""
        r = np.ascontiguousarray(r, dtype=np.float64)
        if self.kind == "symmetric":
            return self.q * r.sum() + (self.p - self.q) * r
        if self.kind == "hadamard":
            u, s = fwht(r)[1:self.domain_size + 1], r.sum()
            return (self.p * (s + u) + self.q * (s - u)) / self.size
        assert self.matrix is not None
        return self.matrix.T @ r

    def dense(self) -> np.ndarray:
        """``M`` as a ``(size, D)`` array (for checks on small channels)."""
        return np.stack([self.forward(e) for e in np.eye(self.domain_size)], axis=1)

    def statistic_from_counts(self, counts: np.ndarray, n: float) -> np.ndarray:
        """The support counts ``S(v) = counts(v) (p - q) + n q`` behind equal-budget counts.

        Every symmetric oracle's equal-budget estimate is
        ``counts(v) = (S(v) - n q) / (p - q)`` (GRR, unary encoding and OLH
        with their hit counts, HR with ``S(v) = (n + fwht(h)[v + 1]) / 2``
        and ``p - q = tanh(eps / 2) / 2``): this inverts it.
        """
        if self.kind != "symmetric":
            raise ValueError(f"statistic_from_counts needs a symmetric channel; this one is "
                             f"{self.kind!r}")
        return np.asarray(counts, dtype=np.float64) * (self.p - self.q) + n * self.q
