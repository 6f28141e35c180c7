"""The registry of local randomizers and the audit that runs over it.

Every channel the package releases to an untrusted server is listed here with
a claimed budget and a way to audit it:

* **exact** channels (a finite output space on a tiny domain) carry an exact
  law (:mod:`fastldp.audit.laws`), audited in rational arithmetic
  (:func:`fastldp.audit.exact.audit_law`), *and* a sampler check: the
  mechanism's own ``privatize`` is run on the witness of the exact audit (the
  inputs ``x, x'`` and output ``y`` with the largest ratio) and a
  distinguishing test (:func:`fastldp.audit.empirical.event_test`) bounds the
  sampler's epsilon from below. The exact law proves the formula; the
  sampler check ties the code that draws the reports to it.
* **empirical** channels (continuous outputs) are audited by threshold
  distinguishing tests between the two inputs that the privacy proof says
  are the hardest (:func:`fastldp.audit.empirical.threshold_test`).
* **zCDP** channels (the histograms of paper 003) are audited the same way
  with the binary Rényi bound.
* **shuffle** channels (the shuffle protocols of paper 002) are audited on
  the analyzer's view (:mod:`fastldp.audit.shuffle`): threshold tests of
  several statistics of the view against the ``(eps, delta)`` claim, an
  exact check of the order-free view's law and conformance tests of the
  accounting's assumptions (:mod:`fastldp.audit.conformance`).
* **fit** channels audit a whole fitted model end to end
  (:mod:`fastldp.audit.regression`): statistics of the fitted model under
  two datasets that differ in one user, against the model's ``privacy_``.

A verdict is a pass when the exact audit holds, no lower bound exceeds the
claim and every conformance test passes. Every audit is seeded and
reproducible.

Power
-----
A test that finds nothing may simply be too weak. Every row reports its
*reach*: the smallest fault it detects, as the multiplier ``k`` of a
mechanism built at ``k eps`` while claiming ``eps``. For an exact channel
the law audit detects every ``k > 1``; for a threshold test the reach is
estimated from the tested event (:func:`fastldp.audit.empirical.reach`); for
the exact checks of the shuffle views it is computed from the plan. A row
whose reach exceeds :data:`LOW_POWER` is marked "low power" in the table
and in the command's summary.
"""

from __future__ import annotations

import math
import time
from dataclasses import dataclass, field, replace
from typing import Any, Optional, Sequence

import numpy as np
import scipy.sparse as sp
from numpy.typing import ArrayLike

from ..channels import Channel, ExactLaw, one_line, row_tuples
from .empirical import (ALPHA, EmpiricalAudit, event_test, reach, threshold_test,
                        threshold_test_samples)
from .exact import ExactAudit, audit_law
from .report import LOW_POWER, low_power_note
from . import laws

__all__ = ["Channel", "AuditRow", "channels", "audit_channel", "audit_all", "get_channel",
           "LOW_POWER", "low_power_note"]

#: identities whose codebook rows an exact audit covers (keyed channels)
POOL = 4096


@dataclass(frozen=True, repr=False)
class AuditRow:
    """One line of the audit table.

    Attributes
    ----------
    name, kind : str
    claimed : float
        The claimed ``eps`` (``rho`` for zCDP).
    exact : ExactAudit or None
    empirical : EmpiricalAudit or None
        The sampler check of an exact channel, or the test of an empirical
        one; for shuffle and fit channels the test with the largest lower bound.
    holds : bool
        No violation found.
    expect_violation : bool
    seconds : float
    notes : list of str
    tests : tuple of EmpiricalAudit
        Shuffle and fit channels: the threshold test of every statistic.
    checks : tuple of Check
        Shuffle channels: the exact check and the conformance tests, decided.
    reach : float
        The smallest fault the row detects, as a budget multiplier (module
        docstring); ``inf`` when no test can see one.

    Examples
    --------
    >>> from fastldp.audit import audit_channel, get_channel
    >>> row = audit_channel(get_channel("oue", epsilon=2.0), n=2_000)
    >>> row.as_expected, row.kind, row.claimed
    (True, 'exact', 2.0)
    >>> row
    AuditRow('oue', kind='exact', claimed=2, pass, exact epsilon=2, lower bound=..., seconds=...)
    """

    name: str
    kind: str
    claimed: float
    exact: Optional[ExactAudit]
    empirical: Optional[EmpiricalAudit]
    holds: bool
    expect_violation: bool
    seconds: float
    notes: list = field(default_factory=list)
    tests: tuple = ()
    checks: tuple = ()
    reach: float = math.nan

    @property
    def as_expected(self) -> bool:
        """A real channel holds; a negative control is caught."""
        return self.holds != self.expect_violation

    @property
    def low_power(self) -> bool:
        """A channel's row that cannot detect faults of :data:`LOW_POWER` times the claim."""
        return not self.expect_violation and not self.reach <= LOW_POWER

    def __repr__(self) -> str:  # the verdict line; the audits themselves are attributes
        if self.expect_violation:
            verdict = "caught" if not self.holds else "MISSED"
        else:
            verdict = "pass" if self.holds else "VIOLATION"
        exact = ("" if self.exact is None
                 else f", exact epsilon={self.exact.epsilon_audited:.6g}")
        lower = ("" if self.empirical is None
                 else f", lower bound={self.empirical.lower_bound:.4g}")
        low = ", low power" if self.low_power else ""
        return one_line(f"AuditRow({self.name!r}, kind={self.kind!r}, claimed={self.claimed:g}, "
                        f"{verdict}{exact}{lower}{low}, seconds={self.seconds:.2f})")


# ----------------------------------------------------------------- helpers
def _csr(sets, width: int, d2: int) -> sp.csr_matrix:
    sizes = np.array([s.shape[0] for s in sets], dtype=np.int64)
    cols = (np.concatenate([s[:, 0] * d2 + s[:, 1] for s in sets]) if sizes.sum()
            else np.zeros(0, dtype=np.int64))
    indptr = np.concatenate([[0], np.cumsum(sizes)])
    return sp.csr_matrix((np.ones(cols.shape[0]), cols, indptr), shape=(len(sets), width))


