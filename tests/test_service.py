"""fastldp serve: exactly-once durable ingest, the live estimate, security codes, the client.

Every server runs in a subprocess on a loopback port (fastldp.service.testing).
The reference for every estimate is the in-memory ``estimate`` (or the
offline ``decode_files``) of the same reports: the live partial must equal it
bit for bit, not approximately.
"""

import glob
import io
import json
import subprocess

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
pa = pytest.importorskip("pyarrow")

from fastldp.mechanisms import from_spec  # noqa: E402
from fastldp.reports import decode_files  # noqa: E402
from fastldp.service import Client, hash_token  # noqa: E402
from fastldp.service.auth import RateLimiter, TokenTable, read_tokens  # noqa: E402
from fastldp.service.client import ServiceError, arrow_batch, tls_context  # noqa: E402
from fastldp.service.testing import running_server  # noqa: E402

OLH = {"mechanism": "OLH", "params": {"domain_size": 64, "epsilon": 1.0, "codebook_seed": 7}}
JPRS = {"mechanism": "JPRS", "params": {"shape": [6, 5], "k": 2, "s": 4, "codebook_seed": 3,
                                        "support_rule": "raw"}}


def _auth(token):
    return {"Authorization": f"Bearer {token}"}


def _post(srv, obj=None, token=None, **kwargs):
    headers = kwargs.pop("headers", {})
    if token is not False:
        headers.update(_auth(token or srv.token))
    if obj is not None:
        kwargs["content"] = json.dumps(obj).encode()
        headers.setdefault("Content-Type", "application/json")
    return httpx.post(srv.url + "/v1/reports", headers=headers, timeout=30, **kwargs)


@pytest.fixture(scope="module")
def olh_server(tmp_path_factory):
    # publish_every=1: every batch in the public estimate (compared with the offline one)
    with running_server(tmp_path_factory.mktemp("olh"), OLH, tokens={"ranged": (1000, 1999)},
                        max_body=300_000, publish_every=1) as srv:
        yield srv


def _zipf(n, rng):
    w = 1.0 / np.arange(1, 65) ** 1.1
    return rng.choice(64, size=n, p=w / w.sum())


def test_live_estimate_equals_the_offline_estimate_bit_for_bit(olh_server):
    # fails if a batch is dropped, counted twice, or the partial is not exact (merge order)
    srv = olh_server
    mech = from_spec(OLH)
    rng = np.random.default_rng(1)
    ids = np.arange(100_000, 103_500)
    values = _zipf(ids.size, rng)
    reports = mech.privatize(values, identities=ids, rng=2)
    arrow = Client(srv.url, srv.token)
    assert arrow.send(reports[:2000], identities=ids[:2000], privatize=False,
                      batch_size=700) == {"accepted": 2000, "replayed": 0, "batches": 3}
    js = Client(srv.url, srv.token, format="json")
    js.send(reports[2000:], identities=ids[2000:], privatize=False, batch_size=1000)
    got = arrow.estimate()
    arrow.close()
    js.close()  # an idle keep-alive connection would hold the graceful stop for 3 s
    offline = _offline(srv, mech)
    assert got["n"] == offline.n
    assert np.array_equal(np.array(got["estimate"]), offline.estimate)
    assert np.array_equal(np.array(got["std"]), offline.std)
    assert got["shape"] == [64] and got["kind"] == "counts" and got["mechanism"] == "OLH"
    assert got["privacy"] == str(offline.privacy)
    assert got["sanitization"]["n_received"] == offline.n


def _offline(srv, mech):
    """The in-memory estimate of every report the server acknowledged, from its journal.

    Reads the identities, budgets and reports back through a graceful restart
    (which closes the open segment) and decodes the segment files offline.
    """
    srv.restart()
    return decode_files(mech, sorted(glob.glob(str(srv.store / "*.parquet"))))


def test_client_privatizes_with_the_servers_mechanism(olh_server):
    # the client's local mechanism is the server's (same codebook seed): the same coins give
    # the same reports as privatizing with the published spec here
    srv = olh_server
    client = Client(srv.url, srv.token)
    mech = client.mechanism()
    assert mech.stream_params() == from_spec(OLH).stream_params()
    info = httpx.get(srv.url + "/v1/mechanism").json()
    assert info["spec"] == OLH and info["kind"] == "counts" and info["epsilon"] == 1.0
    assert info["estimate_shape"] == [64] and info["max_body"] == 300_000


