"""Encoding and decoding: realistic round trips, the single-object header, Confluent framing, bad input."""

from __future__ import annotations

import io
import json
import random
from datetime import UTC, datetime
from decimal import Decimal
from typing import Any

import avro.io as avro_io
import avro.schema as avro_schema
import pytest
from fastavro import schemaless_writer

from dualplane import schemas
from dualplane.schemas import Decoded, SchemaRegistry, decode, encode
from dualplane.schemas.exceptions import CorruptRecord, IncompatibleSchema, InvalidRecord, UnknownSchema
from dualplane.schemas.wire import confluent_header

pytestmark = pytest.mark.unit

FETCHED_AT = datetime(2024, 5, 17, 9, 30, 12, 345000, tzinfo=UTC)
EXTRACTED_AT = datetime(2024, 5, 17, 9, 30, 13, 10000, tzinfo=UTC)
IDS = {"job_id": "job-7f3a", "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736"}


def fetch_event() -> dict[str, Any]:
    return {
        **IDS,
        "task_id": "task-0001",
        "url": "https://shop.example.com/p/42",
        "final_url": "https://shop.example.com/products/42",
        "domain": "example.com",
        "outcome": "rate_limited",
        "status": 429,
        "latency_ms": 182,
        "bytes": 5120,
        "attempt": 2,
        "fetched_at": FETCHED_AT,
        "retry_after_s": 30.0,
        "detail": "429 Too Many Requests",
        "fetcher_id": "fetcher-a1",
    }


def fetch_event_v2() -> dict[str, Any]:
    return {**fetch_event(), "outcome": "not_modified", "status": 304, "bytes": 0, "conditional": True}


def fetch_event_v3() -> dict[str, Any]:
    return {**fetch_event_v2(), "outcome": "ok", "status": 200, "api_credits": 10.0}


def raw_page() -> dict[str, Any]:
    return {
        **IDS,
        "task_id": "task-0001",
        "url": "http://shop.example.com/p/42",
        "final_url": "https://shop.example.com/products/42",
        "domain": "example.com",
        "depth": 2,
        "attempt": 1,
        "status": 200,
        "fetched_at": FETCHED_AT,
        "content_type": "text/html",
        "charset": "windows-1252",
        "headers": {"content-type": "text/html; charset=windows-1252", "etag": '"abc"'},
        "redirect_chain": ["http://shop.example.com/p/42", "https://shop.example.com/p/42"],
        "body": "<html><body>Caf\xe9 cr\xe8me 12,99\xa0\u20ac</body></html>".encode("cp1252"),
        "body_truncated": False,
        "claim_check": None,
    }


def raw_page_v2() -> dict[str, Any]:
    """A claim-checked page: the body is in S3, the envelope says where and which bytes."""
    digest = "9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08"
    return {
        **raw_page(),
        "body": b"",
        "claim_check": f"s3://dualplane/claim-checks/sha256/{digest}",
        "body_sha256": digest,
        "body_bytes": 20_971_520,
    }


def raw_page_v3() -> dict[str, Any]:
    """A page of a job that chose an extractor plugin."""
    return {**raw_page_v2(), "extractor": "reviews"}


def page_record(version: int) -> dict[str, Any]:
    product: dict[str, Any] = {
        "name": "Espresso machine \u201cBarista\u201d",
        "price": Decimal("1299.99"),
        "currency": "EUR",
        "availability": "in_stock",
        "sku": "BAR-1299",
        "brand": "Acme",
        "images": ["https://cdn.example.com/i/1.jpg", "https://cdn.example.com/i/2.jpg"],
    }
    record: dict[str, Any] = {
        "url": "http://shop.example.com/p/42",
        "final_url": "https://shop.example.com/products/42",
        "canonical_url": "https://shop.example.com/products/42",
        "domain": "example.com",
        **IDS,
        "fetched_at": FETCHED_AT,
        "extracted_at": EXTRACTED_AT,
        "extractor_version": "1.4.0",
        "schema_version": version,
        "status": 200,
        "content_type": "text/html",
        "language": "de",
        "title": "Barista \u2013 Acme",
        "description": None,
        "text": "Die Maschine f\u00fcr zu Hause. \u2615",
        "links": [
            {"url": "https://shop.example.com/cart", "rel": "nofollow", "nofollow": True, "text": "Cart"},
            {"url": "https://shop.example.com/", "rel": None, "nofollow": False, "text": None},
        ],
        "product": product,
        "article": {
            "headline": "Review",
            "authors": ["A. Writer"],
            "published_at": datetime(2023, 12, 1, tzinfo=UTC),
            "body": None,
        },
    }
    if version >= 2:
        record["word_count"] = 6
        product["gtin"] = "04006381333931"
    if version >= 3:
        record["extractor_version"] = "reviews/0.2.0"
        record["extractor"] = "reviews"
        reviews = '{"reviews": [{"stars": 5, "text": "Gr\u00fc\u00df"}]}'
        record["data"] = {"schema": "reviews/1", "json": reviews}
        product |= {"price_source": "json-ld", "currency_source": "json-ld", "availability_source": "markup"}
        product |= {"sku_source": "microdata", "gtin_source": "embedded-json", "brand_source": None}
    return record


