"""AdaptiveOracle and make_oracle: the choice is the argmin of the exact variances, and the
adaptive oracle is the chosen one, bit for bit (reports, estimates, partials, report files)."""

import json
import math
import re

import numpy as np
import pytest

import fastldp
from _merging import merge_in_order
from fastldp.oracles import (FREQUENCY_ORACLES, AdaptiveOracle, FrequencyOracle, make_oracle)
from fastldp.oracles.adaptive import CANDIDATES, choose_oracle, oracle_variances
from fastldp.oracles.subset import optimal_subset_size

DOMAINS = [2, 3, 4, 5, 6, 8, 11, 16, 32, 64, 128, 1000, 4096]
BUDGETS = [0.1, 0.25, 0.5, 0.75, 1.0, math.log(2), 1.5, 2.0, math.log(8), 2.5, 3.0, 4.0, 5.0,
           6.0, 8.0, 10.0]


def formulas(D, eps):
    """Each candidate's sigma^2, written here from the papers' formulas."""
    e = math.exp(eps)
    a, M = math.expm1(eps), D - 1
    g = int(np.rint(e)) + 1
    p = e / (e + g - 1)
    return {
        "grr": (e + D - 2) / (e - 1) ** 2,
        "oue": 4 * e / (e - 1) ** 2,
        "ss": min((a * (k - 1) + M) * (a * k + M) / (a * a * k * (D - k)) for k in range(1, D)),
        "olh": (1 / g) * (1 - 1 / g) / (p - 1 / g) ** 2,
        "blh": ((e + 1) / (e - 1)) ** 2,
    }


def argmin(var, names):
    best = min(var[n] for n in names)
    return next(n for n in CANDIDATES if n in names and var[n] <= best * (1 + 1e-9))


# ---------------------------------------------------------------- the choice
@pytest.mark.parametrize("D", DOMAINS)
def test_the_choice_is_the_argmin_of_the_exact_variances(D):
    for eps in BUDGETS:
        want = formulas(D, eps)
        got = oracle_variances(D, eps)
        assert list(got) == list(CANDIDATES)
        for name in CANDIDATES:
            assert got[name] == pytest.approx(want[name], rel=1e-9), (D, eps, name)
        chosen = AdaptiveOracle(domain_size=D, epsilon=eps, codebook_seed=0).chosen
        assert chosen == argmin(want, CANDIDATES) == choose_oracle(D, eps), (D, eps)
        # with every candidate the choice is GRR or SS, GRR exactly where SS's best size is 1
        assert chosen in ("grr", "ss")
        assert (chosen == "grr") == (int(optimal_subset_size(D, eps)) == 1)
        for names in (("oue", "olh"), ("olh", "blh"), ("grr", "oue", "olh", "blh"), ("ss",)):
            restricted = AdaptiveOracle(domain_size=D, epsilon=eps, candidates=names,
                                        codebook_seed=0)
            assert restricted.chosen == argmin(want, names), (D, eps, names)


@pytest.mark.parametrize("D", list(range(2, 40)) + [60, 100, 1000])
def test_without_subset_selection_the_choice_is_the_rule_of_thumb(D):
    # GRR against OUE is (e + D - 2) < 4 e, i.e. D < 3 e^eps + 2; OLH never beats OUE
    for eps in np.linspace(0.05, 4.0, 40):
        edge = 3 * math.exp(eps) + 2
        chosen = choose_oracle(D, eps, ("grr", "oue", "olh", "blh"))
        if abs(D - edge) > 1e-6 * D:  # where the formulas do not tie
            assert chosen == ("grr" if D < edge else "oue"), (D, eps)
        if choose_oracle(D, eps) == "grr":  # GRR is chosen only where it beats OUE
            assert D < edge + 1e-6 * D


def test_the_docstring_table_is_the_computed_choice():
    doc = AdaptiveOracle.__doc__
    header = re.search(r"^\s+D((?:\s+[\d.]+)+)\s*$", doc, re.M)
    budgets = [float(v) for v in header.group(1).split()]
    rows = re.findall(r"^\s+(\d+)((?:\s+(?:GRR|SS))+)\s*$", doc, re.M)
    assert len(rows) >= 4
    for D, names in rows:
        for eps, name in zip(budgets, names.split()):
            assert choose_oracle(int(D), eps) == name.lower(), (D, eps)


def test_ties_go_to_the_simpler_oracle():
    # SS with one symbol is GRR; OLH at e^eps = 3 has g = 4 and OUE's variance
    assert choose_oracle(4, 3.0) == "grr" and int(optimal_subset_size(4, 3.0)) == 1
    var = oracle_variances(100, math.log(3), ("oue", "olh"))
    assert var["olh"] == pytest.approx(var["oue"], rel=1e-12)
    assert choose_oracle(100, math.log(3), ("olh", "oue")) == "oue"


