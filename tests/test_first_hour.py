"""The first hour of a new user, on the product path (issue 37, item 5 and "Done when").

Labelled data, ``make_oracle("auto")``, ``fastldp serve``, ``Client.send``,
the live estimate, the decode saved and read back, ``norm_sub`` on the
loaded result, the ledger charged from the collector's store (``fastldp
account charge``), and the next release refused over the cap. Each step
checks numbers, not that it ran.
"""

from __future__ import annotations

import math
import re
import shlex
import socket
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")
pytest.importorskip("pyarrow")
pytest.importorskip("dp_accounting")

from fastldp import cli  # noqa: E402
from fastldp._stores import LockHeld  # noqa: E402
from fastldp.accounting import Ledger  # noqa: E402
from fastldp.accounting.ledger import BudgetExceededError  # noqa: E402
from fastldp.oracles import make_oracle, postprocess  # noqa: E402
from fastldp.reports import decode_files, load_result, save_result  # noqa: E402
from fastldp.service import Client  # noqa: E402
from fastldp.service.testing import running_server  # noqa: E402

LABELS = ["android", "ios", "web", "desktop", "tv"]
SHARE = np.array([0.4, 0.3, 0.15, 0.1, 0.05])
N = 6000
EPSILON = 1.0


def _data():
    rng = np.random.default_rng(2024)
    return [LABELS[i] for i in rng.choice(len(LABELS), size=N, p=SHARE)]


def test_the_product_path_from_labelled_data_to_a_refused_release(tmp_path, capsys):
    values = _data()
    truth = np.array([values.count(label) for label in LABELS], dtype=float)
    oracle = make_oracle("auto", domain_size=len(LABELS), epsilon=EPSILON, codebook_seed=7,
                         categories=LABELS)
    ledger_path = tmp_path / "budget.sqlite"
    with running_server(tmp_path, oracle.spec()) as server:
        client = Client(server.url, server.token)
        sent = client.send(values, identities=np.arange(N), rng=np.random.default_rng(99))
        assert sent["accepted"] == N
        live = client.estimate()
        assert live["n"] == N
        counts, std = np.asarray(live["estimate"], dtype=float), np.asarray(live["std"])
        assert np.all(np.abs(counts - truth) < 5 * std), (counts, truth, std)
        client.close()
        # the collector still accepts reports: its identities are not final, so no charge
        with pytest.raises(LockHeld, match=r"in use by pid \d+"):
            Ledger(ledger_path).charge_store(server.store, release="monday")
        store = server.store
    # stopped: the decode of its store is the live estimate, saved and read back
    result = decode_files(oracle, str(store))
    np.testing.assert_array_equal(result.counts, counts)
    loaded = load_result(save_result(result, tmp_path / "monday.npz"))
    consistent = postprocess.norm_sub(loaded)
    assert consistent.n == N and consistent.categories == tuple(LABELS)
    assert consistent.privacy.epsilon == EPSILON
    assert math.isclose(float(consistent.counts.sum()), N, rel_tol=1e-12)
    assert np.all(consistent.counts >= 0)
    np.testing.assert_array_equal(consistent.counts, postprocess.norm_sub(result).counts)

    # the ledger: exactly the acknowledged identities, at the mechanism's event
    charge = ["account", "charge", str(ledger_path), "--store", str(store), "--cap", "1.5"]
    assert cli.main([*charge, "--release", "monday"]) == 0
    assert "charged the release 'monday' (#1) to the 6,000 identities" in capsys.readouterr().out
    with Ledger(ledger_path, readonly=True) as ledger:
        (release,) = ledger.releases()
        assert release.n_identities == N and release.epsilon_max == EPSILON
        np.testing.assert_array_equal(ledger.spent([0, N - 1, N]), [EPSILON, EPSILON, 0.0])
    # a retry of the same release charges nothing
    assert cli.main([*charge, "--release", "monday"]) == 0
    assert "was charged before" in capsys.readouterr().out
    # the next release of the same users would reach 2.0 > 1.5: refused whole
    assert cli.main([*charge, "--release", "tuesday"]) == 1
    err = capsys.readouterr().err
    assert "refused" in err and "6,000 of 6,000 identities would exceed it" in err
    with Ledger(ledger_path) as ledger:
        assert [r.name for r in ledger.releases()] == ["monday"]
        np.testing.assert_array_equal(ledger.spent([0, N - 1]), [EPSILON, EPSILON])
        with pytest.raises(BudgetExceededError):
            ledger.charge_store(store, release="tuesday", cap=1.5)
        # the Python equivalent, idempotent too
        again = ledger.charge_store(store, release="monday")
        assert again.index == 1 and len(ledger.releases()) == 1


