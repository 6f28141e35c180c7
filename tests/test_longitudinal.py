"""The memoized two-round oracles of fastldp.longitudinal.

Parameters against the paper's formulas (written out here) and against
multi-freq-ldpy; exact channel laws enumerated in rational arithmetic on a
tiny domain (largest ratio e^epsilon_1 for one report, e^epsilon_inf for the
permanent response and for any number of reports of one value); the sampler
against the law; unbiasedness and the variance formula by simulation;
partial / merge bit-identity; report files; sanitization; bad inputs.
"""

from __future__ import annotations

import importlib
import itertools
import math
from fractions import Fraction

import numpy as np
import pytest

from _merging import merge_in_order
from fastldp.longitudinal import (LGRR, LOSUE, LOUE, LSOUE, LSUE, LongitudinalPrivacy,
                                  MemoryMemo, epsilon_1_limit)

PROTOCOLS = (LGRR, LOUE, LOSUE, LSUE, LSOUE)
UNARY = (LOUE, LOSUE, LSUE, LSOUE)
SHAPES = {LOUE: ("oue", "oue"), LOSUE: ("oue", "sue"), LSUE: ("sue", "sue"),
          LSOUE: ("sue", "oue")}
GRID = [(ei, ei * f) for ei in (0.5, 1.0, 2.0, 4.0, 8.0) for f in (0.1, 0.3, 0.5, 0.7, 0.9)]


def _feasible(cls, ei, e1):
    return cls is LGRR or e1 < epsilon_1_limit(*SHAPES[cls], ei)


# ------------------------------------------------------------------ parameters
def _paper_first_round(shape, ei):
    # OUE: p = 1/2, q = 1 / (e^eps + 1); SUE: p = e^(eps/2) / (e^(eps/2) + 1), q = 1 - p
    if shape == "oue":
        return 0.5, 1.0 / (math.exp(ei) + 1.0)
    h = math.exp(ei / 2)
    return h / (h + 1), 1 / (h + 1)


def _unary_ratio(p1, q1, p2, q2):
    P, Q = p1 * p2 + (1 - p1) * q2, q1 * p2 + (1 - q1) * q2
    return P * (1 - Q) / (Q * (1 - P))


@pytest.mark.parametrize("cls", UNARY)
def test_unary_parameters_follow_the_paper(cls):
    # the paper's first round is the one-shot oracle at epsilon_inf, its second round fixes
    # p2 = 1/2 (OUE-like) or q2 = 1 - p2 (SUE-like) and solves "one report is e^eps_1-LDP":
    # P (1 - Q) / (Q (1 - P)) = e^eps_1 with P = p1 p2 + (1 - p1) q2, Q = q1 p2 + (1 - q1) q2
    for ei, e1 in GRID:
        if not _feasible(cls, ei, e1):
            continue
        m = cls(domain_size=6, epsilon_inf=ei, epsilon_1=e1, codebook_seed=0)
        first, second = SHAPES[cls]
        assert (m.p1, m.q1) == pytest.approx(_paper_first_round(first, ei), rel=1e-15)
        if second == "oue":
            assert m.p2 == 0.5 and 0 < m.q2 < 0.5
        else:
            assert m.q2 == pytest.approx(1 - m.p2, abs=1e-16) and 0.5 < m.p2 < 1
        assert math.log(_unary_ratio(m.p1, m.q1, m.p2, m.q2)) == pytest.approx(e1, rel=1e-12)