# ---------------------------------------------------------------- the chosen oracle, bit for bit
CASES = {
    "grr": dict(domain_size=4, epsilon=2.0),
    "ss": dict(domain_size=300, epsilon=1.0),
    "oue": dict(domain_size=40, epsilon=1.0, candidates=["olh", "oue"]),
    "olh": dict(domain_size=40, epsilon=1.0, candidates=("olh",)),
    "blh": dict(domain_size=40, epsilon=0.8, candidates={"blh"}),
}


def _pair(name, **extra):
    kw = dict(CASES[name], codebook_seed=17, n_threads=2, **extra)
    auto = AdaptiveOracle(**kw)
    kw.pop("candidates", None)
    return auto, FREQUENCY_ORACLES[name](**kw)


def _same(a, b):
    assert a.counts.tobytes() == b.counts.tobytes()
    assert a.variances.tobytes() == b.variances.tobytes()
    assert a.sanitization == b.sanitization and a.n == b.n and a.privacy == b.privacy


@pytest.mark.parametrize("name", sorted(CASES))
def test_the_adaptive_oracle_is_the_chosen_oracle(name):
    auto, direct = _pair(name)
    assert auto.chosen == name and type(auto.oracle) is type(direct)
    assert auto.uses_identities == direct.uses_identities
    rng = np.random.default_rng(1)
    n, D = 900, auto.domain_size
    x = rng.integers(0, D, n)
    ids = rng.choice(2**40, n, replace=False).astype(np.uint64)
    for eps in (None, rng.choice([0.5, 1.0, 3.0], n)):
        y = auto.privatize(x, epsilons=eps, identities=ids, rng=7)
        assert y.tobytes() == direct.privatize(x, epsilons=eps, identities=ids, rng=7).tobytes()
        _same(auto.estimate(y, epsilons=eps, identities=ids),
              direct.estimate(y, epsilons=eps, identities=ids))
        # malformed reports: sanitized and counted as the chosen oracle does
        bad = y.astype(object)
        bad[:3] = "x" if bad.ndim == 1 else [["x"] * bad.shape[1]] * 3
        got = auto.estimate(bad, epsilons=eps, identities=ids)
        _same(got, direct.estimate(bad, epsilons=eps, identities=ids))
        assert got.sanitization.by_reason["non_numeric"] == 3
        # the array layer too
        e = auto._budgets(eps, n, "t")
        np.testing.assert_array_equal(auto.variances(e), direct.variances(e))
        np.testing.assert_array_equal(auto.held_variances(e), direct.held_variances(e))


@pytest.mark.parametrize("name", sorted(CASES))
def test_partials_merge_and_rebuild_the_same_choice(name):
    auto, direct = _pair(name)
    rng = np.random.default_rng(2)
    n = 600
    x = rng.integers(0, auto.domain_size, n)
    eps = rng.uniform(0.5, 3.0, n)
    ids = np.arange(n, dtype=np.uint64)
    y = auto.privatize(x, epsilons=eps, rng=3)
    want = auto.estimate(y, epsilons=eps)
    params = auto.stream_params()
    assert json.loads(json.dumps(params)) == params
    assert ("candidates" in params) == ("candidates" in CASES[name])
    twin = AdaptiveOracle(**params)
    assert twin.chosen == auto.chosen and twin.stream_params() == params
    cuts = [0, 100, 100, 450, n]
    parts = [auto.partial(y[a:b], eps[a:b], ids[a:b]) for a, b in zip(cuts[:-1], cuts[1:])]
    assert parts[0].mechanism == "AdaptiveOracle" and parts[0].params == params
    merged = merge_in_order(twin, parts, "tree", seed=1)
    got = twin.finalize(merged)
    assert got.counts.tobytes() == want.counts.tobytes()
    assert got.variances.tobytes() == want.variances.tobytes()
    # the numbers of the chosen oracle's own partial
    assert got.counts.tobytes() == direct.finalize(direct.partial(y, eps, ids)).counts.tobytes()
    with pytest.raises(ValueError):
        direct.finalize(merged)  # a partial is bound to the oracle that made it