def test_repeated_key_is_counted_once_and_overlap_is_409(olh_server):
    srv = olh_server
    client = Client(srv.url, srv.token)
    mech = client.mechanism()
    ids = np.arange(200_000, 200_300)
    reports = mech.privatize(np.zeros(300, dtype=np.int64), identities=ids, rng=0)
    before = client.stats()["reports"]
    first = client.send_batch(ids, reports, key="batch-a")
    again = client.send_batch(ids, reports, key="batch-a")
    assert first["replayed"] is False and again["replayed"] is True
    assert {k: v for k, v in again.items() if k != "replayed"} == \
        {k: v for k, v in first.items() if k != "replayed"}
    assert client.stats()["reports"] == before + 300  # once, not twice
    # the same key with another batch is refused, naming the key (nothing counted)
    with pytest.raises(ServiceError) as info:
        client.send_batch(ids + 10_000, reports, key="batch-a")
    assert info.value.status == 422
    assert info.value.body["error"] == "idempotency_key_reused"
    assert "'batch-a'" in info.value.body["detail"]
    assert client.stats()["reports"] == before + 300
    # a new key with identities already seen: 409 naming exactly them, nothing counted
    overlap = np.arange(200_290, 200_310)
    with pytest.raises(ServiceError) as info:
        client.send_batch(overlap, reports[:20], key="batch-b")
    assert info.value.status == 409
    assert info.value.body["identities"] == list(range(200_290, 200_300))
    assert client.stats()["reports"] == before + 300
    # identities repeated inside one batch are refused too
    with pytest.raises(ServiceError) as info:
        client.send_batch([300_000, 300_000], reports[:2], key="batch-c")
    assert info.value.status == 409 and info.value.body["identities"] == [300_000]
    # the refused batch's new identities were not recorded: they are accepted later
    assert client.send_batch(np.arange(200_300, 200_310), reports[:10],
                             key="batch-d")["accepted"] == 10


def test_tokens_401_and_identity_ranges_403(olh_server):
    srv = olh_server
    batch = {"idempotency_key": "sec-1", "identities": [1500, 1501], "reports": [1, 2]}
    assert _post(srv, batch, token=False).status_code == 401
    assert _post(srv, batch, token="not-a-token").status_code == 401
    assert _post(srv, batch, headers={"Authorization": "Basic " + srv.token},
                 token=False).status_code == 401
    ranged = srv.tokens["ranged"]
    out = dict(batch, identities=[1999, 2000])
    answer = _post(srv, out, token=ranged)
    assert answer.status_code == 403 and answer.json()["identities"] == [2000]
    assert _post(srv, dict(batch, identities=[999, 1000]), token=ranged).status_code == 403
    assert _post(srv, batch, token=ranged).status_code == 201  # inside 1000..1999
    refused = httpx.get(srv.url + "/v1/stats").json()["refused"]
    assert refused["unauthorized"] >= 3 and refused["forbidden_identity"] >= 2


@pytest.mark.parametrize("body, reason", [
    (b"not json", "not JSON"),
    (b"[1, 2]", "JSON object"),
    (json.dumps({"identities": [1], "reports": [1]}).encode(), "idempotency_key"),
    (json.dumps({"idempotency_key": "x1", "identities": [1, 2], "reports": [1]}).encode(),
     "shape"),
    (json.dumps({"idempotency_key": "x2", "identities": [-1], "reports": [1]}).encode(),
     "identities"),
    (json.dumps({"idempotency_key": "x3", "identities": [2**64], "reports": [1]}).encode(),
     "identities"),
    (json.dumps({"idempotency_key": "x4", "identities": [1], "reports": [1.5]}).encode(),
     "integers"),
    (json.dumps({"idempotency_key": "x5", "identities": [1], "reports": [1],
                 "epsilons": [2.0]}).encode(), "fixed epsilon"),
    (json.dumps({"idempotency_key": "has space", "identities": [1], "reports": [1]}).encode(),
     "idempotency key"),
    (json.dumps({"idempotency_key": "x6", "identities": [], "reports": []}).encode(),
     "no reports"),
    (json.dumps({"idempotency_key": "x7", "identities": [1], "reports": [[1, 2]]}).encode(),
     "shape"),
    (json.dumps({"idempotency_key": "x8", "identities": [True], "reports": [1]}).encode(),
     "booleans"),
])
def test_malformed_bodies_are_422_with_the_reason(olh_server, body, reason):
    answer = _post(olh_server, content=body, headers={"Content-Type": "application/json"})
    assert answer.status_code == 422, answer.text
    assert answer.json()["error"] == "malformed" and reason in answer.json()["detail"]


