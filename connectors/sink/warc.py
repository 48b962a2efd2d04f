"""``pages.raw`` to WARC: a ``request`` and a ``response`` record per fetched page, each gzipped on its own.

A 304 (a revisit whose page did not change) gets a ``revisit`` record instead of the response
(:mod:`connectors.sink.warc_revisit`).

Records are the bytes warcio would write (:mod:`connectors.sink.warc_records` builds them from templates,
the warcinfo record is warcio's own), so any WARC reader (``warcio index``/``check``, pywb, the Internet
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

import io
import uuid
from datetime import UTC, datetime, timedelta
from typing import Any, BinaryIO

from confluent_kafka import Message
from warcio.recordbuilder import RecordBuilder
from warcio.timeutils import datetime_to_iso_date
from warcio.warcwriter import WARCWriter

from dualplane import schemas
from dualplane.connectors.sink.base import FileStart, Item, Sink, SinkFile
from dualplane.connectors.sink.compression import GzipMember
from dualplane.connectors.sink.exceptions import SinkUnavailable, Unwritable
from dualplane.connectors.sink.raw_pages import RawPageDecoder
from dualplane.connectors.sink.warc_records import (
    WARC_VERSION,
    archived_uri,
    request_member,
    response_member,
    sha1,
    sha256,
)
from dualplane.connectors.sink.warc_revisit import is_revisit, revisit_member
from dualplane.connectors.storage.claim_check import ClaimCheckStore
from dualplane.connectors.storage.exceptions import ClaimCheckError, ClaimCheckUnavailable
from dualplane.schemas.exceptions import RegistryError

ID_NAMESPACE = uuid.UUID("8a3c0a64-6f7e-4f55-9d0b-3f1e2b9c7d10")  # ours: record ids are uuid5 in it
_NAMESPACE_BYTES = ID_NAMESPACE.bytes
EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


class WarcSink(Sink):
    """Raw pages (``DUALPLANE_TOPIC_PAGES_RAW``) into ``.warc.gz`` files."""

    name = "warc"
    extension = "warc.gz"
    content_type = "application/warc"
    threaded_prepare = True  # decode, two SHA-1 and gzip per page: most of it without the GIL

    def __init__(
        self, topic: str, codec: schemas.Codec, bodies: ClaimCheckStore, *, gzip: GzipMember
    ) -> None:
        self.topic = topic
        self.codec = codec
        self.decode = RawPageDecoder(codec)
        self.bodies = bodies
        self.gzip = gzip

    def prepare(self, message: Message) -> Item:
        """The page's request and response records, each gzipped, as the item's payload (bytes)."""
        try:
            page = self.decode(message.value() or b"")
        except RegistryError as error:
            raise SinkUnavailable(f"cannot decode a raw page: {error}") from error
        except Exception as error:
            raise Unwritable(f"undecodable raw page: {error}") from error
        body = self._body(page)
        try:
            members = self._members(message, page, body)
        except Exception as error:  # a page no record can be made of: dead-lettered, never a stop
            raise Unwritable(f"cannot archive a raw page: {type(error).__name__}: {error}") from error
        return Item("", str(page.get("job_id") or ""), members)

    def _members(self, message: Message, page: dict[str, Any], body: bytes) -> bytes:
        topic, partition, offset = message.topic() or "", message.partition() or 0, message.offset() or 0
        url = archived_uri(str(page.get("final_url") or page["url"]))
        date = _warc_date(page["fetched_at"])
        response_id = _record_id(topic, partition, offset, "response")
        request = request_member(
            url=url,
            record_id=_record_id(topic, partition, offset, "request"),
            concurrent_to=response_id,
            date=date,
            gzip=self.gzip,
        )
        if is_revisit(page):  # a 304: the page is the one an earlier capture holds
            return request + revisit_member(page, url=url, record_id=response_id, date=date, gzip=self.gzip)
        response = response_member(page, body, url=url, record_id=response_id, date=date, gzip=self.gzip)
        return request + response

    def open_file(self, stream: BinaryIO, start: FileStart, first: Item) -> SinkFile:
        return WarcFile(stream, start, self.gzip)

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
        if expected and sha256(body).hexdigest() != str(expected).lower():
            raise Unwritable(f"inline body of {where} does not match its body_sha256 {expected}: corrupted")
        return body


class WarcFile(SinkFile):
    """One ``.warc.gz``: warcinfo first, then request and response per page, each its own gzip member."""

    def __init__(self, stream: BinaryIO, start: FileStart, gzip: GzipMember) -> None:
        self.stream = stream
        self.start = start
        self.gzip = gzip
        self._write_warcinfo()

    def write(self, item: Item, offset: int) -> None:
        self.stream.write(item.payload)  # the page's records, built and gzipped by WarcSink.prepare

    def finish(self) -> None:
        self.stream.flush()

    def _write_warcinfo(self) -> None:
        """Once a file, so built by warcio's own record builder and writer."""
        info = {
            "software": "dualplane (warcio)",
            "format": "WARC File Format 1.0",
            "x-kafka-topic": self.start.topic,
            "x-kafka-partition": str(self.start.partition),
            "x-kafka-first-offset": str(self.start.first_offset),
        }
        builder = RecordBuilder(warc_version=WARC_VERSION)
        record = builder.create_warcinfo_record(self.start.key.rsplit("/", 1)[-1], info)
        record.rec_headers.replace_header(
            "WARC-Record-ID",
            _record_id(self.start.topic, self.start.partition, self.start.first_offset, "warcinfo"),
        )
        record.rec_headers.replace_header("WARC-Date", _warc_date_ms(self.start.record_time_ms))
        plain = io.BytesIO()
        WARCWriter(plain, gzip=False, warc_version=WARC_VERSION).write_record(record)
        self.stream.write(self.gzip(plain.getvalue()))


def _record_id(topic: str, partition: int, offset: int, kind: str) -> str:
    """``uuid5(ID_NAMESPACE, name)`` as a WARC record id, without building a ``UUID`` (10 µs, two a page)."""
    digest = bytearray(sha1(_NAMESPACE_BYTES + f"{topic}/{partition}/{offset}/{kind}".encode()).digest()[:16])
    digest[6] = (digest[6] & 0x0F) | 0x50  # version 5
    digest[8] = (digest[8] & 0x3F) | 0x80  # RFC 4122 variant
    hex_id = digest.hex()
    return f"<urn:uuid:{hex_id[:8]}-{hex_id[8:12]}-{hex_id[12:16]}-{hex_id[16:20]}-{hex_id[20:]}>"


def _warc_date(value: datetime | int) -> str:
    if isinstance(value, int):
        return _warc_date_ms(value)
    return str(datetime_to_iso_date(value.replace(tzinfo=None) if value.tzinfo else value))


def _warc_date_ms(epoch_ms: int) -> str:
    return _warc_date(EPOCH + timedelta(milliseconds=epoch_ms))  # exact, as fastavro reads timestamp-millis
