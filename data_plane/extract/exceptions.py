"""Errors of extraction; every message names the page and says why it could not be extracted."""

from __future__ import annotations

from dualplane.core.exceptions import DualplaneError


class ExtractError(DualplaneError):
    """Base class of extraction errors."""


class ExtractionFailed(ExtractError):
    """A raw page that can never yield a record: retrying would not help, dead-letter it with ``reason``.

    Raised only for input that is unusable as such (a mapping without the envelope's required fields,
    a body held behind an unresolved claim check); broken HTML, empty bodies, non-HTML media and
    undecodable bytes still give a record.
    """

    def __init__(self, reason: str) -> None:
        super().__init__(reason)
        self.reason = reason


class PageTooLarge(ExtractionFailed):
    """A body over ``DUALPLANE_EXTRACT_MAX_HTML_BYTES``: not parsed, dead-lettered as ``oversize: ...``.

    Permanent at this limit only: raise the limit and replay the page to extract it.
    """

    def __init__(self, reason: str, size_bytes: int) -> None:
        super().__init__(reason)
        self.size_bytes = size_bytes
