"""Avro container files from copied datum bytes: the independent ``avro`` package reads every record back."""

from __future__ import annotations

import io
from typing import Any

import fastavro
import pytest

from dualplane import schemas
from dualplane.connectors.sink.avro import BLOCK_RECORDS, AvroSink
from dualplane.connectors.sink.base import FileStart
from dualplane.connectors.sink.compression import deflate_block
from dualplane.core.settings import Settings, SinkSettings
from tests.support.archive import avro_rows
from tests.support.sink import record

pytestmark = pytest.mark.unit

START = FileStart("records", 1, 40, "archive/topic=records/partition=1/records+1+0000000040.avro", 0)


class _Message:
    def __init__(self, value: bytes) -> None:
        self._value = value

    def value(self) -> bytes:
        return self._value


def _file(sink_settings: SinkSettings, made: list[dict[str, Any]]) -> bytes:
    sink = AvroSink("records", schemas.Codec(Settings().topics), deflate=deflate_block(sink_settings))
    values = [schemas.encode("page_record", r, r["schema_version"]) for r in made]
    items = [sink.prepare(_Message(value)) for value in values]  # type: ignore[arg-type]
    out = io.BytesIO()
    written = sink.open_file(out, START, items[0])
    for offset, item in enumerate(items, start=START.first_offset):
        written.write(item, offset)
    written.finish()
    return out.getvalue()


@pytest.mark.parametrize(
    "sink_settings",
    [SinkSettings(), SinkSettings(gzip_engine="zlib"), SinkSettings(avro_codec="null")],
    ids=["isal-deflate", "zlib-deflate", "null"],
)
def test_blocks_of_copied_datums_read_back_with_the_avro_package(sink_settings: SinkSettings) -> None:
    made = [record(i, 2) for i in range(BLOCK_RECORDS + 234)]  # two blocks
    made[7]["title"] = "t" * 2_000_000  # a block past BLOCK_BYTES ends early

    data = _file(sink_settings, made)
    metadata, rows = avro_rows(data)

    assert [row["url"] for row in rows] == [r["url"] for r in made] and rows[7]["title"] == made[7]["title"]
    assert [row["url"] for row in fastavro.reader(io.BytesIO(data))] == [r["url"] for r in made]
    assert metadata["avro.codec"] == sink_settings.avro_codec
    assert metadata["dualplane.kafka.first_offset"] == "40"
    blocks = [block.num_records for block in fastavro.block_reader(io.BytesIO(data))]
    assert blocks == [8, BLOCK_RECORDS - 8, 234]  # the 2 MB record ends its block, then every 1000th
    assert _file(sink_settings, made) == data  # a re-run writes the same object
