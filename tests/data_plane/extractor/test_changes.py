"""What counts as a change between two records of a URL, and the main text's fingerprint."""

from __future__ import annotations

from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import pytest

from dualplane.data_plane.extractor.changes import Snapshot, change_event, changed_fields, text_fingerprint

pytestmark = pytest.mark.unit

BEFORE, AFTER = datetime(2026, 11, 1, tzinfo=UTC), datetime(2026, 11, 2, tzinfo=UTC)
URL = "https://shop.example/p/1"


def record(
    price: str | None = "19.99", *, text: str = "A kettle.\nBoils fast.", **changes: Any
) -> dict[str, Any]:
    product = {"price": Decimal(price) if price else None, "currency": "EUR", "availability": "in_stock"}
    base = {"canonical_url": URL, "job_id": "watch", "trace_id": "t", "fetched_at": BEFORE, "title": "Kettle"}
    return {**base, "text": text, "product": {**product, **changes.pop("product", {})}, **changes}


def test_the_fingerprint_ignores_case_whitespace_and_unicode_forms_but_not_words() -> None:
    same = text_fingerprint("A kettle.\n  Boils fast.")
    assert text_fingerprint("a KETTLE. Boils\tfast.  ") == same
    assert text_fingerprint("A kettle.\u00a0Boils fast.") == same  # NFKC: no-break space is a space
    assert text_fingerprint("A kettle. Boils slowly.") != same
    assert text_fingerprint(None) is None and text_fingerprint(" \n ") is None
    assert len(same or "") == 16


def test_an_unchanged_record_makes_no_event_whatever_else_differs() -> None:
    first = Snapshot.of(record())
    again = record("19.9900", text="a kettle.  BOILS fast.", fetched_at=AFTER, trace_id="other", job_id="j2")

    assert change_event(URL, first, Snapshot.of(again), again) is None


def test_a_price_change_says_from_and_to_and_keeps_the_unchanged_values() -> None:
    first = Snapshot.of(record())
    second = record("17.49", fetched_at=AFTER)

    event = change_event(URL, first, Snapshot.of(second), second)

    assert event is not None
    assert event["changed"] == ["price"]
    assert (event["price_from"], event["price_to"]) == (Decimal("19.99"), Decimal("17.49"))
    assert (event["currency_from"], event["currency_to"]) == ("EUR", "EUR")
    assert (event["previous_fetched_at"], event["fetched_at"]) == (BEFORE, AFTER)
    assert (event["url"], event["canonical_url"], event["job_id"]) == (URL, URL, "watch")


def test_every_watched_field_is_compared_in_a_fixed_order() -> None:
    first = Snapshot.of(record())
    other = record(
        None, text="Sold out.", title="Kettle (old)", fetched_at=AFTER,
        product={"currency": None, "availability": "out_of_stock"},
    )  # fmt: skip

    assert changed_fields(first, Snapshot.of(other)) == [
        "price", "currency", "availability", "title", "text_fingerprint",
    ]  # fmt: skip


def test_a_page_that_is_no_longer_a_product_loses_its_price() -> None:
    first = Snapshot.of(record())
    gone = {**record(fetched_at=AFTER), "product": None}

    event = change_event(URL, first, Snapshot.of(gone), gone)

    assert event is not None and event["changed"] == ["price", "currency", "availability"]
    assert (event["price_to"], event["availability_to"]) == (None, None)