def _witness_events(probs: np.ndarray, audit: ExactAudit):
    """Per identity ``(x, x', S)`` with the law's largest ratio, ``S`` every output attaining it.

    Any event ``S`` gives ``ln(P(S | x) / P(S | x')) <= eps`` for an
    ``eps``-LDP channel; the union of the outputs at the largest ratio keeps
    that ratio and has more mass than one output, so the test has more power.
    Identities whose ``(P(S | x), P(S | x'))`` differ from the witness's are
    left out, so the events counted are i.i.d.
    """
    i0, x0, x1, y0 = audit.witness
    target = probs[i0, x0, y0] / probs[i0, x1, y0]

    def event(i, x, xp):
        with np.errstate(divide="ignore", invalid="ignore"):
            r = probs[i, x] / probs[i, xp]
        mask = r >= target * (1 - 1e-9)
        return mask, probs[i, x, mask].sum(), probs[i, xp, mask].sum()

    mask0, a0, b0 = event(i0, x0, x1)
    plan = []
    for i in range(probs.shape[0]):
        with np.errstate(divide="ignore", invalid="ignore"):
            ratio = probs[i].max(axis=0) / probs[i].min(axis=0)
        y = int(np.argmax(ratio))
        if not ratio[y] >= target * (1 - 1e-9):
            continue
        x, xp = int(probs[i, :, y].argmax()), int(probs[i, :, y].argmin())
        mask, a, b = event(i, x, xp)
        if a == a0 and b == b0:
            plan.append((i, x, xp, mask))
    return plan, (a0, b0)


def _sampler_check(ch: Channel, mech, law: ExactLaw, audit: ExactAudit, n: int, rng) -> EmpiricalAudit:
    """Run the mechanism's sampler on the exact witness and bound its epsilon from below."""
    plan, (pa, pb) = _witness_events(law.probs, audit)
    key_index = {k: j for j, k in enumerate(law.outputs)}
    eps = ch.built_epsilon

    keyed_ids = law.identities[[r[0] for r in plan]]
    keyed_masks = np.stack([r[3] for r in plan]) if ch.keyed else plan[0][3][None, :]
    keyed_xs = [[law.inputs[r[1 + side]] for r in plan] for side in (0, 1)]

    def draw(side, size, gen):
        hits = []
        got_total = 0
        while got_total < size:
            if ch.keyed:
                m = len(plan)
                ids, xs = keyed_ids, keyed_xs[side]
            else:
                m = min(size - got_total, 1 << 16)
                ids = np.arange(m, dtype=np.uint64)
                xs = [law.inputs[plan[0][1 + side]]] * m
            reports = ch.sample(mech, eps, xs, ids, gen)
            got = np.array([key_index.get(ch.output_key(r), -1) for r in reports])
            if (got < 0).any():
                raise AssertionError(f"{ch.name}: the sampler released an output outside the "
                                     f"exact law's support: {reports[int(np.argmax(got < 0))]!r}")
            rows_idx = np.arange(m) if ch.keyed else np.zeros(m, dtype=np.int64)
            hits.append(keyed_masks[rows_idx, got])
            got_total += m
        return np.concatenate(hits)[:size]

    i0, x0, x1, _ = audit.witness
    event = (f"{int(plan[0][3].sum())} output(s) at the largest ratio, x = #{x0} vs x' = #{x1}, "
             f"law {pa:.4f} vs {pb:.4f}" + (f", {len(plan)} identities" if ch.keyed else ""))
    # a sampler that follows its law cannot be refuted above the law's own ratio,
    # which may be below the claim (P-RS mixes slots): hold it to the smaller one
    bound = min(ch.epsilon, audit.epsilon_audited + audit.tol)
    result = event_test(draw, bound, n=n, rng=rng, event=event)
    return replace(result, claimed=ch.epsilon)


def audit_channel(ch: Channel, *, n: int = 100_000, rng: int = 0, sampler: bool = True,
                  identities: Optional[ArrayLike] = None) -> AuditRow:
    """Audit one channel (see the module docstring).

    Parameters
    ----------
    ch : Channel
    n : int
        Draws per side of every distinguishing test. The sampler check of an
        exact channel holds the sampler to ``min(claim, exact eps)``: a
        sampler that follows its law cannot be refuted above its law.
    rng : int
        Seed of the audit.
    sampler : bool
        Run the sampler check of exact channels.
    identities : array_like, optional
        Identities an exact law covers (default ``0 .. POOL-1`` for keyed
        channels, ``0`` otherwise).
    """
    t0 = time.perf_counter()
    mech = ch.build(ch.built_epsilon)
    notes = []
    exact = empirical = None
    tests, checks = (), ()
    if ch.kind == "exact":
        ids = (np.arange(POOL if ch.keyed else 1, dtype=np.uint64) if identities is None
               else np.asarray(identities, dtype=np.uint64))
        assert ch.law is not None, f"exact channel {ch.name!r} has no law"
        law = ch.law(mech, ch.built_epsilon, ids)
        exact = audit_law(law, ch.epsilon)
        holds = exact.holds
        if exact.max_row_error > 1e-9:
            notes.append(f"law rows sum to 1 only within {exact.max_row_error:.2e}")
        if sampler and ch.sample is not None:
            empirical = _sampler_check(ch, mech, law, exact, n, rng)
            holds = holds and empirical.holds
        elif ch.sample is None:
            notes.append("no sampler check: the law is conditional on public values that "
                         "the sampler computes itself")
        notes.append(f"{len(law.inputs)} inputs x {len(law.outputs)} outputs x "
                     f"{law.identities.shape[0]} identities; {law.note}")
    elif ch.kind in ("shuffle", "fit"):
        claimed, tests, checks, empirical, holds, draws, pilot = _view_audit(ch, mech, n, rng)
        ch = replace(ch, epsilon=claimed)
        if draws != n:
            notes.append(f"{draws} draws per side (pilot {pilot}): each draw is a whole "
                         f"protocol run")
        for c in checks:
            verdict = "pass" if c.passed else "FAIL"
            notes.append(f"{c.name}: {verdict}"
                         + (f" (p = {c.p_value:.2g})" if c.statistical else "")
                         + (f"; {c.detail}" if c.detail else ""))
    else:
        zcdp = ch.kind == "zcdp"
        if zcdp:
            assert ch.claim is not None, f"zCDP channel {ch.name!r} has no claim"
            claimed = ch.claim(mech)
        else:
            claimed = ch.epsilon

        def draw(side, size, gen):
            return ch.draw(mech, ch.built_epsilon, side, size, gen)

        draws, pilot = n, 20_000
        if ch.draws is not None:
            draws, pilot = min(n, ch.draws[0]), min(pilot, ch.draws[1])
        empirical = threshold_test(draw, claimed, n=draws, pilot=pilot, rng=rng, zcdp=zcdp)
        holds = empirical.holds
        ch = replace(ch, epsilon=claimed)
        if draws != n:
            notes.append(f"{draws} draws per side (pilot {pilot}): each draw is a whole protocol run")
    if ch.describe is not None:
        notes.append(ch.describe(mech))
    row_reach = _row_reach(ch, exact, empirical, tests, checks)
    if not row_reach <= LOW_POWER and not ch.expect_violation:
        notes.append(low_power_note(row_reach))
    return AuditRow(ch.name, ch.kind, ch.epsilon, exact, empirical, bool(holds),
                    ch.expect_violation, time.perf_counter() - t0, notes, tuple(tests),
                    tuple(checks), row_reach)


