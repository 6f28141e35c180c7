"""The API contract (docs/guide/contract.rst) for the oracles, the randomizers and the histograms.

Walks every public estimator of the two families and checks what the
contract promises: keyword-only constructors with ``epsilon`` (never
``eps``), the ``privatize`` / ``estimate`` (or ``release``) signatures, a
result on the shared base (:mod:`fastldp.results`) with all its members and
a short repr, labelled results with ``categories=``, the deprecations, and
the top-level export.
"""

import inspect
import warnings

import numpy as np
import pytest

import fastldp
from fastldp import histograms, oracles
from fastldp._sanitize import SanitizationReport
from fastldp.results import REPR_WIDTH, PrivacyStatement, Result

pd = pytest.importorskip("pandas")

ORACLES = [oracles.GRR, oracles.OLH, oracles.FLH, oracles.HadamardResponse, oracles.OUE,
           oracles.SUE, oracles.CMS, oracles.HCMS,
           oracles.SubsetSelection, oracles.BLH, oracles.AdaptiveOracle,
           oracles.SHE, oracles.THE, oracles.RAPPOR, oracles.DiscreteSHE]
RANDOMIZERS = [oracles.Laplace, oracles.Piecewise, oracles.Duchi, oracles.DiscretePiecewise,
               oracles.Hybrid, oracles.StochasticRounding]
HISTOGRAMS = [histograms.ShiftedLogGaussian, histograms.EqualNoiseGaussian,
              histograms.DataIndependentRelease]
HISTOGRAM_ARGS = {histograms.ShiftedLogGaussian: {"r": 0.2},
                  histograms.EqualNoiseGaussian: {"scale": 3.0},
                  histograms.DataIndependentRelease: {"value": 0.5}}
NAME = lambda cls: cls.__name__  # noqa: E731


def make(cls, **kw):
    kw.setdefault("epsilon", 1.0)
    kw.setdefault("codebook_seed", 11)
    kw.setdefault("n_threads", 1)
    if cls is oracles.FLH:
        kw.setdefault("n_hashes", 64)
    if cls is oracles.RAPPOR:
        kw.setdefault("n_bits", 32)
        kw.setdefault("n_cohorts", 4)
    if "categories" not in kw:
        kw.setdefault("domain_size", 10)
    return cls(**kw)


def _constructor_parameters(cls):
    return [p for p in inspect.signature(cls).parameters.values()]


# ---------------------------------------------------------------- every estimator
@pytest.mark.parametrize("cls", ORACLES + RANDOMIZERS + HISTOGRAMS + [
    oracles.FrequencyEstimate, histograms.HistogramRelease], ids=NAME)
def test_every_class_is_the_top_level_name(cls):
    module = histograms if cls in HISTOGRAMS or cls is histograms.HistogramRelease else oracles
    assert getattr(module, cls.__name__) is cls
    if cls is not histograms.HistogramRelease:  # not exported at the top level yet (report)
        assert getattr(fastldp, cls.__name__) is cls


@pytest.mark.parametrize("cls", ORACLES + RANDOMIZERS + HISTOGRAMS, ids=NAME)
def test_constructor_parameters_are_keyword_only_and_never_eps(cls):
    params = _constructor_parameters(cls)
    assert params, cls
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params), params
    names = {p.name for p in params}
    assert "eps" not in names and not any(n.startswith("eps_") for n in names)
    if cls in ORACLES + RANDOMIZERS:
        assert "epsilon" in names


@pytest.mark.parametrize("cls", ORACLES, ids=NAME)
def test_an_oracle_refuses_positional_construction(cls):
    with pytest.raises(TypeError):
        cls(10, 1.0)


@pytest.mark.parametrize("cls", RANDOMIZERS, ids=NAME)
def test_a_randomizer_refuses_positional_construction(cls):
    with pytest.raises(TypeError):
        cls(1.0)


@pytest.mark.parametrize("cls", [histograms.ShiftedLogGaussian, histograms.EqualNoiseGaussian],
                         ids=NAME)
def test_a_histogram_mechanism_refuses_positional_construction(cls):
    with pytest.raises(TypeError):
        cls(*HISTOGRAM_ARGS[cls].values())


def _keyword_only_none(sig, names):
    for name in names:
        p = sig.parameters[name]
        assert p.kind is inspect.Parameter.KEYWORD_ONLY, (name, p.kind)
        assert p.default is None, (name, p.default)


