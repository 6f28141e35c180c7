"""The collector's store under real operations: one writer per store, a full disk, reused keys.

The two-collector scenarios run real ``fastldp serve`` subprocesses
(:mod:`fastldp.service.testing`) on one store, as the review did; the rest
drive :class:`~fastldp.service.store.Store` in process. Every count is
exact: acknowledged reports = decoded reports, not approximately.
"""

import glob
import json
import os
import signal
import subprocess
import sys
import time

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
pytest.importorskip("pyarrow")

from fastldp import cli  # noqa: E402
from fastldp._stores import FileLock, LockHeld, store_segments  # noqa: E402
from fastldp.mechanisms import from_spec  # noqa: E402
from fastldp.reports import decode_files, write_reports  # noqa: E402
from fastldp.service import Client  # noqa: E402
from fastldp.service.app import probe_reports  # noqa: E402
from fastldp.service.store import Batch, Store, StoreLocked  # noqa: E402
from fastldp.service.testing import free_port, running_server  # noqa: E402

OLH = {"mechanism": "OLH", "params": {"domain_size": 64, "epsilon": 1.0, "codebook_seed": 5}}


def _reports(mech, first, n, seed):
    ids = np.arange(first, first + n, dtype=np.uint64)
    values = np.random.default_rng(seed).integers(0, 64, n)
    return ids, mech.privatize(values, identities=ids, rng=seed)


def _send(client, mech, first, batches, size=1000):
    """``batches`` batches of ``size`` reports from identity ``first`` on; each must be 201."""
    sent_ids, sent_reports = [], []
    for b in range(batches):
        ids, reports = _reports(mech, first + b * size, size, seed=first + b)
        answer = client.send_batch(ids, reports, key=f"k{first + b * size}")
        assert answer["accepted"] == size and answer["replayed"] is False
        sent_ids.append(ids)
        sent_reports.append(reports)
    return np.concatenate(sent_ids), np.concatenate(sent_reports)


def _files(store):
    return sorted(p.name for p in store.iterdir())


def _state(store):
    """Names, sizes and modification times of every file of the store (what 'touched' means)."""
    return {p.name: (p.stat().st_size, p.stat().st_mtime_ns) for p in store.iterdir()}


def _settled_state(store, quiet=0.5, timeout=20.0):
    """:func:`_state` once the running collector has stopped writing (its decode, publication
    and checkpoint run after the acks): the same for ``quiet`` seconds."""
    state, deadline = _state(store), time.monotonic() + timeout
    while time.monotonic() < deadline:
        time.sleep(quiet)
        now = _state(store)
        if now == state:
            return state
        state = now
    raise AssertionError(f"the collector kept writing its store for {timeout} s")


def _one_error_line(stderr):
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert len(lines) == 1, stderr
    return lines[0]


def _check_totals(srv, mech, ids, reports):
    """After a graceful restart: acknowledged = estimated = decoded, the estimate exact."""
    srv.restart()
    health = httpx.get(srv.url + "/v1/health", timeout=10).json()
    with Client(srv.url, srv.token) as client:
        live = client.estimate()
    offline = mech.estimate(reports, identities=ids)
    assert health["reports"] == ids.size
    assert live["n"] == ids.size and live["pending"] == 0
    assert np.array_equal(np.array(live["estimate"]), offline.estimate)
    srv.stop()  # the graceful stop closes the open segment: the files hold every report
    decoded = decode_files(mech, sorted(glob.glob(str(srv.store / "*.parquet"))))
    assert decoded.n == ids.size
    assert np.array_equal(decoded.estimate, offline.estimate)