def test_lgrr_parameters_exact_and_paper():
    for D in (2, 3, 6):
        for ei, e1 in GRID:
            exact = LGRR(domain_size=D, epsilon_inf=ei, epsilon_1=e1, codebook_seed=0)
            paper = LGRR(domain_size=D, epsilon_inf=ei, epsilon_1=e1, codebook_seed=0,
                         calibration="paper")
            E = math.exp(e1)
            p1 = math.exp(ei) / (math.exp(ei) + D - 1)
            q1 = (1 - p1) / (D - 1)
            # the paper's section 4.1, as multi-freq-ldpy writes it
            p2 = (q1 - E * p1) / (-p1 * E + D * q1 * E - q1 * E - p1 * (D - 1) + q1)
            q2 = (1 - p2) / (D - 1)
            assert (paper.p1, paper.q1, paper.p2, paper.q2) == pytest.approx(
                (p1, q1, p2, q2), rel=1e-12)
            assert (exact.p1, exact.q1) == pytest.approx((p1, q1), rel=1e-15)
            # the paper's p2 solves the binary two-round equation ...
            assert (p1 * p2 + q1 * q2) / (p1 * q2 + q1 * p2) == pytest.approx(E, rel=1e-12)
            # ... while one L-GRR report is GRR with (P, Q): its largest ratio is P / Q
            assert math.log(exact.P / exact.Q) == pytest.approx(e1, rel=1e-12)
            truth = math.log(paper.P / paper.Q)
            if D == 2:
                assert truth == pytest.approx(e1, rel=1e-12)
                assert exact.p2 == pytest.approx(paper.p2, rel=1e-12)
            else:  # the paper's calibration spends less than epsilon_1
                assert truth < e1 * (1 - 1e-6)
    worst = LGRR(domain_size=6, epsilon_inf=2.0, epsilon_1=1.0, calibration="paper")
    assert math.log(worst.P / worst.Q) == pytest.approx(0.8216037781911825, rel=1e-12)


def _peer_parameters(cls, D, ei, e1):
    """(p1, q1, p2, q2) of multi-freq-ldpy's aggregator, read from its call to MI_long."""
    name = {LGRR: "L_GRR", LOUE: "L_OUE", LOSUE: "L_OSUE", LSUE: "L_SUE", LSOUE: "L_SOUE"}[cls]
    module = importlib.import_module(f"multi_freq_ldpy.long_freq_est.{name}")
    seen = {}
    original = module.MI_long

    def spy(count_report, n, p1, q1, p2, q2):
        seen["params"] = (p1, q1, p2, q2)
        return np.full(D, 1.0 / D)

    module.MI_long = spy
    try:
        aggregate = getattr(module, f"{name}_Aggregator_MI")
        if cls is LGRR:
            aggregate([0, 1], D, ei, e1)
        else:
            aggregate([np.ones(D)], ei, e1)
    finally:
        module.MI_long = original
    return seen["params"]


@pytest.mark.parametrize("cls", PROTOCOLS)
def test_parameters_against_multi_freq_ldpy(cls):
    pytest.importorskip("multi_freq_ldpy")
    for ei, e1 in GRID:
        if not _feasible(cls, ei, e1):
            # the peer refuses the same budgets ("Probabilities are negative")
            with pytest.raises(ValueError):
                _peer_parameters(cls, 6, ei, e1)
            with pytest.raises(ValueError, match="'epsilon_1' parameter"):
                cls(domain_size=6, epsilon_inf=ei, epsilon_1=e1)
            continue
        kwargs = {"calibration": "paper"} if cls is LGRR else {}
        m = cls(domain_size=6, epsilon_inf=ei, epsilon_1=e1, codebook_seed=0, **kwargs)
        # the peer's closed forms carry 15-digit constants (sqrt(5)/2 = 1.11803398874989...)
        np.testing.assert_allclose([m.p1, m.q1, m.p2, m.q2], _peer_parameters(cls, 6, ei, e1),
                                   rtol=1e-9)


# ------------------------------------------------------------------ exact channels
def _F(x):
    return Fraction(float(x))


def _grr_matrix(D, p, q):
    return [[p if y == x else q for y in range(D)] for x in range(D)]