@pytest.mark.parametrize("cls", ORACLES, ids=NAME)
def test_privatize_and_estimate_signatures(cls):
    priv = inspect.signature(cls.privatize)
    assert list(priv.parameters) == ["self", "values", "epsilons", "identities", "rng"]
    _keyword_only_none(priv, ["epsilons", "identities", "rng"])
    est = inspect.signature(cls.estimate)
    assert list(est.parameters) == ["self", "reports", "epsilons", "identities"]
    _keyword_only_none(est, ["epsilons", "identities"])
    assert est.return_annotation in ("FrequencyEstimate", oracles.FrequencyEstimate)


@pytest.mark.parametrize("cls", RANDOMIZERS, ids=NAME)
def test_randomizer_privatize_signature(cls):
    priv = inspect.signature(cls.privatize)
    assert list(priv.parameters) == ["self", "u", "epsilons", "identities", "rng"]
    _keyword_only_none(priv, ["epsilons", "identities", "rng"])


@pytest.mark.parametrize("cls", HISTOGRAMS, ids=NAME)
def test_release_signatures(cls):
    for method in (cls.release, cls.release_result):
        sig = inspect.signature(method)
        assert list(sig.parameters) == ["self", "counts", "rng"]
        _keyword_only_none(sig, ["rng"])


@pytest.mark.parametrize("cls", ORACLES, ids=NAME)
@pytest.mark.parametrize("method", ["privatize", "estimate"])
def test_a_positional_budget_is_a_type_error_that_says_the_fix(cls, method):
    o = make(cls)
    reports = o.privatize(np.arange(20) % 10, rng=0)
    data = np.arange(20) % 10 if method == "privatize" else reports
    with pytest.raises(TypeError, match=r"pass epsilons=1\.0"):
        getattr(o, method)(data, 1.0)
    with pytest.raises(TypeError, match="pass epsilons=<one budget per report>"):
        getattr(o, method)(data, np.ones(20))


# ---------------------------------------------------------------- oracle results
@pytest.mark.parametrize("cls", ORACLES, ids=NAME)
def test_an_oracle_result_has_every_member_of_the_base(cls):
    o = make(cls)
    values = np.arange(300) % 10
    est = o.estimate(o.privatize(values, rng=1))
    assert isinstance(est, Result) and isinstance(est, oracles.FrequencyEstimate)
    assert est.estimate is est.counts
    assert est.estimate.shape == (10,)
    np.testing.assert_array_equal(est.std, np.sqrt(est.variances))
    np.testing.assert_array_equal(est.frequencies, est.counts / 300)
    assert est.n == 300
    assert isinstance(est.sanitization, SanitizationReport) and est.sanitization.n_valid == 300
    assert est.privacy == PrivacyStatement("local DP", "report", epsilon=1.0)
    assert est.categories is None
    frame = est.to_frame()
    assert list(frame.columns) == ["index", "estimate", "std", "frequency"]
    assert frame.shape == (10, 4)
    np.testing.assert_array_equal(frame["estimate"], est.counts)


@pytest.mark.parametrize("cls", ORACLES, ids=NAME)
def test_an_oracle_repr_is_short_on_a_large_domain(cls):
    if cls is oracles.RAPPOR:
        pytest.skip("RAPPOR decodes at most 8192 candidates (a D x D solve); its own test "
                    "checks the repr on 500")
    o = make(cls, domain_size=10_000, **({"n_hashes": 8} if cls is oracles.FLH else {}))
    est = o.estimate(o.privatize(np.arange(50) * 37, rng=0))
    text = repr(est)
    assert len(text) <= REPR_WIDTH and "\n" not in text
    # a FrequencyEstimate, or its subclass (CMS / HCMS: SketchEstimate)
    assert text.startswith(f"{type(est).__name__}(shape (10000,), n=50, epsilon=1 (local DP")


@pytest.mark.parametrize("cls", ORACLES, ids=NAME)
def test_personal_budgets_are_summarized_in_privacy(cls):
    if cls is oracles.RAPPOR:
        pytest.skip("one-time RAPPOR has one budget (tests/test_oracles_rappor.py checks the "
                    "refusal)")
    o = make(cls)
    eps = np.array([0.5, 1.0, 1.0, 2.0, 4.0] * 8)
    y = o.privatize(np.arange(40) % 10, epsilons=eps, rng=2)
    est = o.estimate(y, epsilons=eps)
    assert est.privacy.personal and est.privacy.epsilon is None
    assert (est.privacy.epsilon_min, est.privacy.epsilon_median, est.privacy.epsilon_max) == \
        (0.5, 1.0, 4.0)
    assert "epsilon in [0.5, 4], median 1" in repr(est)
    # the numbers are finalize(partial(...)); a partial keeps sums, not budgets
    fin = o.finalize(o.partial(y, eps))
    assert fin.counts.tobytes() == est.counts.tobytes()
    assert fin.privacy.personal and fin.privacy.epsilon_min is None
    # equal personal budgets are a plain epsilon
    same = o.estimate(y, epsilons=np.full(40, 2.0))
    assert same.privacy.epsilon == 2.0 and not same.privacy.personal