def test_second_serve_on_the_same_store_and_port_refuses_before_recovery(tmp_path):
    """The review's first scenario: a second ``fastldp serve`` on the same store and port.

    The old code ran the store's recovery before it failed to bind the port:
    it copied the first server's journal (10,000 acknowledged reports, in no
    segment yet) into a segment of its own, and after a restart the first
    server's estimate said n = 15,000 against 10,000 acknowledged. Now the
    second one exits 2 in one line and the store is not touched (no file
    created, written or renamed): refused by the store's lock, naming the
    holder, or by the port in use where ``serve`` binds it before it opens
    the store (issue 32, item 7); either way before any recovery."""
    mech = from_spec(OLH)
    with running_server(tmp_path, OLH) as srv:
        with Client(srv.url, srv.token) as client:
            ids, reports = _send(client, mech, 0, 10)
        assert not glob.glob(str(srv.store / "*.parquet"))  # the journal holds them all
        before = _settled_state(srv.store)
        second = subprocess.run(srv.command(), capture_output=True, text=True, timeout=120)
        assert _state(srv.store) == before  # no recovery, no segment, no write
        assert second.returncode == 2, second.stderr
        line = _one_error_line(second.stderr)
        assert (f"the store {srv.store} is in use by pid {srv.pid}" in line
                or f"the port {srv.port} on 127.0.0.1 cannot be listened on" in line), line
        _check_totals(srv, mech, ids, reports)


def test_second_serve_on_another_port_is_refused_and_the_first_keeps_counting(tmp_path):
    """The review's second scenario: a second ``fastldp serve`` on the same store, another port.

    The old code started it: both wrote the journal, and the first server's
    next batch got a 500 (``UNIQUE constraint failed: pending.seq``) while
    its acknowledged reports were stored more than once. Now the second one
    exits 2 before it serves, and the first one's next batches are 201 with
    exact totals."""
    mech = from_spec(OLH)
    with running_server(tmp_path, OLH) as srv:
        with Client(srv.url, srv.token) as client:
            ids1, reports1 = _send(client, mech, 0, 6)
        other = free_port()
        proc = subprocess.Popen(srv.command(port=other), stdout=subprocess.PIPE,
                                stderr=subprocess.PIPE, text=True)
        try:
            serving = False
            deadline = time.monotonic() + 120
            while proc.poll() is None and time.monotonic() < deadline:
                try:  # the old code got this far: a second collector serving the same store
                    serving = httpx.get(f"http://127.0.0.1:{other}/v1/health",
                                        timeout=1).status_code == 200
                    break
                except httpx.HTTPError:
                    time.sleep(0.05)
            if serving:  # as a load balancer would, it gets a batch too (old code only)
                with Client(f"http://127.0.0.1:{other}", srv.token, retries=0) as client:
                    _send(client, mech, 100_000, 1)
            with Client(srv.url, srv.token, retries=0) as client:
                ids2, reports2 = _send(client, mech, 6000, 5)
        finally:
            if proc.poll() is None:
                proc.terminate()
            _, stderr = proc.communicate(timeout=60)
        assert proc.returncode == 2, stderr
        assert f"is in use by pid {srv.pid}" in _one_error_line(stderr)
        _check_totals(srv, mech, np.concatenate([ids1, ids2]),
                      np.concatenate([reports1, reports2]))


def test_a_killed_collectors_lock_is_released_by_the_os(tmp_path, capsys):
    """``kill -9`` leaves the lock file but not the lock: the restart takes it at once (no
    timeout guess) and recovers the journal; the file then names the new holder. Before
    the restart, ``fastldp decode STORE`` refuses the store: its journal holds acknowledged
    batches that no closed segment holds yet."""
    mech = from_spec(OLH)
    with running_server(tmp_path, OLH) as srv:
        with Client(srv.url, srv.token) as client:
            ids, reports = _send(client, mech, 0, 3)
        first = srv.pid
        srv.kill()
        assert json.loads((srv.store / "store.lock").read_text())["pid"] == first
        before = _state(srv.store)
        assert cli.main(["decode", str(srv.store), "--quiet"]) == 2
        err = _one_error_line(capsys.readouterr().err)
        assert "holds 3 acknowledged batches (3,000 reports) in its journal" in err
        assert "start fastldp serve on it once and stop it" in err
        # read only: the journal, its WAL and the segments are as they were (SQLite's
        # shared-memory index, -shm, is rebuilt by any reader after a crash)
        after = _state(srv.store)
        assert {k: v for k, v in after.items() if not k.endswith("-shm")} == \
            {k: v for k, v in before.items() if not k.endswith("-shm")}
        srv.start()
        assert json.loads((srv.store / "store.lock").read_text())["pid"] == srv.pid != first
        _check_totals(srv, mech, ids, reports)


