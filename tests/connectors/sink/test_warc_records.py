"""The templated WARC records are byte for byte what warcio's own builder and writer make of the same page."""

from __future__ import annotations

import base64
import gzip
import hashlib
import io
import zlib
from typing import Any

import pytest
from warcio.archiveiterator import ArchiveIterator
from warcio.recordbuilder import RecordBuilder
from warcio.statusandheaders import StatusAndHeaders
from warcio.warcwriter import WARCWriter

from dualplane.connectors.sink.compression import gzip_member
from dualplane.connectors.sink.warc_records import WARC_VERSION, request_member, response_member
from dualplane.core.settings import SinkSettings
from tests.support.sink import page

pytestmark = pytest.mark.unit

RESPONSE_ID = "<urn:uuid:34d4c4fd-6d13-50d8-9e18-886696b5f89a>"
REQUEST_ID = "<urn:uuid:3260550a-6692-5ce5-9f30-bfb9b59270e5>"
DATE = "2026-11-24T12:00:01Z"
ZLIB_6 = gzip_member(SinkSettings(gzip_engine="zlib"))


def _digests(http: StatusAndHeaders, payload: bytes) -> dict[str, str]:
    http.compute_headers_buffer(None)
    return {
        "WARC-Block-Digest": _sha1(http.headers_buff + payload),
        "WARC-Payload-Digest": _sha1(payload),
    }


def _sha1(data: bytes) -> str:
    return "sha1:" + base64.b32encode(hashlib.sha1(data).digest()).decode()


def _warcio_records(page: dict[str, Any], body: bytes, url: str) -> bytes:
    """The records as the sink wrote them with warcio before the templates (uncompressed): the oracle."""
    builder = RecordBuilder(warc_version=WARC_VERSION)
    headers = [
        (f"X-Archive-Orig-{n}" if n.lower() in {"content-encoding", "transfer-encoding", "content-length"}
         else n, str(v))
        for n, v in page["headers"].items()
    ]  # fmt: skip
    headers.append(("Content-Length", str(len(body))))
    phrase = {200: "OK", 404: "Not Found"}.get(page["status"], "Unknown")
    http = StatusAndHeaders(f"{page['status']} {phrase}", headers, protocol="HTTP/1.1")
    warc_headers = {"WARC-Record-ID": RESPONSE_ID, "WARC-Date": DATE}
    if page.get("body_truncated"):
        warc_headers["WARC-Truncated"] = "length"
    if page.get("job_id"):
        warc_headers["WARC-X-Dualplane-Job"] = page["job_id"]
    response = builder.create_warc_record(
        url, "response", payload=io.BytesIO(body), length=len(body), http_headers=http,
        warc_headers_dict={**warc_headers, **_digests(http, body)},
    )  # fmt: skip
    path = url.split("shop.example", 1)[1]
    request_http = StatusAndHeaders(f"GET {path} HTTP/1.1", [("Host", "shop.example")], is_http_request=True)
    request = builder.create_warc_record(
        url, "request", payload=io.BytesIO(b""), length=0, http_headers=request_http,
        warc_headers_dict={"WARC-Record-ID": REQUEST_ID, "WARC-Date": DATE, "WARC-Concurrent-To": RESPONSE_ID,
                           **_digests(request_http, b"")},
    )  # fmt: skip
    out = io.BytesIO()
    writer = WARCWriter(out, gzip=False, warc_version=WARC_VERSION)
    writer.write_record(request)
    writer.write_record(response)
    return out.getvalue()


def _ours(page: dict[str, Any], body: bytes, url: str) -> bytes:
    request = request_member(url=url, record_id=REQUEST_ID, concurrent_to=RESPONSE_ID, date=DATE, gzip=ZLIB_6)
    response = response_member(page, body, url=url, record_id=RESPONSE_ID, date=DATE, gzip=ZLIB_6)
    return request + response


@pytest.mark.parametrize(
    "change",
    [
        {},
        {"status": 404, "body_truncated": True, "job_id": ""},
        {"status": 599},
        {"headers": {"content-type": "text/html", "x-title": "caf\u00e9; r\u00e9sum\u00e9", "x-n": "\u00ef"}},
        {"url": "http://shop.example/p/9?q=1&r=%C3%A9", "final_url": "http://shop.example/p/9?q=1&r=%C3%A9"},
    ],
)
def test_records_are_the_bytes_warcio_writes(change: dict[str, Any]) -> None:
    made = {**page(7, b"<html><p>" + bytes(range(256)) * 40 + b"</p></html>"), **change}
    url, body = made["final_url"], made["body"]

    ours = _ours(made, body, url)

    assert gzip.decompress(ours) == _warcio_records(made, body, url)


def test_each_record_is_its_own_gzip_member_and_warcio_reads_them() -> None:
    made = page(3)
    ours = _ours(made, made["body"], made["url"])

    first = zlib.decompressobj(zlib.MAX_WBITS | 16)
    first.decompress(ours)
    records = list(ArchiveIterator(io.BytesIO(ours), check_digests=True))

    assert first.eof and first.unused_data  # the request member ends where the response member begins
    assert [r.rec_type for r in records] == ["request", "response"]


def test_the_default_isal_members_hold_the_same_records_and_repeat_byte_for_byte() -> None:
    made = page(5, b"<html><p>" + b"words and more words " * 3000 + b"</p></html>")
    isal = gzip_member(SinkSettings())

    def members(compress: Any) -> bytes:
        body = made["body"]
        return response_member(made, body, url=made["url"], record_id=RESPONSE_ID, date=DATE, gzip=compress)

    assert gzip.decompress(members(isal)) == gzip.decompress(members(ZLIB_6))
    assert members(isal) == members(isal)  # a re-run writes the same object
    assert members(isal) != members(ZLIB_6)  # the engine is ISA-L, not zlib under another name


@pytest.mark.parametrize(("engine", "level"), [("isal", 4), ("zlib", 0)])
def test_a_level_the_engine_does_not_have_is_refused_naming_the_setting(engine: str, level: int) -> None:
    with pytest.raises(ValueError, match="DUALPLANE_SINK_GZIP_LEVEL"):
        SinkSettings(gzip_engine=engine, gzip_level=level)  # type: ignore[arg-type]