# ---------------------------------------------------------------- categories
LABELS = ["cherry", "apple", "banana", "date"]


@pytest.mark.parametrize("cls", ORACLES, ids=NAME)
def test_labels_encode_to_the_symbols_bit_for_bit(cls):
    """Privatizing labels is privatizing their positions in ``categories``."""
    plain = make(cls, domain_size=4)
    labelled = make(cls, categories=LABELS)
    assert labelled.domain_size == 4 and labelled.categories == tuple(LABELS)
    words = ["apple", "date", "cherry", "banana", "apple"] * 40
    codes = np.array([LABELS.index(w) for w in words])
    want = plain.privatize(codes, rng=3)
    for given in (words, np.array(words), np.array(words, dtype=object), pd.Series(words),
                  pd.Categorical(words), pd.Series(words, dtype="category"),
                  pd.Categorical(words, categories=["date", "banana", "apple", "cherry", "fig"])):
        got = labelled.privatize(given, rng=3)
        assert got.tobytes() == want.tobytes(), type(given)
    np.testing.assert_array_equal(labelled.encode(words), codes)


@pytest.mark.parametrize("cls", ORACLES, ids=NAME)
def test_a_labelled_result_shows_its_labels(cls):
    o = make(cls, categories=pd.Categorical(["z", "x", "y"], categories=["x", "y", "z"]))
    assert o.categories == ("x", "y", "z")  # a Categorical gives its categories, in order
    est = o.estimate(o.privatize(["z", "x", "x", "y"] * 25, rng=0))
    assert est.categories == ("x", "y", "z")
    text = repr(est)
    assert len(text) <= REPR_WIDTH and "x=" in text and "y=" in text and "z=" in text
    frame = est.to_frame()
    assert list(frame.columns) == ["category", "estimate", "std", "frequency"]
    assert frame["category"].tolist() == ["x", "y", "z"]
    assert "categories=['x', 'y', 'z']" in repr(o)


@pytest.mark.parametrize("cls", ORACLES, ids=NAME)
def test_a_label_that_is_not_a_category_is_named(cls):
    o = make(cls, categories=LABELS)
    with pytest.raises(ValueError, match=r"'values' parameter of \w+\.privatize.*"
                                         r"Got 'fig' at index 2 instead, which is not a category"):
        o.privatize(["apple", "date", "fig"], rng=0)
    with pytest.raises(ValueError, match="Got 'fig' at index 1"):
        o.privatize(pd.Categorical(["apple", "fig"]), rng=0)
    with pytest.raises(ValueError, match="Got 2 at index 0"):
        o.privatize([2, 0], rng=0)  # an oracle with labels takes labels, not symbols
    with pytest.raises(ValueError, match="'values' parameter"):
        o.privatize(np.array([["apple"]]), rng=0)


def test_integer_labels_are_labels():
    o = make(oracles.GRR, categories=[10, 20, 30])
    np.testing.assert_array_equal(o.encode(np.array([30, 10, 20, 20], dtype=np.uint8)),
                                  [2, 0, 1, 1])
    np.testing.assert_array_equal(o.encode([30, 10]), [2, 0])
    with pytest.raises(ValueError, match="Got 1 at index 0"):
        o.encode([1])
    with pytest.raises(ValueError, match="Got '10' at index 0"):
        o.encode(["10"])  # the string is not the integer label