def _store(root, **kwargs):
    mech = from_spec(OLH)
    shape, dtype = probe_reports(mech)
    return Store(root, mech, report_shape=shape, report_dtype=dtype, **kwargs)


def test_store_lock_in_process_touches_nothing_and_is_released_on_close(tmp_path):
    """Two ``Store`` objects on one directory in one process: the second is refused
    (``flock`` locks belong to open files, not processes) before it opens the journal."""
    first = _store(tmp_path)
    ids, reports = _reports(from_spec(OLH), 0, 10, 1)
    assert first.submit(Batch("t", "a", ids, np.ones(10), reports)).result(30)[0] == 201
    before = _state(tmp_path)
    with pytest.raises(StoreLocked, match=f"in use by pid {os.getpid()} on host") as info:
        _store(tmp_path)
    assert isinstance(info.value, ValueError)  # the CLI's one-line errors, exit status 2
    assert _state(tmp_path) == before
    first.close()
    again = _store(tmp_path)  # released by close
    assert again.stats.reports == 10
    again.close()


def test_store_in_a_directory_that_cannot_be_written_is_a_store_error(tmp_path, monkeypatch):
    """A store whose lock file cannot be created (a read-only directory; simulated, since
    permissions do not bind root) is a one-line StoreError naming the store, before any
    read of it."""
    import errno

    real_open = os.open

    def read_only(path, *args, **kwargs):
        if str(path).endswith("store.lock"):
            raise PermissionError(errno.EACCES, "Permission denied", str(path))
        return real_open(path, *args, **kwargs)

    monkeypatch.setattr(os, "open", read_only)
    with pytest.raises(ValueError, match=f"the store {tmp_path} cannot be locked for writing "
                                         r"\(Permission denied: .*store.lock\)"):
        _store(tmp_path)
    assert not (tmp_path / "index.sqlite").exists()


def test_decode_checkpoint_has_one_writer(tmp_path, capsys):
    """Two ``fastldp decode --checkpoint FILE`` at once would overwrite each other's
    checkpoint: the second one is refused in one line naming the first (exit 2), and the
    lock file is removed after a decode that finished."""
    mech = from_spec(OLH)
    ids, reports = _reports(mech, 0, 500, 2)
    path = write_reports(tmp_path / "r.parquet", mech, reports, identities=ids,
                         row_group_size=100)
    ckpt = tmp_path / "ckpt.json"
    code = ("import sys, time; from fastldp._stores import FileLock; "
            "FileLock(sys.argv[1], 'x', 'fastldp decode').acquire(); print('held', flush=True); "
            "time.sleep(60)")
    holder = subprocess.Popen([sys.executable, "-c", code, f"{ckpt}.lock"],
                              stdout=subprocess.PIPE, text=True)
    try:
        assert holder.stdout.readline().strip() == "held"
        assert cli.main(["decode", str(path), "--checkpoint", str(ckpt), "--quiet"]) == 2
        err = _one_error_line(capsys.readouterr().err)
        assert f"the decode checkpoint {ckpt} is in use by pid {holder.pid}" in err
        assert not ckpt.exists()
        with pytest.raises(LockHeld):
            decode_files(mech, path, checkpoint=ckpt)
    finally:
        holder.send_signal(signal.SIGKILL)
        holder.wait(10)
    # the holder was killed: its lock went with it
    result = decode_files(mech, path, checkpoint=ckpt)
    assert result.n == 500 and not ckpt.exists() and not os.path.exists(f"{ckpt}.lock")
    with FileLock(f"{ckpt}.lock", "x", "test"):  # a lock taken, released, taken again
        pass
    assert cli.main(["decode", str(path), "--checkpoint", str(ckpt), "--quiet"]) == 0


