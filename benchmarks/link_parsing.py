"""CPU ms per real page of :func:`core.web.links.page_links`, the fast href resolver against urljoin.

On the committed real pages (``data/articles.jsonl.xz`` and ``data/products.jsonl.xz``, dev and test),
it times, page by page, the whole of ``page_links`` as the fetcher calls it (no anchor text) and as
the extractor does (with text), each with the fast resolver and with urljoin for every href
(``resolve_slowly``, the behaviour before); and the Lexbor parse alone. Each page's figure is the
least of ``--rounds`` runs (thread CPU time), so preemption on a shared machine does not count. It
checks that both resolvers give the same links on every page:

    PYTHONPATH=. python benchmarks/link_parsing.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import lzma
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from dualplane.core.web import links

DATA = Path(__file__).resolve().parent / "data"


def pages() -> list[tuple[str, str]]:
    """(url, html) of every committed real page."""
    found = []
    for name in ("articles.jsonl.xz", "products.jsonl.xz"):
        with lzma.open(DATA / name, "rt", encoding="utf-8") as lines:
            found += [(page["url"], page["html"]) for page in map(json.loads, lines)]
    return found


def slow_resolver(base: str) -> Callable[[str], links.Resolved]:
    return lambda href: links.resolve_slowly(href, base)


def per_page_ms(corpus: list[tuple[str, str]], rounds: int) -> dict[str, float]:
    """CPU ms per page of each variant: per page, the least of ``rounds`` timings (what a preempted or
    cache-cold run adds, on a shared machine, is noise), summed, over the number of pages."""
    fast = links.resolver
    variants: dict[str, Callable[[str, str], Any]] = {
        "parse only": lambda _url, html: LexborHTMLParser(html),
        "fetcher, urljoin": lambda url, html: links.page_links(html, url, texts=False),
        "fetcher, fast": lambda url, html: links.page_links(html, url, texts=False),
        "extractor, urljoin": lambda url, html: links.page_links(html, url),
        "extractor, fast": lambda url, html: links.page_links(html, url),
    }
    totals = dict.fromkeys(variants, 0.0)
    for url, html in corpus:
        for name, work in variants.items():
            links.resolver = slow_resolver if "urljoin" in name else fast
            best = float("inf")
            for _ in range(rounds):
                started = time.thread_time()
                work(url, html)
                best = min(best, time.thread_time() - started)
            totals[name] += best
    links.resolver = fast
    return {name: total * 1000 / len(corpus) for name, total in totals.items()}


def check_same(corpus: list[tuple[str, str]]) -> int:
    """Links on all pages; raises if the two resolvers disagree on any page."""
    fast, count = links.resolver, 0
    for url, html in corpus:
        links.resolver = fast
        quick = links.page_links(html, url)
        links.resolver = slow_resolver
        slow = links.page_links(html, url)
        if quick != slow:
            raise SystemExit(f"the resolvers disagree on {url}")
        count += len(quick.links)
    links.resolver = fast
    return count


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args()
    corpus = pages()
    total_links = check_same(corpus)
    per_page = per_page_ms(corpus, args.rounds)
    print(f"{len(corpus)} pages, {total_links} links ({total_links / len(corpus):.0f} a page), "
          f"same links both ways; CPU ms per page (least of {args.rounds} runs a page):")  # fmt: skip
    for name, ms in per_page.items():
        print(f"  {name:<20} {ms:6.3f}")
    parse = per_page["parse only"]
    for side in ("fetcher", "extractor"):
        slow, fast = per_page[f"{side}, urljoin"], per_page[f"{side}, fast"]
        print(f"  {side}: links beyond the parse {slow - parse:.3f} -> {fast - parse:.3f} ms "
              f"(x{(slow - parse) / (fast - parse):.2f}), whole call x{slow / fast:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
