"""The collector's dashboard (``GET /`` of ``fastldp serve``) in a real browser.

Chromium (Debian's ``/usr/bin/chromium``, or ``$FASTLDP_CHROMIUM``, or the
browser Playwright installed) driven by Playwright loads the page served by a
collector started with :func:`fastldp.service.testing.running_server`, waits
for the chart, and checks that the numbers shown are those of
``GET /v1/estimate`` exactly: every number on the page carries a
``data-testid`` and, in ``data-value``, JavaScript's shortest round-trip
decimal of the JSON double, so ``float(data-value)`` must be the very double
the server sent. Then more reports are sent and the page must show the new
count and the new estimate without a reload. A screenshot is saved under
``tmp_path`` and copied to ``$FASTLDP_ARTIFACTS`` when that is set.

The oracle test's screenshot is README's picture (``docs/figures/dashboard.png``):
before it, a few more batches arrive in waves a moment apart, so that the
ingest-rate chart has a history. To regenerate it::

    FASTLDP_ARTIFACTS=/tmp/shots python -m pytest -q tests/test_service_dashboard.py
    cp /tmp/shots/dashboard.png docs/figures/dashboard.png

The browser test skips, with the reason, when Playwright or a Chromium is
missing, unless ``FASTLDP_REQUIRE_BROWSER=1`` (CI sets it in ``.ci/run``),
where a missing piece fails it.
"""

from __future__ import annotations

import importlib
import os
import shutil
import time
from pathlib import Path

import numpy as np
import pytest

TOP_K = 20  # app.js: the items (cells) listed for an oracle (a matrix)
WAVES, WAVE_PAUSE = 4, 0.7  # README's picture: batches a moment apart (about 3 s in all)
WAIT_MS = 20_000  # the page polls every second; a loaded CI machine gets time


def _missing(what: str) -> None:
    message = f"the dashboard's browser test needs {what}"
    if os.environ.get("FASTLDP_REQUIRE_BROWSER") == "1":
        pytest.fail(message + " (FASTLDP_REQUIRE_BROWSER=1)")
    pytest.skip(message)


def _import(module: str, extra: str):
    try:
        return importlib.import_module(module)
    except ImportError:
        _missing(f"{module} (pip install {extra!r})")


def _chromium_path(playwright) -> str:
    """Debian's chromium (or $FASTLDP_CHROMIUM), else the browser Playwright installed."""
    for candidate in (os.environ.get("FASTLDP_CHROMIUM"), shutil.which("chromium"),
                      shutil.which("chromium-browser"), shutil.which("google-chrome")):
        if candidate and os.path.exists(candidate):
            return candidate
    try:
        bundled = playwright.chromium.executable_path
    except Exception:  # noqa: BLE001 - no bundled browser registered
        bundled = None
    if bundled and os.path.exists(bundled):
        return bundled
    _missing("a Chromium (apt-get install chromium, or set FASTLDP_CHROMIUM)")
    raise AssertionError("unreachable")


@pytest.fixture(scope="module")
def browser():
    for module in ("starlette", "uvicorn", "httpx", "pyarrow"):
        _import(module, "fastldp[serve]")
    sync_api = _import("playwright.sync_api", "playwright")
    with sync_api.sync_playwright() as p:
        executable = _chromium_path(p)
        try:
            # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
            b = p.chromium.launch(executable_path=executable, args=["--no-sandbox"])
        except Exception as exc:  # noqa: BLE001 - a browser that does not start
            _missing(f"a Chromium that starts headless ({executable}: {exc})")
        yield b
        b.close()


@pytest.fixture
def page(browser):
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    pg.errors = []
    pg.requests = []
    pg.on("pageerror", lambda exc: pg.errors.append(str(exc)))
    # a resource that failed to load is logged as an error too; the page retries those
    pg.on("console", lambda msg: pg.errors.append(msg.text) if msg.type == "error"
          and not msg.text.startswith("Failed to load resource") else None)
    pg.on("request", lambda req: pg.requests.append(req.url))
    yield pg
    context.close()


