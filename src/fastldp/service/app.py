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
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Optional

import numpy as np

from .. import mechanisms, protocol
from .._random import resolve_n_threads
from .auth import RateLimiter, TokenTable, read_tokens
from .parsing import KEY_PATTERN as _KEY  # noqa: F401 - the key pattern (re.fullmatch)
from .parsing import (ARROW_TYPE, BatchParser, Limits, Malformed, Refusal, Who,  # noqa: F401
                      check_key, lower_priority, parse_json_job, warm_job)
from .store import LATENCY_BUCKETS, Batch, Store, StoreError, StoreFull

__all__ = ["ServiceConfig", "create_app", "probe_reports", "REFUSAL_REASONS", "ARROW_TYPE"]

REFUSAL_REASONS = ("unauthorized", "forbidden_identity", "too_large", "malformed",
                   "duplicate_identity", "rate_limited", "idempotency_key_reused",
                   "insufficient_storage", "unavailable")
# Bodies from this size on are bulk work, parsed at a lower CPU priority than the event loop
# (nice +10) so that other requests keep their latency while it runs: JSON in a worker
# process (json.loads and the list conversions of a 16 MiB body hold the GIL for about a
# second, which a thread would not give back to the loop), Arrow in a thread of its own
# (pyarrow and numpy release the GIL; 16 MiB take 5-20 ms). Below it a thread of the default
# pool parses: its GIL hold is a few milliseconds and a 1,000-report batch (~20 KB JSON,
# ~16 KB Arrow) pays no process round trip.
BULK_BYTES = 1 << 18
STATIC = Path(__file__).resolve().parent / "static"


@dataclass
class ServiceConfig:
    """What ``fastldp serve`` was started with."""

    mechanism: Any  # a spec (dict, preset name, file, JSON text)
    store: Any
    tokens: Any  # the tokens file
    max_body: int = 16 << 20
    max_rows: Optional[int] = None  # rows per batch (default max_body // 8; parsing.Limits)
    rate: Optional[float] = None  # reports per second per token
    segment_rows: int = 1 << 20
    threads: Optional[int] = None  # the live decode's threads (default: all cores)
    # the public estimate advances in steps of at least this many reports (and seconds)
    publish_every: int = 1000
    publish_seconds: Optional[float] = None


def kind_of(mechanism: Any) -> str:
    """How the dashboard draws the estimate: the mechanism's ``kind`` (:data:`fastldp.protocol.KINDS`)."""
    return mechanism.kind


def probe_reports(mechanism: Any) -> tuple[tuple, np.dtype]:
    """The shape of one report and the dtype a batch is stored in: the mechanism's report schema."""
    schema = mechanism.report_schema
    return schema.shape, schema.dtype


def _finite_list(values: Any) -> Optional[list]:
    if values is None:
        return None
    flat = np.asarray(values, dtype=np.float64).ravel().tolist()
    return [x if math.isfinite(x) else None for x in flat]


