"""CPU ms/page of each step of ``extract_record``'s HTML path, on one page set, in this process.

    PYTHONPATH=. .venv/bin/python benchmarks/extraction_steps.py --set large --rounds 2

The steps are those of ``data_plane.extract.record._html_content`` in its order (decode, nesting guard,
Lexbor parse, links, structured data, main element and documentation check, markup tree, product, route,
main text, article, title, language), called one by one so each is timed apart; the main text is also
broken down by route. Keep the sequence in step with ``_html_content`` when that changes: this script is
where a profile of the whole path starts, ``extraction_speed.py`` the judge of a change (other revision,
trafilatura alone, records compared).
"""

from __future__ import annotations

import argparse
import time
from collections import defaultdict
from collections.abc import Callable
from functools import partial
from typing import Any

from extraction_speed import SETS, pages_of
from selectolax.lexbor import LexborHTMLParser

from dualplane.data_plane.extract.article.article import extract_article
from dualplane.data_plane.extract.links import extract_links
from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.product.product import extract_product
from dualplane.data_plane.extract.record import MAX_NESTING, warm_up
from dualplane.data_plane.extract.source import read_source, too_deep
from dualplane.data_plane.extract.structured.page_meta import description_of, language_of, title_of
from dualplane.data_plane.extract.structured.structured import read_structured
from dualplane.data_plane.extract.text.language import detect_language
from dualplane.data_plane.extract.text.text import link_texts, main_text
from dualplane.data_plane.extract.text.text_route import (
    documentation_page,
    main_element,
    preformatted_page,
    text_route,
)


class Laps:
    """CPU seconds per step name, summed over calls."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = defaultdict(float)

    def __call__(self, name: str, step: Callable[[], Any]) -> Any:
        started = time.process_time()
        result = step()
        self.seconds[name] += time.process_time() - started
        return result


def one_page(page: dict[str, Any], lap: Laps, routes: Laps, counts: dict[str, int]) -> None:
    url = page["url"]
    source = lap(
        "decode", lambda: read_source(bytes(page["body"]), page.get("content_type"), page.get("charset"))
    )
    html = source.text
    lap("nesting guard", lambda: too_deep(html, MAX_NESTING))
    tree = lap("lexbor parse", lambda: LexborHTMLParser(html))
    lap("links", lambda: extract_links(tree, url))
    data = lap("structured data", lambda: read_structured(html, url, tree))
    element, docs = lap(
        "main element, docs check", lambda: (main_element(tree), documentation_page(tree, html))
    )
    markup = lap("markup tree", lambda: Markup(tree))
    docs = docs or lap("preformatted check", lambda: preformatted_page(markup.tree))
    lap("description", lambda: description_of(markup))
    product = lap("product", lambda: extract_product(markup, data, url, html=html))
    shown = element if element is not None and element.shown_in(markup.tree) else None
    product_page = product is not None and not data.articles
    route = lap("route", lambda: text_route(html, shown, product_page=product_page, docs=docs))
    text = lap(
        "main text",
        lambda: routes(route.name, lambda: main_text(html, url, partial(link_texts, markup), route=route)),
    )
    counts[route.name] += 1
    lap("article", lambda: extract_article(markup, data, text) if product is None or data.articles else None)
    lap("title", lambda: title_of(markup))
    lap("language", lambda: language_of(markup, {}) or detect_language(text))


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--set", default="large", choices=SETS)
    parser.add_argument("--rounds", type=int, default=2)
    args = parser.parse_args()
    pages = pages_of(args.set)
    warm_up()
    lap, routes, counts = Laps(), Laps(), dict.fromkeys(("docs", "shop", "element", "page"), 0)
    for _ in range(args.rounds):
        for page in pages.values():
            one_page(page, lap, routes, counts)
    calls = len(pages) * args.rounds
    for name, seconds in lap.seconds.items():
        print(f"{name:26s} {seconds * 1000 / calls:7.2f} ms/page")
    print(f"{'total':26s} {sum(lap.seconds.values()) * 1000 / calls:7.2f} ms/page")
    for name, seconds in routes.seconds.items():
        pages_on_route = counts[name] // args.rounds
        print(
            f"main text on route {name}: {pages_on_route} pages, {seconds * 1000 / counts[name]:.1f} ms/page"
        )


if __name__ == "__main__":
    main()