def dead_letter() -> dict[str, Any]:
    return {
        "source_topic": "pages.raw",
        "source_partition": 3,
        "source_offset": 1_234_567_890_123,
        "key": b"https://shop.example.com/products/42",
        "payload": b"\xc3\x01garbage\x00\xff",
        "reason": "CorruptRecord: truncated body",
        "stage": "extractor",
        "failed_at": EXTRACTED_AT,
        "job_id": None,
        "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
    }


def throttle_command() -> dict[str, Any]:
    return {
        "domain": "example.com",
        "concurrency": 1,
        "delay_ms": 5000,
        "paused": False,
        "reason": "blocked ratio 0.42 over 60 s",
        "issued_at": EXTRACTED_AT,
        "source": "auto",
        "ttl_s": 900,
        "blocked_ratio": 0.42,
        "window_total": 50,
        "window_blocked": 21,
    }


def throttle_command_v2() -> dict[str, Any]:
    return {**throttle_command(), "rate_rps": 4.05, "limit_rps": 5.3}


def change_event() -> dict[str, Any]:
    return {
        "url": "https://shop.example.com/products/42",
        "canonical_url": "https://shop.example.com/products/42",
        "job_id": "watch-shops",
        "trace_id": "4bf92f3577b34da6a3ce929d0e0e4736",
        "fetched_at": EXTRACTED_AT,
        "previous_fetched_at": datetime(2024, 5, 10, 9, 30, tzinfo=UTC),
        "changed": ["price", "availability"],
        "price_from": Decimal("19.9900"),
        "price_to": Decimal("17.4900"),
        "currency_from": "EUR",
        "currency_to": "EUR",
        "availability_from": "in_stock",
        "availability_to": "limited",
        "title_from": "Kettle",
        "title_to": "Kettle",
        "text_fingerprint_from": "0123456789abcdef",
        "text_fingerprint_to": "0123456789abcdef",
    }


def change_event_v2() -> dict[str, Any]:
    """v2 adds kind: a URL that left a monitor's schedule after 404s on consecutive visits."""
    return {
        **{name: None for name in change_event() if name.endswith(("_from", "_to"))},
        "url": "https://shop.example.com/products/41",
        "canonical_url": "https://shop.example.com/products/41",
        "job_id": "watch-shops-v3",
        "trace_id": "5cf92f3577b34da6a3ce929d0e0e4737",
        "fetched_at": EXTRACTED_AT,
        "previous_fetched_at": datetime(2024, 5, 10, 9, 30, tzinfo=UTC),
        "changed": [],
        "kind": "gone",
    }


def realistic(name: str, version: int) -> dict[str, Any]:
    """A realistic record of every packaged schema version; a new version must be added here."""
    builders = {
        ("fetch_event", 1): fetch_event,
        ("fetch_event", 2): fetch_event_v2,
        ("fetch_event", 3): fetch_event_v3,
        ("raw_page", 1): raw_page,
        ("raw_page", 2): raw_page_v2,
        ("raw_page", 3): raw_page_v3,
        ("page_record", 1): lambda: page_record(1),
        ("page_record", 2): lambda: page_record(2),
        ("page_record", 3): lambda: page_record(3),
        ("dead_letter", 1): dead_letter,
        ("throttle_command", 1): throttle_command,
        ("throttle_command", 2): throttle_command_v2,
        ("change_event", 1): change_event,
        ("change_event", 2): change_event_v2,
    }
    if (name, version) not in builders:
        pytest.fail(f"add a realistic {name} v{version} record to tests/schemas/test_codec.py")
    return builders[(name, version)]()


EVERY_VERSION = [(s.name, s.version) for s in schemas.all_schemas()]


@pytest.mark.parametrize(("name", "version"), EVERY_VERSION)
def test_every_schema_version_round_trips_a_realistic_record(name: str, version: int) -> None:
    record = realistic(name, version)

    decoded = decode(encode(name, record, version))

    assert decoded == Decoded(name, version, record, version, schemas.fingerprint(name, version))


def test_encode_uses_the_latest_version_by_default() -> None:
    latest = schemas.latest_version("page_record")
    assert latest == 3
    data = encode("page_record", page_record(latest))
    assert data[2:10] == schemas.fingerprint("page_record", latest).to_bytes(8, "little")
    assert decode(data).version == latest


