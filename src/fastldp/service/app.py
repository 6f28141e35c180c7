"""The collector's ASGI application (Starlette): ingest, estimate, stats, metrics, dashboard.

The endpoints and their JSON are documented in ``docs/guide/service.rst``.
Only ``POST /v1/reports`` needs a bearer token; every ``GET`` is public and
returns the mechanism, aggregate counts or the published estimate. No
endpoint returns a stored report as such, but an estimate is a function of
the reports: two estimates over sets that differ by a few reports reveal
those reports' contribution (with OLH, one report's support set exactly).
The estimate is therefore published in steps of at least ``publish_every``
reports (``--publish-every``, default 1,000; see ``Store``), so that no two
estimates the service shows differ by fewer reports.
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import math
import re
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .. import mechanisms, oracles, relations
from .._random import resolve_n_threads
from ..reports import _fixed_epsilon, _report_kind, mechanism_spec
from .auth import RateLimiter, TokenTable, read_tokens
from .store import LATENCY_BUCKETS, Batch, Store

__all__ = ["ServiceConfig", "create_app", "probe_reports", "REFUSAL_REASONS", "ARROW_TYPE"]

ARROW_TYPE = "application/vnd.apache.arrow.stream"
REFUSAL_REASONS = ("unauthorized", "forbidden_identity", "too_large", "malformed",
                   "duplicate_identity", "rate_limited")
_KEY = re.compile(r"^[A-Za-z0-9._:-]{1,128}$")
STATIC = Path(__file__).resolve().parent / "static"


@dataclass
class ServiceConfig:
    """What ``fastldp serve`` was started with."""

    mechanism: Any  # a spec (dict, preset name, file, JSON text)
    store: Any
    tokens: Any  # the tokens file
    max_body: int = 16 << 20
    rate: Optional[float] = None  # reports per second per token
    segment_rows: int = 1 << 20
    threads: Optional[int] = None  # the live decode's threads (default: all cores)
    # the public estimate advances in steps of at least this many reports (and seconds)
    publish_every: int = 1000
    publish_seconds: Optional[float] = None


class Malformed(ValueError):
    """A request body that does not hold a batch of this mechanism (HTTP 422)."""


def kind_of(mechanism: Any) -> str:
    """``"oracle"``, ``"jprs"``, ``"rpc"`` or ``"other"``: how the dashboard draws the estimate."""
    if isinstance(mechanism, (relations.JPRS, relations.PaddedRelationSampling)):
        return "jprs"
    if isinstance(mechanism, oracles.FrequencyOracle):
        return "oracle"
    if type(mechanism).__name__ == "RPC":
        return "rpc"
    return "other"


def probe_reports(mechanism: Any) -> tuple[tuple, np.dtype]:
    """The shape of one report and the dtype a batch is stored in, from one probe report."""
    rng = np.random.default_rng(0)
    eps = None if _fixed_epsilon(mechanism) is not None else np.ones(2)
    if isinstance(mechanism, (relations.JPRS, relations.PaddedRelationSampling)):
        data = mechanisms._relations_chunk(mechanism, 2, rng)
    elif isinstance(mechanism, oracles.FrequencyOracle):
        data = mechanisms._values_chunk(mechanism, 2, rng)
    elif hasattr(mechanism, "d"):
        data = np.zeros((2, int(mechanism.d)))
    else:
        raise ValueError(f"fastldp serve cannot collect {type(mechanism).__name__} reports")
    kwargs = {"epsilons": eps} if eps is not None else {}
    reports = np.asarray(mechanism.privatize(data, identities=np.arange(2), rng=rng, **kwargs))
    kind = _report_kind(mechanism)
    if kind == "integer" or (kind is None and reports.dtype.kind in "biu"):
        # the width privatize uses (int8 bits for JPRS and unary encodings, int64 symbols)
        dtype = np.dtype(np.int8) if reports.dtype.kind == "b" else reports.dtype
    else:
        dtype = np.dtype(np.float64)
    return tuple(reports.shape[1:]), dtype


def _finite_list(values: Any) -> Optional[list]:
    if values is None:
        return None
    flat = np.asarray(values, dtype=np.float64).ravel().tolist()
    return [x if math.isfinite(x) else None for x in flat]


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


# ---------------------------------------------------------------------- parsing a batch
def _identities(values: Any) -> np.ndarray:
    arr = np.asarray(values)
    if arr.ndim != 1:
        raise Malformed("'identities' must be a list of integers")
    if arr.size == 0:
        return np.zeros(0, dtype=np.uint64)
    if arr.dtype.kind == "u":
        return arr.astype(np.uint64)
    if arr.dtype.kind == "i":
        if arr.min() < 0:
            raise Malformed("identities must be integers in [0, 2**64)")
        return arr.astype(np.uint64)
    if arr.dtype.kind == "O" and all(type(v) is int and 0 <= v < 2**64 for v in arr.tolist()):
        return np.array(arr.tolist(), dtype=np.uint64)
    raise Malformed(f"identities must be integers in [0, 2**64); got {arr.dtype} values")


class BatchParser:
    """Check a request body against the mechanism and return its arrays."""

    def __init__(self, mechanism: Any, report_shape: tuple, report_dtype: np.dtype) -> None:
        self.mechanism = mechanism
        self.fixed = _fixed_epsilon(mechanism)
        self.report_shape = report_shape
        self.report_dtype = report_dtype

    def arrays(self, ids: Any, eps: Any, reps: Any) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        """Checked ``(identities, epsilons, reports)`` in the store's types, or :class:`Malformed`."""
        ids = _identities(ids)
        n = ids.shape[0]
        if n == 0:
            raise Malformed("the batch holds no reports")
        if eps is None:
            if self.fixed is None:
                raise Malformed(f"{type(self.mechanism).__name__} takes personal budgets: "
                                "'epsilons' (or the Arrow column 'epsilon') is required")
            eps = np.full(n, self.fixed)
        else:
            try:
                eps = np.asarray(eps, dtype=np.float64)
            except (TypeError, ValueError):
                raise Malformed("'epsilons' must be numbers") from None
            if eps.shape != (n,):
                raise Malformed(f"'epsilons' must hold {n} numbers (one per identity); "
                                f"got shape {list(eps.shape)}")
            if not np.all(np.isfinite(eps) & (eps > 0)):
                raise Malformed("'epsilons' must be finite numbers > 0")
            if self.fixed is not None and not np.all(eps == self.fixed):
                raise Malformed(f"{type(self.mechanism).__name__} has the fixed epsilon="
                                f"{self.fixed!r}; every epsilon must equal it (or be omitted)")
        arr = np.asarray(reps)
        want = (n, *self.report_shape)
        if arr.shape != want:
            raise Malformed(f"'reports' must have shape {list(want)} (one report of shape "
                            f"{list(self.report_shape)} per identity); got {list(arr.shape)}")
        if self.report_dtype.kind in "iu":
            if arr.dtype.kind not in "iu":
                raise Malformed(f"reports of {type(self.mechanism).__name__} are integers; "
                                f"got {arr.dtype} values")
            info = np.iinfo(self.report_dtype)  # stored as given: no value may wrap
            if arr.size and (int(arr.min()) < info.min or int(arr.max()) > info.max):
                raise Malformed(f"reports of {type(self.mechanism).__name__} are stored as "
                                f"{self.report_dtype} ({info.min}..{info.max}); got values "
                                f"{int(arr.min())}..{int(arr.max())}")
        elif arr.dtype.kind not in "iuf":
            raise Malformed(f"reports of {type(self.mechanism).__name__} are numbers; got "
                            f"{arr.dtype} values")
        return ids, eps, np.ascontiguousarray(arr, dtype=self.report_dtype)

    def from_json(self, body: bytes) -> tuple[str, tuple]:
        try:
            obj = json.loads(body)
        except (ValueError, UnicodeDecodeError) as exc:
            raise Malformed(f"the body is not JSON ({exc})") from None
        if not isinstance(obj, dict):
            raise Malformed("the body must be a JSON object with 'idempotency_key', "
                            "'identities', 'reports' and optionally 'epsilons'")
        extra = set(obj) - {"idempotency_key", "identities", "epsilons", "reports"}
        if extra:
            raise Malformed(f"unknown fields {sorted(extra)}")
        for name in ("idempotency_key", "identities", "reports"):
            if name not in obj:
                raise Malformed(f"the field '{name}' is missing")
        if not isinstance(obj["identities"], list) or not isinstance(obj["reports"], list):
            raise Malformed("'identities' and 'reports' must be lists")
        if any(isinstance(v, bool) for v in obj["identities"]):
            raise Malformed("identities must be integers, not booleans")
        try:
            reps = np.array(obj["reports"])
        except ValueError:
            raise Malformed("'reports' must be a list of numbers or of equal-length lists") from None
        if reps.dtype.kind == "b":
            raise Malformed("reports must be numbers, not booleans")
        return obj["idempotency_key"], self.arrays(obj["identities"], obj.get("epsilons"), reps)

    def from_arrow(self, body: bytes, key: Optional[str]) -> tuple[Optional[str], tuple]:
        import pyarrow as pa

        try:
            table = pa.ipc.open_stream(body).read_all()
        except Exception as exc:  # pyarrow raises ArrowInvalid and friends
            raise Malformed(f"the body is not an Arrow IPC stream ({exc})") from None
        names = set(table.column_names)
        if not {"identity", "report"} <= names or names - {"identity", "epsilon", "report"}:
            raise Malformed("the Arrow stream needs the columns 'identity' and 'report' "
                            f"(and optionally 'epsilon'); got {sorted(names)}")
        for name in names:
            if table.column(name).null_count:
                raise Malformed(f"the Arrow column '{name}' has null rows")
        id_col = table.column("identity")
        if not pa.types.is_integer(id_col.type):
            raise Malformed(f"the Arrow column 'identity' must be integers; got {id_col.type}")
        col = table.column("report").combine_chunks()
        if pa.types.is_fixed_size_list(col.type) or pa.types.is_list(col.type):
            flat = col.flatten().to_numpy(zero_copy_only=False)
            m = self.report_shape[0] if self.report_shape else 1
            if flat.size != len(col) * m:
                raise Malformed(f"each report must be a list of {m} numbers")
            reps = flat.reshape(len(col), m) if self.report_shape else flat.reshape(len(col), -1)
        elif pa.types.is_integer(col.type) or pa.types.is_floating(col.type):
            reps = col.to_numpy(zero_copy_only=False)
        else:
            raise Malformed(f"the Arrow column 'report' must be numbers; got {col.type}")
        eps = (table.column("epsilon").to_numpy() if "epsilon" in names else None)
        if eps is not None and eps.dtype.kind not in "iuf":
            raise Malformed("the Arrow column 'epsilon' must be numbers")
        return key, self.arrays(id_col.to_numpy(), eps, reps)


