"""Start a collector in a subprocess for a test: :func:`running_server`."""

from __future__ import annotations

import contextlib
import os
import secrets
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any, Iterator, Optional

from .auth import hash_token

__all__ = ["running_server", "RunningServer", "free_port"]


def free_port() -> int:
    """A TCP port free on the loopback interface now."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class RunningServer:
    """A ``fastldp serve`` subprocess on loopback: ``url``, ``token``, ``kill()``, ``restart()``."""

    def __init__(self, root: Path, mechanism: Any, tokens: Optional[dict], *,
                 timeout: float, tls: Optional[tuple] = None, unrestricted: bool = True,
                 **options: Any) -> None:
        self.root = Path(root)
        self.root.mkdir(parents=True, exist_ok=True)
        self.store = self.root / "store"
        self.mechanism = mechanism
        self.timeout = timeout
        self.tls = tls
        self.options = options
        # hex tokens: a urlsafe one starts with "-" once in 64 draws, and a
        # command line then reads `--token -x...` as an option (CI saw it)
        self.tokens = {"test": secrets.token_hex(24)} if unrestricted else {}
        ranges: dict = {"test": None} if unrestricted else {}
        for name, rng in (tokens or {}).items():
            self.tokens[name] = secrets.token_hex(24)
            ranges[name] = rng
        if not self.tokens:
            raise ValueError("running_server(unrestricted=False) needs tokens")
        self.token = next(iter(self.tokens.values()))
        self.tokens_file = self.root / "tokens.txt"
        lines = []
        for name, token in self.tokens.items():
            bounds = "" if ranges[name] is None else f" {ranges[name][0]} {ranges[name][1]}"
            lines.append(f"{name} {hash_token(token)}{bounds}")
        self.tokens_file.write_text("\n".join(lines) + "\n")
        self.port = free_port()
        scheme = "https" if tls else "http"
        self.url = f"{scheme}://127.0.0.1:{self.port}"
        self.proc: Optional[subprocess.Popen] = None
        self.log = self.root / "server.log"

    @property
    def pid(self) -> int:
        assert self.proc is not None
        return self.proc.pid

    def command(self, port: Optional[int] = None) -> list[str]:
        """The ``fastldp serve`` command line (on ``port``, default the server's own)."""
        spec = self.mechanism if isinstance(self.mechanism, str) else __import__("json").dumps(
            self.mechanism)
        cmd = [sys.executable, "-m", "fastldp", "serve", "--mechanism", spec,
               "--store", str(self.store), "--tokens", str(self.tokens_file),
               "--host", "127.0.0.1", "--port", str(self.port if port is None else port)]
        if self.tls:
            cmd += ["--tls-cert", str(self.tls[0]), "--tls-key", str(self.tls[1])]
        for name, value in self.options.items():
            cmd += [f"--{name.replace('_', '-')}", str(value)]
        return cmd

    def start(self) -> None:
        """Start the subprocess and wait until ``GET /v1/health`` answers 200."""
        import httpx

        env = dict(os.environ, PYTHONUNBUFFERED="1")
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(self.command(), stdout=log, stderr=subprocess.STDOUT,
                                         env=env)
        deadline = time.monotonic() + self.timeout
        from .client import tls_context

        verify = tls_context(str(self.tls[0])) if self.tls else True
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise RuntimeError(f"fastldp serve exited with {self.proc.returncode}:\n"
                                   + self.log.read_text()[-4000:])
            try:
                if httpx.get(self.url + "/v1/health", timeout=1.0, verify=verify
                             ).status_code == 200:
                    return
            except httpx.HTTPError:
                pass
            time.sleep(0.05)
        self.stop()
        raise TimeoutError(f"fastldp serve did not answer within {self.timeout} s:\n"
                           + self.log.read_text()[-4000:])

    def kill(self) -> None:
        """SIGKILL the server (a crash: nothing is flushed)."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait(10)

    def stop(self) -> None:
        """SIGTERM (a graceful stop: the open segment is closed), SIGKILL after 20 s."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(20)
            except subprocess.TimeoutExpired:
                self.kill()

    def restart(self) -> None:
        """Stop (gracefully) if running, then start again on the same port and store."""
        self.stop()
        self.start()


@contextlib.contextmanager
def running_server(tmp_path: Any, mechanism: Any = "olh-4096", tokens: Optional[dict] = None,
                   *, timeout: float = 60.0, tls: Optional[tuple] = None,
                   unrestricted: bool = True, **serve_options: Any) -> Iterator[RunningServer]:
    """A collector on a free loopback port, for the duration of a ``with`` block.

    Parameters
    ----------
    tmp_path : path
        The store (``tmp_path/store``), the tokens file and ``server.log`` go here.
    mechanism : preset, spec dict, or spec text
    tokens : dict, optional
        Extra clients ``{name: (lo, hi) or None}``; a client ``"test"`` with
        every identity is there too (``server.token``) unless ``unrestricted``
        is ``False``, when ``server.token`` is the first of ``tokens`` (a
        collector of one shard of the identities: every token is ranged).
    tls : (cert, key), optional
        PEM files: the server speaks HTTPS.
    serve_options
        More ``fastldp serve`` options (``max_body=1000``, ``rate=500``...).
    """
    server = RunningServer(Path(tmp_path), mechanism, tokens, timeout=timeout, tls=tls,
                           unrestricted=unrestricted, **serve_options)
    server.start()
    try:
        yield server
    finally:
        server.stop()
