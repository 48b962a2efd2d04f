"""Product fields on shops no rule was written on: leave-site-out scores with site-bootstrap intervals.

    .venv/bin/python benchmarks/product_generalization.py                      # ours
    .venv/bin/python benchmarks/product_generalization.py --baseline-ref main  # before/after, same run
    .venv/bin/python benchmarks/product_generalization.py --json
    .venv/bin/python benchmarks/product_generalization.py --split dev   # find failure classes here only
    .venv/bin/python benchmarks/product_generalization.py --split test --baseline-ref main --changes

The extractor's product rules are hand-written, not trained, so leaving a site out means scoring it with
rules that were not written while looking at it. The labelled pages (``data/README.md``) fall in two
groups by that: **written on**, the ``dev`` split's sites, on which the rules were developed and checked,
and **unseen**, the ``test`` split's sites and the pages added after the rules were written and labelled
before the extractor ran on them (``UNSEEN_PREFIXES``). A site is in one group only (splits are by site).
The gap between the two is how much a rule set is fitted to where it was written; the held-out check of
issue #35 is the unseen group's case.

Each page is scored twice: **as published**, and **markup removed** (``markup_removed.py``: no JSON-LD,
microdata, RDFa or OpenGraph/product meta), which is what the visible-page path must read alone. Where a
page declares its product, the label agrees with the declaration on most fields (``data/README.md``
measures how often not), so the published score mostly measures reading the declaration.

**Declared** (when ``DECLARED`` exists, built by ``data/build_declared_products.py``): shop pages saved in
public repositories whose sources allow no copy here, each labelled by its own declaration
(``data/declared_labels.py``); sites of the hand-labelled pages are left out, so every one is a site no
rule was written on, and the markup-removed score is the visible-page path's alone on new shops.

**Not products**: pages that are no product page (the hand-labelled ones and ``not_products.jsonl.xz``,
recipe pages of several hundred sites): a price or stock state on them is invented.

**Split** (``--split dev|test``): every page's ``split`` comes from a hash of its site (``data/README.md``),
so a rule is looked for on ``dev`` pages only and judged on ``test`` pages, whose sites prompted none.

Intervals: 95%, by resampling sites (``site_intervals.py``), the unit a new set of shops varies by.
"""

from __future__ import annotations

import argparse
import json
import logging
import tempfile
from collections.abc import Iterator
from decimal import Decimal
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from extract_pages import DATA, dataset, pages_file
from markup_removed import without_markup
from real_pages import PRODUCT_FIELDS, Output, _number, extractor_runs
from site_intervals import Counts, counts_of, with_intervals

UNSEEN_PREFIXES = (
    "onebox/", "htmldate/beltz.de", "any23/", "postlight/", "brick-stock-checker/", "fletcher/",
)  # fmt: skip
"""Pages labelled before the extractor ran on them, after its rules were written (``data/README.md``)."""
NOT_PRODUCTS = DATA / "not_products.jsonl.xz"
DECLARED = Path.home() / ".cache" / "dualplane" / "declared_products.jsonl.xz"
"""Where ``data/build_declared_products.py`` writes by default (out of the repository: see its docstring)."""
GROUPS = ("written on", "unseen", "declared")
VARIANTS = ("published", "markup removed")
STOCK_ROWS = ("out_of_stock", "false_out_of_stock", "null_in_stock")


def site_of(url: str) -> str:
    return (urlsplit(url).hostname or url).lower().removeprefix("www.")


def labelled_pages() -> Iterator[dict[str, Any]]:
    """Every hand-labelled page of both splits, with its group and site."""
    for split in ("dev", "test"):
        for page in dataset(split, ("products",)):
            unseen = split == "test" or page["id"].startswith(UNSEEN_PREFIXES)
            yield {**page, "group": "unseen" if unseen else "written on", "site": site_of(page["url"])}


def not_product_pages() -> Iterator[dict[str, Any]]:
    if NOT_PRODUCTS.exists():
        for page in pages_file(NOT_PRODUCTS):
            yield {**page, "truth": {}, "group": "not products", "site": site_of(page["url"])}


def declared_pages(path: Path, labelled_sites: set[str]) -> Iterator[dict[str, Any]]:
    """The declared-label pages of ``path``, but those of a site a hand-labelled page is from."""
    if path.exists():
        for page in pages_file(path):
            if (site := site_of(page["url"])) not in labelled_sites:
                yield {**page, "group": "declared", "site": site}


def scored_copies(pages: list[dict[str, Any]]) -> Iterator[dict[str, Any]]:
    """The copies handed to the extractor: each product page as published and without its markup."""
    for page in pages:
        yield {"id": f"{page['id']}#published", "url": page["url"], "html": page["html"]}
        if page["group"] != "not products":
            html = without_markup(page["html"])
            yield {"id": f"{page['id']}#markup removed", "url": page["url"], "html": html}