def test_a_report_file_names_the_adaptive_oracle_and_decodes_bit_identically(tmp_path):
    pytest.importorskip("pyarrow")
    from fastldp.mechanisms import STREAMING, from_spec, mechanism_spec
    from fastldp.reports import ReportFile, decode_files, write_reports

    assert STREAMING["AdaptiveOracle"] is AdaptiveOracle
    for kw in (dict(domain_size=300, epsilon=1.0), dict(domain_size=40, epsilon=1.0,
                                                      candidates=["olh", "blh"])):
        auto = AdaptiveOracle(**kw, codebook_seed=8)
        y = auto.privatize(np.arange(1000) % auto.domain_size, rng=4)
        path = write_reports(tmp_path / f"{auto.chosen}.parquet", auto, y, row_group_size=300)
        spec = ReportFile(path).spec
        assert spec == mechanism_spec(auto) and spec["mechanism"] == "AdaptiveOracle"
        server = from_spec(spec)
        assert server.chosen == auto.chosen
        got, want = decode_files(server, path), auto.estimate(y)
        assert got.counts.tobytes() == want.counts.tobytes()
        assert got.variances.tobytes() == want.variances.tobytes()


def test_categories_and_what_only_the_chosen_oracle_has():
    auto = AdaptiveOracle(epsilon=1.0, categories=[f"c{i}" for i in range(300)], codebook_seed=2)
    assert auto.chosen == "ss" and auto.domain_size == 300
    assert auto.n_bytes == 38 == auto.oracle.n_bytes        # SubsetSelection's attributes
    assert auto.subset_sizes(np.array([1.0]))[0] == auto.oracle.subset_sizes(np.array([1.0]))[0]
    est = auto.estimate(auto.privatize(["c5", "c7", "c5"] * 100, rng=0))
    assert est.categories == auto.categories and est.n == 300
    grr = AdaptiveOracle(domain_size=3, epsilon=3.0, codebook_seed=2)
    with pytest.raises(AttributeError):
        grr.n_bytes  # noqa: B018 - GRR has no packed rows
    assert grr.channel(3.0).shape == (3, 3)


# ---------------------------------------------------------------- the constructor, make_oracle
def test_repr_says_what_was_chosen():
    auto = AdaptiveOracle(domain_size=300, epsilon=1.0, codebook_seed=2)
    assert repr(auto) == ("AdaptiveOracle(domain_size=300, epsilon=1.0, codebook_seed=2)"
                          "  # chose SubsetSelection")
    auto = AdaptiveOracle(domain_size=30, epsilon=1.0, candidates=("olh", "oue"), codebook_seed=2)
    assert repr(auto) == ("AdaptiveOracle(domain_size=30, epsilon=1.0, candidates=['oue', 'olh'],"
                          " codebook_seed=2)  # chose OUE")
    assert auto.candidate_variances == oracle_variances(30, 1.0, ["oue", "olh"])


@pytest.mark.parametrize("kw,exc,match", [
    ({"epsilon": None}, TypeError, "'epsilon' parameter of AdaptiveOracle"),
    ({"epsilon": -1.0}, ValueError, "'epsilon' parameter of AdaptiveOracle"),
    ({"epsilon": 1.0, "candidates": ["grr", "hr"]}, ValueError,
     "'candidates' parameter of AdaptiveOracle.*Got 'hr'"),
    ({"epsilon": 1.0, "candidates": []}, ValueError, "'candidates' parameter of AdaptiveOracle"),
    ({"epsilon": 1.0, "candidates": "grr"}, TypeError, "'candidates' parameter"),
    ({"epsilon": 1.0, "candidates": 3}, TypeError, "'candidates' parameter"),
])
def test_bad_parameters_are_named(kw, exc, match):
    with pytest.raises(exc, match=match):
        AdaptiveOracle(domain_size=10, **kw)


def test_make_oracle_builds_every_oracle_by_name():
    for name in ("grr", "olh", "flh", "hr", "oue", "sue", "ss", "blh"):
        cls = FREQUENCY_ORACLES[name]
        kw = {"n_hashes": 8} if name == "flh" else {}
        o = make_oracle(name.upper(), domain_size=12, epsilon=1.0, codebook_seed=3, **kw)
        assert type(o) is cls and o.codebook_seed == 3
    auto = make_oracle("auto", domain_size=4, epsilon=2.0, codebook_seed=3)
    assert isinstance(auto, AdaptiveOracle) and isinstance(auto, FrequencyOracle)
    assert auto.chosen == "grr"
    with pytest.raises(ValueError, match=r"'name' parameter of make_oracle must be one of "
                                         r"'auto', 'grr'.*Got 'rappor2' instead"):
        make_oracle("rappor2", domain_size=4, epsilon=1.0)
    with pytest.raises(TypeError):
        make_oracle("grr", domain_size=4, epsilon=1.0, bogus=1)


def test_the_classes_are_exported():
    for name in ("SubsetSelection", "BLH", "AdaptiveOracle"):
        assert getattr(fastldp, name) is getattr(fastldp.oracles, name)
    assert FREQUENCY_ORACLES["ss"] is fastldp.SubsetSelection
    assert FREQUENCY_ORACLES["blh"] is fastldp.BLH
