"""What extraction finds about a product or an article, before it becomes part of a page record.

Each source (JSON-LD, microdata, RDFa, OpenGraph, markup heuristics) yields the same value classes;
:meth:`ProductFields.or_else` lays them over each other, the most trusted source first.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, TypeVar

from data_plane.extract.availability import Availability

MAX_IMAGES = 20
_Fields = TypeVar("_Fields", "ProductFields", "ArticleFields")


@dataclass(frozen=True)
class ProductFields:
    """A product as one source describes it; ``None`` (or empty) where the source says nothing."""

    name: str | None = None
    price: Decimal | None = None
    currency: str | None = None
    availability: Availability | None = None
    sku: str | None = None
    gtin: str | None = None
    brand: str | None = None
    images: tuple[str, ...] = ()

    def or_else(self, fallback: ProductFields) -> ProductFields:
        """These fields, each completed from ``fallback`` where this one has no value."""
        return _fill(self, fallback)

    @property
    def empty(self) -> bool:
        return self == ProductFields()

    def to_record(self, schema_version: int) -> dict[str, Any]:
        """The ``Product`` record of page_record ``schema_version`` (``gtin`` exists from v2)."""
        record: dict[str, Any] = {
            "name": self.name,
            "price": self.price,
            "currency": self.currency,
            "availability": self.availability,
            "sku": self.sku,
            "brand": self.brand,
            "images": list(self.images[:MAX_IMAGES]),
        }
        if schema_version >= 2:
            record["gtin"] = self.gtin
        return record


@dataclass(frozen=True)
class ArticleFields:
    """An article as one source describes it; ``None`` (or empty) where the source says nothing."""

    headline: str | None = None
    authors: tuple[str, ...] = ()
    published_at: datetime | None = None
    body: str | None = None

    def or_else(self, fallback: ArticleFields) -> ArticleFields:
        """These fields, each completed from ``fallback`` where this one has no value."""
        return _fill(self, fallback)

    @property
    def empty(self) -> bool:
        return self == ArticleFields()

    def to_record(self) -> dict[str, Any]:
        """The ``Article`` record (the same in every page_record version so far)."""
        return {
            "headline": self.headline,
            "authors": list(self.authors),
            "published_at": self.published_at,
            "body": self.body,
        }


def _fill(primary: _Fields, fallback: _Fields) -> _Fields:
    changes = {
        field.name: getattr(fallback, field.name)
        for field in dataclasses.fields(primary)
        if getattr(primary, field.name) in (None, ()) and getattr(fallback, field.name) not in (None, ())
    }
    return dataclasses.replace(primary, **changes) if changes else primary
