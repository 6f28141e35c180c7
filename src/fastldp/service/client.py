"""A client of ``fastldp serve``: privatize locally, send in batches, retry exactly once."""

from __future__ import annotations

import io
import json
import os
import time
import uuid
from typing import Any, Optional

import numpy as np

__all__ = ["Client", "ServiceError"]

ARROW_TYPE = "application/vnd.apache.arrow.stream"


class ServiceError(OSError):
    """The collector refused a request (4xx), or kept failing after every retry.

    An ``OSError``: a failed exchange with another machine (the command line
    reports it in one line, exit status 2).

    Attributes
    ----------
    status : int or None
        The HTTP status (``None`` when no answer came).
    body : dict
        The JSON error body: ``{"error": reason, "detail": text, ...}``.
    """

    def __init__(self, status: Optional[int], body: dict) -> None:
        self.status, self.body = status, body
        super().__init__(f"HTTP {status}: {body.get('error')}: {body.get('detail')}")


def tls_context(verify: Any) -> Any:
    """httpx's ``verify``: ``True``/``False``, or an SSL context trusting a CA file's certificates."""
    if isinstance(verify, (str, os.PathLike)):
        import ssl

        return ssl.create_default_context(cafile=os.fspath(verify))
    return verify


def arrow_batch(identities: np.ndarray, reports: np.ndarray,
                epsilons: Optional[np.ndarray] = None) -> bytes:
    """An Arrow IPC stream with the columns ``identity``, ``epsilon`` (if given), ``report``."""
    import pyarrow as pa

    reports = np.ascontiguousarray(reports)
    if reports.ndim == 2:
        col = pa.FixedSizeListArray.from_arrays(pa.array(reports.ravel()), reports.shape[1])
    else:
        col = pa.array(reports)
    arrays = [pa.array(np.asarray(identities, dtype=np.uint64))]
    names = ["identity"]
    if epsilons is not None:
        arrays.append(pa.array(np.asarray(epsilons, dtype=np.float64)))
        names.append("epsilon")
    arrays.append(col)
    names.append("report")
    table = pa.Table.from_arrays(arrays, names=names)
    sink = io.BytesIO()
    with pa.ipc.new_stream(sink, table.schema) as writer:
        writer.write_table(table)
    return sink.getvalue()