def _bit_matrix(D, p, q, onehot_inputs=True):
    """P[x][y] over the 2^D bit vectors y, for one-hot x (permanent round)."""
    vectors = list(itertools.product((0, 1), repeat=D))
    out = []
    for x in range(D):
        row = []
        for y in vectors:
            prob = Fraction(1)
            for v in range(D):
                on = p if v == x else q
                prob *= on if y[v] else 1 - on
            row.append(prob)
        out.append(row)
    return vectors, out


def _flip_matrix(vectors, p2, q2):
    """P[b][y]: every bit re-randomized: 1 stays 1 w.p. p2, 0 becomes 1 w.p. q2."""
    out = []
    for b in vectors:
        row = []
        for y in vectors:
            prob = Fraction(1)
            for bv, yv in zip(b, y):
                on = p2 if bv else q2
                prob *= on if yv else 1 - on
            row.append(prob)
        out.append(row)
    return out


def _channels(m, D):
    """(permanent law, instantaneous law) as Fraction matrices: P1[x][b], P2[b][y]."""
    p1, q1, p2, q2 = map(_F, (m.p1, m.q1, m.p2, m.q2))
    if isinstance(m, LGRR):
        return _grr_matrix(D, p1, q1), _grr_matrix(D, p2, q2)
    vectors, first = _bit_matrix(D, p1, q1)
    return first, _flip_matrix(vectors, p2, q2)


def _compose(first, second, rounds):
    """P[x][(y_1 .. y_rounds)] = sum_b P1[x][b] prod_t P2[b][y_t] (one permanent response)."""
    n_out = len(second[0])
    outs = list(itertools.product(range(n_out), repeat=rounds))
    law = []
    for row in first:
        law.append([sum(pb * math.prod(second[b][y] for y in ys) for b, pb in enumerate(row))
                    for ys in outs])
    return law


def _largest_ratio(law):
    return max(max(col) / min(col) for col in zip(*law))


@pytest.mark.parametrize("cls", PROTOCOLS)
def test_exact_laws_one_report_at_epsilon_1_any_number_at_epsilon_inf(cls):
    D = 3
    ei, e1 = 2.0, 1.0
    m = cls(domain_size=D, epsilon_inf=ei, epsilon_1=e1, codebook_seed=0)
    first, second = _channels(m, D)
    assert all(sum(row) == 1 for row in second) or all(
        abs(sum(row) - 1) < Fraction(1, 10**15) for row in second)
    # permanent round: the one-shot oracle at epsilon_inf (GRR: p/q; unary: p(1-q)/(q(1-p)))
    r_perm = _largest_ratio(first)
    assert math.log(r_perm) == pytest.approx(ei, rel=1e-12)
    # one report: exactly e^epsilon_1 at the edge (and so more than e^(epsilon_1 (1 - 1e-9)))
    r1 = _largest_ratio(_compose(first, second, 1))
    assert math.log(r1) == pytest.approx(e1, rel=1e-12)
    assert math.log(r1) > e1 * (1 - 1e-9)
    # two reports of one value from ONE permanent response: below e^epsilon_inf, above e^eps_1
    r2 = _largest_ratio(_compose(first, second, 2))
    assert e1 < math.log(r2) < ei
    # without the memo the two reports are independent one-report channels: e^(2 epsilon_1)
    one = _compose(first, second, 1)
    twice = [[a * b for a in row for b in row] for row in one]
    assert math.log(_largest_ratio(twice)) == pytest.approx(2 * e1, rel=1e-12)


def _sampled_frequencies(m, D, x, n, seed):
    reports = m.privatize(np.full(n, x), memo=MemoryMemo(), rng=seed)  # fresh keys: one each
    if isinstance(m, LGRR):
        return np.bincount(reports, minlength=D) / n
    bits = np.unpackbits(reports, axis=1, bitorder="little")[:, :D]
    codes = (bits.astype(np.int64) << np.arange(D)[::-1]).sum(axis=1)  # itertools order
    return np.bincount(codes, minlength=2 ** D) / n


