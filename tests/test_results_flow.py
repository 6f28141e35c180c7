"""One result type flows everywhere (issue 37, item 2).

An estimate of every family with counts, saved by ``save_result`` and read
back by ``load_result``, goes wherever the estimate itself went: the
post-processing (``norm_sub``, ``base_cut``, ``project_simplex``, ``ibu``),
the metrics, ``to_frame`` and the accountant, and keeps its ``n``, labels
and privacy statement. Before, ``postprocess.norm_sub(load_result(path))``
failed ("the 'n' parameter must be given with a plain count vector"), and
the workaround ``norm_sub(r.counts, n=r.n)`` lost the privacy statement.
"""

from __future__ import annotations

import numpy as np
import pytest

import fastldp
from fastldp import metrics
from fastldp.oracles import postprocess as pp
from fastldp.reports import LoadedResult, load_result, save_result
from fastldp.results import PrivacyStatement, Result

LABELS = ("red", "green", "blue", "cyan", "plum", "gold")


def _values(n, D, seed=7):
    weights = np.arange(D, 0, -1, dtype=float)
    return np.random.default_rng(seed).choice(D, size=n, p=weights / weights.sum())


def _oracle():
    grr = fastldp.GRR(domain_size=6, epsilon=2.0, codebook_seed=1, categories=list(LABELS))
    return grr.estimate(grr.privatize([LABELS[v] for v in _values(3000, 6)], rng=11)), grr


def _olh():
    olh = fastldp.OLH(domain_size=40, epsilon=1.0, codebook_seed=5)
    return olh.estimate(olh.privatize(_values(3000, 40), rng=12)), olh


def _lgrr():
    lgrr = fastldp.LGRR(domain_size=6, epsilon_inf=4.0, epsilon_1=2.0, codebook_seed=2)
    return lgrr.estimate(lgrr.privatize(_values(3000, 6), rng=13)), None


def _dbitflip():
    dbf = fastldp.DBitFlipPM(domain_size=8, n_sampled=2, epsilon_inf=4.0, epsilon_1=2.0,
                             codebook_seed=3)
    return dbf.estimate(dbf.privatize(_values(3000, 8), rng=14)), None


def _rappor():
    rappor = fastldp.LongitudinalRAPPOR(domain_size=8, n_bits=32, n_cohorts=4, epsilon_inf=4.0,
                                        epsilon_1=1.0, codebook_seed=4)
    return rappor.estimate(rappor.privatize(_values(3000, 8), rng=15)), None


#: every family whose estimate is a whole domain's counts (they sum to n)
FREQUENCY = {"GRR (oracles, labelled)": _oracle, "OLH (oracles)": _olh,
             "LGRR (longitudinal)": _lgrr, "DBitFlipPM (longitudinal)": _dbitflip,
             "LongitudinalRAPPOR (longitudinal)": _rappor}


def _pem():
    pem = fastldp.PEM(epsilon=4.0, k=3, item_bits=12, codebook_seed=3)
    items = np.repeat(np.array([7, 4000, 123, 9], dtype=np.uint64), [3000, 2000, 1000, 100])
    return pem.estimate(pem.privatize(items, rng=1))


def _histogram():
    counts = np.random.default_rng(0).integers(0, 50, 40).astype(float)
    return fastldp.ShiftedLogGaussian(r=0.5).release_result(counts, rng=0)


#: families whose counts are not a whole domain's (the top k; a histogram's groups)
OTHER_COUNTS = {"PEM (heavyhitters)": _pem, "ShiftedLogGaussian (histograms)": _histogram}


def _saved(result, tmp_path) -> LoadedResult:
    return load_result(save_result(result, tmp_path / "result.npz"))


@pytest.mark.parametrize("name", sorted(FREQUENCY))
def test_every_family_s_saved_estimate_post_processes_as_the_estimate(name, tmp_path):
    result, oracle = FREQUENCY[name]()
    loaded = _saved(result, tmp_path)
    assert isinstance(loaded, Result)
    assert loaded.privacy == result.privacy and type(loaded.privacy) is type(result.privacy)
    assert loaded.categories == result.categories and loaded.n == result.n
    for method in (pp.norm_sub, pp.base_cut, pp.project_simplex, pp.norm_mul, pp.norm_cut):
        got, want = method(loaded), method(result)
        assert got.counts.tobytes() == want.counts.tobytes(), method.__name__
        assert got.n == result.n and got.categories == result.categories
        assert got.privacy == result.privacy and got.privacy.epsilon == result.privacy.epsilon
        assert got.postprocessing == want.postprocessing
        assert got.postprocessing_info == want.postprocessing_info
        assert got.sanitization == result.sanitization
    # one method after another, through a file between them
    twice = pp.norm_sub(_saved(pp.base_cut(loaded), tmp_path))
    assert twice.postprocessing == "base_cut+norm_sub" and twice.n == result.n
    np.testing.assert_array_equal(twice.counts, pp.norm_sub(pp.base_cut(result)).counts)
    assert float(twice.counts.sum()) == pytest.approx(result.n, rel=1e-12)
    if oracle is not None:
        np.testing.assert_array_equal(pp.ibu(loaded, oracle=oracle).counts,
                                      pp.ibu(result, oracle=oracle).counts)


