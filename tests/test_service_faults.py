"""kill -9 under load: after every crash and restart, no acknowledged report is lost or counted twice.

Client threads send batches continuously (retrying with the same idempotency
key on connection errors); the server is SIGKILLed at random moments (seeded)
and restarted on the same store. Small segments make the crashes land
around segment rolls too. At the end the server's estimate, and the offline
decode of the store's segment files, must equal bit for bit the in-memory
estimate of exactly the acknowledged batches.
"""

import glob
import threading
import time

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
pytest.importorskip("httpx")
pytest.importorskip("pyarrow")

from fastldp.mechanisms import from_spec  # noqa: E402
from fastldp.reports import decode_files  # noqa: E402
from fastldp.service import Client  # noqa: E402
from fastldp.service.testing import running_server  # noqa: E402

OLH = {"mechanism": "OLH", "params": {"domain_size": 64, "epsilon": 1.0, "codebook_seed": 11}}


@pytest.mark.slow
def test_kill_9_at_random_points_loses_nothing_and_counts_nothing_twice(tmp_path):
    mech = from_spec(OLH)
    kills = 5
    threads, batches, size = 4, 60, 250
    rng = np.random.default_rng(2026)
    acked = [[] for _ in range(threads)]  # (ids, reports) of each acknowledged batch
    replayed = [0] * threads
    errors = []
    stop_sending = threading.Event()
    progress = threading.Condition()
    count = [0]  # batches acknowledged so far

    def client_loop(t, url, token):
        local = np.random.default_rng(t)
        with Client(url, token, retries=80, backoff=0.05, max_backoff=0.5, timeout=20) as c:
            for b in range(batches):
                if stop_sending.is_set():
                    return
                ids = np.arange(size) + (t * batches + b) * size
                reports = mech.privatize(local.integers(0, 64, size), identities=ids, rng=local)
                try:
                    answer = c.send_batch(ids, reports, key=f"t{t}-b{b}")
                except Exception as exc:  # pragma: no cover - reported below
                    errors.append(exc)
                    return
                acked[t].append((ids, reports))
                replayed[t] += bool(answer["replayed"])
                with progress:
                    count[0] += 1
                    progress.notify_all()

    with running_server(tmp_path, OLH, segment_rows=3000, publish_every=1) as srv:
        workers = [threading.Thread(target=client_loop, args=(t, srv.url, srv.token))
                   for t in range(threads)]
        for w in workers:
            w.start()
        for _ in range(kills):
            # a random point of the load: after 1..30 more acknowledged batches, plus up to
            # 50 ms, so that some kills land between a commit and its answer
            target = count[0] + int(rng.integers(1, 31))
            with progress:
                assert progress.wait_for(lambda: count[0] >= target or errors, 120)
            time.sleep(float(rng.uniform(0, 0.05)))
            srv.kill()
            srv.start()
        for w in workers:
            w.join(120)
        assert not any(w.is_alive() for w in workers)
        assert not errors, errors
        # every batch was eventually acknowledged (the clients retried through each crash)
        assert all(len(a) == batches for a in acked)
        ids = np.concatenate([i for a in acked for i, _ in a])
        reports = np.concatenate([r for a in acked for _, r in a])
        offline = mech.estimate(reports, identities=ids)
        got = Client(srv.url, srv.token).estimate()
        assert got["n"] == ids.size == threads * batches * size
        assert np.array_equal(np.array(got["estimate"]), offline.estimate)
    # after a graceful stop the segment files hold exactly the acknowledged reports
    files = sorted(glob.glob(str(srv.store / "*.parquet")))
    decoded = decode_files(mech, files)
    assert decoded.n == ids.size
    assert np.array_equal(decoded.estimate, offline.estimate)
    print(f"{kills} kills; {sum(replayed)} batches answered from a repeated key after a lost "
          f"ack; {len(files)} segments")