class Client:
    """Send privatized reports to a collector.

    Parameters
    ----------
    url : str
        The collector's base URL, ``http(s)://host:port``.
    token : str
        The bearer token (the tokens file holds its SHA-256).
    retries : int
        Attempts after the first on a connection error, a 5xx or a 429,
        waiting ``backoff * 2**attempt`` seconds (at most ``max_backoff``;
        a 429's ``Retry-After`` when longer). Every attempt of a batch sends
        the same idempotency key, so a batch whose answer was lost is
        counted once.
    timeout : float
        Seconds per request.
    verify : bool or str
        TLS verification: ``True``, ``False`` or a CA bundle path (a
        self-signed certificate's PEM file).
    format : {"arrow", "json"}
        The wire format of batches.

    Examples
    --------
    >>> from fastldp.service import Client
    >>> client = Client("http://127.0.0.1:8000", "my-token")
    >>> client.url
    'http://127.0.0.1:8000'

    With a collector running (``fastldp serve``)::

        mech = client.mechanism()             # the server's mechanism, same codebook seed
        client.send(values, identities=ids)   # privatized here, sent in batches of 1,000
        client.estimate()["estimate"]
    """

    def __init__(self, url: str, token: str, *, retries: int = 10, backoff: float = 0.05,
                 max_backoff: float = 2.0, timeout: float = 30.0, verify: Any = True,
                 format: str = "arrow") -> None:
        import httpx

        if format not in ("arrow", "json"):
            raise ValueError(f"The 'format' parameter of Client must be 'arrow' or 'json'. "
                             f"Got {format!r} instead.")
        self.url = url.rstrip("/")
        self.retries, self.backoff, self.max_backoff = int(retries), backoff, max_backoff
        self.format = format
        self._http = httpx.Client(base_url=self.url, timeout=timeout, verify=tls_context(verify),
                                  headers={"Authorization": f"Bearer {token}"})
        self._mechanism = None

    def close(self) -> None:
        self._http.close()

    def __enter__(self) -> "Client":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # ------------------------------------------------------------------ requests
    def _request(self, method: str, path: str, **kwargs):
        import httpx

        attempt = 0
        while True:
            try:
                answer = self._http.request(method, path, **kwargs)
            except httpx.TransportError as exc:
                if attempt >= self.retries:
                    raise ServiceError(None, {"error": "unreachable", "detail": str(exc)}) from exc
                wait = min(self.backoff * 2 ** attempt, self.max_backoff)
            else:
                if answer.status_code < 500 and answer.status_code != 429:
                    return answer
                if attempt >= self.retries:
                    return answer
                wait = min(self.backoff * 2 ** attempt, self.max_backoff)
                if answer.status_code == 429:  # the server says how long
                    wait = max(wait, float(answer.headers.get("retry-after", 0) or 0))
            time.sleep(wait)
            attempt += 1

    def _json(self, path: str) -> dict:
        answer = self._request("GET", path)
        if answer.status_code != 200:
            raise ServiceError(answer.status_code, _body(answer))
        return answer.json()

    def mechanism(self) -> Any:
        """The mechanism the server collects for, rebuilt from its public spec."""
        if self._mechanism is None:
            from ..mechanisms import from_spec

            self._mechanism = from_spec(self._json("/v1/mechanism")["spec"])
        return self._mechanism

    def estimate(self, *, wait: bool = True) -> dict:
        """``GET /v1/estimate``: the published estimate.

        With ``wait=True`` the server first decodes every batch it
        acknowledged before the request (``?wait=1``) and publishes what
        its publication policy lets it (``--publish-every``), so the
        estimate holds all of them unless fewer than ``publish_every``
        reports came since the last publication (``"unpublished"`` counts
        those); otherwise it answers at once and ``"pending"`` counts the
        acknowledged reports not in it yet.
        """
        if not wait:
            return self._json("/v1/estimate")
        acknowledged = self._json("/v1/stats")["reports"]
        while True:  # the server waits at most 60 s per request
            answer = self._json("/v1/estimate?wait=1")
            # decoded = published + held back by the policy (a server without one: n)
            if answer["n"] + answer.get("unpublished", 0) >= acknowledged:
                return answer

    def stats(self) -> dict:
        """``GET /v1/stats``."""
        return self._json("/v1/stats")

    def send_batch(self, identities: Any, reports: Any, epsilons: Any = None, *,
                   key: Optional[str] = None) -> dict:
        """Send one batch of reports (already privatized); returns the server's answer.

        Raises :class:`ServiceError` on a refusal (4xx: 409 names the
        identities already seen) or when every retry failed.
        """
        key = key or uuid.uuid4().hex
        ids = np.asarray(identities, dtype=np.uint64)
        reps = np.asarray(reports)
        eps = None if epsilons is None else np.broadcast_to(
            np.asarray(epsilons, dtype=np.float64), ids.shape)
        if self.format == "arrow":
            content = arrow_batch(ids, reps, eps)
            headers = {"Content-Type": ARROW_TYPE, "Idempotency-Key": key}
        else:
            obj = {"idempotency_key": key, "identities": ids.tolist(), "reports": reps.tolist()}
            if eps is not None:
                obj["epsilons"] = eps.tolist()
            content = json.dumps(obj).encode()
            headers = {"Content-Type": "application/json"}
        answer = self._request("POST", "/v1/reports", content=content, headers=headers)
        if answer.status_code not in (200, 201):
            raise ServiceError(answer.status_code, _body(answer))
        return answer.json()

    def send(self, data: Any, *, identities: Any, epsilons: Any = None, batch_size: int = 1000,
             privatize: bool = True, rng: Any = None) -> dict:
        """Privatize ``data`` with the server's mechanism (unless ``privatize=False``) and send it.

        Parameters
        ----------
        data : values, or reports when ``privatize=False``
            Values as the mechanism's ``privatize`` takes them.
        identities : array of int, shape (n,)
            The users' public identities (they key the codebook; each is
            accepted once).
        epsilons : float or array, optional
            Personal budgets (required by a mechanism without a fixed epsilon).
        batch_size : int
            Reports per request.
        rng : seed or Generator
            The clients' coins.

        Returns
        -------
        dict
            ``{"accepted": reports, "replayed": batches answered from a
            repeated key, "batches": requests}``.
        """
        if not isinstance(batch_size, (int, np.integer)) or batch_size < 1:
            raise ValueError(f"The 'batch_size' parameter of Client.send must be an int >= 1. "
                             f"Got {batch_size!r} instead.")
        ids = np.asarray(identities)
        eps = None if epsilons is None else np.broadcast_to(
            np.asarray(epsilons, dtype=np.float64), ids.shape)
        if privatize:
            mech = self.mechanism()
            kwargs = {} if eps is None else {"epsilons": eps}
            reports = np.asarray(mech.privatize(data, identities=ids, rng=rng, **kwargs))
        else:
            reports = np.asarray(data)
        if reports.shape[0] != ids.shape[0]:
            raise ValueError(f"Client.send: {reports.shape[0]} reports for {ids.shape[0]} "
                             "identities")
        done = {"accepted": 0, "replayed": 0, "batches": 0}
        for start in range(0, ids.shape[0], int(batch_size)):
            stop = start + int(batch_size)
            answer = self.send_batch(ids[start:stop], reports[start:stop],
                                     None if eps is None else eps[start:stop])
            done["batches"] += 1
            if answer.get("replayed"):
                done["replayed"] += 1
            done["accepted"] += int(answer.get("accepted", 0))
        return done


