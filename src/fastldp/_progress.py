"""A progress bar with ETA on stderr: tqdm when installed, else a small built-in one."""

from __future__ import annotations

import sys
import time

__all__ = ["progress_bar"]


class _Bar:
    """Minimal stand-in for tqdm: ``update(n)`` and ``close()``."""

    def __init__(self, total: int, desc: str, file, unit: str = "cells"):
        self.unit = unit
        self.total = max(int(total), 0)
        self.desc = desc
        self.file = file
        self.done = 0
        self.start = time.perf_counter()
        self.tty = bool(getattr(file, "isatty", lambda: False)())
        self._last = -1.0
        self._last_decile = -1
        self._draw(force=True)

    @staticmethod
    def _clock(seconds: float) -> str:
        seconds = int(round(seconds))
        h, rem = divmod(seconds, 3600)
        m, s = divmod(rem, 60)
        return f"{h}:{m:02d}:{s:02d}" if h else f"{m:02d}:{s:02d}"

    def _draw(self, force: bool = False) -> None:
        now = time.perf_counter()
        elapsed = now - self.start
        frac = self.done / self.total if self.total else 1.0
        if self.tty:
            if not force and now - self._last < 0.2 and self.done < self.total:
                return
        else:  # a log file: one line per tenth
            decile = int(frac * 10)
            if not force and decile == self._last_decile and self.done < self.total:
                return
            self._last_decile = decile
        self._last = now
        eta = elapsed / self.done * (self.total - self.done) if self.done else float("nan")
        eta_text = self._clock(eta) if eta == eta else "?"
        width = 24
        filled = int(round(frac * width))
        line = (f"{self.desc}: {frac:4.0%} [{'#' * filled}{'.' * (width - filled)}] "
                f"{self.done}/{self.total} {self.unit}, {self._clock(elapsed)} elapsed, ETA {eta_text}")
        if self.tty:
            self.file.write("\r" + line)
        else:
            self.file.write(line + "\n")
        self.file.flush()

    def update(self, n: int = 1) -> None:
        self.done += n
        self._draw()

    def close(self) -> None:
        self._draw(force=True)
        if self.tty:
            self.file.write("\n")
            self.file.flush()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class _Silent:
    def update(self, n: int = 1) -> None:
        pass

    def close(self) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        pass


def progress_bar(total: int, desc: str = "fastldp", *, enabled: bool = True, file=None,
                 unit: str = "cell"):
    """Return a bar with ``update(n)`` and ``close()`` on ``file`` (default stderr).

    ``unit`` names what is counted (singular; the built-in bar adds an "s").
    """
    if not enabled:
        return _Silent()
    file = file or sys.stderr
    try:
        from tqdm import tqdm
    except ImportError:
        return _Bar(total, desc, file, unit + "s")
    return tqdm(total=total, desc=desc, unit=unit, file=file, dynamic_ncols=True)
