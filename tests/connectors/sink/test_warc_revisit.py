"""A 304 on pages.raw is archived as a WARC revisit record (server-not-modified), not as a response."""

from __future__ import annotations

import io
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator

from dualplane import schemas
from dualplane.connectors.sink.compression import gzip_member
from dualplane.connectors.sink.warc import WarcSink
from dualplane.connectors.sink.warc_revisit import SERVER_NOT_MODIFIED
from dualplane.core.settings import Settings, SinkSettings
from tests.support.sink import page

pytestmark = pytest.mark.unit

ETAG = '"1b57677a0843afd7fbc9d794"'


class _Message:
    """A consumed pages.raw message, as the sink reads it."""

    def __init__(self, value: bytes, offset: int) -> None:
        self._value, self._offset = value, offset

    def value(self) -> bytes:
        return self._value

    def topic(self) -> str:
        return "pages.raw"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return self._offset


def _archived(raw: dict[str, Any], offset: int) -> list[Any]:
    codec = schemas.codec_for(Settings())
    sink = WarcSink("pages.raw", codec, None, gzip=gzip_member(SinkSettings()))  # type: ignore[arg-type]
    item = sink.prepare(_Message(schemas.encode("raw_page", raw), offset))  # type: ignore[arg-type]
    records = []
    for record in ArchiveIterator(io.BytesIO(item.payload)):
        records.append(
            (record.rec_type, record.rec_headers, record.http_headers, record.content_stream().read())
        )
    return records


def test_a_304_becomes_a_revisit_record_of_the_same_uri_and_a_200_stays_a_response() -> None:
    headers = {
        "etag": ETAG,
        "last-modified": "Fri, 15 Jan 2027 08:00:00 GMT",
        "date": "Sat, 16 Jan 2027 08:00:00 GMT",
    }
    unchanged = {**page(1, body=b""), "status": 304, "headers": headers, "content_type": None}
    changed = page(2)

    [(request_type, _, _, _), (kind, warc, http, payload)] = _archived(unchanged, offset=7)
    [_, (full_kind, _, _, full_payload)] = _archived(changed, offset=8)

    assert (request_type, kind) == ("request", "revisit")
    assert warc.get_header("WARC-Profile") == SERVER_NOT_MODIFIED
    assert (
        warc.get_header("WARC-Refers-To-Target-URI") == warc.get_header("WARC-Target-URI") == unchanged["url"]
    )
    assert warc.get_header("WARC-Payload-Digest") is None  # the 304's empty payload is not the page's
    assert warc.get_header("WARC-X-Dualplane-Job") == "sink-job"
    assert (http.get_statuscode(), http.get_header("etag"), payload) == ("304", ETAG, b"")
    assert full_kind == "response" and full_payload == changed["body"]
