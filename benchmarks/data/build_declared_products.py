"""Build the declared-label product pages: shop pages saved in public repositories, labelled by their markup.

Kept out of this repository (the sources state no licence, or none that covers copying their pages), so
each maintainer builds the file from checkouts of the sources and the benchmark reads it when present:

    .venv/bin/python benchmarks/data/build_declared_products.py \
        --fathom-products PATH --smart-image-extraction PATH [--out FILE]

Each ``PATH`` is a git checkout (bare or not) of the repository named in ``SOURCES``, read at the commit
pinned there. ``FILE`` defaults to ``DECLARED`` (outside the work tree), which
``product_generalization.py`` reads as its ``declared`` group.

A page is kept when it declares one product (or none) and its label has at least a price, an item
number or a stock state: the declaration (``declared_labels.py``, extruct only: nothing of
``data_plane.extract``) is its label (``truth``), and the benchmark scores the extractor on the page as
published and on a copy without the markup. Its URL is the page's canonical link or ``og:url`` (a
site's relative or scheme-less one made absolute with the host in ``HOSTS``), else ``HOSTS``' host.

fathom-products also marks, by hand, the element that shows each page's price (``expected-price.html``):
its text is kept as ``shown_price``, and the one amount it shows (not a range, a "from" or a per-unit
price) is the label's price, whether or not the page declares one (a shown price wins, as in the hand
labels): fathom-products' pages without any declaration are labelled so too.
"""

from __future__ import annotations

import argparse
import json
import lzma
import re
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urljoin

from build_dataset import decoded, split_of
from build_products import canonical
from declared_labels import declared_label

DECLARED = Path.home() / ".cache" / "dualplane" / "declared_products.jsonl.xz"
SOURCES = {
    "fathom-products": (
        "swathiiyer2/fathom-products",
        "b00f058393552e1ffb7d4dd38b36057bafe9781d",
        r"^product_classification_(?:test|training)_data/[^/]+/source\.html$",
    ),
    "smart-image-extraction": (
        "aphuongle95/SmartImageExtractionEcommerce",
        "d1ea89e3239e50e1d2c52caf00a365f1476f8394",
        r"^image_extract_files/[^/]+(?<!_clean)\.html$",
    ),
}
"""Source name: repository, commit, and which of its files are saved shop pages."""
HOSTS = {
    "fathom-products/walmart": "www.walmart.com",
    "fathom-products/dhgate": "www.dhgate.com",
    "fathom-products/lazyboy": "www.la-z-boy.com",
    "fathom-products/gap": "www.gap.com",
    "fathom-products/healthypets": "www.healthypets.com",
    "smart-image-extraction/flipkart": "www.flipkart.com",
    "smart-image-extraction/zalando": "en.zalando.de",
}  # fmt: skip
"""Pages whose own URL is missing or relative: the host their links and the source's file name give."""
MARKING_FAULTS = frozenset({"fathom-products/uniqlo"})
"""Marked price elements that are not the price: uniqlo.com's reads "1.90" (a fragment of "$39.90")."""


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def _files(repo: Path, commit: str, pattern: str) -> list[str]:
    names = _git(repo, "ls-tree", "-r", "--name-only", commit).decode("utf-8").splitlines()
    return sorted(name for name in names if re.search(pattern, name))


def _name(source: str, path: str) -> str:
    if source == "fathom-products":
        return path.rsplit("/", 2)[-2]
    return path.rsplit("/", 1)[-1].removesuffix(".html")


def _url(page_id: str, html: str) -> str | None:
    found = canonical(html)
    if found is None:
        match = re.search(r"<link[^>]+rel=[\"']canonical[\"'][^>]*href=[\"']([^\"']+)", html)
        found = match.group(1) if match else None
    host = HOSTS.get(page_id)
    if found and found.startswith("//"):
        return "https:" + found
    if found and found.startswith("http"):
        return found
    if host:
        return urljoin(f"https://{host}/", found or "")
    if found and found.startswith("www."):
        return "http://" + found
    return None


