"""Fuzzing ``POST /v1/reports`` of a running collector: never a 500 for a bad body (issue 32).

Hypothesis builds request bodies that must each be refused: JSON (ragged and
nested lists, nesting up to 60,000 deep, huge, negative and mixed
identities, NaN and Infinity, wrong shapes and budgets, bad keys, missing,
unknown and repeated fields, truncations, bytes that are not UTF-8) and Arrow
IPC (column names that are not UTF-8, corrupt list offsets, bytes flipped
anywhere in the stream, rows with the wrong number of report entries,
truncations, negative and out-of-range values, NaN budgets, nulls, wrong
schemas, compressed streams over the row limit, dictionaries, bytes after
the end of the stream). Every body is sent to a real server
(:func:`fastldp.service.testing.running_server`) over loopback on one
keep-alive connection, and every case checks:

* a 4xx answer whose JSON body has an ``error`` (a reason of
  ``REFUSAL_REASONS``) and a ``detail``;
* nothing stored: ``/v1/stats`` ``reports`` unchanged;
* the ``refused`` counter of that reason up by exactly one (and no other);
* the same connection still answers (the client's local port unchanged, from
  the refusal to the next request and from one case to the next).

Bodies flipped at random bytes carry identities outside the sending token's
range, so whatever the flip leaves decodable is still refused (403); every
other mutation breaks the batch by construction.

The default tier runs 100 JSON and 100 Arrow cases (derandomized: the same
cases every run); the slow tier 5,000 of each.
"""

import io
import json
import struct
import time

import numpy as np
import pytest

pytest.importorskip("starlette")
pytest.importorskip("uvicorn")
httpx = pytest.importorskip("httpx")
pa = pytest.importorskip("pyarrow")
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from conftest import fuzz  # noqa: E402
from fastldp.service.app import REFUSAL_REASONS  # noqa: E402
from fastldp.service.testing import running_server  # noqa: E402

ARROW = "application/vnd.apache.arrow.stream"
OLH = {"mechanism": "OLH", "params": {"domain_size": 64, "epsilon": 1.0, "codebook_seed": 7}}
OUE2 = {"mechanism": "OUE", "params": {"domain_size": 16, "epsilon": 1.0, "codebook_seed": 1}}
MAX_ROWS = 2000
RANGE = (1000, 1999)


class _Target:
    """A collector, one keep-alive client per token, and the last /v1/stats seen."""

    def __init__(self, srv, report_width):
        self.srv = srv
        self.width = report_width  # None: one integer a report (OLH); 2: two uint8 (OUE)
        # httpx drops a connection idle for 5 s by default; the server keeps one 30 s
        limits = httpx.Limits(keepalive_expiry=25)
        self.clients = {name: httpx.Client(base_url=srv.url, timeout=60, limits=limits,
                                           headers={"Authorization": f"Bearer {token}"})
                        for name, token in srv.tokens.items()}
        answer = self.clients["test"].get("/v1/stats")
        self.stats = answer.json()
        self.ports = {name: None for name in self.clients}
        self.cases = 0

    def close(self):
        for client in self.clients.values():
            client.close()

    def check_refused(self, content, ctype, key=None, token="test"):
        try:
            return self._check_refused(content, ctype, key, token)
        except BaseException:  # the next case (a shrink) compares with the server's counters now
            self.stats = self.clients["test"].get("/v1/stats").json()
            raise

    def _check_refused(self, content, ctype, key, token):
        client = self.clients[token]
        headers = {"Content-Type": ctype}
        if key is not None:
            headers["Idempotency-Key"] = key
        answer = client.post("/v1/reports", content=content, headers=headers)
        assert 400 <= answer.status_code < 500, (answer.status_code, answer.text[:300])
        body = answer.json()
        reason = body["error"]
        assert reason in REFUSAL_REASONS and isinstance(body["detail"], str) and body["detail"]
        port = answer.extensions["network_stream"].get_extra_info("client_addr")[1]
        after = client.get("/v1/stats")
        # the same keep-alive connection answered the refusal and the next request
        assert after.extensions["network_stream"].get_extra_info("client_addr")[1] == port
        last = self.ports[token]
        if last is not None and time.monotonic() - last[1] < 20:  # the client keeps an idle
            assert port == last[0]  # connection 25 s: the earlier cases' connection too
        self.ports[token] = (port, time.monotonic())
        stats = after.json()
        assert stats["reports"] == self.stats["reports"]  # nothing stored
        want = dict(self.stats["refused"])
        want[reason] = want.get(reason, 0) + 1
        assert stats["refused"] == want, (reason, self.stats["refused"], stats["refused"])
        self.stats = stats
        self.cases += 1
        return answer.status_code, reason


