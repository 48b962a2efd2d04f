"""Build the real-page article dataset (``articles.jsonl.xz``) from checkouts of its sources.

A maintainer's script, run once when the dataset changes; the benchmark reads the committed files and
never needs these checkouts. Each source is a git checkout (bare or not) given on the command line:

    .venv/bin/python benchmarks/data/build_dataset.py \
        --readability PATH/TO/mozilla/readability --trafilatura PATH/TO/adbar/trafilatura

Sources (both Apache-2.0; see ``benchmarks/data/README.md``):

- mozilla/readability ``test/test-pages/*``: ``source.html`` and the curated ``expected.html`` article
  (the full reference body), plus ``expected-metadata.json`` (title, byline). Pages made to test one
  parser feature (small synthetic HTML) are left out.
- adbar/trafilatura ``tests/evaldata.json``: real pages from news sites, blogs and institutions, each
  with "with" segments that belong to the main text and "without" segments (boilerplate) that do not.

Deliberately **not** used: scrapinghub's article-extraction-benchmark and product-extraction-benchmark
and every collection that bundles them (e.g. the combined web-content-extraction benchmark, whose
"scrapinghub" subset is that benchmark): they are the held-out test of this project.

Every page gets a split, ``dev`` or ``test``, from a hash of its *site* (registered host), so a site
never appears in both: tuning on dev cannot learn a test site's template.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import lzma
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

import lxml.html

from dualplane.core.web.charset import detect_charset

HERE = Path(__file__).resolve().parent
TEST_SHARE = 4  # of 10 hash buckets: about 40% of the sites are test sites
MIN_SOURCE_BYTES = 15_000  # smaller readability pages are synthetic unit-test pages
MAX_SOURCE_BYTES = 1_500_000  # keeps the committed dataset compact; larger pages are rare outliers
BLOCKS = frozenset(
    {"p", "div", "li", "ul", "ol", "dl", "dt", "dd", "tr", "table", "section", "article", "header", "footer",
     "h1", "h2", "h3", "h4", "h5", "h6", "br", "blockquote", "pre", "figure", "figcaption", "main", "aside"}
)  # fmt: skip


def split_of(url: str) -> str:
    """``test`` for about 40% of sites, else ``dev``, by a stable hash of the site's host."""
    host = (urlsplit(url).hostname or url).lower().removeprefix("www.")
    bucket = int(hashlib.sha256(host.encode()).hexdigest(), 16) % 10
    return "test" if bucket < TEST_SHARE else "dev"


def git_show(repo: Path, path: str) -> bytes:
    return subprocess.run(
        ["git", "-C", str(repo), "show", f"HEAD:{path}"], check=True, capture_output=True
    ).stdout


def git_ls(repo: Path, path: str) -> list[str]:
    out = subprocess.run(
        ["git", "-C", str(repo), "ls-tree", "--name-only", f"HEAD:{path}"],
        check=True, capture_output=True, text=True,
    ).stdout  # fmt: skip
    return out.split()


def html_text(html: str) -> str:
    """The visible text of an HTML fragment, one line per block element."""
    tree = lxml.html.fromstring(html)
    for node in tree.iter():
        if isinstance(node.tag, str) and node.tag in BLOCKS:
            node.tail = "\n" + (node.tail or "")
    lines = (" ".join(line.split()) for line in tree.text_content().splitlines())
    return "\n".join(line for line in lines if line)


def decoded(source: bytes) -> str:
    """The page's text: UTF-8 when the file is valid UTF-8, else the charset it declares (undeclared:
    cp1252), as a fetched page is decoded. Decoding everything as UTF-8 turned the pages of 22 sites in
    ISO-8859-1, cp1252, ISO-8859-2 or GBK into replacement characters, for every system scored alike.
    Valid UTF-8 comes first because saved test pages are often re-encoded without their ``<meta
    charset>`` being changed (readability's ``qq`` is UTF-8 but declares GB2312)."""
    try:
        return source.decode("utf-8")
    except UnicodeDecodeError:
        return source.decode(detect_charset(None, source), errors="replace")


def readability_pages(repo: Path) -> Iterator[dict[str, Any]]:
    base = "test/test-pages"
    for name in git_ls(repo, base):
        source = git_show(repo, f"{base}/{name}/source.html")
        if not MIN_SOURCE_BYTES <= len(source) <= MAX_SOURCE_BYTES:
            continue
        expected = git_show(repo, f"{base}/{name}/expected.html").decode("utf-8")
        meta = json.loads(git_show(repo, f"{base}/{name}/expected-metadata.json"))
        url = f"http://fakehost/{name}/"  # readability's tests resolve links against a fake host too
        yield {
            "id": f"readability/{name}",
            "source": "mozilla/readability",
            "url": url,
            "split": split_of(f"http://{name.split('-')[0]}.example/"),  # the site is the name's stem
            "html": decoded(source),
            "truth": {"body": html_text(expected), "title": meta.get("title"), "author": meta.get("byline")},
        }


def trafilatura_pages(repo: Path) -> Iterator[dict[str, Any]]:
    data = json.loads(git_show(repo, "tests/evaldata.json"))
    for url, item in sorted(data.items()):
        source = _trafilatura_file(repo, item["file"])
        if source is None or len(source) > MAX_SOURCE_BYTES:
            continue
        yield {
            "id": f"trafilatura/{item['file']}",
            "source": "adbar/trafilatura",
            "url": url,
            "split": split_of(url),
            "html": decoded(source),
            "truth": {
                "with": item["with"],
                "without": item["without"],
                "title": item.get("title") or None,
                "author": item.get("author") or None,
                "date": item.get("date") or None,
            },
        }


def _trafilatura_file(repo: Path, name: str) -> bytes | None:
    for folder in ("tests/cache", "tests/eval"):
        try:
            return git_show(repo, f"{folder}/{name}")
        except subprocess.CalledProcessError:
            continue
    return None


def write(path: Path, records: list[dict[str, Any]]) -> None:
    lines = "".join(json.dumps(record, ensure_ascii=False, sort_keys=True) + "\n" for record in records)
    path.write_bytes(lzma.compress(lines.encode("utf-8"), preset=9 | lzma.PRESET_EXTREME))
    print(f"{path.name}: {len(records)} pages, {path.stat().st_size / 1e6:.1f} MB")


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--readability", type=Path, required=True, help="a mozilla/readability checkout")
    parser.add_argument("--trafilatura", type=Path, required=True, help="an adbar/trafilatura checkout")
    args = parser.parse_args()
    articles = [*readability_pages(args.readability), *trafilatura_pages(args.trafilatura)]
    write(HERE / "articles.jsonl.xz", articles)
    print({split: sum(page["split"] == split for page in articles) for split in ("dev", "test")})


if __name__ == "__main__":
    main()