@pytest.mark.parametrize("cls", PROTOCOLS)
def test_the_sampler_follows_the_composed_law(cls):
    D, n = 3, 60_000
    m = cls(domain_size=D, epsilon_inf=2.0, epsilon_1=1.0, codebook_seed=0)
    first, second = _channels(m, D)
    law = np.array(_compose(first, second, 1), dtype=np.float64)
    for x in (0, 2):
        freq = _sampled_frequencies(m, D, x, n, 100 + x)
        # chi-square with (outputs - 1) degrees of freedom; 1e-6 tail: a fixed seed, and a
        # sampler off by 0.01 in any probability exceeds it at this n
        expected = law[x] * n
        chi2 = float((((freq * n) - expected) ** 2 / expected).sum())
        dof = law.shape[1] - 1
        from scipy.stats import chi2 as chi2_dist
        assert chi2 < chi2_dist.isf(1e-6, dof), (x, chi2)


# ------------------------------------------------------------------ estimator
@pytest.mark.slow
@pytest.mark.parametrize("cls", PROTOCOLS)
def test_unbiased_and_the_variance_formula_by_simulation(cls):
    # R replications of n reports each (one round): the sample mean of each count estimate
    # is within 5 standard errors of the truth, and the sample variance within 2% of
    # Var = (n Q (1 - Q) + c (P (1 - P) - Q (1 - Q))) / (P - Q)^2: the sample variance's
    # relative sd is sqrt(2 / (R - 1)) = 0.58% at R = 60000, so 2% is 3.4 sd
    D, R = 4, 60_000
    truth = np.array([30, 18, 12, 0])
    n = int(truth.sum())
    m = cls(domain_size=D, epsilon_inf=2.0, epsilon_1=1.0, codebook_seed=0)
    values = np.tile(np.repeat(np.arange(D), truth), R)
    reports = m.privatize(values, memo=MemoryMemo(), rng=7)
    if cls is LGRR:
        hits = np.bincount(np.repeat(np.arange(R), n) * D + reports,
                           minlength=R * D).reshape(R, D)
    else:
        bits = np.unpackbits(reports, axis=1, bitorder="little")[:, :D]
        hits = bits.reshape(R, n, D).sum(axis=1, dtype=np.int64)
    # the library's estimate of replication 0 is this linear map of the hits, bit for bit
    first = m.estimate(reports[:n])
    counts = (hits - n * m.Q) / (m.P - m.Q)
    np.testing.assert_array_equal(first.counts, counts[0])
    var = m.count_variances(n, truth)
    assert np.all(np.abs(counts.mean(axis=0) - truth) <= 5 * np.sqrt(var / R))
    np.testing.assert_allclose(counts.var(axis=0, ddof=1), var, rtol=0.02)
    # at an unheld symbol the formula is the paper's approximate variance
    assert var[3] == pytest.approx(m.approximate_variance(n), rel=1e-14)


@pytest.mark.parametrize("cls", PROTOCOLS)
def test_estimate_is_the_closed_form_with_plug_in_variances(cls):
    m = cls(domain_size=10, epsilon_inf=3.0, epsilon_1=1.0, codebook_seed=2)
    values = np.arange(500) % 10
    reports = m.privatize(values, rng=1)
    est = m.estimate(reports)
    if cls is LGRR:
        hits = np.bincount(reports, minlength=10)
    else:
        hits = np.unpackbits(reports, axis=1, bitorder="little")[:, :10].sum(axis=0)
    np.testing.assert_array_equal(est.counts, (hits - 500 * m.Q) / (m.P - m.Q))
    c = np.clip(est.counts, 0, 500)
    np.testing.assert_allclose(
        est.variances, (500 * m.Q * (1 - m.Q) + c * (m.P * (1 - m.P) - m.Q * (1 - m.Q)))
        / (m.P - m.Q) ** 2, rtol=1e-13)
    assert est.n == 500 and est.sanitization.n_valid == 500
    assert isinstance(est.privacy, LongitudinalPrivacy)
    assert (est.privacy.epsilon, est.privacy.epsilon_inf) == (1.0, 3.0)
    assert est.privacy.over_time(n_values=3) == 9.0
    assert est.privacy.over_time(n_values=2, n_reports=5) == 5.0
    same = m.estimate(reports, epsilons=1.0)
    np.testing.assert_array_equal(same.counts, est.counts)


