"""The SSRF guard: a crawler must not become a way into the networks it runs in.

Seeds and links come from the outside world, so by default we refuse, after DNS resolution and
again after every redirect, any URL whose host resolves to a loopback, private, link-local,
multicast, reserved or cloud-metadata address, and any scheme but http and https. An explicit
allowlist (``DUALPLANE_FETCH_ALLOW_HOSTS``: host names, addresses or CIDR blocks) opens exactly
what tests and the demo need, e.g. ``127.0.0.1`` for the sample site.

Known limit: the address is checked at resolution time and the HTTP client resolves again when it
connects, so a DNS server that answers differently within milliseconds (rebinding) is not caught.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Iterable
from urllib.parse import urlsplit

from dualplane.core.web.exceptions import UnsafeUrl

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
ALLOWED_SCHEMES = frozenset({"http", "https"})


class SsrfGuard:
    """Decides whether a URL may be fetched; ``allow`` entries override the address rules."""

    def __init__(self, allow: Iterable[str] = ()) -> None:
        self.allowed_hosts: set[str] = set()
        self.allowed_networks: list[IpNetwork] = []
        for entry in (item.strip().lower() for item in allow):
            if not entry:
                continue
            try:
                self.allowed_networks.append(ipaddress.ip_network(entry, strict=False))
            except ValueError:
                self.allowed_hosts.add(entry)

    @classmethod
    def from_setting(cls, allow_hosts: str) -> SsrfGuard:
        return cls(allow_hosts.split(","))

    async def check(self, url: str) -> None:
        """Raise :class:`UnsafeUrl` unless ``url`` is an http(s) URL to an acceptable address.

        Resolution runs on a worker thread, so the event loop never blocks on DNS; a URL that needs
        none (an IP address, or an allow-listed name) is checked at once, without a thread hop.
        """
        if _needs_dns(url, self.allowed_hosts):
            await asyncio.to_thread(self.check_sync, url)
        else:
            self.check_sync(url)

    def allows(self, url: str) -> bool:
        """True unless :meth:`check_sync` would refuse ``url`` (for callers that only need a yes/no)."""
        try:
            self.check_sync(url)
        except UnsafeUrl:
            return False
        return True

    def check_sync(self, url: str) -> None:
        """Blocking form of :meth:`check`."""
        parts = urlsplit(url)
        if parts.scheme not in ALLOWED_SCHEMES:
            raise UnsafeUrl(f"scheme {parts.scheme!r} is not fetched (only http and https): {url}")
        host = (parts.hostname or "").lower()
        if not host:
            raise UnsafeUrl(f"URL has no host: {url}")
        if host in self.allowed_hosts:
            return
        for address in _resolve(host, parts.port or (443 if parts.scheme == "https" else 80)):
            reason = self._refusal(address)
            if reason:
                raise UnsafeUrl(
                    f"{host} resolves to {address}, {reason}; refused to prevent SSRF "
                    "(allow it with DUALPLANE_FETCH_ALLOW_HOSTS if this is intended)"
                )

    def _refusal(self, address: IpAddress) -> str | None:
        if any(address in network for network in self.allowed_networks):
            return None
        if address in METADATA_ADDRESSES:
            return "a cloud metadata address"
        for kind in ("loopback", "private", "link_local", "multicast", "reserved", "unspecified"):
            if getattr(address, f"is_{kind}"):
                return f"a {kind.replace('_', '-')} address"
        return None


def _needs_dns(url: str, allowed_hosts: set[str]) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    if not host or host in allowed_hosts:
        return False
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return True
    return False


def _resolve(host: str, port: int) -> list[IpAddress]:
    try:
        return [ipaddress.ip_address(host)]
    except ValueError:
        pass
    try:
        infos = socket.getaddrinfo(host, port, type=socket.SOCK_STREAM)
    except socket.gaierror as error:
        raise UnsafeUrl(f"cannot resolve {host}: {error}") from error
    return [ipaddress.ip_address(str(info[4][0]).split("%")[0]) for info in infos]