def _row_reach(ch, exact, empirical, tests, checks) -> float:
    """The smallest budget multiplier any test of the row detects (module docstring)."""
    if exact is not None:
        return 1.0                  # the law audit decides every claim exactly
    zcdp = ch.kind == "zcdp"
    found = [reach(t, zcdp=zcdp) for t in (tests or ([empirical] if empirical else []))]
    found += [c.reach for c in checks if not math.isnan(c.reach)]
    # the control showed the known reach at the channel's default draws, not at fewer
    drawn = [t.counts[1] for t in tests]
    if not math.isnan(ch.known_reach) and drawn and ch.draws and min(drawn) >= ch.draws[0]:
        found.append(ch.known_reach)
    return min(found, default=math.inf)


def _view_audit(ch, mech, n, rng):
    """Threshold tests of several statistics of the views, and the conformance tests.

    Returns ``(claimed eps, tests, checks, most refuting test, holds, draws, pilot)``.
    Every statistical test of the row runs at ``ALPHA / (number of tests)``.
    """
    claimed, delta = ch.claim(mech)
    draws, pilot = n, 20_000
    if ch.draws is not None:
        draws, pilot = min(n, ch.draws[0]), min(pilot, ch.draws[1])
    gens = [np.random.default_rng(s) for s in np.random.SeedSequence(rng).spawn(5)]
    eps = ch.built_epsilon
    pilots = [ch.draw(mech, eps, side, pilot, gens[side]) for side in (0, 1)]
    fresh = [ch.draw(mech, eps, side, draws, gens[2 + side]) for side in (0, 1)]
    names = ch.statistics or tuple(fresh[0].stats)
    checks = list(ch.conformance(mech, fresh, gens[4], draws)) if ch.conformance else []
    alpha = ALPHA / (len(names) + sum(c.statistical for c in checks))
    checks = [c.decided(alpha) for c in checks]
    tests = [threshold_test_samples((pilots[0].stats[nm], pilots[1].stats[nm]),
                                    (fresh[0].stats[nm], fresh[1].stats[nm]), claimed,
                                    alpha=alpha, delta=delta, statistic=nm) for nm in names]
    best = max(tests, key=lambda t: t.lower_bound)
    holds = all(t.holds for t in tests) and all(c.passed for c in checks)
    return claimed, tests, checks, best, holds, draws, pilot


# ----------------------------------------------------------------- the channels
def _jprs(eps):
    from ..relations import JPRS

    return JPRS(shape=(2, 3), k=2, s=1, codebook_seed=20240611, n_threads=1)


def _jprs_law(mech, eps, ids):
    return laws.jprs_law(mech, eps, ids, csr=lambda sets: _csr(sets, mech.p, mech.shape[1]))


def _jprs_sample(mech, eps, xs, ids, gen):
    return mech.privatize(_csr(xs, mech.p, mech.shape[1]), epsilons=eps, identities=ids, rng=gen)


def _prs(oracle):
    def build(eps):
        from ..relations import PaddedRelationSampling

        return PaddedRelationSampling(shape=(2, 2), k=2, s=1, oracle=oracle,
                                      codebook_seed=20240612, n_threads=1)
    return build


def _prs_sample(mech, eps, xs, ids, gen):
    return mech.privatize(_csr(xs, mech.p, mech.shape[1]), epsilons=eps, identities=ids, rng=gen)


def _duchi(eps):
    from ..oracles.randomizers import Duchi

    return Duchi(epsilon=eps)


def _duchi_sample(mech, eps, xs, ids, gen):
    return mech.privatize(np.asarray(xs, dtype=np.float64), rng=gen)


def _rpc(randomizer, d=3, m=2):
    def build(eps):
        from ..vectors import RPC

        return RPC(d=d, m=m, epsilon=eps, randomizer=randomizer, codebook_seed=20240613,
                   n_threads=1)
    return build


def _rpc_sample(mech, eps, xs, ids, gen):
    return mech.privatize(np.stack(xs), identities=ids, rng=gen)


def _scalar_draw(mech, eps, side, size, gen):
    return mech.privatize(np.full(size, 1.0 if side == 0 else -1.0), rng=gen)


def _rpc_draw(mech, eps, side, size, gen):
    """Each identity gets the input aligned with its public signs: ``u = +R`` (side 0) or ``-R``."""
    ids = np.arange(size, dtype=np.uint64)
    x = np.zeros((size, mech.d))
    x[:, : mech.m] = mech.sign_vectors(ids, np.arange(mech.m))
    return mech.privatize(x if side == 0 else -x, identities=ids, rng=gen)


#: count pair (n, n + 1) audited for the histograms
HISTOGRAM_COUNT = 10


def _histogram(eps):
    from ..histograms import ShiftedLogGaussian

    return ShiftedLogGaussian(r=0.1)


def _histogram_draw(mech, eps, side, size, gen):
    return mech.release(np.full(size, HISTOGRAM_COUNT + (1 - side)), rng=gen)


def _histogram_claim(mech):
    return float(mech.rho(HISTOGRAM_COUNT + 1))


# ----------------------------------------------------------------- exact integer noise
class _ExactNoise:
    """An integer input plus exact noise of :mod:`fastldp.noise` (sensitivity 1).

    ``scale`` (the discrete Laplace's) or ``sigma2`` (the discrete
    Gaussian's) is what the law and the claim read; ``noise_param`` is what
    the sampler draws with (the same, except in the negative controls).
    """

    def __init__(self, family: str, param, noise_param=None):
        self.family = family
        self.param = param
        self.noise_param = param if noise_param is None else noise_param
        # the laplace law's outputs: -span - 1 stands for y <= -span - 1, span + 2 for
        # y >= span + 2 (lumped tails keep the ratio: both are e^(1/t) exactly)
        self.span = int(math.ceil(4 * param)) + 1 if family == "laplace" else None

    def privatize(self, x, *, rng=None):
        from .. import noise

        x = np.asarray(x, dtype=np.int64)
        sampler = noise.discrete_laplace if self.family == "laplace" else noise.discrete_gaussian
        return x + sampler(self.noise_param, x.shape, rng=rng)


def _discrete_laplace(eps):
    from fractions import Fraction

    return _ExactNoise("laplace", 1 / Fraction(eps))  # scale 1 / eps, taken exactly


