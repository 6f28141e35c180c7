"""Report files written before the mechanism protocol still decode, to the same bits.

``tests/data/reports_before_protocol`` holds small report files (GRR, OLH,
OUE with personal budgets, JPRS, RPC, PEM) written by fastldp at commit d7f7069,
the last commit before issue 33 moved dispatch into
:mod:`fastldp.protocol`, with the estimates that version decoded from them
(``expected.json``, floats in hex). Today's ``decode_files`` and ``fastldp
decode`` must rebuild each mechanism from the file's own spec and give the
same estimate bit for bit. PEM's spec there lacks the parameters issue 34
added (``z``, ``max_kept``, ``pool_ended``): ``PEM.spec_added`` says what a
spec without them meant (:func:`fastldp.protocol.completed_spec`).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest

pytest.importorskip("pyarrow")

from fastldp import cli  # noqa: E402
from fastldp.mechanisms import from_spec  # noqa: E402
from fastldp.reports import FORMAT_VERSION, ReportFile, decode_files, load_result  # noqa: E402

DATA = Path(__file__).resolve().parent / "data" / "reports_before_protocol"
EXPECTED = json.loads((DATA / "expected.json").read_text())["cases"]


def _values(result) -> np.ndarray:
    matrix = getattr(result, "matrix", None)
    return np.asarray(matrix if matrix is not None else (
        result.counts if hasattr(result, "counts") else result.estimate), dtype=float)


@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_a_file_written_before_the_protocol_decodes_to_the_same_bits(name):
    case = EXPECTED[name]
    path = DATA / f"{name}.parquet"
    report_file = ReportFile(path)
    assert report_file.spec == case["spec"]
    assert FORMAT_VERSION == 1  # a new format version needs a reader of version 1 here
    result = decode_files(from_spec(report_file.spec), [str(path)])
    assert result.n == case["n"]
    want = np.array([float.fromhex(v) for v in case["estimate_hex"]]).reshape(case["shape"])
    np.testing.assert_array_equal(_values(result), want)
    if "items" in case:  # heavy hitters: the same items, in the same order
        assert [int(v) for v in result.categories] == case["items"]


def test_fastldp_decode_reads_them_with_their_own_specs(tmp_path):
    out = tmp_path / "jprs.npz"
    assert cli.main(["decode", str(DATA / "jprs.parquet"), "--quiet", "--out", str(out)]) == 0
    case = EXPECTED["jprs"]
    want = np.array([float.fromhex(v) for v in case["estimate_hex"]]).reshape(case["shape"])
    np.testing.assert_array_equal(np.asarray(load_result(out).matrix, dtype=float), want)