@pytest.fixture(scope="module")
def olh(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("fuzz-olh"), OLH, tokens={"ranged": RANGE},
                        max_rows=MAX_ROWS) as srv:
        target = _Target(srv, None)
        yield target
        target.close()


@pytest.fixture(scope="module")
def oue(tmp_path_factory):
    with running_server(tmp_path_factory.mktemp("fuzz-oue"), OUE2, tokens={"ranged": RANGE},
                        max_rows=MAX_ROWS) as srv:
        target = _Target(srv, 2)
        yield target
        target.close()


_keys = iter(range(10**9))


def _key():
    return f"fuzz-{next(_keys)}"


# ------------------------------------------------------------------ JSON
_JUNK = st.one_of(st.floats(allow_nan=True, allow_infinity=True), st.booleans(), st.none(),
                  st.text(max_size=5), st.dictionaries(st.text(max_size=3), st.integers(),
                                                       max_size=2))
_HUGE = st.one_of(st.integers(min_value=2**64, max_value=2**300),
                  st.integers(max_value=-1, min_value=-2**300))
_BAD_KEY = st.one_of(
    st.text(max_size=140).filter(lambda k: not (1 <= len(k) <= 128) or any(
        not (c.isascii() and (c.isalnum() or c in "._:-")) for c in k)),
    st.sampled_from(["k\n", "key 1", "", "x" * 129, "k\r", "k/1"]),
    st.integers(), st.none(), st.lists(st.integers(), max_size=2))


def _dumps(obj):
    return json.dumps(obj, allow_nan=True).encode()  # NaN and Infinity as Python writes them


