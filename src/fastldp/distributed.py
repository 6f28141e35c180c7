"""The streaming decoders on a Dask cluster (``pip install fastldp[distributed]``).

:func:`estimate` maps every piece of the input (a row group of a report
file, or a partition of a Dask DataFrame) to an exact partial sketch on a
worker, merges the partials as a tree and finalizes on the client. Because
partials are exact integer state (:mod:`fastldp.streaming`), the result is
bit-identical to the in-memory ``estimate`` and to the local streaming
decode, whatever the partitioning, the number of workers and the order in
which their results arrive.

Pointing it at a real cluster::

    from dask.distributed import Client
    client = Client("tcp://scheduler:8786")       # an existing Dask cluster
    result = fastldp.distributed.estimate(mech, "s3://bucket/reports/*.parquet",
                                          client=client)

(remote paths need the workers to read them: fsspec and its S3/GCS package
installed there). The CLI does the same with ``fastldp decode REPORTS
--scheduler tcp://scheduler:8786``; it first checks that the scheduler
answers (:func:`check_scheduler`), so a wrong address fails in seconds with
one line.
"""

from __future__ import annotations

import socket
import warnings
from urllib.parse import urlsplit

from .reports import (ReportFile, SanitizationWarning, _check_frame_report_dtype, _table_arrays,
                      check_report_type, chunk_epsilons, mechanism_spec, open_reports,
                      sanitization_warning)
from .streaming import Partial

__all__ = ["estimate", "partials", "check_scheduler", "DEFAULT_PORT"]

#: The port of a Dask scheduler address that names none (Dask's default).
DEFAULT_PORT = 8786

# the schemes whose address is host:port over TCP; others (inproc, ucx) are left to Dask
_TCP_SCHEMES = ("tcp", "tls", "ws", "wss")


def check_scheduler(address: str, *, timeout: float = 5.0) -> tuple[str, int]:
    """Check that a TCP connection to a Dask scheduler opens within ``timeout`` seconds.

    Dask's ``Client`` retries an unreachable address for 30 seconds and then
    fails with a long traceback; this check fails at once with one line.

    Parameters
    ----------
    address : str
        ``tcp://host:port`` (also ``tls://``, ``ws://``, ``wss://``, or
        ``host:port`` for ``tcp``); a missing port is :data:`DEFAULT_PORT`.
        Other schemes (``inproc://``, ``ucx://``) are not checked.
    timeout : float
        Seconds to wait for the connection, in ``(0, inf)``.

    Returns
    -------
    (host, port)
        What was connected to (``("", 0)`` for a scheme that is not checked).

    Raises
    ------
    ValueError
        When ``address`` is not a scheduler address (no host, a bad port).
    ConnectionError
        When the host does not resolve, refuses the connection or does not
        answer within ``timeout``; the message names the address.
    """
    from ._validation import check_float

    timeout = check_float(timeout, "timeout", "check_scheduler", low=0.0, high=float("inf"))
    text = str(address).strip()
    scheme = text.split("://", 1)[0].lower() if "://" in text else "tcp"
    if scheme not in _TCP_SCHEMES:
        return "", 0
    rest = text.split("://", 1)[1] if "://" in text else text
    try:
        parts = urlsplit(f"tcp://{rest}")
        host, port, path = parts.hostname, parts.port, parts.path
    except ValueError:  # an unclosed IPv6 bracket, a port outside [0, 65535]
        host = None
    if not host or path not in ("", "/"):
        raise ValueError(f"The scheduler address must be an address like tcp://host:8786. "
                         f"Got {address!r} instead.")
    port = DEFAULT_PORT if port is None else port
    why = None
    try:
        with socket.create_connection((host, port), timeout=timeout):
            pass
    except socket.gaierror:
        why = f"the host {host!r} does not resolve"
    except ConnectionRefusedError:
        why = f"nothing listens on port {port} of {host}"
    except (socket.timeout, TimeoutError):
        why = f"no answer within {timeout:g} s"
    except OSError as exc:
        why = exc.strerror or str(exc) or type(exc).__name__
    if why is not None:
        raise ConnectionError(f"The Dask scheduler at {address} cannot be reached: {why}. "
                              f"Check the address (tcp://host:port) and that the scheduler "
                              f"is running.")
    return host, port


