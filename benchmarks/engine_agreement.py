"""How much of trafilatura's main text resiliparse's main content holds, and what each costs, per page set.

    .venv/bin/python benchmarks/engine_agreement.py --set sites --prefix kaitai-formats/
    .venv/bin/python benchmarks/engine_agreement.py --set dev --preformatted --json

A measurement behind a routing rule, not a quality score: no truth is read. For each page of a set of
``extraction_speed.py`` (``--prefix``: only page ids starting so; ``--preformatted``: only pages the
extractor's :func:`~data_plane.extract.text.text_route.preformatted_page` calls listings), trafilatura's text
(as the extractor calls it) and resiliparse's main content are compared as bags of words: *recall* is the
share of trafilatura's words resiliparse also gives, *precision* the share of resiliparse's words that
trafilatura gives too. Means over the pages, and CPU ms/page of each engine in this process.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections import Counter
from typing import Any

import trafilatura
from extraction_speed import SETS, pages_of
from resiliparse.parse.html import HTMLTree
from selectolax.lexbor import LexborHTMLParser

from dualplane.data_plane.extract.markup import Markup
from dualplane.data_plane.extract.text.text import _plain_text
from dualplane.data_plane.extract.text.text_route import preformatted_page


def overlap(found: str, reference: str) -> tuple[float, float]:
    """(precision, recall) of the words of ``found`` against those of ``reference``."""
    words, wanted = Counter(found.split()), Counter(reference.split())
    shared = sum((words & wanted).values())
    return shared / max(1, sum(words.values())), shared / max(1, sum(wanted.values()))


def compare(pages: dict[str, dict[str, Any]]) -> dict[str, Any]:
    precisions, recalls, cpu_s = [], [], {"trafilatura": 0.0, "resiliparse": 0.0}
    for page in pages.values():
        html = bytes(page["body"]).decode(page.get("charset") or "utf-8", "replace")
        started = time.process_time()
        reference = trafilatura.extract(
            html, include_comments=False, include_tables=True, deduplicate=False, with_metadata=False
        )
        middle = time.process_time()
        found = _plain_text(HTMLTree.parse(html), main_content=True)
        cpu_s["trafilatura"] += middle - started
        cpu_s["resiliparse"] += time.process_time() - middle
        precision, recall = overlap(found, reference or "")
        precisions.append(precision)
        recalls.append(recall)
    count = max(1, len(recalls))
    return {
        "pages": len(recalls),
        "precision_mean": round(statistics.fmean(precisions), 3) if precisions else None,
        "recall_mean": round(statistics.fmean(recalls), 3) if recalls else None,
        "cpu_ms_per_page": {engine: round(seconds * 1000 / count, 1) for engine, seconds in cpu_s.items()},
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--set", default="sites", choices=SETS)
    parser.add_argument("--prefix", default="", help="only pages whose id starts with this")
    parser.add_argument("--preformatted", action="store_true", help="only pages read as listings")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    pages = {key: page for key, page in pages_of(args.set).items() if key.startswith(args.prefix)}
    if args.preformatted:
        pages = {key: page for key, page in pages.items() if _listing(page)}
    result = {"set": args.set, "prefix": args.prefix, "preformatted": args.preformatted, **compare(pages)}
    if args.json:
        print(json.dumps(result))
        return
    print(
        f"{result['pages']} pages of {args.set}{' ' + args.prefix if args.prefix else ''}: resiliparse holds "
        f"{result['recall_mean']} of trafilatura's words (precision {result['precision_mean']}); CPU ms/page "
        f"trafilatura {result['cpu_ms_per_page']['trafilatura']}, resiliparse "
        f"{result['cpu_ms_per_page']['resiliparse']}"
    )


def _listing(page: dict[str, Any]) -> bool:
    html = bytes(page["body"]).decode(page.get("charset") or "utf-8", "replace")
    return preformatted_page(Markup(LexborHTMLParser(html)).tree)


if __name__ == "__main__":
    main()
