"""URL normalization: canonical form, politeness key and compact dedup key."""

from __future__ import annotations

import hashlib
import re
from collections.abc import Collection
from urllib.parse import SplitResult, unquote_plus, urlsplit, urlunsplit

from w3lib.url import canonicalize_url

from dualplane.core.web.exceptions import InvalidUrl

KEY_BYTES = 16
"""Length of :func:`url_key` digests: 128 bits keep collisions negligible at billions of URLs."""

DEFAULT_PORTS = {"http": 80, "https": 443}

DEFAULT_TRACKING_PARAMS: frozenset[str] = frozenset(
    {
        # An entry ending in "*" is a prefix rule: "utm_*" strips utm_source, utm_reader, ...
        "utm_*",
        "utm_source",
        "utm_medium",
        "utm_campaign",
        "utm_term",
        "utm_content",
        "utm_id",
        "gclid",
        "gclsrc",
        "dclid",
        "gbraid",
        "wbraid",
        "fbclid",
        "msclkid",
        "twclid",
        "ttclid",
        "li_fat_id",
        "mc_cid",
        "mc_eid",
        "yclid",
        "_ga",
        "_gl",
        "igshid",
        "ref_src",
        "spm",
        "mkt_tok",
        "_hsenc",
        "_hsmi",
        "vero_id",
        "_openstat",
        "srsltid",
    }
)
"""Query parameters that only track the visitor; two URLs differing only in them are one page."""

# Hostnames after IDNA encoding: LDH labels (plus "_", which real hosts use) or a bracketed IPv6.
_HOST = re.compile(r"[a-z0-9_.-]+|\[[0-9a-f:.]+\]")


def canonicalize(url: str, strip_params: Collection[str] = DEFAULT_TRACKING_PARAMS) -> str:
    """The one canonical spelling of an http(s) URL, so that equal pages dedup to one key.

    On top of :func:`w3lib.url.canonicalize_url` (fragment dropped, query arguments sorted,
    percent-encoding normalized, IDNA host encoded): scheme and host lowercased, a trailing dot
    on the host dropped, default ports removed, an empty path made "/", credentials
    (``user:password@``) dropped, and every query parameter named in ``strip_params`` removed
    (names compared case-insensitively; an entry ending in ``*`` is a prefix rule). Pass
    ``strip_params=()`` to keep every parameter.

    Raises :class:`InvalidUrl` for input that is not http(s), has no host, or cannot be parsed.
    """
    try:
        parts = _checked(urlsplit(canonicalize_url(url.strip())), url)
        port = parts.port
    except ValueError as error:  # InvalidUrl is not one: it passes through
        raise InvalidUrl(f"unparseable URL {url!r}: {error}") from error
    host = _checked_host(parts.hostname, url)
    query = _strip_query(parts.query, _StripRules.of(strip_params))
    # No credentials: a link's user:password must not be fetched with, nor kept in records.
    netloc = _authority(parts.scheme, host, port)
    return urlunsplit((parts.scheme, netloc, parts.path or "/", query, ""))


def without_credentials(url: str) -> str:
    """``url`` with any ``user:password@`` removed, otherwise unchanged (not canonicalized)."""
    if "@" not in url:
        return url
    try:
        parts = urlsplit(url)
    except ValueError:
        return url
    if "@" not in parts.netloc:
        return url
    return urlunsplit(parts._replace(netloc=parts.netloc.rpartition("@")[2]))


def domain_of(url: str) -> str:
    """The politeness key of ``url``: lowercase host, plus ":port" when the port is not the default.

    E.g. ``"example.com"`` for ``https://Example.com:443/x`` and ``"127.0.0.1:8101"`` for
    ``http://127.0.0.1:8101/``. Accepts canonical or raw URLs; raises :class:`InvalidUrl` like
    :func:`canonicalize`.
    """
    parts = _split_checked(url)
    try:
        port = parts.port
    except ValueError as error:
        raise InvalidUrl(f"unparseable URL {url!r}: {error}") from error
    hostname = parts.hostname or ""
    if not hostname.isascii():
        # Only w3lib's IDNA encoding matches what canonicalize() stored; reuse it for the rare case.
        hostname = urlsplit(canonicalize(url, strip_params=())).hostname or ""
    return _authority(parts.scheme.lower(), _checked_host(hostname, url), port)


def url_key(canonical_url: str) -> bytes:
    """A 16-byte BLAKE2b digest of ``canonical_url``: the compact key the seen set stores."""
    return hashlib.blake2b(canonical_url.encode("utf-8"), digest_size=KEY_BYTES).digest()


def _split_checked(url: str) -> SplitResult:
    try:
        parts = urlsplit(url.strip())
    except ValueError as error:
        raise InvalidUrl(f"unparseable URL {url!r}: {error}") from error
    return _checked(parts, url)


def _checked(parts: SplitResult, url: str) -> SplitResult:
    if parts.scheme.lower() not in DEFAULT_PORTS:
        raise InvalidUrl(f"not an http(s) URL: {url!r}")
    if not parts.hostname:
        raise InvalidUrl(f"URL has no host: {url!r}")
    return parts


def _checked_host(hostname: str | None, url: str) -> str:
    host = (hostname or "").lower().rstrip(".")
    if ":" in host:
        host = f"[{host}]"
    if not host:
        raise InvalidUrl(f"URL has no host: {url!r}")
    if not _HOST.fullmatch(host):
        raise InvalidUrl(f"URL has an invalid host {host!r}: {url!r}")
    return host


def _authority(scheme: str, host: str, port: int | None) -> str:
    if port is None or port == DEFAULT_PORTS.get(scheme):
        return host
    return f"{host}:{port}"


class _StripRules:
    """Parameter names (lowercase) and name prefixes to strip; built once per distinct collection."""

    _cache: dict[frozenset[str], _StripRules] = {}

    def __init__(self, params: frozenset[str]) -> None:
        lowered = {param.lower() for param in params}
        self.names = frozenset(name for name in lowered if not name.endswith("*"))
        self.prefixes = tuple(name[:-1] for name in lowered if name.endswith("*"))

    @classmethod
    def of(cls, params: Collection[str]) -> _StripRules:
        key = params if isinstance(params, frozenset) else frozenset(params)
        rules = cls._cache.get(key)
        if rules is None:
            # Callers pass a handful of distinct collections; bound the cache all the same.
            if len(cls._cache) > 64:
                cls._cache.clear()
            rules = cls._cache[key] = cls(key)
        return rules

    def strips(self, name: str) -> bool:
        lowered = (unquote_plus(name) if "%" in name or "+" in name else name).lower()
        return lowered in self.names or lowered.startswith(self.prefixes)


def _strip_query(query: str, rules: _StripRules) -> str:
    if not query or (not rules.names and not rules.prefixes):
        return query
    # Filter the already-normalized pieces instead of re-encoding, so w3lib's encoding stays intact.
    kept = [piece for piece in query.split("&") if not rules.strips(piece.partition("=")[0])]
    return "&".join(kept)