# ---------------------------------------------------------------------- helpers
def _top(values: list, k: int) -> list[int]:
    """The page's choice, written independently: the k largest finite values,
    largest first, ties broken by the smaller index."""
    finite = [(v, i) for i, v in enumerate(values) if v is not None]
    finite.sort(key=lambda vi: (-vi[0], vi[1]))
    return [i for _, i in finite[:k]]


def _wait_for(page, stats: dict) -> None:
    """Until the page shows the estimate of every report in ``stats``, the count, the
    sanitized count (a /v1/stats poll can fall between an ack and its decode: the
    next poll has it), and a drawn chart."""
    page.wait_for_function(
        """([n, sanitized]) => {
            const q = (id) => document.querySelector(`[data-testid="${id}"]`);
            const chart = q("estimate-chart");
            return q("estimate-n")?.dataset.value === String(n)
                && q("report-count")?.dataset.value === String(n)
                && q("sanitized-count")?.dataset.value === String(sanitized)
                && chart && Number(chart.dataset.bars) > 0;
        }""", arg=[stats["reports"], stats["sanitized"]], timeout=WAIT_MS)


def _rows(page) -> list[dict]:
    return page.eval_on_selector_all(
        '[data-testid^="estimate-row-"]',
        "rows => rows.map(r => ({testid: r.dataset.testid, index: Number(r.dataset.index),"
        " value: r.dataset.value, std: r.dataset.std}))")


def _value(page, testid: str) -> str:
    return page.get_attribute(f'[data-testid="{testid}"]', "data-value")


def _as_float(text: str):
    return None if text == "nan" else float(text)


def _check_rows(page, est: dict, expected: list[int], with_std: bool) -> list[str]:
    rows = _rows(page)
    assert [r["testid"] for r in rows] == [f"estimate-row-{r}" for r in range(len(expected))]
    assert [r["index"] for r in rows] == expected
    for r in rows:
        # exact: the page's text of the double parses back to the same double
        assert _as_float(r["value"]) == est["estimate"][r["index"]], r
        if with_std:
            assert _as_float(r["std"]) == est["std"][r["index"]], r
    return [r["value"] for r in rows]


def _check_common(page, est: dict, stats: dict) -> None:
    assert _value(page, "report-count") == str(stats["reports"])
    assert _value(page, "batch-count") == str(stats["batches"])
    assert _value(page, "sanitized-count") == str(stats["sanitized"])
    assert _value(page, "refused-count") == str(sum(stats["refused"].values()))
    # the mechanism panel is filled from /v1/mechanism on its own fetch: wait for it, then
    # compare exactly (a fixed read raced that fetch in one CI run)
    page.wait_for_function(
        "t => (document.querySelector('[data-testid=\"privacy\"]') || {}).textContent === t",
        arg=est["privacy"], timeout=15_000)
    assert page.text_content('[data-testid="privacy"]') == est["privacy"]
    san = est["sanitization"]
    for key in ("n_received", "n_valid", "n_sanitized"):
        assert _value(page, f"sanitization-{key}") == str(san[key])
    for reason, count in san["by_reason"].items():
        assert _value(page, f"sanitization-reason-{reason}") == str(count)
    assert int(page.get_attribute('[data-testid="history-chart"]', "data-points")) >= 1
    assert page.get_attribute('[data-testid="status"]', "data-state") == "live"
    assert _value(page, "estimate-pending") == str(est.get("pending", 0))


def _screenshot(page, tmp_path: Path, name: str) -> Path:
    path = tmp_path / name
    page.screenshot(path=str(path), full_page=True)
    data = path.read_bytes()
    assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 10_000
    artifacts = os.environ.get("FASTLDP_ARTIFACTS")
    if artifacts:
        Path(artifacts).mkdir(parents=True, exist_ok=True)
        shutil.copy(path, Path(artifacts) / name)
    return path


