"""The Avro sink's datum check: what fastavro wrote decodes, what no reader could read exactly is refused."""

from __future__ import annotations

import io

import fastavro
import pytest

from dualplane import schemas
from dualplane.connectors.sink.avro import AvroSink
from dualplane.connectors.sink.avro_check import DatumCheck
from dualplane.connectors.sink.exceptions import Unwritable
from dualplane.core.settings import Settings
from dualplane.schemas.wire import SINGLE_OBJECT_HEADER_BYTES
from tests.support.sink import record

pytestmark = pytest.mark.unit

SCHEMA = schemas.default_registry().get("page_record", 2)
VALUE = schemas.encode("page_record", record(7, 2), 2)
BODY = VALUE[SINGLE_OBJECT_HEADER_BYTES:]


class _Message:
    def __init__(self, value: bytes) -> None:
        self._value = value

    def value(self) -> bytes:
        return self._value


def test_a_datum_decodes_in_full_as_fastavro_reads_it() -> None:
    checked = DatumCheck(SCHEMA.definition)(memoryview(VALUE)[SINGLE_OBJECT_HEADER_BYTES:])
    expected = fastavro.schemaless_reader(io.BytesIO(BODY), SCHEMA.parsed, None)

    assert checked["url"] == expected["url"] and checked["links"] == expected["links"]
    assert checked["fetched_at"] == int(expected["fetched_at"].timestamp() * 1000)  # logical types as stored


def _damaged(body: bytes, at: int, byte: int) -> bytes:
    return body[:at] + bytes([byte]) + body[at + 1 :]


@pytest.mark.parametrize(
    "body",
    [
        BODY + b"\x00",
        BODY + b"\x02A",
        BODY + bytes(40),
        BODY[:-1],
        BODY[: len(BODY) // 2],
        b"",
        _damaged(BODY, 1, 0xFF),  # the url's first byte: not UTF-8
    ],
    ids=["1-trailing-zero", "2-trailing", "40-trailing", "cut-1", "cut-half", "empty", "not-utf8"],
)
def test_what_a_reader_could_not_read_exactly_is_refused_and_dead_lettered(body: bytes) -> None:
    with pytest.raises((EOFError, ValueError)):  # UnicodeDecodeError is a ValueError
        DatumCheck(SCHEMA.definition)(body)
    sink = AvroSink("records", schemas.Codec(Settings().topics), deflate=None)

    with pytest.raises(Unwritable, match=r"undecodable record: .* is not valid page_record v2 data"):
        sink.prepare(_Message(VALUE[:SINGLE_OBJECT_HEADER_BYTES] + body))  # type: ignore[arg-type]


def test_a_union_branch_out_of_range_is_refused_even_negative() -> None:
    check = DatumCheck({"type": "record", "name": "R", "fields": [{"name": "u", "type": ["null", "string"]}]})

    assert check(b"\x02\x02a") == {"u": "a"}
    for branch in (b"\x04", b"\x01"):  # 2 and -1 in Avro's zig-zag longs
        with pytest.raises(ValueError, match="union"):
            check(branch + b"\x02a")


def test_without_cavro_the_sink_checks_with_fastavro(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("dualplane.connectors.sink.avro_check.cavro", None)
    sink = AvroSink("records", schemas.Codec(Settings().topics), deflate=None)

    item = sink.prepare(_Message(VALUE))  # type: ignore[arg-type]
    assert bytes(item.payload) == BODY and item.job_id == "sink-job"
    with pytest.raises(Unwritable, match="undecodable record"):
        sink.prepare(_Message(VALUE + b"\x00"))  # type: ignore[arg-type]