def _dask():
    try:
        import dask
        from dask import delayed
    except ImportError:  # pragma: no cover - exercised only without the extra
        raise ImportError("the Dask path needs dask and distributed: "
                          "pip install 'fastldp[distributed]'") from None
    return dask, delayed


def _row_group_partial(mechanism, path: str, group: int) -> Partial:
    reports, eps, ids = ReportFile(path).row_group(group)
    return mechanism.partial(reports, chunk_epsilons(mechanism, eps, f"{path}, row group {group}"),
                             ids)


def _frame_partial(mechanism, frame, index: int) -> Partial:
    import pyarrow as pa

    where = f"partition {index} of the Dask DataFrame"
    table = frame if isinstance(frame, pa.Table) else pa.Table.from_pandas(frame,
                                                                           preserve_index=False)
    check_report_type(mechanism, table.schema.field("report").type, where)
    reports, eps, ids = _table_arrays(table, where)
    return mechanism.partial(reports, chunk_epsilons(mechanism, eps, where), ids)


def _merge(mechanism, a: Partial, b: Partial) -> Partial:
    return mechanism.merge(a, b)


def partials(mechanism, source) -> list:
    """The delayed per-piece partials of ``source`` (see :func:`estimate`)."""
    _, delayed = _dask()
    if hasattr(source, "to_delayed") and hasattr(source, "npartitions"):
        missing = {"identity", "epsilon", "report"} - set(source.columns)
        if missing:
            raise ValueError(f"the Dask DataFrame needs columns identity, epsilon, report; "
                             f"missing {sorted(missing)}")
        # a column of the wrong dtype is refused here, before any work is sent out
        _check_frame_report_dtype(mechanism, source.dtypes["report"], "the Dask DataFrame")
        return [delayed(_frame_partial)(mechanism, part, i)
                for i, part in enumerate(source.to_delayed())]
    # a mismatch is refused here, before any work is sent out
    return [delayed(_row_group_partial)(mechanism, reader.path, g)
            for reader in open_reports(mechanism, source) for g in range(reader.num_row_groups)]


def estimate(mechanism, source, *, client=None, finalize: bool = True):
    """Decode ``source`` on Dask: partials per piece, a merge tree, one finalize.

    Parameters
    ----------
    mechanism : estimator
        Any streaming estimator (``partial`` / ``merge`` / ``finalize``).
    source : Dask DataFrame, path, glob, directory, or list of paths
        A DataFrame needs columns ``identity``, ``epsilon``, ``report`` (a
        report row is a list for mechanisms with vector reports); files are
        fastldp report files (:mod:`fastldp.reports`), one task per row group.
    client : dask.distributed.Client, optional
        Where to run; default: the current client if one exists, else
        Dask's local scheduler.
    finalize : bool
        ``False`` returns the merged :class:`~fastldp.streaming.Partial`.

    Returns
    -------
    The mechanism's estimate object, bit-identical to ``mechanism.estimate``
    on the same reports (at the mechanism's fixed ``epsilon``, which every
    budget of the source must equal, or at the source's personal budgets;
    see :func:`fastldp.reports.chunk_epsilons`).

    Warns
    -----
    fastldp.reports.SanitizationWarning
        When more than half of the reports were malformed (sanitized).
    """
    dask, delayed = _dask()
    mechanism_spec(mechanism)  # a clear TypeError for a non-streaming estimator
    level = partials(mechanism, source)
    if not level:
        raise ValueError("the source holds no reports")
    while len(level) > 1:
        level = [delayed(_merge)(mechanism, level[i], level[i + 1]) if i + 1 < len(level)
                 else level[i] for i in range(0, len(level), 2)]
    if client is not None:
        merged = client.compute(level[0]).result()
    else:
        (merged,) = dask.compute(level[0])
    if not finalize:
        return merged
    result = mechanism.finalize(merged)
    message = sanitization_warning(result)
    if message is not None:
        warnings.warn(message, SanitizationWarning, stacklevel=2)
    return result
