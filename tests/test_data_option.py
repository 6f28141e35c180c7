"""A data folder that is not there is an error in every command (issue 37, item 6).

``fastldp reproduce oracle-consistency --data /nonexistent`` used to run on
synthetic data only, silently, while ``reproduce real-data`` refused.
"""

from __future__ import annotations

import pytest

from fastldp import cli
from fastldp.experiments import experiments


@pytest.mark.parametrize("experiment", sorted(experiments()))
def test_every_reproduce_refuses_a_data_folder_that_is_not_there(experiment, tmp_path, capsys):
    missing = tmp_path / "nonexistent"
    out = tmp_path / "out"
    assert cli.main(["reproduce", experiment, "--quick", "--data", str(missing), "--out",
                     str(out), "--quiet", "--workers", "1", "--no-figures"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("fastldp: error: The data folder of experiment ")
    assert f"(--data) does not exist or is not a folder: {str(missing)!r}" in err
    assert err.count("\n") == 1 and not out.exists()


def test_fastldp_data_that_is_not_there_is_refused_too(tmp_path, capsys, monkeypatch):
    monkeypatch.setenv("FASTLDP_DATA", str(tmp_path / "gone"))
    assert cli.main(["reproduce", "oracle-consistency", "--quick", "--out",
                     str(tmp_path / "out"), "--quiet"]) == 2
    assert "($FASTLDP_DATA) does not exist" in capsys.readouterr().err


def test_run_refuses_a_data_folder_that_is_not_there(tmp_path, capsys):
    spec = experiments()["oracle-consistency"].spec
    missing = tmp_path / "nonexistent"
    assert cli.main(["run", str(spec), "--quick", "--data", str(missing), "--out",
                     str(tmp_path / "out"), "--quiet"]) == 2
    err = capsys.readouterr().err
    assert f"The '--data' option of fastldp run must be an existing folder. Got " \
           f"{str(missing)!r}" in err
    assert not (tmp_path / "out").exists()
