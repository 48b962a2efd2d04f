"""Whether a page needs rendering: what its rendered DOM shows that its direct HTML does not.

The one rule of ``render: auto`` (``backends/adaptive.py``), on a page fetched directly and then
rendered from that same answer. A page needs rendering when its rendered DOM shows

- **price data** its direct HTML lacks: more elements whose class, id or ``itemprop`` names a price
  and whose text has a digit, or price fields in JSON-LD or ``<meta>``; a shop whose script draws
  the price (the issue's "null price where rendered fetches had one"); or
- **content built by script**: at least 1.5 times the visible text, and 500 characters more (an
  empty shell whose body a script fills).

Anything else rendering changes (a cookie banner, a tracking pixel, reordered markup) is not a need.
The rule was shaped on the sample site's script-drawn shops only; ``benchmarks/render_auto_rule.py``
measures it on pages that did not shape it.
"""

from __future__ import annotations

from dataclasses import dataclass

from selectolax.lexbor import LexborHTMLParser

TEXT_RATIO, TEXT_MORE = 1.5, 500
PRICE_META = (
    'meta[itemprop="price"]',
    'meta[property="product:price:amount"]',
    'meta[property="og:price:amount"]',
)


@dataclass(frozen=True)
class Shown:
    """What a page shows a reader: price data found, and characters of visible text."""

    prices: int
    text_chars: int


def shown(html: str) -> Shown:
    tree = LexborHTMLParser(html)
    prices = 0
    for node in tree.css("[class*=price i], [id*=price i], [itemprop*=price i]"):
        text = node.text(deep=True) if node.tag != "meta" else node.attributes.get("content") or ""
        if any(char.isdigit() for char in text):
            prices += 1
    for script in tree.css('script[type="application/ld+json"]'):
        prices += script.text().count('"price"')
    for selector in PRICE_META:
        prices += len(tree.css(selector))
    for node in tree.css("script, style, noscript, template"):
        node.decompose()
    body = tree.body
    text = body.text(separator=" ") if body is not None else ""
    return Shown(prices, len(" ".join(text.split())))


def render_need(direct: Shown, rendered: Shown) -> str | None:
    """Why the page needs rendering (see the module docstring), or None."""
    if rendered.prices > direct.prices:
        return f"rendering shows {rendered.prices - direct.prices} more price data"
    if (
        rendered.text_chars >= TEXT_RATIO * direct.text_chars
        and rendered.text_chars - direct.text_chars >= TEXT_MORE
    ):
        return (
            f"rendering shows {rendered.text_chars} characters of text where the HTML has {direct.text_chars}"
        )
    return None
