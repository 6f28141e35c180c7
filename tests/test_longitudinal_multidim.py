"""LSPL and LSMP: multi-attribute records over time on the memoized oracles (issue 36, item 1)."""

import numpy as np
import pytest

from fastldp.audit import audit_channel
from fastldp.longitudinal import LGRR, LOSUE, LSMP, LSPL, MemoryMemo
from fastldp.longitudinal.multidim import LONGITUDINAL_ORACLES

ORACLES = sorted(LONGITUDINAL_ORACLES)


def _true_counts(x, sizes):
    return np.concatenate([np.bincount(x[:, j], minlength=k) for j, k in enumerate(sizes)])


@pytest.mark.parametrize("cls", [LSPL, LSMP])
def test_channels_hold_exactly_and_the_memo_skipped_controls_are_caught(cls):
    # the exact laws of one report (claim epsilon_1) and of two reports of one record through
    # one memo (claim epsilon_inf) on 2 x 3 records; the sampler is checked against them
    rows = {ch.name: audit_channel(ch, n=20_000) for ch in cls.channels(1.0)}
    prefix = cls.__name__.lower()
    assert set(rows) == {f"{prefix}-lgrr", f"{prefix}-lgrr-rounds", f"{prefix}-losue",
                         f"{prefix}-losue-rounds", f"control:{prefix}-lgrr-memo-skipped"}
    for name, row in rows.items():
        assert row.holds is (not name.startswith("control:")), name
    # one report is calibrated at the edge: its exact epsilon is the claim
    assert rows[f"{prefix}-lgrr"].exact.epsilon_audited == pytest.approx(1.0, abs=1e-9)


def test_lspl_decodes_each_attribute_as_its_memoized_oracle_would():
    # naive twin: attribute j's column is a report of LGRR(k_j, eps_inf / A, eps_1 / A)
    lspl = LSPL(domain_sizes=[3, 5], epsilon_inf=4.0, epsilon_1=2.0, codebook_seed=7)
    x = lspl.example_data(3_000, np.random.default_rng(0))
    reports = lspl.privatize(x, rng=1)
    est = lspl.estimate(reports)
    for j, k in enumerate(lspl.domain_sizes):
        twin = LGRR(domain_size=k, epsilon_inf=2.0, epsilon_1=1.0,
                    codebook_seed=lspl.attribute_seed(j)).estimate(reports[:, j])
        np.testing.assert_array_equal(est.attribute(j), twin.counts)
        sl = slice(int(lspl.offsets[j]), int(lspl.offsets[j + 1]))
        np.testing.assert_array_equal(est.variances[sl], twin.variances)


