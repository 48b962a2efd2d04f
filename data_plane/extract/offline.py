"""Raw pages made without a fetch: saved HTML files (plain or gzipped) and in-memory bodies.

``dualplane extract`` and the extraction benchmark feed these to :func:`extract_record`, the same
code path the extractor service runs on ``pages.raw``. A saved file's ``fetched_at`` is its
modification time, so extracting the same file twice gives the same record.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import zlib
from collections.abc import Mapping
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from dualplane.core.web.exceptions import InvalidUrl
from dualplane.core.web.urls import domain_of
from dualplane.data_plane.extract.exceptions import ExtractionFailed

GZIP_MAGIC = b"\x1f\x8b"
MAX_FILE_BYTES = 64 * 1024 * 1024
"""A saved page larger than this (after decompression) is refused rather than read into memory."""
OFFLINE_JOB = "offline"


def raw_page(
    body: bytes,
    url: str,
    *,
    fetched_at: datetime,
    status: int = 200,
    content_type: str | None = "text/html",
    charset: str | None = None,
    headers: Mapping[str, str] | None = None,
    job_id: str = OFFLINE_JOB,
    extractor: str | None = None,
) -> dict[str, Any]:
    """A ``raw_page`` record for ``body`` served from ``url``; the trace id is derived from the body.

    Every field of the latest ``raw_page`` is present (``extractor`` names the job's plugin, or is
    ``None``), as the fetcher writes it: a Confluent serializer takes no defaults for missing fields.
    """
    return {
        "job_id": job_id,
        "trace_id": f"{job_id}-{hashlib.blake2b(body, digest_size=8).hexdigest()}",
        "task_id": f"{job_id}-task",
        "url": url,
        "final_url": url,
        "domain": _domain(url),
        "depth": 0,
        "attempt": 1,
        "status": status,
        "fetched_at": fetched_at,
        "content_type": content_type,
        "charset": charset,
        "headers": dict(headers or {}),
        "redirect_chain": [],
        "body": body,
        "body_truncated": False,
        "claim_check": None,
        "extractor": extractor,
    }


def saved_page(path: Path, url: str | None = None) -> dict[str, Any]:
    """A ``raw_page`` record for the HTML file at ``path`` (gzipped or not, told by its magic bytes).

    ``url`` is where the page came from (default: the file's ``file://`` URL). :class:`ExtractionFailed`
    when the file cannot be read, is not valid gzip, or is larger than ``MAX_FILE_BYTES``.
    """
    try:
        with path.open("rb") as file:
            body = _read_limited(file, path)
        modified = path.stat().st_mtime
    except OSError as error:
        raise ExtractionFailed(f"cannot read {path}: {error.strerror or error}") from error
    if body.startswith(GZIP_MAGIC):
        body = _gunzip(body, path)
    fetched_at = datetime.fromtimestamp(int(modified * 1000) / 1000, tz=UTC)
    return raw_page(body, url or path.resolve().as_uri(), fetched_at=fetched_at)


def _gunzip(data: bytes, path: Path) -> bytes:
    try:
        with gzip.GzipFile(fileobj=io.BytesIO(data)) as file:
            return _read_limited(file, path)
    except (OSError, EOFError, zlib.error) as error:  # gzip.BadGzipFile is an OSError
        raise ExtractionFailed(f"{path} starts like gzip but does not decompress: {error}") from error


def _read_limited(file: io.BufferedIOBase | gzip.GzipFile | Any, path: Path) -> bytes:
    data: bytes = file.read(MAX_FILE_BYTES + 1)
    if len(data) > MAX_FILE_BYTES:
        raise ExtractionFailed(
            f"{path} holds more than {MAX_FILE_BYTES // (1024 * 1024)} MiB of HTML; "
            "that is not a web page worth extracting offline"
        )
    return data


def _domain(url: str) -> str:
    try:
        return domain_of(url)
    except InvalidUrl:
        return ""  # file:// and other non-http URLs have no politeness domain