@pytest.mark.parametrize("name", sorted(FREQUENCY) + sorted(OTHER_COUNTS))
def test_every_family_s_saved_estimate_scores_frames_and_accounts_as_the_estimate(name,
                                                                                  tmp_path):
    pd = pytest.importorskip("pandas")
    pytest.importorskip("dp_accounting")
    from fastldp.accounting import Accountant

    make = FREQUENCY.get(name) or OTHER_COUNTS[name]
    result = make()
    result = result[0] if isinstance(result, tuple) else result
    loaded = _saved(result, tmp_path)
    truth = np.zeros(result.estimate.shape)
    assert metrics.squared_frobenius_loss(loaded, truth) == \
        metrics.squared_frobenius_loss(result.estimate, truth) > 0
    assert metrics.support_scores(loaded, result, 2) == metrics.SupportScores(1.0, 1.0, 1.0)
    frame, want = loaded.to_frame(), result.to_frame()
    shared = [c for c in want.columns if c in frame.columns]
    assert {"estimate"} <= set(shared) and ("std" in shared) == (result.std is not None)
    pd.testing.assert_frame_equal(frame[shared], want[shared])
    assert Accountant().add(loaded).epsilon(1e-6) == Accountant().add(result).epsilon(1e-6)
    assert repr(loaded.privacy.event()) == repr(result.privacy.event())


@pytest.mark.parametrize("name", sorted(OTHER_COUNTS))
def test_other_families_counts_post_process_with_their_total_given(name, tmp_path):
    result = OTHER_COUNTS[name]()
    loaded = _saved(result, tmp_path)
    # their counts do not sum to their n: the total must be said, not guessed
    with pytest.raises(ValueError, match=r"'n' parameter of norm_sub must be given with a "):
        pp.norm_sub(loaded)
    total = float(np.maximum(result.estimate, 0).sum()) + 10.0
    got = pp.norm_sub(loaded, n=total)
    assert got.privacy == result.privacy and got.categories == result.categories
    assert float(got.counts.sum()) == pytest.approx(total, rel=1e-12)
    np.testing.assert_array_equal(got.counts, pp.norm_sub(result, n=total).counts)


def test_a_matrix_result_is_refused_by_post_processing_naming_its_shape(tmp_path):
    jprs = fastldp.JPRS(shape=(6, 6), k=2, s=10, epsilon=1.0, codebook_seed=1)
    result = jprs.estimate(jprs.privatize([np.array([[i % 6, (3 * i) % 6]]) for i in range(200)],
                                          rng=0))
    with pytest.raises(TypeError, match=r"1-d count vector.*JPRSEstimate with an estimate of "
                                        r"shape \(6, 6\)"):
        pp.norm_sub(_saved(result, tmp_path))


def test_a_loaded_statement_is_the_family_s_own_class_and_a_bad_one_is_refused():
    import dataclasses

    longitudinal = fastldp.longitudinal.LongitudinalPrivacy.memoized(epsilon_1=1.0,
                                                                     epsilon_inf=4.0)
    fields = dataclasses.asdict(longitudinal)
    again = PrivacyStatement.from_dict(fields)
    assert again == longitudinal and again.epsilon_inf == 4.0
    assert PrivacyStatement.from_dict({"model": "local DP", "unit": "report",
                                       "epsilon": 1.0}) == PrivacyStatement.local(epsilon=1.0)
    with pytest.raises(ValueError, match=r"unknown \['epsilon_infinity'\]"):
        PrivacyStatement.from_dict({**fields, "epsilon_infinity": 4.0})
    with pytest.raises(ValueError, match=r"missing \['unit'\]"):
        PrivacyStatement.from_dict({"model": "local DP"})


def test_a_loaded_result_is_saved_again_as_it_was_read(tmp_path):
    result, _ = _oracle()
    first = _saved(result, tmp_path)
    again = load_result(save_result(first, tmp_path / "again.npz"))
    assert again.kind == first.kind and again.estimate_name == "counts"
    assert again.summary == first.summary and again.arrays.keys() == first.arrays.keys()
    for name in first.arrays:
        assert again.arrays[name].tobytes() == first.arrays[name].tobytes(), name
    assert again.privacy == result.privacy and again.categories == result.categories
