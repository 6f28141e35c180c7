"""fastldp.multidim: SPL, SMP and RSpFD (issue 36, item 1).

Unbiasedness and the variance formulas by simulation (fixed seeds, tolerances
from the variances), the paper's estimators as a naive twin, the exact law
of every whole report (RSpFD's privacy claim checked exactly), and one class
(SPL over OLH, whose hashes are keyed by the identities) driven through
report files, ``fastldp decode``, exact merges, Dask, the collector and the
audit, as tests/test_protocol_everywhere.py drives its BinaryRR.
"""

from __future__ import annotations

import itertools
import math
import os
import subprocess
import sys

import numpy as np
import pytest

import fastldp
from fastldp import protocol
from fastldp.multidim import SMP, SPL, RSpFD, paper_budget
from fastldp.multidim._channels import MULTIDIM_DOMAIN, _law
from fastldp.protocol import StreamingMechanism

SIZES = (3, 5, 2)
CONFIGS = ([(SPL, "oracle", o) for o in ("GRR", "OUE", "SUE", "OLH")]
           + [(SMP, "oracle", o) for o in ("GRR", "OUE", "SUE", "OLH")]
           + [(RSpFD, "variant", v) for v in ("GRR", "OUE-zero", "OUE-random", "SUE-zero",
                                              "SUE-random")])
FAST = [(SPL, "oracle", "OUE"), (SPL, "oracle", "OLH"), (SMP, "oracle", "GRR"), (RSpFD, "variant", "GRR"),
        (RSpFD, "variant", "OUE-zero"), (RSpFD, "variant", "OUE-random")]


def _id(cfg):
    return f"{cfg[0].__name__}-{cfg[2]}"


def _build(cfg, eps=2.0, sizes=SIZES, seed=7):
    cls, key, choice = cfg
    return cls(domain_sizes=list(sizes), epsilon=eps, codebook_seed=seed, **{key: choice})


def _truth(mech, x):
    return np.concatenate([np.bincount(x[:, j], minlength=k)
                           for j, k in enumerate(mech.domain_sizes)])


def _simulate(cfg, n, reps, seed):
    """Estimates of one fixed population over ``reps`` independent privatizations.

    Each repetition has its own public seed: OLH is unbiased over its hashes,
    not for one fixed hash of every identity (fixed collisions bias it).
    """
    x = _build(cfg).example_data(n, np.random.default_rng(seed))
    mechs = [_build(cfg, seed=seed * 1_000 + r) for r in range(reps)]
    ests = [m.estimate(m.privatize(x, rng=seed * 1_000 + r)) for r, m in enumerate(mechs)]
    mech = mechs[0]
    counts = np.array([e.counts for e in ests])
    variances = np.array([e.variances for e in ests])
    return _truth(mech, x), counts, variances


def _check_unbiased_with_the_variance(truth, counts, variances, z=4.5, band=(0.6, 1.5)):
    reps = counts.shape[0]
    sigma2 = variances.mean(axis=0)
    # the mean of reps estimates: within z standard errors of the truth (every entry)
    assert np.all(np.abs(counts.mean(axis=0) - truth) <= z * np.sqrt(sigma2 / reps)), (
        (counts.mean(axis=0) - truth) / np.sqrt(sigma2 / reps))
    # the sample variance over the formula: chi2(reps - 1) / (reps - 1), sd sqrt(2 / reps)
    ratio = counts.var(axis=0, ddof=1) / sigma2
    assert np.all((ratio > band[0]) & (ratio < band[1])), ratio


@pytest.mark.parametrize("cfg", FAST, ids=_id)
def test_estimates_are_unbiased_with_the_stated_variance(cfg):
    truth, counts, variances = _simulate(cfg, n=2_000, reps=200, seed=11)
    # 200 reps: the variance ratio has sd 0.1; (0.6, 1.5) is 4 to 5 sd on each side
    _check_unbiased_with_the_variance(truth, counts, variances)


@pytest.mark.slow
@pytest.mark.parametrize("cfg", CONFIGS, ids=_id)
def test_estimates_are_unbiased_with_the_stated_variance_every_oracle(cfg):
    truth, counts, variances = _simulate(cfg, n=3_000, reps=1_000, seed=12)
    # 1,000 reps: sd of the ratio 0.045; (0.8, 1.22) is 4.4 sd or more on each side
    _check_unbiased_with_the_variance(truth, counts, variances, band=(0.8, 1.22))


# --------------------------------------------------------------------------- naive twin
def _paper_frequencies(variant, reports, sizes, eps):
    """RS+FD's estimators as the paper writes them, from a loop over the reports."""
    d, n = len(sizes), len(reports)
    out = []
    for j, k in enumerate(sizes):
        N = [0] * k
        for r in reports:
            if variant == "GRR":
                N[r[j]] += 1
            else:
                for v in range(k):
                    N[v] += r[j][v]
        e = math.exp(eps)
        if variant == "GRR":
            p, q = e / (e + k - 1), 1 / (e + k - 1)
            out += [(d * k * Nv - n * (d - 1 + q * k)) / (n * k * (p - q)) for Nv in N]
        elif variant == "OUE-zero":
            p, q = 0.5, 1 / (e + 1)
            out += [d * (Nv - n * q) / (n * (p - q)) for Nv in N]
        else:  # OUE-random
            p, q = 0.5, 1 / (e + 1)
            out += [(Nv * d * k - n * (q * k + (p + (k - 1) * q) * (d - 1))) / (n * k * (p - q))
                    for Nv in N]
    return np.array(out)


