"""Connections only to addresses the SSRF guard checked: the guard resolves, the socket follows.

aiohttp would resolve a host name again when it connects, after the guard resolved and checked it,
and a DNS server that answers differently the second time (DNS rebinding) would get a private
address past the guard. :class:`GuardResolver` is the connector's resolver instead: for every new
connection it asks the guard (:meth:`~core.web.ssrf.SsrfGuard.pinned_addresses`, which
resolves once and checks every address) and hands aiohttp those addresses only. aiohttp's own DNS
cache is off, so no earlier answer is reused unchecked; a pooled connection stays on the address it
was opened to. TLS still verifies the certificate against the host name (sent as SNI), with the
CA bundle httpx used (certifi's), not the system's.

aiohttp connects to an IP-literal host without asking its resolver: :func:`check_ip_host` makes the
same check for those, before each request, on the host as aiohttp parsed it. The connector speaks
TCP only, so a Unix socket is never connected to.
"""

from __future__ import annotations

import functools
import socket
import ssl
from operator import itemgetter

import aiohttp
import certifi
from aiohttp.abc import AbstractResolver, ResolveResult
from aiohttp.client_proto import ResponseHandler
from aiohttp.client_reqrep import ClientRequest
from aiohttp.helpers import is_ip_address  # aiohttp's test before it skips its resolver
from aiohttp.tracing import Trace
from yarl import URL

from dualplane.core.web.ssrf import SsrfGuard

KEEPALIVE_S = 5.0  # how long an idle connection is kept for reuse (httpx's default)


class GuardResolver(AbstractResolver):
    """Resolves through ``guard``: :class:`~core.web.exceptions.UnsafeUrl` for a refused
    address, before any socket is opened."""

    def __init__(self, guard: SsrfGuard) -> None:
        self.guard = guard

    async def resolve(
        self, host: str, port: int = 0, family: socket.AddressFamily = socket.AF_INET
    ) -> list[ResolveResult]:
        addresses = await self.guard.pinned_addresses(host, port)  # UnsafeUrl: never connected
        return [
            ResolveResult(
                hostname=host,
                host=address,
                port=port,
                family=socket.AF_INET6 if ":" in address else socket.AF_INET,
                proto=socket.IPPROTO_TCP,
                flags=socket.AI_NUMERICHOST,
            )
            for address in addresses  # e.g. ::1 then 127.0.0.1: the next one if one refuses
        ]

    async def close(self) -> None:
        pass


async def check_ip_host(guard: SsrfGuard, url: URL) -> None:
    """The guard's connection check for ``url`` when aiohttp will connect to its host without asking
    :class:`GuardResolver`: when the host looks like an IP address by aiohttp's own test."""
    host = url.raw_host
    if host and is_ip_address(host):
        await guard.pinned_addresses(host, url.port or 0)  # UnsafeUrl, also for what is no address


class BoundedConnector(aiohttp.TCPConnector):
    """aiohttp's pool with at most ``limit`` idle connections as well as ``limit`` in use.

    aiohttp's limit counts the connections in use only: a crawl over thousands of sites would keep
    an idle one to every site fetched from in the last ``keepalive_timeout``, sockets without bound.
    Before it opens a connection, this one closes the longest-idle ones past ``limit``. Counting
    idle ones against the limit of those in use, as httpx's pool did, made a fetch to one site close
    another site's idle connection to open its own: 16 fetches at a time over two sample-site hosts
    took 0.20-0.27 ms of CPU each instead of 0.11.
    """

    async def _create_connection(
        self, req: ClientRequest, traces: list[Trace], timeout: aiohttp.ClientTimeout
    ) -> ResponseHandler:
        if self.limit:
            self._close_idle(keep=self.limit)
        return await super()._create_connection(req, traces, timeout)

    def _close_idle(self, keep: int) -> None:
        idle = [(used_at, key, protocol) for key, pool in self._conns.items() for protocol, used_at in pool]
        if len(idle) <= keep:
            return
        idle.sort(key=itemgetter(0))
        for used_at, key, protocol in idle[: len(idle) - keep]:
            pool = self._conns[key]
            pool.remove((protocol, used_at))
            if not pool:
                del self._conns[key]
            protocol.close()


def pinned_connector(guard: SsrfGuard, max_connections: int) -> aiohttp.TCPConnector:
    """A pooled connector (keep-alive, ``max_connections`` in use and idle) that connects through ``guard``.

    Call it inside the event loop that will use it.
    """
    return BoundedConnector(
        resolver=GuardResolver(guard),
        use_dns_cache=False,
        limit=max_connections,
        keepalive_timeout=KEEPALIVE_S,
        ssl=tls_context(),
    )


def proxy_connector(max_connections: int) -> aiohttp.TCPConnector:
    """A pooled connector to a proxy, which resolves and connects to the targets itself."""
    return BoundedConnector(limit=max_connections, keepalive_timeout=KEEPALIVE_S, ssl=tls_context())


@functools.cache
def tls_context() -> ssl.SSLContext:
    """Certificates verified against certifi's CA bundle and the host name; HTTP/1.1 only."""
    context = ssl.create_default_context(cafile=certifi.where())
    context.set_alpn_protocols(["http/1.1"])
    return context