def _batch(mech, key, first, n, seed=0):
    ids, reports = _reports(mech, first, n, seed + first)
    return Batch("t", key, ids, np.ones(n), reports)


def _decoded(mech, store_dir):
    return decode_files(mech, sorted(glob.glob(str(store_dir / "seg-*.parquet"))))


@pytest.mark.parametrize("fault", ["sqlite_page_limit", "enospc_in_the_transaction"])
def test_disk_full_refuses_the_batch_whole_and_the_store_goes_on(tmp_path, fault, monkeypatch):
    """A commit that fails for lack of space fails the batch's ack with ``StoreFull`` (the
    route answers 507): nothing of the batch is stored (its key and identities are free), the
    writer thread lives on, and once space returns the same batch and later ones are 201;
    nothing acknowledged is lost (restart and the offline decode hold exactly them).

    The fault is real SQLite or injected, both in process: ``sqlite_page_limit`` sets
    ``PRAGMA max_page_count`` to the journal's current size, so SQLite's own
    SQLITE_FULL ("database or disk is full") path runs; ``enospc_in_the_transaction``
    raises ``OSError(ENOSPC)`` inside the transaction (as a write of the store would on a
    full filesystem). A real full filesystem needs a mount (root), which CI does not have.
    """
    import errno

    from fastldp.service.store import StoreFull

    mech = from_spec(OLH)
    store = _store(tmp_path)
    try:
        assert store.submit(_batch(mech, "a", 0, 100)).result(30)[0] == 201
        real_insert = Store._insert_identities
        if fault == "sqlite_page_limit":
            pages = store._db.execute("PRAGMA page_count").fetchone()[0]
            store._db.execute(f"PRAGMA max_page_count={pages}")
        else:
            def full(self, uniq):
                raise OSError(errno.ENOSPC, "No space left on device")
            monkeypatch.setattr(Store, "_insert_identities", full)
        for _ in range(2):  # the writer thread survives each failure
            with pytest.raises(StoreFull, match="out of disk space .* nothing of it was kept"):
                store.submit(_batch(mech, "b", 100, 2000)).result(30)
        assert store.stats.reports == 100 and store.stats.batches == 1
        if fault == "sqlite_page_limit":  # space returns
            store._db.execute("PRAGMA max_page_count=1073741823")
        else:
            monkeypatch.setattr(Store, "_insert_identities", real_insert)
        status, body = store.submit(_batch(mech, "b", 100, 2000)).result(30)
        assert status == 201 and body["reports"] == 2100  # a new batch, not a replay
        assert store.submit(_batch(mech, "c", 2100, 300)).result(30)[0] == 201
    finally:
        store.close()
    ids, reports = _reports(mech, 0, 100, 0)
    parts = [_reports(mech, 0, 100, 0), _reports(mech, 100, 2000, 100),
             _reports(mech, 2100, 300, 2100)]
    ids = np.concatenate([p[0] for p in parts])
    reports = np.concatenate([p[1] for p in parts])
    offline = mech.estimate(reports, identities=ids)
    again = _store(tmp_path)
    result, _ = again.result()
    again.close()
    assert result.n == 2400 and np.array_equal(result.estimate, offline.estimate)
    decoded = _decoded(mech, tmp_path)
    assert decoded.n == 2400 and np.array_equal(decoded.estimate, offline.estimate)


