"""Checks of settings values whose mistakes the libraries would find late, deep, or never.

Each check returns the value (or its parsed form) or raises ValueError with a message that says
what is expected; pydantic turns it into one line naming the variable, and the CLI exits with 2.
Examples of what they catch: ``DUALPLANE_KAFKA_BOOTSTRAP_SERVERS=:::::`` (librdkafka retried for
43 s, printing 784 lines, and ``status`` exited 0), ``DUALPLANE_S3_ENDPOINT_URL=not-a-url``
(botocore's traceback), ``DUALPLANE_FETCH_ALLOW_HOSTS='not a cidr/99'`` (silently an unknown
host name), ``DUALPLANE_FETCH_PROXIES='::bad'`` (a proxy that could never be used).
"""

from __future__ import annotations

import ipaddress
import json
import re
from typing import Any
from urllib.parse import urlsplit

# A host name as DNS spells it (letters, digits, hyphens, underscores seen in the wild, dots).
LABEL = r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?"
HOST_NAME = re.compile(rf"^(?=.{{1,253}}$){LABEL}(\.{LABEL})*\.?$")
KAFKA_SCHEMES = frozenset({"plaintext", "ssl", "sasl_plaintext", "sasl_ssl"})


def bootstrap_servers(value: str) -> str:
    """``host:port[,host:port…]`` (``[v6]:port`` for IPv6, an optional ``PLAINTEXT://``-style prefix)."""
    entries = [entry.strip() for entry in value.split(",")]
    if not value.strip() or not all(entries):
        raise ValueError(f"{value!r} is no broker list; expected host:port[,host:port...] (127.0.0.1:9092)")
    for entry in entries:
        scheme, _, rest = entry.rpartition("://")
        if scheme and scheme.lower() not in KAFKA_SCHEMES:
            raise ValueError(f"{entry!r}: unknown scheme {scheme!r}; expected host:port, e.g. 127.0.0.1:9092")
        _host_port(rest, entry)
    return value


def _host_port(text: str, entry: str) -> None:
    expected = "expected host:port (IPv6 as [::1]:9092)"
    if text.startswith("["):
        host, bracket, port = text[1:].partition("]")
        if not bracket or not _is_ip(host) or (port and not port.startswith(":")):
            raise ValueError(f"{entry!r} is no broker address; {expected}")
        port = port[1:]
    else:
        host, _, port = text.rpartition(":") if ":" in text else (text, "", "")
    if not host or not (_is_ip(host) or HOST_NAME.match(host.lower())):
        raise ValueError(f"{entry!r}: {host!r} is no host name or address; {expected}")
    if port and not (port.isdigit() and 0 < int(port) < 65536):
        raise ValueError(f"{entry!r}: {port!r} is no port (1-65535); {expected}")


def http_url(value: str, example: str) -> str:
    """An ``http://`` or ``https://`` URL with a host and a valid port."""
    parts = urlsplit(value.strip())
    try:
        port_ok = parts.port is None or parts.port > 0
    except ValueError:
        port_ok = False
    if parts.scheme not in ("http", "https") or not parts.hostname or not port_ok:
        raise ValueError(f"{value!r} is no http(s) URL; expected one such as {example}")
    return value.strip()


def allow_hosts(value: str) -> str:
    """Comma-separated host names, addresses or CIDR blocks (``127.0.0.1,10.0.0.0/8,localhost``)."""
    for entry in (item.strip().lower() for item in value.split(",")):
        if not entry:
            continue
        try:
            ipaddress.ip_network(entry, strict=False)
            continue
        except ValueError:
            pass
        if "/" in entry or not HOST_NAME.match(entry):
            raise ValueError(
                f"{entry!r} is no host name, address or CIDR block; expected a comma-separated list such "
                "as 127.0.0.1,10.0.0.0/8,localhost"
            )
    return value


def proxies(value: str) -> str:
    """Comma-separated proxy URLs (``http://user:password@proxy.example:3128``), no duplicates."""
    entries = [item.strip() for item in value.split(",") if item.strip()]
    for entry in entries:
        http_url(entry, "http://user:password@proxy.example:3128")
    if len(set(entries)) != len(entries):
        raise ValueError("a proxy is listed twice; list each proxy URL once")
    return value


def json_object(value: Any) -> Any:
    """A JSON object given as text (an environment variable), parsed; anything else unchanged."""
    if not isinstance(value, str | bytes):
        return value
    try:
        parsed = json.loads(value)
    except json.JSONDecodeError as error:
        raise ValueError(f"not JSON ({error.msg} at character {error.pos}); expected an object") from None
    if not isinstance(parsed, dict):
        raise ValueError(f"expected a JSON object, got {type(parsed).__name__}")
    return parsed


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True