def _only_local(page, url: str) -> None:
    # every asset comes from the collector itself: no CDN at run time
    assert page.requests and all(u.startswith(url + "/") for u in page.requests), page.requests
    assert not page.errors, page.errors


# ---------------------------------------------------------------------- tests
STATIC = Path(__file__).resolve().parents[1] / "src" / "fastldp" / "service" / "static"


def test_missing_browser_skips_unless_required(monkeypatch):
    monkeypatch.delenv("FASTLDP_REQUIRE_BROWSER", raising=False)
    with pytest.raises(pytest.skip.Exception, match="needs a Chromium"):
        _missing("a Chromium")
    monkeypatch.setenv("FASTLDP_REQUIRE_BROWSER", "1")
    with pytest.raises(pytest.fail.Exception, match="FASTLDP_REQUIRE_BROWSER=1"):
        _missing("a Chromium")


def test_page_assets_are_local_and_shipped():
    """No asset from elsewhere (no CDN): every src/href of the page is a path on the
    collector, each /static/ one a file of the package (runs without a browser)."""
    import re

    import importlib.util

    # the imported package's folder (this tree's STATIC when run from a source tree);
    # found without importing fastldp.service, so this runs without the serve extra
    spec = importlib.util.find_spec("fastldp.service")
    static = Path(list(spec.submodule_search_locations)[0]) / "static"
    page = (static / "index.html").read_text()
    links = re.findall(r'(?:src|href)="([^"]*)"', page)
    assert "/static/app.js" in links and "/static/style.css" in links
    for link in links:
        assert link.startswith("/") and not link.startswith("//"), link
        if link.startswith("/static/"):
            assert (static / link[len("/static/"):]).is_file(), link
    for name in ("app.js", "style.css"):
        text = (static / name).read_text()
        assert not re.search(r"https?://(?!www\.w3\.org/2000/svg)", text), name
        assert "@import" not in text and "url(http" not in text, name
    # pyproject.toml's package-data ships static/*.html, *.js, *.css (MANIFEST.in too)
    for folder in {static, STATIC}:
        if folder.is_dir():
            assert all(p.suffix in (".html", ".js", ".css") for p in folder.iterdir()), folder


def test_oracle_dashboard_shows_the_estimate_exactly_and_follows_new_reports(page, tmp_path):
    from fastldp.service import Client
    from fastldp.service.testing import running_server

    rng = np.random.default_rng(20261201)
    with running_server(tmp_path, mechanism="olh-4096", publish_every=1) as srv, Client(srv.url, srv.token) as client:
        page.goto(srv.url + "/")  # before any report: nothing drawn, the page waits
        page.wait_for_function("document.querySelector('[data-testid=\"estimate-n\"]')"
                               "?.dataset.value === '0'", timeout=WAIT_MS)
        assert page.text_content("#estimate-caption") == "waiting for the first report"
        assert page.get_attribute('[data-testid="estimate-chart"]', "data-bars") == "0"
        assert _rows(page) == []

        client.send(rng.zipf(1.3, 2000) % 4096, identities=np.arange(2000), rng=1)
        est, stats = client.estimate(), client.stats()
        assert est["n"] == 2000 and stats["reports"] == 2000
        _wait_for(page, stats)
        first = _check_rows(page, est, _top(est["estimate"], TOP_K), with_std=True)
        _check_common(page, est, stats)
        # the chart: one bar and one error bar per listed item, in the table's order
        assert page.get_attribute('[data-testid="estimate-chart"]', "data-bars") == str(TOP_K)
        bars = page.eval_on_selector_all('[data-testid="estimate-chart"] g[data-index]',
                                         "gs => gs.map(g => Number(g.dataset.index))")
        assert bars == _top(est["estimate"], TOP_K)
        assert page.locator('[data-testid="estimate-chart"] rect.bar').count() == TOP_K
        assert page.locator('[data-testid="estimate-chart"] path.errorbar').count() == TOP_K
        assert page.get_attribute('[data-testid="mechanism-name"]', "data-testid")
        assert page.text_content('[data-testid="mechanism-name"]') == "OLH"
        assert _value(page, "param-domain_size") == "4096"
        assert _value(page, "param-epsilon") == "1"
        assert _value(page, "param-codebook_seed") == "20261130"

        # more reports: the page follows without a reload
        client.send(rng.zipf(1.3, 1500) % 4096, identities=np.arange(2000, 3500), rng=2)
        est2, stats2 = client.estimate(), client.stats()
        assert est2["n"] == 3500 and est2["estimate"] != est["estimate"]
        _wait_for(page, stats2)
        second = _check_rows(page, est2, _top(est2["estimate"], TOP_K), with_std=True)
        _check_common(page, est2, stats2)
        assert second != first

        # README's picture: a few more batches in waves, so the ingest-rate chart has a
        # history; the page must again show exactly what the API says
        sent = 3500
        for wave in range(WAVES):
            time.sleep(WAVE_PAUSE)
            client.send(rng.zipf(1.3, 1000) % 4096, identities=np.arange(sent, sent + 1000),
                        rng=10 + wave)
            sent += 1000
        est3, stats3 = client.estimate(), client.stats()
        assert est3["n"] == stats3["reports"] == sent
        _wait_for(page, stats3)
        _check_rows(page, est3, _top(est3["estimate"], TOP_K), with_std=True)
        _check_common(page, est3, stats3)
        # the ingest history spans the waves: more than one point (the collector keeps one
        # per second of ingest)
        assert int(page.get_attribute('[data-testid="history-chart"]', "data-points")) > 1
        _screenshot(page, tmp_path, "dashboard.png")  # FASTLDP_ARTIFACTS: README's picture
        _only_local(page, srv.url)


