"""Reading the S3 sink's archive back the way a user would: list keys, WARC through warcio, Avro through the
independent ``avro`` package (not fastavro, which wrote it)."""

from __future__ import annotations

import io
from dataclasses import dataclass
from typing import Any

from avro.datafile import DataFileReader
from avro.io import DatumReader
from warcio.archiveiterator import ArchiveIterator

from dualplane.connectors.storage import s3
from dualplane.core.settings import Settings


@dataclass(frozen=True)
class WarcEntry:
    key: str
    type: str
    uri: str
    date: str
    headers: dict[str, str]
    http_status: str | None
    http_headers: list[tuple[str, str]]
    payload: bytes


def list_keys(settings: Settings, bucket: str, prefix: str = "") -> list[str]:
    client = s3.client(settings.s3)
    keys: list[str] = []
    for page in client.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=prefix):
        keys += [item["Key"] for item in page.get("Contents", [])]
    return sorted(keys)


def get(settings: Settings, bucket: str, key: str) -> bytes:
    return s3.client(settings.s3).get_object(Bucket=bucket, Key=key)["Body"].read()


def warc_entries(data: bytes, key: str = "") -> list[WarcEntry]:
    entries = []
    for record in ArchiveIterator(io.BytesIO(data)):
        http = record.http_headers
        entries.append(
            WarcEntry(
                key=key,
                type=record.rec_type,
                uri=record.rec_headers.get_header("WARC-Target-URI") or "",
                date=record.rec_headers.get_header("WARC-Date") or "",
                headers=dict(record.rec_headers.headers),
                http_status=http.get_statuscode() if http and record.rec_type == "response" else None,
                http_headers=list(http.headers) if http else [],
                payload=record.content_stream().read(),
            )
        )
    return entries


def avro_rows(data: bytes) -> tuple[dict[str, Any], list[dict[str, Any]]]:
    """The file's header metadata (schema included) and its rows, read by Apache Avro's own library."""
    reader = DataFileReader(io.BytesIO(data), DatumReader())
    try:
        metadata = {key: value.decode() for key, value in reader.meta.items() if key != "avro.sync"}
        return metadata, list(reader)
    finally:
        reader.close()


def all_warc_entries(settings: Settings, bucket: str) -> list[WarcEntry]:
    """Every record of every ``.warc.gz`` object in ``bucket``."""
    keys = [key for key in list_keys(settings, bucket) if key.endswith(".warc.gz")]
    return [entry for key in keys for entry in warc_entries(get(settings, bucket, key), key)]


def all_avro_rows(settings: Settings, bucket: str) -> list[dict[str, Any]]:
    """Every row of every ``.avro`` object in ``bucket``."""
    keys = [key for key in list_keys(settings, bucket) if key.endswith(".avro")]
    return [row for key in keys for row in avro_rows(get(settings, bucket, key))[1]]