def _body(answer) -> dict:
    try:
        body = answer.json()
    except ValueError:
        body = {"error": "http", "detail": answer.text[:200]}
    return body if isinstance(body, dict) else {"error": "http", "detail": str(body)}


#: Failure messages ``simulate_clients`` keeps (the first ones; the count is exact).
_KEPT_ERRORS = 5


def _collector_budgets(epsilon: Any, fixed: Optional[float], url: str) -> Any:
    """The budgets to send: ``None`` for a fixed-epsilon collector, else a budget or a range.

    A budget given for a collector with a fixed epsilon must be that epsilon:
    the collector privatizes nothing, it only checks, so a different one
    would be silently ignored (or every batch refused).
    """
    from .. import mechanisms

    if fixed is None:
        return mechanisms._simulation_budgets((0.5, 2.0) if epsilon is None else epsilon)
    if epsilon is None:
        return None
    given = mechanisms._simulation_budgets(epsilon)
    if given != fixed:
        shown = " ".join(f"{v:g}" for v in given) if isinstance(given, tuple) else f"{given:g}"
        raise ValueError(f"The 'epsilon' parameter of simulate_clients (--epsilon of fastldp "
                         f"simulate) is {shown}, but the collector at {url} has the fixed "
                         f"epsilon {fixed:g}: omit it, or give {fixed:g}.")
    return None


