"""A collector for local-DP reports: ``fastldp serve`` and its :class:`Client`.

Install with ``pip install 'fastldp[serve]'`` (Starlette, uvicorn, httpx,
pyarrow). The server ingests batches of privatized reports over HTTP from
clients holding bearer tokens, stores them durably and exactly once, and
keeps a live estimate equal bit for bit to the offline decode of the same
reports. See ``docs/guide/service.rst``.

This package sits on top of the families (like the CLI); nothing below it
imports it.
"""

from __future__ import annotations

from typing import Any

__all__ = ["Client", "ServiceConfig", "create_app", "serve", "hash_token", "Store",
           "ServiceError"]

_WHERE = {"Client": "client", "ServiceError": "client", "ServiceConfig": "app",
          "create_app": "app", "serve": "server", "hash_token": "auth", "Store": "store"}


def __getattr__(name: str) -> Any:
    if name in _WHERE:
        import importlib

        return getattr(importlib.import_module(f".{_WHERE[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(list(globals()) + __all__)