def test_jprs_dashboard_draws_the_matrix_heat_map_exactly(page, tmp_path):
    from fastldp import mechanisms
    from fastldp.service import Client
    from fastldp.service.testing import running_server

    mech = mechanisms.from_spec(mechanisms.read_spec("jprs-4096"))
    rng = np.random.default_rng(7)
    n = 600
    reports = mech.privatize(mech.example_data(n, rng), identities=np.arange(n),
                             epsilons=np.ones(n), rng=3)
    with running_server(tmp_path, mechanism="jprs-4096", publish_every=1) as srv, Client(srv.url, srv.token) as client:
        page.goto(srv.url + "/")
        client.send(reports, identities=np.arange(n), epsilons=np.ones(n), privatize=False)
        est, stats = client.estimate(), client.stats()
        rows, cols = est["shape"]
        assert est["n"] == n and (rows, cols) == (64, 64)
        _wait_for(page, stats)
        cells = page.eval_on_selector_all('[data-testid="estimate-chart"] g.cells rect',
                                          "rs => rs.map(r => [Number(r.dataset.index), r.dataset.value])")
        assert [c[0] for c in cells] == list(range(rows * cols))
        assert [_as_float(c[1]) for c in cells] == est["estimate"]
        # the colour scale is the largest |value|
        finite = [abs(v) for v in est["estimate"] if v is not None]
        assert _as_float(page.get_attribute('[data-testid="estimate-chart"]', "data-scale")) == max(finite)
        _check_rows(page, est, _top(est["estimate"], TOP_K), with_std=False)
        _check_common(page, est, stats)
        _screenshot(page, tmp_path, "dashboard_jprs.png")
        _only_local(page, srv.url)