@pytest.mark.parametrize("kwargs,exc,match", [
    ({"categories": ["a", "b"], "domain_size": 3}, ValueError,
     r"'domain_size' parameter of GRR must be len\(categories\) = 2"),
    ({"categories": ["a", "b", "a"]}, ValueError, "Got 'a' at indices 0 and 2"),
    ({"categories": ["a"]}, ValueError, "'categories' parameter of GRR must be between 2"),
    ({"categories": ["a", 1.5]}, TypeError, "Got 1.5 at index 1"),
    ({"categories": ["a", None]}, TypeError, "Got None at index 1"),
    ({"categories": "abc"}, TypeError, "'categories' parameter of GRR"),
    ({}, TypeError, r"'domain_size' parameter of GRR must be an int .* \(or categories="),
])
def test_bad_categories_name_the_parameter(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        oracles.GRR(epsilon=1.0, **kwargs)


@pytest.mark.parametrize("cls", ORACLES, ids=NAME)
def test_labelled_stream_params_rebuild_a_labelled_server(cls):
    client = make(cls, categories=LABELS)
    params = client.stream_params()
    assert params["categories"] == LABELS
    server = cls(**params)
    y = client.privatize(["apple", "banana"] * 30, rng=4)
    est = server.finalize(server.merge(server.partial(y[:20]),
                                       server.partial(y[20:], identities=np.arange(20, 60))))
    assert est.categories == tuple(LABELS)
    assert est.counts.tobytes() == client.estimate(y).counts.tobytes()
    assert "categories" not in make(cls).stream_params()  # unlabelled files are unchanged


# ---------------------------------------------------------------- randomizers
@pytest.mark.parametrize("cls", RANDOMIZERS, ids=NAME)
def test_a_randomizer_takes_its_own_budget_and_refuses_others(cls):
    q = cls(epsilon=1.5)
    u = np.linspace(-1, 1, 50)
    want = q.privatize(u, rng=9)
    for eps in (1.5, np.full(50, 1.5)):
        assert q.privatize(u, epsilons=eps, rng=9).tobytes() == want.tobytes()
    assert q.privatize(u, identities=np.arange(50), rng=9).tobytes() == want.tobytes()
    with pytest.raises(ValueError, match=r"'epsilons' parameter of \w+\.privatize must be None "
                                         r"or the randomizer's epsilon \(1\.5\)"):
        q.privatize(u, epsilons=2.0, rng=9)
    with pytest.raises(ValueError, match="'epsilons' parameter"):
        q.privatize(u, epsilons=np.r_[np.full(49, 1.5), 2.0], rng=9)
    with pytest.raises(ValueError, match="'identities' parameter"):
        q.privatize(u, identities=np.zeros(50, dtype=int), rng=9)


# ---------------------------------------------------------------- histograms
@pytest.mark.parametrize("cls", HISTOGRAMS, ids=NAME)
def test_a_histogram_release_result_has_every_member_of_the_base(cls):
    mech = cls(**HISTOGRAM_ARGS[cls])
    counts = np.arange(10_000) % 97
    out = mech.release_result(counts, rng=5)
    assert isinstance(out, Result) and isinstance(out, histograms.HistogramRelease)
    assert out.estimate is out.counts
    assert out.counts.tobytes() == mech.release(counts, rng=5).tobytes()
    assert out.n == 10_000
    assert out.variances is None and out.std is None and out.sanitization is None
    assert out.privacy.model == "zCDP" and out.privacy.unit == "person"
    # the worst group's budget (counts hold a 0): the statement depends on no data
    assert out.privacy.rho == float(mech.rho(0)) == float(np.max(mech.rho(counts)))
    text = repr(out)
    assert len(text) <= REPR_WIDTH and "\n" not in text
    assert text.startswith("HistogramRelease(shape (10000,), n=10000, rho=")
    assert "(zCDP, per person)" in text
    frame = out.to_frame()
    assert list(frame.columns) == ["index", "estimate"] and frame.shape == (10_000, 2)


def test_data_independent_release_positional_value_is_deprecated():
    with pytest.warns(DeprecationWarning, match=r"DataIndependentRelease\(value=0\.3\)"):
        old = histograms.DataIndependentRelease(0.3)
    assert old.value == 0.3
    np.testing.assert_array_equal(old.release([0, 5]), [0.3, 0.3])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert histograms.DataIndependentRelease(value=0.3).value == 0.3
        assert histograms.DataIndependentRelease().value == 0.5
    with pytest.raises(TypeError, match="takes keyword arguments only"):
        histograms.DataIndependentRelease(0.3, 0.4)
    with pytest.raises(TypeError, match="takes keyword arguments only.*Got 1 positional argument \\(0.3\\)"):
        histograms.DataIndependentRelease(0.3, value=0.4)
    with pytest.warns(DeprecationWarning), pytest.raises(ValueError, match="'value' parameter"):
        histograms.DataIndependentRelease(2.0)


def test_a_labelled_report_file_decodes_to_a_labelled_result(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.mechanisms import from_spec, mechanism_spec
    from fastldp.reports import decode_files, write_reports

    client = make(oracles.OLH, categories=LABELS)
    y = client.privatize(["date", "apple"] * 50, rng=6)
    path = write_reports(tmp_path / "r.parquet", client, y, row_group_size=30)
    server = from_spec(mechanism_spec(client))  # what `fastldp decode` rebuilds from the file
    got = decode_files(server, path)
    assert got.categories == tuple(LABELS)
    assert got.counts.tobytes() == client.estimate(y).counts.tobytes()
