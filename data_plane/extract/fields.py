"""What extraction finds about a product or an article, before it becomes part of a page record.

Each source (JSON-LD, microdata, RDFa, OpenGraph, embedded state JSON, markup heuristics) yields the
same value classes; :meth:`ProductFields.or_else` lays them over each other, the most trusted source
first, and every product field remembers which source gave its value (:data:`Source`).
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any, Literal, TypeVar

from dualplane.data_plane.extract.product.availability import Availability

Source = Literal["json-ld", "microdata", "rdfa", "opengraph", "embedded-json", "markup"]
"""Where a product field's value came from, most trusted first."""
SOURCES: tuple[Source, ...] = ("json-ld", "microdata", "rdfa", "opengraph", "embedded-json", "markup")
SOURCED_FIELDS = ("price", "currency", "availability", "sku", "gtin", "brand")
"""Product fields whose source a record names (``<field>_source`` from page_record v3)."""
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
    sources: tuple[tuple[str, Source], ...] = ()
    """``(field, source)`` for each field that has a value, once :meth:`from_source` stamped it."""

    def or_else(self, fallback: ProductFields) -> ProductFields:
        """These fields, each completed from ``fallback`` where this one has no value (with its source).

        A source that was seen without a value (:meth:`from_source` ``seen``) gives way to the fallback's
        value and its source; where neither has a value, the first source seen stays.
        """
        filled = _fill(self, fallback)
        taken = {name for name in SOURCED_FIELDS if getattr(self, name) is None}
        valued = {name for name in taken if getattr(fallback, name) is not None}
        mine = {name for name, _ in self.sources}
        kept = tuple((name, source) for name, source in self.sources if name not in valued)
        carried = tuple(
            (name, source)
            for name, source in fallback.sources
            if name in valued or (name in taken and name not in mine)
        )
        return dataclasses.replace(filled, sources=kept + carried) if carried else filled

    def from_source(self, source: Source, seen: tuple[str, ...] = ()) -> ProductFields:
        """These fields, each value not yet attributed marked as coming from ``source``.

        Fields named in ``seen`` are marked too, with or without a value: the source published something
        for them that means no value (an availability of schema.org ``Reserved``).
        """
        known = {name for name, _ in self.sources}
        stamped = tuple(
            (name, source)
            for name in SOURCED_FIELDS
            if (getattr(self, name) is not None or name in seen) and name not in known
        )
        return dataclasses.replace(self, sources=self.sources + stamped) if stamped else self

    def source_of(self, name: str) -> Source | None:
        """The source of field ``name``'s value; without a value, the source that was seen saying nothing
        usable (an unknown availability, stock signals that disagree), else ``None``."""
        return next((source for field, source in self.sources if field == name), None)

    def replaced(self, source: Source | None, **values: Any) -> ProductFields:
        """These fields with ``values`` put in, attributed to ``source``.

        ``None`` clears a field; its source is then ``source`` too (what was seen, without a value), or
        none with ``source`` ``None``.
        """
        names = set(values)
        sources = tuple(pair for pair in self.sources if pair[0] not in names)
        if source is not None:
            sources += tuple((name, source) for name in values if name in SOURCED_FIELDS)
        return dataclasses.replace(self, **values, sources=sources)

    @property
    def empty(self) -> bool:
        return dataclasses.replace(self, sources=()) == ProductFields()

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
        if schema_version >= 3:
            record |= {f"{name}_source": self.source_of(name) for name in SOURCED_FIELDS}
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
        if field.name != "sources"
        and getattr(primary, field.name) in (None, ())
        and getattr(fallback, field.name) not in (None, ())
    }
    return dataclasses.replace(primary, **changes) if changes else primary