def page_counts(truth: dict[str, Any], product: dict[str, Any], partial: bool = False) -> dict[str, Counts]:
    """One page's counts: each field, and the stock rows (``out_of_stock`` against the rest; an in-stock
    page said to be out of stock, and one given no state, each counted against the in-stock pages).

    ``partial``: the label is a declaration, which says nothing of a field it leaves out (a shop that
    declares no price still shows one), so such a field is not scored at all rather than as absent."""
    counts = {}
    for name in PRODUCT_FIELDS:
        if partial and name not in truth:
            continue
        expected, found = truth.get(name), product.get(name)
        if name == "price":
            expected, found = _number(expected), _number(found)
        counts[name] = counts_of(expected, found)
    said, meant = product.get("availability"), truth.get("availability")
    if partial and meant is None:
        return counts
    counts["out_of_stock"] = Counts(
        tp=int(said == meant == "out_of_stock"),
        fp=int(said == "out_of_stock" != meant),
        fn=int(meant == "out_of_stock" != said),
    )
    # as rates over in-stock pages: tp counts the pages, fp the errors (precision = 1 - rate)
    in_stock = meant == "in_stock"
    counts["false_out_of_stock"] = Counts(
        tp=int(in_stock and said != "out_of_stock"), fp=int(in_stock and said == "out_of_stock")
    )
    counts["null_in_stock"] = Counts(tp=int(in_stock and said is not None), fp=int(in_stock and said is None))
    return counts


def invented(product: dict[str, Any]) -> dict[str, Counts]:
    """On a page that is no product page: was a price, or a stock state, given?"""
    return {
        name: Counts(tp=int(product.get(name) is None), fp=int(product.get(name) is not None))
        for name in ("price", "availability")
    }


def measure(args: argparse.Namespace) -> dict[str, Any]:
    labelled = list(labelled_pages())
    declared = declared_pages(args.declared, {page["site"] for page in labelled})
    pages = [*labelled, *declared, *not_product_pages()]
    if args.split:
        pages = [page for page in pages if page.get("split") == args.split]
    with tempfile.TemporaryDirectory(prefix="dualplane-generalization-") as folder:
        copies = Path(folder, "pages.jsonl")
        with copies.open("w", encoding="utf-8") as out:
            for copy in scored_copies(pages):
                out.write(json.dumps(copy) + "\n")
        runs = extractor_runs(args.baseline_ref, ["--pages", str(copies)])
    return {
        "baseline_ref": args.baseline_ref,
        "split": args.split,
        "pages": _page_counts(pages),
        **{system: _report(pages, outputs, args.rounds) for system, outputs in runs.items()},
        "errors": _errors(pages, runs["ours"]) if args.errors else [],
        "changes": _changes(pages, runs) if args.changes else [],
    }


def _errors(pages: list[dict[str, Any]], outputs: dict[str, Output]) -> list[dict[str, Any]]:
    """Each product field ours gets wrong, by page and variant, as the issue's table sorts them: missed
    (label present, ours none), wrong value, invented (label absent; not for declared labels)."""
    found: list[dict[str, Any]] = []
    for page in pages:
        truth = page["truth"]
        if page["group"] == "not products" or not any(truth.get(name) for name in PRODUCT_FIELDS):
            continue
        for variant in VARIANTS:
            product = (outputs.get(f"{page['id']}#{variant}") or {}).get("product") or {}
            for name in PRODUCT_FIELDS:
                if page["group"] == "declared" and name not in truth:
                    continue
                meant, said = truth.get(name), product.get(name)
                same = _number(meant) == _number(said) if name == "price" else meant == said
                if same:
                    continue
                kind = "missed" if said is None else "invented" if meant is None else "wrong"
                found.append(
                    {"group": page["group"], "variant": variant, "id": page["id"], "field": name,
                     "kind": kind, "label": meant, "ours": said}
                )  # fmt: skip
    return found


def _changes(pages: list[dict[str, Any]], runs: dict[str, dict[str, Output]]) -> list[dict[str, Any]]:
    """Every page copy whose product fields differ between ``before`` and ``ours``, scored or not: a
    rule is judged by each page it touches, also the fields a declared label leaves out and the pages
    that are no product page (where only an invented value could change)."""
    found: list[dict[str, Any]] = []
    for page in pages:
        variants = VARIANTS if page["group"] != "not products" else VARIANTS[:1]
        for variant in variants:
            key = f"{page['id']}#{variant}"
            ours, before = ((runs[name].get(key) or {}).get("product") or {} for name in ("ours", "before"))
            for name in PRODUCT_FIELDS:
                if ours.get(name) != before.get(name):
                    found.append(
                        {"group": page["group"], "variant": variant, "id": page["id"], "field": name,
                         "label": page["truth"].get(name, "(none)"), "before": before.get(name),
                         "ours": ours.get(name)}
                    )  # fmt: skip
    return found


def _report(pages: list[dict[str, Any]], outputs: dict[str, Output], rounds: int) -> dict[str, Any]:
    rows: dict[tuple[str, str, str], list[tuple[str, Counts]]] = {}
    for page in pages:
        for variant in VARIANTS:
            output = outputs.get(f"{page['id']}#{variant}")
            if output is None:
                continue
            product = output.get("product") or {}
            truth = page["truth"]
            is_product = any(truth.get(name) for name in PRODUCT_FIELDS)
            if page["group"] == "not products" or not is_product:
                items = invented(product)
                group = "not products"
            else:
                items = page_counts(truth, product, partial=page["group"] == "declared")
                group = page["group"]
            for name, counts in items.items():
                rows.setdefault((group, variant, name), []).append((page["site"], counts))
    return {" | ".join(key): with_intervals(items, rounds=rounds) for key, items in sorted(rows.items())}