def test_rpc_dashboard_draws_the_mean_vector_and_counts_sanitized_reports(page, tmp_path):
    from fastldp.reports import mechanism_spec
    from fastldp.service import Client
    from fastldp.service.testing import running_server
    from fastldp.vectors.rpc import RPC

    d, n, bad = 16, 800, 7
    mech = RPC(d=d, m=2, epsilon=1.0, codebook_seed=5)
    rng = np.random.default_rng(11)
    x = np.zeros((n, d), dtype=np.int64)
    for row in x:
        row[rng.choice(d, 2, replace=False)] = rng.choice([-1, 1], 2)
    reports = mech.privatize(x, identities=np.arange(n), rng=4)
    reports[:bad] = 123.0  # off the Duchi alphabet: the decoder sanitizes these
    with running_server(tmp_path, mechanism=mechanism_spec(mech), publish_every=1) as srv, \
            Client(srv.url, srv.token) as client:
        client.send(reports, identities=np.arange(n), privatize=False)
        est, stats = client.estimate(), client.stats()
        assert est["kind"] == "vector" and est["shape"] == [d]
        assert est["sanitization"]["n_sanitized"] == bad == stats["sanitized"]
        page.goto(srv.url + "/")
        _wait_for(page, stats)
        assert page.get_attribute('[data-testid="estimate-chart"]', "data-bars") == str(d)
        bars = page.eval_on_selector_all('[data-testid="estimate-chart"] g[data-index]',
                                         "gs => gs.map(g => [Number(g.dataset.index), g.dataset.value])")
        assert [b[0] for b in bars] == list(range(d))
        assert [_as_float(b[1]) for b in bars] == est["estimate"]
        _check_rows(page, est, list(range(d)), with_std=True)  # every coordinate, in order
        _check_common(page, est, stats)
        assert _value(page, "sanitized-count") == str(bad)
        assert _value(page, "param-d") == "16" and _value(page, "param-m") == "2"
        _screenshot(page, tmp_path, "dashboard_rpc.png")
        _only_local(page, srv.url)


def test_labelled_oracle_shows_its_categories_and_every_item_when_fewer_than_top_k(page, tmp_path):
    from fastldp import oracles
    from fastldp.reports import mechanism_spec
    from fastldp.service import Client
    from fastldp.service.testing import running_server

    labels = ["apple", "pear", "fig", "kiwi", "plum"]  # D = 5 < TOP_K: every item is listed
    mech = oracles.GRR(epsilon=2.0, categories=labels, codebook_seed=9)
    rng = np.random.default_rng(3)
    with running_server(tmp_path, mechanism=mechanism_spec(mech), publish_every=1) as srv, \
            Client(srv.url, srv.token) as client:
        client.send(rng.choice(labels, 500, p=[0.4, 0.3, 0.15, 0.1, 0.05]),
                    identities=np.arange(500), rng=5)
        est, stats = client.estimate(), client.stats()
        assert est["labels"] == labels
        page.goto(srv.url + "/")
        _wait_for(page, stats)
        order = _top(est["estimate"], TOP_K)
        assert sorted(order) == list(range(len(labels)))
        _check_rows(page, est, order, with_std=True)
        shown = page.eval_on_selector_all('[data-testid^="estimate-row-"]',
                                          "rows => rows.map(r => r.dataset.label)")
        assert shown == [labels[i] for i in order]
        _check_common(page, est, stats)
        _only_local(page, srv.url)


# the geometry of every element of a panel against the panel's box (border box: a child
# may reach the padding, not past the border), and of every element of a chart against
# its <svg> (which clips it: a label past the svg's edge is cut), the elements that stick
# out listed
OVERFLOW_JS = """(selector) => {
    const out = [];
    for (const panel of document.querySelectorAll(selector)) {
        const panelBox = panel.getBoundingClientRect();
        const id = panel.getAttribute("aria-labelledby");
        if (panel.scrollWidth > panel.clientWidth) {
            out.push({panel: id, what: "scrollWidth", right: panel.scrollWidth, edge: panel.clientWidth});
        }
        for (const node of panel.querySelectorAll("*")) {
            const r = node.getBoundingClientRect();
            if (r.width === 0 && r.height === 0) continue;  // not rendered (title, defs)
            const box = node.ownerSVGElement ? node.ownerSVGElement.getBoundingClientRect() : panelBox;
            if (r.right > box.right + 0.5 || r.left < box.left - 0.5) {
                out.push({panel: id, what: node.tagName + " " + (node.dataset?.testid || node.id || ""),
                          text: (node.textContent || "").slice(0, 60),
                          left: r.left, right: r.right, box: [box.left, box.right]});
            }
        }
    }
    return out;
}"""


