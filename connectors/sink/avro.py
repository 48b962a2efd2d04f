"""``records`` to Avro object container files: the writer schema in each file's header, one schema a file.

Every value on ``records`` is decoded with the schema it was written with, which proves it well-formed
(one that is not is dead-lettered): in dualplane's single-object framing by
:class:`~connectors.sink.avro_check.DatumCheck` (cavro, half fastavro's CPU), in Confluent's framing or
with a schema this process does not know by the codec (fastavro, resolving the schema). Its Avro body,
the datum bytes after the framing, is then copied as it is into a file whose header embeds that same
writer schema, so any Avro reader in any language opens the file with no dualplane code, and nothing is
encoded twice.
Records written with different schemas never share a file: the writer schema's fingerprint is the
item's ``kind``, and a change of kind ends the file. Blocks are
compressed with ``DUALPLANE_SINK_AVRO_CODEC`` (``deflate`` by default, which every Avro library reads), by
the engine ``DUALPLANE_SINK_GZIP_ENGINE`` names (:mod:`connectors.sink.compression`).

The sink reads ``records`` with ``read_committed``, so a file holds exactly the records of committed
extractor transactions. Each file's header also carries its topic, partition and first offset
(``dualplane.kafka.*`` metadata). The sync marker is derived from the key, so re-runs are byte-identical.
"""

from __future__ import annotations

import hashlib
import json
import logging
from typing import Any, BinaryIO

from confluent_kafka import Message
from fastavro import parse_schema, schemaless_writer
from fastavro.write import Writer

from dualplane import schemas
from dualplane.connectors.sink.avro_check import DatumCheck
from dualplane.connectors.sink.base import FileStart, Item, Sink, SinkFile
from dualplane.connectors.sink.compression import Deflate
from dualplane.connectors.sink.exceptions import SinkUnavailable, Unwritable
from dualplane.schemas.exceptions import CorruptRecord, RegistryError
from dualplane.schemas.wire import Frame, split

log = logging.getLogger(__name__)

SYNC_MARKER_BYTES = 16
AVRO_LONG = parse_schema("long")
BLOCK_RECORDS = 1000  # a block ends after each 1000th record of the file or once it holds BLOCK_BYTES:
BLOCK_BYTES = 16_000 * 64  # bigger blocks compress better, readers stream them anyway


class AvroSink(Sink):
    """Extracted records (``DUALPLANE_TOPIC_RECORDS``) into ``.avro`` object container files."""

    name = "avro"
    extension = "avro"
    content_type = "application/avro"

    def __init__(self, topic: str, codec: schemas.Codec, *, deflate: Deflate | None) -> None:
        self.topic = topic
        self.codec = codec
        self.deflate = deflate  # None: the "null" codec
        self._schemas: dict[str, Any] = {}  # kind -> fastavro's parsed writer schema
        self._checks: dict[str, DatumCheck | None] = {}  # kind -> the check of its datums

    def prepare(self, message: Message) -> Item:
        value = message.value() or b""
        try:
            frame = split(value)
            kind, record = self._checked(value, frame)
        except RegistryError as error:
            raise SinkUnavailable(f"cannot decode a record: {error}") from error
        except Exception as error:
            raise Unwritable(f"undecodable record: {error}") from error
        body = memoryview(value)[frame.body_offset :]  # the datum as written: no copy, no re-encoding
        return Item(kind, str(record.get("job_id") or ""), body)

    def _checked(self, value: bytes, frame: Frame) -> tuple[str, Any]:
        """The writer schema's fingerprint (hex) and the record, decoded in full: the proof it is valid."""
        known = None if frame.fingerprint is None else schemas.default_registry().find(frame.fingerprint)
        check = None if known is None else self._check_for(known)
        if (
            known is None or check is None
        ):  # Confluent framing, or a schema unknown here: the codec resolves it
            decoded = self.codec.decode(value)
            return self._writer_kind(decoded, value), decoded.record
        try:
            return f"{known.fingerprint:016x}", check(memoryview(value)[frame.body_offset :])
        except Exception as error:
            raise CorruptRecord(
                f"{frame.body_bytes}-byte body is not valid {known.name} v{known.version} data: {error!r}"
            ) from error

    def _check_for(self, known: schemas.RegisteredSchema) -> DatumCheck | None:
        """The check of ``known``'s datums, made once; None if cavro cannot read the schema."""
        kind = f"{known.fingerprint:016x}"
        if kind not in self._checks:
            definition: Any = known.definition
            try:
                self._checks[kind] = DatumCheck(definition)
            except Exception as error:
                log.warning(
                    "s3-sink: %s v%s is checked by fastavro, cavro cannot read it: %s",
                    known.name,
                    known.version,
                    error,
                )
                self._checks[kind] = None
            self._schemas[kind] = parse_schema(definition)
        return self._checks[kind]

    def open_file(self, stream: BinaryIO, start: FileStart, first: Item) -> SinkFile:
        return AvroFile(stream, start, self._schemas[first.kind], self.deflate)

    def _writer_kind(self, decoded: schemas.Decoded, value: bytes) -> str:
        """The writer schema's fingerprint (hex), remembering the schema for the file that will embed it."""
        kind = f"{decoded.writer_fingerprint or 0:016x}"
        if kind not in self._schemas:
            if decoded.writer_version is not None:
                definition: Any = (
                    schemas.default_registry().get(decoded.name, decoded.writer_version).definition
                )
            else:  # a Confluent-framed value of a version this process does not ship: ask the registry
                schema_id = split(value).schema_id
                assert schema_id is not None and self.codec.resolve_id is not None
                definition = json.loads(self.codec.resolve_id(schema_id))
            self._schemas[kind] = parse_schema(definition)
        return kind


class AvroFile(SinkFile):
    """One object container file with one writer schema; header and blocks go to ``stream``.

    fastavro writes the header (schema, codec, metadata, sync marker). Items are datum bytes of that
    schema, gathered into blocks of ``BLOCK_RECORDS``, framed here as the specification says (record
    count and size as Avro longs, the data, the sync marker) so that their deflate can be ISA-L's:
    fastavro's own block writer deflates with zlib, ~20x slower on these records.
    """

    def __init__(
        self, stream: BinaryIO, start: FileStart, parsed_schema: Any, deflate: Deflate | None
    ) -> None:
        metadata = {
            "dualplane.kafka.topic": start.topic,
            "dualplane.kafka.partition": str(start.partition),
            "dualplane.kafka.first_offset": str(start.first_offset),
        }
        self.stream = stream
        self.sync_marker = hashlib.sha256(start.key.encode()).digest()[:SYNC_MARKER_BYTES]
        codec = "deflate" if deflate else "null"
        Writer(stream, parsed_schema, codec, metadata=metadata, sync_marker=self.sync_marker)  # the header
        self.deflate = deflate
        self.block: list[memoryview] = []
        self.block_bytes = 0
        self.records = 0

    def write(self, item: Item, offset: int) -> None:
        self.block.append(item.payload)
        self.block_bytes += len(item.payload)
        self.records += 1
        if self.block_bytes >= BLOCK_BYTES or self.records % BLOCK_RECORDS == 0:
            self._write_block()

    def finish(self) -> None:
        self._write_block()
        self.stream.flush()

    def _write_block(self) -> None:
        if not self.block:
            return
        data = b"".join(self.block)
        if self.deflate:
            data = self.deflate(data)
        schemaless_writer(self.stream, AVRO_LONG, len(self.block))
        schemaless_writer(self.stream, AVRO_LONG, len(data))
        self.stream.write(data)
        self.stream.write(self.sync_marker)
        self.block, self.block_bytes = [], 0
