"""Connections only to addresses the SSRF guard checked: the guard resolves, the socket follows.

httpx would resolve a host name again when it connects, after the guard resolved and checked it,
and a DNS server that answers differently the second time (DNS rebinding) would get a private
address past the guard. This network backend for httpcore (under httpx's transport) asks the guard
for the addresses at connect time (:meth:`~dualplane.core.web.ssrf.SsrfGuard.pinned_addresses`, which
resolves once and checks every one) and opens the socket to one of them; TLS still verifies
the certificate against the host name, since httpcore passes the origin's name as SNI.

Its streams also answer httpcore's "is this idle connection closed?" question cheaply. The pool asks
it of every pooled connection on every request and every response close; anyio's answer builds the
stream's whole attribute table, a ``getpeername`` call included, each time: 14% of a busy fetcher's
samples in a crawl of 20 hosts (py-spy, ``benchmarks/crawl_vs_scrapy.py --profile``). The raw
socket is looked up once instead.
"""

from __future__ import annotations

import socket
import ssl
from collections.abc import Iterable
from typing import Any

import httpcore
import httpx
from httpcore._utils import is_socket_readable  # the check httpcore's own streams make

from dualplane.core.web.exceptions import UnsafeUrl
from dualplane.core.web.ssrf import SsrfGuard

SocketOption = tuple[int, int, int] | tuple[int, int, bytes | bytearray] | tuple[int, int, None, int]


class PinnedNetwork(httpcore.AsyncNetworkBackend):
    """Opens TCP connections to the address ``guard`` checked for each host, nothing else."""

    def __init__(self, guard: SsrfGuard, inner: httpcore.AsyncNetworkBackend | None = None) -> None:
        self.guard = guard
        self.inner = inner or httpcore.AnyIOBackend()

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[SocketOption] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        addresses = await self.guard.pinned_addresses(host, port)  # UnsafeUrl: never connected
        for address in addresses[:-1]:  # e.g. ::1 then 127.0.0.1: the next one if one refuses
            try:
                return SocketStream(
                    await self.inner.connect_tcp(address, port, timeout, local_address, socket_options)
                )
            except httpcore.ConnectError:
                continue
        return SocketStream(
            await self.inner.connect_tcp(addresses[-1], port, timeout, local_address, socket_options)
        )

    async def connect_unix_socket(
        self, path: str, timeout: float | None = None, socket_options: Iterable[SocketOption] | None = None
    ) -> httpcore.AsyncNetworkStream:
        raise UnsafeUrl(f"a Unix socket ({path}) is never fetched")

    async def sleep(self, seconds: float) -> None:
        await self.inner.sleep(seconds)


class SocketStream(httpcore.AsyncNetworkStream):
    """``inner`` with its raw socket kept at hand for the pool's readability checks."""

    def __init__(self, inner: httpcore.AsyncNetworkStream, raw_socket: socket.socket | None = None) -> None:
        self.inner = inner
        self.raw_socket = raw_socket if raw_socket is not None else inner.get_extra_info("socket")

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return await self.inner.read(max_bytes, timeout)

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        await self.inner.write(buffer, timeout)

    async def aclose(self) -> None:
        await self.inner.aclose()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        # TLS runs over the same TCP socket: its readability is still the raw socket's
        return SocketStream(
            await self.inner.start_tls(ssl_context, server_hostname, timeout), self.raw_socket
        )

    def get_extra_info(self, info: str) -> Any:
        if info == "is_readable":
            return is_socket_readable(self.raw_socket)
        return self.inner.get_extra_info(info)


def pinned_transport(guard: SsrfGuard, limits: httpx.Limits) -> httpx.AsyncHTTPTransport:
    """httpx's own transport (TLS, HTTP/1.1, pooling), its connections made by :class:`PinnedNetwork`."""
    transport = httpx.AsyncHTTPTransport(limits=limits, trust_env=False)
    # httpx has no parameter for the network backend: rebuild its pool with ours, same settings.
    pool = transport._pool
    assert isinstance(pool, httpcore.AsyncConnectionPool)
    transport._pool = httpcore.AsyncConnectionPool(
        ssl_context=pool._ssl_context,
        max_connections=limits.max_connections,
        max_keepalive_connections=limits.max_keepalive_connections,
        keepalive_expiry=limits.keepalive_expiry,
        network_backend=PinnedNetwork(guard),
    )
    return transport