# ---------------------------------------------------------------------- the application
class Collector:
    """The state behind the routes: mechanism, store, tokens, limits, counters."""

    def __init__(self, config: ServiceConfig) -> None:
        self.config = config
        self.spec = mechanisms.read_spec(config.mechanism) if not isinstance(
            config.mechanism, dict) else config.mechanism
        self.mechanism = mechanisms.from_spec(self.spec)
        if config.threads is not None and hasattr(self.mechanism, "n_threads"):
            self.mechanism.n_threads = int(config.threads)  # not a public parameter: no spec change
        self.spec = mechanism_spec(self.mechanism)
        self.report_shape, self.report_dtype = probe_reports(self.mechanism)
        self.parser = BatchParser(self.mechanism, self.report_shape, self.report_dtype)
        self._warm_arrow()
        self.tokens = TokenTable(read_tokens(config.tokens))
        self.limiter = RateLimiter(config.rate)
        self.refused = dict.fromkeys(REFUSAL_REASONS, 0)
        self.kind = kind_of(self.mechanism)
        self.store = Store(config.store, self.mechanism, report_shape=self.report_shape,
                           report_dtype=self.report_dtype, segment_rows=config.segment_rows,
                           publish_every=config.publish_every,
                           publish_seconds=config.publish_seconds)
        if config.threads is None and hasattr(self.mechanism, "n_threads"):
            # the live decode uses every core, as the recovery above did. On 2 quiet cores
            # (bench/serve_load.py, 10^7 reports, olh-4096) 2 decode threads against 1: closed
            # loop 148,848 vs 129,270 acked and 126,574 vs 101,495 decoded reports/s; paced at
            # 100,000 reports/s the decode kept up (vs 88 %) and the p99 ack latency was 35 vs
            # 213 ms. On cores other jobs keep busy, one thread fewer can ack more
            # (--threads N sets it).
            self.mechanism.n_threads = resolve_n_threads(None, "fastldp serve")
        self.started = time.time()

    def _warm_arrow(self) -> None:
        """Decode one probe batch now: pyarrow imports modules at its first decode (about 1 s).

        Without this the first requests of a load wait for those imports,
        and with 32 clients they are the slowest percent of a 1,000-batch run.
        """
        from .client import arrow_batch

        fixed = _fixed_epsilon(self.mechanism)
        body = arrow_batch(np.arange(2, dtype=np.uint64),
                           np.zeros((2, *self.report_shape), dtype=self.report_dtype),
                           None if fixed is not None else np.ones(2))
        self.parser.from_arrow(body, "warm-up")

    def mechanism_json(self) -> dict:
        result, _ = self.store.result()
        fixed = _fixed_epsilon(self.mechanism)
        labels = getattr(self.mechanism, "categories", None)
        return {"spec": self.spec, "kind": self.kind, "repr": repr(self.mechanism),
                "privacy": str(getattr(result, "privacy", "")),
                "epsilon": fixed, "personal_budgets": fixed is None,
                "report_shape": list(self.report_shape), "report_dtype": str(self.report_dtype),
                "estimate_shape": list(np.shape(result.estimate)),
                "labels": None if labels is None else _json_safe(list(labels)),
                "max_body": self.config.max_body, "rate_limit": self.config.rate,
                "publish_every": self.store.publish_every,
                "publish_seconds": self.store.publish_seconds}

    def estimate_json(self, wait: bool = False) -> dict:
        """The published estimate: the finalized partial at the last publication step.

        ``wait``: first wait (at most 60 s) until every batch acknowledged
        before the call is decoded and, where the publication policy lets it,
        published; ``pending`` then counts the acknowledged reports the
        estimate does not hold, ``unpublished`` those of them decoded but held
        back until ``publish_every`` reports (and ``publish_seconds``) passed.
        """
        if wait:
            self.store.wait_published(self.store.committed_seq(), timeout=60.0)
        result, _, decoded = self.store.published()
        est = np.asarray(result.estimate)
        san = getattr(result, "sanitization", None)
        cats = getattr(result, "categories", None)
        return {"kind": self.kind, "mechanism": self.spec["mechanism"], "n": int(result.n),
                "shape": list(est.shape), "estimate": _finite_list(est),
                "std": _finite_list(getattr(result, "std", None)),
                "labels": None if cats is None else _json_safe(list(cats)),
                "sanitization": None if san is None else {
                    "n_received": int(san.n_received), "n_valid": int(san.n_valid),
                    "n_sanitized": int(san.n_sanitized),
                    "by_reason": {k: int(v) for k, v in san.by_reason.items()}},
                "privacy": str(getattr(result, "privacy", "")),
                "pending": max(0, self.store.stats.reports - int(result.n)),
                "unpublished": max(0, decoded - int(result.n)),
                "publish_every": self.store.publish_every,
                "publish_seconds": self.store.publish_seconds,
                "updated": self.store.stats.updated}

    def sanitized(self) -> int:
        result, _ = self.store.result()
        san = getattr(result, "sanitization", None)
        return 0 if san is None else int(san.n_sanitized)

    def stats_json(self) -> dict:
        st = self.store.snapshot()
        now = time.time()
        hist = list(st.history)
        if not hist or hist[-1][1] != st.reports or now - hist[-1][0] >= 1.0:
            hist.append((now, st.reports))
        recent = [h for h in hist if h[0] >= now - 10.0]
        before = [h for h in hist if h[0] < now - 10.0]
        base = before[-1] if before else (hist[0] if hist else (now, 0))
        span = max(now - base[0], 1e-9)
        rate = (st.reports - base[1]) / span if (recent or before) else 0.0
        lat = sorted(st.latencies)
        return {"reports": st.reports, "batches": st.batches, "accepted": st.reports,
                "refused": dict(self.refused), "replayed_batches": st.replayed,
                "sanitized": self.sanitized(), "rate": rate,
                "pending": self.store.pending(),
                "published": int(self.store.result()[0].n),
                "history": [[t, n] for t, n in hist[-600:]],
                "latency_ms": {"p50": 1e3 * lat[len(lat) // 2] if lat else None,
                               "p99": 1e3 * lat[min(len(lat) - 1, int(0.99 * len(lat)))]
                               if lat else None},
                "started": self.started, "updated": st.updated}

    def metrics_text(self) -> str:
        st = self.store.snapshot()
        lines = ["# HELP fastldp_reports_accepted_total Reports acknowledged (durable).",
                 "# TYPE fastldp_reports_accepted_total counter",
                 f"fastldp_reports_accepted_total {st.reports}",
                 "# TYPE fastldp_batches_accepted_total counter",
                 f"fastldp_batches_accepted_total {st.batches}",
                 "# HELP fastldp_requests_refused_total Requests refused, by reason.",
                 "# TYPE fastldp_requests_refused_total counter"]
        lines += [f'fastldp_requests_refused_total{{reason="{r}"}} {n}'
                  for r, n in self.refused.items()]
        lines += ["# TYPE fastldp_batches_replayed_total counter",
                  f"fastldp_batches_replayed_total {st.replayed}",
                  "# HELP fastldp_reports_sanitized_total Reports the decoder sanitized.",
                  "# TYPE fastldp_reports_sanitized_total counter",
                  f"fastldp_reports_sanitized_total {self.sanitized()}",
                  "# HELP fastldp_ingest_latency_seconds From request to durable ack.",
                  "# TYPE fastldp_ingest_latency_seconds histogram"]
        cumulative = 0
        for le, count in zip([*map(str, LATENCY_BUCKETS), "+Inf"], st.buckets):
            cumulative += count
            lines.append(f'fastldp_ingest_latency_seconds_bucket{{le="{le}"}} {cumulative}')
        lines += [f"fastldp_ingest_latency_seconds_sum {st.latency_sum}",
                  f"fastldp_ingest_latency_seconds_count {st.latency_count}"]
        return "\n".join(lines) + "\n"


def create_app(config: ServiceConfig):
    """The Starlette application of a collector (the store is opened and recovered here)."""
    from starlette.applications import Starlette
    from starlette.concurrency import run_in_threadpool
    from starlette.requests import Request
    from starlette.responses import FileResponse, JSONResponse, PlainTextResponse, Response
    from starlette.routing import Mount, Route
    from starlette.staticfiles import StaticFiles

    from .. import __version__

    col = Collector(config)

    def refuse(reason: str, status: int, detail: str, headers=None, **extra) -> Response:
        col.refused[reason] += 1
        return JSONResponse({"error": reason, "detail": detail, **extra}, status_code=status,
                            headers=headers)

    async def health(request: Request) -> Response:
        return JSONResponse({"status": "ok", "reports": col.store.stats.reports,
                             "uptime": time.time() - col.started, "version": __version__})

    async def mechanism(request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(col.mechanism_json))

    async def estimate(request: Request) -> Response:
        wait = request.query_params.get("wait", "0").lower() in ("1", "true", "yes")
        return JSONResponse(await run_in_threadpool(col.estimate_json, wait))

    async def stats(request: Request) -> Response:
        return JSONResponse(await run_in_threadpool(col.stats_json))

    async def metrics(request: Request) -> Response:
        return PlainTextResponse(await run_in_threadpool(col.metrics_text),
                                 media_type="text/plain; version=0.0.4")

    async def index(request: Request) -> Response:
        page = STATIC / "index.html"
        if not page.exists():
            return PlainTextResponse("the dashboard is not installed (static/index.html)",
                                     status_code=404)
        return FileResponse(page, media_type="text/html")

    async def ingest(request: Request) -> Response:
        received = time.perf_counter()
        client = col.tokens.lookup(request.headers.get("authorization"))
        if client is None:
            return refuse("unauthorized", 401, "a valid 'Authorization: Bearer <token>' "
                          "header is required", headers={"WWW-Authenticate": "Bearer"})
        limit = col.config.max_body
        length = request.headers.get("content-length")
        if length is not None and length.isdigit() and int(length) > limit:
            return refuse("too_large", 413, f"the body has {length} bytes; the limit is {limit}")
        chunks, size = [], 0
        async for chunk in request.stream():
            size += len(chunk)
            if size > limit:
                return refuse("too_large", 413, f"the body exceeds the limit of {limit} bytes")
            chunks.append(chunk)
        body = b"".join(chunks)
        ctype = request.headers.get("content-type", "").split(";")[0].strip().lower()
        try:
            if ctype == ARROW_TYPE:
                key, (ids, eps, reps) = col.parser.from_arrow(
                    body, request.headers.get("idempotency-key"))
            elif ctype in ("application/json", ""):
                key, (ids, eps, reps) = col.parser.from_json(body)
            else:
                raise Malformed(f"the content type must be application/json or {ARROW_TYPE}; "
                                f"got {ctype!r}")
            if not isinstance(key, str) or not _KEY.match(key):
                raise Malformed("an idempotency key of 1 to 128 characters [A-Za-z0-9._:-] is "
                                "required (the JSON field 'idempotency_key', or the header "
                                "'Idempotency-Key' with Arrow)")
        except Malformed as exc:
            return refuse("malformed", 422, str(exc))
        lo, hi = int(ids.min()), int(ids.max())
        if not client.allows(lo, hi):
            outside = [int(i) for i in ids if not (client.lo <= int(i) <= client.hi)][:100]
            return refuse("forbidden_identity", 403,
                          f"the token of {client.name!r} may report identities "
                          f"{client.lo}..{client.hi} only", identities=outside)
        wait = col.limiter.take(client.name, int(ids.shape[0]))
        if wait > 0:
            return refuse("rate_limited", 429, f"over the rate of {col.config.rate} reports/s "
                          f"of this token; retry in {wait:.2f} s",
                          headers={"Retry-After": str(max(1, math.ceil(wait)))})
        fut = col.store.submit(Batch(client.name, key, ids, eps, reps, received))
        status, answer = await asyncio.wrap_future(fut)
        if status == 409:
            col.refused["duplicate_identity"] += 1
        return JSONResponse(answer, status_code=status)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        try:
            yield
        finally:
            await run_in_threadpool(col.store.close)

    routes = [Route("/", index), Route("/v1/health", health), Route("/v1/mechanism", mechanism),
              Route("/v1/estimate", estimate), Route("/v1/stats", stats),
              Route("/metrics", metrics), Route("/v1/reports", ingest, methods=["POST"])]
    if STATIC.is_dir():
        routes.append(Mount("/static", app=StaticFiles(directory=STATIC), name="static"))
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.collector = col
    return app