def _discrete_laplace_law(mech, eps, ids):
    """Inputs 0 and 1, outputs ``y = x + Z`` clamped to ``[-M - 1, M + 2]``.

    ``P[Z = z] = c q^|z|`` with ``q = e^(-1/t)``, ``c = (1 - q) / (1 + q)``;
    the clamped tails ``P[Y <= -M - 1 | x] = c q^(M + 1 + x) / (1 - q)`` and
    ``P[Y >= M + 2 | x] = c q^(M + 2 - x) / (1 - q)``. Every output's ratio
    between the two inputs is ``q^(+-1)``: the largest is ``e^(1/t)`` exactly.
    """
    inv = 1.0 / float(mech.param)
    q, c, one_minus_q = math.exp(-inv), math.tanh(inv / 2), -math.expm1(-inv)
    M = mech.span
    ys = list(range(-M - 1, M + 3))
    probs = np.empty((1, 2, len(ys)))
    for x in (0, 1):
        probs[0, x, 1:-1] = [c * q ** abs(y - x) for y in ys[1:-1]]
        probs[0, x, 0] = c * q ** (M + 1 + x) / one_minus_q
        probs[0, x, -1] = c * q ** (M + 2 - x) / one_minus_q
    return ExactLaw([0, 1], ys, np.zeros(1, dtype=np.uint64), probs,
                    note="float64 pmf of the exact sampler, tails lumped")


def _discrete_laplace_sample(mech, eps, xs, ids, gen):
    return np.clip(mech.privatize(np.asarray(xs), rng=gen), -mech.span - 1, mech.span + 2)


#: the discrete Gaussian audit's variance parameter (inputs 0 and 1: rho = 1 / (2 sigma2))
DISCRETE_GAUSSIAN_SIGMA2 = 1


def _discrete_gaussian(eps):
    return _ExactNoise("gaussian", DISCRETE_GAUSSIAN_SIGMA2)


def _exact_noise_draw(mech, eps, side, size, gen):
    return mech.privatize(np.full(size, 1 - side), rng=gen).astype(np.float64)


def channels(epsilon: float = 1.0) -> dict[str, Channel]:
    """The registry: every local randomizer of the package, by name, at claimed ``epsilon``."""
    from ..oracles.randomizers import DiscretePiecewise, Laplace, Piecewise

    out = [
        Channel("jprs", "JPRS one bit, 2x3 table, k=2, all 22 sets", epsilon, _jprs,
                law=_jprs_law, sample=_jprs_sample, keyed=True),
        Channel("p-rs-grr", "P-RS over GRR, 2x2 table, k=2 (D = 6)", epsilon, _prs("grr"),
                law=laws.padded_law, sample=_prs_sample),
        Channel("p-rs-olh", "P-RS over OLH, 2x2 table, k=2", epsilon, _prs("olh"),
                law=laws.padded_law, sample=_prs_sample, keyed=True),
        Channel("p-rs-hr", "P-RS over HR, 2x2 table, k=2 (K = 8)", epsilon, _prs("hr"),
                law=laws.padded_law, sample=_prs_sample),
        Channel("duchi", "Duchi two-point randomizer, u in {-1, -.5, 0, .5, 1}", epsilon, _duchi,
                law=lambda mech, eps, ids: laws.duchi_law(mech), sample=_duchi_sample),
        Channel("rpc-duchi", "RPC report, Duchi route, d=3, m=2, all 19 ternary inputs", epsilon,
                _rpc("duchi"), law=lambda mech, eps, ids: laws.rpc_law(mech, ids),
                sample=_rpc_sample, keyed=True),
        Channel("laplace", "Laplace randomizer, u = +1 vs -1", epsilon, lambda eps: Laplace(epsilon=eps),
                kind="empirical", draw=_scalar_draw),
        Channel("piecewise", "Piecewise randomizer, u = +1 vs -1", epsilon,
                lambda eps: Piecewise(epsilon=eps), kind="empirical", draw=_scalar_draw),
        Channel("laplace-secure", "Laplace(secure=True): grid 2^-10, discrete Laplace noise, "
                "u = +1 vs -1", epsilon, lambda eps: Laplace(epsilon=eps, secure=True),
                kind="empirical", draw=_scalar_draw,
                describe=lambda mech: f"effective eps {mech.effective_epsilon:.10g}"),
        Channel("piecewise-discrete", "DiscretePiecewise, m = 4, all 5 grid inputs x "
                "m + W outputs", epsilon, lambda eps: DiscretePiecewise(epsilon=eps, m=4),
                law=lambda mech, eps, ids: laws.discrete_piecewise_law(mech),
                sample=_duchi_sample,
                describe=lambda mech: f"A / B = e^{mech.effective_epsilon:.10g}"),
        Channel("rpc-laplace", "RPC report, Laplace, u = +R vs -R", epsilon, _rpc("laplace", 6, 4),
                kind="empirical", draw=_rpc_draw),
        Channel("rpc-piecewise", "RPC report, Piecewise, u = +R vs -R", epsilon,
                _rpc("piecewise", 6, 4), kind="empirical", draw=_rpc_draw),
        Channel("histogram-zcdp", f"ShiftedLogGaussian(r=0.1), counts {HISTOGRAM_COUNT + 1} vs "
                f"{HISTOGRAM_COUNT}, rho = v({HISTOGRAM_COUNT + 1})", float("nan"), _histogram,
                kind="zcdp", draw=_histogram_draw, claim=_histogram_claim),
        Channel("discrete-laplace", "fastldp.noise.discrete_laplace, scale 1 / eps, x + Z for "
                "x = 0 vs 1, outputs clamped to [-M - 1, M + 2]", epsilon, _discrete_laplace,
                law=_discrete_laplace_law, sample=_discrete_laplace_sample,
                describe=lambda mech: f"scale {mech.param}, M = {mech.span}"),
        Channel("discrete-gaussian", f"fastldp.noise.discrete_gaussian, sigma2 = "
                f"{DISCRETE_GAUSSIAN_SIGMA2}, x + Z for x = 0 vs 1, rho = 1 / (2 sigma2) "
                "(not pure DP: audited against its zCDP claim)", float("nan"),
                _discrete_gaussian, kind="zcdp", draw=_exact_noise_draw,
                claim=lambda mech: 1.0 / (2.0 * float(mech.param))),
    ]
    out[0:0] = (_oracle_channels(epsilon) + _subset_hash_channels(epsilon)
                + _encoding_channels(epsilon))
    out += _vector_channels(epsilon)
    out += _heavy_hitter_channels(epsilon)
    out += _shuffle_channels(epsilon)
    from .regression import regression_channels

    out += regression_channels(epsilon)
    from .longitudinal import longitudinal_channels

    out += longitudinal_channels(epsilon)
    from .rappor_dbitflip import rappor_dbitflip_channels

    out += rappor_dbitflip_channels(epsilon)
    return {ch.name: ch for ch in out}


#: domain of the oracle audits (OUE / SUE enumerate 2^D bit vectors)
ORACLE_D = 5


