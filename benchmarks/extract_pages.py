"""Run ``extract_record`` (whichever ``data_plane`` is importable) over real-page dataset entries.

Prints one JSON line per page: its id, the record's product, article and text, and the extraction
time. ``extraction_quality.py --baseline-ref REF`` runs this file with an older tree of the package
on ``PYTHONPATH``, so the extractor before a change is scored and timed in the same invocation, on
the same pages, as the one after it:

    PYTHONPATH=/tmp/old-tree python benchmarks/extract_pages.py --set dev

``--pages FILE`` extracts the pages of a plain JSON-lines file instead (``id``, ``url``, ``html`` each):
``product_generalization.py`` writes the copies it scores (a page without its markup) there.
"""

from __future__ import annotations

import argparse
import json
import lzma
import sys
import time
from collections.abc import Iterator
from datetime import UTC, datetime
from decimal import Decimal
from pathlib import Path
from typing import Any

DATA = Path(__file__).resolve().parent / "data"
FETCHED_AT = datetime(2024, 6, 1, tzinfo=UTC)
DATASETS = ("articles", "products", "prices")
PRODUCT_LABELS = DATA / "product_labels.json"


def dataset(
    split: str, names: tuple[str, ...] = DATASETS, limit: int | None = None, id_prefix: tuple[str, ...] = ()
) -> Iterator[dict[str, Any]]:
    """The committed real pages of ``split`` (``dev`` or ``test``): articles, then product pages.

    Product pages are the pages of ``products.jsonl.xz`` and those of the article file that
    ``product_labels.json`` labels (by id), with those labels as their truth; price strings (kind
    ``prices``) come last. ``id_prefix`` keeps only the entries whose id starts with one of them: some
    sources' pages (``onebox/``), e.g. pages added after the extractor's rules were written, scored alone.
    """
    labels = json.loads(PRODUCT_LABELS.read_text(encoding="utf-8"))["labels"] if "products" in names else {}
    articles = 0
    products: list[dict[str, Any]] = []
    for page in _pages("articles.jsonl.xz", split, id_prefix):
        if page["id"] in labels:
            products.append({**page, "kind": "products", "truth": labels[page["id"]]})
        if "articles" in names and (limit is None or articles < limit):
            articles += 1
            yield {**page, "kind": "articles"}
    if "products" in names:
        products += [
            {**page, "kind": "products", "truth": labels[page["id"]]}
            for page in _pages("products.jsonl.xz", split, id_prefix)
        ]
    yield from products[:limit]
    if "prices" in names:
        strings = ({**item, "kind": "prices"} for item in _pages("price_strings.jsonl.xz", split, id_prefix))
        yield from list(strings)[:limit]


def _pages(name: str, split: str, id_prefix: tuple[str, ...] = ()) -> Iterator[dict[str, Any]]:
    return (
        page
        for page in pages_file(DATA / name)
        if page["split"] == split and (not id_prefix or page["id"].startswith(id_prefix))
    )


def pages_file(path: Path) -> Iterator[dict[str, Any]]:
    """The pages of a JSON-lines file compressed with xz, one object a line."""
    with lzma.open(path, "rt", encoding="utf-8") as lines:
        for line in lines:
            yield json.loads(line)


_SITES: list[Any] = []


def _service_options() -> dict[str, Any]:
    """What the extractor service passes besides the page: one ``SiteTrust`` for the run (a host's later
    pages may be read as its earlier ones taught), where the tree under test has one."""
    if not _SITES:
        try:
            from dualplane.data_plane.extract.text.site_trust import SiteTrust  # noqa: PLC0415
        except ImportError:  # an older revision's tree (``--baseline-ref``): each page read alone
            _SITES.append(None)
        else:
            _SITES.append(SiteTrust())
    return {"sites": _SITES[0]} if _SITES[0] is not None else {}


def extract_one(page: dict[str, Any], schema_version: int) -> dict[str, Any]:
    """The record parts scored by the benchmark, and how long ``extract_record`` took (ms).

    For a price string (kind ``prices``), the amount :func:`parse_price` reads from its text.
    """
    if page.get("kind") == "prices":
        return _price_string(page)
    from dualplane.data_plane.extract.offline import raw_page  # noqa: PLC0415 (the package under test comes from PYTHONPATH)
    from dualplane.data_plane.extract.record import extract_record  # noqa: PLC0415

    # As `dualplane extract` reads a saved file: no header, so the charset is found from the bytes. The
    # pages are stored decoded and written here as UTF-8 under their <meta> as published; given
    # charset="utf-8", this benchmark once hid that the saved-file path read 38 of them as mojibake.
    raw = raw_page(page["html"].encode("utf-8"), page["url"], fetched_at=FETCHED_AT, charset=None)
    started = time.perf_counter()
    record = extract_record(raw, schema_version=schema_version, **_service_options())
    elapsed_ms = (time.perf_counter() - started) * 1000
    return {
        "id": page["id"],
        "ms": elapsed_ms,
        "product": record["product"],
        "article": record["article"],
        "text": record["text"],
    }


def _price_string(item: dict[str, Any]) -> dict[str, Any]:
    from dualplane.data_plane.extract.product.prices import parse_price  # noqa: PLC0415

    started = time.perf_counter()
    price = parse_price(item["text"])
    elapsed_ms = (time.perf_counter() - started) * 1000
    amount = price.amount if price is not None else None
    return {"id": item["id"], "ms": elapsed_ms, "product": {"price": amount}, "article": None, "text": None}


def _plain(value: Any) -> Any:
    if isinstance(value, Decimal):
        return {"decimal": str(value)}
    if isinstance(value, datetime):
        return value.isoformat()
    raise TypeError(type(value).__name__)


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--set", dest="split", choices=("dev", "test"), default="dev")
    parser.add_argument("--schema-version", type=int, default=3)
    parser.add_argument("--limit", type=int, default=None, help="at most this many pages per dataset")
    parser.add_argument("--only", choices=DATASETS, help="only this dataset")
    parser.add_argument(
        "--id-prefix", action="append", default=[], help="only entries whose id starts with this (repeatable)"
    )
    parser.add_argument("--pages", type=Path, help="extract the pages of this JSON-lines file instead")
    args = parser.parse_args()
    names = (args.only,) if args.only else DATASETS
    pages = (
        map(json.loads, args.pages.read_text(encoding="utf-8").splitlines())
        if args.pages
        else dataset(args.split, names, limit=args.limit, id_prefix=tuple(args.id_prefix))
    )
    for page in pages:
        sys.stdout.write(json.dumps(extract_one(page, args.schema_version), default=_plain) + "\n")


if __name__ == "__main__":
    main()
