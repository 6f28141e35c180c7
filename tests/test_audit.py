"""The audit suite: exact audits at the edge, laws against the mechanisms, controls, the CLI."""

from fractions import Fraction
from math import exp, log

import numpy as np
import pytest

from fastldp import audit, cli
from fastldp.oracles import _laws as laws
from fastldp.audit.empirical import clopper_pearson, epsilon_lower_bound, zcdp_lower_bound
from fastldp.audit.exact import ExactLaw, audit_law

EXACT = [name for name, ch in audit.channels().items() if ch.kind == "exact"]
SMALL_POOL = np.arange(256, dtype=np.uint64)


STRICTLY_INSIDE = {"p-rs-grr", "privkvm", "the",
                   # two reports of one value through one memo: inside epsilon_inf
                   *(f"{name}-rounds" for name in ("l-grr", "l-oue", "l-osue", "l-sue", "l-soue",
                                                   "lspl-lgrr", "lspl-losue", "lsmp-lgrr",
                                                   "lsmp-losue"))}


def _law(name, eps):
    ch = audit.get_channel(name, eps)
    ids = SMALL_POOL if ch.keyed else np.zeros(1, dtype=np.uint64)
    return ch.law(ch.build(ch.epsilon), ch.epsilon, ids)


# ----------------------------------------------------------------- exact audits at the edge
@pytest.mark.parametrize("name", EXACT)
@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0])
def test_exact_audit_holds_at_eps_and_fails_just_below(name, eps):
    law = _law(name, eps)
    at = audit_law(law, eps)
    assert at.holds, (name, at.epsilon_audited)
    below = audit_law(law, eps * (1 - 1e-9))
    if name in STRICTLY_INSIDE:
        # p-rs-grr: slot sampling dilutes GRR over p + k symbols; privkvm: round 1's value
        # bit of a non-holder is a fair coin (fake value 0): the channel is strictly inside
        # the: thresholding the Laplace-noised vector loses budget (a ratio below e^eps)
        claim = audit.get_channel(name, eps).epsilon
        at = audit_law(law, claim)
        assert at.holds and at.epsilon_audited < claim and audit_law(law, claim * (1 - 1e-9)).holds
    else:
        assert abs(at.epsilon_audited - eps) < 1e-13
        assert not below.holds, (name, below.epsilon_audited)


def test_exact_audit_is_rational_and_literal_without_slack():
    # a channel exactly at e^1 in rationals: 0.75 vs 0.25 is ln 3
    law = ExactLaw([0, 1], [0, 1], np.zeros(1, np.uint64), np.array([[[0.75, 0.25], [0.25, 0.75]]]))
    res = audit_law(law, log(3), rtol=0, atol=0)
    assert res.ratio == Fraction(3)
    assert res.epsilon_audited == pytest.approx(log(3), abs=1e-15)
    # the float log(3) is 9e-17 above ln 3 = 1.09861228866810969139...: the literal
    # test, decided at 50 digits, sees that it holds; one ulp lower it must not
    assert res.holds
    assert not audit_law(law, np.nextafter(log(3), 0), rtol=0, atol=0).holds
    assert not audit_law(law, log(3) - 1e-15, rtol=0, atol=0).holds


def test_exact_audit_flags_impossible_outputs_and_non_channels():
    law = ExactLaw([0, 1], [0, 1], np.zeros(1, np.uint64), np.array([[[1.0, 0.0], [0.5, 0.5]]]))
    res = audit_law(law, 10.0)
    assert res.ratio == float("inf") and not res.holds
    leaky = ExactLaw([0, 1], [0, 1], np.zeros(1, np.uint64), np.array([[[0.6, 0.5], [0.5, 0.5]]]))
    assert not audit_law(leaky, 1.0).holds   # rows must sum to 1
    with pytest.raises(ValueError):
        audit_law(ExactLaw([0], [0], np.zeros(1, np.uint64), np.ones((1, 1, 1))), 1.0)


