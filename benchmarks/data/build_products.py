"""Build the real product-page dataset (``products.jsonl.xz``) from checkouts of its sources.

A maintainer's script, run once when the dataset changes; the benchmark reads the committed files. Each
source is a git checkout (bare or not) given on the command line:

    .venv/bin/python benchmarks/data/build_products.py --wdc-page PATH --htmldate PATH \
        --metascraper PATH --extruct PATH --portia PATH --scrapely PATH --price-parser PATH \
        --metascraper-shopping PATH --formasaurus formasaurus-0.10.0.tar.gz --onebox PATH \
        --any23 PATH --postlight PATH --brick-stock-checker PATH \
        --fletcher PATH

``--formasaurus`` is not a checkout but Formasaurus' source distribution from PyPI (``pip download
--no-binary :all: --no-deps formasaurus==0.10.0``), which ships the pages its form classifier was trained on
(``formasaurus/data/html/N.html``) with the URL each was saved from (``formasaurus/data/index.json``).

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
import re
import subprocess
import tarfile
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
    "htmldate/beltz.de": ("htmldate", "tests/cache/beltz.de.12wege.html", None),
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
    "formasaurus/1000bulbs.com": ("formasaurus", "365", None),
    "formasaurus/1000bulbs.com.home": ("formasaurus", "361", None),
    "formasaurus/1000bulbs.com.search": ("formasaurus", "364", None),
    "formasaurus/activemobility.co.uk": ("formasaurus", "374", None),
    "formasaurus/bradfordexchange.com": ("formasaurus", "416", None),
    "formasaurus/bradfordexchange.com.disney": ("formasaurus", "415", None),
    "formasaurus/bradfordexchange.com.home": ("formasaurus", "414", None),
    "formasaurus/brooklynbrewshop.com": ("formasaurus", "27", None),
    "formasaurus/brooklynbrewshop.com.kits": ("formasaurus", "26", None),
    "formasaurus/cafepress.com": ("formasaurus", "437", None),
    "formasaurus/calendars.com": ("formasaurus", "442", None),
    "formasaurus/calendars.com.puzzles": ("formasaurus", "441", None),
    "formasaurus/campingworld.com": ("formasaurus", "447", None),
    "formasaurus/campmor.com": ("formasaurus", "455", None),
    "formasaurus/carseatcover.com": ("formasaurus", "45", None),
    "formasaurus/cheesehouse.com": ("formasaurus", "466", None),
    "formasaurus/christmascentral.com": ("formasaurus", "474", None),
    "formasaurus/ctshirts.co.uk": ("formasaurus", "510", None),
    "formasaurus/davidcareyinc.com": ("formasaurus", "514", None),
    "formasaurus/dragees-massardier.fr.coccinelle": ("formasaurus", "535", None),
    "formasaurus/dragees-massardier.fr.croissant": ("formasaurus", "533", None),
    "formasaurus/firemountaingems.com": ("formasaurus", "573", None),
    "formasaurus/focalprice.com": ("formasaurus", "575", None),
    "formasaurus/focalprice.com.home": ("formasaurus", "574", None),
    "formasaurus/galeriajubilerska.pl": ("formasaurus", "137", None),
    "formasaurus/gamexchange.co.uk": ("formasaurus", "580", None),
    "formasaurus/globalsugarart.com": ("formasaurus", "596", None),
    "formasaurus/grasscity.com": ("formasaurus", "600", None),
    "formasaurus/greatmusicproductsonline.com": ("formasaurus", "605", None),
    "formasaurus/gsm-komplekt.com": ("formasaurus", "146", None),
    "formasaurus/heatshieldstore.com": ("formasaurus", "613", None),
    "formasaurus/instrumentclinicusa.com": ("formasaurus", "172", None),
    "formasaurus/jacamo.co.uk": ("formasaurus", "642", None),
    "formasaurus/jacamo.co.uk.new": ("formasaurus", "643", None),
    "formasaurus/jpc.de": ("formasaurus", "651", None),
    "formasaurus/juno.co.uk": ("formasaurus", "655", None),
    "formasaurus/juno.co.uk.stands": ("formasaurus", "654", None),
    "formasaurus/lanskybros.com": ("formasaurus", "671", None),
    "formasaurus/luckybrand.com": ("formasaurus", "684", None),
    "formasaurus/luthimate.fr": ("formasaurus", "690", None),
    "formasaurus/luthimate.fr.home": ("formasaurus", "687", None),
    "formasaurus/michelson.pl": ("formasaurus", "704", None),
    "formasaurus/micromania.fr": ("formasaurus", "709", None),
    "formasaurus/mindfactory.de": ("formasaurus", "714", None),
    "formasaurus/molypoly.ru": ("formasaurus", "206", None),
    "formasaurus/mozzarelle-gioia.it": ("formasaurus", "731", None),
    "formasaurus/musichousebari.it": ("formasaurus", "736", None),
    "formasaurus/musikdreiklang.de": ("formasaurus", "738", None),
    "formasaurus/muzdom.ru": ("formasaurus", "748", None),
    "formasaurus/mypapershop.com": ("formasaurus", "754", None),
    "formasaurus/mypapershop.com.towels": ("formasaurus", "753", None),
    "formasaurus/nahodsa.sk": ("formasaurus", "218", None),
    "formasaurus/obchod.hsflamingo.cz": ("formasaurus", "224", None),
    "formasaurus/olcsobbat.hu": ("formasaurus", "770", None),
    "formasaurus/pandahall.com": ("formasaurus", "786", None),
    "formasaurus/pandahall.com.beads": ("formasaurus", "785", None),
    "formasaurus/perfumemart.com": ("formasaurus", "790", None),
    "formasaurus/perfumemart.com.home": ("formasaurus", "788", None),
    "formasaurus/pharao24.de": ("formasaurus", "797", None),
    "formasaurus/radioshack.com": ("formasaurus", "812", None),
    "formasaurus/roller.de": ("formasaurus", "827", None),
    "formasaurus/sales.starcitygames.com": ("formasaurus", "268", None),
    "formasaurus/shop.dunkindonuts.com": ("formasaurus", "280", None),
    "formasaurus/sketchhunt.com": ("formasaurus", "287", None),
    "formasaurus/spinkat.ru.788cxi": ("formasaurus", "853", None),
    "formasaurus/spinkat.ru.terrova": ("formasaurus", "854", None),
    "formasaurus/stylelocker.co.uk": ("formasaurus", "307", None),
    "formasaurus/stylelocker.co.uk.home": ("formasaurus", "304", None),
    "formasaurus/thebookpeople.co.uk": ("formasaurus", "878", None),
    "formasaurus/thebookpeople.co.uk.mrmen": ("formasaurus", "880", None),
    "formasaurus/thingsremembered.com": ("formasaurus", "885", None),
    "formasaurus/tyreleader.co.uk": ("formasaurus", "896", None),
    "formasaurus/well.ca": ("formasaurus", "358", None),
    "formasaurus/well.ca.home": ("formasaurus", "352", None),
    "formasaurus/well.ca.shampoo": ("formasaurus", "357", None),
    "formasaurus/wilsonsleather.com": ("formasaurus", "909", None),
    "formasaurus/woolworths.co.uk.home": ("formasaurus", "913", None),
    "formasaurus/worldsoccershop.com": ("formasaurus", "918", None),
    "metascraper-shopping/amazon.com.gorilla": (
        "metascraper-shopping", "test/fixtures/amazon-gorilla.html", None
    ),
    "metascraper-shopping/amazon.com.sconce": ("metascraper-shopping", "test/fixtures/amazon.html", None),
    "metascraper-shopping/costco.com": ("metascraper-shopping", "test/fixtures/costco.html", None),
    "metascraper-shopping/etsy.com": ("metascraper-shopping", "test/fixtures/etsy.html", None),
    "metascraper-shopping/globalindustrial.com": (
        "metascraper-shopping", "test/fixtures/globalindustrial.html", None
    ),
    "metascraper-shopping/jossandmain.com": ("metascraper-shopping", "test/fixtures/jossandmain.html", None),
    "metascraper-shopping/overstock.com": ("metascraper-shopping", "test/fixtures/overstock.html", None),
    "metascraper-shopping/potterybarn.com": ("metascraper-shopping", "test/fixtures/potterybarn.html", None),
    "metascraper-shopping/rejuvenation.com": (
        "metascraper-shopping", "test/fixtures/rejuvenation.html",
        "https://www.rejuvenation.com/catalog/products/keystick-wall-sconce-aged-brass",
    ),
    "metascraper-shopping/wayfair.com": ("metascraper-shopping", "test/fixtures/wayfair.html", None),
    "any23/oreilly.com": (
        "any23", "test-resources/src/test/resources/html/rdfa/oreilly-invalid-datatype.html", None
    ),
    "postlight/bookwalker.jp": ("postlight", "fixtures/bookwalker.jp.html", None),
    "postlight/oreilly.co.jp": ("postlight", "fixtures/www.oreilly.co.jp.html", None),
    # tmock12/brick_stock_checker's fixtures, LEGO sets in and out of stock (2014); LEGO's own shop pages
    # carry no URL of theirs: the host is the one the pages link to, the path is the shop's pattern then
    "brick-stock-checker/amazon.com": ("brick-stock-checker", "spec/fixtures/amazon-is.html", None),
    "brick-stock-checker/target.com.death-star": (
        "brick-stock-checker", "spec/fixtures/target-is.html", None
    ),
    "brick-stock-checker/target.com.seaside-house": (
        "brick-stock-checker", "spec/fixtures/target-oos.html", None
    ),
    "brick-stock-checker/walmart.com.ecto-1": (
        "brick-stock-checker", "spec/fixtures/walmart-is.html",
        "http://www.walmart.com/ip/LEGO-Cuusoo-Ghostbusters-Ecto-1-21108/36611650",
    ),
    "brick-stock-checker/walmart.com.millennium-falcon": (
        "brick-stock-checker", "spec/fixtures/walmart-oos.html",
        "http://www.walmart.com/ip/LEGO-Star-Wars-Millennium-Falcon/16672557",
    ),
    "brick-stock-checker/shop.lego.com.death-star": (
        "brick-stock-checker", "spec/fixtures/lego-shop-is.html", "http://shop.lego.com/en-US/Death-Star-10188"
    ),
    "brick-stock-checker/shop.lego.com.tumbler": (
        "brick-stock-checker", "spec/fixtures/lego-shop-oos.html", "http://shop.lego.com/en-US/The-Tumbler-76023"
    ),
    "brick-stock-checker/shop.lego.com.sail-barge": (
        "brick-stock-checker", "spec/fixtures/lego-shop-call-to-check.html",
        "http://shop.lego.com/en-US/Jabba-s-Sail-Barge-75020",
    ),
    # hulihanapplications/fletcher's VCR cassettes (2012), the page in each recorded response
    "fletcher/etsy.com": ("fletcher", "Fletcher_Model_Etsy", None),
    "fletcher/ebay.com": ("fletcher", "Fletcher_Model_Ebay", None),
    # discourse/onebox's spec fixtures, each version from its history (blob ids: the files were replaced)
    "onebox/amazon.com.knit-noro.2013": ("onebox", "46b52d32283b4d18e13fe5b15626145d96e3c39d", None),
    "onebox/amazon.com.seven-languages.2015": ("onebox", "b7ea44a0e8c8e896e90761f28895aaa5d74d81b4", None),
    "onebox/amazon.com.seven-languages.2018": ("onebox", "42d25aece7b461ca12bf848248c0bfc73fd550ce", None),
    "onebox/amazon.com.seven-languages-ebook.2018": (
        "onebox", "68e327960e7b466e9a205c927a5a653c2f62b952", None
    ),
    "onebox/etsy.com.pillow.2017": ("onebox", "b25cf51dc1feae86124b1fff0ba2e38ead1dd073", None),
    "onebox/etsy.com.pillow-mobile.2017": ("onebox", "37526ae3601c82c1b9909845c6f581fe18ecc144", None),
    "onebox/etsy.com.pillow.2020": ("onebox", "663dd727a902936456da10b559ef0d406708f8f5", None),
}  # fmt: skip


def git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def page_source(repos: dict[str, Path], source: str, path: str) -> tuple[str, str | None]:
    """The HTML of one listed page and the URL its source records (``None`` when it records none)."""
    if source == "wdc":
        lines = git(repos["wdc"], "cat-file", "-p", WDC_SAMPLE_BLOB).decode("utf-8").splitlines()
        item = json.loads([line for line in lines if line.strip()][int(path)])
        return item["content"], item["url"]
    if source == "formasaurus":
        return formasaurus_page(repos["formasaurus"], path)
    if source == "fletcher":
        return fletcher_page(repos["fletcher"], path)
    if source == "onebox":  # a blob of the repository's history (fixtures were renamed and replaced)
        return decoded(git(repos["onebox"], "cat-file", "-p", path)), None
    if source == "portia":
        name, _, index = path.partition("#")
        data = json.loads(git(repos["portia"], "show", f"HEAD:{name}"))
        template = data["templates"][int(index)] if index else data
        return template["original_body"], template["url"]
    return decoded(git(repos[source], "show", f"HEAD:{path}")), None


FLETCHER_COMMIT = "0b8ef6f76a43677c2aa50ade97a33ccb57f97a11"
"""The commit of hulihanapplications/fletcher whose cassettes hold the pages (later ones were emptied)."""


def fletcher_page(repo: Path, model: str) -> tuple[str, str | None]:
    """The page a VCR cassette of fletcher recorded for ``model`` and the URL it was fetched from."""
    import yaml  # noqa: PLC0415 (only this source needs it)

    name = f"spec/vcr/{model}/parse/with_valid_data/should_return_correct_model_info.yml"
    cassette = yaml.safe_load(git(repo, "show", f"{FLETCHER_COMMIT}:{name}"))
    for interaction in cassette["http_interactions"]:
        if interaction["response"]["status"]["code"] == 200:  # the page after any redirect
            return interaction["response"]["body"]["string"], interaction["request"]["uri"]
    raise ValueError(f"{name} recorded no page")


def formasaurus_page(sdist: Path, number: str) -> tuple[str, str | None]:
    """Page ``number`` of Formasaurus' training pages and the URL its index records for it."""
    with tarfile.open(sdist) as archive:
        root = archive.getnames()[0].split("/")[0]

        def read(name: str) -> bytes:
            member = archive.extractfile(f"{root}/formasaurus/data/{name}")
            assert member, f"{sdist} has no formasaurus/data/{name}"
            return member.read()

        index = json.loads(read("index.json"))
        return decoded(read(f"html/{number}.html")), index[f"html/{number}.html"]["url"]


def canonical(html: str) -> str | None:
    import lxml.html  # noqa: PLC0415

    # lxml refuses a str that opens with an XML declaration (any23's XHTML+RDFa page)
    tree = lxml.html.fromstring(re.sub(r"^\s*<\?xml[^>]*\?>", "", html, count=1))
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
    names = ("wdc-page", "htmldate", "metascraper", "extruct", "portia", "scrapely", "price-parser",
             "metascraper-shopping", "formasaurus", "onebox", "any23", "postlight",
             "brick-stock-checker", "fletcher")  # fmt: skip
    for name in names:
        parser.add_argument(f"--{name}", type=Path, required=True)
    args = parser.parse_args()
    repos = {
        "wdc": args.wdc_page, "htmldate": args.htmldate, "metascraper": args.metascraper,
        "extruct": args.extruct, "portia": args.portia, "scrapely": args.scrapely,
        "metascraper-shopping": args.metascraper_shopping, "formasaurus": args.formasaurus,
        "onebox": args.onebox, "any23": args.any23, "postlight": args.postlight,
        "brick-stock-checker": args.brick_stock_checker, "fletcher": args.fletcher,
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