def _shown_price(repo: Path, commit: str, path: str) -> str | None:
    """fathom-products' hand-marked price element's text, if the page has one."""
    name = path.rsplit("/", 1)[0] + "/expected-price.html"
    try:
        html = decoded(_git(repo, "show", f"{commit}:{name}"))
    except subprocess.CalledProcessError:
        return None
    import lxml.html  # noqa: PLC0415

    # the parts joined by spaces, as a reader sees them apart: "$ 31 57" with the cents in a <sup>
    text = " ".join(" ".join(lxml.html.fromstring(html).itertext()).split()) if html.strip() else ""
    return text or None


_DOLLARS = re.compile(r"\$\s*(\d[\d,]*)(?:\s*\.\s*(\d{2})|\s+(\d{2}))?(?![\d,])")
_PLAIN = re.compile(r"^\s*(\d[\d,]*(?:\.\d{2})?)\s*$")
_NOT_ONE_PRICE = re.compile(r"[\u2013+/]|\d\s*-\s*\$?\s*\d|from|\{\{", re.I)


def shown_amount(text: str) -> str | None:
    """The one amount a hand-marked price element shows, its parts joined ("$ 809. 97", "$ 5 49" with the
    cents in an element of their own); ``None`` for a range, a "from" price, a price per unit."""
    if _NOT_ONE_PRICE.search(text):
        return None
    match = _DOLLARS.search(text)
    if match:
        whole, cents = match.group(1).replace(",", ""), match.group(2) or match.group(3)
        return f"{whole}.{cents}" if cents else whole
    plain = _PLAIN.match(text)
    return plain.group(1).replace(",", "") if plain else None


def pages(checkouts: dict[str, Path]) -> Iterator[dict[str, Any]]:
    for source, (repository, commit, pattern) in SOURCES.items():
        repo = checkouts[source]
        for path in _files(repo, commit, pattern):
            page_id = f"{source}/{_name(source, path)}"
            try:
                html = decoded(_git(repo, "show", f"{commit}:{path}"))
            except subprocess.CalledProcessError:  # a file the snapshot lacks (4 MiB and over)
                continue
            url = _url(page_id, html)
            if not html.strip() or url is None:
                continue
            label = declared_label(html, url)
            if label is None:
                continue
            shown = _shown_price(repo, commit, path) if source == "fathom-products" else None
            amount = shown_amount(shown) if shown and page_id not in MARKING_FAULTS else None
            if amount is not None:  # what the page shows wins over what it declares, as in the hand labels
                label = {**label, "price": amount}
                if "currency" not in label and "$" in (shown or ""):
                    label["currency"] = "USD"  # fathom-products' shops are all US shops
            if not label.keys() & {"price", "sku", "availability"}:
                continue
            page = {
                "id": page_id,
                "source": f"{repository}@{commit[:7]}:{path}",
                "url": url,
                "split": split_of(url),
                "html": html,
                "truth": label,
            }
            if shown:
                page["shown_price"] = shown
            yield page


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    for source in SOURCES:
        parser.add_argument(f"--{source}", type=Path, required=True, help=f"checkout of {SOURCES[source][0]}")
    parser.add_argument("--out", type=Path, default=DECLARED, help=f"where to write (default {DECLARED})")
    args = parser.parse_args()
    checkouts = {source: getattr(args, source.replace("-", "_")) for source in SOURCES}
    built = list(pages(checkouts))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    with lzma.open(args.out, "wt", encoding="utf-8") as out:
        for page in built:
            out.write(json.dumps(page, ensure_ascii=False) + "\n")
    sites = {re.sub(r"^www\.", "", page["url"].split("/")[2]) for page in built}
    print(f"{len(built)} pages of {len(sites)} sites -> {args.out}")


if __name__ == "__main__":
    main()
