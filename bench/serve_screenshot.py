"""The README's dashboard screenshot: a collector, fed in waves, seen in Chromium.

Starts ``fastldp serve`` (the installed fastldp, through
:func:`fastldp.service.testing.running_server`) with a mechanism preset in a
scratch folder, feeds it synthetic clients (:func:`fastldp.service.client.simulate_clients`,
the ``fastldp simulate --send`` population) in ``--waves`` waves a moment
apart, so that the ingest-rate chart has a history, opens ``GET /`` in
headless Chromium through Playwright, waits until the page shows the estimate
of every report sent, and saves a full-page PNG.

    python bench/serve_screenshot.py                       # -> docs/figures/dashboard.png
    python bench/serve_screenshot.py --mechanism jprs-4096 --out /tmp/jprs.png

Needs ``pip install '.[serve]' playwright`` and a Chromium (Debian:
``apt-get install chromium``; or ``--chromium PATH``); Playwright's own browser
downloads are not used. Loopback only; about 30 s.
"""

from __future__ import annotations

import argparse
import os
import shutil
import tempfile
import time
from pathlib import Path


def main(argv=None) -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--mechanism", default="olh-4096", help="a preset or a spec (default olh-4096)")
    ap.add_argument("--reports", type=int, default=24_000, help="reports in all (default 24000)")
    ap.add_argument("--waves", type=int, default=12, help="feeding waves (default 12)")
    ap.add_argument("--pause", type=float, default=0.6, help="seconds between waves (default 0.6)")
    ap.add_argument("--out", default=str(Path(__file__).resolve().parents[1] / "docs" / "figures"
                                         / "dashboard.png"), help="the PNG to write")
    ap.add_argument("--chromium", default=os.environ.get("FASTLDP_CHROMIUM") or shutil.which("chromium"),
                    help="the Chromium executable (default: chromium on PATH)")
    ap.add_argument("--width", type=int, default=1280, help="viewport width in CSS pixels")
    args = ap.parse_args(argv)

    from playwright.sync_api import sync_playwright

    from fastldp.service.client import simulate_clients
    from fastldp.service.testing import running_server

    if not args.chromium:
        ap.error("no Chromium found: apt-get install chromium, or pass --chromium PATH")
    per_wave = -(-args.reports // args.waves)
    with tempfile.TemporaryDirectory() as tmp, running_server(tmp, mechanism=args.mechanism) as srv:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=args.chromium, args=["--no-sandbox"])
            page = browser.new_page(viewport={"width": args.width, "height": 900})
            page.goto(srv.url + "/")
            sent = 0
            for wave in range(args.waves):
                n = min(per_wave, args.reports - sent)
                if n <= 0:
                    break
                simulate_clients(srv.url, srv.token, n, seed=wave, batch_size=1000, clients=2,
                                 first_identity=sent)
                sent += n
                time.sleep(args.pause)
            page.wait_for_function(
                "n => document.querySelector('[data-testid=\"estimate-n\"]')?.dataset.value"
                " === String(n)", arg=sent, timeout=30_000)
            time.sleep(1.5)  # one more poll: the rate chart's last point
            out = Path(args.out)
            out.parent.mkdir(parents=True, exist_ok=True)
            page.screenshot(path=str(out), full_page=True)
            browser.close()
    print(f"wrote {out} ({out.stat().st_size} bytes): {args.mechanism}, {sent} reports "
          f"in {args.waves} waves")


if __name__ == "__main__":
    main()
