"""The URL an outbound request asks for, spelled as httpx spelled it, for aiohttp to send unchanged.

Task URLs are canonical (``core.web.urls.canonicalize``) and pass as they are. yarl's own
quoting, aiohttp's default, would decode the escapes of unreserved characters (``%7E`` to ``~``),
re-encode a "%" not followed by two hex digits, and write a space in a query as "+": a server would
be asked for another spelling of the URL it linked to.
"""

from __future__ import annotations

import re
from urllib.parse import quote, urlsplit, urlunsplit

from yarl import URL

# Sent as they are: printable ASCII but for these (the WHATWG path and query percent-encode sets,
# which httpx used); anything else is percent-encoded as UTF-8.
PATH_SAFE = frozenset(chr(code) for code in range(0x21, 0x7F)) - set('"#<>?`{}')
QUERY_SAFE = frozenset(chr(code) for code in range(0x21, 0x7F)) - set('"#<>')
NEEDS_QUOTING = re.compile(r'[^\x21-\x7e]|["<>`{}]')


def request_url(url: str) -> URL:
    """``url`` as httpx requested it: path and query percent-encoded where :data:`PATH_SAFE` and
    :data:`QUERY_SAFE` say (existing escapes kept), "." and ".." path segments removed, the host
    IDNA-encoded; the fragment is never sent. ValueError when it cannot be parsed."""
    if not NEEDS_QUOTING.search(url) and "/." not in url:
        return URL(url, encoded=True)
    parts = urlsplit(url)
    authority = URL(urlunsplit((parts.scheme, parts.netloc, "", "", ""))).raw_authority  # IDNA host
    return URL.build(
        scheme=parts.scheme,
        authority=authority,
        path=_without_dot_segments(_quoted(parts.path, PATH_SAFE)) or "/",
        query_string=_quoted(parts.query, QUERY_SAFE),
        encoded=True,
    )


def _quoted(text: str, safe: frozenset[str]) -> str:
    return "".join(char if char in safe else quote(char, safe="") for char in text)


def _without_dot_segments(path: str) -> str:
    # RFC 3986, section 5.2.4, as httpx applies it
    segments = path.split("/")
    if "." not in segments and ".." not in segments:
        return path
    kept: list[str] = []
    for segment in segments:
        if segment == "..":
            if kept and kept != [""]:
                kept.pop()
        elif segment != ".":
            kept.append(segment)
    return "/".join(kept)
