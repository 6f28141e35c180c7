"""bench/heavyhitters_compare.py: its NumPy 2 shim for pure-ldp, the item decoding and the verdict.

The shim must read a ``None`` shape exactly as NumPy 1 did (``()``) and
change nothing else; with it, pure-ldp's own heavy-hitter classes build and
find a planted heavy item. pure-ldp is an optional peer (the ``bench-peer``
extra): those tests are skipped without it.
"""

from __future__ import annotations

import importlib.util
import math
import statistics
from pathlib import Path

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench" / "heavyhitters_compare.py"

pytestmark = pytest.mark.skipif(not BENCH.is_file(), reason="bench/ is not next to the tests")


@pytest.fixture(scope="module")
def bench():
    spec = importlib.util.spec_from_file_location("heavyhitters_compare", BENCH)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def test_shim_reads_a_none_shape_as_numpy_1_did(bench):
    shim = bench._NumPy1Shapes()
    z = shim.zeros(None)
    assert z.shape == () and z.dtype == np.float64 and z == 0.0
    assert shim.zeros(3).shape == (3,) and shim.zeros((2, 5), dtype=np.int64).dtype == np.int64
    assert shim.arange is np.arange and shim.float64 is np.float64  # everything else forwarded


def test_peer_code(bench):
    assert bench.peer_code("00000101", 8) == 5
    assert bench.peer_code("11111111", 8) == 255
    assert bench.peer_code("0101****", 8) == -1  # SFP's padding: no item
    assert bench.peer_code("0101", 8) == -1


def _naive_verdict(fast, peer):
    d = [f - p for f, p in zip(fast, peer)]
    se = statistics.stdev(d) / math.sqrt(len(d))
    return "yes" if statistics.fmean(d) >= -2 * se else "no"


@pytest.mark.parametrize("fast, peer", [
    ([0.5] * 5, [0.5] * 5),                       # equal: yes
    ([0.4, 0.5, 0.3, 0.6, 0.2], [0.5] * 5),       # mean -0.1, se 0.071: yes
    ([0.40, 0.42, 0.38, 0.41, 0.39], [0.5] * 5),  # mean -0.1, se 0.007: no
    ([0.9, 0.8, 0.7, 0.9, 0.8], [0.1, 0.2, 0.3, 0.2, 0.1]),
])
def test_verdict_is_two_paired_standard_errors(bench, fast, peer):
    assert bench.verdict(fast, peer) == _naive_verdict(fast, peer)


def test_verdict_examples(bench):
    assert bench.verdict([0.4, 0.5, 0.3, 0.6, 0.2], [0.5] * 5) == "yes"
    assert bench.verdict([0.40, 0.42, 0.38, 0.41, 0.39], [0.5] * 5) == "no"


@pytest.mark.slow  # pure-ldp's Python servers: 11 s measured on a loaded 2-core machine
def test_pure_ldp_fails_without_the_shim_and_finds_a_heavy_item_with_it(bench, monkeypatch):
    pytest.importorskip("pure_ldp")
    import warnings

    import pure_ldp.core._freq_oracle_server as base
    from pure_ldp.heavy_hitters.treehistogram import TreeHistServer

    monkeypatch.setattr(base, "np", np)  # as installed: NumPy 2 refuses a None shape
    if int(np.__version__.split(".")[0]) >= 2:
        with pytest.raises(TypeError, match="not None as shape"):
            TreeHistServer(4.0, 8, 4)
    bench.numpy2_shim()
    assert isinstance(base.np, bench._NumPy1Shapes)
    TreeHistServer(4.0, 8, 4)
    monkeypatch.setattr(bench, "SFP_SKETCH", ("hcms", 4, 64))  # small: seconds, not minutes
    items = np.array([0x5A] * 360 + list(range(40)), dtype=np.uint64)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # pure-ldp warns below n = 10^4
        for name in ("PEM", "TreeHist", "SFP"):
            out = bench.peer_run(name, items, 8, 4, seed=3)
            assert not isinstance(out, str), (name, out)
            tc, ts, codes = out
            assert tc >= 0 and ts >= 0
            assert 0x5A in codes, (name, codes)  # 90% of the users hold it
