"""WARC ``request`` and ``response`` records of one raw page, each as its own gzip member, from templates.

warcio builds a record from several objects per header and writes it through a buffered copy; at a few
thousand pages a second that machinery cost more than compressing the page. These functions write the
same bytes as warcio's ``RecordBuilder`` and ``WARCWriter`` (same headers, order, digests and
Content-Length; the test ``tests/connectors/sink/test_warc_records.py`` compares them byte for byte),
from strings: the body is read twice (SHA-1 for the payload digest, SHA-1 with the HTTP head for the
block digest) and compressed once, each record in one call (:mod:`connectors.sink.compression`). An
HTTP head that is not plain ASCII is %-encoded by warcio itself, as it would be in ``WARCWriter``.

A raw page is outside input (anyone may write ``pages.raw``, and a job id is whatever ``crawl --job``
was given), so nothing of it reaches a header line unescaped: a URL that is not plain printable ASCII
is archived in its URI form (:func:`archived_uri`), and control characters in a job id or in the
page's header names and values are %-escaped. A CR LF there ended a header early or added one (a job id
with a blank line in it cut the WARC head short), and a non-ASCII URL or header name raised, which
stopped the sink at that page for ever.
"""

from __future__ import annotations

import base64
import contextlib
import hashlib
import re
from http import HTTPStatus
from typing import Any
from urllib.parse import quote, urlsplit

from w3lib.url import safe_url_string
from warcio.statusandheaders import StatusAndHeaders

from dualplane.connectors.sink.compression import GzipMember

WARC_VERSION = "WARC/1.0"
RENAMED = frozenset({"content-encoding", "transfer-encoding", "content-length"})
RECORD_END = b"\r\n\r\n"
EMPTY_SHA1 = "sha1:" + base64.b32encode(hashlib.sha1(b"").digest()).decode("ascii")
_SHA1, _SHA256 = hashlib.sha1(), hashlib.sha256()
_B32 = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567"
_B32_PAIRS = [_B32[pair >> 5] + _B32[pair & 31] for pair in range(1024)]
_B32_SHIFTS = range(150, -1, -10)
NOT_PRINTABLE_ASCII = re.compile(r"[^\x21-\x7e]")
CONTROL = re.compile(r"[\x00-\x08\x0a-\x1f\x7f]")  # a tab may stand in a header value
NOT_TOKEN = re.compile(r"[^\x21-\x7e]|:")


def response_member(
    page: dict[str, Any], body: bytes, *, url: str, record_id: str, date: str, gzip: GzipMember
) -> bytes:
    """The gzipped ``response`` record: the page's status line and headers, then ``body``."""
    head = http_response_head(page, len(body))
    block = sha1(head)
    block.update(body)
    fields = [f"WARC-Record-ID: {record_id}", f"WARC-Date: {date}"]
    if page.get("body_truncated"):
        fields.append("WARC-Truncated: length")
    if page.get("job_id"):
        fields.append(f"WARC-X-Dualplane-Job: {_escaped(CONTROL, str(page['job_id']))}")
    fields += [
        f"WARC-Block-Digest: {_sha1_label(block.digest())}",
        f"WARC-Payload-Digest: {_sha1_label(sha1(body).digest())}",
        "WARC-Type: response",
        f"WARC-Target-URI: {url}",
        "Content-Type: application/http; msgtype=response",
        f"Content-Length: {len(head) + len(body)}",
    ]
    return gzip(b"".join((_warc_head(fields), head, body, RECORD_END)))


def request_member(*, url: str, record_id: str, concurrent_to: str, date: str, gzip: GzipMember) -> bytes:
    """The gzipped ``request`` record: what is known of the request (method, target and ``Host``)."""
    head = http_request_head(url)
    fields = [
        f"WARC-Record-ID: {record_id}",
        f"WARC-Date: {date}",
        f"WARC-Concurrent-To: {concurrent_to}",
        f"WARC-Block-Digest: {_sha1_label(sha1(head).digest())}",
        f"WARC-Payload-Digest: {EMPTY_SHA1}",
        "WARC-Type: request",
        f"WARC-Target-URI: {url}",
        "Content-Type: application/http; msgtype=request",
        f"Content-Length: {len(head)}",
    ]
    return gzip(b"".join((_warc_head(fields), head, RECORD_END)))


