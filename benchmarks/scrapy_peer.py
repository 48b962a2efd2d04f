"""The peer of ``crawl_vs_scrapy.py``: what a Scrapy user writes to crawl a site and keep its main text.

One spider: start at the seeds, obey robots.txt, and for every page yield an item with
trafilatura's main text, written to a JSON-lines feed. No politeness delay; ``--concurrency``
requests in flight at most. Prints Scrapy's stats as JSON on the last line.

It follows links by dualplane's rules (``data_plane.extract.links`` and the extractor's discovery),
so that both crawl the same pages: every ``<a href>`` (whitespace trimmed, resolved against
``<base href>``), http(s) only, to the seeds' hosts (host and port) only, whatever the extension
(dualplane's frontier keeps no extension list); not ``rel`` nofollow, ugc or sponsored, and none of
a page whose ``<meta name="robots">`` says nofollow. Scrapy's duplicate filter drops repeats.

    .venv/bin/python benchmarks/scrapy_peer.py --seeds http://127.0.0.1:20000/ ... --out items.jsonl
"""

from __future__ import annotations

import argparse
import json
from collections.abc import AsyncIterator, Iterator
from typing import Any
from urllib.parse import urlsplit

import scrapy
import trafilatura
from scrapy.crawler import CrawlerProcess
from scrapy.http import Response

NOFOLLOW_RELS = frozenset({"nofollow", "ugc", "sponsored"})
CRAWLABLE_SCHEMES = ("http", "https")


class SiteSpider(scrapy.Spider):
    name = "site"

    def __init__(self, seeds: list[str], **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.seeds = seeds
        self.hosts = {urlsplit(seed).netloc for seed in seeds}

    async def start(self) -> AsyncIterator[Any]:
        # Scrapy's default start requests skip the duplicate filter, so a link back to a home page
        # fetched it again; dualplane's frontier dedups seeds like any URL.
        for seed in self.seeds:
            yield scrapy.Request(seed, callback=self.parse)

    def parse(self, response: Response) -> Iterator[Any]:
        if not hasattr(response, "text"):
            return
        yield {"url": response.url, "text": trafilatura.extract(response.text, url=response.url)}
        if _meta_nofollow(response):
            return
        for anchor in response.css("a[href]"):
            href = anchor.attrib["href"].strip()
            rels = set(anchor.attrib.get("rel", "").lower().split())
            if not href or href.startswith("#") or rels & NOFOLLOW_RELS:
                continue
            try:
                url = response.urljoin(href)  # honours <base href>
                parts = urlsplit(url)
            except ValueError:  # e.g. an invalid IPv6 literal: that link is skipped, not the page
                continue
            if parts.scheme in CRAWLABLE_SCHEMES and parts.netloc in self.hosts:
                yield scrapy.Request(url, callback=self.parse)


def _meta_nofollow(response: Response) -> bool:
    for meta in response.css("meta[name]"):
        if meta.attrib["name"].lower() == "robots":
            return "nofollow" in meta.attrib.get("content", "").lower()
    return False


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--seeds", nargs="+", required=True)
    parser.add_argument("--out", required=True, help="the JSON-lines feed of items")
    parser.add_argument("--concurrency", type=int, default=16)
    args = parser.parse_args()
    process = CrawlerProcess(
        settings={
            "CONCURRENT_REQUESTS": args.concurrency,
            # Scrapy keys its per-domain slots by host name: the sample site's hosts all share one
            # (127.0.0.1), so the per-domain cap is the total one.
            "CONCURRENT_REQUESTS_PER_DOMAIN": args.concurrency,
            "DOWNLOAD_DELAY": 0,
            "ROBOTSTXT_OBEY": True,
            # dualplane does not follow <meta http-equiv="refresh"> (it extracts the page and follows
            # its links); Scrapy would, to wherever it points (the news site's alias pages point at
            # the real host): off, so that both fetch the same pages.
            "METAREFRESH_ENABLED": False,
            "LOG_LEVEL": "WARNING",
            "TELNETCONSOLE_ENABLED": False,
            "FEEDS": {args.out: {"format": "jsonlines", "overwrite": True}},
            "REQUEST_FINGERPRINTER_IMPLEMENTATION": "2.7",
        }
    )
    crawler = process.create_crawler(SiteSpider)
    process.crawl(crawler, seeds=args.seeds)
    process.start()
    stats = dict(crawler.stats.get_stats()) if crawler.stats else {}
    print(json.dumps(stats, default=str))


if __name__ == "__main__":
    main()
