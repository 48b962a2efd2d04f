"""Raw pages decoded by cavro with their writer schema archive as the very bytes the codec's decode gives."""

from __future__ import annotations

from typing import Any

import pytest

from dualplane import schemas
from dualplane.connectors.sink import raw_pages
from dualplane.connectors.sink.compression import gzip_member
from dualplane.connectors.sink.warc import WarcSink
from dualplane.core.settings import Settings, SinkSettings
from dualplane.schemas.wire import split
from tests.support.sink import page

pytestmark = pytest.mark.unit

CODEC = schemas.codec_for(Settings())


class _Message:
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


def _sink(*, codec_only: bool) -> WarcSink:
    sink = WarcSink("pages.raw", CODEC, None, gzip=gzip_member(SinkSettings()))  # type: ignore[arg-type]
    if codec_only:
        sink.decode = lambda value: CODEC.decode(value).record  # type: ignore[assignment,method-assign]
    return sink


PAGES: list[dict[str, Any]] = [
    page(1),
    {**page(2), "body_truncated": True, "status": 599, "job_id": "odd\r\n\r\njob"},
    {**page(3), "url": "http://shop.example/straße", "final_url": "http://shop.example/straße"},
    {**page(4), "redirect_chain": ["http://shop.example/a"], "charset": "latin-1", "headers": {}},
]


@pytest.mark.parametrize("version", [1, 2, 3])
def test_every_raw_page_version_archives_as_with_the_codec(version: int) -> None:
    fast, reference = _sink(codec_only=False), _sink(codec_only=True)
    fields = {
        field["name"] for field in schemas.default_registry().get("raw_page", version).definition["fields"]
    }

    for offset, made in enumerate(PAGES):
        value = schemas.encode("raw_page", {k: v for k, v in made.items() if k in fields}, version)
        if raw_pages.cavro is not None:  # else both take the codec
            assert fast.decode._schema(split(value).fingerprint) is not None  # type: ignore[attr-defined]
        message = _Message(value, offset)
        assert fast.prepare(message) == reference.prepare(message)  # type: ignore[arg-type]