def test_long_labels_stay_inside_their_panels_at_1280_px(browser, tmp_path):
    """64 labels of 40 characters (no space to break at) on a 1,280 x 800 page: no
    element of the estimate panel, nor of the mechanism panel that lists the
    categories, reaches past its panel, the page does not scroll sideways, a label
    cut short carries the whole label in its title, and the numbers are still
    /v1/estimate's exactly (issue 37, 6)."""
    from fastldp import oracles
    from fastldp.reports import mechanism_spec
    from fastldp.service import Client
    from fastldp.service.testing import running_server

    labels = [f"category_{i:02d}_" + "abcdefghijklmnopqrstuvwxyz0123456789"[:28] for i in range(64)]
    assert all(len(name) == 40 for name in labels) and len(set(labels)) == 64
    mech = oracles.OLH(epsilon=2.0, categories=labels, codebook_seed=17)
    spec = mechanism_spec(mech)
    assert spec["params"]["categories"] == labels
    rng = np.random.default_rng(37)
    weights = 1.0 / np.arange(1, 65)
    context = browser.new_context(viewport={"width": 1280, "height": 800})
    page = context.new_page()
    errors: list = []
    page.on("pageerror", lambda exc: errors.append(str(exc)))
    try:
        with running_server(tmp_path, mechanism=spec, publish_every=1) as srv, \
                Client(srv.url, srv.token) as client:
            client.send(rng.choice(labels, 3000, p=weights / weights.sum()),
                        identities=np.arange(3000), rng=6)
            est, stats = client.estimate(), client.stats()
            assert est["labels"] == labels and est["n"] == 3000
            page.goto(srv.url + "/")
            _wait_for(page, stats)
            order = _top(est["estimate"], TOP_K)
            _check_rows(page, est, order, with_std=True)
            _check_common(page, est, stats)
            assert page.get_attribute('[data-testid="estimate-chart"]', "data-bars") == str(TOP_K)
            assert page.eval_on_selector_all('[data-testid^="estimate-row-"]',
                                             "rows => rows.map(r => r.dataset.label)") \
                == [labels[i] for i in order]
            # the categories in the mechanism panel: wait for /v1/mechanism's fetch
            page.wait_for_selector('[data-testid="param-categories"]', timeout=WAIT_MS)

            overflow = page.evaluate(OVERFLOW_JS, 'section.panel[aria-labelledby="estimate-title"], '
                                                  'section.panel[aria-labelledby="mechanism-title"]')
            assert overflow == [], overflow
            assert page.evaluate("document.documentElement.scrollWidth") <= 1280
            # a label shown cut short keeps the whole label in its title (tooltip)
            cut = page.eval_on_selector_all(
                '[data-testid="estimate-chart"] g[data-index]',
                "gs => gs.map(g => [Number(g.dataset.index), g.querySelector('text.label').textContent,"
                " g.querySelector('title').textContent])")
            assert [c[0] for c in cut] == order
            for index, shown, title in cut:
                assert shown == labels[index] or (shown.endswith("\u2026")
                                                  and labels[index].startswith(shown[:-1])), shown
                assert title.startswith(labels[index] + ": "), title
            cells = page.eval_on_selector_all(
                '[data-testid^="estimate-row-"] td.item',
                "tds => tds.map(td => [td.textContent, td.getAttribute('title')])")
            assert len(cells) == TOP_K
            for (shown, title), index in zip(cells, order):
                assert title == labels[index]
                assert shown == labels[index] or (shown.endswith("\u2026")
                                                  and labels[index].startswith(shown[:-1])), shown
            _screenshot(page, tmp_path, "dashboard_long_labels.png")
            assert not errors, errors
    finally:
        context.close()