def test_single_object_header_is_marker_then_little_endian_crc64_fingerprint() -> None:
    data = encode("fetch_event", fetch_event(), 1)
    fingerprint = schemas.fingerprint("fetch_event", 1)

    assert data[:2] == b"\xc3\x01"
    assert data[2:10] == bytes((fingerprint >> (8 * i)) & 0xFF for i in range(8))
    body = io.BytesIO()
    schemaless_writer(body, schemas.default_registry().get("fetch_event", 1).parsed, fetch_event())
    assert data[10:] == body.getvalue()


def test_decimal_price_round_trips_exactly_as_decimal() -> None:
    record = page_record(2)
    record["product"]["price"] = Decimal("0.0001")

    price = decode(encode("page_record", record)).record["product"]["price"]

    assert isinstance(price, Decimal)
    assert price == Decimal("0.0001")
    assert price.as_tuple().exponent == -4  # the schema's scale


def test_price_with_more_digits_than_the_scale_is_refused_not_rounded() -> None:
    record = page_record(3)
    record["product"]["price"] = Decimal("19.99999")

    with pytest.raises(InvalidRecord, match="page_record v3"):
        encode("page_record", record)


def test_timestamps_accept_epoch_millis_and_decode_as_aware_utc() -> None:
    record = fetch_event()
    record["fetched_at"] = 1_715_938_212_345

    fetched_at = decode(encode("fetch_event", record)).record["fetched_at"]

    assert fetched_at == FETCHED_AT
    assert fetched_at.tzinfo is not None


def test_fields_with_defaults_may_be_omitted() -> None:
    record = fetch_event()
    del record["detail"], record["fetcher_id"], record["retry_after_s"]

    decoded = decode(encode("fetch_event", record)).record

    assert (decoded["detail"], decoded["fetcher_id"], decoded["retry_after_s"]) == ("", "", None)


@pytest.mark.parametrize(
    ("change", "field"),
    [
        (lambda r: r.pop("url"), "url"),
        (lambda r: r.update(status="200"), "status"),
        (lambda r: r.update(unexpected=1), "unexpected"),
    ],
    ids=["missing-field", "wrong-type", "extra-field"],
)
def test_a_record_not_matching_its_schema_is_an_invalid_record(change: Any, field: str) -> None:
    record = fetch_event()
    change(record)

    with pytest.raises(InvalidRecord, match=field):
        encode("fetch_event", record)


def test_unknown_name_or_version_is_an_unknown_schema() -> None:
    with pytest.raises(UnknownSchema, match="no schema named 'nope'"):
        encode("nope", {})
    with pytest.raises(UnknownSchema, match="no version 9"):
        encode("page_record", page_record(2), 9)


def test_unknown_fingerprint_names_it_and_says_what_to_do() -> None:
    data = b"\xc3\x01" + (0x0123456789ABCDEF).to_bytes(8, "little") + b"\x00"

    with pytest.raises(UnknownSchema) as raised:
        decode(data)

    assert "writer schema fingerprint 0x0123456789abcdef is not known to this process" in str(raised.value)
    assert "publish_schemas" in str(raised.value)
    assert raised.value.fingerprint == 0x0123456789ABCDEF


def test_v2_reader_reads_v1_data_with_new_fields_defaulted() -> None:
    v1 = page_record(1)

    decoded = decode(encode("page_record", v1, 1), reader_version=2)

    assert (decoded.version, decoded.writer_version) == (2, 1)
    assert decoded.record["word_count"] is None
    assert decoded.record["product"]["gtin"] is None
    assert decoded.record["product"]["price"] == v1["product"]["price"]
    assert decoded.record["schema_version"] == 1  # still says which version wrote it


def test_v1_reader_reads_v2_data_without_the_new_fields() -> None:
    decoded = decode(encode("page_record", page_record(2), 2), reader_version=1)

    assert decoded.version == 1
    assert "word_count" not in decoded.record
    assert "gtin" not in decoded.record["product"]


def test_an_unresolvable_reader_is_an_incompatible_schema() -> None:
    registry = SchemaRegistry()
    registry.register("probe", 1, _record_schema([{"name": "a", "type": "string"}]))
    registry.register(
        "probe", 2, _record_schema([{"name": "a", "type": "string"}, {"name": "b", "type": "int"}])
    )

    with pytest.raises(IncompatibleSchema, match=r"probe v1 .* cannot be read as probe v2"):
        decode(encode("probe", {"a": "x"}, 1, registry=registry), reader_version=2, registry=registry)


