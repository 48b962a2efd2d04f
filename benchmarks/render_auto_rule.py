"""How ``render: auto``'s rule decides on pages that did not shape it.

The rule (``control_plane/fetcher/render_need.py``) was written looking at the sample site's
script-drawn shops of seeds 7 and 11 only. Here it judges, page by page, what it was not written on:

- **sample site, other seeds** (``--seeds``; default 21 22 23): each site's script-drawn shop
  (host 0: every product page needs rendering), its plain shop (host 3), news host (host 1) and
  mixed host (host 2), whose pages need none;
- **real pages**: the committed product pages and non-product pages of ``data/products.jsonl.xz``
  (snapshots of real shops, their prices in the HTML), served from 127.0.0.1; their scripts run,
  but every request to another host is refused, as the fetcher's SSRF guard would refuse anything
  it cannot reach. None should need rendering: each "render" there is a needless one (a cost).

Each page is fetched by the direct backend, rendered from that answer by the browser backend (the
pool's shipped limits, wait for load, at most ``--wait-s``), and both are compared by the rule.
A domain renders when any of its first 3 pages needs it, so per-page rates bound per-domain ones.

    .venv/bin/python benchmarks/render_auto_rule.py [--seeds 21 22 23] [--real 136] [--json]
"""

from __future__ import annotations

import argparse
import asyncio
import json
import socket
import time
from collections import Counter
from collections.abc import Iterator
from typing import Any

from aiohttp import web
from extract_pages import DATA, pages_file

from dualplane.control_plane.fetcher.backends.base import FetchRequest
from dualplane.control_plane.fetcher.backends.browser import BrowserBackend, RenderOptions
from dualplane.control_plane.fetcher.backends.browser_pool import BrowserPool, PoolLimits
from dualplane.control_plane.fetcher.backends.direct import DirectBackend
from dualplane.control_plane.fetcher.exceptions import FetchFailed
from dualplane.control_plane.fetcher.render_need import render_need, shown
from dualplane.core.web.ssrf import SsrfGuard
from dualplane.sample_site import SampleSite, SiteSpec

CHROMIUM = "/usr/bin/chromium"


def sample_pages(spec: SiteSpec, site: SampleSite) -> Iterator[tuple[str, str, bool]]:
    """(set, URL, needs rendering) of every product and article page of the site."""
    truth = site.truth()
    for product in truth.products:
        host = next(i for i in range(spec.hosts) if product.url.startswith(site.spec.origin(i) + "/"))
        kind = "script shop" if host in spec.js_hosts else f"{spec.kind(host)} host"
        yield f"sample {kind}", product.url, host in spec.js_hosts
    for article in truth.articles:
        yield "sample articles", article.url, False


async def judge(backend: BrowserBackend, url: str, wait_s: float) -> str | None:
    request = FetchRequest(url, "dualplane-bench", 5, 10, 2**23, total_timeout_s=wait_s * 4 + 20)
    started = time.perf_counter()
    direct = await backend.direct.fetch(request)
    rendered = await backend.render(request, direct, started)
    text = direct.body.decode(direct.charset or "utf-8", errors="replace")
    return render_need(shown(text), shown(rendered.body.decode("utf-8", errors="replace")))


async def run(seeds: list[int], real: int, wait_s: float) -> dict[str, Any]:
    counts: dict[str, Counter[str]] = {}
    renders: list[dict[str, str]] = []
    app = web.Application()
    pages: dict[str, dict[str, Any]] = {}
    for page in list(pages_file(DATA / "products.jsonl.xz"))[:real]:
        pages[str(len(pages))] = page

    async def serve(request: web.Request) -> web.Response:
        page = pages.get(request.match_info["n"])  # a page's relative subresources are not here
        return web.Response(text=page["html"], content_type="text/html") if page else web.Response(status=404)

    app.router.add_get("/page/{n}", serve)
    runner = web.AppRunner(app)
    await runner.setup()
    port = _free_port()
    await web.TCPSite(runner, "127.0.0.1", port).start()
    options = RenderOptions(wait="load", wait_s=wait_s)
    backend = BrowserBackend(
        DirectBackend(SsrfGuard(["127.0.0.1"])), BrowserPool(CHROMIUM, PoolLimits()), options
    )
    try:
        jobs: list[tuple[str, str, bool]] = []
        sites = []
        for seed in seeds:
            spec = SiteSpec(seed=seed, hosts=4, pages_per_host=8, latency_ms=0, js_hosts=(0,))
            site = SampleSite(spec).start()
            sites.append(site)
            jobs += list(sample_pages(spec, site))
        jobs += [("real pages", f"http://127.0.0.1:{port}/page/{n}", False) for n in pages]
        for kind, url, needed in jobs:
            tally = counts.setdefault(kind, Counter())
            try:
                need = await judge(backend, url, wait_s)
            except FetchFailed as error:  # counted, and named: a page the rule could not judge
                tally["failed"] += 1
                renders.append({"set": kind, "page": url, "why": f"failed: {error}"})
                continue
            tally["pages"] += 1
            tally["needs rendering"] += needed
            tally["rule renders"] += need is not None
            tally["agree"] += (need is not None) == needed
            if need is not None and not needed:
                source = pages[url.rsplit("/", 1)[1]]["id"] if kind == "real pages" else url
                renders.append({"set": kind, "page": source, "why": need})
        for site in sites:
            site.stop()
    finally:
        await backend.aclose()
        await runner.cleanup()
    return {"sets": {kind: dict(tally) for kind, tally in counts.items()}, "needless_renders": renders}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="*", default=[21, 22, 23])
    parser.add_argument("--real", type=int, default=136, help="real pages of products.jsonl.xz to judge")
    parser.add_argument("--wait-s", type=float, default=5.0)
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    report = asyncio.run(run(args.seeds, args.real, args.wait_s))
    if args.json:
        print(json.dumps(report, indent=2))
        return
    print(f"{'set':<22} {'pages':>6} {'need it':>8} {'rule renders':>13} {'agree':>6}")
    for kind, tally in report["sets"].items():
        print(
            f"{kind:<22} {tally['pages']:>6} {tally['needs rendering']:>8} {tally['rule renders']:>13} "
            f"{tally['agree']:>6}"
        )
    for render in report["needless_renders"]:
        print(f"needless render: {render['set']} {render['page']}: {render['why']}")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


if __name__ == "__main__":
    main()