# ------------------------------------------------------------------ partials, files
def _garbled(cls, reports, rng):
    """Reports with a few malformed entries (of every reason)."""
    if cls is LGRR:
        out = reports.astype(object)
        out[3], out[10], out[20] = "x", 2.5, -4
        return out
    out = reports.astype(np.int64)
    out[3, 0], out[10, 0] = 300, -1
    out[20, -1] |= 0x80  # a padding bit (D = 13: bits 13..15 of the last byte)
    return out


@pytest.mark.parametrize("cls", PROTOCOLS)
@pytest.mark.parametrize("mode", ["sequential", "balanced", "random"])
def test_partials_merge_bit_identically_in_any_order(cls, mode):
    m = cls(domain_size=13, epsilon_inf=3.0, epsilon_1=1.0, codebook_seed=4)
    rng = np.random.default_rng(9)
    reports = _garbled(cls, m.privatize(rng.integers(0, 13, 400), rng=3), rng)
    ids = np.arange(400) * 3 + 1
    whole = m.estimate(reports, identities=ids)
    cuts = np.sort(rng.choice(np.arange(1, 400), 6, replace=False))
    bounds = [0, *cuts.tolist(), 400]
    parts = [m.partial(reports[a:b], identities=ids[a:b]) for a, b in zip(bounds, bounds[1:])]
    parts.append(m.partial(reports[:0], identities=ids[:0]))  # an empty chunk
    merged = m.finalize(merge_in_order(m, parts, mode, seed=5))
    np.testing.assert_array_equal(merged.counts, whole.counts)
    np.testing.assert_array_equal(merged.variances, whole.variances)
    assert merged.sanitization == whole.sanitization
    assert merged.sanitization.n_sanitized == 3


def test_partials_refuse_another_protocol_or_parameters():
    a = LOUE(domain_size=8, epsilon_inf=3.0, epsilon_1=1.0, codebook_seed=0)
    b = LOSUE(domain_size=8, epsilon_inf=3.0, epsilon_1=1.0, codebook_seed=0)
    c = LOUE(domain_size=8, epsilon_inf=3.0, epsilon_1=0.5, codebook_seed=0)
    part = a.partial(a.privatize([1, 2], rng=0))
    for other in (b, c):
        with pytest.raises(ValueError, match="holds reports of LOUE"):
            other.finalize(part)
        with pytest.raises(ValueError):
            other.merge(part, part)


