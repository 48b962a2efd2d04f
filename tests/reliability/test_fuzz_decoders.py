"""Every decoder of outside input, fuzzed with hypothesis: no exception escapes but the decoder's own
reject, and every reject says why. A fixed example budget and derandomized runs keep CI repeatable.

Decoders: control messages (JSON, nested without bound), raw-page envelopes in both Avro wire
formats (single-object and Confluent), robots.txt, URLs, charsets, a whole extraction, the
extractor service's handling of any raw page, and the S3 sink's WARC records of any raw page.
"""

from __future__ import annotations

import contextlib
import io
import json
from datetime import UTC, datetime
from typing import Any

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st
from protego import Protego
from warcio.archiveiterator import ArchiveIterator

from dualplane import schemas
from dualplane.brokers.amqp.exceptions import MessageRejected
from dualplane.brokers.amqp.messages import MESSAGE_TYPES, ControlMessage, decode
from dualplane.connectors.sink.compression import gzip_member
from dualplane.connectors.sink.warc import WarcSink
from dualplane.control_plane.frontier.robots import _Policy
from dualplane.core.json_bounds import loads_bounded
from dualplane.core.settings import Settings, SinkSettings
from dualplane.core.web.charset import detect_charset
from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import canonicalize, domain_of
from dualplane.data_plane.extract.exceptions import ExtractionFailed
from dualplane.data_plane.extract.offline import raw_page
from dualplane.data_plane.extract.record import extract_record
from dualplane.data_plane.extract.source import read_source
from dualplane.data_plane.extractor.service import Extractor
from dualplane.schemas.exceptions import SchemaError
from dualplane.schemas.registry import or_default

pytestmark = pytest.mark.unit

AT = datetime(2026, 11, 1, 12, tzinfo=UTC)
BUDGET = settings(
    max_examples=200,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)
# A whole extraction per example: fewer of them.
SMALL_BUDGET = settings(
    max_examples=40,
    derandomize=True,
    database=None,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow],
)

json_values = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=30),
    lambda children: (
        st.lists(children, max_size=4) | st.dictionaries(st.text(max_size=10), children, max_size=4)
    ),
    max_leaves=20,
)
field_names = st.sampled_from(
    ["kind", "version", "job_id", "url", "urls", "depth", "trace_id", "domain", "task_id", "seed"]
)


def _message_like(kind: str, fields: dict[str, Any]) -> bytes:
    return json.dumps({"kind": kind, **fields}).encode()


@BUDGET
@given(st.binary(max_size=400))
def test_control_messages_from_any_bytes(body: bytes) -> None:
    _decodes_or_says_why(body)


@BUDGET
@given(st.sampled_from(sorted(MESSAGE_TYPES)), st.dictionaries(field_names, json_values, max_size=6))
@example("discovered", {"version": []})  # found here: a TypeError escaped decode (unhashable version)
def test_control_messages_of_a_known_kind_with_any_fields(kind: str, fields: dict[str, Any]) -> None:
    _decodes_or_says_why(_message_like(kind, fields))


@BUDGET
@given(st.integers(min_value=1, max_value=200_000), st.sampled_from([b"[", b'{"a":']))
def test_control_messages_nested_to_any_depth(depth: int, opener: bytes) -> None:
    closer = b"]" if opener == b"[" else b"}"
    _decodes_or_says_why(b'{"kind":"discovered","url":' + opener * depth + b"1" + closer * depth + b"}")


def _decodes_or_says_why(body: bytes) -> None:
    try:
        message = decode(body)
    except MessageRejected as rejected:
        assert rejected.reason.strip()
        return
    assert isinstance(message, ControlMessage)


@BUDGET
@given(st.binary(max_size=2000))
def test_bounded_json_raises_only_value_errors(data: bytes) -> None:
    # JsonTooDeep, JSONDecodeError and UnicodeDecodeError are ValueErrors; RecursionError is not.
    with contextlib.suppress(ValueError):
        loads_bounded(data)


def _valid_raw_page() -> bytes:
    page = {
        **raw_page(b"<html><title>t</title></html>", "https://fuzz.example/p", fetched_at=AT),
        "task_id": "t",
    }
    return schemas.encode("raw_page", page)


VALID = _valid_raw_page()
HEADER_BYTES = 10


