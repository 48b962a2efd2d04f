"""The fetch backend extension point: one request in, one response out, or a FetchFailed.

Backends read no settings of their own per request: the fetcher (``control_plane.fetcher.worker``)
builds each :class:`FetchRequest` from ``DUALPLANE_FETCH_USER_AGENT``, ``_CONNECT_TIMEOUT_S``,
``_READ_TIMEOUT_S``, ``_MAX_REDIRECTS`` and ``DUALPLANE_LIMIT_MAX_PAGE_BYTES``.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Mapping
from dataclasses import dataclass, field
from types import TracebackType
from typing import TYPE_CHECKING, Self

if TYPE_CHECKING:
    pass

# Set on a response whose body is a browser's rendered DOM (backends/browser.py); pages.raw keeps it.
RENDERED_HEADER = "x-dualplane-rendered"
DEFAULT_ACCEPT_TYPES = ("text/html", "application/xhtml+xml", "text/plain", "application/xml", "text/xml")


@dataclass(frozen=True)
class FetchRequest:
    """One GET to make, with every limit that applies to it.

    ``accept_types`` are lower-case prefixes of acceptable MIME types (``"text/"`` accepts every
    text type). ``total_timeout_s`` bounds the whole fetch, redirects included, so a server that
    drips one byte per ``read_timeout_s`` cannot hold a worker forever (None: no overall bound).
    ``conditional_headers`` (``If-None-Match``, ``If-Modified-Since``) make a revisit a conditional
    GET: they go out with every hop, and a 304 comes back as the response, without a body.
    ``headers`` go out with every hop too (a domain's profile: a language, a referer); they never
    replace the User-Agent, Accept or Accept-Encoding we send. ``form``: post these fields to
    ``url`` instead of a GET (a profile's consent or login step, ``fetcher/sessions.py``).
    """

    url: str
    user_agent: str
    connect_timeout_s: float
    read_timeout_s: float
    max_bytes: int
    accept_types: tuple[str, ...] = DEFAULT_ACCEPT_TYPES
    max_redirects: int = 10
    total_timeout_s: float | None = 120.0
    conditional_headers: Mapping[str, str] = field(default_factory=dict)
    headers: Mapping[str, str] = field(default_factory=dict)
    form: Mapping[str, str] | None = None

    def __post_init__(self) -> None:
        if self.max_bytes < 1 or self.max_redirects < 0:
            raise ValueError(
                f"FetchRequest for {self.url}: max_bytes must be >= 1 and max_redirects >= 0, "
                f"got {self.max_bytes} and {self.max_redirects}"
            )

    def accepts(self, content_type: str | None) -> bool:
        """Whether a response of MIME type ``content_type`` is wanted (no type at all is accepted)."""
        return content_type is None or content_type.startswith(self.accept_types)


@dataclass(frozen=True)
class FetchResponse:
    """What the server answered, whatever the status: a 404 or a 503 is a response, not an error.

    - ``url``: the URL requested; ``final_url``: the URL that gave this answer (after redirects).
    - ``redirect_chain``: every URL whose redirect was followed, in order, starting with ``url``;
      empty when there was none. ``redirect_chain + (final_url,)`` is the whole path walked.
      A 3xx is returned as-is (not followed) when ``max_redirects`` is spent, when it loops, or
      when it has no ``Location``.
    - ``headers``: the final response's headers, names in lower case, repeated headers joined
      with ``", "`` (a plain dict, so callers can pick the ones they keep).
    - ``body``: the decompressed body, at most ``max_bytes`` long; empty for a 3xx and for an
      error status whose content type is not accepted (it is not read).
    - ``content_type``: the MIME type without parameters, lower case; None without the header.
    - ``charset``: the Python codec for ``body`` (header, BOM, meta, detection); None when the
      body is empty and the header names none.
    - ``api_credits``: the credits a managed scraping API charged for the call (0 when direct).
    - ``truncated``: the body was cut at ``max_bytes``. Only error statuses are cut (their status
      is what matters); a 2xx that is too large raises :class:`TooLarge` instead.
    """

    url: str
    final_url: str
    status: int
    headers: Mapping[str, str]
    body: bytes
    redirect_chain: tuple[str, ...]
    elapsed_ms: float
    content_type: str | None
    charset: str | None
    truncated: bool = False
    api_credits: float = 0.0  # what a paid scraping API charged for this answer; 0 for a direct fetch


class FetchBackend(ABC):
    """Fetches one URL. Implementations: direct HTTP, a managed scraping API.

    Use as ``async with backend:`` or call :meth:`aclose` when done.
    """

    @abstractmethod
    async def fetch(self, request: FetchRequest) -> FetchResponse:
        """Fetch ``request.url`` and return what the server answered, whatever its status.

        Raises a :class:`~control_plane.fetcher.exceptions.FetchFailed` subclass when there is no
        usable answer; its ``outcome`` is the outcome class of the attempt:

        - ``SsrfRefused``: the URL or a redirect target is not http(s) or resolves to a refused
          address; nothing was sent to it.
        - ``FetchTimeout``: connecting, a read, or the whole fetch took longer than allowed.
        - ``ConnectionFailed``: DNS, TCP, TLS or the HTTP exchange failed.
        - ``TooLarge``: a 2xx body is longer than ``max_bytes``; reading stopped at the limit.
        - ``UnwantedContent``: a 2xx whose content type is not in ``accept_types``, refused from
          its headers; the body was not read.
        - ``UndecodableBody``: an unsupported or corrupt ``Content-Encoding``.
        - ``InvalidTarget``: the URL or a redirect's ``Location`` is malformed.
        - backend-specific subclasses (e.g. ``ScrapingApiFailed``).
        """

    @abstractmethod
    async def aclose(self) -> None:
        """Release connections; the backend must not be used afterwards. Idempotent."""

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        await self.aclose()