#: the hash functions and columns of the CMS / HCMS audits (k 2^m outputs for CMS)
SKETCH_ROWS, SKETCH_COLUMNS = 2, 4
SKETCH_SHAPE = {"n_rows": SKETCH_ROWS, "n_columns": SKETCH_COLUMNS}


def _oracle(name, **extra):
    def build(eps):
        from .. import oracles

        cls = {"grr": oracles.GRR, "olh": oracles.OLH, "hr": oracles.HadamardResponse,
               "oue": oracles.OUE, "sue": oracles.SUE, "flh": oracles.FLH,
               "cms": oracles.CMS, "hcms": oracles.HCMS}[name]
        return cls(domain_size=ORACLE_D, epsilon=eps, codebook_seed=20240614, n_threads=1, **extra)
    return build


def _oracle_law(name):
    def law(mech, eps, ids):
        if name == "flh":
            return laws.flh_law(mech.domain_size, eps, mech.g, mech.pool(), ids)
        if name in ("cms", "hcms"):
            sketch_law = laws.cms_law if name == "cms" else laws.hcms_law
            return sketch_law(eps, mech.n_columns, mech.hash_table(), ids)
        return laws.oracle_law(name, mech.domain_size, eps, mech.codebook_seed, ids)
    return law


def _oracle_sample(mech, eps, xs, ids, gen):
    return mech.privatize(np.asarray(xs, dtype=np.int64), identities=ids, rng=gen)


def _bits_key(row):
    return tuple(int(b) for b in np.unpackbits(np.asarray(row, dtype=np.uint8),
                                                bitorder="little")[:ORACLE_D])


def _oracle_channels(epsilon):
    """The frequency oracles, through the keyword API of :mod:`fastldp.oracles`."""
    D = ORACLE_D
    return [
        Channel("grr", f"GRR, D = {D}", epsilon, _oracle("grr"), law=_oracle_law("grr"),
                sample=_oracle_sample),
        Channel("olh", f"OLH, D = {D}, per-identity public hash", epsilon, _oracle("olh"),
                law=_oracle_law("olh"), sample=_oracle_sample, keyed=True),
        Channel("flh", f"FLH, D = {D}, public pool of 8 hashes", epsilon,
                _oracle("flh", n_hashes=8), law=_oracle_law("flh"), sample=_oracle_sample,
                output_key=lambda r: (int(r[0]), int(r[1]))),
        Channel("hr", f"Hadamard response, D = {D} (K = 8)", epsilon, _oracle("hr"),
                law=_oracle_law("hr"), sample=_oracle_sample),
        Channel("oue", f"OUE, D = {D}, all {2 ** D} bit vectors", epsilon, _oracle("oue"),
                law=_oracle_law("oue"), sample=_oracle_sample, output_key=_bits_key),
        Channel("sue", f"SUE, D = {D}, all {2 ** D} bit vectors", epsilon, _oracle("sue"),
                law=_oracle_law("sue"), sample=_oracle_sample, output_key=_bits_key),
        Channel("cms", f"Apple's CMS, D = {D}, k = {SKETCH_ROWS} rows x m = {SKETCH_COLUMNS} "
                f"columns, all {SKETCH_ROWS * 2 ** SKETCH_COLUMNS} (row, signs) outputs", epsilon,
                _oracle("cms", **SKETCH_SHAPE), law=_oracle_law("cms"), sample=_oracle_sample,
                output_key=lambda r: (int(r[0]), int(r[1]))),
        Channel("hcms", f"Apple's HCMS, D = {D}, k = {SKETCH_ROWS} rows x m = {SKETCH_COLUMNS} "
                f"columns, all {SKETCH_ROWS * SKETCH_COLUMNS * 2} (row, column, bit) outputs",
                epsilon, _oracle("hcms", **SKETCH_SHAPE), law=_oracle_law("hcms"),
                sample=_oracle_sample,
                output_key=lambda r: (int(r[0]), int(r[1]), int(r[2]))),
    ]


#: subset size of the subset-selection audit (size 1 would be GRR)
SS_SUBSET_SIZE = 2


def _ss(eps):
    from ..oracles import SubsetSelection

    return SubsetSelection(domain_size=ORACLE_D, epsilon=eps, subset_size=SS_SUBSET_SIZE,
                           codebook_seed=20240614, n_threads=1)


def _blh(eps):
    from ..oracles import BLH

    return BLH(domain_size=ORACLE_D, epsilon=eps, codebook_seed=20240614, n_threads=1)


def _subset_hash_channels(epsilon):
    """Subset selection (sets of SS_SUBSET_SIZE symbols) and binary local hashing."""
    D, k = ORACLE_D, SS_SUBSET_SIZE
    return [
        Channel("ss", f"subset selection, D = {D}, all {math.comb(D, k)} sets of k = {k}", epsilon,
                _ss, law=lambda mech, eps, ids: laws.subset_law(mech.domain_size, eps,
                                                              mech.subset_size, ids),
                sample=_oracle_sample, output_key=_bits_key),
        Channel("blh", f"BLH, D = {D}, per-identity public hash onto 2 buckets", epsilon, _blh,
                law=lambda mech, eps, ids: laws.blh_law(mech.domain_size, eps,
                                                        mech.codebook_seed, ids),
                sample=_oracle_sample, keyed=True),
    ]


#: the RAPPOR audit: k = 4 bits (all 2^4 reports), h = 2 hashes, 2 cohorts, D = 4 candidates
RAPPOR_SHAPE = {"n_bits": 4, "n_hashes": 2, "n_cohorts": 2}
RAPPOR_D = 4


def _histogram_encoding(name):
    def build(eps):
        from .. import oracles

        cls = {"she": oracles.SHE, "the": oracles.THE}[name]
        return cls(domain_size=ORACLE_D, epsilon=eps, codebook_seed=20240614, n_threads=1)
    return build


#: the DiscreteSHE audit: D = 2 symbols, clamp L = 2 (6^2 integer reports at grid 1); with D = 2
#: every float probability is a product of two factors, so the tied outputs of the two
#: directions have bit-identical probabilities (the sampler check needs one witness event)
DISCRETE_SHE_D, DISCRETE_SHE_CLAMP = 2, 2


def _discrete_she(eps):
    from ..oracles import DiscreteSHE

    return DiscreteSHE(domain_size=DISCRETE_SHE_D, epsilon=eps, clamp=DISCRETE_SHE_CLAMP,
                       codebook_seed=20240614)


def _rappor(eps):
    from ..oracles import RAPPOR

    return RAPPOR(domain_size=RAPPOR_D, epsilon=eps, codebook_seed=20240617, n_threads=1,
                  **RAPPOR_SHAPE)


