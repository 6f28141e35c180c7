"""The client memo: MemoryMemo against a dict twin, MemoStore's durability and concurrency.

The durable store is tested with real processes: two writers on overlapping
identities, and a writer killed with SIGKILL at random points, after which
the file must pass ``PRAGMA integrity_check`` and agree with every report
the writer had released (printed).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import textwrap
import time

import numpy as np
import pytest

import fastldp
from fastldp.longitudinal import LGRR, LOUE, MemoryMemo, MemoStore

# the folder holding the fastldp this test imports (the installed package in CI, src/ in a
# development install): the child processes must import the same build, not src/ unbuilt
SRC = os.path.dirname(os.path.dirname(os.path.abspath(fastldp.__file__)))


def _draw_counter(start):
    """A draw whose responses are distinct and recognizable: start, start + 1, ..."""
    state = {"next": start}

    def draw(index):
        out = np.arange(state["next"], state["next"] + index.shape[0], dtype=np.int64)
        state["next"] += index.shape[0]
        return out[:, None]

    return draw


# ------------------------------------------------------------------ MemoryMemo
@pytest.mark.parametrize("big", [False, True])
def test_memory_memo_agrees_with_a_dict_twin(big):
    # twin: a dict (scope, identity, value) -> response, first draw wins; it would fail if
    # a stored response were redrawn, lost on insertion, or mixed up between scopes
    rng = np.random.default_rng(5)
    memo, twin, D = MemoryMemo(), {}, 7
    draw = _draw_counter(1)
    base = np.uint64(2**63 // D - 3) if big else np.uint64(0)  # crosses the int64 key limit
    for step in range(40):
        scope = ("a", "b")[step % 2]
        n = int(rng.integers(1, 60))
        ids = base + rng.choice(np.arange(80, dtype=np.uint64), n, replace=False)
        x = rng.integers(0, D, n)
        got = memo.responses(scope, ids, x, D, draw, np.int64, 1)[:, 0]
        for i, v, r in zip(ids.tolist(), x.tolist(), got.tolist()):
            twin.setdefault((scope, i, v), r)
            assert twin[(scope, i, v)] == r
    assert len(memo) == len(twin)
    keys = list(twin)
    ids = np.array([k[1] for k in keys if k[0] == "a"], dtype=np.uint64)
    x = np.array([k[2] for k in keys if k[0] == "a"])
    rows, found = memo.lookup("a", ids, x, D, np.int64, 1)
    assert found.all()
    assert rows[:, 0].tolist() == [twin[("a", i, v)] for i, v in zip(ids.tolist(), x.tolist())]
    _, found = memo.lookup("c", ids, x, D, np.int64, 1)
    assert not found.any()


def test_the_memo_is_reused_across_rounds_and_a_changed_value_gets_a_new_response():
    lgrr = LGRR(domain_size=5, epsilon_inf=3.0, epsilon_1=1.0, codebook_seed=0)
    memo = MemoryMemo()
    ids = np.arange(1000, 1300)
    day1 = np.arange(300) % 5
    lgrr.privatize(day1, memo=memo, identities=ids, rng=1)
    perm1, found1 = lgrr.permanent_responses(day1, memo=memo, identities=ids)
    lgrr.privatize(day1, memo=memo, identities=ids, rng=2)
    perm2, _ = lgrr.permanent_responses(day1, memo=memo, identities=ids)
    assert found1.all() and np.array_equal(perm1, perm2) and len(memo) == 300
    day3 = day1.copy()
    day3[:50] = (day3[:50] + 1) % 5  # 50 users change value
    lgrr.privatize(day3, memo=memo, identities=ids, rng=3)
    assert len(memo) == 350
    perm3, found3 = lgrr.permanent_responses(day3, memo=memo, identities=ids)
    assert found3.all() and np.array_equal(perm3[50:], perm1[50:])
    # the old values' responses are still there (a change back reuses them)
    again, found = lgrr.permanent_responses(day1, memo=memo, identities=ids)
    assert found.all() and np.array_equal(again, perm1)


def test_repeated_reports_randomize_the_stored_permanent_response():
    # one identity reporting one value for many rounds: each report equals the stored
    # permanent response with probability p2 (a memo skipped each round would give P instead)
    lgrr = LGRR(domain_size=4, epsilon_inf=2.0, epsilon_1=1.0, codebook_seed=0)
    memo, rng = MemoryMemo(), np.random.default_rng(3)
    rounds = 20_000
    ids = np.arange(5)
    reports = np.stack([lgrr.privatize([2] * 5, memo=memo, identities=ids, rng=rng)
                        for _ in range(rounds)])
    perm, _ = lgrr.permanent_responses([2] * 5, memo=memo, identities=ids)
    assert len(memo) == 5
    same = (reports == perm[None, :]).mean(axis=0)
    # binomial: sd sqrt(p2 (1 - p2) / rounds) ~ 0.0035; 5 sd
    tol = 5 * np.sqrt(lgrr.p2 * (1 - lgrr.p2) / rounds)
    np.testing.assert_allclose(same, lgrr.p2, atol=tol)
    assert abs(lgrr.P - lgrr.p2) > 4 * tol  # the test tells the two apart


# ------------------------------------------------------------------ MemoStore
def test_memo_store_reopens_with_the_same_responses_and_the_stored_one_wins(tmp_path):
    path = tmp_path / "memo.sqlite"
    loue = LOUE(domain_size=12, epsilon_inf=3.0, epsilon_1=1.0, codebook_seed=0)
    values, ids = np.arange(40) % 12, np.arange(40) * 7
    with MemoStore(path) as memo:
        loue.privatize(values, memo=memo, identities=ids, rng=1)
        first, found = loue.permanent_responses(values, memo=memo, identities=ids)
        assert found.all() and first.shape == (40, 2)
    with MemoStore(path) as memo:
        again, found = loue.permanent_responses(values, memo=memo, identities=ids)
        assert found.all() and np.array_equal(again, first) and len(memo) == 40
        assert memo.integrity_check() == "ok"
        # a draw for keys already stored is never used
        rows = memo.responses(loue.memo_scope, ids.astype(np.uint64), values, 12,
                              lambda index: np.full((index.shape[0], 2), 0xFF, np.uint8),
                              np.uint8, 2)
        assert np.array_equal(rows, first)
    # identities above 2**63 survive the int64 column
    with MemoStore(path) as memo:
        big = np.array([2**64 - 1, 2**63], dtype=np.uint64)
        got = memo.responses("s", big, np.array([1, 1]), 3, _draw_counter(5), np.int64, 1)
        rows, found = memo.lookup("s", big, np.array([1, 1]), 3, np.int64, 1)
        assert found.all() and rows[:, 0].tolist() == got[:, 0].tolist() == [5, 6]


def test_a_rolled_back_batch_stores_nothing(tmp_path):
    path = tmp_path / "memo.sqlite"

    def failing(index):
        raise RuntimeError("crash while drawing")

    with MemoStore(path) as memo:
        with pytest.raises(RuntimeError):
            memo.responses("s", np.arange(3, dtype=np.uint64), np.zeros(3, np.int64), 2, failing,
                           np.int64, 1)
        assert len(memo) == 0
        memo.responses("s", np.arange(3, dtype=np.uint64), np.zeros(3, np.int64), 2,
                       _draw_counter(0), np.int64, 1)
        assert len(memo) == 3
    with pytest.raises(ValueError, match="closed"):
        len(memo)


WRITER = textwrap.dedent("""
    import json, os, sys, time
    import numpy as np
    sys.path.insert(0, {src!r})
    from fastldp.longitudinal import LGRR, MemoStore

    class Transparent(LGRR):
        # the instantaneous round is the identity: a report IS the permanent response used
        def _instantaneous(self, perm, gen):
            return perm[:, 0].copy()

    path, tag, seed, go = sys.argv[1], int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
    rng = np.random.default_rng(seed)
    mech = Transparent(domain_size=5, epsilon_inf=1.0, epsilon_1=0.5, codebook_seed=0)
    with MemoStore(path) as memo:
        print("ready", flush=True)
        while not os.path.exists(go):  # both start together
            time.sleep(0.005)
        print(json.dumps(["start", time.time()]), flush=True)
        for _ in range(80):
            ids = rng.choice(np.arange(1000, dtype=np.uint64), 50, replace=False)
            x = rng.integers(0, 5, 50)
            reports = mech.privatize(x, memo=memo, identities=ids, rng=rng)
            for i, v, r in zip(ids.tolist(), x.tolist(), reports.tolist()):
                print(json.dumps([i, v, r]), flush=True)
        print(json.dumps(["end", time.time()]), flush=True)
