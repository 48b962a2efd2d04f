"""Reading ``records.latest`` (one current record per URL) and ``records.changes`` (change events).

    from dualplane.data_plane.extractor.change_reader import latest_records, iter_changes

    for url, record in latest_records(settings).items():
        print(url, record.product.price if record.product else None)

Both are read ``read_committed``: what extractors committed with their offsets, once each.
``records.latest`` is compacted, but a compaction runs only on closed segments and lags behind, so
the topic may still hold older records of a URL: :func:`latest_records` keeps the last one per
key, as any table reader of a compacted topic must.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from datetime import datetime
from decimal import Decimal
from typing import Literal

from pydantic import BaseModel, ConfigDict

from dualplane import schemas
from dualplane.brokers.kafka.reader import committed_values, read_to_end
from dualplane.core.settings import Settings
from dualplane.data_plane.extractor.records import PageRecord, decode_record


class ChangeEvent(BaseModel):
    """One ``change_event``: what changed on a page since its previous record."""

    model_config = ConfigDict(frozen=True, extra="ignore")

    url: str
    canonical_url: str
    job_id: str
    trace_id: str
    fetched_at: datetime
    previous_fetched_at: datetime
    changed: list[str]
    price_from: Decimal | None = None
    price_to: Decimal | None = None
    currency_from: str | None = None
    currency_to: str | None = None
    availability_from: str | None = None
    availability_to: str | None = None
    title_from: str | None = None
    title_to: str | None = None
    text_fingerprint_from: str | None = None
    text_fingerprint_to: str | None = None
    # changed (the extractor: a field changed), new or gone (the frontier: the URL joined or left a
    # monitor's schedule); events of change_event v1 are all changed.
    kind: Literal["changed", "new", "gone"] = "changed"


def decode_change(value: bytes, codec: schemas.Codec | None = None) -> ChangeEvent:
    """One ``records.changes`` value (either wire format; registry mode needs ``codec``)."""
    version = schemas.latest_version("change_event")
    decoded = (codec.decode if codec else schemas.decode)(value, reader_version=version)
    return ChangeEvent.model_validate(decoded.record)


def latest_records(settings: Settings, *, url: str | None = None) -> dict[str, PageRecord]:
    """The current record of every URL (or of ``url`` alone) in ``records.latest``, by URL."""
    codec = schemas.codec_for(settings)
    latest: dict[str, PageRecord] = {}
    for message in read_to_end(settings.kafka, settings.topics.records_latest):
        key = (message.key() or b"").decode()
        if url is not None and key != url:
            continue  # keys are compared before decoding: a lookup skips other records cheaply
        value = message.value()
        if value is None:
            latest.pop(key, None)  # a tombstone
        else:
            latest[key] = decode_record(value, codec)
    return latest


def iter_changes(
    settings: Settings, *, from_beginning: bool = False, follow: bool = True
) -> Iterator[ChangeEvent]:
    """Change events as extractors commit them; ``follow=False`` stops at the current end."""
    codec = schemas.codec_for(settings)
    group = f"{settings.kafka.group_prefix}-changes-{uuid.uuid4().hex[:8]}"
    values = committed_values(
        settings.kafka, settings.topics.changes, group, from_beginning=from_beginning, follow=follow
    )
    for value in values:
        yield decode_change(value, codec)