# ----------------------------------------------------------------- laws against the mechanisms
@pytest.mark.parametrize("name", ["grr", "olh", "hr", "oue", "sue", "flh"])
def test_oracle_laws_match_the_oracles_own_channel(name):
    ch = audit.get_channel(name, 1.3)
    mech = ch.build(1.3)
    ids = np.array([0, 5, 77], dtype=np.uint64)
    law = ch.law(mech, 1.3, ids if ch.keyed else ids[:1])
    for j, ident in enumerate(law.identities):
        own = mech.channel(1.3, identity=int(ident))
        if name in ("oue", "sue"):
            # channel() columns are integers whose bit v is symbol v; ours are bit tuples
            cols = [sum(b << v for v, b in enumerate(t)) for t in law.outputs]
            own = own[:, cols]
        np.testing.assert_allclose(law.probs[j], own, rtol=1e-15, atol=0)


def test_jprs_law_is_the_paper_formula():
    # independent of the package's table: c_k from enumeration, tanh(eps/2)
    from _reference import naive_jprs_p_plus

    ch = audit.get_channel("jprs", 0.8)
    mech = ch.build(0.8)
    law = ch.law(mech, 0.8, np.array([3], dtype=np.uint64))
    for j, s in enumerate(law.inputs):
        pairs = [int(r * mech.shape[1] + c) for r, c in s]
        want = naive_jprs_p_plus(mech.codebook_seed, 3, pairs, 0.8, mech.k, mech.p)
        assert law.probs[0, j, 1] == pytest.approx(want, rel=1e-12)


def test_padded_law_rows_mix_the_oracle_over_slots():
    ch = audit.get_channel("p-rs-grr", 1.0)
    mech = ch.build(1.0)
    law = ch.law(mech, 1.0, np.zeros(1, np.uint64))
    base = laws.grr_law(mech.domain_size, 1.0).probs[0]
    empty = [j for j, s in enumerate(law.inputs) if s.shape[0] == 0][0]
    np.testing.assert_allclose(law.probs[0, empty], (base[mech.p] + base[mech.p + 1]) / 2)
    np.testing.assert_allclose(law.probs.sum(axis=2), 1.0, atol=1e-15)


# ----------------------------------------------------------------- empirical machinery
def test_clopper_pearson_covers_and_matches_known_values():
    lo, hi = clopper_pearson(0, 10, 0.05)
    assert lo == 0.0 and hi == pytest.approx(1 - 0.025 ** 0.1, abs=1e-12)
    lo, hi = clopper_pearson(10, 10, 0.05)
    assert hi == 1.0 and lo == pytest.approx(0.025 ** 0.1, abs=1e-12)
    rng = np.random.default_rng(5)
    p, n, misses = 0.3, 200, 0
    for _ in range(400):
        lo, hi = clopper_pearson(int(rng.binomial(n, p)), n, 0.05)
        misses += not (lo <= p <= hi)
    assert misses <= 400 * 0.05 + 3 * np.sqrt(400 * 0.05)   # conservative: coverage >= 95%


def test_lower_bounds_are_below_the_truth_and_tighten_with_n():
    eps = 1.0
    p, q = exp(eps) / (1 + exp(eps)), 1 / (1 + exp(eps))
    lb_small = epsilon_lower_bound(int(p * 1e4), 10_000, int(q * 1e4), 10_000)
    lb_big = epsilon_lower_bound(int(p * 1e6), 1_000_000, int(q * 1e6), 1_000_000)
    assert 0 < lb_small < lb_big < eps and lb_big > 0.95
    assert epsilon_lower_bound(10, 100, 50, 100) == 0.0
    # zCDP of Bern(p) vs Bern(q) is at most the binary divergence's sup; the bound is below it
    assert 0 < zcdp_lower_bound(int(p * 1e6), 1_000_000, int(q * 1e6), 1_000_000) < eps


# ----------------------------------------------------------------- every channel, every control
#: audited in tests/test_audit_regression.py with fewer fits (each draw is a whole fit)
END_TO_END = {"u2r-fit"}


