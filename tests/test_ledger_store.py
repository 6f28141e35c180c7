"""Ledger.charge_store and fastldp account charge: the identities a store acknowledged (issue 37, item 5).

The end-to-end path (a served collector) is tests/test_first_hour.py; these
build stores in process with :class:`fastldp.service.store.Store`.
"""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyarrow")
pytest.importorskip("dp_accounting")

import fastldp  # noqa: E402
from fastldp import cli  # noqa: E402
from fastldp._stores import LockHeld  # noqa: E402
from fastldp.accounting import Ledger  # noqa: E402
from fastldp.service.store import Batch, Store  # noqa: E402


def _store(root, mech, identities, epsilons=None, *, close=True):
    store = Store(root, mech)
    ids = np.asarray(identities, dtype=np.uint64)
    fixed = mech.report_schema.fixed_epsilon
    eps = np.full(ids.size, fixed) if epsilons is None else np.asarray(epsilons, dtype=float)
    kwargs = {} if fixed is not None else {"epsilons": eps}
    reports = mech.privatize(mech.example_data(ids.size, np.random.default_rng(0)),
                             identities=ids, rng=1, **kwargs)
    status, _ = store.submit(Batch("t", "a", ids, eps, np.asarray(reports))).result(30)
    assert status == 201
    if close:
        store.close()
    return store


def test_the_charge_is_the_acknowledged_identities_at_the_mechanism_s_event(tmp_path):
    olh = fastldp.OLH(domain_size=16, epsilon=0.5, codebook_seed=2)
    ids = np.array([5, 3, 2**40, 17])
    _store(tmp_path / "store", olh, ids)
    with Ledger(":memory:") as ledger:
        record = ledger.charge_store(tmp_path / "store", release="r1")
        assert record.n_identities == 4 and record.epsilon_min == record.epsilon_max == 0.5
        np.testing.assert_array_equal(ledger.spent([3, 5, 17, 2**40, 4]),
                                      [0.5, 0.5, 0.5, 0.5, 0.0])


def test_a_store_held_by_its_collector_is_refused_naming_it(tmp_path):
    olh = fastldp.OLH(domain_size=16, epsilon=0.5, codebook_seed=2)
    store = _store(tmp_path / "store", olh, [1, 2], close=False)
    try:
        with Ledger(":memory:") as ledger, pytest.raises(LockHeld, match=r"in use by pid"):
            ledger.charge_store(tmp_path / "store", release="r1")
    finally:
        store.close()


def test_what_cannot_be_charged_from_a_store_is_refused(tmp_path):
    with Ledger(":memory:") as ledger:
        with pytest.raises(ValueError, match=r"is not a store of fastldp serve"):
            ledger.charge_store(tmp_path, release="r1")
        # personal budgets: one event does not describe the release
        personal = fastldp.OLH(domain_size=16, epsilon=None, codebook_seed=2)
        _store(tmp_path / "personal", personal, [1, 2], epsilons=[0.5, 1.0])
        with pytest.raises(ValueError, match=r"personal budgets: charge each identity"):
            ledger.charge_store(tmp_path / "personal", release="r1")
        # an identity above the ledger's int64 range is named, not wrapped around
        olh = fastldp.OLH(domain_size=16, epsilon=0.5, codebook_seed=2)
        _store(tmp_path / "big", olh, [1, 2**63 + 5])
        with pytest.raises(ValueError, match=str(2**63 + 5)):
            ledger.charge_store(tmp_path / "big", release="r1")
        assert ledger.releases() == []


def test_account_charge_keeps_fastldp_account_ledger_reading(tmp_path, capsys):
    olh = fastldp.OLH(domain_size=16, epsilon=0.5, codebook_seed=2)
    _store(tmp_path / "store", olh, [1, 2, 3])
    path = tmp_path / "ledger.sqlite"
    assert cli.main(["account", "charge", str(path), "--store", str(tmp_path / "store"),
                     "--release", "r1"]) == 0
    capsys.readouterr()
    assert cli.main(["account", str(path)]) == 0
    out = capsys.readouterr().out
    assert "1 release, 3 identities in 1 group" in out
    # the options are required, and an error is one line with status 2
    with pytest.raises(SystemExit) as stop:
        cli.main(["account", "charge", str(path), "--release", "r2"])
    assert stop.value.code == 2 and "--store" in capsys.readouterr().err
    assert cli.main(["account", "charge", str(path), "--store", str(tmp_path),
                     "--release", "r2"]) == 2
    assert "is not a store of fastldp serve" in capsys.readouterr().err
