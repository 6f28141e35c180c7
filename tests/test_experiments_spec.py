"""Experiment specs: parsing, defaults, grid expansion, keys, the shipped specs."""

import textwrap

import pytest

from fastldp.experiments.relations import (
    DEFAULTS, EXPERIMENTS, expand_grid, load_spec, spec_from_dict, spec_path,
)
from fastldp.experiments.spec import config_id

SPEC = """
name = "unit"
methods = ["JPRS-Global", "NonPrivate-TopS"]
seeds = 3

[fixed]
shape = [8, 8]
s = 8
k = 2
budget = "H1"

[[grid]]
n = [300, 600]
eps0 = [1.0]
alpha = [0, 0.1]

[[grid]]
n = [600]
eps0 = [0.5, 1]
alpha = [0.0]

[report]
headline = { n = 600 }

[quick]
seeds = [7]
grid = [{ n = [300], eps0 = [2.0] }]
"""


def write(tmp_path, text, name="spec.toml"):
    path = tmp_path / name
    path.write_text(textwrap.dedent(text))
    return path


def test_parse_and_expand(tmp_path):
    spec = load_spec(write(tmp_path, SPEC))
    assert spec.name == "unit"
    assert spec.methods == ("JPRS-Global", "NonPrivate-TopS")
    assert spec.seeds == (0, 1, 2)
    assert spec.report == {"headline": {"n": 600}}
    cells = expand_grid(spec)
    # grid 1: 2 n x 2 alpha = 4 configs; grid 2: eps0 = 1 at n = 600, alpha = 0 repeats grid 1
    configs = {c.config_id: c.config for c in cells}
    assert len(configs) == 5
    assert len(cells) == 5 * 3
    for config in configs.values():
        assert set(config) == set(DEFAULTS)
        assert config["shape"] == (8, 8) and config["s"] == 8 and config["budget"] == "H1"
        assert config["corruption"] == DEFAULTS["corruption"]
        assert isinstance(config["alpha"], float) and isinstance(config["eps0"], float)
    assert sorted((c["n"], c["eps0"], c["alpha"]) for c in configs.values()) == [
        (300, 1.0, 0.0), (300, 1.0, 0.1), (600, 0.5, 0.0), (600, 1.0, 0.0), (600, 1.0, 0.1)]


def test_keys_unique_and_content_addressed(tmp_path):
    spec = load_spec(write(tmp_path, SPEC))
    cells = expand_grid(spec)
    keys = [cell.key(m) for cell in cells for m in cell.methods]
    assert len(keys) == len(set(keys)) == 5 * 3 * 2
    # the id is a function of the configuration alone: int/float spelling and key order do not matter
    a = {**DEFAULTS, "n": 300, "alpha": 0.0, "eps0": 1.0}
    b = dict(reversed(list({**DEFAULTS, "n": 300, "alpha": 0.0, "eps0": 1.0}.items())))
    assert config_id(a) == config_id(b)
    assert config_id(a) != config_id({**a, "alpha": 0.1})
    other = load_spec(write(tmp_path, SPEC.replace('name = "unit"', 'name = "other"'), "o.toml"))
    assert {c.config_id for c in expand_grid(other)} == {c.config_id for c in cells}


def test_quick_overrides(tmp_path):
    spec = load_spec(write(tmp_path, SPEC), quick=True)
    cells = expand_grid(spec)
    assert spec.quick and spec.seeds == (7,)
    assert [(c.config["n"], c.config["eps0"], c.seed) for c in cells] == [(300, 2.0, 7)]
    assert cells[0].config["shape"] == (8, 8)  # [fixed] still applies


def test_population_axis_and_real_kinds():
    spec = spec_from_dict({
        "methods": ["JPRS-Global"], "seeds": 1,
        "grid": [{"population": [{"kind": "zipf"}, "flat",
                                 {"kind": "movielens", "path": "ml", "d2": 128}]}],
    })
    configs = [c.config for c in expand_grid(spec)]
    assert [c["population"]["kind"] for c in configs] == ["zipf", "flat", "movielens"]
    assert configs[0]["n"] == DEFAULTS["n"]
    # a file fixes n and the shape, so they are not part of a real configuration
    assert configs[2]["n"] is None and configs[2]["shape"] is None
    assert configs[2]["population"] == {"d2": 128, "kind": "movielens", "path": "ml"}


