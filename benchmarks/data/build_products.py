"""Build the real product-page dataset (``products.jsonl.xz``) from checkouts of its sources.

A maintainer's script, run once when the dataset changes; the benchmark reads the committed files. Each
source is a git checkout (bare or not) given on the command line:

    .venv/bin/python benchmarks/data/build_products.py --wdc-page PATH --htmldate PATH \
        --metascraper PATH --extruct PATH --portia PATH --scrapely PATH --price-parser PATH

Every page listed in ``PAGES`` is taken whole (the HTML as the source repository stores it), with the
URL its own canonical link or the source names; its labels live in ``product_labels.json`` under the
same id (see ``README.md`` for the labelling rules and the licences). Splits are by site, with the
same hash as the article pages (``build_dataset.split_of``). Files are decoded as the article pages
are (``build_dataset.decoded``: UTF-8 when valid, else their declared charset): decoding scrapely's two
cp1252 icone pages as UTF-8 had put U+FFFD where their pound signs were.

``price_strings.jsonl.xz`` holds the price texts of scrapinghub/price-parser's tests (``price_raw``,
taken from real pages) with the amount each states (``None``: no price), split by a hash of the text.
"""

from __future__ import annotations

import argparse
import ast
import hashlib
import json
import lzma
import subprocess
from pathlib import Path
from typing import Any

from build_dataset import decoded, split_of

HERE = Path(__file__).resolve().parent
WDC_SAMPLE_BLOB = "dbb7d6150efbdf733e2140ff74b79909cf20be55"
"""``largescaleproductcorpus/samples/sample_html.json`` of wbsg-uni-mannheim/wdc-page (later removed)."""

# id -> (source, path in that source's repository, URL when the page does not carry its own)
PAGES: dict[str, tuple[str, str, str | None]] = {
    "wdc/pmhomegoods.com": ("wdc", "0", None),
    "wdc/travelingvarietystore.com": ("wdc", "1", None),
    "wdc/edel-optics.hu": ("wdc", "2", None),
    "wdc/umikulasedacickeho.cz": ("wdc", "3", None),
    "wdc/exedigitaltuning.fr": ("wdc", "4", None),
    "wdc/lyst.com": ("wdc", "5", None),
    "wdc/notino.cz": ("wdc", "6", None),
    "wdc/pamono.ch": ("wdc", "7", None),
    "wdc/boohoo.com.anna": ("wdc", "8", None),
    "wdc/boohoo.com.sarah": ("wdc", "9", None),
    "htmldate/parallels.com": ("htmldate", "tests/eval/parallels.com.desktop.html", None),
    "htmldate/reiterrevue.de": ("htmldate", "tests/eval/reiterrevue.de-heulage.html", None),
    "htmldate/austria.info": ("htmldate", "tests/cache/austria.info.html", None),
    "metascraper/amazon.co.uk": (
        "metascraper", "packages/metascraper-amazon/test/fixtures/amazon-co-uk/product-url.html", None
    ),
    "metascraper/amazon.com.relay": (
        "metascraper", "packages/metascraper-amazon/test/fixtures/amazon-com/ansi-url.html", None
    ),
    "metascraper/amazon.com.ebook": (
        "metascraper", "packages/metascraper-amazon/test/fixtures/amazon-com/product-url.html", None
    ),
    "metascraper/amazon.es": (
        "metascraper", "packages/metascraper-amazon/test/fixtures/amazon-es/product-url.html", None
    ),
    "extruct/fye.com": ("extruct", "tests/samples/misc/opengraph_ns_product_test.html", None),
    "extruct/monsterpetsupplies.co.uk": (
        "extruct", "tests/samples/websites/microdata-with-description.html", None
    ),
    "portia/demo.cs-cart.com": ("portia", "slybot/slybot/tests/data/templates/cs-cart.json", None),
    "portia/seedsofchange.com.PS14165": (
        "portia", "slybot/slybot/tests/data/SampleProject/spiders/seedsofchange.json#1", None
    ),
    "portia/seedsofchange.com.PS15978": (
        "portia", "slybot/slybot/tests/data/SampleProject/spiders/seedsofchange2.json#0", None
    ),
    "scrapely/retrosixty.co.uk": (
        "scrapely", "tests/samples/samples_htmlpage_0.html", "http://www.retrosixty.co.uk/lighting/"
    ),
    "scrapely/play.com": (
        "scrapely", "tests/samples/samples_htmlpage_1.html", "http://www.play.com/Electronics/Product.html"
    ),
    "scrapely/tempur.co.uk": (
        "scrapely", "tests/samples/samples_pageparsing_0.html", "http://www.tempur.co.uk/mattresses/"
    ),
    "scrapely/icone.co.uk.copper": (
        "scrapely", "tests/samples/samples_scraper_loadstore_0.html", "http://www.icone.co.uk/copper-shade"
    ),
    "scrapely/icone.co.uk.mesmeri": (
        "scrapely", "tests/samples/samples_scraper_loadstore_1.html", "http://www.icone.co.uk/mesmeri"
    ),
}  # fmt: skip