def _rappor_key(row):
    return tuple(int(b) for b in np.unpackbits(np.asarray(row, dtype=np.uint8),
                                                bitorder="little")[:RAPPOR_SHAPE["n_bits"]])


def _she_draw(mech, eps, side, size, gen):
    """SHE reports of symbol 0 (side 0) or 1 (side 1), as ``g(y_0) - g(y_1)``.

    ``g(y) = clip(2 y - 1, -1, 1)``: the privacy loss of a report between
    the two inputs is ``(g(y_0) - g(y_1)) / b``, so thresholds of this
    statistic are the Neyman-Pearson events (the largest ratio ``e^eps`` on
    ``y_0 >= 1, y_1 <= 0``).
    """
    y = mech.privatize(np.full(size, side, dtype=np.int64), rng=gen)
    g = np.clip(2.0 * y[:, :2] - 1.0, -1.0, 1.0)
    return g[:, 0] - g[:, 1]


def _encoding_channels(epsilon):
    """Histogram encoding (SHE: empirical, continuous outputs; THE: exact) and one-time RAPPOR."""
    D = ORACLE_D
    return [
        Channel("she", f"SHE, D = {D}, symbol 0 vs 1: the statistic g(y_0) - g(y_1) (the privacy "
                "loss over b)", epsilon, _histogram_encoding("she"), kind="empirical",
                draw=_she_draw),
        Channel("the", f"THE, D = {D}, variance-optimal threshold, all {2 ** D} bit vectors",
                epsilon, _histogram_encoding("the"),
                law=lambda mech, eps, ids: laws.the_law(mech.domain_size, eps, mech.threshold,
                                                        ids),
                sample=_oracle_sample, output_key=_bits_key,
                describe=lambda mech: f"threshold {mech.threshold:.6g}"),
        Channel("she-discrete", f"DiscreteSHE, D = {DISCRETE_SHE_D}, grid 1, clamp L = "
                f"{DISCRETE_SHE_CLAMP}, all {(2 * DISCRETE_SHE_CLAMP + 2) ** DISCRETE_SHE_D} "
                "integer reports", epsilon, _discrete_she,
                law=lambda mech, eps, ids: laws.discrete_she_law(mech, eps),
                sample=_oracle_sample, output_key=lambda r: tuple(int(v) for v in r),
                describe=lambda mech: f"effective eps {mech.effective_epsilon():.10g}"),
        Channel("rappor", f"one-time RAPPOR, D = {RAPPOR_D}, k = {RAPPOR_SHAPE['n_bits']} bits "
                f"(all {2 ** RAPPOR_SHAPE['n_bits']} reports), h = {RAPPOR_SHAPE['n_hashes']}, "
                f"{RAPPOR_SHAPE['n_cohorts']} cohorts by identity", epsilon, _rappor,
                law=lambda mech, eps, ids: laws.rappor_law(mech, eps, ids),
                sample=_oracle_sample, output_key=_rappor_key, keyed=True),
    ]


def get_channel(name: str, epsilon: float = 1.0) -> Channel:
    """The registry's channel ``name`` at claimed ``epsilon`` (ValueError listing the names)."""
    registry = channels(epsilon)
    if name not in registry:
        raise ValueError(f"Unknown mechanism {name!r}; the registry has: {', '.join(registry)}.")
    return registry[name]


def audit_all(names: Optional[Sequence[str]] = None, *, epsilon: float = 1.0,
              controls: bool = False, n: int = 100_000, rng: int = 0) -> list[AuditRow]:
    """Audit the named channels (default: all), and the negative controls when asked.

    ``names`` may also name negative controls (``control:...``): with
    ``controls`` they are audited as controls (a row is as expected when the
    fault is caught); without, *as if honest* (a caught fault is a
    violation), which is how a fault looks to someone who believed it.
    With ``controls``, the controls of every named channel are added.
    """
    from .controls import negative_controls

    registry = channels(epsilon)
    faults = negative_controls(epsilon)
    if names:
        unknown = [nm for nm in names if nm not in registry and nm not in faults]
        if unknown:
            raise ValueError(f"Unknown mechanism(s) {', '.join(map(repr, unknown))}; the registry "
                             f"has: {', '.join(registry)} (and the negative controls, "
                             f"'fastldp audit --list --controls').")
        selected = [registry[nm] if nm in registry else
                    faults[nm] if controls else replace(faults[nm], expect_violation=False)
                    for nm in names]
    else:
        selected = list(registry.values())
    if controls:
        chosen = {ch.name for ch in selected}
        selected += [c for c in faults.values() if c.control_of in chosen
                     and c.name not in chosen]
    return [audit_channel(ch, n=n, rng=rng) for ch in selected]


# ----------------------------------------------------------------- sparse-vector baselines
#: dimension and set size of the sparse-vector audits (PCKV-GRR uses m = 1, see below)
KV_D, KV_M = 3, 2
#: PrivKVM's rounds in the audit
PRIVKVM_ROUNDS = 3


def _pckv(cls_name, m):
    def build(eps):
        from .. import vectors

        return getattr(vectors, cls_name)(d=KV_D, m=m, epsilon=eps)
    return build


def _pckv_describe(mech):
    from ..vectors import pckv_composed_epsilon

    return (f"split (eps1, eps2) = ({mech.eps1:.6g}, {mech.eps2:.6g}), composed "
            f"max(eps2, eps1 + ln(2/(1+e^-eps2))) = "
            f"{pckv_composed_epsilon(mech.eps1, mech.eps2):.6g}")


def _pckv_ue_law(mech, eps, ids):
    from . import vector_laws

    return vector_laws.pckv_ue_law(mech.d, mech.ell, mech.eps1, mech.eps2, m=mech.m)


def _pckv_grr_law(mech, eps, ids):
    from . import vector_laws

    return vector_laws.pckv_grr_law(mech.d, mech.ell, mech.eps1, mech.eps2, m=mech.m)


_row_tuples = row_tuples


def _kv_sample(mech, eps, xs, ids, gen):
    from .vector_laws import kv_csr

    return _row_tuples(mech.privatize(kv_csr(xs, mech.d), rng=gen))


def _round_share(c):
    """Round 1's share of PrivKVM's total budget: ``eps/2 + eps/(2c)``."""
    return 0.5 + 0.5 / c


def _privkvm(total):
    """``build(eps)``: PrivKVM whose round-1 channel spends ``eps`` (or whose total is ``eps``)."""
    def build(eps):
        from ..vectors import PrivKVM

        c = PRIVKVM_ROUNDS
        return PrivKVM(d=KV_D, m=KV_M, epsilon=eps if total else eps / _round_share(c), n_rounds=c)
    return build


def _privkvm_round_law(mech, eps, ids):
    from . import vector_laws

    return vector_laws.privkvm_round_law(mech.d, mech.m, mech.epsilon, mech.n_rounds)


