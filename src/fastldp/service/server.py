"""``fastldp serve``: run a collector under uvicorn (one process: the store has one writer)."""

from __future__ import annotations

import os
from typing import Any, Optional

from .app import ServiceConfig, create_app

__all__ = ["serve"]


def serve(mechanism: Any, store: Any, tokens: Any, *, host: str = "127.0.0.1", port: int = 8000,
          tls_cert: Optional[str] = None, tls_key: Optional[str] = None,
          max_body: int = 16 << 20, rate: Optional[float] = None,
          segment_rows: int = 1 << 20, threads: Optional[int] = None,
          log_level: str = "warning", publish_every: int = 1000,
          publish_seconds: Optional[float] = None) -> None:
    """Open (and recover) the store, then serve until SIGINT/SIGTERM (which closes the segment).

    TLS: ``tls_cert`` and ``tls_key`` are PEM files passed to uvicorn's
    ``ssl_certfile`` / ``ssl_keyfile``. uvicorn parses HTTP with httptools
    and runs on uvloop where they are installed (the ``serve`` extra brings
    them) instead of the pure-Python h11 on asyncio. The environment variable ``FASTLDP_SERVE_PROFILE=FILE`` profiles the event
    loop's thread with cProfile and writes the stats to ``FILE`` at a
    graceful stop.
    """
    try:
        import uvicorn
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("fastldp serve needs the serve extra: pip install 'fastldp[serve]'") \
            from None
    if (tls_cert is None) != (tls_key is None):
        raise ValueError("--tls-cert and --tls-key go together (a certificate and its key)")
    app = create_app(ServiceConfig(mechanism=mechanism, store=store, tokens=tokens,
                                   max_body=max_body, rate=rate, segment_rows=segment_rows,
                                   threads=threads, publish_every=publish_every,
                                   publish_seconds=publish_seconds))
    options = dict(host=host, port=port, ssl_certfile=tls_cert, ssl_keyfile=tls_key,
                   log_level=log_level, access_log=False, workers=1, timeout_keep_alive=30,
                   timeout_graceful_shutdown=3)  # idle keep-alive clients must not hold a stop
    profile = os.environ.get("FASTLDP_SERVE_PROFILE")
    if not profile:
        uvicorn.run(app, **options)
        return
    # a profile of the event loop's thread (HTTP, parsing, the routes), written at a graceful
    # stop: ``python -m pstats FILE``; the store's writer and decoder threads are not in it
    import cProfile
    import signal

    # uvicorn re-raises the SIGTERM it caught after its graceful stop: let it land on a no-op
    signal.signal(signal.SIGTERM, lambda signum, frame: None)
    prof = cProfile.Profile()
    prof.enable()
    try:
        uvicorn.run(app, **options)
    finally:
        prof.disable()
        prof.dump_stats(profile)