@pytest.mark.parametrize("step", ["write", "close"])
def test_a_segment_write_that_fails_for_space_loses_nothing(tmp_path, step, monkeypatch):
    """ENOSPC while a Parquet segment is written (a row group, or the footer at the roll):
    the batches were acknowledged and are in the journal, so the open segment is dropped and
    written again from the journal at the next batch; the segments then hold every
    acknowledged report exactly once. (The failure is injected into ReportWriter: the call
    fails after it wrote, as a write cut short leaves a file holding part of what it was
    given; the old code wrote the rows again into the same file, or kept writing to a
    closed writer.)"""
    import errno

    from fastldp.reports import ReportWriter

    mech = from_spec(OLH)
    real = getattr(ReportWriter, step)
    failures = [2]  # the 2nd call fails (after a row group was written: a torn file)
    calls = [0]

    def flaky(self, *args, **kwargs):
        calls[0] += 1
        out = real(self, *args, **kwargs)
        if calls[0] in failures:
            raise OSError(errno.ENOSPC, "No space left on device")
        return out

    monkeypatch.setattr(ReportWriter, step, flaky)
    store = _store(tmp_path, segment_rows=1000, row_group=250)
    parts = []
    try:
        for b in range(12):
            ids, reports = _reports(mech, b * 250, 250, b)
            assert store.submit(Batch("t", f"k{b}", ids, np.ones(250), reports)).result(30)[0] \
                == 201
            parts.append((ids, reports))
    finally:
        store.close()
    assert calls[0] > 2  # the fault was met, and writing went on after it
    ids = np.concatenate([p[0] for p in parts])
    reports = np.concatenate([p[1] for p in parts])
    offline = mech.estimate(reports, identities=ids)
    decoded = _decoded(mech, tmp_path)
    assert decoded.n == 3000 and np.array_equal(decoded.estimate, offline.estimate)
    assert not list(tmp_path.glob("*.partial"))
    assert store_segments(tmp_path) == [str(p) for p in sorted(tmp_path.glob("seg-*.parquet"))]


def _answers_in_one_group(store, batches):
    """Submit ``batches`` so that the writer commits them as one group: it is held on the
    journal's lock by a first batch while they queue up behind it."""
    groups = []
    real = store._commit_group
    store._commit_group = lambda group: (groups.append(len(group)), real(group))[1]
    mech = from_spec(OLH)
    with store._db_lock:
        first = store.submit(_batch(mech, "holder", 10**9, 1))
        while not store._queue.empty():  # the writer took it and waits for the lock
            time.sleep(0.001)
        futures = [store.submit(b) for b in batches]
    assert first.result(30)[0] == 201
    answers = [f.result(30) for f in futures]
    assert groups[-1] == len(batches), groups
    return answers


@pytest.mark.parametrize("grouped", [False, True])
def test_a_key_reused_with_another_body_is_422_naming_it(tmp_path, grouped):
    """A key names one batch: the same body again is the first answer (a client's retry),
    another body is 422 ``idempotency_key_reused`` naming the key, and nothing of it is
    stored (the old code answered ``200 replayed`` and dropped the new batch silently). A
    key whose first batch was refused (409) stays free. The same rule holds when the
    batches meet in one commit group (``grouped``) as when they are committed one by one."""
    mech = from_spec(OLH)
    a1 = _batch(mech, "k", 0, 50)
    a2 = _batch(mech, "k", 0, 50)  # the same batch (a retry): equal bytes
    b = _batch(mech, "k", 50, 50)  # another body, the same key
    c = _batch(mech, "j", 100, 50)
    d = _batch(mech, "m", 0, 10)  # identities already taken by a1: 409
    d2 = _batch(mech, "m", 200, 10)  # the key of a refused batch is free
    store = _store(tmp_path)
    try:
        batches = [a1, a2, b, c, d, d2]
        if grouped:
            answers = _answers_in_one_group(store, batches)
        else:
            answers = [store.submit(x).result(30) for x in batches]
        assert [s for s, _ in answers] == [201, 200, 422, 201, 409, 201]
        assert answers[1][1] == dict(answers[0][1], replayed=True)
        assert answers[2][1]["error"] == "idempotency_key_reused"
        assert "idempotency key 'k'" in answers[2][1]["detail"]
        assert "nothing of this batch was stored" in answers[2][1]["detail"]
        # b was not stored: its identities are free for a batch under a new key
        assert store.submit(_batch(mech, "k2", 50, 50)).result(30)[0] == 201
        # and across commits: the same body replays, another body is refused
        assert store.submit(_batch(mech, "k", 0, 50)).result(30)[0] == 200
        assert store.submit(_batch(mech, "k", 1000, 5)).result(30)[0] == 422
        # the digest is of the batch, not of its encoding: the fixed epsilon given or not
        e = _batch(mech, "e", 3000, 5)
        assert store.submit(e).result(30)[0] == 201
        assert store.submit(Batch("t", "e", e.identities, np.full(5, 1.0),
                                  e.reports.copy())).result(30)[0] == 200
    finally:
        store.close()
    assert store.stats.reports == 50 + 50 + 10 + 50 + 5 + grouped  # (+ the holder's report)