def simulate_clients(url: str, token: str, n: int, *, epsilon: Any = None, seed: Any = 0,
                     batch_size: int = 1000, clients: int = 1, first_identity: int = 0,
                     progress: Any = None, **client_options: Any) -> dict:
    """Drive a collector with ``clients`` synthetic clients sending ``n`` reports in all.

    The population is :func:`fastldp.mechanisms.simulate`'s (Zipf symbols for
    oracles, sparse relation sets for JPRS), privatized here with the server's
    mechanism, identities ``first_identity ... first_identity + n - 1``; each
    client thread sends every ``clients``-th batch.

    Parameters
    ----------
    epsilon : float or (low, high), optional
        The budgets. The collector's ``/v1/mechanism`` says whether it has a
        fixed epsilon: then ``epsilon`` must be omitted or equal it (another
        value is a ``ValueError`` naming both); otherwise the default is
        personal budgets uniform in ``(0.5, 2.0)``.

    Returns
    -------
    dict
        ``accepted`` (reports), ``replayed`` and ``batches`` (requests
        answered), ``failed`` (batches that failed: refused, unreachable after
        every retry, or a failure in the client itself), ``failed_reports``
        (their reports), ``unsent`` (batches not tried once the collector
        was unreachable or refused the token) and ``errors`` (the first few
        failure messages). A failed batch does not stop the others and
        prints nothing; the caller reports the counts.
    """
    import threading

    from .. import mechanisms
    from .._random import as_generator

    for name, value, lo in (("n", n, 1), ("batch_size", batch_size, 1), ("clients", clients, 1),
                            ("first_identity", first_identity, 0)):
        if isinstance(value, bool) or not isinstance(value, (int, np.integer)) or value < lo:
            raise ValueError(f"The '{name}' parameter of simulate_clients must be an int >= "
                             f"{lo}. Got {value!r} instead.")
    if first_identity + n - 1 > 2**64 - 1:
        raise ValueError(f"The identities of simulate_clients, first_identity .. first_identity "
                         f"+ n - 1, must be below 2**64. Got first_identity {first_identity} and "
                         f"n {n} instead.")
    n, batch_size, clients = int(n), int(batch_size), int(clients)
    first_identity = int(first_identity)
    with Client(url, token, **client_options) as probe:
        info = probe._json("/v1/mechanism")
    mech = mechanisms.from_spec(info["spec"])
    if "personal_budgets" in info:
        fixed = None if info["personal_budgets"] else float(info["epsilon"])
    else:  # a collector older than the field: the spec says it
        fixed = mech.report_schema.fixed_epsilon
    budgets = _collector_budgets(epsilon, fixed, url)
    starts = list(range(0, n, batch_size))
    seeds = np.random.SeedSequence(as_generator(seed, "simulate_clients",
                                                purpose="simulate").integers(2**63)
                                   ).spawn(len(starts))
    totals = {"accepted": 0, "replayed": 0, "batches": 0, "failed": 0, "failed_reports": 0,
              "unsent": 0}
    errors: list = []
    lock = threading.Lock()
    stop = threading.Event()  # the collector is unreachable or refuses the token: stop trying

    def fail(m: int, exc: BaseException) -> None:
        with lock:
            totals["failed"] += 1
            totals["failed_reports"] += m
            if len(errors) < _KEPT_ERRORS:
                errors.append(str(exc) if isinstance(exc, ServiceError)
                              else f"{type(exc).__name__}: {exc}")
        if isinstance(exc, ServiceError) and exc.status in (None, 401):
            stop.set()

    def one_batch(client: "Client", b: int) -> None:
        rng = np.random.default_rng(seeds[b])
        m = min(batch_size, n - starts[b])
        try:
            ids = np.arange(first_identity + starts[b], first_identity + starts[b] + m,
                            dtype=np.uint64)
            eps = None
            if isinstance(budgets, tuple):
                eps = rng.uniform(budgets[0], budgets[1], m)
            elif budgets is not None:
                eps = np.full(m, budgets)
            data = mech.example_data(m, rng)  # the mechanism's synthetic population
            done = client.send(data, identities=ids, epsilons=eps, batch_size=batch_size, rng=rng)
        except Exception as exc:  # counted and reported by the caller, never a thread traceback
            fail(m, exc)
            return
        with lock:
            for k in ("accepted", "replayed", "batches"):
                totals[k] += done[k]
            if progress is not None:
                progress(totals["accepted"], n)

    def work(worker: int) -> None:
        mine = range(worker, len(starts), clients)
        try:
            client = Client(url, token, **client_options)
        except Exception as exc:
            for b in mine:
                fail(min(batch_size, n - starts[b]), exc)
            return
        with client:
            client._mechanism = mech
            for i, b in enumerate(mine):
                if stop.is_set():
                    with lock:
                        totals["unsent"] += len(mine) - i
                    return
                one_batch(client, b)

    threads = [threading.Thread(target=work, args=(w,)) for w in range(min(clients, len(starts)))]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    totals["errors"] = errors
    return totals