def test_malformed_arrow_is_422(olh_server):
    srv = olh_server
    headers = {"Content-Type": "application/vnd.apache.arrow.stream", "Idempotency-Key": "ar-1"}
    assert _post(srv, content=b"garbage", headers=dict(headers)).status_code == 422
    table = pa.table({"identity": pa.array([1, 2], pa.uint64()), "report": ["a", "b"]})
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as w:
        w.write_table(table)
    answer = _post(srv, content=sink.getvalue(), headers=dict(headers))
    assert answer.status_code == 422 and "'report' must be numbers" in answer.json()["detail"]
    good = arrow_batch(np.array([400_000], dtype=np.uint64), np.array([3]))
    no_key = {"Content-Type": headers["Content-Type"]}
    assert _post(srv, content=good, headers=no_key).status_code == 422
    assert _post(srv, content=good, headers=dict(headers)).status_code == 201


def test_body_over_the_public_limit_is_413(olh_server):
    srv = olh_server
    big = b"x" * 300_001
    assert _post(srv, content=big, headers={"Content-Type": "application/json"}
                 ).status_code == 413

    def chunks():  # no Content-Length: the limit holds on the stream too
        for _ in range(40):
            yield b"y" * 10_000
    assert _post(srv, content=chunks(), headers={"Content-Type": "application/json"}
                 ).status_code == 413


def test_no_endpoint_serves_a_report(olh_server):
    # the routes are exactly the documented ones, and only the POST takes reports in
    srv = olh_server
    for path in ("/v1/reports", "/v1/reports/1", "/v1/batches", "/v1/identities",
                 "/store/seg-000001.parquet", "/static/../store/index.sqlite"):
        assert httpx.get(srv.url + path).status_code in (404, 405), path
    for path in ("/v1/health", "/v1/mechanism", "/v1/estimate", "/v1/stats", "/metrics"):
        text = httpx.get(srv.url + path).text
        assert "identities" not in text and "report\"" not in text, path


def test_metrics_are_prometheus_text(olh_server):
    text = httpx.get(olh_server.url + "/metrics").text
    lines = {line.split(" ")[0]: line.split(" ")[1] for line in text.splitlines()
             if line and not line.startswith("#")}
    stats = httpx.get(olh_server.url + "/v1/stats").json()
    assert int(lines["fastldp_reports_accepted_total"]) == stats["reports"]
    assert int(lines['fastldp_ingest_latency_seconds_bucket{le="+Inf"}']) == int(
        lines["fastldp_ingest_latency_seconds_count"])
    assert 'fastldp_requests_refused_total{reason="duplicate_identity"}' in lines