def test_stores_without_digests_still_open_and_replay_as_before(tmp_path):
    """A store written before keys carried a digest (no ``digest`` column) opens: the column
    is added, its old keys replay with any body (as before: nothing to compare with), and
    keys used from then on are checked."""
    import sqlite3

    mech = from_spec(OLH)
    store = _store(tmp_path)
    assert store.submit(_batch(mech, "old", 0, 20)).result(30)[0] == 201
    store.close()
    db = sqlite3.connect(tmp_path / "index.sqlite")
    db.execute("ALTER TABLE batches DROP COLUMN digest")  # the old layout
    db.commit()
    db.close()
    store = _store(tmp_path)
    try:
        assert store.submit(_batch(mech, "old", 500, 20)).result(30)[0] == 200
        assert store.submit(_batch(mech, "new", 20, 20)).result(30)[0] == 201
        assert store.submit(_batch(mech, "new", 600, 20)).result(30)[0] == 422
    finally:
        store.close()
    assert store.stats.reports == 40


def _offline(mech, parts):
    ids = np.concatenate([p[0] for p in parts])
    reports = np.concatenate([p[1] for p in parts])
    return mech.estimate(reports, identities=ids)


def test_publication_steps_hold_across_batches_and_restarts(tmp_path):
    """The public estimate moves in steps of at least ``publish_every`` reports, each the
    exact estimate of the whole batches before its step (bit for bit); a restart shows the
    last step again (recorded in the journal), even when it ends inside a segment's row
    group, not the estimate of every recovered report."""
    mech = from_spec(OLH)
    sizes = [400, 300, 200, 150, 700, 100, 250]  # steps after 1,050 (4 batches) and 2,100
    parts = [_reports(mech, sum(sizes[:i]), n, i) for i, n in enumerate(sizes)]
    store = _store(tmp_path, publish_every=1000, segment_rows=1000, row_group=512)
    seen = []
    try:
        for i, (ids, reports) in enumerate(parts):
            assert store.submit(Batch("t", f"k{i}", ids, np.ones(ids.size), reports)
                                ).result(30)[0] == 201
            store.wait_published(i + 1, timeout=30)
            seen.append(store.result()[0].n)
        # one batch at a time (each decoded before the next), so each step is exact
        assert seen == [0, 0, 0, 1050, 1050, 1050, 2100]
        assert np.array_equal(store.result()[0].estimate, _offline(mech, parts).estimate)
        ids, reports = _reports(mech, 5000, 600, 9)
        assert store.submit(Batch("t", "late", ids, np.ones(600), reports)).result(30)[0] == 201
        assert store.wait_published(store.committed_seq(), timeout=30) is False  # 600 < 1000
        result, seq, decoded = store.published()
        assert (result.n, seq, decoded) == (2100, 7, 2700)
    finally:
        store.close()
    from fastldp.reports import ReportFile

    edges = np.cumsum([f._file.metadata.row_group(g).num_rows
                       for f in map(ReportFile, sorted(glob.glob(str(tmp_path / "seg-*"))))
                       for g in range(f.num_row_groups)])
    assert edges[-1] == 2700 and 2100 not in edges  # the step ends inside a row group
    for publish_every, shown in [(1000, 2100), (500, 2700), (1, 2700)]:
        store = _store(tmp_path, publish_every=publish_every)
        result, _ = store.result()
        store.close()
        assert result.n == shown
        want = parts if shown == 2100 else parts + [(ids, reports)]
        assert np.array_equal(result.estimate, _offline(mech, want).estimate)
    # publish_every=1 dropped the record: every report is public from then on, and a later
    # publish_every=1000 starts from all of them
    store = _store(tmp_path, publish_every=1000)
    assert store.result()[0].n == 2700
    store.close()


