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
import math
import re
from typing import Any
from urllib.parse import urlsplit

# A host name as DNS spells it (letters, digits, hyphens, underscores seen in the wild, dots).
LABEL = r"[a-z0-9_]([a-z0-9_-]{0,61}[a-z0-9_])?"
HOST_NAME = re.compile(rf"^(?=.{{1,253}}$){LABEL}(\.{LABEL})*\.?$")
KAFKA_SCHEMES = frozenset({"plaintext", "ssl", "sasl_plaintext", "sasl_ssl"})
# Ten years: a longer duration is a typo, and past 2**63 ms it no longer fits SQLite or Kafka.
MAX_DURATION_S = 10 * 365 * 86_400
DURATION_UNITS_S = {"s": 1, "m": 60, "h": 3600, "d": 86_400}
_DURATION = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
KAFKA_NAME = re.compile(r"^[A-Za-z0-9._-]{1,249}$")  # Kafka's legal topic names
BUCKET = re.compile(r"^[a-z0-9][a-z0-9.-]{1,61}[a-z0-9]$")
CONTROL = re.compile(r"[\x00-\x1f\x7f]")


def bounded_duration(value_s: float, *, unit_s: float = 1) -> float:
    """A finite duration of at most :data:`MAX_DURATION_S` (``unit_s``: the unit the user wrote)."""
    if math.isnan(value_s) or value_s > MAX_DURATION_S:
        limit = f"{MAX_DURATION_S / unit_s:.0f}" if unit_s != 1 else f"{MAX_DURATION_S} (10 years)"
        raise ValueError(f"{value_s / unit_s:g} is too long a duration; give at most {limit}")
    return value_s


def duration_s(text: str) -> int:
    """``90``, ``90s``, ``15m``, ``6h`` or ``7d`` in whole seconds, above 0 and at most ten years."""
    match = _DURATION.match(text)
    if match is None or int(match.group(1)) == 0:
        raise ValueError(f"{text!r} is no duration; write e.g. 90s, 15m, 6h or 7d")
    seconds = int(match.group(1)) * DURATION_UNITS_S[match.group(2) or "s"]
    if seconds > MAX_DURATION_S:
        raise ValueError(f"{text!r} is too long a duration; give at most {MAX_DURATION_S // 86_400}d")
    return seconds


def header_value(value: str) -> str:
    """An HTTP header value (a user agent): not blank, no CR, LF or other control character."""
    if not value.strip():
        raise ValueError("is empty; give a value such as 'dualplane/0.1 (+https://example.com/bot)'")
    if CONTROL.search(value):
        raise ValueError(f"{value!r} holds a line break or control character; give it on one line")
    return value


def name(value: str) -> str:
    """A queue name, prefix or identifier: not blank, no control characters, at most 200 characters."""
    if not value.strip() or CONTROL.search(value) or len(value) > 200:
        raise ValueError(f"{value!r} is no name; give 1-200 printable characters, e.g. dualplane")
    return value


def topic_name(value: str) -> str:
    """A Kafka topic name: 1-249 of letters, digits, '.', '_' and '-'."""
    if not KAFKA_NAME.match(value):
        raise ValueError(f"{value!r} is no Kafka topic name; use 1-249 letters, digits, '.', '_' or '-'")
    return value


def non_empty(value: str) -> str:
    """Text that filters or names something: an empty value would match nothing, silently."""
    if not value.strip():
        raise ValueError("is empty; give a value, or leave the option out")
    return value


def host(value: str) -> str:
    """An address or host name to bind or connect to (``127.0.0.1``, ``0.0.0.0``, ``::``, ``localhost``)."""
    if not (_is_ip(value) or HOST_NAME.match(value.lower())):
        raise ValueError(f"{value!r} is no address or host name; expected e.g. 127.0.0.1 or 0.0.0.0")
    return value


def bucket_name(value: str) -> str:
    """An S3 bucket name: 3-63 lowercase letters, digits, '.' and '-', starting and ending alphanumeric."""
    if not BUCKET.match(value):
        raise ValueError(f"{value!r} is no S3 bucket name; use 3-63 of a-z, 0-9, '.' and '-', e.g. dualplane")
    return value


def http_urls(value: str, example: str) -> str:
    """Comma-separated ``http(s)://`` URLs (a schema registry cluster)."""
    for entry in value.split(","):
        http_url(entry, example)
    return value


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
