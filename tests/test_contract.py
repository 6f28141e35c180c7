"""The API contract (docs/guide/contract.rst), checked on every public estimator of every family.

The estimators are found, not listed: every class in a family's ``__all__``
that privatizes and estimates (a decoder of reports), privatizes only (a
scalar randomizer), fits (a model) or releases (a central mechanism), less
the base classes the others derive from. A new estimator is therefore
checked as soon as it is exported; one without a small example below makes
:func:`test_every_decoder_has_an_example_here` fail, so that its result is
checked too. Where a family does not meet a rule yet, its case is marked
``xfail(strict=True)``: it turns into a failure the day the rule is met, so
the mark is removed then.
"""

from __future__ import annotations

import inspect
import re

import numpy as np
import pytest

import fastldp
from fastldp.results import REPR_WIDTH, PrivacyStatement, Result

#: every family the package lists (a new family is covered without an edit here)
FAMILIES = fastldp.FAMILIES

#: estimators the contract exempts from a budget, with its reason
NO_EPSILON = {
    "Lasso": "not private (the non-private reference of the regression family)",
    # the histogram mechanisms are set by their error and release a zCDP budget per group
    "ShiftedLogGaussian": "zCDP, calibrated by its error",
    "EqualNoiseGaussian": "zCDP, calibrated by its error",
    "DataIndependentRelease": "releases a public value, no budget",
}


def _kind(cls) -> str | None:
    def has(name):
        return callable(getattr(cls, name, None))

    if has("privatize") and has("estimate"):
        return "decoder"
    if has("privatize"):
        return "client"
    if has("fit"):
        return "model"
    if has("release"):
        return "release"
    return None


def _estimators() -> dict:
    found = {}
    for family in FAMILIES:
        module = getattr(fastldp, family)
        for name in module.__all__:
            obj = getattr(module, name)
            if (inspect.isclass(obj) and obj.__module__.startswith(module.__name__)
                    and _kind(obj) is not None):
                found[name] = (family, obj)
    # a base class (FrequencyOracle, Randomizer, RelationMechanism, RegressionEstimator) is
    # not an estimator: another found class derives from it, and it is not at the top level
    # (OLH is an estimator that BLH derives from)
    bases = {name for name, (_, cls) in found.items()
             if any(other is not cls and issubclass(other, cls) for _, other in found.values())
             and name not in fastldp.__all__}
    return {name: found[name] for name in sorted(found) if name not in bases}


ESTIMATORS = _estimators()
BY_KIND = {kind: sorted(n for n, (_, c) in ESTIMATORS.items() if _kind(c) == kind)
           for kind in ("decoder", "client", "model", "release")}
#: shared building blocks exported at the top level without an estimator's methods
BUILDING_BLOCKS = sorted(
    name for name in fastldp.__all__
    if name not in ESTIMATORS and inspect.isclass(getattr(fastldp, name, None))
    and getattr(fastldp, name).__module__.startswith("fastldp.regression.shuffle"))


def test_the_walk_finds_every_family_estimator():
    # the discovery must not pass vacuously: these are the estimators of this release
    known = {"GRR", "OLH", "FLH", "HadamardResponse", "OUE", "SUE", "Laplace", "Piecewise",
             "Duchi", "JPRS", "PaddedRelationSampling", "RPC", "PCKVUE", "PCKVGRR", "PrivKVM",
             "Succinct", "Collision", "U2R", "SampleSDP", "TwoStageSLR", "LDPIHT", "Lasso",
             "ShiftedLogGaussian", "EqualNoiseGaussian", "DataIndependentRelease"}
    assert known <= set(ESTIMATORS), known - set(ESTIMATORS)
    assert {"FrequencyOracle", "Randomizer", "RelationMechanism"}.isdisjoint(ESTIMATORS)
    assert {family for family, _ in ESTIMATORS.values()} == set(FAMILIES)
    assert {"ShuffledBits", "ShuffledVectorSum"} <= set(BUILDING_BLOCKS)


# ------------------------------------------------------------------ constructors
def _init_params(cls):
    return [p for p in list(inspect.signature(cls.__init__).parameters.values())[1:]
            if p.kind is not p.VAR_KEYWORD]


@pytest.mark.parametrize("name", sorted(ESTIMATORS) + BUILDING_BLOCKS)
def test_constructors_are_keyword_only(name):
    cls = getattr(fastldp, name)
    params = _init_params(cls)
    assert params, f"{name}.__init__ takes no parameters"
    positional = [p.name for p in params if p.kind is not p.KEYWORD_ONLY]
    assert not positional, f"{name}({', '.join(positional)}, ...) takes them positionally"