def http_response_head(page: dict[str, Any], length: int) -> bytes:
    """Status line and headers as archived: transfer headers kept as ``X-Archive-Orig-*``, a true length."""
    status = int(page["status"])
    try:
        phrase = HTTPStatus(status).phrase
    except ValueError:
        phrase = "Unknown"
    headers = [
        _archived_header(str(name), str(value)) for name, value in dict(page.get("headers") or {}).items()
    ]
    headers.append(("Content-Length", str(length)))
    return _http_head(f"HTTP/1.1 {status} {phrase}", headers)


def _archived_header(name: str, value: str) -> tuple[str, str]:
    name = _escaped(NOT_TOKEN, name)
    return (f"X-Archive-Orig-{name}" if name.lower() in RENAMED else name), _escaped(CONTROL, value)


def http_request_head(url: str) -> bytes:
    try:
        parts = urlsplit(url)
    except ValueError:  # no URL at all (an unclosed IPv6 bracket): the request line names it whole
        return _http_head(f"GET {url} HTTP/1.1", [("Host", "")])
    target = (parts.path or "/") + (f"?{parts.query}" if parts.query else "")
    return _http_head(f"GET {target} HTTP/1.1", [("Host", parts.netloc)])


def archived_uri(url: str) -> str:
    """``url`` as the archive names it: unchanged when it is printable ASCII (as every URL the fetcher
    writes), else its URI form (w3lib's: IDNA host, UTF-8 %-escapes) with whatever is still not
    printable ASCII %-escaped (a host IDNA refuses), so that it can stand in a request line."""
    if not NOT_PRINTABLE_ASCII.search(url):
        return url
    with contextlib.suppress(ValueError):  # e.g. a port out of range: then escaped as it is
        url = safe_url_string(url)
    return _escaped(NOT_PRINTABLE_ASCII, url)


def _escaped(pattern: re.Pattern[str], text: str) -> str:
    if pattern.search(text) is None:  # nearly always: no substitution, no callback per call
        return text
    return pattern.sub(lambda match: quote(match.group(), safe=""), text)


def _http_head(first_line: str, headers: list[tuple[str, str]]) -> bytes:
    text = first_line + "\r\n" + "".join(f"{name}: {value}\r\n" for name, value in headers) + "\r\n"
    try:
        return text.encode("ascii")
    except UnicodeEncodeError:  # rare: let warcio %-encode the non-ASCII values as WARCWriter does
        protocol, _, statusline = first_line.partition(" ")
        if first_line.startswith("HTTP/"):
            http = StatusAndHeaders(statusline, headers, protocol=protocol)
        else:
            http = StatusAndHeaders(first_line, headers, is_http_request=True)
        return bytes(http.to_ascii_bytes())


def _warc_head(fields: list[str]) -> bytes:
    return (WARC_VERSION + "\r\n" + "".join(field + "\r\n" for field in fields) + "\r\n").encode("utf-8")


def sha1(data: bytes | memoryview = b"") -> hashlib._Hash:
    """A SHA-1 of ``data``, copied from a ready one: ``hashlib.sha1()`` looks the digest up in OpenSSL 3
    each time (``EVP_MD_fetch``), which takes a lock the preparing threads contend for."""
    digest = _SHA1.copy()
    digest.update(data)
    return digest


def sha256(data: bytes | memoryview) -> hashlib._Hash:
    """A SHA-256 of ``data``, copied from a ready one (see :func:`sha1`)."""
    digest = _SHA256.copy()
    digest.update(data)
    return digest


def _sha1_label(digest: bytes) -> str:
    """``sha1:`` and the 20-byte digest in base32: 160 bits, 32 characters, looked up ten bits at a time
    (``base64.b32encode`` is Python code in 3.11, 7 µs a digest, three digests a page)."""
    number = int.from_bytes(digest, "big")
    return "sha1:" + "".join([_B32_PAIRS[(number >> shift) & 0x3FF] for shift in _B32_SHIFTS])
