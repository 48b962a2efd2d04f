"""Setting types that carry their check, so a section declares a field's kind once, not a validator.

``client_id: Name = "dualplane"`` is checked by :func:`.checks.name` wherever the section is read, and a
bad value fails naming its variable, as a ``field_validator`` did. The ``Optional…`` kinds leave an
unset or empty value as it is: the setting then falls back to another (``DUALPLANE_S3_BUCKET``, the
group prefix). The checks themselves, and their messages, stay in :mod:`.checks`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Annotated

from pydantic import AfterValidator

from dualplane.core.settings import checks


def _when_set(check: Callable[[str], str]) -> AfterValidator:
    return AfterValidator(lambda value: check(value) if value else value)


def http_url(example: str) -> AfterValidator:
    """The check of an ``http(s)://`` URL whose error message shows ``example``."""
    return AfterValidator(lambda value: checks.http_url(value, example))


def optional_http_url(example: str) -> AfterValidator:
    """As :func:`http_url`; unset or empty stays as it is."""
    return _when_set(lambda value: checks.http_url(value, example))


def http_urls(example: str) -> AfterValidator:
    """Comma-separated ``http(s)://`` URLs; unset stays unset."""
    return AfterValidator(lambda value: None if value is None else checks.http_urls(value, example))


Name = Annotated[str, AfterValidator(checks.name)]
OptionalName = Annotated[str | None, _when_set(checks.name)]
Host = Annotated[str, AfterValidator(checks.host)]
BucketName = Annotated[str, AfterValidator(checks.bucket_name)]
OptionalBucketName = Annotated[str | None, _when_set(checks.bucket_name)]
HeaderValue = Annotated[str, AfterValidator(checks.header_value)]
AllowHosts = Annotated[str, AfterValidator(checks.allow_hosts)]
Proxies = Annotated[str, AfterValidator(checks.proxies)]
BootstrapServers = Annotated[str, AfterValidator(checks.bootstrap_servers)]