@pytest.mark.parametrize("name", sorted(ESTIMATORS) + BUILDING_BLOCKS)
def test_the_budget_is_epsilon_never_eps(name):
    cls = getattr(fastldp, name)
    names = [p.name for p in _init_params(cls)]
    for method in ("privatize", "estimate", "fit", "release", "partial"):
        if callable(getattr(cls, method, None)):
            names += list(inspect.signature(getattr(cls, method)).parameters)
    wrong = [n for n in names if re.match(r"eps(?!ilon)", n)]
    assert not wrong, f"{name} names a budget {wrong}: the contract's name is epsilon"
    if name not in NO_EPSILON:
        assert "epsilon" in [p.name for p in _init_params(cls)], f"{name} has no epsilon="


# ------------------------------------------------------------------ privatize / estimate
def _check_keywords(cls, method: str, keywords: tuple, data: int = 1):
    """``method(<data positional parameters>, *, <keywords>=None, <optional extras>)``."""
    params = list(inspect.signature(getattr(cls, method)).parameters.values())[1:]
    positional = [p for p in params if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
    assert len(positional) == data, (
        f"{cls.__name__}.{method} takes {[p.name for p in positional]} positionally; "
        f"the contract has {data} data argument(s) only")
    assert all(p.default is inspect.Parameter.empty for p in positional)
    by_name = {p.name: p for p in params}
    for keyword in keywords:
        p = by_name.get(keyword)
        assert p is not None, f"{cls.__name__}.{method} has no {keyword}="
        assert p.kind is p.KEYWORD_ONLY, f"{cls.__name__}.{method}'s {keyword} is not keyword-only"
        assert p.default is None, f"{cls.__name__}.{method}'s {keyword} defaults to {p.default!r}"
    others = [p for p in params[data:] if p.name not in keywords]
    for p in others:  # family extras (PrivKVM's forged=) are keyword-only and optional
        assert p.kind is p.KEYWORD_ONLY and p.default is not inspect.Parameter.empty, p
    assert all(p.kind is not p.VAR_POSITIONAL for p in params)


@pytest.mark.parametrize("name", BY_KIND["decoder"] + BY_KIND["client"])
def test_privatize_signature(name):
    _check_keywords(getattr(fastldp, name), "privatize", ("epsilons", "identities", "rng"))


@pytest.mark.parametrize("name", BY_KIND["decoder"])
def test_estimate_signature(name):
    _check_keywords(getattr(fastldp, name), "estimate", ("epsilons", "identities"))


@pytest.mark.parametrize("name", BY_KIND["model"])
def test_fit_signature_follows_scikit_learn(name):
    _check_keywords(getattr(fastldp, name), "fit", ("users", "rng"), data=2)
    params = list(inspect.signature(getattr(fastldp, name).fit).parameters)
    assert params[1:3] == ["X", "y"]
    for method in ("get_params", "set_params", "predict"):
        assert callable(getattr(getattr(fastldp, name), method, None)), f"{name}.{method}"


@pytest.mark.parametrize("name", BY_KIND["release"])
def test_release_signature(name):
    _check_keywords(getattr(fastldp, name), "release", ("rng",))


# ------------------------------------------------------------------ results
def _vectors(n, d, m, rng):
    x = np.zeros((n, d))
    keys = np.argsort(rng.random((n, d)), axis=1)[:, :m]
    x[np.arange(n)[:, None], keys] = 1.0
    return x


#: per decoder: a mechanism with a large estimate (the repr must stay short) and its data
DECODER_EXAMPLES = {
    **{name: (lambda cls=name: getattr(fastldp, cls)(domain_size=5000, epsilon=2.0,
                                                     codebook_seed=1),
              lambda rng: rng.integers(0, 5000, 300))
       for name in ("GRR", "OLH", "FLH", "HadamardResponse", "OUE", "SUE", "CMS", "HCMS",
                    "SubsetSelection", "BLH", "AdaptiveOracle", "SHE", "THE", "DiscreteSHE")},
    # RAPPOR decodes by a D x D least-squares solve: 1200 candidates, 16 cohorts of 128 bits
    # memoized two-round oracles: epsilon is epsilon_1, the budget of one report
    **{name: (lambda cls=name: getattr(fastldp, cls)(domain_size=5000, epsilon_inf=4.0,
                                                     epsilon_1=2.0, codebook_seed=1),
              lambda rng: rng.integers(0, 5000, 300))
       for name in ("LGRR", "LOUE", "LOSUE", "LSUE", "LSOUE")},
    "RAPPOR": (lambda: fastldp.RAPPOR(domain_size=1200, epsilon=2.0, n_bits=128, n_cohorts=16,
                                      codebook_seed=1),
               lambda rng: rng.integers(0, 1200, 300)),
    # full RAPPOR decodes 1200 candidates by least squares; dBitFlipPM at D = 5000 buckets
    "LongitudinalRAPPOR": (lambda: fastldp.LongitudinalRAPPOR(
        domain_size=1200, n_bits=128, n_cohorts=16, epsilon_inf=4.0, epsilon=1.0,
        codebook_seed=1), lambda rng: rng.integers(0, 1200, 300)),
    "DBitFlipPM": (lambda: fastldp.DBitFlipPM(domain_size=5000, n_sampled=4, epsilon_inf=4.0,
                                              epsilon=2.0, codebook_seed=1),
                   lambda rng: rng.integers(0, 5000, 300)),
    "JPRS": (lambda: fastldp.JPRS(shape=(100, 100), k=2, s=50, epsilon=1.0, codebook_seed=1),
             lambda rng: [np.array([[i % 100, (3 * i) % 100]]) for i in range(300)]),
    "PaddedRelationSampling": (
        lambda: fastldp.PaddedRelationSampling(shape=(100, 100), k=2, s=50, oracle="olh",
                                               epsilon=1.0, codebook_seed=1),
        lambda rng: [np.array([[i % 100, (3 * i) % 100]]) for i in range(300)]),
    "RPC": (lambda: fastldp.RPC(d=2000, m=3, epsilon=1.0, codebook_seed=1),
            lambda rng: _vectors(300, 2000, 3, rng)),
    "PCKVUE": (lambda: fastldp.PCKVUE(d=2000, m=3, epsilon=1.0),
               lambda rng: _vectors(300, 2000, 3, rng)),
    "PCKVGRR": (lambda: fastldp.PCKVGRR(d=2000, m=3, epsilon=1.0),
                lambda rng: _vectors(300, 2000, 3, rng)),
    "PrivKVM": (lambda: fastldp.PrivKVM(d=2000, m=3, epsilon=1.0),
                lambda rng: _vectors(300, 2000, 3, rng)),
    "Succinct": (lambda: fastldp.Succinct(d=2000, m=3, epsilon=1.0, R=2.0, codebook_seed=1),
                 lambda rng: _vectors(300, 2000, 3, rng)),
    "Collision": (lambda: fastldp.Collision(d=2000, m=3, epsilon=1.0, codebook_seed=1),
                  lambda rng: _vectors(300, 2000, 3, rng)),
    # heavy hitters: the top k = 1500 of 2^16 items (two levels: 2^12 prefixes, then 24,000)
    "PEM": (lambda: fastldp.PEM(epsilon=2.0, k=1500, item_bits=16, codebook_seed=1),
            lambda rng: rng.integers(0, 2**16, 300)),
    # TreeHist without a threshold keeps the top c k = 1500 prefixes per level; SFP assembles
    # 2 x 4096 combinations of 8-bit fragments (1-bit puzzle) and keeps the top 1500
    "TreeHist": (lambda: fastldp.TreeHist(epsilon=2.0, k=1500, c=1, eta=4, threshold=None,
                                          item_bits=16, codebook_seed=1),
                 lambda rng: rng.integers(0, 2**16, 300)),
    "SFP": (lambda: fastldp.SFP(epsilon=2.0, k=1500, c=1, fragment_bits=8, puzzle_bits=1,
                                item_bits=16, codebook_seed=1),
            lambda rng: rng.integers(0, 2**16, 300)),
    # multi-attribute records: 3 attributes of 400, 500 and 600 values (1,500 counts), a
    # joint domain of 40 x 30, numeric vectors of 1,200 coordinates in [-1, 1]
    **{name: (lambda cls=name: getattr(fastldp, cls)(domain_sizes=[400, 500, 600], epsilon=2.0,
                                                     codebook_seed=1),
              lambda rng: np.stack([rng.integers(0, m, 300) for m in (400, 500, 600)], axis=1))
       for name in ("SPL", "SMP", "RSpFD")},
    "FullDomain": (lambda: fastldp.FullDomain(domain_sizes=[40, 30], epsilon=2.0,
                                              codebook_seed=1),
                   lambda rng: np.stack([rng.integers(0, 40, 300), rng.integers(0, 30, 300)],
                                        axis=1)),
    **{name: (lambda cls=name: getattr(fastldp, cls)(dimension=1200, epsilon=2.0),
              lambda rng: rng.uniform(-1.0, 1.0, (300, 1200)))
       for name in ("SampledMean", "SplitMean")},
    # multi-attribute records over time (the longitudinal family): 1,500 counts
    **{name: (lambda cls=name: getattr(fastldp, cls)(domain_sizes=[400, 500, 600],
                                                     epsilon_inf=4.0, epsilon_1=2.0,
                                                     codebook_seed=1),
              lambda rng: np.stack([rng.integers(0, m, 300) for m in (400, 500, 600)], axis=1))
       for name in ("LSPL", "LSMP")},    # ranges over 5,000 ordered values (a hierarchy of B = 4: 7 levels, padded to 4^7 leaves)
    **{name: (lambda cls=name: getattr(fastldp, cls)(epsilon=2.0, domain_size=5000,
                                                     codebook_seed=1),
              lambda rng: rng.integers(0, 5000, 300))
       for name in ("FlatRange", "HierarchicalHistogram", "HaarHRR")},
    # Square Wave's reconstruction over 2,048 bins of [0, 1]
    "SquareWave": (lambda: fastldp.SquareWave(epsilon=2.0, bins=2048),
                   lambda rng: rng.beta(5.0, 2.0, 300)),
    # marginal release (issue 36): binary attributes for Cormode et al.'s six, categorical for CALM
    **{n: (lambda cls=n: getattr(fastldp, cls)(n_attributes=11, epsilon=2.0, codebook_seed=1),
           lambda rng: rng.integers(0, 2, (300, 11))) for n in ("InpRR", "InpPS")},
    **{n: (lambda cls=n: getattr(fastldp, cls)(n_attributes=40, k=2, epsilon=2.0, codebook_seed=1),
           lambda rng: rng.integers(0, 2, (300, 40)))
       for n in ("InpHT", "MargRR", "MargPS", "MargHT")},
    "CALM": (lambda: fastldp.CALM(domain_sizes=[40, 30], epsilon=2.0, codebook_seed=1),
             lambda rng: np.stack([rng.integers(0, 40, 300), rng.integers(0, 30, 300)], axis=1)),
}


def test_every_decoder_has_an_example_here():
    assert set(BY_KIND["decoder"]) == set(DECODER_EXAMPLES), (
        "add a small example of each new decoder to DECODER_EXAMPLES")


def _check_result(result, n_reports: int, owner: str):
    assert isinstance(result, Result), f"{owner} returns a {type(result).__name__}, not a Result"
    est = result.estimate
    assert isinstance(est, np.ndarray) and est.size > 1000, owner
    assert result.n == n_reports, f"{owner}: n = {result.n}, not the {n_reports} reports"
    assert isinstance(result.privacy, PrivacyStatement), owner
    assert result.privacy.model and result.privacy.unit, owner
    if result.variances is None:
        assert result.std is None
    else:
        assert np.shape(result.variances) == est.shape
        np.testing.assert_array_equal(result.std, np.sqrt(result.variances))
    text = repr(result)
    assert len(text) <= REPR_WIDTH and "\n" not in text, f"{owner}: {len(text)} characters"
    assert type(result).__name__ in fastldp.__all__, f"{type(result).__name__} not exported"
    assert getattr(fastldp, type(result).__name__) is type(result)
    pd = pytest.importorskip("pandas")
    frame = result.to_frame()
    assert isinstance(frame, pd.DataFrame) and len(frame) == est.size
    assert "estimate" in frame.columns
    assert ("std" in frame.columns) == (result.std is not None)


@pytest.mark.parametrize("name", sorted(DECODER_EXAMPLES))
def test_decoders_return_a_result_on_the_shared_base(name):
    make, data = DECODER_EXAMPLES[name]
    mech = make()
    reports = mech.privatize(data(np.random.default_rng(0)), rng=1)
    result = mech.estimate(reports)
    _check_result(result, 300, f"{name}.estimate")
    assert result.sanitization is not None, f"{name}: decoders of reports count sanitization"
    assert result.privacy.epsilon == mech.epsilon
    # the same result from the contract's keyword budget
    again = mech.estimate(reports, epsilons=mech.epsilon)
    np.testing.assert_array_equal(again.estimate, result.estimate)


HISTOGRAM_EXAMPLES = {
    "ShiftedLogGaussian": lambda: fastldp.ShiftedLogGaussian(r=0.5),
    "EqualNoiseGaussian": lambda: fastldp.EqualNoiseGaussian(scale=3.0),
    "DataIndependentRelease": lambda: fastldp.DataIndependentRelease(value=0.5),
}


@pytest.mark.parametrize("name", BY_KIND["release"])
def test_releases_return_a_result_on_the_shared_base(name):
    mech = HISTOGRAM_EXAMPLES[name]()
    counts = np.random.default_rng(0).integers(0, 50, 3000).astype(float)
    _check_result(mech.release_result(counts, rng=0), 3000, f"{name}.release_result")


def _regression_data():
    rng = np.random.default_rng(0)
    X = rng.uniform(-1, 1, (400, 8))
    return X, 0.5 * X[:, 0] + rng.normal(0, 0.1, 400), np.repeat(np.arange(100), 4)


REGRESSION_EXAMPLES = {
    "U2R": lambda: fastldp.U2R(epsilon=1.0, delta=1e-5, k=2, rows_per_user=4),
    "TwoStageSLR": lambda: fastldp.TwoStageSLR(epsilon=1.0, k=2, rows_per_user=4),
    "SampleSDP": lambda: fastldp.SampleSDP(epsilon=1.0, delta=1e-5),
    "LDPIHT": lambda: fastldp.LDPIHT(epsilon=1.0, k=2),
    "Lasso": lambda: fastldp.Lasso(alpha=0.1),
}


@pytest.mark.parametrize("name", BY_KIND["model"])
def test_fit_returns_self_and_states_its_privacy(name):
    model = REGRESSION_EXAMPLES[name]()
    X, y, users = _regression_data()
    per_user = "rows_per_user" in inspect.signature(type(model).__init__).parameters
    assert model.fit(X, y, users=users if per_user else None, rng=0) is model
    learned = [a for a in vars(model) if a.endswith("_") and not a.startswith("_")]
    assert "coef_" in learned and "privacy_" in learned, learned
    privacy = model.privacy_
    for field in ("model", "unit", "epsilon"):
        assert hasattr(privacy, field), f"{name}.privacy_ does not say its {field}"


# ------------------------------------------------------------------ top level
@pytest.mark.parametrize("name", sorted(ESTIMATORS) + BUILDING_BLOCKS)
def test_every_estimator_is_at_the_top_level(name):
    family, cls = ESTIMATORS.get(name, (None, getattr(fastldp, name)))
    assert name in fastldp.__all__
    assert getattr(fastldp, name) is cls
    if family is not None:
        assert name in getattr(fastldp, family).__all__


# ------------------------------------------------------------------ longitudinal: one dialect
#: per longitudinal protocol, the parameters besides the budgets (a small domain)
LONGITUDINAL_OTHERS = {"LongitudinalRAPPOR": {"n_bits": 32, "n_cohorts": 4},
                       "DBitFlipPM": {"n_sampled": 2}}
#: the multi-attribute protocols take one domain size per attribute
LONGITUDINAL_DOMAIN = {"LSPL": {"domain_sizes": [8, 8]}, "LSMP": {"domain_sizes": [8, 8]}}
LONGITUDINAL = sorted(n for n, (family, _) in ESTIMATORS.items() if family == "longitudinal")


def test_the_longitudinal_walk_finds_every_protocol():
    assert {"LGRR", "LOUE", "LOSUE", "LSUE", "LSOUE", "LongitudinalRAPPOR",
            "DBitFlipPM"} <= set(LONGITUDINAL)


@pytest.mark.parametrize("name", LONGITUDINAL)
def test_every_longitudinal_protocol_takes_epsilon_inf_and_epsilon_1(name):
    # issue 37, item 3: DBitFlipPM and LongitudinalRAPPOR refused epsilon_1 (a TypeError)
    cls = getattr(fastldp, name)
    make = lambda **kw: cls(codebook_seed=1,  # noqa: E731
                            **LONGITUDINAL_DOMAIN.get(name, {"domain_size": 64}),
                            **LONGITUDINAL_OTHERS.get(name, {}), **kw)
    mech = make(epsilon_inf=4.0, epsilon_1=1.0)
    assert mech.epsilon_inf == 4.0 and mech.epsilon_1 == pytest.approx(1.0, rel=1e-12)
    # epsilon (the contract's name) is the same budget
    same = make(epsilon_inf=4.0, epsilon=1.0)
    assert same.stream_params() == mech.stream_params()
    assert mech.privacy().epsilon == pytest.approx(1.0, rel=1e-12)
    with pytest.raises(ValueError, match=rf"{name}.*another name.*epsilon_1=1\.0.*epsilon=1\.0"):
        make(epsilon_inf=4.0, epsilon_1=1.0, epsilon=1.0)
    # checked against epsilon_inf, and the error names the keyword the user gave
    with pytest.raises(ValueError, match=rf"'epsilon_1' parameter of {name}.*Got 5\.0"):
        make(epsilon_inf=4.0, epsilon_1=5.0)
    with pytest.raises(ValueError, match=rf"'epsilon_1' parameter of {name}.*Got nan"):
        make(epsilon_inf=4.0, epsilon_1=float("nan"))


def test_a_second_round_budget_set_by_other_parameters_is_derived_reported_or_checked():
    # LongitudinalRAPPOR's epsilon_1 follows from (f, p, q), DBitFlipPM's from gamma: derived
    # and stated when they are given, refused (naming epsilon_1) when both are
    rappor = fastldp.LongitudinalRAPPOR(domain_size=20, k=128, h=2, m=64, f=0.5, p=0.5,
                                        q=0.75, codebook_seed=3)
    assert rappor.epsilon_1 == pytest.approx(1.074285864166728, rel=1e-12)
    assert rappor.privacy().epsilon == rappor.epsilon_1
    assert rappor.privacy().epsilon_inf == rappor.epsilon_inf
    dbf = fastldp.DBitFlipPM(domain_size=16, n_sampled=2, epsilon_inf=2.0, gamma=0.3,
                             codebook_seed=1)
    e = np.exp(1.0)  # P* / Q* at epsilon_inf = 2 and gamma = 0.3 (module docstring)
    p_star, q_star = 0.7 * e / (e + 1) + 0.15, 0.7 / (e + 1) + 0.15
    assert dbf.epsilon_1 == pytest.approx(2 * np.log(p_star / q_star), rel=1e-12)
    assert dbf.privacy().epsilon == dbf.epsilon_1
    with pytest.raises(ValueError, match=r"'epsilon_1' parameter of LongitudinalRAPPOR sets "
                                         r"p = 1 - q: pass epsilon_1 or \(p, q\)"):
        fastldp.LongitudinalRAPPOR(domain_size=20, p=0.5, q=0.75, epsilon_1=1.0)
    with pytest.raises(ValueError, match=r"'epsilon_1' parameter of DBitFlipPM sets gamma"):
        fastldp.DBitFlipPM(domain_size=16, epsilon_inf=2.0, gamma=0.3, epsilon_1=1.0)


# ------------------------------------------------------------------ constructor messages
# every family's shared base derives from fastldp._validation.KeywordOnly (the protocol's
# mixins for the streaming and audited families, the histograms' classes themselves)
@pytest.mark.parametrize("name", sorted(ESTIMATORS))
def test_constructor_errors_name_the_class_the_rule_and_the_nearest_keyword(name):
    # issue 37, item 6: Python's message named the base's __init__ and no rule
    cls = getattr(fastldp, name)
    with pytest.raises(TypeError, match=rf"^{name} takes keyword arguments only .*"
                                        rf"Got 2 positional arguments \(16, 1\.0\)"):
        cls(16, 1.0)
    if name not in NO_EPSILON:
        with pytest.raises(TypeError, match=rf"^{name} has no parameter 'eps' \(did you mean "
                                            r"'epsilon'\?\)\. Its keyword arguments: .*epsilon"):
            cls(eps=1.0)


def test_a_constructor_s_own_type_error_is_kept():
    # the call binds: the message is the constructor's own (the budget's two names)
    with pytest.raises(TypeError, match=r"missing the required keyword argument 'epsilon' "
                                        r"\(or its paper name 'epsilon_1'\)"):
        fastldp.LGRR(domain_size=16, epsilon_inf=4.0)
    with pytest.raises(TypeError, match=r"^LGRR\(\) missing the required keyword argument "
                                        r"'epsilon_inf': LGRR\(domain_size=\.\.\., "
                                        r"epsilon_inf=\.\.\.\)"):
        fastldp.LGRR(domain_size=16)
    with pytest.raises(TypeError, match=r"'eps_inf' \(did you mean 'epsilon_inf'\?\)"):
        fastldp.DBitFlipPM(domain_size=16, eps_inf=4.0)
