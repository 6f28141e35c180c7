"""The package's front door: every family and estimator after ``import fastldp``, loaded lazily.

Each check that depends on what has been imported runs in a fresh
interpreter, since this test process has imported most of the package.
"""

import os
import pydoc
import subprocess
import sys
import textwrap

import pytest

import fastldp

#: family -> the public estimators (and result classes) that must be at the top level
ESTIMATORS = {
    "oracles": ["GRR", "OLH", "FLH", "HadamardResponse", "OUE", "SUE", "Laplace", "Piecewise",
                "Duchi", "FrequencyEstimate"],
    "relations": ["JPRS", "PaddedRelationSampling", "JPRSEstimate", "Decoded"],
    "vectors": ["RPC", "PCKVUE", "PCKVGRR", "PrivKVM", "Succinct", "Collision", "RPCEstimate",
                "SparseMeanEstimate"],
    "regression": ["U2R", "SampleSDP", "TwoStageSLR", "LDPIHT", "Lasso", "ShuffledVectorSum",
                   "ShuffledBits", "Privacy"],
    "histograms": ["ShiftedLogGaussian", "EqualNoiseGaussian", "DataIndependentRelease",
                   "PrivacyReport"],
    "results": ["Result", "PrivacyStatement"],  # the base every result derives from
}
SHARED = ["audit", "reports", "streaming", "distributed", "mechanisms", "experiments", "budgets",
          "corruption", "metrics"]
MODULES = [*ESTIMATORS, *SHARED]
HEAVY = ["pyarrow", "dask", "distributed", "matplotlib", "pandas"]


def _python(code: str) -> subprocess.CompletedProcess:
    # the child must find the same fastldp: a relative PYTHONPATH (PYTHONPATH=src) stays valid
    env = dict(os.environ)
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code)], capture_output=True,
                          text=True, timeout=120, env=env)


@pytest.mark.parametrize("module", MODULES)
def test_each_family_and_its_estimators_are_attributes_after_import_fastldp(module):
    # the top-level names are read before the family is touched, so each goes through
    # the package's own lookup, not through a submodule some other import loaded
    names = ESTIMATORS.get(module, [])
    result = _python(f"""
        import sys
        import fastldp
        assert "fastldp.{module}" not in sys.modules, "imported by import fastldp"
        found = {{name: getattr(fastldp, name) for name in {names!r}}}
        family = fastldp.{module}
        assert family is sys.modules["fastldp.{module}"]
        for name, obj in found.items():
            assert obj is getattr(family, name), name
            assert getattr(fastldp, name) is obj, name
            assert isinstance(obj, type), name
        print("ok")
        """)
    assert result.returncode == 0 and result.stdout.strip() == "ok", result.stderr[-3000:]


def test_import_fastldp_loads_no_family_and_no_heavy_dependency():
    result = _python("""
        import sys
        import fastldp
        # fastldp._version (one assignment, so any room can read the version downward)
        print(sorted(m for m in sys.modules if m != "fastldp._version" and (
                     m.startswith("fastldp.") or m.split(".")[0] in {"scipy", *%r})))
        """ % (HEAVY,))
    assert result.returncode == 0, result.stderr[-3000:]
    assert result.stdout.strip() == "[]", result.stdout


def test_all_and_dir_list_every_family_and_estimator():
    expected = {*MODULES, *(n for names in ESTIMATORS.values() for n in names), "show_config",
                "__version__"}
    assert expected <= set(fastldp.__all__)
    assert expected <= set(dir(fastldp))
    assert len(fastldp.__all__) == len(set(fastldp.__all__))
    for name in fastldp.__all__:  # nothing listed that does not resolve
        assert getattr(fastldp, name) is not None, name


def test_from_import_and_unknown_names():
    from fastldp import OLH, U2R, histograms  # noqa: F401

    assert OLH is fastldp.oracles.OLH and U2R is fastldp.regression.U2R
    with pytest.raises(AttributeError, match="no attribute 'OLHX'"):
        fastldp.OLHX  # noqa: B018
    assert not hasattr(fastldp, "eps")
    assert isinstance(fastldp.__version__, str) and callable(fastldp.show_config)


def test_help_names_every_family_and_shared_module():
    text = pydoc.render_doc(fastldp, renderer=pydoc.plaintext)
    for module in MODULES:
        assert f"fastldp.{module}" in text, module
    # one line each in the package docstring itself, not only in pydoc's module list
    doc = fastldp.__doc__
    for module in MODULES:
        assert f":mod:`fastldp.{module}` - " in doc, module


def test_type_checkers_see_the_lazy_exports(tmp_path):
    # __getattr__ is typed Any: without the TYPE_CHECKING imports mypy would accept
    # any misuse of fastldp.OLH; with them it knows the class
    pytest.importorskip("mypy")  # the test extra installs it
    user = tmp_path / "user.py"
    user.write_text("import fastldp\n"
                    "oracle = fastldp.OLH(domain_size=8, epsilon=1.0)\n"
                    "reveal_type(oracle)\n"
                    "reveal_type(fastldp.JPRSEstimate)\n")
    env = dict(os.environ)
    if env.get("PYTHONPATH"):
        env["PYTHONPATH"] = os.pathsep.join(
            os.path.abspath(p) for p in env["PYTHONPATH"].split(os.pathsep) if p)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--no-incremental", "--cache-dir", str(tmp_path / "cache"),
         "--python-executable", sys.executable, str(user)],
        capture_output=True, text=True, cwd=tmp_path, timeout=300, env=env)
    assert 'Revealed type is "fastldp.oracles.olh.OLH"' in result.stdout, result.stdout
    assert "fastldp.relations.jprs.JPRSEstimate" in result.stdout, result.stdout