def _json_safe(value: Any) -> Any:
    return json.loads(json.dumps(value, default=lambda o: o.item() if hasattr(o, "item") else str(o)))


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
        try:
            protocol.check_mechanism(self.mechanism)
        except TypeError as exc:
            raise ValueError(f"fastldp serve cannot collect {type(self.mechanism).__name__} "
                             f"reports: {exc}") from None
        self.spec = self.mechanism.spec()
        self.schema = self.mechanism.report_schema
        self.report_shape, self.report_dtype = self.schema.shape, self.schema.dtype
        self.limits = Limits.derive(config.max_body, self.report_shape, config.max_rows)
        self.parser = BatchParser(self.mechanism, self.report_shape, self.report_dtype,
                                  self.limits)
        self._json_pool: Any = None  # the worker process for large JSON bodies (made at need)
        self._bulk_threads: Any = None  # the low-priority thread for large Arrow bodies
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

        fixed = self.schema.fixed_epsilon
        body = arrow_batch(np.arange(2, dtype=np.uint64),
                           np.zeros((2, *self.report_shape), dtype=self.report_dtype),
                           None if fixed is not None else np.ones(2))
        self.parser.from_arrow(body, "warm-up")

    async def parse_json_in_process(self, body: bytes, who: Optional[Who]) -> tuple:
        """:meth:`BatchParser.from_json` in the worker process (made at the first large body).

        ``json.loads`` and the list conversions hold the GIL for their whole
        run (about a second for 16 MiB), so a thread would stall the event
        loop; a process does not. A worker that died (killed for memory) is
        replaced, and the request is answered 503.
        """
        from concurrent.futures.process import BrokenProcessPool

        if self._json_pool is None:
            import concurrent.futures
            import multiprocessing

            # spawn, not fork: the server has threads (the store's writer and decoder)
            self._json_pool = concurrent.futures.ProcessPoolExecutor(
                max_workers=1, mp_context=multiprocessing.get_context("spawn"),
                initializer=lower_priority)
            self._json_pool.submit(warm_job)
        loop = asyncio.get_running_loop()
        try:
            return await loop.run_in_executor(self._json_pool, parse_json_job, self.parser,
                                              body, who)
        except BrokenProcessPool:
            self.close_pools()
            raise

    async def parse_arrow_in_bulk_thread(self, body: bytes, key: Optional[str],
                                         who: Optional[Who]) -> tuple:
        """:meth:`BatchParser.from_arrow` in the low-priority thread (made at the first need)."""
        if self._bulk_threads is None:
            import concurrent.futures

            self._bulk_threads = concurrent.futures.ThreadPoolExecutor(
                max_workers=1, thread_name_prefix="fastldp-bulk-parse",
                initializer=lower_priority)
        loop = asyncio.get_running_loop()
        return await loop.run_in_executor(self._bulk_threads, self.parser.from_arrow, body,
                                          key, who)

    def close_pools(self) -> None:
        """Stop the JSON worker process and the bulk-parsing thread (if they were made)."""
        if self._json_pool is not None:
            self._json_pool.shutdown(wait=False, cancel_futures=True)
            self._json_pool = None
        if self._bulk_threads is not None:
            self._bulk_threads.shutdown(wait=False, cancel_futures=True)
            self._bulk_threads = None

    def mechanism_json(self) -> dict:
        result, _ = self.store.result()
        fixed = self.schema.fixed_epsilon
        labels = self.mechanism.labels
        return {"spec": self.spec, "kind": self.kind, "repr": repr(self.mechanism),
                "privacy": str(getattr(result, "privacy", "")),
                "epsilon": fixed, "personal_budgets": fixed is None,
                "report_shape": list(self.report_shape), "report_dtype": str(self.report_dtype),
                "estimate_shape": list(np.shape(result.estimate)),
                "labels": None if labels is None else _json_safe(list(labels)),
                "max_body": self.config.max_body, "max_rows": self.limits.max_rows,
                "max_decoded_bytes": self.limits.max_decoded_bytes,
                "rate_limit": self.config.rate,
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

    from .._version import __version__

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

    async def parse(body: bytes, ctype: str, header_key: Optional[str],
                    who: Who) -> tuple:
        """Parse and check a body off the event loop: Arrow in a thread (pyarrow releases the
        GIL), JSON in a thread when small, in the worker process when large."""
        if ctype == ARROW_TYPE:
            check_key(header_key)  # before any parsing: a body without its key is not read
            if len(body) >= BULK_BYTES:
                return await col.parse_arrow_in_bulk_thread(body, header_key, who)
            return await run_in_threadpool(col.parser.from_arrow, body, header_key, who)
        if ctype in ("application/json", ""):
            if len(body) >= BULK_BYTES:
                return await col.parse_json_in_process(body, who)
            return await run_in_threadpool(col.parser.from_json, body, who)
        raise Malformed(f"the content type must be application/json or {ARROW_TYPE}; "
                        f"got {ctype[:100]!r}")

    async def ingest(request: Request) -> Response:
        from concurrent.futures.process import BrokenProcessPool

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
        who = Who(client.name, client.lo, client.hi)
        try:
            key, (ids, eps, reps) = await parse(body, ctype,
                                                request.headers.get("idempotency-key"), who)
        except Refusal as exc:
            return refuse(exc.reason, exc.status, str(exc), **exc.extra)
        except BrokenProcessPool:
            return JSONResponse({"error": "unavailable", "detail": "the JSON parser's worker "
                                 "process died (out of memory?); retry"}, status_code=503,
                                headers={"Retry-After": "1"})
        del body, chunks
        wait = col.limiter.take(client.name, int(ids.shape[0]))
        if wait > 0:
            return refuse("rate_limited", 429, f"over the rate of {col.config.rate} reports/s "
                          f"of this token; retry in {wait:.2f} s",
                          headers={"Retry-After": str(max(1, math.ceil(wait)))})
        fut = col.store.submit(Batch(client.name, key, ids, eps, reps, received))
        try:
            status, answer = await asyncio.wrap_future(fut)
        except StoreFull as exc:  # the store could not commit for lack of space: nothing acked
            return refuse("insufficient_storage", 507, str(exc))
        except StoreError as exc:  # closing, or another failure of the store: nothing acked
            return refuse("unavailable", 503, str(exc), headers={"Retry-After": "1"})
        if status >= 300:  # refused by the store (409 duplicate_identity, 422 key reused)
            reason = str(answer.get("error", "store"))
            col.refused[reason] = col.refused.get(reason, 0) + 1
        return JSONResponse(answer, status_code=status)

    @contextlib.asynccontextmanager
    async def lifespan(app):
        try:
            yield
        finally:
            col.close_pools()
            await run_in_threadpool(col.store.close)

    routes = [Route("/", index), Route("/v1/health", health), Route("/v1/mechanism", mechanism),
              Route("/v1/estimate", estimate), Route("/v1/stats", stats),
              Route("/metrics", metrics), Route("/v1/reports", ingest, methods=["POST"])]
    if STATIC.is_dir():
        routes.append(Mount("/static", app=StaticFiles(directory=STATIC), name="static"))
    app = Starlette(routes=routes, lifespan=lifespan)
    app.state.collector = col
    return app
