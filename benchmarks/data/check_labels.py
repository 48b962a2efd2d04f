"""Check the hand-made product labels against each page's visible text, independently of the extractor.

    .venv/bin/python benchmarks/data/check_labels.py [--verbose]

The labels in ``product_labels.json`` were made by reading the pages; this is a second, mechanical look
with a method that shares nothing with ``data_plane.extract``: the page's visible text (lxml, without
scripts, styles, templates, hidden inputs or attributes, so no structured data and no embedded JSON),
every amount written in it (digits with ``.``, ``,``, ``'`` or thin spaces as separators, read both ways),
and the item number as a literal string. For each label it says whether the labelled price is among
the amounts the page prints and whether the labelled SKU is printed. A label that fails the check is not
wrong by itself (a price shown only in an image, an SKU the labelling rules take from structured data
because the page prints none): the script lists those with the label's ``note`` so each can be looked at
again by hand.
"""

from __future__ import annotations

import argparse
import json
import lzma
import re
from decimal import Decimal, InvalidOperation
from pathlib import Path
from typing import Any

import lxml.html

HERE = Path(__file__).resolve().parent
_XML_DECLARATION = re.compile(r"^\s*<\?xml[^>]*\?>")
_AMOUNT = re.compile(r"\d{1,3}(?:[.,'\u2009\u202f ]\d{3})+(?:[.,]\d{1,2})?|\d+(?:[.,]\d{1,2})?")


def visible_text(html: str) -> str:
    """The text a reader sees: no scripts, styles, templates, comments or attribute values."""
    # lxml refuses a str that opens with an XML declaration (any23's XHTML+RDFa page from oreilly.com)
    tree = lxml.html.fromstring(_XML_DECLARATION.sub("", html, count=1))
    for node in tree.xpath("//script|//style|//noscript|//template|//head"):
        node.drop_tree()
    return " ".join(tree.text_content().split())


def amounts(text: str) -> set[Decimal]:
    """Every number in ``text`` read as an amount, each separator tried as thousands and as decimal mark."""
    found: set[Decimal] = set()
    for match in _AMOUNT.finditer(text):
        raw = re.sub(r"[\u2009\u202f ']", "", match.group())
        for decimal_mark in (".", ","):
            other = "," if decimal_mark == "." else "."
            candidate = raw.replace(other, "").replace(decimal_mark, ".")
            try:
                found.add(Decimal(candidate).normalize())
            except InvalidOperation:
                continue
    return found


def check(label: dict[str, Any], text: str) -> dict[str, bool | None]:
    """``price``/``sku``: shown on the page (``True``/``False``), ``None`` when the label has none."""
    price = label.get("price")
    sku = label.get("sku")
    return {
        "price": None if price is None else Decimal(price).normalize() in amounts(text),
        "sku": None if sku is None else sku.lower() in text.lower(),
    }


def pages() -> dict[str, dict[str, Any]]:
    labels = json.loads((HERE / "product_labels.json").read_text(encoding="utf-8"))["labels"]
    found = {}
    for name in ("articles.jsonl.xz", "products.jsonl.xz"):
        with lzma.open(HERE / name, "rt", encoding="utf-8") as lines:
            for line in lines:
                page = json.loads(line)
                if page["id"] in labels:
                    found[page["id"]] = {**page, "label": labels[page["id"]]}
    return found


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--verbose", action="store_true", help="print every page's result")
    args = parser.parse_args()
    totals = {"price": [0, 0], "sku": [0, 0]}
    for page_id, page in sorted(pages().items()):
        result = check(page["label"], visible_text(page["html"]))
        for field, shown in result.items():
            if shown is not None:
                totals[field][0] += shown
                totals[field][1] += 1
        missing = [field for field, shown in result.items() if shown is False]
        if missing or args.verbose:
            note = page["label"].get("note", "")
            print(f"{page_id}: not printed: {', '.join(missing) or '-'}  ({note})")
    for field, (shown, labelled) in totals.items():
        print(f"{field}: printed on the page for {shown} of {labelled} labels")


if __name__ == "__main__":
    main()