def test_publication_by_time_and_the_step_inside_a_decode_call(tmp_path):
    """``publish_seconds``: a due step waits for its time and is then made without a new
    batch (``wait_published`` waits for it); batches merged in one decode call are published
    together, on the call's boundary, and never closer than ``publish_every``."""
    mech = from_spec(OLH)
    store = _store(tmp_path, publish_every=100, publish_seconds=0.3)
    try:
        ids, reports = _reports(mech, 0, 150, 1)
        t0 = time.monotonic()
        assert store.submit(Batch("t", "a", ids, np.ones(150), reports)).result(30)[0] == 201
        store.wait_applied(1, timeout=30)
        assert store.result()[0].n == 0 or time.monotonic() - t0 >= 0.3
        assert store.wait_published(1, timeout=30) is True
        assert store.result()[0].n == 150
        # many small batches at once: the decoder merges them in a few calls
        futures = [store.submit(Batch("t", f"b{i}", *(lambda x: (x[0], np.ones(10), x[1]))(
            _reports(mech, 1000 + 10 * i, 10, i)))) for i in range(30)]
        assert all(f.result(30)[0] == 201 for f in futures)
        assert store.wait_published(store.committed_seq(), timeout=30) is True
        assert store.result()[0].n == 450
    finally:
        store.close()
    with pytest.raises(ValueError, match="'publish_every' parameter of Store must be an int"):
        _store(tmp_path / "x", publish_every=0)
    with pytest.raises(ValueError, match="'publish_seconds'"):
        _store(tmp_path / "y", publish_seconds=float("nan"))


def _support(delta):
    """The items a one-report difference of OLH estimates lifts: it is (1[v in S] - q) /
    (p - q) per item, two levels; the upper one is the report's support set S."""
    delta = np.asarray(delta, dtype=np.float64)
    if not delta.max() - delta.min() > 1e-9:
        return set()  # no difference: nothing to read
    return set(np.flatnonzero(delta > (delta.max() + delta.min()) / 2).tolist())


@pytest.mark.parametrize("publish_every", [None, 1])
def test_differencing_two_estimates_around_one_report(tmp_path, publish_every):
    """The review's attack: post a batch, read ``/v1/estimate``, post a one-report batch,
    read again, and read that report's OLH support set off the difference. At the default
    policy (``--publish-every 1000``) the two estimates are identical and the next one that
    differs is 1,000 reports away: the attack isolates nothing. With ``--publish-every 1``
    (every batch public, the old behaviour) it recovers the support set exactly."""
    mech = from_spec(OLH)
    options = {} if publish_every is None else {"publish_every": publish_every}
    ids, reports = _reports(mech, 0, 1000, 3)
    target_ids, target = _reports(mech, 5000, 1, 4)  # the victim's report
    truth = _support(mech.estimate(target, identities=target_ids).estimate)
    assert 5 <= len(truth) <= 40  # about 64 / g = 16 items
    with running_server(tmp_path, OLH, **options) as srv, Client(srv.url, srv.token) as client:
        assert client.send_batch(ids, reports)["accepted"] == 1000
        before = client.estimate()
        assert client.send_batch(target_ids, target)["accepted"] == 1
        after = client.estimate()
        recovered = _support(np.array(after["estimate"]) - np.array(before["estimate"]))
        if publish_every == 1:
            assert after["n"] - before["n"] == 1 and recovered == truth
            return
        assert after == dict(before, pending=1, unpublished=1,
                             updated=after["updated"])  # nothing else moved
        assert recovered == set() != truth
        assert httpx.get(srv.url + "/v1/mechanism").json()["publish_every"] == 1000
        more_ids, more = _reports(mech, 6000, 999, 5)
        assert client.send_batch(more_ids, more)["accepted"] == 999
        step = client.estimate()
        assert step["n"] - before["n"] == 1000 and step["pending"] == 0
        assert np.array_equal(np.array(step["estimate"]), mech.estimate(
            np.concatenate([reports, target, more]),
            identities=np.concatenate([ids, target_ids, more_ids])).estimate)


