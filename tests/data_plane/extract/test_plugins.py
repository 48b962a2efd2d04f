"""User-defined extractors: chosen per job or domain, their output in ``data``, named in extractor_version."""

from __future__ import annotations

import json
from collections.abc import Mapping
from datetime import UTC, datetime
from typing import Any

import pytest

from dualplane import schemas
from dualplane.data_plane.extract.exceptions import ExtractError, ExtractionFailed
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.plugins import Extractor, ExtractorChoice, PageView, load_extractor
from dualplane.data_plane.extract.record import Extraction, extract_record

pytestmark = pytest.mark.unit

HTML = b"""<html><head><title>Dune</title></head><body><h1>Dune</h1>
<div class="review"><span class="stars">5</span><p>A classic.</p></div>
<div class="review"><span class="stars">3</span><p>Long.</p></div></body></html>"""


class Reviews(Extractor):
    name = "reviews"
    version = "0.2.0"
    data_schema = "reviews/1"

    def extract(self, page: PageView) -> Mapping[str, Any] | None:
        reviews = [int(node.text()) for node in page.tree.css(".review .stars")]
        return {"title": page.record["title"], "stars": reviews} if reviews else None


class Broken(Reviews):
    name = "broken"

    def extract(self, page: PageView) -> Mapping[str, Any] | None:
        raise KeyError("price")


def page(**fields: Any) -> dict[str, Any]:
    made = raw_page(HTML, "https://books.example.com/dune", fetched_at=datetime(2024, 6, 1, tzinfo=UTC))
    return {**made, **fields}


def test_a_plugins_output_goes_into_data_and_names_the_extractor_version() -> None:
    record = extract_record(page(), schema_version=3, extractor=Reviews())

    assert record["extractor_version"] == "reviews/0.2.0"
    assert record["extractor"] == "reviews"
    assert record["data"]["schema"] == "reviews/1"
    assert json.loads(record["data"]["json"]) == {"title": "Dune", "stars": [5, 3]}
    assert record["title"] == "Dune"  # the built-in extraction still runs
    schemas.encode("page_record", record, 3)


def test_without_a_plugin_v3_names_the_built_in_extractor() -> None:
    record = extract_record(page(), schema_version=3)
    assert (record["extractor_version"].split("/")[0], record["extractor"], record["data"]) == (
        "dualplane",
        None,
        None,
    )
    schemas.encode("page_record", record, 3)


def test_the_job_chooses_first_then_the_domain_map_with_parent_domains() -> None:
    loaded: list[str] = []

    def loader(name: str) -> Extractor:
        loaded.append(name)
        return {"reviews": Reviews, "broken": Broken}[name]()

    choice = ExtractorChoice({"example.com": "reviews", "shop.example.org": "broken"}, loader=loader)
    assert isinstance(choice.for_page(page(domain="books.example.com")), Reviews)
    assert isinstance(choice.for_page(page(domain="books.example.com", extractor="broken")), Broken)
    assert choice.for_page(page(domain="example.org")) is None
    assert choice.for_page(page(domain="books.example.com")) is choice.for_page(page(domain="example.com"))
    assert loaded == ["reviews", "broken"]  # each plugin loaded once


def test_a_failing_plugin_dead_letters_the_page_with_its_name() -> None:
    extraction = Extraction(ExtractorChoice(loader=lambda _name: Broken()))
    with pytest.raises(ExtractionFailed, match=r"extractor plugin broken/0.2.0 failed on .*: KeyError"):
        extraction(page(extractor="broken"), schema_version=3)


def test_a_plugin_that_is_not_installed_is_named_with_what_is() -> None:
    with pytest.raises(ExtractError, match="no extractor plugin 'nope' is installed"):
        load_extractor("nope")
    with pytest.raises(ExtractionFailed, match="no extractor plugin 'nope'"):
        Extraction()(page(extractor="nope"), schema_version=3)