def test_lsmp_decodes_each_attribute_from_its_reports_scaled_by_n_over_m():
    lsmp = LSMP(domain_sizes=[4, 3], epsilon_inf=3.0, epsilon_1=1.0, oracle="LOSUE",
                codebook_seed=3)
    x = lsmp.example_data(2_000, np.random.default_rng(1))
    reports = lsmp.privatize(x, rng=2)
    est = lsmp.estimate(reports)
    n = x.shape[0]
    for j, k in enumerate(lsmp.domain_sizes):
        mine = reports[:, 0] == j
        twin = LOSUE(domain_size=k, epsilon_inf=3.0, epsilon_1=1.0, codebook_seed=0)
        hits = np.unpackbits(reports[mine, 2:2 + (k + 7) // 8], axis=1,
                             bitorder="little")[:, :k].sum(axis=0)
        m = int(mine.sum())
        naive = (hits - m * twin.Q) / (twin.P - twin.Q) * n / m
        np.testing.assert_allclose(est.attribute(j), naive, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("cls", [LSPL, LSMP])
@pytest.mark.parametrize("oracle", ["LGRR", "LOSUE"])
def test_estimates_are_unbiased_with_the_stated_variance(cls, oracle):
    # 200 independent collections of the same records: the mean of each count is within
    # 4.5 standard errors of the truth, and the mean plug-in variance matches the spread
    # (the ratio of an empirical variance of 200 draws has sd ~ sqrt(2 / 199) = 0.1)
    mech = cls(domain_sizes=[3, 4], epsilon_inf=4.0, epsilon_1=2.0, oracle=oracle,
               codebook_seed=11)
    x = mech.example_data(600, np.random.default_rng(5))
    truth = _true_counts(x, mech.domain_sizes)
    seeds = np.random.SeedSequence(9).spawn(200)
    draws = [mech.estimate(mech.privatize(x, memo=MemoryMemo(), rng=np.random.default_rng(s)))
             for s in seeds]
    counts = np.array([d.counts for d in draws])
    stated = np.array([d.variances for d in draws]).mean(axis=0)
    se = np.sqrt(stated / len(draws))
    assert np.all(np.abs(counts.mean(axis=0) - truth) < 4.5 * se)
    ratio = counts.var(axis=0, ddof=1) / stated
    assert np.all((ratio > 0.6) & (ratio < 1.45)), ratio


def test_the_memo_keeps_permanent_responses_and_lsmp_keeps_its_attribute():
    lsmp = LSMP(domain_sizes=[3, 4, 5], epsilon_inf=4.0, epsilon_1=1.0, codebook_seed=0)
    x = lsmp.example_data(500, np.random.default_rng(0))
    memo = MemoryMemo()
    days = [lsmp.privatize(x, memo=memo, rng=day) for day in range(3)]
    # the same attribute every day (multi-freq-ldpy draws a new one each round)
    assert all((d[:, 0] == days[0][:, 0]).all() for d in days)
    assert len(memo) == 500 + 500  # one attribute draw and one permanent response each
    lspl = LSPL(domain_sizes=[3, 4, 5], epsilon_inf=6.0, epsilon_1=3.0, codebook_seed=0)
    memo = MemoryMemo()
    lspl.privatize(x, memo=memo, rng=0)
    assert len(memo) == 1_500
    changed = x.copy()
    changed[:10, 1] = (changed[:10, 1] + 1) % 4  # 10 users change attribute 1: 10 new keys
    lspl.privatize(changed, memo=memo, rng=1)
    assert len(memo) == 1_510
    # the permanent responses of attribute j are its oracle's, under its own scope
    perm, found = lspl.oracles[0].permanent_responses(x[:, 0], memo=memo)
    assert not found.any()  # scoped by attribute: the bare oracle's scope holds nothing


def test_permanent_responses_are_reused_so_reports_of_an_unchanged_record_agree_more():
    # with the instantaneous round at p2, two reports of one LGRR attribute agree more often
    # than two reports with fresh permanent responses: P(agree | memo) = sum_b P1(b) P2 agree
    lspl = LSPL(domain_sizes=[4], epsilon_inf=4.0, epsilon_1=3.0, codebook_seed=0)
    o = lspl.oracles[0]
    x = np.zeros((40_000, 1), dtype=np.int64)
    memo = MemoryMemo()
    a, b = (lspl.privatize(x, memo=memo, rng=s)[:, 0] for s in (1, 2))
    agree_memo = o.p2**2 + 3 * o.q2**2  # both reports from one permanent symbol
    assert abs((a == b).mean() - agree_memo) < 4 * np.sqrt(agree_memo * (1 - agree_memo) / 4e4)
    fresh = [lspl.privatize(x, memo=MemoryMemo(), rng=s)[:, 0] for s in (3, 4)]
    P, Q = o.P, o.Q
    agree_fresh = P**2 + 3 * Q**2
    assert abs((fresh[0] == fresh[1]).mean() - agree_fresh) < 4 * np.sqrt(
        agree_fresh * (1 - agree_fresh) / 4e4)
    assert agree_memo > agree_fresh + 0.07  # 0.842 against 0.763


@pytest.mark.parametrize("cls", [LSPL, LSMP])
@pytest.mark.parametrize("oracle", ORACLES)
def test_partials_merge_bit_for_bit(cls, oracle):
    mech = cls(domain_sizes=[3, 9], epsilon_inf=6.0, epsilon_1=1.0, oracle=oracle,
               codebook_seed=2)
    x = mech.example_data(1_000, np.random.default_rng(0))
    reports = mech.privatize(x, rng=0)
    whole = mech.estimate(reports)
    ids = np.arange(1_000)
    merged = mech.merge(mech.partial(reports[600:], identities=ids[600:]),
                        mech.partial(reports[:600]))
    got = mech.finalize(merged)
    np.testing.assert_array_equal(got.counts, whole.counts)
    np.testing.assert_array_equal(got.variances, whole.variances)
    assert got.n == 1_000


@pytest.mark.parametrize("cls", [LSPL, LSMP])
def test_malformed_parts_are_replaced_and_counted(cls):
    mech = cls(domain_sizes=[3, 4], epsilon_inf=4.0, epsilon_1=2.0, codebook_seed=5)
    x = mech.example_data(100, np.random.default_rng(0))
    reports = mech.privatize(x, rng=0).astype(np.float64)
    reports[0, -1] = 99.0      # a symbol out of range
    reports[1, -1] = 0.5       # not an integer
    reports[2, -1] = np.nan    # not an integer
    est = mech.estimate(reports)
    s = est.sanitization
    assert (s.n_received, s.n_valid) == (100, 97)
    assert s.by_reason["out_of_range"] == 1 and s.by_reason["non_integer"] == 2
    assert s.wrong_dtype
    # the replacement is public and deterministic: decoding twice gives the same counts
    np.testing.assert_array_equal(mech.estimate(reports).counts, est.counts)


@pytest.mark.parametrize("cls", [LSPL, LSMP])
@pytest.mark.parametrize("oracle", ["LGRR", "LOSUE"])
def test_default_identities_key_the_replacements_as_zero_to_n(cls, oracle):
    # without identities a batch with nothing to replace never builds them; one with a bad
    # part replaces it keyed by 0 .. n-1, exactly as when those identities are passed
    mech = cls(domain_sizes=[3, 4], epsilon_inf=4.0, epsilon_1=2.0, oracle=oracle,
               codebook_seed=5)
    reports = mech.privatize(mech.example_data(200, np.random.default_rng(0)), rng=0,
                             memo=MemoryMemo())
    clean = mech.estimate(reports)
    assert clean.sanitization.n_valid == 200
    bad = reports.copy()
    bad[7, 0] = 250 if bad.dtype == np.uint8 else 99
    by_default = mech.finalize(mech.partial(bad))
    given = mech.finalize(mech.partial(bad, identities=np.arange(200)))
    np.testing.assert_array_equal(by_default.counts, given.counts)
    assert by_default.sanitization == given.sanitization
    assert by_default.sanitization.n_valid == 199


def test_lsmp_report_naming_no_attribute_is_redrawn_and_counted():
    lsmp = LSMP(domain_sizes=[3, 4], epsilon_inf=4.0, epsilon_1=2.0, codebook_seed=5)
    reports = lsmp.privatize(lsmp.example_data(50, np.random.default_rng(0)), rng=0)
    reports[3, 0] = 7
    est = lsmp.estimate(reports)
    assert est.sanitization.n_valid == 49 and est.sanitization.by_reason["out_of_range"] == 1
    assert est.n == 50


def test_privacy_statement_and_budget_errors():
    lspl = LSPL(domain_sizes=[3, 4], epsilon_inf=4.0, epsilon_1=1.0, oracle="LOSUE",
                codebook_seed=0)
    statement = lspl.privacy()
    assert (statement.epsilon, statement.epsilon_inf) == (1.0, 4.0)
    assert statement.over_time(n_values=2) == 8.0
    assert [o.epsilon_inf for o in lspl.oracles] == [2.0, 2.0]
    assert [o.epsilon_1 for o in lspl.oracles] == [0.5, 0.5]
    lsmp = LSMP(domain_sizes=[3, 4], epsilon_inf=4.0, epsilon_1=1.0, codebook_seed=0)
    assert [o.epsilon_inf for o in lsmp.oracles] == [4.0, 4.0]
    with pytest.raises(ValueError, match=r"'oracle' parameter of LSPL.*LGRR.*Got 'GRR'"):
        LSPL(domain_sizes=[3], epsilon_inf=2.0, epsilon_1=1.0, oracle="GRR")
    # L-OUE's second round cannot reach epsilon_1 / A close to epsilon_inf / A
    with pytest.raises(ValueError, match=r"'epsilon_1' parameter of LSPL.*LOUE.*Got 1\.9"):
        LSPL(domain_sizes=[3, 4], epsilon_inf=2.0, epsilon_1=1.9, oracle="LOUE")
    with pytest.raises(ValueError, match=r"'records' parameter of LSPL.privatize.*row 1, "
                                         r"attribute 1"):
        lspl.privatize(np.array([[0, 0], [1, 4]]))
    with pytest.raises(ValueError, match=r"'reports' parameter of LSPL.partial.*shape \(n, 2\)"):
        LSPL(domain_sizes=[3, 4], epsilon_inf=4.0, epsilon_1=1.0).estimate(np.zeros((2, 3)))
    with pytest.raises(ValueError, match="'partial' parameter of LSPL.merge"):
        other = LSPL(domain_sizes=[3, 4], epsilon_inf=4.0, epsilon_1=2.0, oracle="LOSUE",
                     codebook_seed=0)
        lspl.merge(lspl.partial(lspl.privatize(np.zeros((2, 2), dtype=int), rng=0)),
                   other.partial(other.privatize(np.zeros((2, 2), dtype=int), rng=0)))


@pytest.mark.parametrize("oracle", ["LOSUE", "LSUE"])
def test_lspl_fast_unpacking_equals_the_attribute_by_attribute_decode(oracle):
    # uint8 reports take the one-unpacking path; the same reports as int64 (not the schema's
    # dtype: read as integers, attribute by attribute) take the per-attribute loop: the same hits, and a padding bit set
    # in the uint8 batch falls back to the loop, which replaces and counts it
    lspl = LSPL(domain_sizes=[3, 11, 2], epsilon_inf=4.0, epsilon_1=2.0, oracle=oracle,
                codebook_seed=4)
    reports = lspl.privatize(lspl.example_data(2_000, np.random.default_rng(0)), rng=1)
    fast = lspl.estimate(reports)
    slow = lspl.estimate(reports.astype(np.int64))
    np.testing.assert_array_equal(fast.counts, slow.counts)
    bad = reports.copy()
    bad[5, 2] |= 0x80  # attribute 1 (11 values, bytes 1-2): byte 2's bits 3-7 are padding
    assert lspl.estimate(bad).sanitization.by_reason["out_of_range"] == 1


@pytest.mark.parametrize("cls,oracle", [(LSPL, "LOSUE"), (LSMP, "LGRR")])
def test_report_files_round_trip_and_rebuild_from_the_spec(cls, oracle, tmp_path):
    from fastldp.protocol import resolve_class
    from fastldp.reports import decode_files, write_reports

    mech = cls(domain_sizes=[3, 11, 2], epsilon_inf=4.0, epsilon_1=2.0, oracle=oracle,
               codebook_seed=6)
    reports = mech.privatize(mech.example_data(1_000, np.random.default_rng(0)), rng=1)
    whole = mech.estimate(reports)
    path = write_reports(tmp_path / "r.parquet", mech, reports, row_group_size=256)
    offline = decode_files(mech, [path])
    np.testing.assert_array_equal(offline.counts, whole.counts)
    assert offline.n == 1_000
    spec = mech.spec()
    again = resolve_class(spec["mechanism"])(**spec["params"])
    np.testing.assert_array_equal(again.estimate(reports).counts, whole.counts)