def test_personal_budgets_matrix_restart_and_offline_decode(tmp_path):
    """JPRS with personal budgets: batches acknowledged before a kill -9 (in the journal only)
    are in the estimate after the restart, which equals the in-memory estimate, and so does
    ``fastldp decode DIR/*.parquet`` after the stop."""
    mech = from_spec(JPRS)
    rng = np.random.default_rng(5)
    import scipy.sparse as sp

    n = 2500
    ids = np.arange(n)
    cells = rng.integers(0, 30, size=n)
    relations = sp.csr_matrix((np.ones(n, dtype=np.int8), cells, np.arange(n + 1)),
                              shape=(n, 30))
    eps = rng.uniform(0.5, 2.0, n)
    reports = mech.privatize(relations, epsilons=eps, identities=ids, rng=6)
    offline = mech.estimate(reports, epsilons=eps, identities=ids)
    with running_server(tmp_path, JPRS, publish_every=1) as srv:
        client = Client(srv.url, srv.token)
        with pytest.raises(ServiceError) as info:  # personal budgets are required
            client.send_batch(ids[:3], reports[:3])
        assert info.value.status == 422
        client.send(reports[:1200], identities=ids[:1200], epsilons=eps[:1200],
                    privatize=False, batch_size=500)
        srv.kill()  # no segment was closed: the batches live in the journal only
        assert not glob.glob(str(srv.store / "*.parquet"))
        srv.start()
        client = Client(srv.url, srv.token)
        client.send(reports[1200:], identities=ids[1200:], epsilons=eps[1200:],
                    privatize=False, batch_size=500)
        got = client.estimate()
        assert got["kind"] == "matrix" and got["shape"] == [6, 5] and got["n"] == n
        assert np.array_equal(np.array(got["estimate"]).reshape(6, 5), offline.matrix)
        client.close()
    files = sorted(glob.glob(str(srv.store / "*.parquet")))
    assert len(files) == 2  # the recovery's segment, and the one the graceful stop closed
    out = tmp_path / "r.npz"
    from fastldp import cli
    from fastldp.reports import load_result

    assert cli.main(["decode", *files, "--out", str(out), "--quiet"]) == 0

    assert np.array_equal(load_result(out).estimate, offline.matrix)


def _self_signed(tmp_path):
    """A certificate for 127.0.0.1 and its key (cryptography, else the openssl command)."""
    cert, key = tmp_path / "cert.pem", tmp_path / "key.pem"
    try:
        import datetime
        import ipaddress

        from cryptography import x509
        from cryptography.hazmat.primitives import hashes, serialization
        from cryptography.hazmat.primitives.asymmetric import ec
        from cryptography.x509.oid import NameOID
    except ImportError:
        import shutil

        if shutil.which("openssl") is None:
            pytest.skip("neither the cryptography package nor the openssl command is installed")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "ec", "-pkeyopt",
                        "ec_paramgen_curve:prime256v1", "-nodes", "-keyout", str(key), "-out",
                        str(cert), "-days", "1", "-subj", "/CN=127.0.0.1",
                        "-addext", "subjectAltName=IP:127.0.0.1"], check=True,
                       capture_output=True, timeout=60)
        return cert, key
    private = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, "127.0.0.1")])
    now = datetime.datetime.now(datetime.timezone.utc)
    certificate = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
                   .public_key(private.public_key()).serial_number(x509.random_serial_number())
                   .not_valid_before(now - datetime.timedelta(minutes=5))
                   .not_valid_after(now + datetime.timedelta(days=1))
                   .add_extension(x509.SubjectAlternativeName(
                       [x509.IPAddress(ipaddress.ip_address("127.0.0.1"))]), critical=False)
                   .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
                   .sign(private, hashes.SHA256()))
    cert.write_bytes(certificate.public_bytes(serialization.Encoding.PEM))
    key.write_bytes(private.private_bytes(serialization.Encoding.PEM,
                                          serialization.PrivateFormat.PKCS8,
                                          serialization.NoEncryption()))
    return cert, key


def test_tls_and_the_rate_limit_429(tmp_path):
    cert, key = _self_signed(tmp_path)
    with running_server(tmp_path, OLH, tls=(cert, key), rate=1000) as srv:
        assert srv.url.startswith("https://")
        with pytest.raises(httpx.ConnectError):  # an unknown certificate is refused
            httpx.get(srv.url + "/v1/health", timeout=10)
        client = Client(srv.url, srv.token, verify=cert, retries=0)
        mech = client.mechanism()
        ids = np.arange(900)
        reports = mech.privatize(np.zeros(900, dtype=np.int64), identities=ids, rng=0)
        assert client.send_batch(ids, reports)["accepted"] == 900  # the burst: 1000 reports
        answer = httpx.post(srv.url + "/v1/reports", verify=tls_context(cert), headers=_auth(srv.token),
                            json={"idempotency_key": "r2", "identities": list(range(900, 1800)),
                                  "reports": reports.tolist()})
        assert answer.status_code == 429 and int(answer.headers["retry-after"]) >= 1
        # the client waits as told and the batch goes through
        patient = Client(srv.url, srv.token, verify=cert, retries=5)
        assert patient.send_batch(ids + 900, reports)["accepted"] == 900
        assert patient.stats()["refused"]["rate_limited"] >= 1
        client.close()
        patient.close()
        # plain HTTP to the TLS port gets no answer
        with pytest.raises(httpx.HTTPError):
            httpx.get(srv.url.replace("https", "http") + "/v1/health", timeout=5)


