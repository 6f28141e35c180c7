"""The registry of local randomizers and the audit that runs over it.

Every channel the package releases to an untrusted server is described by
its family, beside its mechanisms (a ``_channels.py`` module: the laws,
samplers, draws and negative controls), and reached through the
``channels(epsilon)`` of the family's classes (:mod:`fastldp.channels`);
:func:`channels` gathers them (:mod:`.discovery`), each with a claimed
budget and a way to audit it:

* **exact** channels (a finite output space on a tiny domain) carry an exact
  law (e.g. :mod:`fastldp.oracles._laws`), audited in rational arithmetic
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
  the analyzer's view (:mod:`fastldp.regression._shuffle_channels`):
  threshold tests of several statistics of the view against the
  ``(eps, delta)`` claim, an exact check of the order-free view's law and
  conformance tests of the accounting's assumptions
  (:mod:`fastldp.audit.conformance`).
* **fit** channels audit a whole fitted model end to end
  (:mod:`fastldp.regression._channels`): statistics of the fitted model under
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
from numpy.typing import ArrayLike

from ..channels import Channel, ExactLaw, one_line
from .controls import negative_controls
from .discovery import discovered
from .empirical import (ALPHA, EmpiricalAudit, event_test, reach, threshold_test,
                        threshold_test_samples)
from .exact import ExactAudit, audit_law
from .report import LOW_POWER, low_power_note

__all__ = ["Channel", "AuditRow", "channels", "negative_controls", "audit_channel", "audit_all",
           "get_channel", "LOW_POWER", "low_power_note", "POOL"]

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


# ----------------------------------------------------------------- the audit of one channel
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


# ----------------------------------------------------------------- the registry
def channels(epsilon: float = 1.0) -> dict[str, Channel]:
    """The registry: every channel of every audited class, by name, at claimed ``epsilon``.

    The classes are those :func:`fastldp.protocol.audited_classes` finds
    (each family's exports, in order); each lists its channels with
    ``channels(epsilon)``. Negative controls are :func:`negative_controls`.
    """
    return {ch.name: ch for ch in discovered(epsilon) if ch.control_of is None}


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
