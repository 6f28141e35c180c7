"""``fastldp serve``: run a collector under uvicorn (one process: the store has one writer)."""

from __future__ import annotations

import os
import socket
from typing import Any, Callable, Optional

from .app import ServiceConfig, create_app
from .auth import read_tokens

__all__ = ["serve"]


def serve(mechanism: Any, store: Any, tokens: Any, *, host: str = "127.0.0.1", port: int = 8000,
          tls_cert: Optional[str] = None, tls_key: Optional[str] = None,
          max_body: int = 16 << 20, rate: Optional[float] = None,
          segment_rows: int = 1 << 20, threads: Optional[int] = None,
          log_level: str = "warning", max_rows: Optional[int] = None,
          publish_every: int = 1000, publish_seconds: Optional[float] = None,
          ready: Optional[Callable[[str], None]] = None) -> None:
    """Open (and recover) the store, then serve until SIGINT/SIGTERM (which closes the segment).

    The order: the mechanism spec and the tokens file are read, the port is
    bound and listened on (a port in use stops here, before the store is
    touched), the store is opened (locked and recovered), the TLS files are
    loaded; then ``ready(url)`` is called (``fastldp serve`` prints
    "collecting on url" there) and requests are served. Any failure before
    that is a ``ValueError`` (or ``OSError``) whose message names the role
    of what failed: "the mechanism spec", "the tokens file", "the port",
    "the store", "the TLS certificate".

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
    spec = _checked_spec(mechanism)
    read_tokens(tokens)  # its errors say "the tokens file"; read again by the collector
    if tls_cert is not None:
        _check_tls(tls_cert, tls_key)
    sock = _listening_socket(host, port)
    try:
        try:
            app = create_app(ServiceConfig(mechanism=spec, store=store, tokens=tokens,
                                           max_body=max_body, rate=rate,
                                           segment_rows=segment_rows, threads=threads,
                                           max_rows=max_rows, publish_every=publish_every,
                                           publish_seconds=publish_seconds))
        except _store_errors() as exc:
            raise ValueError(f"the store {os.fspath(store)} cannot be opened and recovered "
                             f"(is the directory writable?): {_one_line(exc)}") from exc
        try:
            _serve_on(app, sock, host, port, tls_cert, tls_key, log_level, ready)
        except ValueError:  # refused before serving: close the store the lifespan would close
            app.state.collector.store.close()
            raise
    finally:
        sock.close()


def _serve_on(app: Any, sock: socket.socket, host: str, port: int, tls_cert: Optional[str],
              tls_key: Optional[str], log_level: str,
              ready: Optional[Callable[[str], None]]) -> None:
    """Serve ``app`` on the listening ``sock`` until a stop (uvicorn, one worker)."""
    import uvicorn

    from .headers import http_protocol

    # the socket is ours: uvicorn's own bind would log an error and sys.exit(1) on a port in use
    options = dict(host=host, port=port, ssl_certfile=tls_cert, ssl_keyfile=tls_key,
                   log_level=log_level, access_log=False, workers=1, timeout_keep_alive=30,
                   timeout_graceful_shutdown=3)  # idle keep-alive clients must not hold a stop
    # a request line and headers over HEADER_LIMIT (64 KiB) get 431, with httptools or h11
    protocol, protocol_options = http_protocol()
    options.update(protocol_options, http=protocol)
    config = uvicorn.Config(app, **options)
    try:  # the TLS files are read here, before "collecting on" is said
        config.load()
    except OSError as exc:  # ssl.SSLError is an OSError
        raise ValueError(f"the TLS certificate {tls_cert} and key {tls_key} cannot be loaded: "
                         f"{_one_line(exc)}") from exc
    server = uvicorn.Server(config)
    import signal
    import threading

    previous = None
    if threading.current_thread() is threading.main_thread():
        # a SIGTERM from the moment "collecting on" is said is a graceful stop: until uvicorn
        # installs its own handler it marks the server to stop at once (uvicorn then starts
        # and stops, and the lifespan closes the store), and after the graceful stop uvicorn
        # re-raises the SIGTERM it caught, which lands here too: a stopped collector exits 0
        previous = signal.signal(signal.SIGTERM,
                                 lambda signum, frame: setattr(server, "should_exit", True))
    try:
        if ready is not None:
            shown = f"[{host}]" if ":" in host else host
            scheme = "https" if tls_cert else "http"
            ready(f"{scheme}://{shown}:{sock.getsockname()[1]}")
        profile = os.environ.get("FASTLDP_SERVE_PROFILE")
        if not profile:
            server.run(sockets=[sock])
            return
        # a profile of the event loop's thread (HTTP, parsing, the routes), written at a
        # graceful stop: ``python -m pstats FILE``; the store's writer and decoder threads are
        # not in it
        import cProfile

        prof = cProfile.Profile()
        prof.enable()
        try:
            server.run(sockets=[sock])
        finally:
            prof.disable()
            prof.dump_stats(profile)
    finally:
        if previous is not None:
            signal.signal(signal.SIGTERM, previous)


def _one_line(exc: BaseException) -> str:
    return " ".join(str(exc).split()) or type(exc).__name__


def _checked_spec(mechanism: Any) -> dict:
    """The spec of ``mechanism``, checked by building it; errors say "the mechanism spec"."""
    from .. import mechanisms
    from .app import probe_reports

    shown = os.fspath(mechanism) if isinstance(mechanism, (str, os.PathLike)) else repr(mechanism)
    shown = shown if len(shown) <= 80 else shown[:77] + "..."
    try:
        spec = (mechanism if isinstance(mechanism, dict)
                else mechanisms.read_spec(mechanism))
        probe_reports(mechanisms.from_spec(spec))  # a mechanism the collector cannot take
    except (OSError, ValueError, TypeError, KeyError) as exc:
        raise ValueError(f"the mechanism spec {shown} cannot be used: {_one_line(exc)}") \
            from exc
    return spec


def _check_tls(tls_cert: Any, tls_key: Any) -> None:
    """Load the certificate and its key once, before the port and the store; errors name them."""
    import ssl

    try:
        ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER).load_cert_chain(tls_cert, tls_key)
    except OSError as exc:  # ssl.SSLError is an OSError
        raise ValueError(f"the TLS certificate {tls_cert} and key {tls_key} cannot be loaded: "
                         f"{_one_line(exc)}") from exc


def _listening_socket(host: str, port: int) -> socket.socket:
    """A TCP socket bound to ``host:port`` and listening; errors say "the port"."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    try:
        # as uvicorn binds: a restart need not wait for the old connections' TIME_WAIT
        sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        sock.bind((host, port))
        # connections made from now on wait in the backlog until the loop accepts them
        sock.listen(2048)
    except OSError as exc:
        sock.close()
        raise ValueError(f"the port {port} on {host} cannot be listened on: "
                         f"{exc.strerror or exc}") from exc
    except OverflowError as exc:  # a port outside 0..65535 from Python
        sock.close()
        raise ValueError(f"the port must be in 1..65535; got {port}") from exc
    sock.set_inheritable(True)
    return sock


def _store_errors() -> tuple:
    """What opening a store raises when its directory cannot be used (not a bad spec)."""
    import sqlite3
    import sys

    errors = (OSError, sqlite3.Error)
    arrow = sys.modules.get("pyarrow")
    if arrow is not None:  # a damaged segment met by recovery
        errors += (arrow.lib.ArrowException,)
    return errors
