"""The first hour of a new user, on the product path (issue 37, item 5 and "Done when").

Labelled data, ``make_oracle("auto")``, ``fastldp serve``, ``Client.send``,
the live estimate, the decode saved and read back, ``norm_sub`` on the
loaded result, the ledger charged from the collector's store (``fastldp
account charge``), and the next release refused over the cap. Each step
checks numbers, not that it ran.
"""

from __future__ import annotations

import math

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