@pytest.mark.parametrize("variant", ["GRR", "OUE-zero", "OUE-random"])
def test_rspfd_counts_are_the_papers_estimators_times_n(variant):
    mech = RSpFD(domain_sizes=list(SIZES), epsilon=1.5, variant=variant, codebook_seed=3)
    x = mech.example_data(600, np.random.default_rng(4))
    reports = mech.privatize(x, rng=5)
    if variant == "GRR":
        rows = [tuple(int(v) for v in r) for r in reports]
    else:  # unpack each attribute's bits: a list of bit lists per report
        bits = np.unpackbits(reports, axis=1, bitorder="little")
        rows, starts = [], np.cumsum([0] + [8 * ((k + 7) // 8) for k in SIZES])
        for b in bits:
            rows.append([b[starts[j]:starts[j] + k].tolist() for j, k in enumerate(SIZES)])
    naive = _paper_frequencies(variant, rows, SIZES, 1.5)
    np.testing.assert_allclose(mech.estimate(reports).counts / 600, naive, rtol=1e-12,
                               atol=1e-12)


def test_spl_is_the_oracles_estimate_at_epsilon_over_a():
    """SPL over GRR decodes each attribute as fastldp.GRR at epsilon / A would."""
    spl = SPL(domain_sizes=list(SIZES), epsilon=3.0, oracle="GRR", codebook_seed=1)
    x = spl.example_data(700, np.random.default_rng(2))
    reports = spl.privatize(x, rng=3)
    est = spl.estimate(reports)
    for j, k in enumerate(SIZES):
        grr = fastldp.GRR(domain_size=k, epsilon=1.0, codebook_seed=1)
        one = grr.estimate(reports[:, j])
        np.testing.assert_allclose(est.attribute(j), one.counts, rtol=1e-12, atol=1e-9)
        np.testing.assert_allclose(est.variances[spl.offsets[j]:spl.offsets[j + 1]],
                                   one.variances, rtol=1e-12)


# --------------------------------------------------------------------------- exact laws
def _max_log_ratio(probs, inputs, differing=None):
    best = -np.inf
    X = np.array(inputs)
    for a, b in itertools.permutations(range(len(X)), 2):
        if differing is not None and int((X[a] != X[b]).sum()) != differing:
            continue
        best = max(best, float(np.log(probs[a] / probs[b]).max()))
    return best


@pytest.mark.parametrize("cls,key,choice", [(SPL, "oracle", "GRR"), (SPL, "oracle", "OUE"),
                                            (SMP, "oracle", "GRR"), (SMP, "oracle", "OUE"),
                                            (RSpFD, "variant", "GRR"),
                                            (RSpFD, "variant", "OUE-zero"),
                                            (RSpFD, "variant", "OUE-random")])
def test_the_whole_report_is_exactly_epsilon_ldp(cls, key, choice):
    from fastldp.audit import audit_law

    mech = cls(domain_sizes=list(MULTIDIM_DOMAIN), epsilon=1.0, codebook_seed=1, **{key: choice})
    law = _law(mech, 1.0, [0])
    np.testing.assert_allclose(law.probs.sum(axis=2), 1.0, rtol=1e-12)
    exact = audit_law(law, 1.0)
    assert exact.holds and abs(exact.epsilon_audited - 1.0) < 1e-9
    assert not audit_law(law, 1.0 - 1e-6).holds  # tight: e^eps is reached


@pytest.mark.parametrize("variant", ["GRR", "OUE-zero", "OUE-random"])
def test_the_papers_amplified_budget_is_not_epsilon_ldp_per_report(variant):
    """RS+FD at the paper's eps' = ln(A (e^eps - 1) + 1) claims eps; a whole report is eps'-LDP.

    Two records that differ in every attribute, and the report equal to the
    first: its probability under the two records has ratio e^{eps'}.
    """
    from fastldp.audit import audit_law

    eps = 1.0
    amplified = paper_budget(eps, 2)
    mech = RSpFD(domain_sizes=list(MULTIDIM_DOMAIN), epsilon=amplified, variant=variant,
                 codebook_seed=1)
    law = _law(mech, amplified, [0])
    assert not audit_law(law, eps).holds
    assert abs(audit_law(law, amplified).epsilon_audited - amplified) < 1e-9
    assert abs(_max_log_ratio(law.probs[0], law.inputs, differing=2) - amplified) < 1e-12


def test_records_differing_in_one_attribute_under_the_papers_budget():
    """Even neighbours in one attribute exceed eps, for GRR with unequal domains and for OUE-r.

    What the exact laws give at eps = 1, A = 2, domains (2, 3): RS+FD[GRR]
    1.0718, RS+FD[OUE-z] exactly 1, RS+FD[OUE-r] 1.0718; with equal domains
    (3, 3) GRR gives exactly 1 and OUE-r 1.1250.
    """
    eps = 1.0
    found = {}
    for sizes in [(2, 3), (3, 3)]:
        for variant in ("GRR", "OUE-zero", "OUE-random"):
            mech = RSpFD(domain_sizes=list(sizes), epsilon=paper_budget(eps, 2), variant=variant,
                         codebook_seed=1)
            law = _law(mech, None, [0])
            found[sizes, variant] = _max_log_ratio(law.probs[0], law.inputs, differing=1)
    assert abs(found[(2, 3), "OUE-zero"] - eps) < 1e-12
    assert abs(found[(3, 3), "GRR"] - eps) < 1e-12
    assert found[(2, 3), "GRR"] == pytest.approx(1.0718, abs=1e-4)
    assert found[(2, 3), "OUE-random"] == pytest.approx(1.0718, abs=1e-4)
    assert found[(3, 3), "OUE-random"] == pytest.approx(1.1250, abs=1e-4)


def test_every_channel_holds_and_every_control_is_caught():
    from fastldp.audit import audit_channel

    names = []
    for cls in (SPL, SMP, RSpFD):
        for ch in cls.channels(1.0):
            names.append(ch.name)
            row = audit_channel(ch, n=2_000 if not ch.expect_violation else 100_000)
            if ch.expect_violation:
                assert not row.holds, ch.name
            else:
                assert row.holds and row.exact.holds, ch.name
                assert abs(row.exact.epsilon_audited - 1.0) < 1e-9, ch.name
    assert names == ["spl-grr", "spl-oue", "spl-olh", "spl-auto", "control:spl-grr-sampler",
                     "smp-grr", "smp-oue", "smp-olh", "smp-auto", "rspfd-grr", "rspfd-oue-zero",
                     "rspfd-oue-random", "control:rspfd-grr-paper"]


def test_auto_channels_audit_the_mixed_report_layout():
    # at eps = 1 SPL's attributes of 2 and 9 values go through GRR and OUE (at eps / 2), and at
    # eps = 0.5 SMP's too: the exact law of the mixed report and its sampler's keys
    from fastldp.audit import audit_channel
    from fastldp.multidim._channels import AUTO_DOMAIN

    for cls, eps in ((SPL, 1.0), (SMP, 0.5)):
        ch = next(c for c in cls.channels(eps) if c.name.endswith("-auto"))
        assert ch.build(eps).chosen == ("GRR", "OUE") and AUTO_DOMAIN == (2, 9)
        row = audit_channel(ch, n=20_000)
        assert row.holds and abs(row.exact.epsilon_audited - eps) < 1e-9, ch.name


# --------------------------------------------------------------------------- the protocol
def _olh_case(n=3_000):
    spl = SPL(domain_sizes=[4, 6, 3], epsilon=3.0, oracle="OLH", codebook_seed=21)
    x = spl.example_data(n, np.random.default_rng(8))
    ids = np.arange(1_000, 1_000 + n, dtype=np.uint64) * 7  # not 0 .. n-1: they key the hashes
    return spl, x, ids, spl.privatize(x, identities=ids, rng=9)


def test_it_implements_the_protocol():
    spl = SPL(domain_sizes=[4, 6, 3], epsilon=3.0, oracle="OLH", codebook_seed=21)
    assert isinstance(spl, StreamingMechanism)
    protocol.check_mechanism(spl)
    for cls in (SPL, SMP, RSpFD):
        assert protocol.streaming_classes()[cls.__name__] is cls
        assert cls in protocol.audited_classes()
        assert getattr(fastldp, cls.__name__) is cls


def test_partials_merge_exactly_in_any_order():
    spl, x, ids, reports = _olh_case()
    whole = spl.estimate(reports, identities=ids)
    cuts = [0, 700, 701, 2_000, 3_000]
    parts = [spl.partial(reports[a:b], identities=ids[a:b]) for a, b in zip(cuts, cuts[1:])]
    for order in ([0, 1, 2, 3], [3, 1, 0, 2]):
        merged = parts[order[0]]
        for i in order[1:]:
            merged = spl.merge(merged, parts[i])
        got = spl.finalize(merged)
        assert np.array_equal(got.counts, whole.counts)
        assert np.array_equal(got.variances, whole.variances) and got.n == whole.n
    # the wrong identities give other counts (they key the hashes)
    assert not np.array_equal(spl.estimate(reports).counts, whole.counts)


def test_report_files_and_fastldp_decode(tmp_path):
    from fastldp.reports import ReportFile, decode_files, load_result, write_reports

    spl, _, ids, reports = _olh_case()
    path = write_reports(tmp_path / "spl.parquet", spl, reports, identities=ids,
                         row_group_size=500)
    assert ReportFile(path).spec == spl.spec()
    whole = spl.estimate(reports, identities=ids)
    offline = decode_files(spl, [path])
    assert np.array_equal(offline.counts, whole.counts) and offline.n == whole.n
    out = tmp_path / "r.npz"
    proc = subprocess.run([sys.executable, "-m", "fastldp", "decode", str(path), "--out",
                           str(out), "--quiet"], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr
    assert np.array_equal(np.asarray(load_result(out).counts), whole.counts)


def test_dask_merges_its_partials(tmp_path):
    distributed = pytest.importorskip("distributed")
    from fastldp import distributed as fd
    from fastldp.reports import write_reports

    spl, _, ids, reports = _olh_case()
    paths = [write_reports(tmp_path / f"part{i}.parquet", spl, reports[s], identities=ids[s],
                           row_group_size=400)
             for i, s in enumerate([slice(0, 1_200), slice(1_200, 3_000)])]
    with distributed.Client(processes=False, n_workers=1, threads_per_worker=2,
                            dashboard_address=None) as client:
        result = fd.estimate(spl, [str(p) for p in paths], client=client)
    assert np.array_equal(result.counts, spl.estimate(reports, identities=ids).counts)


COLLECTED = {
    "SPL-OLH": (lambda: SPL(domain_sizes=[4, 6, 3], epsilon=3.0, oracle="OLH", codebook_seed=21),
                [3], "int64"),
    "SMP-OUE": (lambda: SMP(domain_sizes=[4, 12, 3], epsilon=2.0, oracle="OUE",
                            codebook_seed=22), [4], "uint8"),
    "SampledMean": (lambda: fastldp.SampledMean(dimension=4, epsilon=5.0, k=2), [4], "float64"),
}


@pytest.mark.parametrize("case", sorted(COLLECTED))
def test_a_collector_serves_it_and_decodes_it_live(tmp_path, case):
    pytest.importorskip("starlette")
    import httpx

    from fastldp.reports import decode_files
    from fastldp.service.client import Client
    from fastldp.service.testing import running_server

    build, shape, dtype = COLLECTED[case]
    mech = build()
    x = mech.example_data(2_000, np.random.default_rng(8))
    with running_server(tmp_path, mechanism=mech.spec(), publish_every=1) as srv:
        info = httpx.get(srv.url + "/v1/mechanism").json()
        assert info["spec"] == mech.spec() and info["kind"] == mech.kind
        assert info["report_shape"] == shape and info["report_dtype"] == dtype
        with Client(srv.url, srv.token) as client:
            done = client.send(x, identities=np.arange(2_000), rng=5, batch_size=500)
            assert done["accepted"] == 2_000
            live = client.estimate()
        srv.stop()
        offline = decode_files(mech, sorted(str(p) for p in srv.store.glob("seg-*.parquet")))
    assert live["n"] == offline.n == 2_000
    assert live["labels"] == (None if mech.labels is None else list(mech.labels))
    np.testing.assert_array_equal(np.asarray(live["estimate"], dtype=float), offline.estimate)


def test_fastldp_audit_lists_and_runs_its_channels():
    env = dict(os.environ)
    listed = subprocess.run([sys.executable, "-m", "fastldp", "audit", "--list", "--controls"],
                            capture_output=True, text=True, timeout=300, env=env)
    assert listed.returncode == 0, listed.stderr
    for name in ("spl-olh", "smp-oue", "rspfd-oue-random", "control:rspfd-grr-paper"):
        assert name in listed.stdout
    run = subprocess.run([sys.executable, "-m", "fastldp", "audit", "rspfd-grr", "--n", "2000"],
                         capture_output=True, text=True, timeout=300, env=env)
    assert run.returncode == 0, run.stdout + run.stderr


# --------------------------------------------------------------------------- bad input
def test_bad_parameters_name_themselves():
    with pytest.raises(ValueError, match="'oracle' parameter of SPL"):
        SPL(domain_sizes=[2, 3], epsilon=1.0, oracle="RAPPOR")
    with pytest.raises(ValueError, match="'variant' parameter of RSpFD"):
        RSpFD(domain_sizes=[2, 3], epsilon=1.0, variant="OLH")
    with pytest.raises(ValueError, match=r"'domain_sizes\[1\]' parameter of SMP"):
        SMP(domain_sizes=[2, 1], epsilon=1.0)
    with pytest.raises(ValueError, match="'epsilon' parameter of SPL"):
        SPL(domain_sizes=[2, 3], epsilon=float("nan"))
    with pytest.raises(TypeError, match="'domain_sizes' parameter of SPL"):
        SPL(domain_sizes=3, epsilon=1.0)


def test_bad_records_and_reports_are_refused_with_their_place():
    spl = SPL(domain_sizes=[2, 3], epsilon=1.0, codebook_seed=0)
    with pytest.raises(ValueError, match="3 at row 1, attribute 1"):
        spl.privatize(np.array([[0, 0], [1, 3]]))
    with pytest.raises(ValueError, match=r"shape \(n, 2\)"):
        spl.privatize(np.zeros((4, 3), dtype=np.int64))
    with pytest.raises(TypeError, match="'records' parameter"):
        spl.privatize(np.zeros((4, 2)))
    # a batch of the wrong shape is refused (a malformed report is sanitized instead)
    with pytest.raises(ValueError, match=r"'reports' parameter of SPL.partial .*shape \(n, 2\)"
                                         r".*shape \(2, 3\)"):
        spl.estimate(np.zeros((2, 3), dtype=np.int64))
    with pytest.raises(ValueError, match="'epsilons' parameter"):
        spl.estimate(np.array([[0, 0]]), epsilons=2.0)
    other = SPL(domain_sizes=[2, 3], epsilon=2.0, codebook_seed=0)
    with pytest.raises(ValueError, match="other parameters"):
        spl.merge(spl.partial(np.array([[0, 0]])), other.partial(np.array([[0, 0]])))


# --------------------------------------------------------------------------- numeric means
from fastldp.multidim import SampledMean, SplitMean, optimal_k  # noqa: E402

MEANS = [(SampledMean, "Piecewise", {}), (SampledMean, "Duchi", {}),
         (SampledMean, "Piecewise", {"k": 3}), (SplitMean, "Piecewise", {}),
         (SplitMean, "Duchi", {}), (SampledMean, "Hybrid", {}), (SplitMean, "Hybrid", {})]


def _mean_id(cfg):
    return f"{cfg[0].__name__}-{cfg[1]}{'-k' + str(cfg[2]['k']) if cfg[2] else ''}"


def _simulate_means(cfg, n, reps, seed):
    cls, randomizer, extra = cfg
    mech = cls(dimension=5, epsilon=6.0, randomizer=randomizer, **extra)
    x = mech.example_data(n, np.random.default_rng(seed))
    ests = [mech.estimate(mech.privatize(x, rng=seed * 1_000 + r)) for r in range(reps)]
    return (x.mean(axis=0), np.array([e.mean for e in ests]),
            np.array([e.variances for e in ests]))


@pytest.mark.parametrize("cfg", MEANS, ids=_mean_id)
def test_mean_estimates_are_unbiased_with_the_estimated_variance(cfg):
    truth, means, variances = _simulate_means(cfg, n=2_000, reps=200, seed=13)
    # 200 reps: the variance ratio has sd 0.1; (0.6, 1.5) is 4 to 5 sd on each side
    _check_unbiased_with_the_variance(truth, means, variances)


@pytest.mark.slow
@pytest.mark.parametrize("cfg", MEANS, ids=_mean_id)
def test_mean_estimates_are_unbiased_with_the_estimated_variance_long(cfg):
    truth, means, variances = _simulate_means(cfg, n=3_000, reps=1_000, seed=14)
    _check_unbiased_with_the_variance(truth, means, variances, band=(0.8, 1.22))


def test_sampling_beats_splitting_at_large_epsilon():
    """Wang et al. 2019's claim in shape: at eps = 6, d = 10, k = 2-3 sampled beats the split."""
    x = np.zeros((1, 10))
    sampled = SampledMean(dimension=10, epsilon=6.0)
    split = SplitMean(dimension=10, epsilon=6.0)
    assert sampled.k in (2, 3)

    def per_user_variance(m):  # Var[t_j] at x_j = 0 (the worst case for Piecewise)
        return (m.dimension / m.k) * float(m.scalar.variance(x[0, :1])[0])
    assert per_user_variance(sampled) < per_user_variance(split) / 3


def test_optimal_k_is_the_papers_rule_or_next_to_it():
    for eps in (0.5, 1.0, 2.5, 5.0, 7.5, 10.0):
        paper = max(1, min(20, int(eps / 2.5)))
        assert abs(optimal_k("Piecewise", 20, eps) - paper) <= 1, eps
    assert optimal_k("Piecewise", 20, 1.0) == 1 and optimal_k("Piecewise", 20, 7.5) == 3


def test_hybrid_is_the_default_and_its_optimal_k_is_never_worse_than_the_papers_rule():
    # Wang et al. 2019 (Algorithm 4 with HM, k = max(1, min(d, floor(eps / 2.5)))): Hybrid is
    # the default of both classes, and optimal_k's worst-case variance is at most the rule's
    from fastldp.multidim import RANDOMIZERS
    from fastldp.multidim._means import _worst_variance
    from fastldp.oracles.randomizers import Hybrid

    assert SampledMean(dimension=4, epsilon=1.0).randomizer == "Hybrid"
    assert SplitMean(dimension=4, epsilon=1.0).randomizer == "Hybrid"
    assert isinstance(SampledMean(dimension=4, epsilon=1.0).scalar, Hybrid)
    for eps in (0.5, 1.0, 2.5, 5.0, 7.5, 10.0, 15.0):
        paper = max(1, min(20, int(eps / 2.5)))
        mine = optimal_k("Hybrid", 20, eps)
        assert mine - paper in (0, 1), eps
        assert (_worst_variance(Hybrid, 20, mine, eps)
                <= _worst_variance(Hybrid, 20, paper, eps) * (1 + 1e-12)), eps
    # each at its own optimal k, d = 10: Hybrid's worst case is below Piecewise's everywhere;
    # under sampling it is not below Duchi's at eps = 1 .. 6: Hybrid's variance is flat in x,
    # so the (d / k - 1) x^2 that sampling adds peaks at |x| = 1, where Duchi's C^2 - x^2 has
    # dropped (docs/guide/multidim.rst says so); at eps = 8 Hybrid is the best of the three
    for eps in (1.0, 4.0, 8.0):
        worst = {r: _worst_variance(cls, 10, optimal_k(r, 10, eps), eps)
                 for r, cls in RANDOMIZERS.items()}
        assert worst["Hybrid"] < worst["Piecewise"], eps
        assert (worst["Hybrid"] < worst["Duchi"]) is (eps == 8.0), (eps, worst)
    # at x = 0 (every coordinate), Hybrid's report variance is below Duchi's for eps > eps*
    for eps in (1.0, 4.0, 8.0):
        assert Hybrid(epsilon=eps).variance(0.0) < RANDOMIZERS["Duchi"](epsilon=eps).variance(0.0)


@pytest.mark.parametrize("cls,extra", [(SampledMean, {"k": 1}), (SplitMean, {})])
def test_the_duchi_mean_reports_are_exactly_epsilon_ldp(cls, extra):
    from fastldp.audit import audit_law
    from fastldp.multidim._channels import _duchi_mean_law

    mech = cls(dimension=2, epsilon=1.0, randomizer="Duchi", **extra)
    law = _duchi_mean_law(mech, 1.0, [0])
    np.testing.assert_allclose(law.probs.sum(axis=2), 1.0, rtol=1e-12)
    assert abs(audit_law(law, 1.0).epsilon_audited - 1.0) < 1e-9
    assert not audit_law(law, 1.0 - 1e-6).holds


def test_mean_channels_hold_and_controls_are_caught():
    from fastldp.audit import audit_channel

    for cls in (SampledMean, SplitMean):
        for ch in cls.channels(1.0):
            row = audit_channel(ch, n=20_000)
            assert row.holds != ch.expect_violation, ch.name


def test_mean_partials_merge_exactly_and_files_round_trip(tmp_path):
    from fastldp.reports import decode_files, write_reports

    mech = SampledMean(dimension=7, epsilon=5.0, randomizer="Piecewise")
    x = mech.example_data(2_500, np.random.default_rng(3))
    reports = mech.privatize(x, rng=4)
    whole = mech.estimate(reports)
    a, b, c = (mech.partial(reports[s]) for s in (slice(0, 999), slice(999, 1_000),
                                                  slice(1_000, 2_500)))
    merged = mech.finalize(mech.merge(c, mech.merge(b, a)))
    assert np.array_equal(merged.mean, whole.mean)
    assert np.array_equal(merged.variances, whole.variances)
    path = write_reports(tmp_path / "m.parquet", mech, reports, row_group_size=300)
    offline = decode_files(mech, [path])
    assert np.array_equal(offline.mean, whole.mean) and offline.n == 2_500


def test_bad_vectors_and_mean_reports_are_refused():
    mech = SampledMean(dimension=3, epsilon=2.0, randomizer="Duchi", k=2)
    with pytest.raises(ValueError, match="'data' parameter of SampledMean.privatize"):
        mech.privatize(np.array([[0.0, 1.5, 0.0]]))
    with pytest.raises(ValueError, match="'data' parameter"):
        mech.privatize(np.array([[0.0, np.nan, 0.0]]))
    with pytest.raises(ValueError, match="'k' parameter of SampledMean"):
        SampledMean(dimension=3, epsilon=2.0, k=4)
    with pytest.raises(ValueError, match=r"'reports' parameter of SampledMean.partial .*"
                                         r"shape \(n, 4\)"):
        mech.estimate(np.zeros((3, 3)))


def _per_report_variance(mech):
    pi0, pi1 = mech.hit_probabilities(0)
    scale = mech.n_attributes if isinstance(mech, SMP) else 1
    return pi0 * (1 - pi0) / (pi1 - pi0) ** 2 * scale


@pytest.mark.parametrize("eps", [0.5, 1.0, 2.0, 4.0])
def test_at_one_budget_smp_beats_rspfd(eps):
    """The table of docs/guide/multidim.rst: the paper's advantage needs its amplified budget."""
    A, sizes = 5, [10] * 5
    smp = min(_per_report_variance(SMP(domain_sizes=sizes, epsilon=eps, oracle=o))
              for o in ("GRR", "OUE"))
    rspfd = min(_per_report_variance(RSpFD(domain_sizes=sizes, epsilon=eps, variant=v))
                for v in ("GRR", "OUE-zero", "OUE-random"))
    assert smp < rspfd
    amplified = _per_report_variance(RSpFD(domain_sizes=sizes, epsilon=paper_budget(eps, A),
                                           variant="GRR"))
    assert (amplified < smp) == (eps <= 1.0)
    expected = {0.5: (78.4, 391.8, 35.9), 1.0: (18.2, 92.1, 9.7), 2.0: (1.9, 13.8, 3.3),
                4.0: (0.1, 1.9, 2.0)}[eps]
    assert (round(smp, 1), round(rspfd, 1), round(amplified, 1)) == expected


# --------------------------------------------------------------------------- marginals
from fastldp.multidim import FullDomain, total_variation  # noqa: E402


def _brute_marginal(records, attributes, sizes):
    table = np.zeros([sizes[j] for j in attributes])
    for r in records:
        table[tuple(int(r[j]) for j in attributes)] += 1
    return table


@pytest.mark.parametrize("oracle", ["GRR", "OLH"])
def test_marginals_are_sums_of_the_joint_cells_by_brute_force(oracle):
    sizes = (2, 3, 2)
    fd = FullDomain(domain_sizes=list(sizes), epsilon=2.0, oracle=oracle, codebook_seed=5)
    x = fd.example_data(400, np.random.default_rng(6))
    est = fd.estimate(fd.privatize(x, rng=7))
    cells = list(itertools.product(*[range(k) for k in sizes]))
    for attributes in ([0], [2, 0], [1, 2], [2, 1, 0]):
        counts, _ = est.marginal(attributes)
        brute = np.zeros([sizes[j] for j in attributes])
        for i, cell in enumerate(cells):  # the joint cell's index is its mixed-radix code
            brute[tuple(cell[j] for j in attributes)] += est.counts[i]
        np.testing.assert_allclose(counts, brute, rtol=1e-12, atol=1e-9)
    # the true joint counts through the same path give the records' marginals exactly
    import dataclasses

    joint = np.bincount(np.ravel_multi_index(tuple(x.T), sizes), minlength=12).astype(float)
    exact = dataclasses.replace(est, counts=joint)
    for attributes in ([1], [2, 0], [0, 2], [1, 0, 2]):
        assert np.array_equal(exact.marginal(attributes)[0],
                              _brute_marginal(x, attributes, sizes)), attributes


@pytest.mark.parametrize("oracle", ["GRR", "OLH"])
def test_marginals_are_unbiased_with_the_stated_variance(oracle):
    sizes = (3, 2, 2)
    x = FullDomain(domain_sizes=list(sizes), epsilon=2.0).example_data(
        2_000, np.random.default_rng(9))
    reps = 200
    out = {(0, 1): [], (2, 1, 0): []}
    for r in range(reps):  # a public seed per repetition: OLH is unbiased over its hashes
        fd = FullDomain(domain_sizes=list(sizes), epsilon=2.0, oracle=oracle, codebook_seed=r)
        est = fd.estimate(fd.privatize(x, rng=10_000 + r))
        for attrs in out:
            out[attrs].append(est.marginal(list(attrs)))
    for attrs, rows in out.items():
        truth = _brute_marginal(x, attrs, sizes).ravel()
        counts = np.array([c.ravel() for c, _ in rows])
        variances = np.array([v.ravel() for _, v in rows])
        _check_unbiased_with_the_variance(truth, counts, variances)


def test_full_domain_partials_merge_exactly_and_its_channels_audit():
    from fastldp.audit import audit_channel

    fd = FullDomain(domain_sizes=[3, 4, 2], epsilon=2.0, codebook_seed=3)
    x = fd.example_data(1_500, np.random.default_rng(1))
    ids = np.arange(1_500) + 10
    reports = fd.privatize(x, identities=ids, rng=2)
    whole = fd.estimate(reports, identities=ids)
    merged = fd.finalize(fd.merge(fd.partial(reports[900:], identities=ids[900:]),
                                  fd.partial(reports[:900], identities=ids[:900])))
    assert np.array_equal(merged.counts, whole.counts)
    for ch in FullDomain.channels(1.0):
        row = audit_channel(ch, n=100_000 if ch.expect_violation else 2_000)
        assert row.holds != ch.expect_violation, ch.name


def test_total_variation_and_bad_marginals():
    assert total_variation([3, 1], [2, 2]) == 0.25
    assert total_variation(np.eye(2), np.eye(2)) == 0.0
    est = FullDomain(domain_sizes=[2, 3], epsilon=1.0, codebook_seed=0).estimate(
        np.array([0, 1, 2]))
    with pytest.raises(ValueError, match="'attributes' parameter"):
        est.marginal([0, 0])
    with pytest.raises(ValueError, match="'attributes' parameter"):
        est.marginal([2])
    with pytest.raises(ValueError, match="'domain_sizes' parameter of FullDomain"):
        FullDomain(domain_sizes=[2048, 2048, 2], epsilon=1.0)


@pytest.mark.parametrize("name", ["SPL", "SMP", "RSpFD", "FullDomain", "SampledMean",
                                  "SplitMean"])
def test_constructors_are_keyword_only_in_fastldps_words(name):
    cls = getattr(fastldp, name)
    with pytest.raises(TypeError, match=rf"^{name} takes keyword arguments only .*"
                                        r"Got 2 positional arguments \(16, 1\.0\)"):
        cls(16, 1.0)
    with pytest.raises(TypeError, match=rf"^{name} has no parameter 'eps' \(did you mean "
                                        r"'epsilon'\?\)"):
        cls(eps=1.0)


# --------------------------------------------------------------------------- sanitization
from fastldp._kernels._hash import SANITIZE_STREAM, hash_blocks  # noqa: E402
from fastldp.multidim._means import SANITIZE_SEED  # noqa: E402
from fastldp.oracles._sanitizing import public_uniform  # noqa: E402

SANITIZED: list = [(SPL, "oracle", "GRR"), (SPL, "oracle", "OUE"), (SPL, "oracle", "OLH"),
             (SMP, "oracle", "GRR"), (SMP, "oracle", "SUE"), (SMP, "oracle", "OLH"),
             (RSpFD, "variant", "GRR"), (RSpFD, "variant", "OUE-random")]
SAN_SIZES = (3, 12, 2)  # attribute 1 takes two bytes of unary bits, the others one


def _public_part(mech, j, ident):
    """What attribute ``j``'s oracle replaces a malformed part of ``ident``'s report by."""
    oracle, ids = mech.oracles[j], np.array([ident], dtype=np.uint64)
    if mech.unary:
        return [int(b) for b in oracle.public_rows(ids)[0]]
    eps = mech.epsilon if isinstance(mech, RSpFD) else mech.attribute_epsilon
    size = oracle.output_sizes(np.array([eps]))[0]
    return [int(public_uniform(oracle.codebook_seed, ids, np.array([size]))[0])]


def _columns(mech, j):
    if not mech.unary:
        return slice(j, j + 1)
    start = sum(mech.n_bytes[:j])
    return slice(start, start + mech.n_bytes[j])


def _corrupted(cfg, n=400):
    """Reports with malformed rows (a ragged list), the same rows repaired by hand, the counts.

    The repairs follow fastldp.multidim._sanitizing: a malformed part becomes
    its oracle's public uniform output of the identity, other parts stay; a
    row of another length, or an SMP row naming no attribute, is redrawn
    whole (SMP: the attribute from word 3 of the sanitize stream).
    """
    mech = _build(cfg, sizes=SAN_SIZES, seed=13)
    ids = np.arange(n, dtype=np.uint64) * 3 + 5
    reports = mech.privatize(mech.example_data(n, np.random.default_rng(2)), identities=ids,
                             rng=3)
    sent = [list(r) for r in reports.tolist()]
    fixed = [list(r) for r in reports.tolist()]
    A = mech.n_attributes
    if not isinstance(mech, SMP):
        cols = [_columns(mech, j) for j in range(A)]
        sent[0][cols[1].start] = "x"  # non_numeric
        fixed[0][cols[1]] = _public_part(mech, 1, ids[0])
        sent[1][cols[0].start] = float("nan")  # non_integer
        fixed[1][cols[0]] = _public_part(mech, 0, ids[1])
        # out_of_range: a bit past k_2 = 2 (unary) or a symbol / bucket past the outputs
        sent[2][cols[2].start] = 4 if mech.unary else 10**6
        fixed[2][cols[2]] = _public_part(mech, 2, ids[2])
        sent[3] = sent[3][:-1]  # wrong_width: every part redrawn
        for j in range(A):
            fixed[3][cols[j]] = _public_part(mech, j, ids[3])
        sent[4][cols[0].start] = 0.5  # non_integer
        fixed[4][cols[0]] = _public_part(mech, 0, ids[4])
        reasons = {"wrong_width": 1, "non_numeric": 1, "non_integer": 2, "out_of_range": 1}
        return mech, ids, sent, fixed, reasons

    def redrawn(ident):
        j = int(public_uniform(mech.codebook_seed, np.array([ident], dtype=np.uint64),
                               np.array([A]), word=3)[0])
        part = _public_part(mech, j, ident)
        if not mech.unary:
            return [j, *part]
        return [j & 0xFF, j >> 8, *part] + [0] * (reports.shape[1] - 2 - len(part))

    sent[0][0] = "x"  # non_numeric index: redrawn whole
    fixed[0] = redrawn(ids[0])
    sent[1][0] = A if not mech.unary else A & 0xFF  # bad_index (A < 256)
    fixed[1] = redrawn(ids[1])
    about = lambda r: r[0] if not mech.unary else r[0] | (r[1] << 8)  # noqa: E731
    row = next(i for i in range(5, n) if about(fixed[i]) == 0)
    if mech.unary:  # out_of_range: a byte after attribute 0's one byte of bits
        sent[row][3] = 1
        fixed[row][2:] = _public_part(mech, 0, ids[row]) + [0] * (reports.shape[1] - 3)
    else:
        sent[row][1] = -1
        fixed[row][1:] = _public_part(mech, 0, ids[row])
    sent[3] = sent[3] + [0]  # wrong_width
    fixed[3] = redrawn(ids[3])
    sent[4][2 if mech.unary else 1] = float("nan")  # non_integer part, index kept
    j4 = about(fixed[4])
    cut = slice(2, 2 + mech.n_bytes[j4]) if mech.unary else slice(1, 2)
    fixed[4][cut] = _public_part(mech, j4, ids[4])
    reasons = {"wrong_width": 1, "non_numeric": 1, "non_integer": 1, "bad_index": 1,
               "out_of_range": 1}
    return mech, ids, sent, fixed, reasons


@pytest.mark.parametrize("cfg", SANITIZED, ids=_id)
def test_malformed_reports_are_replaced_as_their_oracles_do_and_counted(cfg):
    mech, ids, sent, fixed, reasons = _corrupted(cfg)
    got = mech.estimate(sent, identities=ids)
    dtype, _ = mech._layout()
    want = mech.estimate(np.array(fixed, dtype=dtype), identities=ids)
    np.testing.assert_array_equal(got.counts, want.counts)
    np.testing.assert_array_equal(got.variances, want.variances)
    assert got.sanitization.by_reason == reasons
    assert got.sanitization.n_received == 400 and got.sanitization.n_sanitized == 5
    assert got.sanitization.wrong_dtype  # a ragged list, not an integer array
    assert want.sanitization.n_sanitized == 0 and not want.sanitization.wrong_dtype
    assert set(want.sanitization.by_reason) == set(reasons)


@pytest.mark.parametrize("cfg", SANITIZED, ids=_id)
def test_sanitized_partials_merge_bit_for_bit(cfg):
    mech, ids, sent, _, reasons = _corrupted(cfg)
    whole = mech.estimate(sent, identities=ids)
    cuts = [0, 2, 3, 250, 400]  # malformed rows in three chunks
    parts = [mech.partial(sent[a:b], identities=ids[a:b]) for a, b in zip(cuts, cuts[1:])]
    merged = mech.merge(mech.merge(parts[3], parts[1]), mech.merge(parts[2], parts[0]))
    got = mech.finalize(merged)
    np.testing.assert_array_equal(got.counts, whole.counts)
    np.testing.assert_array_equal(got.variances, whole.variances)
    assert got.sanitization == whole.sanitization
    assert merged == fastldp.streaming.Partial.from_bytes(merged.to_bytes())


@pytest.mark.parametrize("oracle", ["GRR", "OLH"])
def test_full_domain_sanitizes_as_its_joint_oracle(oracle):
    fd = FullDomain(domain_sizes=[3, 4, 2], epsilon=2.0, oracle=oracle, codebook_seed=4)
    ids = np.arange(300, dtype=np.uint64) + 40
    reports = fd.privatize(fd.example_data(300, np.random.default_rng(5)), identities=ids, rng=6)
    sent = reports.astype(object)
    sent[0], sent[1], sent[2], sent[3] = "x", 1.5, -3, 10**9
    size = fd.joint_oracle.output_sizes(np.array([2.0]))[0]
    fixed = reports.copy()
    fixed[:4] = public_uniform(4, ids[:4], np.full(4, size))
    got, want = fd.estimate(sent, identities=ids), fd.estimate(fixed, identities=ids)
    np.testing.assert_array_equal(got.counts, want.counts)
    assert got.sanitization.by_reason == {"non_numeric": 1, "non_integer": 1, "out_of_range": 2}
    merged = fd.finalize(fd.merge(fd.partial(sent[2:], identities=ids[2:]),
                                  fd.partial(sent[:2], identities=ids[:2])))
    np.testing.assert_array_equal(merged.counts, got.counts)
    assert merged.sanitization == got.sanitization


def _mean_uniforms(ids, count):
    blocks = (count + 3) // 4
    words = hash_blocks(SANITIZE_SEED, np.asarray(ids, dtype=np.uint64), blocks,
                        SANITIZE_STREAM).reshape(len(ids), -1)[:, :count]
    return (words >> np.uint64(11)).astype(np.float64) * 2.0**-53


def test_malformed_mean_reports_are_public_draws_at_zero_and_counted():
    mech = SplitMean(dimension=3, epsilon=2.0, randomizer="Duchi")  # k = d = 3
    C, k, n = mech.scalar.C, 3, 200
    ids = np.arange(n, dtype=np.uint64) + 9
    reports = mech.privatize(mech.example_data(n, np.random.default_rng(1)), rng=2)
    u = _mean_uniforms(ids, 3 * k)
    duchi_at_zero = np.where(u[:, k:2 * k] < 0.5, C, -C)  # P(+C | 0) = 1/2
    sent = [list(r) for r in reports.tolist()]
    fixed = reports.copy()
    sent[0][k + 1] = "x"  # non_numeric value
    sent[1][k + 2] = float("nan")  # non_finite
    sent[2][k] = 0.5  # illegal_value: not +-C
    sent[3][0] = 3.0  # bad_index: redrawn whole (the dimensions of k = d are all of them)
    sent[4] = sent[4][:-1]  # wrong_width
    for row, pos in ((0, 1), (1, 2), (2, 0)):
        fixed[row, k + pos] = duchi_at_zero[row, pos]
    for row in (3, 4):
        fixed[row] = [0.0, 1.0, 2.0, *duchi_at_zero[row]]
    got = mech.estimate(sent, identities=ids)
    want = mech.estimate(fixed, identities=ids)
    np.testing.assert_array_equal(got.mean, want.mean)
    np.testing.assert_array_equal(got.variances, want.variances)
    assert got.sanitization.by_reason == {"wrong_width": 1, "non_numeric": 1, "non_finite": 1,
                                          "bad_index": 1, "illegal_value": 1}
    assert want.sanitization.n_sanitized == 0
    parts = [mech.partial(sent[a:b], identities=ids[a:b]) for a, b in ((0, 3), (3, 200))]
    merged = mech.finalize(mech.merge(parts[1], parts[0]))
    np.testing.assert_array_equal(merged.mean, got.mean)
    assert merged.sanitization == got.sanitization


@pytest.mark.parametrize("randomizer", ["Piecewise", "Duchi", "Hybrid"])
def test_sampled_mean_replacements_are_legal_distinct_and_unbiased_for_zero(randomizer):
    mech = SampledMean(dimension=6, epsilon=4.0, randomizer=randomizer, k=3)
    n = 20_000
    ids = np.arange(n, dtype=np.uint64) * 11
    garbage = np.full((n, 6), np.nan)
    clean, report = mech.sanitize(garbage, np.zeros(n, dtype=bool), ids)
    assert report.by_reason["non_finite"] == n and report.n_valid == 0
    idx, y = clean[:, :3], clean[:, 3:]
    assert np.all((idx >= 0) & (idx < 6) & (idx == np.floor(idx)))
    assert np.all(np.sort(idx, axis=1)[:, 1:] != np.sort(idx, axis=1)[:, :-1])
    assert mech.scalar.is_legal(y).all()
    # every dimension equally likely: 3 of 6 per row, n / 2 rows each, binomial sd
    per_dim = np.bincount(idx.astype(int).ravel(), minlength=6)
    assert np.all(np.abs(per_dim - n / 2) < 4.5 * math.sqrt(n / 4)), per_dim
    # the randomizer's output at 0: mean 0 with variance Var[Y | 0] (4.5 standard errors)
    sd = math.sqrt(float(mech.scalar.variance(0.0)) / (3 * n))
    assert abs(y.mean()) < 4.5 * sd, (y.mean(), sd)


# --------------------------------------------------------------------------- oracle="auto"
from fastldp.oracles.adaptive import choose_oracle  # noqa: E402

#: attributes of 2, 40 and 3 values at eps = 2: GRR, OUE, GRR for SPL and SMP (a mixed report)
AUTO_SIZES = (2, 40, 3)
AUTO = [(SPL, "oracle", "auto"), (SMP, "oracle", "auto"), (RSpFD, "variant", "auto")]


def test_auto_picks_per_attribute_the_oracle_of_least_variance():
    # SPL's attributes at eps / A, SMP's at eps: the one-shot oracles' own variances decide
    for cls, eps_of in ((SPL, lambda eps: eps / 3), (SMP, lambda eps: eps)):
        for eps in (1.0, 2.0, 4.0):
            mech = cls(domain_sizes=list(AUTO_SIZES), epsilon=eps, oracle="auto",
                       codebook_seed=1)
            want = tuple(choose_oracle(k, eps_of(eps), ("grr", "oue", "olh")).upper()
                         for k in AUTO_SIZES)
            assert mech.chosen == want
    assert SPL(domain_sizes=list(AUTO_SIZES), epsilon=2.0, oracle="auto").chosen == (
        "GRR", "OUE", "GRR")
    # RSpFD: GRR or OUE-zero by the variance of a count nobody holds, from the class's own
    # hit probabilities (multi-freq-ldpy's RS+FD[ADP] rule)
    for eps in (0.5, 2.0, 4.0):
        auto = RSpFD(domain_sizes=list(AUTO_SIZES), epsilon=eps, variant="auto")
        for j in range(3):
            var = {}
            for v in ("GRR", "OUE-zero"):
                pi0, pi1 = RSpFD(domain_sizes=list(AUTO_SIZES), epsilon=eps,
                                 variant=v).hit_probabilities(j)
                var[v] = pi0 * (1 - pi0) / (pi1 - pi0) ** 2
            assert auto.chosen[j] == min(var, key=var.get), (eps, j, var)
    assert RSpFD(domain_sizes=list(AUTO_SIZES), epsilon=4.0, variant="auto").chosen == (
        "OUE-zero", "GRR", "OUE-zero")


@pytest.mark.parametrize("cfg", AUTO, ids=_id)
def test_auto_mixed_reports_are_unbiased_with_the_stated_variance(cfg):
    x = _build(cfg, sizes=AUTO_SIZES).example_data(2_000, np.random.default_rng(21))
    mechs = [_build(cfg, sizes=AUTO_SIZES, seed=21_000 + r) for r in range(200)]
    assert len(set(mechs[0].chosen)) == 2  # a mix of symbol and bit-packed attributes
    ests = [m.estimate(m.privatize(x, rng=21_000 + r)) for r, m in enumerate(mechs)]
    _check_unbiased_with_the_variance(_truth(mechs[0], x), np.array([e.counts for e in ests]),
                                      np.array([e.variances for e in ests]))


def test_auto_spl_decodes_each_part_as_its_chosen_oracle_would():
    # naive twin: attribute j's part of a mixed report is a report of a one-attribute SPL over
    # the chosen oracle at eps / A with the attribute's seed
    spl = SPL(domain_sizes=list(AUTO_SIZES), epsilon=2.0, oracle="auto", codebook_seed=5)
    x = spl.example_data(3_000, np.random.default_rng(0))
    reports = spl.privatize(x, rng=1)
    assert reports.dtype == np.int64 and reports.shape == (3_000, 1 + 5 + 1)
    est = spl.estimate(reports)
    start = 0
    for j, k in enumerate(AUTO_SIZES):
        width = 5 if spl.chosen[j] == "OUE" else 1
        part = reports[:, start:start + width]
        start += width
        twin = SPL(domain_sizes=[k], epsilon=2.0 / 3, oracle=spl.chosen[j],
                   codebook_seed=spl.attribute_seed(j))
        got = twin.estimate(part.astype(np.uint8) if width > 1 else part)
        np.testing.assert_array_equal(est.attribute(j), got.counts)


@pytest.mark.parametrize("cfg", AUTO, ids=_id)
def test_auto_mixed_reports_sanitize_merge_and_round_trip(cfg, tmp_path):
    from fastldp.reports import decode_files, write_reports

    mech = _build(cfg, sizes=AUTO_SIZES)
    x = mech.example_data(500, np.random.default_rng(3))
    reports = mech.privatize(x, rng=4)
    whole = mech.estimate(reports)
    # a rebuilt server from the public parameters makes the same choice
    again = type(mech)(**mech.stream_params())
    assert again.chosen == mech.chosen
    np.testing.assert_array_equal(again.estimate(reports).counts, whole.counts)
    merged = mech.finalize(mech.merge(mech.partial(reports[200:], identities=np.arange(200, 500)),
                                      mech.partial(reports[:200])))
    np.testing.assert_array_equal(merged.counts, whole.counts)
    path = write_reports(tmp_path / "auto.parquet", mech, reports, row_group_size=128)
    np.testing.assert_array_equal(decode_files(mech, [path]).counts, whole.counts)
    # a byte of a bit-packed part out of [0, 255] and a symbol out of range are replaced
    bad = reports.copy()
    unary_col = 1 + (1 if isinstance(mech, SMP) else 0)  # attribute 1 (40 values) is packed
    rows = np.flatnonzero(bad[:, 0] == 1) if isinstance(mech, SMP) else np.arange(2)
    bad[rows[0], unary_col] = 300
    last = bad.shape[1] - 1 if not isinstance(mech, SMP) else 1
    target = (np.flatnonzero(bad[:, 0] != 1)[0] if isinstance(mech, SMP) else rows[1])
    bad[target, last] = 99
    est = mech.estimate(bad)
    assert est.sanitization.n_valid == 498 and est.sanitization.by_reason["out_of_range"] == 2


@pytest.mark.parametrize("cfg", [(SPL, "oracle", "GRR"), (SPL, "oracle", "OUE"),
                                 (RSpFD, "variant", "GRR"), (RSpFD, "variant", "SUE-zero")],
                         ids=_id)
def test_whole_matrix_fast_paths_equal_the_attribute_by_attribute_decode(cfg):
    # the one-bincount / one-unpack decode and the one-comparison sanitization check give the
    # hits of the attribute-by-attribute loop (naive twin), and the loop still names a bad row
    mech = _build(cfg, sizes=(3, 11, 2))
    reports = mech.privatize(mech.example_data(3_000, np.random.default_rng(0)), rng=1)
    ids = np.arange(3_000, dtype=np.uint64)
    fast, about = mech._hits(reports, ids, "t")
    slow, about_slow = mech._hits_by_attribute(reports, ids, "t")
    np.testing.assert_array_equal(fast, slow)
    assert about == about_slow == [3_000] * 3
    assert mech._all_legal(reports)
    bad = reports.copy()
    if mech.unary:
        bad[7, 2] |= 0x80  # attribute 1 (11 values, bytes 1-2): bits 3-7 of byte 2 are padding
    else:
        bad[7, 1] = 11
    assert not mech._all_legal(bad)
    with pytest.raises(ValueError, match="report 7 "):
        mech._hits(bad, ids, "t")
    # through the decoder the bad part is replaced and counted, never raised on
    assert mech.estimate(bad).sanitization.by_reason["out_of_range"] == 1
