"""Errors of the web helpers; every message names the URL that was wrong."""

from __future__ import annotations

from dualplane.core.exceptions import DualplaneError


class WebError(DualplaneError):
    """Base class of errors about URLs and addresses."""


class InvalidUrl(WebError):
    """A URL that cannot be crawled: unparseable, not http(s), or without a host."""


class UnsafeUrl(WebError):
    """The SSRF guard refused a URL: not http(s), no host, unresolvable, or a refused address."""


class OutboundFailed(WebError):
    """A guarded outbound request got no usable answer: cannot connect, a broken answer, too slow."""


class OutboundTimeout(OutboundFailed):
    """A guarded outbound request had no complete answer (head, redirects and body) by its deadline."""


class SitemapInvalid(WebError):
    """A body that is no sitemap: not XML, broken XML, corrupt gzip, or another root element."""


class SitemapTooLarge(SitemapInvalid):
    """A sitemap past the protocol's limits: 50 MiB uncompressed or 50,000 entries."""