def _page_counts(pages: list[dict[str, Any]]) -> dict[str, dict[str, int]]:
    sites: dict[str, set[str]] = {}
    counts: dict[str, dict[str, int]] = {}
    for page in pages:
        is_product = any(page["truth"].get(name) for name in PRODUCT_FIELDS)
        group = page["group"] if is_product else "not products"
        counts.setdefault(group, {"pages": 0, "sites": 0})["pages"] += 1
        sites.setdefault(group, set()).add(page["site"])
    return {group: {**entry, "sites": len(sites[group])} for group, entry in counts.items()}


FIELD_ROWS = (*PRODUCT_FIELDS, *STOCK_ROWS)


def print_errors(errors: list[dict[str, Any]]) -> None:
    keys = ("group", "variant", "field", "kind", "id", "label", "ours")
    print("\nerrors: " + " | ".join(keys))
    for error in errors:
        print("  " + " | ".join(str(error[key]) for key in keys))


def print_changes(changes: list[dict[str, Any]]) -> None:
    keys = ("group", "variant", "field", "id", "label", "before", "ours")
    print(f"\nchanged fields ({len(changes)}): " + " | ".join(keys))
    for change in changes:
        print("  " + " | ".join(str(change[key]) for key in keys))


def print_report(report: dict[str, Any]) -> None:
    groups = ", ".join(f"{g}: {c['pages']} pages of {c['sites']} sites" for g, c in report["pages"].items())
    split = f", {report['split']} split only" if report.get("split") else ""
    print(f"product fields, leave-site-out ({groups}{split})")
    print("P / R / F1 [F1's 95% site-bootstrap interval]; rates as errors/pages [95% interval]")
    for system in (name for name in ("ours", "before") if name in report):
        rows = report[system]
        print(f"\n{system}" + (f" ({report['baseline_ref']})" if system == "before" else ""))
        columns = [group for group in GROUPS if group in report["pages"]]
        print(f"  {'variant, field':<36}" + "".join(f"{group:>38}" for group in columns) + f"{'F1 gap':>8}")
        for variant in VARIANTS:
            for field in FIELD_ROWS:
                cells = [rows.get(f"{group} | {variant} | {field}") for group in columns]
                gap = (
                    f"{cells[0]['f1'] - cells[1]['f1']:+.3f}"
                    if all(cells[:2]) and field not in STOCK_ROWS[1:]
                    else ""
                )
                label = f"{variant}, {field}"
                print(f"  {label:<36}" + "".join(f"{_cell(field, c):>38}" for c in cells) + f"{gap:>8}")
            for field in ("price", "availability"):
                row = rows.get(f"not products | {variant} | {field}")
                label = f"{variant}, invented {field}"
                print(f"  {label:<36}{'not products: ' + _cell('not products', row):>{38 * len(columns)}}")


def _cell(field: str, row: dict[str, Any] | None) -> str:
    if row is None:
        return "-"
    if field in ("not products", *STOCK_ROWS[1:]):
        pages = row["tp"] + row["fp"]
        low, high = row["precision_95"] or (0, 0)
        return f"{row['fp']}/{pages} = {1 - row['precision']:.3f} [{1 - high:.3f}-{1 - low:.3f}]"
    low, high = row["f1_95"] or (0, 0)
    return f"{row['precision']:.3f} / {row['recall']:.3f} / {row['f1']:.3f} [{low:.2f}-{high:.2f}]"


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--baseline-ref", help="also score the extractor of this git revision, same run")
    parser.add_argument("--rounds", type=int, default=1000, help="bootstrap rounds (default 1000)")
    parser.add_argument(
        "--declared", type=Path, default=DECLARED, help=f"declared-label pages, if built (default {DECLARED})"
    )
    parser.add_argument("--split", choices=("dev", "test"), help="score only the pages of this split")
    parser.add_argument("--errors", action="store_true", help="also list each field ours gets wrong")
    parser.add_argument(
        "--changes",
        action="store_true",
        help="with --baseline-ref: list every field that differs from the baseline, scored or not",
    )
    parser.add_argument("--json", action="store_true", help="print the report as JSON")
    args = parser.parse_args()
    if args.changes and not args.baseline_ref:
        parser.error("--changes compares with a baseline: give --baseline-ref REF as well")
    logging.getLogger("trafilatura").setLevel(logging.ERROR)
    report = measure(args)
    if args.json:
        print(json.dumps(report, indent=2, default=_plain))
    else:
        print_report(report)
        if args.errors:
            print_errors(report["errors"])
        if args.changes:
            print_changes(report["changes"])


def _plain(value: Any) -> Any:
    return str(value) if isinstance(value, Decimal) else list(value)


if __name__ == "__main__":
    main()