def git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def page_source(repos: dict[str, Path], source: str, path: str) -> tuple[str, str | None]:
    """The HTML of one listed page and the URL its source records (``None`` when it records none)."""
    if source == "wdc":
        lines = git(repos["wdc"], "cat-file", "-p", WDC_SAMPLE_BLOB).decode("utf-8").splitlines()
        item = json.loads([line for line in lines if line.strip()][int(path)])
        return item["content"], item["url"]
    if source == "portia":
        name, _, index = path.partition("#")
        data = json.loads(git(repos["portia"], "show", f"HEAD:{name}"))
        template = data["templates"][int(index)] if index else data
        return template["original_body"], template["url"]
    return decoded(git(repos[source], "show", f"HEAD:{path}")), None


def canonical(html: str) -> str | None:
    import lxml.html  # noqa: PLC0415

    tree = lxml.html.fromstring(html)
    for xpath in ("//link[@rel='canonical']/@href", "//meta[@property='og:url']/@content"):
        found = tree.xpath(xpath)
        if found and str(found[0]).startswith("http"):
            return str(found[0])
    return None


def pages(repos: dict[str, Path]) -> list[dict[str, Any]]:
    built = []
    for page_id, (source, path, url) in PAGES.items():
        html, recorded = page_source(repos, source, path)
        page_url = recorded or canonical(html) or url
        assert page_url, f"{page_id} needs a URL"
        built.append(
            {
                "id": page_id,
                "source": f"{source}:{path}",
                "url": page_url,
                "split": split_of(page_url),
                "html": html,
            }
        )
    return built


PRICE_TESTS = "tests/test_price_parsing.py"
PRICE_LISTS = frozenset(
    {"PRICE_PARSING_EXAMPLES", "PRICE_PARSING_EXAMPLES_NO_PRICE", "PRICE_PARSING_EXAMPLES_NO_CURRENCY",
     "PRICE_PARSING_EXAMPLES_XFAIL"}
)  # fmt: skip
"""The lists its docstring says come from a random sample of pages of different domains (the others were
written by hand for bugs, new features and currencies, or pass the decimal separator as a hint)."""


def price_strings(repo: Path) -> list[dict[str, Any]]:
    """``{"id", "text", "amount", "split"}`` for every example with a price text in price-parser's tests."""
    module = ast.parse(git(repo, "show", f"HEAD:{PRICE_TESTS}").decode("utf-8"))
    found: dict[str, dict[str, Any]] = {}
    for statement in module.body:
        if not isinstance(statement, ast.Assign) or not isinstance(statement.value, ast.List):
            continue
        name = getattr(statement.targets[0], "id", "")
        if name not in PRICE_LISTS:
            continue
        for call in statement.value.elts:
            if isinstance(call, ast.Call) and len(call.args) >= 5:
                text, amount = _literal(call.args[1]), _literal(call.args[4])
                if isinstance(text, str) and text not in found:
                    found[text] = {"id": f"price-parser/{len(found)}", "text": text, "amount": amount}
    for item in found.values():
        item["split"] = (
            "test" if int(hashlib.sha256(item["text"].encode()).hexdigest(), 16) % 10 < 4 else "dev"
        )
    return list(found.values())


def _literal(node: ast.expr) -> Any:
    if isinstance(node, ast.Call):  # Decimal("1.11")
        return str(_literal(node.args[0]))
    value = ast.literal_eval(node)
    return None if value is None else str(value) if isinstance(value, int | float) else value


def write_jsonl(name: str, items: list[dict[str, Any]]) -> None:
    with lzma.open(HERE / name, "wt", encoding="utf-8", preset=9) as out:
        for item in items:
            out.write(json.dumps(item, ensure_ascii=False) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for name in ("wdc-page", "htmldate", "metascraper", "extruct", "portia", "scrapely", "price-parser"):
        parser.add_argument(f"--{name}", type=Path, required=True)
    args = parser.parse_args()
    repos = {
        "wdc": args.wdc_page, "htmldate": args.htmldate, "metascraper": args.metascraper,
        "extruct": args.extruct, "portia": args.portia, "scrapely": args.scrapely,
    }  # fmt: skip
    built = pages(repos)
    write_jsonl("products.jsonl.xz", built)
    strings = price_strings(args.price_parser)
    write_jsonl("price_strings.jsonl.xz", strings)
    for name, items in (("product pages", built), ("price strings", strings)):
        counts = {split: sum(item["split"] == split for item in items) for split in ("dev", "test")}
        print(f"wrote {len(items)} {name}: {counts}")


if __name__ == "__main__":
    main()
