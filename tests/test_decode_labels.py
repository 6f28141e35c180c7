"""``fastldp decode`` prints the labels of the file's spec, not symbol numbers (issue 37, item 6)."""

from __future__ import annotations

import numpy as np
import pytest

pytest.importorskip("pyarrow")

import fastldp  # noqa: E402
from fastldp import cli, mechanisms  # noqa: E402
from fastldp.reports import ReportFile, decode_files, load_result  # noqa: E402

LABELS = ["android", "ios", "web", "desktop"]


@pytest.mark.parametrize("oracle", ["GRR", "OLH"])
def test_decode_prints_the_labels_of_the_file_s_spec(oracle, tmp_path, capsys):
    mech = getattr(fastldp, oracle)(categories=LABELS, epsilon=2.0, codebook_seed=5)
    path = mechanisms.simulate(mech, 5000, tmp_path / "r.parquet", seed=1)
    assert ReportFile(path).spec["params"]["categories"] == LABELS
    est = decode_files(mechanisms.from_spec(ReportFile(path).spec), path)
    assert cli.main(["decode", str(path), "--quiet", "--out", str(tmp_path / "r.npz")]) == 0
    (line,) = [s for s in capsys.readouterr().out.splitlines() if "largest counts" in s]
    order = np.argsort(-est.counts, kind="stable")
    assert line == "  largest counts: " + ", ".join(
        f"{LABELS[v]}: {est.counts[v]:,.1f}" for v in order)
    # the saved result keeps them too
    assert load_result(tmp_path / "r.npz").categories == tuple(LABELS)
