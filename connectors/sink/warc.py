"""``pages.raw`` to WARC: a ``request`` and a ``response`` record per fetched page, each gzipped on its own.

Records are built with warcio, so any WARC reader (``warcio index``/``check``, pywb, the Internet
Archive's tools) reads the files: ``WARC-Target-URI`` is the page's final URL, ``WARC-Date`` its fetch
time, ``WARC-Payload-Digest`` and ``WARC-Block-Digest`` are computed over the body as archived. Each
record is its own gzip member (the ``.warc.gz`` convention that lets a reader seek to one record), and
every file opens with a ``warcinfo`` record naming its topic, partition and first offset.

The response is the one the fetcher received, with two honest changes: the body is stored decoded (the
raw page keeps it so), so ``Content-Encoding``, ``Transfer-Encoding`` and ``Content-Length`` are kept as
``X-Archive-Orig-*`` and a true ``Content-Length`` is added; and header names are lower-case, as the raw
page has them. The request record holds what is known of the request: method, target and ``Host``.

Claim-checked bodies are read back from S3 and checked against the page's ``body_sha256`` (inline bodies
too): a body that is missing or differs is dead-lettered, never archived. Record ids are derived from the
topic, partition and offset, and dates from the records, so a re-run writes byte-identical files.
"""

from __future__ import annotations

import base64
import hashlib
import io
import uuid
import zlib
from datetime import UTC, datetime
from http import HTTPStatus
from typing import Any, BinaryIO
from urllib.parse import urlsplit

from confluent_kafka import Message
from warcio.recordbuilder import RecordBuilder
from warcio.statusandheaders import StatusAndHeaders
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

import schemas
from connectors.sink.base import FileStart, Item, Sink, SinkFile
from connectors.sink.exceptions import SinkUnavailable, Unwritable
from connectors.storage.claim_check import ClaimCheckStore
from connectors.storage.exceptions import ClaimCheckError, ClaimCheckUnavailable
from schemas.exceptions import RegistryError

ID_NAMESPACE = uuid.UUID("8a3c0a64-6f7e-4f55-9d0b-3f1e2b9c7d10")  # ours: record ids are uuid5 in it
RENAMED = ("content-encoding", "transfer-encoding", "content-length")
WARC_VERSION = "WARC/1.0"


class WarcSink(Sink):
    """Raw pages (``DUALPLANE_TOPIC_PAGES_RAW``) into ``.warc.gz`` files."""

    name = "warc"
    extension = "warc.gz"
    content_type = "application/warc"

    def __init__(self, topic: str, codec: schemas.Codec, bodies: ClaimCheckStore, *, gzip_level: int) -> None:
        self.topic = topic
        self.codec = codec
        self.bodies = bodies
        self.gzip_level = gzip_level

    def prepare(self, message: Message) -> Item:
        try:
            page = self.codec.decode(message.value() or b"").record
        except RegistryError as error:
            raise SinkUnavailable(f"cannot decode a raw page: {error}") from error
        except Exception as error:
            raise Unwritable(f"undecodable raw page: {error}") from error
        return Item("", str(page.get("job_id") or ""), (page, self._body(page)))

    def open_file(self, stream: BinaryIO, start: FileStart, first: Item) -> SinkFile:
        return WarcFile(stream, start, self.gzip_level)

    def _body(self, page: dict[str, Any]) -> bytes:
        where = page.get("final_url") or page.get("url")
        expected, reference = page.get("body_sha256"), page.get("claim_check")
        if reference and not page.get("body"):
            try:
                return self.bodies.get(str(reference), sha256=expected)
            except ClaimCheckUnavailable as error:
                raise SinkUnavailable(str(error)) from error
            except ClaimCheckError as error:
                raise Unwritable(f"body of {where}: {error}") from error
        body = bytes(page.get("body") or b"")
        if expected and hashlib.sha256(body).hexdigest() != str(expected).lower():
            raise Unwritable(f"inline body of {where} does not match its body_sha256 {expected}: corrupted")
        return body


