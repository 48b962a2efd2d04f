"""CPU per MB of Kafka values of each step of the S3 sink, each measured alone, for ``sink_throughput.py``.

Each step runs on this process's thread over the fill's distinct values (repeated to about ``MIN_MB``),
timed with ``time.thread_time`` (this thread's CPU only, so other load on the machine moves it little),
median of ``REPEATS``. The steps are the sink's own functions where it has them (``WarcSink.prepare``,
``AvroSink.prepare``, ``AvroFile``, ``ArchiveStore.create``), and their parts one by one (WARC: decode,
the body's SHA-256 check against ``body_sha256``, the two SHA-1 digests, gzip; Avro: cavro's check, and
fastavro's decode for comparison), so the table shows what a WARC or Avro archive costs at the least on
this machine, whatever the code around it does.

The S3 PUT is measured on the stack's endpoint: the client's CPU (boto3: SigV4 signs the payload's
SHA-256 over plain HTTP, the CRC32 checksum, the send) on this thread, and the endpoint's (moto) from
``/proc``; both per MB of Kafka values, i.e. scaled by the archive's size over the values' size.
"""

from __future__ import annotations

import hashlib
import io
import statistics
import time
import uuid
from collections.abc import Callable, Sequence
from typing import Any

from confluent_kafka import Message

from dualplane import schemas
from dualplane.connectors.sink.avro import AvroFile, AvroSink
from dualplane.connectors.sink.avro_check import DatumCheck
from dualplane.connectors.sink.base import FileStart
from dualplane.connectors.sink.compression import deflate_block, gzip_member
from dualplane.connectors.sink.service import S3_ATTEMPTS, S3_TIMEOUT_S
from dualplane.connectors.sink.upload import ArchiveStore
from dualplane.connectors.sink.warc import WarcSink
from dualplane.connectors.sink.warc_records import http_response_head, response_member
from dualplane.connectors.storage import s3
from dualplane.connectors.storage.claim_check import ClaimCheckStore
from dualplane.core.settings import Settings

MB = 1_000_000
MIN_MB = 20.0  # each step runs over at least this much, so one measurement takes 10-200 ms
REPEATS = 5


def _messages(topic: str, values: list[bytes]) -> list[Message]:
    return [
        Message(topic=topic, partition=0, offset=i, value=v, timestamp=(1, 0)) for i, v in enumerate(values)
    ]


def per_mb(step: Callable[[Any], object], inputs: Sequence[Any], size_bytes: int) -> float:
    """Median thread CPU ms per MB of ``size_bytes`` of ``step`` over each of ``inputs``, results dropped
    at once as the sink drops them (kept, thousands of decoded records would make the collector's work)."""
    spent = []
    for _ in range(REPEATS):
        started = time.thread_time()
        for one in inputs:
            step(one)
        spent.append(time.thread_time() - started)
    return round(1000 * statistics.median(spent) / (size_bytes / MB), 2)


def _repeated(values: list[bytes]) -> list[bytes]:
    total = sum(map(len, values))
    return values * max(1, int(MIN_MB * MB / total) + 1)


def warc_costs(
    settings: Settings, values: list[bytes], put: Callable[[bytes], dict[str, float]]
) -> dict[str, float]:
    """Per MB of ``pages.raw`` values: decode, check, digests, gzip, all of ``prepare``, the S3 PUT."""
    values = _repeated(values)
    size = sum(map(len, values))
    codec = schemas.codec_for(settings)
    sink = WarcSink(
        settings.topics.pages_raw,
        codec,
        ClaimCheckStore.from_settings(settings.s3),
        gzip=gzip_member(settings.sink),
    )
    pages = [codec.decode(v).record for v in values]
    bodies = [bytes(p["body"]) for p in pages]
    heads = [http_response_head(p, len(b)) for p, b in zip(pages, bodies, strict=True)]
    plain = [
        response_member(p, b, url=p["url"], record_id="<urn:uuid:0>", date="2026-11-24T00:00:00Z", gzip=bytes)
        for p, b in zip(pages, bodies, strict=True)
    ]
    gzip = gzip_member(settings.sink)
    messages = _messages(sink.topic, values)
    costs = {
        "decode": per_mb(codec.decode, values, size),
        "SHA-256 check": per_mb(lambda b: hashlib.sha256(b).digest(), bodies, size),
        "SHA-1 payload": per_mb(lambda b: hashlib.sha1(b).digest(), bodies, size),
        "SHA-1 block": per_mb(_block_sha1, list(zip(heads, bodies, strict=True)), size),
        "gzip": per_mb(gzip, plain, size),
        "prepare (all)": per_mb(sink.prepare, messages, size),
    }
    archive = b"".join(sink.prepare(m).payload for m in messages)
    return costs | _scaled(put(archive), len(archive) / size)