@pytest.mark.parametrize("cls", [LGRR, LSUE])
def test_report_files_decode_bit_identically(cls, tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.reports import decode_files, write_reports

    m = cls(domain_size=9, epsilon_inf=2.5, epsilon_1=1.0, codebook_seed=8)
    reports = m.privatize(np.arange(300) % 9, rng=2)
    path = write_reports(tmp_path / "r.parquet", m, reports, row_group_size=64)
    again = type(m)(**m.stream_params())
    est = decode_files(again, path)
    np.testing.assert_array_equal(est.counts, m.estimate(reports).counts)
    other = cls(domain_size=9, epsilon_inf=2.5, epsilon_1=0.9, codebook_seed=8)
    with pytest.raises(ValueError):
        decode_files(other, path)
    if cls is LGRR:
        with pytest.raises(ValueError, match="integer"):
            write_reports(tmp_path / "f.parquet", m, reports.astype(float))


def test_sanitization_counts_by_reason_with_public_replacements():
    grr = LGRR(domain_size=5, epsilon_inf=2.0, epsilon_1=1.0, codebook_seed=3)
    clean = grr.privatize(np.arange(50) % 5, rng=0)
    bad = clean.astype(object)
    bad[[1, 2]] = None, "a"          # non_numeric
    bad[[5, 6, 7]] = 1.5, np.nan, np.inf  # non_integer
    bad[[9]] = 5                     # out_of_range
    est = grr.estimate(bad)
    s = est.sanitization
    assert (s.n_received, s.n_valid) == (50, 44)
    assert s.by_reason == {"non_numeric": 2, "non_integer": 3, "out_of_range": 1}
    # the replacements are public: keyed by (codebook seed, identity), not by the garbage
    other = bad.copy()
    other[[1, 2, 5, 6, 7, 9]] = "z", None, 0.25, -np.inf, np.nan, -7
    np.testing.assert_array_equal(grr.estimate(other).counts, est.counts)
    loue = LOUE(domain_size=10, epsilon_inf=2.0, epsilon_1=1.0, codebook_seed=3)
    rows = loue.privatize(np.arange(30) % 10, rng=0).astype(np.int64)
    rows[0, 0], rows[1, 1] = 256, -1
    rows[2, 1] |= 0x04  # a padding bit of D = 10
    s = loue.estimate(rows).sanitization
    assert (s.n_valid, s.by_reason["out_of_range"]) == (27, 3)
    with pytest.raises(ValueError, match="'reports' parameter"):
        loue.estimate(rows[:, :1])


# ------------------------------------------------------------------ inputs
def test_bad_parameters_name_the_parameter():
    def make(**kw):
        base = {"domain_size": 5, "epsilon_inf": 2.0, "epsilon_1": 1.0, "codebook_seed": 0}
        base.update(kw)
        return LGRR(**{k: v for k, v in base.items() if v is not Ellipsis})

    for kw, match in [
        ({"epsilon_1": 2.0}, r"'epsilon_1' parameter of LGRR must be a float in \(0.0, 2.0\)"),
        ({"epsilon_1": 3.0}, "'epsilon_1'"), ({"epsilon_1": float("nan")}, "'epsilon_1'"),
        ({"epsilon_1": -1.0}, "'epsilon_1'"), ({"epsilon_inf": float("inf")}, "'epsilon_inf'"),
        ({"epsilon_inf": float("nan")}, "'epsilon_inf'"), ({"epsilon_inf": 0.0}, "'epsilon_inf'"),
        ({"domain_size": 1}, "'domain_size'"), ({"calibration": "fast"}, "'calibration'"),
        ({"epsilon": 1.0}, "another name for 'epsilon_1'"),
    ]:
        with pytest.raises(ValueError, match=match):
            make(**kw)
    with pytest.raises(TypeError, match="'epsilon'"):
        make(epsilon_1=...)
    assert make(epsilon_1=..., epsilon=0.5).epsilon_1 == 0.5
    top = epsilon_1_limit("sue", "oue", 4.0)
    with pytest.raises(ValueError, match=f"'epsilon_1' parameter of LSOUE must be a float in "
                                         rf"\(0, {top!r}\)"):
        LSOUE(domain_size=5, epsilon_inf=4.0, epsilon_1=top * 1.0001)
    LSOUE(domain_size=5, epsilon_inf=4.0, epsilon_1=top * 0.999)
    with pytest.raises(TypeError, match="positional"):
        LGRR(5, 2.0, 1.0)  # type: ignore[misc]


def test_bad_call_arguments():
    m = LOUE(domain_size=5, epsilon_inf=2.0, epsilon_1=1.0, codebook_seed=0)
    with pytest.raises(ValueError, match="'values' parameter of LOUE.privatize"):
        m.privatize([0, 5])
    with pytest.raises(ValueError, match="'epsilons' parameter of LOUE.privatize"):
        m.privatize([0, 1], epsilons=2.0)
    with pytest.raises(ValueError, match="'epsilons' parameter of LOUE.estimate"):
        m.estimate(m.privatize([0, 1], rng=0), epsilons=[1.0, 0.5])
    with pytest.raises(TypeError, match="'memo' parameter"):
        m.privatize([0, 1], memo={})
    with pytest.raises(ValueError, match="'identities'"):
        m.privatize([0, 1], identities=[3, 3])
    assert m.privatize([0, 1], epsilons=1.0, rng=0).shape == (2, 1)


def test_repr_and_stream_params_rebuild():
    m = LGRR(domain_size=5, epsilon_inf=2.0, epsilon_1=1.0, codebook_seed=7, calibration="paper")
    assert repr(m) == ("LGRR(domain_size=5, epsilon_inf=2.0, epsilon_1=1.0, codebook_seed=7, "
                       "calibration='paper')")
    again = LGRR(**m.stream_params())
    assert (again.p2, again.q2) == (m.p2, m.q2)
    assert m.epsilon == 1.0 and m.privacy().epsilon_inf == 2.0


# ------------------------------------------------------------------ audit
@pytest.mark.parametrize("name", ["l-grr", "l-sue"])
def test_tau_reports_through_the_memo_hold_epsilon_inf_and_the_skipped_memo_is_caught(name):
    from fastldp.audit import get_channel, negative_controls
    from fastldp.audit.empirical import threshold_test
    from fastldp.longitudinal._channels import TAU, _tau_draw

    assert TAU == 10
    control = negative_controls(1.0)[f"control:{name}-memo-skipped"]
    mech = get_channel(f"{name}-rounds").build(1.0)  # honest: epsilon_inf = 1, epsilon_1 = 0.5

    def draw(side, size, gen):
        return _tau_draw(mech, 1.0, side, size, gen)

    kept = threshold_test(draw, 1.0, n=20_000, pilot=5_000, rng=3)
    assert kept.holds and kept.lower_bound < 1.0
    skipped = control.build(1.0)

    def draw_skipped(side, size, gen):
        return _tau_draw(skipped, 1.0, side, size, gen)

    caught = threshold_test(draw_skipped, 1.0, n=20_000, pilot=5_000, rng=3)
    assert not caught.holds and caught.lower_bound > 1.5


def test_fastldp_decode_rebuilds_the_protocol_from_a_report_file(tmp_path, capsys):
    pytest.importorskip("pyarrow")
    from fastldp import cli, mechanisms
    from fastldp.reports import write_reports

    assert {"LGRR", "LOUE", "LOSUE", "LSUE", "LSOUE"} <= set(mechanisms.STREAMING)
    m = LOSUE(domain_size=6, epsilon_inf=2.0, epsilon_1=1.0, codebook_seed=3)
    reports = m.privatize(np.arange(120) % 6, rng=0)
    path = write_reports(tmp_path / "r.parquet", m, reports)
    again = mechanisms.from_spec(mechanisms.mechanism_spec(m))
    np.testing.assert_array_equal(again.estimate(reports).counts, m.estimate(reports).counts)
    assert cli.main(["decode", str(path), "--quiet"]) == 0
    assert "LOSUE" in capsys.readouterr().out


@pytest.mark.parametrize("cls", UNARY)
def test_reports_do_not_depend_on_the_thread_count(cls):
    values = np.arange(3000) % 40
    out = []
    for threads in (1, 2):
        m = cls(domain_size=40, epsilon_inf=3.0, epsilon_1=1.0, codebook_seed=0,
                n_threads=threads)
        reports = m.privatize(values, memo=MemoryMemo(), rng=5)
        out.append((reports, m.estimate(reports).counts))
    np.testing.assert_array_equal(out[0][0], out[1][0])
    np.testing.assert_array_equal(out[0][1], out[1][1])