@pytest.mark.parametrize("name", [n for n in audit.channels() if n not in END_TO_END])
def test_every_channel_passes(name):
    row = audit.audit_channel(audit.get_channel(name), n=40_000, rng=1, identities=SMALL_POOL
                              if audit.get_channel(name).keyed else None)
    assert row.holds, (name, row.exact, row.empirical)
    if row.exact is not None and row.empirical is not None:
        assert row.empirical.lower_bound <= row.exact.epsilon_audited + 1e-12


@pytest.mark.parametrize("name", [n for n, c in audit.negative_controls().items()
                                  if c.control_of not in END_TO_END])
def test_every_negative_control_is_caught(name):
    ch = audit.negative_controls()[name]
    row = audit.audit_channel(ch, n=40_000, rng=2, identities=SMALL_POOL if ch.keyed else None)
    assert row.expect_violation and not row.holds and row.as_expected, name
    if name.endswith("-sampler") and row.exact is not None:
        assert row.exact.holds          # the law is honest: only the sampler check catches it
        assert not row.empirical.holds


def test_registry_covers_every_randomizer_family():
    names = set(audit.channels())
    assert {"grr", "olh", "flh", "hr", "oue", "sue", "jprs", "p-rs-grr", "p-rs-olh", "p-rs-hr",
            "duchi", "rpc-duchi", "laplace", "piecewise", "rpc-laplace", "rpc-piecewise",
            "histogram-zcdp", "pckv-ue", "pckv-grr", "privkvm", "privkvm-rounds", "collision",
            "succinct-duchi", "succinct-laplace", "succinct-piecewise", "shuffled-sum",
            "shuffled-bits", "ldp-iht-laplace", "2slr-krr", "2slr-laplace", "u2r-fit"} <= names
    from fastldp.oracles import FREQUENCY_ORACLES
    assert {n for n in FREQUENCY_ORACLES} <= names


def test_audit_is_reproducible():
    a = audit.audit_channel(audit.get_channel("laplace"), n=20_000, rng=7)
    b = audit.audit_channel(audit.get_channel("laplace"), n=20_000, rng=7)
    assert a.empirical == b.empirical


# ----------------------------------------------------------------- the CLI
def test_cli_audit_prints_the_table_and_exits_zero(capsys):
    assert cli.main(["audit", "grr", "duchi", "laplace", "--n", "20000"]) == 0
    out = capsys.readouterr().out
    assert "mechanism" in out and "verdict" in out
    for name in ("grr", "duchi", "laplace"):
        line = next(ln for ln in out.splitlines() if ln.startswith(name + " "))
        assert line.split()[-2] == "pass"


def test_cli_audit_exits_nonzero_on_a_violation(capsys, monkeypatch):
    from fastldp.audit import registry

    real = registry.channels

    def with_a_leak(epsilon=1.0):
        reg = real(epsilon)
        reg["grr"] = audit.negative_controls(epsilon)["control:grr-sampler"]
        reg["grr"] = type(reg["grr"])(**{**reg["grr"].__dict__, "name": "grr",
                                         "expect_violation": False})
        return reg

    monkeypatch.setattr(registry, "channels", with_a_leak)
    assert cli.main(["audit", "grr", "--n", "20000"]) == 1
    captured = capsys.readouterr()
    assert "VIOLATION" in captured.out and "privacy audit failed: grr" in captured.err


def test_cli_audit_controls_are_reported_caught(capsys):
    assert cli.main(["audit", "duchi", "laplace", "--controls", "--n", "20000"]) == 0
    out = capsys.readouterr().out
    rows = [ln for ln in out.splitlines() if ln.startswith("control:")]
    # only the controls of the mechanisms named
    assert {ln.split()[0] for ln in rows} == {"control:duchi@1.5eps", "control:laplace@1.5eps",
                                              "control:laplace-half-scale"}
    assert all(ln.split()[-2] == "caught" for ln in rows)


def test_cli_audit_unknown_mechanism_is_an_error(capsys):
    assert cli.main(["audit", "nope"]) == 2
    assert "Unknown mechanism" in capsys.readouterr().err
