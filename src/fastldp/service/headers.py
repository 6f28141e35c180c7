"""A limit on the size of a request's head (request line and headers): HTTP 431.

uvicorn's httptools protocol has no limit of its own: httptools accumulates
a header value across reads, so a 50 MB header was parsed for 5.2 s and
answered 200. :class:`HeaderLimitedHttpTools` counts the bytes of each
request's head as they arrive (in ``data_received``, before the parser sees
them) and answers 431 and closes the connection once they pass
:data:`HEADER_LIMIT`. The h11 protocol (used where httptools is not
installed) is given h11's own limit (``h11_max_incomplete_event_size``) and
answers 431 instead of uvicorn's generic 400 when that limit is what failed.
"""

from __future__ import annotations

import json
from typing import Any

__all__ = ["HEADER_LIMIT", "http_protocol"]

HEADER_LIMIT = 64 << 10  # bytes of request line and headers, per request

_END_OF_HEAD = b"\r\n\r\n"


def _response_431(limit: int) -> bytes:
    body = json.dumps({"error": "headers_too_large",
                       "detail": f"the request line and headers exceed the limit of {limit} "
                                 "bytes"}).encode()
    return (b"HTTP/1.1 431 Request Header Fields Too Large\r\n"
            b"content-type: application/json\r\n"
            b"content-length: " + str(len(body)).encode() + b"\r\n"
            b"connection: close\r\n\r\n" + body)


def http_protocol(prefer: str = "auto") -> tuple[type, dict]:
    """The uvicorn ``http`` protocol class enforcing :data:`HEADER_LIMIT`, and its options.

    Parameters
    ----------
    prefer : {"auto", "httptools", "h11"}
        ``"auto"``: httptools where installed (as uvicorn's own choice), else h11.

    Returns
    -------
    (protocol class, dict of uvicorn options)
    """
    if prefer not in ("auto", "httptools", "h11"):
        raise ValueError(f"The 'prefer' parameter must be 'auto', 'httptools' or 'h11'. Got "
                         f"{prefer!r} instead.")
    if prefer in ("auto", "httptools"):
        try:
            cls = _httptools_class()
        except ImportError:
            if prefer == "httptools":
                raise
        else:
            return cls, {"h11_max_incomplete_event_size": HEADER_LIMIT}
    return _h11_class(), {"h11_max_incomplete_event_size": HEADER_LIMIT}


def _httptools_class() -> type:
    from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

    class HeaderLimitedHttpTools(HttpToolsProtocol):
        """uvicorn's httptools protocol with a per-request limit on the head's bytes."""

        header_limit = HEADER_LIMIT

        def connection_made(self, transport: Any) -> None:  # type: ignore[override]
            super().connection_made(transport)
            self._head_left = self.header_limit  # None: a body is being read
            self._head_tail = b""
            self._refused = False

        def data_received(self, data: bytes) -> None:
            if self._refused:
                return
            left = self._head_left
            if left is not None:
                if len(data) > left:
                    # over the limit unless the head ends within it (a chunk holds the end of
                    # the head and part of the body)
                    window = self._head_tail + bytes(data[:left])
                    if _END_OF_HEAD not in window:
                        self._refuse()
                        return
                else:
                    self._head_left = left - len(data)
                    self._head_tail = (self._head_tail + bytes(data[-3:]))[-3:]
            super().data_received(data)

        def on_headers_complete(self) -> None:
            self._head_left = None
            super().on_headers_complete()

        def on_message_complete(self) -> None:
            # bytes after this in the same read are not counted (at most one read's worth)
            self._head_left = self.header_limit
            self._head_tail = b""
            super().on_message_complete()

        def _refuse(self) -> None:
            self._refused = True
            self.logger.warning("request headers over %d bytes: 431", self.header_limit)
            self.transport.write(_response_431(self.header_limit))
            self.transport.close()

    return HeaderLimitedHttpTools


def _h11_class() -> type:
    from uvicorn.protocols.http.h11_impl import H11Protocol

    class HeaderLimitedH11(H11Protocol):
        """uvicorn's h11 protocol answering 431 (not 400) when h11's head limit is passed."""

        header_limit = HEADER_LIMIT

        def send_400_response(self, msg: str) -> None:
            # h11 raised RemoteProtocolError; its buffer over the limit says which one
            if len(self.conn.trailing_data[0]) > self.header_limit:
                self.transport.write(_response_431(self.header_limit))
                self.transport.close()
                return
            super().send_400_response(msg)

    return HeaderLimitedH11
