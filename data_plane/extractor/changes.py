"""What changed between two records of one URL: the watched fields and the main text's fingerprint.

Pure logic, no brokers: :mod:`~data_plane.extractor.latest` keeps a :class:`Snapshot` per URL and
asks :func:`change_event` for the ``change_event`` to write when a new record arrives.

Watched fields: the product's price, currency and availability, the page title, and a fingerprint
of the main text. The fingerprint is taken of the record's ``text`` (boilerplate already removed
by extraction, so no ads, navigation, scripts or CSRF tokens) after normalization: Unicode NFKC,
case folded, runs of whitespace made one space. A page re-rendered with other markup, other
whitespace or another ad therefore keeps its fingerprint; an edited sentence does not.
"""

from __future__ import annotations

import hashlib
import unicodedata
from collections.abc import Mapping
from dataclasses import dataclass, fields
from datetime import datetime
from decimal import Decimal
from typing import Any

FINGERPRINT_BYTES = 8  # 16 hex digits: a false "unchanged" needs a 2**-64 collision


def text_fingerprint(text: str | None) -> str | None:
    """BLAKE2b of the normalized ``text`` in hex; ``None`` for no text (or only whitespace)."""
    normalized = " ".join(unicodedata.normalize("NFKC", text or "").casefold().split())
    if not normalized:
        return None
    return hashlib.blake2b(normalized.encode(), digest_size=FINGERPRINT_BYTES).hexdigest()


@dataclass(frozen=True, slots=True)
class Snapshot:
    """The watched values of one record of a URL (kept per URL: a few hundred bytes each)."""

    price: Decimal | None
    currency: str | None
    availability: str | None
    title: str | None
    text_fingerprint: str | None
    fetched_at: datetime

    @classmethod
    def of(cls, record: Mapping[str, Any]) -> Snapshot:
        """The snapshot of a ``page_record`` (a dict as extraction makes it or as decoded)."""
        product = record.get("product") or {}
        price = product.get("price")
        return cls(
            price=Decimal(price) if price is not None else None,
            currency=product.get("currency"),
            availability=product.get("availability"),
            title=record.get("title"),
            text_fingerprint=text_fingerprint(record.get("text")),
            fetched_at=record["fetched_at"],
        )


WATCHED = tuple(field.name for field in fields(Snapshot) if field.name != "fetched_at")


def changed_fields(previous: Snapshot, current: Snapshot) -> list[str]:
    """The watched fields whose values differ, in :data:`WATCHED` order (``19.9`` equals ``19.90``)."""
    return [name for name in WATCHED if getattr(previous, name) != getattr(current, name)]


def change_event(
    url: str, previous: Snapshot, current: Snapshot, record: Mapping[str, Any]
) -> dict[str, Any] | None:
    """The ``change_event`` of ``record`` (whose snapshot is ``current``) after ``previous``; ``None`` if
    nothing watched changed."""
    changed = changed_fields(previous, current)
    if not changed:
        return None
    event: dict[str, Any] = {
        "url": url,
        "canonical_url": record["canonical_url"],
        "job_id": record["job_id"],
        "trace_id": record["trace_id"],
        "fetched_at": current.fetched_at,
        "previous_fetched_at": previous.fetched_at,
        "changed": changed,
    }
    for name in WATCHED:
        event[f"{name}_from"] = getattr(previous, name)
        event[f"{name}_to"] = getattr(current, name)
    return event
