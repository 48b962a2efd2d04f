"""Reading the ``records`` topic from Python: typed page records, exactly once per page.

    from dualplane.data_plane.extractor.records import iter_records
    from dualplane.core.settings import Settings

    for record in iter_records(Settings.from_env(), from_beginning=True, follow=False):
        print(record.canonical_url, record.product.price if record.product else None)

Records are read ``read_committed`` (only what extractors committed, so each page once) and
decoded into the newest schema version this process knows, so v1, v2 and v3 records come out alike
(fields added later take their defaults). Both wire formats decode: single-object encoding and, in
Schema Registry mode, the Confluent framing. Non-Python consumers: see "Consuming records" and
"Schema Registry mode" in docs/schemas.md for the wire formats and where to fetch each writer schema.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Any

from pydantic import BaseModel, ConfigDict, Field

from dualplane import schemas
from dualplane.brokers.kafka.reader import committed_values
from dualplane.core.settings import Settings


class Link(BaseModel):
    model_config = ConfigDict(frozen=True)

    url: str
    rel: str | None = None
    nofollow: bool = False
    text: str | None = None


class Product(BaseModel):
    model_config = ConfigDict(frozen=True)

    name: str | None = None
    price: Decimal | None = None
    currency: str | None = None
    availability: str | None = None
    sku: str | None = None
    brand: str | None = None
    images: list[str] = []
    gtin: str | None = None
    price_source: str | None = None
    currency_source: str | None = None
    availability_source: str | None = None
    sku_source: str | None = None
    gtin_source: str | None = None
    brand_source: str | None = None


class Article(BaseModel):
    model_config = ConfigDict(frozen=True)

    headline: str | None = None
    authors: list[str] = []
    published_at: datetime | None = None
    body: str | None = None


class PluginData(BaseModel):
    """An extractor plugin's output: its JSON and the name of its shape (``"reviews/1"``)."""

    model_config = ConfigDict(frozen=True)

    schema_: str = Field(alias="schema")
    json_: str = Field(alias="json")

    def value(self) -> Any:
        """The output, parsed."""
        return json.loads(self.json_)


class PageRecord(BaseModel):
    """One extracted page, as the ``page_record`` schema defines it (all versions)."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    url: str
    final_url: str
    canonical_url: str
    domain: str
    job_id: str
    trace_id: str
    fetched_at: datetime
    extracted_at: datetime
    extractor_version: str
    extractor: str | None = None
    schema_version: int
    status: int
    content_type: str | None = None
    language: str | None = None
    title: str | None = None
    description: str | None = None
    text: str | None = None
    word_count: int | None = None
    links: list[Link] = []
    product: Product | None = None
    article: Article | None = None
    data: PluginData | None = None


def decode_record(value: bytes, codec: schemas.Codec | None = None) -> PageRecord:
    """One ``records`` message value as a typed record (read as the newest known version).

    Either wire format; a Confluent-framed value needs ``codec`` in registry mode
    (:func:`schemas.codec_for`) to fetch its writer schema.
    """
    reader_version = schemas.latest_version("page_record")
    if codec is None:
        decoded = schemas.decode(value, reader_version=reader_version)
    else:
        decoded = codec.decode(value, reader_version=reader_version)
    return PageRecord.model_validate(decoded.record)


def iter_records(
    settings: Settings,
    *,
    from_beginning: bool = False,
    follow: bool = True,
    job_id: str | None = None,
    group_id: str | None = None,
) -> Iterator[PageRecord]:
    """Yield records as they are committed.

    ``follow=False`` reads to the current end and stops (an export); ``follow=True`` tails until
    the caller stops iterating. Without ``group_id`` each call reads independently (a fresh
    group, no offsets committed); with one, progress is committed so a restart resumes there.
    Values in either wire format decode (registry mode: ``DUALPLANE_SCHEMA_REGISTRY_URL``).
    """
    codec = schemas.codec_for(settings)
    group = group_id or f"{settings.kafka.group_prefix}-records-{uuid.uuid4().hex[:8]}"
    values = committed_values(
        settings.kafka, settings.topics.records, group,
        from_beginning=from_beginning, follow=follow, commit=group_id is not None,
    )  # fmt: skip
    for value in values:
        record = decode_record(value, codec)
        if job_id is None or record.job_id == job_id:
            yield record
