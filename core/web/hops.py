"""Whether one outbound HTTP hop may be requested, and where a redirect points: one owner of both.

Every request the crawler makes on a URL from the outside world (a page, its redirects, a
robots.txt and its redirects) asks :func:`allowed_hop` first, hop by hop: a redirect is a new URL
from a server we do not trust, and following it with a client's own redirect handling skipped the
guard (a robots.txt answering ``302 Location: http://127.0.0.2/`` was fetched from 127.0.0.2).
The connection itself then goes only to addresses the guard checked (:mod:`core.web.pinned`).
"""

from __future__ import annotations

from collections.abc import Mapping
from urllib.parse import urldefrag, urljoin

from yarl import URL

from dualplane.core.web.pinned import check_ip_host
from dualplane.core.web.request_url import request_url
from dualplane.core.web.ssrf import SsrfGuard

REDIRECT_STATUSES = frozenset({301, 302, 303, 307, 308})


async def allowed_hop(guard: SsrfGuard, url: str) -> URL:
    """The request target for ``url`` once ``guard`` allows it.

    Raises :class:`~core.web.exceptions.UnsafeUrl` when the guard refuses the URL (scheme, host or
    address), ValueError when it cannot be requested at all (a port out of range, a host IDNA cannot
    encode). aiohttp connects to an IP-literal host without asking its resolver, so such a host is
    checked here too, as aiohttp parsed it.
    """
    await guard.check(url)
    target = request_url(url)
    await check_ip_host(guard, target)
    return target


def redirect_target(status: int, headers: Mapping[str, str], url: str) -> str | None:
    """The absolute URL (no fragment) a redirect answer points to; None when it is no redirect.

    ``headers`` has lower-case names. ValueError when the Location cannot be a URL (``http://[::1``).
    """
    location = headers.get("location")
    if status not in REDIRECT_STATUSES or not location:
        return None
    target: str = urldefrag(urljoin(url, location.strip())).url
    return target
