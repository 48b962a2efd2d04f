"""The sample site over real HTTP on loopback: pages, redirects, truth, anti-bot, stats, reachability."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import replace
from html.parser import HTMLParser
from urllib.parse import urldefrag, urljoin, urlsplit

import httpx
import pytest
from protego import Protego

from dualplane.sample_site import AntiBot, SampleSite, SiteSpec

pytestmark = pytest.mark.unit

SMALL = SiteSpec(seed=7, hosts=3, pages_per_host=30, latency_ms=0)


@pytest.fixture
def site() -> Iterator[SampleSite]:
    with SampleSite(SMALL) as running:
        yield running


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(timeout=5) as http:
        yield http


def _fetch_all(site: SampleSite, client: httpx.Client) -> dict[str, bytes]:
    truth = site.truth()
    paths = ["/", "/products?page=2", "/articles?page=1", "/robots.txt", "/sitemap.xml", "/careers", "/about"]
    urls = [url + path for url in site.urls for path in paths]
    urls += [product.url for product in truth.products[:10]] + [
        article.url for article in truth.articles[:10]
    ]
    return {url: client.get(url).content for url in urls}


def test_two_sites_with_the_same_seed_serve_byte_identical_pages(client: httpx.Client) -> None:
    with SampleSite(SMALL) as first:
        pages = _fetch_all(first, client)
        base_port = first.spec.base_port
    client.close()  # drop keep-alive connections to the first site
    with (
        httpx.Client(timeout=5) as fresh,
        SampleSite(replace(SMALL, base_port=base_port)) as again,
    ):
        assert _fetch_all(again, fresh) == pages
    with (
        httpx.Client(timeout=5) as fresh,
        SampleSite(SiteSpec(seed=8, pages_per_host=30, latency_ms=0)) as other,
    ):
        assert fresh.get(other.seeds[0]).content != pages[f"http://127.0.0.1:{base_port}/"]


def test_robots_redirects_and_not_found(site: SampleSite, client: httpx.Client) -> None:
    shop, news = site.urls[0], site.urls[1]

    robots = client.get(f"{shop}/robots.txt")
    assert robots.status_code == 200 and "Disallow: /private/" in robots.text
    chain = client.get(f"{shop}/old/shop", follow_redirects=True)
    assert [r.status_code for r in chain.history] == [301, 301]
    assert str(chain.url) == f"{shop}/products?page=1" and chain.status_code == 200
    moved = client.get(f"{news}/old/articles?page=2")
    assert moved.status_code == 301 and moved.headers["Location"] == "/articles?page=2"
    for path in ("/careers", "/product/discontinued-0", "/products?page=99", "/articles?page=1"):
        assert client.get(shop + path).status_code == 404, path
    assert client.get(f"{shop}/private/account").status_code == 200  # served, but robots says no
    sitemap = client.get(f"{news}/sitemap.xml")
    assert (
        sitemap.headers["content-type"].startswith("application/xml")
        and f"<loc>{news}/</loc>" in sitemap.text
    )


def test_truth_endpoint_matches_the_python_api_and_the_pages(site: SampleSite, client: httpx.Client) -> None:
    served = client.get(f"{site.urls[2]}/_truth").json()

    assert served == site.truth().to_json()
    product, article = served["products"][0], served["articles"][0]
    assert product["name"].replace("'", "&#x27;") in client.get(product["url"]).text
    assert article["body"].split("\n\n")[0] in client.get(article["url"]).text


def test_anti_bot_answers_429_above_the_rate_and_relaxes(client: httpx.Client) -> None:
    spec = SiteSpec(pages_per_host=10, latency_ms=0, anti_bot=AntiBot(max_rps=5, retry_after_s=7, hosts=(0,)))
    with SampleSite(spec) as site:
        # Requests until the gate closes: a slow machine may spread the first ones over more than the
        # 1 s window (then more pass), but the first 5 always pass and a burst always ends in a 429.
        statuses = []
        while len(statuses) < 200 and (not statuses or statuses[-1].status_code == 200):
            statuses.append(client.get(site.seeds[0]))
        codes = [r.status_code for r in statuses]
        assert codes[:5] == [200] * 5 and codes[-1] == 429, codes
        assert statuses[-1].headers["Retry-After"] == "7"
        assert all(client.get(site.seeds[1]).status_code == 200 for _ in range(8))  # other hosts unaffected

        site.set_anti_bot(0, None)
        assert all(client.get(site.seeds[0]).status_code == 200 for _ in range(8))
        assert site.stats().hosts[0].by_status == {"200": codes.count(200) + 8, "429": 1}


def test_captcha_mode_is_switched_over_http(site: SampleSite, client: httpx.Client) -> None:
    control = f"{site.urls[1]}/_control/anti_bot"
    switched = client.post(control, json={"anti_bot": {"max_rps": 3, "mode": "captcha"}, "hosts": [1]})
    assert switched.json()["anti_bot"][1] == {"max_rps": 3, "mode": "captcha", "retry_after_s": 5}

    pages = [client.get(site.seeds[1]) for _ in range(6)]
    assert [p.status_code for p in pages] == [200] * 6
    challenge = pages[-1]
    assert "Verify you are human" in challenge.text and "g-recaptcha" in challenge.text
    assert "cf-challenge" in challenge.text and len(challenge.content) < 1024
    assert challenge.headers["cf-mitigated"] == "challenge"
    assert site.stats().hosts[1].challenges == 3

    assert client.post(control, json={"anti_bot": None}).json()["anti_bot"] == [None, None, None]
    assert "g-recaptcha" not in client.get(site.seeds[1]).text
    bad = client.post(control, json={"anti_bot": {"max_rps": -1}})
    assert bad.status_code == 400 and "max_rps" in bad.json()["error"]


def test_mixed_mode_alternates_429_and_captcha(client: httpx.Client) -> None:
    spec = SiteSpec(pages_per_host=10, latency_ms=0, anti_bot=AntiBot(max_rps=2, mode="mixed"))
    with SampleSite(spec) as site:
        answers = [client.get(site.seeds[2]) for _ in range(6)]
    kinds = [r.status_code if "g-recaptcha" not in r.text else "captcha" for r in answers]
    assert kinds == [200, 200, 429, "captcha", 429, "captcha"]


def test_concurrent_requests_are_tracked() -> None:
    spec = SiteSpec(pages_per_host=10, latency_ms=300)
    concurrent = 16

    async def burst(url: str) -> list[int]:
        limits = httpx.Limits(max_connections=concurrent)
        async with httpx.AsyncClient(limits=limits, timeout=10) as http:
            responses = await asyncio.gather(*(http.get(url) for _ in range(concurrent)))
        return [r.status_code for r in responses]

    with SampleSite(spec) as site:
        assert asyncio.run(burst(site.seeds[0])) == [200] * concurrent
        stats = site.stats()
    assert stats.hosts[0].max_in_flight == concurrent and stats.hosts[0].in_flight == 0
    assert stats.hosts[1].max_in_flight == 0 and stats.max_in_flight == concurrent


def test_stats_log_and_reset_leave_out_control_endpoints(site: SampleSite, client: httpx.Client) -> None:
    base = site.urls[0]
    for path in ("/", "/careers", "/old/shop"):
        client.get(base + path, headers={"User-Agent": "stats-test/1.0"})
    client.get(f"{base}/_truth")

    stats = client.get(f"{site.urls[2]}/_stats").json()
    host = stats["hosts"][0]
    assert host["total_requests"] == 3 and host["by_status"] == {"200": 1, "301": 1, "404": 1}
    assert host["rate_1s"] == 3 and host["rate_10s"] == pytest.approx(0.3)
    assert len(host["histogram_60s"]) == 60 and sum(host["histogram_60s"]) == 3
    log = client.get(f"{base}/_log", params={"host": 0}).json()["entries"]
    assert [(e["path"], e["status"], e["user_agent"]) for e in log] == [
        ("/", 200, "stats-test/1.0"),
        ("/careers", 404, "stats-test/1.0"),
        ("/old/shop", 301, "stats-test/1.0"),
    ]

    assert client.post(f"{base}/_stats/reset").json() == {"reset": True}
    assert site.stats().total_requests == 0 and site.log() == []


class _Links(HTMLParser):
    def __init__(self) -> None:
        super().__init__()
        self.hrefs: list[str] = []

    def handle_starttag(self, tag: str, attrs: list[tuple[str, str | None]]) -> None:
        href = dict(attrs).get("href")
        if tag == "a" and href:
            self.hrefs.append(href)


async def _polite_crawl(seeds: list[str]) -> set[str]:
    """A tiny breadth-first crawler: <a href> only, robots.txt obeyed, redirects followed."""
    async with httpx.AsyncClient(follow_redirects=True, timeout=10) as http:
        robots = {}
        for seed in seeds:
            robots[urlsplit(seed).netloc] = Protego.parse((await http.get(urljoin(seed, "/robots.txt"))).text)
        fetched: set[str] = set()
        seen, frontier = set(seeds), list(seeds)
        while frontier:
            batch, frontier = frontier[:32], frontier[32:]
            for response in await asyncio.gather(*(http.get(url) for url in batch)):
                if response.status_code != 200:
                    continue
                fetched.add(str(response.url))
                parser = _Links()
                parser.feed(response.text)
                for href in parser.hrefs:
                    url = urldefrag(urljoin(str(response.url), href)).url
                    rules = robots.get(urlsplit(url).netloc)
                    if url not in seen and rules is not None and rules.can_fetch(url, "dualplane-test"):
                        seen.add(url)
                        frontier.append(url)
        return fetched


def test_a_polite_crawl_reaches_exactly_the_reachable_urls(site: SampleSite) -> None:
    crawled = asyncio.run(_polite_crawl(site.seeds))

    assert crawled == site.reachable_urls()
    assert not any("/private/" in url for url in crawled)


def test_a_site_for_other_machines_links_by_its_public_name_and_logs_each_client(
    client: httpx.Client,
) -> None:
    # Containers reach the site by a name (compose: ``sample-site``), never by its loopback address.
    spec = replace(SMALL, hosts=2, public_host="localhost")
    with SampleSite(spec, bind="0.0.0.0") as served:
        home = client.get(f"http://127.0.0.1:{served.spec.base_port}/")
        log = client.get(f"{served.urls[0]}/_log").json()["entries"]

    assert served.urls == [f"http://localhost:{served.spec.base_port + i}" for i in range(2)]
    assert f"http://localhost:{served.spec.base_port}/" in home.text
    assert "127.0.0.1:" not in home.text
    assert [(entry["path"], entry["client"]) for entry in log] == [("/", "127.0.0.1")]
