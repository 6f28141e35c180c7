"""``fastldp reproduce longitudinal`` on a tiny grid: tables, checks, the paper's comparison."""

import csv
import io
import math

import numpy as np
import pytest

from fastldp.experiments.longitudinal import reproduce
from fastldp.experiments.longitudinal.reproduce import dbitflip_gamma, load_spec
from fastldp.longitudinal.dbitflip import DBitFlipPM

TINY = """
[full]
seed = 7
n_users = 3000
rounds = 2
change_rate = 0.2
zipf_exponent = 1.1
repetitions = 2
domain_sizes = [4, 16]
epsilon_1 = 1.0
epsilon_inf = [2.0, 6.0]
mf_epsilon_inf = 4.0
mf_users = 300
mf_repetitions = 2
mf_domain_sizes = [4]
mf_protocols = ["L-OSUE", "L-GRR (paper)"]   # two of multi-freq-ldpy's numba compilations
"""


def _read(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


@pytest.fixture(scope="module")
def tiny(tmp_path_factory):
    out = tmp_path_factory.mktemp("longitudinal")
    spec = out / "spec.toml"
    spec.write_text(TINY)
    stream = io.StringIO()
    result = reproduce(out=out / "run", file=stream, spec=spec, progress=False)
    return out / "run", stream.getvalue(), result


@pytest.mark.slow  # the tiny run takes about 15 s (multi-freq-ldpy's numba compiles)
def test_tiny_run_writes_its_tables_and_passes_its_checks(tiny):
    out, printed, result = tiny
    assert result.failed == 0, [c for c in result.checks if not c["ok"]]
    assert printed == result.text == (out / "report.txt").read_text()
    mse = _read(out / "mse.csv")
    protocols = {"L-GRR", "L-GRR (paper)", "L-OUE", "L-OSUE", "L-SUE", "L-SOUE",
                 "dBitFlipPM (d=D)"}
    assert {r["protocol"] for r in mse} == protocols
    assert {(r["domain_size"], r["epsilon_inf"]) for r in mse} == {
        (d, e) for d in ("4", "16") for e in ("2.0", "6.0")}
    assert len(_read(out / "winners.csv")) == 4
    assert "The paper's conclusion" in result.text


@pytest.mark.slow  # the tiny run takes about 15 s (multi-freq-ldpy's numba compiles)
def test_analytic_mse_is_the_protocols_variance(tiny):
    # the analytic column is mean_v Var[c(v)] / n^2 at the true counts; at D = 16 L-SUE's
    # variance does not depend on the count (P (1 - P) = Q (1 - Q)): n Q (1 - Q) / (P - Q)^2
    from fastldp.longitudinal import LSUE

    out, _, _ = tiny
    row = next(r for r in _read(out / "mse.csv")
               if (r["protocol"], r["domain_size"], r["epsilon_inf"]) == ("L-SUE", "16", "2.0"))
    m = LSUE(domain_size=16, epsilon_inf=2.0, epsilon_1=1.0)
    assert float(row["analytic_mse"]) == pytest.approx(
        m.Q * (1 - m.Q) / (m.P - m.Q) ** 2 / 3000, rel=1e-12)


def test_dbitflip_gamma_gives_one_report_epsilon_1():
    for e_inf, e_1 in [(2.0, 1.0), (6.0, 0.5), (4.0, 3.9)]:
        g = dbitflip_gamma(e_inf, e_1)
        m = DBitFlipPM(domain_size=5, n_sampled=5, epsilon_inf=e_inf, gamma=g)
        assert m.epsilon_1 == pytest.approx(e_1, rel=1e-12)
        law = m.channel("report")
        assert np.log(law[:, None, :] / law[None, :, :]).max() == pytest.approx(e_1, rel=1e-9)


@pytest.mark.slow  # the tiny run takes about 15 s (multi-freq-ldpy's numba compiles)
def test_multi_freq_side_by_side(tiny):
    pytest.importorskip("multi_freq_ldpy")
    out, _, _ = tiny
    rows = _read(out / "multi_freq.csv")
    assert {r["protocol"] for r in rows} == {"L-GRR (paper)", "L-OSUE"}
    for r in rows:
        assert float(r["fastldp_mse"]) > 0 and float(r["multi_freq_ldpy_mse"]) > 0
        assert math.isfinite(float(r["ratio"]))


def test_the_shipped_spec_and_the_registry():
    from fastldp.experiments.registry import get_experiment

    quick, full = load_spec(True), load_spec(False)
    assert quick["n_users"] < full["n_users"] and quick["epsilon_1"] == full["epsilon_1"] == 1.0
    assert all(e > quick["epsilon_1"] for e in full["epsilon_inf"])
    assert get_experiment("longitudinal").run is reproduce