""")


def test_two_processes_reporting_concurrently_share_one_response_per_key(tmp_path):
    path = str(tmp_path / "memo.sqlite")
    go = str(tmp_path / "go")
    script = tmp_path / "writer.py"
    script.write_text(WRITER.format(src=os.path.abspath(SRC)))
    procs = [subprocess.Popen([sys.executable, str(script), path, str(tag), str(tag), go],
                              stdout=subprocess.PIPE, text=True) for tag in (1, 2)]
    for p in procs:
        assert p.stdout.readline().strip() == "ready"
    open(go, "w").close()
    outputs = [p.communicate(timeout=300)[0] for p in procs]
    assert all(p.returncode == 0 for p in procs)
    used = [{} for _ in procs]
    spans = []
    for k, out in enumerate(outputs):
        lines = [json.loads(line) for line in out.splitlines()]
        spans.append((lines[0][1], lines[-1][1]))
        for i, v, r in lines[1:-1]:
            assert used[k].setdefault((i, v), r) == r  # one process never sees two responses
    # the two writers ran at the same time, on overlapping keys
    assert spans[0][0] < spans[1][1] and spans[1][0] < spans[0][1]
    both = set(used[0]) & set(used[1])
    assert len(both) > 300
    with MemoStore(path) as memo:
        assert memo.integrity_check() == "ok"
        scope = LGRR(domain_size=5, epsilon_inf=1.0, epsilon_1=0.5).memo_scope
        stored = {(i, v): int.from_bytes(r, "little", signed=True)
                  for i, v, r in memo.conn.execute(
                      "SELECT identity, value, response FROM memo WHERE scope = ?", (scope,))}
    # exactly one response per key, and it is the one both processes used
    assert len(stored) == len(set(used[0]) | set(used[1]))
    for k in range(2):
        assert all(stored[key] == r for key, r in used[k].items())


KILLED = textwrap.dedent("""
    import json, sys
    import numpy as np
    sys.path.insert(0, {src!r})
    from fastldp.longitudinal import LGRR, MemoStore

    class Transparent(LGRR):
        # the instantaneous round is the identity, so a released report IS the
        # permanent response it depends on (what the test compares with the file)
        def _instantaneous(self, perm, gen):
            return perm[:, 0].copy()

    path, seed = sys.argv[1], int(sys.argv[2])
    mech = Transparent(domain_size=50, epsilon_inf=3.0, epsilon_1=1.0, codebook_seed=0)
    rng = np.random.default_rng(seed)
    with MemoStore(path) as memo:
        while True:
            ids = rng.choice(np.arange(5000), 200, replace=False)
            x = rng.integers(0, 50, 200)
            reports = mech.privatize(x, memo=memo, identities=ids, rng=rng)
            print(json.dumps([ids.tolist(), x.tolist(), reports.tolist()]), flush=True)
