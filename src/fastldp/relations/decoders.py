"""Decoders shared by every relation mechanism (paper 000, sections 6 and 7.1).

``global``
    Algorithm 2: one linear estimate over every identity, then ``P_{s,k}``.
``medoid``
    Identities are split into ``G`` public groups fixed by the codebook seed
    (a public permutation of ``0 .. n-1`` drawn from ``SeedSequence([seed,
    4])``, cut into ``G`` nearly equal parts). Each group gives its own linear
    estimate, which is projected by ``P_{s,k}``; the projected group estimate
    with the smallest sum of Euclidean (Frobenius) distances to the other
    projected group estimates is returned. Projecting first makes the
    distances compare sparse feasible matrices, as the paper's "grouped
    sparse-medoid" suggests; the medoid is already feasible.
``pooled``
    The coordinate-wise median of the ``G`` unprojected group estimates,
    then ``P_{s,k}``.
``none``
    The global linear estimate without projection (the projection ablation
    of section 7.6).

One call decodes with several decoders from one set of reports: sanitizing
and the group estimates are computed once.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Optional

import numpy as np
from numpy.typing import ArrayLike

from .._validation import check_choice, check_int
from .._sanitize import SanitizationReport
from ..results import PrivacyStatement, Result
from ._privacy import privacy_of_budgets
from .projection import check_support_rule, project

__all__ = ["DECODERS", "Decoded", "decode", "public_groups"]

DECODERS = ("global", "medoid", "pooled", "none")
GROUP_STREAM = 4


@dataclass(frozen=True, repr=False)
class Decoded(Result):
    """One decoder's output, on the shared result base (:class:`fastldp.results.Result`).

    Attributes
    ----------
    matrix : float64 array (d1, d2)
        The decoded estimate (feasible for every decoder but ``none``); also
        :attr:`estimate`.
    linear : float64 array (d1, d2)
        The unprojected estimate it came from (the global sketch, the medoid
        group's estimate, or the coordinate-wise median).
    decoder : str
    n_groups : int
        ``G`` for grouped decoders, 1 otherwise.
    medoid_group : int
        The chosen group (``-1`` unless ``decoder == "medoid"``).
    sanitization : SanitizationReport
    n : int
        The number of reports (committed identities) decoded.
    privacy : fastldp.results.PrivacyStatement or None
        Local DP per user at the decode's budgets (see
        :attr:`fastldp.JPRSEstimate.privacy`).
    variances, std : None
        The projection and the medians are not linear: no plug-in variance.

    Examples
    --------
    >>> import numpy as np, fastldp
    >>> mech = fastldp.JPRS(shape=(2, 2), k=1, s=1, epsilon=1.0, codebook_seed=0)
    >>> bits = mech.privatize([np.array([[0, 1]])] * 40, rng=0)
    >>> out = mech.decode(bits, decoders=("global", "medoid"), n_groups=4)
    >>> out["medoid"].estimate.shape, out["medoid"].n, out["medoid"].n_groups
    ((2, 2), 40, 4)
    """

    _estimate_field = "matrix"

    matrix: np.ndarray
    linear: np.ndarray
    decoder: str
    n_groups: int
    medoid_group: int
    sanitization: SanitizationReport
    n: int = 0
    privacy: Optional[PrivacyStatement] = None

    def _frame_columns(self) -> dict:
        return {"linear": self.linear}

    def _repr_kind(self) -> str:
        return f"Decoded[{self.decoder}]"


def public_groups(codebook_seed: int, n: int, n_groups: int) -> np.ndarray:
    """Return the public group label (``0 .. G-1``) of each of ``n`` identities."""
    perm = np.random.default_rng([int(codebook_seed), GROUP_STREAM]).permutation(n)
    labels = np.empty(n, dtype=np.int64)
    labels[perm] = (np.arange(n, dtype=np.int64) * n_groups) // n
    return labels


def _medoid(projected: np.ndarray) -> int:
    diff = projected[:, None, :] - projected[None, :, :]
    dist = np.sqrt(np.einsum("abp,abp->ab", diff, diff))
    return int(np.argmin(dist.sum(axis=1)))


def decode(mechanism, reports, epsilons: Optional[ArrayLike] = None, *, decoders=("global",),
           n_groups: int = 8, identities: Optional[ArrayLike] = None,
           support_rule: Optional[str] = None) -> dict:
    """Decode ``reports`` of ``mechanism`` with each requested decoder.

    Parameters
    ----------
    mechanism : RelationMechanism
        JPRS or a padded-relation-sampling mechanism.
    reports : array_like, shape (n,)
    epsilons : float or array_like, shape (n,), optional
        Default: the mechanism's constructor ``epsilon``.
    decoders : sequence of {"global", "medoid", "pooled", "none"}
    n_groups : int
        ``G`` for the grouped decoders, ``2 <= G <= n``.
    identities : array_like of int, optional
    support_rule : {"raw", "clipped"}, optional
        Which ``s`` coordinates each projection keeps (default: the
        mechanism's ``support_rule``, ``"raw"`` unless set); see
        :mod:`fastldp.relations.projection`.

    Returns
    -------
    dict[str, Decoded]
    """
    owner = f"{type(mechanism).__name__}.decode"
    if isinstance(decoders, str):
        decoders = (decoders,)
    for name in decoders:
        check_choice(name, "decoders", owner, DECODERS)
    rule = check_support_rule(mechanism.support_rule if support_rule is None else support_rule,
                              owner)
    n, eps, ids = mechanism._server_inputs(reports, epsilons, identities, owner)
    clean, report = mechanism.sanitize(reports, eps, ids, owner)
    shape, s, k = mechanism.shape, mechanism.s, float(mechanism.k)
    facts = {"n": n, "privacy": privacy_of_budgets(eps)}
    out = {}
    need_global = any(d in ("global", "none") for d in decoders)
    if need_global:
        v = mechanism.linear_estimate(clean, eps, ids)
        if "global" in decoders:
            m, _ = project(v, s, k, rule)
            out["global"] = Decoded(m.reshape(shape), v.reshape(shape), "global", 1, -1, report,
                                    **facts)
        if "none" in decoders:
            out["none"] = Decoded(v.reshape(shape), v.reshape(shape), "none", 1, -1, report,
                                  **facts)
    if any(d in ("medoid", "pooled") for d in decoders):
        g = check_int(n_groups, "n_groups", owner, low=2, high=n)
        labels = public_groups(mechanism.codebook_seed, n, g)
        group_raw = np.stack([
            mechanism.linear_estimate(clean, eps, ids, members=labels == j) for j in range(g)
        ])
        if "medoid" in decoders:
            projected = np.stack([project(row, s, k, rule)[0] for row in group_raw])
            best = _medoid(projected)
            out["medoid"] = Decoded(projected[best].reshape(shape), group_raw[best].reshape(shape),
                                    "medoid", g, best, report, **facts)
        if "pooled" in decoders:
            median = np.median(group_raw, axis=0)
            m, _ = project(np.ascontiguousarray(median), s, k, rule)
            out["pooled"] = Decoded(m.reshape(shape), median.reshape(shape), "pooled", g, -1, report,
                                    **facts)
    return {name: out[name] for name in decoders}