@BUDGET
@given(st.binary(max_size=600))
def test_single_object_avro_with_any_body(body: bytes) -> None:
    _avro_decodes_or_says_why(VALID[:HEADER_BYTES] + body)


@BUDGET
@given(
    st.integers(min_value=0, max_value=len(VALID) - 1), st.integers(min_value=0, max_value=255), st.booleans()
)
def test_single_object_avro_flipped_or_cut(position: int, value: int, cut: bool) -> None:
    data = VALID[:position] if cut else VALID[:position] + bytes([value]) + VALID[position + 1 :]
    _avro_decodes_or_says_why(data)


@BUDGET
@given(st.integers(min_value=0, max_value=2**32 - 1), st.binary(max_size=600))
def test_confluent_avro_with_any_schema_id_and_body(schema_id: int, body: bytes) -> None:
    writer = or_default(None).get("raw_page")

    def resolve_id(requested: int) -> str:
        if requested != 1:
            raise SchemaError(f"the registry has no schema {requested}")
        return writer.schema_json

    data = b"\x00" + schema_id.to_bytes(4, "big") + body
    _avro_decodes_or_says_why(data, resolve_id)


def _avro_decodes_or_says_why(data: bytes, resolve_id: Any = None) -> None:
    try:
        decoded = schemas.decode(data, resolve_id=resolve_id)
    except SchemaError as rejected:
        assert str(rejected).strip()
        return
    assert isinstance(decoded.record, dict)


@BUDGET
@given(st.text(max_size=600), st.text(max_size=80), st.text(max_size=20))
def test_robots_txt_of_any_text_gives_a_verdict(robots: str, path: str, agent: str) -> None:
    policy = _Policy(Protego.parse(robots), True, "robots.txt", 0.0)
    verdict = policy.verdict(f"https://fuzz.example/{path}", agent or "dualplane")
    assert verdict.reason


@BUDGET
@given(st.text(max_size=200))
def test_any_text_as_a_url_is_canonical_or_invalid(text: str) -> None:
    for parse in (canonicalize, domain_of):
        try:
            result = parse(text)
        except InvalidUrl as invalid:
            assert str(invalid).strip()
        else:
            assert result


@BUDGET
@given(st.one_of(st.none(), st.text(max_size=60)), st.binary(max_size=400))
def test_any_charset_label_and_bytes_decode(header: str | None, body: bytes) -> None:
    codec = detect_charset(header, body)
    assert codec
    source = read_source(body, "text/html", header)
    assert isinstance(source.text, str)


@SMALL_BUDGET
@given(st.binary(max_size=3000), st.sampled_from(["text/html", "text/plain", "application/xhtml+xml", None]))
def test_extraction_of_any_body_gives_a_record_or_a_reason(body: bytes, content_type: str | None) -> None:
    page = raw_page(body, "https://fuzz.example/p", fetched_at=AT, content_type=content_type)
    try:
        record = extract_record(page)
    except ExtractionFailed as failed:
        assert failed.reason.strip()
        return
    assert record["url"] == "https://fuzz.example/p"


class _Produced:
    """What the extractor hands to its Kafka producer (no broker here; it has no other output)."""

    def __init__(self) -> None:
        self.messages: list[tuple[str, bytes]] = []

    def produce(self, topic: str, value: bytes, key: bytes | None = None, **_: Any) -> None:
        self.messages.append((topic, value))


EXTRACTOR = Extractor(Settings())
page_urls = st.one_of(st.text(max_size=60), st.just("https://fuzz.example/p"))
content_types = st.one_of(st.none(), st.sampled_from(["text/html", "application/pdf"]), st.text(max_size=20))
raw_page_fields = st.fixed_dictionaries(
    {
        "url": page_urls,
        "final_url": page_urls,
        "job_id": st.text(max_size=20),
        "depth": st.integers(min_value=-(2**31), max_value=2**31 - 1),
        "status": st.integers(min_value=-(2**31), max_value=2**31 - 1),
        "charset": st.one_of(st.none(), st.text(max_size=12)),
        "content_type": content_types,
    }
)