# ------------------------------------------------------------------ README's product quickstart
README = Path(__file__).resolve().parents[1] / "README.md"


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _product_quickstart():
    """(python code, the output README shows, the bash lines) of README's product quickstart."""
    text = README.read_text()
    section = text[text.index("## Product quickstart"):]
    section = section[:section.index("\n## ", 3)]
    fences = re.findall(r"^```(\w*)\n(.*?)^```", section, flags=re.S | re.M)
    kinds = [kind for kind, _ in fences]
    assert kinds == ["python", "text", "bash"], kinds
    (_, code), (_, shown), (_, shell) = fences
    lines = [line.split("#")[0].strip() for line in shell.splitlines()]
    return code, shown, [line for line in lines if line]


STEPS = ('make_oracle("auto"', '"fastldp", "serve"', "client.send(", "client.estimate()",
         "load_result(", "norm_sub(est)", 'charge_store("store", release="week-1", cap=',
         'charge_store("store", release="week-2", cap=', "except BudgetExceededError")

needs_readme = pytest.mark.skipif(not README.exists(), reason="README.md is not next to the tests")


def _shell_args(line: str) -> list:
    return shlex.split(line.replace('"$TOKEN"', "s3cret").replace(">> tokens.txt", ""))


@needs_readme
def test_readme_product_quickstart_walks_this_path():
    # the default tier's sibling of the slow test below: the same script, not run
    code, shown, shell = _product_quickstart()
    at = [code.find(step) for step in STEPS]
    assert -1 not in at and at == sorted(at), dict(zip(STEPS, at))
    assert "+-" in shown and "would exceed it" in shown
    for line in shell:  # each parses as the fastldp command it names
        args = _shell_args(line)
        assert args[0] == "fastldp", line
        cli._parse(args[1:])  # what main parses: argparse exits 2 on a wrong option
    assert [a for a in shell if "account charge" in a and "--cap" in a], shell


@pytest.mark.slow  # a collector's start and 20,000 reports: 10-20 s on 2 cores; the sibling
# above checks the same script's steps and shell lines without running them
@needs_readme
def test_readme_product_quickstart_runs_as_printed(tmp_path, monkeypatch, capsys):
    code, shown, shell = _product_quickstart()
    # run as a reader would, in an empty folder, on a free port (8000 may be taken here)
    port = str(_free_port())
    assert code.count('"8000"') == 1 and code.count(":8000") == 1
    script = tmp_path / "quickstart.py"
    checks = ["(ledger.spent(users) == 1.0).all() and len(ledger.releases()) == 1",
              "clean.n == est.n == users.size and clean.privacy.epsilon == 1.0",
              "abs(clean.counts.sum() - est.n) < 1e-6 and clean.counts.min() >= 0",
              "np.array_equal(live['estimate'], est.counts)"]
    script.write_text(code.replace('"8000"', f'"{port}"').replace(":8000", f":{port}")
                      + "".join(f"\nassert {check}" for check in checks) + "\n")
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True,
                          text=True, timeout=300)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert proc.stdout == shown, f"README's quickstart prints\n{proc.stdout}\nbut shows\n{shown}"

    # the shell lines that read the store run on the script's store and ledger: a charge
    # repeated charges nothing, week-2 is refused (exit 1)
    monkeypatch.chdir(tmp_path)
    ran = []
    for line in shell:
        args = _shell_args(line)
        if args[1] in ("decode", "account"):
            status = cli.main(args[1:])
            said = capsys.readouterr()
            ran.append((args[-3] if args[1] == "account" else "decode", status))
            if "week-2" in line:
                assert "refused" in said.err and "20,000 of 20,000 identities" in said.err
            elif args[1] == "account":
                assert "was charged before" in said.out
    assert ran == [("decode", 0), ("week-1", 0), ("week-2", 1)]
    with Ledger(tmp_path / "budget.db", readonly=True) as ledger:
        assert [r.name for r in ledger.releases()] == ["week-1"]
