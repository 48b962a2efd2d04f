"""CPU ms per real page of :func:`core.web.links.page_links`, the fast href resolver against urljoin.

On the committed real pages (``data/articles.jsonl.xz`` and ``data/products.jsonl.xz``, dev and test),
each round times, in alternating order, the whole of ``page_links`` as the fetcher calls it (no anchor
text) and as the extractor does (with text), each with the fast resolver and with urljoin for every
href (``resolve_slowly``, the behaviour before); and the Lexbor parse alone. It checks that both
resolvers give the same links on every page, and prints medians over the rounds:

    PYTHONPATH=. python benchmarks/link_parsing.py --rounds 5
"""

from __future__ import annotations

import argparse
import json
import lzma
import statistics
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from selectolax.lexbor import LexborHTMLParser

from core.web import links

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


def timed(work: Callable[[], Any]) -> float:
    started = time.process_time()
    work()
    return time.process_time() - started


def variants(corpus: list[tuple[str, str]]) -> dict[str, Callable[[], Any]]:
    def run(texts: bool, make: Callable[[str], Callable[[str], links.Resolved]]) -> Callable[[], Any]:
        def go() -> None:
            links.resolver = make  # type: ignore[assignment]  # page_links looks it up on each call
            for url, html in corpus:
                links.page_links(html, url, texts=texts)

        return go

    def parse() -> None:
        for _url, html in corpus:
            LexborHTMLParser(html)

    fast = links.resolver
    return {
        "parse only": parse,
        "fetcher, urljoin": run(False, slow_resolver),
        "fetcher, fast": run(False, fast),
        "extractor, urljoin": run(True, slow_resolver),
        "extractor, fast": run(True, fast),
    }


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
    work = variants(corpus)
    seconds: dict[str, list[float]] = {name: [] for name in work}
    for round_number in range(args.rounds):
        names = list(work) if round_number % 2 == 0 else list(reversed(work))
        for name in names:
            seconds[name].append(timed(work[name]))
    print(f"{len(corpus)} pages, {total_links} links ({total_links / len(corpus):.0f} a page), "
          f"same links with both resolvers; CPU ms per page, median of {args.rounds} rounds:")  # fmt: skip
    per_page = {name: statistics.median(values) * 1000 / len(corpus) for name, values in seconds.items()}
    for name, ms in per_page.items():
        print(f"  {name:<20} {ms:6.3f}")
    parse = per_page["parse only"]
    for side in ("fetcher", "extractor"):
        slow, fast = per_page[f"{side}, urljoin"], per_page[f"{side}, fast"]
        print(f"  {side}: links beyond the parse {slow - parse:.3f} -> {fast - parse:.3f} ms "
              f"(x{(slow - parse) / (fast - parse):.2f}), whole call x{slow / fast:.2f}")  # fmt: skip


if __name__ == "__main__":
    main()