def test_shape_axis():
    spec = spec_from_dict({"methods": ["JPRS-Global"], "grid": {"shape": [[8, 8], [4, 16]]}})
    assert [c.config["shape"] for c in expand_grid(spec)][::5] == [(8, 8), (4, 16)]


@pytest.mark.parametrize("data, message", [
    ({"methods": []}, "'methods' must be a non-empty list"),
    ({"methods": ["A", "A"]}, "repeats a name"),
    ({"methods": ["A"], "seeds": 0}, "'seeds' must be >= 1"),
    ({"methods": ["A"], "seeds": [1, 1]}, "repeats a seed"),
    ({"methods": ["A"], "bogus": 1}, "unknown top-level keys"),
    ({"methods": ["A"], "fixed": {"eps": 1.0}}, "unknown parameter 'eps'"),
    ({"methods": ["A"], "fixed": {"alpha": 1.5}}, "'alpha' must be a float in [0, 1)"),
    ({"methods": ["A"], "fixed": {"eps0": float("nan")}}, "'eps0' must be a float in (0, inf)"),
    ({"methods": ["A"], "fixed": {"n": True}}, "'n' must be an int >= 1"),
    ({"methods": ["A"], "fixed": {"shape": [8]}}, "'shape' must be a pair"),
    ({"methods": ["A"], "grid": [{"n": []}]}, "axis 'n' is empty"),
    ({"methods": ["A"], "report": {"colour": 1}}, "unknown keys ['colour'] in [report]"),
])
def test_bad_specs_name_the_problem(data, message):
    with pytest.raises(ValueError) as info:
        spec_from_dict(data)
    assert message in str(info.value)


def test_quick_needs_a_quick_table(tmp_path):
    with pytest.raises(ValueError, match=r"has no \[quick\] table"):
        load_spec(write(tmp_path, 'methods = ["JPRS-Global"]\n'), quick=True)
    with pytest.raises(FileNotFoundError, match="No experiment spec"):
        load_spec(tmp_path / "missing.toml")
    with pytest.raises(ValueError, match="not valid TOML"):
        load_spec(write(tmp_path, "methods = [", "bad.toml"))


@pytest.mark.parametrize("experiment", sorted(EXPERIMENTS))
@pytest.mark.parametrize("quick", [False, True])
def test_shipped_specs_expand(experiment, quick):  # rpc-* specs: tests/test_experiments_rpc.py
    spec = load_spec(spec_path(experiment), quick=quick)
    cells = expand_grid(spec)
    assert cells and spec.description
    keys = [cell.key(m) for cell in cells for m in cell.methods]
    assert len(keys) == len(set(keys))
    if quick:
        assert len(cells) < len(expand_grid(load_spec(spec_path(experiment))))


def test_theorem_audit_spec_matches_the_paper():
    spec = load_spec(spec_path("theorem-audit"))
    configs = {c.config_id: c.config for c in expand_grid(spec)}.values()
    assert {c["budget"] for c in configs} == {"H0"}
    assert max(c["eps0"] for c in configs) <= 1.0  # inside Theorem 1
    assert {c["alpha"] for c in configs} == {0.0, 0.1}
    assert {c["n"] for c in configs if c["eps0"] == 0.75} == {16000, 32000, 64000, 128000, 256000}
    assert {c["eps0"] for c in configs if c["n"] == 128000} == {0.25, 0.5, 0.75, 1.0}
    assert spec.seeds == (0, 1, 2, 3, 4)


def test_unknown_experiment():
    with pytest.raises(ValueError, match="Unknown relation experiment 'table9'"):
        spec_path("table9")


def test_the_documented_example_parses():
    import sys

    import fastldp.experiments.relations.spec as module

    if sys.version_info < (3, 11):
        tomllib = pytest.importorskip("tomli")
    else:
        import tomllib
    example = module.__doc__.split("::")[1].split("A configuration holds")[0]
    spec = spec_from_dict(tomllib.loads(textwrap.dedent(example)))
    assert len(expand_grid(spec)) == (3 * 2 + 4 * 2) * 5
    assert len(expand_grid(spec_from_dict(tomllib.loads(textwrap.dedent(example)), quick=True))) == 4
