"""Build ``not_products.jsonl.xz``: real pages that are not product pages, one per site, from many sites.

A maintainer's script, run once when the file changes; the benchmark reads the committed file:

    .venv/bin/python benchmarks/data/build_not_products.py --recipe-scrapers PATH [--sites 250]

``PATH`` is a git checkout (bare or not) of hhursev/recipe-scrapers (MIT), whose ``tests/test_data/HOST/``
holds recipe pages saved from each site it supports, with the page's canonical URL in the JSON beside
it. Recipe pages are what a product extractor must leave alone: prices in running text ("a $4 bottle"),
shop widgets and affiliate boxes, "buy" links, all on pages that sell nothing themselves.

Sites are taken in the order of a hash of their host (no choice by content), the first page of each,
skipping pages over ``MAX_BYTES`` (to keep the file small) and pages that declare a schema.org Product
with a price or stock state (``declared_labels.py``): those would be product pages by their own
statement, not negatives. Splits are by site, as for every other page (``build_dataset.split_of``).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import subprocess
from pathlib import Path

from build_dataset import decoded, split_of
from declared_labels import declared_label

HERE = Path(__file__).resolve().parent
MAX_BYTES = 400_000
SOURCE = "recipe-scrapers"


def _git(repo: Path, *args: str) -> bytes:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True).stdout


def build(repo: Path, sites: int) -> list[dict[str, str]]:
    commit = _git(repo, "rev-parse", "HEAD").decode().strip()
    listing = _git(repo, "ls-tree", "-r", "-l", "HEAD", "tests/test_data").decode().splitlines()
    by_host: dict[str, list[tuple[str, int]]] = {}
    for line in listing:
        meta, path = line.split("\t", 1)
        # tests/test_data/HOST/NAME.testhtml; a size of "-" or "BAD" is a file not in the checkout
        if path.endswith(".testhtml") and path.count("/") == 3 and meta.split()[3].isdigit():
            by_host.setdefault(path.split("/")[2], []).append((path, int(meta.split()[3])))
    hosts = sorted(by_host, key=lambda host: hashlib.sha256(host.encode()).hexdigest())
    pages: list[dict[str, str]] = []
    for host in hosts:
        path, size = sorted(by_host[host])[0]
        if size > MAX_BYTES or host.endswith(".example"):  # recipe-scrapers.example: its own made-up page
            continue
        expected = json.loads(_git(repo, "show", f"HEAD:{path.removesuffix('.testhtml')}.json"))
        url = expected.get("canonical_url") or f"https://{host}/"
        html = decoded(_git(repo, "show", f"HEAD:{path}"))
        if (declared_label(html, url) or {}).keys() & {"price", "availability"}:
            continue
        pages.append(
            {
                "id": f"{SOURCE}/{host}",
                "source": f"{SOURCE}:{commit}:{path}",
                "licence": "MIT (the repository; the page remains its publisher's)",
                "url": url,
                "split": split_of(url),
                "html": html,
            }
        )
        if len(pages) == sites:
            break
    return pages


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--recipe-scrapers", type=Path, required=True, help="checkout of hhursev/recipe-scrapers"
    )
    parser.add_argument("--sites", type=int, default=250, help="pages to take, one per site (default 250)")
    args = parser.parse_args()
    pages = build(args.recipe_scrapers, args.sites)
    with lzma.open(HERE / "not_products.jsonl.xz", "wt", encoding="utf-8", preset=9) as out:
        for page in pages:
            out.write(json.dumps(page, ensure_ascii=False) + "\n")
    print(f"{len(pages)} pages of {len({p['id'] for p in pages})} sites written to not_products.jsonl.xz")


if __name__ == "__main__":
    main()
