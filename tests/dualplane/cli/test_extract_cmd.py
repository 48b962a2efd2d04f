"""``dualplane extract`` on saved pages: plain and gzipped files, URL maps, JSON output, per-file errors."""

from __future__ import annotations

import gzip
import json
from pathlib import Path

import pytest
import typer
from typer.testing import CliRunner

from dualplane import schemas
from dualplane.cli.extract_cmd import extract

pytestmark = pytest.mark.unit

# The command function on its own, so this test does not depend on how main.py registers it.
app = typer.Typer()
app.command()(extract)

PRODUCT = """<html lang="en"><head><title>Oak Lamp</title><link rel="canonical" href="/p/oak-lamp">
<script type="application/ld+json">{"@type": "Product", "name": "Oak Lamp", "sku": "OAK-1",
"offers": {"price": "1299.00", "priceCurrency": "EUR", "availability": "https://schema.org/InStock"}}</script>
</head><body><h1>Oak Lamp</h1><a href="/cart">Basket</a></body></html>"""

ARTICLE = """<html lang="en"><head><title>Night trains return</title>
<meta property="og:type" content="article">
<meta name="author" content="Ann Lee">
<meta property="article:published_time" content="2024-03-05T08:30:00Z"></head>
<body><article><h1>Night trains return</h1>
<p>Night trains are back on the main lines this winter, with sleeper
cars between the capital and the coast.</p></article></body></html>"""


@pytest.fixture
def saved(tmp_path: Path) -> dict[str, Path]:
    (tmp_path / "lamp.html").write_text(PRODUCT, encoding="utf-8")
    (tmp_path / "trains.html.gz").write_bytes(gzip.compress(ARTICLE.encode()))
    (tmp_path / "broken.gz").write_bytes(b"\x1f\x8b\x08\x00 not really gzip")
    (tmp_path / "map.json").write_text(
        json.dumps(
            {"lamp.html": "https://shop.example/p/oak-lamp?ref=x", "trains.html.gz": "https://news.example/t"}
        )
    )
    return {path.name: path for path in tmp_path.iterdir()}


def run(*args: object) -> tuple[int, str, str]:
    result = CliRunner().invoke(app, [str(arg) for arg in args])
    return result.exit_code, result.stdout, result.stderr


def test_json_lines_for_several_files_with_a_url_map(saved: dict[str, Path]) -> None:
    code, out, err = run(saved["lamp.html"], saved["trains.html.gz"], "--url-map", saved["map.json"])

    assert code == 0, err
    lamp, trains = (json.loads(line) for line in out.splitlines())
    assert lamp["url"] == "https://shop.example/p/oak-lamp?ref=x"
    assert lamp["canonical_url"] == "https://shop.example/p/oak-lamp"
    assert lamp["product"]["price"] == "1299.0000" and lamp["product"]["currency"] == "EUR"
    assert trains["article"]["authors"] == ["Ann Lee"]
    assert trains["article"]["published_at"] == "2024-03-05T08:30:00+00:00"
    assert "body" not in trains and trains["domain"] == "news.example"
    assert "Oak Lamp" in err and "1299.0000 EUR" in err and "in_stock" in err and "Ann Lee" in err


def test_json_prints_one_array_and_the_schema_version_applies(saved: dict[str, Path]) -> None:
    code, out, _err = run(
        saved["lamp.html"], "--url", "https://shop.example/p/oak-lamp", "--json", "--schema-version", 2
    )

    assert code == 0
    (record,) = json.loads(out)
    assert record["schema_version"] == 2 and "word_count" in record and "gtin" in record["product"]


def test_by_default_it_writes_the_latest_version_as_the_service_does(saved: dict[str, Path]) -> None:
    code, out, _err = run(saved["lamp.html"], "--url", "https://shop.example/p/oak-lamp", "--json")

    assert code == 0
    (record,) = json.loads(out)
    assert record["schema_version"] == schemas.latest_version("page_record") == 3


def test_without_a_url_the_file_url_is_used(saved: dict[str, Path]) -> None:
    code, out, _err = run(saved["lamp.html"])

    assert code == 0
    assert json.loads(out)["url"] == saved["lamp.html"].resolve().as_uri()


def test_a_failing_file_is_reported_and_the_others_still_printed(saved: dict[str, Path]) -> None:
    code, out, err = run(saved["broken.gz"], saved["lamp.html"], "nope.html")

    assert code == 1
    assert [json.loads(line)["title"] for line in out.splitlines()] == ["Oak Lamp"]
    assert "broken.gz starts like gzip but does not decompress" in err
    assert "cannot read nope.html" in err and "2 of 3 file(s) failed" in err


@pytest.mark.parametrize(
    "extra",
    [
        ["--url", "https://a.example/", "--url-map", "map.json"],
        ["--schema-version", "9"],
        ["--url", "https://a.example/"],
    ],
)
def test_usage_errors_exit_with_code_2(saved: dict[str, Path], extra: list[str]) -> None:
    extra = [str(saved["map.json"]) if arg == "map.json" else arg for arg in extra]

    code, out, _err = run(saved["lamp.html"], saved["trains.html.gz"], *extra)

    assert code == 2 and out == ""
