"""A 304 on ``pages.raw`` as a WARC ``revisit`` record, profile *server-not-modified* (WARC 1.0, 6.7.2).

A conditional GET the server answered 304 has no body to archive: the page is the one an earlier
capture of the same URI holds. The record says so: ``WARC-Type: revisit``, the server-not-modified
profile, ``WARC-Refers-To-Target-URI`` the same URI, and as its block the 304's status line and
headers (``ETag``, ``Last-Modified``, ``Date``…), escaped as the response records' are. There is no
``WARC-Refers-To-Date``: the fetcher sent validators, not the date of the capture they came from, and
a replay tool (pywb) then takes the closest earlier capture of the URI. Built by warcio's own record
builder and writer: 304s are few next to full pages, so the templates of
:mod:`connectors.sink.warc_records` are not needed here.
"""

from __future__ import annotations

import io
from typing import Any
from urllib.parse import quote

from warcio.recordbuilder import RecordBuilder
from warcio.warcwriter import WARCWriter

from dualplane.connectors.sink.compression import GzipMember
from dualplane.connectors.sink.warc_records import CONTROL, WARC_VERSION, http_response_head

SERVER_NOT_MODIFIED = "http://netpreserve.org/warc/1.0/revisit/server-not-modified"
NOT_MODIFIED = 304


def is_revisit(page: dict[str, Any]) -> bool:
    """Whether the raw page is a 304: archived as a revisit, not as a response."""
    return int(page["status"]) == NOT_MODIFIED


def revisit_member(page: dict[str, Any], *, url: str, record_id: str, date: str, gzip: GzipMember) -> bytes:
    """The gzipped ``revisit`` record of the 304 ``page``, whose ``url`` an earlier capture holds."""
    head = http_response_head(page, 0)
    fields = {
        "WARC-Record-ID": record_id,
        "WARC-Date": date,
        "WARC-Profile": SERVER_NOT_MODIFIED,
        "WARC-Refers-To-Target-URI": url,
    }
    if page.get("job_id"):
        fields["WARC-X-Dualplane-Job"] = CONTROL.sub(lambda c: quote(c.group(), safe=""), str(page["job_id"]))
    builder = RecordBuilder(warc_version=WARC_VERSION)
    record = builder.create_warc_record(
        url, "revisit", payload=io.BytesIO(head), length=len(head), warc_headers_dict=fields
    )
    # A payload digest would name the empty payload of the 304, not the page it stands for.
    record.rec_headers.remove_header("WARC-Payload-Digest")
    plain = io.BytesIO()
    WARCWriter(plain, gzip=False, warc_version=WARC_VERSION).write_record(record)
    return gzip(plain.getvalue())