def _privkvm_law(mech, eps, ids):
    from . import vector_laws

    return vector_laws.privkvm_law(mech.d, mech.m, mech.epsilon, mech.n_rounds,
                               vector_laws.fake_grid(mech.n_rounds))


def _privkvm_sample(mech, eps, xs, ids, gen):
    from .vector_laws import kv_csr

    rep = mech.privatize(kv_csr(xs, mech.d), rng=gen)
    return _row_tuples(np.stack([rep.keys, rep.key_bits, rep.values[:, 0]], axis=1))


def _collision(eps):
    from ..vectors import Collision

    return Collision(d=KV_D, m=KV_M, epsilon=eps, values="signed", codebook_seed=20240615,
                     n_threads=1)


def _collision_law(mech, eps, ids):
    from .vector_laws import collision_law

    return collision_law(mech, ids)


def _keyed_kv_sample(mech, eps, xs, ids, gen):
    from .vector_laws import kv_csr

    return mech.privatize(kv_csr(xs, mech.d), identities=ids, rng=gen).tolist()


def _succinct(randomizer, b):
    def build(eps):
        from ..vectors import Succinct

        return Succinct(d=KV_D, m=KV_M, epsilon=eps, b=b, R=1.0, randomizer=randomizer,
                        codebook_seed=20240616, n_threads=1)
    return build


def _succinct_law(mech, eps, ids):
    from .vector_laws import succinct_duchi_law

    return succinct_duchi_law(mech, ids)


def _succinct_sample(mech, eps, xs, ids, gen):
    y = mech.privatize(np.stack(xs), identities=ids, rng=gen)
    mag = mech.R * mech.randomizer.C
    if not np.all(np.abs(y) == mag):
        bad = y[np.abs(y) != mag][0]
        raise AssertionError(f"succinct: the sampler released {bad!r}, not +-R C = +-{mag!r}")
    return _row_tuples(np.sign(y).astype(np.int64))


def _succinct_draw(mech, eps, side, size, gen):
    """``b = 1``: each identity's first ``m`` coordinates carry its public signs, so
    ``B = +-m``, clipped to ``u = +-1``."""
    ids = np.arange(size, dtype=np.uint64)
    x = np.zeros((size, mech.d))
    for j in range(mech.m):
        x[:, j] = mech.signs(ids, np.full(size, j))
    return mech.privatize(x if side == 0 else -x, identities=ids, rng=gen)[:, 0]


#: PEM's audit: 3-bit items, g = 2 groups, eta = 1 (prefixes of 2 and 3 bits)
PEM_ITEM_BITS = 3


def _pem(eps):
    from ..heavyhitters import PEM

    return PEM(epsilon=eps, k=1, g=2, eta=1, item_bits=PEM_ITEM_BITS, codebook_seed=20240614,
               n_threads=1)


def _pem_law(mech, eps, ids):
    """Identity i reports OLH of its item's prefix of b_j(i) bits: row x is the row of x >> (m - b)."""
    ids = np.ascontiguousarray(ids, dtype=np.uint64)
    items = np.arange(2 ** mech.item_bits)
    probs = np.empty((ids.shape[0], items.shape[0], mech.n_buckets))
    for r, identity in enumerate(ids):
        b, level = mech.level_channel(int(identity))
        probs[r] = level[items >> (mech.item_bits - b)]
    return ExactLaw(items.tolist(), list(range(mech.n_buckets)), ids, probs)


def _pem_sample(mech, eps, xs, ids, gen):
    return mech.privatize(np.asarray(xs, dtype=np.uint64), identities=ids, rng=gen)


def _heavy_hitter_channels(epsilon):
    """The heavy-hitter protocols' randomizers, through the protocol objects."""
    return [
        Channel("pem-olh", f"PEM: OLH of the item's prefix, {PEM_ITEM_BITS}-bit items, g = 2 "
                "groups of 2- and 3-bit prefixes, per-identity hash and group", epsilon, _pem,
                law=_pem_law, sample=_pem_sample, keyed=True),
        Channel("treehist", f"TreeHist: one HCMS-law report at eps (the prefix at the "
                f"identity's level), {TREEHIST_ITEM_BITS}-bit items, binary tree of 3 levels, "
                "R = 1 x T = 2, all 4 (j, l, omega) outputs", epsilon,
                _treehist, law=_one_part_law, sample=_pem_sample, output_key=_six_key,
                keyed=True),
        Channel("sfp", f"Apple's SFP: HCMS-law parts at eps/2 (fragment + puzzle piece at the "
                f"identity's position, the item), {SFP_ITEM_BITS}-bit items, 2 positions of "
                "2 bits, 1-bit puzzle, R = 1 x T = 2, all 16 outputs", epsilon, _sfp,
                law=_two_part_law, sample=_pem_sample, output_key=_six_key, keyed=True),
        Channel("sfp-cms", f"Apple's SFP with CMS parts (its default): fragment + puzzle piece "
                f"at 0.625 eps, the item at 0.375 eps, {SFP_ITEM_BITS}-bit items, 2 positions of "
                "2 bits, 1-bit puzzle, R = 1 x m = 2, all 16 (j, signs, j', signs') outputs",
                epsilon, _sfp_cms, law=_sfp_cms_law, sample=_pem_sample, output_key=_six_key,
                keyed=True),
    ]


#: TreeHist's and SFP's audits: tiny items, one hash row of two columns per part
TREEHIST_ITEM_BITS = 3
SFP_ITEM_BITS = 4


def _treehist(eps):
    from ..heavyhitters.treehist import TreeHist

    return TreeHist(epsilon=eps, k=1, eta=1, g=3, n_rows=1, n_columns=2,
                    item_bits=TREEHIST_ITEM_BITS, codebook_seed=20240615, n_threads=1)


def _sfp(eps):
    from ..heavyhitters.sfp import SFP

    return SFP(epsilon=eps, k=1, oracle="hcms", fragment_share=0.5, fragment_bits=2,
               puzzle_bits=1, n_rows=1, n_columns=2, item_bits=SFP_ITEM_BITS,
               codebook_seed=20240615, n_threads=1)


def _sfp_cms(eps):
    from ..heavyhitters.sfp import SFP

    return SFP(epsilon=eps, k=1, oracle="cms", fragment_share=0.625, fragment_bits=2,
               puzzle_bits=1, n_rows=1, n_columns=2, item_bits=SFP_ITEM_BITS,
               codebook_seed=20240615, n_threads=1)


