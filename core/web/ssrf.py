"""The SSRF guard: a crawler must not become a way into the networks it runs in.

Seeds and links come from the outside world, so by default we refuse, after DNS resolution and
again after every redirect, any URL whose host resolves to a loopback, private, link-local,
multicast, reserved or cloud-metadata address, and any scheme but http and https. An explicit
allowlist (``DUALPLANE_FETCH_ALLOW_HOSTS``: host names, addresses or CIDR blocks) opens exactly
what tests and the demo need, e.g. ``127.0.0.1`` for the sample site.

No rebinding window: the fetcher connects through :meth:`SsrfGuard.pinned_addresses` (see
``core/web/pinned.py``), which resolves the host once, checks every address
and hands back the one to connect to, so the address connected to is always an address checked,
whatever a DNS server answers the next time. :meth:`check` before a request gives the reason early
(and refuses schemes); the connection's own check is what cannot be raced.
"""

from __future__ import annotations

import asyncio
import ipaddress
import socket
from collections.abc import Callable, Iterable
from urllib.parse import urlsplit

from dualplane.core.web.exceptions import UnsafeUrl

IpAddress = ipaddress.IPv4Address | ipaddress.IPv6Address
IpNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

METADATA_ADDRESSES = frozenset(
    ipaddress.ip_address(a) for a in ("169.254.169.254", "169.254.170.2", "fd00:ec2::254", "100.100.100.200")
)
ALLOWED_SCHEMES = frozenset({"http", "https"})
# Most specific first: 0.0.0.0 and fe80::1 are "private" too, but say what they are.
KINDS = (
    ("loopback", "a loopback address"),
    ("unspecified", "an unspecified address"),
    ("link_local", "a link-local address"),
    ("multicast", "a multicast address"),
    ("private", "a private address"),
    ("reserved", "a reserved address"),
)
NAT64 = ipaddress.ip_network("64:ff9b::/96")  # the well-known prefix: 64:ff9b::7f00:1 is 127.0.0.1


Resolver = Callable[[str, int], list["IpAddress"]]
"""``(host, port)`` to the host's addresses; raises :class:`UnsafeUrl` when it cannot resolve."""


class SsrfGuard:
    """Decides whether a URL may be fetched; ``allow`` entries override the address rules.

    ``resolve`` replaces DNS (tests: a name that resolves to a private address, or differently
    on each call as in a rebinding attack).
    """

    def __init__(self, allow: Iterable[str] = (), *, resolve: Resolver | None = None) -> None:
        self.resolve: Resolver = resolve or _resolve
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
        self._checked(host, self.resolve(host, parts.port or (443 if parts.scheme == "https" else 80)))

    async def pinned_addresses(self, host: str, port: int) -> list[str]:
        """The addresses to connect to for ``host``, in the resolver's order: resolved once, every
        one checked; :class:`UnsafeUrl` if any is refused. Connecting only to these closes the
        window between a check and the client's own resolution (DNS rebinding)."""
        host = host.lower().strip("[]")
        if _is_ip(host):
            return [str(address) for address in self._checked(host, [ipaddress.ip_address(host)])]
        addresses = await asyncio.to_thread(self.resolve, host, port)
        if host not in self.allowed_hosts:  # allowed by name: any address it has
            self._checked(host, addresses)
        if not addresses:
            raise UnsafeUrl(f"{host} resolves to no address")
        return [str(address) for address in addresses]

    def _checked(self, host: str, addresses: list[IpAddress]) -> list[IpAddress]:
        """``addresses``, once none is refused."""
        if not addresses:
            raise UnsafeUrl(f"{host} resolves to no address")
        for address in addresses:
            reason = self._refusal(address)
            if reason:
                raise UnsafeUrl(
                    f"{host} resolves to {address}, {reason}; refused to prevent SSRF "
                    "(allow it with DUALPLANE_FETCH_ALLOW_HOSTS if this is intended)"
                )
        return addresses

    def _refusal(self, address: IpAddress) -> str | None:
        # An IPv6 address that carries an IPv4 one (::ffff:a.b.c.d, 6to4, NAT64) is judged by it.
        embedded = _embedded_ipv4(address)
        if embedded is not None:
            reason = self._refusal(embedded)
            return f"an IPv6 form of {embedded}, {reason}" if reason else None
        if any(address in network for network in self.allowed_networks):
            return None
        return _kind_refused(address)
        if address in METADATA_ADDRESSES:
            return "a cloud metadata address"
        for kind in ("loopback", "private", "link_local", "multicast", "reserved", "unspecified"):
            if getattr(address, f"is_{kind}"):
                return f"a {kind.replace('_', '-')} address"
        return None


def _needs_dns(url: str, allowed_hosts: set[str]) -> bool:
    host = (urlsplit(url).hostname or "").lower()
    return bool(host) and host not in allowed_hosts and not _is_ip(host)


def _kind_refused(address: IpAddress) -> str | None:
    if address in METADATA_ADDRESSES:
        return "a cloud metadata address"
    for kind, label in KINDS:
        if getattr(address, f"is_{kind}"):
            return label
    if not address.is_global:  # shared (100.64/10), benchmarking, documentation ranges...
        return "not a public address"
    return None


def _embedded_ipv4(address: IpAddress) -> IpAddress | None:
    if isinstance(address, ipaddress.IPv4Address):
        return None
    if address.ipv4_mapped is not None:
        return address.ipv4_mapped
    if address.sixtofour is not None:
        return address.sixtofour
    if address in NAT64:
        return ipaddress.IPv4Address(int(address) & 0xFFFFFFFF)
    return None


def _is_ip(host: str) -> bool:
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return False
    return True


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