def test_hash_token_and_the_tokens_file(tmp_path, capsys):
    from fastldp import cli

    assert cli.main(["serve", "--hash-token", "s3cret"]) == 0
    line = capsys.readouterr().out
    assert hash_token("s3cret") in line
    import hashlib

    assert hash_token("s3cret") == hashlib.sha256(b"s3cret").hexdigest()
    path = tmp_path / "tokens.txt"
    path.write_text(f"# clients\nphones {hash_token('a')} 0 99\nadmin {hash_token('b')}\n")
    clients = read_tokens(path)
    table = TokenTable(clients)
    assert table.lookup("Bearer a").name == "phones" and table.lookup("bearer b").name == "admin"
    assert table.lookup("Bearer c") is None and table.lookup(None) is None
    assert table.lookup("a") is None  # no scheme
    assert clients[0].allows(0, 99) and not clients[0].allows(0, 100)
    assert clients[1].allows(0, 2**64 - 1)
    for bad, message in [(f"x {hash_token('a')} 5", "fields"), ("x abc", "64 hex"),
                         (f"x {hash_token('a')}\nx {hash_token('b')}", "twice"),
                         (f"x {hash_token('a')} 9 3", "lo <= hi"), ("# nothing", "no client")]:
        path.write_text(bad + "\n")
        with pytest.raises(ValueError, match=message):
            read_tokens(path)
    assert cli.main(["serve", "--store", str(tmp_path)]) == 2  # --mechanism, --tokens missing
    assert "--mechanism, --tokens" in capsys.readouterr().err


