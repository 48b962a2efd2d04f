"""``records`` to Avro object container files: the writer schema in each file's header, one schema a file.

Every value on ``records`` is decoded with the schema it was written with (single-object or Confluent
framing) and written with that same schema into a file whose header embeds it, so any Avro reader in any
language opens the file with no dualplane code. Records written with different schema versions never
share a file: the version is the item's ``kind``, and a change of kind ends the file. Blocks are
compressed with ``DUALPLANE_SINK_AVRO_CODEC`` (``deflate`` by default, which every Avro library reads).

The sink reads ``records`` with ``read_committed``, so a file holds exactly the records of committed
extractor transactions. Each file's header also carries its topic, partition and first offset
(``dualplane.kafka.*`` metadata). The sync marker is derived from the key, so re-runs are byte-identical.
"""

from __future__ import annotations

import hashlib
import json
from typing import Any, BinaryIO

from confluent_kafka import Message
from fastavro import parse_schema
from fastavro.write import Writer

import schemas
from connectors.sink.base import FileStart, Item, Sink, SinkFile
from connectors.sink.exceptions import SinkUnavailable, Unwritable
from schemas.exceptions import RegistryError
from schemas.wire import split

SYNC_MARKER_BYTES = 16
BLOCK_RECORDS = 1000  # records per Avro block: bigger blocks compress better; readers stream them anyway


class AvroSink(Sink):
    """Extracted records (``DUALPLANE_TOPIC_RECORDS``) into ``.avro`` object container files."""

    name = "avro"
    extension = "avro"
    content_type = "application/avro"

    def __init__(self, topic: str, codec: schemas.Codec, *, avro_codec: str) -> None:
        self.topic = topic
        self.codec = codec
        self.avro_codec = avro_codec
        self._schemas: dict[str, Any] = {}  # kind -> fastavro's parsed writer schema

    def prepare(self, message: Message) -> Item:
        value = message.value() or b""
        try:
            decoded = self.codec.decode(value)
            kind = self._writer_kind(decoded, value)
        except RegistryError as error:
            raise SinkUnavailable(f"cannot decode a record: {error}") from error
        except Exception as error:
            raise Unwritable(f"undecodable record: {error}") from error
        return Item(kind, str(decoded.record.get("job_id") or ""), decoded.record)

    def open_file(self, stream: BinaryIO, start: FileStart, first: Item) -> SinkFile:
        return AvroFile(stream, start, self._schemas[first.kind], self.avro_codec)

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
    """One object container file with one writer schema; header and blocks go to ``stream``."""

    def __init__(self, stream: BinaryIO, start: FileStart, parsed_schema: Any, codec: str) -> None:
        metadata = {
            "dualplane.kafka.topic": start.topic,
            "dualplane.kafka.partition": str(start.partition),
            "dualplane.kafka.first_offset": str(start.first_offset),
        }
        sync_marker = hashlib.sha256(start.key.encode()).digest()[:SYNC_MARKER_BYTES]
        self.writer = Writer(
            stream,
            parsed_schema,
            codec,
            sync_interval=16_000 * 64,
            metadata=metadata,
            sync_marker=sync_marker,
        )
        self.records = 0

    def write(self, item: Item, offset: int) -> None:
        self.writer.write(item.payload)
        self.records += 1
        if self.records % BLOCK_RECORDS == 0:
            self.writer.flush()

    def finish(self) -> None:
        self.writer.flush()