@SMALL_BUDGET
@given(
    raw_page_fields, st.one_of(st.binary(max_size=600), st.sampled_from([b"", b'<a href="/next">next</a>']))
)
@example({"depth": -2}, b'<a href="/next">next</a>')  # found auditing #16: the extractor crash-looped
def test_the_extractor_ends_any_raw_page_as_one_record_or_one_dead_letter(
    fields: dict[str, Any], body: bytes
) -> None:
    page = {**raw_page(body, "https://fuzz.example/p", fetched_at=AT), "task_id": "t", **fields}
    produced = _Produced()
    EXTRACTOR.handled.aborted()  # each example in a transaction of its own: no page was handled before
    EXTRACTOR._handle(_Message(schemas.encode("raw_page", page)), produced)  # type: ignore[arg-type]

    topics = EXTRACTOR.settings.topics
    ends = [topic for topic, _ in produced.messages if topic in (topics.records, topics.dead_letters)]
    assert len(ends) == 1, ends
    if ends == [topics.dead_letters]:
        letter = schemas.decode(next(v for t, v in produced.messages if t == topics.dead_letters)).record
        assert letter["reason"].strip() and letter["stage"]


class _Message:
    def __init__(self, value: bytes) -> None:
        self._value = value

    def value(self) -> bytes:
        return self._value

    def topic(self) -> str:
        return "pages.raw"

    def partition(self) -> int:
        return 0

    def offset(self) -> int:
        return 7

    def key(self) -> bytes:
        return b"key"


WARC_SINK = WarcSink(
    "pages.raw",
    schemas.codec_for(Settings()),
    None,  # type: ignore[arg-type]  # bodies are inline here: no claim check is read
    gzip=gzip_member(SinkSettings(gzip_engine="zlib")),
)
RESPONSE_FIELDS = {
    "WARC-Record-ID", "WARC-Date", "WARC-X-Dualplane-Job", "WARC-Block-Digest", "WARC-Payload-Digest",
    "WARC-Type", "WARC-Target-URI", "Content-Type", "Content-Length",
}  # fmt: skip
urls = st.one_of(
    st.text(max_size=80),
    st.builds(lambda host, path: f"http://{host}/{path}", st.text(max_size=15), st.text(max_size=40)),
)


@BUDGET
@given(
    urls,
    st.text(max_size=30),
    st.dictionaries(st.text(max_size=15), st.text(max_size=30), max_size=4),
    st.integers(min_value=-(2**31), max_value=2**31 - 1),
    st.binary(max_size=300),
)
@example("http://bücher.example/straße", "", {}, 200, b"<p>an IRI</p>")  # found here: a non-ASCII URL raised
@example("http://a.example/", "job\r\n\r\nWARC-Type: resource", {}, 200, b"x")  # cut the WARC head short
@example("http://a.example/", "j", {"X-A": "1\r\nSet-Cookie: injected"}, 200, b"x")
@example("http://a.example/", "j", {"Ünïcode": "v"}, 200, b"x")  # found here: a non-ASCII header name raised
def test_any_raw_page_is_archived_as_two_records_a_warc_reader_reads_back(
    url: str, job_id: str, headers: dict[str, str], status: int, body: bytes
) -> None:
    made = raw_page(
        body, "http://fuzz.example/", fetched_at=AT, job_id=job_id, status=status, headers=headers
    )
    page = {**made, "url": url, "final_url": url, "task_id": "t"}
    item = WARC_SINK.prepare(_Message(schemas.encode("raw_page", page)))  # type: ignore[arg-type]

    read = []
    for record in ArchiveIterator(io.BytesIO(item.payload)):
        fields = [name for name, _ in record.rec_headers.headers]
        read.append(
            (record.rec_type, fields, record.rec_headers, record.http_headers, record.raw_stream.read())
        )
    assert [kind for kind, *_ in read] == ["request", "response"]
    (_, _, request, _, _), (_, fields, response, http, payload) = read
    if http is None:  # warcio reads the HTTP head only under an http(s) URI: the block is head and body
        head, _, payload = payload.partition(b"\r\n\r\n")
        assert head.count(b"\r\n") == len(headers) + 1  # the status line, each header and the length
    else:
        assert len(http.headers) == len(headers) + 1  # each of the page's headers, and the true length
    assert payload == body
    assert len(fields) == len(set(fields)) and set(fields) <= RESPONSE_FIELDS, fields
    assert ("WARC-X-Dualplane-Job" in fields) == bool(job_id)
    target = response.get_header("WARC-Target-URI")
    assert (
        target == request.get_header("WARC-Target-URI")
        and (target or "x").isprintable()
        and (target or "").isascii()
    )