def test_rate_limiter_token_bucket(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr("fastldp.service.auth.time.monotonic", lambda: clock[0])
    limiter = RateLimiter(100.0)  # 100 reports/s, bursts of 100
    assert limiter.take("a", 60) == 0.0
    assert limiter.take("a", 60) == pytest.approx(0.2)  # 40 left: 20 more take 0.2 s
    assert limiter.take("b", 100) == 0.0  # each token has its own bucket
    clock[0] += 0.2
    assert limiter.take("a", 60) == 0.0
    assert RateLimiter(None).take("a", 10**9) == 0.0


def test_simulate_send_drives_a_collector(olh_server, capsys):
    from fastldp import cli

    srv = olh_server
    before = Client(srv.url, srv.token).stats()["reports"]
    first = 10_000_000  # identities no other test of the module uses
    assert cli.main(["simulate", "--send", srv.url, "--token", srv.token, "--n", "3000",
                     "--clients", "3", "--batch-size", "400", "--first-identity", str(first),
                     "--quiet"]) == 0
    assert "3,000 reports sent" in capsys.readouterr().out
    assert Client(srv.url, srv.token).estimate()["n"] == before + 3000
    # the same identities again: refused (409), one error line, exit status 2
    assert cli.main(["simulate", "--send", srv.url, "--token", srv.token, "--n", "400",
                     "--first-identity", str(first), "--quiet"]) == 2
    assert "409" in capsys.readouterr().err


def _six_batches_in_a_store(root):
    """A store (1,000-row segments) fed 6 batches of 500 OLH reports, each acknowledged,
    then closed: ``(mech, shape, dtype, ids, eps, reports, store)``."""
    from fastldp.service.app import probe_reports
    from fastldp.service.store import Batch, Store

    mech = from_spec(OLH)
    shape, dtype = probe_reports(mech)
    ids = np.arange(3000, dtype=np.uint64)
    reports = mech.privatize(np.arange(3000) % 64, identities=ids, rng=4)
    eps = np.ones(3000)
    store = Store(root, mech, report_shape=shape, report_dtype=dtype, segment_rows=1000)
    answers = [store.submit(Batch("t", f"k{i}", ids[i * 500:(i + 1) * 500],
                                  eps[i * 500:(i + 1) * 500],
                                  reports[i * 500:(i + 1) * 500])).result(30)
               for i in range(6)]
    assert [a[0] for a in answers] == [201] * 6
    store.close()
    return mech, shape, dtype, ids, eps, reports, store


def test_store_skips_write_ahead_records_of_listed_batches(tmp_path):
    """A crash while a listed segment's write-ahead records were being dropped (16 batches
    per transaction, after the listing) leaves records of batches the segment holds: the
    restart drops them and counts those reports once (from the segment), not twice."""
    import sqlite3

    from fastldp.service.store import Store

    mech, shape, dtype, ids, eps, reports, store = _six_batches_in_a_store(tmp_path)
    db = sqlite3.connect(tmp_path / "index.sqlite")
    assert db.execute("SELECT MAX(last_seq) FROM segments").fetchone()[0] == 6
    assert db.execute("SELECT COUNT(*) FROM pending").fetchone()[0] == 0
    # the crash's leftovers: the records of batches 3 and 4 (in the listed seg-000002)
    for seq in (3, 4):
        sl = slice((seq - 1) * 500, seq * 500)
        db.execute("INSERT INTO pending VALUES (?, ?, ?)",
                   (seq, 500, store._pack(ids[sl], eps[sl], reports[sl])))
    db.commit()
    store = Store(tmp_path, mech, report_shape=shape, report_dtype=dtype, segment_rows=1000)
    result, _ = store.result()
    store.close()
    offline = mech.estimate(reports, identities=ids)
    assert result.n == 3000 and np.array_equal(result.estimate, offline.estimate)
    assert db.execute("SELECT COUNT(*) FROM pending").fetchone()[0] == 0
    assert sorted(p.name for p in tmp_path.glob("seg-*")) == [
        "seg-000001.parquet", "seg-000002.parquet", "seg-000003.parquet"]


def test_store_recovers_a_roll_cut_between_its_steps(tmp_path):
    """A crash after the journal listed a segment but before its rename, and a segment file
    written after the last listed one: both recovered, the estimate unchanged (in process)."""
    from fastldp.service.store import Store

    mech, shape, dtype, ids, _, reports, _ = _six_batches_in_a_store(tmp_path)
    names = sorted(p.name for p in tmp_path.glob("seg-*.parquet"))
    assert names == ["seg-000001.parquet", "seg-000002.parquet", "seg-000003.parquet"]
    (tmp_path / names[-1]).rename(tmp_path / (names[-1] + ".partial"))  # listed, not renamed
    (tmp_path / "seg-000004.parquet.partial").write_bytes(b"PAR1 torn")  # unlisted: deleted
    store = Store(tmp_path, mech, report_shape=shape, report_dtype=dtype, segment_rows=1000)
    result, _ = store.result()
    store.close()
    assert sorted(p.name for p in tmp_path.glob("seg-*")) == names
    offline = mech.estimate(reports, identities=ids)
    assert result.n == 3000 and np.array_equal(result.estimate, offline.estimate)
    # a store keeps one mechanism: another spec is refused, naming the difference
    other = from_spec({"mechanism": "OLH", "params": dict(OLH["params"], codebook_seed=8)})
    with pytest.raises(ValueError, match="holds reports with spec"):
        Store(tmp_path, other, report_shape=shape, report_dtype=dtype)


def test_serve_errors_are_one_line(tmp_path, capsys):
    from fastldp import cli

    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"a {hash_token('a')}\n")
    assert cli.main(["serve", "--mechanism", "no-such-preset", "--store", str(tmp_path / "s"),
                     "--tokens", str(tokens)]) == 2
    assert "neither a preset" in capsys.readouterr().err
    tokens.write_text("a not-a-hash\n")
    assert cli.main(["serve", "--mechanism", json.dumps(OLH), "--store", str(tmp_path / "s"),
                     "--tokens", str(tokens)]) == 2
    assert "64 hex digits" in capsys.readouterr().err