def avro_costs(
    settings: Settings, values: list[bytes], put: Callable[[bytes], dict[str, float]]
) -> dict[str, float]:
    """Per MB of ``records`` values: the check of each (cavro's, and fastavro's decode it replaced), all of
    ``prepare``, framing and deflate, the S3 PUT."""
    values = _repeated(values)
    size = sum(map(len, values))
    codec = schemas.codec_for(settings)
    sink = AvroSink(settings.topics.records, codec, deflate=deflate_block(settings.sink))
    messages = _messages(sink.topic, values)
    items = [sink.prepare(m) for m in messages]
    start = FileStart(sink.topic, 0, 0, "bench/costs.avro", 0)

    def write_file() -> bytes:
        stream = io.BytesIO()
        avro_file = AvroFile(stream, start, sink._schemas[items[0].kind], sink.deflate)
        for offset, item in enumerate(items):
            avro_file.write(item, offset)
        avro_file.finish()
        return stream.getvalue()

    archive = write_file()
    check = DatumCheck(schemas.default_registry().by_fingerprint(int(items[0].kind, 16)).definition)
    costs = {
        "fastavro decode": per_mb(codec.decode, values, size),
        "cavro check": per_mb(check, [i.payload for i in items], size),
        "prepare (all)": per_mb(sink.prepare, messages, size),
        "blocks and deflate": per_mb(lambda _: write_file(), [None], size),
    }
    return costs | _scaled(put(archive), len(archive) / size)


def _scaled(costs: dict[str, float], factor: float) -> dict[str, float]:
    """Costs per MB of archive as costs per MB of Kafka values (``factor``: archive bytes per value byte)."""
    return {name: round(ms * factor, 2) for name, ms in costs.items()}


def _block_sha1(head_and_body: tuple[bytes, bytes]) -> bytes:
    digest = hashlib.sha1(head_and_body[0])
    digest.update(head_and_body[1])
    return digest.digest()


class PutMeter:
    """Times ``ArchiveStore.create`` of an object on the stack's endpoint: client thread CPU, endpoint CPU."""

    def __init__(self, settings: Settings, endpoint_cpu_s: Callable[[], float]) -> None:
        client = s3.client(settings.s3, timeout_s=S3_TIMEOUT_S, retries=S3_ATTEMPTS)
        self.store = ArchiveStore(
            client,
            settings.sink_bucket,
            multipart_threshold_bytes=settings.sink.multipart_threshold_bytes,
            part_bytes=settings.sink.multipart_part_bytes,
        )
        self.prefix = f"{settings.sink.prefix}/bench-costs-{uuid.uuid4().hex[:8]}"
        self.endpoint_cpu_s = endpoint_cpu_s

    def __call__(self, archive: bytes) -> dict[str, float]:
        """ms per MB of ``archive`` (the caller scales to MB of values): client and endpoint, medians."""
        client, endpoint = [], []
        for _ in range(REPEATS):
            key = f"{self.prefix}/{uuid.uuid4().hex}"
            before_endpoint, before = self.endpoint_cpu_s(), time.thread_time()
            self.store.create(
                key, io.BytesIO(archive), len(archive), content_type="application/octet-stream", metadata={}
            )
            client.append(time.thread_time() - before)
            endpoint.append(self.endpoint_cpu_s() - before_endpoint)
            self.store.client.delete_object(Bucket=self.store.bucket, Key=key)
        mb = len(archive) / MB
        return {
            "S3 PUT client": round(1000 * statistics.median(client) / mb, 2),
            "S3 endpoint": round(1000 * statistics.median(endpoint) / mb, 2),
        }
