"""How often a page's declared product (its markup) disagrees with what the page shows, field by field.

    .venv/bin/python benchmarks/data/check_declared.py [--verbose]

Self-supervised labels (``declared_labels.py``) take a page's declaration as its truth. Whether that is
safe is measured on the pages labelled by hand from what they show (``product_labels.json``): for every
hand-labelled page that declares a product, each declared field is compared with the hand label. A
declared value where the hand label has none (a page that is no product page declaring one, a stock
state the page does not show) counts as a disagreement too.
"""

from __future__ import annotations

import argparse
import json
import lzma
from collections import Counter
from decimal import Decimal
from pathlib import Path

from declared_labels import declared_label

HERE = Path(__file__).resolve().parent
FIELDS = ("price", "currency", "sku", "availability")


def _same(field: str, declared: str, hand: str | None) -> bool:
    if hand is None:
        return False
    return Decimal(declared) == Decimal(hand) if field == "price" else declared == hand


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--verbose", action="store_true", help="list every disagreement")
    args = parser.parse_args()
    labels = json.loads((HERE / "product_labels.json").read_text(encoding="utf-8"))["labels"]
    tally: Counter[tuple[str, str]] = Counter()
    pages = declaring = disagreeing = 0
    for name in ("articles.jsonl.xz", "products.jsonl.xz"):
        with lzma.open(HERE / name, "rt", encoding="utf-8") as lines:
            for page in map(json.loads, lines):
                if page["id"] not in labels:
                    continue
                pages += 1
                declared = declared_label(page["html"], page["url"])
                if not declared:
                    continue
                declaring += 1
                hand = labels[page["id"]]
                differs = [f for f in FIELDS if f in declared and not _same(f, declared[f], hand.get(f))]
                disagreeing += bool(differs)
                for field in FIELDS:
                    if field in declared:
                        tally[field, "differs" if field in differs else "agrees"] += 1
                if differs and args.verbose:
                    shown = {f: (declared[f], hand.get(f)) for f in differs}
                    print(f"  {page['id']}: declared vs shown {shown}")
    print(f"{pages} hand-labelled pages, {declaring} declare a product (a single one), {disagreeing} of them")
    print("disagree with what the page shows on at least one field:")
    for field in FIELDS:
        total = tally[field, "agrees"] + tally[field, "differs"]
        print(f"  {field:<13} declared on {total:>3} pages, differs on {tally[field, 'differs']:>2}")


if __name__ == "__main__":
    main()
