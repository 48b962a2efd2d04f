"""Boilerplate cut from the main text by its wording (related-content tails, copyright); the text limit."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.record import extract_record
from dualplane.data_plane.extract.text.boilerplate import trim_boilerplate
from dualplane.data_plane.extract.text.text import MAX_TEXT_BYTES, clip_text

pytestmark = pytest.mark.unit

BODY = [
    "Die Stadt hat am Dienstag den Bau der neuen Straßenbahnlinie beschlossen, nach einer langen Debatte.",
    "Der erste Abschnitt soll im Frühjahr begonnen werden; die ganze Linie ist in vier Jahren fertig.",
    "Gegner sagten, das Geld wäre für Busse besser ausgegeben, die die Dörfer früher erreichen könnten.",
]


@pytest.mark.parametrize(
    "heading",
    [
        "Das könnte Sie auch interessieren:",
        "YOU MIGHT ALSO LIKE",
        "Contenido  relacionado",
        "À lire aussi \u00bb",
    ],
)
def test_a_tail_heading_in_the_second_half_cuts_the_text_there(heading: str) -> None:
    text = "\n".join([*BODY, heading, "Zweiter Artikel über etwas anderes", "Dritter Artikel"])

    assert trim_boilerplate(text) == "\n".join(BODY)


@pytest.mark.parametrize("heading", ["Other Opinion Columns", "More from Business", "Mehr aus dem Ressort"])
def test_a_short_title_that_opens_like_a_tail_heading_cuts_too(heading: str) -> None:
    text = "\n".join([*BODY, heading, "Zweiter Artikel über etwas anderes"])

    assert trim_boilerplate(text) == "\n".join(BODY)


def test_a_sentence_that_opens_like_a_tail_heading_stays() -> None:
    text = "\n".join([*BODY, "More from the council next week.", BODY[0]])

    assert trim_boilerplate(text) == text


def test_a_tail_heading_in_the_first_half_is_a_section_of_the_article() -> None:
    text = "\n".join([BODY[0], "Related", *BODY[1:], BODY[0], BODY[1]])

    assert trim_boilerplate(text) == text


def test_a_heading_must_be_the_whole_line() -> None:
    text = "\n".join([*BODY, "Comments on the plan came from every party in the council.", BODY[0]])

    assert trim_boilerplate(text) == text


def test_closing_copyright_lines_are_dropped_but_never_the_only_line() -> None:
    text = "\n".join([*BODY, "© 2022 Example News. All rights reserved.", "Copyright 2022 Example"])

    assert trim_boilerplate(text) == "\n".join(BODY)
    assert trim_boilerplate("© 2022 Example News") == "© 2022 Example News"


def test_the_record_text_ends_before_the_related_articles() -> None:
    paragraphs = "".join(f"<p>{line}</p>" for line in BODY)
    html = (
        f"<html><body><article><h1>Straßenbahn</h1>{paragraphs}<h3>Ähnliche Artikel</h3>"
        "<p>Neue Buslinien für die Dörfer im Norden des Kreises beschlossen</p></article></body></html>"
    )
    raw = raw_page(html.encode(), "https://news.example/bahn", fetched_at=datetime(2024, 6, 1, tzinfo=UTC))

    text = extract_record(raw, schema_version=3)["text"]

    assert text is not None and text.endswith(BODY[-1])
    assert "Buslinien" not in text


@pytest.mark.parametrize("char", ["a", "é", "語", "😀"])
def test_text_is_clipped_in_utf8_bytes_at_a_character_boundary(char: str) -> None:
    clipped = clip_text(char * MAX_TEXT_BYTES)

    assert len(clipped.encode("utf-8")) <= MAX_TEXT_BYTES
    assert len(clipped) == MAX_TEXT_BYTES // len(char.encode("utf-8"))
    assert clip_text("short") == "short"


TEASER_LINK = "Neue Buslinien für die Dörfer im Norden beschlossen"


@pytest.mark.parametrize("label", ["Lesen Sie auch:", "MIRA:", "- Lea también :"])
def test_a_label_before_the_whole_text_of_a_link_is_a_teaser_wherever_it_stands(label: str) -> None:
    text = "\n".join([BODY[0], f"{label} {TEASER_LINK}", *BODY[1:]])

    assert trim_boilerplate(text, lambda: {TEASER_LINK, "Impressum"}) == "\n".join(BODY)


@pytest.mark.parametrize(
    "line",
    [
        f"Quelle: {TEASER_LINK}",  # no link's text: without the links, nothing is a teaser
        "Foto: Stadtwerke Nord",  # a link's text, but a name, not a headline
        f"Vor der Abstimmung sagte der Bürgermeister: {TEASER_LINK}",  # a sentence, not a label
        f"Lesen Sie auch: {TEASER_LINK} und was die Gegner planen",  # more than the link's text
    ],
)
def test_a_labelled_line_is_no_teaser_unless_a_short_label_stands_before_a_headline_link(line: str) -> None:
    text = "\n".join([BODY[0], line, *BODY[1:]])
    links = {"Stadtwerke Nord"} | ({TEASER_LINK} if not line.startswith("Quelle") else set())

    assert trim_boilerplate(text, lambda: links) == text


def test_the_record_text_drops_a_teaser_line_linking_another_article() -> None:
    paragraphs = [f"<p>{line}</p>" for line in BODY]
    paragraphs.insert(1, f'<p>Lesen Sie auch: <a href="/busse">{TEASER_LINK}</a></p>')
    html = f"<html><body><article><h1>Straßenbahn</h1>{''.join(paragraphs)}</article></body></html>"
    raw = raw_page(html.encode(), "https://news.example/bahn", fetched_at=datetime(2024, 6, 1, tzinfo=UTC))

    text = extract_record(raw, schema_version=3)["text"]

    assert text is not None and BODY[0] in text and BODY[1] in text
    assert "Buslinien" not in text
