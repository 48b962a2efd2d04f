"""Microdata: read as extruct reads it, and parsed only when it may declare a product or an article."""

from __future__ import annotations

from typing import Any

import extruct
import pytest

from dualplane.data_plane.extract.structured import structured
from dualplane.data_plane.extract.structured.structured import read_structured

pytestmark = pytest.mark.unit

URL = "https://shop.example/p/1"
PRODUCT = """<html><body><div itemscope itemtype="http://schema.org/Product">
  <h1 itemprop="name">  Blue
     kettle </h1>
  <p itemprop="description">Boils <b>fast</b>, <!-- a note --> pours <script>x()</script>well.</p>
  <script itemprop="sku">123</script><img itemprop="image" src=" /k.jpg ">
  <span itemprop="offers" itemscope itemtype="http://schema.org/Offer"><span itemprop="price">40</span></span>
</div></body></html>"""
BREADCRUMBS = """<html><body><ol itemscope itemtype="https://schema.org/BreadcrumbList">
  <li itemprop="itemListElement" itemscope itemtype="https://schema.org/ListItem">
    <span itemprop="name">Home</span></li>
</ol></body></html>"""


def test_microdata_items_are_extructs_own() -> None:
    tree = structured._parse(PRODUCT)
    expected = extruct.extract(tree, base_url=URL, syntaxes=["microdata"], uniform=False)["microdata"]

    assert structured._microdata_items(structured._parse(PRODUCT), URL) == expected
    (product,) = read_structured(PRODUCT, URL).products
    assert product["name"] == "Blue kettle"
    assert product["description"] == "Boils fast, pours well."
    assert product["sku"] == ""  # extruct's Cleaner empties a script given to it
    assert product["image"] == "https://shop.example/k.jpg"


def test_microdata_without_a_product_or_article_type_is_not_parsed(monkeypatch: pytest.MonkeyPatch) -> None:
    parsed: list[str] = []

    def parse(html: str) -> Any:
        parsed.append(html)
        return None

    monkeypatch.setattr(structured, "_parse", parse)
    read_structured(BREADCRUMBS, URL)
    assert parsed == []
    # "itemtype" where Lexbor has no attribute (a template's content): extruct's parse decides
    template = '<template><div itemscope itemtype="Product"></div></template>'
    hidden = BREADCRUMBS.replace("</ol>", f"</ol>{template}")
    read_structured(hidden, URL)
    assert parsed == [hidden]
    read_structured(PRODUCT, URL)
    assert parsed == [hidden, PRODUCT]