def test_disk_full_is_507_with_the_reason_over_http(tmp_path):
    """Through the ingest route (in process, Starlette's TestClient): a batch whose commit
    meets a full journal (SQLite's page limit, as in the store test above) is a 507 with a
    JSON reason, counted as refused, and the same connection then takes the same batch once
    space returns; nothing acknowledged is lost."""
    from starlette.testclient import TestClient

    from fastldp.service import hash_token
    from fastldp.service.app import ServiceConfig, create_app

    mech = from_spec(OLH)
    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"t {hash_token('secret')}\n")
    app = create_app(ServiceConfig(mechanism=OLH, store=tmp_path / "store", tokens=tokens,
                                   publish_every=1))
    headers = {"Authorization": "Bearer secret"}

    def batch(key, first, n):
        ids, reports = _reports(mech, first, n, first)
        return {"idempotency_key": key, "identities": ids.tolist(),
                "reports": reports.tolist()}

    with TestClient(app) as http:
        store = app.state.collector.store
        assert http.post("/v1/reports", json=batch("a", 0, 100), headers=headers
                         ).status_code == 201
        pages = store._db.execute("PRAGMA page_count").fetchone()[0]
        store._db.execute(f"PRAGMA max_page_count={pages}")
        full = http.post("/v1/reports", json=batch("b", 100, 2000), headers=headers)
        assert full.status_code == 507, full.text
        assert full.json()["error"] == "insufficient_storage"
        assert "out of disk space" in full.json()["detail"]
        assert "nothing of it was kept" in full.json()["detail"]
        assert http.get("/v1/stats").json()["refused"]["insufficient_storage"] == 1
        store._db.execute("PRAGMA max_page_count=1073741823")
        again = http.post("/v1/reports", json=batch("b", 100, 2000), headers=headers)
        assert again.status_code == 201 and again.json()["reports"] == 2100
        assert http.get("/v1/estimate?wait=1").json()["n"] == 2100
    decoded = _decoded(mech, tmp_path / "store")
    assert decoded.n == 2100


@pytest.mark.parametrize("json_each", [True, False])
def test_a_duplicate_refusal_counts_every_identity_and_names_the_first_100(tmp_path, json_each):
    """Issue 32, item 2: a refused batch's identities are counted and picked by SQLite (no
    Python loop over identities), and the refusal names at most 100 of them (it named up
    to 1,000, found 500 at a time): the smallest in uint64 order, repeats inside the batch
    and identities above 2**63 included."""
    store = _store(tmp_path)
    store._json_each = store._json_each and json_each
    mech = from_spec(OLH)
    top = np.array([2**63 + 5, 2**64 - 1], dtype=np.uint64)
    ids = np.concatenate([np.arange(1_000, 6_000, dtype=np.uint64), top])
    reports = mech.privatize(np.zeros(ids.size, dtype=np.int64), rng=0)
    assert store.submit(Batch("t", "a", ids, np.ones(ids.size), reports)).result(30)[0] == 201
    # 5,002 seen before, 7 repeated inside the batch (3 of them also seen before), 10 new
    again = np.concatenate([ids, np.arange(6_000, 6_010, dtype=np.uint64),
                            np.array([7, 7, 8, 8, 1_000, 1_001, 2**64 - 1], dtype=np.uint64)])
    reports = mech.privatize(np.zeros(again.size, dtype=np.int64), rng=1)
    status, body = store.submit(Batch("t", "b", again, np.ones(again.size), reports)).result(30)
    store.close()
    assert status == 409 and body["error"] == "duplicate_identity"
    assert body["detail"].startswith("5004 identities of the batch were already reported")
    assert body["identities"] == [7, 8, *range(1_000, 1_098)]
    assert len(body["identities"]) == 100