@pytest.mark.parametrize(
    "data",
    [b"", b"{}", b"\xc3", b"\xc3\x01\x00\x01", b"\x00\x00\x01"],
    ids=["empty", "json", "half-marker", "short-header", "short-confluent"],
)
def test_bytes_in_neither_format_are_a_corrupt_record(data: bytes) -> None:
    with pytest.raises(CorruptRecord):
        decode(data, resolve_id=lambda _id: "{}")


def test_truncated_and_padded_bodies_are_corrupt_records() -> None:
    data = encode("page_record", page_record(3))

    with pytest.raises(CorruptRecord, match="not valid page_record v3"):
        decode(data[:-7])
    with pytest.raises(CorruptRecord, match="2 unexpected trailing bytes"):
        decode(data + b"\x00\x00")


def test_random_corruption_only_ever_raises_schema_errors() -> None:
    data = encode("page_record", page_record(2))
    rng = random.Random(20240517)
    outcomes: set[str] = set()
    for _ in range(3000):
        mutated = bytearray(data)
        for _ in range(rng.randint(1, 4)):
            if len(mutated) <= 10:
                break
            position = rng.randrange(10, len(mutated))
            if rng.random() < 0.7:
                mutated[position] = rng.randrange(256)
            else:
                del mutated[position:]
        try:
            decode(bytes(mutated))
            outcomes.add("decoded")
        except CorruptRecord:
            outcomes.add("corrupt")
    assert "corrupt" in outcomes


class TestConfluentWireFormat:
    """Magic byte 0, 4-byte big-endian schema id, Avro body: hand-built, resolved through a callback."""

    def _message(self, schema_id: int, name: str, version: int, record: dict[str, Any]) -> bytes:
        body = io.BytesIO()
        schemaless_writer(body, schemas.default_registry().get(name, version).parsed, record)
        return confluent_header(schema_id) + body.getvalue()

    def test_header_layout(self) -> None:
        assert confluent_header(0x01020304) == b"\x00\x01\x02\x03\x04"

    def test_known_schema_resolves_to_its_name_and_version(self) -> None:
        registry_json = {4711: schemas.default_registry().get("page_record", 1).schema_json()}
        asked: list[int] = []

        def resolve_id(schema_id: int) -> str:
            asked.append(schema_id)
            return registry_json[schema_id]

        data = self._message(4711, "page_record", 1, page_record(1))
        decoded = decode(data, resolve_id=resolve_id)

        assert asked == [4711]
        assert (decoded.name, decoded.version, decoded.record) == ("page_record", 1, page_record(1))
        assert decode(data, resolve_id=resolve_id, reader_version=2).record["word_count"] is None

    def test_unknown_version_of_a_known_record_reads_as_the_latest_version(self) -> None:
        newer = json.loads(schemas.default_registry().get("throttle_command").schema_json())
        newer["fields"].append({"name": "region", "type": "string", "default": "eu"})
        record = {**throttle_command_v2(), "region": "us"}
        body = io.BytesIO()
        registry = SchemaRegistry()
        registry.register("scratch", 1, newer)
        schemaless_writer(body, registry.get("scratch").parsed, record)

        decoded = decode(confluent_header(9) + body.getvalue(), resolve_id=lambda _id: json.dumps(newer))

        assert (decoded.name, decoded.version, decoded.writer_version) == ("throttle_command", 2, None)
        assert decoded.record == throttle_command_v2()

    def test_unknown_record_name_is_an_unknown_schema(self) -> None:
        schema = _record_schema([{"name": "a", "type": "string"}], name="Stranger")
        with pytest.raises(UnknownSchema, match=r"dualplane\.Stranger"):
            decode(b"\x00\x00\x00\x00\x05\x02a", resolve_id=lambda _id: json.dumps(schema))

    def test_without_resolve_id_the_message_says_how_to_read_it(self) -> None:
        expected = r"Confluent wire format \(schema id 5\).*DUALPLANE_SCHEMA_REGISTRY_URL"
        with pytest.raises(UnknownSchema, match=expected):
            decode(b"\x00\x00\x00\x00\x05\x02a")


def test_an_independent_avro_implementation_reads_what_we_encode() -> None:
    for name, version in EVERY_VERSION:
        record = realistic(name, version)
        data = encode(name, record, version)
        writer = avro_schema.parse(schemas.default_registry().get(name, version).schema_json())

        decoded = avro_io.DatumReader(writer).read(avro_io.BinaryDecoder(io.BytesIO(data[10:])))

        assert decoded == record, f"{name} v{version}"


def _record_schema(fields: list[dict[str, Any]], name: str = "Probe") -> dict[str, Any]:
    return {"type": "record", "name": name, "namespace": "dualplane", "fields": fields}