def _sfp_cms_law(mech, eps, ids):
    """``mech.channel(i)`` per identity: ``P[x, o1 K + o2]``, ``o = j 2^m + s`` (CMS parts)."""
    ids = np.ascontiguousarray(ids, dtype=np.uint64)
    R, m = mech.n_rows, mech.n_columns
    part = [(j, s) for j in range(R) for s in range(2 ** m)]
    outputs = [a + b for a in part for b in part]
    items = np.arange(2 ** mech.item_bits)
    probs = np.stack([mech.channel(int(identity)) for identity in ids])
    return ExactLaw(items.tolist(), outputs, ids, probs)


def _six_key(r):
    return tuple(int(v) for v in r)


def _two_part_law(mech, eps, ids):
    """``mech.channel(i)`` per identity: ``P[x, o1 K + o2]``, ``o = 2 (j T + l) + (omega + 1) / 2``."""
    ids = np.ascontiguousarray(ids, dtype=np.uint64)
    R, T = mech.n_rows, mech.n_columns
    part = [(j, l, w) for j in range(R) for l in range(T) for w in (-1, 1)]
    outputs = [a + b for a in part for b in part]
    items = np.arange(2 ** mech.item_bits)
    cache: dict = {}
    probs = np.empty((ids.shape[0], items.shape[0], len(outputs)))
    for r, identity in enumerate(ids):
        group = int((mech.levels_of if hasattr(mech, "levels_of") else mech.positions_of)(
            np.array([identity], dtype=np.uint64))[0])
        if group not in cache:
            cache[group] = mech.channel(int(identity))
        probs[r] = cache[group]
    return ExactLaw(items.tolist(), outputs, ids, probs)


def _one_part_law(mech, eps, ids):
    """``mech.channel(i)`` per identity: ``P[x, o]``, ``o = 2 (j T + l) + (omega + 1) / 2``."""
    ids = np.ascontiguousarray(ids, dtype=np.uint64)
    R, T = mech.n_rows, mech.n_columns
    outputs = [(j, l, w) for j in range(R) for l in range(T) for w in (-1, 1)]
    items = np.arange(2 ** mech.item_bits)
    probs = np.stack([mech.channel(int(identity)) for identity in ids])
    return ExactLaw(items.tolist(), outputs, ids, probs)


def _vector_channels(epsilon):
    """The sparse-vector baselines of :mod:`fastldp.vectors` (RPC is above)."""
    c = PRIVKVM_ROUNDS
    share = _round_share(c)
    return [
        Channel("pckv-ue", f"PCKV-UE, d={KV_D}, m=l={KV_M}, values {{-1,0,1}}, all 3^{KV_D + KV_M} "
                "reports; claim: the composed eps of the split", epsilon,
                _pckv("PCKVUE", KV_M), law=_pckv_ue_law, sample=_kv_sample,
                describe=_pckv_describe),
        Channel("pckv-grr", f"PCKV-GRR, d={KV_D}, m=l=1 (l=2 dilutes the ratio to 0.62 eps), "
                "values {-1,0,1}; claim: the composed eps of the split", epsilon,
                _pckv("PCKVGRR", 1), law=_pckv_grr_law, sample=_kv_sample,
                describe=_pckv_describe),
        Channel("privkvm", f"PrivKVM round 1 of c={c} (key, key bit, value bit 1) at its budget "
                f"eps/2 + eps/(2c) = {share:.4g} x the total eps; d={KV_D}, m={KV_M}",
                share * epsilon, _privkvm(False), law=_privkvm_round_law,
                sample=_privkvm_sample,
                describe=lambda mech: (f"total eps {mech.epsilon:.6g}: key eps/2 = "
                                       f"{mech.eps_key:.6g}, value eps/(2c) = "
                                       f"{mech.eps_value:.6g} per round")),
        Channel("privkvm-rounds", f"PrivKVM all c={c} rounds at the total eps, for each public "
                f"fake-value trajectory in {{-1,0,1}}^{c}; exact law only", epsilon,
                _privkvm(True), law=_privkvm_law, sample=None),
        Channel("collision", f"Collision, signed, d={KV_D}, m={KV_M}, t = round(m e^eps + 2m - 1), "
                "values {-1,0,1}, per-identity public hash", epsilon, _collision,
                law=_collision_law, sample=_keyed_kv_sample, keyed=True,
                describe=lambda mech: f"t = {mech.t}, Omega = {mech.omega:.6g}"),
        Channel("succinct-duchi", f"Succinct, Duchi at eps/b, d={KV_D}, m={KV_M}, b=2, R=1, all "
                "19 ternary inputs", epsilon, _succinct("duchi", 2), law=_succinct_law,
                sample=_succinct_sample, keyed=True),
        Channel("succinct-laplace", "Succinct, Laplace, b=1, R=1, u = +1 vs -1 (B = +-m clipped)",
                epsilon, _succinct("laplace", 1), kind="empirical", draw=_succinct_draw),
        Channel("succinct-piecewise", "Succinct, Piecewise, b=1, R=1, u = +1 vs -1 (B = +-m "
                "clipped)", epsilon, _succinct("piecewise", 1), kind="empirical",
                draw=_succinct_draw),
    ]


# ----------------------------------------------------------------- shuffle protocols
#: (test, pilot) draws per side of the shuffle audits
SUM_DRAWS = (20_000, 4_000)
BITS_DRAWS = (10_000, 2_500)


def _sum_describe(mech):
    from . import shuffle as sh

    return "plan: " + ", ".join(f"{k}={v:.4g}" for k, v in mech.plan(sh.SUM_PARTIES, 1).items()
                                if k in ("mu", "shares", "modulus", "delta_noise",
                                         "delta_shares"))


def _shuffle_channels(epsilon):
    """The analyzer's views of the shuffle protocols of :mod:`fastldp.regression`."""
    from . import shuffle as sh

    return [
        Channel("shuffled-sum", f"ShuffledVectorSum view (one stream of shuffled shares), "
                f"n={sh.SUM_PARTIES}, one coordinate, party 0: +1 vs -1", epsilon,
                sh.shuffled_sum, kind="shuffle", draw=sh.shuffled_sum_views,
                claim=sh.shuffled_sum_claim, draws=SUM_DRAWS,
                statistics=("decoded sum", "first m messages"),
                conformance=sh.shuffled_sum_conformance, describe=_sum_describe),
        Channel("shuffled-bits", f"ShuffledBits view (two shuffled bit streams), "
                f"n={sh.BITS_PARTIES}, d=2, party 0: index 0 vs 1", epsilon, sh.shuffled_bits,
                kind="shuffle", draw=sh.shuffled_bits_views, claim=sh.shuffled_bits_claim,
                draws=BITS_DRAWS, statistics=("c1 - c0", "bits at position 0"),
                conformance=sh.shuffled_bits_conformance,
                describe=lambda mech: f"gamma = {mech.gamma(sh.BITS_PARTIES):.6g}"),
    ]