class WarcFile(SinkFile):
    """One ``.warc.gz``: warcinfo first, then request and response per page, each its own gzip member."""

    def __init__(self, stream: BinaryIO, start: FileStart, gzip_level: int) -> None:
        self.stream = stream
        self.start = start
        self.gzip_level = gzip_level
        self.builder = RecordBuilder(warc_version=WARC_VERSION)
        self._write_warcinfo()

    def write(self, item: Item, offset: int) -> None:
        page, body = item.payload
        url = str(page.get("final_url") or page["url"])
        date = _warc_date(page["fetched_at"])
        response_id = self._record_id(offset, "response")
        http = _response_headers(page, len(body))
        response = self.builder.create_warc_record(
            url,
            "response",
            payload=io.BytesIO(body),
            length=len(body),
            http_headers=http,
            warc_headers_dict={**_warc_headers(response_id, date, page), **_digests(http, body)},
        )
        request_http = _request_headers(url)
        request = self.builder.create_warc_record(
            url,
            "request",
            payload=io.BytesIO(b""),
            length=0,
            http_headers=request_http,
            warc_headers_dict={
                "WARC-Record-ID": self._record_id(offset, "request"),
                "WARC-Date": date,
                "WARC-Concurrent-To": response_id,
                **_digests(request_http, b""),
            },
        )
        self._write(request)
        self._write(response)

    def finish(self) -> None:
        self.stream.flush()

    def _write_warcinfo(self) -> None:
        info = {
            "software": "dualplane (warcio)",
            "format": "WARC File Format 1.0",
            "x-kafka-topic": self.start.topic,
            "x-kafka-partition": str(self.start.partition),
            "x-kafka-first-offset": str(self.start.first_offset),
        }
        record = self.builder.create_warcinfo_record(self.start.key.rsplit("/", 1)[-1], info)
        record.rec_headers.replace_header(
            "WARC-Record-ID", self._record_id(self.start.first_offset, "warcinfo")
        )
        record.rec_headers.replace_header("WARC-Date", _warc_date_ms(self.start.record_time_ms))
        self._write(record)

    def _write(self, record: Any) -> None:
        plain = io.BytesIO()
        WARCWriter(plain, gzip=False, warc_version=WARC_VERSION).write_record(record)
        compressor = zlib.compressobj(self.gzip_level, zlib.DEFLATED, zlib.MAX_WBITS | 16)
        self.stream.write(compressor.compress(plain.getbuffer()) + compressor.flush())

    def _record_id(self, offset: int, kind: str) -> str:
        name = f"{self.start.topic}/{self.start.partition}/{offset}/{kind}"
        return f"<urn:uuid:{uuid.uuid5(ID_NAMESPACE, name)}>"


def _digests(http: StatusAndHeaders, payload: bytes) -> dict[str, str]:
    """WARC-Block-Digest (HTTP head and payload) and WARC-Payload-Digest, as warcio would compute them
    (SHA-1, base32), computed once here so that warcio does not read the body twice more."""
    http.compute_headers_buffer(None)
    block = hashlib.sha1(http.headers_buff)
    block.update(payload)
    return {
        "WARC-Block-Digest": _sha1_label(block),
        "WARC-Payload-Digest": _sha1_label(hashlib.sha1(payload)),
    }


def _sha1_label(digest: Any) -> str:
    return "sha1:" + base64.b32encode(digest.digest()).decode("ascii")


def _response_headers(page: dict[str, Any], length: int) -> StatusAndHeaders:
    status = int(page["status"])
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    headers = []
    for name, value in dict(page.get("headers") or {}).items():
        archived = f"X-Archive-Orig-{name}" if name.lower() in RENAMED else name
        headers.append((archived, str(value)))
    headers.append(("Content-Length", str(length)))
    return StatusAndHeaders(f"{status} {phrase}", headers, protocol="HTTP/1.1")


def _request_headers(url: str) -> StatusAndHeaders:
    parts = urlsplit(url)
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return StatusAndHeaders(f"GET {target} HTTP/1.1", [("Host", parts.netloc)], is_http_request=True)


def _warc_headers(record_id: str, date: str, page: dict[str, Any]) -> dict[str, str]:
    headers = {"WARC-Record-ID": record_id, "WARC-Date": date}
    if page.get("body_truncated"):
        headers["WARC-Truncated"] = "length"
    if page.get("job_id"):
        headers["WARC-X-Dualplane-Job"] = str(page["job_id"])
    return headers


def _warc_date(value: datetime | int) -> str:
    if isinstance(value, int):
        return _warc_date_ms(value)
    return str(datetime_to_iso_date(value.replace(tzinfo=None) if value.tzinfo else value))


def _warc_date_ms(epoch_ms: int) -> str:
    return _warc_date(datetime.fromtimestamp(epoch_ms / 1000, UTC))