@pytest.mark.parametrize("json_each", [True, False])
def test_store_identity_index_at_the_ends_of_uint64(tmp_path, json_each):
    """The identity index (one ``json_each`` statement, or its ``executemany`` fallback) keeps
    identities at both ends of [0, 2**64) apart: a repeat is refused (409) naming exactly the
    repeated ones, a neighbour is accepted, and a batch with an identity twice is refused."""
    from fastldp.service.app import probe_reports
    from fastldp.service.store import Batch, Store

    mech = from_spec(OLH)
    shape, dtype = probe_reports(mech)
    top = 2**64 - 1
    first = np.array([0, 1, 2**63 - 1, 2**63, top - 1, top], dtype=np.uint64)
    store = Store(tmp_path, mech, report_shape=shape, report_dtype=dtype)
    store._json_each = json_each
    try:
        def send(key, ids):
            ids = np.asarray(ids, dtype=np.uint64)
            reps = np.zeros(ids.shape[0], dtype=dtype)
            return store.submit(Batch("t", key, ids, np.ones(ids.shape[0]), reps)).result(30)

        assert send("a", first)[0] == 201
        status, body = send("b", [5, 2**63, top, 7])
        assert status == 409 and body["identities"] == [2**63, top]
        assert send("c", [2**63 - 2, 2**63 + 1, top - 2])[0] == 201  # neighbours are new
        status, body = send("d", [9, 9, 10])
        assert status == 409 and body["identities"] == [9]
        assert send("e", [5, 7, 9, 10])[0] == 201  # refused batches counted nothing
        assert send("a", first)[0] == 200  # a repeated key and batch: the first answer
        assert send("a", [11])[0] == 422  # a repeated key with another batch: refused
    finally:
        store.close()
    assert store.stats.reports == 6 + 3 + 4


def test_collector_decode_threads_default_to_all_cores(tmp_path, monkeypatch):
    """The live decode runs on all cores unless ``threads`` is given."""
    from fastldp.service import app as service_app
    from fastldp.service.app import Collector, ServiceConfig

    tokens = tmp_path / "tokens.txt"
    tokens.write_text(f"t {hash_token('t')}\n")
    got = {}
    for cores, threads in [(4, None), (1, None), (4, 2)]:
        monkeypatch.setattr(service_app, "resolve_n_threads", lambda n, owner, c=cores: c)
        col = Collector(ServiceConfig(mechanism=OLH, store=tmp_path / f"s{cores}{threads}",
                                      tokens=tokens, threads=threads))
        col.store.close()
        got[(cores, threads)] = col.mechanism.n_threads
    assert got == {(4, None): 4, (1, None): 1, (4, 2): 2}


def test_32_concurrent_clients_on_loopback_every_acked_report_once(tmp_path):
    # a bounded load test: 32 client threads, 4 Arrow batches of 250 reports each, all at
    # once; every batch must be acknowledged (201) and the live estimate must equal the
    # in-memory estimate of all 32,000 reports bit for bit (a lost, doubled or torn batch
    # under concurrency fails it)
    import threading

    mech = from_spec(OLH)
    n_clients, batches, size = 32, 4, 250
    total = n_clients * batches * size
    ids = np.arange(total, dtype=np.uint64) + 50_000
    reports = mech.privatize(_zipf(total, np.random.default_rng(7)), identities=ids, rng=8)
    errors = []
    with running_server(tmp_path, OLH, publish_every=1) as srv:
        def work(c):
            client = Client(srv.url, srv.token)
            try:
                lo, hi = c * batches * size, (c + 1) * batches * size
                out = client.send(reports[lo:hi], identities=ids[lo:hi], privatize=False,
                                  batch_size=size)
                assert out == {"accepted": batches * size, "replayed": 0, "batches": batches}
            except Exception as exc:  # reported after the threads end
                errors.append(exc)
            finally:
                client.close()
        threads = [threading.Thread(target=work, args=(c,)) for c in range(n_clients)]
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
        assert not errors, errors[:3]
        got = httpx.get(srv.url + "/v1/estimate?wait=1", timeout=60).json()
    offline = mech.estimate(reports, identities=ids)
    assert got["n"] == total and got["pending"] == 0
    assert np.array_equal(np.array(got["estimate"]), offline.estimate)
