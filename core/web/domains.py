"""Registrable domains (``shop.example.co.uk`` -> ``example.co.uk``) and the key a site shards by.

The frontier is split into shards by site, so that one shard sees all of a site's URLs (its seen
set, backlog and permits): the site is the registrable domain of the host, from the Public Suffix
List (the ``publicsuffixlist`` package, which ships the list: nothing is downloaded), plus the
port when it is not the scheme's default. An IP address or a name with no public suffix
(``localhost``) is its own site, so ``127.0.0.1:8101`` and ``127.0.0.1:8102`` are two sites.
"""

from __future__ import annotations

import functools
import hashlib
import ipaddress

from publicsuffixlist import PublicSuffixList

SHARD_BUCKETS = 4096
"""Sites hash into this many buckets and buckets map to shards (``bucket % shards``): a fixed,
fine-grained unit that state can be grouped by, whatever the number of shards."""


@functools.cache
def _suffixes() -> PublicSuffixList:
    return PublicSuffixList()


def registrable_domain(host: str) -> str:
    """The registrable domain of ``host`` (lowercase, no port); an IP address or a name without a
    public suffix is returned as it is."""
    host = host.lower().strip("[]").rstrip(".")
    try:
        ipaddress.ip_address(host)
    except ValueError:
        return _suffixes().privatesuffix(host) or host
    return host


def site_of(domain: str) -> str:
    """The site a politeness key (``host`` or ``host:port``, as ``urls.domain_of`` makes it) belongs to."""
    host, port = _split_port(domain)
    site = registrable_domain(host)
    return f"{site}:{port}" if port else site


@functools.lru_cache(maxsize=1 << 16)  # a page's links name few sites, again and again
def shard_bucket(domain: str) -> int:
    """The bucket (0 .. SHARD_BUCKETS-1) of ``domain``'s site: stable across processes and machines."""
    digest = hashlib.blake2b(site_of(domain).encode("utf-8"), digest_size=8).digest()
    return int.from_bytes(digest, "big") % SHARD_BUCKETS


def shard_of(domain: str, shards: int) -> int:
    """Which of ``shards`` frontier shards owns ``domain``'s site."""
    return shard_bucket(domain) % shards if shards > 1 else 0


def _split_port(domain: str) -> tuple[str, str]:
    if domain.startswith("["):  # [v6]:port
        host, _, rest = domain[1:].partition("]")
        return host, rest.removeprefix(":")
    host, _, port = domain.rpartition(":") if domain.count(":") == 1 else (domain, "", "")
    return (host, port) if port else (domain, "")
