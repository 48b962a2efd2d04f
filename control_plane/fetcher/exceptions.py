"""Errors of one fetch attempt; each maps to an outcome class of the retry policy."""

from __future__ import annotations

from dualplane.control_plane.fetcher.retry_policy import Outcome
from dualplane.core.exceptions import DualplaneError


class FetcherError(DualplaneError):
    """Base class of the fetcher's errors."""


class FetchFailed(FetcherError):
    """A fetch that produced no usable response; ``outcome`` says which kind of failure."""

    outcome: Outcome = Outcome.CONNECTION_ERROR

    def __init__(self, message: str, *, final_url: str | None = None) -> None:
        super().__init__(message)
        self.final_url = final_url


class SsrfRefused(FetchFailed):
    """The URL (or a redirect) points at a private, loopback, link-local or metadata address."""

    outcome = Outcome.SSRF_REFUSED


class FetchTimeout(FetchFailed):
    outcome = Outcome.TIMEOUT


class ConnectionFailed(FetchFailed):
    outcome = Outcome.CONNECTION_ERROR


class TooLarge(FetchFailed):
    """The body passed the configured maximum; it was not read to the end."""

    outcome = Outcome.TOO_LARGE


class UnwantedContent(FetchFailed):
    """A content type outside the allowlist (images, archives…): not fetched past the headers."""

    outcome = Outcome.INVALID_CONTENT


class InvalidTarget(FetchFailed):
    """The URL, or a redirect's ``Location``, cannot be requested at all (malformed, bad port)."""

    outcome = Outcome.INVALID_CONTENT


class UndecodableBody(FetchFailed):
    """The body uses a ``Content-Encoding`` we do not decode, or its compressed stream is corrupt."""

    outcome = Outcome.INVALID_CONTENT


class ScrapingApiFailed(FetchFailed):
    """A managed scraping API refused or failed the call itself (bad key, quota, its own error).

    ``api_status`` is the API's HTTP status. The outcome defaults to ``connection_error`` (retried:
    the target is not at fault, and the task survives until the operator fixes the key or quota);
    a request the API calls invalid (400, 422) is ``invalid_content`` and not retried.
    """

    outcome = Outcome.CONNECTION_ERROR

    def __init__(
        self, message: str, *, api_status: int, outcome: Outcome | None = None, final_url: str | None = None
    ) -> None:
        super().__init__(message, final_url=final_url)
        self.api_status = api_status
        if outcome is not None:
            self.outcome = outcome


class QuotaExhausted(ScrapingApiFailed):
    """The scraping API refused the call for the account, not the page: credits used up or the key
    refused (its 403). No task can be fetched through it until the budget is raised or resets."""

    outcome = Outcome.QUOTA_EXHAUSTED


class BrowserCrashed(ConnectionFailed):
    """The rendering browser died or could not start: the task is retried, on a new browser."""