@st.composite
def json_cases(draw, width):
    """``(body bytes, token)`` of a JSON batch that must be refused."""
    n = draw(st.integers(1, 12))
    start = draw(st.integers(10**6, 10**12))
    ids = list(range(start, start + n))
    if width is None:
        reps = [draw(st.integers(0, 63)) for _ in range(n)]
    else:
        reps = [[draw(st.integers(0, 255)) for _ in range(width)] for _ in range(n)]
    obj = {"idempotency_key": _key(), "identities": ids, "reports": reps}
    token = "test"
    kind = draw(st.sampled_from([
        "ragged_ids", "deep", "huge_ids", "typed_ids", "bad_reports", "bad_count", "bad_eps",
        "fields", "bad_key", "truncate", "not_utf8", "out_of_range", "dup_ids", "too_many",
        "not_object", "nan_text", "bad_shape"]))
    where = draw(st.integers(0, n - 1))
    if kind == "ragged_ids":
        ids[where] = draw(st.lists(st.integers(0, 2**64 - 1), max_size=3))
    elif kind == "deep":
        depth = draw(st.one_of(st.integers(3, 40), st.integers(900, 1100),
                               st.integers(50_000, 60_000)))
        text = b"[" * depth + draw(st.sampled_from([b"", b"1"])) + b"]" * depth
        field = draw(st.sampled_from(["identities", "reports", "epsilons", "idempotency_key",
                                      "root", "element"]))
        if field == "root":
            return text, token
        marker = "__DEEP__"
        if field == "element":
            ids[where] = marker
        else:
            obj[field] = marker
        return _dumps(obj).replace(f'"{marker}"'.encode(), text), token
    elif kind == "huge_ids":
        ids[where] = draw(_HUGE)
    elif kind == "typed_ids":
        ids[where] = draw(_JUNK)
    elif kind == "bad_reports":
        bad = draw(st.one_of(_JUNK, _HUGE, st.integers(256, 2**62) if width else
                             st.integers(2**63, 2**70), st.floats(-1e3, 1e3)))
        if isinstance(bad, bool) is False and isinstance(bad, int) and width is None \
                and -2**63 <= bad < 2**63:
            bad = 2**63 + abs(bad)  # only out of int64 is refused for OLH's int64 reports
        if width is None:
            reps[where] = bad
        else:
            reps[where][draw(st.integers(0, width - 1))] = bad
    elif kind == "bad_count":
        obj["reports"] = reps + reps[:1] if draw(st.booleans()) else reps[:-1]
        if not obj["reports"]:
            obj["reports"] = "none"
    elif kind == "bad_eps":
        eps = [1.0] * n
        choice = draw(st.sampled_from(["value", "length", "type"]))
        if choice == "value":
            eps[where] = draw(st.one_of(st.floats(allow_nan=True).filter(lambda x: x != 1.0),
                                        st.integers(2, 10**30), st.sampled_from([0, -1])))
        elif choice == "length":
            eps = eps + [1.0] if draw(st.booleans()) else eps[:-1]
        else:
            eps = draw(st.one_of(st.text(max_size=3), st.none(), st.integers(),
                                 st.just([[1.0]] * n)))
            if eps is None:
                eps = "null"
        obj["epsilons"] = eps
    elif kind == "fields":
        choice = draw(st.sampled_from(["missing", "unknown", "repeated"]))
        if choice == "missing":
            del obj[draw(st.sampled_from(["idempotency_key", "identities", "reports"]))]
        elif choice == "unknown":
            obj[draw(st.sampled_from(["identity", "report", "epsilon", "x", ""]))] = 1
        else:
            body = _dumps(obj)
            field = draw(st.sampled_from(["identities", "reports", "idempotency_key"]))
            extra = f', "{field}": {json.dumps(obj[field])}'.encode()
            return body[:-1] + extra + b"}", token
    elif kind == "bad_key":
        obj["idempotency_key"] = draw(_BAD_KEY)
    elif kind == "truncate":
        body = _dumps(obj)
        return body[:draw(st.integers(0, len(body) - 1))], token
    elif kind == "not_utf8":
        body = _dumps(obj)
        at = draw(st.integers(0, len(body)))
        return body[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\xed\xa0\x80", b"\x80"])) \
            + body[at:], token
    elif kind == "out_of_range":
        token = "ranged"
        low = draw(st.booleans())
        obj["identities"] = ([RANGE[0] - 1 - i for i in range(n)] if low
                             else [RANGE[1] + 1 + i for i in range(n)])
    elif kind == "dup_ids":
        if n == 1:
            obj["identities"] = ids + ids
            obj["reports"] = reps + reps
        else:
            ids[where] = ids[(where + 1) % n]
    elif kind == "too_many":
        rows = draw(st.integers(MAX_ROWS + 1, MAX_ROWS + 300))
        obj["identities"] = list(range(start, start + rows))
        obj["reports"] = [reps[0]] * rows
    elif kind == "not_object":
        return _dumps(draw(st.one_of(st.lists(st.integers(), max_size=3), st.integers(),
                                     st.text(max_size=5), st.none()))), token
    elif kind == "nan_text":
        body = _dumps(obj)
        word = draw(st.sampled_from([b"NaN", b"Infinity", b"-Infinity"]))
        field = draw(st.sampled_from([b'"identities": [', b'"reports": [']))
        return body.replace(field, field + word + b", ", 1), token
    elif kind == "bad_shape":
        if width is None:
            reps[where] = [reps[where]]  # a list where a number goes
        else:
            size = draw(st.integers(0, 5).filter(lambda s: s != width))
            reps[where] = list(range(size))
            if draw(st.booleans()):
                reps[where] = [reps[where]]  # nested one deeper
    return _dumps(obj), token


# ------------------------------------------------------------------ Arrow
def _stream(batches, schema=None, compression=None):
    sink = io.BytesIO()
    options = pa.ipc.IpcWriteOptions(compression=compression)
    with pa.ipc.new_stream(sink, schema or batches[0].schema, options=options) as writer:
        for batch in batches:
            writer.write_batch(batch)
    return sink.getvalue()


def _report_column(reps, width, list_type=None):
    if width is None:
        return pa.array(reps, pa.int64())
    return pa.array(reps, list_type or pa.list_(pa.int64()))


@st.composite
def arrow_cases(draw, width):
    """``(body bytes, token)`` of an Arrow stream that must be refused."""
    n = draw(st.integers(1, 12))
    start = draw(st.integers(10**6, 10**12))
    ids = list(range(start, start + n))
    if width is None:
        reps = [draw(st.integers(0, 63)) for _ in range(n)]
    else:
        reps = [[draw(st.integers(0, 255)) for _ in range(width)] for _ in range(n)]
    token = "test"
    kind = draw(st.sampled_from([
        "utf8_name", "offsets", "flip", "row_lengths", "truncate", "negative_ids",
        "report_values", "bad_eps", "nulls", "schema", "too_many", "dictionary", "tail",
        "out_of_range", "dup_ids", "empty"]))
    compression = draw(st.sampled_from([None, "zstd", "lz4"]))

    def batch(ident=None, report=None, extra=None):
        cols = {"identity": ident if ident is not None else pa.array(ids, pa.uint64()),
                "report": report if report is not None else _report_column(reps, width)}
        cols.update(extra or {})
        return pa.record_batch(list(cols.values()), names=list(cols))

    if kind == "utf8_name":
        body = _stream([batch()], compression=compression)
        name = draw(st.sampled_from([b"identity", b"report"]))
        at = draw(st.integers(0, len(name) - 1))
        bad = name[:at] + draw(st.sampled_from([b"\xff", b"\xc3", b"\x80"])) + name[at + 1:]
        return body.replace(name, bad, 1), token
    offsets = struct.pack(f"<{n + 1}i", *range(0, width * (n + 1), width)) if width else b""
    body = _stream([batch()]) if width else b""  # uncompressed: offsets in the body as written
    if kind == "offsets" and width is not None and body.count(offsets) == 1:
        values = list(range(0, width * (n + 1), width))
        at = draw(st.integers(0, n))
        values[at] = draw(st.integers(-2**31, 2**31 - 1).filter(lambda v: v != values[at]))
        return body.replace(offsets, struct.pack(f"<{n + 1}i", *values)), token
    if kind in ("flip", "offsets"):  # (no list offsets to corrupt: flip bytes instead)
        # the ranged token, at least 3 rows, identities 2**40 + i: bringing one identity into
        # 1000..1999 takes two flips in its row, so with at most two flips, whatever still
        # decodes (a type, a row count or a value changed) has an identity outside: a 403
        token = "ranged"
        rows = max(n, 3)
        body = bytearray(_stream([batch(ident=pa.array([2**40 + i for i in range(rows)],
                                                       pa.uint64()),
                                        report=_report_column((reps * 3)[:rows], width))],
                                 compression=compression))
        for _ in range(draw(st.integers(1, 2))):
            at = draw(st.integers(0, len(body) - 1))
            body[at] = draw(st.integers(0, 255).filter(lambda b: b != body[at]))
        return bytes(body), token
    if kind == "row_lengths":
        if width is None:  # lists where numbers go
            report = pa.array([[r] for r in reps], pa.list_(pa.int64()))
        else:
            lengths = [draw(st.integers(0, 4)) for _ in range(n)]
            if all(length == width for length in lengths):
                lengths[0] = width + 1
            report = pa.array([[1] * length for length in lengths], pa.list_(pa.int64()))
            if draw(st.booleans()):
                size = draw(st.integers(1, 4).filter(lambda s: s != width))
                report = pa.FixedSizeListArray.from_arrays(pa.array([1] * (size * n),
                                                                    pa.int64()), size)
        return _stream([batch(report=report)], compression=compression), token
    if kind == "truncate":
        body = _stream([batch()], compression=compression)
        return body[:draw(st.integers(0, len(body) - 1))], token
    if kind == "negative_ids":
        ident = pa.array([-draw(st.integers(1, 2**63)) if i == 0 else v
                          for i, v in enumerate(ids)], pa.int64())
        return _stream([batch(ident=ident)], compression=compression), token
    if kind == "report_values":
        if width is None:  # floats (NaN, inf, fractions) where integers go
            report = pa.array([draw(st.floats(allow_nan=True)) for _ in range(n)], pa.float64())
        else:
            bad = draw(st.one_of(st.integers(256, 2**62), st.integers(-2**62, -1)))
            flat = [v for row in reps for v in row]
            flat[draw(st.integers(0, len(flat) - 1))] = bad
            report = pa.array([flat[i * width:(i + 1) * width] for i in range(n)],
                              pa.list_(pa.int64()))
        return _stream([batch(report=report)], compression=compression), token
    if kind == "bad_eps":
        eps = [1.0] * n
        eps[draw(st.integers(0, n - 1))] = draw(
            st.floats(allow_nan=True, allow_infinity=True).filter(lambda x: x != 1.0))
        return _stream([batch(extra={"epsilon": pa.array(eps, pa.float64())})],
                       compression=compression), token
    if kind == "nulls":
        column = draw(st.sampled_from(["identity", "report", "epsilon", "entry"]))
        where = draw(st.integers(0, n - 1))
        if column == "identity":
            b = batch(ident=pa.array([None if i == where else v for i, v in enumerate(ids)],
                                     pa.uint64()))
        elif column == "epsilon":
            b = batch(extra={"epsilon": pa.array([None if i == where else 1.0
                                                  for i in range(n)], pa.float64())})
        elif column == "report" or width is None:
            b = batch(report=_report_column([None if i == where else r
                                             for i, r in enumerate(reps)], width))
        else:
            rows = [list(r) for r in reps]
            rows[where][0] = None
            b = batch(report=_report_column(rows, width))
        return _stream([b], compression=compression), token
    if kind == "schema":
        choice = draw(st.sampled_from(["missing", "extra", "duplicate", "string", "bool",
                                       "struct"]))
        if choice == "missing":
            drop = draw(st.sampled_from(["identity", "report"]))
            b = batch()
            b = b.drop_columns([drop])
        elif choice == "extra":
            b = batch(extra={draw(st.sampled_from(["x", "identities", "Report", ""])):
                             pa.array([1] * n)})
        elif choice == "duplicate":
            b = pa.record_batch([pa.array(ids, pa.uint64()), _report_column(reps, width),
                                 pa.array(ids, pa.uint64())],
                                names=["identity", "report", "identity"])
        elif choice == "string":
            b = batch(ident=pa.array([str(i) for i in ids]))
        elif choice == "bool":
            b = batch(report=pa.array([True] * n))
        else:
            b = batch(report=pa.array([{"a": 1}] * n))
        return _stream([b], compression=compression), token
    if kind == "too_many":
        rows = draw(st.integers(MAX_ROWS + 1, 4 * MAX_ROWS))
        ident = pa.array(np.arange(start, start + rows, dtype=np.uint64))
        if width is None:
            report = pa.array(np.zeros(rows, dtype=np.int64))
        else:
            report = pa.FixedSizeListArray.from_arrays(
                pa.array(np.zeros(rows * width, dtype=np.uint8)), width)
        parts = draw(st.integers(1, 3))
        b = batch(ident=ident, report=report)
        size = -(-rows // parts)
        return _stream([b.slice(i * size, size) for i in range(parts)],
                       compression=compression), token
    if kind == "dictionary":
        report = pa.array(reps if width is None else [str(r) for r in reps]).dictionary_encode()
        return _stream([batch(report=report)], compression=compression), token
    if kind == "tail":
        body = _stream([batch()], compression=compression)
        return body + draw(st.binary(min_size=1, max_size=16)), token
    if kind == "out_of_range":
        token = "ranged"
        ident = pa.array([RANGE[1] + 1 + i for i in range(n)], pa.uint64())
        return _stream([batch(ident=ident)], compression=compression), token
    if kind == "dup_ids":
        dup = list(ids) + [ids[0]]
        more = reps + reps[:1]
        return _stream([batch(ident=pa.array(dup, pa.uint64()),
                              report=_report_column(more, width))],
                       compression=compression), token
    # empty: a schema and no rows (or no batch at all)
    b = batch().slice(0, 0)
    return _stream([b] if draw(st.booleans()) else [], schema=b.schema), token


# ------------------------------------------------------------------ the properties
def _run_json(target, case):
    body, token = case
    target.check_refused(body, "application/json", token=token)


def _run_arrow(target, case):
    body, token = case
    target.check_refused(body, ARROW, key=_key(), token=token)


#: each body kind: the strategy of its cases and the check of one case
KINDS = {"json": (lambda width: json_cases(width), _run_json),
         "arrow": (lambda width: arrow_cases(width), _run_arrow)}


def _fuzz(target, kind, examples):
    """Run ``examples`` Hypothesis cases of ``kind`` against ``target``; return how many ran."""
    cases, check = KINDS[kind]

    @fuzz(examples)
    @given(cases(target.width))
    def run(case):
        check(target, case)

    before = target.cases
    run()
    return target.cases - before


@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("name", ["olh", "oue"])
def test_fuzz_bodies_are_refused_quick(name, kind, request):
    """50 cases per collector and body kind: the default tier's sibling of the slow suite."""
    assert _fuzz(request.getfixturevalue(name), kind, 50) >= 1


@pytest.mark.slow
@pytest.mark.parametrize("kind", sorted(KINDS))
@pytest.mark.parametrize("name", ["olh", "oue"])
def test_fuzz_bodies_are_refused(name, kind, request):
    """2,500 cases per collector and body kind (10,000 in all)."""
    assert _fuzz(request.getfixturevalue(name), kind, 2500) >= 2500
