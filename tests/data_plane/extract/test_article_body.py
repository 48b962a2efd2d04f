"""An article's body: which text is the body, as real pages publish it (teasers, HTML, standfirsts)."""

from __future__ import annotations

import json
from datetime import UTC, datetime
from typing import Any

import pytest

from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.record import extract_record

pytestmark = pytest.mark.unit

PARAGRAPHS = [
    "The regional council approved the new tram line after a debate that lasted well into the night.",
    "Construction of the first section is to begin in the spring, with the whole line open in four years.",
    "Opponents said the money would be better spent on buses, which could serve the outer villages sooner.",
    "The council's transport committee will publish a timetable for the works before the end of the month.",
]


def article_page(
    article_body: str | None, *, standfirst: str = "", description: str = "", shown: int = len(PARAGRAPHS)
) -> bytes:
    node: dict[str, Any] = {"@context": "https://schema.org", "@type": "NewsArticle", "headline": "Tram line"}
    if article_body is not None:
        node["articleBody"] = article_body
    paragraphs = "".join(f"<p>{text}</p>" for text in PARAGRAPHS[:shown])
    return (
        f'<html lang="en"><head><meta name="description" content="{description}">'
        f'<script type="application/ld+json">{json.dumps(node)}</script></head><body>'
        f"<article><h1>Tram line</h1>{standfirst}{paragraphs}</article></body></html>"
    ).encode()


def body_of(html: bytes) -> str:
    raw = raw_page(html, "https://news.example/tram", fetched_at=datetime(2024, 6, 1, tzinfo=UTC))
    article = extract_record(raw, schema_version=2)["article"]
    assert article is not None
    return str(article["body"])


def test_a_teaser_published_as_article_body_gives_way_to_the_text_on_the_page() -> None:
    body = body_of(article_page(PARAGRAPHS[0]))

    assert body == "\n\n".join(PARAGRAPHS)


def test_an_article_body_with_more_than_the_page_shows_is_used() -> None:
    published = "\n\n".join(PARAGRAPHS)  # the page shows the first paragraph only (a paywall)

    assert body_of(article_page(published, shown=1)).split() == published.split()


def test_a_body_the_page_shows_wins_over_an_article_body_with_extras() -> None:
    published = "\n\n".join([*PARAGRAPHS, "Photo: the tram depot at dawn. Subscribe to our newsletter."])

    assert body_of(article_page(published)) == "\n\n".join(PARAGRAPHS)


def test_an_article_body_published_as_html_loses_its_tags_and_keeps_its_paragraphs() -> None:
    published = "".join(f"<p><strong>{text}</strong></p>" for text in PARAGRAPHS)

    body = body_of(article_page(published, shown=1))

    assert "<" not in body and body.split() == " ".join(PARAGRAPHS).split()


def test_a_first_paragraph_that_is_also_the_description_stays_in_the_body() -> None:
    body = body_of(article_page(None, description=PARAGRAPHS[0]))

    assert body.startswith(PARAGRAPHS[0])


def test_a_standfirst_marked_as_such_is_not_body() -> None:
    standfirst = '<p class="article-dek">Four years of works ahead for the city centre and its shops.</p>'

    assert body_of(article_page(None, standfirst=standfirst)) == "\n\n".join(PARAGRAPHS)


LEAD = "The city will spend four years and 300 million euros on a tram from the station to the university."


def test_a_lead_the_main_text_drops_opens_the_body_when_the_description_repeats_it() -> None:
    page = article_page(None, standfirst=f'<p class="teaser">{LEAD}</p>', description=LEAD)

    assert body_of(page) == "\n\n".join([LEAD, *PARAGRAPHS])


def test_a_description_shown_only_in_a_link_or_not_at_all_is_no_lead() -> None:
    promoted = f'<p class="teaser"><a href="/tram">{LEAD}</a></p>'

    assert body_of(article_page(None, standfirst=promoted, description=LEAD)) == "\n\n".join(PARAGRAPHS)
    assert body_of(article_page(None, description=LEAD)) == "\n\n".join(PARAGRAPHS)


@pytest.mark.parametrize(
    "attributes", ['class="c-standfirst"', 'class="storySubtitle"', 'id="sub-headline"', 'class="deck"']
)
def test_a_standfirst_is_found_whichever_way_its_class_or_id_is_written(attributes: str) -> None:
    # The CSS engine picks candidates by substring ("stand", "sub", "strap", "dek", "deck"), words() judges.
    standfirst = f"<p {attributes}>Four years of works ahead for the city centre and its shops.</p>"
    assert body_of(article_page(None, standfirst=standfirst)) == "\n\n".join(PARAGRAPHS)


def test_a_description_marked_as_a_standfirst_stays_out_of_the_body() -> None:
    standfirst = f'<p class="teaser article-dek">{LEAD}</p>'

    assert body_of(article_page(None, standfirst=standfirst, description=LEAD)) == "\n\n".join(PARAGRAPHS)


def test_the_lead_may_be_the_open_graph_description_when_the_meta_description_is_a_slogan() -> None:
    html = article_page(None, standfirst=f'<p class="teaser">{LEAD}</p>', description="City news, every day.")
    html = html.replace(b"<head>", f'<head><meta property="og:description" content="{LEAD}">'.encode())

    assert body_of(html) == "\n\n".join([LEAD, *PARAGRAPHS])