""")


@pytest.mark.slow
def test_kill_9_at_random_points_leaves_a_sound_memo_consistent_with_every_release(tmp_path):
    path = str(tmp_path / "memo.sqlite")
    script = tmp_path / "killed.py"
    script.write_text(KILLED.format(src=os.path.abspath(SRC)))
    rng = np.random.default_rng(11)
    released = {}
    for attempt in range(6):
        proc = subprocess.Popen([sys.executable, str(script), path, str(attempt)],
                                stdout=subprocess.PIPE, text=True)
        first = proc.stdout.readline()  # running: the next batch is somewhere in flight
        assert first, "the writer did not start"
        time.sleep(float(rng.uniform(0.05, 0.6)))
        proc.send_signal(signal.SIGKILL)
        rest = proc.stdout.read()
        proc.wait()
        assert proc.returncode == -signal.SIGKILL
        lines = [first] + rest.splitlines()
        complete = [ln for ln in lines if ln.endswith("]") or ln.endswith("]\n")]
        for line in complete:
            try:
                ids, x, reports = json.loads(line)
            except json.JSONDecodeError:  # the line cut by the kill was never released whole
                continue
            for key, r in zip(zip(ids, x), reports):
                assert released.setdefault(key, r) == r  # later runs reuse the stored response
        # the file reopens, is sound, and holds every released report's permanent response
        conn = sqlite3.connect(path)
        assert conn.execute("PRAGMA integrity_check").fetchone()[0] == "ok"
        conn.close()
        with MemoStore(path) as memo:
            keys = list(released)  # an identity may hold several values: memo.lookup
            mech = LGRR(domain_size=50, epsilon_inf=3.0, epsilon_1=1.0, codebook_seed=0)
            rows, found = memo.lookup(mech.memo_scope, np.array([k[0] for k in keys], np.uint64),
                                      np.array([k[1] for k in keys]), 50, np.int64, 1)
            assert found.all()
            assert rows[:, 0].tolist() == [released[k] for k in keys]
    assert len(released) > 1000
